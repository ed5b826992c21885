# SPDX-License-Identifier: GPL-2.0-or-later
"""The machine a run of scripts/nfabric shares (scripts/lib/run.sh runs
this file as a program; scripts/nfmachine's hostcheck and isolation import
it).

  procs --env K=V [--not-env K=V] [--kill]
      processes whose environment holds K=V (and not the --not-env entry),
      not this process nor its ancestors; one "pid comm" a line; --kill stops
      them (SIGTERM, SIGKILL after 3 s)
  free-port
      a TCP port on 127.0.0.1 that nothing listens on now
  snapshot --checkout ID --run RUN --tmp DIR
      the state the host check compares, one item a line
  compare BEFORE AFTER
      TAP lines, one per item of BEFORE and AFTER; status 1 if any differs
"""

import argparse
import hashlib
import os
import re
import signal
import socket
import stat
import sys
import time

# Device nodes and directories everyone shares: their type, mode and owner.
NODES = ["/dev/null", "/dev/zero", "/dev/full", "/dev/random", "/dev/urandom",
         "/dev/tty", "/dev/shm", "/tmp", "/var/tmp"]
# What the set-up adds to apt on purpose (README, "What the set-up adds").
APT_OURS = {"/etc/apt/sources.list.d/nfabric.sources",
            "/etc/apt/preferences.d/nfabric"}
OWN_NAME = re.compile(r"^nfabric-([0-9a-f]{12})-(run|kept)-(.+)$")


def ancestors():
    pids, pid = set(), os.getpid()
    while pid > 1:
        pids.add(pid)
        try:
            with open("/proc/%d/stat" % pid) as f:
                pid = int(f.read().rsplit(")", 1)[1].split()[1])
        except (OSError, ValueError, IndexError):
            break
    return pids


def never_environ(pid):
    """Whether PID has no environment to read: a kernel thread (PF_KTHREAD)
    or a zombie (or gone)."""
    try:
        with open("/proc/%d/stat" % pid) as f:
            fields = f.read().rsplit(")", 1)[1].split()
        return fields[0] in ("Z", "X") or bool(int(fields[6]) & 0x00200000)
    except (OSError, ValueError, IndexError):
        return True


def environ(pid, tries=20):
    """PID's environment.  In the middle of an exec a process's reads empty
    for an instant: a process with none that is no kernel thread is read
    again (up to TRIES times, 5 ms apart), so that none is missed."""
    for _ in range(tries):
        try:
            with open("/proc/%d/environ" % pid, "rb") as f:
                data = f.read()
        except OSError:
            return []
        if data or never_environ(pid):
            break
        time.sleep(0.005)
    return data.split(b"\0") if data else []


def comm(pid):
    try:
        with open("/proc/%d/comm" % pid) as f:
            return f.read().strip()
    except OSError:
        return "?"


def pids_with(env, not_env=None):
    want = env.encode()
    avoid = not_env.encode() if not_env else None
    skip = ancestors()
    out = []
    for name in os.listdir("/proc"):
        if not name.isdigit() or int(name) in skip:
            continue
        e = environ(int(name))
        if want in e and (avoid is None or avoid not in e):
            out.append(int(name))
    return sorted(out)


def alive(pid):
    try:
        with open("/proc/%d/stat" % pid) as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def stop(pids):
    """PIDS stopped: SIGTERM, SIGKILL after 3 s to those still running."""
    for p in pids:
        try:
            os.kill(p, signal.SIGTERM)
        except OSError:
            pass
    end = time.monotonic() + 3
    while time.monotonic() < end and any(alive(p) for p in pids):
        time.sleep(0.05)
    for p in pids:
        if alive(p):
            try:
                os.kill(p, signal.SIGKILL)
            except OSError:
                pass


def procs(env, not_env=None, kill=False):
    """The processes whose environment holds ENV (and not NOT_ENV), not this
    process nor its ancestors: "pid comm" each.  With kill they are stopped
    (stop())."""
    pids = pids_with(env, not_env)
    lines = ["%d %s" % (p, comm(p)) for p in pids]
    if kill and pids:
        stop(pids)
    return lines


def cmd_procs(a):
    # Said before they are stopped (a reader among them still reads).
    pids = pids_with(a.env, a.not_env)
    for p in pids:
        print(p, comm(p))
    sys.stdout.flush()
    if a.kill and pids:
        stop(pids)
    return 0


def free_port():
    """A TCP port on 127.0.0.1 that nothing listens on now (nfmachine's;
    guest/python/nfabric/hostrun.py has the package's)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def cmd_free_port(a):
    print(free_port())
    return 0


def run_alive(run):
    """True if the run named RUN (pid.starttime) still runs."""
    pid, _, start = run.partition(".")
    try:
        with open("/proc/%s/stat" % pid) as f:
            return f.read().rsplit(")", 1)[1].split()[19] == start
    except (OSError, IndexError):
        return False


def owner_alive(path):
    """True if the run that owns directory PATH (its `owner` file) runs, or
    is making it (no owner file yet, PATH less than a minute old)."""
    owner = os.path.join(path, "owner")
    try:
        if not os.path.getsize(owner):
            raise FileNotFoundError(owner)
    except OSError:
        try:
            return time.time() - os.stat(path).st_mtime < 60
        except OSError:
            return False
    try:
        with open(owner) as f:
            pid, start = f.read().split()
        with open("/proc/%s/stat" % pid) as f:
            return f.read().rsplit(")", 1)[1].split()[19] == start
    except (OSError, ValueError, IndexError):
        return False


def project_entries(d, checkout, run):
    """Entries of D that are the project's and this run must answer for:
    names starting with "nfabric", less other checkouts' and other live
    runs' of this checkout, and less this run's own directory (removed
    at its exit, after the check)."""
    out = []
    try:
        names = sorted(os.listdir(d))
    except OSError:
        return out
    for n in names:
        if not n.startswith("nfabric"):
            continue
        m = OWN_NAME.match(n)
        if m:
            if m.group(1) != checkout:
                continue
            if m.group(2) == "run":
                if m.group(3) == run:
                    continue
                if owner_alive(os.path.join(d, n)):
                    continue
        out.append(n)
    return out


def snapshot_lines(checkout, run_id, tmp):
    """The state the host check compares: "kind\tkey\tvalue" lines."""
    items = []
    for n in NODES:
        try:
            st = os.lstat(n)
        except OSError:
            items.append(("node", n, "missing"))
            continue
        kind = ("char %d:%d" % (os.major(st.st_rdev), os.minor(st.st_rdev))
                if stat.S_ISCHR(st.st_mode) else
                "dir" if stat.S_ISDIR(st.st_mode) else
                "link" if stat.S_ISLNK(st.st_mode) else "file")
        items.append(("node", n, "%s mode %04o owner %d:%d" % (
            kind, stat.S_IMODE(st.st_mode), st.st_uid, st.st_gid)))
    for d in ("/dev/shm", tmp):
        for n in project_entries(d, checkout, run_id):
            items.append(("file", os.path.join(d, n), "present"))
    # This checkout's processes: of this run, or of a run that ended
    # (other live runs of the checkout answer for their own).  A run's own
    # shell carries no NF_RUN_ID (it names itself after it started).
    for p in pids_with("NF_RUN_CHECKOUT=" + checkout):
        run = None
        for e in environ(p):
            if e.startswith(b"NF_RUN_ID="):
                run = e[10:].decode(errors="replace")
        if run is None or (run != run_id and run_alive(run)):
            continue
        try:
            with open("/proc/%d/cmdline" % p, "rb") as f:
                cmd = f.read().replace(b"\0", b" ").decode(errors="replace")[:160]
        except OSError:
            continue
        items.append(("process", "%s %d" % (comm(p), p), cmd.strip()))
    with open("/proc/self/mountinfo") as f:
        for line in f:
            fields = line.split()
            sep = fields.index("-")
            items.append(("mount", fields[4], "%s %s" % (fields[sep + 1], fields[sep + 2])))
    for d in ("/run/netns", "/var/run/netns"):
        try:
            for n in sorted(os.listdir(d)):
                items.append(("netns", n, "present"))
        except OSError:
            pass
    apt = ["/etc/apt/sources.list"]
    for d in ("/etc/apt/sources.list.d", "/etc/apt/preferences.d"):
        try:
            apt += [os.path.join(d, n) for n in sorted(os.listdir(d))]
        except OSError:
            pass
    for p in apt:
        if p in APT_OURS:
            continue
        try:
            with open(p, "rb") as f:
                items.append(("apt", p, hashlib.sha256(f.read()).hexdigest()[:16]))
        except OSError:
            pass
    return ["%s\t%s\t%s" % item for item in sorted(set(items))]


def snapshot(a):
    for line in snapshot_lines(a.checkout, a.run, a.tmp):
        print(line)
    return 0


def load(path):
    out = {}
    with open(path) as f:
        for line in f:
            kind, key, val = line.rstrip("\n").split("\t", 2)
            out.setdefault((kind, key), []).append(val)
    return out


def compare(before, after):
    """TAP lines, one per item of BEFORE and AFTER (load()ed snapshots) that
    differs and one per kind that does not; and the number that failed."""
    out = []
    n, bad = 0, 0
    kinds = sorted({k for k, _ in before} | {k for k, _ in after})
    for kind in kinds:
        keys = sorted({k for c, k in before if c == kind} | {k for c, k in after if c == kind})
        same = 0
        for key in keys:
            b, f = before.get((kind, key)), after.get((kind, key))
            if b == f:
                same += 1
                continue
            n += 1
            bad += 1
            if b is None:
                what = "new: %s" % "; ".join(f)
            elif f is None:
                what = "gone (was %s)" % "; ".join(b)
            else:
                what = "was %s, now %s" % ("; ".join(b), "; ".join(f))
            out.append("not ok %d - host: %s %s %s" % (n, kind, key, what))
        n += 1
        out.append("ok %d - host: %d %s item(s) as before the run" % (n, same, kind))
    for kind in ("node", "mount", "apt"):
        if kind not in kinds:
            n += 1
            bad += 1
            out.append("not ok %d - host: no %s item in the snapshots" % (n, kind))
    return out, bad


def cmd_compare(a):
    lines, bad = compare(load(a.before), load(a.after))
    for line in lines:
        print(line)
    return 1 if bad else 0


def main():
    ap = argparse.ArgumentParser(prog="nfhost.py")
    sub = ap.add_subparsers(dest="cmd", required=True)
    p = sub.add_parser("procs")
    p.add_argument("--env", required=True)
    p.add_argument("--not-env")
    p.add_argument("--kill", action="store_true")
    sub.add_parser("free-port")
    p = sub.add_parser("snapshot")
    p.add_argument("--checkout", required=True)
    p.add_argument("--run", required=True)
    p.add_argument("--tmp", default="/tmp")
    p = sub.add_parser("compare")
    p.add_argument("before")
    p.add_argument("after")
    a = ap.parse_args()
    return {"procs": cmd_procs, "free-port": cmd_free_port,
            "snapshot": snapshot, "compare": cmd_compare}[a.cmd](a)


if __name__ == "__main__":
    sys.exit(main())
