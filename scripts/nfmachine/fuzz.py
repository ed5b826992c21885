# SPDX-License-Identifier: GPL-2.0-or-later
"""Suite `fuzz` and `scripts/nfabric bench fuzz` (docs/reliability.md).

The libFuzzer harnesses of the controller model (tests/fuzz/fuzz_ctrl.c),
of two heads of a shared device (tests/fuzz/fuzz_shared.c) and of heads
over a corrupted state file (tests/fuzz/fuzz_state.c), and the random
register/memory sequences against the real device under qtest
(tests/qtest/nfabric-fuzz-test.c).  scripts/lib/fuzz.sh builds the
harnesses (build/fuzz/fuzz-TARGET, clang-14 with ASan + UBSan) and the
qtest (in QEMU's tree) first; here they are run, their inputs replayed,
their logs judged.

Inputs kept in the tree, each replayed by every run of suite `fuzz`:
  tests/fuzz/corpus/TARGET/   seeds and minimised corpora (also where
                              libFuzzer starts from)
  tests/fuzz/regress/TARGET/  inputs that once failed (never minimised
                              away; replayed whole, any length)

Every child runs in a process group of its own with its output in a log
of build/fuzz/, is waited for a bounded time and killed (the group) past
it, and is reaped whatever ends this process.
"""

import os
import random
import re
import shutil
import signal
import subprocess
import sys
import time
from typing import Dict, List, Optional, Sequence, Set, Tuple

from .ddp import stop_on_signals
from .hosts import read
from .options import Parser, given
from .tap import Tap

TARGETS = ("ctrl", "shared", "state")        # scripts/lib/fuzz.sh builds these
# libFuzzer options of every run: inputs up to 1 KiB (200 operations).
OPTS = ["-max_len=1024", "-timeout=10", "-rss_limit_mb=2048", "-print_final_stats=1"]
# A libFuzzer log that reports a finding (the harness's abort, a sanitizer).
FINDING = re.compile(r"invariant violated|ERROR: (AddressSanitizer|libFuzzer|LeakSanitizer)"
                     r"|runtime error")
ARTIFACTS = ("crash-", "leak-", "timeout-", "oom-")
# How long past -max_total_time a fuzzer may take (loading a large working
# corpus, the final statistics) before it is killed as hung.
SLACK_S = 300
REPLAY_S = 900          # one replay of a target's kept inputs
UNIT_S = 600            # test-ctrl-asan
MERGE_S = 3600          # --minimise: the whole-corpus merge
MERGE_ONE_S = 120       # --minimise: one input's edges

USAGE = """\
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
"""


class Usage(Exception):
    """A bad option of bench fuzz: the message, the usage, status 2."""


class FuzzError(Exception):
    """A step that cannot go on (a merge that failed): status 1."""


def note(text: str) -> None:
    """A comment on stderr (the suite's log takes both streams)."""
    print(f"# {text}", file=sys.stderr, flush=True)


def matching(text: str, pattern: str, most: int) -> List[str]:
    """The first `most` lines of text that pattern finds (grep -m)."""
    rx = re.compile(pattern)
    return [l for l in text.splitlines() if rx.search(l)][:most]


def executed_units(text: str) -> int:
    """libFuzzer's last stat::number_of_executed_units (0 if none)."""
    found = re.findall(r"^stat::number_of_executed_units: *(\d+)", text, re.M)
    return int(found[-1]) if found else 0


def failed(text: str) -> bool:
    return bool(FINDING.search(text))


def files(d: str, readme: bool = True) -> List[str]:
    """The plain files directly in d, sorted (without README* if not readme)."""
    if not os.path.isdir(d):
        return []
    return sorted(os.path.join(d, n) for n in os.listdir(d)
                  if os.path.isfile(os.path.join(d, n)) and (readme or not n.startswith("README")))


def count_tree(d: str) -> int:
    return sum(len(fs) for _, _, fs in os.walk(d))


# ---- children -----------------------------------------------------------

def kill_group(p: subprocess.Popen) -> None:
    """SIGTERM to p's process group, SIGKILL after 10 s; p reaped."""
    for sig, wait in ((signal.SIGTERM, 10), (signal.SIGKILL, 30)):
        try:
            os.killpg(p.pid, sig)
        except ProcessLookupError:
            pass
        try:
            p.wait(timeout=wait)
            return
        except subprocess.TimeoutExpired:
            continue
    raise RuntimeError(f"pid {p.pid} ({p.args[0]}) did not end after SIGKILL")


class Children:
    """Started children (each a group of its own, output into a log);
    whatever leaves the `with`, none is left running or unreaped."""

    def __init__(self):
        self.procs: List[subprocess.Popen] = []

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        for p in self.procs:
            if p.poll() is None:
                kill_group(p)

    def start(self, argv: Sequence[str], log: str, append: bool = False,
              env: Optional[Dict[str, str]] = None,
              cwd: Optional[str] = None) -> Optional[subprocess.Popen]:
        """argv started, or None if it cannot be (said in its log and on
        stderr: a missing or broken program fails its check, it does not
        end the suite)."""
        with open(log, "a" if append else "w", encoding="utf-8") as f:
            try:
                p = subprocess.Popen(list(argv), stdin=subprocess.DEVNULL, stdout=f,
                                     stderr=subprocess.STDOUT, env=env, cwd=cwd,
                                     start_new_session=True)
            except OSError as exc:
                f.write(f"{argv[0]}: cannot start: {exc.strerror}\n")
                note(f"{argv[0]}: cannot start: {exc.strerror}")
                return None
        self.procs.append(p)
        return p

    @staticmethod
    def wait(p: Optional[subprocess.Popen], deadline: float, log: str) -> int:
        """p's status (127 if it did not start); past the deadline
        (time.monotonic()) it is killed, said in its log and on stderr,
        and the status is 124."""
        if p is None:
            return 127
        try:
            return p.wait(timeout=max(0.0, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            kill_group(p)
            text = f"{os.path.basename(p.args[0])}: no end in its time, killed (pid {p.pid})"
            with open(log, "a", encoding="utf-8") as f:
                f.write(text + "\n")
            note(text)
            return 124


def run_one(argv: Sequence[str], log: str, timeout: float, append: bool = False,
            env: Optional[Dict[str, str]] = None, cwd: Optional[str] = None) -> int:
    """argv, its output in log, bounded by timeout seconds: its status."""
    with Children() as ch:
        p = ch.start(argv, log, append=append, env=env, cwd=cwd)
        return ch.wait(p, time.monotonic() + timeout, log)


# ---- the steps ----------------------------------------------------------

class Fuzz:
    """The steps of the suite and the benchmark.  root: the checkout
    (NF_ROOT); build: NF_BUILD (the harnesses in build/fuzz); qtest: the
    device's fuzz qtest built in QEMU's tree (None: its build failed);
    qemu_build: where it runs (qemu-system-x86_64 there)."""

    def __init__(self, root: str, build: str, qtest: Optional[str] = None,
                 qemu_build: Optional[str] = None, slack_s: float = SLACK_S):
        self.root = root
        self.dir = os.path.join(build, "fuzz")
        self.qtest = qtest
        self.qemu_build = qemu_build
        self.slack_s = slack_s
        self.rng = random.SystemRandom()

    def binary(self, t: str) -> str:
        return os.path.join(self.dir, f"fuzz-{t}")

    def kept(self, kind: str, t: str) -> str:
        return os.path.join(self.root, "tests", "fuzz", kind, t)

    def workdir(self, t: str) -> str:
        """A target's working corpus, kept between runs: build/fuzz/corpus
        (ctrl, as before) or build/fuzz/corpus-TARGET."""
        return os.path.join(self.dir, "corpus" if t == "ctrl" else f"corpus-{t}")

    def findings(self) -> int:
        """Findings so far: crash/leak/timeout/oom inputs libFuzzer saved."""
        art = os.path.join(self.dir, "artifacts")
        os.makedirs(art, exist_ok=True)
        return sum(1 for f in files(art) if os.path.basename(f).startswith(ARTIFACTS))

    def run(self, t: str, secs: int, jobs: int, key: str) -> Tuple[List[str], bool]:
        """libFuzzer on fuzz-TARGET for secs seconds on jobs processes over
        a shared working corpus, seeded from tests/fuzz/corpus/TARGET and
        tests/fuzz/regress/TARGET.  KEY_execs=, KEY_exec_per_s= and
        KEY_corpus=; False on a finding (or a fuzzer that failed)."""
        work, art = self.workdir(t), os.path.join(self.dir, "artifacts")
        os.makedirs(work, exist_ok=True)
        os.makedirs(art, exist_ok=True)
        for kind in ("corpus", "regress"):
            for f in files(self.kept(kind, t), readme=False):
                dst = os.path.join(work, os.path.basename(f))
                if not os.path.exists(dst):
                    shutil.copyfile(f, dst)
        env = {**os.environ, "ASAN_OPTIONS": "detect_leaks=1:abort_on_error=0"}
        good, execs = True, 0
        deadline = time.monotonic() + secs + self.slack_s
        with Children() as ch:
            procs = []
            for j in range(jobs):
                log = os.path.join(self.dir, f"{t}-{j}.log")
                procs.append((ch.start([self.binary(t), *OPTS, f"-max_total_time={secs}",
                                        f"-seed={self.rng.randrange(1 << 30) + j}",
                                        f"-artifact_prefix={art}/", work], log, env=env), log))
            for p, log in procs:
                good &= ch.wait(p, deadline, log) == 0
                text = read(log)
                execs += executed_units(text)
                if failed(text):
                    for l in matching(text, r"invariant violated|ERROR:|runtime error"
                                            r"|Test unit written", 3):
                        note(l)
                    good = False
        return [f"{key}_execs={execs}", f"{key}_exec_per_s={execs // (secs if secs > 0 else 1)}",
                f"{key}_corpus={count_tree(work)}"], good

    def replay(self, t: str) -> Tuple[int, bool]:
        """Every kept input of TARGET once: the corpus (as libFuzzer loads
        it, up to -max_len) and each regression input whole.  The number
        of inputs; False if one failed, or there were none (log:
        build/fuzz/replay-TARGET.log)."""
        log = os.path.join(self.dir, f"replay-{t}.log")
        corpus, regress = self.kept("corpus", t), self.kept("regress", t)
        open(log, "w", encoding="utf-8").close()
        n, good = 0, True
        if os.path.isdir(corpus):
            n = len(files(corpus))
            good &= run_one([self.binary(t), "-runs=0", *OPTS, corpus], log, REPLAY_S,
                            append=True) == 0
        kept = files(regress, readme=False)
        if kept:
            n += len(kept)
            good &= run_one([self.binary(t), *kept], log, REPLAY_S, append=True) == 0
        good &= not failed(read(log))
        return n, good and n > 0

    def unit(self) -> Tuple[int, bool, str]:
        """test-ctrl-asan: (its ok lines, passed, its output)."""
        log = os.path.join(self.dir, "test-ctrl-asan.log")
        rc = run_one([os.path.join(self.dir, "test-ctrl-asan")], log, UNIT_S)
        text = read(log)
        return len(re.findall(r"^ok ", text, re.M)), rc == 0, text

    def device(self, n: int) -> Tuple[List[str], bool]:
        """n random sequences against the device under qtest:
        device_sequences= and device_seconds=; False on a failure."""
        if not self.qtest or not self.qemu_build:
            note("tests/qtest/nfabric-fuzz-test did not build (log: build/qtest-ninja.log)")
            return ["device_sequences=0"], False
        log = os.path.join(self.dir, "device.log")
        env = {**os.environ, "NFABRIC_FUZZ_SEQUENCES": str(n),
               "QTEST_QEMU_BINARY": "./qemu-system-x86_64"}
        t0 = time.monotonic()
        rc = run_one([self.qtest, "--tap", "-k"], log, 600 + n // 20, env=env, cwd=self.qemu_build)
        secs = time.monotonic() - t0
        text = read(log)
        good = rc == 0 and not re.search(r"^not ok", text, re.M)
        if not good:
            for l in matching(text, r"not ok|ERROR|assert|Bail", 5):
                note(l)
        done = sum(int(m) for m in re.findall(r"^# device_sequences=(\d+)", text, re.M))
        return [f"device_sequences={done}", f"device_seconds={secs:.1f}"], good

    # ---- bench fuzz --minimise ------------------------------------------

    def minimise(self) -> str:
        """Rebuild tests/fuzz/corpus/ctrl from the working corpus:
        -merge=1 (edge coverage) to a minimal set (which favours small
        inputs), then a greedy set cover over each input's own edges (one
        merge process per input) of that set and the 200 largest inputs,
        down to a few dozen inputs.  Its corpus_files= corpus_edges= line."""
        fuzzer, work = self.binary("ctrl"), self.workdir("ctrl")
        tmp, out = os.path.join(self.dir, "minimise"), self.kept("corpus", "ctrl")
        shutil.rmtree(tmp, ignore_errors=True)
        os.makedirs(os.path.join(tmp, "merged"))
        os.makedirs(work, exist_ok=True)
        for f in files(out, readme=False):
            dst = os.path.join(work, os.path.basename(f))
            if not os.path.exists(dst):
                shutil.copyfile(f, dst)
        merge = [fuzzer, "-merge=1", "-use_counters=0", "-max_len=1024"]
        log = os.path.join(tmp, "merge.log")
        if run_one([*merge, f"-merge_control_file={tmp}/merge.cf", f"{tmp}/merged", work],
                   log, MERGE_S) != 0:
            raise FuzzError(f"merge failed ({log})")
        large = sorted(files(work), key=os.path.getsize)[-200:]
        cov: Dict[str, Set[int]] = {}
        for f in files(os.path.join(tmp, "merged")) + large:
            d = os.path.join(tmp, "one")
            shutil.rmtree(d, ignore_errors=True)
            os.makedirs(os.path.join(d, "in"))
            os.makedirs(os.path.join(d, "out"))
            shutil.copy(f, os.path.join(d, "in", "x"))
            run_one([*merge, f"-merge_control_file={d}/cf", f"{d}/out", f"{d}/in"],
                    os.path.join(d, "merge.log"), MERGE_ONE_S)
            if not os.path.exists(os.path.join(d, "cf")):
                raise FuzzError(f"no merge control file for {f} (log: {d}/merge.log)")
            edges: Set[int] = set()
            for line in read(os.path.join(d, "cf")).splitlines():
                p = line.split()
                if p and p[0] == "COV":
                    edges |= set(map(int, p[2:]))
            cov[f] = edges
        shutil.rmtree(os.path.join(tmp, "one"), ignore_errors=True)
        chosen, want = cover(cov)
        os.makedirs(out, exist_ok=True)
        for f in files(out, readme=False):
            os.unlink(f)
        for f in chosen:
            shutil.copy(f, out)
        return f"corpus_files={len(chosen)} corpus_edges={len(want)}"


def cover(cov: Dict[str, Set[int]]) -> Tuple[List[str], Set[int]]:
    """A greedy set cover: the inputs, each adding the most edges (the
    smaller of equals), until every edge is covered; (them, the edges)."""
    want: Set[int] = set().union(*cov.values()) if cov else set()
    have: Set[int] = set()
    chosen: List[str] = []
    while have != want:
        best = max(cov, key=lambda k: (len(cov[k] - have), -os.path.getsize(k)))
        chosen.append(best)
        have |= cov[best]
    return chosen, want


# ---- suite fuzz ---------------------------------------------------------

def suite(fz: Fuzz, secs: int, shared_secs: int, state_secs: int, seqs: int) -> int:
    """The `fuzz` suite, the short version of bench fuzz, as TAP (8
    checks); 1 if one failed."""
    tap = Tap()
    n, good, text = fz.unit()
    tap.ok(good, f"controller unit tests under ASan + UBSan ({n} checks)" if good
           else "controller unit tests under ASan + UBSan",
           matching(text, r"^not ok|ERROR|runtime error", 10))

    # Every kept input once (regression tests): corpora and past findings.
    for t in TARGETS:
        n, good = fz.replay(t)
        tap.ok(good, f"replay of fuzz-{t}: {n} inputs of tests/fuzz/{{corpus,regress}}/{t},"
               " no finding" if good
               else f"replay of fuzz-{t} ({n} inputs; log: build/fuzz/replay-{t}.log)",
               [] if good else matching(read(os.path.join(fz.dir, f"replay-{t}.log")),
                                        r"invariant|ERROR|runtime error|Running:", 5))

    for t, s, key, name, good_name in (
            ("ctrl", secs, "engine", "controller model", "controller model"),
            ("shared", shared_secs, "shared", "shared state",
             "shared state (two heads, robust locks)"),
            ("state", state_secs, "state", "corrupted state files", "corrupted state files")):
        lines, good = fz.run(t, s, 1, key)
        out = " ".join(lines) + " "
        tap.ok(good, f"libFuzzer, {good_name}, {s} s: {out}findings=0" if good
               else f"libFuzzer, {name}: {out}(inputs: build/fuzz/artifacts/)")

    lines, good = fz.device(seqs)
    out = " ".join(lines) + " "
    tap.ok(good, f"device sequences under qtest: {out}findings=0" if good
           else f"device sequences: {out}(log: build/fuzz/device.log)")
    return tap.status()


# ---- bench fuzz ---------------------------------------------------------

def parse(argv: List[str]) -> Tuple[str, int, int, int]:
    """bench fuzz's options, in order (as before, --help and --minimise act
    where they stand): ("help" | "minimise" | "run", seconds, jobs,
    sequences); Usage on a bad one."""
    vals = {"--seconds": "60", "--jobs": "1", "--sequences": "2000"}
    ns = Parser("bench fuzz", "", Usage, "option", "bench fuzz: ").options(
        tuple(vals), ("--minimise", "--minimize")).parse(argv)
    if ns is None:
        return "help", 0, 0, 0
    if ns.minimise or ns.minimize:
        return "minimise", 0, 0, 0
    for a, v in given(ns, tuple(vals)).items():
        if v == "":
            raise Usage(f"bench fuzz: {a} needs a value")
        vals[a] = v
    nums = []
    for name in ("--seconds", "--jobs", "--sequences"):
        v = vals[name]
        if not v.isdigit() or int(v) < 1:
            raise Usage(f'bench fuzz: {name} takes a whole number of at least 1, not "{v}"')
        nums.append(int(v))
    return ("run", *nums)


def bench(fz: Fuzz, secs: int, jobs: int, seqs: int) -> int:
    """bench fuzz: its key=value lines; 1 on a finding or a failure."""
    before = fz.findings()
    good = True
    for t, j, key in (("ctrl", jobs, "engine"), ("shared", 1, "shared"), ("state", 1, "state")):
        lines, ok = fz.run(t, secs, j, key)
        print("\n".join(lines), flush=True)
        good &= ok
    lines, ok = fz.device(seqs)
    print("\n".join(lines), flush=True)
    good &= ok
    findings = fz.findings() - before
    # A failure that saved no input (a device sequence) still counts.
    if not good and findings <= 0:
        findings = 1
    print(f"findings={findings}", flush=True)
    return 0 if good else 1


# ---- python3 -m nfmachine fuzz-suite | fuzz-bench -----------------------

def knob(name: str, default: int) -> int:
    v = os.environ.get(name) or str(default)
    if not v.isdigit() or int(v) < 1:
        raise ValueError(f'{name} must be a whole number of at least 1, not "{v}"')
    return int(v)


def main(name: str, argv: List[str]) -> int:
    """fuzz-suite QTEST | fuzz-bench check ARGS | fuzz-bench run QTEST ARGS.
    QTEST: the built tests/qtest/nfabric-fuzz-test, or - if its build
    failed (scripts/lib/fuzz.sh).  `check` prints what ARGS ask (help,
    minimise or run) or refuses them (status 2), before anything is built."""
    def fz(qtest: str) -> Fuzz:
        qemu = os.environ["NF_QEMU_BIN"]
        return Fuzz(os.environ["NF_ROOT"], os.environ["NF_BUILD"],
                    None if qtest == "-" else qtest, os.path.dirname(qemu))

    if name == "fuzz-suite":
        if len(argv) != 1:
            print("nfmachine fuzz-suite: takes the qtest's path (or -)", file=sys.stderr)
            return 2
        try:
            knobs = [knob("NF_FUZZ_SUITE_SECONDS", 20), knob("NF_FUZZ_SUITE_SHARED_SECONDS", 60),
                     knob("NF_FUZZ_SUITE_STATE_SECONDS", 20), knob("NF_FUZZ_SUITE_SEQUENCES", 300)]
        except ValueError as exc:
            print(f"nfabric test fuzz: {exc}", file=sys.stderr)
            return 2
        stop_on_signals()
        return suite(fz(argv[0]), *knobs)
    if argv[:1] not in (["check"], ["run"]) or (argv[0] == "run" and len(argv) < 2):
        print("nfmachine fuzz-bench: usage: fuzz-bench check ARGS | run QTEST ARGS",
              file=sys.stderr)
        return 2
    args = argv[1:] if argv[0] == "check" else argv[2:]
    try:
        what, secs, jobs, seqs = parse(args)
    except Usage as exc:
        print(exc, file=sys.stderr)
        sys.stderr.write(USAGE)
        return 2
    if argv[0] == "check":
        print(what)
        return 0
    if what == "help":
        sys.stdout.write(USAGE)
        return 0
    stop_on_signals()
    try:
        if what == "minimise":
            print(fz("-").minimise(), flush=True)
            return 0
        return bench(fz(argv[1]), secs, jobs, seqs)
    except FuzzError as exc:
        print(f"nfabric: error: {exc}", file=sys.stderr)
        return 1
