# SPDX-License-Identifier: GPL-2.0-or-later
"""scripts/nfmachine/driver_suite.py (suites `driver`, `fallback`, `pybind`,
the checks of `driver72`) without a VM: the READY line, kernel log, symbol,
build and checkpatch checks on made-up consoles and outputs, then each
suite with stand-in boots, cluster, binding checks, compiler, modinfo and
checkpatch.pl: a passing and a failing case each.

Run by the unit suite:  PYTHONPATH=scripts:QEMU_SRC/python python3 THIS
"""

import contextlib
import io
import os
import sys
import tempfile

from nfmachine import driver_suite as ds
from nfmachine.tap import ok
import testkit

READY = ("NFABRIC-READY uptime=4.25s region=region0 dax=/dev/dax0.0 via=cxl create-region"
         " bind=daxctl driver=")
KMSG = "kmsg: [    0.000000] Linux version 6.12\nkmsg: [    1.0] nfabric: nfabric0 attached\n"


def write(path, text):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w", encoding="utf-8") as f:
        f.write(text)


def captured(fn, *args, **kw):
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        rc = fn(*args, **kw)
    return rc, out.getvalue()


def console(name, bad=None):
    """A made-up console of the boot whose log is NAME (bad: what fails)."""
    if name.startswith("fallback"):
        ready = READY + "none" if bad != "ready" else "NFABRIC-NOT-READY no region"
        return f"boot noise\n{ready}\nok - libnfabric reaches the registers through: x\n" \
            "ok 1 - fp32\n1..1\nsummary: guest 1 passed\n"
    if name == "driver-console.log":
        return (f"noise\r\n{READY}nfabric0\r\nok - libnfabric reaches the registers\r\n"
                "ok 1 - fp32\r\n1..1\r\n# driver checks\r\nok 1 - info\r\n1..1\r\n"
                "summary: driver 1 passed, 0 failed\r\n" + KMSG
                + ("kmsg: [    9.0] WARNING: CPU: 0 PID: 1 at x\n" if bad == "kmsg" else ""))
    if name == "driver-noregloc-console.log":
        return ("ok - nfabric.ko refuses a device whose Register Locator names no block: x\n"
                "ok - no nfabric0 for it\nok - libnfabric (no driver) refuses it: x\n" + KMSG)
    return "1..9 not relayed here\nok 1 - sysram\n# a comment\nsummary: driver 1 passed\n" + KMSG


def stand_ins(bad=None):
    calls = []

    def boot(argv, log):
        calls.append(argv)
        write(log, console(os.path.basename(log), bad))
        return 1 if bad == "status" and len(calls) == 2 else 0

    def cluster(argv):
        d = argv[argv.index("--dir") + 1]
        print("cluster: host 0: ok")
        if bad == "cluster-raises":
            raise OSError("no QEMU")
        for r in range(2):
            if not (bad == "cluster" and r == 1):
                write(os.path.join(d, f"host{r}.log"), f"noise\nok 1 - [rank {r}] ROUND_WAIT\n")
        calls.append(argv)
        return 1 if bad == "cluster" else 0
    return boot, cluster, calls


def check_ready_kmsg():
    tap = ds.ready_checks("x\n" + READY + "nfabric0\n", "nfabric0")
    ok(tap == ["# " + READY + "nfabric0",
               "ok - the region was created by cxl create-region (ndctl 81)",
               "ok - daxctl bound the dax device to device_dax",
               "ok - READY line reports driver=nfabric0"], "READY checks: a good line", tap)
    tap = ds.ready_checks("NFABRIC-NOT-READY no region driver=none\n", "nfabric0")
    ok(len(tap) == 4 and all(l.startswith("not ok") for l in tap[1:])
       and tap[1].endswith(": NFABRIC-NOT-READY no region driver=none"),
       "READY checks: NOT-READY fails all three, naming the line", tap)
    tap = ds.ready_checks("nothing\n", "none")
    ok(tap[0] == "# " and tap[3] == "not ok - READY line does not report driver=none: no READY line",
       "READY checks: no READY line said so", tap)

    tap = ds.kmsg_check(KMSG, "System RAM")
    ok(tap == ["ok - System RAM: the guest's kernel log (2 lines) has no BUG, Oops, WARNING or"
               " Bad page line"], "kernel log: clean", tap)
    tap = ds.kmsg_check(KMSG + "kmsg: [ 2.0] BUG: unable to handle page fault\n", "x")
    ok(tap[0] == "not ok - x: the guest's kernel log (3 lines) has 1 BUG, Oops, WARNING or"
       " Bad page lines" and tap[1] == "#   kmsg: [ 2.0] BUG: unable to handle page fault",
       "kernel log: a BUG line fails it and is shown", tap)
    tap = ds.kmsg_check("no kernel log\n", "x")
    ok(tap[0].startswith("not ok - x: the guest's kernel log (0 lines)"),
       "kernel log: none dumped is a failure", tap)


def check_driver():
    with tempfile.TemporaryDirectory() as d:
        boot, cluster, calls = stand_ins()
        rc, out = captured(ds.driver, d, boot, cluster)
        tap = out.splitlines()
        ok(rc == 0 and not any(l.startswith("not ok") for l in tap)
           and sum(l.startswith("ok") for l in tap) == 3 + 3 + 1 + 2 * (1 + 1) + 3 + 2
           and "1..1" in tap and "1..9 not relayed here" not in out
           and "noise" not in out and "\r" not in out
           and tap[tap.index("summary: driver 1 passed, 0 failed") + 1] == "# " + READY + "nfabric0"
           and tap[-2:] == ["ok 1 - [rank 0] ROUND_WAIT", "ok 1 - [rank 1] ROUND_WAIT"],
           "driver: consoles relayed, READY and kernel log checks, both hosts' checks", out)
        ok([c[2:] for c in calls[1:4]] == [[], ["--devices", "2", "--append", "nfabric.region=none"],
                                           ["--append", "nfabric.driver=0", "--device-props",
                                            "x-register-locator=off"]]
           and calls[0][0] == "--run" and "NFABRIC_ACCESS=driver nfabric-test" in calls[0][1]
           and calls[3][1] == ds.NOREGLOC
           and calls[4][:2] == ["--hosts", "2"] and calls[4][-1] == "nfabric-drvtest --only multihost",
           "driver: each boot's options and command, the cluster's", calls)
        ok("cluster: host 0: ok" in open(os.path.join(d, "driver-cluster.log")).read()
           and "cluster: host 0" not in out, "driver: the cluster's report in driver-cluster.log")

    for bad, want in (("kmsg", "not ok - driver checks: the guest's kernel log (3 lines) has 1"),
                      ("status", None),
                      ("cluster", "not ok - cluster host 1 printed no check"),
                      ("cluster-raises", "not ok - scripts/nfabric cluster --hosts 2 failed (status 1")):
        with tempfile.TemporaryDirectory() as d:
            boot, cluster, _ = stand_ins(bad)
            rc, out = captured(ds.driver, d, boot, cluster)
            log = open(os.path.join(d, "driver-cluster.log")).read()
            ok(rc == 1 and (want is None or want in out)
               and (bad != "cluster-raises" or "OSError: no QEMU" in log),
               f"driver fails: {bad}", out)


def check_fallback():
    with tempfile.TemporaryDirectory() as d:
        boot, _, calls = stand_ins()
        rc, out = captured(ds.fallback, d, boot)
        ok(rc == 0 and out.splitlines()[-1] == "ok - READY line reports driver=none"
           and "1..1" in out and "boot noise" not in out
           and calls[0][2:] == ["--append", "nfabric.driver=0"]
           and "NFABRIC_ACCESS=resource0 nfabric-test" in calls[0][1],
           "fallback: relayed, READY checks for driver=none, nfabric.driver=0", out)
        boot, _, _ = stand_ins("ready")
        rc, out = captured(ds.fallback, d, boot)
        ok(rc == 1 and out.count("not ok") == 3, "fallback: a NOT-READY guest fails", out)


SYM = "LIBNFABRIC_1 {\n  global:\n\tnfabric_open;\n\tnfabric_close;\n  local:\n\t*;\n};\n"
OBJDUMP = """
libnfabric.so:     file format elf64-x86-64

DYNAMIC SYMBOL TABLE:
0000000000000000      DF *UND*\t0000000000000000 (GLIBC_2.2.5) free
0000000000000000 g    DO *ABS*\t0000000000000000  LIBNFABRIC_1 LIBNFABRIC_1
0000000000002340 g    DF .text\t0000000000000040  LIBNFABRIC_1 nfabric_open
0000000000002380 g    DF .text\t0000000000000020  LIBNFABRIC_1 nfabric_close
"""


def check_symbols():
    checks = ds.symbol_checks(SYM, OBJDUMP)
    ok([g for g, _ in checks] == [True, True] and checks[0][1].startswith(
        "libnfabric.so exports exactly libnfabric.sym's 2 symbols"),
       "symbols: exactly the .sym's, all LIBNFABRIC_1", checks)
    extra = OBJDUMP + "00000000000023c0 g    DF .text\t0000000000000010  Base nfabric_engine_update\n"
    checks = ds.symbol_checks(SYM, extra)
    ok([g for g, _ in checks] == [False, False] and checks[1][1].endswith(
        "; not: nfabric_engine_update"), "symbols: an unversioned extra export fails both", checks)
    checks = ds.symbol_checks(SYM, OBJDUMP.replace("nfabric_close", "other"))
    ok(not checks[0][0], "symbols: one missing fails", checks)
    sym2 = SYM + "LIBNFABRIC_2 {\nglobal:\n\tnfabric_window_post;\n} LIBNFABRIC_1;\n"
    obj2 = OBJDUMP + "00000000000023c0 g    DF .text\t0000000000000010  LIBNFABRIC_2 nfabric_window_post\n"
    checks = ds.symbol_checks(sym2, obj2)
    ok([g for g, _ in checks] == [True, True] and "LIBNFABRIC_1 LIBNFABRIC_2" in checks[1][1],
       "symbols: a later node's symbol under that node passes", checks)
    checks = ds.symbol_checks(sym2, obj2.replace("LIBNFABRIC_2 nfabric_window_post",
                                                 "LIBNFABRIC_1 nfabric_window_post"))
    ok(not checks[1][0] and checks[1][1].endswith("; not: nfabric_window_post"),
       "symbols: a later node's symbol under the first node fails", checks)


def check_pybind():
    with tempfile.TemporaryDirectory() as root:
        pkg = os.path.join(root, "tests", "python", "nfcheck")
        write(os.path.join(pkg, "__init__.py"), "")
        write(os.path.join(pkg, "argcheck.py"), "print('# stand-in argcheck', flush=True)\n")
        write(os.path.join(pkg, "failcheck.py"),
              "import os, sys\nprint('# stand-in failcheck', os.environ['NFABRIC_LIB'], flush=True)\n"
              "sys.exit(int(os.environ.get('STAND_IN_FAIL', '0')))\n")
        write(os.path.join(root, "guest", "lib", "libnfabric.sym"), SYM)
        saved = ds.objdump_t
        ds.objdump_t = lambda so: OBJDUMP
        try:
            rc, out = captured(ds.pybind, root, "/hb")
            ok(rc == 0 and out.splitlines()[-2:] == [
                "ok 1 - libnfabric.so exports exactly libnfabric.sym's 2 symbols (the controller"
                " model linked in stays local)",
                "ok 2 - each is versioned as libnfabric.sym says, LIBNFABRIC_1 (objdump -T)"],
               "pybind: both runs pass, two numbered symbol checks", out)
            os.environ["STAND_IN_FAIL"] = "1"
            rc, out = captured(ds.pybind, root, "/hb")
            ok(rc == 1 and "not ok" not in out, "pybind: a failing binding check fails the suite", out)
        finally:
            ds.objdump_t = saved
            os.environ.pop("STAND_IN_FAIL", None)


def check_driver72():
    kver = "7.2.13+deb14-amd64"
    with tempfile.TemporaryDirectory() as d:
        root, out, kdir = (os.path.join(d, n) for n in ("root", "out", "kernel"))
        write(os.path.join(root, "usr/src/linux-headers-" + kver, ".config"),
              'CONFIG_X=y\nCONFIG_CC_VERSION_TEXT="x86_64-linux-gnu-gcc-16 (Debian 16.2.0-4) 16.2.0"\n')
        write(os.path.join(out, "kmod", "build.log"),
              "  CC [M]  core.o\nnfabric.ko built for %s in 7.2 s\n" % kver)
        write(os.path.join(out, "build.err"), "nfabric: error: driver: the module builds with warnings\n")
        for f in ("core.c", "pci.c", "core.h", "uapi/nfabric.h", "compat/stdint.h"):
            write(os.path.join(kdir, f), "")
        cp_good = os.path.join(d, "good.pl")
        write(cp_good, 'print "total: 0 errors, 0 warnings, 10 lines checked\\n" for @ARGV[4..$#ARGV];\n')
        cp_bad = os.path.join(d, "bad.pl")
        write(cp_bad, 'print "./core.c:3: WARNING:LONG_LINE: line too long\\n";'
              'print "total: 0 errors, 1 warnings, 10 lines checked\\n"; exit 1;\n')
        saved = ds.sid_root_run, ds.modinfo
        seen = []
        ds.sid_root_run = lambda r, argv: (seen.append((r, argv)), ["echo", argv[0] + " (Debian 16.2.0-4) 16.2.0"])[1]
        ds.modinfo = lambda ko, field: {"vermagic": kver + " SMP preempt mod_unload ",
                                        "license": "GPL"}[field]
        try:
            rc, text = captured(ds.driver72, kver, root, out, "/ko", cp_good, kdir)
            tap = text.splitlines()
            ok(rc == 0 and tap == [
                f"ok - the sid root has linux-headers-{kver} and the compiler they name:"
                " x86_64-linux-gnu-gcc-16 (Debian 16.2.0-4) 16.2.0",
                f"ok - nfabric.ko builds for {kver} with W=1 and no warning (nfabric.ko built for"
                f" {kver} in 7.2 s)",
                f"ok - modpost: every symbol nfabric.ko uses is exported by {kver} (its Module.symvers)",
                f"ok - vermagic is {kver} SMP preempt mod_unload ", "ok - license GPL",
                "ok - checkpatch.pl (Linux 6.12's) over guest/kernel (5 files): no error, no warning"]
               and seen == [(root, ["x86_64-linux-gnu-gcc-16", "--version"])],
               "driver72: the six checks of a good build", text)
            ok(ds.kernel_sources(kdir) == ["./core.c", "./core.h", "./pci.c", "compat/stdint.h",
                                           "uapi/nfabric.h"], "driver72: checkpatch's file list")
            rc, text = captured(ds.driver72, kver, root, out, "/ko", cp_bad, kdir)
            ok(rc == 1 and text.splitlines()[-2:] == [
                f"not ok - checkpatch.pl over guest/kernel found something ({out}/checkpatch.log):",
                "#   ./core.c:3: WARNING:LONG_LINE: line too long"], "driver72: a checkpatch warning fails", text)
            rc, text = captured(ds.driver72, kver, root, out, "", cp_good, kdir)
            ok(rc == 1 and text.splitlines()[1:] == [
                "nfabric: error: driver: the module builds with warnings",
                f"not ok - nfabric.ko builds for {kver} with W=1 and no warning ({out}/kmod/build.log)"],
               "driver72: a failed build shows why and stops", text)
            write(os.path.join(out, "kmod", "build.log"), "WARNING: modpost: \"x\" [nfabric.ko] undefined!\nend\n")
            ds.modinfo = lambda ko, field: {"vermagic": "6.12.9 SMP", "license": "MIT"}[field]
            rc, text = captured(ds.driver72, kver, root, out, "/ko", "", kdir)
            ok(rc == 1 and sum(l.startswith("not ok") for l in text.splitlines()) == 4,
               "driver72: undefined symbol, vermagic, license and no checkpatch.pl each fail", text)
            ds.sid_root_run = lambda r, argv: ["false"]
            rc, text = captured(ds.driver72, kver, root, out, "/ko", cp_good, kdir)
            ok(rc == 1 and text.startswith(f"not ok - the sid root lacks the compiler linux-headers-{kver}"
                                           " name ('x86_64-linux-gnu-gcc-16'"),
               "driver72: a compiler that does not run fails", text)
        finally:
            ds.sid_root_run, ds.modinfo = saved


def main():
    return testkit.run(check_ready_kmsg, check_driver, check_fallback, check_symbols,
                       check_pybind, check_driver72)


if __name__ == "__main__":
    sys.exit(main())
