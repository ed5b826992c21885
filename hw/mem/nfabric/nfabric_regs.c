/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * NEURON-Fabric controller model: the register block (docs/registers.md),
 * decoded from the register contract's tables (nfabric_regs.h): reads,
 * writes and their checks, and the vendor block's header.  Pure C11; the
 * guest is untrusted, so every offset and size is checked before use.
 * Below only nfabric_ctrl.c (a reset clears the statistics here): a write
 * calls what it changes in the controller's files below it (the layering
 * is in nfabric_ctrl_int.h): the base (nfabric_head.c: errors, locks),
 * jobs, the path-select table (nfabric_table.c), the map protocol and the
 * datapath's record.
 */
#include <stddef.h>
#include <stdlib.h>

#include "hw/mem/nfabric_ctrl.h"
#include "nfabric_ctrl_int.h"

/* ---- registers ------------------------------------------------------- */

typedef struct NFabricReg {
    uint64_t base;      /* offset of the register in the block */
    unsigned width;     /* 4 or 8 bytes */
    NFabricRegAccess access;
    int win;            /* window index (window, round, posted), or -1 */
    bool round;         /* a round register of window win */
    bool post;          /* a posted doorbell register of window win (1.7) */
} NFabricReg;

/* The register contract's tables (nfabric_regs.h). */
static const NFabricRegDesc nfabric_global_regs[] = {
    NFABRIC_GLOBAL_REGS(NFABRIC_REG_DESC)
};
static const NFabricRegDesc nfabric_win_regs[] = {
    NFABRIC_WIN_REGS(NFABRIC_REG_DESC)
};
static const NFabricRegDesc nfabric_round_regs[] = {
    NFABRIC_ROUND_REGS(NFABRIC_REG_DESC)
};
static const NFabricRegDesc nfabric_post_regs[] = {
    NFABRIC_POST_REGS(NFABRIC_REG_DESC)
};
#define NFABRIC_NROWS(t) (sizeof(t) / sizeof((t)[0]))

/*
 * The register of table t (n rows) that holds offset rel of the table's
 * block; r->base is then the register's offset in the block.
 */
static bool nfabric_decode_table(const NFabricRegDesc *t, size_t n,
                                 uint64_t rel, NFabricReg *r)
{
    for (size_t k = 0; k < n; k++) {
        if (rel >= t[k].off &&
            rel - t[k].off < (uint64_t)t[k].width * t[k].count) {
            r->width = t[k].width;
            r->access = t[k].access;
            r->base = rel & ~(uint64_t)(t[k].width - 1);
            return true;
        }
    }
    return false;
}

/* Decode an offset into the register that holds it; false if none does. */
static bool nfabric_reg_decode(uint64_t off, NFabricReg *r)
{
    const NFabricRegDesc *t = nfabric_global_regs;
    size_t n = NFABRIC_NROWS(nfabric_global_regs);
    uint64_t block = 0;

    r->win = -1;
    r->round = false;
    r->post = false;
    if (off >= NFABRIC_REG_WIN_BASE &&
        off < NFABRIC_REG_WIN(NFABRIC_NUM_WINDOWS, 0)) {
        r->win = (off - NFABRIC_REG_WIN_BASE) / NFABRIC_WIN_STRIDE;
        block = NFABRIC_REG_WIN(r->win, 0);
        t = nfabric_win_regs;
        n = NFABRIC_NROWS(nfabric_win_regs);
    } else if (off >= NFABRIC_REG_ROUND_BASE &&
               off < NFABRIC_REG_ROUND(NFABRIC_NUM_WINDOWS, 0)) {
        r->win = (off - NFABRIC_REG_ROUND_BASE) / NFABRIC_ROUND_STRIDE;
        r->round = true;
        block = NFABRIC_REG_ROUND(r->win, 0);
        t = nfabric_round_regs;
        n = NFABRIC_NROWS(nfabric_round_regs);
    } else if (off >= NFABRIC_REG_POST_BASE &&
               off < NFABRIC_REG_POST(NFABRIC_NUM_WINDOWS, 0)) {
        r->win = (off - NFABRIC_REG_POST_BASE) / NFABRIC_POST_STRIDE;
        r->post = true;
        block = NFABRIC_REG_POST(r->win, 0);
        t = nfabric_post_regs;
        n = NFABRIC_NROWS(nfabric_post_regs);
    }
    if (!nfabric_decode_table(t, n, off - block, r)) {
        return false;
    }
    r->base += block;
    return true;
}

static uint64_t nfabric_round_value(NFabricCtrl *s, const NFabricReg *r)
{
    NFabricShared *sh = s->sh;
    unsigned i = r->win;

    switch ((r->base - NFABRIC_REG_ROUND_BASE) % NFABRIC_ROUND_STRIDE) {
    case NFABRIC_ROUND_SEQ:
        return sh->round[i].seq;
    case NFABRIC_ROUND_DONE:
        return sh->round[i].done;
    case NFABRIC_ROUND_STATUS:
        return nfabric_round_status(s, i);
    }
    abort();
}

/*
 * The sum over the heads in mask of the 64-bit count at byte offset off
 * of each head's line (NFabricSharedHead): what a device-wide register
 * reads, each head keeping its own count on lines no other head writes.
 */
static uint64_t nfabric_heads_sum(const NFabricCtrl *s, size_t off,
                                  uint32_t mask)
{
    uint64_t sum = 0;

    for (unsigned h = 0; h < s->heads; h++) {
        if (mask & (1u << h)) {
            const uint64_t *v = (const uint64_t *)
                ((const char *)&s->sh->head[h] + off);

            sum += __atomic_load_n(v, __ATOMIC_RELAXED);
        }
    }
    return sum;
}

/* A shared window's contribution count: the sum of its heads'. */
static uint64_t nfabric_win_contrib_sum(const NFabricCtrl *s, unsigned i,
                                        bool bytes)
{
    size_t off = bytes ? offsetof(NFabricSharedHead, contrib_bytes) :
                         offsetof(NFabricSharedHead, contrib_writes);

    return nfabric_heads_sum(s, off + i * sizeof(uint64_t), UINT32_MAX);
}

static uint64_t nfabric_win_value(NFabricCtrl *s, const NFabricReg *r)
{
    const NFabricWindow *w = &s->sh->win[r->win];

    switch ((r->base - NFABRIC_REG_WIN_BASE) % NFABRIC_WIN_STRIDE) {
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
    case NFABRIC_WIN_CONTRIB_BYTES:
        if (s->shared) {
            return nfabric_win_contrib_sum(s, r->win,
                (r->base - NFABRIC_REG_WIN_BASE) % NFABRIC_WIN_STRIDE ==
                NFABRIC_WIN_CONTRIB_BYTES);
        }
        return (r->base - NFABRIC_REG_WIN_BASE) % NFABRIC_WIN_STRIDE ==
               NFABRIC_WIN_CONTRIB_BYTES ? w->contrib_bytes : w->contrib_writes;
    case NFABRIC_WIN_RESERVED_CODES:
        if (s->shared) {
            uint32_t sum = 0;

            for (unsigned h = 0; h < s->heads; h++) {
                sum += __atomic_load_n(&s->sh->head[h].reserved_codes[r->win],
                                       __ATOMIC_RELAXED);
            }
            return sum;
        }
        return w->reserved_codes;
    }
    abort();
}

/* Statistic k of path p summed over every head of the device. */
static uint64_t nfabric_pool_stat(const NFabricCtrl *s, unsigned p,
                                  unsigned k)
{
    return nfabric_heads_sum(s, offsetof(NFabricSharedHead, stats) +
                             (p * NFABRIC_NUM_STATS + k) * sizeof(uint64_t),
                             nfabric_fm_heads(s));
}

/* Is the register's value read from the shared state (device scope)? */
static bool nfabric_reg_in_state(const NFabricReg *r)
{
    uint64_t off = r->base;

    if (r->post) {
        return false;           /* this head's own */
    }
    return r->round || r->win >= 0 || off == NFABRIC_REG_ENABLED_MASK ||
           off == NFABRIC_REG_JOB ||
           off == NFABRIC_REG_HEADS_LIVE || off == NFABRIC_REG_HEADS_LOST ||
           (off >= NFABRIC_REG_HEAD_CONTRIB &&
            off < NFABRIC_REG_HEAD_CONTRIB_WIN(NFABRIC_NUM_WINDOWS)) ||
           (off >= NFABRIC_REG_POOL_STATS &&
            off < NFABRIC_REG_POOL_STATS_PATH(NFABRIC_NUM_PATHS, 0));
}

/* The current value of a (decoded) register. */
static uint64_t nfabric_reg_value(NFabricCtrl *s, const NFabricReg *r)
{
    const NFabricTiming *t = &s->timing;
    const NFabricShared *sh = s->sh;
    uint64_t off = r->base;

    if (r->access == NFABRIC_ACCESS_WO) {
        return 0;
    }
    if (s->shared && !s->failed &&
        nfabric_shared_faults() != s->faults_seen) {
        /* Truncated under us (HEAD_INFO.STATE_FAILED says so from now). */
        (void)nfabric_state_ok(s);
    }
    if (s->failed && nfabric_reg_in_state(r)) {
        return 0;               /* nothing of an unusable state is shown */
    }
    if (s->shared && nfabric_reg_in_state(r) && !nfabric_fm_current(s)) {
        return 0;               /* the assignment unusable, or busy */
    }
    if (r->win >= 0 && !nfabric_fm_window(s, r->win)) {
        return 0;               /* another job's window: nothing of it */
    }
    if (r->post) {
        return nfabric_posted_reg_read(s, r->win,
                                       r->base - NFABRIC_REG_POST(r->win, 0));
    }
    if (r->round) {
        return nfabric_round_value(s, r);
    }
    if (r->win >= 0) {
        return nfabric_win_value(s, r);
    }
    if (off >= NFABRIC_REG_IRQ_MSGNUM && off <= NFABRIC_REG_IRQ_HEAD_STATUS) {
        return nfabric_irq_reg_read(s, off);
    }
    if (off >= NFABRIC_REG_STATS &&
        off < NFABRIC_REG_STATS_PATH(NFABRIC_NUM_PATHS, 0)) {
        uint64_t rel = off - NFABRIC_REG_STATS;

        return s->stats[rel / NFABRIC_STATS_STRIDE]
                       [(rel % NFABRIC_STATS_STRIDE) / 8];
    }
    if (off >= NFABRIC_REG_HEAD_CONTRIB &&
        off < NFABRIC_REG_HEAD_CONTRIB_WIN(NFABRIC_NUM_WINDOWS)) {
        return sh->head[s->head_select]
                   .contrib_writes[(off - NFABRIC_REG_HEAD_CONTRIB) / 8];
    }
    if (off >= NFABRIC_REG_POOL_STATS &&
        off < NFABRIC_REG_POOL_STATS_PATH(NFABRIC_NUM_PATHS, 0)) {
        uint64_t rel = off - NFABRIC_REG_POOL_STATS;

        return nfabric_pool_stat(s, rel / NFABRIC_STATS_STRIDE,
                                 (rel % NFABRIC_STATS_STRIDE) / 8);
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
        return NFABRIC_CAPS_VALUE;
    case NFABRIC_REG_WIN_LAYOUT:
        return NFABRIC_WIN_LAYOUT_VALUE;
    case NFABRIC_REG_LAST_ERROR:
        return s->last_error;
    case NFABRIC_REG_ERROR_COUNT:
        return s->error_count;
    case NFABRIC_REG_ENABLED_MASK:
        return sh->enabled_mask & (s->shared && s->fm.assigned ?
                                   s->fm.windows : UINT32_MAX);
    case NFABRIC_REG_MEM_SIZE:
        return s->ram_size;
    case NFABRIC_REG_HEAD_INFO:
        return s->head | s->heads << NFABRIC_HEAD_INFO_COUNT_SHIFT |
               (s->shared ? NFABRIC_HEAD_INFO_SHARED : 0) |
               (s->failed ? NFABRIC_HEAD_INFO_STATE_FAILED : 0) |
               (s->staging ? NFABRIC_HEAD_INFO_STAGING : 0);
    case NFABRIC_REG_HEADS_LIVE:
        return nfabric_shared_reap(s->sh, s->head) & nfabric_fm_heads(s);
    case NFABRIC_REG_HEADS_LOST:
        return sh->lost_mask & nfabric_fm_heads(s);
    case NFABRIC_REG_JOB:
        if (!s->shared || !s->fm.assigned) {
            return (uint32_t)NFABRIC_JOB_WINDOWS_MASK;
        }
        return s->fm.job | NFABRIC_JOB_ASSIGNED |
               s->fm.windows << NFABRIC_JOB_WINDOWS_SHIFT;
    case NFABRIC_REG_HEAD_SELECT:
        return s->head_select;
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
    case NFABRIC_REG_T_RUNTIME_PS:
        return nfabric_timing_runtime_ps(t);
    case NFABRIC_REG_T_QUEUED_PS:
        return t->queued_ps;
    case NFABRIC_REG_T_LINK_BUSY_PS:
        return t->link_busy_ps;
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

    if (s->shared) {
        nfabric_shared_thread_enter();
    }
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

    if (s->shared) {
        nfabric_shared_thread_enter();
    }
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

/* ---- the vendor block's header (1.6) --------------------------------- */

/* The header field at off, if a read of size bytes there is one. */
static bool nfabric_dvs_field(uint64_t off, unsigned size, uint32_t *val)
{
    if (size != 4 || off % 4) {
        return false;
    }
    switch (off) {
    case NFABRIC_DVS_HDR_ID:
        *val = NFABRIC_DVS_ID;
        return true;
    case NFABRIC_DVS_HDR_REVISION:
        *val = NFABRIC_DVS_REVISION;
        return true;
    case NFABRIC_DVS_HDR_LENGTH:
        *val = NFABRIC_DVS_SIZE;
        return true;
    }
    return false;
}

uint64_t nfabric_ctrl_dvs_read(NFabricCtrl *s, uint64_t off, unsigned size)
{
    uint32_t val;

    if (off >= NFABRIC_DVS_HDR_SIZE) {
        nfabric_set_error(s, -1, NFABRIC_ERR_UNMAPPED, off,
                          "read past the vendor block's header");
        return 0;
    }
    if (!nfabric_dvs_field(off, size, &val)) {
        nfabric_set_error(s, -1, NFABRIC_ERR_ACCESS, off,
                          "vendor block header: bad access size or alignment");
        return 0;
    }
    return val;
}

void nfabric_ctrl_dvs_write(NFabricCtrl *s, uint64_t off, uint64_t val,
                            unsigned size)
{
    (void)val;
    (void)size;
    if (off >= NFABRIC_DVS_HDR_SIZE) {
        nfabric_set_error(s, -1, NFABRIC_ERR_UNMAPPED, off,
                          "write past the vendor block's header");
    } else {
        nfabric_set_error(s, -1, NFABRIC_ERR_READONLY, off,
                          "write to the vendor block's header (read-only)");
    }
}

/* This head's statistics, and its timing model, to zero. */
void nfabric_head_clear_stats(NFabricCtrl *s)
{
    for (unsigned p = 0; p < NFABRIC_NUM_PATHS; p++) {
        for (unsigned k = 0; k < NFABRIC_NUM_STATS; k++) {
            __atomic_store_n(&s->stats[p][k], 0, __ATOMIC_RELAXED);
        }
    }
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
        nfabric_head_clear_stats(s);
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

static void nfabric_head_select_write(NFabricCtrl *s, uint32_t val,
                                      uint64_t off)
{
    if (val >= s->heads) {
        nfabric_set_error(s, -1, NFABRIC_ERR_HEAD, off,
                          "HEAD_SELECT names a head the device does not have");
        return;
    }
    if (!(nfabric_fm_heads(s) & (1u << val))) {
        nfabric_set_error(s, -1, NFABRIC_ERR_OWNER, off, "HEAD_SELECT names "
                          "a head of another job (fabric manager's jobs)");
        return;
    }
    s->head_select = val;
}

/* ROUND_COMPLETE: this head's contribution to round val is complete. */
static void nfabric_round_complete(NFabricCtrl *s, unsigned i, uint32_t val,
                                   uint64_t off)
{
    NFabricShared *sh = s->sh;

    if (!nfabric_lock_win(s, i)) {
        nfabric_state_refused(s, off);
        return;
    }
    if (!nfabric_win_enabled(s, i) || val != sh->round[i].seq) {
        nfabric_unlock_win(s, i);
        /* A head's own mistake: the shared window's ERROR is left alone. */
        nfabric_set_error(s, -1, NFABRIC_ERR_ROUND, off,
                          "completes a round that is not the window's "
                          "current one");
        return;
    }
    __atomic_fetch_or(&sh->round[i].done, 1u << s->head, __ATOMIC_RELEASE);
    nfabric_unlock_win(s, i);
    nfabric_cpmu_count(s, NFABRIC_CPMU_GROUP_DEVICE,
                       NFABRIC_CPMU_EV_CONTRIB, 1);
    nfabric_shared_event_bump(sh);
}

static void nfabric_win_write(NFabricCtrl *s, const NFabricReg *r,
                              uint64_t off, uint64_t val, unsigned size)
{
    NFabricWindow *w = &s->sh->win[r->win];
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
        nfabric_win_clear(s, r->win, off);
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

/* A write to a decoded, writable register (configuration lock held). */
static void nfabric_reg_write_locked(NFabricCtrl *s, const NFabricReg *r,
                                     uint64_t off, uint64_t val,
                                     unsigned size)
{
    if (r->round) {
        nfabric_round_complete(s, r->win, val, off);
    } else if (r->win >= 0) {
        nfabric_win_write(s, r, off, val, size);
    } else if (r->base == NFABRIC_REG_HEAD_SELECT) {
        nfabric_head_select_write(s, val, off);
    } else {
        nfabric_global_ctrl_write(s, val, off);
    }
}

void nfabric_ctrl_reg_write(NFabricCtrl *s, uint64_t off, uint64_t val,
                            unsigned size)
{
    NFabricReg r;

    if (s->shared) {
        nfabric_shared_thread_enter();
    }
    if (s->ops && s->ops->reg_access) {
        s->ops->reg_access(s->opaque, true, off, size, val);
    }
    if (!nfabric_reg_decode(off, &r)) {
        nfabric_set_error(s, -1, NFABRIC_ERR_UNMAPPED, off,
                          "write to an undefined register");
        return;
    }
    /* Errors on a window's registers also set its ERROR; round ones not. */
    if (!nfabric_reg_access_ok(&r, off, size)) {
        nfabric_set_error(s, r.round || r.post ? -1 : r.win, NFABRIC_ERR_ACCESS, off,
                          "bad access size or alignment");
        return;
    }
    if (r.access == NFABRIC_ACCESS_RO) {
        nfabric_set_error(s, r.round || r.post ? -1 : r.win, NFABRIC_ERR_READONLY, off,
                          "write to a read-only register");
        return;
    }
    /* The interrupt registers are this head's own (1.8). */
    if (r.base >= NFABRIC_REG_IRQ_MSGNUM &&
        r.base <= NFABRIC_REG_IRQ_HEAD_STATUS) {
        nfabric_irq_reg_write(s, r.base, (uint32_t)val, off);
        return;
    }
    /* CTRL is this head's own; the rest is the device's. */
    if (r.win < 0 && r.base != NFABRIC_REG_HEAD_SELECT) {
        nfabric_global_ctrl_write(s, val, off);
        return;
    }
    /* Only the windows of this head's job (fabric manager). */
    if (s->shared && !s->failed && !nfabric_fm_current(s)) {
        nfabric_state_refused(s, off);
        return;
    }
    if (r.win >= 0 && !nfabric_fm_window(s, r.win)) {
        nfabric_set_error(s, -1, NFABRIC_ERR_OWNER, off, "write to a window "
                          "of another job (fabric manager's jobs)");
        return;
    }
    /*
     * A doorbell is this head's, as its memory accesses are: stripe locks
     * only, no job lock, so that heads post at once (nfabric_posted.c).
     */
    if (r.post) {
        if (s->shared && (s->failed ||
                          nfabric_shared_faults() != s->faults_seen) &&
            !nfabric_state_ok(s)) {
            nfabric_state_refused(s, off);
            return;
        }
        nfabric_posted_reg_write(s, r.win, r.base - NFABRIC_REG_POST(r.win, 0),
                                 (uint32_t)val, off);
        return;
    }
    /* The job's heads' register writes are serialised by its lock. */
    if (s->failed || !nfabric_lock_job(s)) {
        nfabric_state_refused(s, off);
        return;
    }
    if (!nfabric_state_ok(s)) {
        nfabric_unlock_job(s);
        nfabric_state_refused(s, off);
        return;
    }
    if (s->map_abort >= 0) {
        nfabric_map_give_up_locked(s, (unsigned)s->map_abort);
    }
    nfabric_reg_write_locked(s, &r, off, val, size);
    nfabric_unlock_job(s);
    if (s->map_win >= 0) {
        nfabric_map_finish(s);  /* an enable of a shared head, begun above */
    }
}
