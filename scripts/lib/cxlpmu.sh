# shellcheck shell=bash
# SPDX-License-Identifier: GPL-2.0-or-later
# The CXL PMU seen from the guest (docs/guest.md): Linux's own cxl_pmu
# driver in the image, and Debian's perf for the boots that ask for it.
#
#   cxl_pmu.ko  drivers/perf/cxl_pmu.c of Debian's linux-source-6.12 at the
#               guest kernel's own version (bookworm-backports), built out
#               of tree against the unpacked headers nfabric.ko is built
#               against (driver.sh); image.sh puts it in
#               lib/modules/KVER/extra/, guest/init/init loads it after the
#               CXL modules (nfabric.cxl_pmu=0: not).  Debian's kernel has
#               `# CONFIG_CXL_PMU is not set`, yet its cxl_pci adds a
#               cxl_pmu device to the cxl bus for each CPMU register block:
#               this is their driver.  The source is not changed.
#   perf        /usr/bin/perf of Debian's linux-perf at the kernel's version
#               (never built here) with its libraries, in a second initramfs
#               part that only `vm --perf` appends: in the image it would
#               more than double its size and add 15 % to every boot.
#
# Both are made for the 6.12 line only (docs/versions.md: a 7.2 guest has
# neither).  Downloads go to $NF_CACHE/debs, what is made to
# build/guest/cxlpmu/ and build/guest/perf/, once per input.

# nf_cxlpmu_kernel_version KVER : the Debian version of the kernel package
# linux-image-KVER (6.12.95-1~bpo12+1), the version of the source and of
# linux-perf taken with it.
nf_cxlpmu_kernel_version() {
    local deb ver
    deb=$(nf_image_fetch "linux-image-$1/bookworm-backports")
    ver=$(dpkg-deb -f "$deb" Version) || ver=""
    [ -n "$ver" ] || nf_die "cxlpmu: no Version in the control file of $deb"
    echo "$ver"
}

# nf_cxlpmu_fetch PKG VERSION : the path of PKG's .deb at VERSION in the
# cache (nf_image_fetch PKG=VERSION: downloaded once, never installed).
nf_cxlpmu_fetch() {
    nf_image_fetch "$1=$2"
}

# nf_cxlpmu_build KVER : build cxl_pmu.ko for KVER into build/guest/cxlpmu/
# and print the path of the stripped module; again only when the kernel or
# the source package changes.  Prints nothing for another kernel line.
#
# The source is the one of the kernel's own version (linux-source-6.12 of
# bookworm-backports, not bookworm-security's newer 6.12.x: cxl.h's
# structures differ between them).  cxl_pmu.c includes "../cxl/cxlpci.h",
# "../cxl/cxl.h" and "../cxl/pmu.h" (which include only <linux/...> and
# each other), so src/drivers/perf and src/drivers/cxl lie side by side.
nf_cxlpmu_build() {
    local kver=$1 out=$NF_GUEST/cxlpmu ver deb stamp src kdir t0 n
    if [ "$NF_KERNEL_LINE" != 6.12 ]; then
        nf_log "cxl_pmu.ko is built for the 6.12 kernel line only: the $NF_KERNEL_LINE guest has none"
        return 0
    fi
    ver=$(nf_cxlpmu_kernel_version "$kver")
    deb=$(nf_cxlpmu_fetch "linux-source-$NF_KERNEL_LINE" "$ver")
    stamp="kernel $kver, source ${deb##*/}"
    if [ -f "$out/cxl_pmu.ko" ] && [ "$(cat "$out/stamp" 2>/dev/null)" = "$stamp" ]; then
        echo "$out/cxl_pmu.ko"
        return 0
    fi
    t0=$EPOCHREALTIME
    rm -rf "$out"
    src=$out/src
    mkdir -p "$src"
    nf_log "taking drivers/perf/cxl_pmu.c and drivers/cxl/*.h from ${deb##*/}"
    dpkg-deb --fsys-tarfile "$deb" |
        tar -xO "./usr/src/linux-source-$NF_KERNEL_LINE.tar.xz" |
        tar -xJ -C "$src" --strip-components=1 --wildcards --no-wildcards-match-slash \
            "linux-source-$NF_KERNEL_LINE/drivers/perf/cxl_pmu.c" \
            "linux-source-$NF_KERNEL_LINE/drivers/cxl/*.h" ||
        nf_die "cxlpmu: cannot take drivers/perf/cxl_pmu.c and drivers/cxl/*.h out of $deb"
    if [ ! -f "$src/drivers/perf/cxl_pmu.c" ] || [ ! -f "$src/drivers/cxl/pmu.h" ]; then
        nf_die "cxlpmu: $deb has no drivers/perf/cxl_pmu.c or drivers/cxl/pmu.h"
    fi
    # The kernel's own drivers/perf/Makefile builds it only with CONFIG_CXL_PMU.
    echo 'obj-m := cxl_pmu.o' > "$src/drivers/perf/Kbuild"
    nf_need "${NF_PKGS_KMOD[@]}"
    kdir=$(nf_driver_headers "$kver")
    # No BTF for the module (it needs pahole and vmlinux), as nfabric.ko.
    make -C "$kdir" M="$src/drivers/perf" CONFIG_DEBUG_INFO_BTF_MODULES= modules \
        > "$out/build.log" 2>&1 ||
        { tail -20 "$out/build.log" >&2; nf_die "cxlpmu: building cxl_pmu.ko for $kver failed (log: $out/build.log)"; }
    [ "$(modinfo -F vermagic "$src/drivers/perf/cxl_pmu.ko" | cut -d' ' -f1)" = "$kver" ] ||
        nf_die "cxlpmu: $src/drivers/perf/cxl_pmu.ko is not for $kver (modinfo -F vermagic)"
    # Linux's code, not ours: its warnings are reported, not fatal.
    n=$(grep -c 'warning:' "$out/build.log") || n=0
    [ "$n" = 0 ] || nf_log "cxl_pmu.ko: $n compiler warnings in Linux's source (log: $out/build.log)"
    strip --strip-debug -o "$out/cxl_pmu.ko" "$src/drivers/perf/cxl_pmu.ko"
    echo "$stamp" > "$out/stamp"
    printf 'cxl_pmu.ko built for %s from %s in %.1f s\n' "$kver" "${deb##*/}" \
        "$(awk -v a="$t0" -v b="$EPOCHREALTIME" 'BEGIN{print b-a}')" >> "$out/build.log"
    nf_log "$(tail -1 "$out/build.log") (log: $out/build.log)"
    echo "$out/cxl_pmu.ko"
}

# nf_perf_packages DEB : the library packages linux-perf's DEB depends on,
# a name a line (the first of alternatives; perl:any and python3:any, for
# perf's scripts, are not taken).
nf_perf_packages() {
    dpkg-deb -f "$1" Depends | tr ',' '\n' |
        sed -e 's/|.*//' -e 's/([^)]*)//' -e 's/[[:space:]]//g' | grep -v -e ':any$' -e '^$'
}

# nf_perf_part DEB : the second initramfs part, build/guest/perf/part.cpio.gz,
# made from linux-perf's DEB: /usr/bin/perf, the strace groups `perf trace`
# reads, and every library ldd lists for perf that the image does not hold
# already (the loader, libc, libcrypto, ... are in it); made again only
# when the package or that list of files changes.  Prints its path.
#
# The libraries come from the host, installed with nf_need from the
# package's own Depends (bookworm's libbabeltrace1, libdw1, libperl5.36,
# libpython3.11, libslang2, ...: the versions a bookworm-backports package
# is built against) rather than unpacked from downloaded .debs: they need
# more than those (libdebuginfod1 alone brings libcurl, gnutls, krb5, ldap,
# ...), and apt resolves that closure, which ldd then lists, where a
# download would have to resolve it again by hand.  perf itself is only
# unpacked, never installed.
nf_perf_part() {
    local deb=$1 dir=$NF_GUEST/perf pkg root deps have list f lib
    pkg=$dir/pkg
    if [ "$(cat "$pkg/.unpacked" 2>/dev/null)" != "${deb##*/}" ]; then
        rm -rf "$pkg"
        mkdir -p "$pkg"
        dpkg-deb -x "$deb" "$pkg" || nf_die "perf: dpkg-deb -x $deb failed"
        echo "${deb##*/}" > "$pkg/.unpacked"
    fi
    [ -x "$pkg/usr/bin/perf" ] || nf_die "perf: $deb has no usr/bin/perf"
    mapfile -t deps < <(nf_perf_packages "$deb")
    [ ${#deps[@]} -gt 0 ] || nf_die "perf: no Depends in the control file of $deb"
    nf_need "${deps[@]}"
    if ldd "$pkg/usr/bin/perf" | grep 'not found' >&2; then
        nf_die "perf: $pkg/usr/bin/perf has unresolved libraries (ldd) though ${deps[*]} are installed"
    fi
    # What the image holds (its cpio's names, ./ stripped), and so what
    # this part adds.
    have=$(gzip -dc "$NF_GUEST_INITRD" | cpio -it --quiet | sed 's|^\./||') ||
        nf_die "perf: cannot list $NF_GUEST_INITRD"
    list="package ${deb##*/}"$'\n'"usr/bin/perf"
    for lib in $(ldd "$pkg/usr/bin/perf" | awk '$2 == "=>" && $3 ~ /^\// { print $3 } $1 ~ /^\// { print $1 }'); do
        grep -qxF "${lib#/}" <<< "$have" || list+=$'\n'"${lib#/}"
    done
    if [ -f "$dir/part.cpio.gz" ] && [ "$(cat "$dir/part.list" 2>/dev/null)" = "$list" ]; then
        echo "$dir/part.cpio.gz"
        return 0
    fi
    root=$dir/root
    rm -rf "$root"
    mkdir -p "$root/usr/bin" "$root/usr/share/perf-core"
    cp "$pkg/usr/bin/perf" "$root/usr/bin/perf"
    cp -r "$pkg/usr/share/perf-core/strace" "$root/usr/share/perf-core/"
    while read -r f; do
        case $f in package\ *|usr/bin/perf) continue ;; esac
        mkdir -p "$root/$(dirname "$f")"
        cp -L "/$f" "$root/$f"
    done <<< "$list"
    find "$root" -exec touch -h -d @0 {} +
    (cd "$root" && find . -mindepth 1 | LC_ALL=C sort |
        cpio --quiet -o -H newc --reproducible -R 0:0) | gzip -n -6 > "$dir/part.cpio.gz.new" ||
        nf_die "perf: cpio of $root failed"
    mv "$dir/part.cpio.gz.new" "$dir/part.cpio.gz"
    echo "$list" > "$dir/part.list"
    nf_log "wrote $dir/part.cpio.gz ($(du -k "$dir/part.cpio.gz" | cut -f1) KiB: perf and $(($(wc -l <<< "$list") - 2)) libraries)"
    echo "$dir/part.cpio.gz"
}

# nf_perf_initrd : build/guest/initramfs-perf.cpio.gz, the image's initramfs
# with the perf part after it (the kernel unpacks concatenated cpio archives
# in turn), for `vm --perf`; made again when either changes.  Prints its
# path.  The image must exist (vm builds it first).
nf_perf_initrd() {
    local out=$NF_GUEST/initramfs-perf.cpio.gz kver ver deb part
    if [ "$NF_KERNEL_LINE" != 6.12 ]; then
        nf_die "vm --perf: perf is in the guest for the 6.12 kernel line only (Debian's linux-perf for $NF_KERNEL_LINE is sid's, built against sid's libraries)"
    fi
    if [ ! -f "$NF_GUEST_INITRD" ] || [ ! -f "$NF_GUEST/kernel-version" ]; then
        nf_die "vm --perf: no image in $NF_GUEST (scripts/nfabric image)"
    fi
    kver=$(cat "$NF_GUEST/kernel-version")
    ver=$(nf_cxlpmu_kernel_version "$kver")
    deb=$(nf_cxlpmu_fetch linux-perf "$ver")
    part=$(nf_perf_part "$deb")
    if [ ! -f "$out" ] || [ "$NF_GUEST_INITRD" -nt "$out" ] || [ "$part" -nt "$out" ]; then
        cat "$NF_GUEST_INITRD" "$part" > "$out.new" || nf_die "perf: cannot write $out.new"
        mv "$out.new" "$out"
    fi
    echo "$out"
}
