# SPDX-License-Identifier: GPL-2.0-or-later
"""A training job across several devices (pools), joined over
torch.distributed (docs/pools.md).

A job of P pools x H ranks: global rank r is head r % H of pool r // H's
device, a device shared by that pool's H ranks.  Within a pool the device
aggregates as it does for one device (FabricJob: the ranks write signs,
codes or floats; the device counts).  Across pools the ranks combine what
their devices hold over torch.distributed, in two tiers as hierarchical
allreduce does: the bucket's elements are cut into H chunks; the ranks with
local index j (one per pool) combine chunk j over the network (a group of P
ranks), then each pool's ranks gather the chunks from each other (a group
of H ranks).  Every rank thus carries 1/H of the bucket between pools.

    job = PoolJob(dev, model, rank, world, pools=2, mode="gbinary")
    ddp.register_comm_hook(job, fabric_hook)

Exchanges (``exchange=``):

* ``"counts"`` (the default): each pool's per-element counts (the signed
  sums of its ranks' signs or codes, from the device's counter area) are
  summed across pools and the global decision is taken from the sum: the
  majority sign with the device's tie rule (a count of 0 reads +1) for
  G-Binary, the gate on the global sum with the threshold of one device
  holding every rank for G-Ternary.  The scales are every rank's, in global
  rank order, averaged as one device's ranks' are.  Low-bit results are
  therefore bit for bit those of one device with P x H heads.  FP32 tensors
  are summed in global rank order, as one device's ranks' are: each chunk
  passes through the pools in turn (pool p adds its ranks' values to pool
  p-1's running sum), so they too are bit for bit one device's, at the cost
  of P - 1 hops per chunk.  Server-side error feedback uses the global
  counts: the same on every rank.
* ``"votes"``: each pool sends only its decision (1 bit per element for
  G-Binary: its majority; 2 bits for G-Ternary: its gated value), and the
  global result is the majority of the pools' votes (tie: +1) or the gate
  on their sum (threshold max(1, (P + 1) // 2)).  This is signSGD with
  majority vote at the second tier (Bernstein et al., ICLR 2019): NOT the
  global majority of the ranks; docs/pools.md measures what it costs.

Faults (docs/pools.md, "Faults"): the job has one timeout T (PoolJob's
``timeout_ms``; by default join()'s ``timeout_s``), and no wait of the job
is longer: join()'s rendezvous, the set-up (every rank of the job meets in
the rendezvous store before the groups are made, and again once each
pool's device is set up), every group (``dist.new_group`` with T), every
device wait and every collective.  A rank that fails says so in the store
(``fail()``; PoolJob does it for its own errors), and the others, wherever
they wait, raise NFabricError naming its pool, rank and reason at once; a
rank that is gone or stopped is named, once T has passed, as the one that
never reached the wait.
"""
import datetime
import errno
import math
import operator
import re
import time

import numpy as np
import torch
import torch.distributed as dist

from .device import NFabricError
from .hooks import FabricJob, _PAD, _WAIT_MS

__all__ = ["PoolJob", "EXCHANGES", "join", "fail"]

EXCHANGES = ("counts", "votes")
MAX_HEADS = 16                  # a device's heads: ranks per pool
# Polling a wait that may have to end early: the first slice is long
# enough that an exchange that goes well never polls.
_SLICE_S = (0.2, 0.1)
_GRACE_S = 2.0                  # after a timeout: the others' reasons
_JOINED = {}                    # what join() made here: store, timeout_s
_JOBS = [0]                     # PoolJobs made in this process (their keys)


def _integer(name, v):
    """V as an int (any integer type but bool), else TypeError naming it."""
    if not isinstance(v, bool):
        try:
            return operator.index(v)
        except TypeError:
            pass
    raise TypeError("%s=%r: not an integer" % (name, v))


def check_layout(rank, world, pools):
    """RANK of WORLD ranks in POOLS pools: (heads per pool), or ValueError
    (TypeError) saying which argument is wrong and why."""
    world = _integer("world", world)
    pools = _integer("pools", pools)
    rank = _integer("rank", rank)
    if world < 1:
        raise ValueError("world=%d: a job has at least 1 rank" % world)
    if pools < 1:
        raise ValueError("pools=%d: a job has at least 1 pool" % pools)
    if pools > world:
        raise ValueError("pools=%d, world=%d: more pools than ranks (every pool "
                         "has at least one rank)" % (pools, world))
    if world % pools:
        raise ValueError("world=%d, pools=%d: the world must be a multiple of the "
                         "pools (every pool has world/pools ranks; %d %% %d = %d)"
                         % (world, pools, world, pools, world % pools))
    heads = world // pools
    if heads > MAX_HEADS:
        raise ValueError("world=%d, pools=%d: %d ranks per pool, a device has at "
                         "most %d heads" % (world, pools, heads, MAX_HEADS))
    if not 0 <= rank < world:
        raise ValueError("rank=%d: not a rank of a world of %d (0..%d)"
                         % (rank, world, world - 1))
    return heads


def _check_timeout(name, v):
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        raise TypeError("%s=%r: not a number of seconds" % (name, v))
    if not (math.isfinite(v) and v > 0):
        raise ValueError("%s=%r: a positive, finite number of seconds" % (name, v))
    return float(v)


def _where(rank, heads):
    return "rank %d (pool %d)" % (rank, rank // heads)


def _store():
    """The rendezvous store of the default group: join()'s, else torch's."""
    if _JOINED.get("store") is not None:
        return _JOINED["store"]
    from torch.distributed import distributed_c10d as c10d
    return c10d._get_default_store()


def _has(store, key):
    """KEY is in STORE now (torch 1.13's stores have no check(): a wait of
    1 ms)."""
    try:
        store.wait([key], datetime.timedelta(milliseconds=1))
        return True
    except (RuntimeError, TimeoutError):
        return False


def fail(err, rank=None, world=None, pools=None):
    """Tell every rank of the job (through the rendezvous store) that this
    rank cannot go on, and why (ERR: an exception or a text).  PoolJob does
    it for every error of its own; a rank that fails before its PoolJob
    exists (its device would not open, say) calls it before it exits, so
    that the others raise at once instead of at the job's timeout.  Any
    later wait of any PoolJob on this process group raises NFabricError
    naming this rank.  Never raises; False if the store could not be told."""
    try:
        if rank is None:
            rank, world = dist.get_rank(), dist.get_world_size()
        if pools is None:
            pools = _JOINED.get("pools", 1)
        heads = max(1, (world or 1) // max(1, pools))
        text = str(err).splitlines()[0] if str(err) else repr(err)
        if not text.startswith(_where(rank, heads)):
            text = "%s: %s" % (_where(rank, heads), text)
        code = getattr(err, "code", None) or -errno.EIO
        store = _store()
        store.set("nfabric-fail-%d" % rank, "%d %s" % (code, text))
        store.add("nfabric-fails", 1)
        return True
    except Exception:
        return False


def _failed(store, world):
    """The first rank that said it failed (fail()) and its text, or None."""
    if store.add("nfabric-fails", 0) == 0:
        return None
    for r in range(world):
        if _has(store, "nfabric-fail-%d" % r):
            return r, store.get("nfabric-fail-%d" % r).decode(errors="replace")
    return None


def join(addr, port, rank, world, pools, timeout_s=60.0):
    """Start torch.distributed's default group (gloo) for a job of POOLS
    pools, and say which pools did not come.  Every argument is checked
    first (ValueError, TypeError: which one and why, at once).  Every rank
    registers in the rendezvous store (a TCPStore on rank 0, at ADDR:PORT)
    first and waits for every other rank's registration at most TIMEOUT_S:
    a pool that never joins makes every rank that did raise a RuntimeError
    naming the missing pools and ranks, within the timeout.  The group's
    own timeout (every collective's bound) is TIMEOUT_S too, and it is the
    default timeout of the PoolJobs made on it."""
    heads = check_layout(rank, world, pools)
    timeout_s = _check_timeout("timeout_s", timeout_s)
    port = _integer("port", port)
    if not 0 < port < 65536:
        raise ValueError("port=%d: a TCP port, 1..65535" % port)
    if not isinstance(addr, str) or not addr:
        raise ValueError("addr=%r: rank 0's address, a host name or IP address" % (addr,))
    td = datetime.timedelta(seconds=timeout_s)
    t0 = time.monotonic()
    try:
        store = dist.TCPStore(addr, port, world, rank == 0, td,
                              wait_for_workers=False)
    except (RuntimeError, TimeoutError) as e:
        raise RuntimeError("rank %d (pool %d): cannot reach the rendezvous of rank 0 "
                           "(pool 0) at %s:%d within %.0f s: %s"
                           % (rank, rank // heads, addr, port, timeout_s, e)) from e
    # Rank 0 holds the store: it gives up last, so that the others can
    # still ask it who is missing.
    limit = timeout_s + (2.0 if rank == 0 else 0.0)
    try:
        store.set("nfabric-join-%d" % rank, "pool %d" % (rank // heads))
        store.add("nfabric-joined", 1)
        joined = store.add("nfabric-joined", 0)
    except RuntimeError as e:
        raise RuntimeError("rank %d (pool %d): the rendezvous on rank 0 (pool 0) "
                           "went away: %s" % (rank, rank // heads, e)) from e
    while joined < world:
        if time.monotonic() - t0 > limit:
            missing = []
            for r in range(world):
                try:
                    store.wait(["nfabric-join-%d" % r], datetime.timedelta(milliseconds=20))
                except (RuntimeError, TimeoutError):
                    missing.append(r)
            gone = sorted({r // heads for r in missing})
            raise RuntimeError("rank %d (pool %d): pool%s %s never joined within %.0f s "
                               "(missing ranks %s)" % (
                                   rank, rank // heads, "s" if len(gone) > 1 else "",
                                   ", ".join(map(str, gone)), timeout_s,
                                   ", ".join(map(str, missing))))
        time.sleep(0.05)
        try:
            joined = store.add("nfabric-joined", 0)
        except RuntimeError as e:
            raise RuntimeError("rank %d (pool %d): the rendezvous on rank 0 (pool 0) "
                               "went away: %s" % (rank, rank // heads, e)) from e
    dist.init_process_group("gloo", store=store, rank=rank, world_size=world,
                            timeout=td)
    _JOINED.update(store=store, timeout_s=timeout_s, pools=pools, world=world)
    return store


def _first_line(e):
    return str(e).splitlines()[0] if str(e) else repr(e)


class _Watched:
    """A PoolJob's view of its device: the device, whose round waits are
    cut in slices between which another rank's failure ends them, and
    whose timeouts name the heads (ranks) that never completed."""

    def __init__(self, dev, job):
        self._dev, self._job = dev, job

    def __getattr__(self, name):
        return getattr(self._dev, name)

    def _watch(self, wait, i, timeout_ms, what, lead):
        job = self._job
        try:
            return job._sliced(wait, timeout_ms, what)
        except NFabricError as e:
            if e.code == -errno.ETIMEDOUT and getattr(e, "peer", None) is None:
                raise job._stalled(e, i, lead=lead) from None
            raise

    def wait(self, i, seq, timeout_ms=_WAIT_MS):
        return self._watch(lambda ms: self._dev.wait(i, seq, ms), i, timeout_ms,
                           "waiting for the round of window %d" % i, False)

    def wait_next(self, i, seq, timeout_ms=_WAIT_MS):
        return self._watch(lambda ms: self._dev.wait_next(i, seq, ms), i,
                           timeout_ms, "waiting for window %d's next round" % i,
                           True)


def _int_dtype(limit):
    """The narrowest signed integer that holds -limit..limit."""
    for np_t, t in ((np.int8, torch.int8), (np.int16, torch.int16),
                    (np.int32, torch.int32)):
        if limit <= np.iinfo(np_t).max:
            return np_t, t
    return np.int64, torch.int64


class PoolJob(FabricJob):
    """One DDP job over P devices: FabricJob on this rank's pool's device,
    and the exchange between pools over torch.distributed."""

    def __init__(self, dev, model, rank, world, pools=1, exchange="counts",
                 seed=0, threshold=None, timeout_ms=None, **opts):
        heads = check_layout(rank, world, pools)
        if exchange not in EXCHANGES:
            raise ValueError("exchange=%r: one of %s" % (exchange, ", ".join(EXCHANGES)))
        if timeout_ms is None:
            timeout_ms = (int(_JOINED["timeout_s"] * 1000) if _JOINED.get("timeout_s")
                          else _WAIT_MS)
        timeout_ms = _integer("timeout_ms", timeout_ms)
        if not 0 < timeout_ms < 1 << 32:
            raise ValueError("timeout_ms=%d: 1..%d ms" % (timeout_ms, (1 << 32) - 1))
        if not dist.is_initialized():
            raise RuntimeError("PoolJob: torch.distributed's default process "
                               "group must be initialised first (nfabric.pools.join)")
        if dist.get_world_size() != world or dist.get_rank() != rank:
            raise ValueError("rank=%d, world=%d, but the process group says rank %d of %d"
                             % (rank, world, dist.get_rank(), dist.get_world_size()))
        self.grank, self.gworld, self.npools = rank, world, pools
        self.pool, self.local = divmod(rank, heads)
        self.exchange_kind = exchange
        self.exchanges = 0
        self.timeout_s = timeout_ms / 1000.0
        self.job_id = _JOBS[0]
        _JOBS[0] += 1
        self.store = _store()
        self.store_ok = True
        self.silent = set()             # ranks that said nothing after a failure
        self.where = _where(rank, heads)
        try:
            self._start(dev, model, heads, seed, threshold, timeout_ms, opts)
        except BaseException:
            self._leaving()
            raise

    def _start(self, dev, model, heads, seed, threshold, timeout_ms, opts):
        rank, world, pools = self.grank, self.gworld, self.npools
        # This rank's device first: one head per rank of its pool.
        try:
            h = dev.heads()
            if h.count != heads or h.index != self.local:
                raise NFabricError(-errno.EINVAL, "%s: its device is head %d of a %d-head "
                                   "device; pool %d's ranks need heads 0..%d, this one "
                                   "head %d" % (self.where, h.index, h.count, self.pool,
                                                heads - 1, self.local))
        except Exception as e:
            fail(e, rank, world, pools)
            raise
        # Every rank here before any group is made: a rank that failed
        # before (fail()) is named at once, one that never comes after T.
        self._meet("set-up")
        td = datetime.timedelta(seconds=self.timeout_s)
        try:
            # Every rank makes every group, in the same order (torch.distributed),
            # each with the job's timeout (torch's default is 30 minutes).
            self.g_world = dist.new_group(list(range(world)), timeout=td)
            self.g_pools = [dist.new_group(list(range(p * heads, (p + 1) * heads)),
                                           timeout=td) for p in range(pools)]
            self.g_cols = [dist.new_group([p * heads + j for p in range(pools)], timeout=td)
                           for j in range(heads)]
        except RuntimeError as e:
            err = NFabricError(-errno.ETIMEDOUT, "%s: making the job's process groups "
                               "(timeout %.0f s): %s" % (self.where, self.timeout_s,
                                                         _first_line(e)))
            fail(err, rank, world, pools)
            raise err from e
        self.g_pool = self.g_pools[self.pool]
        self.g_col = self.g_cols[self.local]
        # The device's view: this pool's H heads.  The decisions use the
        # job's world: the threshold one device with every rank would use.
        # Its waits are cut in slices that look for another rank's failure.
        try:
            super().__init__(_Watched(dev, self), model, self.local, heads, seed=seed,
                             timeout_ms=timeout_ms, **opts)
        except NFabricError as e:
            if getattr(e, "peer", None) is None:
                fail(e, rank, world, pools)
            raise
        except Exception as e:
            fail(e, rank, world, pools)
            raise
        self._meet("device set-up")
        self.gthreshold = threshold or max(1, (world + 1) // 2)
        self.vthreshold = max(1, (pools + 1) // 2)
        self.rng = np.random.default_rng(seed * 1000003 + rank)
        self.cdt, self.tcdt = _int_dtype(world)
        self.net = {"inter_pool": 0, "intra_pool": 0}
        self.pool_errors = []

    # ---- bounded waits that name who failed -----------------------------
    def _peer_error(self, what):
        """NFabricError for the first other rank that said it failed, or None.
        A store that does not answer (rank 0 stopped) is not asked again:
        the waits then end at their own bounds."""
        if not self.store_ok:
            return None
        try:
            f = _failed(self.store, self.gworld)
        except RuntimeError:
            self.store_ok = False
            return None
        if f is None or f[0] == self.grank:
            return None
        r, text = f
        code, _, text = text.partition(" ")
        try:
            code = int(code)
        except ValueError:
            code, text = -errno.EIO, f[1]
        e = NFabricError(code or -errno.EIO, "%s: %s: rank %d failed: %s" % (
            self.where, what, r, text))
        e.peer = r
        return e

    def _meet(self, what):
        """Every rank of the job at WHAT (the store), at most the timeout;
        NFabricError naming a rank that failed (at once) or never came."""
        heads = self.gworld // self.npools
        key = "nfabric-job%d-%s" % (self.job_id, what.replace(" ", "-"))
        deadline = time.monotonic() + self.timeout_s
        try:
            self.store.set("%s-%d" % (key, self.grank), "1")
            self.store.add(key, 1)
            while True:
                e = self._peer_error(what)
                if e is not None:
                    raise e
                if self.store.add(key, 0) >= self.gworld:
                    return
                if time.monotonic() > deadline:
                    missing = [r for r in range(self.gworld)
                               if not _has(self.store, "%s-%d" % (key, r))]
                    raise NFabricError(-errno.ETIMEDOUT, "%s: %s of the job: %s never came "
                                       "within %.0f s (gone, stopped, or failed before "
                                       "it without saying so)" % (
                                           self.where, what, ", ".join(
                                               _where(r, heads) for r in missing),
                                           self.timeout_s))
                time.sleep(0.02)
        except RuntimeError as e:
            if isinstance(e, NFabricError):
                raise
            raise NFabricError(-errno.EPIPE, "%s: %s of the job: the rendezvous store "
                               "on rank 0 (pool 0) does not answer: %s"
                               % (self.where, what, _first_line(e))) from e

    def _sliced(self, call, timeout_ms, what):
        """CALL(ms), a device wait, at most TIMEOUT_MS in all, in slices
        between which another rank's failure (fail()) ends it at once."""
        t0 = time.monotonic()
        deadline = t0 + timeout_ms / 1000.0
        first = True
        while True:
            left = deadline - time.monotonic()
            ms = int(min(left, _SLICE_S[0] if first else _SLICE_S[1]) * 1000)
            first = False
            try:
                return call(max(1, ms))
            except NFabricError as e:
                if e.code != -errno.ETIMEDOUT:
                    raise
                if time.monotonic() >= deadline:
                    # The library's text gives the last slice's length.
                    raise NFabricError(e.code, re.sub(
                        r"after [0-9]+ ms", "after %.1f s" % (time.monotonic() - t0),
                        str(e))) from None
            pe = self._peer_error("exchange %d: %s" % (self.exchanges, what))
            if pe is not None:
                raise pe

    def _wait_for_barrier_window(self, bar):
        deadline = time.monotonic() + self.timeout_ms / 1000
        while time.monotonic() < deadline:
            if self.dev.enabled_mask() & (1 << bar[0]):
                return
            pe = self._peer_error("waiting for rank %d (pool %d) to set up the device"
                                  % (self.pool * self.world, self.pool))
            if pe is not None:
                raise pe
            time.sleep(0.01)
        raise NFabricError(-errno.ETIMEDOUT, "%s: rank %d (pool %d) never set up the "
                           "job's windows within %.0f s" % (
                               self.where, self.pool * self.world, self.pool,
                               self.timeout_ms / 1000))

    def _stalled(self, e, window, lead=False):
        """A device wait that timed out (E): which heads of this pool never
        completed WINDOW's round, as ranks; with LEAD (a wait for the next
        round), else the pool's head 0, which starts it."""
        try:
            r = self.dev.round(window)
            late = [h for h in range(self.world) if not r.done >> h & 1]
        except NFabricError:
            late = []
        who = ", ".join("rank %d (pool %d, head %d)" % (self.pool * self.world + h,
                                                        self.pool, h) for h in late)
        if who:
            why = "; %s never completed its part of the round (stopped or stalled)" % who
        elif lead:
            why = ("; rank %d (pool %d, head 0) never started the next round (stopped "
                   "or stalled)" % (self.pool * self.world, self.pool))
        else:
            why = ""
        return NFabricError(e.code, "%s: pool %d's device: %s%s" % (
            self.where, self.pool, e, why))

    def _marks(self, tag):
        """After a collective failed: this rank's mark for TAG; then, for at
        most _GRACE_S, the others' marks and failures.  Returns (the first
        other rank's failure text or None, the ranks that said nothing)."""
        heads = self.world
        key = "nfabric-job%d-%s-" % (self.job_id, tag)
        silent = []
        if not self.store_ok:
            return None, []
        try:
            self.store.set(key + str(self.grank), "1")
            end = time.monotonic() + _GRACE_S
            while True:
                failed = {r for r in range(self.gworld)
                          if _has(self.store, "nfabric-fail-%d" % r)}
                silent = [r for r in range(self.gworld) if r != self.grank and
                          r not in failed and not _has(self.store, key + str(r))]
                if not silent or time.monotonic() > end:
                    break
                time.sleep(0.05)
            pe = self._peer_error(tag)
        except RuntimeError:
            self.store_ok = False
            return None, []
        self.silent.update(silent)
        return (str(pe) if pe is not None else None), [_where(r, heads) for r in silent]

    # ---- collectives, counted ------------------------------------------
    def _count(self, tier, t):
        self.net[tier] += t.numel() * t.element_size()

    def _col_sum(self, a, torch_dt):
        t = torch.from_numpy(np.ascontiguousarray(a)).to(torch_dt)
        self._count("inter_pool", t)
        dist.all_reduce(t, group=self.g_col)
        return t.numpy()

    def _col_gather(self, a):
        t = torch.from_numpy(np.ascontiguousarray(a))
        self._count("inter_pool", t)
        out = [torch.empty_like(t) for _ in range(self.npools)]
        dist.all_gather(out, t, group=self.g_col)
        return [o.numpy() for o in out]

    def _pool_gather(self, chunk, bounds):
        """Every rank of the pool: its chunk -> the whole vector."""
        n = max(b - a for a, b in bounds)
        pad = np.zeros(n, chunk.dtype)
        pad[:len(chunk)] = chunk
        t = torch.from_numpy(pad)
        self._count("intra_pool", t)
        out = [torch.empty_like(t) for _ in range(len(bounds))]
        dist.all_gather(out, t, group=self.g_pool)
        return np.concatenate([o.numpy()[:b - a] for o, (a, b) in zip(out, bounds)])

    def _bounds(self, n, align=8):
        """H contiguous chunks of n elements, cut at multiples of align."""
        h = self.world
        step = -(-n // h)
        step = -(-step // align) * align
        return [(min(n, j * step), min(n, (j + 1) * step)) for j in range(h)]

    def _two_tier_sum(self, v, torch_dt):
        """The sum over pools of v (this pool's vector), on every rank:
        chunk j over the column group j, then gathered in the pool."""
        if len(v) == 0:
            return v
        bounds = self._bounds(len(v))
        a, b = bounds[self.local]
        mine = self._col_sum(v[a:b], torch_dt)
        return self._pool_gather(mine, bounds)

    def _chain_sum(self, rows):
        """The sum over every rank of the job, in global rank order, of the
        rows of this pool's ranks (H x L, local rank order): float32 added
        one rank after another, exactly as one device's ranks' are added.
        Chunk j travels through the pools in order over the column group
        (pool p adds its ranks onto pool p-1's sum and passes it on), the
        last pool sends the result back, and each pool gathers the chunks."""
        L = rows.shape[1]
        if L == 0:
            return np.zeros(0, np.float32)
        bounds = self._bounds(L, align=1)
        a, b = bounds[self.local]
        col = [p * self.world + self.local for p in range(self.npools)]
        acc = np.zeros(b - a, np.float32)
        if b > a:
            if self.pool > 0:
                t = torch.empty(b - a, dtype=torch.float32)
                dist.recv(t, src=col[self.pool - 1], group=self.g_col)
                acc = t.numpy()
            for r in range(self.world):
                acc += rows[r, a:b]
            t = torch.from_numpy(acc)
            if self.pool < self.npools - 1:
                self._count("inter_pool", t)
                dist.send(t, dst=col[self.pool + 1], group=self.g_col)
            if self.npools > 1:
                if self.pool == self.npools - 1:
                    self._count("inter_pool", t)
                dist.broadcast(t, src=col[-1], group=self.g_col)
            acc = t.numpy()
        return self._pool_gather(acc, bounds)

    def _status(self, err):
        """Every rank learns whether any pool's device stage failed: one
        all_gather of an error code; the reasons are in the store (fail())."""
        code = torch.tensor([0 if err is None else (err.code or -errno.EIO)],
                            dtype=torch.int32)
        codes = [torch.zeros(1, dtype=torch.int32) for _ in range(self.gworld)]
        dist.all_gather(codes, code, group=self.g_world)
        bad = [r for r, c in enumerate(codes) if int(c) != 0]
        if not bad:
            return
        told = [r for r in bad if _has(self.store, "nfabric-fail-%d" % r)]
        first = told[0] if told else bad[0]
        if first == self.grank and err is not None:
            msg = str(err)
        elif told:
            msg = self.store.get("nfabric-fail-%d" % first).decode(errors="replace")
            msg = msg.partition(" ")[2] or msg
        else:
            msg = "(no reason given)"
        p = first // self.world
        self.pool_errors.append((p, msg))
        raise NFabricError(int(codes[first]),
                           "exchange %d: pool %d (rank %d, head %d of its device) "
                           "failed: %s" % (self.exchanges, p, first,
                                           first % self.world, msg))

    # ---- one exchange ----------------------------------------------------
    def exchange(self, tensors):
        """Aggregate [(param_key, grad ndarray float32)] across every pool;
        returns the aggregated arrays in the same order.  Raises
        NFabricError (docs/pools.md, "Faults")."""
        try:
            return self._exchange(tensors)
        except NFabricError:
            self._leaving()
            raise

    def _leaving(self):
        """This rank is about to raise.  The store lives in rank 0: rank 0
        waits (at most _GRACE_S) until every other rank has said it is
        leaving too, so that none finds the store gone before it has read
        why the job failed."""
        if not getattr(self, "store_ok", False):
            return
        key = "nfabric-job%d-leaving" % self.job_id
        try:
            n = self.store.add(key, 1)
            end = time.monotonic() + _GRACE_S
            want = self.gworld - len(self.silent)       # not those known gone
            while self.grank == 0 and n < want and time.monotonic() < end:
                time.sleep(0.02)
                n = self.store.add(key, 0)
        except RuntimeError:
            self.store_ok = False

    def _exchange(self, tensors):
        self._admit()
        err = None
        try:
            plan, local = self._device_stage(tensors)
        except NFabricError as e:
            err = e
            if getattr(e, "peer", None) is None and self.store_ok:
                self.store_ok = fail(e, self.grank, self.gworld, self.npools)
            if e.code == -errno.ETIMEDOUT:
                # A rank of this pool stalled: the status below would wait
                # for it too; the others learn it from the store.
                raise
        try:
            self._status(err)
            return self._combine(plan, local)
        except RuntimeError as e:
            if isinstance(e, NFabricError):
                raise
            # gloo: a peer's connection closed, or the group's timeout.
            told, silent = self._marks("x%d" % self.exchanges)
            raise NFabricError(-errno.EPIPE, "exchange %d: %s: the exchange between "
                               "pools failed: %s%s%s%s" % (
                                   self.exchanges, self.where, _first_line(e),
                                   "; %s said nothing (gone or stopped)"
                                   % ", ".join(silent) if silent else "",
                                   "; %s" % told if told else "",
                                   "; this pool's device: %s" % err if err else "")) from e

    def _device_stage(self, tensors):
        """This pool's device: write, one round, read what the pools
        combine (counts or decisions, FP32 partial sums, scales)."""
        s, plan = self._round(tensors)
        local = {"counts": [], "fp32": [], "scales": None}
        probing = self.admission is not None and self.step < self.warmup
        if any(path != "fp32" for *_, path in plan):
            sc = self.dev.read(self._scale_dpa(s, self.rank, 0), self.scale_bytes)
            local["scales"] = sc.view(np.float32)[:self.ntensors].copy()
        nb = self.width // 8
        dt = np.int8 if nb == 1 else np.dtype("<i2")
        for key, _, off, n, idx, path in plan:
            if path == "fp32":
                rows = np.empty((self.world, n), dtype=np.float32)
                cnt = np.zeros(n, dtype=np.int32)
                sc = np.zeros(self.world, dtype=np.float32)
                for rr in range(self.world):
                    g = self.dev.read(self._slot(s, rr) + off * 4, n * 4).view(np.float32)
                    rows[rr] = g
                    if probing:
                        cnt += np.where(g >= 0, 1, -1).astype(np.int32)
                        sc[rr] = np.float32(np.abs(g).mean()) if n else np.float32(0)
                local["fp32"].append((rows, cnt if probing else None, sc))
            else:
                ctr = self._win(s, path)[4]
                c = self.dev.read(ctr + off * nb, n * nb).view(dt).astype(np.int32)
                local["counts"].append(c)
        return plan, local

    def _combine(self, plan, local):
        """The second tier: the pools' figures summed (or voted), and the
        decisions, the same on every rank."""
        out_fp32, out_low = [], []
        if local["fp32"]:
            lens = [r.shape[1] for r, _, _ in local["fp32"]]
            probing = local["fp32"][0][1] is not None
            parts = [r for r, _, _ in local["fp32"]]
            if probing:
                # The ranks' mean |g| per tensor, summed in the same chain.
                parts.append(np.stack([sc for _, _, sc in local["fp32"]], axis=1))
            tot = self._chain_sum(np.concatenate(parts, axis=1))
            out_fp32 = np.split(tot[:sum(lens)], np.cumsum(lens)[:-1])
            if probing:
                ssum = tot[sum(lens):]
                cnt = self._two_tier_sum(np.concatenate(
                    [c for _, c, _ in local["fp32"]]), torch.int32)
                cnts = np.split(cnt, np.cumsum(lens)[:-1])
        scales = None
        if local["scales"] is not None:
            row = torch.from_numpy(local["scales"])
            rows = [torch.empty_like(row) for _ in range(self.gworld)]
            self._count("inter_pool", row)
            dist.all_gather(rows, row, group=self.g_world)
            scales = torch.stack(rows).numpy()      # global rank order
        if local["counts"]:
            lens = [len(c) for c in local["counts"]]
            v = np.concatenate(local["counts"])
            low = next(p for *_, p in plan if p != "fp32")
            if self.exchange_kind == "counts":
                tot = self._two_tier_sum(v.astype(self.cdt), self.tcdt).astype(np.int32)
            else:
                tot = self._vote(v, low)
            out_low = np.split(tot, np.cumsum(lens)[:-1])
        out = []
        fi = li = 0
        for key, _, off, n, idx, path in plan:
            if path == "fp32":
                acc = out_fp32[fi] / np.float32(self.gworld)
                if self.admission is not None and self.step < self.warmup:
                    sc = ssum[fi]
                    lowv = np.where(cnts[fi] >= 0, sc / self.gworld,
                                    -sc / self.gworld).astype(np.float32)
                    self.admission.observe(idx, float(np.sum((lowv - acc) ** 2,
                                                             dtype=np.float64)),
                                           float(np.mean(np.abs(cnts[fi]))) / self.gworld)
                out.append(acc.astype(np.float32))
                fi += 1
                continue
            c = out_low[li]
            li += 1
            scale = np.float32(np.mean(np.ascontiguousarray(scales[:, idx])))
            agg = self._decide(c, path, scale)
            if self.ef_server:
                div = self.gworld if self.exchange_kind == "counts" else self.npools
                est = (c.astype(np.float32) *
                       (scale / np.float32(div))).astype(np.float32)
                agg = self._server_feedback(key, est, agg)
            out.append(agg)
        return out

    def _decide(self, c, path, scale):
        """The global read-out of summed counts (or of summed votes)."""
        if path == "gbinary":
            return np.where(c >= 0, scale, -scale).astype(np.float32)
        t = self.gthreshold if self.exchange_kind == "counts" else self.vthreshold
        vals = np.where(c >= t, 1.0, np.where(c <= -t, -1.0, 0.0))
        return (vals * scale).astype(np.float32)

    def _vote(self, counts, path):
        """Each pool's decision, sent packed (1 bit G-Binary, 2 bits
        G-Ternary); returns the sum of the pools' votes (+1/-1, or
        +1/0/-1) per element, on every rank."""
        bounds = self._bounds(len(counts))
        a, b = bounds[self.local]
        mine = counts[a:b]
        if path == "gbinary":
            bits = np.zeros(-(-len(mine) // 8) * 8, np.uint8)
            bits[:len(mine)] = mine >= 0
            votes = self._col_gather(np.packbits(bits, bitorder="little"))
            ones = sum(np.unpackbits(v, bitorder="little")[:len(mine)].astype(np.int32)
                       for v in votes)
            tot = 2 * ones - self.npools
        else:
            tp = self.threshold         # this pool's own gate
            code = np.where(mine >= tp, 1, np.where(mine <= -tp, 3, 0)).astype(np.uint8)
            c4 = np.zeros(-(-len(code) // 4) * 4, np.uint8)
            c4[:len(code)] = code
            c4 = c4.reshape(-1, 4)
            packed = (c4[:, 0] | c4[:, 1] << 2 | c4[:, 2] << 4 | c4[:, 3] << 6).astype(np.uint8)
            votes = self._col_gather(packed)
            tot = np.zeros(len(mine), np.int32)
            for v in votes:
                cv = np.stack([(v >> (2 * k)) & 3 for k in range(4)], axis=1).reshape(-1)[:len(mine)]
                tot += np.where(cv == 1, 1, np.where(cv == 3, -1, 0)).astype(np.int32)
        vdt = _int_dtype(self.npools)[0]
        return self._pool_gather(tot.astype(vdt), bounds).astype(np.int32)

    def traffic(self):
        """Bytes so far: this rank's payload handed to the collectives, per
        tier (inter_pool: between pools; intra_pool: the gather inside a
        pool), and this pool's device (CXL) writes and reads, per path."""
        st = self.dev.stats(pool=True)
        return {"net": dict(self.net),
                "cxl_write_bytes": {k: v["write_bytes"] for k, v in st.items()},
                "cxl_read_bytes": {k: v["read_bytes"] for k, v in st.items()}}


assert _PAD % 8 == 0
