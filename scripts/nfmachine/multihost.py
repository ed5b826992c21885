# SPDX-License-Identifier: GPL-2.0-or-later
"""The `multihost` test suite: several hosts, one shared device
(docs/multihost.md).

Each case boots its hosts (hosts.Cluster) in its own directory under
build/test-logs/multihost/, acts on them (SIGKILL, system_reset, a
truncated state file, the fabric manager, SIGSTOP) and prints TAP: its
own "ok - ..." lines, and each host's own TAP lines from its console.
The refusals at start-up (d) run QEMU alone, without a guest.
"""

import os
import random
import re
import shutil
import signal
import subprocess
import sys
import threading
import time
import traceback
from typing import Callable, List, Sequence, TextIO, Tuple

from . import qmp, topology
from .tap import Tap
from .vm import thread_event_loop
from .hosts import (Cluster, env, firmware, read, relay_lines, state_lines, state_tool,
                    state_value)

# (g): each host enables a window of its own, completes its round and
# waits for it; the state file is truncated under them meanwhile.
CORRUPT_CMD = (
    'w=$((NFABRIC_RANK * 2)); nfabricctl set-window $w --base $((NFABRIC_RANK * 0x10000))'
    ' --size 4K --counters $((0x100000 + NFABRIC_RANK * 0x10000)) --path gbinary --width 8;'
    ' nfabricctl complete $w; echo NFABRIC-MARK; nfabricctl wait $w --timeout 300000;'
    ' echo "wait-status=$?"; nfabricctl clear $w; echo "clear-status=$?";'
    ' nfabricctl info | grep -E "enabled-mask|last-error"')

# (h): an attacker destroys its own region, then tries Sanitize and poison
# injection and clearing over host 0's data and counters (as root through
# the kernel's sysfs and debugfs files; a Sanitize runs in the background:
# it waits until it is over).
ATTACK_CMD = '''cxl destroy-region -f region0 >/dev/null 2>&1; echo "destroy-status=$?"
echo 1 > /sys/bus/cxl/devices/mem0/security/sanitize; echo "sanitize-status=$?"
i=0; while [ "$(cat /sys/bus/cxl/devices/mem0/security/state)" = sanitize ] && [ $i -lt 600 ]; do sleep 0.1; i=$((i + 1)); done
echo "security-state=$(cat /sys/bus/cxl/devices/mem0/security/state) after $i waits"
grep -q " /sys/kernel/debug " /proc/mounts || mount -t debugfs debugfs /sys/kernel/debug
for a in 0xc00000 0x200000; do
  echo $a > /sys/kernel/debug/cxl/mem0/inject_poison; echo "inject-$a-status=$?"
  echo $a > /sys/kernel/debug/cxl/mem0/clear_poison; echo "clear-$a-status=$?"
done'''

# What each attack must get: its status line's name, the mailbox command
# the device refuses, its opcode and return code.
ATTACKS = (("sanitize", "SANITIZE_OVERWRITE", "0x4400", "0x13"),
           ("inject-0xc00000", "MEDIA_AND_POISON_INJECT_POISON", "0x4301", "0xf"),
           ("clear-0xc00000", "MEDIA_AND_POISON_CLEAR_POISON", "0x4302", "0xf"),
           ("inject-0x200000", "MEDIA_AND_POISON_INJECT_POISON", "0x4301", "0xf"),
           ("clear-0x200000", "MEDIA_AND_POISON_CLEAR_POISON", "0x4302", "0xf"))


def case_dir(name: str) -> str:
    return os.path.join(env("NF_BUILD"), "test-logs", "multihost", name)


def word(cond: bool) -> str:
    return "ok" if cond else "not ok"


# ---- (a), (b), (l): every host runs one command ---------------------------

def run(tap: Tap, name: str, n: int, cmd: str, *, cpus: int, mem_mib: int) -> None:
    """N hosts run CMD; each host's TAP, the cluster's report, a verdict."""
    with Cluster(case_dir(name)) as c:
        c.prepare()
        for r in range(n):
            c.boot(r, n, cmd, cpus=cpus, mem_mib=mem_mib, timeout=600)
        bad = [c.status(r, 660) != 0 for r in range(n)]
        c.finish()
        tap.lines(c.tap(n))
        tap.lines(c.report(n), "# ")
        if any(bad):
            tap.line(f"not ok - {name}: a host failed (logs in {c.d})")
        else:
            tap.line(f"ok - {name}: every host exited 0")


# ---- (c) SIGKILL of a host mid-round; it is started again and rejoins ------

# The survivor looks for the faults' CXL event records in its kernel's
# trace (cxl:cxl_generic_event, register version 1.8): tracing on first.
KILL_CMD = ("mount -t tracefs nodev /sys/kernel/tracing 2>/dev/null; "
            "echo 1 > /sys/kernel/tracing/events/cxl/cxl_generic_event/enable; "
            "nfabric-multihost kill")

def kill(tap: Tap) -> None:
    with Cluster(case_dir("kill")) as c:
        c.prepare()
        for r in (0, 1):
            c.boot(r, 2, KILL_CMD, cpus=1, mem_mib=1024, timeout=600)
        if not c.wait_mark(1, 300):
            tap.line("not ok - kill: host 1 never reached the middle of its round")
            return
        pid = c.pid(1)
        os.kill(pid, signal.SIGKILL)
        tap.line(f"# kill: SIGKILL to host 1's QEMU (pid {pid}) mid-round")
        rc1 = c.status(1, 60)
        tap.ok(rc1 != 0, f"kill: host 1's QEMU is gone (status {rc1})")
        shutil.copyfile(c.path("host1.log"), c.path("host1-killed.log"))
        # Started again: the same head joins the same device.
        c.boot(1, 2, "nfabric-multihost rejoin", cpus=1, mem_mib=1024, timeout=600)
        rc0, rc1 = c.status(0, 660), c.status(1, 660)
        c.finish()
        tap.lines(c.tap(2))
        tap.ok(rc0 == 0 and rc1 == 0, f"kill: the survivor (status {rc0}) and the"
               f" restarted host (status {rc1}) finish")


# ---- (f) system_reset of a host mid-round ----------------------------------

def reset(tap: Tap) -> None:
    with Cluster(case_dir("reset")) as c:
        c.prepare()
        for r in (0, 1):
            c.boot(r, 2, "nfabric-multihost reset", cpus=1, mem_mib=1024, timeout=600,
                   reboot=r == 1)
        if not c.wait_mark(1, 300):
            tap.line("not ok - reset: host 1 never reached the middle of its round")
            return
        try:
            reply = qmp.command(c.qmp(1), "system_reset", None)
            tap.line(f"ok - reset: system_reset of host 1 mid-round ({reply})")
        except (qmp.QMPError, OSError, EOFError) as exc:
            tap.line(f"not ok - reset: system_reset of host 1 failed: {exc}")
        rc0, rc1 = c.status(0, 660), c.status(1, 660)
        c.finish()
        tap.lines(c.tap(2))
        tap.lines([line for line in c.console(1).splitlines()
                   if re.match(r"NFABRIC-(READY|NOT-READY)", line)], "# host 1: ")
        tap.ok(rc0 == 0 and rc1 == 0, f"reset: both hosts finish (status {rc0}, {rc1})")


# ---- (g) the state file truncated under 2 running hosts --------------------

def corrupt_ok(console: str, messages: str) -> bool:
    """Host's guest saw its wait end with STATE_FAILED, its clear refused,
    error 16 and no window; its QEMU said it refuses the device's accesses."""
    return all(re.search(p, console, re.M) for p in (
        r"^wait-status=1", r"wait [0-9]*: .*HEAD_INFO.STATE_FAILED", r"^clear-status=1",
        r"^last-error: 16", r"^enabled-mask: 0x00000000")) and \
        "refuses the device's accesses" in messages


def corrupt(tap: Tap) -> None:
    """No head may die of it (SIGBUS) or hang; each reports it and refuses
    the device's accesses."""
    with Cluster(case_dir("corrupt")) as c:
        c.prepare()
        for r in (0, 1):
            c.boot(r, 2, CORRUPT_CMD, cpus=1, mem_mib=1024, timeout=300)
        for r in (0, 1):
            if not c.wait_mark(r, 200):
                tap.line(f"not ok - corrupt: host {r} never enabled its window")
                return
        os.truncate(c.path("state"), 0)
        tap.line(f"# corrupt: {c.d}/state truncated to 0 bytes under both hosts")
        good = True
        for r in (0, 1):
            rc = c.status(r, 300)
            msgs = c.messages(r)
            if rc == 0 and corrupt_ok(c.console(r), msgs):
                said = re.search(r"the state file was [^;]*", msgs)
                tap.line(f"ok - corrupt: host {r}'s QEMU lives on, reports it"
                         f" ({said.group(0) if said else ''}), its guest's wait for the round"
                         " (nfabricctl wait, 300 s timeout) ends at once with STATE_FAILED,"
                         " then it sees error 16 and no window")
            else:
                tap.line(f"not ok - corrupt: host {r} (status {rc}; console {c.d}/host{r}.log,"
                         f" QEMU {c.d}/host{r}.out)")
                good = False
        c.finish()
        if not good:
            for name in sorted(f for f in os.listdir(c.d) if re.fullmatch(r"host.*\.log", f)) + \
                    sorted(f for f in os.listdir(c.d) if re.fullmatch(r"host.*\.out", f)):
                tap.lines([line for line in read(c.path(name)).splitlines()
                           if re.search(r"Bus error|wait|clear-status|last-error", line)], "# ")


# ---- (h) memory-wide mailbox commands from other hosts ---------------------

def attack_lines(d: str, n: int, r: int, console: str, messages: str) -> List[str]:
    """The checks of attacker R (in D): its region destroyed, then each
    attack failing in its guest and refused by the device (MESSAGES: its
    QEMU's)."""
    name = f"sanitize{n}"
    if re.search(r"^destroy-status=0$", console, re.M):
        lines = [f"ok - {name}: host {r} destroyed its own region (the kernel allows"
                 " Sanitize only then)"]
    else:
        lines = [f"not ok - {name}: host {r} could not destroy its region (console"
                 f" {d}/host{r}.log)"]
    for what, cmd, op, code in ATTACKS:
        pat = rf"^{re.escape(what)}-status="
        said = re.search(pat + r".*$", console, re.M)
        good = bool(re.search(pat + "[1-9]", console, re.M)) and \
            f"mailbox command {cmd} ({op}) refused (return code {code})" in messages
        lines.append(f"{word(good)} - {name}: host {r}'s {what} fails in its guest"
                     f" ({said.group(0) if said else ''}) and the device refused {cmd}"
                     f" with return code {code}")
    return lines


def sanitize(tap: Tap, n: int) -> None:
    """Host 0 the victim (nfabric-multihost sanitize), hosts 1..N-1 attack
    it together (ATTACK_CMD); host 0 finds its data and round intact."""
    mem = 768 if n > 2 else 1024
    with Cluster(case_dir(f"sanitize{n}")) as c:
        c.prepare()
        c.boot(0, n, "nfabric-multihost sanitize", cpus=1, mem_mib=mem, timeout=600)
        if not c.wait_mark(0, 300):
            tap.line(f"not ok - sanitize{n}: host 0 never got its data and round ready")
            return
        for r in range(1, n):
            c.boot(r, n, ATTACK_CMD, cpus=1, mem_mib=mem, timeout=300,
                   extra=["-d", "guest_errors"])
        bad = [c.status(r, 360) != 0 for r in range(1, n)]
        bad.append(c.status(0, 400) != 0)
        c.finish()
        tap.lines(c.tap(1))
        for r in range(1, n):
            tap.lines(attack_lines(c.d, n, r, c.console(r).replace("\r", ""), c.messages(r)))
        tap.ok(not any(bad), f"sanitize{n}: all {n} hosts finish")


# ---- the fabric manager's cases: hosts started paused ----------------------

def boot_paused(tap: Tap, c: Cluster, name: str, n: int, cmd: str, *, mem_mib: int,
                timeout: float) -> bool:
    """A fresh device and N hosts on it, started paused (-S) so that the
    fabric manager assigns jobs before any guest runs; True once every
    head attached, else "not ok" naming the head that did not."""
    c.prepare()
    for r in range(n):
        c.boot(r, n, cmd, cpus=1, mem_mib=mem_mib, timeout=timeout, extra=["-S"])
    for r in range(n):
        if not c.wait_attached(r):
            tap.line(f"not ok - {name}: head {r} never attached")
            return False
    return True


def jobs_fm(n: int, signal_window: str) -> List[str]:
    """(i): heads 0..N-2 (the victims) in job 0, head N-1 in job 1."""
    return ["--job", "0", "--heads", f"0-{n - 2}", "--windows", f"0-7,15{signal_window}",
            "--mem", "0+16M", "--job", "1", "--heads", str(n - 1), "--windows", "8-13",
            "--mem", "16M+16M"]


def jobs(tap: Tap, n: int) -> None:
    """(i) a hostile host in a job of its own: the attacker (head N-1, job
    1) tries every attack of issue 21 on job 0 (nfabric-multihost jobs),
    then job 0 gets window 14 too (the victims' sign to check their data,
    counts and round)."""
    last = n - 1
    with Cluster(case_dir(f"jobs{n}")) as c:
        if not boot_paused(tap, c, f"jobs{n}", n, "nfabric-multihost jobs", mem_mib=768,
                           timeout=600):
            return
        rc, out = state_tool("fm", c.path("state"), *jobs_fm(n, ""))
        if rc == 0:
            tap.line(f"ok - jobs{n}: the fabric manager assigned the jobs ({out})")
        else:
            tap.line(f"not ok - jobs{n}: the fabric manager's assignment was refused: {out}")
        for r in range(last):
            c.cont(r)
        if not c.wait_mark(0, 300):
            tap.line(f"not ok - jobs{n}: the victims never got their data and round ready")
            return
        c.cont(last)
        bad = [c.status(last, 400) != 0]
        # The attack is over: job 0 gets window 14 (its hosts' sign).
        rc, out = state_tool("fm", c.path("state"), *jobs_fm(n, ",14"))
        if rc != 0:
            tap.line(f"not ok - jobs{n}: the fabric manager's second assignment was refused: {out}")
        bad += [c.status(r, 400) != 0 for r in range(last)]
        c.finish()
        tap.lines(c.tap(n))
        tap.lines([line for line in state_lines(c.path("state")) or []
                   if re.match(r"(fm_|job|head[0-9]+_job|range)", line)], "# state: ")
        tap.ok(not any(bad), f"jobs{n}: every host finishes ({n} hosts: {n - 1} victims,"
               " 1 attacker)")


def reassign_fm(n: int, step: str) -> List[str]:
    """(m): the assignment of each step (job 0: hosts 0..N-2, job 1: the
    last host)."""
    j0 = ["--job", "0", "--heads", f"0-{n - 2}"]
    j1 = ["--job", "1", "--heads", str(n - 1)]
    return {
        "start": j0 + ["--windows", "0-7", "--mem", "0+16M"] + j1 + ["--windows", "8-13", "--mem", "16M+16M"],
        "memory": j0 + ["--windows", "0-7,14", "--mem", "0+32M"] + j1 + ["--windows", "8-13", "--mem", "32M+16M"],
        "slot": j0 + ["--windows", "0-7,9", "--mem", "0+16M"] + j1 + ["--windows", "8,10-13", "--mem", "16M+16M"],
        "ask": j0 + ["--windows", "0-7", "--mem", "0+16M"] + j1 + ["--windows", "8-14", "--mem", "16M+16M"],
    }[step]


def reassign(tap: Tap, n: int) -> None:
    """(m) the fabric manager moves memory between jobs while windows are
    enabled (docs/multihost.md "Reassignment"): job 1 enables window 9 over
    20 MiB (counters at 24 MiB) in its memory; giving that memory, or
    window 9's slot, to job 0 is refused while it is enabled; job 1 is
    asked (window 14) to disable it; then the memory goes to job 0."""
    last = n - 1
    name = f"reassign{n}"
    with Cluster(case_dir(name)) as c:
        if not boot_paused(tap, c, name, n, "nfabric-multihost reassign", mem_mib=768,
                           timeout=600):
            return
        state = c.path("state")
        rc, out = state_tool("fm", state, *reassign_fm(n, "start"))
        tap.ok(rc == 0, f"{name}: the fabric manager assigns job 0 (hosts 0-{n - 2},"
               f" 0-16 MiB) and job 1 (host {last}, 16-32 MiB)", numbered=True)
        for r in range(n):
            c.cont(r)
        if not c.wait_mark(last, 300):
            tap.line(f"not ok - {name}: job 1 never enabled its window")
            return
        rc, out = state_tool("fm", state, *reassign_fm(n, "memory"))
        tap.ok(rc != 0 and "window 9 of job 1 is enabled over 0x1400000+0x10000" in out,
               f"{name}: giving job 1's memory under its enabled window 9 to job 0 is"
               f" refused, naming the window and the range ({out})", numbered=True)
        rc, out = state_tool("fm", state, *reassign_fm(n, "slot"))
        tap.ok(rc != 0 and "window 9 is enabled in job 1" in out,
               f"{name}: moving enabled window 9's slot to job 0 is refused ({out})",
               numbered=True)
        if "range1=0x1000000+0x1000000 job=1 owner=job" not in (state_lines(state) or []):
            ranges = [line for line in state_tool(state)[1].splitlines()
                      if line.startswith("range")]
            tap.ok(False, f"{name}: the refused assignments changed nothing"
                   f" ({''.join(line + ' ' for line in ranges)})", numbered=True)
        rc, out = state_tool("fm", state, *reassign_fm(n, "ask"))
        tap.ok(rc == 0, f"{name}: job 1 is asked to give window 9 up (window 14 in its slots)",
               numbered=True)
        c.wait_for(last, "^REASSIGN-DISABLED", 300)
        rc, out = state_tool("fm", state, *reassign_fm(n, "memory"))
        tap.ok(rc == 0, f"{name}: with window 9 disabled, the memory goes to job 0"
               f" ({out or 'accepted'})", numbered=True)
        bad = [c.status(r, 400) != 0 for r in range(n)]
        c.finish()
        tap.lines(c.tap(n))
        tap.ok(not any(bad), f"{name}: every host finishes ({n - 1} of job 0, 1 of job 1)")


# ---- (j), (n) a host stopped (SIGSTOP) again and again ---------------------

def apart_fm(n: int) -> List[str]:
    """(n): each host in a job of its own, host r's windows and memory as
    nfabric-multihost pause lays them out (its own window, the window it
    enables and their counters, its plain memory); host 1 in job 1."""
    fm = ["--job", "0", "--heads", "0", "--windows", "0,2", "--mem",
          "0x0+0x110000,0x200000+0x100000,0x9000000+0x10000,0x9100000+0x10000,0x9200000+0x100000",
          "--job", "1", "--heads", "1", "--windows", "1", "--mem", "32M+96M"]
    if n > 2:
        fm += ["--job", "2", "--heads", "2", "--windows", "8,12", "--mem",
               "0x120000+0x10000,0x300000+0x100000,0x9020000+0x10000,0x9120000+0x10000,"
               "0x9300000+0x100000"]
    return fm


class StopPlan:
    """Which SIGSTOPs of host 1 count: 5 in all, at least twice where it
    holds no configuration lock and, if it comes, once where it holds it;
    a stop of a kind already had is undone at once."""

    def __init__(self):
        self.k = self.free = self.busy = self.tries = 0

    def more(self) -> bool:
        return self.k < 5 and self.tries < 40

    def keep(self, held: bool) -> bool:
        """A stop (HELD: with the lock) happened: whether it counts."""
        if held:
            # Stopped holding the configuration lock: once is enough.
            if self.busy >= 1 or 5 - self.k <= 2 - self.free:
                return False
            self.busy += 1
        else:
            # Keep the last stop for one holding the lock, for a while.
            if self.free >= 2 and 5 - self.k <= 1 - self.busy and self.tries < 20:
                return False
            self.free += 1
        self.k += 1
        return True


def qmp_worst(paths: Sequence[str]) -> List[int]:
    """Every path's QMP at once: the slowest of 6 query-status 0.2 s apart
    (99999 if it did not answer)."""
    results = [99999] * len(paths)

    def one(i: int) -> None:
        with thread_event_loop():
            try:
                results[i] = qmp.worst_latency_ms(paths[i], 6, 0.2)
            except Exception as exc:   # noqa: BLE001: said, and counted as slow
                print(f"qmp-ms {paths[i]}: {type(exc).__name__}: {exc}", file=sys.stderr)
    threads = [threading.Thread(target=one, args=(i,)) for i in range(len(paths))]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    return results


def pause(tap: Tap, n: int, apart: bool = False) -> None:
    """Host 1 enables, clears and disables a window with a 64 MiB counter
    area in a loop; every other host times its own accesses, register
    writes and enables (nfabric-multihost pause), and its QMP is timed 6
    times during each stop of host 1 (about 1.5 s, 5 times: StopPlan).
    APART: each host in a job of its own (issue 36: nothing of host 1 may
    hold the others up)."""
    name = f"{'apart' if apart else 'pause'}{n}"
    lock = "job1_lock_head" if apart else "job0_lock_head"
    cmd = "nfabric-multihost pause --iters 40" + (" --apart" if apart else "")
    mem = 768 if n > 2 else 1024
    with Cluster(case_dir(name)) as c:
        if not apart:
            c.prepare()
            for r in range(n):
                c.boot(r, n, cmd, cpus=1, mem_mib=mem, timeout=400)
        else:
            if not boot_paused(tap, c, name, n, cmd, mem_mib=mem, timeout=400):
                return
            rc, out = state_tool("fm", c.path("state"), *apart_fm(n))
            tap.ok(rc == 0, f"{name}: the fabric manager puts each host in a job of its"
                   f" own, host 1 (the one stopped) in job 1 ({out})", numbered=True)
            for r in range(n):
                c.cont(r)
        if not c.wait_mark(1, 300):
            tap.line("not ok - pause: host 1 never started its loop")
            return
        pid = c.pid(1)
        plan, worst = StopPlan(), 0
        others = [r for r in range(n) if r != 1]
        while plan.more():
            plan.tries += 1
            time.sleep(random.randint(3, 9) / 10)
            try:
                os.kill(pid, signal.SIGSTOP)
            except OSError:
                break
            try:
                time.sleep(0.05)
                lines = state_lines(c.path("state"))
                held = "unknown" if lines is None else state_value(lines, lock)
                if not plan.keep(held == "1"):
                    continue
                for r, ms in zip(others, qmp_worst([c.qmp(r) for r in others])):
                    tap.line(f"# {name}: stop {plan.k} (host 1"
                             f" {'holding' if held == '1' else 'not holding'} its job's"
                             f" configuration lock): 6 QMP query-status of host {r} in 1.2 s,"
                             f" the slowest answered in {ms} ms")
                    worst = max(worst, ms)
            finally:
                os.kill(pid, signal.SIGCONT)
            time.sleep(1)
        tap.line(f"# {name}: host 1's QEMU (pid {pid}) stopped {plan.k} times for about 1.5 s"
                 f" ({plan.free} not holding its job's configuration lock, {plan.busy} holding"
                 f" it; {plan.tries} stops in all)")
        tap.ok(plan.free >= 2, f"{name}: host 1 was stopped at least twice where it held"
               f" no configuration lock ({plan.free} times)")
        if apart:
            tap.ok(plan.busy >= 1, f"{name}: host 1 was stopped at least once holding its"
                   f" job's configuration lock ({plan.busy} times)")
        tap.ok(worst < 1000, f"{name}: QMP of every other host answered within a second"
               f" while host 1 was stopped (slowest {worst} ms)")
        bad = [c.status(r, 300) != 0 for r in range(n)]
        c.finish()
        tap.lines(c.tap(n))
        tap.ok(not any(bad), f"{name}: all {n} hosts finish")


# ---- (k) each head's own range mapped directly -----------------------------

def own_fm(n: int) -> List[str]:
    """Job 0 (every head) the first 64 MiB, each head 16 MiB of its own
    at 64 MiB + 16 MiB * head."""
    fm = ["--job", "0", "--heads", f"0-{n - 1}", "--windows", "0-15", "--mem", "0+64M"]
    for r in range(n):
        fm += ["--own", f"{r}@{64 + 16 * r}M+16M"]
    return fm


def own(tap: Tap, name: str, n: int, mib: int) -> bool:
    """nfabric-multihost own on N heads, each timing MIB MiB of writes:
    writes to its own range are not seen by the device and read back;
    writes to the job's memory are; a window inside its own range
    aggregates; the other head's range is refused.  True if all passed."""
    with Cluster(case_dir(name)) as c:
        if not boot_paused(tap, c, name, n, f"nfabric-multihost own --bytes {mib}",
                           mem_mib=768, timeout=600):
            return False
        bad = False
        rc, out = state_tool("fm", c.path("state"), *own_fm(n))
        if rc == 0:
            tap.line(f"ok - {name}: the fabric manager gave each of the {n} heads 16 MiB of"
                     f" its own ({out})")
        else:
            tap.line(f"not ok - {name}: the fabric manager's assignment was refused: {out}")
            bad = True
        for r in range(n):
            c.cont(r)
        # While the heads run, their own ranges are not taken from them.
        rc, out = state_tool("fm", c.path("state"), "--none")
        if rc != 0 and "is head 0's own and head 0 is attached" in out:
            tap.line(f"ok - {name}: the fabric manager cannot take a running head's own"
                     f" range ({out})")
        else:
            tap.line(f"not ok - {name}: removing the assignment under running heads:"
                     f" status {rc}: {out}")
            bad = True
        bad = any([c.status(r, 660) != 0 for r in range(n)]) or bad
        c.finish()
        tap.lines(c.tap(n))
        tap.ok(not bad, f"{name}: every host finishes ({n} hosts)")
        return not bad


# ---- (o) scripts/nfmachine/example_cluster.py, as a user runs it -----------

def example(tap: Tap) -> None:
    """Two hosts, one shared device, a G-Binary round each host checks."""
    d = case_dir("example")
    shutil.rmtree(d, ignore_errors=True)
    os.makedirs(d)
    cmd = ["/usr/bin/python3", "-m", "nfmachine.example_cluster", "--qemu", env("NF_QEMU_BIN"),
           "--guest", os.path.join(env("NF_BUILD"), "guest"), "--logs", d]
    environ = dict(os.environ, PYTHONPATH="scripts:" + os.path.join(env("NF_QEMU_SRC"), "python"))
    proc = subprocess.Popen(cmd, cwd=env("NF_ROOT"), env=environ, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, text=True)
    try:
        out, _ = proc.communicate(timeout=1000)      # its own hosts time out at 900 s
    except subprocess.TimeoutExpired:
        proc.send_signal(signal.SIGINT)              # it stops its hosts, then ends
        try:
            out, _ = proc.communicate(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
            out, _ = proc.communicate()
        out += "\nexample_cluster.py did not end in 1000 s: interrupted"
    out = out.rstrip("\n")
    tap.lines(out.split("\n"), "# ")
    tap.lines(relay_example(d))
    good = proc.returncode == 0 and \
        len(re.findall(r"^host [01]: status 0,", out, re.M)) == 2
    tap.ok(good, f"example_cluster.py: 2 heads booted from Python, both exit 0"
           f" (consoles: {d})", numbered=True)


def relay_example(d: str) -> List[str]:
    """The example's hosts' TAP lines, from its consoles."""
    lines: List[str] = []
    for r in range(2):
        try:
            with open(os.path.join(d, f"host{r}.log"), encoding="utf-8",
                      errors="replace") as f:
                lines += relay_lines(f.read())
        except FileNotFoundError:
            pass
    return lines


# ---- (d) refusals at start-up: QEMU alone, no guest ------------------------

def head_args(backend: str, props: str, *more: str) -> List[str]:
    """The QEMU line of one head (no guest, paused) on BACKEND."""
    return [env("NF_QEMU_BIN"), *firmware(),
            *topology.alone(ram="256M", objects=[backend],
                            devices=[topology.device("rp0", "vmem0", "nf0", props)]), *more]


def refused_line(name: str, expect: str, rc: int, out: str) -> str:
    """The check of a QEMU that must have exited (not timed out, 124)
    with EXPECT in its messages OUT."""
    lines = out.split("\n") if out else [""]
    if rc not in (0, 124) and expect in out:
        return f"ok - refused: {name} ({re.sub(r'.*cxl-neuron-fabric: ', '', lines[0], count=1)})"
    got = "\n".join(lines[:3])
    return f'not ok - refused: {name}: status {rc}, wanted "{expect}", got: {got}'


def refused(tap: Tap, name: str, expect: str, backend: str, props: str) -> None:
    """QEMU with this head must refuse to start, saying EXPECT (30 s at most)."""
    try:
        res = subprocess.run(head_args(backend, props), stdin=subprocess.DEVNULL,
                             stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=30,
                             check=False)
        rc, out = res.returncode, res.stdout
    except subprocess.TimeoutExpired as exc:   # subprocess.run killed it
        rc, out = 124, exc.output or b""
    tap.line(refused_line(name, expect, rc, out.decode(errors="replace").rstrip("\n")))


class LiveHeads:
    """Heads started paused in the background (QEMU alone, its log, QMP
    socket and pid file in DIR as NAME.*); every one killed on close()."""

    def __init__(self, d: str):
        self.d = d
        self.procs: List[subprocess.Popen] = []

    def __enter__(self) -> "LiveHeads":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def start(self, name: str, backend: str, props: str) -> bool:
        """Head NAME up: its QMP socket and pid file there within 15 s."""
        base = os.path.join(self.d, name)
        for f in (base + ".qmp", base + ".pid"):
            if os.path.lexists(f):
                os.unlink(f)
        with open(base + ".log", "w", encoding="utf-8") as log:
            self.procs.append(subprocess.Popen(
                head_args(backend, props, "-qmp", f"unix:{base}.qmp,server=on,wait=off",
                          "-pidfile", base + ".pid", "-trace", "nfabric_head_attach"),
                stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT))
        for _ in range(150):
            if os.path.exists(base + ".qmp") and os.path.exists(base + ".pid") and \
                    os.path.getsize(base + ".pid") > 0:
                return True
            time.sleep(0.1)
        return False

    def pid(self, name: str) -> int:
        with open(os.path.join(self.d, name + ".pid"), encoding="utf-8") as f:
            return int(f.read().strip())

    def log(self, name: str) -> str:
        with open(os.path.join(self.d, name + ".log"), encoding="utf-8", errors="replace") as f:
            return f.read()

    def kill_all(self) -> None:
        """SIGKILL to every head (a crashed run), reaped."""
        for p in self.procs:
            if p.poll() is None:
                p.kill()
            p.wait()

    def close(self) -> None:
        self.kill_all()


def first_match(pattern: str, text: str) -> str:
    m = re.search(pattern, text)
    return m.group(0) if m else ""


def refusals(tap: Tap) -> None:
    """Each conflicting head refused at realize with the message that
    names it (docs/multihost.md "Creating and joining"), joining a live
    head, migration refused, a state left by killed heads made anew."""
    d = case_dir("refusals")
    shutil.rmtree(d, ignore_errors=True)
    os.makedirs(d)
    for name, mib in (("mem", 256), ("mem-other", 256), ("mem-512", 512)):
        with open(os.path.join(d, name), "wb") as f:
            f.truncate(mib << 20)
    file = topology.backend("vmem0", 256, f"{d}/mem")
    st = f"shared-state={d}/state"
    shared = "needs 'volatile-memdev' to be a memory-backend-file with share=on"
    refused(tap, "RAM backend", shared, topology.backend("vmem0", 256),
            f"{st},head=0,heads=2")
    refused(tap, "share=off", shared,
            topology.backend("vmem0", 256, f"{d}/mem", share=False),
            f"{st},head=0,heads=2")
    refused(tap, "head >= heads", "property 'head' must be 0..1", file, f"{st},head=2,heads=2")
    refused(tap, "heads=17", "property 'heads' must be 1..16", file, f"{st},head=0,heads=17")
    refused(tap, "head without shared-state", "need 'shared-state'", file, "head=1,heads=2")
    refused(tap, "state file of another size", "bytes, not the", file,
            "shared-state=/etc/hostname,head=0,heads=2")
    with LiveHeads(d) as heads:
        live_conflicts(tap, heads, d, file, st)


def live_conflicts(tap: Tap, heads: LiveHeads, d: str, file: str, st: str) -> None:
    """A live head 0 of a 2-head device, then heads that conflict with it."""
    if not heads.start("a", file, f"{st},head=0,heads=2"):
        tap.line(f"not ok - a first head starts (log: {d}/a.log)")
        return
    apid = heads.pid("a")
    # Its QMP socket may come up before the device attaches: wait for that.
    for _ in range(50):
        if "head 0 of 2" in heads.log("a"):
            break
        time.sleep(0.1)
    tap.line(f"ok - a first head (pid {apid}) creates the state:"
             f" {first_match(r'head 0 of 2.*', heads.log('a'))}")
    refused(tap, "head in use by a live process",
            f"head 0 of '{d}/state' is in use by a live process (pid {apid})",
            file, f"{st},head=0,heads=2")
    refused(tap, "other head count", f"property 'heads': 3, but the device in '{d}/state' has 2 heads",
            file, f"{st},head=1,heads=3")
    refused(tap, "other memory file", "maps another file than the other heads",
            topology.backend("vmem0", 256, f"{d}/mem-other"),
            f"{st},head=1,heads=2")
    refused(tap, "other memory size", "property 'volatile-memdev': 536870912 bytes, but the device",
            topology.backend("vmem0", 512, f"{d}/mem-512"),
            f"{st},head=1,heads=2")
    refused(tap, "a second state file over the memory of live heads",
            f"is the device memory of live heads of another device state ('{d}/state'",
            file, f"shared-state={d}/state2,head=0,heads=2")
    joined = heads.start("b", file, f"{st},head=1,heads=2")
    if joined:
        time.sleep(0.5)
        joined = pid_alive(heads.pid("b"))
    if joined:
        tap.line(f"ok - head 1 joins the live head 0: {first_match(r'head 1 of 2.*', heads.log('b'))}")
    else:
        tap.line(f"not ok - head 1 joins the live head 0 (log: {d}/b.log)")
    tap.line(migration_line(os.path.join(d, "a.qmp")))
    # The state emptied under the live heads: never made anew under them.
    open(os.path.join(d, "state"), "w").close()
    refused(tap, "a state file emptied under live heads", "is empty but heads are attached to it",
            file, f"{st},head=0,heads=2")
    # Split brain: the state deleted under the live heads and made anew.
    os.unlink(os.path.join(d, "state"))
    refused(tap, "a state made anew over the memory of live heads",
            "is the device memory of live heads of another device state (a state file not found",
            file, f"{st},head=0,heads=2")
    # A crashed run: every head killed; the next head makes the state anew.
    heads.kill_all()
    shutil.copyfile(os.path.join(d, "state"), os.path.join(d, "state.junk"))
    made = heads.start("c", file, f"{st},head=1,heads=2")
    if made:
        time.sleep(0.5)
        made = "re-initialised (no head was alive)" in heads.log("c")
    if made:
        tap.line("ok - a state file left by killed heads is re-initialised by the next head")
    else:
        tap.line(f"not ok - a state file left by killed heads is re-initialised (log: {d}/c.log)")
    heads.kill_all()
    # The same size, but not a state file of this layout.
    junk = os.path.join(d, "state.junk")
    size = os.path.getsize(junk)
    with open(junk, "wb") as f:
        f.write(os.urandom(size))
    refused(tap, "state file of another version", "is not a state file of layout",
            file, f"shared-state={junk},head=0,heads=2")


def pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except OSError:
        return False
    return True


def migration_line(sock: str) -> str:
    """The check that migrating a head is refused (its QMP socket SOCK)."""
    try:
        reply = qmp.command(sock, "migrate", '{"uri": "exec:cat > /dev/null"}')
    except qmp.QMPError as exc:
        reply = str(exc)
    except (OSError, EOFError) as exc:
        reply = f"{sock}: {type(exc).__name__}: {exc}"
    if "cannot migrate" in reply:
        return f"ok - migration of a head is refused: {reply.removeprefix('QMP migrate: ')}"
    return f"not ok - migration of a head is refused: {reply}"


# ---- the suite ---------------------------------------------------------------

def cases(tap: Tap) -> List[Tuple[str, Sequence[str], Callable[[], object]]]:
    """The suite's cases in order: each one's name, the comment lines
    before it, and it."""
    def hosts_2_3(name: str, comments: Sequence[str], case: Callable[..., object], **kw):
        """NAME2 (COMMENTS before it) and NAME3: CASE(tap, 2 or 3, **KW)."""
        return [(f"{name}2", comments, lambda: case(tap, 2, **kw)),
                (f"{name}3", [], lambda: case(tap, 3, **kw))]

    return [
        ("refusals", ["(d) refusals and joining, QEMU alone"], lambda: refusals(tap)),
        ("agg2", ["(a) 2 and 4 hosts aggregate into the same windows"],
         lambda: run(tap, "agg2", 2, "nfabric-multihost agg", cpus=1, mem_mib=1024)),
        ("agg4", [], lambda: run(tap, "agg4", 4, "nfabric-multihost agg", cpus=1, mem_mib=512)),
        ("hammer", ["(b) 2 hosts x 2 vCPUs x 2 processes on one window"],
         lambda: run(tap, "hammer", 2, "nfabric-multihost hammer --procs 2 --iters 8000",
                     cpus=2, mem_mib=1024)),
        ("kill", ["(c) SIGKILL of one host mid-round"], lambda: kill(tap)),
        ("reset", ["(f) system_reset of one host mid-round"], lambda: reset(tap)),
        ("corrupt", ["(g) the state file truncated under 2 running hosts"], lambda: corrupt(tap)),
        *hosts_2_3("sanitize", ["(h) Sanitize and poison commands of other hosts, 2 and 3 hosts"],
                   sanitize),
        *hosts_2_3("jobs", ["(i) a hostile host in a job of its own (fabric manager), 2 and 3 hosts"],
                   jobs),
        *hosts_2_3("reassign", ["(m) memory and window slots reassigned while windows are enabled,"
                                " 2 and 3 hosts"], reassign),
        *hosts_2_3("pause", ["(j) a host stopped (SIGSTOP) again and again while it reconfigures,"
                             " 2 and 3 hosts"], pause),
        *hosts_2_3("apart", ["(n) the same with every host in a job of its own: nothing of the stopped,",
                             "    churning host holds the others up (none refused, the slowest under 50 ms),"
                             " 2 and 3 hosts"], pause, apart=True),
        ("own2", ["(k) each head's own range mapped directly (fabric manager), 2 and 3 hosts"],
         lambda: own(tap, "own2", 2, 64)),
        ("own3", [], lambda: own(tap, "own3", 3, 32)),
        ("direct2", ["(l) no fabric manager: every head maps plain memory directly; a window",
          "    enabled over memory every host had mapped (map protocol), 2 and 3 hosts"],
         lambda: run(tap, "direct2", 2, "nfabric-multihost direct --bytes 64", cpus=1,
                     mem_mib=768)),
        ("direct3", [], lambda: run(tap, "direct3", 3, "nfabric-multihost direct --bytes 32", cpus=1,
                         mem_mib=512)),
        ("example", ["(o) the Python example of docs/guest.md: two heads started from Python"],
         lambda: example(tap)),
    ]


def suite(out: TextIO = sys.stdout, only: Sequence[str] = ()) -> int:
    """Every case in order (or those named in ONLY, for a developer); a
    case that fails with an error is a "not ok" naming it (the error on
    stderr) and the next case runs.  0 if no case raised (the checks'
    verdicts are in the TAP)."""
    tap = Tap(out, numbered=False)
    status = 0
    for name, comments, case in cases(tap):
        if only and name not in only:
            continue
        tap.lines(comments, "# ")
        try:
            case()
        except Exception as exc:       # noqa: BLE001: said, never silent
            traceback.print_exc(file=sys.stderr)
            tap.line(f"not ok - a case of the suite failed: {type(exc).__name__}: {exc}")
            status = 1
    return status
