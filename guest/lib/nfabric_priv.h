/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * libnfabric internals: the context behind the opaque nfabric_dev, the
 * transports' table and the library's own helpers (nfl_*), shared by the
 * library's files (libnfabric.c lists them).  Not for the library's users,
 * and not exported (libnfabric.sym).
 *
 * The files call each other in one direction only: libnfabric.c (errors)
 * calls none of them; nfabric_find.c, the transports (nfabric_drv.c,
 * nfabric_resource0.c, nfabric_host.c) call only libnfabric.c;
 * nfabric_reg.c calls nfabric_find.c; nfabric_round.c calls
 * nfabric_reg.c; nfabric_mem.c calls nfabric_round.c and nfabric_reg.c;
 * nfabric_open.c calls nfabric_find.c, nfabric_reg.c and the transports,
 * those only through their tables.
 */
#ifndef NFABRIC_GUEST_PRIV_H
#define NFABRIC_GUEST_PRIV_H

#include "libnfabric.h"

#define PCI_DEVICES "/sys/bus/pci/devices"
#define CXL_DEVICES "/sys/bus/cxl/devices"
#define DAX_DEVICES "/sys/bus/dax/devices"

/*
 * A transport: how a device's registers (and memory) are reached.  The
 * library's three:
 *  - nfl_drv_transport (nfabric_drv.c): the register block mapped through
 *    the driver, /dev/nfabricN (docs/driver.md);
 *  - nfl_resource0_transport (nfabric_resource0.c): the register block
 *    mapped from sysfs resource0, without the driver;
 *  - the host transport (nfabric_host.c, nfabric_open_host): registers
 *    and memory accesses through functions (the controller model on the
 *    host, a head of a shared device, no VM).
 * A mapping transport has open and no rd32, wr32 or mem: registers are
 * then d->regs and memory the dax mapping d->mem.  A transport by calls
 * has rd32, wr32, mem and close, on d->xport_priv (tests/unit/
 * test_libwrite.c makes one of its own).
 */
typedef struct nfabric_transport {
    uint32_t (*rd32)(void *priv, uint32_t off);
    void (*wr32)(void *priv, uint32_t off, uint32_t v);
    /* len bytes at dpa as accesses of at most 8 bytes; 0 or -1 (range) */
    int (*mem)(void *priv, uint64_t dpa, void *buf, uint64_t len, bool write);
    void (*close)(void *priv);          /* NULL: nothing beyond the maps */
    /*
     * Reach the register block of d->pci_name (nfabric_open): 0 when
     * reached (d->bar, d->bar_size, d->bar_fd, d->regs, d->access set), 1
     * when this transport does not reach it (the next one is tried), or a
     * negative library error (with d->errmsg set).  path receives the file
     * used.  NULL: the transport is chosen otherwise (nfabric_open_host).
     */
    int (*open)(nfabric_dev *d, char *path, size_t len);
} nfabric_transport;

extern const nfabric_transport nfl_drv_transport;       /* nfabric_drv.c */
/*
 * nfabric_drv.c: wait for round seq of window i in the driver, asleep
 * until the device's interrupt (NFABRIC_IOC_ROUND_WAIT), when the driver
 * has it: 0 (r filled in), a library or device error, or 1: no such wait
 * here (no driver, or no interrupt; the caller polls).
 */
int nfl_drv_round_wait(nfabric_dev *d, unsigned i, uint32_t seq,
                       unsigned timeout_ms, nfabric_round *r);
extern const nfabric_transport nfl_resource0_transport; /* nfabric_resource0.c */

struct nfabric_dev {
    unsigned flags;
    const nfabric_transport *xport;     /* in use; NULL: none (yet) */
    void *xport_priv;
    char pci_name[64];          /* e.g. "0000:0d:00.0" (empty: none) */
    char memdev[32];            /* e.g. "mem0" */
    char region[32];            /* e.g. "region0" */
    char dax_name[32];          /* e.g. "dax0.0" */
    /* Registers. */
    int bar_fd;
    bool drv_irq;               /* the driver has the device's interrupt */
    void *bar;
    size_t bar_size;
    volatile uint8_t *regs;     /* the register page in bar (or bar: driver) */
    char access[64];            /* how: "driver /dev/nfabricN" or "resource0 (...)" */
    uint32_t version, caps;
    uint64_t dev_mem_size;      /* NFABRIC_REG_MEM_SIZE */
    /* Device memory (the dax mapping). */
    int dax_fd;
    uint8_t *mem;
    size_t mem_size;
    uint64_t dpa_base;          /* DPA of mem[0] */
    /* This head's index and the head count, once read (nfabric_mem_write). */
    bool heads_known;
    unsigned head_index, head_count;
    char errmsg[512];
};

/* Registers and memory through the transport's functions (not mapped). */
static inline bool nfl_by_calls(const nfabric_dev *d)
{
    return d->xport != NULL && d->xport->rd32 != NULL;
}

/* Registers are reachable: mapped, or through a transport. */
static inline bool nfl_has_regs(const nfabric_dev *d)
{
    return d->regs != NULL || nfl_by_calls(d);
}

/*
 * Set d's message of the last failure to "<err's name>: <fmt...>" and
 * return err (a library error, or a device error code).  libnfabric.c.
 */
int nfl_fail(nfabric_dev *d, int err, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/*
 * nfabric_find.c: a sysfs file as a number; the basename of a symlink's
 * target (0 or -1).  The device's PCI function (the one named by want, a
 * PCI address or a memdev name, else $NFABRIC_DEVICE, else the first),
 * its memdev, the region that targets it (with the DPA where its decoder
 * starts and the region's HPA) and the region's dax device: 0 or a
 * library error.
 */
int nfl_read_u64(const char *path, uint64_t *v);
int nfl_link_base(const char *path, char *buf, size_t len);
int nfl_find_pci(nfabric_dev *d, bool any_cxl_mem, const char *want);
int nfl_find_memdev(nfabric_dev *d);
int nfl_find_region(nfabric_dev *d, uint64_t *region_hpa);
int nfl_find_dax(nfabric_dev *d);

/*
 * nfabric_reg.c: window i exists and the registers are reachable (0 or a
 * library error); a register write judged by the device (0, or the error
 * it reports, with d->errmsg set; before is ERROR_COUNT read before the
 * write); the four statistics of every path from the block at base.
 */
int nfl_check_win(nfabric_dev *d, unsigned i);
int nfl_judged(nfabric_dev *d, unsigned win, uint32_t before,
               const char *what);
void nfl_read_path_stats(const nfabric_dev *d, uint32_t base,
                         nfabric_path_stats st[NFABRIC_NUM_PATHS]);

#endif /* NFABRIC_GUEST_PRIV_H */
