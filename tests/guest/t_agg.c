/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * (b) G-Binary, (c) G-Ternary and (d) mixed windows.  K = GT_WORKERS forked
 * processes write their contributions into the same window through the dax
 * mapping; the parent recomputes every contribution and compares the
 * device's counters (plain device memory) and read-out with ref.c.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gt.h"

/* Device memory used here (DPA offsets from the region's start). */
#define GB_BASE     (1ull << 20)
#define GB_COUNTERS (8ull << 20)
#define GT_BASE     (2ull << 20)
#define GT_COUNTERS (9ull << 20)
#define MX_HEAD     (16ull << 20)
#define MX_BACKBONE (17ull << 20)
#define MX_COUNTERS (32ull << 20)
#define MX_HEAD_SLOT 24576u         /* 6 x 1024 FP32 classifier-head gradient */
#define MX_BACKBONE_BYTES 131072u   /* 1 Mi elements, packed signs */

enum {
    MODE_FULL8,         /* whole window, 8-byte stores */
    MODE_SIZES,         /* whole window, contributor j stores 1 << (j % 4) bytes */
    MODE_PARTIAL,       /* a random byte range per contributor, 1- or 2-byte stores */
    MODE_SAME,          /* every contributor writes the same data (saturation) */
};

typedef struct agg_run {
    const char *label;
    unsigned path, width, tie;
    uint32_t threshold;
    uint64_t base, size, counters;  /* DPA, relative to the region */
    unsigned n, mode;
    uint64_t seed;
} agg_run;

static uint64_t contrib_rng(const agg_run *r, unsigned j)
{
    return r->seed ^ ((uint64_t)(r->mode == MODE_SAME ? 0 : j + 1) * 0x9e3779b97f4a7c15ull);
}

/* The window bytes contributor j writes, and with which access size. */
static void contrib_range(const agg_run *r, unsigned j, uint64_t *off,
                          uint64_t *len, unsigned *acc)
{
    uint64_t rng = contrib_rng(r, j) ^ 0x5bd1e995u;

    *off = 0;
    *len = r->size;
    *acc = 8;
    if (r->mode == MODE_SIZES) {
        *acc = 1u << (j % 4);
    } else if (r->mode == MODE_PARTIAL) {
        *acc = 1u << (j % 2);
        *off = gt_rand(&rng) % r->size;
        *len = 1 + gt_rand(&rng) % (r->size - *off);
        if (*acc == 2) {
            *off &= ~1ull;
            *len = (*len + 1) & ~1ull;
            if (*off + *len > r->size) {
                *len = r->size - *off;
            }
        }
    }
}

/* Contributor j's packed gradient over the whole window. */
static void contrib_data(const agg_run *r, unsigned j, uint8_t *buf)
{
    uint64_t rng = contrib_rng(r, j);
    unsigned epb = ref_epb(r->path);

    memset(buf, 0, r->size);
    for (uint64_t e = 0; e < r->size * epb; e++) {
        double g = gt_uniform(&rng);

        if (r->path == NFABRIC_PATH_GBINARY) {
            buf[e / 8] |= (uint8_t)((g >= 0) << (e % 8));
        } else {
            unsigned code = g > 1.0 / 3 ? NFABRIC_TERN_PLUS :
                            g < -1.0 / 3 ? NFABRIC_TERN_MINUS : NFABRIC_TERN_ZERO;

            buf[e / 4] |= (uint8_t)(code << (2 * (e % 4)));
        }
    }
}

static int agg_worker(unsigned j, void *arg)
{
    const agg_run *r = arg;
    uint8_t *buf = malloc(r->size);
    volatile uint8_t *m = gt_mem(nfabric_map_dpa(gt_dev) + r->base, r->size);
    uint64_t off, len;
    unsigned acc;

    if (!buf || !m) {
        free(buf);
        return 1;
    }
    contrib_data(r, j, buf);
    contrib_range(r, j, &off, &len, &acc);
    gt_write_bytes(m + off, buf + off, len, acc);
    free(buf);
    return 0;
}

static int program(const agg_run *r, unsigned win)
{
    nfabric_win_cfg c = {
        .base = nfabric_map_dpa(gt_dev) + r->base, .size = r->size,
        .counters = nfabric_map_dpa(gt_dev) + r->counters, .path = r->path,
        .width = r->width, .tie = r->tie, .threshold = r->threshold,
    };

    nfabric_window_disable(gt_dev, win);
    return nfabric_window_set(gt_dev, win, &c);
}

/* Read a window's counters (plain memory, 8-byte reads) into sums. */
static void read_counters(const agg_run *r, int32_t *sums)
{
    uint64_t elems = r->size * ref_epb(r->path);
    uint64_t cbytes = nfabric_counter_bytes(r->path, r->width, r->size);
    uint8_t *raw = malloc(cbytes);
    volatile uint8_t *m = gt_mem(nfabric_map_dpa(gt_dev) + r->counters, cbytes);

    gt_read_bytes(raw, m, cbytes, 8);
    for (uint64_t e = 0; e < elems; e++) {
        sums[e] = r->width == 16 ? (int16_t)(uint16_t)(raw[2 * e] | raw[2 * e + 1] << 8)
                                 : (int8_t)raw[e];
    }
    free(raw);
}

/* Compare counters, read-out and contribution counts with the reference. */
static bool verify(const agg_run *r, unsigned win, const int32_t *want,
                   uint64_t writes, uint64_t bytes, uint64_t reserved)
{
    uint64_t elems = r->size * ref_epb(r->path), bad = 0, first = 0;
    int32_t *got = malloc(elems * sizeof(*got));
    uint8_t *out = malloc(r->size), *ref = malloc(r->size);
    nfabric_win_state s;
    int32_t lo = INT32_MAX, hi = INT32_MIN;
    bool ok = true;

    read_counters(r, got);
    for (uint64_t e = 0; e < elems; e++) {
        if (got[e] != want[e] && !bad++) {
            first = e;
        }
        lo = want[e] < lo ? want[e] : lo;
        hi = want[e] > hi ? want[e] : hi;
    }
    ok &= CHECK(bad == 0, "%s: %" PRIu64 " counters equal the reference (range %d..%d; "
                "%" PRIu64 " differ, first e=%" PRIu64 ": %d, want %d)", r->label, elems,
                lo, hi, bad, first, bad ? got[first] : 0, bad ? want[first] : 0);
    gt_read_bytes(out, gt_mem(nfabric_map_dpa(gt_dev) + r->base, r->size), r->size, 8);
    ref_readout(r->path, r->tie, r->threshold, want, 0, ref, r->size);
    bad = 0;
    for (uint64_t b = 0; b < r->size; b++) {
        if (out[b] != ref[b] && !bad++) {
            first = b;
        }
    }
    ok &= CHECK(bad == 0, "%s: %s read-out equals the reference (%" PRIu64
                " bytes differ, first at %" PRIu64 ")", r->label,
                r->path == NFABRIC_PATH_GBINARY ? "majority" : "gated", bad, first);
    nfabric_window_get(gt_dev, win, &s);
    ok &= CHECK(s.contrib_writes == writes && s.contrib_bytes == bytes,
                "%s: contributions %" PRIu64 " writes / %" PRIu64 " bytes (want %"
                PRIu64 " / %" PRIu64 ")", r->label, s.contrib_writes,
                s.contrib_bytes, writes, bytes);
    if (r->path == NFABRIC_PATH_GTERNARY) {
        ok &= CHECK(s.reserved_codes == reserved, "%s: reserved codes %u (want %" PRIu64 ")",
                    r->label, s.reserved_codes, reserved);
    }
    free(got);
    free(out);
    free(ref);
    return ok;
}

/* One round: program, N contributors in K workers, verify. */
static bool agg_round(const agg_run *r, unsigned win)
{
    uint64_t elems = r->size * ref_epb(r->path), writes = 0, bytes = 0, reserved = 0;
    int32_t *want = calloc(elems, sizeof(*want));
    uint8_t *buf = malloc(r->size);
    bool ok;
    int rc = program(r, win);

    if (!CHECK(rc == 0, "%s: window %u programmed: %s", r->label, win,
               rc ? nfabric_errmsg(gt_dev) : "enabled")) {
        free(want);
        free(buf);
        return false;
    }
    ok = CHECK(gt_fork_workers(r->n, agg_worker, (void *)r),
               "%s: %u contributors written by %u worker processes", r->label,
               r->n, GT_WORKERS);
    for (unsigned j = 0; j < r->n; j++) {
        uint64_t off, len;
        unsigned acc;

        contrib_data(r, j, buf);
        contrib_range(r, j, &off, &len, &acc);
        reserved += ref_apply(r->path, r->width, want, off, buf + off, len);
        writes += len / acc;
        bytes += len;
    }
    ok &= verify(r, win, want, writes, bytes, reserved);
    free(want);
    free(buf);
    return ok;
}

/* After a round: WIN_CMD CLEAR zeroes counters and contributions. */
static void clear_round(const agg_run *r, unsigned win)
{
    uint64_t elems = r->size * ref_epb(r->path);
    int32_t *zero = calloc(elems, sizeof(*zero));
    int rc = nfabric_window_clear(gt_dev, win);
    agg_run c = *r;
    char label[96];

    snprintf(label, sizeof(label), "%s after CLEAR", r->label);
    c.label = label;
    if (CHECK(rc == 0, "%s: WIN_CMD CLEAR accepted", label)) {
        verify(&c, win, zero, 0, 0, 0);
    }
    free(zero);
}

void gt_group_gbinary(void)
{
    agg_run runs[] = {
        { "gbinary N=1 w8", NFABRIC_PATH_GBINARY, 8, NFABRIC_TIE_NEGATIVE, 0,
          GB_BASE, 4096, GB_COUNTERS, 1, MODE_FULL8, 0 },
        { "gbinary N=4 w8 tie-neg", NFABRIC_PATH_GBINARY, 8, NFABRIC_TIE_NEGATIVE, 0,
          GB_BASE, 4096, GB_COUNTERS, 4, MODE_FULL8, 0 },
        { "gbinary N=4 w16 tie-pos", NFABRIC_PATH_GBINARY, 16, NFABRIC_TIE_POSITIVE, 0,
          GB_BASE, 4096, GB_COUNTERS, 4, MODE_FULL8, 0 },
        { "gbinary N=7 w8 1/2/4/8-byte stores", NFABRIC_PATH_GBINARY, 8, NFABRIC_TIE_POSITIVE, 0,
          GB_BASE, 4096, GB_COUNTERS, 7, MODE_SIZES, 0 },
        { "gbinary N=16 w16", NFABRIC_PATH_GBINARY, 16, NFABRIC_TIE_NEGATIVE, 0,
          GB_BASE, 4096, GB_COUNTERS, 16, MODE_FULL8, 0 },
        { "gbinary N=6 w8 partial ranges", NFABRIC_PATH_GBINARY, 8, NFABRIC_TIE_NEGATIVE, 0,
          GB_BASE, 4096, GB_COUNTERS, 6, MODE_PARTIAL, 0 },
        { "gbinary N=200 w8 saturation", NFABRIC_PATH_GBINARY, 8, NFABRIC_TIE_POSITIVE, 0,
          GB_BASE, 64, GB_COUNTERS, 200, MODE_SAME, 0 },
        { "gbinary N=200 w16", NFABRIC_PATH_GBINARY, 16, NFABRIC_TIE_NEGATIVE, 0,
          GB_BASE, 64, GB_COUNTERS, 200, MODE_SAME, 0 },
    };
    unsigned passed = 0, n = sizeof(runs) / sizeof(runs[0]);
    double t0 = gt_now();

    if (!gt_need_regs("gbinary")) {
        return;
    }
    for (unsigned i = 0; i < n; i++) {
        runs[i].seed = gt_seed + 100 + i;
        passed += agg_round(&runs[i], 0);
        if (i == 1) {
            clear_round(&runs[i], 0);
        }
    }
    nfabric_window_disable(gt_dev, 0);
    gt_summary("gbinary: %u of %u rounds match the reference (N = 1..200 contributors "
               "from %u processes, widths 8/16, both tie rules, sub-word and partial "
               "writes, saturation) (%.1f s)", passed, n, GT_WORKERS, gt_now() - t0);
}

void gt_group_gternary(void)
{
    agg_run runs[] = {
        { "gternary N=6 w8 T=1", NFABRIC_PATH_GTERNARY, 8, 0, 1,
          GT_BASE, 2048, GT_COUNTERS, 6, MODE_FULL8, 0 },
        { "gternary N=6 w8 T=2", NFABRIC_PATH_GTERNARY, 8, 0, 2,
          GT_BASE, 2048, GT_COUNTERS, 6, MODE_FULL8, 0 },
        { "gternary N=6 w8 T=3", NFABRIC_PATH_GTERNARY, 8, 0, 3,
          GT_BASE, 2048, GT_COUNTERS, 6, MODE_FULL8, 0 },
        { "gternary N=6 w8 T=5", NFABRIC_PATH_GTERNARY, 8, 0, 5,
          GT_BASE, 2048, GT_COUNTERS, 6, MODE_FULL8, 0 },
        { "gternary N=5 w8 T=2 1/2/4/8-byte stores", NFABRIC_PATH_GTERNARY, 8, 0, 2,
          GT_BASE, 2048, GT_COUNTERS, 5, MODE_SIZES, 0 },
        { "gternary N=6 w16 T=300", NFABRIC_PATH_GTERNARY, 16, 0, 300,
          GT_BASE, 2048, GT_COUNTERS, 6, MODE_FULL8, 0 },
        { "gternary N=150 w8 T=127 saturation", NFABRIC_PATH_GTERNARY, 8, 0, 127,
          GT_BASE, 64, GT_COUNTERS, 150, MODE_SAME, 0 },
    };
    unsigned passed = 0, n = sizeof(runs) / sizeof(runs[0]);
    double t0 = gt_now();

    if (!gt_need_regs("gternary")) {
        return;
    }
    for (unsigned i = 0; i < n; i++) {
        runs[i].seed = gt_seed + 200 + i;
        passed += agg_round(&runs[i], 1);
    }

    /* Reserved codes add nothing and are counted. */
    {
        agg_run r = runs[1];
        uint64_t elems = r.size * 4;
        int32_t *want = calloc(elems, sizeof(*want));
        volatile uint8_t *m = gt_mem(nfabric_map_dpa(gt_dev) + r.base, r.size);
        uint8_t word[8];
        uint64_t reserved;

        r.label = "gternary reserved codes";
        if (CHECK(program(&r, 1) == 0, "%s: window programmed", r.label)) {
            /* Word 0: all 32 codes reserved; word 1: codes 0,1,2,3 repeated. */
            gt_st(m, 8, 0xaaaaaaaaaaaaaaaaull);
            gt_st(m + 8, 8, 0xe4e4e4e4e4e4e4e4ull);
            memset(word, 0xaa, 8);
            reserved = ref_apply(r.path, r.width, want, 0, word, 8);
            memset(word, 0xe4, 8);
            reserved += ref_apply(r.path, r.width, want, 8, word, 8);
            verify(&r, 1, want, 2, 16, reserved);
        }
        free(want);
    }
    clear_round(&runs[0], 1);
    nfabric_window_disable(gt_dev, 1);
    gt_summary("gternary: %u of %u rounds match the reference (thresholds 1, 2, 3, 5, "
               "127, 300; widths 8/16; reserved codes counted) (%.1f s)", passed, n,
               gt_now() - t0);
}

/* ---- (d) classifier head on FP32, backbone on G-Binary ----------------- */

static float head_value(unsigned j, unsigned k)
{
    uint64_t s = gt_seed ^ (0xc1a55ull + j * 0x10001ull + k * 0x9e3779b97f4a7c15ull);

    return (float)gt_uniform(&s) * 0.01f;
}

static int mixed_worker(unsigned j, void *arg)
{
    const agg_run *bb = arg;
    volatile uint8_t *head = gt_mem(nfabric_map_dpa(gt_dev) + MX_HEAD + (uint64_t)j * MX_HEAD_SLOT,
                                    MX_HEAD_SLOT);
    uint8_t tmp[MX_HEAD_SLOT];

    if (!head) {
        return 1;
    }
    for (unsigned k = 0; k < MX_HEAD_SLOT / 4; k++) {
        float f = head_value(j, k);

        memcpy(tmp + 4 * k, &f, 4);
    }
    gt_write_bytes(head, tmp, MX_HEAD_SLOT, 8);
    return agg_worker(j, (void *)bb);
}

void gt_group_mixed(void)
{
    agg_run bb = { "mixed backbone gbinary", NFABRIC_PATH_GBINARY, 8, NFABRIC_TIE_NEGATIVE, 0,
                   MX_BACKBONE, MX_BACKBONE_BYTES, MX_COUNTERS, GT_WORKERS, MODE_FULL8,
                   gt_seed + 300 };
    nfabric_win_cfg head = {
        .base = nfabric_map_dpa(gt_dev) + MX_HEAD, .size = (uint64_t)GT_WORKERS * MX_HEAD_SLOT,
        .path = NFABRIC_PATH_FP32, .width = 8,
    };
    uint64_t elems = (uint64_t)MX_BACKBONE_BYTES * 8, bad = 0;
    int32_t *want = calloc(elems, sizeof(*want));
    uint8_t *buf = malloc(MX_BACKBONE_BYTES);
    nfabric_path_stats st[NFABRIC_NUM_PATHS];
    double t0 = gt_now(), ratio;
    uint64_t fp32_bytes, low_bytes, full;
    int rc;

    if (!gt_need_regs("mixed")) {
        goto out;
    }
    rc = nfabric_window_set(gt_dev, 0, &head);
    CHECK(rc == 0, "mixed: window 0 = FP32 classifier head, %u x %u bytes: %s",
          GT_WORKERS, MX_HEAD_SLOT, rc ? nfabric_errmsg(gt_dev) : "enabled");
    rc = program(&bb, 1);
    CHECK(rc == 0, "mixed: window 1 = G-Binary backbone, %" PRIu64 " elements: %s",
          elems, rc ? nfabric_errmsg(gt_dev) : "enabled");
    nfabric_ctrl(gt_dev, NFABRIC_CTRL_CLEAR_STATS);
    CHECK(gt_fork_workers(GT_WORKERS, mixed_worker, &bb),
          "mixed: %u workers wrote head (FP32) and backbone (signs)", GT_WORKERS);

    /* Traffic, before the verification reads add to the statistics. */
    nfabric_stats(gt_dev, st);
    fp32_bytes = st[NFABRIC_PATH_FP32].write_bytes;
    low_bytes = st[NFABRIC_PATH_GBINARY].write_bytes;
    CHECK(fp32_bytes == (uint64_t)GT_WORKERS * MX_HEAD_SLOT &&
          low_bytes == (uint64_t)GT_WORKERS * MX_BACKBONE_BYTES,
          "mixed: statistics: FP32 %" PRIu64 " and G-Binary %" PRIu64 " bytes written "
          "(want %u and %u)", fp32_bytes, low_bytes, GT_WORKERS * MX_HEAD_SLOT,
          GT_WORKERS * MX_BACKBONE_BYTES);
    full = (uint64_t)GT_WORKERS * (MX_HEAD_SLOT + elems * 4);
    ratio = (double)(fp32_bytes + low_bytes) / (double)full;

    for (unsigned j = 0; j < GT_WORKERS; j++) {
        volatile uint8_t *h = gt_mem(nfabric_map_dpa(gt_dev) + MX_HEAD + (uint64_t)j * MX_HEAD_SLOT,
                                     MX_HEAD_SLOT);
        uint8_t got[MX_HEAD_SLOT];

        gt_read_bytes(got, h, MX_HEAD_SLOT, 8);
        for (unsigned k = 0; k < MX_HEAD_SLOT / 4; k++) {
            float f = head_value(j, k);

            bad += memcmp(got + 4 * k, &f, 4) != 0;
        }
        contrib_data(&bb, j, buf);
        ref_apply(bb.path, bb.width, want, 0, buf, bb.size);
    }
    CHECK(bad == 0, "mixed: FP32 head gradients of all workers read back exactly "
          "(%" PRIu64 " of %u floats differ)", bad, GT_WORKERS * MX_HEAD_SLOT / 4);
    verify(&bb, 1, want, (uint64_t)GT_WORKERS * MX_BACKBONE_BYTES / 8,
           (uint64_t)GT_WORKERS * MX_BACKBONE_BYTES, 0);
    gt_summary("mixed: FP32 head %u B + G-Binary backbone %" PRIu64 " elements per worker, "
               "%u workers: %.2f %% of FP32 gradient traffic (%" PRIu64 " of %" PRIu64
               " bytes) (%.1f s)", MX_HEAD_SLOT, elems, GT_WORKERS, 100 * ratio,
               fp32_bytes + low_bytes, full, gt_now() - t0);
    nfabric_window_disable(gt_dev, 0);
    nfabric_window_disable(gt_dev, 1);
out:
    free(want);
    free(buf);
}
