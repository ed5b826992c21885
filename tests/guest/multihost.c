/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * nfabric-multihost: the guest side of the multi-host checks.  Every host
 * of a cluster (scripts/nfabric cluster) runs it with its rank (= its head
 * of the shared device) and the host count; the hosts meet in the device:
 * they synchronise with the device's round registers and aggregate into
 * the same windows.  TAP on stdout.  docs/multihost.md describes the cases.
 *
 *   nfabric-multihost CASE [--rank R] [--hosts N] [--seed S]
 *                          [--procs P] [--iters K] [--bytes B]
 *
 * CASE: agg (each host's own signs/codes into shared windows, widths 8 and
 * 16, partial and sub-word writes, checked against a reference of every
 * host's input), hammer (P processes per host on one window, counts
 * exact), kill / rejoin (one host is killed mid-round; the others finish,
 * see INCOMPLETE, go on; the host comes back), reset (one host is reset
 * mid-round; the others' round is intact), sanitize, jobs, reassign, pause, own
 * (a head's own range mapped directly; B bytes of timed writes), bench
 * (contribution throughput).  R and N default to $NFABRIC_RANK and $NFABRIC_HOSTS.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <dirent.h>
#include <fcntl.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "tap.h"
#include "gt.h"
#include "testutil.h"

static uint64_t seed_base = 0x4d48u;     /* --seed */

/* ---- layout in device memory (DPAs) ----------------------------------- */
#define BAR_WIN         15              /* the barrier: an FP32 window */
#define BAR_BASE        0x0ull
#define BAR_SIZE        0x40ull
#define SCRATCH         0x1000ull       /* plain memory: boot markers */
#define AGG_WIN         0
#define AGG_BASE        0x100000ull
#define AGG_SIZE        4096ull
#define AGG_CTRS        0x200000ull
#define PAGG_WIN        2               /* agg's posted twin (1.7) */
#define PAGG_BASE       0x140000ull
#define PAGG_CTRS       0x240000ull
#define HAM_WIN         1
#define HAM_BASE        0x300000ull
#define HAM_SIZE        512ull
#define HAM_CTRS        0x310000ull
#define BENCH_BASE      0x400000ull
#define BENCH_CTRS      0x800000ull
#define BENCH_WIN       0x100000ull     /* 1 MiB of packed data */
#define BENCH_SLICES    16              /* turns of a side-by-side pair */

#define WAIT_MS         300000u         /* any wait for other hosts */
/* The device's bound on a lock wait (0.5 s) and the guest's own overhead. */
#define NFABRIC_PAUSE_REG_BOUND_S   1.0
/*
 * An enable given up with PEER: the wait for the other heads' maps (1 s), a
 * lock wait, slack.  nfabric_window_set() as a whole: up to five register
 * writes, each of which may wait for the lock, and that wait.
 */
#define NFABRIC_PAUSE_PEER_BOUND_S  2.0
#define NFABRIC_PAUSE_SET_BOUND_S   4.0

static nfabric_dev *dev;
static unsigned rank, hosts, procs = 2, iters = 200;
/* pause --apart: every host in a job of its own, host 1 in job 1. */
static bool apart;
#define NFABRIC_APART_BOUND_S       0.05    /* issue 36: worst under 50 ms */
/*
 * An enable is six register accesses and a rebuild of its own QEMU's map
 * (the map protocol: its main loop must run): under TCG, with the other
 * VMs busy (3 VMs on 2 cores, or one zeroing 64 MiB in a loop), that alone
 * took up to 55 ms here, whatever the other jobs' locks.  The lock paths
 * (register writes, round completions) keep the 50 ms bound; the unit
 * test "apart" (no TCG) holds enables to it too.  What the machine itself
 * takes from this guest (its slowest plain access, which nothing of
 * another host can hold up) is added: 3 VMs sharing 2 cores with other
 * work took enables to 103-119 ms with plain accesses of 19-50 ms.  A
 * hold-up by host 1 would be a lock's bound (500 ms) or the map
 * protocol's (1 s), and a plain access that slow fails its own check.
 */
#define NFABRIC_APART_ENABLE_S      0.1
static uint64_t bench_bytes = 1u << 20;

static void diag(const char *fmt, ...)
{
    va_list ap;

    printf("# [rank %u] ", rank);
    va_start(ap, fmt);
    vprintf(fmt, ap);
    va_end(ap);
    printf("\n");
    fflush(stdout);
}

static volatile uint8_t *mem(uint64_t dpa, uint64_t len)
{
    volatile uint8_t *p = nfabric_dpa_ptr(dev, dpa, len);

    if (!p) {
        fprintf(stderr, "nfabric-multihost: DPA 0x%" PRIx64 "+0x%" PRIx64
                " is not mapped\n", dpa, len);
        exit(1);
    }
    return p;
}

static void st(volatile uint8_t *p, unsigned size, uint64_t v)
{
    switch (size) {
    case 1: *(volatile uint8_t *)p = (uint8_t)v; break;
    case 2: *(volatile uint16_t *)p = (uint16_t)v; break;
    case 4: *(volatile uint32_t *)p = (uint32_t)v; break;
    default: *(volatile uint64_t *)p = v; break;
    }
}

static void die(const char *what, int rc)
{
    printf("not ok - [rank %u] %s: %s\n", rank, what, nfabric_errmsg(dev));
    printf("NFABRIC-MH-FAILED rc=%d\n", rc);
    fflush(stdout);
    exit(1);
}

/* ---- synchronisation through the device ------------------------------- */

/*
 * A barrier of every expected head on the FP32 window BAR_WIN: each head
 * completes the current round; head 0 waits for all and clears the window
 * (the next round); the others wait for that clear.
 */
static void barrier(const char *name)
{
    nfabric_round r;
    uint32_t seq;
    int rc;

    if ((rc = nfabric_round_read(dev, BAR_WIN, &r))) {
        die("barrier: read the round", rc);
    }
    seq = r.seq;
    if ((rc = nfabric_round_complete(dev, BAR_WIN, seq))) {
        die("barrier: complete", rc);
    }
    if (rank == 0) {
        if ((rc = nfabric_round_wait(dev, BAR_WIN, seq, WAIT_MS, &r))) {
            die(name, rc);
        }
        if ((rc = nfabric_window_clear(dev, BAR_WIN))) {
            die("barrier: clear", rc);
        }
    } else if ((rc = nfabric_round_wait_next(dev, BAR_WIN, seq, WAIT_MS))) {
        die(name, rc);
    }
}

/* Head 0 makes the barrier window; the others wait until it exists. */
static void setup(void)
{
    nfabric_win_cfg bar = { .base = BAR_BASE, .size = BAR_SIZE,
                            .path = NFABRIC_PATH_FP32 };
    double t0 = nf_now_s();
    int rc;

    if (rank == 0) {
        nfabric_win_state ws;

        nfabric_window_get(dev, BAR_WIN, &ws);
        if (!ws.enabled && (rc = nfabric_window_set(dev, BAR_WIN, &bar))) {
            die("set up the barrier window", rc);
        }
        return;
    }
    for (;;) {
        nfabric_win_state ws;

        nfabric_window_get(dev, BAR_WIN, &ws);
        if (ws.enabled && ws.cfg.base == BAR_BASE && ws.cfg.size == BAR_SIZE) {
            return;
        }
        if (nf_now_s() - t0 > WAIT_MS / 1000.0) {
            printf("not ok - [rank %u] head 0 never made the barrier window\n",
                   rank);
            exit(1);
        }
        usleep(2000);
    }
}

/* ---- inputs: every host can compute every host's ----------------------- */

/* Host r's packed input for a case: signs, or ternary codes {0, +1, -1}. */
static void input(unsigned r, unsigned path, unsigned tag, uint8_t *buf,
                  size_t len)
{
    uint64_t s = seed_base * 1000003u + tag * 7919u + r * 104729u;

    for (size_t i = 0; i < len; i++) {
        uint8_t b = (uint8_t)nf_splitmix64(&s);

        if (path == NFABRIC_PATH_GTERNARY) {
            /* No reserved code: 2 (0b10) becomes 0. */
            for (unsigned k = 0; k < 4; k++) {
                if (((b >> (2 * k)) & 3) == NFABRIC_TERN_RESERVED) {
                    b &= (uint8_t)~(3u << (2 * k));
                }
            }
        }
        buf[i] = b;
    }
}

/* How much of the window host r writes: hosts write different prefixes. */
static size_t extent(unsigned r, size_t size)
{
    return size - (size_t)(r % 4) * 256;
}

/*
 * Write len bytes at window byte 0 the way the case does: the first 64
 * bytes with 1-byte stores, the next 64 with 2-byte, 128 with 4-byte, the
 * rest with 8-byte stores.  Returns the number of stores.
 */
static uint64_t write_mixed(volatile uint8_t *dst, const uint8_t *src,
                            size_t len)
{
    uint64_t n = 0;
    size_t off = 0;

    while (off < len) {
        unsigned size = off < 64 ? 1 : off < 128 ? 2 : off < 256 ? 4 : 8;
        uint64_t v = 0;

        memcpy(&v, src + off, size);
        st(dst + off, size, v);
        off += size;
        n++;
    }
    return n;
}

static uint64_t stores_of(size_t len)
{
    uint64_t n = 0;

    for (size_t off = 0; off < len;) {
        off += off < 64 ? 1 : off < 128 ? 2 : off < 256 ? 4 : 8;
        n++;
    }
    return n;
}

/* ---- checks of one round against the reference -------------------------- */

typedef struct Case {
    unsigned path, width, tie;
    uint32_t threshold;
    unsigned tag;
} Case;

/* The expected sums of hosts in mask (host r wrote len_of(r) bytes). */
static void expect(const Case *c, uint32_t mask, size_t half_rank,
                   size_t half_len, int32_t *sums)
{
    uint8_t buf[AGG_SIZE];

    memset(sums, 0, sizeof(int32_t) * AGG_SIZE * 8);
    for (unsigned r = 0; r < hosts; r++) {
        size_t len = extent(r, AGG_SIZE);

        if (!(mask & (1u << r))) {
            continue;
        }
        if (r == half_rank) {
            len = half_len;
        }
        input(r, c->path, c->tag, buf, AGG_SIZE);
        ref_apply(c->path, c->width, sums, 0, buf, len);
    }
}

/* Read the window back and compare read-out and counters with sums. */
static bool check_result(const Case *c, const int32_t *sums, const char *what)
{
    uint8_t want[AGG_SIZE], got[AGG_SIZE];
    unsigned epb = ref_epb(c->path);
    volatile uint8_t *w = mem(AGG_BASE, AGG_SIZE);
    uint64_t bad_elems = 0, first = UINT64_MAX;

    ref_readout(c->path, c->tie, c->threshold, sums, 0, want, AGG_SIZE);
    for (size_t i = 0; i < AGG_SIZE; i += 8) {
        uint64_t v = *(volatile uint64_t *)(w + i);

        memcpy(got + i, &v, 8);
    }
    for (uint64_t e = 0; e < AGG_SIZE * epb; e++) {
        if (nfabric_counter(dev, AGG_CTRS, c->width, e) != sums[e]) {
            if (!bad_elems++) {
                first = e;
            }
        }
    }
    TAP_CHECK(memcmp(want, got, AGG_SIZE) == 0, "[rank %u] %s: read-out of "
              "%s/%u equals the reference of every host's input", rank, what,
              nfabric_path_name(c->path), c->width);
    TAP_CHECK(bad_elems == 0, "[rank %u] %s: per-element counts of %s/%u "
              "equal the reference (%" PRIu64 " differ, first %" PRIu64 ")",
              rank, what, nfabric_path_name(c->path), c->width, bad_elems,
              first == UINT64_MAX ? 0 : first);
    return memcmp(want, got, AGG_SIZE) == 0 && bad_elems == 0;
}

static void agg_window_at(const Case *c, uint64_t size, unsigned win,
                          uint64_t base, uint64_t ctrs, bool posted)
{
    nfabric_win_cfg cfg = {
        .base = base, .size = size, .counters = ctrs,
        .path = c->path, .width = c->width, .tie = c->tie,
        .threshold = c->threshold, .posted = posted,
    };
    nfabric_win_state ws;
    int rc;

    nfabric_window_get(dev, win, &ws);
    if (ws.enabled && (rc = nfabric_window_disable(dev, win))) {
        die("disable the aggregation window", rc);
    }
    if ((rc = nfabric_window_set(dev, win, &cfg))) {
        die("set the aggregation window", rc);
    }
}

static void agg_window(const Case *c, uint64_t size)
{
    agg_window_at(c, size, AGG_WIN, AGG_BASE, AGG_CTRS, false);
}

/*
 * agg's posted twin: the same input through the posted window PAGG_WIN
 * (nfabric_mem_write: stores into this head's staging, then POST), its
 * round completed and waited for; the read-out (nfabric_mem_read: FETCH,
 * loads), every count and every head's contribution count must equal the
 * trapped window's and the reference.
 */
static void agg_posted(const Case *c, const uint8_t *buf, const int32_t *sums)
{
    uint8_t want[AGG_SIZE], got[AGG_SIZE];
    uint64_t bad = 0, words = 0;
    nfabric_round r;
    bool ok = true;
    int rc;

    nfabric_round_read(dev, PAGG_WIN, &r);
    rc = nfabric_mem_write(dev, PAGG_BASE, buf, extent(rank, AGG_SIZE));
    rc = rc ? rc : nfabric_round_complete(dev, PAGG_WIN, r.seq);
    rc = rc ? rc : nfabric_round_wait(dev, PAGG_WIN, r.seq, WAIT_MS, &r);
    TAP_CHECK(rc == 0 && r.all_done && !r.incomplete && r.ndone == hosts,
              "[rank %u] agg posted %s/%u: written, round done by all %u "
              "heads (rc %d, status 0x%x)", rank, nfabric_path_name(c->path),
              c->width, hosts, rc, r.status);
    ref_readout(c->path, c->tie, c->threshold, sums, 0, want, AGG_SIZE);
    rc = nfabric_mem_read(dev, PAGG_BASE, got, AGG_SIZE);
    for (uint64_t e = 0; e < AGG_SIZE * ref_epb(c->path); e++) {
        bad += nfabric_counter(dev, PAGG_CTRS, c->width, e) != sums[e];
    }
    for (unsigned h = 0; h < hosts; h++) {
        uint64_t wr = 0;

        ok &= nfabric_head_contrib(dev, h, PAGG_WIN, &wr) == 0 &&
              wr == extent(h, AGG_SIZE) / 8;
        words += extent(h, AGG_SIZE) / 8;
    }
    TAP_CHECK(rc == 0 && !memcmp(want, got, AGG_SIZE) && bad == 0 && ok,
              "[rank %u] agg posted %s/%u: read-out, every count and every "
              "head's contribution (%" PRIu64 " words) equal the trapped "
              "window's reference (%" PRIu64 " counts differ)", rank,
              nfabric_path_name(c->path), c->width, words, bad);
}

/* ---- agg: every host's input into the same windows ---------------------- */

static void case_agg(void)
{
    static int32_t sums[AGG_SIZE * 8];
    static const unsigned widths[] = { 8, 16 };
    unsigned tag = 0;

    for (unsigned p = NFABRIC_PATH_GBINARY; p <= NFABRIC_PATH_GTERNARY; p++) {
        for (unsigned wi = 0; wi < 2; wi++) {
            Case c = { .path = p, .width = widths[wi], .tie = tag & 1,
                       .threshold = hosts > 2 ? 2 : 1, .tag = ++tag };
            uint8_t buf[AGG_SIZE];
            uint64_t mine, total = 0;
            nfabric_round r;
            uint32_t seq;
            int rc;

            if (rank == 0) {
                agg_window(&c, AGG_SIZE);
                agg_window_at(&c, AGG_SIZE, PAGG_WIN, PAGG_BASE, PAGG_CTRS,
                              true);
            }
            barrier("agg: configured");
            nfabric_round_read(dev, AGG_WIN, &r);
            seq = r.seq;
            input(rank, p, c.tag, buf, AGG_SIZE);
            mine = write_mixed(mem(AGG_BASE, AGG_SIZE), buf,
                               extent(rank, AGG_SIZE));
            if ((rc = nfabric_round_complete(dev, AGG_WIN, seq))) {
                die("agg: complete", rc);
            }
            rc = nfabric_round_wait(dev, AGG_WIN, seq, WAIT_MS, &r);
            TAP_CHECK(rc == 0 && r.all_done && !r.incomplete &&
                      r.ndone == hosts && r.nexpected == hosts,
                      "[rank %u] agg %s/%u: round %u done by all %u heads "
                      "(rc %d, done 0x%x, status 0x%x)", rank,
                      nfabric_path_name(p), c.width, seq, hosts, rc, r.done,
                      r.status);
            expect(&c, (1u << hosts) - 1, UINT32_MAX, 0, sums);
            check_result(&c, sums, "agg");
            agg_posted(&c, buf, sums);
            /* Per-head contribution counts, and the total. */
            {
                bool ok = true;
                nfabric_win_state ws;

                for (unsigned h = 0; h < hosts; h++) {
                    uint64_t wr = 0;

                    ok &= nfabric_head_contrib(dev, h, AGG_WIN, &wr) == 0 &&
                          wr == stores_of(extent(h, AGG_SIZE));
                    total += stores_of(extent(h, AGG_SIZE));
                }
                nfabric_window_get(dev, AGG_WIN, &ws);
                TAP_CHECK(ok && ws.contrib_writes == total,
                          "[rank %u] agg %s/%u: per-head contribution counts "
                          "(mine %" PRIu64 ") and total %" PRIu64, rank,
                          nfabric_path_name(p), c.width, mine, total);
            }
            barrier("agg: checked");
        }
    }
    /* Statistics of the pool: at least every host's G-Binary stores. */
    {
        nfabric_path_stats own[NFABRIC_NUM_PATHS], pool[NFABRIC_NUM_PATHS];
        bool ok = nfabric_stats(dev, own) == 0 &&
                  nfabric_pool_stats(dev, pool) == 0;

        for (unsigned p = 0; p < NFABRIC_NUM_PATHS; p++) {
            ok &= pool[p].writes >= own[p].writes;
        }
        ok &= pool[NFABRIC_PATH_GBINARY].writes >=
              2 * hosts * stores_of(extent(hosts - 1, AGG_SIZE));
        TAP_CHECK(ok, "[rank %u] pool statistics cover every head's writes "
                  "(own G-Binary %" PRIu64 ", pool %" PRIu64 ")", rank,
                  own[NFABRIC_PATH_GBINARY].writes,
                  pool[NFABRIC_PATH_GBINARY].writes);
    }
    if (rank == 0) {
        nfabric_window_disable(dev, PAGG_WIN);
    }
    printf("summary: multihost agg: %u hosts, G-Binary and G-Ternary at "
           "widths 8 and 16: read-out and counts equal the reference, through "
           "a trapped and a posted window\n", hosts);
}

/* ---- hammer: several processes of several hosts on one window ---------- */

static uint64_t ham_pattern(unsigned r, unsigned p)
{
    uint64_t s = seed_base + 31u * r + p;

    return nf_splitmix64(&s);
}

static void case_hammer(void)
{
    nfabric_win_cfg cfg = {
        .base = HAM_BASE, .size = HAM_SIZE, .counters = HAM_CTRS,
        .path = NFABRIC_PATH_GBINARY, .width = 16,
    };
    uint64_t per_proc = (uint64_t)iters * (HAM_SIZE / 8);
    uint64_t bad = 0, own = 0;
    nfabric_win_state ws;
    nfabric_round r;
    uint32_t seq;
    double t0;
    int rc;

    if ((uint64_t)hosts * procs * iters > 32767) {
        printf("not ok - [rank %u] hammer: %u x %u x %u contributions "
               "overflow a 16-bit count\n", rank, hosts, procs, iters);
        return;
    }
    if (rank == 0) {
        nfabric_window_get(dev, HAM_WIN, &ws);
        if (ws.enabled) {
            nfabric_window_disable(dev, HAM_WIN);
        }
        if ((rc = nfabric_window_set(dev, HAM_WIN, &cfg))) {
            die("hammer: set the window", rc);
        }
    }
    barrier("hammer: configured");
    nfabric_round_read(dev, HAM_WIN, &r);
    seq = r.seq;
    t0 = nf_now_s();
    for (unsigned p = 0; p < procs; p++) {
        pid_t pid = fork();

        if (pid == 0) {
            volatile uint64_t *w = (volatile uint64_t *)mem(HAM_BASE, HAM_SIZE);
            uint64_t v = ham_pattern(rank, p);

            for (unsigned k = 0; k < iters; k++) {
                for (unsigned i = 0; i < HAM_SIZE / 8; i++) {
                    w[i] = v;
                }
            }
            _exit(0);
        }
        if (pid < 0) {
            die("hammer: fork", NFLIB_EINVAL);
        }
    }
    for (unsigned p = 0; p < procs; p++) {
        int status;

        if (wait(&status) < 0 || !WIFEXITED(status) || WEXITSTATUS(status)) {
            bad++;
        }
    }
    diag("hammer: %u processes x %u passes in %.2f s", procs, iters,
         nf_now_s() - t0);
    nfabric_round_complete(dev, HAM_WIN, seq);
    rc = nfabric_round_wait(dev, HAM_WIN, seq, WAIT_MS, &r);
    TAP_CHECK(rc == 0 && bad == 0 && !r.incomplete, "[rank %u] hammer: %u "
              "hosts x %u processes done (rc %d)", rank, hosts, procs, rc);
    /* Every element's count: iters times the sum of every writer's sign. */
    bad = 0;
    for (uint64_t e = 0; e < HAM_SIZE * 8; e++) {
        int32_t want = 0;

        for (unsigned h = 0; h < hosts; h++) {
            for (unsigned p = 0; p < procs; p++) {
                uint64_t v = ham_pattern(h, p);

                want += ((v >> (e % 64)) & 1) ? (int32_t)iters : -(int32_t)iters;
            }
        }
        bad += nfabric_counter(dev, HAM_CTRS, 16, e) != want;
    }
    nfabric_window_get(dev, HAM_WIN, &ws);
    nfabric_head_contrib(dev, rank, HAM_WIN, &own);
    TAP_CHECK(bad == 0, "[rank %u] hammer: all %llu counts exact (%" PRIu64
              " differ)", rank, (unsigned long long)HAM_SIZE * 8, bad);
    TAP_CHECK(ws.contrib_writes == (uint64_t)hosts * procs * per_proc &&
              own == procs * per_proc,
              "[rank %u] hammer: contributions %" PRIu64 " (want %" PRIu64
              "), this head's %" PRIu64 " (want %" PRIu64 ")", rank,
              ws.contrib_writes, (uint64_t)hosts * procs * per_proc, own,
              procs * per_proc);
    barrier("hammer: checked");
    printf("summary: multihost hammer: %u hosts x %u processes x %u passes "
           "on one window: every count exact\n", hosts, procs, iters);
}

/* ---- kill / rejoin ------------------------------------------------------- */

static const Case kill_case = { NFABRIC_PATH_GBINARY, 8, 0, 1, 101 };

/* Write this host's input (all of it, or the first len bytes). */
static void contribute(const Case *c, size_t len)
{
    uint8_t buf[AGG_SIZE];

    input(rank, c->path, c->tag, buf, AGG_SIZE);
    write_mixed(mem(AGG_BASE, AGG_SIZE), buf, len);
}

/*
 * The start of a round of c that host 1 (the victim) leaves half done:
 * head 0 configures the window, all meet; the victim writes the first
 * `half` bytes of its input, runs before() (may be NULL), prints the mark
 * the host script waits for, and waits to be killed or reset there (it
 * never returns).  Head 0 gets the round's number.
 */
static uint32_t victim_round(const Case *c, size_t half, const char *name,
                             void (*before)(void))
{
    nfabric_round r;
    char what[64];

    if (rank == 0) {
        agg_window(c, AGG_SIZE);
    }
    snprintf(what, sizeof(what), "%s: configured", name);
    barrier(what);
    nfabric_round_read(dev, AGG_WIN, &r);
    if (rank != 0) {
        contribute(c, half);
        if (before) {
            before();
        }
        printf("NFABRIC-MARK mid-round rank=%u\n", rank);
        fflush(stdout);
        sleep(600);
        printf("not ok - [rank %u] %s: still running after 600 s\n", rank, name);
        exit(1);
    }
    return r.seq;
}

/*
 * The kernel's trace of cxl:cxl_generic_event (enabled by the suite's
 * command): is a record of ours there, of KIND about HEAD and WINDOW?
 * The data's first bytes: kind, reporter, head, window (nfabric_regs.h),
 * printed in hex after the header fields (6.12: "maint_op_class=0 : 01
 * 00 ..."; a kernel that names the field: "data=01 00 ...").
 */
static bool trace_has_event(unsigned kind, unsigned head, unsigned win)
{
    char want[64], named[64], line[2048];
    FILE *f = fopen("/sys/kernel/tracing/trace", "r");
    bool found = false;

    if (!f) {
        return false;
    }
    snprintf(want, sizeof(want), " : %02x %02x %02x %02x ", kind, rank, head, win);
    snprintf(named, sizeof(named), "data=%02x %02x %02x %02x ", kind, rank, head,
             win);
    while (!found && fgets(line, sizeof(line), f)) {
        found = strstr(line, "uuid=" NFABRIC_EVENT_UUID_STR) &&
                (strstr(line, want) || strstr(line, named));
    }
    fclose(f);
    return found;
}

/*
 * Faults as CXL events: the kill of head 1 mid-round reaches this guest's
 * kernel as two vendor records, head 1 lost and window AGG_WIN's round
 * INCOMPLETE, within a second of the survivor's round ending.
 */
static void case_kill_events(void)
{
    double t0 = nf_now_s();
    bool lost = false, inc = false;

    while (!(lost && inc) && nf_now_s() - t0 < 1.0) {
        lost = lost || trace_has_event(NFABRIC_EVENT_HEAD_LOST, 1, NFABRIC_EVENT_NONE);
        inc = inc || trace_has_event(NFABRIC_EVENT_INCOMPLETE, 1, AGG_WIN);
        if (!(lost && inc)) {
            usleep(20000);
        }
    }
    TAP_CHECK(lost && inc, "[rank %u] kill: the kernel traced the CXL events "
              "(cxl:cxl_generic_event, uuid %s): head 1 lost %s, window %u's "
              "round INCOMPLETE %s, within %.2f s", rank, NFABRIC_EVENT_UUID_STR,
              lost ? "yes" : "no", AGG_WIN, inc ? "yes" : "no", nf_now_s() - t0);
}

static void case_kill(void)
{
    static int32_t sums[AGG_SIZE * 8];
    const Case *c = &kill_case;
    size_t half = 2048;
    nfabric_heads hd;
    nfabric_round r;
    uint32_t seq;
    double t0;
    int rc;

    seq = victim_round(c, half, "kill", NULL);   /* the victim is killed */
    contribute(c, extent(0, AGG_SIZE));
    nfabric_round_complete(dev, AGG_WIN, seq);
    t0 = nf_now_s();
    rc = nfabric_round_wait(dev, AGG_WIN, seq, WAIT_MS, &r);
    nfabric_heads_read(dev, &hd);
    TAP_CHECK(rc == 0 && r.all_done && r.incomplete &&
              (hd.lost & ~1u) && !(hd.live & ~1u),
              "[rank 0] kill: the round finishes without the killed host and "
              "reports INCOMPLETE (rc %d, status 0x%x, live 0x%x, lost 0x%x, "
              "%.1f s)", rc, r.status, hd.live, hd.lost, nf_now_s() - t0);
    expect(c, (1u << hosts) - 1, 1, half, sums);
    check_result(c, sums, "kill: survivors + the victim's half");
    case_kill_events();
    printf("summary: multihost kill: SIGKILL of a host mid-round: the round "
           "finished in %.1f s with INCOMPLETE set, the counts hold exactly "
           "what was written\n", nf_now_s() - t0);

    /* The next round works without it. */
    if ((rc = nfabric_window_clear(dev, AGG_WIN))) {
        die("kill: clear", rc);
    }
    nfabric_round_read(dev, AGG_WIN, &r);
    seq = r.seq;
    contribute(c, extent(0, AGG_SIZE));
    nfabric_round_complete(dev, AGG_WIN, seq);
    rc = nfabric_round_wait(dev, AGG_WIN, seq, WAIT_MS, &r);
    TAP_CHECK(rc == 0 && r.all_done && !r.incomplete && r.nexpected == 1,
              "[rank 0] kill: the next round completes with the live head "
              "alone (rc %d, status 0x%x)", rc, r.status);
    expect(c, 1, UINT32_MAX, 0, sums);
    check_result(c, sums, "kill: next round");

    /* The killed host comes back. */
    t0 = nf_now_s();
    do {
        nfabric_heads_read(dev, &hd);
        if (hd.live & 2) {
            break;
        }
        usleep(20000);
    } while (nf_now_s() - t0 < WAIT_MS / 1000.0);
    TAP_CHECK(hd.live & 2, "[rank 0] kill: head 1 rejoined (live 0x%x, lost "
              "0x%x) after %.1f s", hd.live, hd.lost, nf_now_s() - t0);
    if ((rc = nfabric_window_clear(dev, AGG_WIN))) {
        die("rejoin: clear", rc);
    }
    barrier("rejoin: both");
    nfabric_round_read(dev, AGG_WIN, &r);
    seq = r.seq;
    contribute(c, extent(0, AGG_SIZE));
    nfabric_round_complete(dev, AGG_WIN, seq);
    rc = nfabric_round_wait(dev, AGG_WIN, seq, WAIT_MS, &r);
    TAP_CHECK(rc == 0 && r.all_done && !r.incomplete && r.nexpected == hosts,
              "[rank 0] rejoin: a round with the rejoined host completes "
              "(rc %d, status 0x%x)", rc, r.status);
    expect(c, (1u << hosts) - 1, UINT32_MAX, 0, sums);
    check_result(c, sums, "rejoin");
    barrier("rejoin: checked");
}

/* The killed host, started again. */
static void case_rejoin(void)
{
    static int32_t sums[AGG_SIZE * 8];
    const Case *c = &kill_case;
    nfabric_heads hd;
    nfabric_round r;
    uint32_t seq;
    int rc;

    nfabric_heads_read(dev, &hd);
    TAP_CHECK(hd.live & (1u << rank), "[rank %u] rejoin: attached again "
              "(live 0x%x)", rank, hd.live);
    barrier("rejoin: both");
    nfabric_round_read(dev, AGG_WIN, &r);
    seq = r.seq;
    contribute(c, extent(rank, AGG_SIZE));
    nfabric_round_complete(dev, AGG_WIN, seq);
    rc = nfabric_round_wait(dev, AGG_WIN, seq, WAIT_MS, &r);
    TAP_CHECK(rc == 0 && r.all_done && !r.incomplete,
              "[rank %u] rejoin: the round completes (rc %d, status 0x%x)",
              rank, rc, r.status);
    expect(c, (1u << hosts) - 1, UINT32_MAX, 0, sums);
    check_result(c, sums, "rejoin");
    barrier("rejoin: checked");
}

/* ---- reset: a host's system_reset leaves the others' round intact ------- */

#define RESET_MARK 0x5245534554ull       /* "RESET" in plain memory */

/* The victim, before its reset: its next boot will know. */
static void mark_reset(void)
{
    *(volatile uint64_t *)mem(SCRATCH, 8) = RESET_MARK;
}

static void case_reset(bool have_mem)
{
    static int32_t sums[AGG_SIZE * 8];
    const Case *c = &kill_case;
    size_t half = 1024;
    volatile uint64_t *marker = NULL;
    nfabric_round r, r2;
    uint32_t seq, mask;
    int rc;

    if (rank != 0) {
        /* After the reset this host may have no region: registers only. */
        if (!have_mem) {
            nfabric_round_read(dev, AGG_WIN, &r);
            diag("reset: second boot without device memory, round %u", r.seq);
            rc = nfabric_round_complete(dev, AGG_WIN, r.seq);
            TAP_CHECK(rc == 0, "[rank %u] reset: completes round %u after its "
                      "reset (rc %d)", rank, r.seq, rc);
            return;
        }
        marker = (volatile uint64_t *)mem(SCRATCH, 8);
        if (*marker == RESET_MARK) {
            nfabric_round_read(dev, AGG_WIN, &r);
            rc = nfabric_round_complete(dev, AGG_WIN, r.seq);
            TAP_CHECK(rc == 0, "[rank %u] reset: completes round %u after its "
                      "reset (rc %d)", rank, r.seq, rc);
            rc = nfabric_round_wait(dev, AGG_WIN, r.seq, WAIT_MS, &r2);
            expect(c, (1u << hosts) - 1, rank, half, sums);
            check_result(c, sums, "reset: after this host's reset");
            return;
        }
    }
    seq = victim_round(c, half, "reset", mark_reset);   /* the victim is reset */
    contribute(c, extent(0, AGG_SIZE));
    nfabric_round_complete(dev, AGG_WIN, seq);
    mask = nfabric_rd32(dev, NFABRIC_REG_ENABLED_MASK);
    rc = nfabric_round_wait(dev, AGG_WIN, seq, WAIT_MS, &r);
    TAP_CHECK(rc == 0 && r.all_done && !r.incomplete && r.seq == seq &&
              nfabric_rd32(dev, NFABRIC_REG_ENABLED_MASK) == mask,
              "[rank 0] reset: the round survives another host's reset and "
              "completes (rc %d, round %u, status 0x%x, windows 0x%x)", rc,
              r.seq, r.status, mask);
    expect(c, (1u << hosts) - 1, 1, half, sums);
    check_result(c, sums, "reset: others' round intact");
    printf("summary: multihost reset: a host's system_reset mid-round left "
           "the windows and the round of the others intact\n");
}

/* ---- sanitize: another host's memory-wide mailbox commands -------------- */

#define VICTIM_BASE     0xc00000ull     /* the victim's plain data */
#define VICTIM_SIZE     0x10000ull

static uint64_t victim_word(uint64_t i)
{
    uint64_t x = (i + 1) * 0x9e3779b97f4a7c15ull;

    return x ^ (x >> 29);
}

/*
 * Host 0, the victim: plain data and a G-Binary round of its own, then it
 * waits while every other host (a shell script: scripts/lib/cluster.sh)
 * destroys its own region and tries Sanitize and poison injection/clearing
 * over the victim's addresses; the last of them powering off ends the
 * wait.  Everything the victim wrote must be as it wrote it.
 */
static void case_sanitize(void)
{
    static int32_t sums[AGG_SIZE * 8];
    static const Case c = { NFABRIC_PATH_GBINARY, 8, 0, 1, 131 };
    volatile uint64_t *v = (volatile uint64_t *)mem(VICTIM_BASE, VICTIM_SIZE);
    uint64_t bad = 0;
    uint32_t others = ((1u << hosts) - 1) & ~1u, seen = 0;
    nfabric_heads hd;
    double t0;

    agg_window(&c, AGG_SIZE);
    contribute(&c, AGG_SIZE);
    for (uint64_t i = 0; i < VICTIM_SIZE / 8; i++) {
        v[i] = victim_word(i);
    }
    printf("NFABRIC-MARK victim ready rank=%u\n", rank);
    fflush(stdout);
    t0 = nf_now_s();
    do {
        nfabric_heads_read(dev, &hd);
        seen |= hd.live & others;
        if (seen == others && !(hd.live & others)) {
            break;
        }
        usleep(20000);
    } while (nf_now_s() - t0 < WAIT_MS / 1000.0);
    TAP_CHECK(seen == others && !(hd.live & others), "[rank 0] sanitize: "
              "the %u other hosts came, attacked and left (seen 0x%x, live "
              "0x%x, %.1f s)", hosts - 1, seen, hd.live, nf_now_s() - t0);
    for (uint64_t i = 0; i < VICTIM_SIZE / 8; i++) {
        bad += v[i] != victim_word(i);
    }
    TAP_CHECK(bad == 0, "[rank 0] sanitize: the victim's %llu KiB of plain "
              "data are as it wrote them (%" PRIu64 " words differ)",
              (unsigned long long)(VICTIM_SIZE >> 10), bad);
    expect(&c, 1, UINT32_MAX, 0, sums);
    if (check_result(&c, sums, "sanitize: the victim's round") && !bad) {
        printf("summary: multihost sanitize: another host's Sanitize and "
               "poison commands left the victim's data and counts intact\n");
    }
}

/* ---- jobs: a hostile host in a job of its own ---------------------------- */

/*
 * The fabric manager (scripts/lib/cluster.sh, case (i)) put heads 0 ..
 * N-2 in job 0 (windows 0-7 and 15, memory 0..16 MiB) and head N-1 in job
 * 1 (windows 8-13, memory 16..32 MiB).  The victims (job 0) run a G-Binary
 * round together and host 0 writes plain data; then they wait until the
 * fabric manager gives their job window 14 too (the sign that the
 * attacker is done).  The attacker, host N-1, tries every attack on the
 * victims' job.  Each must be refused, and the victims' results be theirs.
 */
#define JOB1_BASE       0x1000000ull
#define JOBS_SIGNAL     (1u << 14)

/*
 * This head's job's windows once the fabric manager gave the job any of
 * BITS (the harness's signal), or after WAIT_MS without them.
 */
static uint32_t job_windows_wait(uint32_t bits)
{
    nfabric_heads hd;
    double t0 = nf_now_s();

    do {
        nfabric_heads_read(dev, &hd);
        if (hd.job_windows & bits) {
            break;
        }
        usleep(20000);
    } while (nf_now_s() - t0 < WAIT_MS / 1000.0);
    return hd.job_windows;
}

static void attack_check(int rc, const char *what)
{
    TAP_CHECK(rc == NFABRIC_ERR_OWNER, "[rank %u] jobs: %s is refused with "
              "OWNER (rc %d: %s)", rank, what, rc,
              rc ? nfabric_errmsg(dev) : "done");
}

static void case_jobs_attacker(void)
{
    nfabric_win_cfg cover = {
        .base = JOB1_BASE, .size = AGG_SIZE, .counters = VICTIM_BASE,
        .path = NFABRIC_PATH_GBINARY, .width = 8, .threshold = 1,
    };
    nfabric_win_cfg steal = {
        .base = AGG_BASE, .size = AGG_SIZE, .counters = AGG_CTRS,
        .path = NFABRIC_PATH_GTERNARY, .width = 8, .threshold = 1,
    };
    volatile uint64_t *vd = (volatile uint64_t *)mem(VICTIM_BASE, 64);
    volatile uint64_t *vc = (volatile uint64_t *)mem(AGG_CTRS, 64);
    volatile uint64_t *va = (volatile uint64_t *)mem(AGG_BASE, 64);
    uint64_t w = 0, before, after;

    attack_check(nfabric_window_disable(dev, AGG_WIN),
                 "disabling the victim's window");
    attack_check(nfabric_window_set(dev, AGG_WIN, &steal),
                 "re-enabling the victim's window as G-Ternary");
    attack_check(nfabric_window_clear(dev, AGG_WIN),
                 "clearing the victim's window");
    attack_check(nfabric_round_complete(dev, AGG_WIN, 1),
                 "completing the victim's round");
    attack_check(nfabric_head_contrib(dev, 0, AGG_WIN, &w),
                 "reading the victim's per-head counts");
    attack_check(nfabric_window_set(dev, 8, &cover),
                 "a window of its own whose counter area covers the victim's "
                 "data");
    before = nfabric_rd32(dev, NFABRIC_REG_ERROR_COUNT);
    va[0] = ~0ull;              /* a contribution to the victim's round */
    vc[0] = 0x7f7f7f7f7f7f7f7full;      /* the victim's counters */
    vd[0] = 0;                  /* the victim's plain data */
    after = nfabric_rd32(dev, NFABRIC_REG_ERROR_COUNT);
    TAP_CHECK(after - before == 3 &&
              nfabric_rd32(dev, NFABRIC_REG_LAST_ERROR) == NFABRIC_ERR_OWNER,
              "[rank %u] jobs: its 3 writes into the victims' window, counters "
              "and data are refused with OWNER (%" PRIu64 " errors)", rank,
              after - before);
    TAP_CHECK(vd[0] == UINT64_MAX && vc[0] == UINT64_MAX && va[0] == UINT64_MAX,
              "[rank %u] jobs: it reads all-ones from the victims' data, "
              "counters and window", rank);
    TAP_CHECK(nfabric_rd32(dev, NFABRIC_REG_ENABLED_MASK) == 0 &&
              nfabric_rd64(dev, NFABRIC_REG_WIN(AGG_WIN, NFABRIC_WIN_DPA_BASE))
              == 0, "[rank %u] jobs: it sees none of the victims' windows",
              rank);
    printf("summary: multihost jobs: the attacker's every attack was refused "
           "with OWNER\n");
}

static void case_jobs_victim(void)
{
    static int32_t sums[AGG_SIZE * 8];
    static const Case c = { NFABRIC_PATH_GBINARY, 8, 0, 1, 151 };
    volatile uint64_t *v = (volatile uint64_t *)mem(VICTIM_BASE, VICTIM_SIZE);
    uint32_t victims = (1u << (hosts - 1)) - 1;
    uint64_t bad = 0;
    uint32_t windows;
    nfabric_round r;
    double t0;
    int rc;

    setup();                    /* the barrier: window 15, job 0's */
    if (rank == 0) {
        agg_window(&c, AGG_SIZE);
    }
    barrier("jobs: configured");
    contribute(&c, extent(rank, AGG_SIZE));
    if (rank == 0) {
        for (uint64_t i = 0; i < VICTIM_SIZE / 8; i++) {
            v[i] = victim_word(i);
        }
    }
    barrier("jobs: contributed");
    if (rank == 0) {
        printf("NFABRIC-MARK victims ready rank=%u\n", rank);
        fflush(stdout);
    }
    t0 = nf_now_s();
    windows = job_windows_wait(JOBS_SIGNAL);
    TAP_CHECK(windows & JOBS_SIGNAL, "[rank %u] jobs: the fabric "
              "manager gave the job window 14 after the attack (windows "
              "0x%04x, %.1f s)", rank, windows, nf_now_s() - t0);
    for (uint64_t i = 0; i < VICTIM_SIZE / 8; i++) {
        bad += v[i] != victim_word(i);
    }
    TAP_CHECK(bad == 0, "[rank %u] jobs: host 0's %llu KiB of plain data "
              "are as it wrote them (%" PRIu64 " words differ)", rank,
              (unsigned long long)(VICTIM_SIZE >> 10), bad);
    expect(&c, victims, UINT32_MAX, 0, sums);
    check_result(&c, sums, "jobs: the victims' round");
    nfabric_round_read(dev, AGG_WIN, &r);
    rc = nfabric_round_complete(dev, AGG_WIN, r.seq);
    if (!rc) {
        rc = nfabric_round_wait(dev, AGG_WIN, r.seq, WAIT_MS, &r);
    }
    TAP_CHECK(rc == 0 && r.all_done && !r.incomplete &&
              r.nexpected == hosts - 1, "[rank %u] jobs: the round expects "
              "its job's %u heads and completes clean (status 0x%x)", rank,
              hosts - 1, r.status);
    printf("summary: multihost jobs: the victims' data, counts and round are "
           "their own\n");
}

/*
 * The job the fabric manager put this head in, checked against the one it
 * should be in (the last host: job 1, the others: job 0); WHAT begins the
 * check's name.  -1 if the head is not in its job (or there is one host).
 */
static int my_job(const char *what)
{
    nfabric_heads hd;
    unsigned job = rank == hosts - 1 ? 1 : 0;

    nfabric_heads_read(dev, &hd);
    if (!TAP_CHECK(hosts >= 2 && hd.jobs_assigned && hd.job == job,
                   "[rank %u] %s in job %u (assigned %d, windows 0x%04x)",
                   rank, what, hd.job, hd.jobs_assigned, hd.job_windows)) {
        return -1;
    }
    return (int)job;
}

static void case_jobs(void)
{
    int job = my_job("jobs: the fabric manager put this head");

    if (job == 0) {
        case_jobs_victim();
    } else if (job == 1) {          /* the last host: the attacker */
        case_jobs_attacker();
    }
}

/* ---- reassign: the fabric manager moves memory between jobs ------------- */

/*
 * Case (m), docs/multihost.md "Reassignment".  The last host (job 1)
 * enables G-Binary window 9 over RE_BASE with its counters at RE_CTRS, in
 * its job's memory; the harness (scripts/lib/cluster.sh) then tries to give
 * that memory, and window 9's slot, to job 0: refused while window 9 is
 * enabled.  It signals job 1 (window slot 14) to disable the window, then
 * gives the memory and slot 14 to job 0.  Job 0's hosts then own the
 * memory: what they write there reads back, plain, and stays; job 1's
 * every access there is refused with OWNER.
 */
#define RE_WIN          9
#define RE_BASE         0x1400000ull    /* 20 MiB: job 1's, then job 0's */
#define RE_SIZE         0x10000ull
#define RE_CTRS         0x1800000ull    /* 24 MiB */
#define RE_SIGNAL       (1u << 14)

static uint64_t re_word(unsigned r, uint64_t i)
{
    return 0x5245415353000000ull ^ ((uint64_t)r << 40) ^ (i * 0x9e3779b97f4a7c15ull);
}

static void case_reassign_owner(void)
{
    nfabric_win_cfg w = {
        .base = RE_BASE, .size = RE_SIZE, .counters = RE_CTRS,
        .path = NFABRIC_PATH_GBINARY, .width = 8, .threshold = 1,
    };
    volatile uint64_t *d = (volatile uint64_t *)mem(RE_BASE, 64);
    volatile uint64_t *c = (volatile uint64_t *)mem(RE_CTRS, 64);
    uint64_t before, after, got = 0;
    uint32_t jw;
    double t0;
    int rc;

    rc = nfabric_window_set(dev, RE_WIN, &w);
    TAP_CHECK(rc == 0, "[rank %u] reassign: job 1 enables window %u over "
              "0x%llx, counters at 0x%llx (rc %d)", rank, RE_WIN,
              (unsigned long long)RE_BASE, (unsigned long long)RE_CTRS, rc);
    d[0] = ~0ull;               /* a contribution: 64 positive signs */
    TAP_CHECK(rc == 0 && d[0] == UINT64_MAX &&
              nfabric_rd32(dev, NFABRIC_REG_WIN(RE_WIN, NFABRIC_WIN_CONTRIB_WRITES)) == 1,
              "[rank %u] reassign: its window aggregates (majority read back, "
              "1 contribution)", rank);
    printf("NFABRIC-MARK reassign: window %u enabled\n", RE_WIN);
    fflush(stdout);
    jw = job_windows_wait(RE_SIGNAL);
    TAP_CHECK(jw & RE_SIGNAL, "[rank %u] reassign: the fabric manager asks "
              "job 1 to give its window up (window 14 in its slots: 0x%04x)",
              rank, jw);
    rc = nfabric_window_disable(dev, RE_WIN);
    TAP_CHECK(rc == 0, "[rank %u] reassign: job 1 disables window %u (rc %d)",
              rank, RE_WIN, rc);
    printf("REASSIGN-DISABLED\n");
    fflush(stdout);
    /* The memory goes to job 0: job 1's accesses there are refused. */
    t0 = nf_now_s();
    do {
        got = d[0];
        if (got == UINT64_MAX &&
            nfabric_rd32(dev, NFABRIC_REG_LAST_ERROR) == NFABRIC_ERR_OWNER) {
            break;
        }
        usleep(20000);
    } while (nf_now_s() - t0 < WAIT_MS / 1000.0);
    TAP_CHECK(got == UINT64_MAX, "[rank %u] reassign: once the memory is job "
              "0's, job 1 reads all-ones there (OWNER, after %.1f s)", rank,
              nf_now_s() - t0);
    before = nfabric_rd32(dev, NFABRIC_REG_ERROR_COUNT);
    d[1] = 0;
    c[1] = 0;
    after = nfabric_rd32(dev, NFABRIC_REG_ERROR_COUNT);
    TAP_CHECK(after - before == 2 &&
              nfabric_rd32(dev, NFABRIC_REG_LAST_ERROR) == NFABRIC_ERR_OWNER &&
              c[0] == UINT64_MAX,
              "[rank %u] reassign: its writes to the memory it gave away (data "
              "and former counters) are refused with OWNER (%" PRIu64
              " errors), its reads return all-ones", rank, after - before);
    rc = nfabric_window_set(dev, RE_WIN, &w);
    TAP_CHECK(rc == NFABRIC_ERR_OWNER, "[rank %u] reassign: enabling window "
              "%u over it again is refused with OWNER (rc %d)", rank, RE_WIN,
              rc);
    printf("summary: multihost reassign: job 1 gave its window up before its "
           "memory went; then it reaches nothing there\n");
}

static void case_reassign_new_owner(void)
{
    volatile uint64_t *d, *c;
    uint64_t n = 0x1000 / 8, bad = 0, bad_later = 0;
    uint32_t jw;

    jw = job_windows_wait(RE_SIGNAL);
    TAP_CHECK(jw & RE_SIGNAL, "[rank %u] reassign: the fabric manager gave job "
              "0 the memory and window 14 (slots 0x%04x)", rank, jw);
    d = (volatile uint64_t *)mem(RE_BASE + rank * 0x1000, 0x1000);
    c = (volatile uint64_t *)mem(RE_CTRS + rank * 0x1000, 0x1000);
    for (uint64_t i = 0; i < n; i++) {
        d[i] = re_word(rank, i);
        c[i] = ~re_word(rank, i);
    }
    for (uint64_t i = 0; i < n; i++) {
        bad += d[i] != re_word(rank, i) || c[i] != ~re_word(rank, i);
    }
    TAP_CHECK(bad == 0 && nfabric_rd32(dev, NFABRIC_REG_LAST_ERROR) ==
              NFABRIC_ERR_NONE,
              "[rank %u] reassign: job 0 writes 4 KiB where job 1's window "
              "and counters were and reads them back as written (%" PRIu64
              " words differ)", rank, bad);
    sleep(3);                   /* job 1 tries its writes meanwhile */
    for (uint64_t i = 0; i < n; i++) {
        bad_later += d[i] != re_word(rank, i) || c[i] != ~re_word(rank, i);
    }
    TAP_CHECK(bad_later == 0, "[rank %u] reassign: 3 s later, after job 1's "
              "attempts, they are unchanged (%" PRIu64 " words differ)", rank,
              bad_later);
    printf("summary: multihost reassign: job 0's new memory is its own\n");
}

static void case_reassign(void)
{
    int job = my_job("reassign:");

    if (job == 1) {
        case_reassign_owner();
    } else if (job == 0) {
        case_reassign_new_owner();
    }
}

/* ---- pause: a host stopped (SIGSTOP) at any instruction ----------------- */

/*
 * Host 1 enables, clears and disables a G-Binary window with a 64 MiB
 * counter area over and over for --iters seconds; the harness stops its
 * QEMU (SIGSTOP) now and then (scripts/lib/cluster.sh, case (j)).  Host 0,
 * meanwhile, writes and reads plain memory and writes a window of its own,
 * timing every access, and now and then CLEARs its window (a register
 * write, which waits for the configuration lock a stopped host may hold).
 * No access of host 0 may wait for host 1; a register write waits at most
 * the bound, then is refused with STATE.
 */
#define PAUSE_WIN       1
#define PAUSE_BASE      0x2000000ull    /* 4 MiB of 16-bit G-Binary ... */
#define PAUSE_SIZE      0x400000ull
#define PAUSE_CTRS      0x4000000ull    /* ... counted in 64 MiB */
#define PAUSE_PLAIN     0x9000000ull
#define PAUSE2_WIN      2               /* host 0 enables it on and off */
#define PAUSE2_BASE     0x9100000ull
#define PAUSE2_CTRS     0x9200000ull

static void case_pause_churn(void)
{
    nfabric_win_cfg cfg = {
        .base = PAUSE_BASE, .size = PAUSE_SIZE, .counters = PAUSE_CTRS,
        .path = NFABRIC_PATH_GBINARY, .width = 16, .threshold = 1,
    };
    double t0 = nf_now_s();
    unsigned n = 0, refused = 0;

    printf("NFABRIC-MARK churning rank=%u\n", rank);
    fflush(stdout);
    while (nf_now_s() - t0 < iters) {
        refused += nfabric_window_set(dev, PAUSE_WIN, &cfg) != 0;
        refused += nfabric_window_clear(dev, PAUSE_WIN) != 0;
        refused += nfabric_window_disable(dev, PAUSE_WIN) != 0;
        n++;
    }
    TAP_CHECK(n > 0, "[rank %u] pause: %u enable/clear/disable cycles of a "
              "window with a 64 MiB counter area in %u s (%u refused)", rank,
              n, iters, refused);
}

/*
 * Every host but host 1 probes, each with windows and memory of its own:
 * rank 0 the aggregation window and PAUSE2_WIN, rank r >= 2 windows 6 + r
 * and 10 + r, 64 KiB further on per rank.
 */
static void case_pause_probe(void)
{
    uint64_t at = rank ? (uint64_t)rank * 0x10000 : 0;
    unsigned own_win = rank ? 6 + rank : AGG_WIN;
    unsigned en_win = rank ? 10 + rank : PAUSE2_WIN;
    nfabric_win_cfg c = {
        .base = AGG_BASE + at, .size = 4096, .counters = AGG_CTRS + 8 * at,
        .path = NFABRIC_PATH_GBINARY, .width = 8, .threshold = 1,
    };
    volatile uint64_t *p = (volatile uint64_t *)mem(PAUSE_PLAIN + at, 4096);
    volatile uint64_t *w = (volatile uint64_t *)mem(c.base, 8);
    nfabric_win_cfg c2 = {
        .base = PAUSE2_BASE + at, .size = 4096, .counters = PAUSE2_CTRS + 8 * at,
        .path = NFABRIC_PATH_GBINARY, .width = 8, .threshold = 1,
    };
    int rc0;
    double t0 = nf_now_s(), next_reg = t0;
    double plain_max = 0, win_max = 0, reg_max = 0;
    double done_max = 0;
    unsigned dones = 0, done_refused = 0;
    double en_max = 0, peer_min = 1e9, peer_max = 0;
    uint64_t n = 0, bad = 0, regs = 0, reg_refused = 0;
    unsigned ens = 0, en_ok = 0, en_peer = 0, en_state = 0, en_other = 0;
    int other_rc = 0;           /* the first other refusal, to say it */
    unsigned other_at = 0;      /* and which enable it was */
    bool peer_left_on = false;

    if ((rc0 = nfabric_window_set(dev, own_win, &c))) {
        die("pause: the probe's own window", rc0);
    }
    while (nf_now_s() - t0 < iters) {
        uint64_t v = 0x9e3779b97f4a7c15ull * (n + 1);
        double a = nf_now_s(), b;

        p[n % 512] = v;
        bad += p[n % 512] != v;
        b = nf_now_s();
        plain_max = b - a > plain_max ? b - a : plain_max;
        w[0] = v;
        a = nf_now_s();
        win_max = a - b > win_max ? a - b : win_max;
        if (a >= next_reg && regs % 2 == 1) {
            /*
             * An enable: it waits until host 1's map traps the window, so
             * while host 1 is stopped it is given up with PEER within the
             * bound (or STATE, if host 1 stopped holding the lock).
             */
            int rc = nfabric_window_set(dev, en_win, &c2);
            nfabric_win_state ws;

            b = nf_now_s();
            en_max = b - a > en_max ? b - a : en_max;
            ens++;
            if (rc == 0) {
                en_ok++;
                nfabric_window_disable(dev, en_win);
            } else if (rc == NFABRIC_ERR_PEER) {
                en_peer++;
                peer_min = b - a < peer_min ? b - a : peer_min;
                peer_max = b - a > peer_max ? b - a : peer_max;
                nfabric_window_get(dev, en_win, &ws);
                peer_left_on |= ws.enabled;
            } else if (rc == NFABRIC_ERR_STATE) {
                en_state++;
            } else {
                if (!en_other++) {
                    other_rc = rc;
                    other_at = ens;
                }
            }
            regs++;
            next_reg = nf_now_s() + 0.05;
        } else if (a >= next_reg) {
            int rc = nfabric_window_clear(dev, own_win);

            b = nf_now_s();
            reg_max = b - a > reg_max ? b - a : reg_max;
            reg_refused += apart ? rc != 0 : rc == NFABRIC_ERR_STATE;
            regs++;
            if (apart) {
                /* A round completion of its own window, timed too. */
                nfabric_round r;

                a = nf_now_s();
                rc = nfabric_round_read(dev, own_win, &r);
                rc = rc ? rc : nfabric_round_complete(dev, own_win, r.seq);
                b = nf_now_s();
                done_max = b - a > done_max ? b - a : done_max;
                done_refused += rc != 0;
                dones++;
            }
            next_reg = b + 0.05;
        }
        n++;
    }
    TAP_CHECK(bad == 0, "[rank %u] pause: %" PRIu64 " plain 8-byte writes "
              "read back exactly (%" PRIu64 " differ)", rank, n, bad);
    TAP_CHECK(plain_max < 0.5, "[rank %u] pause: no plain access waited for "
              "the other host (longest %.0f ms)", rank, plain_max * 1e3);
    TAP_CHECK(win_max < 0.5, "[rank %u] pause: no access to its own window "
              "waited for the other host (longest %.0f ms)", rank, win_max * 1e3);
    if (apart) {
        /* Host 1 is another job's: nothing of it may hold this host up. */
        TAP_CHECK(reg_refused == 0 && done_refused == 0 &&
                  reg_max < NFABRIC_APART_BOUND_S && done_max < NFABRIC_APART_BOUND_S,
                  "[rank %u] apart: while host 1 (job 1) churned and was "
                  "stopped, every CLEAR and round completion of its own "
                  "(%" PRIu64 " and %u) succeeded (%" PRIu64 " and %u refused), "
                  "the slowest in %.0f and %.0f ms", rank, regs - ens, dones,
                  reg_refused, done_refused, reg_max * 1e3, done_max * 1e3);
        TAP_CHECK(ens > 0 && en_ok == ens &&
                  en_max < NFABRIC_APART_ENABLE_S + plain_max,
                  "[rank %u] apart: of %u enables, %u succeeded (%u PEER, %u "
                  "STATE, %u other), the slowest in %.0f ms (bound %.0f ms and "
                  "its slowest plain access, %.0f ms)", rank, ens, en_ok,
                  en_peer, en_state, en_other, en_max * 1e3,
                  NFABRIC_APART_ENABLE_S * 1e3, plain_max * 1e3);
        printf("summary: multihost apart: longest plain access %.0f ms, own "
               "window %.0f ms, register write %.0f ms, enable %.0f ms, round "
               "completion %.0f ms\n", plain_max * 1e3, win_max * 1e3,
               reg_max * 1e3, en_max * 1e3, done_max * 1e3);
        return;
    }
    TAP_CHECK(reg_max < NFABRIC_PAUSE_REG_BOUND_S, "[rank %u] pause: a register "
              "write waited at most the bound (longest %.0f ms; %" PRIu64 " of "
              "%" PRIu64 " refused with STATE while the other host held the "
              "configuration lock)", rank, reg_max * 1e3, reg_refused, regs);
    TAP_CHECK(en_peer > 0 && en_ok > 0 && en_other == 0 && !peer_left_on &&
              peer_min >= 1.0 && peer_max < NFABRIC_PAUSE_PEER_BOUND_S &&
              en_max < NFABRIC_PAUSE_SET_BOUND_S,
              "[rank %u] pause: of %u enables, %u succeeded and %u were given "
              "up with PEER while host 1 was stopped (%.0f to %.0f ms, the "
              "window left off), %u STATE, %u other; the longest took %.0f ms",
              rank, ens, en_ok, en_peer, peer_min * 1e3, peer_max * 1e3, en_state,
              en_other, en_max * 1e3);
    if (en_other) {
        printf("# pause: the first other refusal: enable %u of %u, %d (%s)\n",
               other_at, ens, other_rc, nfabric_strerror(other_rc));
    }
    printf("summary: multihost pause: longest plain access %.0f ms, own "
           "window %.0f ms, register write %.0f ms (%" PRIu64 "/%" PRIu64
           " refused)\n", plain_max * 1e3, win_max * 1e3, reg_max * 1e3,
           reg_refused, regs);
}

static void case_pause(void)
{
    if (!apart) {
        barrier("pause: start");        /* (with --apart, no window in common) */
    }
    if (rank == 1) {
        case_pause_churn();
    } else {
        case_pause_probe();
    }
}

/* ---- own: a head's own ranges, mapped directly ------------------------- */

/*
 * The fabric manager gives job 0 (every head) the first 64 MiB and each
 * head 16 MiB of its own (scripts/lib/cluster.sh, case (k)).  A head's QEMU
 * maps what it reaches (its own range and the job's) into the guest as RAM
 * and traps the rest: each host times 8-byte plain writes to its own
 * range, to guest RAM and to the job's memory, checks that the device
 * counted none of them, aggregates in a window inside its own range, and
 * finds the other head's range refused.
 */
#define OWN_BASE(r)     (0x4000000ull + (uint64_t)(r) * 0x1000000ull)
#define OWN_WIN(r)      (4 + (r))
#define OWN_JOB_PLAIN   0x3000000ull    /* the job's plain memory */
#define OWN_SPAN        (1ull << 20)    /* what the write loops go over */

static uint64_t own_word(uint64_t i)
{
    return 0x9e3779b97f4a7c15ull * (i + 1) + rank;
}

/* n 8-byte stores over span bytes at p; seconds taken. */
static double own_loop(volatile uint64_t *p, uint64_t n)
{
    double t0 = nf_now_s();

    for (uint64_t i = 0; i < n; i++) {
        p[i % (OWN_SPAN / 8)] = own_word(i);
    }
    return nf_now_s() - t0;
}

/* What the last pass of own_loop(p, n) left (n a multiple of the span). */
static uint64_t own_bad(volatile uint64_t *p, uint64_t n)
{
    uint64_t words = OWN_SPAN / 8, bad = 0;

    for (uint64_t j = 0; j < words; j++) {
        bad += p[j] != own_word(n - words + j);
    }
    return bad;
}

static uint64_t fp32_writes(void)
{
    nfabric_path_stats st[NFABRIC_NUM_PATHS];

    nfabric_stats(dev, st);
    return st[NFABRIC_PATH_FP32].writes;
}

/*
 * Time n 8-byte plain writes to p and the same to guest RAM (after one pass
 * over each to fault the pages in); returns the writes the device counted
 * meanwhile on p (0 if p is mapped directly).
 */
static uint64_t time_plain(volatile uint64_t *p, uint64_t n, double *t_p,
                           double *t_ram)
{
    uint64_t *ram = aligned_alloc(4096, OWN_SPAN);
    uint64_t c0, c1;

    if (!ram) {
        die("allocate guest RAM", -ENOMEM);
    }
    own_loop(p, OWN_SPAN / 8);
    own_loop((volatile uint64_t *)ram, OWN_SPAN / 8);
    c0 = fp32_writes();
    *t_p = own_loop(p, n);
    c1 = fp32_writes();
    *t_ram = own_loop((volatile uint64_t *)ram, n);
    free(ram);
    return c1 - c0;
}

static void case_own(void)
{
    nfabric_win_cfg cfg = {
        .base = OWN_BASE(rank) + 0x100000, .size = 4096,
        .counters = OWN_BASE(rank) + 0x200000,
        .path = NFABRIC_PATH_GBINARY, .width = 8, .threshold = 1,
    };
    volatile uint64_t *own = (volatile uint64_t *)mem(OWN_BASE(rank), OWN_SPAN);
    volatile uint64_t *job = (volatile uint64_t *)
        mem(OWN_JOB_PLAIN + rank * OWN_SPAN, OWN_SPAN);
    volatile uint64_t *w = (volatile uint64_t *)mem(cfg.base, 16);
    unsigned other = (rank + 1) % hosts;
    volatile uint64_t *theirs = (volatile uint64_t *)mem(OWN_BASE(other), 16);
    uint64_t fast = bench_bytes / 8, slow = (2ull << 20) / 8;
    uint64_t c1, c2, counted, errs, seen, bad;
    double t_own, t_ram, t_job;
    int32_t plus = 0, minus = 0, ctr0;
    int rc;

    fast -= fast % (OWN_SPAN / 8);
    counted = time_plain(own, fast, &t_own, &t_ram);
    c1 = fp32_writes();
    t_job = own_loop(job, slow);
    c2 = fp32_writes();
    TAP_CHECK(counted == 0 && own_bad(own, fast) == 0, "[rank %u] own: %"
              PRIu64 " plain writes to its own range read back exactly and "
              "none went through the device (it counted %" PRIu64 ")", rank,
              fast, counted);
    TAP_CHECK(c2 == c1 && own_bad(job, slow) == 0, "[rank %u] own: "
              "its %" PRIu64 " writes to the job's memory are mapped directly "
              "too (the device counted %" PRIu64 ") and read back exactly",
              rank, slow, c2 - c1);
    printf("mh_own rank=%u own_mbps=%.1f ram_mbps=%.1f job_mbps=%.1f\n",
           rank, fast * 8 / t_own / 1e6, fast * 8 / t_ram / 1e6,
           slow * 8 / t_job / 1e6);

    rc = nfabric_window_set(dev, OWN_WIN(rank), &cfg);
    if (rc) {
        die("own: a window in its own range", rc);
    }
    w[0] = ~0ull;               /* 64 signs +1 ... */
    w[1] = 0;                   /* ... and 64 signs -1 */
    for (unsigned e = 0; e < 64; e++) {
        plus += nfabric_counter(dev, cfg.counters, 8, e) == 1;
        minus += nfabric_counter(dev, cfg.counters, 8, 64 + e) == -1;
    }
    TAP_CHECK(plus == 64 && minus == 64, "[rank %u] own: a G-Binary window "
              "inside its own range aggregates (%d of 64 counters +1, %d of 64 "
              "-1)", rank, plus, minus);
    barrier("own: written");

    errs = nfabric_rd32(dev, NFABRIC_REG_ERROR_COUNT);
    seen = theirs[0];
    theirs[1] = 0;
    errs = nfabric_rd32(dev, NFABRIC_REG_ERROR_COUNT) - errs;
    TAP_CHECK(seen == UINT64_MAX && errs == 2 &&
              nfabric_rd32(dev, NFABRIC_REG_LAST_ERROR) == NFABRIC_ERR_OWNER,
              "[rank %u] own: head %u's range reads all-ones and takes no "
              "write (%" PRIu64 " OWNER errors)", rank, other, errs);
    barrier("own: tried");
    bad = own_bad(own, fast);
    ctr0 = nfabric_counter(dev, cfg.counters, 8, 0);
    TAP_CHECK(bad == 0 && ctr0 == 1,
              "[rank %u] own: its data and counts are as it left them (%"
              PRIu64 " of its last %u words differ, counter 0 is %" PRId32
              ")", rank, bad, (unsigned)(OWN_SPAN / 8), ctr0);
    nfabric_window_disable(dev, OWN_WIN(rank));
    printf("summary: multihost own: plain writes to its own range %.1f MB/s, "
           "guest RAM %.1f MB/s, the job's memory %.1f MB/s\n",
           fast * 8 / t_own / 1e6, fast * 8 / t_ram / 1e6,
           slow * 8 / t_job / 1e6);
}

/* ---- direct: every head maps plain memory, the map protocol ------------- */

/*
 * Without a fabric manager every head's QEMU maps all device memory but the
 * windows into its guest as RAM.  Each host times 8-byte plain writes to a
 * region of its own and to guest RAM (figure mh_direct) and checks the
 * device counted none of them.  Then every host writes the aggregation
 * window's data range and counter area directly (its map holds them as
 * RAM), head 0 enables a G-Binary window there, and once it is on every
 * host contributes with mixed-size stores: the counts and the read-out must
 * be every host's input, which they are only if every head's map trapped
 * the window before the enable returned (map protocol).
 */
#define DIRECT_PLAIN(r) (0x3000000ull + (uint64_t)(r) * OWN_SPAN)

static void case_direct(void)
{
    static const Case c = { NFABRIC_PATH_GBINARY, 8, 0, 1, 181 };
    static int32_t sums[AGG_SIZE * 8];
    volatile uint64_t *plain = (volatile uint64_t *)mem(DIRECT_PLAIN(rank),
                                                         OWN_SPAN);
    volatile uint64_t *data = (volatile uint64_t *)mem(AGG_BASE, AGG_SIZE);
    volatile uint64_t *ctrs = (volatile uint64_t *)mem(AGG_CTRS, AGG_SIZE * 8);
    uint64_t fast = bench_bytes / 8;
    uint64_t counted, c1, c2;
    nfabric_round r;
    double t_plain, t_ram, t_en = 0;
    int rc;

    fast -= fast % (OWN_SPAN / 8);
    counted = time_plain(plain, fast, &t_plain, &t_ram);
    TAP_CHECK(counted == 0 && own_bad(plain, fast) == 0, "[rank %u] direct: %"
              PRIu64 " plain writes with no fabric manager read back exactly "
              "and none went through the device (it counted %" PRIu64 ")",
              rank, fast, counted);
    printf("mh_direct rank=%u plain_mbps=%.1f ram_mbps=%.1f\n", rank,
           fast * 8 / t_plain / 1e6, fast * 8 / t_ram / 1e6);

    /* The window's memory, written as RAM by every host just before. */
    barrier("direct: start");
    for (unsigned pass = 0; pass < 4; pass++) {
        for (uint64_t i = 0; i < AGG_SIZE / 8; i++) {
            data[i] = own_word(i + pass);
        }
        for (uint64_t i = 0; i < AGG_SIZE; i++) {
            ctrs[i] = own_word(i * 3 + pass);
        }
    }
    c1 = fp32_writes();
    barrier("direct: warmed");
    if (rank == 0) {
        double t0 = nf_now_s();

        agg_window(&c, AGG_SIZE);
        t_en = nf_now_s() - t0;
    }
    barrier("direct: enabled");
    nfabric_round_read(dev, AGG_WIN, &r);
    contribute(&c, extent(rank, AGG_SIZE));
    c2 = fp32_writes();
    if ((rc = nfabric_round_complete(dev, AGG_WIN, r.seq))) {
        die("direct: complete", rc);
    }
    if ((rc = nfabric_round_wait(dev, AGG_WIN, r.seq, WAIT_MS, &r))) {
        die("direct: wait for the round", rc);
    }
    TAP_CHECK(c2 == c1, "[rank %u] direct: its contributions were counted on "
              "the G-Binary path, none as plain FP32 writes (%" PRIu64 ")",
              rank, c2 - c1);
    expect(&c, (1u << hosts) - 1, UINT32_MAX, 0, sums);
    check_result(&c, sums, "direct: a window over memory every host had "
                 "mapped as RAM");
    barrier("direct: checked");
    if (rank == 0) {
        nfabric_window_disable(dev, AGG_WIN);
        printf("summary: multihost direct: plain writes %.1f MB/s, guest RAM "
               "%.1f MB/s; enable with %u heads mapping directly %.1f ms\n",
               fast * 8 / t_plain / 1e6, fast * 8 / t_ram / 1e6, hosts,
               t_en * 1e3);
    }
}

/* ---- bench: contribution throughput ------------------------------------- */

static void bench_run(bool shared);
static void bench_floor(bool shared, uint64_t n);

static void case_bench(void)
{
    bench_run(true);
}

static void case_bench_single(void)
{
    bench_run(false);
}

/*
 * The trapped-access floor: QEMU's "edu" device (PCI 1234:11e8, when the
 * VM has one), whose BAR 0 takes 8-byte stores beyond its registers and
 * does nothing with them.  A store there costs what any access that leaves
 * the guest costs under the accelerator (the exit, the dispatch, the big
 * lock), with no device work: what a window's access costs beyond it is
 * the device's.  NULL if there is no such device.
 */
#define EDU_STORE_OFF   0x1000u         /* past edu's registers */
#define EDU_STORE_SPAN  0x10000u

static volatile uint64_t *edu_bar(void)
{
    DIR *d = opendir("/sys/bus/pci/devices");
    struct dirent *e;
    volatile uint64_t *bar = NULL;

    if (!d) {
        return NULL;
    }
    while (!bar && (e = readdir(d))) {
        char path[512], id[16] = "";
        unsigned vendor = 0, device = 0;
        uint8_t cmd[2];
        FILE *f;
        void *p;
        int fd;

        if (e->d_name[0] == '.') {
            continue;
        }
        snprintf(path, sizeof(path), "/sys/bus/pci/devices/%s/vendor", e->d_name);
        if ((f = fopen(path, "r"))) {
            if (fgets(id, sizeof(id), f)) {
                vendor = (unsigned)strtoul(id, NULL, 16);
            }
            fclose(f);
        }
        snprintf(path, sizeof(path), "/sys/bus/pci/devices/%s/device", e->d_name);
        if ((f = fopen(path, "r"))) {
            if (fgets(id, sizeof(id), f)) {
                device = (unsigned)strtoul(id, NULL, 16);
            }
            fclose(f);
        }
        if (vendor != 0x1234 || device != 0x11e8) {
            continue;
        }
        /* No driver binds it: make sure it decodes its memory BAR. */
        snprintf(path, sizeof(path), "/sys/bus/pci/devices/%s/config", e->d_name);
        if ((fd = open(path, O_RDWR)) >= 0) {
            if (pread(fd, cmd, 2, 4) == 2 && !(cmd[0] & 2)) {
                cmd[0] |= 2;
                if (pwrite(fd, cmd, 2, 4) != 2) {
                    diag("edu: cannot enable memory decoding: %s", strerror(errno));
                }
            }
            close(fd);
        }
        snprintf(path, sizeof(path), "/sys/bus/pci/devices/%s/resource0", e->d_name);
        if ((fd = open(path, O_RDWR | O_SYNC)) < 0) {
            diag("edu: %s: %s", path, strerror(errno));
            continue;
        }
        p = mmap(NULL, EDU_STORE_OFF + EDU_STORE_SPAN, PROT_READ | PROT_WRITE,
                 MAP_SHARED, fd, 0);
        close(fd);
        if (p == MAP_FAILED) {
            diag("edu: mmap %s: %s", path, strerror(errno));
            continue;
        }
        bar = (volatile uint64_t *)((uint8_t *)p + EDU_STORE_OFF);
    }
    closedir(d);
    return bar;
}

/* n 8-byte stores to the floor device, the hosts together. */
static void bench_floor(bool shared, uint64_t n)
{
    volatile uint64_t *bar = edu_bar();
    uint64_t v = ham_pattern(rank, 1);
    double t0, t1;

    if (bar) {
        for (uint64_t i = 0; i < EDU_STORE_SPAN / 8; i++) {
            bar[i] = v;         /* untimed, as the windows' first pass */
        }
    }
    if (shared) {
        barrier("bench: floor");
    }
    if (bar) {
        t0 = nf_now_s();
        for (uint64_t i = 0; i < n; i++) {
            bar[i % (EDU_STORE_SPAN / 8)] = v;
        }
        t1 = nf_now_s();
        printf("mh_bench rank=%u path=floor bytes=%" PRIu64 " seconds=%.6f "
               "mbps=%.3f\n", rank, n * 8, t1 - t0, n * 8 / (t1 - t0) / 1e6);
    } else {
        diag("bench: no edu device: no trapped-access floor");
    }
    if (shared) {
        barrier("bench: floor measured");
    }
}

static double bench_stores(nfabric_dev *d, uint64_t from, uint64_t to);

/*
 * Window 2 of device D made a PATH window over BENCH_BASE (by host 0; the
 * others wait for it when the device is shared), then one untimed pass
 * over it (its pages touched, the loop translated).
 */
static void bench_window(nfabric_dev *d, unsigned path, bool shared)
{
    nfabric_win_cfg cfg = {
        .base = BENCH_BASE, .size = BENCH_WIN, .counters = BENCH_CTRS,
        .path = path, .width = 8, .threshold = 1,
    };
    nfabric_win_state ws;
    int rc;

    if (rank == 0) {
        nfabric_window_get(d, 2, &ws);
        if (ws.enabled) {
            nfabric_window_disable(d, 2);
        }
        if ((rc = nfabric_window_set(d, 2, &cfg))) {
            die("bench: set the window", rc);
        }
    }
    if (shared) {
        barrier("bench: configured");
    }
    bench_stores(d, 0, BENCH_WIN / 8);
}

/*
 * Words [from, to) of the loop (word i at word i % BENCH_WIN / 8 of the
 * window) written into device D's window memory by nfabric_mem_write, a
 * piece of the window per call, as a runtime writes its contributions (8-
 * byte stores; on a shared device each head begins at its share of the
 * piece: docs/multihost.md); the seconds taken.
 */
static double bench_stores(nfabric_dev *d, uint64_t from, uint64_t to)
{
    static uint64_t buf[BENCH_WIN / 8];
    const uint64_t words = BENCH_WIN / 8;
    uint64_t v = ham_pattern(rank, 0);
    double t0;
    int rc;

    if (buf[0] != v) {
        for (uint64_t i = 0; i < words; i++) {
            buf[i] = v;
        }
    }
    t0 = nf_now_s();
    for (uint64_t i = from; i < to;) {
        uint64_t at = i % words;
        uint64_t n = to - i < words - at ? to - i : words - at;

        if ((rc = nfabric_mem_write(d, BENCH_BASE + at * 8, buf, n * 8))) {
            die("bench: write the window", rc);
        }
        i += n;
    }
    return nf_now_s() - t0;
}

/* The round of window 2 of D completed and waited for; the figure printed. */
static void bench_done(nfabric_dev *d, const nfabric_round *r, unsigned path,
                       const char *prefix, double seconds)
{
    uint64_t bytes = bench_bytes / 8 * 8;
    nfabric_round end;

    nfabric_round_complete(d, 2, r->seq);
    nfabric_round_wait(d, 2, r->seq, WAIT_MS, &end);
    printf("mh_bench rank=%u path=%s%s bytes=%" PRIu64 " seconds=%.6f "
           "mbps=%.3f\n", rank, prefix, nfabric_path_name(path), bytes,
           seconds, bytes / seconds / 1e6);
}

/*
 * PATH's contribution loop on the shared device: bench_bytes of packed
 * data into window 2 with 8-byte stores, the hosts started together.
 */
static void bench_path(unsigned path, bool shared)
{
    nfabric_round r;
    double t;

    bench_window(dev, path, shared);
    if (shared) {
        barrier("bench: warmed");
    }
    nfabric_round_read(dev, 2, &r);
    t = bench_stores(dev, 0, bench_bytes / 8);
    bench_done(dev, &r, path, "", t);
    if (shared) {
        barrier("bench: measured");
    }
}

/*
 * The same loop on this head and on OTHER, a device that is not shared,
 * in BENCH_SLICES turns (a slice of the loop on one, then on the other):
 * whatever the machine does meanwhile falls on both alike.
 */
static void bench_pair(nfabric_dev *other, unsigned path)
{
    uint64_t n = bench_bytes / 8, from = 0;
    nfabric_round r, ru;
    double t = 0, tu = 0;

    bench_window(dev, path, false);
    bench_window(other, path, false);
    nfabric_round_read(dev, 2, &r);
    nfabric_round_read(other, 2, &ru);
    for (unsigned k = 1; k <= BENCH_SLICES; k++) {
        uint64_t to = n * k / BENCH_SLICES;

        t += bench_stores(dev, from, to);
        tu += bench_stores(other, from, to);
        from = to;
    }
    bench_done(dev, &r, path, "", t);
    bench_done(other, &ru, path, "unshared_", tu);
}

/*
 * Beside a single head of a shared device (bench cluster's one-head VM),
 * a device that is not shared: the first such other NEURON-Fabric device
 * with memory, opened into *out; false if the VM has none.
 */
static bool bench_beside(nfabric_dev **out)
{
    for (unsigned k = 0; k < 8; k++) {
        nfabric_dev *d = nfabric_new();
        nfabric_heads h;
        char name[16];

        snprintf(name, sizeof(name), "mem%u", k);
        if (d && nfabric_open_dev(d, name, 0) == 0 &&
            strcmp(nfabric_pci_name(d), nfabric_pci_name(dev)) &&
            nfabric_heads_read(d, &h) == 0 && !h.shared) {
            *out = d;
            return true;
        }
        nfabric_free(d);
    }
    return false;
}

/*
 * Whole rounds (bench cluster's posted and plain loops): every head writes
 * a bucket of packed signs (bench_bytes, halved until the layout below fits
 * in the mapping) with plain 8-byte stores, the heads wait for each other,
 * each reads a bucket back with plain 8-byte loads.
 *
 * posted: the stores go to RND_WIN, a posted G-Binary window (width 8, tie
 * negative) over the bucket, the same range for every head (each head's
 * own staging, as the ranks of a job write theirs); then POST of the
 * bucket (head h of n from h/n of it, as nfabric_mem_write posts; two
 * doorbells), ROUND_COMPLETE, the wait for the round's ALL_DONE, FETCH, the
 * loads of the read-out, and the barrier of everyone's read-back, after
 * which head 0 CLEARs the window (the next round); the other heads wait
 * for that clear before their next POST, not before their stores (the
 * staging is theirs alone).
 *
 * plain: the same stores into plain device memory (a bucket of each
 * head's own, as its staging is its own), the barrier (a round of the FP32
 * window BAR_WIN) in place of the window's round, the same loads of the
 * bucket, the barrier of everyone's read-back.
 *
 * One untimed round of each loop first, checked (the read-out against the
 * majority of every head's signs, on every RND_STRIDE-th word; the plain
 * read-back against what this head wrote), then runs of K rounds started
 * together and timed on each head (bench_rounds), this head's fastest:
 *   mh_rounds rank=R path=plain|gbinary_posted bytes=B rounds=K
 *             seconds=S mbps=M          (M = B * K / S / 1e6, this head's)
 */
#define RND_WIN         3
#define RND_BASE        0x2000000ull    /* past window 2's counters */
#define RND_STRIDE      61              /* words checked in the first round */
#define BENCH_ROUNDS    8

static uint64_t rnd_sink;

/* Head h's word i (round g's is this ^ rnd_mask(g)): mixed bits. */
static uint64_t rnd_word(unsigned h, uint64_t i)
{
    uint64_t z = (i << 5 | h) * 0x9e3779b97f4a7c15ull;

    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

static uint64_t rnd_mask(unsigned g)
{
    return g * 0x9e3779b97f4a7c15ull;
}

/* G-Binary's read-out of word i of round g: every head's majority, tie 0. */
static uint64_t rnd_majority(uint64_t i, unsigned g)
{
    uint64_t out = 0, w[16];

    for (unsigned h = 0; h < hosts; h++) {
        w[h] = rnd_word(h, i) ^ rnd_mask(g);
    }
    for (unsigned b = 0; b < 64; b++) {
        unsigned ones = 0;

        for (unsigned h = 0; h < hosts; h++) {
            ones += (unsigned)(w[h] >> b) & 1;
        }
        out |= (uint64_t)(2 * ones > hosts) << b;
    }
    return out;
}

/*
 * Round g of a loop over the bucket p (words 8-byte words; src this head's
 * words, ^ rnd_mask(g)); *seq: the posted window's round, this one's on
 * return.  With check, the read-back is compared (posted: with the
 * majority; plain: with what was written); false if it or the round was
 * wrong.
 */
static bool rnd_round(bool posted, volatile uint64_t *p, const uint64_t *src,
                      uint64_t words, unsigned g, uint32_t *seq, bool check)
{
    uint64_t m = rnd_mask(g), sum = 0, bad = 0;
    uint64_t start = words / hosts * rank * 8;
    bool ok = true;
    nfabric_round r;
    int rc;

    for (uint64_t i = 0; i < words; i++) {
        p[i] = src[i] ^ m;
    }
    if (posted) {
        if (g && rank && (rc = nfabric_round_wait_next(dev, RND_WIN, *seq,
                                                       WAIT_MS))) {
            die("bench: wait for head 0's clear", rc);
        }
        if ((rc = nfabric_round_read(dev, RND_WIN, &r))) {
            die("bench: read the round", rc);
        }
        *seq = r.seq;
        /* As nfabric_mem_write posts: head h of n from h/n of the bucket. */
        rc = nfabric_window_post(dev, RND_WIN, start, words * 8 - start);
        if (rc || (start && (rc = nfabric_window_post(dev, RND_WIN, 0,
                                                      start)))) {
            die("bench: POST", rc);
        }
        if ((rc = nfabric_round_complete(dev, RND_WIN, *seq))) {
            die("bench: complete the round", rc);
        }
        if ((rc = nfabric_round_wait(dev, RND_WIN, *seq, WAIT_MS, &r))) {
            die("bench: wait for every head", rc);
        }
        ok = r.all_done && !r.incomplete && r.ndone == hosts;
        if ((rc = nfabric_window_fetch(dev, RND_WIN, 0, words * 8))) {
            die("bench: FETCH", rc);
        }
    } else {
        barrier("bench: plain written");
    }
    for (uint64_t i = 0; i < words; i++) {
        sum += p[i];
    }
    rnd_sink += sum;
    if (check) {
        for (uint64_t i = 0; i < words; i += posted ? RND_STRIDE : 1) {
            bad += p[i] != (posted ? rnd_majority(i, g) : src[i] ^ m);
        }
        if (bad) {
            diag("bench: %s round %u: %" PRIu64 " words read back wrong",
                 posted ? "posted" : "plain", g, bad);
        }
    }
    barrier("bench: read back");
    if (posted && rank == 0 && (rc = nfabric_window_clear(dev, RND_WIN))) {
        die("bench: clear the window", rc);
    }
    return ok && !bad;
}

/*
 * A loop's run: the heads started together, k rounds from *g on (*seq the
 * posted window's round); this head's seconds.  false in *ok if a round
 * did not end with every head's ALL_DONE.
 */
static double rnd_run(bool posted, volatile uint64_t *p, const uint64_t *src,
                      uint64_t words, unsigned k, unsigned *g, uint32_t *seq,
                      bool *ok)
{
    double t0;

    barrier("bench: rounds start");
    t0 = nf_now_s();
    for (unsigned n = 0; n < k; n++, (*g)++) {
        *ok &= rnd_round(posted, p, src, words, *g, seq, false);
    }
    return nf_now_s() - t0;
}

/*
 * Both loops on the shared device: the layout (RND_BASE: the posted
 * window's data, its counters, then every head's plain bucket, room for 4
 * at least: 16 MiB buckets fit in 256 MiB), the posted window made (if
 * this head has staging), each loop's checked round, then RND_REPS times a
 * run of the plain loop and one of the posted loop, each run of k rounds
 * (BENCH_ROUNDS, more for buckets under 8 MiB: RND_RUN_BYTES a run);
 * each loop's figure is this head's fastest run.
 */
#define RND_REPS        3
#define RND_RUN_BYTES   (64ull << 20)

static void bench_rounds(void)
{
    uint64_t b = bench_bytes, ctrs, words, *src;
    uint64_t end = nfabric_map_dpa(dev) + nfabric_map_size(dev);
    nfabric_win_cfg cfg = {
        .path = NFABRIC_PATH_GBINARY, .width = 8,
        .tie = NFABRIC_TIE_NEGATIVE, .threshold = 1, .posted = true,
    };
    /* Room for 4 plain buckets whatever the heads: the same bucket for all. */
    uint64_t spans = hosts > 4 ? hosts : 4;
    volatile uint64_t *plain, *staged;
    double best[2] = { 1e30, 1e30 };
    bool ok[2] = { true, true }, posted;
    unsigned g = 1, k;
    uint32_t seq = 0;
    nfabric_heads h;
    int rc;

    for (;;) {
        ctrs = nfabric_counter_size(NFABRIC_PATH_GBINARY, 8, b);
        if (RND_BASE + b + ctrs + spans * b <= end || b <= 0x10000) {
            break;
        }
        b /= 2;
    }
    if (b != bench_bytes) {
        diag("bench: rounds of %" PRIu64 " bytes (%" PRIu64 " do not fit)",
             b, bench_bytes);
    }
    words = b / 8;
    k = RND_RUN_BYTES / b > BENCH_ROUNDS ? (unsigned)(RND_RUN_BYTES / b)
                                         : BENCH_ROUNDS;
    src = aligned_alloc(4096, b);
    if (!src) {
        die("bench: allocate the bucket", -ENOMEM);
    }
    for (uint64_t i = 0; i < words; i++) {
        src[i] = rnd_word(rank, i);
    }
    plain = (volatile uint64_t *)mem(RND_BASE + b + ctrs + rank * b, b);
    staged = (volatile uint64_t *)mem(RND_BASE, b);
    cfg.base = RND_BASE;
    cfg.size = b;
    cfg.counters = RND_BASE + b;
    posted = nfabric_heads_read(dev, &h) == 0 && h.staging;
    if (!posted) {
        diag("bench: this head has no staging: no posted rounds");
    } else if (rank == 0) {
        nfabric_win_state ws;

        nfabric_window_get(dev, RND_WIN, &ws);
        if (ws.enabled) {
            nfabric_window_disable(dev, RND_WIN);
        }
        if ((rc = nfabric_window_set(dev, RND_WIN, &cfg))) {
            die("bench: set the posted window", rc);
        }
    }
    barrier("bench: posted window set");
    for (unsigned l = 0; l < 1u + posted; l++) {
        TAP_CHECK(rnd_round(l, l ? staged : plain, src, words, 0, &seq, true),
                  "[rank %u] bench: a whole %s round, %u head(s) of %" PRIu64
                  " bytes each, read back right", rank,
                  l ? "gbinary_posted" : "plain", hosts, b);
    }
    for (unsigned r = 0; r < RND_REPS; r++) {
        for (unsigned l = 0; l < 1u + posted; l++) {
            double t = rnd_run(l, l ? staged : plain, src, words, k, &g, &seq,
                               &ok[l]);

            best[l] = t < best[l] ? t : best[l];
        }
    }
    for (unsigned l = 0; l < 1u + posted; l++) {
        const char *name = l ? "gbinary_posted" : "plain";

        TAP_CHECK(ok[l], "[rank %u] bench: %u runs of %u timed %s rounds, "
                  "each round ended with every head's ALL_DONE", rank,
                  RND_REPS, k, name);
        printf("mh_rounds rank=%u path=%s bytes=%" PRIu64 " rounds=%u "
               "seconds=%.6f mbps=%.3f\n", rank, name, b, k, best[l],
               b * (double)k / best[l] / 1e6);
    }
    barrier("bench: rounds done");
    if (posted && rank == 0) {
        nfabric_window_disable(dev, RND_WIN);
    }
    free(src);
}

/*
 * Each host runs the G-Binary and the G-Ternary loop, then the floor, then
 * (on the shared device) the whole rounds, plain and posted.  A single
 * shared head with a device that is not shared beside it runs each
 * loop in turns with that device ("unshared_" figures): side by side in
 * the same VM.
 */
static void bench_run(bool shared)
{
    nfabric_dev *other = NULL;
    bool beside = shared && hosts == 1 && bench_beside(&other);

    if (shared && hosts == 1 && !beside) {
        diag("bench: no device that is not shared beside this head: no "
             "side-by-side figure");
    }
    for (unsigned gt = 0; gt < 2; gt++) {
        unsigned path = gt ? NFABRIC_PATH_GTERNARY : NFABRIC_PATH_GBINARY;

        if (beside) {
            bench_pair(other, path);
        } else {
            bench_path(path, shared);
        }
    }
    nfabric_free(other);
    bench_floor(shared, bench_bytes / 8);
    if (shared) {
        bench_rounds();
    }
    TAP_CHECK(1, "[rank %u] bench ran", rank);
}

/*
 * A region on every NEURON-Fabric device that has none (the guest's init
 * makes one on mem0 only), as a user would: `cxl create-region`, its dax
 * device bound to device_dax by daxctl.  Only the bench's VMs have more
 * than one device.
 */
static void bench_regions(void)
{
    for (unsigned k = 0; k < 8; k++) {
        nfabric_dev *d = nfabric_new();
        char name[16], cmd[1024];
        int rc;

        snprintf(name, sizeof(name), "mem%u", k);
        rc = d ? nfabric_open_dev(d, name, 0) : NFLIB_ENODEV;
        nfabric_free(d);
        if (rc != NFLIB_ENODAX) {
            continue;           /* none, not ours, or it has its region */
        }
        snprintf(cmd, sizeof(cmd),
                 "r=$(cxl create-region -m -t ram -d decoder0.0 -w 1 %s "
                 "2>/tmp/bench-region.log | grep -o '\"region\":\"region[0-9]*\"' "
                 "| cut -d'\"' -f4) && [ -n \"$r\" ] && "
                 "d=$(ls -d /sys/bus/cxl/devices/$r/dax_region*/dax*.* | tail -n 1) && "
                 "d=${d##*/} && daxctl reconfigure-device -m devdax -f \"$d\" "
                 ">>/tmp/bench-region.log 2>&1; "
                 "for i in 1 2 3 4 5 6 7 8 9 10; do [ -c \"/dev/$d\" ] && exit 0; "
                 "usleep 100000; done; cat /tmp/bench-region.log; exit 1", name);
        rc = system(cmd);
        if (rc != 0) {
            diag("bench: no region could be made on %s (status %d)", name, rc);
        }
    }
}

/* ---- main ------------------------------------------------------------------ */

static int parse_uint(const char *s, const char *what, unsigned lo,
                      unsigned hi, unsigned *out)
{
    char *end;
    unsigned long v;

    errno = 0;
    v = s ? strtoul(s, &end, 0) : 0;
    if (!s || errno || *end || v < lo || v > hi) {
        fprintf(stderr, "nfabric-multihost: %s must be %u..%u, not \"%s\"\n",
                what, lo, hi, s ? s : "");
        exit(2);
    }
    *out = (unsigned)v;
    return 0;
}

int main(int argc, char **argv)
{
    const char *mode = argc > 1 ? argv[1] : NULL;
    bool have_mem = true;
    nfabric_heads hd;
    unsigned seed;
    int rc;

    if (!mode || !strcmp(mode, "--help")) {
        fprintf(mode ? stdout : stderr, "usage: nfabric-multihost "
                "agg|hammer|kill|rejoin|reset|sanitize|jobs|reassign|pause|own|direct|bench [--rank R] [--hosts N] "
                "[--seed S] [--procs P] [--iters K] [--bytes B] [--apart]\n");
        return mode ? 0 : 2;
    }
    if (getenv("NFABRIC_RANK")) {
        parse_uint(getenv("NFABRIC_RANK"), "NFABRIC_RANK", 0, 15, &rank);
    }
    if (getenv("NFABRIC_HOSTS")) {
        parse_uint(getenv("NFABRIC_HOSTS"), "NFABRIC_HOSTS", 1, 16, &hosts);
    }
    for (int i = 2; i < argc; i++) {
        const char *v = i + 1 < argc ? argv[i + 1] : NULL;

        if (!strcmp(argv[i], "--rank")) {
            parse_uint(v, "--rank", 0, 15, &rank);
        } else if (!strcmp(argv[i], "--hosts")) {
            parse_uint(v, "--hosts", 1, 16, &hosts);
        } else if (!strcmp(argv[i], "--seed")) {
            parse_uint(v, "--seed", 0, UINT32_MAX, &seed);
            seed_base = seed;
        } else if (!strcmp(argv[i], "--procs")) {
            parse_uint(v, "--procs", 1, 16, &procs);
        } else if (!strcmp(argv[i], "--iters")) {
            parse_uint(v, "--iters", 1, 100000, &iters);
        } else if (!strcmp(argv[i], "--apart")) {
            apart = true;
            continue;
        } else if (!strcmp(argv[i], "--bytes")) {
            unsigned mb;

            parse_uint(v, "--bytes (MiB)", 1, 1024, &mb);
            bench_bytes = (uint64_t)mb << 20;
        } else {
            fprintf(stderr, "nfabric-multihost: unknown argument \"%s\"\n",
                    argv[i]);
            return 2;
        }
        i++;
    }
    if (!hosts) {
        fprintf(stderr, "nfabric-multihost: give --hosts or NFABRIC_HOSTS\n");
        return 2;
    }
    setvbuf(stdout, NULL, _IOLBF, 0);
    dev = nfabric_new();
    if (!dev) {
        printf("not ok - [rank %u] open the device: %s\n", rank,
               strerror(ENOMEM));
        return 1;
    }
    if (!strcmp(mode, "bench")) {
        bench_regions();
    }
    rc = nfabric_open(dev, 0);
    if (rc && !strcmp(mode, "reset") && rank != 0) {
        /* A host after a warm reset may not have its region back. */
        diag("no device memory (%s): registers only", nfabric_errmsg(dev));
        nfabric_close(dev);
        rc = nfabric_open(dev, NFABRIC_OPEN_NO_MEM);
        have_mem = false;
    }
    if (rc) {
        printf("not ok - [rank %u] open the device: %s\n", rank,
               nfabric_errmsg(dev));
        return 1;
    }
    nfabric_heads_read(dev, &hd);
    if (!strcmp(mode, "bench") && !hd.shared && hosts == 1) {
        /* The baseline: the same loop on a device that is not shared. */
        case_bench_single();
        nfabric_free(dev);
        return tap_done();
    }
    TAP_CHECK(hd.shared && hd.count == hosts && hd.index == rank,
              "[rank %u] head %u of %u of a shared device (shared %d)", rank,
              hd.index, hd.count, hd.shared);
    if (!hd.shared || hd.count != hosts || hd.index != rank) {
        return 1;
    }
    if ((strcmp(mode, "reset") || rank == 0 || have_mem) &&
        strcmp(mode, "jobs") && strcmp(mode, "reassign") && !apart) {
        setup();                /* jobs: window 15 is the fabric manager's */
    }
    if (!strcmp(mode, "agg")) {
        barrier("start");
        case_agg();
    } else if (!strcmp(mode, "hammer")) {
        barrier("start");
        case_hammer();
    } else if (!strcmp(mode, "kill")) {
        barrier("start");
        case_kill();
    } else if (!strcmp(mode, "rejoin")) {
        case_rejoin();
    } else if (!strcmp(mode, "reset")) {
        case_reset(have_mem);
    } else if (!strcmp(mode, "sanitize") && rank == 0) {
        case_sanitize();
    } else if (!strcmp(mode, "jobs")) {
        case_jobs();
    } else if (!strcmp(mode, "reassign")) {
        case_reassign();
    } else if (!strcmp(mode, "pause")) {
        case_pause();
    } else if (!strcmp(mode, "own")) {
        case_own();
    } else if (!strcmp(mode, "direct")) {
        case_direct();
    } else if (!strcmp(mode, "bench")) {
        barrier("start");
        case_bench();
    } else {
        fprintf(stderr, "nfabric-multihost: unknown case \"%s\"\n", mode);
        return 2;
    }
    nfabric_free(dev);
    return tap_done();
}
