/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * (e) Bad configurations are refused with the documented error codes and
 * change nothing; (f) the statistics registers equal the accesses the test
 * made, and the timing registers follow the documented model.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gt.h"

#define CF_BASE     (40ull << 20)   /* window 0 (enabled G-Binary) data */
#define CF_COUNTERS (41ull << 20)   /* its counters (32 KiB) */
#define CF_FREE     (42ull << 20)   /* free space for the refused windows */
#define CF_FREE2    (44ull << 20)

/* Everything a refused configuration must leave as it was. */
typedef struct snapshot {
    uint32_t enabled_mask;
    nfabric_win_state win[NFABRIC_NUM_WINDOWS];
    uint64_t counters_sum;
} snapshot;

static void snap(snapshot *s)
{
    volatile uint8_t *c = gt_mem(nfabric_map_dpa(gt_dev) + CF_COUNTERS, 32768);

    memset(s, 0, sizeof(*s));
    s->enabled_mask = nfabric_rd32(gt_dev, NFABRIC_REG_ENABLED_MASK);
    for (unsigned i = 0; i < nfabric_num_windows(gt_dev); i++) {
        nfabric_window_get(gt_dev, i, &s->win[i]);
    }
    for (unsigned i = 0; i < 32768; i += 8) {
        uint64_t v = gt_ld(c + i, 8);

        s->counters_sum = s->counters_sum * 31 + v;
    }
}

/* Is b equal to a, except for window `except` (the one being refused)? */
static bool same(const snapshot *a, const snapshot *b, int except)
{
    if (a->enabled_mask != b->enabled_mask || a->counters_sum != b->counters_sum) {
        return false;
    }
    for (unsigned i = 0; i < nfabric_num_windows(gt_dev); i++) {
        if ((int)i != except &&
            memcmp(&a->win[i], &b->win[i], sizeof(a->win[i])) != 0) {
            return false;
        }
    }
    return true;
}

typedef struct bad_case {
    const char *what;
    nfabric_win_cfg c;
    unsigned want;
} bad_case;

/* Try c on window 1 (disabled) while window 0 is enabled. */
static void try_enable(const bad_case *bc)
{
    snapshot before, after;
    uint32_t cnt0, cnt1, last;
    unsigned predicted = nfabric_window_check(gt_dev, 1, &bc->c);
    nfabric_win_state w1;
    int rc;

    nfabric_window_disable(gt_dev, 1);
    snap(&before);
    cnt0 = nfabric_rd32(gt_dev, NFABRIC_REG_ERROR_COUNT);
    rc = nfabric_window_set(gt_dev, 1, &bc->c);
    cnt1 = nfabric_rd32(gt_dev, NFABRIC_REG_ERROR_COUNT);
    last = nfabric_rd32(gt_dev, NFABRIC_REG_LAST_ERROR);
    snap(&after);
    nfabric_window_get(gt_dev, 1, &w1);
    CHECK(rc == (int)bc->want && w1.error == bc->want && last == bc->want &&
          cnt1 == cnt0 + 1 && !w1.enabled && same(&before, &after, 1) &&
          predicted == bc->want,
          "config: %s -> %s (%u): returned %d, WIN_ERROR %u, LAST_ERROR %u, "
          "ERROR_COUNT +%u, window %s, others %s, library predicts %u",
          bc->what, nfabric_strerror((int)bc->want), bc->want, rc, w1.error, last,
          cnt1 - cnt0, w1.enabled ? "ENABLED" : "disabled",
          same(&before, &after, 1) ? "unchanged" : "CHANGED", predicted);
}

/* A raw 32-bit register write that must be refused with code want. */
static void try_write(const char *what, uint32_t off, uint32_t val, unsigned want,
                      int win)
{
    snapshot before, after;
    uint32_t cnt0 = nfabric_rd32(gt_dev, NFABRIC_REG_ERROR_COUNT), cnt1, last, werr = want;

    snap(&before);
    nfabric_wr32(gt_dev, off, val);
    cnt1 = nfabric_rd32(gt_dev, NFABRIC_REG_ERROR_COUNT);
    last = nfabric_rd32(gt_dev, NFABRIC_REG_LAST_ERROR);
    if (win >= 0) {
        werr = nfabric_rd32(gt_dev, NFABRIC_REG_WIN(win, NFABRIC_WIN_ERROR));
    }
    snap(&after);
    /* Only the window's error register may change. */
    if (win >= 0) {
        after.win[win].error = before.win[win].error;
    }
    char werr_txt[32] = "";

    if (win >= 0) {
        snprintf(werr_txt, sizeof(werr_txt), ", WIN_ERROR %u", werr);
    }
    CHECK(last == want && werr == want && cnt1 == cnt0 + 1 && same(&before, &after, -1),
          "config: %s -> %s (%u): LAST_ERROR %u%s, ERROR_COUNT +%u, state %s",
          what, nfabric_strerror((int)want), want, last, werr_txt, cnt1 - cnt0,
          same(&before, &after, -1) ? "unchanged" : "CHANGED");
}

void gt_group_config(void)
{
    uint64_t B = nfabric_map_dpa(gt_dev), msize;
    nfabric_win_cfg w0 = {
        .base = B + CF_BASE, .size = 4096, .counters = B + CF_COUNTERS,
        .path = NFABRIC_PATH_GBINARY, .width = 8, .tie = NFABRIC_TIE_NEGATIVE,
    };
    volatile uint8_t *d0;
    unsigned ok_before;
    int rc;

    if (!gt_need_regs("config")) {
        return;
    }
    msize = nfabric_mem_size(gt_dev);
    nfabric_ctrl(gt_dev, NFABRIC_CTRL_CLEAR_ERROR);
    rc = nfabric_window_set(gt_dev, 0, &w0);
    if (!CHECK(rc == 0, "config: window 0 G-Binary at 0x%" PRIx64 " enabled: %s",
               w0.base, rc ? nfabric_errmsg(gt_dev) : "ok")) {
        return;
    }
    /* Some state in window 0, so that "unchanged" means something. */
    d0 = gt_mem(w0.base, w0.size);
    for (unsigned i = 0; i < 64; i += 8) {
        gt_st(d0 + i, 8, 0x0123456789abcdefull * (i + 1));
    }

#define GB(b, s, c) { .base = (b), .size = (s), .counters = (c), \
                      .path = NFABRIC_PATH_GBINARY, .width = 8 }
    const bad_case cases[] = {
        { "data overlaps window 0's data", GB(B + CF_BASE + 2048, 4096, B + CF_FREE2),
          NFABRIC_ERR_OVERLAP },
        { "data overlaps window 0's counters", GB(B + CF_COUNTERS + 1024, 4096, B + CF_FREE2),
          NFABRIC_ERR_OVERLAP },
        { "counters overlap window 0's data", GB(B + CF_FREE, 4096, B + CF_BASE),
          NFABRIC_ERR_OVERLAP },
        { "counters overlap window 0's counters", GB(B + CF_FREE, 4096, B + CF_COUNTERS + 64),
          NFABRIC_ERR_OVERLAP },
        { "own counters overlap own data", GB(B + CF_FREE, 4096, B + CF_FREE + 1024),
          NFABRIC_ERR_OVERLAP },
        { "FP32 window over window 0", { .base = B + CF_BASE - 4096, .size = 8192,
          .path = NFABRIC_PATH_FP32 }, NFABRIC_ERR_OVERLAP },
        { "size 0", GB(B + CF_FREE, 0, B + CF_FREE2), NFABRIC_ERR_RANGE },
        { "data past the end of device memory", GB(msize - 1024, 4096, B + CF_FREE2),
          NFABRIC_ERR_RANGE },
        { "data starts at the end of device memory", GB(msize, 64, B + CF_FREE2),
          NFABRIC_ERR_RANGE },
        { "base + size wraps", GB(UINT64_MAX - 63, 128, B + CF_FREE2), NFABRIC_ERR_RANGE },
        { "counters past the end", GB(B + CF_FREE, 4096, msize - 4096), NFABRIC_ERR_RANGE },
        { "base not 64-byte aligned", GB(B + CF_FREE + 32, 4096, B + CF_FREE2),
          NFABRIC_ERR_ALIGN },
        { "size not a multiple of 64", GB(B + CF_FREE, 100, B + CF_FREE2), NFABRIC_ERR_ALIGN },
        { "counters not 64-byte aligned", GB(B + CF_FREE, 4096, B + CF_FREE2 + 8),
          NFABRIC_ERR_ALIGN },
        { "path 3", { .base = B + CF_FREE, .size = 4096, .counters = B + CF_FREE2,
          .path = 3, .width = 8 }, NFABRIC_ERR_PATH },
        { "path 15", { .base = B + CF_FREE, .size = 4096, .counters = B + CF_FREE2,
          .path = 15, .width = 8 }, NFABRIC_ERR_PATH },
        { "width 12", { .base = B + CF_FREE, .size = 4096, .counters = B + CF_FREE2,
          .path = NFABRIC_PATH_GBINARY, .width = 12 }, NFABRIC_ERR_WIDTH },
        { "width 32", { .base = B + CF_FREE, .size = 4096, .counters = B + CF_FREE2,
          .path = NFABRIC_PATH_GTERNARY, .width = 32, .threshold = 1 }, NFABRIC_ERR_WIDTH },
        { "width 0", { .base = B + CF_FREE, .size = 4096, .counters = B + CF_FREE2,
          .path = NFABRIC_PATH_GBINARY, .width = 0 }, NFABRIC_ERR_WIDTH },
        { "tie rule 2", { .base = B + CF_FREE, .size = 4096, .counters = B + CF_FREE2,
          .path = NFABRIC_PATH_GBINARY, .width = 8, .tie = 2 }, NFABRIC_ERR_TIE },
        { "G-Ternary threshold 0", { .base = B + CF_FREE, .size = 4096,
          .counters = B + CF_FREE2, .path = NFABRIC_PATH_GTERNARY, .width = 8,
          .threshold = 0 }, NFABRIC_ERR_THRESHOLD },
        { "G-Ternary threshold 128 at width 8", { .base = B + CF_FREE, .size = 4096,
          .counters = B + CF_FREE2, .path = NFABRIC_PATH_GTERNARY, .width = 8,
          .threshold = 128 }, NFABRIC_ERR_THRESHOLD },
        { "G-Ternary threshold 32768 at width 16", { .base = B + CF_FREE, .size = 4096,
          .counters = B + CF_FREE2, .path = NFABRIC_PATH_GTERNARY, .width = 16,
          .threshold = 32768 }, NFABRIC_ERR_THRESHOLD },
    };
#undef GB
    for (unsigned i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        try_enable(&cases[i]);
    }

    /* Configuration while enabled: window 0. */
    try_write("DPA_BASE of enabled window 0", NFABRIC_REG_WIN(0, NFABRIC_WIN_DPA_BASE),
              (uint32_t)(B + CF_FREE), NFABRIC_ERR_BUSY, 0);
    try_write("DPA_SIZE of enabled window 0", NFABRIC_REG_WIN(0, NFABRIC_WIN_DPA_SIZE),
              8192, NFABRIC_ERR_BUSY, 0);
    try_write("COUNTERS of enabled window 0", NFABRIC_REG_WIN(0, NFABRIC_WIN_COUNTERS),
              (uint32_t)(B + CF_FREE2), NFABRIC_ERR_BUSY, 0);
    try_write("THRESHOLD of enabled window 0", NFABRIC_REG_WIN(0, NFABRIC_WIN_THRESHOLD),
              3, NFABRIC_ERR_BUSY, 0);
    try_write("WIN_CTRL path change of enabled window 0",
              NFABRIC_REG_WIN(0, NFABRIC_WIN_CTRL),
              NFABRIC_WCTRL(NFABRIC_PATH_GTERNARY, 8, 0) | NFABRIC_WCTRL_ENABLE,
              NFABRIC_ERR_BUSY, 0);
    {
        nfabric_win_cfg other = w0;
        nfabric_win_state s;

        other.base = B + CF_FREE;
        other.counters = B + CF_FREE2;
        rc = nfabric_window_set(gt_dev, 0, &other);
        nfabric_window_get(gt_dev, 0, &s);
        CHECK(rc == NFABRIC_ERR_BUSY && s.enabled && s.cfg.base == w0.base &&
              s.cfg.counters == w0.counters,
              "config: nfabric_window_set on enabled window 0 -> BUSY (returned %d), "
              "window 0 still enabled at 0x%" PRIx64, rc, s.cfg.base);
    }
    /* Other refused register writes. */
    try_write("reserved bit 31 in WIN_CTRL", NFABRIC_REG_WIN(1, NFABRIC_WIN_CTRL),
              1u << 31, NFABRIC_ERR_RESERVED_BITS, 1);
    try_write("unknown WIN_CMD 2", NFABRIC_REG_WIN(1, NFABRIC_WIN_CMD), 2,
              NFABRIC_ERR_COMMAND, 1);
    try_write("reserved bit in CTRL", NFABRIC_REG_CTRL, 1u << 8,
              NFABRIC_ERR_RESERVED_BITS, -1);
    try_write("write to MAGIC", NFABRIC_REG_MAGIC, 0, NFABRIC_ERR_READONLY, -1);
    try_write("write to undefined offset 0x0f0", 0x0f0, 0, NFABRIC_ERR_UNMAPPED, -1);
    {
        uint32_t cnt0 = nfabric_rd32(gt_dev, NFABRIC_REG_ERROR_COUNT);
        uint8_t v = *(volatile uint8_t *)(nfabric_regs_map(gt_dev) + NFABRIC_REG_MAGIC);

        CHECK(nfabric_rd32(gt_dev, NFABRIC_REG_LAST_ERROR) == NFABRIC_ERR_ACCESS &&
              nfabric_rd32(gt_dev, NFABRIC_REG_ERROR_COUNT) == cnt0 + 1 && v == 0,
              "config: 1-byte register read -> %s (%u), reads 0 (got 0x%02x)",
              nfabric_strerror(NFABRIC_ERR_ACCESS), NFABRIC_ERR_ACCESS, v);
    }

    /* And a good configuration still works next to window 0. */
    {
        nfabric_win_cfg good = w0;

        good.base = B + CF_FREE;
        good.counters = B + CF_FREE2;
        ok_before = nfabric_window_check(gt_dev, 1, &good);
        rc = nfabric_window_set(gt_dev, 1, &good);
        CHECK(rc == 0 && ok_before == 0, "config: a valid window 1 next to window 0 "
              "is accepted (returned %d, library predicts %u)", rc, ok_before);
        nfabric_window_disable(gt_dev, 1);
    }
    rc = nfabric_window_disable(gt_dev, 0);
    CHECK(rc == 0 && !(nfabric_rd32(gt_dev, NFABRIC_REG_ENABLED_MASK) & 1),
          "config: window 0 disabled (ENABLED_MASK 0x%x)",
          nfabric_rd32(gt_dev, NFABRIC_REG_ENABLED_MASK));
    nfabric_ctrl(gt_dev, NFABRIC_CTRL_CLEAR_ERROR);
    CHECK(nfabric_rd32(gt_dev, NFABRIC_REG_ERROR_COUNT) == 0 &&
          nfabric_rd32(gt_dev, NFABRIC_REG_LAST_ERROR) == 0,
          "config: CTRL CLEAR_ERROR zeroes ERROR_COUNT and LAST_ERROR");
}

/* ---- (f) statistics and timing ---------------------------------------- */

#define ST_FP32 (52ull << 20)
#define ST_GB   (48ull << 20)
#define ST_GBC  (49ull << 20)
#define ST_GT   (50ull << 20)
#define ST_GTC  (51ull << 20)

typedef struct op {
    unsigned path;
    bool write;
    unsigned size, count;
} op;

void gt_group_stats(void)
{
    static const op ops[] = {
        { NFABRIC_PATH_FP32, true, 8, 100 }, { NFABRIC_PATH_FP32, true, 4, 40 },
        { NFABRIC_PATH_FP32, true, 2, 30 }, { NFABRIC_PATH_FP32, true, 1, 20 },
        { NFABRIC_PATH_FP32, false, 8, 25 }, { NFABRIC_PATH_FP32, false, 1, 10 },
        { NFABRIC_PATH_GBINARY, true, 8, 64 }, { NFABRIC_PATH_GBINARY, true, 4, 32 },
        { NFABRIC_PATH_GBINARY, false, 8, 16 }, { NFABRIC_PATH_GTERNARY, true, 8, 48 },
        { NFABRIC_PATH_GTERNARY, false, 2, 20 },
    };
    uint64_t B = nfabric_map_dpa(gt_dev), base[NFABRIC_NUM_PATHS] = { ST_FP32, ST_GB, ST_GT };
    nfabric_path_stats want[NFABRIC_NUM_PATHS] = { { 0 } }, got[NFABRIC_NUM_PATHS];
    nfabric_win_cfg gb = { .base = B + ST_GB, .size = 4096, .counters = B + ST_GBC,
                           .path = NFABRIC_PATH_GBINARY, .width = 8 };
    nfabric_win_cfg gt = { .base = B + ST_GT, .size = 4096, .counters = B + ST_GTC,
                           .path = NFABRIC_PATH_GTERNARY, .width = 8, .threshold = 1 };
    /*
     * FP32 accesses go to an FP32 window: plain memory outside windows is
     * mapped directly by the device (docs/device.md) and not counted.
     */
    nfabric_win_cfg fp = { .base = B + ST_FP32, .size = 4096,
                           .path = NFABRIC_PATH_FP32 };
    nfabric_timing t;
    uint64_t rng = gt_seed ^ 0x57a7;
    int rc;

    if (!gt_need_regs("stats")) {
        return;
    }
    rc = nfabric_window_set(gt_dev, 2, &gb);
    rc |= nfabric_window_set(gt_dev, 3, &gt);
    rc |= nfabric_window_set(gt_dev, 4, &fp);
    CHECK(rc == 0, "stats: G-Binary window 2, G-Ternary window 3 and FP32 window 4 "
          "enabled");
    rc = nfabric_ctrl(gt_dev, NFABRIC_CTRL_CLEAR_STATS | NFABRIC_CTRL_CLEAR_TIMING);
    nfabric_stats(gt_dev, got);
    nfabric_timing_read(gt_dev, &t);
    CHECK(rc == 0 && !memcmp(got, want, sizeof(got)) && t.total_ps == 0,
          "stats: CTRL CLEAR_STATS|CLEAR_TIMING zeroes every counter");

    for (unsigned i = 0; i < sizeof(ops) / sizeof(ops[0]); i++) {
        const op *o = &ops[i];
        volatile uint8_t *m = gt_mem(B + base[o->path], 4096);
        nfabric_path_stats *w = &want[o->path];

        for (unsigned k = 0; k < o->count; k++) {
            volatile uint8_t *p = m + ((k * o->size) % 2048);

            if (o->write) {
                gt_st(p, o->size, gt_rand(&rng));
            } else {
                (void)gt_ld(p, o->size);
            }
        }
        if (o->write) {
            w->writes += o->count;
            w->write_bytes += (uint64_t)o->count * o->size;
        } else {
            w->reads += o->count;
            w->read_bytes += (uint64_t)o->count * o->size;
        }
    }
    nfabric_stats(gt_dev, got);
    nfabric_timing_read(gt_dev, &t);
    for (unsigned p = 0; p < NFABRIC_NUM_PATHS; p++) {
        CHECK(!memcmp(&got[p], &want[p], sizeof(got[p])),
              "stats: %s reads %" PRIu64 " writes %" PRIu64 " read_bytes %" PRIu64
              " write_bytes %" PRIu64 " (want %" PRIu64 " %" PRIu64 " %" PRIu64 " %" PRIu64 ")",
              nfabric_path_name(p), got[p].reads, got[p].writes, got[p].read_bytes,
              got[p].write_bytes, want[p].reads, want[p].writes, want[p].read_bytes,
              want[p].write_bytes);
    }

    /* Timing: the documented model (docs/timing.md), integer picoseconds. */
    {
        uint64_t dp = (uint64_t)t.depth * 1000000u / t.clock_mhz;
        uint64_t wt[NFABRIC_NUM_PATHS] = { 0 }, we[NFABRIC_NUM_PATHS] = { 0 };
        uint64_t total = 0, exposed = 0, base_sum;
        uint32_t ppm;
        bool ok = true;

        for (unsigned i = 0; i < sizeof(ops) / sizeof(ops[0]); i++) {
            const op *o = &ops[i];
            uint64_t one = (uint64_t)t.service_ns * 1000u + o->size * 1000000ull / t.link_mbps;

            if (o->path != NFABRIC_PATH_FP32) {
                one += dp;
                we[o->path] += dp * o->count;
            }
            wt[o->path] += one * o->count;
        }
        for (unsigned p = 0; p < NFABRIC_NUM_PATHS; p++) {
            ok &= CHECK(t.path_time_ps[p] == wt[p] && t.path_exposed_ps[p] == we[p],
                        "timing: %s time %" PRIu64 " ps, exposed %" PRIu64 " ps (want %"
                        PRIu64 ", %" PRIu64 ")", nfabric_path_name(p), t.path_time_ps[p],
                        t.path_exposed_ps[p], wt[p], we[p]);
            total += wt[p];
            exposed += we[p];
        }
        base_sum = total - exposed;
        ppm = (uint32_t)((double)exposed * 1e6 / (double)base_sum + 0.5);
        CHECK(t.total_ps == total && t.exposed_ppm == ppm,
              "timing: total %" PRIu64 " ps, exposed %u ppm (want %" PRIu64 ", %u)",
              t.total_ps, t.exposed_ppm, total, ppm);
        gt_summary("timing: %u-cycle datapath at %u MHz = %" PRIu64 " ps per low-bit access "
                   "against %u ns service: exposed %.3f %% of the modelled time",
                   t.depth, t.clock_mhz, dp, t.service_ns, t.exposed_ppm / 1e4);
        (void)ok;
    }
    nfabric_window_disable(gt_dev, 2);
    nfabric_window_disable(gt_dev, 3);
    nfabric_window_disable(gt_dev, 4);
    gt_summary("stats: per-path read/write counts and bytes equal the accesses made");
}
