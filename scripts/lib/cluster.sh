# shellcheck shell=bash
# SPDX-License-Identifier: GPL-2.0-or-later
# Several hosts (one QEMU each) with one shared NEURON-Fabric device: each
# host's device is a head of the same device (shared-state=FILE, head=R,
# heads=N) over the same device memory file.  Booted, watched and reaped in
# scripts/nfmachine: `scripts/nfabric cluster` (cluster.py), the
# `multihost` test suite (multihost.py) and `bench cluster`
# (benchcluster.py), their hosts booted one by one (hosts.py).
# docs/multihost.md.

nf_cluster_main() {
    nf_machine_built cluster "$@" || return $?
}

# The multihost suite: its cases and their TAP (scripts/nfmachine/multihost.py).
# NF_MULTIHOST_CASES="jobs2 pause2" runs only those (a developer's loop).
nf_suite_multihost() {
    local cases=()
    read -r -a cases <<< "${NF_MULTIHOST_CASES:-}"
    nf_image_main >&2
    nf_machine multihost-suite "${cases[@]}"
}

# `scripts/nfabric bench cluster [--mib N] [--rounds N]`
# (scripts/nfmachine/benchcluster.py; QEMU and the image built first).  A
# bad option's status is the verdict, said there.
nf_bench_cluster() {
    nf_machine_built bench-cluster "$@" || return $?
}
