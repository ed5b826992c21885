# SPDX-License-Identifier: GPL-2.0-or-later
"""The checks of jobs across pools (suite pools, docs/pools.md), on host
heads: every rank a process of this machine, each pool a shared device of
its own (state and memory files in a new directory under /dev/shm).

    python3 -m nfabric.poolcheck [--quick]

1. Exactness: DDP training (nfabric.examples.train, Fashion-MNIST, a small
   CNN) of P pools x H ranks against the same training on one device with
   P x H heads, same seed and data: rank 0's parameters must be equal bit
   for bit, in every mode and option.
2. The vote exchange: every rank ends with the same parameters; it sends
   less between pools than the counts.
3. Faults: a pool whose device refuses (its state file truncated under
   it), a rank killed mid-exchange, a pool that never joins: every other
   rank raises an error within the bound, naming the pool where it can.
"""
import argparse
import json
import multiprocessing as mp
import os
import subprocess
import sys
import time
import traceback

import numpy as np

from . import hostrun

TRAIN = [sys.executable, "-m", "nfabric.examples.train",
         "--train-samples", "2000", "--test-samples", "200"]
BOUND_S = 30.0          # the faults' process-group timeout is 20 s


def _train(extra, spawn, steps):
    cmd = TRAIN + ["--spawn", str(spawn), "--steps", str(steps)] + extra
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                       universal_newlines=True, timeout=900)
    rows = [json.loads(line) for line in p.stdout.splitlines()
            if line.startswith("{")]
    return p.returncode, rows, p.stderr


def check_exact(results, mode, pools, heads, steps):
    world = pools * heads
    extra = mode.split()
    rc1, flat, err1 = _train(["--mode"] + extra, world, steps)
    rc2, pool, err2 = _train(["--mode"] + extra + ["--pools", str(pools)], world, steps)
    ok = (rc1 == 0 and rc2 == 0 and len(flat) == world and len(pool) == world and
          all(r["params_identical"] for r in flat + pool) and
          flat[0]["params"] == pool[0]["params"])
    what = "%s, %d pools x %d ranks, %d steps: the parameters equal one device's " \
           "with %d heads bit for bit" % (mode, pools, heads, steps, world)
    if ok:
        results.append(("ok", "%s (%s; inter-pool payload %d B/step/rank)" % (
            what, pool[0]["params"], pool[0]["net_bytes_per_step"]["inter_pool"])))
    else:
        results.append(("not ok", "%s: one device %s, pools %s%s" % (
            what, flat[0]["params"] if flat else "failed: " + err1[-300:],
            pool[0]["params"] if pool else "failed: " + err2[-300:],
            "" if rc1 == rc2 == 0 else " (exit %d, %d)" % (rc1, rc2))))
    return pool


def check_votes(results, steps):
    rc, rows, err = _train(["--mode", "gbinary", "--pools", "2", "--exchange", "votes"],
                           4, steps)
    rc2, counts, err2 = _train(["--mode", "gbinary", "--pools", "2"], 4, steps)
    if rc or rc2 or len(rows) != 4 or len(counts) != 4:
        results.append(("not ok", "votes, 2 pools x 2 ranks: the runs failed: %s %s"
                        % (err[-300:], err2[-300:])))
        return
    same = all(r["params_identical"] for r in rows)
    results.append(("ok" if same else "not ok",
                    "votes, 2 pools x 2 ranks, %d steps: every rank ends with the same "
                    "parameters (%s)" % (steps, rows[0]["params"])))
    v = sum(r["net_bytes_per_step"]["inter_pool"] for r in rows)
    c = sum(r["net_bytes_per_step"]["inter_pool"] for r in counts)
    results.append(("ok" if v < c else "not ok",
                    "votes send less between pools than counts: %d against %d bytes "
                    "per step (%.3f)" % (v, c, v / c if c else float("nan"))))


# ---- faults: PoolJob driven directly, one process per rank ------------------

def _fault_rank(kind, d, port, rank, world, pools, q):
    import torch
    from .device import Device, NFabricError
    from .pools import PoolJob, join
    heads = world // pools
    pool, local = divmod(rank, heads)
    t0 = time.monotonic()
    try:
        join("127.0.0.1", port, rank, world, pools, timeout_s=8.0 if kind == "join" else 20.0)
        dev = Device.host(os.path.join(d, "state.pool%d" % pool),
                          os.path.join(d, "mem.pool%d" % pool), 16 << 20, local, heads)
        model = torch.nn.Linear(64, 10)
        job = PoolJob(dev, model, rank, world, pools=pools, mode="gbinary",
                      base=0x100000, first_window=0, timeout_ms=20000)
        keys = [p.data_ptr() for p in model.parameters()]
        rng = np.random.default_rng(rank)
        for step in range(4):
            if step == 2 and kind == "kill" and rank == world - 1:
                os._exit(9)
            if step == 2 and kind == "refuse" and rank == world - 1:
                os.truncate(os.path.join(d, "state.pool%d" % pool), 0)
            t0 = time.monotonic()
            job.exchange([(k, rng.standard_normal(p.numel()).astype(np.float32))
                          for k, p in zip(keys, model.parameters())])
        q.put((rank, "returned", "", time.monotonic() - t0))
    except NFabricError as e:
        q.put((rank, "NFabricError", str(e), time.monotonic() - t0))
    except Exception as e:      # gloo's RuntimeError, a join's
        q.put((rank, type(e).__name__, str(e).splitlines()[0] if str(e) else repr(e),
               time.monotonic() - t0))
    q.close()
    q.join_thread()         # the result reaches the parent before _exit
    os._exit(0)


def _faults(kind, ranks, world, pools):
    ctx = mp.get_context("fork")
    q = ctx.Queue()
    with hostrun.scratch("poolcheck") as d:
        port = hostrun.free_port()
        procs = [ctx.Process(target=_fault_rank, args=(kind, d, port, r, world, pools, q))
                 for r in ranks]
        for p in procs:
            p.start()
        out = []
        deadline = time.monotonic() + 90
        want = len(ranks) - (1 if kind == "kill" else 0)
        while len(out) < want and time.monotonic() < deadline:
            try:
                out.append(q.get(timeout=1))
            except Exception:
                pass
        for p in procs:
            p.join(5)
            if p.is_alive():
                p.kill()
    return sorted(out)


def check_faults(results):
    # A pool's device refuses: its state file truncated under pool 1.
    out = _faults("refuse", range(4), 4, 2)
    ok = (len(out) == 4 and all(k == "NFabricError" and "pool 1" in m and t < BOUND_S
                                for _, k, m, t in out))
    results.append(("ok" if ok else "not ok",
                    "pool 1's device refuses (state file truncated): all 4 ranks raise "
                    "NFabricError naming pool 1 within %.0f s: %s" % (
                        BOUND_S, "; ".join("rank %d %s %.1f s: %s" % (r, k, t, m[:90])
                                           for r, k, m, t in out))))
    # A rank killed mid-exchange.
    out = _faults("kill", range(4), 4, 2)
    ok = len(out) == 3 and all(k != "returned" and t < BOUND_S for _, k, m, t in out)
    mate = [m for r, k, m, t in out if r == 2]
    ok = ok and bool(mate) and "pool 1" in mate[0]
    results.append(("ok" if ok else "not ok",
                    "rank 3 (pool 1) killed mid-step: the 3 others raise within %.0f s, "
                    "its pool-mate naming pool 1: %s" % (
                        BOUND_S, "; ".join("rank %d %s %.1f s: %s" % (r, k, t, m[:90])
                                           for r, k, m, t in out))))
    # A pool that never joins: pool 0's ranks alone, then pool 1's alone.
    for ranks, gone in ((range(0, 2), 1), (range(2, 4), 0)):
        out = _faults("join", ranks, 4, 2)
        ok = len(out) == 2 and all(k == "RuntimeError" and "pool %d" % gone in m and
                                   t < BOUND_S for _, k, m, t in out)
        results.append(("ok" if ok else "not ok",
                        "pool %d never joins: the ranks of the other raise within "
                        "%.0f s naming it: %s" % (gone, BOUND_S, "; ".join(
                            "rank %d %s %.1f s: %s" % (r, k, t, m[:100])
                            for r, k, m, t in out))))


def main(argv=None):
    ap = argparse.ArgumentParser(prog="python3 -m nfabric.poolcheck")
    ap.add_argument("--quick", action="store_true",
                    help="fewer modes and no 8-rank case")
    ap.add_argument("--steps", type=int, default=6)
    args = ap.parse_args(argv)
    results = []
    modes = ["gbinary", "gternary", "gbinary --error-feedback server",
             "gternary --error-feedback both", "fp32",
             "layer_aware --warmup 3 --error-feedback both",
             "layer_aware --low gternary --admission last_linear"]
    if args.quick:
        modes = modes[:2]
    for mode in modes:
        try:
            check_exact(results, mode, 2, 2, args.steps)
        except Exception:
            results.append(("not ok", "%s: %s" % (mode, traceback.format_exc()[-400:])))
        print("# %s: done" % mode, file=sys.stderr, flush=True)
    if not args.quick:
        for mode, p, h in (("gbinary", 4, 2), ("gternary", 2, 4)):
            check_exact(results, mode, p, h, 4)
    check_votes(results, args.steps)
    check_faults(results)
    bad = 0
    for n, (verdict, text) in enumerate(results, 1):
        bad += verdict != "ok"
        print("%s %d - %s" % (verdict, n, text))
    print("1..%d" % len(results))
    return 1 if bad or not results else 0


if __name__ == "__main__":
    sys.exit(main())
