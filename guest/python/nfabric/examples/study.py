# SPDX-License-Identifier: GPL-2.0-or-later
"""Seeds x configurations of examples/train.py, mean and spread.

    python3 -m nfabric.examples.study --study ef --seeds 3 --steps 300

Runs every configuration of the study with --spawn RANKS for each seed (one
after another, each on a free port with device files of its own), and
prints key=value lines: acc_<config>_<shards>_mean=, _std= (sample standard deviation over
the seeds), _min=, _max=, and the per-seed accuracies.  --out DIR keeps each
run's JSON lines.

Studies:
  ef:   gbinary and gternary, error feedback off / worker / server / both,
        IID and non-IID shards (docs/pytorch.md, "Error feedback").
  hard: the hard configuration (--task pairs: 100 classes, two images side
        by side; docs/pytorch.md, "The hard configuration"): fp32, gbinary,
        gternary and layer_aware (sensitivity admission within a 20 %
        budget; G-Binary, and G-Ternary, on the rest), no error feedback,
        IID shards; keys acc_<config>_hard= (the mean), _std=, ..., the
        layers layer_aware kept, and recovered_pct_hard=, the share of the
        fp32 - gbinary gap that layer_aware closes, in percent
        (recovered_pct_hard_gternary=: the same with G-Ternary).
"""
import argparse
import json
import os
import subprocess
import sys

import numpy as np

STUDIES = {
    "ef": [(mode + ("" if ef == "off" else "_ef_" + ef),
            ["--mode", mode, "--error-feedback", ef])
           for mode in ("gbinary", "gternary")
           for ef in ("off", "worker", "server", "both")
           if mode == "gbinary" or ef in ("off", "worker", "server")],
    "hard": [(name, ["--task", "pairs"] + cfg) for name, cfg in (
        ("fp32", ["--mode", "fp32"]),
        ("gbinary", ["--mode", "gbinary"]),
        ("gternary", ["--mode", "gternary"]),
        ("layer_aware", ["--mode", "layer_aware", "--budget-pct", "20"]),
        ("layer_aware_gternary", ["--mode", "layer_aware", "--low", "gternary",
                                  "--budget-pct", "20"]))],
}
STUDY_SHARDS = {"ef": "iid,noniid", "hard": "iid"}


def run(cfg_args, shards, seed, args, tag):
    # train --spawn: its device files in a directory of its own, removed
    # when it ends; its process group on a free port (nfabric.hostrun).
    cmd = [sys.executable, "-m", "nfabric.examples.train", "--spawn", str(args.ranks),
           "--shards", shards, "--seed", str(seed), "--steps", str(args.steps)] + cfg_args
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                       universal_newlines=True)
    if args.out:
        with open(os.path.join(args.out, tag + ".json"), "w") as f:
            f.write(p.stdout)
    if p.returncode != 0:
        sys.stderr.write(p.stderr[-3000:])
        raise SystemExit("study: %s failed (rc %d)" % (tag, p.returncode))
    r0 = [json.loads(l) for l in p.stdout.splitlines() if '"rank": 0' in l][0]
    return r0


def main(argv=None):
    ap = argparse.ArgumentParser(prog="python3 -m nfabric.examples.study")
    ap.add_argument("--study", default="ef", choices=sorted(STUDIES))
    ap.add_argument("--seeds", type=int, default=3)
    ap.add_argument("--steps", type=int, default=300)
    ap.add_argument("--ranks", type=int, default=4)
    ap.add_argument("--shards", default="", help="default: the study's")
    ap.add_argument("--configs", default="", help="comma-separated subset")
    ap.add_argument("--out", default="")
    args = ap.parse_args(argv)
    if args.out:
        os.makedirs(args.out, exist_ok=True)
    configs = STUDIES[args.study]
    if args.configs:
        keep = set(args.configs.split(","))
        configs = [c for c in configs if c[0] in keep]
    print("study=%s" % args.study)
    print("seeds=%d" % args.seeds)
    print("steps=%d" % args.steps)
    means = {}
    for shards in (args.shards or STUDY_SHARDS[args.study]).split(","):
        for name, cfg in configs:
            accs, trace = [], []
            for seed in range(1, args.seeds + 1):
                r0 = run(cfg, shards, seed, args,
                         "%s-%s-s%d" % (name, shards, seed))
                accs.append(r0["acc"])
                trace.append(r0)
            a = np.array(accs)
            # What error feedback did (nfabric.hooks FabricJob.ef_trace):
            # rank 0's residual over gradient norm and compressor scale,
            # first and last tenth of the run, mean over the seeds.
            for f in ("ef_residual_ratio_first", "ef_residual_ratio_last",
                      "scale_first", "scale_last"):
                v = [r[f] for r in trace if f in r]
                if v:
                    print("%s_%s_%s=%.4g" % (f, name, "hard" if args.study == "hard"
                                             else shards, np.mean(v)))
            if args.study == "hard":
                # The keys of the hard configuration: acc_<config>_hard= is
                # the mean; what it sent and which layers stayed on FP32.
                k = "acc_%s_hard" % name
                print("%s=%.4f" % (k, a.mean()))
                print("traffic_pct_%s_hard=%.3f" % (name, np.mean([r["traffic_pct"] for r in trace])))
                # None: the run ended before the admission decided (within
                # its probe steps).
                kept = sorted(set("undecided" if r["fp32_layers"] is None
                                  else ",".join(sorted(r["fp32_layers"]))
                                  for r in trace if "fp32_layers" in r))
                if kept:
                    print("fp32_layers_%s_hard=%s" % (name, ";".join(kept)))
            else:
                k = "acc_%s_%s" % (name, shards)
                print("%s_mean=%.4f" % (k, a.mean()))
            means[name] = a.mean()
            print("%s_seeds=%s" % (k, ",".join("%.4f" % x for x in accs)))
            print("%s_std=%.4f" % (k, a.std(ddof=1) if len(a) > 1 else 0.0))
            print("%s_min=%.4f" % (k, a.min()))
            print("%s_max=%.4f" % (k, a.max()))
            sys.stdout.flush()
    if args.study == "hard":
        # The share of the gap between fp32 and the full low-bit path that
        # layer_aware (the same low path on the layers it admits) closes.
        for name, low, key in (("layer_aware", "gbinary", "recovered_pct_hard"),
                               ("layer_aware_gternary", "gternary",
                                "recovered_pct_hard_gternary")):
            if {name, low, "fp32"} <= set(means):
                gap = means["fp32"] - means[low]
                # n/a: no gap to close (the low path was as accurate).
                print("%s=%s" % (key, "%.1f" % (100.0 * (means[name] - means[low]) / gap)
                                 if gap > 0 else "n/a"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
