# SPDX-License-Identifier: GPL-2.0-or-later
"""scripts/nfmachine/train.py (suite `train`, `bench train`) without
training: options, the study's key lines from fabricated outputs, the
guest's command and the reading of its console, and the guest checks
against a stand-in boot (a match, a mismatch, a guest that cannot run)."""

import contextlib
import io
import os
import sys
import tempfile

from nfmachine import train as tr
from nfmachine.tap import Tap, done, ok
import testkit


def write(path, text):
    with open(path, "w", encoding="utf-8") as f:
        f.write(text)


def main():
    o = tr.BenchOptions(["--seed", "7", "--no-plots", "--", "--steps", "2"])
    ok(o.seed == "7" and not o.plots and o.extra == ["--steps", "2"], "bench options")
    for argv, want, usage in ((["--seed"], "--seed needs a value", False),
                              (["--x"], 'unknown argument "--x"', True)):
        got = testkit.refusal(tr.BenchOptions, tr.UsageError, argv)
        ok(got is not None and want in str(got) and got.usage == usage, f"refused: {argv}", got)

    with tempfile.TemporaryDirectory() as d:
        for cfg in tr.CONFIGS:
            for name, _ in tr.RUNS:
                b = 1000 if name == "fp32" else 31
                write(os.path.join(d, f"{name}_{cfg}.txt"),
                      f"traffic_source=engine-counts\nsteps=3\nfinal_acc=50.0\n"
                      f"grad_bytes_per_step={b}\nwall_s=0.5\n")
        lines = tr.bench_results(d, "1")
        kv = dict(l.split("=", 1) for l in lines)
        ok(lines[:3] == ["train_backend=engine", "traffic_source=engine-counts", "seed=1"],
           "the study's first lines", lines[:3])
        ok(kv["traffic_pct_gbinary_easy"] == "3.100" and kv["traffic_pct_fp32_hard"] == "100.000",
           "traffic against the fp32 run, three decimals")
        ok(len(lines) == 3 + 2 * (1 + 4 * len(tr.RUNS)), "every key of both configurations", len(lines))

    script = tr.guest_script()
    ok(script.count("NFT-BEGIN") == 1 and all(f" r {n} " in script for n, _ in tr.CHECK_RUNS)
       and "--workers 2" in script, "the guest's command: every check run between markers")
    console = ("noise\nNFT-BEGIN fp32\ngrad_hash=abc\nNFT-END fp32 rc=0\n"
               "NFT-BEGIN gbinary\ngrad_hash=def\nNFT-END gbinary rc=3\nafter\n")
    ok(tr.guest_section(console, "fp32") == "grad_hash=abc\nend=0\n"
       and tr.guest_section(console, "gbinary") == "grad_hash=def\nend=3\n"
       and tr.guest_section(console, "gternary") == "", "a run's section of the console and its status")

    stats = "".join(f"{k}=10\n" for k in tr.STAT_KEYS)

    def fake_train(argv, out_path):
        write(out_path, f"grad_hash=h1\nweights_hash=w1\n{stats}")
        return 0

    def boot_ok(cmd, console_log, bad=""):
        text = "\r\n".join(
            f"NFT-BEGIN {n}\r\ngrad_hash={'XX' if n == bad else 'h1'}\r\nweights_hash=w1\r\n"
            f"traffic_source=device-stats\r\n{stats.replace(chr(10), chr(13) + chr(10))}NFT-END {n} rc=0"
            for n, _ in tr.CHECK_RUNS)
        write(console_log, text + "\r\n")
        return 0

    real_train = tr.train
    tr.train = fake_train
    try:
        with tempfile.TemporaryDirectory() as d:
            tap = Tap()
            with contextlib.redirect_stdout(io.StringIO()) as out, \
                 contextlib.redirect_stderr(io.StringIO()):
                tr.guest_checks(tap, d, boot_ok, "")
            ok(not tap.failed and tap.n == 1 + 2 * len(tr.CHECK_RUNS),
               "guest checks pass when the device's hashes and counts equal the host's", out.getvalue())
            tap = Tap()
            with contextlib.redirect_stdout(io.StringIO()) as out, \
                 contextlib.redirect_stderr(io.StringIO()):
                tr.guest_checks(tap, d, lambda c, l: boot_ok(c, l, bad="gternary"), "")
            text = out.getvalue()
            ok(tap.failed and "not ok 6 - guest gternary: device grad_hash XX = host engine h1" in text,
               "a differing hash fails that run's check", text)
            tap = Tap()
            with contextlib.redirect_stdout(io.StringIO()) as out:
                tr.guest_checks(tap, d, boot_ok, "QEMU with cxl-neuron-fabric not built")
            ok(tap.failed and tap.n == 1 and "not ok 1 - guest run: QEMU" in out.getvalue(),
               "a guest that cannot run is a failure, not a skip")
    finally:
        tr.train = real_train
    return done()


if __name__ == "__main__":
    sys.exit(main())
