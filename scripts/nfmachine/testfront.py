# SPDX-License-Identifier: GPL-2.0-or-later
"""The parts of `scripts/nfabric test` and `bench` that read tables and
count (scripts/lib/test.sh keeps the set-up, meson test and the host
check, which run in its shell):

  meson-table FILE VAR        the rows of the table VAR of a meson.build
                              (a list of lists of strings and booleans),
                              one line each, fields separated by spaces
                              (booleans 1/0, the last field the rest of the
                              line): listing needs no configured build
  test-args [ARGS...]         `test`'s options: its help or list (status 0,
                              nothing else to do: status 3), a refusal
                              (status 2), or the suites to run, one per
                              line, the first line "setup" or "no-setup"
  test-total LOGDIR COUNTS SUITE...
                              the run's end: a suite meson did not run
                              counts as a failure, the boot hangs, then
                              "N passed, N failed" (status 1 if any failed)
"""

import ast
import os
import re
import sys
from typing import List, Optional, Tuple

from .options import Parser, UsageError

HELP_DONE = 3           # test-args: help or list printed, nothing to run


def meson_table(path: str, var: str) -> List[List[str]]:
    with open(path, encoding="utf-8") as f:
        text = f.read()
    m = re.search(r"^" + re.escape(var) + r" = (\[.*?^\])", text, re.S | re.M)
    if not m:
        raise ValueError(f"{path}: no {var} table")
    body = re.sub(r"#[^\n]*", "", m.group(1))
    rows = ast.literal_eval(re.sub(r"\b(true|false)\b", lambda b: b.group(1).title(), body))
    return [[str(int(f)) if isinstance(f, bool) else f for f in row] for row in rows]


def suites(root: str) -> List[Tuple[str, bool, str]]:
    """(name, needs the set-up, description) in the order they run."""
    return [(r[0], r[1] == "1", r[2])
            for r in meson_table(os.path.join(root, "tests", "meson.build"), "nf_suites")]


def usage(root: str) -> str:
    lines = ["usage: scripts/nfabric test [--list] [SUITE...]", "",
             "Runs the named suites (default: all; tests/meson.build registers them,",
             "meson test runs them), then the host check (the machine as before the",
             "run), and ends with 'N passed, N failed'.",
             "Logs: build/test-logs/SUITE.log (NF_TEST_LOGDIR=DIR: DIR/SUITE.log)", "",
             "Suites:"]
    lines += [f"  {name:<8} {desc}" for name, _, desc in suites(root)]
    return "\n".join(lines) + "\n"


def test_args(root: str, argv: List[str], out=sys.stdout, err=sys.stderr) -> int:
    table = suites(root)
    known = {name: setup for name, setup, _ in table}
    parser = Parser("nfabric test", word="option", prefix="nfabric test: ").options(
        (), ("--list",))
    parser.add_argument("suites", nargs="*")
    try:
        ns = parser.parse(argv)
    except UsageError as exc:
        err.write(f"{exc}\n" + usage(root))
        return 2
    if ns is None:
        out.write(usage(root))
        return HELP_DONE
    if ns.list:
        out.write("".join(name + "\n" for name, _, _ in table))
        return HELP_DONE
    for a in ns.suites:
        if a not in known:
            err.write(f'nfabric test: unknown suite "{a}" (have:'
                      f' {" ".join(name for name, _, _ in table)} )\n')
            return 2
    chosen = ns.suites or [name for name, _, _ in table]
    out.write(("setup" if any(known[s] for s in chosen) else "no-setup") + "\n")
    out.write("".join(s + "\n" for s in chosen))
    return 0


def read_counts(path: str) -> dict:
    counts = {}
    try:
        with open(path, encoding="utf-8") as f:
            for line in f:
                w = line.split()
                if len(w) == 3 and w[1].isdigit() and w[2].isdigit():
                    counts.setdefault(w[0], (int(w[1]), int(w[2])))
    except FileNotFoundError:
        pass
    return counts


def test_total(logdir: str, counts_path: str, chosen: List[str], out=print) -> int:
    """The run's totals (the host check's line included, if it ran)."""
    counts = read_counts(counts_path)
    passed = failed = 0
    for s in chosen:
        if s in counts:
            passed += counts[s][0]
            failed += counts[s][1]
        else:
            out(f"not ok - suite {s}: meson test did not run it")
            failed += 1
    if "host" in counts and "host" not in chosen:
        passed += counts["host"][0]
        failed += counts["host"][1]
    hangs: Optional[str] = None
    try:
        with open(os.path.join(logdir, "boot-hangs.log"), encoding="utf-8") as f:
            hangs = f.read()
    except FileNotFoundError:
        pass
    if hangs:
        out("boot hangs (a guest printed nothing, killed and started again):")
        for line in hangs.splitlines():
            out("  " + line)
    out(f"{passed} passed, {failed} failed")
    return 1 if failed else 0


def main(name: str, argv: List[str], root: str) -> int:
    if name == "meson-table":
        if len(argv) != 2:
            raise ValueError("meson-table takes FILE VAR")
        for row in meson_table(argv[0], argv[1]):
            print(" ".join(row))
        return 0
    if name == "test-args":
        return test_args(root, argv)
    if len(argv) < 2:
        raise ValueError("test-total takes LOGDIR COUNTS SUITE...")
    return test_total(argv[0], argv[1], argv[2:])
