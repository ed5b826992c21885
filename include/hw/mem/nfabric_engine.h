/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * NEURON-Fabric aggregation engine: G-Binary sign-count and G-Ternary gated
 * aggregation over a window's counter area.
 *
 * Pure C11: no QEMU headers, so that the same file is built into the QEMU
 * device and, by the project's root meson.build, into unit tests, fuzzers
 * and benchmarks.  The caller (the device) has already checked that the
 * window and its counter area lie inside device memory; the engine checks
 * that [off, off + len) lies inside the window it is given.
 *
 * Data layout (docs/engine.md has the full text):
 *  - G-Binary: element e of the window is bit (e % 8) of byte (e / 8),
 *    1 = positive.  A write adds +1 (bit 1) or -1 (bit 0) to the count of
 *    every element it covers.
 *  - G-Ternary: element e is bits [2k+1:2k], k = e % 4, of byte e / 4, with
 *    the codes NFABRIC_TERN_*.  A write adds +1, 0 or -1 to each covered
 *    element's sum; the reserved code adds nothing and is counted.
 *  - Counters: one signed little-endian integer of cfg->width bits per
 *    element, element e at byte e * width / 8 of the counter area.  Updates
 *    saturate at the integer's range.
 */
#ifndef HW_MEM_NFABRIC_ENGINE_H
#define HW_MEM_NFABRIC_ENGINE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "hw/mem/nfabric_regs.h"

typedef struct NFabricAggCfg {
    unsigned path;          /* NFABRIC_PATH_GBINARY or NFABRIC_PATH_GTERNARY */
    unsigned width;         /* counter width in bits: 8 or 16 */
    unsigned tie;           /* NFABRIC_TIE_*, G-Binary read-out */
    uint32_t threshold;     /* G-Ternary gate T, 1 .. max count */
    uint64_t size;          /* window data length in bytes */
} NFabricAggCfg;

/* Implementations selectable for tests and benchmarks. */
typedef enum NFabricImpl {
    NFABRIC_IMPL_AUTO = 0,      /* best the host supports */
    NFABRIC_IMPL_PORTABLE,      /* plain C, any host */
    NFABRIC_IMPL_SSE2,
    NFABRIC_IMPL_AVX2,
    NFABRIC_IMPL_COUNT
} NFabricImpl;

/*
 * Validate a configuration; returns NFABRIC_ERR_NONE or the error code a
 * window would report (WIDTH, THRESHOLD, TIE, PATH).
 */
unsigned nfabric_agg_check(const NFabricAggCfg *cfg);

/*
 * Apply one write of len bytes of packed data, whose first byte is byte off
 * of the window, to the counters.  Returns the number of reserved ternary
 * codes in the data (always 0 for G-Binary), or -1 if [off, off + len) is
 * not inside the window (nothing is changed then).  -1 too, changing
 * nothing, when nfabric_agg_check(cfg) refuses the configuration; len 0
 * with off <= cfg->size is a no-op that returns 0.
 */
int64_t nfabric_agg_write(const NFabricAggCfg *cfg, void *counters,
                          uint64_t off, const uint8_t *data, size_t len);

/*
 * Produce len bytes of packed read-out starting at byte off of the window.
 * Never changes state.  Returns 0, or -1 if the range is outside the window.
 */
int nfabric_agg_read(const NFabricAggCfg *cfg, const void *counters,
                     uint64_t off, uint8_t *out, size_t len);

/* The plain scalar reference of the same semantics (tests, benchmarks). */
int64_t nfabric_agg_write_ref(const NFabricAggCfg *cfg, void *counters,
                              uint64_t off, const uint8_t *data, size_t len);
int nfabric_agg_read_ref(const NFabricAggCfg *cfg, const void *counters,
                         uint64_t off, uint8_t *out, size_t len);

/*
 * Choose the implementation used by nfabric_agg_write/read.  Returns false
 * (and changes nothing) if the host cannot run it.  AUTO is the default.
 * nfabric_engine_active() names the implementation in use, never AUTO.
 * The selection is the engine's only mutable global state: the engine is
 * otherwise reentrant; callers serialise updates of one counter area.
 */
bool nfabric_engine_select(NFabricImpl impl);
NFabricImpl nfabric_engine_active(void);
const char *nfabric_engine_impl_name(NFabricImpl impl);
bool nfabric_engine_supported(NFabricImpl impl);

/* Read counter e of a counter area (tests, tools). */
int32_t nfabric_counter_get(const void *counters, unsigned width, uint64_t e);

/*
 * Write counter e of a counter area (tests, tools), v clamped to the
 * width's range.  Widths other than 8 and 16 write nothing.
 */
void nfabric_counter_set(void *counters, unsigned width, uint64_t e,
                         int32_t v);

#endif /* HW_MEM_NFABRIC_ENGINE_H */
