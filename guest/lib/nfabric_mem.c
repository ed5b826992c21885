/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * libnfabric: device memory.  It owns the mapping's addresses
 * (nfabric_dpa_ptr, nfabric_counter) and device memory as accesses
 * through any transport (nfabric_mem_write, nfabric_mem_read), with where
 * a head of a shared device begins a write.  It may call libnfabric.c
 * (nfl_fail), nfabric_round.c (nfabric_heads_read), nfabric_reg.c (the
 * device's verdict: ERROR_COUNT, nfl_judged) and a transport's functions
 * through its table.
 */
#include "nfabric_priv.h"

#include <inttypes.h>
#include <string.h>

void *nfabric_dpa_ptr(const nfabric_dev *d, uint64_t dpa, uint64_t len)
{
    if (!d->mem || dpa < d->dpa_base || dpa - d->dpa_base > d->mem_size ||
        len > d->mem_size - (dpa - d->dpa_base)) {
        return NULL;
    }
    return d->mem + (dpa - d->dpa_base);
}

int32_t nfabric_counter(const nfabric_dev *d, uint64_t counters,
                        unsigned width, uint64_t e)
{
    const volatile uint8_t *p = nfabric_dpa_ptr(d, counters + e * (width / 8), width / 8);

    if (!p) {
        return 0;
    }
    if (width == 16) {
        uint16_t v = (uint16_t)(p[0] | p[1] << 8);

        return (int16_t)v;
    }
    return (int8_t)p[0];
}

/* ---- device memory as accesses (any transport) ---------------------------- */

/*
 * len bytes at DPA dpa through the transport, or through the mapping as
 * naturally aligned accesses of at most 8 bytes, as a CPU's copy does.
 */
static int mem_xfer(nfabric_dev *d, uint64_t dpa, uint8_t *b, uint64_t len,
                    bool write)
{
    volatile uint8_t *p;

    if (nfl_by_calls(d)) {
        return d->xport->mem(d->xport_priv, dpa, b, len, write) ?
               nfl_fail(d, NFLIB_EINVAL, "DPA 0x%" PRIx64 "+0x%" PRIx64 " is not "
                    "device memory", dpa, len) : 0;
    }
    p = nfabric_dpa_ptr(d, dpa, len);
    if (!p) {
        return nfl_fail(d, NFLIB_EINVAL, "DPA 0x%" PRIx64 "+0x%" PRIx64 " is not "
                    "mapped", dpa, len);
    }
    while (len) {
        uint64_t n = 8 - (dpa & 7);

        n = n > len ? len : n;
        if (n == 8) {
            /* The aligned words: one 8-byte access each, nothing else. */
            volatile uint64_t *q = (volatile uint64_t *)p;
            uint64_t v;

            n = len / 8 * 8;
            for (uint64_t k = 0; k < n / 8; k++) {
                if (write) {
                    memcpy(&v, b + 8 * k, 8);
                    q[k] = v;
                } else {
                    v = q[k];
                    memcpy(b + 8 * k, &v, 8);
                }
            }
        } else if (n == 4 && !(dpa & 3)) {
            uint32_t v;

            if (write) {
                memcpy(&v, b, 4);
                *(volatile uint32_t *)p = v;
            } else {
                v = *(volatile uint32_t *)p;
                memcpy(b, &v, 4);
            }
        } else {
            for (unsigned k = 0; k < n; k++) {
                if (write) {
                    p[k] = b[k];
                } else {
                    b[k] = p[k];
                }
            }
        }
        p += n;
        b += n;
        dpa += n;
        len -= n;
    }
    return 0;
}

/*
 * Where a write of len bytes at dpa begins, in bytes from dpa: on a device
 * that several heads share, head h of n begins at h/n of it (at an 8-byte
 * boundary) and wraps around, so that heads writing the same range at the
 * same time, as the ranks of a job do, are at different places of it:
 * they take different stripes and counter lines instead of each other's
 * (docs/multihost.md, "Locks and their cost").  0 for a write of less
 * than NFLIB_STAGGER_MIN bytes, a device that is not shared, or a range
 * that is not all device memory (refused as a whole, nothing written).
 */
#define NFLIB_STAGGER_MIN   4096u

static uint64_t write_start(nfabric_dev *d, uint64_t dpa, uint64_t len)
{
    uint64_t start;

    if (len < NFLIB_STAGGER_MIN || dpa > d->dev_mem_size ||
        len > d->dev_mem_size - dpa ||
        (!nfl_by_calls(d) && !nfabric_dpa_ptr(d, dpa, len))) {
        return 0;
    }
    if (!d->heads_known) {
        nfabric_heads h;

        if (nfabric_heads_read(d, &h) == 0 && h.shared && h.count > 1 &&
            h.index < h.count) {
            d->head_index = h.index;
            d->head_count = h.count;
        } else {
            d->head_index = 0;
            d->head_count = 1;
        }
        d->heads_known = true;
    }
    if (d->head_count <= 1 || !d->head_index) {
        return 0;
    }
    start = len / d->head_count * d->head_index;
    start = ((dpa + start) & ~7ull) - dpa;
    return start < len ? start : 0;
}

/*
 * Posted windows (register version 1.7, docs/registers.md): their data is
 * this head's staging, which the bytes reach as plain stores and loads;
 * what [dpa, dpa + len) covers of each is then posted (a write: POST
 * after the stores) or fetched (a read: FETCH before the loads).  The
 * table is read afresh each time (ENABLED_MASK, then each enabled
 * window's CTRL, and a posted one's range): another process or head may
 * have changed it.  A doorbell names at most NFLIB_DOORBELL_MAX bytes.
 */
#define NFLIB_DOORBELL_MAX  0x80000000u

static void ring(nfabric_dev *d, unsigned i, uint64_t off, uint64_t len,
                 bool post)
{
    while (len) {
        uint64_t n = len < NFLIB_DOORBELL_MAX ? len : NFLIB_DOORBELL_MAX;

        nfabric_wr32(d, NFABRIC_REG_POST(i, NFABRIC_STAGE_OFF), (uint32_t)off);
        nfabric_wr32(d, NFABRIC_REG_POST(i, post ? NFABRIC_POST : NFABRIC_FETCH),
                     (uint32_t)n);
        off += n;
        len -= n;
    }
}

static int doorbell(nfabric_dev *d, unsigned i, uint64_t off, uint64_t len,
                    bool post)
{
    uint32_t before;
    int rc = nfl_check_win(d, i);

    if (rc) {
        return rc;
    }
    if (!len || off > UINT32_MAX || len > (uint64_t)UINT32_MAX + 1 - off) {
        return nfl_fail(d, NFABRIC_ERR_RANGE, "window %u: a doorbell range "
                        "of %" PRIu64 " bytes at +0x%" PRIx64 " (empty or "
                        "past 4 GiB)", i, len, off);
    }
    before = nfabric_rd32(d, NFABRIC_REG_ERROR_COUNT);
    ring(d, i, off, len, post);
    return nfl_judged(d, UINT32_MAX, before, post ? "POST" : "FETCH");
}

int nfabric_window_post(nfabric_dev *d, unsigned i, uint64_t off, uint64_t len)
{
    return doorbell(d, i, off, len, true);
}

int nfabric_window_fetch(nfabric_dev *d, unsigned i, uint64_t off,
                         uint64_t len)
{
    return doorbell(d, i, off, len, false);
}

static uint64_t write_start(nfabric_dev *d, uint64_t dpa, uint64_t len);

static void posted_doorbells(nfabric_dev *d, uint64_t dpa, uint64_t len,
                             bool post)
{
    uint32_t mask;

    if (!nfl_has_regs(d) || (d->version & 0xffff) < 7 ||
        d->version >> 16 != NFABRIC_VERSION_MAJOR || !len) {
        return;
    }
    mask = nfabric_rd32(d, NFABRIC_REG_ENABLED_MASK);
    for (unsigned i = 0; mask && i < nfabric_num_windows(d); i++, mask >>= 1) {
        uint64_t base, size, a, b, start;

        if (!(mask & 1) ||
            !(nfabric_rd32(d, NFABRIC_REG_WIN(i, NFABRIC_WIN_CTRL)) &
              NFABRIC_WCTRL_POSTED)) {
            continue;
        }
        base = nfabric_rd64(d, NFABRIC_REG_WIN(i, NFABRIC_WIN_DPA_BASE));
        size = nfabric_rd64(d, NFABRIC_REG_WIN(i, NFABRIC_WIN_DPA_SIZE));
        a = dpa > base ? dpa : base;
        b = dpa + len < base + size ? dpa + len : base + size;
        if (a >= b) {
            continue;
        }
        /* Heads posting one range at once begin at different stripes. */
        start = post ? write_start(d, a, b - a) : 0;
        ring(d, i, a + start - base, b - a - start, post);
        ring(d, i, a - base, start, post);
    }
}

/*
 * The device's verdict on the accesses just made: an access it refused
 * (a shared state that failed, a stripe a stopped head held past the
 * bound, memory outside this head's job) moved ERROR_COUNT; its error
 * (LAST_ERROR) is returned, so that a contribution the device did not
 * count never passes for one it did.  Without registers, nothing to ask.
 */
static int mem_judged(nfabric_dev *d, bool regs, uint32_t before, int rc,
                      const char *what)
{
    return rc || !regs ? rc : nfl_judged(d, UINT32_MAX, before, what);
}

int nfabric_mem_write(nfabric_dev *d, uint64_t dpa, const void *buf,
                      uint64_t len)
{
    uint64_t start = write_start(d, dpa, len);
    uint8_t *b = (uint8_t *)buf;
    bool regs = nfl_has_regs(d);
    uint32_t before = regs ? nfabric_rd32(d, NFABRIC_REG_ERROR_COUNT) : 0;
    int rc;

    rc = mem_xfer(d, dpa + start, b + start, len - start, true);
    if (!rc && start) {
        rc = mem_xfer(d, dpa, b, start, true);
    }
    if (!rc) {
        posted_doorbells(d, dpa, len, true);
    }
    return mem_judged(d, regs, before, rc, "a write of device memory");
}

int nfabric_mem_read(nfabric_dev *d, uint64_t dpa, void *buf, uint64_t len)
{
    bool regs = nfl_has_regs(d);
    uint32_t before = regs ? nfabric_rd32(d, NFABRIC_REG_ERROR_COUNT) : 0;

    posted_doorbells(d, dpa, len, false);
    return mem_judged(d, regs, before, mem_xfer(d, dpa, buf, len, false),
                      "a read of device memory");
}

