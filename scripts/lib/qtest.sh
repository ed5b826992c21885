# shellcheck shell=bash
# SPDX-License-Identifier: GPL-2.0-or-later
# The `qtest` suite: the device's qtests and QEMU's own cxl-test, built in
# QEMU's tree, and the device's command-line validation.


NF_QTESTS=(tests/qtest/nfabric-test tests/qtest/nfabric-migration-test
           tests/qtest/nfabric-fuzz-test tests/qtest/cxl-test)

# A QEMU command line with the device, for option checks.
nf_qtest_cmdline() {
    echo "-M q35,cxl=on -nodefaults -display none -S" \
         "-object memory-backend-ram,id=vmem0,size=256M" \
         "-object memory-backend-ram,id=vmem1,size=256M" \
         "-object memory-backend-ram,id=vmem257,size=257M" \
         "-object memory-backend-ram,id=vmem100,size=100M" \
         "-object memory-backend-ram,id=vmem128,size=128M" \
         "-device pxb-cxl,bus_nr=12,bus=pcie.0,id=cxl.1" \
         "-device cxl-rp,port=0,bus=cxl.1,id=rp0,chassis=0,slot=2" \
         "-device cxl-rp,port=1,bus=cxl.1,id=rp1,chassis=0,slot=3" \
         "-M cxl-fmw.0.targets.0=cxl.1,cxl-fmw.0.size=4G"
}

# nf_qtest_refused N NAME EXPECTED-MESSAGE DEVICE-ARGS: QEMU must refuse
# to start and say what is wrong.
nf_qtest_refused() {
    local n=$1 name=$2 want=$3 dev=$4 out rc=0 more=()
    [ -n "${5:-}" ] && more=(-device "$5")
    # shellcheck disable=SC2046
    out=$(echo quit | timeout 20 "$NF_QEMU_BIN" $(nf_qtest_cmdline) -monitor stdio \
          -device "$dev" "${more[@]}" 2>&1) || rc=$?
    if [ "$rc" -ne 0 ] && grep -qF -- "$want" <<<"$out"; then
        echo "ok $n - refused: $name"
    else
        echo "not ok $n - refused: $name (rc=$rc)"
        nf_comment <<<"$out" | head -5
    fi
}

# nf_qtest_accepted N NAME DEVICE-ARGS: QEMU must start with the device.
nf_qtest_accepted() {
    local n=$1 name=$2 dev=$3 out rc=0
    # shellcheck disable=SC2046
    out=$(echo quit | timeout 20 "$NF_QEMU_BIN" $(nf_qtest_cmdline) -monitor stdio \
          -device "$dev" 2>&1) || rc=$?
    if [ "$rc" -eq 0 ]; then
        echo "ok $n - accepted: $name"
    else
        echo "not ok $n - accepted: $name (rc=$rc)"
        nf_comment <<<"$out" | head -5
    fi
}

# nf_qtest_wait_log FILE PATTERN: wait (at most 30 s) for PATTERN in FILE.
nf_qtest_wait_log() {
    local i
    for i in $(seq 300); do
        grep -q -- "$2" "$1" 2>/dev/null && return 0
        sleep 0.1
    done
    echo "# $1: no '$2' after $i tries"
    return 1
}

# nf_qtest_rejoin N: two heads of one shared device (QEMU processes); head 1
# is killed (SIGKILL) and started again: the trace event nfabric_head_attach
# says created, joined, then rejoined (docs/multihost.md).
nf_qtest_rejoin() {
    local n=$1 d=$NF_BUILD/test-logs/qtest-rejoin a b ok=1 dev
    local shm=$NF_RUN_SHM/qtest-rejoin
    rm -rf "$d"
    mkdir -p "$d"
    local common=(-M "q35,cxl=on" -nodefaults -display none -S -monitor none -m 128M
        -object "memory-backend-file,id=vmem0,share=on,mem-path=$shm.mem,size=256M"
        -device "pxb-cxl,bus_nr=12,bus=pcie.0,id=cxl.1"
        -device "cxl-rp,port=0,bus=cxl.1,id=rp0,chassis=0,slot=2"
        -M "cxl-fmw.0.targets.0=cxl.1,cxl-fmw.0.size=4G"
        -trace nfabric_head_attach)
    dev="cxl-neuron-fabric,bus=rp0,volatile-memdev=vmem0,shared-state=$shm.state,heads=2"
    "$NF_QEMU_BIN" "${common[@]}" -device "$dev,head=0" -D "$d/head0.log" &
    a=$!
    nf_qtest_wait_log "$d/head0.log" nfabric_head_attach || ok=0
    "$NF_QEMU_BIN" "${common[@]}" -device "$dev,head=1" -D "$d/head1-first.log" &
    b=$!
    nf_qtest_wait_log "$d/head1-first.log" nfabric_head_attach || ok=0
    kill -KILL "$b" 2>/dev/null || true
    wait "$b" 2>/dev/null || true
    "$NF_QEMU_BIN" "${common[@]}" -device "$dev,head=1" -D "$d/head1-again.log" &
    b=$!
    nf_qtest_wait_log "$d/head1-again.log" nfabric_head_attach || ok=0
    kill -TERM "$b" "$a" 2>/dev/null || true
    wait "$b" 2>/dev/null || true
    wait "$a" 2>/dev/null || true
    grep -q ': created' "$d/head0.log" || ok=0
    grep -q ': joined$' "$d/head1-first.log" || ok=0
    grep -q ': rejoined (this head was attached before)' "$d/head1-again.log" || ok=0
    if [ "$ok" = 1 ]; then
        echo "ok $n - a killed head that starts again is traced as rejoined (first: joined)"
    else
        echo "not ok $n - trace of a killed head's restart (logs in $d)"
        grep -h nfabric_head_attach "$d"/*.log | sed 's/^/#   /'
    fi
    rm -f "$shm.mem" "$shm.state"
    [ "$ok" = 1 ]
}

nf_suite_qtest() {
    local rc=0 t n=0 base="cxl-neuron-fabric,bus=rp0,volatile-memdev=vmem0"
    ninja -C "$NF_QEMU_BUILD" "${NF_QTESTS[@]}" >"$NF_BUILD/qtest-ninja.log" 2>&1 || {
        tail -20 "$NF_BUILD/qtest-ninja.log"
        return 1
    }
    for t in "${NF_QTESTS[@]}"; do
        echo "# $t"
        # Each qtest prints its own TAP stream ("ok N /x86_64/...").
        (cd "$NF_QEMU_BUILD" && QTEST_QEMU_BINARY=./qemu-system-x86_64 \
            timeout 600 "./$t" --tap -k) || rc=1
    done

    echo "# device listing and options"
    if "$NF_QEMU_BIN" -device help 2>&1 | grep -q '"cxl-neuron-fabric"'; then
        echo "ok 1 - -device help lists cxl-neuron-fabric"
    else
        echo "not ok 1 - -device help lists cxl-neuron-fabric"; rc=1
    fi
    if "$NF_QEMU_BIN" -device cxl-neuron-fabric,help 2>&1 | grep -q 'datapath-depth=<uint32>'; then
        echo "ok 2 - -device cxl-neuron-fabric,help lists its properties"
    else
        echo "not ok 2 - -device cxl-neuron-fabric,help lists its properties"; rc=1
    fi
    nf_qtest_refused 3 "clock-mhz=0" "property 'clock-mhz' must be in 1..100000, not 0" "$base,clock-mhz=0"
    nf_qtest_refused 4 "link-mbps=0" "property 'link-mbps' must be in" "$base,link-mbps=0"
    nf_qtest_refused 5 "datapath-depth=5000" "property 'datapath-depth' must be in 0..1024, not 5000" "$base,datapath-depth=5000"
    nf_qtest_refused 6 "service-ns=2000000" "property 'service-ns' must be in" "$base,service-ns=2000000"
    nf_qtest_refused 7 "no volatile-memdev" "property 'volatile-memdev' is required" "cxl-neuron-fabric,bus=rp0"
    nf_qtest_refused 8 "persistent memory" "only 'volatile-memdev' memory is supported" \
        "$base,persistent-memdev=vmem0"
    nf_qtest_refused 9 "clock-mhz=abc" "clock-mhz" "$base,clock-mhz=abc"
    nf_qtest_refused 10 "257 MiB of memory" "property 'volatile-memdev': 269484032 bytes is not a multiple of 256 MiB" \
        "cxl-neuron-fabric,bus=rp0,volatile-memdev=vmem257"
    nf_qtest_refused 11 "100 MiB of memory" "is not a multiple of 256 MiB" \
        "cxl-neuron-fabric,bus=rp0,volatile-memdev=vmem100"
    local rec=$NF_BUILD/test-logs/record-shared.bin
    nf_qtest_refused 12 "two devices, one record file" "property 'record': '$rec' is in use by another device" \
        "$base,id=nfa,record=$rec" "cxl-neuron-fabric,bus=rp1,volatile-memdev=vmem1,id=nfb,record=$rec"
    # A record that cannot be written: reported (at the latest) when QEMU quits.
    local out
    # shellcheck disable=SC2046
    out=$(echo quit | timeout 20 "$NF_QEMU_BIN" $(nf_qtest_cmdline) -monitor stdio \
          -device "$base,record=/dev/full" 2>&1) || true
    if grep -q "property 'record': '/dev/full' is incomplete: writing it failed" <<<"$out"; then
        echo "ok 13 - record=/dev/full: the lost record is reported when QEMU quits"
    else
        echo "not ok 13 - record=/dev/full: no report of the lost record"
        nf_comment <<<"$out" | head -5
        rc=1
    fi
    # scripts/nfabric vm reports QEMU's refusal, with QEMU's status.
    local vrc=0
    out=$(nf_vm_main --quiet --log "$NF_BUILD/test-logs/vm-refused.log" \
          --device-props clock-mhz=0 --run true 2>&1) || vrc=$?
    if [ "$vrc" = 1 ] && grep -q "vm: QEMU exited with status 1 before the guest started: .*property 'clock-mhz' must be in" <<<"$out"; then
        echo "ok 14 - vm: a property QEMU refuses is reported with QEMU's message and status"
    else
        echo "not ok 14 - vm: refused property: status $vrc"
        nf_comment <<<"$out" | tail -3
        rc=1
    fi
    # The direct map's options (docs/device.md).
    # A shared head maps its own ranges directly (docs/multihost.md): the
    # direct map is no reason to refuse shared-state, its memory is.
    nf_qtest_refused 15 "direct-map=on, shared-state over memory no file backs" \
        "property 'shared-state' needs 'volatile-memdev' to be a memory-backend-file" \
        "$base,direct-map=on,shared-state=$NF_BUILD/test-logs/unused.state"
    nf_qtest_refused 16 "direct-map=on with record" \
        "property 'direct-map=on' conflicts with 'record'" \
        "$base,direct-map=on,record=$NF_BUILD/test-logs/unused.rec"
    nf_qtest_refused 17 "direct-map-fp32=on without the direct map" \
        "property 'direct-map-fp32=on' needs the direct map" \
        "$base,direct-map=off,direct-map-fp32=on"
    nf_qtest_refused 18 "direct-map=maybe" "direct-map" "$base,direct-map=maybe"
    # What the property tables say (README, docs/multihost.md).
    nf_qtest_refused 19 "128 MiB of memory" \
        "property 'volatile-memdev': 134217728 bytes is not a multiple of 256 MiB" \
        "cxl-neuron-fabric,bus=rp0,volatile-memdev=vmem128"
    nf_qtest_accepted 20 "head=0,heads=1 without shared-state (the defaults)" "$base,head=0,heads=1"
    nf_qtest_refused 21 "heads=2 without shared-state" \
        "properties 'head' and 'heads' need 'shared-state'" "$base,heads=2"
    nf_qtest_refused 22 "head=1 without shared-state" \
        "properties 'head' and 'heads' need 'shared-state'" "$base,head=1"
    nf_qtest_rejoin 23 || rc=1
    # The RTL datapath's properties (docs/rtl.md); serving through it is
    # suite rtl's.
    nf_qtest_refused 24 "rtl=fast" "property 'rtl' must be off, serve or compare, not 'fast'" "$base,rtl=fast"
    nf_qtest_refused 25 "rtl=serve without rtl-lib" "property 'rtl=serve' needs 'rtl-lib'" "$base,rtl=serve"
    nf_qtest_refused 26 "rtl-lib without rtl" "property 'rtl-lib' needs 'rtl=serve' or 'rtl=compare'" \
        "$base,rtl-lib=/nonexistent/libnfrtl.so"
    nf_qtest_refused 27 "rtl-lib a missing file" \
        "property 'rtl-lib': cannot load '/nonexistent/libnfrtl.so'" \
        "$base,rtl=compare,rtl-lib=/nonexistent/libnfrtl.so"
    nf_qtest_refused 28 "rtl-lib not a libnfrtl.so" "has no symbol 'nfrtl_abi_version'" \
        "$base,rtl=serve,rtl-lib=$(gcc -print-file-name=libgcc_s.so.1)"
    return $rc
}
