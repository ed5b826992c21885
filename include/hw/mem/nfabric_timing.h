/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * NEURON-Fabric timing shim: the modelled cost of each access.
 *
 * Pure C11, no QEMU headers (built into the device and into host tools).
 * docs/timing.md describes the model.  This first version is the full
 * LLC-miss regime: accesses are dependent and served one at a time, so
 * nothing hides the low-bit datapath.  For each access of n bytes:
 *
 *   base     = service_ns + n / link bandwidth
 *   datapath = depth cycles at clock_mhz        (low-bit paths only)
 *   time     = base + datapath,  exposed = datapath
 *
 * and the exposed-overhead ratio is sum(exposed) / sum(base): how much
 * longer the same access stream runs than it would without the datapath.
 * All times are integer picoseconds so that the figures are exact and
 * reproducible.
 */
#ifndef HW_MEM_NFABRIC_TIMING_H
#define HW_MEM_NFABRIC_TIMING_H

#include <stddef.h>
#include <stdint.h>

#include "hw/mem/nfabric_regs.h"

/* Defaults (documented in docs/timing.md and the README). */
#define NFABRIC_T_DEFAULT_CLOCK_MHZ     1000    /* 1 GHz controller clock */
#define NFABRIC_T_DEFAULT_DEPTH         5       /* 5-cycle datapath */
#define NFABRIC_T_DEFAULT_SERVICE_NS    300     /* CXL load-to-use service */
#define NFABRIC_T_DEFAULT_LINK_MBPS     32000   /* x8 PCIe 5.0 class link */

/* Accepted ranges; anything else is refused when the device is created. */
#define NFABRIC_T_MAX_CLOCK_MHZ         100000
#define NFABRIC_T_MAX_DEPTH             1024
#define NFABRIC_T_MAX_SERVICE_NS        1000000
#define NFABRIC_T_MAX_LINK_MBPS         10000000

typedef struct NFabricTimingParams {
    uint32_t clock_mhz;
    uint32_t depth;
    uint32_t service_ns;
    uint32_t link_mbps;
} NFabricTimingParams;

typedef struct NFabricTiming {
    NFabricTimingParams p;
    uint64_t datapath_ps;       /* derived: depth cycles at the clock */
    uint64_t time_ps[NFABRIC_NUM_PATHS];
    uint64_t exposed_ps[NFABRIC_NUM_PATHS];
} NFabricTiming;

void nfabric_timing_defaults(NFabricTimingParams *p);

/* Each parameter: its device property name, where it is, what is valid. */
typedef struct NFabricTimingParamInfo {
    const char *name;
    size_t offset;              /* in NFabricTimingParams */
    uint32_t min, max;
} NFabricTimingParamInfo;

#define NFABRIC_T_NUM_PARAMS 4
extern const NFabricTimingParamInfo nfabric_timing_params[NFABRIC_T_NUM_PARAMS];
uint32_t nfabric_timing_param_get(const NFabricTimingParams *p,
                                  const NFabricTimingParamInfo *info);

/*
 * Check parameters.  Returns NULL when they are valid, else the first bad
 * parameter: its name ("clock-mhz", "datapath-depth", "service-ns",
 * "link-mbps") or its description.
 */
const char *nfabric_timing_check(const NFabricTimingParams *p);
const NFabricTimingParamInfo *
nfabric_timing_check_info(const NFabricTimingParams *p);

/* Set parameters (already checked) and zero the accumulators. */
void nfabric_timing_init(NFabricTiming *t, const NFabricTimingParams *p);
void nfabric_timing_clear(NFabricTiming *t);

/* Account one access of n bytes on a path; returns its modelled time, ps. */
uint64_t nfabric_timing_account(NFabricTiming *t, unsigned path, uint64_t n);

/* Modelled time without the datapath for one access of n bytes, ps. */
uint64_t nfabric_timing_base_ps(const NFabricTiming *t, uint64_t n);

uint64_t nfabric_timing_total_ps(const NFabricTiming *t);
uint64_t nfabric_timing_exposed_total_ps(const NFabricTiming *t);
/* sum(exposed) / sum(base) in parts per million (0 when nothing ran). */
uint32_t nfabric_timing_exposed_ppm(const NFabricTiming *t);

#endif /* HW_MEM_NFABRIC_TIMING_H */
