/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * (a) FP32 identity over the whole region: byte-exact read-back for access
 * sizes 1, 2, 4, 8 at every alignment 0..7, at the region's first and last
 * bytes and at sampled places in between, plus an 8-byte tag in every 4 KiB
 * page.  Run twice: with no window (plain memory) and with one FP32 window
 * over all of device memory.  Under TCG every access is an MMIO callback
 * (~0.3-0.5 us), so the region is sampled, not swept byte by byte.
 */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "gt.h"

#define NLOC 256        /* sampled 32-byte blocks, plus first and last */
#define BLOCK 32
#define SPAN 16         /* bytes written per (size, alignment) case */

static uint64_t page_tag(uint64_t page, unsigned pass)
{
    uint64_t s = gt_seed ^ (page * 0x100000001b3ull) ^ ((uint64_t)pass << 56);

    return gt_rand(&s);
}

static size_t page_slot(uint64_t page)
{
    return (size_t)((page * 2654435761u) % (4096 / 8)) * 8;
}

/* An 8-byte tag in every page (and the last 8 bytes): catches aliasing. */
static void page_sweep(unsigned pass, const char *what)
{
    volatile uint8_t *m = nfabric_map(gt_dev);
    size_t size = nfabric_map_size(gt_dev), pages = size / 4096, bad = 0;
    uint64_t last = page_tag(pages, pass), first_bad = 0;

    for (size_t p = 0; p < pages; p++) {
        gt_st(m + p * 4096 + page_slot(p), 8, page_tag(p, pass));
    }
    gt_st(m + size - 8, 8, last);
    for (size_t p = 0; p < pages; p++) {
        size_t off = p * 4096 + page_slot(p);

        if (gt_ld(m + off, 8) != page_tag(p, pass) &&
            !(off == size - 8 && gt_ld(m + off, 8) == last)) {
            if (!bad++) {
                first_bad = off;
            }
        }
    }
    if (gt_ld(m + size - 8, 8) != last) {
        bad++;
        first_bad = size - 8;
    }
    CHECK(bad == 0, "%s: 8-byte tag in each of %zu pages and at the end reads back "
          "(%zu wrong, first at 0x%" PRIx64 ")", what, pages, bad, first_bad);
}

/* One (size, alignment) case at block off; returns the bad bytes. */
static unsigned one_case(size_t off, unsigned size, unsigned align, uint64_t *rng)
{
    volatile uint8_t *b = nfabric_map(gt_dev) + off;
    uint8_t want[BLOCK], got[BLOCK], pat[SPAN];
    unsigned bad = 0;

    for (unsigned i = 0; i < BLOCK; i += 8) {
        uint64_t g = gt_rand(rng);

        gt_st(b + i, 8, g);
        for (unsigned k = 0; k < 8; k++) {
            want[i + k] = (uint8_t)(g >> (8 * k));
        }
    }
    for (unsigned i = 0; i < SPAN; i++) {
        pat[i] = (uint8_t)gt_rand(rng);
    }
    gt_write_bytes(b + align, pat, SPAN, size);
    memcpy(want + align, pat, SPAN);
    /* Byte by byte: the written span and the guard bytes around it. */
    for (unsigned i = 0; i < BLOCK; i++) {
        got[i] = (uint8_t)gt_ld(b + i, 1);
        bad += got[i] != want[i];
    }
    /* And with the same access size and alignment as the writes. */
    gt_read_bytes(got, b + align, SPAN, size);
    bad += memcmp(got, pat, SPAN) != 0;
    return bad;
}

static void size_align(unsigned pass, const char *what)
{
    static const unsigned sizes[] = { 1, 2, 4, 8 };
    size_t size = nfabric_map_size(gt_dev), stride = size / NLOC;
    uint64_t rng = gt_seed ^ (0xa5a5ull + pass);
    size_t locs[NLOC + 2];
    unsigned n = 0;

    locs[n++] = 0;                          /* first byte of the region */
    locs[n++] = size - BLOCK;               /* its last byte */
    for (unsigned i = 0; i < NLOC; i++) {
        size_t off = i * stride + (size_t)(gt_rand(&rng) % (stride - BLOCK));

        locs[n++] = off & ~(size_t)(BLOCK - 1);
    }
    for (unsigned s = 0; s < 4; s++) {
        unsigned bad_align = 0, bad = 0;

        for (unsigned a = 0; a < 8; a++) {
            unsigned b = 0;

            for (unsigned l = 0; l < n; l++) {
                b += one_case(locs[l], sizes[s], a, &rng);
            }
            if (b) {
                bad_align |= 1u << a;
                bad += b;
            }
        }
        CHECK(bad == 0, "%s: %u-byte accesses at alignments 0..7, %u places "
              "incl. first and last byte: byte-exact (bad alignments mask 0x%02x)",
              what, sizes[s], n, bad_align);
    }
}

void gt_group_fp32(void)
{
    double t0 = gt_now();

    if (!CHECK(nfabric_map(gt_dev) && nfabric_map_size(gt_dev) >= (1u << 20),
               "fp32: device memory mapped (%zu bytes)", (size_t)nfabric_map_size(gt_dev))) {
        return;
    }
    page_sweep(0, "fp32 plain");
    size_align(0, "fp32 plain");
    if (gt_need_regs("fp32 window")) {
        nfabric_win_cfg c = {
            .base = nfabric_map_dpa(gt_dev), .size = nfabric_map_size(gt_dev),
            .path = NFABRIC_PATH_FP32, .width = 8,
        };
        int rc = nfabric_window_set(gt_dev, 0, &c);

        if (CHECK(rc == 0, "fp32: window 0 = FP32 over all %zu MiB: %s",
                  (size_t)nfabric_map_size(gt_dev) >> 20, rc ? nfabric_errmsg(gt_dev) : "enabled")) {
            page_sweep(1, "fp32 window");
            size_align(1, "fp32 window");
        }
        nfabric_window_disable(gt_dev, 0);
    }
    gt_summary("fp32: plain memory and an FP32 window over all %zu MiB: sizes 1/2/4/8 "
               "at alignments 0..7 in %u places, a tag in every 4 KiB page (%.1f s)",
               (size_t)nfabric_map_size(gt_dev) >> 20, NLOC + 2, gt_now() - t0);
}
