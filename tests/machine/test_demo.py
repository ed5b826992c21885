# SPDX-License-Identifier: GPL-2.0-or-later
"""scripts/nfmachine/demo.py (`scripts/nfabric demo`, suite `guest`) without
a VM: its options, the summary it prints from a console (the topology of
`cxl list`, results, speed, failed checks, the counts), a guest that fails
before reporting, and the guest suite's relayed lines, with stand-in boots."""

import contextlib
import io
import json
import os
import sys
import tempfile

from nfmachine import demo
from nfmachine.tap import done, ok
import testkit

CXL = json.dumps([{"memdevs": [{"memdev": "mem0", "ram_size": 268435456, "host": "0000:0d:00.0"}]},
                  {"regions": [{"region": "region0", "type": "ram", "size": 268435456,
                                "resource": 0x290000000, "interleave_ways": 1,
                                "decode_state": "commit"}]}], separators=(",", ":"))


def console(fail=False, posted=True):
    lines = ["noise", "NFABRIC-READY uptime=4s region=region0", f"cxl-list: {CXL}",
             "ok 1 - fp32 identity", "ok 2 - gbinary K=4"]
    if fail:
        lines.append("not ok 3 - gternary threshold 2")
    lines += ["summary: 2 passed", "plain_write_MBps=250.0", "ram_write_MBps=5000.0",
              "gbinary_write_MBps=37.0"]
    if posted:
        lines += ["gbinary_posted_write_MBps=240.00", "gbinary_posted_round_MBps=80.00"]
    return "\r\n".join(lines) + "\r\n"


def run_demo(main_console, status=0, cluster_rc=0, device="cxl-neuron-fabric"):
    calls = []
    with tempfile.TemporaryDirectory() as d:
        def boot(argv, log, err):
            calls.append(argv)
            with open(log, "w", encoding="utf-8") as f:
                f.write(main_console if len(calls) == 1 else "ok 1 - gbinary (rtl)\nsummary: rtl 1 passed\n")
            if err:
                with open(err, "w", encoding="utf-8") as f:
                    f.write("vm: rtl=serve: 42 accesses served by the RTL\n")
            return status if len(calls) == 1 else 0

        def cluster(argv):
            cdir = argv[argv.index("--dir") + 1]
            os.makedirs(cdir, exist_ok=True)
            for r in range(2):
                with open(os.path.join(cdir, f"host{r}.log"), "w", encoding="utf-8") as f:
                    f.write("ok 1 - agg\nok 2 - agg read-out\nsummary: host agg 2 passed\n"
                            "window0_head0_writes=12\n")
            print("cluster: host 0: ok")
            return cluster_rc

        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            rc = demo.demo(device, d, boot, cluster)
    return rc, out.getvalue(), calls


def main():
    ok(demo.parse([]) == "cxl-neuron-fabric" and demo.parse(["--device", "cxl-type3"]) == "cxl-type3"
       and demo.parse(["--help"]) is None, "options: --device, the default, --help")
    for argv, want, usage in ((["--device"], "--device needs a value", False),
                              (["--x"], 'unknown argument "--x"', True)):
        got = testkit.refusal(demo.parse, demo.UsageError, argv)
        ok(got is not None and want in str(got) and got.usage == usage, f"refused: {argv}", got)

    lines = demo.cxl_list(console())
    ok(lines[1] == "  memdev mem0: ram 256 MiB, host 0000:0d:00.0" and
       lines[2] == "  region region0: ram, 256 MiB at 0x290000000, 1-way, commit",
       "the topology from the guest's cxl list", lines)
    ok(demo.cxl_list("no such line")[1] == "  (no cxl list output)", "no cxl list: said so")

    rc, out, calls = run_demo(console())
    ok(rc == 0 and out.rstrip().endswith("demo: 7 passed, 0 failed"),
       "the demo's counts: main boot, both hosts, the RTL run", out[-300:])
    ok("Speed from guest user space (8-byte stores, MB/s): device memory 250.0, guest RAM 5000.0, "
       "G-Binary window 37.0, posted G-Binary window 240.00 (whole round 80.00)\n" in out and "  cluster: host 0: ok" in out and
       "  host 0 reads: window0_head0_writes=12" in out and "  QEMU: rtl=serve: 42 accesses" in out,
       "speed, the cluster's report, host 0's read-out, the RTL run's QEMU line", out)
    ok(calls[1][:2] == ["--rtl", "serve"], "the RTL run boots with --rtl serve", calls)
    ok("--perf" in calls[0] and "nfabric-test --only fp32,gbinary,gternary,mixed,toggle,cpmu"
       in calls[0][-1], "the main boot has perf and runs the CXL PMU group", calls[0])
    ok("nfabric-bench --bytes 1048576 --reps 2 plain gbinary gbinary_posted ram" in calls[0][-1],
       "the speed: plain memory, the trapped and the posted G-Binary window, guest RAM", calls[0])
    rc, out, _ = run_demo(console(posted=False))
    ok(rc == 0 and "G-Binary window 37.0\n" in out and "posted" not in out,
       "no posted figure in the console: the speed line without it", out)

    rc, out, _ = run_demo(console(fail=True))
    ok(rc == 1 and "Failed checks:\n  not ok 3 - gternary threshold 2" in out
       and out.rstrip().endswith("demo: 7 passed, 1 failed"), "a failed check is listed and counted")
    rc, out, _ = run_demo("NFABRIC-NOT-READY no region\n", status=125)
    ok(rc == 1 and "the guest run failed (status 125) before reporting a failed check" in out,
       "a guest that fails before reporting counts as a failure", out)
    rc, out, calls = run_demo(console(), device="cxl-type3")
    ok(rc == 0 and len(calls) == 1 and "--stock plain ram" in calls[0][-1]
       and "Two hosts" not in out and "--perf" not in calls[0] and "cpmu" not in calls[0][-1],
       "the stock device: one boot, its own speed figures, no CXL PMU")
    rc, out, _ = run_demo(console(), cluster_rc=1)
    ok(rc == 1, "a cluster that fails without a failed check is a failure")

    with tempfile.TemporaryDirectory() as d:
        seen = []

        def boot(argv, log, err):
            seen.append(argv)
            with open(log, "w", encoding="utf-8") as f:
                f.write("boot noise\nNFABRIC-READY x\nok 1 - a\n# diag\n1..1\nsummary: s\n")
            return 0 if len(seen) < 3 else 4
        out = io.StringIO()
        os.environ["NF_GUEST_INITRD_PERF"] = os.path.join(d, "initramfs-perf.cpio.gz")
        with contextlib.redirect_stdout(out):
            rc = demo.guest_suite(d, boot)
        text = out.getvalue()
        ok(rc == 1 and text.count("ok 1 - a") == 4 and text.count("NFABRIC-READY") == 1
           and text.count("1..1") == 1 and "boot noise" not in text,
           "guest suite: four boots, their TAP lines relayed, a failed boot fails it", text)
        ok(seen[2][:4] == ["--devices", "2", "--append", "nfabric.region=none"],
           "the third boot: two devices, no region at boot", seen)
        ok(seen[3][:1] == ["--perf"] and seen[3][-1] == "nfabric-test --only cpmu",
           "the fourth boot: with perf, the CXL PMU group", seen)
        seen.clear()
        del os.environ["NF_GUEST_INITRD_PERF"]
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            demo.guest_suite(d, boot)
        ok(len(seen) == 3 and "# skipped: nfabric-test --only cpmu: no perf for the guest's"
           " kernel line" in out.getvalue(),
           "no perf (the 7.2 line): the CXL PMU boot is skipped and said so", out.getvalue())
    return done()


if __name__ == "__main__":
    sys.exit(main())
