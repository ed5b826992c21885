# shellcheck shell=bash
# SPDX-License-Identifier: GPL-2.0-or-later
# `scripts/nfabric test`: the front door of the test suites registered in
# tests/meson.build (`test(NAME, scripts/nfabric test-suite NAME, suite:
# 'nfabric')`, as QEMU registers its qtests and functional tests).
#
# It runs the set-up if a chosen suite needs it, then `meson test --suite
# nfabric NAME...` on the host build (one at a time, in the table's
# order), then the host check, and counts.  Meson runs each suite as
# `scripts/nfabric test-suite NAME` (nf_test_suite_main), which calls
# nf_suite_NAME (defined in scripts/lib/): it prints TAP ("ok N - ..." /
# "not ok N - ...") into build/test-logs/NAME.log and returns non-zero on
# failure; a suite that fails without printing a "not ok" line counts as
# one failure, so a crash is never a pass, and a suite meson did not run
# counts as one too.

# nf_meson_table FILE VAR: the rows of the table VAR of meson.build FILE, a
# line each (scripts/nfmachine/testfront.py), so that listing needs no
# configured build.
nf_meson_table() {
    nf_machine meson-table "$1" "$2"
}

# nf_test_run_suite NAME COMMAND DESCRIPTION: run one suite's COMMAND (its
# words split), its output in test-logs/NAME.log; print its line and
# append "NAME PASSED FAILED" to NF_TEST_COUNTS.
nf_test_run_suite() {
    local s=$1 run logdir=$NF_TEST_LOGS p f rc=0
    read -r -a run <<<"$2"
    nf_log "suite $s: $3"
    # shellcheck disable=SC2034  # nf_tap's counters (common.sh)
    NF_TAP_N=0 NF_TAP_FAILED=0
    # In a subshell: a suite that exits (nf_die) fails itself, not the run.
    ("${run[@]}") > "$logdir/$s.log" 2>&1 || rc=$?
    p=$(grep -c '^ok ' "$logdir/$s.log" || true)
    f=$(grep -c '^not ok ' "$logdir/$s.log" || true)
    if [ "$rc" -ne 0 ] && [ "$f" -eq 0 ]; then
        echo "not ok - suite $s exited with status $rc" >> "$logdir/$s.log"
        f=1
    fi
    # Each failure with the first comment lines after it (what was wanted,
    # what was seen), so that a run's output alone says what failed.
    awk '/^not ok /{print; c=6; next} c>0 && /^#/{print; c--; next} {c=0}' \
        "$logdir/$s.log" | sed "s/^/  [$s] /" || true
    grep -h ': BOOT HUNG' "$logdir/$s.log" | sed "s/^/  [$s] /" || true
    printf '%-8s %4d passed, %d failed   (%s)%s\n' "$s:" "$p" "$f" "$logdir/$s.log" \
        "$(sed -n 's/^# \(skipped: .*\)/  \1/p' "$logdir/$s.log" | head -n 1)"
    echo "$s $p $f" >> "$NF_TEST_COUNTS"
    [ "$f" -eq 0 ]
}

# The variables meson test adds to a test's environment (sanitizer options,
# a random MALLOC_PERTURB_): a suite runs with the caller's instead.
NF_MESON_TEST_VARS=(ASAN_OPTIONS UBSAN_OPTIONS MSAN_OPTIONS MALLOC_PERTURB_ MESON_TEST_ITERATION)

# `scripts/nfabric test-suite NAME`: one suite, as meson test runs it.
nf_test_suite_main() {
    local s=${1:-} v rc=0
    { [ -n "$s" ] && declare -F "nf_suite_$s" > /dev/null; } ||
        { echo "nfabric test-suite: no suite \"$s\" (scripts/nfabric test --list)" >&2; return 2; }
    [ -n "${NF_TEST_COUNTS:-}" ] ||
        { echo "nfabric test-suite: run it through scripts/nfabric test $s" >&2; return 2; }
    for v in "${NF_MESON_TEST_VARS[@]}"; do unset "$v"; done
    eval "${NF_TEST_CALLER_ENV:-}"
    nf_test_run_suite "$s" "nf_suite_$s" "${NF_SUITE_DESC:-}" || rc=$?
    return "$rc"
}

nf_test_main() {
    local suites=() s setup rc=0
    # The options and the suites (scripts/nfmachine/testfront.py): help and
    # --list end here (3), a refusal is its status.
    mapfile -t suites < <(s=0; nf_machine test-args "$@" || s=$?; echo "status $s")
    s=${suites[-1]#status }
    unset 'suites[-1]'
    [ "$s" = 3 ] && { printf '%s\n' "${suites[@]}"; return 0; }
    [ "$s" = 0 ] || return "$s"
    setup=${suites[0]}
    suites=("${suites[@]:1}")
    # The machine before the run, for the host check at its end.
    local before=$NF_RUN_TMP/host-before
    nf_host_snapshot "$before"

    # The set-up, if a suite needs it; meson's view of the host build.
    if [ "$setup" = setup ]; then
        nf_setup_main --quiet
    else
        nf_host_configure
    fi
    # The suites' logs: NF_TEST_LOGDIR, or build/test-logs.
    local logdir=${NF_TEST_LOGDIR:-$NF_BUILD/test-logs} v
    NF_TEST_LOGS=$logdir
    NF_TEST_COUNTS=$NF_RUN_TMP/test-counts
    NF_TEST_CALLER_ENV=$(for v in "${NF_MESON_TEST_VARS[@]}"; do
        [ -z "${!v+x}" ] || printf 'export %s=%q\n' "$v" "${!v}"; done)
    export NF_TEST_LOGS NF_TEST_COUNTS NF_TEST_CALLER_ENV
    mkdir -p "$logdir"
    : > "$NF_TEST_COUNTS"
    rm -f "$logdir/boot-hangs.log"      # scripts/nfmachine/vm.py notes hung boots there
    # One at a time, in the table's order (meson: priority); the suites'
    # own lines and meson's live; meson's log of this run removed after.
    local logbase=nfabric-test-$NF_RUN_ID
    meson test -C "$NF_HOST_BUILD" --no-rebuild --suite nfabric --num-processes 1 \
        --logbase "$logbase" "${suites[@]}" || true
    rm -f "$NF_HOST_BUILD/meson-logs/$logbase".*
    # The host check: the machine as the run found it (docs/host.md).
    nf_test_run_suite host "nf_host_check $before" \
        "the machine as before the run: device nodes, /dev/shm, /tmp, processes, mounts, network namespaces, apt sources" || true
    # A suite meson did not run is a failure; the boot hangs; the totals.
    nf_machine test-total "$logdir" "$NF_TEST_COUNTS" "${suites[@]}" || rc=$?
    return "$rc"
}

# ---- unit and lint (scripts/nfmachine/lint.py) ----------------------------
# unit: the host-side unit tests built by the root meson.build, the timing
# tool's test and tests/machine/test_*.py; lint: shellcheck over every
# tracked shell file.
nf_suite_unit() {
    nf_machine unit-suite
}

nf_suite_lint() {
    nf_need shellcheck
    nf_machine lint-suite
}
