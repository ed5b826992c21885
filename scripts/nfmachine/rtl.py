# SPDX-License-Identifier: GPL-2.0-or-later
"""Suite `rtl` and `scripts/nfabric bench rtl`: the aggregation datapath in
Verilog (hw/rtl/, docs/rtl.md).

  suite `rtl`   lint, the Verilator harness against the C engine (latency,
                exhaustive lanes, random lines, a record replay), the
                timing model's depth default against the measured latency,
                libnfrtl.so against the engine, guests with the device's
                rtl=serve|compare (and a faulty stand-in), a 32-lane slice,
                mutants that must fail, a quick synthesis; TAP lines
  bench `rtl`   the full equivalence run, a guest's G-Binary window with
                the RTL serving beside the engine, Yosys synth_xilinx and
                synth_ice40 + nextpnr-ice40; key=value lines

scripts/lib/rtl.sh installs the packages and builds what these run (the C
reference library, the Verilator harnesses, libnfrtl.so, the faulty
stand-in, the mutants' harnesses from the sources `rtl-mutants` writes);
the guests boot through __main__.boot_vm (vm.boot), handed in.  Every
child runs with a time limit and its output captured.
"""

import argparse
import os
import re
import subprocess
import sys
import time
from typing import Callable, List, Optional, Sequence, Tuple

from .hosts import read
from .options import Parser
from .tap import Tap

# boot(vm options, messages file) -> the vm's status
Boot = Callable[[List[str], str], int]

BENCH_USAGE = """\
usage: scripts/nfabric bench rtl [--quick] [--lines N] [--parts LIST]

  equiv        10^6 random full lines per path and width (--lines N),
               every lane position of the exhaustive lane check, and
               libnfrtl.so against the engine
  xilinx       yosys synth_xilinx of the 512-bit datapath: LUTs, FFs,
               CARRY4, BRAM, DSP
  ice40-full   yosys synth_ice40 of the wrapped 512-bit datapath (cells)
  ice40        synth_ice40 + nextpnr-ice40 --hx8k of the largest slice
               (64, 32, 16, 8 lanes) that places and routes: LCs, Fmax
  guest        a guest's G-Binary window MB/s with the device's rtl=serve
               beside the C engine's, two boots in the same run
  --parts LIST comma-separated parts to run (default: all five)
  --quick      100000 lines, 4 lane positions, no ice40-full
Figures are key=value lines; logs in build/rtl/bench/.  The whole run
takes about 45 minutes on 2 cores (yosys: 15 minutes each for the two
512-lane syntheses).
"""

PARTS = ("equiv", "guest", "xilinx", "ice40-full", "ice40")

# One-line changes of hw/rtl/nf_agg.v that the harness must catch: the
# name, the change as sed says it (the TAP line shows it), and the same as
# a Python pattern and replacement, applied once per line as sed does.
MUTANTS: Tuple[Tuple[str, str, str, str], ...] = (
    ("sat16", "s/x == 16.h7fff/x == 16'h7ffe/", r"x == 16.h7fff", "x == 16'h7ffe"),
    ("tie", r"s/gt0_16 | (eq0_16 \& tie_pos)/gt0_16 | eq0_16/",
     re.escape("gt0_16 | (eq0_16 & tie_pos)"), "gt0_16 | eq0_16"),
    ("carry", r"s/wire       cin = s3_wide \& s3_step16\[j\] \& s3_carry\[j\]/"
              r"wire       cin = s3_step16[j] \& s3_carry[j]/",
     re.escape("wire       cin = s3_wide & s3_step16[j] & s3_carry[j]"),
     "wire       cin = s3_step16[j] & s3_carry[j]"),
    ("reserved", r"s/s1_data\[8\*b1+5\] \& ~s1_data\[8\*b1+4\]/s1_data[8*b1+5]/",
     re.escape("s1_data[8*b1+5] & ~s1_data[8*b1+4]"), "s1_data[8*b1+5]"),
)

ICE40_FFS = ("SB_DFF", "SB_DFFE", "SB_DFFSR", "SB_DFFR", "SB_DFFS", "SB_DFFESR")
KEY = re.compile(r"^[a-z0-9_]+=")


class RtlError(RuntimeError):
    """A step that cannot go on (a bench's failed run): reported, status 1."""


class UsageError(RuntimeError):
    """A bad option of the bench: the message and the usage, status 2."""


def run(argv: Sequence[str], timeout: float, cwd: Optional[str] = None) -> Tuple[int, str]:
    """ARGV with its output (stdout and stderr) captured: (status, text).
    124 when it ran out of time (killed and reaped), 127 if it cannot
    start; the text then says so."""
    try:
        p = subprocess.run(list(argv), cwd=cwd, stdin=subprocess.DEVNULL,
                           stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                           timeout=timeout, check=False)
        return p.returncode, p.stdout.decode(errors="replace")
    except subprocess.TimeoutExpired as e:
        out = (e.stdout or b"").decode(errors="replace")
        return 124, out + f"\n{argv[0]}: killed after {timeout:.0f} s\n"
    except OSError as e:
        return 127, f"{argv[0]}: cannot run: {e}\n"


def harness_tap(line: str) -> Optional[Tuple[bool, str]]:
    """A harness's TAP line as (passed, text after its " - "), or None."""
    if line.startswith("ok "):
        good = True
    elif line.startswith("not ok "):
        good = False
    else:
        return None
    return good, line.split(" - ", 1)[1] if " - " in line else line


def stat_sum(text: str, cells: Sequence[str]) -> int:
    """The sum of those cells' counts in the last "Number of cells"
    listing of a yosys stat output (lines "CELL COUNT")."""
    s = 0.0
    for line in text.splitlines():
        if "Number of cells:" in line:
            s = 0.0
        f = line.split()
        if len(f) == 2 and f[0] in cells:
            s += number(f[1])
    return int(s) if s == int(s) else s  # type: ignore[return-value]


def number(text: str) -> float:
    """The leading number of TEXT (0 if none), as awk reads a field."""
    m = re.match(r"\s*[-+]?(\d+\.?\d*|\.\d+)([eE][-+]?\d+)?", text)
    return float(m.group(0)) if m else 0.0


def key_lines(text: str, skip: str = "") -> List[str]:
    """The key=value lines of a harness's output (without those holding skip)."""
    return [l for l in text.splitlines() if KEY.match(l) and not (skip and skip in l)]


def mutate(source: str, pattern: str, replacement: str) -> str:
    """PATTERN replaced by REPLACEMENT once in each line (sed's s///)."""
    rx = re.compile(pattern)
    return "".join(rx.sub(lambda _m: replacement, l, count=1)
                   for l in source.splitlines(keepends=True))


def write_mutants(rtl_src: str, out: str) -> List[str]:
    """Each mutant's source out/NAME.v; the names whose change applies."""
    os.makedirs(out, exist_ok=True)
    with open(rtl_src, encoding="utf-8") as f:
        src = f.read()
    names = []
    for name, _expr, pattern, replacement in MUTANTS:
        text = mutate(src, pattern, replacement)
        with open(os.path.join(out, name + ".v"), "w", encoding="utf-8") as f:
            f.write(text)
        if text != src:
            names.append(name)
    return names


class Paths:
    """Where the sources and the builds are (NF_ROOT, NF_BUILD)."""

    def __init__(self, root: str, build: str, qemu: str):
        self.root = root
        self.rtl = os.path.join(root, "hw", "rtl")
        self.build = build
        self.out = os.path.join(build, "rtl")        # NF_RTL_BUILD
        self.qemu = qemu

    def harness(self, name: str) -> str:
        return os.path.join(self.out, name, "nf_agg_tb")

    def lib(self) -> str:
        return os.path.join(self.out, "full", "libnfrtl.so")

    def lib_test(self) -> str:
        return os.path.join(self.out, "full", "nfrtl_test")


def yosys(p: Paths, d: str, name: str, script: str, timeout: float) -> int:
    """yosys in D with copies of hw/rtl/*.v there, so that SCRIPT names
    files without directories (a checkout path may hold spaces, which yosys
    commands cannot take); its log is D/NAME.log, what it prints besides
    D/NAME.out.  Its status."""
    os.makedirs(d, exist_ok=True)
    for v in ("nf_agg.v", "nf_agg_wrap.v"):
        with open(os.path.join(p.rtl, v), "rb") as src, open(os.path.join(d, v), "wb") as dst:
            dst.write(src.read())
    rc, out = run(["yosys", "-q", "-l", name + ".log", "-p", script], timeout, cwd=d)
    with open(os.path.join(d, name + ".out"), "w", encoding="utf-8") as f:
        f.write(out)
    return rc


# ---- the suite --------------------------------------------------------------


class Suite:
    """The checks, each a TAP line numbered here (the harness's own lines
    renumbered); failed: a check or a harness run failed."""

    def __init__(self, p: Paths, boot: Boot, timeout: float = 1800):
        self.p = p
        self.boot = boot
        self.timeout = timeout
        self.tap = Tap()
        self.run_failed = False     # a harness run failed

    @property
    def failed(self) -> bool:
        return bool(self.tap.failed) or self.run_failed

    def comment(self, text: str, head: Optional[int] = None) -> None:
        lines = text.rstrip("\n").splitlines()
        self.tap.lines(lines[:head] if head else lines, "# ")

    # -- the harness

    def harness(self, argv: Sequence[str]) -> str:
        """Run a harness (or nfrtl_test): its TAP lines renumbered, the rest
        as it printed them; a failed run fails the suite.  Its output."""
        rc, out = run(argv, self.timeout)
        for line in out.splitlines():
            t = harness_tap(line)
            if t:
                self.tap.ok(*t)
            else:
                self.tap.line(line)
        if rc != 0:
            self.run_failed = True
        return out

    def lint(self) -> None:
        """Verilog-2005 as both tools read it."""
        v = os.path.join(self.p.rtl, "nf_agg.v")
        for lanes in (512, 64, 16):
            rc, out = run(["verilator", "--lint-only", "-Wall", "-Wno-UNUSEDSIGNAL",
                           f"-GLANES={lanes}", v, "--top-module", "nf_agg"], 300)
            self.tap.ok(rc == 0, f"verilator --lint-only -Wall: nf_agg, {lanes} lanes, no warning")
            self.comment(out, head=20)
        rc, out = run(["verilator", "--lint-only", "-Wall", "-Wno-UNUSEDSIGNAL",
                       os.path.join(self.p.rtl, "nf_agg_wrap.v"), v,
                       "--top-module", "nf_agg_wrap"], 300)
        self.tap.ok(rc == 0, "verilator --lint-only -Wall: nf_agg_wrap")
        self.comment(out, head=20)
        # Its output into a file of ours: iverilog makes the file it writes
        # executable, and as root would do so to /dev/null (docs/host.md).
        vvp = os.path.join(self.p.out, "iverilog.vvp")
        rc, out = run(["iverilog", "-g2005", "-o", vvp, v,
                       os.path.join(self.p.rtl, "nf_agg_wrap.v")], 300)
        self.comment(out)
        self.tap.ok(rc == 0, "iverilog -g2005 (Verilog-2005, no SystemVerilog) accepts hw/rtl/*.v")
        if os.path.exists(vvp):
            os.unlink(vvp)

    def depth(self, lat: str) -> None:
        """The datapath-depth defaults that must equal the measured latency:
        the timing model's (the harness checks it through
        nfabric_timing_defaults()), the device property's, the docs'."""
        root = self.p.root
        d = "\n".join(m.group(1) for m in re.finditer(
            r"^#define NFABRIC_T_DEFAULT_DEPTH[ \t]*([0-9]*)",
            read(os.path.join(root, "include", "hw", "mem", "nfabric_timing.h")), re.M))
        src = read(os.path.join(root, "hw", "mem", "nfabric", "cxl_nfabric.c")).splitlines()
        good = any("NFABRIC_T_DEFAULT_DEPTH" in l
                   for i, line in enumerate(src) if '"datapath-depth", CXLNFabricState' in line
                   for l in src[i:i + 2])
        self.tap.ok(good, f"cxl_nfabric.c: the datapath-depth property defaults to "
                          f"NFABRIC_T_DEFAULT_DEPTH ({d})")
        self.tap.ok(d == lat, f"nfabric_timing.h: NFABRIC_T_DEFAULT_DEPTH ({d}) = the RTL's "
                              f"measured latency ({lat})")
        timing = read(os.path.join(root, "docs", "timing.md")).splitlines()
        readme = read(os.path.join(root, "README.md")).splitlines()
        good = (any(l.startswith(f"| datapath depth D | `datapath-depth` | {lat} cycles |")
                    for l in timing)
                and any(l.startswith(f"| `datapath-depth` | {lat} |") for l in readme))
        self.tap.ok(good, f"docs/timing.md and README.md give the default depth as {lat}")
        if os.access(self.p.qemu, os.X_OK):
            _, out = run([self.p.qemu, "-device", "cxl-neuron-fabric,help"], 60)
            got = "\n".join(m.group(1) for m in (
                re.match(r".*datapath-depth=.*\(default: ([0-9]*)\).*", l)
                for l in out.splitlines()) if m)
            self.tap.ok(got == lat, f"the built QEMU's cxl-neuron-fabric datapath-depth default "
                                    f"({got or 'none'}) = {lat}")

    def record(self, rec: str) -> str:
        """A record of a real guest run (the G-Binary, G-Ternary and mixed
        groups with record=REC) when QEMU and the guest image are there
        (NF_RTL_GUEST_RECORD=0 skips it); otherwise one of the same format
        written by the harness (rounds of 8-byte pieces): "guest" or
        "synthetic"."""
        if os.path.exists(rec):
            os.unlink(rec)
        if (os.environ.get("NF_RTL_GUEST_RECORD", "1") == "1" and os.access(self.p.qemu, os.X_OK)
                and os.path.isfile(os.path.join(self.p.build, "guest", "initramfs.cpio.gz"))):
            log = os.path.join(self.p.out, "record-vm.log")
            err = os.path.join(self.p.out, "record-vm.err")
            st = self.boot(["--quiet", "--log", log, "--timeout", "600",
                            "--device-props", f"record={rec}",
                            "--run", "nfabric-test --only gbinary,gternary,mixed"], err)
            if st == 0 and os.path.isfile(rec) and os.path.getsize(rec) > 0:
                return "guest"
            print(f"[nfabric] rtl: the guest run with record= failed (status {st}; {log}, "
                  f"{err}); using a synthetic record", file=sys.stderr, flush=True)
        rc, out = run([self.p.harness("full"), "--make-record", rec], 600)
        if rc != 0:
            raise RtlError(f"rtl: cannot write a record file: {out.strip()}")
        return "synthetic"

    def guest(self, mode: str, lib: str, name: str,
              groups: str = "gbinary,gternary,mixed,toggle") -> Tuple[int, str, str]:
        """A guest whose device serves (or compares) its low-bit accesses
        through LIB runs the guest test groups: (status, console, QEMU's
        messages), also in build/rtl/guest-NAME.log and .err."""
        log = os.path.join(self.p.out, f"guest-{name}.log")
        err = os.path.join(self.p.out, f"guest-{name}.err")
        st = self.boot(["--quiet", "--log", log, "--timeout", "900",
                        "--device-props", f"rtl={mode},rtl-lib={lib.replace(',', ',,')}",
                        "--run", f"nfabric-test --only {groups}"], err)
        return st, read(log), read(err)

    def guests(self, lib: str, fault: str) -> None:
        """The device loads the RTL: a guest's aggregation groups pass with
        it serving and with it compared on every access; a faulty stand-in
        (lane 5 of every G-Binary line it writes counts once more) is caught
        by compare mode and shown to serve."""
        if not os.access(self.p.qemu, os.X_OK):
            self.tap.ok(False, f"the RTL in the emulator: QEMU ({self.p.qemu}) is not built "
                               "(scripts/nfabric setup)")
            return
        for mode in ("serve", "compare"):
            st, log, err = self.guest(mode, lib, mode)
            ok = count(log, "ok ")
            bad_lines = [l for l in log.splitlines() if l.startswith("not ok ")]
            for l in bad_lines[:5]:
                self.tap.note(l)
            rep = guest_report(err)
            m = re.match(r"rtl=[a-z]*: ([0-9]*) low-bit", rep)
            n = int(m.group(1)) if m and m.group(1) else 0
            good = (st == 0 and not bad_lines and ok >= 20 and n > 1000
                    and rep.endswith(", 0 differences from the engine"))
            how = "serving" if mode == "serve" else "beside the engine"
            self.tap.ok(good, f"rtl={mode}: a guest's G-Binary, G-Ternary, mixed and toggle groups "
                              f"pass with the RTL {how} ({ok} checks, status {st}; QEMU: "
                              f"{rep or 'no report'})")
        if not fault:
            self.tap.ok(False, "rtl: cannot build the faulty stand-in")
            return
        st, log, err = self.guest("compare", fault, "fault-compare", "gbinary")
        rep = next((l for l in err.splitlines() if "the RTL and the engine differ" in l), "")
        bad = count(log, "not ok ")
        self.tap.ok(st != 0 and bad > 0 and "lane 5 " in rep,
                    "rtl=compare with a faulty datapath: the first difference drops the access "
                    f"with an error ({bad} guest checks fail; QEMU: "
                    f"{rep.split(': ', 1)[1] if ': ' in rep else rep})")
        st, log, err = self.guest("serve", fault, "fault-serve", "gbinary")
        bad = count(log, "not ok ")
        self.tap.ok(st != 0 and bad > 0 and "the RTL and the engine differ" not in err,
                    f"rtl=serve with a faulty datapath: the guest gets its results ({bad} G-Binary "
                    "checks fail), so serve mode really serves through the library")

    def mutant(self, name: str, expr: str, argv: Sequence[str]) -> None:
        """A copy of the RTL with one change (scripts/lib/rtl.sh built its
        8-lane harness) must fail the harness."""
        src = read(os.path.join(self.p.rtl, "nf_agg.v"))
        mutated = read(os.path.join(self.p.out, "mutants", name + ".v"))
        if not mutated or mutated == src:
            self.tap.ok(False, f"mutant {name}: the change ({expr}) no longer applies to nf_agg.v")
            return
        rc, out = run([self.p.harness("mut-" + name), *argv], self.timeout)
        first = next((l for l in out.splitlines() if l.startswith("# MISMATCH")), None)
        if first:
            self.tap.note("mutant: " + first)
        self.tap.ok(rc != 0 and first is not None,
                    f"mutant {name} ({expr}) is caught by the harness")

    def synthesis(self) -> None:
        """A quick synthesis (16 lanes, iCE40 cells): fails if the design
        stops synthesizing or loses its logic."""
        syn = os.path.join(self.p.out, "syn-quick")
        rc = yosys(self.p, syn, "yosys",
                   "read_verilog nf_agg.v nf_agg_wrap.v; chparam -set LANES 16 nf_agg_wrap; "
                   "synth_ice40 -top nf_agg_wrap; check -assert; tee -q -o stat.txt stat",
                   self.timeout)
        stat = read(os.path.join(syn, "stat.txt"))
        luts = stat_sum(stat, ("SB_LUT4",))
        ffs = stat_sum(stat, ICE40_FFS)
        self.tap.note(f"quick synthesis, 16 lanes wrapped: {luts} SB_LUT4, {ffs} flip-flops")
        # Every lane's 16-bit counter crosses 5 register stages, the
        # wrapper's shift register holds the inputs: at least 16 * 16 * 5
        # flip-flops.
        self.tap.ok(rc == 0 and luts > 16 and ffs >= 16 * 16 * 5,
                    "yosys synth_ice40 + check -assert: 16-lane wrapped datapath synthesizes "
                    f"({luts} LUTs, {ffs} FFs)")


def count(text: str, start: str) -> int:
    return sum(1 for l in text.splitlines() if l.startswith(start))


def guest_report(err: str) -> str:
    """QEMU's last report of the accesses served through the RTL."""
    found = re.findall(r"rtl=[a-z]*: [0-9]* low-bit accesses through the RTL.*", err)
    return found[-1] if found else ""


def suite(p: Paths, boot: Boot, t0: int, fault: str) -> int:
    """Suite `rtl` (47 checks); 1 if a check or a harness run failed."""
    s = Suite(p, boot)
    os.makedirs(p.out, exist_ok=True)
    s.lint()
    # The full 512-bit datapath against the engine.
    tb = p.harness("full")
    out = s.harness([tb, "--latency"])
    with open(os.path.join(p.out, "latency.out"), "w", encoding="utf-8") as f:
        f.write(out)
    lat = next((l[len("rtl_latency_cycles="):] for l in out.splitlines()
                if l.startswith("rtl_latency_cycles=")), "") or "none"
    s.harness([tb, "--depth-check"])
    s.depth(lat)
    s.harness([tb, "--exhaustive", "--rot", "4"])
    s.harness([tb, "--seed", os.environ.get("NF_RTL_SEED") or str(t0),
               "--random", os.environ.get("NF_RTL_LINES") or "200000"])
    rec = os.path.join(p.out, "replay.rec")
    kind = s.record(rec)
    s.tap.note(f"record: {kind} ({rec})")
    s.harness([tb, "--replay", rec])
    # libnfrtl.so, the model behind the engine's calls, loaded as the
    # device would load it: random accesses against the engine.
    s.harness([p.lib_test(), p.lib(), "20000"])
    # The device loads it: a guest's aggregation through the RTL.
    s.guests(p.lib(), fault)
    # A 32-lane slice (the one that fits the iCE40 HX8K): the same checks.
    s.harness([p.harness("slice32"), "--latency", "--exhaustive", "--random", "50000"])
    # The checks can fail: one-line changes of the RTL are caught.
    for name, expr, _pattern, _replacement in MUTANTS:
        s.mutant(name, expr, ["--random", "5000"])
    s.synthesis()
    s.tap.note(f"suite rtl took {int(time.time()) - t0} s")
    return 1 if s.failed else 0


# ---- the bench --------------------------------------------------------------


class BenchOptions:
    def __init__(self) -> None:
        self.quick = False
        self.lines = 1000000
        self.rot = 0
        self.parts = list(PARTS)
        self.help = False


class _BenchOption(argparse.Action):
    """--quick, --lines, --parts: each applied where it stands (a --lines
    after --quick counts, one before does not)."""

    def __call__(self, parser, ns, v, option=None):
        o = ns.o
        if option == "--quick":
            o.quick, o.lines, o.rot = True, 100000, 4
        elif option == "--lines":
            if not v.isdigit() or int(v) < 1:
                raise UsageError(f'nfabric bench rtl: --lines must be a positive number, not "{v}"')
            o.lines = int(v)
        else:
            parts = [x for x in v.split(",") if x]
            bad = [x for x in parts if x not in PARTS]
            if bad or not parts:
                raise UsageError(f'nfabric bench rtl: unknown part "{",".join(bad) or v}" '
                                 f'(parts: {",".join(PARTS)})')
            o.parts = parts


def parse_bench(argv: List[str]) -> BenchOptions:
    o = BenchOptions()
    parser = Parser("nfabric bench rtl", BENCH_USAGE, UsageError, "option", "nfabric bench rtl: ")
    parser.set_defaults(o=o)
    parser.add_argument("--quick", action=_BenchOption, nargs=0)
    parser.add_argument("--lines", action=_BenchOption)
    parser.add_argument("--parts", action=_BenchOption)
    if parser.parse(argv) is None:
        o.help = True
        return o
    if o.quick:
        o.parts = [x for x in o.parts if x != "ice40-full"]
    return o


def emit(text: str) -> None:
    print(text, flush=True)


def bench_run(p: Paths, out: str, name: str, argv: Sequence[str], timeout: float) -> str:
    """A harness run of the bench, its stdout in OUT/NAME.out: that text;
    a failure shows it and stops the bench."""
    rc, text = run(argv, timeout)
    with open(os.path.join(out, name + ".out"), "w", encoding="utf-8") as f:
        f.write(text)
    if rc != 0:
        sys.stdout.write(text)
        raise RtlError(f"rtl bench: {name} check failed (status {rc}, {out}/{name}.out)")
    return text


def bench(p: Paths, o: BenchOptions, boot: Boot, timeout: float = 3 * 3600) -> int:
    out = os.path.join(p.out, "bench")
    os.makedirs(out, exist_ok=True)
    tb = p.harness("full")
    text = bench_run(p, out, "latency", [tb, "--latency"], timeout)
    lines = key_lines(text)
    if not lines:
        raise RtlError(f"rtl bench: latency check failed (no key=value line in {out}/latency.out)")
    for l in lines:
        emit(l)

    if "equiv" in o.parts:
        # Equivalence at full size.
        t0 = int(time.time())
        text = bench_run(p, out, "exhaustive",
                         [tb, "--exhaustive", "--rot", str(512 if o.rot == 0 else o.rot)], timeout)
        for l in key_lines(text, "failures"):
            emit(l)
        text = bench_run(p, out, "random", [tb, "--seed", str(t0), "--random", str(o.lines)],
                         timeout)
        for l in key_lines(text, "failures"):
            emit(l)
        # libnfrtl.so (the model behind the engine's calls) against the
        # engine, and its speed beside the engine's on 64-byte G-Binary
        # writes.
        text = bench_run(p, out, "lib", [p.lib_test(), p.lib(), "100000"], timeout)
        for l in key_lines(text):
            emit(l)
        emit(f"rtl_equivalence_s={int(time.time()) - t0}")
        emit("rtl_mismatches=0")

    if "guest" in o.parts:
        # A guest's G-Binary window with the RTL serving the device, beside
        # the engine, one boot each, the same program (nfabric-bench).
        w = {}
        for m in ("c", "rtl"):
            props = [] if m == "c" else ["--device-props",
                                         f"rtl=serve,rtl-lib={p.lib().replace(',', ',,')}"]
            log, err = os.path.join(out, f"guest-{m}.log"), os.path.join(out, f"guest-{m}.err")
            st = boot(["--quiet", "--log", log, "--timeout", "900", *props,
                       "--run", "nfabric-bench --bytes 262144 --reps 2 gbinary"], err)
            if st != 0:
                raise RtlError(f"rtl bench: the guest run ({m}) failed (status {st}; {log}, {err})")
            found = [l[len("gbinary_write_MBps="):]
                     for l in read(log).replace("\r", "").splitlines()
                     if l.startswith("gbinary_write_MBps=")]
            if not found:
                raise RtlError(f"rtl bench: no gbinary_write_MBps in {log}")
            w[m] = found[-1]
            emit(f"{m}_guest_gbinary_write_MBps={w[m]}")
        for rep in re.findall(r"rtl=serve: .*", read(os.path.join(out, "guest-rtl.err"))):
            emit("# QEMU: " + rep)
        c, r = number(w["c"]), number(w["rtl"])
        emit(f"rtl_gbinary_write_vs_c={r / c if c > 0 else 0:.5f}")

    if "xilinx" in o.parts:
        # Xilinx 7-series estimate of the full datapath.
        t0 = int(time.time())
        if yosys(p, out, "xilinx", "read_verilog nf_agg.v; chparam -set LANES 512 nf_agg; "
                 "synth_xilinx -top nf_agg; tee -q -o xilinx.stat stat", timeout) != 0:
            raise RtlError(f"rtl bench: synth_xilinx failed ({out}/xilinx.log)")
        st = read(os.path.join(out, "xilinx.stat"))
        luts = ("LUT1", "LUT2", "LUT3", "LUT4", "LUT5", "LUT6")
        srl = ("SRL16E", "SRLC32E")
        emit("rtl_xilinx_lanes=512")
        # Slice LUTs as Vivado counts them: logic LUTs and LUTs as shift
        # registers (SRL16E: yosys packs plain register chains into them).
        emit(f"rtl_xilinx_luts={stat_sum(st, luts + srl)}")
        emit(f"rtl_xilinx_lut_logic={stat_sum(st, luts)}")
        emit(f"rtl_xilinx_lut_srl={stat_sum(st, srl)}")
        emit(f"rtl_xilinx_inv={stat_sum(st, ('INV',))}")
        emit(f"rtl_xilinx_ffs={stat_sum(st, ('FDRE', 'FDSE', 'FDCE', 'FDPE'))}")
        emit(f"rtl_xilinx_carry4={stat_sum(st, ('CARRY4',))}")
        emit(f"rtl_xilinx_muxf={stat_sum(st, ('MUXF7', 'MUXF8'))}")
        emit(f"rtl_xilinx_bram={stat_sum(st, ('RAMB18E1', 'RAMB36E1'))}")
        emit(f"rtl_xilinx_dsp={stat_sum(st, ('DSP48E1',))}")
        emit(f"rtl_xilinx_synth_s={int(time.time()) - t0}")

    if "ice40-full" in o.parts:
        # iCE40: the full wrapped datapath's cell count (it cannot fit an
        # HX8K's 7680 logic cells).
        t0 = int(time.time())
        if yosys(p, out, "ice40-512", "read_verilog nf_agg.v nf_agg_wrap.v; "
                 "chparam -set LANES 512 nf_agg_wrap; synth_ice40 -top nf_agg_wrap; "
                 "tee -q -o ice40-512.stat stat", timeout) != 0:
            raise RtlError(f"rtl bench: synth_ice40 (512) failed ({out}/ice40-512.log)")
        st = read(os.path.join(out, "ice40-512.stat"))
        emit(f"rtl_ice40_512_luts={stat_sum(st, ('SB_LUT4',))}")
        emit(f"rtl_ice40_512_ffs={stat_sum(st, ICE40_FFS + ('SB_DFFSS', 'SB_DFFESS', 'SB_DFFER', 'SB_DFFES'))}")
        emit(f"rtl_ice40_512_carry={stat_sum(st, ('SB_CARRY',))}")
        emit(f"rtl_ice40_512_synth_s={int(time.time()) - t0}")

    if "ice40" in o.parts:
        ice40(p, out, timeout)
    return 0


def ice40(p: Paths, out: str, timeout: float) -> None:
    """P&R of the largest slice that fits an HX8K."""
    fit = 0
    for lanes in (64, 32, 16, 8):
        if yosys(p, out, f"ice40-{lanes}", "read_verilog nf_agg.v nf_agg_wrap.v; "
                 f"chparam -set LANES {lanes} nf_agg_wrap; "
                 f"synth_ice40 -top nf_agg_wrap -json ice40-{lanes}.json; "
                 f"tee -q -o ice40-{lanes}.stat stat", timeout) != 0:
            raise RtlError(f"rtl bench: synth_ice40 ({lanes} lanes) failed ({out}/ice40-{lanes}.log)")
        # --timing-allow-fail: a slice that places and routes counts; its
        # Fmax is what it is.
        rc, text = run(["nextpnr-ice40", "--hx8k", "--package", "ct256",
                        "--json", os.path.join(out, f"ice40-{lanes}.json"), "--freq", "100",
                        "--pcf-allow-unconstrained", "--timing-allow-fail", "--seed", "1",
                        "--asc", os.path.join(out, f"ice40-{lanes}.asc")], timeout)
        with open(os.path.join(out, f"pnr-{lanes}.log"), "w", encoding="utf-8") as f:
            f.write(text)
        if rc == 0:
            fit = lanes
            break
        print(f"[nfabric] rtl bench: {lanes} lanes do not fit the HX8K ({out}/pnr-{lanes}.log)",
              file=sys.stderr, flush=True)
    if not fit:
        raise RtlError("rtl bench: no slice placed and routed")
    log = read(os.path.join(out, f"pnr-{fit}.log"))
    lcs = last_match(r".*ICESTORM_LC: *([0-9]*)/ *([0-9]*).*", log)
    fmax = last_match(r".*Max frequency for clock *'[^']*': ([0-9.]*) MHz.*", log)
    emit("rtl_ice40_part=hx8k")
    emit(f"rtl_ice40_slice_lanes={fit}")
    emit(f"rtl_ice40_slice_fraction={fit / 512:.4f}")
    emit(f"rtl_ice40_lcs={lcs}")
    emit("rtl_ice40_lcs_available=7680")
    emit(f"rtl_ice40_wrapper_ffs={(49 + fit // 8 + fit + fit * 16 + 7) // 8 * 8}")
    emit(f"rtl_ice40_fmax_mhz={fmax}")


def last_match(pattern: str, text: str) -> str:
    """Group 1 of PATTERN in the last line it matches ("" if none)."""
    found = [m.group(1) for m in (re.match(pattern, l) for l in text.splitlines()) if m]
    return found[-1] if found else ""


# ---- the commands -----------------------------------------------------------

COMMANDS = ("rtl-suite", "rtl-mutants", "bench-rtl")


def main(name: str, argv: List[str], paths: Callable[[], Paths],
         boot: Callable[[], Boot]) -> int:
    """rtl-suite T0 FAULT_LIB | rtl-mutants DIR | bench-rtl check|run OPTIONS.
    paths() gives the build's Paths, boot() readies this process for guests
    and gives the boot function."""
    try:
        if name == "rtl-mutants":
            if len(argv) != 1:
                raise UsageError("rtl-mutants takes the directory to write the mutants in")
            for m in write_mutants(os.path.join(paths().rtl, "nf_agg.v"), argv[0]):
                print(m)
            return 0
        if name == "rtl-suite":
            if len(argv) != 2 or not argv[0].isdigit():
                raise UsageError("rtl-suite takes the start time (s) and the faulty stand-in's "
                                 "path (empty if it could not be built)")
            return suite(paths(), boot(), int(argv[0]), argv[1])
        if not argv or argv[0] not in ("check", "run"):
            raise UsageError("usage: bench-rtl check|run [OPTIONS]")
        try:
            o = parse_bench(argv[1:])
        except UsageError as exc:
            print(exc, file=sys.stderr)
            sys.stderr.write(BENCH_USAGE)
            return 2
        if o.help:
            sys.stdout.write(BENCH_USAGE)
            return 0
        if argv[0] == "check":
            return 0
        return bench(paths(), o, boot())
    except UsageError as exc:
        print(f"nfmachine {name}: {exc}", file=sys.stderr)
        return 2
    except RtlError as exc:
        print(f"nfabric: error: {exc}", file=sys.stderr)
        return 1
