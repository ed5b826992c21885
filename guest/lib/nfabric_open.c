/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * libnfabric: opening and closing a guest device.  It owns nfabric_new,
 * nfabric_open, nfabric_open_dev, nfabric_close and nfabric_free, the
 * choice of the transport that reaches the register block (reg_transports:
 * the driver, else sysfs resource0) and the check of the block it reached,
 * and the dax mapping of device memory.  It may call libnfabric.c
 * (nfl_fail), nfabric_find.c (the device in sysfs), the transports through
 * their tables (nfabric_priv.h) and nfabric_reg.c (the registers read at
 * open).
 */
#include "nfabric_priv.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

static int map_mem(nfabric_dev *d)
{
    char path[PATH_MAX], drv[64];
    uint64_t size, hpa_region = 0, hpa_dax;
    int rc;
    void *p;

    if ((rc = nfl_find_memdev(d)) || (rc = nfl_find_region(d, &hpa_region)) ||
        (rc = nfl_find_dax(d))) {
        return rc;
    }
    snprintf(path, sizeof(path), DAX_DEVICES "/%s/driver", d->dax_name);
    if (nfl_link_base(path, drv, sizeof(drv)) || strcmp(drv, "device_dax")) {
        return nfl_fail(d, NFLIB_ENODAX, "%s is not bound to device_dax (see "
                    "docs/guest.md)", d->dax_name);
    }
    snprintf(path, sizeof(path), DAX_DEVICES "/%s/size", d->dax_name);
    if (nfl_read_u64(path, &size) || !size) {
        return nfl_fail(d, NFLIB_ESYSFS, "cannot read %s", path);
    }
    /* A dax device may start inside its region. */
    snprintf(path, sizeof(path), DAX_DEVICES "/%s/resource", d->dax_name);
    if (!nfl_read_u64(path, &hpa_dax) && hpa_dax >= hpa_region) {
        d->dpa_base += hpa_dax - hpa_region;
    }
    snprintf(path, sizeof(path), "/dev/%s", d->dax_name);
    d->dax_fd = open(path, O_RDWR | O_SYNC);
    if (d->dax_fd < 0) {
        return nfl_fail(d, NFLIB_EOPEN, "%s: %s", path, strerror(errno));
    }
    p = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, d->dax_fd, 0);
    if (p == MAP_FAILED) {
        return nfl_fail(d, NFLIB_EMMAP, "%s (%" PRIu64 " bytes): %s", path, size,
                    strerror(errno));
    }
    d->mem = p;
    d->mem_size = size;
    return 0;
}

/*
 * The transports that reach a guest device's register block, in the order
 * they are tried: the driver when it is attached (nfabric_drv.c), else
 * sysfs resource0 (nfabric_resource0.c).  nfabric_open_host chooses the
 * host transport (nfabric_host.c) itself.
 */
static const nfabric_transport *const reg_transports[] = {
    &nfl_drv_transport,
    &nfl_resource0_transport,
};

static int map_regs(nfabric_dev *d)
{
    char path[PATH_MAX];
    uint32_t magic;
    int rc = 1;

    /* Each in turn while the last answered 1: "not by me". */
    for (size_t k = 0; rc > 0 && k < sizeof(reg_transports) /
                                     sizeof(reg_transports[0]); k++) {
        rc = reg_transports[k]->open(d, path, sizeof(path));
        if (rc == 0) {
            d->xport = reg_transports[k];
        }
    }
    if (rc < 0) {
        return rc;
    }
    magic = nfabric_rd32(d, NFABRIC_REG_MAGIC);
    if (magic != NFABRIC_MAGIC) {
        return nfl_fail(d, NFLIB_EMAGIC, "%s: MAGIC reads 0x%08x, expected 0x%08x",
                    path, magic, NFABRIC_MAGIC);
    }
    d->version = nfabric_rd32(d, NFABRIC_REG_VERSION);
    if ((d->version >> 16) != NFABRIC_VERSION_MAJOR) {
        return nfl_fail(d, NFLIB_EVERSION, "device version %u.%u, library %u.%u",
                    d->version >> 16, d->version & 0xffff,
                    NFABRIC_VERSION_MAJOR, NFABRIC_VERSION_MINOR);
    }
    d->caps = nfabric_rd32(d, NFABRIC_REG_CAPS);
    d->dev_mem_size = nfabric_rd64(d, NFABRIC_REG_MEM_SIZE);
    return 0;
}

int nfabric_open(nfabric_dev *d, unsigned flags)
{
    return nfabric_open_dev(d, NULL, flags);
}

int nfabric_open_dev(nfabric_dev *d, const char *name, unsigned flags)
{
    int rc;

    memset(d, 0, sizeof(*d));
    d->flags = flags;
    d->bar_fd = d->dax_fd = -1;
    if (flags & NFABRIC_OPEN_NO_REGS && flags & NFABRIC_OPEN_NO_MEM) {
        return nfl_fail(d, NFLIB_EINVAL, "NO_REGS and NO_MEM together");
    }
    rc = nfl_find_pci(d, flags & NFABRIC_OPEN_NO_REGS, name);
    if (!rc && !(flags & NFABRIC_OPEN_NO_REGS)) {
        rc = map_regs(d);
    }
    if (!rc && !(flags & NFABRIC_OPEN_NO_MEM)) {
        rc = map_mem(d);
    }
    if (rc) {
        char msg[sizeof(d->errmsg)];

        memcpy(msg, d->errmsg, sizeof(msg));
        nfabric_close(d);
        memcpy(d->errmsg, msg, sizeof(msg));
    }
    return rc;
}

void nfabric_close(nfabric_dev *d)
{
    if (d->xport) {
        if (d->xport->close) {
            d->xport->close(d->xport_priv);
        }
        d->xport = NULL;
        d->xport_priv = NULL;
    }
    if (d->mem) {
        munmap(d->mem, d->mem_size);
    }
    if (d->bar) {
        munmap(d->bar, d->bar_size);
    }
    if (d->dax_fd >= 0) {
        close(d->dax_fd);
    }
    if (d->bar_fd >= 0) {
        close(d->bar_fd);
    }
    d->mem = NULL;
    d->bar = NULL;
    d->regs = NULL;
    d->dax_fd = d->bar_fd = -1;
    d->heads_known = false;
    d->errmsg[0] = 0;
}

nfabric_dev *nfabric_new(void)
{
    nfabric_dev *d = calloc(1, sizeof(*d));

    if (d) {
        d->bar_fd = d->dax_fd = -1;
    }
    return d;
}

void nfabric_free(nfabric_dev *d)
{
    if (d) {
        nfabric_close(d);
        free(d);
    }
}
