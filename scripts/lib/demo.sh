# shellcheck shell=bash
# SPDX-License-Identifier: GPL-2.0-or-later
# `scripts/nfabric demo` and the `guest` test suite (scripts/nfmachine/demo.py):
# boot the guest and run the guest programs' functional checks
# (tests/guest/) against the device.  docs/guest.md describes the checks.
# Here only what they need built first: QEMU with the device, the image.

# The guest suite's boots; the last one counts with perf (--perf).
# (perf is there for the 6.12 kernel line only: docs/versions.md).
nf_suite_guest() {
    local perf=""
    nf_image_main >&2
    if [ "$NF_KERNEL_LINE" = 6.12 ]; then
        perf=$(nf_perf_initrd) || return
    fi
    NF_GUEST_INITRD_PERF=$perf nf_machine guest-suite
}

nf_demo_main() {
    nf_machine demo check "$@" || return $?
    case " $* " in *" -h "*|*" --help "*) return 0 ;; esac
    # QEMU with the device, firmware and the host programs (idempotent).
    nf_setup_main --quiet
    nf_image_main >&2
    nf_machine_built demo run "$@" || return $?
}
