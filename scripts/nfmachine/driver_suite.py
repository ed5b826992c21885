# SPDX-License-Identifier: GPL-2.0-or-later
"""Suites `driver`, `fallback` and `pybind`, and the checks of `driver72`
(docs/driver.md#tests, docs/pytorch.md).

  driver    the guest checks through nfabric.ko and the driver's own
            (nfabric-drvtest), then boots with the region as System RAM,
            with an interleaved region over two devices, and with a device
            whose Register Locator names no block; rounds on two hosts of
            one shared device (the `cluster` command, in this process)
  fallback  the guest checks without the driver (libnfabric on resource0)
  pybind    the Python binding's argument and failure checks, and
            libnfabric.so's exported symbols (host, no VM)
  driver72  what scripts/lib/driver.sh built for the newest kernel line
            (in a sid root of its own): the compiler, the build, modpost,
            vermagic, license; checkpatch.pl over guest/kernel

scripts/lib/driver.sh keeps the provisioning: the image with nfabric.ko
(built against the guest kernel's headers), python3-numpy, driver72's sid
root, its build and checkpatch.pl.  The boots go through __main__.boot_vm
(vm.boot()) and the cluster through __main__.cmd_cluster, both handed in;
every other child runs in a process group of its own, waited a bounded
time and stopped on every path (ddp.run).  Consoles and logs go to
NF_TEST_LOGS (build/test-logs).
"""

import contextlib
import glob
import os
import re
import subprocess
import traceback
from typing import Callable, List, Sequence, Tuple

from .ddp import run
from .hosts import read as read_file, read_console as read
from .tap import Tap

# boot(vm options with --run, console log) -> the guest command's status
Boot = Callable[[List[str], str], int]
# cluster(argv) -> its status (its report on stdout, messages on stderr)
Cluster = Callable[[List[str]], int]

CLUSTER_S = 300            # the cluster's --timeout (its hosts' bound)
PY_S = 600                 # nfcheck.argcheck, nfcheck.failcheck
TOOL_S = 120               # objdump, modinfo, the sid root's cc --version
CHECKPATCH_S = 600         # checkpatch.pl over guest/kernel

# What the suites relay of a console (as grep -E '^(...)' did).
RELAY_PLAN = r"(ok|not ok|#|1\.\.|summary:)"
RELAY = r"(ok|not ok|#|summary:)"
RELAY_TAP = r"(ok|not ok|#)"


def access_check(want: str) -> str:
    """A guest shell snippet: a TAP line on what libnfabric uses for the
    registers (`nfabricctl info`'s "registers:" line begins with WANT)."""
    return ("r=$(nfabricctl info 2>&1 | sed -n 's/^registers: //p'); case \"$r\" in "
            f"\"{want}\"*) echo \"ok - libnfabric reaches the registers through: $r\";; "
            f"*) echo \"not ok - libnfabric should use {want}, uses: "
            "${r:-nothing (nfabricctl info failed)}\"; false;; esac")


# A guest shell snippet: the whole kernel log, as "kmsg: " lines.
KMSG = 'dmesg | sed "s/^/kmsg: /"'

# A guest shell snippet: nfabric.ko and libnfabric on a device whose
# Register Locator names no NEURON-Fabric block refuse it, saying why.
NOREGLOC = '''rc=0
insmod "/lib/modules/$(cat /etc/nfabric/kernel-version)/extra/nfabric.ko" || rc=1
sleep 1
m=$(dmesg | grep "nfabric:.*Register Locator names no NEURON-Fabric block")
if [ -n "$m" ]; then echo "ok - nfabric.ko refuses a device whose Register Locator names no block: ${m#*] }"; else echo "not ok - nfabric.ko did not say it refused the device"; rc=1; fi
if [ -e /sys/class/nfabric/nfabric0 ]; then echo "not ok - nfabric0 appeared for a device without the block"; rc=1; else echo "ok - no nfabric0 for it"; fi
out=$(nfabricctl info 2>&1); s=$?
case "$out" in *"names no NEURON-Fabric block"*) if [ $s != 0 ]; then echo "ok - libnfabric (no driver) refuses it: $(echo "$out" | head -n 1)"; else echo "not ok - nfabricctl info succeeded"; rc=1; fi;; *) echo "not ok - libnfabric did not refuse it: $out"; rc=1;; esac
dmesg | sed "s/^/kmsg: /"
exit $rc'''

DRIVER_CMD = (access_check("driver /dev/nfabric") + "; a=$?\n"
              "NFABRIC_ACCESS=driver nfabric-test; b=$?\n"
              "nfabric-drvtest; c=$?\n"
              f"{KMSG}\n"
              "[ $a = 0 ] && [ $b = 0 ] && [ $c = 0 ]")
FALLBACK_CMD = (access_check("resource0 (no driver)") + "; a=$?\n"
                "NFABRIC_ACCESS=resource0 nfabric-test; b=$?\n"
                "[ $a = 0 ] && [ $b = 0 ]")


def lines(text: str) -> List[str]:
    """TEXT's lines, split at newlines only (as grep reads them)."""
    out = text.split("\n")
    return out[:-1] if out and out[-1] == "" else out


def grep(text: str, pattern: str) -> List[str]:
    rx = re.compile(pattern)
    return [l for l in lines(text) if rx.match(l)]


def failed(tap: Sequence[str]) -> bool:
    return any(l.startswith("not ok") for l in tap)


def emit(tap: Sequence[str]) -> None:
    if tap:
        print("\n".join(tap), flush=True)


def ready_checks(text: str, want: str) -> List[str]:
    """The TAP lines about the console's READY line: the region made by
    cxl create-region, bound by daxctl, and driver=WANT."""
    found = grep(text, r"NFABRIC-(READY|NOT-READY)")
    ready = found[0] if found else ""
    why = ready or "no READY line"
    is_ready = ready.startswith("NFABRIC-READY")
    tap = [f"# {ready}"]
    tap.append("ok - the region was created by cxl create-region (ndctl 81)"
               if is_ready and "via=cxl create-region" in ready else
               f"not ok - the region was not created by cxl create-region: {why}")
    tap.append("ok - daxctl bound the dax device to device_dax"
               if is_ready and " bind=daxctl " in ready else
               f"not ok - daxctl did not bind the dax device: {why}")
    tap.append(f"ok - READY line reports driver={want}" if ready.endswith(f" driver={want}")
               else f"not ok - READY line does not report driver={want}: {why}")
    return tap


def kmsg_check(text: str, what: str) -> List[str]:
    """A TAP line: the guest's kernel log (dumped as "kmsg: " lines at the
    end of the run) holds no BUG, Oops, WARNING or Bad page line."""
    n = len(grep(text, r"kmsg: "))
    bad = grep(text, r"kmsg: .*(BUG:|kernel BUG|Oops|WARNING|Bad page)")
    if n > 0 and not bad:
        return [f"ok - {what}: the guest's kernel log ({n} lines) has no BUG, Oops,"
                " WARNING or Bad page line"]
    return ([f"not ok - {what}: the guest's kernel log ({n} lines) has {len(bad)} BUG, Oops,"
             " WARNING or Bad page lines"] + ["#   " + l for l in bad[:20]])


def guest_run(boot: Boot, log: str, cmd: str, opts: Sequence[str], relay: str) -> Tuple[int, str]:
    """One boot running CMD; its console's TAP lines relayed; (status, console)."""
    status = boot(["--run", cmd, *opts], log)
    text = read(log)
    emit(grep(text, relay))
    return status, text


def cluster_rounds(logs: str, cluster: Cluster) -> bool:
    """Rounds across two heads of one shared device (`cluster --hosts 2`):
    its report and messages in driver-cluster.log, the hosts' TAP relayed."""
    d = os.path.join(logs, "driver-cluster")
    with open(d + ".log", "w", encoding="utf-8") as f:
        with contextlib.redirect_stdout(f), contextlib.redirect_stderr(f):
            argv = ["--hosts", "2", "--dir", d, "--timeout", str(CLUSTER_S),
                    "--run", "nfabric-drvtest --only multihost"]
            try:
                crc = cluster(argv)
            except Exception as exc:  # noqa: BLE001: reported in the log and as a check
                print(f"nfmachine driver-suite: cluster {' '.join(argv)}: "
                      f"{type(exc).__name__}: {exc}")
                traceback.print_exc(file=f)
                crc = 1
    tap: List[str] = []
    for r in range(2):
        host = os.path.join(d, f"host{r}.log")
        tap += grep(read(host), r"(ok|not ok)") or [
            f"not ok - cluster host {r} printed no check (see {host})"]
    if crc != 0:
        tap.append(f"not ok - scripts/nfabric cluster --hosts 2 failed (status {crc},"
                   f" see {d}.log)")
    emit(tap)
    return not failed(tap)


def driver(logs: str, boot: Boot, cluster: Cluster) -> int:
    """Suite `driver`: four boots, then the rounds on two hosts."""
    os.makedirs(logs, exist_ok=True)
    good = True
    # The guest checks first: the driver checks unbind the device at the
    # end (which removes the region).
    status, text = guest_run(boot, os.path.join(logs, "driver-console.log"), DRIVER_CMD,
                             [], RELAY_PLAN)
    tap = ready_checks(text, "nfabric0") + kmsg_check(text, "driver checks")
    emit(tap)
    good &= status == 0 and not failed(tap)
    # The others, each a boot of its own: the region onlined as System
    # RAM (this changes the guest); two devices, no region at boot, then
    # an interleaved region; a device whose Register Locator names no
    # controller block (x-register-locator=off, as before 1.6): the driver
    # and the library refuse it and say why.
    for name, cmd, opts, relay, what in (
            ("sysram", f"nfabric-drvtest --only sysram,dmesg; c=$?; {KMSG}; exit $c", [],
             RELAY, "System RAM"),
            ("interleave", f"nfabric-drvtest --only interleave,dmesg; c=$?; {KMSG}; exit $c",
             ["--devices", "2", "--append", "nfabric.region=none"], RELAY,
             "interleaved region"),
            ("noregloc", NOREGLOC, ["--append", "nfabric.driver=0", "--device-props",
                                    "x-register-locator=off"], RELAY_TAP, None)):
        status, text = guest_run(boot, os.path.join(logs, f"driver-{name}-console.log"), cmd,
                                 opts, relay)
        tap = kmsg_check(text, what) if what else []
        emit(tap)
        good &= status == 0 and not failed(tap)
    good &= cluster_rounds(logs, cluster)
    return 0 if good else 1


def fallback(logs: str, boot: Boot) -> int:
    """Suite `fallback`: the guest checks without the driver."""
    os.makedirs(logs, exist_ok=True)
    status, text = guest_run(boot, os.path.join(logs, "fallback-console.log"), FALLBACK_CMD,
                             ["--append", "nfabric.driver=0"], RELAY_PLAN)
    tap = ready_checks(text, "none")
    emit(tap)
    return 0 if status == 0 and not failed(tap) else 1


def symbol_checks(sym: str, objdump: str) -> List[Tuple[bool, str]]:
    """Every symbol libnfabric.so exports (objdump -T: what a program linked
    against it records) is one of libnfabric.sym's, under the version node
    the .sym puts it in (LIBNFABRIC_1, then LIBNFABRIC_2, ...), and each of
    those is exported."""
    node, want = "", {}
    for l in lines(sym):
        m = re.fullmatch(r"(LIBNFABRIC_[0-9]+) \{", l.strip())
        if m:
            node = m.group(1)
            continue
        m = re.fullmatch(r"\t(nfabric_[a-z0-9_]*);", l)
        if m and node:
            want[m.group(1)] = node
    nodes = sorted(set(want.values()))
    rows = [f for f in (l.split() for l in lines(objdump))
            if len(f) >= 4 and f[1] == "g" and f[3] != "*UND*"]
    got = sorted((f[-2], f[-1]) for f in rows if f[-1].startswith("nfabric_"))
    unversioned = [f[-1] for f in rows if f[-2] not in nodes]
    misplaced = [n for v, n in got if n in want and want[n] != v]
    return [(bool(want) and sorted(n for _, n in got) == sorted(want),
             f"libnfabric.so exports exactly libnfabric.sym's {len(want)} symbols"
             " (the controller model linked in stays local)"),
            (not unversioned and not misplaced and bool(got),
             f"each is versioned as libnfabric.sym says, {' '.join(nodes)} (objdump -T)"
             + (f"; not: {' '.join(unversioned + misplaced)}"
                if unversioned or misplaced else ""))]


def objdump_t(so: str) -> str:
    res = subprocess.run(["objdump", "-T", so], capture_output=True, text=True,
                         timeout=TOOL_S, check=False)
    if res.returncode != 0:
        for l in lines(res.stderr.strip() or f"objdump -T {so}: status {res.returncode}"):
            print("#   " + l)
    return res.stdout


def pybind(root: str, host_build: str) -> int:
    """Suite `pybind`: nfcheck.argcheck, nfcheck.failcheck (tests/python,
    their TAP on our stdout), then libnfabric.so's symbols."""
    env = dict(os.environ, PYTHONPATH=os.path.join(root, "guest", "python") + ":" +
               os.path.join(root, "tests", "python"),
               NFABRIC_LIB=os.path.join(host_build, "guest", "libnfabric.so"))
    good = run(["/usr/bin/python3", "-m", "nfcheck.argcheck"], env=env, timeout=PY_S) == 0
    print("# waits end when the head fails: the state truncated under waiting ranks",
          flush=True)
    good &= run(["/usr/bin/python3", "-m", "nfcheck.failcheck"], env=env, timeout=PY_S) == 0
    print("# libnfabric.so's exported symbols: versioned (guest/lib/libnfabric.sym)",
          flush=True)
    sym = read_file(os.path.join(root, "guest", "lib", "libnfabric.sym"))
    tap = Tap()
    for ok, text in symbol_checks(sym, objdump_t(env["NFABRIC_LIB"])):
        tap.ok(ok, text)
    return 1 if tap.failed or not good else 0


def sid_root_run(root: str, argv: Sequence[str]) -> List[str]:
    """ARGV run in ROOT with a /proc of its own in a mount namespace that
    ends with it (as nf_sid_root_run of scripts/lib/versions.sh)."""
    return ["unshare", "--fork", "--pid", "--mount", "--propagation", "private",
            f"--mount-proc={root}/proc", "chroot", root, *argv]


def first_line(path: str) -> str:
    found = lines(read_file(path))
    return found[0] if found else ""


def modinfo(ko: str, field: str) -> str:
    res = subprocess.run(["modinfo", "-F", field, ko], capture_output=True, text=True,
                         timeout=TOOL_S, check=False)
    if res.returncode != 0:
        print(f"#   modinfo -F {field} {ko}: status {res.returncode}: {res.stderr.strip()}")
    return res.stdout.rstrip("\n")


def compiler_check(kver: str, root: str, out: str) -> List[str]:
    """The compiler linux-headers-KVER name (CONFIG_CC_VERSION_TEXT) runs
    in the sid root."""
    config = read_file(os.path.join(root, "usr", "src", f"linux-headers-{kver}", ".config"))
    m = re.search(r'^CONFIG_CC_VERSION_TEXT="([^ "]*)', config, re.M)
    cc = m.group(1) if m else ""
    log = os.path.join(out, "cc.log")
    if cc and run(sid_root_run(root, [cc, "--version"]), out=log, err=subprocess.STDOUT,
                  timeout=TOOL_S) == 0:
        return [f"ok - the sid root has linux-headers-{kver} and the compiler they name:"
                f" {first_line(log)}"]
    return [f"not ok - the sid root lacks the compiler linux-headers-{kver} name ('{cc}'; {log})"]


def build_checks(kver: str, out: str, vermagic: str, lic: str) -> List[str]:
    """The build of nfabric.ko for KVER (its log in OUT/kmod/build.log),
    modpost, vermagic and license."""
    log = read_file(os.path.join(out, "kmod", "build.log"))
    last = lines(log)[-1] if lines(log) else ""
    return [f"ok - nfabric.ko builds for {kver} with W=1 and no warning ({last})",
            f"not ok - modpost: a symbol nfabric.ko uses is not exported by {kver}"
            if "undefined!" in log else
            f"ok - modpost: every symbol nfabric.ko uses is exported by {kver} (its Module.symvers)",
            f"ok - vermagic is {vermagic}" if vermagic.startswith(kver + " ")
            else f"not ok - vermagic is '{vermagic}', not {kver}",
            "ok - license GPL" if lic == "GPL" else f"not ok - license '{lic}'"]


def kernel_sources(kdir: str) -> List[str]:
    """The module's sources as checkpatch.pl is given them, relative to
    KDIR (`ls ./*.c ./*.h uapi/*.h compat/*.h`)."""
    found = [os.path.join(".", os.path.basename(p)) for pat in ("*.c", "*.h")
             for p in glob.glob(os.path.join(kdir, pat))]
    found += [os.path.relpath(p, kdir) for pat in ("uapi/*.h", "compat/*.h")
              for p in glob.glob(os.path.join(kdir, pat))]
    return sorted(found)


def checkpatch_check(status: int, text: str, nfiles: int, log: str) -> List[str]:
    """checkpatch.pl's verdict (its output TEXT, in LOG): status 0 and
    nothing but its 'total: 0 errors, 0 warnings' lines."""
    out = lines(text)
    if status == 0 and all(l.startswith("total: 0 errors, 0 warnings") for l in out):
        return [f"ok - checkpatch.pl (Linux 6.12's) over guest/kernel ({nfiles} files):"
                " no error, no warning"]
    return [f"not ok - checkpatch.pl over guest/kernel found something ({log}):"] + [
        "#   " + l for l in out if not l.startswith("total: 0 errors")][:20]


def driver72(kver: str, root: str, out: str, ko: str, checkpatch: str, kdir: str) -> int:
    """Suite `driver72`'s checks of what scripts/lib/driver.sh made in OUT:
    the sid root ROOT, nfabric.ko at KO (empty: the build failed,
    OUT/build.err says why), checkpatch.pl at CHECKPATCH (empty: not taken)."""
    tap = compiler_check(kver, root, out)
    if not ko:
        emit(tap + lines(read_file(os.path.join(out, "build.err"))) +
             [f"not ok - nfabric.ko builds for {kver} with W=1 and no warning"
              f" ({out}/kmod/build.log)"])
        return 1
    tap += build_checks(kver, out, modinfo(ko, "vermagic"), modinfo(ko, "license"))
    emit(tap)
    # The kernel's own style check over the module's sources (the user-space
    # test in tests/driver/ is QEMU-style C, not kernel code).
    if not checkpatch:
        cp = ["not ok - checkpatch.pl could not be taken from linux-source-6.12"
              " (its error is above)"]
    else:
        files = kernel_sources(kdir)
        log = os.path.join(out, "checkpatch.log")
        status = run(["perl", checkpatch, "--no-tree", "--terse", "--show-types", "-f", *files],
                     cwd=kdir, out=log, err=subprocess.STDOUT, timeout=CHECKPATCH_S)
        cp = checkpatch_check(status, read_file(log), len(files), log)
    emit(cp)
    return 0 if not failed(tap + cp) else 1


COMMANDS = ("driver-suite", "fallback-suite", "pybind-suite", "driver72-suite")


def _env(name: str) -> str:
    value = os.environ.get(name)
    if not value:
        raise RuntimeError(f"{name} is not set (run this through scripts/nfabric)")
    return value


def main(name: str, argv: List[str], boot_vm: Callable, cluster: Cluster,
         guests: Callable[[], None], usage_error: Callable[[str], Exception]) -> int:
    """python3 -m nfmachine NAME ARGV, NAME one of COMMANDS: its status.
    boot_vm, cluster (cmd_cluster), guests and usage_error: __main__'s."""
    logs = os.environ.get("NF_TEST_LOGS") or os.path.join(_env("NF_BUILD"), "test-logs")

    def boot(vm_argv: List[str], log: str) -> int:
        return boot_vm(["--quiet", "--log", log, "--timeout", "900", *vm_argv]).status

    if name == "driver72-suite":
        if len(argv) != 5:
            raise usage_error("driver72-suite takes KVER ROOT OUT KO CHECKPATCH")
        return driver72(*argv, kdir=os.path.join(_env("NF_ROOT"), "guest", "kernel"))
    if argv:
        raise usage_error(f"{name} takes no arguments")
    if name == "pybind-suite":
        return pybind(_env("NF_ROOT"), _env("NF_HOST_BUILD"))
    guests()
    if name == "fallback-suite":
        return fallback(logs, boot)
    return driver(logs, boot, cluster)
