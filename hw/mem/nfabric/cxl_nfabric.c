/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * NEURON-Fabric CXL Type-3 memory device.
 *
 * A QOM subclass of cxl-type3 whose CXL.mem accesses pass through a
 * path-select table: each enabled window of device memory goes to the FP32
 * path (plain memory), to G-Binary sign-count aggregation or to G-Ternary
 * gated aggregation (the engine in nfabric_engine.c).  Every access is
 * accounted by the timing shim (nfabric_timing.c).
 *
 * How the CXL.mem path is intercepted without patching cxl_type3.c: the
 * parent decodes HPA to DPA and then accesses its hostvmem_as address
 * space, whose root is the volatile backend's RAM region.  After the
 * parent's realize we overlay that RAM region with an I/O region of our
 * own (priority 1, same size), so every DPA access lands in
 * nfabric_mem_read/write, which reach the backend's RAM directly.  The
 * parent's own accesses to the memory bypass the overlay: sanitize and
 * secure erase memset the RAM directly, and set_cacheline (poison clear) is
 * overridden below to write the RAM directly.  None of them counts.
 *
 * Locking: both regions are I/O regions with global locking, so every
 * access and register write runs under the BQL; the device state needs no
 * lock of its own.  docs/registers.md is the register specification.
 */

#include "qemu/osdep.h"
#include "qemu/log.h"
#include "qemu/bswap.h"
#include "qemu/bitops.h"
#include "qemu/host-utils.h"
#include "qapi/error.h"
#include "qapi/visitor.h"
#include "hw/qdev-properties.h"
#include "hw/resettable.h"
#include "migration/vmstate.h"
#include "system/hostmem.h"
#include "hw/mem/cxl_nfabric.h"
#include "trace.h"

/* ---- helpers -------------------------------------------------------- */

static const char *const nfabric_path_name[NFABRIC_NUM_PATHS] = {
    [NFABRIC_PATH_FP32] = "fp32",
    [NFABRIC_PATH_GBINARY] = "gbinary",
    [NFABRIC_PATH_GTERNARY] = "gternary",
};

static inline unsigned nfabric_win_path(const NFabricWindow *w)
{
    return (w->ctrl & NFABRIC_WCTRL_PATH_MASK) >> NFABRIC_WCTRL_PATH_SHIFT;
}

static inline bool nfabric_win_enabled(const CXLNFabricState *s, unsigned i)
{
    return s->enabled_mask & (1u << i);
}

static bool nfabric_ranges_overlap(uint64_t a, uint64_t alen,
                                   uint64_t b, uint64_t blen)
{
    return alen && blen && a < b + blen && b < a + alen;
}

/* Data range of window i, and its counter range (length 0 for FP32). */
static uint64_t nfabric_win_counter_len(const NFabricWindow *w)
{
    unsigned width = (w->ctrl & NFABRIC_WCTRL_WIDTH_MASK) >>
                     NFABRIC_WCTRL_WIDTH_SHIFT;

    return nfabric_counter_bytes(nfabric_win_path(w), width, w->dpa_size);
}

static void nfabric_set_error(CXLNFabricState *s, int win, uint32_t code,
                              hwaddr off, const char *what)
{
    s->last_error = code;
    s->error_count++;
    if (win >= 0) {
        s->win[win].error = code;
    }
    trace_nfabric_reg_error(off, code);
    qemu_log_mask(LOG_GUEST_ERROR, "%s: register 0x%" HWADDR_PRIx
                  ": %s (error %u)\n", TYPE_CXL_NFABRIC, off, what, code);
}

/* ---- the path-select table ------------------------------------------ */

/*
 * Check window i's programmed configuration against device memory and the
 * other enabled windows.  Returns NFABRIC_ERR_NONE or the error code; the
 * order of the checks is part of the specification (docs/registers.md).
 */
static uint32_t nfabric_win_validate(CXLNFabricState *s, unsigned i,
                                     uint32_t ctrl, NFabricAggCfg *cfg)
{
    NFabricWindow w = s->win[i];
    unsigned path;
    uint64_t clen;

    w.ctrl = ctrl;
    path = nfabric_win_path(&w);
    if (path >= NFABRIC_NUM_PATHS) {
        return NFABRIC_ERR_PATH;
    }
    cfg->path = path;
    cfg->width = (ctrl & NFABRIC_WCTRL_WIDTH_MASK) >> NFABRIC_WCTRL_WIDTH_SHIFT;
    cfg->tie = (ctrl & NFABRIC_WCTRL_TIE_MASK) >> NFABRIC_WCTRL_TIE_SHIFT;
    cfg->threshold = w.threshold;
    cfg->size = w.dpa_size;
    if (path != NFABRIC_PATH_FP32) {
        uint32_t err = nfabric_agg_check(cfg);

        if (err != NFABRIC_ERR_NONE) {
            return err;
        }
    }

    if (w.dpa_size == 0 || w.dpa_base > s->ram_size ||
        w.dpa_size > s->ram_size - w.dpa_base) {
        return NFABRIC_ERR_RANGE;
    }
    clen = nfabric_win_counter_len(&w);
    if (clen && (w.counters > s->ram_size ||
                 clen > s->ram_size - w.counters)) {
        return NFABRIC_ERR_RANGE;
    }
    if (w.dpa_base % NFABRIC_ALIGN || w.dpa_size % NFABRIC_ALIGN ||
        (clen && w.counters % NFABRIC_ALIGN)) {
        return NFABRIC_ERR_ALIGN;
    }

    if (nfabric_ranges_overlap(w.dpa_base, w.dpa_size, w.counters, clen)) {
        return NFABRIC_ERR_OVERLAP;
    }
    for (unsigned j = 0; j < NFABRIC_NUM_WINDOWS; j++) {
        const NFabricWindow *o = &s->win[j];
        uint64_t olen;

        if (j == i || !nfabric_win_enabled(s, j)) {
            continue;
        }
        olen = nfabric_win_counter_len(o);
        if (nfabric_ranges_overlap(w.dpa_base, w.dpa_size,
                                   o->dpa_base, o->dpa_size) ||
            nfabric_ranges_overlap(w.dpa_base, w.dpa_size,
                                   o->counters, olen) ||
            nfabric_ranges_overlap(w.counters, clen,
                                   o->dpa_base, o->dpa_size) ||
            nfabric_ranges_overlap(w.counters, clen, o->counters, olen)) {
            return NFABRIC_ERR_OVERLAP;
        }
    }
    return NFABRIC_ERR_NONE;
}

/* Start a new round: zero the counters and the contribution counts. */
static void nfabric_win_clear(CXLNFabricState *s, unsigned i)
{
    NFabricWindow *w = &s->win[i];

    if (nfabric_win_enabled(s, i)) {
        uint64_t clen = nfabric_win_counter_len(w);

        if (clen) {
            memset(s->ram + w->counters, 0, clen);
            memory_region_set_dirty(s->vmr, w->counters, clen);
        }
    }
    w->contrib_writes = 0;
    w->contrib_bytes = 0;
    w->reserved_codes = 0;
    trace_nfabric_window_clear(i);
}

static void nfabric_win_ctrl_write(CXLNFabricState *s, unsigned i,
                                   uint32_t val, hwaddr off)
{
    NFabricWindow *w = &s->win[i];
    NFabricAggCfg cfg;
    uint32_t err;

    if (val & ~NFABRIC_WCTRL_VALID) {
        nfabric_set_error(s, i, NFABRIC_ERR_RESERVED_BITS, off,
                          "reserved bits set in window control");
        return;
    }
    if (nfabric_win_enabled(s, i)) {
        if (!(val & NFABRIC_WCTRL_ENABLE)) {
            s->enabled_mask &= ~(1u << i);
            w->ctrl = val;
            trace_nfabric_window_disable(i);
        } else if (val != w->ctrl) {
            nfabric_set_error(s, i, NFABRIC_ERR_BUSY, off,
                              "window reconfigured while enabled");
        }
        return;
    }
    if (!(val & NFABRIC_WCTRL_ENABLE)) {
        w->ctrl = val;
        return;
    }

    err = nfabric_win_validate(s, i, val, &cfg);
    if (err != NFABRIC_ERR_NONE) {
        w->ctrl = val & ~NFABRIC_WCTRL_ENABLE;
        trace_nfabric_window_reject(i, err);
        nfabric_set_error(s, i, err, off, "window configuration rejected");
        return;
    }
    w->ctrl = val;
    w->error = NFABRIC_ERR_NONE;
    s->cfg[i] = cfg;
    s->enabled_mask |= 1u << i;
    nfabric_win_clear(s, i);
    trace_nfabric_window_enable(i, nfabric_path_name[cfg.path], w->dpa_base,
                                w->dpa_size, w->counters, cfg.width);
}

/*
 * Rebuild the derived state from win[] (after migration): every enabled
 * window must still validate, else the incoming state is refused.
 */
static int nfabric_rebuild(CXLNFabricState *s, uint32_t enabled)
{
    s->enabled_mask = 0;
    for (unsigned i = 0; i < NFABRIC_NUM_WINDOWS; i++) {
        NFabricAggCfg cfg;

        if (!(enabled & (1u << i))) {
            continue;
        }
        if (nfabric_win_validate(s, i, s->win[i].ctrl, &cfg) !=
            NFABRIC_ERR_NONE) {
            return -EINVAL;
        }
        s->cfg[i] = cfg;
        s->enabled_mask |= 1u << i;
    }
    return 0;
}

/* ---- the CXL.mem path ------------------------------------------------ */

/*
 * The window holding dpa, or -1 for plain memory; *end is where the
 * current path ends (window end, or the next window's start).
 */
static int nfabric_lookup(CXLNFabricState *s, uint64_t dpa, uint64_t *end)
{
    uint32_t mask = s->enabled_mask;
    uint64_t next = UINT64_MAX;

    while (mask) {
        unsigned i = ctz32(mask);
        const NFabricWindow *w = &s->win[i];

        mask &= mask - 1;
        if (dpa >= w->dpa_base && dpa - w->dpa_base < w->dpa_size) {
            *end = w->dpa_base + w->dpa_size;
            return i;
        }
        if (w->dpa_base > dpa && w->dpa_base < next) {
            next = w->dpa_base;
        }
    }
    *end = next;
    return -1;
}

static void nfabric_account(CXLNFabricState *s, unsigned path, bool write,
                            uint64_t len)
{
    uint64_t *st = s->stats[path];

    st[write ? NFABRIC_STAT_WRITES : NFABRIC_STAT_READS]++;
    st[write ? NFABRIC_STAT_WRITE_BYTES : NFABRIC_STAT_READ_BYTES] += len;
    nfabric_timing_account(&s->timing, path, len);
}

/*
 * One guest access of len (1..8) bytes at dpa.  buf holds the bytes in
 * memory order.  An access that straddles a window boundary is served (and
 * counted) piece by piece, each piece on its own path.
 */
static void nfabric_access(CXLNFabricState *s, uint64_t dpa, uint8_t *buf,
                           unsigned len, bool write)
{
    while (len) {
        uint64_t end;
        int i = nfabric_lookup(s, dpa, &end);
        unsigned n = MIN((uint64_t)len, end - dpa);
        unsigned path = i < 0 ? NFABRIC_PATH_FP32 : s->cfg[i].path;

        if (path == NFABRIC_PATH_FP32) {
            if (write) {
                memcpy(s->ram + dpa, buf, n);
                memory_region_set_dirty(s->vmr, dpa, n);
            } else {
                memcpy(buf, s->ram + dpa, n);
            }
        } else {
            NFabricWindow *w = &s->win[i];
            const NFabricAggCfg *cfg = &s->cfg[i];
            uint64_t off = dpa - w->dpa_base;
            uint8_t *counters = s->ram + w->counters;

            if (write) {
                int64_t rc = nfabric_agg_write(cfg, counters, off, buf, n);

                /* The window was validated, so the range is inside it. */
                assert(rc >= 0);
                w->reserved_codes += rc;
                w->contrib_writes++;
                w->contrib_bytes += n;
                memory_region_set_dirty(s->vmr,
                    w->counters + nfabric_counter_bytes(path, cfg->width, off),
                    nfabric_counter_bytes(path, cfg->width, n));
            } else {
                int rc = nfabric_agg_read(cfg, counters, off, buf, n);

                assert(rc == 0);
            }
        }
        nfabric_account(s, path, write, n);
        dpa += n;
        buf += n;
        len -= n;
    }
}

static MemTxResult nfabric_mem_read(void *opaque, hwaddr addr, uint64_t *data,
                                    unsigned size, MemTxAttrs attrs)
{
    CXLNFabricState *s = opaque;
    uint8_t buf[8];

    if (size > sizeof(buf) || addr > s->ram_size ||
        size > s->ram_size - addr) {
        return MEMTX_DECODE_ERROR;
    }
    nfabric_access(s, addr, buf, size, false);
    *data = ldn_le_p(buf, size);
    return MEMTX_OK;
}

static MemTxResult nfabric_mem_write(void *opaque, hwaddr addr, uint64_t data,
                                     unsigned size, MemTxAttrs attrs)
{
    CXLNFabricState *s = opaque;
    uint8_t buf[8];

    if (size > sizeof(buf) || addr > s->ram_size ||
        size > s->ram_size - addr) {
        return MEMTX_DECODE_ERROR;
    }
    stn_le_p(buf, size, data);
    nfabric_access(s, addr, buf, size, true);
    return MEMTX_OK;
}

static const MemoryRegionOps nfabric_mem_ops = {
    .read_with_attrs = nfabric_mem_read,
    .write_with_attrs = nfabric_mem_write,
    .endianness = DEVICE_LITTLE_ENDIAN,
    .valid = {
        .min_access_size = 1,
        .max_access_size = 8,
        .unaligned = true,
    },
    .impl = {
        .min_access_size = 1,
        .max_access_size = 8,
        .unaligned = true,
    },
};

/* Parent's poison-clear path: write the line to storage, never count it. */
static bool nfabric_set_cacheline(CXLType3Dev *ct3d, uint64_t dpa,
                                  uint8_t *data)
{
    CXLNFabricState *s = CXL_NFABRIC(ct3d);

    if (dpa > s->ram_size || CXL_CACHE_LINE_SIZE > s->ram_size - dpa) {
        return false;
    }
    memcpy(s->ram + dpa, data, CXL_CACHE_LINE_SIZE);
    memory_region_set_dirty(s->vmr, dpa, CXL_CACHE_LINE_SIZE);
    return true;
}

/* ---- registers ------------------------------------------------------- */

typedef enum {
    NFABRIC_RO,         /* read-only */
    NFABRIC_RW,         /* read-write */
    NFABRIC_WO,         /* write-only command, reads 0 */
} NFabricAccess;

typedef struct NFabricReg {
    hwaddr base;        /* offset of the register in the block */
    unsigned width;     /* 4 or 8 bytes */
    NFabricAccess access;
    int win;            /* window index, or -1 */
} NFabricReg;

/* Decode an offset into the register that holds it; false if none does. */
static bool nfabric_reg_decode(hwaddr off, NFabricReg *r)
{
    r->win = -1;
    r->access = NFABRIC_RO;
    if (off >= NFABRIC_REG_WIN_BASE &&
        off < NFABRIC_REG_WIN(NFABRIC_NUM_WINDOWS, 0)) {
        hwaddr rel = (off - NFABRIC_REG_WIN_BASE) % NFABRIC_WIN_STRIDE;

        r->win = (off - NFABRIC_REG_WIN_BASE) / NFABRIC_WIN_STRIDE;
        switch (rel & ~7ull) {
        case NFABRIC_WIN_DPA_BASE:
        case NFABRIC_WIN_DPA_SIZE:
        case NFABRIC_WIN_COUNTERS:
            r->width = 8;
            r->access = NFABRIC_RW;
            r->base = off & ~7ull;
            return true;
        case NFABRIC_WIN_CONTRIB_WRITES:
        case NFABRIC_WIN_CONTRIB_BYTES:
            r->width = 8;
            r->base = off & ~7ull;
            return true;
        }
        r->width = 4;
        r->base = off & ~3ull;
        switch (rel & ~3ull) {
        case NFABRIC_WIN_CTRL:
        case NFABRIC_WIN_THRESHOLD:
            r->access = NFABRIC_RW;
            return true;
        case NFABRIC_WIN_CMD:
            r->access = NFABRIC_WO;
            return true;
        case NFABRIC_WIN_ERROR:
        case NFABRIC_WIN_RESERVED_CODES:
            return true;
        }
        return false;
    }
    if (off >= NFABRIC_REG_STATS &&
        off < NFABRIC_REG_STATS_PATH(NFABRIC_NUM_PATHS, 0)) {
        r->width = 8;
        r->base = off & ~7ull;
        return true;
    }
    if (off >= NFABRIC_REG_T_PATH &&
        off < NFABRIC_REG_T_PATH_FIELD(NFABRIC_NUM_PATHS, 0)) {
        r->width = 8;
        r->base = off & ~7ull;
        return true;
    }
    switch (off & ~7ull) {
    case NFABRIC_REG_MEM_SIZE:
    case NFABRIC_REG_T_TOTAL_PS:
        r->width = 8;
        r->base = off & ~7ull;
        return true;
    }
    r->width = 4;
    r->base = off & ~3ull;
    switch (r->base) {
    case NFABRIC_REG_CTRL:
        r->access = NFABRIC_WO;
        return true;
    case NFABRIC_REG_MAGIC:
    case NFABRIC_REG_VERSION:
    case NFABRIC_REG_CAPS:
    case NFABRIC_REG_WIN_LAYOUT:
    case NFABRIC_REG_LAST_ERROR:
    case NFABRIC_REG_ERROR_COUNT:
    case NFABRIC_REG_ENABLED_MASK:
    case NFABRIC_REG_T_CLOCK_MHZ:
    case NFABRIC_REG_T_DEPTH:
    case NFABRIC_REG_T_SERVICE_NS:
    case NFABRIC_REG_T_LINK_MBPS:
    case NFABRIC_REG_T_EXPOSED_PPM:
        return true;
    }
    return false;
}

static uint32_t nfabric_caps(void)
{
    return NFABRIC_NUM_WINDOWS |
           ((1u << NFABRIC_NUM_PATHS) - 1) << NFABRIC_CAPS_PATHS_SHIFT |
           (0x3u << NFABRIC_CAPS_WIDTHS_SHIFT) |        /* 8 and 16 bits */
           ((1u << NFABRIC_NUM_TIES) - 1) << NFABRIC_CAPS_TIES_SHIFT;
}

/* The current value of a (decoded) register. */
static uint64_t nfabric_reg_value(CXLNFabricState *s, const NFabricReg *r)
{
    const NFabricTiming *t = &s->timing;
    hwaddr off = r->base;

    if (r->access == NFABRIC_WO) {
        return 0;
    }
    if (r->win >= 0) {
        const NFabricWindow *w = &s->win[r->win];

        switch ((off - NFABRIC_REG_WIN_BASE) % NFABRIC_WIN_STRIDE) {
        case NFABRIC_WIN_DPA_BASE:
            return w->dpa_base;
        case NFABRIC_WIN_DPA_SIZE:
            return w->dpa_size;
        case NFABRIC_WIN_COUNTERS:
            return w->counters;
        case NFABRIC_WIN_CTRL:
            return w->ctrl;
        case NFABRIC_WIN_THRESHOLD:
            return w->threshold;
        case NFABRIC_WIN_ERROR:
            return w->error;
        case NFABRIC_WIN_CONTRIB_WRITES:
            return w->contrib_writes;
        case NFABRIC_WIN_CONTRIB_BYTES:
            return w->contrib_bytes;
        case NFABRIC_WIN_RESERVED_CODES:
            return w->reserved_codes;
        }
        g_assert_not_reached();
    }
    if (off >= NFABRIC_REG_STATS &&
        off < NFABRIC_REG_STATS_PATH(NFABRIC_NUM_PATHS, 0)) {
        hwaddr rel = off - NFABRIC_REG_STATS;

        return s->stats[rel / NFABRIC_STATS_STRIDE]
                       [(rel % NFABRIC_STATS_STRIDE) / 8];
    }
    if (off >= NFABRIC_REG_T_PATH &&
        off < NFABRIC_REG_T_PATH_FIELD(NFABRIC_NUM_PATHS, 0)) {
        hwaddr rel = off - NFABRIC_REG_T_PATH;
        unsigned p = rel / NFABRIC_T_PATH_STRIDE;

        return rel % NFABRIC_T_PATH_STRIDE == NFABRIC_T_PATH_TIME_PS ?
               t->time_ps[p] : t->exposed_ps[p];
    }
    switch (off) {
    case NFABRIC_REG_MAGIC:
        return NFABRIC_MAGIC;
    case NFABRIC_REG_VERSION:
        return NFABRIC_VERSION;
    case NFABRIC_REG_CAPS:
        return nfabric_caps();
    case NFABRIC_REG_WIN_LAYOUT:
        return NFABRIC_REG_WIN_BASE | NFABRIC_WIN_STRIDE << 16;
    case NFABRIC_REG_LAST_ERROR:
        return s->last_error;
    case NFABRIC_REG_ERROR_COUNT:
        return s->error_count;
    case NFABRIC_REG_ENABLED_MASK:
        return s->enabled_mask;
    case NFABRIC_REG_MEM_SIZE:
        return s->ram_size;
    case NFABRIC_REG_T_CLOCK_MHZ:
        return t->p.clock_mhz;
    case NFABRIC_REG_T_DEPTH:
        return t->p.depth;
    case NFABRIC_REG_T_SERVICE_NS:
        return t->p.service_ns;
    case NFABRIC_REG_T_LINK_MBPS:
        return t->p.link_mbps;
    case NFABRIC_REG_T_EXPOSED_PPM:
        return nfabric_timing_exposed_ppm(t);
    case NFABRIC_REG_T_TOTAL_PS:
        return nfabric_timing_total_ps(t);
    }
    g_assert_not_reached();
}

/* Check size/alignment of an access to a decoded register. */
static bool nfabric_reg_access_ok(const NFabricReg *r, hwaddr off,
                                  unsigned size)
{
    if (size != 4 && size != 8) {
        return false;
    }
    if (off % size) {
        return false;
    }
    return size <= r->width;
}

static uint64_t nfabric_reg_read(void *opaque, hwaddr off, unsigned size)
{
    CXLNFabricState *s = opaque;
    NFabricReg r;
    uint64_t val;

    if (!nfabric_reg_decode(off, &r)) {
        nfabric_set_error(s, -1, NFABRIC_ERR_UNMAPPED, off,
                          "read of an undefined register");
        return 0;
    }
    if (!nfabric_reg_access_ok(&r, off, size)) {
        nfabric_set_error(s, -1, NFABRIC_ERR_ACCESS, off,
                          "bad access size or alignment");
        return 0;
    }
    val = nfabric_reg_value(s, &r);
    if (size == 4 && r.width == 8) {
        val = (uint32_t)(val >> ((off - r.base) * 8));
    }
    trace_nfabric_reg_read(off, size, val);
    return val;
}

static void nfabric_global_ctrl_write(CXLNFabricState *s, uint32_t val,
                                      hwaddr off)
{
    if (val & ~NFABRIC_CTRL_VALID) {
        nfabric_set_error(s, -1, NFABRIC_ERR_RESERVED_BITS, off,
                          "reserved bits set in CTRL");
        return;
    }
    if (val & NFABRIC_CTRL_CLEAR_STATS) {
        memset(s->stats, 0, sizeof(s->stats));
    }
    if (val & NFABRIC_CTRL_CLEAR_TIMING) {
        nfabric_timing_clear(&s->timing);
    }
    if (val & NFABRIC_CTRL_CLEAR_ERROR) {
        s->last_error = NFABRIC_ERR_NONE;
        s->error_count = 0;
    }
}

static void nfabric_win_write(CXLNFabricState *s, const NFabricReg *r,
                              hwaddr off, uint64_t val, unsigned size)
{
    NFabricWindow *w = &s->win[r->win];
    hwaddr rel = (r->base - NFABRIC_REG_WIN_BASE) % NFABRIC_WIN_STRIDE;
    uint64_t *field;

    switch (rel) {
    case NFABRIC_WIN_CTRL:
        nfabric_win_ctrl_write(s, r->win, val, off);
        return;
    case NFABRIC_WIN_CMD:
        if (val != NFABRIC_WCMD_CLEAR) {
            nfabric_set_error(s, r->win, NFABRIC_ERR_COMMAND, off,
                              "unknown window command");
            return;
        }
        nfabric_win_clear(s, r->win);
        return;
    }

    /* Configuration registers take writes only while disabled. */
    if (nfabric_win_enabled(s, r->win)) {
        nfabric_set_error(s, r->win, NFABRIC_ERR_BUSY, off,
                          "window configuration written while enabled");
        return;
    }
    if (rel == NFABRIC_WIN_THRESHOLD) {
        w->threshold = val;
        return;
    }
    field = rel == NFABRIC_WIN_DPA_BASE ? &w->dpa_base :
            rel == NFABRIC_WIN_DPA_SIZE ? &w->dpa_size : &w->counters;
    if (size == 8) {
        *field = val;
    } else {
        unsigned shift = (off - r->base) * 8;

        *field = deposit64(*field, shift, 32, val);
    }
}

static void nfabric_reg_write(void *opaque, hwaddr off, uint64_t val,
                              unsigned size)
{
    CXLNFabricState *s = opaque;
    NFabricReg r;

    trace_nfabric_reg_write(off, size, val);
    if (!nfabric_reg_decode(off, &r)) {
        nfabric_set_error(s, -1, NFABRIC_ERR_UNMAPPED, off,
                          "write to an undefined register");
        return;
    }
    if (!nfabric_reg_access_ok(&r, off, size)) {
        nfabric_set_error(s, r.win, NFABRIC_ERR_ACCESS, off,
                          "bad access size or alignment");
        return;
    }
    if (r.access == NFABRIC_RO) {
        nfabric_set_error(s, r.win, NFABRIC_ERR_READONLY, off,
                          "write to a read-only register");
        return;
    }
    if (r.win >= 0) {
        nfabric_win_write(s, &r, off, val, size);
    } else {
        nfabric_global_ctrl_write(s, val, off);
    }
}

static const MemoryRegionOps nfabric_reg_ops = {
    .read = nfabric_reg_read,
    .write = nfabric_reg_write,
    .endianness = DEVICE_LITTLE_ENDIAN,
    .valid = {
        .min_access_size = 1,
        .max_access_size = 8,
        .unaligned = true,
    },
    .impl = {
        .min_access_size = 1,
        .max_access_size = 8,
        .unaligned = true,
    },
};

/* ---- lifecycle ------------------------------------------------------- */

static void nfabric_reset_state(CXLNFabricState *s)
{
    memset(s->win, 0, sizeof(s->win));
    memset(s->cfg, 0, sizeof(s->cfg));
    memset(s->stats, 0, sizeof(s->stats));
    s->enabled_mask = 0;
    s->last_error = NFABRIC_ERR_NONE;
    s->error_count = 0;
    nfabric_timing_init(&s->timing, &s->tparams);
}

static void nfabric_realize(PCIDevice *pdev, Error **errp)
{
    ERRP_GUARD();
    CXLNFabricClass *nc = CXL_NFABRIC_GET_CLASS(pdev);
    CXLNFabricState *s = CXL_NFABRIC(pdev);
    CXLType3Dev *ct3d = CXL_TYPE3(pdev);
    const NFabricTimingParamInfo *bad;

    bad = nfabric_timing_check_info(&s->tparams);
    if (bad) {
        error_setg(errp, "%s: property '%s' must be in %" PRIu32 "..%" PRIu32
                   ", not %" PRIu32, TYPE_CXL_NFABRIC, bad->name, bad->min,
                   bad->max, nfabric_timing_param_get(&s->tparams, bad));
        return;
    }
    if (!ct3d->hostvmem) {
        error_setg(errp, "%s: property 'volatile-memdev' is required",
                   TYPE_CXL_NFABRIC);
        return;
    }
    if (ct3d->hostmem || ct3d->hostpmem || ct3d->dc.num_regions ||
        ct3d->dc.host_dc) {
        error_setg(errp, "%s: only 'volatile-memdev' memory is supported; "
                   "drop 'memdev', 'persistent-memdev', 'num-dc-regions' "
                   "and 'volatile-dc-memdev'", TYPE_CXL_NFABRIC);
        return;
    }

    nc->parent_realize(pdev, errp);
    if (*errp) {
        return;
    }

    s->vmr = host_memory_backend_get_memory(ct3d->hostvmem);
    s->ram = memory_region_get_ram_ptr(s->vmr);
    s->ram_size = memory_region_size(s->vmr);
    nfabric_reset_state(s);

    memory_region_init_io(&s->mem, OBJECT(s), &nfabric_mem_ops, s,
                          "cxl-neuron-fabric-mem", s->ram_size);
    memory_region_add_subregion_overlap(s->vmr, 0, &s->mem, 1);

    memory_region_init_io(&s->regs, OBJECT(s), &nfabric_reg_ops, s,
                          "cxl-neuron-fabric-regs", NFABRIC_REGS_SIZE);
    memory_region_add_subregion(&ct3d->cxl_cstate.crb.component_registers,
                                NFABRIC_REGS_OFFSET, &s->regs);
}

static void nfabric_exit(PCIDevice *pdev)
{
    CXLNFabricClass *nc = CXL_NFABRIC_GET_CLASS(pdev);
    CXLNFabricState *s = CXL_NFABRIC(pdev);
    CXLType3Dev *ct3d = CXL_TYPE3(pdev);

    memory_region_del_subregion(&ct3d->cxl_cstate.crb.component_registers,
                                &s->regs);
    memory_region_del_subregion(s->vmr, &s->mem);
    nc->parent_exit(pdev);
}

static void nfabric_reset_hold(Object *obj, ResetType type)
{
    CXLNFabricClass *nc = CXL_NFABRIC_GET_CLASS(obj);
    CXLNFabricState *s = CXL_NFABRIC(obj);

    if (nc->parent_phases.hold) {
        nc->parent_phases.hold(obj, type);
    }
    nfabric_reset_state(s);
}

/* ---- migration ------------------------------------------------------- */

static int nfabric_post_load(void *opaque, int version_id)
{
    CXLNFabricState *s = opaque;
    uint32_t enabled = 0;

    for (unsigned i = 0; i < NFABRIC_NUM_WINDOWS; i++) {
        if (s->win[i].ctrl & NFABRIC_WCTRL_ENABLE) {
            enabled |= 1u << i;
        }
    }
    return nfabric_rebuild(s, enabled);
}

static const VMStateDescription vmstate_nfabric_window = {
    .name = "cxl-neuron-fabric/window",
    .version_id = 1,
    .minimum_version_id = 1,
    .fields = (const VMStateField[]) {
        VMSTATE_UINT64(dpa_base, NFabricWindow),
        VMSTATE_UINT64(dpa_size, NFabricWindow),
        VMSTATE_UINT64(counters, NFabricWindow),
        VMSTATE_UINT32(ctrl, NFabricWindow),
        VMSTATE_UINT32(threshold, NFabricWindow),
        VMSTATE_UINT32(error, NFabricWindow),
        VMSTATE_UINT32(reserved_codes, NFabricWindow),
        VMSTATE_UINT64(contrib_writes, NFabricWindow),
        VMSTATE_UINT64(contrib_bytes, NFabricWindow),
        VMSTATE_END_OF_LIST()
    },
};

static const VMStateDescription vmstate_nfabric = {
    .name = TYPE_CXL_NFABRIC,
    .version_id = 1,
    .minimum_version_id = 1,
    .post_load = nfabric_post_load,
    .fields = (const VMStateField[]) {
        VMSTATE_PCI_DEVICE(parent_obj.parent_obj, CXLNFabricState),
        /* The HDM decoders (and the rest of the CXL.cache/mem block). */
        VMSTATE_UINT32_ARRAY(parent_obj.cxl_cstate.crb.cache_mem_registers,
                             CXLNFabricState,
                             CXL2_COMPONENT_CM_REGION_SIZE >> 2),
        VMSTATE_STRUCT_ARRAY(win, CXLNFabricState, NFABRIC_NUM_WINDOWS, 1,
                             vmstate_nfabric_window, NFabricWindow),
        VMSTATE_UINT32(last_error, CXLNFabricState),
        VMSTATE_UINT32(error_count, CXLNFabricState),
        VMSTATE_UINT64_2DARRAY(stats, CXLNFabricState, NFABRIC_NUM_PATHS,
                               NFABRIC_NUM_STATS),
        VMSTATE_UINT64_ARRAY(timing.time_ps, CXLNFabricState,
                             NFABRIC_NUM_PATHS),
        VMSTATE_UINT64_ARRAY(timing.exposed_ps, CXLNFabricState,
                             NFABRIC_NUM_PATHS),
        VMSTATE_END_OF_LIST()
    },
};

/* ---- QOM -------------------------------------------------------------- */

static const Property nfabric_props[] = {
    DEFINE_PROP_UINT32("clock-mhz", CXLNFabricState, tparams.clock_mhz,
                       NFABRIC_T_DEFAULT_CLOCK_MHZ),
    DEFINE_PROP_UINT32("datapath-depth", CXLNFabricState, tparams.depth,
                       NFABRIC_T_DEFAULT_DEPTH),
    DEFINE_PROP_UINT32("service-ns", CXLNFabricState, tparams.service_ns,
                       NFABRIC_T_DEFAULT_SERVICE_NS),
    DEFINE_PROP_UINT32("link-mbps", CXLNFabricState, tparams.link_mbps,
                       NFABRIC_T_DEFAULT_LINK_MBPS),
};

/* Read-only figures for qom-get: timing-* and stats-*. */
static void nfabric_get_figure(Object *obj, Visitor *v, const char *name,
                               void *opaque, Error **errp)
{
    CXLNFabricState *s = CXL_NFABRIC(obj);
    const NFabricTiming *t = &s->timing;
    uintptr_t which = (uintptr_t)opaque;
    uint64_t val;

    if (which < NFABRIC_NUM_PATHS) {
        val = t->time_ps[which];
    } else if (which < 2 * NFABRIC_NUM_PATHS) {
        val = t->exposed_ps[which - NFABRIC_NUM_PATHS];
    } else if (which == 2 * NFABRIC_NUM_PATHS) {
        val = nfabric_timing_total_ps(t);
    } else {
        val = nfabric_timing_exposed_ppm(t);
    }
    visit_type_uint64(v, name, &val, errp);
}

static void nfabric_add_figures(ObjectClass *oc)
{
    for (uintptr_t p = 0; p < NFABRIC_NUM_PATHS; p++) {
        g_autofree char *tn = g_strdup_printf("timing-%s-ps",
                                              nfabric_path_name[p]);
        g_autofree char *en = g_strdup_printf("timing-%s-exposed-ps",
                                              nfabric_path_name[p]);

        object_class_property_add(oc, tn, "uint64", nfabric_get_figure,
                                  NULL, NULL, (void *)p);
        object_class_property_set_description(oc, tn,
            "modelled time of the path's accesses, ps (read-only)");
        object_class_property_add(oc, en, "uint64", nfabric_get_figure,
                                  NULL, NULL,
                                  (void *)(p + NFABRIC_NUM_PATHS));
        object_class_property_set_description(oc, en,
            "part of it the datapath added, ps (read-only)");
    }
    object_class_property_add(oc, "timing-total-ps", "uint64",
                              nfabric_get_figure, NULL, NULL,
                              (void *)(uintptr_t)(2 * NFABRIC_NUM_PATHS));
    object_class_property_add(oc, "timing-exposed-ppm", "uint64",
                              nfabric_get_figure, NULL, NULL,
                              (void *)(uintptr_t)(2 * NFABRIC_NUM_PATHS + 1));
    object_class_property_set_description(oc, "timing-total-ps",
        "modelled time of all accesses, ps (read-only)");
    object_class_property_set_description(oc, "timing-exposed-ppm",
        "exposed datapath overhead, parts per million (read-only)");
}

static void nfabric_class_init(ObjectClass *oc, void *data)
{
    DeviceClass *dc = DEVICE_CLASS(oc);
    PCIDeviceClass *pc = PCI_DEVICE_CLASS(oc);
    CXLType3Class *cvc = CXL_TYPE3_CLASS(oc);
    CXLNFabricClass *nc = CXL_NFABRIC_CLASS(oc);
    ResettableClass *rc = RESETTABLE_CLASS(oc);

    nc->parent_realize = pc->realize;
    nc->parent_exit = pc->exit;
    pc->realize = nfabric_realize;
    pc->exit = nfabric_exit;
    pc->vendor_id = NFABRIC_PCI_VENDOR_ID;
    pc->device_id = NFABRIC_PCI_DEVICE_ID;
    resettable_class_set_parent_phases(rc, NULL, nfabric_reset_hold, NULL,
                                       &nc->parent_phases);
    cvc->set_cacheline = nfabric_set_cacheline;

    dc->desc = "CXL Type-3 memory with NEURON-Fabric gradient aggregation";
    dc->vmsd = &vmstate_nfabric;
    device_class_set_props(dc, nfabric_props);
    object_class_property_set_description(oc, "clock-mhz",
        "timing model: controller clock in MHz (1..100000)");
    object_class_property_set_description(oc, "datapath-depth",
        "timing model: low-bit datapath depth in cycles (0..1024)");
    object_class_property_set_description(oc, "service-ns",
        "timing model: CXL service time per access in ns (0..1000000)");
    object_class_property_set_description(oc, "link-mbps",
        "timing model: link bandwidth in MB/s (1..10000000)");
    nfabric_add_figures(oc);
}

static const TypeInfo nfabric_info = {
    .name = TYPE_CXL_NFABRIC,
    .parent = TYPE_CXL_TYPE3,
    .instance_size = sizeof(CXLNFabricState),
    .class_size = sizeof(CXLNFabricClass),
    .class_init = nfabric_class_init,
};

static void nfabric_register_types(void)
{
    type_register_static(&nfabric_info);
}

type_init(nfabric_register_types)
