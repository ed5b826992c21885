/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * NEURON-Fabric controller model: the path-select table (docs/registers.md)
 * with its validation: a window's validate, enable, disable and clear
 * (which starts its round), and the publishing of a change to the job's
 * other heads.  Pure C11; the guest is untrusted, so every offset, length
 * and index it supplies is checked before use, and so is every other head
 * of a shared device: the window table, rounds and counts live in an
 * NFabricShared, changed only under its locks (nfabric_shared.h).
 *
 * Calls the window rules (nfabric_window.h), the shared state, and of the
 * controller's other files (nfabric_ctrl_int.h) only the base
 * (nfabric_head.c: errors, events, locks) and jobs (the view, the
 * assignment's reach).  An enable over direct maps is published here as
 * pending; the map protocol (nfabric_map.c, above) finishes it.
 */
#include <string.h>

#include "hw/mem/nfabric_ctrl.h"
#include "hw/mem/nfabric_window.h"
#include "nfabric_ctrl_int.h"

/* ---- the path-select table ------------------------------------------ */

/* Window w's configuration with CTRL value wctrl, for the table rules. */
static NFabricWindowCfg nfabric_win_cfg(const NFabricWindow *w, uint32_t wctrl)
{
    return nfabric_window_cfg(w->dpa_base, w->dpa_size, w->counters, wctrl,
                              w->threshold);
}

/* Bytes of window w's counter area (0 for FP32). */
uint64_t nfabric_win_counter_len(const NFabricWindow *w)
{
    NFabricWindowCfg c = nfabric_win_cfg(w, w->ctrl);

    return nfabric_window_counter_len(&c);
}

/*
 * Check window i's programmed configuration with CTRL value wctrl against
 * device memory and the other enabled windows (nfabric_window_validate, the
 * rules the guest library uses too).  Returns NFABRIC_ERR_NONE, filling in
 * cfg, or the error code.
 */
uint32_t nfabric_win_validate(NFabricCtrl *s, unsigned i,
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
    nfabric_shared_event_bump(sh);
    nfabric_win_event(s, NFABRIC_WIN_EV_CLEAR, i, 0);
}

/* ---- rounds ------------------------------------------------------- */

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
uint32_t nfabric_round_status(NFabricCtrl *s, unsigned i)
{
    NFabricShared *sh = s->sh;
    uint32_t expected, done, seq, st = 0;

    if (!nfabric_win_enabled(s, i)) {
        return 0;
    }
    seq = __atomic_load_n(&sh->round[i].seq, __ATOMIC_ACQUIRE);
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
    nfabric_cpmu_round(s, i, seq, st);  /* the CXL PMU's ROUNDS events */
    return st;
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

/* CMD = CLEAR of window i (configuration lock held). */
void nfabric_win_clear(NFabricCtrl *s, unsigned i, uint64_t off)
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
bool nfabric_win_enable_now(NFabricCtrl *s, unsigned i,
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

void nfabric_win_ctrl_write(NFabricCtrl *s, unsigned i,
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
    if (err == NFABRIC_ERR_NONE && c.posted && !s->staging) {
        err = NFABRIC_ERR_POSTED;   /* this head has no staging memory */
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
