# SPDX-License-Identifier: GPL-2.0-or-later
"""The host check of `scripts/nfabric test` (suite `host`, docs/host.md):
the machine as before the run.

`test` takes a snapshot when it starts (host-snapshot FILE) and, after the
last suite, checks (host-check BEFORE): no process of this run is left
running (one failure each, then they are stopped), then the machine is as
BEFORE was (nfhost.compare: device nodes, /dev/shm and /tmp, this
checkout's processes, mounts, network namespaces, apt sources).  TAP on
stdout, numbered as the shell's host check numbered it: the processes'
lines from 1, then the comparison's from 1.
"""

import os
import shutil
from typing import Callable, List, Sequence

from . import nfhost


def snapshot(path: str, checkout: str, run_id: str, tmp_base: str) -> None:
    """The machine's state as the check compares it, into PATH."""
    lines = nfhost.snapshot_lines(checkout, run_id, tmp_base)
    with open(path, "w", encoding="utf-8") as f:
        f.write("".join(line + "\n" for line in lines))


def clear_run_dirs(dirs: Sequence[str]) -> None:
    """What the suites kept in the run's own directories until its end
    (clusters' memory files, state files) goes now, as at any run's end:
    all but `owner`, the check's own host-* files and `test-counts`
    (what `test` counts after the check)."""
    for d in dirs:
        try:
            names = os.listdir(d)
        except FileNotFoundError:
            continue
        for n in names:
            if n in ("owner", "test-counts") or n.startswith("host-"):
                continue
            path = os.path.join(d, n)
            if os.path.isdir(path) and not os.path.islink(path):
                shutil.rmtree(path, ignore_errors=True)
            else:
                try:
                    os.unlink(path)
                except FileNotFoundError:
                    pass


def process_lines(procs: List[str]) -> List[str]:
    """The TAP of the first check: none of this run's processes left."""
    if not procs:
        return ["ok 1 - no process of this run is left running"]
    return [f"not ok {i} - a process of this run is left running: {line}"
            for i, line in enumerate(procs, 1)]


def check(before: str, after: str, run_id: str, run_dirs: Sequence[str], checkout: str,
          tmp_base: str, procs: Callable = nfhost.procs,
          take: Callable = snapshot, out=print) -> int:
    """The host check: TAP through OUT; 0 if every line is ok."""
    left = procs("NF_RUN_ID=" + run_id)
    for line in process_lines(left):
        out(line)
    if left:
        procs("NF_RUN_ID=" + run_id, kill=True)
    clear_run_dirs(run_dirs)
    take(after, checkout, run_id, tmp_base)
    lines, bad = nfhost.compare(nfhost.load(before), nfhost.load(after))
    for line in lines:
        out(line)
    return 1 if bad or left else 0


def env(name: str) -> str:
    value = os.environ.get(name)
    if not value:
        raise RuntimeError(f"{name} is not set (run this through scripts/nfabric)")
    return value


def main(name: str, argv: List[str]) -> int:
    """host-snapshot FILE | host-check BEFORE, in a run of scripts/nfabric."""
    checkout, run_id = env("NF_CHECKOUT_ID"), env("NF_RUN_ID")
    tmp_base = os.environ.get("NF_TMP_BASE") or "/tmp"
    if name == "host-snapshot":
        snapshot(argv[0], checkout, run_id, tmp_base)
        return 0
    run_tmp = env("NF_RUN_TMP")
    return check(argv[0], os.path.join(run_tmp, "host-after"), run_id,
                 (env("NF_RUN_SHM"), run_tmp), checkout, tmp_base)
