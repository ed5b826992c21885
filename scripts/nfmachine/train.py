# SPDX-License-Identifier: GPL-2.0-or-later
"""nfabric-train (guest/train/, docs/training.md): its study and its suite.

  `scripts/nfabric bench train`  the host study: every mode on the easy and
                                 the hard configuration, key=value lines,
                                 plots in build/bench/train/ and docs/img/
  suite `train`                  host determinism and traffic checks, and a
                                 guest run through the device whose
                                 aggregated-gradient hashes must equal the
                                 host engine run's

scripts/lib/train.sh provisions (the data set, the host build embedding
its subset, gnuplot, the guest image) and hands over with the paths in
NF_TRAIN_BIN, NF_TRAIN_STATIC, NF_TRAIN_OUT, NF_GUEST, NF_DOCS_IMG.
"""

import os
import shlex
import subprocess
import sys
import time
from typing import Callable, List, Optional

from . import hosts
from .options import Parser, UsageError
from .tap import Tap

# NAME, nfabric-train arguments.  The first four are the modes of the
# study; the others are the variants docs/training.md discusses.
RUNS = [
    ("fp32", "--mode fp32"),
    ("gbinary", "--mode gbinary"),
    ("gternary", "--mode gternary"),
    ("layeraware", "--mode layeraware"),
    ("layeraware_gternary", "--mode layeraware --lowbit gternary"),
    ("gbinary_ef", "--mode gbinary --ef"),
    ("layeraware_ef", "--mode layeraware --ef"),
]
CONFIGS = ("easy", "hard")

# Runs compared between the host (engine) and the guest (device).
CHECK_RUNS = [
    ("fp32", "--mode fp32"),
    ("gbinary", "--mode gbinary"),
    ("gternary", "--mode gternary"),
    ("layeraware", "--mode layeraware"),
    ("gbinary_ef", "--mode gbinary --ef"),
    ("layeraware_gt_warm", "--mode layeraware --lowbit gternary --warmup 2"),
]
# Small enough for TCG: 2 workers, 5 steps of 32 images, 200 test images.
GUEST_ARGS = ("--workers 2 --batch 32 --steps 5 --hash-steps 5 --subset 200 "
              "--test-subset 200 --data embedded --quiet")
# The host determinism runs.
SMALL = "--subset 2000 --steps 20 --hash-steps 10 --test-subset 1000 --quiet"

USAGE = """\
usage: scripts/nfabric bench train [--seed N] [--no-plots] [-- NFABRIC-TRAIN-ARGS...]

Trains the MLP of docs/training.md with every aggregation mode (fp32,
gbinary, gternary, layeraware and the variants layeraware_gternary,
gbinary_ef, layeraware_ef) on the easy and the hard configuration, through
the engine backend (host memory).  Prints acc_MODE_CONFIG= (final test
accuracy, %), traffic_pct_MODE_CONFIG= (bytes the workers wrote, % of the
fp32 run's, as counted by the engine backend), grad_bytes_per_step_*,
wall_s_*.  Outputs, CSV curves and PNG plots: build/bench/train/; the plots
are copied to docs/img/train-*.png.  Arguments after -- go to every run.
"""


class TrainError(RuntimeError):
    """A run or a plot failed; the message says which."""


def env(name: str) -> str:
    return hosts.env(name, TrainError, "train: ")


def log(text: str) -> None:
    """A progress line on stderr, as nf_log writes them."""
    sys.stderr.write(f"[nfabric] {text}\n")
    sys.stderr.flush()


def kv_text(text: str, key: str) -> str:
    """The last value of KEY= in text ("" if none)."""
    value = ""
    prefix = key + "="
    for line in text.splitlines():
        if line.startswith(prefix):
            value = line[len(prefix):]
    return value


def kv(path: str, key: str) -> str:
    """The last value of KEY= in a file ("" if none or no file)."""
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            return kv_text(f.read(), key)
    except FileNotFoundError:
        return ""


def train(argv: List[str], out_path: str) -> int:
    """nfabric-train ARGV, its output (both streams) in out_path."""
    with open(out_path, "w", encoding="utf-8") as out:
        try:
            return subprocess.run([env("NF_TRAIN_BIN"), *argv], stdout=out,
                                  stderr=subprocess.STDOUT, check=False).returncode
        except OSError as e:
            out.write(f"cannot run {env('NF_TRAIN_BIN')}: {e.strerror}\n")
            return 127


# ---- bench ----------------------------------------------------------------

class BenchOptions:
    def __init__(self, argv: List[str]):
        parser = Parser("bench train", error=UsageError, prefix="bench train: ").options(
            ("--seed",), ("--no-plots",))
        parser.add_argument("extra", nargs="*")
        ns = parser.parse(argv)
        self.help = ns is None
        self.seed, self.plots, self.extra = "1", True, []
        if ns is not None:
            self.seed = "1" if ns.seed is None else ns.seed
            self.plots, self.extra = not ns.no_plots, ns.extra
            after = list(argv[argv.index("--") + 1:]) if "--" in argv else []
            if self.extra != after:     # an argument before "--"
                raise UsageError(f'bench train: unknown argument "{self.extra[0]}"', usage=True)


def bench_results(out: str, seed: str) -> List[str]:
    """The key=value lines of the study's outputs in out."""
    lines = ["train_backend=engine",
             f"traffic_source={kv(os.path.join(out, 'fp32_easy.txt'), 'traffic_source')}",
             f"seed={seed}"]
    for cfg in CONFIGS:
        base = kv(os.path.join(out, f"fp32_{cfg}.txt"), "grad_bytes_per_step")
        lines.append(f"steps_{cfg}={kv(os.path.join(out, f'fp32_{cfg}.txt'), 'steps')}")
        for name, _ in RUNS:
            f = os.path.join(out, f"{name}_{cfg}.txt")
            b = kv(f, "grad_bytes_per_step")
            lines.append(f"acc_{name}_{cfg}={kv(f, 'final_acc')}")
            lines.append("traffic_pct_%s_%s=%.3f" % (name, cfg, 100 * float(b or 0) / float(base)))
            lines.append(f"grad_bytes_per_step_{name}_{cfg}={b}")
            lines.append(f"wall_s_{name}_{cfg}={kv(f, 'wall_s')}")
    return lines


def gnuplot(script: str) -> None:
    try:
        rc = subprocess.run(["gnuplot"], input=script, text=True, check=False).returncode
    except OSError as e:
        raise TrainError(f"train: gnuplot: {e.strerror}") from e
    if rc != 0:
        raise TrainError("train: gnuplot failed")


def plots(d: str, docs: str) -> None:
    """Accuracy vs step per configuration; traffic per mode (both copied
    to docs/img)."""
    colors = (1, 2, 3, 4, 6, 7, 8)
    for cfg in CONFIGS:
        curves = ", ".join(
            f"'{d}/{name}_{cfg}.csv' using 1:3 with linespoints lt {colors[i]} "
            f"dt {1 if i < 4 else 2} pt 7 ps 0.5 title '{name}'"
            for i, (name, _) in enumerate(RUNS))
        gnuplot(f"""set terminal pngcairo noenhanced size 900,560 font ",11"
set output '{d}/train-acc-{cfg}.png'
set title "nfabric-train, {cfg} configuration: test accuracy vs step (2000 test images per point)"
set xlabel 'optimiser step'
set ylabel 'test accuracy (%)'
set key bottom right
set grid
set datafile separator ','
set yrange [{60 if cfg == 'easy' else 30}:95]
plot {curves}
""")
    # Traffic per mode: % of FP32 (bytes written by the workers).  Both
    # configurations train the same network, so the traffic is the same;
    # the labels give each configuration's final accuracy.
    res = os.path.join(d, "results.txt")
    with open(os.path.join(d, "traffic.dat"), "w", encoding="utf-8") as f:
        f.write("# mode traffic acc_easy acc_hard\n")
        for name, _ in RUNS:
            f.write(f"{name} {kv(res, f'traffic_pct_{name}_easy')} "
                    f"{kv(res, f'acc_{name}_easy')} {kv(res, f'acc_{name}_hard')}\n")
    gnuplot(f"""set terminal pngcairo noenhanced size 900,560 font ",11"
set output '{d}/train-traffic.png'
set title "nfabric-train: gradient bytes written per step, % of FP32 (engine backend's counts)"
set style fill solid 0.8 border -1
set boxwidth 0.6
set logscale y
set yrange [1:300]
set xrange [-0.6:{len(RUNS)}-0.4]
set ylabel 'bytes written by the workers, % of FP32 (log scale)'
set xtics rotate by -20
set grid ytics
set label 1 "labels: traffic %, final test accuracy easy / hard" at graph 0.02, graph 0.95
plot '{d}/traffic.dat' using 0:2:xtic(1) with boxes lc rgb '#3b7dd8' notitle, \\
     '' using 0:($2*1.5):(sprintf("%.2f%%\\n%.1f / %.1f", $2, $3, $4)) with labels notitle
""")
    os.makedirs(docs, exist_ok=True)
    for name in ("train-acc-easy", "train-acc-hard", "train-traffic"):
        with open(os.path.join(d, name + ".png"), "rb") as src, \
             open(os.path.join(docs, name + ".png"), "wb") as dst:
            dst.write(src.read())
    log(f"train: plots in {d} and docs/img/train-*.png")


def bench(opts: BenchOptions) -> int:
    out = env("NF_TRAIN_OUT")
    os.makedirs(out, exist_ok=True)
    t0 = time.monotonic()
    for cfg in CONFIGS:
        for name, args in RUNS:
            f = os.path.join(out, f"{name}_{cfg}")
            log(f"train: {name} ({cfg})")
            rc = train(["--config", cfg, *args.split(), "--seed", opts.seed, "--quiet",
                        "--csv", f + ".csv", *opts.extra], f + ".txt")
            if rc != 0:
                raise TrainError(f"train: {name} {cfg} failed (output: {f}.txt)")
    lines = bench_results(out, opts.seed)
    with open(os.path.join(out, "results.txt"), "w", encoding="utf-8") as f:
        f.write("".join(l + "\n" for l in lines))
    print("\n".join(lines), flush=True)
    if opts.plots:
        plots(out, env("NF_DOCS_IMG"))
    print("study_s=%.1f" % (time.monotonic() - t0))
    return 0


# ---- suite ----------------------------------------------------------------

def in_range(path: str, lo: float, hi: float) -> bool:
    v = kv(path, "traffic_pct")
    return v != "" and lo <= float(v) <= hi


def host_checks(tap: Tap, d: str) -> None:
    """What the host build must show: built, deterministic, its traffic."""
    binary, static = env("NF_TRAIN_BIN"), env("NF_TRAIN_STATIC")
    tap.ok(os.access(binary, os.X_OK) and os.access(static, os.X_OK),
           "nfabric-train built for the host and the guest")
    interp = subprocess.run(["readelf", "-l", static], capture_output=True, text=True,
                            check=False).stdout
    tap.ok("INTERP" not in interp, "guest nfabric-train is a static binary")
    rc = train(["--has-embedded"], os.path.join(d, "embedded.txt"))
    with open(os.path.join(d, "embedded.txt"), encoding="utf-8") as f:
        emb = f.read().replace("\n", " ")
    tap.ok(rc == 0, f"embedded subset present ({emb})")

    # Host determinism: the same seed twice gives the same hashes.
    for name, args in CHECK_RUNS:
        f1, f2 = (os.path.join(d, f"host-{name}-{i}.txt") for i in (1, 2))
        st = train([*SMALL.split(), *args.split()], f1)
        if st == 0:
            st = train([*SMALL.split(), *args.split()], f2)
        a, b = kv(f1, "grad_hash"), kv(f2, "grad_hash")
        tap.ok(st == 0 and a != "" and a == b and kv(f1, "weights_hash") == kv(f2, "weights_hash"),
               f"host determinism {name}: same seed twice, grad_hash {a} = {b}, same weights")
    seed2 = os.path.join(d, "host-gbinary-seed2.txt")
    train([*SMALL.split(), "--mode", "gbinary", "--seed", "2"], seed2)
    a, b = kv(os.path.join(d, "host-gbinary-1.txt"), "grad_hash"), kv(seed2, "grad_hash")
    tap.ok(b != "" and a != b, f"another seed gives another hash ({a} vs {b})")

    # Traffic as the engine backend counted it.
    k = os.path.join(d, "host-fp32-1.txt")
    per_step = kv(k, "fp32_bytes_per_step")
    tap.ok(kv(k, "traffic_pct") == "100.000" and per_step.isdigit() and
           kv(k, "bytes_written_fp32") == str(int(per_step) * 20),
           "fp32 writes W x 4 bytes x params per step on the FP32 path")
    gb, gt, la = (os.path.join(d, f"host-{m}-1.txt") for m in ("gbinary", "gternary", "layeraware"))
    tap.ok(in_range(gb, 3.1, 3.2) and kv(gb, "bytes_written_fp32") == "0",
           f"gbinary traffic {kv(gb, 'traffic_pct')}% of FP32, all on the G-Binary path")
    tap.ok(in_range(gt, 6.2, 6.4),
           f"gternary traffic {kv(gt, 'traffic_pct')}% of FP32 (codes + scales)")
    la_fp32 = kv(la, "bytes_written_fp32")
    tap.ok(in_range(la, 3.5, 3.8) and la_fp32.isdigit() and int(la_fp32) > 0,
           f"layeraware traffic {kv(la, 'traffic_pct')}% of FP32 (head on FP32)")
    acc_f, acc_b = kv(k, "final_acc"), kv(gb, "final_acc")
    learned = acc_f != "" and acc_b != "" and float(acc_f) > 50 and float(acc_b) > 50
    tap.ok(learned, f"20 steps learn: fp32 {acc_f}%, gbinary {acc_b}%")


def guest_script() -> str:
    """The guest's command: every check run, each between markers."""
    cmd = ('r() { n=$1; shift; echo NFT-BEGIN $n; nfabric-train --device '
           f'{GUEST_ARGS} "$@"; echo NFT-END $n rc=$?; }};')
    for name, args in CHECK_RUNS:
        cmd += f" r {name} {args};"
    return cmd


def guest_section(console: str, name: str) -> str:
    """What run NAME printed between its markers, and end=its status."""
    out, on = [], False
    end = f"NFT-END {name} "
    for line in console.splitlines():
        if not on and line == f"NFT-BEGIN {name}":
            on = True
        elif on and line.startswith(end):
            out.append("end=" + line[len(end) + len("rc="):])
            on = False
        elif on:
            out.append(line)
    return "\n".join(out) + ("\n" if out else "")


STAT_KEYS = ("bytes_written_fp32", "bytes_written_gbinary", "bytes_written_gternary",
             "bytes_read_fp32", "bytes_read_gbinary", "bytes_read_gternary")


def guest_checks(tap: Tap, d: str, boot: Callable[[str, str], int], why: str) -> None:
    """The same runs in the guest through the device: the same hashes."""
    if why:
        # Not a skip: the suite exists to run this part.
        tap.ok(False, f"guest run: {why}")
        return
    for name, args in CHECK_RUNS:
        if train([*GUEST_ARGS.split(), *args.split()], os.path.join(d, f"ref-{name}.txt")) != 0:
            print(f"# host reference run {name} failed", flush=True)
    console_log = os.path.join(d, "guest-console.log")
    log(f"train: guest run (console: {console_log})")
    rc = boot(guest_script(), console_log)
    tap.ok(rc == 0, f"guest runs exited 0 (vm status {rc})")
    with open(console_log, encoding="utf-8", errors="replace") as f:
        console = f.read().replace("\r", "")
    for name, _ in CHECK_RUNS:
        gpath, rpath = os.path.join(d, f"guest-{name}.txt"), os.path.join(d, f"ref-{name}.txt")
        with open(gpath, "w", encoding="utf-8") as f:
            f.write(guest_section(console, name))
        h, g = kv(rpath, "grad_hash"), kv(gpath, "grad_hash")
        tap.ok(kv(gpath, "end") == "0" and kv(gpath, "traffic_source") == "device-stats" and
               h != "" and h == g,
               f"guest {name}: device grad_hash {g} = host engine {h} (5 steps)")
        same = kv(rpath, "weights_hash") == kv(gpath, "weights_hash") and all(
            kv(gpath, k) != "" and kv(rpath, k) == kv(gpath, k) for k in STAT_KEYS)
        tap.ok(same, f"guest {name}: same final weights; device statistics = engine byte counts "
                     f"(wrote {kv(gpath, 'grad_bytes_per_step')} B/step, "
                     f"{kv(gpath, 'traffic_pct')}% of FP32)")


def guest_problem() -> str:
    """Why the guest part cannot run ("" if it can)."""
    qemu = os.environ.get("NF_QEMU_BIN", "")
    devs = ""
    if qemu and os.access(qemu, os.X_OK):
        devs = subprocess.run([qemu, "-nodefaults", "-device", "help"], capture_output=True,
                              text=True, check=False).stdout
    if '"cxl-neuron-fabric"' not in devs:
        return "QEMU with cxl-neuron-fabric not built (scripts/nfabric setup)"
    if os.environ.get("NF_TRAIN_IMAGE_FAILED"):
        return "image build failed"
    try:
        with open(os.path.join(env("NF_GUEST"), "rootfs", "usr", "bin", "nfabric-train"), "rb") as a, \
             open(env("NF_TRAIN_STATIC"), "rb") as b:
            if a.read() == b.read():
                return ""
    except FileNotFoundError:
        pass
    return ("the guest image has no current /usr/bin/nfabric-train "
            f"(scripts/lib/image.sh must copy {env('NF_TRAIN_STATIC')})")


def suite(boot: Callable[[str, str], int]) -> int:
    """Suite `train`; boot(command, console log) -> the vm's status."""
    d = os.path.join(env("NF_BUILD"), "test-logs", "train")
    if os.path.isdir(d):
        subprocess.run(["rm", "-rf", "--", d], check=True)
    os.makedirs(d)
    tap = Tap()
    host_checks(tap, d)
    guest_checks(tap, d, boot, guest_problem())
    return tap.status()


def main(argv: List[str], boot_vm: Optional[Callable] = None) -> int:
    """bench check|run ARGS, or suite (scripts/lib/train.sh); boot_vm(vm
    options) -> vm.Outcome boots the suite's guest (__main__.boot_vm)."""
    try:
        if argv[:1] == ["suite"]:
            if boot_vm is None:
                raise TrainError("train: the suite needs the vm machinery")
            return suite(lambda cmd, console_log: boot_vm(
                ["--quiet", "--log", console_log, "--timeout", "600", "--run", cmd]).status)
        if argv[:1] == ["bench"] and argv[1:2] in (["check"], ["run"]):
            opts = BenchOptions(argv[2:])
            if opts.help:
                sys.stdout.write(USAGE)
                return 0
            return 0 if argv[1] == "check" else bench(opts)
        raise UsageError("usage: train bench check|run [OPTIONS] | train suite")
    except UsageError as e:
        print(e, file=sys.stderr)
        if e.usage:
            sys.stderr.write(USAGE)
        return 2
    except TrainError as e:
        sys.stdout.flush()
        print(f"nfabric: error: {e}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    print(f"run it as python3 -m nfmachine train ... ({shlex.quote(sys.argv[0])})", file=sys.stderr)
    sys.exit(2)
