/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * NEURON-Fabric controller model: the CXL.mem path.  Every access is looked
 * up in the view and sent to plain memory, to an FP32 window or to the
 * low-bit datapath (the aggregation engine, or the RTL instead of it or
 * beside it), then accounted in the statistics, the timing shim and the
 * access record.  Pure C11; the guest is untrusted: an access is checked
 * against device memory and the head's reach first.  Calls the engine
 * (nfabric_engine.h), the shared state's stripe locks, the timing shim and
 * the record, and of the controller's other files (nfabric_ctrl_int.h,
 * which gives the layering) only those below it: the base (nfabric_head.c:
 * errors, a lock that failed; dirty memory is the header's inline) and
 * jobs (the assignment, the view).
 */
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <string.h>

#include "hw/mem/nfabric_ctrl.h"
#include "nfabric_ctrl_int.h"

static unsigned nfabric_ctz(uint32_t v)
{
    unsigned n = 0;

    while (!(v & 1)) {
        v >>= 1;
        n++;
    }
    return n;
}

/* ---- the CXL.mem path ------------------------------------------------ */

/*
 * The window of the view holding dpa, or -1 for plain memory; *end is
 * where the current path ends (window end, or the next window's start).
 */
static int nfabric_lookup(const NFabricView *v, uint64_t dpa, uint64_t *end)
{
    uint32_t mask = v->mask;
    uint64_t next = UINT64_MAX;

    while (mask) {
        unsigned i = nfabric_ctz(mask);
        uint64_t base = v->base[i], size = v->size[i];

        mask &= mask - 1;
        if (dpa >= base && dpa - base < size) {
            *end = base + size;
            return i;
        }
        if (base > dpa && base < next) {
            next = base;
        }
    }
    *end = next;
    return -1;
}

/*
 * A record write went (rc 0) or failed: after the first failure recording
 * stops, the owner is told once, and every record not written is counted.
 */
static void nfabric_record_result(NFabricCtrl *s, int rc)
{
    if (rc == 0) {
        return;
    }
    s->record_lost++;
    if (!s->record_failed) {
        s->record_failed = true;
        if (s->ops && s->ops->record_failed) {
            s->ops->record_failed(s->opaque);
        }
    }
}

static void nfabric_account(NFabricCtrl *s, unsigned path, bool write,
                            uint64_t len)
{
    uint64_t *st = s->stats[path];

    st[write ? NFABRIC_STAT_WRITES : NFABRIC_STAT_READS]++;
    st[write ? NFABRIC_STAT_WRITE_BYTES : NFABRIC_STAT_READ_BYTES] += len;
    nfabric_cpmu_count(s, NFABRIC_CPMU_GROUP_DEVICE,
                       write ? NFABRIC_CPMU_EV_WRITES(path) :
                       NFABRIC_CPMU_EV_READS(path), 1);
    nfabric_cpmu_count(s, NFABRIC_CPMU_GROUP_DEVICE,
                       write ? NFABRIC_CPMU_EV_WRITE_BYTES(path) :
                       NFABRIC_CPMU_EV_READ_BYTES(path), len);
    if (s->record) {
        nfabric_record_result(s, s->record_failed ? -1 :
            nfabric_record_write_access(s->record,
                                       nfabric_timing_now_ps(&s->timing),
                                       path, len, write));
    }
    nfabric_timing_account(&s->timing, path, len);
}

/* The model restarted at time 0: a record says so, to replay the same. */
void nfabric_record_clear(NFabricCtrl *s)
{
    if (s->record) {
        nfabric_record_result(s, s->record_failed ? -1 :
                              nfabric_record_write_clear(s->record));
    }
}

/* ---- the low-bit datapath: the engine, the RTL instead or beside it ---- */

/* A line of the datapath: 64 bytes of signs or codes. */
#define NFABRIC_RTL_LINE        64
/* Accesses the RTL takes: the CXL.mem path's, 1..8 bytes. */
#define NFABRIC_RTL_MAX_ACCESS  8
/* Counter bytes of the (at most two) lines such an access touches. */
#define NFABRIC_RTL_MAX_BLOCK   (2 * NFABRIC_RTL_LINE * 8 * 2)

void nfabric_ctrl_set_rtl(NFabricCtrl *s, NFabricRtlMode mode,
                          const NFabricRtlOps *ops, void *rtl)
{
    s->rtl_mode = ops && rtl ? mode : NFABRIC_RTL_OFF;
    s->rtl_ops = ops;
    s->rtl = rtl;
}

#ifdef __GNUC__
__attribute__((format(printf, 6, 7)))
#endif
static void nfabric_rtl_report(NFabricCtrl *s, unsigned i, bool write,
                               uint64_t off, unsigned n, const char *fmt, ...)
{
    char what[256];
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(what, sizeof(what), fmt, ap);
    va_end(ap);
    s->rtl_mismatches++;
    if (s->ops && s->ops->rtl_mismatch) {
        s->ops->rtl_mismatch(s->opaque, i, write, off, n, what);
    } else {
        fprintf(stderr, "nfabric: the RTL and the engine differ on a %s of "
                "window %u at +0x%" PRIx64 " (%u bytes): %s\n",
                write ? "write" : "read", i, off, n, what);
    }
}

/*
 * Apply a low-bit write of window i (the range checked: inside the
 * window).  Returns what nfabric_agg_write() returns, or sets *dropped
 * (compare mode, a difference: the counters are as before the access).
 */
static int64_t nfabric_dp_write_compare(NFabricCtrl *s, unsigned i,
                                        const NFabricAggCfg *cfg,
                                        uint8_t *counters, uint64_t off,
                                        const uint8_t *buf, unsigned n,
                                        bool *dropped);

static int64_t nfabric_dp_write(NFabricCtrl *s, unsigned i,
                                const NFabricAggCfg *cfg, uint8_t *counters,
                                uint64_t off, const uint8_t *buf, unsigned n,
                                bool *dropped)
{
    if (s->rtl_mode == NFABRIC_RTL_OFF || n > NFABRIC_RTL_MAX_ACCESS ||
        off > cfg->size || n > cfg->size - off) {
        return nfabric_agg_write(cfg, counters, off, buf, n);
    }
    s->rtl_accesses++;
    if (s->rtl_mode == NFABRIC_RTL_SERVE) {
        return s->rtl_ops->agg_write(s->rtl, cfg, counters, off, buf, n);
    }
    return nfabric_dp_write_compare(s, i, cfg, counters, off, buf, n, dropped);
}

/*
 * Compare: the RTL on a copy of the counter block of the lines the access
 * touches (a window of those lines alone: the same lines, the same lanes),
 * the engine on the counters themselves.  A function of its own, never
 * inlined: its two blocks on the stack (which QEMU's build zero-fills on
 * entry, -ftrivial-auto-var-init=zero) cost every access of the engine
 * alone 4 KiB of stores when they were in nfabric_dp_write (measured: a
 * tenth of a trapped access).
 */
static __attribute__((noinline)) int64_t
nfabric_dp_write_compare(NFabricCtrl *s, unsigned i, const NFabricAggCfg *cfg,
                         uint8_t *counters, uint64_t off, const uint8_t *buf,
                         unsigned n, bool *dropped)
{
    uint8_t before[NFABRIC_RTL_MAX_BLOCK], rtl[NFABRIC_RTL_MAX_BLOCK];
    uint64_t a0, b0, c0, cl, k;
    NFabricAggCfg lc;
    int64_t rc, rr;
    uint8_t eng;

    a0 = off & ~(uint64_t)(NFABRIC_RTL_LINE - 1);
    b0 = (off + n + NFABRIC_RTL_LINE - 1) & ~(uint64_t)(NFABRIC_RTL_LINE - 1);
    if (b0 > cfg->size) {
        b0 = cfg->size;
    }
    lc = *cfg;
    lc.size = b0 - a0;
    c0 = nfabric_counter_bytes(cfg->path, cfg->width, a0);
    cl = nfabric_counter_bytes(cfg->path, cfg->width, b0 - a0);
    if (cl > sizeof(before)) {
        return nfabric_agg_write(cfg, counters, off, buf, n);
    }
    memcpy(before, counters + c0, cl);
    memcpy(rtl, counters + c0, cl);
    rr = s->rtl_ops->agg_write(s->rtl, &lc, rtl, off - a0, buf, n);
    rc = nfabric_agg_write(cfg, counters, off, buf, n);
    for (k = 0; k < cl && rtl[k] == counters[c0 + k]; k++) {
    }
    if (rr == rc && k == cl) {
        return rc;
    }
    eng = k < cl ? counters[c0 + k] : 0;
    memcpy(counters + c0, before, cl);
    *dropped = true;
    if (rr != rc) {
        nfabric_rtl_report(s, i, true, off, n, "the RTL returns %" PRId64
                           ", the engine %" PRId64, rr, rc);
    } else {
        uint64_t e = (c0 + k) / (cfg->width / 8);
        unsigned per_line = cfg->path == NFABRIC_PATH_GBINARY ? 512 : 256;

        nfabric_rtl_report(s, i, true, off, n, "line %" PRIu64 " lane %" PRIu64
                           " (counter byte %" PRIu64 "): RTL 0x%02x, engine "
                           "0x%02x, before 0x%02x", e / per_line,
                           e % per_line, c0 + k, rtl[k], eng, before[k]);
    }
    return 0;
}

/*
 * Produce a low-bit read-out of window i.  Returns what nfabric_agg_read()
 * returns, or sets *dropped (compare mode, a difference).
 */
static int nfabric_dp_read(NFabricCtrl *s, unsigned i, const NFabricAggCfg *cfg,
                           const uint8_t *counters, uint64_t off, uint8_t *buf,
                           unsigned n, bool *dropped)
{
    uint8_t rtl[NFABRIC_RTL_MAX_ACCESS];
    unsigned k;
    int rc, rr;

    if (s->rtl_mode == NFABRIC_RTL_OFF || n > NFABRIC_RTL_MAX_ACCESS) {
        return nfabric_agg_read(cfg, counters, off, buf, n);
    }
    s->rtl_accesses++;
    if (s->rtl_mode == NFABRIC_RTL_SERVE) {
        return s->rtl_ops->agg_read(s->rtl, cfg, counters, off, buf, n);
    }
    memset(rtl, 0, sizeof(rtl));
    rr = s->rtl_ops->agg_read(s->rtl, cfg, counters, off, rtl, n);
    rc = nfabric_agg_read(cfg, counters, off, buf, n);
    for (k = 0; rc == 0 && k < n && rtl[k] == buf[k]; k++) {
    }
    if (rr == rc && (rc != 0 || k == n)) {
        return rc;
    }
    *dropped = true;
    if (rr != rc) {
        nfabric_rtl_report(s, i, false, off, n, "the RTL returns %d, the "
                           "engine %d", rr, rc);
    } else {
        nfabric_rtl_report(s, i, false, off, n, "read-out byte %" PRIu64
                           ": RTL 0x%02x, engine 0x%02x", off + k, rtl[k],
                           buf[k]);
    }
    memset(buf, 0, n);
    return 0;
}

/* This head contributes to window i's round (before its bytes count). */
void nfabric_dp_contributing(NFabricCtrl *s, unsigned i)
{
    /* Other heads set their bits under other stripes: atomically. */
    if (!(__atomic_load_n(&s->sh->round[i].contrib, __ATOMIC_RELAXED) &
          (1u << s->head))) {
        __atomic_fetch_or(&s->sh->round[i].contrib, 1u << s->head,
                          __ATOMIC_RELAXED);
    }
}

/*
 * This head's writes accesses of bytes to window i counted, reserved
 * G-Ternary codes among them.  Per head: a line no other head writes.  The
 * window's totals are the heads' sum (nfabric_win_value); a private device
 * keeps them in the window too (migrated, one head).
 */
void nfabric_dp_contributed(NFabricCtrl *s, unsigned i, uint64_t writes,
                            uint64_t bytes, uint64_t reserved)
{
    NFabricShared *sh = s->sh;
    NFabricWindow *w = &sh->win[i];

    if (reserved) {
        if (s->shared) {
            sh->head[s->head].reserved_codes[i] += (uint32_t)reserved;
        } else {
            w->reserved_codes += (uint32_t)reserved;
        }
    }
    sh->head[s->head].contrib_writes[i] += writes;
    sh->head[s->head].contrib_bytes[i] += bytes;
    if (!s->shared) {
        w->contrib_writes += writes;
        w->contrib_bytes += bytes;
    }
}

/*
 * Serve n bytes at dpa on window i (locked, configuration as looked up).
 * FP32 windows store and return the bytes; low-bit windows aggregate.
 * Writes count as one access of this head's contribution to the window's
 * round.
 */
static void nfabric_win_access(NFabricCtrl *s, unsigned i, uint64_t dpa,
                               uint8_t *buf, unsigned n, bool write)
{
    const NFabricAggCfg *cfg = &s->view.cfg[i];
    uint64_t off = dpa - s->view.base[i];
    int64_t rc = 0;
    /* FP32 windows' COUNTERS is never validated: no pointer from it. */
    uint8_t *counters = cfg->path == NFABRIC_PATH_FP32 ? NULL :
                        s->ram + s->view.counters[i];
    bool dropped = false;

    if (!write) {
        if (cfg->path == NFABRIC_PATH_FP32) {
            memcpy(buf, s->ram + dpa, n);
        } else if (nfabric_dp_read(s, i, cfg, counters, off, buf, n,
                                   &dropped) != 0) {
            memset(buf, 0, n);
        }
        return;
    }
    if (cfg->path == NFABRIC_PATH_FP32) {
        memcpy(s->ram + dpa, buf, n);
        nfabric_ctrl_dirty(s, dpa, n);
    } else {
        /* The window was validated: the range is inside it. */
        rc = nfabric_dp_write(s, i, cfg, counters, off, buf, n, &dropped);
        if (dropped) {
            /* Not applied, so no contribution. */
            return;
        }
        nfabric_ctrl_dirty(s,
            s->view.counters[i] + nfabric_counter_bytes(cfg->path, cfg->width, off),
            nfabric_counter_bytes(cfg->path, cfg->width, n));
    }
    nfabric_dp_contributed(s, i, 1, n, rc > 0 ? (uint64_t)rc : 0);
    nfabric_dp_contributing(s, i);
}

/*
 * An access the device refuses (the state is unusable, or another head
 * kept the table or a lock past the bounds): a read returns all-ones, as
 * an access no decoder claims; a write is dropped; LAST_ERROR says STATE.
 */
static void nfabric_access_refused(NFabricCtrl *s, uint64_t dpa, uint8_t *buf,
                                   unsigned len, bool write)
{
    if (!write) {
        memset(buf, 0xff, len);
    }
    nfabric_set_error(s, -1, NFABRIC_ERR_STATE, dpa,
                      s->failed ? "access refused: the shared state is "
                      "unusable" : "access refused: the shared state stayed "
                      "busy past its bounds");
}

/* The stripes of window i that n bytes at window offset off touch. */
static bool nfabric_lock_span(NFabricCtrl *s, unsigned i, uint64_t off,
                              unsigned n, NFabricHeld *held)
{
    if (!s->shared) {
        return true;
    }
    if (!nfabric_shared_lock_span(s->sh, s->lock_token, i, s->view.size[i],
                                  off, n, held)) {
        nfabric_lock_failed(s, "window", (int)i);
        return false;
    }
    return true;
}

static void nfabric_unlock_span(NFabricCtrl *s, unsigned i,
                                const NFabricHeld *held)
{
    if (s->shared) {
        nfabric_shared_unlock_span(s->sh, i, held);
    }
}

/*
 * n bytes at dpa of a posted window's data range: this head's staging.  A
 * head without staging (a peer of a shared device enabled the window)
 * refuses the access with POSTED.
 */
static bool nfabric_staging_access(NFabricCtrl *s, uint64_t dpa,
                                   uint8_t *buf, unsigned n, bool write)
{
    if (!s->staging) {
        if (!write) {
            memset(buf, 0xff, n);
        }
        nfabric_set_error(s, -1, NFABRIC_ERR_POSTED, dpa, "access to a "
                          "posted window by a head without staging memory");
        return false;
    }
    if (write) {
        memcpy(s->staging + dpa, buf, n);
        nfabric_staging_dirty(s, dpa, n);
    } else {
        memcpy(buf, s->staging + dpa, n);
    }
    return true;
}

/* Retries of one access when another head changes the table meanwhile. */
#define NFABRIC_ACCESS_TRIES    1000

/*
 * One guest access of len (1..8) bytes at dpa.  buf holds the bytes in
 * memory order.  An access that straddles a window boundary is served
 * piece by piece, each piece on its own path, and counted once on each
 * path it touched.
 */
static void nfabric_access(NFabricCtrl *s, uint64_t dpa, uint8_t *buf,
                           unsigned len, bool write)
{
    NFabricShared *sh = s->sh;
    uint64_t served[NFABRIC_NUM_PATHS] = { 0 };
    unsigned tries = 0;

    if (s->shared) {
        nfabric_shared_thread_enter();
    }
    if (s->shared && (s->failed || nfabric_shared_faults() != s->faults_seen) &&
        !nfabric_state_ok(s)) {
        nfabric_access_refused(s, dpa, buf, len, write);
        return;
    }
    if (s->shared && (!nfabric_fm_current(s) || !nfabric_fm_reach(s, dpa, len))) {
        if (s->failed || !s->fm.valid) {
            nfabric_access_refused(s, dpa, buf, len, write);
        } else {
            /* As an address no decoder claims: all-ones, dropped. */
            if (!write) {
                memset(buf, 0xff, len);
            }
            nfabric_set_error(s, -1, NFABRIC_ERR_OWNER, dpa, "access outside "
                              "this head's memory (fabric manager's jobs)");
        }
        return;
    }
    while (len) {
        uint64_t end;
        uint32_t gen = s->view.valid ? nfabric_shared_gen(sh, s->view.job) : 1;
        NFabricHeld held;
        int i;
        unsigned n;
        unsigned path;

        if (!s->view.valid || gen != s->view.gen) {
            if (++tries > NFABRIC_ACCESS_TRIES || nfabric_view_refresh(s)) {
                nfabric_access_refused(s, dpa, buf, len, write);
                break;
            }
            continue;
        }
        i = nfabric_lookup(&s->view, dpa, &end);
        n = (unsigned)(end - dpa < len ? end - dpa : len);
        if (i < 0) {
            /* Plain memory: no state of the device's changes. */
            if (write) {
                memcpy(s->ram + dpa, buf, n);
                nfabric_ctrl_dirty(s, dpa, n);
            } else {
                memcpy(buf, s->ram + dpa, n);
            }
            path = NFABRIC_PATH_FP32;
        } else if (s->view.posted & (1u << i)) {
            /*
             * A posted window's data range is this head's staging: plain
             * memory, not counted (as where the direct map maps it).
             */
            if (!nfabric_staging_access(s, dpa, buf, n, write)) {
                break;
            }
            dpa += n;
            buf += n;
            len -= n;
            continue;
        } else {
            /*
             * The stripes of the window this access touches.  Taking one
             * orders memory (a locked instruction): the counters' line is
             * fetched meanwhile, not after it.
             */
            if (s->view.cfg[i].path != NFABRIC_PATH_FP32) {
                __builtin_prefetch(s->ram + s->view.counters[i] +
                                   nfabric_counter_bytes(s->view.cfg[i].path,
                                                         s->view.cfg[i].width,
                                                         dpa - s->view.base[i]),
                                   1);
            }
            if (!nfabric_lock_span(s, i, dpa - s->view.base[i], n, &held)) {
                if (write && s->shared) {
                    /*
                     * A contribution the device did not count: the round
                     * says so where every waiter looks (ROUND_STATUS).
                     */
                    __atomic_store_n(&sh->round[i].incomplete, 1,
                                     __ATOMIC_RELAXED);
                    nfabric_shared_event_bump(sh);
                }
                nfabric_access_refused(s, dpa, buf, len, write);
                break;
            }
            if (nfabric_shared_gen(sh, s->view.job) != s->view.gen) {
                /* Another head changed the table meanwhile: look again. */
                nfabric_unlock_span(s, i, &held);
                continue;
            }
            path = s->view.cfg[i].path;
            nfabric_win_access(s, i, dpa, buf, n, write);
            nfabric_unlock_span(s, i, &held);
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

bool nfabric_ctrl_mem_access(NFabricCtrl *s, uint64_t dpa, uint8_t *buf,
                             unsigned len, bool write)
{
    if (len == 0 || len > 8 || dpa > s->ram_size || len > s->ram_size - dpa) {
        return false;
    }
    nfabric_access(s, dpa, buf, len, write);
    return true;
}

/*
 * A posted window's doorbell (nfabric_posted.c): n bytes at offset off of
 * window i, inside one of its stripes, under that stripe: written from buf
 * through the datapath (the reserved G-Ternary codes met added to
 * *reserved), or the read-out into buf.  The RTL, when it serves or
 * compares, takes the bytes as the CXL.mem path's accesses (8-byte words).
 * Neither the counts, the dirty ranges nor the round's contributor are
 * touched (the caller does them once for a doorbell): with the RTL off
 * this may run in several threads at once, on different stripes, while
 * the view stays as it is.  Returns NFABRIC_ERR_NONE, NFABRIC_ERR_STATE
 * (the stripe could not be had, errno in *lock_errno; for a write the
 * round is INCOMPLETE) or -1: the table changed; nothing was done.
 */
int nfabric_dp_span(NFabricCtrl *s, unsigned i, uint64_t off, uint8_t *buf,
                    unsigned n, bool write, uint64_t *reserved,
                    int *lock_errno)
{
    const NFabricAggCfg *cfg = &s->view.cfg[i];
    uint8_t *counters = s->ram + s->view.counters[i];
    NFabricHeld held = { 0 };
    bool dropped = false;

    if (s->shared &&
        !nfabric_shared_lock_span(s->sh, s->lock_token, i, s->view.size[i],
                                  off, n, &held)) {
        *lock_errno = errno;
        if (write) {
            __atomic_store_n(&s->sh->round[i].incomplete, 1,
                             __ATOMIC_RELAXED);
            nfabric_shared_event_bump(s->sh);
        }
        return NFABRIC_ERR_STATE;
    }
    if (s->shared && nfabric_shared_gen(s->sh, s->view.job) != s->view.gen) {
        nfabric_unlock_span(s, i, &held);
        return -1;
    }
    for (unsigned k = 0; k < n;) {
        /* The engine takes the whole span; the RTL a word at a time. */
        unsigned m = s->rtl_mode == NFABRIC_RTL_OFF ? n - k :
                     8 - (unsigned)((off + k) & 7);

        m = m < n - k ? m : n - k;
        dropped = false;
        if (write) {
            int64_t rc = nfabric_dp_write(s, i, cfg, counters, off + k,
                                          buf + k, m, &dropped);

            *reserved += rc > 0 && !dropped ? (uint64_t)rc : 0;
        } else if (nfabric_dp_read(s, i, cfg, counters, off + k, buf + k, m,
                                   &dropped) != 0) {
            memset(buf + k, 0, m);
        }
        k += m;
    }
    nfabric_unlock_span(s, i, &held);
    return NFABRIC_ERR_NONE;
}

/*
 * Account a posted range of len bytes at window offset off of path: the
 * statistics count the 8-byte words it covers as accesses, the timing
 * model and the record see it as the 64-byte lines a write-combining
 * buffer or a DMA engine would send (docs/registers.md, "Posted windows").
 */
void nfabric_account_posted(NFabricCtrl *s, unsigned path, bool write,
                            uint64_t off, uint64_t len, uint64_t words)
{
    uint64_t *st = s->stats[path];

    st[write ? NFABRIC_STAT_WRITES : NFABRIC_STAT_READS] += words;
    st[write ? NFABRIC_STAT_WRITE_BYTES : NFABRIC_STAT_READ_BYTES] += len;
    nfabric_cpmu_count(s, NFABRIC_CPMU_GROUP_DEVICE,
                       write ? NFABRIC_CPMU_EV_WRITES(path) :
                       NFABRIC_CPMU_EV_READS(path), words);
    nfabric_cpmu_count(s, NFABRIC_CPMU_GROUP_DEVICE,
                       write ? NFABRIC_CPMU_EV_WRITE_BYTES(path) :
                       NFABRIC_CPMU_EV_READ_BYTES(path), len);
    while (len) {
        uint64_t m = NFABRIC_RTL_LINE - (off & (NFABRIC_RTL_LINE - 1));

        m = m < len ? m : len;
        if (s->record) {
            nfabric_record_result(s, s->record_failed ? -1 :
                nfabric_record_write_access(s->record,
                                           nfabric_timing_now_ps(&s->timing),
                                           path, m, write));
        }
        nfabric_timing_account(&s->timing, path, m);
        off += m;
        len -= m;
    }
}
