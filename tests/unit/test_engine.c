/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Unit tests of the aggregation engine (hw/mem/nfabric/nfabric_engine.c).
 *
 * Every implementation the host supports is run against the scalar
 * reference on random inputs, and against hand-checked figures for the
 * layout, saturation, tie rules, gating, reserved codes and range checks.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "hw/mem/nfabric_engine.h"
#include "tap.h"

#define SEEDS           200
#define OPS_PER_SEED    40
#define MAX_WINDOW      300
#define GUARD           64
#define GUARD_BYTE      0xa5

/* ---- Helpers ---------------------------------------------------------- */

static uint64_t rng;

static uint64_t rnd(void)
{
    uint64_t z = (rng += 0x9e3779b97f4a7c15ULL);

    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

static uint64_t rnd_below(uint64_t n)
{
    return rnd() % n;
}

static int32_t cmax(unsigned width)
{
    return width == 8 ? INT8_MAX : INT16_MAX;
}

static int32_t cmin(unsigned width)
{
    return -cmax(width) - 1;
}

static uint64_t nelems(const NFabricAggCfg *cfg)
{
    return cfg->size * (cfg->path == NFABRIC_PATH_GBINARY ? 8 : 4);
}

static size_t ctr_bytes(const NFabricAggCfg *cfg)
{
    return (size_t)nfabric_counter_bytes(cfg->path, cfg->width, cfg->size);
}

static NFabricAggCfg mkcfg(unsigned path, unsigned width, unsigned tie,
                           uint32_t threshold, uint64_t size)
{
    NFabricAggCfg cfg = {
        .path = path, .width = width, .tie = tie,
        .threshold = threshold, .size = size,
    };

    return cfg;
}

/* Counter area with GUARD guard bytes after it. */
static uint8_t *ctr_alloc(const NFabricAggCfg *cfg)
{
    size_t n = ctr_bytes(cfg);
    uint8_t *c = calloc(1, n + GUARD);

    if (!c) {
        abort();
    }
    memset(c + n, GUARD_BYTE, GUARD);
    return c;
}

static bool guard_ok(const uint8_t *p, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        if (p[i] != GUARD_BYTE) {
            return false;
        }
    }
    return true;
}

/* A value biased towards the interesting ones: the ends, 0, +-T. */
static int32_t rnd_count(unsigned width, uint32_t t)
{
    switch (rnd_below(10)) {
    case 0:
        return cmax(width);
    case 1:
        return cmin(width);
    case 2:
        return cmax(width) - (int32_t)rnd_below(3);
    case 3:
        return cmin(width) + (int32_t)rnd_below(3);
    case 4:
        return 0;
    case 5:
        return (int32_t)t - 1 + (int32_t)rnd_below(3);
    case 6:
        return -(int32_t)t - 1 + (int32_t)rnd_below(3);
    case 7:
        return (int32_t)rnd_below(7) - 3;
    default:
        return (int32_t)rnd_below((uint64_t)cmax(width) * 2 + 2) +
               cmin(width);
    }
}

static void fill_counts(const NFabricAggCfg *cfg, uint8_t *c)
{
    for (uint64_t e = 0; e < nelems(cfg); e++) {
        nfabric_counter_set(c, cfg->width, e,
                            rnd_count(cfg->width, cfg->threshold));
    }
}

static void fill_data(uint8_t *d, size_t len, bool ternary)
{
    static const uint8_t valid[3] = { 0, 1, 3 };
    bool valid_only = ternary && rnd_below(2);

    for (size_t i = 0; i < len; i++) {
        if (valid_only) {
            d[i] = 0;
            for (unsigned k = 0; k < 4; k++) {
                d[i] |= valid[rnd_below(3)] << (2 * k);
            }
        } else {
            d[i] = (uint8_t)rnd();
        }
    }
}

static void pick_range(uint64_t size, uint64_t *off, size_t *len)
{
    static const size_t lens[] = {
        1, 2, 3, 4, 5, 7, 8, 9, 15, 16, 17, 31, 32, 33, 63, 64, 65, 127, 128,
    };
    size_t n = sizeof(lens) / sizeof(lens[0]);
    uint64_t l = rnd_below(4) ? lens[rnd_below(n)] : 1 + rnd_below(size);

    if (l > size) {
        l = size;
    }
    *len = (size_t)l;
    *off = rnd_below(size - l + 1);
    if (rnd_below(4) == 0) {
        *off &= ~(uint64_t)7;       /* word-aligned now and then */
    }
}

/* Seeds cycle through every path x width x tie; the threshold is random. */
static NFabricAggCfg rnd_cfg(unsigned seed)
{
    unsigned path = seed & 1 ? NFABRIC_PATH_GTERNARY : NFABRIC_PATH_GBINARY;
    unsigned width = seed & 2 ? 16 : 8;
    unsigned tie = seed & 4 ? NFABRIC_TIE_POSITIVE : NFABRIC_TIE_NEGATIVE;
    uint32_t t;

    switch (rnd_below(5)) {
    case 0:
        t = 1;
        break;
    case 1:
        t = 2;
        break;
    case 2:
        t = (uint32_t)cmax(width);
        break;
    case 3:
        t = (uint32_t)cmax(width) / 2;
        break;
    default:
        t = 1 + (uint32_t)rnd_below((uint64_t)cmax(width));
        break;
    }
    return mkcfg(path, width, tie, t, 1 + rnd_below(MAX_WINDOW));
}

/* ---- Random inputs against the reference ------------------------------ */

static void test_random(const char *impl)
{
    for (unsigned seed = 0; seed < SEEDS; seed++) {
        NFabricAggCfg cfg;
        uint8_t *a_buf, *b_buf, *snap, *a, *b;
        uint8_t data[MAX_WINDOW], out_a[MAX_WINDOW + GUARD];
        uint8_t out_b[MAX_WINDOW + GUARD];
        size_t n, shift;
        const char *why = NULL;
        unsigned op;

        rng = seed * 0x100000001b3ULL + 1;
        cfg = rnd_cfg(seed);
        n = ctr_bytes(&cfg);
        shift = (size_t)rnd_below(8);   /* unaligned counter areas too */
        a_buf = malloc(n + GUARD + 8);
        b_buf = malloc(n + GUARD + 8);
        snap = malloc(n);
        if (!a_buf || !b_buf || !snap) {
            abort();
        }
        a = a_buf + shift;
        b = b_buf + shift;
        fill_counts(&cfg, a);
        memcpy(b, a, n);
        memset(a + n, GUARD_BYTE, GUARD);

        for (op = 0; op < OPS_PER_SEED && !why; op++) {
            uint64_t off;
            size_t len;
            int64_t ra, rb;

            pick_range(cfg.size, &off, &len);
            fill_data(data, len, cfg.path == NFABRIC_PATH_GTERNARY);
            ra = nfabric_agg_write(&cfg, a, off, data, len);
            rb = nfabric_agg_write_ref(&cfg, b, off, data, len);
            if (ra != rb) {
                why = "write return value";
            } else if (memcmp(a, b, n)) {
                why = "counters after write";
            } else if (!guard_ok(a + n, GUARD)) {
                why = "write past the counter area";
            }

            pick_range(cfg.size, &off, &len);
            memcpy(snap, a, n);
            memset(out_a, GUARD_BYTE, sizeof(out_a));
            memset(out_b, 0x5a, sizeof(out_b));
            ra = nfabric_agg_read(&cfg, a, off, out_a, len);
            rb = nfabric_agg_read_ref(&cfg, b, off, out_b, len);
            if (!why && (ra != 0 || rb != 0)) {
                why = "read return value";
            } else if (!why && memcmp(out_a, out_b, len)) {
                why = "read-out";
            } else if (!why && !guard_ok(out_a + len, GUARD)) {
                why = "read past the output";
            } else if (!why && memcmp(snap, a, n)) {
                why = "read changed the counters";
            }
        }
        if (why) {
            tap_diag("%s seed %u op %u: %s", impl, seed, op - 1, why);
        }
        TAP_CHECK(!why, "%s: seed %u: %u random writes+reads match the "
                  "reference (%s w%u tie %u T %u size %llu)", impl, seed,
                  OPS_PER_SEED, cfg.path == NFABRIC_PATH_GBINARY ?
                  "gbinary" : "gternary", cfg.width, cfg.tie, cfg.threshold,
                  (unsigned long long)cfg.size);
        free(a_buf);
        free(b_buf);
        free(snap);
    }
}

/* ---- Saturation ------------------------------------------------------- */

static bool all_counts(const NFabricAggCfg *cfg, const uint8_t *c,
                       int32_t v)
{
    for (uint64_t e = 0; e < nelems(cfg); e++) {
        if (nfabric_counter_get(c, cfg->width, e) != v) {
            return false;
        }
    }
    return true;
}

static void test_saturation(const char *impl, unsigned path, unsigned width)
{
    const char *pn = path == NFABRIC_PATH_GBINARY ? "gbinary" : "gternary";
    uint8_t up = path == NFABRIC_PATH_GBINARY ? 0xff : 0x55;
    uint8_t down = path == NFABRIC_PATH_GBINARY ? 0x00 : 0xff;
    NFabricAggCfg cfg = mkcfg(path, width, NFABRIC_TIE_NEGATIVE, 1, 83);
    uint8_t *c = ctr_alloc(&cfg);
    uint8_t ones[83], zeros[83];
    int32_t max = cmax(width), min = cmin(width);
    bool ok = true;

    memset(ones, up, sizeof(ones));
    memset(zeros, down, sizeof(zeros));
    for (int32_t i = 0; i < max + 4; i++) {
        ok &= nfabric_agg_write(&cfg, c, 0, ones, sizeof(ones)) == 0;
    }
    TAP_CHECK(ok && all_counts(&cfg, c, max),
              "%s: %s w%u: %d positive writes saturate at %d",
              impl, pn, width, max + 4, max);
    for (int32_t i = 0; i < 2 * (max + 3); i++) {
        ok &= nfabric_agg_write(&cfg, c, 0, zeros, sizeof(zeros)) == 0;
    }
    TAP_CHECK(ok && all_counts(&cfg, c, min),
              "%s: %s w%u: %d negative writes saturate at %d",
              impl, pn, width, 2 * (max + 3), min);
    nfabric_agg_write(&cfg, c, 0, ones, sizeof(ones));
    TAP_CHECK(all_counts(&cfg, c, min + 1) && guard_ok(c + ctr_bytes(&cfg),
                                                        GUARD),
              "%s: %s w%u: one positive write from %d gives %d",
              impl, pn, width, min, min + 1);
    free(c);
}

/* ---- Hand-checked figures --------------------------------------------- */

static void test_layout(const char *impl)
{
    NFabricAggCfg cfg;
    uint8_t *c, d;
    bool ok;

    /* G-Binary width 16: byte 3 = 0x01 -> element 24 +1, 25..31 -1. */
    cfg = mkcfg(NFABRIC_PATH_GBINARY, 16, NFABRIC_TIE_NEGATIVE, 1, 8);
    c = ctr_alloc(&cfg);
    d = 0x01;
    ok = nfabric_agg_write(&cfg, c, 3, &d, 1) == 0;
    for (size_t i = 0; i < ctr_bytes(&cfg); i++) {
        uint8_t want = i < 48 || i >= 64 ? 0 : i == 48 ? 1 : i == 49 ? 0
                                                                    : 0xff;
        ok &= c[i] == want;
    }
    TAP_CHECK(ok, "%s: gbinary w16 byte 3 = 0x01 -> counter bytes 48.. = "
              "01 00 ff ff ...", impl);
    free(c);

    /* G-Binary width 8: byte 2 = 0x80 -> elements 16..22 -1, 23 +1. */
    cfg = mkcfg(NFABRIC_PATH_GBINARY, 8, NFABRIC_TIE_NEGATIVE, 1, 8);
    c = ctr_alloc(&cfg);
    d = 0x80;
    ok = nfabric_agg_write(&cfg, c, 2, &d, 1) == 0;
    for (size_t i = 0; i < ctr_bytes(&cfg); i++) {
        ok &= c[i] == (i < 16 || i > 23 ? 0 : i == 23 ? 1 : 0xff);
    }
    TAP_CHECK(ok, "%s: gbinary w8 byte 2 = 0x80 -> counters 16..22 = -1, "
              "23 = +1", impl);
    free(c);

    /* G-Ternary width 16: byte 5 = 0x1b: codes 3,2,1,0 for elements 20..23. */
    cfg = mkcfg(NFABRIC_PATH_GTERNARY, 16, 0, 1, 8);
    c = ctr_alloc(&cfg);
    d = 0x1b;
    ok = nfabric_agg_write(&cfg, c, 5, &d, 1) == 1;
    for (size_t i = 0; i < ctr_bytes(&cfg); i++) {
        static const uint8_t want[8] = { 0xff, 0xff, 0, 0, 1, 0, 0, 0 };

        ok &= c[i] == (i >= 40 && i < 48 ? want[i - 40] : 0);
    }
    TAP_CHECK(ok, "%s: gternary w16 byte 5 = 0x1b -> counters 20..23 = "
              "-1 0 +1 0, 1 reserved", impl);
    free(c);

    /* G-Ternary width 8, odd offset and length: bytes 3..5. */
    cfg = mkcfg(NFABRIC_PATH_GTERNARY, 8, 0, 1, 8);
    c = ctr_alloc(&cfg);
    {
        static const uint8_t data[3] = { 0x01, 0xc0, 0x4c };
        static const int8_t want[12] = { 1, 0, 0, 0, 0, 0, 0, -1,
                                         0, -1, 0, 1 };

        ok = nfabric_agg_write(&cfg, c, 3, data, 3) == 0;
        for (size_t i = 0; i < ctr_bytes(&cfg); i++) {
            ok &= (int8_t)c[i] == (i >= 12 && i < 24 ? want[i - 12] : 0);
        }
    }
    TAP_CHECK(ok, "%s: gternary w8 bytes 3..5 = 01 c0 4c -> counters 12..23",
              impl);
    free(c);
}

static void test_ties_and_gate(const char *impl)
{
    static const int32_t pat[8] = { 0, 1, -1, 127, -128, 0, 5, -5 };
    static const int32_t tpat[8] = { 0, 4, 5, -4, -5, 6, -6, 127 };

    for (unsigned width = 8; width <= 16; width += 8) {
        NFabricAggCfg cfg = mkcfg(NFABRIC_PATH_GBINARY, width,
                                  NFABRIC_TIE_NEGATIVE, 1, 40);
        uint8_t *c = ctr_alloc(&cfg), *snap;
        uint8_t out[48];
        bool ok = true;

        /* All counts zero: the tie rule alone decides. */
        for (size_t len = 1; len <= 40; len += 13) {
            for (uint64_t off = 0; off + len <= 40; off += 7) {
                cfg.tie = NFABRIC_TIE_NEGATIVE;
                memset(out, 0x5a, sizeof(out));
                ok &= nfabric_agg_read(&cfg, c, off, out, len) == 0;
                for (size_t i = 0; i < len; i++) {
                    ok &= out[i] == 0x00;
                }
                cfg.tie = NFABRIC_TIE_POSITIVE;
                ok &= nfabric_agg_read(&cfg, c, off, out, len) == 0;
                for (size_t i = 0; i < len; i++) {
                    ok &= out[i] == 0xff;
                }
            }
        }
        TAP_CHECK(ok, "%s: gbinary w%u zero counts read 0x00 (tie negative) "
                  "and 0xff (tie positive)", impl, width);

        /* Counts 0 1 -1 max min 0 5 -5 per byte: 0x4a / 0x6b. */
        for (uint64_t e = 0; e < nelems(&cfg); e++) {
            int32_t v = pat[e % 8];

            v = v == 127 ? cmax(width) : v == -128 ? cmin(width) : v;
            nfabric_counter_set(c, width, e, v);
        }
        snap = malloc(ctr_bytes(&cfg));
        memcpy(snap, c, ctr_bytes(&cfg));
        ok = true;
        for (unsigned tie = 0; tie < 2; tie++) {
            cfg.tie = tie;
            ok &= nfabric_agg_read(&cfg, c, 1, out, 39) == 0;
            for (size_t i = 0; i < 39; i++) {
                ok &= out[i] == (tie ? 0x6b : 0x4a);
            }
        }
        TAP_CHECK(ok && !memcmp(snap, c, ctr_bytes(&cfg)),
                  "%s: gbinary w%u counts 0 1 -1 max min 0 5 -5 read 0x4a "
                  "(tie negative) / 0x6b (tie positive)", impl, width);
        free(snap);
        free(c);

        /* G-Ternary gate, T = 5: 0 4 5 -4 -5 6 -6 127 -> 0x10 0x77. */
        cfg = mkcfg(NFABRIC_PATH_GTERNARY, width, 0, 5, 41);
        c = ctr_alloc(&cfg);
        for (uint64_t e = 0; e < nelems(&cfg); e++) {
            nfabric_counter_set(c, width, e, tpat[e % 8]);
        }
        ok = nfabric_agg_read(&cfg, c, 2, out, 37) == 0;
        for (size_t i = 0; i < 37; i++) {
            ok &= out[i] == (i % 2 ? 0x77 : 0x10);
        }
        ok &= nfabric_agg_read(&cfg, c, 3, out, 1) == 0 && out[0] == 0x77;
        TAP_CHECK(ok, "%s: gternary w%u T=5 counts 0 4 5 -4 -5 6 -6 127 "
                  "read 0x10 0x77", impl, width);

        /* Threshold at the maximum: only saturated counts pass. */
        cfg.threshold = (uint32_t)cmax(width);
        for (uint64_t e = 0; e < nelems(&cfg); e++) {
            static const int32_t m[4] = { 1, -1, 0, 1 };
            int32_t v = (e / 4) % 2 ? m[e % 4] * (cmax(width) - 1)
                                    : m[e % 4] * cmax(width);

            nfabric_counter_set(c, width, e, e % 4 == 3 ? cmin(width) : v);
        }
        ok = nfabric_agg_read(&cfg, c, 0, out, 41) == 0;
        for (size_t i = 0; i < 41; i++) {
            /* max, -max, 0, min -> 01 11 00 11; max-1... -> 00 00 00 11 */
            ok &= out[i] == (i % 2 ? 0xc0 : 0xcd);
        }
        TAP_CHECK(ok, "%s: gternary w%u T=max gates max-1 and passes max, "
                  "-max, min", impl, width);
        free(c);
    }
}

/* Partial, unaligned, sub-word writes touch exactly the covered elements. */
static void test_coverage(const char *impl)
{
    for (unsigned path = NFABRIC_PATH_GBINARY; path <= NFABRIC_PATH_GTERNARY;
         path++) {
        for (unsigned width = 8; width <= 16; width += 8) {
            NFabricAggCfg cfg = mkcfg(path, width, 0, 1, 37);
            size_t n = ctr_bytes(&cfg);
            /* Exact size, no guard: sanitizer builds catch any overrun. */
            uint8_t *c = malloc(n);
            uint8_t *before = malloc(n);
            unsigned epb = path == NFABRIC_PATH_GBINARY ? 8 : 4;
            unsigned cases = 0, bad = 0;

            rng = 77 + path * 2 + width;
            for (uint64_t off = 0; off < 18; off++) {
                for (size_t len = 1; len <= 20; len++, cases++) {
                    uint8_t data[20];
                    int64_t r, reserved = 0;
                    bool ok = true;

                    for (uint64_t e = 0; e < nelems(&cfg); e++) {
                        nfabric_counter_set(c, width, e,
                                            (int32_t)rnd_below(101) - 50);
                    }
                    memcpy(before, c, n);
                    fill_data(data, len, false);
                    r = nfabric_agg_write(&cfg, c, off, data, len);
                    for (uint64_t e = 0; e < nelems(&cfg); e++) {
                        int32_t old = nfabric_counter_get(before, width, e);
                        int32_t now = nfabric_counter_get(c, width, e);
                        int32_t want = old;

                        if (e >= off * epb && e < (off + len) * epb) {
                            uint64_t i = e - off * epb;
                            unsigned code;

                            if (path == NFABRIC_PATH_GBINARY) {
                                want += (data[i / 8] >> (i % 8)) & 1 ? 1 : -1;
                            } else {
                                code = (data[i / 4] >> (2 * (i % 4))) & 3;
                                want += code == NFABRIC_TERN_PLUS ? 1 :
                                        code == NFABRIC_TERN_MINUS ? -1 : 0;
                                reserved += code == NFABRIC_TERN_RESERVED;
                            }
                        }
                        ok &= now == want;
                    }
                    ok &= r == reserved;
                    if (!ok && bad++ == 0) {
                        tap_diag("%s: path %u w%u off %llu len %zu wrong",
                                 impl, path, width, (unsigned long long)off,
                                 len);
                    }
                }
            }
            TAP_CHECK(bad == 0, "%s: %s w%u: %u partial/unaligned writes "
                      "change exactly the covered counters",
                      impl, path == NFABRIC_PATH_GBINARY ? "gbinary"
                                                         : "gternary",
                      width, cases);
            free(before);
            free(c);
        }
    }
}

static void test_reserved(const char *impl)
{
    for (unsigned width = 8; width <= 16; width += 8) {
        NFabricAggCfg cfg = mkcfg(NFABRIC_PATH_GTERNARY, width, 0, 1, 45);
        uint8_t *c = ctr_alloc(&cfg), *snap;
        uint8_t data[45];
        size_t n = ctr_bytes(&cfg);
        int64_t r;

        rng = 5 + width;
        fill_counts(&cfg, c);
        snap = malloc(n);
        memcpy(snap, c, n);
        memset(data, 0xaa, sizeof(data));
        r = nfabric_agg_write(&cfg, c, 0, data, 45);
        TAP_CHECK(r == 180 && !memcmp(snap, c, n),
                  "%s: gternary w%u: 45 bytes of reserved codes count 180 "
                  "and add nothing (got %lld)", impl, width, (long long)r);
        memset(data, 0x00, sizeof(data));
        r = nfabric_agg_write(&cfg, c, 0, data, 45);
        TAP_CHECK(r == 0 && !memcmp(snap, c, n),
                  "%s: gternary w%u: zero codes add nothing", impl, width);
        /* 0x22 = reserved, zero, reserved, zero; 0xa6 = 2 1 2 2 */
        data[0] = 0x22;
        data[1] = 0xa6;
        r = nfabric_agg_write(&cfg, c, 7, data, 2);
        TAP_CHECK(r == 5 && nfabric_counter_get(c, width, 33) ==
                  (nfabric_counter_get(snap, width, 33) == cmax(width) ?
                   cmax(width) : nfabric_counter_get(snap, width, 33) + 1),
                  "%s: gternary w%u: mixed bytes 22 a6 count 5 reserved",
                  impl, width);
        free(snap);
        free(c);
    }
}

static void test_ranges(const char *impl)
{
    static const struct {
        uint64_t off;
        size_t len;
    } bad[] = {
        { 100, 1 }, { 99, 2 }, { 0, 101 }, { 101, 0 }, { UINT64_MAX, 1 },
        { 1, SIZE_MAX }, { UINT64_MAX, SIZE_MAX }, { 64, SIZE_MAX - 63 },
        { UINT64_MAX - 5, 10 },
    };

    for (unsigned path = NFABRIC_PATH_GBINARY; path <= NFABRIC_PATH_GTERNARY;
         path++) {
        NFabricAggCfg cfg = mkcfg(path, 16, 0, 3, 100);
        uint8_t *c = ctr_alloc(&cfg), *snap;
        uint8_t data[128], out[128];
        size_t n = ctr_bytes(&cfg);
        bool ok = true;

        rng = 11;
        fill_counts(&cfg, c);
        snap = malloc(n);
        memcpy(snap, c, n);
        memset(data, 0x6d, sizeof(data));
        for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
            memset(out, GUARD_BYTE, sizeof(out));
            ok &= nfabric_agg_write(&cfg, c, bad[i].off, data,
                                    bad[i].len) == -1;
            ok &= nfabric_agg_write_ref(&cfg, c, bad[i].off, data,
                                        bad[i].len) == -1;
            ok &= nfabric_agg_read(&cfg, c, bad[i].off, out,
                                   bad[i].len) == -1;
            ok &= nfabric_agg_read_ref(&cfg, c, bad[i].off, out,
                                       bad[i].len) == -1;
            ok &= guard_ok(out, sizeof(out));
        }
        TAP_CHECK(ok && !memcmp(snap, c, n) && guard_ok(c + n, GUARD),
                  "%s: path %u: out-of-window and wrapping ranges refused, "
                  "nothing changed", impl, path);

        ok = nfabric_agg_write(&cfg, c, 100, data, 0) == 0 &&
             nfabric_agg_read(&cfg, c, 100, out, 0) == 0 &&
             nfabric_agg_write(&cfg, c, 0, data, 0) == 0;
        TAP_CHECK(ok && !memcmp(snap, c, n),
                  "%s: path %u: empty accesses inside the window are no-ops",
                  impl, path);

        /* The last byte of the window. */
        ok = nfabric_agg_write(&cfg, c, 99, data, 1) >= 0 &&
             nfabric_agg_read(&cfg, c, 99, out, 1) == 0;
        TAP_CHECK(ok && !memcmp(snap, c, n - (path == NFABRIC_PATH_GBINARY ?
                                              16 : 8)),
                  "%s: path %u: the window's last byte is accepted", impl,
                  path);

        /* A configuration nfabric_agg_check refuses is refused here too. */
        memcpy(c, snap, n);
        cfg.width = 32;
        ok = nfabric_agg_write(&cfg, c, 0, data, 1) == -1 &&
             nfabric_agg_read(&cfg, c, 0, out, 1) == -1 &&
             nfabric_agg_write_ref(&cfg, c, 0, data, 1) == -1;
        cfg.width = 16;
        cfg.path = NFABRIC_PATH_FP32;
        ok &= nfabric_agg_write(&cfg, c, 0, data, 1) == -1;
        TAP_CHECK(ok && !memcmp(snap, c, n),
                  "%s: path %u: invalid configurations refused", impl, path);
        free(snap);
        free(c);
    }
}

/* ---- Configuration checks and selection (once) ------------------------- */

static void test_check(void)
{
    static const struct {
        unsigned path, width, tie;
        uint32_t t;
        unsigned want;
    } cases[] = {
        { NFABRIC_PATH_GBINARY, 8, 0, 0, NFABRIC_ERR_NONE },
        { NFABRIC_PATH_GBINARY, 16, 1, 0, NFABRIC_ERR_NONE },
        { NFABRIC_PATH_GBINARY, 16, 2, 0, NFABRIC_ERR_TIE },
        { NFABRIC_PATH_GBINARY, 8, 15, 5, NFABRIC_ERR_TIE },
        { NFABRIC_PATH_GBINARY, 32, 0, 0, NFABRIC_ERR_WIDTH },
        { NFABRIC_PATH_GBINARY, 0, 0, 0, NFABRIC_ERR_WIDTH },
        { NFABRIC_PATH_GBINARY, 4, 9, 0, NFABRIC_ERR_WIDTH },
        { NFABRIC_PATH_GTERNARY, 8, 0, 1, NFABRIC_ERR_NONE },
        { NFABRIC_PATH_GTERNARY, 8, 7, 127, NFABRIC_ERR_NONE },
        { NFABRIC_PATH_GTERNARY, 8, 0, 128, NFABRIC_ERR_THRESHOLD },
        { NFABRIC_PATH_GTERNARY, 8, 0, 0, NFABRIC_ERR_THRESHOLD },
        { NFABRIC_PATH_GTERNARY, 16, 0, 32767, NFABRIC_ERR_NONE },
        { NFABRIC_PATH_GTERNARY, 16, 0, 32768, NFABRIC_ERR_THRESHOLD },
        { NFABRIC_PATH_GTERNARY, 16, 0, UINT32_MAX, NFABRIC_ERR_THRESHOLD },
        { NFABRIC_PATH_GTERNARY, 12, 0, 1, NFABRIC_ERR_WIDTH },
        { NFABRIC_PATH_FP32, 8, 0, 1, NFABRIC_ERR_PATH },
        { NFABRIC_NUM_PATHS, 8, 0, 1, NFABRIC_ERR_PATH },
        { 0xffffffffu, 99, 99, 0, NFABRIC_ERR_PATH },
    };

    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        NFabricAggCfg cfg = mkcfg(cases[i].path, cases[i].width, cases[i].tie,
                                  cases[i].t, 64);
        unsigned got = nfabric_agg_check(&cfg);

        TAP_CHECK(got == cases[i].want, "check path %u width %u tie %u T %u "
                  "-> %u (got %u)", cases[i].path, cases[i].width,
                  cases[i].tie, cases[i].t, cases[i].want, got);
    }
}

static void test_counter_access(void)
{
    uint8_t c[8] = { 0 };

    nfabric_counter_set(c, 16, 1, -2);
    nfabric_counter_set(c, 16, 2, 40000);
    nfabric_counter_set(c, 8, 0, -300);
    TAP_CHECK(c[0] == 0x80 && c[2] == 0xfe && c[3] == 0xff &&
              c[4] == 0xff && c[5] == 0x7f &&
              nfabric_counter_get(c, 16, 1) == -2 &&
              nfabric_counter_get(c, 16, 2) == 32767 &&
              nfabric_counter_get(c, 8, 0) == -128 &&
              nfabric_counter_get(c, 8, 5) == 127,
              "counter get/set: little-endian, clamped");
}

static void test_selection(void)
{
    NFabricImpl best = NFABRIC_IMPL_PORTABLE;

    TAP_CHECK(nfabric_engine_supported(NFABRIC_IMPL_AUTO) &&
              nfabric_engine_supported(NFABRIC_IMPL_PORTABLE) &&
              !nfabric_engine_supported(NFABRIC_IMPL_COUNT),
              "auto and portable supported, COUNT not");
    for (int i = NFABRIC_IMPL_PORTABLE; i < NFABRIC_IMPL_COUNT; i++) {
        if (nfabric_engine_supported((NFabricImpl)i)) {
            best = (NFabricImpl)i;
        }
    }
    TAP_CHECK(nfabric_engine_active() == best,
              "default implementation is the best supported (%s)",
              nfabric_engine_impl_name(best));
    TAP_CHECK(nfabric_engine_select(NFABRIC_IMPL_PORTABLE) &&
              nfabric_engine_active() == NFABRIC_IMPL_PORTABLE,
              "select portable");
    TAP_CHECK(!nfabric_engine_select(NFABRIC_IMPL_COUNT) &&
              !nfabric_engine_select((NFabricImpl)99) &&
              nfabric_engine_active() == NFABRIC_IMPL_PORTABLE,
              "unknown implementations refused, selection unchanged");
    for (int i = NFABRIC_IMPL_SSE2; i < NFABRIC_IMPL_COUNT; i++) {
        if (!nfabric_engine_supported((NFabricImpl)i)) {
            TAP_CHECK(!nfabric_engine_select((NFabricImpl)i) &&
                      nfabric_engine_active() == NFABRIC_IMPL_PORTABLE,
                      "unsupported %s refused",
                      nfabric_engine_impl_name((NFabricImpl)i));
        }
    }
    TAP_CHECK(nfabric_engine_select(NFABRIC_IMPL_AUTO) &&
              nfabric_engine_active() == best, "select auto -> %s",
              nfabric_engine_impl_name(best));
    TAP_CHECK(!strcmp(nfabric_engine_impl_name(NFABRIC_IMPL_PORTABLE),
                      "portable") &&
              !strcmp(nfabric_engine_impl_name(NFABRIC_IMPL_SSE2), "sse2") &&
              !strcmp(nfabric_engine_impl_name(NFABRIC_IMPL_AVX2), "avx2") &&
              !strcmp(nfabric_engine_impl_name(NFABRIC_IMPL_AUTO), "auto") &&
              nfabric_engine_impl_name(NFABRIC_IMPL_COUNT) != NULL,
              "implementation names");
#if defined(__x86_64__) && !defined(NFABRIC_ENGINE_GENERIC)
    TAP_CHECK(nfabric_engine_supported(NFABRIC_IMPL_SSE2),
              "x86-64: sse2 supported");
#endif
}

int main(void)
{
    test_check();
    test_counter_access();
    test_selection();
    for (int i = NFABRIC_IMPL_PORTABLE; i < NFABRIC_IMPL_COUNT; i++) {
        const char *impl = nfabric_engine_impl_name((NFabricImpl)i);

        if (!nfabric_engine_supported((NFabricImpl)i)) {
            tap_diag("%s: not supported on this host, skipped", impl);
            continue;
        }
        TAP_CHECK(nfabric_engine_select((NFabricImpl)i) &&
                  nfabric_engine_active() == (NFabricImpl)i, "select %s",
                  impl);
        test_random(impl);
        for (unsigned p = NFABRIC_PATH_GBINARY; p <= NFABRIC_PATH_GTERNARY;
             p++) {
            test_saturation(impl, p, 8);
            test_saturation(impl, p, 16);
        }
        test_layout(impl);
        test_ties_and_gate(impl);
        test_coverage(impl);
        test_reserved(impl);
        test_ranges(impl);
    }
    nfabric_engine_select(NFABRIC_IMPL_AUTO);
    return tap_done();
}
