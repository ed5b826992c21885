# SPDX-License-Identifier: GPL-2.0-or-later
"""Suite `isolation` and `scripts/nfabric clean` (docs/host.md).

A run of scripts/nfabric names what it makes outside the checkout after
the checkout and itself (scripts/lib/run.sh); these check and clean that.

isolation-suite DIR PREPARED: the suite, TAP on stdout, its children's
output in DIR (build/test-logs/isolation, made empty by
scripts/lib/run.sh, which ran the DDP jobs' provisioning there first:
PREPARED is its status).  Each scripts/nfabric it starts (a run of its
own: no NF_RUN_ID) runs in a process group of its own, waited for a
bounded time, and its group stopped; the SIGKILLed run's group is stopped
once the next run had its chance to clean up after it.

  0. `demo` leaves no process, nothing in /dev/shm or the temporary base,
     and /dev/null's mode as it was;
  1. two checkouts (this one and a copy with a build directory of links to
     this one's QEMU, image and host programs) run a 2-host cluster each at
     once with the default --dir: each device's state in its own run's
     directory, both pass, neither leaves anything;
  2. `test unit` and `test pybind` of this checkout at once, each with its
     host check passing;
  3. two host DDP jobs at once with the default device files and port;
  4. a run killed with SIGKILL while its guest runs leaves its QEMU and run
     directory, and the next run of the checkout removes them and says so.

clean [--build] [--all]: `scripts/nfabric clean` (CLEAN_USAGE).
"""

import contextlib
import glob
import hashlib
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from typing import Callable, Dict, List, Optional, Sequence

from . import nfhost
from .ddp import stop_on_signals
from .hosts import read
from .options import Parser, UsageError
from .tap import Tap

CLEAN_USAGE = """\
usage: scripts/nfabric clean [--build] [--all]

Removes what this checkout made outside itself and left behind: processes of
its runs that still run, its shared memory and state files in /dev/shm
(clusters kept with --keep among them), its temporary directories.
  --build   also the build directory (build/, or where it links to)
  --all     also the build directory, the download cache (NF_CACHE) and the
            apt entries the set-up added; prints the packages it installed
            (left installed: other programs may use them)
"""

# What nf_machine (scripts/lib/vm.sh) adds to this process's environment
# for its own use: a scripts/nfabric started here must not inherit it (a
# second checkout given this one's NF_ROOT would take itself for this one).
MACHINE_VARS = ("NF_ROOT", "NF_QEMU_BIN", "NF_QEMU_SRC", "NF_GUEST_KERNEL", "NF_GUEST_INITRD",
                "NF_GUEST_INITRD_PERF", "NF_FIRMWARE", "NF_HOST_BUILD", "NF_CHECKOUT_ID")

# Bounds of the waits (seconds): a child still running then is stopped and
# fails its check.
WAITS = {"demo": 1800, "cluster": 1800, "test": 3600, "ddp": 900, "mark": 300,
         "killed": 60, "next": 300}


def child_env(environ: Dict[str, str], root: str, drop: Sequence[str] = (),
              **add: str) -> Dict[str, str]:
    """ENVIRON as the calling shell had it (less MACHINE_VARS and nf_machine's
    entry in PYTHONPATH), less DROP, plus ADD."""
    env = {k: v for k, v in environ.items() if k not in MACHINE_VARS and k not in drop}
    own = os.path.join(root, "scripts")
    path = env.get("PYTHONPATH")
    if path == own:
        del env["PYTHONPATH"]
    elif path is not None and path.startswith(own + ":"):
        env["PYTHONPATH"] = path[len(own) + 1:]
    env.update(add)
    return env


def joined(items: Sequence[str]) -> str:
    """ITEMS as the shell joined lines (`tr '\\n' ' '`): each and a space."""
    return "".join(f"{i} " for i in items)


def remove(path: str) -> None:
    """rm -rf PATH (a link itself, never what it points to)."""
    if os.path.isdir(path) and not os.path.islink(path):
        shutil.rmtree(path)
    else:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(path)


def entries(checkout: str, shm: str, tmp_base: str) -> List[str]:
    """What CHECKOUT's runs made in SHM and TMP_BASE (nfabric-CHECKOUT-*)."""
    out: List[str] = []
    for d in (shm, tmp_base):
        out += [p for p in sorted(glob.glob(os.path.join(glob.escape(d), f"nfabric-{checkout}-*")))
                if os.path.exists(p)]
    return out


def leftovers(checkout: str, run_id: str, shm: str, tmp_base: str,
              procs: Callable = nfhost.procs) -> List[str]:
    """What runs of CHECKOUT left, less this run's (RUN_ID): their processes
    ("pid comm"), their entries in SHM and TMP_BASE; empty if none."""
    found = procs(f"NF_RUN_CHECKOUT={checkout}", f"NF_RUN_ID={run_id}")
    found += entries(checkout, shm, tmp_base)
    return [x for x in found if f"run-{run_id}" not in x]


def status_text(rc: Optional[int]) -> str:
    """A child's status as the shell said it: "none" if it did not end."""
    if rc is None:
        return "none"
    return str(128 - rc if rc < 0 else rc)


def tail(path: str, n: int) -> List[str]:
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            lines = f.read().splitlines()
    except OSError:
        return []
    return lines[-n:] if n else []


def group_members(pgid: int) -> List[int]:
    """The processes of process group PGID."""
    out = []
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat", encoding="utf-8", errors="replace") as f:
                fields = f.read().rsplit(")", 1)[1].split()
        except (OSError, IndexError):
            continue
        if int(fields[2]) == pgid and fields[0] != "Z":
            out.append(int(name))
    return out


class Job:
    """A child in a process group of its own (start_new_session), its
    output in files; waited for a bounded time, its group stopped."""

    def __init__(self, argv: List[str], out: str, env: Dict[str, str],
                 cwd: Optional[str] = None, err: Optional[str] = None):
        self.argv = argv
        with contextlib.ExitStack() as files:
            stdout = files.enter_context(open(out, "wb"))
            stderr = files.enter_context(open(err, "wb")) if err else subprocess.STDOUT
            self.proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=stdout,
                                         stderr=stderr, env=env, cwd=cwd,
                                         start_new_session=True)
        self.rc: Optional[int] = None
        self.stopped = False

    @property
    def pid(self) -> int:
        return self.proc.pid

    def running(self) -> bool:
        return self.proc.poll() is None

    def wait(self, timeout: float) -> Optional[int]:
        """Its status, or None if it did not end within TIMEOUT (then its
        group is stopped)."""
        try:
            self.rc = self.proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            print(f"# {' '.join(self.argv[:3])}... did not end within {timeout:.1f} s: stopped")
            self.stop()
            return None
        return self.rc

    def stop(self) -> None:
        """Its process group stopped (SIGTERM, SIGKILL after 5 s), itself reaped."""
        if self.stopped:
            return
        self.stopped = True
        pgid = self.proc.pid
        for sig, grace in ((signal.SIGTERM, 5.0), (signal.SIGKILL, 5.0)):
            # After its leader ended, the group is signalled only while a
            # member of it still runs (its number is not reused until then).
            if self.running() or group_members(pgid):
                with contextlib.suppress(ProcessLookupError, PermissionError):
                    os.killpg(pgid, sig)
            end = time.monotonic() + grace
            while time.monotonic() < end and (self.running() or group_members(pgid)):
                time.sleep(0.1)
            if not self.running() and not group_members(pgid):
                break
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.proc.wait(timeout=5)


def checkout_copy(root: str, dest: str) -> List[str]:
    """The files of the checkout ROOT (tracked, and new ones not ignored) as
    they are in its work tree, copied to DEST; what git or tar said."""
    remove(dest)
    os.makedirs(dest)
    names = subprocess.run(["git", "-C", root, "ls-files", "-z", "--cached", "--others",
                            "--exclude-standard"], capture_output=True, timeout=120, check=False)
    with tempfile.TemporaryFile() as pack_err:
        pack = subprocess.Popen(["tar", "--null", "-T", "-", "-cf", "-"], cwd=root,
                                stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=pack_err)
        unpack = subprocess.Popen(["tar", "-xf", "-", "-C", dest], stdin=pack.stdout,
                                  stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
        try:
            assert pack.stdin is not None and pack.stdout is not None
            pack.stdout.close()     # unpack's now
            pack.stdin.write(names.stdout)
            pack.stdin.close()
            unpack_out, _ = unpack.communicate(timeout=600)
            pack.wait(timeout=60)
        finally:
            for p in (pack, unpack):
                if p.poll() is None:
                    p.kill()
                p.wait(timeout=10)
        pack_err.seek(0)
        said = (names.stderr + pack_err.read() + unpack_out).decode(errors="replace").splitlines()
    if names.returncode or pack.returncode or unpack.returncode:
        said.append(f"copying {root} to {dest}: git ls-files status {names.returncode}, "
                    f"tar -c {pack.returncode}, tar -x {unpack.returncode}")
    return said


class Suite:
    """Suite `isolation` (module docstring).  ROOT is the checkout, BUILD
    its build directory, QEMU_BUILD, QEMU_SRC, HOST_BUILD what a second
    checkout's build links to; CHECKOUT and RUN_ID this run's names; RUN_TMP
    its temporary directory, TMP_BASE the runs' base, SHM /dev/shm."""

    def __init__(self, root: str, build: str, qemu_build: str, qemu_src: str, host_build: str,
                 checkout: str, run_id: str, run_tmp: str, tmp_base: str, logs: str,
                 environ: Dict[str, str], shm: str = "/dev/shm",
                 procs: Callable = nfhost.procs, waits: Optional[Dict[str, float]] = None,
                 tick: float = 0.5, out: Callable[[str], None] = print):
        self.root, self.build, self.d = root, build, logs
        self.qemu_build, self.qemu_src, self.host_build = qemu_build, qemu_src, host_build
        self.checkout, self.run_id, self.run_tmp, self.tmp_base = checkout, run_id, run_tmp, tmp_base
        self.environ, self.shm, self.procs = environ, shm, procs
        self.waits = dict(WAITS, **(waits or {}))
        self.tick = tick
        self.tap = Tap(out)
        self.jobs: List[Job] = []
        self.nfabric = os.path.join(root, "scripts", "nfabric")
        self.copy = os.path.join(run_tmp, "second-checkout")
        self.second = os.path.join(run_tmp, "second-build")
        self.ck2 = hashlib.md5(self.copy.encode()).hexdigest()[:12]

    # ---- helpers ----------------------------------------------------------

    def env(self, drop: Sequence[str] = ("NF_RUN_ID",), **add: str) -> Dict[str, str]:
        return child_env(self.environ, self.root, drop, **add)

    def start(self, argv: List[str], out: str, env: Dict[str, str], cwd: Optional[str] = None,
              err: Optional[str] = None) -> Job:
        job = Job(argv, os.path.join(self.d, out), env, cwd,
                  os.path.join(self.d, err) if err else None)
        self.jobs.append(job)
        return job

    def left(self, checkout: str) -> str:
        return joined(leftovers(checkout, self.run_id, self.shm, self.tmp_base, self.procs))

    def state_files(self, checkout: str, not_run: Optional[str]) -> List[str]:
        found = sorted(glob.glob(os.path.join(glob.escape(self.shm),
                                              f"nfabric-{checkout}-run-*", "cluster-*", "state")))
        return [p for p in found if not_run is None or f"run-{not_run}/" not in p]

    def stop_all(self) -> None:
        for job in self.jobs:
            job.stop()

    # ---- the steps ----------------------------------------------------------

    def second_checkout(self) -> None:
        """A copy of this checkout with a build directory of its own whose
        QEMU (build and source), guest image and host programs are this
        one's (links)."""
        said = checkout_copy(self.root, self.copy)
        for line in said:
            self.tap.note(line)
        remove(self.second)
        os.makedirs(self.second)
        os.symlink(self.qemu_build, os.path.join(self.second, "qemu-build"))
        os.symlink(self.qemu_src, os.path.join(self.second, "qemu-src"))  # its python/qemu
        os.symlink(os.path.join(self.build, "guest"), os.path.join(self.second, "guest"))
        os.symlink(self.host_build, os.path.join(self.second, "host"))

    def demo(self) -> None:
        """0. The demo, a run of its own, leaves nothing behind."""
        job = self.start([self.nfabric, "demo"], "demo.out", self.env())
        st = job.wait(self.waits["demo"])
        left = self.left(self.checkout)
        job.stop()
        said = "\n".join(line for line in read(os.path.join(self.d, "demo.out")).splitlines()
                         if line.startswith("demo:"))
        mode = "%o" % (os.stat("/dev/null").st_mode & 0o7777)
        self.tap.ok(st == 0 and not left and mode == "666",
                      f"scripts/nfabric demo ({said}) leaves no process, nothing in /dev/shm or "
                      f"{self.tmp_base}{f' (left: {left})' if left else ''}, /dev/null mode {mode}")

    def clusters(self) -> None:
        """1. Two checkouts, one cluster each, at the same time, both with
        the default --dir: each device's files are its own run's."""
        cmd = "nfabric-multihost agg"
        argv = ["cluster", "--hosts", "2", "--run", cmd]
        second = self.start([os.path.join(self.copy, "scripts", "nfabric"), *argv],
                            "second-cluster.out", self.env(NF_BUILD=self.second), cwd=self.copy)
        first = self.start([self.nfabric, *argv], "first-cluster.out", self.env())
        # While both run: each checkout's device in a run directory of its own.
        seen = ""
        for _ in range(int(self.waits["mark"] / self.tick)):
            sa = self.state_files(self.checkout, self.run_id)
            sb = self.state_files(self.ck2, None)
            if sa and sb:
                seen = f"{sa[0]} and {sb[0]}"
                break
            if not first.running() and not second.running():
                break
            time.sleep(self.tick)
        self.tap.ok(bool(seen), "two checkouts' clusters at once: each device's state in its "
                      f"own run's directory ({seen or 'not both seen'})")
        end = time.monotonic() + self.waits["cluster"]
        status = {name: job.wait(max(1.0, end - time.monotonic()))
                  for name, job in (("second", second), ("first", first))}
        for name in ("first", "second"):
            st = status_text(status[name])
            self.tap.ok(st == "0", f"the {name} checkout's 2-host cluster ({cmd}) passed "
                          f"while the other ran (status {st})")
            if st != "0":
                self.tap.diag(tail(os.path.join(self.d, f"{name}-cluster.out"), 8))
        for ck in (self.checkout, self.ck2):
            left = self.left(ck)
            self.tap.ok(not left, f"checkout {ck}'s cluster run left no process and nothing "
                          f"in /dev/shm or {self.tmp_base}{f': {left}' if left else ''}")
        first.stop()
        second.stop()

    def test_runs(self) -> None:
        """2. Two test runs of this checkout at once, different suites."""
        jobs = {s: self.start([self.nfabric, "test", s], f"test-{s}.out",
                              self.env(NF_TEST_LOGDIR=os.path.join(self.d, s)))
                for s in ("unit", "pybind")}
        end = time.monotonic() + self.waits["test"]
        status = {s: job.wait(max(1.0, end - time.monotonic())) for s, job in jobs.items()}
        for s in ("unit", "pybind"):
            st = status_text(status[s])
            out = read(os.path.join(self.d, f"test-{s}.out")).splitlines()
            host = any(line.startswith("host: ") and " 0 failed" in line[6:] for line in out)
            self.tap.ok(st == "0" and host,
                          f"scripts/nfabric test {s} beside another test run: "
                          f"{out[-1] if out else ''}, its host check passed (status {st})")
            if st != "0":
                self.tap.diag([line for line in out
                                  if line.startswith(" ") and line.lstrip(" ").startswith("[")
                                  or "failed" in line][:10])
            jobs[s].stop()

    def ddp(self, prepared: int) -> None:
        """3. Two host DDP jobs at once with the defaults (device files, port)."""
        if prepared != 0:
            said = joined(tail(os.path.join(self.d, "ddp-prepare.out"), 2))
            self.tap.ok(False, f"PyTorch for the DDP jobs ({said})")
            return
        env = self.env(drop=("NF_RUN_SHM",), PYTHONPATH=os.path.join(self.root, "guest", "python"),
                       NFABRIC_LIB=os.path.join(self.host_build, "guest", "libnfabric.so"))
        argv = ["/usr/bin/python3", "-m", "nfabric.examples.train", "--spawn", "2", "--mode",
                "gbinary", "--steps", "4", "--train-samples", "1000", "--test-samples", "100"]
        jobs = [self.start(argv, f"ddp{n}.json", env, err=f"ddp{n}.err") for n in (1, 2)]
        end = time.monotonic() + self.waits["ddp"]
        status = [job.wait(max(1.0, end - time.monotonic())) for job in jobs]
        for n, rc in enumerate(status, 1):
            st = status_text(rc)
            equal = sum('"params_identical": true' in line
                        for line in read(os.path.join(self.d, f"ddp{n}.json")).splitlines())
            self.tap.ok(st == "0" and equal == 2,
                          f"host DDP job {n} of 2 at once (train --spawn 2, default device files "
                          f"and port): both ranks end equal (status {st})")
            if st != "0":
                self.tap.diag(tail(os.path.join(self.d, f"ddp{n}.err"), 5))
        left = joined(sorted(glob.glob(os.path.join(glob.escape(self.shm), "nfabric-ddp-*"))))
        self.tap.ok(not left, f"the two DDP jobs removed their device files{f': {left}' if left else ''}")
        for job in jobs:
            job.stop()

    def killed(self) -> None:
        """4. A run killed (SIGKILL, no cleanup): the next run of the
        checkout finds what it left and removes it."""
        kdir = os.path.join(self.d, "killed")
        job = self.start([self.nfabric, "cluster", "--hosts", "1", "--dir", kdir, "--run",
                          "echo NFABRIC-MARK; sleep 600", "--timeout", "700"],
                         "killed.out", self.env())
        for _ in range(int(self.waits["mark"] / self.tick)):
            if "NFABRIC-MARK" in read(os.path.join(kdir, "host0.log")):
                break
            if not job.running():
                break
            time.sleep(self.tick)
        qpid = read(os.path.join(kdir, "host0.pid")).strip()
        runid = ""
        if qpid.isdigit():
            for e in nfhost.environ(int(qpid)):
                if e.startswith(b"NF_RUN_ID="):
                    runid = e[10:].decode(errors="replace")
        with contextlib.suppress(ProcessLookupError):
            os.kill(job.pid, signal.SIGKILL)
        with contextlib.suppress(subprocess.TimeoutExpired):
            job.proc.wait(timeout=self.waits["killed"])
        run_shm = os.path.join(self.shm, f"nfabric-{self.checkout}-run-{runid}")
        run_tmp = os.path.join(self.tmp_base, f"nfabric-{self.checkout}-run-{runid}")
        self.tap.ok(bool(runid) and running(qpid) and os.path.isdir(run_shm),
                      f"a run killed with SIGKILL leaves its guest's QEMU (pid {qpid or 'none'}) "
                      "and its run directory behind")
        nxt = self.start([self.nfabric, "test", "--list"], "next-run.out", self.env())
        nxt.wait(self.waits["next"])
        out = read(os.path.join(self.d, "next-run.out"))
        self.tap.diag([line for line in out.splitlines() if "removed what" in line])
        time.sleep(0.5)
        self.tap.ok(bool(runid) and not running(qpid) and not os.path.lexists(run_shm)
                      and not os.path.lexists(run_tmp) and "removed what an earlier run" in out,
                      "the next run of the checkout stopped that QEMU and removed the killed "
                      "run's directories, and said so")
        nxt.stop()
        job.stop()
        # Whatever the next run did not remove goes now (its check failed).
        if runid:
            left = self.procs(f"NF_RUN_ID={runid}", None, kill=True)
            left += [p for p in (run_shm, run_tmp) if os.path.lexists(p)]
            for p in (run_shm, run_tmp):
                remove(p)
            if left:
                self.tap.note(f"removed what the killed run still left: {joined(left)}")

    def run(self, prepared: int) -> int:
        """The suite: 0 if every check passed."""
        try:
            self.second_checkout()
            self.demo()
            self.clusters()
            self.test_runs()
            self.ddp(prepared)
            self.killed()
        finally:
            self.stop_all()
            remove(self.copy)
            remove(self.second)
        return self.tap.status()


def running(pid: str) -> bool:
    """PID (a number) names a process that runs: a zombie does not (the
    QEMU stopped, its parent gone, init not yet reaping it)."""
    return pid.isdigit() and nfhost.alive(int(pid))


def env(name: str) -> str:
    value = os.environ.get(name)
    if not value:
        raise RuntimeError(f"{name} is not set (run this through scripts/nfabric)")
    return value


def suite_main(argv: List[str]) -> int:
    """isolation-suite DIR PREPARED, in a run of scripts/nfabric."""
    stop_on_signals()
    build = env("NF_BUILD")
    suite = Suite(root=env("NF_ROOT"), build=build,
                  qemu_build=os.path.dirname(env("NF_QEMU_BIN")), qemu_src=env("NF_QEMU_SRC"),
                  host_build=env("NF_HOST_BUILD"), checkout=env("NF_CHECKOUT_ID"),
                  run_id=env("NF_RUN_ID"), run_tmp=env("NF_RUN_TMP"),
                  tmp_base=os.environ.get("NF_TMP_BASE") or "/tmp", logs=argv[0],
                  environ=dict(os.environ), out=lambda line: print(line, flush=True))
    return suite.run(int(argv[1]))


# ---- scripts/nfabric clean ---------------------------------------------------

def clean_options(argv: List[str]):
    """(build, all) from clean's arguments; None for --help; a str: the
    refusal of an unknown one."""
    try:
        ns = Parser("nfabric clean", CLEAN_USAGE, prefix="nfabric clean: ").options(
            (), ("--build", "--all")).parse(argv)
    except UsageError as exc:
        return str(exc)
    return None if ns is None else (ns.build or ns.all, ns.all)


def clean(argv: List[str], environ: Dict[str, str], shm: str = "/dev/shm",
          procs: Callable = nfhost.procs, out: Callable[[str], None] = print,
          err=None, apt_prefs: str = "/etc/apt/preferences.d/nfabric") -> int:
    """`scripts/nfabric clean ARGV` with the run's names in ENVIRON."""
    opts = clean_options(argv)
    if opts is None:
        out(CLEAN_USAGE.rstrip("\n"))
        return 0
    if isinstance(opts, str):
        (err or sys.stderr).write(opts + "\n" + CLEAN_USAGE)
        return 2
    build, every = opts
    checkout, run_id = environ["NF_CHECKOUT_ID"], environ["NF_RUN_ID"]
    stopped = joined(procs(f"NF_RUN_CHECKOUT={checkout}", f"NF_RUN_ID={run_id}", kill=True))
    if stopped:
        out(f"clean: stopped processes of this checkout: {stopped}")
    n = 0
    own = (environ.get("NF_RUN_SHM"), environ.get("NF_RUN_TMP"))
    for d in entries(checkout, shm, environ.get("NF_TMP_BASE") or "/tmp"):
        if d in own:
            continue
        remove(d)
        out(f"clean: removed {d}")
        n += 1
    if build:
        base = environ["NF_BUILD_BASE"]
        d = os.path.realpath(base)
        if os.path.exists(d):
            remove(d)
            out(f"clean: removed the build directory {d}")
        link = os.path.join(environ["NF_ROOT"], "build")
        if os.path.islink(link):
            os.unlink(link)
    if every:
        cache = environ["NF_CACHE"]
        if os.path.isdir(cache):
            remove(cache)
            out(f"clean: removed the download cache {cache}")
        for d in (environ["NF_APT_LIST"], apt_prefs, environ["NF_APT_STAMP"]):
            if not os.path.exists(d):
                continue
            remove(d)
            out(f"clean: removed {d}")
        out("clean: the packages the set-up installs are left installed; to remove them: "
            f"apt-get remove {environ.get('NF_SETUP_PACKAGES', '')}")
    out(f"clean: done ({n} leftovers of earlier runs removed)")
    return 0
