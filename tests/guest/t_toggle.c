/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * (i) A window enabled and disabled over and over while other processes
 * write.  With the device's direct map (docs/device.md) plain memory is RAM
 * to the CPU and only enabled windows trap, so every enable and disable
 * changes the map.  The parent toggles a G-Binary window TG_CYCLES times:
 *  - after each enable has completed it tells the writers (a sequence word
 *    in shared memory) to contribute, and checks that every contribution
 *    aggregated: no write was served by a map from before the enable;
 *  - after each disable the writers store a pattern over the same range
 *    and check that it reads back byte-exact: nothing aggregates any more.
 * All the while, hammer processes store and check words in the plain
 * memory around the window and its counter area.
 */
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include "gt.h"

/* Device memory used here (DPA offsets from the region's start). */
#define TG_BASE     (56ull << 20)
#define TG_SIZE     4096u
#define TG_COUNTERS (57ull << 20)
#define TG_WIN      3
#define TG_WRITERS  2
#define TG_HAMMERS  2
#define TG_CYCLES   24
#define TG_GUARD    4096u       /* plain bytes hammered on each side */

enum { PH_IDLE, PH_ENABLED, PH_DISABLED, PH_STOP };

/* A step: cycle * 4 + phase, in one word so that it changes at once. */
#define TG_STEP(c, ph) ((c) * 4u + (ph))

typedef struct tg_ctl {
    uint32_t step;              /* TG_STEP(): what to do now */
    uint32_t done[TG_WRITERS];  /* the last step a writer finished */
    uint32_t bad[TG_WRITERS];   /* read-back mismatches seen by writers */
    uint64_t hammer_bad[TG_HAMMERS];
    uint64_t hammer_words[TG_HAMMERS];
} tg_ctl;

static uint32_t tg_load(const uint32_t *p)
{
    return __atomic_load_n(p, __ATOMIC_ACQUIRE);
}

static void tg_store(uint32_t *p, uint32_t v)
{
    __atomic_store_n(p, v, __ATOMIC_RELEASE);
}

/* Writer w's packed signs in cycle c (one byte: 8 elements). */
static uint8_t tg_byte(unsigned c, unsigned w, uint64_t i)
{
    return (uint8_t)((c * 131u + w * 71u + i * 13u) ^ (i >> 3));
}

static uint64_t tg_plain_word(unsigned c, unsigned w, uint64_t i)
{
    return 0x5a5a000000000000ull ^ ((uint64_t)c << 32) ^ ((uint64_t)w << 24) ^ i;
}

static void tg_writer(tg_ctl *ctl, unsigned w)
{
    volatile uint64_t *m = (volatile uint64_t *)gt_mem(nfabric_map_dpa(gt_dev) + TG_BASE,
                                                       TG_SIZE);
    uint32_t seen = 0;

    for (;;) {
        uint32_t ph, c, tag;

        while ((tag = tg_load(&ctl->step)) == seen) {
            ;
        }
        c = tag / 4;
        ph = tag % 4;
        if (ph == PH_STOP) {
            _exit(0);
        }
        if (ph == PH_ENABLED) {
            /* The whole window, 8-byte stores: one contribution. */
            for (uint64_t i = 0; i < TG_SIZE / 8; i++) {
                uint64_t v = 0;

                for (unsigned b = 0; b < 8; b++) {
                    v |= (uint64_t)tg_byte(c, w, i * 8 + b) << (8 * b);
                }
                m[i] = v;
            }
        } else {
            /* Plain again: this writer's half, stored and read back. */
            uint64_t n = TG_SIZE / 8 / TG_WRITERS, lo = w * n;

            for (uint64_t i = lo; i < lo + n; i++) {
                m[i] = tg_plain_word(c, w, i);
            }
            for (uint64_t i = lo; i < lo + n; i++) {
                ctl->bad[w] += m[i] != tg_plain_word(c, w, i);
            }
        }
        seen = tag;
        tg_store(&ctl->done[w], tag);
    }
}

/* Store and check words around the window until told to stop. */
static void tg_hammer(tg_ctl *ctl, unsigned h)
{
    uint64_t dpa = h == 0 ? TG_BASE - TG_GUARD : TG_BASE + TG_SIZE;
    volatile uint64_t *m = (volatile uint64_t *)gt_mem(nfabric_map_dpa(gt_dev) + dpa,
                                                       TG_GUARD);
    volatile uint64_t *after = (volatile uint64_t *)gt_mem(
        nfabric_map_dpa(gt_dev) + TG_COUNTERS + TG_SIZE * 8, TG_GUARD);
    uint64_t k = 0;

    while (tg_load(&ctl->step) % 4 != PH_STOP) {
        for (uint64_t i = 0; i < TG_GUARD / 8; i++, k++) {
            uint64_t v = k * 0x9e3779b97f4a7c15ull + h;

            m[i] = v;
            if (h == 1) {
                after[i] = ~v;
            }
            if (m[i] != v || (h == 1 && after[i] != ~v)) {
                ctl->hammer_bad[h]++;
            }
        }
        ctl->hammer_words[h] += TG_GUARD / 8;
    }
    _exit(0);
}

static bool tg_wait_writers(tg_ctl *ctl, uint32_t tag)
{
    double t0 = gt_now();

    for (unsigned w = 0; w < TG_WRITERS; w++) {
        while (tg_load(&ctl->done[w]) != tag) {
            if (gt_now() - t0 > 60) {
                gt_diag("toggle: writer %u did not finish step %u", w, tag);
                return false;
            }
        }
    }
    return true;
}

/* The window's counters and read-out against the writers' contributions. */
static bool tg_check_enabled(unsigned c, uint64_t *contrib_writes)
{
    static int32_t sums[TG_SIZE * 8];
    static uint8_t data[TG_SIZE], want[TG_SIZE], got[TG_SIZE];
    volatile int8_t *cnt = (volatile int8_t *)gt_mem(nfabric_map_dpa(gt_dev) + TG_COUNTERS,
                                                     TG_SIZE * 8);
    nfabric_win_state st;
    bool ok = true;

    memset(sums, 0, sizeof(sums));
    for (unsigned w = 0; w < TG_WRITERS; w++) {
        for (uint64_t i = 0; i < TG_SIZE; i++) {
            data[i] = tg_byte(c, w, i);
        }
        ref_apply(NFABRIC_PATH_GBINARY, 8, sums, 0, data, TG_SIZE);
    }
    for (uint64_t e = 0; e < TG_SIZE * 8 && ok; e++) {
        ok = cnt[e] == sums[e];
        if (!ok) {
            gt_diag("toggle: cycle %u element %" PRIu64 ": count %d, want %d", c, e,
                    cnt[e], sums[e]);
        }
    }
    ref_readout(NFABRIC_PATH_GBINARY, NFABRIC_TIE_NEGATIVE, 0, sums, 0, want, TG_SIZE);
    gt_read_bytes(got, gt_mem(nfabric_map_dpa(gt_dev) + TG_BASE, TG_SIZE), TG_SIZE, 8);
    ok = ok && memcmp(got, want, TG_SIZE) == 0;
    ok = ok && nfabric_window_get(gt_dev, TG_WIN, &st) == 0;
    *contrib_writes = st.contrib_writes;
    return ok && st.contrib_writes == TG_WRITERS * TG_SIZE / 8;
}

void gt_group_toggle(void)
{
    tg_ctl *ctl;
    pid_t pid[TG_WRITERS + TG_HAMMERS];
    unsigned agg_ok = 0, plain_ok = 0, np = 0;
    uint64_t cw = 0;
    bool ok = true;

    if (!gt_need_regs("toggle")) {
        return;
    }
    ctl = mmap(NULL, sizeof(*ctl), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS,
               -1, 0);
    if (!CHECK(ctl != MAP_FAILED, "toggle: shared control page")) {
        return;
    }
    memset(ctl, 0, sizeof(*ctl));
    if (!CHECK(gt_mem(nfabric_map_dpa(gt_dev) + TG_COUNTERS + TG_SIZE * 8, TG_GUARD) &&
               gt_mem(nfabric_map_dpa(gt_dev) + TG_BASE - TG_GUARD, TG_SIZE + 2 * TG_GUARD),
               "toggle: device memory holds the window, its counters and the guards")) {
        return;
    }
    fflush(stdout);
    fflush(stderr);
    for (unsigned i = 0; i < TG_WRITERS + TG_HAMMERS; i++) {
        pid_t p = fork();

        if (p == 0) {
            if (i < TG_WRITERS) {
                tg_writer(ctl, i);
            }
            tg_hammer(ctl, i - TG_WRITERS);
        }
        if (p > 0) {
            pid[np++] = p;
        }
    }
    ok = np == TG_WRITERS + TG_HAMMERS;
    for (unsigned c = 1; c <= TG_CYCLES && ok; c++) {
        nfabric_win_cfg cfg = {
            .base = nfabric_map_dpa(gt_dev) + TG_BASE, .size = TG_SIZE,
            .counters = nfabric_map_dpa(gt_dev) + TG_COUNTERS,
            .path = NFABRIC_PATH_GBINARY, .width = 8, .tie = NFABRIC_TIE_NEGATIVE,
        };
        int rc = nfabric_window_set(gt_dev, TG_WIN, &cfg);

        if (rc) {
            gt_diag("toggle: enable in cycle %u: %s", c, nfabric_strerror(rc));
            ok = false;
            break;
        }
        tg_store(&ctl->step, TG_STEP(c, PH_ENABLED));
        ok = tg_wait_writers(ctl, TG_STEP(c, PH_ENABLED));
        if (ok && tg_check_enabled(c, &cw)) {
            agg_ok++;
        } else if (ok) {
            gt_diag("toggle: cycle %u: the window's state does not match the writes "
                    "(contrib_writes %" PRIu64 ")", c, cw);
        }
        rc = nfabric_window_disable(gt_dev, TG_WIN);
        ok = ok && rc == 0;
        if (!ok) {
            break;
        }
        tg_store(&ctl->step, TG_STEP(c, PH_DISABLED));
        ok = tg_wait_writers(ctl, TG_STEP(c, PH_DISABLED));
        if (ok) {
            uint32_t bad = 0;

            for (unsigned w = 0; w < TG_WRITERS; w++) {
                bad += ctl->bad[w];
            }
            plain_ok += bad == 0;
            for (unsigned w = 0; w < TG_WRITERS; w++) {
                ctl->bad[w] = 0;
            }
        }
    }
    tg_store(&ctl->step, TG_STEP(TG_CYCLES + 1, PH_STOP));
    for (unsigned i = 0; i < np; i++) {
        int st;

        if (waitpid(pid[i], &st, 0) < 0 || !WIFEXITED(st) || WEXITSTATUS(st)) {
            ok = false;
        }
    }
    CHECK(ok, "toggle: %u writers and %u hammer processes ran %u cycles and exited 0",
          TG_WRITERS, TG_HAMMERS, TG_CYCLES);
    CHECK(agg_ok == TG_CYCLES, "toggle: after every enable (%u/%u) every write "
          "aggregated: counts, read-out and CONTRIB_WRITES exact", agg_ok, TG_CYCLES);
    CHECK(plain_ok == TG_CYCLES, "toggle: after every disable (%u/%u) the range is "
          "plain memory again, byte-exact", plain_ok, TG_CYCLES);
    CHECK(ctl->hammer_bad[0] + ctl->hammer_bad[1] == 0 &&
          ctl->hammer_words[0] > 0 && ctl->hammer_words[1] > 0,
          "toggle: plain memory around the window and its counters stayed byte-exact "
          "(%" PRIu64 " + %" PRIu64 " words checked, %" PRIu64 " wrong)",
          ctl->hammer_words[0], ctl->hammer_words[1],
          ctl->hammer_bad[0] + ctl->hammer_bad[1]);
    gt_summary("toggle: %u enable/disable cycles of a G-Binary window with %u writers "
               "and %u processes writing around it: every write after an enable "
               "aggregated, every write after a disable plain", TG_CYCLES, TG_WRITERS,
               TG_HAMMERS);
    munmap(ctl, sizeof(*ctl));
}
