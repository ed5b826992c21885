/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * NEURON-Fabric controller model: the map protocol (docs/multihost.md,
 * "Direct maps").  A shared head's window enable waits, outside the
 * configuration lock, until every head of the job that maps memory
 * directly traps the window's ranges; the ranges a head must trap.  Pure
 * C11.  Calls the shared state, and of the controller's other files
 * (nfabric_ctrl_int.h, which gives the layering) only those below it: the
 * base (nfabric_head.c: errors, events, locks), jobs (the assignment, the
 * view, the job's lock and its drop of a pending window) and the
 * path-select table (nfabric_table.c: the enable itself).
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE     /* clock_gettime, nanosleep */
#endif
#include <inttypes.h>
#include <time.h>

#include "hw/mem/nfabric_ctrl.h"
#include "nfabric_ctrl_int.h"

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

/* Give up the window this head was enabling (job lock held). */
void nfabric_map_give_up_locked(NFabricCtrl *s, unsigned i)
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
void nfabric_map_finish(NFabricCtrl *s)
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
        s->fault_peer_win = (int)i;     /* a CXL event (nfabric_faults.c) */
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
        out[0].staging = false;
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
                out[n].staging = false;
                out[n++].len = base[k] - at;
            }
            at = end[k];
        }
        if (at < s->ram_size) {
            out[n].dpa = at;
            out[n].staging = false;
            out[n++].len = s->ram_size - at;
        }
    }
    for (unsigned i = 0; i < NFABRIC_NUM_WINDOWS; i++) {
        if (s->view.pmask & (1u << i)) {
            if (s->view.pend[i].path == NFABRIC_PATH_FP32 && !fp32) {
                continue;
            }
            out[n].dpa = s->view.pend[i].dpa_base;
            out[n].staging = s->view.pend[i].posted && s->staging;
            out[n++].len = s->view.pend[i].dpa_size;
            if (s->view.pclen[i]) {
                out[n].dpa = s->view.pend[i].counters;
                out[n].staging = false;
                out[n++].len = s->view.pclen[i];
            }
            continue;
        }
        if (!(s->view.mask & (1u << i)) ||
            (s->view.cfg[i].path == NFABRIC_PATH_FP32 && !fp32)) {
            continue;
        }
        out[n].dpa = s->view.base[i];
        out[n].staging = (s->view.posted & (1u << i)) && s->staging;
        out[n++].len = s->view.size[i];
        if (s->view.clen[i]) {
            out[n].dpa = s->view.counters[i];
            out[n].staging = false;
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
        out[n].staging = (w->ctrl & NFABRIC_WCTRL_POSTED) && s->staging;
        out[n++].len = w->dpa_size;
        clen = nfabric_win_counter_len(w);
        if (clen) {
            out[n].dpa = w->counters;
            out[n].staging = false;
            out[n++].len = clen;
        }
    }
    return n;
}
