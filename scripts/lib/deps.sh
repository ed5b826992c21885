# shellcheck shell=bash disable=SC2034  # this file defines the globals the other libraries use
# SPDX-License-Identifier: GPL-2.0-or-later
# Host package installation for NEURON-Fabric. Sourced by scripts/nfabric.
# Adds the apt entries the project needs (bookworm-backports binaries, trixie
# sources for QEMU) and installs what is missing. Idempotent.

NF_APT_LIST=/etc/apt/sources.list.d/nfabric.sources
NF_APT_STAMP=/var/lib/apt/nfabric-updated

nf_apt_sources() {
    if [ ! -f "$NF_APT_LIST" ]; then
        nf_log "adding apt entries: bookworm-backports (deb), trixie (deb-src)"
        cat > "$NF_APT_LIST" <<'SRC'
Types: deb
URIs: http://deb.debian.org/debian
Suites: bookworm-backports
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg

Types: deb-src
URIs: http://deb.debian.org/debian
Suites: trixie
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
SRC
        rm -f "$NF_APT_STAMP"
    fi
    # Never let trixie binaries in: only its sources are wanted.
    if [ ! -f /etc/apt/preferences.d/nfabric ]; then
        cat > /etc/apt/preferences.d/nfabric <<'PREF'
Package: *
Pin: release n=trixie
Pin-Priority: -10
PREF
    fi
    nf_apt_update "$NF_APT_STAMP" 720 "$NF_CACHE/apt-update.log" ""
}

# nf_apt_update STAMP MINUTES LOG WHAT [APT-GET OPTION...]: apt-get update
# unless STAMP is younger than MINUTES; its output in LOG; WHAT (after
# "apt-get update") names it in the progress line and the error.
nf_apt_update() {
    local stamp=$1 minutes=$2 log=$3 what=$4
    shift 4
    if [ ! -f "$stamp" ] || [ -n "$(find "$stamp" -mmin +"$minutes" 2>/dev/null)" ]; then
        nf_log "apt-get update$what"
        mkdir -p "$(dirname "$log")"
        apt-get "$@" update -q > "$log" 2>&1 ||
            nf_die "apt-get update$what failed (log: $log). $NF_DOWNLOAD_HINT"
        touch "$stamp"
    fi
}

# nf_need PKG... : install the packages that are not installed yet.
# A name may carry a /suite suffix (e.g. meson/bookworm-backports).
nf_need() {
    local missing=() p name
    for p in "$@"; do
        name=${p%%/*}
        if ! dpkg-query -W -f='${Status}' "$name" 2>/dev/null | grep -q "install ok installed"; then
            missing+=("$p")
        fi
    done
    [ ${#missing[@]} -eq 0 ] && return 0
    nf_apt_sources
    nf_log "installing: ${missing[*]}"
    mkdir -p "$NF_CACHE"
    DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends \
        "${missing[@]}" > "$NF_CACHE/apt-install.log" 2>&1 ||
        nf_die "apt-get install ${missing[*]} failed (log: $NF_CACHE/apt-install.log). $NF_DOWNLOAD_HINT"
}

NF_PKGS_BUILD=(build-essential dpkg-dev pkg-config ninja-build flex bison
    libglib2.0-dev libpixman-1-dev libfdt-dev zlib1g-dev python3-venv
    meson/bookworm-backports python3-pycotap/bookworm-backports)
NF_PKGS_RUN=(seabios ipxe-qemu qemu-system-data/bookworm-backports)
NF_PKGS_IMAGE=(busybox-static cpio xz-utils kmod)

# nf_setup_packages: every Debian package the set-up and the suites may
# install (`scripts/nfabric clean --all` names them; README).
nf_setup_packages() {
    local p
    # shellcheck disable=SC2154  # the other lists are defined by their libraries
    for p in "${NF_PKGS_BUILD[@]}" "${NF_PKGS_RUN[@]}" "${NF_PKGS_IMAGE[@]}" \
             "${NF_PKGS_NDCTL[@]}" "${NF_PKGS_KMOD[@]}" "${NF_PKGS_DDP[@]}" \
             "${NF_LIBVIRT_PKGS[@]}" $NF_RTL_PKGS patch \
             clang-14 libclang-rt-14-dev shellcheck gnuplot-nox mmdebstrap nfabric-qemu-system; do
        echo "${p%%/*}"
    done | sort -u
}
