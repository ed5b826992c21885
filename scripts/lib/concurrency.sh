# shellcheck shell=bash
# SPDX-License-Identifier: GPL-2.0-or-later
# The `concurrency` suite: a guest with 4 vCPUs (MTTCG: one host thread per
# vCPU) in which the G-Binary, G-Ternary and statistics checks run their
# worker processes at once on the same windows.  Every contribution must
# arrive: counts, read-back and statistics equal the guest's reference.
# The device serialises accesses under the BQL (docs/device.md).

nf_register_suite 35 concurrency "4 vCPUs, 4 worker processes writing the same windows: no contribution lost"
nf_suite_concurrency() {
    local log=$NF_BUILD/test-logs/concurrency-console.log rc=0
    mkdir -p "$(dirname "$log")"
    # shellcheck disable=SC2016  # the command runs in the guest
    nf_guest_run "$log" 'echo "NFABRIC-CPUS=$(grep -c ^processor /proc/cpuinfo)"; nfabric-test --only gbinary,gternary,mixed,stats,toggle' \
        --cpus 4 || rc=$?
    if tr -d '\r' < "$log" | grep -q '^NFABRIC-CPUS=4$'; then
        echo "ok - the guest runs on 4 vCPUs"
    else
        echo "not ok - the guest runs on 4 vCPUs"; rc=1
    fi
    grep -E '^(ok|not ok|#|1\.\.)' "$log" || true
    grep -qE '^NFABRIC-READY' "$log" || { echo "not ok - the guest did not get ready"; rc=1; }
    return $rc
}
