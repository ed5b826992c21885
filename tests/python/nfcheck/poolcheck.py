# SPDX-License-Identifier: GPL-2.0-or-later
"""The checks of jobs across pools (suite pools, docs/pools.md), on host
heads: every rank a process of this machine, each pool a shared device of
its own (state and memory files in a new directory under /dev/shm).

    python3 -m nfcheck.poolcheck [--quick]

1. Exactness: DDP training (nfabric.examples.train, Fashion-MNIST, a small
   CNN) of P pools x H ranks against the same training on one device with
   P x H heads, same seed and data: rank 0's parameters must be equal bit
   for bit, in every mode and option.
2. The vote exchange: every rank ends with the same parameters; it sends
   less between pools than the counts.
3. Faults: a pool whose device refuses (its state file truncated under
   it), a rank killed mid-exchange, a pool that never joins: every other
   rank raises an error within the bound, naming the pool where it can; a
   rank stopped (SIGSTOP) mid-step: every other rank raises NFabricError
   naming it within the job's timeout (+ the grace); a pool whose device
   refuses at set-up (pool 1's opened with 1 head for 2 ranks): every rank
   raises at once, naming it; under DDP the hook's NFabricError reaches
   backward() as the RuntimeError docs/pytorch.md describes, and
   fabric_errors() gives the NFabricError itself.
4. Bad arguments of join() and PoolJob: each refused at once, its message
   saying what is wrong.
"""
import argparse
import json
import multiprocessing as mp
import os
import signal
import subprocess
import sys
import time
import traceback

import numpy as np

from nfabric import hostrun

TRAIN = [sys.executable, "-m", "nfabric.examples.train",
         "--train-samples", "2000", "--test-samples", "200"]
BOUND_S = 30.0          # the faults' process-group timeout is 20 s
STOP_T_S = 10.0         # the stopped rank's job: its timeout
STOP_BOUND_S = STOP_T_S + 5.0   # + the grace (2 s) in which the others say why
PROMPT_S = 5.0          # "at once": a refusal at set-up, a bad argument (1 s)
RUN_S = 900             # a training run's bound


def _train(extra, spawn, steps):
    """A --spawn run in a session of its own: the ranks are stopped with
    it if it overruns RUN_S (said in its stderr)."""
    cmd = TRAIN + ["--spawn", str(spawn), "--steps", str(steps)] + extra
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                         universal_newlines=True, start_new_session=True)
    try:
        out, err = p.communicate(timeout=RUN_S)
    except subprocess.TimeoutExpired:
        os.killpg(p.pid, signal.SIGKILL)
        out, err = p.communicate()
        err += "\npoolcheck: %s: still running after %d s, stopped" % (" ".join(cmd), RUN_S)
    finally:
        try:
            os.killpg(p.pid, signal.SIGKILL)        # whatever it left running
        except (ProcessLookupError, PermissionError):
            pass
    rows = [json.loads(line) for line in out.splitlines() if line.startswith("{")]
    return p.returncode, rows, err


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
    from nfabric.device import Device, NFabricError
    from nfabric.pools import PoolJob, fail, join
    heads = world // pools
    pool, local = divmod(rank, heads)
    t_s = {"join": 8.0, "stop": STOP_T_S}.get(kind, 20.0)
    t0 = time.monotonic()
    try:
        join("127.0.0.1", port, rank, world, pools, timeout_s=t_s)
        t0 = time.monotonic()
        try:
            # setup: pool 1's device opened with 1 head for its 2 ranks.
            n = 1 if kind == "setup" and pool == 1 else heads
            dev = Device.host(os.path.join(d, "state.pool%d" % pool),
                              os.path.join(d, "mem.pool%d" % pool), 16 << 20, local, n)
        except Exception as e:
            fail(e)             # docs/pools.md: the others raise at once
            raise
        model = torch.nn.Linear(64, 10)
        job = PoolJob(dev, model, rank, world, pools=pools, mode="gbinary",
                      base=0x100000, first_window=0)      # timeout: join()'s
        keys = [p.data_ptr() for p in model.parameters()]
        rng = np.random.default_rng(rank)
        for step in range(4):
            if step == 2 and kind == "kill" and rank == world - 1:
                os._exit(9)
            if step == 2 and kind == "stop" and rank == world - 1:
                os.kill(os.getpid(), signal.SIGSTOP)
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
        want = len(ranks) - (1 if kind in ("kill", "stop") else 0)
        while len(out) < want and time.monotonic() < deadline:
            try:
                out.append(q.get(timeout=1))
            except Exception:
                pass
        for p in procs:
            if kind == "stop":
                p.kill()        # the stopped rank (SIGKILL ends a stopped process)
            p.join(5)
            if p.is_alive():
                p.kill()
                p.join(5)
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


def _said(out, width=110):
    return "; ".join("rank %d %s %.1f s: %s" % (r, k, t, m[:width]) for r, k, m, t in out)


def check_stop_and_setup(results):
    """A rank stopped mid-step; a pool's device that refuses at set-up."""
    # Rank 3 (pool 1, head 1) stops itself (SIGSTOP) at its third step.
    out = _faults("stop", range(4), 4, 2)
    ok = (len(out) == 3 and
          all(k == "NFabricError" and "rank 3 (pool 1" in m and t < STOP_BOUND_S
              for _, k, m, t in out))
    results.append(("ok" if ok else "not ok",
                    "rank 3 (pool 1) stopped (SIGSTOP) mid-step, job timeout %.0f s: the 3 "
                    "others raise NFabricError naming it within %.0f s: %s" % (
                        STOP_T_S, STOP_BOUND_S, _said(out, 160))))
    # Pool 1's device opened with 1 head for its 2 ranks: rank 3 cannot
    # attach (it says so: fail()), rank 2's device has the wrong head count.
    out = _faults("setup", range(4), 4, 2)
    ok = (len(out) == 4 and all(k == "NFabricError" and t < PROMPT_S and
                                (r == 3 or "pool 1" in m) for r, k, m, t in out))
    results.append(("ok" if ok else "not ok",
                    "pool 1's device refuses at set-up (1 head for 2 ranks): all 4 ranks "
                    "raise NFabricError within %.0f s (job timeout 20 s), ranks 0-2 naming "
                    "pool 1: %s" % (PROMPT_S, _said(out, 140))))


def _ddp_rank(d, port, rank, q):
    """2 pools x 1 rank under DDP; pool 1's state file truncated at step 2."""
    import torch
    from nfabric.device import Device, NFabricError
    from nfabric.hooks import fabric_errors, fabric_hook
    from nfabric.pools import PoolJob, join
    t0 = time.monotonic()
    try:
        join("127.0.0.1", port, rank, 2, 2, timeout_s=20.0)
        dev = Device.host(os.path.join(d, "state.pool%d" % rank),
                          os.path.join(d, "mem.pool%d" % rank), 16 << 20, 0, 1)
        torch.manual_seed(0)
        model = torch.nn.Linear(64, 10)
        ddp = torch.nn.parallel.DistributedDataParallel(model)
        job = PoolJob(dev, model, rank, 2, pools=2, mode="gbinary",
                      base=0x100000, first_window=0)
        ddp.register_comm_hook(job, fabric_hook)
        x = torch.randn(8, 64)
        for step in range(4):
            if step == 2 and rank == 1:
                os.truncate(os.path.join(d, "state.pool1"), 0)
            t0 = time.monotonic()
            with fabric_errors(job):
                ddp(x).square().sum().backward()
        q.put((rank, "returned", "", "", time.monotonic() - t0))
    except NFabricError as e:
        c = e.__cause__
        q.put((rank, "NFabricError", str(e), "%s: %s" % (
            type(c).__name__, str(c)[:40]) if c is not None else "-",
            time.monotonic() - t0))
    except Exception as e:
        q.put((rank, type(e).__name__, str(e)[:200], "-", time.monotonic() - t0))
    q.close()
    q.join_thread()
    os._exit(0)


def check_ddp_error(results):
    """The exception a DDP user sees (docs/pytorch.md, "Errors under DDP")."""
    ctx = mp.get_context("fork")
    q = ctx.Queue()
    out = []
    with hostrun.scratch("poolcheck") as d:
        port = hostrun.free_port()
        procs = [ctx.Process(target=_ddp_rank, args=(d, port, r, q)) for r in range(2)]
        for p in procs:
            p.start()
        deadline = time.monotonic() + 90
        while len(out) < 2 and time.monotonic() < deadline:
            try:
                out.append(q.get(timeout=1))
            except Exception:
                pass
        for p in procs:
            p.join(5)
            if p.is_alive():
                p.kill()
                p.join(5)
    out.sort()
    ok = (len(out) == 2 and all(
        k == "NFabricError" and "pool 1" in m and c.startswith("RuntimeError: NFabricError:")
        and t < BOUND_S for _, k, m, c, t in out))
    results.append(("ok" if ok else "not ok",
                    "under DDP (2 pools x 1 rank, pool 1's device refusing): backward() "
                    "raises a RuntimeError whose text begins \"NFabricError:\", and "
                    "fabric_errors(job) around it raises the NFabricError itself, naming "
                    "pool 1, on both ranks: %s" % "; ".join(
                        "rank %d %s (from %s) %.1f s: %s" % (r, k, c, t, m[:90])
                        for r, k, m, c, t in out)))


def check_args(results):
    """Each bad argument of join() and PoolJob, refused at once."""
    from nfabric.pools import PoolJob, join
    cases = [
        ("join(world=4, pools=3)", lambda: join("127.0.0.1", 1, 0, 4, 3),
         ValueError, "world=4, pools=3: the world must be a multiple of the pools"),
        ("join(world=4, pools=0)", lambda: join("127.0.0.1", 1, 0, 4, 0),
         ValueError, "pools=0: a job has at least 1 pool"),
        ("join(world=4, pools=8)", lambda: join("127.0.0.1", 1, 0, 4, 8),
         ValueError, "pools=8, world=4: more pools than ranks"),
        ("join(rank=4, world=4)", lambda: join("127.0.0.1", 1, 4, 4, 2),
         ValueError, "rank=4: not a rank of a world of 4 (0..3)"),
        ("join(world=34, pools=2)", lambda: join("127.0.0.1", 1, 0, 34, 2),
         ValueError, "world=34, pools=2: 17 ranks per pool, a device has at most 16 heads"),
        ("join(timeout_s=0)", lambda: join("127.0.0.1", 1, 0, 4, 2, timeout_s=0),
         ValueError, "timeout_s=0: a positive, finite number of seconds"),
        ("join(pools=2.0)", lambda: join("127.0.0.1", 1, 0, 4, 2.0),
         TypeError, "pools=2.0: not an integer"),
        ("PoolJob(rank=5, world=4)", lambda: PoolJob(None, None, 5, 4, pools=2),
         ValueError, "rank=5: not a rank of a world of 4 (0..3)"),
        ("PoolJob(world=4, pools=3)", lambda: PoolJob(None, None, 0, 4, pools=3),
         ValueError, "world=4, pools=3: the world must be a multiple of the pools"),
        ("PoolJob(exchange='sum')", lambda: PoolJob(None, None, 0, 4, pools=2, exchange="sum"),
         ValueError, "exchange='sum': one of counts, votes"),
    ]
    for name, call, want, text in cases:
        t0 = time.monotonic()
        try:
            call()
            got, msg = "nothing", "(returned)"
        except Exception as e:
            got, msg = type(e).__name__, str(e)
        t = time.monotonic() - t0
        ok = got == want.__name__ and msg.startswith(text) and t < 1.0
        results.append(("ok" if ok else "not ok",
                        "%s: refused at once (%.3f s) with %s: %s" % (name, t, got, msg)))


def main(argv=None):
    ap = argparse.ArgumentParser(prog="python3 -m nfcheck.poolcheck")
    ap.add_argument("--quick", action="store_true",
                    help="fewer modes and no 8-rank case")
    ap.add_argument("--steps", type=int, default=6)
    ap.add_argument("--faults", action="store_true",
                    help="only the faults and the bad arguments (no training run)")
    args = ap.parse_args(argv)
    results = []
    modes = ["gbinary", "gternary", "gbinary --error-feedback server",
             "gternary --error-feedback both", "fp32",
             "layer_aware --warmup 3 --error-feedback both",
             "layer_aware --low gternary --admission last_linear"]
    if args.quick:
        modes = modes[:2]
    if args.faults:
        modes = []
    for mode in modes:
        try:
            check_exact(results, mode, 2, 2, args.steps)
        except Exception:
            results.append(("not ok", "%s: %s" % (mode, traceback.format_exc()[-400:])))
        print("# %s: done" % mode, file=sys.stderr, flush=True)
    if not args.quick and not args.faults:
        for mode, p, h in (("gbinary", 4, 2), ("gternary", 2, 4)):
            check_exact(results, mode, p, h, 4)
    if not args.faults:
        check_votes(results, args.steps)
    check_faults(results)
    check_stop_and_setup(results)
    check_ddp_error(results)
    check_args(results)         # last: torch imported here, after the forks
    bad = 0
    for n, (verdict, text) in enumerate(results, 1):
        bad += verdict != "ok"
        print("%s %d - %s" % (verdict, n, text))
    print("1..%d" % len(results))
    return 1 if bad or not results else 0


if __name__ == "__main__":
    sys.exit(main())
