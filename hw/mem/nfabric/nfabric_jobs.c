/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * NEURON-Fabric controller model: jobs, the fabric manager's assignment
 * (docs/multihost.md).  A head's private copy of the assignment (which
 * memory and windows its job has), its job's configuration lock, and the
 * view: the private, validated copy of its job's windows that the memory
 * path serves from; the drop of a pending window (the map protocol's,
 * here because the job lock's repair of a dead head's enable needs it).
 * Pure C11.  Calls the shared state (nfabric_shared.h), the window rules,
 * and of the controller's other files (nfabric_ctrl_int.h, which gives the
 * layering) only the base (nfabric_head.c: failure and lock wrappers).
 */
#include <inttypes.h>
#include <string.h>

#include "hw/mem/nfabric_ctrl.h"
#include "hw/mem/nfabric_window.h"
#include "nfabric_ctrl_int.h"

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
bool nfabric_fm_refresh_locked(NFabricCtrl *s)
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
bool nfabric_fm_current(NFabricCtrl *s)
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
bool nfabric_fm_reach(NFabricCtrl *s, uint64_t dpa, uint64_t len)
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

/*
 * Drop pending window i (job lock held): the others may map it.  The map
 * protocol's, here for the job lock's repair of a dead head's enable.
 */
void nfabric_pending_drop_locked(NFabricCtrl *s, unsigned i)
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

/*
 * Take this head's job's configuration lock (docs/multihost.md, "Locks").
 * The fabric manager writes an assignment holding every job's lock: under
 * ours, the copy of the assignment is checked current, and made again (and
 * the lock of the new job taken) if it moved.  Windows the job's heads
 * that are gone were enabling (the map protocol) are given up here.
 */
#define NFABRIC_JOB_LOCK_TRIES  3

bool nfabric_lock_job(NFabricCtrl *s)
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

int nfabric_view_refresh(NFabricCtrl *s)
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
            if (table[i].posted) {
                v.posted |= 1u << i;
            }
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
