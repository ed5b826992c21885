# SPDX-License-Identifier: GPL-2.0-or-later
"""PyTorch DistributedDataParallel communication hooks that aggregate every
gradient bucket in a NEURON-Fabric device shared by all ranks.

    job = FabricJob(dev, model, rank, world, mode="gbinary")
    ddp.register_comm_hook(job, fabric_hook)

Modes (docs/pytorch.md):

* ``fp32``: each rank writes its gradients (float32) into its own slot of an
  FP32 window; every rank reads all slots and averages them.
* ``gbinary``: each rank writes packed signs into a G-Binary window (the
  device counts them per element) and its per-tensor scale (mean |g|) into
  an FP32 slot; every rank reads the majority signs, times the mean scale.
* ``gternary``: stochastic ternarisation (TernGrad): scale s = max |g| per
  tensor, element i is sign(g_i) with probability |g_i| / s, else 0; codes
  into a G-Ternary window, s into an FP32 slot; every rank reads the gated
  sum (+1, 0, -1 where |sum| >= threshold) times the mean scale.
* ``layer_aware``: some layers on FP32, the rest low-bit (``low``: gbinary
  or gternary).  Which ones (``admission``):

  - ``"sensitivity"`` (the default): measured.  The first ``probe`` steps
    (5 by default, at least ``warmup``) run every layer on FP32; every rank
    reads every rank's gradients then, and computes for each layer (the
    parameters of one module) the G-Binary aggregate those gradients would
    have given (majority sign times the mean of the ranks' mean |g|) and
    its squared distance from the FP32 mean, summed over the probe steps.
    Layers are then kept on FP32 greedily by that error per element (the
    error a byte of FP32 traffic removes) while the job's traffic stays
    within ``budget_pct`` percent of FP32 (low-bit layers cost 1/32,
    G-Ternary 1/16); the rest are admitted to the low-bit path.  This is
    L-GreCo's layer-wise selection (Markov et al., "L-GreCo: Layerwise-
    adaptive gradient compression for efficient data-parallel deep
    learning", MLSys 2024: per-layer compression error measured during
    training, a knapsack under a size budget) with two choices per layer.
    Every rank computes it from the same reads: the same set everywhere.
  - ``"last_linear"``: the fixed rule, the last nn.Linear (the head).
  - ``fp32_params=[...]``: an explicit list.

Options as PowerSGD's: ``warmup`` steps of full precision first
(``start_powerSGD_iter``), and ``error_feedback``:

* ``"worker"`` (or True): each rank adds its own compression error (its
  gradient minus what its compressor sent, at the compressor's own scale:
  mean |g| for G-Binary, max |g| for G-Ternary) to its next gradient
  (EF-SignSGD, Karimireddy et al. 2019).  It corrects the rank's compressor,
  not the majority vote or the gate, whose error it never sees.
* ``"server"``: the error of the aggregate.  Every rank reads the window's
  per-element counts (the signed sum of the ranks' signs or codes, from the
  counter area) and the scales, so every rank computes the same count
  estimate a = scale * count / world of the mean of the compressed
  gradients and the same read-out error e = a - read-out; the hook returns
  read-out + the previous step's e (DoubleSqueeze, Tang et al. 2019, with the
  device's vote as the server's compressor).  Identical on every rank: it
  is computed from what every rank reads.
* ``"both"``: the two.

Layout: every parameter has fixed element ranges in the job's windows
(padded to 512 elements), so buckets map to window ranges once, whatever
DDP's bucketing.  Exchanges alternate between two sets of windows; each
exchange is one round of the set's FP32 window (every rank completes it and
waits for all); rank 0 clears a set before its next use, which every rank
waits for.
"""
import contextlib
import errno
import math

import numpy as np
import torch

from .device import NFabricError, counter_bytes

__all__ = ["FabricJob", "fabric_hook", "fabric_errors", "MODES"]

MODES = ("fp32", "gbinary", "gternary", "layer_aware")
_PAD = 512                      # elements: 64 bytes of signs, 128 of codes
_WAIT_MS = 600000


def _align(x, a=64):
    return (x + a - 1) // a * a


def ternarize(g, rng):
    """TernGrad: scale = max |g|; element i is sign(g_i) with probability
    |g_i| / scale, else 0.  Returns (scale, int8 values)."""
    n = g.size
    scale = np.float32(np.abs(g).max()) if n else np.float32(0)
    prob = np.abs(g) / scale if scale > 0 else np.zeros_like(g)
    t = np.where(rng.random(n) < prob, np.sign(g), 0).astype(np.int8)
    return scale, t


def default_fp32_params(model):
    """The classifier head: the parameters of the last nn.Linear."""
    last = None
    for m in model.modules():
        if isinstance(m, torch.nn.Linear):
            last = m
    return list(last.parameters()) if last is not None else []


class Admission:
    """The sensitivity admission of layer_aware (see the module's text)."""

    def __init__(self, named, world, budget_pct, low):
        self.world, self.budget_pct, self.low = world, budget_pct, low
        self.layers = {}                # module name -> [param indices]
        self.size = {}
        for idx, (name, p) in enumerate(named):
            layer = name.rsplit(".", 1)[0] if "." in name else name
            self.layers.setdefault(layer, []).append(idx)
            self.size[idx] = p.numel()
        self.ptr = {idx: p.data_ptr() for idx, (_, p) in enumerate(named)}
        self.err = {}                   # param index -> summed squared error
        self.agree = {}                 # param index -> [mean |count| / world]
        self.decided = False
        self.fp32_layers = []
        self.report = []

    def observe(self, idx, err, agreement):
        self.err[idx] = self.err.get(idx, 0.0) + err
        self.agree.setdefault(idx, []).append(agreement)

    def decide(self):
        """The layers kept on FP32: greedy by error per element within the
        budget.  Returns the data_ptrs of their parameters."""
        total = sum(self.size.values())
        low_cost = 1.0 / 32 if self.low == "gbinary" else 1.0 / 16
        budget = self.budget_pct / 100.0 * total
        used = low_cost * total
        rows = []
        for layer, idxs in self.layers.items():
            n = sum(self.size[i] for i in idxs)
            e = sum(self.err.get(i, 0.0) for i in idxs)
            ag = [a for i in idxs for a in self.agree.get(i, [])]
            rows.append((e / n if n else 0.0, layer, n, e,
                         float(np.mean(ag)) if ag else 1.0))
        rows.sort(key=lambda r: (-r[0], r[1]))
        keep = set()
        for density, layer, n, e, ag in rows:
            extra = n * (1.0 - low_cost)
            fp32 = e > 0 and used + extra <= budget
            if fp32:
                used += extra
                self.fp32_layers.append(layer)
                keep.update(self.ptr[i] for i in self.layers[layer])
            self.report.append({"layer": layer, "params": n, "err": e,
                                "err_per_param": density, "sign_agreement": ag,
                                "fp32": fp32})
        self.planned_pct = 100.0 * used / total if total else 0.0
        self.decided = True
        return keep


class FabricJob:
    """One DDP job on the device: its windows, layout, rounds and state."""

    def __init__(self, dev, model, rank, world, mode="gbinary", low="gbinary",
                 fp32_params=None, warmup=0, error_feedback=False,
                 admission="sensitivity", budget_pct=8.0, probe=5,
                 base=0x1000000, first_window=8, threshold=None, seed=0,
                 timeout_ms=_WAIT_MS, posted=None):
        if mode not in MODES:
            raise ValueError("mode %r: one of %s" % (mode, ", ".join(MODES)))
        if low not in ("gbinary", "gternary"):
            raise ValueError("low %r: gbinary or gternary" % (low,))
        if not 1 <= world <= 16 or not 0 <= rank < world:
            raise ValueError("rank %d of %d: 1..16 ranks" % (rank, world))
        self.dev, self.rank, self.world = dev, rank, world
        # Low-bit windows posted (docs/registers.md "Posted windows"): None,
        # the default, posts wherever rank 0's head has staging memory.
        self.posted = posted
        heads = dev.heads()
        if heads.count != world or heads.index != rank:
            raise NFabricError(-errno.EINVAL, "rank %d of %d, but this is head %d of a "
                               "%d-head device: one head per rank" %
                               (rank, world, heads.index, heads.count))
        self.mode, self.low, self.warmup = mode, low, warmup
        if error_feedback is True:
            error_feedback = "worker"
        if error_feedback in (False, None, "off", "none"):
            error_feedback = ""
        if error_feedback not in ("", "worker", "server", "both"):
            raise ValueError("error_feedback %r: off, worker, server or both"
                             % (error_feedback,))
        self.error_feedback = error_feedback
        self.ef_worker = error_feedback in ("worker", "both")
        self.ef_server = error_feedback in ("server", "both")
        self.server_residual = {}
        self.timeout_ms = timeout_ms
        self.last_error = None          # the hook's last NFabricError (fabric_errors)
        self.threshold = threshold or max(1, (world + 1) // 2)
        self.width = 8 if world <= 127 else 16
        self.step = 0
        self.exchanges = 0
        self.residual = {}
        # Per exchange with low-bit tensors: (|g|^2 and |e|^2 after it,
        # with worker-side EF only, else 0; the mean of the compressor's
        # scales) of this rank, to see what error feedback does (ef_trace()).
        self.ef_trace_rows = []
        self.rng = np.random.default_rng(seed * 1000003 + rank)
        if admission not in ("sensitivity", "last_linear"):
            raise ValueError("admission %r: sensitivity or last_linear" % (admission,))
        named = [(n, p) for n, p in model.named_parameters() if p.requires_grad]
        params = [p for _, p in named]
        self.names = {p.data_ptr(): n for n, p in named}
        self.admission = None
        if mode == "layer_aware" and fp32_params is None and admission == "sensitivity":
            self.admission = Admission(named, world, budget_pct, low)
            self.warmup = max(warmup, probe)
            fp32_params = []
        fp32_ids = {p.data_ptr() for p in (default_fp32_params(model)
                                           if fp32_params is None else fp32_params)}
        # Fixed ranges: element offset and index of every parameter.
        self.layout = {}
        off = 0
        for idx, p in enumerate(params):
            self.layout[p.data_ptr()] = (off, p.numel(), idx,
                                         p.data_ptr() in fp32_ids)
            off += _align(p.numel(), _PAD)
        self.elems = off
        self.ntensors = len(params)
        self._plan_windows(base, first_window)
        self._setup()

    # ---- windows ---------------------------------------------------------
    def _plan_windows(self, base, w0):
        e, world = self.elems, self.world
        self.slot_bytes = e * 4                         # one rank's gradients
        self.scale_bytes = _align(self.ntensors * 4)    # one rank's scales
        fp_size = world * (self.slot_bytes + self.scale_bytes)
        gb_size, gt_size = e // 8, e // 4
        plan, dpa = [], base
        for s in range(2):
            for kind, size in (("fp32", fp_size), ("gbinary", gb_size),
                               ("gternary", gt_size)):
                ctr = counter_bytes(kind, self.width, size)
                plan.append((kind, dpa, size, dpa + size if ctr else 0))
                dpa = _align(dpa + size + ctr, 4096)
        plan.append(("fp32", dpa, 64, 0))              # the barrier
        dpa += 4096
        self.windows = {}
        for i, (kind, b, size, ctr) in enumerate(plan):
            self.windows[i] = (w0 + i, kind, b, size, ctr)
        total = dpa - base
        have = self.dev.mem_size()
        if dpa > have:
            raise NFabricError(-errno.EINVAL, "the job needs %d bytes of device memory from "
                               "DPA 0x%x (%d elements x %d ranks), the device has "
                               "%d (0x%x bytes left)" % (total, base, e, world,
                                                          have, max(0, have - base)))
        if w0 + len(plan) > self.dev.num_windows():
            raise NFabricError(-errno.EINVAL, "the job needs windows %d..%d, the device has "
                               "%d" % (w0, w0 + len(plan) - 1,
                                       self.dev.num_windows()))

    def _win(self, s, kind):
        k = {"fp32": 0, "gbinary": 1, "gternary": 2}[kind]
        return self.windows[s * 3 + k]

    def _setup(self):
        bar = self.windows[6]
        self.bar = bar[0]
        if self.rank == 0:
            for idx, kind, b, size, ctr in self.windows.values():
                mask = self.dev.enabled_mask()
                if mask & (1 << idx):
                    self.dev.disable(idx)
                posted = False if kind == "fp32" else self.posted
                self.dev.set_window(idx, b, size, kind, counters=ctr,
                                    width=self.width, tie=1,
                                    threshold=self.threshold, posted=posted)
        else:
            self._wait_for_barrier_window(bar)
        self.barrier()
        self.expected = [self.dev.round(self._win(s, "fp32")[0]).seq + 1
                         for s in range(2)]
        self.barrier()          # nobody clears before everyone read them

    def _wait_for_barrier_window(self, bar):
        import time
        t0 = time.monotonic()
        while time.monotonic() - t0 < self.timeout_ms / 1000:
            if self.dev.enabled_mask() & (1 << bar[0]):
                return
            time.sleep(0.002)
        raise NFabricError(-errno.ETIMEDOUT, "rank 0 never set up the job's windows")

    def barrier(self):
        """Every rank: complete the barrier window's round; rank 0 clears it."""
        seq = self.dev.round(self.bar).seq
        self.dev.complete(self.bar, seq)
        if self.rank == 0:
            self.dev.wait(self.bar, seq, self.timeout_ms)
            self.dev.clear(self.bar)
        else:
            self.dev.wait_next(self.bar, seq, self.timeout_ms)

    def close(self):
        """End the job on every rank (each must call it): disable its
        windows, so that the next job on them, in these processes or in
        others, starts from disabled windows and cannot meet this job's.
        Rank 0 disables the windows; each other rank waits until it sees the
        barrier window disabled, acknowledges in the barrier window's bytes
        (plain memory again), and returns once rank 0 has seen every
        acknowledgement (it zeroes them)."""
        import time
        self.barrier()
        idx, _, bar_dpa, _, _ = self.windows[6]
        t0 = time.monotonic()

        def waiting(what):
            if time.monotonic() - t0 > self.timeout_ms / 1000:
                raise NFabricError(-errno.ETIMEDOUT, "closing the job: %s" % what)
            time.sleep(0.002)

        if self.rank == 0:
            for i, _, _, _, _ in self.windows.values():
                if self.dev.enabled_mask() & (1 << i):
                    self.dev.disable(i)
            while np.any(self.dev.read(bar_dpa + 1, self.world - 1) != 1):
                waiting("the other ranks never acknowledged")
            self.dev.write(bar_dpa, np.zeros(self.world, np.uint8))
        else:
            while self.dev.enabled_mask() & (1 << idx):
                waiting("rank 0 never disabled the windows")
            self.dev.write(bar_dpa + self.rank, np.ones(1, np.uint8))
            while self.dev.read(bar_dpa + self.rank, 1)[0] != 0:
                waiting("rank 0 never saw every acknowledgement")

    # ---- one exchange of one bucket --------------------------------------
    def _begin(self):
        s = self.exchanges % 2
        self.exchanges += 1
        fpw = self._win(s, "fp32")[0]
        if self.rank == 0:
            # The FP32 window last: its new round lets the others write.
            for kind in ("gbinary", "gternary", "fp32"):
                self.dev.clear(self._win(s, kind)[0])
        seq = self.expected[s]
        if self.rank != 0:
            r = self.dev.round(fpw)
            if r.seq != seq:
                self.dev.wait_next(fpw, seq - 1, self.timeout_ms)
        r = self.dev.round(fpw)
        if r.seq != seq:
            raise NFabricError(-errno.ESTALE, "exchange %d: window %d is at round %d, "
                               "expected %d" % (self.exchanges, fpw, r.seq, seq))
        self.expected[s] = seq + 1
        return s, fpw, seq

    def _path_of(self, fp32_param):
        if self.step < self.warmup or self.mode == "fp32":
            return "fp32"

        if self.mode == "layer_aware":
            return "fp32" if fp32_param else self.low
        return self.mode

    def _admit(self):
        """layout_aware: once the warm-up is over, the admission's FP32 set."""
        if (self.admission is not None and not self.admission.decided and
                self.step >= self.warmup):
            keep = self.admission.decide()
            for k, (off, n, idx, _) in list(self.layout.items()):
                self.layout[k] = (off, n, idx, k in keep)

    def _round(self, tensors):
        """Write every tensor on its path, complete the exchange's round and
        wait for every rank of the device.  Returns the window set and the
        plan: (key, gradient as sent, offset, length, index, path) each."""
        s, fpw, seq = self._begin()
        plan = []
        g2 = e2 = 0.0
        self._scales_sent = []
        for key, g in tensors:
            off, n, idx, fp32p = self.layout[key]
            path = self._path_of(fp32p)
            g = g.astype(np.float32, copy=False)
            if path != "fp32" and self.ef_worker:
                g2 += float(np.dot(g, g))
                g = g + self.residual.get(key, 0)
            plan.append((key, g, off, n, idx, path))
            self._write(s, g, off, n, idx, path, key)
            if path != "fp32" and self.ef_worker:
                e = self.residual[key]
                e2 += float(np.dot(e, e))
        self.dev.complete(fpw, seq)
        r = self.dev.wait(fpw, seq, self.timeout_ms)
        if r.incomplete:
            raise NFabricError(-errno.ESTALE, "exchange %d: a rank died mid-round "
                               "(INCOMPLETE)" % self.exchanges)
        if self._scales_sent:
            self.ef_trace_rows.append((g2, e2, float(np.mean(self._scales_sent))))
        return s, plan

    def exchange(self, tensors):
        """Aggregate [(param_key, grad ndarray float32)]: one round; returns
        the aggregated arrays in the same order."""
        self._admit()
        s, plan = self._round(tensors)
        # Every rank's scales in one read, when a low-bit path needs them.
        scales = None
        if any(path != "fp32" for *_, path in plan):
            scales = self.dev.read(self._scale_dpa(s, 0, 0),
                                   self.world * self.scale_bytes)
            scales = scales.view(np.float32).reshape(self.world, -1)
        out = []
        for key, g, off, n, idx, path in plan:
            agg = self._read(s, off, n, idx, path, scales)
            if path != "fp32" and self.ef_server:
                est = self._count_estimate(s, off, n, idx, path, scales)
                agg = self._server_feedback(key, est, agg)
            out.append(agg)
        return out

    def _server_feedback(self, key, est, agg):
        """Server-side error feedback: the read-out plus the residual the
        last exchange of this bucket left, and this exchange's residual
        (the counts' estimate less the read-out) kept for the next."""
        prev = self.server_residual.get(key)
        self.server_residual[key] = (est - agg).astype(np.float32)
        return agg if prev is None else (agg + prev).astype(np.float32)

    def ef_trace(self):
        """What error feedback did on this rank, over the low-bit
        exchanges: the worker residual's norm over the gradient's
        (|e| / |g|, mean of the first and of the last tenth of the
        exchanges; 0 without worker-side EF) and the compressor's mean
        scale, first and last tenth (the scale grows when the residual
        does)."""
        rows = self.ef_trace_rows
        if not rows:
            return {}
        k = max(1, len(rows) // 10)

        def tenth(part, f):
            return float(np.mean([f(r) for r in part]))
        ratio = lambda r: (r[1] / r[0]) ** 0.5 if r[0] > 0 else 0.0
        return {"ef_residual_ratio_first": round(tenth(rows[:k], ratio), 4),
                "ef_residual_ratio_last": round(tenth(rows[-k:], ratio), 4),
                "scale_first": float("%.4g" % tenth(rows[:k], lambda r: r[2])),
                "scale_last": float("%.4g" % tenth(rows[-k:], lambda r: r[2]))}

    def _count_estimate(self, s, off, n, idx, path, scales):
        """Mean of the ranks' compressed gradients, from the window's
        per-element counts (signed sums) and the mean scale."""
        ctr = self._win(s, path)[4]
        nb = self.width // 8
        dt = np.int8 if nb == 1 else np.dtype("<i2")
        counts = self.dev.read(ctr + off * nb, n * nb).view(dt).astype(np.float32)
        scale = np.float32(np.mean(np.ascontiguousarray(scales[:, idx])))
        return (counts * (scale / np.float32(self.world))).astype(np.float32)

    def ef_digest(self):
        """sha256 of the server-side EF state (the same on every rank)."""
        import hashlib
        h = hashlib.sha256()
        for key in sorted(self.server_residual, key=lambda k: self.layout[k][0]):
            h.update(self.server_residual[key].tobytes())
        return h.hexdigest()[:16]

    def _slot(self, s, r):
        return self._win(s, "fp32")[2] + r * self.slot_bytes

    def _scale_dpa(self, s, r, idx):
        return (self._win(s, "fp32")[2] + self.world * self.slot_bytes +
                r * self.scale_bytes + idx * 4)

    def _write(self, s, g, off, n, idx, path, key):
        dev = self.dev
        if path == "fp32":
            dev.write(self._slot(s, self.rank) + off * 4, g)
            return
        if path == "gbinary":
            scale = np.float32(np.abs(g).mean()) if n else np.float32(0)
            bits = np.zeros(_align(n, 8), dtype=np.uint8)
            bits[:n] = g >= 0
            packed = np.packbits(bits, bitorder="little")
            local = np.where(g >= 0, scale, -scale).astype(np.float32)
            dev.write(self._win(s, "gbinary")[2] + off // 8, packed)
        else:
            scale, t = ternarize(g, self.rng)
            codes = np.zeros(_align(n, 4), dtype=np.uint8)
            codes[:n] = np.where(t > 0, 1, np.where(t < 0, 3, 0))
            c4 = codes.reshape(-1, 4)
            packed = (c4[:, 0] | c4[:, 1] << 2 | c4[:, 2] << 4 |
                      c4[:, 3] << 6).astype(np.uint8)
            local = (t.astype(np.float32) * scale).astype(np.float32)
            dev.write(self._win(s, "gternary")[2] + off // 4, packed)
        dev.write(self._scale_dpa(s, self.rank, idx),
                  np.array([scale], dtype=np.float32))
        self._scales_sent.append(float(scale))
        if self.ef_worker:
            self.residual[key] = (g - local).astype(np.float32)

    def _read(self, s, off, n, idx, path, scales):
        dev = self.dev
        if path == "fp32":
            acc = np.zeros(n, dtype=np.float32)
            probing = self.admission is not None and self.step < self.warmup
            count = np.zeros(n, dtype=np.int32) if probing else None
            scale = np.float32(0)
            for r in range(self.world):
                g = dev.read(self._slot(s, r) + off * 4, n * 4).view(np.float32)
                acc += g
                if probing:
                    count += np.where(g >= 0, 1, -1).astype(np.int32)
                    scale += np.float32(np.abs(g).mean()) if n else np.float32(0)
            acc = acc / np.float32(self.world)
            if probing:
                # What G-Binary would have read out (tie: +1, the window's rule).
                low = np.where(count >= 0, scale / self.world,
                               -scale / self.world).astype(np.float32)
                self.admission.observe(idx, float(np.sum((low - acc) ** 2, dtype=np.float64)),
                                       float(np.mean(np.abs(count)) / self.world))
            return acc
        scale = np.float32(np.mean(np.ascontiguousarray(scales[:, idx])))
        if path == "gbinary":
            packed = dev.read(self._win(s, "gbinary")[2] + off // 8,
                              _align(n, 8) // 8)
            bits = np.unpackbits(packed, bitorder="little")[:n]
            return np.where(bits == 1, scale, -scale).astype(np.float32)
        packed = dev.read(self._win(s, "gternary")[2] + off // 4, _align(n, 4) // 4)
        codes = np.stack([(packed >> (2 * k)) & 3 for k in range(4)], axis=1).reshape(-1)[:n]
        vals = np.where(codes == 1, 1.0, np.where(codes == 3, -1.0, 0.0))
        return (vals * scale).astype(np.float32)

    def fp32_layers(self):
        """The layers on FP32 after warm-up (layer_aware), by name."""
        if self.admission is not None:
            return list(self.admission.fp32_layers) if self.admission.decided else None
        names = [self.names[k] for k, v in self.layout.items() if v[3]]
        return sorted({n.rsplit(".", 1)[0] for n in names})

    def traffic_bytes(self):
        """Bytes the job's ranks wrote to the device, per path (pool)."""
        st = self.dev.stats(pool=True)
        return {k: v["write_bytes"] for k, v in st.items()}


def fabric_hook(job, bucket):
    """DDP communication hook: the bucket's gradients aggregated in the device.

    An NFabricError raised here does not reach the caller of backward() as
    itself: torch 1.13's DDP turns it into a RuntimeError whose text begins
    "NFabricError: " (docs/pytorch.md, "Errors under DDP").  The hook keeps
    it in job.last_error, and fabric_errors(job) raises it again as itself."""
    grads = bucket.gradients()
    params = bucket.parameters()
    tensors = [(p.data_ptr(), g.detach().cpu().numpy().ravel())
               for p, g in zip(params, grads)]
    try:
        out = job.exchange(tensors)
    except NFabricError as e:
        job.last_error = e
        raise
    flat = torch.from_numpy(np.concatenate(out) if out else np.zeros(0, np.float32))
    result = flat.to(bucket.buffer().dtype).reshape(bucket.buffer().shape)
    if bucket.is_last():
        job.step += 1
    fut = torch.futures.Future()
    fut.set_result(result)
    return fut


@contextlib.contextmanager
def fabric_errors(*jobs):
    """Around a DDP step (``with fabric_errors(job): loss.backward()``): an
    NFabricError that a job's hook raised inside, which DDP hands on as a
    RuntimeError, is raised as that NFabricError (its code, its message),
    chained to DDP's RuntimeError.  Other exceptions pass unchanged."""
    for job in jobs:
        job.last_error = None
    try:
        yield
    except NFabricError:
        raise
    except RuntimeError as e:
        for job in jobs:
            err = job.last_error
            if err is not None:
                raise err from e
        raise
