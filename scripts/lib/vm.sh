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
        NF_GUEST_INITRD_PERF="${NF_GUEST_INITRD_PERF:-}" NF_KERNEL_LINE="$NF_KERNEL_LINE" \
        NF_HOST_BUILD="$NF_HOST_BUILD" NF_CHECKOUT_ID="$NF_CHECKOUT_ID" \
        PYTHONPATH="$NF_ROOT/scripts${PYTHONPATH:+:$PYTHONPATH}" \
        /usr/bin/python3 -m nfmachine "$@"
}

# nf_machine_built COMMAND ARGS...: nf_machine COMMAND ARGS once what it
# needs is built (`nf_machine needs`: QEMU with the device, the guest image,
# the RTL library, its path in NF_RTL_LIB, the initramfs with perf, its
# path in NF_GUEST_INITRD_PERF): Python never calls back here.
nf_machine_built() {
    local need
    need=" $(nf_machine needs "$@" | tr '\n' ' ')" || need=""
    case $need in *" qemu "*) nf_setup_main --quiet >&2 ;; esac
    case $need in *" image "*) nf_image_main >&2 ;; esac
    case $need in *" rtl "*) NF_RTL_LIB=$(nf_rtl_lib | tail -n 1) || return ;; esac
    case $need in *" perf "*) NF_GUEST_INITRD_PERF=$(nf_perf_initrd) || return ;; esac
    NF_RTL_LIB=${NF_RTL_LIB:-} nf_machine "$@" || return $?
}

nf_vm_main() {
    nf_machine_built vm "$@" || return $?
}
