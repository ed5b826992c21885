# SPDX-License-Identifier: GPL-2.0-or-later
"""Boot a guest on QEMU's own qemu.machine and watch it to the end.

Every VM the project boots is started here: `GuestVM` is a QEMUMachine
(QMP over a socket pair, the console over another, QEMU's own messages
in its log, shutdown and clean-up as QEMU's functional tests have them)
that copies the console to a log (and to stdout unless quiet), relays
QEMU's messages to stderr as they come, and reads the guest's markers:
NFABRIC-READY / NFABRIC-NOT-READY once the CXL region is set up and
NFABRIC-EXIT=<status> when the guest's command ended (guest/init/init).

`boot()` is the one loop: a deadline for the whole run, a boot that
prints nothing for `hang_s` seconds is killed, reported and started once
more (not one started paused, -S, or waiting for a migration, -incoming:
its console is quiet until another lets it run), and the result is the guest command's status (docs/guest.md).  Its
messages and QEMU's go to stderr, or to a file of the guest's own (`err`:
the lifecycle suite's NAME.err); `stop` (an Event) stops that guest alone.
"""

import asyncio
import contextlib
import logging
import os
import select
import signal
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from concurrent.futures import TimeoutError as FutureTimeout
from dataclasses import dataclass
from typing import Iterator, List, Optional, Set, TextIO, Tuple

from qemu.machine import QEMUMachine
from qemu.machine.machine import VMLaunchFailure

# Exit statuses of `scripts/nfabric vm` (its --help).
TIMED_OUT = 124
NO_STATUS = 125


class GuestVM(QEMUMachine):
    """A QEMUMachine whose console is read by boot() (never drained)."""

    def __init__(self, binary: str, args: List[str], temp_dir: str, name: str):
        super().__init__(binary, args, name=name, base_temp_dir=temp_dir)
        self.set_console()

    @property
    def qemu_log_path(self) -> Optional[str]:
        """QEMU's own stdout and stderr (while it runs)."""
        return self._qemu_log_path

    def launch(self) -> None:
        # Known before QEMU starts, so that stop_all() reaches a guest
        # whose launch is under way (it kills the process once it exists).
        with _LIVE_LOCK:
            if _STOPPING.is_set():
                raise Stopped("the guests are being stopped")
            _LIVE.add(self)
        try:
            super().launch()
        finally:
            self._launch_done()

    # QEMUMachine makes QEMU's ends of its QMP and console socket pairs
    # inheritable and starts QEMU with close_fds=False, then closes them in
    # this process.  A QEMU another thread started meanwhile would inherit
    # them and keep this guest's console open after its QEMU exited: its
    # watcher would see no end until that other QEMU ended (the multihost
    # suite's jobs2: the attacker's end seen only when the victims ended).
    # So one launch at a time, from the socket pairs to their closing.
    def _pre_launch(self) -> None:
        _LAUNCH_LOCK.acquire()
        self._launching = True
        super()._pre_launch()

    def _post_launch(self) -> None:
        for pair in (self._sock_pair, self._cons_sock_pair):
            if pair:
                pair[0].close()
        self._launch_done()
        super()._post_launch()

    def _launch_done(self) -> None:
        if getattr(self, "_launching", False):
            self._launching = False
            _LAUNCH_LOCK.release()

    def _post_shutdown(self) -> None:
        with _LIVE_LOCK:
            _LIVE.discard(self)
        super()._post_shutdown()


class Stopped(RuntimeError):
    """stop_all() was called: no guest is started any more."""


# One QEMU started at a time (GuestVM._pre_launch).
_LAUNCH_LOCK = threading.Lock()

# The guests launched and not yet reaped, for stop_all().
_LIVE: Set[GuestVM] = set()
_LIVE_LOCK = threading.Lock()
_STOPPING = threading.Event()


def _signal(vm: QEMUMachine, sig: int) -> None:
    """SIG to VM's QEMU if it runs."""
    popen = vm._popen                          # pylint: disable=protected-access
    if popen is not None and popen.poll() is None:
        try:
            popen.send_signal(sig)
        except ProcessLookupError:
            pass


def _signal_all(sig: int) -> None:
    with _LIVE_LOCK:
        live = list(_LIVE)
    for vm in live:
        _signal(vm, sig)


# Where the messages of the guest a thread watches go (boot()'s `err`).
_ERR = threading.local()


def _stderr() -> TextIO:
    """This thread's guest's message stream: its `err`, else stderr."""
    return getattr(_ERR, "stream", None) or sys.stderr


class _MessageHandler(logging.StreamHandler):
    """python/qemu's warnings ('qemu received signal 9; command: ...')
    among the messages of the guest whose watcher logs them."""

    @property
    def stream(self) -> TextIO:
        return _stderr()

    @stream.setter
    def stream(self, _value) -> None:
        pass                              # always the thread's stream


_HANDLER = _MessageHandler()
_HANDLER.setLevel(logging.WARNING)
logging.getLogger("qemu").addHandler(_HANDLER)


def stop_all() -> None:
    """Stop every guest: SIGTERM (QEMU exits cleanly, removing its pid file
    and sockets), SIGKILL to what still runs 5 s later; no guest is
    started or started again meanwhile (a boot being retried gives up).
    Their watchers see the console close and reap them."""
    _STOPPING.set()
    _signal_all(signal.SIGTERM)
    t = threading.Timer(5, _signal_all, (signal.SIGKILL,))
    t.daemon = True
    t.start()


@dataclass
class Outcome:
    status: int                   # what `vm` exits with
    ready_s: Optional[float] = None
    ready_line: str = ""
    not_ready: bool = False
    exit_status: Optional[int] = None
    qemu_status: Optional[int] = None
    hung: bool = False
    stopped: bool = False         # by stop_all() or boot()'s stop
    qemu_message: str = ""


class _Relay:
    """Copies QEMU's log file to stderr (or `err`) as it grows."""

    def __init__(self, path: Optional[str]):
        self.f = open(path, "rb") if path else None
        self.text = b""

    def pump(self) -> None:
        if self.f is None:
            return
        chunk = self.f.read()
        if chunk:
            self.text += chunk
            stream = _stderr()
            out = getattr(stream, "buffer", None)
            if out is not None:
                out.write(chunk)
            else:                    # a text stream (a caller's redirection)
                stream.write(chunk.decode(errors="replace"))
            stream.flush()

    def close(self) -> None:
        self.pump()
        if self.f is not None:
            self.f.close()
            self.f = None

    def last_line(self) -> str:
        lines = [l for l in self.text.decode(errors="replace").splitlines() if l.strip()]
        return lines[-1] if lines else ""


class _Console:
    """Splits the console into lines; notes the markers."""

    def __init__(self, log, quiet: bool, t0: float, out: Outcome):
        self.log, self.quiet, self.t0, self.out = log, quiet, t0, out
        self.buf = b""
        self.seen = False

    def feed(self, data: bytes) -> None:
        self.seen = True
        self.buf += data
        *lines, self.buf = self.buf.split(b"\n")
        for raw in lines:
            self.line(raw)

    def flush(self) -> None:
        if self.buf:
            self.line(self.buf)
            self.buf = b""

    def line(self, raw: bytes) -> None:
        text = raw.rstrip(b"\r").decode(errors="replace")
        if not self.quiet:
            sys.stdout.write(text + "\n")
            sys.stdout.flush()
        self.log.write(text + "\n")
        self.log.flush()
        if "NFABRIC-READY" in text or "NFABRIC-NOT-READY" in text:
            self.out.ready_s = time.monotonic() - self.t0
            self.out.ready_line = text
            self.out.not_ready = "NFABRIC-NOT-READY" in text
        elif text.startswith("NFABRIC-EXIT="):
            try:
                self.out.exit_status = int(text[len("NFABRIC-EXIT="):])
            except ValueError:
                self.out.exit_status = NO_STATUS


def _say(text: str) -> None:
    """One message line on stderr (or `err`), written at once (the
    watchers of a cluster's hosts write from threads of their own)."""
    stream = _stderr()
    stream.write(text + "\n")
    stream.flush()


def _qemu_status(vm: QEMUMachine) -> Optional[int]:
    rc = vm.exitcode()
    if rc is not None and rc < 0:
        return 128 - rc        # killed by a signal: as a shell says it
    return rc


def _attempt(binary: str, args: List[str], temp_dir: str, log_path: str,
             quiet: bool, timeout: Optional[float], hang_s: Optional[float],
             name: str, stop: Optional[threading.Event] = None) -> Outcome:
    out = Outcome(status=0)
    t0 = time.monotonic()
    vm = GuestVM(binary, args, temp_dir, name)
    with open(log_path, "w", encoding="utf-8") as log:
        console = _Console(log, quiet, t0, out)
        try:
            vm.launch()
        except Stopped:
            out.stopped = True
            return out
        except VMLaunchFailure as exc:
            out.qemu_status = exc.exitcode if exc.exitcode is not None else 1
            if out.qemu_status < 0:
                out.qemu_status = 128 - out.qemu_status
            text = exc.output or ""
            _stderr().write(text)
            lines = [l for l in text.splitlines() if l.strip()]
            out.qemu_message = lines[-1] if lines else str(exc.__cause__ or exc)
            return out
        relay = None
        told = False                         # of stop_all()
        stop_t: Optional[float] = None       # when `stop` was seen set
        try:
            relay = _Relay(vm.qemu_log_path)
            sock = vm.console_socket
            while True:
                now = time.monotonic()
                if timeout is not None and now - t0 >= timeout:
                    out.status = TIMED_OUT
                    vm.shutdown(hard=True)
                    break
                if _STOPPING.is_set() and not told:
                    told = True              # launched as stop_all() ran
                    _signal_all(signal.SIGTERM)
                if stop is not None and stop.is_set() and stop_t is None:
                    stop_t = now             # this guest alone: SIGTERM,
                    _signal(vm, signal.SIGTERM)
                if stop_t is not None and now - stop_t >= 5:
                    vm.shutdown(hard=True)   # SIGKILL 5 s later
                    break
                if hang_s is not None and not console.seen and now - t0 >= hang_s:
                    out.hung = True
                    vm.shutdown(hard=True)
                    break
                ready, _, _ = select.select([sock.fileno()], [], [], 0.2)
                relay.pump()
                if ready:
                    data = sock.recv(65536)
                    if not data:
                        break          # QEMU closed the console: it exits
                    console.feed(data)
            console.flush()
            if out.status != TIMED_OUT and not out.hung:
                # The guest powered off (or QEMU stopped): let it finish.
                try:
                    vm.wait(timeout=30)
                except Exception:     # noqa: BLE001 (AbnormalShutdown: killed)
                    pass
        finally:
            vm.shutdown(hard=True)     # whatever happened: no QEMU outlives this
            out.stopped = _STOPPING.is_set() or stop_t is not None
            if relay is not None:
                relay.close()
                out.qemu_message = relay.last_line()
            out.qemu_status = _qemu_status(vm)
    return out


def boot(binary: str, args: List[str], temp_dir: str, log_path: str, *,
         quiet: bool = False, timeout: Optional[float] = None,
         hang_s: Optional[float] = 120, hang_log: Optional[str] = None,
         have_run: bool = True, label: str = "vm", err: Optional[TextIO] = None,
         stop: Optional[threading.Event] = None) -> Outcome:
    """Launch the guest and watch it to the end, twice if its boot hangs.
    Messages start with LABEL ("vm", or "host 1" in a cluster); they and
    QEMU's own go to ERR if given (else stderr).  Setting STOP stops this
    guest alone (SIGTERM, SIGKILL 5 s later), as stop_all() does all."""
    saved = getattr(_ERR, "stream", None)
    _ERR.stream = err
    try:
        return _boot(binary, args, temp_dir, log_path, quiet, timeout, hang_s, hang_log,
                     have_run, label, stop)
    finally:
        _ERR.stream = saved


def _boot(binary: str, args: List[str], temp_dir: str, log_path: str, quiet: bool,
          timeout: Optional[float], hang_s: Optional[float], hang_log: Optional[str],
          have_run: bool, label: str, stop: Optional[threading.Event]) -> Outcome:
    name = f"{label.replace(' ', '')}-{os.getpid()}"
    if "-S" in args or "-incoming" in args:
        # Started paused, or waiting for a migration: its console is quiet
        # until someone else lets it run (QMP cont, the migration), which
        # may be long after the launch, and a second launch would not be
        # let run again.  No hang watch: its deadline still holds.
        hang_s = None
    for attempt in (1, 2):
        out = _attempt(binary, args, temp_dir, log_path, quiet, timeout, hang_s, name, stop)
        if not out.hung or _STOPPING.is_set() or (stop is not None and stop.is_set()):
            out.hung = False
            break
        if hang_log:
            os.makedirs(os.path.dirname(hang_log), exist_ok=True)
            with open(hang_log, "a", encoding="utf-8") as f:
                f.write(time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()) +
                        f" boot hung (nothing on the console in {hang_s:g} s),"
                        f" attempt {attempt}: {log_path}\n")
        if attempt == 1:
            _say(f"{label}: BOOT HUNG: the guest printed nothing in {hang_s:g} s;"
                  " killed it, starting it once more")
        else:
            _say(f"{label}: BOOT HUNG twice: the guest printed nothing in {hang_s:g} s"
                  f" (console: {log_path})")
            out.status = TIMED_OUT
            return out
    return _verdict(out, log_path, timeout, have_run, label)


@contextlib.contextmanager
def thread_event_loop() -> Iterator[None]:
    """An asyncio loop of this thread's own for qemu.qmp (its sync shim
    would make one and leave it to the garbage collector, which may close
    it after its sockets: "Exception ignored in BaseEventLoop.__del__"),
    closed when the block ends."""
    loop = asyncio.new_event_loop()
    asyncio.set_event_loop(loop)
    try:
        yield
    finally:
        asyncio.set_event_loop(None)
        loop.close()


class BootAll:
    """Several guests booted at once (each a (QEMU args, console log) pair:
    the hosts of a cluster), each watched as boot() does in a thread of its
    own, guest r started DELAYS[r] seconds after the first; results() waits
    for their outcomes, in order.  Their consoles go to their logs only;
    messages say "host R" (or LABELS[r]) and go to stderr (or are added
    to the file MESSAGES[r]: boot()'s err)."""

    def __init__(self, binary: str, guests: List[Tuple[List[str], str]], temp_dir: str, *,
                 timeout: Optional[float] = None, hang_s: Optional[float] = 120,
                 hang_log: Optional[str] = None, delays: Optional[List[float]] = None,
                 labels: Optional[List[str]] = None,
                 messages: Optional[List[Optional[str]]] = None):
        n = len(guests)
        self.pool = ThreadPoolExecutor(max_workers=n)
        self.runs = [self.pool.submit(self._one, (delays or [0] * n)[r],
                                      binary, args, temp_dir, log, timeout, hang_s,
                                      hang_log, (labels or [f"host {k}" for k in range(n)])[r],
                                      (messages or [None] * n)[r])
                     for r, (args, log) in enumerate(guests)]

    @staticmethod
    def _one(delay, binary, args, temp_dir, log, timeout, hang_s, hang_log, label, messages):
        if delay:
            time.sleep(delay)
        with thread_event_loop(), contextlib.ExitStack() as stack:
            err = stack.enter_context(open(messages, "a", encoding="utf-8")) \
                if messages else None
            return boot(binary, args, temp_dir, log, quiet=True, timeout=timeout,
                        hang_s=hang_s, hang_log=hang_log, label=label, err=err)

    def done(self, r: int) -> bool:
        """Whether guest r's watch has ended (its QEMU reaped)."""
        return self.runs[r].done()

    def outcome(self, r: int, timeout: float) -> Optional[Outcome]:
        """Guest r's outcome, waiting TIMEOUT s at most; None if it still
        runs then (it is not stopped: results() or stop_all() does)."""
        try:
            return self.runs[r].result(timeout=timeout)
        except FutureTimeout:
            return None

    def results(self) -> List[Outcome]:
        try:
            return [f.result() for f in self.runs]
        except BaseException:
            stop_all()        # SIGTERM or Ctrl-C: none outlives this
            raise
        finally:
            self.pool.shutdown(wait=True)
            _STOPPING.clear()


def boot_all(binary: str, guests: List[Tuple[List[str], str]], temp_dir: str, *,
             timeout: Optional[float] = None, hang_s: Optional[float] = 120,
             hang_log: Optional[str] = None) -> List[Outcome]:
    """BootAll(...).results(): boot the guests at once, their outcomes."""
    return BootAll(binary, guests, temp_dir, timeout=timeout, hang_s=hang_s,
                   hang_log=hang_log).results()


def _verdict(out: Outcome, log_path: str, timeout: Optional[float],
             have_run: bool, label: str) -> Outcome:
    if out.stopped and out.exit_status is None:
        _say(f"{label}: stopped{' with the others' if _STOPPING.is_set() else ''}"
             f" (console: {log_path})")
        out.status = NO_STATUS
        return out
    if out.ready_s is not None:
        if out.not_ready:
            _say(f"{label}: guest setup FAILED after {out.ready_s:.1f} s: {out.ready_line}")
        else:
            rest = out.ready_line.split("NFABRIC-READY ", 1)[-1]
            _say(f"{label}: boot-to-ready {out.ready_s:.1f} s ({rest})")
    if out.status == TIMED_OUT:
        _say(f"{label}: timed out after {timeout:g} s (console: {log_path})")
        return out
    if out.ready_s is None and out.qemu_status not in (0, None):
        # QEMU refused to start (a bad option or property): say so, with
        # its message, and exit with its status.
        _say(f"{label}: QEMU exited with status {out.qemu_status} before the guest"
              f" started: {out.qemu_message}")
        out.status = out.qemu_status
        return out
    if out.exit_status is None:
        if have_run:
            _say(f"{label}: the guest stopped without NFABRIC-EXIT (qemu status"
                  f" {out.qemu_status}; console: {log_path})")
            out.status = NO_STATUS
        else:
            out.status = out.qemu_status or 0
        return out
    if out.exit_status != 0:
        _say(f"{label}: guest command exited with status {out.exit_status}")
    out.status = out.exit_status
    return out


def interactive(binary: str, args: List[str], temp_dir: str, log_path: str) -> int:
    """The guest's console on this terminal (raw), until the guest powers
    off or Ctrl-] is typed (which stops QEMU)."""
    import termios
    import tty
    fd = sys.stdin.fileno()
    saved = termios.tcgetattr(fd)
    vm = GuestVM(binary, args, temp_dir, f"vm-{os.getpid()}")
    vm.launch()
    relay = None
    _say("vm: the guest's console; Ctrl-] stops QEMU")
    try:
        relay = _Relay(vm.qemu_log_path)
        sock = vm.console_socket
        tty.setraw(fd)
        with open(log_path, "wb") as log:
            while True:
                ready, _, _ = select.select([sock.fileno(), fd], [], [], 0.5)
                relay.pump()
                if sock.fileno() in ready:
                    data = sock.recv(65536)
                    if not data:
                        try:           # the guest powered off: QEMU exits
                            vm.wait(timeout=30)
                        except Exception:     # noqa: BLE001 (killed after 30 s)
                            pass
                        break
                    os.write(sys.stdout.fileno(), data)
                    log.write(data)
                if fd in ready:
                    data = os.read(fd, 1024)
                    if b"\x1d" in data:
                        break
                    sock.sendall(data)
    finally:
        termios.tcsetattr(fd, termios.TCSADRAIN, saved)
        vm.shutdown(hard=True)
        if relay is not None:
            relay.close()
    return _qemu_status(vm) or 0


def stop_on_signals() -> None:
    """SIGTERM/SIGHUP end this process through Python's clean-up (the
    machine's shutdown in a finally), not by the default action."""
    def handler(signum, _frame):
        raise SystemExit(128 + signum)
    for s in (signal.SIGTERM, signal.SIGHUP):
        signal.signal(s, handler)
