# shellcheck shell=bash
# SPDX-License-Identifier: GPL-2.0-or-later
# `scripts/nfabric pools`: P clusters of H VMs, each cluster one shared
# device (a pool), on one network of their own (scripts/nfmachine/pools.py,
# docs/pools.md).

nf_pools_main() {
    nf_machine_built pools "$@" || return $?
}
