# SPDX-License-Identifier: GPL-2.0-or-later
"""Suites `lint` and `unit` (host only, no VM).

lint: shellcheck over every tracked shell file of the project
(scripts/nfabric and its libraries, .ci/run, tests, the guest's init),
found by name or by its first line, so that a new script cannot escape
it; one TAP line per file.

unit: the host-side unit tests built by the root meson.build (each TAP
program run directly, so that every check is counted), the timing tool's
test, and every tests/machine/test_*.py (the machine descriptions and
suites of scripts/nfmachine, on stand-ins).
"""

import glob
import os
import re
import subprocess
import sys
from typing import List

from .tap import Tap

SHEBANG = re.compile(r"#!.*(/sh|/bash|env bash|env sh)$")
MIN_FILES = 25          # fewer means the search itself is broken


def shell_files(root: str) -> List[str]:
    """Every tracked shell file: *.sh, or a file without a dot in its
    name whose first line runs sh or bash."""
    names = subprocess.run(["git", "-C", root, "ls-files", "-z"], capture_output=True,
                           check=True).stdout.decode().split("\0")
    found = []
    for f in names:
        base = os.path.basename(f)
        if not f:
            continue
        if base.endswith(".sh"):
            found.append(f)
            continue
        if "." in base[1:]:
            continue
        path = os.path.join(root, f)
        if not os.path.isfile(path):
            continue
        with open(path, "rb") as fh:
            first = fh.readline().decode(errors="replace").rstrip("\n")
        if SHEBANG.match(first):
            found.append(f)
    return found


def lint(root: str, out=print) -> int:
    version = subprocess.run(["shellcheck", "--version"], capture_output=True, text=True,
                             check=False).stdout
    m = re.search(r"^version: (.*)$", version, re.M)
    files = shell_files(root)
    tap = Tap(out)
    tap.note(f"shellcheck {m.group(1) if m else '?'}, {len(files)} files")
    if len(files) < MIN_FILES:
        tap.ok(False, f"only {len(files)} shell files found (git ls-files in {root})",
               numbered=False)
        return 1
    for f in files:
        # -x follows `. FILE` (scripts/nfabric reads every library); each
        # file's own directives say where its sources are.
        p = subprocess.run(["shellcheck", "-x", "-f", "gcc", f], cwd=root,
                           capture_output=True, text=True, check=False)
        text = p.stdout + p.stderr
        findings = len(re.findall(r": (error|warning|note|style):", text))
        tap.ok(p.returncode == 0, f"shellcheck {f}" if p.returncode == 0
               else f"shellcheck {f}: {findings} findings", text)
    return tap.status()


def unit(root: str, host_build: str, qemu_src: str) -> int:
    """Every unit program; their TAP goes straight to stdout."""
    rc = 0
    progs = sorted(p for p in glob.glob(os.path.join(host_build, "tests", "unit", "test*"))
                   if os.path.isfile(p) and os.access(p, os.X_OK))
    for p in progs:
        print(f"# {p}", flush=True)
        rc |= subprocess.run([p], check=False).returncode != 0
    print("# tests/unit/test_timing_tool.sh", flush=True)
    rc |= subprocess.run(["sh", os.path.join(root, "tests", "unit", "test_timing_tool.sh"),
                          os.path.join(host_build, "bench", "nfabric-timing")],
                         check=False).returncode != 0
    env = dict(os.environ, PYTHONPATH=os.path.join(root, "scripts") + ":" +
               os.path.join(qemu_src, "python"))
    for t in sorted(glob.glob(os.path.join(root, "tests", "machine", "test_*.py"))):
        print(f"# tests/machine/{os.path.basename(t)}", flush=True)
        rc |= subprocess.run(["/usr/bin/python3", t], env=env, check=False).returncode != 0
    sys.stdout.flush()
    return 1 if rc else 0
