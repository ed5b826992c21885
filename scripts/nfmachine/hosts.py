# SPDX-License-Identifier: GPL-2.0-or-later
"""The hosts of one shared device, booted one by one: the multihost
suite's cases and `bench cluster` (docs/multihost.md).

A `Cluster` is a directory (the case's: consoles hostR.log, QEMU's and
the watcher's messages hostR.out, statuses hostR.rc, pid files hostR.pid,
QMP sockets qmpR.sock, the device's files `mem` and `state` from
cluster.py) and the hosts booted in it, each a head of its device
(cluster.host_topology) watched by vm.BootAll in a thread of its own.
Every wait here is bounded; `close()` stops and reaps whatever still runs
and removes the device's files, on every path (a `with` block).
"""

import os
import re
import shlex
import signal
import subprocess
import sys
import time
from typing import Callable, Dict, List, Optional, Sequence, Tuple

from . import cluster
from .topology import Topology

# `vm`'s statuses (vm.py, which needs QEMU's python/qemu: imported where a
# guest is booted, so that the pure parts here need nothing else).
TIMED_OUT = 124
NO_STATUS = 125


def env(name: str, error: Callable[[str], Exception] = RuntimeError, prefix: str = "") -> str:
    """An environment variable scripts/nfabric sets (nf_machine); when it is
    not set, ERROR with PREFIX before the message."""
    value = os.environ.get(name)
    if not value:
        raise error(f"{prefix}{name} is not set (run this through scripts/nfabric)")
    return value


def firmware() -> List[str]:
    """QEMU's firmware options (-L DIR ...) as nf_machine passes them."""
    return shlex.split(os.environ.get("NF_FIRMWARE", ""))


def hang_s() -> float:
    """The boot-hang watch of `vm` (NF_VM_BOOT_HANG_S, default 120 s)."""
    return float(os.environ.get("NF_VM_BOOT_HANG_S") or 120)


def hang_log() -> str:
    """Where hung boots are noted (scripts/nfabric test prints it)."""
    logs = os.environ.get("NF_TEST_LOGS") or os.path.join(env("NF_BUILD"), "test-logs")
    return os.path.join(logs, "boot-hangs.log")


def temp_dir() -> str:
    return os.environ.get("TMPDIR") or "/tmp"


def state_tool(*args: str) -> Tuple[int, str]:
    """nfabric-state ARGS: its status and its output (stdout and stderr
    together, the trailing newlines dropped, as $(... 2>&1) has it)."""
    res = subprocess.run([cluster.state_tool(), *args], stdout=subprocess.PIPE,
                         stderr=subprocess.STDOUT, text=True, check=False)
    return res.returncode, res.stdout.rstrip("\n")


def state_lines(state: str) -> Optional[List[str]]:
    """`nfabric-state STATE`'s key=value lines (its stderr left out), None
    if it failed."""
    res = subprocess.run([cluster.state_tool(), state], capture_output=True, text=True,
                         check=False)
    return res.stdout.splitlines() if res.returncode == 0 else None


def state_value(lines: Sequence[str], key: str) -> str:
    """KEY's value in nfabric-state's lines ("" if absent; the last one)."""
    value = ""
    for line in lines:
        if line.startswith(key + "="):
            value = line[len(key) + 1:]
    return value


def relay_lines(text: str) -> List[str]:
    """A host console's TAP for the suite's runner: its ok, not ok,
    comment and summary lines, in order."""
    return [line for line in text.splitlines()
            if re.match(r"(ok|not ok|#|summary:)", line)]


def status_words(status: int) -> str:
    """A host's status as `scripts/nfabric cluster` reports it."""
    return {0: "ok", TIMED_OUT: "TIMED OUT (hung)",
            NO_STATUS: "stopped without reporting a status"}.get(
                status, f"FAILED (status {status})")


def report_lines(d: str, statuses: Sequence[Optional[int]],
                 messages: Sequence[str]) -> List[str]:
    """One line per host (its status, its console), and for a host that
    failed the last 5 lines of its messages (MESSAGES[r]), indented."""
    lines = []
    for r, status in enumerate(statuses):
        status = NO_STATUS if status is None else status
        lines.append(f"cluster: host {r}: {status_words(status)}"
                     f" (console: {d}/host{r}.log)")
        if status != 0 and messages[r]:
            lines += ["    " + line for line in messages[r].splitlines()[-5:]]
    return lines


def read(path: str) -> str:
    """A file's text ("" if it is not there): consoles, messages."""
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            return f.read()
    except FileNotFoundError:
        return ""


def read_console(path: str) -> str:
    """A console log's text without the serial line's carriage returns."""
    return read(path).replace("\r", "")


class Host:
    """One host of a cluster, booted and watched (a BootAll of one)."""

    def __init__(self, d: str, r: int, topo: Topology, timeout: float):
        from . import vm
        self.d, self.r = d, r
        for name in (f"host{r}.rc", f"host{r}.pid", f"qmp{r}.sock"):
            try:
                os.unlink(os.path.join(d, name))
            except FileNotFoundError:
                pass
        out = os.path.join(d, f"host{r}.out")
        with open(out, "w", encoding="utf-8") as f:
            f.write(f"[nfabric] vm: {topo.device}, {topo.cpus} vCPUs, {topo.mem_mib} MiB RAM,"
                    f" {topo.cxl_mib} MiB CXL memory\n")
        args = topo.qemu_args(firmware(), env("NF_GUEST_KERNEL"), env("NF_GUEST_INITRD"))
        self.watch = vm.BootAll(env("NF_QEMU_BIN"), [(args, self.log)], temp_dir(),
                                timeout=timeout, hang_s=hang_s(), hang_log=hang_log(),
                                labels=[f"host {r}"], messages=[out])
        self.watch.runs[0].add_done_callback(self._ended)
        self.reaped = False

    @property
    def log(self) -> str:
        return os.path.join(self.d, f"host{self.r}.log")

    def _ended(self, future) -> None:
        """The watch ended: its status in hostR.rc (for whoever looks at
        the directory, as `scripts/nfabric cluster` leaves it)."""
        if future.exception() is None:
            with open(os.path.join(self.d, f"host{self.r}.rc"), "w", encoding="utf-8") as f:
                f.write(f"{future.result().status}\n")

    def status(self, timeout: float) -> int:
        """The host's status once it ended; 124 if it runs TIMEOUT s later
        (125 if its watch failed: reap() says why).  Looked at every 0.2 s,
        as the shell's suite looked for its status file: what a case does
        next (the fabric manager's next assignment) comes as long after
        the host's end as it did there."""
        t0 = time.monotonic()
        while not self.done() and time.monotonic() - t0 <= timeout:
            time.sleep(0.2)
        try:
            out = self.watch.outcome(0, 0)
        except Exception:             # noqa: BLE001: said by reap()
            return NO_STATUS
        return TIMED_OUT if out is None else out.status

    def done(self) -> bool:
        return self.watch.done(0)

    def reap(self) -> Optional[int]:
        """Wait for the host to end (its own timeout bounds it); its status
        (None if its watch failed, which is said)."""
        if not self.reaped:
            self.reaped = True
            try:
                self.watch.results()
            except Exception as exc:  # noqa: BLE001: said; the host failed
                print(f"host {self.r}: its watch failed: {type(exc).__name__}: {exc}",
                      file=sys.stderr)
        run = self.watch.runs[0]
        if run.done() and run.exception() is None:
            return run.result().status
        return None


class Cluster:
    """A case's directory, its device and the hosts booted on it."""

    def __init__(self, d: str):
        self.d = os.path.abspath(d)
        self.hosts: Dict[int, Host] = {}
        self.started: List[Host] = []

    def __enter__(self) -> "Cluster":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def prepare(self, cxl_mib: int = 256) -> None:
        """A fresh device in the directory (cluster.prepare)."""
        os.makedirs(self.d, exist_ok=True)
        cluster.prepare(self.d, cxl_mib)

    def boot(self, r: int, n: int, cmd: str, *, cpus: int, mem_mib: int,
             timeout: float = 900, extra: Sequence[str] = (), reboot: bool = False) -> None:
        """Start host R of N (head R) in the background, running CMD with
        NFABRIC_RANK and NFABRIC_HOSTS; EXTRA: more QEMU arguments."""
        opts = cluster.Options(["--hosts", str(n), "--run", cmd], ValueError)
        topo = cluster.host_topology(opts, self.d, r, Topology(cpus=cpus, mem_mib=mem_mib))
        topo.extra += list(extra)
        topo.reboot = reboot
        host = Host(self.d, r, topo, timeout)
        self.hosts[r] = host
        self.started.append(host)

    def path(self, name: str) -> str:
        return os.path.join(self.d, name)

    def status(self, r: int, timeout: float) -> int:
        """Host R's status, 124 if it still runs TIMEOUT s later."""
        return self.hosts[r].status(timeout)

    def pid(self, r: int) -> int:
        """Host R's QEMU process (its -pidfile)."""
        with open(self.path(f"host{r}.pid"), encoding="utf-8") as f:
            return int(f.read().strip())

    def qmp(self, r: int) -> str:
        return self.path(f"qmp{r}.sock")

    def console(self, r: int) -> str:
        return read(self.path(f"host{r}.log"))

    def messages(self, r: int) -> str:
        return read(self.path(f"host{r}.out"))

    def wait_for(self, r: int, pattern: str, timeout: float) -> bool:
        """Until host R's console has a line matching PATTERN: False if it
        ended first, or TIMEOUT s passed."""
        t0 = time.monotonic()
        while True:
            if re.search(pattern, self.console(r), re.M):
                return True
            if time.monotonic() - t0 > timeout or self.hosts[r].done():
                return False
            time.sleep(0.2)

    def wait_mark(self, r: int, timeout: float) -> bool:
        """Until host R printed NFABRIC-MARK (its guest reached the point
        the case acts at)."""
        return self.wait_for(r, "NFABRIC-MARK", timeout)

    def wait_attached(self, r: int, timeout: float = 60) -> bool:
        """Until head R of the device is attached (its live byte held)."""
        t0 = time.monotonic()
        while time.monotonic() - t0 < timeout:
            if (cluster.live_heads(self.path("state")) >> r) & 1:
                return True
            time.sleep(0.2)
        return False

    def cont(self, r: int) -> None:
        """Host R (started paused) runs; a refusal is said on stderr."""
        from . import qmp
        try:
            qmp.command(self.qmp(r), "cont", None)
        except (qmp.QMPError, OSError, EOFError) as exc:
            print(f"cont of host {r}: {type(exc).__name__}: {exc}", file=sys.stderr)

    def signal(self, r: int, sig: int) -> bool:
        """SIG to host R's QEMU; False if it is not there."""
        try:
            os.kill(self.pid(r), sig)
        except (OSError, ValueError):
            return False
        return True

    def finish(self) -> None:
        """Wait for every host started to end (each has its timeout)."""
        for host in self.started:
            host.reap()

    def stop(self) -> None:
        """Stop every host still running and reap them all."""
        if any(not h.done() for h in self.started):
            from . import vm
            t0 = time.monotonic()
            vm.stop_all()
            self.finish()
            # stop_all()'s SIGKILL comes 5 s later to whatever guest runs
            # then: let it find none (no host of the next case).
            time.sleep(max(0.0, 5.5 - (time.monotonic() - t0)))
        self.finish()

    def tap(self, n: int) -> List[str]:
        """Hosts 0..N-1's TAP lines, host by host."""
        lines: List[str] = []
        for r in range(n):
            lines += relay_lines(self.console(r))
        return lines

    def report(self, n: int) -> List[str]:
        """`scripts/nfabric cluster`'s report of hosts 0..N-1."""
        statuses = [self.hosts[r].reap() if r in self.hosts else None for r in range(n)]
        return report_lines(self.d, statuses, [self.messages(r) for r in range(n)])

    def close(self) -> None:
        """No host left running (SIGCONT first: one may be stopped), the
        device's files removed."""
        for host in self.started:
            if not host.done():
                self.signal(host.r, signal.SIGCONT)
        self.stop()
        cluster.release(self.d)
