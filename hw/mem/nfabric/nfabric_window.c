/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * NEURON-Fabric path-select table rules (see include/hw/mem/nfabric_window.h
 * and docs/registers.md).  Shared by the device and the guest library.
 */
#include <stdbool.h>

#include "hw/mem/nfabric_window.h"

uint32_t nfabric_window_check_fields(unsigned path, unsigned width,
                                     unsigned tie, uint32_t threshold)
{
    if (path != NFABRIC_PATH_GBINARY && path != NFABRIC_PATH_GTERNARY) {
        return NFABRIC_ERR_PATH;
    }
    if (width != 8 && width != 16) {
        return NFABRIC_ERR_WIDTH;
    }
    if (path == NFABRIC_PATH_GBINARY) {
        if (tie >= NFABRIC_NUM_TIES) {
            return NFABRIC_ERR_TIE;
        }
    } else if (threshold == 0 || threshold > (1u << (width - 1)) - 1) {
        return NFABRIC_ERR_THRESHOLD;   /* above the width's largest count */
    }
    return NFABRIC_ERR_NONE;
}

uint64_t nfabric_window_counter_len(const NFabricWindowCfg *w)
{
    return nfabric_counter_bytes(w->path, w->width, w->dpa_size);
}

static bool ranges_overlap(uint64_t a, uint64_t alen, uint64_t b, uint64_t blen)
{
    return alen && blen && a < b + blen && b < a + alen;
}

/* Is [a, a + len) empty, wrapping, or past the end of device memory? */
static bool past_memory(uint64_t a, uint64_t len, uint64_t mem_size)
{
    return a > mem_size || len > mem_size - a;
}

uint32_t nfabric_window_validate(const NFabricWindowCfg *w, unsigned i,
                                 uint64_t mem_size,
                                 const NFabricWindowCfg *table,
                                 uint32_t enabled)
{
    uint64_t clen;

    if (w->path >= NFABRIC_NUM_PATHS) {
        return NFABRIC_ERR_PATH;
    }
    if (w->path != NFABRIC_PATH_FP32) {
        uint32_t err = nfabric_window_check_fields(w->path, w->width, w->tie,
                                                   w->threshold);

        if (err != NFABRIC_ERR_NONE) {
            return err;
        }
    } else if (w->posted) {
        return NFABRIC_ERR_POSTED;      /* posted: low-bit windows only */
    }
    /* FP32 windows have no counter area: their COUNTERS is not checked. */
    clen = nfabric_window_counter_len(w);
    if (w->dpa_size == 0 || past_memory(w->dpa_base, w->dpa_size, mem_size) ||
        (clen && past_memory(w->counters, clen, mem_size))) {
        return NFABRIC_ERR_RANGE;
    }
    if (w->dpa_base % NFABRIC_ALIGN || w->dpa_size % NFABRIC_ALIGN ||
        (clen && w->counters % NFABRIC_ALIGN)) {
        return NFABRIC_ERR_ALIGN;
    }
    if (ranges_overlap(w->dpa_base, w->dpa_size, w->counters, clen)) {
        return NFABRIC_ERR_OVERLAP;
    }
    for (unsigned j = 0; j < NFABRIC_NUM_WINDOWS; j++) {
        const NFabricWindowCfg *o = &table[j];
        uint64_t olen;

        if (j == i || !(enabled & (1u << j))) {
            continue;
        }
        olen = nfabric_window_counter_len(o);
        if (ranges_overlap(w->dpa_base, w->dpa_size, o->dpa_base,
                           o->dpa_size) ||
            ranges_overlap(w->dpa_base, w->dpa_size, o->counters, olen) ||
            ranges_overlap(w->counters, clen, o->dpa_base, o->dpa_size) ||
            ranges_overlap(w->counters, clen, o->counters, olen)) {
            return NFABRIC_ERR_OVERLAP;
        }
    }
    return NFABRIC_ERR_NONE;
}
