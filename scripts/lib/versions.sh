# shellcheck shell=bash
# SPDX-License-Identifier: GPL-2.0-or-later
# The newer pairs of NFABRIC_QEMU / NFABRIC_KERNEL (common.sh picks them;
# docs/versions.md): QEMU's source package and the guest kernel's binary
# packages from Debian unstable (sid).
#
# sid never enters the host's own apt configuration: it is an apt
# configuration of its own under $NF_CACHE/apt-sid (lists, sources, and a
# pin of -10 on top), used only by `apt-get source` and `apt-get download`
# here.  Nothing from sid is ever installed on the host.

NF_SID_APT=$NF_CACHE/apt-sid

# The options that make apt-get and apt-cache use it.
NF_SID_OPTS=(-o "Dir::State::Lists=$NF_SID_APT/lists"
    -o "Dir::Cache=$NF_SID_APT/cache"
    -o "Dir::Etc::SourceList=/dev/null"
    -o "Dir::Etc::SourceParts=$NF_SID_APT/sources"
    -o "Dir::Etc::PreferencesParts=$NF_SID_APT/preferences"
    # The lists are root's: apt would fetch as root anyway, and say so.
    -o "APT::Sandbox::User=root")

# nf_sid_update: write the configuration and update its lists (once a day).
nf_sid_update() {
    local stamp=$NF_SID_APT/updated log=$NF_SID_APT/update.log
    mkdir -p "$NF_SID_APT"/{lists/partial,cache/archives/partial,sources,preferences}
    # Check-Valid-Until: sid's Release expires a week after it is written;
    # a mirror that lags (or a snapshot) must not stop a source download.
    cat > "$NF_SID_APT/sources/sid.sources" <<'SRC'
Types: deb deb-src
URIs: http://deb.debian.org/debian
Suites: sid
Components: main
Check-Valid-Until: no
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
SRC
    cat > "$NF_SID_APT/preferences/sid" <<'PREF'
Package: *
Pin: release n=sid
Pin-Priority: -10
PREF
    nf_apt_update "$stamp" 1440 "$log" " (sid, private lists in $NF_SID_APT)" "${NF_SID_OPTS[@]}"
}

# nf_sid_source_version PKG LINE: the newest version of source package PKG
# in sid whose upstream version is LINE.x (epoch ignored).
nf_sid_source_version() {
    nf_sid_update
    apt-cache "${NF_SID_OPTS[@]}" showsrc "$1" 2>/dev/null |
        awk -v p="$1" '$1 == "Package:" { pk = $2 } $1 == "Version:" && pk == p { print $2 }' |
        awk -v l="$2" '{ v = $0; sub(/^[0-9]+:/, "", v); if (index(v, l ".") == 1) print }' |
        sort -V | tail -n 1
}

# nf_versions_qemu_source: NF_QEMU_CACHED, the unpacked Debian source of QEMU
# NF_QEMU_LINE from sid in $NF_CACHE/qemu-LINE (fetched once).
nf_versions_qemu_source() {
    local line=$NF_QEMU_LINE dir cache=$NF_CACHE/qemu-$NF_QEMU_LINE ver log
    dir=$(nf_newest_dir "$cache" "qemu-$line.*")
    if [ -z "$dir" ]; then
        nf_need dpkg-dev
        ver=$(nf_sid_source_version qemu "$line")
        [ -n "$ver" ] || nf_die "sid has no QEMU $line source package (apt-cache showsrc qemu with $NF_SID_APT/sources)"
        mkdir -p "$cache"
        log=$cache/fetch.log
        nf_log "fetching QEMU's source package (qemu=$ver from sid) into $cache"
        (cd "$cache" && apt-get "${NF_SID_OPTS[@]}" source -qq "qemu=$ver" > "$log" 2>&1) ||
            nf_die "apt-get source qemu=$ver (sid) failed (log: $log). $NF_DOWNLOAD_HINT"
        dir=$(nf_newest_dir "$cache" "qemu-$line.*")
        [ -n "$dir" ] || nf_die "no qemu-$line.* directory after apt-get source (log: $log)"
    fi
    # shellcheck disable=SC2034  # read by nf_qemu_prepare (qemu.sh)
    NF_QEMU_CACHED=$dir
}

# ---- the 7.2 guest kernel (NFABRIC_KERNEL=7.2) -------------------------------

# nf_versions_kernel_pkg: the newest linux-image-LINE.N+debV-amd64 in sid.
nf_versions_kernel_pkg() {
    local pkg line=${NF_KERNEL_LINE//./\\.}
    nf_sid_update
    pkg=$(apt-cache "${NF_SID_OPTS[@]}" pkgnames linux-image- 2>/dev/null |
          grep -E "^linux-image-$line\.[0-9]+\+deb[0-9]+-amd64\$" | sort -V | tail -n 1) || pkg=""
    [ -n "$pkg" ] || nf_die "image: sid has no $NF_KERNEL_LINE kernel (apt-cache pkgnames linux-image- with $NF_SID_APT/sources)"
    echo "$pkg"
}

# nf_sid_fetch PKG: the path of sid's PKG .deb in $NF_CACHE/debs-sid
# (downloaded once, at the version sid's lists name; never installed).
nf_sid_fetch() {
    local name=$1 dir=$NF_CACHE/debs-sid deb ver log
    mkdir -p "$dir"
    deb=$(nf_newest_file "$dir" "${name}_*.deb")
    if [ -z "$deb" ]; then
        nf_sid_update
        log=$dir/download.log
        ver=$(apt-cache "${NF_SID_OPTS[@]}" show "$name" 2>/dev/null | awk '$1 == "Version:" { print $2; exit }') || ver=""
        [ -n "$ver" ] || nf_die "image: $name is not in sid's lists ($NF_SID_APT). $NF_DOWNLOAD_HINT"
        nf_log "downloading $name=$ver (sid)"
        (cd "$dir" && apt-get "${NF_SID_OPTS[@]}" download -q "$name=$ver") > "$log" 2>&1 ||
            nf_die "image: apt-get download $name=$ver (sid) failed (log: $log). $NF_DOWNLOAD_HINT"
        deb=$(nf_newest_file "$dir" "${name}_*.deb")
        [ -n "$deb" ] || nf_die "image: $name did not download (log: $log)"
    fi
    echo "$deb"
}

# nf_versions_kernel_unpack KVER ROOT: unpack sid's kernel KVER into ROOT as
# the 6.12 package lays it out.  Since 7.x Debian's linux-image-KVER is
# empty: the kernel is in linux-binary-KVER and its modules in
# linux-modules-KVER, both under /usr/lib/modules/KVER.
nf_versions_kernel_unpack() {
    local kver=$1 root=$2 p deb
    for p in "linux-binary-$kver" "linux-modules-$kver"; do
        deb=$(nf_sid_fetch "$p")
        dpkg-deb -x "$deb" "$root" || nf_die "image: dpkg-deb -x $deb failed"
    done
    [ -f "$root/usr/lib/modules/$kver/vmlinuz" ] ||
        nf_die "image: no usr/lib/modules/$kver/vmlinuz in linux-binary-$kver"
    mkdir -p "$root/boot"
    ln -sfn "../usr/lib/modules/$kver/vmlinuz" "$root/boot/vmlinuz-$kver"
    [ -e "$root/lib" ] || ln -s usr/lib "$root/lib"
}

# nf_sid_root KVER : a Debian sid root of its own (mmdebstrap, minbase)
# with linux-headers-KVER and what they depend on (linux-kbuild, the gcc
# they were configured with), in build/sid-root-KVER: made once, removed by
# `scripts/nfabric clean --build`; prints its path.  sid's headers name gcc
# 16, whose options Debian 12's gcc 12 refuses, and sid's kbuild programs
# need sid's C library: so the module for a newer line is built in sid, as
# a distribution builds modules for kernels its host does not run.  Nothing
# of sid is installed on the host.  When the mirror does not serve a file,
# ROOT.unserved says which and the function stops.
nf_sid_root() {
    local kver=$1 root=$NF_BUILD_BASE/sid-root-$1 log what
    if [ -f "$root/.done" ]; then
        echo "$root"
        return 0
    fi
    nf_need mmdebstrap
    mkdir -p "$NF_BUILD_BASE"
    log=$root.log
    rm -rf "$root" "$root.tmp" "$root.unserved"
    nf_log "making a sid root for linux-headers-$kver in $root (mmdebstrap; log: $log)"
    # Check-Valid-Until: a lagging mirror (versions.sh).  Sandbox user root:
    # apt's _apt user may not write the host's /dev/null here.
    if ! mmdebstrap --variant=minbase --include="make,linux-headers-$kver" \
            --aptopt='APT::Sandbox::User "root"' \
            --aptopt='Acquire::Check-Valid-Until "false"' \
            sid "$root.tmp" http://deb.debian.org/debian > "$log" 2>&1; then
        rm -rf "$root.tmp"
        what=$(sed -n -e 's/.*Failed to fetch \([^ ]*\).*/\1/p' \
                      -e 's/.*Unable to locate package \([^ ]*\).*/package \1/p' \
                      -e 's/.*\(Temporary failure resolving [^ ]*\).*/\1/p' \
                      -e 's/.*\(Could not connect to [^ ]*\).*/\1/p' "$log" | head -n 1)
        [ -z "$what" ] || printf '%s\n' "$what" > "$root.unserved"
        tail -5 "$log" >&2
        nf_die "mmdebstrap of a sid root for linux-headers-$kver failed${what:+: the mirror did not serve $what} (log: $log). $NF_DOWNLOAD_HINT"
    fi
    [ -d "$root.tmp/usr/src/linux-headers-$kver" ] ||
        nf_die "the sid root has no /usr/src/linux-headers-$kver (log: $log)"
    echo "$kver" > "$root.tmp/.done"
    mv "$root.tmp" "$root"
    echo "$root"
}

# nf_sid_root_run ROOT CMD... : run CMD in ROOT, with a /proc of its own
# (objtool reads it) in a mount namespace that ends with CMD: nothing is
# left mounted.
nf_sid_root_run() {
    local root=$1
    shift
    unshare --fork --pid --mount --propagation private --mount-proc="$root/proc" \
        chroot "$root" "$@"
}
