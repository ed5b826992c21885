# shellcheck shell=bash
# SPDX-License-Identifier: GPL-2.0-or-later
# Fetch Debian's QEMU 10.0 source, link the project's device files into it,
# apply the project's QEMU patch series (qemu-patches/) and build
# qemu-system-x86_64 (x86_64 only).  Everything is reused when present.

NF_QEMU_CONFIGURE_ARGS=(
    --python=/usr/bin/python3 --target-list=x86_64-softmmu
    --disable-docs --disable-user --disable-werror --disable-download
    --disable-rust --disable-gtk --disable-sdl --disable-vnc --disable-opengl
    --disable-spice --disable-curl --disable-libusb --disable-usb-redir
    --disable-xen --disable-tools --disable-guest-agent --disable-debug-info
    --disable-install-blobs
)
# The files of the project that live in QEMU's tree (as symlinks).
NF_QEMU_LINKS=(
    hw/mem/nfabric
    include/hw/mem/cxl_nfabric.h
    include/hw/mem/nfabric_ctrl.h
    include/hw/mem/nfabric_engine.h
    include/hw/mem/nfabric_regs.h
    include/hw/mem/nfabric_shared.h
    include/hw/mem/nfabric_locks.h
    include/hw/mem/nfabric_fm.h
    include/hw/mem/nfabric_mappings.h
    include/hw/mem/nfabric_timing.h
    include/hw/mem/nfabric_window.h
    include/hw/mem/nfabric_record.h
    tests/qtest/nfabric-qtest.h
    tests/qtest/nfabric-test.c
    tests/qtest/nfabric-migration-test.c
    tests/qtest/nfabric-fuzz-test.c
)
# The project's changes to QEMU's own files, one patch per logical change,
# applied in file-name order (docs/device.md lists them).
NF_QEMU_PATCHES=$NF_ROOT/qemu-patches
# Another QEMU line (NFABRIC_QEMU, docs/versions.md) has its own series.
# shellcheck disable=SC2153  # NF_QEMU_LINE is common.sh's, not a misspelling
[ "$NF_QEMU_LINE" = 10.0 ] || NF_QEMU_PATCHES=$NF_ROOT/qemu-patches/$NF_QEMU_LINE
# Records, in the source tree, what it was made from and which patches are
# applied (one "sha256  name" line each, in order).  A tree without it was
# made by an older setup that edited files in place: it is made again.
NF_QEMU_STAMP_NAME=.nfabric-patches
NF_QEMU_TREE_FORMAT="nfabric-qemu-tree 2"

# The unpacked Debian source in the cache (fetched if missing) into
# NF_QEMU_CACHED.
nf_qemu_cached_source() {
    local dir
    if [ "$NF_QEMU_LINE" != 10.0 ]; then
        nf_versions_qemu_source
        return 0
    fi
    dir=$(nf_newest_dir "$NF_CACHE/qemu" 'qemu-10.0*')
    if [ -z "$dir" ]; then
        nf_need dpkg-dev
        nf_apt_sources
        mkdir -p "$NF_CACHE/qemu"
        nf_log "fetching QEMU's source package (qemu/trixie, 10.0.x) into $NF_CACHE/qemu"
        (cd "$NF_CACHE/qemu" && apt-get source -qq qemu/trixie >"$NF_CACHE/qemu/fetch.log" 2>&1) ||
            nf_die "apt-get source qemu/trixie failed (log: $NF_CACHE/qemu/fetch.log). $NF_DOWNLOAD_HINT"
        dir=$(nf_newest_dir "$NF_CACHE/qemu" 'qemu-10.0*')
        [ -n "$dir" ] || nf_die "no qemu-10.0* directory after apt-get source"
    fi
    NF_QEMU_CACHED=$dir
}

# nf_qemu_series: the stamp lines the tree should have: the format, the
# source it comes from, then "sha256  name" for every patch in order.
nf_qemu_series() {   # SOURCE_NAME
    local p
    echo "$NF_QEMU_TREE_FORMAT"
    echo "source $1"
    for p in "$NF_QEMU_PATCHES"/*.patch; do
        sha256sum "$p" | awk -v n="${p##*/}" '{ print $1 "  " n }'
    done
}

# Copy the cached source to $NF_QEMU_SRC (replacing what is there).
nf_qemu_extract() {   # CACHED_DIR
    nf_log "copying $(basename "$1") to $NF_QEMU_SRC"
    mkdir -p "$NF_QEMU_DIR"
    rm -rf "$NF_QEMU_SRC.tmp" "$NF_QEMU_SRC.old"
    cp -a "$1" "$NF_QEMU_SRC.tmp"
    printf '%s\n' "$NF_QEMU_TREE_FORMAT" "source $(basename "$1")" > "$NF_QEMU_SRC.tmp/$NF_QEMU_STAMP_NAME"
    [ -e "$NF_QEMU_SRC" ] && mv "$NF_QEMU_SRC" "$NF_QEMU_SRC.old"
    mv "$NF_QEMU_SRC.tmp" "$NF_QEMU_SRC"
    rm -rf "$NF_QEMU_SRC.old"
}

# nf_qemu_apply PATCH: apply one patch of the series, after a dry run; stop
# with patch's own message if it does not apply.  Records it in the stamp.
nf_qemu_apply() {
    local p=$1 name=${1##*/} out
    if ! out=$(patch -d "$NF_QEMU_SRC" -p1 --forward --batch --dry-run < "$p" 2>&1); then
        printf '%s\n' "$out" >&2
        nf_die "QEMU patch $name does not apply to $NF_QEMU_SRC (QEMU's source changed, or the patch is wrong); fix ${p#"$NF_ROOT"/}"
    fi
    out=$(patch -d "$NF_QEMU_SRC" -p1 --forward --batch --no-backup-if-mismatch < "$p" 2>&1) || {
        printf '%s\n' "$out" >&2
        nf_die "applying QEMU patch $name failed after a clean dry run"
    }
    sha256sum "$p" | awk -v n="$name" '{ print $1 "  " n }' >> "$NF_QEMU_SRC/$NF_QEMU_STAMP_NAME"
    nf_log "applied ${p#"$NF_ROOT"/}"
}

# Bring $NF_QEMU_SRC to "Debian's source + the series": nothing to do when
# the stamp matches; apply only the new patches when the series grew; copy
# the source again when the tree predates the series or a patch changed.
nf_qemu_prepare() {
    local cached want have stamp reason="" p i done_n
    compgen -G "$NF_QEMU_PATCHES/*.patch" > /dev/null ||
        nf_die "no QEMU patches in $NF_QEMU_PATCHES (no series for QEMU $NF_QEMU_LINE yet)"
    nf_qemu_cached_source
    cached=$NF_QEMU_CACHED
    want=$(nf_qemu_series "$(basename "$cached")")
    stamp=$NF_QEMU_SRC/$NF_QEMU_STAMP_NAME
    if [ ! -x "$NF_QEMU_SRC/configure" ]; then
        reason="no source tree yet"
    elif [ ! -f "$stamp" ]; then
        reason="$NF_QEMU_SRC was made by an older setup (in-place edits, no patch stamp)"
    else
        have=$(cat "$stamp")
        if [ "$have" = "$want" ]; then
            return 0
        fi
        # A prefix of the wanted series (same format and source): only new
        # patches to apply.
        if [ "${want#"$have"$'\n'}" = "$want" ]; then
            reason="the source or an applied patch changed"
        fi
    fi
    if [ -n "$reason" ]; then
        [ -x "$NF_QEMU_SRC/configure" ] && nf_log "re-extracting QEMU's source: $reason"
        nf_qemu_extract "$cached"
    fi
    nf_need patch
    # The stamp is a prefix of the series: its first two lines, then one
    # line per patch already applied.
    done_n=$(($(wc -l < "$stamp") - 2))
    i=0
    for p in "$NF_QEMU_PATCHES"/*.patch; do
        i=$((i + 1))
        [ "$i" -le "$done_n" ] && continue
        nf_qemu_apply "$p"
    done
    [ "$(cat "$stamp")" = "$want" ] ||
        nf_die "internal: $stamp does not match the series after applying it"
}

# Link the project's files into QEMU's tree (the series hooks them into its
# build).
nf_qemu_overlay() {
    local p
    for p in "${NF_QEMU_LINKS[@]}"; do
        if [ "$(readlink "$NF_QEMU_SRC/$p" 2>/dev/null)" != "$NF_ROOT/$p" ]; then
            rm -rf "${NF_QEMU_SRC:?}/$p"
            ln -s "$NF_ROOT/$p" "$NF_QEMU_SRC/$p"
        fi
    done
}

nf_qemu_configure() {
    [ -f "$NF_QEMU_BUILD/build.ninja" ] && return 0
    nf_log "configuring QEMU in $NF_QEMU_BUILD"
    mkdir -p "$NF_QEMU_BUILD"
    (cd "$NF_QEMU_BUILD" && "$NF_QEMU_SRC/configure" "${NF_QEMU_CONFIGURE_ARGS[@]}" \
        >"$NF_QEMU_DIR/qemu-configure.log" 2>&1) || {
        tail -30 "$NF_QEMU_DIR/qemu-configure.log" >&2
        rm -f "$NF_QEMU_BUILD/build.ninja"
        nf_die "QEMU configure failed (log: $NF_QEMU_DIR/qemu-configure.log)"
    }
}

# nf_qemu_ninja TARGET...: build with progress on the terminal.
nf_qemu_ninja() {
    local log=$NF_QEMU_DIR/qemu-ninja.log
    nf_log "building $* (log: $log)"
    if ! ninja -C "$NF_QEMU_BUILD" -j "$(nproc)" "$@" >"$log" 2>&1; then
        grep -E 'error|FAILED' "$log" | head -30 >&2
        nf_die "QEMU build failed (log: $log)"
    fi
}

nf_qemu_build() {
    nf_need "${NF_PKGS_BUILD[@]}"
    nf_qemu_prepare
    nf_qemu_overlay
    nf_qemu_configure
    if [ -t 2 ] && [ "${NF_QUIET:-0}" = 0 ]; then
        # Show ninja's own progress line when a person is watching.
        ninja -C "$NF_QEMU_BUILD" -j "$(nproc)" qemu-system-x86_64 ||
            nf_die "QEMU build failed"
    else
        nf_qemu_ninja qemu-system-x86_64
    fi
}

# Let the uninstalled binary (and qtests) find Debian's firmware by itself.
nf_qemu_firmware() {
    local dir=$NF_QEMU_BUILD/qemu-bundle/usr/local/share/qemu f
    mkdir -p "$dir"
    for f in /usr/share/seabios/*.bin /usr/share/qemu/*.bin /usr/share/qemu/*.rom \
             /usr/lib/ipxe/qemu/*.rom; do
        [ -e "$f" ] && [ ! -e "$dir/${f##*/}" ] && ln -s "$f" "$dir/"
    done
    return 0
}

nf_setup_usage() {
    cat <<'USAGE'
usage: scripts/nfabric setup [--quiet]

Installs the Debian packages the project needs (adding the apt entries for
bookworm-backports and trixie's sources), fetches QEMU 10.0's Debian source
package, links the device into it, builds qemu-system-x86_64 and the
project's host programs.  Safe to re-run: only what changed is rebuilt.
USAGE
}

# nf_flag_option CMD USAGE FLAG VAR ARGS...: the arguments of a command whose
# one option is FLAG: VAR=1 if ARGS hold it; -h/--help: USAGE, status 1;
# anything else: the usage on stderr after saying what, status 2.
nf_flag_option() {
    local cmd=$1 usage=$2 flag=$3 var=$4 a
    shift 4
    for a in "$@"; do
        case "$a" in
        -h|--help) "$usage"; return 1 ;;
        "$flag") printf -v "$var" 1 ;;
        *) echo "nfabric $cmd: unknown argument \"$a\"" >&2; "$usage" >&2; return 2 ;;
        esac
    done
}

nf_setup_main() {
    local quiet=0 rc=0
    nf_flag_option setup nf_setup_usage --quiet quiet "$@" || rc=$?
    case $rc in 0) ;; 1) return 0 ;; *) return "$rc" ;; esac
    nf_require_root
    nf_time_start setup
    NF_QUIET=$quiet nf_qemu_build
    nf_need "${NF_PKGS_RUN[@]}"
    nf_qemu_firmware
    nf_host_build
    [ "$quiet" = 1 ] || { nf_time_end setup; nf_log "ready: $NF_QEMU_BIN"; }
}

nf_qemu_usage() {
    cat <<'USAGE'
usage: scripts/nfabric qemu ARGS...

Runs the project's qemu-system-x86_64 with the firmware paths (-L) set, e.g.
  scripts/nfabric qemu -device help | grep neuron
  scripts/nfabric qemu -device cxl-neuron-fabric,help
USAGE
}

nf_qemu_main() {
    case "${1:-}" in
    --help|-h) nf_qemu_usage
               echo "QEMU's own options: scripts/nfabric qemu -help"; return 0 ;;
    "") nf_qemu_usage >&2; return 2 ;;
    esac
    [ -x "$NF_QEMU_BIN" ] || nf_setup_main --quiet
    exec "$NF_QEMU_BIN" "${NF_FIRMWARE[@]}" "$@"
}
