# SPDX-License-Identifier: GPL-2.0-or-later
"""Suite `libvirt`: the guest of `scripts/nfabric vm` as a libvirt domain.

The domain XML comes from libvirt.py (through `libvirt-xml`, the same
description of the machine as `vm`); libvirt 11.3 has no CXL XML, so the
CXL topology is in <qemu:commandline>, the kernel boots directly and the
serial console is a file.  There is no systemd as PID 1 here: virtlogd and
libvirtd are started (unless a libvirtd already answers) and stopped
again by their PID files.  Then two domains of `libvirt-xml --hosts 2`
share one device.  scripts/lib/libvirt.sh installs libvirt first;
docs/guest.md has the details.
"""

import contextlib
import io
import os
import re
import signal
import subprocess
import time
from typing import Callable, List, Optional, Tuple

from .hosts import read as read_file
from .tap import Tap

DOMAIN = "nfabric-guest"
URI = "qemu:///system"


def suite_tap() -> Tap:
    """The suite's numbered lines, "ok N - libvirt: ..."."""
    return Tap(prefix="libvirt: ")


def run(argv: List[str], out: Optional[str] = None, timeout: float = 120) -> int:
    """A command's status; its output in the file out (or dropped)."""
    try:
        if out:
            with open(out, "w", encoding="utf-8") as f:
                return subprocess.run(argv, stdout=f, stderr=subprocess.STDOUT,
                                      timeout=timeout, check=False).returncode
        return subprocess.run(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                              timeout=timeout, check=False).returncode
    except subprocess.TimeoutExpired:
        if out:
            with open(out, "a", encoding="utf-8") as f:
                f.write(f"{argv[0]}: no answer in {timeout:g} s\n")
        return 124
    except OSError as e:
        if out:
            with open(out, "a", encoding="utf-8") as f:
                f.write(f"{argv[0]}: {e.strerror}\n")
        return 127


def virsh(*args: str, out: Optional[str] = None) -> int:
    return run(["virsh", "-c", URI, *args], out)


def virsh_text(*args: str) -> str:
    try:
        return subprocess.run(["virsh", "-c", URI, *args], capture_output=True, text=True,
                              timeout=60, check=False).stdout.strip()
    except (OSError, subprocess.TimeoutExpired):
        return ""


def tail(path: str, n: int) -> str:
    """The last n lines of a file, on one line."""
    return " ".join(read(path).splitlines()[-n:])


def read(path: str) -> str:
    """A console or log's text without the serial line's carriage returns."""
    return read_file(path).replace("\r", "")


def verdict(serial: str) -> Tuple[str, str, int, int]:
    """The guest's ready line, exit status and passed/failed checks."""
    text = read(serial)
    ready = next((l for l in text.splitlines() if l.startswith("NFABRIC-READY")), "")
    exits = re.findall(r"^NFABRIC-EXIT=(.*)$", text, re.M)
    return (ready, exits[0] if exits else "", len(re.findall(r"^ok ", text, re.M)),
            len(re.findall(r"^not ok ", text, re.M)))


class Daemons:
    """virtlogd and libvirtd, started here unless a libvirtd answers."""

    def __init__(self, d: str):
        self.d = d
        self.started: List[str] = []      # their PID files, in order

    def answers(self) -> bool:
        return virsh("list", "--all") == 0

    def daemon(self, name: str) -> bool:
        """NAME -d, its pid file (a stale one removed first) in the suite's
        directory and among those started; False if it did not start."""
        pid = os.path.join(self.d, f"{name}.pid")
        if os.path.exists(pid):
            os.unlink(pid)
        if run([name, "-d", "-p", pid]) != 0:
            return False
        self.started.append(pid)
        return True

    def start(self) -> bool:
        os.makedirs(self.d, exist_ok=True)
        self.started = []
        if self.answers():
            return True
        if not os.path.exists("/run/libvirt/virtlogd-sock") and not self.daemon("virtlogd"):
            return False
        if not self.daemon("libvirtd"):
            return False
        for _ in range(100):
            if self.answers():
                return True
            time.sleep(0.1)
        return False

    def stop(self) -> bool:
        """Stop what this run started (by PID file), newest first."""
        for f in reversed(self.started):
            try:
                with open(f, encoding="utf-8") as p:
                    pid = int(p.read().strip())
                os.kill(pid, signal.SIGTERM)
            except (OSError, ValueError):
                continue
            for _ in range(100):
                if not alive(pid):
                    break
                time.sleep(0.1)
            if alive(pid):
                return False
        self.started = []
        return True


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
        return True
    except ProcessLookupError:
        return False
    except PermissionError:
        return True


def remove(name: str, out: Optional[str] = None) -> int:
    virsh("destroy", name)
    return virsh("undefine", name, out=out)


def wait_serial(serials: List[str], ticks: int, done: Optional[Callable[[], bool]] = None) -> None:
    """Until every serial log has NFABRIC-EXIT= (or done()), 0.1 s a tick."""
    for _ in range(ticks):
        if all("\nNFABRIC-EXIT=" in "\n" + read(s) for s in serials):
            return
        if done and done():
            return
        time.sleep(0.1)


def one_domain(tap: Tap, d: str, xml: str, serial: str) -> None:
    """The guest checks in one domain, then the domain removed."""
    remove(DOMAIN)
    if virsh("define", xml, out=os.path.join(d, "define.log")) != 0:
        tap.ok(False, f"virsh define failed: {tail(os.path.join(d, 'define.log'), 3)}")
    else:
        tap.ok(True, f"domain {DOMAIN} defined from {xml}")
        t0 = time.monotonic()
        if virsh("start", DOMAIN, out=os.path.join(d, "start.log")) != 0:
            tap.ok(False, f"domain did not start: {tail(os.path.join(d, 'start.log'), 3)}")
        else:
            tap.ok(True, "domain started")
            # The guest's verdict on its serial console.
            wait_serial([serial], 9000, lambda: virsh_text("domstate", DOMAIN) == "shut off")
            ready, exitc, p, f = verdict(serial)
            if ready:
                tap.ok(True, "guest ready: " + ready[len("NFABRIC-READY "):])
            else:
                tap.ok(False, f"guest never printed NFABRIC-READY (serial log {serial})")
            if exitc == "0" and p > 0 and f == 0:
                tap.ok(True, f"guest checks passed: {p} ok, 0 not ok, in "
                             f"{time.monotonic() - t0:.1f} s from start")
            else:
                tap.ok(False, f"guest checks: {p} ok, {f} not ok, exit status "
                              f"'{exitc or 'none'}' (serial log {serial})")
                for l in read(serial).splitlines():
                    if l.startswith("not ok "):
                        tap.note("guest: " + l)
    if remove(DOMAIN, out=os.path.join(d, "undefine.log")) == 0 and virsh("dominfo", DOMAIN) != 0:
        tap.ok(True, "domain destroyed and undefined")
    else:
        tap.ok(False, f"domain could not be removed: {tail(os.path.join(d, 'undefine.log'), 2)}")


def cluster(tap: Tap, d: str, libvirt_xml: Callable[[List[str]], int]) -> None:
    """Two domains of libvirt-xml --hosts 2 share one device and aggregate
    into it (nfabric-multihost agg); then removed."""
    if os.path.isdir(d):
        subprocess.run(["rm", "-rf", "--", d], check=True)
    names = [f"{DOMAIN}-{r}" for r in range(2)]
    for name in names:
        remove(name)
    with contextlib.redirect_stdout(io.StringIO()):      # the XML files' paths
        rc = libvirt_xml(["--hosts", "2", "--cpus", "1", "--mem", "1G",
                          "--run", "nfabric-multihost agg", "-o", d])
    if rc != 0:
        tap.ok(False, "two shared-device domains: libvirt-xml --hosts 2 failed")
    started = 0
    for r, name in enumerate(names):
        if (virsh("define", os.path.join(d, name + ".xml"),
                  out=os.path.join(d, f"define-{r}.log")) == 0 and
                virsh("start", name, out=os.path.join(d, f"start-{r}.log")) == 0):
            started += 1
    if started == 2:
        tap.ok(True, "two domains (libvirt-xml --hosts 2) share one device: defined and started")
    else:
        logs = "".join(read(os.path.join(d, f"{k}-{r}.log"))
                       for k in ("start", "define") for r in range(2))
        tap.ok(False, "two shared-device domains: define/start failed: "
                      + " ".join(logs.splitlines()[-3:]))
    serials = [os.path.join(d, name + "-serial.log") for name in names]
    wait_serial(serials, 3000)
    for r, name in enumerate(names):
        _, exitc, p, f = verdict(serials[r])
        if exitc == "0" and p > 0 and f == 0:
            tap.ok(True, f"shared-device domain {r}: {p} checks passed (head {r} of 2)")
        else:
            tap.ok(False, f"shared-device domain {r}: {p} ok, {f} not ok, exit "
                          f"'{exitc or 'none'}' ({serials[r]})")
        remove(name)


def libvirtd_version() -> str:
    try:
        out = subprocess.run(["libvirtd", "--version"], capture_output=True, text=True,
                             timeout=30, check=False).stdout.split()
    except (OSError, subprocess.TimeoutExpired):
        return "?"
    return out[-1] if out else "?"


def suite(build: str, libvirt_xml: Callable[[List[str]], int]) -> int:
    """The suite; libvirt_xml(argv) is `libvirt-xml ARGV` (its status)."""
    d = os.path.join(build, "libvirt")
    os.makedirs(d, exist_ok=True)
    xml, serial = os.path.join(d, "domain.xml"), os.path.join(d, "serial.log")
    if os.path.exists(serial):
        os.unlink(serial)
    tap = suite_tap()
    if libvirt_xml(["--serial", serial, "--run", "nfabric-test", "-o", xml]) != 0:
        tap.ok(False, "libvirt-xml failed")
        return 1
    daemons = Daemons(d)
    if not daemons.start():
        tap.ok(False, "libvirtd did not start")
        daemons.stop()
        return 1
    try:
        tap.ok(True, f"{libvirtd_version()} libvirtd and virtlogd answer on {URI}")
        one_domain(tap, d, xml, serial)
        cluster(tap, os.path.join(d, "cluster"), libvirt_xml)
    except BaseException:
        daemons.stop()              # an error or a signal: none left behind
        raise
    if not daemons.started:
        tap.ok(True, "libvirtd was already running: left running")
    elif daemons.stop():
        tap.ok(True, "daemons stopped")
    else:
        tap.ok(False, "a daemon did not stop")
    return tap.status()
