# shellcheck shell=bash disable=SC2034  # this file defines the globals the other libraries use
# SPDX-License-Identifier: GPL-2.0-or-later
# Shared helpers and paths for scripts/nfabric and its libraries.

NF_ROOT=${NF_ROOT:-$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)}
# The build directory: build/ in the checkout.  QEMU's configure refuses a
# directory whose path has a space or a colon, and kbuild cannot build a
# module there either: for such a checkout the build goes to a directory of
# its own under /var/tmp (named after the checkout's path), and build/ in
# the checkout is a symbolic link to it.
if [ -z "${NF_BUILD:-}" ]; then
    case $NF_ROOT in
    *[[:space:]:]*)
        NF_BUILD=/var/tmp/nfabric-build-$(printf '%s' "$NF_ROOT" | md5sum | cut -c1-12)
        if [ ! -e "$NF_ROOT/build" ] && [ ! -L "$NF_ROOT/build" ]; then
            mkdir -p "$NF_BUILD"
            ln -s "$NF_BUILD" "$NF_ROOT/build"
        fi
        ;;
    *) NF_BUILD=$NF_ROOT/build ;;
    esac
fi
# The checkout's name for what it makes outside itself (scripts/lib/run.sh):
# two checkouts on one machine never share a name.
NF_CHECKOUT_ID=$(printf '%s' "$NF_ROOT" | md5sum | cut -c1-12)
# The versions every command uses (docs/versions.md): NFABRIC_QEMU, the QEMU
# line the device is built on, and NFABRIC_KERNEL, the guest kernel's line.
# The default pair builds in NF_BUILD as it always has; any other pair in
# NF_BUILD/qQEMU-kKERNEL, so that switching rebuilds neither.
NF_QEMU_LINE=${NFABRIC_QEMU:-10.0}
NF_KERNEL_LINE=${NFABRIC_KERNEL:-6.12}
case $NF_QEMU_LINE in
10.0|10.2|11.1) ;;
*) printf 'nfabric: error: NFABRIC_QEMU=%s: the supported QEMU lines are 10.0 (default), 10.2 and 11.1\n' "$NF_QEMU_LINE" >&2; exit 2 ;;
esac
case $NF_KERNEL_LINE in
6.12|7.2) ;;
*) printf 'nfabric: error: NFABRIC_KERNEL=%s: the supported guest kernel lines are 6.12 (default) and 7.2\n' "$NF_KERNEL_LINE" >&2; exit 2 ;;
esac
NF_BUILD_BASE=$NF_BUILD
if [ "$NF_QEMU_LINE-$NF_KERNEL_LINE" != 10.0-6.12 ]; then
    NF_PAIR=q$NF_QEMU_LINE-k$NF_KERNEL_LINE
    # A child command given NF_BUILD of this pair keeps it.
    case $NF_BUILD in
    */"$NF_PAIR") NF_BUILD_BASE=${NF_BUILD%/*} ;;
    *) NF_BUILD=$NF_BUILD/$NF_PAIR ;;
    esac
fi
# Downloads (QEMU source package, Debian .debs) survive `rm -rf build`.
NF_CACHE=${NF_CACHE:-/var/cache/nfabric}
# QEMU depends on its line only: the pairs of one QEMU line share its
# source and build (the default line's in build/, another's in build/qLINE/).
if [ "$NF_QEMU_LINE" = 10.0 ]; then
    NF_QEMU_DIR=$NF_BUILD_BASE
else
    NF_QEMU_DIR=$NF_BUILD_BASE/q$NF_QEMU_LINE
fi
NF_QEMU_SRC=$NF_QEMU_DIR/qemu-src
NF_QEMU_BUILD=$NF_QEMU_DIR/qemu-build
NF_QEMU_BIN=$NF_QEMU_BUILD/qemu-system-x86_64
# The host programs do not depend on the pair: one build for all.
NF_HOST_BUILD=$NF_BUILD_BASE/host
NF_FIRMWARE=(-L /usr/share/seabios -L /usr/share/qemu)

nf_log() { printf '[nfabric] %s\n' "$*" >&2; }

# No silent exit: under `set -e`, a command that fails ends the script, and
# this ERR trap (inherited by functions and subshells through `set -E`) says
# first which command failed, where, and with what status.  Command
# substitutions keep -e (inherit_errexit), so a function that fails inside
# `x=$(f)` stops there and is reported where it failed, then where its
# assignment failed.  Where errexit is off (a condition, `|| ...`), nothing
# is reported: the caller handles the status.
nf_on_err() {
    local rc=$? cmd=$BASH_COMMAND
    case $- in *e*) ;; *) return "$rc" ;; esac
    # A command's main function returns its verdict (tests failed, a bad
    # option: it said so itself); anything that failed inside it was
    # reported where it failed.
    if [ "${FUNCNAME[1]:-main}" = main ] && [[ $cmd == return* || $cmd == nf_*_main* ]]; then
        return "$rc"
    fi
    printf 'nfabric: error: "%s" failed with status %d at %s:%d (in %s)\n' \
        "$cmd" "$rc" "${BASH_SOURCE[1]:-?}" "${BASH_LINENO[0]}" "${FUNCNAME[1]:-main}" >&2
    if [ -n "${NF_STEP_LOG:-}" ] && [ -f "$NF_STEP_LOG" ]; then
        printf 'nfabric: the log of that step: %s\n' "$NF_STEP_LOG" >&2
    fi
    return "$rc"
}
set -E
shopt -s inherit_errexit
trap nf_on_err ERR
nf_die() { printf 'nfabric: error: %s\n' "$*" >&2; exit 1; }

# What a user can do when a download from Debian's mirrors fails; every
# message of a failed download ends with it.
NF_DOWNLOAD_HINT="A download from Debian's mirror failed: check that deb.debian.org answers (apt-get update), then run the same command again; what was fetched is kept in $NF_CACHE and reused."

# nf_tap STATUS TEXT: one TAP line of a suite, numbered (STATUS 0 = ok);
# a failure sets NF_TAP_FAILED=1.  The test runner resets both counters
# before each suite.
NF_TAP_N=0
NF_TAP_FAILED=0
nf_tap() {
    NF_TAP_N=$((NF_TAP_N + 1))
    if [ "$1" = 0 ]; then
        echo "ok $NF_TAP_N - $2"
    else
        echo "not ok $NF_TAP_N - $2"
        NF_TAP_FAILED=1
    fi
}

# nf_comment: standard input as TAP comment lines ("#   LINE").
nf_comment() { sed 's/^/#   /'; }

# nf_time_start NAME / nf_time_end NAME: print how long a step took.
nf_time_start() { eval "NF_T_$1=\$(date +%s.%N)"; }
nf_time_end() {
    local start
    eval "start=\$NF_T_$1"
    nf_log "$1 took $(awk -v a="$start" -v b="$(date +%s.%N)" 'BEGIN{printf "%.1f s", b-a}')"
}

nf_require_root() {
    [ "$(id -u)" = 0 ] || nf_die "this step installs Debian packages: run it as root"
}

# Registries filled by the libraries (scripts/lib/*.sh are sourced in name
# order, so these live here).
# (The test suites are registered in tests/meson.build, the benchmarks
# in bench/meson.build.)

# nf_newest_dir DIR PATTERN: the path of the newest (version order)
# directory in DIR whose name matches PATTERN, or nothing, with status 0,
# when DIR does not exist or nothing matches.  Never ends a `set -e` script.
nf_newest_dir() {
    [ -d "$1" ] || return 0
    find "$1" -mindepth 1 -maxdepth 1 -type d -name "$2" -print | sort -V | tail -n 1
}

# nf_newest_file DIR PATTERN: the same for files.
nf_newest_file() {
    [ -d "$1" ] || return 0
    find "$1" -mindepth 1 -maxdepth 1 -type f -name "$2" -print | sort -V | tail -n 1
}
