/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * libFuzzer harness of a corrupted state file (docs/multihost.md, "A
 * corrupted or truncated state file"): head 0 makes a real state file and
 * enables three windows (G-Binary, G-Ternary, FP32), head 1 joins, then
 * the input, as a sequence of operations, overwrites bytes of the state
 * file anywhere (biased to the fields that matter: the table's sequence
 * count, the enabled mask, window entries, the locks' words, the identity,
 * rounds, head states), truncates or re-extends the file, and has either
 * head access memory (biased to the windows and their counter areas) and
 * registers.  Nothing read from the state file may crash a head (ASan,
 * UBSan; device memory is a heap buffer of its exact size, so an access
 * the state sends outside it is caught) or hang it.  After every
 * operation, for each head:
 *   - the operation took less than a bound (4 lock bounds + 250 ms);
 *   - HEAD_INFO.STATE_FAILED is set iff the head failed;
 *   - a failed head reads all-ones from device memory, 0 from
 *     ENABLED_MASK, and reports STATE in LAST_ERROR after it;
 *   - a head that did not fail uses a view of the table that lies inside
 *     device memory, aligned, with no two windows overlapping.
 * The harness is built with NFABRIC_SHARED_LOCK_MS=20 (scripts/lib/
 * fuzz.sh), so that a lock word "held" by garbage costs 20 ms, not 1 s.
 *
 * Input: operations, each 4 bytes b0..b3, then for an overwrite its
 * 1..8 bytes of payload:
 *   b0 % 8  0, 1 overwrite; 2 memory write, 3 memory read; 4 register
 *           write; 5 register read; 6 truncate / re-extend; 7 ROUND_STATUS
 *           and HEADS_LIVE (reaping)
 *   b0 & 8  the head (0 or 1) for accesses
 * At most 64 operations.
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "fuzz_heads.h"

#define RAM_SIZE    (64u * 1024)
#define HEADS       2
#define MAX_OPS     64

static uint8_t *ram;
static const NFabricTimingParams tparams = { 1000, 5, 300, 32000 };
static NFabricCtrl ctrl[HEADS];
static NFabricShared *shm[HEADS];
static int sfd[HEADS];

/* Fields worth overwriting: where they are in the state (offsetof). */
#define F(member) offsetof(NFabricShared, member)
static const size_t hot[] = {
    F(magic), F(layout), F(struct_size), F(heads), F(mem_size), F(pshared),
    F(state_id), F(job[0].busy), F(job[1].busy), F(lost_mask), F(gen[0]),
    F(gen[1]), F(enabled_mask),
    F(win[0].dpa_base), F(win[0].dpa_size), F(win[0].counters),
    F(win[0].ctrl), F(win[0].threshold),
    F(win[1].dpa_base), F(win[1].dpa_size), F(win[1].counters),
    F(win[1].ctrl), F(win[1].threshold),
    F(win[2].dpa_base), F(win[2].dpa_size), F(win[2].ctrl),
    F(win[7].dpa_base), F(win[7].ctrl),
    F(cfg[0]), F(cfg[1]), F(cfg[2]),
    F(round[0].seq), F(round[0].done), F(round[1].contrib),
    F(cfg_lock), F(cfg_lock) + 4, F(cfg_lock) + 8, F(cfg_lock) + 16,
    F(job[0].m), F(job[0].m) + 4, F(job[0].m) + 8, F(job[0].m) + 16,
    F(job[1].m) + 16, F(fm.job_windows[0]), F(fm.head_job[0]),
    F(stripe[0][0]), F(stripe[0][0]) + 1, F(stripe[0][0]) + 3,
    F(stripe[0][1]), F(stripe[1][0]), F(stripe[2][63]),
    F(head[0].state), F(head[1].state), F(head[1].pid),
};
#undef F

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    fuzz_heads_files("fuzzst");
    ram = malloc(RAM_SIZE);     /* exactly: ASan sees any access past it */
    return ram ? 0 : -1;
}

static void attach(unsigned h)
{
    fuzz_heads_attach(h, HEADS, RAM_SIZE, &shm[h], &sfd[h]);
    nfabric_ctrl_init(&ctrl[h], ram, RAM_SIZE, &tparams, NULL, NULL);
    nfabric_ctrl_use_shared(&ctrl[h], shm[h], h);
}

static void win(NFabricCtrl *c, unsigned i, uint64_t base, uint64_t size,
                uint64_t counters, uint32_t wctrl)
{
    nfabric_ctrl_reg_write(c, NFABRIC_REG_WIN(i, NFABRIC_WIN_DPA_BASE), base, 8);
    nfabric_ctrl_reg_write(c, NFABRIC_REG_WIN(i, NFABRIC_WIN_DPA_SIZE), size, 8);
    nfabric_ctrl_reg_write(c, NFABRIC_REG_WIN(i, NFABRIC_WIN_COUNTERS),
                           counters, 8);
    nfabric_ctrl_reg_write(c, NFABRIC_REG_WIN(i, NFABRIC_WIN_THRESHOLD), 1, 4);
    nfabric_ctrl_reg_write(c, NFABRIC_REG_WIN(i, NFABRIC_WIN_CTRL),
                           wctrl | NFABRIC_WCTRL_ENABLE, 4);
}

static int64_t now_ms(void)
{
    struct timespec t;

    clock_gettime(CLOCK_MONOTONIC, &t);
    return (int64_t)t.tv_sec * 1000 + t.tv_nsec / 1000000;
}

static int overlap(uint64_t a, uint64_t al, uint64_t b, uint64_t bl)
{
    return al && bl && a < b + bl && b < a + al;
}

/* An independent check of a head's view (what its memory path uses). */
static void check_view(const NFabricCtrl *c, unsigned h)
{
    const NFabricView *v = &c->view;

    if (!v->valid) {
        return;
    }
    CHECK(!(v->mask >> NFABRIC_NUM_WINDOWS), "head %u: view mask 0x%x", h,
          v->mask);
    for (unsigned i = 0; i < NFABRIC_NUM_WINDOWS; i++) {
        uint64_t cl = v->clen[i];

        if (!(v->mask & (1u << i))) {
            continue;
        }
        CHECK(v->size[i] && v->base[i] <= RAM_SIZE &&
              v->size[i] <= RAM_SIZE - v->base[i] && v->base[i] % 64 == 0 &&
              v->size[i] % 64 == 0, "head %u: view window %u outside memory",
              h, i);
        CHECK(cl == nfabric_counter_bytes(v->cfg[i].path, v->cfg[i].width,
                                          v->size[i]) &&
              (!cl || (v->counters[i] <= RAM_SIZE &&
                       cl <= RAM_SIZE - v->counters[i] &&
                       !overlap(v->base[i], v->size[i], v->counters[i], cl))),
              "head %u: view window %u's counter area", h, i);
        for (unsigned j = 0; j < i; j++) {
            if ((v->mask & (1u << j)) &&
                overlap(v->base[i], v->size[i], v->base[j], v->size[j])) {
                CHECK(0, "head %u: view windows %u and %u overlap", h, i, j);
            }
        }
    }
}

static void check_head(unsigned h)
{
    NFabricCtrl *c = &ctrl[h];
    uint32_t info = (uint32_t)nfabric_ctrl_reg_read(c, NFABRIC_REG_HEAD_INFO, 4);

    CHECK(!!(info & NFABRIC_HEAD_INFO_STATE_FAILED) == c->failed,
          "head %u: HEAD_INFO 0x%x, failed %d", h, info, c->failed);
    if (c->failed) {
        uint64_t v = 0;

        CHECK(c->failure[0], "head %u failed without saying why", h);
        nfabric_ctrl_mem_access(c, 0x1000, (uint8_t *)&v, 8, false);
        CHECK(v == UINT64_MAX && nfabric_ctrl_reg_read(c,
                  NFABRIC_REG_LAST_ERROR, 4) == NFABRIC_ERR_STATE &&
              nfabric_ctrl_reg_read(c, NFABRIC_REG_ENABLED_MASK, 4) == 0,
              "head %u failed (%s) but still serves the device", h,
              c->failure);
        return;
    }
    check_view(c, h);
}

/* DPAs worth hitting: the windows, their counter areas, plain memory. */
static uint64_t pick_dpa(uint8_t a, uint8_t b)
{
    static const uint64_t at[] = { 0x1000, 0x2000, 0xa000, 0x4000, 0x8000,
                                   0x13c0, 0xfff8, 0 };
    uint64_t d = at[a % 8] + (a & 0x80 ? b : b % 64);

    return d % RAM_SIZE;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    unsigned ops = 0;

    unlink(state_path);
    memset(ram, 0, RAM_SIZE);
    attach(0);
    win(&ctrl[0], 0, 0x1000, 0x400, 0x4000, NFABRIC_WCTRL(NFABRIC_PATH_GBINARY, 8, 0));
    win(&ctrl[0], 1, 0x2000, 0x200, 0x8000, NFABRIC_WCTRL(NFABRIC_PATH_GTERNARY, 16, 0));
    win(&ctrl[0], 2, 0xa000, 0x1000, 0, NFABRIC_WCTRL(NFABRIC_PATH_FP32, 0, 0));
    attach(1);
    CHECK(shm[0]->enabled_mask == 7, "set-up: windows 0x%x", shm[0]->enabled_mask);

    while (size >= 4 && ops++ < MAX_OPS) {
        unsigned op = data[0] % 8, h = (data[0] >> 3) & 1;
        NFabricCtrl *c = &ctrl[h];
        int64_t t0 = now_ms(), ms;

        switch (op) {
        case 0: case 1: {
            /* Overwrite 1..8 bytes of the state file, through the file. */
            unsigned len = 1 + data[3] % 8;
            size_t off = data[3] & 0x80 ?
                hot[data[1] % (sizeof(hot) / sizeof(hot[0]))] + data[2] % 8 :
                ((size_t)data[1] << 8 | data[2]) % sizeof(NFabricShared);

            if (size < 4 + len) {
                len = size - 4;
            }
            if (len && pwrite(sfd[0], data + 4, len, (off_t)off) < 0) {
                abort();
            }
            data += len;
            size -= len;
            break;
        }
        case 2: case 3: {
            uint64_t v = 0x8badf00d5a5a0000ull | data[3];
            uint64_t dpa = pick_dpa(data[1], data[2]);
            unsigned len = 1 + data[3] % 8;

            if (dpa + len > RAM_SIZE) {
                dpa = RAM_SIZE - len;
            }
            nfabric_ctrl_mem_access(c, dpa, (uint8_t *)&v, len, op == 2);
            break;
        }
        case 4: {
            /* Window registers and commands, round completion. */
            unsigned i = data[1] % 4;
            uint64_t off = data[2] & 1 ?
                NFABRIC_REG_ROUND(i, NFABRIC_ROUND_COMPLETE) :
                NFABRIC_REG_WIN(i, (data[2] >> 1) % 10 * 4);
            uint64_t v = data[3] & 0x80 ? (uint64_t)data[3] << 8 :
                         data[3] % 4 == 0 ? NFABRIC_WCMD_CLEAR :
                         data[3] % 4 == 1 ? 0 :
                         NFABRIC_WCTRL(data[3] % 3, 8, 0) | NFABRIC_WCTRL_ENABLE;

            nfabric_ctrl_reg_write(c, off, v, off % 8 ? 4 : 8);
            break;
        }
        case 5:
            (void)nfabric_ctrl_reg_read(c, ((uint64_t)data[1] << 8 | data[2]) %
                                        NFABRIC_REGS_SIZE & ~3ull, 4);
            break;
        case 6: {
            /* Truncate (to nothing, inside page 0, past it), or re-extend. */
            static const off_t to[] = { 0, 100, 4096, 8192,
                                        sizeof(NFabricShared) };

            if (ftruncate(sfd[0], to[data[1] % 5]) != 0) {
                abort();
            }
            break;
        }
        default:
            (void)nfabric_ctrl_reg_read(c, NFABRIC_REG_ROUND(data[1] % 3,
                                        NFABRIC_ROUND_STATUS), 4);
            (void)nfabric_ctrl_reg_read(c, NFABRIC_REG_HEADS_LIVE, 4);
            break;
        }
        ms = now_ms() - t0;
        CHECK(ms < 4 * NFABRIC_SHARED_LOCK_MS + 250, "operation %u took %lld "
              "ms (a hang?)", op, (long long)ms);
        for (unsigned k = 0; k < HEADS; k++) {
            check_head(k);
        }
        data += 4;
        size -= 4;
    }
    nfabric_shared_detach(shm[1], sfd[1], 1);
    nfabric_shared_detach(shm[0], sfd[0], 0);
    return 0;
}
