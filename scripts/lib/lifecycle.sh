# shellcheck shell=bash
# SPDX-License-Identifier: GPL-2.0-or-later
# The `lifecycle` suite: a guest's life with the device beyond one boot
# (issue 13): live migration mid-round, warm resets, the same on stock
# cxl-type3.  The guests, their QMP and the checks are Python:
# scripts/nfmachine/lifecycle.py (its docstring says what is checked);
# consoles and QEMU output in build/lifecycle/.

nf_suite_lifecycle() {
    nf_image_main >&2 || return
    nf_machine lifecycle-suite
}
