/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * nfabric-bench-engine: update throughput of the aggregation engine.
 *
 * For G-Binary and G-Ternary, 64-byte lines and 8-byte accesses, counter
 * widths 8 and 16, it measures every implementation the host supports, the
 * scalar reference (nfabric_agg_write_ref) and memcpy of the counter bytes
 * each access updates.  The window holds 64 KiB of packed data (512 KiB of
 * counters for G-Binary at width 8), swept in order, so the counters live
 * in L2/L3, not L1.  Each figure is the best of 3 runs of a fixed time
 * budget (--time, 0.1 s by default), the contenders taking turns.
 * Output: key=value lines.
 *
 *   usage: nfabric-bench-engine [--time=SECONDS_PER_RUN] [--window=BYTES]
 *
 * A benchmark, not a test: the figures depend on the machine.
 */
#define _POSIX_C_SOURCE 200809L

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "hw/mem/nfabric_engine.h"

#define RUNS                3
#define TARGET_VS_SCALAR    4.0
#define TARGET_VS_MEMCPY    0.25

enum { KIND_ENGINE, KIND_SCALAR, KIND_MEMCPY };

typedef struct Bench {
    NFabricAggCfg cfg;
    uint8_t *ctr;
    uint8_t *src;           /* memcpy source, as large as the counters */
    uint8_t *input;         /* cfg.size bytes of packed data */
    size_t access;          /* bytes per access */
    size_t ctr_per_access;  /* counter bytes one access updates */
} Bench;

static double run_s = 0.1;
static uint64_t window = 64 * 1024;
static volatile uint64_t sink;

static double now(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static void *xmalloc(size_t n)
{
    void *p = aligned_alloc(64, (n + 63) & ~(size_t)63);

    if (!p) {
        fprintf(stderr, "out of memory\n");
        exit(1);
    }
    return p;
}

/* One sweep over the window, access by access. */
static void sweep(Bench *b, int kind)
{
    size_t n = (size_t)b->cfg.size / b->access;
    int64_t acc = 0;

    switch (kind) {
    case KIND_ENGINE:
        for (size_t i = 0; i < n; i++) {
            uint64_t off = (uint64_t)i * b->access;

            acc += nfabric_agg_write(&b->cfg, b->ctr, off, b->input + off,
                                     b->access);
        }
        break;
    case KIND_SCALAR:
        for (size_t i = 0; i < n; i++) {
            uint64_t off = (uint64_t)i * b->access;

            acc += nfabric_agg_write_ref(&b->cfg, b->ctr, off,
                                         b->input + off, b->access);
        }
        break;
    default:
        for (size_t i = 0; i < n; i++) {
            size_t c = i * b->ctr_per_access;

            memcpy(b->ctr + c, b->src + c, b->ctr_per_access);
        }
        break;
    }
    sink += (uint64_t)acc;
}

/* Accesses per second of one run of run_s seconds. */
static double measure_once(Bench *b, int kind)
{
    size_t per_sweep = (size_t)b->cfg.size / b->access;
    double t0 = now(), t;
    uint64_t sweeps = 0;

    do {
        sweep(b, kind);
        sweeps++;
        t = now() - t0;
    } while (t < run_s);
    return sweeps * per_sweep / t;
}

static void bench_init(Bench *b, unsigned path, unsigned width, size_t access)
{
    size_t cbytes;

    memset(b, 0, sizeof(*b));
    b->cfg.path = path;
    b->cfg.width = width;
    b->cfg.tie = NFABRIC_TIE_NEGATIVE;
    b->cfg.threshold = 1;
    b->cfg.size = window;
    b->access = access;
    b->ctr_per_access = (size_t)nfabric_counter_bytes(path, width, access);
    cbytes = (size_t)nfabric_counter_bytes(path, width, window);
    b->ctr = xmalloc(cbytes);
    b->src = xmalloc(cbytes);
    b->input = xmalloc(window);
    memset(b->ctr, 0, cbytes);
    memset(b->src, 0x11, cbytes);
    srand(1);
    for (uint64_t i = 0; i < window; i++) {
        uint8_t v = (uint8_t)(rand() >> 4);

        if (path == NFABRIC_PATH_GTERNARY) {
            /* Valid codes only: 0, +1, -1 with equal odds. */
            static const uint8_t code[3] = { 0, 1, 3 };

            v = 0;
            for (unsigned k = 0; k < 4; k++) {
                v |= code[(rand() >> 4) % 3] << (2 * k);
            }
        }
        b->input[i] = v;
    }
}

static void bench_free(Bench *b)
{
    for (size_t i = 0; i < (size_t)nfabric_counter_bytes(b->cfg.path,
                                                         b->cfg.width,
                                                         window); i += 61) {
        sink += b->ctr[i];
    }
    free(b->ctr);
    free(b->src);
    free(b->input);
}

typedef struct Result {
    double engine;          /* accesses/s of the dispatched engine */
    double scalar;
    double memcpy_;
} Result;

static void print_rate(const char *key, const char *who, const Bench *b,
                       double aps)
{
    unsigned epb = b->cfg.path == NFABRIC_PATH_GBINARY ? 8 : 4;

    printf("%s_%s_gbps=%.3f\n", key, who, aps * b->access / 1e9);
    printf("%s_%s_elems_per_s=%.4g\n", key, who, aps * b->access * epb);
}

/*
 * Every implementation, the scalar reference and memcpy take turns, RUNS
 * rounds, best run kept: the ratios compare runs made under the same load.
 */
static Result run_case(const char *key, unsigned path, unsigned width,
                       size_t access, NFabricImpl active)
{
    double best[NFABRIC_IMPL_COUNT + 2] = { 0 };
    const int scalar = NFABRIC_IMPL_COUNT, mcpy = NFABRIC_IMPL_COUNT + 1;
    Result r;
    Bench b;

    bench_init(&b, path, width, access);
    for (int round = 0; round < RUNS; round++) {
        for (int i = NFABRIC_IMPL_PORTABLE; i <= mcpy; i++) {
            double aps;

            if (i < NFABRIC_IMPL_COUNT) {
                if (!nfabric_engine_select((NFabricImpl)i)) {
                    continue;
                }
                aps = measure_once(&b, KIND_ENGINE);
            } else {
                aps = measure_once(&b, i == scalar ? KIND_SCALAR
                                                   : KIND_MEMCPY);
            }
            if (aps > best[i]) {
                best[i] = aps;
            }
        }
    }
    nfabric_engine_select(NFABRIC_IMPL_AUTO);
    for (int i = NFABRIC_IMPL_PORTABLE; i < NFABRIC_IMPL_COUNT; i++) {
        if (best[i] > 0) {
            print_rate(key, nfabric_engine_impl_name((NFabricImpl)i), &b,
                       best[i]);
        }
    }
    r.engine = best[active];
    r.scalar = best[scalar];
    r.memcpy_ = best[mcpy];
    print_rate(key, "engine", &b, r.engine);
    print_rate(key, "scalar", &b, r.scalar);
    print_rate(key, "memcpy", &b, r.memcpy_);
    printf("%s_memcpy_counter_gbps=%.3f\n", key,
           r.memcpy_ * b.ctr_per_access / 1e9);
    printf("%s_engine_counter_gbps=%.3f\n", key,
           r.engine * b.ctr_per_access / 1e9);
    printf("%s_vs_scalar=%.2f\n", key, r.engine / r.scalar);
    printf("%s_vs_memcpy=%.3f\n", key, r.engine / r.memcpy_);
    fflush(stdout);
    bench_free(&b);
    return r;
}

int main(int argc, char **argv)
{
    NFabricImpl active;
    Result bl8;
    double vs_scalar, vs_memcpy;
    bool meets;

    for (int i = 1; i < argc; i++) {
        if (!strncmp(argv[i], "--time=", 7)) {
            run_s = atof(argv[i] + 7);
        } else if (!strncmp(argv[i], "--window=", 9)) {
            window = strtoull(argv[i] + 9, NULL, 0);
        } else {
            bool help = !strcmp(argv[i], "--help") || !strcmp(argv[i], "-h");

            fprintf(help ? stdout : stderr, "usage: %s [--time=SECONDS_PER_RUN]"
                    " [--window=BYTES]\n", argv[0]);
            return help ? 0 : 2;
        }
    }
    if (run_s <= 0 || window < 64 || window % 64) {
        fprintf(stderr, "bad --time or --window (a multiple of 64)\n");
        return 2;
    }

    nfabric_engine_select(NFABRIC_IMPL_AUTO);
    active = nfabric_engine_active();
    printf("engine_impl=%s\n", nfabric_engine_impl_name(active));
    printf("impls=");
    for (int i = NFABRIC_IMPL_PORTABLE, n = 0; i < NFABRIC_IMPL_COUNT; i++) {
        if (nfabric_engine_supported((NFabricImpl)i)) {
            printf("%s%s", n++ ? "," : "",
                   nfabric_engine_impl_name((NFabricImpl)i));
        }
    }
    printf("\nwindow_bytes=%llu\n", (unsigned long long)window);
    printf("run_s=%.3f\nruns=%d\n", run_s, RUNS);

    /* Width 8 carries the headline ratios; _w16 keys for width 16. */
    bl8 = run_case("gbinary_line", NFABRIC_PATH_GBINARY, 8, 64, active);
    run_case("gbinary_line_w16", NFABRIC_PATH_GBINARY, 16, 64, active);
    run_case("gternary_line", NFABRIC_PATH_GTERNARY, 8, 64, active);
    run_case("gternary_line_w16", NFABRIC_PATH_GTERNARY, 16, 64, active);
    run_case("gbinary_word", NFABRIC_PATH_GBINARY, 8, 8, active);
    run_case("gternary_word", NFABRIC_PATH_GTERNARY, 8, 8, active);

    vs_scalar = bl8.engine / bl8.scalar;
    vs_memcpy = bl8.engine / bl8.memcpy_;
    meets = vs_scalar >= TARGET_VS_SCALAR && vs_memcpy >= TARGET_VS_MEMCPY;
    printf("target_gbinary_line_vs_scalar=%g\n", TARGET_VS_SCALAR);
    printf("target_gbinary_line_vs_memcpy=%g\n", TARGET_VS_MEMCPY);
    printf("meets_targets=%s\n", meets ? "yes" : "no");
    printf("sink=%llu\n", (unsigned long long)(sink & 0xffff));
    return 0;
}
