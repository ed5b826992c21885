# SPDX-License-Identifier: GPL-2.0-or-later
"""TAP: scripts/nfmachine/lifecycle.py without booting.

Run by the unit suite:  PYTHONPATH=scripts:QEMU_SRC/python python3 THIS
Checks what the lifecycle suite reads (consoles, the guest's own checks,
query-migrate replies, the device's figures) and its guests' supervision
against the stand-in QEMU of fake_qemu.py: the QMP socket waited for,
console lines waited for, QMP calls, QEMU's exit status, a guest that does
not end stopped (124), a failed start said, none left running.
"""

import io
import os
import contextlib
import sys
import tempfile
import time

from nfmachine.tap import done, ok
import testkit
from nfmachine import lifecycle as lc
from nfmachine import vm
from nfmachine.topology import TopologyError

FAKE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "fake_qemu.py")

CONSOLE = ("nfabric-init: kernel 6.12\r\n"
           "NFABRIC-READY uptime=4.9s region=region0\r\n"
           "LC ok - open the device: registers, region, dax (dax0.0)\r\n"
           "LC not ok - window 0: new round\r\n"
           "LC-MIGRATE-READY\r\n"
           "LC iterations=3233 gbinary-writes=6621184\r\n"
           "NFABRIC-NOT-READY uptime=5s mem0 has no endpoint decoder\r\n"
           "NFABRIC-EXIT=0")


def readers():
    lines = lc.console_lines(CONSOLE)
    ok(len(lines) == 8 and not any("\r" in l for l in lines) and lines[-1] == "NFABRIC-EXIT=0",
       "console lines: every CR dropped, the last line kept", lines)
    ok(lc.count_matching(lines, r"^NFABRIC-READY") == 1
       and lc.count_matching(lines, r"^NFABRIC-(NOT-)?READY") == 2
       and lc.count_matching(lines, r"NFABRIC-NOT-READY") == 1
       and lc.count_matching(lines, r"^LC-RESET-ME") == 0,
       "lines counted as grep -cE does (anchored or anywhere)")
    ok(lc.guest_checks(lines) == [(True, "open the device: registers, region, dax (dax0.0)"),
                                  (False, "window 0: new round")],
       "the guest's LC ok / LC not ok lines, in order", lc.guest_checks(lines))
    ok(lc.guest_gbinary_writes(lines) == 6621184 and lc.guest_gbinary_writes([]) is None,
       "the guest's G-Binary writes from its LC iterations= line")

    reply = {"status": "completed", "ram": {"dirty-sync-count": 5, "total": 1342709760}}
    ok(lc.migrate_status(reply) == "completed" and lc.migrate_status({}) == ""
       and lc.migrate_status(None) == "", "query-migrate: the status, \"\" without one")
    ok(lc.dirty_syncs(reply) == 5 and lc.dirty_syncs({"status": "active"}) is None
       and lc.dirty_syncs(None) is None,
       "query-migrate: ram.dirty-sync-count, None without one")


def figures():
    ok(len(lc.FIGURES) == 26 == len(set(lc.FIGURES))
       and lc.FIGURES[:2] == ["timing-total-ps", "timing-exposed-ppm"]
       and "stats-gternary-write-bytes" in lc.FIGURES and "timing-gbinary-exposed-ps" in lc.FIGURES,
       "26 read-only figures of the device, each once", lc.FIGURES)
    values = {name: i for i, name in enumerate(lc.FIGURES)}
    values["stats-gbinary-writes"] = 4036029
    text = lc.figure_lines(values)
    ok(text.splitlines()[0] == "timing-total-ps=0" and len(text.splitlines()) == 26
       and text.endswith("\n"), "figures as name=value lines, in FIGURES' order", text)
    ok(lc.figure(text, "stats-gbinary-writes") == 4036029 and lc.figure(text, "stats-x") is None
       and lc.figure("(qom-get failed)", "stats-gbinary-writes") is None,
       "one figure read back; None if absent or no figures")
    other = dict(values, **{"timing-total-ps": 7})
    diff = lc.differences(text, lc.figure_lines(other), 10)
    ok(diff == ["< timing-total-ps=0", "> timing-total-ps=7"]
       and lc.differences(text, text, 10) == []
       and len(lc.differences("a\nb\nc", "x\ny\nz", 4)) == 4,
       "differing lines: both sides, none if equal, at most the limit", diff)


def topologies():
    t = lc.topology("cxl-type3", "2G", "1G", "sleep 300", reboot=True, extra=["-S"])
    ok((t.device, t.cpus, t.mem_mib, t.cxl_mib, t.reboot, t.run, t.extra)
       == ("cxl-type3", 1, 2048, 1024, True, "sleep 300", ["-S"]),
       "a guest of the suite: 1 vCPU, the sizes given", t)
    try:
        lc.topology("cxl-neuron-fabric", "lots", "256M", "true")
        ok(False, "a bad NF_LIFECYCLE_MEM is refused", "accepted")
    except TopologyError as exc:
        ok('"lots"' in str(exc), "a bad NF_LIFECYCLE_MEM is refused, naming it", exc)


def bad_size(tmp):
    suite = lc.Suite(machine(tmp), tmp, tmp, "lots", "256M")
    out = io.StringIO()
    try:
        with contextlib.redirect_stdout(out):
            suite.migration()
    finally:
        suite.close()
    ok('mig-src: not started: bad guest RAM size "lots"' in out.getvalue()
       and "not ok 1 - source QEMU started" in out.getvalue() and suite.tap.failed == 1
       and not suite.guests, "a bad NF_LIFECYCLE_MEM: test 1 fails at once, saying why",
       out.getvalue())


def machine(tmp):
    return lc.Machine(binary=FAKE, qemu_args=lambda t: ["-nodefaults"] + t.extra,
                      temp_dir=tmp, hang_s=None, hang_log=os.path.join(tmp, "hangs.log"))


def guest(tmp, pool, name, mode):
    os.environ["FAKE_QEMU_MODE"] = mode
    return lc.Guest(machine(tmp), pool, tmp, name,
                    lc.topology("cxl-neuron-fabric", "1G", "256M", "true"))


def supervision(tmp):
    suite = lc.Suite(machine(tmp), tmp, tmp, "1G", "256M")
    try:
        g = guest(tmp, suite.pool, "a", "forever")
        suite.guests.append(g)
        started = g.start()
        ok(started and os.path.exists(g.pidfile) and g.running(),
           "a guest started: its QMP socket and pid file there, it runs")
        ok(g.wait_for(r"^NFABRIC-READY", 1, 10), "a console line waited for")
        t = time.monotonic()
        waited = g.wait_for(r"^NEVER", 1, 1)
        secs = time.monotonic() - t
        ok(not waited and 0.9 <= secs < 3, f"a line that never comes: False after 1 s ({secs:.1f} s)")
        res = lc.call(g.qmp, "system_reset")
        ok(res == (True, {}), "a QMP call on its socket (qmp.Monitor)", res)
        t = time.monotonic()
        rc = g.wait_exit(1)
        secs = time.monotonic() - t
        ok(rc == vm.TIMED_OUT and not g.running() and secs < 10,
           f"a guest that does not end in time: stopped, 124 ({secs:.1f} s)", rc)
        with open(g.err, encoding="utf-8") as f:
            err = f.read()
        ok(err.startswith("[nfabric] vm: cxl-neuron-fabric, 1 vCPUs, 1024 MiB RAM, 256 MiB CXL")
           and "vm: stopped (console:" in err, "its watcher's messages in NAME.err", err)

        g = guest(tmp, suite.pool, "b", "forever")
        suite.guests.append(g)
        g.start()
        g.wait_for(r"^NFABRIC-READY", 1, 10)
        res = lc.call(g.qmp, "quit")
        ok(res[0] and g.wait_exit(30) == 0, "quit over QMP: QEMU's exit status 0", res)

        g = guest(tmp, suite.pool, "c", "exit3")
        suite.guests.append(g)
        g.start()
        ok(g.wait_for(r"^NFABRIC-EXIT=", 1, 10) and g.wait_exit(30) == 0,
           "QEMU's status, not the guest command's (vm --qemu-status)")
        err = "".join(lc.tail(g.err, 10))
        ok("vm: boot-to-ready" in err and "guest command exited with status 3" in err,
           "NAME.err: boot-to-ready, the guest command's status", err)

        g = guest(tmp, suite.pool, "d", "refuse")
        suite.guests.append(g)
        out = io.StringIO()
        t = time.monotonic()
        with contextlib.redirect_stdout(out):
            started = g.start()
        secs = time.monotonic() - t
        ok(not started and "d: no QMP socket after 15 s: " in out.getvalue()
           and "clock-mhz" in out.getvalue() and secs < 5,
           f"QEMU refusing to start: said with its message, at once ({secs:.1f} s)", out.getvalue())

        g = guest(tmp, suite.pool, "e", "forever")
        suite.guests.append(g)
        g.start()
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            suite.reap()
        ok(not g.running() and "stopping the guest e left by a failed test" in out.getvalue()
           and not suite.guests, "reap: a guest a test left running is stopped, said",
           out.getvalue())
    finally:
        suite.close()
    left = [p for p in os.listdir("/proc") if p.isdigit() and testkit.is_fake(p, FAKE)]
    ok(not left and not vm._LIVE, "no stand-in QEMU left running or registered", left)



def main():
    readers()
    figures()
    topologies()
    with tempfile.TemporaryDirectory(prefix="nfmachine-test-") as tmp:
        supervision(tmp)
        bad_size(tmp)
    return done()


if __name__ == "__main__":
    sys.exit(main())
