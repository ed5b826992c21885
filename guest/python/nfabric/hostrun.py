# SPDX-License-Identifier: GPL-2.0-or-later
"""What a run of host processes makes on the machine, and takes back.

Host-side examples (``--spawn``) and self-tests put their shared device's
state and memory files in a directory of their own under /dev/shm (or under
``NF_RUN_SHM`` when scripts/nfabric started them: the run's directory), and
their process group's rendezvous on a port the kernel chose, so that two
runs on one machine never meet; the directory goes when the run ends
(docs/host.md).
"""

import contextlib
import os
import shutil
import socket
import tempfile


def free_port(addr="127.0.0.1"):
    """A TCP port on ADDR that nothing listens on now.  Between this call
    and the process group's listen another program could take it: the
    rendezvous then fails with EADDRINUSE, it never joins a stranger."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind((addr, 0))
        return s.getsockname()[1]


def shm_base():
    """Where shared-memory files go: the run's directory, else /dev/shm
    (else the temporary directory, on a machine without /dev/shm)."""
    run = os.environ.get("NF_RUN_SHM")
    if run and os.path.isdir(run):
        return run
    if os.path.isdir("/dev/shm") and os.access("/dev/shm", os.W_OK):
        return "/dev/shm"
    return tempfile.gettempdir()


@contextlib.contextmanager
def scratch(prefix):
    """A new directory nfabric-PREFIX-XXXXXX in shm_base(), removed on exit."""
    d = tempfile.mkdtemp(prefix="nfabric-%s-" % prefix, dir=shm_base())
    try:
        yield d
    finally:
        shutil.rmtree(d, ignore_errors=True)
