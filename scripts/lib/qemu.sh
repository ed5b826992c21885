# SPDX-License-Identifier: GPL-2.0-or-later
# Fetch Debian's QEMU 10.0 source, link the project's device files into it
# with small scripted edits to QEMU's own build files, and build
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
    include/hw/mem/nfabric_timing.h
    include/hw/mem/nfabric_trace.h
    tests/qtest/nfabric-qtest.h
    tests/qtest/nfabric-test.c
    tests/qtest/nfabric-migration-test.c
    tests/qtest/nfabric-fuzz-test.c
)
NF_MARK="NEURON-Fabric"

# Unpack Debian's QEMU 10.0 source (trixie) into $NF_QEMU_SRC.
nf_qemu_fetch() {
    [ -x "$NF_QEMU_SRC/configure" ] && return 0
    nf_need dpkg-dev
    nf_apt_sources
    mkdir -p "$NF_CACHE/qemu"
    local dir
    dir=$(find "$NF_CACHE/qemu" -maxdepth 1 -type d -name 'qemu-10.0*' | sort -V | tail -n 1)
    if [ -z "$dir" ]; then
        nf_log "fetching QEMU's source package (qemu/trixie, 10.0.x) into $NF_CACHE/qemu"
        (cd "$NF_CACHE/qemu" && apt-get source -qq qemu/trixie >"$NF_CACHE/qemu/fetch.log" 2>&1) ||
            nf_die "apt-get source qemu/trixie failed (log: $NF_CACHE/qemu/fetch.log)"
        dir=$(find "$NF_CACHE/qemu" -maxdepth 1 -type d -name 'qemu-10.0*' | sort -V | tail -n 1)
        [ -n "$dir" ] || nf_die "no qemu-10.0* directory after apt-get source"
    fi
    nf_log "copying $(basename "$dir") to $NF_QEMU_SRC"
    mkdir -p "$NF_BUILD"
    rm -rf "$NF_QEMU_SRC.tmp"
    cp -a "$dir" "$NF_QEMU_SRC.tmp"
    mv "$NF_QEMU_SRC.tmp" "$NF_QEMU_SRC"
}

# nf_qemu_edit FILE OLD NEW: replace the text OLD by NEW once; nothing to do
# if NEW is there already; fail loudly if neither is (QEMU's layout changed,
# or an older version of this edit is in the tree: re-run after
# `rm -rf build/qemu-src`).
nf_qemu_edit() {
    local file=$NF_QEMU_SRC/$1 old=$2 new=$3
    python3 - "$file" "$old" "$new" <<'PY' || nf_die "could not edit $1 (QEMU's layout changed?)"
import sys
path, old, new = sys.argv[1:4]
text = open(path).read()
if new in text:
    sys.exit(0)
if old not in text:
    sys.exit(1)
open(path, "w").write(text.replace(old, new, 1))
PY
}

# Link the project's files into QEMU's tree and hook them into its build.
nf_qemu_overlay() {
    local p
    for p in "${NF_QEMU_LINKS[@]}"; do
        if [ "$(readlink "$NF_QEMU_SRC/$p" 2>/dev/null)" != "$NF_ROOT/$p" ]; then
            rm -rf "${NF_QEMU_SRC:?}/$p"
            ln -s "$NF_ROOT/$p" "$NF_QEMU_SRC/$p"
        fi
    done
    nf_qemu_edit hw/mem/meson.build \
        "system_ss.add(when: 'CONFIG_SPARSE_MEM'" \
        "subdir('nfabric')  # $NF_MARK
system_ss.add(when: 'CONFIG_SPARSE_MEM'"
    nf_qemu_edit hw/mem/Kconfig "config CXL_MEM_DEVICE" \
        "# $NF_MARK
source nfabric/Kconfig

config CXL_MEM_DEVICE"
    nf_qemu_edit meson.build "  'hw/mem',
" "  'hw/mem',
  'hw/mem/nfabric',  # $NF_MARK
"
    nf_qemu_edit tests/qtest/meson.build \
        "(config_all_devices.has_key('CONFIG_CXL') ? ['cxl-test'] : [])" \
        "(config_all_devices.has_key('CONFIG_CXL') ? ['cxl-test'] : []) +  \\
  (config_all_devices.has_key('CONFIG_CXL_NFABRIC') ? ['nfabric-test', 'nfabric-migration-test', 'nfabric-fuzz-test'] : [])  # $NF_MARK"
    # A hook for subclasses: serve a CXL.mem access once the parent has
    # decoded HPA to DPA, instead of the parent's address_space_read/write
    # on its memory.  cxl-type3 itself leaves the hooks NULL and behaves as
    # before; cxl-neuron-fabric serves its accesses there, one call from the
    # fixed memory window instead of a second MemoryRegion dispatch
    # (docs/device.md).
    nf_qemu_edit include/hw/cxl/cxl_device.h "    bool (*set_cacheline)(CXLType3Dev *ct3d, uint64_t dpa_offset,
                          uint8_t *data);
};" "    bool (*set_cacheline)(CXLType3Dev *ct3d, uint64_t dpa_offset,
                          uint8_t *data);
    /*
     * $NF_MARK: if set, serve a decoded CXL.mem access of size bytes at
     * dpa_offset of as (data in memory order, as address_space_read/write
     * take it) instead of accessing as.
     */
    MemTxResult (*mem_read)(CXLType3Dev *ct3d, AddressSpace *as,
                            uint64_t dpa_offset, uint64_t *data,
                            unsigned size, MemTxAttrs attrs);
    MemTxResult (*mem_write)(CXLType3Dev *ct3d, AddressSpace *as,
                             uint64_t dpa_offset, uint64_t data,
                             unsigned size, MemTxAttrs attrs);
};"
    # CXL_TYPE3() has checked d at the top of both functions, so the class
    # is read without a second checked cast.
    nf_qemu_edit hw/mem/cxl_type3.c "MemTxResult cxl_type3_read(PCIDevice *d, hwaddr host_addr, uint64_t *data,
                           unsigned size, MemTxAttrs attrs)
{" "/* $NF_MARK: the class of a device CXL_TYPE3() has checked. */
static inline CXLType3Class *cxl_type3_class_of(CXLType3Dev *ct3d)
{
    return (CXLType3Class *)object_get_class(OBJECT(ct3d));
}

MemTxResult cxl_type3_read(PCIDevice *d, hwaddr host_addr, uint64_t *data,
                           unsigned size, MemTxAttrs attrs)
{"
    nf_qemu_edit hw/mem/cxl_type3.c "    return address_space_read(as, dpa_offset, attrs, data, size);
}" "    if (cxl_type3_class_of(ct3d)->mem_read) {  /* $NF_MARK */
        return cxl_type3_class_of(ct3d)->mem_read(ct3d, as, dpa_offset, data,
                                                  size, attrs);
    }
    return address_space_read(as, dpa_offset, attrs, data, size);
}"
    nf_qemu_edit hw/mem/cxl_type3.c "    return address_space_write(as, dpa_offset, attrs, &data, size);
}" "    if (cxl_type3_class_of(ct3d)->mem_write) {  /* $NF_MARK */
        return cxl_type3_class_of(ct3d)->mem_write(ct3d, as, dpa_offset, data,
                                                   size, attrs);
    }
    return address_space_write(as, dpa_offset, attrs, &data, size);
}"
    # Performance, behaviour unchanged: every CXL.mem access asks whether
    # the target is a cxl-type3; for a subclass (this device) QOM answers
    # with a type-table lookup and an ancestor walk each time, about a fifth
    # of the emulator's time per access.  Remember the last class that
    # answered yes (docs/device.md).
    nf_qemu_edit hw/cxl/cxl-host.c "static PCIDevice *cxl_cfmws_find_device(CXLFixedWindow *fw, hwaddr addr)
{" "/*
 * Is d a cxl-type3 or a subclass of it?  Asked on every CXL.mem access,
 * so the last class that answered yes is remembered (under the BQL).
 * $NF_MARK
 */
static bool cxl_is_type3(PCIDevice *d)
{
    static ObjectClass *type3_class;
    ObjectClass *oc = object_get_class(OBJECT(d));

    if (oc == type3_class) {
        return true;
    }
    if (object_class_dynamic_cast(oc, TYPE_CXL_TYPE3)) {
        type3_class = oc;
        return true;
    }
    return false;
}

static PCIDevice *cxl_cfmws_find_device(CXLFixedWindow *fw, hwaddr addr)
{"
    nf_qemu_edit hw/cxl/cxl-host.c "    if (object_dynamic_cast(OBJECT(d), TYPE_CXL_TYPE3)) {
        return d;
    }" "    if (cxl_is_type3(d)) {  /* $NF_MARK */
        return d;
    }"
    # nfabric-test replays the device's records with the timing model.
    nf_qemu_edit tests/qtest/meson.build "
qtests = {
" "
qtests = {
  'nfabric-test': files('../../hw/mem/nfabric/nfabric_timing.c',
                        '../../hw/mem/nfabric/nfabric_trace.c'),  # $NF_MARK
"
}

nf_qemu_configure() {
    [ -f "$NF_QEMU_BUILD/build.ninja" ] && return 0
    nf_log "configuring QEMU in $NF_QEMU_BUILD"
    mkdir -p "$NF_QEMU_BUILD"
    (cd "$NF_QEMU_BUILD" && "$NF_QEMU_SRC/configure" "${NF_QEMU_CONFIGURE_ARGS[@]}" \
        >"$NF_BUILD/qemu-configure.log" 2>&1) || {
        tail -30 "$NF_BUILD/qemu-configure.log" >&2
        rm -f "$NF_QEMU_BUILD/build.ninja"
        nf_die "QEMU configure failed (log: $NF_BUILD/qemu-configure.log)"
    }
}

# nf_qemu_ninja TARGET...: build with progress on the terminal.
nf_qemu_ninja() {
    local log=$NF_BUILD/qemu-ninja.log
    nf_log "building $* (log: $log)"
    if ! ninja -C "$NF_QEMU_BUILD" -j "$(nproc)" "$@" >"$log" 2>&1; then
        grep -E 'error|FAILED' "$log" | head -30 >&2
        nf_die "QEMU build failed (log: $log)"
    fi
}

nf_qemu_build() {
    nf_need $NF_PKGS_BUILD
    nf_qemu_fetch
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

nf_setup_main() {
    local quiet=0
    while [ $# -gt 0 ]; do
        case "$1" in
        -h|--help) nf_setup_usage; return 0 ;;
        --quiet) quiet=1 ;;
        *) echo "nfabric setup: unknown option \"$1\"" >&2; nf_setup_usage >&2; return 2 ;;
        esac
        shift
    done
    nf_require_root
    nf_time_start setup
    NF_QUIET=$quiet nf_qemu_build
    nf_need $NF_PKGS_RUN
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
    # shellcheck disable=SC2086
    exec "$NF_QEMU_BIN" $NF_FIRMWARE "$@"
}
