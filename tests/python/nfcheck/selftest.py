# SPDX-License-Identifier: GPL-2.0-or-later
"""Checks of the hooks' aggregation against a reference (TAP on stdout).

    python3 -m nfcheck.selftest --ranks 3 [--dir DIR]

Each rank is a process and a head of one shared device (on the host, the
device's controller over a state file and a memory file; in a guest, with
--guest, the real device).  Every rank exchanges the same bucket layout with
its own deterministic gradients; each rank computes what the device must
return from every rank's input (signs, ternary codes: the same compression
functions, independent aggregation) and compares: G-Binary bit-exact
majority, G-Ternary gated sums, FP32 means, layer-aware split.  Then bad
configurations must be refused with a clear exception.
"""
import argparse
import multiprocessing as mp
import os
import sys
import traceback

import numpy as np
import torch

from nfabric import hostrun
from nfabric.device import Device, NFabricError
from nfabric.hooks import FabricJob, ternarize

MODES = ("fp32", "gbinary", "gternary", "layer_aware")

SIZES = [(7, 5), (300,), (1000,), (64, 10), (10,)]     # the last Linear: (64,10)+(10,)


class _Model(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.a = torch.nn.Parameter(torch.zeros(7, 5))
        self.b = torch.nn.Parameter(torch.zeros(300))
        self.c = torch.nn.Parameter(torch.zeros(1000))
        self.head = torch.nn.Linear(64, 10)


def _grads(rank, step):
    rng = np.random.default_rng(1234 + 97 * rank + 7919 * step)
    return [rng.standard_normal(int(np.prod(s))).astype(np.float32)
            for s in [(7, 5), (300,), (1000,), (10, 64), (10,)]]


def _expect(mode, world, step, threshold, seed, fp32_mask):
    """What every rank must read: computed from every rank's input."""
    per_rank = [_grads(r, step) for r in range(world)]
    out = []
    rngs = [np.random.default_rng(seed * 1000003 + r) for r in range(world)]
    # The ranks' RNGs have drawn for earlier steps: replay those draws.
    for st in range(step):
        for r in range(world):
            for k, g in enumerate(_grads(r, st)):
                if _path(mode, fp32_mask[k]) == "gternary":
                    ternarize(g, rngs[r])
    codes = [[None] * len(SIZES) for _ in range(world)]
    scales = [[None] * len(SIZES) for _ in range(world)]
    for r in range(world):
        for k, g in enumerate(per_rank[r]):
            if _path(mode, fp32_mask[k]) == "gternary":
                scales[r][k], codes[r][k] = ternarize(g, rngs[r])
    for k in range(len(SIZES)):
        path = _path(mode, fp32_mask[k])
        gs = [per_rank[r][k] for r in range(world)]
        if path == "fp32":
            acc = np.zeros_like(gs[0])
            for g in gs:
                acc += g
            out.append(acc / np.float32(world))
        elif path == "gbinary":
            count = sum(np.where(g >= 0, 1, -1) for g in gs)
            scale = np.float32(np.mean(np.array([np.float32(np.abs(g).mean())
                                                 for g in gs], np.float32)))
            out.append(np.where(count >= 0, scale, -scale).astype(np.float32))
        else:
            total = sum(c.astype(np.int32) for c in (codes[r][k] for r in range(world)))
            gate = np.where(total >= threshold, 1.0,
                            np.where(total <= -threshold, -1.0, 0.0))
            scale = np.float32(np.mean(np.array([scales[r][k] for r in range(world)],
                                                np.float32)))
            out.append((gate * scale).astype(np.float32))
    return out


def _path(mode, is_fp32):
    if mode == "fp32":
        return "fp32"
    if mode == "layer_aware":
        return "fp32" if is_fp32 else "gbinary"
    return mode


def _open(args, rank, heads):
    if args.guest:
        return Device.open()
    return Device.host(os.path.join(args.dir, "state"), os.path.join(args.dir, "mem"),
                       64 << 20, rank, heads)


def _rank_main(args, mode, rank, q):
    lines = []
    try:
        dev = _open(args, rank, args.ranks if mode != "bad" else 1)
        model = _Model()
        params = [model.a, model.b, model.c, model.head.weight, model.head.bias]
        if mode != "bad":
            # One job for every mode: the windows and layout do not depend
            # on it, so all ranks switch modes at the same exchange.
            job = FabricJob(dev, model, rank, args.ranks, mode="fp32", seed=5,
                            base=0x100000, first_window=8)
            fp32_mask = [job.layout[p.data_ptr()][3] for p in params]
            for mode in MODES:
                job.mode = mode
                job.step = 0
                for step in range(3):
                    grads = _grads(rank, step)
                    got = job.exchange([(p.data_ptr(), g)
                                        for p, g in zip(params, grads)])
                    want = _expect(mode, args.ranks, step, job.threshold, 5,
                                   fp32_mask)
                    same = all(np.array_equal(a, b) for a, b in zip(got, want))
                    lines.append(("ok" if same else "not ok",
                                  "[rank %d] %s step %d: the aggregated bucket "
                                  "equals the reference of all %d ranks' "
                                  "gradients%s" % (
                                      rank, mode, step, args.ranks,
                                      "" if same else " (max diff %g)" % max(
                                          float(np.max(np.abs(a - b))) for a, b
                                          in zip(got, want)))))
                    job.step += 1
            job.close()
        elif rank == 0:
            # Bad configurations: a clear exception each.
            job = FabricJob(dev, model, 0, 1, mode="gbinary", base=0x100000,
                            first_window=8)
            big = torch.nn.Linear(4096, 4096)
            for net, jmode, word, what, accepted in (
                    (big, "fp32", "device memory",
                     "a job larger than the device memory left is refused",
                     "a job larger than device memory was accepted"),
                    (model, "gbinary", "overlap",
                     "a job whose windows overlap another job's ranges is refused",
                     "a job over another job's ranges was accepted")):
                try:
                    FabricJob(dev, net, 0, 1, mode=jmode, base=0x100000,
                              first_window=0)
                    lines.append(("not ok", "[rank 0] " + accepted))
                except NFabricError as e:
                    lines.append(("ok" if word in str(e) else "not ok",
                                  "[rank 0] %s: %s" % (what, e)))
            try:
                FabricJob(dev, model, 0, 1, mode="int8")
                lines.append(("not ok", "[rank 0] an unknown mode was accepted"))
            except ValueError as e:
                lines.append(("ok", "[rank 0] an unknown mode is refused: %s" % e))
            del job
        dev.close()
    except Exception:
        lines.append(("not ok", "[rank %d] %s raised: %s" % (
            rank, mode, traceback.format_exc().replace("\n", " | "))))
    q.put(lines)


def _run(args, mode, results):
    """One mode: fresh device files, one process per rank."""
    if not args.guest:
        for f in ("state", "mem"):
            try:
                os.unlink(os.path.join(args.dir, f))
            except FileNotFoundError:
                pass
    ctx = mp.get_context("fork")
    q = ctx.Queue()
    ranks = [args.rank] if args.guest else range(args.ranks if mode != "bad" else 1)
    procs = [ctx.Process(target=_rank_main, args=(args, mode, r, q)) for r in ranks]
    for p in procs:
        p.start()
    for _ in procs:
        results.extend(q.get(timeout=900))
    for p in procs:
        p.join()
        if p.exitcode:
            results.append(("not ok", "%s: a rank exited with %d" % (mode, p.exitcode)))


def main(argv=None):
    ap = argparse.ArgumentParser(prog="python3 -m nfcheck.selftest")
    ap.add_argument("--ranks", type=int, default=3)
    ap.add_argument("--dir", default=None,
                    help="host: the device's state and memory files (default: "
                    "a new directory under /dev/shm, removed at the end)")
    ap.add_argument("--guest", action="store_true",
                    help="use the guest's device (one rank per guest, --rank)")
    ap.add_argument("--rank", type=int, default=None)
    args = ap.parse_args(argv)
    if args.guest or args.dir:
        if args.dir:
            os.makedirs(args.dir, exist_ok=True)
        return _main(args)
    with hostrun.scratch("selftest") as d:
        args.dir = d
        return _main(args)


def _main(args):
    results = []
    for mode in ("all", "bad"):
        if args.guest and mode == "bad":
            continue        # needs a device of its own (host only)
        _run(args, mode, results)
        print("# %s: %d checks so far" % (mode, len(results)), file=sys.stderr)
    n = bad = 0
    for verdict, text in results:
        n += 1
        bad += verdict != "ok"
        print("%s %d - %s" % (verdict, n, text))
    print("1..%d" % n)
    return 1 if bad or not n else 0


if __name__ == "__main__":
    sys.exit(main())
