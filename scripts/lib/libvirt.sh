# shellcheck shell=bash
# SPDX-License-Identifier: GPL-2.0-or-later
# libvirt: `scripts/nfabric libvirt-xml` writes a domain for the same guest as
# `scripts/nfabric vm`, and the `libvirt` suite runs it under libvirtd.
#
# libvirt 11.3 (bookworm-backports) has no CXL XML: the CXL topology goes in
# <qemu:commandline>, the domain boots the kernel directly, and its serial
# console is a file; scripts/nfmachine/libvirt.py writes it.  The daemons are started here (no systemd as PID 1) and
# stopped again.  docs/guest.md has the details.

NF_LIBVIRT_DOMAIN=nfabric-guest
NF_LIBVIRT_URI=qemu:///system
NF_LIBVIRT_PKGS=(libvirt-daemon-driver-qemu/bookworm-backports
    libvirt-clients/bookworm-backports libvirt-daemon/bookworm-backports)

# nf_libvirt_xml_main [OPTIONS]: the domain XML, from the same description
# of the machine as `vm` (scripts/nfmachine/libvirt.py; --help).
nf_libvirt_xml_main() {
    local rc=0
    nf_machine libvirt-xml "$@" || rc=$?
    return "$rc"
}

# ---- installing and running libvirt ---------------------------------------

# libvirt-daemon-driver-qemu depends on "qemu-system | qemu-kvm"; the domain
# runs the project's own QEMU, so a local placeholder package provides them
# (Debian's qemu-system-x86 would drag in a second QEMU and newer seabios).
nf_libvirt_install() {
    if ! dpkg-query -W -f='${Status}' nfabric-qemu-system 2>/dev/null | grep -q "install ok installed" &&
       ! dpkg-query -W -f='${Status}' qemu-system-x86 2>/dev/null | grep -q "install ok installed"; then
        local d=$NF_BUILD/libvirt/placeholder
        rm -rf "$d"
        mkdir -p "$d/DEBIAN"
        cat > "$d/DEBIAN/control" <<'CTRL'
Package: nfabric-qemu-system
Version: 1.0
Architecture: all
Maintainer: NEURON-Fabric <nfabric@localhost>
Provides: qemu-system, qemu-kvm
Description: placeholder for libvirt: NEURON-Fabric runs its own QEMU build
 Satisfies libvirt-daemon-driver-qemu's dependency on a QEMU package; the
 domain's <emulator> is the project's build/qemu-build/qemu-system-x86_64.
CTRL
        dpkg-deb --build "$d" "$NF_BUILD/libvirt/nfabric-qemu-system.deb" >/dev/null ||
            nf_die "libvirt: cannot build the placeholder package"
        nf_apt_sources
        nf_log "installing libvirt (bookworm-backports) and the QEMU placeholder"
        mkdir -p "$NF_CACHE"
        DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends \
            "$NF_BUILD/libvirt/nfabric-qemu-system.deb" "${NF_LIBVIRT_PKGS[@]}" \
            > "$NF_CACHE/apt-install.log" 2>&1 ||
            nf_die "libvirt: apt-get install failed (log: $NF_CACHE/apt-install.log). $NF_DOWNLOAD_HINT"
    fi
    nf_need "${NF_LIBVIRT_PKGS[@]}"
    # QEMU as root, no relabelling or chown of the kernel/initrd.
    local conf=/etc/libvirt/qemu.conf
    if ! grep -q '^# nfabric: begin' "$conf" 2>/dev/null; then
        cat >> "$conf" <<'CONF'
# nfabric: begin (scripts/lib/libvirt.sh)
user = "root"
group = "root"
dynamic_ownership = 0
security_driver = "none"
# nfabric: end
CONF
    fi
}

NF_LIBVIRT_STARTED=()

# Start virtlogd and libvirtd unless a libvirtd already answers.
nf_libvirt_start() {
    local d=$NF_BUILD/libvirt n=0
    mkdir -p "$d"
    NF_LIBVIRT_STARTED=()
    if virsh -c "$NF_LIBVIRT_URI" list --all >/dev/null 2>&1; then
        return 0
    fi
    if [ ! -S /run/libvirt/virtlogd-sock ]; then
        rm -f "$d/virtlogd.pid"
        virtlogd -d -p "$d/virtlogd.pid" || return 1
        NF_LIBVIRT_STARTED+=("$d/virtlogd.pid")
    fi
    rm -f "$d/libvirtd.pid"
    libvirtd -d -p "$d/libvirtd.pid" || return 1
    NF_LIBVIRT_STARTED+=("$d/libvirtd.pid")
    until virsh -c "$NF_LIBVIRT_URI" list --all >/dev/null 2>&1; do
        n=$((n + 1))
        [ "$n" -gt 100 ] && return 1
        sleep 0.1
    done
}

# Stop the daemons this run started (by their PID files), newest first.
nf_libvirt_stop() {
    local i f pid n
    for ((i = ${#NF_LIBVIRT_STARTED[@]} - 1; i >= 0; i--)); do
        f=${NF_LIBVIRT_STARTED[$i]}
        pid=$(cat "$f" 2>/dev/null) || continue
        [ -n "$pid" ] || continue
        kill "$pid" 2>/dev/null || continue
        n=0
        while kill -0 "$pid" 2>/dev/null && [ "$n" -lt 100 ]; do
            sleep 0.1
            n=$((n + 1))
        done
        kill -0 "$pid" 2>/dev/null && return 1
    done
    NF_LIBVIRT_STARTED=()
    return 0
}

nf_libvirt_cleanup_domain() {
    virsh -c "$NF_LIBVIRT_URI" destroy "$NF_LIBVIRT_DOMAIN" >/dev/null 2>&1 || true
    virsh -c "$NF_LIBVIRT_URI" undefine "$NF_LIBVIRT_DOMAIN" >/dev/null 2>&1 || true
}

# nf_libvirt_cluster TAPFN: two domains of libvirt-xml --hosts 2 share one
# device and aggregate into it (nfabric-multihost agg); then removed.
nf_libvirt_cluster() {
    local tap=$1 d=$NF_BUILD/libvirt/cluster r name ok=0 waited p f ex
    local vs=(virsh -c "$NF_LIBVIRT_URI")
    rm -rf "$d"
    for r in 0 1; do
        "${vs[@]}" destroy "$NF_LIBVIRT_DOMAIN-$r" >/dev/null 2>&1 || true
        "${vs[@]}" undefine "$NF_LIBVIRT_DOMAIN-$r" >/dev/null 2>&1 || true
    done
    nf_libvirt_xml_main --hosts 2 --cpus 1 --mem 1G --run "nfabric-multihost agg" -o "$d" >/dev/null
    for r in 0 1; do
        name=$NF_LIBVIRT_DOMAIN-$r
        if "${vs[@]}" define "$d/$name.xml" >"$d/define-$r.log" 2>&1 &&
           "${vs[@]}" start "$name" >"$d/start-$r.log" 2>&1; then
            ok=$((ok + 1))
        fi
    done
    if [ "$ok" = 2 ]; then
        "$tap" OK "two domains (libvirt-xml --hosts 2) share one device: defined and started"
    else
        "$tap" FAIL "two shared-device domains: define/start failed: $(cat "$d"/start-*.log "$d"/define-*.log 2>/dev/null | tail -3 | tr '\n' ' ')"
    fi
    waited=0
    while [ "$waited" -lt 3000 ]; do
        [ "$(grep -l '^NFABRIC-EXIT=' "$d"/*-serial.log 2>/dev/null | wc -l)" = 2 ] && break
        sleep 0.1
        waited=$((waited + 1))
    done
    for r in 0 1; do
        name=$NF_LIBVIRT_DOMAIN-$r
        p=$(tr -d '\r' < "$d/$name-serial.log" 2>/dev/null | grep -c '^ok ' || true)
        f=$(tr -d '\r' < "$d/$name-serial.log" 2>/dev/null | grep -c '^not ok ' || true)
        ex=$(tr -d '\r' < "$d/$name-serial.log" 2>/dev/null | sed -n 's/^NFABRIC-EXIT=//p' | head -1)
        if [ "$ex" = 0 ] && [ "$p" -gt 0 ] && [ "$f" = 0 ]; then
            "$tap" OK "shared-device domain $r: $p checks passed (head $r of 2)"
        else
            "$tap" FAIL "shared-device domain $r: $p ok, $f not ok, exit '${ex:-none}' ($d/$name-serial.log)"
        fi
        "${vs[@]}" destroy "$name" >/dev/null 2>&1 || true
        "${vs[@]}" undefine "$name" >/dev/null 2>&1 || true
    done
}

# ---- libvirt: the guest checks in a libvirt-managed domain ----------------
nf_suite_libvirt() {
    local n=0 rc=0 d=$NF_BUILD/libvirt xml serial t0 st=""
    local vs=(virsh -c "$NF_LIBVIRT_URI")
    nf_lv_tap() {   # nf_lv_tap OK|FAIL text
        n=$((n + 1))
        if [ "$1" = OK ]; then echo "ok $n - libvirt: $2"; else echo "not ok $n - libvirt: $2"; rc=1; fi
    }
    nf_libvirt_install
    nf_image_main >&2
    mkdir -p "$d"
    xml=$d/domain.xml
    serial=$d/serial.log
    rm -f "$serial"
    nf_libvirt_xml_main --serial "$serial" --run nfabric-test -o "$xml"
    if nf_libvirt_start; then
        nf_lv_tap OK "$(libvirtd --version | awk '{print $NF}') libvirtd and virtlogd answer on $NF_LIBVIRT_URI"
    else
        nf_lv_tap FAIL "libvirtd did not start"
        nf_libvirt_stop
        return 1
    fi
    nf_libvirt_cleanup_domain
    if "${vs[@]}" define "$xml" >"$d/define.log" 2>&1; then
        nf_lv_tap OK "domain $NF_LIBVIRT_DOMAIN defined from $xml"
        t0=$EPOCHREALTIME
        if "${vs[@]}" start "$NF_LIBVIRT_DOMAIN" >"$d/start.log" 2>&1; then
            nf_lv_tap OK "domain started"
            # Wait for the guest's verdict on its serial console.
            local waited=0
            while [ "$waited" -lt 9000 ]; do
                grep -q '^NFABRIC-EXIT=' "$serial" 2>/dev/null && break
                st=$("${vs[@]}" domstate "$NF_LIBVIRT_DOMAIN" 2>/dev/null || true)
                [ "$st" = "shut off" ] && break
                sleep 0.1
                waited=$((waited + 1))
            done
            local ready exitc p f
            ready=$(tr -d '\r' < "$serial" 2>/dev/null | grep -m1 '^NFABRIC-READY' || true)
            exitc=$(tr -d '\r' < "$serial" 2>/dev/null | sed -n 's/^NFABRIC-EXIT=//p' | head -1)
            p=$(tr -d '\r' < "$serial" 2>/dev/null | grep -c '^ok ' || true)
            f=$(tr -d '\r' < "$serial" 2>/dev/null | grep -c '^not ok ' || true)
            if [ -n "$ready" ]; then
                nf_lv_tap OK "guest ready: ${ready#NFABRIC-READY }"
            else
                nf_lv_tap FAIL "guest never printed NFABRIC-READY (serial log $serial)"
            fi
            if [ "$exitc" = 0 ] && [ "$p" -gt 0 ] && [ "$f" -eq 0 ]; then
                nf_lv_tap OK "guest checks passed: $p ok, 0 not ok, in $(awk -v a="$t0" -v b="$EPOCHREALTIME" 'BEGIN{printf "%.1f", b-a}') s from start"
            else
                nf_lv_tap FAIL "guest checks: $p ok, $f not ok, exit status '${exitc:-none}' (serial log $serial)"
                tr -d '\r' < "$serial" 2>/dev/null | grep '^not ok ' | sed 's/^/# guest: /' || true
            fi
        else
            nf_lv_tap FAIL "domain did not start: $(tail -3 "$d/start.log" | tr '\n' ' ')"
        fi
    else
        nf_lv_tap FAIL "virsh define failed: $(tail -3 "$d/define.log" | tr '\n' ' ')"
    fi
    "${vs[@]}" destroy "$NF_LIBVIRT_DOMAIN" >/dev/null 2>&1 || true
    if "${vs[@]}" undefine "$NF_LIBVIRT_DOMAIN" >"$d/undefine.log" 2>&1 &&
       ! "${vs[@]}" dominfo "$NF_LIBVIRT_DOMAIN" >/dev/null 2>&1; then
        nf_lv_tap OK "domain destroyed and undefined"
    else
        nf_lv_tap FAIL "domain could not be removed: $(tail -2 "$d/undefine.log" | tr '\n' ' ')"
    fi
    nf_libvirt_cluster nf_lv_tap
    if [ ${#NF_LIBVIRT_STARTED[@]} -eq 0 ]; then
        nf_lv_tap OK "libvirtd was already running: left running"
    elif nf_libvirt_stop; then
        nf_lv_tap OK "daemons stopped"
    else
        nf_lv_tap FAIL "a daemon did not stop"
    fi
    return $rc
}
