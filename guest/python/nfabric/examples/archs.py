# SPDX-License-Identifier: GPL-2.0-or-later
"""The paper's architectures through the DDP hooks, a few steps on random
data: ResNet-18 (Debian's python3-torchvision, random weights, 10 or 100
classes) and a DistilBERT-sized encoder built from torch.nn (6 layers,
hidden 768, 12 heads, 3072 feed-forward, 30522-token vocabulary, 512
positions, a classifier; no pretrained weights).

    python3 -m nfabric.examples.archs --spawn 2 --arch resnet18 --classes 10 \\
        --mode layer_aware --steps 3

In guests (--guest: the guest's device, rank and world from NFABRIC_RANK
and NFABRIC_HOSTS as `scripts/nfabric cluster` sets them, --master-addr the
first guest's address):

    chroot /host /usr/bin/python3 -m nfabric.examples.archs --guest \
        --arch resnet18 --mode gbinary --portable-math --master-addr 169.254.0.1

Prints one JSON line per rank: the parameter digest (the same on every
rank), the gradient traffic from the device's pool statistics in percent of
FP32 (rank 0), and for layer_aware the layers kept on FP32.  The first
--probe steps of layer_aware (sensitivity admission) are FP32; traffic_pct
counts only the steps after them (traffic_pct_all: every step).
"""
import argparse
import faulthandler
import json
import os
import signal
import subprocess
import sys
import tempfile

import numpy as np
import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F

from nfabric import hostrun
from nfabric.device import Device
from nfabric.hooks import FabricJob, fabric_hook, _WAIT_MS
from nfabric.examples.train import (params_digest as digest, teardown, training_args,
                                    wait_ranks)

WAIT_S = _WAIT_MS / 1000        # --spawn: the others' bound after a rank failed


class DistilBertSized(nn.Module):
    """DistilBERT's shape: embeddings (word, position, LayerNorm), 6
    post-LayerNorm encoder layers, the pre-classifier and the classifier on
    the first token."""

    def __init__(self, vocab=30522, hidden=768, layers=6, heads=12, ffn=3072,
                 positions=512, classes=2):
        super().__init__()
        self.word = nn.Embedding(vocab, hidden)
        self.position = nn.Embedding(positions, hidden)
        self.norm = nn.LayerNorm(hidden)
        layer = nn.TransformerEncoderLayer(hidden, heads, ffn, dropout=0.0,
                                           activation="gelu", batch_first=True)
        self.encoder = nn.TransformerEncoder(layer, layers)
        self.pre_classifier = nn.Linear(hidden, hidden)
        self.classifier = nn.Linear(hidden, classes)

    def forward(self, ids):
        pos = torch.arange(ids.shape[1]).unsqueeze(0)
        h = self.norm(self.word(ids) + self.position(pos))
        h = self.encoder(h)
        return self.classifier(F.relu(self.pre_classifier(h[:, 0])))


def build(arch, classes):
    if arch == "resnet18":
        import torchvision
        return torchvision.models.resnet18(num_classes=classes)
    if arch == "distilbert":
        return DistilBertSized(classes=classes)
    raise ValueError(arch)


def batch(arch, classes, n, rng, args):
    if arch == "resnet18":
        x = torch.from_numpy(rng.standard_normal((n, 3, args.image, args.image))
                             .astype(np.float32))
    else:
        x = torch.from_numpy(rng.integers(0, 30522, (n, args.seq)))
    return x, torch.from_numpy(rng.integers(0, classes, n))


def run_rank(args, rank, world):
    """One rank, then its teardown in an order that cannot deadlock
    (nfabric.examples.train.teardown)."""
    faulthandler.register(signal.SIGUSR1, all_threads=True)
    held = {}
    try:
        return train_rank(args, rank, world, held)
    finally:
        teardown(held)


def train_rank(args, rank, world, held):
    torch.manual_seed(args.seed)
    torch.set_num_threads(1)
    if args.portable_math:
        # The same kernels on every CPU (host, or a VM's emulated one): no
        # oneDNN, ATen's default kernels (ATEN_CPU_CAPABILITY, set by main).
        torch.backends.mkldnn.enabled = False
    dist.init_process_group("gloo", init_method="tcp://%s:%d" % (args.master_addr,
                            args.master_port), rank=rank, world_size=world)
    model = build(args.arch, args.classes)
    # ResNet's batch-norm statistics differ per rank: DDP broadcasts rank
    # 0's buffers before every forward (broadcast_buffers), the hooks
    # exchange the gradients.
    ddp = held["ddp"] = nn.parallel.DistributedDataParallel(model, broadcast_buffers=True)
    if args.guest:
        dev = Device.open()
    else:
        dev = Device.host(args.state, args.mem, args.mem_size << 20, rank, world)
    held["dev"] = dev
    job = held["job"] = FabricJob(dev, model, rank, world, mode=args.mode, low=args.low,
                    seed=args.seed, budget_pct=args.budget_pct, probe=args.probe,
                    admission=args.admission,
                    error_feedback=args.error_feedback)
    ddp.register_comm_hook(job, fabric_hook)
    opt = held["opt"] = torch.optim.SGD(ddp.parameters(), lr=args.lr, momentum=0.9)
    rng = np.random.default_rng(args.seed * 100 + rank)
    n = sum(p.numel() for p in model.parameters())
    base = job.traffic_bytes()
    mark = None
    for step in range(args.steps):
        if step == job.warmup:
            mark = job.traffic_bytes()
        x, y = batch(args.arch, args.classes, args.batch, rng, args)
        opt.zero_grad()
        F.cross_entropy(ddp(x), y).backward()
        opt.step()
    now = job.traffic_bytes()
    out = {"rank": rank, "world": world, "arch": args.arch, "classes": args.classes,
           "mode": args.mode, "steps": args.steps, "params_total": n,
           "params": digest(model)}
    ds = [None] * world
    dist.all_gather_object(ds, out["params"])
    out["params_identical"] = len(set(ds)) == 1
    if rank == 0:
        fp32 = world * n * 4
        out["traffic_pct_all"] = round(100.0 * sum(now[k] - base[k] for k in now)
                                       / (args.steps * fp32), 3)
        if mark is not None:
            k_steps = args.steps - job.warmup
            out["traffic_pct"] = round(100.0 * sum(now[k] - mark[k] for k in now)
                                       / (k_steps * fp32), 3)
        else:
            out["traffic_pct"] = None
        if args.mode == "layer_aware":
            out["fp32_layers"] = job.fp32_layers()
            if job.admission is not None and job.admission.decided:
                out["planned_pct"] = round(job.admission.planned_pct, 3)
                out["ranking"] = [r["layer"] for r in job.admission.report][:8]
                head = [n for n, m in model.named_modules()
                        if isinstance(m, nn.Linear)][-1]
                out["head"] = head
                out["head_fp32"] = head in out["fp32_layers"]
                out["head_rank"] = [r["layer"] for r in job.admission.report].index(head) + 1
    print(json.dumps(out), flush=True)
    dist.barrier()
    job.close()
    del ddp, opt, job, dev      # teardown() drops the last references
    return 0 if out["params_identical"] else 1


def spawn(args, argv, state, mem):
    """--spawn: start the ranks here, on one shared device (STATE, MEM)."""
    for f in (state, mem):
        if os.path.exists(f):
            os.unlink(f)
    a = list(argv if argv is not None else sys.argv[1:])
    k = a.index("--spawn")
    del a[k:k + 2]
    port = args.master_port or hostrun.free_port()
    # Each rank's output in a file of its own, printed in rank order once
    # all are done: ranks that print at the same moment into one shared
    # stdout can run their lines together.
    outs = [tempfile.TemporaryFile(mode="w+") for _ in range(args.spawn)]
    procs = [subprocess.Popen([sys.executable, "-m", "nfabric.examples.archs"] + a +
                              ["--rank", str(r), "--world", str(args.spawn),
                               "--mem-size", str(args.mem_size), "--state", state,
                               "--mem", mem, "--master-port", str(port)],
                              stdout=outs[r])
             for r in range(args.spawn)]
    rc = max(wait_ranks(procs, WAIT_S))
    for f in outs:
        f.seek(0)
        sys.stdout.write(f.read())
        f.close()
    sys.stdout.flush()
    return rc


def main(argv=None):
    ap = argparse.ArgumentParser(prog="python3 -m nfabric.examples.archs")
    ap.add_argument("--arch", default="resnet18", choices=["resnet18", "distilbert"])
    ap.add_argument("--classes", type=int, default=10)
    ap.add_argument("--mode", default="layer_aware",
                    choices=["fp32", "gbinary", "gternary", "layer_aware"])
    ap.add_argument("--low", default="gbinary", choices=["gbinary", "gternary"])
    ap.add_argument("--error-feedback", default="off",
                    choices=["off", "worker", "server", "both"])
    ap.add_argument("--budget-pct", type=float, default=8.0)
    ap.add_argument("--admission", default="sensitivity",
                    choices=["sensitivity", "last_linear"])
    ap.add_argument("--probe", type=int, default=1)
    training_args(ap, steps=3, batch=4, lr=0.01)
    ap.add_argument("--image", type=int, default=32)
    ap.add_argument("--seq", type=int, default=32)
    ap.add_argument("--rank", type=int, default=None)
    ap.add_argument("--world", type=int, default=None)
    ap.add_argument("--spawn", type=int, default=0)
    ap.add_argument("--state", default=None,
                    help="the shared device's state file (default with --spawn: "
                    "in a new directory under /dev/shm, removed at the end)")
    ap.add_argument("--mem", default=None, help="the device memory file")
    ap.add_argument("--mem-size", type=int, default=0,
                    help="MiB of device memory (default: sized for the job)")
    ap.add_argument("--master-port", type=int, default=None,
                    help="default with --spawn: a free port")
    ap.add_argument("--master-addr", default="127.0.0.1")
    ap.add_argument("--guest", action="store_true",
                    help="the guest's device (rank, world from NFABRIC_RANK, NFABRIC_HOSTS)")
    ap.add_argument("--portable-math", action="store_true",
                    help="the same float kernels on any CPU (host = VM bit for bit)")
    args = ap.parse_args(argv)
    if args.portable_math and os.environ.get("ATEN_CPU_CAPABILITY") != "default":
        # ATen reads it when torch loads: run again with it set.
        env = dict(os.environ, ATEN_CPU_CAPABILITY="default",
                   OPENBLAS_CORETYPE="Prescott", DNNL_MAX_CPU_ISA="SSE41")
        return subprocess.call([sys.executable, "-m", "nfabric.examples.archs"] +
                               list(argv if argv is not None else sys.argv[1:]), env=env)
    if args.guest:
        if args.spawn:
            ap.error("--guest and --spawn exclude each other")
        if args.rank is None:
            args.rank = int(os.environ.get("NFABRIC_RANK", "0"))
        if args.world is None:
            args.world = int(os.environ.get("NFABRIC_HOSTS", "1"))
    if not args.mem_size:
        n = sum(p.numel() for p in build(args.arch, args.classes).parameters())
        world = args.spawn or args.world or 1
        # Two sets of windows: FP32 slots of every rank, signs, codes and
        # their counters, padding; plus the job's base (16 MiB).
        per_set = world * n * 4 + n // 8 + n // 4 + n * 3 + (8 << 20)
        args.mem_size = (2 * per_set + (32 << 20)) >> 20
    if args.spawn:
        with hostrun.scratch("archs") as d:
            return spawn(args, argv, args.state or os.path.join(d, "state"),
                         args.mem or os.path.join(d, "mem"))
    if not args.guest and not (args.state and args.mem):
        ap.error("--state and --mem are needed without --spawn or --guest")
    if args.master_port is None:
        args.master_port = 29617    # the guests' own link (--guest)
    return run_rank(args, args.rank or 0, args.world or 1)


if __name__ == "__main__":
    sys.exit(main())
