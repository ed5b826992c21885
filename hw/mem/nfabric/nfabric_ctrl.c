/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * NEURON-Fabric controller model (see include/hw/mem/nfabric_ctrl.h and
 * docs/registers.md): register decode, the path-select table with its
 * validation, and the CXL.mem path that sends each access to the FP32 path
 * or to the aggregation engine and accounts it in the statistics and the
 * timing shim.  Pure C11; the guest is untrusted, so every offset, length
 * and index it supplies is checked here before use.
 */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "hw/mem/nfabric_ctrl.h"

static unsigned nfabric_ctz(uint32_t v)
{
    unsigned n = 0;

    while (!(v & 1)) {
        v >>= 1;
        n++;
    }
    return n;
}

static void nfabric_ctrl_dirty(NFabricCtrl *s, uint64_t dpa, uint64_t len)
{
    if (s->ops && s->ops->dirty && len) {
        s->ops->dirty(s->opaque, dpa, len);
    }
}

static void nfabric_win_event(NFabricCtrl *s, NFabricWinEvent ev,
                              unsigned win, uint32_t code)
{
    if (s->ops && s->ops->window) {
        s->ops->window(s->opaque, ev, win, code);
    }
}

const char *const nfabric_path_names[NFABRIC_NUM_PATHS] = {
    [NFABRIC_PATH_FP32] = "fp32",
    [NFABRIC_PATH_GBINARY] = "gbinary",
    [NFABRIC_PATH_GTERNARY] = "gternary",
};

static inline unsigned nfabric_win_path(const NFabricWindow *w)
{
    return (w->ctrl & NFABRIC_WCTRL_PATH_MASK) >> NFABRIC_WCTRL_PATH_SHIFT;
}

static inline bool nfabric_win_enabled(const NFabricCtrl *s, unsigned i)
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

static void nfabric_set_error(NFabricCtrl *s, int win, uint32_t code,
                              uint64_t off, const char *what)
{
    s->last_error = code;
    s->error_count++;
    if (win >= 0) {
        s->win[win].error = code;
    }
    if (s->ops && s->ops->guest_error) {
        s->ops->guest_error(s->opaque, off, code, what);
    }
}

/* ---- the path-select table ------------------------------------------ */

/*
 * Check window i's programmed configuration against device memory and the
 * other enabled windows.  Returns NFABRIC_ERR_NONE or the error code; the
 * order of the checks is part of the specification (docs/registers.md).
 */
static uint32_t nfabric_win_validate(NFabricCtrl *s, unsigned i,
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
static void nfabric_win_clear(NFabricCtrl *s, unsigned i)
{
    NFabricWindow *w = &s->win[i];

    if (nfabric_win_enabled(s, i)) {
        uint64_t clen = nfabric_win_counter_len(w);

        if (clen) {
            memset(s->ram + w->counters, 0, clen);
            nfabric_ctrl_dirty(s, w->counters, clen);
        }
    }
    w->contrib_writes = 0;
    w->contrib_bytes = 0;
    w->reserved_codes = 0;
    nfabric_win_event(s, NFABRIC_WIN_EV_CLEAR, i, 0);
}

static void nfabric_win_ctrl_write(NFabricCtrl *s, unsigned i,
                                   uint32_t val, uint64_t off)
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
            nfabric_win_event(s, NFABRIC_WIN_EV_DISABLE, i, 0);
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
        nfabric_win_event(s, NFABRIC_WIN_EV_REJECT, i, err);
        nfabric_set_error(s, i, err, off, "window configuration rejected");
        return;
    }
    w->ctrl = val;
    w->error = NFABRIC_ERR_NONE;
    s->cfg[i] = cfg;
    s->enabled_mask |= 1u << i;
    nfabric_win_clear(s, i);
    nfabric_win_event(s, NFABRIC_WIN_EV_ENABLE, i, 0);
}

/*
 * Rebuild the derived state from win[] (after migration): every enabled
 * window must still validate, else the incoming state is refused.
 */
static int nfabric_rebuild(NFabricCtrl *s, uint32_t enabled)
{
    s->enabled_mask = 0;
    for (unsigned i = 0; i < NFABRIC_NUM_WINDOWS; i++) {
        NFabricAggCfg cfg;

        if (!(enabled & (1u << i))) {
            continue;
        }
        if (nfabric_win_validate(s, i, s->win[i].ctrl, &cfg) !=
            NFABRIC_ERR_NONE) {
            return -1;
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
static int nfabric_lookup(NFabricCtrl *s, uint64_t dpa, uint64_t *end)
{
    uint32_t mask = s->enabled_mask;
    uint64_t next = UINT64_MAX;

    while (mask) {
        unsigned i = nfabric_ctz(mask);
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

static void nfabric_account(NFabricCtrl *s, unsigned path, bool write,
                            uint64_t len)
{
    uint64_t *st = s->stats[path];

    st[write ? NFABRIC_STAT_WRITES : NFABRIC_STAT_READS]++;
    st[write ? NFABRIC_STAT_WRITE_BYTES : NFABRIC_STAT_READ_BYTES] += len;
    if (s->record && !s->record_failed &&
        nfabric_trace_write_access(s->record, nfabric_timing_now_ps(&s->timing),
                                   path, len, write) != 0) {
        s->record_failed = true;
    }
    nfabric_timing_account(&s->timing, path, len);
}

/* The model restarted at time 0: a record says so, to replay the same. */
static void nfabric_record_clear(NFabricCtrl *s)
{
    if (s->record && !s->record_failed &&
        nfabric_trace_write_clear(s->record) != 0) {
        s->record_failed = true;
    }
}

/*
 * One guest access of len (1..8) bytes at dpa.  buf holds the bytes in
 * memory order.  An access that straddles a window boundary is served
 * piece by piece, each piece on its own path, and counted once on each
 * path it touched.
 */
static void nfabric_access(NFabricCtrl *s, uint64_t dpa, uint8_t *buf,
                           unsigned len, bool write)
{
    uint64_t served[NFABRIC_NUM_PATHS] = { 0 };

    while (len) {
        uint64_t end;
        int i = nfabric_lookup(s, dpa, &end);
        unsigned n = (unsigned)(end - dpa < len ? end - dpa : len);
        unsigned path = i < 0 ? NFABRIC_PATH_FP32 : s->cfg[i].path;

        if (path == NFABRIC_PATH_FP32) {
            if (write) {
                memcpy(s->ram + dpa, buf, n);
                nfabric_ctrl_dirty(s, dpa, n);
            } else {
                memcpy(buf, s->ram + dpa, n);
            }
        } else {
            NFabricWindow *w = &s->win[i];
            const NFabricAggCfg *cfg = &s->cfg[i];
            uint64_t off = dpa - w->dpa_base;
            uint8_t *counters = s->ram + w->counters;

            if (write) {
                /* The window was validated: the range is inside it. */
                int64_t rc = nfabric_agg_write(cfg, counters, off, buf, n);

                w->reserved_codes += rc > 0 ? (uint32_t)rc : 0;
                w->contrib_writes++;
                w->contrib_bytes += n;
                nfabric_ctrl_dirty(s,
                    w->counters + nfabric_counter_bytes(path, cfg->width, off),
                    nfabric_counter_bytes(path, cfg->width, n));
            } else {
                if (nfabric_agg_read(cfg, counters, off, buf, n) != 0) {
                    memset(buf, 0, n);
                }
            }
        }
        served[path] += n;
        dpa += n;
        buf += n;
        len -= n;
    }
    /* One access on each path it touched, with the bytes that path served. */
    for (unsigned p = 0; p < NFABRIC_NUM_PATHS; p++) {
        if (served[p]) {
            nfabric_account(s, p, write, served[p]);
        }
    }
}

/* ---- registers ------------------------------------------------------- */

typedef enum {
    NFABRIC_RO,         /* read-only */
    NFABRIC_RW,         /* read-write */
    NFABRIC_WO,         /* write-only command, reads 0 */
} NFabricAccess;

typedef struct NFabricReg {
    uint64_t base;        /* offset of the register in the block */
    unsigned width;     /* 4 or 8 bytes */
    NFabricAccess access;
    int win;            /* window index, or -1 */
} NFabricReg;

/* Decode an offset into the register that holds it; false if none does. */
static bool nfabric_reg_decode(uint64_t off, NFabricReg *r)
{
    r->win = -1;
    r->access = NFABRIC_RO;
    if (off >= NFABRIC_REG_WIN_BASE &&
        off < NFABRIC_REG_WIN(NFABRIC_NUM_WINDOWS, 0)) {
        uint64_t rel = (off - NFABRIC_REG_WIN_BASE) % NFABRIC_WIN_STRIDE;

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
    if (off >= NFABRIC_REG_T_ACCESSES &&
        off < NFABRIC_REG_T_ACCESSES_PATH(NFABRIC_NUM_PATHS)) {
        r->width = 8;
        r->base = off & ~7ull;
        return true;
    }
    switch (off & ~7ull) {
    case NFABRIC_REG_MEM_SIZE:
    case NFABRIC_REG_T_TOTAL_PS:
    case NFABRIC_REG_T_RUNTIME_PS:
    case NFABRIC_REG_T_QUEUED_PS:
    case NFABRIC_REG_T_LINK_BUSY_PS:
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
    case NFABRIC_REG_T_MAX_IN_FLIGHT:
    case NFABRIC_REG_T_MAX_QUEUED:
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
static uint64_t nfabric_reg_value(NFabricCtrl *s, const NFabricReg *r)
{
    const NFabricTiming *t = &s->timing;
    uint64_t off = r->base;

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
        abort();
    }
    if (off >= NFABRIC_REG_STATS &&
        off < NFABRIC_REG_STATS_PATH(NFABRIC_NUM_PATHS, 0)) {
        uint64_t rel = off - NFABRIC_REG_STATS;

        return s->stats[rel / NFABRIC_STATS_STRIDE]
                       [(rel % NFABRIC_STATS_STRIDE) / 8];
    }
    if (off >= NFABRIC_REG_T_PATH &&
        off < NFABRIC_REG_T_PATH_FIELD(NFABRIC_NUM_PATHS, 0)) {
        uint64_t rel = off - NFABRIC_REG_T_PATH;
        unsigned p = rel / NFABRIC_T_PATH_STRIDE;

        return rel % NFABRIC_T_PATH_STRIDE == NFABRIC_T_PATH_TIME_PS ?
               t->time_ps[p] : t->exposed_ps[p];
    }
    if (off >= NFABRIC_REG_T_ACCESSES &&
        off < NFABRIC_REG_T_ACCESSES_PATH(NFABRIC_NUM_PATHS)) {
        return t->accesses[(off - NFABRIC_REG_T_ACCESSES) / 8];
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
    case NFABRIC_REG_T_MAX_IN_FLIGHT:
        return t->max_in_flight;
    case NFABRIC_REG_T_RUNTIME_PS:
        return nfabric_timing_runtime_ps(t);
    case NFABRIC_REG_T_QUEUED_PS:
        return t->queued_ps;
    case NFABRIC_REG_T_LINK_BUSY_PS:
        return t->link_busy_ps;
    case NFABRIC_REG_T_MAX_QUEUED:
        return t->max_queued;
    }
    abort();
}

/* Check size/alignment of an access to a decoded register. */
static bool nfabric_reg_access_ok(const NFabricReg *r, uint64_t off,
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

bool nfabric_ctrl_reg_peek(NFabricCtrl *s, uint64_t off, unsigned size,
                           uint64_t *val)
{
    NFabricReg r;

    if (!nfabric_reg_decode(off, &r) || !nfabric_reg_access_ok(&r, off, size)) {
        return false;
    }
    *val = nfabric_reg_value(s, &r);
    if (size == 4 && r.width == 8) {
        *val = (uint32_t)(*val >> ((off - r.base) * 8));
    }
    return true;
}

uint64_t nfabric_ctrl_reg_read(NFabricCtrl *s, uint64_t off, unsigned size)
{
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
    if (s->ops && s->ops->reg_access) {
        s->ops->reg_access(s->opaque, false, off, size, val);
    }
    return val;
}

static void nfabric_global_ctrl_write(NFabricCtrl *s, uint32_t val,
                                      uint64_t off)
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
        nfabric_record_clear(s);
    }
    if (val & NFABRIC_CTRL_CLEAR_ERROR) {
        s->last_error = NFABRIC_ERR_NONE;
        s->error_count = 0;
    }
}

static void nfabric_win_write(NFabricCtrl *s, const NFabricReg *r,
                              uint64_t off, uint64_t val, unsigned size)
{
    NFabricWindow *w = &s->win[r->win];
    uint64_t rel = (r->base - NFABRIC_REG_WIN_BASE) % NFABRIC_WIN_STRIDE;
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

        *field = (*field & ~(0xffffffffull << shift)) |
                 ((val & 0xffffffffull) << shift);
    }
}

void nfabric_ctrl_reg_write(NFabricCtrl *s, uint64_t off, uint64_t val,
                            unsigned size)
{
    NFabricReg r;

    if (s->ops && s->ops->reg_access) {
        s->ops->reg_access(s->opaque, true, off, size, val);
    }
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

void nfabric_ctrl_reset(NFabricCtrl *s)
{
    memset(s->win, 0, sizeof(s->win));
    memset(s->cfg, 0, sizeof(s->cfg));
    memset(s->stats, 0, sizeof(s->stats));
    s->enabled_mask = 0;
    s->last_error = NFABRIC_ERR_NONE;
    s->error_count = 0;
    nfabric_timing_init(&s->timing, &s->timing.p);
    nfabric_record_clear(s);
}


void nfabric_ctrl_init(NFabricCtrl *s, uint8_t *ram, uint64_t ram_size,
                       const NFabricTimingParams *tp,
                       const NFabricCtrlOps *ops, void *opaque)
{
    memset(s, 0, sizeof(*s));
    s->ram = ram;
    s->ram_size = ram_size;
    s->ops = ops;
    s->opaque = opaque;
    s->timing.p = *tp;
    nfabric_ctrl_reset(s);
}

bool nfabric_ctrl_mem_access(NFabricCtrl *s, uint64_t dpa, uint8_t *buf,
                             unsigned len, bool write)
{
    if (len == 0 || len > 8 || dpa > s->ram_size || len > s->ram_size - dpa) {
        return false;
    }
    nfabric_access(s, dpa, buf, len, write);
    return true;
}

int nfabric_ctrl_post_load(NFabricCtrl *s)
{
    uint32_t enabled = 0;

    /*
     * The occupancy ring is not migrated: the device's stream is dependent
     * (each access arrives when the previous completed), so nothing is in
     * flight between accesses.
     */
    s->timing.occ_head = 0;
    s->timing.occ_count = 0;
    s->timing.occ_started = 0;

    for (unsigned i = 0; i < NFABRIC_NUM_WINDOWS; i++) {
        if (s->win[i].ctrl & ~NFABRIC_WCTRL_VALID) {
            return -1;      /* a guest can never store reserved bits */
        }
        if (s->win[i].ctrl & NFABRIC_WCTRL_ENABLE) {
            enabled |= 1u << i;
        }
    }
    return nfabric_rebuild(s, enabled);
}
