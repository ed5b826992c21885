# SPDX-License-Identifier: GPL-2.0-or-later
"""scripts/nfmachine/isolation.py (suite `isolation`, `scripts/nfabric
clean`) and hostcheck.py (the host check of `test`) without a machine: the
leftovers found and judged, the TAP lines, the refusals, made-up snapshots;
the whole suite against a stand-in scripts/nfabric (a passing run: 13 ok;
a failing one: what failed said, its hung child stopped in bounded time,
nothing left behind)."""

import contextlib
import hashlib
import io
import os
import subprocess
import sys
import tempfile
import time

from nfmachine import hostcheck, isolation as iso, nfhost
from nfmachine.tap import ok
import testkit

# A stand-in scripts/nfabric: its checkout's id from its own path, as
# common.sh; ISO_SHM and ISO_TMP its /dev/shm and temporary base; ISO_FAIL=1
# makes each command misbehave.
NFABRIC = r'''#!/bin/sh
root=$(cd "$(dirname "$0")/.." && pwd)
ck=$(printf '%s' "$root" | md5sum | cut -c1-12)
cmd=$1; shift
case "$cmd" in
demo)
    echo "demo: 3 passed, 0 failed"
    if [ "${ISO_FAIL:-}" = 1 ]; then
        mkdir -p "$ISO_SHM/nfabric-$ck-kept-x"
        (NF_RUN_CHECKOUT=$ck; export NF_RUN_CHECKOUT; exec sleep 300) &
        # Ends only once its leftover is sleep: in the middle of its exec a
        # process's environment reads empty, and it would not be found.
        until [ "$(cat /proc/$!/comm 2>/dev/null)" = sleep ] &&
              grep -qa "NF_RUN_CHECKOUT=$ck" /proc/$!/environ 2>/dev/null; do
            sleep 0.01
        done
    fi ;;
cluster)
    if [ "$3" = --dir ]; then       # the run that is killed
        mkdir -p "$4" "$ISO_SHM/nfabric-$ck-run-77.1" "$ISO_TMP/nfabric-$ck-run-77.1"
        (NF_RUN_ID=77.1; export NF_RUN_ID; exec sleep 300) &
        echo $! > "$4/host0.pid"
        echo $! > "$ISO_SHM/nfabric-$ck-run-77.1/qemu"
        echo NFABRIC-MARK > "$4/host0.log"
        wait
    fi
    [ "${ISO_FAIL:-}" = 1 ] && [ -z "${NF_BUILD:-}" ] && { echo "hung"; sleep 300; }
    mkdir -p "$ISO_SHM/nfabric-$ck-run-$$.1/cluster-a"
    touch "$ISO_SHM/nfabric-$ck-run-$$.1/cluster-a/state"
    sleep 1
    rm -rf "$ISO_SHM/nfabric-$ck-run-$$.1"
    echo "cluster: passed" ;;
test)
    if [ "$1" = --list ]; then
        [ "${ISO_FAIL:-}" = 1 ] && exit 0
        for d in "$ISO_SHM/nfabric-$ck-run-"*; do
            [ -f "$d/qemu" ] && kill "$(cat "$d/qemu")"
            rm -rf "$d" "$ISO_TMP/${d##*/}"
            echo "[nfabric] removed what an earlier run of this checkout left when it ended without cleaning up: $d" >&2
        done
        exit 0
    fi
    if [ "${ISO_FAIL:-}" = 1 ] && [ "$1" = pybind ]; then
        echo "  [pybind] not ok 3 - a bad argument"
        echo "host:        4 passed, 1 failed"
        echo "7 passed, 1 failed"
        exit 1
    fi
    echo "host:        4 passed, 0 failed"
    echo "9 passed, 0 failed" ;;
esac
'''

TRAIN = '''for rank in (0, 1):
    print('{"rank": %d, "params_identical": true}' % rank)
'''


def write(path, text, mode=0o644):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w", encoding="utf-8") as f:
        f.write(text)
    os.chmod(path, mode)


def make_root(d):
    root = os.path.join(d, "checkout")
    write(os.path.join(root, "scripts", "nfabric"), NFABRIC, 0o755)
    for part in ("nfabric/__init__.py", "nfabric/examples/__init__.py"):
        write(os.path.join(root, "guest", "python", part), "")
    write(os.path.join(root, "guest", "python", "nfabric", "examples", "train.py"), TRAIN)
    subprocess.run(["git", "init", "-q", root], check=True, capture_output=True)
    return root, hashlib.md5(root.encode()).hexdigest()[:12]


def run_suite(d, fail, prepared, waits=None):
    root, ck = make_root(d)
    shm, tmp = os.path.join(d, "shm"), os.path.join(d, "tmpbase")
    run_tmp, logs = os.path.join(tmp, "nfabric-run"), os.path.join(d, "logs")
    for p in (shm, tmp, run_tmp, logs):
        os.makedirs(p, exist_ok=True)
    write(os.path.join(logs, "ddp-prepare.out"), "installing\nE: no torch for you\n")
    environ = {k: v for k, v in os.environ.items() if not k.startswith("NF_")}
    environ.update(ISO_SHM=shm, ISO_TMP=tmp, ISO_FAIL="1" if fail else "0",
                   NF_ROOT=root, NF_RUN_ID="5.5", NF_RUN_CHECKOUT=ck,
                   PYTHONPATH=os.path.join(root, "scripts"))
    lines = []
    s = iso.Suite(root=root, build=os.path.join(d, "build"), qemu_build=os.path.join(d, "qb"),
                  qemu_src=os.path.join(d, "qs"), host_build=os.path.join(d, "hb"), checkout=ck,
                  run_id="5.5", run_tmp=run_tmp, tmp_base=tmp, logs=logs, environ=environ,
                  shm=shm, waits=waits, tick=0.05, out=lines.append)
    t0 = time.monotonic()
    rc = s.run(prepared)
    return rc, lines, s, time.monotonic() - t0, (shm, tmp, run_tmp, ck)


def check_units():
    env = {"NF_ROOT": "/c", "PYTHONPATH": "/c/scripts:/q/python", "NF_RUN_ID": "1.2",
           "NF_QEMU_BIN": "q", "HOME": "/root", "NF_BUILD": "/c/build"}
    e = iso.child_env(env, "/c", ("NF_RUN_ID",), NF_BUILD="/other")
    ok(e == {"PYTHONPATH": "/q/python", "HOME": "/root", "NF_BUILD": "/other"},
       "a child's environment: without nf_machine's variables, its PYTHONPATH entry, the dropped ones", e)
    e = iso.child_env({"NF_ROOT": "/c", "PYTHONPATH": "/c/scripts"}, "/c")
    ok(e == {}, "a PYTHONPATH that was only nf_machine's is gone", e)
    ok(iso.joined(["1 qemu", "/dev/shm/x"]) == "1 qemu /dev/shm/x " and iso.joined([]) == "",
       "lines joined as the shell's tr did: each with a space")
    ok([iso.status_text(x) for x in (0, 3, -9, None)] == ["0", "3", "137", "none"],
       "statuses as the shell said them (signal: 128+N; did not end: none)")

    with tempfile.TemporaryDirectory() as d:
        shm, tmp = os.path.join(d, "shm"), os.path.join(d, "tmp")
        for p in ("shm/nfabric-aaaaaaaaaaaa-run-5.5", "tmp/nfabric-aaaaaaaaaaaa-run-5.5",
                  "shm/nfabric-bbbbbbbbbbbb-run-1.1", "shm/other"):
            os.makedirs(os.path.join(d, p))
        asked = []

        def procs(env, not_env=None, kill=False):
            asked.append((env, not_env, kill))
            return []
        left = iso.leftovers("aaaaaaaaaaaa", "5.5", shm, tmp, procs)
        ok(left == [] and asked == [("NF_RUN_CHECKOUT=aaaaaaaaaaaa", "NF_RUN_ID=5.5", False)],
           "no leftovers: this run's own directories and another checkout's are not", (left, asked))
        os.makedirs(os.path.join(shm, "nfabric-aaaaaaaaaaaa-kept-cluster-k"))
        os.makedirs(os.path.join(tmp, "nfabric-aaaaaaaaaaaa-run-9.9"))
        left = iso.leftovers("aaaaaaaaaaaa", "5.5", shm, tmp, lambda *a: ["42 qemu-system-x86"])
        ok(left == ["42 qemu-system-x86", f"{shm}/nfabric-aaaaaaaaaaaa-kept-cluster-k",
                    f"{tmp}/nfabric-aaaaaaaaaaaa-run-9.9"],
           "leftovers: a process of the checkout, a kept cluster, an ended run's directory", left)


def check_job():
    with tempfile.TemporaryDirectory() as d:
        out = os.path.join(d, "out")
        job = iso.Job(["sh", "-c", "sleep 300 & echo started; sleep 300"], out, dict(os.environ))
        time.sleep(0.3)
        t0 = time.monotonic()
        with contextlib.redirect_stdout(io.StringIO()) as said:
            rc = job.wait(0.5)
        members = iso.group_members(job.pid)
        ok(rc is None and not members and time.monotonic() - t0 < 8
           and "did not end within 0.5 s: stopped" in said.getvalue(),
           "a child that does not end: stopped with its whole group within the bound, and said",
           (rc, members, said.getvalue()))
        job = iso.Job(["sh", "-c", "exit 3"], out, dict(os.environ))
        ok(job.wait(5) == 3 and iso.status_text(job.rc) == "3", "a child's status")
        job.stop()


def check_clean():
    with tempfile.TemporaryDirectory() as d:
        shm, tmp = os.path.join(d, "shm"), os.path.join(d, "tmp")
        ck = "cccccccccccc"
        own_shm, own_tmp = f"{shm}/nfabric-{ck}-run-1.1", f"{tmp}/nfabric-{ck}-run-1.1"
        for p in (own_shm, own_tmp, f"{shm}/nfabric-{ck}-kept-cluster-k", f"{tmp}/nfabric-{ck}-run-2.2",
                  f"{shm}/nfabric-dddddddddddd-run-3.3", f"{d}/real-build", f"{d}/cache",
                  f"{d}/root"):
            os.makedirs(p)
        os.symlink(f"{d}/real-build", f"{d}/root/build")
        for f in ("apt.sources", "prefs", "stamp"):
            write(f"{d}/{f}", "x")
        environ = {"NF_CHECKOUT_ID": ck, "NF_RUN_ID": "1.1", "NF_RUN_SHM": own_shm,
                   "NF_RUN_TMP": own_tmp, "NF_TMP_BASE": tmp, "NF_BUILD_BASE": f"{d}/root/build",
                   "NF_ROOT": f"{d}/root", "NF_CACHE": f"{d}/cache",
                   "NF_APT_LIST": f"{d}/apt.sources", "NF_APT_STAMP": f"{d}/stamp",
                   "NF_SETUP_PACKAGES": "meson ninja-build "}
        asked, out, err = [], [], io.StringIO()

        def procs(env, not_env=None, kill=False):
            asked.append((env, not_env, kill))
            return ["77 sleep"]

        def clean(argv):
            out.clear()
            return iso.clean(argv, environ, shm, procs, out.append, err, f"{d}/prefs")

        ok(clean(["--help"]) == 0 and out == [iso.CLEAN_USAGE.rstrip("\n")] and not asked,
           "clean --help: the usage, nothing removed")
        ok(clean(["--build", "--bogus", "--help"]) == 2 and not out and not asked
           and err.getvalue() == 'nfabric clean: unknown argument "--bogus"\n' + iso.CLEAN_USAGE,
           "clean refuses an unknown argument before doing anything: its name, the usage, status 2",
           err.getvalue())
        rc = clean([])
        ok(rc == 0 and out == ["clean: stopped processes of this checkout: 77 sleep ",
                               f"clean: removed {shm}/nfabric-{ck}-kept-cluster-k",
                               f"clean: removed {tmp}/nfabric-{ck}-run-2.2",
                               "clean: done (2 leftovers of earlier runs removed)"]
           and asked == [(f"NF_RUN_CHECKOUT={ck}", "NF_RUN_ID=1.1", True)]
           and os.path.isdir(own_shm) and os.path.isdir(own_tmp)
           and os.path.isdir(f"{shm}/nfabric-dddddddddddd-run-3.3"),
           "clean: the checkout's processes and leftovers go; this run's and another checkout's stay",
           out)
        rc = clean(["--all"])
        ok(rc == 0 and out == ["clean: stopped processes of this checkout: 77 sleep ",
                               f"clean: removed the build directory {d}/real-build",
                               f"clean: removed the download cache {d}/cache",
                               f"clean: removed {d}/apt.sources", f"clean: removed {d}/prefs",
                               f"clean: removed {d}/stamp",
                               "clean: the packages the set-up installs are left installed; to "
                               "remove them: apt-get remove meson ninja-build ",
                               "clean: done (0 leftovers of earlier runs removed)"]
           and not os.path.lexists(f"{d}/root/build") and not os.path.exists(f"{d}/cache"),
           "clean --all: the build directory and its link, the cache, the apt entries", out)


def check_host():
    with tempfile.TemporaryDirectory() as d:
        before = os.path.join(d, "host-before")
        snap = ["apt\t/etc/apt/sources.list\tabc", "mount\t/\toverlay overlay",
                "node\t/dev/null\tchar 1:3 mode 0666 owner 0:0"]
        write(before, "".join(s + "\n" for s in snap))
        run_dirs = (os.path.join(d, "shm-run"), os.path.join(d, "tmp-run"))
        for r in run_dirs:
            os.makedirs(os.path.join(r, "cluster-x"))
            write(os.path.join(r, "owner"), "1 2\n")
            write(os.path.join(r, "host-before"), "")
            write(os.path.join(r, "state"), "")
            write(os.path.join(r, "test-counts"), "lint 31 0\n")

        def take(lines):
            def snapshot(path, checkout, run_id, tmp):
                write(path, "".join(s + "\n" for s in lines))
            return snapshot
        asked, out = [], []

        def procs(env, not_env=None, kill=False):
            asked.append((env, kill))
            return []
        rc = hostcheck.check(before, os.path.join(d, "after"), "5.5", run_dirs, "ck", "/tmp",
                             procs, take(snap), out.append)
        ok(rc == 0 and out == ["ok 1 - no process of this run is left running",
                               "ok 1 - host: 1 apt item(s) as before the run",
                               "ok 2 - host: 1 mount item(s) as before the run",
                               "ok 3 - host: 1 node item(s) as before the run"]
           and asked == [("NF_RUN_ID=5.5", False)]
           and all(sorted(os.listdir(r)) == ["host-before", "owner", "test-counts"]
                   for r in run_dirs),
           "host check passes: 4 lines as the shell printed them; the run's directories emptied "
           "but for owner, host-* and test-counts", out)
        out.clear()
        asked.clear()
        changed = snap[:2] + ["node\t/dev/null\tchar 1:3 mode 0755 owner 0:0",
                              "netns\tnf0\tpresent"]
        rc = hostcheck.check(before, os.path.join(d, "after"), "5.5", run_dirs, "ck", "/tmp",
                             lambda env, not_env=None, kill=False: asked.append(kill) or ["9 qemu"],
                             take(changed), out.append)
        ok(rc == 1 and out == [
            "not ok 1 - a process of this run is left running: 9 qemu",
            "ok 1 - host: 1 apt item(s) as before the run",
            "ok 2 - host: 1 mount item(s) as before the run",
            "not ok 3 - host: netns nf0 new: present",
            "ok 4 - host: 0 netns item(s) as before the run",
            "not ok 5 - host: node /dev/null was char 1:3 mode 0666 owner 0:0, "
            "now char 1:3 mode 0755 owner 0:0",
            "ok 6 - host: 0 node item(s) as before the run"] and asked == [False, True],
           "host check fails: the process left (then stopped), a new namespace, /dev/null's mode",
           out)
        lines = nfhost.snapshot_lines("ffffffffffff", "1.1", d)
        ok(any(x.startswith("node\t/dev/null\t") for x in lines)
           and any(x.startswith("mount\t") for x in lines),
           "a snapshot of this machine has its nodes and mounts", lines[:3])


def check_environ():
    """A process in the middle of its exec reads an empty environment for an
    instant: it is read again, not missed; a kernel thread is not."""
    reads = [b"", b"", b"NF_RUN_CHECKOUT=abc\0HOME=/"]

    class Fake(io.BytesIO):
        def __init__(self, path, mode):
            super().__init__(reads.pop(0) if path.endswith("environ") else b"")

    nfhost.open = Fake
    real = nfhost.never_environ
    try:
        nfhost.never_environ = lambda pid: False
        got = nfhost.environ(4242)
        ok(got == [b"NF_RUN_CHECKOUT=abc", b"HOME=/"] and not reads,
           "an environment read empty mid-exec is read again until it is there", got)
        nfhost.never_environ = lambda pid: True
        reads[:] = [b"", b"X=1"]
        ok(nfhost.environ(4242) == [] and reads == [b"X=1"],
           "a kernel thread's or zombie's empty environment is read once")
    finally:
        del nfhost.open
        nfhost.never_environ = real
    child = subprocess.Popen(["true"])
    child.wait()
    ok(real(child.pid) and not real(os.getpid()),
       "a process that is gone has no environment to wait for; this process has one")


def check_suite():
    with tempfile.TemporaryDirectory() as d:
        rc, lines, s, took, (shm, tmp, run_tmp, ck) = run_suite(d, False, 0)
        taps = [x for x in lines if not x.startswith("#")]
        want = [
            f"ok 1 - scripts/nfabric demo (demo: 3 passed, 0 failed) leaves no process, nothing in "
            f"/dev/shm or {tmp}, /dev/null mode 666",
            "ok 2 - two checkouts' clusters at once: each device's state in its own run's directory",
            "ok 3 - the first checkout's 2-host cluster (nfabric-multihost agg) passed while the "
            "other ran (status 0)",
            "ok 4 - the second checkout's 2-host cluster (nfabric-multihost agg) passed while the "
            "other ran (status 0)",
            f"ok 5 - checkout {ck}'s cluster run left no process and nothing in /dev/shm or {tmp}",
            f"ok 6 - checkout {s.ck2}'s cluster run left no process and nothing in /dev/shm or {tmp}",
            "ok 7 - scripts/nfabric test unit beside another test run: 9 passed, 0 failed, its host "
            "check passed (status 0)",
            "ok 8 - scripts/nfabric test pybind beside another test run: 9 passed, 0 failed, its "
            "host check passed (status 0)",
            "ok 9 - host DDP job 1 of 2 at once (train --spawn 2, default device files and port): "
            "both ranks end equal (status 0)",
            "ok 10 - host DDP job 2 of 2 at once (train --spawn 2, default device files and port): "
            "both ranks end equal (status 0)",
            "ok 11 - the two DDP jobs removed their device files",
            "ok 12 - a run killed with SIGKILL leaves its guest's QEMU (pid ",
            "ok 13 - the next run of the checkout stopped that QEMU and removed the killed run's "
            "directories, and said so"]
        good = (rc == 0 and len(taps) == 13
                and all(t.startswith(w) if i in (1, 11) else t == w
                        for i, (t, w) in enumerate(zip(taps, want))))
        ok(good, "the suite against a stand-in nfabric: 13 ok, as the shell's lines", "\n".join(lines))
        ok(f"/nfabric-{ck}-run-" in taps[1] and f"/nfabric-{s.ck2}-run-" in taps[1]
           and any(x.startswith("#   [nfabric] removed what an earlier run") for x in lines),
           "each checkout's state seen in its own run's directory; the next run's words as comments",
           "\n".join(lines))
        ok(os.listdir(shm) == [] and os.listdir(run_tmp) == []
           and all(not j.running() for j in s.jobs),
           "nothing left: no leftovers, the second checkout removed, every child reaped",
           (os.listdir(shm), os.listdir(run_tmp)))

    with tempfile.TemporaryDirectory() as d:
        rc, lines, s, took, (shm, tmp, run_tmp, ck) = run_suite(d, True, 1, {"cluster": 3, "mark": 3})
        taps = [x for x in lines if not x.startswith("#")]
        bad = [t.split(" - ")[0] for t in taps if t.startswith("not ok")]
        ok(rc == 1 and len(taps) == 11
           and bad == ["not ok 1", "not ok 2", "not ok 3", "not ok 5", "not ok 8", "not ok 9",
                       "not ok 11"]
           and " sleep " in taps[0] and f"{shm}/nfabric-{ck}-kept-x ), /dev/null" in taps[0]
           and "(status none)" in taps[2] and "#   hung" in lines
           and "#     [pybind] not ok 3 - a bad argument" in lines
           and taps[7].endswith("7 passed, 1 failed, its host check passed (status 1)")
           and taps[8] == "not ok 9 - PyTorch for the DDP jobs (installing E: no torch for you )",
           "a failing run: the demo's leftovers named, a hung cluster stopped (status none), the "
           "test run's failures, no PyTorch, a next run that did not clean up", "\n".join(lines))
        ok(took < 40 and all(not j.running() and not iso.group_members(j.pid) for j in s.jobs)
           and os.listdir(run_tmp) == []
           and not [x for x in os.listdir(shm) if "-run-" in x]
           and any(x.startswith("# removed what the killed run still left: ") for x in lines),
           "its waits bounded, its children's groups stopped, the killed run's leftovers removed",
           (took, os.listdir(shm), lines[-3:]))


def main():
    iso.stop_on_signals()       # a timeout's SIGTERM: the suites' clean-up runs
    return testkit.run(check_units, check_job, check_clean, check_host, check_environ,
                       check_suite)


if __name__ == "__main__":
    sys.exit(main())
