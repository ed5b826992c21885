# shellcheck shell=bash
# SPDX-License-Identifier: GPL-2.0-or-later
# The guest driver nfabric.ko (guest/kernel/, docs/driver.md): its build
# against the guest kernel's Debian headers (used by scripts/lib/image.sh)
# and the `driver` test suite.

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

# nf_driver_ready_checks LOG WANT_DRIVER : TAP lines about the READY line.
nf_driver_ready_checks() {
    local log=$1 want=$2 ready
    ready=$(grep -m1 -E '^NFABRIC-(READY|NOT-READY)' "$log" || true)
    echo "# $ready"
    case "$ready" in
    NFABRIC-READY*"via=cxl create-region"*) echo "ok - the region was created by cxl create-region (ndctl 81)" ;;
    *) echo "not ok - the region was not created by cxl create-region: ${ready:-no READY line}" ;;
    esac
    case "$ready" in
    NFABRIC-READY*" bind=daxctl "*) echo "ok - daxctl bound the dax device to device_dax" ;;
    *) echo "not ok - daxctl did not bind the dax device: ${ready:-no READY line}" ;;
    esac
    case "$ready" in
    *" driver=$want") echo "ok - READY line reports driver=$want" ;;
    *) echo "not ok - READY line does not report driver=$want: ${ready:-no READY line}" ;;
    esac
}

# A guest shell snippet: a TAP line on what libnfabric used for the registers.
nf_driver_access_check() {
    printf '%s' "r=\$(nfabricctl info 2>&1 | sed -n 's/^registers: //p'); case \"\$r\" in \"$1\"*) echo \"ok - libnfabric reaches the registers through: \$r\";; *) echo \"not ok - libnfabric should use $1, uses: \${r:-nothing (nfabricctl info failed)}\"; false;; esac"
}

# A guest shell snippet: the whole kernel log, as "kmsg: " lines.
NF_DRIVER_KMSG='dmesg | sed "s/^/kmsg: /"'

# A guest shell snippet: nfabric.ko and libnfabric on a device whose
# Register Locator names no NEURON-Fabric block refuse it, saying why.
# shellcheck disable=SC2016  # the guest's shell expands these
NF_DRIVER_NOREGLOC='rc=0
insmod "/lib/modules/$(cat /etc/nfabric/kernel-version)/extra/nfabric.ko" || rc=1
sleep 1
m=$(dmesg | grep "nfabric:.*Register Locator names no NEURON-Fabric block")
if [ -n "$m" ]; then echo "ok - nfabric.ko refuses a device whose Register Locator names no block: ${m#*] }"; else echo "not ok - nfabric.ko did not say it refused the device"; rc=1; fi
if [ -e /sys/class/nfabric/nfabric0 ]; then echo "not ok - nfabric0 appeared for a device without the block"; rc=1; else echo "ok - no nfabric0 for it"; fi
out=$(nfabricctl info 2>&1); s=$?
case "$out" in *"names no NEURON-Fabric block"*) if [ $s != 0 ]; then echo "ok - libnfabric (no driver) refuses it: $(echo "$out" | head -n 1)"; else echo "not ok - nfabricctl info succeeded"; rc=1; fi;; *) echo "not ok - libnfabric did not refuse it: $out"; rc=1;; esac
dmesg | sed "s/^/kmsg: /"
exit $rc'

# nf_driver_kmsg_check LOG WHAT : a TAP line: the guest's kernel log (dumped
# as "kmsg: " lines at the end of the run) holds no BUG, Oops, WARNING or
# "Bad page" line.
nf_driver_kmsg_check() {
    local log=$1 what=$2 n bad
    n=$(grep -c '^kmsg: ' "$log" || true)
    bad=$(grep -E '^kmsg: .*(BUG:|kernel BUG|Oops|WARNING|Bad page)' "$log" || true)
    if [ "$n" -gt 0 ] && [ -z "$bad" ]; then
        echo "ok - $what: the guest's kernel log ($n lines) has no BUG, Oops, WARNING or Bad page line"
    else
        echo "not ok - $what: the guest's kernel log ($n lines) has $(grep -c . <<<"$bad") BUG, Oops, WARNING or Bad page lines"
        head -20 <<<"$bad" | sed 's/^/#   /'
        return 1
    fi
}

# ---- driver: nfabric.ko, and the guest checks through it (three boots) ----
nf_suite_driver() {
    local log=$NF_BUILD/test-logs/driver-console.log rc=0 cmd
    mkdir -p "$(dirname "$log")"
    # The guest checks first: the driver checks unbind the device at the end
    # (which removes the region).
    # shellcheck disable=SC2016  # the guest's shell expands $? and $a
    cmd="$(nf_driver_access_check "driver /dev/nfabric")"'; a=$?
NFABRIC_ACCESS=driver nfabric-test; b=$?
nfabric-drvtest; c=$?
'"$NF_DRIVER_KMSG"'
[ $a = 0 ] && [ $b = 0 ] && [ $c = 0 ]'
    nf_guest_run "$log" "$cmd" || rc=$?
    grep -E '^(ok|not ok|#|1\.\.|summary:)' "$log" || true
    nf_driver_ready_checks "$log" nfabric0
    nf_driver_kmsg_check "$log" "driver checks" || rc=1
    # A second boot: the region onlined as System RAM (this changes the guest).
    log=$NF_BUILD/test-logs/driver-sysram-console.log
    nf_guest_run "$log" "nfabric-drvtest --only sysram,dmesg; c=\$?; $NF_DRIVER_KMSG; exit \$c" || rc=$?
    grep -E '^(ok|not ok|#|summary:)' "$log" || true
    nf_driver_kmsg_check "$log" "System RAM" || rc=1
    # A third: two devices, no region at boot; then an interleaved region.
    log=$NF_BUILD/test-logs/driver-interleave-console.log
    nf_guest_run "$log" "nfabric-drvtest --only interleave,dmesg; c=\$?; $NF_DRIVER_KMSG; exit \$c" \
        --devices 2 --append nfabric.region=none || rc=$?
    grep -E '^(ok|not ok|#|summary:)' "$log" || true
    nf_driver_kmsg_check "$log" "interleaved region" || rc=1
    # A fourth: a device whose Register Locator names no controller block
    # (x-register-locator=off, as before 1.6): the driver and the library
    # refuse it and say why.
    log=$NF_BUILD/test-logs/driver-noregloc-console.log
    nf_guest_run "$log" "$NF_DRIVER_NOREGLOC" --append nfabric.driver=0 \
        --device-props x-register-locator=off || rc=$?
    grep -E '^(ok|not ok|#)' "$log" || true
    # Rounds across two heads of one shared device (scripts/nfabric cluster).
    local dir=$NF_BUILD/test-logs/driver-cluster r crc=0
    nf_cluster_main --hosts 2 --dir "$dir" --timeout 300 \
        --run "nfabric-drvtest --only multihost" > "$dir.log" 2>&1 || crc=$?
    for r in 0 1; do
        grep -E '^(ok|not ok)' "$dir/host$r.log" 2>/dev/null ||
            echo "not ok - cluster host $r printed no check (see $dir/host$r.log)"
    done
    if [ "$crc" -ne 0 ]; then
        echo "not ok - scripts/nfabric cluster --hosts 2 failed (status $crc, see $dir.log)"
        rc=1
    fi
    return $rc
}

# ---- fallback: the guest checks without the driver (sysfs resource0) ------
nf_suite_fallback() {
    local log=$NF_BUILD/test-logs/fallback-console.log rc=0 cmd
    mkdir -p "$(dirname "$log")"
    # shellcheck disable=SC2016  # the guest's shell expands $? and $a
    cmd="$(nf_driver_access_check "resource0 (no driver)")"'; a=$?
NFABRIC_ACCESS=resource0 nfabric-test; b=$?
[ $a = 0 ] && [ $b = 0 ]'
    nf_guest_run "$log" "$cmd" --append nfabric.driver=0 || rc=$?
    grep -E '^(ok|not ok|#|1\.\.|summary:)' "$log" || true
    nf_driver_ready_checks "$log" none
    return $rc
}

# ---- pybind: the Python binding's integer arguments (host, no VM) ---------
nf_suite_pybind() {
    local rc=0
    nf_need python3-numpy
    nf_ddp_py -m nfabric.argcheck || rc=1
    echo "# waits end when the head fails: the state truncated under waiting ranks"
    nf_ddp_py -m nfabric.failcheck || rc=1
    echo "# libnfabric.so's exported symbols: versioned (guest/lib/libnfabric.sym)"
    nf_libnfabric_symbols || rc=1
    return $rc
}

# nf_libnfabric_symbols: every symbol libnfabric.so exports is one of
# libnfabric.sym's, under the version node LIBNFABRIC_1, and each of those
# is exported (objdump -T: what a program linked against it records).
nf_libnfabric_symbols() {
    local so=$NF_HOST_BUILD/guest/libnfabric.so want got unversioned
    want=$(sed -n 's/^\t\(nfabric_[a-z0-9_]*\);$/\1/p' "$NF_ROOT/guest/lib/libnfabric.sym" | sort)
    got=$(objdump -T "$so" | awk '$2 == "g" && $4 != "*UND*" && $NF ~ /^nfabric_/ {print $(NF-1), $NF}' | sort -k2)
    unversioned=$(objdump -T "$so" | awk '$2 == "g" && $4 != "*UND*" && $(NF-1) != "LIBNFABRIC_1" {print $NF}')
    nf_tap "$([ -n "$want" ] && [ "$(awk '{print $2}' <<<"$got")" = "$want" ] && echo 0 || echo 1)" \
        "libnfabric.so exports exactly libnfabric.sym's $(wc -l <<<"$want") symbols (the controller model linked in stays local)"
    nf_tap "$([ -z "$unversioned" ] && [ -n "$got" ] && ! awk '{print $1}' <<<"$got" | grep -qv '^LIBNFABRIC_1$' && echo 0 || echo 1)" \
        "each is versioned LIBNFABRIC_1 (objdump -T)${unversioned:+; not: $unversioned}"
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
nf_suite_driver72() {
    local out=$NF_BUILD/test-logs/driver72 kpkg kver root ko vm lic cc rc=0
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
    cc=$(sed -n 's/^CONFIG_CC_VERSION_TEXT="\([^ "]*\).*/\1/p' "$root/usr/src/linux-headers-$kver/.config")
    if [ -n "$cc" ] && nf_sid_root_run "$root" "$cc" --version > "$out/cc.log" 2>&1; then
        echo "ok - the sid root has linux-headers-$kver and the compiler they name: $(head -1 "$out/cc.log")"
    else
        echo "not ok - the sid root lacks the compiler linux-headers-$kver name ('$cc'; $out/cc.log)"
        rc=1
    fi
    if ! ko=$(nf_driver_build "$kver" "$out/kmod" 2> "$out/build.err"); then
        cat "$out/build.err"
        echo "not ok - nfabric.ko builds for $kver with W=1 and no warning ($out/kmod/build.log)"
        return 1
    fi
    echo "ok - nfabric.ko builds for $kver with W=1 and no warning ($(tail -1 "$out/kmod/build.log"))"
    if grep -q 'undefined!' "$out/kmod/build.log"; then
        echo "not ok - modpost: a symbol nfabric.ko uses is not exported by $kver"
        rc=1
    else
        echo "ok - modpost: every symbol nfabric.ko uses is exported by $kver (its Module.symvers)"
    fi
    vm=$(modinfo -F vermagic "$ko")
    lic=$(modinfo -F license "$ko")
    case "$vm" in
    "$kver "*) echo "ok - vermagic is $vm" ;;
    *) echo "not ok - vermagic is '$vm', not $kver"; rc=1 ;;
    esac
    if [ "$lic" = GPL ]; then
        echo "ok - license GPL"
    else
        echo "not ok - license '$lic'"
        rc=1
    fi
    # The kernel's own style check over the module's sources (the user-space
    # test in tests/driver/ is QEMU-style C, not kernel code).
    local cp files=()
    cp=$(nf_checkpatch)
    mapfile -t files < <(cd "$NF_ROOT/guest/kernel" && ls ./*.c ./*.h uapi/*.h compat/*.h)
    if (cd "$NF_ROOT/guest/kernel" && perl "$cp" --no-tree --terse --show-types -f "${files[@]}") > "$out/checkpatch.log" 2>&1 &&
       ! grep -qv '^total: 0 errors, 0 warnings' "$out/checkpatch.log"; then
        echo "ok - checkpatch.pl (Linux 6.12's) over guest/kernel (${#files[@]} files): no error, no warning"
    else
        echo "not ok - checkpatch.pl over guest/kernel found something ($out/checkpatch.log):"
        grep -v '^total: 0 errors' "$out/checkpatch.log" | head -20 | nf_comment
        rc=1
    fi
    return $rc
}
