# SPDX-License-Identifier: GPL-2.0-or-later
"""`scripts/nfabric cluster`: N hosts, each a guest with its own head of one
shared NEURON-Fabric device (docs/multihost.md).

The device is two files in DIR: `mem` (its memory, every head's
memory-backend-file) and `state` (the shared state, shared-state=), links
to a directory of the run on /dev/shm (or, with --keep, one of the
checkout's until `scripts/nfabric clean`).  Every host is a Topology of
topology.py and all are watched by vm.boot_all(); a fabric manager's
assignment (--fm) is made while they are paused (-S), then each is
continued over its QMP socket (DIR/qmpR.sock).  The multihost suite's and
`bench cluster`'s own hosts (hosts.py) use the same device files.
"""

import hashlib
import os
import re
import shutil
import subprocess
import sys
import time
from typing import List, Optional

from .options import Parser, given
from .topology import Topology, size_mib

USAGE = """\
usage: scripts/nfabric cluster --hosts N --run CMD [OPTIONS]

Boots N guests (hosts), each with its own head of one shared
cxl-neuron-fabric device, runs CMD in every guest with NFABRIC_RANK (its
head, 0..N-1) and NFABRIC_HOSTS (N) in the environment, and exits non-zero
if any guest failed; each host's result is reported by rank.

Options:
  --hosts N           number of hosts (1..16)
  --run CMD           the command every host runs (sh -c)
  --cpus N            vCPUs per host (default 1)
  --mem SIZE          guest RAM per host (default 1G)
  --cxl-mem SIZE      shared device memory (default 256M)
  --timeout S         kill a host after S seconds (default 600)
  --dir DIR           state file, memory file, consoles host<R>.log and
                      QMP sockets qmp<R>.sock (default build/cluster)
  --stagger S         start host r after r*S seconds (default 0)
  --device-props P    extra device properties for every head
  --fm "ARGS"         jobs set by a fabric manager before the guests run:
                      the hosts start paused, ARGS go to `nfabric-state fm
                      STATE` once every head attached (e.g. "--job 0
                      --heads 0 --windows 0-7 --mem 0+128M --job 1 --heads
                      1 --windows 8-15 --mem 128M+128M"), then they run
  --hostfs            every guest mounts the host's root file system at /host
                      (read-only; chroot /host runs the host's Python/PyTorch)
  --net               a link between the 2 hosts (unix socket, virtio NIC):
                      host r is 169.254.0.(r+1)/16 on eth0 (2 hosts only)
  --net-hub DIR       instead: every host joins the hub whose ports are the
                      unix sockets DIR/portK.sock (scripts/nfmachine/nethub.py,
                      started by the caller), K = FIRST + r, as
                      169.254.0.(K+1)/16 on eth0: several clusters on one
                      network (scripts/nfabric pools)
  --net-first FIRST   with --net-hub: this cluster's first port (default 0)
  --keep              keep the device's state and memory files after the
                      hosts end (named in the output; `scripts/nfabric
                      clean` removes them); by default they are removed
"""


class ClusterError(RuntimeError):
    pass


def _env(name: str) -> str:
    value = os.environ.get(name)
    if not value:
        raise ClusterError(f"{name} is not set (run this through scripts/nfabric)")
    return value


def state_tool() -> str:
    return os.path.join(_env("NF_HOST_BUILD"), "bench", "nfabric-state")


def live_heads(state: str) -> int:
    """The heads attached to STATE now (their live bytes), 0 if none or no file."""
    if not os.path.exists(state) or not os.access(state_tool(), os.X_OK):
        return 0
    res = subprocess.run([state_tool(), "--live", state], capture_output=True,
                         text=True, check=False)
    m = re.search(r"^live_heads=(0x[0-9a-f]+|\d+)$", res.stdout, re.M)
    return int(m.group(1), 0) if m else 0


def busy(d: str) -> Optional[str]:
    """What of an earlier cluster in D still runs (its heads, its QEMU
    processes: their state and memory must not be deleted under them)."""
    live = live_heads(os.path.join(d, "state"))
    pids = []
    for name in sorted(os.listdir(d)) if os.path.isdir(d) else []:
        if not re.fullmatch(r"host\d+\.pid", name):
            continue
        try:
            pid = int(open(os.path.join(d, name)).read().strip())
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                cmdline = f.read().replace(b"\0", b" ").decode(errors="replace")
        except (OSError, ValueError):
            continue
        if f"shared-state={d}/state" in cmdline:
            pids.append(str(pid))
    if not live and not pids:
        return None
    return (f"heads attached to {d}/state: {hex(live) if live else 'none known'};"
            f" QEMU processes: {' '.join(pids) or 'none known'}")


def _shm_dir(d: str, keep: bool) -> str:
    key = hashlib.md5(os.path.abspath(d).encode()).hexdigest()[:12]
    if keep:
        return f"/dev/shm/nfabric-{_env('NF_CHECKOUT_ID')}-kept-cluster-{key}"
    return os.path.join(_env("NF_RUN_SHM"), f"cluster-{key}")


def prepare(d: str, cxl_mib: int, keep: bool = False) -> None:
    """A fresh device in D: the memory file (CXL_MIB) and the state's link.
    Never under running hosts: if an earlier cluster's still run, wait up
    to 15 s for them to end, then give up (their files left alone)."""
    os.makedirs(d, exist_ok=True)
    d = os.path.abspath(d)
    for t in range(16):
        why = busy(d)
        if not why:
            break
        if t == 15:
            raise ClusterError(f"{d} is in use by running hosts ({why}): stop them or use"
                               " another --dir; their state and memory are left alone")
        time.sleep(1)
    for name in os.listdir(d):
        if re.fullmatch(r"host\d+\.(log|rc|pid)|qmp\d+\.sock", name):
            os.unlink(os.path.join(d, name))
    release(d)
    # The files live on tmpfs: a file on disk would be written back and
    # write-protected again by the page cache now and then.
    shm = _shm_dir(d, keep)
    shutil.rmtree(shm, ignore_errors=True)
    os.makedirs(shm)
    with open(os.path.join(shm, "mem"), "wb") as f:
        f.truncate(cxl_mib << 20)
    os.symlink(os.path.join(shm, "mem"), os.path.join(d, "mem"))
    os.symlink(os.path.join(shm, "state"), os.path.join(d, "state"))


def release(d: str) -> None:
    """Remove D's device files (what its links point to: the run's, or a
    kept cluster's of this checkout) and the links.  Its hosts have ended."""
    run_shm = os.environ.get("NF_RUN_SHM", "")
    kept = f"/dev/shm/nfabric-{os.environ.get('NF_CHECKOUT_ID', '')}-kept-cluster-"
    for name in ("mem", "state"):
        f = os.path.join(d, name)
        if os.path.islink(f):
            shm = os.path.dirname(os.readlink(f))
            if (run_shm and shm.startswith(os.path.join(run_shm, "cluster-"))) or \
                    shm.startswith(kept):
                shutil.rmtree(shm, ignore_errors=True)
        if os.path.lexists(f):
            os.unlink(f)


class Options:
    VALUED = ("--hosts", "--run", "--cpus", "--mem", "--cxl-mem", "--timeout", "--dir",
              "--stagger", "--device-props", "--fm", "--net-hub", "--net-first")

    def __init__(self, argv: List[str], usage_error):
        o = {"--cpus": "1", "--mem": "1G", "--cxl-mem": "256M", "--timeout": "600",
             "--stagger": "0", "--net-first": "0"}
        ns = Parser("nfabric cluster", USAGE, usage_error).options(
            self.VALUED, ("--hostfs", "--net", "--keep")).parse(argv)
        self.help = ns is None
        if ns is None:
            return
        o.update(given(ns, self.VALUED))
        self.hostfs, self.net, self.keep = ns.hostfs, ns.net, ns.keep
        n = o.get("--hosts", "")
        if not n.isdigit() or not 1 <= int(n) <= 16:
            raise usage_error(f'--hosts must be 1..16, not "{n}"')
        self.hosts = int(n)
        if "--run" not in o:
            raise usage_error("--run CMD is required")
        self.cmd = o["--run"]
        if self.net and self.hosts != 2:
            raise usage_error(f"--net links 2 hosts (a point-to-point link), not {self.hosts}")
        self.hub = o.get("--net-hub")
        self.first = 0
        if self.hub:
            if self.net:
                raise usage_error("--net and --net-hub exclude each other")
            if not os.path.isdir(self.hub):
                raise usage_error(f"--net-hub {self.hub}: no such directory")
            f = o["--net-first"]
            if not f.isdigit() or int(f) + self.hosts > 16:
                raise usage_error(f"--net-first {f}: ports 0..15, this cluster needs {self.hosts}")
            self.first = int(f)
        if not re.fullmatch(r"[1-9][0-9]*", o["--timeout"]):
            raise usage_error(f'bad --timeout "{o["--timeout"]}"')
        self.timeout = int(o["--timeout"])
        if not o["--stagger"].isdigit():
            raise usage_error(f'bad --stagger "{o["--stagger"]}"')
        self.stagger = int(o["--stagger"])
        cxl = size_mib(o["--cxl-mem"])
        if cxl is None or cxl < 256 or cxl % 256:
            raise usage_error(f'bad --cxl-mem "{o["--cxl-mem"]}" (a multiple of 256M)')
        self.cxl_mib = cxl
        self.cpus, self.mem = o["--cpus"], o["--mem"]
        self.props = o.get("--device-props", "")
        self.fm = o.get("--fm", "").split()
        self.dir = o.get("--dir")


def host_topology(opts: Options, d: str, r: int, base: Topology) -> Topology:
    """Host R of the cluster: a head of D's device, on the network asked for."""
    t = Topology(**{k: getattr(base, k) for k in ("cpus", "mem_mib")})
    t.cxl_mib, t.mem_path, t.hostfs = opts.cxl_mib, os.path.join(d, "mem"), opts.hostfs
    t.props = f"shared-state={d}/state,head={r},heads={opts.hosts}" + \
        (f",{opts.props}" if opts.props else "")
    t.run = f"export NFABRIC_RANK={r} NFABRIC_HOSTS={opts.hosts}; {opts.cmd}"
    if opts.hub:
        k = opts.first + r
        t.net_connect, t.ip = os.path.join(opts.hub, f"port{k}.sock"), f"169.254.0.{k + 1}/16"
    elif opts.net:
        sock = os.path.join(d, "net.sock")
        if r == 0:
            t.net_listen = sock
        else:
            t.net_connect = sock
        t.ip = f"169.254.0.{r + 1}/16"
    t.extra = ["-pidfile", os.path.join(d, f"host{r}.pid"),
               "-qmp", f"unix:{d}/qmp{r}.sock,server=on,wait=off"]
    if opts.fm:
        t.extra.append("-S")
    return t


def fabric_manager(opts: Options, d: str, qmp) -> None:
    """Once every head attached, the fabric manager's assignment; then
    every host (started paused) continues.  ClusterError if it could not."""
    deadline = time.monotonic() + 60
    want = (1 << opts.hosts) - 1
    while live_heads(os.path.join(d, "state")) & want != want:
        if time.monotonic() > deadline:
            raise ClusterError(f"not every head of {d}/state attached in 60 s")
        time.sleep(0.2)
    res = subprocess.run([state_tool(), "fm", os.path.join(d, "state"), *opts.fm],
                         capture_output=True, text=True, check=False)
    if res.returncode != 0:
        raise ClusterError("the fabric manager's assignment was refused: "
                           + (res.stdout + res.stderr).strip())
    print(res.stdout.strip())
    for r in range(opts.hosts):
        qmp.command(os.path.join(d, f"qmp{r}.sock"), "cont", None)


def run(opts: Options, base: Topology, firmware: List[str], kernel: str, initrd: str,
        binary: str) -> int:
    """The `cluster` command, its options checked and what it needs built
    (BASE: every host's vCPUs and RAM): its exit status."""
    from . import qmp, vm
    d = opts.dir
    if not d:
        # build/cluster, unless another run of this checkout uses it now.
        d = os.path.join(_env("NF_BUILD"), "cluster")
        if busy(d):
            alt = os.path.join(_env("NF_BUILD"), f"cluster-{_env('NF_RUN_ID')}")
            print(f"[nfabric] cluster: {d} is in use by another run: this one is in {alt}",
                  file=sys.stderr)
            d = alt
    os.makedirs(d, exist_ok=True)
    d = os.path.abspath(d)
    prepare(d, opts.cxl_mib, opts.keep)
    print(f"[nfabric] cluster: {opts.hosts} hosts, one shared device ({opts.cxl_mib} MiB,"
          f" state {d}/state)", file=sys.stderr)
    if opts.net:
        try:
            os.unlink(os.path.join(d, "net.sock"))
        except FileNotFoundError:
            pass
    guests, delays = [], []
    for r in range(opts.hosts):
        t = host_topology(opts, d, r, base)
        guests.append((t.qemu_args(firmware, kernel, initrd), os.path.join(d, f"host{r}.log")))
        delays.append(0 if opts.fm else r * opts.stagger)
    t0 = time.monotonic()
    watch = vm.BootAll(binary, guests, os.environ.get("TMPDIR") or "/tmp",
                       timeout=opts.timeout, delays=delays)
    if opts.fm:
        try:
            fabric_manager(opts, d, qmp)
        except (ClusterError, qmp.QMPError, OSError) as exc:
            vm.stop_all()
            watch.results()
            raise ClusterError(f"no fabric manager assignment ({exc}): the hosts were"
                               f" stopped (logs in {d})") from None
    outs = watch.results()
    for r, out in enumerate(outs):           # each host's status, for callers
        with open(os.path.join(d, f"host{r}.rc"), "w", encoding="utf-8") as f:
            f.write(f"{out.status}\n")
    print(f"cluster: {opts.hosts} hosts finished in {time.monotonic() - t0:.1f} s")
    if opts.keep:
        print(f"cluster: kept the device's state and memory: {os.readlink(d + '/state')}"
              f" and {os.readlink(d + '/mem')} (scripts/nfabric clean removes them)")
    else:
        release(d)
    bad = 0
    for r, out in enumerate(outs):
        log = os.path.join(d, f"host{r}.log")
        why = {0: "ok", vm.TIMED_OUT: "TIMED OUT (hung)",
               vm.NO_STATUS: "stopped without reporting a status"}.get(
                   out.status, f"FAILED (status {out.status})")
        print(f"cluster: host {r}: {why} (console: {log})")
        if out.status != 0:
            bad = 1
            try:
                with open(log, encoding="utf-8", errors="replace") as f:
                    tail = f.read().splitlines()[-5:]
            except OSError:
                tail = []
            for line in tail:
                print(f"    {line}")
    return bad
