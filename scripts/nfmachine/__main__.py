# SPDX-License-Identifier: GPL-2.0-or-later
"""python3 -m nfmachine COMMAND: the machines scripts/nfabric boots.

  vm [OPTIONS]                 `scripts/nfabric vm` (its --help)
  args [OPTIONS]               the QEMU command line `vm` would launch, an
                               argument a line
  libvirt-xml [OPTIONS]        `scripts/nfabric libvirt-xml` (its --help)
  cluster [OPTIONS]            `scripts/nfabric cluster` (its --help)
  pools [OPTIONS]              `scripts/nfabric pools` (its --help)
  multihost-suite [CASE...]    the `multihost` test suite (TAP); CASE: only those
  bench-cluster [OPTIONS]      `scripts/nfabric bench cluster` (its --help)
  qmp SOCKET NAME [ARGS-JSON]  one QMP command; prints its return (JSON)
  hmp SOCKET LINE              one HMP command; prints its output
  qmp-ms SOCKET N [GAP]        slowest of N query-status round trips (ms)
  cm-regs SOCKET REGION        a component block's CXL.cache/mem registers
  train bench check|run [OPTIONS] | train suite
                               `scripts/nfabric bench train`, suite `train`
  demo check|run [OPTIONS]     `scripts/nfabric demo` (its --help)
  guest-suite                  the guest suite's boots
  libvirt-suite                the libvirt suite (libvirtd, domains)
  qtest-suite LIBGCC           the qtest suite (qtests, command-line checks)
  meson-table FILE VAR | test-args [ARGS] | test-total LOGDIR COUNTS SUITE...
                               `scripts/nfabric test`'s tables, options and
                               totals (testfront.py)
  lint-suite | unit-suite      the suites lint and unit (lint.py)
  concurrency-suite            the concurrency suite's boot (concurrency.py)
  fuzz-suite QTEST | fuzz-bench check|run [QTEST] ARGS
                               suite `fuzz`, `scripts/nfabric bench fuzz` (fuzz.py)
  driver-suite | fallback-suite | pybind-suite
                               those suites (driver_suite.py)
  driver72-suite KVER ROOT OUT KO CHECKPATCH
                               the checks of suite driver72 (what driver.sh built)
  rtl-suite T0 FAULT_LIB | rtl-mutants DIR | bench-rtl check|run [OPTIONS]
                               suite `rtl`, its mutants' sources, `scripts/nfabric
                               bench rtl` (rtl.py; scripts/lib/rtl.sh builds first)
  bench-guest check|run [OPTIONS]
                               `scripts/nfabric bench guest` (its --help):
                               the options only, or the boots and figures
  lifecycle-suite              the lifecycle suite's guests and checks (TAP)
  pools [OPTIONS]              `scripts/nfabric pools` (its --help; pools.py)
  ddp-suite | pools-suite      the suites ddp and pools (ddp.py)
  bench-ddp | bench-archs | bench-ef | bench-hard | bench-pools [--check] ARGS
                               those benchmarks (ddp.py; --check: the help
                               or a refusal of bad options, nothing run)
  isolation-suite DIR STATUS   the isolation suite (isolation.py), its logs in
                               DIR; STATUS: that of nf_ddp_prepare (run.sh)
  host-snapshot FILE | host-check BEFORE
                               the host check of `test` (hostcheck.py)
  clean [OPTIONS]              `scripts/nfabric clean` (its --help)

scripts/nfabric runs it with the paths of the build in its environment
(NF_QEMU_BIN, NF_QEMU_SRC, NF_GUEST_KERNEL, ...: scripts/lib/machine.sh).
An error is reported with the command that failed; nothing exits silently.
"""

import contextlib
import os
import shlex
import subprocess
import sys
import traceback
from typing import List, Optional

from .options import scan
from .topology import Topology, TopologyError, size_mib

USAGE = """\
usage: scripts/nfabric vm [OPTIONS]

Boots the guest (build/guest/, built first if missing) under QEMU with the
CXL topology q35 + pxb-cxl + cxl-rp + the device + one fixed memory window.

Options:
  --cpus N            vCPUs (default 2)
  --mem SIZE          guest RAM (default 2G)
  --cxl-mem SIZE      device memory, a multiple of 256M (default 256M)
  --device NAME       cxl-neuron-fabric (default) or cxl-type3 (stock)
  --device-props P    extra properties for the device, "k=v,k=v"
  --rtl MODE          the low-bit datapath through its RTL (hw/rtl, built
                      first): serve, or compare (RTL beside the engine, an
                      access they differ on is dropped and reported); off
  --devices N         N devices, each on its own root port of one host
                      bridge (default 1; the guest's region is on mem0)
  --mem-path FILE     device memory in FILE (memory-backend-file, share=on),
                      e.g. one that other hosts map too (docs/multihost.md)
  --hostfs            share the host's root file system read-only (virtio-9p);
                      the guest mounts it at /host (chroot /host CMD runs the
                      host's programs on the guest's device: docs/pytorch.md)
  --net-listen SOCK   a virtio NIC on a point-to-point link to another VM,
  --net-connect SOCK  over the unix socket SOCK (this VM listens / connects)
  --ip ADDR/LEN       the guest's eth0 address (link-local: 169.254.0.0/16)
  --reboot            a guest reboot or system_reset restarts the guest
                      (default: QEMU exits, -no-reboot)
  --run CMD           run CMD (sh -c) in the guest once the region is ready,
                      then power off; exit with CMD's status
  --timeout S         kill the guest after S seconds (exit 124); default 900
                      with --run, none without
  --append ARGS       extra kernel command-line arguments
  --qemu-arg ARG      extra QEMU argument (repeatable)
  --log FILE          also write the console to FILE (default build/guest/vm.log)
  --quiet             do not copy the console to stdout (markers still parsed)
  --qemu-status       exit with QEMU's status instead of the guest command's
                      (a guest stopped over QMP: a migration's source)

Without --run the guest's console is on the terminal (Ctrl-] stops QEMU);
leaving its shell powers off.  When standard input is not a terminal, it is
read as the script to run (as with --run).  The machine is started through
QEMU's own python/qemu (scripts/nfmachine, docs/guest.md).
Prints "vm: boot-to-ready X s" (QEMU start to NFABRIC-READY) on stderr.
Exit status: CMD's status; 124 on timeout; 125 if the guest stopped without
reporting one; QEMU's status (with its message) if QEMU refused to start;
2 for bad options.
"""

LIBVIRT_USAGE = """\
usage: scripts/nfabric libvirt-xml [OPTIONS]

Prints a libvirt domain XML that boots the guest of `scripts/nfabric vm`
(direct kernel boot, the CXL topology as QEMU arguments, serial console to
a file).  Options:
  --name NAME         domain name (default nfabric-guest)
  --cpus N            vCPUs (default 2)
  --mem SIZE          guest RAM (default 2G)
  --cxl-mem SIZE      device memory, a multiple of 256M (default 256M)
  --device NAME       cxl-neuron-fabric (default) or cxl-type3
  --run CMD           command the guest runs once the region is ready, then
                      powers off (default: nfabric-test)
  --serial FILE       serial console log (default build/guest/libvirt-serial.log)
  -o, --output FILE   write the XML to FILE instead of stdout
  --hosts N           N domains NAME-0 .. NAME-(N-1), each a host with its own
                      head of one shared device (docs/multihost.md): needs
                      -o DIR; writes DIR/NAME-R.xml, the device memory file
                      DIR/mem and state file DIR/state are shared, consoles
                      go to DIR/NAME-R-serial.log; CMD runs with NFABRIC_RANK
                      and NFABRIC_HOSTS set
"""

VALUED = ("--cpus", "--mem", "--cxl-mem", "--device", "--device-props", "--run",
          "--timeout", "--append", "--qemu-arg", "--log", "--mem-path", "--devices",
          "--net-listen", "--net-connect", "--ip", "--rtl")


class UsageError(Exception):
    """A bad option: exit status 2, the message and the usage."""


def env(name: str) -> str:
    value = os.environ.get(name)
    if not value:
        raise RuntimeError(f"{name} is not set (run this through scripts/nfabric)")
    return value


def nfabric(*args: str, capture: bool = False) -> str:
    """A provisioning step of scripts/nfabric (it joins this run)."""
    cmd = [os.path.join(env("NF_ROOT"), "scripts", "nfabric"), *args]
    res = subprocess.run(cmd, stdout=subprocess.PIPE if capture else sys.stderr,
                         text=True, check=False)
    if res.returncode != 0:
        raise RuntimeError(f"{shlex.join(cmd)} failed with status {res.returncode}")
    return (res.stdout or "").strip()


class VmOptions:
    def __init__(self, argv: List[str]):
        self.topo = Topology()
        self.timeout: Optional[int] = None
        self.log = os.path.join(os.environ.get("NF_BUILD", "build"), "guest", "vm.log")
        self.quiet = False
        self.help = False
        self.have_run = False
        self.qemu_status = False
        scanned = scan(argv, VALUED, ("--quiet", "--reboot", "--hostfs", "--qemu-status"),
                       UsageError)
        if scanned is None:
            self.help = True
            return
        values, flags = scanned
        self.topo.extra = values.pop("--qemu-arg", [])
        raw = {k: v[-1] for k, v in values.items()}
        self.quiet = "--quiet" in flags
        self.topo.reboot = "--reboot" in flags
        self.topo.hostfs = "--hostfs" in flags
        self.qemu_status = "--qemu-status" in flags
        self._apply(raw)

    def _apply(self, raw) -> None:
        t = self.topo
        if "--cpus" in raw:
            v = raw["--cpus"]
            if not v.isdigit() or not 1 <= int(v) <= 64 or v.startswith("0"):
                raise UsageError(f'--cpus must be 1..64, not "{v}"')
            t.cpus = int(v)
        if "--mem" in raw:
            n = size_mib(raw["--mem"])
            if n is None or n < 256:
                raise UsageError(f'bad --mem "{raw["--mem"]}" (e.g. 2G, at least 256M)')
            t.mem_mib = n
        if "--cxl-mem" in raw:
            n = size_mib(raw["--cxl-mem"])
            if n is None or n < 256 or n % 256:
                raise UsageError(f'bad --cxl-mem "{raw["--cxl-mem"]}" '
                                 "(a multiple of 256M: CXL regions are)")
            t.cxl_mib = n
        if "--devices" in raw:
            v = raw["--devices"]
            if v not in [str(k) for k in range(1, 9)]:
                raise UsageError(f'--devices must be 1..8, not "{v}"')
            t.devices = int(v)
        t.device = raw.get("--device", t.device)
        t.props = raw.get("--device-props", "")
        t.rtl = raw.get("--rtl", "off")
        t.mem_path = raw.get("--mem-path")
        t.net_listen = raw.get("--net-listen")
        t.net_connect = raw.get("--net-connect")
        t.ip = raw.get("--ip")
        t.append = raw.get("--append", "")
        self.log = raw.get("--log", self.log)
        if "--run" in raw:
            t.run = raw["--run"]
            self.have_run = True
        if "--timeout" in raw:
            v = raw["--timeout"]
            if not v.isdigit() or int(v) < 1 or v.startswith("0"):
                raise UsageError(f'bad --timeout "{v}"')
            self.timeout = int(v)
        elif self.have_run:
            self.timeout = 900
        try:
            t.check()
        except TopologyError as exc:
            raise UsageError(str(exc)) from None


def provision(opts: VmOptions) -> List[str]:
    """provision_topology() of the options' machine."""
    return provision_topology(opts.topo)


def provision_topology(t: Topology) -> List[str]:
    """QEMU with the device, the guest image and (for --rtl) the RTL
    library, built by scripts/nfabric if missing; the QEMU arguments of T."""
    qemu = env("NF_QEMU_BIN")
    if not os.access(qemu, os.X_OK):
        nfabric("setup", "--quiet")
    if not os.access(qemu, os.X_OK):
        raise RuntimeError(f"{qemu} is missing (run scripts/nfabric setup)")
    devs = subprocess.run([qemu, "-nodefaults", "-device", "help"], capture_output=True,
                          text=True, check=False).stdout
    if f'name "{t.device}"' not in devs:
        hint = "" if t.device == "cxl-type3" else ", or --device cxl-type3"
        raise RuntimeError(f"{qemu} has no device {t.device} (run scripts/nfabric setup{hint})")
    kernel, initrd = env("NF_GUEST_KERNEL"), env("NF_GUEST_INITRD")
    if not (os.path.isfile(kernel) and os.path.isfile(initrd)):
        nfabric("image")
    if t.rtl != "off":
        t.rtl_lib = nfabric("rtl-lib", capture=True).splitlines()[-1]
    return t.qemu_args(shlex.split(os.environ.get("NF_FIRMWARE", "")), kernel, initrd)


def qemu_python() -> None:
    """QEMU's own python/ (qemu.machine, qemu.qmp) from the fetched source."""
    path = os.path.join(env("NF_QEMU_SRC"), "python")
    if not os.path.isdir(os.path.join(path, "qemu", "machine")):
        raise RuntimeError(f"{path}/qemu/machine is missing (run scripts/nfabric setup)")
    sys.path.insert(0, path)


def cmd_vm(argv: List[str]) -> int:
    opts = VmOptions(argv)
    if opts.help:
        sys.stdout.write(USAGE)
        return 0
    t = opts.topo
    interactive = not opts.have_run and sys.stdin.isatty()
    if not opts.have_run and not interactive:
        # No terminal: standard input is the script the guest runs.
        t.run = sys.stdin.read()
        opts.have_run = True
        opts.timeout = opts.timeout or 900
        try:
            t.check()
        except TopologyError as exc:
            raise UsageError(str(exc)) from None
    args = provision(opts)
    qemu_python()
    from . import vm
    vm.stop_on_signals()
    os.makedirs(os.path.dirname(os.path.abspath(opts.log)), exist_ok=True)
    temp = os.environ.get("TMPDIR") or "/tmp"
    print(f"[nfabric] vm: {t.device}, {t.cpus} vCPUs, {t.mem_mib} MiB RAM,"
          f" {t.cxl_mib} MiB CXL memory", file=sys.stderr)
    if interactive:
        return vm.interactive(env("NF_QEMU_BIN"), args, temp, opts.log)
    logs = os.environ.get("NF_TEST_LOGS") or os.path.join(env("NF_BUILD"), "test-logs")
    # A destination of a migration prints nothing until it has run: no
    # boot-hang watch for it.
    hang_s = None if "-incoming" in t.extra else float(
        os.environ.get("NF_VM_BOOT_HANG_S") or 120)
    out = vm.boot(env("NF_QEMU_BIN"), args, temp, opts.log, quiet=opts.quiet,
                  timeout=opts.timeout, have_run=opts.have_run and not opts.qemu_status,
                  hang_s=hang_s, hang_log=os.path.join(logs, "boot-hangs.log"))
    if opts.qemu_status and out.status != vm.TIMED_OUT:
        return out.qemu_status or 0
    return out.status


def cmd_args(argv: List[str]) -> int:
    opts = VmOptions(argv)
    if opts.help:
        sys.stdout.write(USAGE)
        return 0
    if opts.topo.rtl != "off":
        opts.topo.rtl_lib = nfabric("rtl-lib", capture=True).splitlines()[-1]
    args = opts.topo.qemu_args(shlex.split(os.environ.get("NF_FIRMWARE", "")),
                               env("NF_GUEST_KERNEL"), env("NF_GUEST_INITRD"))
    sys.stdout.write("".join(a + "\n" for a in args))
    return 0


def cmd_cluster(argv: List[str]) -> int:
    from . import cluster
    opts = cluster.Options(argv, UsageError)
    if opts.help:
        sys.stdout.write(cluster.USAGE)
        return 0
    vm_opts = VmOptions(["--cpus", opts.cpus, "--mem", opts.mem,
                         "--cxl-mem", f"{opts.cxl_mib}M", "--run", opts.cmd])
    provision(vm_opts)                    # QEMU, the image: built if missing
    qemu_python()
    from . import vm
    vm.stop_on_signals()
    try:
        return cluster.run(opts, vm_opts.topo, shlex.split(os.environ.get("NF_FIRMWARE", "")),
                           env("NF_GUEST_KERNEL"), env("NF_GUEST_INITRD"), env("NF_QEMU_BIN"))
    except cluster.ClusterError as exc:
        print(f"nfabric cluster: {exc}", file=sys.stderr)
        return 1


def cmd_multihost_suite(argv: List[str]) -> int:
    """The multihost suite; 1 if a case failed with an error (the checks'
    verdicts are its TAP lines).  ARGV: the cases to run (all if none),
    by name, for a developer (e.g. jobs2 pause2)."""
    qemu_python()
    from . import multihost, vm
    names = [name for name, _, _ in multihost.cases(multihost.Tap(sys.stdout))]
    for name in argv:
        if name not in names:
            raise UsageError(f'unknown case "{name}" (cases: {" ".join(names)})')
    vm.stop_on_signals()
    return multihost.suite(only=argv)


def cmd_bench_cluster(argv: List[str]) -> int:
    """`scripts/nfabric bench cluster`: its key=value lines."""
    from . import benchcluster
    try:
        opts = benchcluster.parse(argv)
    except benchcluster.Usage as exc:
        print(exc, file=sys.stderr)
        return 2
    if opts is None:
        sys.stdout.write(benchcluster.USAGE)
        return 0
    if not os.access(env("NF_QEMU_BIN"), os.X_OK):
        nfabric("setup", "--quiet")
    nfabric("image")                  # the guest programs as the sources are
    qemu_python()
    from . import vm
    vm.stop_on_signals()
    try:
        benchcluster.bench(*opts)
    except benchcluster.BenchError as exc:
        print(f"nfabric: error: {exc}", file=sys.stderr)
        return 1
    return 0


def cmd_libvirt_xml(argv: List[str]) -> int:
    from .libvirt import domain_xml
    valued = ("--name", "--cpus", "--mem", "--cxl-mem", "--device", "--run",
              "--serial", "-o", "--output", "--hosts")
    o = {"--name": "nfabric-guest", "--run": "nfabric-test",
         "--serial": os.path.join(env("NF_BUILD"), "guest", "libvirt-serial.log")}
    scanned = scan(argv, valued, (), UsageError)
    if scanned is None:
        sys.stdout.write(LIBVIRT_USAGE)
        return 0
    vm_argv: List[str] = []
    for a, v in scanned[0].items():
        o["--output" if a == "-o" else a] = v[-1]
        if a in ("--cpus", "--mem", "--cxl-mem", "--device"):
            vm_argv += [a, v[-1]]
    topo = VmOptions(vm_argv).topo
    serial = os.path.abspath(o["--serial"])
    out = o.get("--output")
    common = dict(emulator=env("NF_QEMU_BIN"), kernel=env("NF_GUEST_KERNEL"),
                  initrd=env("NF_GUEST_INITRD"),
                  firmware=shlex.split(os.environ.get("NF_FIRMWARE", "")))
    if "--hosts" not in o:
        topo.run = o["--run"] or None
        xml = domain_xml(topo, o["--name"], serial, **common)
        if out:
            with open(out, "w", encoding="utf-8") as f:
                f.write(xml)
        else:
            sys.stdout.write(xml)
        return 0
    hosts = o["--hosts"]
    if not hosts.isdigit() or not 1 <= int(hosts) <= 16:
        raise UsageError(f'--hosts must be 1..16, not "{hosts}"')
    if not out:
        raise UsageError("--hosts needs -o DIR")
    if topo.device != "cxl-neuron-fabric":
        raise UsageError("--hosts needs --device cxl-neuron-fabric")
    n = int(hosts)
    os.makedirs(out, exist_ok=True)
    out = os.path.abspath(out)
    topo.mem_path = os.path.join(out, "mem")
    for r in range(n):
        name = f"{o['--name']}-{r}"
        topo.props = f"shared-state={out}/state,head={r},heads={n}"
        topo.run = f"export NFABRIC_RANK={r} NFABRIC_HOSTS={n}; {o['--run']}"
        path = os.path.join(out, name + ".xml")
        with open(path, "w", encoding="utf-8") as f:
            f.write(domain_xml(topo, name, os.path.join(out, name + "-serial.log"), **common))
        print(path)
    return 0


def cmd_lifecycle(argv: List[str]) -> int:
    """The lifecycle suite (lifecycle.py): TAP on stdout; 0 if every check
    passed.  Its consoles and QEMU output in build/lifecycle."""
    if argv:
        raise UsageError("lifecycle-suite takes no arguments")
    qemu_python()
    from . import lifecycle, vm
    vm.stop_on_signals()
    logs = os.environ.get("NF_TEST_LOGS") or os.path.join(env("NF_BUILD"), "test-logs")
    machine = lifecycle.Machine(
        binary=env("NF_QEMU_BIN"), qemu_args=provision_topology,
        temp_dir=os.environ.get("TMPDIR") or "/tmp",
        hang_s=float(os.environ.get("NF_VM_BOOT_HANG_S") or 120),
        hang_log=os.path.join(logs, "boot-hangs.log"))
    return lifecycle.run(machine, os.path.join(env("NF_BUILD"), "lifecycle"),
                         os.environ.get("NF_RUN_SHM", ""),
                         os.environ.get("NF_LIFECYCLE_MEM") or "1G",
                         os.environ.get("NF_LIFECYCLE_CXL_MEM") or "256M")


def cmd_monitor(name: str, argv: List[str]) -> int:
    qemu_python()
    from . import qmp
    want = {"qmp": (2, 3), "hmp": (2, 2), "qmp-ms": (2, 3), "cm-regs": (2, 2)}[name]
    if not want[0] <= len(argv) <= want[1]:
        raise UsageError(f"{name} takes {want[0]}..{want[1]} arguments, not {len(argv)}")
    try:
        if name == "qmp":
            print(qmp.command(argv[0], argv[1], argv[2] if len(argv) > 2 else None))
        elif name == "hmp":
            with qmp.Monitor(argv[0]) as mon:
                sys.stdout.write(mon.hmp(argv[1]))
        elif name == "qmp-ms":
            print(qmp.worst_latency_ms(argv[0], int(argv[1]),
                                       float(argv[2]) if len(argv) > 2 else 0.0))
        else:
            sys.stdout.write(qmp.cachemem_regs(argv[0], argv[1]))
    except qmp.QMPError as exc:
        print(exc, file=sys.stderr)
        return 1
    except (OSError, EOFError) as exc:
        print(f"{name}: {argv[0]}: {type(exc).__name__}: {exc}", file=sys.stderr)
        return 1
    return 0


def cmd_bench_guest(argv: List[str]) -> int:
    """bench-guest check ARGS (the options, before anything is built) or
    bench-guest run ARGS (scripts/lib/guestbench.sh built QEMU and the image)."""
    from . import guestbench
    if not argv or argv[0] not in ("check", "run"):
        raise UsageError("usage: bench-guest check|run [OPTIONS]")
    try:
        opts = guestbench.Options(argv[1:])
    except guestbench.UsageError as exc:
        print(exc, file=sys.stderr)
        if exc.usage:
            sys.stderr.write(guestbench.USAGE)
        return 2
    if opts.help:
        sys.stdout.write(guestbench.USAGE)
        return 0
    if argv[0] == "check":
        return 0

    guests()
    guest = os.path.join(env("NF_BUILD"), "guest")

    def boot(vm_argv: List[str], log: str, err: str):
        out = boot_vm(vm_argv, err)
        return out.status, out.ready_s

    try:
        return guestbench.run(opts, guest, boot)
    except guestbench.BenchError as exc:
        print(f"nfabric: error: {exc}", file=sys.stderr)
        return 1


def boot_vm(vm_argv: List[str], err: Optional[str] = None):
    """`vm VM_ARGV` (with --run) in this process: the guest booted and
    watched by vm.boot(); its Outcome.  The watcher's and QEMU's messages
    go to stderr, or to the file err.  For the suites and benchmarks that
    boot guests (qemu_python() and vm.stop_on_signals() first)."""
    from . import vm
    opts = VmOptions(vm_argv)
    args = provision(opts)
    os.makedirs(os.path.dirname(os.path.abspath(opts.log)), exist_ok=True)
    logs = os.environ.get("NF_TEST_LOGS") or os.path.join(env("NF_BUILD"), "test-logs")
    with contextlib.ExitStack() as stack:
        stream = stack.enter_context(open(err, "w", encoding="utf-8")) if err else None
        return vm.boot(env("NF_QEMU_BIN"), args, os.environ.get("TMPDIR") or "/tmp",
                       opts.log, quiet=opts.quiet, timeout=opts.timeout,
                       have_run=opts.have_run,
                       hang_s=float(os.environ.get("NF_VM_BOOT_HANG_S") or 120),
                       hang_log=os.path.join(logs, "boot-hangs.log"), err=stream)


def guests() -> None:
    """Before booting guests in this process: QEMU's python, the signals."""
    qemu_python()
    from . import vm
    vm.stop_on_signals()


def cmd_train(argv: List[str]) -> int:
    from . import train
    if argv[:1] == ["suite"]:
        guests()
    return train.main(argv, boot_vm)


def cmd_demo(argv: List[str], suite: bool) -> int:
    """`scripts/nfabric demo`, or (suite) the guest suite's boots."""
    from . import demo
    guest = os.path.join(env("NF_BUILD"), "guest")

    def boot(vm_argv: List[str], log: str, err: Optional[str]) -> int:
        return boot_vm(["--quiet", "--log", log, "--timeout", "900", *vm_argv], err).status

    if suite:
        guests()
        logs = os.environ.get("NF_TEST_LOGS") or os.path.join(env("NF_BUILD"), "test-logs")
        return demo.guest_suite(logs, boot)
    try:
        device = demo.parse(argv[1:])
    except demo.UsageError as exc:
        print(exc, file=sys.stderr)
        if exc.usage:
            sys.stderr.write(demo.USAGE)
        return 2
    if device is None:
        sys.stdout.write(demo.USAGE)
        return 0
    if argv[0] == "check":
        return 0
    guests()
    return demo.demo(device, guest, boot, cmd_cluster)


def cmd_libvirt_suite(argv: List[str]) -> int:
    """Suite `libvirt` (scripts/lib/libvirt.sh installed libvirt first)."""
    from . import libvirt_suite
    if argv:
        raise UsageError("libvirt-suite takes no arguments")
    return libvirt_suite.suite(env("NF_BUILD"), cmd_libvirt_xml)


def cmd_host_suites(name: str, argv: List[str]) -> int:
    """Suites lint, unit (host only) and concurrency (one boot)."""
    if argv:
        raise UsageError(f'{name} takes no argument, not "{argv[0]}"')
    if name == "lint-suite":
        from . import lint
        return lint.lint(env("NF_ROOT"))
    if name == "unit-suite":
        from . import lint
        return lint.unit(env("NF_ROOT"), env("NF_HOST_BUILD"), env("NF_QEMU_SRC"))
    from . import concurrency
    guests()
    logs = os.environ.get("NF_TEST_LOGS") or os.path.join(env("NF_BUILD"), "test-logs")
    os.makedirs(logs, exist_ok=True)

    def boot(vm_argv: List[str], log: str) -> int:
        return boot_vm(["--quiet", "--log", log, "--timeout", "900", *vm_argv]).status
    return concurrency.suite(os.path.join(logs, "concurrency-console.log"), boot)


def cmd_qtest_suite(argv: List[str]) -> int:
    """Suite `qtest` (scripts/lib/qtest.sh built the qtests first)."""
    from . import qtest_suite
    if len(argv) != 1:
        raise UsageError("qtest-suite takes libgcc_s's path (not a libnfrtl.so)")
    guests()
    return qtest_suite.suite(env("NF_QEMU_BIN"), os.path.dirname(env("NF_QEMU_BIN")),
                             env("NF_QTESTS").split(), env("NF_BUILD"), env("NF_RUN_SHM"), argv[0],
                             lambda vm_argv, err: boot_vm(vm_argv, err))


def cmd_rtl(name: str, argv: List[str]) -> int:
    """Suite `rtl` and `bench rtl` (rtl.py); guests through boot_vm."""
    from . import rtl

    def boot() -> "rtl.Boot":
        guests()
        return lambda vm_argv, err: boot_vm(vm_argv, err).status
    return rtl.main(name, argv, lambda: rtl.Paths(env("NF_ROOT"), env("NF_BUILD"),
                                                  env("NF_QEMU_BIN")), boot)


def main(argv: List[str]) -> int:
    if not argv or argv[0] in ("-h", "--help"):
        sys.stdout.write(__doc__)
        return 0 if argv else 2
    name, rest = argv[0], argv[1:]
    prog = (f"nfabric {name}" if name in ("vm", "libvirt-xml", "cluster", "pools", "clean")
            else f"nfmachine {name}")
    try:
        if name == "cluster":
            return cmd_cluster(rest)
        if name == "multihost-suite":
            return cmd_multihost_suite(rest)
        if name == "bench-cluster":
            return cmd_bench_cluster(rest)
        if name in ("vm", "args"):
            return cmd_vm(rest) if name == "vm" else cmd_args(rest)
        if name == "libvirt-xml":
            return cmd_libvirt_xml(rest)
        if name in ("qmp", "hmp", "qmp-ms", "cm-regs"):
            return cmd_monitor(name, rest)
        if name == "bench-guest":
            return cmd_bench_guest(rest)
        if name == "train":
            return cmd_train(rest)
        if name == "demo" and rest[:1] in (["check"], ["run"]):
            return cmd_demo(rest, False)
        if name == "guest-suite":
            return cmd_demo(rest, True)
        if name == "lifecycle-suite":
            return cmd_lifecycle(rest)
        if name == "libvirt-suite":
            return cmd_libvirt_suite(rest)
        if name == "qtest-suite":
            return cmd_qtest_suite(rest)
        if name in ("meson-table", "test-args", "test-total"):
            from . import testfront
            try:
                return testfront.main(name, rest, env("NF_ROOT"))
            except ValueError as exc:
                raise UsageError(str(exc)) from exc
        if name in ("lint-suite", "unit-suite", "concurrency-suite"):
            return cmd_host_suites(name, rest)
        if name in ("fuzz-suite", "fuzz-bench"):
            from . import fuzz
            return fuzz.main(name, rest)
        if name in ("driver-suite", "fallback-suite", "pybind-suite", "driver72-suite"):
            from . import driver_suite
            return driver_suite.main(name, rest, boot_vm, cmd_cluster, guests, UsageError)
        if name in ("rtl-suite", "rtl-mutants", "bench-rtl"):
            return cmd_rtl(name, rest)
        if name == "pools":
            from . import pools
            return pools.main(rest)
        if name in ("isolation-suite", "clean"):
            from . import isolation
            if name == "clean":
                return isolation.clean(rest, dict(os.environ))
            if len(rest) != 2 or not rest[1].isdigit():
                raise UsageError("isolation-suite takes the log directory and a status")
            return isolation.suite_main(rest)
        if name in ("host-snapshot", "host-check"):
            from . import hostcheck
            if len(rest) != 1:
                raise UsageError(f"{name} takes one file")
            return hostcheck.main(name, rest)
        if name in ("ddp-suite", "pools-suite") or name.startswith("bench-"):
            from . import ddp
            if name in ddp.COMMANDS:
                return ddp.main(name, rest)
        raise UsageError(f'unknown command "{name}"', True)
    except UsageError as exc:
        print(f"{prog}: {exc.args[0]}", file=sys.stderr)
        if len(exc.args) > 1 and name in ("vm", "args"):
            sys.stderr.write(USAGE)
        elif len(exc.args) > 1 and name == "libvirt-xml":
            sys.stderr.write(LIBVIRT_USAGE)
        elif len(exc.args) > 1 and name == "cluster":
            from .cluster import USAGE as CLUSTER_USAGE
            sys.stderr.write(CLUSTER_USAGE)
        return 2
    except KeyboardInterrupt:
        return 130
    except SystemExit:
        raise
    except Exception as exc:  # noqa: BLE001: reported, never silent
        print(f"{prog}: error: {type(exc).__name__}: {exc}", file=sys.stderr)
        print(f"{prog}: the command was: nfmachine {shlex.join(argv)}", file=sys.stderr)
        traceback.print_exc(file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
