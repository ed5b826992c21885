// SPDX-License-Identifier: GPL-2.0-or-later
//
// nfrtl_test LIB [N]: load libnfrtl.so with dlopen(), as the device would,
// and compare its nfrtl_agg_write/read with the C engine's
// nfabric_agg_write/read on N random accesses (any window size, offset,
// length and configuration, valid or not): return values, every counter
// byte, the read-out, and guard bytes after both.  Then times 64-byte
// G-Binary writes through both.  TAP and key=value lines.
#define _POSIX_C_SOURCE 200809L
#include <dlfcn.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "hw/mem/nfabric_engine.h"
#include "hw/rtl/nfrtl.h"
#include "tests/testutil.h"

static int (*p_abi)(void);
static NFRtl *(*p_new)(void);
static void (*p_free)(NFRtl *);
static int64_t (*p_write)(NFRtl *, const NFabricAggCfg *, void *, uint64_t,
                          const uint8_t *, size_t);
static int (*p_read)(NFRtl *, const NFabricAggCfg *, const void *, uint64_t,
                     uint8_t *, size_t);
static uint64_t (*p_lines)(const NFRtl *);
static unsigned (*p_latency)(const NFRtl *);

static uint64_t rng = 0x243f6a8885a308d3ull;

static uint64_t rnd(void)
{
    return nf_splitmix64(&rng);
}

#define GUARD 64

int main(int argc, char **argv)
{
    void *h;
    NFRtl *r;
    uint64_t n, bad = 0, refused = 0;
    int t = 0;

    if (argc < 2) {
        fprintf(stderr, "usage: nfrtl_test LIB [N]\n");
        return 2;
    }
    n = argc > 2 ? strtoull(argv[2], NULL, 0) : 20000;
    h = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
    if (!h) {
        printf("not ok 1 - dlopen %s: %s\n", argv[1], dlerror());
        return 1;
    }
    *(void **)&p_abi = dlsym(h, "nfrtl_abi_version");
    *(void **)&p_new = dlsym(h, "nfrtl_new");
    *(void **)&p_free = dlsym(h, "nfrtl_free");
    *(void **)&p_write = dlsym(h, "nfrtl_agg_write");
    *(void **)&p_read = dlsym(h, "nfrtl_agg_read");
    *(void **)&p_lines = dlsym(h, "nfrtl_lines");
    *(void **)&p_latency = dlsym(h, "nfrtl_latency");
    if (!p_abi || !p_new || !p_free || !p_write || !p_read || !p_lines ||
        !p_latency || p_abi() != NFRTL_ABI_VERSION) {
        printf("not ok 1 - %s: missing symbols or ABI version\n", argv[1]);
        return 1;
    }
    printf("ok %d - dlopen %s: the plain C interface, ABI %d\n", ++t,
           argv[1], p_abi());
    r = p_new();
    printf("%s %d - a model instance; latency %u cycles\n",
           r && p_latency(r) ? "ok" : "not ok", ++t, r ? p_latency(r) : 0);
    if (!r) {
        return 1;
    }

    for (uint64_t i = 0; i < n && !bad; i++) {
        NFabricAggCfg cfg;
        uint64_t size = rnd() % 4 ? 1 + rnd() % 300 : 4096, off;
        size_t len, clen;
        uint8_t *ca, *cb, *data, *oa, *ob;
        int64_t ra, rb;
        int write = (int)(rnd() & 1);

        cfg.path = rnd() & 1 ? NFABRIC_PATH_GTERNARY : NFABRIC_PATH_GBINARY;
        cfg.width = rnd() & 1 ? 16 : 8;
        cfg.tie = rnd() & 1;
        cfg.threshold = 1 + (uint32_t)(rnd() % (cfg.width == 8 ? 127 : 32767));
        cfg.size = size;
        switch (rnd() % 32) {     /* now and then a refused configuration */
        case 0: cfg.path = (unsigned)(rnd() % 20); break;
        case 1: cfg.width = (unsigned)(rnd() % 300); break;
        case 2: cfg.tie = (unsigned)(rnd() % 20); break;
        case 3: cfg.threshold = (uint32_t)rnd() >> (rnd() % 32); break;
        default: break;
        }
        off = rnd() % (size + 1);
        len = (size_t)(rnd() % (size - off + 1));
        switch (rnd() % 4) {
        case 0: len = len > 8 ? 8 : len; break;         /* QEMU's pieces */
        case 1: off = rnd() % 8 == 0 ? size + 1 : off;  /* out of range */
                break;
        default: break;
        }
        refused += nfabric_agg_check(&cfg) != NFABRIC_ERR_NONE;
        clen = (size_t)size * 8 * 2 + GUARD;    /* enough for any valid cfg */
        ca = malloc(clen);
        cb = malloc(clen);
        data = malloc(size + 1);
        oa = malloc(size + GUARD);
        ob = malloc(size + GUARD);
        for (size_t k = 0; k < clen; k++) {
            ca[k] = (uint8_t)rnd();
        }
        for (size_t k = 0; k < clen; k += 1 + rnd() % 7) {
            ca[k] = (uint8_t[]){ 0x7f, 0x80, 0x00, 0xff, 0x01 }[rnd() % 5];
        }
        memcpy(cb, ca, clen);
        for (uint64_t k = 0; k <= size; k++) {
            data[k] = (uint8_t)rnd();
        }
        memset(oa, 0x5a, size + GUARD);
        memset(ob, 0x5a, size + GUARD);
        if (write) {
            ra = nfabric_agg_write(&cfg, ca, off, data, len);
            rb = p_write(r, &cfg, cb, off, data, len);
        } else {
            ra = nfabric_agg_read(&cfg, ca, off, oa, len);
            rb = p_read(r, &cfg, cb, off, ob, len);
        }
        if (ra != rb || memcmp(ca, cb, clen) || memcmp(oa, ob, size + GUARD)) {
            printf("# MISMATCH at access %" PRIu64 ": %s path %u width %u tie %u"
                   " threshold %u size %" PRIu64 " off %" PRIu64 " len %zu:"
                   " engine returns %" PRId64 ", rtl %" PRId64 "\n", i,
                   write ? "write" : "read", cfg.path, cfg.width, cfg.tie,
                   cfg.threshold, size, off, len, ra, rb);
            for (size_t k = 0; k < clen; k++) {
                if (ca[k] != cb[k]) {
                    printf("#   counter byte %zu: engine 0x%02x rtl 0x%02x\n",
                           k, ca[k], cb[k]);
                    break;
                }
            }
            for (size_t k = 0; k < size + GUARD; k++) {
                if (oa[k] != ob[k]) {
                    printf("#   read-out byte %zu: engine 0x%02x rtl 0x%02x\n",
                           k, oa[k], ob[k]);
                    break;
                }
            }
            bad++;
        }
        free(ca);
        free(cb);
        free(data);
        free(oa);
        free(ob);
    }
    printf("%s %d - libnfrtl vs the engine: %" PRIu64 " random accesses (any"
           " size, offset, length; %" PRIu64 " refused configurations), %"
           PRIu64 " mismatches\n", bad ? "not ok" : "ok", ++t, n, refused, bad);

    /* Speed: 64-byte G-Binary writes over a 64 KiB window, both ways. */
    {
        NFabricAggCfg cfg = { NFABRIC_PATH_GBINARY, 8, 0, 1, 65536 };
        uint8_t *c = calloc(65536 * 8, 1), line[64];
        double t0, te, tr;
        uint64_t k, reps = 2000, l0 = p_lines(r);

        memset(line, 0xa5, sizeof(line));
        t0 = nf_now_s();
        for (k = 0; k < reps * 20; k++) {
            nfabric_agg_write(&cfg, c, (k * 64) % 65536, line, 64);
        }
        te = (nf_now_s() - t0) / (reps * 20);
        t0 = nf_now_s();
        for (k = 0; k < reps; k++) {
            p_write(r, &cfg, c, (k * 64) % 65536, line, 64);
        }
        tr = (nf_now_s() - t0) / reps;
        printf("rtl_lib_gbinary_write_mbps=%.2f\n", 64 / tr / 1e6);
        printf("c_engine_gbinary_write_mbps=%.1f\n", 64 / te / 1e6);
        printf("rtl_lib_gbinary_write_vs_c=%.5f\n", te / tr);
        printf("rtl_lib_lines_per_s=%.0f\n",
               (double)(p_lines(r) - l0) / (tr * reps));
        free(c);
    }
    p_free(r);
    dlclose(h);
    return bad ? 1 : 0;
}
