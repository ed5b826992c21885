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
    /* Everything after the derived datapath_ps, ring included. */
    size_t from = offsetof(NFabricTiming, time_ps);

    memset((char *)t + from, 0, sizeof(*t) - from);
}

/* n bytes at link_mbps * 10^6 B/s occupy the link n * 10^6 / link_mbps ps. */
static uint64_t link_ps_calc(const NFabricTimingParams *p, uint64_t n)
{
    return n * 1000000u / p->link_mbps;
}

/* n bytes enter the datapath at one 64-byte line per cycle. */
static uint64_t pipe_ps_calc(const NFabricTimingParams *p, uint64_t n)
{
    return n * 1000000u / ((uint64_t)NFABRIC_T_LINE_BYTES * p->clock_mhz);
}

static uint64_t link_ps(const NFabricTiming *t, uint64_t n)
{
    return n <= NFABRIC_T_LINE_BYTES ? t->link_ps_tab[n]
                                     : link_ps_calc(&t->p, n);
}

static uint64_t pipe_ps(const NFabricTiming *t, uint64_t n)
{
    return n <= NFABRIC_T_LINE_BYTES ? t->pipe_ps_tab[n]
                                     : pipe_ps_calc(&t->p, n);
}

void nfabric_timing_init(NFabricTiming *t, const NFabricTimingParams *p)
{
    NFabricTimingParams np = *p;        /* p may be &t->p */

    t->p = np;
    /* depth cycles at clock_mhz; clock_mhz is never 0 once checked. */
    t->datapath_ps = (uint64_t)np.depth * 1000000u / np.clock_mhz;
    /* Every access of the device is at most 8 bytes: no division there. */
    for (unsigned n = 0; n <= NFABRIC_T_LINE_BYTES; n++) {
        t->link_ps_tab[n] = link_ps_calc(&np, n);
        t->pipe_ps_tab[n] = pipe_ps_calc(&np, n);
    }
    nfabric_timing_clear(t);
}

uint64_t nfabric_timing_base_ps(const NFabricTiming *t, uint64_t n)
{
    return (uint64_t)t->p.service_ns * 1000u + link_ps(t, n);
}

static uint64_t max64(uint64_t a, uint64_t b)
{
    return a > b ? a : b;
}

/*
 * Queue occupancy at the arrival instant a of a request that starts on the
 * link at start and completes at done.  The ring holds the requests still
 * in flight, oldest first; link starts and completions are both
 * non-decreasing in call order (FIFO link, constant service latency), so
 * the completed ones are at its head and the started ones a prefix.
 */
static void occupancy(NFabricTiming *t, uint64_t a, uint64_t start,
                      uint64_t done)
{
    uint32_t in_flight, queued, tail;

    while (t->occ_count && t->occ_done_ps[t->occ_head] <= a) {
        t->occ_head = (t->occ_head + 1) % NFABRIC_T_OCC_SLOTS;
        t->occ_count--;
        if (t->occ_started) {
            t->occ_started--;
        }
    }
    while (t->occ_started < t->occ_count &&
           t->occ_start_ps[(t->occ_head + t->occ_started) %
                           NFABRIC_T_OCC_SLOTS] <= a) {
        t->occ_started++;
    }
    in_flight = t->occ_count + 1;
    queued = t->occ_count - t->occ_started + (start > a);
    if (in_flight > t->max_in_flight) {
        t->max_in_flight = in_flight;
    }
    if (queued > t->max_queued) {
        t->max_queued = queued;
    }

    if (t->occ_count == NFABRIC_T_OCC_SLOTS) {
        /* Full: forget the oldest; the maxima now read "at least". */
        t->occ_saturated = 1;
        t->occ_head = (t->occ_head + 1) % NFABRIC_T_OCC_SLOTS;
        t->occ_count--;
        if (t->occ_started) {
            t->occ_started--;
        }
    }
    tail = (t->occ_head + t->occ_count) % NFABRIC_T_OCC_SLOTS;
    t->occ_start_ps[tail] = start;
    t->occ_done_ps[tail] = done;
    t->occ_count++;
}

uint64_t nfabric_timing_account_at(NFabricTiming *t, unsigned path,
                                   uint64_t n, uint64_t arrival_ps)
{
    uint64_t a, ready, start, done, exposed, xfer;

    if (path >= NFABRIC_NUM_PATHS) {
        return 0;
    }
    a = max64(arrival_ps, t->last_arrival_ps);
    if (nfabric_timing_accesses(t) == 0) {
        t->first_arrival_ps = a;
    }
    t->last_arrival_ps = a;

    /* The datapath: low-bit paths only; depth 0 means there is none. */
    ready = a;
    if (path != NFABRIC_PATH_FP32 && t->p.depth) {
        uint64_t enter = max64(a, t->pipe_free_ps);

        /* One line per cycle: n bytes take n / 64 cycles to go in. */
        t->pipe_free_ps = enter + pipe_ps(t, n);
        ready = enter + t->datapath_ps;
    }

    /* The link, FIFO; then the service latency. */
    xfer = link_ps(t, n);
    start = max64(ready, t->link_free_ps);
    /* Without its datapath the request would start at max(a, link free). */
    exposed = start - max64(a, t->link_free_ps);
    t->link_free_ps = start + xfer;
    done = t->link_free_ps + (uint64_t)t->p.service_ns * 1000u;

    occupancy(t, a, start, done);
    t->time_ps[path] += done - a;
    t->exposed_ps[path] += exposed;
    t->accesses[path]++;
    t->queued_ps += start - a;
    t->link_busy_ps += xfer;
    t->now_ps = max64(t->now_ps, done);
    return done - a;
}

uint64_t nfabric_timing_account(NFabricTiming *t, unsigned path, uint64_t n)
{
    return nfabric_timing_account_at(t, path, n, t->now_ps);
}

/* The sum of a per-path figure over every path. */
static uint64_t sum_paths(const uint64_t v[NFABRIC_NUM_PATHS])
{
    uint64_t sum = 0;

    for (unsigned i = 0; i < NFABRIC_NUM_PATHS; i++) {
        sum += v[i];
    }
    return sum;
}

uint64_t nfabric_timing_accesses(const NFabricTiming *t)
{
    return sum_paths(t->accesses);
}

uint64_t nfabric_timing_runtime_ps(const NFabricTiming *t)
{
    return nfabric_timing_accesses(t) ? t->now_ps - t->first_arrival_ps : 0;
}

uint64_t nfabric_timing_total_ps(const NFabricTiming *t)
{
    return sum_paths(t->time_ps);
}

uint64_t nfabric_timing_exposed_total_ps(const NFabricTiming *t)
{
    return sum_paths(t->exposed_ps);
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
