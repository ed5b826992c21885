# shellcheck shell=bash
# SPDX-License-Identifier: GPL-2.0-or-later
# The guest driver nfabric.ko (guest/kernel/, docs/driver.md): its build
# against the guest kernel's Debian headers (used by scripts/lib/image.sh)
# and what its test suites need made (the suites: scripts/nfmachine/driver_suite.py).

NF_PKGS_KMOD=(make gcc-12 libelf1)

# nf_driver_headers KVER : unpack linux-headers-KVER (with its -common part
# and linux-kbuild) from bookworm-backports into build/guest/headers/KVER,
# once per version; prints the kernel build directory.  Nothing is
# installed into the host: the packages are fetched with apt-get download
# and unpacked with dpkg-deb -x, and the absolute /usr/src paths of the
# headers' Makefile are pointed at the unpacked tree.  (6.12 only: a newer
# line's headers are installed in its sid root, versions.sh.)
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
        sed -i -e "s|^include /usr/src/|include $hroot/usr/src/|" "$kdir/Makefile"
        grep -q "^include $hroot/" "$kdir/Makefile" ||
            nf_die "driver: unexpected $kdir/Makefile (no 'include /usr/src/...')"
        touch "$hroot/.unpacked"
    fi
    echo "$kdir"
}

# The make line of an out-of-tree build of the module in SRC against KDIR.
# No BTF for the module (it needs pahole and vmlinux; only BPF tools use it).
nf_driver_make_args() {   # KDIR SRC
    printf '%s\n' -C "$1" M="$2" NFABRIC_INCLUDE="$2/include" \
        CONFIG_DEBUG_INFO_BTF_MODULES= W=1 modules
}

# nf_driver_compile KVER OUT LOG : build nfabric.ko for KVER from the
# sources copied to OUT/src; 6.12 with the host's gcc against the unpacked
# headers, a newer line in its sid root (with the compiler its headers name).
nf_driver_compile() {
    local kver=$1 out=$2 log=$3 kdir root args
    if [ "$NF_KERNEL_LINE" = 6.12 ]; then
        nf_need "${NF_PKGS_KMOD[@]}"
        kdir=$(nf_driver_headers "$kver")
        mapfile -t args < <(nf_driver_make_args "$kdir" "$out/src")
        make "${args[@]}" > "$log" 2>&1
    else
        root=$(nf_sid_root "$kver")
        rm -rf "$root/build/nfabric"
        mkdir -p "$root/build/nfabric"
        cp -r "$out/src" "$root/build/nfabric/src"
        mapfile -t args < <(nf_driver_make_args "/usr/src/linux-headers-$kver" /build/nfabric/src)
        nf_sid_root_run "$root" make "${args[@]}" > "$log" 2>&1 &&
            cp "$root/build/nfabric/src/nfabric.ko" "$out/src/nfabric.ko"
    fi
}

# nf_driver_build KVER : build nfabric.ko for KVER into build/guest/kmod/
# (the sources and nfabric_regs.h are copied there: a 6.12 out-of-tree
# build writes next to its sources); prints the path of the stripped .ko.
# A build with a warning (W=1) fails.
nf_driver_build() {
    local kver=$1 out=${2:-$NF_GUEST/kmod} t0 f stale=0
    if [ -f "$out/nfabric.ko" ] && [ "$(cat "$out/kernel-version" 2>/dev/null)" = "$kver" ]; then
        for f in "$NF_ROOT"/guest/kernel/{Kbuild,Makefile,*.c,*.h} \
                 "$NF_ROOT"/guest/kernel/{uapi,compat}/*.h \
                 "$NF_ROOT/include/hw/mem/nfabric_regs.h"; do
            [ "$f" -nt "$out/nfabric.ko" ] && stale=1
        done
        if [ "$stale" = 0 ]; then
            echo "$out/nfabric.ko"
            return 0
        fi
    fi
    t0=$EPOCHREALTIME
    rm -rf "$out"
    mkdir -p "$out/src/include/hw/mem"
    cp -r "$NF_ROOT"/guest/kernel/{Kbuild,Makefile,*.c,*.h,uapi,compat} "$out/src/"
    cp "$NF_ROOT/include/hw/mem/nfabric_regs.h" "$out/src/include/hw/mem/"
    nf_driver_compile "$kver" "$out" "$out/build.log" ||
        { cat "$out/build.log" >&2; nf_die "driver: module build for $kver failed (log: $out/build.log)"; }
    if grep -q 'warning:' "$out/build.log"; then
        grep 'warning:' "$out/build.log" >&2
        nf_die "driver: the module builds with warnings (log: $out/build.log)"
    fi
    strip --strip-debug -o "$out/nfabric.ko" "$out/src/nfabric.ko"
    echo "$kver" > "$out/kernel-version"
    printf 'nfabric.ko built for %s in %.1f s\n' "$kver" \
        "$(awk -v a="$t0" -v b="$EPOCHREALTIME" 'BEGIN{print b-a}')" >> "$out/build.log"
    nf_log "$(tail -1 "$out/build.log") (log: $out/build.log)"
    echo "$out/nfabric.ko"
}

# ---- the suites: scripts/nfmachine/driver_suite.py (their boots, the
# cluster, the checks); here only what they need built first ---------------

# driver: the guest checks through nfabric.ko, its own checks, three more
# boots (System RAM, an interleaved region, no Register Locator block) and
# rounds on two hosts; fallback: the guest checks without it.
nf_suite_driver() { nf_image_machine driver-suite; }
nf_suite_fallback() { nf_image_machine fallback-suite; }

# pybind: the Python binding's integer arguments, its waits when the head
# fails, libnfabric.so's versioned symbols (host, no VM).
nf_suite_pybind() {
    nf_need python3-numpy
    local rc=0
    nf_machine pybind-suite || rc=$?
    return "$rc"
}

# nf_checkpatch : the path of Linux's scripts/checkpatch.pl, taken once
# from Debian's linux-source-6.12 (the kernel headers do not carry it) into
# $NF_CACHE/checkpatch-6.12 with the two data files it reads.
nf_checkpatch() {
    local dir=$NF_CACHE/checkpatch-6.12 deb tmp
    if [ ! -f "$dir/.done" ]; then
        deb=$(nf_image_fetch linux-source-6.12)
        tmp=$(mktemp -d)
        nf_log "taking checkpatch.pl from $(basename "$deb")"
        dpkg-deb --fsys-tarfile "$deb" | tar -x -C "$tmp" --wildcards './usr/src/linux-source-6.12.tar.xz' ||
            nf_die "driver: no linux-source-6.12.tar.xz in $deb"
        tar -xJf "$tmp/usr/src/linux-source-6.12.tar.xz" -C "$tmp" --strip-components=2 \
            linux-source-6.12/scripts/checkpatch.pl linux-source-6.12/scripts/spelling.txt \
            linux-source-6.12/scripts/const_structs.checkpatch ||
            nf_die "driver: checkpatch.pl is not in $deb"
        rm -rf "$dir"
        mkdir -p "$dir"
        mv "$tmp"/checkpatch.pl "$tmp"/spelling.txt "$tmp"/const_structs.checkpatch "$dir/"
        rm -rf "$tmp"
        touch "$dir/.done"
    fi
    echo "$dir/checkpatch.pl"
}

# ---- driver72: nfabric.ko for the newest kernel line, in a sid root -------
# Here what it needs made: sid's kernel, the sid root, the build and
# checkpatch.pl (skipped only when sid's mirror did not serve a file); the
# checks of what was made are driver_suite.py's.
nf_suite_driver72() {
    local out=${NF_TEST_LOGS:-$NF_BUILD/test-logs}/driver72 kpkg kver root ko cp rc=0
    # This suite's own line, whatever pair the run is for (a subshell).
    NF_KERNEL_LINE=7.2
    rm -rf "$out"
    mkdir -p "$out"
    if ! kpkg=$(nf_versions_kernel_pkg 2> "$out/lists.log"); then
        cat "$out/lists.log"
        if grep -q "failed\|Failed" "$out/lists.log"; then
            echo "# skipped: sid's mirror did not serve its package lists ($out/lists.log)"
            return 0
        fi
        return 1
    fi
    kver=${kpkg#linux-image-}
    echo "# kernel: $kver"
    if ! root=$(nf_sid_root "$kver" 2> "$out/root.log"); then
        cat "$out/root.log"
        if [ -s "$NF_BUILD_BASE/sid-root-$kver.unserved" ]; then
            echo "# skipped: sid's mirror did not serve $(cat "$NF_BUILD_BASE/sid-root-$kver.unserved")"
            return 0
        fi
        echo "not ok - a sid root with linux-headers-$kver could not be made ($out/root.log)"
        return 1
    fi
    # An empty path: not made (build.err, or the message above, says why).
    ko=$(nf_driver_build "$kver" "$out/kmod" 2> "$out/build.err") || ko=""
    cp=$(nf_checkpatch) || cp=""
    nf_machine driver72-suite "$kver" "$root" "$out" "$ko" "$cp" || rc=$?
    return "$rc"
}
