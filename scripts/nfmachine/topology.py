# SPDX-License-Identifier: GPL-2.0-or-later
"""The machine every NEURON-Fabric guest boots on, from one description.

q35 with CXL on, one pxb-cxl host bridge (cxl.1), a cxl-rp root port per
device, the device (cxl-neuron-fabric or stock cxl-type3) on it with its
volatile memory, and one fixed memory window over all of them
(docs/guest.md "The machine").  `Topology.qemu_args()` is the command line
`scripts/nfabric vm` launches (through QEMU's own qemu.machine, vm.py);
`Topology.cxl_args()` is the CXL part alone, which the libvirt domain XML
passes through <qemu:commandline>.  The parts (host bridge, root port,
backend, device, window) and `alone()`, QEMU without a guest, make the
machines of the suites qtest and multihost and, checked against them by
tests/machine/test_topology.py, the C qtests' (tests/qtest/nfabric-qtest.h):
this is the one place in Python that spells the machine.  Nothing here
starts a process.
"""

import base64
import dataclasses
import re
from typing import List, Optional, Sequence

DEVICES = ("cxl-neuron-fabric", "cxl-type3")
RTL_MODES = ("off", "serve", "compare")
# The guest's init reads nfabric.run from the kernel command line (base64):
# the command line has room for about this much of it.
RUN_B64_MAX = 1800


class TopologyError(ValueError):
    """A description that cannot be a machine; the message says why."""


def size_mib(text: str) -> Optional[int]:
    """SIZE with a K/M/G/T suffix (plain: MiB) in MiB; None if malformed."""
    m = re.fullmatch(r"([0-9]+)([KkMmGgTt]?)[Bb]?", text)
    if not m:
        return None
    n, unit = int(m.group(1)), m.group(2).upper()
    if unit == "K":
        return n // 1024 if n % 1024 == 0 else None
    return n * {"": 1, "M": 1, "G": 1024, "T": 1024 * 1024}[unit]


def qemu_value(text: str) -> str:
    """TEXT as a value inside a QEMU option: a comma is written twice."""
    return text.replace(",", ",,")


# ---- the parts, which every machine of the project is made of -------------
# (guests here; QEMU alone in the suites qtest and multihost; the C qtests'
# NF_QTEST_MACHINE, tests/qtest/nfabric-qtest.h, checked against them by
# tests/machine/test_topology.py).

BRIDGE = "pxb-cxl,bus_nr=12,bus=pcie.0,id=cxl.1"


def root_port(port: int, rp_id: Optional[str] = None) -> str:
    """Root port PORT of the host bridge (id rpPORT unless RP_ID), slot 2 + PORT."""
    return f"cxl-rp,port={port},bus=cxl.1,id={rp_id or f'rp{port}'},chassis=0,slot={2 + port}"


def backend(mem_id: str, mib: int, path: Optional[str] = None,
            share: Optional[bool] = True) -> str:
    """The -object of device memory MEM_ID: MIB MiB of RAM, or of the file
    PATH; share=on/off as SHARE says (None: not said, QEMU's default)."""
    kind = f"file,id={mem_id}" if path is not None else f"ram,id={mem_id}"
    shared = "" if share is None else f",share={'on' if share else 'off'}"
    where = "" if path is None else f",mem-path={qemu_value(path)}"
    return f"memory-backend-{kind}{shared}{where},size={mib}M"


def device(bus: str, memdev: str, dev_id: Optional[str] = None, props: str = "",
           name: str = "cxl-neuron-fabric") -> str:
    """The -device of NAME on root port BUS over MEMDEV, then PROPS."""
    return (f"{name},bus={bus},volatile-memdev={memdev}" + (f",id={dev_id}" if dev_id else "")
            + (f",{props}" if props else ""))


def window(size: str) -> List[str]:
    """The fixed memory window (cxl-fmw.0) of SIZE on the host bridge."""
    return ["-M", f"cxl-fmw.0.targets.0=cxl.1,cxl-fmw.0.size={size}"]


def beside(port: int, rp_id: str, mem_id: str, dev_id: str, mib: int = 256) -> List[str]:
    """One more cxl-neuron-fabric, not shared (RAM), on root port PORT."""
    return ["-object", backend(mem_id, mib), "-device", root_port(port, rp_id),
            "-device", device(rp_id, mem_id, dev_id)]


def alone(ports: int = 1, ram: Optional[str] = None, objects: Sequence[str] = (),
          devices: Sequence[str] = ()) -> List[str]:
    """QEMU alone, paused, no guest (the suites' refusals and heads): q35
    with CXL, RAM of RAM (QEMU's default if None), the OBJECTS, the host
    bridge, PORTS root ports rp0.., the DEVICES on them, a 4 GiB window."""
    args = ["-M", "q35,cxl=on", "-nodefaults", "-display", "none", "-S"]
    if ram:
        args += ["-m", ram]
    for o in objects:
        args += ["-object", o]
    args += ["-device", BRIDGE]
    args += [a for i in range(ports) for a in ("-device", root_port(i))]
    args += [a for d in devices for a in ("-device", d)]
    return args + window("4G")


@dataclasses.dataclass
class Topology:
    """One guest: its CPUs, RAM, CXL devices, how it is joined to others."""

    device: str = "cxl-neuron-fabric"
    cpus: int = 2
    mem_mib: int = 2048
    cxl_mib: int = 256
    devices: int = 1
    props: str = ""                   # extra device properties, "k=v,k=v"
    rtl: str = "off"
    rtl_lib: Optional[str] = None     # libnfrtl.so, for rtl serve|compare
    mem_path: Optional[str] = None    # device memory in a shared file
    hostfs: bool = False              # the host's / read-only over virtio-9p
    net_listen: Optional[str] = None  # point-to-point link, unix socket
    net_connect: Optional[str] = None
    ip: Optional[str] = None          # eth0's link-local address
    reboot: bool = False              # a reset restarts (else QEMU exits)
    run: Optional[str] = None         # the guest's command (nfabric.run)
    append: str = ""                  # extra kernel arguments
    spare_ports: int = 0              # root ports with no device, after the window
    incoming: Optional[str] = None    # a migration's destination: paused, listening there
    extra: List[str] = dataclasses.field(default_factory=list)

    def check(self) -> None:
        """Raise TopologyError (saying which option) if this is no machine."""
        if not 1 <= self.cpus <= 64:
            raise TopologyError(f'--cpus must be 1..64, not "{self.cpus}"')
        if self.mem_mib < 256:
            raise TopologyError("--mem must be at least 256M")
        if self.cxl_mib < 256 or self.cxl_mib % 256:
            raise TopologyError("--cxl-mem must be a multiple of 256M: CXL regions are")
        if self.ip is not None:
            if not re.fullmatch(r"169\.254\.[0-9]{1,3}\.[0-9]{1,3}/16", self.ip):
                raise TopologyError("--ip must be a link-local address "
                                    f'169.254.X.Y/16, not "{self.ip}"')
            if not (self.net_listen or self.net_connect):
                raise TopologyError("--ip needs --net-listen or --net-connect")
        if self.net_listen and self.net_connect:
            raise TopologyError("--net-listen and --net-connect exclude each other")
        if not 1 <= self.devices <= 8:
            raise TopologyError(f'--devices must be 1..8, not "{self.devices}"')
        if self.devices != 1 and self.mem_path:
            raise TopologyError("--mem-path takes one device (a head of a shared one)")
        if self.device not in DEVICES:
            raise TopologyError("--device must be cxl-neuron-fabric or cxl-type3")
        if self.rtl not in RTL_MODES:
            raise TopologyError(f'--rtl must be off, serve or compare, not "{self.rtl}"')
        if self.rtl != "off" and self.device != "cxl-neuron-fabric":
            raise TopologyError("--rtl needs --device cxl-neuron-fabric")
        if self.run is not None and len(self._run_b64()) > RUN_B64_MAX:
            raise TopologyError("--run command too long for the kernel command line")

    def _run_b64(self) -> str:
        return base64.b64encode((self.run or "").encode()).decode()

    @property
    def fmw_mib(self) -> int:
        """The fixed memory window: every device's memory, at least 4 GiB."""
        return max(self.cxl_mib * self.devices, 4096)

    def device_props(self) -> str:
        props = []
        if self.rtl != "off":
            if not self.rtl_lib:
                raise TopologyError(f"--rtl {self.rtl} needs the RTL library's path")
            props.append(f"rtl={self.rtl},rtl-lib={qemu_value(self.rtl_lib)}")
        if self.props:
            props.append(self.props)
        return ",".join(props)

    def cxl_args(self) -> List[str]:
        """The host bridge, a root port and device per device, the window."""
        args = ["-device", BRIDGE]
        props = self.device_props()
        for i in range(self.devices):
            # The first device keeps the names it always had (cxl-vmem0, rp0).
            args += ["-object", backend(f"vmem{i}", self.cxl_mib, self.mem_path),
                     "-device", root_port(i),
                     "-device", device(f"rp{i}", f"vmem{i}", f"cxl-vmem{i}", props, self.device)]
        args += window(f"{self.fmw_mib}M")
        for i in range(self.devices, self.devices + self.spare_ports):
            args += ["-device", root_port(i)]
        return args

    def kernel_cmdline(self) -> str:
        # no_timer_check: under TCG on a loaded host the timer interrupt
        # may miss the kernel's early check of it, which then panics ("IO-APIC
        # + timer doesn't work!"); QEMU's timer works.
        words = ["console=ttyS0", "quiet", "loglevel=3", "panic=-1", "no_timer_check"]
        if self.run is not None:
            words.append("nfabric.run=" + self._run_b64())
        if self.hostfs:
            words.append("nfabric.hostfs=1")
        if self.ip:
            words.append("nfabric.ip=" + self.ip)
        if self.append:
            words.append(self.append)
        return " ".join(words)

    def net_args(self) -> List[str]:
        # Point to point over a unix socket on this host: nothing leaves it.
        if self.net_listen:
            netdev = ("stream,id=n0,server=on,addr.type=unix,"
                      f"addr.path={qemu_value(self.net_listen)}")
        elif self.net_connect:
            netdev = ("stream,id=n0,server=off,reconnect-ms=200,addr.type=unix,"
                      f"addr.path={qemu_value(self.net_connect)}")
        else:
            return []
        return ["-netdev", netdev, "-device", "virtio-net-pci,netdev=n0,romfile="]

    def qemu_args(self, firmware: List[str], kernel: str, initrd: str) -> List[str]:
        """The whole command line but the binary, the console and QMP (the
        launcher adds those: vm.py)."""
        self.check()
        args = list(firmware) + [
            "-nodefaults", "-M", "q35,cxl=on", "-cpu", "max,-hypervisor",
            "-m", f"{self.mem_mib}M,maxmem={self.mem_mib + 2048}M,slots=4",
            "-smp", str(self.cpus), "-nic", "none",
            "-kernel", kernel, "-initrd", initrd, "-append", self.kernel_cmdline()]
        if not self.reboot:
            args.append("-no-reboot")
        if self.hostfs:
            args += ["-fsdev", "local,id=hostfs,path=/,security_model=none,readonly=on",
                     "-device", "virtio-9p-pci,fsdev=hostfs,mount_tag=hostfs"]
        args += self.net_args()
        args += self.cxl_args()
        if self.incoming:
            args += ["-S", "-incoming", self.incoming]
        args += self.extra
        return args
