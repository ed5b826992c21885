/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * NEURON-Fabric CXL Type-3 memory device.
 *
 * A QOM subclass of cxl-type3 whose CXL.mem accesses pass through a
 * path-select table: each enabled window of device memory goes to the FP32
 * path (plain memory), to G-Binary sign-count aggregation or to G-Ternary
 * gated aggregation (the engine in nfabric_engine.c).  Every access is
 * accounted by the timing shim (nfabric_timing.c).
 *
 * How the CXL.mem path is intercepted: the parent decodes HPA to DPA (its
 * HDM decoders) and then calls its class's mem_read/mem_write hooks, which
 * this device sets (qemu-patches/0003; cxl-type3 itself leaves them NULL
 * and accesses its memory as before).  So a guest CXL.mem access that
 * takes the fixed memory window's I/O path reaches nfabric_mem_read/write
 * with its DPA, and the controller serves it from the volatile backend's
 * RAM.  The parent's own accesses to the memory do not pass there:
 * sanitize and secure erase memset the RAM directly, and set_cacheline
 * (poison clear) is overridden below to write the RAM directly.  None of
 * them counts.
 *
 * The direct map and the map protocol are in cxl_nfabric_map.c.
 *
 * Locking: the fixed memory window (where CXL.mem accesses enter) and the
 * register block are I/O regions with global locking, so every access and
 * register write runs under the BQL.  A head of a shared device
 * (shared-state=FILE, docs/multihost.md) also shares its window table and
 * rounds with other QEMU processes; the controller takes the state file's
 * process-shared robust locks for those.  docs/registers.md is the
 * register specification.
 */

#include "qemu/osdep.h"
#include "qemu/log.h"
#include "qemu/bitops.h"
#include "qemu/host-utils.h"
#include "qapi/error.h"
#include "qemu/error-report.h"
#include "qapi/visitor.h"
#include "hw/qdev-properties.h"
#include "hw/resettable.h"
#include "migration/vmstate.h"
#include "migration/blocker.h"
#include "system/hostmem.h"
#include "hw/mem/cxl_nfabric.h"
#include "hw/cxl/cxl_host.h"
#include "trace.h"
#include "system/system.h"
#include <sys/file.h>

/* ---- hooks of the controller model ---------------------------------- */

/*
 * The device's own stores to its RAM (the I/O path and the traps of the
 * direct map: FP32 windows, counter areas, plain memory with the direct
 * map off, a window clear): what QEMU does after a store to RAM from
 * device code (address_space_write's invalidate_and_set_dirty), through
 * the cache over the backend (ram_cache): translated code of the range is
 * invalidated (TCG: code run from device memory, rewritten through a
 * window, runs new), and the range is marked dirty for migration and any
 * other dirty-memory client.  Stores the CPU makes through the direct map
 * are RAM stores and handled by QEMU itself.  A head of a shared device
 * sees only its own stores: another head's QEMU cannot reach this
 * process's translated code.
 */
static void nfabric_hook_dirty(void *opaque, uint64_t dpa, uint64_t len)
{
    CXLNFabricState *s = opaque;

    if (dpa < s->ctrl.ram_size && len <= s->ctrl.ram_size - dpa) {
        address_space_cache_invalidate(&s->ram_cache, dpa, len);
    }
}

static void nfabric_hook_guest_error(void *opaque, uint64_t off,
                                     uint32_t code, const char *what)
{
    trace_nfabric_reg_error(off, code);
    qemu_log_mask(LOG_GUEST_ERROR, "%s: register 0x%" PRIx64 ": %s (error %u)\n",
                  TYPE_CXL_NFABRIC, off, what, code);
}

static void nfabric_hook_reg_access(void *opaque, bool write, uint64_t off,
                                    unsigned size, uint64_t val)
{
    if (write) {
        trace_nfabric_reg_write(off, size, val);
    } else {
        trace_nfabric_reg_read(off, size, val);
    }
}

static void nfabric_hook_window(void *opaque, NFabricWinEvent ev,
                                unsigned win, uint32_t code)
{
    CXLNFabricState *s = opaque;
    const NFabricWindow *w = &s->ctrl.sh->win[win];
    const NFabricAggCfg *cfg = &s->ctrl.sh->cfg[win];

    switch (ev) {
    case NFABRIC_WIN_EV_ENABLE:
        trace_nfabric_window_enable(win, cfg->path < NFABRIC_NUM_PATHS ?
                                    nfabric_path_names[cfg->path] : "?",
                                    w->dpa_base, w->dpa_size, w->counters,
                                    cfg->width);
        nfabric_direct_update(s);
        break;
    case NFABRIC_WIN_EV_REJECT:
        trace_nfabric_window_reject(win, code);
        break;
    case NFABRIC_WIN_EV_DISABLE:
        trace_nfabric_window_disable(win);
        nfabric_direct_update(s);
        break;
    case NFABRIC_WIN_EV_CLEAR:
        trace_nfabric_window_clear(win);
        break;
    case NFABRIC_WIN_EV_CLEAR_BEGIN:
        break;
    }
}

static void nfabric_hook_record_failed(void *opaque)
{
    CXLNFabricState *s = opaque;

    error_report("%s: property 'record': writing '%s' failed (%s); "
                 "recording stopped, later accesses are counted in "
                 "'record-lost'", TYPE_CXL_NFABRIC, s->record_path,
                 ferror(s->ctrl.record) ? "write error" : "short write");
}

static void nfabric_hook_traps_changed(void *opaque)
{
    nfabric_direct_update(opaque);
}

static void nfabric_hook_state_failed(void *opaque, const char *why)
{
    CXLNFabricState *s = opaque;

    nfabric_direct_update(s);   /* everything traps, and is refused */
    nfabric_irq_kick(s);        /* IRQ_HEAD_STATUS.STATE_FAILED */
    error_report("%s: head %" PRIu32 " of the shared device '%s': %s; this "
                 "head refuses the device's accesses from now on "
                 "(HEAD_INFO.STATE_FAILED, error STATE)", TYPE_CXL_NFABRIC,
                 s->head, s->shared_path ? s->shared_path : "?", why);
}

static void nfabric_hook_rtl_mismatch(void *opaque, unsigned win,
                                      bool write, uint64_t off, unsigned len,
                                      const char *what)
{
    nfabric_rtl_mismatch(opaque, win, write, off, len, what);
}

static const NFabricCtrlOps nfabric_ctrl_ops = {
    .rtl_mismatch = nfabric_hook_rtl_mismatch,
    .record_failed = nfabric_hook_record_failed,
    .state_failed = nfabric_hook_state_failed,
    .traps_changed = nfabric_hook_traps_changed,
    .wait_begin = nfabric_hook_wait_begin,
    .wait_end = nfabric_hook_wait_end,
    .dirty = nfabric_hook_dirty,
    .staging_dirty = nfabric_hook_staging_dirty,
    .guest_error = nfabric_hook_guest_error,
    .reg_access = nfabric_hook_reg_access,
    .window = nfabric_hook_window,
};

/* ---- the CXL.mem path ------------------------------------------------ */

/*
 * A decoded access of size (1..8) bytes at dpa; *data and data hold the
 * bytes in memory order, as the parent's address_space_read/write take them.
 * The device has volatile memory only (realize refuses the rest): the
 * controller serves it from the backend's RAM.
 */
MemTxResult nfabric_mem_read(CXLType3Dev *ct3d, uint64_t dpa,
                             uint64_t *data, unsigned size, MemTxAttrs attrs)
{
    CXLNFabricState *s = container_of(ct3d, CXLNFabricState, parent_obj);

    *data = 0;
    if (size > sizeof(*data) ||
        !nfabric_ctrl_mem_access(&s->ctrl, dpa, (uint8_t *)data, size,
                                 false)) {
        return MEMTX_DECODE_ERROR;
    }
    return MEMTX_OK;
}

MemTxResult nfabric_mem_write(CXLType3Dev *ct3d, uint64_t dpa,
                              uint64_t data, unsigned size, MemTxAttrs attrs)
{
    CXLNFabricState *s = container_of(ct3d, CXLNFabricState, parent_obj);

    if (size > sizeof(data) ||
        !nfabric_ctrl_mem_access(&s->ctrl, dpa, (uint8_t *)&data, size,
                                 true)) {
        return MEMTX_DECODE_ERROR;
    }
    return MEMTX_OK;
}

/* Parent's poison-clear path: write the line to storage, never count it. */
static bool nfabric_set_cacheline(CXLType3Dev *ct3d, uint64_t dpa,
                                  uint8_t *data)
{
    CXLNFabricState *s = CXL_NFABRIC(ct3d);

    if (dpa > s->ctrl.ram_size || CXL_CACHE_LINE_SIZE > s->ctrl.ram_size - dpa) {
        return false;
    }
    memcpy(s->ctrl.ram + dpa, data, CXL_CACHE_LINE_SIZE);
    nfabric_hook_dirty(s, dpa, CXL_CACHE_LINE_SIZE);
    return true;
}

/* ---- registers ------------------------------------------------------- */

static uint64_t nfabric_reg_read(void *opaque, hwaddr off, unsigned size)
{
    CXLNFabricState *s = opaque;

    return nfabric_ctrl_reg_read(&s->ctrl, off, size);
}

static void nfabric_reg_write(void *opaque, hwaddr off, uint64_t val,
                              unsigned size)
{
    CXLNFabricState *s = opaque;

    nfabric_ctrl_reg_write(&s->ctrl, off, val, size);
    nfabric_irq_update(s);      /* a round completed, cleared, enabled */
    nfabric_events_update(s);   /* an enable given up (PEER) */
}

static const MemoryRegionOps nfabric_reg_ops = {
    .read = nfabric_reg_read,
    .write = nfabric_reg_write,
    NFABRIC_ANY_ACCESS,
};

static uint64_t nfabric_dvs_read(void *opaque, hwaddr off, unsigned size)
{
    CXLNFabricState *s = opaque;

    return nfabric_ctrl_dvs_read(&s->ctrl, off, size);
}

static void nfabric_dvs_write(void *opaque, hwaddr off, uint64_t val,
                              unsigned size)
{
    CXLNFabricState *s = opaque;

    nfabric_ctrl_dvs_write(&s->ctrl, off, val, size);
}

static const MemoryRegionOps nfabric_dvs_ops = {
    .read = nfabric_dvs_read,
    .write = nfabric_dvs_write,
    NFABRIC_ANY_ACCESS,
};

/*
 * The designated vendor specific register block that the Register Locator
 * DVSEC names (cxl-type3 places it in BAR0, at NFABRIC_DVS_OFFSET): its
 * header page, then the register block, which is also at BAR0 +
 * NFABRIC_REGS_OFFSET.  Called by the parent's realize.
 */
static MemoryRegion *nfabric_vendor_regs(CXLType3Dev *ct3d)
{
    CXLNFabricState *s = CXL_NFABRIC(ct3d);
    Object *owner = OBJECT(s);

    QEMU_BUILD_BUG_ON(NFABRIC_DVS_OFFSET != CXL_T3_VENDOR_REGS_OFFSET);
    QEMU_BUILD_BUG_ON(NFABRIC_DVS_REGS + NFABRIC_REGS_SIZE > NFABRIC_DVS_SIZE);
    memory_region_init_io(&s->regs, owner, &nfabric_reg_ops, s,
                          "cxl-neuron-fabric-regs", NFABRIC_REGS_SIZE);
    if (!s->register_locator) {
        return NULL;    /* a device as before 1.6, to test its refusal */
    }
    memory_region_init(&s->dvs, owner, "cxl-neuron-fabric-dvs",
                       NFABRIC_DVS_SIZE);
    memory_region_init_io(&s->dvs_header, owner, &nfabric_dvs_ops, s,
                          "cxl-neuron-fabric-dvs-header", NFABRIC_DVS_REGS);
    memory_region_init_alias(&s->dvs_regs, owner, "cxl-neuron-fabric-dvs-regs",
                             &s->regs, 0, NFABRIC_REGS_SIZE);
    memory_region_add_subregion(&s->dvs, 0, &s->dvs_header);
    memory_region_add_subregion(&s->dvs, NFABRIC_DVS_REGS, &s->dvs_regs);
    return &s->dvs;
}

/* ---- lifecycle ------------------------------------------------------- */

static const char *const nfabric_attach_how[] = {
    [NFABRIC_ATTACH_CREATED] = "created",
    [NFABRIC_ATTACH_REINIT] = "re-initialised (no head was alive)",
    [NFABRIC_ATTACH_JOINED] = "joined",
    [NFABRIC_ATTACH_REJOINED] = "rejoined (this head was attached before)",
};

/*
 * Open the record file for this device alone: a regular file is locked
 * (flock, so that two devices, in this process or another, never write one
 * file), then truncated, then the header.
 */
static FILE *nfabric_record_open(CXLNFabricState *s, Error **errp)
{
    struct stat st;
    FILE *f;
    int fd = open(s->record_path, O_WRONLY | O_CREAT | O_CLOEXEC, 0644);

    if (fd < 0) {
        error_setg_errno(errp, errno, "%s: property 'record': cannot create "
                         "'%s'", TYPE_CXL_NFABRIC, s->record_path);
        return NULL;
    }
    /* Only a regular file: /dev/null or a pipe may serve several. */
    if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode) &&
        flock(fd, LOCK_EX | LOCK_NB) != 0) {
        error_setg(errp, "%s: property 'record': '%s' is in use by another "
                   "device (each device needs its own record file)",
                   TYPE_CXL_NFABRIC, s->record_path);
        close(fd);
        return NULL;
    }
    f = fdopen(fd, "wb");
    if (!f || (ftruncate(fd, 0) != 0 && errno != EINVAL)) {
        error_setg_errno(errp, errno, "%s: property 'record': cannot open "
                         "'%s'", TYPE_CXL_NFABRIC, s->record_path);
        f ? fclose(f) : close(fd);
        return NULL;
    }
    if (nfabric_record_write_header(f, &s->tparams,
                                   NFABRIC_RECORD_F_DEPENDENT) != 0) {
        error_setg(errp, "%s: property 'record': cannot write '%s'",
                   TYPE_CXL_NFABRIC, s->record_path);
        fclose(f);
        return NULL;
    }
    return f;
}

/* Close the record; report if anything of it was lost. */
static void nfabric_record_close(CXLNFabricState *s)
{
    if (!s->ctrl.record) {
        return;
    }
    if (fclose(s->ctrl.record) != 0 && !s->ctrl.record_failed) {
        s->ctrl.record_failed = true;
        s->ctrl.record_lost++;
    }
    if (s->ctrl.record_failed) {
        error_report("%s: property 'record': '%s' is incomplete: writing it "
                     "failed, %" PRIu64 " records lost", TYPE_CXL_NFABRIC,
                     s->record_path, s->ctrl.record_lost);
    }
    s->ctrl.record = NULL;
}

/* QEMU does not unrealize devices when it quits: close the record then. */
static void nfabric_exit_notify(Notifier *n, void *data)
{
    CXLNFabricState *s = container_of(n, CXLNFabricState, exit_notifier);

    nfabric_record_close(s);
}

/* Properties of a head of a shared device, before the parent realizes. */
static bool nfabric_check_shared_props(CXLNFabricState *s, Error **errp)
{
    CXLType3Dev *ct3d = CXL_TYPE3(s);

    if (!s->shared_path) {
        if (s->head != 0 || s->heads != 1) {
            error_setg(errp, "%s: properties 'head' and 'heads' need "
                       "'shared-state' (the shared device's state file)",
                       TYPE_CXL_NFABRIC);
            return false;
        }
        return true;
    }
    if (s->heads < 1 || s->heads > NFABRIC_MAX_HEADS) {
        error_setg(errp, "%s: property 'heads' must be 1..%u, not %" PRIu32,
                   TYPE_CXL_NFABRIC, NFABRIC_MAX_HEADS, s->heads);
        return false;
    }
    if (s->head >= s->heads) {
        error_setg(errp, "%s: property 'head' must be 0..%" PRIu32
                   " (heads=%" PRIu32 "), not %" PRIu32, TYPE_CXL_NFABRIC,
                   s->heads - 1, s->heads, s->head);
        return false;
    }
    if (ct3d->hostvmem &&
        (!object_dynamic_cast(OBJECT(ct3d->hostvmem),
                              TYPE_MEMORY_BACKEND_FILE) ||
         !ct3d->hostvmem->share)) {
        error_setg(errp, "%s: property 'shared-state' needs "
                   "'volatile-memdev' to be a memory-backend-file with "
                   "share=on that every head maps", TYPE_CXL_NFABRIC);
        return false;
    }
    return true;
}

/* Attach this head to the shared state (after the parent realized). */
static bool nfabric_attach_shared(CXLNFabricState *s, Error **errp)
{
    NFabricAttach a = {
        .path = s->shared_path,
        .head = s->head,
        .heads = s->heads,
        .mem_size = memory_region_size(s->vmr),
    };
    NFabricAttachHow how;
    struct stat st;
    char err[1024], mem_path[48];
    int fd = memory_region_get_fd(s->vmr);

    if (fd < 0 || fstat(fd, &st) != 0) {
        error_setg(errp, "%s: property 'volatile-memdev': cannot identify "
                   "the backend's file", TYPE_CXL_NFABRIC);
        return false;
    }
    a.mem_dev = st.st_dev;
    a.mem_ino = st.st_ino;
    /* Claim the memory file for this device state (another description). */
    snprintf(mem_path, sizeof(mem_path), "/proc/self/fd/%d", fd);
    a.mem_path = mem_path;
    if (nfabric_shared_attach(&a, &s->shared, &s->shared_fd, &how,
                              err, sizeof(err)) != 0) {
        error_setg(errp, "%s: %s", TYPE_CXL_NFABRIC, err);
        return false;
    }
    error_setg(&s->migration_blocker, "%s: head %" PRIu32 " of the shared "
               "device '%s' cannot migrate: the other heads' hosts share its "
               "state", TYPE_CXL_NFABRIC, s->head, s->shared_path);
    if (migrate_add_blocker(&s->migration_blocker, errp) < 0) {
        nfabric_shared_detach(s->shared, s->shared_fd, s->head);
        s->shared = NULL;
        return false;
    }
    /*
     * A head that had been attached to this state before (its last process
     * died, whether another head noticed it first or not, or detached)
     * rejoins: what docs/multihost.md calls it.
     */
    if (how == NFABRIC_ATTACH_JOINED && s->shared->head[s->head].attaches > 1) {
        how = NFABRIC_ATTACH_REJOINED;
    }
    nfabric_ctrl_use_shared(&s->ctrl, s->shared, s->head);
    trace_nfabric_head_attach(s->head, s->heads, s->shared_path,
                              nfabric_attach_how[how]);
    return true;
}

static void nfabric_realize(PCIDevice *pdev, Error **errp)
{
    ERRP_GUARD();
    CXLNFabricClass *nc = CXL_NFABRIC_GET_CLASS(pdev);
    CXLNFabricState *s = CXL_NFABRIC(pdev);
    CXLType3Dev *ct3d = CXL_TYPE3(pdev);
    const NFabricTimingParamInfo *bad;
    FILE *record = NULL;

    bad = nfabric_timing_check_info(&s->tparams);
    if (bad) {
        error_setg(errp, "%s: property '%s' must be in %" PRIu32 "..%" PRIu32
                   ", not %" PRIu32, TYPE_CXL_NFABRIC, bad->name, bad->min,
                   bad->max, nfabric_timing_param_get(&s->tparams, bad));
        return;
    }
    if (!ct3d->hostvmem) {
        error_setg(errp, "%s: property 'volatile-memdev' is required",
                   TYPE_CXL_NFABRIC);
        return;
    }
    if (ct3d->hostmem || ct3d->hostpmem || ct3d->dc.num_regions ||
        ct3d->dc.host_dc) {
        error_setg(errp, "%s: only 'volatile-memdev' memory is supported; "
                   "drop 'memdev', 'persistent-memdev', 'num-dc-regions' "
                   "and 'volatile-dc-memdev'", TYPE_CXL_NFABRIC);
        return;
    }
    if (!nfabric_direct_resolve(s, errp) ||
        !nfabric_check_shared_props(s, errp)) {
        return;
    }
    if (memory_region_size(host_memory_backend_get_memory(ct3d->hostvmem)) %
        NFABRIC_CXL_CAPACITY_ALIGN) {
        error_setg(errp, "%s: property 'volatile-memdev': %" PRIu64 " bytes "
                   "is not a multiple of 256 MiB, the unit of CXL memory "
                   "capacity (Linux would not use the device)",
                   TYPE_CXL_NFABRIC,
                   memory_region_size(host_memory_backend_get_memory(
                       ct3d->hostvmem)));
        return;
    }

    if (!nfabric_rtl_load(s, errp)) {
        return;
    }
    if (s->record_path && !(record = nfabric_record_open(s, errp))) {
        nfabric_rtl_unload(s);
        return;
    }

    nc->parent_realize(pdev, errp);
    if (*errp) {
        if (record) {
            fclose(record);
        }
        nfabric_rtl_unload(s);
        return;
    }

    s->vmr = host_memory_backend_get_memory(ct3d->hostvmem);
    /* The parent's address space over the backend: one cache of it all. */
    if (address_space_cache_init(&s->ram_cache, &ct3d->hostvmem_as, 0,
                                 memory_region_size(s->vmr), true) <
        memory_region_size(s->vmr)) {
        address_space_cache_destroy(&s->ram_cache);
        error_setg(errp, "%s: property 'volatile-memdev': the backend is "
                   "not one contiguous block of RAM", TYPE_CXL_NFABRIC);
        if (record) {
            fclose(record);
        }
        nfabric_rtl_unload(s);
        nc->parent_exit(pdev);
        return;
    }
    nfabric_ctrl_init(&s->ctrl, memory_region_get_ram_ptr(s->vmr),
                      memory_region_size(s->vmr), &s->tparams,
                      &nfabric_ctrl_ops, s);
    s->ctrl.record = record;
    if (!nfabric_staging_init(s, errp) ||
        (s->shared_path && !nfabric_attach_shared(s, errp))) {
        nfabric_staging_exit(s);
        if (record) {
            fclose(record);
            s->ctrl.record = NULL;
        }
        address_space_cache_destroy(&s->ram_cache);
        nfabric_rtl_unload(s);
        nc->parent_exit(pdev);
        return;
    }
    nfabric_rtl_start(s);
    nfabric_mbox_scope(s);
    if (record) {
        s->exit_notifier.notify = nfabric_exit_notify;
        qemu_add_exit_notifier(&s->exit_notifier);
    }

    /*
     * cxl-type3 does not register its memory for migration; the counters
     * and the data live there, so this device does.
     */
    vmstate_register_ram(s->vmr, DEVICE(s));

    /* s->regs was made by nfabric_vendor_regs(), in the parent's realize. */
    memory_region_add_subregion(&ct3d->cxl_cstate.crb.component_registers,
                                NFABRIC_REGS_OFFSET, &s->regs);
    nfabric_direct_init(s);
    nfabric_map_start(s);       /* joins before the first map is made */
    nfabric_irq_start(s);
    nfabric_cpmu_start(s);
    nfabric_direct_update(s);   /* a shared head: another's windows */
}

static void nfabric_exit(PCIDevice *pdev)
{
    CXLNFabricClass *nc = CXL_NFABRIC_GET_CLASS(pdev);
    CXLNFabricState *s = CXL_NFABRIC(pdev);
    CXLType3Dev *ct3d = CXL_TYPE3(pdev);

    memory_region_del_subregion(&ct3d->cxl_cstate.crb.component_registers,
                                &s->regs);
    vmstate_unregister_ram(s->vmr, DEVICE(s));
    nfabric_map_stop(s);
    nfabric_irq_stop(s);
    nfabric_cpmu_stop(s);
    if (s->shared) {
        migrate_del_blocker(&s->migration_blocker);
        nfabric_ctrl_use_shared(&s->ctrl, &s->ctrl.local, 0);
        nfabric_shared_detach(s->shared, s->shared_fd, s->head);
        s->shared = NULL;
    }
    if (s->ctrl.record) {
        qemu_remove_exit_notifier(&s->exit_notifier);
        nfabric_record_close(s);
    }
    nfabric_rtl_unload(s);
    nfabric_staging_exit(s);
    address_space_cache_destroy(&s->ram_cache);
    nc->parent_exit(pdev);
}

static void nfabric_reset_hold(Object *obj, ResetType type)
{
    CXLNFabricClass *nc = CXL_NFABRIC_GET_CLASS(obj);
    CXLNFabricState *s = CXL_NFABRIC(obj);

    if (nc->parent_phases.hold) {
        nc->parent_phases.hold(obj, type);
    }
    nfabric_ctrl_reset(&s->ctrl);
    nfabric_direct_update(s);
    nfabric_mbox_scope(s);      /* the parent's reset rebuilt the commands */
}

/* ---- migration ------------------------------------------------------- */

static int nfabric_post_load(void *opaque, int version_id)
{
    CXLNFabricState *s = opaque;

    if (nfabric_ctrl_post_load(&s->ctrl)) {
        return -EINVAL;
    }
    /*
     * The decoders and the window table came with the state: map again
     * (this device only; cxl_type3_update_direct_map() checks the whole
     * decoder path).  A host bridge loaded later starts uncommitted, so the
     * map is never wider than the decoders allow; the I/O path serves the
     * rest until the next commit.
     */
    nfabric_direct_update(s);
    cxl_type3_update_direct_map(CXL_TYPE3(s));
    return 0;
}

static const VMStateDescription vmstate_nfabric_window = {
    .name = "cxl-neuron-fabric/window",
    .version_id = 1,
    .minimum_version_id = 1,
    .fields = (const VMStateField[]) {
        VMSTATE_UINT64(dpa_base, NFabricWindow),
        VMSTATE_UINT64(dpa_size, NFabricWindow),
        VMSTATE_UINT64(counters, NFabricWindow),
        VMSTATE_UINT32(ctrl, NFabricWindow),
        VMSTATE_UINT32(threshold, NFabricWindow),
        VMSTATE_UINT32(error, NFabricWindow),
        VMSTATE_UINT32(reserved_codes, NFabricWindow),
        VMSTATE_UINT64(contrib_writes, NFabricWindow),
        VMSTATE_UINT64(contrib_bytes, NFabricWindow),
        VMSTATE_END_OF_LIST()
    },
};

static const VMStateDescription vmstate_nfabric_round = {
    .name = "cxl-neuron-fabric/round",
    .version_id = 1,
    .minimum_version_id = 1,
    .fields = (const VMStateField[]) {
        VMSTATE_UINT32(seq, NFabricRound),
        VMSTATE_UINT32(done, NFabricRound),
        VMSTATE_UINT32(contrib, NFabricRound),
        VMSTATE_UINT32(incomplete, NFabricRound),
        VMSTATE_END_OF_LIST()
    },
};

/* Register version 1.7: the posted doorbells' STAGE_OFF (if one is set). */
static bool nfabric_posted_needed(void *opaque)
{
    CXLNFabricState *s = opaque;

    for (unsigned i = 0; i < NFABRIC_NUM_WINDOWS; i++) {
        if (s->ctrl.stage_off[i]) {
            return true;
        }
    }
    return false;
}

static const VMStateDescription vmstate_nfabric_posted = {
    .name = TYPE_CXL_NFABRIC "/posted",
    .version_id = 1,
    .minimum_version_id = 1,
    .needed = nfabric_posted_needed,
    .fields = (const VMStateField[]) {
        VMSTATE_UINT32_ARRAY(ctrl.stage_off, CXLNFabricState,
                             NFABRIC_NUM_WINDOWS),
        VMSTATE_END_OF_LIST()
    },
};

/* Register version 1.8: the interrupt's registers (if one is enabled). */
static bool nfabric_irq_needed(void *opaque)
{
    CXLNFabricState *s = opaque;

    return s->ctrl.irq_enable || s->ctrl.irq_status ||
           s->ctrl.irq_head_enable || s->ctrl.irq_head_status;
}

static const VMStateDescription vmstate_nfabric_irq = {
    .name = TYPE_CXL_NFABRIC "/irq",
    .version_id = 1,
    .minimum_version_id = 1,
    .needed = nfabric_irq_needed,
    .fields = (const VMStateField[]) {
        VMSTATE_UINT32(ctrl.irq_enable, CXLNFabricState),
        VMSTATE_UINT32(ctrl.irq_status, CXLNFabricState),
        VMSTATE_UINT32(ctrl.irq_head_enable, CXLNFabricState),
        VMSTATE_UINT32(ctrl.irq_head_status, CXLNFabricState),
        VMSTATE_UINT32_ARRAY(ctrl.irq_seq, CXLNFabricState,
                             NFABRIC_NUM_WINDOWS),
        VMSTATE_UINT8_ARRAY(ctrl.irq_seen, CXLNFabricState,
                            NFABRIC_NUM_WINDOWS),
        VMSTATE_BOOL(ctrl.irq_failed_seen, CXLNFabricState),
        VMSTATE_END_OF_LIST()
    },
};

/*
 * Only a device that is not shared migrates (a head of a shared device
 * adds a migration blocker), so its state is ctrl.local with one head.
 * The staging memory of posted windows is RAM of its own, migrated as RAM.
 */
static const VMStateDescription vmstate_nfabric = {
    .name = TYPE_CXL_NFABRIC,
    .version_id = 3,            /* 3: without the timing queue maxima */
    .minimum_version_id = 3,
    .post_load = nfabric_post_load,
    .fields = (const VMStateField[]) {
        VMSTATE_PCI_DEVICE(parent_obj.parent_obj, CXLNFabricState),
        /* The HDM decoders (and the rest of the CXL.cache/mem block). */
        VMSTATE_UINT32_ARRAY(parent_obj.cxl_cstate.crb.cache_mem_registers,
                             CXLNFabricState,
                             CXL2_COMPONENT_CM_REGION_SIZE >> 2),
        VMSTATE_STRUCT_ARRAY(ctrl.local.win, CXLNFabricState,
                             NFABRIC_NUM_WINDOWS, 1, vmstate_nfabric_window,
                             NFabricWindow),
        VMSTATE_STRUCT_ARRAY(ctrl.local.round, CXLNFabricState,
                             NFABRIC_NUM_WINDOWS, 1, vmstate_nfabric_round,
                             NFabricRound),
        VMSTATE_UINT64_ARRAY(ctrl.local.head[0].contrib_writes,
                             CXLNFabricState, NFABRIC_NUM_WINDOWS),
        VMSTATE_UINT64_ARRAY(ctrl.local.head[0].contrib_bytes,
                             CXLNFabricState, NFABRIC_NUM_WINDOWS),
        VMSTATE_UINT64_2DARRAY(ctrl.local.head[0].stats, CXLNFabricState,
                               NFABRIC_NUM_PATHS, NFABRIC_NUM_STATS),
        VMSTATE_UINT32(ctrl.last_error, CXLNFabricState),
        VMSTATE_UINT32(ctrl.error_count, CXLNFabricState),
        VMSTATE_UINT32(ctrl.head_select, CXLNFabricState),
        VMSTATE_UINT64_ARRAY(ctrl.timing.time_ps, CXLNFabricState,
                             NFABRIC_NUM_PATHS),
        VMSTATE_UINT64_ARRAY(ctrl.timing.exposed_ps, CXLNFabricState,
                             NFABRIC_NUM_PATHS),
        VMSTATE_UINT64_ARRAY(ctrl.timing.accesses, CXLNFabricState,
                             NFABRIC_NUM_PATHS),
        VMSTATE_UINT64(ctrl.timing.queued_ps, CXLNFabricState),
        VMSTATE_UINT64(ctrl.timing.link_busy_ps, CXLNFabricState),
        VMSTATE_UINT64(ctrl.timing.first_arrival_ps, CXLNFabricState),
        VMSTATE_UINT32(ctrl.timing.occ_saturated, CXLNFabricState),
        VMSTATE_UINT64(ctrl.timing.now_ps, CXLNFabricState),
        VMSTATE_UINT64(ctrl.timing.last_arrival_ps, CXLNFabricState),
        VMSTATE_UINT64(ctrl.timing.pipe_free_ps, CXLNFabricState),
        VMSTATE_UINT64(ctrl.timing.link_free_ps, CXLNFabricState),
        VMSTATE_END_OF_LIST()
    },
    .subsections = (const VMStateDescription * const []) {
        &vmstate_nfabric_posted,
        &vmstate_nfabric_irq,
        &vmstate_nfabric_cpmu,
        NULL
    },
};

/* ---- QOM -------------------------------------------------------------- */

static const Property nfabric_props[] = {
    DEFINE_PROP_UINT32("clock-mhz", CXLNFabricState, tparams.clock_mhz,
                       NFABRIC_T_DEFAULT_CLOCK_MHZ),
    DEFINE_PROP_UINT32("datapath-depth", CXLNFabricState, tparams.depth,
                       NFABRIC_T_DEFAULT_DEPTH),
    DEFINE_PROP_UINT32("service-ns", CXLNFabricState, tparams.service_ns,
                       NFABRIC_T_DEFAULT_SERVICE_NS),
    DEFINE_PROP_UINT32("link-mbps", CXLNFabricState, tparams.link_mbps,
                       NFABRIC_T_DEFAULT_LINK_MBPS),
    DEFINE_PROP_STRING("record", CXLNFabricState, record_path),
    DEFINE_PROP_STRING("shared-state", CXLNFabricState, shared_path),
    DEFINE_PROP_UINT32("head", CXLNFabricState, head, 0),
    DEFINE_PROP_UINT32("heads", CXLNFabricState, heads, 1),
    DEFINE_PROP_ON_OFF_AUTO("direct-map", CXLNFabricState, direct_map,
                            ON_OFF_AUTO_AUTO),
    DEFINE_PROP_BOOL("direct-map-fp32", CXLNFabricState, direct_fp32, false),
    DEFINE_PROP_BOOL("posted", CXLNFabricState, posted, true),
    DEFINE_PROP_STRING("rtl", CXLNFabricState, rtl),
    DEFINE_PROP_STRING("rtl-lib", CXLNFabricState, rtl_lib),
    DEFINE_PROP_BOOL("x-register-locator", CXLNFabricState, register_locator,
                     true),
};

/* Read-only figures for qom-get: each one reads a register. */
typedef struct NFabricFigure {
    const char *name;
    uint32_t reg;
    unsigned size;
    const char *desc;
} NFabricFigure;

static const NFabricFigure nfabric_figures[] = {
#define PATH_FIGURES(p, pname) \
    { "timing-" pname "-ps", \
      NFABRIC_REG_T_PATH_FIELD(p, NFABRIC_T_PATH_TIME_PS), 8, \
      "modelled time of the path's accesses, ps" }, \
    { "timing-" pname "-exposed-ps", \
      NFABRIC_REG_T_PATH_FIELD(p, NFABRIC_T_PATH_EXPOSED_PS), 8, \
      "part of that time the datapath added, ps" }, \
    { "timing-" pname "-accesses", NFABRIC_REG_T_ACCESSES_PATH(p), 8, \
      "accesses the timing model accounted on the path" }, \
    { "stats-" pname "-reads", \
      NFABRIC_REG_STATS_PATH(p, NFABRIC_STATS_READS), 8, "reads" }, \
    { "stats-" pname "-writes", \
      NFABRIC_REG_STATS_PATH(p, NFABRIC_STATS_WRITES), 8, "writes" }, \
    { "stats-" pname "-read-bytes", \
      NFABRIC_REG_STATS_PATH(p, NFABRIC_STATS_READ_BYTES), 8, "bytes read" }, \
    { "stats-" pname "-write-bytes", \
      NFABRIC_REG_STATS_PATH(p, NFABRIC_STATS_WRITE_BYTES), 8, \
      "bytes written" }
    /* Every path of the register contract, by its name. */
#define PATH_ROW(n, p, pname) PATH_FIGURES(p, pname),
    NFABRIC_PATHS(PATH_ROW)
#undef PATH_ROW
#undef PATH_FIGURES
    { "timing-total-ps", NFABRIC_REG_T_TOTAL_PS, 8,
      "modelled time of all accesses, ps" },
    { "timing-exposed-ppm", NFABRIC_REG_T_EXPOSED_PPM, 4,
      "exposed datapath overhead, parts per million" },
    { "timing-runtime-ps", NFABRIC_REG_T_RUNTIME_PS, 8,
      "modelled runtime, first arrival to last completion, ps" },
    { "timing-queued-ps", NFABRIC_REG_T_QUEUED_PS, 8,
      "sum of waits for the link, ps" },
    { "timing-link-busy-ps", NFABRIC_REG_T_LINK_BUSY_PS, 8,
      "sum of link occupancy, ps" },
};

static void nfabric_get_record_lost(Object *obj, Visitor *v, const char *name,
                                    void *opaque, Error **errp)
{
    CXLNFabricState *s = CXL_NFABRIC(obj);
    uint64_t val = s->ctrl.record_lost;

    visit_type_uint64(v, name, &val, errp);
}

static void nfabric_get_direct_mapped(Object *obj, Visitor *v,
                                      const char *name, void *opaque,
                                      Error **errp)
{
    CXLType3Dev *ct3d = CXL_TYPE3(obj);
    bool val = false;

    for (unsigned i = 0; i < CXL_HDM_DECODER_COUNT; i++) {
        val |= ct3d->direct_alias[i].container != NULL;
    }
    visit_type_bool(v, name, &val, errp);
}

static void nfabric_get_figure(Object *obj, Visitor *v, const char *name,
                               void *opaque, Error **errp)
{
    CXLNFabricState *s = CXL_NFABRIC(obj);
    const NFabricFigure *f = opaque;
    uint64_t val = 0;

    if (!nfabric_ctrl_reg_peek(&s->ctrl, f->reg, f->size, &val)) {
        error_setg(errp, "%s: figure '%s' is not readable", TYPE_CXL_NFABRIC,
                   name);
        return;
    }
    visit_type_uint64(v, name, &val, errp);
}

static void nfabric_add_figures(ObjectClass *oc)
{
    for (size_t i = 0; i < ARRAY_SIZE(nfabric_figures); i++) {
        const NFabricFigure *f = &nfabric_figures[i];
        g_autofree char *desc = g_strdup_printf("%s (read-only)", f->desc);

        object_class_property_add(oc, f->name, "uint64", nfabric_get_figure,
                                  NULL, NULL, (void *)f);
        object_class_property_set_description(oc, f->name, desc);
    }
}

/*
 * QEMU 10.1 made the class data const (TypeInfo.class_init); the device
 * builds on 10.0 and on 10.2 (docs/versions.md).
 */
#if QEMU_VERSION_MAJOR > 10 || \
    (QEMU_VERSION_MAJOR == 10 && QEMU_VERSION_MINOR >= 1)
#define NFABRIC_CLASS_DATA const void
#else
#define NFABRIC_CLASS_DATA void
#endif

static void nfabric_class_init(ObjectClass *oc, NFABRIC_CLASS_DATA *data)
{
    DeviceClass *dc = DEVICE_CLASS(oc);
    PCIDeviceClass *pc = PCI_DEVICE_CLASS(oc);
    CXLType3Class *cvc = CXL_TYPE3_CLASS(oc);
    CXLNFabricClass *nc = CXL_NFABRIC_CLASS(oc);
    ResettableClass *rc = RESETTABLE_CLASS(oc);

    nc->parent_realize = pc->realize;
    nc->parent_exit = pc->exit;
    pc->realize = nfabric_realize;
    pc->exit = nfabric_exit;
    pc->vendor_id = NFABRIC_PCI_VENDOR_ID;
    pc->device_id = NFABRIC_PCI_DEVICE_ID;
    resettable_class_set_parent_phases(rc, NULL, nfabric_reset_hold, NULL,
                                       &nc->parent_phases);
    cvc->set_cacheline = nfabric_set_cacheline;
    cvc->mem_read = nfabric_mem_read;
    cvc->mem_write = nfabric_mem_write;
    cvc->direct_region = nfabric_direct_region;
    cvc->vendor_regs = nfabric_vendor_regs;
    cvc->cpmu_regs = nfabric_cpmu_regs;
    /* The interrupt (cxl_nfabric_irq.c), then the CXL PMU's (_cpmu.c). */
    cvc->extra_msix_vectors = 2;

    dc->desc = "CXL Type-3 memory with NEURON-Fabric gradient aggregation";
    dc->vmsd = &vmstate_nfabric;
    device_class_set_props(dc, nfabric_props);
    object_class_property_set_description(oc, "clock-mhz",
        "timing model: controller clock in MHz (1..100000)");
    object_class_property_set_description(oc, "datapath-depth",
        "timing model: low-bit datapath depth in cycles (0..1024)");
    object_class_property_set_description(oc, "service-ns",
        "timing model: CXL service time per access in ns (0..1000000)");
    object_class_property_set_description(oc, "link-mbps",
        "timing model: link bandwidth in MB/s (1..10000000)");
    object_class_property_set_description(oc, "record",
        "file to record the access stream to, for nfabric-timing --replay");
    object_class_property_set_description(oc, "shared-state",
        "state file of a device shared by several hosts (one head each); "
        "needs a memory-backend-file,share=on volatile-memdev");
    object_class_property_set_description(oc, "head",
        "this head's index of the shared device (0..heads-1)");
    object_class_property_set_description(oc, "heads",
        "number of heads of the shared device (1..16)");
    object_class_property_set_description(oc, "direct-map",
        "map plain device memory into the CXL window as RAM where the "
        "decoders do not interleave; only the enabled windows trap and, on "
        "a shared head, all but its own ranges (auto: on unless record is "
        "set)");
    object_class_property_set_description(oc, "x-register-locator",
        "off: no vendor block in BAR0 and none named in the Register "
        "Locator DVSEC (registers only at BAR0 + 0x2000), as before 1.6; "
        "for testing software's refusal");
    object_class_property_set_description(oc, "direct-map-fp32",
        "with the direct map, map enabled FP32 windows directly too (their "
        "accesses are then not counted)");
    object_class_property_add(oc, "direct-mapped", "bool",
                              nfabric_get_direct_mapped, NULL, NULL, NULL);
    object_class_property_set_description(oc, "direct-mapped",
        "whether the CXL window maps device memory directly now "
        "(read-only)");
    nfabric_add_figures(oc);
    nfabric_rtl_class_init(oc);
    object_class_property_add(oc, "record-lost", "uint64",
                              nfabric_get_record_lost, NULL, NULL, NULL);
    object_class_property_set_description(oc, "record-lost",
        "records of the access stream not written because writing the "
        "record file failed (read-only)");
}

static const TypeInfo nfabric_info = {
    .name = TYPE_CXL_NFABRIC,
    .parent = TYPE_CXL_TYPE3,
    .instance_size = sizeof(CXLNFabricState),
    .class_size = sizeof(CXLNFabricClass),
    .class_init = nfabric_class_init,
};

static void nfabric_register_types(void)
{
    type_register_static(&nfabric_info);
}

type_init(nfabric_register_types)
