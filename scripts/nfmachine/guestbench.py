# SPDX-License-Identifier: GPL-2.0-or-later
"""`scripts/nfabric bench guest`: guest user-space throughput, three boots.

Throughput of 8-byte writes and reads (and memcpy of 4 KiB blocks) from
guest user space through /dev/daxX.Y (guest/tools/nfabric-bench.c), on a
stock cxl-type3 and on the NEURON-Fabric device's paths, with its direct
map and with direct-map=off: the same QEMU binary, the same guest.  The
boots alternate round after round, so that each sees the same load on a
shared machine; each figure is the best over the rounds.  A fourth boot
onlines the device's memory as System RAM.  The posted G-Binary and
G-Ternary windows (register version 1.7: the guest's stores and loads go
to its head's staging, POST and FETCH doorbells hand them to the engine)
are measured beside plain memory and the trapped windows, and compared
with the issue's targets.  key=value lines on stdout.
"""

import os
import sys
from typing import Callable, Dict, List, Optional

from .options import Parser, UsageError, given

USAGE = """\
usage: scripts/nfabric bench guest [--bytes N] [--reps R] [--rounds K]
                                  [--wake-rounds W]

Boots the guest three times (stock cxl-type3; cxl-neuron-fabric with its
direct map, the default; cxl-neuron-fabric with direct-map=off, every access
on the I/O path as before the direct map) and runs nfabric-bench in each:
8-byte writes and reads, and memcpy of 4 KiB blocks to and from the memory,
over N bytes (default 4194304), best of R passes (default 3), and the same
on the guest's own RAM.  The boots alternate K times (default 2) and each
figure is the best over the rounds.  Prints key=value lines:
  stock_*            cxl-type3 (every access an MMIO callback)
  ram_*              the guest's own memory
  plain_*            the device, no window (direct map)
  fp32_* gbinary_* gternary_*   the device with one window of that path
  io_*               the same on the device with direct-map=off
  *_MBps: write/read = 8-byte words; memcpy/memcpy_read = 4 KiB blocks
  plain_write_vs_stock  plain_memcpy_vs_stock   direct map over stock
  plain_write_vs_ram    plain_memcpy_vs_ram     direct map over guest RAM
  *_direct_vs_io     each path with the direct map over direct-map=off
  gbinary_write_vs_stock_fp32   G-Binary write MB/s over stock write MB/s
  gbinary_posted_* gternary_posted_*   the device with one posted window
                     (register version 1.7: stores and loads go to the
                     head's staging, the doorbells hand it to the engine):
    _write/_read_MBps          8-byte stores into / loads from the staging
                               (the read after a FETCH): what a write or a
                               read of the window costs the guest
    _post/_fetch_MBps          the POST / FETCH doorbell alone: the device's
                               aggregation / read-out of the staging
    _contribute_MBps           stores, then POST
    _readback_MBps             FETCH, then loads
    _round_MBps                one whole round of one head: stores, POST,
                               ROUND_COMPLETE, the wait, FETCH, loads
    _memcpy/_memcpy_read_MBps  4 KiB blocks, the doorbells included
    _write/_read_ns_per_access one 8-byte store / load (the least over
                               the rounds; every other figure the best)
  io_*_posted_*      the same with direct-map=off (the staging served on
                     the I/O path: slow)
  *_posted_write_vs_plain_write  *_posted_read_vs_plain_read
  *_posted_round_vs_plain_write  gbinary_posted_contribute_vs_plain_write
  gbinary_posted_readback_vs_plain_read   posted windows over plain memory
  gbinary_posted_write_vs_trapped  gbinary_posted_round_vs_trapped_write
                     posted G-Binary over the trapped G-Binary window's write
  gbinary_posted_write_vs_ram      posted G-Binary write over guest RAM
  target_*           the issue's targets for four of these ratios;
                     posted_meets_targets=yes when all four reach them
  *_fp32_equiv_write_MBps       gradient elements per second as FP32 bytes
                                (G-Binary x32, G-Ternary x16)
  sysram_*           programs bound to the device's memory onlined as
                     System RAM (its NUMA node), node0_* the same bound to
                     node 0; sysram_*_vs_ram the ratio (gzip: busybox gzip
                     round trip of a tmpfs file)
  round_wake_us_p50_irq|poll|pipe (p90 too), round_wait_cpu_pct_*
                     a last boot (nfabric-wake): a waiter's wake-up after
                     another process completes a round, W rounds (default
                     1000) 20 ms apart: asleep in the driver until the
                     device's interrupt (irq), libnfabric's polls (poll),
                     and the machine's own floor for waking a process (a
                     pipe); round_wake_irq_vs_poll, the targets and
                     round_wake_meets_targets=yes|no
Logs: build/guest/bench-{stock,nfabric,io}-K.log, build/guest/bench-sysram.log,
build/guest/bench-wake.log
"""

KINDS = ("stock", "nfabric", "io")
PATHS = ("plain", "fp32", "gbinary", "gternary")
OPS = ("write", "read", "memcpy", "memcpy_read")
# The posted windows (register version 1.7) and their figures: NAME_OP_MBps,
# and NAME_OP for the *_ns_per_access ones (the fewer the better).
POSTED = ("gbinary_posted", "gternary_posted")
POSTED_OPS = ("write", "read", "post", "fetch", "contribute", "readback", "round",
              "memcpy", "memcpy_read", "write_ns_per_access", "read_ns_per_access")
# The targets: ratio key -> the least value that meets it.
TARGETS = (("gbinary_posted_write_vs_plain_write", 0.5),
           ("gternary_posted_write_vs_plain_write", 0.5),
           ("gbinary_posted_read_vs_plain_read", 0.5),
           ("gbinary_posted_round_vs_plain_write", 0.2))


class BenchError(RuntimeError):
    """A boot failed or printed no figure; the message says which."""


class Options:
    def __init__(self, argv: List[str]):
        self.values = {"--bytes": 4194304, "--reps": 3, "--rounds": 2,
                       "--wake-rounds": 1000}
        ns = Parser("bench guest", USAGE, prefix="bench guest: ").options(
            tuple(self.values)).parse(argv)
        self.help = ns is None
        for arg, v in ({} if ns is None else given(ns, tuple(self.values))).items():
            if not v.isdigit() or v.startswith("0"):
                raise UsageError(f'bench guest: bad {arg} "{v}"')
            self.values[arg] = int(v)

    @property
    def bytes(self) -> int:
        return self.values["--bytes"]

    @property
    def reps(self) -> int:
        return self.values["--reps"]

    @property
    def rounds(self) -> int:
        return self.values["--rounds"]

    @property
    def wake_rounds(self) -> int:
        return self.values["--wake-rounds"]


def kv(text: str, key: str) -> Optional[str]:
    """The last value of KEY=... in a console log's text."""
    value = None
    prefix = key + "="
    for line in text.replace("\r", "").splitlines():
        if line.startswith(prefix):
            value = line[len(prefix):]
    return value


def best(texts: List[str], key: str) -> Optional[str]:
    """The largest value of KEY=... over the logs (as printed)."""
    found: Optional[str] = None
    for t in texts:
        v = kv(t, key)
        if v is not None and v != "" and (found is None or float(v) > float(found)):
            found = v
    return found


def least(texts: List[str], key: str) -> Optional[str]:
    """The smallest value of KEY=... over the logs (as printed)."""
    found: Optional[str] = None
    for t in texts:
        v = kv(t, key)
        if v is not None and v != "" and (found is None or float(v) < float(found)):
            found = v
    return found


def posted_key(op: str) -> str:
    """The key nfabric-bench prints for a posted window's OP (after NAME_)."""
    return op if op.endswith("_ns_per_access") else f"{op}_MBps"


def ratio(name: str, num: str, den: str) -> str:
    return "%s=%.3f" % (name, float(num) / float(den))


# boot(vm_argv, log, err) -> (status, ready_s): one guest, its messages in err.
Boot = Callable[[List[str], str, str], "tuple"]


def vm_args(kind: str, opts: Options) -> List[str]:
    """The `vm` options of one boot of KIND."""
    args = f"--bytes {opts.bytes} --reps {opts.reps}"
    if kind == "stock":
        return ["--device", "cxl-type3", "--run", f"nfabric-bench --stock {args}"]
    dev = ["--device", "cxl-neuron-fabric"]
    if kind == "io":
        dev += ["--device-props", "direct-map=off"]
    return dev + ["--run", f"nfabric-bench {args}"]


def figures(logs: Dict[str, List[str]], sysram: str) -> Dict[str, str]:
    """Every figure of the boots' consoles (the best over rounds)."""
    f: Dict[str, str] = {}
    every = [t for k in KINDS for t in logs[k]]

    def need(key: str, texts: List[str], what: str) -> str:
        v = (least if key.endswith("_ns_per_access") else best)(texts, key)
        if v is None or v == "":
            raise BenchError(f"bench guest: no {key} {what}")
        return v

    g = "build/guest"
    for v in OPS:
        f[f"stock_{v}"] = need(f"stock_{v}_MBps", logs["stock"],
                               f"from the stock boots (logs {g}/bench-stock-*.log)")
        # The guest's RAM was measured in every boot: the best of them.
        f[f"ram_{v}"] = need(f"ram_{v}_MBps", every, f"(logs {g}/bench-*.log)")
        for k in PATHS:
            f[f"{k}_{v}"] = need(f"{k}_{v}_MBps", logs["nfabric"],
                                 f"from the device boots (logs {g}/bench-nfabric-*.log)")
            f[f"io_{k}_{v}"] = need(f"{k}_{v}_MBps", logs["io"],
                                    f"from the direct-map=off boots (logs {g}/bench-io-*.log)")
    for k in POSTED:
        for v in POSTED_OPS:
            f[f"{k}_{v}"] = need(f"{k}_{posted_key(v)}", logs["nfabric"],
                                 f"from the device boots (logs {g}/bench-nfabric-*.log)")
            f[f"io_{k}_{v}"] = need(f"{k}_{posted_key(v)}", logs["io"],
                                    f"from the direct-map=off boots (logs {g}/bench-io-*.log)")
    for k in ("sysram", "node0"):
        for v in OPS + ("gzip",):
            f[f"{k}_{v}"] = need(f"{k}_{v}_MBps", [sysram],
                                 f"from the System RAM boot (log {g}/bench-sysram.log)")
    return f


def posted_ratios(f: Dict[str, str]) -> List[str]:
    """The posted windows against plain memory, the trapped window and
    guest RAM; the issue's targets and whether all four are met (on the
    ratios as printed)."""
    out = []
    for k in POSTED:
        out.append(ratio(f"{k}_write_vs_plain_write", f[f"{k}_write"], f["plain_write"]))
    for k in POSTED:
        out.append(ratio(f"{k}_read_vs_plain_read", f[f"{k}_read"], f["plain_read"]))
    for k in POSTED:
        out.append(ratio(f"{k}_round_vs_plain_write", f[f"{k}_round"], f["plain_write"]))
    out.append(ratio("gbinary_posted_contribute_vs_plain_write",
                     f["gbinary_posted_contribute"], f["plain_write"]))
    out.append(ratio("gbinary_posted_readback_vs_plain_read",
                     f["gbinary_posted_readback"], f["plain_read"]))
    out.append(ratio("gbinary_posted_write_vs_trapped", f["gbinary_posted_write"],
                     f["gbinary_write"]))
    out.append(ratio("gbinary_posted_round_vs_trapped_write", f["gbinary_posted_round"],
                     f["gbinary_write"]))
    out.append(ratio("gbinary_posted_write_vs_ram", f["gbinary_posted_write"], f["ram_write"]))
    got = dict(l.split("=", 1) for l in out)
    meets = True
    for key, target in TARGETS:
        out.append(f"target_{key}={target:g}")
        meets = meets and float(got[key]) >= target
    out.append("posted_meets_targets=" + ("yes" if meets else "no"))
    return out


def report(opts: Options, f: Dict[str, str], sysram: str, ready: Dict[str, str]) -> List[str]:
    """The key=value lines, in the order the shell front door printed them."""
    out = ["bench=guest", f"bytes={opts.bytes}", f"reps={opts.reps}",
           f"rounds={opts.rounds}", "access_bytes=8", "memcpy_block_bytes=4096"]
    for k in ("stock", "ram") + PATHS + tuple(f"io_{p}" for p in PATHS):
        for v in OPS:
            out.append(f"{k}_{v}_MBps={f[f'{k}_{v}']}")
    for k in POSTED + tuple(f"io_{p}" for p in POSTED):
        for v in POSTED_OPS:
            out.append(f"{k}_{posted_key(v)}={f[f'{k}_{v}']}")
    for v in OPS:
        out.append(ratio(f"plain_{v}_vs_stock", f[f"plain_{v}"], f[f"stock_{v}"]))
    for v in OPS:
        out.append(ratio(f"plain_{v}_vs_ram", f[f"plain_{v}"], f[f"ram_{v}"]))
    out.append(ratio("io_plain_write_vs_stock", f["io_plain_write"], f["stock_write"]))
    for k in PATHS:
        out.append(ratio(f"{k}_write_direct_vs_io", f[f"{k}_write"], f[f"io_{k}_write"]))
        out.append(ratio(f"{k}_read_direct_vs_io", f[f"{k}_read"], f[f"io_{k}_read"]))
    out.append(ratio("fp32_write_vs_stock", f["fp32_write"], f["stock_write"]))
    out.append(ratio("fp32_read_vs_stock", f["fp32_read"], f["stock_read"]))
    for k in ("gbinary", "gternary"):
        for v in ("write", "read"):
            out.append(ratio(f"{k}_{v}_vs_stock_fp32", f[f"{k}_{v}"], f[f"stock_{v}"]))
    out += posted_ratios(f)
    for k in ("sysram", "node0"):
        for v in OPS + ("gzip",):
            out.append(f"{k}_{v}_MBps={f[f'{k}_{v}']}")
    out.append(f"sysram_node={kv(sysram, 'sysram_pages_node') or ''}")
    out.append(f"sysram_pages_on_node={kv(sysram, 'sysram_pages_on_node') or ''}")
    for v in OPS + ("gzip",):
        out.append(ratio(f"sysram_{v}_vs_ram", f[f"sysram_{v}"], f[f"node0_{v}"]))
    out.append("gbinary_fp32_equiv_write_MBps=%.1f" % (float(f["gbinary_write"]) * 32))
    out.append("gternary_fp32_equiv_write_MBps=%.1f" % (float(f["gternary_write"]) * 16))
    out.append(f"boot_to_ready_stock_s={ready.get('stock', '')}")
    out.append(f"boot_to_ready_nfabric_s={ready.get('nfabric', '')}")
    return out


def read(path: str) -> str:
    with open(path, encoding="utf-8", errors="replace") as f:
        return f.read()


def run(opts: Options, guest_dir: str, boot: Boot) -> int:
    """The boots, then the figures; boot(vm_argv, log, err) -> (status, ready_s)."""
    logs: Dict[str, List[str]] = {k: [] for k in KINDS}
    ready: Dict[str, str] = {}

    def one(name: str, argv: List[str], what: str) -> str:
        log = os.path.join(guest_dir, f"bench-{name}.log")
        err = os.path.join(guest_dir, f"bench-{name}.err")
        status, ready_s = boot(["--quiet", *argv, "--log", log, "--timeout", "900"], log, err)
        if status != 0:
            sys.stderr.write(read(err))
            raise BenchError(f"bench guest: the {what} boot failed (log {log})")
        return ready_s

    for r in range(1, opts.rounds + 1):
        for kind in KINDS:
            ready_s = one(f"{kind}-{r}", vm_args(kind, opts), kind)
            if r == 1 and ready_s is not None:
                ready[kind] = "%.1f" % ready_s
            logs[kind].append(read(os.path.join(guest_dir, f"bench-{kind}-{r}.log")))
    # The device's memory onlined as System RAM (kmem), programs bound to
    # its NUMA node beside node 0 (guest RAM): the group sysram prints them.
    one("sysram", ["--device", "cxl-neuron-fabric", "--run", "nfabric-test --only sysram"],
        "System RAM")
    sysram = read(os.path.join(guest_dir, "bench-sysram.log"))
    # A waiter's wake-up after another process completes a round (the
    # interrupt, register version 1.8): nfabric-wake, irq then poll.
    one("wake", ["--device", "cxl-neuron-fabric", "--run", wake_cmd(opts)], "wake-up")
    wake = read(os.path.join(guest_dir, "bench-wake.log"))
    lines = report(opts, figures(logs, sysram), sysram, ready)
    # The wake-up's figures before the boot times, which end the report.
    for line in lines[:-2] + wake_report(wake) + lines[-2:]:
        print(line)
    return 0


def wake_cmd(opts: Options) -> str:
    """The wake boot's command: the driver's interrupt, libnfabric's polls
    (NFABRIC_ACCESS=resource0: no driver in the way), and the machine's own
    floor (a pipe), each --wake-rounds rounds 20 ms apart."""
    n = opts.wake_rounds
    return (f"nfabric-wake --rounds {n} --label irq && "
            f"NFABRIC_ACCESS=resource0 nfabric-wake --rounds {n} --label poll && "
            f"nfabric-wake --rounds {n} --pipe --label pipe")


WAKE_TARGETS = (("round_wake_us_p50_irq", 200.0), ("round_wait_cpu_pct_irq", 5.0))


def wake_report(text: str) -> List[str]:
    """round_wake_us_p50_irq/_poll/_pipe, p90s, CPU, the ratio, targets."""
    out: List[str] = []
    f: Dict[str, float] = {}
    for label in ("irq", "poll", "pipe"):
        for what, key in (("wake_us_p50", "round_wake_us_p50"),
                          ("wake_us_p90", "round_wake_us_p90"),
                          ("wait_cpu_pct", "round_wait_cpu_pct")):
            v = kv(text, f"{label}_{what}")
            if v is None or v == "":
                raise BenchError(f"bench guest: no {label}_{what} from the wake-up "
                                 "boot (log build/guest/bench-wake.log)")
            f[f"{key}_{label}"] = float(v)
            out.append(f"{key}_{label}={v}")
    rounds = kv(text, "irq_rounds") or ""
    out.insert(0, f"round_wake_rounds={rounds}")
    irq_vs_poll = f["round_wake_us_p50_irq"] / f["round_wake_us_p50_poll"]
    out.append("round_wake_irq_vs_poll=%.3f" % irq_vs_poll)
    out.append("target_round_wake_us_p50_irq=200")
    out.append("target_round_wake_irq_vs_poll=0.2")
    out.append("target_round_wait_cpu_pct_irq=5")
    met = (f["round_wake_us_p50_irq"] <= 200 and irq_vs_poll <= 0.2 and
           f["round_wait_cpu_pct_irq"] <= 5)
    out.append(f"round_wake_meets_targets={'yes' if met else 'no'}")
    return out
