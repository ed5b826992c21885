/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * NEURON-Fabric controller model (see include/hw/mem/nfabric_ctrl.h and
 * docs/registers.md): register decode, the path-select table with its
 * validation, and the CXL.mem path that sends each access to the FP32 path
 * or to the aggregation engine and accounts it in the statistics and the
 * timing shim.  Pure C11; the guest is untrusted, so every offset, length
 * and index it supplies is checked here before use, and so is every other
 * head of a shared device: the window table, rounds and counts live in an
 * NFabricShared, changed only under its locks (nfabric_shared.h).
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE     /* clock_gettime, nanosleep (the map protocol) */
#endif
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "hw/mem/nfabric_ctrl.h"
#include "hw/mem/nfabric_window.h"

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

#define NFABRIC_X_PATH_NAME(n, v, str) [v] = str,
const char *const nfabric_path_names[NFABRIC_NUM_PATHS] = {
    NFABRIC_PATHS(NFABRIC_X_PATH_NAME)
};

static inline bool nfabric_win_enabled(const NFabricCtrl *s, unsigned i)
{
    return s->sh->enabled_mask & (1u << i);
}

/* Window w's configuration with CTRL value wctrl, for the table rules. */
static NFabricWindowCfg nfabric_win_cfg(const NFabricWindow *w, uint32_t wctrl)
{
    return nfabric_window_cfg(w->dpa_base, w->dpa_size, w->counters, wctrl,
                              w->threshold);
}

/* Bytes of window w's counter area (0 for FP32). */
static uint64_t nfabric_win_counter_len(const NFabricWindow *w)
{
    NFabricWindowCfg c = nfabric_win_cfg(w, w->ctrl);

    return nfabric_window_counter_len(&c);
}

static void nfabric_set_error(NFabricCtrl *s, int win, uint32_t code,
                              uint64_t off, const char *what)
{
    s->last_error = code;
    s->error_count++;
    if (win >= 0) {
        s->sh->win[win].error = code;
    }
    if (s->ops && s->ops->guest_error) {
        s->ops->guest_error(s->opaque, off, code, what);
    }
}

/* ---- a shared state that cannot be trusted --------------------------- */

/*
 * The state file is unusable: say why once, then refuse the device's
 * accesses for good (this head's own registers still work).
 */
static void nfabric_fail(NFabricCtrl *s, const char *why)
{
    if (s->failed) {
        return;
    }
    s->failed = true;
    snprintf(s->failure, sizeof(s->failure), "%s", why);
    if (s->ops && s->ops->state_failed) {
        s->ops->state_failed(s->opaque, s->failure);
    } else {
        fprintf(stderr, "nfabric: head %u: %s; the head refuses the "
                "device's accesses\n", s->head, s->failure);
    }
}

/* Is the shared state still usable (identity, size, mapping)? */
static bool nfabric_state_ok(NFabricCtrl *s)
{
    char why[sizeof(s->failure)];

    if (!s->shared) {
        return true;
    }
    if (s->failed) {
        return false;
    }
    s->faults_seen = nfabric_shared_faults();
    if (nfabric_shared_check(s->sh, why, sizeof(why)) != 0) {
        nfabric_fail(s, why);
        return false;
    }
    return true;
}

/*
 * A shared lock could not be taken: a corrupted lock makes the state
 * unusable; one held too long fails only this operation.
 */
static void nfabric_lock_failed(NFabricCtrl *s, const char *which, int win)
{
    char why[96];

    if (errno == ETIMEDOUT || !nfabric_state_ok(s)) {
        return;                 /* held too long, or already reported */
    }
    if (win >= 0) {
        snprintf(why, sizeof(why), "the lock of window %d in the state file "
                 "is corrupted", win);
    } else {
        snprintf(why, sizeof(why), "the %s lock in the state file is "
                 "corrupted", which);
    }
    nfabric_fail(s, why);
}

static bool nfabric_lock_job(NFabricCtrl *s);

static void nfabric_unlock_job(NFabricCtrl *s)
{
    if (s->shared) {
        nfabric_shared_unlock_job(s->sh, s->locked_job);
    }
}

static bool nfabric_lock_win(NFabricCtrl *s, unsigned i)
{
    if (!s->shared) {
        return true;
    }
    if (!nfabric_shared_lock_win(s->sh, i)) {
        nfabric_lock_failed(s, "window", (int)i);
        return false;
    }
    return true;
}

static void nfabric_unlock_win(NFabricCtrl *s, unsigned i)
{
    if (s->shared) {
        nfabric_shared_unlock_win(s->sh, i);
    }
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

/* ---- jobs: the fabric manager's assignment --------------------------- */

#define NFABRIC_FM_TRIES        10000   /* copies before giving up */

/* Take v as the copy; tell the owner if the memory this head reaches moved. */
static void nfabric_fm_set(NFabricCtrl *s, const NFabricFmView *v)
{
    bool moved = v->assigned != s->fm.assigned ||
                 v->n != s->fm.n ||
                 memcmp(v->base, s->fm.base, v->n * sizeof(v->base[0])) ||
                 memcmp(v->end, s->fm.end, v->n * sizeof(v->end[0]));

    s->fm = *v;
    s->view.valid = false;      /* the job's windows: made again */
    if (moved && s->ops && s->ops->traps_changed) {
        s->ops->traps_changed(s->opaque);
    }
}

/*
 * Make the private copy of the assignment again (its sequence count
 * moved).  True if it is current; false if the state is corrupted (the
 * head failed) or the fabric manager kept writing past the bound.
 */
static bool nfabric_fm_refresh(NFabricCtrl *s)
{
    const NFabricFm *f = &s->sh->fm;
    NFabricFm copy;
    NFabricFmView v;
    const char *why;
    char msg[200];
    unsigned bad;

    for (unsigned tries = 0; tries < NFABRIC_FM_TRIES; tries++) {
        uint32_t gen = __atomic_load_n(&f->gen, __ATOMIC_ACQUIRE);

        if (gen & 1) {
            continue;           /* the fabric manager is writing */
        }
        memcpy(&copy, (const void *)f, sizeof(copy));
        __atomic_thread_fence(__ATOMIC_ACQUIRE);
        if (__atomic_load_n(&f->gen, __ATOMIC_RELAXED) != gen) {
            continue;
        }
        why = nfabric_fm_check(&copy, s->heads, s->ram_size, &bad);
        if (why) {
            snprintf(msg, sizeof(msg), "the fabric manager's assignment in "
                     "the state file is invalid (%s): the state file is "
                     "corrupted", why);
            nfabric_fail(s, msg);
            return false;
        }
        memset(&v, 0, sizeof(v));
        v.gen = gen;
        v.valid = true;
        v.assigned = copy.assigned;
        if (!v.assigned) {
            v.windows = (1u << NFABRIC_NUM_WINDOWS) - 1;
            v.job_heads = (s->heads >= 32 ? 0 : 1u << s->heads) - 1;
            nfabric_fm_set(s, &v);
            return true;
        }
        v.job = copy.head_job[s->head];
        v.windows = copy.job_windows[v.job];
        for (unsigned h = 0; h < s->heads; h++) {
            if (copy.head_job[h] == v.job) {
                v.job_heads |= 1u << h;
            }
        }
        for (unsigned k = 0; k < copy.nranges; k++) {
            const NFabricFmRange *r = &copy.range[k];

            if (r->job == v.job &&
                (r->head == NFABRIC_FM_JOB_WIDE || r->head == s->head)) {
                v.base[v.n] = r->base;
                v.end[v.n] = r->base + r->size;
                v.n++;
            }
            if (r->job == v.job && r->head == s->head) {
                unsigned j = v.nown++;

                /* By address (they do not overlap: checked). */
                for (; j && v.own_base[j - 1] > r->base; j--) {
                    v.own_base[j] = v.own_base[j - 1];
                    v.own_end[j] = v.own_end[j - 1];
                }
                v.own_base[j] = r->base;
                v.own_end[j] = r->base + r->size;
            }
        }
        nfabric_fm_set(s, &v);
        return true;
    }
    return false;
}

/*
 * The assignment's sequence count stayed odd: the fabric manager is
 * writing, stopped, or died in its write.  Under the device's lock (it
 * writes holding it; a dead writer's half-written assignment is revoked
 * by this lock's repair) it is even again, unless the state is corrupted.
 */
static bool nfabric_fm_refresh_locked(NFabricCtrl *s)
{
    if (nfabric_fm_refresh(s)) {
        return true;
    }
    if (s->failed || !nfabric_shared_lock_cfg(s->sh)) {
        return false;
    }
    nfabric_shared_unlock_cfg(s->sh);
    return nfabric_fm_refresh(s);
}

/* Is the copy of the assignment current (made again if not)? */
static inline bool nfabric_fm_current(NFabricCtrl *s)
{
    if (!s->shared) {
        return true;            /* a device of one host: no jobs */
    }
    if (s->fm.valid &&
        __atomic_load_n(&s->sh->fm.gen, __ATOMIC_RELAXED) == s->fm.gen) {
        return true;
    }
    return nfabric_fm_refresh_locked(s);
}

/* Does this head reach every byte of [dpa, dpa + len) (current copy)? */
static bool nfabric_fm_reach(NFabricCtrl *s, uint64_t dpa, uint64_t len)
{
    NFabricFmView *v = &s->fm;

    if (!s->shared || !v->assigned) {
        return true;
    }
    while (len) {
        unsigned k = v->last;
        uint64_t n;

        if (k >= v->n || dpa < v->base[k] || dpa >= v->end[k]) {
            for (k = 0; k < v->n; k++) {
                if (dpa >= v->base[k] && dpa < v->end[k]) {
                    break;
                }
            }
            if (k == v->n) {
                return false;
            }
            v->last = k;
        }
        n = v->end[k] - dpa < len ? v->end[k] - dpa : len;
        dpa += n;
        len -= n;
    }
    return true;
}

/* Is window i one of this head's job's (current copy)? */
static inline bool nfabric_fm_window(const NFabricCtrl *s, unsigned i)
{
    return !s->shared || !s->fm.assigned || (s->fm.windows & (1u << i));
}

/* This head's job's windows (all of them without an assignment). */
static inline uint32_t nfabric_fm_windows(const NFabricCtrl *s)
{
    return !s->shared || !s->fm.assigned ?
           (1u << NFABRIC_NUM_WINDOWS) - 1 : s->fm.windows;
}

/* This head's job (0 without an assignment: one job of every head). */
static inline unsigned nfabric_job(const NFabricCtrl *s)
{
    return s->shared && s->fm.assigned ? s->fm.job % NFABRIC_FM_MAX_JOBS : 0;
}

static void nfabric_pending_drop_locked(NFabricCtrl *s, unsigned i);

/*
 * Take this head's job's configuration lock (docs/multihost.md, "Locks").
 * The fabric manager writes an assignment holding every job's lock: under
 * ours, the copy of the assignment is checked current, and made again (and
 * the lock of the new job taken) if it moved.  Windows the job's heads
 * that are gone were enabling (the map protocol) are given up here.
 */
#define NFABRIC_JOB_LOCK_TRIES  3

static bool nfabric_lock_job(NFabricCtrl *s)
{
    NFabricShared *sh = s->sh;

    if (!s->shared) {
        s->locked_job = 0;
        return true;
    }
    for (unsigned t = 0; t < NFABRIC_JOB_LOCK_TRIES; t++) {
        unsigned j;

        if (!nfabric_fm_current(s)) {
            return false;
        }
        j = nfabric_job(s);
        if (!nfabric_shared_lock_job(sh, j)) {
            nfabric_lock_failed(s, "configuration", -1);
            return false;
        }
        s->locked_job = j;
        if (__atomic_load_n(&sh->fm.gen, __ATOMIC_ACQUIRE) != s->fm.gen) {
            nfabric_shared_unlock_job(sh, j);   /* reassigned: again */
            continue;
        }
        if (__atomic_load_n(&sh->pending_mask, __ATOMIC_RELAXED) &
            nfabric_fm_windows(s)) {
            /* Windows other heads are enabling: are those heads alive? */
            nfabric_shared_reap(sh, s->head);
            for (unsigned i = 0; i < NFABRIC_NUM_WINDOWS; i++) {
                unsigned h = sh->pend_head[i];

                if ((sh->pending_mask & nfabric_fm_windows(s) & (1u << i)) &&
                    (h >= s->heads ||
                     __atomic_load_n(&sh->head[h].state, __ATOMIC_ACQUIRE) ==
                     NFABRIC_HEAD_GONE)) {
                    nfabric_pending_drop_locked(s, i);  /* as it would have */
                }
            }
        }
        return true;
    }
    return false;
}

/* The heads of this head's job (all heads without an assignment). */
static inline uint32_t nfabric_fm_heads(const NFabricCtrl *s)
{
    return !s->shared || !s->fm.assigned ? UINT32_MAX : s->fm.job_heads;
}

/*
 * The view: a private copy of the shared window table, validated by the
 * rules an enable is checked with (every enabled window inside device
 * memory, aligned, its fields valid, no overlaps).  Made again whenever
 * the table's sequence count moved.  Returns 0; 1 if the table did not
 * settle within the bounds (another head busy: this access gives up);
 * -1 if the table is invalid (the state is corrupted: the head fails).
 */
#define NFABRIC_VIEW_SPINS      1000    /* pauses before taking cfg_lock */
#define NFABRIC_VIEW_TRIES      10000   /* copies before giving up */

static int nfabric_view_refresh(NFabricCtrl *s)
{
    NFabricShared *sh = s->sh;
    NFabricWindowCfg table[NFABRIC_NUM_WINDOWS];
    NFabricView v;
    char why[160];

    memset(table, 0, sizeof(table));
    if (s->shared && !nfabric_fm_current(s)) {
        return s->failed ? -1 : 1;
    }
    for (unsigned tries = 0; tries < NFABRIC_VIEW_TRIES; tries++) {
        /* Only this head's job's windows: no other job's writer matters. */
        unsigned job = nfabric_job(s);
        uint32_t mine = nfabric_fm_windows(s);
        uint32_t gen = nfabric_shared_gen(sh, job);
        uint32_t extra;
        bool ok = true;

        if (gen & 1) {
            if (tries < NFABRIC_VIEW_SPINS || !s->shared) {
                continue;
            }
            /*
             * Changes are made under the job's lock, and a dead changer's
             * is repaired by the next locker: under it the count is even,
             * unless the state is corrupted.
             */
            if (!nfabric_lock_job(s)) {
                return s->failed ? -1 : 1;
            }
            gen = nfabric_shared_gen(sh, s->locked_job);
            nfabric_unlock_job(s);
            if (gen & 1) {
                nfabric_fail(s, "the window table's sequence count is odd "
                             "with no change in progress: the state file is "
                             "corrupted");
                return -1;
            }
            continue;
        }
        /*
         * The masks hold every job's windows; only this job's are covered
         * by its sequence count (another job's window is in both masks for
         * a moment while its enable finishes): only they are judged.
         */
        memset(&v, 0, sizeof(v));
        v.mask = __atomic_load_n(&sh->enabled_mask, __ATOMIC_RELAXED);
        v.pmask = __atomic_load_n(&sh->pending_mask, __ATOMIC_RELAXED);
        extra = (v.mask | v.pmask) >> NFABRIC_NUM_WINDOWS;
        if (extra) {
            ok = false;         /* judged below, once the copy settled */
        }
        v.mask &= mine;
        v.pmask &= mine;
        if (v.mask & v.pmask) {
            ok = false;
        }
        for (unsigned i = 0; i < NFABRIC_NUM_WINDOWS; i++) {
            const NFabricWindow *w = &sh->win[i];
            uint32_t ctrl;

            if (v.pmask & (1u << i)) {
                /* Being enabled: what it will be (the map protocol). */
                w = &sh->pend[i];
                ctrl = __atomic_load_n(&w->ctrl, __ATOMIC_RELAXED);
                table[i] = nfabric_window_cfg(
                    __atomic_load_n(&w->dpa_base, __ATOMIC_RELAXED),
                    __atomic_load_n(&w->dpa_size, __ATOMIC_RELAXED),
                    __atomic_load_n(&w->counters, __ATOMIC_RELAXED), ctrl,
                    __atomic_load_n(&w->threshold, __ATOMIC_RELAXED));
                if (!(ctrl & NFABRIC_WCTRL_ENABLE) ||
                    (ctrl & ~NFABRIC_WCTRL_VALID)) {
                    ok = false;
                }
                continue;
            }
            if (!(v.mask & (1u << i))) {
                continue;
            }
            v.base[i] = __atomic_load_n(&w->dpa_base, __ATOMIC_RELAXED);
            v.size[i] = __atomic_load_n(&w->dpa_size, __ATOMIC_RELAXED);
            v.counters[i] = __atomic_load_n(&w->counters, __ATOMIC_RELAXED);
            ctrl = __atomic_load_n(&w->ctrl, __ATOMIC_RELAXED);
            table[i] = nfabric_window_cfg(v.base[i], v.size[i], v.counters[i],
                                          ctrl, __atomic_load_n(&w->threshold,
                                                                __ATOMIC_RELAXED));
            if (!(ctrl & NFABRIC_WCTRL_ENABLE) || (ctrl & ~NFABRIC_WCTRL_VALID)) {
                ok = false;
            }
        }
        __atomic_thread_fence(__ATOMIC_ACQUIRE);
        if (__atomic_load_n(&sh->gen[job], __ATOMIC_RELAXED) != gen) {
            continue;           /* changed while we copied: again */
        }
        if (extra || (v.mask & v.pmask)) {
            snprintf(why, sizeof(why), "the state file's enabled-window mask "
                     "or pending mask names windows the device lacks (0x%08"
                     PRIx32 "), or both name one of this job's (0x%04" PRIx32
                     "): it is corrupted", extra << NFABRIC_NUM_WINDOWS,
                     v.mask & v.pmask);
            nfabric_fail(s, why);
            return -1;
        }
        for (unsigned i = 0; ok && i < NFABRIC_NUM_WINDOWS; i++) {
            uint32_t err;

            if (!((v.mask | v.pmask) & (1u << i))) {
                continue;
            }
            err = nfabric_window_validate(&table[i], i, s->ram_size, table,
                                          v.mask | v.pmask);
            if (err != NFABRIC_ERR_NONE) {
                snprintf(why, sizeof(why), "window %u's entry in the state "
                         "file is invalid (%s): the state file is corrupted",
                         i, nfabric_err_text(err));
                nfabric_fail(s, why);
                return -1;
            }
            if (v.pmask & (1u << i)) {
                v.pend[i] = table[i];
                v.pclen[i] = nfabric_window_counter_len(&table[i]);
                continue;
            }
            v.cfg[i].path = table[i].path;
            v.cfg[i].width = table[i].width;
            v.cfg[i].tie = table[i].tie;
            v.cfg[i].threshold = table[i].threshold;
            v.cfg[i].size = table[i].dpa_size;
            v.clen[i] = nfabric_window_counter_len(&table[i]);
        }
        if (!ok) {
            nfabric_fail(s, "an enabled window's CTRL in the state file is "
                         "not an enabled configuration: the state file is "
                         "corrupted");
            return -1;
        }
        if (s->shared && !nfabric_state_ok(s)) {
            return -1;          /* the copy may be of zeros (truncated) */
        }
        v.gen = gen;
        v.job = job;
        v.valid = true;
        s->view = v;
        return 0;
    }
    return 1;
}

/* ---- the path-select table ------------------------------------------ */

/*
 * Check window i's programmed configuration with CTRL value wctrl against
 * device memory and the other enabled windows (nfabric_window_validate, the
 * rules the guest library uses too).  Returns NFABRIC_ERR_NONE, filling in
 * cfg, or the error code.
 */
static uint32_t nfabric_win_validate(NFabricCtrl *s, unsigned i,
                                     uint32_t wctrl, NFabricAggCfg *cfg)
{
    NFabricWindowCfg table[NFABRIC_NUM_WINDOWS];
    NFabricWindowCfg w = nfabric_win_cfg(&s->sh->win[i], wctrl);
    uint32_t err;

    for (unsigned j = 0; j < NFABRIC_NUM_WINDOWS; j++) {
        table[j] = nfabric_win_cfg(&s->sh->win[j], s->sh->win[j].ctrl);
    }
    err = nfabric_window_validate(&w, i, s->ram_size, table,
                                  s->sh->enabled_mask);
    if (err != NFABRIC_ERR_NONE) {
        return err;
    }
    cfg->path = w.path;
    cfg->width = w.width;
    cfg->tie = w.tie;
    cfg->threshold = w.threshold;
    cfg->size = w.dpa_size;
    return NFABRIC_ERR_NONE;
}

/*
 * Start a new round: zero the counter area [counters, counters + clen)
 * (validated: inside device memory), the contribution counts of every
 * head and the round state.  Called with window i's lock held.
 */
static void nfabric_win_clear_locked(NFabricCtrl *s, unsigned i,
                                     uint64_t counters, uint64_t clen)
{
    NFabricShared *sh = s->sh;
    NFabricWindow *w = &sh->win[i];

    /*
     * Until the new round starts, the old one may hold half-cleared
     * counters: a head that dies (or stops) in the zeroing leaves its
     * round INCOMPLETE for everyone to see, never a clean round over
     * counters half zero (docs/multihost.md, "A head that dies").
     */
    __atomic_store_n(&sh->round[i].incomplete, 1, __ATOMIC_RELEASE);
    nfabric_win_event(s, NFABRIC_WIN_EV_CLEAR_BEGIN, i, 0);
    if (clen) {
        memset(s->ram + counters, 0, clen);
        nfabric_ctrl_dirty(s, counters, clen);
    }
    w->contrib_writes = 0;
    w->contrib_bytes = 0;
    w->reserved_codes = 0;
    for (unsigned h = 0; h < NFABRIC_MAX_HEADS; h++) {
        sh->head[h].contrib_writes[i] = 0;
        sh->head[h].contrib_bytes[i] = 0;
        sh->head[h].reserved_codes[i] = 0;
    }
    sh->round[i].seq++;
    sh->round[i].done = 0;
    sh->round[i].contrib = 0;
    sh->round[i].incomplete = 0;
    nfabric_win_event(s, NFABRIC_WIN_EV_CLEAR, i, 0);
}

/* Is the view current (its job's windows unchanged since it was made)? */
static inline bool nfabric_view_current(const NFabricCtrl *s)
{
    return s->view.valid &&
           nfabric_shared_gen(s->sh, s->view.job) == s->view.gen;
}

/*
 * The view as it is now (the job's lock held: its windows cannot move,
 * unless the state is corrupted).  False if it cannot be had.
 */
static bool nfabric_view_locked(NFabricCtrl *s)
{
    if (nfabric_view_current(s) && s->view.job == s->locked_job) {
        return true;
    }
    return nfabric_view_refresh(s) == 0 && s->view.job == s->locked_job;
}

/* A register write the shared state could not take: error STATE. */
static void nfabric_state_refused(NFabricCtrl *s, uint64_t off)
{
    nfabric_set_error(s, -1, NFABRIC_ERR_STATE, off, s->failed ?
                      "write refused: the shared state is unusable" :
                      "write refused: the shared state stayed busy past "
                      "its bound");
}

/* CMD = CLEAR of window i (configuration lock held). */
static void nfabric_win_clear(NFabricCtrl *s, unsigned i, uint64_t off)
{
    bool on;

    if (!nfabric_view_locked(s)) {
        nfabric_state_refused(s, off);
        return;
    }
    on = s->view.mask & (1u << i);
    if (!nfabric_lock_win(s, i)) {
        nfabric_state_refused(s, off);
        return;
    }
    nfabric_win_clear_locked(s, i, on ? s->view.counters[i] : 0,
                             on ? s->view.clen[i] : 0);
    nfabric_unlock_win(s, i);
}

/*
 * Change window i's CTRL (and its enabled bit) as the job's other heads'
 * memory paths see it: with the window's lock held and the job's sequence
 * count odd, so that no access is served by a half-changed entry.  The
 * caller holds the job's configuration lock.
 */
static bool nfabric_win_publish_begin(NFabricCtrl *s, unsigned i)
{
    if (!nfabric_lock_win(s, i)) {
        return false;
    }
    s->sh->job[s->locked_job].busy = (int32_t)i;
    nfabric_shared_gen_bump(s->sh, s->locked_job);
    return true;
}

static void nfabric_win_publish_end(NFabricCtrl *s, unsigned i)
{
    nfabric_shared_gen_bump(s->sh, s->locked_job);
    s->sh->job[s->locked_job].busy = -1;
    nfabric_unlock_win(s, i);
}

/*
 * Enable window i with configuration c (CTRL value val), checked: zero its
 * counter area, start its round, publish it (and drop it from the pending
 * windows).  The caller holds the configuration lock.  False if window i's
 * lock could not be had (nothing changed).
 */
static bool nfabric_win_enable_now(NFabricCtrl *s, unsigned i,
                                   const NFabricWindowCfg *cp, uint32_t val)
{
    NFabricShared *sh = s->sh;
    NFabricWindow *w = &sh->win[i];
    NFabricWindowCfg c = *cp;
    NFabricAggCfg cfg;
    uint64_t clen;

    cfg.path = c.path;
    cfg.width = c.width;
    cfg.tie = c.tie;
    cfg.threshold = c.threshold;
    cfg.size = c.dpa_size;
    clen = nfabric_window_counter_len(&c);
    /*
     * Zero the counter area and start the round before the window is
     * published: the zeroing (up to the whole memory) then runs with the
     * table's sequence count even, so that a head stopped or slow in it
     * delays no other head's memory access (docs/multihost.md, "Waits").
     * Only window i's lock is held for it; window i is not in the table
     * yet, so no access needs that lock.
     */
    if (!nfabric_lock_win(s, i)) {
        return false;
    }
    nfabric_win_clear_locked(s, i, c.counters, clen);
    s->sh->job[s->locked_job].busy = (int32_t)i;
    nfabric_shared_gen_bump(s->sh, s->locked_job);
    w->dpa_base = c.dpa_base;
    w->dpa_size = c.dpa_size;
    w->counters = c.counters;
    w->threshold = c.threshold;
    w->ctrl = val;
    w->error = NFABRIC_ERR_NONE;
    sh->cfg[i] = cfg;
    __atomic_fetch_or(&sh->enabled_mask, 1u << i, __ATOMIC_RELAXED);
    /* (map protocol) no longer pending */
    __atomic_fetch_and(&sh->pending_mask, ~(1u << i), __ATOMIC_RELAXED);
    nfabric_win_publish_end(s, i);
    nfabric_win_event(s, NFABRIC_WIN_EV_ENABLE, i, 0);
    return true;
}

static void nfabric_win_ctrl_write(NFabricCtrl *s, unsigned i,
                                   uint32_t val, uint64_t off)
{
    NFabricShared *sh = s->sh;
    NFabricWindow *w = &sh->win[i];
    NFabricWindowCfg table[NFABRIC_NUM_WINDOWS];
    NFabricWindowCfg c;
    uint32_t err;

    if (val & ~NFABRIC_WCTRL_VALID) {
        nfabric_set_error(s, i, NFABRIC_ERR_RESERVED_BITS, off,
                          "reserved bits set in window control");
        return;
    }
    if (nfabric_win_enabled(s, i)) {
        if (!(val & NFABRIC_WCTRL_ENABLE)) {
            if (!nfabric_win_publish_begin(s, i)) {
                nfabric_state_refused(s, off);
                return;
            }
            __atomic_fetch_and(&sh->enabled_mask, ~(1u << i), __ATOMIC_RELAXED);
            w->ctrl = val;
            nfabric_win_publish_end(s, i);
            if (s->shared) {
                nfabric_shared_map_bump(sh);    /* others may map it again */
            }
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

    /*
     * Judge the new window on one copy of its registers against the other
     * windows as the (validated) view has them; clear and publish that
     * copy, whatever the state file holds meanwhile.
     */
    if (!nfabric_view_locked(s)) {
        nfabric_state_refused(s, off);
        return;
    }
    if (s->view.pmask & (1u << i)) {
        nfabric_set_error(s, i, NFABRIC_ERR_BUSY, off,
                          "window being enabled by another head");
        return;
    }
    memset(table, 0, sizeof(table));
    for (unsigned j = 0; j < NFABRIC_NUM_WINDOWS; j++) {
        if (s->view.mask & (1u << j)) {
            table[j] = nfabric_window_cfg(s->view.base[j], s->view.size[j],
                                          s->view.counters[j],
                                          NFABRIC_WCTRL(s->view.cfg[j].path,
                                                        s->view.cfg[j].width,
                                                        s->view.cfg[j].tie),
                                          s->view.cfg[j].threshold);
        } else if (s->view.pmask & (1u << j)) {
            table[j] = s->view.pend[j];     /* being enabled: taken */
        }
    }
    c = nfabric_window_cfg(w->dpa_base, w->dpa_size, w->counters, val,
                           w->threshold);
    err = nfabric_window_validate(&c, i, s->ram_size, table,
                                  (s->view.mask | s->view.pmask) & ~(1u << i));
    if (err == NFABRIC_ERR_NONE &&
        (!nfabric_fm_reach(s, c.dpa_base, c.dpa_size) ||
         (nfabric_window_counter_len(&c) &&
          !nfabric_fm_reach(s, c.counters, nfabric_window_counter_len(&c))))) {
        err = NFABRIC_ERR_OWNER;    /* memory this head does not reach */
    }
    if (err != NFABRIC_ERR_NONE) {
        /* A refused enable changes nothing but the error registers. */
        nfabric_win_event(s, NFABRIC_WIN_EV_REJECT, i, err);
        nfabric_set_error(s, i, err, off, "window configuration rejected");
        return;
    }
    if (s->shared) {
        /*
         * The map protocol: publish the window as pending, so that every
         * head that maps memory directly traps its ranges; the enable is
         * finished (or given up) by nfabric_map_finish() once the others
         * trapped them, after the configuration lock is released.
         */
        if (!nfabric_win_publish_begin(s, i)) {
            nfabric_state_refused(s, off);
            return;
        }
        sh->pend[i] = *w;
        sh->pend[i].dpa_base = c.dpa_base;
        sh->pend[i].dpa_size = c.dpa_size;
        sh->pend[i].counters = c.counters;
        sh->pend[i].threshold = c.threshold;
        sh->pend[i].ctrl = val;
        sh->pend_head[i] = (uint8_t)s->head;
        __atomic_fetch_or(&sh->pending_mask, 1u << i, __ATOMIC_RELAXED);
        nfabric_win_publish_end(s, i);
        s->map_target = nfabric_shared_map_bump(sh);
        s->map_win = (int)i;
        s->map_val = val;
        s->map_cfg = c;
        s->map_off = off;
        return;
    }
    if (!nfabric_win_enable_now(s, i, &c, val)) {
        nfabric_state_refused(s, off);
    }
}

/* ---- the map protocol (docs/multihost.md, "Direct maps") ---------- */

/*
 * The heads of this head's job that map memory directly and whose map does
 * not yet trap what the table held at map_gen = target (heads no longer
 * attached are not waited for).
 */
static uint32_t nfabric_map_late(NFabricShared *sh, unsigned heads,
                                 uint32_t job, uint32_t target)
{
    uint32_t want = __atomic_load_n(&sh->map_direct, __ATOMIC_ACQUIRE) & job;
    uint32_t late = 0;

    for (unsigned h = 0; h < heads; h++) {
        if (!(want & (1u << h)) ||
            __atomic_load_n(&sh->head[h].state, __ATOMIC_ACQUIRE) !=
            NFABRIC_HEAD_ATTACHED ||
            (int32_t)(__atomic_load_n(&sh->map_ack[h], __ATOMIC_ACQUIRE) -
                      target) >= 0) {
            continue;
        }
        late |= 1u << h;
    }
    return late;
}

/* Drop pending window i (job lock held): the others may map it. */
static void nfabric_pending_drop_locked(NFabricCtrl *s, unsigned i)
{
    NFabricShared *sh = s->sh;
    unsigned j = s->locked_job;

    sh->job[j].busy = (int32_t)i;
    nfabric_shared_gen_bump(sh, j);
    __atomic_fetch_and(&sh->pending_mask, ~(1u << i), __ATOMIC_RELAXED);
    nfabric_shared_gen_bump(sh, j);
    sh->job[j].busy = -1;
    nfabric_shared_map_bump(sh);
}

/* Give up the window this head was enabling (job lock held). */
static void nfabric_map_give_up_locked(NFabricCtrl *s, unsigned i)
{
    NFabricShared *sh = s->sh;

    if ((sh->pending_mask & (1u << i)) && sh->pend_head[i] == s->head) {
        nfabric_pending_drop_locked(s, i);
    }
    if (s->map_abort == (int)i) {
        s->map_abort = -1;
    }
}

static int64_t nfabric_ms_since(const struct timespec *t0)
{
    struct timespec t;

    clock_gettime(CLOCK_MONOTONIC, &t);
    return ((int64_t)(t.tv_sec - t0->tv_sec) * 1000000000 +
            (t.tv_nsec - t0->tv_nsec)) / 1000000;
}

/*
 * Finish the enable this head began (s->map_win, published as pending),
 * without the configuration lock: let the owner trap it, wait until every
 * other head of the job that maps memory directly traps it too (at most
 * NFABRIC_SHARED_MAP_MS; a head that died is not waited for), then, under
 * the lock again, enable it, or give it up with error PEER naming the
 * heads that did not answer.
 */
static void nfabric_map_finish(NFabricCtrl *s)
{
    NFabricShared *sh = s->sh;
    unsigned i = (unsigned)s->map_win, heads = s->heads, self = s->head;
    uint32_t job = nfabric_fm_heads(s) & ~(1u << self);
    uint32_t target = s->map_target, val = s->map_val;
    NFabricWindowCfg c = s->map_cfg;
    uint64_t off = s->map_off;
    unsigned pause_us = 20;
    struct timespec t0;
    uint32_t late;
    char why[160];

    s->map_win = -1;
    if (s->ops && s->ops->traps_changed) {
        s->ops->traps_changed(s->opaque);
    }
    /* From here to wait_end only locals and the shared state. */
    if (s->ops && s->ops->wait_begin) {
        s->ops->wait_begin(s->opaque);
    }
    clock_gettime(CLOCK_MONOTONIC, &t0);
    for (unsigned n = 1;; n++) {
        late = nfabric_map_late(sh, heads, job, target);
        if (!late || nfabric_ms_since(&t0) >= NFABRIC_SHARED_MAP_MS) {
            break;
        }
        if (n % 16 == 0) {
            nfabric_shared_reap(sh, self);      /* a dead one: not waited for */
        }
        nanosleep(&(struct timespec){ .tv_nsec = pause_us * 1000L }, NULL);
        pause_us = pause_us < 1000 ? pause_us * 2 : 1000;
    }
    if (s->ops && s->ops->wait_end) {
        s->ops->wait_end(s->opaque);
    }
    s->map_late = late;
    if (!nfabric_lock_job(s)) {
        s->map_abort = (int)i;  /* given up under the next lock taken */
        nfabric_state_refused(s, off);
        return;
    }
    if (!nfabric_state_ok(s) || !(sh->pending_mask & (1u << i)) ||
        sh->pend_head[i] != self) {
        /* The state failed, or the window was given up meanwhile. */
        nfabric_unlock_job(s);
        nfabric_state_refused(s, off);
        return;
    }
    if (late) {
        nfabric_map_give_up_locked(s, i);
        nfabric_win_event(s, NFABRIC_WIN_EV_REJECT, i, NFABRIC_ERR_PEER);
        snprintf(why, sizeof(why), "window enable given up: head(s) 0x%04"
                 PRIx32 " of the job did not trap its ranges within %u ms",
                 late, (unsigned)NFABRIC_SHARED_MAP_MS);
        nfabric_set_error(s, i, NFABRIC_ERR_PEER, off, why);
        nfabric_unlock_job(s);
        return;
    }
    if (!nfabric_win_enable_now(s, i, &c, val)) {
        nfabric_map_give_up_locked(s, i);
        nfabric_unlock_job(s);
        nfabric_state_refused(s, off);
        return;
    }
    nfabric_unlock_job(s);
}

void nfabric_ctrl_map_join(NFabricCtrl *s)
{
    if (s->shared) {
        nfabric_shared_thread_enter();
        s->map_join = true;
        __atomic_fetch_or(&s->sh->map_direct, 1u << s->head, __ATOMIC_SEQ_CST);
    }
}

uint32_t nfabric_ctrl_map_gen(NFabricCtrl *s)
{
    if (!s->shared) {
        return 0;
    }
    nfabric_shared_thread_enter();
    return __atomic_load_n(&s->sh->map_gen, __ATOMIC_SEQ_CST);
}

void nfabric_ctrl_map_ack(NFabricCtrl *s, uint32_t gen)
{
    if (s->shared && s->map_join) {
        nfabric_shared_thread_enter();
        __atomic_store_n(&s->sh->map_ack[s->head], gen, __ATOMIC_RELEASE);
    }
}

/*
 * Rebuild the derived state from win[] (after migration): every enabled
 * window must still validate, else the incoming state is refused.
 */
static int nfabric_rebuild(NFabricCtrl *s, uint32_t enabled)
{
    s->sh->enabled_mask = 0;
    for (unsigned i = 0; i < NFABRIC_NUM_WINDOWS; i++) {
        NFabricAggCfg cfg;

        if (!(enabled & (1u << i))) {
            continue;
        }
        if (nfabric_win_validate(s, i, s->sh->win[i].ctrl, &cfg) !=
            NFABRIC_ERR_NONE) {
            return -1;
        }
        s->sh->cfg[i] = cfg;
        s->sh->enabled_mask |= 1u << i;
    }
    return 0;
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
    if (s->record) {
        nfabric_record_result(s, s->record_failed ? -1 :
            nfabric_record_write_access(s->record,
                                       nfabric_timing_now_ps(&s->timing),
                                       path, len, write));
    }
    nfabric_timing_account(&s->timing, path, len);
}

/* The model restarted at time 0: a record says so, to replay the same. */
static void nfabric_record_clear(NFabricCtrl *s)
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

/*
 * Serve n bytes at dpa on window i (locked, configuration as looked up).
 * FP32 windows store and return the bytes; low-bit windows aggregate.
 * Writes count as this head's contribution to the window's round.
 */
static void nfabric_win_access(NFabricCtrl *s, unsigned i, uint64_t dpa,
                               uint8_t *buf, unsigned n, bool write)
{
    NFabricShared *sh = s->sh;
    NFabricWindow *w = &sh->win[i];
    const NFabricAggCfg *cfg = &s->view.cfg[i];
    uint64_t off = dpa - s->view.base[i];
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
        int64_t rc = nfabric_dp_write(s, i, cfg, counters, off, buf, n,
                                      &dropped);

        if (dropped) {
            /* Not applied, so no contribution. */
            return;
        }
        if (rc > 0) {
            if (s->shared) {
                sh->head[s->head].reserved_codes[i] += (uint32_t)rc;
            } else {
                w->reserved_codes += (uint32_t)rc;
            }
        }
        nfabric_ctrl_dirty(s,
            s->view.counters[i] + nfabric_counter_bytes(cfg->path, cfg->width, off),
            nfabric_counter_bytes(cfg->path, cfg->width, n));
    }
    /*
     * Counted per head: a line no other head writes.  The window's totals
     * are the heads' sum (nfabric_win_value); a private device keeps them
     * in the window too (migrated, one head).
     */
    sh->head[s->head].contrib_writes[i]++;
    sh->head[s->head].contrib_bytes[i] += n;
    if (!s->shared) {
        w->contrib_writes++;
        w->contrib_bytes += n;
    }
    /* Other heads set their bits under other stripes: atomically. */
    if (!(__atomic_load_n(&sh->round[i].contrib, __ATOMIC_RELAXED) &
          (1u << s->head))) {
        __atomic_fetch_or(&sh->round[i].contrib, 1u << s->head,
                          __ATOMIC_RELAXED);
    }
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

/* ---- registers ------------------------------------------------------- */

typedef struct NFabricReg {
    uint64_t base;      /* offset of the register in the block */
    unsigned width;     /* 4 or 8 bytes */
    NFabricRegAccess access;
    int win;            /* window index (window and round registers), or -1 */
    bool round;         /* a round register of window win */
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
    }
    if (!nfabric_decode_table(t, n, off - block, r)) {
        return false;
    }
    r->base += block;
    return true;
}

static unsigned nfabric_popcount(uint32_t v)
{
    unsigned n = 0;

    for (; v; v &= v - 1) {
        n++;
    }
    return n;
}

/*
 * Heads a round waits for: every head of the device not gone (of this
 * head's job, whose windows alone it reads).
 */
static uint32_t nfabric_expected(const NFabricCtrl *s)
{
    uint32_t mask = 0;

    for (unsigned h = 0; h < s->heads; h++) {
        if (__atomic_load_n(&s->sh->head[h].state, __ATOMIC_RELAXED) !=
            NFABRIC_HEAD_GONE) {
            mask |= 1u << h;
        }
    }
    return mask & nfabric_fm_heads(s);
}

/* ROUND_STATUS of window i: finds dead heads first. */
static uint32_t nfabric_round_status(NFabricCtrl *s, unsigned i)
{
    NFabricShared *sh = s->sh;
    uint32_t expected, done, st = 0;

    if (!nfabric_win_enabled(s, i)) {
        return 0;
    }
    nfabric_shared_reap(sh, s->head);
    expected = nfabric_expected(s);
    done = __atomic_load_n(&sh->round[i].done, __ATOMIC_ACQUIRE);
    if (expected && (done & expected) == expected) {
        st |= NFABRIC_RSTAT_ALL_DONE;
    }
    if (__atomic_load_n(&sh->round[i].incomplete, __ATOMIC_RELAXED)) {
        st |= NFABRIC_RSTAT_INCOMPLETE;
    }
    st |= nfabric_popcount(done & expected) << NFABRIC_RSTAT_DONE_SHIFT;
    st |= nfabric_popcount(expected) << NFABRIC_RSTAT_EXPECT_SHIFT;
    return st;
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

/* A shared window's contribution count: the sum of its heads'. */
static uint64_t nfabric_win_contrib_sum(const NFabricCtrl *s, unsigned i,
                                        bool bytes)
{
    const NFabricShared *sh = s->sh;
    uint64_t sum = 0;

    for (unsigned h = 0; h < s->heads; h++) {
        sum += __atomic_load_n(bytes ? &sh->head[h].contrib_bytes[i] :
                               &sh->head[h].contrib_writes[i],
                               __ATOMIC_RELAXED);
    }
    return sum;
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
    const NFabricShared *sh = s->sh;
    uint64_t sum = 0;

    for (unsigned h = 0; h < s->heads; h++) {
        if (nfabric_fm_heads(s) & (1u << h)) {
            sum += __atomic_load_n(&sh->head[h].stats[p][k], __ATOMIC_RELAXED);
        }
    }
    return sum;
}

/* Is the register's value read from the shared state (device scope)? */
static bool nfabric_reg_in_state(const NFabricReg *r)
{
    uint64_t off = r->base;

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
    if (r->round) {
        return nfabric_round_value(s, r);
    }
    if (r->win >= 0) {
        return nfabric_win_value(s, r);
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
               (s->failed ? NFABRIC_HEAD_INFO_STATE_FAILED : 0);
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
static void nfabric_head_clear_stats(NFabricCtrl *s)
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
        nfabric_set_error(s, r.round ? -1 : r.win, NFABRIC_ERR_ACCESS, off,
                          "bad access size or alignment");
        return;
    }
    if (r.access == NFABRIC_ACCESS_RO) {
        nfabric_set_error(s, r.round ? -1 : r.win, NFABRIC_ERR_READONLY, off,
                          "write to a read-only register");
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

void nfabric_ctrl_reset(NFabricCtrl *s)
{
    if (s->shared) {
        nfabric_shared_thread_enter();
    }
    s->view.valid = false;
    if (!s->shared) {
        /* The device is this head's alone: windows and rounds too. */
        uint64_t mem_size = s->sh->mem_size;

        nfabric_shared_init_local(s->sh, mem_size);
    }
    nfabric_head_clear_stats(s);
    s->head_select = s->head;
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
    nfabric_shared_init_local(&s->local, ram_size);
    s->sh = &s->local;
    s->head = 0;
    s->heads = 1;
    s->shared = false;
    s->stats = s->sh->head[0].stats;
    s->map_win = -1;
    s->map_abort = -1;
    nfabric_ctrl_reset(s);
}

void nfabric_ctrl_use_shared(NFabricCtrl *s, NFabricShared *sh, unsigned head)
{
    s->sh = sh;
    s->shared = sh != &s->local;
    /* As attached (checked then; nfabric_shared_check keeps it so). */
    s->heads = s->shared ? sh->heads : 1;
    if (s->heads < 1 || s->heads > NFABRIC_MAX_HEADS) {
        s->heads = 1;
    }
    s->head = head < s->heads ? head : 0;
    s->head_select = s->head;
    s->stats = sh->head[s->head].stats;
    s->lock_token = s->shared ? nfabric_shared_token(sh) : 0;
    s->view.valid = false;
    s->failed = false;
    s->failure[0] = 0;
    s->faults_seen = nfabric_shared_faults();
    s->map_join = false;
    s->map_win = -1;
    s->map_abort = -1;
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
 * A shared head: the memory it does not reach (the gaps around its job's
 * ranges and its own, when a fabric manager assigned jobs), and every
 * window of its view, enabled or being enabled (the map protocol).
 */
static unsigned nfabric_trap_ranges_shared(NFabricCtrl *s, bool fp32,
                                           NFabricRange *out)
{
    const NFabricFmView *f = &s->fm;
    uint64_t base[NFABRIC_FM_MAX_RANGES], end[NFABRIC_FM_MAX_RANGES];
    uint64_t at = 0;
    unsigned n = 0, nr = 0;

    if (s->failed || !nfabric_fm_current(s) ||
        (!nfabric_view_current(s) &&
         nfabric_view_refresh(s) != 0)) {
        out[0].dpa = 0;         /* everything, through the controller */
        out[0].len = s->ram_size;
        return 1;
    }
    if (f->assigned) {
        /* The ranges it reaches, by address (they do not overlap). */
        for (unsigned k = 0; k < f->n && k < NFABRIC_FM_MAX_RANGES; k++) {
            unsigned j = nr++;

            for (; j && base[j - 1] > f->base[k]; j--) {
                base[j] = base[j - 1];
                end[j] = end[j - 1];
            }
            base[j] = f->base[k];
            end[j] = f->end[k];
        }
        for (unsigned k = 0; k < nr; k++) {
            if (base[k] > at) {
                out[n].dpa = at;
                out[n++].len = base[k] - at;
            }
            at = end[k];
        }
        if (at < s->ram_size) {
            out[n].dpa = at;
            out[n++].len = s->ram_size - at;
        }
    }
    for (unsigned i = 0; i < NFABRIC_NUM_WINDOWS; i++) {
        if (s->view.pmask & (1u << i)) {
            if (s->view.pend[i].path == NFABRIC_PATH_FP32 && !fp32) {
                continue;
            }
            out[n].dpa = s->view.pend[i].dpa_base;
            out[n++].len = s->view.pend[i].dpa_size;
            if (s->view.pclen[i]) {
                out[n].dpa = s->view.pend[i].counters;
                out[n++].len = s->view.pclen[i];
            }
            continue;
        }
        if (!(s->view.mask & (1u << i)) ||
            (s->view.cfg[i].path == NFABRIC_PATH_FP32 && !fp32)) {
            continue;
        }
        out[n].dpa = s->view.base[i];
        out[n++].len = s->view.size[i];
        if (s->view.clen[i]) {
            out[n].dpa = s->view.counters[i];
            out[n++].len = s->view.clen[i];
        }
    }
    return n;
}

unsigned nfabric_ctrl_trap_ranges(NFabricCtrl *s, bool fp32,
                                  NFabricRange *out)
{
    unsigned n = 0;

    if (s->shared) {
        return nfabric_trap_ranges_shared(s, fp32, out);
    }

    for (unsigned i = 0; i < NFABRIC_NUM_WINDOWS; i++) {
        const NFabricWindow *w = &s->sh->win[i];
        uint64_t clen;

        if (!nfabric_win_enabled(s, i) ||
            (s->sh->cfg[i].path == NFABRIC_PATH_FP32 && !fp32)) {
            continue;
        }
        out[n].dpa = w->dpa_base;
        out[n++].len = w->dpa_size;
        clen = nfabric_win_counter_len(w);
        if (clen) {
            out[n].dpa = w->counters;
            out[n++].len = clen;
        }
    }
    return n;
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

    s->view.valid = false;
    if (s->sh != &s->local || s->head_select >= NFABRIC_MAX_HEADS ||
        s->head_select >= s->sh->heads) {
        return -1;          /* shared devices do not migrate */
    }
    for (unsigned i = 0; i < NFABRIC_NUM_WINDOWS; i++) {
        if (s->sh->win[i].ctrl & ~NFABRIC_WCTRL_VALID) {
            return -1;      /* a guest can never store reserved bits */
        }
        if (s->sh->win[i].ctrl & NFABRIC_WCTRL_ENABLE) {
            enabled |= 1u << i;
        }
    }
    return nfabric_rebuild(s, enabled);
}
