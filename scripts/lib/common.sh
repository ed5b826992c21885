# SPDX-License-Identifier: GPL-2.0-or-later
# Shared helpers and paths for scripts/nfabric and its libraries.

NF_ROOT=${NF_ROOT:-$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)}
NF_BUILD=${NF_BUILD:-$NF_ROOT/build}
# Downloads (QEMU source package, Debian .debs) survive `rm -rf build`.
NF_CACHE=${NF_CACHE:-/var/cache/nfabric}
NF_QEMU_SRC=$NF_BUILD/qemu-src
NF_QEMU_BUILD=$NF_BUILD/qemu-build
NF_QEMU_BIN=$NF_QEMU_BUILD/qemu-system-x86_64
NF_HOST_BUILD=$NF_BUILD/host
NF_FIRMWARE="-L /usr/share/seabios -L /usr/share/qemu"

nf_log() { printf '[nfabric] %s\n' "$*" >&2; }
nf_die() { printf 'nfabric: error: %s\n' "$*" >&2; exit 1; }

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
declare -gA NF_SUITE_ORDER NF_SUITE_DESC NF_BENCH_DESC

# nf_register_suite ORDER NAME "description": see scripts/lib/test.sh.
nf_register_suite() {
    NF_SUITE_ORDER[$2]=$1
    NF_SUITE_DESC[$2]=$3
}
