# shellcheck shell=bash
# SPDX-License-Identifier: GPL-2.0-or-later
# Fuzzing (docs/reliability.md): the libFuzzer harnesses of the controller
# model (tests/fuzz/fuzz_ctrl.c), of two heads of a shared device
# (tests/fuzz/fuzz_shared.c) and of heads over a corrupted state file
# (tests/fuzz/fuzz_state.c), clang-14 with ASan + UBSan, built here
# directly, not by meson; and the random register/memory sequences against
# the real device under qtest (tests/qtest/nfabric-fuzz-test.c).
#
# Inputs kept in the tree, each replayed by every run of suite `fuzz`:
#   tests/fuzz/corpus/TARGET/   seeds and minimised corpora (also where
#                               libFuzzer starts from)
#   tests/fuzz/regress/TARGET/  inputs that once failed (never minimised
#                               away; replayed whole, any length)
#
#   scripts/nfabric bench fuzz [--seconds N] [--jobs N] [--sequences N]
#   scripts/nfabric test fuzz           (short version, TAP)

NF_FUZZ_BUILD=$NF_BUILD/fuzz
NF_FUZZ_CORPUS=$NF_ROOT/tests/fuzz/corpus/ctrl
NF_FUZZ_TARGETS=(ctrl shared state)
NF_FUZZ_CC=clang-14
# NFABRIC_SHARED_LOCK_MS=20: a lock word a corrupted state file shows as
# held costs an access 20 ms here, not the device's 1 s.
NF_FUZZ_CFLAGS=(-std=c11 -g -O2 -Wall -Wextra -fno-sanitize-recover=undefined
                -fno-omit-frame-pointer -DNFABRIC_SHARED_LOCK_MS=20
                -I"$NF_ROOT/include" -I"$NF_ROOT/tests")
# libFuzzer options of every run: inputs up to 1 KiB (200 operations).
NF_FUZZ_OPTS=(-max_len=1024 -timeout=10 -rss_limit_mb=2048 -print_final_stats=1)

# The model's pure-C sources (everything the device builds but its QEMU glue).
nf_fuzz_model_srcs() {
    find "$NF_ROOT/hw/mem/nfabric" -maxdepth 1 -name 'nfabric_*.c' | sort
}

# nf_fuzz_stale OUT SRC...: true if OUT is missing or older than a source
# or any project header.
nf_fuzz_stale() {
    local out=$1
    shift
    [ -x "$out" ] || return 0
    [ -n "$(find "$@" "$NF_ROOT/include/hw/mem" "$NF_ROOT/tests/tap.h" \
             -newer "$out" -print -quit 2>/dev/null)" ]
}

# Build build/fuzz/fuzz-TARGET for every tests/fuzz/fuzz_TARGET.c
# (libFuzzer) and build/fuzz/test-ctrl-asan (the controller unit tests
# under ASan + UBSan).
nf_fuzz_build() {
    nf_need clang-14 libclang-rt-14-dev
    mkdir -p "$NF_FUZZ_BUILD/obj"
    local srcs f o t objs=() built=0 log=$NF_FUZZ_BUILD/build.log
    mapfile -t srcs < <(nf_fuzz_model_srcs)
    : > "$log"
    for t in "${NF_FUZZ_TARGETS[@]}"; do
        nf_fuzz_stale "$NF_FUZZ_BUILD/fuzz-$t" "${srcs[@]}" "$NF_ROOT/tests/fuzz" || continue
        if [ "$built" = 0 ]; then
            # Coverage instrumentation on the model only: the harnesses'
            # oracles would otherwise dominate the feature set and the run
            # time.
            for f in "${srcs[@]}"; do
                o=$NF_FUZZ_BUILD/obj/$(basename "${f%.c}").o
                "$NF_FUZZ_CC" "${NF_FUZZ_CFLAGS[@]}" \
                    -fsanitize=fuzzer-no-link,address,undefined -c "$f" -o "$o" >>"$log" 2>&1 ||
                    { cat "$log" >&2; nf_die "fuzz build failed: $f"; }
                objs+=("$o")
            done
            built=1
        fi
        nf_log "building $NF_FUZZ_BUILD/fuzz-$t ($NF_FUZZ_CC, libFuzzer + ASan + UBSan)"
        "$NF_FUZZ_CC" "${NF_FUZZ_CFLAGS[@]}" -fsanitize=address,undefined \
            -c "$NF_ROOT/tests/fuzz/fuzz_$t.c" -o "$NF_FUZZ_BUILD/obj/fuzz_$t.o" >>"$log" 2>&1 ||
            { cat "$log" >&2; nf_die "fuzz build failed: tests/fuzz/fuzz_$t.c"; }
        "$NF_FUZZ_CC" -fsanitize=fuzzer,address,undefined "$NF_FUZZ_BUILD/obj/fuzz_$t.o" \
            "${objs[@]}" -lpthread -o "$NF_FUZZ_BUILD/fuzz-$t.tmp" >>"$log" 2>&1 ||
            { cat "$log" >&2; nf_die "fuzz link failed: fuzz-$t"; }
        mv "$NF_FUZZ_BUILD/fuzz-$t.tmp" "$NF_FUZZ_BUILD/fuzz-$t"
    done
    if nf_fuzz_stale "$NF_FUZZ_BUILD/test-ctrl-asan" "${srcs[@]}" "$NF_ROOT/tests/unit/test_ctrl.c"; then
        nf_log "building $NF_FUZZ_BUILD/test-ctrl-asan"
        "$NF_FUZZ_CC" "${NF_FUZZ_CFLAGS[@]}" -fsanitize=address,undefined \
            "$NF_ROOT/tests/unit/test_ctrl.c" "${srcs[@]}" -lpthread \
            -o "$NF_FUZZ_BUILD/test-ctrl-asan" >>"$log" 2>&1 ||
            { cat "$log" >&2; nf_die "fuzz build failed: test-ctrl-asan"; }
    fi
}

# Findings so far: crash/leak/timeout/oom inputs libFuzzer saved.
nf_fuzz_findings() {
    mkdir -p "$NF_FUZZ_BUILD/artifacts"
    find "$NF_FUZZ_BUILD/artifacts" -maxdepth 1 -type f \
        \( -name 'crash-*' -o -name 'leak-*' -o -name 'timeout-*' -o -name 'oom-*' \) | wc -l
}

# The working corpus of a target: build/fuzz/corpus (ctrl, as before) or
# build/fuzz/corpus-TARGET, kept between runs.
nf_fuzz_workdir() {
    if [ "$1" = ctrl ]; then echo "$NF_FUZZ_BUILD/corpus"; else echo "$NF_FUZZ_BUILD/corpus-$1"; fi
}

# A libFuzzer log that reports a finding (the harness's abort, a sanitizer).
nf_fuzz_log_failed() {
    grep -q 'invariant violated\|ERROR: \(AddressSanitizer\|libFuzzer\|LeakSanitizer\)\|runtime error' "$1"
}

# nf_fuzz_run TARGET SECONDS JOBS KEY: libFuzzer on build/fuzz/fuzz-TARGET
# for SECONDS on JOBS processes over a shared working corpus, seeded from
# tests/fuzz/corpus/TARGET and tests/fuzz/regress/TARGET.  Prints
# KEY_execs=, KEY_exec_per_s= and KEY_corpus=; non-zero on a finding.
nf_fuzz_run() {
    local t=$1 secs=$2 jobs=$3 key=$4 j pids=() rc=0 execs=0 n d
    local work art=$NF_FUZZ_BUILD/artifacts
    work=$(nf_fuzz_workdir "$t")
    mkdir -p "$work" "$art"
    for d in "$NF_ROOT/tests/fuzz/corpus/$t" "$NF_ROOT/tests/fuzz/regress/$t"; do
        [ -d "$d" ] && find "$d" -maxdepth 1 -type f ! -name 'README*' -exec cp -n {} "$work"/ \;
    done
    for ((j = 0; j < jobs; j++)); do
        ASAN_OPTIONS=detect_leaks=1:abort_on_error=0 \
        "$NF_FUZZ_BUILD/fuzz-$t" "${NF_FUZZ_OPTS[@]}" -max_total_time="$secs" \
            -seed=$((RANDOM * 32768 + RANDOM + j)) -artifact_prefix="$art/" \
            "$work" >"$NF_FUZZ_BUILD/$t-$j.log" 2>&1 &
        pids+=($!)
    done
    for j in "${!pids[@]}"; do
        wait "${pids[$j]}" || rc=1
        n=$(sed -n 's/^stat::number_of_executed_units: *//p' "$NF_FUZZ_BUILD/$t-$j.log" | tail -n 1)
        execs=$((execs + ${n:-0}))
        if nf_fuzz_log_failed "$NF_FUZZ_BUILD/$t-$j.log"; then
            grep -m 3 'invariant violated\|ERROR:\|runtime error\|Test unit written' \
                "$NF_FUZZ_BUILD/$t-$j.log" | sed 's/^/# /' >&2 || true
            rc=1
        fi
    done
    echo "${key}_execs=$execs"
    echo "${key}_exec_per_s=$((execs / (secs > 0 ? secs : 1)))"
    echo "${key}_corpus=$(find "$work" -type f | wc -l)"
    return $rc
}

# nf_fuzz_engine SECONDS JOBS: the controller model's harness (engine_*=).
nf_fuzz_engine() {
    nf_fuzz_run ctrl "$1" "$2" engine
}

# nf_fuzz_shared SECONDS: the shared-state harness (two heads, one state
# file), shared_*=.
nf_fuzz_shared() {
    nf_fuzz_run shared "$1" 1 shared
}

# nf_fuzz_state SECONDS: heads over corrupted state files, state_*=.
nf_fuzz_state() {
    nf_fuzz_run state "$1" 1 state
}

# nf_fuzz_replay TARGET: every kept input of TARGET once: the corpus (as
# libFuzzer loads it, up to -max_len) and each regression input whole.
# Prints the number of inputs; non-zero if one fails (log:
# build/fuzz/replay-TARGET.log).
nf_fuzz_replay() {
    local t=$1 n=0 rc=0 log=$NF_FUZZ_BUILD/replay-$1.log files=()
    local corpus=$NF_ROOT/tests/fuzz/corpus/$t regress=$NF_ROOT/tests/fuzz/regress/$t
    : > "$log"
    if [ -d "$corpus" ]; then
        n=$(find "$corpus" -maxdepth 1 -type f | wc -l)
        "$NF_FUZZ_BUILD/fuzz-$t" -runs=0 "${NF_FUZZ_OPTS[@]}" "$corpus" >>"$log" 2>&1 || rc=1
    fi
    if [ -d "$regress" ]; then
        mapfile -t files < <(find "$regress" -maxdepth 1 -type f ! -name 'README*' | sort)
        if [ ${#files[@]} -gt 0 ]; then
            n=$((n + ${#files[@]}))
            "$NF_FUZZ_BUILD/fuzz-$t" "${files[@]}" >>"$log" 2>&1 || rc=1
        fi
    fi
    nf_fuzz_log_failed "$log" && rc=1
    echo "$n"
    [ "$n" -gt 0 ] || rc=1
    return $rc
}

# nf_fuzz_device N: N random sequences against the device; prints
# device_sequences= and device_seconds=; non-zero on a failure.
nf_fuzz_device() {
    local n=$1 rc=0 log=$NF_FUZZ_BUILD/device.log t0 t1
    ninja -C "$NF_QEMU_BUILD" tests/qtest/nfabric-fuzz-test >"$NF_BUILD/qtest-ninja.log" 2>&1 || {
        tail -20 "$NF_BUILD/qtest-ninja.log" >&2
        echo "device_sequences=0"
        return 1
    }
    t0=$(date +%s.%N)
    (cd "$NF_QEMU_BUILD" && NFABRIC_FUZZ_SEQUENCES=$n QTEST_QEMU_BINARY=./qemu-system-x86_64 \
        timeout $((600 + n / 20)) ./tests/qtest/nfabric-fuzz-test --tap -k) >"$log" 2>&1 || rc=1
    t1=$(date +%s.%N)
    grep -q '^not ok' "$log" && rc=1
    if [ "$rc" != 0 ]; then
        grep -m 5 'not ok\|ERROR\|assert\|Bail' "$log" | sed 's/^/# /' >&2 || true
    fi
    echo "device_sequences=$(sed -n 's/^# device_sequences=//p' "$log" | awk '{s += $1} END {print s + 0}')"
    echo "device_seconds=$(awk -v a="$t0" -v b="$t1" 'BEGIN{printf "%.1f", b-a}')"
    return $rc
}

# Rebuild tests/fuzz/corpus/ctrl from the working corpus: -merge=1 (edge
# coverage) to a minimal set (which favours small inputs), then a greedy
# set cover over each input's own edges (one merge process per input) of
# that set and the 200 largest inputs, down to a few dozen inputs.
nf_fuzz_minimise() {
    local work=$NF_FUZZ_BUILD/corpus tmp=$NF_FUZZ_BUILD/minimise
    rm -rf "$tmp"
    mkdir -p "$tmp/merged" "$work"
    cp -n "$NF_FUZZ_CORPUS"/* "$work"/ 2>/dev/null || true
    "$NF_FUZZ_BUILD/fuzz-ctrl" -merge=1 -use_counters=0 -max_len=1024 \
        "$tmp/merged" "$work" >"$tmp/merge.log" 2>&1 || nf_die "merge failed ($tmp/merge.log)"
    python3 - "$NF_FUZZ_BUILD/fuzz-ctrl" "$tmp" "$NF_FUZZ_CORPUS" "$work" <<'PY'
import glob, os, shutil, subprocess, sys
fuzzer, tmp, out, work = sys.argv[1:5]
cov = {}
large = sorted(glob.glob(work + "/*"), key=os.path.getsize)[-200:]
for f in sorted(glob.glob(tmp + "/merged/*")) + large:
    d = tmp + "/one"
    shutil.rmtree(d, ignore_errors=True)
    os.makedirs(d + "/in"); os.makedirs(d + "/out")
    shutil.copy(f, d + "/in/x")
    subprocess.run([fuzzer, "-merge=1", "-use_counters=0", "-max_len=1024",
                    "-merge_control_file=" + d + "/cf", d + "/out", d + "/in"],
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    edges = set()
    for line in open(d + "/cf"):
        p = line.split()
        if p and p[0] == "COV":
            edges |= set(map(int, p[2:]))
    cov[f] = edges
want = set().union(*cov.values()) if cov else set()
have, chosen = set(), []
while have != want:
    best = max(cov, key=lambda k: (len(cov[k] - have), -os.path.getsize(k)))
    chosen.append(best)
    have |= cov[best]
shutil.rmtree(out, ignore_errors=True)
os.makedirs(out)
for f in chosen:
    shutil.copy(f, out)
print("corpus_files=%d corpus_edges=%d" % (len(chosen), len(want)))
PY
}

nf_bench_fuzz_usage() {
    cat <<'USAGE'
usage: scripts/nfabric bench fuzz [--seconds N] [--jobs N] [--sequences N]
       scripts/nfabric bench fuzz --minimise

Runs the libFuzzer harness of the controller model for N seconds (default
60) on N processes (default 1), the shared-state and the corrupted-state
harnesses for N seconds each, then N random register/memory sequences
against the device under qtest (default 2000).  Prints engine_execs=,
shared_execs=, state_execs=, device_sequences=, findings= (and rates).
Saved findings: build/fuzz/artifacts/; reproduce one with
build/fuzz/fuzz-TARGET FILE (ctrl, shared, state); keep it as a
regression case in tests/fuzz/regress/TARGET/.
--minimise rebuilds tests/fuzz/corpus/ctrl from the working corpus
(build/fuzz/corpus) of earlier runs.
USAGE
}

nf_bench_fuzz() {
    local secs=60 jobs=1 seqs=2000 rc=0 findings out
    while [ $# -gt 0 ]; do
        case "$1" in
        --seconds) secs=${2:?}; shift ;;
        --jobs) jobs=${2:?}; shift ;;
        --sequences) seqs=${2:?}; shift ;;
        --minimise|--minimize) nf_fuzz_build; nf_fuzz_minimise; return ;;
        -h|--help) nf_bench_fuzz_usage; return 0 ;;
        *) echo "bench fuzz: unknown option \"$1\"" >&2; nf_bench_fuzz_usage >&2; return 2 ;;
        esac
        shift
    done
    nf_fuzz_build
    [ -x "$NF_QEMU_BIN" ] || nf_setup_main --quiet
    local before
    before=$(nf_fuzz_findings)
    nf_fuzz_engine "$secs" "$jobs" || rc=1
    nf_fuzz_shared "$secs" || rc=1
    nf_fuzz_state "$secs" || rc=1
    out=$(nf_fuzz_device "$seqs") || rc=1
    echo "$out"
    findings=$(($(nf_fuzz_findings) - before))
    # A failure that saved no input (a device sequence) still counts.
    [ "$rc" = 0 ] || [ "$findings" -gt 0 ] || findings=1
    echo "findings=$findings"
    return $rc
}

# The `fuzz` suite: the short version, as TAP.  About 2.5 minutes: the
# shared-state harness gets the longest run (NF_FUZZ_SUITE_SHARED_SECONDS,
# default 60), since its faults need two heads, a valid window and the
# right interleaving at once; it starts from the seeds in
# tests/fuzz/corpus/shared and from the working corpus of earlier runs.
nf_suite_fuzz() {
    local rc=0 out n t k=1 log=$NF_FUZZ_BUILD
    local secs=${NF_FUZZ_SUITE_SECONDS:-20}
    local shared_secs=${NF_FUZZ_SUITE_SHARED_SECONDS:-60}
    local state_secs=${NF_FUZZ_SUITE_STATE_SECONDS:-20}
    nf_fuzz_build

    if "$NF_FUZZ_BUILD/test-ctrl-asan" >"$log/test-ctrl-asan.log" 2>&1; then
        n=$(grep -c '^ok ' "$log/test-ctrl-asan.log" || true)
        echo "ok $k - controller unit tests under ASan + UBSan ($n checks)"
    else
        echo "not ok $k - controller unit tests under ASan + UBSan"
        grep -m 10 '^not ok\|ERROR\|runtime error' "$log/test-ctrl-asan.log" | sed 's/^/#   /' || true
        rc=1
    fi

    # Every kept input once (regression tests): corpora and past findings.
    for t in "${NF_FUZZ_TARGETS[@]}"; do
        k=$((k + 1))
        if n=$(nf_fuzz_replay "$t"); then
            echo "ok $k - replay of fuzz-$t: $n inputs of tests/fuzz/{corpus,regress}/$t, no finding"
        else
            echo "not ok $k - replay of fuzz-$t ($n inputs; log: build/fuzz/replay-$t.log)"
            grep -m 5 'invariant\|ERROR\|runtime error\|Running:' "$log/replay-$t.log" | sed 's/^/#   /' || true
            rc=1
        fi
    done

    k=$((k + 1))
    if out=$(nf_fuzz_engine "$secs" 1); then
        echo "ok $k - libFuzzer, controller model, $secs s: $(echo "$out" | tr '\n' ' ')findings=0"
    else
        echo "not ok $k - libFuzzer, controller model: $(echo "$out" | tr '\n' ' ')(inputs: build/fuzz/artifacts/)"
        rc=1
    fi

    k=$((k + 1))
    if out=$(nf_fuzz_shared "$shared_secs"); then
        echo "ok $k - libFuzzer, shared state (two heads, robust locks), $shared_secs s: $(echo "$out" | tr '\n' ' ')findings=0"
    else
        echo "not ok $k - libFuzzer, shared state: $(echo "$out" | tr '\n' ' ')(inputs: build/fuzz/artifacts/)"
        rc=1
    fi

    k=$((k + 1))
    if out=$(nf_fuzz_state "$state_secs"); then
        echo "ok $k - libFuzzer, corrupted state files, $state_secs s: $(echo "$out" | tr '\n' ' ')findings=0"
    else
        echo "not ok $k - libFuzzer, corrupted state files: $(echo "$out" | tr '\n' ' ')(inputs: build/fuzz/artifacts/)"
        rc=1
    fi

    k=$((k + 1))
    if out=$(nf_fuzz_device "${NF_FUZZ_SUITE_SEQUENCES:-300}"); then
        echo "ok $k - device sequences under qtest: $(echo "$out" | tr '\n' ' ')findings=0"
    else
        echo "not ok $k - device sequences: $(echo "$out" | tr '\n' ' ')(log: build/fuzz/device.log)"
        rc=1
    fi
    return $rc
}
