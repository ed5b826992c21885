/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * nfabric-state: print a shared device's state file (docs/multihost.md)
 * as key=value lines, read-only: heads, windows, rounds and the locks'
 * figures (contended acquisitions, repairs after a dead holder).
 *
 *   nfabric-state FILE
 *   nfabric-state --live FILE   live_heads=0x... (heads whose process holds
 *                               its live byte now); exit 0 if none, 1 if
 *                               some, 2 on error: for scripts that must not
 *                               remove the state of running hosts
 *   nfabric-state fm FILE JOB...   the fabric manager: assign jobs (each
 *                               JOB: --job J --heads LIST --windows LIST
 *                               --mem RANGE[,RANGE] [--own H@RANGE]...)
 *   nfabric-state fm FILE --none   back to the default: one job of all
 *
 * A RANGE is BASE+SIZE (numbers take 0x and K, M, G); a LIST is numbers
 * and A-B spans separated by commas (docs/multihost.md, "Jobs and owners").
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE     /* F_OFD_GETLK */
#endif
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "hw/mem/nfabric_ctrl.h"
#include "hw/mem/nfabric_fm.h"
#include "hw/mem/nfabric_mappings.h"
#include "hw/mem/nfabric_shared.h"

static const char *const head_state[] = { "free", "attached", "gone" };

/* Heads whose process holds their live byte (an OFD lock) right now. */
static int live_heads(const char *path)
{
    uint32_t live = 0;
    int fd = open(path, O_RDONLY | O_CLOEXEC);

    if (fd < 0) {
        if (errno == ENOENT) {
            printf("live_heads=0x0\n");
            return 0;
        }
        fprintf(stderr, "nfabric-state: %s: %s\n", path, strerror(errno));
        return 2;
    }
    live = nfabric_live_heads(fd);
    close(fd);
    printf("live_heads=0x%" PRIx32 "\n", live);
    return live ? 1 : 0;
}

/* ---- the fabric manager ------------------------------------------------ */

static int fm_usage(const char *why, const char *arg)
{
    fprintf(stderr, "nfabric-state fm: %s%s%s%s\n", why, arg ? " \"" : "",
            arg ? arg : "", arg ? "\"" : "");
    fprintf(stderr, "usage: nfabric-state fm FILE --job J --heads LIST "
            "--windows LIST --mem BASE+SIZE[,...] [--own H@BASE+SIZE]... "
            "[--job ...]\n       nfabric-state fm FILE --none\n");
    return 2;
}

/* A number with 0x and K/M/G; false if s is not one. */
static bool fm_num(const char *s, const char **end, uint64_t *out)
{
    char *e;
    unsigned long long v;

    errno = 0;
    v = strtoull(s, &e, 0);
    if (e == s || errno || *s == '-') {
        return false;
    }
    switch (*e) {
    case 'K': v <<= 10; e++; break;
    case 'M': v <<= 20; e++; break;
    case 'G': v <<= 30; e++; break;
    }
    *out = v;
    *end = e;
    return true;
}

/* LIST of numbers below lim and A-B spans: a mask; false if bad. */
static bool fm_list(const char *s, unsigned lim, uint32_t *mask)
{
    *mask = 0;
    while (*s) {
        uint64_t a, b;
        const char *e;

        if (!fm_num(s, &e, &a)) {
            return false;
        }
        b = a;
        if (*e == '-' && !fm_num(e + 1, &e, &b)) {
            return false;
        }
        if (a > b || b >= lim || (*e && *e != ',')) {
            return false;
        }
        for (uint64_t i = a; i <= b; i++) {
            *mask |= 1u << i;
        }
        s = *e ? e + 1 : e;
    }
    return *mask != 0;
}

/* BASE+SIZE into a range of job j, owner head; false if bad or full. */
static bool fm_range(NFabricFm *fm, const char *s, const char **end,
                     unsigned j, unsigned head)
{
    NFabricFmRange *r;
    const char *e;
    uint64_t base, size;

    if (fm->nranges >= NFABRIC_FM_MAX_RANGES || !fm_num(s, &e, &base) ||
        *e != '+' || !fm_num(e + 1, &e, &size)) {
        return false;
    }
    r = &fm->range[fm->nranges++];
    r->base = base;
    r->size = size;
    r->job = j;
    r->head = head;
    *end = e;
    return true;
}

/*
 * Each job's share of the pool statistics (POOL_STATS sums every head's):
 * the sums over the job's heads, per path, as jobJ_PATH_STAT=.
 */
static void print_job_stats(const NFabricShared *sh)
{
    static const char *const stat_name[NFABRIC_NUM_STATS] = {
        "reads", "writes", "read_bytes", "write_bytes",
    };

    for (unsigned j = 0; j < NFABRIC_FM_MAX_JOBS; j++) {
        uint64_t sum[NFABRIC_NUM_PATHS][NFABRIC_NUM_STATS] = { { 0 } };
        uint32_t heads = 0;

        for (unsigned h = 0; h < sh->heads && h < NFABRIC_MAX_HEADS; h++) {
            if (sh->fm.head_job[h] != j) {
                continue;
            }
            heads |= 1u << h;
            for (unsigned p = 0; p < NFABRIC_NUM_PATHS; p++) {
                for (unsigned k = 0; k < NFABRIC_NUM_STATS; k++) {
                    sum[p][k] += sh->head[h].stats[p][k];
                }
            }
        }
        if (!heads) {
            continue;
        }
        printf("job%u_heads=0x%04" PRIx32 "\n", j, heads);
        for (unsigned p = 0; p < NFABRIC_NUM_PATHS; p++) {
            for (unsigned k = 0; k < NFABRIC_NUM_STATS; k++) {
                printf("job%u_%s_%s=%" PRIu64 "\n", j, nfabric_path_names[p],
                       stat_name[k], sum[p][k]);
            }
        }
    }
}

static int fm_main(int argc, char **argv)
{
    static NFabricFm fm;
    char err[512];
    int job = -1;

    if (argc < 2) {
        return fm_usage("give the state file and the jobs", NULL);
    }
    if (argc == 3 && !strcmp(argv[2], "--none")) {
        if (nfabric_shared_fm_write(argv[1], NULL, err, sizeof(err))) {
            fprintf(stderr, "nfabric-state fm: %s\n", err);
            return 1;
        }
        printf("fm: %s: no jobs assigned (one job of every head)\n", argv[1]);
        return 0;
    }
    fm.assigned = 1;
    memset(fm.head_job, 0xff, sizeof(fm.head_job));     /* unassigned */
    for (int a = 2; a < argc; a++) {
        const char *v = a + 1 < argc ? argv[a + 1] : NULL;
        const char *e;
        uint32_t mask;
        uint64_t n;

        if (!v) {
            return fm_usage("missing value after", argv[a]);
        }
        if (!strcmp(argv[a], "--job")) {
            if (!fm_num(v, &e, &n) || *e || n >= NFABRIC_FM_MAX_JOBS) {
                return fm_usage("--job takes 0..7, not", v);
            }
            job = (int)n;
        } else if (job < 0) {
            return fm_usage("--job must come first, before", argv[a]);
        } else if (!strcmp(argv[a], "--heads")) {
            if (!fm_list(v, NFABRIC_MAX_HEADS, &mask)) {
                return fm_usage("--heads takes a list of heads, not", v);
            }
            for (unsigned h = 0; h < NFABRIC_MAX_HEADS; h++) {
                if ((mask & (1u << h)) && fm.head_job[h] != 0xff) {
                    return fm_usage("a head is in two jobs:", v);
                }
                if (mask & (1u << h)) {
                    fm.head_job[h] = (uint8_t)job;
                }
            }
        } else if (!strcmp(argv[a], "--windows")) {
            if (!fm_list(v, NFABRIC_NUM_WINDOWS, &mask)) {
                return fm_usage("--windows takes a list of windows 0..15, not",
                                v);
            }
            fm.job_windows[job] |= mask;
        } else if (!strcmp(argv[a], "--mem")) {
            for (e = v; *e; e++) {
                if (!fm_range(&fm, e, &e, (unsigned)job, NFABRIC_FM_JOB_WIDE) ||
                    (*e && *e != ',')) {
                    return fm_usage("--mem takes BASE+SIZE[,BASE+SIZE], not",
                                    v);
                }
                if (!*e) {
                    break;
                }
            }
        } else if (!strcmp(argv[a], "--own")) {
            if (!fm_num(v, &e, &n) || *e != '@' || n >= NFABRIC_MAX_HEADS ||
                !fm_range(&fm, e + 1, &e, (unsigned)job, (unsigned)n) || *e) {
                return fm_usage("--own takes HEAD@BASE+SIZE, not", v);
            }
        } else {
            return fm_usage("unknown option", argv[a]);
        }
        a++;
    }
    if (job < 0) {
        return fm_usage("give at least one --job", NULL);
    }
    for (unsigned h = 0; h < NFABRIC_MAX_HEADS; h++) {
        if (fm.head_job[h] == 0xff) {
            fm.head_job[h] = NFABRIC_FM_MAX_JOBS;   /* refused unless absent */
        }
    }
    if (nfabric_shared_fm_write(argv[1], &fm, err, sizeof(err))) {
        fprintf(stderr, "nfabric-state fm: %s\n", err);
        return 1;
    }
    printf("fm: %s: jobs assigned (%u ranges)\n", argv[1], fm.nranges);
    return 0;
}

/*
 * Who holds the configuration lock right now: the thread id glibc keeps in
 * the lock word, and the head whose process that thread belongs to (by
 * /proc/PID/task/TID), "none" or "unknown".  A snapshot, for tests and for
 * a person asking which head holds the others up.
 */
/* The head whose process holds lock m (a thread id of it), or none. */
static void print_holder(const NFabricShared *sh, const pthread_mutex_t *m,
                         const char *name)
{
#ifdef __GLIBC__
    int tid = __atomic_load_n(&m->__data.__owner, __ATOMIC_RELAXED);
    const char *who = "none";
    char path[64], head[16];

    if (tid > 0) {
        who = "unknown";
        for (unsigned h = 0; h < sh->heads && h < NFABRIC_MAX_HEADS; h++) {
            snprintf(path, sizeof(path), "/proc/%" PRIu32 "/task/%d",
                     sh->head[h].pid, tid & 0x3fffffff);
            if (sh->head[h].pid && access(path, F_OK) == 0) {
                snprintf(head, sizeof(head), "%u", h);
                who = head;
                break;
            }
        }
    }
    printf("%s_tid=%d\n%s_head=%s\n", name, tid > 0 ? tid : 0, name, who);
#else
    (void)sh;
    (void)m;
    (void)name;
#endif
}

/*
 * Who holds the device's lock (cfg_lock_head=) and each job's
 * configuration lock (jobJ_lock_head=, jobs that have heads).
 */
static void print_cfg_holder(const NFabricShared *sh)
{
    char name[32];

    print_holder(sh, &sh->cfg_lock, "cfg_lock");
    for (unsigned j = 0; j < NFABRIC_FM_MAX_JOBS; j++) {
        if (j && !sh->fm.assigned) {
            break;              /* one job of every head: job 0 */
        }
        snprintf(name, sizeof(name), "job%u_lock", j);
        print_holder(sh, &sh->job[j].m, name);
    }
}

int main(int argc, char **argv)
{
    const NFabricShared *sh;
    struct stat st;
    int fd;

    if (argc == 3 && !strcmp(argv[1], "--live")) {
        return live_heads(argv[2]);
    }
    if (argc >= 2 && !strcmp(argv[1], "fm")) {
        return fm_main(argc - 1, argv + 1);
    }
    if (argc != 2 || !strcmp(argv[1], "--help")) {
        fprintf(argc == 2 ? stdout : stderr,
                "usage: nfabric-state FILE\n       nfabric-state --live FILE\n"
                "       nfabric-state fm FILE --job J --heads LIST --windows "
                "LIST --mem BASE+SIZE[,...] [--own H@BASE+SIZE]... [--job ...]\n"
                "       nfabric-state fm FILE --none\n");
        return argc == 2 ? 0 : 2;
    }
    fd = open(argv[1], O_RDONLY);
    if (fd < 0 || fstat(fd, &st) != 0) {
        fprintf(stderr, "nfabric-state: %s: %s\n", argv[1], strerror(errno));
        return 1;
    }
    if ((uint64_t)st.st_size != sizeof(NFabricShared)) {
        fprintf(stderr, "nfabric-state: %s is %lld bytes, not a state file of "
                "layout %u (%zu bytes)\n", argv[1], (long long)st.st_size,
                NFABRIC_SHARED_LAYOUT, sizeof(NFabricShared));
        return 1;
    }
    sh = mmap(NULL, sizeof(*sh), PROT_READ, MAP_SHARED, fd, 0);
    if (sh == MAP_FAILED) {
        fprintf(stderr, "nfabric-state: cannot map %s: %s\n", argv[1],
                strerror(errno));
        return 1;
    }
    if (sh->magic != NFABRIC_SHARED_MAGIC || sh->layout != NFABRIC_SHARED_LAYOUT) {
        fprintf(stderr, "nfabric-state: %s is not a state file of layout %u\n",
                argv[1], NFABRIC_SHARED_LAYOUT);
        return 1;
    }
    printf("heads=%" PRIu32 "\nmem_size=%" PRIu64 "\nenabled_mask=0x%" PRIx32
           "\nlost_mask=0x%" PRIx32 "\nheads_reaped=%" PRIu64
           "\nlock_waits=%" PRIu64 "\nlock_sleeps=%" PRIu64
           "\nlock_repairs=%" PRIu64 "\nlock_timeouts=%" PRIu64
           "\nbias_grants=%" PRIu64 "\nbias_revokes=%" PRIu64
           "\nbias_drops=%" PRIu64 "\nstate_id=%016" PRIx64 "\n",
           sh->heads, sh->mem_size, sh->enabled_mask, sh->lost_mask,
           sh->reaped, sh->lock_waits, sh->lock_sleeps, sh->lock_repairs,
           sh->lock_timeouts, sh->bias_grants, sh->bias_revokes,
           sh->bias_drops, sh->state_id);
    print_cfg_holder(sh);
    for (unsigned h = 0; h < sh->heads && h < NFABRIC_MAX_HEADS; h++) {
        const NFabricSharedHead *hd = &sh->head[h];
        uint64_t w = 0;

        for (unsigned p = 0; p < NFABRIC_NUM_PATHS; p++) {
            w += hd->stats[p][NFABRIC_STAT_WRITES];
        }
        printf("head%u_state=%s\nhead%u_pid=%" PRIu32 "\nhead%u_attaches=%"
               PRIu64 "\nhead%u_writes=%" PRIu64 "\n", h,
               hd->state < 3 ? head_state[hd->state] : "?", h, hd->pid, h,
               hd->attaches, h, w);
    }
    for (unsigned i = 0; i < NFABRIC_NUM_WINDOWS; i++) {
        uint64_t contrib = 0;

        if (!(sh->enabled_mask & (1u << i))) {
            continue;
        }
        /* As CONTRIB_WRITES reads: the sum of the heads' counts. */
        for (unsigned h = 0; h < sh->heads && h < NFABRIC_MAX_HEADS; h++) {
            contrib += sh->head[h].contrib_writes[i];
        }
        printf("win%u_path=%u\nwin%u_round=%" PRIu32 "\nwin%u_done=0x%" PRIx32
               "\nwin%u_incomplete=%" PRIu32 "\nwin%u_contrib_writes=%" PRIu64
               "\n", i, sh->cfg[i].path, i, sh->round[i].seq, i,
               sh->round[i].done, i, sh->round[i].incomplete, i, contrib);
    }
    printf("fm_assigned=%" PRIu32 "\n", sh->fm.assigned);
    if (sh->fm.assigned) {
        for (unsigned h = 0; h < sh->heads && h < NFABRIC_MAX_HEADS; h++) {
            printf("head%u_job=%u\n", h, sh->fm.head_job[h]);
        }
        for (unsigned j = 0; j < NFABRIC_FM_MAX_JOBS; j++) {
            if (sh->fm.job_windows[j]) {
                printf("job%u_windows=0x%04" PRIx32 "\n", j,
                       sh->fm.job_windows[j]);
            }
        }
        for (unsigned k = 0; k < sh->fm.nranges && k < NFABRIC_FM_MAX_RANGES;
             k++) {
            const NFabricFmRange *r = &sh->fm.range[k];

            if (r->head == NFABRIC_FM_JOB_WIDE) {
                printf("range%u=0x%" PRIx64 "+0x%" PRIx64 " job=%" PRIu32
                       " owner=job\n", k, r->base, r->size, r->job);
            } else {
                printf("range%u=0x%" PRIx64 "+0x%" PRIx64 " job=%" PRIu32
                       " owner=head%" PRIu32 "\n", k, r->base, r->size,
                       r->job, r->head);
            }
        }
        print_job_stats(sh);
    }
    munmap((void *)sh, sizeof(*sh));
    close(fd);
    return 0;
}
