# SPDX-License-Identifier: GPL-2.0-or-later
"""Train a small CNN on Fashion-MNIST with PyTorch DistributedDataParallel,
every gradient bucket aggregated in a NEURON-Fabric device.

Every rank runs this script (rank and world from --rank/--world, RANK and
WORLD_SIZE, or NFABRIC_RANK and NFABRIC_HOSTS as scripts/nfabric cluster
sets them):

    python3 -m nfabric.examples.train --mode gbinary

On a host without VMs, --spawn N starts N ranks here, each a head of one
shared device served by the device's controller (--state/--mem files):

    python3 -m nfabric.examples.train --spawn 4 --mode layer_aware

Modes: allreduce (gloo's allreduce, no device: the baseline), fp32,
gbinary, gternary, layer_aware.  Prints one JSON line per rank; rank 0's
has the accuracy and the gradient traffic from the device's statistics.
"""
import argparse
import datetime
import faulthandler
import gc
import gzip
import hashlib
import json
import os
import signal
import subprocess
import sys
import tempfile
import time

import numpy as np
import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F

from nfabric import hostrun
from nfabric.device import Device, NFabricError
from nfabric.pools import PoolJob, fail, join
from nfabric.hooks import FabricJob, fabric_errors, fabric_hook

DATA = "/usr/share/datasets/fashion-mnist"      # Debian: dataset-fashion-mnist
# A rank's teardown (the DDP model, the job, the process groups) takes well
# under a second; past this bound it is a hang: its stacks on stderr, exit 1.
TEARDOWN_S = 30.0
# --spawn: once a rank has ended well, the others' bound (they left the
# last barrier with it); after a failure, the job's timeout besides.
EXIT_GRACE_S = 15.0


class SmallCNN(nn.Module):
    """28 x (28 * width) grey images, `classes` classes (the default task:
    one Fashion-MNIST image, 10 classes; the hard task: two side by side,
    100 classes)."""

    def __init__(self, classes=10, width=1, hidden=64):
        super().__init__()
        self.conv1 = nn.Conv2d(1, 8, 5)
        self.conv2 = nn.Conv2d(8, 16, 5)
        self.fc1 = nn.Linear(16 * 4 * (((28 * width - 4) // 2 - 4) // 2), hidden)
        self.head = nn.Linear(hidden, classes)  # the classifier head

    def forward(self, x):
        x = F.max_pool2d(F.relu(self.conv1(x)), 2)
        x = F.max_pool2d(F.relu(self.conv2(x)), 2)
        x = F.relu(self.fc1(x.flatten(1)))
        return self.head(x)


def load_idx(name):
    with gzip.open(os.path.join(DATA, name), "rb") as f:
        raw = f.read()
    ndim = raw[3]
    dims = [int.from_bytes(raw[4 + 4 * i:8 + 4 * i], "big") for i in range(ndim)]
    return np.frombuffer(raw, dtype=np.uint8, offset=4 + 4 * ndim).reshape(dims)


def pairs(images, labels, n, seed):
    """The hard task: n samples, each two Fashion-MNIST images side by side
    (28 x 56), labelled 10 * left + right: 100 classes of fine-grained
    combinations (see docs/pytorch.md, "The hard configuration")."""
    rng = np.random.default_rng(seed + 7919)
    a = rng.integers(0, len(labels), n)
    b = rng.integers(0, len(labels), n)
    x = np.concatenate([images[a], images[b]], axis=2)
    y = labels[a].astype(np.int64) * 10 + labels[b]
    return x, y


def task_data(args, train):
    """(images, labels) of the task: uint8 N x 28 x W, int64 N."""
    if train:
        images = load_idx("train-images-idx3-ubyte.gz")
        labels = load_idx("train-labels-idx1-ubyte.gz")
        n = args.train_samples
    else:
        images = load_idx("t10k-images-idx3-ubyte.gz")
        labels = load_idx("t10k-labels-idx1-ubyte.gz")
        n = args.test_samples
    if args.task == "pairs":
        # The test pairs come from the test images only, with another seed.
        return pairs(images, labels, n, args.seed if train else 104729)
    return images[:n], labels[:n].astype(np.int64)


def shard(labels, rank, world, kind, n, seed):
    """Indices of rank's shard of the first n samples: iid (random) or
    non-iid (sorted by label: each rank sees a few classes mostly)."""
    rng = np.random.default_rng(seed)
    idx = rng.permutation(n)
    if kind == "noniid":
        idx = idx[np.argsort(labels[idx], kind="stable")]
    return idx[rank::world] if kind == "iid" else np.array_split(idx, world)[rank]


def training_args(ap, steps, batch, lr):
    """The options every example trains with: --steps, --batch, --lr and
    --seed, with the example's defaults."""
    ap.add_argument("--steps", type=int, default=steps)
    ap.add_argument("--batch", type=int, default=batch)
    ap.add_argument("--lr", type=float, default=lr)
    ap.add_argument("--seed", type=int, default=1)


def params_digest(model):
    h = hashlib.sha256()
    for p in model.parameters():
        h.update(p.detach().cpu().numpy().tobytes())
    return h.hexdigest()[:16]


def run_rank(args, rank, world):
    """One rank: train, print its JSON line, tear down in an order that
    cannot deadlock (below).  0, or 1 (an NFabricError: said on stderr)."""
    # `kill -USR1`: every thread's Python stack on stderr (spawn, on a hang).
    faulthandler.register(signal.SIGUSR1, all_threads=True)
    held = {}
    try:
        return train_rank(args, rank, world, held)
    except NFabricError as e:
        print("nfabric.examples.train: rank %d: NFabricError (code %s): %s"
              % (rank, e.code, e), file=sys.stderr, flush=True)
        return 1
    finally:
        teardown(held)


def teardown(held):
    """Drop the DDP model first (its Reducer holds the process group), then
    the job (its groups), then every process group, each explicitly, while
    this thread can still let gloo's workers take the GIL: torch 1.13 can
    otherwise destroy a gloo group from ~Reducer with the GIL held, joining
    a worker that waits for the GIL to free a tensor (a hang at exit).  A
    teardown longer than TEARDOWN_S is reported (every thread's stack) and
    the process ends with status 1."""
    faulthandler.dump_traceback_later(TEARDOWN_S, exit=True)
    for name in ("opt", "ddp", "job"):
        held.pop(name, None)
    gc.collect()
    time.sleep(0.05)            # gloo's workers finish with their last work
    if dist.is_initialized():
        dist.destroy_process_group()
    gc.collect()
    dev = held.pop("dev", None)
    if dev is not None:
        dev.close()
    faulthandler.cancel_dump_traceback_later()


def train_rank(args, rank, world, held):
    torch.manual_seed(args.seed)
    torch.set_num_threads(1)
    if args.portable_math:
        # The same kernels on every CPU (host, or a VM's emulated one): no
        # oneDNN, ATen's default kernels (ATEN_CPU_CAPABILITY, set by main).
        torch.backends.mkldnn.enabled = False
    if args.pools > 1:
        # Says which pool never joined (docs/pools.md).
        store = join(args.master_addr, args.master_port, rank, world, args.pools,  # noqa: F841
                     timeout_s=args.timeout_s)
    else:
        dist.init_process_group("gloo", init_method="tcp://%s:%d" % (args.master_addr,
                                args.master_port), rank=rank, world_size=world,
                                timeout=datetime.timedelta(seconds=args.timeout_s))
    model = SmallCNN(100, 2, 128) if args.task == "pairs" else SmallCNN()
    ddp = held["ddp"] = nn.parallel.DistributedDataParallel(model)
    job = dev = None
    spent = [0.0]               # seconds in gradient exchange (the hook)

    def timed(hook):
        def run(state, bucket):
            t = time.monotonic()
            fut = hook(state, bucket)
            fut.wait()
            spent[0] += time.monotonic() - t
            return fut
        return run

    def gloo_allreduce(state, bucket):
        """DDP's default exchange (gloo allreduce, mean), synchronous."""
        buf = bucket.buffer().div_(world)
        dist.all_reduce(buf)
        fut = torch.futures.Future()
        fut.set_result(buf)
        return fut

    if args.mode == "allreduce":
        ddp.register_comm_hook(None, timed(gloo_allreduce))
    else:
        heads = world // args.pools
        pool, local = divmod(rank, heads)
        try:
            if args.state:
                # One device per pool: its own state and memory files.
                suffix = ".pool%d" % pool if args.pools > 1 else ""
                dev = Device.host(args.state + suffix, args.mem + suffix,
                                  args.mem_size << 20, local, heads)
            else:
                dev = Device.open()
        except Exception as e:
            if args.pools > 1:
                fail(e, rank, world, args.pools)    # the others raise at once
            raise
        held["dev"] = dev
        # --timeout-s bounds the device's waits too (docs/pools.md).
        opts = dict(mode=args.mode, low=args.low, warmup=args.warmup,
                    error_feedback=args.error_feedback, seed=args.seed,
                    admission=args.admission, budget_pct=args.budget_pct,
                    timeout_ms=int(args.timeout_s * 1000))
        if args.pools > 1:
            job = PoolJob(dev, model, rank, world, pools=args.pools,
                          exchange=args.exchange, **opts)
        else:
            job = FabricJob(dev, model, rank, world, **opts)
        held["job"] = job
        ddp.register_comm_hook(job, timed(fabric_hook))
        base = job.traffic_bytes()
    images, labels = task_data(args, True)
    mine = shard(labels, rank, world, args.shards, len(labels), args.seed)
    x = torch.from_numpy(images[mine].astype(np.float32) / 255.0).unsqueeze(1)
    y = torch.from_numpy(labels[mine].astype(np.int64))
    opt = held["opt"] = torch.optim.SGD(ddp.parameters(), lr=args.lr, momentum=0.9)
    rng = np.random.default_rng(args.seed + rank)
    t_exchange = 0.0
    t0 = time.monotonic()
    losses = []
    for step in range(args.steps):
        b = torch.from_numpy(rng.integers(0, len(y), args.batch))
        opt.zero_grad()
        loss = F.cross_entropy(ddp(x[b]), y[b])
        te = time.monotonic()
        with fabric_errors(*([job] if job is not None else [])):
            loss.backward()             # the hook runs inside backward
        t_exchange += time.monotonic() - te
        opt.step()
        losses.append(float(loss))
    elapsed = time.monotonic() - t0
    out = {"rank": rank, "world": world, "mode": args.mode, "shards": args.shards,
           "warmup": args.warmup, "error_feedback": args.error_feedback,
           "steps": args.steps, "seconds": round(elapsed, 3),
           "backward_seconds": round(t_exchange, 3),
           "exchange_seconds": round(spent[0], 3),
           "loss_last": round(float(np.mean(losses[-20:])), 4),
           "params": params_digest(model)}
    if job is not None and args.mode == "layer_aware":
        out["fp32_layers"] = job.fp32_layers()
        if job.admission is not None and job.admission.decided:
            out["budget_pct"] = args.budget_pct
            out["planned_pct"] = round(job.admission.planned_pct, 3)
            out["admission"] = [dict(r, err=float("%.4g" % r["err"]),
                                     err_per_param=float("%.4g" % r["err_per_param"]),
                                     sign_agreement=round(r["sign_agreement"], 4))
                                for r in job.admission.report]
    if job is not None:
        out.update(job.ef_trace())
    if job is not None and job.ef_server:
        efd = [None] * world
        dist.all_gather_object(efd, job.ef_digest())
        out["ef_state_identical"] = len(set(efd)) == 1
    digests = [None] * world
    dist.all_gather_object(digests, out["params"])
    out["params_identical"] = len(set(digests)) == 1
    if rank == 0:
        ti, tl = task_data(args, False)
        with torch.no_grad():
            pred = model(torch.from_numpy(ti.astype(np.float32) / 255.0).unsqueeze(1))
        out["acc"] = round(float((pred.argmax(1).numpy() == tl).mean()), 4)
        n = sum(p.numel() for p in model.parameters())
        out["fp32_bytes"] = args.steps * world * n * 4
        if job is not None:
            now = job.traffic_bytes()
            sent = {k: now[k] - base[k] for k in now}
            out["device_write_bytes"] = sent
            out["traffic_pct"] = round(100.0 * sum(sent.values()) / out["fp32_bytes"], 3)
        else:
            out["traffic_pct"] = 100.0
    if isinstance(job, PoolJob):
        # Per step, this rank's payload into the collectives, per tier.
        out["pools"] = args.pools
        out["exchange"] = args.exchange
        out["net_bytes_per_step"] = {k: v // max(1, args.steps)
                                     for k, v in job.net.items()}
    if args.mode == "allreduce":
        n = sum(p.numel() for p in model.parameters())
        out["net_bytes_per_step"] = {"allreduce": n * 4}
    print(json.dumps(out), flush=True)
    dist.barrier()
    if job is not None:
        job.close()
    del ddp, opt, job, dev      # teardown() drops the last references
    return 0 if out["params_identical"] and out.get("ef_state_identical", True) else 1


# The process group's port when every rank is a guest of its own (the
# guests' link is theirs alone); host ranks (--spawn) take a free one.
GUEST_PORT = 29517


def wait_ranks(procs, timeout_s):
    """Every rank's status.  The ranks of a job end together: once one has
    ended well the others have EXIT_GRACE_S, once one has failed the job's
    timeout besides (they may still be raising); a rank still running then
    hangs: its stacks go to stderr (SIGUSR1), it is killed, and its status
    is 124, said on stderr."""
    rcs = [None] * len(procs)
    deadline = None
    while any(rc is None for rc in rcs):
        for r, p in enumerate(procs):
            if rcs[r] is None:
                rcs[r] = p.poll()
                if rcs[r] is not None and deadline is None:
                    first, t_first = r, time.monotonic()
                    deadline = time.monotonic() + EXIT_GRACE_S + TEARDOWN_S + \
                        (0 if rcs[r] == 0 else timeout_s)
        if deadline is not None and time.monotonic() > deadline:
            hung = [r for r, rc in enumerate(rcs) if rc is None]
            for r in hung:
                procs[r].send_signal(signal.SIGUSR1)
            time.sleep(1.0)
            for r in hung:
                procs[r].kill()
                procs[r].wait()
                rcs[r] = 124
                print("nfabric.examples.train: rank %d still running %.0f s after "
                      "rank %d ended (status %d): a hang, its stacks above; killed"
                      % (r, time.monotonic() - t_first, first, rcs[first]),
                      file=sys.stderr, flush=True)
            break
        time.sleep(0.05)
    return rcs


def spawn(args, argv, state, mem):
    """--spawn: start the ranks here, on one shared device (STATE, MEM)."""
    sfx = [".pool%d" % p for p in range(args.pools)] if args.pools > 1 else [""]
    for f in (state, mem):
        for x in sfx:
            if os.path.exists(f + x):
                os.unlink(f + x)
    port = args.master_port or hostrun.free_port()
    # Each rank's output in a file of its own, printed in rank order once
    # all are done (lines printed at the same moment into one shared stdout
    # can run together).
    procs, outs = [], []
    a = list(argv if argv is not None else sys.argv[1:])
    k = a.index("--spawn")          # --spawn must not propagate
    del a[k:k + 2]
    for r in range(args.spawn):
        cmd = [sys.executable, "-m", "nfabric.examples.train"] + a + \
              ["--rank", str(r), "--world", str(args.spawn),
               "--state", state, "--mem", mem, "--master-port", str(port)]
        outs.append(tempfile.TemporaryFile(mode="w+"))
        procs.append(subprocess.Popen(cmd, stdout=outs[-1]))
    rcs = wait_ranks(procs, args.timeout_s)
    for f in outs:
        f.seek(0)
        sys.stdout.write(f.read())
        f.close()
    sys.stdout.flush()
    return max(rcs)


def main(argv=None):
    ap = argparse.ArgumentParser(prog="python3 -m nfabric.examples.train")
    ap.add_argument("--mode", default="gbinary",
                    choices=["allreduce", "fp32", "gbinary", "gternary", "layer_aware"])
    ap.add_argument("--low", default="gbinary", choices=["gbinary", "gternary"])
    ap.add_argument("--warmup", type=int, default=0, help="full-precision steps first")
    ap.add_argument("--error-feedback", nargs="?", const="worker", default="off",
                    choices=["off", "worker", "server", "both"],
                    help="worker (the default with no value), server, both (docs/pytorch.md)")
    ap.add_argument("--admission", default="sensitivity",
                    choices=["sensitivity", "last_linear"],
                    help="layer_aware: which layers stay FP32 (docs/pytorch.md)")
    ap.add_argument("--budget-pct", type=float, default=8.0,
                    help="layer_aware, sensitivity: traffic budget, %% of FP32")
    ap.add_argument("--shards", default="iid", choices=["iid", "noniid"])
    ap.add_argument("--task", default="fmnist", choices=["fmnist", "pairs"],
                    help="fmnist: 10 classes; pairs: the hard configuration, "
                    "two images side by side, 100 classes (docs/pytorch.md)")
    training_args(ap, steps=300, batch=32, lr=0.02)
    ap.add_argument("--train-samples", type=int, default=20000)
    ap.add_argument("--test-samples", type=int, default=2000)
    ap.add_argument("--portable-math", action="store_true",
                    help="the same float kernels on any CPU (host = VM bit for bit)")
    ap.add_argument("--pools", type=int, default=1,
                    help="P devices (pools) of world/P ranks each, joined over "
                    "torch.distributed (docs/pools.md); with --spawn each pool's "
                    "device has files STATE.poolP and MEM.poolP")
    ap.add_argument("--timeout-s", type=float, default=600.0,
                    help="the job's timeout: every wait's bound (the rendezvous, "
                    "every collective, every device wait; docs/pools.md)")
    ap.add_argument("--exchange", default="counts", choices=["counts", "votes"],
                    help="with --pools: what the pools exchange (docs/pools.md)")
    ap.add_argument("--rank", type=int, default=None)
    ap.add_argument("--world", type=int, default=None)
    ap.add_argument("--spawn", type=int, default=0,
                    help="start this many ranks here (host, no VM)")
    ap.add_argument("--state", default=None,
                    help="host: the shared device's state file (default with "
                    "--spawn: in a new directory under /dev/shm, removed at the end)")
    ap.add_argument("--mem", default=None, help="host: the device memory file")
    ap.add_argument("--mem-size", type=int, default=256, help="host: MiB")
    ap.add_argument("--master-addr", default=os.environ.get("MASTER_ADDR", "127.0.0.1"))
    ap.add_argument("--master-port", type=int,
                    default=int(os.environ.get("MASTER_PORT", "0")) or None,
                    help="default: MASTER_PORT; else with --spawn a free port, "
                    "without it %d" % GUEST_PORT)
    args = ap.parse_args(argv)
    if args.portable_math and os.environ.get("ATEN_CPU_CAPABILITY") != "default":
        # ATen reads it when torch loads: run again with it set.
        env = dict(os.environ, ATEN_CPU_CAPABILITY="default",
                   OPENBLAS_CORETYPE="Prescott", DNNL_MAX_CPU_ISA="SSE41")
        return subprocess.call([sys.executable, "-m", "nfabric.examples.train"] +
                               list(argv if argv is not None else sys.argv[1:]),
                               env=env)
    if args.spawn:
        with hostrun.scratch("ddp") as d:
            return spawn(args, argv, args.state or os.path.join(d, "state"),
                         args.mem or os.path.join(d, "mem"))
    if args.master_port is None:
        # One rank per guest: the guests' network is their own.
        args.master_port = GUEST_PORT
    rank = args.rank if args.rank is not None else int(
        os.environ.get("RANK", os.environ.get("NFABRIC_RANK", "0")))
    world = args.world if args.world is not None else int(
        os.environ.get("WORLD_SIZE", os.environ.get("NFABRIC_HOSTS", "1")))
    if args.state and not args.mem:
        ap.error("--state needs --mem")
    if not 0 < args.timeout_s < 4e6:
        ap.error("--timeout-s %g: a positive number of seconds" % args.timeout_s)
    if args.pools < 1 or world % args.pools or world // args.pools > 16:
        ap.error("--pools %d: the world (%d ranks) must be a multiple of the pools, "
                 "at most 16 ranks per pool" % (args.pools, world))
    return run_rank(args, rank, world)


if __name__ == "__main__":
    sys.exit(main())
