# SPDX-License-Identifier: GPL-2.0-or-later
"""scripts/nfmachine/rtl.py (suite `rtl`, `bench rtl`) without Verilator,
yosys or QEMU: stand-in harnesses, a stand-in yosys and guest boots that
write what the real ones would; the harness's TAP renumbered, the depth,
guest, mutant and synthesis verdicts, the bench's options and key=value
lines, a passing and a failing case of each."""

import contextlib
import io
import os
import sys
import tempfile

from nfmachine import rtl
from nfmachine.tap import done, ok
import testkit


script = testkit.script


def write(path, text):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w", encoding="utf-8") as f:
        f.write(text)


def captured(fn, *args):
    """fn(*args)'s value and what it printed on stdout."""
    with contextlib.redirect_stdout(io.StringIO()) as out:
        value = fn(*args)
    return value, out.getvalue()


def project(d, depth="5", readme_depth="5"):
    """A checkout with the files the depth checks read."""
    root = os.path.join(d, "root")
    write(os.path.join(root, "include/hw/mem/nfabric_timing.h"),
          f"#define NFABRIC_T_DEFAULT_DEPTH   {depth}u /* cycles */\n")
    write(os.path.join(root, "hw/mem/nfabric/cxl_nfabric.c"),
          '    DEFINE_PROP_UINT32("datapath-depth", CXLNFabricState, depth,\n'
          "                       NFABRIC_T_DEFAULT_DEPTH),\n")
    write(os.path.join(root, "docs/timing.md"),
          f"| datapath depth D | `datapath-depth` | {depth} cycles | x |\n")
    write(os.path.join(root, "README.md"), f"| `datapath-depth` | {readme_depth} | x |\n")
    write(os.path.join(root, "hw/rtl/nf_agg.v"),
          "wire sat16  = dec_lo ? x == 16'h8000 : x == 16'h7fff;\n"
          "wire pos16 = gt0_16 | (eq0_16 & tie_pos);\n"
          "wire       cin = s3_wide & s3_step16[j] & s3_carry[j];\n"
          "{2'b00, s1_data[8*b1+5] & ~s1_data[8*b1+4]} +\n")
    write(os.path.join(root, "hw/rtl/nf_agg_wrap.v"), "module nf_agg_wrap; endmodule\n")
    return root


def parsing():
    ok(rtl.harness_tap("ok 3 - exhaustive lanes") == (True, "exhaustive lanes")
       and rtl.harness_tap("not ok 1 - a - b") == (False, "a - b")
       and rtl.harness_tap("ok 2") == (True, "ok 2")
       and rtl.harness_tap("# ok 1 - x") is None and rtl.harness_tap("okay") is None,
       "a harness's TAP line: its verdict and the text after the first ' - '")
    text = ("   Number of cells: 9\n     SB_LUT4 7\n     SB_DFF 2\n"
            "   Number of cells: 30\n     SB_LUT4   20\n     SB_DFFE 6\n     SB_DFF 4\n"
            "     SB_CARRY 3 extra\n     SB_LUT4x 99\n")
    ok(rtl.stat_sum(text, ("SB_LUT4",)) == 20 and rtl.stat_sum(text, rtl.ICE40_FFS) == 10
       and rtl.stat_sum(text, ("SB_CARRY",)) == 0 and rtl.stat_sum("", ("SB_LUT4",)) == 0,
       "stat sums: the last listing's counts, lines of two fields only")
    ok(rtl.key_lines("rtl_a=1\n# b=2\nrtl_failures=0\nX=1\nrtl_c=3\n", "failures")
       == ["rtl_a=1", "rtl_c=3"], "key=value lines, those with failures left out")
    ok(rtl.number("12.5 MB/s") == 12.5 and rtl.number("none") == 0,
       "a figure's leading number, as awk reads it")
    ok(rtl.last_match(r".*ICESTORM_LC: *([0-9]*)/ *([0-9]*).*",
                      "ICESTORM_LC: 10/ 7680\nInfo: ICESTORM_LC:  5012/  7680    65%\n") == "5012"
       and rtl.last_match(r".*Max frequency for clock *'[^']*': ([0-9.]*) MHz.*", "none") == "",
       "nextpnr's figures: the last line's, or none")


def mutants(d):
    root = project(d)
    out = os.path.join(d, "mutants")
    names = rtl.write_mutants(os.path.join(root, "hw/rtl/nf_agg.v"), out)
    with open(os.path.join(out, "sat16.v"), encoding="utf-8") as f:
        sat = f.read()
    ok(names == ["sat16", "tie", "carry", "reserved"] and "x == 16'h7ffe;" in sat
       and "16'h8000" in sat, "each mutant's change applies once, as sed's s///", names)
    plain = os.path.join(d, "plain.v")
    write(plain, "module nf_agg; endmodule\n")
    ok(rtl.write_mutants(plain, os.path.join(d, "m2")) == [],
       "a source without the changed lines: no mutant applies")


def harness(d):
    root = project(d)
    build = os.path.join(d, "build")
    p = rtl.Paths(root, build, os.path.join(d, "no-qemu"))
    script(p.harness("full"), 'echo "ok 1 - latency"; echo "rtl_latency_cycles=5";'
           ' echo "not ok 2 - lane 3" >&2; exit 1\n')
    s = rtl.Suite(p, None)
    s.tap.n = 4
    out, text = captured(s.harness, [p.harness("full"), "--latency"])
    ok(text == "ok 5 - latency\nrtl_latency_cycles=5\nnot ok 6 - lane 3\n" and s.failed
       and "rtl_latency_cycles=5" in out,
       "a harness's lines renumbered, the rest as printed; its failure fails the suite", text)
    script(p.harness("good"), 'echo "ok 1 - all"\n')
    s = rtl.Suite(p, None)
    _, text = captured(s.harness, [p.harness("good")])
    ok(text == "ok 1 - all\n" and not s.failed, "a passing harness run", text)
    rc, text = rtl.run(["sleep", "5"], 0.2)
    ok(rc == 124 and "killed after" in text, "a run is bounded: killed and said so", text)
    rc, text = rtl.run([os.path.join(d, "missing")], 5)
    ok(rc == 127 and "cannot run" in text, "a program that is not there: said so", text)


def depth(d):
    root = project(d)
    p = rtl.Paths(root, os.path.join(d, "build"), os.path.join(d, "no-qemu"))
    s = rtl.Suite(p, None)
    _, text = captured(s.depth, "5")
    ok(text == "ok 1 - cxl_nfabric.c: the datapath-depth property defaults to "
               "NFABRIC_T_DEFAULT_DEPTH (5)\n"
               "ok 2 - nfabric_timing.h: NFABRIC_T_DEFAULT_DEPTH (5) = the RTL's measured latency (5)\n"
               "ok 3 - docs/timing.md and README.md give the default depth as 5\n"
       and not s.failed, "depth checks agree with the measured latency (no QEMU: 3 checks)", text)
    qemu = script(os.path.join(d, "qemu"), 'echo "  datapath-depth=<uint32> - x (default: 4)"\n')
    p = rtl.Paths(project(d, readme_depth="6"), p.build, qemu)
    s = rtl.Suite(p, None)
    _, text = captured(s.depth, "none")
    lines = text.splitlines()
    ok(len(lines) == 4 and lines[0].startswith("ok 1 ") and lines[1].startswith("not ok 2 ")
       and lines[2].startswith("not ok 3 ") and lines[3] == "not ok 4 - the built QEMU's "
       "cxl-neuron-fabric datapath-depth default (4) = none" and s.failed,
       "no measured latency, docs that disagree, QEMU's other default: failures", text)


def boot_writes(results):
    """A boot stand-in: for each name (from the log's file name) the
    console and messages to write and the status; the options seen."""
    seen = []

    def boot(argv, err):
        seen.append(argv)
        log = argv[argv.index("--log") + 1]
        name = os.path.basename(log).rsplit(".", 1)[0]
        console, messages, status = results[name]
        write(log, console)
        write(err, messages)
        return status
    return boot, seen


GOOD_CONSOLE = "".join(f"ok {i} - check\r\n" for i in range(1, 25))
REPORT = ("qemu: rtl={}: 5000 low-bit accesses through the RTL (4000 reads, 1000 writes), "
          "0 differences from the engine\n")
DIFFER = "qemu: nfabric: the RTL and the engine differ at lane 5 of a G-Binary line\n"
FAULTY = "ok 1 - a\nnot ok 2 - gbinary sum\nnot ok 3 - gbinary count\n"


def guests(d):
    qemu = script(os.path.join(d, "qemu"), "exit 0\n")
    p = rtl.Paths(project(d), os.path.join(d, "build"), qemu)
    boot, seen = boot_writes({
        "guest-serve": (GOOD_CONSOLE, REPORT.format("serve"), 0),
        "guest-compare": (GOOD_CONSOLE, REPORT.format("compare"), 0),
        "guest-fault-compare": (FAULTY, DIFFER, 1),
        "guest-fault-serve": (FAULTY, "", 1)})
    s = rtl.Suite(p, boot)
    _, text = captured(s.guests, "/lib,a/libnfrtl.so", "/f/libnfrtl-fault.so")
    lines = text.splitlines()
    ok(len(lines) == 4 and all(l.startswith("ok ") for l in lines) and not s.failed
       and lines[0] == "ok 1 - rtl=serve: a guest's G-Binary, G-Ternary, mixed and toggle groups "
       "pass with the RTL serving (24 checks, status 0; QEMU: " + REPORT.format("serve")[6:-1] + ")"
       and lines[2].endswith("(2 guest checks fail; QEMU: nfabric: the RTL and the engine "
                             "differ at lane 5 of a G-Binary line)"),
       "guests through the RTL pass; the faulty stand-in is caught and serves", text)
    ok(seen[0][seen[0].index("--device-props") + 1] == "rtl=serve,rtl-lib=/lib,,a/libnfrtl.so"
       and seen[2][-1] == "nfabric-test --only gbinary",
       "the device's properties (a comma in the path doubled), the groups run", seen)

    boot, _ = boot_writes({
        "guest-serve": (GOOD_CONSOLE + "not ok 25 - toggle\n", REPORT.format("serve"), 1),
        "guest-compare": (GOOD_CONSOLE, "qemu: rtl=compare: 10 low-bit accesses through "
                          "the RTL, 3 differences from the engine\n", 0),
        "guest-fault-compare": (FAULTY, "", 1),
        "guest-fault-serve": (FAULTY, DIFFER, 1)})
    s = rtl.Suite(p, boot)
    _, text = captured(s.guests, "/lib/libnfrtl.so", "/f/libnfrtl-fault.so")
    lines = [l for l in text.splitlines() if not l.startswith("#")]
    ok(len(lines) == 4 and all(l.startswith("not ok ") for l in lines) and s.failed
       and "# not ok 25 - toggle" in text and "QEMU: )" in lines[2],
       "a failing guest, differences, a fault not caught, a report in serve mode: failures",
       text)
    s = rtl.Suite(p, boot)
    _, text = captured(s.guests, "/lib/libnfrtl.so", "")
    ok(text.splitlines()[-1] == "not ok 3 - rtl: cannot build the faulty stand-in",
       "no faulty stand-in: a failure that says so", text)
    s = rtl.Suite(rtl.Paths(p.root, p.build, os.path.join(d, "none")), boot)
    _, text = captured(s.guests, "/lib/libnfrtl.so", "/f.so")
    ok(text.startswith("not ok 1 - the RTL in the emulator: QEMU (") and s.failed,
       "no QEMU: one failure that says so", text)


def mutant(d):
    root = project(d)
    p = rtl.Paths(root, os.path.join(d, "build"), os.path.join(d, "none"))
    rtl.write_mutants(os.path.join(root, "hw/rtl/nf_agg.v"), os.path.join(p.out, "mutants"))
    script(p.harness("mut-sat16"), 'echo "# MISMATCH line 3 lane 0"; echo "# MISMATCH 2"; exit 1\n')
    script(p.harness("mut-tie"), 'echo "ok 1 - random lines"\n')
    s = rtl.Suite(p, None)
    _, text = captured(lambda: [s.mutant(n, e, ["--random", "5"]) for n, e, _, _ in rtl.MUTANTS[:2]])
    ok(text == "# mutant: # MISMATCH line 3 lane 0\n"
               f"ok 1 - mutant sat16 ({rtl.MUTANTS[0][1]}) is caught by the harness\n"
               f"not ok 2 - mutant tie ({rtl.MUTANTS[1][1]}) is caught by the harness\n",
       "a mutant that fails the harness is caught; one that passes is a failure", text)
    os.unlink(os.path.join(p.out, "mutants", "carry.v"))
    s = rtl.Suite(p, None)
    _, text = captured(s.mutant, "carry", "s/a/b/", [])
    ok(text == "not ok 1 - mutant carry: the change (s/a/b/) no longer applies to nf_agg.v\n",
       "a change that no longer applies: a failure that says so", text)


def synthesis(d, bindir):
    root = project(d)
    p = rtl.Paths(root, os.path.join(d, "build"), os.path.join(d, "none"))
    # yosys: writes stat.txt from $STAT, exits with $YOSYS_RC.
    script(os.path.join(bindir, "yosys"),
           'printf "%b" "$STAT" > stat.txt; echo "$@" > args.txt; exit "${YOSYS_RC:-0}"\n')
    os.environ["STAT"] = ("   Number of cells: 2000\\n     SB_LUT4 300\\n     SB_DFF 1000\\n"
                          "     SB_DFFE 500\\n")
    s = rtl.Suite(p, None)
    _, text = captured(s.synthesis)
    ok(text == "# quick synthesis, 16 lanes wrapped: 300 SB_LUT4, 1500 flip-flops\n"
               "ok 1 - yosys synth_ice40 + check -assert: 16-lane wrapped datapath synthesizes "
               "(300 LUTs, 1500 FFs)\n"
       and os.path.isfile(os.path.join(p.out, "syn-quick", "nf_agg_wrap.v")),
       "a quick synthesis with its logic: its sums", text)
    os.environ["STAT"] = "   Number of cells: 20\\n     SB_LUT4 10\\n     SB_DFF 10\\n"
    s = rtl.Suite(p, None)
    _, text = captured(s.synthesis)
    ok(text.splitlines()[-1].startswith("not ok 1 - ") and s.failed,
       "a synthesis that lost its logic fails", text)


def bench_options():
    o = rtl.parse_bench([])
    ok(o.lines == 1000000 and o.rot == 0 and o.parts == list(rtl.PARTS) and not o.help,
       "bench defaults: 10^6 lines, every part")
    o = rtl.parse_bench(["--parts", "equiv,ice40-full", "--quick"])
    q = rtl.parse_bench(["--quick", "--lines", "7"])
    ok(o.parts == ["equiv"] and o.lines == 100000 and o.rot == 4 and q.lines == 7,
       "--quick: fewer lines, 4 rotations, no ice40-full; options in their order")
    ok(rtl.parse_bench(["--lines", "3", "-h", "--bogus"]).help, "--help before a bad option")
    for argv, words in ((["--bogus"], 'unknown option "--bogus"'),
                        (["--lines"], "--lines needs a value"),
                        (["--lines", "ten"], '--lines must be a positive number, not "ten"'),
                        (["--lines", "0"], "positive number"),
                        (["--parts", "equiv,fpga"], 'unknown part "fpga"')):
        try:
            rtl.parse_bench(argv)
            ok(False, f"refused: {argv}")
        except rtl.UsageError as exc:
            ok(words in str(exc), f"refused: {' '.join(argv)}", exc)
    err = io.StringIO()
    with contextlib.redirect_stderr(err):
        rc, text = captured(rtl.main, "bench-rtl", ["check", "--parts", "x"], None, None)
    ok(rc == 2 and text == "" and err.getvalue().startswith('nfabric bench rtl: unknown part "x"')
       and rtl.BENCH_USAGE in err.getvalue(),
       "bench-rtl check: a bad option refused, status 2, the message and the usage", err.getvalue())
    rc, text = captured(rtl.main, "bench-rtl", ["check", "--help"], None, None)
    ok(rc == 0 and text == rtl.BENCH_USAGE, "bench-rtl check --help: the usage, status 0")
    rc, _ = captured(rtl.main, "bench-rtl", ["check", "--quick"], None, None)
    ok(rc == 0, "bench-rtl check: good options, nothing run")
    with contextlib.redirect_stderr(io.StringIO()) as err:
        rcs = [rtl.main("rtl-suite", a, None, None) for a in ([], ["x", "f"])]
        rcs.append(rtl.main("bench-rtl", ["go"], None, None))
    ok(rcs == [2, 2, 2] and "rtl-suite takes" in err.getvalue(),
       "made-up arguments of the commands: refused with status 2", err.getvalue())


def bench(d):
    root = project(d)
    p = rtl.Paths(root, os.path.join(d, "build"), os.path.join(d, "none"))
    script(p.harness("full"), 'case "$1" in --latency) echo "ok 1 - l"; echo "rtl_latency_cycles=5";;'
           ' --exhaustive) echo "rtl_exhaustive_lines=9"; echo "rtl_exhaustive_failures=0";;'
           ' --seed) echo "rtl_random_lines=$4"; echo "rtl_random_failures=0";; esac\n')
    script(p.lib_test(), 'echo "nfrtl_lib_accesses=$2"; echo "ok 1 - lib"\n')
    boot, seen = boot_writes({"guest-c": ("gbinary_write_MBps=200.0\r\n", "", 0),
                              "guest-rtl": ("gbinary_write_MBps=50\r\n",
                                            "qemu: rtl=serve: 9 low-bit accesses\n", 0)})
    o = rtl.parse_bench(["--quick", "--parts", "equiv,guest", "--lines", "11"])
    rc, text = captured(rtl.bench, p, o, boot)
    keys = [l.split("=")[0] for l in text.splitlines() if "=" in l and not l.startswith("#")]
    ok(rc == 0 and keys == ["rtl_latency_cycles", "rtl_exhaustive_lines", "rtl_random_lines",
                            "nfrtl_lib_accesses", "rtl_equivalence_s", "rtl_mismatches",
                            "c_guest_gbinary_write_MBps", "rtl_guest_gbinary_write_MBps",
                            "rtl_gbinary_write_vs_c"]
       and "rtl_random_lines=11\n" in text and "rtl_gbinary_write_vs_c=0.25000\n" in text
       and "# QEMU: rtl=serve: 9 low-bit accesses\n" in text and "ok 1 " not in text
       and len(seen) == 2 and "--device-props" not in seen[0],
       "bench: the keys of equiv and guest, in order", text)
    script(p.harness("full"), 'echo "rtl_latency_cycles=5"; [ "$1" = --latency ] || '
           '{ echo "# MISMATCH"; exit 1; }\n')
    try:
        _, text = captured(rtl.bench, p, o, boot)
        ok(False, "a failing equivalence run stops the bench")
    except rtl.RtlError as exc:
        ok("exhaustive check failed" in str(exc), "a failing equivalence run stops the bench", exc)
    boot, _ = boot_writes({"guest-c": ("no figure\n", "", 0)})
    o = rtl.parse_bench(["--parts", "guest"])
    try:
        captured(rtl.bench, p, o, boot)
        ok(False, "a guest run without its figure stops the bench")
    except rtl.RtlError as exc:
        ok("no gbinary_write_MBps" in str(exc), "a guest run without its figure stops the bench",
           exc)


def main():
    with tempfile.TemporaryDirectory() as d:
        bindir = os.path.join(d, "bin")
        os.makedirs(bindir)
        os.environ["PATH"] = bindir + os.pathsep + os.environ.get("PATH", "")
        parsing()
        for i, check in enumerate((mutants, harness, depth, guests, mutant, bench)):
            sub = os.path.join(d, str(i))
            os.makedirs(sub)
            check(sub)
        synthesis(os.path.join(d, "syn"), bindir)
        bench_options()
    return done()


if __name__ == "__main__":
    sys.exit(main())
