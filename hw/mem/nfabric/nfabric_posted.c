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
#include <string.h>

#include "hw/mem/nfabric_ctrl.h"
#include "nfabric_ctrl_int.h"

/* Retries of a doorbell when another head changes the table meanwhile. */
#define NFABRIC_POSTED_TRIES    1000

/* The 8-byte words [off, off + len) touches, len > 0. */
static uint64_t nfabric_posted_words(uint64_t off, uint64_t len)
{
    return ((off + len + 7) >> 3) - (off >> 3);
}

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
 * A doorbell of window i: len bytes of its data from STAGE_OFF, posted
 * (post) or fetched.  Stripe by stripe, each under its lock, so that a
 * long range delays another head's access to one stripe at a time.
 */
static void nfabric_posted_doorbell(NFabricCtrl *s, unsigned i, bool post,
                                    uint32_t len, uint64_t reg)
{
    uint64_t off = s->stage_off[i], end;
    unsigned tries = 0;

    if (!nfabric_posted_window(s, i, reg, &tries)) {
        return;
    }
    if (len == 0 || off > s->view.size[i] || len > s->view.size[i] - off) {
        nfabric_set_error(s, -1, NFABRIC_ERR_RANGE, reg, "doorbell range "
                          "empty or past the window's data");
        return;
    }
    end = off + len;
    while (off < end) {
        uint64_t stripe = 1ull << nfabric_stripe_shift(s->view.size[i]);
        uint64_t n = stripe - (off & (stripe - 1));
        uint64_t dpa = s->view.base[i] + off;
        unsigned path = s->view.cfg[i].path;
        int rc;

        n = n < end - off ? n : end - off;
        rc = nfabric_dp_posted(s, i, off, s->staging + dpa, (unsigned)n, post,
                               nfabric_posted_words(off, n));
        if (rc < 0) {
            /* The table changed: the window must still be what it was. */
            if (!nfabric_posted_window(s, i, reg, &tries)) {
                return;
            }
            if (s->view.base[i] + off != dpa || end > s->view.size[i]) {
                nfabric_set_error(s, -1, NFABRIC_ERR_POSTED, reg, "window "
                                  "reconfigured during a doorbell");
                return;
            }
            continue;
        }
        if (rc != NFABRIC_ERR_NONE) {
            nfabric_set_error(s, -1, (uint32_t)rc, reg, "doorbell refused: "
                              "another head kept the window's stripe past "
                              "the bound");
            return;
        }
        if (!post) {
            nfabric_staging_dirty(s, dpa, n);
        }
        nfabric_account_posted(s, path, post, off, n,
                               nfabric_posted_words(off, n));
        off += n;
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
