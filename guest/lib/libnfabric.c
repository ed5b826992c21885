/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * libnfabric: guest user-space access to a NEURON-Fabric CXL device.
 * See libnfabric.h and docs/guest.md.
 *
 * This file owns the context's errors (nfl_fail, nfabric_strerror,
 * nfabric_errmsg), the names of paths and tie rules, and the accessors of
 * what an open device found.  It calls nothing else of the library: every
 * other file of it may call this one.  The library's other files, by
 * concern: nfabric_find.c (finding the device in sysfs), nfabric_open.c
 * (open, close, choosing the transport), the transports nfabric_drv.c,
 * nfabric_resource0.c and nfabric_host.c (behind nfabric_transport,
 * nfabric_priv.h), nfabric_reg.c (registers, windows, commands,
 * statistics), nfabric_round.c (heads, rounds and waits), nfabric_mem.c
 * (device memory as accesses).
 */
#include "nfabric_priv.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int nfl_fail(nfabric_dev *d, int err, const char *fmt, ...)
{
    va_list ap;
    int n;

    n = snprintf(d->errmsg, sizeof(d->errmsg), "%s: ", nfabric_strerror(err));
    if (n < 0 || (size_t)n >= sizeof(d->errmsg)) {
        return err;
    }
    va_start(ap, fmt);
    vsnprintf(d->errmsg + n, sizeof(d->errmsg) - (size_t)n, fmt, ap);
    va_end(ap);
    return err;
}

const char *nfabric_strerror(int err)
{
    if (err >= 0) {
        const char *text = nfabric_err_text((unsigned)err);

        return text ? text : "unknown device error";
    }
    switch (err) {
    case NFLIB_ENODEV: return "no NEURON-Fabric device found";
    case NFLIB_EOPEN: return "cannot open";
    case NFLIB_EMMAP: return "cannot map";
    case NFLIB_EMAGIC: return "bad register block magic";
    case NFLIB_EVERSION: return "unsupported register layout version";
    case NFLIB_ENODAX: return "no dax device for the device's region";
    case NFLIB_EINVAL: return "invalid argument";
    case NFLIB_ENOREGS: return "device opened without registers";
    case NFLIB_ENOMEM: return "device opened without memory";
    case NFLIB_ESYSFS: return "unexpected sysfs content";
    case NFLIB_ETIMEDOUT: return "timed out";
    case NFLIB_EBUSY: return "memory in use by the kernel as System RAM";
    case NFLIB_EINTERLEAVE: return "the region is interleaved over several devices";
    case NFLIB_ESTALE: return "the round moved on";
    default: return strerror(-err);
    }
}

const char *nfabric_errmsg(const nfabric_dev *d)
{
    return d->errmsg[0] ? d->errmsg : "no error";
}

const char *nfabric_path_name(unsigned path)
{
    const char *name = nfabric_path_str(path);

    return name ? name : "?";
}

const char *nfabric_tie_name(unsigned tie)
{
    const char *name = nfabric_tie_str(tie);

    return name ? name : "?";
}

/* The value k < n with name_of(k) equal to s, or s as a number up to max. */
static int parse_name(const char *s, const char *(*name_of)(unsigned),
                      unsigned n, unsigned long max)
{
    char *end;
    unsigned long v;

    for (unsigned k = 0; k < n; k++) {
        if (!strcmp(s, name_of(k))) {
            return (int)k;
        }
    }
    errno = 0;
    v = strtoul(s, &end, 0);
    if (errno || end == s || *end || v > max) {
        return -1;
    }
    return (int)v;
}

int nfabric_path_parse(const char *s)
{
    return parse_name(s, nfabric_path_str, NFABRIC_NUM_PATHS,
                      NFABRIC_WCTRL_PATH_MASK >> NFABRIC_WCTRL_PATH_SHIFT);
}

int nfabric_tie_parse(const char *s)
{
    return parse_name(s, nfabric_tie_str, NFABRIC_NUM_TIES,
                      NFABRIC_WCTRL_TIE_MASK >> NFABRIC_WCTRL_TIE_SHIFT);
}


const char *nfabric_pci_name(const nfabric_dev *d)
{
    return d->pci_name;
}

const char *nfabric_memdev_name(const nfabric_dev *d)
{
    return d->memdev;
}

const char *nfabric_region_name(const nfabric_dev *d)
{
    return d->region;
}

const char *nfabric_dax_name(const nfabric_dev *d)
{
    return d->dax_name;
}

const char *nfabric_access_name(const nfabric_dev *d)
{
    return d->access;
}

uint32_t nfabric_version(const nfabric_dev *d)
{
    return d->version;
}

uint32_t nfabric_caps(const nfabric_dev *d)
{
    return d->caps;
}

uint64_t nfabric_map_dpa(const nfabric_dev *d)
{
    return d->dpa_base;
}

uint64_t nfabric_map_size(const nfabric_dev *d)
{
    return d->mem ? d->mem_size : 0;
}

uint8_t *nfabric_map(const nfabric_dev *d)
{
    return d->mem;
}

volatile uint8_t *nfabric_regs_map(const nfabric_dev *d)
{
    return d->regs;
}

uint64_t nfabric_counter_size(unsigned path, unsigned width, uint64_t size)
{
    return nfabric_counter_bytes(path, width, size);
}
