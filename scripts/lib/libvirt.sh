# shellcheck shell=bash
# SPDX-License-Identifier: GPL-2.0-or-later
# libvirt: `scripts/nfabric libvirt-xml` writes a domain for the same guest as
# `scripts/nfabric vm`, and the `libvirt` suite runs it under libvirtd.
#
# libvirt 11.3 (bookworm-backports) has no CXL XML: the CXL topology goes in
# <qemu:commandline>, the domain boots the kernel directly, and its serial
# console is a file; scripts/nfmachine/libvirt.py writes it.  The suite
# (scripts/nfmachine/libvirt_suite.py) starts the daemons (no systemd as
# PID 1) and stops them again.  docs/guest.md has the details.

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

# ---- libvirt: the guest checks in a libvirt-managed domain ----------------
# scripts/nfmachine/libvirt_suite.py: the daemons started and stopped, the
# domain and the two shared-device domains defined, run and removed.
nf_suite_libvirt() {
    nf_libvirt_install
    nf_image_main >&2
    nf_machine libvirt-suite
}
