# SPDX-License-Identifier: GPL-2.0-or-later
"""scripts/nfmachine/guestbench.py (`scripts/nfabric bench guest`) without a
VM: its options, the figures read from consoles (best over rounds), the
key=value lines and their order, and a failed boot, with a stand-in boot."""

import contextlib
import io
import os
import sys
import tempfile

from nfmachine import guestbench as gb
from nfmachine.tap import done, ok
import testkit


def console(kind: str, scale: float) -> str:
    """A console log as nfabric-bench prints it (CRLF, as a serial line)."""
    lines = ["[    1.0] boot noise", "NFABRIC-READY region0"]
    for v in gb.OPS:
        lines.append(f"ram_{v}_MBps={100 * scale:.1f}")
        if kind == "stock":
            lines.append(f"stock_{v}_MBps={10 * scale:.1f}")
        else:
            for k in gb.PATHS:
                lines.append(f"{k}_{v}_MBps={(20 if kind == 'nfabric' else 5) * scale:.1f}")
    if kind == "sysram":
        for k in ("sysram", "node0"):
            for v in gb.OPS + ("gzip",):
                lines.append(f"{k}_{v}_MBps={50 if k == 'sysram' else 100}")
        lines += ["sysram_pages_node=1", "sysram_pages_on_node=256"]
    return "\r\n".join(lines) + "\r\n"


def fake_boot(fail: str = ""):
    """A Boot that writes the console each kind prints; rounds get faster."""
    seen = []

    def boot(argv, log, err):
        name = os.path.basename(log)[len("bench-"):-len(".log")]
        kind, _, r = name.partition("-")
        seen.append((name, argv))
        with open(err, "w", encoding="utf-8") as e:
            e.write(f"vm: boot-to-ready 5.{len(seen)} s\n")
        if kind == fail:
            return 1, None
        with open(log, "w", encoding="utf-8") as f:
            f.write(console(kind, 1 + int(r or 0) / 10))
        return 0, 5 + len(seen) / 10
    return boot, seen


def main():
    o = gb.Options(["--bytes", "1024", "--reps", "2", "--rounds", "3"])
    ok((o.bytes, o.reps, o.rounds) == (1024, 2, 3), "options: --bytes --reps --rounds")
    ok((gb.Options([]).bytes, gb.Options([]).rounds) == (4194304, 2), "options: the defaults")
    for argv, want, usage in ((["--bytes"], "--bytes needs a value", False),
                              (["--reps", "0"], 'bad --reps "0"', False),
                              (["--rounds", "x"], 'bad --rounds "x"', False),
                              (["--bogus"], 'unknown argument "--bogus"', True)):
        got = testkit.refusal(gb.Options, gb.UsageError, argv)
        ok(got is not None and want in str(got) and got.usage == usage,
           f"refused: {' '.join(argv)}", got)
    ok(gb.Options(["--help"]).help, "--help")

    ok(gb.kv("a=1\r\nb=2\r\na=3\r\n", "a") == "3" and gb.kv("ab=1", "a") is None,
       "a key's last value; another key that starts alike is not it")
    ok(gb.best(["x=2.5", "x=10.0", "y=99", "x="], "x") == "10.0", "the best over logs, numerically")
    ok(gb.vm_args("io", o)[:4] == ["--device", "cxl-neuron-fabric", "--device-props", "direct-map=off"]
       and gb.vm_args("stock", o)[-1] == "nfabric-bench --stock --bytes 1024 --reps 2",
       "each kind's vm options")

    with tempfile.TemporaryDirectory() as d:
        boot, seen = fake_boot()
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            rc = gb.run(gb.Options(["--rounds", "2"]), d, boot)
        lines = out.getvalue().splitlines()
        keys = [l.split("=", 1)[0] for l in lines]
        ok(rc == 0 and [s[0] for s in seen] == ["stock-1", "nfabric-1", "io-1", "stock-2",
                                                 "nfabric-2", "io-2", "sysram"],
           "the boots alternate round after round, then System RAM", seen)
        ok(all("--timeout" in a and "--quiet" in a for _, a in seen), "every boot has a timeout")
        fig = dict(l.split("=", 1) for l in lines)
        ok(fig.get("stock_write_MBps") == "12.0" and fig.get("gbinary_write_MBps") == "24.0",
           "each figure the best of the rounds", fig.get("stock_write_MBps"))
        ok(fig.get("plain_write_vs_stock") == "2.000" and fig.get("plain_write_direct_vs_io") == "4.000"
           and fig.get("sysram_gzip_vs_ram") == "0.500", "ratios with three decimals")
        ok(fig.get("gbinary_fp32_equiv_write_MBps") == "768.0", "G-Binary's FP32-equivalent rate (x32)")
        ok(fig.get("boot_to_ready_stock_s") == "5.1" and fig.get("boot_to_ready_nfabric_s") == "5.2",
           "boot-to-ready of the first round's boots")
        ok(keys[:6] == ["bench", "bytes", "reps", "rounds", "access_bytes", "memcpy_block_bytes"]
           and keys[-2:] == ["boot_to_ready_stock_s", "boot_to_ready_nfabric_s"]
           and len(keys) == len(set(keys)) == 6 + 40 + 9 + 8 + 6 + 10 + 2 + 5 + 2 + 2,
           "every key once, in the front door's order", len(keys))

        boot, _ = fake_boot(fail="io")
        err = io.StringIO()
        try:
            with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
                gb.run(gb.Options(["--rounds", "1"]), d, boot)
            msg = ""
        except gb.BenchError as e:
            msg = str(e)
        ok("the io boot failed" in msg and "boot-to-ready" in err.getvalue(),
           "a failed boot: its messages, then an error naming it", msg)

        try:
            gb.figures({"stock": ["stock_write_MBps=1", "ram_write_MBps=2"],
                        "nfabric": [], "io": []}, "")
            msg = ""
        except gb.BenchError as e:
            msg = str(e)
        ok(msg.startswith("bench guest: no plain_write_MBps from the device boots"), "a missing figure is an error", msg)
    return done()


if __name__ == "__main__":
    sys.exit(main())
