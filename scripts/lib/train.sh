# shellcheck shell=bash
# SPDX-License-Identifier: GPL-2.0-or-later
# nfabric-train (guest/train/, docs/training.md):
#   scripts/nfabric bench train   the host study: every mode on the easy and
#                                 the hard configuration, key=value lines,
#                                 plots in build/bench/train/ and docs/img/
#   suite `train`                 host determinism and traffic checks, and a
#                                 guest run through the device whose
#                                 aggregated-gradient hashes must equal the
#                                 host engine run's

NF_TRAIN_BIN=$NF_HOST_BUILD/guest/train/nfabric-train
NF_TRAIN_STATIC=$NF_HOST_BUILD/guest/train/static/nfabric-train
NF_TRAIN_OUT=$NF_BUILD/bench/train

# The data set, the host build, and a build that embeds the guest subset
# (guest/train/meson.build looks for the data set when it is configured).
nf_train_prepare() {
    nf_need dataset-fashion-mnist
    nf_host_build
    if [ ! -x "$NF_TRAIN_BIN" ] || ! "$NF_TRAIN_BIN" --has-embedded >/dev/null 2>&1; then
        nf_log "train: reconfiguring $NF_HOST_BUILD to embed the Fashion-MNIST subset"
        meson setup --reconfigure "$NF_HOST_BUILD" "$NF_ROOT" >/dev/null ||
            nf_die "train: meson setup --reconfigure failed"
        nf_host_build
    fi
    [ -x "$NF_TRAIN_BIN" ] || nf_die "train: $NF_TRAIN_BIN was not built"
}

# `scripts/nfabric bench train` (scripts/nfmachine/train.py): the options
# first, then what the study needs built, then the runs.
nf_bench_train() {
    nf_train_machine bench check "$@" || return $?
    case " $* " in *" -h "*|*" --help "*) return 0 ;; esac
    nf_train_prepare
    case " $* " in *" --no-plots "*) ;; *) nf_need gnuplot-nox ;; esac
    nf_train_machine bench run "$@"
}

# Suite `train` (scripts/nfmachine/train.py): host checks, then the guest's.
nf_suite_train() {
    nf_train_prepare
    nf_image_main >&2 || NF_TRAIN_IMAGE_FAILED=1
    NF_TRAIN_IMAGE_FAILED=${NF_TRAIN_IMAGE_FAILED:-} nf_train_machine suite
}

nf_train_machine() {
    NF_TRAIN_BIN=$NF_TRAIN_BIN NF_TRAIN_STATIC=$NF_TRAIN_STATIC NF_TRAIN_OUT=$NF_TRAIN_OUT \
        NF_GUEST=$NF_GUEST NF_DOCS_IMG=$NF_ROOT/docs/img nf_machine train "$@"
}
