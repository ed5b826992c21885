# SPDX-License-Identifier: GPL-2.0-or-later
"""Integer arguments of the binding against their C types (TAP on stdout).

    python3 -m nfcheck.argcheck [--dir DIR]

No VM: one head of a shared device on the host (Device.host, the device's
controller over a state file and a memory file in DIR).  Every public
function gets each boundary value (-1, 2**31, 2**32, 2**63, 2**64) in each
of its integer arguments, the others valid.  A value outside the argument's
C type must raise ValueError naming the argument before anything reaches
libnfabric; a value inside it must never be refused as out of range (the
library or the device may refuse it for what it means).  Then the issue 22
cases: each must leave the device as it was.
"""
import argparse
import os
import shutil
import sys
import tempfile

from nfabric import hostrun
from nfabric.device import Device, NFabricError, counter_bytes, path_number

BOUNDARY = (-1, 2**31, 2**32, 2**63, 2**64)
U32, U64 = (0, 2**32 - 1), (0, 2**64 - 1)
MEM = 64 << 20

_n = 0
_failed = 0


def check(ok, what):
    global _n, _failed
    _n += 1
    if not ok:
        _failed += 1
    print("%s %d - %s" % ("ok" if ok else "not ok", _n, what), flush=True)
    return ok


def outcome(fn):
    """What a call did: ('ok', None), ('value', msg), ('nfabric', msg), ('type', msg)."""
    try:
        fn()
        return "ok", None
    except ValueError as e:
        return "value", str(e)
    except NFabricError as e:
        return "nfabric", str(e)
    except TypeError as e:
        return "type", str(e)


def boundary(name, arg, rng, call):
    """call(v) with each boundary value v in argument `arg` of C range rng."""
    for v in BOUNDARY:
        kind, msg = outcome(lambda: call(v))
        inside = rng[0] <= v <= rng[1]
        if inside:
            check(not (kind == "value" and "out of range" in msg),
                  "%s(%s=%d): in range, not refused as out of range (%s%s)"
                  % (name, arg, v, kind, ": " + msg if msg else ""))
        else:
            check(kind == "value" and msg.startswith(arg + ":"),
                  "%s(%s=%d): ValueError naming %s (%s%s)"
                  % (name, arg, v, arg, kind, ": " + msg if msg else ""))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--dir", help="directory for the state and memory files "
                    "(default: a new one under /dev/shm)")
    a = ap.parse_args()
    d = a.dir or tempfile.mkdtemp(prefix="nfabric-argcheck-", dir=hostrun.shm_base())
    os.makedirs(d, exist_ok=True)
    state, mem = os.path.join(d, "state"), os.path.join(d, "mem")
    for f in (state, mem):
        if os.path.exists(f):
            os.unlink(f)
    try:
        run(state, mem)
    finally:
        if not a.dir:
            shutil.rmtree(d, ignore_errors=True)
    print("1..%d" % _n)
    print("summary: argcheck %d passed, %d failed" % (_n - _failed, _failed))
    return 1 if _failed else 0


def run(state, mem):
    # Module functions.
    boundary("counter_bytes", "width", U32, lambda v: counter_bytes("gbinary", v, 64))
    boundary("counter_bytes", "size", U64, lambda v: counter_bytes("fp32", 8, v))
    kind, msg = outcome(lambda: counter_bytes("gternary", 16, 2**62))
    check(kind == "value" and msg.startswith("size:"),
          "counter_bytes(gternary, 16, 2**62): the C product would wrap: %s (%s)"
          % (kind, msg))
    check(path_number("gbinary") == 1, "path_number('gbinary') is 1")

    # Device.host: a bad head never attaches.
    boundary("Device.host", "head", U32,
             lambda v: Device.host(state + ".h", mem + ".h", MEM, v, 2).close())
    boundary("Device.host", "heads", U32,
             lambda v: Device.host(state + ".n", mem + ".n", MEM, 0, v).close())
    boundary("Device.host", "mem_size", U64,
             lambda v: Device.host(state + ".m", mem + ".m", v, 0, 1).close())
    for f in (".h", ".n", ".m"):
        for p in (state + f, mem + f):
            if os.path.exists(p):
                os.unlink(p)

    dev = Device.host(state, mem, MEM, 0, 1)
    gb = dict(base=0x10000, size=4096, path="gbinary", counters=0x100000, width=8)
    boundary("set_window", "i", U32, lambda v: (dev.set_window(v, **gb), dev.disable(v)))
    for arg in ("base", "size", "counters"):
        def set_arg(v, arg=arg):
            kw = dict(gb)
            kw[arg] = v
            dev.set_window(0, **kw)
            dev.disable(0)
        boundary("set_window", arg, U64, set_arg)
    for arg, path in (("width", "gbinary"), ("tie", "gbinary"), ("threshold", "gternary")):
        def set_arg(v, arg=arg, path=path):
            kw = dict(gb, path=path, tie=0, threshold=1 if path == "gternary" else 0)
            kw[arg] = v
            dev.set_window(0, **kw)
            dev.disable(0)
        boundary("set_window", arg, U32, set_arg)
    check(dev.enabled_mask() == 0, "no window left enabled by the set_window checks "
          "(mask 0x%x)" % dev.enabled_mask())

    dev.set_window(0, **gb)
    seq = dev.round(0).seq
    boundary("disable", "i", U32, lambda v: dev.disable(v) if v != 0 else None)
    boundary("clear", "i", U32, lambda v: dev.clear(v))
    boundary("round", "i", U32, lambda v: dev.round(v))
    boundary("complete", "i", U32, lambda v: dev.complete(v, seq + 1))
    boundary("complete", "seq", U32, lambda v: dev.complete(0, v))
    # seq + 1: the wait ends at once (ESTALE), whatever the timeout.
    boundary("wait", "i", U32, lambda v: dev.wait(v, seq + 1, 10))
    boundary("wait", "seq", U32, lambda v: dev.wait(0, v, 10))
    boundary("wait", "timeout_ms", U32, lambda v: dev.wait(0, dev.round(0).seq + 1, v))
    boundary("wait_next", "i", U32, lambda v: dev.wait_next(v, seq + 1, 10))
    boundary("wait_next", "seq", U32, lambda v: dev.wait_next(0, v, 10))
    boundary("wait_next", "timeout_ms", U32,
             lambda v: dev.wait_next(0, dev.round(0).seq + 1, v))
    boundary("head_contrib", "head", U32, lambda v: dev.head_contrib(v, 0))
    boundary("head_contrib", "i", U32, lambda v: dev.head_contrib(0, v))
    boundary("write", "dpa", U64, lambda v: dev.write(v, b"\0" * 8))
    boundary("read", "dpa", U64, lambda v: dev.read(v, 8))
    boundary("read", "nbytes", U64, lambda v: dev.read(0, v))

    # The cases of issue 22: nothing wraps onto window 0, nothing changes.
    dev.disable(0)
    kind, msg = outcome(lambda: dev.set_window(2**32, **gb))
    check(kind == "value" and dev.enabled_mask() == 0,
          "set_window(2**32, ...) refused (%s), window 0 not programmed (mask 0x%x)"
          % (msg, dev.enabled_mask()))
    dev.set_window(0, **gb)
    kind, msg = outcome(lambda: dev.disable(2**32))
    check(kind == "value" and dev.enabled_mask() == 1,
          "disable(2**32) refused (%s), window 0 still enabled" % msg)
    dev.disable(0)
    kind, msg = outcome(lambda: dev.set_window(0, **dict(gb, base=2**64 + 0x10000)))
    check(kind == "value" and "base" in msg and dev.enabled_mask() == 0,
          "base 2**64 + 0x10000 refused, not 0x10000 (%s)" % msg)
    kind, msg = outcome(lambda: dev.set_window(0, **dict(gb, width=2**32 + 8)))
    check(kind == "value" and "width" in msg and dev.enabled_mask() == 0,
          "width 2**32 + 8 refused, not 8 (%s)" % msg)
    dev.set_window(0, **gb)
    kind, msg = outcome(lambda: dev.wait(0, dev.round(0).seq, timeout_ms=2**32))
    check(kind == "value" and "timeout_ms" in msg,
          "wait(timeout_ms=2**32) refused, no wait of 0 ms (%s)" % msg)
    dev.disable(0)
    dev.close()
    kind, msg = outcome(lambda: Device.host(state, mem, MEM, 2**32 + 1, 2))
    check(kind == "value" and "head" in msg,
          "Device.host(head=2**32 + 1) refused, head 1 not attached (%s)" % msg)


if __name__ == "__main__":
    sys.exit(main())
