/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * libnfrtl: the Verilated RTL datapath (hw/rtl/nf_agg.v) behind the C
 * engine's calls, as a shared library with a plain C interface, so that a
 * program written in C (the QEMU device, a test) can load it with dlopen()
 * and serve low-bit accesses through the RTL.
 *
 * nfrtl_agg_write() and nfrtl_agg_read() take the arguments of
 * nfabric_agg_write() and nfabric_agg_read() (include/hw/mem/
 * nfabric_engine.h) and return what they return: the range and
 * configuration checks are the engine's, the arithmetic is the RTL's.  An
 * access is split into the 64-byte lines of the window it touches; each
 * line (its byte mask, data and counter block) goes through the pipeline,
 * one line a cycle, and the counter bytes of the line's enabled bytes are
 * written back from the RTL's output.  The lines of one access own
 * disjoint counter blocks, so they stream back to back.
 *
 * One NFRtl is one model instance; calls on it must be serialised (the
 * device calls under QEMU's BQL).
 */
#ifndef HW_RTL_NFRTL_H
#define HW_RTL_NFRTL_H

#include <stddef.h>
#include <stdint.h>

#include "hw/mem/nfabric_engine.h"

#ifdef __cplusplus
extern "C" {
#endif

#define NFRTL_ABI_VERSION   1

typedef struct NFRtl NFRtl;

/* NFRTL_ABI_VERSION of the library (check it after dlopen). */
int nfrtl_abi_version(void);

/* A new model, reset; NULL on allocation failure. */
NFRtl *nfrtl_new(void);
void nfrtl_free(NFRtl *r);

int64_t nfrtl_agg_write(NFRtl *r, const NFabricAggCfg *cfg, void *counters,
                        uint64_t off, const uint8_t *data, size_t len);
int nfrtl_agg_read(NFRtl *r, const NFabricAggCfg *cfg, const void *counters,
                   uint64_t off, uint8_t *out, size_t len);

/* Clock cycles and lines the model has run so far. */
uint64_t nfrtl_cycles(const NFRtl *r);
uint64_t nfrtl_lines(const NFRtl *r);

/* The model's latency in cycles, measured at nfrtl_new() (0 if unknown). */
unsigned nfrtl_latency(const NFRtl *r);

#ifdef __cplusplus
}
#endif

#endif /* HW_RTL_NFRTL_H */
