/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * NEURON-Fabric CXL Type-3 memory device: the direct map and this QEMU's
 * part of the map protocol (docs/device.md, docs/multihost.md "Direct
 * maps").  QEMU code, split from cxl_nfabric.c.
 *
 * It owns direct_view and its traps (the I/O regions over the ranges the
 * controller must see), their rebuild, the map protocol's thread and bottom
 * half and the BQL dropped while an enable waits for the other heads
 * (the controller's wait_begin/wait_end hooks), and the direct-map
 * property's resolution.  It may call the controller (nfabric_ctrl_*),
 * the shared state's map wait (nfabric_shared_map_wait), QEMU's memory,
 * thread and main-loop API, and cxl_nfabric.c's CXL.mem path
 * (nfabric_mem_read/write), which the traps take; the controller's
 * other halves of the protocol are in the pure-C model.
 *
 * The direct map (direct-map=on, the default unless record is set;
 * qemu-patches/0009): where the decoders from the fixed window to the
 * device are committed and not interleaved, the window maps direct_view
 * instead: the backend's RAM, accessed by the CPU like guest RAM, with an
 * I/O region (a trap) over each range whose accesses have semantics: every
 * enabled G-Binary/G-Ternary window's data range and counter area, and
 * FP32 windows unless direct-map-fp32=on.  On a head of a shared device
 * also every window another head is enabling, and the memory a fabric
 * manager did not let this head reach.  The traps are rebuilt in one memory
 * transaction whenever a window is enabled or disabled, when the memory
 * this head reaches changes, when its shared state fails and on reset,
 * under the BQL, before the access or register write that caused it
 * returns.  Another head's enable reaches this head through the map
 * protocol (docs/multihost.md, "Direct maps"): a thread waits for the
 * state's map_gen to move and schedules a bottom half, which rebuilds the
 * traps and acknowledges, so that the other head's enable returns only
 * once this head's guest can no longer reach the window's memory
 * directly.  While this head waits for the others in an enable of its own
 * it drops the BQL (hooks wait_begin/wait_end).  Plain memory mapped
 * so is byte-exact but not seen by the statistics, the timing model or
 * the record.
 *
 * It also owns the staging memory of posted windows (property posted,
 * register version 1.7): private RAM of the device's size, at the same
 * offsets as device memory, which the direct map puts over each posted
 * window's data range in place of a trap, so that this head's stores
 * and loads there run at memory speed; the controller's doorbells
 * (nfabric_posted.c) move data between it and the engine.
 */

#include "qemu/osdep.h"
#include "exec/target_page.h"
#include "exec/memory.h"
#include "migration/vmstate.h"
#include "qapi/error.h"
#include "hw/mem/cxl_nfabric.h"
#include "hw/mem/nfabric_mappings.h"
#include "trace.h"
#include "hw/core/cpu.h"
#include "qemu/main-loop.h"
#include "qemu/thread.h"

/* ---- the direct map ---------------------------------------------------- */

/* A trapped range of the direct map: the same path as the window's. */
static MemTxResult nfabric_trap_read(void *opaque, hwaddr addr,
                                     uint64_t *data, unsigned size,
                                     MemTxAttrs attrs)
{
    NFabricTrap *t = opaque;

    return nfabric_mem_read(&t->s->parent_obj, t->dpa + addr, data, size,
                            attrs);
}

static MemTxResult nfabric_trap_write(void *opaque, hwaddr addr,
                                      uint64_t data, unsigned size,
                                      MemTxAttrs attrs)
{
    NFabricTrap *t = opaque;

    return nfabric_mem_write(&t->s->parent_obj, t->dpa + addr, data, size,
                             attrs);
}

static const MemoryRegionOps nfabric_trap_ops = {
    .read_with_attrs = nfabric_trap_read,
    .write_with_attrs = nfabric_trap_write,
    NFABRIC_ANY_ACCESS,
};

MemoryRegion *nfabric_direct_region(CXLType3Dev *ct3d)
{
    CXLNFabricState *s = container_of(ct3d, CXLNFabricState, parent_obj);

    return s->direct ? &s->direct_view : NULL;
}

/*
 * Put a trap over every range the controller must see, as the window
 * table stands now; one transaction, so no access sees a half-built map.
 * Asking the controller may make a shared head's copy of the assignment
 * again, which calls back here (traps_changed): that call only asks for
 * one more pass.  Returns the map protocol's map_gen the new map covers.
 */
static uint32_t nfabric_direct_rebuild(CXLNFabricState *s)
{
    NFabricRange r[NFABRIC_MAX_TRAPS], m[NFABRIC_TRAP_MRS];
    NFabricRange st[NFABRIC_NUM_WINDOWS];
    uint64_t pg = qemu_target_page_size();
    unsigned n, i, nm = 0, ns = 0;
    uint32_t gen;

    if (s->direct_updating) {
        s->direct_again = true;
        return 0;
    }
    s->direct_updating = true;
    do {
        s->direct_again = false;
        gen = nfabric_ctrl_map_gen(&s->ctrl);
        n = nfabric_ctrl_trap_ranges(&s->ctrl, !s->direct_fp32, r);
    } while (s->direct_again);
    s->direct_updating = false;
    /* Each range: its first partial page, then the rest (NFABRIC_TRAP_MRS). */
    for (i = 0; i < n; i++) {
        uint64_t head = MIN(r[i].len, QEMU_ALIGN_UP(r[i].dpa, pg) - r[i].dpa);

        if (r[i].staging && ns < NFABRIC_NUM_WINDOWS) {
            /* A posted window's data: this head's staging, as RAM. */
            st[ns++] = r[i];
            continue;
        }
        if (head) {
            m[nm++] = (NFabricRange) { .dpa = r[i].dpa, .len = head };
        }
        if (r[i].len > head) {
            m[nm++] = (NFabricRange) { .dpa = r[i].dpa + head,
                                       .len = r[i].len - head };
        }
    }
    memory_region_transaction_begin();
    for (i = 0; i < NFABRIC_TRAP_MRS; i++) {
        NFabricTrap *t = &s->trap[i];

        if (t->mr.container) {
            memory_region_del_subregion(&s->direct_view, &t->mr);
        }
        if (i < nm) {
            t->dpa = m[i].dpa;
            memory_region_set_size(&t->mr, m[i].len);
            memory_region_add_subregion_overlap(&s->direct_view, m[i].dpa,
                                                &t->mr, 1);
        }
    }
    for (i = 0; s->posted && i < NFABRIC_NUM_WINDOWS; i++) {
        MemoryRegion *a = &s->staging_map[i];

        if (a->container) {
            memory_region_del_subregion(&s->direct_view, a);
        }
        if (i < ns) {
            memory_region_set_alias_offset(a, st[i].dpa);
            memory_region_set_size(a, st[i].len);
            memory_region_add_subregion_overlap(&s->direct_view, st[i].dpa,
                                                a, 1);
        }
    }
    memory_region_transaction_commit();
    trace_nfabric_direct_traps(nm);
    return gen;
}

void nfabric_direct_update(CXLNFabricState *s)
{
    bool outer = !s->direct_updating;
    uint32_t gen;

    if (!s->direct) {
        return;
    }
    gen = nfabric_direct_rebuild(s);
    if (outer && !current_cpu) {
        /*
         * At realize or reset, with no vCPU running: the map covers gen.
         * From a vCPU (this guest's own access or register write) the
         * other vCPUs may still hold the old map: the bottom half below
         * acknowledges after their pass.
         */
        nfabric_ctrl_map_ack(&s->ctrl, gen);
    }
}

/* ---- the map protocol (a shared head with the direct map) ------------ */

/*
 * Another head moved map_gen: rebuild the traps and acknowledge.  The
 * memory transaction's commit is synchronous under KVM (the old slot is
 * gone when it returns); under TCG each vCPU drops its TLB entries of the
 * old map at its next exit from translated code (docs/multihost.md).
 */
static void nfabric_map_bh(void *opaque)
{
    CXLNFabricState *s = opaque;
    uint32_t gen;

    if (!s->direct || s->direct_updating) {
        qemu_bh_schedule(s->map_bh);    /* again, once the update is done */
        return;
    }
    gen = nfabric_direct_rebuild(s);
    nfabric_ctrl_map_ack(&s->ctrl, gen);
    trace_nfabric_map_ack(s->head, gen);
}

/*
 * The controller waits for the other heads' maps: let the main loop run
 * meanwhile (this head's own map updates, QMP), as two heads enabling at
 * once must each answer the other.
 */
void nfabric_hook_wait_begin(void *opaque)
{
    CXLNFabricState *s = opaque;

    s->map_bql = bql_locked();
    if (s->map_bql) {
        s->map_waiting = true;  /* the event bottom half keeps out */
        bql_unlock();
    }
}

void nfabric_hook_wait_end(void *opaque)
{
    CXLNFabricState *s = opaque;

    if (s->map_bql) {
        bql_lock();
        s->map_waiting = false;
    }
}

/* Wait for map_gen to move; the bottom half does the rest under the BQL. */
static void *nfabric_map_thread(void *opaque)
{
    CXLNFabricState *s = opaque;
    uint32_t seen = nfabric_ctrl_map_gen(&s->ctrl);

    while (!qatomic_read(&s->map_stop)) {
        uint32_t now;

        nfabric_shared_map_wait(s->shared, seen, 100);
        now = nfabric_ctrl_map_gen(&s->ctrl);
        if (now != seen) {
            seen = now;
            qemu_bh_schedule(s->map_bh);
        }
    }
    return NULL;
}

/* A shared head with the direct map joins the map protocol (realize). */
void nfabric_map_start(CXLNFabricState *s)
{
    if (!s->direct || !s->shared) {
        return;
    }
    nfabric_ctrl_map_join(&s->ctrl);
    s->map_bh = qemu_bh_new(nfabric_map_bh, s);
    s->map_stop = false;
    qemu_thread_create(&s->map_thread, "nfabric-map", nfabric_map_thread, s,
                       QEMU_THREAD_JOINABLE);
}

void nfabric_map_stop(CXLNFabricState *s)
{
    if (!s->map_bh) {
        return;
    }
    qatomic_set(&s->map_stop, true);
    qemu_thread_join(&s->map_thread);   /* within its 100 ms wait */
    qemu_bh_delete(s->map_bh);
    s->map_bh = NULL;
}

/* Resolve direct-map against the other properties (before realize). */
bool nfabric_direct_resolve(CXLNFabricState *s, Error **errp)
{
    switch (s->direct_map) {
    case ON_OFF_AUTO_ON:
        if (s->record_path) {
            error_setg(errp, "%s: property 'direct-map=on' conflicts with "
                       "'record': directly mapped accesses would be missing "
                       "from the record", TYPE_CXL_NFABRIC);
            return false;
        }
        s->direct = true;
        break;
    case ON_OFF_AUTO_AUTO:
        s->direct = !s->record_path;
        break;
    default:
        s->direct = false;
        if (s->direct_fp32) {
            error_setg(errp, "%s: property 'direct-map-fp32=on' needs the "
                       "direct map ('direct-map' is off)", TYPE_CXL_NFABRIC);
            return false;
        }
        break;
    }
    return true;
}

/* The regions of the direct map (after the parent realized). */
void nfabric_direct_init(CXLNFabricState *s)
{
    uint64_t size = memory_region_size(s->vmr);

    if (!s->direct) {
        return;
    }
    memory_region_init(&s->direct_view, OBJECT(s), "cxl-neuron-fabric-direct",
                       size);
    memory_region_init_alias(&s->direct_ram, OBJECT(s),
                             "cxl-neuron-fabric-direct-ram", s->vmr, 0, size);
    memory_region_add_subregion(&s->direct_view, 0, &s->direct_ram);
    for (unsigned i = 0; i < NFABRIC_TRAP_MRS; i++) {
        s->trap[i].s = s;
        memory_region_init_io(&s->trap[i].mr, OBJECT(s), &nfabric_trap_ops,
                              &s->trap[i], "cxl-neuron-fabric-trap", size);
    }
    for (unsigned i = 0; s->posted && i < NFABRIC_NUM_WINDOWS; i++) {
        memory_region_init_alias(&s->staging_map[i], OBJECT(s),
                                 "cxl-neuron-fabric-staging-map", &s->staging,
                                 0, size);
    }
}

/* ---- staging memory (posted windows) --------------------------------- */

/*
 * The staging memory (before the controller sees a window): RAM that QEMU
 * migrates and, under KVM, maps into the guest like any RAM.  Pages never
 * touched are never allocated.
 */
bool nfabric_staging_init(CXLNFabricState *s, Error **errp)
{
    uint64_t size = memory_region_size(s->vmr);

    if (!s->posted) {
        return true;
    }
    if (!memory_region_init_ram(&s->staging, OBJECT(s),
                                "cxl-neuron-fabric-staging", size, errp)) {
        error_prepend(errp, "%s: property 'posted': ", TYPE_CXL_NFABRIC);
        return false;
    }
    address_space_init(&s->staging_as, &s->staging,
                       "cxl-neuron-fabric-staging");
    if (address_space_cache_init(&s->staging_cache, &s->staging_as, 0, size,
                                 true) < size) {
        address_space_cache_destroy(&s->staging_cache);
        address_space_destroy(&s->staging_as);
        vmstate_unregister_ram(&s->staging, DEVICE(s));
        object_unparent(OBJECT(&s->staging));
        error_setg(errp, "%s: property 'posted': the staging memory is not "
                   "one contiguous block of RAM", TYPE_CXL_NFABRIC);
        return false;
    }
    nfabric_ctrl_set_staging(&s->ctrl, memory_region_get_ram_ptr(&s->staging));
    return true;
}

void nfabric_staging_exit(CXLNFabricState *s)
{
    if (!s->ctrl.staging) {
        return;
    }
    nfabric_ctrl_set_staging(&s->ctrl, NULL);
    address_space_cache_destroy(&s->staging_cache);
    address_space_destroy(&s->staging_as);
    vmstate_unregister_ram(&s->staging, DEVICE(s));
}

/*
 * The device wrote staging [dpa, dpa + len) (a FETCH, or a store on the
 * I/O path): dirty for migration, translated code there invalidated.
 */
void nfabric_hook_staging_dirty(void *opaque, uint64_t dpa, uint64_t len)
{
    CXLNFabricState *s = opaque;

    if (s->ctrl.staging && dpa < s->ctrl.ram_size &&
        len <= s->ctrl.ram_size - dpa) {
        address_space_cache_invalidate(&s->staging_cache, dpa, len);
    }
}
