# SPDX-License-Identifier: GPL-2.0-or-later
"""Two hosts sharing one NEURON-Fabric device, started from Python.

The example of docs/guest.md "Scripting your own runs": two guests, each
a head of one shared device (its memory and state in files on /dev/shm),
run `nfabric-multihost agg` (a G-Binary round every host contributes to,
checked against the sum) and report.  From the checkout, once
`scripts/nfabric setup` and `scripts/nfabric image` have run:

    PYTHONPATH=scripts:build/qemu-src/python \\
        python3 -m nfmachine.example_cluster [--hosts N] [--cmd CMD]

It exits with 0 if every host's command did.
"""

import argparse
import os
import shutil
import sys
import tempfile

from .topology import Topology
from .vm import boot_all


def main() -> int:
    root = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
    build = os.environ.get("NF_BUILD", os.path.join(root, "build"))
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--hosts", type=int, default=2, choices=range(1, 17), metavar="N")
    ap.add_argument("--cmd", default="nfabric-multihost agg")
    ap.add_argument("--qemu", default=os.path.join(build, "qemu-build", "qemu-system-x86_64"))
    ap.add_argument("--guest", default=os.path.join(build, "guest"))
    ap.add_argument("--logs", default=None, help="console logs here (default: kept only on failure)")
    a = ap.parse_args()

    shared = tempfile.mkdtemp(prefix="nfabric-example-", dir="/dev/shm")
    logs = a.logs or tempfile.mkdtemp(prefix="nfabric-example-logs-")
    try:
        mem = os.path.join(shared, "mem")
        with open(mem, "wb") as f:
            f.truncate(256 << 20)                 # the device's memory
        guests = []
        for r in range(a.hosts):
            topo = Topology(
                cpus=1, mem_mib=1024, mem_path=mem,
                props=f"shared-state={shared}/state,head={r},heads={a.hosts}",
                run=f"export NFABRIC_RANK={r} NFABRIC_HOSTS={a.hosts}; {a.cmd}")
            args = topo.qemu_args(["-L", "/usr/share/seabios", "-L", "/usr/share/qemu"],
                                  os.path.join(a.guest, "vmlinuz"),
                                  os.path.join(a.guest, "initramfs.cpio.gz"))
            guests.append((args, os.path.join(logs, f"host{r}.log")))
        outcomes = boot_all(a.qemu, guests, tempfile.gettempdir(), timeout=900)
        for r, out in enumerate(outcomes):
            print(f"host {r}: status {out.status}, ready after {out.ready_s or 0:.1f} s")
        ok = all(out.status == 0 for out in outcomes)
        if ok and not a.logs:
            shutil.rmtree(logs)
        else:
            print(f"consoles: {logs}")
        return 0 if ok else 1
    finally:
        shutil.rmtree(shared)


if __name__ == "__main__":
    sys.exit(main())
