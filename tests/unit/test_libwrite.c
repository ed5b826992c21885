/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * libnfabric's nfabric_mem_write on a shared device: each head begins at
 * its share of the range and wraps around (docs/multihost.md, "Locks and
 * their cost"), and writes every byte once, as in order.  A transport of
 * this test's own stands for the device: it answers the head registers
 * and records each memory access it is asked for.
 */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "libnfabric.h"
#include "nfabric_priv.h"
#include "tap.h"

#define RAM_SIZE    (1u << 20)
#define MAX_CALLS   8

typedef struct Fake {
    unsigned index, count;
    bool shared;
    /* The device refuses accesses at or past refuse_from (0: none). */
    uint64_t refuse_from;
    uint32_t error_count, last_error;
    uint8_t ram[RAM_SIZE];
    unsigned calls;
    uint64_t dpa[MAX_CALLS], len[MAX_CALLS];
} Fake;

static uint32_t fake_rd32(void *priv, uint32_t off)
{
    Fake *f = priv;

    switch (off) {
    case NFABRIC_REG_HEAD_INFO:
        return f->index |
               f->count << NFABRIC_HEAD_INFO_COUNT_SHIFT |
               (f->shared ? NFABRIC_HEAD_INFO_SHARED : 0);
    case NFABRIC_REG_HEADS_LIVE:
        return (1u << f->count) - 1;
    case NFABRIC_REG_ERROR_COUNT:
        return f->error_count;
    case NFABRIC_REG_LAST_ERROR:
        return f->last_error;
    default:
        return 0;
    }
}

static void fake_wr32(void *priv, uint32_t off, uint32_t v)
{
    (void)priv;
    (void)off;
    (void)v;
}

static int fake_mem(void *priv, uint64_t dpa, void *buf, uint64_t len,
                    bool write)
{
    Fake *f = priv;

    if (f->calls < MAX_CALLS) {
        f->dpa[f->calls] = dpa;
        f->len[f->calls] = len;
    }
    f->calls++;
    if (dpa > RAM_SIZE || len > RAM_SIZE - dpa) {
        return -1;
    }
    if (f->refuse_from && dpa + len > f->refuse_from) {
        /* As the device: a refused store is dropped, a load reads ones. */
        f->error_count++;
        f->last_error = NFABRIC_ERR_STATE;
        if (!write) {
            memset(buf, 0xff, len);
        }
        return 0;
    }
    if (write) {
        memcpy(f->ram + dpa, buf, len);
    } else {
        memcpy(buf, f->ram + dpa, len);
    }
    return 0;
}

static void fake_close(void *priv)
{
    (void)priv;
}

static const nfabric_transport fake_transport = {
    .rd32 = fake_rd32,
    .wr32 = fake_wr32,
    .mem = fake_mem,
    .close = fake_close,
};

static Fake fake;
static uint8_t buf[64 << 10];

/* A device of count heads (shared or not) seen from head index. */
static nfabric_dev *fake_dev(unsigned index, unsigned count, bool shared)
{
    nfabric_dev *d = nfabric_new();

    memset(&fake, 0, sizeof(fake));
    fake.index = index;
    fake.count = count;
    fake.shared = shared;
    d->xport = &fake_transport;
    d->xport_priv = &fake;
    d->version = NFABRIC_VERSION_MAJOR << 16 | 1;
    d->dev_mem_size = RAM_SIZE;
    return d;
}

/* nfabric_mem_write of len bytes at dpa; whether every byte landed once. */
static bool write_all(nfabric_dev *d, uint64_t dpa, uint64_t len, int *rc)
{
    for (uint64_t k = 0; k < len; k++) {
        buf[k] = (uint8_t)(k * 7 + 1);
    }
    *rc = nfabric_mem_write(d, dpa, buf, len);
    return *rc == 0 && !memcmp(fake.ram + dpa, buf, len) &&
           (dpa == 0 || fake.ram[dpa - 1] == 0) &&
           (dpa + len == RAM_SIZE || fake.ram[dpa + len] == 0);
}

/*
 * Head index of count (shared or not) writes len bytes at 0x1000: in one
 * transfer from the range's start, every byte landed?
 */
static bool in_order(unsigned index, unsigned count, bool shared,
                     uint64_t len)
{
    nfabric_dev *d = fake_dev(index, count, shared);
    int rc;
    bool same = write_all(d, 0x1000, len, &rc);

    nfabric_free(d);
    return same && fake.calls == 1 && fake.dpa[0] == 0x1000 &&
           fake.len[0] == len;
}

int main(void)
{
    nfabric_dev *d;
    bool same;
    int rc;

    TAP_CHECK(in_order(0, 1, false, 8192),
              "a device that is not shared: one write in order");
    TAP_CHECK(in_order(0, 2, true, 8192),
              "head 0 of 2 begins at the range's start");

    d = fake_dev(1, 2, true);
    same = write_all(d, 0x1000, 8192, &rc);
    TAP_CHECK(same && fake.calls == 2 &&
              fake.dpa[0] == 0x2000 && fake.len[0] == 4096 &&
              fake.dpa[1] == 0x1000 && fake.len[1] == 4096,
              "head 1 of 2 begins half-way and wraps, every byte written "
              "(%u accesses: 0x%" PRIx64 "+%" PRIu64 ")", fake.calls,
              fake.dpa[0], fake.len[0]);
    /* The head registers are read once per open device. */
    fake.shared = false;
    same = write_all(d, 0x1000, 8192, &rc);
    TAP_CHECK(same && fake.calls == 4 && fake.dpa[2] == 0x2000,
              "the head's place is read once");
    nfabric_free(d);

    d = fake_dev(3, 4, true);
    same = write_all(d, 0x1003, 10001, &rc);
    TAP_CHECK(same && fake.calls == 2 && fake.dpa[0] % 8 == 0 &&
              fake.dpa[0] > 0x1003 + 10001 / 2 &&
              fake.dpa[0] + fake.len[0] == 0x1003 + 10001 &&
              fake.dpa[1] == 0x1003 && fake.dpa[1] + fake.len[1] == fake.dpa[0],
              "head 3 of 4, an unaligned range: begins at an 8-byte boundary "
              "three quarters in, every byte written once");
    nfabric_free(d);

    TAP_CHECK(in_order(1, 2, true, 4095),
              "a write of less than 4096 bytes stays in order");
    d = fake_dev(1, 2, true);
    rc = nfabric_mem_write(d, RAM_SIZE - 4096, buf, 8192);
    TAP_CHECK(rc != 0 && fake.calls == 1 &&
              fake.dpa[0] == RAM_SIZE - 4096 && fake.len[0] == 8192,
              "a range past device memory is refused as a whole (rc %d)", rc);
    nfabric_free(d);

    TAP_CHECK(in_order(5, 2, true, 8192),
              "a head index the device cannot have is taken as head 0");

    /*
     * A store the device refused (a peer stopped inside its stripe): the
     * write returns the device's error, so that a contribution it did not
     * count never passes for one it did; a refused load too.
     */
    d = fake_dev(0, 2, true);
    fake.refuse_from = 0x2000;
    rc = nfabric_mem_write(d, 0x1000, buf, 8192);
    TAP_CHECK(rc == NFABRIC_ERR_STATE && fake.error_count == 1,
              "a write the device refused part of returns its error (rc %d)",
              rc);
    rc = nfabric_mem_read(d, 0x1000, buf, 8192);
    TAP_CHECK(rc == NFABRIC_ERR_STATE && fake.error_count == 2,
              "a read the device refused part of returns its error (rc %d)",
              rc);
    rc = nfabric_mem_write(d, 0x1000, buf, 4096);
    TAP_CHECK(rc == 0 && fake.error_count == 2,
              "a write the device served returns 0");
    nfabric_free(d);
    return tap_done();
}
