/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * libFuzzer harness of the shared device state: two heads (two
 * NFabricCtrl) of one device whose state is a real state file with its
 * process-shared robust locks, driven by one input as an interleaving of
 * register writes and reads, memory accesses, round completions and resets
 * from either head.  After every operation the shared state must hold its
 * invariants (docs/multihost.md):
 *   - the window table is published (sequence count even, nothing busy);
 *   - every enabled window lies in device memory, 64-byte aligned, and
 *     overlaps no other enabled window's data or counters; its counter
 *     area too, if it has one (an FP32 window has none: its COUNTERS may
 *     hold any value, registers.md);
 *   - the engine's configuration of an enabled window is its CTRL's;
 *   - each window's contribution count is the sum of the heads' counts;
 *   - round masks name only heads the device has;
 *   - plain memory (outside every enabled window) reads back what a head
 *     wrote, from either head (where both reach it);
 *   - with a fabric manager's assignment (op 7: assignments made from the
 *     input, refused or not, while windows are enabled), every enabled
 *     window is in one job's slots and its data and counters in that
 *     job's memory;
 *   - a head killed at any point of a lock (op 6 with bit 7 of byte 1:
 *     idle, holding a stripe's word, inside through its bias, or mid-way
 *     through taking a bias back), reaped or not, never blocks the other:
 *     it takes the whole window (as a CLEAR does) at once, finishes what
 *     the dead head left (no bias, no taking back, no word left), and its
 *     state never fails for it; then the dead head attaches again.
 * Each input starts from a new state (both heads detach and attach again).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fuzz_heads.h"

#define RAM_SIZE    (64u * 1024)
#define HEADS       2

static uint8_t ram[RAM_SIZE];
static const NFabricTimingParams tparams = { 1000, 5, 300, 32000 };
static NFabricCtrl head_state[HEADS];

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    fuzz_heads_files("fuzz");
    return 0;
}

static NFabricShared *attach(NFabricCtrl *c, unsigned h, int *fd)
{
    NFabricShared *sh;

    fuzz_heads_attach(h, HEADS, RAM_SIZE, &sh, fd);
    nfabric_ctrl_init(c, ram, RAM_SIZE, &tparams, NULL, NULL);
    nfabric_ctrl_use_shared(c, sh, h);
    return sh;
}

/*
 * Head h dies at a point of a lock taken from the input (the state left
 * as its process would leave it, nfabric_shared_abandon), the other head
 * takes window i whole, and head h attaches again.
 */
static void die_at(NFabricCtrl *head, int *fd, unsigned h, const uint8_t *p,
                   uint64_t v)
{
    NFabricCtrl *other = &head[!h];
    NFabricShared *sh = head[h].sh;
    unsigned i = p[3] % NFABRIC_NUM_WINDOWS;
    unsigned k = (unsigned)(v % NFABRIC_WIN_STRIPES);
    __typeof__(sh->stripe[0][0]) *st = &sh->stripe[i][k];
    uint32_t token = head[h].lock_token, free_word = 0;
    uint64_t thr = (uint64_t)(1 + (v >> 8) % 4096) << 32;
    bool repaired = false;

    switch (p[2] % 4) {
    case 1:                     /* holding the stripe's word */
        repaired = __atomic_compare_exchange_n(&st->word, &free_word, token,
                                               false, __ATOMIC_ACQUIRE,
                                               __ATOMIC_RELAXED);
        break;
    case 2:                     /* inside through its bias */
        if (!st->word && !st->bias && !st->revoking) {
            st->bias = token | thr;
            sh->head[h].stripe_busy[i][k] = 1;
            repaired = true;
        }
        break;
    case 3:                     /* taking the other head's bias back */
        if (__atomic_compare_exchange_n(&st->word, &free_word, token, false,
                                        __ATOMIC_ACQUIRE, __ATOMIC_RELAXED)) {
            st->revoking = st->bias ? st->bias : (other->lock_token | thr);
            st->bias = 0;
            repaired = true;
        }
        break;
    default:                    /* between two accesses */
        break;
    }
    nfabric_shared_abandon(sh, fd[h]);
    if (p[3] & 0x80) {
        nfabric_shared_reap(other->sh, !h);
    }
    CHECK(nfabric_shared_lock_win(other->sh, i),
          "head %u dead at point %u of stripe %u of window %u: the other "
          "head cannot take the window (errno %d)", h, p[2] % 4, k, i, errno);
    for (unsigned s = 0; s < NFABRIC_WIN_STRIPES; s++) {
        const __typeof__(sh->stripe[0][0]) *o = &other->sh->stripe[i][s];

        CHECK(o->revoking == 0 &&
              (o->bias == 0 || (uint32_t)o->bias == other->lock_token),
              "window %u stripe %u after a dead head: revoking %llx, bias %llx",
              i, s, (unsigned long long)o->revoking,
              (unsigned long long)o->bias);
    }
    nfabric_shared_unlock_win(other->sh, i);
    CHECK(!other->failed, "a head killed at a lock failed the other's state");
    CHECK(!repaired || other->sh->round[i].incomplete ||
          other->sh->lock_repairs,
          "a head killed holding a stripe left no trace (no repair)");
    attach(&head[h], h, &fd[h]);
}

static int overlap(uint64_t a, uint64_t al, uint64_t b, uint64_t bl)
{
    return al && bl && a < b + bl && b < a + al;
}

/* Is [a, a + len) inside device memory (no wrap-around)? */
static int inside(uint64_t a, uint64_t len)
{
    return a <= RAM_SIZE && len <= RAM_SIZE - a;
}

static void check(const NFabricShared *sh)
{
    for (unsigned j = 0; j < NFABRIC_FM_MAX_JOBS; j++) {
        CHECK(!(sh->gen[j] & 1) && sh->job[j].busy == -1, "job %u's table "
              "busy after an operation (gen %u, busy %d)", j, sh->gen[j],
              sh->job[j].busy);
    }
    for (unsigned i = 0; i < NFABRIC_NUM_WINDOWS; i++) {
        const NFabricWindow *w = &sh->win[i];
        uint64_t sum = 0, cl;

        for (unsigned h = 0; h < HEADS; h++) {
            sum += sh->head[h].contrib_writes[i];
        }
        /* As a head of the window's job reads it (another job reads 0). */
        for (unsigned h = 0; h < HEADS; h++) {
            if (sh->fm.assigned &&
                !(sh->fm.job_windows[sh->fm.head_job[h] % NFABRIC_FM_MAX_JOBS] &
                  (1u << i))) {
                continue;
            }
            CHECK(sum == nfabric_ctrl_reg_read(&head_state[h],
                      NFABRIC_REG_WIN(i, NFABRIC_WIN_CONTRIB_WRITES), 8),
                  "window %u: heads' contributions %llu, window's other "
                  "(read by head %u)", i, (unsigned long long)sum, h);
            break;
        }
        CHECK(!(sh->round[i].done >> HEADS) && !(sh->round[i].contrib >> HEADS),
              "window %u: round masks name heads the device lacks", i);
        if (!(sh->enabled_mask & (1u << i))) {
            continue;
        }
        CHECK(w->ctrl & NFABRIC_WCTRL_ENABLE, "window %u enabled without "
              "ENABLE in CTRL", i);
        CHECK(sh->cfg[i].path == NFABRIC_WCTRL_PATH(w->ctrl) &&
              sh->cfg[i].size == w->dpa_size &&
              (sh->cfg[i].path == NFABRIC_PATH_FP32 ||
               sh->cfg[i].width == NFABRIC_WCTRL_WIDTH(w->ctrl)),
              "window %u: the engine's configuration is not CTRL's", i);
        cl = nfabric_counter_bytes(sh->cfg[i].path, sh->cfg[i].width,
                                   w->dpa_size);
        CHECK(w->dpa_size && inside(w->dpa_base, w->dpa_size) &&
              w->dpa_base % 64 == 0 && w->dpa_size % 64 == 0,
              "window %u enabled with a bad range (base 0x%llx size 0x%llx)",
              i, (unsigned long long)w->dpa_base,
              (unsigned long long)w->dpa_size);
        /*
         * An FP32 window has no counter area (cl == 0): its COUNTERS is
         * stored and read back but never checked or used (registers.md),
         * so any value is valid there.
         */
        CHECK(!cl || (inside(w->counters, cl) && w->counters % 64 == 0 &&
                      !overlap(w->dpa_base, w->dpa_size, w->counters, cl)),
              "window %u enabled with a bad counter area (0x%llx, 0x%llx "
              "bytes)", i, (unsigned long long)w->counters,
              (unsigned long long)cl);
        for (unsigned j = 0; j < i; j++) {
            const NFabricWindow *o = &sh->win[j];
            uint64_t ol;

            if (!(sh->enabled_mask & (1u << j))) {
                continue;
            }
            ol = nfabric_counter_bytes(sh->cfg[j].path, sh->cfg[j].width,
                                       o->dpa_size);
            CHECK(!overlap(w->dpa_base, w->dpa_size, o->dpa_base, o->dpa_size) &&
                  !overlap(w->dpa_base, w->dpa_size, o->counters, ol) &&
                  !overlap(w->counters, cl, o->dpa_base, o->dpa_size) &&
                  !overlap(w->counters, cl, o->counters, ol),
                  "windows %u and %u overlap", i, j);
        }
    }
}

/* Is every byte of [a, a + len) in a range of job j of the assignment? */
static int job_covers(const NFabricFm *fm, unsigned j, uint64_t a, uint64_t len)
{
    for (uint64_t p = a; p < a + len; p += 64) {
        int in = 0;

        for (unsigned k = 0; k < fm->nranges; k++) {
            in |= fm->range[k].job == j && p >= fm->range[k].base &&
                  p < fm->range[k].base + fm->range[k].size;
        }
        if (!in) {
            return 0;
        }
    }
    return 1;
}

/*
 * With an assignment, every enabled window is in one job's slots, and its
 * data and counter area in that job's memory (a reassignment never
 * strands a window over memory its job gave away: docs/multihost.md).
 */
static void check_jobs(const NFabricShared *sh)
{
    const NFabricFm *fm = &sh->fm;

    if (!fm->assigned) {
        return;
    }
    for (unsigned i = 0; i < NFABRIC_NUM_WINDOWS; i++) {
        const NFabricWindow *w = &sh->win[i];
        unsigned j = 0, owners = 0;

        if (!(sh->enabled_mask & (1u << i))) {
            continue;
        }
        for (unsigned k = 0; k < NFABRIC_FM_MAX_JOBS; k++) {
            if (fm->job_windows[k] & (1u << i)) {
                j = k;
                owners++;
            }
        }
        CHECK(owners == 1, "window %u enabled in %u jobs' slots", i, owners);
        CHECK(job_covers(fm, j, w->dpa_base, w->dpa_size) &&
              job_covers(fm, j, w->counters,
                         nfabric_counter_bytes(sh->cfg[i].path,
                                               sh->cfg[i].width, w->dpa_size)),
              "window %u of job %u enabled over memory that is not job %u's",
              i, j, j);
    }
}

/*
 * A fabric manager's assignment made from the input: head 1 in job 0 or
 * 1, each job a share of the windows and a share of the memory (or the
 * default, no assignment).  It may be refused; what it leaves must hold.
 */
static void fm_from(const uint8_t *p, uint64_t v)
{
    NFabricFm fm;
    char err[256];
    unsigned cut = 1 + p[1] % (NFABRIC_NUM_WINDOWS - 1);
    uint64_t mcut = (64 + (v % (RAM_SIZE - 64))) & ~63ull;

    memset(&fm, 0, sizeof(fm));
    fm.assigned = !(p[0] & 0x80);
    fm.head_job[0] = 0;
    fm.head_job[1] = p[2] & 1;
    fm.job_windows[0] = (1u << cut) - 1;
    fm.job_windows[1] = ((1u << NFABRIC_NUM_WINDOWS) - 1) & ~fm.job_windows[0];
    fm.range[0] = (NFabricFmRange){ 0, mcut, p[3] & 1, NFABRIC_FM_JOB_WIDE };
    fm.range[1] = (NFabricFmRange){ mcut, RAM_SIZE - mcut, !(p[3] & 1),
                                    NFABRIC_FM_JOB_WIDE };
    fm.nranges = 2;
    (void)nfabric_shared_fm_write(state_path, &fm, err, sizeof(err));
}

/* Is [dpa, dpa + len) outside every enabled window and counter area? */
static int plain(const NFabricShared *sh, uint64_t dpa, unsigned len)
{
    for (unsigned i = 0; i < NFABRIC_NUM_WINDOWS; i++) {
        const NFabricWindow *w = &sh->win[i];

        if ((sh->enabled_mask & (1u << i)) &&
            (overlap(dpa, len, w->dpa_base, w->dpa_size) ||
             overlap(dpa, len, w->counters,
                     nfabric_counter_bytes(sh->cfg[i].path, sh->cfg[i].width,
                                           w->dpa_size)))) {
            return 0;
        }
    }
    return 1;
}

/* Register offsets worth hitting: windows, rounds, heads, the rest. */
static uint64_t reg_offset(const uint8_t *p)
{
    unsigned i = p[1] % NFABRIC_NUM_WINDOWS;

    switch (p[0] % 4) {
    case 0:
        return NFABRIC_REG_WIN(i, (p[2] % (NFABRIC_WIN_STRIDE / 4)) * 4);
    case 1:
        return NFABRIC_REG_ROUND(i, (p[2] % 4) * 4);
    case 2:
        return (p[2] % 16) * 4;
    default:
        return ((uint64_t)p[1] << 8 | p[2]) % NFABRIC_REGS_SIZE;
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    NFabricCtrl *head = head_state;
    NFabricShared *sh;
    int fd[HEADS];

    unlink(state_path);
    memset(ram, 0, sizeof(ram));
    sh = attach(&head[0], 0, &fd[0]);
    attach(&head[1], 1, &fd[1]);

    while (size >= 12) {
        NFabricCtrl *c = &head[data[0] & 1];
        unsigned op = (data[0] >> 1) % 8;
        uint64_t v;

        memcpy(&v, data + 4, 8);
        switch (op) {
        case 0: case 1: {
            /* Small values make valid window configurations likely. */
            uint64_t off = reg_offset(data + 1);

            if (off >= NFABRIC_REG_WIN_BASE && (data[3] & 0x80)) {
                v &= RAM_SIZE - 1;
            }
            nfabric_ctrl_reg_write(c, off, v, data[3] & 1 ? 8 : 4);
            break;
        }
        case 2:
            (void)nfabric_ctrl_reg_read(c, reg_offset(data + 1),
                                        data[3] & 1 ? 8 : 4);
            break;
        case 3: case 4: {
            uint64_t dpa = ((uint64_t)data[1] << 8 | data[2]) % RAM_SIZE;
            unsigned len = 1 + data[3] % 8;
            uint8_t back[8];
            NFabricCtrl *other = &head[!(data[0] & 1)];

            if (dpa + len > RAM_SIZE) {
                dpa = RAM_SIZE - len;
            }
            if (plain(sh, dpa, len) &&
                (!sh->fm.assigned ||
                 (job_covers(&sh->fm, sh->fm.head_job[0], dpa & ~63ull,
                             dpa + len - (dpa & ~63ull)) &&
                  job_covers(&sh->fm, sh->fm.head_job[1], dpa & ~63ull,
                             dpa + len - (dpa & ~63ull))))) {
                nfabric_ctrl_mem_access(c, dpa, (uint8_t *)&v, len, true);
                nfabric_ctrl_mem_access(other, dpa, back, len, false);
                CHECK(!memcmp(back, &v, len), "plain memory at 0x%llx: the "
                      "other head reads other bytes", (unsigned long long)dpa);
            } else {
                nfabric_ctrl_mem_access(c, dpa, (uint8_t *)&v, len, op == 3);
            }
            break;
        }
        case 5: {
            unsigned i = data[1] % NFABRIC_NUM_WINDOWS;

            nfabric_ctrl_reg_write(c, NFABRIC_REG_ROUND(i, NFABRIC_ROUND_COMPLETE),
                                   sh->round[i].seq, 4);
            break;
        }
        case 7:
            fm_from(data, v);
            break;
        default:
            if (data[1] & 0x80) {
                die_at(head, fd, data[0] & 1, data, v);
                sh = head[0].sh;    /* head 0 may have attached again */
            } else {
                nfabric_ctrl_reset(c);
            }
            break;
        }
        check(sh);
        check_jobs(sh);
        data += 12;
        size -= 12;
    }
    nfabric_shared_detach(head[1].sh, fd[1], 1);
    nfabric_shared_detach(sh, fd[0], 0);
    return 0;
}
