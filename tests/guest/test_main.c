/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * nfabric-test: the guest-side functional tests of a NEURON-Fabric device,
 * run inside the guest after the CXL region exists.  TAP on stdout.
 *
 *   nfabric-test [--only GROUP,...] [--seed N] [--list]
 *
 * Groups: fp32 gbinary gternary mixed config stats (default: all).
 */
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "tap.h"
#include "gt.h"
#include "testutil.h"

nfabric_dev *gt_dev;
/* Why the register block could not be opened (gt_have_regs false). */
static char no_regs_why[512];
bool gt_have_regs;
uint64_t gt_seed = 0x4e464142u;

int gt_check_at(int ok, const char *file, int line, const char *fmt, ...)
{
    va_list ap;
    int r;

    va_start(ap, fmt);
    r = tap_vcheck(ok, file, line, fmt, ap);
    va_end(ap);
    return r;
}

void gt_diag(const char *fmt, ...)
{
    va_list ap;

    printf("# ");
    va_start(ap, fmt);
    vprintf(fmt, ap);
    va_end(ap);
    printf("\n");
    fflush(stdout);
}

void gt_summary(const char *fmt, ...)
{
    va_list ap;

    printf("summary: ");
    va_start(ap, fmt);
    vprintf(fmt, ap);
    va_end(ap);
    printf("\n");
    fflush(stdout);
}

bool gt_need_regs(const char *group)
{
    if (gt_have_regs) {
        return true;
    }
    CHECK(0, "%s: needs the NEURON-Fabric register block: %s", group,
          no_regs_why);
    return false;
}

void gt_write_bytes(volatile uint8_t *dst, const uint8_t *src, size_t len,
                    unsigned size)
{
    for (size_t i = 0; i + size <= len; i += size) {
        uint64_t v = 0;

        for (unsigned k = 0; k < size; k++) {
            v |= (uint64_t)src[i + k] << (8 * k);
        }
        gt_st(dst + i, size, v);
    }
}

void gt_read_bytes(uint8_t *dst, const volatile uint8_t *src, size_t len,
                   unsigned size)
{
    for (size_t i = 0; i + size <= len; i += size) {
        uint64_t v = gt_ld(src + i, size);

        for (unsigned k = 0; k < size; k++) {
            dst[i + k] = (uint8_t)(v >> (8 * k));
        }
    }
}

uint64_t gt_rand(uint64_t *state)
{
    return nf_splitmix64(state);
}

double gt_uniform(uint64_t *state)
{
    return (double)(gt_rand(state) >> 11) / 4503599627370496.0 - 1.0;
}

double gt_now(void)
{
    return nf_now_s();
}

volatile uint8_t *gt_mem(uint64_t dpa, uint64_t len)
{
    return nfabric_dpa_ptr(gt_dev, dpa, len);
}

bool gt_fork_workers(unsigned n, int (*fn)(unsigned j, void *arg), void *arg)
{
    pid_t pid[GT_WORKERS];
    bool ok = true;

    fflush(stdout);
    fflush(stderr);
    for (unsigned w = 0; w < GT_WORKERS; w++) {
        pid[w] = fork();
        if (pid[w] < 0) {
            gt_diag("fork: %s", strerror(errno));
            ok = false;
            continue;
        }
        if (pid[w] == 0) {
            int rc = 0;

            for (unsigned j = w; j < n; j += GT_WORKERS) {
                rc |= fn(j, arg);
            }
            _exit(rc ? 1 : 0);
        }
    }
    for (unsigned w = 0; w < GT_WORKERS; w++) {
        int st;

        if (pid[w] <= 0) {
            continue;
        }
        if (waitpid(pid[w], &st, 0) < 0 || !WIFEXITED(st) || WEXITSTATUS(st)) {
            ok = false;
        }
    }
    return ok;
}

static const struct {
    const char *name;
    void (*fn)(void);
    const char *what;
    bool only;          /* runs only when named with --only */
} groups[] = {
    { "fp32", gt_group_fp32, "(a) FP32 identity over the whole region", false },
    { "gbinary", gt_group_gbinary, "(b) G-Binary sign aggregation, K workers", false },
    { "gternary", gt_group_gternary, "(c) G-Ternary gated aggregation", false },
    { "mixed", gt_group_mixed, "(d) FP32 head + G-Binary backbone, one region", false },
    { "config", gt_group_config, "(e) bad configurations are refused", false },
    { "stats", gt_group_stats, "(f) statistics and timing registers", false },
    { "sysram", gt_group_sysram, "(g) onlines the region as System RAM, then "
      "low-bit windows there are refused (--only sysram)", true },
    { "devices", gt_group_devices, "(h) two devices, no region: addressing "
      "each, then an interleaved region (--only devices)", true },
    { "toggle", gt_group_toggle, "(i) a window toggled while other processes write: "
      "exact after each enable and disable", false },
    { "posted", gt_group_posted, "(j) posted windows equal trapped ones bit for "
      "bit", false },
    { "cpmu", gt_group_cpmu, "(k) perf through Linux's cxl_pmu counts what "
      "the statistics registers count (--only cpmu: needs perf)", true },
};
#define NGROUPS (sizeof(groups) / sizeof(groups[0]))

static void usage(FILE *f)
{
    fprintf(f, "usage: nfabric-test [--only GROUP[,GROUP...]] [--seed N] [--list]\n\nGroups:\n");
    for (unsigned g = 0; g < NGROUPS; g++) {
        fprintf(f, "  %-9s %s\n", groups[g].name, groups[g].what);
    }
}

int main(int argc, char **argv)
{
    bool want[NGROUPS];
    const char *only = NULL;
    int rc;

    if (argc > 1 && !strcmp(argv[1], "--cpmu-load")) {
        return gt_cpmu_load_main(argc, argv);   /* the cpmu group's child */
    }
    for (int a = 1; a < argc; a++) {
        if (!strcmp(argv[a], "--help") || !strcmp(argv[a], "-h")) {
            usage(stdout);
            return 0;
        } else if (!strcmp(argv[a], "--list")) {
            for (unsigned g = 0; g < NGROUPS; g++) {
                printf("%s\n", groups[g].name);
            }
            return 0;
        } else if (!strcmp(argv[a], "--only") && a + 1 < argc) {
            only = argv[++a];
        } else if (!strcmp(argv[a], "--seed") && a + 1 < argc) {
            char *end;

            gt_seed = strtoull(argv[++a], &end, 0);
            if (*end) {
                fprintf(stderr, "nfabric-test: bad --seed\n");
                return 2;
            }
        } else {
            fprintf(stderr, "nfabric-test: bad argument \"%s\"\n", argv[a]);
            usage(stderr);
            return 2;
        }
    }
    for (unsigned g = 0; g < NGROUPS; g++) {
        want[g] = !only && !groups[g].only;
    }
    if (only) {
        char buf[256], *tok, *save = NULL;

        snprintf(buf, sizeof(buf), "%s", only);
        for (tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
            unsigned g;

            for (g = 0; g < NGROUPS && strcmp(groups[g].name, tok); g++) {
            }
            if (g == NGROUPS) {
                fprintf(stderr, "nfabric-test: unknown group \"%s\"\n", tok);
                usage(stderr);
                return 2;
            }
            want[g] = true;
        }
    }

    setvbuf(stdout, NULL, _IOLBF, 0);
    gt_dev = nfabric_new();
    if (!gt_dev) {
        TAP_CHECK(0, "open the NEURON-Fabric device: %s", strerror(ENOMEM));
        return tap_done();
    }
    /* The devices group runs before any region exists: registers only. */
    rc = nfabric_open(gt_dev, only && !strcmp(only, "devices") ?
                      NFABRIC_OPEN_NO_MEM : 0);
    gt_have_regs = rc == 0;
    if (rc) {
        snprintf(no_regs_why, sizeof(no_regs_why), "%s", nfabric_errmsg(gt_dev));
        /* The memory alone (a stock cxl-type3): the FP32 checks still run. */
        rc = nfabric_open(gt_dev, NFABRIC_OPEN_NO_REGS);
        TAP_CHECK(0, "open the NEURON-Fabric device: %s", no_regs_why);
        if (rc) {
            nfabric_free(gt_dev);
            return tap_done();
        }
    } else {
        TAP_CHECK(1, "open %s: %s, /dev/%s %zu MiB at DPA 0x%" PRIx64 ", version %u.%u",
                  nfabric_pci_name(gt_dev), nfabric_region_name(gt_dev),
                  nfabric_dax_name(gt_dev), (size_t)nfabric_map_size(gt_dev) >> 20,
                  nfabric_map_dpa(gt_dev), nfabric_version(gt_dev) >> 16,
                  nfabric_version(gt_dev) & 0xffff);
    }
    gt_diag("seed 0x%" PRIx64, gt_seed);
    for (unsigned g = 0; g < NGROUPS; g++) {
        double t0;

        if (!want[g]) {
            continue;
        }
        gt_diag("group %s: %s", groups[g].name, groups[g].what);
        t0 = gt_now();
        if (gt_have_regs) {
            nfabric_windows_reset(gt_dev);
        }
        groups[g].fn();
        if (gt_have_regs) {
            nfabric_windows_reset(gt_dev);
        }
        gt_diag("group %s took %.2f s", groups[g].name, gt_now() - t0);
    }
    nfabric_free(gt_dev);
    return tap_done();
}
