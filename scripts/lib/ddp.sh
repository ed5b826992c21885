# shellcheck shell=bash
# SPDX-License-Identifier: GPL-2.0-or-later
# PyTorch: the suites `ddp` and `pools`, `bench ddp|archs|ef|hard|pools`
# (docs/pytorch.md, docs/pools.md).  Here the provisioning: Debian's
# python3-torch (1.13.1, gloo) and python3-numpy, the host programs
# (libnfabric.so); the suites and benchmarks are scripts/nfmachine/ddp.py.

NF_PY=/usr/bin/python3      # Debian's: a python3 earlier on PATH cannot see its torch
NF_PKGS_DDP=(python3-torch python3-torchvision python3-numpy dataset-fashion-mnist)

# nf_ddp_py ARGS...: python3 with the project's package on the path.
nf_ddp_py() {
    PYTHONPATH=$NF_ROOT/guest/python NFABRIC_LIB=$NF_HOST_BUILD/guest/libnfabric.so \
        "$NF_PY" "$@"
}

nf_ddp_prepare() {
    nf_need "${NF_PKGS_DDP[@]}"
    nf_host_build
}

nf_suite_ddp() {
    nf_ddp_prepare
    nf_machine ddp-suite
}

nf_suite_pools() {
    nf_ddp_prepare
    nf_machine pools-suite
}

# nf_ddp_bench NAME ARGS...: `bench NAME` of scripts/nfmachine/ddp.py.  Its
# options are checked first (`--check`: the help, or a refusal), then what
# it needs is installed and built (gnuplot for the plots of ddp and pools).
nf_ddp_bench() {
    local name=$1 out rc=0
    shift
    out=$(nf_machine "bench-$name" --check "$@") || return
    if [ -n "$out" ]; then
        printf '%s\n' "$out"
        return 0
    fi
    nf_ddp_prepare
    case $name in ddp|pools) nf_need gnuplot-nox ;; esac
    nf_machine "bench-$name" "$@" || rc=$?
    return "$rc"
}

nf_bench_ddp() { nf_ddp_bench ddp "$@"; }
nf_bench_archs() { nf_ddp_bench archs "$@"; }
nf_bench_ef() { nf_ddp_bench ef "$@"; }
nf_bench_hard() { nf_ddp_bench hard "$@"; }
nf_bench_pools() { nf_ddp_bench pools "$@"; }
