# SPDX-License-Identifier: GPL-2.0-or-later
"""Suite `qtest`: the device's qtests and QEMU's own cxl-test (built in
QEMU's tree by scripts/lib/qtest.sh), then the device's command-line
validation: what QEMU lists, each property it must refuse (with the words
it must say) or accept, a record it cannot write, `vm` relaying QEMU's
refusal, and a killed head of a shared device traced as rejoined.

These machines are QEMU alone and deliberately broken (a RAM backend
under shared-state, sizes that are no multiple of 256 MiB...), which a
Topology refuses by design: they are made of its parts (topology.alone()).
"""

import os
import signal
import subprocess
import time
from typing import Callable, List

from . import topology
from .hosts import read
from .tap import Tap

BASE = topology.device("rp0", "vmem0")

# A machine with two root ports and backends of several sizes.
CMDLINE = topology.alone(ports=2, objects=[
    topology.backend("vmem0", 256, share=None), topology.backend("vmem1", 256, share=None),
    topology.backend("vmem257", 257, share=None), topology.backend("vmem100", 100, share=None),
    topology.backend("vmem128", 128, share=None)])


class Suite:
    def __init__(self, qemu: str, build: str, shm: str):
        self.qemu = qemu
        self.build = build          # NF_BUILD
        self.shm = shm              # the run's /dev/shm directory
        self.tap = Tap()            # the checks, numbered in the order they run

    def qemu_quit(self, *devices: str) -> tuple:
        """QEMU with the devices, `quit` on its monitor: (status, output)."""
        argv = [self.qemu, *CMDLINE, "-monitor", "stdio"]
        for d in devices:
            argv += ["-device", d]
        try:
            p = subprocess.run(argv, input="quit\n", capture_output=True, text=True,
                               timeout=20, check=False)
            return p.returncode, p.stdout + p.stderr
        except subprocess.TimeoutExpired as e:
            out = e.stdout or ""
            return 124, out.decode(errors="replace") if isinstance(out, bytes) else out

    def refused(self, name: str, want: str, *devices: str) -> None:
        """QEMU must refuse to start and say what is wrong."""
        rc, out = self.qemu_quit(*devices)
        good = rc != 0 and want in out
        self.tap.ok(good, f"refused: {name}" + ("" if good else f" (rc={rc})"),
                    out.splitlines()[:5])

    def accepted(self, name: str, device: str) -> None:
        rc, out = self.qemu_quit(device)
        self.tap.ok(rc == 0, f"accepted: {name}" + ("" if rc == 0 else f" (rc={rc})"),
                    out.splitlines()[:5])

    def listing(self) -> None:
        def out(*args: str) -> str:
            return subprocess.run([self.qemu, *args], capture_output=True, text=True,
                                  timeout=30, check=False).stdout
        self.tap.ok('"cxl-neuron-fabric"' in out("-device", "help"),
                    "-device help lists cxl-neuron-fabric")
        self.tap.ok("datapath-depth=<uint32>" in out("-device", "cxl-neuron-fabric,help"),
                    "-device cxl-neuron-fabric,help lists its properties")

    def record_full(self) -> None:
        """A record that cannot be written: reported when QEMU quits."""
        _, out = self.qemu_quit(f"{BASE},record=/dev/full")
        good = "property 'record': '/dev/full' is incomplete: writing it failed" in out
        self.tap.ok(good, "record=/dev/full: the lost record is reported when QEMU quits"
                    if good else "record=/dev/full: no report of the lost record",
                    out.splitlines()[:5])

    def vm_refused(self, boot_vm: Callable) -> None:
        """scripts/nfabric vm reports QEMU's refusal, with QEMU's status."""
        logs = os.path.join(self.build, "test-logs")
        err = os.path.join(logs, "vm-refused.err")
        status = boot_vm(["--quiet", "--log", os.path.join(logs, "vm-refused.log"),
                          "--device-props", "clock-mhz=0", "--run", "true"], err).status
        with open(err, encoding="utf-8", errors="replace") as f:
            out = f.read()
        good = status == 1 and ("vm: QEMU exited with status 1 before the guest started: "
                                in out and "property 'clock-mhz' must be in" in out)
        self.tap.ok(good, "vm: a property QEMU refuses is reported with QEMU's message and status"
                    if good else f"vm: refused property: status {status}",
                    out.splitlines()[-3:])

    def rejoin(self) -> None:
        """Two heads of one shared device (QEMU processes); head 1 is
        killed (SIGKILL) and started again: the trace event
        nfabric_head_attach says created, joined, then rejoined."""
        d = os.path.join(self.build, "test-logs", "qtest-rejoin")
        subprocess.run(["rm", "-rf", "--", d], check=True)
        os.makedirs(d)
        shm = os.path.join(self.shm, "qtest-rejoin")
        common = [*topology.alone(ram="128M", objects=[topology.backend("vmem0", 256, shm + ".mem")]),
                  "-monitor", "none", "-trace", "nfabric_head_attach"]
        dev = f"{BASE},shared-state={shm}.state,heads=2"
        procs: List[subprocess.Popen] = []
        good = True

        def start(head: int, log: str) -> subprocess.Popen:
            p = subprocess.Popen([self.qemu, *common, "-device", f"{dev},head={head}",
                                  "-D", os.path.join(d, log)], stdin=subprocess.DEVNULL)
            procs.append(p)
            return p

        try:
            start(0, "head0.log")
            good &= wait_log(os.path.join(d, "head0.log"), "nfabric_head_attach")
            b = start(1, "head1-first.log")
            good &= wait_log(os.path.join(d, "head1-first.log"), "nfabric_head_attach")
            b.kill()
            b.wait(timeout=30)
            start(1, "head1-again.log")
            good &= wait_log(os.path.join(d, "head1-again.log"), "nfabric_head_attach")
        finally:
            for p in reversed(procs):
                if p.poll() is None:
                    p.send_signal(signal.SIGTERM)
            for p in procs:
                try:
                    p.wait(timeout=10)
                except subprocess.TimeoutExpired:
                    p.kill()
                    p.wait()
        logs = {name: read(os.path.join(d, name + ".log"))
                for name in ("head0", "head1-first", "head1-again")}
        good &= ": created" in logs["head0"]
        good &= any(l.endswith(": joined") for l in logs["head1-first"].splitlines())
        good &= ": rejoined (this head was attached before)" in logs["head1-again"]
        self.tap.ok(good, "a killed head that starts again is traced as rejoined (first: joined)"
                    if good else f"trace of a killed head's restart (logs in {d})",
                    [l for text in logs.values() for l in text.splitlines()
                     if "nfabric_head_attach" in l])
        for ext in (".mem", ".state"):
            if os.path.exists(shm + ext):
                os.unlink(shm + ext)


def wait_log(path: str, pattern: str, ticks: int = 300) -> bool:
    """PATTERN in the file within ticks x 0.1 s (30 s)."""
    for _ in range(ticks):
        if pattern in read(path):
            return True
        time.sleep(0.1)
    print(f"# {path}: no '{pattern}' after {ticks} tries")
    return False


def qtests(qemu_build: str, tests: List[str]) -> bool:
    """Each qtest prints its own TAP stream ("ok N /x86_64/...")."""
    good = bool(tests)
    for t in tests:
        print(f"# {t}", flush=True)
        try:
            rc = subprocess.run([f"./{t}", "--tap", "-k"], cwd=qemu_build, timeout=600,
                                env={**os.environ, "QTEST_QEMU_BINARY": "./qemu-system-x86_64"},
                                check=False).returncode
        except subprocess.TimeoutExpired:
            print(f"# {t}: timed out after 600 s")
            rc = 124
        good &= rc == 0
    return good


def suite(qemu: str, qemu_build: str, tests: List[str], build: str, shm: str, libgcc: str,
          boot_vm: Callable) -> int:
    """The suite; tests: the qtests (paths in QEMU's build, built there by
    scripts/lib/qtest.sh); boot_vm(vm options, err file) -> vm.Outcome."""
    s = Suite(qemu, build, shm)
    good = qtests(qemu_build, tests)
    print("# device listing and options", flush=True)
    s.listing()
    s.refused("clock-mhz=0", "property 'clock-mhz' must be in 1..100000, not 0", f"{BASE},clock-mhz=0")
    s.refused("link-mbps=0", "property 'link-mbps' must be in", f"{BASE},link-mbps=0")
    s.refused("datapath-depth=5000", "property 'datapath-depth' must be in 0..1024, not 5000",
              f"{BASE},datapath-depth=5000")
    s.refused("service-ns=2000000", "property 'service-ns' must be in", f"{BASE},service-ns=2000000")
    s.refused("no volatile-memdev", "property 'volatile-memdev' is required", "cxl-neuron-fabric,bus=rp0")
    s.refused("persistent memory", "only 'volatile-memdev' memory is supported",
              f"{BASE},persistent-memdev=vmem0")
    s.refused("clock-mhz=abc", "clock-mhz", f"{BASE},clock-mhz=abc")
    s.refused("257 MiB of memory",
              "property 'volatile-memdev': 269484032 bytes is not a multiple of 256 MiB",
              topology.device("rp0", "vmem257"))
    s.refused("100 MiB of memory", "is not a multiple of 256 MiB",
              topology.device("rp0", "vmem100"))
    rec = os.path.join(build, "test-logs", "record-shared.bin")
    s.refused("two devices, one record file", f"property 'record': '{rec}' is in use by another device",
              f"{BASE},id=nfa,record={rec}",
              topology.device("rp1", "vmem1", "nfb", f"record={rec}"))
    s.record_full()
    s.vm_refused(boot_vm)
    # The direct map's options (docs/device.md).  A shared head maps its
    # own ranges directly (docs/multihost.md): the direct map is no reason
    # to refuse shared-state, its memory is.
    logs = os.path.join(build, "test-logs")
    s.refused("direct-map=on, shared-state over memory no file backs",
              "property 'shared-state' needs 'volatile-memdev' to be a memory-backend-file",
              f"{BASE},direct-map=on,shared-state={logs}/unused.state")
    s.refused("direct-map=on with record", "property 'direct-map=on' conflicts with 'record'",
              f"{BASE},direct-map=on,record={logs}/unused.rec")
    s.refused("direct-map-fp32=on without the direct map",
              "property 'direct-map-fp32=on' needs the direct map",
              f"{BASE},direct-map=off,direct-map-fp32=on")
    s.refused("direct-map=maybe", "direct-map", f"{BASE},direct-map=maybe")
    # What the property tables say (README, docs/multihost.md).
    s.refused("128 MiB of memory",
              "property 'volatile-memdev': 134217728 bytes is not a multiple of 256 MiB",
              topology.device("rp0", "vmem128"))
    s.accepted("head=0,heads=1 without shared-state (the defaults)", f"{BASE},head=0,heads=1")
    s.refused("heads=2 without shared-state",
              "properties 'head' and 'heads' need 'shared-state'", f"{BASE},heads=2")
    s.refused("head=1 without shared-state",
              "properties 'head' and 'heads' need 'shared-state'", f"{BASE},head=1")
    s.rejoin()
    # The RTL datapath's properties (docs/rtl.md); serving through it is
    # suite rtl's.
    s.refused("rtl=fast", "property 'rtl' must be off, serve or compare, not 'fast'", f"{BASE},rtl=fast")
    s.refused("rtl=serve without rtl-lib", "property 'rtl=serve' needs 'rtl-lib'", f"{BASE},rtl=serve")
    s.refused("rtl-lib without rtl", "property 'rtl-lib' needs 'rtl=serve' or 'rtl=compare'",
              f"{BASE},rtl-lib=/nonexistent/libnfrtl.so")
    s.refused("rtl-lib a missing file", "property 'rtl-lib': cannot load '/nonexistent/libnfrtl.so'",
              f"{BASE},rtl=compare,rtl-lib=/nonexistent/libnfrtl.so")
    s.refused("rtl-lib not a libnfrtl.so", "has no symbol 'nfrtl_abi_version'",
              f"{BASE},rtl=serve,rtl-lib={libgcc}")
    return 1 if s.tap.failed or not good else 0
