# SPDX-License-Identifier: GPL-2.0-or-later
"""A libvirt domain for the same machine as `scripts/nfabric vm`.

libvirt 11.3 (bookworm-backports) has no CXL XML: the domain boots the
guest kernel directly with the kernel command line of the Topology, the
CXL part of the Topology (host bridge, root ports, devices, memory
window) goes in <qemu:commandline>, and the serial console is a file.
"""

import xml.etree.ElementTree as ET
from typing import List

from .topology import Topology

QEMU_NS = "http://libvirt.org/schemas/domain/qemu/1.0"


def domain_xml(topo: Topology, name: str, serial: str, emulator: str,
               kernel: str, initrd: str, firmware: List[str]) -> str:
    topo.check()
    ET.register_namespace("qemu", QEMU_NS)
    dom = ET.Element("domain", type="qemu")

    def sub(parent, tag, text=None, **attrs):
        e = ET.SubElement(parent, tag, attrs)
        if text is not None:
            e.text = text
        return e

    sub(dom, "name", name)
    sub(dom, "description", "NEURON-Fabric guest (scripts/nfabric libvirt-xml)")
    sub(dom, "memory", str(topo.mem_mib), unit="MiB")
    sub(dom, "vcpu", str(topo.cpus))
    os_ = sub(dom, "os")
    sub(os_, "type", "hvm", arch="x86_64", machine="q35")
    sub(os_, "kernel", kernel)
    sub(os_, "initrd", initrd)
    sub(os_, "cmdline", topo.kernel_cmdline())
    feats = sub(dom, "features")
    sub(feats, "acpi")
    sub(feats, "apic")
    cpu = sub(dom, "cpu", mode="maximum")
    sub(cpu, "feature", policy="disable", name="hypervisor")
    sub(dom, "clock", offset="utc")
    for ev in ("on_poweroff", "on_reboot", "on_crash"):
        sub(dom, ev, "destroy")
    devs = sub(dom, "devices")
    sub(devs, "emulator", emulator)
    ser = sub(devs, "serial", type="file")
    sub(ser, "source", path=serial)
    sub(ser, "target", port="0")
    sub(devs, "controller", type="usb", model="none")
    sub(devs, "memballoon", model="none")
    cmd = ET.SubElement(dom, f"{{{QEMU_NS}}}commandline")
    args = list(firmware) + ["-machine", "cxl=on"] + [
        "-machine" if a == "-M" else a for a in topo.cxl_args()]
    for a in args:
        ET.SubElement(cmd, f"{{{QEMU_NS}}}arg", value=a)
    ET.indent(dom, "  ")
    return ET.tostring(dom, encoding="unicode") + "\n"
