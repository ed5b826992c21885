# shellcheck shell=bash
# SPDX-License-Identifier: GPL-2.0-or-later
# `scripts/nfabric bench guest` (scripts/nfmachine/guestbench.py): guest
# user-space throughput through /dev/daxX.Y on a stock cxl-type3 and on the
# device's paths, with and without its direct map, and its memory as System
# RAM.  Here only the options' check and what the boots need built.
nf_bench_guest() {
    nf_machine bench-guest check "$@" || return $?
    case " $* " in *" -h "*|*" --help "*) return 0 ;; esac
    nf_setup_main --quiet
    nf_image_main >&2
    nf_machine bench-guest run "$@"
}
