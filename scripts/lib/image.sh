# shellcheck shell=bash
# SPDX-License-Identifier: GPL-2.0-or-later
# `scripts/nfabric image`: the guest image, from Debian packages alone.
#
#   build/guest/vmlinuz             bookworm-backports linux-image-6.12.*-amd64
#   build/guest/initramfs.cpio.gz   busybox-static, the CXL/dax modules,
#                                   nfabric.ko (guest/kernel/, built against
#                                   the kernel's Debian headers: driver.sh),
#                                   Linux's cxl_pmu.ko (from the kernel's
#                                   linux-source package: cxlpmu.sh),
#                                   ndctl 81's cxl + daxctl with their
#                                   libraries (built from trixie's source:
#                                   ndctl.sh), the guest programs,
#                                   guest/init/init
#
# Downloads go to $NF_CACHE/debs; the kernel package is unpacked once per
# version under build/guest/kernel/.  The initramfs is rewritten only when
# its content changed.  docs/guest.md describes the image.

NF_GUEST=$NF_BUILD/guest
NF_GUEST_KERNEL=$NF_GUEST/vmlinuz
NF_GUEST_INITRD=$NF_GUEST/initramfs.cpio.gz
# Modules the init loads, in this order (their dependencies come first).
NF_GUEST_MODULES="cxl_acpi cxl_pci cxl_mem cxl_port dax device_dax dax_cxl
    9pnet_virtio 9p virtio_net"
# Modules outside the module tree, /lib/nfabric/NAME.ko (insmod them; no
# dependencies but built-in ones): kmem (device memory as System RAM) would
# be auto-loaded and take the region's dax device first if depmod knew it.
NF_GUEST_MODULES_EXTRA="kmem"
# Guest programs copied from the host build.
# Static guest programs, relative to build/host/; each goes to /usr/bin.
NF_GUEST_PROGRAMS="guest/nfabricctl guest/nfabric-bench guest/nfabric-membind guest/nfabric-wake tests/guest/nfabric-test tests/guest/nfabric-multihost tests/driver/nfabric-drvtest tests/guest/nfabric-lifecycle-check guest/train/static/nfabric-train"

nf_image_usage() {
    cat <<'USAGE'
usage: scripts/nfabric image [--force]

Builds build/guest/vmlinuz and build/guest/initramfs.cpio.gz from Debian
packages (kernel and its headers from bookworm-backports, busybox-static,
ndctl 81 built from trixie's source), the driver nfabric.ko (guest/kernel/)
and the guest programs (build/host/guest/, build/host/tests/).  Repeatable: only what changed is
rebuilt.  --force unpacks the kernel again and rewrites the initramfs.
USAGE
}

# The kernel package name (linux-image-6.12.N+debV-amd64), from the
# bookworm-backports metapackage; offline, the newest one in the cache.
nf_image_kernel_pkg() {
    local pkg cache=$NF_GUEST/kernel-package
    # Another kernel line (NFABRIC_KERNEL) comes from sid: versions.sh.
    if [ "$NF_KERNEL_LINE" != 6.12 ]; then
        nf_versions_kernel_pkg
        return 0
    fi
    # apt-cache takes a second: reuse the answer until apt's cache changes.
    if [ -s "$cache" ] && [ "$cache" -nt /var/cache/apt/pkgcache.bin ] &&
       [ "$cache" -nt /var/lib/apt/lists ]; then
        cat "$cache"
        return 0
    fi
    pkg=$(apt-cache depends linux-image-amd64/bookworm-backports 2>/dev/null |
          awk '$1 == "Depends:" && $2 ~ /^linux-image-6\.12\./ { print $2; exit }') || pkg=""
    if [ -z "$pkg" ]; then
        pkg=$(nf_newest_file "$NF_CACHE/debs" 'linux-image-6.12.*-amd64_*.deb')
        pkg=${pkg##*/}
        pkg=${pkg%%_*}
    fi
    [ -n "$pkg" ] || nf_die "image: cannot resolve the bookworm-backports 6.12 kernel (apt-get update?)"
    mkdir -p "$NF_GUEST"
    echo "$pkg" > "$cache"
    echo "$pkg"
}

# nf_image_fetch PKG[/SUITE] | PKG=VERSION : the path of PKG's .deb in the
# cache (of that VERSION if one is given), downloaded once.
nf_image_fetch() {
    local spec=$1 name=${1%%[/=]*} ver="*" deb
    # apt-get download spells an epoch's colon %3a in the file name.
    case $spec in *=*) ver=${spec#*=}; ver=${ver/:/%3a} ;; esac
    mkdir -p "$NF_CACHE/debs"
    deb=$(nf_newest_file "$NF_CACHE/debs" "${name}_${ver}_*.deb")
    if [ -z "$deb" ]; then
        nf_log "downloading $spec"
        (cd "$NF_CACHE/debs" && apt-get download -q "$spec") > "$NF_CACHE/debs/download.log" 2>&1 ||
            nf_die "image: apt-get download $spec failed (log: $NF_CACHE/debs/download.log). $NF_DOWNLOAD_HINT"
        deb=$(nf_newest_file "$NF_CACHE/debs" "${name}_${ver}_*.deb")
        [ -n "$deb" ] || nf_die "image: $spec did not download into $NF_CACHE/debs (log: $NF_CACHE/debs/download.log)"
    fi
    echo "$deb"
}

# nf_image_module_file KDIR NAME : the .ko(.xz) of module NAME ('-' = '_').
nf_image_module_file() {
    local kdir=$1 name=$2 f
    f=$(find "$kdir/kernel" \( -name "$name.ko*" -o -name "${name//_/-}.ko*" \) -print -quit)
    echo "$f"
}

# nf_image_modules KDIR KVER ROOT : copy the modules and their dependencies
# (decompressed) into ROOT, write ROOT/etc/nfabric/modules (load order), and
# run depmod there.  Built-in ones (cxl_port, dax here) are skipped.
nf_image_modules() {
    local kdir=$1 kver=$2 root=$3 order=() seen=" " m
    local builtin="$kdir/modules.builtin"

    nf_image_add_module() {
        local name=${1//-/_} f dep rel
        case "$seen" in *" $name "*) return 0 ;; esac
        seen="$seen$name "
        if grep -q "/${name}.ko\$" "$builtin" 2>/dev/null ||
           grep -q "/${name//_/-}.ko\$" "$builtin" 2>/dev/null; then
            return 0
        fi
        f=$(nf_image_module_file "$kdir" "$name")
        if [ -z "$f" ] && [ ! -f "$builtin" ]; then
            # sid's 7.x packages ship no modules.builtin: a module that is
            # not in the tree is taken as built in, and said (the guest's
            # boot checks that the CXL stack came up).
            nf_log "image: module $name is not in $kdir: taken as built in (this kernel's packages ship no modules.builtin)"
            return 0
        fi
        [ -n "$f" ] || nf_die "image: module $name is neither built in nor in $kdir"
        for dep in $(modinfo -F depends "$f" | tr ',' ' '); do
            nf_image_add_module "$dep"
        done
        rel=${f#"$kdir/"}
        rel=${rel%.xz}
        mkdir -p "$root/lib/modules/$kver/$(dirname "$rel")"
        case "$f" in
        *.xz) xz -dc "$f" > "$root/lib/modules/$kver/$rel" ;;
        *) cp "$f" "$root/lib/modules/$kver/$rel" ;;
        esac
        order+=("$rel")
    }
    for m in $NF_GUEST_MODULES; do
        nf_image_add_module "$m"
    done
    mkdir -p "$root/etc/nfabric"
    printf '%s\n' "${order[@]}" > "$root/etc/nfabric/modules"
    mkdir -p "$root/lib/nfabric"
    for m in $NF_GUEST_MODULES_EXTRA; do
        local f
        f=$(nf_image_module_file "$kdir" "$m")
        [ -n "$f" ] || nf_die "image: module $m is not in $kdir"
        case "$f" in
        *.xz) xz -dc "$f" > "$root/lib/nfabric/$m.ko" ;;
        *) cp "$f" "$root/lib/nfabric/$m.ko" ;;
        esac
    done
    printf '%s\n' "${order[@]}" > "$root/lib/modules/$kver/modules.order"
    for m in modules.builtin modules.builtin.modinfo; do
        if [ -f "$kdir/$m" ]; then
            cp "$kdir/$m" "$root/lib/modules/$kver/"
        else
            : > "$root/lib/modules/$kver/$m"     # sid's 7.x: not shipped
        fi
    done
    depmod -b "$root" "$kver" || nf_die "image: depmod failed"
}

# nf_image_copy_elf ROOT FILE... : copy dynamic executables with the
# libraries ldd lists and the dynamic loader, at the same paths.
nf_image_copy_elf() {
    local root=$1 f lib
    shift
    for f in "$@"; do
        [ -x "$f" ] || nf_die "image: $f is missing"
        mkdir -p "$root$(dirname "$f")"
        cp -L "$f" "$root$f"
        for lib in $(ldd "$f" | awk '$2 == "=>" && $3 ~ /^\// { print $3 } $1 ~ /^\// { print $1 }'); do
            if [ ! -e "$root$lib" ]; then
                mkdir -p "$root$(dirname "$lib")"
                cp -L "$lib" "$root$lib"
            fi
        done
    done
}

# nf_image_machine ARGS...: the image made (a no-op when up to date), then
# nf_machine ARGS (a suite's boots); its status.
nf_image_machine() {
    nf_image_main >&2
    local rc=0
    nf_machine "$@" || rc=$?
    return "$rc"
}

nf_image_main() {
    local force=0 rc=0
    nf_flag_option image nf_image_usage --force force "$@" || rc=$?
    case $rc in 0) ;; 1) return 0 ;; *) return "$rc" ;; esac
    nf_require_root
    local t0=$EPOCHREALTIME
    nf_need "${NF_PKGS_IMAGE[@]}"
    nf_apt_sources

    # ---- kernel -----------------------------------------------------------
    local kpkg kver deb kroot
    kpkg=$(nf_image_kernel_pkg)
    kver=${kpkg#linux-image-}
    if [ "$NF_KERNEL_LINE" = 6.12 ]; then
        deb=$(nf_image_fetch "$kpkg/bookworm-backports")
    else
        deb=$(nf_sid_fetch "linux-binary-$kver")
    fi
    kroot=$NF_GUEST/kernel/$kver
    mkdir -p "$NF_GUEST"
    if [ "$force" = 1 ] || [ ! -f "$kroot/.unpacked" ] || [ "$deb" -nt "$kroot/.unpacked" ]; then
        nf_log "unpacking $(basename "$deb")"
        rm -rf "$kroot"
        mkdir -p "$kroot"
        if [ "$NF_KERNEL_LINE" = 6.12 ]; then
            dpkg-deb -x "$deb" "$kroot" || nf_die "image: dpkg-deb -x $deb failed"
        else
            nf_versions_kernel_unpack "$kver" "$kroot"
        fi
        touch "$kroot/.unpacked"
        # Older kernels' trees are no longer needed.
        find "$NF_GUEST/kernel" -mindepth 1 -maxdepth 1 ! -name "$kver" -exec rm -rf {} +
    fi
    local kdir=$kroot/lib/modules/$kver
    if ! cmp -s "$kroot/boot/vmlinuz-$kver" "$NF_GUEST_KERNEL"; then
        cp "$kroot/boot/vmlinuz-$kver" "$NF_GUEST_KERNEL"
    fi
    echo "$kver" > "$NF_GUEST/kernel-version.new"
    cmp -s "$NF_GUEST/kernel-version.new" "$NF_GUEST/kernel-version" ||
        mv "$NF_GUEST/kernel-version.new" "$NF_GUEST/kernel-version"
    rm -f "$NF_GUEST/kernel-version.new"

    # ---- the driver, against this kernel's headers -------------------------
    # (a newer line's in a sid root of its own: driver.sh, versions.sh).
    local kmod
    kmod=$(nf_driver_build "$kver")
    # Linux's CXL PMU driver, from the kernel's source package (cxlpmu.sh);
    # none for the 7.2 line.
    local pmuko
    pmuko=$(nf_cxlpmu_build "$kver")

    # ---- ndctl 81 (cxl, daxctl) ---------------------------------------------
    local ndctl_stage
    ndctl_stage=$(nf_ndctl_build)

    # ---- guest programs ---------------------------------------------------
    nf_host_build
    local p
    for p in $NF_GUEST_PROGRAMS; do
        [ -x "$NF_HOST_BUILD/$p" ] || nf_die "image: $NF_HOST_BUILD/$p was not built"
        readelf -l "$NF_HOST_BUILD/$p" 2>/dev/null | grep -q INTERP &&
            nf_die "image: $p is not a static binary"
    done

    # ---- root file system, from parts built once per input --------------
    local parts=$NF_GUEST/parts root=$NF_GUEST/rootfs
    [ "$force" = 1 ] && rm -rf "$parts"
    mkdir -p "$parts"
    # base: directories, busybox-static and its applet links, device nodes.
    if [ ! -f "$parts/base.done" ] || [ /bin/busybox -nt "$parts/base.done" ]; then
        readelf -l /bin/busybox | grep -q INTERP && nf_die "image: /bin/busybox is not busybox-static"
        rm -rf "$parts/base"
        mkdir -p "$parts/base"/{bin,sbin,usr/bin,usr/sbin,lib,lib64,proc,sys,dev,tmp,run,etc/nfabric,root,mnt}
        cp /bin/busybox "$parts/base/bin/busybox"
        local a
        for a in $(/bin/busybox --list-full); do
            [ -e "$parts/base/$a" ] || ln -s /bin/busybox "$parts/base/$a"
        done
        mknod -m 600 "$parts/base/dev/console" c 5 1 2>/dev/null || true
        mknod -m 666 "$parts/base/dev/null" c 1 3 2>/dev/null || true
        printf 'root:x:0:0:root:/root:/bin/sh\n' > "$parts/base/etc/passwd"
        printf 'root:x:0:\n' > "$parts/base/etc/group"
        touch "$parts/base.done"
    fi
    # modules: decompressed, with their dependencies and depmod's files.
    # Made again when the kernel or the list of modules changes.
    if [ ! -f "$parts/modules-$kver.done" ] || [ "$kroot/.unpacked" -nt "$parts/modules-$kver.done" ] ||
       [ "$(cat "$parts/modules-$kver.done")" != "loaded: $NF_GUEST_MODULES; extra: $NF_GUEST_MODULES_EXTRA" ]; then
        rm -rf "$parts"/modules-*
        mkdir -p "$parts/modules-$kver"
        nf_image_modules "$kdir" "$kver" "$parts/modules-$kver"
        echo "loaded: $NF_GUEST_MODULES; extra: $NF_GUEST_MODULES_EXTRA" > "$parts/modules-$kver.done"
    fi
    # ndctl: cxl and daxctl with the libraries ldd lists and the loader.
    if [ ! -f "$parts/ndctl.done" ] || [ "$ndctl_stage/.done" -nt "$parts/ndctl.done" ]; then
        rm -rf "$parts/ndctl"
        mkdir -p "$parts/ndctl"
        nf_ndctl_install "$ndctl_stage" "$parts/ndctl"
        touch "$parts/ndctl.done"
    fi
    rm -rf "$root"
    mkdir -p "$root"
    cp -a "$parts/base/." "$parts/modules-$kver/." "$parts/ndctl/." "$root/"
    for p in $NF_GUEST_PROGRAMS; do
        cp "$NF_HOST_BUILD/$p" "$root/usr/bin/${p##*/}"
    done
    install -m 755 "$NF_ROOT/guest/init/init" "$root/init"
    # The driver: /init loads it after the CXL modules (nfabric.driver=0: not).
    mkdir -p "$root/lib/modules/$kver/extra"
    cp "$kmod" "$root/lib/modules/$kver/extra/nfabric.ko"
    # cxl_pmu.ko: /init loads it before nfabric.ko (nfabric.cxl_pmu=0: not).
    [ -z "$pmuko" ] || cp "$pmuko" "$root/lib/modules/$kver/extra/cxl_pmu.ko"
    echo "$kver" > "$root/etc/nfabric/kernel-version"

    # ---- initramfs: rewritten only when its content changed ---------------
    local cpio=$NF_GUEST/initramfs.cpio sum
    # Fixed mtimes: the same content gives the same archive.
    find "$root" -exec touch -h -d @0 {} +
    (cd "$root" && find . -mindepth 1 | LC_ALL=C sort |
        cpio --quiet -o -H newc --reproducible -R 0:0) > "$cpio.new" ||
        nf_die "image: cpio failed"
    sum=$(sha256sum < "$cpio.new" | cut -d' ' -f1)
    if [ "$force" = 1 ] || [ ! -f "$NF_GUEST_INITRD" ] ||
       [ "$sum" != "$(cat "$NF_GUEST/initramfs.sha256" 2>/dev/null)" ]; then
        gzip -n -6 < "$cpio.new" > "$NF_GUEST_INITRD.new"
        mv "$NF_GUEST_INITRD.new" "$NF_GUEST_INITRD"
        echo "$sum" > "$NF_GUEST/initramfs.sha256"
        nf_log "wrote $NF_GUEST_INITRD ($(du -k "$NF_GUEST_INITRD" | cut -f1) KiB)"
    else
        nf_log "initramfs unchanged"
    fi
    rm -f "$cpio.new"
    nf_log "image: kernel $kver, $NF_GUEST_KERNEL, $NF_GUEST_INITRD"
    printf 'image: built in %.1f s\n' "$(awk -v a="$t0" -v b="$EPOCHREALTIME" 'BEGIN{print b-a}')" >&2
}

# nf_image_ensure [ARGS]: build the image (nf_image_main ARGS) if it is
# missing (used by vm, demo, tests).
nf_image_ensure() {
    if [ ! -f "$NF_GUEST_KERNEL" ] || [ ! -f "$NF_GUEST_INITRD" ]; then
        nf_image_main "$@" >&2
    fi
}
