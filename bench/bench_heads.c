/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * nfabric-bench-heads: the shared device's memory path without a VM.
 * N processes, each a head of one shared device (the controller model over
 * a state file and a memory file, as a QEMU process serves its guest),
 * write 8-byte contributions to the same G-Binary (or G-Ternary) window
 * for a fixed time (2 s), started together; prints key=value figures:
 *
 *   heads_PATH_procsN_mbps=   all heads' bytes over the run's time
 *   heads_PATH_procsN_per_head_mbps_min= / _max=
 *   heads_PATH_procsN_vs_procs1=   the aggregate against one head
 *   heads_PATH_single_mbps=   a device that is not shared (no locks)
 *   heads_PATH_shared1_vs_single=
 *
 * It shows how the shared path scales with processes (cores) with nothing
 * of TCG in the way (docs/multihost.md, "Locks and their cost"), and can
 * be run under perf.  Each figure is the best of --rounds runs (a shared
 * machine's noise only ever slows a run).  usage: nfabric-bench-heads
 * [--seconds S] [--procs LIST] [--rounds N] [--path gbinary|gternary]
 * [--apart | --whole] [--dir DIR]; --apart's keys are heads_apart_PATH_...,
 * --whole's heads_whole_PATH_...
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "hw/mem/nfabric_ctrl.h"

#define MEM_SIZE    (64ull << 20)
#define WIN         0
#define WIN_BASE    0x100000ull
#define WIN_SIZE    (1ull << 20)        /* a window every head writes */
#define WIN_CTRS    0x1000000ull
#define MAX_PROCS   16

/*
 * Where head h writes: 64 KiB from h * stride.  4 KiB (the default): every
 * head adds into nearly the same elements, as the heads of one job do;
 * 64 KiB (--apart): each head into its own, so that what is left is the
 * shared path itself (locks, table, statistics), not the counters' lines
 * moving between the cores.
 */
static uint64_t stride = 4096;
/*
 * --whole: each head of n writes the whole window over and over, head h
 * beginning at h/n of it (as libnfabric's nfabric_mem_write begins each
 * head of a shared device, and as bench cluster's heads write): the heads
 * add into the same elements, at different times.
 */
static bool whole;

static const NFabricTimingParams tparams = { 1000, 5, 300, 32000 };

static double now(void)
{
    struct timespec t;

    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + t.tv_nsec / 1e9;
}

static void die(const char *what)
{
    fprintf(stderr, "nfabric-bench-heads: %s: %s\n", what, strerror(errno));
    exit(1);
}

typedef struct Run {
    char state[512], mem[512];
    struct stat mem_st;
    uint8_t *ram;
} Run;

static void run_files(Run *r, const char *dir)
{
    int fd;

    snprintf(r->state, sizeof(r->state), "%s/state", dir);
    snprintf(r->mem, sizeof(r->mem), "%s/mem", dir);
    unlink(r->state);
    fd = open(r->mem, O_RDWR | O_CREAT | O_TRUNC, 0600);
    if (fd < 0 || ftruncate(fd, MEM_SIZE) != 0 || fstat(fd, &r->mem_st) != 0) {
        die(r->mem);
    }
    r->ram = mmap(NULL, MEM_SIZE, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (r->ram == MAP_FAILED) {
        die("mmap");
    }
    close(fd);
}

static NFabricShared *head(Run *r, NFabricCtrl *c, unsigned h, unsigned n,
                           int *fd)
{
    NFabricAttach a = {
        .path = r->state, .head = h, .heads = n, .mem_size = MEM_SIZE,
        .mem_dev = r->mem_st.st_dev, .mem_ino = r->mem_st.st_ino,
        .mem_path = r->mem,
    };
    NFabricAttachHow how;
    NFabricShared *sh;
    char err[512];

    if (nfabric_shared_attach(&a, &sh, fd, &how, err, sizeof(err)) != 0) {
        fprintf(stderr, "nfabric-bench-heads: head %u: %s\n", h, err);
        exit(1);
    }
    nfabric_ctrl_init(c, r->ram, MEM_SIZE, &tparams, NULL, NULL);
    nfabric_ctrl_use_shared(c, sh, h);
    return sh;
}

static void window(NFabricCtrl *c, unsigned path)
{
    nfabric_ctrl_reg_write(c, NFABRIC_REG_WIN(WIN, NFABRIC_WIN_DPA_BASE), WIN_BASE, 8);
    nfabric_ctrl_reg_write(c, NFABRIC_REG_WIN(WIN, NFABRIC_WIN_DPA_SIZE), WIN_SIZE, 8);
    nfabric_ctrl_reg_write(c, NFABRIC_REG_WIN(WIN, NFABRIC_WIN_COUNTERS), WIN_CTRS, 8);
    nfabric_ctrl_reg_write(c, NFABRIC_REG_WIN(WIN, NFABRIC_WIN_THRESHOLD), 1, 4);
    nfabric_ctrl_reg_write(c, NFABRIC_REG_WIN(WIN, NFABRIC_WIN_CTRL),
                           NFABRIC_WCTRL(path, 8, 0) | NFABRIC_WCTRL_ENABLE, 4);
    if (nfabric_ctrl_reg_read(c, NFABRIC_REG_WIN(WIN, NFABRIC_WIN_ERROR), 4)) {
        fprintf(stderr, "nfabric-bench-heads: the window was refused\n");
        exit(1);
    }
}

/*
 * Write the window 8 bytes at a time until t_end, head h of n; the bytes
 * written.
 */
static uint64_t loop(NFabricCtrl *c, unsigned h, unsigned n, double t_end)
{
    uint64_t bytes = 0, v = 0x9e3779b97f4a7c15ull * (h + 1);
    uint64_t first = whole ? WIN_SIZE / n * h : h * stride;

    while (now() < t_end) {
        for (uint64_t off = 0; off < 64 * 1024; off += 8) {
            v ^= v << 13;
            v ^= v >> 7;
            v ^= v << 17;
            nfabric_ctrl_mem_access(c, WIN_BASE + ((off + first) % WIN_SIZE),
                                    (uint8_t *)&v, 8, true);
        }
        bytes += 64 * 1024;
        if (whole) {
            first = (first + 64 * 1024) % WIN_SIZE;
        }
    }
    return bytes;
}

/* N heads at once; fills per-head MB/s; returns the aggregate MB/s. */
static double run_shared(const char *dir, unsigned n, unsigned path,
                         double secs, double *per)
{
    Run r;
    NFabricCtrl c0;
    NFabricShared *sh;
    int fd0, pfd[MAX_PROCS][2];
    pid_t pids[MAX_PROCS];
    double t_start, agg_bytes = 0, t_max = 0;

    run_files(&r, dir);
    sh = head(&r, &c0, 0, n, &fd0);
    window(&c0, path);
    t_start = now() + 0.2 + 0.02 * n;   /* every head attached by then */
    for (unsigned h = 0; h < n; h++) {
        if (pipe(pfd[h]) != 0) {
            die("pipe");
        }
        pids[h] = fork();
        if (pids[h] == 0) {
            NFabricCtrl c;
            int f;
            double res[2];

            close(pfd[h][0]);
            if (h) {
                head(&r, &c, h, n, &f);
            } else {
                c = c0;
            }
            while (now() < t_start) {
                ;
            }
            res[0] = (double)loop(&c, h, n, t_start + secs);
            res[1] = now() - t_start;
            if (write(pfd[h][1], res, sizeof(res)) != sizeof(res)) {
                _exit(2);
            }
            _exit(0);
        }
        close(pfd[h][1]);
    }
    for (unsigned h = 0; h < n; h++) {
        double res[2] = { 0, 1 };
        int st;

        if (read(pfd[h][0], res, sizeof(res)) != sizeof(res)) {
            res[0] = 0;
        }
        close(pfd[h][0]);
        waitpid(pids[h], &st, 0);
        per[h] = res[0] / res[1] / 1e6;
        agg_bytes += res[0];
        t_max = res[1] > t_max ? res[1] : t_max;
    }
    nfabric_ctrl_use_shared(&c0, &c0.local, 0);
    nfabric_shared_detach(sh, fd0, 0);
    munmap(r.ram, MEM_SIZE);
    unlink(r.state);
    unlink(r.mem);
    return agg_bytes / t_max / 1e6;
}

/* The same loop on a device that is not shared (one head, no locks). */
static double run_single(const char *dir, unsigned path, double secs)
{
    Run r;
    NFabricCtrl c;
    double t0, b;

    run_files(&r, dir);
    nfabric_ctrl_init(&c, r.ram, MEM_SIZE, &tparams, NULL, NULL);
    window(&c, path);
    t0 = now();
    b = (double)loop(&c, 0, 1, t0 + secs);
    b = b / (now() - t0) / 1e6;
    munmap(r.ram, MEM_SIZE);
    unlink(r.mem);
    return b;
}

int main(int argc, char **argv)
{
    const char *procs = "1,2,4,8", *pname = "gbinary", *dir = NULL;
    char tmpl[512], key[32];
    double secs = 2, base = 0, single = 0;
    double best[MAX_PROCS] = { 0 }, best_lo[MAX_PROCS] = { 0 };
    double best_hi[MAX_PROCS] = { 0 };
    unsigned counts[MAX_PROCS], ncounts = 0, rounds = 3;
    unsigned path = NFABRIC_PATH_GBINARY;

    for (int a = 1; a < argc; a++) {
        const char *v = a + 1 < argc ? argv[a + 1] : NULL;

        if (!strcmp(argv[a], "--apart")) {
            stride = 64 * 1024;
            continue;
        }
        if (!strcmp(argv[a], "--whole")) {
            whole = true;
            continue;
        }
        if (!v) {
            fprintf(stderr, "usage: nfabric-bench-heads [--seconds S] "
                    "[--procs LIST] [--rounds N] [--path gbinary|gternary] "
                    "[--apart | --whole] [--dir DIR]\n");
            return 2;
        }
        if (!strcmp(argv[a], "--seconds")) {
            secs = atof(v);
        } else if (!strcmp(argv[a], "--rounds")) {
            rounds = (unsigned)atoi(v);
            if (rounds < 1 || rounds > 100) {
                fprintf(stderr, "nfabric-bench-heads: --rounds must be "
                        "1..100, not \"%s\"\n", v);
                return 2;
            }
        } else if (!strcmp(argv[a], "--procs")) {
            procs = v;
        } else if (!strcmp(argv[a], "--dir")) {
            dir = v;
        } else if (!strcmp(argv[a], "--path")) {
            pname = v;
            if (!strcmp(v, "gternary")) {
                path = NFABRIC_PATH_GTERNARY;
            } else if (strcmp(v, "gbinary")) {
                fprintf(stderr, "nfabric-bench-heads: --path gbinary or "
                        "gternary, not \"%s\"\n", v);
                return 2;
            }
        } else {
            fprintf(stderr, "nfabric-bench-heads: unknown option \"%s\"\n",
                    argv[a]);
            return 2;
        }
        a++;
    }
    if (!(secs > 0 && secs <= 600)) {
        fprintf(stderr, "nfabric-bench-heads: --seconds must be in (0, 600]\n");
        return 2;
    }
    for (const char *p = procs; *p;) {
        char *e;
        unsigned long n = strtoul(p, &e, 10);

        if (e == p || n < 1 || n > MAX_PROCS || (*e && *e != ',') ||
            ncounts == MAX_PROCS) {
            fprintf(stderr, "nfabric-bench-heads: --procs takes up to %d "
                    "counts of 1..%d, comma-separated\n", MAX_PROCS,
                    MAX_PROCS);
            return 2;
        }
        counts[ncounts++] = (unsigned)n;
        p = *e ? e + 1 : e;
    }
    if (whole && stride != 4096) {
        fprintf(stderr, "nfabric-bench-heads: --apart or --whole, not both\n");
        return 2;
    }
    /* Every option checked: a directory of its own, removed at the end. */
    if (!dir) {
        const char *t = getenv("TMPDIR");

        snprintf(tmpl, sizeof(tmpl), "%s/nfabric-bench-heads-XXXXXX",
                 t && *t ? t : "/tmp");
        if (!mkdtemp(tmpl)) {
            die("mkdtemp");
        }
        dir = tmpl;
    }
    /* --apart's and --whole's figures have names of their own. */
    snprintf(key, sizeof(key), "%s%s",
             whole ? "whole_" : stride == 4096 ? "" : "apart_", pname);
    pname = key;
    printf("heads_seconds=%g\nheads_rounds=%u\nheads_cores=%ld\n", secs,
           rounds, sysconf(_SC_NPROCESSORS_ONLN));
    /* Rounds of every figure, each kept at its best: a shared machine. */
    for (unsigned r = 0; r < rounds; r++) {
        double s1 = run_single(dir, path, secs);

        single = s1 > single ? s1 : single;
        for (unsigned k = 0; k < ncounts; k++) {
            double per[MAX_PROCS], agg, lo = 1e30, hi = 0;

            agg = run_shared(dir, counts[k], path, secs, per);
            for (unsigned h = 0; h < counts[k]; h++) {
                lo = per[h] < lo ? per[h] : lo;
                hi = per[h] > hi ? per[h] : hi;
            }
            if (agg > best[k]) {
                best[k] = agg;
                best_lo[k] = lo;
                best_hi[k] = hi;
            }
        }
    }
    printf("heads_%s_single_mbps=%.1f\n", pname, single);
    for (unsigned k = 0; k < ncounts; k++) {
        unsigned n = counts[k];

        if (n == 1) {
            base = best[k];
        }
        printf("heads_%s_procs%u_mbps=%.1f\n", pname, n, best[k]);
        printf("heads_%s_procs%u_per_head_mbps_min=%.1f\n", pname, n, best_lo[k]);
        printf("heads_%s_procs%u_per_head_mbps_max=%.1f\n", pname, n, best_hi[k]);
    }
    for (unsigned k = 0; k < ncounts; k++) {
        if (base > 0 && counts[k] > 1) {
            printf("heads_%s_procs%u_vs_procs1=%.3f\n", pname, counts[k],
                   best[k] / base);
        }
    }
    if (base > 0) {
        printf("heads_%s_shared1_vs_single=%.3f\n", pname, base / single);
    }
    if (dir == tmpl) {
        rmdir(tmpl);
    }
    return 0;
}
