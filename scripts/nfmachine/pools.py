# SPDX-License-Identifier: GPL-2.0-or-later
"""`scripts/nfabric pools`: P clusters of H VMs, each cluster one shared
device (a pool), every VM on one network of their own: a hub on unix
sockets (scripts/lib/nethub.py), nothing else (docs/pools.md).

Each pool is a `cluster` process of its own (python3 -m nfmachine
cluster, with the hub's sockets and its guests' first address), so that
a pool that fails stops its own hosts only; the hub is stopped when
every pool has ended, on every path.
"""

import os
import signal
import subprocess
import sys
from typing import List, Optional

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

VALUED = ("--pools", "--hosts", "--dir", "--run", "--cpus", "--mem", "--cxl-mem",
          "--timeout", "--device-props")


class UsageError(RuntimeError):
    """A bad option: the message (then the usage if usage); status 2."""

    def __init__(self, msg: str, usage: bool = False):
        super().__init__(msg)
        self.usage = usage


class Options:
    def __init__(self, argv: List[str], build: str):
        self.pools, self.hosts = "2", "2"
        self.dir = ""
        self.cmd: Optional[str] = None
        self.cluster: List[str] = []          # passed on to each cluster
        self.help = False
        i = 0
        while i < len(argv):
            a = argv[i]
            if a in ("-h", "--help"):
                self.help = True
                return
            if a == "--hostfs":
                self.cluster.append(a)
            elif a in VALUED:
                if i + 1 >= len(argv):
                    raise UsageError(f"nfabric pools: {a} needs a value")
                v = argv[i + 1]
                i += 1
                if a == "--pools":
                    self.pools = v
                elif a == "--hosts":
                    self.hosts = v
                elif a == "--dir":
                    self.dir = v
                elif a == "--run":
                    self.cmd = v
                else:
                    self.cluster += [a, v]
            else:
                raise UsageError(f'nfabric pools: unknown argument "{a}"', usage=True)
            i += 1
        if self.cmd is None:
            raise UsageError("nfabric pools: --run CMD is required")
        good = all(v.isdigit() and not v.startswith("0") for v in (self.pools, self.hosts))
        if not good or not 2 <= int(self.pools) * int(self.hosts) <= 16:
            raise UsageError(f"nfabric pools: --pools {self.pools} --hosts {self.hosts}: "
                             "2..16 guests in all")
        self.np, self.nh = int(self.pools), int(self.hosts)
        self.dir = self.dir or os.path.join(build, "pools")


def pool_run(opts: Options, p: int) -> str:
    """What each guest of pool p runs: the pool's variables, then CMD."""
    return (f"export NFABRIC_POOL={p} NFABRIC_POOLS={opts.np} NFABRIC_WORLD={opts.np * opts.nh}; "
            "export NFABRIC_GLOBAL_RANK=$((NFABRIC_POOL * NFABRIC_HOSTS + NFABRIC_RANK)); "
            f"{opts.cmd}")


def tail(path: str, n: int) -> str:
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            return " ".join(f.read().splitlines()[-n:])
    except FileNotFoundError:
        return ""


def run(opts: Options, root: str) -> int:
    """The hub, then every pool's cluster at once; 0 if every pool ended 0."""
    hub = os.path.join(opts.dir, "net")
    os.makedirs(hub, exist_ok=True)
    rc = 0
    with open(os.path.join(opts.dir, "nethub.log"), "w", encoding="utf-8") as hub_log:
        hub_proc = subprocess.Popen(
            [sys.executable, os.path.join(root, "scripts", "lib", "nethub.py"), hub,
             str(opts.np * opts.nh)], stdout=hub_log, stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL)
    pools: List[subprocess.Popen] = []
    try:
        for p in range(opts.np):
            with open(os.path.join(opts.dir, f"pool{p}.out"), "w", encoding="utf-8") as out:
                pools.append(subprocess.Popen(
                    [sys.executable, "-m", "nfmachine", "cluster", "--hosts", str(opts.nh),
                     "--dir", os.path.join(opts.dir, f"pool{p}"), "--net-hub", hub,
                     "--net-first", str(p * opts.nh), *opts.cluster, "--run", pool_run(opts, p)],
                    stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL))
        for p, proc in enumerate(pools):
            if proc.wait() != 0:
                rc = 1
                print(f"nfabric pools: pool {p} failed: "
                      f"{tail(os.path.join(opts.dir, f'pool{p}.out'), 3)}", file=sys.stderr)
    finally:
        for proc in pools:                     # an error or a signal: their hosts stop too
            if proc.poll() is None:
                proc.send_signal(signal.SIGTERM)
        for proc in pools:
            proc.wait()
        hub_proc.terminate()
        hub_proc.wait()
    for p in range(opts.np):
        d = os.path.join(opts.dir, f"pool{p}")
        rcs = []
        for r in range(opts.nh):
            try:
                with open(os.path.join(d, f"host{r}.rc"), encoding="utf-8") as f:
                    rcs.append(f.read().strip())
            except FileNotFoundError:
                pass
        print(f"pool {p}: {d} (consoles host<R>.log, {' '.join(rcs) + ' ' if rcs else ''})")
    return rc


def main(argv: List[str], build: str, root: str) -> int:
    try:
        opts = Options(argv, build)
    except UsageError as e:
        print(e, file=sys.stderr)
        if e.usage:
            sys.stderr.write(USAGE)
        return 2
    if opts.help:
        sys.stdout.write(USAGE)
        return 0
    # SIGTERM ends through run()'s clean-up (its pools and the hub stopped).
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    return run(opts, root)
