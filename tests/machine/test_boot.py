# SPDX-License-Identifier: GPL-2.0-or-later
"""TAP: scripts/nfmachine/vm.py's watch of a guest, against a stand-in QEMU.

Run by the unit suite:  PYTHONPATH=scripts:QEMU_SRC/python python3 THIS
fake_qemu.py speaks QMP (through QEMU's own qemu.qmp on this side) and
writes the console markers; each case checks boot()'s verdict: the guest
command's status, QEMU's refusal with its message, a timeout, a boot hang
started once more, QEMU's messages relayed (or written to a guest's own
file), one guest stopped alone, and that no process is left.
"""

import contextlib
import io
import os
import signal
import sys
import tempfile
import threading
import time

from nfmachine.tap import done, ok
import testkit
from nfmachine import vm

FAKE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "fake_qemu.py")


def run(mode, tmp, args=("-nodefaults",), **kw):
    """boot() the stand-in in MODE; (outcome, its stderr, the console log)."""
    os.environ["FAKE_QEMU_MODE"] = mode
    log = os.path.join(tmp, f"{mode}.log")
    err = io.StringIO()
    t = time.monotonic()
    with contextlib.redirect_stderr(err):
        # QEMU's relayed messages are written to stderr's buffer directly.
        out = vm.boot(FAKE, list(args), tmp, log, quiet=True, **kw)
    with open(log, encoding="utf-8") as f:
        console = f.read()
    return out, err.getvalue(), console, time.monotonic() - t


def main():
    with tempfile.TemporaryDirectory(prefix="nfmachine-test-") as tmp:
        out, err, console, _ = run("exit3", tmp, timeout=60)
        ok(out.status == 3 and out.exit_status == 3 and out.qemu_status == 0,
           "the guest command's status (NFABRIC-EXIT=3) is vm's", out)
        ok(out.ready_s is not None and "vm: boot-to-ready" in err
           and "region=region0" in err, "NFABRIC-READY read: boot-to-ready printed", err)
        ok(console.splitlines() == ["booting", "NFABRIC-READY uptime=0.1s region=region0",
                                    "NFABRIC-EXIT=3", "reboot: Power down"],
           "the console in the log, CRs dropped, the last line without a newline kept",
           console)
        ok("vm: guest command exited with status 3" in err, "a non-zero status is said", err)

        out, err, _, _ = run("noexit", tmp, timeout=60)
        ok(out.status == vm.NO_STATUS and "stopped without NFABRIC-EXIT" in err,
           "a guest that stops without a status: 125, said", err)

        out, err, _, _ = run("refuse", tmp, timeout=60)
        ok(out.status == 1 and "vm: QEMU exited with status 1 before the guest started: "
           "qemu-system-x86_64: -device cxl-neuron-fabric,clock-mhz=0: property "
           "'clock-mhz' must be in" in err,
           "QEMU's refusal: its status and its message", err)

        out, err, _, secs = run("forever", tmp, timeout=2)
        ok(out.status == vm.TIMED_OUT and "vm: timed out after 2 s" in err and secs < 15,
           f"--timeout: killed, 124, said ({secs:.1f} s)", err)

        hangs = os.path.join(tmp, "hangs.log")
        out, err, _, secs = run("silent", tmp, timeout=60, hang_s=1, hang_log=hangs)
        noted = open(hangs, encoding="utf-8").read().splitlines() if os.path.exists(hangs) else []
        ok(out.status == vm.TIMED_OUT and err.count("BOOT HUNG") == 2
           and "starting it once more" in err and len(noted) == 2
           and "attempt 1" in noted[0] and "attempt 2" in noted[1],
           f"a boot that prints nothing: killed, started once more, 124 after the"
           f" second, both noted ({secs:.1f} s)", f"{out}\n{err}")

        out, err, _, _ = run("silent", tmp, timeout=2, hang_s=None)
        ok(out.status == vm.TIMED_OUT and "BOOT HUNG" not in err,
           "no hang watch (a migration's destination): only the timeout", err)

        for flag in (["-S"], ["-incoming", "defer"]):
            out, err, _, secs = run("silent", tmp, args=["-nodefaults"] + flag, timeout=3,
                                    hang_s=1, hang_log=hangs)
            ok(out.status == vm.TIMED_OUT and "BOOT HUNG" not in err and secs >= 3,
               f"a guest started with {flag[0]} (quiet until another lets it run) is not"
               f" killed as hung: only its deadline ({secs:.1f} s)", f"{out}\n{err}")

        # QEMU's own messages reach stderr: through sys.stderr.buffer, so
        # catch them at the file descriptor.
        r, w = os.pipe()
        saved = os.dup(2)
        os.dup2(w, 2)
        try:
            sys.stderr = io.TextIOWrapper(os.fdopen(2, "wb", closefd=False), write_through=True)
            os.environ["FAKE_QEMU_MODE"] = "warn"
            out = vm.boot(FAKE, [], tmp, os.path.join(tmp, "warn.log"), quiet=True, timeout=60)
            sys.stderr.flush()
        finally:
            os.dup2(saved, 2)
            os.close(w)
            sys.stderr = sys.__stderr__
        relayed = os.read(r, 65536).decode()
        os.close(r)
        ok(out.status == 0 and "qemu-system-x86_64: warning: fake warning" in relayed,
           "QEMU's messages relayed to stderr while it runs", relayed)

        # An error inside the watch (here: the relay) stops the QEMU.
        orig = vm._Relay

        class Broken(orig):
            def __init__(self, path):
                raise RuntimeError("broken relay")
        vm._Relay = Broken
        try:
            run("forever", tmp, timeout=60)
            raised = False
        except RuntimeError:
            raised = True
        finally:
            vm._Relay = orig
        left = [p for p in os.listdir("/proc") if p.isdigit() and testkit.is_fake(p, FAKE)]
        ok(raised and not left, "an error while watching is raised, and its QEMU is stopped",
           f"raised={raised} left={left}")

        # A guest's own message file (`err`): its messages and QEMU's go
        # there, none to stderr.
        os.environ["FAKE_QEMU_MODE"] = "warn"
        own, stderr = io.StringIO(), io.StringIO()
        with contextlib.redirect_stderr(stderr):
            out = vm.boot(FAKE, [], tmp, os.path.join(tmp, "own.log"), quiet=True,
                          timeout=60, err=own)
        ok(out.status == 0 and "vm: boot-to-ready" in own.getvalue()
           and "qemu-system-x86_64: warning: fake warning" in own.getvalue()
           and not stderr.getvalue(), "err: the guest's messages and QEMU's in its own file",
           f"err: {own.getvalue()!r}\nstderr: {stderr.getvalue()!r}")

        # `stop`: this guest alone is stopped (the lifecycle suite's reap).
        os.environ["FAKE_QEMU_MODE"] = "forever"
        stop, own = threading.Event(), io.StringIO()
        threading.Timer(1, stop.set).start()
        t = time.monotonic()
        out = vm.boot(FAKE, [], tmp, os.path.join(tmp, "stop.log"), quiet=True, timeout=60,
                      err=own, stop=stop)
        secs = time.monotonic() - t
        ok(out.status == vm.NO_STATUS and out.stopped and secs < 8
           and "vm: stopped (console:" in own.getvalue() and not vm._STOPPING.is_set(),
           f"stop: the guest stopped at once ({secs:.1f} s), said, the others' flag untouched",
           own.getvalue())

        # Several guests at once (a cluster): each one's verdict, in order.
        os.environ["FAKE_QEMU_MODE"] = "exit3"
        err = io.StringIO()
        with contextlib.redirect_stderr(err):
            outs = vm.boot_all(FAKE, [([], os.path.join(tmp, f"h{r}.log")) for r in range(3)],
                               tmp, timeout=60)
        ok([o.status for o in outs] == [3, 3, 3] and err.getvalue().count("host 2: ") == 2,
           "boot_all: three guests, each status 3, messages by host", err.getvalue())
        t = time.monotonic()
        with contextlib.redirect_stderr(io.StringIO()):
            outs = vm.BootAll(FAKE, [([], os.path.join(tmp, f"d{r}.log")) for r in range(2)],
                              tmp, timeout=60, delays=[0, 1.5]).results()
        secs = time.monotonic() - t
        ok([o.status for o in outs] == [3, 3] and secs >= 1.5
           and outs[1].ready_s is not None,
           f"BootAll with a delay (--stagger): the second guest starts 1.5 s later ({secs:.1f} s)")

        # Two launched at once: the one that ends is seen ending at once,
        # however long the other runs (no QEMU holds another's console).
        # QEMUMachine's Popen made slow, so that launches would overlap.
        from qemu.machine import machine as qm
        popen = qm.subprocess.Popen

        def slow_popen(*a, **kw):
            p = popen(*a, **kw)
            time.sleep(0.5)
            return p
        qm.subprocess.Popen = slow_popen
        try:
            t = time.monotonic()
            with contextlib.redirect_stderr(io.StringIO()):
                watch = vm.BootAll(FAKE, [(["-fake-mode", "exit3"], os.path.join(tmp, "i0.log")),
                                          (["-fake-mode", "forever"], os.path.join(tmp, "i1.log"))],
                                   tmp, timeout=8)
                first = watch.outcome(0, 30)
                first_s = time.monotonic() - t
                watch.results()
        finally:
            qm.subprocess.Popen = popen
        ok(first is not None and first.status == 3 and first_s < 6,
           f"two guests launched at once: the first's end seen after {first_s:.1f} s, not when"
           " the other ends (8 s): no QEMU inherits another's console", first_s)

        # One host of a multihost case: its own label, its messages (QEMU's
        # relayed, the verdict) in a file of its own, a bounded wait.
        os.environ["FAKE_QEMU_MODE"] = "warn"
        msgs = os.path.join(tmp, "host5.out")
        with open(msgs, "w", encoding="utf-8") as f:
            f.write("first line\n")
        err = io.StringIO()
        with contextlib.redirect_stderr(err):
            watch = vm.BootAll(FAKE, [([], os.path.join(tmp, "l5.log"))], tmp, timeout=60,
                               labels=["host 5"], messages=[msgs])
            early = watch.outcome(0, 0.01)
            out = watch.outcome(0, 30)
            watch.results()
        text = _read(msgs)
        ok(early is None and out is not None and out.status == 0 and watch.done(0)
           and text.startswith("first line\n") and "fake warning" in text
           and "host 5: boot-to-ready" in text and err.getvalue() == "",
           "BootAll with labels and messages: the guest's messages added to its file,"
           " none on stderr; outcome() waits a bounded time", f"{text}\n{err.getvalue()}")

        # A host's QEMU killed from outside (the multihost suite's SIGKILL):
        # python/qemu's warning about it among that host's messages.
        os.environ["FAKE_QEMU_MODE"] = "forever"
        msgs = os.path.join(tmp, "host6.out")
        err = io.StringIO()
        with contextlib.redirect_stderr(err):
            watch = vm.BootAll(FAKE, [([], os.path.join(tmp, "l6.log"))], tmp, timeout=60,
                               labels=["host 6"], messages=[msgs])
            for _ in range(100):
                fakes = [int(p) for p in os.listdir("/proc") if p.isdigit() and testkit.is_fake(p, FAKE)]
                if fakes and "booting" in _read(os.path.join(tmp, "l6.log")):
                    break
                time.sleep(0.1)
            for pid in fakes:
                os.kill(pid, signal.SIGKILL)
            out = watch.outcome(0, 30)
            watch.results()
        text = _read(msgs)
        ok(out is not None and out.status == vm.NO_STATUS and "qemu received signal 9" in text
           and err.getvalue() == "",
           "a guest's QEMU killed from outside: python/qemu's warning in its messages file,"
           " not on stderr", f"{text}\n{err.getvalue()}")

        # stop_all() while guests wait (a refused fabric manager): every one
        # stops at once, none is started again as a hung boot.
        os.environ["FAKE_QEMU_MODE"] = "silent"
        t = time.monotonic()
        err = io.StringIO()
        with contextlib.redirect_stderr(err):
            watch = vm.BootAll(FAKE, [([], os.path.join(tmp, f"s{r}.log")) for r in range(2)],
                               tmp, timeout=60, hang_s=3)
            time.sleep(1)
            vm.stop_all()
            outs = watch.results()
        secs = time.monotonic() - t
        ok(all(o.status == vm.NO_STATUS for o in outs) and secs < 8
           and "BOOT HUNG" not in err.getvalue() and not vm._STOPPING.is_set()
           and err.getvalue().count("stopped with the others") == 2,
           f"stop_all: both waiting guests stopped ({secs:.1f} s), no boot retried", err.getvalue())

        ok(not vm._LIVE, "no guest left registered (every one reaped)", vm._LIVE)
        left = [p for p in os.listdir("/proc") if p.isdigit() and testkit.is_fake(p, FAKE)]
        ok(not left, "no stand-in QEMU process left", left)
        ok(not [d for d in os.listdir(tmp) if d.startswith("qemu-machine-")],
           "QEMUMachine's temporary directories removed", os.listdir(tmp))
    return done()


def _read(path):
    with open(path, encoding="utf-8") as f:
        return f.read()



if __name__ == "__main__":
    sys.exit(main())
