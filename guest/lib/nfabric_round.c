/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * libnfabric: the heads of a shared device and its rounds (register
 * layout version 1.1 on).  It owns the heads' and the pool's figures, a
 * head's contributions, round read, complete and the waits for a round
 * (nfabric_round_wait, nfabric_round_wait_next).  It may call
 * libnfabric.c (nfl_fail) and nfabric_reg.c (registers, nfl_check_win,
 * nfl_judged, nfl_read_path_stats).
 */
#include "nfabric_priv.h"

#include <string.h>
#include <time.h>

/* ---- heads and rounds (version 1.1) ------------------------------------- */

static bool has_heads(const nfabric_dev *d)
{
    return nfl_has_regs(d) && (d->version & 0xffff) >= 1;
}

int nfabric_pool_stats(const nfabric_dev *d,
                       nfabric_path_stats st[NFABRIC_NUM_PATHS])
{
    if (!nfl_has_regs(d)) {
        return NFLIB_ENOREGS;
    }
    nfl_read_path_stats(d, has_heads(d) ? NFABRIC_REG_POOL_STATS : NFABRIC_REG_STATS,
                    st);
    return 0;
}

int nfabric_heads_read(const nfabric_dev *d, nfabric_heads *h)
{
    uint32_t info;

    memset(h, 0, sizeof(*h));
    if (!nfl_has_regs(d)) {
        return NFLIB_ENOREGS;
    }
    h->job_windows = (1u << NFABRIC_NUM_WINDOWS) - 1;
    if (!has_heads(d)) {
        h->count = 1;
        h->live = 1;
        return 0;
    }
    if ((d->version & 0xffff) >= 4) {
        uint32_t job = nfabric_rd32(d, NFABRIC_REG_JOB);

        h->jobs_assigned = job & NFABRIC_JOB_ASSIGNED;
        h->job = job & NFABRIC_JOB_INDEX_MASK;
        h->job_windows = (job & NFABRIC_JOB_WINDOWS_MASK) >>
                         NFABRIC_JOB_WINDOWS_SHIFT;
    }
    info = nfabric_rd32(d, NFABRIC_REG_HEAD_INFO);
    h->index = info & NFABRIC_HEAD_INFO_INDEX_MASK;
    h->count = (info & NFABRIC_HEAD_INFO_COUNT_MASK) >>
               NFABRIC_HEAD_INFO_COUNT_SHIFT;
    h->shared = info & NFABRIC_HEAD_INFO_SHARED;
    h->staging = info & NFABRIC_HEAD_INFO_STAGING;
    h->live = nfabric_rd32(d, NFABRIC_REG_HEADS_LIVE);
    h->lost = nfabric_rd32(d, NFABRIC_REG_HEADS_LOST);
    return 0;
}

int nfabric_head_contrib(nfabric_dev *d, unsigned head, unsigned i,
                         uint64_t *writes)
{
    uint32_t before, self;
    int rc = nfl_check_win(d, i);

    if (rc) {
        return rc;
    }
    if (!has_heads(d)) {
        return nfl_fail(d, NFLIB_EVERSION, "the device has no per-head counts "
                    "(version %u.%u)", d->version >> 16, d->version & 0xffff);
    }
    before = nfabric_rd32(d, NFABRIC_REG_ERROR_COUNT);
    self = nfabric_rd32(d, NFABRIC_REG_HEAD_SELECT);
    nfabric_wr32(d, NFABRIC_REG_HEAD_SELECT, head);
    if ((rc = nfl_judged(d, NFABRIC_NUM_WINDOWS, before, "HEAD_SELECT write"))) {
        return rc;
    }
    *writes = nfabric_rd64(d, NFABRIC_REG_HEAD_CONTRIB_WIN(i));
    nfabric_wr32(d, NFABRIC_REG_HEAD_SELECT, self);
    return 0;
}

int nfabric_round_read(const nfabric_dev *d, unsigned i, nfabric_round *r)
{
    memset(r, 0, sizeof(*r));
    if (!nfl_has_regs(d) || i >= NFABRIC_NUM_WINDOWS) {
        return !nfl_has_regs(d) ? NFLIB_ENOREGS : NFLIB_EINVAL;
    }
    if (!has_heads(d)) {
        return NFLIB_EVERSION;
    }
    /* STATUS first: a round read after it is at least as new. */
    r->status = nfabric_rd32(d, NFABRIC_REG_ROUND(i, NFABRIC_ROUND_STATUS));
    r->seq = nfabric_rd32(d, NFABRIC_REG_ROUND(i, NFABRIC_ROUND_SEQ));
    r->done = nfabric_rd32(d, NFABRIC_REG_ROUND(i, NFABRIC_ROUND_DONE));
    r->all_done = r->status & NFABRIC_RSTAT_ALL_DONE;
    r->incomplete = r->status & NFABRIC_RSTAT_INCOMPLETE;
    r->ndone = (r->status & NFABRIC_RSTAT_DONE_MASK) >> NFABRIC_RSTAT_DONE_SHIFT;
    r->nexpected = (r->status & NFABRIC_RSTAT_EXPECT_MASK) >>
                   NFABRIC_RSTAT_EXPECT_SHIFT;
    return 0;
}

int nfabric_round_complete(nfabric_dev *d, unsigned i, uint32_t seq)
{
    uint32_t before;
    int rc = nfl_check_win(d, i);

    if (rc) {
        return rc;
    }
    if (!has_heads(d)) {
        return nfl_fail(d, NFLIB_EVERSION, "the device has no round registers");
    }
    before = nfabric_rd32(d, NFABRIC_REG_ERROR_COUNT);
    nfabric_wr32(d, NFABRIC_REG_ROUND(i, NFABRIC_ROUND_COMPLETE), seq);
    return nfl_judged(d, i, before, "round complete");
}

static uint64_t now_ms(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

static void pause_us(unsigned us)
{
    struct timespec ts = { 0, (long)us * 1000 };

    nanosleep(&ts, NULL);
}

/*
 * One more poll of a register another head changes?  False once timeout_ms
 * have gone since t0; else pauses (50 us at first, then 1 ms) and says yes.
 */
/*
 * A wait ends at once, with the device's error STATE, when this head
 * found the shared state unusable (HEAD_INFO.STATE_FAILED): its registers
 * then read 0, so no round it waits for can end, and a round number that
 * reads 0 is not a round that moved (docs/registers.md, "Rounds").
 */
static int wait_head_failed(nfabric_dev *d, unsigned i)
{
    if (!(nfabric_rd32(d, NFABRIC_REG_HEAD_INFO) & NFABRIC_HEAD_INFO_STATE_FAILED)) {
        return 0;
    }
    return nfl_fail(d, NFABRIC_ERR_STATE, "window %u: this head found the "
                    "device's shared state unusable (HEAD_INFO.STATE_FAILED): "
                    "no round can end", i);
}

static bool poll_again(unsigned n, uint64_t t0, unsigned timeout_ms)
{
    if (now_ms() - t0 > timeout_ms) {
        return false;
    }
    pause_us(n < 100 ? 50 : 1000);
    return true;
}

int nfabric_round_wait(nfabric_dev *d, unsigned i, uint32_t seq,
                       unsigned timeout_ms, nfabric_round *r)
{
    uint64_t t0 = now_ms();
    int rc = nfl_check_win(d, i);

    if (rc) {
        return rc;
    }
    /* Asleep in the driver until the device's interrupt, where it has it. */
    if ((rc = nfl_drv_round_wait(d, i, seq, timeout_ms, r)) != 1) {
        return rc;
    }
    for (unsigned n = 0;; n++) {
        if ((rc = nfabric_round_read(d, i, r))) {
            return nfl_fail(d, rc, "window %u: cannot read the round", i);
        }
        /* After the read: it may be what found the state gone (reads 0). */
        if ((rc = wait_head_failed(d, i))) {
            return rc;
        }
        if (r->seq != seq) {
            return nfl_fail(d, NFLIB_ESTALE, "window %u: waiting for round %u, "
                        "the window is at round %u", i, seq, r->seq);
        }
        if (r->all_done) {
            return 0;
        }
        if (!poll_again(n, t0, timeout_ms)) {
            return nfl_fail(d, NFLIB_ETIMEDOUT, "window %u: round %u: %u of %u "
                        "heads done after %u ms (done mask 0x%x)", i, seq,
                        r->ndone, r->nexpected, timeout_ms, r->done);
        }
    }
}

int nfabric_round_wait_next(nfabric_dev *d, unsigned i, uint32_t seq,
                            unsigned timeout_ms)
{
    uint64_t t0 = now_ms();
    int rc = nfl_check_win(d, i);

    if (rc) {
        return rc;
    }
    for (unsigned n = 0;; n++) {
        uint32_t now_seq = nfabric_rd32(d, NFABRIC_REG_ROUND(i, NFABRIC_ROUND_SEQ));

        if ((rc = wait_head_failed(d, i))) {
            return rc;
        }
        if (now_seq != seq) {
            return 0;
        }
        if (!poll_again(n, t0, timeout_ms)) {
            return nfl_fail(d, NFLIB_ETIMEDOUT, "window %u: still at round %u "
                        "after %u ms", i, seq, timeout_ms);
        }
    }
}
