/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * nfabric-lifecycle-check: the guest half of the `lifecycle` suite
 * (scripts/nfmachine/lifecycle.py).  Static, runs in the busybox guest.
 *
 *   nfabric-lifecycle-check migrate
 *       Runs a G-Binary round and an FP32 writer in a loop until the host
 *       writes the stop word into device memory (the host migrates the
 *       guest meanwhile), then checks on whatever host it now runs on:
 *       every window register, contribution count, statistic and timing
 *       access count against what this program did, every counter and the
 *       majority read-back against a reference kept in guest RAM, and every
 *       byte of the FP32 area.  Beside them a posted G-Binary window takes
 *       a contribution per pass (stores into the staging, POST), and a
 *       posted G-Ternary window holds one stored before the migration and
 *       posted only after it: the staging must have migrated.  Prints "LC-MIGRATE-READY" once the loop
 *       runs, so that the host knows when to start the migration.
 *
 *   nfabric-lifecycle-check boot
 *       One boot of a warm-reset run: reads the boot stage kept in device
 *       memory (device memory survives a reset), checks that the registers
 *       are at their reset values, the memory written by the previous boot
 *       is still there, and a G-Binary round and the FP32 path work; then
 *       exits 10 (the guest should reboot itself), 11 (the host should
 *       send system_reset) or 0 after the third boot.
 *
 * Every check prints "LC ok - ..." or "LC not ok - ..."; the host turns
 * them into TAP.  Exit status 1 if any failed.  --direct-map=off (after
 * the command) says the device runs with direct-map=off, so that its
 * statistics also count this program's accesses to plain memory.
 */
#include <inttypes.h>
#include <stdbool.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "libnfabric.h"

/* Device memory used (DPA offsets from the region's start, 256 MiB device). */
#define GB_BASE      (1ull << 20)           /* G-Binary data, window 0 */
#define GB_SIZE      (16ull << 10)          /* 128 Ki elements */
#define GB_COUNTERS  (2ull << 20)           /* 16-bit counters, 256 KiB */
#define GB_ELEMS     (GB_SIZE * 8)
#define GB_WORDS     (GB_SIZE / 8)
#define FP_BASE      (4ull << 20)           /* FP32 writer, window 1 */
#define FP_SIZE      (1ull << 20)
#define FP_CHUNK     4096ull
#define FP_CHUNKS    (FP_SIZE / FP_CHUNK)
#define PB_BASE      (8ull << 20)           /* posted G-Binary, window 2 */
#define PB_SIZE      (16ull << 10)
#define PB_COUNTERS  (9ull << 20)           /* 16-bit counters, 256 KiB */
#define PS_BASE      (10ull << 20)          /* posted G-Ternary, window 3 */
#define PS_SIZE      (4ull << 10)
#define PS_COUNTERS  (11ull << 20)          /* 8-bit counters, 16 KiB */
#define STOP_DPA     (0x0fff0000ull)        /* the host's stop word */
#define STAGE_DPA    (0x0ffe0000ull)        /* boot stage (boot mode) */
#define KEEP_DPA     (0x0ffd0000ull)        /* pattern kept across reboots */
#define KEEP_SIZE    4096ull

/* "LCSTOP!!" as a little-endian 64-bit word: what the host writes. */
#define STOP_MAGIC   0x2121504f5453434cull
#define STAGE_MAGIC  0x4c43424f4f540000ull  /* "..TOOBCL" + stage in the low bits */
#define MAX_SECONDS  600

static int failures, checks;

static void check(int ok, const char *fmt, ...)
{
    va_list ap;

    checks++;
    if (!ok) {
        failures++;
    }
    printf("LC %s - ", ok ? "ok" : "not ok");
    va_start(ap, fmt);
    vprintf(fmt, ap);
    va_end(ap);
    printf("\n");
    fflush(stdout);
}

static uint64_t mix(uint64_t x)
{
    x += 0x9e3779b97f4a7c15ull;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
    return x ^ (x >> 31);
}

static volatile uint64_t *word_at(nfabric_dev *d, uint64_t dpa)
{
    volatile uint64_t *p = nfabric_dpa_ptr(d, nfabric_map_dpa(d) + dpa, 8);

    if (!p) {
        fprintf(stderr, "nfabric-lifecycle-check: DPA 0x%" PRIx64 " outside the mapping\n", dpa);
        exit(2);
    }
    return p;
}

/*
 * Accesses this program made to device memory, per path (index = path),
 * and to plain memory outside every window (PLAIN).  With the device's
 * direct map (direct-map, on by default: docs/device.md) plain accesses
 * are not counted by the device; with direct-map=off they count as FP32.
 */
#define PLAIN NFABRIC_NUM_PATHS
static uint64_t acc_rd[NFABRIC_NUM_PATHS + 1], acc_wr[NFABRIC_NUM_PATHS + 1];
/*
 * A posted range counts its 8-byte words in the statistics and its 64-byte
 * lines in the timing model (docs/registers.md): lines less words, here.
 */
static int64_t t_adjust[NFABRIC_NUM_PATHS];
static bool direct_map = true;

/* A posted window's doorbell over [0, len) of window i, counted. */
static int doorbell(nfabric_dev *d, unsigned i, unsigned path, uint64_t len,
                    bool post)
{
    int rc = post ? nfabric_window_post(d, i, 0, len) :
                    nfabric_window_fetch(d, i, 0, len);

    if (post) {
        acc_wr[path] += len / 8;
    } else {
        acc_rd[path] += len / 8;
    }
    t_adjust[path] += (int64_t)(len / 64) - (int64_t)(len / 8);
    return rc;
}

/* What the device's statistics should say for path p. */
static uint64_t want_rd(unsigned p)
{
    return acc_rd[p] + (p == NFABRIC_PATH_FP32 && !direct_map ? acc_rd[PLAIN] : 0);
}

static uint64_t want_wr(unsigned p)
{
    return acc_wr[p] + (p == NFABRIC_PATH_FP32 && !direct_map ? acc_wr[PLAIN] : 0);
}

static void st64(nfabric_dev *d, unsigned path, uint64_t dpa, uint64_t v)
{
    *word_at(d, dpa) = v;
    acc_wr[path]++;
}

static uint64_t ld64(nfabric_dev *d, unsigned path, uint64_t dpa)
{
    acc_rd[path]++;
    return *word_at(d, dpa);
}

static double now_s(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec / 1e9;
}

/* The device, opened; NULL if it cannot be (a failed check). */
static nfabric_dev *open_dev(void)
{
    nfabric_dev *d = nfabric_new();
    int rc = d ? nfabric_open(d, 0) : -ENOMEM;

    check(rc == 0, "open the device: registers, region, dax (%s)",
          !d ? strerror(ENOMEM) : rc ? nfabric_errmsg(d) : nfabric_dax_name(d));
    if (rc) {
        nfabric_free(d);
        return NULL;
    }
    return d;
}

/* The words of contribution k, and the FP32 words of iteration k. */
static uint64_t gb_word(uint64_t k, uint64_t w)
{
    return mix((k << 32) ^ w ^ 0x6762ull);
}

static uint64_t fp_word(uint64_t k, uint64_t w)
{
    return mix((k << 32) ^ w ^ 0x6670ull);
}

static int set_windows(nfabric_dev *d)
{
    nfabric_win_cfg gb = {
        .base = nfabric_map_dpa(d) + GB_BASE, .size = GB_SIZE,
        .counters = nfabric_map_dpa(d) + GB_COUNTERS, .path = NFABRIC_PATH_GBINARY,
        .width = 16, .tie = NFABRIC_TIE_POSITIVE,
    };
    nfabric_win_cfg fp = {
        .base = nfabric_map_dpa(d) + FP_BASE, .size = FP_SIZE,
        .path = NFABRIC_PATH_FP32, .width = 8,
    };
    int rc;

    nfabric_windows_reset(d);
    rc = nfabric_window_set(d, 0, &gb);
    check(rc == 0, "window 0: G-Binary, 16-bit counters, tie positive (%s)",
          rc ? nfabric_errmsg(d) : "enabled");
    if (rc == 0) {
        rc = nfabric_window_clear(d, 0);
        check(rc == 0, "window 0: new round");
    }
    if (rc == 0) {
        rc = nfabric_window_set(d, 1, &fp);
        check(rc == 0, "window 1: FP32 (%s)", rc ? nfabric_errmsg(d) : "enabled");
    }
    if (rc == 0) {
        nfabric_win_cfg pb = {
            .base = nfabric_map_dpa(d) + PB_BASE, .size = PB_SIZE,
            .counters = nfabric_map_dpa(d) + PB_COUNTERS,
            .path = NFABRIC_PATH_GBINARY, .width = 16,
            .tie = NFABRIC_TIE_POSITIVE, .posted = true,
        };
        nfabric_win_cfg ps = {
            .base = nfabric_map_dpa(d) + PS_BASE, .size = PS_SIZE,
            .counters = nfabric_map_dpa(d) + PS_COUNTERS,
            .path = NFABRIC_PATH_GTERNARY, .width = 8, .threshold = 1,
            .posted = true,
        };

        rc = nfabric_window_set(d, 2, &pb);
        rc = rc ? rc : nfabric_window_set(d, 3, &ps);
        check(rc == 0, "windows 2 and 3: posted G-Binary and G-Ternary (%s)",
              rc ? nfabric_errmsg(d) : "enabled");
    }
    return rc;
}

/* The ternary codes stored before the migration: no reserved one. */
static uint64_t ps_word(uint64_t w)
{
    uint64_t v = mix(w ^ 0x7073ull);

    /* Code 2 (0b10) becomes 0. */
    return v & ~((v & 0xaaaaaaaaaaaaaaaaull) & ~((v & 0x5555555555555555ull) << 1));
}

/* ---- migrate -------------------------------------------------------- */

static int cmd_migrate(void)
{
    static int32_t ref[GB_ELEMS], pref[PB_SIZE * 8];
    static uint64_t fp_last[FP_CHUNKS];     /* iteration + 1 of last write */
    nfabric_dev *d;
    nfabric_path_stats st[NFABRIC_NUM_PATHS];
    nfabric_win_state ws;
    nfabric_timing tm;
    uint64_t k = 0, stop = 0, e, w, bad;
    double t0;
    unsigned p;

    if (!(d = open_dev())) {
        return 1;
    }
    if (set_windows(d)) {
        return 1;
    }
    nfabric_ctrl(d, NFABRIC_CTRL_CLEAR_STATS | NFABRIC_CTRL_CLEAR_TIMING |
                 NFABRIC_CTRL_CLEAR_ERROR);
    st64(d, PLAIN, STOP_DPA, 0);
    /* Stored into window 3's staging now, posted after the migration. */
    for (w = 0; w < PS_SIZE / 8; w++) {
        *word_at(d, PS_BASE + w * 8) = ps_word(w);
    }

    /*
     * The loop: one G-Binary contribution, one posted G-Binary
     * contribution and one FP32 chunk per pass.
     */
    t0 = now_s();
    for (;;) {
        for (w = 0; w < PB_SIZE / 8; w++) {
            uint64_t v = gb_word(k + 7, w);

            *word_at(d, PB_BASE + w * 8) = v;
            for (unsigned b = 0; b < 64; b++) {
                pref[w * 64 + b] += (v >> b) & 1 ? 1 : -1;
            }
        }
        if (doorbell(d, 2, NFABRIC_PATH_GBINARY, PB_SIZE, true)) {
            check(0, "POST of pass %" PRIu64 ": %s", k, nfabric_errmsg(d));
            break;
        }
        for (w = 0; w < GB_WORDS; w++) {
            uint64_t v = gb_word(k, w);

            st64(d, NFABRIC_PATH_GBINARY, GB_BASE + w * 8, v);
            for (unsigned b = 0; b < 64; b++) {
                ref[w * 64 + b] += (v >> b) & 1 ? 1 : -1;
            }
        }
        for (w = 0; w < FP_CHUNK / 8; w++) {
            uint64_t c = k % FP_CHUNKS;

            st64(d, NFABRIC_PATH_FP32, FP_BASE + c * FP_CHUNK + w * 8,
                 fp_word(k, w));
            fp_last[c] = k + 1;
        }
        k++;
        if (k == 4) {
            printf("LC-MIGRATE-READY\n");
            fflush(stdout);
        }
        stop = ld64(d, PLAIN, STOP_DPA);
        if (stop == STOP_MAGIC) {
            break;
        }
        if (now_s() - t0 > MAX_SECONDS) {
            break;
        }
    }
    printf("LC iterations=%" PRIu64 " gbinary-writes=%" PRIu64 "\n", k,
           acc_wr[NFABRIC_PATH_GBINARY]);
    check(stop == STOP_MAGIC, "the host's stop word arrived after %" PRIu64
          " passes (%.1f s)", k, now_s() - t0);
    /* What window 3's staging held since before the migration, posted. */
    check(doorbell(d, 3, NFABRIC_PATH_GTERNARY, PS_SIZE, true) == 0,
          "POST of window 3's staging, stored before the migration");

    /* Registers first, before the checks below read device memory. */
    nfabric_stats(d, st);
    nfabric_timing_read(d, &tm);
    for (p = 0; p < NFABRIC_NUM_PATHS; p++) {
        uint64_t ta = nfabric_rd64(d, NFABRIC_REG_T_ACCESSES_PATH(p));

        check(st[p].reads == want_rd(p) && st[p].writes == want_wr(p) &&
              st[p].read_bytes == want_rd(p) * 8 &&
              st[p].write_bytes == want_wr(p) * 8,
              "statistics of path %s: reads %" PRIu64 "/%" PRIu64 " writes %"
              PRIu64 "/%" PRIu64 " (device/program, direct map %s), bytes match",
              nfabric_path_name(p), st[p].reads, want_rd(p), st[p].writes,
              want_wr(p), direct_map ? "on" : "off");
        check(ta == want_rd(p) + want_wr(p) + (uint64_t)t_adjust[p],
              "timing model accounted %" PRIu64 " accesses on path %s (program: %"
              PRIu64 ", posted ranges as 64-byte lines)", ta,
              nfabric_path_name(p), want_rd(p) + want_wr(p) + (uint64_t)t_adjust[p]);
    }
    check(tm.total_ps > 0 && tm.total_ps == tm.path_time_ps[0] +
          tm.path_time_ps[1] + tm.path_time_ps[2],
          "timing: total %" PRIu64 " ps is the sum of the paths", tm.total_ps);
    check(nfabric_rd32(d, NFABRIC_REG_ENABLED_MASK) == 0xf &&
          nfabric_rd32(d, NFABRIC_REG_ERROR_COUNT) == 0 &&
          nfabric_rd32(d, NFABRIC_REG_LAST_ERROR) == 0,
          "ENABLED_MASK 0x%x, ERROR_COUNT %u, LAST_ERROR %u (want 0xf, 0, 0)",
          nfabric_rd32(d, NFABRIC_REG_ENABLED_MASK),
          nfabric_rd32(d, NFABRIC_REG_ERROR_COUNT),
          nfabric_rd32(d, NFABRIC_REG_LAST_ERROR));
    nfabric_window_get(d, 0, &ws);
    check(ws.enabled && ws.error == 0 && ws.cfg.base == nfabric_map_dpa(d) + GB_BASE &&
          ws.cfg.size == GB_SIZE && ws.cfg.counters == nfabric_map_dpa(d) + GB_COUNTERS &&
          ws.cfg.path == NFABRIC_PATH_GBINARY && ws.cfg.width == 16 &&
          ws.cfg.tie == NFABRIC_TIE_POSITIVE,
          "window 0 registers as programmed (ctrl 0x%x)", ws.wctrl);
    check(ws.contrib_writes == k * GB_WORDS && ws.contrib_bytes == k * GB_SIZE,
          "window 0: %" PRIu64 " contributed writes, %" PRIu64 " bytes (want %"
          PRIu64 ", %" PRIu64 ")", ws.contrib_writes, ws.contrib_bytes,
          k * GB_WORDS, k * GB_SIZE);
    nfabric_window_get(d, 1, &ws);
    check(ws.enabled && ws.error == 0 && ws.cfg.path == NFABRIC_PATH_FP32 &&
          ws.cfg.base == nfabric_map_dpa(d) + FP_BASE && ws.cfg.size == FP_SIZE,
          "window 1 registers as programmed (ctrl 0x%x)", ws.wctrl);

    /* Counters (plain memory) and the majority read-back. */
    bad = 0;
    for (e = 0; e < GB_ELEMS; e += 4) {
        uint64_t v = ld64(d, NFABRIC_PATH_FP32, GB_COUNTERS + e * 2);

        for (unsigned i = 0; i < 4; i++) {
            bad += (int16_t)(v >> (16 * i)) != ref[e + i];
        }
    }
    check(bad == 0, "all %" PRIu64 " G-Binary counters equal the reference (%"
          PRIu64 " differ)", (uint64_t)GB_ELEMS, bad);
    bad = 0;
    for (w = 0; w < GB_WORDS; w++) {
        uint64_t v = ld64(d, NFABRIC_PATH_GBINARY, GB_BASE + w * 8), want = 0;

        for (unsigned b = 0; b < 64; b++) {
            want |= (uint64_t)(ref[w * 64 + b] >= 0) << b;
        }
        bad += v != want;
    }
    check(bad == 0, "G-Binary majority read-back equals the reference (%" PRIu64
          " words differ)", bad);

    /* The posted windows: counters, then the read-out after FETCH. */
    bad = 0;
    for (e = 0; e < PB_SIZE * 8; e++) {
        bad += nfabric_counter(d, nfabric_map_dpa(d) + PB_COUNTERS, 16, e) !=
               pref[e];
    }
    nfabric_window_get(d, 2, &ws);
    check(bad == 0 && ws.contrib_writes == k * (PB_SIZE / 8) &&
          ws.contrib_bytes == k * PB_SIZE,
          "posted window 2: every counter equals the reference (%" PRIu64
          " differ), %" PRIu64 " writes and %" PRIu64 " bytes contributed "
          "(want %" PRIu64 ")", bad, ws.contrib_writes, ws.contrib_bytes,
          k * PB_SIZE);
    bad = doorbell(d, 2, NFABRIC_PATH_GBINARY, PB_SIZE, false) != 0;
    for (w = 0; w < PB_SIZE / 8; w++) {
        uint64_t want = 0;

        for (unsigned b = 0; b < 64; b++) {
            want |= (uint64_t)(pref[w * 64 + b] >= 0) << b;
        }
        bad += *word_at(d, PB_BASE + w * 8) != want;
    }
    check(bad == 0, "posted window 2: the read-out after FETCH equals the "
          "reference (%" PRIu64 " words differ)", bad);
    bad = doorbell(d, 3, NFABRIC_PATH_GTERNARY, PS_SIZE, false) != 0;
    for (w = 0; w < PS_SIZE / 8; w++) {
        bad += *word_at(d, PS_BASE + w * 8) != ps_word(w);
    }
    nfabric_window_get(d, 3, &ws);
    check(bad == 0 && ws.contrib_bytes == PS_SIZE && ws.reserved_codes == 0,
          "posted window 3: the contribution stored before the migration and "
          "posted after it reads back as stored (%" PRIu64 " words differ)",
          bad);

    /* Every byte of the FP32 area. */
    bad = 0;
    for (uint64_t c = 0; c < FP_CHUNKS; c++) {
        for (w = 0; w < FP_CHUNK / 8; w++) {
            uint64_t v = ld64(d, NFABRIC_PATH_FP32, FP_BASE + c * FP_CHUNK + w * 8);
            uint64_t want = fp_last[c] ? fp_word(fp_last[c] - 1, w) : 0;

            bad += v != want;
        }
    }
    check(bad == 0, "FP32 area: every byte as last written (%" PRIu64
          " words differ)", bad);

    nfabric_windows_reset(d);
    check(nfabric_rd32(d, NFABRIC_REG_ENABLED_MASK) == 0,
          "windows can be disabled after the run");
    nfabric_free(d);
    printf("LC checks=%d failed=%d\n", checks, failures);
    return failures ? 1 : 0;
}

/* ---- boot ------------------------------------------------------------- */

static int cmd_boot(void)
{
    nfabric_dev *d;
    nfabric_path_stats st[NFABRIC_NUM_PATHS];
    uint64_t stage_word, stage, bad = 0, w, v;
    int rc;

    if (!(d = open_dev())) {
        return 1;
    }
    stage_word = *word_at(d, STAGE_DPA);
    stage = (stage_word & ~0xffffull) == STAGE_MAGIC ? (stage_word & 0xffff) : 0;
    stage++;
    printf("LC-BOOT %" PRIu64 "\n", stage);

    /*
     * Reset values: what the device's reset documents.  The statistics hold
     * exactly the one read of the stage word above (plain memory: none with
     * the direct map).
     */
    nfabric_stats(d, st);
    check(nfabric_rd32(d, NFABRIC_REG_ENABLED_MASK) == 0 &&
          nfabric_rd32(d, NFABRIC_REG_ERROR_COUNT) == 0 &&
          nfabric_rd32(d, NFABRIC_REG_LAST_ERROR) == 0 &&
          st[NFABRIC_PATH_FP32].reads == (direct_map ? 0 : 1) &&
          st[NFABRIC_PATH_FP32].writes == 0 &&
          st[NFABRIC_PATH_GBINARY].reads + st[NFABRIC_PATH_GBINARY].writes +
          st[NFABRIC_PATH_GTERNARY].reads + st[NFABRIC_PATH_GTERNARY].writes == 0,
          "boot %" PRIu64 ": windows disabled, no errors, statistics cleared "
          "(fp32 reads %" PRIu64 ", writes %" PRIu64 ")", stage,
          st[NFABRIC_PATH_FP32].reads, st[NFABRIC_PATH_FP32].writes);

    /* Memory written by the previous boot survived the reset. */
    if (stage > 1) {
        for (w = 0; w < KEEP_SIZE / 8; w++) {
            bad += *word_at(d, KEEP_DPA + w * 8) != fp_word(stage - 1, w);
        }
        check(bad == 0, "boot %" PRIu64 ": device memory kept across the reset (%"
              PRIu64 " words differ)", stage, bad);
    }
    for (w = 0; w < KEEP_SIZE / 8; w++) {
        *word_at(d, KEEP_DPA + w * 8) = fp_word(stage, w);
    }

    /* A G-Binary round: contributions ff, ff, 00 read back as ff. */
    rc = set_windows(d);
    if (rc == 0) {
        for (unsigned j = 0; j < 3; j++) {
            for (w = 0; w < GB_WORDS; w++) {
                *word_at(d, GB_BASE + w * 8) = j < 2 ? ~0ull : 0;
            }
        }
        bad = 0;
        for (w = 0; w < GB_WORDS; w++) {
            bad += *word_at(d, GB_BASE + w * 8) != ~0ull;
        }
        check(bad == 0, "boot %" PRIu64 ": G-Binary round ff, ff, 00 reads ff "
              "(%" PRIu64 " words differ)", stage, bad);
        v = *word_at(d, GB_COUNTERS);
        check((int16_t)v == 1, "boot %" PRIu64 ": counter 0 is +1 (reads %d)",
              stage, (int16_t)v);
        for (w = 0; w < 64; w++) {
            *word_at(d, FP_BASE + w * 8) = fp_word(stage + 100, w);
        }
        bad = 0;
        for (w = 0; w < 64; w++) {
            bad += *word_at(d, FP_BASE + w * 8) != fp_word(stage + 100, w);
        }
        check(bad == 0, "boot %" PRIu64 ": FP32 window identity", stage);
        nfabric_windows_reset(d);
        check(nfabric_rd32(d, NFABRIC_REG_ENABLED_MASK) == 0,
              "boot %" PRIu64 ": windows disabled again", stage);
    }
    *word_at(d, STAGE_DPA) = STAGE_MAGIC | stage;
    nfabric_free(d);
    printf("LC-BOOT-DONE %" PRIu64 " failed=%d\n", stage, failures);
    if (failures) {
        return 1;
    }
    return stage == 1 ? 10 : stage == 2 ? 11 : 0;
}

int main(int argc, char **argv)
{
    setvbuf(stdout, NULL, _IOLBF, 0);
    /* --direct-map=off: the device runs with direct-map=off (all counted). */
    if (argc == 3 && !strcmp(argv[2], "--direct-map=off")) {
        direct_map = false;
        argc--;
    } else if (argc == 3 && !strcmp(argv[2], "--direct-map=on")) {
        argc--;
    }
    if (argc == 2 && !strcmp(argv[1], "migrate")) {
        return cmd_migrate();
    }
    if (argc == 2 && !strcmp(argv[1], "boot")) {
        return cmd_boot();
    }
    fprintf(stderr, "usage: nfabric-lifecycle-check migrate|boot "
            "[--direct-map=on|off]\n");
    return 2;
}
