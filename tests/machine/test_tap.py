# SPDX-License-Identifier: GPL-2.0-or-later
"""scripts/nfmachine/tap.py: the one TAP writer of the suites and of these
tests.

Run by the unit suite:  PYTHONPATH=scripts:QEMU_SRC/python python3 THIS
"""

import contextlib
import io
import sys

from nfmachine.tap import Tap, done, ok


def main():
    lines = []
    t = Tap(lines.append)
    good = t.ok(True, "fine", "not shown")
    bad = t.ok(0, "broken", "wanted 1\nseen 0")
    t.diag(["why"])
    t.note("a note")
    ok(lines == ["ok 1 - fine", "not ok 2 - broken", "#   wanted 1", "#   seen 0", "#   why",
                 "# a note"] and good and not bad,
       "numbered checks, a failure's detail as comments after it, notes", lines)
    ok(t.n == 2 and t.passed == 1 and t.failed == 1 and t.status() == 1,
       "counts; the status of a run with a failure is 1", (t.n, t.passed, t.failed))

    lines = []
    t = Tap(lines.append, prefix="libvirt: ", numbered=False)
    t.ok(True, "a")
    t.ok(False, "b", ["x", "y"], numbered=True)
    t.ok(False, "c")
    t.lines(["ok 1 - a guest's line", "1..1"], "")
    ok(lines == ["ok - libvirt: a", "not ok 1 - libvirt: b", "#   x", "#   y",
                 "not ok - libvirt: c", "ok 1 - a guest's line", "1..1"] and t.failed == 2,
       "a prefix, unnumbered checks and one numbered, lines relayed as they are", lines)

    out = io.StringIO()
    t = Tap(out)
    t.ok(True, "on a stream")
    status = t.done()
    ok(out.getvalue() == "ok 1 - on a stream\n1..1\n" and status == 0,
       "a stream as the output; done(): the plan, status 0", out.getvalue())

    with contextlib.redirect_stdout(io.StringIO()) as said:
        t = Tap()
        t.ok(False, "on stdout", "")
        t.ok(False, "detail of another type", 42)
        status = t.done()
    ok(said.getvalue() == "not ok 1 - on stdout\nnot ok 2 - detail of another type\n#   42\n1..2\n"
       and status == 1,
       "by default the stdout of the moment; an empty detail prints nothing", said.getvalue())
    return done()


if __name__ == "__main__":
    sys.exit(main())
