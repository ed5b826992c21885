/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * NEURON-Fabric CXL Type-3 memory device with a near-memory gradient
 * aggregation controller: a QOM subclass of cxl-type3.
 *
 * docs/registers.md is the register specification; docs/device.md tells how
 * the device intercepts the CXL.mem path.
 */
#ifndef HW_MEM_CXL_NFABRIC_H
#define HW_MEM_CXL_NFABRIC_H

#include "hw/cxl/cxl.h"
#include "hw/mem/nfabric_engine.h"
#include "hw/mem/nfabric_regs.h"
#include "hw/mem/nfabric_timing.h"

#define TYPE_CXL_NFABRIC "cxl-neuron-fabric"
OBJECT_DECLARE_TYPE(CXLNFabricState, CXLNFabricClass, CXL_NFABRIC)

/* Statistics kept per path (register order). */
enum {
    NFABRIC_STAT_READS,
    NFABRIC_STAT_WRITES,
    NFABRIC_STAT_READ_BYTES,
    NFABRIC_STAT_WRITE_BYTES,
    NFABRIC_NUM_STATS
};

/* One entry of the path-select table, as the guest programmed it. */
typedef struct NFabricWindow {
    uint64_t dpa_base;
    uint64_t dpa_size;
    uint64_t counters;
    uint32_t ctrl;
    uint32_t threshold;
    uint32_t error;
    uint32_t reserved_codes;
    uint64_t contrib_writes;
    uint64_t contrib_bytes;
} NFabricWindow;

struct CXLNFabricState {
    CXLType3Dev parent_obj;

    MemoryRegion regs;          /* register block, BAR0 + 0x2000 */
    MemoryRegion mem;           /* overlay on the volatile backend's RAM */
    MemoryRegion *vmr;          /* the volatile backend's RAM region */
    uint8_t *ram;               /* its host memory */
    uint64_t ram_size;

    /* Guest-visible state (migrated). */
    NFabricWindow win[NFABRIC_NUM_WINDOWS];
    uint32_t last_error;
    uint32_t error_count;
    uint64_t stats[NFABRIC_NUM_PATHS][NFABRIC_NUM_STATS];
    NFabricTiming timing;

    /* Derived from win[] when a window is enabled or state is loaded. */
    uint32_t enabled_mask;
    NFabricAggCfg cfg[NFABRIC_NUM_WINDOWS];

    /* Properties. */
    NFabricTimingParams tparams;
};

struct CXLNFabricClass {
    CXLType3Class parent_class;

    void (*parent_realize)(PCIDevice *pdev, Error **errp);
    void (*parent_exit)(PCIDevice *pdev);
    ResettablePhases parent_phases;
};

#endif /* HW_MEM_CXL_NFABRIC_H */
