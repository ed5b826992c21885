/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * libnfabric's resource0 transport (nfl_resource0_transport,
 * nfabric_priv.h): the register block mapped from sysfs without the
 * driver, where the Register Locator DVSEC in the device's configuration
 * space says it is (docs/registers.md, "Finding the block").  It may call
 * libnfabric.c (nfl_fail) and the C library; nothing else of the library.
 */
#include "nfabric_priv.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

static uint32_t cfg_le32(const uint8_t *c, unsigned off)
{
    return (uint32_t)c[off] | (uint32_t)c[off + 1] << 8 |
           (uint32_t)c[off + 2] << 16 | (uint32_t)c[off + 3] << 24;
}

/*
 * Where the Register Locator DVSEC puts the designated vendor specific
 * block (docs/registers.md, "Finding the block"): its BAR and offset, read
 * from the device's configuration space in sysfs (root reads all 4 KiB).
 * Every entry of that kind is returned in turn: *next is where to go on.
 * 1: found, 0: no more, < 0: error.
 */
static int find_vendor_block(nfabric_dev *d, const uint8_t *cfg, size_t n,
                             unsigned *next, unsigned *bar, uint64_t *off)
{
    unsigned pos = 0x100, loc = 0, len, e;

    for (unsigned k = 0; pos >= 0x100 && pos + 12 <= n && k < 512; k++) {
        uint32_t hdr = cfg_le32(cfg, pos);

        if ((hdr & 0xffff) == 0x23 &&   /* DVSEC */
            (cfg_le32(cfg, pos + 4) & 0xffff) == NFABRIC_CXL_DVSEC_VENDOR_ID &&
            (cfg_le32(cfg, pos + 8) & 0xffff) == NFABRIC_CXL_DVSEC_REGLOC) {
            loc = pos;
            break;
        }
        pos = hdr >> 20;
    }
    if (!loc) {
        return nfl_fail(d, NFLIB_EMAGIC, "%s: no Register Locator DVSEC in its "
                        "configuration space (%zu bytes read)", d->pci_name, n);
    }
    len = cfg_le32(cfg, loc + 4) >> 20;
    for (e = *next ? *next : loc + NFABRIC_REGLOC_ENTRIES;
         e + 8 <= loc + len && e + 8 <= n; e += 8) {
        uint32_t lo = cfg_le32(cfg, e);

        if ((lo & NFABRIC_REGLOC_RBI_MASK) >> NFABRIC_REGLOC_RBI_SHIFT ==
            NFABRIC_REGLOC_RBI_VENDOR) {
            *bar = lo & NFABRIC_REGLOC_BIR_MASK;
            *off = (uint64_t)cfg_le32(cfg, e + 4) << 32 |
                   (lo & NFABRIC_REGLOC_OFF_LO_MASK);
            *next = e + 8;
            return 1;
        }
    }
    return 0;
}

/* Map the BAR of a vendor block and check its header; 1: ours. */
static int map_vendor_block(nfabric_dev *d, unsigned bar, uint64_t off,
                            char *path, size_t path_len)
{
    struct stat st;
    volatile uint8_t *h;
    uint32_t id, rev, len;
    void *p;

    snprintf(path, path_len, PCI_DEVICES "/%s/resource%u", d->pci_name, bar);
    d->bar_fd = open(path, O_RDWR | O_SYNC | O_CLOEXEC);
    if (d->bar_fd < 0) {
        return nfl_fail(d, NFLIB_EOPEN, "%s: %s", path, strerror(errno));
    }
    if (fstat(d->bar_fd, &st) || st.st_size < 0 ||
        off > (uint64_t)st.st_size ||
        (uint64_t)st.st_size - off < NFABRIC_DVS_SIZE) {
        close(d->bar_fd);
        d->bar_fd = -1;
        return 0;       /* not inside the BAR: not ours */
    }
    p = mmap(NULL, (size_t)st.st_size, PROT_READ | PROT_WRITE, MAP_SHARED,
             d->bar_fd, 0);
    if (p == MAP_FAILED) {
        return nfl_fail(d, NFLIB_EMMAP, "%s: %s", path, strerror(errno));
    }
    d->bar = p;
    d->bar_size = (size_t)st.st_size;
    h = (volatile uint8_t *)p + off;
    id = *(volatile uint32_t *)(h + NFABRIC_DVS_HDR_ID);
    rev = *(volatile uint32_t *)(h + NFABRIC_DVS_HDR_REVISION) & 0xf;
    len = *(volatile uint32_t *)(h + NFABRIC_DVS_HDR_LENGTH);
    if (id != NFABRIC_DVS_ID || rev < NFABRIC_DVS_REVISION ||
        len < NFABRIC_DVS_REGS + NFABRIC_REGS_SIZE) {
        munmap(p, d->bar_size);
        d->bar = NULL;
        close(d->bar_fd);
        d->bar_fd = -1;
        return 0;
    }
    d->regs = h + NFABRIC_DVS_REGS;
    snprintf(path, path_len, PCI_DEVICES "/%s/resource%u+0x%" PRIx64,
             d->pci_name, bar, off + NFABRIC_DVS_REGS);
    return 1;
}

/* Without the driver: the block the Register Locator names, in sysfs. */
static int map_regs_sysfs(nfabric_dev *d, char *path, size_t path_len)
{
    uint8_t cfg[4096];
    unsigned next = 0, bar = 0;
    uint64_t off = 0;
    ssize_t n;
    int fd, rc;

    snprintf(path, path_len, PCI_DEVICES "/%s/config", d->pci_name);
    fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        return nfl_fail(d, NFLIB_EOPEN, "%s: %s", path, strerror(errno));
    }
    n = pread(fd, cfg, sizeof(cfg), 0);
    close(fd);
    if (n < 0) {
        return nfl_fail(d, NFLIB_ESYSFS, "%s: %s", path, strerror(errno));
    }
    if (n <= 0x100) {
        return nfl_fail(d, NFLIB_ESYSFS, "%s: %zd bytes: the extended "
                        "configuration space is not readable (root reads it)",
                        path, n);
    }
    while ((rc = find_vendor_block(d, cfg, (size_t)n, &next, &bar, &off)) > 0) {
        rc = map_vendor_block(d, bar, off, path, path_len);
        if (rc > 0) {
            size_t used = strlen(d->access);

            snprintf(d->access + used, sizeof(d->access) - used,
                     ", BAR%u+0x%" PRIx64 " (Register Locator)", bar,
                     off + NFABRIC_DVS_REGS);
            return 0;
        }
        if (rc < 0) {
            return rc;
        }
    }
    if (rc < 0) {
        return rc;
    }
    return nfl_fail(d, NFLIB_EMAGIC, "%s: the Register Locator DVSEC names no "
                    "NEURON-Fabric block (vendor 0x%04x, block 0x%04x)",
                    d->pci_name, NFABRIC_DVS_VENDOR_ID, NFABRIC_DVS_BLOCK_ID);
}

const nfabric_transport nfl_resource0_transport = {
    .open = map_regs_sysfs,
};
