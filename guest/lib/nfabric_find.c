/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * libnfabric: finding a device in sysfs.  It owns the sysfs helpers and
 * the search of the PCI device (nfabric_list, nfl_find_pci), its CXL
 * memdev, the region that targets it and the region's dax device
 * (nfl_find_memdev, nfl_find_region, nfl_find_dax).  It may call
 * libnfabric.c (nfl_fail) and the C library; nothing else of the library.
 */
#include "nfabric_priv.h"

#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define CXL_MEM_CLASS 0x050210u

/* ---- sysfs helpers ---------------------------------------------------- */

/* Read a sysfs file into buf, trailing newline removed; 0 or -1. */
static int read_str(const char *path, char *buf, size_t len)
{
    FILE *f = fopen(path, "r");
    size_t n;

    if (!f) {
        return -1;
    }
    n = fread(buf, 1, len - 1, f);
    fclose(f);
    buf[n] = 0;
    while (n && (buf[n - 1] == '\n' || buf[n - 1] == ' ')) {
        buf[--n] = 0;
    }
    return 0;
}

int nfl_read_u64(const char *path, uint64_t *v)
{
    char buf[64], *end;

    if (read_str(path, buf, sizeof(buf)) || !buf[0]) {
        return -1;
    }
    errno = 0;
    *v = strtoull(buf, &end, 0);
    return errno || *end ? -1 : 0;
}

/* basename of the target of symlink path; 0 or -1. */
int nfl_link_base(const char *path, char *buf, size_t len)
{
    char tgt[PATH_MAX];
    ssize_t n = readlink(path, tgt, sizeof(tgt) - 1);
    const char *b;

    if (n < 0) {
        return -1;
    }
    tgt[n] = 0;
    b = strrchr(tgt, '/');
    b = b ? b + 1 : tgt;
    if (strlen(b) >= len) {
        return -1;
    }
    strcpy(buf, b);
    return 0;
}

static bool starts_with(const char *s, const char *p)
{
    return strncmp(s, p, strlen(p)) == 0;
}

/* Is PCI device `name` one of ours (or, any_cxl_mem, any CXL memory)? */
static bool pci_is_ours(const char *name, bool any_cxl_mem)
{
    char path[PATH_MAX];
    uint64_t vendor, device, class;

    snprintf(path, sizeof(path), PCI_DEVICES "/%s/vendor", name);
    if (nfl_read_u64(path, &vendor)) {
        return false;
    }
    snprintf(path, sizeof(path), PCI_DEVICES "/%s/device", name);
    if (nfl_read_u64(path, &device)) {
        return false;
    }
    snprintf(path, sizeof(path), PCI_DEVICES "/%s/class", name);
    if (nfl_read_u64(path, &class)) {
        return false;
    }
    return (vendor == NFABRIC_PCI_VENDOR_ID && device == NFABRIC_PCI_DEVICE_ID) ||
           (any_cxl_mem && class == CXL_MEM_CLASS);
}

/* Does PCI device `pci` have the CXL memdev `mem` as a child? */
static bool pci_has_memdev(const char *pci, const char *mem)
{
    char path[PATH_MAX];
    struct stat st;

    snprintf(path, sizeof(path), PCI_DEVICES "/%s/%s", pci, mem);
    return starts_with(mem, "mem") && stat(path, &st) == 0;
}

static int cmp_names(const void *a, const void *b)
{
    return strcmp(a, b);
}

int nfabric_list(char (*names)[64], unsigned max, bool any_cxl_mem)
{
    DIR *dir = opendir(PCI_DEVICES);
    struct dirent *e;
    unsigned n = 0;

    if (!dir) {
        return NFLIB_EOPEN;
    }
    while ((e = readdir(dir))) {
        if (e->d_name[0] == '.' || strlen(e->d_name) >= 64 ||
            !pci_is_ours(e->d_name, any_cxl_mem)) {
            continue;
        }
        if (n < max) {
            strcpy(names[n], e->d_name);
        }
        n++;
    }
    closedir(dir);
    qsort(names, n < max ? n : max, 64, cmp_names);
    return (int)n;
}

/*
 * Find the PCI device: the one named by `want` (a PCI address or the name
 * of its CXL memdev), else $NFABRIC_DEVICE, else the first by PCI address.
 * Returns 0 and fills d->pci_name.
 */
int nfl_find_pci(nfabric_dev *d, bool any_cxl_mem, const char *want)
{
    char names[32][64], have[512] = "";
    int n = nfabric_list(names, 32, any_cxl_mem);

    if (n < 0) {
        return nfl_fail(d, NFLIB_EOPEN, "%s: %s", PCI_DEVICES, strerror(errno));
    }
    if (!want || !*want) {
        want = getenv("NFABRIC_DEVICE");
    }
    for (int i = 0; i < n && i < 32; i++) {
        if (!want || !*want || !strcmp(names[i], want) ||
            pci_has_memdev(names[i], want)) {
            snprintf(d->pci_name, sizeof(d->pci_name), "%.63s", names[i]);
            return 0;
        }
        snprintf(have + strlen(have), sizeof(have) - strlen(have), "%s%.63s",
                 i ? ", " : "", names[i]);
    }
    if (want && *want && n > 0) {
        return nfl_fail(d, NFLIB_ENODEV, "no device named \"%s\" (a PCI address "
                    "or a memdev name; have: %s)", want, have);
    }
    return nfl_fail(d, NFLIB_ENODEV, any_cxl_mem ?
                "no PCI device of class 0x%06x in " PCI_DEVICES :
                "no PCI device %04x:%04x in " PCI_DEVICES
                " (is the QEMU device cxl-neuron-fabric?)",
                any_cxl_mem ? CXL_MEM_CLASS : NFABRIC_PCI_VENDOR_ID,
                NFABRIC_PCI_DEVICE_ID);
}

/* The memdev (memN) that is a child of the PCI device. */
int nfl_find_memdev(nfabric_dev *d)
{
    char path[PATH_MAX];
    DIR *dir;
    struct dirent *e;

    snprintf(path, sizeof(path), PCI_DEVICES "/%s", d->pci_name);
    dir = opendir(path);
    if (!dir) {
        return nfl_fail(d, NFLIB_EOPEN, "%s: %s", path, strerror(errno));
    }
    while ((e = readdir(dir))) {
        if (starts_with(e->d_name, "mem") && e->d_name[3] >= '0' &&
            e->d_name[3] <= '9' && strlen(e->d_name) < sizeof(d->memdev)) {
            strcpy(d->memdev, e->d_name);
            break;
        }
    }
    closedir(dir);
    if (!d->memdev[0]) {
        return nfl_fail(d, NFLIB_ENODAX, "%s has no CXL memdev (is cxl_pci loaded?)",
                    d->pci_name);
    }
    return 0;
}

/*
 * The region whose target is an endpoint decoder of our memdev, the DPA
 * where that decoder starts, and the region's dax device.
 */
int nfl_find_region(nfabric_dev *d, uint64_t *region_hpa)
{
    DIR *dir = opendir(CXL_DEVICES);
    struct dirent *e;
    char path[PATH_MAX], dec[64], port[64], mem[64];
    uint64_t ways = 0;
    int found = 0;

    if (!dir) {
        return nfl_fail(d, NFLIB_ENODAX, "%s: %s (no CXL bus?)", CXL_DEVICES,
                    strerror(errno));
    }
    while (!found && (e = readdir(dir))) {
        if (!starts_with(e->d_name, "region")) {
            continue;
        }
        for (unsigned t = 0; t < 16 && !found; t++) {
            snprintf(path, sizeof(path), CXL_DEVICES "/%s/target%u", e->d_name, t);
            if (read_str(path, dec, sizeof(dec)) || !dec[0]) {
                break;
            }
            /* decoderE.N lives under endpointE, whose uport is memX. */
            snprintf(path, sizeof(path), CXL_DEVICES "/%s", dec);
            {
                char real[PATH_MAX], *slash;

                if (!realpath(path, real)) {
                    continue;
                }
                slash = strrchr(real, '/');
                if (!slash) {
                    continue;
                }
                *slash = 0;
                slash = strrchr(real, '/');
                snprintf(port, sizeof(port), "%.63s", slash ? slash + 1 : real);
            }
            snprintf(path, sizeof(path), CXL_DEVICES "/%s/uport", port);
            if (nfl_link_base(path, mem, sizeof(mem)) || strcmp(mem, d->memdev)) {
                continue;
            }
            snprintf(d->region, sizeof(d->region), "%.31s", e->d_name);
            snprintf(path, sizeof(path), CXL_DEVICES "/%s/interleave_ways", e->d_name);
            if (nfl_read_u64(path, &ways) || ways != 1) {
                closedir(dir);
                return nfl_fail(d, NFLIB_ESYSFS, "%s: interleave_ways %" PRIu64
                            " (only 1 is supported)", d->region, ways);
            }
            snprintf(path, sizeof(path), CXL_DEVICES "/%s/dpa_resource", dec);
            if (nfl_read_u64(path, &d->dpa_base)) {
                closedir(dir);
                return nfl_fail(d, NFLIB_ESYSFS, "cannot read %s", path);
            }
            snprintf(path, sizeof(path), CXL_DEVICES "/%s/resource", e->d_name);
            if (nfl_read_u64(path, region_hpa)) {
                closedir(dir);
                return nfl_fail(d, NFLIB_ESYSFS, "cannot read %s", path);
            }
            found = 1;
        }
    }
    closedir(dir);
    if (!found) {
        return nfl_fail(d, NFLIB_ENODAX, "no CXL region targets %s (was the region "
                    "created? see docs/guest.md)", d->memdev);
    }
    return 0;
}

int nfl_find_dax(nfabric_dev *d)
{
    char path[PATH_MAX];
    DIR *dir, *sub;
    struct dirent *e, *f;

    snprintf(path, sizeof(path), CXL_DEVICES "/%s", d->region);
    dir = opendir(path);
    if (!dir) {
        return nfl_fail(d, NFLIB_EOPEN, "%s: %s", path, strerror(errno));
    }
    while (!d->dax_name[0] && (e = readdir(dir))) {
        if (!starts_with(e->d_name, "dax_region")) {
            continue;
        }
        snprintf(path, sizeof(path), CXL_DEVICES "/%s/%s", d->region, e->d_name);
        sub = opendir(path);
        if (!sub) {
            continue;
        }
        while ((f = readdir(sub))) {
            if (starts_with(f->d_name, "dax") && strchr(f->d_name, '.') &&
                strlen(f->d_name) < sizeof(d->dax_name)) {
                strcpy(d->dax_name, f->d_name);
                break;
            }
        }
        closedir(sub);
    }
    closedir(dir);
    if (!d->dax_name[0]) {
        return nfl_fail(d, NFLIB_ENODAX, "%s has no dax device (is dax_cxl loaded?)",
                    d->region);
    }
    return 0;
}
