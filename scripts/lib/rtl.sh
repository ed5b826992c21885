# shellcheck shell=bash
# SPDX-License-Identifier: GPL-2.0-or-later
# The aggregation datapath in Verilog (hw/rtl/, docs/rtl.md):
#   suite `rtl`       lint, the Verilator harness against the C engine
#                     (latency, exhaustive lanes, random lines, a record
#                     replay), the timing model's depth default against the
#                     measured latency, mutants that must fail, a quick
#                     synthesis; about 3-4 minutes on 2 cores from scratch
#   bench `rtl`       the full equivalence run (10^6 random lines per path
#                     and width, every lane rotation), Yosys synth_xilinx of
#                     the 512-bit datapath, synth_ice40 + nextpnr-ice40 of
#                     the wrapped datapath and of the largest slice that fits
#                     an HX8K; key=value figures

NF_RTL_DIR=$NF_ROOT/hw/rtl
NF_RTL_BUILD=$NF_BUILD/rtl
NF_RTL_PKGS="verilator yosys iverilog"
NF_RTL_PNR_PKGS="nextpnr-ice40 fpga-icestorm"
# The C sources the harness links: the engine is the reference.
NF_RTL_REF_SRC="nfabric_engine nfabric_window nfabric_record nfabric_timing"

nf_rtl_deps() {
    local p missing=0
    for p in $NF_RTL_PKGS "$@"; do
        dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing=1
    done
    [ "$missing" = 0 ] && return 0
    nf_require_root
    # shellcheck disable=SC2086 # word splitting of the package lists is meant
    nf_need $NF_RTL_PKGS "$@"
}

# nf_rtl_ref: the C engine (and the record/timing code) as a static library.
nf_rtl_ref() {
    local out=$NF_RTL_BUILD/ref f
    mkdir -p "$out"
    for f in $NF_RTL_REF_SRC; do
        if [ ! -f "$out/$f.o" ] || [ "$NF_ROOT/hw/mem/nfabric/$f.c" -nt "$out/$f.o" ] ||
           [ -n "$(find "$NF_ROOT/include/hw/mem" -newer "$out/$f.o" -name '*.h' -print -quit)" ]; then
            gcc -std=c11 -O2 -Wall -Wextra -Werror -I"$NF_ROOT/include" \
                -c "$NF_ROOT/hw/mem/nfabric/$f.c" -o "$out/$f.o" ||
                nf_die "rtl: cannot build hw/mem/nfabric/$f.c"
            rm -f "$out/libnfref.a"
        fi
    done
    if [ ! -f "$out/libnfref.a" ]; then
        (cd "$out" && ar rcs libnfref.a ./*.o)
    fi
}

# nf_rtl_harness NAME LANES [RTL_FILE]: Verilate nf_agg with LANES lanes
# once (position-independent code) into $NF_RTL_BUILD/NAME, link the
# harness nf_agg_tb from it and, at 512 lanes, the shared library
# libnfrtl.so (hw/rtl/nfrtl.h); skipped when nothing they are made of
# changed.  Prints the harness's path.
nf_rtl_harness() {
    local name=$1 lanes=$2 rtl=${3:-$NF_RTL_DIR/nf_agg.v}
    local dir=$NF_RTL_BUILD/$name stamp sum vinc=/usr/share/verilator/include flags f
    nf_rtl_ref
    sum=$(cat "$rtl" "$NF_ROOT/tests/rtl/nf_agg_tb.cpp" "$NF_RTL_DIR/nfrtl.cpp" \
          "$NF_RTL_DIR/nfrtl.h" "$NF_RTL_BUILD/ref/libnfref.a" \
          "$NF_ROOT"/include/hw/mem/*.h | sha256sum | cut -d' ' -f1)-$lanes-$(verilator --version | tr ' ' _)
    stamp=$dir/stamp
    if [ -x "$dir/nf_agg_tb" ] && [ "$(cat "$stamp" 2>/dev/null)" = "$sum" ]; then
        echo "$dir/nf_agg_tb"
        return 0
    fi
    rm -rf "$dir"
    mkdir -p "$dir"
    # -O1: the model is about 12 MB of straight C++ at 512 lanes; -O1
    # builds it in half the time of -O2 and simulates as fast.
    # Verilator's make cannot build in a directory whose path holds a
    # space (a checkout may): then the model is built under /tmp.
    local work=$dir
    case $dir in
    *" "*) work=${TMPDIR:-/tmp}/nfabric-rtl-$(id -u)-${sum%%-*}-$lanes
           rm -rf "$work"
           mkdir -p "$work" ;;
    esac
    cp "$rtl" "$work/nf_agg.v"
    (cd "$work" && verilator --cc nf_agg.v --top-module nf_agg -GLANES="$lanes" -Mdir model \
        -CFLAGS "-fPIC -O1" --x-assign fast --x-initial fast --build -j 2 \
        -MAKEFLAGS "OPT_FAST=-O1 OPT_SLOW=-O0") > "$dir/build.log" 2>&1 ||
        { tail -n 30 "$dir/build.log" >&2; nf_die "rtl: verilator build of $name failed ($dir/build.log)"; }
    flags=(-std=gnu++17 -O1 -fPIC -I"$vinc" -I"$vinc/vltstd" -I"$work/model" -I"$NF_ROOT/include"
           -I"$NF_RTL_DIR" -DVM_COVERAGE=0 -DVM_SC=0 -DVM_TRACE=0 -DVM_TRACE_FST=0 -DVM_TRACE_VCD=0)
    # Verilator's runtime, built once for every model.
    local vrt
    vrt=$NF_RTL_BUILD/vlrt-$(verilator --version | tr -c 'A-Za-z0-9.\n' _)
    mkdir -p "$vrt"
    for f in verilated verilated_threads; do
        if [ ! -f "$vrt/$f.o" ]; then
            g++ "${flags[@]}" -c "$vinc/$f.cpp" -o "$vrt/$f.o.tmp" >> "$dir/build.log" 2>&1 ||
                nf_die "rtl: cannot build $f.cpp ($dir/build.log)"
            mv "$vrt/$f.o.tmp" "$vrt/$f.o"
        fi
        cp "$vrt/$f.o" "$dir/$f.o"
    done
    g++ "${flags[@]}" -DNF_LANES="$lanes" "$NF_ROOT/tests/rtl/nf_agg_tb.cpp" "$work/model/Vnf_agg__ALL.a" \
        "$dir/verilated.o" "$dir/verilated_threads.o" "$NF_RTL_BUILD/ref/libnfref.a" -pthread \
        -o "$dir/nf_agg_tb" >> "$dir/build.log" 2>&1 ||
        { tail -n 30 "$dir/build.log" >&2; nf_die "rtl: cannot link the harness ($dir/build.log)"; }
    if [ "$lanes" = 512 ]; then
        g++ "${flags[@]}" -shared "$NF_RTL_DIR/nfrtl.cpp" "$work/model/Vnf_agg__ALL.a" \
            "$dir/verilated.o" "$dir/verilated_threads.o" -pthread -Wl,--no-undefined \
            -o "$dir/libnfrtl.so" >> "$dir/build.log" 2>&1 ||
            { tail -n 30 "$dir/build.log" >&2; nf_die "rtl: cannot link libnfrtl.so ($dir/build.log)"; }
        gcc -std=c11 -O2 -Wall -Wextra -Werror -I"$NF_ROOT/include" -I"$NF_ROOT" \
            "$NF_ROOT/tests/rtl/nfrtl_test.c" "$NF_RTL_BUILD/ref/libnfref.a" -ldl \
            -o "$dir/nfrtl_test" >> "$dir/build.log" 2>&1 ||
            { tail -n 30 "$dir/build.log" >&2; nf_die "rtl: cannot build nfrtl_test ($dir/build.log)"; }
    fi
    echo "$sum" > "$stamp"
    echo "$dir/nf_agg_tb"
}

# nf_rtl_lib: build (if anything changed) the 512-lane model as
# libnfrtl.so, the library the device's rtl-lib property loads; print its
# path.  Build output goes to the model's build.log.
nf_rtl_lib() {
    local tb
    nf_rtl_deps >&2
    mkdir -p "$NF_RTL_BUILD"
    tb=$(nf_rtl_harness full 512) || return 1
    [ -f "${tb%/*}/libnfrtl.so" ] || { echo "rtl: ${tb%/*}/libnfrtl.so was not built" >&2; return 1; }
    echo "${tb%/*}/libnfrtl.so"
}

nf_rtl_lib_main() {
    case "${1:-}" in
    -h|--help)
        echo "usage: scripts/nfabric rtl-lib"
        echo "Builds hw/rtl/nf_agg.v (512 lanes) with Verilator as libnfrtl.so (hw/rtl/nfrtl.h)"
        echo "and prints its path, for the device's properties rtl=serve|compare,rtl-lib=PATH"
        echo "(scripts/nfabric vm --rtl MODE does this itself).  docs/rtl.md."
        return 0 ;;
    "") ;;
    *) echo "nfabric rtl-lib: unknown argument \"$1\"" >&2; return 2 ;;
    esac
    nf_rtl_lib
}

# nf_rtl_fault_lib: a stand-in for libnfrtl.so with the engine's arithmetic
# and one fault (tests/rtl/nfrtl_fault.c); print its path.
nf_rtl_fault_lib() {
    local out=$NF_RTL_BUILD/fault/libnfrtl-fault.so
    mkdir -p "${out%/*}"
    gcc -std=c11 -O2 -Wall -Wextra -Werror -fPIC -shared -Wl,-Bsymbolic -I"$NF_ROOT/include" -I"$NF_ROOT" \
        "$NF_ROOT/tests/rtl/nfrtl_fault.c" "$NF_ROOT/hw/mem/nfabric/nfabric_engine.c" \
        "$NF_ROOT/hw/mem/nfabric/nfabric_window.c" -o "$out" >&2 ||
        { echo "rtl: cannot build tests/rtl/nfrtl_fault.c" >&2; return 1; }
    echo "$out"
}

# nf_rtl_guest MODE LIB NAME [GROUPS]: boot a guest whose device serves
# (or compares) its low-bit accesses through LIB and run the guest test
# groups GROUPS (default: the aggregation groups).  Console in
# $NF_RTL_BUILD/guest-NAME.log, QEMU's messages (its RTL report on exit)
# in guest-NAME.err.  Status: the guest command's.
nf_rtl_guest() {
    local mode=$1 lib=$2 name=$3 groups=${4:-gbinary,gternary,mixed,toggle} rc=0
    nf_vm_main --quiet --log "$NF_RTL_BUILD/guest-$name.log" --timeout 900 \
        --device-props "rtl=$mode,rtl-lib=${lib//,/,,}" \
        --run "nfabric-test --only $groups" \
        2> "$NF_RTL_BUILD/guest-$name.err" || rc=$?
    return $rc
}

# The RTL in the emulator (issue: a guest drives the RTL through the
# device): the aggregation groups pass with the RTL serving and with it
# compared on every access; a faulty stand-in is caught and shown to serve.
nf_rtl_guest_checks() {
    local lib=$1 fault mode st n ok bad rep
    if [ ! -x "$NF_QEMU_BIN" ] || ! declare -F nf_vm_main >/dev/null; then
        nf_tap 1 "the RTL in the emulator: QEMU ($NF_QEMU_BIN) is not built (scripts/nfabric setup)"
        return 0
    fi
    nf_image_main >&2 || nf_die "rtl: cannot build the guest image"
    for mode in serve compare; do
        st=0
        nf_rtl_guest "$mode" "$lib" "$mode" || st=$?
        ok=$(grep -c '^ok ' "$NF_RTL_BUILD/guest-$mode.log" || true)
        bad=$(grep -c '^not ok ' "$NF_RTL_BUILD/guest-$mode.log" || true)
        grep '^not ok ' "$NF_RTL_BUILD/guest-$mode.log" | head -n 5 | sed 's/^/# /' || true
        rep=$(grep -o 'rtl=[a-z]*: [0-9]* low-bit accesses through the RTL.*' "$NF_RTL_BUILD/guest-$mode.err" | tail -n 1)
        n=$(sed -n 's/^rtl=[a-z]*: \([0-9]*\) low-bit.*/\1/p' <<< "$rep")
        [ "$st" = 0 ] && [ "$bad" = 0 ] && [ "$ok" -ge 20 ] && [ "${n:-0}" -gt 1000 ] &&
            [[ $rep == *", 0 differences from the engine" ]]
        nf_tap $? "rtl=$mode: a guest's G-Binary, G-Ternary, mixed and toggle groups pass with the RTL $([ "$mode" = serve ] && echo serving || echo "beside the engine") ($ok checks, status $st; QEMU: ${rep:-no report})"
    done
    # The checks can fail: a stand-in with one fault (lane 5 of every
    # G-Binary line it writes counts once more) is caught by compare mode,
    # and its results are what a guest gets in serve mode.
    fault=$(nf_rtl_fault_lib) || { nf_tap 1 "rtl: cannot build the faulty stand-in"; return 0; }
    st=0
    nf_rtl_guest compare "$fault" fault-compare gbinary || st=$?
    rep=$(grep -m1 'the RTL and the engine differ' "$NF_RTL_BUILD/guest-fault-compare.err" || true)
    bad=$(grep -c '^not ok ' "$NF_RTL_BUILD/guest-fault-compare.log" || true)
    [ "$st" != 0 ] && [ "$bad" -gt 0 ] && [[ $rep == *"lane 5 "* ]]
    nf_tap $? "rtl=compare with a faulty datapath: the first difference drops the access with an error ($bad guest checks fail; QEMU: ${rep#*: })"
    st=0
    nf_rtl_guest serve "$fault" fault-serve gbinary || st=$?
    bad=$(grep -c '^not ok ' "$NF_RTL_BUILD/guest-fault-serve.log" || true)
    [ "$st" != 0 ] && [ "$bad" -gt 0 ] &&
        ! grep -q 'the RTL and the engine differ' "$NF_RTL_BUILD/guest-fault-serve.err"
    nf_tap $? "rtl=serve with a faulty datapath: the guest gets its results ($bad G-Binary checks fail), so serve mode really serves through the library"
}

# nf_rtl_run TB ARGS...: run the harness; its TAP lines, renumbered by
# nf_tap, on stdout; status non-zero if it failed.
nf_rtl_run() {
    local tb=$1 rc=0 out line
    shift
    out=$("$tb" "$@" 2>&1) || rc=$?
    while IFS= read -r line; do
        case $line in
        "ok "*) nf_tap 0 "${line#* - }" ;;
        "not ok "*) nf_tap 1 "${line#* - }" ;;
        *) echo "$line" ;;
        esac
    done <<< "$out"
    return "$rc"
}

# nf_rtl_record TB FILE: a record of a real guest run (the guest's
# G-Binary, G-Ternary and mixed groups with record=FILE) when QEMU and the
# guest image are there (NF_RTL_GUEST_RECORD=0 skips it); otherwise one of
# the same format written by the harness (synthetic: rounds of 8-byte
# pieces).  Prints "guest" or "synthetic".
nf_rtl_record() {
    local tb=$1 rec=$2
    rm -f "$rec"
    if [ "${NF_RTL_GUEST_RECORD:-1}" = 1 ] && [ -x "$NF_QEMU_BIN" ] &&
       [ -f "$NF_BUILD/guest/initramfs.cpio.gz" ] && declare -F nf_vm_main >/dev/null; then
        if nf_vm_main --quiet --log "$NF_RTL_BUILD/record-vm.log" --timeout 600 \
               --device-props "record=$rec" \
               --run "nfabric-test --only gbinary,gternary,mixed" >&2 && [ -s "$rec" ]; then
            echo guest
            return 0
        fi
        nf_log "rtl: the guest run with record= failed ($NF_RTL_BUILD/record-vm.log); using a synthetic record"
    fi
    "$tb" --make-record "$rec" >&2 || nf_die "rtl: cannot write a record file"
    echo synthetic
}

# The datapath-depth defaults that must equal the measured latency: the
# timing model's (checked by the harness itself through
# nfabric_timing_defaults()), the device property's, and the docs'.
nf_rtl_depth_checks() {
    local lat=$1 d
    d=$(sed -n 's/^#define NFABRIC_T_DEFAULT_DEPTH[[:space:]]*\([0-9]*\).*/\1/p' \
        "$NF_ROOT/include/hw/mem/nfabric_timing.h")
    grep -A1 '"datapath-depth", CXLNFabricState' "$NF_ROOT/hw/mem/nfabric/cxl_nfabric.c" |
        grep -q NFABRIC_T_DEFAULT_DEPTH
    nf_tap $? "cxl_nfabric.c: the datapath-depth property defaults to NFABRIC_T_DEFAULT_DEPTH ($d)"
    [ "$d" = "$lat" ]
    nf_tap $? "nfabric_timing.h: NFABRIC_T_DEFAULT_DEPTH ($d) = the RTL's measured latency ($lat)"
    grep -q "^| datapath depth D | \`datapath-depth\` | $lat cycles |" "$NF_ROOT/docs/timing.md" &&
        grep -q "^| \`datapath-depth\` | $lat |" "$NF_ROOT/README.md"
    nf_tap $? "docs/timing.md and README.md give the default depth as $lat"
    if [ -x "$NF_QEMU_BIN" ]; then
        d=$("$NF_QEMU_BIN" -device cxl-neuron-fabric,help 2>/dev/null |
            sed -n 's/.*datapath-depth=.*(default: \([0-9]*\)).*/\1/p')
        [ "$d" = "$lat" ]
        nf_tap $? "the built QEMU's cxl-neuron-fabric datapath-depth default (${d:-none}) = $lat"
    fi
}

# nf_rtl_mutant NAME SED_EXPR TB_ARGS: a copy of the RTL with one change
# must fail the harness (8 lanes: a small, quick model).
nf_rtl_mutant() {
    local name=$1 expr=$2 tb out rc=0
    shift 2
    mkdir -p "$NF_RTL_BUILD/mutants"
    sed "$expr" "$NF_RTL_DIR/nf_agg.v" > "$NF_RTL_BUILD/mutants/$name.v"
    if cmp -s "$NF_RTL_DIR/nf_agg.v" "$NF_RTL_BUILD/mutants/$name.v"; then
        nf_tap 1 "mutant $name: the change ($expr) no longer applies to nf_agg.v"
        return 0
    fi
    tb=$(nf_rtl_harness "mut-$name" 8 "$NF_RTL_BUILD/mutants/$name.v")
    out=$("$tb" "$@" 2>&1) || rc=$?
    printf '%s\n' "$out" | grep '^# MISMATCH' | head -n 1 | sed 's/^/# mutant: /'
    [ "$rc" != 0 ] && printf '%s\n' "$out" | grep -q '^# MISMATCH'
    nf_tap $? "mutant $name ($expr) is caught by the harness"
}

# nf_rtl_yosys DIR NAME SCRIPT: run yosys quietly in DIR, with copies of
# hw/rtl/*.v there, so that SCRIPT names files without directories (a
# checkout path may hold spaces, which yosys commands cannot take); its log
# is DIR/NAME.log.
nf_rtl_yosys() {
    local dir=$1 name=$2
    shift 2
    mkdir -p "$dir"
    cp "$NF_RTL_DIR/nf_agg.v" "$NF_RTL_DIR/nf_agg_wrap.v" "$dir/"
    (cd "$dir" && yosys -q -l "$name.log" -p "$*" >/dev/null 2>&1)
}

# nf_rtl_stat_sum STATFILE CELL...: the sum of those cells' counts in the
# last "Number of cells" listing of a yosys stat output.
nf_rtl_stat_sum() {
    local f=$1
    shift
    awk -v cells="$*" '
        BEGIN { n = split(cells, c, " "); for (i = 1; i <= n; i++) want[c[i]] = 1 }
        /Number of cells:/ { s = 0 }
        NF == 2 && ($1 in want) { s += $2 }
        END { print s + 0 }' "$f"
}

# ---- the suite ------------------------------------------------------------


nf_suite_rtl() {
    local t0 tb tbs lat out rc=0 rc2 rec kind
    t0=$(date +%s)
    nf_rtl_deps
    mkdir -p "$NF_RTL_BUILD"

    # Verilog-2005 as both tools read it.
    local l
    for l in 512 64 16; do
        out=$(verilator --lint-only -Wall -Wno-UNUSEDSIGNAL -GLANES=$l \
              "$NF_RTL_DIR/nf_agg.v" --top-module nf_agg 2>&1)
        nf_tap $? "verilator --lint-only -Wall: nf_agg, $l lanes, no warning"
        [ -z "$out" ] || printf '%s\n' "$out" | head -n 20 | sed 's/^/# /'
    done
    out=$(verilator --lint-only -Wall -Wno-UNUSEDSIGNAL "$NF_RTL_DIR/nf_agg_wrap.v" \
          "$NF_RTL_DIR/nf_agg.v" --top-module nf_agg_wrap 2>&1)
    nf_tap $? "verilator --lint-only -Wall: nf_agg_wrap"
    [ -z "$out" ] || printf '%s\n' "$out" | head -n 20 | sed 's/^/# /'
    # Its output into a file of ours: iverilog makes the file it writes
    # executable, and as root would do so to /dev/null (docs/host.md).
    iverilog -g2005 -o "$NF_RTL_BUILD/iverilog.vvp" "$NF_RTL_DIR/nf_agg.v" "$NF_RTL_DIR/nf_agg_wrap.v" 2>&1 | sed 's/^/# /'
    nf_tap "${PIPESTATUS[0]}" "iverilog -g2005 (Verilog-2005, no SystemVerilog) accepts hw/rtl/*.v"
    rm -f "$NF_RTL_BUILD/iverilog.vvp"

    # The full 512-bit datapath against the engine.
    tb=$(nf_rtl_harness full 512)
    nf_rtl_run "$tb" --latency > "$NF_RTL_BUILD/latency.out" || rc=1
    cat "$NF_RTL_BUILD/latency.out"
    lat=$(sed -n 's/^rtl_latency_cycles=//p' "$NF_RTL_BUILD/latency.out" | head -n 1)
    nf_rtl_run "$tb" --depth-check || rc=1
    nf_rtl_depth_checks "${lat:-none}"
    nf_rtl_run "$tb" --exhaustive --rot 4 || rc=1
    nf_rtl_run "$tb" --seed "${NF_RTL_SEED:-$t0}" --random "${NF_RTL_LINES:-200000}" || rc=1
    rec=$NF_RTL_BUILD/replay.rec
    kind=$(nf_rtl_record "$tb" "$rec")
    echo "# record: $kind ($rec)"
    nf_rtl_run "$tb" --replay "$rec" || rc=1

    # libnfrtl.so, the model behind the engine's calls, loaded as the
    # device would load it: random accesses against the engine.
    nf_rtl_run "$(dirname "$tb")/nfrtl_test" "$(dirname "$tb")/libnfrtl.so" 20000 || rc=1

    # The device loads it: a guest's aggregation through the RTL.
    nf_rtl_guest_checks "$(dirname "$tb")/libnfrtl.so"

    # A 32-lane slice (the one that fits the iCE40 HX8K): the same checks.
    tbs=$(nf_rtl_harness slice32 32)
    nf_rtl_run "$tbs" --latency --exhaustive --random 50000 || rc=1

    # The checks can fail: one-line changes of the RTL are caught.
    nf_rtl_mutant sat16 's/x == 16.h7fff/x == 16'"'"'h7ffe/' --random 5000
    nf_rtl_mutant tie 's/gt0_16 | (eq0_16 \& tie_pos)/gt0_16 | eq0_16/' --random 5000
    nf_rtl_mutant carry 's/wire       cin = s3_wide \& s3_step16\[j\] \& s3_carry\[j\]/wire       cin = s3_step16[j] \& s3_carry[j]/' --random 5000
    nf_rtl_mutant reserved 's/s1_data\[8\*b1+5\] \& ~s1_data\[8\*b1+4\]/s1_data[8*b1+5]/' --random 5000

    # A quick synthesis (16 lanes, iCE40 cells): fails if the design stops
    # synthesizing or loses its logic.
    local syn=$NF_RTL_BUILD/syn-quick luts ffs
    mkdir -p "$syn"
    nf_rtl_yosys "$syn" yosys "read_verilog nf_agg.v nf_agg_wrap.v;
        chparam -set LANES 16 nf_agg_wrap; synth_ice40 -top nf_agg_wrap; check -assert;
        tee -q -o stat.txt stat"
    rc2=$?
    luts=$(nf_rtl_stat_sum "$syn/stat.txt" SB_LUT4)
    ffs=$(nf_rtl_stat_sum "$syn/stat.txt" SB_DFF SB_DFFE SB_DFFSR SB_DFFR SB_DFFS SB_DFFESR)
    echo "# quick synthesis, 16 lanes wrapped: $luts SB_LUT4, $ffs flip-flops"
    # Every lane's 16-bit counter crosses 5 register stages, the wrapper's
    # shift register holds the inputs: at least 16 * 16 * 5 flip-flops.
    [ "$rc2" = 0 ] && [ "$luts" -gt 16 ] && [ "$ffs" -ge $((16 * 16 * 5)) ]
    nf_tap $? "yosys synth_ice40 + check -assert: 16-lane wrapped datapath synthesizes ($luts LUTs, $ffs FFs)"

    echo "# suite rtl took $(( $(date +%s) - t0 )) s"
    return $rc
}

# ---- the bench --------------------------------------------------------------

nf_bench_rtl_usage() {
    cat <<'USAGE'
usage: scripts/nfabric bench rtl [--quick] [--lines N] [--parts LIST]

  equiv        10^6 random full lines per path and width (--lines N),
               every lane position of the exhaustive lane check, and
               libnfrtl.so against the engine
  xilinx       yosys synth_xilinx of the 512-bit datapath: LUTs, FFs,
               CARRY4, BRAM, DSP
  ice40-full   yosys synth_ice40 of the wrapped 512-bit datapath (cells)
  ice40        synth_ice40 + nextpnr-ice40 --hx8k of the largest slice
               (64, 32, 16, 8 lanes) that places and routes: LCs, Fmax
  guest        a guest's G-Binary window MB/s with the device's rtl=serve
               beside the C engine's, two boots in the same run
  --parts LIST comma-separated parts to run (default: all five)
  --quick      100000 lines, 4 lane positions, no ice40-full
Figures are key=value lines; logs in build/rtl/bench/.  The whole run
takes about 45 minutes on 2 cores (yosys: 15 minutes each for the two
512-lane syntheses).
USAGE
}

nf_bench_rtl() {
    local quick=0 lines=1000000 rot=0 parts=equiv,guest,xilinx,ice40-full,ice40
    while [ $# -gt 0 ]; do
        case $1 in
        --quick) quick=1; lines=100000; rot=4 ;;
        --lines) lines=$2; shift ;;
        --parts) parts=$2; shift ;;
        -h|--help) nf_bench_rtl_usage; return 0 ;;
        *) nf_bench_rtl_usage >&2; return 2 ;;
        esac
        shift
    done
    [ "$quick" = 0 ] || parts=${parts//ice40-full/}
    # shellcheck disable=SC2086 # a list of package names
    nf_rtl_deps $NF_RTL_PNR_PKGS
    local out=$NF_RTL_BUILD/bench tb t0 t1 lat
    mkdir -p "$out"
    tb=$(nf_rtl_harness full 512)
    "$tb" --latency | tee "$out/latency.out" | grep -E '^[a-z0-9_]+=' || nf_die "rtl bench: latency check failed"
    lat=$(sed -n 's/^rtl_latency_cycles=//p' "$out/latency.out")

    # Equivalence at full size.
    case ,$parts, in *,equiv,*)
    t0=$(date +%s)
    "$tb" --exhaustive --rot "$([ "$rot" = 0 ] && echo 512 || echo "$rot")" > "$out/exhaustive.out" ||
        { cat "$out/exhaustive.out"; nf_die "rtl bench: exhaustive check failed"; }
    grep -E '^[a-z0-9_]+=' "$out/exhaustive.out" | grep -v failures
    "$tb" --seed "$t0" --random "$lines" > "$out/random.out" ||
        { cat "$out/random.out"; nf_die "rtl bench: random check failed"; }
    grep -E '^[a-z0-9_]+=' "$out/random.out" | grep -v failures
    # libnfrtl.so (the model behind the engine's calls) against the engine,
    # and its speed beside the engine's on 64-byte G-Binary writes.
    "$(dirname "$tb")/nfrtl_test" "$(dirname "$tb")/libnfrtl.so" 100000 > "$out/lib.out" ||
        { cat "$out/lib.out"; nf_die "rtl bench: libnfrtl check failed"; }
    grep -E '^[a-z0-9_]+=' "$out/lib.out"
    t1=$(date +%s)
    echo "rtl_equivalence_s=$((t1 - t0))"
    echo "rtl_mismatches=0" ;;
    esac

    # A guest's G-Binary window with the RTL serving the device, beside
    # the engine, one boot each, the same program (nfabric-bench).
    case ,$parts, in *,guest,*)
    local m w lib rtl_w c_w
    lib=$(dirname "$tb")/libnfrtl.so
    for m in c rtl; do
        local props=()
        [ "$m" = c ] || props=(--device-props "rtl=serve,rtl-lib=${lib//,/,,}")
        nf_vm_main --quiet --log "$out/guest-$m.log" --timeout 900 "${props[@]}" \
            --run "nfabric-bench --bytes 262144 --reps 2 gbinary" 2> "$out/guest-$m.err" ||
            nf_die "rtl bench: the guest run ($m) failed ($out/guest-$m.log, $out/guest-$m.err)"
        w=$(tr -d '\r' < "$out/guest-$m.log" | sed -n 's/^gbinary_write_MBps=//p' | tail -1)
        [ -n "$w" ] || nf_die "rtl bench: no gbinary_write_MBps in $out/guest-$m.log"
        echo "${m}_guest_gbinary_write_MBps=$w"
        if [ "$m" = c ]; then c_w=$w; else rtl_w=$w; fi
    done
    grep -ho 'rtl=serve: .*' "$out/guest-rtl.err" | sed 's/^/# QEMU: /'
    awk -v r="$rtl_w" -v c="$c_w" 'BEGIN { printf "rtl_gbinary_write_vs_c=%.5f\n", (c > 0 ? r / c : 0) }' ;;
    esac

    # Xilinx 7-series estimate of the full datapath.
    case ,$parts, in *,xilinx,*)
    t0=$(date +%s)
    nf_rtl_yosys "$out" xilinx "read_verilog nf_agg.v;
        chparam -set LANES 512 nf_agg; synth_xilinx -top nf_agg;
        tee -q -o xilinx.stat stat" || nf_die "rtl bench: synth_xilinx failed ($out/xilinx.log)"
    echo "rtl_xilinx_lanes=512"
    # Slice LUTs as Vivado counts them: logic LUTs and LUTs as shift
    # registers (SRL16E: yosys packs plain register chains into them).
    echo "rtl_xilinx_luts=$(nf_rtl_stat_sum "$out/xilinx.stat" LUT1 LUT2 LUT3 LUT4 LUT5 LUT6 SRL16E SRLC32E)"
    echo "rtl_xilinx_lut_logic=$(nf_rtl_stat_sum "$out/xilinx.stat" LUT1 LUT2 LUT3 LUT4 LUT5 LUT6)"
    echo "rtl_xilinx_lut_srl=$(nf_rtl_stat_sum "$out/xilinx.stat" SRL16E SRLC32E)"
    echo "rtl_xilinx_inv=$(nf_rtl_stat_sum "$out/xilinx.stat" INV)"
    echo "rtl_xilinx_ffs=$(nf_rtl_stat_sum "$out/xilinx.stat" FDRE FDSE FDCE FDPE)"
    echo "rtl_xilinx_carry4=$(nf_rtl_stat_sum "$out/xilinx.stat" CARRY4)"
    echo "rtl_xilinx_muxf=$(nf_rtl_stat_sum "$out/xilinx.stat" MUXF7 MUXF8)"
    echo "rtl_xilinx_bram=$(nf_rtl_stat_sum "$out/xilinx.stat" RAMB18E1 RAMB36E1)"
    echo "rtl_xilinx_dsp=$(nf_rtl_stat_sum "$out/xilinx.stat" DSP48E1)"
    echo "rtl_xilinx_synth_s=$(( $(date +%s) - t0 ))" ;;
    esac

    # iCE40: the full wrapped datapath's cell count (it cannot fit an
    # HX8K's 7680 logic cells), then P&R of the largest slice that fits.
    local lanes fit=0 json
    case ,$parts, in *,ice40-full,*)
        t0=$(date +%s)
        nf_rtl_yosys "$out" ice40-512 "read_verilog nf_agg.v nf_agg_wrap.v;
            chparam -set LANES 512 nf_agg_wrap; synth_ice40 -top nf_agg_wrap;
            tee -q -o ice40-512.stat stat" || nf_die "rtl bench: synth_ice40 (512) failed"
        echo "rtl_ice40_512_luts=$(nf_rtl_stat_sum "$out/ice40-512.stat" SB_LUT4)"
        echo "rtl_ice40_512_ffs=$(nf_rtl_stat_sum "$out/ice40-512.stat" SB_DFF SB_DFFE SB_DFFSR SB_DFFR SB_DFFS SB_DFFESR SB_DFFSS SB_DFFESS SB_DFFER SB_DFFES)"
        echo "rtl_ice40_512_carry=$(nf_rtl_stat_sum "$out/ice40-512.stat" SB_CARRY)"
        echo "rtl_ice40_512_synth_s=$(( $(date +%s) - t0 ))" ;;
    esac
    case ,$parts, in *,ice40,*) ;; *) return 0 ;; esac
    for lanes in 64 32 16 8; do
        json=$out/ice40-$lanes.json
        nf_rtl_yosys "$out" "ice40-$lanes" "read_verilog nf_agg.v nf_agg_wrap.v;
            chparam -set LANES $lanes nf_agg_wrap; synth_ice40 -top nf_agg_wrap -json ice40-$lanes.json;
            tee -q -o ice40-$lanes.stat stat" || nf_die "rtl bench: synth_ice40 ($lanes lanes) failed"
        # --timing-allow-fail: a slice that places and routes counts; its
        # Fmax is what it is.
        if nextpnr-ice40 --hx8k --package ct256 --json "$json" --freq 100 \
               --pcf-allow-unconstrained --timing-allow-fail --seed 1 \
               --asc "$out/ice40-$lanes.asc" \
               > "$out/pnr-$lanes.log" 2>&1; then
            fit=$lanes
            break
        fi
        nf_log "rtl bench: $lanes lanes do not fit the HX8K ($out/pnr-$lanes.log)"
    done
    [ "$fit" != 0 ] || nf_die "rtl bench: no slice placed and routed"
    local lcs fmax
    lcs=$(sed -n 's/.*ICESTORM_LC: *\([0-9]*\)\/ *\([0-9]*\).*/\1/p' "$out/pnr-$fit.log" | tail -n 1)
    fmax=$(sed -n "s/.*Max frequency for clock *'[^']*': \([0-9.]*\) MHz.*/\1/p" "$out/pnr-$fit.log" | tail -n 1)
    echo "rtl_ice40_part=hx8k"
    echo "rtl_ice40_slice_lanes=$fit"
    echo "rtl_ice40_slice_fraction=$(awk -v l="$fit" 'BEGIN{printf "%.4f", l / 512}')"
    echo "rtl_ice40_lcs=$lcs"
    echo "rtl_ice40_lcs_available=7680"
    echo "rtl_ice40_wrapper_ffs=$(( (49 + fit / 8 + fit + fit * 16 + 7) / 8 * 8 ))"
    echo "rtl_ice40_fmax_mhz=$fmax"
}
