# SPDX-License-Identifier: GPL-2.0-or-later
"""`scripts/nfabric pools`: P clusters of H VMs, each cluster one shared
device (a pool), every VM on one network of their own: a hub on unix
sockets (nethub.py), nothing else (docs/pools.md).

Each pool is `python3 -m nfmachine cluster` (cluster.py) in a process
group of its own; the hub and the pools are stopped on every path.
"""

import argparse
import os
import re
import subprocess
import sys
import time
from typing import List, Optional, Sequence

from .ddp import PY, flat, read, stop_group, stop_on_signals
from .options import Parser, UsageError

USAGE = """\
usage: scripts/nfabric pools [--pools P] [--hosts H] [OPTIONS] --run CMD

Boots P pools of H guests: each pool is `scripts/nfabric cluster --hosts H`
(one device shared by its guests' heads), and all P x H guests are on one
network of their own (a hub on unix sockets; guest K = pool*H + host is
169.254.0.(K+1)/16 on eth0). CMD runs in every guest with NFABRIC_POOL,
NFABRIC_POOLS, NFABRIC_RANK (the host in its pool), NFABRIC_HOSTS,
NFABRIC_GLOBAL_RANK and NFABRIC_WORLD set. Ends when every guest has.

  --pools P      pools (default 2); P x H at most 16
  --hosts H      guests per pool (default 2)
  --dir DIR      pool p's cluster in DIR/pool<p>, the hub in DIR/net
                 (default build/pools)
  --hostfs, --cpus N, --mem SIZE, --cxl-mem SIZE, --timeout S,
  --device-props P: as cluster's
"""

OWN = ("--pools", "--hosts", "--dir", "--run")
PASSED = ("--cpus", "--mem", "--cxl-mem", "--timeout", "--device-props")
CLUSTER_TIMEOUT_S = 600       # cluster's default --timeout
# Beyond a pool's own --timeout: the guests' boot, and QEMU or the image
# built first by a cluster that finds them missing.
BUILD_GRACE_S = 3600


class PoolsUsage(UsageError):
    """A bad argument: the message (and the usage if .usage), status 2."""


class _Passed(argparse.Action):
    """An option for every pool's cluster: kept with the others, in order."""

    def __call__(self, parser, ns, value, option=None):
        ns.cluster = ns.cluster + ([option] if isinstance(value, list) else [option, value])


class Options:
    """The command line of `pools`: its own options, and those it passes
    to every pool's cluster, in their order."""

    def __init__(self, argv: Sequence[str]) -> None:
        parser = Parser("nfabric pools", USAGE, PoolsUsage).options(OWN)
        parser.set_defaults(cluster=[])
        parser.add_argument("--hostfs", action=_Passed, nargs=0)
        for a in PASSED:
            parser.add_argument(a, action=_Passed)
        ns = parser.parse(argv)
        self.help = ns is None
        if ns is None:
            return
        self.pools, self.hosts = ns.pools or "2", ns.hosts or "2"
        self.dir, self.cmd, self.cluster = ns.dir or "", ns.run, ns.cluster
        self._check()

    def _check(self) -> None:
        if self.cmd is None:
            raise PoolsUsage("--run CMD is required")
        good = all(re.fullmatch(r"[1-9][0-9]*", v) for v in (self.pools, self.hosts))
        if not good or not 2 <= int(self.pools) * int(self.hosts) <= 16:
            raise PoolsUsage(f"--pools {self.pools} --hosts {self.hosts}: 2..16 guests in all")

    def bound_s(self) -> int:
        """How long a pool may take: its --timeout (the last), the grace."""
        given = [v for a, v in zip(self.cluster, self.cluster[1:]) if a == "--timeout"]
        t = given[-1] if given else ""
        return (int(t) if t.isdigit() else CLUSTER_TIMEOUT_S) + BUILD_GRACE_S


def pool_command(o: Options, p: int, hub: str, d: str) -> List[str]:
    """Pool P's cluster: its hosts on the hub's ports P*H.., the pool's
    names in the environment of CMD."""
    np, nh = int(o.pools), int(o.hosts)
    env = (f"export NFABRIC_POOL={p} NFABRIC_POOLS={np} NFABRIC_WORLD={np * nh};"
           " export NFABRIC_GLOBAL_RANK=$((NFABRIC_POOL * NFABRIC_HOSTS + NFABRIC_RANK));")
    return [PY, "-m", "nfmachine", "cluster", "--hosts", o.hosts, "--dir",
            os.path.join(d, f"pool{p}"), "--net-hub", hub, "--net-first", str(p * nh),
            *o.cluster, "--run", f"{env} {o.cmd}"]


def start(cmd: List[str], out: str) -> subprocess.Popen:
    """CMD in a process group of its own, its output in OUT."""
    with open(out, "w") as f:
        return subprocess.Popen(cmd, stdout=f, stderr=subprocess.STDOUT,
                                start_new_session=True)


def wait_all(procs: List[subprocess.Popen], bound_s: float) -> List[Optional[int]]:
    """Each one's status, None for one still running after BOUND_S s."""
    deadline = time.monotonic() + bound_s
    status: List[Optional[int]] = [None] * len(procs)
    for i, proc in enumerate(procs):
        try:
            status[i] = proc.wait(timeout=max(0.0, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            status[i] = None
    return status


def report(d: str, np: int) -> List[str]:
    """A line per pool: its directory and its hosts' statuses."""
    out = []
    for p in range(np):
        pd = os.path.join(d, f"pool{p}")
        rcs = [read(os.path.join(pd, n)) for n in sorted(os.listdir(pd))
               if n.startswith("host") and n.endswith(".rc")] if os.path.isdir(pd) else []
        out.append(f"pool {p}: {pd} (consoles host<R>.log, {flat(''.join(rcs))})")
    return out


def run(o: Options) -> int:
    """The hub, then every pool at once; 1 if a pool failed."""
    np = int(o.pools)
    d = o.dir or os.path.join(os.environ.get("NF_BUILD", "build"), "pools")
    hub = os.path.join(d, "net")
    os.makedirs(hub, exist_ok=True)
    nethub = os.path.join(os.path.dirname(os.path.abspath(__file__)), "nethub.py")
    procs: List[subprocess.Popen] = []
    rc = 0
    try:
        procs.append(start([PY, nethub, hub, str(np * int(o.hosts))],
                           os.path.join(d, "nethub.log")))
        for p in range(np):
            procs.append(start(pool_command(o, p, hub, d), os.path.join(d, f"pool{p}.out")))
        for p, st in enumerate(wait_all(procs[1:], o.bound_s())):
            if st != 0:
                rc = 1
                why = "" if st is not None else f"still running after {o.bound_s()} s, stopped; "
                out = read(os.path.join(d, f"pool{p}.out"))
                print(f"nfabric pools: pool {p} failed: {why}{flat(out, 3)}", file=sys.stderr)
    finally:
        for proc in reversed(procs):
            stop_group(proc)
    print("\n".join(report(d, np)))
    return rc


def main(argv: List[str]) -> int:
    """`scripts/nfabric pools ARGV`."""
    try:
        o = Options(argv)
    except PoolsUsage as exc:
        print(f"nfabric pools: {exc.args[0]}", file=sys.stderr)
        if exc.usage:
            sys.stderr.write(USAGE)
        return 2
    if o.help:
        sys.stdout.write(USAGE)
        return 0
    stop_on_signals()
    sys.stdout.flush()
    return run(o)

