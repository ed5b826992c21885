# shellcheck shell=bash
# SPDX-License-Identifier: GPL-2.0-or-later
# The aggregation datapath in Verilog (hw/rtl/, docs/rtl.md): what its
# checks need installed and built -- the packages, the C engine as a
# reference library, the Verilator harness, libnfrtl.so (`scripts/nfabric
# rtl-lib`), the faulty stand-in, the mutants' harnesses.  The checks
# themselves are scripts/nfmachine/rtl.py:
#   suite `rtl`       lint, the Verilator harness against the C engine
#                     (latency, exhaustive lanes, random lines, a record
#                     replay), the timing model's depth default against the
#                     measured latency, guests through the RTL, mutants that
#                     must fail, a quick synthesis; about 3-4 minutes on 2
#                     cores from scratch
#   bench `rtl`       the full equivalence run, a guest's G-Binary window
#                     through the RTL, Yosys synth_xilinx and synth_ice40 +
#                     nextpnr-ice40; key=value figures

NF_RTL_DIR=$NF_ROOT/hw/rtl
NF_RTL_BUILD=$NF_BUILD/rtl
NF_RTL_PKGS="verilator yosys iverilog"
NF_RTL_PNR_PKGS="nextpnr-ice40 fpga-icestorm"
# The C sources the harness links: the engine is the reference.
NF_RTL_REF_SRC="nfabric_engine nfabric_engine_simd nfabric_window nfabric_record nfabric_timing"

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
           [ -n "$(find "$NF_ROOT/include/hw/mem" "$NF_ROOT/hw/mem/nfabric" -newer "$out/$f.o" -name '*.h' -print -quit)" ]; then
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
        "$NF_ROOT/hw/mem/nfabric/nfabric_engine_simd.c" "$NF_ROOT/hw/mem/nfabric/nfabric_window.c" -o "$out" >&2 ||
        { echo "rtl: cannot build tests/rtl/nfrtl_fault.c" >&2; return 1; }
    echo "$out"
}

# ---- the suite and the bench (scripts/nfmachine/rtl.py) ---------------------

nf_suite_rtl() {
    local t0 mutants m fault rc=0
    t0=$(date +%s)
    nf_rtl_deps
    mkdir -p "$NF_RTL_BUILD"
    nf_rtl_harness full 512 >&2
    nf_rtl_harness slice32 32 >&2
    # The mutants' sources (rtl.py writes them), each an 8-lane harness.
    mutants=$(nf_machine rtl-mutants "$NF_RTL_BUILD/mutants")
    for m in $mutants; do
        nf_rtl_harness "mut-$m" 8 "$NF_RTL_BUILD/mutants/$m.v" >&2
    done
    fault=$(nf_rtl_fault_lib) || fault=
    # The guests' image, when there is a QEMU to boot them.
    if [ -x "$NF_QEMU_BIN" ]; then
        nf_image_main >&2 || nf_die "rtl: cannot build the guest image"
    fi
    nf_machine rtl-suite "$t0" "$fault" || rc=$?
    return "$rc"
}

nf_bench_rtl() {
    nf_machine bench-rtl check "$@" || return $?
    case " $* " in *" -h "*|*" --help "*) return 0 ;; esac
    # shellcheck disable=SC2086 # a list of package names
    nf_rtl_deps $NF_RTL_PNR_PKGS
    mkdir -p "$NF_RTL_BUILD"
    nf_rtl_harness full 512 >&2
    local rc=0
    nf_machine bench-rtl run "$@" || rc=$?
    return "$rc"
}
