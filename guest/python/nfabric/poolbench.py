# SPDX-License-Identifier: GPL-2.0-or-later
"""Bench pools (scripts/nfabric bench pools, docs/pools.md): jobs of P
pools x H host ranks on Fashion-MNIST's small CNN, G-Binary.

    python3 -m nfabric.poolbench [--pools 1,2,4,8] [--heads 4] [--seeds 3]
                                 [--steps N] [--out DIR]

For each seed: one device holding 16 ranks (acc_flat16); for each P, the
counts exchange and the vote exchange (P = 1 is one device of H ranks).
Exactness: G-Binary and G-Ternary, P x H = 8 and 16, against one device
(pools_exact_equal_flat).  Traffic per step and rank: the payload handed to
the collectives between pools (and inside a pool), against FP32 gloo
allreduce of the same model (4 bytes a parameter); the device's bytes per
pool per step.  Prints key=value lines; writes pools.tsv to --out.
"""
import argparse
import json
import os
import subprocess
import sys

import numpy as np

TRAIN = [sys.executable, "-m", "nfabric.examples.train"]


def run(extra, spawn, args, seed):
    cmd = TRAIN + ["--spawn", str(spawn), "--steps", str(args.steps), "--seed", str(seed),
                   "--train-samples", str(args.train_samples),
                   "--test-samples", str(args.test_samples), "--batch", "16"] + extra
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                       universal_newlines=True, timeout=3600)
    rows = [json.loads(line) for line in p.stdout.splitlines() if line.startswith("{")]
    if p.returncode or len(rows) != spawn:
        raise RuntimeError("%s: exit %d: %s" % (" ".join(cmd), p.returncode, p.stderr[-800:]))
    return rows


def main(argv=None):
    ap = argparse.ArgumentParser(prog="python3 -m nfabric.poolbench")
    ap.add_argument("--pools", default="1,2,4,8")
    ap.add_argument("--heads", type=int, default=4)
    ap.add_argument("--seeds", type=int, default=3)
    ap.add_argument("--steps", type=int, default=60)
    ap.add_argument("--train-samples", type=int, default=8000)
    ap.add_argument("--test-samples", type=int, default=2000)
    ap.add_argument("--out", default=".")
    args = ap.parse_args(argv)
    plist = [int(x) for x in args.pools.split(",")]
    h = args.heads
    keys = {}
    rows_out = []

    def emit(k, v):
        keys[k] = v
        print("%s=%s" % (k, v), flush=True)

    # Exactness: low-bit paths, one device against pools.
    eq = 1
    for mode in ("gbinary", "gternary"):
        for p, hh in ((2, 4), (4, 4)):
            flat = run(["--mode", mode], p * hh, args, 1)
            pools = run(["--mode", mode, "--pools", str(p)], p * hh, args, 1)
            same = flat[0]["params"] == pools[0]["params"]
            print("# exact %s %dx%d: one device %s, pools %s" % (
                mode, p, hh, flat[0]["params"], pools[0]["params"]), flush=True)
            eq &= int(same)
    emit("pools_exact_equal_flat", eq)

    acc = {}
    net = {}
    for seed in range(1, args.seeds + 1):
        r = run(["--mode", "allreduce"], 16, args, seed)
        acc.setdefault("fp32_allreduce16", []).append(r[0]["acc"])
        net["fp32"] = r[0]["net_bytes_per_step"]["allreduce"]
        r = run(["--mode", "gbinary"], 16, args, seed)
        acc.setdefault("flat16", []).append(r[0]["acc"])
        for p in plist:
            for ex in ("counts", "votes"):
                if p == 1 and ex == "votes":
                    continue
                extra = ["--mode", "gbinary"] + (["--pools", str(p), "--exchange", ex]
                                                 if p > 1 else [])
                r = run(extra, p * h, args, seed)
                k = "pools%d_%s" % (p, ex)
                acc.setdefault(k, []).append(r[0]["acc"])
                inter = np.mean([x.get("net_bytes_per_step", {}).get("inter_pool", 0)
                                 for x in r])
                intra = np.mean([x.get("net_bytes_per_step", {}).get("intra_pool", 0)
                                 for x in r])
                cxl = sum(r[0]["device_write_bytes"].values()) / args.steps
                net[k] = (inter, intra, cxl, r[0]["seconds"] / args.steps)
                print("# seed %d %s: acc %.4f, inter-pool %.0f B/step/rank, intra-pool "
                      "%.0f, device writes %.0f B/step (pool 0), %.3f s/step" % (
                          seed, k, r[0]["acc"], inter, intra, cxl,
                          r[0]["seconds"] / args.steps), flush=True)
    for k, v in sorted(acc.items()):
        emit("acc_%s" % k, "%.4f" % np.mean(v))
        emit("acc_%s_spread" % k, "%.4f" % (max(v) - min(v)))
    pmax = max(plist)
    if "pools%d_counts" % pmax in net:
        emit("net_bytes_counts_vs_fp32", "%.4f" % (net["pools%d_counts" % pmax][0] / net["fp32"]))
    if "pools%d_votes" % pmax in net:
        emit("net_bytes_votes_vs_fp32", "%.4f" % (net["pools%d_votes" % pmax][0] / net["fp32"]))
    emit("net_bytes_fp32_allreduce", int(net["fp32"]))
    for k in sorted(k for k in net if k != "fp32"):
        inter, intra, cxl, sps = net[k]
        emit("net_bytes_inter_%s" % k, int(inter))
        emit("net_bytes_intra_%s" % k, int(intra))
        emit("cxl_write_bytes_%s" % k, int(cxl))
        emit("step_s_%s" % k, "%.3f" % sps)
        rows_out.append((k, np.mean(acc[k]), inter, intra, cxl, sps))
    os.makedirs(args.out, exist_ok=True)
    with open(os.path.join(args.out, "pools.tsv"), "w") as f:
        f.write("# name\tacc\tinter_pool_B\tintra_pool_B\tcxl_write_B\tstep_s\n")
        for row in rows_out:
            f.write("%s\t%.4f\t%.0f\t%.0f\t%.0f\t%.4f\n" % row)
        f.write("flat16\t%.4f\t0\t0\t0\t0\n" % np.mean(acc["flat16"]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
