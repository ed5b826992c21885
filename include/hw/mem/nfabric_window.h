/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * NEURON-Fabric path-select table rules: whether a window configuration is
 * accepted, and which error refuses it (docs/registers.md, "Errors" and
 * "Enabling, disabling, reconfiguring").
 *
 * Pure C11, no QEMU headers and no state: the controller (nfabric_ctrl.c)
 * judges an enable with it, the aggregation engine its configuration, and
 * the guest library (guest/lib/libnfabric.c) predicts the device's answer
 * with the same function.  The unit tests and fuzzers keep their own
 * reference of these rules (tests/), written from the specification.
 */
#ifndef HW_MEM_NFABRIC_WINDOW_H
#define HW_MEM_NFABRIC_WINDOW_H

#include <stdint.h>

#include "hw/mem/nfabric_regs.h"

/* A window's configuration, as its registers hold it. */
typedef struct NFabricWindowCfg {
    uint64_t dpa_base;          /* DPA_BASE */
    uint64_t dpa_size;          /* DPA_SIZE */
    uint64_t counters;          /* COUNTERS (unused by FP32 windows) */
    unsigned path;              /* CTRL fields */
    unsigned width;
    unsigned tie;
    uint32_t threshold;         /* THRESHOLD */
    unsigned posted;            /* CTRL.POSTED (1.7): 1 or 0 */
} NFabricWindowCfg;

/* The configuration a window's CTRL value wctrl and other registers give. */
static inline NFabricWindowCfg nfabric_window_cfg(uint64_t dpa_base,
                                                  uint64_t dpa_size,
                                                  uint64_t counters,
                                                  uint32_t wctrl,
                                                  uint32_t threshold)
{
    NFabricWindowCfg c = {
        dpa_base, dpa_size, counters, NFABRIC_WCTRL_PATH(wctrl),
        NFABRIC_WCTRL_WIDTH(wctrl), NFABRIC_WCTRL_TIE(wctrl), threshold,
        (wctrl & NFABRIC_WCTRL_POSTED) ? 1u : 0u,
    };

    return c;
}

/*
 * The rules of a low-bit path's fields: NFABRIC_ERR_NONE, or PATH (not a
 * low-bit path), WIDTH, TIE (G-Binary) or THRESHOLD (G-Ternary), in this
 * order.
 */
uint32_t nfabric_window_check_fields(unsigned path, unsigned width,
                                     unsigned tie, uint32_t threshold);

/* Bytes of counter area the window uses (0 for FP32). */
uint64_t nfabric_window_counter_len(const NFabricWindowCfg *w);

/*
 * The answer to enabling window i with configuration w on a device of
 * mem_size bytes whose windows are table[0 .. NFABRIC_NUM_WINDOWS - 1],
 * bit j of enabled set if window j is enabled (bit i is ignored):
 * NFABRIC_ERR_NONE, or the first error in the specified order (PATH;
 * WIDTH, TIE, THRESHOLD; RANGE of data, then of counters; ALIGN; OVERLAP).
 */
uint32_t nfabric_window_validate(const NFabricWindowCfg *w, unsigned i,
                                 uint64_t mem_size,
                                 const NFabricWindowCfg *table,
                                 uint32_t enabled);

#endif /* HW_MEM_NFABRIC_WINDOW_H */
