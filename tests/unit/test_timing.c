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
 */
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "hw/mem/nfabric_timing.h"
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

int main(void)
{
    test_defaults();
    test_check();
    test_param_table();
    test_account();
    test_params();
    return tap_done();
}
