# SPDX-License-Identifier: GPL-2.0-or-later
"""`scripts/nfabric demo` and the `guest` test suite.

Both boot the guest and run the guest programs' functional checks
(tests/guest/) against the device: the demo once with a summary a person
reads (then two hosts sharing one device, and the G-Binary checks with the
datapath in Verilog), the suite in three boots with every check.
docs/guest.md describes the checks.  scripts/lib/demo.sh builds QEMU and
the image first; the boots go through vm.boot() and `cluster` through
the cluster command, both handed in by __main__.
"""

import contextlib
import io
import json
import os
import re
from typing import Callable, List, Optional, Tuple

from .hosts import read as read_file
from .options import Parser, UsageError

USAGE = """\
usage: scripts/nfabric demo [--device cxl-neuron-fabric|cxl-type3]

Builds the guest image if needed, boots a guest with the NEURON-Fabric CXL
device, creates the CXL RAM region, and runs the functional checks from
guest user space:
  (a) FP32 identity over the whole region (sizes 1/2/4/8, alignments 0..7)
  (b) G-Binary: K=4 worker processes aggregate packed signs in one window
  (c) G-Ternary: gated aggregation at several thresholds
  (d) mixed windows: FP32 classifier head + G-Binary backbone in one region
  (i) a window toggled while other processes write (the direct map: plain
      memory is RAM to the CPU, only enabled windows trap), and the speed
      of plain device memory, guest RAM, a G-Binary window and a posted
      G-Binary window (stores into the head's staging; a whole round:
      stores, POST, round complete, FETCH, loads)
  (e) two hosts, one device: two guests, each with its own head of one
      shared device, aggregate into the same windows
  (r) the G-Binary checks again with the datapath in Verilog serving every
      low-bit access (hw/rtl, Verilated, the device's rtl=serve)
Prints a summary and ends with `demo: N passed, N failed`.
The console log is build/guest/demo.log.
"""

# boot(vm options, console log, messages file or None) -> the vm's status
Boot = Callable[[List[str], str, Optional[str]], int]
# cluster(argv) -> its status (its report on stdout, messages on stderr)
Cluster = Callable[[List[str]], int]


def parse(argv: List[str]) -> Optional[str]:
    """The demo's --device (None for --help)."""
    ns = Parser("nfabric demo", USAGE, prefix="nfabric demo: ").options(("--device",)).parse(argv)
    return None if ns is None else ns.device or "cxl-neuron-fabric"


def read(path: str) -> str:
    """A console or log's text without the serial line's carriage returns."""
    return read_file(path).replace("\r", "")


def lines_matching(text: str, pattern: str) -> List[str]:
    rx = re.compile(pattern)
    return [l for l in text.splitlines() if rx.match(l)]


def kv(text: str, key: str) -> str:
    """The last value of KEY= in text ("" if none)."""
    found = [l[len(key) + 1:] for l in text.splitlines() if l.startswith(key + "=")]
    return found[-1] if found else ""


def cxl_list(text: str) -> List[str]:
    """The memdevs and regions of the guest's `cxl list -M -R` line."""
    out = ["CXL topology (cxl list -M -R in the guest):"]
    raw = next((l[len("cxl-list: "):] for l in text.splitlines() if l.startswith("cxl-list: ")), "")
    try:
        data = json.loads(raw)
    except ValueError:
        return out + ["  (no cxl list output)"]
    for part in data if isinstance(data, list) else [data]:
        for m in part.get("memdevs", []):
            out.append("  memdev %s: ram %d MiB, host %s" % (
                m.get("memdev"), m.get("ram_size", 0) >> 20, m.get("host")))
        for r in part.get("regions", []):
            out.append("  region %s: %s, %d MiB at 0x%x, %d-way, %s" % (
                r.get("region"), r.get("type"), r.get("size", 0) >> 20, r.get("resource", 0),
                r.get("interleave_ways", 0), r.get("decode_state")))
    return out


def counts(text: str) -> Tuple[int, int]:
    """The guest's passed and failed TAP checks."""
    return (len(lines_matching(text, r"ok ")), len(lines_matching(text, r"not ok ")))


def summary(text: str, indent: str = "  ") -> List[str]:
    return [indent + l[len("summary: "):] for l in lines_matching(text, r"summary: ")]


def with_perf() -> bool:
    """Is there perf for the guest (the 6.12 kernel line: docs/versions.md)?"""
    return os.environ.get("NF_KERNEL_LINE", "6.12") == "6.12"


def main_run(device: str, guest_dir: str, boot: Boot) -> Tuple[int, int]:
    """The first boot: the functional checks and the speed; its summary."""
    log = os.path.join(guest_dir, "demo.log")
    print(f"NEURON-Fabric demo: booting a guest with {device} (console: {log})", flush=True)
    ours = device == "cxl-neuron-fabric"
    perf = ours and with_perf()
    paths = "plain gbinary gbinary_posted ram" if ours else "--stock plain ram"
    # The device's CXL PMU, counted by Linux's cxl_pmu and Debian's perf.
    groups = "fp32,gbinary,gternary,mixed,toggle" + (",cpmu" if perf else "")
    cmd = ("echo \"cxl-list: $(cxl list -M -R | tr -d ' \\n')\"; "
           f"nfabric-test --only {groups}; rc=$?; "
           f"nfabric-bench --bytes 1048576 --reps 2 {paths} || rc=1; exit $rc")
    rc = boot(["--device", device, *(["--perf"] if perf else []), "--run", cmd], log, None)
    text = read(log)
    print()
    for l in lines_matching(text, r"NFABRIC-(READY|NOT-READY)"):
        print("  guest: " + l)
    print("\n".join(cxl_list(text)))
    if summary(text):
        print("Results:")
        print("\n".join(summary(text)))
    pw = kv(text, "plain_write_MBps") or kv(text, "stock_write_MBps")
    rw, gw = kv(text, "ram_write_MBps"), kv(text, "gbinary_write_MBps")
    # The posted window: its stores into the staging, and one whole round.
    qw, qr = kv(text, "gbinary_posted_write_MBps"), kv(text, "gbinary_posted_round_MBps")
    if pw and rw:
        print(f"Speed from guest user space (8-byte stores, MB/s): device memory {pw}, "
              f"guest RAM {rw}" + (f", G-Binary window {gw}" if gw else "")
              + (f", posted G-Binary window {qw}" if qw else "")
              + (f" (whole round {qr})" if qw and qr else ""))
    failed_lines = lines_matching(text, r"not ok ")
    if failed_lines:
        print("Failed checks:")
        print("\n".join("  " + l for l in failed_lines))
    passed, failed = counts(text)
    if rc != 0 and failed == 0:
        print(f"  the guest run failed (status {rc}) before reporting a failed check; see {log}")
        failed = 1
    return passed, failed


def cluster_run(guest_dir: str, cluster: Cluster) -> Tuple[int, int]:
    """Two hosts, one device (docs/multihost.md)."""
    d = os.path.join(guest_dir, "demo-cluster")
    print()
    print("Two hosts share one device: each boots its own guest with its own head,")
    print(f"both aggregate into the same windows (consoles: {d}/host0.log, host1.log)",
          flush=True)
    out = io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(io.StringIO()):
        rc = cluster(["--hosts", "2", "--dir", d, "--timeout", "300",
                      "--run", "nfabric-multihost agg && nfabricctl heads"])
    for l in out.getvalue().splitlines():
        print("  " + l)
    host0 = read(os.path.join(d, "host0.log"))
    print("\n".join(summary(host0)))
    for l in lines_matching(host0, r"window0_head"):
        print("  host 0 reads: " + l)
    passed = failed = 0
    for r in range(2):
        p, f = counts(read(os.path.join(d, f"host{r}.log")))
        passed, failed = passed + p, failed + f
    if rc != 0 and failed == 0:
        failed = 1
    return passed, failed


def rtl_run(guest_dir: str, boot: Boot) -> Tuple[int, int]:
    """The G-Binary checks again, the datapath in Verilog (docs/rtl.md)."""
    log = os.path.join(guest_dir, "demo-rtl.log")
    err = os.path.join(guest_dir, "demo-rtl.err")
    print()
    print("The aggregation datapath in Verilog: the G-Binary checks again, every low-bit")
    print("access served by hw/rtl/nf_agg.v (Verilated; the first time it is built, a few")
    print(f"minutes), the device's rtl=serve (console: {log})", flush=True)
    rc = boot(["--rtl", "serve", "--run", "nfabric-test --only gbinary"], log, err)
    text = read(log)
    print("\n".join(summary(text)))
    for m in re.finditer(r"rtl=serve: .*", read(err)):
        print("  QEMU: " + m.group(0))
    passed, failed = counts(text)
    if rc != 0 and failed == 0:
        print(f"  the RTL run failed (status {rc}) before reporting a failed check; see {err}")
        failed = 1
    return passed, failed


def demo(device: str, guest_dir: str, boot: Boot, cluster: Cluster) -> int:
    os.makedirs(guest_dir, exist_ok=True)
    passed, failed = main_run(device, guest_dir, boot)
    if device == "cxl-neuron-fabric":
        for p, f in (cluster_run(guest_dir, cluster), rtl_run(guest_dir, boot)):
            passed, failed = passed + p, failed + f
    print(f"demo: {passed} passed, {failed} failed")
    return 0 if failed == 0 else 1


def guest_suite(logs: str, boot: Boot) -> int:
    """Suite `guest`: every check in one boot, then System RAM, then two
    devices and an interleaved region; the guest's TAP lines relayed."""
    os.makedirs(logs, exist_ok=True)
    rc = 0
    runs = [
        ("guest-console.log", [], "nfabric-test", r"(ok|not ok|#|1\.\.|summary:)"),
        # A second boot: the region onlined as System RAM (this changes the guest).
        ("guest-sysram-console.log", [], "nfabric-test --only sysram", r"(ok|not ok|#|summary:)"),
        # A third: two devices, no region at boot; then an interleaved region.
        ("guest-devices-console.log", ["--devices", "2", "--append", "nfabric.region=none"],
         "nfabric-test --only devices", r"(ok|not ok|#|summary:)"),
        # A fourth, with perf: the CXL PMU through Linux's cxl_pmu.
        ("guest-cpmu-console.log", ["--perf"], "nfabric-test --only cpmu",
         r"(ok|not ok|#|summary:)"),
    ]
    for i, (name, opts, cmd, tap) in enumerate(runs):
        if "--perf" in opts and not os.environ.get("NF_GUEST_INITRD_PERF"):
            print(f"# skipped: {cmd}: no perf for the guest's kernel line"
                  f" {os.environ.get('NF_KERNEL_LINE', '?')} (docs/versions.md)", flush=True)
            continue
        log = os.path.join(logs, name)
        status = boot([*opts, "--run", cmd], log, None)
        rc = rc or status
        text = read(log)
        relay = lines_matching(text, tap)
        if i == 0:
            relay += lines_matching(text, r"NFABRIC-(READY|NOT-READY)")
        if relay:
            print("\n".join(relay), flush=True)
    return 0 if rc == 0 else 1
