/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Unit tests of the controller model (hw/mem/nfabric/nfabric_ctrl.c and
 * the files beside it: nfabric_regs.c, nfabric_datapath.c, ...)
 * without QEMU: one test per class of bad guest value.
 *
 *   register offsets   every offset 0..0x1000 (and some far beyond) at
 *                      sizes 0,1,2,3,4,8,16, read and written: no crash,
 *                      the error code an independent register map predicts,
 *                      and nothing else changes
 *   window indices     offsets of windows 16.. and the gaps inside a window
 *   DPA ranges         empty, wrapping, at the end, past the end, huge
 *   counter areas      overlap of each kind, touching, past the end, huge
 *   thresholds, widths, tie rules, paths, reserved bits, busy, commands
 *   memory path        len 0, len > 8, crossing the end, wrapping; windows
 *                      straddled; the engine's results through the path
 *   reset              every register back to its default
 *   post_load          corrupt window state refused, good state rebuilt
 *
 * Device memory is an mmap with PROT_NONE guard pages on both sides, so
 * any access outside it faults; the fuzz build (scripts/lib/fuzz.sh) also
 * runs this program under ASan and UBSan.  Every dirty range the model
 * reports is checked to lie inside device memory.
 *
 * The straddle statistics and the reserved-bit post_load checks found
 * F1 and F2 of docs/reliability.md (fixed in the model).
 */
#define _DEFAULT_SOURCE
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "hw/mem/nfabric_ctrl.h"
#include "tap.h"
#include "testutil.h"

#define RAM_SIZE        (64 * 1024u)
#define GB              NFABRIC_PATH_GBINARY
#define GT              NFABRIC_PATH_GTERNARY
#define FP              NFABRIC_PATH_FP32

static NFabricCtrl ctrl;
static uint8_t *ram;
static NFabricTimingParams tparams = {
    .clock_mhz = 1250, .depth = 7, .service_ns = 250, .link_mbps = 16000,
};

/* ---- hooks: count errors, check dirty ranges ------------------------- */

static unsigned hook_errors, hook_bad_dirty, hook_dirty;
static uint32_t hook_last_code;
static uint64_t hook_last_off;

static void hook_dirty_fn(void *opaque, uint64_t dpa, uint64_t len)
{
    (void)opaque;
    hook_dirty++;
    if (len == 0 || dpa > RAM_SIZE || len > RAM_SIZE - dpa) {
        hook_bad_dirty++;
    }
}

static void hook_error_fn(void *opaque, uint64_t off, uint32_t code,
                          const char *what)
{
    (void)opaque;
    (void)what;
    hook_errors++;
    hook_last_code = code;
    hook_last_off = off;
}

static unsigned hook_mismatches, hook_mismatch_win;
static char hook_mismatch_what[256];

static void hook_mismatch_fn(void *opaque, unsigned win, bool write,
                             uint64_t off, unsigned len, const char *what)
{
    (void)opaque;
    (void)write;
    (void)off;
    (void)len;
    hook_mismatches++;
    hook_mismatch_win = win;
    snprintf(hook_mismatch_what, sizeof(hook_mismatch_what), "%s", what);
}

static const NFabricCtrlOps hooks = {
    .dirty = hook_dirty_fn,
    .guest_error = hook_error_fn,
    .rtl_mismatch = hook_mismatch_fn,
};

/* The RTL datapath fresh() sets up (test_rtl): off unless a test sets it. */
static NFabricRtlMode fresh_rtl_mode;
static const NFabricRtlOps *fresh_rtl_ops;

/* ---- device memory with guard pages ---------------------------------- */

static uint8_t *guarded_alloc(size_t size)
{
    size_t pg = (size_t)sysconf(_SC_PAGESIZE);
    uint8_t *p;

    if (size % pg) {
        abort();
    }
    p = mmap(NULL, size + 2 * pg, PROT_READ | PROT_WRITE,
             MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED || mprotect(p, pg, PROT_NONE) ||
        mprotect(p + pg + size, pg, PROT_NONE)) {
        perror("guarded_alloc");
        abort();
    }
    return p + pg;
}

static uint64_t ram_hash(const uint8_t *m)
{
    uint64_t h = 0xcbf29ce484222325ull;

    for (size_t i = 0; i < RAM_SIZE; i += 8) {
        uint64_t v;

        memcpy(&v, m + i, 8);
        h = (h ^ v) * 0x100000001b3ull;
    }
    return h;
}

static void fresh(void)
{
    nfabric_ctrl_init(&ctrl, ram, RAM_SIZE, &tparams, &hooks, NULL);
    nfabric_ctrl_set_rtl(&ctrl, fresh_rtl_mode, fresh_rtl_ops, &fresh_rtl_mode);
    hook_errors = 0;
}

/* ---- an independent register map (from docs/registers.md) ------------- */

typedef enum { ACC_RO, ACC_RW, ACC_WO } Acc;

typedef struct RegDef {
    uint64_t off;
    unsigned width;
    Acc acc;
    int win;
} RegDef;

static RegDef regmap[512];
static unsigned nregs;

static void def(uint64_t off, unsigned width, Acc acc, int win)
{
    regmap[nregs++] = (RegDef){ off, width, acc, win };
}

static void build_regmap(void)
{
    def(0x000, 4, ACC_RO, -1);      /* MAGIC */
    def(0x004, 4, ACC_RO, -1);      /* VERSION */
    def(0x008, 4, ACC_RO, -1);      /* CAPS */
    def(0x00c, 4, ACC_RO, -1);      /* WIN_LAYOUT */
    def(0x010, 4, ACC_WO, -1);      /* CTRL */
    def(0x014, 4, ACC_RO, -1);      /* LAST_ERROR */
    def(0x018, 4, ACC_RO, -1);      /* ERROR_COUNT */
    def(0x01c, 4, ACC_RO, -1);      /* ENABLED_MASK */
    def(0x020, 8, ACC_RO, -1);      /* MEM_SIZE */
    /* Version 1.1: heads, per-head contributions, pool statistics, rounds. */
    def(0x028, 4, ACC_RO, -1);      /* HEAD_INFO */
    def(0x02c, 4, ACC_RO, -1);      /* HEADS_LIVE */
    def(0x030, 4, ACC_RW, -1);      /* HEAD_SELECT */
    def(0x034, 4, ACC_RO, -1);      /* HEADS_LOST */
    def(0x038, 4, ACC_RO, -1);      /* JOB (1.4) */
    for (unsigned i = 0; i < 16; i++) {
        def(0x040 + 8 * i, 8, ACC_RO, -1);      /* HEAD_CONTRIB window i */
    }
    /* Version 1.8: interrupts. */
    def(0x0c0, 4, ACC_RO, -1);      /* IRQ_MSGNUM */
    def(0x0c4, 4, ACC_RW, -1);      /* IRQ_ENABLE */
    def(0x0c8, 4, ACC_RW, -1);      /* IRQ_STATUS */
    def(0x0cc, 4, ACC_RW, -1);      /* IRQ_HEAD_ENABLE */
    def(0x0d0, 4, ACC_RW, -1);      /* IRQ_HEAD_STATUS */
    for (unsigned i = 0; i < 12; i++) {
        def(0x100 + 8 * i, 8, ACC_RO, -1);      /* statistics */
        def(0x180 + 8 * i, 8, ACC_RO, -1);      /* pool statistics */
    }
    for (int w = 0; w < 16; w++) {
        uint64_t b = 0x300 + 0x10 * (uint64_t)w;

        /* Errors here never set a window's ERROR: window -1. */
        def(b + 0x0, 4, ACC_RO, -1);    /* ROUND_SEQ */
        def(b + 0x4, 4, ACC_RO, -1);    /* ROUND_DONE */
        def(b + 0x8, 4, ACC_RO, -1);    /* ROUND_STATUS */
        def(b + 0xc, 4, ACC_WO, -1);    /* ROUND_COMPLETE */
    }
    for (unsigned i = 0; i < 5; i++) {
        def(0x200 + 4 * i, 4, ACC_RO, -1);      /* T_CLOCK .. T_EXPOSED_PPM */
    }
    def(0x218, 8, ACC_RO, -1);      /* T_TOTAL_PS */
    for (unsigned i = 0; i < 6; i++) {
        def(0x220 + 8 * i, 8, ACC_RO, -1);      /* T_PATH_* */
    }
#ifdef NFABRIC_REG_T_ACCESSES
    /* The queue figures of the timing model. */
    def(0x250, 8, ACC_RO, -1);      /* T_RUNTIME_PS */
    def(0x258, 8, ACC_RO, -1);      /* T_QUEUED_PS */
    def(0x260, 8, ACC_RO, -1);      /* T_LINK_BUSY_PS */
    for (unsigned i = 0; i < 3; i++) {
        def(0x270 + 8 * i, 8, ACC_RO, -1);      /* T_ACCESSES per path */
    }
#endif
    for (int w = 0; w < 16; w++) {
        uint64_t b = 0x400 + 0x40 * (uint64_t)w;

        def(b + 0x00, 8, ACC_RW, w);    /* DPA_BASE */
        def(b + 0x08, 8, ACC_RW, w);    /* DPA_SIZE */
        def(b + 0x10, 8, ACC_RW, w);    /* COUNTERS */
        def(b + 0x18, 4, ACC_RW, w);    /* CTRL */
        def(b + 0x1c, 4, ACC_RW, w);    /* THRESHOLD */
        def(b + 0x20, 4, ACC_WO, w);    /* CMD */
        def(b + 0x24, 4, ACC_RO, w);    /* ERROR */
        def(b + 0x28, 8, ACC_RO, w);    /* CONTRIB_WRITES */
        def(b + 0x30, 8, ACC_RO, w);    /* CONTRIB_BYTES */
        def(b + 0x38, 4, ACC_RO, w);    /* RESERVED_CODES */
    }
    for (int w = 0; w < 16; w++) {
        uint64_t b = 0xc00 + 0x10 * (uint64_t)w;

        /* Posted doorbells (1.7): this head's; errors set no ERROR. */
        def(b + 0x0, 4, ACC_RW, -1);    /* STAGE_OFF */
        def(b + 0x4, 4, ACC_WO, -1);    /* POST */
        def(b + 0x8, 4, ACC_WO, -1);    /* FETCH */
    }
}

static const RegDef *reg_at(uint64_t off)
{
    for (unsigned i = 0; i < nregs; i++) {
        if (off >= regmap[i].off && off - regmap[i].off < regmap[i].width) {
            return &regmap[i];
        }
    }
    return NULL;
}

/* The error code an access should get before its value is looked at. */
static uint32_t expect_code(uint64_t off, unsigned size, bool write)
{
    const RegDef *r = reg_at(off);

    if (!r) {
        return NFABRIC_ERR_UNMAPPED;
    }
    if ((size != 4 && size != 8) || off % size || size > r->width) {
        return NFABRIC_ERR_ACCESS;
    }
    if (write && r->acc == ACC_RO) {
        return NFABRIC_ERR_READONLY;
    }
    return NFABRIC_ERR_NONE;
}

/* The documented reset value of the register holding off (full width). */
static uint64_t default_value(const RegDef *r)
{
    if (r->acc == ACC_WO) {
        return 0;
    }
    switch (r->off) {
    case 0x000: return 0x4241464e;
    case 0x004: return 0x00010009;
    case 0x0c0: return 0x80000000;  /* IRQ_MSGNUM: NONE (no vector here) */
    case 0x028: return 0x00000100;  /* head 0 of 1, not shared */
    case 0x02c: return 0x1;         /* head 0 attached */
    case 0x038: return 0xffff0000;  /* job 0 of all, every window */
    case 0x008: return 0x03030710;
    case 0x00c: return 0x00400400;
    case 0x020: return RAM_SIZE;
    case 0x200: return tparams.clock_mhz;
    case 0x204: return tparams.depth;
    case 0x208: return tparams.service_ns;
    case 0x20c: return tparams.link_mbps;
    }
    return 0;
}

/* ---- state snapshots ---------------------------------------------------- */

typedef struct Snap {
    NFabricWindow win[NFABRIC_NUM_WINDOWS];
    uint32_t last_error, error_count, enabled_mask;
    uint64_t stats[NFABRIC_NUM_PATHS][NFABRIC_NUM_STATS];
    NFabricAggCfg cfg[NFABRIC_NUM_WINDOWS];
    uint8_t timing[offsetof(NFabricTiming, occ_start_ps)];
} Snap;

static void snap(Snap *sn)
{
    memset(sn, 0, sizeof(*sn));     /* padding too: compared with memcmp */
    memcpy(sn->win, ctrl.sh->win, sizeof(sn->win));
    sn->last_error = ctrl.last_error;
    sn->error_count = ctrl.error_count;
    sn->enabled_mask = ctrl.sh->enabled_mask;
    memcpy(sn->stats, ctrl.stats, sizeof(sn->stats));
    memcpy(sn->cfg, ctrl.sh->cfg, sizeof(sn->cfg));
    memcpy(sn->timing, &ctrl.timing, sizeof(sn->timing));
}

static bool snap_eq(const Snap *a, const Snap *b)
{
    return memcmp(a, b, sizeof(*a)) == 0;
}

/* What a rejected access does to the state. */
static void snap_error(Snap *sn, uint32_t code, int win)
{
    sn->last_error = code;
    sn->error_count++;
    if (win >= 0) {
        sn->win[win].error = code;
    }
}

/* ---- register helpers ----------------------------------------------------- */

static uint64_t rd(uint64_t off, unsigned size)
{
    return nfabric_ctrl_reg_read(&ctrl, off, size);
}

static void wr(uint64_t off, uint64_t val, unsigned size)
{
    nfabric_ctrl_reg_write(&ctrl, off, val, size);
}

static uint32_t win_program(unsigned i, uint64_t base, uint64_t size,
                            uint64_t counters, uint32_t threshold)
{
    wr(NFABRIC_REG_WIN(i, NFABRIC_WIN_DPA_BASE), base, 8);
    wr(NFABRIC_REG_WIN(i, NFABRIC_WIN_DPA_SIZE), size, 8);
    wr(NFABRIC_REG_WIN(i, NFABRIC_WIN_COUNTERS), counters, 8);
    wr(NFABRIC_REG_WIN(i, NFABRIC_WIN_THRESHOLD), threshold, 4);
    return ctrl.sh->win[i].error;
}

/* Program and enable window i; returns its ERROR. */
static uint32_t win_set(unsigned i, uint64_t base, uint64_t size,
                        uint64_t counters, unsigned path, unsigned width,
                        unsigned tie, uint32_t threshold)
{
    win_program(i, base, size, counters, threshold);
    wr(NFABRIC_REG_WIN(i, NFABRIC_WIN_CTRL),
       NFABRIC_WCTRL(path, width, tie) | NFABRIC_WCTRL_ENABLE, 4);
    return (uint32_t)rd(NFABRIC_REG_WIN(i, NFABRIC_WIN_ERROR), 4);
}

static void win_off(unsigned i)
{
    wr(NFABRIC_REG_WIN(i, NFABRIC_WIN_CTRL), 0, 4);
}

static bool mem(uint64_t dpa, void *buf, unsigned len, bool write)
{
    return nfabric_ctrl_mem_access(&ctrl, dpa, buf, len, write);
}

static void mem_wr64(uint64_t dpa, uint64_t v)
{
    uint8_t b[8];

    for (int i = 0; i < 8; i++) {
        b[i] = v >> (8 * i);
    }
    if (!mem(dpa, b, 8, true)) {
        abort();
    }
}

static uint64_t mem_rd(uint64_t dpa, unsigned len)
{
    uint8_t b[8] = { 0 };
    uint64_t v = 0;

    if (!mem(dpa, b, len, false)) {
        abort();
    }
    for (unsigned i = 0; i < len; i++) {
        v |= (uint64_t)b[i] << (8 * i);
    }
    return v;
}

static uint64_t rng_state = 1;

static uint64_t rnd(void)
{
    return nf_splitmix64(&rng_state);
}

/* A counter read straight from device memory (signed little-endian). */
static int cnt_get(uint64_t counters, unsigned width, uint64_t e)
{
    const uint8_t *p = ram + counters + e * (width / 8);

    return width == 8 ? (int8_t)p[0] : (int16_t)(p[0] | p[1] << 8);
}

static int sat(int v, unsigned width)
{
    int max = (1 << (width - 1)) - 1;

    return v > max ? max : v < -max - 1 ? -max - 1 : v;
}

/* ---- register offsets ------------------------------------------------------ */

static const unsigned sweep_sizes[] = { 0, 1, 2, 3, 4, 8, 16 };
static const uint64_t far_offsets[] = {
    0x1001, 0x1004, 0x1008, 0x1010, 0x1fff, 0x2000, 0x2020, 0xffff, 0x10000,
    0x100000400ull, 1ull << 32, 1ull << 63, UINT64_MAX - 7, UINT64_MAX - 3,
    UINT64_MAX,
};

static unsigned n_offsets(void)
{
    return 0x1001 + sizeof(far_offsets) / sizeof(far_offsets[0]);
}

static uint64_t offset_n(unsigned n)
{
    return n <= 0x1000 ? n : far_offsets[n - 0x1001];
}

/*
 * Read every (offset, size): an accepted read returns the register's value
 * (the half for a 32-bit read of a 64-bit register) and changes nothing; a
 * rejected one returns 0, sets LAST_ERROR, counts, and changes nothing
 * else.  With against_defaults, values are checked against the reset
 * values of the spec.
 */
static unsigned sweep_reads(const char *what, bool against_defaults)
{
    unsigned bad = 0, checked = 0;
    uint64_t h = ram_hash(ram);

    for (unsigned n = 0; n < n_offsets(); n++) {
        uint64_t off = offset_n(n);

        for (unsigned si = 0; si < sizeof(sweep_sizes) / sizeof(*sweep_sizes);
             si++) {
            unsigned size = sweep_sizes[si];
            uint32_t code = expect_code(off, size, false);
            unsigned errs = hook_errors;
            Snap before, after;
            uint64_t v, v2;

            snap(&before);
            v = rd(off, size);
            snap(&after);
            checked++;
            if (code != NFABRIC_ERR_NONE) {
                snap_error(&before, code, -1);
                if (v != 0 || !snap_eq(&before, &after) ||
                    hook_errors != errs + 1 || hook_last_code != code ||
                    hook_last_off != off) {
                    if (bad++ < 5) {
                        tap_diag("%s: read 0x%llx/%u: got 0x%llx, error %u "
                                 "(want %u)", what, (unsigned long long)off,
                                 size, (unsigned long long)v,
                                 ctrl.last_error, code);
                    }
                }
                continue;
            }
            /* Accepted: nothing changes, and reading again is the same. */
            v2 = rd(off, size);
            if (!snap_eq(&before, &after) || v != v2 || hook_errors != errs) {
                if (bad++ < 5) {
                    tap_diag("%s: read 0x%llx/%u changed state", what,
                             (unsigned long long)off, size);
                }
                continue;
            }
            if (against_defaults) {
                const RegDef *r = reg_at(off);
                uint64_t want = default_value(r);

                /* The error registers count this sweep's own errors. */
                if (r->off == NFABRIC_REG_LAST_ERROR) {
                    want = before.last_error;
                } else if (r->off == NFABRIC_REG_ERROR_COUNT) {
                    want = before.error_count;
                }
                if (size == 4 && r->width == 8) {
                    want = (uint32_t)(want >> (8 * (off - r->off)));
                }
                if (v != want) {
                    if (bad++ < 5) {
                        tap_diag("%s: read 0x%llx/%u = 0x%llx, default 0x%llx",
                                 what, (unsigned long long)off, size,
                                 (unsigned long long)v,
                                 (unsigned long long)want);
                    }
                }
            }
        }
    }
    if (ram_hash(ram) != h) {
        tap_diag("%s: register reads changed device memory", what);
        bad++;
    }
    tap_diag("%s: %u accesses", what, checked);
    return bad;
}

static void test_reg_reads(void)
{
    fresh();
    TAP_CHECK(sweep_reads("defaults", true) == 0,
              "register reads: every offset 0..0x1000+ at sizes 0-16: "
              "right value or right error, nothing else changes");
}

/*
 * What an accepted write of val at (off, size) must do, from the spec and
 * an all-zero disabled window; returns the code for writes rejected on
 * their value (RESERVED_BITS, COMMAND), applying the effect otherwise.
 */
static uint32_t expect_write(Snap *sn, const RegDef *r, uint64_t off,
                             uint64_t val, unsigned size)
{
    if (r->off == 0x030) {      /* HEAD_SELECT: one head, 0 */
        return val ? NFABRIC_ERR_HEAD : NFABRIC_ERR_NONE;
    }
    if (r->off >= 0x0c4 && r->off <= 0x0d0) {
        /* Interrupts: only IRQ_HEAD_ENABLE has reserved bits (31:1). */
        return r->off == 0x0cc && (val & ~1ull) ? NFABRIC_ERR_RESERVED_BITS :
               NFABRIC_ERR_NONE;
    }
    if (r->off >= 0x300 && r->off < 0x400) {
        /* ROUND_COMPLETE: no window is enabled, so no round is current. */
        return NFABRIC_ERR_ROUND;
    }
    if (r->off >= 0xc00 && r->off < 0xd00) {
        /* STAGE_OFF takes any value; a doorbell needs a posted window. */
        return (r->off & 0xf) == 0 ? NFABRIC_ERR_NONE : NFABRIC_ERR_POSTED;
    }
    if (r->win < 0) {           /* the global CTRL */
        return (uint32_t)val & ~NFABRIC_CTRL_VALID ?
               NFABRIC_ERR_RESERVED_BITS : NFABRIC_ERR_NONE;
    }
    NFabricWindow *w = &sn->win[r->win];
    uint64_t *f = NULL;

    switch (r->off - NFABRIC_REG_WIN(r->win, 0)) {
    case NFABRIC_WIN_DPA_BASE: f = &w->dpa_base; break;
    case NFABRIC_WIN_DPA_SIZE: f = &w->dpa_size; break;
    case NFABRIC_WIN_COUNTERS: f = &w->counters; break;
    case NFABRIC_WIN_THRESHOLD:
        w->threshold = (uint32_t)val;
        return NFABRIC_ERR_NONE;
    case NFABRIC_WIN_CMD:
        if (val != NFABRIC_WCMD_CLEAR) {
            return NFABRIC_ERR_COMMAND;
        }
        return NFABRIC_ERR_NONE;    /* disabled: zeroes the (zero) counts */
    case NFABRIC_WIN_CTRL:
        if ((uint32_t)val & ~NFABRIC_WCTRL_VALID) {
            return NFABRIC_ERR_RESERVED_BITS;
        }
        if (val & NFABRIC_WCTRL_ENABLE) {
            /* An all-zero window: refused, in the documented order. */
            unsigned path = (val & NFABRIC_WCTRL_PATH_MASK) >>
                            NFABRIC_WCTRL_PATH_SHIFT;
            unsigned width = (val & NFABRIC_WCTRL_WIDTH_MASK) >>
                             NFABRIC_WCTRL_WIDTH_SHIFT;
            unsigned tie = (val & NFABRIC_WCTRL_TIE_MASK) >>
                           NFABRIC_WCTRL_TIE_SHIFT;

            /* A refused enable leaves CTRL as it was. */
            if (path >= NFABRIC_NUM_PATHS) {
                return NFABRIC_ERR_PATH;
            }
            if (path != FP && width != 8 && width != 16) {
                return NFABRIC_ERR_WIDTH;
            }
            if (path == GB && tie > 1) {
                return NFABRIC_ERR_TIE;
            }
            if (path == GT && w->threshold == 0) {
                return NFABRIC_ERR_THRESHOLD;
            }
            return NFABRIC_ERR_RANGE;   /* DPA_SIZE is 0 */
        }
        w->ctrl = (uint32_t)val;
        return NFABRIC_ERR_NONE;
    }
    if (size == 8) {
        *f = val;
    } else {
        unsigned sh = 8 * (unsigned)(off - r->off);

        *f = (*f & ~(0xffffffffull << sh)) | (val & 0xffffffffull) << sh;
    }
    return NFABRIC_ERR_NONE;
}

static void test_reg_writes(void)
{
    static const uint64_t vals[] = {
        0, 1, UINT64_MAX, 0x5a5a5a5a5a5a5a5aull, 0x00000000000f0f00ull,
    };
    unsigned bad = 0, checked = 0;
    uint64_t h;

    fresh();
    h = ram_hash(ram);
    for (unsigned n = 0; n < n_offsets(); n++) {
        uint64_t off = offset_n(n);

        for (unsigned si = 0; si < sizeof(sweep_sizes) / sizeof(*sweep_sizes);
             si++) {
            unsigned size = sweep_sizes[si];

            for (unsigned vi = 0; vi < sizeof(vals) / sizeof(*vals); vi++) {
                /* The bus never passes bits beyond the access size. */
                uint64_t val = size >= 8 ? vals[vi] : size == 0 ? 0 :
                               vals[vi] & ((1ull << (8 * size)) - 1);
                uint32_t code = expect_code(off, size, true);
                const RegDef *r = reg_at(off);
                unsigned errs = hook_errors;
                Snap before, after;

                snap(&before);
                if (code == NFABRIC_ERR_NONE) {
                    code = expect_write(&before, r, off, val, size);
                }
                wr(off, val, size);
                snap(&after);
                checked++;
                if (code != NFABRIC_ERR_NONE) {
                    /* Window-related errors also set that window's ERROR. */
                    snap_error(&before, code,
                               code == NFABRIC_ERR_UNMAPPED ? -1 : r->win);
                }
                if (!snap_eq(&before, &after) ||
                    hook_errors != errs + (code != NFABRIC_ERR_NONE)) {
                    if (bad++ < 5) {
                        tap_diag("write 0x%llx/%u = 0x%llx: error %u, want %u",
                                 (unsigned long long)off, size,
                                 (unsigned long long)val, ctrl.last_error,
                                 code);
                    }
                }
                if (code == NFABRIC_ERR_NONE && val) {
                    fresh();        /* back to all-zero windows */
                }
            }
        }
    }
    tap_diag("register writes: %u accesses", checked);
    TAP_CHECK(bad == 0, "register writes: every offset 0..0x1000+ at sizes "
              "0-16, 5 values: right error code, only the target changes");
    TAP_CHECK(ram_hash(ram) == h && ctrl.sh->enabled_mask == 0,
              "register writes: device memory untouched, nothing enabled");
}

/* ---- the vendor block's header (1.6) --------------------------------------- */

/*
 * Every offset of the header page at sizes 0-16: the three 32-bit fields
 * read as the contract gives them (written out here by hand), everything
 * else is refused with ACCESS (a field at a wrong size) or UNMAPPED (past
 * the header), every write with READONLY or UNMAPPED, and nothing but the
 * error status changes.
 */
static void test_dvs_header(void)
{
    unsigned bad = 0, checked = 0;
    uint64_t h;

    fresh();
    h = ram_hash(ram);
    for (uint64_t off = 0; off < 0x1000; off += off < 0x40 ? 1 : 0x3f) {
        for (unsigned size = 0; size <= 16; size++) {
            uint32_t want_code, want_val = 0;
            unsigned errs = hook_errors;
            uint64_t val;
            Snap before, after;

            if (off >= 12) {
                want_code = NFABRIC_ERR_UNMAPPED;
            } else if (size != 4 || off % 4) {
                want_code = NFABRIC_ERR_ACCESS;
            } else {
                want_code = NFABRIC_ERR_NONE;
                want_val = off == 0 ? 0x4e461b36u : off == 4 ? 1 : 0x2000;
            }
            snap(&before);
            val = nfabric_ctrl_dvs_read(&ctrl, off, size);
            snap(&after);
            if (want_code != NFABRIC_ERR_NONE) {
                snap_error(&before, want_code, -1);
            }
            checked++;
            if (val != want_val || !snap_eq(&before, &after) ||
                hook_errors != errs + (want_code != NFABRIC_ERR_NONE)) {
                if (bad++ < 5) {
                    tap_diag("header read 0x%llx/%u = 0x%llx, error %u; want "
                             "0x%x, error %u", (unsigned long long)off, size,
                             (unsigned long long)val, ctrl.last_error,
                             want_val, want_code);
                }
            }
            errs = hook_errors;
            want_code = off >= 12 ? NFABRIC_ERR_UNMAPPED : NFABRIC_ERR_READONLY;
            snap(&before);
            nfabric_ctrl_dvs_write(&ctrl, off, UINT64_MAX, size);
            snap(&after);
            snap_error(&before, want_code, -1);
            checked++;
            if (!snap_eq(&before, &after) || hook_errors != errs + 1) {
                if (bad++ < 5) {
                    tap_diag("header write 0x%llx/%u: error %u, want %u",
                             (unsigned long long)off, size, ctrl.last_error,
                             want_code);
                }
            }
        }
    }
    tap_diag("vendor block header: %u accesses", checked);
    TAP_CHECK(bad == 0, "vendor block header: vendor 0x1b36, block 0x4e46, "
              "revision 1, length 0x2000; other reads and every write refused "
              "with the right error, nothing else changes");
    TAP_CHECK(nfabric_ctrl_dvs_read(&ctrl, NFABRIC_DVS_HDR_ID, 4) ==
              NFABRIC_DVS_ID && NFABRIC_DVS_OFFSET % 0x10000 == 0 &&
              NFABRIC_DVS_REGS + NFABRIC_REGS_SIZE <= NFABRIC_DVS_SIZE,
              "vendor block: the contract's constants agree (64 KiB aligned, "
              "the registers inside the block)");
    TAP_CHECK(ram_hash(ram) == h && ctrl.sh->enabled_mask == 0,
              "vendor block header: device memory untouched, nothing enabled");
}

/* ---- window indices -------------------------------------------------------- */

static void test_window_index(void)
{
    unsigned bad = 0;

    fresh();
    /*
     * Window 16 and beyond does not exist: UNMAPPED, nothing changes (the
     * posted doorbells at 0xc00, where window 32 would be, are not windows).
     */
    for (unsigned i = 16; i < 64; i++) {
        for (unsigned r = 0; r < NFABRIC_WIN_STRIDE; r += 4) {
            uint64_t off = NFABRIC_REG_WIN(i, r);
            Snap before, after;

            if (reg_at(off)) {
                continue;
            }
            snap(&before);
            wr(off, 0x41, 4);
            snap_error(&before, NFABRIC_ERR_UNMAPPED, -1);
            snap(&after);
            bad += !snap_eq(&before, &after);
        }
    }
    TAP_CHECK(bad == 0, "window indices 16..63: UNMAPPED, no window changed");

    /* The gap at +0x3c of every window. */
    bad = 0;
    for (unsigned i = 0; i < 16; i++) {
        uint64_t off = NFABRIC_REG_WIN(i, 0x3c);

        wr(off, 1, 4);
        bad += ctrl.last_error != NFABRIC_ERR_UNMAPPED ||
               ctrl.sh->win[i].error != 0;
        bad += rd(off, 4) != 0 || ctrl.last_error != NFABRIC_ERR_UNMAPPED;
    }
    TAP_CHECK(bad == 0, "window +0x3c (no register): UNMAPPED, window ERROR "
              "untouched");

    /* Each window's registers reach that window only. */
    bad = 0;
    for (unsigned i = 0; i < 16; i++) {
        fresh();
        win_program(i, 0x40 * (i + 1), 0x40, 0x1000 + 0x400 * i, 3 + i);
        for (unsigned j = 0; j < 16; j++) {
            const NFabricWindow *w = &ctrl.sh->win[j];
            bool me = i == j;

            bad += w->dpa_base != (me ? 0x40 * (i + 1) : 0) ||
                   w->dpa_size != (me ? 0x40u : 0) ||
                   w->counters != (me ? 0x1000 + 0x400 * i : 0) ||
                   w->threshold != (me ? 3 + i : 0);
        }
        bad += win_set(i, 0x40 * (i + 1), 0x40, 0x1000 + 0x400 * i, GB, 8,
                       0, 0) != 0 || ctrl.sh->enabled_mask != 1u << i;
        bad += rd(NFABRIC_REG_ENABLED_MASK, 4) != 1u << i;
    }
    TAP_CHECK(bad == 0, "windows 0..15: registers reach their own window, "
              "ENABLED_MASK bit i");

    /* All 16 at once, and MAGIC intact. */
    fresh();
    bad = 0;
    for (unsigned i = 0; i < 16; i++) {
        bad += win_set(i, 0x100 * i, 0x40, 0x2000 + 0x200 * i, GB, 8, 0, 0);
    }
    TAP_CHECK(bad == 0 && rd(NFABRIC_REG_ENABLED_MASK, 4) == 0xffff &&
              rd(NFABRIC_REG_MAGIC, 4) == NFABRIC_MAGIC,
              "16 windows enabled at once: ENABLED_MASK 0xffff");
}

/* ---- window validation ----------------------------------------------------- */

/*
 * Expect window i's enable to be refused with err: ENABLE reads 0, ERROR
 * and LAST_ERROR hold err, ERROR_COUNT counts it, no other window and no
 * byte of device memory changed.
 */
static bool reject(unsigned i, uint32_t err, uint64_t base, uint64_t size,
                   uint64_t counters, unsigned path, unsigned width,
                   unsigned tie, uint32_t threshold)
{
    uint64_t h = ram_hash(ram);
    uint32_t mask = ctrl.sh->enabled_mask, count = ctrl.error_count;
    NFabricWindow others[NFABRIC_NUM_WINDOWS];
    uint32_t got;
    bool ok;

    win_program(i, base, size, counters, threshold);
    memcpy(others, ctrl.sh->win, sizeof(others));
    got = win_set(i, base, size, counters, path, width, tie, threshold);
    ok = got == err && ctrl.last_error == err &&
         ctrl.error_count == count + 1 && ctrl.sh->enabled_mask == mask &&
         !(rd(NFABRIC_REG_WIN(i, NFABRIC_WIN_CTRL), 4) &
           NFABRIC_WCTRL_ENABLE) &&
         ram_hash(ram) == h;
    for (unsigned j = 0; j < NFABRIC_NUM_WINDOWS; j++) {
        if (j != i) {
            ok = ok && memcmp(&others[j], &ctrl.sh->win[j], sizeof(others[j])) == 0;
        }
    }
    /* The refused range stays plain memory. */
    if (ok && size >= 8 && base <= RAM_SIZE - 8 && base + size <= RAM_SIZE) {
        mem_wr64(base, 0x1122334455667788ull);
        ok = mem_rd(base, 8) == 0x1122334455667788ull;
    }
    if (!ok) {
        tap_diag("window %u: error %u, want %u", i, got, err);
    }
    return ok;
}

static bool accept(unsigned i, uint64_t base, uint64_t size,
                   uint64_t counters, unsigned path, unsigned width,
                   unsigned tie, uint32_t threshold)
{
    uint32_t got = win_set(i, base, size, counters, path, width, tie,
                           threshold);

    if (got != 0 || !(ctrl.sh->enabled_mask & (1u << i))) {
        tap_diag("window %u refused with %u", i, got);
        return false;
    }
    return true;
}

static void test_dpa_ranges(void)
{
    const uint64_t R = RAM_SIZE;
    bool ok = true;

    fresh();
    ok &= reject(1, NFABRIC_ERR_RANGE, 0x1000, 0, 0x8000, GB, 8, 0, 0);
    ok &= reject(1, NFABRIC_ERR_RANGE, 0x1000, 0, 0, FP, 0, 0, 0);
    TAP_CHECK(ok, "DPA range: length 0 refused (RANGE), FP32 too");

    ok = reject(1, NFABRIC_ERR_RANGE, UINT64_MAX - 63, 128, 0x8000, GB, 8, 0, 0);
    ok &= reject(1, NFABRIC_ERR_RANGE, 0xffffffffffffffc0ull, 0x80, 0, FP, 0,
                 0, 0);
    ok &= reject(1, NFABRIC_ERR_RANGE, 0x40, UINT64_MAX - 63, 0, FP, 0, 0, 0);
    ok &= reject(1, NFABRIC_ERR_RANGE, 0x40, 0xffffffffffffffc0ull, 0, FP, 0,
                 0, 0);
    TAP_CHECK(ok, "DPA range: wrapping base + size refused (RANGE)");

    ok = reject(1, NFABRIC_ERR_RANGE, R, 0x40, 0, FP, 0, 0, 0);
    ok &= reject(1, NFABRIC_ERR_RANGE, R - 0x40, 0x80, 0, FP, 0, 0, 0);
    ok &= reject(1, NFABRIC_ERR_RANGE, 0, R + 0x40, 0, FP, 0, 0, 0);
    ok &= reject(1, NFABRIC_ERR_RANGE, R + 0x40, 0x40, 0, FP, 0, 0, 0);
    TAP_CHECK(ok, "DPA range: past the end of device memory refused");

    ok = reject(1, NFABRIC_ERR_RANGE, 1ull << 63, 0x40, 0, FP, 0, 0, 0);
    ok &= reject(1, NFABRIC_ERR_RANGE, 0, 1ull << 63, 0, FP, 0, 0, 0);
    ok &= reject(1, NFABRIC_ERR_RANGE, 0, UINT64_MAX, 0, FP, 0, 0, 0);
    ok &= reject(1, NFABRIC_ERR_RANGE, UINT64_MAX, UINT64_MAX, 0, GB, 16, 0, 0);
    /* Huge G-Binary data whose counter size would overflow 64 bits. */
    ok &= reject(1, NFABRIC_ERR_RANGE, 0, 1ull << 61, R / 2, GB, 16, 0, 0);
    TAP_CHECK(ok, "DPA range: huge bases and sizes refused");

    ok = reject(1, NFABRIC_ERR_ALIGN, 0x1008, 0x40, 0x8000, GB, 8, 0, 0);
    ok &= reject(1, NFABRIC_ERR_ALIGN, 0x1000, 0x48, 0x8000, GB, 8, 0, 0);
    ok &= reject(1, NFABRIC_ERR_ALIGN, 0x1000, 0x40, 0x8001, GB, 8, 0, 0);
    ok &= reject(1, NFABRIC_ERR_ALIGN, 0x1001, 0x3f, 0, FP, 0, 0, 0);
    /* RANGE is checked before ALIGN. */
    ok &= reject(1, NFABRIC_ERR_RANGE, R - 0x3f, 0x40, 0, FP, 0, 0, 0);
    TAP_CHECK(ok, "DPA range: misaligned base, length, counters (ALIGN); "
              "RANGE before ALIGN");

    /* Exactly at the end, and all of memory. */
    ok = accept(2, R - 0x40, 0x40, 0, FP, 0, 0, 0);
    win_off(2);
    ok &= accept(2, 0, R, 0, FP, 0, 0, 0);
    win_off(2);
    ok &= accept(2, R - 0x40, 0x40, R - 0x40 - 0x200, GB, 8, 0, 0);
    mem_wr64(R - 8, ~0ull);
    ok &= mem_rd(R - 8, 8) == ~0ull && cnt_get(R - 0x240, 8, 0x40 * 8 - 1) == 1;
    win_off(2);
    TAP_CHECK(ok, "DPA range: a window ending at the end of memory works, "
              "and one covering all of it");
}

static void test_counter_areas(void)
{
    const uint64_t R = RAM_SIZE;
    bool ok = true;

    fresh();
    /* Own counters over own data, both ways, partial and contained. */
    ok &= reject(1, NFABRIC_ERR_OVERLAP, 0x1000, 0x100, 0x1000, GB, 8, 0, 0);
    ok &= reject(1, NFABRIC_ERR_OVERLAP, 0x1000, 0x100, 0x10c0, GB, 8, 0, 0);
    ok &= reject(1, NFABRIC_ERR_OVERLAP, 0x1700, 0x100, 0x1000, GB, 8, 0, 0);
    ok &= reject(1, NFABRIC_ERR_OVERLAP, 0x1100, 0x40, 0x1000, GT, 16, 0, 5);
    /* Data right after its own counters: touching, fine. */
    ok &= accept(1, 0x1800, 0x100, 0x1000, GB, 8, 0, 0);
    win_off(1);
    TAP_CHECK(ok, "counter area over its own data refused (OVERLAP)");

    /* Touching is fine. */
    ok = accept(0, 0x1000, 0x100, 0x1100, GB, 8, 0, 0);     /* 0x1100-0x1900 */
    ok &= accept(3, 0x1900, 0x40, 0x0c00, GT, 8, 0, 1);     /* 0x0c00-0x0d00 */
    TAP_CHECK(ok, "counter area touching data, windows touching: accepted");

    /* Against window 0 (data 0x1000-0x1100, counters 0x1100-0x1900). */
    ok = reject(1, NFABRIC_ERR_OVERLAP, 0x10c0, 0x80, 0x4000, GB, 8, 0, 0);
    ok &= reject(1, NFABRIC_ERR_OVERLAP, 0x0fc0, 0x80, 0x4000, FP, 0, 0, 0);
    ok &= reject(1, NFABRIC_ERR_OVERLAP, 0x0c00, 0x1000, 0x4000, FP, 0, 0, 0);
    TAP_CHECK(ok, "data over another window's data refused (both ends, "
              "containing)");
    ok = reject(1, NFABRIC_ERR_OVERLAP, 0x1800, 0x40, 0x4000, GB, 8, 0, 0);
    ok &= reject(1, NFABRIC_ERR_OVERLAP, 0x18c0, 0x40, 0x4000, FP, 0, 0, 0);
    TAP_CHECK(ok, "data over another window's counters refused");
    ok = reject(1, NFABRIC_ERR_OVERLAP, 0x4000, 0x40, 0x0fc0, GB, 8, 0, 0);
    ok &= reject(1, NFABRIC_ERR_OVERLAP, 0x4000, 0x40, 0x1080, GT, 8, 0, 1);
    TAP_CHECK(ok, "counters over another window's data refused");
    ok = reject(1, NFABRIC_ERR_OVERLAP, 0x4000, 0x40, 0x1800, GB, 8, 0, 0);
    ok &= reject(1, NFABRIC_ERR_OVERLAP, 0x4000, 0x40, 0x0b80, GT, 16, 0, 1);
    TAP_CHECK(ok, "counters over another window's counters refused");

    /* FP32 windows have no counter area: COUNTERS is not looked at. */
    ok = accept(4, 0x3000, 0x40, 0x1000, FP, 0, 0, 0);
    win_off(4);
    ok &= accept(4, 0x3000, 0x40, UINT64_MAX, FP, 255, 15, UINT32_MAX);
    win_off(4);
    TAP_CHECK(ok, "FP32 window: COUNTERS, width, tie, threshold ignored");

    /* Past the end of memory, exactly at the end, huge. */
    ok = reject(1, NFABRIC_ERR_RANGE, 0x4000, 0x40, R - 0x1c0, GB, 8, 0, 0);
    ok &= reject(1, NFABRIC_ERR_RANGE, 0x4000, 0x40, R - 0x3c0, GB, 16, 0, 0);
    ok &= reject(1, NFABRIC_ERR_RANGE, 0x4000, 0x40, R, GT, 8, 0, 1);
    ok &= reject(1, NFABRIC_ERR_RANGE, 0x4000, 0x40, UINT64_MAX - 63, GB, 8,
                 0, 0);
    ok &= reject(1, NFABRIC_ERR_RANGE, 0x4000, 0x40, 1ull << 63, GB, 8, 0, 0);
    /* Counter area larger than memory (1/4 of memory as G-Binary x16). */
    ok &= reject(1, NFABRIC_ERR_RANGE, 0, R / 4, R / 4, GB, 16, 0, 0);
    TAP_CHECK(ok, "counter area past the end, wrapping, huge: RANGE");
    ok = accept(1, 0x4000, 0x40, R - 0x200, GB, 8, 0, 0);
    ok &= accept(2, 0x4040, 0x40, R - 0x600, GB, 16, 0, 0);
    mem_wr64(0x4078, 0);
    ok &= cnt_get(R - 0x200, 8, 0x1ff) == 0 && cnt_get(R - 0x600, 16, 0x1ff) == -1;
    TAP_CHECK(ok, "counter areas ending at the end of memory work");

    /* Widths multiply the counter area: 16-bit needs twice the room. */
    fresh();
    ok = accept(0, 0, 0x400, R - 0x2000, GB, 8, 0, 0);
    win_off(0);
    ok &= reject(0, NFABRIC_ERR_RANGE, 0, 0x400, R - 0x2000, GB, 16, 0, 0);
    ok &= accept(0, 0, 0x400, R - 0x1000, GT, 8, 0, 1);
    win_off(0);
    ok &= reject(0, NFABRIC_ERR_RANGE, 0, 0x400, R - 0x1000, GT, 16, 0, 1);
    TAP_CHECK(ok, "counter area size: DPA_SIZE * 8 (G-Binary) or * 4 "
              "(G-Ternary) elements of width/8 bytes");
}

static void test_fields(void)
{
    static const unsigned bad_widths[] = { 0, 1, 4, 7, 9, 12, 15, 17, 24, 32,
                                           64, 128, 255 };
    bool ok = true;

    fresh();
    for (unsigned k = 0; k < sizeof(bad_widths) / sizeof(*bad_widths); k++) {
        ok &= reject(1, NFABRIC_ERR_WIDTH, 0x1000, 0x40, 0x4000, GB,
                     bad_widths[k], 0, 0);
        ok &= reject(1, NFABRIC_ERR_WIDTH, 0x1000, 0x40, 0x4000, GT,
                     bad_widths[k], 0, 1);
    }
    ok &= accept(1, 0x1000, 0x40, 0x4000, GB, 16, 0, 0);
    TAP_CHECK(ok, "widths other than 8 and 16 refused (WIDTH), 13 values x "
              "2 paths");

    fresh();
    ok = true;
    for (unsigned t = 2; t < 16; t++) {
        ok &= reject(1, NFABRIC_ERR_TIE, 0x1000, 0x40, 0x4000, GB, 8, t, 0);
    }
    ok &= accept(1, 0x1000, 0x40, 0x4000, GB, 8, 1, 0);
    win_off(1);
    /* G-Ternary has no tie rule: the field is not looked at. */
    ok &= accept(1, 0x1000, 0x40, 0x4000, GT, 8, 9, 1);
    TAP_CHECK(ok, "tie rules 2..15 refused on G-Binary (TIE), ignored on "
              "G-Ternary");

    fresh();
    ok = reject(1, NFABRIC_ERR_THRESHOLD, 0x1000, 0x40, 0x4000, GT, 8, 0, 0);
    ok &= reject(1, NFABRIC_ERR_THRESHOLD, 0x1000, 0x40, 0x4000, GT, 8, 0, 128);
    ok &= reject(1, NFABRIC_ERR_THRESHOLD, 0x1000, 0x40, 0x4000, GT, 16, 0, 0);
    ok &= reject(1, NFABRIC_ERR_THRESHOLD, 0x1000, 0x40, 0x4000, GT, 16, 0,
                 32768);
    ok &= reject(1, NFABRIC_ERR_THRESHOLD, 0x1000, 0x40, 0x4000, GT, 16, 0,
                 UINT32_MAX);
    ok &= accept(1, 0x1000, 0x40, 0x4000, GT, 8, 0, 127);
    win_off(1);
    ok &= accept(1, 0x1000, 0x40, 0x4000, GT, 16, 0, 32767);
    win_off(1);
    ok &= accept(1, 0x1000, 0x40, 0x4000, GT, 8, 0, 1);
    win_off(1);
    ok &= accept(1, 0x1000, 0x40, 0x4000, GB, 8, 0, UINT32_MAX);
    TAP_CHECK(ok, "thresholds: 0 and above the width's max refused "
              "(THRESHOLD); 1, 127, 32767 accepted; G-Binary ignores it");

    fresh();
    ok = true;
    for (unsigned p = 3; p < 16; p++) {
        ok &= reject(1, NFABRIC_ERR_PATH, 0x1000, 0x40, 0x4000, p, 8, 0, 1);
    }
    TAP_CHECK(ok, "paths 3..15 refused (PATH)");

    /* The documented order of the checks. */
    fresh();
    ok = reject(1, NFABRIC_ERR_PATH, 0x1001, 0, 0, 9, 3, 7, 0);
    ok &= reject(1, NFABRIC_ERR_WIDTH, 0x1001, 0, 0, GB, 3, 7, 0);
    ok &= reject(1, NFABRIC_ERR_TIE, 0x1001, 0, 0, GB, 8, 7, 0);
    ok &= reject(1, NFABRIC_ERR_THRESHOLD, 0x1001, 0, 0, GT, 8, 7, 0);
    ok &= reject(1, NFABRIC_ERR_RANGE, 0x1001, 0, 0, GT, 8, 7, 1);
    ok &= reject(1, NFABRIC_ERR_RANGE, 0x1000, 0x40, RAM_SIZE, GT, 8, 7, 1);
    ok &= reject(1, NFABRIC_ERR_ALIGN, 0x1001, 0x40, 0x1000, GT, 8, 7, 1);
    ok &= reject(1, NFABRIC_ERR_OVERLAP, 0x1000, 0x40, 0x1000, GT, 8, 7, 1);
    TAP_CHECK(ok, "check order: PATH, WIDTH, TIE, THRESHOLD, RANGE (data, "
              "counters), ALIGN, OVERLAP");

    /* Reserved bits of a window's CTRL, one at a time: nothing stored. */
    fresh();
    ok = true;
    for (unsigned b = 0; b < 32; b++) {
        uint32_t bit = 1u << b, before;

        if (bit & NFABRIC_WCTRL_VALID) {
            continue;
        }
        before = ctrl.sh->win[2].ctrl;
        wr(NFABRIC_REG_WIN(2, NFABRIC_WIN_CTRL),
           bit | NFABRIC_WCTRL(GB, 8, 0), 4);
        ok &= ctrl.sh->win[2].error == NFABRIC_ERR_RESERVED_BITS &&
              ctrl.sh->win[2].ctrl == before && ctrl.sh->enabled_mask == 0;
        wr(NFABRIC_REG_WIN(2, NFABRIC_WIN_CTRL),
           bit | NFABRIC_WCTRL(GB, 8, 0) | NFABRIC_WCTRL_ENABLE, 4);
        ok &= ctrl.sh->win[2].error == NFABRIC_ERR_RESERVED_BITS &&
              ctrl.sh->win[2].ctrl == before && ctrl.sh->enabled_mask == 0;
    }
    for (unsigned b = 3; b < 32; b++) {
        uint32_t count = ctrl.error_count;

        wr(NFABRIC_REG_CTRL, 1u << b | NFABRIC_CTRL_CLEAR_ERROR, 4);
        ok &= ctrl.last_error == NFABRIC_ERR_RESERVED_BITS &&
              ctrl.error_count == count + 1;
    }
    TAP_CHECK(ok, "reserved bits in window CTRL (17 bits) and global CTRL "
              "(29 bits): RESERVED_BITS, nothing done");

    /* Commands. */
    fresh();
    ok = true;
    for (uint32_t c = 0; c < 64; c++) {
        if (c == NFABRIC_WCMD_CLEAR) {
            continue;
        }
        wr(NFABRIC_REG_WIN(5, NFABRIC_WIN_CMD), c, 4);
        ok &= ctrl.sh->win[5].error == NFABRIC_ERR_COMMAND;
    }
    wr(NFABRIC_REG_WIN(5, NFABRIC_WIN_CMD), UINT32_MAX, 4);
    ok &= ctrl.sh->win[5].error == NFABRIC_ERR_COMMAND;
    TAP_CHECK(ok, "unknown window commands refused (COMMAND)");
}

static void test_busy(void)
{
    const uint64_t base = 0x1000, counters = 0x2000;
    bool ok;
    uint32_t c = NFABRIC_WCTRL(GB, 8, 0) | NFABRIC_WCTRL_ENABLE;

    fresh();
    ok = accept(0, base, 0x40, counters, GB, 8, 0, 0);
    mem_wr64(base, ~0ull);
    for (unsigned r = 0; r <= NFABRIC_WIN_COUNTERS; r += 8) {
        uint64_t before = r == 0 ? base : r == 8 ? 0x40 : counters;

        wr(NFABRIC_REG_WIN(0, r), 0x8000, 8);
        ok &= ctrl.sh->win[0].error == NFABRIC_ERR_BUSY;
        wr(NFABRIC_REG_WIN(0, r), 0x8000, 4);
        ok &= ctrl.sh->win[0].error == NFABRIC_ERR_BUSY;
        wr(NFABRIC_REG_WIN(0, r) + 4, 1, 4);
        ok &= ctrl.sh->win[0].error == NFABRIC_ERR_BUSY;
        ok &= rd(NFABRIC_REG_WIN(0, r), 8) == before;
    }
    wr(NFABRIC_REG_WIN(0, NFABRIC_WIN_THRESHOLD), 3, 4);
    ok &= ctrl.sh->win[0].error == NFABRIC_ERR_BUSY && ctrl.sh->win[0].threshold == 0;
    wr(NFABRIC_REG_WIN(0, NFABRIC_WIN_CTRL),
       NFABRIC_WCTRL(GB, 16, 0) | NFABRIC_WCTRL_ENABLE, 4);
    ok &= ctrl.sh->win[0].error == NFABRIC_ERR_BUSY && ctrl.sh->win[0].ctrl == c;
    TAP_CHECK(ok, "enabled window: DPA_BASE/SIZE/COUNTERS (64 and 32-bit "
              "halves), THRESHOLD, a different CTRL refused (BUSY)");

    /* The same CTRL again is a no-op: no error, no new round. */
    wr(NFABRIC_REG_CTRL, NFABRIC_CTRL_CLEAR_ERROR, 4);
    wr(NFABRIC_REG_WIN(0, NFABRIC_WIN_CTRL), c, 4);
    TAP_CHECK(ctrl.error_count == 0 && cnt_get(counters, 8, 0) == 1 &&
              ctrl.sh->win[0].contrib_writes == 1,
              "enabled window: writing the same CTRL is a no-op (counts kept)");

    /* Disabling keeps the counter area; CLEAR on a disabled window zeroes
     * only the counts; enabling clears the area. */
    win_off(0);
    ok = ctrl.sh->enabled_mask == 0 && cnt_get(counters, 8, 5) == 1;
    wr(NFABRIC_REG_WIN(0, NFABRIC_WIN_CMD), NFABRIC_WCMD_CLEAR, 4);
    ok &= ctrl.sh->win[0].contrib_writes == 0 && cnt_get(counters, 8, 5) == 1;
    mem_wr64(base, 0x0123456789abcdefull);      /* plain memory again */
    ok &= mem_rd(base, 8) == 0x0123456789abcdefull;
    ok &= accept(0, base, 0x40, counters, GB, 8, 0, 0);
    ok &= cnt_get(counters, 8, 5) == 0 && ctrl.sh->win[0].contrib_writes == 0;
    TAP_CHECK(ok, "disable keeps the counters, CLEAR when disabled zeroes "
              "the counts, enable clears the area");

    /*
     * Rejected enable: the registers stay as they were (docs/registers.md,
     * "Errors"); only ERROR, LAST_ERROR and ERROR_COUNT change.
     */
    fresh();
    wr(NFABRIC_REG_WIN(1, NFABRIC_WIN_CTRL), NFABRIC_WCTRL(GB, 8, 0), 4);
    wr(NFABRIC_REG_WIN(1, NFABRIC_WIN_CTRL),
       NFABRIC_WCTRL(GB, 9, 1) | NFABRIC_WCTRL_ENABLE, 4);
    TAP_CHECK(ctrl.sh->win[1].ctrl == NFABRIC_WCTRL(GB, 8, 0) &&
              ctrl.sh->win[1].error == NFABRIC_ERR_WIDTH &&
              ctrl.sh->enabled_mask == 0,
              "rejected enable: CTRL keeps its previous value");
}

/* ---- the memory path ------------------------------------------------------- */

static void test_mem_sizes(void)
{
    static const struct { uint64_t dpa; unsigned len; } bad[] = {
        { 0, 0 }, { 0x100, 0 }, { RAM_SIZE, 0 },
        { 0, 9 }, { 0, 16 }, { 0, 64 }, { 0, 4096 }, { 0, UINT32_MAX },
        { RAM_SIZE - 4, 8 }, { RAM_SIZE - 1, 2 }, { RAM_SIZE, 1 },
        { RAM_SIZE + 1, 1 }, { RAM_SIZE, 8 }, { 1ull << 32, 4 },
        { 1ull << 63, 8 }, { UINT64_MAX, 1 }, { UINT64_MAX - 3, 8 },
        { UINT64_MAX - 7, 8 }, { UINT64_MAX - 6, 8 },
    };
    uint8_t buf[16];
    bool ok = true;
    Snap before, after;
    uint64_t h;

    for (int pass = 0; pass < 2; pass++) {
        fresh();
        if (pass) {
            /* A window right at the end of memory. */
            ok &= accept(0, RAM_SIZE - 0x40, 0x40, 0x1000, GB, 16, 1, 0);
        }
        h = ram_hash(ram);
        snap(&before);
        for (unsigned k = 0; k < sizeof(bad) / sizeof(bad[0]); k++) {
            for (int w = 0; w < 2; w++) {
                memset(buf, 0xee, sizeof(buf));
                ok &= !nfabric_ctrl_mem_access(&ctrl, bad[k].dpa, buf,
                                               bad[k].len, w);
                for (unsigned i = 0; i < sizeof(buf); i++) {
                    ok &= buf[i] == 0xee;
                }
            }
        }
        snap(&after);
        ok &= snap_eq(&before, &after) && ram_hash(ram) == h;
    }
    TAP_CHECK(ok, "memory path: len 0, len > 8, crossing or past the end, "
              "wrapping: refused, buffer, memory and state untouched");

    /* Every valid access near the end reaches the last bytes and no more. */
    fresh();
    ok = true;
    for (unsigned len = 1; len <= 8; len++) {
        for (uint64_t dpa = RAM_SIZE - 16; dpa + len <= RAM_SIZE; dpa++) {
            uint64_t v = rnd();
            uint8_t b[8], r[8];

            memcpy(b, &v, 8);
            ok &= mem(dpa, b, len, true);
            ok &= mem(dpa, r, len, false);
            ok &= memcmp(b, r, len) == 0 && memcmp(ram + dpa, b, len) == 0;
        }
    }
    TAP_CHECK(ok, "memory path: every size at every offset of the last "
              "16 bytes is byte-exact");
}

/* Reference for one window write/read, element by element. */
typedef struct RefWin {
    uint64_t base, size, counters;
    unsigned path, width, tie;
    uint32_t t;
    int cnt[8 * 256];
} RefWin;

static unsigned ref_write(RefWin *w, uint64_t off, const uint8_t *d,
                          unsigned n)
{
    unsigned reserved = 0;

    for (unsigned i = 0; i < n; i++) {
        if (w->path == GB) {
            for (unsigned b = 0; b < 8; b++) {
                int *c = &w->cnt[(off + i) * 8 + b];

                *c = sat(*c + ((d[i] >> b) & 1 ? 1 : -1), w->width);
            }
        } else {
            for (unsigned k = 0; k < 4; k++) {
                unsigned code = (d[i] >> (2 * k)) & 3;
                int *c = &w->cnt[(off + i) * 4 + k];

                if (code == NFABRIC_TERN_RESERVED) {
                    reserved++;
                } else {
                    *c = sat(*c + (code == NFABRIC_TERN_PLUS ? 1 :
                                   code == NFABRIC_TERN_MINUS ? -1 : 0),
                             w->width);
                }
            }
        }
    }
    return reserved;
}

static uint8_t ref_read_byte(const RefWin *w, uint64_t off)
{
    uint8_t v = 0;

    if (w->path == GB) {
        for (unsigned b = 0; b < 8; b++) {
            int c = w->cnt[off * 8 + b];
            unsigned bit = c > 0 ? 1 : c < 0 ? 0 : w->tie;

            v |= bit << b;
        }
    } else {
        for (unsigned k = 0; k < 4; k++) {
            int c = w->cnt[off * 4 + k];
            unsigned code = c >= (int)w->t ? NFABRIC_TERN_PLUS :
                            c <= -(int)w->t ? NFABRIC_TERN_MINUS :
                            NFABRIC_TERN_ZERO;

            v |= code << (2 * k);
        }
    }
    return v;
}

/* Random writes of every size and alignment through the path. */
static bool run_window(unsigned path, unsigned width, unsigned tie,
                       uint32_t t, unsigned writes)
{
    static RefWin w;
    uint64_t reserved = 0, bytes = 0;
    unsigned elems;
    bool ok;

    memset(&w, 0, sizeof(w));
    w.base = 0x2000;
    w.size = 0x100;
    w.counters = 0x8000;
    w.path = path;
    w.width = width;
    w.tie = tie;
    w.t = t;
    elems = (unsigned)w.size * (path == GB ? 8 : 4);
    fresh();
    memset(ram + w.counters, 0x77, elems * width / 8);  /* enable clears */
    ok = accept(6, w.base, w.size, w.counters, path, width, tie, t);
    for (unsigned k = 0; k < writes; k++) {
        unsigned len = 1 + rnd() % 8;
        /* Start up to 8 bytes before the window, end up to 8 after. */
        uint64_t dpa = w.base - 8 + rnd() % (w.size + 16 - len + 1);
        uint64_t v = rnd();
        uint8_t d[8];

        if (path == GT && rnd() % 2) {
            v &= ~0xaaaaaaaaaaaaaaaaull | (v << 1 & 0xaaaaaaaaaaaaaaaaull &
                                           rnd());
        }
        memcpy(d, &v, 8);
        ok &= mem(dpa, d, len, true);
        for (unsigned i = 0; i < len; i++) {
            uint64_t a = dpa + i;

            if (a >= w.base && a < w.base + w.size) {
                reserved += ref_write(&w, a - w.base, &d[i], 1);
                bytes++;
            } else {
                ok &= ram[a] == d[i];       /* plain memory either side */
            }
        }
    }
    for (unsigned e = 0; e < elems; e++) {
        ok &= cnt_get(w.counters, width, e) == w.cnt[e];
    }
    for (uint64_t off = 0; off < w.size; off++) {
        unsigned len = 1 + rnd() % 8;
        uint8_t r[8], r2[8];

        if (off + len > w.size) {
            len = (unsigned)(w.size - off);
        }
        ok &= mem(w.base + off, r, len, false);
        ok &= mem(w.base + off, r2, len, false);
        ok &= memcmp(r, r2, len) == 0;
        for (unsigned i = 0; i < len; i++) {
            ok &= r[i] == ref_read_byte(&w, off + i);
        }
    }
    ok &= ctrl.sh->win[6].contrib_bytes == bytes &&
          ctrl.sh->win[6].reserved_codes == reserved;
    if (!ok) {
        tap_diag("path %u width %u tie %u t %u", path, width, tie, t);
    }
    return ok;
}

static void test_engine_path(void)
{
    bool ok = true;

    rng_state = 7;
    ok &= run_window(GB, 8, 0, 0, 3000);
    ok &= run_window(GB, 16, 1, 0, 3000);
    ok &= run_window(GB, 8, 1, 0, 150);
    TAP_CHECK(ok, "G-Binary through the path: random 1-8 byte writes at any "
              "alignment, straddling both ends: counters and majority "
              "read-back match the reference, reads repeatable");
    ok = run_window(GT, 8, 0, 1, 3000);
    ok &= run_window(GT, 16, 0, 3, 3000);
    ok &= run_window(GT, 8, 0, 127, 400);
    TAP_CHECK(ok, "G-Ternary through the path: counters, gated read-back, "
              "reserved codes match the reference");
}

/*
 * The RTL hook (nfabric_ctrl_set_rtl) with stand-ins for the RTL: the
 * engine's scalar reference (a second, independent implementation), and
 * the same with one bit wrong, as a faulty RTL would be.
 */
static unsigned alt_writes, alt_reads;
static bool alt_faulty;

static int64_t alt_write(void *rtl, const NFabricAggCfg *cfg, void *counters,
                         uint64_t off, const uint8_t *data, size_t len)
{
    int64_t rc = nfabric_agg_write_ref(cfg, counters, off, data, len);

    (void)rtl;
    alt_writes++;
    if (alt_faulty && rc >= 0 && len) {
        /* The counter of the access's last element, one bit off. */
        ((uint8_t *)counters)[nfabric_counter_bytes(cfg->path, cfg->width,
                                                    off + len) - 1] ^= 0x10;
    }
    return rc;
}

static int alt_read(void *rtl, const NFabricAggCfg *cfg, const void *counters,
                    uint64_t off, uint8_t *out, size_t len)
{
    int rc = nfabric_agg_read_ref(cfg, counters, off, out, len);

    (void)rtl;
    alt_reads++;
    if (alt_faulty && rc == 0 && len) {
        out[len - 1] ^= 0x04;
    }
    return rc;
}

static const NFabricRtlOps alt_ops = { alt_write, alt_read };
static int alt_model;   /* the stand-in's model: only its address is used */

static void test_rtl(void)
{
    uint8_t d[8] = { 0x5a, 0xa5, 0x0f, 0xf0, 0x33, 0xcc, 0x01, 0x80 };
    uint64_t h, v, contrib;
    bool ok;

    /* Serve: the stand-in serves every low-bit access, the results right. */
    fresh_rtl_ops = &alt_ops;
    fresh_rtl_mode = NFABRIC_RTL_SERVE;
    alt_faulty = false;
    alt_writes = alt_reads = 0;
    rng_state = 11;
    ok = run_window(GB, 16, 1, 0, 1000) && run_window(GT, 8, 0, 2, 1000);
    TAP_CHECK(ok && alt_writes > 500 && alt_reads > 500,
              "rtl serve: every low-bit access goes through the RTL's calls "
              "(%u writes, %u reads), the results are the reference's",
              alt_writes, alt_reads);

    /* Compare, a correct RTL: nothing differs, nothing is dropped. */
    fresh_rtl_mode = NFABRIC_RTL_COMPARE;
    alt_writes = alt_reads = hook_mismatches = 0;
    ok = run_window(GB, 8, 0, 0, 1000) && run_window(GT, 16, 0, 3, 1000);
    TAP_CHECK(ok && alt_writes > 500 && ctrl.rtl_mismatches == 0 &&
              hook_mismatches == 0, "rtl compare: a correct RTL beside the "
              "engine on %u writes and %u reads: no difference reported",
              alt_writes, alt_reads);

    /* Compare, a faulty RTL: the write is dropped and reported. */
    alt_faulty = true;
    hook_mismatches = 0;
    fresh();
    ok = accept(3, 0x4000, 0x100, 0x6000, GB, 16, 0, 0);
    h = ram_hash(ram);
    contrib = rd(NFABRIC_REG_WIN(3, NFABRIC_WIN_CONTRIB_WRITES), 8);
    ok &= mem(0x4040, d, 8, true);
    TAP_CHECK(ok && hook_mismatches == 1 && hook_mismatch_win == 3 &&
              ram_hash(ram) == h && ctrl.rtl_mismatches == 1 &&
              rd(NFABRIC_REG_WIN(3, NFABRIC_WIN_CONTRIB_WRITES), 8) == contrib &&
              strstr(hook_mismatch_what, "line 1 lane 63"),
              "rtl compare: a faulty RTL's write is dropped (device memory "
              "unchanged, no contribution) and reported: %s",
              hook_mismatch_what);
    /* A read: zeros, reported. */
    alt_faulty = false;
    nfabric_ctrl_set_rtl(&ctrl, NFABRIC_RTL_OFF, NULL, NULL);
    ok = mem(0x4040, d, 8, true);
    v = mem_rd(0x4040, 8);
    nfabric_ctrl_set_rtl(&ctrl, NFABRIC_RTL_COMPARE, &alt_ops, &alt_model);
    alt_faulty = true;
    hook_mismatches = 0;
    TAP_CHECK(ok && v == 0x8001cc33f00fa55aull && mem_rd(0x4040, 8) == 0 &&
              hook_mismatches == 1 && strstr(hook_mismatch_what, "read-out byte"),
              "rtl compare: a faulty RTL's read returns zeros and is reported "
              "(%s)", hook_mismatch_what);

    /* Serve, a faulty RTL: its result is what the device keeps. */
    nfabric_ctrl_set_rtl(&ctrl, NFABRIC_RTL_SERVE, &alt_ops, &alt_model);
    h = ram_hash(ram);
    ok = mem(0x4080, d, 8, true);
    /* Elements 1086 and 1087 (bits 6 and 7 of 0x80) took opposite signs. */
    TAP_CHECK(ok && ram_hash(ram) != h && hook_mismatches == 1 &&
              nfabric_counter_get(ram + 0x6000, 16, 0x80 * 8 + 63) ==
              0x1000 - nfabric_counter_get(ram + 0x6000, 16, 0x80 * 8 + 62),
              "rtl serve: the RTL's result is what the counters keep (the "
              "faulty bit is there)");
    fresh_rtl_ops = NULL;
    fresh_rtl_mode = NFABRIC_RTL_OFF;
    alt_faulty = false;
}

/* Statistics of accesses that straddle window boundaries. */
static void test_straddle(void)
{
    const uint64_t b = 0x3000;
    uint8_t d[8] = { 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff };
    bool ok;

    fresh();
    ok = accept(0, b, 0x40, 0x8000, GB, 8, 0, 0);
    ok &= mem(b - 4, d, 8, true);
    ok &= ctrl.stats[FP][NFABRIC_STAT_WRITES] == 1 &&
          ctrl.stats[FP][NFABRIC_STAT_WRITE_BYTES] == 4 &&
          ctrl.stats[GB][NFABRIC_STAT_WRITES] == 1 &&
          ctrl.stats[GB][NFABRIC_STAT_WRITE_BYTES] == 4 &&
          ctrl.sh->win[0].contrib_writes == 1 && ctrl.sh->win[0].contrib_bytes == 4 &&
          cnt_get(0x8000, 8, 31) == 1 && cnt_get(0x8000, 8, 32) == 0 &&
          ram[b - 1] == 0xff;
    TAP_CHECK(ok, "straddling plain memory and a G-Binary window: each path "
              "counts once with its bytes");

    /* Plain memory into an FP32 window: one path touched. */
    fresh();
    ok = accept(0, b, 0x40, 0, FP, 0, 0, 0);
    ok &= mem(b - 4, d, 8, true);
    TAP_CHECK(ok && ctrl.stats[FP][NFABRIC_STAT_WRITES] == 1 &&
              ctrl.stats[FP][NFABRIC_STAT_WRITE_BYTES] == 8,
              "straddling plain memory and an FP32 window counts once on "
              "FP32 (registers.md: once on each path it touched)");

    /* Two adjacent G-Binary windows. */
    fresh();
    ok = accept(0, b, 0x40, 0x8000, GB, 8, 0, 0);
    ok &= accept(1, b + 0x40, 0x40, 0x9000, GB, 8, 0, 0);
    ok &= mem(b + 0x3c, d, 8, true);
    ok &= ctrl.sh->win[0].contrib_bytes == 4 && ctrl.sh->win[1].contrib_bytes == 4;
    TAP_CHECK(ok, "straddling two G-Binary windows: each window gets its "
              "4 bytes");
    TAP_CHECK(ok && ctrl.stats[GB][NFABRIC_STAT_WRITES] == 1 &&
              ctrl.stats[GB][NFABRIC_STAT_WRITE_BYTES] == 8 &&
              ctrl.timing.accesses[GB] == 1,
              "straddling two G-Binary windows counts once on G-Binary, and "
              "is one modelled access");
}

/*
 * The ranges an owner must trap for the direct map: every enabled low-bit
 * window's data range and counter area, FP32 windows only when asked,
 * nothing of disabled or refused windows.
 */
static void test_trap_ranges(void)
{
    NFabricRange r[NFABRIC_MAX_TRAPS];
    unsigned n;
    bool ok;

    fresh();
    n = nfabric_ctrl_trap_ranges(&ctrl, true, r);
    TAP_CHECK(n == 0, "trap ranges: none with no window enabled (%u)", n);

    ok = accept(2, 0x1000, 0x100, 0x4000, GB, 8, 0, 0);
    ok &= accept(5, 0x2000, 0x80, 0x5000, GT, 16, 0, 1);
    ok &= accept(7, 0x6000, 0x400, 0, FP, 0, 0, 0);
    n = nfabric_ctrl_trap_ranges(&ctrl, false, r);
    TAP_CHECK(ok && n == 4 &&
              r[0].dpa == 0x1000 && r[0].len == 0x100 &&
              r[1].dpa == 0x4000 &&
              r[1].len == nfabric_counter_bytes(GB, 8, 0x100) &&
              r[2].dpa == 0x2000 && r[2].len == 0x80 &&
              r[3].dpa == 0x5000 &&
              r[3].len == nfabric_counter_bytes(GT, 16, 0x80),
              "trap ranges: each low-bit window's data range and counter "
              "area, in window order; the FP32 window is left out (n=%u)", n);
    n = nfabric_ctrl_trap_ranges(&ctrl, true, r);
    TAP_CHECK(n == 5 && r[4].dpa == 0x6000 && r[4].len == 0x400,
              "trap ranges: with fp32, the FP32 window's data range too, "
              "without a counter area (n=%u)", n);

    /* A refused enable adds nothing; a disable removes the window. */
    ok = win_set(9, 0x1000, 0x40, 0x7000, GB, 8, 0, 0) ==
         NFABRIC_ERR_OVERLAP;                           /* overlaps 2 */
    win_off(2);
    n = nfabric_ctrl_trap_ranges(&ctrl, false, r);
    TAP_CHECK(ok && n == 2 && r[0].dpa == 0x2000 && r[1].dpa == 0x5000,
              "trap ranges: a refused enable adds none, a disabled window "
              "is gone (n=%u)", n);
    nfabric_ctrl_reset(&ctrl);
    n = nfabric_ctrl_trap_ranges(&ctrl, true, r);
    TAP_CHECK(n == 0, "trap ranges: none after reset (n=%u)", n);
}

static void test_stats_timing_clear(void)
{
    bool ok;

    fresh();
    accept(0, 0x1000, 0x40, 0x2000, GT, 8, 0, 2);
    mem_wr64(0x1000, 0x5555);
    mem_wr64(0x4000, 1);
    mem_rd(0x1004, 4);
    ok = ctrl.stats[GT][NFABRIC_STAT_WRITES] == 1 &&
         ctrl.stats[GT][NFABRIC_STAT_READ_BYTES] == 4 &&
         ctrl.stats[FP][NFABRIC_STAT_WRITE_BYTES] == 8 &&
         rd(NFABRIC_REG_T_TOTAL_PS, 8) ==
             rd(NFABRIC_REG_T_PATH_FIELD(FP, 0), 8) +
             rd(NFABRIC_REG_T_PATH_FIELD(GT, 0), 8) &&
         rd(NFABRIC_REG_T_TOTAL_PS, 8) != 0;
    wr(NFABRIC_REG_CTRL, NFABRIC_CTRL_CLEAR_STATS, 4);
    ok &= rd(NFABRIC_REG_STATS_PATH(GT, 0), 8) == 0 &&
          rd(NFABRIC_REG_T_TOTAL_PS, 8) != 0;
    wr(NFABRIC_REG_CTRL, NFABRIC_CTRL_CLEAR_TIMING, 4);
    ok &= rd(NFABRIC_REG_T_TOTAL_PS, 8) == 0 &&
          rd(NFABRIC_REG_T_EXPOSED_PPM, 4) == 0 &&
          rd(NFABRIC_REG_T_CLOCK_MHZ, 4) == tparams.clock_mhz;
    wr(NFABRIC_REG_MAGIC, 0, 4);
    wr(NFABRIC_REG_CTRL, NFABRIC_CTRL_CLEAR_ERROR, 4);
    ok &= ctrl.last_error == 0 && ctrl.error_count == 0 &&
          ctrl.sh->enabled_mask == 1;
    TAP_CHECK(ok, "CTRL: CLEAR_STATS, CLEAR_TIMING, CLEAR_ERROR each clear "
              "their figures only");
    TAP_CHECK(hook_bad_dirty == 0 && hook_dirty > 0,
              "every dirty range reported so far lies inside device memory "
              "(%u ranges)", hook_dirty);
}

/*
 * The device's stream is dependent: every access arrives when the previous
 * one completed, so nothing waits for the link; a low-bit access waits only
 * for its datapath, which T_QUEUED_PS counts (docs/registers.md, "Timing
 * model").  The queue maxima of layout 1.1 (0x214, 0x268), which could not
 * change here, are unmapped.
 */
static void test_dependent_queue(void)
{
    bool ok;

    fresh();
    for (unsigned k = 0; k < 1000; k++) {
        mem_wr64(0x8000 + 8 * (k % 64), k);
        mem_rd(0x9000 + 4 * (k % 16), 4);
    }
    ok = rd(0x258, 8) == 0;
    accept(0, 0x1000, 0x40, 0x2000, GT, 8, 0, 2);
    for (unsigned k = 0; k < 1000; k++) {
        mem_wr64(0x1000 + 8 * (k % 8), k);
        mem_wr64(0x8000 + 8 * (k % 64), k);
    }
    ok &= rd(0x258, 8) == rd(NFABRIC_REG_T_PATH_FIELD(GT, 8), 8) &&
          rd(0x250, 8) == rd(0x218, 8) && rd(0x218, 8) != 0;
    TAP_CHECK(ok, "a dependent stream: T_QUEUED_PS 0 on FP32, then the "
              "datapath's exposed time with a low-bit window; T_RUNTIME_PS = "
              "T_TOTAL_PS");
    hook_errors = 0;
    ok = rd(0x214, 4) == 0 && hook_errors == 1 &&
         hook_last_code == NFABRIC_ERR_UNMAPPED;
    ok &= rd(0x268, 4) == 0 && hook_errors == 2 &&
          hook_last_code == NFABRIC_ERR_UNMAPPED;
    TAP_CHECK(ok, "0x214 and 0x268 (T_MAX_IN_FLIGHT, T_MAX_QUEUED until 1.1) "
              "read 0 with UNMAPPED");
}

/* ---- reset ----------------------------------------------------------------- */

static void test_reset(void)
{
    uint8_t save[0x400];
    bool ok;

    fresh();
    accept(0, 0x1000, 0x40, 0x2000, GB, 16, 1, 0);
    accept(5, 0x1040, 0x80, 0x4000, GT, 8, 0, 3);
    accept(9, 0x8000, 0x1000, 0, FP, 0, 0, 0);
    win_program(12, 0x40, 0x80, 0xc0, 77);
    wr(NFABRIC_REG_WIN(12, NFABRIC_WIN_CTRL), NFABRIC_WCTRL(GT, 16, 0), 4);
    for (int i = 0; i < 100; i++) {
        mem_wr64(0x1000 + 8 * (i % 24), rnd());
        mem_wr64(0x8000 + 8 * i, rnd());
        mem_rd(0x1040 + i % 0x80, 1);
    }
    wr(NFABRIC_REG_MAGIC, 1, 4);
    wr(0x800, 1, 4);
    memcpy(save, ram + 0x1000, sizeof(save));
    nfabric_ctrl_reset(&ctrl);
    hook_errors = 0;
    ok = sweep_reads("after reset", true) == 0;
    TAP_CHECK(ok, "reset: every register reads its documented default "
              "(timing parameters kept)");
    TAP_CHECK(memcmp(save, ram + 0x1000, sizeof(save)) == 0,
              "reset: device memory (data, counter areas) not cleared");
    mem_wr64(0x1000, 0x1234);
    TAP_CHECK(mem_rd(0x1000, 8) == 0x1234 && ctrl.sh->enabled_mask == 0 &&
              ctrl.stats[GB][NFABRIC_STAT_WRITES] == 0,
              "reset: former windows are plain memory");
}

/* ---- post_load -------------------------------------------------------------- */

static NFabricCtrl dst;
static uint8_t *dst_ram;

/*
 * A migration into dst over its own RAM: the guest-visible state (windows,
 * errors, statistics) and the timing model's accumulators and queue state,
 * all but its occupancy ring (which nfabric_ctrl_post_load() restarts);
 * the parameters come from the destination's properties.  What VMState
 * "cxl-neuron-fabric" really carries is checked by the migration qtest.
 */
static int migrate_into_dst(void)
{
    NFabricCtrl *s = &ctrl;

    memcpy(dst_ram, ram, RAM_SIZE);
    nfabric_ctrl_init(&dst, dst_ram, RAM_SIZE, &tparams, &hooks, NULL);
    memcpy(dst.sh->win, s->sh->win, sizeof(dst.sh->win));
    dst.last_error = s->last_error;
    dst.error_count = s->error_count;
    memcpy(dst.stats, s->stats, sizeof(dst.sh->head[0].stats));
    /* Version 1.1: rounds and per-head contribution counts. */
    memcpy(dst.sh->round, s->sh->round, sizeof(dst.sh->round));
    memcpy(dst.sh->head[0].contrib_writes, s->sh->head[0].contrib_writes,
           sizeof(dst.sh->head[0].contrib_writes));
    memcpy(dst.sh->head[0].contrib_bytes, s->sh->head[0].contrib_bytes,
           sizeof(dst.sh->head[0].contrib_bytes));
    dst.head_select = s->head_select;
    memcpy((char *)&dst.timing + offsetof(NFabricTiming, time_ps),
           (const char *)&s->timing + offsetof(NFabricTiming, time_ps),
           offsetof(NFabricTiming, occ_head) -
           offsetof(NFabricTiming, time_ps));
    return nfabric_ctrl_post_load(&dst);
}

/* Every register of ctrl and dst reads the same. */
static bool same_regs(void)
{
    for (unsigned i = 0; i < nregs; i++) {
        const RegDef *r = &regmap[i];

        if (nfabric_ctrl_reg_read(&ctrl, r->off, r->width) !=
            nfabric_ctrl_reg_read(&dst, r->off, r->width)) {
            tap_diag("register 0x%llx differs", (unsigned long long)r->off);
            return false;
        }
    }
    return true;
}

static void test_post_load_good(void)
{
    bool ok = true;
    uint64_t h;

    fresh();
    rng_state = 99;
    ok &= accept(0, 0x1000, 0x100, 0x4000, GB, 8, 0, 0);
    ok &= accept(3, 0x1100, 0x40, 0x8000, GT, 16, 0, 2);
    ok &= accept(7, 0xc000, 0x400, 0, FP, 0, 0, 0);
    win_program(9, 0x40, 0x80, 0xc0, 77);       /* disabled, programmed */
    for (int i = 0; i < 200; i++) {
        mem_wr64(0x1000 + 8 * (rnd() % 0x28), rnd());
        mem_rd(0x1000 + rnd() % 0x140, 1 + rnd() % 8);
    }
    wr(0x804, 1, 4);        /* an error in the counts */
    h = ram_hash(ram);
    ok &= migrate_into_dst() == 0;
    ok &= dst.sh->enabled_mask == ctrl.sh->enabled_mask &&
          memcmp(dst.sh->cfg, ctrl.sh->cfg, sizeof(dst.sh->cfg)) == 0 &&
          ram_hash(dst_ram) == h && ram_hash(ram) == h;
    TAP_CHECK(ok, "post_load: a state mid-round (3 windows, traffic) "
              "rebuilds ENABLED_MASK and paths, memory untouched");
    TAP_CHECK(same_regs(), "post_load: every register reads the same on "
              "the destination");
    ok = true;
    for (uint64_t a = 0x1000; a < 0x1140; a += 8) {
        uint8_t x[8], y[8];

        ok &= mem(a, x, 8, false);
        ok &= nfabric_ctrl_mem_access(&dst, a, y, 8, false);
        ok &= memcmp(x, y, 8) == 0;
    }
    /* The round goes on identically on both. */
    for (int i = 0; i < 200; i++) {
        uint64_t a = 0x1000 + 8 * (rnd() % 0x28), v = rnd();
        uint8_t b[8];

        memcpy(b, &v, 8);
        ok &= mem(a, b, 8, true);
        memcpy(b, &v, 8);
        ok &= nfabric_ctrl_mem_access(&dst, a, b, 8, true);
    }
    ok &= memcmp(ram, dst_ram, RAM_SIZE) == 0;
    TAP_CHECK(ok && same_regs(), "post_load: read-back identical, and the "
              "round continued on both gives the same memory and registers");
}

/* Corrupt one field of the migrated state of a valid window setup. */
typedef void (*Corrupt)(NFabricCtrl *d);

static void c_size0(NFabricCtrl *d) { d->sh->win[0].dpa_size = 0; }
static void c_past_end(NFabricCtrl *d) { d->sh->win[0].dpa_base = RAM_SIZE; }
static void c_wrap(NFabricCtrl *d)
{
    d->sh->win[0].dpa_base = UINT64_MAX - 63;
    d->sh->win[0].dpa_size = 128;
}
static void c_huge(NFabricCtrl *d) { d->sh->win[0].dpa_size = 1ull << 62; }
static void c_counters_end(NFabricCtrl *d) { d->sh->win[0].counters = RAM_SIZE - 64; }
static void c_counters_huge(NFabricCtrl *d) { d->sh->win[0].counters = UINT64_MAX - 63; }
static void c_align(NFabricCtrl *d) { d->sh->win[0].dpa_base += 8; }
static void c_calign(NFabricCtrl *d) { d->sh->win[0].counters += 1; }
static void c_own(NFabricCtrl *d) { d->sh->win[0].counters = d->sh->win[0].dpa_base; }
static void c_other(NFabricCtrl *d) { d->sh->win[1].dpa_base = d->sh->win[0].dpa_base; }
static void c_other_ctr(NFabricCtrl *d) { d->sh->win[1].counters = d->sh->win[0].counters; }
static void c_path(NFabricCtrl *d)
{
    d->sh->win[0].ctrl = (d->sh->win[0].ctrl & ~NFABRIC_WCTRL_PATH_MASK) | 0xf0;
}
static void c_width(NFabricCtrl *d)
{
    d->sh->win[0].ctrl = (d->sh->win[0].ctrl & ~NFABRIC_WCTRL_WIDTH_MASK) | 0xff00;
}
static void c_tie(NFabricCtrl *d) { d->sh->win[0].ctrl |= 0xf0000; }
static void c_thr(NFabricCtrl *d) { d->sh->win[1].threshold = 0; }
static void c_thr_big(NFabricCtrl *d) { d->sh->win[1].threshold = 1000; }
static void c_enable_bad(NFabricCtrl *d)
{
    /* A disabled, never valid window marked enabled. */
    d->sh->win[4].ctrl = NFABRIC_WCTRL(GB, 8, 0) | NFABRIC_WCTRL_ENABLE;
    d->sh->win[4].dpa_size = 0;
}
static void c_reserved(NFabricCtrl *d) { d->sh->win[0].ctrl |= 1u << 31; }

static void test_post_load_corrupt(void)
{
    static const struct { const char *what; Corrupt fn; } cases[] = {
        { "length 0", c_size0 }, { "base past the end", c_past_end },
        { "wrapping range", c_wrap }, { "huge length", c_huge },
        { "counters past the end", c_counters_end },
        { "huge counters", c_counters_huge }, { "misaligned base", c_align },
        { "misaligned counters", c_calign },
        { "counters over own data", c_own },
        { "data over another window", c_other },
        { "counters over another's counters", c_other_ctr },
        { "unknown path", c_path }, { "bad width", c_width },
        { "bad tie", c_tie }, { "threshold 0", c_thr },
        { "threshold over the max", c_thr_big },
        { "invalid window marked enabled", c_enable_bad },
        { "reserved CTRL bits", c_reserved },
    };
    unsigned bad = 0;

    for (unsigned k = 0; k < sizeof(cases) / sizeof(cases[0]); k++) {
        uint64_t h;
        int rc;

        fresh();
        accept(0, 0x1000, 0x100, 0x4000, GB, 8, 0, 0);
        accept(1, 0x2000, 0x40, 0x8000, GT, 8, 0, 2);
        mem_wr64(0x1000, rnd());
        h = ram_hash(ram);
        if (migrate_into_dst() != 0) {
            abort();
        }
        cases[k].fn(&dst);
        rc = nfabric_ctrl_post_load(&dst);
        if (rc != -1 || ram_hash(dst_ram) != h) {
            tap_diag("post_load accepted: %s", cases[k].what);
            bad++;
        }
    }
    TAP_CHECK(bad == 0, "post_load refuses corrupt window state (18 kinds: "
              "range, alignment, overlap, path, width, tie, threshold, "
              "reserved bits), memory untouched");

    /* A disabled window's fields are not validated: they are inert. */
    fresh();
    accept(0, 0x1000, 0x100, 0x4000, GB, 8, 0, 0);
    migrate_into_dst();
    dst.sh->win[2].dpa_base = UINT64_MAX;
    dst.sh->win[2].dpa_size = UINT64_MAX;
    dst.sh->win[2].ctrl = NFABRIC_WCTRL(9, 3, 7);
    TAP_CHECK(nfabric_ctrl_post_load(&dst) == 0 && dst.sh->enabled_mask == 1,
              "post_load: garbage in a disabled window is inert (accepted, "
              "stays disabled)");
}

int main(void)
{
    build_regmap();
    ram = guarded_alloc(RAM_SIZE);
    dst_ram = guarded_alloc(RAM_SIZE);

    test_reg_reads();
    test_reg_writes();
    test_dvs_header();
    test_window_index();
    test_dpa_ranges();
    test_counter_areas();
    test_fields();
    test_busy();
    test_mem_sizes();
    test_engine_path();
    test_straddle();
    test_rtl();
    test_trap_ranges();
    test_stats_timing_clear();
    test_dependent_queue();
    test_reset();
    test_post_load_good();
    test_post_load_corrupt();
    TAP_CHECK(hook_bad_dirty == 0, "no dirty range outside device memory "
              "in the whole run (%u ranges)", hook_dirty);
    return tap_done();
}
