/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * NEURON-Fabric controller model: the CXL PMU (register version 1.9, CXL
 * r3.1 8.2.7; docs/registers.md "The CXL PMU").  A head's CPMU register
 * block: its capability and two event capability registers, eight
 * configurable counters over the device's events (event capability 0),
 * a fixed-function counter per error code (event capability 1), the
 * freeze and overflow status registers, and the overflow message.
 *
 * The events themselves are counted where they happen, into total[]
 * (nfabric_cpmu_count() and nfabric_cpmu_round() in nfabric_ctrl_int.h:
 * the access path, refusals, ROUND_COMPLETE, ROUND_STATUS).  A counter
 * does not follow each event: it is value[n] plus what the total of the
 * events it selects grew by since seen[n], while it runs (enabled, not
 * frozen).  fold() brings value[n] up to date before anything that changes
 * what a counter counts (its configuration, the freeze, a write of it)
 * and whenever overflow is looked for: a counter that went past
 * 2^NFABRIC_CPMU_WIDTH - 1 wraps, sets its overflow bit, asks for the
 * message if its configuration says so and freezes every counter if it
 * says that.  Overflow is therefore seen at the next access of the block
 * or at the owner's next look (nfabric_ctrl_cpmu_check(), every 100 ms
 * while a counter could overflow); events after the wrap and before that
 * look are counted (the value goes on from 0), none is lost.
 *
 * Pure C11.  Calls the base (nfabric_head.c) for refused writes.
 */
#include <inttypes.h>
#include <string.h>

#include "hw/mem/nfabric_ctrl.h"
#include "nfabric_ctrl_int.h"

#define NFABRIC_CPMU_VALUE_MASK     ((1ull << NFABRIC_CPMU_WIDTH) - 1)
#define NFABRIC_CPMU_ALL            ((1ull << NFABRIC_CPMU_COUNTERS) - 1)
/* The CXL PMU version the capability register reports (r3.0 and later). */
#define NFABRIC_CPMU_VERSION        1

#define NFABRIC_X_CPMU_MASK_(name, gid, str, mask) [(gid) - 1] = (mask),
static const uint32_t nfabric_cpmu_supported[NFABRIC_CPMU_NUM_GROUPS] = {
    NFABRIC_CPMU_GROUPS(NFABRIC_X_CPMU_MASK_)
};

/* Reset: counters, totals and registers zero; the message number kept. */
void nfabric_cpmu_reset(NFabricCtrl *s)
{
    uint32_t msgnum = s->cpmu.msgnum;

    memset(&s->cpmu, 0, sizeof(s->cpmu));
    s->cpmu.msgnum = msgnum;
}

void nfabric_ctrl_set_cpmu_irq(NFabricCtrl *s, uint32_t msgnum)
{
    s->cpmu.msgnum = msgnum <= 15 ? msgnum : 0;
}

static unsigned nfabric_cpmu_group(uint64_t cfg)
{
    return (cfg & NFABRIC_CPMU_CFG_GROUP_MASK) >> NFABRIC_CPMU_CFG_GROUP_SHIFT;
}

static uint32_t nfabric_cpmu_events(uint64_t cfg)
{
    return (cfg & NFABRIC_CPMU_CFG_EVENTS_MASK) >> NFABRIC_CPMU_CFG_EVENTS_SHIFT;
}

/*
 * Counter n's configuration as it reads: a configurable counter's as
 * written; a fixed counter's control bits as written, its type, event
 * capability (1) and event (its error code's bit) its own.
 */
static uint64_t nfabric_cpmu_cfg(const NFabricCpmu *c, unsigned n)
{
    unsigned k = n - NFABRIC_CPMU_CONFIGURABLE;

    if (n < NFABRIC_CPMU_CONFIGURABLE) {
        return c->cfg[n] | NFABRIC_CPMU_CFG_TYPE_CONFIGURABLE;
    }
    return (c->cfg[n] & NFABRIC_CPMU_CFG_CONTROL) |
           NFABRIC_CPMU_CFG_TYPE_FIXED |
           (uint64_t)(NFABRIC_CPMU_GROUP_REFUSALS - 1) <<
           NFABRIC_CPMU_CFG_GROUP_SHIFT |
           (uint64_t)(1u << k) << NFABRIC_CPMU_CFG_EVENTS_SHIFT;
}

/* The total of the events counter n selects (its configuration checked). */
static uint64_t nfabric_cpmu_total(const NFabricCpmu *c, unsigned n)
{
    uint64_t cfg = nfabric_cpmu_cfg(c, n);
    unsigned g = nfabric_cpmu_group(cfg);
    uint32_t ev = nfabric_cpmu_events(cfg);
    uint64_t sum = 0;

    if (g >= NFABRIC_CPMU_NUM_GROUPS) {
        return 0;
    }
    for (unsigned b = 0; b < 32; b++) {
        if (ev & (1u << b)) {
            sum += c->total[g][b];
        }
    }
    return sum;
}

static bool nfabric_cpmu_runs(const NFabricCpmu *c, unsigned n)
{
    return (c->cfg[n] & NFABRIC_CPMU_CFG_ENABLE) && !(c->freeze & (1ull << n));
}

/*
 * Bring every counter up to date (see above); a counter that asks for the
 * message and overflowed leaves it due (irq_due) until the owner looks.
 */
static void nfabric_cpmu_fold(NFabricCpmu *c)
{
    bool irq = false, freeze = false;

    for (unsigned n = 0; n < NFABRIC_CPMU_COUNTERS; n++) {
        uint64_t total = nfabric_cpmu_total(c, n), v;

        if (nfabric_cpmu_runs(c, n)) {
            v = c->value[n] + (total - c->seen[n]);
            if (v > NFABRIC_CPMU_VALUE_MASK) {
                c->overflow |= 1ull << n;
                irq |= !!(c->cfg[n] & NFABRIC_CPMU_CFG_INT);
                freeze |= !!(c->cfg[n] & NFABRIC_CPMU_CFG_FREEZE_OVF);
            }
            c->value[n] = v & NFABRIC_CPMU_VALUE_MASK;
        }
        c->seen[n] = total;
    }
    if (freeze) {
        c->freeze = NFABRIC_CPMU_ALL;
    }
    c->irq_due |= irq;
}

bool nfabric_ctrl_cpmu_check(NFabricCtrl *s)
{
    bool due;

    nfabric_cpmu_fold(&s->cpmu);
    due = s->cpmu.irq_due;
    s->cpmu.irq_due = false;
    return due && s->cpmu.msgnum;
}

bool nfabric_ctrl_cpmu_ticking(const NFabricCtrl *s)
{
    for (unsigned n = 0; n < NFABRIC_CPMU_COUNTERS; n++) {
        if (nfabric_cpmu_runs(&s->cpmu, n)) {
            return true;
        }
    }
    return false;
}

static uint64_t nfabric_cpmu_cap(const NFabricCtrl *s)
{
    uint64_t cap = (uint64_t)(NFABRIC_CPMU_COUNTERS - 1) |
        (uint64_t)NFABRIC_CPMU_WIDTH << NFABRIC_CPMU_CAP_WIDTH_SHIFT |
        (uint64_t)(NFABRIC_CPMU_NUM_GROUPS - 1) << NFABRIC_CPMU_CAP_EVCAPS_SHIFT |
        NFABRIC_CPMU_CAP_WRITABLE_FROZEN | NFABRIC_CPMU_CAP_FREEZE |
        (uint64_t)NFABRIC_CPMU_VERSION << NFABRIC_CPMU_CAP_VERSION_SHIFT;

    if (s->cpmu.msgnum) {
        cap |= NFABRIC_CPMU_CAP_INT |
               (uint64_t)s->cpmu.msgnum << NFABRIC_CPMU_CAP_MSGNUM_SHIFT;
    }
    return cap;
}

/* The 64-bit register at off (8-aligned), after a fold; false: none. */
static bool nfabric_cpmu_reg(NFabricCtrl *s, uint64_t off, uint64_t *val)
{
    NFabricCpmu *c = &s->cpmu;

    if (off == NFABRIC_CPMU_REG_CAP) {
        *val = nfabric_cpmu_cap(s);
    } else if (off == NFABRIC_CPMU_REG_OVERFLOW) {
        *val = c->overflow;
    } else if (off == NFABRIC_CPMU_REG_FREEZE) {
        *val = c->freeze;
    } else if (off >= NFABRIC_CPMU_REG_EVENT_CAP(0) &&
               off < NFABRIC_CPMU_REG_EVENT_CAP(NFABRIC_CPMU_NUM_GROUPS)) {
        unsigned g = (off - NFABRIC_CPMU_REG_EVENT_CAP(0)) / 8;

        *val = nfabric_cpmu_supported[g] |
               (uint64_t)(g + 1) << NFABRIC_CPMU_EVCAP_GID_SHIFT |
               (uint64_t)NFABRIC_CPMU_VENDOR_ID << NFABRIC_CPMU_EVCAP_VID_SHIFT;
    } else if (off >= NFABRIC_CPMU_REG_COUNTER_CFG(0) &&
               off < NFABRIC_CPMU_REG_COUNTER_CFG(NFABRIC_CPMU_COUNTERS)) {
        *val = nfabric_cpmu_cfg(c, (off - NFABRIC_CPMU_REG_COUNTER_CFG(0)) / 8);
    } else if (off >= NFABRIC_CPMU_REG_COUNTER(0) &&
               off < NFABRIC_CPMU_REG_COUNTER(NFABRIC_CPMU_COUNTERS)) {
        *val = c->value[(off - NFABRIC_CPMU_REG_COUNTER(0)) / 8];
    } else {
        return false;
    }
    return true;
}

static bool nfabric_cpmu_access_ok(NFabricCtrl *s, uint64_t off,
                                   unsigned size, bool write)
{
    if ((size != 4 && size != 8) || (off & (size - 1)) ||
        off >= NFABRIC_CPMU_SIZE) {
        nfabric_set_error(s, -1, NFABRIC_ERR_ACCESS, off,
                          write ? "CXL PMU: bad write size or alignment" :
                          "CXL PMU: bad read size or alignment");
        return false;
    }
    return true;
}

uint64_t nfabric_ctrl_cpmu_read(NFabricCtrl *s, uint64_t off, unsigned size)
{
    uint64_t val = 0;

    if (!nfabric_cpmu_access_ok(s, off, size, false)) {
        return 0;
    }
    nfabric_cpmu_fold(&s->cpmu);
    /* Undefined offsets (the filters: none here) read as zero. */
    nfabric_cpmu_reg(s, off & ~7ull, &val);
    return size == 8 ? val : (uint32_t)(val >> (off & 4 ? 32 : 0));
}

/*
 * Counter n's new configuration: no reserved bit; a configurable
 * counter's events of event capability 0 (capability 1 is the fixed
 * counters'), and only those it has.  A fixed counter's read-only fields
 * are ignored.
 */
static bool nfabric_cpmu_cfg_ok(NFabricCtrl *s, unsigned n, uint64_t off,
                                uint64_t val)
{
    unsigned g = nfabric_cpmu_group(val);

    if (val & ~(NFABRIC_CPMU_CFG_WRITABLE | NFABRIC_CPMU_CFG_TYPE_MASK)) {
        nfabric_set_error(s, -1, NFABRIC_ERR_RESERVED_BITS, off,
                          "CXL PMU: reserved bits set in a counter's "
                          "configuration");
        return false;
    }
    if (n >= NFABRIC_CPMU_CONFIGURABLE) {
        return true;
    }
    if (g != NFABRIC_CPMU_GROUP_DEVICE - 1 ||
        (nfabric_cpmu_events(val) & ~nfabric_cpmu_supported[g])) {
        nfabric_set_error(s, -1, NFABRIC_ERR_RESERVED_BITS, off,
                          "CXL PMU: a configurable counter's configuration "
                          "selects an event capability other than 0, or "
                          "events it does not have");
        return false;
    }
    return true;
}

void nfabric_ctrl_cpmu_write(NFabricCtrl *s, uint64_t off, uint64_t val,
                             unsigned size)
{
    NFabricCpmu *c = &s->cpmu;
    uint64_t reg = off & ~7ull, old;

    if (!nfabric_cpmu_access_ok(s, off, size, true)) {
        return;
    }
    nfabric_cpmu_fold(c);
    if (!nfabric_cpmu_reg(s, reg, &old)) {
        nfabric_set_error(s, -1, NFABRIC_ERR_UNMAPPED, off,
                          "CXL PMU: write to an undefined offset");
        return;
    }
    if (size == 4) {
        /* A half of a 64-bit register: the other half as it reads. */
        unsigned sh = off & 4 ? 32 : 0;

        val = (old & ~(0xffffffffull << sh)) | (val & 0xffffffffull) << sh;
    }
    if (reg == NFABRIC_CPMU_REG_OVERFLOW) {
        c->overflow &= ~val;
    } else if (reg == NFABRIC_CPMU_REG_FREEZE) {
        /* Bits past the counters are reserved: Linux writes all 1s. */
        c->freeze = val & NFABRIC_CPMU_ALL;
    } else if (reg >= NFABRIC_CPMU_REG_COUNTER_CFG(0) &&
               reg < NFABRIC_CPMU_REG_COUNTER_CFG(NFABRIC_CPMU_COUNTERS)) {
        unsigned n = (reg - NFABRIC_CPMU_REG_COUNTER_CFG(0)) / 8;

        if (!nfabric_cpmu_cfg_ok(s, n, off, val)) {
            return;
        }
        c->cfg[n] = val & (n < NFABRIC_CPMU_CONFIGURABLE ?
                           NFABRIC_CPMU_CFG_WRITABLE : NFABRIC_CPMU_CFG_CONTROL);
        c->seen[n] = nfabric_cpmu_total(c, n);      /* counts from now */
    } else if (reg >= NFABRIC_CPMU_REG_COUNTER(0) &&
               reg < NFABRIC_CPMU_REG_COUNTER(NFABRIC_CPMU_COUNTERS)) {
        c->value[(reg - NFABRIC_CPMU_REG_COUNTER(0)) / 8] =
            val & NFABRIC_CPMU_VALUE_MASK;
    } else {
        nfabric_set_error(s, -1, NFABRIC_ERR_READONLY, off,
                          "CXL PMU: write to a read-only register");
    }
}
