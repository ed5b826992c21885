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
#include "hw/mem/nfabric_ctrl.h"

#define TYPE_CXL_NFABRIC "cxl-neuron-fabric"

/* Linux uses CXL memory in units of 256 MiB (CXL_CAPACITY_MULTIPLE). */
#define NFABRIC_CXL_CAPACITY_ALIGN  (256 * 1024 * 1024ULL)
OBJECT_DECLARE_TYPE(CXLNFabricState, CXLNFabricClass, CXL_NFABRIC)

/*
 * A range of device memory whose accesses the direct map traps (an enabled
 * window's data range or counter area): an I/O region over it, which hands
 * each access to the controller like the fixed window's path does.
 */
/*
 * A trapped range becomes up to two I/O regions: its first partial page on
 * its own, then the rest from a page boundary.  TCG keeps an I/O page's
 * section index in the low bits of the TLB entry's xlat_section, which is
 * therefore page aligned only if the region's offset at that page is: a
 * region starting mid-page and covering further pages breaks that
 * (iotlb_to_section aborted QEMU on a guest's read of a counter area that
 * starts right after its window's data).
 */
#define NFABRIC_TRAP_MRS            (2 * NFABRIC_MAX_TRAPS)

typedef struct NFabricTrap {
    MemoryRegion mr;
    struct CXLNFabricState *s;
    uint64_t dpa;               /* DPA of the region's offset 0 */
} NFabricTrap;

/*
 * The RTL datapath's shared library (hw/rtl/nfrtl.h), loaded with dlopen()
 * by cxl_nfabric_rtl.c: its model and its calls.  ops are the library's
 * nfrtl_agg_write/read themselves, which the controller calls with the
 * model (nfabric_ctrl_set_rtl): no call in between.
 */
typedef struct NFabricRtlLib {
    void *handle;
    void *model;
    void *(*model_new)(void);
    void (*model_free)(void *model);
    NFabricRtlOps ops;
    uint64_t (*cycles)(const void *model);
    uint64_t (*lines)(const void *model);
    unsigned (*latency)(const void *model);
} NFabricRtlLib;

struct CXLNFabricState {
    CXLType3Dev parent_obj;

    MemoryRegion regs;          /* register block, BAR0 + 0x2000 */
    MemoryRegion dvs;           /* the vendor block, BAR0 + 64 KiB: */
    MemoryRegion dvs_header;    /*   its header page */
    MemoryRegion dvs_regs;      /*   the register block again (an alias) */
    MemoryRegion *vmr;          /* the volatile backend's RAM region */
    MemoryRegionCache ram_cache; /* over vmr: stores the device makes */
    NFabricCtrl ctrl;           /* the controller model over its RAM */

    /*
     * The direct map (docs/device.md): what the fixed window maps where
     * the decoders allow it.  The backend's RAM (direct_ram, an alias) with
     * an I/O region over every range the controller must see (trap[]).
     */
    bool direct;                /* direct-map resolved at realize */
    bool register_locator;      /* x-register-locator: the vendor block */
    bool direct_updating;       /* in nfabric_direct_update() */
    bool direct_again;          /* asked again meanwhile: one more pass */
    MemoryRegion direct_view;
    MemoryRegion direct_ram;
    NFabricTrap trap[NFABRIC_TRAP_MRS];
    /*
     * Staging memory for posted windows (property posted, docs/device.md):
     * private RAM of the device's size, migrated; the direct map maps a
     * posted window's data range to it (staging_map[]).
     */
    MemoryRegion staging;
    AddressSpace staging_as;
    MemoryRegionCache staging_cache; /* stores the device makes there */
    MemoryRegion staging_map[NFABRIC_NUM_WINDOWS];
    Notifier exit_notifier;     /* closes the record when QEMU quits */

    /* A head of a shared device (docs/multihost.md). */
    NFabricShared *shared;      /* the state file's mapping, or NULL */
    int shared_fd;
    Error *migration_blocker;
    /* The map protocol (with the direct map): waits for map_gen to move. */
    QemuThread map_thread;
    QEMUBH *map_bh;
    bool map_stop;
    /* The interrupt (cxl_nfabric_irq.c): a bottom half, a shared head's thread. */
    QEMUBH *irq_bh;
    QemuThread irq_thread;
    bool irq_stop;
    bool irq_threaded;
    bool map_bql;               /* an enable's wait dropped the BQL */
    /*
     * A register write of this head is in the controller, waiting with the
     * BQL dropped (map_bql): nothing else may run the controller meanwhile.
     */
    bool map_waiting;
    /* The CXL PMU block (cxl_nfabric_cpmu.c), BAR0 + 128 KiB. */
    MemoryRegion cpmu;
    QEMUTimer *cpmu_timer;

    /* The RTL datapath (rtl=serve|compare, docs/rtl.md). */
    NFabricRtlMode rtl_mode;
    NFabricRtlLib rtl_lib_fn;
    Notifier rtl_exit_notifier; /* reports what it served when QEMU quits */

    /* Properties. */
    NFabricTimingParams tparams;
    char *record_path;
    char *shared_path;          /* shared-state */
    OnOffAuto direct_map;       /* direct-map */
    bool direct_fp32;           /* direct-map-fp32 */
    bool posted;                /* posted: staging memory */
    uint32_t head;              /* head */
    uint32_t heads;             /* heads */
    char *rtl;                  /* rtl: off, serve or compare */
    char *rtl_lib;              /* rtl-lib: path of libnfrtl.so */
};

struct CXLNFabricClass {
    CXLType3Class parent_class;

    void (*parent_realize)(PCIDevice *pdev, Error **errp);
    void (*parent_exit)(PCIDevice *pdev);
    ResettablePhases parent_phases;
};

/*
 * The device's I/O regions take what the fixed window's own I/O path
 * (cfmws_ops) takes: 1 to 8 bytes at any alignment, passed on as they are.
 */
#define NFABRIC_ANY_ACCESS                                              \
    .endianness = DEVICE_LITTLE_ENDIAN,                                 \
    .valid = {                                                          \
        .min_access_size = 1,                                           \
        .max_access_size = 8,                                           \
        .unaligned = true,                                              \
    },                                                                  \
    .impl = {                                                           \
        .min_access_size = 1,                                           \
        .max_access_size = 8,                                           \
        .unaligned = true,                                              \
    }

/*
 * cxl_nfabric.c: the CXL.mem path, a decoded access of size (1..8) bytes at
 * dpa (the parent's mem_read/mem_write hooks; the direct map's traps too).
 */
MemTxResult nfabric_mem_read(CXLType3Dev *ct3d, uint64_t dpa,
                             uint64_t *data, unsigned size, MemTxAttrs attrs);
MemTxResult nfabric_mem_write(CXLType3Dev *ct3d, uint64_t dpa,
                              uint64_t data, unsigned size, MemTxAttrs attrs);

/*
 * cxl_nfabric_map.c: the direct map and the map protocol.  Resolve the
 * direct-map property (before realize), make the regions (after the
 * parent realized), join and leave the map protocol, rebuild the traps
 * (nfabric_direct_update, after every change of what must trap); the
 * parent's direct_region hook; the controller's wait_begin/wait_end hooks.
 */
bool nfabric_direct_resolve(CXLNFabricState *s, Error **errp);
void nfabric_direct_init(CXLNFabricState *s);
void nfabric_map_start(CXLNFabricState *s);
void nfabric_map_stop(CXLNFabricState *s);
void nfabric_direct_update(CXLNFabricState *s);
bool nfabric_staging_init(CXLNFabricState *s, Error **errp);
void nfabric_staging_exit(CXLNFabricState *s);
void nfabric_hook_staging_dirty(void *opaque, uint64_t dpa, uint64_t len);
MemoryRegion *nfabric_direct_region(CXLType3Dev *ct3d);
void nfabric_hook_wait_begin(void *opaque);
void nfabric_hook_wait_end(void *opaque);

/* cxl_nfabric_mbox.c: refuse memory-wide mailbox commands on a shared head. */
void nfabric_mbox_scope(CXLNFabricState *s);

void nfabric_irq_start(CXLNFabricState *s);
void nfabric_irq_stop(CXLNFabricState *s);
void nfabric_irq_update(CXLNFabricState *s);
void nfabric_irq_kick(CXLNFabricState *s);
void nfabric_events_update(CXLNFabricState *s);

/* cxl_nfabric_cpmu.c: the CXL PMU block, its message, its migration. */
MemoryRegion *nfabric_cpmu_regs(CXLType3Dev *ct3d);
void nfabric_cpmu_start(CXLNFabricState *s);
void nfabric_cpmu_stop(CXLNFabricState *s);
extern const VMStateDescription vmstate_nfabric_cpmu;

/* cxl_nfabric_rtl.c: load rtl-lib (before realize), start, unload. */
bool nfabric_rtl_load(CXLNFabricState *s, Error **errp);
void nfabric_rtl_start(CXLNFabricState *s);
void nfabric_rtl_unload(CXLNFabricState *s);
void nfabric_rtl_mismatch(CXLNFabricState *s, unsigned win, bool write,
                          uint64_t off, unsigned len, const char *what);
void nfabric_rtl_class_init(ObjectClass *oc);

#endif /* HW_MEM_CXL_NFABRIC_H */
