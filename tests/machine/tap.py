# SPDX-License-Identifier: GPL-2.0-or-later
"""TAP for the Python tests of tests/machine (as tests/tap.h for C)."""

_count = {"n": 0, "failed": 0}


def ok(cond, name, detail=""):
    """One check: "ok N - NAME", or "not ok N - NAME" and DETAIL as comments."""
    _count["n"] += 1
    if not cond:
        _count["failed"] += 1
    print(f"{'ok' if cond else 'not ok'} {_count['n']} - {name}")
    if not cond and detail:
        for line in str(detail).splitlines():
            print(f"#   {line}")


def done():
    """The plan; the exit status (1 if a check failed)."""
    print(f"1..{_count['n']}")
    return 1 if _count["failed"] else 0
