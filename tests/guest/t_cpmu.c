/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * (k) The CXL PMU (register version 1.9) through Linux's own stack: the
 * kernel's cxl_pci found the block, its cxl_pmu driver registered a perf
 * PMU named after the memdev (cxl_pmu_memN.0), and Debian's perf counts
 * with it.  For each path (an FP32 window, a G-Binary window, a G-Ternary
 * window) `perf stat -a` counts a workload (this program again, with
 * --cpmu-load: writes and reads through the window, refused register
 * writes, rounds) with seven events of the device: reads, writes, bytes
 * read and written on the path, refusals, rounds (configurable counters,
 * group 1) and refusals of code RESERVED_BITS (its fixed counter, group
 * 2).  Each count must equal what the statistics registers (STATS,
 * ERROR_COUNT) grew by over the same time, and the rounds the workload
 * made: perf_equal_stats.
 * Only when named (--only cpmu): it needs perf in the guest.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "gt.h"

/* Device memory used here (DPA offsets from the region's start). */
#define CP_DATA         (61ull << 20)
#define CP_CTRS         (62ull << 20)
#define CP_SIZE         4096u
#define CP_WIN          3
/* The workload: writes, reads, refused register writes, rounds. */
#define CP_WRITES       300u
#define CP_READS        170u
#define CP_REFUSALS     3u
#define CP_ROUNDS       4u
#define CP_EVENTS       7

static const char *const cp_names[CP_EVENTS] = {
    "reads", "writes", "read_bytes", "write_bytes", "refusals", "rounds",
    "refusals of RESERVED_BITS (fixed counter)",
};

static int cp_program(nfabric_dev *d, unsigned path)
{
    nfabric_win_cfg cfg = {
        .base = nfabric_map_dpa(d) + CP_DATA, .size = CP_SIZE,
        .counters = nfabric_map_dpa(d) + CP_CTRS, .path = path, .width = 8,
        .tie = 0, .threshold = 1,
    };

    nfabric_window_disable(d, CP_WIN);
    return nfabric_window_set(d, CP_WIN, &cfg);
}

/*
 * The workload, in its own process under perf: CP_WRITES 8-byte stores
 * and CP_READS 4-byte loads through the window, CP_REFUSALS register
 * writes the device refuses, CP_ROUNDS rounds completed and seen done.
 * Prints nothing on success (its stdout is the caller's /dev/null).
 */
static int cp_load(unsigned path)
{
    nfabric_dev *d = nfabric_new();
    volatile uint8_t *m;
    uint64_t x = 0x9e3779b97f4a7c15ull;
    nfabric_round r;
    int rc = 1;

    if (!d || nfabric_open(d, 0)) {
        fprintf(stderr, "nfabric-test --cpmu-load: %s\n",
                d ? nfabric_errmsg(d) : "out of memory");
        goto out;
    }
    m = nfabric_map(d) + CP_DATA;
    for (unsigned k = 0; k < CP_WRITES; k++) {
        uint64_t v = gt_rand(&x);

        if (path == NFABRIC_PATH_GTERNARY) {
            v &= 0x5555555555555555ull;     /* codes 0 and +1 only */
        }
        gt_st(m + (k * 8) % CP_SIZE, 8, v);
    }
    for (unsigned k = 0; k < CP_READS; k++) {
        (void)gt_ld(m + (k * 4) % CP_SIZE, 4);
    }
    for (unsigned k = 0; k < CP_REFUSALS; k++) {
        nfabric_wr32(d, NFABRIC_REG_CTRL, 0x80000000u);     /* RESERVED_BITS */
    }
    for (unsigned k = 0; k < CP_ROUNDS; k++) {
        if (nfabric_round_read(d, CP_WIN, &r) ||
            nfabric_round_complete(d, CP_WIN, r.seq) ||
            nfabric_round_wait(d, CP_WIN, r.seq, 10000, &r) ||
            nfabric_window_clear(d, CP_WIN)) {
            fprintf(stderr, "nfabric-test --cpmu-load: round %u: %s\n", k,
                    nfabric_errmsg(d));
            goto out;
        }
    }
    rc = 0;
out:
    if (d) {
        nfabric_free(d);
    }
    return rc;
}

int gt_cpmu_load_main(int argc, char **argv)
{
    if (argc != 3) {
        fprintf(stderr, "usage: nfabric-test --cpmu-load PATH\n");
        return 2;
    }
    return cp_load((unsigned)atoi(argv[2]));
}

/* The first of PATH's directories holding an executable NAME. */
static bool cp_which(const char *name, char *out, size_t n)
{
    const char *path = getenv("PATH");
    char dirs[1024], *tok, *save = NULL;

    snprintf(dirs, sizeof(dirs), "%s", path ? path : "/usr/bin:/bin");
    for (tok = strtok_r(dirs, ":", &save); tok; tok = strtok_r(NULL, ":", &save)) {
        snprintf(out, n, "%s/%s", tok, name);
        if (access(out, X_OK) == 0) {
            return true;
        }
    }
    return false;
}

/* Run argv, stdout to /dev/null; its exit status (-1: it did not run). */
static int cp_run(char *const argv[])
{
    pid_t pid = fork();
    int st;

    if (pid == 0) {
        int fd = open("/dev/null", O_WRONLY);

        if (fd >= 0) {
            dup2(fd, 1);
        }
        execvp(argv[0], argv);
        _exit(127);
    }
    if (pid < 0 || waitpid(pid, &st, 0) != pid) {
        return -1;
    }
    return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

/*
 * perf stat -x ';' output: one line per event, in the order given:
 * "COUNT;UNIT;EVENT;RUNTIME;PERCENT;...".  False unless every event was
 * counted the whole time (100.00 %: no multiplexing, no scaling).
 */
static bool cp_parse(const char *file, uint64_t counts[CP_EVENTS])
{
    FILE *f = fopen(file, "r");
    char line[512];
    unsigned n = 0;

    while (f && n < CP_EVENTS && fgets(line, sizeof(line), f)) {
        char *end, *pct;

        if (line[0] < '0' || line[0] > '9') {
            continue;       /* comments, blank lines, <not counted> */
        }
        counts[n] = strtoull(line, &end, 10);
        pct = end;
        for (unsigned semi = 0; pct && semi < 4; semi++) {
            pct = strchr(pct, ';');
            pct = pct ? pct + 1 : NULL;
        }
        if (*end != ';' || !pct || strncmp(pct, "100.00", 6)) {
            gt_diag("perf output: %s", line);
            break;
        }
        n++;
    }
    if (f) {
        fclose(f);
    }
    return n == CP_EVENTS;
}

static bool cp_path(const char *pmu, const char *perf, unsigned path)
{
    char ev[CP_EVENTS][128], list[CP_EVENTS * 130], self[64], arg[8];
    char out[] = "/tmp/nfabric-cpmu-XXXXXX";
    nfabric_path_stats s0[NFABRIC_NUM_PATHS], s1[NFABRIC_NUM_PATHS];
    uint64_t want[CP_EVENTS], got[CP_EVENTS] = { 0 };
    uint32_t e0, e1;
    static const unsigned bit[6] = {
        NFABRIC_CPMU_EV_READS(0), NFABRIC_CPMU_EV_WRITES(0),
        NFABRIC_CPMU_EV_READ_BYTES(0), NFABRIC_CPMU_EV_WRITE_BYTES(0),
        NFABRIC_CPMU_EV_REFUSED, NFABRIC_CPMU_EV_CONTRIB,
    };
    size_t used = 0;
    int fd, rc;
    bool ok = true;
    const char *name = nfabric_path_name(path);

    for (unsigned k = 0; k < CP_EVENTS; k++) {
        /* Group 1 on the configurable counters; group 2's fixed one. */
        unsigned gid = k < 6 ? NFABRIC_CPMU_GROUP_DEVICE :
                       NFABRIC_CPMU_GROUP_REFUSALS;
        uint32_t mask = k < 4 ? 1u << (bit[k] + path) :
                        k == 4 ? 1u << bit[k] :
                        k == 5 ? 1u << NFABRIC_CPMU_EV_CONTRIB |
                                 1u << NFABRIC_CPMU_EV_ROUND_DONE |
                                 1u << NFABRIC_CPMU_EV_ROUND_INCOMPLETE :
                        1u << (NFABRIC_ERR_RESERVED_BITS - 1);

        snprintf(ev[k], sizeof(ev[k]), "%s/vid=0x%x,gid=0x%x,mask=0x%x/", pmu,
                 NFABRIC_CPMU_VENDOR_ID, gid, mask);
        used += (size_t)snprintf(list + used, sizeof(list) - used, "%s%s",
                                 k ? "," : "", ev[k]);
    }
    if (!CHECK(cp_program(gt_dev, path) == 0, "cpmu: window %u enabled as %s "
               "(%s)", CP_WIN, name, nfabric_errmsg(gt_dev))) {
        return false;
    }
    fd = mkstemp(out);
    if (fd >= 0) {
        close(fd);
    }
    snprintf(self, sizeof(self), "/proc/%d/exe", (int)getpid());
    snprintf(arg, sizeof(arg), "%u", path);
    nfabric_stats(gt_dev, s0);
    e0 = nfabric_rd32(gt_dev, NFABRIC_REG_ERROR_COUNT);
    {
        char *argv[] = { (char *)perf, "stat", "-a", "-x", ";", "-o", out,
                         "-e", list, "--", self, "--cpmu-load", arg, NULL };

        rc = cp_run(argv);
    }
    nfabric_stats(gt_dev, s1);
    e1 = nfabric_rd32(gt_dev, NFABRIC_REG_ERROR_COUNT);
    want[0] = s1[path].reads - s0[path].reads;
    want[1] = s1[path].writes - s0[path].writes;
    want[2] = s1[path].read_bytes - s0[path].read_bytes;
    want[3] = s1[path].write_bytes - s0[path].write_bytes;
    want[4] = e1 - e0;
    want[5] = 2 * CP_ROUNDS;    /* each round: a contribution, seen done */
    want[6] = want[4];          /* every refusal here is RESERVED_BITS */
    ok &= CHECK(rc == 0 && fd >= 0 && cp_parse(out, got),
                "cpmu %s: perf stat -a -e (seven events of %s) -- nfabric-test "
                "--cpmu-load: exit %d, every event counted the whole time",
                name, pmu, rc);
    ok &= CHECK(want[1] >= CP_WRITES && want[0] >= CP_READS &&
                want[4] == CP_REFUSALS,
                "cpmu %s: the statistics registers saw the workload: %" PRIu64
                " writes, %" PRIu64 " reads, %" PRIu64 " refusals", name,
                want[1], want[0], want[4]);
    for (unsigned k = 0; k < CP_EVENTS; k++) {
        ok &= CHECK(got[k] == want[k], "cpmu %s: perf's %s = %" PRIu64
                    ", the registers' %" PRIu64, name, cp_names[k], got[k],
                    want[k]);
    }
    unlink(out);
    nfabric_window_disable(gt_dev, CP_WIN);
    return ok;
}

void gt_group_cpmu(void)
{
    static const unsigned paths[] = {
        NFABRIC_PATH_FP32, NFABRIC_PATH_GBINARY, NFABRIC_PATH_GTERNARY,
    };
    char pmu[64], dir[160], perf[256];
    const char *mem = nfabric_memdev_name(gt_dev);
    struct stat sb;
    bool equal = true;

    if (!gt_need_regs("cpmu")) {
        return;
    }
    /* cxl_pmu names it after the memdev's id and the CPMU's index. */
    snprintf(pmu, sizeof(pmu), "cxl_pmu_%s.0", mem && *mem ? mem : "mem0");
    snprintf(dir, sizeof(dir), "/sys/bus/event_source/devices/%s", pmu);
    if (!CHECK(stat(dir, &sb) == 0, "cpmu: Linux's cxl_pmu registered %s "
               "(%s)", pmu, dir) ||
        !CHECK(cp_which("perf", perf, sizeof(perf)), "cpmu: perf is in the "
               "guest's PATH")) {
        gt_summary("perf_equal_stats=0");
        return;
    }
    for (unsigned k = 0; k < sizeof(paths) / sizeof(paths[0]); k++) {
        equal &= cp_path(pmu, perf, paths[k]);
    }
    gt_summary("CXL PMU (%s, Linux's cxl_pmu): perf stat of 7 events over "
               "FP32, G-Binary and G-Ternary windows equals the statistics "
               "registers: perf_equal_stats=%d", pmu, equal ? 1 : 0);
}
