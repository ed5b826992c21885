/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * nfabric-bench: guest user-space throughput of 8-byte writes and reads
 * through the dax mapping, per path.  key=value lines on stdout.
 *
 *   nfabric-bench [--stock] [--bytes N] [--reps R] [PATH...]
 *
 * PATH: plain (no window), fp32, gbinary, gternary (default: all four; with
 * --stock, a device without registers such as cxl-type3: plain only).
 * Each figure is the best of R passes over N bytes (default 4 MiB, 3).
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "libnfabric.h"

#define BENCH_DATA     (64ull << 20)    /* DPA offset of the data */
#define BENCH_COUNTERS (128ull << 20)   /* and of the counters */

static double now(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

static void usage(FILE *f)
{
    fprintf(f, "usage: nfabric-bench [--stock] [--bytes N] [--reps R] "
               "[plain|fp32|gbinary|gternary ...]\n");
}

static int bench(nfabric_dev *d, const char *name, int path, uint64_t bytes,
                 unsigned reps)
{
    volatile uint64_t *p;
    double best_w = 1e30, best_r = 1e30;
    uint64_t sink = 0, words = bytes / 8;
    int rc;

    if (path >= 0) {
        nfabric_win_cfg c = {
            .base = nfabric_map_dpa(d) + BENCH_DATA, .size = bytes,
            .counters = nfabric_map_dpa(d) + BENCH_COUNTERS, .path = (unsigned)path,
            .width = 8, .tie = NFABRIC_TIE_NEGATIVE, .threshold = 1,
        };

        nfabric_windows_reset(d);
        rc = nfabric_window_set(d, 0, &c);
        if (rc) {
            fprintf(stderr, "nfabric-bench: %s window: %s\n", name, nfabric_errmsg(d));
            return 1;
        }
    } else if (nfabric_regs_map(d)) {
        nfabric_windows_reset(d);
    }
    p = nfabric_dpa_ptr(d, nfabric_map_dpa(d) + BENCH_DATA, bytes);
    if (!p || (path > 0 && !nfabric_dpa_ptr(d, nfabric_map_dpa(d) + BENCH_COUNTERS,
                                            nfabric_counter_bytes((unsigned)path, 8, bytes)))) {
        fprintf(stderr, "nfabric-bench: device memory too small for %" PRIu64 " bytes\n",
                bytes);
        return 1;
    }
    for (unsigned r = 0; r < reps; r++) {
        double t0 = now(), t;

        for (uint64_t i = 0; i < words; i++) {
            p[i] = i * 0x9e3779b97f4a7c15ull;
        }
        t = now() - t0;
        best_w = t < best_w ? t : best_w;
        t0 = now();
        for (uint64_t i = 0; i < words; i++) {
            sink += p[i];
        }
        t = now() - t0;
        best_r = t < best_r ? t : best_r;
    }
    printf("%s_write_MBps=%.2f\n%s_read_MBps=%.2f\n", name, bytes / best_w / 1e6,
           name, bytes / best_r / 1e6);
    printf("%s_write_ns_per_access=%.1f\n%s_read_ns_per_access=%.1f\n", name,
           best_w * 1e9 / words, name, best_r * 1e9 / words);
    fflush(stdout);
    if (path >= 0) {
        nfabric_window_disable(d, 0);
    }
    return sink == 1 ? 2 : 0;   /* keep the reads */
}

int main(int argc, char **argv)
{
    static const char *const all[] = { "plain", "fp32", "gbinary", "gternary" };
    const char *names[8];
    unsigned n = 0, reps = 3;
    uint64_t bytes = 4u << 20;
    bool stock = false;
    nfabric_dev *d;
    int rc = 0;

    for (int a = 1; a < argc; a++) {
        char *end;

        if (!strcmp(argv[a], "--help") || !strcmp(argv[a], "-h")) {
            usage(stdout);
            return 0;
        } else if (!strcmp(argv[a], "--stock")) {
            stock = true;
        } else if (!strcmp(argv[a], "--bytes") && a + 1 < argc) {
            bytes = strtoull(argv[++a], &end, 0);
            if (*end || !bytes || bytes % 64 || bytes > (32u << 20)) {
                fprintf(stderr, "nfabric-bench: --bytes must be a multiple of 64, at most 32 MiB\n");
                return 2;
            }
        } else if (!strcmp(argv[a], "--reps") && a + 1 < argc) {
            reps = (unsigned)strtoul(argv[++a], &end, 0);
            if (*end || !reps || reps > 100) {
                fprintf(stderr, "nfabric-bench: --reps must be 1..100\n");
                return 2;
            }
        } else if (n < 8 && (!strcmp(argv[a], "plain") || nfabric_path_parse(argv[a]) >= 0) &&
                   strspn(argv[a], "0123456789") == 0) {
            names[n++] = argv[a];
        } else {
            fprintf(stderr, "nfabric-bench: bad argument \"%s\"\n", argv[a]);
            usage(stderr);
            return 2;
        }
    }
    if (!n) {
        for (unsigned i = 0; i < (stock ? 1u : 4u); i++) {
            names[n++] = all[i];
        }
    }
    d = nfabric_new();
    if (!d) {
        fprintf(stderr, "nfabric-bench: %s\n", strerror(ENOMEM));
        return 1;
    }
    rc = nfabric_open(d, stock ? NFABRIC_OPEN_NO_REGS : 0);
    if (rc) {
        fprintf(stderr, "nfabric-bench: %s\n", nfabric_errmsg(d));
        nfabric_free(d);
        return 1;
    }
    printf("bench_bytes=%" PRIu64 "\nbench_reps=%u\nbench_device=%s\n", bytes, reps,
           stock ? "stock" : "neuron-fabric");
    for (unsigned i = 0; i < n && !rc; i++) {
        int path = strcmp(names[i], "plain") ? nfabric_path_parse(names[i]) : -1;

        if (path >= 0 && !nfabric_regs_map(d)) {
            fprintf(stderr, "nfabric-bench: %s needs the register block (not --stock)\n",
                    names[i]);
            rc = 1;
            break;
        }
        rc = bench(d, stock ? "stock" : names[i], path, bytes, reps);
    }
    nfabric_free(d);
    return rc;
}
