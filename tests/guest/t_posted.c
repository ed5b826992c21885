/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * (j) Posted windows (register version 1.7) against the trapped path they
 * shortcut, in a booted guest through the dax mapping.  Two windows of one
 * configuration side by side: window 0 trapped, window 1 posted.  Every
 * contribution goes into both: into window 0 as the mapping's stores, into
 * window 1 as stores into the staging then the POST doorbell (half of the
 * contributors through libnfabric's nfabric_mem_write, which rings it by
 * itself).  After each round the counter areas, CONTRIB_WRITES,
 * CONTRIB_BYTES, RESERVED_CODES and the read-outs (window 0: loads;
 * window 1: FETCH, then loads, or nfabric_mem_read) must be equal bit for
 * bit, and equal to ref.c.  Contributions are made one after the other:
 * the staging is this head's memory, shared by its processes (a round's
 * ranges of one head must not be stored by two processes at once).
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gt.h"

/* Device memory used here (DPA offsets from the region's start). */
#define PT_TRAPPED      (58ull << 20)
#define PT_POSTED       ((58ull << 20) + (64u << 10))
#define PT_CTRS_T       (59ull << 20)
#define PT_CTRS_P       (60ull << 20)
#define PT_SIZE         8192u

typedef struct pt_case {
    const char *label;
    unsigned path, width, tie;
    uint32_t threshold;
    bool aligned;       /* 8-byte aligned ranges: write counts equal too */
} pt_case;

static int pt_program(const pt_case *c, unsigned win, uint64_t base,
                      uint64_t ctrs, bool posted)
{
    nfabric_win_cfg cfg = {
        .base = nfabric_map_dpa(gt_dev) + base, .size = PT_SIZE,
        .counters = nfabric_map_dpa(gt_dev) + ctrs, .path = c->path,
        .width = c->width, .tie = c->tie, .threshold = c->threshold,
        .posted = posted,
    };

    nfabric_window_disable(gt_dev, win);
    return nfabric_window_set(gt_dev, win, &cfg);
}

static void pt_data(const pt_case *c, uint64_t *rng, uint8_t *buf, size_t len)
{
    for (size_t k = 0; k < len; k++) {
        uint64_t v = gt_rand(rng);

        if (c->path == NFABRIC_PATH_GTERNARY && v % 8) {
            /* Mostly valid codes; a few bytes keep reserved ones. */
            static const uint8_t codes[] = { 0, 1, 3 };

            buf[k] = (uint8_t)(codes[(v >> 8) % 3] | codes[(v >> 16) % 3] << 2 |
                               codes[(v >> 24) % 3] << 4 |
                               codes[(v >> 32) % 3] << 6);
        } else {
            buf[k] = (uint8_t)(v >> 40);
        }
    }
}

static bool pt_same_counters(const pt_case *c, const int32_t *want)
{
    uint64_t elems = PT_SIZE * ref_epb(c->path), bad = 0;
    uint64_t cb = nfabric_counter_bytes(c->path, c->width, PT_SIZE);
    uint8_t *t = malloc(cb), *p = malloc(cb);

    gt_read_bytes(t, gt_mem(nfabric_map_dpa(gt_dev) + PT_CTRS_T, cb), cb, 8);
    gt_read_bytes(p, gt_mem(nfabric_map_dpa(gt_dev) + PT_CTRS_P, cb), cb, 8);
    for (uint64_t e = 0; e < elems; e++) {
        int32_t v = c->width == 16 ?
                    (int16_t)(uint16_t)(p[2 * e] | p[2 * e + 1] << 8) :
                    (int8_t)p[e];

        bad += v != want[e];
    }
    bad += memcmp(t, p, cb) != 0;
    free(t);
    free(p);
    return bad == 0;
}

/* One round of n contributors; returns whether everything matched. */
static bool pt_round(const pt_case *c, unsigned n, uint64_t seed)
{
    uint64_t elems = PT_SIZE * ref_epb(c->path), rng = seed, reserved = 0;
    int32_t *want = calloc(elems, sizeof(*want));
    uint8_t *buf = malloc(PT_SIZE), *rt = malloc(PT_SIZE);
    uint8_t *rp = malloc(PT_SIZE), *ref = malloc(PT_SIZE);
    volatile uint8_t *mt = gt_mem(nfabric_map_dpa(gt_dev) + PT_TRAPPED, PT_SIZE);
    volatile uint8_t *mp = gt_mem(nfabric_map_dpa(gt_dev) + PT_POSTED, PT_SIZE);
    nfabric_win_state st, sp;
    bool ok = true;
    int rc = 0;

    for (unsigned j = 0; j < n && mt && mp; j++) {
        uint64_t off = gt_rand(&rng) % PT_SIZE, len;

        if (c->aligned) {
            off &= ~7ull;
        }
        len = 1 + gt_rand(&rng) % (PT_SIZE - off);
        if (c->aligned) {
            len = ((len + 7) & ~7ull) > PT_SIZE - off ? PT_SIZE - off :
                  (len + 7) & ~7ull;
        }
        pt_data(c, &rng, buf, len);
        reserved += ref_apply(c->path, c->width, want, off, buf, len);
        /* Trapped: the mapping's stores, as libnfabric's copy makes them. */
        rc |= nfabric_mem_write(gt_dev, nfabric_map_dpa(gt_dev) + PT_TRAPPED + off,
                                buf, len);
        if (j % 2) {
            rc |= nfabric_mem_write(gt_dev, nfabric_map_dpa(gt_dev) + PT_POSTED + off,
                                    buf, len);
        } else {
            memcpy((uint8_t *)mp + off, buf, len);
            rc |= nfabric_window_post(gt_dev, 1, off, len);
        }
    }
    ok &= CHECK(mt && mp && rc == 0, "%s: %u contributions into both windows "
                "(%s)", c->label, n, rc ? nfabric_errmsg(gt_dev) : "accepted");
    ok &= CHECK(pt_same_counters(c, want), "%s: the posted window's counters "
                "equal the trapped window's and the reference, bit for bit",
                c->label);
    nfabric_window_get(gt_dev, 0, &st);
    nfabric_window_get(gt_dev, 1, &sp);
    ok &= CHECK(st.contrib_bytes == sp.contrib_bytes &&
                st.reserved_codes == sp.reserved_codes &&
                sp.reserved_codes == reserved &&
                (!c->aligned || st.contrib_writes == sp.contrib_writes),
                "%s: CONTRIB_BYTES %" PRIu64 "/%" PRIu64 ", RESERVED_CODES %u/%u"
                "%s equal", c->label, st.contrib_bytes, sp.contrib_bytes,
                st.reserved_codes, sp.reserved_codes,
                c->aligned ? ", CONTRIB_WRITES" : "");
    if (mt && mp) {
        gt_read_bytes(rt, mt, PT_SIZE, 8);
        rc = nfabric_window_fetch(gt_dev, 1, 0, PT_SIZE);
        gt_read_bytes(rp, mp, PT_SIZE, 8);
        ref_readout(c->path, c->tie, c->threshold, want, 0, ref, PT_SIZE);
        ok &= CHECK(rc == 0 && !memcmp(rt, rp, PT_SIZE) &&
                    !memcmp(rp, ref, PT_SIZE), "%s: read-out after FETCH "
                    "equals the trapped read-out and the reference", c->label);
        memset(rp, 0, PT_SIZE);
        rc = nfabric_mem_read(gt_dev, nfabric_map_dpa(gt_dev) + PT_POSTED + 100,
                              rp, PT_SIZE - 200);
        ok &= CHECK(rc == 0 && !memcmp(rp, ref + 100, PT_SIZE - 200),
                    "%s: nfabric_mem_read of a part of the posted window: the "
                    "read-out", c->label);
    }
    free(want);
    free(buf);
    free(rt);
    free(rp);
    free(ref);
    return ok;
}

void gt_group_posted(void)
{
    static const pt_case cases[] = {
        { "posted gbinary w8 tie-neg", NFABRIC_PATH_GBINARY, 8, NFABRIC_TIE_NEGATIVE, 0, true },
        { "posted gbinary w16 tie-pos", NFABRIC_PATH_GBINARY, 16, NFABRIC_TIE_POSITIVE, 0, true },
        { "posted gbinary w8 unaligned", NFABRIC_PATH_GBINARY, 8, NFABRIC_TIE_POSITIVE, 0, false },
        { "posted gternary w8 T=1", NFABRIC_PATH_GTERNARY, 8, 0, 1, true },
        { "posted gternary w16 T=2 unaligned", NFABRIC_PATH_GTERNARY, 16, 0, 2, false },
    };
    unsigned passed = 0, n = sizeof(cases) / sizeof(cases[0]);
    double t0 = gt_now();
    nfabric_heads h;

    if (!gt_need_regs("posted")) {
        return;
    }
    if (!CHECK(nfabric_heads_read(gt_dev, &h) == 0 && h.staging,
               "posted: this head has staging memory (HEAD_INFO.STAGING)")) {
        return;
    }
    for (unsigned i = 0; i < n; i++) {
        const pt_case *c = &cases[i];
        bool ok = CHECK(pt_program(c, 0, PT_TRAPPED, PT_CTRS_T, false) == 0 &&
                        pt_program(c, 1, PT_POSTED, PT_CTRS_P, true) == 0,
                        "%s: a trapped and a posted window enabled", c->label);

        for (unsigned r = 0; ok && r < 3; r++) {
            ok &= pt_round(c, 6 + r, gt_seed + 700 + 10 * i + r);
            ok &= CHECK(nfabric_window_clear(gt_dev, 0) == 0 &&
                        nfabric_window_clear(gt_dev, 1) == 0,
                        "%s: round %u cleared", c->label, r);
        }
        passed += ok;
    }
    /* Stores without a POST contribute nothing. */
    {
        const pt_case *c = &cases[0];
        volatile uint8_t *mp = gt_mem(nfabric_map_dpa(gt_dev) + PT_POSTED, PT_SIZE);
        nfabric_win_state s;

        if (mp) {
            for (unsigned k = 0; k < 64; k++) {
                mp[k] = 0xff;
            }
        }
        nfabric_window_get(gt_dev, 1, &s);
        CHECK(mp && s.contrib_bytes == 0 && s.contrib_writes == 0,
              "%s: stores without POST: nothing counted", c->label);
        CHECK(nfabric_window_post(gt_dev, 0, 0, 64) == NFABRIC_ERR_POSTED,
              "POST on the trapped window: refused with POSTED");
        CHECK(nfabric_window_post(gt_dev, 1, PT_SIZE - 8, 16) ==
              NFABRIC_ERR_RANGE, "POST past the window: refused with RANGE");
    }
    nfabric_window_disable(gt_dev, 0);
    nfabric_window_disable(gt_dev, 1);
    gt_summary("posted: %u of %u configurations equal the trapped path bit for "
               "bit (3 rounds each: counters, counts, read-outs) (%.1f s)",
               passed, n, gt_now() - t0);
}
