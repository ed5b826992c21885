# SPDX-License-Identifier: GPL-2.0-or-later
"""ctypes binding of libnfabric (guest/lib/libnfabric.h).

The same calls reach a NEURON-Fabric device two ways:

* ``Device.open()``: in a guest, the device's register block and its CXL
  region's dax mapping (libnfabric's nfabric_open);
* ``Device.host(state, mem, mem_size, head, heads)``: on a host without a VM,
  one head of a shared device served by the device's own controller model
  (libnfabric's nfabric_open_host over the state and memory files), the same
  per-element semantics at native speed.

Nothing of libnfabric's logic is repeated here: every call is the C one.
"""
import ctypes
import ctypes.util
import errno
import operator
import os

import numpy as np

__all__ = ["Device", "NFabricError", "Round", "Heads", "library_path"]


class NFabricError(RuntimeError):
    """A refusal by the device (code > 0: NFABRIC_ERR_*) or a library error
    (code < 0: a negative errno value)."""

    def __init__(self, code, message):
        super().__init__(message)
        self.code = code


# The C types of libnfabric's integer arguments: ctypes would wrap a value
# out of range silently (2**32 + 1 becomes 1), so every one is checked.
_C_RANGES = {
    "unsigned": (0, (1 << 32) - 1),     # unsigned int (LP64, ILP32)
    "uint32_t": (0, (1 << 32) - 1),
    "uint64_t": (0, (1 << 64) - 1),
    "size_t": (0, (1 << 64) - 1),
}


def _c_int(name, value, ctype):
    """value as a Python int within C type ctype's range; else ValueError
    (TypeError for what is not an integer) naming the argument."""
    if isinstance(value, bool):
        raise TypeError("%s: %r is a bool, not an integer" % (name, value))
    try:
        v = operator.index(value)
    except TypeError:
        raise TypeError("%s: %r is not an integer (%s)" % (name, value, ctype)) from None
    lo, hi = _C_RANGES[ctype]
    if not lo <= v <= hi:
        raise ValueError("%s: %d is out of range for %s (%d..%d)" % (name, v, ctype, lo, hi))
    return v


class _WinCfg(ctypes.Structure):
    _fields_ = [("base", ctypes.c_uint64), ("size", ctypes.c_uint64),
                ("counters", ctypes.c_uint64), ("path", ctypes.c_uint),
                ("width", ctypes.c_uint), ("tie", ctypes.c_uint),
                ("threshold", ctypes.c_uint32), ("posted", ctypes.c_bool)]


class _Round(ctypes.Structure):
    _fields_ = [("seq", ctypes.c_uint32), ("done", ctypes.c_uint32),
                ("status", ctypes.c_uint32), ("all_done", ctypes.c_bool),
                ("incomplete", ctypes.c_bool), ("ndone", ctypes.c_uint),
                ("nexpected", ctypes.c_uint)]


class _Heads(ctypes.Structure):
    _fields_ = [("index", ctypes.c_uint), ("count", ctypes.c_uint),
                ("shared", ctypes.c_bool), ("live", ctypes.c_uint32),
                ("lost", ctypes.c_uint32), ("jobs_assigned", ctypes.c_bool),
                ("job", ctypes.c_uint), ("job_windows", ctypes.c_uint32),
                ("staging", ctypes.c_bool)]


class _PathStats(ctypes.Structure):
    _fields_ = [("reads", ctypes.c_uint64), ("writes", ctypes.c_uint64),
                ("read_bytes", ctypes.c_uint64), ("write_bytes", ctypes.c_uint64)]


class Round:
    """A window's round (docs/registers.md, Rounds)."""

    def __init__(self, r):
        self.seq, self.done = r.seq, r.done
        self.all_done, self.incomplete = bool(r.all_done), bool(r.incomplete)
        self.ndone, self.nexpected = r.ndone, r.nexpected

    def __repr__(self):
        return ("Round(seq=%d, done=0x%x, all_done=%s, incomplete=%s, %d/%d)"
                % (self.seq, self.done, self.all_done, self.incomplete,
                   self.ndone, self.nexpected))


class Heads:
    def __init__(self, h):
        self.index, self.count, self.shared = h.index, h.count, bool(h.shared)
        self.live, self.lost = h.live, h.lost
        # Jobs set by a fabric manager (docs/multihost.md, Jobs and owners).
        self.jobs_assigned, self.job = bool(h.jobs_assigned), h.job
        self.job_windows = h.job_windows
        # Register version 1.7: this head has staging for posted windows.
        self.staging = bool(h.staging)


def library_path():
    """libnfabric.so: $NFABRIC_LIB, the project's build, or the system's."""
    env = os.environ.get("NFABRIC_LIB")
    if env:
        return env
    here = os.path.dirname(os.path.abspath(__file__))
    for cand in (os.path.join(here, "..", "..", "..", "build", "host", "guest",
                              "libnfabric.so"),
                 "/usr/lib/nfabric/libnfabric.so"):
        if os.path.exists(cand):
            return os.path.normpath(cand)
    found = ctypes.util.find_library("nfabric")
    if not found:
        raise NFabricError(-errno.ENOENT, "libnfabric.so not found: build it (scripts/nfabric "
                           "setup) or set NFABRIC_LIB")
    return found


_lib = None


def _load():
    global _lib
    if _lib is not None:
        return _lib
    lib = ctypes.CDLL(library_path())
    p, u32, u64, i = ctypes.c_void_p, ctypes.c_uint32, ctypes.c_uint64, ctypes.c_int
    sigs = {
        "nfabric_new": ([], p), "nfabric_free": ([p], None),
        "nfabric_open": ([p, ctypes.c_uint], i),
        "nfabric_open_host": ([p, ctypes.c_char_p, ctypes.c_char_p, u64,
                               ctypes.c_uint, ctypes.c_uint], i),
        "nfabric_errmsg": ([p], ctypes.c_char_p),
        "nfabric_strerror": ([i], ctypes.c_char_p),
        "nfabric_path_parse": ([ctypes.c_char_p], i),
        "nfabric_path_name": ([ctypes.c_uint], ctypes.c_char_p),
        "nfabric_counter_size": ([ctypes.c_uint, ctypes.c_uint, u64], u64),
        "nfabric_num_windows": ([p], ctypes.c_uint),
        "nfabric_window_set": ([p, ctypes.c_uint, ctypes.POINTER(_WinCfg)], i),
        "nfabric_window_disable": ([p, ctypes.c_uint], i),
        "nfabric_window_clear": ([p, ctypes.c_uint], i),
        "nfabric_round_read": ([p, ctypes.c_uint, ctypes.POINTER(_Round)], i),
        "nfabric_round_complete": ([p, ctypes.c_uint, u32], i),
        "nfabric_round_wait": ([p, ctypes.c_uint, u32, ctypes.c_uint,
                                ctypes.POINTER(_Round)], i),
        "nfabric_round_wait_next": ([p, ctypes.c_uint, u32, ctypes.c_uint], i),
        "nfabric_heads_read": ([p, ctypes.POINTER(_Heads)], i),
        "nfabric_head_contrib": ([p, ctypes.c_uint, ctypes.c_uint,
                                  ctypes.POINTER(u64)], i),
        "nfabric_mem_write": ([p, u64, p, u64], i),
        "nfabric_mem_read": ([p, u64, p, u64], i),
        "nfabric_stats": ([p, ctypes.POINTER(_PathStats)], i),
        "nfabric_pool_stats": ([p, ctypes.POINTER(_PathStats)], i),
        "nfabric_mem_size": ([p], u64),
        "nfabric_enabled_mask": ([p], u32),
    }
    for name, (args, res) in sigs.items():
        fn = getattr(lib, name)
        fn.argtypes, fn.restype = args, res
    _lib = lib
    return lib


def path_number(name):
    """'fp32', 'gbinary', 'gternary' (libnfabric's names) to the path code."""
    code = _load().nfabric_path_parse(name.encode())
    if code < 0:
        raise ValueError("unknown path %r (fp32, gbinary, gternary)" % (name,))
    return code


def counter_bytes(path, width, size):
    """Bytes of the counter area of a window of `size` data bytes."""
    code = path_number(path)
    width = _c_int("width", width, "unsigned")
    size = _c_int("size", size, "uint64_t")
    per_byte = {1: 8, 2: 4}.get(code, 0) * (width // 8)
    _c_int("size", size * per_byte, "uint64_t")     # the C product must not wrap
    return _load().nfabric_counter_size(code, width, size)


class Device:
    """One NEURON-Fabric device (in a guest) or head (on a host)."""

    def __init__(self):
        self._lib = _load()
        self._d = self._lib.nfabric_new()
        if not self._d:
            raise MemoryError("nfabric_new")
        self.access = None

    @classmethod
    def open(cls):
        """The guest's NEURON-Fabric device: registers and its dax region."""
        dev = cls()
        dev._check(dev._lib.nfabric_open(dev._d, 0), "open the device")
        return dev

    @classmethod
    def host(cls, state, mem, mem_size, head, heads):
        """Head `head` of a `heads`-head shared device, no VM: the device's
        controller over the state file and memory file (created if new)."""
        mem_size = _c_int("mem_size", mem_size, "uint64_t")
        head = _c_int("head", head, "unsigned")
        heads = _c_int("heads", heads, "unsigned")
        dev = cls()
        dev._check(dev._lib.nfabric_open_host(dev._d, state.encode(), mem.encode(),
                                              mem_size, head, heads),
                   "attach head %d of %s" % (head, state))
        return dev

    def close(self):
        if self._d:
            self._lib.nfabric_free(self._d)
            self._d = None

    def __del__(self):
        try:
            self.close()
        except Exception:
            pass

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def _check(self, rc, what):
        if rc:
            msg = self._lib.nfabric_errmsg(self._d).decode(errors="replace")
            raise NFabricError(rc, "%s: %s" % (what, msg or
                               self._lib.nfabric_strerror(rc).decode()))
        return rc

    # ---- heads, windows, rounds ------------------------------------------
    def heads(self):
        h = _Heads()
        self._check(self._lib.nfabric_heads_read(self._d, ctypes.byref(h)), "heads")
        return Heads(h)

    def num_windows(self):
        return self._lib.nfabric_num_windows(self._d)

    def enabled_mask(self):
        return self._lib.nfabric_enabled_mask(self._d)

    def mem_size(self):
        return self._lib.nfabric_mem_size(self._d)

    def set_window(self, i, base, size, path, counters=0, width=8, tie=0,
                   threshold=1, posted=None):
        """Enable window i.  posted: a posted window (docs/registers.md,
        "Posted windows"): write() and read() then move its data at memory
        speed and ring its doorbells, with the same results.  None (the
        default): posted for G-Binary and G-Ternary wherever this head has
        staging (Heads.staging), trapped otherwise; False: trapped, every
        access through the device."""
        i = _c_int("i", i, "unsigned")
        number = path_number(path)
        if posted is None:
            posted = number != 0 and self.heads().staging
        cfg = _WinCfg(_c_int("base", base, "uint64_t"), _c_int("size", size, "uint64_t"),
                      _c_int("counters", counters, "uint64_t"), number,
                      _c_int("width", width, "unsigned"), _c_int("tie", tie, "unsigned"),
                      _c_int("threshold", threshold, "uint32_t"), bool(posted))
        self._check(self._lib.nfabric_window_set(self._d, i, ctypes.byref(cfg)),
                    "window %d (%s%s at DPA 0x%x, %d bytes)" %
                    (i, "posted " if posted else "", path, base, size))

    def disable(self, i):
        i = _c_int("i", i, "unsigned")
        self._check(self._lib.nfabric_window_disable(self._d, i), "disable %d" % i)

    def clear(self, i):
        i = _c_int("i", i, "unsigned")
        self._check(self._lib.nfabric_window_clear(self._d, i), "clear %d" % i)

    def round(self, i):
        i = _c_int("i", i, "unsigned")
        r = _Round()
        self._check(self._lib.nfabric_round_read(self._d, i, ctypes.byref(r)),
                    "round of window %d" % i)
        return Round(r)

    def complete(self, i, seq):
        i = _c_int("i", i, "unsigned")
        seq = _c_int("seq", seq, "uint32_t")
        self._check(self._lib.nfabric_round_complete(self._d, i, seq),
                    "complete round %d of window %d" % (seq, i))

    def wait(self, i, seq, timeout_ms=600000):
        i = _c_int("i", i, "unsigned")
        seq = _c_int("seq", seq, "uint32_t")
        timeout_ms = _c_int("timeout_ms", timeout_ms, "unsigned")
        r = _Round()
        self._check(self._lib.nfabric_round_wait(self._d, i, seq, timeout_ms,
                                                 ctypes.byref(r)),
                    "wait for round %d of window %d" % (seq, i))
        return Round(r)

    def wait_next(self, i, seq, timeout_ms=600000):
        i = _c_int("i", i, "unsigned")
        seq = _c_int("seq", seq, "uint32_t")
        timeout_ms = _c_int("timeout_ms", timeout_ms, "unsigned")
        self._check(self._lib.nfabric_round_wait_next(self._d, i, seq, timeout_ms),
                    "wait for window %d to leave round %d" % (i, seq))

    def head_contrib(self, head, i):
        head = _c_int("head", head, "unsigned")
        i = _c_int("i", i, "unsigned")
        v = ctypes.c_uint64()
        self._check(self._lib.nfabric_head_contrib(self._d, head, i, ctypes.byref(v)),
                    "contributions of head %d to window %d" % (head, i))
        return v.value

    # ---- device memory -----------------------------------------------------
    def write(self, dpa, data):
        """Write bytes (any buffer, e.g. a numpy array) at DPA dpa, as
        nfabric_mem_write: on a shared device, 4 KiB or more begins at this
        head's share of the range and wraps around."""
        dpa = _c_int("dpa", dpa, "uint64_t")
        buf = np.ascontiguousarray(np.frombuffer(memoryview(data).cast("B"),
                                                 dtype=np.uint8))
        self._check(self._lib.nfabric_mem_write(self._d, dpa, buf.ctypes.data,
                                                buf.nbytes),
                    "write %d bytes at DPA 0x%x" % (buf.nbytes, dpa))

    def read(self, dpa, nbytes):
        """nbytes at DPA dpa, as a numpy uint8 array."""
        dpa = _c_int("dpa", dpa, "uint64_t")
        nbytes = _c_int("nbytes", nbytes, "size_t")
        if dpa + nbytes > self.mem_size():
            raise ValueError("dpa, nbytes: 0x%x + %d is past the device memory (%d bytes)"
                             % (dpa, nbytes, self.mem_size()))
        out = np.empty(nbytes, dtype=np.uint8)
        self._check(self._lib.nfabric_mem_read(self._d, dpa, out.ctypes.data, nbytes),
                    "read %d bytes at DPA 0x%x" % (nbytes, dpa))
        return out

    def stats(self, pool=False):
        """Per path (fp32, gbinary, gternary): reads, writes, bytes."""
        st = (_PathStats * 3)()
        fn = self._lib.nfabric_pool_stats if pool else self._lib.nfabric_stats
        self._check(fn(self._d, st), "statistics")
        return {name: {"reads": s.reads, "writes": s.writes,
                       "read_bytes": s.read_bytes, "write_bytes": s.write_bytes}
                for name, s in zip(("fp32", "gbinary", "gternary"), st)}
