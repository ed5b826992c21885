# SPDX-License-Identifier: GPL-2.0-or-later
"""scripts/nfmachine/qtest_suite.py (suite `qtest`) without QEMU: a refusal
and an acceptance judged from a stand-in QEMU's status and words, the
bounded wait for a trace line, and QEMU's refusal relayed by `vm`."""

import contextlib
import io
import os
import stat
import sys
import tempfile
from types import SimpleNamespace

from nfmachine import qtest_suite as qs
from nfmachine.tap import done, ok


def stand_in(d, status, words):
    """A QEMU that prints words and exits with status (monitor input read)."""
    path = os.path.join(d, f"qemu-{status}")
    with open(path, "w", encoding="utf-8") as f:
        f.write(f"#!/bin/sh\ncat\necho \"{words}\" >&2\nexit {status}\n")
    os.chmod(path, os.stat(path).st_mode | stat.S_IXUSR)
    return path


def main():
    with tempfile.TemporaryDirectory() as d:
        s = qs.Suite(stand_in(d, 1, "qemu: property 'clock-mhz' must be in 1..100000, not 0"), d, d)
        with contextlib.redirect_stdout(io.StringIO()) as out:
            s.refused("clock-mhz=0", "property 'clock-mhz' must be in", "dev")
        ok(out.getvalue() == "ok 1 - refused: clock-mhz=0\n" and not s.tap.failed,
           "a refusal with the words wanted", out.getvalue())
        with contextlib.redirect_stdout(io.StringIO()) as out:
            s.refused("other words", "property 'link-mbps'", "dev")
        ok(out.getvalue().startswith("not ok 2 - refused: other words (rc=1)\n#   ") and s.tap.failed,
           "a refusal with other words fails, QEMU's output as comments", out.getvalue())
        s = qs.Suite(stand_in(d, 0, "started"), d, d)
        with contextlib.redirect_stdout(io.StringIO()) as out:
            s.refused("not refused", "anything", "dev")
            s.accepted("defaults", "dev")
        ok(out.getvalue().splitlines()[0] == "not ok 1 - refused: not refused (rc=0)"
           and "ok 2 - accepted: defaults" in out.getvalue(),
           "QEMU that starts: not a refusal, an acceptance", out.getvalue())

        log = os.path.join(d, "trace.log")
        with open(log, "w", encoding="utf-8") as f:
            f.write("nfabric_head_attach head 0 of 2: created\n")
        ok(qs.wait_log(log, "nfabric_head_attach", ticks=2), "a trace line found")
        with contextlib.redirect_stdout(io.StringIO()) as out:
            found = qs.wait_log(os.path.join(d, "none.log"), "x", ticks=2)
        ok(not found and "no 'x' after 2 tries" in out.getvalue(), "its wait is bounded and says so")

        os.makedirs(os.path.join(d, "test-logs"), exist_ok=True)

        def boot_vm(argv, err, status=1):
            with open(err, "w", encoding="utf-8") as f:
                f.write("vm: QEMU exited with status 1 before the guest started: "
                        "qemu: -device x: property 'clock-mhz' must be in 1..100000, not 0\n")
            return SimpleNamespace(status=status)
        s = qs.Suite("qemu", d, d)
        with contextlib.redirect_stdout(io.StringIO()) as out:
            s.vm_refused(boot_vm)
            s.vm_refused(lambda a, e: boot_vm(a, e, status=0))
        lines = out.getvalue().splitlines()
        ok(lines[0].startswith("ok 1 - vm: a property QEMU refuses is reported")
           and lines[1] == "not ok 2 - vm: refused property: status 0",
           "vm relays QEMU's refusal with its status; another status fails", lines)
    return done()


if __name__ == "__main__":
    sys.exit(main())
