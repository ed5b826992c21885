/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * NEURON-Fabric controller model: posted windows (register version 1.7,
 * docs/registers.md "Posted windows").  A posted G-Binary or G-Ternary
 * window's data range is, to each head, its own staging memory: its stores
 * and loads there are plain memory accesses, at memory speed where the
 * owner maps the staging directly (the direct map).  Two doorbells move
 * data between the staging and the engine: POST contributes a range of the
 * staging to the window's round, through the same datapath, locks, counts
 * and timing as the CXL.mem path's writes of the same bytes; FETCH writes
 * the window's read-out of a range into the staging.
 *
 * Pure C11.  The guest is untrusted: a doorbell's range is checked against
 * the window, whose entry is this head's checked view of the table.  Calls
 * the datapath (nfabric_dp_posted, nfabric_account_posted) and, of the
 * controller's other files, the base and jobs (nfabric_ctrl_int.h).
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE     /* sigset_t, pthread_sigmask under -std=c11 */
#endif
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <string.h>

#include "hw/mem/nfabric_ctrl.h"
#include "nfabric_ctrl_int.h"

/* Retries of a doorbell when another head changes the table meanwhile. */
#define NFABRIC_POSTED_TRIES    1000

/*
 * Is this head's view current, and window i in it an enabled posted window
 * of this head's job with staging?  Refuses the doorbell (error set) if not.
 */
static bool nfabric_posted_window(NFabricCtrl *s, unsigned i, uint64_t off,
                                  unsigned *tries)
{
    while (!nfabric_view_current(s)) {
        if (++*tries > NFABRIC_POSTED_TRIES || nfabric_view_refresh(s)) {
            nfabric_state_refused(s, off);
            return false;
        }
    }
    if (!(s->view.mask & s->view.posted & (1u << i)) || !s->staging) {
        nfabric_set_error(s, -1, NFABRIC_ERR_POSTED, off,
                          s->staging ? "doorbell of a window that is not an "
                          "enabled posted window" : "doorbell on a head "
                          "without staging memory");
        return false;
    }
    return true;
}

/*
 * The stripes of a doorbell, [first, last] of window i's stripes, split
 * between the caller and a helper thread: part t takes the stripes k with
 * k % 2 == t, in order, and stops at the first it cannot do (next[t]),
 * saying why (rc[t]: -1 the table changed, NFABRIC_ERR_STATE a stripe not
 * had, with its errno).  Only the view is read meanwhile (nobody changes
 * it), each stripe under its own lock; counts are the caller's, after.
 */
typedef struct NFabricPostRun {
    NFabricCtrl *s;
    unsigned i;
    bool post;
    uint64_t from, end, shift;
    uint64_t first, last;
    uint64_t next[2];
    int rc[2];
    int lock_errno[2];
    uint64_t reserved[2];
    uint64_t done[2];           /* bytes applied */
    uint64_t words[2];          /* 8-byte words they touch */
} NFabricPostRun;

/* Doorbells at least this long are split between two threads. */
#define NFABRIC_POSTED_SPLIT    (256u << 10)

/* The 8-byte words [off, off + len) touches, len > 0. */
static uint64_t nfabric_posted_words(uint64_t off, uint64_t len)
{
    return ((off + len + 7) >> 3) - (off >> 3);
}

/* Stripe k of the run: [*a, *a + *n) of the window, inside the doorbell. */
static void nfabric_posted_stripe(const NFabricPostRun *r, uint64_t k,
                                  uint64_t *a, uint64_t *n)
{
    uint64_t lo = k << r->shift, hi = (k + 1) << r->shift;

    lo = lo > r->from ? lo : r->from;
    hi = hi < r->end ? hi : r->end;
    *a = lo;
    *n = hi - lo;
}

static void nfabric_posted_part(NFabricPostRun *r, unsigned t)
{
    NFabricCtrl *s = r->s;
    uint64_t k = r->first + ((r->first & 1) != t);

    for (; k <= r->last; k += 2) {
        uint64_t a, n;
        int rc;

        nfabric_posted_stripe(r, k, &a, &n);
        rc = nfabric_dp_span(s, r->i, a, s->staging + s->view.base[r->i] + a,
                             (unsigned)n, r->post, &r->reserved[t],
                             &r->lock_errno[t]);
        if (rc != NFABRIC_ERR_NONE) {
            r->rc[t] = rc;
            break;
        }
        r->done[t] += n;
        r->words[t] += nfabric_posted_words(a, n);
    }
    r->next[t] = k;
}

static void *nfabric_posted_helper(void *arg)
{
    NFabricPostRun *r = arg;

    if (r->s->shared) {
        nfabric_shared_thread_enter();
    }
    nfabric_posted_part(r, 1);
    return NULL;
}

/*
 * Both parts at once, if the range is long, the engine serves it alone and
 * a helper thread can be had (every signal blocked in it); else the
 * caller's part only (the helper's stripes are then left to the finish).
 */
static void nfabric_posted_split(NFabricPostRun *r)
{
    sigset_t all, old;
    pthread_t helper;
    bool two = r->end - r->from >= NFABRIC_POSTED_SPLIT &&
               r->last > r->first && r->s->rtl_mode == NFABRIC_RTL_OFF;

    r->next[1] = r->first + ((r->first & 1) != 1);
    if (two) {
        sigfillset(&all);
        pthread_sigmask(SIG_SETMASK, &all, &old);
        two = pthread_create(&helper, NULL, nfabric_posted_helper, r) == 0;
        pthread_sigmask(SIG_SETMASK, &old, NULL);
    }
    nfabric_posted_part(r, 0);
    if (two) {
        pthread_join(helper, NULL);
    }
}

/*
 * A doorbell of window i: len bytes of its data from STAGE_OFF, posted
 * (post) or fetched.  Stripe by stripe, each under its lock, so that a
 * long range delays another head's access to one stripe at a time; a long
 * one in two threads.  The stripes a part did not do (the table changed,
 * or no helper) are done after, one by one, with the view checked again.
 */
static void nfabric_posted_doorbell(NFabricCtrl *s, unsigned i, bool post,
                                    uint32_t len, uint64_t reg)
{
    NFabricPostRun r = { .s = s, .i = i, .post = post };
    uint64_t base, clen;
    unsigned tries = 0, path;

    if (!nfabric_posted_window(s, i, reg, &tries)) {
        return;
    }
    r.from = s->stage_off[i];
    if (len == 0 || r.from > s->view.size[i] ||
        len > s->view.size[i] - r.from) {
        nfabric_set_error(s, -1, NFABRIC_ERR_RANGE, reg, "doorbell range "
                          "empty or past the window's data");
        return;
    }
    r.end = r.from + len;
    r.shift = nfabric_stripe_shift(s->view.size[i]);
    r.first = r.from >> r.shift;
    r.last = (r.end - 1) >> r.shift;
    base = s->view.base[i];
    path = s->view.cfg[i].path;
    if (post) {
        /* Before any count moves: a head that dies now left INCOMPLETE. */
        nfabric_dp_contributing(s, i);
    }
    nfabric_posted_split(&r);
    for (unsigned t = 0; t < 2; t++) {
        if (r.rc[t] == NFABRIC_ERR_STATE) {
            errno = r.lock_errno[t];
            nfabric_lock_failed(s, "window", (int)i);
            r.next[t] = UINT64_MAX;
            r.rc[0] = r.rc[1] = NFABRIC_ERR_STATE;
            break;
        }
    }
    /* What the parts left: one stripe at a time, the view checked again. */
    for (unsigned t = 0; t < 2 && r.rc[0] != NFABRIC_ERR_STATE; t++) {
        for (uint64_t k = r.next[t]; k <= r.last;) {
            uint64_t a, n;
            int rc;

            nfabric_posted_stripe(&r, k, &a, &n);
            rc = nfabric_dp_span(s, i, a, s->staging + base + a, (unsigned)n,
                                 post, &r.reserved[t], &r.lock_errno[t]);
            if (rc < 0) {
                /* The table changed: the window must still be what it was. */
                if (!nfabric_posted_window(s, i, reg, &tries)) {
                    return;
                }
                if (s->view.base[i] != base || r.end > s->view.size[i] ||
                    nfabric_stripe_shift(s->view.size[i]) != r.shift) {
                    nfabric_set_error(s, -1, NFABRIC_ERR_POSTED, reg, "window "
                                      "reconfigured during a doorbell");
                    return;
                }
                continue;
            }
            if (rc != NFABRIC_ERR_NONE) {
                errno = r.lock_errno[t];
                nfabric_lock_failed(s, "window", (int)i);
                r.rc[0] = NFABRIC_ERR_STATE;
                break;
            }
            r.done[t] += n;
            r.words[t] += nfabric_posted_words(a, n);
            k += 2;
        }
    }
    /* What was applied, once: counts, dirty ranges, statistics, timing. */
    if (r.done[0] + r.done[1]) {
        clen = nfabric_counter_bytes(path, s->view.cfg[i].width, len);
        if (post) {
            nfabric_dp_contributed(s, i, r.words[0] + r.words[1],
                                   r.done[0] + r.done[1],
                                   r.reserved[0] + r.reserved[1]);
            nfabric_ctrl_dirty(s, s->view.counters[i] +
                               nfabric_counter_bytes(path,
                                                     s->view.cfg[i].width,
                                                     r.from), clen);
        } else {
            nfabric_staging_dirty(s, base + r.from, len);
        }
        nfabric_account_posted(s, path, post, r.from, r.done[0] + r.done[1],
                               r.words[0] + r.words[1]);
    }
    if (r.rc[0] == NFABRIC_ERR_STATE) {
        nfabric_set_error(s, -1, NFABRIC_ERR_STATE, reg, "doorbell refused: "
                          "another head kept the window's stripe past the "
                          "bound");
    }
}

uint64_t nfabric_posted_reg_read(NFabricCtrl *s, unsigned i, uint64_t rel)
{
    return rel == NFABRIC_STAGE_OFF ? s->stage_off[i] : 0;
}

void nfabric_posted_reg_write(NFabricCtrl *s, unsigned i, uint64_t rel,
                              uint32_t val, uint64_t off)
{
    switch (rel) {
    case NFABRIC_STAGE_OFF:
        s->stage_off[i] = val;
        return;
    case NFABRIC_POST:
    case NFABRIC_FETCH:
        nfabric_posted_doorbell(s, i, rel == NFABRIC_POST, val, off);
        return;
    }
}
