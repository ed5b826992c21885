# SPDX-License-Identifier: GPL-2.0-or-later
"""The `lifecycle` suite: a guest's life with the device beyond one boot
(issue 13), with a real booted Debian guest under TCG, not qtest:

 1. live migration: a 1 GiB guest (guest RAM larger than the 256 MiB of
    device memory; NF_LIFECYCLE_MEM and NF_LIFECYCLE_CXL_MEM change them)
    keeps a G-Binary round and an FP32 writer running
    (nfabric-lifecycle-check migrate) while the host migrates it over a
    unix socket to a second QEMU started with -incoming and -S.  The host
    bridge has a second, empty root port, so that it is not in passthrough
    and CXL.mem goes through its HDM decoder.  With both sides stopped the
    host compares every read-only figure of the device (qom-get stats-*,
    timing-*), `info pci` (root port bus numbers and windows, the device's
    BARs), the host bridge's and root port's CXL.cache/mem registers and
    device memory (both sides use a memory-backend-file, compared byte for
    byte); then the destination runs on, the host writes the stop word
    into its device memory, and the guest checks registers, counts,
    statistics, counters, read-back and every FP32 byte against what it
    did, and runs nfabricctl.
 2. warm reset: one guest boots three times in one QEMU run (no
    -no-reboot): a guest `reboot -f`, then a QMP system_reset; each boot
    must bring up the region, dax and windows again
    (nfabric-lifecycle-check boot).
 3. the same two things on stock cxl-type3, with other sizes (2 GiB guest,
    1 GiB device): a system_reset, then a migration that must complete
    (QEMU's own code paths: patches 0005 and 0006 of qemu-patches/).

Every guest is a Topology booted by vm.boot() in a thread of its own, 1
vCPU, at most 600 s: its console in DIR/NAME.log, QMP on DIR/NAME.qmp
(driven through qmp.Monitor), QEMU's pid in DIR/NAME.pid, its watcher's and
QEMU's messages in DIR/NAME.err (DIR is build/lifecycle).  A guest a test
leaves running is stopped before the next test starts, and every one
before run() returns, whatever happened.  TAP on stdout.  Reproduce one by
hand with the commands in docs/reliability.md.
"""

import filecmp
import json
import os
import re
import shutil
import stat
import sys
import threading
import time
from concurrent.futures import Future, ThreadPoolExecutor
from concurrent.futures import TimeoutError as FutureTimeout
from dataclasses import dataclass
from typing import Any, Callable, Dict, List, Optional, Tuple

from . import qmp, vm
from .tap import Tap
from .topology import Topology, TopologyError, size_mib

DEVICE_ID = "cxl-vmem0"
# The migration's guests have a second, empty root port on the host bridge
# (Topology.spare_ports): with two root ports the bridge is no longer in
# passthrough, Linux programs its HDM decoder and CXL.mem goes through it,
# so the migration also needs the bridge's registers (patch 0008).
# The device's read-only figures (hw/mem/nfabric/cxl_nfabric.c).
FIGURES = ["timing-total-ps", "timing-exposed-ppm", "timing-runtime-ps",
           "timing-queued-ps", "timing-link-busy-ps"] + [
    f"{kind}-{p}-{what}" for p in ("fp32", "gbinary", "gternary")
    for kind, what in (("timing", "ps"), ("timing", "exposed-ps"), ("timing", "accesses"),
                       ("stats", "reads"), ("stats", "writes"), ("stats", "read-bytes"),
                       ("stats", "write-bytes"))]
# Where the host writes the word that ends the guest's round on the
# destination (tests/guest/lifecycle_check.c).
STOP_WORD, STOP_WORD_AT = b"LCSTOP!!", 0x0fff0000
GUEST_TIMEOUT_S = 600
MIGRATE_POLLS = 600            # query-migrate, 0.2 s apart
MIGRATION_ENDS = ("completed", "failed", "cancelled")
STOP_WAIT_S = 90               # a stopped guest's watcher: SIGTERM, SIGKILL, reaped
# The guests' commands (they run in the guest's sh: its $rc).
MIGRATE_CMD = ("nfabric-lifecycle-check migrate; rc=$?; nfabricctl info && nfabricctl windows"
               " || rc=1; exit $rc")
REBOOT_CMD = ("nfabric-lifecycle-check boot; rc=$?; case $rc in 10) echo LC-REBOOTING;"
              " reboot -f; sleep 60 ;; 11) echo LC-RESET-ME; sleep 300 ;; esac; exit $rc")


# ---- what is read from consoles and replies (tests/machine/test_lifecycle.py)

def console_lines(text: str) -> List[str]:
    """A console log's lines, every CR dropped."""
    return text.replace("\r", "").splitlines()


def count_matching(lines: List[str], regex: str) -> int:
    """How many LINES REGEX matches (anywhere in the line, as grep -cE)."""
    pattern = re.compile(regex)
    return sum(1 for line in lines if pattern.search(line))


def guest_checks(lines: List[str]) -> List[Tuple[bool, str]]:
    """The guest's own checks ("LC ok - NAME", "LC not ok - NAME")."""
    checks = []
    for line in lines:
        for head, good in (("LC ok - ", True), ("LC not ok - ", False)):
            if line.startswith(head):
                checks.append((good, line[len(head):]))
    return checks


def migrate_status(reply: Any) -> str:
    """The status of a query-migrate reply ("" if it has none)."""
    return str(reply.get("status", "")) if isinstance(reply, dict) else ""


def dirty_syncs(reply: Any) -> Optional[int]:
    """A query-migrate reply's ram.dirty-sync-count (None if absent)."""
    try:
        return int(reply["ram"]["dirty-sync-count"])
    except (KeyError, TypeError, ValueError):
        return None


def figure_lines(values: Dict[str, Any]) -> str:
    """The device's figures as "name=value" lines (value as QMP's JSON), in
    FIGURES' order: equal text, equal figures."""
    return "".join(f"{name}={json.dumps(values[name], sort_keys=True)}\n"
                   for name in FIGURES)


def figure(text: str, name: str) -> Optional[int]:
    """The figure NAME of figure_lines() TEXT, if it is a number."""
    for line in text.splitlines():
        if line.startswith(name + "="):
            value = line[len(name) + 1:]
            return int(value) if value.isdigit() else None
    return None


def guest_gbinary_writes(lines: List[str]) -> Optional[int]:
    """The G-Binary writes of the whole round, from the guest's
    "LC iterations=N gbinary-writes=M" line."""
    for line in lines:
        m = re.match(r"LC iterations=.* gbinary-writes=(\d+)$", line)
        if m:
            return int(m.group(1))
    return None


def differences(a: str, b: str, limit: int) -> List[str]:
    """At most LIMIT lines of A ("<") and B (">") that differ, in order."""
    la, lb = a.splitlines(), b.splitlines()
    out = []
    for i in range(max(len(la), len(lb))):
        x = la[i] if i < len(la) else None
        y = lb[i] if i < len(lb) else None
        if x != y:
            out += ([f"< {x}"] if x is not None else []) + ([f"> {y}"] if y is not None else [])
    return out[:limit]


# ---- the guests -------------------------------------------------------------

@dataclass
class Machine:
    """What every guest of the suite boots with."""
    binary: str                                   # qemu-system-x86_64
    qemu_args: Callable[[Topology], List[str]]    # provisioned command line
    temp_dir: str
    hang_s: Optional[float]                       # vm.boot()'s boot-hang watch
    hang_log: str


def _say(text: str) -> None:
    print(f"nfmachine lifecycle-suite: {text}", file=sys.stderr, flush=True)


def topology(device: str, mem: str, cxl_mem: str, run: str, *, mem_path: Optional[str] = None,
             reboot: bool = False, spare_ports: int = 0, incoming: Optional[str] = None,
             extra: Optional[List[str]] = None) -> Topology:
    """A guest of the suite: 1 vCPU, MEM of RAM, CXL_MEM of device memory
    (in MEM_PATH, shared, to compare; else RAM), running RUN; SPARE_PORTS
    empty root ports; INCOMING: a migration's destination listening there."""
    sizes = {}
    for what, text in (("guest RAM", mem), ("device memory", cxl_mem)):
        sizes[what] = size_mib(text)
        if sizes[what] is None:
            raise TopologyError(f'bad {what} size "{text}" (e.g. 1G, 256M)')
    return Topology(device=device, cpus=1, mem_mib=sizes["guest RAM"],
                    cxl_mib=sizes["device memory"], mem_path=mem_path, reboot=reboot,
                    run=run, spare_ports=spare_ports, incoming=incoming,
                    extra=list(extra or []))


class Guest:
    """One guest: booted by vm.boot() in a thread of POOL, watched, stopped."""

    def __init__(self, machine: Machine, pool: ThreadPoolExecutor, d: str, name: str,
                 topo: Topology, tap: Optional[Tap] = None):
        self.machine, self.pool, self.name, self.topo = machine, pool, name, topo
        self.tap = tap or Tap()     # its notes
        self.log, self.qmp = os.path.join(d, name + ".log"), os.path.join(d, name + ".qmp")
        self.pidfile, self.err = os.path.join(d, name + ".pid"), os.path.join(d, name + ".err")
        topo.extra = ["-qmp", f"unix:{self.qmp},server=on,wait=off",
                      "-pidfile", self.pidfile] + topo.extra
        self.stop_event = threading.Event()
        self.future: Optional[Future] = None

    def start(self) -> bool:
        """Boot it; True once its QMP socket is there (at most 15 s)."""
        for f in (self.log, self.qmp, self.pidfile):
            _remove(f)
        try:
            args = self.machine.qemu_args(self.topo)
        except Exception as exc:  # noqa: BLE001: said, the test fails
            self.tap.note(f"{self.name}: not started: {type(exc).__name__}: {exc}")
            return False
        self.future = self.pool.submit(self._watch, args)
        for _ in range(150):
            if _is_socket(self.qmp):
                return True
            if self.future.done():
                break
            time.sleep(0.1)
        self.tap.note(f"{self.name}: no QMP socket after 15 s: "
                      + " | ".join(tail(self.err, 3)))
        return False

    def _watch(self, args: List[str]) -> vm.Outcome:
        t = self.topo
        hang_s = None if t.incoming else self.machine.hang_s
        with open(self.err, "w", encoding="utf-8") as err:
            err.write(f"[nfabric] vm: {t.device}, {t.cpus} vCPUs, {t.mem_mib} MiB RAM,"
                      f" {t.cxl_mib} MiB CXL memory\n")
            err.flush()
            try:
                return vm.boot(self.machine.binary, args, self.machine.temp_dir, self.log,
                               quiet=True, timeout=GUEST_TIMEOUT_S, hang_s=hang_s,
                               hang_log=self.machine.hang_log, have_run=False, err=err,
                               stop=self.stop_event)
            except Exception as exc:
                err.write(f"vm: error: {type(exc).__name__}: {exc}\n")
                raise

    def running(self) -> bool:
        return self.future is not None and not self.future.done()

    def lines(self) -> List[str]:
        """Its console so far."""
        try:
            with open(self.log, encoding="utf-8", errors="replace") as f:
                return console_lines(f.read())
        except FileNotFoundError:
            return []

    def wait_for(self, regex: str, count: int, secs: float) -> bool:
        """Whether its console has COUNT lines matching REGEX within SECS
        seconds (False at once if it ends without them)."""
        deadline = time.monotonic() + secs
        while True:
            if count_matching(self.lines(), regex) >= count:
                return True
            if not self.running():
                return count_matching(self.lines(), regex) >= count
            if time.monotonic() >= deadline:
                return False
            time.sleep(0.2)

    def wait_exit(self, secs: float) -> int:
        """QEMU's exit status once it ends within SECS seconds; else it is
        stopped: 124 (as `vm --qemu-status`)."""
        if self.future is None:
            return 1
        try:
            out = self.future.result(timeout=secs)
        except FutureTimeout:
            self.stop()
            return vm.TIMED_OUT
        except Exception as exc:  # noqa: BLE001: said, the test fails
            _say(f"{self.name}: the watch failed: {type(exc).__name__}: {exc}")
            return 1
        return out.status if out.status == vm.TIMED_OUT else (out.qemu_status or 0)

    def stop(self) -> None:
        """Stop it if it runs (SIGTERM, SIGKILL 5 s later) and wait for it."""
        if not self.running():
            return
        self.stop_event.set()
        try:
            self.future.result(timeout=STOP_WAIT_S)
        except FutureTimeout:
            _say(f"{self.name}: its QEMU still runs {STOP_WAIT_S} s after it was stopped")
        except Exception as exc:  # noqa: BLE001: said; it was being stopped
            _say(f"{self.name}: the watch failed: {type(exc).__name__}: {exc}")


def _remove(path: str) -> None:
    try:
        os.unlink(path)
    except FileNotFoundError:
        pass


def _is_socket(path: str) -> bool:
    try:
        return stat.S_ISSOCK(os.stat(path).st_mode)
    except OSError:
        return False


def tail(path: str, n: int) -> List[str]:
    """The last N lines of PATH (none if it cannot be read)."""
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            return console_lines(f.read())[-n:]
    except OSError:
        return []


# ---- QMP --------------------------------------------------------------------

def call(sock: str, name: str, args: Optional[Dict[str, Any]] = None) -> Tuple[bool, Any]:
    """NAME on SOCK's monitor: (True, its return), or (False, None) with
    the error said on stderr."""
    try:
        with qmp.Monitor(sock) as mon:
            return True, mon.call(name, args)
    except Exception as exc:  # noqa: BLE001: qemu.qmp's, OSError, ...: said
        _say(f"QMP {name} on {sock}: {type(exc).__name__}: {exc}")
        return False, None


def hmp(sock: str, line: str) -> str:
    """LINE's output on SOCK's monitor ("" on an error, said)."""
    done, out = call(sock, "human-monitor-command", {"command-line": line})
    return out if done and isinstance(out, str) else ""


def figures(sock: str) -> Optional[str]:
    """Every read-only figure of the device (figure_lines()); None if a
    qom-get failed."""
    values = {}
    for name in FIGURES:
        done, values[name] = call(sock, "qom-get", {"path": f"/machine/peripheral/{DEVICE_ID}",
                                                    "property": name})
        if not done:
            return None
    return figure_lines(values)


def cachemem_regs(sock: str, region: str) -> str:
    """qmp.cachemem_regs() ("" on an error, said)."""
    try:
        return qmp.cachemem_regs(sock, region)
    except Exception as exc:  # noqa: BLE001: said, the comparison fails
        _say(f"the CXL.cache/mem registers of {region} on {sock}: {type(exc).__name__}: {exc}")
        return ""


def migration(sock: str) -> Tuple[str, Any]:
    """query-migrate on SOCK until the migration ends, at most
    MIGRATE_POLLS times 0.2 s apart: (its last status, its last reply;
    None if query-migrate failed)."""
    status, reply = "", None
    for _ in range(MIGRATE_POLLS):
        done, reply = call(sock, "query-migrate")
        if not done:
            break
        status = migrate_status(reply)
        if status in MIGRATION_ENDS:
            break
        time.sleep(0.2)
    return status, reply


# ---- the tests --------------------------------------------------------------

class Suite:
    """The three tests, their guests and device memory files."""

    def __init__(self, machine: Machine, d: str, shm: str, mem: str, cxl_mem: str):
        self.machine, self.d, self.shm, self.mem, self.cxl_mem = machine, d, shm, mem, cxl_mem
        self.tap = Tap()
        self.pool = ThreadPoolExecutor(max_workers=2)
        self.guests: List[Guest] = []
        self.files: List[str] = []

    def start(self, name: str, *described: Any, **options: Any) -> Optional[Guest]:
        """The guest NAME that topology(*DESCRIBED, **OPTIONS) describes,
        started; None if it was not (said)."""
        try:
            topo = topology(*described, **options)
        except TopologyError as exc:
            self.tap.note(f"{name}: not started: {exc}")
            return None
        g = Guest(self.machine, self.pool, self.d, name, topo, self.tap)
        self.guests.append(g)
        return g if g.start() else None

    def reap(self, say: bool = True) -> None:
        """Stop the guests a test left running (a test that failed early),
        so that never more than two run at once."""
        for g in self.guests:
            if g.running():
                if say:
                    self.tap.note(f"stopping the guest {g.name} left by a failed test")
                g.stop()
        self.guests = [g for g in self.guests if g.running()]

    def close(self) -> None:
        """Every guest stopped (stop_all() for one that would not), the
        threads joined, the device memory files removed."""
        self.reap(say=False)
        if self.guests:
            vm.stop_all()
        self.pool.shutdown(wait=True)
        for f in self.files:
            _remove(f)

    def compared(self, a: str, b: str, limit: int) -> None:
        """A's and B's differing lines as comments (nothing if equal)."""
        if a != b:
            self.tap.lines(differences(a, b, limit), "# ")

    # ---- 1. live migration mid-round
    def migration(self) -> None:
        tap, d = self.tap, self.d
        s_mem = os.path.join(self.shm, f"nfabric-lc-{os.getpid()}-src")
        d_mem = os.path.join(self.shm, f"nfabric-lc-{os.getpid()}-dst")
        self.files += [s_mem, d_mem]
        for f in (s_mem, d_mem):
            _remove(f)
        tap.note(f"1. live migration: guest RAM {self.mem}, device memory {self.cxl_mem},"
                 " G-Binary round + FP32 writer running")
        src = self.start("mig-src", "cxl-neuron-fabric", self.mem, self.cxl_mem, MIGRATE_CMD,
                         mem_path=s_mem, spare_ports=1)
        if src is None:
            tap.ok(False, "source QEMU started")
            return
        if not src.wait_for(r"^LC-MIGRATE-READY", 1, 120):
            tap.ok(False, "source guest runs the round (LC-MIGRATE-READY)")
            tap.lines(src.lines()[-20:], "# ")
            return
        sock = os.path.join(d, "mig.sock")
        _remove(sock)
        dst = self.start("mig-dst", "cxl-neuron-fabric", self.mem, self.cxl_mem,
                         "echo the destination never boots this", mem_path=d_mem,
                         spare_ports=1, incoming=f"unix:{sock}")
        if dst is None:
            tap.ok(False, "destination QEMU started")
            return
        # QEMU listens for the incoming migration only once the machine is
        # made, well after its QMP socket appears (seconds on a busy machine).
        for _ in range(300):
            if _is_socket(sock) or not dst.running():
                break
            time.sleep(0.1)
        if not _is_socket(sock):
            tap.ok(False, f"destination QEMU listens on {sock} (30 s)")
            return
        if not self.migrate(src, sock):
            return
        src_gbw = self.switchover(src, dst, s_mem, d_mem)
        call(src.qmp, "quit")
        rc = src.wait_exit(30)
        tap.ok(rc == 0, f"source QEMU exited normally after the migration (status {rc})")
        self.destination(dst, d_mem, src_gbw)

    def migrate(self, src: Guest, sock: str) -> bool:
        """Migrate SRC to the destination listening on SOCK while its
        guest writes: whether it completed (and precopy iterated)."""
        started, _ = call(src.qmp, "migrate", {"uri": f"unix:{sock}"})
        status, info = migration(src.qmp) if started else ("", None)
        text = json.dumps(info, sort_keys=True) if info is not None else ""
        self.tap.note(f"source query-migrate: {text[:400]}")
        if not self.tap.ok(status == "completed",
                           f"migration completed while the guest wrote (status"
                           f" {status or 'none'}, source QEMU alive: no physmem assertion)"):
            self.tap.lines(tail(src.err, 5), "# src: ")
            return False
        st = dirty_syncs(info)
        self.tap.ok(st is not None and st >= 2,
                    f"precopy iterated while the guest ran (dirty-sync-count {st})")
        return True

    def switchover(self, src: Guest, dst: Guest, s_mem: str, d_mem: str) -> Optional[int]:
        """Both sides stopped: the device's state must be the same.  The
        source's G-Binary writes at the switchover."""
        tap = self.tap
        src_fig = figures(src.qmp) or "(qom-get failed)"
        dst_fig = figures(dst.qmp) or "(qom-get failed)"
        src_gbw = figure(src_fig, "stats-gbinary-writes")
        self.tap.note("source at switchover: " + "".join(
            line + " " for line in src_fig.splitlines()
            if re.search(r"stats-(fp32|gbinary)-writes", line)))
        tap.ok(src_fig == dst_fig and (src_gbw or 0) > 0,
                  f"every statistic and timing figure ({len(FIGURES)}) equal on source"
                  " and destination")
        self.compared(src_fig, dst_fig, 1000)
        src_pci, dst_pci = hmp(src.qmp, "info pci"), hmp(dst.qmp, "info pci")
        tap.ok(bool(src_pci) and src_pci == dst_pci and "secondary bus 13" in dst_pci,
                  "PCI state equal on the destination: cxl-rp bus numbers and windows,"
                  " device BARs (info pci)")
        self.compared(src_pci, dst_pci, 20)
        for region in ("pxb-cxl-host", "cxl-rp"):
            src_regs, dst_regs = cachemem_regs(src.qmp, region), cachemem_regs(dst.qmp, region)
            tap.ok(bool(src_regs) and src_regs == dst_regs,
                      f"{region}: CXL.cache/mem registers (HDM decoders) equal on the"
                      " destination")
            self.compared(src_regs, dst_regs, 10)
        tap.ok(_same_file(s_mem, d_mem), "device memory byte-identical on source and"
                  f" destination ({self.cxl_mem}, cmp)")
        return src_gbw

    def destination(self, dst: Guest, d_mem: str, src_gbw: Optional[int]) -> None:
        """The destination runs on: the round continues there; then the
        host stops it and the guest checks what it did."""
        tap = self.tap
        call(dst.qmp, "cont")
        time.sleep(3)
        try:
            with open(d_mem, "r+b") as f:
                f.seek(STOP_WORD_AT)
                f.write(STOP_WORD)
        except OSError as exc:
            _say(f"the stop word not written into {d_mem}: {exc}")
        if not dst.wait_for(r"^NFABRIC-EXIT=", 1, 180):
            tap.ok(False, "the guest finished on the destination")
            tap.lines(dst.lines()[-20:], "# ")
            return
        lines = dst.lines()
        for good, name in guest_checks(lines):
            tap.ok(good, "destination guest: " + name)
        guest_gbw = guest_gbinary_writes(lines)
        tap.lines([line for line in lines if line.startswith("LC iterations=")], "# ")
        tap.ok(guest_gbw is not None and src_gbw is not None and guest_gbw > src_gbw,
                  "the G-Binary round went on after the switchover"
                  f" ({_or_q(src_gbw)} writes on the source, {_or_q(guest_gbw)} in all)")
        tap.ok(count_matching(lines, r"^magic: |^pci: ") > 0 and "NFABRIC-EXIT=0" in lines,
                  "nfabricctl info/windows through the register block on the destination;"
                  " guest exit 0")
        tap.ok(dst.wait_exit(30) == 0, "destination QEMU exited normally")

    # ---- 2. two warm resets in one run
    def reboots(self) -> None:
        tap = self.tap
        tap.note("2. warm reset: guest reboot -f, then QMP system_reset, in one QEMU run")
        g = self.start("reboot", "cxl-neuron-fabric", "1G", "256M", REBOOT_CMD, reboot=True)
        if g is None:
            tap.ok(False, "QEMU started")
            return
        if g.wait_for(r"^LC-RESET-ME", 1, 180):
            tap.ok(call(g.qmp, "system_reset")[0], "QMP system_reset sent on the second boot")
        else:
            tap.ok(False, "the guest rebooted itself and asked for system_reset (LC-RESET-ME)")
        g.wait_for(r"^NFABRIC-EXIT=", 1, 180)
        lines = g.lines()
        for good, name in guest_checks(lines):
            tap.ok(good, "guest: " + name)
        n = count_matching(lines, r"^NFABRIC-READY")
        tap.ok(n == 3 and count_matching(lines, r"NFABRIC-NOT-READY") == 0,
                  f"region and dax came up on all 3 boots ({n} NFABRIC-READY, no NOT-READY)")
        tap.lines([line for line in lines
                   if re.search(r"NFABRIC-(NOT-)?READY|^LC-BOOT|Range register", line)], "# ")
        tap.ok("NFABRIC-EXIT=0" in lines, "third boot finished its checks (exit 0)")
        tap.ok(g.wait_exit(30) == 0, "QEMU exited normally")

    # ---- 3. stock cxl-type3: the same QEMU code paths
    def stock(self) -> None:
        tap = self.tap
        tap.note("3. stock cxl-type3: system_reset, then migration of a 2 GiB guest with"
                 " 1 GiB of device memory")
        g = self.start("stock", "cxl-type3", "2G", "1G", "sleep 300", reboot=True)
        if g is None:
            tap.ok(False, "QEMU started")
            return
        tap.ok(g.wait_for(r"^NFABRIC-READY", 1, 120)
                  and call(g.qmp, "system_reset")[0]
                  and g.wait_for(r"^NFABRIC-(NOT-)?READY", 2, 120)
                  and count_matching(g.lines(), r"^NFABRIC-READY") == 2,
                  "stock cxl-type3: region and dax again after system_reset")
        started, _ = call(g.qmp, "migrate", {"uri": "exec:cat > /dev/null"})
        status = migration(g.qmp)[0] if started else ""
        if not tap.ok(status == "completed", "stock cxl-type3: migration of a 2 GiB guest"
                         f" completed (status {status or 'none'})"):
            tap.lines(tail(g.err, 5), "# ")
        call(g.qmp, "quit")
        tap.ok(g.wait_exit(30) == 0, "stock cxl-type3: QEMU exited normally")


def _or_q(n: Optional[int]) -> str:
    return "?" if n is None else str(n)


def _same_file(a: str, b: str) -> bool:
    """Whether files A and B hold the same bytes (False if one is missing)."""
    try:
        return filecmp.cmp(a, b, shallow=False)
    except OSError:
        return False


def run(machine: Machine, d: str, shm: str, mem: str, cxl_mem: str) -> int:
    """The suite, its consoles and QEMU output in D (made afresh), device
    memory files in SHM (if it is a writable directory, else D): 0 if every
    check passed."""
    shutil.rmtree(d, ignore_errors=True)
    os.makedirs(d)
    if not (os.path.isdir(shm) and os.access(shm, os.W_OK)):
        shm = d
    suite = Suite(machine, d, shm, mem, cxl_mem)
    try:
        for test in (suite.migration, suite.reboots, suite.stock):
            test()
            suite.reap()
    finally:
        suite.close()
    suite.tap.plan()
    suite.tap.note(f"consoles and QEMU output: {d}")
    return suite.tap.status()
