# shellcheck shell=bash
# SPDX-License-Identifier: GPL-2.0-or-later
# `scripts/nfabric bench timing` (bench/timing_sweep.py): the timing model's
# exposed datapath overhead in both regimes and the sweeps between them,
# through the offline tool bench/nfabric_timing_tool.c; docs/timing.md.
# Here only what it needs built: the tool, the RTL harness whose measured
# latency goes through the same model, and gnuplot for the plots.
nf_bench_timing() {
    local py=("$NF_ROOT/bench/timing_sweep.py") a plot=1 harness
    /usr/bin/python3 "${py[@]}" check "$@" || return $?
    for a in "$@"; do
        case "$a" in
        -h|--help) return 0 ;;
        --no-plot) plot=0 ;;
        esac
    done
    nf_host_build
    nf_rtl_deps >&2
    mkdir -p "$NF_RTL_BUILD"
    harness=$(nf_rtl_harness full 512) || nf_die "bench timing: cannot build the RTL harness"
    if [ "$plot" = 1 ] && ! command -v gnuplot >/dev/null 2>&1; then
        nf_need gnuplot-nox
    fi
    NF_TIMING_TOOL=$NF_HOST_BUILD/bench/nfabric-timing NF_RTL_HARNESS=$harness \
        NF_TIMING_OUT=$NF_BUILD/bench/timing NF_DOCS_IMG=$NF_ROOT/docs/img \
        /usr/bin/python3 "${py[@]}" run "$@"
}
