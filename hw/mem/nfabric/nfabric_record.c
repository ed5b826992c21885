/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * NEURON-Fabric access records (see include/hw/mem/nfabric_record.h).
 */
#include <string.h>

#include "hw/mem/nfabric_record.h"

static void put16(uint8_t *b, uint16_t v)
{
    b[0] = (uint8_t)v;
    b[1] = (uint8_t)(v >> 8);
}

static void put32(uint8_t *b, uint32_t v)
{
    for (int i = 0; i < 4; i++) {
        b[i] = (uint8_t)(v >> (8 * i));
    }
}

static void put64(uint8_t *b, uint64_t v)
{
    for (int i = 0; i < 8; i++) {
        b[i] = (uint8_t)(v >> (8 * i));
    }
}

static uint16_t get16(const uint8_t *b)
{
    return (uint16_t)(b[0] | b[1] << 8);
}

static uint32_t get32(const uint8_t *b)
{
    uint32_t v = 0;

    for (int i = 3; i >= 0; i--) {
        v = v << 8 | b[i];
    }
    return v;
}

static uint64_t get64(const uint8_t *b)
{
    uint64_t v = 0;

    for (int i = 7; i >= 0; i--) {
        v = v << 8 | b[i];
    }
    return v;
}

const char *nfabric_record_strerror(int err)
{
    switch (err) {
    case 0:
        return "no error";
    case NFABRIC_RECORD_EIO:
        return "read or write failed";
    case NFABRIC_RECORD_EMAGIC:
        return "not a NEURON-Fabric record file (bad magic)";
    case NFABRIC_RECORD_EVERSION:
        return "unsupported record version or sizes";
    case NFABRIC_RECORD_ETRUNC:
        return "file ends inside a header or record";
    case NFABRIC_RECORD_EBAD:
        return "bad field in a record or header";
    case NFABRIC_RECORD_EPARAMS:
        return "timing parameters in the header out of range";
    default:
        return "unknown error";
    }
}

void nfabric_record_encode_header(uint8_t buf[NFABRIC_RECORD_HEADER_SIZE],
                                 const NFabricTimingParams *p,
                                 unsigned flags)
{
    memset(buf, 0, NFABRIC_RECORD_HEADER_SIZE);
    put32(buf + 0, NFABRIC_RECORD_MAGIC);
    put16(buf + 4, NFABRIC_RECORD_VERSION);
    put16(buf + 6, NFABRIC_RECORD_HEADER_SIZE);
    put16(buf + 8, NFABRIC_RECORD_SIZE);
    put16(buf + 10, (uint16_t)(flags & NFABRIC_RECORD_F_VALID));
    put32(buf + 12, p->clock_mhz);
    put32(buf + 16, p->depth);
    put32(buf + 20, p->service_ns);
    put32(buf + 24, p->link_mbps);
}

int nfabric_record_decode_header(const uint8_t buf[NFABRIC_RECORD_HEADER_SIZE],
                                NFabricRecordHeader *h)
{
    if (get32(buf) != NFABRIC_RECORD_MAGIC) {
        return NFABRIC_RECORD_EMAGIC;
    }
    h->version = get16(buf + 4);
    h->header_size = get16(buf + 6);
    h->record_size = get16(buf + 8);
    h->flags = get16(buf + 10);
    h->params.clock_mhz = get32(buf + 12);
    h->params.depth = get32(buf + 16);
    h->params.service_ns = get32(buf + 20);
    h->params.link_mbps = get32(buf + 24);
    if (h->version != NFABRIC_RECORD_VERSION ||
        h->header_size < NFABRIC_RECORD_HEADER_SIZE ||
        h->record_size < NFABRIC_RECORD_SIZE) {
        return NFABRIC_RECORD_EVERSION;
    }
    if ((h->flags & ~NFABRIC_RECORD_F_VALID) || get32(buf + 28) != 0) {
        return NFABRIC_RECORD_EBAD;
    }
    if (nfabric_timing_check(&h->params)) {
        return NFABRIC_RECORD_EPARAMS;
    }
    return 0;
}

void nfabric_record_encode(uint8_t buf[NFABRIC_RECORD_SIZE],
                          const NFabricRecord *r)
{
    put64(buf + 0, r->arrival_ps);
    put32(buf + 8, r->bytes);
    buf[12] = r->path;
    buf[13] = r->kind;
    put16(buf + 14, 0);
}

int nfabric_record_decode(const uint8_t buf[NFABRIC_RECORD_SIZE],
                         NFabricRecord *r)
{
    r->arrival_ps = get64(buf + 0);
    r->bytes = get32(buf + 8);
    r->path = buf[12];
    r->kind = buf[13];
    if (r->kind >= NFABRIC_RECORD_NUM_KINDS || get16(buf + 14) != 0) {
        return NFABRIC_RECORD_EBAD;
    }
    if (r->kind == NFABRIC_RECORD_CLEAR) {
        if (r->arrival_ps || r->bytes || r->path) {
            return NFABRIC_RECORD_EBAD;
        }
    } else if (r->path >= NFABRIC_NUM_PATHS) {
        return NFABRIC_RECORD_EBAD;
    }
    return 0;
}

int nfabric_record_write_header(FILE *f, const NFabricTimingParams *p,
                               unsigned flags)
{
    uint8_t buf[NFABRIC_RECORD_HEADER_SIZE];

    if (nfabric_timing_check(p)) {
        return NFABRIC_RECORD_EPARAMS;
    }
    if (flags & ~NFABRIC_RECORD_F_VALID) {
        return NFABRIC_RECORD_EBAD;
    }
    nfabric_record_encode_header(buf, p, flags);
    return fwrite(buf, sizeof(buf), 1, f) == 1 ? 0 : NFABRIC_RECORD_EIO;
}

int nfabric_record_write(FILE *f, const NFabricRecord *r)
{
    uint8_t buf[NFABRIC_RECORD_SIZE];
    NFabricRecord check;

    nfabric_record_encode(buf, r);
    if (nfabric_record_decode(buf, &check)) {
        return NFABRIC_RECORD_EBAD;
    }
    return fwrite(buf, sizeof(buf), 1, f) == 1 ? 0 : NFABRIC_RECORD_EIO;
}

int nfabric_record_write_access(FILE *f, uint64_t arrival_ps, unsigned path,
                               uint64_t bytes, bool write)
{
    NFabricRecord r = {
        .arrival_ps = arrival_ps,
        .bytes = (uint32_t)bytes,
        .path = (uint8_t)path,
        .kind = write ? NFABRIC_RECORD_WRITE : NFABRIC_RECORD_READ,
    };

    if (bytes > UINT32_MAX || path >= NFABRIC_NUM_PATHS) {
        return NFABRIC_RECORD_EBAD;
    }
    return nfabric_record_write(f, &r);
}

int nfabric_record_write_clear(FILE *f)
{
    NFabricRecord r = { .kind = NFABRIC_RECORD_CLEAR };

    return nfabric_record_write(f, &r);
}

/* Read exactly n bytes: 1, 0 at a clean end of file, or an error. */
static int read_all(FILE *f, uint8_t *buf, size_t n)
{
    size_t got = fread(buf, 1, n, f);

    if (got == n) {
        return 1;
    }
    if (ferror(f)) {
        return NFABRIC_RECORD_EIO;
    }
    return got == 0 ? 0 : NFABRIC_RECORD_ETRUNC;
}

/* Skip n bytes of a larger header or record written by a later version. */
static int skip(FILE *f, size_t n)
{
    uint8_t buf[64];

    while (n) {
        size_t k = n < sizeof(buf) ? n : sizeof(buf);
        int r = read_all(f, buf, k);

        if (r <= 0) {
            return r < 0 ? r : NFABRIC_RECORD_ETRUNC;
        }
        n -= k;
    }
    return 1;
}

int nfabric_record_reader_open(NFabricRecordReader *rd, FILE *f)
{
    uint8_t buf[NFABRIC_RECORD_HEADER_SIZE];
    int r;

    memset(rd, 0, sizeof(*rd));
    rd->f = f;
    r = read_all(f, buf, sizeof(buf));
    if (r <= 0) {
        return r < 0 ? r : NFABRIC_RECORD_ETRUNC;
    }
    r = nfabric_record_decode_header(buf, &rd->h);
    if (r) {
        return r;
    }
    r = skip(f, rd->h.header_size - NFABRIC_RECORD_HEADER_SIZE);
    return r < 0 ? r : 0;
}

int nfabric_record_read(NFabricRecordReader *rd, NFabricRecord *rec)
{
    uint8_t buf[NFABRIC_RECORD_SIZE];
    int r = read_all(rd->f, buf, sizeof(buf));

    if (r <= 0) {
        return r;
    }
    r = skip(rd->f, rd->h.record_size - NFABRIC_RECORD_SIZE);
    if (r < 0) {
        return r;
    }
    r = nfabric_record_decode(buf, rec);
    if (r) {
        return r;
    }
    rd->records++;
    return 1;
}

void nfabric_record_apply(NFabricTiming *t, const NFabricRecord *r)
{
    if (r->kind == NFABRIC_RECORD_CLEAR) {
        nfabric_timing_clear(t);
    } else {
        nfabric_timing_account_at(t, r->path, r->bytes, r->arrival_ps);
    }
}

int64_t nfabric_record_replay(FILE *f, NFabricTiming *t,
                             const NFabricTimingParams *params,
                             NFabricRecordHeader *h)
{
    NFabricRecordReader rd;
    NFabricRecord rec;
    int r = nfabric_record_reader_open(&rd, f);

    if (r) {
        return r;
    }
    if (h) {
        *h = rd.h;
    }
    if (params && nfabric_timing_check(params)) {
        return NFABRIC_RECORD_EPARAMS;
    }
    nfabric_timing_init(t, params ? params : &rd.h.params);
    while ((r = nfabric_record_read(&rd, &rec)) > 0) {
        nfabric_record_apply(t, &rec);
    }
    return r < 0 ? r : (int64_t)rd.records;
}
