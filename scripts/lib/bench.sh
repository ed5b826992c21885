# shellcheck shell=bash
# SPDX-License-Identifier: GPL-2.0-or-later
# `scripts/nfabric bench NAME`: each benchmark is a function nf_bench_NAME
# defined by one of the libraries and registered, with a one-line
# description, in bench/meson.build.  Benchmarks print key=value lines.

nf_bench_engine() {
    nf_host_build
    "$NF_HOST_BUILD/bench/nfabric-bench-engine" "$@"
}

nf_bench_heads() {
    local path
    nf_host_build
    for path in gbinary gternary; do
        "$NF_HOST_BUILD/bench/nfabric-bench-heads" --path "$path" --dir "$NF_RUN_SHM" "$@" ||
            nf_die "bench heads: nfabric-bench-heads --path $path failed"
    done
    # Each head into elements of its own: the shared path without the
    # counters' lines moving between cores (heads_apart_gbinary_*).
    "$NF_HOST_BUILD/bench/nfabric-bench-heads" --path gbinary --apart --dir "$NF_RUN_SHM" "$@" ||
        nf_die "bench heads: nfabric-bench-heads --path gbinary --apart failed"
    # Each head over the whole window from its share of it, as
    # nfabric_mem_write and bench cluster write (heads_whole_gbinary_*).
    "$NF_HOST_BUILD/bench/nfabric-bench-heads" --path gbinary --whole --dir "$NF_RUN_SHM" "$@" ||
        nf_die "bench heads: nfabric-bench-heads --path gbinary --whole failed"
}

nf_bench_main() {
    local name=${1:-}
    if [ -z "$name" ] || [ "$name" = --help ] || [ "$name" = -h ]; then
        echo "usage: scripts/nfabric bench NAME [ARGS...]"
        echo
        echo "Benchmarks (each prints key=value lines):"
        local k desc
        while read -r k desc; do
            printf '  %-10s %s\n' "$k" "$desc"
        done < <(nf_meson_table "$NF_ROOT/bench/meson.build" nf_benchmarks)
        [ -n "$name" ] && return 0
        return 2
    fi
    shift
    declare -F "nf_bench_$name" >/dev/null || {
        echo "nfabric: unknown benchmark \"$name\" (try: scripts/nfabric bench --help)" >&2
        return 2
    }
    local rc=0
    "nf_bench_$name" "$@" || rc=$?
    return "$rc"
}
