/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * nfabric-train: aggregation backends.  Both present three windows, one per
 * path (FP32, G-Binary, G-Ternary), at the same offsets:
 *
 *  - engine: the windows live in host memory; G-Binary and G-Ternary
 *    writes and reads go through nfabric_agg_write/read (the engine code the
 *    device is built from) on a counter area in host memory.  The backend
 *    counts the bytes it is given and returns.
 *  - device: the windows are programmed into a NEURON-Fabric device through
 *    libnfabric and the data go through the /dev/dax mapping with 8-byte
 *    stores and loads; the byte counts are the device's per-path statistics
 *    registers (deltas since open).
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hw/mem/nfabric_engine.h"
#include "libnfabric.h"
#include "nft.h"

static const unsigned win_path[NFT_NWIN] = {
    NFABRIC_PATH_FP32, NFABRIC_PATH_GBINARY, NFABRIC_PATH_GTERNARY,
};

static int check_range(NftFabric *f, int win, uint64_t off, size_t len)
{
    if (win < 0 || win >= NFT_NWIN || off % 8 || len % 8 || off > f->size[win] ||
        len > f->size[win] - off) {
        snprintf(f->err, sizeof(f->err), "access win %d off %" PRIu64 " len %zu outside "
                 "the window (%" PRIu64 " bytes) or unaligned", win, off, len,
                 win >= 0 && win < NFT_NWIN ? f->size[win] : 0);
        return -1;
    }
    return 0;
}

static int fabric_oom(NftFabric *f)
{
    snprintf(f->err, sizeof(f->err), "out of memory");
    return -1;
}

/*
 * f as KIND (its names and operations), with its windows' sizes and
 * PRIV_SIZE bytes of private state, zeroed; -1 without memory.
 */
static int fabric_init(NftFabric *f, const NftFabric *kind, size_t priv_size,
                       const uint64_t size[NFT_NWIN],
                       unsigned width, unsigned threshold)
{
    memset(f, 0, sizeof(*f));
    f->name = kind->name;
    f->traffic_source = kind->traffic_source;
    f->round = kind->round;
    f->write = kind->write;
    f->read = kind->read;
    f->stats = kind->stats;
    f->close = kind->close;
    for (int w = 0; w < NFT_NWIN; w++) {
        f->size[w] = (size[w] + 63) & ~63ull;
        if (!f->size[w]) {
            f->size[w] = 64;
        }
    }
    f->width = width;
    f->threshold = threshold;
    f->priv = calloc(1, priv_size);
    return f->priv ? 0 : fabric_oom(f);
}

/* ---- engine backend --------------------------------------------------- */

typedef struct EnginePriv {
    uint8_t *fp32;                  /* FP32 window data */
    uint8_t *ctr[NFT_NWIN];         /* counter areas (GB, GT) */
    uint64_t ctr_bytes[NFT_NWIN];
    NFabricAggCfg cfg[NFT_NWIN];
    uint64_t wr[3], rd[3];
} EnginePriv;

static int eng_round(NftFabric *f, unsigned tie)
{
    EnginePriv *e = f->priv;

    e->cfg[NFT_WIN_GB].tie = tie;
    for (int w = NFT_WIN_GB; w < NFT_NWIN; w++) {
        memset(e->ctr[w], 0, e->ctr_bytes[w]);
    }
    return 0;
}

static int eng_write(NftFabric *f, int win, uint64_t off, const void *buf, size_t len)
{
    EnginePriv *e = f->priv;

    if (check_range(f, win, off, len)) {
        return -1;
    }
    if (win == NFT_WIN_FP32) {
        memcpy(e->fp32 + off, buf, len);
    } else if (nfabric_agg_write(&e->cfg[win], e->ctr[win], off, buf, len) < 0) {
        snprintf(f->err, sizeof(f->err), "nfabric_agg_write refused the access");
        return -1;
    }
    e->wr[win_path[win]] += len;
    return 0;
}

static int eng_read(NftFabric *f, int win, uint64_t off, void *buf, size_t len)
{
    EnginePriv *e = f->priv;

    if (check_range(f, win, off, len)) {
        return -1;
    }
    if (win == NFT_WIN_FP32) {
        memcpy(buf, e->fp32 + off, len);
    } else if (nfabric_agg_read(&e->cfg[win], e->ctr[win], off, buf, len) < 0) {
        snprintf(f->err, sizeof(f->err), "nfabric_agg_read refused the access");
        return -1;
    }
    e->rd[win_path[win]] += len;
    return 0;
}

static int eng_stats(NftFabric *f, uint64_t wr[3], uint64_t rd[3])
{
    EnginePriv *e = f->priv;

    memcpy(wr, e->wr, sizeof(e->wr));
    memcpy(rd, e->rd, sizeof(e->rd));
    return 0;
}

static void eng_close(NftFabric *f)
{
    EnginePriv *e = f->priv;

    if (e) {
        free(e->fp32);
        free(e->ctr[NFT_WIN_GB]);
        free(e->ctr[NFT_WIN_GT]);
        free(e);
    }
    f->priv = NULL;
}

/* ---- device backend --------------------------------------------------- */

typedef struct DevPriv {
    nfabric_dev *d;
    nfabric_win_cfg cfg[NFT_NWIN];  /* window i = NFT_WIN_* */
    volatile uint64_t *data[NFT_NWIN];
    nfabric_path_stats base[NFABRIC_NUM_PATHS];
    unsigned tie;
    bool open;
} DevPriv;

static int dev_fail(NftFabric *f, const char *what)
{
    DevPriv *p = f->priv;

    snprintf(f->err, sizeof(f->err), "%s: %s", what, nfabric_errmsg(p->d));
    return -1;
}

static int dev_round(NftFabric *f, unsigned tie)
{
    DevPriv *p = f->priv;

    if (tie != p->tie) {
        /* The tie rule is window configuration: re-enable (which clears). */
        p->cfg[NFT_WIN_GB].tie = tie;
        if (nfabric_window_disable(p->d, NFT_WIN_GB) ||
            nfabric_window_set(p->d, NFT_WIN_GB, &p->cfg[NFT_WIN_GB])) {
            return dev_fail(f, "G-Binary window tie change");
        }
        p->tie = tie;
    } else if (nfabric_window_clear(p->d, NFT_WIN_GB)) {
        return dev_fail(f, "G-Binary window clear");
    }
    if (nfabric_window_clear(p->d, NFT_WIN_GT)) {
        return dev_fail(f, "G-Ternary window clear");
    }
    return 0;
}

static int dev_write(NftFabric *f, int win, uint64_t off, const void *buf, size_t len)
{
    DevPriv *p = f->priv;
    volatile uint64_t *dst;
    const uint8_t *src = buf;

    if (check_range(f, win, off, len)) {
        return -1;
    }
    dst = p->data[win] + off / 8;
    for (size_t i = 0; i < len / 8; i++) {
        uint64_t v;

        memcpy(&v, src + 8 * i, 8);
        dst[i] = v;
    }
    return 0;
}

static int dev_read(NftFabric *f, int win, uint64_t off, void *buf, size_t len)
{
    DevPriv *p = f->priv;
    volatile uint64_t *src;
    uint8_t *dst = buf;

    if (check_range(f, win, off, len)) {
        return -1;
    }
    src = p->data[win] + off / 8;
    for (size_t i = 0; i < len / 8; i++) {
        uint64_t v = src[i];

        memcpy(dst + 8 * i, &v, 8);
    }
    return 0;
}

static int dev_stats(NftFabric *f, uint64_t wr[3], uint64_t rd[3])
{
    DevPriv *p = f->priv;
    nfabric_path_stats st[NFABRIC_NUM_PATHS];

    if (nfabric_stats(p->d, st)) {
        return dev_fail(f, "statistics");
    }
    for (int k = 0; k < NFABRIC_NUM_PATHS; k++) {
        wr[k] = st[k].write_bytes - p->base[k].write_bytes;
        rd[k] = st[k].read_bytes - p->base[k].read_bytes;
    }
    return 0;
}

static void dev_close(NftFabric *f)
{
    DevPriv *p = f->priv;

    if (p) {
        if (p->open) {
            nfabric_windows_reset(p->d);
        }
        nfabric_free(p->d);
        free(p);
    }
    f->priv = NULL;
}

/* ---- opening either ---------------------------------------------------- */

/* What each backend is: its names and its operations. */
static const NftFabric engine_kind = {
    .name = "engine", .traffic_source = "engine-backend",
    .round = eng_round, .write = eng_write, .read = eng_read,
    .stats = eng_stats, .close = eng_close,
};

static const NftFabric device_kind = {
    .name = "device", .traffic_source = "device-stats",
    .round = dev_round, .write = dev_write, .read = dev_read,
    .stats = dev_stats, .close = dev_close,
};

int nft_fabric_engine_open(NftFabric *f, const uint64_t size[NFT_NWIN],
                           unsigned width, unsigned threshold)
{
    EnginePriv *e;

    if (fabric_init(f, &engine_kind, sizeof(*e), size, width, threshold)) {
        return -1;
    }
    e = f->priv;
    if (!(e->fp32 = calloc(1, f->size[NFT_WIN_FP32]))) {
        return fabric_oom(f);
    }
    for (int w = NFT_WIN_GB; w < NFT_NWIN; w++) {
        e->cfg[w] = (NFabricAggCfg){
            .path = win_path[w], .width = width, .tie = NFABRIC_TIE_NEGATIVE,
            .threshold = threshold, .size = f->size[w],
        };
        if (nfabric_agg_check(&e->cfg[w]) != NFABRIC_ERR_NONE) {
            snprintf(f->err, sizeof(f->err), "engine refuses the %s configuration "
                     "(width %u, threshold %u): error %u", nfabric_path_name(win_path[w]),
                     width, threshold, nfabric_agg_check(&e->cfg[w]));
            return -1;
        }
        e->ctr_bytes[w] = nfabric_counter_bytes(win_path[w], width, f->size[w]);
        e->ctr[w] = calloc(1, e->ctr_bytes[w]);
        if (!e->ctr[w]) {
            return fabric_oom(f);
        }
    }
    return 0;
}

int nft_fabric_device_open(NftFabric *f, const uint64_t size[NFT_NWIN],
                           unsigned width, unsigned threshold)
{
    DevPriv *p;
    uint64_t off = 0, need;

    if (fabric_init(f, &device_kind, sizeof(*p), size, width, threshold)) {
        return -1;
    }
    p = f->priv;
    if (!(p->d = nfabric_new())) {
        return fabric_oom(f);
    }
    if (nfabric_open(p->d, 0)) {
        snprintf(f->err, sizeof(f->err), "nfabric_open: %s", nfabric_errmsg(p->d));
        return -1;
    }
    p->open = true;
    if (nfabric_windows_reset(p->d)) {
        return dev_fail(f, "window reset");
    }
    /* Data and counter areas, 4 KiB apart, from the start of the region. */
    for (int w = 0; w < NFT_NWIN; w++) {
        nfabric_win_cfg *c = &p->cfg[w];

        c->path = win_path[w];
        c->width = width;
        c->tie = NFABRIC_TIE_NEGATIVE;
        c->threshold = w == NFT_WIN_GT ? threshold : 1;
        c->base = nfabric_map_dpa(p->d) + off;
        c->size = f->size[w];
        off += (f->size[w] + 4095) & ~4095ull;
        need = nfabric_counter_bytes(c->path, width, c->size);
        c->counters = need ? nfabric_map_dpa(p->d) + off : 0;
        off += (need + 4095) & ~4095ull;
    }
    if (off > nfabric_map_size(p->d)) {
        snprintf(f->err, sizeof(f->err), "the windows need %" PRIu64 " bytes of device "
                 "memory, the dax mapping has %zu", off, (size_t)nfabric_map_size(p->d));
        return -1;
    }
    for (int w = 0; w < NFT_NWIN; w++) {
        char what[64];

        p->data[w] = nfabric_dpa_ptr(p->d, p->cfg[w].base, p->cfg[w].size);
        if (!p->data[w]) {
            snprintf(f->err, sizeof(f->err), "window %d outside the dax mapping", w);
            return -1;
        }
        if (nfabric_window_set(p->d, (unsigned)w, &p->cfg[w])) {
            snprintf(what, sizeof(what), "%s window", nfabric_path_name(win_path[w]));
            return dev_fail(f, what);
        }
    }
    p->tie = NFABRIC_TIE_NEGATIVE;
    if (nfabric_stats(p->d, p->base)) {
        return dev_fail(f, "statistics");
    }
    return 0;
}
