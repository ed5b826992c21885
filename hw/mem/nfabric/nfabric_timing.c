/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * NEURON-Fabric timing shim (see include/hw/mem/nfabric_timing.h).
 */
#include <string.h>

#include "hw/mem/nfabric_timing.h"

void nfabric_timing_defaults(NFabricTimingParams *p)
{
    p->clock_mhz = NFABRIC_T_DEFAULT_CLOCK_MHZ;
    p->depth = NFABRIC_T_DEFAULT_DEPTH;
    p->service_ns = NFABRIC_T_DEFAULT_SERVICE_NS;
    p->link_mbps = NFABRIC_T_DEFAULT_LINK_MBPS;
}

const NFabricTimingParamInfo nfabric_timing_params[NFABRIC_T_NUM_PARAMS] = {
    { "clock-mhz", offsetof(NFabricTimingParams, clock_mhz),
      1, NFABRIC_T_MAX_CLOCK_MHZ },
    { "datapath-depth", offsetof(NFabricTimingParams, depth),
      0, NFABRIC_T_MAX_DEPTH },
    { "service-ns", offsetof(NFabricTimingParams, service_ns),
      0, NFABRIC_T_MAX_SERVICE_NS },
    { "link-mbps", offsetof(NFabricTimingParams, link_mbps),
      1, NFABRIC_T_MAX_LINK_MBPS },
};

uint32_t nfabric_timing_param_get(const NFabricTimingParams *p,
                                  const NFabricTimingParamInfo *info)
{
    uint32_t v;

    memcpy(&v, (const char *)p + info->offset, sizeof(v));
    return v;
}

const char *nfabric_timing_check(const NFabricTimingParams *p)
{
    const NFabricTimingParamInfo *bad = nfabric_timing_check_info(p);

    return bad ? bad->name : NULL;
}

const NFabricTimingParamInfo *
nfabric_timing_check_info(const NFabricTimingParams *p)
{
    for (unsigned i = 0; i < NFABRIC_T_NUM_PARAMS; i++) {
        const NFabricTimingParamInfo *info = &nfabric_timing_params[i];
        uint32_t v = nfabric_timing_param_get(p, info);

        if (v < info->min || v > info->max) {
            return info;
        }
    }
    return NULL;
}

void nfabric_timing_clear(NFabricTiming *t)
{
    for (unsigned i = 0; i < NFABRIC_NUM_PATHS; i++) {
        t->time_ps[i] = 0;
        t->exposed_ps[i] = 0;
    }
}

void nfabric_timing_init(NFabricTiming *t, const NFabricTimingParams *p)
{
    t->p = *p;
    /* depth cycles at clock_mhz; clock_mhz is never 0 once checked. */
    t->datapath_ps = (uint64_t)p->depth * 1000000u / p->clock_mhz;
    nfabric_timing_clear(t);
}

uint64_t nfabric_timing_base_ps(const NFabricTiming *t, uint64_t n)
{
    /* n bytes at link_mbps * 10^6 B/s take n * 10^6 / link_mbps ps. */
    return (uint64_t)t->p.service_ns * 1000u + n * 1000000u / t->p.link_mbps;
}

uint64_t nfabric_timing_account(NFabricTiming *t, unsigned path, uint64_t n)
{
    uint64_t base = nfabric_timing_base_ps(t, n);
    uint64_t exposed = 0;

    if (path >= NFABRIC_NUM_PATHS) {
        return 0;
    }
    if (path != NFABRIC_PATH_FP32) {
        exposed = t->datapath_ps;
    }
    t->time_ps[path] += base + exposed;
    t->exposed_ps[path] += exposed;
    return base + exposed;
}

uint64_t nfabric_timing_total_ps(const NFabricTiming *t)
{
    uint64_t sum = 0;

    for (unsigned i = 0; i < NFABRIC_NUM_PATHS; i++) {
        sum += t->time_ps[i];
    }
    return sum;
}

uint64_t nfabric_timing_exposed_total_ps(const NFabricTiming *t)
{
    uint64_t sum = 0;

    for (unsigned i = 0; i < NFABRIC_NUM_PATHS; i++) {
        sum += t->exposed_ps[i];
    }
    return sum;
}

uint32_t nfabric_timing_exposed_ppm(const NFabricTiming *t)
{
    uint64_t exposed = nfabric_timing_exposed_total_ps(t);
    uint64_t base = nfabric_timing_total_ps(t) - exposed;
    double ppm;

    if (base == 0) {
        return 0;
    }
    ppm = (double)exposed * 1e6 / (double)base;
    return ppm > 4294967295.0 ? UINT32_MAX : (uint32_t)(ppm + 0.5);
}
