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

# nf_meson_table FILE VAR: the rows of the table VAR of meson.build FILE
# (a list of lists of strings and booleans), a line each, fields separated
# by spaces (booleans as 1/0, the last field the rest of the line), so that
# listing needs no configured build.
nf_meson_table() {
    /usr/bin/python3 - "$1" "$2" <<'PY'
import ast, re, sys
text = open(sys.argv[1]).read()
m = re.search(r"^" + sys.argv[2] + r" = (\[.*?^\])", text, re.S | re.M)
if not m:
    sys.exit(f"{sys.argv[1]}: no {sys.argv[2]} table")
rows = ast.literal_eval(re.sub(r"\b(true|false)\b", lambda b: b.group(1).title(),
                               re.sub(r"#[^\n]*", "", m.group(1))))
for row in rows:
    print(" ".join(str(int(f)) if isinstance(f, bool) else f for f in row))
PY
}

# nf_suite_table: "NAME SETUP DESCRIPTION" per suite in the order they run
# (tests/meson.build).
nf_suite_table() {
    nf_meson_table "$NF_ROOT/tests/meson.build" nf_suites
}

nf_test_usage() {
    echo "usage: scripts/nfabric test [--list] [SUITE...]"
    echo
    echo "Runs the named suites (default: all; tests/meson.build registers them,"
    echo "meson test runs them), then the host check (the machine as before the"
    echo "run), and ends with 'N passed, N failed'."
    echo "Logs: build/test-logs/SUITE.log (NF_TEST_LOGDIR=DIR: DIR/SUITE.log)"
    echo
    echo "Suites:"
    local name setup desc
    while read -r name setup desc; do
        printf '  %-8s %s\n' "$name" "$desc"
    done < <(nf_suite_table)
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
    grep '^not ok ' "$logdir/$s.log" | sed "s/^/  [$s] /" || true
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
    local suites=() s name setup desc v need_setup=0
    declare -A known=() needs=()
    while read -r name setup desc; do
        known[$name]=$desc
        needs[$name]=$setup
    done < <(nf_suite_table)
    while [ $# -gt 0 ]; do
        case "$1" in
        -h|--help) nf_test_usage; return 0 ;;
        --list) nf_suite_table | cut -d' ' -f1; return 0 ;;
        -*) echo "nfabric test: unknown option \"$1\"" >&2; nf_test_usage >&2; return 2 ;;
        *) [ -n "${known[$1]:-}" ] ||
               { echo "nfabric test: unknown suite \"$1\" (have: $(nf_suite_table | cut -d' ' -f1 | tr '\n' ' '))" >&2; return 2; }
           suites+=("$1") ;;
        esac
        shift
    done
    [ ${#suites[@]} -gt 0 ] || mapfile -t suites < <(nf_suite_table | cut -d' ' -f1)
    # The machine before the run, for the host check at its end.
    local before=$NF_RUN_TMP/host-before
    nf_host_snapshot "$before"

    # The set-up, if a suite needs it; meson's view of the host build.
    for s in "${suites[@]}"; do [ "${needs[$s]}" = 1 ] && need_setup=1; done
    if [ "$need_setup" = 1 ]; then
        nf_setup_main --quiet
    else
        nf_host_configure
    fi
    # The suites' logs: NF_TEST_LOGDIR, or build/test-logs.
    local logdir=${NF_TEST_LOGDIR:-$NF_BUILD/test-logs}
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
    local passed=0 failed=0 p f ran
    for s in "${suites[@]}"; do
        if ran=$(grep "^$s " "$NF_TEST_COUNTS"); then
            read -r _ p f <<<"$ran"
            passed=$((passed + p))
            failed=$((failed + f))
        else
            echo "not ok - suite $s: meson test did not run it"
            failed=$((failed + 1))
        fi
    done
    # The host check: the machine as the run found it (docs/host.md).
    nf_test_run_suite host "nf_host_check $before" \
        "the machine as before the run: device nodes, /dev/shm, /tmp, processes, mounts, network namespaces, apt sources" || true
    read -r _ p f < <(grep "^host " "$NF_TEST_COUNTS")
    passed=$((passed + p))
    failed=$((failed + f))
    if [ -s "$logdir/boot-hangs.log" ]; then
        echo "boot hangs (a guest printed nothing, killed and started again):"
        sed 's/^/  /' "$logdir/boot-hangs.log"
    fi
    echo "$passed passed, $failed failed"
    [ "$failed" -eq 0 ] || return 1
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
