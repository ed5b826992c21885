/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * NEURON-Fabric CXL Type-3 memory device: its CXL PMU (register version
 * 1.9, docs/registers.md "The CXL PMU").  QEMU code.
 *
 * The block (the controller's nfabric_cpmu.c) is placed by cxl-type3 in
 * BAR0 at CXL_T3_CPMU_REGS_OFFSET and named in the Register Locator DVSEC
 * (the class's cpmu_regs, qemu-patches/0012), where Linux's cxl_pci finds
 * it and cxl_pmu binds it.  Its overflow message is the device's last
 * MSI-X vector (extra_msix_vectors, qemu-patches/0011), the one the
 * capability register names.  Overflow is looked for after every access
 * of the block and, while a counter runs, every 100 ms of virtual time.
 */

#include "qemu/osdep.h"
#include "hw/mem/cxl_nfabric.h"
#include "hw/pci/msix.h"
#include "migration/vmstate.h"
#include "qemu/timer.h"
#include "trace.h"

/* How often a running counter is looked at for overflow. */
#define NFABRIC_CPMU_TICK_NS    (100 * SCALE_MS)

/* Look for overflow; send the message if one is due; keep the tick. */
static void nfabric_cpmu_update(CXLNFabricState *s)
{
    PCIDevice *pdev = PCI_DEVICE(s);

    if (nfabric_ctrl_cpmu_check(&s->ctrl)) {
        trace_nfabric_cpmu_overflow(s->ctrl.cpmu.overflow,
                                    s->ctrl.cpmu.msgnum);
        if (msix_enabled(pdev)) {
            msix_notify(pdev, s->ctrl.cpmu.msgnum);
        }
    }
    if (nfabric_ctrl_cpmu_ticking(&s->ctrl)) {
        if (!timer_pending(s->cpmu_timer)) {
            timer_mod(s->cpmu_timer, qemu_clock_get_ns(QEMU_CLOCK_VIRTUAL) +
                      NFABRIC_CPMU_TICK_NS);
        }
    } else {
        timer_del(s->cpmu_timer);
    }
}

static void nfabric_cpmu_tick(void *opaque)
{
    nfabric_cpmu_update(opaque);
}

static uint64_t nfabric_cpmu_read(void *opaque, hwaddr off, unsigned size)
{
    CXLNFabricState *s = opaque;
    uint64_t val = nfabric_ctrl_cpmu_read(&s->ctrl, off, size);

    nfabric_cpmu_update(s);
    return val;
}

static void nfabric_cpmu_write(void *opaque, hwaddr off, uint64_t val,
                               unsigned size)
{
    CXLNFabricState *s = opaque;

    trace_nfabric_cpmu_write(off, size, val);
    nfabric_ctrl_cpmu_write(&s->ctrl, off, val, size);
    nfabric_cpmu_update(s);
}

static const MemoryRegionOps nfabric_cpmu_ops = {
    .read = nfabric_cpmu_read,
    .write = nfabric_cpmu_write,
    NFABRIC_ANY_ACCESS,     /* the controller refuses what is not 4 or 8 */
};

/* The parent's cpmu_regs hook, called by its realize. */
MemoryRegion *nfabric_cpmu_regs(CXLType3Dev *ct3d)
{
    CXLNFabricState *s = CXL_NFABRIC(ct3d);

    QEMU_BUILD_BUG_ON(NFABRIC_CPMU_OFFSET != CXL_T3_CPMU_REGS_OFFSET);
    memory_region_init_io(&s->cpmu, OBJECT(s), &nfabric_cpmu_ops, s,
                          "cxl-neuron-fabric-cpmu", NFABRIC_CPMU_SIZE);
    return &s->cpmu;
}

/* After the parent's realize: the vector (the last one) and the tick. */
void nfabric_cpmu_start(CXLNFabricState *s)
{
    unsigned nvec = cxl_type3_msix_vectors(&s->parent_obj);

    nfabric_ctrl_set_cpmu_irq(&s->ctrl, nvec - 1);
    s->cpmu_timer = timer_new_ns(QEMU_CLOCK_VIRTUAL, nfabric_cpmu_tick, s);
}

void nfabric_cpmu_stop(CXLNFabricState *s)
{
    if (s->cpmu_timer) {
        timer_free(s->cpmu_timer);
        s->cpmu_timer = NULL;
    }
}

/* ---- migration: a subsection while the block holds anything ----------- */

static bool nfabric_cpmu_needed(void *opaque)
{
    CXLNFabricState *s = opaque;
    const NFabricCpmu *c = &s->ctrl.cpmu;

    for (unsigned n = 0; n < NFABRIC_CPMU_COUNTERS; n++) {
        if (c->cfg[n] || c->value[n]) {
            return true;
        }
    }
    return c->overflow || c->freeze;
}

static int nfabric_cpmu_post_load(void *opaque, int version_id)
{
    CXLNFabricState *s = opaque;

    for (unsigned n = 0; n < NFABRIC_CPMU_COUNTERS; n++) {
        if (s->ctrl.cpmu.cfg[n] & ~NFABRIC_CPMU_CFG_WRITABLE) {
            return -EINVAL;     /* not a configuration this device took */
        }
    }
    nfabric_cpmu_update(s);
    return 0;
}

const VMStateDescription vmstate_nfabric_cpmu = {
    .name = TYPE_CXL_NFABRIC "/cpmu",
    .version_id = 1,
    .minimum_version_id = 1,
    .needed = nfabric_cpmu_needed,
    .post_load = nfabric_cpmu_post_load,
    .fields = (const VMStateField[]) {
        VMSTATE_UINT64_2DARRAY(ctrl.cpmu.total, CXLNFabricState,
                               NFABRIC_CPMU_NUM_GROUPS, 32),
        VMSTATE_UINT64_ARRAY(ctrl.cpmu.cfg, CXLNFabricState,
                             NFABRIC_CPMU_COUNTERS),
        VMSTATE_UINT64_ARRAY(ctrl.cpmu.value, CXLNFabricState,
                             NFABRIC_CPMU_COUNTERS),
        VMSTATE_UINT64_ARRAY(ctrl.cpmu.seen, CXLNFabricState,
                             NFABRIC_CPMU_COUNTERS),
        VMSTATE_UINT64(ctrl.cpmu.overflow, CXLNFabricState),
        VMSTATE_UINT64(ctrl.cpmu.freeze, CXLNFabricState),
        VMSTATE_UINT32_ARRAY(ctrl.cpmu.round_seq, CXLNFabricState,
                             NFABRIC_NUM_WINDOWS),
        VMSTATE_UINT8_ARRAY(ctrl.cpmu.round_seen, CXLNFabricState,
                            NFABRIC_NUM_WINDOWS),
        VMSTATE_BOOL(ctrl.cpmu.irq_due, CXLNFabricState),
        VMSTATE_END_OF_LIST()
    },
};
