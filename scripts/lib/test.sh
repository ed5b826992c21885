# shellcheck shell=bash
# SPDX-License-Identifier: GPL-2.0-or-later
# `scripts/nfabric test`: runs every registered suite, counts TAP results.
#
# A library registers a suite with `nf_register_suite ORDER NAME "what"` and
# defines nf_suite_NAME, which prints TAP ("ok N - ..." / "not ok N - ...")
# on stdout and returns non-zero on failure.  A suite that fails without
# printing a "not ok" line counts as one failure, so a crash is never a pass.

nf_suites_sorted() {
    local k
    for k in "${!NF_SUITE_ORDER[@]}"; do
        printf '%s %s\n' "${NF_SUITE_ORDER[$k]}" "$k"
    done | sort -n | awk '{print $2}'
}

nf_test_usage() {
    echo "usage: scripts/nfabric test [--list] [SUITE...]"
    echo
    echo "Runs the named suites (default: all), then the host check (the machine"
    echo "as before the run), and ends with 'N passed, N failed'."
    echo "Logs: build/test-logs/SUITE.log (NF_TEST_LOGDIR=DIR: DIR/SUITE.log)"
    echo
    echo "Suites:"
    local s
    for s in $(nf_suites_sorted); do
        printf '  %-8s %s\n' "$s" "${NF_SUITE_DESC[$s]}"
    done
}

# nf_test_run_suite NAME COMMAND DESCRIPTION: run one suite's COMMAND (its
# words split), its output in test-logs/NAME.log; count its TAP lines into
# NF_TEST_PASSED and NF_TEST_FAILED and print its line.
nf_test_run_suite() {
    local s=$1 cmd logdir=$NF_TEST_LOGS p f rc=0
    read -r -a cmd <<<"$2"
    nf_log "suite $s: $3"
    # shellcheck disable=SC2034  # nf_tap's counters (common.sh)
    NF_TAP_N=0 NF_TAP_FAILED=0
    # In a subshell: a suite that exits (nf_die) fails itself, not the run.
    ("${cmd[@]}") > "$logdir/$s.log" 2>&1 || rc=$?
    p=$(grep -c '^ok ' "$logdir/$s.log" || true)
    f=$(grep -c '^not ok ' "$logdir/$s.log" || true)
    if [ "$rc" -ne 0 ] && [ "$f" -eq 0 ]; then
        echo "not ok - suite $s exited with status $rc" >> "$logdir/$s.log"
        f=1
    fi
    grep '^not ok ' "$logdir/$s.log" | sed "s/^/  [$s] /" || true
    grep -h 'vm: BOOT HUNG' "$logdir/$s.log" | sed "s/^/  [$s] /" || true
    printf '%-8s %4d passed, %d failed   (%s)%s\n' "$s:" "$p" "$f" "$logdir/$s.log" \
        "$(sed -n 's/^# \(skipped: .*\)/  \1/p' "$logdir/$s.log" | head -n 1)"
    NF_TEST_PASSED=$((NF_TEST_PASSED + p))
    NF_TEST_FAILED=$((NF_TEST_FAILED + f))
}

nf_test_main() {
    local suites=() s
    while [ $# -gt 0 ]; do
        case "$1" in
        -h|--help) nf_test_usage; return 0 ;;
        --list) nf_suites_sorted; return 0 ;;
        -*) echo "nfabric test: unknown option \"$1\"" >&2; nf_test_usage >&2; return 2 ;;
        *) [ -n "${NF_SUITE_ORDER[$1]:-}" ] ||
               { echo "nfabric test: unknown suite \"$1\" (have: $(nf_suites_sorted | tr '\n' ' '))" >&2; return 2; }
           suites+=("$1") ;;
        esac
        shift
    done
    [ ${#suites[@]} -gt 0 ] || mapfile -t suites < <(nf_suites_sorted)
    # The machine before the run, for the host check at its end.
    local before=$NF_RUN_TMP/host-before
    nf_host_snapshot "$before"

    # Suites that need nothing built (lint) run without the set-up.
    for s in "${suites[@]}"; do
        if [ -z "${NF_SUITE_NOSETUP[$s]:-}" ]; then
            nf_setup_main --quiet
            break
        fi
    done
    # The suites' logs: NF_TEST_LOGDIR, or build/test-logs.
    local logdir=${NF_TEST_LOGDIR:-$NF_BUILD/test-logs}
    NF_TEST_LOGS=$logdir
    NF_TEST_PASSED=0 NF_TEST_FAILED=0
    mkdir -p "$logdir"
    rm -f "$logdir/boot-hangs.log"      # scripts/lib/vm.sh notes hung boots there
    for s in "${suites[@]}"; do
        nf_test_run_suite "$s" "nf_suite_$s" "${NF_SUITE_DESC[$s]}"
    done
    # The host check: the machine as the run found it (docs/host.md).
    nf_test_run_suite host "nf_host_check $before" \
        "the machine as before the run: device nodes, /dev/shm, /tmp, processes, mounts, network namespaces, apt sources"
    local passed=$NF_TEST_PASSED failed=$NF_TEST_FAILED
    if [ -s "$logdir/boot-hangs.log" ]; then
        echo "boot hangs (a guest printed nothing, killed and started again):"
        sed 's/^/  /' "$logdir/boot-hangs.log"
    fi
    echo "$passed passed, $failed failed"
    [ "$failed" -eq 0 ] || return 1
}

# ---- unit: the host-side unit tests built by the root meson.build --------
nf_register_suite 10 unit "host unit tests (engine, controller model, timing model and tool)"
nf_suite_unit() {
    local t rc=0
    # Run each TAP test program directly so that every check is counted.
    while read -r t; do
        echo "# $t"
        "$t" || rc=1
    done < <(find "$NF_HOST_BUILD/tests/unit" -maxdepth 1 -type f -name 'test*' -perm -u+x | sort)
    echo "# tests/unit/test_timing_tool.sh"
    sh "$NF_ROOT/tests/unit/test_timing_tool.sh" "$NF_HOST_BUILD/bench/nfabric-timing" || rc=1
    return $rc
}

# ---- lint: shellcheck over every shell file of the project ---------------
nf_register_suite 5 lint "shellcheck (Debian's) over every shell file of the project: no findings"
nf_suite_needs_no_setup lint

# nf_shell_files: every tracked shell file (scripts/nfabric and its
# libraries, .ci/run, tests, the guest's init), found by name or by its
# first line, so that a new script cannot escape the lint.
nf_shell_files() {
    local f first
    git -C "$NF_ROOT" ls-files -z | while IFS= read -r -d '' f; do
        case "${f##*/}" in
        *.sh) echo "$f"; continue ;;
        ?*.*) continue ;;
        esac
        [ -f "$NF_ROOT/$f" ] || continue
        IFS= read -r first < "$NF_ROOT/$f" || true
        case "$first" in
        '#!'*/sh|'#!'*/bash|'#!'*'env bash'|'#!'*'env sh') echo "$f" ;;
        esac
    done
}

nf_suite_lint() {
    local f n=0 rc=0 out files=() lines
    nf_need shellcheck
    mapfile -t files < <(nf_shell_files)
    echo "# $(shellcheck --version | sed -n 's/^version: /shellcheck /p'), ${#files[@]} files"
    [ ${#files[@]} -ge 25 ] || { echo "not ok - only ${#files[@]} shell files found (git ls-files in $NF_ROOT)"; return 1; }
    for f in "${files[@]}"; do
        n=$((n + 1))
        # -x follows `. FILE` (scripts/nfabric reads every library); each
        # file's own directives say where its sources are.
        if out=$(cd "$NF_ROOT" && shellcheck -x -f gcc "$f" 2>&1); then
            echo "ok $n - shellcheck $f"
        else
            echo "not ok $n - shellcheck $f: $(grep -c ': \(error\|warning\|note\|style\):' <<<"$out") findings"
            mapfile -t lines <<<"$out"
            printf '#   %s\n' "${lines[@]}"
            rc=1
        fi
    done
    return $rc
}
