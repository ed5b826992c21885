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

# nf_sid_apt ARGS...: apt-get with the private sid configuration.
nf_sid_apt_opts() {
    NF_SID_OPTS=(-o "Dir::State::Lists=$NF_SID_APT/lists"
        -o "Dir::Cache=$NF_SID_APT/cache"
        -o "Dir::Etc::SourceList=/dev/null"
        -o "Dir::Etc::SourceParts=$NF_SID_APT/sources"
        -o "Dir::Etc::PreferencesParts=$NF_SID_APT/preferences"
        # The lists are root's: apt would fetch as root anyway, and say so.
        -o "APT::Sandbox::User=root")
}

# nf_sid_update: write the configuration and update its lists (once a day).
nf_sid_update() {
    local stamp=$NF_SID_APT/updated log=$NF_SID_APT/update.log
    nf_sid_apt_opts
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
    if [ ! -f "$stamp" ] || [ -n "$(find "$stamp" -mmin +1440 2>/dev/null)" ]; then
        nf_log "apt-get update (sid, private lists in $NF_SID_APT)"
        apt-get "${NF_SID_OPTS[@]}" update -q > "$log" 2>&1 ||
            nf_die "apt-get update of sid's lists failed (log: $log). $NF_DOWNLOAD_HINT"
        touch "$stamp"
    fi
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
