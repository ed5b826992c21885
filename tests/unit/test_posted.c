/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Unit tests of posted windows (hw/mem/nfabric/nfabric_posted.c, register
 * version 1.7) without QEMU, against the path they shortcut: two devices,
 * one with a trapped window (every write a CXL.mem access of the library's
 * sizes, as nfabric_mem_write makes them through the mapping), one with
 * the same window posted (the bytes stored into the head's staging, then
 * STAGE_OFF and POST), take the same random buckets round after round:
 * G-Binary and G-Ternary, widths 8 and 16, both tie rules, thresholds 1-3,
 * reserved codes, aligned and unaligned ranges.  After every round the
 * counter areas, CONTRIB_BYTES, RESERVED_CODES and the read-out (trapped:
 * reads; posted: FETCH, then the staging) must be equal bit for bit, and
 * CONTRIB_WRITES and HEAD_CONTRIB too where every range is 8-byte
 * aligned (a posted range counts the 8-byte words it covers).
 *
 * Also: the doorbells' refusals (a trapped, disabled or FP32 window, a
 * head without staging, an empty range or one past the window, a 64-bit
 * access), the I/O path's accesses to a posted window (the staging, not
 * counted), the accounting of a posted range (statistics in words, the
 * timing model in 64-byte lines), reset, and the RTL's compare mode seeing
 * every word of a posted range.  Several heads: tests/unit/test_shared.c.
 */
#define _DEFAULT_SOURCE
#include <inttypes.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hw/mem/nfabric_ctrl.h"
#include "tap.h"
#include "testutil.h"

#define RAM_SIZE        (8u << 20)
#define WBASE           0x1000u
#define WCTRS           0x40000u
#define GB              NFABRIC_PATH_GBINARY
#define GT              NFABRIC_PATH_GTERNARY

static const NFabricTimingParams tparams = { 1250, 7, 250, 16000 };

typedef struct Dev {
    NFabricCtrl c;
    uint8_t *ram;
    uint8_t *staging;
} Dev;

static unsigned errors_logged;

static void hook_error(void *opaque, uint64_t off, uint32_t code,
                       const char *what)
{
    (void)opaque;
    (void)off;
    (void)code;
    (void)what;
    errors_logged++;
}

static unsigned staging_bad_dirty;

static void hook_staging_dirty(void *opaque, uint64_t dpa, uint64_t len)
{
    (void)opaque;
    staging_bad_dirty += len == 0 || dpa > RAM_SIZE || len > RAM_SIZE - dpa;
}

static const NFabricCtrlOps hooks = {
    .guest_error = hook_error,
    .staging_dirty = hook_staging_dirty,
};

static void dev_up(Dev *d, bool staging)
{
    d->ram = calloc(1, RAM_SIZE);
    d->staging = staging ? calloc(1, RAM_SIZE) : NULL;
    if (!d->ram || (staging && !d->staging)) {
        abort();
    }
    nfabric_ctrl_init(&d->c, d->ram, RAM_SIZE, &tparams, &hooks, NULL);
    nfabric_ctrl_set_staging(&d->c, d->staging);
}

static void dev_down(Dev *d)
{
    free(d->ram);
    free(d->staging);
}

static void wr(Dev *d, uint64_t off, uint64_t v, unsigned size)
{
    nfabric_ctrl_reg_write(&d->c, off, v, size);
}

static uint64_t rd(Dev *d, uint64_t off, unsigned size)
{
    return nfabric_ctrl_reg_read(&d->c, off, size);
}

/* Enable window i; returns its ERROR (0: enabled). */
static uint32_t win_set(Dev *d, unsigned i, uint64_t base, uint64_t size,
                        uint64_t ctrs, unsigned path, unsigned width,
                        unsigned tie, uint32_t threshold, bool posted)
{
    wr(d, NFABRIC_REG_WIN(i, NFABRIC_WIN_DPA_BASE), base, 8);
    wr(d, NFABRIC_REG_WIN(i, NFABRIC_WIN_DPA_SIZE), size, 8);
    wr(d, NFABRIC_REG_WIN(i, NFABRIC_WIN_COUNTERS), ctrs, 8);
    wr(d, NFABRIC_REG_WIN(i, NFABRIC_WIN_THRESHOLD), threshold, 4);
    wr(d, NFABRIC_REG_WIN(i, NFABRIC_WIN_CTRL),
       NFABRIC_WCTRL(path, width, tie) | NFABRIC_WCTRL_ENABLE |
       (posted ? NFABRIC_WCTRL_POSTED : 0), 4);
    return (uint32_t)rd(d, NFABRIC_REG_WIN(i, NFABRIC_WIN_ERROR), 4);
}

/* What the library's mapping makes of a copy: 8-byte words, 4, bytes. */
static void trapped_xfer(Dev *d, uint64_t dpa, uint8_t *b, uint64_t len,
                         bool write)
{
    while (len) {
        uint64_t n = 8 - (dpa & 7);

        n = n > len ? len : n;
        if (n == 8) {
            for (n = 0; n + 8 <= len; n += 8) {
                nfabric_ctrl_mem_access(&d->c, dpa + n, b + n, 8, write);
            }
        } else if (n == 4 && !(dpa & 3)) {
            nfabric_ctrl_mem_access(&d->c, dpa, b, 4, write);
        } else {
            for (unsigned k = 0; k < n; k++) {
                nfabric_ctrl_mem_access(&d->c, dpa + k, b + k, 1, write);
            }
        }
        dpa += n;
        b += n;
        len -= n;
    }
}

static void doorbell(Dev *d, unsigned i, uint64_t off, uint64_t len,
                     bool post)
{
    wr(d, NFABRIC_REG_POST(i, NFABRIC_STAGE_OFF), off, 4);
    wr(d, NFABRIC_REG_POST(i, post ? NFABRIC_POST : NFABRIC_FETCH), len, 4);
}

/* The posted path of a write: plain stores into the staging, then POST. */
static void posted_write(Dev *d, unsigned i, uint64_t dpa, const uint8_t *b,
                         uint64_t len)
{
    memcpy(d->staging + dpa, b, len);
    doorbell(d, i, dpa - WBASE, len, true);
}

static void posted_read(Dev *d, unsigned i, uint64_t dpa, uint8_t *b,
                        uint64_t len)
{
    doorbell(d, i, dpa - WBASE, len, false);
    memcpy(b, d->staging + dpa, len);
}

static uint64_t rng = 0x1234;

static uint64_t rnd(void)
{
    return nf_splitmix64(&rng);
}

/* Random G-Ternary or G-Binary bytes; G-Ternary with some reserved codes. */
static void fill(uint8_t *b, uint64_t len, unsigned path)
{
    for (uint64_t k = 0; k < len; k++) {
        b[k] = (uint8_t)rnd();
        if (path == GT && rnd() % 4) {
            /* Mostly valid codes: 0, +1, -1. */
            uint8_t v = 0;

            for (unsigned e = 0; e < 4; e++) {
                static const uint8_t codes[] = { 0, 1, 3 };

                v |= (uint8_t)(codes[rnd() % 3] << (2 * e));
            }
            b[k] = v;
        }
    }
}

static bool same_state(Dev *a, Dev *b, unsigned i, uint64_t wsize,
                       uint64_t clen, bool writes_too, const char **what)
{
    static const struct {
        uint32_t reg;
        unsigned size;
        const char *name;
    } regs[] = {
        { NFABRIC_WIN_CONTRIB_BYTES, 8, "CONTRIB_BYTES" },
        { NFABRIC_WIN_RESERVED_CODES, 4, "RESERVED_CODES" },
        { NFABRIC_WIN_CONTRIB_WRITES, 8, "CONTRIB_WRITES" },
    };
    static uint8_t ra[1 << 16], rb[1 << 16];

    if (memcmp(a->ram + WCTRS, b->ram + WCTRS, clen)) {
        *what = "counter area";
        return false;
    }
    for (unsigned k = 0; k < 3; k++) {
        if (k == 2 && !writes_too) {
            break;
        }
        if (rd(a, NFABRIC_REG_WIN(i, regs[k].reg), regs[k].size) !=
            rd(b, NFABRIC_REG_WIN(i, regs[k].reg), regs[k].size)) {
            *what = regs[k].name;
            return false;
        }
    }
    if (writes_too && rd(a, NFABRIC_REG_HEAD_CONTRIB_WIN(i), 8) !=
                      rd(b, NFABRIC_REG_HEAD_CONTRIB_WIN(i), 8)) {
        *what = "HEAD_CONTRIB";
        return false;
    }
    if (rd(a, NFABRIC_REG_ROUND(i, NFABRIC_ROUND_STATUS), 4) !=
        rd(b, NFABRIC_REG_ROUND(i, NFABRIC_ROUND_STATUS), 4)) {
        *what = "ROUND_STATUS";
        return false;
    }
    /* The read-out: a random range, then the whole window. */
    for (unsigned pass = 0; pass < 2; pass++) {
        uint64_t off = pass ? 0 : rnd() % wsize;
        uint64_t len = pass ? wsize : 1 + rnd() % (wsize - off);

        trapped_xfer(a, WBASE + off, ra, len, false);
        posted_read(b, i, WBASE + off, rb, len);
        if (memcmp(ra, rb, len)) {
            *what = "read-out";
            return false;
        }
    }
    return true;
}

/*
 * Rounds of random buckets through both paths.  aligned: every bucket
 * starts and ends at an 8-byte boundary (then the write counts match).
 */
static bool equal_rounds(unsigned path, unsigned width, unsigned tie,
                         uint32_t threshold, bool aligned, unsigned rounds)
{
    static uint8_t buf[1 << 16];
    const uint64_t wsize = 0x2000;
    uint64_t clen = nfabric_counter_bytes(path, width, wsize);
    Dev a, b;
    bool ok = true;
    const char *what = "";

    dev_up(&a, false);
    dev_up(&b, true);
    if (win_set(&a, 3, WBASE, wsize, WCTRS, path, width, tie, threshold,
                false) ||
        win_set(&b, 3, WBASE, wsize, WCTRS, path, width, tie, threshold,
                true)) {
        tap_diag("equal rounds: an enable was refused");
        ok = false;
    }
    for (unsigned r = 0; ok && r < rounds; r++) {
        unsigned buckets = 1 + (unsigned)(rnd() % 6);

        for (unsigned k = 0; k < buckets; k++) {
            uint64_t off = rnd() % wsize, len;

            if (aligned) {
                off &= ~7ull;
            }
            len = 1 + rnd() % (wsize - off);
            if (aligned) {
                len = (len + 7) & ~7ull;
                len = len > wsize - off ? wsize - off : len;
            }
            fill(buf, len, path);
            trapped_xfer(&a, WBASE + off, buf, len, true);
            posted_write(&b, 3, WBASE + off, buf, len);
        }
        if (!same_state(&a, &b, 3, wsize, clen, aligned, &what)) {
            tap_diag("%s w%u tie %u T %u %s round %u: %s differs",
                     path == GB ? "G-Binary" : "G-Ternary", width, tie,
                     threshold, aligned ? "aligned" : "unaligned", r, what);
            ok = false;
        }
        wr(&a, NFABRIC_REG_ROUND(3, NFABRIC_ROUND_COMPLETE), r + 1, 4);
        wr(&b, NFABRIC_REG_ROUND(3, NFABRIC_ROUND_COMPLETE), r + 1, 4);
        if (ok && rd(&a, NFABRIC_REG_ROUND(3, NFABRIC_ROUND_STATUS), 4) !=
                  rd(&b, NFABRIC_REG_ROUND(3, NFABRIC_ROUND_STATUS), 4)) {
            tap_diag("round %u: ROUND_STATUS after completion differs", r);
            ok = false;
        }
        wr(&a, NFABRIC_REG_WIN(3, NFABRIC_WIN_CMD), NFABRIC_WCMD_CLEAR, 4);
        wr(&b, NFABRIC_REG_WIN(3, NFABRIC_WIN_CMD), NFABRIC_WCMD_CLEAR, 4);
    }
    if (a.c.error_count || b.c.error_count) {
        tap_diag("errors: trapped %u, posted %u (last %u)", a.c.error_count,
                 b.c.error_count, b.c.last_error);
        ok = false;
    }
    dev_down(&a);
    dev_down(&b);
    return ok;
}

static void test_equal(void)
{
    unsigned cases = 0, good = 0;

    for (unsigned aligned = 0; aligned < 2; aligned++) {
        for (unsigned width = 8; width <= 16; width += 8) {
            for (unsigned tie = 0; tie < 2; tie++) {
                cases++;
                good += equal_rounds(GB, width, tie, 1, aligned, 12);
            }
            for (uint32_t t = 1; t <= 3; t++) {
                cases++;
                good += equal_rounds(GT, width, 0, t, aligned, 12);
            }
        }
    }
    TAP_CHECK(good == cases, "posted = trapped: %u configurations x 12 rounds "
              "of random buckets: counters, CONTRIB_BYTES, RESERVED_CODES, "
              "ROUND_STATUS and read-out equal bit for bit (%u differ)",
              cases, cases - good);
}

/* Aligned buckets: CONTRIB_WRITES and HEAD_CONTRIB equal as well. */
static void test_equal_counts(void)
{
    bool ok = equal_rounds(GB, 8, 1, 1, true, 20) &&
              equal_rounds(GT, 16, 0, 2, true, 20);

    TAP_CHECK(ok, "posted = trapped, 8-byte aligned buckets: CONTRIB_WRITES "
              "and HEAD_CONTRIB equal too (a posted range counts its words)");
}

static uint32_t last_error(Dev *d)
{
    return (uint32_t)rd(d, NFABRIC_REG_LAST_ERROR, 4);
}

static void test_refusals(void)
{
    Dev d, none;
    uint32_t errs;
    bool ok;

    dev_up(&d, true);
    dev_up(&none, false);
    TAP_CHECK(rd(&d, NFABRIC_REG_HEAD_INFO, 4) & NFABRIC_HEAD_INFO_STAGING &&
              !(rd(&none, NFABRIC_REG_HEAD_INFO, 4) & NFABRIC_HEAD_INFO_STAGING),
              "HEAD_INFO.STAGING: set on a head with staging memory only");
    TAP_CHECK(win_set(&none, 0, WBASE, 0x400, WCTRS, GB, 8, 0, 1, true) ==
              NFABRIC_ERR_POSTED && !(rd(&none, NFABRIC_REG_ENABLED_MASK, 4) & 1),
              "a posted enable on a head without staging: POSTED, not enabled");
    TAP_CHECK(win_set(&d, 0, WBASE, 0x400, 0, NFABRIC_PATH_FP32, 0, 0, 0,
                      true) == NFABRIC_ERR_POSTED,
              "a posted FP32 window: POSTED, not enabled");
    errs = d.c.error_count;
    doorbell(&d, 0, 0, 64, true);
    ok = last_error(&d) == NFABRIC_ERR_POSTED && d.c.error_count == errs + 1;
    TAP_CHECK(ok, "POST on a disabled window: POSTED");
    TAP_CHECK(win_set(&d, 1, WBASE, 0x400, WCTRS, GB, 8, 0, 1, false) == 0,
              "a trapped G-Binary window for the checks");
    doorbell(&d, 1, 0, 64, true);
    TAP_CHECK(last_error(&d) == NFABRIC_ERR_POSTED,
              "POST on a trapped window: POSTED");
    doorbell(&d, 1, 0, 64, false);
    TAP_CHECK(last_error(&d) == NFABRIC_ERR_POSTED,
              "FETCH on a trapped window: POSTED");
    wr(&d, NFABRIC_REG_WIN(1, NFABRIC_WIN_CTRL), 0, 4);
    TAP_CHECK(win_set(&d, 2, WBASE, 0x400, WCTRS, GB, 8, 0, 1, true) == 0 &&
              (rd(&d, NFABRIC_REG_WIN(2, NFABRIC_WIN_CTRL), 4) &
               NFABRIC_WCTRL_POSTED),
              "a posted G-Binary window enables; CTRL.POSTED reads 1");
    errs = d.c.error_count;
    doorbell(&d, 2, 0, 0, true);
    ok = last_error(&d) == NFABRIC_ERR_RANGE;
    doorbell(&d, 2, 0x3c0, 0x41, true);
    ok = ok && last_error(&d) == NFABRIC_ERR_RANGE;
    doorbell(&d, 2, 0x400, 1, false);
    ok = ok && last_error(&d) == NFABRIC_ERR_RANGE;
    doorbell(&d, 2, 0xffffffffu, 0xffffffffu, true);
    ok = ok && last_error(&d) == NFABRIC_ERR_RANGE;
    TAP_CHECK(ok && d.c.error_count == errs + 4 &&
              rd(&d, NFABRIC_REG_WIN(2, NFABRIC_WIN_CONTRIB_BYTES), 8) == 0 &&
              rd(&d, NFABRIC_REG_WIN(2, NFABRIC_WIN_ERROR), 4) == 0,
              "doorbells empty, past the window or wrapping: RANGE, nothing "
              "counted, the window's ERROR untouched");
    wr(&d, NFABRIC_REG_POST(2, NFABRIC_STAGE_OFF), 0x1c0, 4);
    TAP_CHECK(rd(&d, NFABRIC_REG_POST(2, NFABRIC_STAGE_OFF), 4) == 0x1c0 &&
              rd(&d, NFABRIC_REG_POST(2, NFABRIC_POST), 4) == 0,
              "STAGE_OFF reads back; POST reads 0");
    nfabric_ctrl_reg_write(&d.c, NFABRIC_REG_POST(2, NFABRIC_POST),
                           0x0000004000000000ull, 8);
    TAP_CHECK(last_error(&d) == NFABRIC_ERR_ACCESS &&
              rd(&d, NFABRIC_REG_WIN(2, NFABRIC_WIN_CONTRIB_BYTES), 8) == 0,
              "a 64-bit access to a 32-bit doorbell: ACCESS, nothing counted");
    TAP_CHECK(staging_bad_dirty == 0, "every staging range reported dirty "
              "lies in the staging");
    dev_down(&d);
    dev_down(&none);
}

/* The I/O path's accesses to a posted window reach the staging. */
static void test_io_path(void)
{
    Dev d;
    uint64_t v = 0x0123456789abcdefull, got = 0, st_before, ctrs = 0;
    uint8_t line[64];

    dev_up(&d, true);
    win_set(&d, 0, WBASE, 0x400, WCTRS, GB, 8, 0, 1, true);
    st_before = rd(&d, NFABRIC_REG_STATS_PATH(GB, NFABRIC_STATS_WRITES), 8);
    nfabric_ctrl_mem_access(&d.c, WBASE + 8, (uint8_t *)&v, 8, true);
    nfabric_ctrl_mem_access(&d.c, WBASE + 8, (uint8_t *)&got, 8, false);
    for (unsigned k = 0; k < 0x2000; k++) {
        ctrs |= d.ram[WCTRS + k];
    }
    TAP_CHECK(got == v && !memcmp(d.staging + WBASE + 8, &v, 8) && ctrs == 0 &&
              rd(&d, NFABRIC_REG_STATS_PATH(GB, NFABRIC_STATS_WRITES), 8) ==
              st_before &&
              rd(&d, NFABRIC_REG_WIN(0, NFABRIC_WIN_CONTRIB_WRITES), 8) == 0,
              "I/O path on a posted window: the staging, byte-exact; no "
              "count, no statistics");
    /* Accounting: 4 KiB posted at 0 is 512 words and 64 lines. */
    nfabric_ctrl_reg_write(&d.c, NFABRIC_REG_CTRL, NFABRIC_CTRL_CLEAR_STATS |
                           NFABRIC_CTRL_CLEAR_TIMING, 4);
    win_set(&d, 1, 0x2000, 0x1000, 0x80000, GB, 8, 0, 1, true);
    memset(d.staging + 0x2000, 0xa5, 0x1000);
    doorbell(&d, 1, 0, 0x1000, true);
    TAP_CHECK(rd(&d, NFABRIC_REG_STATS_PATH(GB, NFABRIC_STATS_WRITES), 8) ==
              512 &&
              rd(&d, NFABRIC_REG_STATS_PATH(GB, NFABRIC_STATS_WRITE_BYTES), 8) ==
              0x1000 &&
              rd(&d, NFABRIC_REG_T_ACCESSES_PATH(GB), 8) == 64 &&
              rd(&d, NFABRIC_REG_WIN(1, NFABRIC_WIN_CONTRIB_WRITES), 8) == 512,
              "a posted 4 KiB: 512 writes in the statistics and CONTRIB_WRITES, "
              "64 lines in the timing model");
    {
        /* Dependent 64-byte lines: D/F over S + 64/B (docs/timing.md). */
        double df = tparams.depth * 1e6 / tparams.clock_mhz;
        double base = tparams.service_ns * 1e3 + 64 * 1e6 / tparams.link_mbps;
        uint32_t want = (uint32_t)(df / base * 1e6 + 0.5);

        TAP_CHECK(rd(&d, NFABRIC_REG_T_EXPOSED_PPM, 4) == want,
                  "a posted 4 KiB in the timing model: T_EXPOSED_PPM %u, the "
                  "64-byte lines' %u", (unsigned)rd(&d, NFABRIC_REG_T_EXPOSED_PPM, 4),
                  want);
    }
    /* FETCH of a line: its read-out in the staging, 8 words read. */
    doorbell(&d, 1, 0x40, 64, false);
    memcpy(line, d.staging + 0x2040, 64);
    TAP_CHECK(line[0] == 0xa5 && line[63] == 0xa5 &&
              rd(&d, NFABRIC_REG_STATS_PATH(GB, NFABRIC_STATS_READS), 8) == 8,
              "FETCH: the majority lands in the staging, counted as 8 reads");
    nfabric_ctrl_reset(&d.c);
    TAP_CHECK(rd(&d, NFABRIC_REG_POST(1, NFABRIC_STAGE_OFF), 4) == 0 &&
              rd(&d, NFABRIC_REG_ENABLED_MASK, 4) == 0,
              "reset: STAGE_OFF 0, no window");
    dev_down(&d);
}

/* The RTL in compare mode takes a posted range word by word. */
static unsigned alt_calls;

static int64_t alt_write(void *rtl, const NFabricAggCfg *cfg, void *counters,
                         uint64_t off, const uint8_t *data, size_t len)
{
    (void)rtl;
    alt_calls++;
    return nfabric_agg_write_ref(cfg, counters, off, data, len);
}

static int alt_read(void *rtl, const NFabricAggCfg *cfg, const void *counters,
                    uint64_t off, uint8_t *out, size_t len)
{
    (void)rtl;
    alt_calls++;
    return nfabric_agg_read_ref(cfg, counters, off, out, len);
}

static const NFabricRtlOps alt_ops = { alt_write, alt_read };

static void test_rtl_compare(void)
{
    static int model;
    static uint8_t got[0x100];
    Dev d;

    dev_up(&d, true);
    nfabric_ctrl_set_rtl(&d.c, NFABRIC_RTL_COMPARE, &alt_ops, &model);
    win_set(&d, 0, WBASE, 0x400, WCTRS, GT, 8, 0, 1, true);
    fill(d.staging + WBASE, 0x100, GT);
    memcpy(got, d.staging + WBASE, sizeof(got));
    alt_calls = 0;
    doorbell(&d, 0, 0, 0x100, true);
    doorbell(&d, 0, 0, 0x100, false);
    TAP_CHECK(alt_calls == 64 && d.c.rtl_accesses == 64 &&
              d.c.rtl_mismatches == 0 &&
              rd(&d, NFABRIC_REG_WIN(0, NFABRIC_WIN_CONTRIB_WRITES), 8) == 32,
              "rtl=compare: a posted 256 bytes and its FETCH go through the "
              "RTL as 32 + 32 words, no difference (%u calls)", alt_calls);
    dev_down(&d);
}

/*
 * A long doorbell (512 KiB: split between two threads, stripe by stripe)
 * against the trapped path, G-Binary w8 and G-Ternary w16, and a FETCH of
 * it against the trapped read-out.
 */
static bool equal_long(unsigned path, unsigned width)
{
    const uint64_t wsize = 512u << 10, ctrs = 1u << 20;
    uint8_t *buf = malloc(wsize), *ra = malloc(wsize), *rb = malloc(wsize);
    uint64_t clen = nfabric_counter_bytes(path, width, wsize);
    bool ok;
    Dev a, b;

    dev_up(&a, false);
    dev_up(&b, true);
    ok = buf && ra && rb &&
         win_set(&a, 0, WBASE, wsize, ctrs, path, width, 1, 2, false) == 0 &&
         win_set(&b, 0, WBASE, wsize, ctrs, path, width, 1, 2, true) == 0;
    for (unsigned r = 0; ok && r < 3; r++) {
        uint64_t off = r == 0 ? 0 : 8 * (rnd() % 1000);
        uint64_t len = wsize - off - (r == 2 ? 24 : 0);

        fill(buf, len, path);
        for (uint64_t k = 0; k < len; k += 8) {
            nfabric_ctrl_mem_access(&a.c, WBASE + off + k, buf + k, 8, true);
        }
        memcpy(b.staging + WBASE + off, buf, len);
        doorbell(&b, 0, off, len, true);
    }
    ok = ok && !memcmp(a.ram + ctrs, b.ram + ctrs, clen) &&
         rd(&a, NFABRIC_REG_WIN(0, NFABRIC_WIN_CONTRIB_WRITES), 8) ==
         rd(&b, NFABRIC_REG_WIN(0, NFABRIC_WIN_CONTRIB_WRITES), 8) &&
         rd(&a, NFABRIC_REG_WIN(0, NFABRIC_WIN_CONTRIB_BYTES), 8) ==
         rd(&b, NFABRIC_REG_WIN(0, NFABRIC_WIN_CONTRIB_BYTES), 8) &&
         rd(&a, NFABRIC_REG_WIN(0, NFABRIC_WIN_RESERVED_CODES), 4) ==
         rd(&b, NFABRIC_REG_WIN(0, NFABRIC_WIN_RESERVED_CODES), 4) &&
         b.c.error_count == 0;
    if (ok) {
        for (uint64_t k = 0; k < wsize; k += 8) {
            nfabric_ctrl_mem_access(&a.c, WBASE + k, ra + k, 8, false);
        }
        doorbell(&b, 0, 0, wsize, false);
        ok = !memcmp(ra, b.staging + WBASE, wsize) &&
             rd(&b, NFABRIC_REG_STATS_PATH(path, NFABRIC_STATS_READS), 8) ==
             wsize / 8 && b.c.error_count == 0;
    }
    free(buf);
    free(ra);
    free(rb);
    dev_down(&a);
    dev_down(&b);
    return ok;
}

static void test_long(void)
{
    TAP_CHECK(equal_long(GB, 8) && equal_long(GT, 16),
              "posted = trapped for 512 KiB doorbells (split between two "
              "threads): counters, counts, read-out after FETCH");
}

int main(void)
{
    test_equal();
    test_equal_counts();
    test_refusals();
    test_io_path();
    test_rtl_compare();
    test_long();
    return tap_done();
}
