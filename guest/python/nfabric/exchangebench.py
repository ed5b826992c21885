# SPDX-License-Identifier: GPL-2.0-or-later
"""One ResNet-18-sized gradient exchanged between the ranks three ways
(scripts/nfabric bench ddp, its VM part; docs/pytorch.md):

* ``gloo``: torch.distributed's gloo allreduce of the float32 tensor (the
  guests' emulated link);
* ``trapped``: G-Binary through the shared device, a trapped window (every
  8-byte store and load an access of the device): each rank writes its
  packed signs (1 bit an element) to the window, completes the round,
  waits for every rank, reads back the packed majority;
* ``posted``: the same with a posted window (docs/registers.md, "Posted
  windows"): the stores reach the head's staging at memory speed and
  libnfabric rings POST after them, FETCH before the loads.

Every rank runs this (rank and world from --rank/--world, or NFABRIC_RANK
and NFABRIC_HOSTS as scripts/nfabric cluster sets them):

    python3 -m nfabric.exchangebench --master-addr 169.254.0.1

or, on a host without VMs, one process per rank R of W, each a head of
one shared device served by the device's controller (its state and
memory files):

    python3 -m nfabric.exchangebench --rank R --world W --state S --mem M \\
        --master-port P

Each way: one warm-up exchange, then --reps timed ones (--trapped-reps for
the trapped window); an exchange's time is the slowest rank's, from a
barrier (gloo, not timed) to the end of its read-back.  Packing the signs
(numpy) and the round's CLEAR (rank 0, between exchanges) are not in it;
they are reported on their own (pack_ms, clear_ms).  The same inputs go
through both windows: posted_equal_trapped says whether every rank read
back the same majority, bit for bit, in every exchange of both;
majority_matches_reference, whether it is the majority of the ranks'
signs computed here (an all_gather, not timed).

Prints one JSON line per rank; every rank's holds the gathered figures.
"""
import argparse
import datetime
import errno
import hashlib
import json
import os
import sys
import time

import numpy as np
import torch
import torch.distributed as dist

from .device import Device, NFabricError, counter_bytes

# torchvision's resnet18() (1000 classes): its parameters, in all.
RESNET18_PARAMS = 11689512
GUEST_PORT = 29662


def _align(x, a):
    return (x + a - 1) // a * a


def _ms(t0):
    return (time.monotonic() - t0) * 1000.0


def _digest(a):
    return hashlib.sha256(memoryview(a).cast("B")).hexdigest()[:16]


def gloo_exchanges(g, reps):
    """One warm-up, then REPS allreduces of G (a fresh copy each): this
    rank's milliseconds each."""
    out = []
    for k in range(1 + reps):
        t = torch.from_numpy(g.copy())
        dist.barrier()
        t0 = time.monotonic()
        dist.all_reduce(t)
        ms = _ms(t0)
        if k:
            out.append(ms)
    return out


def device_exchanges(dev, rank, args, packed, posted):
    """One warm-up, then the timed exchanges of PACKED through window
    args.window, trapped or POSTED.  This rank's milliseconds each, the
    digests of the majorities it read back, rank 0's CLEAR times."""
    nbytes = packed.nbytes
    size = _align(nbytes, 64)
    ctr = _align(args.base + size, 4096)
    w = args.window
    reps = args.reps if posted else args.trapped_reps
    if rank == 0:
        if dev.enabled_mask() & (1 << w):
            dev.disable(w)
        # Enabling starts the first round (and zeroes the counters).
        dev.set_window(w, args.base, size, "gbinary",
                       counters=ctr, width=8, tie=1, posted=posted)
    dist.barrier()
    times, digests, clears = [], [], []
    timeout_ms = int(args.timeout_s * 1000)
    for k in range(1 + reps):
        if rank == 0 and k:
            t0 = time.monotonic()
            dev.clear(w)                # the next round
            clears.append(_ms(t0))
        dist.barrier()
        seq = dev.round(w).seq
        t0 = time.monotonic()
        dev.write(args.base, packed)
        dev.complete(w, seq)
        r = dev.wait(w, seq, timeout_ms)
        majority = dev.read(args.base, nbytes)
        ms = _ms(t0)
        if r.incomplete or not r.all_done:
            raise NFabricError(-errno.ESTALE, "window %d, round %d: %r" % (w, seq, r))
        if k:
            times.append(ms)
        digests.append(_digest(majority))
        dist.barrier()                  # every rank has read before the next CLEAR
    if rank == 0:
        dev.disable(w)
    return times, digests, clears


def reference_majority(packed, world):
    """The packed majority of every rank's PACKED signs (G-Binary, tie rule
    POSITIVE), computed here from an all_gather (not timed)."""
    t = torch.from_numpy(packed.copy())
    every = [torch.empty_like(t) for _ in range(world)]
    dist.all_gather(every, t)
    count = np.zeros(packed.nbytes * 8, dtype=np.int32)
    for e in every:
        count += np.unpackbits(e.numpy(), bitorder="little").astype(np.int32) * 2 - 1
    return np.packbits(count >= 0, bitorder="little")


def slowest(per_rank):
    """Per exchange, the slowest rank's time (lists of equal length)."""
    return [round(max(col), 3) for col in zip(*per_rank)]


def main(argv=None):
    ap = argparse.ArgumentParser(prog="python3 -m nfabric.exchangebench")
    ap.add_argument("--elements", type=int, default=RESNET18_PARAMS,
                    help="float32 elements of the gradient (default: ResNet-18's %d)"
                    % RESNET18_PARAMS)
    ap.add_argument("--reps", type=int, default=5,
                    help="timed exchanges of gloo and of the posted window")
    ap.add_argument("--trapped-reps", type=int, default=None,
                    help="timed exchanges of the trapped window (default: --reps)")
    ap.add_argument("--window", type=int, default=8)
    ap.add_argument("--base", type=lambda s: int(s, 0), default=0x1000000,
                    help="the window's DPA")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--timeout-s", type=float, default=600.0)
    ap.add_argument("--rank", type=int, default=None)
    ap.add_argument("--world", type=int, default=None)
    ap.add_argument("--state", default=None, help="host: the shared device's state file")
    ap.add_argument("--mem", default=None, help="host: the device memory file")
    ap.add_argument("--mem-size", type=int, default=64, help="host: MiB")
    ap.add_argument("--master-addr", default=os.environ.get("MASTER_ADDR", "127.0.0.1"))
    ap.add_argument("--master-port", type=int, default=GUEST_PORT)
    args = ap.parse_args(argv)
    rank = args.rank if args.rank is not None else int(os.environ.get("NFABRIC_RANK", "0"))
    world = args.world if args.world is not None else int(os.environ.get("NFABRIC_HOSTS", "1"))
    if args.trapped_reps is None:
        args.trapped_reps = args.reps
    if args.elements < 1 or args.reps < 1 or args.trapped_reps < 1:
        ap.error("--elements, --reps and --trapped-reps must be positive")
    if bool(args.state) != bool(args.mem):
        ap.error("--state and --mem go together")
    torch.set_num_threads(1)
    dist.init_process_group("gloo", init_method="tcp://%s:%d" % (args.master_addr,
                            args.master_port), rank=rank, world_size=world,
                            timeout=datetime.timedelta(seconds=args.timeout_s))
    g = np.random.default_rng(args.seed * 1000003 + rank).standard_normal(
        args.elements, dtype=np.float32)
    gloo_ms = gloo_exchanges(g, args.reps)
    dev = (Device.host(args.state, args.mem, args.mem_size << 20, rank, world)
           if args.state else Device.open())
    try:
        heads = dev.heads()
        if heads.index != rank or heads.count != world:
            raise NFabricError(-errno.EINVAL, "rank %d of %d on head %d of %d" %
                               (rank, world, heads.index, heads.count))
        t0 = time.monotonic()
        packed = np.packbits(g >= 0, bitorder="little")
        pack_ms = _ms(t0)
        want = _digest(reference_majority(packed, world))
        trapped_ms, trapped_d, clear_t = device_exchanges(dev, rank, args, packed, False)
        posted_ms, posted_d, clear_p = device_exchanges(dev, rank, args, packed, True)
    finally:
        dev.close()
    mine = {"gloo": gloo_ms, "trapped": trapped_ms, "posted": posted_ms, "pack": pack_ms,
            "equal": len(set(trapped_d + posted_d)) == 1, "majority": posted_d[-1],
            "reference": posted_d[-1] == want,
            "clear": clear_t + clear_p}
    every = [None] * world
    dist.all_gather_object(every, mine)
    out = {"rank": rank, "world": world, "bench": "resnet_exchange",
           "elements": args.elements, "packed_bytes": int(packed.nbytes),
           "reps": args.reps, "trapped_reps": args.trapped_reps,
           "staging": heads.staging,
           "gloo_ms": slowest([e["gloo"] for e in every]),
           "trapped_ms": slowest([e["trapped"] for e in every]),
           "posted_ms": slowest([e["posted"] for e in every]),
           "pack_ms": round(max(e["pack"] for e in every), 3),
           "clear_ms": [round(c, 3) for c in every[0]["clear"]],
           "posted_equal_trapped": all(e["equal"] for e in every),
           "majority_identical": len({e["majority"] for e in every}) == 1,
           "majority_matches_reference": all(e["reference"] for e in every),
           "majority": mine["majority"]}
    print(json.dumps(out), flush=True)
    dist.barrier()
    dist.destroy_process_group()
    return 0


if __name__ == "__main__":
    sys.exit(main())
