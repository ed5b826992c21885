/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * nfabric-bench: guest user-space throughput through the dax mapping, per
 * path, with two access patterns: 8-byte words (write, read) and memcpy of
 * 4 KiB blocks (to the device, from it).  key=value lines on stdout.
 *
 *   nfabric-bench [--stock] [--bytes N] [--reps R] [--label L] [PATH...]
 *
 * PATH: plain (no window), fp32, gbinary, gternary, gbinary_posted,
 * gternary_posted (posted windows, register version 1.7), ram (the guest's
 * own memory, the baseline; default: all seven where the head has staging
 * memory, else all but the posted two; with --stock, a device without
 * registers such as cxl-type3: plain and ram).  A posted window's
 * NAME_write and NAME_read are its stores and loads, as the other paths'
 * (the read after a FETCH: the read-back of a round); the device's work
 * is in NAME_post_MBps and NAME_fetch_MBps (the doorbells alone),
 * NAME_contribute_MBps (stores, then POST), NAME_readback_MBps (FETCH,
 * then loads) and NAME_round_MBps: one round of one head, everything
 * (stores, POST, ROUND_COMPLETE, the wait, FETCH, loads); NAME_memcpy*
 * include the doorbells.  Each figure is the best of
 * R passes over N bytes (default 4 MiB, 3).  For ram, --label L names the
 * figures L_* instead of ram_* and the NUMA node of its pages is reported
 * (L_pages_node, L_pages_on_node): run under nfabric-membind to measure
 * memory of one node, e.g. CXL memory onlined as System RAM.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "libnfabric.h"

#define BENCH_DATA     (64ull << 20)    /* DPA offset of the data */
#define BENCH_COUNTERS (128ull << 20)   /* and of the counters */
#define BENCH_BLOCK    4096u            /* memcpy block */

static double now(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

static void usage(FILE *f)
{
    fprintf(f, "usage: nfabric-bench [--stock] [--bytes N] [--reps R] [--label L] "
               "[plain|fp32|gbinary|gternary|gbinary_posted|gternary_posted|ram ...]\n");
}

/*
 * Best times over reps passes of: 8-byte stores over [p, p + bytes), 8-byte
 * loads, memcpy of BENCH_BLOCK blocks into it from a buffer, memcpy out of
 * it.  Prints NAME_{write,read,memcpy,memcpy_read}_MBps.  Returns a value
 * that depends on every load, so that none is left out.
 */
static uint64_t measure(const char *name, volatile uint64_t *p, uint64_t bytes,
                        unsigned reps)
{
    static uint8_t buf[BENCH_BLOCK] __attribute__((aligned(64)));
    double best_w = 1e30, best_r = 1e30, best_cw = 1e30, best_cr = 1e30;
    uint64_t sink = 0, words = bytes / 8;
    uint8_t *b = (uint8_t *)p;

    for (unsigned i = 0; i < BENCH_BLOCK; i++) {
        buf[i] = (uint8_t)(i * 7 + 1);
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
        t0 = now();
        for (uint64_t o = 0; o + BENCH_BLOCK <= bytes; o += BENCH_BLOCK) {
            memcpy(b + o, buf, BENCH_BLOCK);
        }
        __asm__ volatile("" ::: "memory");
        t = now() - t0;
        best_cw = t < best_cw ? t : best_cw;
        t0 = now();
        for (uint64_t o = 0; o + BENCH_BLOCK <= bytes; o += BENCH_BLOCK) {
            memcpy(buf, b + o, BENCH_BLOCK);
            sink += buf[o / BENCH_BLOCK % BENCH_BLOCK];
        }
        t = now() - t0;
        best_cr = t < best_cr ? t : best_cr;
    }
    printf("%s_write_MBps=%.2f\n%s_read_MBps=%.2f\n", name, bytes / best_w / 1e6,
           name, bytes / best_r / 1e6);
    printf("%s_write_ns_per_access=%.1f\n%s_read_ns_per_access=%.1f\n", name,
           best_w * 1e9 / words, name, best_r * 1e9 / words);
    printf("%s_memcpy_MBps=%.2f\n%s_memcpy_read_MBps=%.2f\n", name,
           bytes / best_cw / 1e6, name, bytes / best_cr / 1e6);
    fflush(stdout);
    return sink;
}

/*
 * The NUMA node most of [p, p + bytes)'s pages are on, and how many are
 * (get_mempolicy(MPOL_F_NODE | MPOL_F_ADDR) per page); -1 if unknown.
 */
static int pages_node(const void *p, uint64_t bytes, uint64_t *on, uint64_t *total)
{
    uint64_t count[64] = { 0 };
    int best = -1;

    *on = *total = 0;
    for (uint64_t o = 0; o < bytes; o += 4096) {
        int node = -1;

        (*total)++;
        if (syscall(SYS_get_mempolicy, &node, NULL, 0UL, (const char *)p + o,
                    3UL /* MPOL_F_NODE | MPOL_F_ADDR */) == 0 &&
            node >= 0 && node < 64) {
            count[node]++;
        }
    }
    for (int n = 0; n < 64; n++) {
        if (count[n] && (best < 0 || count[n] > count[best])) {
            best = n;
        }
    }
    *on = best >= 0 ? count[best] : 0;
    return best;
}

/* The guest's own memory, touched first: the baseline of the figures. */
static int bench_ram(const char *label, uint64_t bytes, unsigned reps)
{
    uint64_t *p, on, total;
    int node;

    if (posix_memalign((void **)&p, 4096, bytes)) {
        fprintf(stderr, "nfabric-bench: no %" PRIu64 " bytes of guest RAM\n", bytes);
        return 1;
    }
    memset(p, 0, bytes);
    node = pages_node(p, bytes, &on, &total);
    printf("%s_pages_node=%d\n%s_pages_on_node=%" PRIu64 "/%" PRIu64 "\n", label, node,
           label, on, total);
    if (measure(label, p, bytes, reps) == 1) {
        printf("# unlikely sum\n");
    }
    free(p);
    return 0;
}

static double best_of(double best, double t0)
{
    double t = now() - t0;

    return t < best ? t : best;
}

#define BENCH_CHECK(call, what) \
    do { \
        if ((call) != 0) { \
            fprintf(stderr, "nfabric-bench: %s: %s: %s\n", name, what, \
                    nfabric_errmsg(d)); \
            return 1; \
        } \
    } while (0)

/*
 * A posted window (window 0) of path over [p, p + bytes): the figures of
 * the header comment, best of reps, the counts cleared before each pass.
 */
static int bench_posted(nfabric_dev *d, const char *name, unsigned path,
                        volatile uint64_t *p, uint64_t bytes, unsigned reps)
{
    static uint8_t buf[BENCH_BLOCK] __attribute__((aligned(64)));
    double w = 1e30, st = 1e30, r = 1e30, ld = 1e30, rd = 1e30, post = 1e30;
    double fetch = 1e30, cw = 1e30, cr = 1e30;
    uint64_t sink = 0, words = bytes / 8;
    uint8_t *b = (uint8_t *)p;
    nfabric_round rnd;

    for (unsigned i = 0; i < BENCH_BLOCK; i++) {
        buf[i] = (uint8_t)(i * 7 + 1);
    }
    for (unsigned k = 0; k < reps; k++) {
        double t0, t1;

        BENCH_CHECK(nfabric_window_clear(d, 0), "clear");
        t0 = now();
        for (uint64_t i = 0; i < words; i++) {
            p[i] = i * 0x9e3779b97f4a7c15ull;
        }
        st = best_of(st, t0);
        t1 = now();
        BENCH_CHECK(nfabric_window_post(d, 0, 0, bytes), "POST");
        post = best_of(post, t1);
        w = best_of(w, t0);

        t0 = now();
        BENCH_CHECK(nfabric_window_fetch(d, 0, 0, bytes), "FETCH");
        fetch = best_of(fetch, t0);
        t1 = now();
        for (uint64_t i = 0; i < words; i++) {
            sink += p[i];
        }
        ld = best_of(ld, t1);
        r = best_of(r, t0);

        /* One round of this head alone: write, complete, wait, read. */
        BENCH_CHECK(nfabric_window_clear(d, 0), "clear");
        BENCH_CHECK(nfabric_round_read(d, 0, &rnd), "round");
        t0 = now();
        for (uint64_t i = 0; i < words; i++) {
            p[i] = i * 0x9e3779b97f4a7c15ull + k;
        }
        BENCH_CHECK(nfabric_window_post(d, 0, 0, bytes), "POST");
        BENCH_CHECK(nfabric_round_complete(d, 0, rnd.seq), "complete");
        BENCH_CHECK(nfabric_round_wait(d, 0, rnd.seq, 10000, &rnd), "wait");
        BENCH_CHECK(nfabric_window_fetch(d, 0, 0, bytes), "FETCH");
        for (uint64_t i = 0; i < words; i++) {
            sink += p[i];
        }
        rd = best_of(rd, t0);

        BENCH_CHECK(nfabric_window_clear(d, 0), "clear");
        t0 = now();
        for (uint64_t o = 0; o + BENCH_BLOCK <= bytes; o += BENCH_BLOCK) {
            memcpy(b + o, buf, BENCH_BLOCK);
        }
        __asm__ volatile("" ::: "memory");
        BENCH_CHECK(nfabric_window_post(d, 0, 0, bytes), "POST");
        cw = best_of(cw, t0);
        t0 = now();
        BENCH_CHECK(nfabric_window_fetch(d, 0, 0, bytes), "FETCH");
        for (uint64_t o = 0; o + BENCH_BLOCK <= bytes; o += BENCH_BLOCK) {
            memcpy(buf, b + o, BENCH_BLOCK);
            sink += buf[o / BENCH_BLOCK % BENCH_BLOCK];
        }
        cr = best_of(cr, t0);
    }
    (void)path;
    printf("%s_write_MBps=%.2f\n%s_read_MBps=%.2f\n", name, bytes / st / 1e6,
           name, bytes / ld / 1e6);
    printf("%s_post_MBps=%.2f\n%s_fetch_MBps=%.2f\n", name, bytes / post / 1e6,
           name, bytes / fetch / 1e6);
    printf("%s_contribute_MBps=%.2f\n%s_readback_MBps=%.2f\n", name,
           bytes / w / 1e6, name, bytes / r / 1e6);
    printf("%s_round_MBps=%.2f\n", name, bytes / rd / 1e6);
    printf("%s_write_ns_per_access=%.1f\n%s_read_ns_per_access=%.1f\n", name,
           st * 1e9 / words, name, ld * 1e9 / words);
    printf("%s_memcpy_MBps=%.2f\n%s_memcpy_read_MBps=%.2f\n", name,
           bytes / cw / 1e6, name, bytes / cr / 1e6);
    fflush(stdout);
    return sink == 1 ? 2 : 0;   /* keep the loads */
}

static int bench(nfabric_dev *d, const char *name, int path, uint64_t bytes,
                 unsigned reps, bool posted)
{
    volatile uint64_t *p;
    uint64_t sink;
    int rc;

    if (path >= 0) {
        nfabric_win_cfg c = {
            .base = nfabric_map_dpa(d) + BENCH_DATA, .size = bytes,
            .counters = nfabric_map_dpa(d) + BENCH_COUNTERS, .path = (unsigned)path,
            .width = 8, .tie = NFABRIC_TIE_NEGATIVE, .threshold = 1,
            .posted = posted,
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
    if (posted) {
        rc = bench_posted(d, name, (unsigned)path, p, bytes, reps);
        nfabric_window_disable(d, 0);
        return rc;
    }
    sink = measure(name, p, bytes, reps);
    if (path >= 0) {
        nfabric_window_disable(d, 0);
    }
    return sink == 1 ? 2 : 0;   /* keep the reads */
}

int main(int argc, char **argv)
{
    static const char *const all[] = { "plain", "fp32", "gbinary", "gternary",
                                       "gbinary_posted", "gternary_posted",
                                       "ram" };
    const char *names[8];
    unsigned n = 0, reps = 3;
    uint64_t bytes = 4u << 20;
    const char *label = "ram";
    bool stock = false, need_dev = false, explicit;
    nfabric_dev *d = NULL;
    int rc = 0;

    for (int a = 1; a < argc; a++) {
        char *end;

        if (!strcmp(argv[a], "--help") || !strcmp(argv[a], "-h")) {
            usage(stdout);
            return 0;
        } else if (!strcmp(argv[a], "--stock")) {
            stock = true;
        } else if (!strcmp(argv[a], "--label") && a + 1 < argc) {
            label = argv[++a];
            if (!*label || strspn(label, "abcdefghijklmnopqrstuvwxyz0123456789_") !=
                           strlen(label)) {
                fprintf(stderr, "nfabric-bench: --label must be [a-z0-9_]+\n");
                return 2;
            }
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
        } else if (n < 8 && (!strcmp(argv[a], "plain") || !strcmp(argv[a], "ram") ||
                             !strcmp(argv[a], "gbinary_posted") ||
                             !strcmp(argv[a], "gternary_posted") ||
                             nfabric_path_parse(argv[a]) >= 0) &&
                   strspn(argv[a], "0123456789") == 0) {
            names[n++] = argv[a];
        } else {
            fprintf(stderr, "nfabric-bench: bad argument \"%s\"\n", argv[a]);
            usage(stderr);
            return 2;
        }
    }
    explicit = n > 0;
    if (!n) {
        for (unsigned i = 0; i < 7; i++) {
            if (!stock || !strcmp(all[i], "plain") || !strcmp(all[i], "ram")) {
                names[n++] = all[i];
            }
        }
    }
    /* Only the guest's RAM: no device needed (its memory may be System RAM). */
    for (unsigned i = 0; i < n; i++) {
        need_dev |= strcmp(names[i], "ram") != 0;
    }
    if (need_dev) {
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
    }
    printf("bench_bytes=%" PRIu64 "\nbench_reps=%u\nbench_device=%s\n", bytes, reps,
           !need_dev ? "none" : stock ? "stock" : "neuron-fabric");
    for (unsigned i = 0; i < n && !rc; i++) {
        bool posted = strstr(names[i], "_posted") != NULL;
        int path = !strcmp(names[i], "plain") ? -1 :
                   posted ? (names[i][1] == 'b' ? NFABRIC_PATH_GBINARY :
                                                  NFABRIC_PATH_GTERNARY) :
                   nfabric_path_parse(names[i]);
        nfabric_heads h;

        if (!strcmp(names[i], "ram")) {
            rc = bench_ram(label, bytes, reps);
            continue;
        }
        if (path >= 0 && !nfabric_regs_map(d)) {
            fprintf(stderr, "nfabric-bench: %s needs the register block (not --stock)\n",
                    names[i]);
            rc = 1;
            break;
        }
        if (posted && (nfabric_heads_read(d, &h) || !h.staging)) {
            if (!explicit) {
                printf("# %s: this head has no staging memory (posted=off)\n",
                       names[i]);
                continue;
            }
            fprintf(stderr, "nfabric-bench: %s needs staging memory (the "
                    "device's posted=on, register version 1.7)\n", names[i]);
            rc = 1;
            break;
        }
        rc = bench(d, stock ? "stock" : names[i], path, bytes, reps, posted);
    }
    nfabric_free(d);
    return rc;
}
