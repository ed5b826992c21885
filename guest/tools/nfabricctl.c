/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * nfabricctl: inspect and program a NEURON-Fabric device from the guest.
 * `nfabricctl --help` lists the commands; docs/guest.md has examples.
 */
#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "libnfabric.h"

static void usage(FILE *f)
{
    fprintf(f,
"usage: nfabricctl [--dev NAME] COMMAND [ARGS]\n"
"\n"
"--dev NAME picks the device: its PCI address or its memdev name (mem1);\n"
"default $NFABRIC_DEVICE, else the first NEURON-Fabric device.\n"
"\n"
"Commands:\n"
"  list                   every NEURON-Fabric device: PCI address, memdev,\n"
"                         region, head\n"
"  info                   device, region, dax mapping and register block\n"
"  windows                every window's configuration and round state\n"
"  set-window I --base B --size S [--counters C] --path fp32|gbinary|gternary\n"
"             [--width 8|16] [--tie neg|pos] [--threshold T]\n"
"             [--posted yes|no]\n"
"                         program window I and enable it (B, C: device\n"
"                         physical addresses; numbers take 0x and K/M/G;\n"
"                         --posted yes: a posted low-bit window)\n"
"  disable I              disable window I\n"
"  clear I                start a new aggregation round on window I\n"
"  stats [--pool] [--clear]\n"
"                         per-path access statistics of this head (--pool:\n"
"                         summed over every head of a shared device;\n"
"                         --clear zeroes this head's)\n"
"  heads                  this head, the device's heads (and its job, when\n"
"                         a fabric manager assigned jobs), and each head's\n"
"                         contributions to every enabled window\n"
"  round I                window I's round: number, heads done, status\n"
"  complete I [SEQ]       this head's contribution to window I's round SEQ\n"
"                         (default: the current one) is complete\n"
"  wait I [SEQ] [--timeout MS]\n"
"                         wait until every head completed the round\n"
"                         (default timeout 60000 ms)\n"
"  timing [--clear]       timing-model parameters and accumulated figures\n"
"  --help                 this text\n"
"\n"
"Exit status: 0 on success, 1 if the device or library refused, 2 for bad\n"
"arguments.\n");
}

static int bad(const char *fmt, const char *arg)
{
    fprintf(stderr, "nfabricctl: ");
    fprintf(stderr, fmt, arg);
    fprintf(stderr, " (try: nfabricctl --help)\n");
    return 2;
}

/* Parse an unsigned number with optional K/M/G suffix. */
static int parse_u64(const char *s, uint64_t *v)
{
    char *end;
    unsigned long long x;
    unsigned shift = 0;

    if (!s || !*s || *s == '-') {
        return -1;
    }
    errno = 0;
    x = strtoull(s, &end, 0);
    if (errno || end == s) {
        return -1;
    }
    switch (*end) {
    case 'k': case 'K': shift = 10; end++; break;
    case 'm': case 'M': shift = 20; end++; break;
    case 'g': case 'G': shift = 30; end++; break;
    default: break;
    }
    if (*end || (shift && x > (UINT64_MAX >> shift))) {
        return -1;
    }
    *v = (uint64_t)x << shift;
    return 0;
}

/*
 * The device's error STATE has two causes (docs/registers.md, "Errors"):
 * this head found the shared device's state unusable (HEAD_INFO bit 17
 * STATE_FAILED, for good), or another head held a lock or its job's
 * window table busy past the bound (a stopped or busy peer: this access
 * only, the state is fine).  HEAD_INFO, read after the refusal, says which.
 */
static bool state_failed(const nfabric_dev *d)
{
    return nfabric_rd32(d, NFABRIC_REG_HEAD_INFO) &
           NFABRIC_HEAD_INFO_STATE_FAILED;
}

/* What an error code of the device (or the library) means, here. */
static const char *err_text(const nfabric_dev *d, int code)
{
    if (code != NFABRIC_ERR_STATE) {
        return nfabric_strerror(code);
    }
    return state_failed(d) ?
        "STATE: this head found the shared device's state unusable "
        "(HEAD_INFO.STATE_FAILED)" :
        "STATE: a peer held a lock past the bound; the shared state is "
        "fine (HEAD_INFO.STATE_FAILED clear)";
}

/*
 * The reason a call that returned rc failed: the library's message, with
 * the device's STATE told apart (the library's message begins with the
 * error's text, which names only the first cause).
 */
static const char *why(const nfabric_dev *d, int rc)
{
    static char buf[768];
    const char *msg = nfabric_errmsg(d);
    const char *text = nfabric_strerror(NFABRIC_ERR_STATE);
    size_t n = strlen(text);

    if (rc != NFABRIC_ERR_STATE) {
        return msg;
    }
    if (!strncmp(msg, text, n) && msg[n] == ':') {
        msg += n + 1;
        msg += strspn(msg, " ");
    }
    if (state_failed(d)) {
        snprintf(buf, sizeof(buf), "refused (STATE): this head found the "
                 "shared device's state unusable (HEAD_INFO.STATE_FAILED) "
                 "and refuses the device's accesses until its QEMU attaches "
                 "again: %s", msg);
    } else {
        snprintf(buf, sizeof(buf), "refused (STATE): another head held a "
                 "lock or the job's window table past the bound of 0.5 s (a "
                 "stopped or busy peer); the shared state is fine "
                 "(HEAD_INFO.STATE_FAILED clear), the same command may "
                 "succeed again: %s", msg);
    }
    return buf;
}

/* A library context, or NULL when the library could not make one. */
static nfabric_dev *new_ctx(void)
{
    nfabric_dev *d = nfabric_new();

    if (!d) {
        fprintf(stderr, "nfabricctl: %s\n", strerror(ENOMEM));
    }
    return d;
}

/* The device opened with flags, or NULL (the reason printed). */
static nfabric_dev *open_dev(unsigned flags)
{
    nfabric_dev *d = new_ctx();

    if (d && nfabric_open(d, flags)) {
        fprintf(stderr, "nfabricctl: %s\n", nfabric_errmsg(d));
        nfabric_free(d);
        d = NULL;
    }
    return d;
}

static int parse_index(const nfabric_dev *d, const char *s, unsigned *i)
{
    uint64_t v;

    if (!s) {
        return bad("%s: missing window index", "command");
    }
    if (parse_u64(s, &v) || v >= nfabric_num_windows(d)) {
        fprintf(stderr, "nfabricctl: bad window index \"%s\" (0..%u)\n", s,
                nfabric_num_windows(d) - 1);
        return 2;
    }
    *i = (unsigned)v;
    return 0;
}

static int cmd_info(void)
{
    nfabric_dev *d = open_dev(NFABRIC_OPEN_NO_MEM);
    uint32_t version, caps;
    int rc;

    if (!d) {
        return 1;
    }
    version = nfabric_version(d);
    caps = nfabric_caps(d);
    printf("pci: %s\n", nfabric_pci_name(d));
    printf("registers: %s\n", nfabric_access_name(d));
    printf("version: %u.%u\n", version >> 16, version & 0xffff);
    printf("caps: 0x%08x (windows %u, paths", caps, nfabric_num_windows(d));
    for (unsigned p = 0; p < 8; p++) {
        if (caps & (1u << (NFABRIC_CAPS_PATHS_SHIFT + p))) {
            printf(" %s", nfabric_path_name(p));
        }
    }
    printf(", widths");
    for (unsigned k = 0; k < 8; k++) {
        if (caps & (1u << (NFABRIC_CAPS_WIDTHS_SHIFT + k))) {
            printf(" %u", 8u << k);
        }
    }
    printf(", ties");
    for (unsigned t = 0; t < 8; t++) {
        if (caps & (1u << (NFABRIC_CAPS_TIES_SHIFT + t))) {
            printf(" %s", nfabric_tie_name(t));
        }
    }
    printf(")\n");
    printf("device-memory: %" PRIu64 " bytes\n", nfabric_mem_size(d));
    printf("enabled-mask: 0x%08x\n", nfabric_rd32(d, NFABRIC_REG_ENABLED_MASK));
    printf("last-error: %u (%s)\n", nfabric_rd32(d, NFABRIC_REG_LAST_ERROR),
           err_text(d, (int)nfabric_rd32(d, NFABRIC_REG_LAST_ERROR)));
    printf("error-count: %u\n", nfabric_rd32(d, NFABRIC_REG_ERROR_COUNT));
    {
        nfabric_heads h;

        nfabric_heads_read(d, &h);
        printf("head: %u of %u (%s), live 0x%x, lost 0x%x\n", h.index, h.count,
               h.shared ? "shared device" : "not shared", h.live, h.lost);
    }
    nfabric_close(d);
    /* The memory side separately, so that a missing region is reported. */
    rc = nfabric_open(d, 0);
    if (rc) {
        printf("mapping: none (%s)\n", nfabric_errmsg(d));
    } else {
        printf("memdev: %s\nregion: %s\ndax: /dev/%s (%" PRIu64 " bytes, DPA 0x%"
               PRIx64 ")\n", nfabric_memdev_name(d), nfabric_region_name(d),
               nfabric_dax_name(d), nfabric_map_size(d), nfabric_map_dpa(d));
    }
    nfabric_free(d);
    return rc ? 1 : 0;
}

static int cmd_windows(void)
{
    nfabric_dev *d;
    nfabric_win_state s;

    if (!(d = open_dev(NFABRIC_OPEN_NO_MEM))) {
        return 1;
    }
    printf("%-3s %-3s %-8s %-12s %-12s %-12s %-5s %-3s %-9s %-5s %-10s %-12s %-8s %s\n",
           "win", "on", "path", "base", "size", "counters", "width", "tie",
           "threshold", "error", "writes", "bytes", "reserved", "posted");
    for (unsigned i = 0; i < nfabric_num_windows(d); i++) {
        nfabric_window_get(d, i, &s);
        printf("%-3u %-3s %-8s 0x%-10" PRIx64 " 0x%-10" PRIx64 " 0x%-10" PRIx64
               " %-5u %-3s %-9u %-5u %-10" PRIu64 " %-12" PRIu64 " %-8u %s\n",
               i, s.enabled ? "yes" : "no", nfabric_path_name(s.cfg.path),
               s.cfg.base, s.cfg.size, s.cfg.counters, s.cfg.width,
               nfabric_tie_name(s.cfg.tie),
               s.cfg.threshold, s.error, s.contrib_writes, s.contrib_bytes,
               s.reserved_codes, s.cfg.posted ? "yes" : "no");
    }
    nfabric_free(d);
    return 0;
}

static int cmd_set_window(int argc, char **argv)
{
    nfabric_win_cfg c = { .width = 8, .tie = NFABRIC_TIE_NEGATIVE, .threshold = 1 };
    bool have_base = false, have_size = false, have_path = false;
    nfabric_dev *d;
    unsigned i;
    uint64_t v;
    int rc;

    if (argc < 2 || argv[1][0] == '-') {
        return bad("%s: missing window index", "set-window");
    }
    for (int a = 2; a < argc; a++) {
        const char *opt = argv[a], *val = a + 1 < argc ? argv[a + 1] : NULL;

        if (!val) {
            return bad("option %s needs a value", opt);
        }
        a++;
        if (!strcmp(opt, "--base")) {
            if (parse_u64(val, &c.base)) {
                return bad("bad --base \"%s\"", val);
            }
            have_base = true;
        } else if (!strcmp(opt, "--size")) {
            if (parse_u64(val, &c.size)) {
                return bad("bad --size \"%s\"", val);
            }
            have_size = true;
        } else if (!strcmp(opt, "--counters")) {
            if (parse_u64(val, &c.counters)) {
                return bad("bad --counters \"%s\"", val);
            }
        } else if (!strcmp(opt, "--path")) {
            int p = nfabric_path_parse(val);

            if (p < 0 || p >= NFABRIC_NUM_PATHS || isdigit((unsigned char)*val)) {
                return bad("bad --path \"%s\" (fp32, gbinary or gternary)", val);
            }
            c.path = (unsigned)p;
            have_path = true;
        } else if (!strcmp(opt, "--width")) {
            if (parse_u64(val, &v) || (v != 8 && v != 16)) {
                return bad("bad --width \"%s\" (8 or 16)", val);
            }
            c.width = (unsigned)v;
        } else if (!strcmp(opt, "--tie")) {
            int t = nfabric_tie_parse(val);

            if (t < 0 || t >= NFABRIC_NUM_TIES || isdigit((unsigned char)*val)) {
                return bad("bad --tie \"%s\" (neg or pos)", val);
            }
            c.tie = (unsigned)t;
        } else if (!strcmp(opt, "--threshold")) {
            if (parse_u64(val, &v) || v > UINT32_MAX) {
                return bad("bad --threshold \"%s\"", val);
            }
            c.threshold = (uint32_t)v;
        } else if (!strcmp(opt, "--posted")) {
            if (strcmp(val, "yes") && strcmp(val, "no")) {
                return bad("bad --posted \"%s\" (yes or no)", val);
            }
            c.posted = !strcmp(val, "yes");
        } else {
            return bad("set-window: unknown option \"%s\"", opt);
        }
    }
    if (!have_base || !have_size || !have_path) {
        return bad("%s: --base, --size and --path are required", "set-window");
    }
    if (!(d = open_dev(NFABRIC_OPEN_NO_MEM))) {
        return 1;
    }
    if ((rc = parse_index(d, argv[1], &i))) {
        nfabric_free(d);
        return rc;
    }
    rc = nfabric_window_set(d, i, &c);
    if (rc) {
        fprintf(stderr, "nfabricctl: set-window %u: %s\n", i, why(d, rc));
    } else {
        printf("window %u: %s base 0x%" PRIx64 " size 0x%" PRIx64 " counters 0x%"
               PRIx64 " (%" PRIu64 " bytes) enabled\n", i, nfabric_path_name(c.path),
               c.base, c.size, c.counters,
               nfabric_counter_bytes(c.path, c.width, c.size));
    }
    nfabric_free(d);
    return rc ? 1 : 0;
}

static int cmd_window_op(int argc, char **argv, int (*op)(nfabric_dev *, unsigned))
{
    nfabric_dev *d;
    unsigned i;
    int rc;

    if (argc != 2) {
        return bad("%s: needs exactly one window index", argv[0]);
    }
    if (!(d = open_dev(NFABRIC_OPEN_NO_MEM))) {
        return 1;
    }
    if ((rc = parse_index(d, argv[1], &i))) {
        nfabric_free(d);
        return rc;
    }
    rc = op(d, i);
    if (rc) {
        fprintf(stderr, "nfabricctl: %s %u: %s\n", argv[0], i, why(d, rc));
    } else {
        printf("window %u: %s\n", i, !strcmp(argv[0], "clear") ? "cleared" : "disabled");
    }
    nfabric_free(d);
    return rc ? 1 : 0;
}

static int clear_opt(int argc, char **argv, bool *clear)
{
    *clear = false;
    if (argc == 2 && !strcmp(argv[1], "--clear")) {
        *clear = true;
    } else if (argc != 1) {
        return bad("%s: the only option is --clear", argv[0]);
    }
    return 0;
}

static int cmd_stats(int argc, char **argv)
{
    nfabric_path_stats st[NFABRIC_NUM_PATHS];
    nfabric_dev *d;
    bool clear = false, pool = false;
    int rc = 0;

    for (int a = 1; a < argc; a++) {
        if (!strcmp(argv[a], "--clear")) {
            clear = true;
        } else if (!strcmp(argv[a], "--pool")) {
            pool = true;
        } else {
            return bad("stats: unknown option \"%s\" (--pool, --clear)", argv[a]);
        }
    }
    if (!(d = open_dev(NFABRIC_OPEN_NO_MEM))) {
        return 1;
    }
    if (pool) {
        nfabric_pool_stats(d, st);
    } else {
        nfabric_stats(d, st);
    }
    printf("%-9s %12s %12s %14s %14s\n", "path", "reads", "writes", "read_bytes",
           "write_bytes");
    for (unsigned p = 0; p < NFABRIC_NUM_PATHS; p++) {
        printf("%-9s %12" PRIu64 " %12" PRIu64 " %14" PRIu64 " %14" PRIu64 "\n",
               nfabric_path_name(p), st[p].reads, st[p].writes, st[p].read_bytes,
               st[p].write_bytes);
    }
    if (clear && (rc = nfabric_ctrl(d, NFABRIC_CTRL_CLEAR_STATS))) {
        fprintf(stderr, "nfabricctl: %s\n", nfabric_errmsg(d));
    }
    nfabric_free(d);
    return rc ? 1 : 0;
}

static int cmd_heads(int argc)
{
    nfabric_heads h;
    nfabric_dev *d;
    uint32_t mask;

    if (argc != 1) {
        return bad("%s takes no arguments", "heads");
    }
    if (!(d = open_dev(NFABRIC_OPEN_NO_MEM))) {
        return 1;
    }
    nfabric_heads_read(d, &h);
    printf("head=%u\nheads=%u\nshared=%s\nlive=0x%x\nlost=0x%x\n", h.index,
           h.count, h.shared ? "yes" : "no", h.live, h.lost);
    if (h.jobs_assigned) {
        printf("job=%u\njob_windows=0x%04x\n", h.job, h.job_windows);
    }
    mask = nfabric_rd32(d, NFABRIC_REG_ENABLED_MASK);
    for (unsigned i = 0; i < nfabric_num_windows(d); i++) {
        if (!(mask & (1u << i))) {
            continue;
        }
        for (unsigned k = 0; k < h.count; k++) {
            uint64_t w = 0;

            if (h.jobs_assigned && !((h.live | h.lost) & (1u << k))) {
                continue;       /* not of this job: the device refuses it */
            }

            if (nfabric_head_contrib(d, k, i, &w) == 0) {
                printf("window%u_head%u_writes=%" PRIu64 "\n", i, k, w);
            }
        }
    }
    nfabric_free(d);
    return 0;
}

static void print_round(unsigned i, const nfabric_round *r)
{
    printf("window=%u\nround=%u\ndone=0x%x\nheads_done=%u\nheads_expected=%u\n"
           "all_done=%s\nincomplete=%s\n", i, r->seq, r->done, r->ndone,
           r->nexpected, r->all_done ? "yes" : "no",
           r->incomplete ? "yes" : "no");
}

/* round I | complete I [SEQ] | wait I [SEQ] [--timeout MS] */
static int cmd_round(int argc, char **argv)
{
    const char *cmd = argv[0];
    unsigned timeout = 60000, i;
    bool have_seq = false;
    uint32_t seq = 0;
    nfabric_round r;
    nfabric_dev *d;
    uint64_t v;
    int rc;

    if (argc < 2) {
        return bad("%s: missing window index", cmd);
    }
    for (int a = 2; a < argc; a++) {
        if (!strcmp(argv[a], "--timeout") && !strcmp(cmd, "wait")) {
            if (a + 1 >= argc || parse_u64(argv[a + 1], &v) || v > UINT32_MAX) {
                return bad("bad --timeout \"%s\" (milliseconds)",
                           a + 1 < argc ? argv[a + 1] : "");
            }
            timeout = (unsigned)v;
            a++;
        } else if (!have_seq && strcmp(cmd, "round") &&
                   !parse_u64(argv[a], &v) && v <= UINT32_MAX) {
            seq = (uint32_t)v;
            have_seq = true;
        } else {
            return bad("bad argument \"%s\"", argv[a]);
        }
    }
    if (!(d = open_dev(NFABRIC_OPEN_NO_MEM))) {
        return 1;
    }
    if ((rc = parse_index(d, argv[1], &i))) {
        nfabric_free(d);
        return rc;
    }
    if ((rc = nfabric_round_read(d, i, &r))) {
        fprintf(stderr, "nfabricctl: %s %u: %s\n", cmd, i, err_text(d, rc));
        nfabric_free(d);
        return 1;
    }
    if (!have_seq) {
        seq = r.seq;
    }
    if (!strcmp(cmd, "complete")) {
        rc = nfabric_round_complete(d, i, seq);
    } else if (!strcmp(cmd, "wait")) {
        rc = nfabric_round_wait(d, i, seq, timeout, &r);
    }
    if (rc) {
        fprintf(stderr, "nfabricctl: %s %u: %s\n", cmd, i, why(d, rc));
    } else {
        nfabric_round_read(d, i, &r);
        print_round(i, &r);
    }
    nfabric_free(d);
    return rc ? 1 : 0;
}

static int cmd_timing(int argc, char **argv)
{
    nfabric_timing t;
    nfabric_dev *d;
    bool clear;
    int rc;

    if ((rc = clear_opt(argc, argv, &clear))) {
        return rc;
    }
    if (!(d = open_dev(NFABRIC_OPEN_NO_MEM))) {
        return 1;
    }
    nfabric_timing_read(d, &t);
    printf("clock_mhz=%u\ndepth_cycles=%u\nservice_ns=%u\nlink_mbps=%u\n",
           t.clock_mhz, t.depth, t.service_ns, t.link_mbps);
    printf("total_ps=%" PRIu64 "\nexposed_ppm=%u\nexposed_percent=%.4f\n",
           t.total_ps, t.exposed_ppm, t.exposed_ppm / 10000.0);
    for (unsigned p = 0; p < NFABRIC_NUM_PATHS; p++) {
        printf("%s_time_ps=%" PRIu64 "\n%s_exposed_ps=%" PRIu64 "\n",
               nfabric_path_name(p), t.path_time_ps[p], nfabric_path_name(p),
               t.path_exposed_ps[p]);
    }
    if (clear && (rc = nfabric_ctrl(d, NFABRIC_CTRL_CLEAR_TIMING))) {
        fprintf(stderr, "nfabricctl: %s\n", nfabric_errmsg(d));
    }
    nfabric_free(d);
    return rc ? 1 : 0;
}

/* Every NEURON-Fabric device, one line each. */
static int cmd_list(int argc)
{
    char names[32][64];
    int n;

    if (argc != 1) {
        return bad("%s takes no arguments", "list");
    }
    n = nfabric_list(names, 32, false);
    if (n < 0) {
        fprintf(stderr, "nfabricctl: list: %s\n", nfabric_strerror(n));
        return 1;
    }
    for (int i = 0; i < n && i < 32; i++) {
        nfabric_dev *d = new_ctx();
        nfabric_heads h;
        int rc;

        if (!d) {
            return 1;
        }
        rc = nfabric_open_dev(d, names[i], NFABRIC_OPEN_NO_MEM);
        if (rc) {
            printf("%s: %s\n", names[i], nfabric_errmsg(d));
            nfabric_free(d);
            continue;
        }
        nfabric_heads_read(d, &h);
        printf("%s version %u.%u head %u of %u", names[i],
               nfabric_version(d) >> 16, nfabric_version(d) & 0xffff, h.index,
               h.count);
        nfabric_close(d);
        if (nfabric_open_dev(d, names[i], 0) == 0) {
            printf(" %s %s /dev/%s\n", nfabric_memdev_name(d),
                   nfabric_region_name(d), nfabric_dax_name(d));
        } else {
            printf(" (no mapping: %s)\n", nfabric_errmsg(d));
        }
        nfabric_free(d);
    }
    if (n == 0) {
        printf("no NEURON-Fabric device\n");
    }
    return n > 0 ? 0 : 1;
}

int main(int argc, char **argv)
{
    const char *cmd;

    if (argc > 2 && !strcmp(argv[1], "--dev")) {
        /* Every open below honours it. */
        setenv("NFABRIC_DEVICE", argv[2], 1);
        argc -= 2;
        argv += 2;
    }
    cmd = argc > 1 ? argv[1] : NULL;

    if (!cmd) {
        usage(stderr);
        return 2;
    }
    if (!strcmp(cmd, "--help") || !strcmp(cmd, "-h") || !strcmp(cmd, "help")) {
        usage(stdout);
        return 0;
    }
    argc--;
    argv++;
    if (!strcmp(cmd, "info") || !strcmp(cmd, "windows")) {
        if (argc != 1) {
            return bad("%s takes no arguments", cmd);
        }
        return !strcmp(cmd, "info") ? cmd_info() : cmd_windows();
    }
    if (!strcmp(cmd, "set-window")) {
        return cmd_set_window(argc, argv);
    }
    if (!strcmp(cmd, "disable")) {
        return cmd_window_op(argc, argv, nfabric_window_disable);
    }
    if (!strcmp(cmd, "clear")) {
        return cmd_window_op(argc, argv, nfabric_window_clear);
    }
    if (!strcmp(cmd, "stats")) {
        return cmd_stats(argc, argv);
    }
    if (!strcmp(cmd, "timing")) {
        return cmd_timing(argc, argv);
    }
    if (!strcmp(cmd, "list")) {
        return cmd_list(argc);
    }
    if (!strcmp(cmd, "heads")) {
        return cmd_heads(argc);
    }
    if (!strcmp(cmd, "round") || !strcmp(cmd, "complete") || !strcmp(cmd, "wait")) {
        return cmd_round(argc, argv);
    }
    return bad("unknown command \"%s\"", cmd);
}
