# shellcheck shell=bash
# SPDX-License-Identifier: GPL-2.0-or-later
# `scripts/nfabric demo` and the `guest` test suite: boot the guest once and
# run the guest programs' functional checks (tests/guest/) against the
# device.  docs/guest.md describes the checks.

# nf_guest_run LOG CMD [vm options...]: build the image, boot, run CMD,
# console to LOG only.  Returns the guest command's status.
nf_guest_run() {
    local log=$1 cmd=$2
    shift 2
    nf_image_main >&2
    nf_vm_main --quiet --log "$log" --timeout 900 --run "$cmd" "$@"
}

# ---- guest: every guest check (a)-(f) in one boot --------------------------
nf_suite_guest() {
    local log=$NF_BUILD/test-logs/guest-console.log rc=0
    mkdir -p "$(dirname "$log")"
    nf_guest_run "$log" "nfabric-test" || rc=$?
    # The TAP lines (and diagnostics) of the guest, for the runner to count.
    grep -E '^(ok|not ok|#|1\.\.|summary:)' "$log" || true
    grep -E '^NFABRIC-(READY|NOT-READY)' "$log" || true
    # A second boot: the region onlined as System RAM (this changes the guest).
    log=$NF_BUILD/test-logs/guest-sysram-console.log
    nf_guest_run "$log" "nfabric-test --only sysram" || rc=$?
    grep -E '^(ok|not ok|#|summary:)' "$log" || true
    # A third: two devices, no region at boot; then an interleaved region.
    log=$NF_BUILD/test-logs/guest-devices-console.log
    nf_guest_run "$log" "nfabric-test --only devices" --devices 2 \
        --append nfabric.region=none || rc=$?
    grep -E '^(ok|not ok|#|summary:)' "$log" || true
    return $rc
}

nf_demo_usage() {
    cat <<'USAGE'
usage: scripts/nfabric demo [--device cxl-neuron-fabric|cxl-type3]

Builds the guest image if needed, boots a guest with the NEURON-Fabric CXL
device, creates the CXL RAM region, and runs the functional checks from
guest user space:
  (a) FP32 identity over the whole region (sizes 1/2/4/8, alignments 0..7)
  (b) G-Binary: K=4 worker processes aggregate packed signs in one window
  (c) G-Ternary: gated aggregation at several thresholds
  (d) mixed windows: FP32 classifier head + G-Binary backbone in one region
  (i) a window toggled while other processes write (the direct map: plain
      memory is RAM to the CPU, only enabled windows trap), and the speed
      of plain device memory, guest RAM and a G-Binary window
  (e) two hosts, one device: two guests, each with its own head of one
      shared device, aggregate into the same windows
  (r) the G-Binary checks again with the datapath in Verilog serving every
      low-bit access (hw/rtl, Verilated, the device's rtl=serve)
Prints a summary and ends with `demo: N passed, N failed`.
The console log is build/guest/demo.log.
USAGE
}

# nf_demo_cxl_list LOG: the memdevs and regions of the guest's `cxl list`.
nf_demo_cxl_list() {
    local json
    json=$(sed -n 's/^cxl-list: //p' "$1" | head -1)
    echo "CXL topology (cxl list -M -R in the guest):"
    printf '%s' "$json" | python3 -c '
import json, sys
try:
    data = json.load(sys.stdin)
except ValueError:
    print("  (no cxl list output)")
    sys.exit(0)
for part in data if isinstance(data, list) else [data]:
    for m in part.get("memdevs", []):
        print("  memdev %s: ram %d MiB, host %s" % (m.get("memdev"), m.get("ram_size", 0) >> 20, m.get("host")))
    for r in part.get("regions", []):
        print("  region %s: %s, %d MiB at 0x%x, %d-way, %s" % (r.get("region"), r.get("type"),
              r.get("size", 0) >> 20, r.get("resource", 0), r.get("interleave_ways", 0), r.get("decode_state")))
'
}

nf_demo_main() {
    local device=cxl-neuron-fabric
    while [ $# -gt 0 ]; do
        case "$1" in
        -h|--help) nf_demo_usage; return 0 ;;
        --device) [ $# -ge 2 ] || { echo "nfabric demo: --device needs a value" >&2; return 2; }
                  device=$2; shift ;;
        *) echo "nfabric demo: unknown argument \"$1\"" >&2; nf_demo_usage >&2; return 2 ;;
        esac
        shift
    done
    local log=$NF_BUILD/guest/demo.log rc=0 passed failed
    # QEMU with the device, firmware and the host programs (idempotent).
    nf_setup_main --quiet
    mkdir -p "$NF_BUILD/guest"
    echo "NEURON-Fabric demo: booting a guest with $device (console: $log)"
    # `cxl list` (ndctl 81) on one line, for the summary below.
    local bench_paths="plain gbinary ram"
    [ "$device" = cxl-neuron-fabric ] || bench_paths="--stock plain ram"
    nf_guest_run "$log" "echo \"cxl-list: \$(cxl list -M -R | tr -d ' \\n')\"; nfabric-test --only fp32,gbinary,gternary,mixed,toggle; rc=\$?; nfabric-bench --bytes 1048576 --reps 2 $bench_paths || rc=1; exit \$rc" --device "$device" || rc=$?
    echo
    grep -E '^NFABRIC-(READY|NOT-READY)' "$log" | sed 's/^/  guest: /' || true
    nf_demo_cxl_list "$log"
    if grep -q '^summary: ' "$log"; then
        echo "Results:"
        grep '^summary: ' "$log" | sed 's/^summary: /  /'
    fi
    local pw rw gw
    pw=$(nf_bench_kv "$log" plain_write_MBps)
    [ -n "$pw" ] || pw=$(nf_bench_kv "$log" stock_write_MBps)
    rw=$(nf_bench_kv "$log" ram_write_MBps)
    gw=$(nf_bench_kv "$log" gbinary_write_MBps)
    if [ -n "$pw" ] && [ -n "$rw" ]; then
        echo "Speed from guest user space (8-byte stores, MB/s): device memory $pw," \
             "guest RAM $rw${gw:+, G-Binary window $gw}"
    fi
    if grep -q '^not ok ' "$log"; then
        echo "Failed checks:"
        grep '^not ok ' "$log" | sed 's/^/  /'
    fi
    passed=$(grep -c '^ok ' "$log" || true)
    failed=$(grep -c '^not ok ' "$log" || true)
    if [ "$rc" -ne 0 ] && [ "$failed" -eq 0 ]; then
        echo "  the guest run failed (status $rc) before reporting a failed check; see $log"
        failed=1
    fi
    if [ "$device" = cxl-neuron-fabric ]; then
        # Two hosts, one device (docs/multihost.md).
        local cdir=$NF_BUILD/guest/demo-cluster crc=0 cp cf
        echo
        echo "Two hosts share one device: each boots its own guest with its own head,"
        echo "both aggregate into the same windows (consoles: $cdir/host0.log, host1.log)"
        nf_cluster_main --hosts 2 --dir "$cdir" --timeout 300 \
            --run "nfabric-multihost agg && nfabricctl heads" 2>/dev/null | sed 's/^/  /' || crc=$?
        grep -h '^summary: ' "$cdir/host0.log" 2>/dev/null | sed 's/^summary: /  /'
        grep -h '^window0_head' "$cdir/host0.log" 2>/dev/null | tr -d '\r' |
            sed 's/^/  host 0 reads: /'
        cp=$(cat "$cdir"/host*.log 2>/dev/null | grep -c '^ok ' || true)
        cf=$(cat "$cdir"/host*.log 2>/dev/null | grep -c '^not ok ' || true)
        [ "$crc" -eq 0 ] || [ "$cf" -gt 0 ] || cf=1
        passed=$((passed + cp))
        failed=$((failed + cf))

        # The datapath in Verilog (docs/rtl.md): the G-Binary checks once
        # more, every low-bit access served by the Verilated RTL.
        local rlog=$NF_BUILD/guest/demo-rtl.log rerr=$NF_BUILD/guest/demo-rtl.err rrc=0
        echo
        echo "The aggregation datapath in Verilog: the G-Binary checks again, every low-bit"
        echo "access served by hw/rtl/nf_agg.v (Verilated; the first time it is built, a few"
        echo "minutes), the device's rtl=serve (console: $rlog)"
        nf_guest_run "$rlog" "nfabric-test --only gbinary" --rtl serve 2> "$rerr" || rrc=$?
        grep -h '^summary: ' "$rlog" 2>/dev/null | sed 's/^summary: /  /'
        grep -ho 'rtl=serve: .*' "$rerr" 2>/dev/null | sed 's/^/  QEMU: /'
        cp=$(grep -c '^ok ' "$rlog" 2>/dev/null || true)
        cf=$(grep -c '^not ok ' "$rlog" 2>/dev/null || true)
        if [ "$rrc" -ne 0 ] && [ "${cf:-0}" -eq 0 ]; then
            echo "  the RTL run failed (status $rrc) before reporting a failed check; see $rerr"
            cf=1
        fi
        passed=$((passed + ${cp:-0}))
        failed=$((failed + ${cf:-0}))
    fi
    echo "demo: $passed passed, $failed failed"
    [ "$failed" -eq 0 ]
}
