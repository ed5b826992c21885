# SPDX-License-Identifier: GPL-2.0-or-later
# `scripts/nfabric bench guest`: throughput of 8-byte writes and reads from
# guest user space through /dev/daxX.Y (guest/tools/nfabric-bench.c), on a
# stock cxl-type3 and on the NEURON-Fabric device's paths: the same QEMU
# binary, the same guest, two boots.  key=value lines on stdout.

declare -gA NF_BENCH_DESC
NF_BENCH_DESC[guest]="guest user-space MB/s on stock cxl-type3 and on the device's FP32/G-Binary/G-Ternary paths (two boots)"

nf_bench_guest_usage() {
    cat <<'USAGE'
usage: scripts/nfabric bench guest [--bytes N] [--reps R] [--rounds K]

Boots the guest twice (stock cxl-type3, then cxl-neuron-fabric) and runs
nfabric-bench: 8-byte writes then reads over N bytes (default 4194304), best
of R passes (default 3).  The two boots alternate K times (default 2) and
each figure is the best over the rounds.  Prints key=value lines:
  stock_*            cxl-type3 (every access an MMIO callback)
  plain_*            the device, no window (FP32 path by default)
  fp32_* gbinary_* gternary_*   the device with one window of that path
  *_vs_stock         ratio to stock_write_MBps / stock_read_MBps
  gbinary_write_vs_stock_fp32   G-Binary write MB/s over stock write MB/s
  *_fp32_equiv_write_MBps       gradient elements per second as FP32 bytes
                                (G-Binary x32, G-Ternary x16)
Logs: build/guest/bench-stock-K.log, build/guest/bench-nfabric-K.log
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
    local g=$NF_BUILD/guest args="--bytes $bytes --reps $reps" rc=0 r
    local stock_logs=() dev_logs=()
    # Alternate the two devices, round after round, so that both see the
    # same load on this shared machine; each figure is the best over rounds.
    for r in $(seq 1 "$rounds"); do
        nf_vm_main --quiet --device cxl-type3 --log "$g/bench-stock-$r.log" --timeout 900 \
            --run "nfabric-bench --stock $args" 2> "$g/bench-stock-$r.err" || rc=$?
        [ "$rc" = 0 ] || { cat "$g/bench-stock-$r.err" >&2; nf_die "bench guest: the stock boot failed (log $g/bench-stock-$r.log)"; }
        nf_vm_main --quiet --device cxl-neuron-fabric --log "$g/bench-nfabric-$r.log" --timeout 900 \
            --run "nfabric-bench $args" 2> "$g/bench-nfabric-$r.err" || rc=$?
        [ "$rc" = 0 ] || { cat "$g/bench-nfabric-$r.err" >&2; nf_die "bench guest: the NEURON-Fabric boot failed (log $g/bench-nfabric-$r.log)"; }
        stock_logs+=("$g/bench-stock-$r.log")
        dev_logs+=("$g/bench-nfabric-$r.log")
    done

    local k v sw sr
    echo "bench=guest"
    echo "bytes=$bytes"
    echo "reps=$reps"
    echo "rounds=$rounds"
    echo "access_bytes=8"
    sw=$(nf_bench_best stock_write_MBps "${stock_logs[@]}")
    sr=$(nf_bench_best stock_read_MBps "${stock_logs[@]}")
    [ -n "$sw" ] && [ -n "$sr" ] || nf_die "bench guest: no figures from the stock boots (logs $g/bench-stock-*.log)"
    echo "stock_write_MBps=$sw"
    echo "stock_read_MBps=$sr"
    for k in plain fp32 gbinary gternary; do
        for v in write read; do
            local x
            x=$(nf_bench_best "${k}_${v}_MBps" "${dev_logs[@]}")
            [ -n "$x" ] || nf_die "bench guest: no ${k}_${v}_MBps from the device boots (logs $g/bench-nfabric-*.log)"
            eval "local ${k}_${v}=\$x"
            echo "${k}_${v}_MBps=$x"
        done
    done
    awk -v sw="$sw" -v sr="$sr" -v pw="$plain_write" -v pr="$plain_read" \
        -v fw="$fp32_write" -v fr="$fp32_read" -v bw="$gbinary_write" -v br="$gbinary_read" \
        -v tw="$gternary_write" -v tr="$gternary_read" 'BEGIN {
        printf "plain_write_vs_stock=%.3f\nplain_read_vs_stock=%.3f\n", pw / sw, pr / sr
        printf "fp32_write_vs_stock=%.3f\nfp32_read_vs_stock=%.3f\n", fw / sw, fr / sr
        printf "gbinary_write_vs_stock_fp32=%.3f\ngbinary_read_vs_stock_fp32=%.3f\n", bw / sw, br / sr
        printf "gternary_write_vs_stock_fp32=%.3f\ngternary_read_vs_stock_fp32=%.3f\n", tw / sw, tr / sr
        printf "gbinary_fp32_equiv_write_MBps=%.1f\ngternary_fp32_equiv_write_MBps=%.1f\n", bw * 32, tw * 16
    }'
    echo "boot_to_ready_stock_s=$(sed -n 's/^vm: boot-to-ready \([0-9.]*\) s.*/\1/p' "$g/bench-stock-1.err")"
    echo "boot_to_ready_nfabric_s=$(sed -n 's/^vm: boot-to-ready \([0-9.]*\) s.*/\1/p' "$g/bench-nfabric-1.err")"
}
