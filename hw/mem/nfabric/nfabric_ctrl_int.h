/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * NEURON-Fabric controller model: what its files share, private to them
 * (the controller's interface is include/hw/mem/nfabric_ctrl.h).  Pure C11,
 * no QEMU headers.  The controller is one file per concern, in layers,
 * from the bottom up; a file calls only files below it, never one above:
 *
 *   nfabric_head.c      the base: a head's window events and errors, the
 *                       failure of a shared state that cannot be trusted,
 *                       the lock wrappers, the path names; calls none of
 *                       the others
 *   nfabric_jobs.c      jobs: the fabric manager's assignment, the job's
 *                       lock (with the drop of a dead head's pending
 *                       window), the view
 *   nfabric_table.c     the path-select table: a window's validate, clear,
 *                       enable and CTRL write
 *   nfabric_map.c       the map protocol (docs/multihost.md, "Direct
 *                       maps"): enables over direct maps, trap ranges
 *   nfabric_datapath.c  the CXL.mem path: lookup, the engine or the RTL,
 *                       accounting and records
 *   nfabric_cpmu.c      the CXL PMU block: its registers, counters and
 *                       overflow (the events are counted inline, below)
 *   nfabric_regs.c      registers: decode, reads, writes, the vendor
 *                       block's header
 *   nfabric_ctrl.c      the top: a head's life (init, reset, use_shared,
 *                       post_load); may call every one of them
 *
 * Each function is declared here under the file that defines it; the
 * small helpers several files call (the memory path on every access) are
 * defined here, inline, and call nothing of the controller's files.
 */
#ifndef HW_MEM_NFABRIC_CTRL_INT_H
#define HW_MEM_NFABRIC_CTRL_INT_H

#include <stdbool.h>
#include <stdint.h>

#include "hw/mem/nfabric_ctrl.h"
#include "hw/mem/nfabric_fm.h"
#include "hw/mem/nfabric_locks.h"
#include "hw/mem/nfabric_mappings.h"

/* ---- nfabric_head.c ------------------------------------------------- */

void nfabric_win_event(NFabricCtrl *s, NFabricWinEvent ev,
                       unsigned win, uint32_t code);
void nfabric_set_error(NFabricCtrl *s, int win, uint32_t code,
                       uint64_t off, const char *what);
void nfabric_fail(NFabricCtrl *s, const char *why);
bool nfabric_state_ok(NFabricCtrl *s);
void nfabric_lock_failed(NFabricCtrl *s, const char *which, int win);
void nfabric_unlock_job(NFabricCtrl *s);
bool nfabric_lock_win(NFabricCtrl *s, unsigned i);
void nfabric_unlock_win(NFabricCtrl *s, unsigned i);
void nfabric_state_refused(NFabricCtrl *s, uint64_t off);

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

/*
 * Inline: the CXL PMU's events (nfabric_cpmu.c), counted where they happen
 * (the access path on every access): n events of group's bit ev.
 */
static inline void nfabric_cpmu_count(NFabricCtrl *s, unsigned group,
                                      unsigned ev, uint64_t n)
{
    s->cpmu.total[group - 1][ev] += n;
}

/*
 * A round of window i (number seq) showed status st (ROUND_STATUS) to
 * this head: the first time it shows ALL_DONE or INCOMPLETE is an event.
 */
static inline void nfabric_cpmu_round(NFabricCtrl *s, unsigned i,
                                      uint32_t seq, uint32_t st)
{
    NFabricCpmu *c = &s->cpmu;
    unsigned now = (st & NFABRIC_RSTAT_ALL_DONE ? 1u : 0) |
                   (st & NFABRIC_RSTAT_INCOMPLETE ? 2u : 0);

    if (seq != c->round_seq[i]) {
        c->round_seq[i] = seq;
        c->round_seen[i] = 0;
    }
    if (now & ~c->round_seen[i] & 1u) {
        nfabric_cpmu_count(s, NFABRIC_CPMU_GROUP_DEVICE,
                           NFABRIC_CPMU_EV_ROUND_DONE, 1);
    }
    if (now & ~c->round_seen[i] & 2u) {
        nfabric_cpmu_count(s, NFABRIC_CPMU_GROUP_DEVICE,
                           NFABRIC_CPMU_EV_ROUND_INCOMPLETE, 1);
    }
    c->round_seen[i] |= now;
}

/* Is the view current (its job's windows unchanged since it was made)? */
static inline bool nfabric_view_current(const NFabricCtrl *s)
{
    return s->view.valid &&
           nfabric_shared_gen(s->sh, s->view.job) == s->view.gen;
}

/* Inline: the staging's counterpart of nfabric_ctrl_dirty(). */
static inline void nfabric_staging_dirty(NFabricCtrl *s, uint64_t dpa,
                                         uint64_t len)
{
    if (s->ops && s->ops->staging_dirty && len) {
        s->ops->staging_dirty(s->opaque, dpa, len);
    }
}

/* ---- nfabric_jobs.c ------------------------------------------------- */

bool nfabric_fm_refresh_locked(NFabricCtrl *s);
bool nfabric_fm_current(NFabricCtrl *s);
bool nfabric_fm_reach(NFabricCtrl *s, uint64_t dpa, uint64_t len);
void nfabric_pending_drop_locked(NFabricCtrl *s, unsigned i);
bool nfabric_lock_job(NFabricCtrl *s);
int nfabric_view_refresh(NFabricCtrl *s);

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

/* ---- nfabric_table.c ------------------------------------------------ */

uint64_t nfabric_win_counter_len(const NFabricWindow *w);
uint32_t nfabric_win_validate(NFabricCtrl *s, unsigned i,
                              uint32_t wctrl, NFabricAggCfg *cfg);
void nfabric_win_clear(NFabricCtrl *s, unsigned i, uint64_t off);
bool nfabric_win_enable_now(NFabricCtrl *s, unsigned i,
                            const NFabricWindowCfg *cp, uint32_t val);
void nfabric_win_ctrl_write(NFabricCtrl *s, unsigned i,
                            uint32_t val, uint64_t off);
uint32_t nfabric_round_status(NFabricCtrl *s, unsigned i);

/* ---- nfabric_map.c -------------------------------------------------- */

void nfabric_map_give_up_locked(NFabricCtrl *s, unsigned i);
void nfabric_map_finish(NFabricCtrl *s);

/* ---- nfabric_datapath.c --------------------------------------------- */

void nfabric_record_clear(NFabricCtrl *s);
void nfabric_dp_contributing(NFabricCtrl *s, unsigned i);
void nfabric_dp_contributed(NFabricCtrl *s, unsigned i, uint64_t writes,
                            uint64_t bytes, uint64_t reserved);
int nfabric_dp_span(NFabricCtrl *s, unsigned i, uint64_t off, uint8_t *buf,
                    unsigned n, bool write, uint64_t *reserved,
                    int *lock_errno);
void nfabric_account_posted(NFabricCtrl *s, unsigned path, bool write,
                            uint64_t off, uint64_t len, uint64_t words);

/* ---- nfabric_faults.c ----------------------------------------------- */

void nfabric_faults_prime(NFabricCtrl *s);

/* ---- nfabric_irq.c -------------------------------------------------- */

uint64_t nfabric_irq_reg_read(NFabricCtrl *s, uint64_t off);
void nfabric_irq_reg_write(NFabricCtrl *s, uint64_t off, uint32_t val,
                           uint64_t reg);

/* ---- nfabric_posted.c ----------------------------------------------- */

uint64_t nfabric_posted_reg_read(NFabricCtrl *s, unsigned i, uint64_t rel);
void nfabric_posted_reg_write(NFabricCtrl *s, unsigned i, uint64_t rel,
                              uint32_t val, uint64_t off);

/* ---- nfabric_cpmu.c ------------------------------------------------- */

void nfabric_cpmu_reset(NFabricCtrl *s);

/* ---- nfabric_regs.c ------------------------------------------------- */

void nfabric_head_clear_stats(NFabricCtrl *s);

#endif /* HW_MEM_NFABRIC_CTRL_INT_H */
