/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * NEURON-Fabric controller model: what its files share, private to them
 * (the controller's interface is include/hw/mem/nfabric_ctrl.h).  Pure C11,
 * no QEMU headers.  The controller is one file per concern:
 *
 *   nfabric_ctrl.c      a head's life (init, reset, use_shared, post_load),
 *                       a shared state that cannot be trusted, the lock
 *                       wrappers, the path-select table (windows, rounds)
 *   nfabric_jobs.c      jobs: the fabric manager's assignment, the view
 *   nfabric_map.c       the map protocol (docs/multihost.md, "Direct
 *                       maps"): enables over direct maps, trap ranges
 *   nfabric_datapath.c  the CXL.mem path: lookup, the engine or the RTL,
 *                       accounting and records
 *   nfabric_regs.c      registers: decode, reads, writes, the vendor
 *                       block's header
 *
 * Each function is declared here under the file that defines it; the
 * small helpers several files call (the memory path on every access) are
 * defined here, inline, as they were when the controller was one file.
 */
#ifndef HW_MEM_NFABRIC_CTRL_INT_H
#define HW_MEM_NFABRIC_CTRL_INT_H

#include <stdbool.h>
#include <stdint.h>

#include "hw/mem/nfabric_ctrl.h"
#include "hw/mem/nfabric_fm.h"
#include "hw/mem/nfabric_locks.h"

/* ---- nfabric_ctrl.c ------------------------------------------------- */

void nfabric_win_event(NFabricCtrl *s, NFabricWinEvent ev,
                       unsigned win, uint32_t code);
uint64_t nfabric_win_counter_len(const NFabricWindow *w);
void nfabric_set_error(NFabricCtrl *s, int win, uint32_t code,
                       uint64_t off, const char *what);
void nfabric_fail(NFabricCtrl *s, const char *why);
bool nfabric_state_ok(NFabricCtrl *s);
void nfabric_lock_failed(NFabricCtrl *s, const char *which, int win);
void nfabric_unlock_job(NFabricCtrl *s);
bool nfabric_lock_win(NFabricCtrl *s, unsigned i);
void nfabric_unlock_win(NFabricCtrl *s, unsigned i);
void nfabric_state_refused(NFabricCtrl *s, uint64_t off);
void nfabric_win_clear(NFabricCtrl *s, unsigned i, uint64_t off);
bool nfabric_win_enable_now(NFabricCtrl *s, unsigned i,
                            const NFabricWindowCfg *cp, uint32_t val);
void nfabric_win_ctrl_write(NFabricCtrl *s, unsigned i,
                            uint32_t val, uint64_t off);

/* Inline: the memory path calls it on every write. */
static inline void nfabric_ctrl_dirty(NFabricCtrl *s, uint64_t dpa,
                                      uint64_t len)
{
    if (s->ops && s->ops->dirty && len) {
        s->ops->dirty(s->opaque, dpa, len);
    }
}

static inline bool nfabric_win_enabled(const NFabricCtrl *s, unsigned i)
{
    return s->sh->enabled_mask & (1u << i);
}

/* Is the view current (its job's windows unchanged since it was made)? */
static inline bool nfabric_view_current(const NFabricCtrl *s)
{
    return s->view.valid &&
           nfabric_shared_gen(s->sh, s->view.job) == s->view.gen;
}

/* ---- nfabric_jobs.c ------------------------------------------------- */

bool nfabric_fm_refresh_locked(NFabricCtrl *s);
bool nfabric_fm_reach(NFabricCtrl *s, uint64_t dpa, uint64_t len);
bool nfabric_lock_job(NFabricCtrl *s);
int nfabric_view_refresh(NFabricCtrl *s);

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

/* Is window i one of this head's job's (current copy)? */
static inline bool nfabric_fm_window(const NFabricCtrl *s, unsigned i)
{
    return !s->shared || !s->fm.assigned || (s->fm.windows & (1u << i));
}

/* The heads of this head's job (all heads without an assignment). */
static inline uint32_t nfabric_fm_heads(const NFabricCtrl *s)
{
    return !s->shared || !s->fm.assigned ? UINT32_MAX : s->fm.job_heads;
}

/* ---- nfabric_map.c -------------------------------------------------- */

void nfabric_pending_drop_locked(NFabricCtrl *s, unsigned i);
void nfabric_map_give_up_locked(NFabricCtrl *s, unsigned i);
void nfabric_map_finish(NFabricCtrl *s);

/* ---- nfabric_datapath.c --------------------------------------------- */

void nfabric_record_clear(NFabricCtrl *s);

/* ---- nfabric_regs.c ------------------------------------------------- */

void nfabric_head_clear_stats(NFabricCtrl *s);

#endif /* HW_MEM_NFABRIC_CTRL_INT_H */
