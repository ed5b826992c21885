/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Unit tests of the CXL PMU block (hw/mem/nfabric/nfabric_cpmu.c, register
 * version 1.9) without QEMU, as Linux's cxl_pmu drives it: the capability
 * and event capability registers say what the driver needs (configurable
 * counters, freeze, writable while frozen, the interrupt); counters count
 * the events they select, equal to the statistics registers (reads,
 * writes and bytes per path, refusals against ERROR_COUNT; the fixed
 * counter of each error code) and to the rounds done; nothing counts while frozen or disabled; a counter
 * written near the top wraps, sets its overflow bit, asks for the message
 * once and freezes all when told to; a clear of the statistics does not
 * move a counter; bad configurations are refused (RESERVED_BITS) and
 * change nothing; 32-bit halves; reset.
 */
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "hw/mem/nfabric_ctrl.h"
#include "tap.h"

#define RAM_SIZE        (1u << 20)
#define WIN_DPA         0x1000u
#define WIN_LEN         4096u

static const NFabricTimingParams tparams = { 1000, 5, 300, 32000 };
static NFabricCtrl c;
static uint8_t *ram;

static void wr(uint64_t off, uint64_t v)
{
    nfabric_ctrl_reg_write(&c, off, v, 4);
}

static uint32_t rd(uint64_t off)
{
    return (uint32_t)nfabric_ctrl_reg_read(&c, off, 4);
}

static uint64_t rd64(uint64_t off)
{
    return nfabric_ctrl_reg_read(&c, off, 8);
}

static uint64_t pr(uint64_t off)
{
    return nfabric_ctrl_cpmu_read(&c, off, 8);
}

static void pw(uint64_t off, uint64_t v)
{
    nfabric_ctrl_cpmu_write(&c, off, v, 8);
}

/*
 * Counter n, as cxl_pmu's event_start writes it: a configurable one with
 * events mask of event capability 0 (the capability Linux 6.12 programs),
 * a fixed one with what it reads (mask ignored).
 */
static void start(unsigned n, uint32_t mask)
{
    uint64_t cfg = pr(NFABRIC_CPMU_REG_COUNTER_CFG(n));

    cfg |= NFABRIC_CPMU_CFG_INT | NFABRIC_CPMU_CFG_FREEZE_OVF |
           NFABRIC_CPMU_CFG_ENABLE;
    if (n < NFABRIC_CPMU_CONFIGURABLE) {
        cfg |= (uint64_t)mask << NFABRIC_CPMU_CFG_EVENTS_SHIFT;
    }
    pw(NFABRIC_CPMU_REG_COUNTER_CFG(n), cfg);
    pw(NFABRIC_CPMU_REG_COUNTER(n), 0);
}

static void win_on(unsigned i, unsigned path)
{
    nfabric_ctrl_reg_write(&c, NFABRIC_REG_WIN(i, NFABRIC_WIN_DPA_BASE),
                           WIN_DPA + 0x10000 * i, 8);
    nfabric_ctrl_reg_write(&c, NFABRIC_REG_WIN(i, NFABRIC_WIN_DPA_SIZE),
                           WIN_LEN, 8);
    nfabric_ctrl_reg_write(&c, NFABRIC_REG_WIN(i, NFABRIC_WIN_COUNTERS),
                           0x80000 + 0x10000 * i, 8);
    wr(NFABRIC_REG_WIN(i, NFABRIC_WIN_THRESHOLD), 1);
    wr(NFABRIC_REG_WIN(i, NFABRIC_WIN_CTRL),
       NFABRIC_WCTRL(path, 8, 0) | NFABRIC_WCTRL_ENABLE);
}

/* n accesses of len bytes, pseudo-random data, through window i. */
static void traffic(unsigned i, unsigned n, unsigned len, bool write)
{
    static uint32_t x = 12345;
    uint8_t buf[8];

    for (unsigned k = 0; k < n; k++) {
        for (unsigned b = 0; b < len; b++) {
            x = x * 1103515245u + 12345u;
            buf[b] = x >> 16;
        }
        nfabric_ctrl_mem_access(&c, WIN_DPA + 0x10000 * i + (k * 8) % WIN_LEN,
                                buf, len, write);
    }
}

static uint64_t stat(unsigned path, unsigned field)
{
    return rd64(NFABRIC_REG_STATS_PATH(path, field));
}

int main(void)
{
    uint64_t cap, ev, s0[4], e0, v;
    bool ok = true, a, b;

    ram = calloc(1, RAM_SIZE);
    nfabric_ctrl_init(&c, ram, RAM_SIZE, &tparams, NULL, NULL);

    cap = pr(NFABRIC_CPMU_REG_CAP);
    TAP_CHECK((cap & NFABRIC_CPMU_CAP_COUNTERS_MASK) == 27 - 1 &&
              ((cap >> NFABRIC_CPMU_CAP_WIDTH_SHIFT) & 0xff) == NFABRIC_CPMU_WIDTH &&
              ((cap >> NFABRIC_CPMU_CAP_EVCAPS_SHIFT) & 0x1f) ==
              NFABRIC_CPMU_NUM_GROUPS - 1 &&
              (cap & NFABRIC_CPMU_CAP_FREEZE) &&
              (cap & NFABRIC_CPMU_CAP_WRITABLE_FROZEN) &&
              !(cap & NFABRIC_CPMU_CAP_INT) && (cap >> 60) == 1,
              "CAP: 27 counters of 48 bits, 2 event capabilities, freeze, "
              "writable while frozen, version 1; no interrupt without a vector");
    nfabric_ctrl_set_cpmu_irq(&c, 9);
    cap = pr(NFABRIC_CPMU_REG_CAP);
    TAP_CHECK((cap & NFABRIC_CPMU_CAP_INT) &&
              ((cap & NFABRIC_CPMU_CAP_MSGNUM_MASK) >> 44) == 9,
              "CAP: the interrupt and its message number (9) once the owner "
              "gave one");
    for (unsigned g = 1; g <= NFABRIC_CPMU_NUM_GROUPS; g++) {
        ev = pr(NFABRIC_CPMU_REG_EVENT_CAP(g - 1));
        ok &= (ev >> 48) == NFABRIC_CPMU_VENDOR_ID &&
              ((ev >> 32) & 0xffff) == g && (uint32_t)ev != 0;
    }
    ev = pr(NFABRIC_CPMU_REG_EVENT_CAP(NFABRIC_CPMU_GROUP_REFUSALS - 1));
    TAP_CHECK(ok && (uint32_t)ev == (1u << NFABRIC_ERR_MAX) - 1 &&
              (uint32_t)pr(NFABRIC_CPMU_REG_EVENT_CAP(0)) == 0xffff,
              "event capabilities: vendor 0x1b36, group 1 (16 device events), "
              "group 2 (one bit per error code)");
    ok = true;
    for (unsigned n = 0; n < NFABRIC_CPMU_COUNTERS; n++) {
        uint64_t cfg = pr(NFABRIC_CPMU_REG_COUNTER_CFG(n));

        ok &= n < 8 ? (cfg & 3) == 2 :
              (cfg & 3) == 1 && cfg >> 59 == 1 &&
              ((cfg >> 24) & 0xffffffffu) == 1u << (n - 8);
    }
    TAP_CHECK(ok, "counters 0-7 configurable (type 2); 8-26 fixed (type 1), "
              "event capability 1, one error code's bit each");

    /* Linux's pmu_disable, then event_start for each, then pmu_enable. */
    win_on(0, NFABRIC_PATH_GBINARY);
    win_on(1, NFABRIC_PATH_GTERNARY);
    pw(NFABRIC_CPMU_REG_FREEZE, ~0ull);
    start(0, 1u << NFABRIC_CPMU_EV_WRITES(NFABRIC_PATH_GBINARY));
    start(1, 0x7u << NFABRIC_CPMU_EV_WRITE_BYTES(0));
    start(2, 1u << NFABRIC_CPMU_EV_READS(NFABRIC_PATH_GTERNARY));
    start(3, 1u << NFABRIC_CPMU_EV_REFUSED);
    start(4, 1u << NFABRIC_CPMU_EV_CONTRIB | 1u << NFABRIC_CPMU_EV_ROUND_DONE);
    start(5, 1u << NFABRIC_CPMU_EV_READ_BYTES(NFABRIC_PATH_GTERNARY));
    start(8 + NFABRIC_ERR_UNMAPPED - 1, 0);
    start(8 + NFABRIC_ERR_ROUND - 1, 0);
    TAP_CHECK(pr(NFABRIC_CPMU_REG_FREEZE) == (1u << 27) - 1,
              "FREEZE: all 1s written, the 27 counters' bits kept");
    traffic(0, 10, 8, true);
    TAP_CHECK(pr(NFABRIC_CPMU_REG_COUNTER(0)) == 0 &&
              pr(NFABRIC_CPMU_REG_COUNTER(1)) == 0,
              "frozen: accesses are not counted");
    for (unsigned f = 0; f < 4; f++) {
        s0[f] = stat(NFABRIC_PATH_GBINARY, f * 8);
    }
    e0 = rd(NFABRIC_REG_ERROR_COUNT);
    pw(NFABRIC_CPMU_REG_FREEZE, 0);
    traffic(0, 100, 8, true);
    traffic(0, 7, 4, true);
    traffic(1, 33, 8, true);
    traffic(1, 21, 8, false);
    traffic(1, 5, 2, false);
    wr(0xffc, 1);                                   /* UNMAPPED */
    wr(NFABRIC_REG_CTRL, 0x80);                     /* RESERVED_BITS */
    wr(NFABRIC_REG_ROUND(0, NFABRIC_ROUND_COMPLETE), 77);  /* ROUND */
    for (unsigned r = 0; r < 3; r++) {
        wr(NFABRIC_REG_ROUND(0, NFABRIC_ROUND_COMPLETE),
           rd(NFABRIC_REG_ROUND(0, NFABRIC_ROUND_SEQ)));
        rd(NFABRIC_REG_ROUND(0, NFABRIC_ROUND_STATUS));
        rd(NFABRIC_REG_ROUND(0, NFABRIC_ROUND_STATUS));  /* seen once */
        wr(NFABRIC_REG_WIN(0, NFABRIC_WIN_CMD), NFABRIC_WCMD_CLEAR);
    }
    TAP_CHECK(pr(NFABRIC_CPMU_REG_COUNTER(0)) ==
              stat(NFABRIC_PATH_GBINARY, NFABRIC_STATS_WRITES) - s0[1] &&
              pr(NFABRIC_CPMU_REG_COUNTER(0)) == 107,
              "G-Binary writes: the counter equals STATS' write count (107)");
    TAP_CHECK(pr(NFABRIC_CPMU_REG_COUNTER(1)) ==
              stat(NFABRIC_PATH_GBINARY, NFABRIC_STATS_WRITE_BYTES) - s0[3] +
              stat(NFABRIC_PATH_GTERNARY, NFABRIC_STATS_WRITE_BYTES) &&
              pr(NFABRIC_CPMU_REG_COUNTER(1)) == 828 + 264,
              "write bytes of every path: the sum of STATS' write bytes (1092)");
    TAP_CHECK(pr(NFABRIC_CPMU_REG_COUNTER(2)) ==
              stat(NFABRIC_PATH_GTERNARY, NFABRIC_STATS_READS) &&
              pr(NFABRIC_CPMU_REG_COUNTER(2)) == 26 &&
              pr(NFABRIC_CPMU_REG_COUNTER(5)) ==
              stat(NFABRIC_PATH_GTERNARY, NFABRIC_STATS_READ_BYTES) &&
              pr(NFABRIC_CPMU_REG_COUNTER(5)) == 178,
              "G-Ternary reads and read bytes equal STATS (26, 178)");
    TAP_CHECK(pr(NFABRIC_CPMU_REG_COUNTER(3)) == rd(NFABRIC_REG_ERROR_COUNT) - e0 &&
              pr(NFABRIC_CPMU_REG_COUNTER(3)) == 3 &&
              pr(NFABRIC_CPMU_REG_COUNTER(8 + NFABRIC_ERR_UNMAPPED - 1)) == 1 &&
              pr(NFABRIC_CPMU_REG_COUNTER(8 + NFABRIC_ERR_ROUND - 1)) == 1,
              "refusals equal ERROR_COUNT's growth (3); the fixed counters of "
              "UNMAPPED and ROUND 1 each");
    TAP_CHECK(pr(NFABRIC_CPMU_REG_COUNTER(4)) == 6,
              "rounds: 3 contributions + 3 rounds seen ALL_DONE (each once)");

    /* One code alone; a clear of the statistics moves no counter. */
    start(8 + NFABRIC_ERR_UNMAPPED - 1, 0);
    wr(0xffc, 1);
    wr(0xffc, 1);
    wr(NFABRIC_REG_CTRL, 0x80);
    v = pr(NFABRIC_CPMU_REG_COUNTER(0));
    wr(NFABRIC_REG_CTRL, NFABRIC_CTRL_CLEAR_STATS | NFABRIC_CTRL_CLEAR_ERROR);
    traffic(0, 5, 8, true);
    TAP_CHECK(pr(NFABRIC_CPMU_REG_COUNTER(8 + NFABRIC_ERR_UNMAPPED - 1)) == 2 &&
              pr(NFABRIC_CPMU_REG_COUNTER(0)) == v + 5 &&
              stat(NFABRIC_PATH_GBINARY, NFABRIC_STATS_WRITES) == 5,
              "refusals of UNMAPPED alone (2); CLEAR_STATS zeroes STATS, "
              "the counter goes on (+5)");

    /* Overflow: near the top, freeze on overflow, the message once. */
    pw(NFABRIC_CPMU_REG_COUNTER(0), (1ull << NFABRIC_CPMU_WIDTH) - 3);
    traffic(0, 5, 8, true);
    v = pr(NFABRIC_CPMU_REG_OVERFLOW);      /* a read notices it first */
    a = nfabric_ctrl_cpmu_check(&c);
    b = nfabric_ctrl_cpmu_check(&c);
    TAP_CHECK(v == 1 && a && !b && pr(NFABRIC_CPMU_REG_OVERFLOW) == 1 &&
              pr(NFABRIC_CPMU_REG_COUNTER(0)) == 2 &&
              pr(NFABRIC_CPMU_REG_FREEZE) == (1u << 27) - 1,
              "2^48 - 3 + 5 events: wraps to 2, OVERFLOW bit 0 (seen by a "
              "read), one message after it, every counter frozen");
    v = pr(NFABRIC_CPMU_REG_COUNTER(1));
    traffic(0, 4, 8, true);
    TAP_CHECK(pr(NFABRIC_CPMU_REG_COUNTER(1)) == v &&
              pr(NFABRIC_CPMU_REG_COUNTER(0)) == 2,
              "frozen by the overflow: nothing counts");
    pw(NFABRIC_CPMU_REG_OVERFLOW, 1);
    pw(NFABRIC_CPMU_REG_FREEZE, 0);
    traffic(0, 4, 8, true);
    TAP_CHECK(pr(NFABRIC_CPMU_REG_OVERFLOW) == 0 &&
              pr(NFABRIC_CPMU_REG_COUNTER(0)) == 6 &&
              !nfabric_ctrl_cpmu_check(&c),
              "OVERFLOW written back (1s clear), unfrozen: counts on (6)");
    nfabric_ctrl_cpmu_write(&c, NFABRIC_CPMU_REG_COUNTER(7) + 4, 0x1234, 4);
    nfabric_ctrl_cpmu_write(&c, NFABRIC_CPMU_REG_COUNTER(7), 0x5678, 4);
    TAP_CHECK(pr(NFABRIC_CPMU_REG_COUNTER(7)) == 0x123400005678ull &&
              nfabric_ctrl_cpmu_read(&c, NFABRIC_CPMU_REG_COUNTER(7) + 4, 4) ==
              0x1234,
              "a counter's 32-bit halves, written and read apart");

    /* Refused: bad configurations, read-only registers, bad sizes. */
    v = pr(NFABRIC_CPMU_REG_COUNTER_CFG(2));
    e0 = rd(NFABRIC_REG_ERROR_COUNT);
    pw(NFABRIC_CPMU_REG_COUNTER_CFG(2),
       1ull << NFABRIC_CPMU_CFG_GROUP_SHIFT |
       1ull << NFABRIC_CPMU_CFG_EVENTS_SHIFT | NFABRIC_CPMU_CFG_ENABLE);
    a = rd(NFABRIC_REG_LAST_ERROR) == NFABRIC_ERR_RESERVED_BITS;
    pw(NFABRIC_CPMU_REG_COUNTER_CFG(2),
       0x10000ull << NFABRIC_CPMU_CFG_EVENTS_SHIFT | NFABRIC_CPMU_CFG_ENABLE);
    b = rd(NFABRIC_REG_LAST_ERROR) == NFABRIC_ERR_RESERVED_BITS;
    pw(NFABRIC_CPMU_REG_COUNTER_CFG(2), v | 1ull << 4);
    TAP_CHECK(a && b && rd(NFABRIC_REG_LAST_ERROR) == NFABRIC_ERR_RESERVED_BITS &&
              pr(NFABRIC_CPMU_REG_COUNTER_CFG(2)) == v &&
              rd(NFABRIC_REG_ERROR_COUNT) == e0 + 3,
              "a configurable counter naming event capability 1 (the fixed "
              "counters'), an event it lacks, a reserved bit: RESERVED_BITS, "
              "configuration unchanged");
    v = pr(NFABRIC_CPMU_REG_COUNTER_CFG(9));
    pw(NFABRIC_CPMU_REG_COUNTER_CFG(9), v | 0xfull << NFABRIC_CPMU_CFG_EVENTS_SHIFT |
       NFABRIC_CPMU_CFG_ENABLE);
    TAP_CHECK(pr(NFABRIC_CPMU_REG_COUNTER_CFG(9)) == (v | NFABRIC_CPMU_CFG_ENABLE),
              "a fixed counter's events and event capability are read-only: "
              "a write there is ignored, its enable taken");
    pw(NFABRIC_CPMU_REG_CAP, 0);
    a = rd(NFABRIC_REG_LAST_ERROR) == NFABRIC_ERR_READONLY;
    pw(0x800, 1);
    b = rd(NFABRIC_REG_LAST_ERROR) == NFABRIC_ERR_UNMAPPED;
    nfabric_ctrl_cpmu_read(&c, 0x3, 2);
    TAP_CHECK(a && b && rd(NFABRIC_REG_LAST_ERROR) == NFABRIC_ERR_ACCESS &&
              pr(NFABRIC_CPMU_REG_CAP) == cap && pr(0x800) == 0 &&
              nfabric_ctrl_cpmu_read(&c, NFABRIC_CPMU_SIZE, 8) == 0,
              "CAP written: READONLY; an undefined offset: UNMAPPED, reads 0; "
              "a 2-byte read: ACCESS; past the block: refused");

    nfabric_ctrl_reset(&c);
    ok = pr(NFABRIC_CPMU_REG_FREEZE) == 0 && pr(NFABRIC_CPMU_REG_OVERFLOW) == 0;
    for (unsigned n = 0; n < NFABRIC_CPMU_COUNTERS; n++) {
        ok &= pr(NFABRIC_CPMU_REG_COUNTER(n)) == 0 &&
              (pr(NFABRIC_CPMU_REG_COUNTER_CFG(n)) & NFABRIC_CPMU_CFG_ENABLE) == 0;
    }
    TAP_CHECK(ok && pr(NFABRIC_CPMU_REG_CAP) == cap &&
              !nfabric_ctrl_cpmu_ticking(&c),
              "reset: counters, configurations, freeze and overflow 0; the "
              "message number kept; nothing ticking");
    free(ram);
    return tap_done();
}
