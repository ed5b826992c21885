/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * libnfabric's driver transport (nfl_drv_transport, nfabric_priv.h): the
 * register block through the driver (docs/driver.md).  It may call
 * libnfabric.c (nfl_fail), the driver's checks (nfabric_checks.h) and the
 * C library; nothing else of the library.
 */
#include "nfabric_priv.h"
#include "../kernel/uapi/nfabric_checks.h"
#include "../kernel/uapi/nfabric.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

/* The nfabricN class device under the PCI device; 0 or -1. */
static int drv_name(const char *pci_name, char *name, size_t len)
{
    char dir[256];
    DIR *dp;
    struct dirent *e;
    int rc = -1;

    snprintf(dir, sizeof(dir), "/sys/bus/pci/devices/%s/nfabric", pci_name);
    dp = opendir(dir);
    if (!dp) {
        return -1;
    }
    while ((e = readdir(dp))) {
        if (!strncmp(e->d_name, "nfabric", 7) && strlen(e->d_name) < len) {
            strcpy(name, e->d_name);
            rc = 0;
            break;
        }
    }
    closedir(dp);
    return rc;
}

/*
 * Map the register block of d->pci_name through /dev/nfabricN (mmap of
 * its one page) and set d->bar, d->bar_size, d->bar_fd, d->regs and
 * d->access.  Returns 0 when mapped, 1 when the driver is not attached to
 * the device (the caller falls back to sysfs resource0), or a negative
 * library error (with d->errmsg set).  path receives the file used.
 *
 * The environment variable NFABRIC_ACCESS chooses: "driver" (the driver
 * is required), "resource0" (never use the driver), "auto" or unset (the
 * driver if attached, else resource0).
 */
static int drv_map(nfabric_dev *d, char *path, size_t len)
{
    const char *mode = getenv("NFABRIC_ACCESS");
    char name[32], sys[128], devno[32];
    unsigned maj, min;
    const int prot = PROT_READ | PROT_WRITE, flags = MAP_SHARED;
    struct stat st;
    FILE *f;
    void *p;
    int rc;

    if (mode && *mode && strcmp(mode, "auto") && strcmp(mode, "driver") &&
        strcmp(mode, "resource0")) {
        return nfl_fail(d, NFLIB_EINVAL, "NFABRIC_ACCESS=%s (want driver, "
                        "resource0 or auto)", mode);
    }
    if (mode && !strcmp(mode, "resource0")) {
        snprintf(d->access, sizeof(d->access), "resource0 (NFABRIC_ACCESS)");
        return 1;
    }
    if (drv_name(d->pci_name, name, sizeof(name))) {
        if (mode && !strcmp(mode, "driver")) {
            return nfl_fail(d, NFLIB_EOPEN, "NFABRIC_ACCESS=driver but nfabric.ko "
                            "is not attached to %s (is it loaded?)", d->pci_name);
        }
        snprintf(d->access, sizeof(d->access), "resource0 (no driver)");
        return 1;
    }
    /* The node must be the class device's, whatever /dev holds. */
    snprintf(sys, sizeof(sys), "/sys/class/nfabric/%s/dev", name);
    f = fopen(sys, "r");
    if (!f || !fgets(devno, sizeof(devno), f) || sscanf(devno, "%u:%u", &maj, &min) != 2) {
        if (f) {
            fclose(f);
        }
        return nfl_fail(d, NFLIB_ESYSFS, "cannot read %s", sys);
    }
    fclose(f);
    snprintf(path, len, "/dev/%s", name);
    d->bar_fd = open(path, O_RDWR | O_CLOEXEC);
    if (d->bar_fd < 0) {
        return nfl_fail(d, NFLIB_EOPEN, "%s: %s", path, strerror(errno));
    }
    if (fstat(d->bar_fd, &st) || !S_ISCHR(st.st_mode) ||
        major(st.st_rdev) != maj || minor(st.st_rdev) != min) {
        return nfl_fail(d, NFLIB_ESYSFS, "%s is not device %u:%u of %s", path,
                        maj, min, sys);
    }
    /* The mapping the driver allows (nfabric_checks.h), and no other. */
    rc = nfabric_check_regs_mmap((flags & MAP_SHARED) != 0, (prot & PROT_EXEC) != 0,
                                 0, NFABRIC_REGS_SIZE, (uint64_t)sysconf(_SC_PAGESIZE));
    if (rc) {
        return nfl_fail(d, NFLIB_EMMAP, "%s: %s", path, strerror(-rc));
    }
    p = mmap(NULL, NFABRIC_REGS_SIZE, prot, flags, d->bar_fd, 0);
    if (p == MAP_FAILED) {
        return nfl_fail(d, NFLIB_EMMAP, "%s: %s", path, strerror(errno));
    }
    d->bar = p;
    d->bar_size = NFABRIC_REGS_SIZE;
    d->regs = p;
    /* The interrupt (register version 1.8): an older driver has no EVENTS. */
    {
        struct nfabric_ioc_events e = { .size = sizeof(e) };

        d->drv_irq = ioctl(d->bar_fd, NFABRIC_IOC_EVENTS, &e) == 0 && e.irq;
    }
    snprintf(d->access, sizeof(d->access), "driver %s%s", path,
             d->drv_irq ? ", interrupt" : "");
    return 0;
}

int nfl_drv_round_wait(nfabric_dev *d, unsigned i, uint32_t seq,
                       unsigned timeout_ms, nfabric_round *r)
{
    uint64_t left = timeout_ms;

    if (!d->drv_irq || d->bar_fd < 0) {
        return 1;
    }
    for (;;) {
        unsigned slice = left < NFABRIC_ROUND_MAX_TIMEOUT_MS ?
                         (unsigned)left : NFABRIC_ROUND_MAX_TIMEOUT_MS;
        struct nfabric_ioc_round a = {
            .size = sizeof(a), .index = i, .seq = seq, .timeout_ms = slice,
        };
        int rc = ioctl(d->bar_fd, NFABRIC_IOC_ROUND_WAIT, &a);
        int err = rc ? errno : 0;

        if (err == EINTR) {
            continue;
        }
        if (err == 0 || err == ESTALE || err == ETIMEDOUT || err == EIO) {
            memset(r, 0, sizeof(*r));
            r->seq = a.seq;
            r->status = a.status;
            r->done = a.done;
            r->all_done = a.all_done;
            r->incomplete = a.status & NFABRIC_RSTAT_INCOMPLETE;
            r->ndone = a.heads_done;
            r->nexpected = a.heads_expected;
        }
        switch (err) {
        case 0:
            return 0;
        case ESTALE:
            return nfl_fail(d, NFLIB_ESTALE, "window %u: waiting for round %u, "
                            "the window is at round %u", i, seq, a.seq);
        case EIO:
            return nfl_fail(d, NFABRIC_ERR_STATE, "window %u: this head found "
                            "the device's shared state unusable "
                            "(HEAD_INFO.STATE_FAILED): no round can end", i);
        case ETIMEDOUT:
            left -= slice;
            if (left) {
                continue;
            }
            return nfl_fail(d, NFLIB_ETIMEDOUT, "window %u: round %u: %u of %u "
                            "heads done after %u ms (done mask 0x%x)", i, seq,
                            a.heads_done, a.heads_expected, timeout_ms, a.done);
        default:
            return 1;           /* the caller polls instead */
        }
    }
}

const nfabric_transport nfl_drv_transport = {
    .open = drv_map,
};
