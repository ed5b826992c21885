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
  needs COMMAND [ARGS]         what scripts/nfabric builds before COMMAND
                               (vm, args, cluster, pools, bench-cluster,
                               demo run)

scripts/nfabric runs it with the paths of the build in its environment
(NF_QEMU_BIN, NF_QEMU_SRC, NF_GUEST_KERNEL, ...: scripts/lib/vm.sh), having
built first what `needs` names (NF_RTL_LIB: the RTL library's path).
An error is reported with the command that failed; nothing exits silently.
"""

import argparse
import contextlib
import os
import shlex
import subprocess
import sys
import traceback
from typing import Callable, Dict, List, NamedTuple, Optional

from .hosts import env
from .options import Parser, UsageError, given
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
  --perf              append the perf part to the initramfs (built first if
                      missing): Debian's perf of the guest kernel's version,
                      `perf` in the guest (docs/guest.md); the boot takes
                      about 0.8 s (15 %) more
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


def rtl_lib() -> str:
    """The RTL library (libnfrtl.so), which scripts/nfabric built before
    this command since `needs` named it (NF_RTL_LIB)."""
    path = os.environ.get("NF_RTL_LIB")
    if not path:
        raise RuntimeError("NF_RTL_LIB is not set: scripts/nfabric builds the RTL library"
                           " (scripts/nfabric rtl-lib) for a guest with --rtl")
    return path


class VmOptions:
    def __init__(self, argv: List[str]):
        self.topo = Topology()
        self.timeout: Optional[int] = None
        self.log = os.path.join(os.environ.get("NF_BUILD", "build"), "guest", "vm.log")
        self.quiet = False
        self.help = False
        self.have_run = False
        self.qemu_status = False
        self.perf = False
        ns = Parser("nfabric vm", USAGE).options(
            VALUED, ("--quiet", "--reboot", "--hostfs", "--qemu-status", "--perf"),
            repeated=("--qemu-arg",)).parse(argv)
        if ns is None:
            self.help = True
            return
        self.topo.extra = ns.qemu_arg
        self.quiet, self.qemu_status, self.perf = ns.quiet, ns.qemu_status, ns.perf
        self.topo.reboot, self.topo.hostfs = ns.reboot, ns.hostfs
        self._apply(given(ns, [v for v in VALUED if v != "--qemu-arg"]))

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
    return provision_topology(opts.topo, opts.perf)


def initrd_of(perf: bool) -> str:
    """The guest's initramfs; with PERF, the one with the perf part after
    it, which scripts/nfabric made since `needs` named it
    (NF_GUEST_INITRD_PERF, scripts/lib/cxlpmu.sh)."""
    if not perf:
        return env("NF_GUEST_INITRD")
    path = os.environ.get("NF_GUEST_INITRD_PERF")
    if not path:
        raise RuntimeError("NF_GUEST_INITRD_PERF is not set: scripts/nfabric makes the"
                           " initramfs with perf for a guest with --perf")
    return path


def provision_topology(t: Topology, perf: bool = False) -> List[str]:
    """QEMU with the device, the guest image (with PERF, the one with
    perf) and (for --rtl) the RTL library, built by scripts/nfabric if
    missing; the QEMU arguments of T."""
    qemu = env("NF_QEMU_BIN")
    if not os.access(qemu, os.X_OK):
        raise RuntimeError(f"{qemu} is missing (run scripts/nfabric setup)")
    devs = subprocess.run([qemu, "-nodefaults", "-device", "help"], capture_output=True,
                          text=True, check=False).stdout
    if f'name "{t.device}"' not in devs:
        hint = "" if t.device == "cxl-type3" else ", or --device cxl-type3"
        raise RuntimeError(f"{qemu} has no device {t.device} (run scripts/nfabric setup{hint})")
    kernel, initrd = env("NF_GUEST_KERNEL"), initrd_of(perf)
    if not (os.path.isfile(kernel) and os.path.isfile(initrd)):
        raise RuntimeError(f"{kernel} or {initrd} is missing (run scripts/nfabric image)")
    if t.rtl != "off":
        t.rtl_lib = rtl_lib()
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
        opts.topo.rtl_lib = rtl_lib()
    args = opts.topo.qemu_args(shlex.split(os.environ.get("NF_FIRMWARE", "")),
                               env("NF_GUEST_KERNEL"), initrd_of(opts.perf))
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


def cmd_multihost_suite(ns: argparse.Namespace) -> int:
    """The multihost suite; 1 if a case failed with an error (the checks'
    verdicts are its TAP lines).  ns.cases: the cases to run (all if none),
    by name, for a developer (e.g. jobs2 pause2)."""
    qemu_python()
    from . import multihost, vm
    names = [name for name, _, _ in multihost.cases(multihost.Tap(sys.stdout))]
    for name in ns.cases:
        if name not in names:
            raise UsageError(f'unknown case "{name}" (cases: {" ".join(names)})')
    vm.stop_on_signals()
    return multihost.suite(only=ns.cases)


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
              "--serial", "--hosts")
    o = {"--name": "nfabric-guest", "--run": "nfabric-test",
         "--serial": os.path.join(env("NF_BUILD"), "guest", "libvirt-serial.log")}
    parser = Parser("nfabric libvirt-xml", LIBVIRT_USAGE).options(valued)
    parser.add_argument("-o", "--output")
    ns = parser.parse(argv)
    if ns is None:
        sys.stdout.write(LIBVIRT_USAGE)
        return 0
    o.update(given(ns, valued + ("--output",)))
    vm_argv = [w for a, v in given(ns, ("--cpus", "--mem", "--cxl-mem", "--device")).items()
               for w in (a, v)]
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


def cmd_lifecycle(_: argparse.Namespace) -> int:
    """The lifecycle suite (lifecycle.py): TAP on stdout; 0 if every check
    passed.  Its consoles and QEMU output in build/lifecycle."""
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


def cmd_monitor(name: str, ns: argparse.Namespace) -> int:
    qemu_python()
    from . import qmp
    try:
        if name == "qmp":
            print(qmp.command(ns.socket, ns.name, ns.args))
        elif name == "hmp":
            with qmp.Monitor(ns.socket) as mon:
                sys.stdout.write(mon.hmp(ns.line))
        elif name == "qmp-ms":
            print(qmp.worst_latency_ms(ns.socket, ns.n, ns.gap))
        else:
            sys.stdout.write(qmp.cachemem_regs(ns.socket, ns.region))
    except qmp.QMPError as exc:
        print(exc, file=sys.stderr)
        return 1
    except (OSError, EOFError) as exc:
        print(f"{name}: {ns.socket}: {type(exc).__name__}: {exc}", file=sys.stderr)
        return 1
    return 0


def usage_said(parse: Callable, argv: List[str], usage: str, help_value=None):
    """PARSE(ARGV), or None once a bad option was said (the message, then
    USAGE if it asks for it); HELP_VALUE in place of parse's None (--help)."""
    try:
        out = parse(argv)
        return help_value if out is None else out
    except UsageError as exc:
        print(exc, file=sys.stderr)
        if exc.usage:
            sys.stderr.write(usage)
        return None


def say_help(usage: str) -> int:
    sys.stdout.write(usage)
    return 0


def cmd_bench_guest(argv: List[str]) -> int:
    """bench-guest check ARGS (the options, before anything is built) or
    bench-guest run ARGS (scripts/lib/guestbench.sh built QEMU and the image)."""
    from . import guestbench
    if not argv or argv[0] not in ("check", "run"):
        raise UsageError("usage: bench-guest check|run [OPTIONS]")
    opts = usage_said(guestbench.Options, argv[1:], guestbench.USAGE)
    if opts is None or opts.help:
        return 2 if opts is None else say_help(guestbench.USAGE)
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
    device = usage_said(demo.parse, argv[1:], demo.USAGE, "help")
    if device in (None, "help"):
        return 2 if device is None else say_help(demo.USAGE)
    if argv[0] == "check":
        return 0
    guests()
    return demo.demo(device, guest, boot, cmd_cluster)


def cmd_libvirt_suite(_: argparse.Namespace) -> int:
    """Suite `libvirt` (scripts/lib/libvirt.sh installed libvirt first)."""
    from . import libvirt_suite
    return libvirt_suite.suite(env("NF_BUILD"), cmd_libvirt_xml)


def cmd_host_suites(name: str) -> int:
    """Suites lint, unit (host only) and concurrency (one boot)."""
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


def cmd_qtest_suite(ns: argparse.Namespace) -> int:
    """Suite `qtest` (scripts/lib/qtest.sh built the qtests first)."""
    from . import qtest_suite
    guests()
    return qtest_suite.suite(env("NF_QEMU_BIN"), os.path.dirname(env("NF_QEMU_BIN")),
                             env("NF_QTESTS").split(), env("NF_BUILD"), env("NF_RUN_SHM"), ns.libgcc,
                             lambda vm_argv, err: boot_vm(vm_argv, err))


def cmd_rtl(name: str, argv: List[str]) -> int:
    """Suite `rtl` and `bench rtl` (rtl.py); guests through boot_vm."""
    from . import rtl

    def boot() -> "rtl.Boot":
        guests()
        return lambda vm_argv, err: boot_vm(vm_argv, err).status
    return rtl.main(name, argv, lambda: rtl.Paths(env("NF_ROOT"), env("NF_BUILD"),
                                                  env("NF_QEMU_BIN")), boot)


def cmd_needs(argv: List[str]) -> int:
    """needs COMMAND ARGS: what scripts/nfabric builds before it runs
    COMMAND ARGS (vm, args, cluster, pools, bench-cluster, demo run), a word a
    line: qemu (QEMU with the device is missing), image (the guest image is
    missing; for bench-cluster always: its guest programs as the sources
    are), rtl (the RTL library, for --rtl or the demo's RTL run; its path
    then in NF_RTL_LIB), perf (the initramfs with perf, for --perf, made
    again if out of date; its path then in NF_GUEST_INITRD_PERF).  Nothing
    for --help or a bad option: COMMAND itself says those."""
    from . import benchcluster, cluster, demo, pools
    name, rest = (argv[0], argv[1:]) if argv else ("", [])
    if name not in ("vm", "args", "cluster", "pools", "bench-cluster") and \
            [name, *rest[:1]] != ["demo", "run"]:
        raise UsageError(f'no command "{" ".join(argv[:2])}" that boots guests')
    guests, rtl, perf = name != "args", False, False
    try:
        if name in ("vm", "args"):
            opts = VmOptions(rest)
            ready, rtl, perf = not opts.help, opts.topo.rtl != "off", opts.perf
        elif name == "cluster":
            ready = not cluster.Options(rest, UsageError).help
        elif name == "pools":
            ready = not pools.Options(rest).help
        elif name == "bench-cluster":
            ready = benchcluster.parse(rest) is not None
        else:
            device = demo.parse(rest[1:])
            ready, rtl = device is not None, device == "cxl-neuron-fabric"
            # The device's CXL PMU counted by perf (the 6.12 line's).
            perf = rtl and demo.with_perf()
    except (UsageError, benchcluster.Usage):
        return 0
    if not ready:
        return 0
    kernel, initrd = env("NF_GUEST_KERNEL"), env("NF_GUEST_INITRD")
    words = []
    if guests and not os.access(env("NF_QEMU_BIN"), os.X_OK):
        words.append("qemu")
    if guests and (name == "bench-cluster"
                   or not (os.path.isfile(kernel) and os.path.isfile(initrd))):
        words.append("image")
    if rtl:
        words.append("rtl")
    if perf:
        words.append("perf")
    sys.stdout.write("".join(w + "\n" for w in words))
    return 0


class Command(NamedTuple):
    """One command: RUN(NAME, ARGS) -> exit status.  POSITIONAL: its
    arguments (name: argparse keywords), parsed here, ARGS their Namespace;
    None: the command's module parses ARGS, the list as given, with its
    own argparse parser and --help.  USER: scripts/nfabric's command
    `NAME` (errors said as "nfabric NAME"); USAGE: printed after a bad
    option."""
    run: Callable[[str, object], int]
    positional: Optional[Dict[str, dict]] = None
    user: bool = False
    usage: Optional[str] = None


def _testfront(name: str, rest: List[str]) -> int:
    from . import testfront
    try:
        return testfront.main(name, rest, env("NF_ROOT"))
    except ValueError as exc:
        raise UsageError(str(exc)) from exc


def _demo(name: str, rest: List[str]) -> int:
    if rest[:1] not in (["check"], ["run"]):
        raise UsageError("usage: demo check|run [OPTIONS]")
    return cmd_demo(rest, False)


def _isolation(name: str, ns: argparse.Namespace) -> int:
    from . import isolation
    return isolation.suite_main([ns.dir, str(ns.status)])


def _clean(name: str, rest: List[str]) -> int:
    from . import isolation
    return isolation.clean(rest, dict(os.environ))


def _hostcheck(name: str, ns: argparse.Namespace) -> int:
    from . import hostcheck
    return hostcheck.main(name, [ns.file])


def _fuzz(name: str, rest: List[str]) -> int:
    from . import fuzz
    return fuzz.main(name, rest)


def _driver(name: str, rest: List[str]) -> int:
    from . import driver_suite
    return driver_suite.main(name, rest, boot_vm, cmd_cluster, guests, UsageError)


def _pools(name: str, rest: List[str]) -> int:
    from . import pools
    return pools.main(rest)


def _ddp(name: str, rest: List[str]) -> int:
    from . import ddp
    return ddp.main(name, rest)


def _commands() -> Dict[str, Command]:
    """The table: every command of python3 -m nfmachine (its docstring)."""
    from .cluster import USAGE as CLUSTER_USAGE
    from .ddp import COMMANDS as DDP_COMMANDS
    none: Dict[str, dict] = {}
    socket = {"socket": {}}
    table = {
        "needs": Command(lambda n, a: cmd_needs(a)),
        "vm": Command(lambda n, a: cmd_vm(a), user=True, usage=USAGE),
        "args": Command(lambda n, a: cmd_args(a), usage=USAGE),
        "libvirt-xml": Command(lambda n, a: cmd_libvirt_xml(a), user=True, usage=LIBVIRT_USAGE),
        "cluster": Command(lambda n, a: cmd_cluster(a), user=True, usage=CLUSTER_USAGE),
        "pools": Command(_pools, user=True),
        "clean": Command(_clean, user=True),
        "multihost-suite": Command(lambda n, a: cmd_multihost_suite(a),
                                   {"cases": dict(nargs="*")}),
        "bench-cluster": Command(lambda n, a: cmd_bench_cluster(a)),
        "qmp": Command(cmd_monitor, {**socket, "name": {}, "args": dict(nargs="?")}),
        "hmp": Command(cmd_monitor, {**socket, "line": {}}),
        "qmp-ms": Command(cmd_monitor, {**socket, "n": dict(type=int),
                                        "gap": dict(nargs="?", type=float, default=0.0)}),
        "cm-regs": Command(cmd_monitor, {**socket, "region": {}}),
        "bench-guest": Command(lambda n, a: cmd_bench_guest(a)),
        "train": Command(lambda n, a: cmd_train(a)),
        "demo": Command(_demo),
        "guest-suite": Command(lambda n, a: cmd_demo([], True), none),
        "lifecycle-suite": Command(lambda n, a: cmd_lifecycle(a), none),
        "libvirt-suite": Command(lambda n, a: cmd_libvirt_suite(a), none),
        "qtest-suite": Command(lambda n, a: cmd_qtest_suite(a), {"libgcc": {}}),
        "isolation-suite": Command(_isolation, {"dir": {}, "status": dict(type=int)}),
    }
    for name in ("meson-table", "test-args", "test-total"):
        table[name] = Command(_testfront)
    for name in ("lint-suite", "unit-suite", "concurrency-suite"):
        table[name] = Command(lambda n, a: cmd_host_suites(n), none)
    for name in ("fuzz-suite", "fuzz-bench"):
        table[name] = Command(_fuzz)
    for name in ("driver-suite", "fallback-suite", "pybind-suite", "driver72-suite"):
        table[name] = Command(_driver)
    for name in ("rtl-suite", "rtl-mutants", "bench-rtl"):
        table[name] = Command(cmd_rtl)
    for name in ("host-snapshot", "host-check"):
        table[name] = Command(_hostcheck, {"file": {}})
    for name in DDP_COMMANDS:
        table.setdefault(name, Command(_ddp))
    return table


def parse_positional(name: str, spec: Dict[str, dict], rest: List[str]):
    """REST by SPEC (argparse); None if -h/--help was asked (the usage said)."""
    parser = Parser(f"nfmachine {name}")
    for arg, kw in spec.items():
        parser.add_argument(arg, **kw)
    ns = parser.parse(rest)
    if ns is None:
        sys.stdout.write(parser.format_usage())
    return ns


def main(argv: List[str]) -> int:
    if not argv or argv[0] in ("-h", "--help"):
        sys.stdout.write(__doc__)
        return 0 if argv else 2
    name, rest = argv[0], argv[1:]
    table = _commands()
    cmd = table.get(name)
    prog = f"nfabric {name}" if cmd and cmd.user else f"nfmachine {name}"
    try:
        if cmd is None:
            raise UsageError(f'unknown command "{name}"', True)
        if cmd.positional is None:
            return cmd.run(name, rest)
        ns = parse_positional(name, cmd.positional, rest)
        return 0 if ns is None else cmd.run(name, ns)
    except UsageError as exc:
        print(f"{prog}: {exc.args[0]}", file=sys.stderr)
        if getattr(exc, "usage", False) and cmd and cmd.usage:
            sys.stderr.write(cmd.usage)
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
