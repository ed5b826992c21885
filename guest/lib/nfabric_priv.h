/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * libnfabric internals: the context behind the opaque nfabric_dev and the
 * library's own helpers (nfl_*), shared by libnfabric.c, nfabric_drv.c
 * (registers through the driver) and nfabric_host.c (the host transport).
 * Not for the library's users, and not exported (libnfabric.sym).
 */
#ifndef NFABRIC_GUEST_PRIV_H
#define NFABRIC_GUEST_PRIV_H

#include "libnfabric.h"

/*
 * How a device is reached when it is not mapped: registers and memory
 * accesses through functions (nfabric_host.c: the controller model on the
 * host, a head of a shared device, no VM).
 */
typedef struct nfabric_transport {
    uint32_t (*rd32)(void *priv, uint32_t off);
    void (*wr32)(void *priv, uint32_t off, uint32_t v);
    /* len bytes at dpa as accesses of at most 8 bytes; 0 or -1 (range) */
    int (*mem)(void *priv, uint64_t dpa, void *buf, uint64_t len, bool write);
    void (*close)(void *priv);
} nfabric_transport;

struct nfabric_dev {
    unsigned flags;
    const nfabric_transport *xport;     /* NULL: mapped (guest) */
    void *xport_priv;
    char pci_name[64];          /* e.g. "0000:0d:00.0" (empty: none) */
    char memdev[32];            /* e.g. "mem0" */
    char region[32];            /* e.g. "region0" */
    char dax_name[32];          /* e.g. "dax0.0" */
    /* Registers. */
    int bar_fd;
    void *bar;
    size_t bar_size;
    volatile uint8_t *regs;     /* bar + NFABRIC_REGS_OFFSET (or bar: driver) */
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

/*
 * Set d's message of the last failure to "<err's name>: <fmt...>" and
 * return err (a library error, or a device error code).  libnfabric.c.
 */
int nfl_fail(nfabric_dev *d, int err, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/*
 * Map the register block of d->pci_name through /dev/nfabricN (mmap of
 * its one page) and set d->bar, d->bar_size, d->bar_fd, d->regs and
 * d->access.  Returns 0 when mapped, 1 when the driver is not attached to
 * the device (the caller falls back to sysfs resource0), or a negative
 * library error (with d->errmsg set).  path receives the file used.
 * nfabric_drv.c.
 *
 * The environment variable NFABRIC_ACCESS chooses: "driver" (the driver
 * is required), "resource0" (never use the driver), "auto" or unset (the
 * driver if attached, else resource0).
 */
int nfl_drv_map(nfabric_dev *d, char *path, size_t len);

#endif /* NFABRIC_GUEST_PRIV_H */
