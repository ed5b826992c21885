/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * nfabric-timing: the timing model offline (docs/timing.md).
 *
 *   nfabric-timing --replay FILE [PARAMS]
 *       replay a record written by the device (record=FILE) or by
 *       --record, through the same model code; prints total_ps,
 *       exposed_ppm and the per-path time/exposed figures exactly as the
 *       device's T_* registers read after the same stream.  PARAMS override
 *       the header's parameters (what-if).
 *
 *   nfabric-timing --dependent [SYNTH] [PARAMS]
 *       synthetic full LLC-miss regime: each access arrives when the
 *       previous one completes (what the device does).
 *
 *   nfabric-timing --load FRACTION [--arrivals fixed|poisson] [--seed N]
 *                  [SYNTH] [PARAMS]
 *       synthetic open load: requests arrive at FRACTION of the link
 *       bandwidth (evenly spaced, or Poisson with that mean rate).
 *
 *   SYNTH:  --count N (10000)  --size BYTES (8)  --lowbit-share X (1.0)
 *           --record FILE (write the generated stream as a record)
 *   PARAMS: --clock-mhz F  --depth D  --service-ns S  --link-mbps B
 *
 * Output: key=value lines.  Exit status 0, or 1 on a bad record, 2 on bad
 * usage.
 */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hw/mem/nfabric_timing.h"
#include "hw/mem/nfabric_record.h"

static const char *const path_names[NFABRIC_NUM_PATHS] = {
    "fp32", "gbinary", "gternary",
};

enum mode { MODE_NONE, MODE_REPLAY, MODE_DEPENDENT, MODE_LOAD };

typedef struct Options {
    enum mode mode;
    const char *replay, *record;
    double load;
    bool poisson;
    uint64_t seed;
    uint64_t count;
    uint64_t size;
    double lowbit_share;
    NFabricTimingParams p;
    bool p_set[NFABRIC_T_NUM_PARAMS];
} Options;

static void usage(FILE *f)
{
    fprintf(f,
"usage: nfabric-timing --replay FILE [PARAMS]\n"
"       nfabric-timing --dependent [SYNTH] [PARAMS]\n"
"       nfabric-timing --load FRACTION [--arrivals fixed|poisson] [--seed N]\n"
"                      [SYNTH] [PARAMS]\n"
"SYNTH:  --count N (10000) --size BYTES (8) --lowbit-share X (1.0)\n"
"        --record FILE (write the generated stream as a record)\n"
"PARAMS: --clock-mhz F --depth D --service-ns S --link-mbps B\n"
"        (defaults 1000, 5, 300, 32000; with --replay, the record's)\n"
"Prints key=value lines (docs/timing.md).\n");
}

static void die_usage(const char *fmt, const char *arg)
{
    fprintf(stderr, "nfabric-timing: ");
    fprintf(stderr, fmt, arg);
    fprintf(stderr, "\n");
    usage(stderr);
    exit(2);
}

static uint64_t parse_u64(const char *opt, const char *s, uint64_t max)
{
    char *end;
    unsigned long long v;

    errno = 0;
    v = strtoull(s, &end, 0);
    if (errno || end == s || *end || s[0] == '-' || v > max) {
        die_usage("bad value for %s", opt);
    }
    return v;
}

static double parse_double(const char *opt, const char *s, double lo,
                           double hi)
{
    char *end;
    double v;

    errno = 0;
    v = strtod(s, &end);
    if (errno || end == s || *end || !(v >= lo && v <= hi)) {
        die_usage("bad value for %s", opt);
    }
    return v;
}

static void parse(Options *o, int argc, char **argv)
{
    nfabric_timing_defaults(&o->p);
    o->count = 10000;
    o->size = 8;
    o->lowbit_share = 1.0;
    o->seed = 1;

    for (int i = 1; i < argc; i++) {
        const char *opt = argv[i], *val = NULL, *eq;
        char name[32];

        if (!strcmp(opt, "-h") || !strcmp(opt, "--help")) {
            usage(stdout);
            exit(0);
        }
        if (!strcmp(opt, "--dependent")) {
            if (o->mode != MODE_NONE) {
                die_usage("%s: only one of --replay, --dependent, --load", opt);
            }
            o->mode = MODE_DEPENDENT;
            continue;
        }
        if (strncmp(opt, "--", 2)) {
            die_usage("unexpected argument \"%s\"", opt);
        }
        eq = strchr(opt, '=');
        if (eq) {
            size_t n = (size_t)(eq - opt);

            if (n >= sizeof(name)) {
                die_usage("unknown option \"%s\"", opt);
            }
            memcpy(name, opt, n);
            name[n] = 0;
            val = eq + 1;
        } else {
            if (strlen(opt) >= sizeof(name)) {
                die_usage("unknown option \"%s\"", opt);
            }
            strcpy(name, opt);
            if (i + 1 >= argc) {
                die_usage("%s needs a value", opt);
            }
            val = argv[++i];
        }

        if (!strcmp(name, "--replay") || !strcmp(name, "--load")) {
            if (o->mode != MODE_NONE) {
                die_usage("%s: only one of --replay, --dependent, --load",
                          name);
            }
            if (name[2] == 'r') {
                o->mode = MODE_REPLAY;
                o->replay = val;
            } else {
                o->mode = MODE_LOAD;
                o->load = parse_double(name, val, 1e-6, 1e6);
            }
        } else if (!strcmp(name, "--record")) {
            o->record = val;
        } else if (!strcmp(name, "--arrivals")) {
            if (!strcmp(val, "poisson")) {
                o->poisson = true;
            } else if (!strcmp(val, "fixed")) {
                o->poisson = false;
            } else {
                die_usage("--arrivals: fixed or poisson, not \"%s\"", val);
            }
        } else if (!strcmp(name, "--seed")) {
            o->seed = parse_u64(name, val, UINT64_MAX);
        } else if (!strcmp(name, "--count")) {
            o->count = parse_u64(name, val, 1000000000000ull);
        } else if (!strcmp(name, "--size")) {
            o->size = parse_u64(name, val, UINT32_MAX);
        } else if (!strcmp(name, "--lowbit-share")) {
            o->lowbit_share = parse_double(name, val, 0.0, 1.0);
        } else {
            bool found = false;

            for (unsigned k = 0; k < NFABRIC_T_NUM_PARAMS; k++) {
                const NFabricTimingParamInfo *info = &nfabric_timing_params[k];
                const char *pname = info->name;
                uint32_t v;

                /* --depth is short for --datapath-depth. */
                if (strcmp(name + 2, pname) &&
                    !(k == 1 && !strcmp(name, "--depth"))) {
                    continue;
                }
                v = (uint32_t)parse_u64(name, val, info->max);
                if (v < info->min) {
                    die_usage("bad value for %s", name);
                }
                memcpy((char *)&o->p + info->offset, &v, sizeof(v));
                o->p_set[k] = true;
                found = true;
            }
            if (!found) {
                die_usage("unknown option \"%s\"", name);
            }
        }
    }
    if (o->mode == MODE_NONE) {
        die_usage("%s", "give --replay FILE, --dependent or --load FRACTION");
    }
    if (o->mode == MODE_REPLAY && o->record) {
        die_usage("%s", "--record is for the synthetic modes");
    }
}

/* splitmix64: a small, exactly reproducible generator. */
static uint64_t splitmix64(uint64_t *s)
{
    uint64_t z = (*s += 0x9e3779b97f4a7c15ull);

    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

static void put_u64(const char *k, uint64_t v)
{
    printf("%s=%" PRIu64 "\n", k, v);
}

static void put_ratio(const char *k, uint64_t num, uint64_t den,
                      double scale)
{
    printf("%s=%.6f\n", k, den ? (double)num * scale / (double)den : 0.0);
}

/*
 * sh: the same stream through the model without a datapath (depth 0; for a
 * dependent stream, dependent on its own completions), for the two
 * whole-stream views: how much the datapath adds to the summed access
 * latency and to the runtime (first arrival to last completion).
 */
static void print_figures(const NFabricTiming *t, const NFabricTiming *sh)
{
    uint64_t total0 = nfabric_timing_total_ps(sh);
    uint64_t runtime0 = nfabric_timing_runtime_ps(sh);

    uint64_t total = nfabric_timing_total_ps(t);
    uint64_t exposed = nfabric_timing_exposed_total_ps(t);
    uint64_t runtime = nfabric_timing_runtime_ps(t);
    uint64_t n = nfabric_timing_accesses(t);
    char k[64];

    printf("clock_mhz=%u\ndepth=%u\nservice_ns=%u\nlink_mbps=%u\n",
           t->p.clock_mhz, t->p.depth, t->p.service_ns, t->p.link_mbps);
    /* The device's registers: T_TOTAL_PS, T_EXPOSED_PPM, T_PATH_*. */
    put_u64("total_ps", total);
    printf("exposed_ppm=%u\n", nfabric_timing_exposed_ppm(t));
    for (unsigned i = 0; i < NFABRIC_NUM_PATHS; i++) {
        snprintf(k, sizeof(k), "%s_time_ps", path_names[i]);
        put_u64(k, t->time_ps[i]);
        snprintf(k, sizeof(k), "%s_exposed_ps", path_names[i]);
        put_u64(k, t->exposed_ps[i]);
        snprintf(k, sizeof(k), "%s_accesses", path_names[i]);
        put_u64(k, t->accesses[i]);
    }
    /* Further figures of the model. */
    put_u64("accesses", n);
    put_u64("exposed_ps", exposed);
    put_ratio("exposed_pct", exposed, total - exposed, 100.0);
    put_ratio("mean_latency_ps", total, n, 1.0);
    put_u64("runtime_ps", runtime);
    put_u64("link_busy_ps", t->link_busy_ps);
    put_ratio("link_util_pct", t->link_busy_ps, runtime, 100.0);
    put_u64("queued_ps", t->queued_ps);
    put_ratio("mean_in_flight", total, runtime, 1.0);
    printf("max_in_flight=%u\n", t->max_in_flight);
    put_ratio("mean_queued", t->queued_ps, runtime, 1.0);
    printf("max_queued=%u\n", t->max_queued);
    printf("occupancy_saturated=%u\n", t->occ_saturated);
    put_u64("nodatapath_total_ps", total0);
    put_u64("nodatapath_runtime_ps", runtime0);
    put_ratio("latency_added_pct", total - total0, total0, 100.0);
    put_ratio("runtime_added_pct", runtime - runtime0, runtime0, 100.0);
}

static void shadow_init(NFabricTiming *sh, const NFabricTimingParams *p)
{
    NFabricTimingParams p0 = *p;

    p0.depth = 0;
    nfabric_timing_init(sh, &p0);
}

static int replay(const Options *o, NFabricTiming *t, NFabricTiming *sh)
{
    FILE *f = fopen(o->replay, "rb");
    NFabricRecordHeader h;
    NFabricTimingParams p;
    int64_t r;

    if (!f) {
        fprintf(stderr, "nfabric-timing: %s: %s\n", o->replay,
                strerror(errno));
        return 1;
    }
    /* The header's parameters, those given on the command line replaced. */
    {
        NFabricRecordReader rd;
        int e = nfabric_record_reader_open(&rd, f);

        if (e) {
            fprintf(stderr, "nfabric-timing: %s: %s\n", o->replay,
                    nfabric_record_strerror(e));
            fclose(f);
            return 1;
        }
        p = rd.h.params;
        rewind(f);
    }
    for (unsigned k = 0; k < NFABRIC_T_NUM_PARAMS; k++) {
        if (o->p_set[k]) {
            size_t off = nfabric_timing_params[k].offset;

            memcpy((char *)&p + off, (const char *)&o->p + off,
                   sizeof(uint32_t));
        }
    }
    r = nfabric_record_replay(f, t, &p, &h);
    if (r < 0) {
        fprintf(stderr, "nfabric-timing: %s: %s\n", o->replay,
                nfabric_record_strerror((int)r));
        fclose(f);
        return 1;
    }
    /* Again without the datapath (the file read fine the first time). */
    {
        NFabricRecordReader rd;
        NFabricRecord rec;
        bool dep = h.flags & NFABRIC_RECORD_F_DEPENDENT;

        rewind(f);
        shadow_init(sh, &p);
        if (nfabric_record_reader_open(&rd, f) == 0) {
            while (nfabric_record_read(&rd, &rec) > 0) {
                if (dep) {
                    rec.arrival_ps = nfabric_timing_now_ps(sh);
                }
                nfabric_record_apply(sh, &rec);
            }
        }
    }
    fclose(f);
    printf("mode=replay\n");
    put_u64("records", (uint64_t)r);
    printf("dependent=%u\n", h.flags & NFABRIC_RECORD_F_DEPENDENT ? 1 : 0);
    print_figures(t, sh);
    return 0;
}

static int synthetic(const Options *o, NFabricTiming *t, NFabricTiming *sh)
{
    uint64_t lowbit_ppm = (uint64_t)llround(o->lowbit_share * 1e6);
    /* Transfer time of one request and the mean gap at the offered load. */
    double xfer = (double)o->size * 1e6 / (double)o->p.link_mbps;
    double period = o->mode == MODE_LOAD ? xfer / o->load : 0.0;
    double clock = 0.0;
    uint64_t rng = o->seed, last = 0;
    FILE *rec = NULL;
    int err = 0;

    nfabric_timing_init(t, &o->p);
    shadow_init(sh, &o->p);
    if (o->record) {
        rec = fopen(o->record, "wb");
        if (!rec) {
            fprintf(stderr, "nfabric-timing: %s: %s\n", o->record,
                    strerror(errno));
            return 1;
        }
        err = nfabric_record_write_header(rec, &o->p,
                                         o->mode == MODE_DEPENDENT ?
                                         NFABRIC_RECORD_F_DEPENDENT : 0);
    }
    for (uint64_t i = 0; i < o->count; i++) {
        /* Low-bit shares spread evenly: request i is low-bit when the
         * running count floor(i * share) steps. */
        bool lowbit = (i + 1) * lowbit_ppm / 1000000 >
                      i * lowbit_ppm / 1000000;
        unsigned path = lowbit ? NFABRIC_PATH_GBINARY : NFABRIC_PATH_FP32;
        uint64_t arrival;

        if (o->mode == MODE_DEPENDENT) {
            arrival = nfabric_timing_now_ps(t);
        } else if (o->poisson) {
            double u = (double)(splitmix64(&rng) >> 11) * 0x1p-53;

            if (i) {
                clock += -period * log1p(-u);
            }
            arrival = (uint64_t)llround(clock);
        } else {
            arrival = (uint64_t)llround((double)i * period);
        }
        last = arrival;
        if (rec && !err) {
            err = nfabric_record_write_access(rec, arrival, path, o->size,
                                             true);
        }
        nfabric_timing_account_at(t, path, o->size, arrival);
        nfabric_timing_account_at(sh, path, o->size,
                                  o->mode == MODE_DEPENDENT ?
                                  nfabric_timing_now_ps(sh) : arrival);
    }
    if (rec) {
        if (fclose(rec) && !err) {
            err = NFABRIC_RECORD_EIO;
        }
        if (err) {
            fprintf(stderr, "nfabric-timing: %s: %s\n", o->record,
                    nfabric_record_strerror(err));
            return 1;
        }
    }
    printf("mode=%s\n", o->mode == MODE_DEPENDENT ? "dependent" : "load");
    if (o->mode == MODE_LOAD) {
        printf("arrivals=%s\n", o->poisson ? "poisson" : "fixed");
        printf("load=%.6f\n", o->load);
        /* What the arrivals offer: bytes over their span, per link rate. */
        printf("offered_load=%.6f\n", last && o->count > 1 ?
               xfer * (double)(o->count - 1) / (double)last : 0.0);
    }
    put_u64("count", o->count);
    put_u64("size", o->size);
    printf("lowbit_share=%.6f\n", (double)lowbit_ppm / 1e6);
    print_figures(t, sh);
    return 0;
}

int main(int argc, char **argv)
{
    /* Large (occupancy ring): not on the stack. */
    static NFabricTiming t, sh;
    Options o;

    memset(&o, 0, sizeof(o));
    parse(&o, argc, argv);
    return o.mode == MODE_REPLAY ? replay(&o, &t, &sh)
                                 : synthetic(&o, &t, &sh);
}
