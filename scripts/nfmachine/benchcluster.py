# SPDX-License-Identifier: GPL-2.0-or-later
"""`scripts/nfabric bench cluster`: aggregate contribution throughput of
1, 2 and 4 heads of one device (a VM each) beside the single-head device,
the trapped-access floor of the same VMs (QEMU's edu device), and plain
writes of 2 heads against guest RAM (docs/multihost.md "Where the time
goes"); and whole rounds of 1, 2 and 4 heads through a posted G-Binary
window beside the same loop over plain device memory in the same VMs.  It
prints key=value lines; the best of --rounds rounds.
"""

import os
import re
import statistics
import sys
from typing import Dict, Iterable, List, Optional, TextIO, Tuple

from . import cluster
from .hosts import (Cluster, env, firmware, hang_log, hang_s, read, state_lines,
                    state_value, temp_dir)
from . import topology
from .options import Parser, given
from .topology import Topology

USAGE = """\
usage: scripts/nfabric bench cluster [--mib N] [--rounds N]
Each host writes N MiB (default 16) of packed data with 8-byte stores into one
shared window, G-Binary then G-Ternary, then as many 8-byte stores into
QEMU's edu device (the trapped-access floor); best of --rounds (default 2).
The one-head VM has the same device not shared beside the head: each loop
runs in turns on both (shared_vs_single_head, side by side).  The VMs run
as SCHED_BATCH (CPU-bound: a wake-up does not preempt them).
Then 2 heads of one device (no fabric manager: all plain memory mapped
directly) each time 256 MiB of plain 8-byte writes against guest RAM.
Whole rounds in the 1, 2 and 4-head VMs, each head a bucket of N MiB (16 at
most: halved until it fits): posted (8-byte stores into a posted G-Binary
window, POST, ROUND_COMPLETE, wait for ALL_DONE, FETCH, loads; head 0 CLEARs
after everyone's read-back) and plain (the same stores into plain device
memory, a barrier, loads, a barrier); after a checked round of each, 3 runs
of each in turns, a run 8 rounds (64 MiB at least).  plain_/gbinary_posted_
headsN_MBps: per head (bucket * rounds / that head's fastest run), the
median of the heads; *_scaling_vs_plain: posted N/1 over plain N/1.
"""

# The trapped-access floor: QEMU's edu device in every VM (the guest
# times 8-byte stores into its BAR after the windows).
FLOOR = ["-device", "edu,bus=pcie.0"]
# Beside the one head, the same device not shared (RAM backend) on a
# second root port of the same host bridge: the guest runs each loop on it
# right after the head's, in the same VM (`unshared_` figures).
BESIDE = topology.beside(1, "rp-beside", "vmem-beside", "cxl-beside")
HEADS = (1, 2, 4)
PATHS = ("gbinary", "gternary")
# The whole-round loops of the guest (`mh_rounds` lines) and their targets:
# posted rounds of N heads scale (against one head) as plain memory's do.
ROUND_PATHS = ("plain", "gbinary_posted")
ROUND_TARGET = 0.9


class BenchError(RuntimeError):
    """The bench cannot go on: the message says what failed."""


class Usage(Exception):
    """A bad option: its message, exit status 2."""


def parse(argv: List[str]) -> Optional[Tuple[int, int]]:
    """(--mib, --rounds), None for --help; Usage for a bad option."""
    ns = Parser("bench cluster", USAGE, Usage, "option", "bench cluster: ").options(
        ("--mib", "--rounds")).parse(argv)
    if ns is None:
        return None
    for o, v in given(ns, ("--mib", "--rounds")).items():
        if v == "":
            raise Usage(f"bench cluster: {o} needs a value")
    mib, rounds = ns.mib or "16", ns.rounds or "2"
    if not (re.fullmatch(r"[1-9][0-9]*", mib) and re.fullmatch(r"[1-9][0-9]*", rounds)):
        raise Usage("bench cluster: --mib and --rounds take positive numbers")
    return int(mib), int(rounds)


# ---- the figures -----------------------------------------------------------

def figures(lines: Iterable[str]) -> Dict[str, Tuple[str, int, str, str]]:
    """From the hosts' `mh_bench rank=R path=P bytes=B seconds=S mbps=M`
    lines, per path (gbinary, gternary, floor): all hosts' bytes over the
    slowest host's time in MB/s (the hosts start together at a barrier),
    the number of hosts, the slowest and fastest host's own MB/s; each
    figure with three decimals."""
    acc: Dict[str, Dict[str, float]] = {}
    for line in lines:
        line = line.replace("\r", "")
        if not line.startswith("mh_bench "):
            continue
        v = dict(kv.split("=", 1) for kv in line.split()[1:] if "=" in kv)
        a = acc.setdefault(v["path"], {"bytes": 0.0, "t": 0.0, "n": 0})
        a["bytes"] += float(v["bytes"])
        a["t"] = max(a["t"], float(v["seconds"]))
        mbps = float(v["mbps"])
        a["lo"] = min(a.get("lo", mbps), mbps)
        a["hi"] = max(a.get("hi", mbps), mbps)
        a["n"] += 1
    return {p: (f"{a['bytes'] / a['t'] / 1e6:.3f}", int(a["n"]), f"{a['lo']:.3f}",
                f"{a['hi']:.3f}")
            for p, a in acc.items() if a["t"] > 0}


def round_figures(lines: Iterable[str]) -> Dict[str, Tuple[str, int, str, str, str, str]]:
    """From the hosts' `mh_rounds rank=R path=P bytes=B rounds=K seconds=S
    mbps=M` lines (M: that head's B * K / S), per path (plain,
    gbinary_posted): the median of the heads' MB/s, the number of heads,
    the slowest and fastest head's (three decimals), the bucket (B) and
    the timed rounds (K)."""
    acc: Dict[str, List[float]] = {}
    size: Dict[str, Tuple[str, str]] = {}
    for line in lines:
        line = line.replace("\r", "")
        if not line.startswith("mh_rounds "):
            continue
        v = dict(kv.split("=", 1) for kv in line.split()[1:] if "=" in kv)
        if num(v.get("seconds")) <= 0:
            continue
        acc.setdefault(v["path"], []).append(num(v.get("mbps")))
        size[v["path"]] = (v.get("bytes", ""), v.get("rounds", ""))
    return {p: (f"{statistics.median(m):.3f}", len(m), f"{min(m):.3f}", f"{max(m):.3f}",
                *size[p])
            for p, m in acc.items()}


def ratio(key: str, a: str, b: str) -> str:
    """KEY=A/B with three decimals (n/a without B)."""
    fa, fb = num(a), num(b)
    return f"{key}={fa / fb:.3f}" if fb > 0 else f"{key}=n/a"


def num(text: Optional[str]) -> float:
    """A figure as a number (0 for none: what awk makes of "")."""
    try:
        return float(text or 0)
    except ValueError:
        return 0.0


def direct_figures(console: str) -> Optional[Tuple[str, str]]:
    """(plain MB/s, guest RAM MB/s) of a host's `mh_direct` line."""
    m = re.search(r"^mh_direct rank=[0-9]* plain_mbps=([0-9.]*) ram_mbps=([0-9.]*)",
                  console.replace("\r", ""), re.M)
    return (m.group(1), m.group(2)) if m and m.group(2) else None


class Best:
    """The best of the rounds of each figure (its round's slowest and
    fastest host beside it)."""

    def __init__(self):
        self.best: Dict[str, str] = {}
        self.lo: Dict[str, str] = {}
        self.hi: Dict[str, str] = {}
        self.rounds: Dict[str, List[str]] = {}

    def keep(self, key: str, value: str, lo: Optional[str] = None,
             hi: Optional[str] = None) -> bool:
        """VALUE if it beats KEY's best so far (and its LO, HI); whether it did."""
        if not num(value) > num(self.best.get(key)):
            return False
        self.best[key] = value
        self.lo[key] = lo if lo is not None else value
        self.hi[key] = hi if hi is not None else value
        return True

    def get(self, key: str) -> str:
        return self.best.get(key, "")

    def every(self, key: str, value: str) -> None:
        """VALUE kept as KEY's (if better) and listed with the other rounds'."""
        self.keep(key, value)
        self.rounds.setdefault(key, []).append(value)


def pair(a: Optional[str], b: str) -> str:
    """A path against the floor of the same round, four decimals ("" for
    a floor of 0: no figure)."""
    return f"{num(a) / num(b):.4f}" if num(b) > 0 else ""


def report(mib: int, rounds: int, best: Best, waits: Dict[int, str],
           sleeps: Dict[int, Dict[str, str]]) -> List[str]:
    """The key=value lines, in their order."""
    b = best.get
    out = [f"bench_mib_per_host={mib}", f"rounds={rounds}"]
    for p in PATHS:
        out.append(f"single_{p}_mbps={b('single_' + p)}")
        for n in HEADS:
            k = f"heads{n}_{p}"
            out += [f"{k}_mbps={b(k)}", f"{k}_per_head_mbps_min={best.lo.get(k, '')}",
                    f"{k}_per_head_mbps_max={best.hi.get(k, '')}"]
        for n in (2, 4):
            out.append(ratio(f"{p}_heads{n}_vs_heads1", b(f"heads{n}_{p}"), b(f"heads1_{p}")))
    # How far each figure is from what any trapped access costs here.
    out.append(f"trap_floor_single_mbps={b('single_floor')}")
    for n in HEADS:
        out.append(f"trap_floor_heads{n}_mbps={b(f'heads{n}_floor')}")
    for n in (2, 4):
        out.append(ratio(f"trap_floor_heads{n}_vs_heads1", b(f"heads{n}_floor"), b("heads1_floor")))
    # Against the floor measured in the same round (best round), and how
    # much of the machine's own scaling the device keeps: 1 when N heads
    # are as far from the floor as one is.
    for p in PATHS:
        for n in HEADS:
            out.append(f"{p}_heads{n}_vs_trap_floor={num(b(f'pair_heads{n}_{p}')):.3f}")
        for n in (2, 4):
            out.append(ratio(f"{p}_heads{n}_scaling_vs_floor", b(f"pair_heads{n}_{p}"),
                             b(f"pair_heads1_{p}")))
    out.append(f"gbinary_write_vs_trap_floor={num(b('pair_heads1_gbinary')):.3f}")
    out.append(f"single_gbinary_write_vs_trap_floor={num(b('pair_single_gbinary')):.3f}")
    # One shared head against the device not shared beside it in the same
    # VM, seconds apart (best round; every round's too); then against the
    # single-head VM, booted minutes apart (best of each).
    for p in PATHS:
        k = "" if p == "gbinary" else "_gternary"
        out += [f"heads1_unshared_{p}_mbps={b('heads1_unshared_' + p)}",
                f"shared_vs_single_head{k}={num(b('beside_' + p)):.3f}",
                f"shared_vs_single_head{k}_rounds="
                + ",".join(f"{num(v):.3f}" for v in best.rounds.get("beside_" + p, []))]
    out.append(ratio("shared_vs_single_vm", b("heads1_gbinary"), b("single_gbinary")))
    out.append(ratio("shared_vs_single_vm_gternary", b("heads1_gternary"),
                     b("single_gternary")))
    for h in (0, 1):
        out += [f"head{h}_plain_write_mbps={b(f'own_{h}')}",
                f"head{h}_ram_write_mbps={b(f'ram_{h}')}"]
    # The slower head's ratio: every head at RAM speed.
    out.append(f"shared_plain_write_vs_ram="
               f"{min(num(b('own_vs_ram_0')), num(b('own_vs_ram_1'))):.3f}")
    out += rounds_report(best)
    for n in HEADS:
        writes = n * mib * 1024 * 1024 * 2 // 8
        w = waits.get(n) or "0"
        fig = sleeps.get(n, {})
        out += [f"lock_waits_heads{n}={w}",
                f"lock_sleeps_heads{n}={fig.get('lock_sleeps') or '0'}",
                f"lock_contended_pct_heads{n}={100 * num(w) / writes:.2f}",
                f"bias_grants_heads{n}={fig.get('bias_grants') or '0'}",
                f"bias_revokes_heads{n}={fig.get('bias_revokes') or '0'}",
                f"bias_drops_heads{n}={fig.get('bias_drops') or '0'}"]
    return out


def speedup(best: Best, path: str, n: int) -> float:
    """PATH's per-head MB/s with N heads over one head's (0 without)."""
    one = num(best.get(f"rounds_heads1_{path}"))
    return num(best.get(f"rounds_heads{n}_{path}")) / one if one > 0 else 0.0


def rounds_report(best: Best) -> List[str]:
    """The whole rounds' lines: per-head MB/s (median of the heads, best
    run), each path's scaling from one head, the posted path's against
    plain memory's, the targets."""
    b = best.get
    out = [f"rounds_bucket_bytes={b('rounds_bucket')}", f"rounds_timed={b('rounds_timed')}"]
    for p in ROUND_PATHS:
        for n in HEADS:
            k = f"rounds_heads{n}_{p}"
            out += [f"{p}_heads{n}_MBps={b(k)}",
                    f"{p}_heads{n}_per_head_MBps_min={best.lo.get(k, '')}",
                    f"{p}_heads{n}_per_head_MBps_max={best.hi.get(k, '')}"]
    for p in ROUND_PATHS:
        for n in (2, 4):
            out.append(ratio(f"{p}_heads{n}_vs_heads1", b(f"rounds_heads{n}_{p}"),
                             b(f"rounds_heads1_{p}")))
    met = True
    for n in (2, 4):
        key = f"gbinary_posted_heads{n}_scaling_vs_plain"
        plain = speedup(best, "plain", n)
        if plain > 0:
            scaling = speedup(best, "gbinary_posted", n) / plain
            out.append(f"{key}={scaling:.3f}")
            met = met and scaling >= ROUND_TARGET
        else:
            out.append(f"{key}=n/a")
            met = False
    out += [f"target_gbinary_posted_heads{n}_scaling_vs_plain={ROUND_TARGET}" for n in (2, 4)]
    out.append(f"gbinary_posted_scaling_meets_targets={'yes' if met else 'no'}")
    return out


# ---- the runs ----------------------------------------------------------------

def bench_dir(*names: str) -> str:
    return os.path.join(env("NF_BUILD"), "bench-cluster", *names)


def single(cmd: str, best: Best) -> None:
    """The device as it was: not shared, RAM backend, one host."""
    from . import vm
    d = bench_dir("single")
    os.makedirs(d, exist_ok=True)
    log = os.path.join(d, "host0.log")
    topo = Topology(cpus=1, mem_mib=512, run=f"NFABRIC_RANK=0 NFABRIC_HOSTS=1 {cmd}",
                    extra=list(FLOOR))
    args = topo.qemu_args(firmware(), env("NF_GUEST_KERNEL"), env("NF_GUEST_INITRD"))
    out_path = os.path.join(d, "host0.out")
    open(out_path, "w", encoding="utf-8").close()
    watch = vm.BootAll(env("NF_QEMU_BIN"), [(args, log)], temp_dir(), timeout=900,
                       hang_s=hang_s(), hang_log=hang_log(), labels=["vm"],
                       messages=[out_path])
    if watch.results()[0].status != 0:
        raise BenchError(f"bench cluster: the single-head run failed (console: {log})")
    rnd = {p: f[0] for p, f in figures(read(log).splitlines()).items()}
    for p, v in rnd.items():
        best.keep(f"single_{p}", v)
    if "floor" not in rnd or "gbinary" not in rnd:
        raise BenchError("bench cluster: the single-head run printed no trapped-access floor"
                         f" (console: {log})")
    best.keep("pair_single_gbinary", pair(rnd["gbinary"], rnd["floor"]))


def heads(n: int, cmd: str, best: Best, waits: Dict[int, str],
          sleeps: Dict[int, Dict[str, str]]) -> None:
    """N heads of one device, a VM each, started together."""
    with Cluster(bench_dir(f"heads{n}")) as c:
        c.prepare()
        for h in range(n):
            c.boot(h, n, cmd, cpus=1, mem_mib=512, timeout=900,
                   extra=FLOOR + (BESIDE if n == 1 else []))
        for h in range(n):
            if c.status(h, 960) != 0:
                raise BenchError(f"bench cluster: host {h} of {n} failed"
                                 f" (console: {c.d}/host{h}.log)")
        c.finish()
        lines: List[str] = []
        for h in range(n):
            lines += c.console(h).splitlines()
        rnd = {}
        for p, (v, cnt, lo, hi) in figures(lines).items():
            if cnt != n:
                raise BenchError(f"bench cluster: {cnt} of {n} hosts reported {p}")
            best.keep(f"heads{n}_{p}", v, lo, hi)
            rnd[p] = v
        if "floor" not in rnd:
            raise BenchError(f"bench cluster: the {n}-host run printed no trapped-access floor"
                             f" (console: {c.d}/host0.log)")
        # The device against the floor of the same VMs a few seconds
        # later: side by side, whatever the machine did in other rounds.
        for p in PATHS:
            best.keep(f"pair_heads{n}_{p}", pair(rnd.get(p), rnd["floor"]))
            if n == 1:
                if not num(rnd.get(f"unshared_{p}")):
                    raise BenchError("bench cluster: the one-head run printed no figure of "
                                     f"the device beside it (console: {c.d}/host0.log)")
                best.every(f"beside_{p}", pair(rnd.get(p), rnd[f"unshared_{p}"]))
        # The whole rounds: every head's figure of both loops.
        got = round_figures(lines)
        for p in ROUND_PATHS:
            if p not in got or got[p][1] != n:
                raise BenchError(f"bench cluster: {got.get(p, ('', 0))[1]} of {n} hosts"
                                 f" reported {p} rounds (console: {c.d}/host0.log)")
            v, _, lo, hi, size, timed = got[p]
            if best.best.setdefault("rounds_bucket", size) != size:
                raise BenchError(f"bench cluster: the {n}-host run's rounds had buckets of"
                                 f" {size} bytes, another run's {best.best['rounds_bucket']}")
            best.keep(f"rounds_heads{n}_{p}", v, lo, hi)
            best.best["rounds_timed"] = timed
        state = state_lines(c.path("state"))
        if state is None:
            raise BenchError(f"bench cluster: {cluster.state_tool()} {c.d}/state failed")
        with open(c.path("state.txt"), "w", encoding="utf-8") as f:
            f.write("".join(line + "\n" for line in state))
        waits[n] = state_value(state, "lock_waits")
        sleeps[n] = {k: state_value(state, k)
                     for k in ("lock_sleeps", "bias_grants", "bias_revokes", "bias_drops")}


def direct(best: Best) -> None:
    """Plain 8-byte writes of 2 heads of one device, no fabric manager
    (all memory mapped directly, the map protocol), against guest RAM in
    the same guest (the multihost suite's case (l))."""
    from . import multihost
    tap_path = bench_dir("direct.tap")
    with open(tap_path, "w", encoding="utf-8") as f:
        multihost.run(multihost.Tap(f), "bench-direct", 2, "nfabric-multihost direct --bytes 256",
                      cpus=1, mem_mib=768)
    d = multihost.case_dir("bench-direct")
    if re.search(r"^not ok", read(tap_path), re.M):
        raise BenchError(f"bench cluster: the direct-map run failed (consoles: {d})")
    for h in (0, 1):
        got = direct_figures(read(os.path.join(d, f"host{h}.log")))
        if got is None:
            raise BenchError(f"bench cluster: host {h} of the direct-map run printed no"
                             " mh_direct figures")
        own, ram = got
        v = f"{num(own) / num(ram):.3f}" if num(ram) > 0 else ""
        if num(v) > num(best.get(f"own_vs_ram_{h}")):
            best.best[f"own_vs_ram_{h}"] = v
            best.best[f"own_{h}"] = own
            best.best[f"ram_{h}"] = ram


def batch() -> str:
    """This process, and so every QEMU it starts, scheduled as CPU-bound
    (SCHED_BATCH: a wake-up does not preempt it; four VMs on two cores
    switch less often); the policy's name for the report."""
    try:
        os.sched_setscheduler(0, os.SCHED_BATCH, os.sched_param(0))
    except (OSError, AttributeError) as exc:
        print(f"bench cluster: SCHED_BATCH refused ({exc}): the VMs run as SCHED_OTHER",
              file=sys.stderr)
        return "other"
    return "batch"


def bench(mib: int, rounds: int, out: TextIO = sys.stdout) -> None:
    """Every round, then the best figures on OUT."""
    best, waits, sleeps = Best(), {}, {}
    cmd = f"nfabric-multihost bench --bytes {mib}"
    out.write(f"sched={batch()}\n")
    for _ in range(rounds):
        single(cmd, best)
        for n in HEADS:
            heads(n, cmd, best, waits, sleeps)
        direct(best)
    out.write("".join(line + "\n" for line in report(mib, rounds, best, waits, sleeps)))
    out.flush()
