# SPDX-License-Identifier: GPL-2.0-or-later
"""Seeds x configurations of examples/train.py, mean and spread.

    python3 -m nfabric.examples.study --study ef --seeds 3 --steps 300

Runs every configuration of the study with --spawn RANKS for each seed (one
after another, each on its own port and device files), and prints key=value
lines: acc_<config>_<shards>_mean=, _std= (sample standard deviation over
the seeds), _min=, _max=, and the per-seed accuracies.  --out DIR keeps each
run's JSON lines.

Studies:
  ef:  gbinary and gternary, error feedback off / worker / server / both,
       IID and non-IID shards (docs/pytorch.md, "Error feedback").
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
}


def run(cfg_args, shards, seed, args, port, tag):
    state = "/dev/shm/nfabric-study-%d.state" % os.getpid()
    mem = "/dev/shm/nfabric-study-%d.mem" % os.getpid()
    cmd = [sys.executable, "-m", "nfabric.examples.train", "--spawn", str(args.ranks),
           "--shards", shards, "--seed", str(seed), "--steps", str(args.steps),
           "--master-port", str(port), "--state", state, "--mem", mem] + cfg_args
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                       universal_newlines=True)
    for f in (state, mem):
        if os.path.exists(f):
            os.unlink(f)
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
    ap.add_argument("--shards", default="iid,noniid")
    ap.add_argument("--configs", default="", help="comma-separated subset")
    ap.add_argument("--port", type=int, default=29900)
    ap.add_argument("--out", default="")
    args = ap.parse_args(argv)
    if args.out:
        os.makedirs(args.out, exist_ok=True)
    configs = STUDIES[args.study]
    if args.configs:
        keep = set(args.configs.split(","))
        configs = [c for c in configs if c[0] in keep]
    port = args.port
    print("study=%s" % args.study)
    print("seeds=%d" % args.seeds)
    print("steps=%d" % args.steps)
    for shards in args.shards.split(","):
        for name, cfg in configs:
            accs, trace = [], []
            for seed in range(1, args.seeds + 1):
                port += 1
                r0 = run(cfg, shards, seed, args, port,
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
                    print("%s_%s_%s=%.4g" % (f, name, shards, np.mean(v)))
            k = "acc_%s_%s" % (name, shards)
            print("%s_seeds=%s" % (k, ",".join("%.4f" % x for x in accs)))
            print("%s_mean=%.4f" % (k, a.mean()))
            print("%s_std=%.4f" % (k, a.std(ddof=1) if len(a) > 1 else 0.0))
            print("%s_min=%.4f" % (k, a.min()))
            print("%s_max=%.4f" % (k, a.max()))
            sys.stdout.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main())
