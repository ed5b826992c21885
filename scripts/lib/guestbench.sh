# shellcheck shell=bash
# SPDX-License-Identifier: GPL-2.0-or-later
# `scripts/nfabric bench guest`: throughput of 8-byte writes and reads from
# guest user space through /dev/daxX.Y (guest/tools/nfabric-bench.c), on a
# stock cxl-type3 and on the NEURON-Fabric device's paths: the same QEMU
# binary, the same guest, two boots.  key=value lines on stdout.

nf_bench_guest_usage() {
    cat <<'USAGE'
usage: scripts/nfabric bench guest [--bytes N] [--reps R] [--rounds K]

Boots the guest three times (stock cxl-type3; cxl-neuron-fabric with its
direct map, the default; cxl-neuron-fabric with direct-map=off, every access
on the I/O path as before the direct map) and runs nfabric-bench in each:
8-byte writes and reads, and memcpy of 4 KiB blocks to and from the memory,
over N bytes (default 4194304), best of R passes (default 3), and the same
on the guest's own RAM.  The boots alternate K times (default 2) and each
figure is the best over the rounds.  Prints key=value lines:
  stock_*            cxl-type3 (every access an MMIO callback)
  ram_*              the guest's own memory
  plain_*            the device, no window (direct map)
  fp32_* gbinary_* gternary_*   the device with one window of that path
  io_*               the same on the device with direct-map=off
  *_MBps: write/read = 8-byte words; memcpy/memcpy_read = 4 KiB blocks
  plain_write_vs_stock  plain_memcpy_vs_stock   direct map over stock
  plain_write_vs_ram    plain_memcpy_vs_ram     direct map over guest RAM
  *_direct_vs_io     each path with the direct map over direct-map=off
  gbinary_write_vs_stock_fp32   G-Binary write MB/s over stock write MB/s
  *_fp32_equiv_write_MBps       gradient elements per second as FP32 bytes
                                (G-Binary x32, G-Ternary x16)
  sysram_*           programs bound to the device's memory onlined as
                     System RAM (its NUMA node), node0_* the same bound to
                     node 0; sysram_*_vs_ram the ratio (gzip: busybox gzip
                     round trip of a tmpfs file)
Logs: build/guest/bench-{stock,nfabric,io}-K.log, build/guest/bench-sysram.log
USAGE
}

# nf_bench_kv LOG KEY: the value of KEY=... in a console log.
nf_bench_kv() {
    tr -d '\r' < "$1" | sed -n "s/^$2=//p" | tail -1
}

# nf_bench_best KEY LOG...: the largest value of KEY=... over the logs.
nf_bench_best() {
    local key=$1 f v best=""
    shift
    for f in "$@"; do
        v=$(nf_bench_kv "$f" "$key")
        [ -n "$v" ] || continue
        if [ -z "$best" ] || awk -v a="$v" -v b="$best" 'BEGIN{exit !(a > b)}'; then
            best=$v
        fi
    done
    echo "$best"
}

nf_bench_guest() {
    local bytes=4194304 reps=3 rounds=2
    while [ $# -gt 0 ]; do
        case "$1" in
        -h|--help) nf_bench_guest_usage; return 0 ;;
        --bytes|--reps|--rounds)
            [ $# -ge 2 ] || { echo "bench guest: $1 needs a value" >&2; return 2; }
            [[ "$2" =~ ^[1-9][0-9]*$ ]] || { echo "bench guest: bad $1 \"$2\"" >&2; return 2; }
            case "$1" in
            --bytes) bytes=$2 ;; --reps) reps=$2 ;; --rounds) rounds=$2 ;;
            esac
            shift ;;
        *) echo "bench guest: unknown argument \"$1\"" >&2; nf_bench_guest_usage >&2; return 2 ;;
        esac
        shift
    done
    nf_setup_main --quiet
    nf_image_main >&2
    local g=$NF_BUILD/guest args="--bytes $bytes --reps $reps" rc r kind
    local stock_logs=() dev_logs=() io_logs=() all_logs=()
    # Alternate the boots, round after round, so that each sees the same
    # load on this shared machine; each figure is the best over rounds.
    for r in $(seq 1 "$rounds"); do
        for kind in stock nfabric io; do
            local vmargs=(--device cxl-neuron-fabric) run="nfabric-bench $args"
            case $kind in
            stock) vmargs=(--device cxl-type3); run="nfabric-bench --stock $args" ;;
            io) vmargs+=(--device-props direct-map=off) ;;
            esac
            rc=0
            nf_vm_main --quiet "${vmargs[@]}" --log "$g/bench-$kind-$r.log" --timeout 900 \
                --run "$run" 2> "$g/bench-$kind-$r.err" || rc=$?
            [ "$rc" = 0 ] || { cat "$g/bench-$kind-$r.err" >&2; nf_die "bench guest: the $kind boot failed (log $g/bench-$kind-$r.log)"; }
            all_logs+=("$g/bench-$kind-$r.log")
            case $kind in
            stock) stock_logs+=("$g/bench-$kind-$r.log") ;;
            nfabric) dev_logs+=("$g/bench-$kind-$r.log") ;;
            io) io_logs+=("$g/bench-$kind-$r.log") ;;
            esac
        done
    done

    # The device's memory onlined as System RAM (kmem), programs bound to
    # its NUMA node beside node 0 (guest RAM): the group sysram prints them.
    rc=0
    nf_vm_main --quiet --device cxl-neuron-fabric --log "$g/bench-sysram.log" --timeout 900 \
        --run "nfabric-test --only sysram" 2> "$g/bench-sysram.err" || rc=$?
    [ "$rc" = 0 ] || { cat "$g/bench-sysram.err" >&2; nf_die "bench guest: the System RAM boot failed (log $g/bench-sysram.log)"; }

    local k v x
    declare -A f
    echo "bench=guest"
    echo "bytes=$bytes"
    echo "reps=$reps"
    echo "rounds=$rounds"
    echo "access_bytes=8"
    echo "memcpy_block_bytes=4096"
    for v in write read memcpy memcpy_read; do
        x=$(nf_bench_best "stock_${v}_MBps" "${stock_logs[@]}")
        [ -n "$x" ] || nf_die "bench guest: no stock_${v}_MBps from the stock boots (logs $g/bench-stock-*.log)"
        f[stock_$v]=$x
        # The guest's RAM was measured in every boot: the best of them.
        x=$(nf_bench_best "ram_${v}_MBps" "${all_logs[@]}")
        [ -n "$x" ] || nf_die "bench guest: no ram_${v}_MBps (logs $g/bench-*.log)"
        f[ram_$v]=$x
        for k in plain fp32 gbinary gternary; do
            x=$(nf_bench_best "${k}_${v}_MBps" "${dev_logs[@]}")
            [ -n "$x" ] || nf_die "bench guest: no ${k}_${v}_MBps from the device boots (logs $g/bench-nfabric-*.log)"
            f[${k}_$v]=$x
            x=$(nf_bench_best "${k}_${v}_MBps" "${io_logs[@]}")
            [ -n "$x" ] || nf_die "bench guest: no ${k}_${v}_MBps from the direct-map=off boots (logs $g/bench-io-*.log)"
            f[io_${k}_$v]=$x
        done
    done
    for k in stock ram plain fp32 gbinary gternary io_plain io_fp32 io_gbinary io_gternary; do
        for v in write read memcpy memcpy_read; do
            echo "${k}_${v}_MBps=${f[${k}_$v]}"
        done
    done
    # ratio NAME NUM DEN
    ratio() { awk -v n="$2" -v d="$3" -v k="$1" 'BEGIN { printf "%s=%.3f\n", k, n / d }'; }
    ratio plain_write_vs_stock "${f[plain_write]}" "${f[stock_write]}"
    ratio plain_read_vs_stock "${f[plain_read]}" "${f[stock_read]}"
    ratio plain_memcpy_vs_stock "${f[plain_memcpy]}" "${f[stock_memcpy]}"
    ratio plain_memcpy_read_vs_stock "${f[plain_memcpy_read]}" "${f[stock_memcpy_read]}"
    ratio plain_write_vs_ram "${f[plain_write]}" "${f[ram_write]}"
    ratio plain_read_vs_ram "${f[plain_read]}" "${f[ram_read]}"
    ratio plain_memcpy_vs_ram "${f[plain_memcpy]}" "${f[ram_memcpy]}"
    ratio plain_memcpy_read_vs_ram "${f[plain_memcpy_read]}" "${f[ram_memcpy_read]}"
    ratio io_plain_write_vs_stock "${f[io_plain_write]}" "${f[stock_write]}"
    for k in plain fp32 gbinary gternary; do
        ratio "${k}_write_direct_vs_io" "${f[${k}_write]}" "${f[io_${k}_write]}"
        ratio "${k}_read_direct_vs_io" "${f[${k}_read]}" "${f[io_${k}_read]}"
    done
    ratio fp32_write_vs_stock "${f[fp32_write]}" "${f[stock_write]}"
    ratio fp32_read_vs_stock "${f[fp32_read]}" "${f[stock_read]}"
    ratio gbinary_write_vs_stock_fp32 "${f[gbinary_write]}" "${f[stock_write]}"
    ratio gbinary_read_vs_stock_fp32 "${f[gbinary_read]}" "${f[stock_read]}"
    ratio gternary_write_vs_stock_fp32 "${f[gternary_write]}" "${f[stock_write]}"
    ratio gternary_read_vs_stock_fp32 "${f[gternary_read]}" "${f[stock_read]}"
    for k in sysram node0; do
        for v in write read memcpy memcpy_read gzip; do
            x=$(nf_bench_kv "$g/bench-sysram.log" "${k}_${v}_MBps")
            [ -n "$x" ] || nf_die "bench guest: no ${k}_${v}_MBps from the System RAM boot (log $g/bench-sysram.log)"
            f[${k}_$v]=$x
            echo "${k}_${v}_MBps=$x"
        done
    done
    echo "sysram_node=$(nf_bench_kv "$g/bench-sysram.log" sysram_pages_node)"
    echo "sysram_pages_on_node=$(nf_bench_kv "$g/bench-sysram.log" sysram_pages_on_node)"
    for v in write read memcpy memcpy_read gzip; do
        ratio "sysram_${v}_vs_ram" "${f[sysram_$v]}" "${f[node0_$v]}"
    done
    awk -v bw="${f[gbinary_write]}" -v tw="${f[gternary_write]}" 'BEGIN {
        printf "gbinary_fp32_equiv_write_MBps=%.1f\ngternary_fp32_equiv_write_MBps=%.1f\n", bw * 32, tw * 16
    }'
    echo "boot_to_ready_stock_s=$(sed -n 's/^vm: boot-to-ready \([0-9.]*\) s.*/\1/p' "$g/bench-stock-1.err")"
    echo "boot_to_ready_nfabric_s=$(sed -n 's/^vm: boot-to-ready \([0-9.]*\) s.*/\1/p' "$g/bench-nfabric-1.err")"
}
