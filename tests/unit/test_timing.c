/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Unit tests of the timing model (hw/mem/nfabric/nfabric_timing.c), against
 * figures worked out by hand:
 *
 *   defaults 1000 MHz, depth 5, 300 ns, 32000 MB/s:
 *     datapath   = 5 cycles at 1 GHz            = 5000 ps
 *     8 bytes    = 8 * 10^6 / 32000 ps          = 250 ps on the link
 *     FP32 8 B   = 300000 + 250                 = 300250 ps
 *     low-bit 8 B = 300250 + 5000               = 305250 ps
 *     64 B       = 300000 + 2000 = 302000 ps (+ 5000 on a low-bit path)
 *     exposed ppm, only low-bit 8 B accesses = 5000e6 / 300250
 *                = 16652.79... -> 16653
 *
 * and, for the queue model (test_queue_*), pipeline occupancy of n bytes
 * n * 10^6 / (64 * 1000) ps: 125 ps for 8 bytes, 1000 ps for 64 bytes;
 * each scenario is worked out step by step in its comment.
 */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hw/mem/nfabric_timing.h"
#include "hw/mem/nfabric_record.h"
#include "tap.h"

static NFabricTiming timing_defaults(void)
{
    NFabricTimingParams p;
    NFabricTiming t;

    nfabric_timing_defaults(&p);
    nfabric_timing_init(&t, &p);
    return t;
}

static void test_defaults(void)
{
    NFabricTimingParams p;

    memset(&p, 0xff, sizeof(p));
    nfabric_timing_defaults(&p);
    TAP_CHECK(p.clock_mhz == 1000 && p.depth == 5 && p.service_ns == 300 &&
              p.link_mbps == 32000,
              "defaults: 1000 MHz, depth 5, 300 ns, 32000 MB/s");
    TAP_CHECK(nfabric_timing_check(&p) == NULL, "defaults are valid");
}

static bool names(const NFabricTimingParams *p, const char *want)
{
    const char *got = nfabric_timing_check(p);

    if (!want || !got) {
        return want == got;
    }
    return strcmp(got, want) == 0;
}

static void test_check(void)
{
    NFabricTimingParams d, p;

    nfabric_timing_defaults(&d);

    p = d;
    p.clock_mhz = 0;
    TAP_CHECK(names(&p, "clock-mhz"), "clock 0 -> clock-mhz");
    p.clock_mhz = NFABRIC_T_MAX_CLOCK_MHZ + 1;
    TAP_CHECK(names(&p, "clock-mhz"), "clock max+1 -> clock-mhz");
    p.clock_mhz = NFABRIC_T_MAX_CLOCK_MHZ;
    TAP_CHECK(names(&p, NULL), "clock max is valid");
    p.clock_mhz = 1;
    TAP_CHECK(names(&p, NULL), "clock 1 MHz is valid");

    p = d;
    p.depth = NFABRIC_T_MAX_DEPTH + 1;
    TAP_CHECK(names(&p, "datapath-depth"), "depth max+1 -> datapath-depth");
    p.depth = NFABRIC_T_MAX_DEPTH;
    TAP_CHECK(names(&p, NULL), "depth max is valid");
    p.depth = 0;
    TAP_CHECK(names(&p, NULL), "depth 0 is valid (no datapath)");

    p = d;
    p.service_ns = NFABRIC_T_MAX_SERVICE_NS + 1;
    TAP_CHECK(names(&p, "service-ns"), "service max+1 -> service-ns");
    p.service_ns = NFABRIC_T_MAX_SERVICE_NS;
    TAP_CHECK(names(&p, NULL), "service max is valid");
    p.service_ns = 0;
    TAP_CHECK(names(&p, NULL), "service 0 is valid");

    p = d;
    p.link_mbps = 0;
    TAP_CHECK(names(&p, "link-mbps"), "link 0 -> link-mbps");
    p.link_mbps = NFABRIC_T_MAX_LINK_MBPS + 1;
    TAP_CHECK(names(&p, "link-mbps"), "link max+1 -> link-mbps");
    p.link_mbps = NFABRIC_T_MAX_LINK_MBPS;
    TAP_CHECK(names(&p, NULL), "link max is valid");

    p.clock_mhz = 0;
    p.depth = UINT32_MAX;
    p.service_ns = UINT32_MAX;
    p.link_mbps = 0;
    TAP_CHECK(names(&p, "clock-mhz"), "all bad -> the first, clock-mhz");
    p.clock_mhz = 1000;
    TAP_CHECK(names(&p, "datapath-depth"),
              "depth, service, link bad -> datapath-depth");
    p.depth = 5;
    TAP_CHECK(names(&p, "service-ns"), "service, link bad -> service-ns");
    p.service_ns = 300;
    TAP_CHECK(names(&p, "link-mbps"), "link bad -> link-mbps");
}

static void test_param_table(void)
{
    NFabricTimingParams p = { .clock_mhz = 11, .depth = 22,
                              .service_ns = 33, .link_mbps = 44 };
    static const char *const want[NFABRIC_T_NUM_PARAMS] = {
        "clock-mhz", "datapath-depth", "service-ns", "link-mbps",
    };
    bool ok = true;

    for (unsigned i = 0; i < NFABRIC_T_NUM_PARAMS; i++) {
        const NFabricTimingParamInfo *info = &nfabric_timing_params[i];

        ok &= !strcmp(info->name, want[i]) &&
              nfabric_timing_param_get(&p, info) == 11 * (i + 1);
    }
    TAP_CHECK(ok, "parameter table: names in order, param_get reads each");

    ok = nfabric_timing_check_info(&p) == NULL;
    for (unsigned i = 0; i < NFABRIC_T_NUM_PARAMS; i++) {
        const NFabricTimingParamInfo *info = &nfabric_timing_params[i];
        NFabricTimingParams q = p;
        uint32_t bad = info->max + 1;

        memcpy((char *)&q + info->offset, &bad, sizeof(bad));
        ok &= nfabric_timing_check_info(&q) == info &&
              nfabric_timing_check(&q) == info->name;
    }
    TAP_CHECK(ok, "check_info returns the bad parameter's entry");
}

static void test_account(void)
{
    NFabricTiming t = timing_defaults();
    uint64_t a, b, c;

    TAP_CHECK(t.datapath_ps == 5000, "datapath: 5 cycles at 1 GHz = 5000 ps");
    TAP_CHECK(nfabric_timing_base_ps(&t, 8) == 300250,
              "base of 8 bytes = 300000 + 250 ps");
    TAP_CHECK(nfabric_timing_base_ps(&t, 64) == 302000,
              "base of 64 bytes = 300000 + 2000 ps");
    TAP_CHECK(nfabric_timing_exposed_ppm(&t) == 0 &&
              nfabric_timing_total_ps(&t) == 0,
              "nothing accounted: 0 ps, 0 ppm");

    a = nfabric_timing_account(&t, NFABRIC_PATH_GBINARY, 8);
    b = nfabric_timing_account(&t, NFABRIC_PATH_GTERNARY, 8);
    c = nfabric_timing_account(&t, NFABRIC_PATH_FP32, 8);
    TAP_CHECK(a == 305250, "G-Binary 8 bytes = 300000+250+5000 = 305250 ps "
              "(got %llu)", (unsigned long long)a);
    TAP_CHECK(b == 305250, "G-Ternary 8 bytes = 305250 ps (got %llu)",
              (unsigned long long)b);
    TAP_CHECK(c == 300250, "FP32 8 bytes = 300250 ps (got %llu)",
              (unsigned long long)c);
    TAP_CHECK(t.time_ps[NFABRIC_PATH_GBINARY] == 305250 &&
              t.exposed_ps[NFABRIC_PATH_GBINARY] == 5000 &&
              t.time_ps[NFABRIC_PATH_FP32] == 300250 &&
              t.exposed_ps[NFABRIC_PATH_FP32] == 0,
              "per-path time and exposed time");
    TAP_CHECK(nfabric_timing_total_ps(&t) == 2 * 305250 + 300250 &&
              nfabric_timing_exposed_total_ps(&t) == 10000,
              "totals: 910750 ps, 10000 ps exposed");
    /* 10000e6 / 900750 = 11101.86 */
    TAP_CHECK(nfabric_timing_exposed_ppm(&t) == 11102,
              "two low-bit + one FP32 8-byte access: 11102 ppm (got %u)",
              nfabric_timing_exposed_ppm(&t));

    TAP_CHECK(nfabric_timing_account(&t, NFABRIC_NUM_PATHS, 8) == 0 &&
              nfabric_timing_total_ps(&t) == 910750,
              "unknown path: 0 ps, nothing accounted");

    nfabric_timing_clear(&t);
    TAP_CHECK(nfabric_timing_total_ps(&t) == 0 &&
              nfabric_timing_exposed_total_ps(&t) == 0 &&
              nfabric_timing_exposed_ppm(&t) == 0 && t.datapath_ps == 5000,
              "clear zeroes the accumulators, keeps the parameters");

    for (int i = 0; i < 1000; i++) {
        nfabric_timing_account(&t, NFABRIC_PATH_GBINARY, 8);
    }
    TAP_CHECK(nfabric_timing_exposed_ppm(&t) == 16653,
              "only low-bit 8-byte accesses: round(5000e6 / 300250) = 16653 "
              "ppm (got %u)", nfabric_timing_exposed_ppm(&t));

    nfabric_timing_clear(&t);
    for (int i = 0; i < 10; i++) {
        nfabric_timing_account(&t, NFABRIC_PATH_FP32, 64);
    }
    TAP_CHECK(nfabric_timing_exposed_ppm(&t) == 0 &&
              nfabric_timing_total_ps(&t) == 3020000,
              "FP32 only: 0 ppm exposed");
    nfabric_timing_account(&t, NFABRIC_PATH_GTERNARY, 64);
    /* 5000e6 / (11 * 302000) = 1505.12 */
    TAP_CHECK(nfabric_timing_exposed_ppm(&t) == 1505,
              "ten FP32 + one low-bit 64-byte access: 1505 ppm (got %u)",
              nfabric_timing_exposed_ppm(&t));
}

static void test_params(void)
{
    NFabricTimingParams p;
    NFabricTiming t;

    nfabric_timing_defaults(&p);
    p.clock_mhz = 2000;
    nfabric_timing_init(&t, &p);
    TAP_CHECK(t.datapath_ps == 2500 &&
              nfabric_timing_account(&t, NFABRIC_PATH_GBINARY, 8) == 302750,
              "2 GHz: datapath 2500 ps, low-bit 8 bytes 302750 ps");

    p.clock_mhz = 3;
    p.depth = 1;
    nfabric_timing_init(&t, &p);
    TAP_CHECK(t.datapath_ps == 333333, "3 MHz, 1 cycle: 333333 ps "
              "(truncated)");

    nfabric_timing_defaults(&p);
    p.depth = 0;
    nfabric_timing_init(&t, &p);
    nfabric_timing_account(&t, NFABRIC_PATH_GBINARY, 8);
    TAP_CHECK(t.datapath_ps == 0 && nfabric_timing_exposed_ppm(&t) == 0 &&
              nfabric_timing_total_ps(&t) == 300250,
              "depth 0: nothing exposed");

    nfabric_timing_defaults(&p);
    p.link_mbps = 1;
    p.service_ns = 100;
    nfabric_timing_init(&t, &p);
    TAP_CHECK(nfabric_timing_base_ps(&t, 8) == 100000 + 8000000,
              "1 MB/s link: 8 bytes take 8 us on the link");

    /* 1 byte at 10^7 MB/s is 0.1 ps: truncated to 0. */
    nfabric_timing_defaults(&p);
    p.link_mbps = NFABRIC_T_MAX_LINK_MBPS;
    nfabric_timing_init(&t, &p);
    TAP_CHECK(nfabric_timing_base_ps(&t, 1) == 300000 &&
              nfabric_timing_base_ps(&t, 10) == 300001,
              "fastest link: sub-picosecond transfers truncate");

    /* Exposed far above base: the ratio clamps at UINT32_MAX ppm. */
    p.service_ns = 0;
    p.depth = NFABRIC_T_MAX_DEPTH;
    p.clock_mhz = 1;
    nfabric_timing_init(&t, &p);
    nfabric_timing_account(&t, NFABRIC_PATH_GBINARY, 10);
    TAP_CHECK(nfabric_timing_exposed_ppm(&t) == UINT32_MAX,
              "exposed/base beyond 2^32 ppm clamps to UINT32_MAX");

    /* The paper's regime: 5 cycles at 1 GHz on a 300 ns access, no link. */
    nfabric_timing_defaults(&p);
    p.link_mbps = NFABRIC_T_MAX_LINK_MBPS;
    nfabric_timing_init(&t, &p);
    nfabric_timing_account(&t, NFABRIC_PATH_GBINARY, 1);
    TAP_CHECK(nfabric_timing_exposed_ppm(&t) == 16667,
              "5 ns on 300 ns: 16667 ppm = 1.67 %% (got %u)",
              nfabric_timing_exposed_ppm(&t));
}


/* ---- the queue model ------------------------------------------------- */

static NFabricTiming qt;       /* 64 KiB (occupancy ring): not on the stack */

static void q_init(const NFabricTimingParams *p)
{
    NFabricTimingParams d;

    if (!p) {
        nfabric_timing_defaults(&d);
        p = &d;
    }
    nfabric_timing_init(&qt, p);
}

static void test_queue_back_to_back(void)
{
    uint64_t l1, l2;

    /*
     * Two low-bit 64-byte requests, both arriving at 0.
     *  R1: enters the datapath at 0 (busy until 1000), out at 5000; the
     *      link is idle: starts 5000, exposed 5000 - 0 = 5000; link busy
     *      to 7000; done 7000 + 300000 = 307000.
     *  R2: enters at 1000 (one line a cycle), out at 6000; the link is
     *      busy until 7000: starts 7000; without its datapath it would
     *      have started at 7000 too: exposed 0; done 309000.
     */
    q_init(NULL);
    l1 = nfabric_timing_account_at(&qt, NFABRIC_PATH_GBINARY, 64, 0);
    l2 = nfabric_timing_account_at(&qt, NFABRIC_PATH_GBINARY, 64, 0);
    TAP_CHECK(l1 == 307000 && l2 == 309000,
              "back to back: latencies 307000, 309000 ps (got %llu, %llu)",
              (unsigned long long)l1, (unsigned long long)l2);
    TAP_CHECK(qt.exposed_ps[NFABRIC_PATH_GBINARY] == 5000 &&
              qt.time_ps[NFABRIC_PATH_GBINARY] == 616000,
              "back to back: the second datapath hides behind the first "
              "transfer: exposed 5000 of time 616000 ps");
    /* 5000e6 / 611000 = 8183.3 */
    TAP_CHECK(nfabric_timing_exposed_ppm(&qt) == 8183,
              "back to back: 8183 ppm (got %u)",
              nfabric_timing_exposed_ppm(&qt));
    TAP_CHECK(nfabric_timing_runtime_ps(&qt) == 309000 &&
              qt.queued_ps == 5000 + 7000 && qt.link_busy_ps == 4000,
              "back to back: runtime 309000, queued 12000, link busy "
              "4000 ps");
    TAP_CHECK(qt.max_in_flight == 2 && qt.max_queued == 2 &&
              !qt.occ_saturated, "back to back: 2 in flight, 2 queued");
    TAP_CHECK(nfabric_timing_now_ps(&qt) == 309000,
              "now = the latest completion, 309000 ps");

    /* The same two on FP32: no datapath, R2 starts at 2000. */
    q_init(NULL);
    l1 = nfabric_timing_account_at(&qt, NFABRIC_PATH_FP32, 64, 0);
    l2 = nfabric_timing_account_at(&qt, NFABRIC_PATH_FP32, 64, 0);
    TAP_CHECK(l1 == 302000 && l2 == 304000 &&
              nfabric_timing_exposed_total_ps(&qt) == 0 &&
              qt.queued_ps == 2000 && qt.max_queued == 1,
              "FP32 back to back: 302000, 304000 ps, R2 queued 2000 ps");

    /*
     * Partly hidden: R2 arrives at 3000.  It enters at 3000, out at 8000;
     * the link is busy with R1 until 7000, so without its datapath R2
     * would have started at 7000: exposed 8000 - 7000 = 1000.
     */
    q_init(NULL);
    nfabric_timing_account_at(&qt, NFABRIC_PATH_GBINARY, 64, 0);
    l2 = nfabric_timing_account_at(&qt, NFABRIC_PATH_GTERNARY, 64, 3000);
    TAP_CHECK(l2 == 8000 + 2000 + 300000 - 3000 &&
              qt.exposed_ps[NFABRIC_PATH_GTERNARY] == 1000,
              "R2 at 3000: 4000 of its 5000 ps hidden, exposed 1000 ps, "
              "latency 307000 (got %llu)", (unsigned long long)l2);

    /* Spaced out: R2 at 100000 finds the link idle: fully exposed. */
    q_init(NULL);
    nfabric_timing_account_at(&qt, NFABRIC_PATH_GBINARY, 64, 0);
    l2 = nfabric_timing_account_at(&qt, NFABRIC_PATH_GBINARY, 64, 100000);
    TAP_CHECK(l2 == 307000 && qt.exposed_ps[NFABRIC_PATH_GBINARY] == 10000,
              "spaced 100 ns: both expose 5000 ps");
    /* R1 (done 307000) still in flight, but on the link since 5000. */
    TAP_CHECK(qt.max_in_flight == 2 && qt.max_queued == 1,
              "spaced: 2 in flight, 1 queued at most");

    /*
     * FP32 behind a low-bit request: FP32 64 B at 1000 waits for the link
     * (busy 5000..7000 with R1): starts 7000, done 309000, latency
     * 308000; that wait is queueing, not the FP32 request's exposure.
     */
    q_init(NULL);
    nfabric_timing_account_at(&qt, NFABRIC_PATH_GBINARY, 64, 0);
    l2 = nfabric_timing_account_at(&qt, NFABRIC_PATH_FP32, 64, 1000);
    TAP_CHECK(l2 == 308000 && qt.exposed_ps[NFABRIC_PATH_FP32] == 0 &&
              qt.queued_ps == 5000 + 6000,
              "FP32 behind low-bit: latency 308000, queued 6000, "
              "exposed 0 (got %llu)", (unsigned long long)l2);

    /* An arrival earlier than the previous one is taken as equal to it. */
    q_init(NULL);
    nfabric_timing_account_at(&qt, NFABRIC_PATH_FP32, 64, 50000);
    l2 = nfabric_timing_account_at(&qt, NFABRIC_PATH_FP32, 64, 10000);
    TAP_CHECK(l2 == 304000 && qt.first_arrival_ps == 50000 &&
              nfabric_timing_runtime_ps(&qt) == 304000,
              "out-of-order arrival clamped to 50000: latency 304000");
    TAP_CHECK(nfabric_timing_account_at(&qt, NFABRIC_NUM_PATHS, 8, 0) == 0 &&
              nfabric_timing_accesses(&qt) == 2,
              "account_at on an unknown path: nothing accounted");
}

static void test_queue_burst(void)
{
    NFabricTimingParams p;
    uint64_t sum = 0;

    /*
     * A burst of four low-bit 8-byte requests at 0: the datapath takes one
     * every 125 ps, the link one every 250 ps.
     *  R1: out 5000, start 5000, link to 5250, done 305250, exposed 5000
     *  R2: in 125, out 5125 < 5250: start 5250, done 305500, exposed 0
     *  R3: in 250, out 5250 < 5500: start 5500, done 305750, exposed 0
     *  R4: in 375, out 5375 < 5750: start 5750, done 306000, exposed 0
     */
    q_init(NULL);
    for (int i = 0; i < 4; i++) {
        sum += nfabric_timing_account_at(&qt, NFABRIC_PATH_GBINARY, 8, 0);
    }
    TAP_CHECK(sum == 305250 + 305500 + 305750 + 306000 &&
              qt.time_ps[NFABRIC_PATH_GBINARY] == sum &&
              nfabric_timing_exposed_total_ps(&qt) == 5000,
              "burst of 4 x 8 B: time 1222500, exposed 5000 ps (got %llu)",
              (unsigned long long)sum);
    TAP_CHECK(qt.max_in_flight == 4 && qt.max_queued == 4 &&
              nfabric_timing_runtime_ps(&qt) == 306000,
              "burst: 4 in flight and queued, runtime 306000 ps");
    /* queued: 5000 + 5250 + 5500 + 5750 */
    TAP_CHECK(qt.queued_ps == 21500, "burst: queued 21500 ps (got %llu)",
              (unsigned long long)qt.queued_ps);

    /*
     * The datapath narrower than the link: 128000 MB/s carries 8 bytes in
     * 62 ps (62.5 truncated), the datapath takes one per 125 ps.
     *  R1: out 5000, start 5000, link to 5062, exposed 5000
     *  R2: in 125, out 5125 > 5062: start 5125, exposed 5125 - 5062 = 63
     *  R3: in 250, out 5250, link free 5187: exposed 63
     */
    nfabric_timing_defaults(&p);
    p.link_mbps = 128000;
    q_init(&p);
    for (int i = 0; i < 3; i++) {
        nfabric_timing_account_at(&qt, NFABRIC_PATH_GBINARY, 8, 0);
    }
    TAP_CHECK(nfabric_timing_exposed_total_ps(&qt) == 5000 + 63 + 63 &&
              qt.link_free_ps == 5312 && qt.now_ps == 305312,
              "datapath-bound burst: each further request exposes the "
              "63 ps the datapath is slower (got %llu)",
              (unsigned long long)nfabric_timing_exposed_total_ps(&qt));

    /* Depth 0: no datapath at all, no pipeline limit either. */
    nfabric_timing_defaults(&p);
    p.depth = 0;
    q_init(&p);
    for (int i = 0; i < 3; i++) {
        nfabric_timing_account_at(&qt, NFABRIC_PATH_GBINARY, 8, 0);
    }
    TAP_CHECK(nfabric_timing_exposed_total_ps(&qt) == 0 &&
              qt.now_ps == 300750 && qt.queued_ps == 250 + 500,
              "depth 0 burst: nothing exposed, link-bound");
}

static void test_queue_dependent(void)
{
    NFabricTimingParams p;
    bool same = true;
    uint64_t now = 0;

    /*
     * Dependent stream: each access arrives when the previous completes,
     * so the link is idle and every low-bit access exposes 5000 ps:
     * the first version's figures exactly, runtime = total.
     */
    q_init(NULL);
    for (int i = 0; i < 300; i++) {
        unsigned path = i % 3;
        uint64_t n = 1 + i % 8;
        uint64_t want = 300000 + n * 1000000 / 32000 +
                        (path != NFABRIC_PATH_FP32 ? 5000 : 0);

        same &= nfabric_timing_now_ps(&qt) == now;
        same &= nfabric_timing_account(&qt, path, n) == want;
        now += want;
    }
    TAP_CHECK(same, "dependent stream: each access = 300000 + n/B (+5000), "
              "arriving at the previous completion");
    TAP_CHECK(nfabric_timing_total_ps(&qt) == now &&
              nfabric_timing_runtime_ps(&qt) == now &&
              nfabric_timing_exposed_total_ps(&qt) == 200 * 5000,
              "dependent: runtime = sum of times, 200 x 5000 ps exposed");
    TAP_CHECK(qt.max_in_flight == 1 && qt.max_queued == 1 &&
              qt.queued_ps == 200 * 5000,
              "dependent: one request in flight at a time");

    /* account() == account_at(now) */
    nfabric_timing_defaults(&p);
    q_init(&p);
    {
        static NFabricTiming u;

        nfabric_timing_init(&u, &p);
        for (int i = 0; i < 50; i++) {
            nfabric_timing_account(&qt, i & 1, 64);
            nfabric_timing_account_at(&u, i & 1, 64, nfabric_timing_now_ps(&u));
        }
        TAP_CHECK(nfabric_timing_total_ps(&qt) == nfabric_timing_total_ps(&u) &&
                  nfabric_timing_exposed_total_ps(&qt) ==
                  nfabric_timing_exposed_total_ps(&u) &&
                  qt.now_ps == u.now_ps,
                  "account() is account_at() at nfabric_timing_now_ps()");
    }

    /* clear restarts the model at time 0, parameters kept. */
    nfabric_timing_clear(&qt);
    TAP_CHECK(qt.now_ps == 0 && qt.link_free_ps == 0 && qt.occ_count == 0 &&
              qt.max_in_flight == 0 && nfabric_timing_accesses(&qt) == 0 &&
              nfabric_timing_runtime_ps(&qt) == 0 && qt.datapath_ps == 5000,
              "clear: time 0, empty queue, parameters kept");
}

static void test_queue_occupancy(void)
{
    NFabricTimingParams p;

    /*
     * Evenly spaced FP32 64-byte requests every 10000 ps: each is in
     * flight 302000 ps, so at an arrival 31 are in flight (those that
     * arrived in the last 302000 ps: 30 before it plus itself), and the
     * mean over the runtime tends to 30.2 (Little's law).
     */
    q_init(NULL);
    for (int i = 0; i < 1000; i++) {
        nfabric_timing_account_at(&qt, NFABRIC_PATH_FP32, 64,
                                  (uint64_t)i * 10000);
    }
    TAP_CHECK(qt.max_in_flight == 31 && qt.max_queued == 0,
              "spaced 10 ns: 31 in flight, none queued (got %u, %u)",
              qt.max_in_flight, qt.max_queued);
    /* runtime = 999 * 10000 + 302000 */
    TAP_CHECK(nfabric_timing_runtime_ps(&qt) == 10292000 &&
              nfabric_timing_total_ps(&qt) == 1000ull * 302000,
              "mean in flight = 302000000 / 10292000 (Little)");

    /* More in flight than the ring holds: maxima flagged "at least". */
    nfabric_timing_defaults(&p);
    q_init(&p);
    for (int i = 0; i < NFABRIC_T_OCC_SLOTS + 10; i++) {
        nfabric_timing_account_at(&qt, NFABRIC_PATH_FP32, 64, 0);
    }
    TAP_CHECK(qt.occ_saturated && qt.max_in_flight >= NFABRIC_T_OCC_SLOTS,
              "past %d in flight: saturated, max %u", NFABRIC_T_OCC_SLOTS,
              qt.max_in_flight);
    TAP_CHECK(qt.now_ps == 302000 + (NFABRIC_T_OCC_SLOTS + 9) * 2000ull,
              "timing figures stay exact when the ring saturates");
}

/* ---- records ----------------------------------------------------------- */

static void test_record_format(void)
{
    static const uint8_t want_hdr[NFABRIC_RECORD_HEADER_SIZE] = {
        'N', 'F', 'T', 'R', 1, 0, 32, 0, 16, 0, 1, 0,
        0xe8, 0x03, 0, 0, 5, 0, 0, 0, 0x2c, 0x01, 0, 0, 0x00, 0x7d, 0, 0,
        0, 0, 0, 0,
    };
    static const uint8_t want_rec[NFABRIC_RECORD_SIZE] = {
        8, 7, 6, 5, 4, 3, 2, 1, 0x40, 0, 0, 0, 2, 1, 0, 0,
    };
    uint8_t buf[NFABRIC_RECORD_HEADER_SIZE];
    NFabricTimingParams p;
    NFabricRecordHeader h;
    NFabricRecord r = { 0x0102030405060708ull, 64,
                             NFABRIC_PATH_GTERNARY, NFABRIC_RECORD_WRITE };
    NFabricRecord back;

    nfabric_timing_defaults(&p);
    nfabric_record_encode_header(buf, &p, NFABRIC_RECORD_F_DEPENDENT);
    TAP_CHECK(!memcmp(buf, want_hdr, sizeof(buf)),
              "header bytes: NFTR, v1, 32, 16, flags 1, 1000/5/300/32000 LE");
    TAP_CHECK(nfabric_record_decode_header(buf, &h) == 0 && h.version == 1 &&
              h.flags == 1 && !memcmp(&h.params, &p, sizeof(p)),
              "header decodes back");
    nfabric_record_encode(buf, &r);
    TAP_CHECK(!memcmp(buf, want_rec, NFABRIC_RECORD_SIZE),
              "record bytes: u64 arrival, u32 bytes, path, kind, 0 LE");
    TAP_CHECK(nfabric_record_decode(buf, &back) == 0 &&
              back.arrival_ps == r.arrival_ps && back.bytes == 64 &&
              back.path == 2 && back.kind == 1, "record decodes back");

    buf[13] = NFABRIC_RECORD_NUM_KINDS;
    TAP_CHECK(nfabric_record_decode(buf, &back) == NFABRIC_RECORD_EBAD,
              "unknown kind refused");
    buf[13] = NFABRIC_RECORD_READ;
    buf[12] = NFABRIC_NUM_PATHS;
    TAP_CHECK(nfabric_record_decode(buf, &back) == NFABRIC_RECORD_EBAD,
              "unknown path refused");
    buf[12] = 0;
    buf[15] = 1;
    TAP_CHECK(nfabric_record_decode(buf, &back) == NFABRIC_RECORD_EBAD,
              "reserved bits refused");
    buf[15] = 0;
    buf[13] = NFABRIC_RECORD_CLEAR;
    TAP_CHECK(nfabric_record_decode(buf, &back) == NFABRIC_RECORD_EBAD,
              "CLEAR with fields set refused");

    memcpy(buf, want_hdr, sizeof(buf));
    buf[0] ^= 1;
    TAP_CHECK(nfabric_record_decode_header(buf, &h) == NFABRIC_RECORD_EMAGIC,
              "bad magic refused");
    memcpy(buf, want_hdr, sizeof(buf));
    buf[4] = 2;
    TAP_CHECK(nfabric_record_decode_header(buf, &h) == NFABRIC_RECORD_EVERSION,
              "version 2 refused");
    memcpy(buf, want_hdr, sizeof(buf));
    buf[8] = 8;
    TAP_CHECK(nfabric_record_decode_header(buf, &h) == NFABRIC_RECORD_EVERSION,
              "record size below 16 refused");
    memcpy(buf, want_hdr, sizeof(buf));
    buf[12] = buf[13] = 0;
    TAP_CHECK(nfabric_record_decode_header(buf, &h) == NFABRIC_RECORD_EPARAMS,
              "clock 0 in the header refused");
    TAP_CHECK(strcmp(nfabric_record_strerror(NFABRIC_RECORD_ETRUNC),
                     "unknown error") != 0, "errors have messages");
}

static FILE *must_tmpfile(void)
{
    FILE *f = tmpfile();

    if (!f) {
        perror("tmpfile");
        exit(1);
    }
    return f;
}

static void test_record_roundtrip(void)
{
    NFabricTimingParams p = { 2000, 8, 150, 64000 };
    NFabricRecordReader rd;
    NFabricRecord r;
    FILE *f = must_tmpfile();
    bool ok = true;
    int n = 0, e;

    ok &= nfabric_record_write_header(f, &p, 0) == 0;
    for (int i = 0; i < 1000; i++) {
        ok &= nfabric_record_write_access(f, (uint64_t)i * 1234567u, i % 3,
                                         1 + i % 8, i & 1) == 0;
    }
    ok &= nfabric_record_write_clear(f) == 0;
    ok &= nfabric_record_write_access(f, UINT64_MAX, 1, UINT32_MAX, false) == 0;
    TAP_CHECK(ok, "writer: header, 1000 accesses, clear, extreme access");
    TAP_CHECK(nfabric_record_write_access(f, 0, 3, 8, true) ==
              NFABRIC_RECORD_EBAD &&
              nfabric_record_write_access(f, 0, 0, 1ull << 32, true) ==
              NFABRIC_RECORD_EBAD, "writer refuses bad path and size");
    TAP_CHECK(ftell(f) == 32 + 1002 * 16, "file size 32 + 1002 x 16 bytes");

    rewind(f);
    ok = nfabric_record_reader_open(&rd, f) == 0 &&
         !memcmp(&rd.h.params, &p, sizeof(p)) && rd.h.flags == 0;
    TAP_CHECK(ok, "reader: header with the parameters written");
    ok = true;
    while ((e = nfabric_record_read(&rd, &r)) > 0) {
        if (n < 1000) {
            ok &= r.arrival_ps == (uint64_t)n * 1234567u &&
                  r.path == n % 3 && r.bytes == 1u + n % 8 &&
                  r.kind == (n & 1 ? NFABRIC_RECORD_WRITE : NFABRIC_RECORD_READ);
        } else if (n == 1000) {
            ok &= r.kind == NFABRIC_RECORD_CLEAR;
        } else {
            ok &= r.arrival_ps == UINT64_MAX && r.bytes == UINT32_MAX &&
                  r.path == 1 && r.kind == NFABRIC_RECORD_READ;
        }
        n++;
    }
    TAP_CHECK(ok && e == 0 && n == 1002 && rd.records == 1002,
              "reader: the same 1002 records back, then end of file");
    fclose(f);

    /* A truncated record; an empty file; a larger header and record. */
    f = must_tmpfile();
    nfabric_record_write_header(f, &p, 0);
    nfabric_record_write_access(f, 1, 0, 8, true);
    fwrite("abc", 1, 3, f);
    rewind(f);
    nfabric_record_reader_open(&rd, f);
    TAP_CHECK(nfabric_record_read(&rd, &r) == 1 &&
              nfabric_record_read(&rd, &r) == NFABRIC_RECORD_ETRUNC,
              "truncated last record: ETRUNC");
    fclose(f);
    f = must_tmpfile();
    TAP_CHECK(nfabric_record_reader_open(&rd, f) == NFABRIC_RECORD_ETRUNC,
              "empty file: ETRUNC");
    fclose(f);

    f = must_tmpfile();
    {
        uint8_t hdr[NFABRIC_RECORD_HEADER_SIZE + 8] = { 0 };
        uint8_t rec[NFABRIC_RECORD_SIZE + 4] = { 0 };
        NFabricRecord w = { 777, 4, 2, NFABRIC_RECORD_WRITE };

        nfabric_record_encode_header(hdr, &p, 0);
        hdr[6] = sizeof(hdr);
        hdr[8] = sizeof(rec);
        fwrite(hdr, sizeof(hdr), 1, f);
        for (int i = 0; i < 2; i++) {
            nfabric_record_encode(rec, &w);
            fwrite(rec, sizeof(rec), 1, f);
        }
    }
    rewind(f);
    ok = nfabric_record_reader_open(&rd, f) == 0;
    ok &= nfabric_record_read(&rd, &r) == 1 && r.arrival_ps == 777 &&
          nfabric_record_read(&rd, &r) == 1 && r.bytes == 4 &&
          nfabric_record_read(&rd, &r) == 0;
    TAP_CHECK(ok, "larger header and records (a later version) are skipped");
    fclose(f);
}

static bool same_figures(const NFabricTiming *a, const NFabricTiming *b)
{
    bool ok = !memcmp(&a->p, &b->p, sizeof(a->p));

    for (unsigned i = 0; i < NFABRIC_NUM_PATHS; i++) {
        ok &= a->time_ps[i] == b->time_ps[i] &&
              a->exposed_ps[i] == b->exposed_ps[i] &&
              a->accesses[i] == b->accesses[i];
    }
    return ok && a->queued_ps == b->queued_ps &&
           a->link_busy_ps == b->link_busy_ps &&
           a->first_arrival_ps == b->first_arrival_ps &&
           a->max_in_flight == b->max_in_flight &&
           a->max_queued == b->max_queued && a->now_ps == b->now_ps &&
           nfabric_timing_exposed_ppm(a) == nfabric_timing_exposed_ppm(b);
}

static void test_record_replay(void)
{
    static NFabricTiming live, again;
    NFabricTimingParams p, other;
    NFabricRecordHeader h;
    uint64_t rng = 12345, arrival = 0;
    FILE *f;
    int64_t n;

    /*
     * Live as the device does it: dependent accounting, each access
     * recorded at nfabric_timing_now_ps() before it is accounted, with a
     * CLEAR_TIMING in the middle.
     */
    nfabric_timing_defaults(&p);
    nfabric_timing_init(&live, &p);
    f = must_tmpfile();
    nfabric_record_write_header(f, &p, NFABRIC_RECORD_F_DEPENDENT);
    for (int i = 0; i < 3000; i++) {
        unsigned path = (unsigned)(rng >> 33) % 3, len = 1 + (rng >> 40) % 8;

        rng = rng * 6364136223846793005ull + 1442695040888963407ull;
        if (i == 1000) {
            nfabric_timing_clear(&live);
            nfabric_record_write_clear(f);
        }
        nfabric_record_write_access(f, nfabric_timing_now_ps(&live), path,
                                   len, rng & 1);
        nfabric_timing_account(&live, path, len);
    }
    rewind(f);
    n = nfabric_record_replay(f, &again, NULL, &h);
    TAP_CHECK(n == 3001 && (h.flags & NFABRIC_RECORD_F_DEPENDENT),
              "replay: 3001 records (got %lld)", (long long)n);
    TAP_CHECK(same_figures(&live, &again),
              "dependent stream: replay gives the live figures exactly "
              "(total %llu ps, %u ppm)",
              (unsigned long long)nfabric_timing_total_ps(&again),
              nfabric_timing_exposed_ppm(&again));

    /* Other parameters: the replay follows the override, not the header. */
    other = p;
    other.depth = 10;
    rewind(f);
    nfabric_record_replay(f, &again, &other, NULL);
    TAP_CHECK(again.p.depth == 10 &&
              nfabric_timing_exposed_total_ps(&again) >
              nfabric_timing_exposed_total_ps(&live),
              "replay with depth 10 instead of 5 exposes more");
    other.clock_mhz = 0;
    rewind(f);
    TAP_CHECK(nfabric_record_replay(f, &again, &other, NULL) ==
              NFABRIC_RECORD_EPARAMS, "replay refuses bad parameters");
    fclose(f);

    /* Open arrivals near link bandwidth, mixed paths, 64-byte lines. */
    nfabric_timing_init(&live, &p);
    f = must_tmpfile();
    nfabric_record_write_header(f, &p, 0);
    for (int i = 0; i < 5000; i++) {
        unsigned path = (unsigned)(rng >> 33) % 3;

        rng = rng * 6364136223846793005ull + 1442695040888963407ull;
        arrival += (rng >> 32) % 4000;  /* mean 2000 ps: load ~1 */
        nfabric_record_write_access(f, arrival, path, 64, true);
        nfabric_timing_account_at(&live, path, 64, arrival);
    }
    rewind(f);
    n = nfabric_record_replay(f, &again, NULL, NULL);
    TAP_CHECK(n == 5000 && same_figures(&live, &again),
              "open stream near bandwidth: replay gives the live figures "
              "exactly (max in flight %u)", again.max_in_flight);
    fclose(f);
}

static void test_regimes(void)
{
    NFabricTimingParams p;
    uint32_t llc, bw;

    /* LLC-miss: dependent 8-byte low-bit accesses: 16653 ppm = 1.665 %. */
    nfabric_timing_defaults(&p);
    q_init(&p);
    for (int i = 0; i < 10000; i++) {
        nfabric_timing_account(&qt, NFABRIC_PATH_GBINARY, 8);
    }
    llc = nfabric_timing_exposed_ppm(&qt);
    /* Bandwidth pressure: the same arriving every 250 ps (the link rate). */
    q_init(&p);
    for (int i = 0; i < 10000; i++) {
        nfabric_timing_account_at(&qt, NFABRIC_PATH_GBINARY, 8,
                                  (uint64_t)i * 250);
    }
    bw = nfabric_timing_exposed_ppm(&qt);
    TAP_CHECK(llc == 16653, "LLC-miss regime: 16653 ppm (got %u)", llc);
    /* Only the first request exposes its datapath: 5000e6 / ~3e9 ps. */
    TAP_CHECK(bw == 2 && nfabric_timing_exposed_total_ps(&qt) == 5000,
              "bandwidth pressure: only the first exposes, 2 ppm (got %u)",
              bw);
}

int main(void)
{
    test_defaults();
    test_check();
    test_param_table();
    test_account();
    test_params();
    test_queue_back_to_back();
    test_queue_burst();
    test_queue_dependent();
    test_queue_occupancy();
    test_record_format();
    test_record_roundtrip();
    test_record_replay();
    test_regimes();
    return tap_done();
}
