# SPDX-License-Identifier: GPL-2.0-or-later
"""bench/timing_sweep.py (`scripts/nfabric bench timing`) without the tool:
its options, its reading of the tool's lines, the sweeps' rows and the
verdict against the paper's bound, with a stand-in model."""

import contextlib
import io
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "bench"))

import timing_sweep as ts  # noqa: E402
from nfmachine.tap import done, ok  # noqa: E402


def refused(argv):
    """main(['check', *argv]): its status and what it wrote to stderr."""
    err = io.StringIO()
    with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
        rc = ts.main(["check", *argv])
    return rc, err.getvalue()


class FakeModel(ts.Model):
    """Answers every run with figures derived from its arguments."""

    def __init__(self):
        super().__init__("nfabric-timing", 10)
        self.calls = []

    def run(self, *args):
        self.calls.append(args)
        return {"exposed_pct": str(len(self.calls)), "mean_queued": "1.5",
                "max_queued": "3", "mean_in_flight": "2.25", "max_in_flight": "4",
                "link_util_pct": "50", "latency_added_pct": "0.1",
                "runtime_added_pct": "0.2"}


def main():
    o = ts.Options(["--count", "42", "--no-plot", "--docs"])
    ok(o.count == 42 and not o.plot and o.docs, "options: --count N --no-plot --docs")
    ok(ts.Options(["--count=7"]).count == 7, "options: --count=N")
    ok(ts.Options([]).count == 10000 and ts.Options([]).plot, "options: the defaults")
    rc, err = refused(["--count", "x"])
    ok(rc == 1 and '--count: a number, not "x"' in err, "a count that is no number is refused", err)
    rc, err = refused(["--count"])
    ok(rc == 1 and "--count needs a value" in err, "--count without a value is refused", err)
    rc, err = refused(["--bogus"])
    ok(rc == 2 and 'unknown option "--bogus"' in err and "usage:" in err,
       "an unknown option is refused with the usage", err)
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        rc = ts.main(["check", "--help"])
    ok(rc == 0 and out.getvalue().startswith("usage: scripts/nfabric bench timing"), "--help")
    err = io.StringIO()
    with contextlib.redirect_stderr(err):
        rc = ts.main([])
    ok(rc == 2 and "check|run" in err.getvalue(), "no step (check or run): refused", err.getvalue())

    kv = ts.parse_kv("exposed_pct=0.5\nnoise line\nmax_queued=3\nexposed_pct=0.75\n")
    ok(kv == {"exposed_pct": "0.75", "max_queued": "3"}, "key=value lines read, the last wins", kv)
    ok(ts.num("nan") != ts.num("nan") and ts.num("x") != ts.num("x") and ts.num("1.25") == 1.25,
       "a figure that is no number reads as nan")

    m = FakeModel()
    rows = ts.load_sweep(m)
    ok(len(rows) == len(ts.LOADS) and all(len(r) == 12 for r in rows),
       "load sweep: a row of 12 columns per offered load", rows[:1])
    ok(len(m.calls) == 4 * len(ts.LOADS) and m.calls[1] == ("--load", "0.05", "--arrivals", "poisson"),
       "load sweep: four runs per load, the second Poisson", m.calls[:4])
    m = FakeModel()
    rows = ts.depth_sweep(m)
    ok(len(rows) == len(ts.DEPTHS) and rows[-1][0] == "32" and all(len(r) == 6 for r in rows),
       "depth sweep: a row per depth, 0 to 32", rows[-1:])
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        ts.print_load_table(ts.load_sweep(FakeModel()), "0.5")
        ts.print_depth_table(rows)
    text = out.getvalue()
    ok("  0.05 |    1.0000    2.0000 |    3.0000    4.0000 |     1.50      3       2.2      4   50.0 |  0.100  0.200"
       in text, "the load table's row as the shell front door printed it", text[:400])

    class Failing(ts.Model):
        def __init__(self):
            super().__init__("/nonexistent/nfabric-timing-tool", 10)
    try:
        Failing().run("--dependent")
        failed = ""
    except ts.BenchError as e:
        failed = str(e)
    ok(failed != "", "a tool that cannot run is an error, not a figure", failed)
    return done()


if __name__ == "__main__":
    sys.exit(main())
