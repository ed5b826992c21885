# shellcheck shell=bash
# SPDX-License-Identifier: GPL-2.0-or-later
# The `concurrency` suite: a guest with 4 vCPUs (MTTCG: one host thread per
# vCPU) in which the G-Binary, G-Ternary and statistics checks run their
# worker processes at once on the same windows.  Every contribution must
# arrive: counts, read-back and statistics equal the guest's reference.
# The device serialises accesses under the BQL (docs/device.md).

# The guest's CPU count and, when fewer than 4 came up, what its kernel said
# about bringing them up (an application processor that does not answer in
# time on an overloaded host is refused by the kernel, not by the device).
# shellcheck disable=SC2016  # the command runs in the guest
NF_CONCURRENCY_CPUS='n=$(grep -c ^processor /proc/cpuinfo); echo "NFABRIC-CPUS=$n"; [ "$n" = 4 ] || dmesg | grep -iE "smpboot|cpu ?#?[0-9]|alive|offline" | sed "s/^/# guest kernel: /"'

# nf_concurrency_cpus LOG: the CPU count the guest reported (empty if none).
nf_concurrency_cpus() {
    tr -d '\r' < "$1" | grep -oE 'NFABRIC-CPUS=[0-9]+' | tail -n 1 | cut -d= -f2 || true
}

nf_suite_concurrency() {
    local log=$NF_BUILD/test-logs/concurrency-console.log rc=0 cpus attempt
    mkdir -p "$(dirname "$log")"
    for attempt in 1 2; do
        rc=0
        nf_guest_run "$log" "$NF_CONCURRENCY_CPUS; nfabric-test --only gbinary,gternary,mixed,stats,toggle" \
            --cpus 4 || rc=$?
        cpus=$(nf_concurrency_cpus "$log")
        # A boot in which the kernel could not bring a vCPU up (TCG on a
        # loaded host) tests less than it claims: boot once more, say so, and
        # keep the first console.
        if [ "$cpus" = 4 ] || [ "$attempt" = 2 ]; then
            break
        fi
        echo "# the guest came up on ${cpus:-?} of 4 vCPUs (its kernel's words below); booting it once more"
        grep -E '^# guest kernel: ' "$log" || true
        cp "$log" "$log.attempt1"
    done
    if [ "$cpus" = 4 ]; then
        echo "ok - the guest runs on 4 vCPUs"
    else
        echo "not ok - the guest runs on 4 vCPUs (it reported ${cpus:-nothing}; console: $log)"; rc=1
        grep -E '^# guest kernel: ' "$log" || true
    fi
    grep -E '^(ok|not ok|#|1\.\.)' "$log" | grep -vE '^# guest kernel: ' || true
    grep -qE '^NFABRIC-READY' "$log" || { echo "not ok - the guest did not get ready"; rc=1; }
    return $rc
}
