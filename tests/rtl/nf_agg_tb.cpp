// SPDX-License-Identifier: GPL-2.0-or-later
//
// nf_agg_tb: the Verilated datapath (hw/rtl/nf_agg.v) against the C engine
// (hw/mem/nfabric/nfabric_engine.c), line by line, bit for bit.
//
//   nf_agg_tb --latency               measured latency and throughput
//   nf_agg_tb --exhaustive [--rot N]  every lane input against the engine
//   nf_agg_tb --random N [--seed S]   N random full lines per path x width,
//                                     then N/4 random byte-masked lines and
//                                     N/16 lines of refused configurations
//   nf_agg_tb --replay FILE           the access stream of a record file
//   nf_agg_tb --depth-check           the timing model's default depth
//                                     equals the measured latency
//   nf_agg_tb --make-record FILE      write a synthetic record file (the
//                                     device's format, its writer) of
//                                     aggregation rounds in 8-byte pieces
//
// Prints TAP lines ("ok N - ..." / "not ok N - ...") and key=value
// figures.  On a mismatch it prints the first differing line (its inputs
// and configuration), the lane, and both outputs, and stops that check.
#include <cinttypes>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <deque>
#include <string>
#include <vector>

#include "Vnf_agg.h"
#include "verilated.h"

extern "C" {
#include "hw/mem/nfabric_engine.h"
#include "hw/mem/nfabric_record.h"
#include "hw/mem/nfabric_timing.h"
#include "hw/mem/nfabric_window.h"
}

#ifndef NF_LANES
#define NF_LANES 512
#endif

static const unsigned LANES = NF_LANES;
static const unsigned DBYTES = NF_LANES / 8;      // data bytes per line
static const unsigned CBYTES = NF_LANES * 2;      // counter bytes per line

// ---- bit plumbing between byte arrays and Verilator's port types --------

template <std::size_t W>
static void put(VlWide<W> &w, const uint8_t *p, unsigned n)
{
    for (std::size_t i = 0; i < W; i++) {
        uint32_t v = 0;
        for (unsigned k = 0; k < 4; k++) {
            if (4 * i + k < n) {
                v |= (uint32_t)p[4 * i + k] << (8 * k);
            }
        }
        w[i] = v;
    }
}
template <std::size_t W>
static void get(const VlWide<W> &w, uint8_t *p, unsigned n)
{
    for (unsigned i = 0; i < n; i++) {
        p[i] = (uint8_t)(w[i / 4] >> (8 * (i % 4)));
    }
}
template <typename T>
static void put(T &v, const uint8_t *p, unsigned n)
{
    uint64_t x = 0;
    for (unsigned i = 0; i < n; i++) {
        x |= (uint64_t)p[i] << (8 * i);
    }
    v = (T)x;
}
template <typename T>
static void get(const T &v, uint8_t *p, unsigned n)
{
    for (unsigned i = 0; i < n; i++) {
        p[i] = (uint8_t)((uint64_t)v >> (8 * i));
    }
}

// ---- a line and its expected result -------------------------------------

struct Line {
    bool write;
    unsigned path, width, tie;
    uint32_t thr;
    uint8_t be[DBYTES];             // 1 per enabled data byte
    uint8_t data[DBYTES];
    uint8_t cnt[CBYTES];
    uint16_t tag;
};

struct Result {
    unsigned err;
    uint8_t rdata[DBYTES];
    uint8_t cnt[CBYTES];
    uint32_t reserved;
};

// The engine's answer: one call per run of enabled bytes, as the device
// calls it for an access [off, off + len) of a window.  The window is the
// line: size DBYTES, counter area = the line's counter bytes.
static void reference(const Line &l, Result *r)
{
    NFabricAggCfg cfg = { l.path, l.width, l.tie, l.thr, DBYTES };

    r->err = nfabric_agg_check(&cfg);
    memcpy(r->cnt, l.cnt, CBYTES);
    memset(r->rdata, 0, DBYTES);
    r->reserved = 0;
    for (unsigned s = 0; s < DBYTES;) {
        unsigned e;
        if (!l.be[s]) {
            s++;
            continue;
        }
        for (e = s; e < DBYTES && l.be[e]; e++) {
        }
        if (l.write) {
            int64_t n = nfabric_agg_write(&cfg, r->cnt, s, l.data + s, e - s);
            if (n > 0) {
                r->reserved += (uint32_t)n;
            }
        } else {
            nfabric_agg_read(&cfg, r->cnt, s, r->rdata + s, e - s);
        }
        s = e;
    }
}

// ---- the model ------------------------------------------------------------

static VerilatedContext *ctx;
static Vnf_agg *top;
static uint64_t cycles;

static void drive(const Line *l)
{
    if (!l) {
        top->i_valid = 0;
        return;
    }
    uint8_t bem[(DBYTES + 7) / 8];
    memset(bem, 0, sizeof(bem));
    for (unsigned b = 0; b < DBYTES; b++) {
        bem[b / 8] |= (uint8_t)((l->be[b] ? 1 : 0) << (b % 8));
    }
    top->i_valid = 1;
    top->i_write = l->write;
    top->i_path = l->path & 0xf;
    top->i_width = l->width & 0xff;
    top->i_tie = l->tie & 0xf;
    top->i_thr = l->thr;
    put(top->i_be, bem, sizeof(bem));
    put(top->i_data, l->data, DBYTES);
    put(top->i_cnt, l->cnt, CBYTES);
    top->i_tag = l->tag;
}

static void tick(void)
{
    top->clk = 0;
    top->eval();
    top->clk = 1;
    top->eval();
    cycles++;
}

static void reset(void)
{
    top->rst = 1;
    top->i_valid = 0;
    for (int i = 0; i < 8; i++) {
        tick();
    }
    top->rst = 0;
}

static void sample(Result *r, uint16_t *tag)
{
    r->err = top->o_err;
    get(top->o_rdata, r->rdata, DBYTES);
    get(top->o_cnt, r->cnt, CBYTES);
    r->reserved = top->o_reserved;
    *tag = top->o_tag;
}

// ---- checking ---------------------------------------------------------------

static int test_no;
static int failures;

static void tap(bool ok, const std::string &what)
{
    printf("%s %d - %s\n", ok ? "ok" : "not ok", ++test_no, what.c_str());
    fflush(stdout);
    if (!ok) {
        failures++;
    }
}

static const char *path_name(unsigned p)
{
    return p == NFABRIC_PATH_GBINARY ? "gbinary" :
           p == NFABRIC_PATH_GTERNARY ? "gternary" : "bad-path";
}

// The lane, counter and data bits of element e under l's configuration.
static void print_element(const Line &l, unsigned byte_in_cnt,
                          const Result &exp, const Result &got)
{
    unsigned wb = l.width == 16 ? 2 : 1;
    unsigned e = byte_in_cnt / wb;
    unsigned epb = l.path == NFABRIC_PATH_GTERNARY ? 4 : 8;
    unsigned db = e / epb, bits = 8 / epb;
    int32_t in = nfabric_counter_get(l.cnt, wb * 8, e);
    int32_t ev = nfabric_counter_get(exp.cnt, wb * 8, e);
    int32_t gv = nfabric_counter_get(got.cnt, wb * 8, e);

    printf("#   element %u (lane %u, counter byte %u): data byte %u = 0x%02x "
           "(code %u), enabled %u, count in %d, engine %d, rtl %d\n",
           e, byte_in_cnt / 2, byte_in_cnt, db, l.data[db],
           (l.data[db] >> (bits * (e % epb))) & ((1u << bits) - 1),
           l.be[db], in, ev, gv);
}

static void print_line(const char *why, uint64_t n, const Line &l,
                       const Result &exp, const Result &got)
{
    printf("# MISMATCH (%s) at line %" PRIu64 " (tag %u): %s %s width %u "
           "tie %u threshold %" PRIu32 "\n", why, n, l.tag,
           l.write ? "write" : "read", path_name(l.path), l.width, l.tie,
           l.thr);
    printf("#   err engine %u rtl %u; reserved engine %" PRIu32 " rtl %" PRIu32
           "\n", exp.err, got.err, exp.reserved, got.reserved);
    printf("#   data:");
    for (unsigned b = 0; b < DBYTES; b++) {
        printf(" %02x", l.data[b]);
    }
    printf("\n#   byte enables:");
    for (unsigned b = 0; b < DBYTES; b++) {
        printf("%u", l.be[b] ? 1 : 0);
    }
    printf("\n");
    for (unsigned b = 0; b < CBYTES; b++) {
        if (exp.cnt[b] != got.cnt[b]) {
            print_element(l, b, exp, got);
            break;
        }
    }
    for (unsigned b = 0; b < DBYTES; b++) {
        if (exp.rdata[b] != got.rdata[b]) {
            unsigned epb = l.path == NFABRIC_PATH_GTERNARY ? 4 : 8;
            unsigned wb = l.width == 16 ? 2 : 1;
            printf("#   read-out byte %u: engine 0x%02x rtl 0x%02x; its "
                   "counts:", b, exp.rdata[b], got.rdata[b]);
            for (unsigned k = 0; k < epb; k++) {
                printf(" %d", nfabric_counter_get(l.cnt, wb * 8,
                                                  b * epb + k));
            }
            printf(" (lanes %u..%u)\n", b * epb * wb / 2,
                   ((b + 1) * epb * wb - 1) / 2);
            break;
        }
    }
}

static bool same(const Result &a, const Result &b)
{
    return a.err == b.err && a.reserved == b.reserved &&
           !memcmp(a.rdata, b.rdata, DBYTES) && !memcmp(a.cnt, b.cnt, CBYTES);
}

// Streams lines through the pipeline, one per cycle, and compares each
// result with the engine's.  Returns the number of mismatching lines
// (it stops at the first one, printing it).
struct Checker {
    std::deque<Line> inflight;
    uint64_t lines = 0, mismatches = 0, bubbles = 0;
    uint16_t next_tag = 0;
    bool stopped = false;

    void out_check(void)
    {
        if (!top->o_valid) {
            return;
        }
        Result got, exp;
        uint16_t tag;
        sample(&got, &tag);
        if (inflight.empty()) {
            printf("# MISMATCH: o_valid with no line in flight\n");
            mismatches++;
            stopped = true;
            return;
        }
        Line l = inflight.front();
        inflight.pop_front();
        reference(l, &exp);
        lines++;
        if (tag != l.tag) {
            printf("# MISMATCH: tag %u out, %u expected (order)\n", tag,
                   l.tag);
            mismatches++;
            stopped = true;
        } else if (!same(exp, got)) {
            if (!mismatches) {
                print_line("engine vs rtl", lines - 1, l, exp, got);
            }
            mismatches++;
            stopped = true;
        }
    }

    void push(Line &l)
    {
        l.tag = next_tag++;
        drive(&l);
        inflight.push_back(l);
        tick();
        out_check();
    }

    void drain(void)
    {
        drive(nullptr);
        for (int i = 0; i < 64 && !inflight.empty(); i++) {
            tick();
            out_check();
        }
        if (!inflight.empty()) {
            printf("# MISMATCH: %zu lines never came out\n", inflight.size());
            mismatches++;
        }
    }
};

// ---- random numbers -----------------------------------------------------

static uint64_t rng_state = 0x9e3779b97f4a7c15ull;

static uint64_t rnd(void)
{
    uint64_t z = (rng_state += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

static void fill_random(uint8_t *p, unsigned n)
{
    for (unsigned i = 0; i < n; i += 8) {
        uint64_t v = rnd();
        for (unsigned k = 0; k < 8 && i + k < n; k++) {
            p[i + k] = (uint8_t)(v >> (8 * k));
        }
    }
}

// A count biased to where the arithmetic turns: the extremes, 0, +-1, +-T.
static int32_t biased_count(unsigned width, uint32_t thr)
{
    int32_t max = width == 8 ? 127 : 32767, t = (int32_t)thr;
    switch (rnd() % 12) {
    case 0: return max;
    case 1: return -max - 1;
    case 2: return max - 1;
    case 3: return -max;
    case 4: return 0;
    case 5: return (int32_t)(rnd() % 3) - 1;
    case 6: return t + (int32_t)(rnd() % 3) - 1;
    case 7: return -t + (int32_t)(rnd() % 3) - 1;
    default: return (int32_t)(rnd() % (2u * (uint32_t)max + 2)) - max - 1;
    }
}

static uint32_t random_thr(unsigned width)
{
    uint32_t max = width == 8 ? 127 : 32767;
    switch (rnd() % 5) {
    case 0: return 1;
    case 1: return max;
    case 2: return max / 2;
    default: return 1 + (uint32_t)(rnd() % max);
    }
}

// A valid random configuration of the given path and width.
static void random_cfg(Line &l, unsigned path, unsigned width)
{
    l.write = rnd() & 1;
    l.path = path;
    l.width = width;
    l.tie = rnd() & 1;
    l.thr = random_thr(width);
    if (path == NFABRIC_PATH_GBINARY && (rnd() & 3) == 0) {
        l.thr = (uint32_t)rnd();         // ignored on G-Binary
    }
    if (path == NFABRIC_PATH_GTERNARY && (rnd() & 3) == 0) {
        l.tie = (unsigned)(rnd() & 0xf); // ignored on G-Ternary
    }
}

static void random_counters(Line &l)
{
    unsigned wb = l.width == 16 ? 2 : 1;
    unsigned width = l.width == 16 ? 16 : 8;
    fill_random(l.cnt, CBYTES);
    for (unsigned e = 0; e < CBYTES / wb; e++) {
        if (rnd() % 4 == 0) {
            nfabric_counter_set(l.cnt, width, e, biased_count(width, l.thr));
        }
    }
}

// ---- the checks -------------------------------------------------------------

static const unsigned PATHS[2] = { NFABRIC_PATH_GBINARY,
                                   NFABRIC_PATH_GTERNARY };
static const unsigned WIDTHS[2] = { 8, 16 };

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

static int measured_latency(void)
{
    Line l;
    memset(&l, 0, sizeof(l));
    l.write = 1;
    l.path = NFABRIC_PATH_GBINARY;
    l.width = 8;
    memset(l.be, 1, DBYTES);
    reset();
    for (int i = 0; i < 4; i++) {
        tick();
        if (top->o_valid) {
            return -1;          // valid out of nothing
        }
    }
    // Cycle 0: the line is on the inputs at a rising edge.
    drive(&l);
    tick();
    drive(nullptr);
    for (int c = 1; c <= 64; c++) {
        if (top->o_valid) {
            return c;
        }
        tick();
    }
    return -1;
}

static void check_latency(void)
{
    int lat = measured_latency();
    printf("rtl_latency_cycles=%d\n", lat);
    tap(lat > 0, "latency measured from i_valid to o_valid: " +
        std::to_string(lat) + " cycles");

    // The timing model with the measured depth (the other parameters at
    // their defaults): exposed overhead of dependent 8-byte low-bit
    // accesses, the full LLC-miss regime the paper bounds at 1.67 %.
    if (lat > 0) {
        NFabricTimingParams p;
        NFabricTiming *t = new NFabricTiming;
        nfabric_timing_defaults(&p);
        p.depth = (uint32_t)lat;
        nfabric_timing_init(t, &p);
        for (int i = 0; i < 10000; i++) {
            nfabric_timing_account(t, NFABRIC_PATH_GBINARY, 8);
        }
        printf("rtl_timing_clock_mhz=%u\nrtl_timing_service_ns=%u\n"
               "rtl_exposed_pct_llc_miss=%.3f\npaper_exposed_bound_pct=1.67\n",
               p.clock_mhz, p.service_ns,
               nfabric_timing_exposed_ppm(t) / 1e4);
        delete t;
    }

    // Throughput: K lines on K consecutive cycles must come out on K
    // consecutive cycles, in order.
    const unsigned K = 1000;
    Checker ck;
    uint64_t first = 0, last = 0, outs = 0;
    reset();
    for (unsigned i = 0; i < K + 64; i++) {
        Line l;
        if (i < K) {
            memset(&l, 0, sizeof(l));
            random_cfg(l, PATHS[i % 2], WIDTHS[(i / 2) % 2]);
            memset(l.be, 1, DBYTES);
            fill_random(l.data, DBYTES);
            random_counters(l);
            l.tag = (uint16_t)i;
            drive(&l);
            ck.inflight.push_back(l);
        } else {
            drive(nullptr);
        }
        tick();
        if (top->o_valid) {
            if (!outs) {
                first = cycles;
            }
            last = cycles;
            outs++;
        }
        ck.out_check();
    }
    double lpc = outs ? (double)outs / (double)(last - first + 1) : 0;
    printf("rtl_lines_per_cycle=%.3f\n", lpc);
    tap(outs == K && last - first + 1 == K && !ck.mismatches,
        "throughput: " + std::to_string(outs) + " lines in " +
        std::to_string(outs ? last - first + 1 : 0) +
        " cycles, in order, all equal to the engine");
}

// Every counter value (width 8: every pair of values in a lane's two
// counters) against every code (pair), tie rule and threshold of the sweep,
// with the values rotated through the lanes (--rot: how many rotations).
static void check_exhaustive(unsigned rot_req)
{
    for (unsigned wi = 0; wi < 2; wi++) {
        for (unsigned pi = 0; pi < 2; pi++) {
            unsigned width = WIDTHS[wi], path = PATHS[pi];
            unsigned epb = path == NFABRIC_PATH_GTERNARY ? 4 : 8;
            unsigned elems = DBYTES * epb;         // elements per line
            unsigned bits = 8 / epb;               // code bits
            unsigned ncodes = 1u << bits;
            // A "case" is what one element lane sees: width 16 a value,
            // width 8 the pair (this element's value, its neighbour's).
            uint32_t vals = width == 16 ? 65536u : 65536u;
            // Configurations: writes with every code (pair), reads with
            // both tie rules or the threshold sweep.
            std::vector<Line> cfgs;
            Line c;
            memset(&c, 0, sizeof(c));
            c.path = path;
            c.width = width;
            memset(c.be, 1, DBYTES);
            unsigned ncode_cases = width == 8 ? ncodes * ncodes : ncodes;
            for (unsigned k = 0; k < ncode_cases; k++) {
                c.write = 1;
                c.thr = 1;
                c.tie = k;      // remembered below as the code case
                cfgs.push_back(c);
            }
            c.write = 0;
            if (path == NFABRIC_PATH_GBINARY) {
                for (unsigned t = 0; t < 2; t++) {
                    c.tie = t;
                    cfgs.push_back(c);
                }
            } else {
                static const uint32_t t8[] = { 0, 1, 2, 3, 63, 64, 100, 126,
                                               127, 128, 255, 256, 32767,
                                               0xffffffffu };
                static const uint32_t t16[] = { 0, 1, 2, 3, 127, 128, 255,
                                                256, 16383, 16384, 32766,
                                                32767, 32768, 65535, 65536,
                                                0xffffffffu };
                const uint32_t *ts = width == 8 ? t8 : t16;
                unsigned nt = width == 8 ? sizeof(t8) / 4 : sizeof(t16) / 4;
                for (unsigned t = 0; t < nt; t++) {
                    c.thr = ts[t];
                    c.tie = 0;
                    cfgs.push_back(c);
                }
            }
            // Distinct lane positions: every element (width 16), every
            // lane's pair of elements (width 8).
            unsigned rot = rot_req < (width == 8 ? elems / 2 : elems) ?
                           rot_req : (width == 8 ? elems / 2 : elems);
            Checker ck;
            uint64_t cases = 0;
            reset();
            for (const Line &cf : cfgs) {
                unsigned code_case = cf.write ? cf.tie : 0;
                for (unsigned r = 0; r < rot && !ck.stopped; r++) {
                    // Lane position shift of this rotation.
                    unsigned shift = (unsigned)((uint64_t)r * elems / rot) &
                                     ~1u;   // keeps width-8 pairs in a lane
                    for (uint32_t base = 0; base < vals && !ck.stopped;) {
                        Line l = cf;
                        if (cf.write) {
                            l.tie = 0;
                        }
                        memset(l.cnt, 0, CBYTES);
                        memset(l.data, 0, DBYTES);
                        unsigned used = 0;
                        for (unsigned e = 0; e < elems; e++) {
                            unsigned pos = (e + shift) % elems;
                            uint32_t v;
                            if (width == 16) {
                                v = (base + e) & 0xffff;
                            } else {
                                // Element pairs (2i, 2i+1) of a lane:
                                // low counter = case % 256, high = case / 256.
                                uint32_t cs = base + e / 2;
                                v = (e % 2 ? cs >> 8 : cs) & 0xff;
                            }
                            // Write the raw value (no clamping needed).
                            if (width == 16) {
                                l.cnt[2 * pos] = (uint8_t)v;
                                l.cnt[2 * pos + 1] = (uint8_t)(v >> 8);
                            } else {
                                l.cnt[pos] = (uint8_t)v;
                            }
                            unsigned code;
                            if (width == 8) {
                                // code pair: low element code_case % ncodes,
                                // high element code_case / ncodes (pairs
                                // stay in one lane: shift is even).
                                code = (e % 2) ? code_case / ncodes :
                                                 code_case % ncodes;
                            } else {
                                code = code_case;
                            }
                            l.data[pos / epb] |=
                                (uint8_t)(code << (bits * (pos % epb)));
                            used++;
                        }
                        cases += width == 16 ? elems : elems / 2;
                        base += width == 16 ? elems : elems / 2;
                        ck.push(l);
                        (void)used;
                    }
                }
            }
            ck.drain();
            char what[240];
            unsigned nreads = (unsigned)cfgs.size() - ncode_cases;
            snprintf(what, sizeof(what),
                     "exhaustive %s width %u: %s x (%u writes: every code%s"
                     " + %u reads: %s), %u lane rotations = %" PRIu64
                     " lane cases in %" PRIu64 " lines, %" PRIu64
                     " mismatches", path_name(path), width,
                     width == 16 ? "65536 counter values" :
                                   "65536 pairs of a lane's two counters",
                     ncode_cases, width == 8 ? " pair" : "", nreads,
                     path == NFABRIC_PATH_GBINARY ? "both tie rules" :
                                                    "threshold sweep",
                     rot, cases, ck.lines, ck.mismatches);
            printf("rtl_exhaustive_%s_w%u_cases=%" PRIu64 "\n",
                   path_name(path), width, cases);
            tap(!ck.mismatches && ck.lines > 0, what);
        }
    }
}

static void check_random(uint64_t n)
{
    double t0 = now_s();
    uint64_t total = 0;
    for (unsigned wi = 0; wi < 2; wi++) {
        for (unsigned pi = 0; pi < 2; pi++) {
            Checker ck;
            reset();
            for (uint64_t i = 0; i < n && !ck.stopped; i++) {
                Line l;
                random_cfg(l, PATHS[pi], WIDTHS[wi]);
                memset(l.be, 1, DBYTES);
                fill_random(l.data, DBYTES);
                random_counters(l);
                ck.push(l);
            }
            ck.drain();
            total += ck.lines;
            printf("rtl_random_%s_w%u_lines=%" PRIu64 "\n",
                   path_name(PATHS[pi]), WIDTHS[wi], ck.lines);
            tap(!ck.mismatches && ck.lines == n,
                std::string("random full lines, ") + path_name(PATHS[pi]) +
                " width " + std::to_string(WIDTHS[wi]) + ": " +
                std::to_string(ck.lines) + " lines, " +
                std::to_string(ck.mismatches) + " mismatches");
        }
    }

    // Byte-masked lines: a random run [off, off + len) (the engine's
    // accesses) or a random mask, every path, width and configuration.
    {
        Checker ck;
        reset();
        for (uint64_t i = 0; i < n / 4 && !ck.stopped; i++) {
            Line l;
            random_cfg(l, PATHS[rnd() & 1], WIDTHS[rnd() & 1]);
            fill_random(l.data, DBYTES);
            random_counters(l);
            if (rnd() & 1) {
                unsigned off = (unsigned)(rnd() % DBYTES);
                unsigned len = (unsigned)(rnd() % (DBYTES - off + 1));
                if (rnd() & 1) {
                    len = len > 8 ? 8 : len;     // QEMU's 8-byte pieces
                }
                for (unsigned b = 0; b < DBYTES; b++) {
                    l.be[b] = b >= off && b < off + len;
                }
            } else {
                for (unsigned b = 0; b < DBYTES; b++) {
                    l.be[b] = (uint8_t)(rnd() & 1);
                }
            }
            ck.push(l);
        }
        ck.drain();
        total += ck.lines;
        printf("rtl_random_masked_lines=%" PRIu64 "\n", ck.lines);
        tap(!ck.mismatches && ck.lines == n / 4,
            "random byte-masked and partial lines: " +
            std::to_string(ck.lines) + " lines, " +
            std::to_string(ck.mismatches) + " mismatches");
    }

    // Refused configurations: any path, width, tie and threshold field.
    {
        Checker ck;
        uint64_t refused = 0;
        reset();
        for (uint64_t i = 0; i < n / 16 && !ck.stopped; i++) {
            Line l;
            random_cfg(l, PATHS[rnd() & 1], WIDTHS[rnd() & 1]);
            switch (rnd() % 4) {
            case 0: l.path = (unsigned)(rnd() & 0xf); break;
            case 1: l.width = (unsigned)(rnd() & 0xff); break;
            case 2: l.tie = (unsigned)(rnd() & 0xf); break;
            default:
                l.thr = (rnd() & 1) ? 0 : (uint32_t)rnd() >> (rnd() % 32);
                break;
            }
            memset(l.be, 1, DBYTES);
            fill_random(l.data, DBYTES);
            random_counters(l);
            NFabricAggCfg cfg = { l.path, l.width, l.tie, l.thr, DBYTES };
            refused += nfabric_agg_check(&cfg) != NFABRIC_ERR_NONE;
            ck.push(l);
        }
        ck.drain();
        total += ck.lines;
        printf("rtl_random_config_lines=%" PRIu64 "\n", ck.lines);
        tap(!ck.mismatches && ck.lines == n / 16 && refused > 0,
            "random configuration fields (" + std::to_string(refused) +
            " refused): " + std::to_string(ck.lines) + " lines, " +
            std::to_string(ck.mismatches) + " mismatches");
    }
    double dt = now_s() - t0;
    printf("rtl_sim_lines_per_s=%.0f\n", dt > 0 ? (double)total / dt : 0.0);
}

// ---- record replay ------------------------------------------------------------
//
// A record file holds each access's arrival, length, path and kind, not its
// address or data.  The replay gives every low-bit access the next offset of
// a window of that path (sequential, wrapping), seeded pseudo-random data,
// and the window configuration below; splits it into lines with byte masks
// as the device sees them; and runs it through the RTL, whose results are
// written back to a counter memory, and through the engine on a second
// memory.  Every line's read-out and counters, and both memories at the end,
// are compared.  Lines that touch a counter line still in the pipeline wait
// (the datapath holds no state: read-after-write order is the counter
// memory's job).

struct Window {
    NFabricAggCfg cfg;
    std::vector<uint8_t> rtl_mem, eng_mem;     // counter areas
    uint64_t next;
};

static void check_replay(const char *file)
{
    FILE *f = fopen(file, "rb");
    NFabricRecordReader rd;
    NFabricRecord rec;
    if (!f || nfabric_record_reader_open(&rd, f)) {
        tap(false, std::string("replay: cannot read record file ") + file);
        if (f) {
            fclose(f);
        }
        return;
    }
    const uint64_t wsize = 64 * 1024;
    Window win[2];
    win[0].cfg = { NFABRIC_PATH_GBINARY, 8, NFABRIC_TIE_POSITIVE, 1, wsize };
    win[1].cfg = { NFABRIC_PATH_GTERNARY, 16, 0, 2, wsize };
    for (Window &w : win) {
        w.rtl_mem.assign(nfabric_counter_bytes(w.cfg.path, w.cfg.width,
                                               wsize), 0);
        w.eng_mem = w.rtl_mem;
        w.next = 0;
    }
    uint64_t accesses = 0, lines = 0, mismatches = 0, stalls = 0, other = 0;
    std::vector<uint8_t> data, out;
    reset();
    while (nfabric_record_read(&rd, &rec) > 0 && !mismatches) {
        if (rec.kind == NFABRIC_RECORD_CLEAR ||
            (rec.path != NFABRIC_PATH_GBINARY &&
             rec.path != NFABRIC_PATH_GTERNARY) || rec.bytes == 0) {
            other++;
            continue;
        }
        Window &w = win[rec.path == NFABRIC_PATH_GTERNARY];
        uint64_t len = rec.bytes % wsize ? rec.bytes % wsize : wsize;
        if (w.next + len > wsize) {
            w.next = 0;
        }
        uint64_t off = w.next;
        w.next += len;
        accesses++;
        data.resize(len);
        fill_random(data.data(), (unsigned)len);
        bool write = rec.kind == NFABRIC_RECORD_WRITE;
        // The engine does the whole access at once, as the device does.
        out.assign(len, 0);
        if (write) {
            nfabric_agg_write(&w.cfg, w.eng_mem.data(), off, data.data(), len);
        } else {
            nfabric_agg_read(&w.cfg, w.eng_mem.data(), off, out.data(), len);
        }
        // The RTL line by line.  Counter bytes of window line L:
        // [L * cpl, (L + 1) * cpl), cpl = DBYTES * elems/byte * width/8.
        unsigned epb = w.cfg.path == NFABRIC_PATH_GTERNARY ? 4 : 8;
        uint64_t cpl = (uint64_t)DBYTES * epb * w.cfg.width / 8;
        for (uint64_t L = off / DBYTES; L * DBYTES < off + len; L++) {
            Line l;
            memset(&l, 0, sizeof(l));
            l.write = write;
            l.path = w.cfg.path;
            l.width = w.cfg.width;
            l.tie = w.cfg.tie;
            l.thr = w.cfg.threshold;
            for (unsigned b = 0; b < DBYTES; b++) {
                uint64_t a = L * DBYTES + b;
                l.be[b] = a >= off && a < off + len;
                l.data[b] = l.be[b] ? data[a - off] : 0;
            }
            memcpy(l.cnt, w.rtl_mem.data() + L * cpl, cpl);
            // One line in flight at a time per counter line: the replay
            // is sequential, so this line waits for the previous one.
            drive(&l);
            tick();
            drive(nullptr);
            int c = 1;
            while (!top->o_valid && c < 64) {
                tick();
                c++;
                stalls++;
            }
            Result got;
            uint16_t tag;
            sample(&got, &tag);
            lines++;
            memcpy(w.rtl_mem.data() + L * cpl, got.cnt, cpl);
            bool bad = !top->o_valid || got.err != 0;
            if (!write) {
                for (unsigned b = 0; b < DBYTES; b++) {
                    uint64_t a = L * DBYTES + b;
                    if (l.be[b] && got.rdata[b] != out[a - off]) {
                        bad = true;
                    }
                }
            }
            if (memcmp(w.rtl_mem.data() + L * cpl, w.eng_mem.data() + L * cpl,
                       cpl)) {
                bad = true;
            }
            if (bad) {
                Result exp;
                reference(l, &exp);
                print_line("replay", lines - 1, l, exp, got);
                mismatches++;
                break;
            }
            tick();     // the bubble after the line's result
        }
    }
    fclose(f);
    for (Window &w : win) {
        if (w.rtl_mem != w.eng_mem) {
            mismatches++;
        }
    }
    printf("rtl_replay_accesses=%" PRIu64 "\nrtl_replay_lines=%" PRIu64
           "\nrtl_replay_mismatches=%" PRIu64 "\n", accesses, lines,
           mismatches);
    tap(!mismatches && lines > 0,
        std::string("replay of ") + file + ": " + std::to_string(accesses) +
        " low-bit accesses (" + std::to_string(other) +
        " other records), " + std::to_string(lines) + " lines, " +
        std::to_string(mismatches) + " mismatches");
    (void)stalls;
}

// A stream shaped like a guest's rounds as QEMU splits them: 4 workers
// write a 4 KiB G-Binary window and a 2 KiB G-Ternary window in 8-byte
// pieces, one reads both back, FP32 traffic in between, a timing clear.
static int make_record(const char *file)
{
    FILE *f = fopen(file, "wb");
    NFabricTimingParams p;
    uint64_t t = 0;
    int err;

    if (!f) {
        perror(file);
        return 1;
    }
    nfabric_timing_defaults(&p);
    err = nfabric_record_write_header(f, &p, NFABRIC_RECORD_F_DEPENDENT);
    for (int round = 0; round < 3 && !err; round++) {
        for (int w = 0; w < 4 && !err; w++) {
            for (unsigned o = 0; o < 4096 && !err; o += 8, t += 300000) {
                err = nfabric_record_write_access(f, t, NFABRIC_PATH_GBINARY,
                                                  8, true);
            }
            for (unsigned o = 0; o < 2048 && !err; o += 8, t += 300000) {
                err = nfabric_record_write_access(f, t, NFABRIC_PATH_GTERNARY,
                                                  8, true);
            }
            for (unsigned o = 0; o < 256 && !err; o += 8, t += 300000) {
                err = nfabric_record_write_access(f, t, NFABRIC_PATH_FP32, 8,
                                                  true);
            }
        }
        for (unsigned o = 0; o < 4096 && !err; o += 8, t += 300000) {
            err = nfabric_record_write_access(f, t, NFABRIC_PATH_GBINARY, 8,
                                              false);
        }
        for (unsigned o = 0; o < 2048 && !err; o += 8, t += 300000) {
            err = nfabric_record_write_access(f, t, NFABRIC_PATH_GTERNARY, 8,
                                              false);
        }
        if (!err && round == 1) {
            err = nfabric_record_write_clear(f);
        }
    }
    if (fclose(f) && !err) {
        err = NFABRIC_RECORD_EIO;
    }
    if (err) {
        fprintf(stderr, "%s: %s\n", file, nfabric_record_strerror(err));
        return 1;
    }
    return 0;
}

int main(int argc, char **argv)
{
    ctx = new VerilatedContext;
    ctx->commandArgs(argc, argv);
    top = new Vnf_agg{ ctx };
    int ran = 0;

    for (int i = 1; i < argc; i++) {
        std::string a = argv[i];
        auto val = [&](void) -> const char * {
            if (i + 1 >= argc) {
                fprintf(stderr, "nf_agg_tb: %s needs a value\n", a.c_str());
                exit(2);
            }
            return argv[++i];
        };
        if (a == "--seed") {
            rng_state = strtoull(val(), nullptr, 0);
        } else if (a == "--latency") {
            check_latency();
            ran++;
        } else if (a == "--make-record") {
            if (make_record(val())) {
                return 1;
            }
            ran++;
        } else if (a == "--depth-check") {
            NFabricTimingParams p;
            nfabric_timing_defaults(&p);
            unsigned long d = p.depth;
            int lat = measured_latency();
            printf("rtl_latency_cycles=%d\ntiming_default_depth=%lu\n", lat, d);
            tap(lat > 0 && (unsigned long)lat == d,
                "timing model's datapath depth default "
                "(nfabric_timing_defaults: " +
                std::to_string(d) + ") equals the measured latency (" +
                std::to_string(lat) + ")");
            ran++;
        } else if (a == "--exhaustive") {
            unsigned rot = 1;
            if (i + 2 < argc && std::string(argv[i + 1]) == "--rot") {
                rot = (unsigned)strtoul(argv[i + 2], nullptr, 0);
                i += 2;
            }
            check_exhaustive(rot ? rot : 1);
            ran++;
        } else if (a == "--random") {
            check_random(strtoull(val(), nullptr, 0));
            ran++;
        } else if (a == "--replay") {
            check_replay(val());
            ran++;
        } else {
            fprintf(stderr, "nf_agg_tb: unknown argument %s\n", a.c_str());
            return 2;
        }
    }
    if (!ran) {
        fprintf(stderr, "usage: nf_agg_tb [--seed S] [--latency] "
                "[--exhaustive [--rot N]] [--random N] [--replay FILE] "
                "[--depth-check] [--make-record FILE]\n");
        return 2;
    }
    printf("rtl_failures=%d\n", failures);
    top->final();
    delete top;
    delete ctx;
    return failures ? 1 : 0;
}
