# SPDX-License-Identifier: GPL-2.0-or-later
"""scripts/nfmachine/fuzz.py (suite `fuzz`, `bench fuzz`) without clang or
QEMU: libFuzzer's logs read, the verdicts of runs, replays and device
sequences judged from stand-in fuzzers and a stand-in qtest (shell
scripts), the suite's TAP lines, bench fuzz's key=value lines and its
refusals of bad options; a fuzzer that hangs killed at its bound."""

import contextlib
import io
import os
import sys
import tempfile
import time

from nfmachine import fuzz
from nfmachine.tap import done, ok
import testkit

# A libFuzzer that runs, saves an input into its working corpus and
# prints its final statistics.
GOOD = r"""
for a in "$@"; do case $a in -max_total_time=*) fuzzing=1 ;; -*) ;; *) dir=$a ;; esac; done
[ -n "$fuzzing" ] && echo new > "$dir/new-input"
echo "INFO: Seed: 1"
echo "#2 INITED cov: 10 ft: 10 corp: 1/1b exec/s: 0 rss: 30Mb"
echo "stat::number_of_executed_units: 5"
echo "stat::number_of_executed_units: 1000"
echo "stat::peak_rss_mb: 40"
"""
# One that finds a crash: the sanitizer's report, the input saved.
CRASH = r"""
for a in "$@"; do case $a in -artifact_prefix=*) art=${a#-artifact_prefix=} ;; esac; done
echo "==7==ERROR: AddressSanitizer: heap-buffer-overflow on address 0x1"
[ -n "$art" ] && echo x > "${art}crash-da39a3ee"
echo "artifact_prefix='$art'; Test unit written to ${art}crash-da39a3ee"
echo "stat::number_of_executed_units: 42"
exit 1
"""
HANG = "sleep 60\n"
# libFuzzer's -merge=1: every input of the later directories into the
# first, a COV line (its edges: the numbers in it) into the control file.
MERGE = r"""
for a in "$@"; do case $a in -merge_control_file=*) cf=${a#*=} ;; -*) ;; *) dirs="$dirs $a" ;; esac; done
set -- $dirs
out=$1
shift
for d in "$@"; do
    for f in "$d"/*; do cp "$f" "$out/"; echo "COV 0 $(cat "$f")" >> "$cf"; done
done
"""
QTEST_GOOD = r"""
echo "# random sequences"
echo "# device_sequences=$((NFABRIC_FUZZ_SEQUENCES / 2))"
echo "# device_sequences=$((NFABRIC_FUZZ_SEQUENCES / 2))"
echo "ok 1 /x86_64/nfabric-fuzz/sequences"
echo "ok 2 /x86_64/nfabric-fuzz/block-sweep"
"""
QTEST_BAD = r"""
echo "# device_sequences=12"
echo "not ok 1 /x86_64/nfabric-fuzz/sequences"
echo "ERROR:../tests/qtest/nfabric-fuzz-test.c:300: assertion failed"
exit 1
"""
UNIT_GOOD = "echo 'ok 1 - a'; echo 'ok 2 - b'; echo '1..2'\n"
UNIT_BAD = "echo 'ok 1 - a'; echo 'not ok 2 - b'; echo '1..2'; exit 1\n"


script = testkit.script


def tree(d):
    """A checkout with kept inputs: corpus/T 3 files each, regress/shared
    2 inputs and a README."""
    root = os.path.join(d, "root")
    for t in fuzz.TARGETS:
        for i in range(3):
            p = os.path.join(root, "tests", "fuzz", "corpus", t, f"in{i}")
            os.makedirs(os.path.dirname(p), exist_ok=True)
            with open(p, "w", encoding="utf-8") as f:
                f.write(str(i))
    reg = os.path.join(root, "tests", "fuzz", "regress", "shared")
    os.makedirs(reg)
    for name in ("issue-21-a", "issue-21-b", "README"):
        with open(os.path.join(reg, name), "w", encoding="utf-8") as f:
            f.write(name)
    return root


def make(d, fuzzers=GOOD, unit=UNIT_GOOD, qtest=QTEST_GOOD, slack_s=30.0):
    """A Fuzz over stand-ins in d (fuzzers: one body, or one per target)."""
    build = os.path.join(d, "build")
    for t in fuzz.TARGETS:
        body = fuzzers if isinstance(fuzzers, str) else fuzzers[t]
        script(os.path.join(build, "fuzz", f"fuzz-{t}"), body)
    script(os.path.join(build, "fuzz", "test-ctrl-asan"), unit)
    q = script(os.path.join(d, "qemu-build", "tests", "qtest", "nfabric-fuzz-test"), qtest) \
        if qtest else None
    return fuzz.Fuzz(tree(d) if not os.path.isdir(os.path.join(d, "root")) else
                     os.path.join(d, "root"), build, q, os.path.join(d, "qemu-build"),
                     slack_s=slack_s)


def quiet(f, *args):
    """f(*args) with stdout and stderr captured: (result, out, err)."""
    with contextlib.redirect_stdout(io.StringIO()) as out, \
            contextlib.redirect_stderr(io.StringIO()) as err:
        r = f(*args)
    return r, out.getvalue(), err.getvalue()


def main():
    # libFuzzer's output read.
    log = "INFO: x\nstat::number_of_executed_units: 12\nstat::number_of_executed_units: 3400\n"
    ok(fuzz.executed_units(log) == 3400 and fuzz.executed_units("INFO: crashed\n") == 0,
       "executed units: the last stat line, 0 without one")
    ok(fuzz.failed("==1==ERROR: AddressSanitizer: SEGV\n")
       and fuzz.failed("x.c:3:5: runtime error: signed integer overflow\n")
       and fuzz.failed("fuzz_shared: invariant violated: table\n")
       and fuzz.failed("==1==ERROR: libFuzzer: deadly signal\n"),
       "a sanitizer's, UBSan's, an invariant's and libFuzzer's report are findings")
    ok(not fuzz.failed(log + "INFO: -max_total_time reached\nDone 3400 runs in 20 second(s)\n")
       and not fuzz.failed("ERROR: no such file\n"),
       "a clean log (and another ERROR) is no finding")
    ok(fuzz.matching("a ERROR 1\nb\nc ERROR 2\nd ERROR 3\n", "ERROR", 2) == ["a ERROR 1", "c ERROR 2"],
       "matching keeps the first lines only, as grep -m")

    with tempfile.TemporaryDirectory() as d:
        fz = make(d)
        (lines, good), _, err = quiet(fz.run, "shared", 10, 2, "shared")
        ok(good and lines == ["shared_execs=2000", "shared_exec_per_s=200", "shared_corpus=6"],
           "a clean run on 2 processes: executions summed, rate, working corpus "
           "(3 seeds, 2 regressions, the new input; no README)", (lines, err))
        seeded = sorted(os.listdir(fz.workdir("shared")))
        ok("README" not in seeded and "issue-21-a" in seeded
           and os.path.isdir(os.path.join(fz.dir, "corpus-shared"))
           and fz.workdir("ctrl") == os.path.join(fz.dir, "corpus"),
           "working corpora: build/fuzz/corpus (ctrl), corpus-TARGET, seeded", seeded)
        args = fuzz.read(os.path.join(fz.dir, "shared-1.log"))
        ok("stat::number_of_executed_units: 1000" in args, "each process has its log", args)
        before = fz.findings()
        (n, good), _, _ = quiet(fz.replay, "shared")
        ok(good and n == 5, "replay: 3 corpus inputs and 2 regression inputs, no finding", n)
        ok(before == 0, "no findings yet", before)

    with tempfile.TemporaryDirectory() as d:
        fz = make(d, fuzzers=CRASH)
        (lines, good), _, err = quiet(fz.run, "ctrl", 20, 1, "engine")
        ok(not good and lines[0] == "engine_execs=42" and "# ==7==ERROR: AddressSanitizer" in err
           and "Test unit written" in err and fz.findings() == 1,
           "a crash: the run fails, the report on stderr, the input saved and counted",
           (lines, err))
        (n, good), _, _ = quiet(fz.replay, "ctrl")
        ok(not good and n == 3, "a replay that finds something fails", n)
        (n, good), _, _ = quiet(fz.replay, "nothing")
        ok(not good and n == 0, "a replay with no inputs fails", n)

    with tempfile.TemporaryDirectory() as d:
        fz = make(d, fuzzers=HANG, slack_s=0.5)
        t0 = time.monotonic()
        (lines, good), _, err = quiet(fz.run, "state", 1, 2, "state")
        took = time.monotonic() - t0
        ok(not good and took < 20 and "no end in its time, killed" in err
           and "killed" in fuzz.read(os.path.join(fz.dir, "state-0.log")),
           f"a fuzzer that hangs is killed at its bound ({took:.1f} s), said in its log", err)

    with tempfile.TemporaryDirectory() as d:
        fz = make(d)
        (lines, good), _, _ = quiet(fz.device, 300)
        ok(good and lines[0] == "device_sequences=300" and lines[1].startswith("device_seconds="),
           "device sequences: the qtest's counts summed, seconds", lines)
        fz = make(d, qtest=QTEST_BAD)
        (lines, good), _, err = quiet(fz.device, 300)
        ok(not good and lines[0] == "device_sequences=12" and "# not ok 1 /x86_64" in err
           and "# ERROR:" in err, "a failed sequence fails, its lines on stderr", (lines, err))
        fz = make(d, qtest=None)
        (lines, good), _, err = quiet(fz.device, 300)
        ok(not good and lines == ["device_sequences=0"] and "did not build" in err,
           "a qtest that did not build: device_sequences=0, a failure", (lines, err))

    # The suite's TAP lines.
    with tempfile.TemporaryDirectory() as d:
        rc, out, _ = quiet(fuzz.suite, make(d), 2, 3, 4, 300)
        got = out.splitlines()
        want_start = [
            "ok 1 - controller unit tests under ASan + UBSan (2 checks)",
            "ok 2 - replay of fuzz-ctrl: 3 inputs of tests/fuzz/{corpus,regress}/ctrl, no finding",
            "ok 3 - replay of fuzz-shared: 5 inputs of tests/fuzz/{corpus,regress}/shared, no finding",
            "ok 4 - replay of fuzz-state: 3 inputs of tests/fuzz/{corpus,regress}/state, no finding",
            "ok 5 - libFuzzer, controller model, 2 s: engine_execs=1000 engine_exec_per_s=500 "
            "engine_corpus=4 findings=0",
            "ok 6 - libFuzzer, shared state (two heads, robust locks), 3 s: shared_execs=1000 "
            "shared_exec_per_s=333 shared_corpus=6 findings=0",
            "ok 7 - libFuzzer, corrupted state files, 4 s: state_execs=1000 state_exec_per_s=250 "
            "state_corpus=4 findings=0"]
        ok(rc == 0 and got[:7] == want_start and len(got) == 8
           and got[7].startswith("ok 8 - device sequences under qtest: device_sequences=300 device_seconds=")
           and got[7].endswith(" findings=0"),
           "suite: 8 checks passing, the lines as before", out)

    with tempfile.TemporaryDirectory() as d:
        fz = make(d, fuzzers={"ctrl": GOOD, "shared": CRASH, "state": GOOD}, unit=UNIT_BAD,
                  qtest=QTEST_BAD)
        rc, out, _ = quiet(fuzz.suite, fz, 2, 3, 4, 300)
        tap = [l for l in out.splitlines() if not l.startswith("#")]
        ok(rc == 1 and len(tap) == 8
           and tap[0] == "not ok 1 - controller unit tests under ASan + UBSan"
           and "#   not ok 2 - b" in out
           and tap[2] == "not ok 3 - replay of fuzz-shared (5 inputs; log: build/fuzz/replay-shared.log)"
           and "#   ==7==ERROR: AddressSanitizer: heap-buffer-overflow on address 0x1" in out
           and tap[4].startswith("ok 5 -")
           and tap[5] == "not ok 6 - libFuzzer, shared state: shared_execs=42 shared_exec_per_s=14 "
                         "shared_corpus=5 (inputs: build/fuzz/artifacts/)"
           and tap[7].startswith("not ok 8 - device sequences: device_sequences=12 device_seconds=")
           and tap[7].endswith(" (log: build/fuzz/device.log)"),
           "suite: failures as not ok lines, with their comments; still 8 checks", out)

    with tempfile.TemporaryDirectory() as d:
        fz = make(d)
        os.unlink(fz.binary("state"))
        (lines, good), _, err = quiet(fz.run, "state", 1, 1, "state")
        ok(not good and lines[0] == "state_execs=0" and "fuzz-state: cannot start" in err,
           "a fuzzer that is not there fails its check, it does not end the suite", (lines, err))

    env = dict(os.environ)
    try:
        os.environ["NF_FUZZ_SUITE_SECONDS"] = "0"
        rc, _, err = quiet(fuzz.main, "fuzz-suite", ["-"])
    finally:
        os.environ.clear()
        os.environ.update(env)
    ok(rc == 2 and err == 'nfabric test fuzz: NF_FUZZ_SUITE_SECONDS must be a whole number '
                          'of at least 1, not "0"\n',
       "a knob of 0 (libFuzzer: no time limit) is refused", err)

    # bench fuzz: options, then key=value lines.
    ok(fuzz.parse([]) == ("run", 60, 1, 2000)
       and fuzz.parse(["--seconds", "5", "--jobs", "2", "--sequences", "10"]) == ("run", 5, 2, 10)
       and fuzz.parse(["--seconds", "5", "--help"])[0] == "help"
       and fuzz.parse(["--minimize"])[0] == "minimise"
       and fuzz.parse(["--seconds", "x", "--minimise"])[0] == "minimise",
       "bench fuzz options: defaults, values, --help and --minimise where they stand")
    refusals = {}
    for argv in (["--bogus"], ["--bogus", "--help"], ["--seconds"], ["--seconds", "abc"],
                 ["--jobs", "0"]):
        try:
            fuzz.parse(argv)
            refusals[" ".join(argv)] = None
        except fuzz.Usage as exc:
            refusals[" ".join(argv)] = str(exc)
    ok(refusals == {"--bogus": 'bench fuzz: unknown option "--bogus"',
                    "--bogus --help": 'bench fuzz: unknown option "--bogus"',
                    "--seconds": "bench fuzz: --seconds needs a value",
                    "--seconds abc": 'bench fuzz: --seconds takes a whole number of at least 1, not "abc"',
                    "--jobs 0": 'bench fuzz: --jobs takes a whole number of at least 1, not "0"'},
       "bad options are refused with what is wrong", refusals)
    rc, out, err = quiet(fuzz.main, "fuzz-bench", ["check", "--bogus"])
    ok(rc == 2 and out == "" and err.startswith('bench fuzz: unknown option "--bogus"\nusage: ')
       and err.endswith(fuzz.USAGE), "check: a refusal is status 2, the message and the usage",
       (rc, out, err))
    rc, out, err = quiet(fuzz.main, "fuzz-bench", ["check", "--seconds", "5"])
    rc2, out2, _ = quiet(fuzz.main, "fuzz-bench", ["run", "-", "--help"])
    ok(rc == 0 and out == "run\n" and rc2 == 0 and out2 == fuzz.USAGE,
       "check says what to do; --help prints the usage", (out, out2))

    with tempfile.TemporaryDirectory() as d:
        rc, out, _ = quiet(fuzz.bench, make(d), 10, 2, 300)
        keys = [l.split("=")[0] for l in out.splitlines()]
        ok(rc == 0 and keys == ["engine_execs", "engine_exec_per_s", "engine_corpus",
                                "shared_execs", "shared_exec_per_s", "shared_corpus",
                                "state_execs", "state_exec_per_s", "state_corpus",
                                "device_sequences", "device_seconds", "findings"]
           and "engine_execs=2000" in out and out.endswith("findings=0\n"),
           "bench: the key=value lines in order, no findings", out)
    with tempfile.TemporaryDirectory() as d:
        rc, out, _ = quiet(fuzz.bench, make(d, qtest=QTEST_BAD), 10, 1, 300)
        ok(rc == 1 and out.endswith("findings=1\n"),
           "bench: a failed device sequence saves no input, still a finding", out)
    with tempfile.TemporaryDirectory() as d:
        fz = make(d, fuzzers={"ctrl": CRASH, "shared": CRASH, "state": GOOD})
        rc, out, _ = quiet(fuzz.bench, fz, 10, 1, 300)
        ok(rc == 1 and out.endswith("findings=1\n") and fz.findings() == 1,
           "bench: findings are the inputs saved by this run", out)

    # --minimise: a stand-in merge whose control file lists, for each
    # input, the edges written in it.
    with tempfile.TemporaryDirectory() as d:
        fz = make(d, fuzzers=MERGE)
        work = fz.workdir("ctrl")
        os.makedirs(work)
        for name, edges in (("w1", "1 2 3"), ("w2", "1 2"), ("w3", "4"), ("w4", "3")):
            with open(os.path.join(work, name), "w", encoding="utf-8") as f:
                f.write(edges)
        corpus = fz.kept("corpus", "ctrl")
        with open(os.path.join(corpus, "README"), "w", encoding="utf-8") as f:
            f.write("kept")
        for name in ("in0", "in1", "in2"):            # the seeds: edges 0, 1, 2
            with open(os.path.join(corpus, name), "w", encoding="utf-8") as f:
                f.write(name[-1])
        line, _, err = quiet(fz.minimise)
        ok(line == "corpus_files=3 corpus_edges=5"
           and sorted(os.listdir(corpus)) == ["README", "in0", "w1", "w3"],
           "minimise: the corpus rebuilt from the fewest inputs covering every edge, "
           "its README kept", (line, sorted(os.listdir(corpus)), err))
        env = dict(os.environ)
        try:
            os.environ.update(NF_ROOT=fz.root, NF_BUILD=os.path.dirname(fz.dir),
                              NF_QEMU_BIN=os.path.join(d, "qemu-build", "qemu-system-x86_64"))
            rc, out, err = quiet(fuzz.main, "fuzz-bench", ["run", "-", "--minimise"])
        finally:
            os.environ.clear()
            os.environ.update(env)
        ok(rc == 0 and out == "corpus_files=3 corpus_edges=5\n",
           "fuzz-bench run - --minimise: its line", (rc, out, err))
        fz = make(d, fuzzers="echo merge broke; exit 1\n")
        try:
            quiet(fz.minimise)
            msg = None
        except fuzz.FuzzError as exc:
            msg = str(exc)
        ok(msg == f"merge failed ({fz.dir}/minimise/merge.log)", "a merge that fails stops it", msg)

    # --minimise's set cover.
    with tempfile.TemporaryDirectory() as d:
        paths = {}
        for name, size in (("a", 10), ("b", 5), ("c", 1), ("d", 2)):
            paths[name] = os.path.join(d, name)
            with open(paths[name], "w", encoding="utf-8") as f:
                f.write("x" * size)
        chosen, want = fuzz.cover({paths["a"]: {1, 2, 3}, paths["b"]: {1, 2}, paths["c"]: {3},
                                   paths["d"]: {4}})
        ok([os.path.basename(c) for c in chosen] == ["a", "d"] and want == {1, 2, 3, 4},
           "cover: the input adding the most edges first, until all are covered", chosen)
    return done()


if __name__ == "__main__":
    sys.exit(main())
