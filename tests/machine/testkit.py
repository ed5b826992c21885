# SPDX-License-Identifier: GPL-2.0-or-later
"""What the tests of tests/machine share: a stand-in's executable script,
whether a process is a stand-in QEMU, the error an option parser raises,
and a test program's checks run in order."""

import os
import stat

from nfmachine.tap import done


def script(path, body):
    """An executable /bin/sh script at PATH (its folders made)."""
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w", encoding="utf-8") as f:
        f.write("#!/bin/sh\n" + body)
    os.chmod(path, os.stat(path).st_mode | stat.S_IXUSR)
    return path


def is_fake(pid, marker):
    """Is process PID a stand-in (MARKER in its command line)?"""
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            return marker.encode() in f.read()
    except OSError:
        return False


def refusal(parse, error, argv):
    """The ERROR that PARSE(ARGV) raises, or None if it accepts ARGV."""
    try:
        parse(argv)
    except error as e:
        return e
    return None


def run(*checks):
    """Each check in turn, then the plan; the exit status."""
    for check in checks:
        check()
    return done()
