# shellcheck shell=bash
# SPDX-License-Identifier: GPL-2.0-or-later
# The `concurrency` suite: a guest with 4 vCPUs (MTTCG: one host thread per
# vCPU) in which the G-Binary, G-Ternary and statistics checks run their
# worker processes at once on the same windows.  Every contribution must
# arrive: counts, read-back and statistics equal the guest's reference.
# The device serialises accesses under the BQL (docs/device.md).  The boot
# and its checks: scripts/nfmachine/concurrency.py.
nf_suite_concurrency() {
    nf_image_main >&2
    local rc=0
    nf_machine concurrency-suite || rc=$?
    return "$rc"
}
