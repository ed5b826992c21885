/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * NEURON-Fabric controller model (see include/hw/mem/nfabric_ctrl.h and
 * docs/registers.md): a head's life (init, reset, use of a shared state,
 * post-load), a shared state that cannot be trusted, the lock wrappers, and
 * the path-select table with its validation: a window's enable, disable
 * and clear (which starts its round).  Pure C11; the guest is untrusted, so
 * every offset, length and index it supplies is checked before use, and so
 * is every other head of a shared device: the window table, rounds and
 * counts live in an NFabricShared, changed only under its locks
 * (nfabric_shared.h).
 *
 * The controller's other concerns are files of their own, listed in
 * nfabric_ctrl_int.h, which declares what they share.  This file calls the
 * window rules (nfabric_window.h), the shared state, the timing shim, and
 * of the others: jobs (the view, the assignment's reach), the datapath's
 * record and the registers' statistics clear (a reset).
 */
#include <errno.h>
#include <string.h>

#include "hw/mem/nfabric_ctrl.h"
#include "hw/mem/nfabric_window.h"
#include "nfabric_ctrl_int.h"

void nfabric_win_event(NFabricCtrl *s, NFabricWinEvent ev,
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

void nfabric_set_error(NFabricCtrl *s, int win, uint32_t code,
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
void nfabric_fail(NFabricCtrl *s, const char *why)
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
bool nfabric_state_ok(NFabricCtrl *s)
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
void nfabric_lock_failed(NFabricCtrl *s, const char *which, int win)
{
    char why[96];

    if (errno == ETIMEDOUT || errno == EAGAIN || !nfabric_state_ok(s)) {
        /* Held too long, a bias not taken back now, or already reported. */
        return;
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

void nfabric_unlock_job(NFabricCtrl *s)
{
    if (s->shared) {
        nfabric_shared_unlock_job(s->sh, s->locked_job);
    }
}

bool nfabric_lock_win(NFabricCtrl *s, unsigned i)
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

void nfabric_unlock_win(NFabricCtrl *s, unsigned i)
{
    if (s->shared) {
        nfabric_shared_unlock_win(s->sh, i);
    }
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
void nfabric_state_refused(NFabricCtrl *s, uint64_t off)
{
    nfabric_set_error(s, -1, NFABRIC_ERR_STATE, off, s->failed ?
                      "write refused: the shared state is unusable" :
                      "write refused: the shared state stayed busy past "
                      "its bound");
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

/* ---- the head: reset, init, a shared state, migration --------------- */

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
