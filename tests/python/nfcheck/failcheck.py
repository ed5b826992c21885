# SPDX-License-Identifier: GPL-2.0-or-later
"""Waits end when the head fails: a shared device's state file truncated
under ranks that wait for a round (TAP on stdout).

    python3 -m nfcheck.failcheck [--dir DIR]

Three heads of one device on the host (no VM); heads 0 and 1 are ranks in
processes of their own, head 2 never attaches, so a round waits for it.
Rank 0 waits for round completion (Device.wait), rank 1 for the next round
(Device.wait_next), each with a 60 s timeout; then the state file is
truncated under them.  Each must get NFabricError with the device's error
STATE (16) within a few seconds, not a timeout and never a return that
says the round ended or moved (docs/registers.md, "Rounds").
"""

import argparse
import multiprocessing as mp
import os
import sys
import time

from nfabric import hostrun
from nfabric.device import Device, NFabricError

ERR_STATE = 16          # NFABRIC_ERR_STATE (include/hw/mem/nfabric_regs.h)
MEM = 16 << 20
WIN = 3
BOUND_S = 5.0


def _rank(state, mem, head, q, ready):
    try:
        dev = Device.host(state, mem, MEM, head, 3)
        if head == 0:
            dev.set_window(WIN, 0x10000, 4096, "gbinary", counters=1 << 20)
        t0 = time.monotonic()
        while not dev.enabled_mask() & (1 << WIN):
            if time.monotonic() - t0 > 30:
                raise RuntimeError("window %d never enabled" % WIN)
            time.sleep(0.01)
        r = dev.round(WIN)
        dev.complete(WIN, r.seq)
        ready.put(head)
        try:
            if head == 0:
                dev.wait(WIN, r.seq, timeout_ms=60000)
                what = "wait returned as if the round had ended"
            else:
                dev.wait_next(WIN, r.seq, timeout_ms=60000)
                what = "wait_next returned as if the round had moved"
            q.put((head, None, 0.0, what))
        except NFabricError as e:
            q.put((head, e.code, time.monotonic(), str(e)))
    except Exception as e:              # the check reports it, never hangs
        ready.put(head)
        q.put((head, "error", 0.0, repr(e)))


def main(argv=None):
    ap = argparse.ArgumentParser(prog="python3 -m nfcheck.failcheck")
    ap.add_argument("--dir", default=None,
                    help="the device's files (default: a new directory under "
                    "/dev/shm, removed at the end)")
    a = ap.parse_args(argv)
    if a.dir:
        os.makedirs(a.dir, exist_ok=True)
        return run(a.dir)
    with hostrun.scratch("failcheck") as d:
        return run(d)


def run(d):
    state, mem = os.path.join(d, "state"), os.path.join(d, "mem")
    for f in (state, mem):
        if os.path.exists(f):
            os.unlink(f)
    ctx = mp.get_context("fork")
    q, ready = ctx.Queue(), ctx.Queue()
    procs = [ctx.Process(target=_rank, args=(state, mem, h, q, ready))
             for h in (0, 1)]
    for p in procs:
        p.start()
    for _ in procs:
        ready.get(timeout=60)
    time.sleep(0.5)                     # both are in their waits now
    os.truncate(state, 0)
    t_trunc = time.monotonic()
    results = sorted(q.get(timeout=90) for _ in procs)
    for p in procs:
        p.join(30)
    n = bad = 0
    for head, code, t, msg in results:
        n += 1
        waited = t - t_trunc if code == ERR_STATE else float("nan")
        ok = code == ERR_STATE and 0 <= waited < BOUND_S
        bad += not ok
        print("%s %d - rank %d: %s ends with the device's error STATE %.2f s "
              "after the state file was truncated under it (%s)"
              % ("ok" if ok else "not ok", n, head,
                 "Device.wait" if head == 0 else "Device.wait_next",
                 waited, msg))
    for p in procs:
        n += 1
        ok = p.exitcode == 0
        bad += not ok
        print("%s %d - rank process %s exits normally (status %s): no SIGBUS"
              % ("ok" if ok else "not ok", n, p.name, p.exitcode))
    print("1..%d" % n)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
