# SPDX-License-Identifier: GPL-2.0-or-later
"""TAP: the machine descriptions of scripts/nfmachine, without booting.

Run by the unit suite:  PYTHONPATH=scripts:QEMU_SRC/python python3 THIS
Checks the QEMU command line and the libvirt XML each description makes,
every refusal of a bad option, and that QEMU's own python/qemu still has
what vm.py builds on.
"""

import base64
import os
import re
import sys
import xml.etree.ElementTree as ET

from nfmachine.tap import done, ok
from nfmachine import __main__ as cli
from nfmachine.libvirt import QEMU_NS, domain_xml
from nfmachine import topology
from nfmachine.topology import Topology, TopologyError, size_mib

FW = ["-L", "/usr/share/seabios"]


def args_of(**kw):
    return Topology(**kw).qemu_args(FW, "/k", "/i")


def after(args, flag):
    return [args[i + 1] for i, a in enumerate(args) if a == flag]


def refused(name, want, **kw):
    try:
        Topology(**kw).check()
    except TopologyError as exc:
        ok(want in str(exc), f"refused: {name}", f"message: {exc}")
        return
    ok(False, f"refused: {name}", "accepted")


def cli_refused(name, argv, want):
    try:
        cli.VmOptions(argv)
    except cli.UsageError as exc:
        ok(want in exc.args[0], f"vm refuses {name}", f"message: {exc.args[0]}")
        return
    ok(False, f"vm refuses {name}", "accepted")


def main():
    a = args_of()
    devs = after(a, "-device")
    ok(a[:2] == FW and "q35,cxl=on" in after(a, "-M"), "firmware first, q35 with cxl=on", a)
    ok(devs == ["pxb-cxl,bus_nr=12,bus=pcie.0,id=cxl.1",
                "cxl-rp,port=0,bus=cxl.1,id=rp0,chassis=0,slot=2",
                "cxl-neuron-fabric,bus=rp0,volatile-memdev=vmem0,id=cxl-vmem0"],
       "one host bridge, root port and device (id cxl-vmem0)", devs)
    ok(after(a, "-object") == ["memory-backend-ram,id=vmem0,share=on,size=256M"],
       "256 MiB of RAM-backed device memory", after(a, "-object"))
    ok("cxl-fmw.0.targets.0=cxl.1,cxl-fmw.0.size=4096M" in after(a, "-M"),
       "one 4 GiB fixed memory window on the host bridge")
    ok("-no-reboot" in a and "-no-reboot" not in args_of(reboot=True),
       "-no-reboot unless --reboot")
    ok(after(a, "-m") == ["2048M,maxmem=4096M,slots=4"] and after(a, "-smp") == ["2"],
       "2 vCPUs, 2 GiB of RAM (room for 2 GiB hot-added)")

    a = args_of(devices=3, cxl_mib=2048)
    devs = [d for d in after(a, "-device") if d.startswith("cxl-")]
    ok(len(devs) == 6 and "cxl-rp,port=2,bus=cxl.1,id=rp2,chassis=0,slot=4" in devs
       and "cxl-neuron-fabric,bus=rp2,volatile-memdev=vmem2,id=cxl-vmem2" in devs,
       "3 devices: a root port each, slots 2..4", devs)
    ok("cxl-fmw.0.targets.0=cxl.1,cxl-fmw.0.size=6144M" in after(a, "-M"),
       "the window covers every device's memory (3 x 2 GiB)")

    a = args_of(mem_path="/dev/shm/a,b", props="shared-state=/s,head=1,heads=2")
    ok(after(a, "-object") == ["memory-backend-file,id=vmem0,share=on,"
                               "mem-path=/dev/shm/a,,b,size=256M"],
       "--mem-path: a shared file backend, a comma in the path written twice",
       after(a, "-object"))
    ok(after(a, "-device")[-1].endswith(",id=cxl-vmem0,shared-state=/s,head=1,heads=2"),
       "device properties after the id")
    a = args_of(rtl="compare", rtl_lib="/x/libnfrtl.so", props="clock-mhz=100")
    ok(after(a, "-device")[-1].endswith("id=cxl-vmem0,rtl=compare,rtl-lib=/x/libnfrtl.so,"
                                        "clock-mhz=100"),
       "--rtl: rtl and rtl-lib before the other properties", after(a, "-device")[-1])
    try:
        args_of(rtl="serve")
        ok(False, "--rtl without the library's path refused")
    except TopologyError:
        ok(True, "--rtl without the library's path refused")

    run = "nfabric-test; echo 'a,b' \"$x\""
    t = Topology(run=run, hostfs=True, ip="169.254.0.2/16", net_connect="/r/n.sock",
                 append="foo=1")
    words = t.kernel_cmdline().split()
    b64 = [w.split("=", 1)[1] for w in words if w.startswith("nfabric.run=")]
    ok(words[:5] == ["console=ttyS0", "quiet", "loglevel=3", "panic=-1", "no_timer_check"]
       and len(b64) == 1 and base64.b64decode(b64[0]).decode() == run
       and "nfabric.hostfs=1" in words and "nfabric.ip=169.254.0.2/16" in words
       and words[-1] == "foo=1", "kernel command line: the run command (base64), "
       "hostfs, ip, extra arguments last", words)
    a = t.qemu_args(FW, "/k", "/i")
    ok(after(a, "-netdev") == ["stream,id=n0,server=off,reconnect-ms=200,addr.type=unix,"
                               "addr.path=/r/n.sock"]
       and "virtio-net-pci,netdev=n0,romfile=" in after(a, "-device")
       and "virtio-9p-pci,fsdev=hostfs,mount_tag=hostfs" in after(a, "-device"),
       "net-connect: a stream netdev on a unix socket; hostfs: virtio-9p", a)
    a = args_of(net_listen="/r/n.sock", extra=["-S", "-pidfile", "/p"])
    ok(after(a, "-netdev")[0].startswith("stream,id=n0,server=on,")
       and a[-3:] == ["-S", "-pidfile", "/p"], "net-listen: server=on; extra arguments last")

    refused("--cpus 0", "--cpus", cpus=0)
    refused("--cpus 65", "--cpus", cpus=65)
    refused("--mem 255M", "--mem", mem_mib=255)
    refused("--cxl-mem 384M", "multiple of 256M", cxl_mib=384)
    refused("--ip outside 169.254/16", "link-local", ip="10.0.0.1/16", net_listen="/s")
    refused("--ip without a link", "--ip needs", ip="169.254.0.1/16")
    refused("--net-listen and --net-connect", "exclude", net_listen="/a", net_connect="/b")
    refused("--devices 9", "--devices", devices=9)
    refused("--mem-path with 2 devices", "--mem-path takes one device", devices=2,
            mem_path="/m")
    refused("--device virtio-blk", "--device must be", device="virtio-blk")
    refused("--rtl fast", "--rtl must be", rtl="fast")
    refused("--rtl serve on cxl-type3", "--rtl needs", rtl="serve", device="cxl-type3")
    refused("a run command too long", "too long", run="x" * 2000)

    ok([size_mib(s) for s in ("256", "256M", "2G", "2g", "1T", "262144K", "1000K", "x", "2GB")]
       == [256, 256, 2048, 2048, 1048576, 256, None, None, 2048], "sizes: K/M/G/T, plain MiB")

    cli_refused("an unknown option", ["--bogus"], 'unknown argument "--bogus"')
    cli_refused("an option without its value", ["--mem"], "--mem needs a value")
    cli_refused("--cpus 1x", ["--cpus", "1x"], '--cpus must be 1..64, not "1x"')
    cli_refused("--mem 100M", ["--mem", "100M"], 'bad --mem "100M"')
    cli_refused("--timeout 0", ["--run", "true", "--timeout", "0"], 'bad --timeout "0"')
    o = cli.VmOptions(["--run", "true"])
    ok(o.timeout == 900 and cli.VmOptions([]).timeout is None,
       "vm: --run defaults to a 900 s timeout, none without")
    saved = {k: os.environ.get(k) for k in ("NF_GUEST_INITRD", "NF_GUEST_INITRD_PERF")}
    try:
        os.environ.update(NF_GUEST_INITRD="/i", NF_GUEST_INITRD_PERF="/i-perf")
        picked = [cli.initrd_of(cli.VmOptions(a).perf) for a in ([], ["--perf"])]
        del os.environ["NF_GUEST_INITRD_PERF"]
        try:
            cli.initrd_of(True)
            unset = "accepted"
        except RuntimeError as exc:
            unset = str(exc)
    finally:
        for k, v in saved.items():
            os.environ.pop(k, None)
            if v is not None:
                os.environ[k] = v
    ok(picked == ["/i", "/i-perf"] and "NF_GUEST_INITRD_PERF is not set" in unset,
       "vm --perf boots the initramfs with perf (NF_GUEST_INITRD_PERF), refused without it",
       f"{picked} {unset}")

    t = Topology(run="nfabric-test", mem_path="/d/mem", props="shared-state=/d/state,head=0,heads=2")
    root = ET.fromstring(domain_xml(t, "g-0", "/d/s.log", "/q", "/k", "/i", FW))
    qargs = [e.get("value") for e in root.iter(f"{{{QEMU_NS}}}arg")]
    want = FW + ["-machine", "cxl=on"] + ["-machine" if x == "-M" else x for x in t.cxl_args()]
    ok(qargs == want, "libvirt XML: the Topology's CXL arguments in <qemu:commandline>",
       f"{qargs}\n{want}")
    ok(root.findtext("os/cmdline") == t.kernel_cmdline() and root.findtext("name") == "g-0"
       and root.find("devices/serial/source").get("path") == "/d/s.log"
       and root.findtext("memory") == "2048" and root.findtext("vcpu") == "2",
       "libvirt XML: the kernel command line, name, serial file, memory and vCPUs")

    # The cluster command's options and hosts (nfmachine/cluster.py).
    from nfmachine import cluster

    def cl_refused(name, argv, want):
        try:
            cluster.Options(argv, cli.UsageError)
        except cli.UsageError as exc:
            ok(want in exc.args[0], f"cluster refuses {name}", exc.args[0])
            return
        ok(False, f"cluster refuses {name}", "accepted")
    cl_refused("no --hosts", ["--run", "x"], '--hosts must be 1..16, not ""')
    cl_refused("--hosts 17", ["--hosts", "17", "--run", "x"], "--hosts must be 1..16")
    cl_refused("no --run", ["--hosts", "2"], "--run CMD is required")
    cl_refused("--net with 3 hosts", ["--hosts", "3", "--run", "x", "--net"], "--net links 2 hosts")
    cl_refused("--cxl-mem 300M", ["--hosts", "2", "--run", "x", "--cxl-mem", "300M"], "bad --cxl-mem")
    cl_refused("--timeout 0", ["--hosts", "2", "--run", "x", "--timeout", "0"], "bad --timeout")
    cl_refused("--net-hub not a directory", ["--hosts", "2", "--run", "x", "--net-hub", "/nonexistent"],
               "no such directory")
    o = cluster.Options(["--hosts", "2", "--run", "agg", "--net", "--fm", "--job 0 --heads 0",
                         "--device-props", "clock-mhz=10"], cli.UsageError)
    base = Topology(cpus=1, mem_mib=1024)
    h1 = cluster.host_topology(o, "/c", 1, base).qemu_args(FW, "/k", "/i")
    ok(after(h1, "-device")[-1].endswith("id=cxl-vmem0,shared-state=/c/state,head=1,heads=2,"
                                        "clock-mhz=10")
       and after(h1, "-object") == ["memory-backend-file,id=vmem0,share=on,mem-path=/c/mem,"
                                    "size=256M"]
       and after(h1, "-netdev")[0].endswith("addr.path=/c/net.sock")
       and "server=off" in after(h1, "-netdev")[0]
       and after(h1, "-pidfile") == ["/c/host1.pid"]
       and after(h1, "-qmp") == ["unix:/c/qmp1.sock,server=on,wait=off"] and "-S" in h1,
       "cluster host 1: a head of the shared device, the link's client end, pid file, "
       "QMP socket, paused for the fabric manager", h1)
    ok("nfabric.ip=169.254.0.2/16" in h1[h1.index("-append") + 1]
       and "NFABRIC_RANK=1 NFABRIC_HOSTS=2" in base64.b64decode(
           [w for w in h1[h1.index("-append") + 1].split() if w.startswith("nfabric.run=")][0]
           .split("=", 1)[1]).decode(),
       "cluster host 1: its address and rank in the guest")
    import tempfile
    with tempfile.TemporaryDirectory() as tmp:
        os.environ["NF_RUN_SHM"] = os.path.join(tmp, "shm")
        os.makedirs(os.environ["NF_RUN_SHM"])
        d = os.path.join(tmp, "c")
        cluster.prepare(d, 256)
        mem = os.path.realpath(os.path.join(d, "mem"))
        made = (os.path.getsize(mem) == 256 << 20
                and mem.startswith(os.environ["NF_RUN_SHM"] + "/cluster-")
                and os.readlink(os.path.join(d, "state")) == os.path.join(os.path.dirname(mem), "state"))
        cluster.release(d)
        ok(made and not os.path.exists(os.path.dirname(mem))
           and not os.path.lexists(os.path.join(d, "mem")),
           "cluster device files: 256 MiB of memory and the state's link in the run's"
           " shared memory, all removed by release")

    # What vm.py builds on in QEMU's own python/qemu (the fetched source).
    try:
        from qemu.machine import QEMUMachine
        from qemu.qmp.legacy import QEMUMonitorProtocol
        m = QEMUMachine("/bin/false", base_temp_dir="/nonexistent")
        have = all(hasattr(QEMUMachine, x)
                   for x in ("set_console", "console_socket", "launch", "shutdown",
                             "wait", "exitcode", "get_pid", "_post_shutdown"))
        have = have and hasattr(m, "_qemu_log_path")
        have = have and all(hasattr(QEMUMonitorProtocol, x)
                            for x in ("connect", "cmd", "settimeout", "close"))
        ok(have, "QEMU's python/qemu has QEMUMachine's and QEMUMonitorProtocol's "
           "methods vm.py and qmp.py use")
    except ImportError as exc:
        ok(False, "QEMU's python/qemu importable", exc)

    machines_alone()
    qtest_header()
    return done()


def machines_alone():
    """The parts the suites' machines without a guest are made of."""
    a = args_of(spare_ports=1, incoming="unix:/m.sock", extra=["-qmp", "q"])
    ok(a[-9:] == ["-M", "cxl-fmw.0.targets.0=cxl.1,cxl-fmw.0.size=4096M",
                  "-device", "cxl-rp,port=1,bus=cxl.1,id=rp1,chassis=0,slot=3",
                  "-S", "-incoming", "unix:/m.sock", "-qmp", "q"][-9:],
       "a spare root port after the window, then a migration's -S -incoming, then extra",
       a[-9:])
    ok("-incoming" not in args_of(), "no -incoming unless asked")
    a = topology.alone(ports=2, ram="256M", objects=[topology.backend("vmem0", 256, "/m,x")],
                       devices=[topology.device("rp0", "vmem0", "nf0", "head=0")])
    ok(a[:6] == ["-M", "q35,cxl=on", "-nodefaults", "-display", "none", "-S"]
       and after(a, "-m") == ["256M"]
       and after(a, "-object") == ["memory-backend-file,id=vmem0,share=on,mem-path=/m,,x,size=256M"]
       and after(a, "-device") == ["pxb-cxl,bus_nr=12,bus=pcie.0,id=cxl.1",
                                   "cxl-rp,port=0,bus=cxl.1,id=rp0,chassis=0,slot=2",
                                   "cxl-rp,port=1,bus=cxl.1,id=rp1,chassis=0,slot=3",
                                   "cxl-neuron-fabric,bus=rp0,volatile-memdev=vmem0,id=nf0,head=0"]
       and a[-2:] == ["-M", "cxl-fmw.0.targets.0=cxl.1,cxl-fmw.0.size=4G"],
       "QEMU alone: paused, no display, the bridge, root ports, devices, a 4 GiB window", a)
    ok(topology.backend("v", 100, share=None) == "memory-backend-ram,id=v,size=100M"
       and topology.backend("v", 256, "/f", share=False)
       == "memory-backend-file,id=v,share=off,mem-path=/f,size=256M",
       "backends: share unsaid or off")
    ok(topology.beside(1, "rp-b", "vmem-b", "cxl-b") ==
       ["-object", "memory-backend-ram,id=vmem-b,share=on,size=256M",
        "-device", "cxl-rp,port=1,bus=cxl.1,id=rp-b,chassis=0,slot=3",
        "-device", "cxl-neuron-fabric,bus=rp-b,volatile-memdev=vmem-b,id=cxl-b"],
       "a second, unshared device beside")


def c_macro(text, name, **args):
    """The string #define NAME(...) makes (its lines continued), each
    argument given as ARGS' value."""
    m = re.search(r"^#define " + name + r"\b((?:[^\n]*\\\n)*[^\n]*)", text, re.M)
    if not m:
        return ""
    body = re.sub(r"^\([^)]*\)", "", m.group(1))
    for arg, value in args.items():
        body = re.sub(r"\b" + arg + r"\b", '"' + value + '"', body)
    return "".join(re.findall(r'"((?:[^"\\]|\\.)*)"', body))


def qtest_header():
    """The C qtests' machine (tests/qtest/nfabric-qtest.h, NF_QTEST_MACHINE
    with NF_QTEST_RAM) is topology.alone()'s with the same parts: what
    qtest_init adds (-qtest, -accel qtest, ...) and QEMU alone's -nodefaults
    -display none -S aside, the same options, the devices in the same order."""
    root = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
    with open(os.path.join(root, "tests", "qtest", "nfabric-qtest.h"), encoding="utf-8") as f:
        text = f.read()
    ram = c_macro(text, "NF_QTEST_RAM")
    c_args = c_macro(text, "NF_QTEST_MACHINE", backend=ram, props="").split()
    c_args = ["-M" if w == "-machine" else w for w in c_args]
    pairs = list(zip(c_args[::2], c_args[1::2]))
    want = topology.alone(ram="128M", objects=[topology.backend("vmem0", 256, share=None)],
                          devices=[topology.device("rp0", "vmem0", "nf0")])
    want = [w for w in want if w not in ("-nodefaults", "-display", "none", "-S")]
    want_pairs = list(zip(want[::2], want[1::2]))
    ok(ram == topology.backend("vmem0", 256, share=None) and sorted(pairs) == sorted(want_pairs)
       and [v for k, v in pairs if k == "-device"] == [v for k, v in want_pairs if k == "-device"],
       "tests/qtest/nfabric-qtest.h's NF_QTEST_MACHINE is topology.alone()'s machine",
       f"C: {pairs}\ntopology: {want_pairs}")


if __name__ == "__main__":
    sys.exit(main())
