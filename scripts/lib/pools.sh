# shellcheck shell=bash
# SPDX-License-Identifier: GPL-2.0-or-later
# `scripts/nfabric pools` (scripts/nfmachine/pools.py): P clusters of H VMs,
# each cluster one shared device (a pool), every VM on one network of their
# own: a hub on unix sockets (scripts/lib/nethub.py); docs/pools.md.
nf_pools_main() {
    local rc=0
    nf_machine pools "$@" || rc=$?
    return "$rc"
}
