/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * libnfabric: guest user-space access to a NEURON-Fabric CXL device.
 * See libnfabric.h and docs/guest.md.
 */
#include "nfabric_priv.h"
#include "hw/mem/nfabric_window.h"
#include "../kernel/uapi/nfabric_checks.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define PCI_DEVICES "/sys/bus/pci/devices"
#define CXL_DEVICES "/sys/bus/cxl/devices"
#define DAX_DEVICES "/sys/bus/dax/devices"
#define CXL_MEM_CLASS 0x050210u

/* Registers are reachable: mapped, or through a transport. */
static inline bool nf_has_regs(const nfabric_dev *d)
{
    return d->regs != NULL || d->xport != NULL;
}

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

static int read_u64(const char *path, uint64_t *v)
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
static int link_base(const char *path, char *buf, size_t len)
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
    if (read_u64(path, &vendor)) {
        return false;
    }
    snprintf(path, sizeof(path), PCI_DEVICES "/%s/device", name);
    if (read_u64(path, &device)) {
        return false;
    }
    snprintf(path, sizeof(path), PCI_DEVICES "/%s/class", name);
    if (read_u64(path, &class)) {
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
static int find_pci(nfabric_dev *d, bool any_cxl_mem, const char *want)
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
static int find_memdev(nfabric_dev *d)
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
static int find_region(nfabric_dev *d, uint64_t *region_hpa)
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
            if (link_base(path, mem, sizeof(mem)) || strcmp(mem, d->memdev)) {
                continue;
            }
            snprintf(d->region, sizeof(d->region), "%.31s", e->d_name);
            snprintf(path, sizeof(path), CXL_DEVICES "/%s/interleave_ways", e->d_name);
            if (read_u64(path, &ways) || ways != 1) {
                closedir(dir);
                return nfl_fail(d, NFLIB_ESYSFS, "%s: interleave_ways %" PRIu64
                            " (only 1 is supported)", d->region, ways);
            }
            snprintf(path, sizeof(path), CXL_DEVICES "/%s/dpa_resource", dec);
            if (read_u64(path, &d->dpa_base)) {
                closedir(dir);
                return nfl_fail(d, NFLIB_ESYSFS, "cannot read %s", path);
            }
            snprintf(path, sizeof(path), CXL_DEVICES "/%s/resource", e->d_name);
            if (read_u64(path, region_hpa)) {
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

static int find_dax(nfabric_dev *d)
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

static int map_mem(nfabric_dev *d)
{
    char path[PATH_MAX], drv[64];
    uint64_t size, hpa_region = 0, hpa_dax;
    int rc;
    void *p;

    if ((rc = find_memdev(d)) || (rc = find_region(d, &hpa_region)) ||
        (rc = find_dax(d))) {
        return rc;
    }
    snprintf(path, sizeof(path), DAX_DEVICES "/%s/driver", d->dax_name);
    if (link_base(path, drv, sizeof(drv)) || strcmp(drv, "device_dax")) {
        return nfl_fail(d, NFLIB_ENODAX, "%s is not bound to device_dax (see "
                    "docs/guest.md)", d->dax_name);
    }
    snprintf(path, sizeof(path), DAX_DEVICES "/%s/size", d->dax_name);
    if (read_u64(path, &size) || !size) {
        return nfl_fail(d, NFLIB_ESYSFS, "cannot read %s", path);
    }
    /* A dax device may start inside its region. */
    snprintf(path, sizeof(path), DAX_DEVICES "/%s/resource", d->dax_name);
    if (!read_u64(path, &hpa_dax) && hpa_dax >= hpa_region) {
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

static int map_regs(nfabric_dev *d)
{
    char path[PATH_MAX];
    uint32_t magic;
    /* Through the driver when it is attached (nfabric_drv.c). */
    int rc = nfl_drv_map(d, path, sizeof(path));

    if (rc <= 0) {
        if (rc < 0) {
            return rc;
        }
        goto mapped;
    }
    rc = map_regs_sysfs(d, path, sizeof(path));
    if (rc < 0) {
        return rc;
    }
mapped:
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
    rc = find_pci(d, flags & NFABRIC_OPEN_NO_REGS, name);
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
        d->xport->close(d->xport_priv);
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

/* ---- registers ------------------------------------------------------- */

uint32_t nfabric_rd32(const nfabric_dev *d, uint32_t off)
{
    if (d->xport) {
        return d->xport->rd32(d->xport_priv, off);
    }
    return *(volatile uint32_t *)(d->regs + off);
}

void nfabric_wr32(const nfabric_dev *d, uint32_t off, uint32_t v)
{
    if (d->xport) {
        d->xport->wr32(d->xport_priv, off, v);
        return;
    }
    *(volatile uint32_t *)(d->regs + off) = v;
}

uint64_t nfabric_rd64(const nfabric_dev *d, uint32_t off)
{
    uint64_t lo = nfabric_rd32(d, off);
    uint64_t hi = nfabric_rd32(d, off + 4);

    return lo | hi << 32;
}

void nfabric_wr64(const nfabric_dev *d, uint32_t off, uint64_t v)
{
    nfabric_wr32(d, off, (uint32_t)v);
    nfabric_wr32(d, off + 4, (uint32_t)(v >> 32));
}

unsigned nfabric_num_windows(const nfabric_dev *d)
{
    unsigned n = d->caps & NFABRIC_CAPS_WINDOWS_MASK;

    return n > NFABRIC_NUM_WINDOWS ? NFABRIC_NUM_WINDOWS : n;
}

static int need_regs(nfabric_dev *d)
{
    if (!nf_has_regs(d)) {
        return nfl_fail(d, NFLIB_ENOREGS, "no register block mapped");
    }
    return 0;
}

/*
 * A register write, judged by the device: if its error count moved, the
 * write was refused and the window's (else the global) error is returned.
 */
static int judged(nfabric_dev *d, unsigned win, uint32_t before, const char *what)
{
    uint32_t err;

    if (nfabric_rd32(d, NFABRIC_REG_ERROR_COUNT) == before) {
        return 0;
    }
    err = win < NFABRIC_NUM_WINDOWS ?
        nfabric_rd32(d, NFABRIC_REG_WIN(win, NFABRIC_WIN_ERROR)) : 0;
    if (!err) {
        err = nfabric_rd32(d, NFABRIC_REG_LAST_ERROR);
    }
    if (!err) {
        err = NFABRIC_ERR_MAX + 1;
    }
    return nfl_fail(d, (int)err, "%s refused by the device (error %u)", what, err);
}

static int check_win(nfabric_dev *d, unsigned i)
{
    int rc = need_regs(d);

    if (rc) {
        return rc;
    }
    if (i >= nfabric_num_windows(d)) {
        return nfl_fail(d, NFLIB_EINVAL, "window %u: the device has %u windows", i,
                    nfabric_num_windows(d));
    }
    return 0;
}

/*
 * Where device memory sits in the guest: the region of our memdev (its HPA
 * and size, the DPA its endpoint decoder starts at, its interleave ways).
 * 0 if there is one, 1 if there is none; an interleaved region is a span
 * of 2 ways (find_region refuses it, so its addresses are unknown) and
 * *why says which.
 */
static int region_of_memdev(const nfabric_dev *d, struct nfabric_mem_span *span,
                            char *why, size_t whylen)
{
    nfabric_dev t;
    char path[PATH_MAX];
    int rc;

    memset(&t, 0, sizeof(t));
    memset(span, 0, sizeof(*span));
    snprintf(t.pci_name, sizeof(t.pci_name), "%s", d->pci_name);
    if (find_memdev(&t)) {
        return 1;
    }
    rc = find_region(&t, &span->hpa);
    if (rc == NFLIB_ESYSFS && strstr(t.errmsg, "interleave_ways")) {
        snprintf(why, whylen, "%s", t.errmsg);
        span->ways = 2;
        return 0;
    }
    if (rc) {
        return 1;
    }
    span->dpa = t.dpa_base;
    span->ways = 1;
    snprintf(path, sizeof(path), CXL_DEVICES "/%s/size", t.region);
    return read_u64(path, &span->size) ? 1 : 0;
}

/* Does host physical [hpa, hpa + len) meet a System RAM range? */
static bool hpa_is_system_ram(void *ctx, uint64_t hpa, uint64_t len,
                              uint64_t *ram_start, uint64_t *ram_end)
{
    FILE *f = fopen("/proc/iomem", "r");
    char line[256];
    bool hit = false;

    (void)ctx;
    if (!f) {
        return false;
    }
    while (!hit && fgets(line, sizeof(line), f)) {
        unsigned long long a, b;
        int n = 0;

        if (sscanf(line, " %llx-%llx : %n", &a, &b, &n) == 2 && n > 0 &&
            !strncmp(line + n, "System RAM", 10) && a < hpa + len && hpa <= b) {
            *ram_start = a;
            *ram_end = b;
            hit = true;
        }
    }
    fclose(f);
    return hit;
}

/*
 * A low-bit window must not transform memory the kernel owns, nor cover
 * only this device's stripes of an interleaved region: the rule is
 * nfabric_check_window_memory (guest/kernel/uapi/nfabric_checks.h), which
 * the driver's WIN_SET applies too.
 */
static int check_window_memory(nfabric_dev *d, const nfabric_win_cfg *c)
{
    struct nfabric_mem_span span;
    struct nfabric_mem_why w;
    char why[sizeof(d->errmsg)] = "";
    int rc;

    if (c->path == NFABRIC_PATH_FP32 ||
        region_of_memdev(d, &span, why, sizeof(why))) {
        return 0;       /* identity, or no region: the kernel does not use the memory */
    }
    memset(&w, 0, sizeof(w));
    rc = nfabric_check_window_memory(c->path, c->width, c->base, c->size,
                                     c->counters, &span, 1, hpa_is_system_ram,
                                     NULL, &w);
    if (rc == -EXDEV) {
        return nfl_fail(d, NFLIB_EINTERLEAVE, "%s; a window programmed on this "
                    "device alone would cover only its stripes of the region",
                    why);
    }
    if (rc == -EBUSY) {
        return nfl_fail(d, NFLIB_EBUSY, "the window's %s (DPA 0x%" PRIx64
                    ", HPA 0x%" PRIx64 ") is System RAM of the guest "
                    "kernel (0x%" PRIx64 "-0x%" PRIx64 " in /proc/iomem): "
                    "the device would replace the kernel's data; give "
                    "the memory back (daxctl reconfigure-device "
                    "--mode=devdax) first", w.area ? "counter area" : "data",
                    w.dpa, w.hpa, w.ram_start, w.ram_end);
    }
    return rc;
}

int nfabric_window_set(nfabric_dev *d, unsigned i, const nfabric_win_cfg *c)
{
    uint32_t before, wctrl;
    int rc = check_win(d, i);

    if (rc) {
        return rc;
    }
    if ((rc = check_window_memory(d, c))) {
        return rc;
    }
    before = nfabric_rd32(d, NFABRIC_REG_ERROR_COUNT);
    nfabric_wr64(d, NFABRIC_REG_WIN(i, NFABRIC_WIN_DPA_BASE), c->base);
    nfabric_wr64(d, NFABRIC_REG_WIN(i, NFABRIC_WIN_DPA_SIZE), c->size);
    nfabric_wr64(d, NFABRIC_REG_WIN(i, NFABRIC_WIN_COUNTERS), c->counters);
    nfabric_wr32(d, NFABRIC_REG_WIN(i, NFABRIC_WIN_THRESHOLD), c->threshold);
    if ((rc = judged(d, i, before, "window configuration write"))) {
        return rc;
    }
    wctrl = NFABRIC_WCTRL(c->path, c->width, c->tie) | NFABRIC_WCTRL_ENABLE;
    nfabric_wr32(d, NFABRIC_REG_WIN(i, NFABRIC_WIN_CTRL), wctrl);
    if ((rc = judged(d, i, before, "window enable"))) {
        return rc;
    }
    if (!(nfabric_rd32(d, NFABRIC_REG_WIN(i, NFABRIC_WIN_CTRL)) & NFABRIC_WCTRL_ENABLE)) {
        uint32_t err = nfabric_rd32(d, NFABRIC_REG_WIN(i, NFABRIC_WIN_ERROR));

        return nfl_fail(d, err ? (int)err : NFABRIC_ERR_MAX + 1,
                    "window %u: enable refused (error %u)", i, err);
    }
    return 0;
}

int nfabric_window_disable(nfabric_dev *d, unsigned i)
{
    uint32_t before, wctrl;
    int rc = check_win(d, i);

    if (rc) {
        return rc;
    }
    before = nfabric_rd32(d, NFABRIC_REG_ERROR_COUNT);
    wctrl = nfabric_rd32(d, NFABRIC_REG_WIN(i, NFABRIC_WIN_CTRL));
    nfabric_wr32(d, NFABRIC_REG_WIN(i, NFABRIC_WIN_CTRL), wctrl & ~NFABRIC_WCTRL_ENABLE);
    return judged(d, i, before, "window disable");
}

int nfabric_window_clear(nfabric_dev *d, unsigned i)
{
    uint32_t before;
    int rc = check_win(d, i);

    if (rc) {
        return rc;
    }
    before = nfabric_rd32(d, NFABRIC_REG_ERROR_COUNT);
    nfabric_wr32(d, NFABRIC_REG_WIN(i, NFABRIC_WIN_CMD), NFABRIC_WCMD_CLEAR);
    return judged(d, i, before, "window clear");
}

int nfabric_windows_reset(nfabric_dev *d)
{
    int rc = need_regs(d);

    for (unsigned i = 0; !rc && i < nfabric_num_windows(d); i++) {
        if (nfabric_rd32(d, NFABRIC_REG_WIN(i, NFABRIC_WIN_CTRL)) & NFABRIC_WCTRL_ENABLE) {
            rc = nfabric_window_disable(d, i);
        }
    }
    return rc;
}

int nfabric_window_get(const nfabric_dev *d, unsigned i, nfabric_win_state *s)
{
    uint32_t wctrl;

    memset(s, 0, sizeof(*s));
    if (!nf_has_regs(d) || i >= nfabric_num_windows(d)) {
        return !nf_has_regs(d) ? NFLIB_ENOREGS : NFLIB_EINVAL;
    }
    s->cfg.base = nfabric_rd64(d, NFABRIC_REG_WIN(i, NFABRIC_WIN_DPA_BASE));
    s->cfg.size = nfabric_rd64(d, NFABRIC_REG_WIN(i, NFABRIC_WIN_DPA_SIZE));
    s->cfg.counters = nfabric_rd64(d, NFABRIC_REG_WIN(i, NFABRIC_WIN_COUNTERS));
    wctrl = nfabric_rd32(d, NFABRIC_REG_WIN(i, NFABRIC_WIN_CTRL));
    s->wctrl = wctrl;
    s->enabled = wctrl & NFABRIC_WCTRL_ENABLE;
    s->cfg.path = (wctrl & NFABRIC_WCTRL_PATH_MASK) >> NFABRIC_WCTRL_PATH_SHIFT;
    s->cfg.width = (wctrl & NFABRIC_WCTRL_WIDTH_MASK) >> NFABRIC_WCTRL_WIDTH_SHIFT;
    s->cfg.tie = (wctrl & NFABRIC_WCTRL_TIE_MASK) >> NFABRIC_WCTRL_TIE_SHIFT;
    s->cfg.threshold = nfabric_rd32(d, NFABRIC_REG_WIN(i, NFABRIC_WIN_THRESHOLD));
    s->error = nfabric_rd32(d, NFABRIC_REG_WIN(i, NFABRIC_WIN_ERROR));
    s->contrib_writes = nfabric_rd64(d, NFABRIC_REG_WIN(i, NFABRIC_WIN_CONTRIB_WRITES));
    s->contrib_bytes = nfabric_rd64(d, NFABRIC_REG_WIN(i, NFABRIC_WIN_CONTRIB_BYTES));
    s->reserved_codes = nfabric_rd32(d, NFABRIC_REG_WIN(i, NFABRIC_WIN_RESERVED_CODES));
    return 0;
}

unsigned nfabric_window_check(const nfabric_dev *d, unsigned i,
                              const nfabric_win_cfg *c)
{
    NFabricWindowCfg table[NFABRIC_NUM_WINDOWS] = { { 0 } };
    NFabricWindowCfg w = {
        c->base, c->size, c->counters, c->path, c->width, c->tie, c->threshold,
    };
    uint32_t enabled = 0;
    nfabric_win_state s;

    for (unsigned j = 0; j < nfabric_num_windows(d); j++) {
        if (j == i || nfabric_window_get(d, j, &s) || !s.enabled) {
            continue;
        }
        table[j] = nfabric_window_cfg(s.cfg.base, s.cfg.size, s.cfg.counters,
                                      s.wctrl, s.cfg.threshold);
        enabled |= 1u << j;
    }
    /* The controller's own rules (hw/mem/nfabric/nfabric_window.c). */
    return nfabric_window_validate(&w, i, d->dev_mem_size, table, enabled);
}

int nfabric_ctrl(nfabric_dev *d, uint32_t cmd)
{
    uint32_t before;
    int rc = need_regs(d);

    if (rc) {
        return rc;
    }
    before = nfabric_rd32(d, NFABRIC_REG_ERROR_COUNT);
    nfabric_wr32(d, NFABRIC_REG_CTRL, cmd);
    if (cmd & NFABRIC_CTRL_CLEAR_ERROR) {
        return 0;   /* the count was just zeroed */
    }
    return judged(d, NFABRIC_NUM_WINDOWS, before, "CTRL command");
}

/* The four statistics of every path from the block at base (STATS, POOL_STATS). */
static void read_path_stats(const nfabric_dev *d, uint32_t base,
                            nfabric_path_stats st[NFABRIC_NUM_PATHS])
{
    for (unsigned p = 0; p < NFABRIC_NUM_PATHS; p++) {
        uint32_t off = base + p * NFABRIC_STATS_STRIDE;

        st[p].reads = nfabric_rd64(d, off + NFABRIC_STATS_READS);
        st[p].writes = nfabric_rd64(d, off + NFABRIC_STATS_WRITES);
        st[p].read_bytes = nfabric_rd64(d, off + NFABRIC_STATS_READ_BYTES);
        st[p].write_bytes = nfabric_rd64(d, off + NFABRIC_STATS_WRITE_BYTES);
    }
}

int nfabric_stats(const nfabric_dev *d, nfabric_path_stats st[NFABRIC_NUM_PATHS])
{
    if (!nf_has_regs(d)) {
        return NFLIB_ENOREGS;
    }
    read_path_stats(d, NFABRIC_REG_STATS, st);
    return 0;
}

int nfabric_timing_read(const nfabric_dev *d, nfabric_timing *t)
{
    if (!nf_has_regs(d)) {
        return NFLIB_ENOREGS;
    }
    t->clock_mhz = nfabric_rd32(d, NFABRIC_REG_T_CLOCK_MHZ);
    t->depth = nfabric_rd32(d, NFABRIC_REG_T_DEPTH);
    t->service_ns = nfabric_rd32(d, NFABRIC_REG_T_SERVICE_NS);
    t->link_mbps = nfabric_rd32(d, NFABRIC_REG_T_LINK_MBPS);
    t->exposed_ppm = nfabric_rd32(d, NFABRIC_REG_T_EXPOSED_PPM);
    t->total_ps = nfabric_rd64(d, NFABRIC_REG_T_TOTAL_PS);
    for (unsigned p = 0; p < NFABRIC_NUM_PATHS; p++) {
        t->path_time_ps[p] = nfabric_rd64(d, NFABRIC_REG_T_PATH_FIELD(p, NFABRIC_T_PATH_TIME_PS));
        t->path_exposed_ps[p] = nfabric_rd64(d, NFABRIC_REG_T_PATH_FIELD(p, NFABRIC_T_PATH_EXPOSED_PS));
    }
    return 0;
}

void *nfabric_dpa_ptr(const nfabric_dev *d, uint64_t dpa, uint64_t len)
{
    if (!d->mem || dpa < d->dpa_base || dpa - d->dpa_base > d->mem_size ||
        len > d->mem_size - (dpa - d->dpa_base)) {
        return NULL;
    }
    return d->mem + (dpa - d->dpa_base);
}

int32_t nfabric_counter(const nfabric_dev *d, uint64_t counters,
                        unsigned width, uint64_t e)
{
    const volatile uint8_t *p = nfabric_dpa_ptr(d, counters + e * (width / 8), width / 8);

    if (!p) {
        return 0;
    }
    if (width == 16) {
        uint16_t v = (uint16_t)(p[0] | p[1] << 8);

        return (int16_t)v;
    }
    return (int8_t)p[0];
}

/* ---- heads and rounds (version 1.1) ------------------------------------- */

static bool has_heads(const nfabric_dev *d)
{
    return nf_has_regs(d) && (d->version & 0xffff) >= 1;
}

int nfabric_pool_stats(const nfabric_dev *d,
                       nfabric_path_stats st[NFABRIC_NUM_PATHS])
{
    if (!nf_has_regs(d)) {
        return NFLIB_ENOREGS;
    }
    read_path_stats(d, has_heads(d) ? NFABRIC_REG_POOL_STATS : NFABRIC_REG_STATS,
                    st);
    return 0;
}

int nfabric_heads_read(const nfabric_dev *d, nfabric_heads *h)
{
    uint32_t info;

    memset(h, 0, sizeof(*h));
    if (!nf_has_regs(d)) {
        return NFLIB_ENOREGS;
    }
    h->job_windows = (1u << NFABRIC_NUM_WINDOWS) - 1;
    if (!has_heads(d)) {
        h->count = 1;
        h->live = 1;
        return 0;
    }
    if ((d->version & 0xffff) >= 4) {
        uint32_t job = nfabric_rd32(d, NFABRIC_REG_JOB);

        h->jobs_assigned = job & NFABRIC_JOB_ASSIGNED;
        h->job = job & NFABRIC_JOB_INDEX_MASK;
        h->job_windows = (job & NFABRIC_JOB_WINDOWS_MASK) >>
                         NFABRIC_JOB_WINDOWS_SHIFT;
    }
    info = nfabric_rd32(d, NFABRIC_REG_HEAD_INFO);
    h->index = info & NFABRIC_HEAD_INFO_INDEX_MASK;
    h->count = (info & NFABRIC_HEAD_INFO_COUNT_MASK) >>
               NFABRIC_HEAD_INFO_COUNT_SHIFT;
    h->shared = info & NFABRIC_HEAD_INFO_SHARED;
    h->live = nfabric_rd32(d, NFABRIC_REG_HEADS_LIVE);
    h->lost = nfabric_rd32(d, NFABRIC_REG_HEADS_LOST);
    return 0;
}

int nfabric_head_contrib(nfabric_dev *d, unsigned head, unsigned i,
                         uint64_t *writes)
{
    uint32_t before, self;
    int rc = check_win(d, i);

    if (rc) {
        return rc;
    }
    if (!has_heads(d)) {
        return nfl_fail(d, NFLIB_EVERSION, "the device has no per-head counts "
                    "(version %u.%u)", d->version >> 16, d->version & 0xffff);
    }
    before = nfabric_rd32(d, NFABRIC_REG_ERROR_COUNT);
    self = nfabric_rd32(d, NFABRIC_REG_HEAD_SELECT);
    nfabric_wr32(d, NFABRIC_REG_HEAD_SELECT, head);
    if ((rc = judged(d, NFABRIC_NUM_WINDOWS, before, "HEAD_SELECT write"))) {
        return rc;
    }
    *writes = nfabric_rd64(d, NFABRIC_REG_HEAD_CONTRIB_WIN(i));
    nfabric_wr32(d, NFABRIC_REG_HEAD_SELECT, self);
    return 0;
}

int nfabric_round_read(const nfabric_dev *d, unsigned i, nfabric_round *r)
{
    memset(r, 0, sizeof(*r));
    if (!nf_has_regs(d) || i >= NFABRIC_NUM_WINDOWS) {
        return !nf_has_regs(d) ? NFLIB_ENOREGS : NFLIB_EINVAL;
    }
    if (!has_heads(d)) {
        return NFLIB_EVERSION;
    }
    /* STATUS first: a round read after it is at least as new. */
    r->status = nfabric_rd32(d, NFABRIC_REG_ROUND(i, NFABRIC_ROUND_STATUS));
    r->seq = nfabric_rd32(d, NFABRIC_REG_ROUND(i, NFABRIC_ROUND_SEQ));
    r->done = nfabric_rd32(d, NFABRIC_REG_ROUND(i, NFABRIC_ROUND_DONE));
    r->all_done = r->status & NFABRIC_RSTAT_ALL_DONE;
    r->incomplete = r->status & NFABRIC_RSTAT_INCOMPLETE;
    r->ndone = (r->status & NFABRIC_RSTAT_DONE_MASK) >> NFABRIC_RSTAT_DONE_SHIFT;
    r->nexpected = (r->status & NFABRIC_RSTAT_EXPECT_MASK) >>
                   NFABRIC_RSTAT_EXPECT_SHIFT;
    return 0;
}

int nfabric_round_complete(nfabric_dev *d, unsigned i, uint32_t seq)
{
    uint32_t before;
    int rc = check_win(d, i);

    if (rc) {
        return rc;
    }
    if (!has_heads(d)) {
        return nfl_fail(d, NFLIB_EVERSION, "the device has no round registers");
    }
    before = nfabric_rd32(d, NFABRIC_REG_ERROR_COUNT);
    nfabric_wr32(d, NFABRIC_REG_ROUND(i, NFABRIC_ROUND_COMPLETE), seq);
    return judged(d, i, before, "round complete");
}

static uint64_t now_ms(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

static void pause_us(unsigned us)
{
    struct timespec ts = { 0, (long)us * 1000 };

    nanosleep(&ts, NULL);
}

/*
 * One more poll of a register another head changes?  False once timeout_ms
 * have gone since t0; else pauses (50 us at first, then 1 ms) and says yes.
 */
/*
 * A wait ends at once, with the device's error STATE, when this head
 * found the shared state unusable (HEAD_INFO.STATE_FAILED): its registers
 * then read 0, so no round it waits for can end, and a round number that
 * reads 0 is not a round that moved (docs/registers.md, "Rounds").
 */
static int wait_head_failed(nfabric_dev *d, unsigned i)
{
    if (!(nfabric_rd32(d, NFABRIC_REG_HEAD_INFO) & NFABRIC_HEAD_INFO_STATE_FAILED)) {
        return 0;
    }
    return nfl_fail(d, NFABRIC_ERR_STATE, "window %u: this head found the "
                    "device's shared state unusable (HEAD_INFO.STATE_FAILED): "
                    "no round can end", i);
}

static bool poll_again(unsigned n, uint64_t t0, unsigned timeout_ms)
{
    if (now_ms() - t0 > timeout_ms) {
        return false;
    }
    pause_us(n < 100 ? 50 : 1000);
    return true;
}

int nfabric_round_wait(nfabric_dev *d, unsigned i, uint32_t seq,
                       unsigned timeout_ms, nfabric_round *r)
{
    uint64_t t0 = now_ms();
    int rc = check_win(d, i);

    if (rc) {
        return rc;
    }
    for (unsigned n = 0;; n++) {
        if ((rc = nfabric_round_read(d, i, r))) {
            return nfl_fail(d, rc, "window %u: cannot read the round", i);
        }
        /* After the read: it may be what found the state gone (reads 0). */
        if ((rc = wait_head_failed(d, i))) {
            return rc;
        }
        if (r->seq != seq) {
            return nfl_fail(d, NFLIB_ESTALE, "window %u: waiting for round %u, "
                        "the window is at round %u", i, seq, r->seq);
        }
        if (r->all_done) {
            return 0;
        }
        if (!poll_again(n, t0, timeout_ms)) {
            return nfl_fail(d, NFLIB_ETIMEDOUT, "window %u: round %u: %u of %u "
                        "heads done after %u ms (done mask 0x%x)", i, seq,
                        r->ndone, r->nexpected, timeout_ms, r->done);
        }
    }
}

int nfabric_round_wait_next(nfabric_dev *d, unsigned i, uint32_t seq,
                            unsigned timeout_ms)
{
    uint64_t t0 = now_ms();
    int rc = check_win(d, i);

    if (rc) {
        return rc;
    }
    for (unsigned n = 0;; n++) {
        uint32_t now_seq = nfabric_rd32(d, NFABRIC_REG_ROUND(i, NFABRIC_ROUND_SEQ));

        if ((rc = wait_head_failed(d, i))) {
            return rc;
        }
        if (now_seq != seq) {
            return 0;
        }
        if (!poll_again(n, t0, timeout_ms)) {
            return nfl_fail(d, NFLIB_ETIMEDOUT, "window %u: still at round %u "
                        "after %u ms", i, seq, timeout_ms);
        }
    }
}

/* ---- device memory as accesses (any transport) ---------------------------- */

/*
 * len bytes at DPA dpa through the transport, or through the mapping as
 * naturally aligned accesses of at most 8 bytes, as a CPU's copy does.
 */
static int mem_xfer(nfabric_dev *d, uint64_t dpa, uint8_t *b, uint64_t len,
                    bool write)
{
    volatile uint8_t *p;

    if (d->xport) {
        return d->xport->mem(d->xport_priv, dpa, b, len, write) ?
               nfl_fail(d, NFLIB_EINVAL, "DPA 0x%" PRIx64 "+0x%" PRIx64 " is not "
                    "device memory", dpa, len) : 0;
    }
    p = nfabric_dpa_ptr(d, dpa, len);
    if (!p) {
        return nfl_fail(d, NFLIB_EINVAL, "DPA 0x%" PRIx64 "+0x%" PRIx64 " is not "
                    "mapped", dpa, len);
    }
    while (len) {
        uint64_t n = 8 - (dpa & 7);

        n = n > len ? len : n;
        if (n == 8) {
            /* The aligned words: one 8-byte access each, nothing else. */
            volatile uint64_t *q = (volatile uint64_t *)p;
            uint64_t v;

            n = len / 8 * 8;
            for (uint64_t k = 0; k < n / 8; k++) {
                if (write) {
                    memcpy(&v, b + 8 * k, 8);
                    q[k] = v;
                } else {
                    v = q[k];
                    memcpy(b + 8 * k, &v, 8);
                }
            }
        } else if (n == 4 && !(dpa & 3)) {
            uint32_t v;

            if (write) {
                memcpy(&v, b, 4);
                *(volatile uint32_t *)p = v;
            } else {
                v = *(volatile uint32_t *)p;
                memcpy(b, &v, 4);
            }
        } else {
            for (unsigned k = 0; k < n; k++) {
                if (write) {
                    p[k] = b[k];
                } else {
                    b[k] = p[k];
                }
            }
        }
        p += n;
        b += n;
        dpa += n;
        len -= n;
    }
    return 0;
}

/*
 * Where a write of len bytes at dpa begins, in bytes from dpa: on a device
 * that several heads share, head h of n begins at h/n of it (at an 8-byte
 * boundary) and wraps around, so that heads writing the same range at the
 * same time, as the ranks of a job do, are at different places of it:
 * they take different stripes and counter lines instead of each other's
 * (docs/multihost.md, "Locks and their cost").  0 for a write of less
 * than NFLIB_STAGGER_MIN bytes, a device that is not shared, or a range
 * that is not all device memory (refused as a whole, nothing written).
 */
#define NFLIB_STAGGER_MIN   4096u

static uint64_t write_start(nfabric_dev *d, uint64_t dpa, uint64_t len)
{
    uint64_t start;

    if (len < NFLIB_STAGGER_MIN || dpa > d->dev_mem_size ||
        len > d->dev_mem_size - dpa ||
        (!d->xport && !nfabric_dpa_ptr(d, dpa, len))) {
        return 0;
    }
    if (!d->heads_known) {
        nfabric_heads h;

        if (nfabric_heads_read(d, &h) == 0 && h.shared && h.count > 1 &&
            h.index < h.count) {
            d->head_index = h.index;
            d->head_count = h.count;
        } else {
            d->head_index = 0;
            d->head_count = 1;
        }
        d->heads_known = true;
    }
    if (d->head_count <= 1 || !d->head_index) {
        return 0;
    }
    start = len / d->head_count * d->head_index;
    start = ((dpa + start) & ~7ull) - dpa;
    return start < len ? start : 0;
}

int nfabric_mem_write(nfabric_dev *d, uint64_t dpa, const void *buf,
                      uint64_t len)
{
    uint64_t start = write_start(d, dpa, len);
    uint8_t *b = (uint8_t *)buf;
    int rc;

    rc = mem_xfer(d, dpa + start, b + start, len - start, true);
    return rc || !start ? rc : mem_xfer(d, dpa, b, start, true);
}

int nfabric_mem_read(nfabric_dev *d, uint64_t dpa, void *buf, uint64_t len)
{
    return mem_xfer(d, dpa, buf, len, false);
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

uint64_t nfabric_mem_size(const nfabric_dev *d)
{
    return nf_has_regs(d) ? nfabric_rd64(d, NFABRIC_REG_MEM_SIZE) : 0;
}

uint32_t nfabric_enabled_mask(const nfabric_dev *d)
{
    return nf_has_regs(d) ? nfabric_rd32(d, NFABRIC_REG_ENABLED_MASK) : 0;
}
