# shellcheck shell=bash
# SPDX-License-Identifier: GPL-2.0-or-later
# Fuzzing (docs/reliability.md): the libFuzzer harnesses of the controller
# model (tests/fuzz/fuzz_ctrl.c), of two heads of a shared device
# (tests/fuzz/fuzz_shared.c) and of heads over a corrupted state file
# (tests/fuzz/fuzz_state.c), clang-14 with ASan + UBSan, built here
# directly, not by meson; and the random register/memory sequences against
# the real device under qtest (tests/qtest/nfabric-fuzz-test.c), built in
# QEMU's tree.  Here only those builds: the runs, the replays of the kept
# inputs, the verdicts and the figures are scripts/nfmachine/fuzz.py's.
#
#   scripts/nfabric bench fuzz [--seconds N] [--jobs N] [--sequences N]
#   scripts/nfabric test fuzz           (short version, TAP)

NF_FUZZ_BUILD=$NF_BUILD/fuzz
NF_FUZZ_TARGETS=(ctrl shared state)      # also fuzz.py's TARGETS
NF_FUZZ_CC=clang-14
# NFABRIC_SHARED_LOCK_MS=20: a lock word a corrupted state file shows as
# held costs an access 20 ms here, not the device's 1 s.
NF_FUZZ_CFLAGS=(-std=c11 -g -O2 -Wall -Wextra -fno-sanitize-recover=undefined
                -fno-omit-frame-pointer -DNFABRIC_SHARED_LOCK_MS=20
                -I"$NF_ROOT/include" -I"$NF_ROOT/tests")

# The model's pure-C sources (everything the device builds but its QEMU glue).
nf_fuzz_model_srcs() {
    find "$NF_ROOT/hw/mem/nfabric" -maxdepth 1 -name 'nfabric_*.c' | sort
}

# nf_fuzz_stale OUT SRC...: true if OUT is missing or older than a source
# or any project header (the model's private ones beside it too).
nf_fuzz_stale() {
    local out=$1
    shift
    [ -x "$out" ] || return 0
    [ -n "$(find "$@" "$NF_ROOT/include/hw/mem" "$NF_ROOT"/hw/mem/nfabric/*.h "$NF_ROOT/tests/tap.h" \
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

# nf_fuzz_qtest: build the device's fuzz qtest in QEMU's tree; prints its
# path, or - if it did not build (the log's tail on stderr: the suite's
# check of the device sequences then fails).
nf_fuzz_qtest() {
    if ninja -C "$NF_QEMU_BUILD" tests/qtest/nfabric-fuzz-test >"$NF_BUILD/qtest-ninja.log" 2>&1; then
        echo "$NF_QEMU_BUILD/tests/qtest/nfabric-fuzz-test"
    else
        tail -20 "$NF_BUILD/qtest-ninja.log" >&2
        echo -
    fi
}

# The options are checked (help, a refusal: status 2) before anything is
# built; --minimise needs only the harnesses.
nf_bench_fuzz() {
    local what qtest=- rc=0
    what=$(nf_machine fuzz-bench check "$@") || return $?
    [ "$what" = help ] || nf_fuzz_build
    if [ "$what" = run ]; then
        [ -x "$NF_QEMU_BIN" ] || nf_setup_main --quiet
        qtest=$(nf_fuzz_qtest)
    fi
    nf_machine fuzz-bench run "$qtest" "$@" || rc=$?
    return "$rc"
}

# The `fuzz` suite: the short version, as TAP (8 checks, about 2.5
# minutes; NF_FUZZ_SUITE_SECONDS, NF_FUZZ_SUITE_SHARED_SECONDS,
# NF_FUZZ_SUITE_STATE_SECONDS, NF_FUZZ_SUITE_SEQUENCES).
nf_suite_fuzz() {
    local qtest rc=0
    nf_fuzz_build
    qtest=$(nf_fuzz_qtest)
    nf_machine fuzz-suite "$qtest" || rc=$?
    return "$rc"
}
