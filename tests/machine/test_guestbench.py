# SPDX-License-Identifier: GPL-2.0-or-later
"""scripts/nfmachine/guestbench.py (`scripts/nfabric bench guest`) without a
VM: its options, the figures read from consoles (best over rounds), the
key=value lines and their order, the posted windows' figures, ratios and
targets, and a failed boot or a missing figure, with a stand-in boot."""

import contextlib
import io
import os
import sys
import tempfile

from nfmachine import guestbench as gb
from nfmachine.tap import done, ok
import testkit

# A posted window's figures in a device boot of scale 1 (plain writes and
# reads 20 MB/s there): G-Binary meets the targets, G-Ternary's write not.
POSTED = {"gbinary_posted": {"write": 15, "read": 12, "post": 1000, "fetch": 2000,
                             "contribute": 14, "readback": 11, "round": 5, "memcpy": 30,
                             "memcpy_read": 35, "write_ns_per_access": 400,
                             "read_ns_per_access": 500},
          "gternary_posted": {"write": 8, "read": 11, "post": 900, "fetch": 1800,
                              "contribute": 7, "readback": 10, "round": 3, "memcpy": 25,
                              "memcpy_read": 30, "write_ns_per_access": 800,
                              "read_ns_per_access": 600}}


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
    if kind in ("nfabric", "io"):
        # The I/O path: a quarter of the speed, four times the time.
        io_ = 1 if kind == "nfabric" else 4
        for k, figs in POSTED.items():
            for v, x in figs.items():
                if v.endswith("_ns_per_access"):
                    lines.append(f"{k}_{v}={x * io_ / scale:.1f}")
                else:
                    lines.append(f"{k}_{v}_MBps={x / io_ * scale:.2f}")
    if kind == "sysram":
        for k in ("sysram", "node0"):
            for v in gb.OPS + ("gzip",):
                lines.append(f"{k}_{v}_MBps={50 if k == 'sysram' else 100}")
        lines += ["sysram_pages_node=1", "sysram_pages_on_node=256"]
    if kind == "wake":
        for label, us, cpu in (("irq", 150, 2.5), ("poll", 900, 30), ("pipe", 400, 3)):
            lines += [f"{label}_rounds=7", f"{label}_wake_us_p50={us}",
                      f"{label}_wake_us_p90={us * 2}", f"{label}_wait_cpu_pct={cpu}"]
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
                                                 "nfabric-2", "io-2", "sysram", "wake"],
           "the boots alternate round after round, then System RAM, then the wake-up", seen)
        ok(all("--timeout" in a and "--quiet" in a for _, a in seen), "every boot has a timeout")
        fig = dict(l.split("=", 1) for l in lines)
        ok(fig.get("stock_write_MBps") == "12.0" and fig.get("gbinary_write_MBps") == "24.0",
           "each figure the best of the rounds", fig.get("stock_write_MBps"))
        ok(fig.get("plain_write_vs_stock") == "2.000" and fig.get("plain_write_direct_vs_io") == "4.000"
           and fig.get("sysram_gzip_vs_ram") == "0.500", "ratios with three decimals")
        ok(fig.get("gbinary_fp32_equiv_write_MBps") == "768.0", "G-Binary's FP32-equivalent rate (x32)")
        ok(fig.get("round_wake_us_p50_irq") == "150" and fig.get("round_wake_us_p50_poll") == "900"
           and fig.get("round_wake_irq_vs_poll") == "0.167"
           and fig.get("round_wait_cpu_pct_irq") == "2.5"
           and fig.get("round_wake_meets_targets") == "yes" and fig.get("round_wake_rounds") == "7",
           "the wake-up: the figures, irq over poll, the targets met",
           {k: v for k, v in fig.items() if "wake" in k})
        wake_run = seen[-1][1][seen[-1][1].index("--run") + 1]
        ok("nfabric-wake --rounds 1000 --label irq" in wake_run
           and "NFABRIC_ACCESS=resource0" in wake_run and "--pipe" in wake_run,
           "the wake boot's command", wake_run)
        ok(gb.wake_report(console("wake", 1).replace("irq_wake_us_p50=150", "irq_wake_us_p50=250"))
           [-1] == "round_wake_meets_targets=no", "a wake-up of 250 us misses the target")
        try:
            gb.wake_report("irq_wake_us_p50=1\n")
            ok(False, "a wake boot without every figure is refused")
        except gb.BenchError as exc:
            ok("irq_wake_us_p90" in str(exc), "a wake boot without every figure is refused", exc)
        ok(fig.get("boot_to_ready_stock_s") == "5.1" and fig.get("boot_to_ready_nfabric_s") == "5.2",
           "boot-to-ready of the first round's boots")
        ok(keys[:6] == ["bench", "bytes", "reps", "rounds", "access_bytes", "memcpy_block_bytes"]
           and keys[-2:] == ["boot_to_ready_stock_s", "boot_to_ready_nfabric_s"]
           and len(keys) == len(set(keys)) == 6 + 40 + 44 + 9 + 8 + 6 + 16 + 10 + 2 + 5 + 2 + 15 + 2,
           "every key once, in the front door's order", len(keys))

        # The posted windows: every figure of both kinds of device boot,
        # the best of the rounds (round 2, scale 1.2; the least ns).
        posted = [f"{p}{k}_{gb.posted_key(v)}" for p in ("", "io_") for k in gb.POSTED
                  for v in gb.POSTED_OPS]
        ok(all(k in fig for k in posted) and len(posted) == 44
           and keys.index(posted[0]) == keys.index("io_gternary_memcpy_read_MBps") + 1,
           "every posted figure, device and direct-map=off boots, after the other paths'",
           [k for k in posted if k not in fig])
        ok(fig.get("gbinary_posted_write_MBps") == "18.00"
           and fig.get("gbinary_posted_round_MBps") == "6.00"
           and fig.get("io_gbinary_posted_write_MBps") == "4.50"
           and fig.get("gternary_posted_post_MBps") == "1080.00",
           "posted MB/s: the best of the rounds",
           [fig.get(k) for k in ("gbinary_posted_write_MBps", "io_gbinary_posted_write_MBps")])
        ok(fig.get("gbinary_posted_write_ns_per_access") == "333.3"
           and fig.get("io_gbinary_posted_write_ns_per_access") == "1333.3",
           "posted ns per access: the least of the rounds",
           fig.get("gbinary_posted_write_ns_per_access"))
        want = {"gbinary_posted_write_vs_plain_write": "0.750",
                "gternary_posted_write_vs_plain_write": "0.400",
                "gbinary_posted_read_vs_plain_read": "0.600",
                "gternary_posted_read_vs_plain_read": "0.550",
                "gbinary_posted_round_vs_plain_write": "0.250",
                "gternary_posted_round_vs_plain_write": "0.150",
                "gbinary_posted_contribute_vs_plain_write": "0.700",
                "gbinary_posted_readback_vs_plain_read": "0.550",
                "gbinary_posted_write_vs_trapped": "0.750",
                "gbinary_posted_round_vs_trapped_write": "0.250",
                "gbinary_posted_write_vs_ram": "0.150"}
        ok({k: fig.get(k) for k in want} == want, "the posted ratios",
           {k: fig.get(k) for k in want})
        ok(fig.get("target_gbinary_posted_write_vs_plain_write") == "0.5"
           and fig.get("target_gternary_posted_write_vs_plain_write") == "0.5"
           and fig.get("target_gbinary_posted_read_vs_plain_read") == "0.5"
           and fig.get("target_gbinary_posted_round_vs_plain_write") == "0.2"
           and fig.get("posted_meets_targets") == "no",
           "the targets; G-Ternary's write below its target: not met",
           fig.get("posted_meets_targets"))
        ok(keys.index("gbinary_posted_write_vs_plain_write") ==
           keys.index("gternary_read_vs_stock_fp32") + 1
           and keys.index("posted_meets_targets") == keys.index("sysram_write_MBps") - 1,
           "the posted ratios and targets after the trapped windows' ratios")

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

        def without(key: str, kind: str) -> str:
            """The figures' error with KEY= left out of KIND's console."""
            logs = {k: [console(k, 1)] for k in gb.KINDS}
            logs[kind] = ["\r\n".join(l for l in logs[kind][0].split("\r\n")
                                       if not l.startswith(key + "="))]
            try:
                gb.figures(logs, console("sysram", 1))
                return ""
            except gb.BenchError as e:
                return str(e)
        msg = without("gternary_posted_round_MBps", "nfabric")
        ok(msg == "bench guest: no gternary_posted_round_MBps from the device boots "
           "(logs build/guest/bench-nfabric-*.log)", "a missing posted figure is an error", msg)
        msg = without("gbinary_posted_read_ns_per_access", "io")
        ok(msg.startswith("bench guest: no gbinary_posted_read_ns_per_access from the "
                          "direct-map=off boots"), "and one of the direct-map=off boots", msg)
        ok(without("nothing_MBps", "io") == "", "the full consoles: no error")

    # The targets, met: every ratio of the four at or above its target.
    f = {"plain_write": "100", "plain_read": "100", "ram_write": "1000", "gbinary_write": "10"}
    for k in gb.POSTED:
        f.update({f"{k}_write": "50", f"{k}_read": "50", f"{k}_round": "20",
                  f"{k}_contribute": "40", f"{k}_readback": "40"})
    got = dict(l.split("=", 1) for l in gb.posted_ratios(f))
    ok(got["posted_meets_targets"] == "yes" and got["gbinary_posted_write_vs_trapped"] == "5.000"
       and got["gbinary_posted_round_vs_plain_write"] == "0.200",
       "the targets met at exactly their values", got)
    f["gbinary_posted_round"] = "19.9"
    ok(dict(l.split("=", 1) for l in gb.posted_ratios(f))["posted_meets_targets"] == "no",
       "a round below its target: not met")
    return done()


if __name__ == "__main__":
    sys.exit(main())
