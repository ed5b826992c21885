/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * libFuzzer harness of the controller model (hw/mem/nfabric/nfabric_ctrl.c
 * with the engine and the timing model), built by scripts/lib/fuzz.sh with
 * clang -fsanitize=fuzzer,address,undefined into build/fuzz/fuzz-ctrl.
 *
 * The input is a sequence of operations (byte layout below), run against a
 * fresh controller over 64 KiB of device memory with canary zones on both
 * sides (poisoned for ASan, and compared after every input).  After every
 * operation the harness checks invariants; a violation aborts, which
 * libFuzzer reports as a crash and saves the input.
 *
 *   structure   ENABLED_MASK has bits 0..15 only; a window is enabled iff
 *               its CTRL has ENABLE; every enabled window validates by an
 *               independent check (path, width, tie, threshold, inside
 *               memory, aligned, no overlap with its own counters or with
 *               any other enabled window); its derived config matches
 *   registers   MAGIC/VERSION/CAPS/WIN_LAYOUT/MEM_SIZE constant, error
 *               codes <= 13; a register read never changes state (except
 *               the error count of a rejected one) and reads the same
 *               twice; a rejected write changes nothing but the error
 *               registers (and a refused enable's CTRL fields); an
 *               accepted one touches only its own window
 *   memory      a shadow copy of device memory is kept by a reference model
 *               of the CXL.mem path written from docs/registers.md: FP32
 *               identity outside enabled low-bit windows, G-Binary
 *               sign-count and majority read-out (tie rule), G-Ternary
 *               gated sums, saturation, RESERVED_CODES, CONTRIB_WRITES /
 *               BYTES (low-bit windows: reliability.md N2), the clears of
 *               enable and CMD=CLEAR; every read must
 *               equal the reference and read twice the same, and device
 *               memory must equal the shadow after every access
 *   statistics  once per path an access touched, with the bytes that path
 *               served (docs/reliability.md F1); T_TOTAL_PS = sum of the
 *               paths
 *   posted      (1.7) a posted window's data is the head's staging: its
 *               accesses read and write a shadow of the staging and count
 *               nothing; POST applies the staged bytes as the reference's
 *               writes (CONTRIB_BYTES + length, CONTRIB_WRITES + the words
 *               it touches, the statistics likewise), FETCH writes the
 *               reference's read-out into the staging
 *   post_load   after a (possibly corrupted) state is loaded, either -1 or
 *               a state that passes all of the above
 *   bounds      every dirty range inside memory; canaries intact
 *
 * Input layout: byte 0 picks the engine implementation (auto, portable,
 * SSE2, AVX2 where the host runs it), byte 1 one of 4 initial memory
 * images; then operations, each an opcode byte and its operands (a missing
 * byte reads as 0), at most 200 operations.
 */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hw/mem/nfabric_ctrl.h"

#if defined(__has_feature)
#if __has_feature(address_sanitizer)
#define NF_ASAN 1
#endif
#endif
#if defined(__SANITIZE_ADDRESS__)
#define NF_ASAN 1
#endif
#ifdef NF_ASAN
#include <sanitizer/asan_interface.h>
#endif

#define RAM_SIZE        (64 * 1024u)
#define CANARY          4096u
#define CANARY_BYTE     0xa5
#define MAX_OPS         200
#define NW              NFABRIC_NUM_WINDOWS

static NFabricCtrl ctrl;
static uint8_t *block, *ram;
static uint8_t shadow[RAM_SIZE];
static uint8_t *stg;                    /* the head's staging (1.7) */
static uint8_t stg_shadow[RAM_SIZE];
static uint8_t images[4][RAM_SIZE];     /* initial device memory contents */
static uint64_t exp_contrib_writes[NW], exp_contrib_bytes[NW];
static uint32_t exp_reserved[NW];
static bool setup_done;
static const NFabricTimingParams tparams = {
    .clock_mhz = 1000, .depth = 5, .service_ns = 300, .link_mbps = 32000,
};

#define FAIL(...) do {                                                  \
        fprintf(stderr, "nfabric-fuzz: invariant violated: " __VA_ARGS__); \
        fprintf(stderr, " (%s:%d)\n", __FILE__, __LINE__);              \
        abort();                                                        \
    } while (0)
#define CHECK(cond, ...) do { if (!(cond)) FAIL(__VA_ARGS__); } while (0)

/* ---- hooks ---------------------------------------------------------- */

static void hook_dirty(void *opaque, uint64_t dpa, uint64_t len)
{
    (void)opaque;
    CHECK(len && dpa <= RAM_SIZE && len <= RAM_SIZE - dpa,
          "dirty range 0x%llx+0x%llx outside memory",
          (unsigned long long)dpa, (unsigned long long)len);
}

static void hook_staging_dirty(void *opaque, uint64_t dpa, uint64_t len)
{
    (void)opaque;
    CHECK(len && dpa <= RAM_SIZE && len <= RAM_SIZE - dpa,
          "staging dirty range 0x%llx+0x%llx outside it",
          (unsigned long long)dpa, (unsigned long long)len);
}

static unsigned n_rejected;

static void hook_error(void *opaque, uint64_t off, uint32_t code,
                       const char *what)
{
    (void)opaque;
    (void)off;
    (void)what;
    n_rejected++;
    CHECK(code >= 1 && code <= NFABRIC_ERR_MAX, "error code %u", code);
}

static const NFabricCtrlOps hooks = {
    .staging_dirty = hook_staging_dirty,
    .dirty = hook_dirty,
    .guest_error = hook_error,
};

/* ---- input ------------------------------------------------------------ */

typedef struct In {
    const uint8_t *p;
    size_t n;
} In;

static uint8_t u8(In *in)
{
    if (!in->n) {
        return 0;
    }
    in->n--;
    return *in->p++;
}

static uint64_t un(In *in, unsigned bytes)
{
    uint64_t v = 0;

    for (unsigned i = 0; i < bytes; i++) {
        v |= (uint64_t)u8(in) << (8 * i);
    }
    return v;
}

/* ---- the independent view of the spec --------------------------------- */

static bool enabled(unsigned i)
{
    return ctrl.sh->enabled_mask & (1u << i);
}

static uint64_t clen_of(const NFabricWindow *w)
{
    unsigned p = NFABRIC_WCTRL_PATH(w->ctrl);
    unsigned wd = NFABRIC_WCTRL_WIDTH(w->ctrl);

    if (p == NFABRIC_PATH_GBINARY) {
        return w->dpa_size * 8 * (wd / 8);
    }
    if (p == NFABRIC_PATH_GTERNARY) {
        return w->dpa_size * 4 * (wd / 8);
    }
    return 0;
}

static bool inside(uint64_t a, uint64_t len)
{
    return a <= RAM_SIZE && len <= RAM_SIZE - a;
}

static bool overlap(uint64_t a, uint64_t al, uint64_t b, uint64_t bl)
{
    return al && bl && a < b + bl && b < a + al;
}

static void check_structure(void)
{
    CHECK(!(ctrl.sh->enabled_mask >> NW), "ENABLED_MASK 0x%x", ctrl.sh->enabled_mask);
    CHECK(ctrl.last_error <= NFABRIC_ERR_MAX, "LAST_ERROR %u", ctrl.last_error);
    for (unsigned i = 0; i < NW; i++) {
        const NFabricWindow *w = &ctrl.sh->win[i];
        const NFabricAggCfg *cfg = &ctrl.sh->cfg[i];
        unsigned p = NFABRIC_WCTRL_PATH(w->ctrl);
        unsigned wd = NFABRIC_WCTRL_WIDTH(w->ctrl);
        uint64_t cl;

        CHECK(w->error <= NFABRIC_ERR_MAX, "window %u ERROR %u", i, w->error);
        CHECK(w->contrib_writes == exp_contrib_writes[i] &&
              w->contrib_bytes == exp_contrib_bytes[i] &&
              w->reserved_codes == exp_reserved[i],
              "window %u contribution counts %llu/%llu/%u, want %llu/%llu/%u",
              i, (unsigned long long)w->contrib_writes,
              (unsigned long long)w->contrib_bytes, w->reserved_codes,
              (unsigned long long)exp_contrib_writes[i],
              (unsigned long long)exp_contrib_bytes[i], exp_reserved[i]);
        CHECK(!!(w->ctrl & NFABRIC_WCTRL_ENABLE) == enabled(i),
              "window %u: CTRL 0x%x but mask 0x%x", i, w->ctrl,
              ctrl.sh->enabled_mask);
        if (!enabled(i)) {
            continue;
        }
        CHECK(!(w->ctrl & ~NFABRIC_WCTRL_VALID),
              "window %u enabled with reserved CTRL bits 0x%x (F2)", i,
              w->ctrl);
        CHECK(p < NFABRIC_NUM_PATHS, "window %u path %u", i, p);
        if (p != NFABRIC_PATH_FP32) {
            CHECK(wd == 8 || wd == 16, "window %u width %u", i, wd);
        }
        if (p == NFABRIC_PATH_GBINARY) {
            CHECK(NFABRIC_WCTRL_TIE(w->ctrl) <= 1, "window %u tie", i);
        }
        if (p == NFABRIC_PATH_GTERNARY) {
            CHECK(w->threshold >= 1 &&
                  w->threshold <= (wd == 8 ? 127u : 32767u),
                  "window %u threshold %u", i, w->threshold);
        }
        cl = clen_of(w);
        CHECK(w->dpa_size && inside(w->dpa_base, w->dpa_size),
              "window %u data outside memory", i);
        CHECK(!cl || inside(w->counters, cl), "window %u counters outside", i);
        CHECK(w->dpa_base % 64 == 0 && w->dpa_size % 64 == 0 &&
              (!cl || w->counters % 64 == 0), "window %u misaligned", i);
        CHECK(!overlap(w->dpa_base, w->dpa_size, w->counters, cl),
              "window %u counters over its data", i);
        for (unsigned j = i + 1; j < NW; j++) {
            const NFabricWindow *o = &ctrl.sh->win[j];
            uint64_t ol;

            if (!enabled(j)) {
                continue;
            }
            ol = clen_of(o);
            CHECK(!overlap(w->dpa_base, w->dpa_size, o->dpa_base, o->dpa_size) &&
                  !overlap(w->dpa_base, w->dpa_size, o->counters, ol) &&
                  !overlap(w->counters, cl, o->dpa_base, o->dpa_size) &&
                  !overlap(w->counters, cl, o->counters, ol),
                  "windows %u and %u overlap", i, j);
        }
        CHECK(cfg->path == p && cfg->size == w->dpa_size &&
              (p == NFABRIC_PATH_FP32 ||
               (cfg->width == wd && cfg->tie == NFABRIC_WCTRL_TIE(w->ctrl) &&
                cfg->threshold == w->threshold)),
              "window %u derived config stale", i);
    }
}

static void check_constants(void)
{
    CHECK(nfabric_ctrl_reg_read(&ctrl, NFABRIC_REG_MAGIC, 4) == NFABRIC_MAGIC &&
          nfabric_ctrl_reg_read(&ctrl, NFABRIC_REG_VERSION, 4) ==
              NFABRIC_VERSION &&
          nfabric_ctrl_reg_read(&ctrl, NFABRIC_REG_CAPS, 4) == 0x03030710 &&
          nfabric_ctrl_reg_read(&ctrl, NFABRIC_REG_WIN_LAYOUT, 4) ==
              0x00400400 &&
          nfabric_ctrl_reg_read(&ctrl, NFABRIC_REG_MEM_SIZE, 8) == RAM_SIZE &&
          nfabric_ctrl_reg_read(&ctrl, NFABRIC_REG_ENABLED_MASK, 4) ==
              ctrl.sh->enabled_mask,
          "constant registers changed");
}

static void check_timing_sum(void)
{
    uint64_t sum = 0;

    for (unsigned p = 0; p < NFABRIC_NUM_PATHS; p++) {
        sum += nfabric_ctrl_reg_read(&ctrl, NFABRIC_REG_T_PATH_FIELD(p, 0), 8);
    }
    CHECK(nfabric_ctrl_reg_read(&ctrl, NFABRIC_REG_T_TOTAL_PS, 8) == sum,
          "T_TOTAL_PS is not the sum of the paths");
}

/* ---- snapshots --------------------------------------------------------- */

typedef struct Snap {
    NFabricWindow win[NW];
    uint32_t last_error, error_count, enabled_mask, pad;
    uint64_t stats[NFABRIC_NUM_PATHS][NFABRIC_NUM_STATS];
    uint64_t time_ps[NFABRIC_NUM_PATHS], exposed_ps[NFABRIC_NUM_PATHS];
} Snap;

static void snap(Snap *s)
{
    memset(s, 0, sizeof(*s));
    memcpy(s->win, ctrl.sh->win, sizeof(s->win));
    s->last_error = ctrl.last_error;
    s->error_count = ctrl.error_count;
    s->enabled_mask = ctrl.sh->enabled_mask;
    memcpy(s->stats, ctrl.stats, sizeof(s->stats));
    memcpy(s->time_ps, ctrl.timing.time_ps, sizeof(s->time_ps));
    memcpy(s->exposed_ps, ctrl.timing.exposed_ps, sizeof(s->exposed_ps));
}

/* ---- the reference CXL.mem path ----------------------------------------- */

static int sh_cnt(uint64_t counters, unsigned width, uint64_t e)
{
    const uint8_t *p = shadow + counters + e * (width / 8);

    return width == 8 ? (int8_t)p[0] : (int16_t)(p[0] | p[1] << 8);
}

static void sh_cnt_add(uint64_t counters, unsigned width, uint64_t e, int d)
{
    uint8_t *p = shadow + counters + e * (width / 8);
    int max = width == 8 ? 127 : 32767;
    int v = sh_cnt(counters, width, e) + d;

    v = v > max ? max : v < -max - 1 ? -max - 1 : v;
    p[0] = (uint8_t)v;
    if (width == 16) {
        p[1] = (uint8_t)(v >> 8);
    }
}

/* The enabled low-bit or FP32 window holding a, or -1. */
static int win_of(uint64_t a)
{
    for (unsigned i = 0; i < NW; i++) {
        const NFabricWindow *w = &ctrl.sh->win[i];

        if (enabled(i) && a >= w->dpa_base && a - w->dpa_base < w->dpa_size) {
            return (int)i;
        }
    }
    return -1;
}

/* Is enabled window i posted (its data this head's staging)? */
static bool posted_win(int i)
{
    return i >= 0 && enabled((unsigned)i) &&
           (ctrl.sh->win[i].ctrl & NFABRIC_WCTRL_POSTED);
}

static void check_staging_range(uint64_t a, uint64_t len)
{
    if (len && memcmp(stg + a, stg_shadow + a, len)) {
        FAIL("staging 0x%llx+%llu differs from the reference",
             (unsigned long long)a, (unsigned long long)len);
    }
}

/* Where the bytes of one element's counter lie (for the memory compare). */
static void check_shadow_range(uint64_t a, uint64_t len)
{
    if (len && memcmp(ram + a, shadow + a, len)) {
        FAIL("device memory 0x%llx+%llu differs from the reference",
             (unsigned long long)a, (unsigned long long)len);
    }
}

static uint8_t ref_read_byte(int i, uint64_t a)
{
    const NFabricWindow *w;
    unsigned p, wd;
    uint64_t off;
    uint8_t v = 0;

    if (i < 0) {
        return shadow[a];
    }
    w = &ctrl.sh->win[i];
    p = NFABRIC_WCTRL_PATH(w->ctrl);
    wd = NFABRIC_WCTRL_WIDTH(w->ctrl);
    off = a - w->dpa_base;
    if (p == NFABRIC_PATH_FP32) {
        return shadow[a];
    }
    if (p == NFABRIC_PATH_GBINARY) {
        for (unsigned b = 0; b < 8; b++) {
            int c = sh_cnt(w->counters, wd, off * 8 + b);
            unsigned bit = c > 0 ? 1 : c < 0 ? 0
                                             : NFABRIC_WCTRL_TIE(w->ctrl);

            v |= bit << b;
        }
    } else {
        int t = (int)w->threshold;

        for (unsigned k = 0; k < 4; k++) {
            int c = sh_cnt(w->counters, wd, off * 4 + k);
            unsigned code = c >= t ? NFABRIC_TERN_PLUS :
                            c <= -t ? NFABRIC_TERN_MINUS : NFABRIC_TERN_ZERO;

            v |= code << (2 * k);
        }
    }
    return v;
}

static void ref_write_byte(int i, uint64_t a, uint8_t d)
{
    const NFabricWindow *w;
    unsigned p, wd;
    uint64_t off;

    if (i < 0 ||
        NFABRIC_WCTRL_PATH(ctrl.sh->win[i].ctrl) == NFABRIC_PATH_FP32) {
        shadow[a] = d;
        check_shadow_range(a, 1);
        return;
    }
    w = &ctrl.sh->win[i];
    p = NFABRIC_WCTRL_PATH(w->ctrl);
    wd = NFABRIC_WCTRL_WIDTH(w->ctrl);
    off = a - w->dpa_base;
    if (p == NFABRIC_PATH_GBINARY) {
        for (unsigned b = 0; b < 8; b++) {
            sh_cnt_add(w->counters, wd, off * 8 + b, (d >> b) & 1 ? 1 : -1);
        }
        check_shadow_range(w->counters + off * wd, wd);
    } else {
        for (unsigned k = 0; k < 4; k++) {
            unsigned code = (d >> (2 * k)) & 3;

            if (code == NFABRIC_TERN_RESERVED) {
                exp_reserved[i]++;
            } else {
                sh_cnt_add(w->counters, wd, off * 4 + k,
                           code == NFABRIC_TERN_PLUS ? 1 :
                           code == NFABRIC_TERN_MINUS ? -1 : 0);
            }
        }
        check_shadow_range(w->counters + off * wd / 2, wd / 2);
    }
}

static unsigned path_of(int i)
{
    return i < 0 ? NFABRIC_PATH_FP32 : NFABRIC_WCTRL_PATH(ctrl.sh->win[i].ctrl);
}

static void do_mem(uint64_t dpa, unsigned len, uint64_t val, bool write)
{
    uint8_t buf[16], again[16];
    uint64_t bytes[NFABRIC_NUM_PATHS] = { 0 };
    unsigned pieces[NFABRIC_NUM_PATHS] = { 0 };
    bool valid = len >= 1 && len <= 8 && inside(dpa, len);
    Snap before, after;
    bool ok;

    uint64_t acc_before[NFABRIC_NUM_PATHS];

    memset(buf, 0xee, sizeof(buf));
    if (write) {
        memcpy(buf, &val, 8);
    }
    memcpy(acc_before, ctrl.timing.accesses, sizeof(acc_before));
    snap(&before);
    ok = nfabric_ctrl_mem_access(&ctrl, dpa, buf, len, write);
    CHECK(ok == valid, "memory access 0x%llx/%u: returned %d",
          (unsigned long long)dpa, len, ok);
    if (!valid) {
        snap(&after);
        CHECK(!memcmp(&before, &after, sizeof(before)),
              "refused memory access changed state");
        for (unsigned k = write ? 8 : 0; k < sizeof(buf); k++) {
            CHECK(buf[k] == 0xee, "refused memory access wrote the buffer");
        }
        return;
    }
    /* Pieces: maximal runs of bytes in one window (or plain memory). */
    for (unsigned k = 0; k < len; k++) {
        int i = win_of(dpa + k);
        unsigned p = path_of(i);

        if (posted_win(i)) {
            /* The staging: plain memory of this head, not counted. */
            if (write) {
                stg_shadow[dpa + k] = buf[k];
                check_staging_range(dpa + k, 1);
            } else {
                CHECK(buf[k] == stg_shadow[dpa + k], "read 0x%llx of a "
                      "posted window: got 0x%02x, staging 0x%02x",
                      (unsigned long long)(dpa + k), buf[k],
                      stg_shadow[dpa + k]);
            }
            continue;
        }
        bytes[p]++;
        if (k == 0 || win_of(dpa + k - 1) != i) {
            pieces[p]++;
            /* CONTRIB_* count on every window, FP32 ones too (1.1). */
            if (write && i >= 0) {
                exp_contrib_writes[i]++;
            }
        }
        if (write) {
            if (i >= 0) {
                exp_contrib_bytes[i]++;
            }
            ref_write_byte(i, dpa + k, buf[k]);
        } else {
            uint8_t want = ref_read_byte(i, dpa + k);

            CHECK(buf[k] == want, "read 0x%llx: got 0x%02x, reference 0x%02x "
                  "(path %u)", (unsigned long long)(dpa + k), buf[k], want, p);
            /* The read changed neither the byte nor its counters. */
            if (p == NFABRIC_PATH_FP32) {
                check_shadow_range(dpa + k, 1);
            } else {
                const NFabricWindow *w = &ctrl.sh->win[i];
                unsigned wd = NFABRIC_WCTRL_WIDTH(w->ctrl);
                uint64_t off = dpa + k - w->dpa_base;

                if (p == NFABRIC_PATH_GBINARY) {
                    check_shadow_range(w->counters + off * wd, wd);
                } else {
                    check_shadow_range(w->counters + off * wd / 2, wd / 2);
                }
            }
        }
    }
    if (!write) {
        nfabric_ctrl_mem_access(&ctrl, dpa, again, len, false);
        CHECK(!memcmp(buf, again, len), "two reads differ");
        for (unsigned k = len; k < sizeof(buf); k++) {
            CHECK(buf[k] == 0xee, "read wrote past len");
        }
    }
    snap(&after);
    for (unsigned p = 0; p < NFABRIC_NUM_PATHS; p++) {
        unsigned cnt = write ? NFABRIC_STAT_WRITES : NFABRIC_STAT_READS;
        unsigned by = write ? NFABRIC_STAT_WRITE_BYTES : NFABRIC_STAT_READ_BYTES;
        uint64_t mult = write ? 1 : 2;      /* reads were done twice */
        uint64_t dc = after.stats[p][cnt] - before.stats[p][cnt];

        CHECK(after.stats[p][by] - before.stats[p][by] == mult * bytes[p],
              "path %u counted %llu bytes, want %llu", p,
              (unsigned long long)(after.stats[p][by] - before.stats[p][by]),
              (unsigned long long)(mult * bytes[p]));
        CHECK(dc == (bytes[p] ? mult : 0), "path %u counted %llu accesses, "
              "want %llu (%u pieces; docs/reliability.md F1)", p,
              (unsigned long long)dc,
              (unsigned long long)(bytes[p] ? mult : 0), pieces[p]);
        CHECK(ctrl.timing.accesses[p] - acc_before[p] == (bytes[p] ? mult : 0),
              "path %u: %llu modelled accesses", p,
              (unsigned long long)(ctrl.timing.accesses[p] - acc_before[p]));
        CHECK(after.stats[p][write ? NFABRIC_STAT_READS : NFABRIC_STAT_WRITES]
              == before.stats[p][write ? NFABRIC_STAT_READS :
                                  NFABRIC_STAT_WRITES],
              "path %u: the other direction counted", p);
    }
    /* Nothing else changed: windows (but the counts) and the errors. */
    for (unsigned i = 0; i < NW; i++) {
        before.win[i].contrib_writes = after.win[i].contrib_writes;
        before.win[i].contrib_bytes = after.win[i].contrib_bytes;
        before.win[i].reserved_codes = after.win[i].reserved_codes;
    }
    CHECK(!memcmp(before.win, after.win, sizeof(before.win)) &&
          before.last_error == after.last_error &&
          before.error_count == after.error_count &&
          before.enabled_mask == after.enabled_mask,
          "a memory access changed the registers");
}

/* ---- the CXL PMU block (register version 1.9) ------------------------- */

/*
 * One access of the CPMU block at any offset (past it too), size and
 * value: it changes no window, no statistics, no enable, at most one more
 * error; its registers stay inside their bits (48-bit counters, freeze and
 * overflow bits of the 27 counters, configurations of writable bits only,
 * a configurable counter's of event capability 0, a fixed counter's
 * control bits alone).
 */
static void op_cpmu(In *in)
{
    static const unsigned sizes[8] = { 1, 2, 3, 4, 4, 8, 8, 16 };
    uint64_t off = un(in, 2) % (NFABRIC_CPMU_SIZE + 0x100);
    unsigned sz = sizes[u8(in) % 8];
    bool write = u8(in) & 1;
    const NFabricCpmu *c = &ctrl.cpmu;
    Snap before, after;

    if (u8(in) & 1) {                   /* mostly the registers that are */
        static const uint64_t regs[] = {
            NFABRIC_CPMU_REG_CAP, NFABRIC_CPMU_REG_OVERFLOW,
            NFABRIC_CPMU_REG_FREEZE, NFABRIC_CPMU_REG_EVENT_CAP(0),
            NFABRIC_CPMU_REG_COUNTER_CFG(0), NFABRIC_CPMU_REG_COUNTER(0),
        };
        unsigned k = u8(in) % 6;

        off = regs[k] + (k >= 3 ? 8 * (u8(in) % 28) : 0) + (u8(in) & 4);
        sz = u8(in) & 1 ? 8 : 4;
    }
    snap(&before);
    if (write) {
        nfabric_ctrl_cpmu_write(&ctrl, off, un(in, 8), sz);
    } else {
        nfabric_ctrl_cpmu_read(&ctrl, off, sz);
    }
    nfabric_ctrl_cpmu_check(&ctrl);
    snap(&after);
    CHECK(!memcmp(before.win, after.win, sizeof(before.win)) &&
          !memcmp(before.stats, after.stats, sizeof(before.stats)) &&
          before.enabled_mask == after.enabled_mask &&
          (after.error_count == before.error_count ||
           after.error_count == before.error_count + 1),
          "a CXL PMU access changed more than its block and the errors");
    CHECK(c->freeze < 1ull << NFABRIC_CPMU_COUNTERS &&
          c->overflow < 1ull << NFABRIC_CPMU_COUNTERS,
          "CXL PMU: freeze or overflow past the counters");
    for (unsigned n = 0; n < NFABRIC_CPMU_COUNTERS; n++) {
        bool fixed = n >= NFABRIC_CPMU_CONFIGURABLE;

        CHECK(c->value[n] < 1ull << NFABRIC_CPMU_WIDTH &&
              !(c->cfg[n] & ~(fixed ? NFABRIC_CPMU_CFG_CONTROL :
                              NFABRIC_CPMU_CFG_WRITABLE)) &&
              (fixed || !(c->cfg[n] & NFABRIC_CPMU_CFG_GROUP_MASK)),
              "CXL PMU counter %u: value or configuration out of its bits", n);
    }
}

/* ---- register accesses ----------------------------------------------- */

/* The window a register offset belongs to, or -1. */
static int reg_win(uint64_t off)
{
    if (off >= NFABRIC_REG_WIN_BASE &&
        off < NFABRIC_REG_WIN(NW, 0)) {
        return (int)((off - NFABRIC_REG_WIN_BASE) / NFABRIC_WIN_STRIDE);
    }
    return -1;
}

/*
 * Window i cleared (a CLEAR, or its enable) in the shadow: its counters
 * zero if it is enabled, nothing contributed, nothing reserved.
 */
static void shadow_clear(unsigned i)
{
    if (enabled(i)) {
        uint64_t cl = clen_of(&ctrl.sh->win[i]);

        if (cl) {
            memset(shadow + ctrl.sh->win[i].counters, 0, cl);
            check_shadow_range(ctrl.sh->win[i].counters, cl);
        }
    }
    exp_contrib_writes[i] = exp_contrib_bytes[i] = 0;
    exp_reserved[i] = 0;
}

/* After any successful change of the window table: the shadow's clears. */
static void track_enables(uint32_t mask_before)
{
    uint32_t rose = ctrl.sh->enabled_mask & ~mask_before;

    for (unsigned i = 0; i < NW; i++) {
        if (rose & (1u << i)) {
            shadow_clear(i);
        }
    }
}

/* The window of a posted doorbell offset (1.7), or -1. */
static int post_win(uint64_t off)
{
    if (off >= NFABRIC_REG_POST_BASE && off < NFABRIC_REG_POST(NW, 0)) {
        return (int)((off - NFABRIC_REG_POST_BASE) / NFABRIC_POST_STRIDE);
    }
    return -1;
}

/*
 * An accepted doorbell of window i: STAGE_OFF so, len bytes, as the
 * reference applies it; the statistics count the words, the bytes.
 */
static void ref_doorbell(unsigned i, bool post, uint64_t so, uint64_t len,
                         const Snap *before, const Snap *after)
{
    const NFabricWindow *w = &ctrl.sh->win[i];
    unsigned p = NFABRIC_WCTRL_PATH(w->ctrl);
    uint64_t a = w->dpa_base + so;
    uint64_t words = ((so + len + 7) >> 3) - (so >> 3);
    unsigned cnt = post ? NFABRIC_STAT_WRITES : NFABRIC_STAT_READS;
    unsigned by = post ? NFABRIC_STAT_WRITE_BYTES : NFABRIC_STAT_READ_BYTES;

    CHECK(posted_win((int)i) && len && so <= w->dpa_size &&
          len <= w->dpa_size - so, "a doorbell of window %u accepted: "
          "+0x%llx, %llu bytes", i, (unsigned long long)so,
          (unsigned long long)len);
    for (uint64_t k = 0; k < len; k++) {
        if (post) {
            ref_write_byte((int)i, a + k, stg_shadow[a + k]);
        } else {
            stg_shadow[a + k] = ref_read_byte((int)i, a + k);
        }
    }
    if (post) {
        exp_contrib_bytes[i] += len;
        exp_contrib_writes[i] += words;
    }
    check_staging_range(a, len);
    CHECK(after->stats[p][cnt] - before->stats[p][cnt] == words &&
          after->stats[p][by] - before->stats[p][by] == len,
          "doorbell of window %u: %llu accesses, %llu bytes counted "
          "(want %llu, %llu)", i,
          (unsigned long long)(after->stats[p][cnt] - before->stats[p][cnt]),
          (unsigned long long)(after->stats[p][by] - before->stats[p][by]),
          (unsigned long long)words, (unsigned long long)len);
}

static void do_reg_write(uint64_t off, uint64_t val, unsigned size)
{
    Snap before, after;
    int wi = reg_win(off), pw = post_win(off);
    unsigned rej = n_rejected;
    uint64_t so = pw >= 0 ? ctrl.stage_off[pw] : 0;

    snap(&before);
    nfabric_ctrl_reg_write(&ctrl, off, val, size);
    snap(&after);
    CHECK(n_rejected - rej <= 1, "one write, several errors");
    if (n_rejected != rej) {
        CHECK(after.error_count == before.error_count + 1 &&
              after.last_error != 0, "rejected write: error count");
        /* Only the error registers, and a refused enable's fields. */
        for (unsigned i = 0; i < NW; i++) {
            if ((int)i != wi) {
                CHECK(after.win[i].error == before.win[i].error,
                      "an error on window %d set window %u's ERROR", wi, i);
                continue;
            }
            CHECK(after.win[i].error == before.win[i].error ||
                  after.win[i].error == after.last_error,
                  "window ERROR is not LAST_ERROR");
            before.win[i].error = after.win[i].error;
            if (after.win[i].ctrl != before.win[i].ctrl) {
                uint32_t e = after.last_error;

                CHECK(off == NFABRIC_REG_WIN(i, NFABRIC_WIN_CTRL) &&
                      (e == NFABRIC_ERR_PATH || e == NFABRIC_ERR_WIDTH ||
                       e == NFABRIC_ERR_TIE || e == NFABRIC_ERR_THRESHOLD ||
                       e == NFABRIC_ERR_RANGE || e == NFABRIC_ERR_ALIGN ||
                       e == NFABRIC_ERR_OVERLAP) &&
                      after.win[i].ctrl ==
                          ((uint32_t)val & ~NFABRIC_WCTRL_ENABLE),
                      "rejected write (error %u) changed window %u CTRL", e, i);
                before.win[i].ctrl = after.win[i].ctrl;
            }
        }
        before.last_error = after.last_error;
        before.error_count = after.error_count;
        CHECK(!memcmp(&before, &after, sizeof(before)),
              "rejected register write 0x%llx/%u changed state",
              (unsigned long long)off, size);
        return;
    }
    if (pw >= 0) {
        uint64_t rel = off - NFABRIC_REG_POST(pw, 0);

        /* Accepted: STAGE_OFF stored; a doorbell as the reference. */
        if (rel == NFABRIC_POST || rel == NFABRIC_FETCH) {
            ref_doorbell((unsigned)pw, rel == NFABRIC_POST, so,
                         (uint32_t)val, &before, &after);
        } else {
            CHECK(rel == NFABRIC_STAGE_OFF && ctrl.stage_off[pw] == (uint32_t)val,
                  "STAGE_OFF of window %d: 0x%x", pw, ctrl.stage_off[pw]);
        }
        for (unsigned i = 0; i < NW; i++) {
            after.win[i].contrib_writes = before.win[i].contrib_writes;
            after.win[i].contrib_bytes = before.win[i].contrib_bytes;
            after.win[i].reserved_codes = before.win[i].reserved_codes;
        }
        CHECK(!memcmp(before.win, after.win, sizeof(before.win)) &&
              after.enabled_mask == before.enabled_mask,
              "a doorbell changed the window table");
        return;
    }
    /* Accepted: other windows untouched. */
    for (unsigned i = 0; i < NW; i++) {
        if ((int)i != wi) {
            CHECK(!memcmp(&before.win[i], &after.win[i], sizeof(after.win[i])),
                  "write to 0x%llx changed window %u",
                  (unsigned long long)off, i);
        }
    }
    if (wi >= 0) {
        uint64_t rel = (off - NFABRIC_REG_WIN_BASE) % NFABRIC_WIN_STRIDE;

        CHECK(!((after.enabled_mask ^ before.enabled_mask) & ~(1u << wi)),
              "write to window %d changed other windows' enables", wi);
        if (rel != NFABRIC_WIN_CTRL && rel != NFABRIC_WIN_CMD &&
            memcmp(&before.win[wi], &after.win[wi], sizeof(after.win[wi]))) {
            CHECK(!(before.enabled_mask & (1u << wi)),
                  "configuration of enabled window %d changed", wi);
        }
        if (rel == NFABRIC_WIN_CMD) {
            CHECK(val == NFABRIC_WCMD_CLEAR, "CMD 0x%llx accepted",
                  (unsigned long long)val);
            shadow_clear(wi);
        }
        track_enables(before.enabled_mask);
    } else {
        CHECK(after.enabled_mask == before.enabled_mask,
              "global write changed ENABLED_MASK");
        CHECK(after.error_count == before.error_count ||
              after.error_count == 0, "global write: error count");
    }
}

static void do_reg_read(uint64_t off, unsigned size)
{
    Snap before, after;
    uint64_t v, v2;
    unsigned rej = n_rejected;

    snap(&before);
    v = nfabric_ctrl_reg_read(&ctrl, off, size);
    snap(&after);
    CHECK(n_rejected - rej <= 1, "one read, several errors");
    if (n_rejected != rej) {
        CHECK(v == 0, "rejected read returned 0x%llx", (unsigned long long)v);
        CHECK(after.error_count == before.error_count + 1 &&
              (after.last_error == NFABRIC_ERR_UNMAPPED ||
               after.last_error == NFABRIC_ERR_ACCESS),
              "rejected read: error %u", after.last_error);
        before.last_error = after.last_error;
        before.error_count = after.error_count;
        CHECK(!memcmp(&before, &after, sizeof(before)),
              "rejected read changed state");
        return;
    }
    CHECK(!memcmp(&before, &after, sizeof(before)), "read 0x%llx/%u changed "
          "state", (unsigned long long)off, size);
    v2 = nfabric_ctrl_reg_read(&ctrl, off, size);
    CHECK(v == v2, "register 0x%llx read twice differs",
          (unsigned long long)off);
    CHECK(size == 8 || v >> 32 == 0, "32-bit read returned 64 bits");
}

/* ---- operand decoding ---------------------------------------------------- */

static const unsigned reg_sizes[16] = { 4, 8, 4, 8, 4, 8, 4, 4,
                                        1, 2, 3, 0, 16, 5, 8, 4 };
static const unsigned mem_lens[16] = { 1, 2, 4, 8, 8, 8, 3, 5,
                                       6, 7, 1, 4, 0, 9, 16, 8 };

static uint64_t reg_offset(In *in)
{
    uint8_t m = u8(in);

    switch (m % 5) {
    case 0:
        return un(in, 2);                               /* 0..0xffff */
    case 1:
    case 2: {
        unsigned w = u8(in) % (NW + 1);
        uint8_t r = u8(in);

        /* A window's registers, or its posted doorbells (1.7). */
        return r & 0x80 ? NFABRIC_REG_POST(w, r % 0x10) :
                          NFABRIC_REG_WIN(w, r % 0x40);
    }
    case 3:
        return u8(in) % 0x300;
    default:
        return un(in, 8);
    }
}

static uint64_t reg_value(In *in, unsigned size)
{
    uint8_t m = u8(in);
    uint64_t v;
    static const unsigned widths[8] = { 8, 16, 8, 16, 0, 12, 32, 255 };

    switch (m % 6) {
    case 0:
        v = un(in, 8);
        break;
    case 1:
        v = u8(in);
        break;
    case 2: {                                   /* a window CTRL value */
        uint8_t a = u8(in), b = u8(in);

        v = NFABRIC_WCTRL(a % 4, widths[(a >> 2) % 8], b % 3) | (b >> 7) |
            (b & 0x10 ? NFABRIC_WCTRL_POSTED : 0);
        if ((b & 0x60) == 0x60) {
            v |= 1u << (8 + b % 24);            /* maybe a reserved bit */
        }
        break;
    }
    case 3:
        v = (uint64_t)(un(in, 2) % (RAM_SIZE / 64 + 4)) * 64;  /* a DPA */
        break;
    case 4:
        v = (uint64_t)(u8(in) % 32) * 64;       /* a length */
        break;
    default:
        v = UINT64_MAX - u8(in);
        break;
    }
    /* The bus never carries bits beyond the access size. */
    if (size < 8) {
        v &= size ? (1ull << (8 * size)) - 1 : 0;
    }
    return v;
}

static uint64_t mem_dpa(In *in)
{
    uint8_t m = u8(in);

    switch (m % 5) {
    case 0:
        return un(in, 2) % (RAM_SIZE + 16);
    case 1:
    case 2: {                                   /* around a window */
        const NFabricWindow *w = &ctrl.sh->win[u8(in) % NW];
        int8_t d = (int8_t)u8(in);

        return (m & 8 ? w->dpa_base + w->dpa_size : w->dpa_base) + d;
    }
    case 3:
        return RAM_SIZE - 1 - u8(in) % 24;
    default:
        return un(in, 8);
    }
}

static void op_window_setup(In *in)
{
    unsigned i = u8(in) % NW;
    uint8_t a = u8(in), b = u8(in), c = u8(in);
    uint64_t base = (uint64_t)(un(in, 2) % (RAM_SIZE / 64 + 2)) * 64;
    uint64_t size = (uint64_t)(a % 16 + 1) * 64;
    uint64_t counters = (uint64_t)(un(in, 2) % (RAM_SIZE / 64 + 2)) * 64;
    unsigned path = b % 3, width = b & 4 ? 16 : 8, tie = (b >> 3) & 1;
    uint32_t thr = c % 8;

    if (thr == 0) {
        thr = u8(in);
        thr |= (uint32_t)u8(in) << 8;
    }

    if (a & 0x80) {
        size = un(in, 8);                       /* anything */
    }
    if ((b & 0xc0) == 0xc0) {
        base += u8(in) % 64;                    /* misaligned */
    }
    do_reg_write(NFABRIC_REG_WIN(i, NFABRIC_WIN_DPA_BASE), base, 8);
    do_reg_write(NFABRIC_REG_WIN(i, NFABRIC_WIN_DPA_SIZE), size, 8);
    do_reg_write(NFABRIC_REG_WIN(i, NFABRIC_WIN_COUNTERS), counters, 8);
    do_reg_write(NFABRIC_REG_WIN(i, NFABRIC_WIN_THRESHOLD), thr, 4);
    do_reg_write(NFABRIC_REG_WIN(i, NFABRIC_WIN_CTRL),
                 NFABRIC_WCTRL(path, width, tie) | NFABRIC_WCTRL_ENABLE |
                 (c & 0x40 ? NFABRIC_WCTRL_POSTED : 0), 4);
}

/* A posted contribution: stores into window i's staging, POST, FETCH. */
static void op_posted(In *in)
{
    unsigned i = u8(in) % NW;
    uint8_t m = u8(in);
    const NFabricWindow *w = &ctrl.sh->win[i];
    uint64_t so = w->dpa_size ? un(in, 2) % w->dpa_size : un(in, 2);
    uint64_t len = (uint64_t)u8(in) + 1;

    if (m & 1) {
        for (uint64_t k = 0; k < len; k += 8) {
            do_mem(w->dpa_base + so + k, 8, un(in, 8), true);
        }
    }
    if (m & 2) {
        len = un(in, 4);                        /* anything */
    }
    do_reg_write(NFABRIC_REG_POST(i, NFABRIC_STAGE_OFF), so, 4);
    do_reg_write(NFABRIC_REG_POST(i, m & 4 ? NFABRIC_FETCH : NFABRIC_POST),
                 len, 4);
    if (m & 8) {
        do_mem(w->dpa_base + so, mem_lens[u8(in) % 16], 0, false);
    }
}

static void reset_expectations(void)
{
    memset(exp_contrib_writes, 0, sizeof(exp_contrib_writes));
    memset(exp_contrib_bytes, 0, sizeof(exp_contrib_bytes));
    memset(exp_reserved, 0, sizeof(exp_reserved));
}

static void op_reset(void)
{
    nfabric_ctrl_reset(&ctrl);
    reset_expectations();
    CHECK(ctrl.sh->enabled_mask == 0 && ctrl.last_error == 0 &&
          ctrl.error_count == 0, "reset left errors or windows");
    for (unsigned i = 0; i < NW; i++) {
        for (unsigned r = 0; r < NFABRIC_WIN_STRIDE - 4; r += 4) {
            CHECK(nfabric_ctrl_reg_read(&ctrl, NFABRIC_REG_WIN(i, r), 4) == 0,
                  "window %u +0x%x not 0 after reset", i, r);
        }
    }
    for (unsigned r = 0; r < 12; r++) {
        CHECK(nfabric_ctrl_reg_read(&ctrl, NFABRIC_REG_STATS + 8 * r, 8) == 0,
              "statistics not 0 after reset");
    }
    CHECK(nfabric_ctrl_reg_read(&ctrl, NFABRIC_REG_T_TOTAL_PS, 8) == 0 &&
          nfabric_ctrl_reg_read(&ctrl, NFABRIC_REG_T_CLOCK_MHZ, 4) ==
              tparams.clock_mhz, "timing after reset");
}

/* A migration: maybe corrupt the migrated fields, then post_load. */
static void op_post_load(In *in)
{
    uint8_t m = u8(in);
    unsigned i = u8(in) % NW;
    NFabricWindow *w = &ctrl.sh->win[i];
    uint64_t x = un(in, 8);

    switch (m % 8) {
    case 0: case 1: case 2:
        break;                                  /* a clean stream */
    case 3: w->dpa_base ^= x; break;
    case 4: w->dpa_size ^= x; break;
    case 5: w->counters ^= x; break;
    case 6: w->ctrl ^= (uint32_t)x; break;
    default: w->threshold ^= (uint32_t)x; break;
    }
    if (m & 0x80) {
        w->contrib_bytes ^= x;                  /* counts are not checked */
    }
    if (nfabric_ctrl_post_load(&ctrl) != 0) {
        /* QEMU refuses the stream; the device is reset on the next try. */
        nfabric_ctrl_init(&ctrl, ram, RAM_SIZE, &tparams, &hooks, NULL);
        nfabric_ctrl_set_staging(&ctrl, stg);
        reset_expectations();
        return;
    }
    /* Accepted: whatever it holds must be a consistent state. */
    for (unsigned k = 0; k < NW; k++) {
        exp_contrib_writes[k] = ctrl.sh->win[k].contrib_writes;
        exp_contrib_bytes[k] = ctrl.sh->win[k].contrib_bytes;
        exp_reserved[k] = ctrl.sh->win[k].reserved_codes;
    }
    check_shadow_range(0, RAM_SIZE);
}

/* ---- setup --------------------------------------------------------------- */

static void setup_once(void)
{
    setup_done = true;
    block = malloc(CANARY + RAM_SIZE + CANARY);
    stg = malloc(RAM_SIZE);
    if (!block || !stg) {
        abort();
    }
    ram = block + CANARY;
    memset(block, CANARY_BYTE, CANARY);
    memset(ram + RAM_SIZE, CANARY_BYTE, CANARY);
    for (unsigned k = 0; k < RAM_SIZE; k++) {
        images[1][k] = 0xff;
        images[2][k] = (uint8_t)(k * 0x9d + 0x31);
        images[3][k] = (uint8_t)((k * 0x2545f491u) >> 13);
    }
#ifdef NF_ASAN
    ASAN_POISON_MEMORY_REGION(block, CANARY);
    ASAN_POISON_MEMORY_REGION(ram + RAM_SIZE, CANARY);
#endif
}

static void check_canaries(void)
{
#ifndef NF_ASAN
    for (unsigned k = 0; k < CANARY; k++) {
        CHECK(block[k] == CANARY_BYTE && ram[RAM_SIZE + k] == CANARY_BYTE,
              "canary byte %u overwritten", k);
    }
#endif
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    In in = { data, size };
    uint8_t impl, fill;

    if (!setup_done) {
        setup_once();
    }
    impl = u8(&in) % NFABRIC_IMPL_COUNT;
    if (!nfabric_engine_select((NFabricImpl)impl)) {
        nfabric_engine_select(NFABRIC_IMPL_AUTO);
    }
    fill = u8(&in);
    /* Device memory: an image the input picks, mirrored in the shadow. */
    memcpy(ram, images[fill % 4], RAM_SIZE);
    memcpy(shadow, ram, RAM_SIZE);
    nfabric_ctrl_init(&ctrl, ram, RAM_SIZE, &tparams, &hooks, NULL);
    nfabric_ctrl_set_staging(&ctrl, stg);
    memset(stg, fill, RAM_SIZE);
    memset(stg_shadow, fill, RAM_SIZE);
    reset_expectations();

    for (unsigned n = 0; n < MAX_OPS && in.n; n++) {
        uint8_t op = u8(&in);

        switch (op % 14) {
        case 0: {
            uint64_t off = reg_offset(&in);
            unsigned sz = reg_sizes[u8(&in) % 16];

            do_reg_write(off, reg_value(&in, sz), sz);
            break;
        }
        case 1: {
            uint64_t off = reg_offset(&in);

            do_reg_read(off, reg_sizes[u8(&in) % 16]);
            break;
        }
        case 2: case 3: case 4: {
            uint64_t dpa = mem_dpa(&in);
            unsigned len = mem_lens[u8(&in) % 16];

            do_mem(dpa, len, un(&in, 8), true);
            break;
        }
        case 5: {
            uint64_t dpa = mem_dpa(&in);

            do_mem(dpa, mem_lens[u8(&in) % 16], 0, false);
            break;
        }
        case 6: case 7:
            op_window_setup(&in);
            break;
        case 8: {
            unsigned i = u8(&in) % NW;
            uint8_t m = u8(&in);

            if (m & 1) {
                do_reg_write(NFABRIC_REG_WIN(i, NFABRIC_WIN_CMD),
                             NFABRIC_WCMD_CLEAR, 4);
            } else {
                do_reg_write(NFABRIC_REG_WIN(i, NFABRIC_WIN_CTRL),
                             ctrl.sh->win[i].ctrl & ~NFABRIC_WCTRL_ENABLE &
                             NFABRIC_WCTRL_VALID, 4);
            }
            break;
        }
        case 9: {                       /* a burst of contributions */
            unsigned i = u8(&in) % NW, cnt = u8(&in) % 64;
            const NFabricWindow *w = &ctrl.sh->win[i];

            for (unsigned k = 0; k < cnt; k++) {
                uint64_t off = w->dpa_size ? (8ull * k) % w->dpa_size : 8 * k;

                do_mem(w->dpa_base + off, 8, un(&in, 8), true);
            }
            break;
        }
        case 10: {
            uint8_t m = u8(&in);

            if (m % 4 == 0) {
                op_reset();
            } else if (m % 4 == 1) {
                op_post_load(&in);
            } else {
                do_reg_write(NFABRIC_REG_CTRL, m >> 2 & 0x3f, 4);
            }
            break;
        }
        case 12:
            op_posted(&in);
            break;
        case 13:
            op_cpmu(&in);
            break;
        default: {                      /* read a whole window back */
            const NFabricWindow *w = &ctrl.sh->win[u8(&in) % NW];
            uint64_t len = w->dpa_size < 512 ? w->dpa_size : 512;

            for (uint64_t k = 0; k < len; k += 8) {
                do_mem(w->dpa_base + k, 8, 0, false);
            }
            break;
        }
        }
        check_structure();
    }
    check_constants();
    check_timing_sum();
    check_shadow_range(0, RAM_SIZE);
    check_staging_range(0, RAM_SIZE);
    check_canaries();
    return 0;
}
