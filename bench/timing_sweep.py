# SPDX-License-Identifier: GPL-2.0-or-later
"""`scripts/nfabric bench timing`: the timing model's sweeps.

The exposed datapath overhead in both regimes (LLC-miss: dependent
accesses; bandwidth pressure: open arrivals at the link's bandwidth) and
the sweeps between them (offered load, datapath depth), through the
offline tool bench/nfabric_timing_tool.c.  Prints two tables and
key=value lines; draws build/bench/timing/*.png with gnuplot.
docs/timing.md explains the model and the figures.

scripts/lib/bench.sh checks the options (`check`), builds the tool and
the RTL harness (whose measured latency is run through the same model)
and runs it (`run`) with their paths in NF_TIMING_TOOL, NF_RTL_HARNESS,
NF_TIMING_OUT (the .dat files and plots) and NF_DOCS_IMG (--docs).
"""

import math
import os
import shutil
import subprocess
import sys
from typing import Dict, List, Sequence

LOADS = ["0.05", "0.1", "0.15", "0.2", "0.25", "0.3", "0.35", "0.4", "0.5",
         "0.6", "0.7", "0.8", "0.9", "0.95", "1.0", "1.05", "1.1", "1.2"]
DEPTHS = ["0", "1", "2", "3", "4", "5", "6", "8", "10", "12", "14", "16",
          "20", "24", "28", "32"]
PAPER_BOUND_PCT = 1.67

USAGE = """\
usage: scripts/nfabric bench timing [--count N] [--no-plot] [--docs]

Runs the timing model (default parameters: 1000 MHz, depth 5, 300 ns,
32000 MB/s) on synthetic streams of low-bit accesses:
  LLC-miss regime      dependent accesses (each waits for the previous)
  bandwidth pressure   open arrivals at the link bandwidth (load 1.0)
  sweeps               offered load 0.05..1.2 (8 and 64 bytes, evenly
                       spaced and Poisson arrivals) and depth 0..32
Prints tables and key=value lines; plots into build/bench/timing/.
  --count N   requests per run (default 10000)
  --no-plot   skip the PNG plots (and gnuplot)
  --docs      copy the plots to docs/img/timing-{load,depth}.png
"""


class BenchError(RuntimeError):
    """A step of the benchmark failed; the message says which."""


class Model:
    """The offline tool, run with a fixed request count."""

    def __init__(self, tool: str, count: int):
        self.tool = tool
        self.count = count

    def run(self, *args: str) -> Dict[str, str]:
        """The tool's key=value lines for one run."""
        argv = [self.tool, *args, "--count", str(self.count)]
        try:
            proc = subprocess.run(argv, stdout=subprocess.PIPE, text=True, check=False)
        except OSError as e:
            raise BenchError(f"nfabric-timing: cannot run {self.tool}: {e.strerror}") from e
        if proc.returncode != 0:
            raise BenchError(f"nfabric-timing {' '.join(argv[1:])} failed "
                             f"(status {proc.returncode})")
        return parse_kv(proc.stdout)

    def fig(self, *args: str, keys: Sequence[str] = ("exposed_pct",)) -> List[str]:
        """The values of keys in one run ("nan" for one it did not print)."""
        kv = self.run(*args)
        return [kv.get(k, "nan") for k in keys]


def parse_kv(text: str) -> Dict[str, str]:
    """key=value lines into a dict (the last of a key wins)."""
    out = {}
    for line in text.splitlines():
        key, sep, value = line.partition("=")
        if sep:
            out[key] = value
    return out


def num(text: str) -> float:
    """A figure as printf's %f reads it (nan for what is no number)."""
    try:
        return float(text)
    except ValueError:
        return math.nan


LOAD_HEADER = ("# load exp%_8B_fixed exp%_8B_poisson exp%_64B_fixed exp%_64B_poisson"
               " mean_queued max_queued mean_in_flight max_in_flight link_util%"
               " latency_added% runtime_added% (8B Poisson)")
OCC_KEYS = ("exposed_pct", "mean_queued", "max_queued", "mean_in_flight",
            "max_in_flight", "link_util_pct", "latency_added_pct", "runtime_added_pct")


def load_sweep(m: Model) -> List[List[str]]:
    """A row per offered load: the exposed figures and the queue's state."""
    rows = []
    for load in LOADS:
        f8 = m.fig("--load", load)[0]
        occ = m.fig("--load", load, "--arrivals", "poisson", keys=OCC_KEYS)
        f64 = m.fig("--load", load, "--size", "64")[0]
        p64 = m.fig("--load", load, "--size", "64", "--arrivals", "poisson")[0]
        rows.append([load, f8, occ[0], f64, p64, *occ[1:]])
    return rows


def depth_sweep(m: Model) -> List[List[str]]:
    """A row per datapath depth: both regimes and three Poisson loads."""
    rows = []
    for d in DEPTHS:
        rows.append([
            d,
            m.fig("--dependent", "--depth", d)[0],
            m.fig("--load", "0.1", "--arrivals", "poisson", "--depth", d)[0],
            m.fig("--load", "0.5", "--arrivals", "poisson", "--depth", d)[0],
            m.fig("--load", "0.9", "--arrivals", "poisson", "--depth", d)[0],
            m.fig("--load", "1.0", "--depth", d)[0],
        ])
    return rows


def write_dat(path: str, header: str, rows: List[List[str]]) -> None:
    with open(path, "w", encoding="utf-8") as f:
        f.write(header + "\n")
        for row in rows:
            f.write(" ".join(row) + "\n")


def print_load_table(rows: List[List[str]], llc: str) -> None:
    print("Exposed datapath overhead (% of access time) vs offered load, depth 5:")
    print("%6s | %9s %9s | %9s %9s | %8s %6s %9s %6s %6s | %6s %6s" % (
        "load", "8B even", "8B pois", "64B even", "64B pois",
        "mean q", "max q", "in flight", "max", "util%", "lat+%", "run+%"))
    for r in rows:
        print("%6s | %9.4f %9.4f | %9.4f %9.4f | %8.2f %6s %9.1f %6s %6.1f | %6.3f %6.3f" % (
            r[0], num(r[1]), num(r[2]), num(r[3]), num(r[4]), num(r[5]), r[6],
            num(r[7]), r[8], num(r[9]), num(r[10]), num(r[11])))
    print("(right of the exposed figures, for the 8-byte Poisson stream: requests "
          "queued before the link and in flight, link utilisation, and how much "
          "the datapath adds to the summed latency and to the runtime against "
          f"depth 0; LLC-miss regime: {llc} %)")
    print()


def print_depth_table(rows: List[List[str]]) -> None:
    print("Exposed datapath overhead (%) vs datapath depth, 8-byte accesses:")
    print("%6s | %9s | %9s %9s %9s | %9s" % (
        "depth", "LLC-miss", "pois 0.1", "pois 0.5", "pois 0.9", "load 1.0"))
    for r in rows:
        print("%6s | %9.4f | %9.4f %9.4f %9.4f | %9.4f" % (
            r[0], num(r[1]), num(r[2]), num(r[3]), num(r[4]), num(r[5])))
    print()


def rtl_latency(harness: str) -> int:
    """The cycles the RTL datapath takes (its harness's --latency)."""
    proc = subprocess.run([harness, "--latency"], stdout=subprocess.PIPE,
                          text=True, check=False)
    value = parse_kv(proc.stdout).get("rtl_latency_cycles", "")
    if proc.returncode != 0 or not value.isdigit():
        raise BenchError(f"bench timing: the RTL harness measured no latency "
                         f"({harness} --latency)")
    return int(value)


GNUPLOT = """\
set terminal pngcairo size 800,500 font "sans,10"
set grid
set key top right
set datafile missing "nan"

set output "{out}/timing-load.png"
set title "Exposed datapath overhead vs offered load (depth 5, 1 GHz, 300 ns, 32 GB/s)"
set xlabel "offered load (fraction of link bandwidth)"
set ylabel "exposed overhead (% of access time)"
set xrange [0:1.25]
set yrange [0:2]
set key right center
plot "{out}/load.dat" using 1:2 with linespoints pt 7 ps 0.6 lw 2 title "8 B, evenly spaced", \\
     "" using 1:3 with linespoints pt 5 ps 0.6 lw 2 title "8 B, Poisson", \\
     "" using 1:4 with linespoints pt 9 ps 0.6 lw 2 title "64 B, evenly spaced", \\
     "" using 1:5 with linespoints pt 11 ps 0.6 lw 2 title "64 B, Poisson", \\
     {llc} with lines dt 2 lw 2 lc rgb "black" title sprintf("LLC-miss regime (dependent): %.3f %%", {llc})

set output "{out}/timing-depth.png"
set title "Exposed datapath overhead vs datapath depth (8 B accesses, 1 GHz, 300 ns, 32 GB/s)"
set xlabel "datapath depth (cycles)"
set ylabel "exposed overhead (% of access time, log scale)"
set xrange [0:32]
set logscale y
set yrange [0.0001:20]
set format y "%g"
set key bottom right
set arrow from 5, graph 0 to 5, graph 1 nohead dt 3 lc rgb "gray40"
set label "default depth 5" at 5.3, 10 textcolor rgb "gray40"
# (depth 0 exposes nothing: off the log scale)
plot "{out}/depth.dat" using 1:2 with linespoints pt 7 ps 0.6 lw 2 title "LLC-miss regime (dependent)", \\
     "" using 1:3 with linespoints pt 5 ps 0.6 lw 2 title "load 0.1, Poisson", \\
     "" using 1:4 with linespoints pt 9 ps 0.6 lw 2 title "load 0.5, Poisson", \\
     "" using 1:5 with linespoints pt 11 ps 0.6 lw 2 title "load 0.9, Poisson", \\
     "" using 1:6 with linespoints pt 13 ps 0.6 lw 2 title "load 1.0 (bandwidth pressure)", \\
     1.67 with lines dt 2 lc rgb "black" title "1.67 %"
"""


def plot(out: str, llc: str) -> None:
    """Both PNGs from the .dat files (gnuplot, which bench.sh installs)."""
    script = GNUPLOT.format(out=out, llc=llc)
    proc = subprocess.run(["gnuplot"], input=script, text=True, check=False)
    if proc.returncode != 0:
        raise BenchError("gnuplot failed")


class Options:
    """The user's options (USAGE); refused with the bash front door's words."""

    def __init__(self, argv: List[str]):
        self.count = 10000
        self.plot = True
        self.docs = False
        self.help = False
        count = "10000"
        it = iter(argv)
        for arg in it:
            if arg == "--count":
                count = next(it, None)
                if count is None:
                    raise UsageError("--count needs a value", usage=False)
            elif arg.startswith("--count="):
                count = arg.split("=", 1)[1]
            elif arg == "--no-plot":
                self.plot = False
            elif arg == "--docs":
                self.docs = True
            elif arg in ("-h", "--help"):
                self.help = True
                return
            else:
                raise UsageError(f'nfabric bench timing: unknown option "{arg}"')
        if not count.isdigit():
            raise UsageError(f'--count: a number, not "{count}"', usage=False)
        self.count = int(count)


class UsageError(RuntimeError):
    """A bad option: the message, then (if usage) the usage, status 2."""

    def __init__(self, msg: str, usage: bool = True):
        super().__init__(msg)
        self.usage = usage


def env(name: str) -> str:
    """A path scripts/lib/bench.sh hands over."""
    value = os.environ.get(name)
    if not value:
        raise BenchError(f"bench timing: {name} is not set (run it as scripts/nfabric bench timing)")
    return value


def run(a: Options) -> int:
    """The sweeps, the tables and the key figures; 0 if the targets hold."""
    m = Model(env("NF_TIMING_TOOL"), a.count)
    out = env("NF_TIMING_OUT")
    os.makedirs(out, exist_ok=True)

    # ---- the two regimes ----
    llc, llc_ppm = m.fig("--dependent", keys=("exposed_pct", "exposed_ppm"))
    llc64 = m.fig("--dependent", "--size", "64")[0]
    llc32 = m.fig("--dependent", "--depth", "32")[0]
    bw, bwq, bwf = m.fig("--load", "1.0",
                         keys=("exposed_pct", "max_queued", "mean_in_flight"))
    bwp = m.fig("--load", "1.0", "--arrivals", "poisson")[0]
    over = m.fig("--load", "1.2")[0]

    loads = load_sweep(m)
    write_dat(os.path.join(out, "load.dat"), LOAD_HEADER, loads)
    print_load_table(loads, llc)

    depths = depth_sweep(m)
    write_dat(os.path.join(out, "depth.dat"),
              "# depth exp%_dependent exp%_poisson0.1 exp%_poisson0.5 "
              "exp%_poisson0.9 exp%_load1.0 (8B)", depths)
    print_depth_table(depths)

    # ---- key figures ----
    print(f"count={a.count}")
    print(f"llc_miss_exposed_pct={llc}")
    print(f"llc_miss_exposed_ppm={llc_ppm}")
    print(f"llc_miss_64b_exposed_pct={llc64}")
    print(f"llc_miss_depth32_exposed_pct={llc32}")
    print(f"bw_pressure_exposed_pct={bw}")
    print(f"bw_pressure_poisson_exposed_pct={bwp}")
    print(f"bw_pressure_max_queued={bwq}")
    print(f"bw_pressure_mean_in_flight={bwf}")
    print(f"overload_1.2_exposed_pct={over}")
    # The depth the RTL measures (hw/rtl, docs/rtl.md), through the same
    # model, beside the paper's bound.
    lat = rtl_latency(env("NF_RTL_HARNESS"))
    rtl_llc = m.fig("--dependent", "--depth", str(lat))[0]
    print(f"rtl_latency_cycles={lat}")
    print(f"llc_miss_exposed_pct_at_rtl_latency={rtl_llc}")
    print(f"paper_exposed_bound_pct={PAPER_BOUND_PCT}")
    print("rtl_exposed_vs_paper_bound=%.4f" % (num(rtl_llc) / PAPER_BOUND_PCT))
    for r in loads:
        print(f"load_{r[0]}_exposed_pct={r[1]}")
        print(f"load_{r[0]}_poisson_exposed_pct={r[2]}")
    meets = num(llc) <= PAPER_BOUND_PCT and num(bw) <= 0.01
    print(f"meets_targets={'yes' if meets else 'no'}")

    if a.plot:
        plot(out, llc)
        print(f"plot_load={out}/timing-load.png")
        print(f"plot_depth={out}/timing-depth.png")
        if a.docs:
            docs = env("NF_DOCS_IMG")
            os.makedirs(docs, exist_ok=True)
            for name in ("timing-load.png", "timing-depth.png"):
                shutil.copyfile(os.path.join(out, name), os.path.join(docs, name))
            print("docs_plots=docs/img/timing-load.png,docs/img/timing-depth.png")
    return 0 if meets else 1


def main(argv: List[str]) -> int:
    """check ARGS: the options only (before anything is built); run ARGS."""
    if not argv or argv[0] not in ("check", "run"):
        print("usage: timing_sweep.py check|run [OPTIONS] (scripts/nfabric bench timing)",
              file=sys.stderr)
        return 2
    try:
        opts = Options(argv[1:])
        if opts.help:
            print(USAGE, end="")
            return 0
        return 0 if argv[0] == "check" else run(opts)
    except (UsageError, BenchError) as e:
        if isinstance(e, UsageError) and e.usage:
            print(e, file=sys.stderr)
            print(USAGE, end="", file=sys.stderr)
            return 2
        sys.stdout.flush()
        print(f"nfabric: error: {e}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
