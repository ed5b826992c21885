# shellcheck shell=bash
# SPDX-License-Identifier: GPL-2.0-or-later
# ndctl 81 (Debian trixie's source) for the guest image: `cxl` and `daxctl`
# with their libraries.  Bookworm's ndctl 76.1 cannot create RAM regions
# (`cxl create-region -t ram` arrived in v77).  Used by scripts/lib/image.sh.
#
# The source is `apt-get source --tar-only ndctl/trixie` (the mirror keeps
# the upstream tarball but not always the .dsc, so Debian's packaging
# patches are not applied: none of them touches cxl or daxctl), kept in
# $NF_CACHE/src.  Build dependencies come from bookworm.  The build
# (meson, no docs, no tests, no systemd units) is installed into
# build/guest/ndctl/stage; docs/driver.md gives the figures.

NF_NDCTL_VERSION=81
NF_PKGS_NDCTL=(libkmod-dev libudev-dev uuid-dev libjson-c-dev libiniparser-dev
    libkeyutils-dev libtracefs-dev libtraceevent-dev)

# nf_ndctl_source : the path of the unpacked source tree.
nf_ndctl_source() {
    local dir=$NF_CACHE/src tar
    mkdir -p "$dir"
    tar=$(nf_newest_file "$dir" "ndctl_${NF_NDCTL_VERSION}*.orig.tar.*")
    if [ -z "$tar" ]; then
        nf_log "fetching ndctl source (trixie)"
        (cd "$dir" && apt-get source --tar-only -q "ndctl/trixie") > "$dir/ndctl-fetch.log" 2>&1 ||
            { tail -5 "$dir/ndctl-fetch.log" >&2; nf_die "ndctl: apt-get source --tar-only ndctl/trixie failed (log: $dir/ndctl-fetch.log). $NF_DOWNLOAD_HINT"; }
        tar=$(nf_newest_file "$dir" "ndctl_${NF_NDCTL_VERSION}*.orig.tar.*")
        [ -n "$tar" ] || nf_die "ndctl: trixie no longer has ndctl $NF_NDCTL_VERSION (have: $(find "$dir" -maxdepth 1 -name 'ndctl_*' -printf '%f ')) (log: $dir/ndctl-fetch.log)"
    fi
    local src=$NF_GUEST/ndctl/src
    if [ ! -f "$src/.unpacked" ] || [ "$tar" -nt "$src/.unpacked" ]; then
        rm -rf "$src"
        mkdir -p "$src"
        tar -xf "$tar" -C "$src" --strip-components=1 || nf_die "ndctl: cannot unpack $tar"
        touch "$src/.unpacked"
    fi
    echo "$src"
}

# nf_ndctl_build : build and stage ndctl; prints the stage directory.
# Rebuilt only when the source changed.
nf_ndctl_build() {
    local src stage=$NF_GUEST/ndctl/stage bdir=$NF_GUEST/ndctl/build t0
    nf_need "${NF_PKGS_BUILD[@]}" "${NF_PKGS_NDCTL[@]}"
    src=$(nf_ndctl_source)
    if [ -f "$stage/.done" ] && [ "$stage/.done" -nt "$src/.unpacked" ]; then
        echo "$stage"
        return 0
    fi
    t0=$EPOCHREALTIME
    nf_log "building ndctl $NF_NDCTL_VERSION (log: $NF_GUEST/ndctl/build.log)"
    rm -rf "$bdir" "$stage"
    mkdir -p "$NF_GUEST/ndctl"
    {
        meson setup "$bdir" "$src" --prefix=/usr --sysconfdir=/etc \
            --libdir=lib/x86_64-linux-gnu -Drootlibdir=/usr/lib/x86_64-linux-gnu \
            -Dversion-tag="$NF_NDCTL_VERSION" -Dbuildtype=release \
            -Ddocs=disabled -Dasciidoctor=disabled -Dsystemd=disabled \
            -Dtest=disabled -Ddestructive=disabled -Dpoison=disabled \
            -Dbashcompletiondir=no &&
        ninja -C "$bdir" -j2 &&
        DESTDIR=$stage meson install -C "$bdir" --quiet --no-rebuild
    } > "$NF_GUEST/ndctl/build.log" 2>&1 ||
        nf_die "ndctl: build failed (see $NF_GUEST/ndctl/build.log)"
    for f in usr/bin/cxl usr/bin/daxctl; do
        [ -x "$stage/$f" ] || nf_die "ndctl: $stage/$f was not built"
    done
    touch "$stage/.done"
    printf 'ndctl %s built in %.1f s\n' "$NF_NDCTL_VERSION" \
        "$(awk -v a="$t0" -v b="$EPOCHREALTIME" 'BEGIN{print b-a}')" >> "$NF_GUEST/ndctl/build.log"
    nf_log "$(tail -1 "$NF_GUEST/ndctl/build.log")"
    echo "$stage"
}

# nf_ndctl_install STAGE ROOT : cxl, daxctl, their ndctl libraries from
# STAGE and the system libraries they need (ldd) into ROOT.
nf_ndctl_install() {
    local stage=$1 root=$2 libdir=/usr/lib/x86_64-linux-gnu f lib
    mkdir -p "$root/usr/bin" "$root$libdir"
    cp -a "$stage$libdir"/lib{cxl,daxctl,ndctl}.so.* "$root$libdir/"
    for f in cxl daxctl; do
        cp "$stage/usr/bin/$f" "$root/usr/bin/$f"
        for lib in $(LD_LIBRARY_PATH=$stage$libdir ldd "$stage/usr/bin/$f" |
                     awk '$2 == "=>" && $3 ~ /^\// { print $3 } $1 ~ /^\// { print $1 }'); do
            case "$lib" in "$stage"/*) continue ;; esac
            if [ ! -e "$root$lib" ]; then
                mkdir -p "$root$(dirname "$lib")"
                cp -L "$lib" "$root$lib"
            fi
        done
    done
    if LD_LIBRARY_PATH=$stage$libdir ldd "$stage/usr/bin/cxl" | grep -q 'not found'; then
        nf_die "ndctl: cxl has unresolved libraries"
    fi
    mkdir -p "$root/etc"
    cp -a "$stage/etc/daxctl.conf.d" "$root/etc/" 2>/dev/null || true
}
