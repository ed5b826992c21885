# shellcheck shell=bash
# SPDX-License-Identifier: GPL-2.0-or-later
# The machines: `scripts/nfabric vm` and every QMP call of the suites go to
# scripts/nfmachine (Python, on QEMU's own python/qemu: qemu.machine
# launches, watches and reaps each VM; qemu.qmp talks to its monitor).
# This file only hands it the build's paths.  docs/guest.md describes the
# options and the example of scripting it from Python.

# nf_machine COMMAND ARGS...: python3 -m nfmachine (`nf_machine --help`).
nf_machine() {
    env NF_ROOT="$NF_ROOT" NF_BUILD="$NF_BUILD" NF_QEMU_BIN="$NF_QEMU_BIN" \
        NF_QEMU_SRC="$NF_QEMU_SRC" NF_GUEST_KERNEL="$NF_GUEST_KERNEL" \
        NF_GUEST_INITRD="$NF_GUEST_INITRD" NF_FIRMWARE="${NF_FIRMWARE[*]}" \
        NF_HOST_BUILD="$NF_HOST_BUILD" NF_CHECKOUT_ID="$NF_CHECKOUT_ID" \
        PYTHONPATH="$NF_ROOT/scripts${PYTHONPATH:+:$PYTHONPATH}" \
        /usr/bin/python3 -m nfmachine "$@"
}

nf_vm_main() {
    local rc=0
    nf_machine vm "$@" || rc=$?
    return "$rc"
}

# nf_qmp SOCKET NAME [ARGS-JSON]: one QMP command on a guest's monitor
# socket; prints its return value (JSON), or says QEMU's error (status 1).
nf_qmp() {
    nf_machine qmp "$@"
}
