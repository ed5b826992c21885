# SPDX-License-Identifier: GPL-2.0-or-later
"""QMP to a running guest's monitor socket, through QEMU's qemu.qmp.

The clusters' and the lifecycle suite's hosts listen on a QMP socket of
their own (`-qmp unix:PATH,server=on,wait=off`); these are the calls the
suites make on them.  Each connects, negotiates and closes; a command
QEMU answers with an error raises QMPError with QEMU's description.
"""

import json
import re
import time
from typing import Any, Dict, Optional

from qemu.qmp import ExecuteError
from qemu.qmp.legacy import QEMUMonitorProtocol

TIMEOUT_S = 60.0


class QMPError(RuntimeError):
    pass


class Monitor:
    """One connection to a monitor socket."""

    def __init__(self, path: str, timeout: float = TIMEOUT_S):
        self.path = path
        self.conn = QEMUMonitorProtocol(path)
        self.conn.settimeout(timeout)
        self.conn.connect()

    def __enter__(self) -> "Monitor":
        return self

    def __exit__(self, *exc) -> None:
        try:
            self.conn.close()
        except (EOFError, ConnectionError):
            pass            # QEMU closed it first (after 'quit')

    def call(self, name: str, args: Optional[Dict[str, Any]] = None) -> Any:
        try:
            return self.conn.cmd(name, **(args or {}))
        except ExecuteError as exc:
            raise QMPError(f"QMP {name}: {exc.error.error.desc}") from None

    def hmp(self, line: str) -> str:
        return self.call("human-monitor-command", {"command-line": line})


def command(path: str, name: str, args_json: Optional[str]) -> str:
    """NAME with ARGS (JSON) on PATH's monitor; its return value as JSON."""
    args = json.loads(args_json) if args_json else None
    with Monitor(path) as mon:
        return json.dumps(mon.call(name, args), sort_keys=True)


def worst_latency_ms(path: str, count: int, gap_s: float) -> int:
    """The slowest of COUNT query-status round trips, GAP_S apart (the
    connection and its negotiation not included)."""
    worst = 0.0
    with Monitor(path, timeout=30) as mon:
        for k in range(count):
            if k:
                time.sleep(gap_s)
            t = time.monotonic()
            mon.call("query-status")
            worst = max(worst, time.monotonic() - t)
    return int(worst * 1000)


def cachemem_regs(path: str, region: str) -> str:
    """The CXL.cache/mem registers (4 KiB at +0x1000 of the component
    register block) of the MemoryRegion REGION in the system address
    space, one 4-byte `xp` per register: QEMU's cache/mem registers answer
    0 to the 8-byte accesses a longer `xp` would make."""
    with Monitor(path) as mon:
        m = re.search(r"^\s*([0-9a-f]+)-[0-9a-f]+ \(prio -?\d+, i/o\): "
                      + re.escape(region) + r"\r?$", mon.hmp("info mtree"), re.M)
        if not m:
            raise QMPError("no region " + region)
        base = int(m.group(1), 16) + 0x1000
        return "".join(mon.hmp("xp /1wx 0x%x" % (base + off))
                       for off in range(0, 0x1000, 4))
