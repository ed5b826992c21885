/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * NEURON-Fabric timing shim: the modelled cost of each access.
 *
 * Pure C11, no QEMU headers (built into the device and into host tools).
 * docs/timing.md describes the model.  Requests arrive at given times and
 * go, in call order, through
 *
 *   [datapath]  low-bit paths only: a pipeline of depth cycles at clock_mhz
 *               (latency depth cycles, throughput one 64-byte line a cycle)
 *   [link]      a FIFO server: the link carries one transfer at a time,
 *               n bytes occupy it n / link bandwidth
 *   [service]   service_ns, a pure latency (load-to-use time apart from the
 *               transfer: protocol, controller, media), overlapped across
 *               outstanding requests; it does not limit throughput
 *
 * A request's exposed time is the part of its datapath time (latency plus
 * any wait for the pipeline) that delays its start on the link, i.e. that
 * is not hidden behind waiting for the link anyway.  Its latency (its
 * "time") is completion - arrival.  Per path the model sums both, and the
 * exposed-overhead ratio is sum(exposed) / sum(time - exposed).
 *
 * nfabric_timing_account() is the full LLC-miss regime: each access arrives
 * when the previous one completes, so the link is always idle, every
 * low-bit access exposes its whole datapath, and for each access of n bytes
 *
 *   time = service_ns + n / link bandwidth + depth cycles at clock_mhz
 *
 * (the figures of the first version of this model, unchanged), and the sum
 * of the times is the runtime.  nfabric_timing_account_at() takes the
 * arrival time; with requests queueing at the link (bandwidth pressure) the
 * datapath of one request overlaps the transfers of earlier ones and its
 * exposed time drops towards 0.
 *
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

/* The datapath moves one line of this many bytes per cycle. */
#define NFABRIC_T_LINE_BYTES            64

/*
 * Queue occupancy (max requests in flight / queued) is tracked exactly up
 * to this many requests in flight; beyond it the maxima read "at least"
 * and NFabricTiming.occ_saturated is set.  Means are exact regardless.
 */
#define NFABRIC_T_OCC_SLOTS             4096

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
    /* Derived: link and datapath-entry time of n <= 64 bytes (hot path). */
    uint64_t link_ps_tab[NFABRIC_T_LINE_BYTES + 1];
    uint64_t pipe_ps_tab[NFABRIC_T_LINE_BYTES + 1];

    /* Accumulators (registers T_TOTAL_PS, T_PATH_*, T_EXPOSED_PPM). */
    uint64_t time_ps[NFABRIC_NUM_PATHS];    /* sum of latencies */
    uint64_t exposed_ps[NFABRIC_NUM_PATHS]; /* of which datapath-exposed */

    /* Accumulators added with the queue model (all zeroed by clear). */
    uint64_t accesses[NFABRIC_NUM_PATHS];   /* requests accounted */
    uint64_t queued_ps;         /* sum of (link start - arrival) */
    uint64_t link_busy_ps;      /* sum of transfer occupancies */
    uint64_t first_arrival_ps;  /* arrival of the first request */
    uint32_t max_in_flight;     /* most requests arrived, not completed */
    uint32_t max_queued;        /* most arrived, not yet on the link */
    uint32_t occ_saturated;     /* 1: in flight exceeded NFABRIC_T_OCC_SLOTS */

    /* Queue state (zeroed by clear: the model restarts at time 0). */
    uint64_t now_ps;            /* latest completion: a dependent access
                                 * arrives then; also the end of runtime */
    uint64_t last_arrival_ps;   /* arrivals are taken in call order */
    uint64_t pipe_free_ps;      /* when the datapath takes the next line */
    uint64_t link_free_ps;      /* when the link is free */
    /* Requests in flight, oldest first: link start and completion. */
    uint32_t occ_head, occ_count;
    uint32_t occ_started;       /* of those, how many (oldest) started */
    uint64_t occ_start_ps[NFABRIC_T_OCC_SLOTS];
    uint64_t occ_done_ps[NFABRIC_T_OCC_SLOTS];
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

/*
 * Account one request of n bytes on a path arriving at arrival_ps (an
 * arrival earlier than the previous request's is taken as equal to it:
 * requests are served in call order).  Returns its latency, completion -
 * arrival, in ps; 0 (and nothing accounted) for an unknown path.
 */
uint64_t nfabric_timing_account_at(NFabricTiming *t, unsigned path,
                                   uint64_t n, uint64_t arrival_ps);

/*
 * The full LLC-miss regime: the access arrives when the previous one
 * completed, i.e. nfabric_timing_account_at(t, path, n,
 * nfabric_timing_now_ps(t)).  Returns its modelled time, ps:
 * service + n / link (+ datapath on a low-bit path).
 */
uint64_t nfabric_timing_account(NFabricTiming *t, unsigned path, uint64_t n);

/* Completion of the latest request (0 after clear): when a dependent
 * access arrives, and what a recorder writes as its arrival time. */
static inline uint64_t nfabric_timing_now_ps(const NFabricTiming *t)
{
    return t->now_ps;
}

/* Modelled time without the datapath for one access of n bytes, ps. */
uint64_t nfabric_timing_base_ps(const NFabricTiming *t, uint64_t n);

uint64_t nfabric_timing_total_ps(const NFabricTiming *t);
uint64_t nfabric_timing_exposed_total_ps(const NFabricTiming *t);
/*
 * sum(exposed) / sum(time - exposed) in parts per million (0 when nothing
 * ran): how much longer the requests take than without the datapath.
 */
uint32_t nfabric_timing_exposed_ppm(const NFabricTiming *t);

/* Requests accounted on all paths. */
uint64_t nfabric_timing_accesses(const NFabricTiming *t);
/* First arrival to latest completion (0 when nothing ran), ps.  For a
 * dependent stream this is nfabric_timing_total_ps(). */
uint64_t nfabric_timing_runtime_ps(const NFabricTiming *t);

#endif /* HW_MEM_NFABRIC_TIMING_H */
