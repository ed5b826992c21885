# SPDX-License-Identifier: GPL-2.0-or-later
"""Suite `concurrency` (docs/guest.md): one guest with 4 vCPUs runs the
low-bit checks with 4 worker processes writing the same windows (no
contribution may be lost).  The guest says how many vCPUs its kernel
brought up; a boot in which it could not bring all 4 up (TCG on a loaded
host: an application processor that does not answer in time is refused
by the kernel, not by the device) tests less than it claims, so it is
booted once more, visibly, and the first console kept.
"""

import re
import shutil
from typing import Callable, List, Optional

from .hosts import read_console as read
from .tap import Tap

# The guest's command: its vCPU count first (with its kernel's words about
# bringing them up if not 4), then the checks.
CPUS = ('n=$(grep -c ^processor /proc/cpuinfo); echo "NFABRIC-CPUS=$n"; [ "$n" = 4 ] || '
        'dmesg | grep -iE "smpboot|cpu ?#?[0-9]|alive|offline" | sed "s/^/# guest kernel: /"')
CHECKS = "nfabric-test --only gbinary,gternary,mixed,stats,toggle"
VCPUS = 4

# boot(vm_argv, log): the guest command's status (its console in LOG).
Boot = Callable[[List[str], str], int]


def cpus_reported(console: str) -> Optional[int]:
    """The last vCPU count the guest printed (None if it printed none)."""
    found = re.findall(r"NFABRIC-CPUS=([0-9]+)", console)
    return int(found[-1]) if found else None


def kernel_lines(console: str) -> List[str]:
    return [l for l in console.splitlines() if l.startswith("# guest kernel: ")]


def tap_lines(console: str) -> List[str]:
    """The guest's TAP lines and comments, its kernel's words left out."""
    return [l for l in console.splitlines()
            if re.match(r"(ok|not ok|#|1\.\.)", l) and not l.startswith("# guest kernel: ")]


def suite(log: str, boot: Boot, out=print) -> int:
    """Boot (twice at most), then the verdicts; 0 if all passed."""
    rc, cpus = 0, None
    tap = Tap(out, numbered=False)      # "ok - ...", as the guest's lines
    for attempt in (1, 2):
        rc = boot(["--cpus", str(VCPUS), "--run", f"{CPUS}; {CHECKS}"], log)
        console = read(log)
        cpus = cpus_reported(console)
        if cpus == VCPUS or attempt == 2:
            break
        tap.note(f"the guest came up on {cpus if cpus is not None else '?'} of {VCPUS} vCPUs"
                 " (its kernel's words below); booting it once more")
        tap.lines(kernel_lines(console))
        shutil.copyfile(log, log + ".attempt1")
    console = read(log)
    if not tap.ok(cpus == VCPUS, f"the guest runs on {VCPUS} vCPUs" if cpus == VCPUS
                  else f"the guest runs on {VCPUS} vCPUs (it reported"
                       f" {cpus if cpus is not None else 'nothing'}; console: {log})"):
        rc = rc or 1
        tap.lines(kernel_lines(console))
    tap.lines(tap_lines(console))
    if not re.search(r"^NFABRIC-READY", console, re.M):
        tap.ok(False, "the guest did not get ready")
        rc = rc or 1
    return rc
