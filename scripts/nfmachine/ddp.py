# SPDX-License-Identifier: GPL-2.0-or-later
"""PyTorch on the device: the `ddp` and `pools` suites and `bench ddp`,
`bench archs`, `bench ef`, `bench hard`, `bench pools` (docs/pytorch.md,
docs/pools.md).

Debian's python3-torch (gloo) and python3-numpy run the hooks of
guest/python/nfabric: on the host each DDP rank is a head of one shared
device served by the device's controller (libnfabric.so, no VM); in VMs
(`cluster`, `pools`) the guests run the host's Python through virtio-9p.

    python3 -m nfmachine ddp-suite | pools-suite
    python3 -m nfmachine bench-ddp | bench-archs | bench-ef | bench-hard |
                         bench-pools [--check] [OPTIONS]

scripts/lib/ddp.sh runs these after installing the packages and building
the host programs (`--check` first: a benchmark's help or its refusal of
bad options, before anything is installed).  A suite prints TAP lines
("ok - ..." / "not ok - ...") and exits 1 if one failed; a benchmark
prints key=value lines, and a step that fails ends it with "nfabric:
error: ..." (status 1).  Every process started is waited for a bounded
time and stopped, with its process group, on every path.
"""

import contextlib
import glob
import json
import os
import re
import shlex
import shutil
import signal
import subprocess
import sys
import threading
import time
from typing import Dict, List, Optional, Sequence, Tuple

from .nfhost import free_port
from .options import Parser, given
from .tap import Tap

PY = "/usr/bin/python3"       # Debian's: a python3 earlier on PATH cannot see its torch
TIMED_OUT = 124
# Bounds of the waits (a run that passes takes a small part of each).
HOST_RUN_S = 1800             # a host DDP run or check of a suite
VM_GRACE_S = 300              # beyond a cluster's or pools' own --timeout
BENCH_RUN_S = 12 * 3600       # a benchmark's run (full studies take hours)
PLOT_S = 120                  # gnuplot
STOP_S = 10                   # SIGTERM to SIGKILL

PARAMS = r'"params": "[0-9a-f]*"'
TRAFFIC = r'"traffic_pct": [0-9.]*'
TRAFFIC_ALL = r'"traffic_pct_all": [0-9.]*'
ACC = r'"acc": [0-9.]*'
PLANNED = r'"planned_pct": [0-9.]*'
FP32_LAYERS = r'"fp32_layers": [^]]*]'
PARAMS_TOTAL = r'"params_total": [0-9]*'
VM_ENV = ("export GLOO_SOCKET_IFNAME=eth0 ATEN_CPU_CAPABILITY=default"
          " OPENBLAS_CORETYPE=Prescott DNNL_MAX_CPU_ISA=SSE41")
GUEST_HOST = "169.254.0.1"    # the first guest on the VMs' own link


class BenchError(RuntimeError):
    """A step of a benchmark failed: "nfabric: error: MESSAGE", status 1."""


class Usage(Exception):
    """A bad option: the message on stderr, status 2."""


# ---- the run's paths and processes -----------------------------------------

class Ctx:
    """The paths of this run (scripts/nfabric gives them in the environment)."""

    def __init__(self) -> None:
        self.root = need_env("NF_ROOT")
        self.build = need_env("NF_BUILD")
        self.host_build = need_env("NF_HOST_BUILD")
        self.shm = need_env("NF_RUN_SHM")
        self.tmp = need_env("NF_RUN_TMP")
        self.tap = Tap(numbered=False)      # "ok - ...", as the guests' lines

    def py_path(self) -> str:
        """The project's package, and its checks (tests/python)."""
        return (os.path.join(self.root, "guest", "python") + ":" +
                os.path.join(self.root, "tests", "python"))

    def py_env(self) -> Dict[str, str]:
        """The environment of a host run: the project's package, its library."""
        env = dict(os.environ)
        env["PYTHONPATH"] = self.py_path()
        env["NFABRIC_LIB"] = os.path.join(self.host_build, "guest", "libnfabric.so")
        return env

    def shm_file(self, name: str) -> str:
        return os.path.join(self.shm, name)


def need_env(name: str) -> str:
    value = os.environ.get(name)
    if not value:
        raise RuntimeError(f"{name} is not set (run this through scripts/nfabric)")
    return value


def stop_group(proc: subprocess.Popen) -> None:
    """Stop what is left of PROC's process group (SIGTERM, then SIGKILL
    after STOP_S s) and reap PROC."""
    for sig in (signal.SIGTERM, signal.SIGKILL):
        try:
            os.killpg(proc.pid, sig)
        except (ProcessLookupError, PermissionError):
            break
        deadline = time.monotonic() + STOP_S
        while time.monotonic() < deadline and group_alive(proc.pid):
            proc.poll()                   # a leader that ended is reaped
            time.sleep(0.1)
        if not group_alive(proc.pid):
            break
    with contextlib.suppress(subprocess.TimeoutExpired):
        proc.wait(timeout=STOP_S)


def group_alive(pgid: int) -> bool:
    try:
        os.killpg(pgid, 0)
    except (ProcessLookupError, PermissionError):
        return False
    return True


def _open(target, files: contextlib.ExitStack):
    """A path is opened for writing; DEVNULL, PIPE or None pass through."""
    return files.enter_context(open(target, "w")) if isinstance(target, str) else target


def run(cmd: Sequence[str], *, timeout: float, cwd: Optional[str] = None,
        env: Optional[Dict[str, str]] = None, out=None, err=None,
        stdin: Optional[str] = None) -> int:
    """CMD in a process group of its own; its status, TIMED_OUT (said on
    ERR or stderr) if it ran TIMEOUT s.  OUT/ERR: a file to write, DEVNULL,
    subprocess.STDOUT, or None (ours).  Its group is stopped on every path."""
    sys.stdout.flush()
    sys.stderr.flush()
    with contextlib.ExitStack() as files:
        proc = subprocess.Popen(list(cmd), cwd=cwd, env=env, stdout=_open(out, files),
                                stderr=_open(err, files), start_new_session=True,
                                stdin=subprocess.PIPE if stdin is not None else None,
                                text=True)
        try:
            if stdin is not None:
                proc.communicate(stdin, timeout=timeout)
            return proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            stop_group(proc)
            note = f"nfmachine ddp: {shlex.join(cmd)}: stopped after {timeout:.0f} s\n"
            if isinstance(err, str):
                files.close()
                with open(err, "a") as f:
                    f.write(note)
            else:
                sys.stderr.write(note)
            return TIMED_OUT
        finally:
            stop_group(proc)


def run_tee(cmd: Sequence[str], path: str, *, timeout: float, cwd: str,
            env: Dict[str, str]) -> int:
    """CMD's standard output on ours and in PATH (as `| tee PATH`); its
    status, TIMED_OUT if it ran TIMEOUT s."""
    sys.stdout.flush()
    proc = subprocess.Popen(list(cmd), cwd=cwd, env=env, stdout=subprocess.PIPE,
                            start_new_session=True, text=True)
    fired = threading.Event()

    def expire() -> None:
        fired.set()
        print(f"nfmachine ddp: {shlex.join(cmd)}: stopped after {timeout:.0f} s", file=sys.stderr)
        stop_group(proc)
    timer = threading.Timer(timeout, expire)
    timer.start()
    try:
        with open(path, "w") as f:
            for line in proc.stdout:
                sys.stdout.write(line)
                f.write(line)
        status = proc.wait(timeout=STOP_S)
        return TIMED_OUT if fired.is_set() else status
    finally:
        timer.cancel()
        stop_group(proc)


def stop_on_signals() -> None:
    """SIGTERM/SIGHUP end this process through the finally clauses (every
    process started is stopped), not by the default action."""
    def handler(signum, _frame):
        raise SystemExit(128 + signum)
    for s in (signal.SIGTERM, signal.SIGHUP):
        signal.signal(s, handler)


# ---- text as the shell's grep saw it ------------------------------------------

def read(path: str) -> str:
    """PATH's text; empty if it is missing."""
    try:
        with open(path, errors="replace") as f:
            return f.read()
    except OSError:
        return ""


def read_all(paths: Sequence[str]) -> str:
    return "".join(read(p) for p in paths)


def lines(text: str) -> List[str]:
    """TEXT's lines, without their newlines."""
    if not text:
        return []
    parts = text.split("\n")
    return parts[:-1] if text.endswith("\n") else parts


def grep(text: str, pattern: str) -> List[str]:
    """The lines of TEXT in which PATTERN (a regular expression) matches."""
    rx = re.compile(pattern)
    return [ln for ln in lines(text) if rx.search(ln)]


def grep_o(text: str, pattern: str) -> List[str]:
    """Every match of PATTERN in TEXT, line by line (grep -o)."""
    rx = re.compile(pattern)
    return [m.group(0) for ln in lines(text) for m in rx.finditer(ln) if m.group(0)]


def count(text: str, fixed: str) -> int:
    """The lines of TEXT that hold FIXED (grep -c)."""
    return sum(fixed in ln for ln in lines(text))


def uniq(values: Sequence[str]) -> List[str]:
    """sort -u."""
    return sorted(set(values))


def flat(text: str, last: Optional[int] = None) -> str:
    """TEXT's last LAST lines (all by default), newlines made spaces
    (`tail -n LAST | tr '\\n' ' '`)."""
    if last is not None:
        body = lines(text)[-last:]
        text = "\n".join(body) + ("\n" if text.endswith("\n") and body else "")
    return text.replace("\n", " ")


def nl(values: Sequence[str]) -> str:
    """Values a line, as a command substitution gives them."""
    return "\n".join(values)


def rows_of(text: str) -> List[dict]:
    """The JSON rows (one a line, from "{") of a run's output."""
    return [json.loads(ln) for ln in lines(text) if ln.startswith("{")]


def tap_all(tap: Tap, checks: Sequence[Tuple[bool, str]]) -> bool:
    """A TAP line for each (good, text); True if every one is good."""
    return all([tap.ok(good, text) for good, text in checks])


def remove(*paths: str) -> None:
    for p in paths:
        if os.path.isdir(p) and not os.path.islink(p):
            shutil.rmtree(p, ignore_errors=True)
        else:
            with contextlib.suppress(FileNotFoundError):
                os.remove(p)


# ---- guests -------------------------------------------------------------------

def vm_script(c: Ctx, path: str, commands: Sequence[str]) -> None:
    """A script the guests run with the host's Python (chroot /host: the
    host's root file system over virtio-9p), with the same float kernels
    as the host (--portable-math's environment)."""
    head = ["#!/bin/sh",
            f"export PYTHONPATH={shlex.quote(c.py_path())}"
            f" NFABRIC_LIB={shlex.quote(os.path.join(c.host_build, 'guest', 'libnfabric.so'))}",
            VM_ENV]
    with open(path, "w") as f:
        f.write("\n".join([*head, *commands]) + "\n")


def vm_run(d: str, script: str, out: str, timeout_s: int = 900) -> int:
    """2 guests, one shared device, the host's file system, a link between
    them (`scripts/nfabric cluster`); each runs SCRIPT under chroot /host.
    Its output in OUT; its status."""
    cmd = [PY, "-m", "nfmachine", "cluster", "--hosts", "2", "--hostfs", "--net",
           "--cpus", "1", "--mem", "2G", "--cxl-mem", "512M", "--timeout", str(timeout_s),
           "--dir", d, "--run", f"chroot /host /bin/sh {shlex.quote(script)}"]
    return run(cmd, out=out, err=subprocess.STDOUT, timeout=timeout_s + VM_GRACE_S)


# ---- the ddp suite ----------------------------------------------------------------

DDP_MODES = ("gbinary", "gternary --error-feedback worker", "gbinary --error-feedback server",
             "layer_aware --warmup 3 --error-feedback both",
             "layer_aware --admission last_linear", "fp32",
             "layer_aware --task pairs --budget-pct 20")
ARCH_SPECS = ("resnet18 --classes 10 --mode layer_aware --steps 2 --probe 1 --budget-pct 5",
              "resnet18 --classes 100 --mode gternary --steps 1",
              "distilbert --classes 2 --mode gbinary --steps 1 --batch 2 --seq 16")
VM_ARGS = ("--portable-math", "--mode", "gbinary", "--steps", "3", "--train-samples", "2000",
           "--test-samples", "200")
VM_RESNET = ("--arch", "resnet18", "--classes", "10", "--mode", "gbinary", "--steps", "2",
             "--portable-math", "--master-port", "29660")


def check_run_json(rows: List[dict], mode: str) -> List[Tuple[bool, str]]:
    """The pieces a DDP run of MODE must show in its ROWS: the server-side
    EF state the same on every rank; the sensitivity admission's set
    within its budget (planned traffic <= budget, recomputed from the
    layers it kept) and not empty; the fixed rule's set the head alone."""
    try:
        r0 = [r for r in rows if r["rank"] == 0][0]
    except (IndexError, KeyError) as exc:
        return [(False, f"{mode}: no row of rank 0 in the run's JSON ({exc!r})")]
    out: List[Tuple[bool, str]] = []
    if "server" in mode or "both" in mode:
        same = all(r.get("ef_state_identical") for r in rows)
        out.append((same, f"{mode}: server-side EF state identical on every rank"))
    if mode.startswith("layer_aware") and "last_linear" not in mode:
        out.append(admission_check(r0, mode))
    if "last_linear" in mode:
        good = r0.get("fp32_layers") == ["head"]
        out.append((good, f"{mode}: the fixed rule keeps the head on FP32"
                          f" ({r0.get('fp32_layers')})"))
    return out


def admission_check(r0: dict, mode: str) -> Tuple[bool, str]:
    """Rank 0's admission: within its budget, not empty, its planned share
    the one its kept layers make."""
    planned, budget = r0.get("planned_pct"), r0.get("budget_pct")
    within = planned is not None and budget is not None and planned <= budget + 1e-9
    kept = r0.get("fp32_layers") or []
    sizes = {a["layer"]: a["params"] for a in r0.get("admission", [])}
    total = sum(sizes.values())
    # The planned share recomputed from the layers it kept.
    again = (100.0 * (total / 32 + sum(sizes.get(k, 0) for k in kept) * 31 / 32) / total
             if total else -1)
    good = bool(within and kept and abs(again - planned) < 1e-3)
    return (good, "%s: the admission kept %s on FP32, %.2f %% of FP32 planned within the"
                  " %.1f %% budget" % (mode, ",".join(kept), -1 if planned is None else planned,
                                       -1 if budget is None else budget))


def mode_run_checks(mode: str, text: str, err: str) -> List[Tuple[bool, str]]:
    """A 2-rank, 12-step DDP run of MODE (its JSON TEXT, its stderr ERR):
    both ranks end equal, rank 0 reports a loss; then check_run_json."""
    out = nl(grep(text, '"rank": 0'))
    if count(text, '"params_identical": true') == 2 and re.search(r'"loss_last": [0-9]', out):
        head = (True, f"DDP {mode}, 2 ranks, 12 steps: every rank ends with the same parameters"
                      f" ({nl(grep_o(out, TRAFFIC))},"
                      f" {nl(grep_o(out, ACC))})")
        return [head, *check_run_json(rows_of(text), mode)]
    return [(False, f"DDP {mode}, 2 ranks: {flat(err, 3)} {flat(text)}")]


def arch_name(spec: str) -> str:
    """The files' name of an architecture's run: arch-ARCH-classesN."""
    return f"arch-{spec.split()[0]}-{nl(grep_o(spec, 'classes [0-9]*')).replace(' ', '')}"


def arch_run_checks(spec: str, text: str, err: str) -> List[Tuple[bool, str]]:
    """One step of an architecture (SPEC) on 2 host heads: identical
    parameters; with layer_aware, the head kept on FP32."""
    if not (count(text, '"params_identical": true') == 2
            and re.search(r'"traffic_pct_all": [0-9]', text)):
        return [(False, f"{spec}: {flat(err, 3)} {flat(text)}")]
    total = grep_o(text, PARAMS_TOTAL)[:1]
    out = [(True, f"{spec}: identical parameters on both ranks ({nl(total)},"
                  f" {nl(grep_o(text, TRAFFIC_ALL))})")]
    if "layer_aware" in spec:
        if '"head_fp32": true' in text:
            out.append((True, f"{spec}: the sensitivity admission keeps the classifier head on"
                              f" FP32 ({nl(grep_o(text, PLANNED))} within 5 %)"))
        else:
            out.append((False, f"{spec}: the admission left the classifier head low-bit:"
                               f" {nl(grep_o(text, FP32_LAYERS))}"))
    return out


def one_value(host: List[str], guests: List[str]) -> bool:
    """HOST's one distinct value, and the guests' the same."""
    return bool(host) and host == guests and len(host) == 1



def vm_ddp_check(host_json: str, logs: str) -> Tuple[bool, str]:
    """The 2-VM DDP run (the guests' console LOGS) against the host run."""
    hp = uniq(grep_o(host_json, PARAMS))
    vp = uniq(grep_o(nl([ln for ln in lines(logs) if not ln.startswith("# archs")]), PARAMS))
    if one_value(hp, vp):
        return (True, "a 2-VM DDP run (3 steps, G-Binary) ends with the same parameters as the"
                      f" host run with the same seed, bit for bit ({hp[0]})")
    return (False, f"2-VM DDP vs host: VMs {' '.join(vp)}, host {' '.join(hp)}")


def vm_resnet_check(host_json: str, logs: str, err: str) -> Tuple[bool, str]:
    """ResNet-18 in the 2 VMs ("# archs" lines of LOGS): both ranks equal,
    and equal to the same run on 2 host heads (HOST_JSON, its stderr ERR)."""
    archs = nl([ln for ln in lines(logs) if ln.startswith("# archs")])
    hp, vp = uniq(grep_o(host_json, PARAMS)), uniq(grep_o(archs, PARAMS))
    if one_value(hp, vp) and count(archs, '"params_identical": true') == 2:
        return (True, "ResNet-18 (11 181 642 parameters) in 2 VMs, 2 G-Binary steps through the"
                      " shared device: both guests end with the parameters of the same run on"
                      f" 2 host heads, bit for bit ({hp[0]}, {nl(grep_o(archs, TRAFFIC))})")
    return (False, f"ResNet-18 in 2 VMs vs host: VMs {' '.join(vp)}, host {' '.join(hp)}"
                   f" ({flat(err, 2)})")


def vm_tap_lines(logs: str) -> List[str]:
    """The guests' own TAP lines, marked [VM]; then their import times."""
    out = [re.sub(r"^((?:not )?ok [0-9]* - )", r"\1[VM] ", ln, count=1)
           for ln in grep(logs, r"^(ok|not ok)")]
    return out + [re.sub(r"^# ", "# VM ", ln, count=1)
                  for ln in lines(logs) if "import-torch-seconds" in ln]


def ddp_train(c: Ctx, d: str, name: str, args: Sequence[str], ranks: int = 2,
              module: str = "nfabric.examples.train", nice: Optional[int] = None,
              state: str = "ddp-test", cwd: Optional[str] = None,
              timeout: float = HOST_RUN_S) -> Tuple[str, str, int]:
    """A DDP job of RANKS host heads, each head of one device (its files
    STATE.state and STATE.mem in the run's /dev/shm; the job's own default
    if STATE is empty): stdout in D/NAME.json, stderr in D/NAME.err, run
    in CWD (default D).  The two texts and the job's status."""
    cmd = [*(["nice", "-n", str(nice)] if nice is not None else []), PY, "-m", module,
           "--spawn", str(ranks), *args, "--master-port", str(free_port())]
    if state:
        cmd += ["--state", c.shm_file(f"{state}.state"), "--mem", c.shm_file(f"{state}.mem")]
    js, err = os.path.join(d, f"{name}.json"), os.path.join(d, f"{name}.err")
    status = run(cmd, cwd=cwd or d, env=c.py_env(), out=js, err=err, timeout=timeout)
    return read(js), read(err), status


def suite_ddp_host(c: Ctx, d: str) -> bool:
    """The DDP modes on 2 host heads, then the paper's architectures."""
    good = True
    print("# DDP (gloo on loopback for the process group) through the device")
    for mode in DDP_MODES:
        text, err, _ = ddp_train(c, d, mode.replace(" ", "_"),
                              ["--mode", *mode.split(), "--steps", "12", "--train-samples",
                               "4000", "--test-samples", "500"])
        good &= tap_all(c.tap, mode_run_checks(mode, text, err))
    print("# the paper's architectures: a step through the device, 2 ranks (host heads)")
    for spec in ARCH_SPECS:
        text, err, _ = ddp_train(c, d, arch_name(spec), ["--arch", *spec.split()],
                              module="nfabric.examples.archs", nice=10, state="ddp-arch")
        good &= tap_all(c.tap, arch_run_checks(spec, text, err))
    return good


def ddp_vm_commands() -> List[str]:
    """What each guest of the ddp suite runs: the time to import torch, the
    self-test, a DDP run, ResNet-18 (its lines marked "# archs")."""
    return ['start=$(cut -d" " -f1 /proc/uptime)',
            '/usr/bin/python3 -c "import torch" && echo "# import-torch-seconds'
            ' $(awk -v a=$start "{print \\$1 - a}" /proc/uptime)"',
            "/usr/bin/python3 -m nfcheck.selftest --guest --rank $NFABRIC_RANK --ranks 2"
            " || exit 1",
            f"/usr/bin/python3 -m nfabric.examples.train {' '.join(VM_ARGS)}"
            f" --master-addr {GUEST_HOST} || exit 1",
            f"/usr/bin/python3 -m nfabric.examples.archs --guest {' '.join(VM_RESNET)}"
            f" --master-addr {GUEST_HOST} | sed 's/^/# archs /'"]


def suite_ddp_vms(c: Ctx, d: str) -> bool:
    """2 guests sharing a device: the self-test, a DDP run and ResNet-18,
    each equal bit for bit to the same run on host heads."""
    print("# in VMs: 2 guests, one shared device, the host's Python and PyTorch (virtio-9p)")
    vm = os.path.join(d, "vm")
    os.makedirs(vm, exist_ok=True)
    script, out = os.path.join(vm, "run.sh"), os.path.join(vm, "cluster.out")
    vm_script(c, script, ddp_vm_commands())
    if vm_run(vm, script, out) == 0:
        good = c.tap.ok(True, "2 VMs ran the self-test and a DDP run through the shared device")
    else:
        good = c.tap.ok(False, f"2 VMs: {flat(read(out), 3)}")
    logs = read_all(sorted(glob.glob(os.path.join(vm, "host*.log"))))
    c.tap.lines(vm_tap_lines(logs))
    host, _, _ = ddp_train(c, d, "host-portable", VM_ARGS)
    good &= c.tap.ok(*vm_ddp_check(host, logs))
    # ResNet-18 in the same 2 VMs: both ranks end equal, and equal to the
    # same run of 2 host heads, bit for bit.
    host, err, _ = ddp_train(c, d, "host-resnet18", VM_RESNET, module="nfabric.examples.archs")
    return c.tap.ok(*vm_resnet_check(host, logs, err)) and good


def suite_ddp(c: Ctx) -> int:
    """The ddp suite (tests/meson.build): its TAP on stdout; 1 if a check failed."""
    d = os.path.join(c.build, "test-logs", "ddp")
    os.makedirs(d, exist_ok=True)
    good = True
    try:
        c.tap.note("the hooks' aggregation against a reference of all ranks' gradients")
        good &= run([PY, "-m", "nfcheck.selftest", "--ranks", "3", "--dir",
                     c.shm_file("selftest")], env=c.py_env(), timeout=HOST_RUN_S) == 0
        good &= suite_ddp_host(c, d)
        good &= suite_ddp_vms(c, d)
    finally:
        remove(c.shm_file("ddp-test.state"), c.shm_file("ddp-test.mem"),
               c.shm_file("ddp-arch.state"), c.shm_file("ddp-arch.mem"), c.shm_file("selftest"))
    return 0 if good else 1


# ---- the pools suite -----------------------------------------------------------

POOL_ARGS = ("--portable-math", "--mode", "gbinary", "--steps", "3", "--train-samples", "2000",
             "--test-samples", "200")


def pools_vm_check(vm_logs: str, host_pools: str, host_flat: str) -> Tuple[bool, str]:
    """The 4 guests' parameters (their console LOGS) equal one another, the
    same job's on host heads in 2 pools and on one device of 4 heads."""
    vp = uniq(grep_o(vm_logs, PARAMS))
    n = count(vm_logs, '"params_identical": true')
    hp, fp = uniq(grep_o(host_pools, PARAMS)), uniq(grep_o(host_flat, PARAMS))
    if n == 4 and len(vp) <= 1 and hp and vp == hp and hp == fp:
        return (True, "the 4 guests end with the same parameters, equal bit for bit to the job"
                      f" on host heads (2 pools x 2) and to one device with 4 heads ({hp[0]})")
    return (False, f"2 x 2 VMs: guests {' '.join(vp)} ({n} identical), host pools"
                   f" {' '.join(hp) or 'none'}, one device {' '.join(fp) or 'none'}")


def pools_vms(c: Ctx, d: str) -> bool:
    """2 pools of 2 VMs (scripts/nfabric pools) train 3 G-Binary steps
    with DDP over their own network, the direct map on: every guest ends
    with the parameters of the same job on host heads (2 pools x 2), and
    of one device with 4 heads, bit for bit (--portable-math)."""
    remove(d)
    os.makedirs(d)
    script, out = os.path.join(d, "run.sh"), os.path.join(d, "pools.out")
    vm_script(c, script, [
        f"/usr/bin/python3 -m nfabric.examples.train {' '.join(POOL_ARGS)} --pools 2"
        " --exchange counts --rank $NFABRIC_GLOBAL_RANK --world $NFABRIC_WORLD"
        f" --master-addr {GUEST_HOST} --master-port 29517 --timeout-s 600"])
    props = os.environ.get("NF_POOLS_VM_PROPS")
    # The direct map on (the default): the guests read their counter areas
    # through its traps (docs/pools.md: the bug this found).
    cmd = [os.path.join(c.root, "scripts", "nfabric"), "pools", "--pools", "2", "--hosts", "2",
           "--hostfs", "--cpus", "1", "--mem", "2G", "--cxl-mem", "512M",
           *(["--device-props", props] if props else []),
           "--timeout", "1200", "--dir", d, "--run", f"chroot /host /bin/sh {shlex.quote(script)}"]
    if run(cmd, out=out, err=subprocess.STDOUT, timeout=1200 + VM_GRACE_S) == 0:
        good = c.tap.ok(True, "scripts/nfabric pools: 2 pools x 2 VMs (direct map on: counter"
                              " areas read through its traps) ran DDP (gloo over their own"
                              " network, a hub on unix sockets) through 2 devices")
    else:
        good = c.tap.ok(False, f"scripts/nfabric pools, 2 x 2 VMs: {flat(read(out), 4)}")
    logs = read_all(sorted(glob.glob(os.path.join(d, "pool*", "host*.log"))))
    pools, _, _ = ddp_train(c, d, "host-pools", ["--pools", "2", *POOL_ARGS],
                         ranks=4, state="", cwd=c.tmp)
    flat_run, _, _ = ddp_train(c, d, "host-flat", POOL_ARGS, ranks=4, state="", cwd=c.tmp)
    good = c.tap.ok(*pools_vm_check(logs, pools, flat_run)) and good
    for m in grep_o(nl(grep(read(os.path.join(d, "pool0", "host0.log")), '"net_bytes_per_step"')),
                    r'"net_bytes_per_step": \{[^}]*\}'):
        c.tap.note(f"VM rank 0 {m}")
    return good


def suite_pools(c: Ctx) -> int:
    """The pools suite: nfcheck.poolcheck on host heads, then 2 x 2 VMs."""
    good = run([PY, "-m", "nfcheck.poolcheck"], cwd=c.tmp, env=c.py_env(),
               timeout=HOST_RUN_S) == 0
    print("# in VMs: 2 pools x 2 guests, each pool one shared device, one network of their own")
    good = pools_vms(c, os.path.join(c.build, "test-logs", "pools-vm")) and good
    return 0 if good else 1


# ---- benchmarks: options ----------------------------------------------------------

HELP = {
    "ddp": """\
usage: scripts/nfabric bench ddp [--steps N] [--vm-steps N] [--parts LIST]
LIST: a comma-separated subset of host,hard,archs,vm (default: all).
host: 4 DDP ranks on the host, each a head of one shared device (no VM):
allreduce (gloo, the baseline), fp32, gbinary, gternary, layer_aware,
the low-bit ones with and without (server-side) error feedback, IID and
non-IID shards;
hard: the hard configuration (bench hard: acc_MODE_hard=, recovered_pct_hard=);
archs: the paper's architectures (bench archs: traffic_pct_layer_aware_ARCH=);
vm: 2 VMs (--vm-steps, default 20): gloo allreduce over the VMs' link
against G-Binary through the device: exchange_speedup_vs_gloo=; then a
ResNet-18-sized gradient (11 689 512 float32) exchanged between 2 VMs,
gloo allreduce, G-Binary trapped and posted windows (packed signs written,
round completed and waited for, majority read back), the median of 5
exchanges after a warm-up each: resnet_exchange_{gloo,trapped,posted}_ms=,
resnet_exchange_posted_vs_{gloo,trapped}=,
resnet_exchange_posted_equal_trapped=1|0.
""",
    "archs": """\
usage: scripts/nfabric bench archs [--steps N] [--budget-pct P]
ResNet-18 (10 and 100 classes) and a DistilBERT-sized encoder, 2 ranks on
host heads of one device, random data, N steps (the first a probe step on
FP32 for the sensitivity admission): traffic_pct_MODE_ARCH= from the pool
statistics, the layers layer_aware keeps on FP32 within P % (default 5).
""",
    "ef": """\
usage: scripts/nfabric bench ef [--seeds N] [--steps N]
nfabric.examples.study --study ef: 4 ranks on host heads, Fashion-MNIST,
every EF form against none at the same steps, N seeds each:
acc_CONFIG_SHARDS_mean=, _std=, _min=, _max=, _seeds=; and what EF did:
ef_residual_ratio_{first,last}_CONFIG_SHARDS= (|e| / |g|, worker EF) and
scale_{first,last}_CONFIG_SHARDS= (the compressor's scale), first and last tenth.
""",
    "hard": """\
usage: scripts/nfabric bench hard [--seeds N] [--steps N]
nfabric.examples.study --study hard: 4 ranks on host heads, the task
--task pairs (100 classes), fp32 / gbinary / gternary / layer_aware
(sensitivity admission, 20 % budget, G-Binary or G-Ternary on the rest),
N seeds each: acc_CONFIG_hard= (mean), _std=, _min=, _max=, _seeds=,
traffic_pct_CONFIG_hard=, fp32_layers_CONFIG_hard= ("undecided" for a run
that ended within the admission's probe steps), recovered_pct_hard=
(the share of the fp32 - gbinary gap layer_aware closes, %; n/a: no gap).
""",
}
DEFAULTS = {"ddp": {"--steps": "400", "--vm-steps": "20", "--parts": "host,hard,archs,vm"},
            "archs": {"--steps": "3", "--budget-pct": "5.0"},
            "ef": {"--seeds": "3", "--steps": "300"},
            "hard": {"--seeds": "3", "--steps": "300"}}
PARTS = ("host", "hard", "archs", "vm")


def options(name: str, argv: Sequence[str]) -> Optional[Dict[str, str]]:
    """bench NAME's options in ARGV (each takes a value), checked; None if
    -h/--help came first.  Raises Usage with the message to print."""
    vals = dict(DEFAULTS[name])
    ns = Parser(f"bench {name}", "", Usage, "option", f"bench {name}: ").options(
        tuple(vals)).parse(argv)
    if ns is None:
        return None
    for a, v in given(ns, tuple(vals)).items():
        if not v:
            raise Usage(f"bench {name}: {a} needs a value")
        vals[a] = v
    check_options(name, vals)
    return vals


def is_count(value: str, least: int = 0) -> bool:
    """VALUE is a decimal integer of at least LEAST."""
    return re.fullmatch(r"[0-9]+", value) is not None and int(value) >= least


def check_options(name: str, o: Dict[str, str]) -> None:
    """The values bench NAME refuses (Usage)."""
    if name == "ddp":
        if not (is_count(o["--steps"]) and is_count(o["--vm-steps"])):
            raise Usage("bench ddp: bad --steps or --vm-steps")
        for part in o["--parts"].replace(",", " ").split():
            if part not in PARTS:
                raise Usage(f'bench ddp: unknown part "{part}" in --parts (host, hard, archs, vm)')
    elif name == "archs":
        if not (is_count(o["--steps"], 2)
                and re.fullmatch(r"[0-9]+(\.[0-9]+)?", o["--budget-pct"])):
            raise Usage("bench archs: --steps must be an integer >= 2, --budget-pct a number")
    elif not (is_count(o["--seeds"], 1) and is_count(o["--steps"], 1)):
        raise Usage(f"bench {name}: --seeds and --steps must be positive integers")


# ---- bench ddp --------------------------------------------------------------------

HOST_MODES = ("allreduce", "fp32", "gbinary", "gbinary --error-feedback server", "gternary",
              "gternary --error-feedback server", "layer_aware",
              "layer_aware --error-feedback server")


def rank0(text: str, what: str) -> dict:
    """The JSON line of rank 0 in TEXT (the output of WHAT)."""
    found = [ln for ln in lines(text) if '"rank": 0' in ln]
    if not found:
        raise BenchError(f"{what}: no line of rank 0 in its output")
    return json.loads(found[0])


def host_result(r0: dict, key: str, shards: str) -> Tuple[List[str], str]:
    """A host run's key=value lines, and its row of results.tsv."""
    out = ["acc_%s_%s=%.4f" % (key, shards, r0["acc"]),
           "traffic_pct_%s_%s=%.3f" % (key, shards, r0["traffic_pct"]),
           "backward_s_%s_%s=%.3f" % (key, shards, r0["backward_seconds"])]
    if shards == "iid":
        out.append("traffic_pct_%s=%.3f" % (key, r0["traffic_pct"]))
    return out, "%s\t%s\t%.4f\t%.3f\n" % (key, shards, r0["acc"], r0["traffic_pct"])


def acc_ratios(tsv: str) -> List[str]:
    """Each low-bit mode's accuracy against allreduce's, from results.tsv."""
    a = {(r[0], r[1]): float(r[2]) for r in (ln.split("\t") for ln in lines(tsv))}
    return ["acc_%s_vs_allreduce_%s=%.3f" % (k, s, a[(k, s)] / a[("allreduce", s)])
            for s in ("iid", "noniid") for k in ("gbinary", "gternary", "layer_aware")]


def ddp_plot(d: str, steps: int) -> str:
    """gnuplot's script of docs/img/ddp-acc-traffic.png."""
    return f"""\
set terminal pngcairo noenhanced size 900,560 font ",11"
set output '{d}/ddp-acc-traffic.png'
set title "DDP on Fashion-MNIST, 4 ranks, {steps} steps: accuracy vs gradient traffic"
set xlabel "gradient traffic, % of FP32 (log)"
set ylabel "test accuracy"
set logscale x
set xrange [1:300]
set grid
set key bottom right
plot '< grep -P "\\tiid\\t" {d}/results.tsv' using 4:3:1 with labels point pt 7 offset 0,1 title 'IID', \\
     '< grep -P "\\tnoniid\\t" {d}/results.tsv' using 4:3:1 with labels point pt 5 offset 0,-1 title 'non-IID'
"""


def plot(script: str, what: str) -> None:
    if run(["gnuplot"], stdin=script, timeout=PLOT_S) != 0:
        raise BenchError(f"{what}: gnuplot failed")


def bench_ddp_host(c: Ctx, d: str, steps: int) -> None:
    """Every mode on Fashion-MNIST, 4 host ranks, IID and non-IID, and the
    accuracy/traffic plot."""
    tsv = os.path.join(d, "results.tsv")
    open(tsv, "w").close()
    print(f"steps={steps}")
    print("ranks=4")
    try:
        for shards in ("iid", "noniid"):
            # Error feedback: the server-side form (the one that helps; the
            # forms side by side over seeds: bench ef).
            for mode in HOST_MODES:
                key = mode.replace(" --error-feedback server", "_ef", 1)
                text, _, status = ddp_train(c, d, f"{key}-{shards}",
                                            ["--mode", *mode.split(), "--shards", shards,
                                             "--steps", str(steps)], ranks=4,
                                            state="bench-ddp", timeout=BENCH_RUN_S)
                if status:
                    raise BenchError(f"bench ddp: {mode} {shards} failed ({d}/{key}-{shards}.err)")
                out, row = host_result(rank0(text, f"bench ddp: {mode} {shards}"), key, shards)
                print("\n".join(out))
                with open(tsv, "a") as f:
                    f.write(row)
    finally:
        remove(c.shm_file("bench-ddp.state"), c.shm_file("bench-ddp.mem"))
    print("\n".join(acc_ratios(read(tsv))))
    plot(ddp_plot(d, steps), "bench ddp")
    shutil.copyfile(os.path.join(d, "ddp-acc-traffic.png"),
                    os.path.join(c.root, "docs", "img", "ddp-acc-traffic.png"))
    print("plot=docs/img/ddp-acc-traffic.png")


def field2(values: Sequence[str]) -> str:
    """awk '{print $2}' over VALUES, a line each."""
    return nl([(v.split() + ["", ""])[1] for v in values])


def awk_number(text: str) -> float:
    """TEXT as awk reads a number: its leading numeric part, else 0."""
    m = re.match(r"\s*[-+]?(\d+\.?\d*|\.\d+)([eE][-+]?\d+)?", text)
    return float(m.group(0)) if m else 0.0


def vm_result(m: str, js: str) -> Tuple[List[str], str]:
    """Rank 0's line of a 2-VM run of M (JS): its key=value lines and its
    exchange seconds."""
    exch = field2(grep_o(js, r'"exchange_seconds": [0-9.]*'))
    return [f"vm_exchange_s_{m}={exch}", f"vm_acc_{m}={field2(grep_o(js, ACC))}",
            f"vm_traffic_pct_{m}={field2(grep_o(js, TRAFFIC))}"], exch


def vm_host_result(m: str, js: str, hj: str) -> List[str]:
    """The same run on 2 host heads (rank 0's line HJ) beside the VMs' (JS)."""
    same = nl(grep_o(js, PARAMS)) == nl(grep_o(hj, PARAMS))
    return [f"host_acc_{m}={field2(grep_o(hj, ACC))}",
            f"host_traffic_pct_{m}={field2(grep_o(hj, TRAFFIC))}",
            f"vm_params_equal_host_{m}={'yes' if same else 'no'}"]


def speedup(allreduce: str, gbinary: str) -> str:
    a, b = awk_number(allreduce), awk_number(gbinary)
    return "exchange_speedup_vs_gloo=%.3f" % (a / b if b > 0 else 0)


# The ResNet-18-sized exchange (nfabric.exchangebench): timed exchanges
# of each way after one warm-up, gloo and the posted window; of the trapped
# window (each about 0.1-0.2 s in the VMs: 1.4 MB of 8-byte traps each way).
RESNET_REPS = 5
RESNET_TRAPPED_REPS = 5
RESNET_TARGETS = (("posted_vs_gloo", 10), ("posted_vs_trapped", 10))


def median(values: Sequence[float]) -> float:
    """The median of VALUES (of an even count, the mean of the middle two)."""
    v = sorted(values)
    if not v:
        raise ValueError("median of nothing")
    m = len(v) // 2
    return v[m] if len(v) % 2 else (v[m - 1] + v[m]) / 2


def resnet_exchange_row(logs: str) -> dict:
    """Rank 0's line of nfabric.exchangebench in a guest's console LOGS."""
    for ln in lines(logs.replace("\r", "")):
        i = ln.find("{")
        if i >= 0 and '"bench": "resnet_exchange"' in ln and '"rank": 0,' in ln:
            return json.loads(ln[i:])
    raise BenchError("bench ddp: no line of rank 0 from nfabric.exchangebench")


def resnet_exchange_result(row: dict) -> List[str]:
    """The key=value lines of the ResNet-18-sized exchange (ROW: rank 0's
    line): each way's median time (ms) over its timed exchanges, the
    posted window's speed-ups, whether the posted and trapped read-backs
    were equal bit for bit on every rank, and the targets."""
    ms = {k: median(row[f"{k}_ms"]) for k in ("gloo", "trapped", "posted")}

    def ratio(a: float, b: float) -> str:
        return "%.3f" % (a / b if b > 0 else 0)
    p = "resnet_exchange_"
    return [f"{p}elements={row['elements']}", f"{p}packed_bytes={row['packed_bytes']}",
            f"{p}reps={row['reps']}", f"{p}trapped_reps={row['trapped_reps']}",
            *(f"{p}{k}_ms=%.2f" % ms[k] for k in ("gloo", "trapped", "posted")),
            f"{p}posted_vs_gloo={ratio(ms['gloo'], ms['posted'])}",
            f"{p}posted_vs_trapped={ratio(ms['trapped'], ms['posted'])}",
            f"{p}posted_equal_trapped={1 if row['posted_equal_trapped'] else 0}",
            f"{p}majority_ok="
            f"{1 if row['majority_matches_reference'] and row['majority_identical'] else 0}",
            f"{p}pack_ms=%.2f" % row["pack_ms"],
            f"{p}clear_ms=%.2f" % median(row["clear_ms"] or [0.0]),
            *(f"target_{p}{k}={v}" for k, v in RESNET_TARGETS)]


def resnet_exchange_command() -> str:
    """What each guest runs for the ResNet-18-sized exchange."""
    return (f"/usr/bin/python3 -m nfabric.exchangebench --master-addr {GUEST_HOST}"
            f" --reps {RESNET_REPS} --trapped-reps {RESNET_TRAPPED_REPS}")


def bench_resnet_exchange(c: Ctx, d: str) -> None:
    """2 VMs exchange a ResNet-18-sized gradient (11 689 512 float32
    elements) three ways: gloo's allreduce over their link, G-Binary
    through the shared device with a trapped window, with a posted one."""
    md = os.path.join(d, "vm", "resnet-exchange")
    os.makedirs(md, exist_ok=True)
    script = os.path.join(md, "run.sh")
    vm_script(c, script, [resnet_exchange_command()])
    if vm_run(md, script, os.path.join(md, "cluster.out")) != 0:
        raise BenchError(f"bench ddp: the 2-VM ResNet-18 exchange failed ({md})")
    print("\n".join(resnet_exchange_result(
        resnet_exchange_row(read(os.path.join(md, "host0.log"))))))


def bench_ddp_vm(c: Ctx, d: str, vm_steps: int) -> None:
    """2 VMs, the same training, gloo's allreduce over the emulated link
    against G-Binary through the shared device, side by side; and each
    beside the same run on the host.  Then a ResNet-18-sized gradient
    exchanged in 2 VMs: gloo, G-Binary trapped and posted."""
    if vm_steps <= 0:
        return
    ex: Dict[str, str] = {}
    try:
        for m in ("allreduce", "gbinary"):
            md = os.path.join(d, "vm", m)
            os.makedirs(md, exist_ok=True)
            script = os.path.join(md, "run.sh")
            vm_script(c, script, [
                f"/usr/bin/python3 -m nfabric.examples.train --portable-math --mode {m}"
                f" --steps {vm_steps} --train-samples 4000 --test-samples 500"
                f" --master-addr {GUEST_HOST}"])
            if vm_run(md, script, os.path.join(md, "cluster.out")) != 0:
                raise BenchError(f"bench ddp: the 2-VM {m} run failed ({md})")
            js = nl(grep(read(os.path.join(md, "host0.log")), '"rank": 0')).replace("\r", "")
            out, ex[m] = vm_result(m, js)
            print("\n".join(out))
            # The same run on the host: the same accuracy, traffic, parameters.
            hjson = os.path.join(md, "host-run.json")
            cmd = [PY, "-m", "nfabric.examples.train", "--spawn", "2", "--portable-math",
                   "--mode", m, "--steps", str(vm_steps), "--train-samples", "4000",
                   "--test-samples", "500", "--master-port", str(free_port()),
                   "--state", c.shm_file("bench-ddp.state"), "--mem", c.shm_file("bench-ddp.mem")]
            # A short run (--vm-steps): HOST_RUN_S bounds it; a rank that
            # hangs at exit is reported and killed by --spawn (status 124,
            # its stacks in host-run.err).
            herr = os.path.join(md, "host-run.err")
            status = run(cmd, cwd=d, env=c.py_env(), out=hjson, err=herr, timeout=HOST_RUN_S)
            if status != 0:
                raise BenchError(f"bench ddp: host run of {m} failed (status {status}:"
                                 f" {flat(read(herr), 2)}; {herr})")
            print("\n".join(vm_host_result(m, js, nl(grep(read(hjson), '"rank": 0')))))
    finally:
        remove(c.shm_file("bench-ddp.state"), c.shm_file("bench-ddp.mem"))
    print(f"vm_steps={vm_steps}")
    print(speedup(ex["allreduce"], ex["gbinary"]))
    bench_resnet_exchange(c, d)


def bench_ddp(c: Ctx, o: Dict[str, str]) -> None:
    """bench ddp: the parts of --parts, in their order."""
    steps, vm_steps, parts = int(o["--steps"]), int(o["--vm-steps"]), f",{o['--parts']},"
    d = os.path.join(c.build, "bench-ddp")
    os.makedirs(d, exist_ok=True)
    if steps > 0 and ",host," in parts:
        bench_ddp_host(c, d, steps)
    if ",hard," in parts:
        bench_study(c, "hard", {"--seeds": "3", "--steps": DEFAULTS["hard"]["--steps"]})
    if ",archs," in parts:
        bench_archs(c, {"--steps": "3", "--budget-pct": DEFAULTS["archs"]["--budget-pct"]})
    if ",vm," in parts:
        bench_ddp_vm(c, d, vm_steps)


# ---- bench archs, ef, hard ----------------------------------------------------------

ARCH_BENCH = (("resnet18_c10", "resnet18", "10", ("--batch", "4")),
              ("resnet18_c100", "resnet18", "100", ("--batch", "4")),
              ("distilbert", "distilbert", "2", ("--batch", "2", "--seq", "16")))
ARCH_MODES = ("fp32", "gbinary", "gternary", "layer_aware", "layer_aware --admission last_linear")


def archs_result(rows: List[dict], key: str, name: str) -> List[str]:
    """One architecture run's key=value lines (its JSON ROWS); BenchError
    if the ranks' parameters differ."""
    r0 = [r for r in rows if r["rank"] == 0][0]
    if not all(r["params_identical"] for r in rows):
        raise BenchError("bench archs: %s %s: the ranks' parameters differ" % (key, name))
    out = ["params_%s=%d" % (name, r0["params_total"]),
           "traffic_pct_%s_%s=%.3f" % (key, name, r0["traffic_pct"])]
    if key.startswith("layer_aware"):
        kept = r0.get("fp32_layers") or []
        out += ["fp32_layers_%s_%s=%s" % (key, name, ",".join(kept) or "-"),
                "fp32_layer_count_%s_%s=%d" % (key, name, len(kept))]
        if "head" in r0:
            out += ["head_%s=%s" % (name, r0["head"]),
                    "head_fp32_%s_%s=%s" % (key, name, "yes" if r0["head_fp32"] else "no"),
                    "head_sensitivity_rank_%s=%d" % (name, r0["head_rank"]),
                    "ranking_%s=%s" % (name, ",".join(r0.get("ranking", [])))]
    return out


def bench_archs(c: Ctx, o: Dict[str, str]) -> None:
    """ResNet-18 (10, 100 classes) and a DistilBERT-sized encoder, every
    mode, 2 host heads: traffic and the layers kept on FP32."""
    steps, budget = o["--steps"], o["--budget-pct"]
    d = os.path.join(c.build, "bench-archs")
    os.makedirs(d, exist_ok=True)
    print(f"steps={steps}\nbudget_pct={budget}")
    print("paper_traffic_pct_layer_aware_min=3.6\npaper_traffic_pct_layer_aware_max=5.4")
    try:
        for name, arch, classes, extra in ARCH_BENCH:
            for mode in ARCH_MODES:
                key = mode.replace(" --admission last_linear", "_last_linear", 1)
                text, _, status = ddp_train(
                    c, d, f"{key}-{name}", ["--arch", arch, "--classes", classes, *extra,
                                            "--mode", *mode.split(), "--steps", steps,
                                            "--probe", "1", "--budget-pct", budget],
                    module="nfabric.examples.archs", nice=5, state="bench-archs",
                    timeout=BENCH_RUN_S)
                if status:
                    raise BenchError(f"bench archs: {mode} on {name} failed ({d}/{key}-{name}.err)")
                print("\n".join(archs_result(rows_of(text), key, name)))
    finally:
        remove(c.shm_file("bench-archs.state"), c.shm_file("bench-archs.mem"))


def bench_study(c: Ctx, study: str, o: Dict[str, str]) -> None:
    """nfabric.examples.study --study STUDY on host heads (it prints the
    key=value lines), each run's JSON kept in build/bench-STUDY/runs."""
    d = os.path.join(c.build, f"bench-{study}")
    os.makedirs(d, exist_ok=True)
    cmd = ["nice", "-n", "5", PY, "-m", "nfabric.examples.study", "--study", study,
           "--seeds", o["--seeds"], "--steps", o["--steps"], "--out", os.path.join(d, "runs")]
    if run(cmd, cwd=d, env=c.py_env(), timeout=BENCH_RUN_S) != 0:
        raise BenchError(f"bench {study}: the study failed (runs in {d}/runs)")


# ---- bench pools ----------------------------------------------------------------------

def pools_acc_dat(tsv: str) -> str:
    """acc.dat of the pools plot from pools.tsv: "P counts votes flat16" a
    line, by P (votes: counts' for P = 1)."""
    counts: Dict[str, str] = {}
    votes: Dict[str, str] = {}
    flat16 = ""
    for ln in lines(tsv):
        f = ln.split("\t") + [""]
        m = re.fullmatch(r"pools([0-9]+)_(counts|votes)", f[0])
        if m:
            (counts if m.group(2) == "counts" else votes)[m.group(1)] = f[1]
        elif f[0] == "flat16":
            flat16 = f[1]
    return "".join(f"{p} {counts[p]} {votes.get(p, counts[p])} {flat16}\n"
                   for p in sorted(counts, key=int))


def pools_bytes_dat(tsv: str) -> str:
    """bytes.dat of the pools plot: "NAME inter intra device" a line."""
    out = []
    for ln in lines(tsv):
        f = ln.split("\t") + ["", "", "", "", ""]
        if f[0].startswith("pools"):
            out.append(f"{f[0]} {f[2]} {f[3]} {f[4]}\n")
    return "".join(out)


def pools_plot(d: str) -> str:
    """gnuplot's script of docs/img/pools.png."""
    return f"""\
set terminal pngcairo noenhanced size 1100,460 font ",11"
set output '{d}/pools.png'
set multiplot layout 1,2
set title "test accuracy against the number of pools (G-Binary, 4 ranks a pool)"
set xlabel 'pools P'
set ylabel 'accuracy'
set logscale x 2
set grid
set key bottom left
plot '{d}/acc.dat' using 1:2 with linespoints title 'counts (exact)', \\
     '' using 1:3 with linespoints title 'votes (majority of pools)', \\
     '' using 1:4 with lines dt 2 title 'one device, 16 ranks'
unset logscale x
set title "bytes per step and rank, per tier"
set style data histograms
set style histogram clustered
set style fill solid 0.8 border -1
set logscale y
set ylabel 'bytes (log)'
set xtics rotate by -30
set key top right
plot '{d}/bytes.dat' using 2:xtic(1) title 'between pools', '' using 3 title 'inside a pool (network)', \\
     '' using 4 title 'device writes (pool 0)'
unset multiplot
"""


def bench_pools(c: Ctx, argv: Sequence[str]) -> None:
    """nfabric.poolbench (its options; results in build/bench-pools), then
    docs/img/pools.png."""
    d = os.path.join(c.build, "bench-pools")
    os.makedirs(d, exist_ok=True)
    if run_tee([PY, "-m", "nfabric.poolbench", "--out", d, *argv],
               os.path.join(d, "results.txt"), cwd=c.tmp, env=c.py_env(),
               timeout=BENCH_RUN_S) != 0:
        raise BenchError("bench pools: nfabric.poolbench failed")
    tsv = os.path.join(d, "pools.tsv")
    if not os.path.isfile(tsv):
        raise BenchError(f"bench pools: nfabric.poolbench wrote no {tsv}")
    for name, make in (("acc.dat", pools_acc_dat), ("bytes.dat", pools_bytes_dat)):
        with open(os.path.join(d, name), "w") as f:
            f.write(make(read(tsv)))
    plot(pools_plot(d), "bench pools")
    os.makedirs(os.path.join(c.root, "docs", "img"), exist_ok=True)
    shutil.copyfile(os.path.join(d, "pools.png"), os.path.join(c.root, "docs", "img", "pools.png"))
    print(f"[nfabric] bench pools: results in {d}, figure docs/img/pools.png", file=sys.stderr)


# ---- the commands -----------------------------------------------------------------------

COMMANDS = ("ddp-suite", "pools-suite", "bench-ddp", "bench-archs", "bench-ef", "bench-hard",
            "bench-pools")


def bench(name: str, argv: List[str]) -> int:
    """bench NAME [--check] ARGV: --check only prints the help if asked,
    or refuses bad options (status 2); else the benchmark."""
    check = argv[:1] == ["--check"]
    argv = argv[1:] if check else argv
    if name == "pools":
        if argv[:1] in (["-h"], ["--help"]):
            root = need_env("NF_ROOT")
            env = dict(os.environ, PYTHONPATH=os.path.join(root, "guest", "python"))
            return run([PY, "-m", "nfabric.poolbench", "--help"], env=env, timeout=PLOT_S)
        if not check:
            bench_pools(Ctx(), argv)
        return 0
    try:
        opts = options(name, argv)
    except Usage as exc:
        print(exc, file=sys.stderr)
        return 2
    if opts is None:
        sys.stdout.write(HELP[name])
        return 0
    if check:
        return 0
    c = Ctx()
    if name == "ddp":
        bench_ddp(c, opts)
    elif name == "archs":
        bench_archs(c, opts)
    else:
        bench_study(c, name, opts)
    return 0


def main(name: str, argv: List[str]) -> int:
    """python3 -m nfmachine NAME ARGV for NAME in COMMANDS."""
    sys.stdout.reconfigure(line_buffering=True)
    stop_on_signals()
    if name in ("ddp-suite", "pools-suite"):
        if argv:
            print(f"nfmachine {name}: takes no arguments, not {shlex.join(argv)}", file=sys.stderr)
            return 2
        return suite_ddp(Ctx()) if name == "ddp-suite" else suite_pools(Ctx())
    try:
        return bench(name[len("bench-"):], argv)
    except BenchError as exc:
        print(f"nfabric: error: {exc}", file=sys.stderr)
        return 1
