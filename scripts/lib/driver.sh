# SPDX-License-Identifier: GPL-2.0-or-later
# The guest driver nfabric.ko (guest/kernel/, docs/driver.md): its build
# against the guest kernel's Debian headers (used by scripts/lib/image.sh)
# and the `driver` test suite.

NF_PKGS_KMOD="make gcc-12 libelf1"

# nf_driver_headers KVER : unpack linux-headers-KVER (with its -common part
# and linux-kbuild) from bookworm-backports into build/guest/headers/KVER,
# once per version; prints the kernel build directory.  Nothing is
# installed into the host: the packages are fetched with apt-get download
# and unpacked with dpkg-deb -x, and the absolute /usr/src path of the
# headers' Makefile is pointed at the unpacked tree.
nf_driver_headers() {
    local kver=$1 base=${1%-amd64} hroot=$NF_GUEST/headers/$1 p deb
    local kdir=$hroot/usr/src/linux-headers-$kver
    if [ ! -f "$hroot/.unpacked" ]; then
        rm -rf "$NF_GUEST/headers"
        mkdir -p "$hroot"
        for p in "linux-headers-$kver" "linux-headers-$base-common" "linux-kbuild-$base"; do
            deb=$(nf_image_fetch "$p/bookworm-backports")
            dpkg-deb -x "$deb" "$hroot" || nf_die "driver: dpkg-deb -x $deb failed"
        done
        sed -i "s|^include /usr/src/|include $hroot/usr/src/|" "$kdir/Makefile"
        grep -q "^include $hroot/" "$kdir/Makefile" ||
            nf_die "driver: unexpected $kdir/Makefile (no 'include /usr/src/...')"
        touch "$hroot/.unpacked"
    fi
    echo "$kdir"
}

# nf_driver_build KVER : build nfabric.ko for KVER into build/guest/kmod/
# (the sources and nfabric_regs.h are copied there: a 6.12 out-of-tree
# build writes next to its sources); prints the path of the stripped .ko.
nf_driver_build() {
    local kver=$1 kdir out=$NF_GUEST/kmod t0 f stale=0
    kdir=$(nf_driver_headers "$kver")
    if [ -f "$out/nfabric.ko" ] && [ "$(cat "$out/kernel-version" 2>/dev/null)" = "$kver" ]; then
        for f in "$NF_ROOT"/guest/kernel/{Kbuild,Makefile,*.c} \
                 "$NF_ROOT"/guest/kernel/{uapi,compat}/*.h \
                 "$NF_ROOT/include/hw/mem/nfabric_regs.h"; do
            [ "$f" -nt "$out/nfabric.ko" ] && stale=1
        done
        if [ "$stale" = 0 ]; then
            echo "$out/nfabric.ko"
            return 0
        fi
    fi
    nf_need $NF_PKGS_KMOD
    t0=$EPOCHREALTIME
    rm -rf "$out"
    mkdir -p "$out/src/include/hw/mem"
    cp -r "$NF_ROOT"/guest/kernel/{Kbuild,Makefile,*.c,uapi,compat} "$out/src/"
    cp "$NF_ROOT/include/hw/mem/nfabric_regs.h" "$out/src/include/hw/mem/"
    # No BTF for the module (it needs pahole; only BPF tools use it).
    make -C "$kdir" M="$out/src" NFABRIC_INCLUDE="$out/src/include" \
        CONFIG_DEBUG_INFO_BTF_MODULES= W=1 modules > "$out/build.log" 2>&1 ||
        { cat "$out/build.log" >&2; nf_die "driver: module build failed (log: $out/build.log)"; }
    if grep -q 'warning:' "$out/build.log"; then
        grep 'warning:' "$out/build.log" >&2
        nf_die "driver: the module builds with warnings (log: $out/build.log)"
    fi
    strip --strip-debug -o "$out/nfabric.ko" "$out/src/nfabric.ko"
    echo "$kver" > "$out/kernel-version"
    printf 'nfabric.ko built in %.1f s\n' \
        "$(awk -v a="$t0" -v b="$EPOCHREALTIME" 'BEGIN{print b-a}')" >> "$out/build.log"
    nf_log "$(tail -1 "$out/build.log") (log: $out/build.log)"
    echo "$out/nfabric.ko"
}
