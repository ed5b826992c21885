/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * NEURON-Fabric shared device state: jobs, as a fabric manager sets them
 * (docs/multihost.md, "Jobs and owners").  The check of an assignment,
 * its write into a live state file (nfabric_shared_fm_write, used by
 * bench/nfabric_state_tool.c's fm command), and the repair of what a dead
 * holder of cfg_lock or of a job's lock left half-written, with the two
 * locks themselves (nfabric_shared_lock_cfg, nfabric_shared_lock_job:
 * robust mutexes of nfabric_locks.c, given these repairs).  The device's
 * view of the assignment is the controller's (nfabric_jobs.c).  May call
 * nfabric_locks.c and nfabric_mappings.c (live bytes, map_gen's futex),
 * through nfabric_shared_int.h.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <libgen.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <linux/futex.h>
#include <linux/membarrier.h>
#include <time.h>
#include <unistd.h>

#include "hw/mem/nfabric_shared.h"
#include "hw/mem/nfabric_window.h"
#include "nfabric_shared_int.h"

/*
 * A dead holder left job j's lock: undo its change.  A window it was
 * changing (publishing, or clearing: busy) may be half-written or its
 * counters half-cleared: it is disabled and its round flagged INCOMPLETE.
 */
static void nfabric_shared_repair_job(NFabricShared *sh, unsigned j)
{
    int busy = sh->job[j].busy;

    sh->lock_repairs++;
    if (busy >= 0 && busy < NFABRIC_NUM_WINDOWS) {
        if (!(sh->gen[j] & 1)) {
            nfabric_shared_gen_bump(sh, j);
        }
        __atomic_fetch_and(&sh->enabled_mask, ~(1u << busy), __ATOMIC_RELAXED);
        __atomic_fetch_and(&sh->pending_mask, ~(1u << busy), __ATOMIC_RELAXED);
        sh->win[busy].ctrl &= ~NFABRIC_WCTRL_ENABLE;
        __atomic_store_n(&sh->round[busy].incomplete, 1, __ATOMIC_RELAXED);
        nfabric_shared_map_bump(sh);    /* the others may map it again */
        nfabric_shared_event_bump(sh);
    }
    sh->job[j].busy = -1;
    if (__atomic_load_n(&sh->gen[j], __ATOMIC_ACQUIRE) & 1) {
        nfabric_shared_gen_bump(sh, j);  /* publish a consistent table */
    }
}

static void nfabric_repair_cfg_cb(NFabricShared *sh, unsigned unused)
{
    uint32_t gen = __atomic_load_n(&sh->fm.gen, __ATOMIC_ACQUIRE);

    /*
     * Attach, detach and a dead head's marking leave a consistent state at
     * every store that matters: nothing to undo.  A fabric manager that
     * died in its write (the assignment's sequence count odd) leaves an
     * assignment half old, half new: it is revoked to one that gives no
     * job any memory or window (every head keeps its job), so that no job
     * reaches what it was not given; the fabric manager writes again.
     */
    (void)unused;
    sh->lock_repairs++;
    if (gen & 1) {
        sh->fm.assigned = 1;
        memset(sh->fm.job_windows, 0, sizeof(sh->fm.job_windows));
        for (unsigned h = 0; h < NFABRIC_MAX_HEADS; h++) {
            if (sh->fm.head_job[h] >= NFABRIC_FM_MAX_JOBS) {
                sh->fm.head_job[h] = 0;
            }
        }
        sh->fm.nranges = 0;
        memset(sh->fm.range, 0, sizeof(sh->fm.range));
        __atomic_thread_fence(__ATOMIC_SEQ_CST);
        __atomic_store_n(&sh->fm.gen, gen + 1, __ATOMIC_RELEASE);
    }
}

static void nfabric_repair_job_cb(NFabricShared *sh, unsigned j)
{
    nfabric_shared_repair_job(sh, j);
}

/* ---- jobs, set by a fabric manager ----------------------------------- */

const char *nfabric_fm_check(const NFabricFm *fm, unsigned heads,
                             uint64_t mem_size, unsigned *bad_range)
{
    uint32_t seen = 0;

    *bad_range = UINT32_MAX;
    if (fm->assigned > 1) {
        return "assigned is neither 0 nor 1";
    }
    if (!fm->assigned) {
        return NULL;            /* the default: nothing else is read */
    }
    for (unsigned h = 0; h < heads && h < NFABRIC_MAX_HEADS; h++) {
        if (fm->head_job[h] >= NFABRIC_FM_MAX_JOBS) {
            return "a head of the device is in no job";
        }
    }
    for (unsigned j = 0; j < NFABRIC_FM_MAX_JOBS; j++) {
        if (fm->job_windows[j] >> NFABRIC_NUM_WINDOWS) {
            return "a job's window mask names windows the device lacks";
        }
        if (fm->job_windows[j] & seen) {
            return "a window is given to two jobs";
        }
        seen |= fm->job_windows[j];
    }
    if (fm->nranges > NFABRIC_FM_MAX_RANGES) {
        return "more ranges than the table holds";
    }
    for (unsigned k = 0; k < fm->nranges; k++) {
        const NFabricFmRange *r = &fm->range[k];

        *bad_range = k;
        if (!r->size || r->base % NFABRIC_ALIGN || r->size % NFABRIC_ALIGN ||
            r->base >= mem_size || r->size > mem_size - r->base) {
            return "a range is empty, not 64-byte aligned or past memory";
        }
        if (r->job >= NFABRIC_FM_MAX_JOBS) {
            return "a range's job is past the last job";
        }
        if (r->head != NFABRIC_FM_JOB_WIDE &&
            (r->head >= heads || fm->head_job[r->head] != r->job)) {
            return "a range's owner is not a head of the range's job";
        }
        for (unsigned q = 0; q < k; q++) {
            const NFabricFmRange *o = &fm->range[q];

            if (r->base < o->base + o->size && o->base < r->base + r->size) {
                return "a range overlaps another";
            }
        }
    }
    *bad_range = UINT32_MAX;
    return NULL;
}

/*
 * A head may map its own ranges directly (docs/multihost.md): none may be
 * taken from an attached head.  Returns the first range of old owned by
 * an attached head that fm lacks, or -1.
 */
static int nfabric_fm_taken(const NFabricFm *old, const NFabricFm *fm,
                            int fd, unsigned heads)
{
    if (!old->assigned) {
        return -1;
    }
    for (unsigned k = 0; k < old->nranges && k < NFABRIC_FM_MAX_RANGES; k++) {
        const NFabricFmRange *r = &old->range[k];
        bool kept = false;

        if (r->head == NFABRIC_FM_JOB_WIDE || r->head >= heads ||
            !nfabric_live_held(fd, r->head)) {
            continue;
        }
        for (unsigned q = 0; fm->assigned && q < fm->nranges; q++) {
            kept |= !memcmp(&fm->range[q], r, sizeof(*r));
        }
        if (!kept) {
            return (int)k;
        }
    }
    return -1;
}

/* The job whose window slots hold window i under fm, or -1 (none). */
static int nfabric_fm_window_job(const NFabricFm *fm, unsigned i)
{
    for (unsigned j = 0; j < NFABRIC_FM_MAX_JOBS; j++) {
        if (fm->job_windows[j] & (1u << i)) {
            return (int)j;
        }
    }
    return -1;
}

/* Is every byte of [a, a + len) in a range of job j under fm (checked)? */
static bool nfabric_fm_job_covers(const NFabricFm *fm, uint32_t j,
                                  uint64_t a, uint64_t len)
{
    if (len > UINT64_MAX - a) {
        return false;
    }
    while (len) {
        unsigned k;

        for (k = 0; k < fm->nranges; k++) {
            const NFabricFmRange *r = &fm->range[k];

            if (r->job == j && a >= r->base && a - r->base < r->size) {
                break;
            }
        }
        if (k == fm->nranges) {
            return false;
        }
        uint64_t n = fm->range[k].size - (a - fm->range[k].base);

        n = n < len ? n : len;
        a += n;
        len -= n;
    }
    return true;
}

/*
 * Reassignment revokes nothing by itself: an assignment fm that would leave
 * an enabled window (or one being enabled) where its job no longer reaches
 * it is refused (docs/multihost.md, "Reassignment").  A window's job is
 * the job whose slots hold it; without an assignment every window is the
 * one job's, and fm = none reaches everything.  The window must stay in
 * the job it was enabled in (old's), and its data and counter area must lie
 * in that job's memory under fm.  Returns the first such window with what
 * is wrong in err, or -1.  The caller holds the configuration lock.
 */
static int nfabric_fm_strands(const NFabricShared *sh, const NFabricFm *old,
                              const NFabricFm *fm, char *err, size_t errlen)
{
    uint32_t live = (sh->enabled_mask | sh->pending_mask) &
                    ((1u << NFABRIC_NUM_WINDOWS) - 1);

    if (!fm->assigned) {
        return -1;
    }
    for (unsigned i = 0; i < NFABRIC_NUM_WINDOWS; i++) {
        const NFabricWindow *w = (sh->pending_mask & (1u << i)) ?
                                 &sh->pend[i] : &sh->win[i];
        NFabricWindowCfg c;
        uint64_t clen;
        int jn, jo;

        if (!(live & (1u << i))) {
            continue;
        }
        c = nfabric_window_cfg(w->dpa_base, w->dpa_size, w->counters,
                               w->ctrl, w->threshold);
        clen = nfabric_window_counter_len(&c);
        jn = nfabric_fm_window_job(fm, i);
        jo = old->assigned ? nfabric_fm_window_job(old, i) : jn;
        if (jn >= 0 && (sh->pending_mask & (1u << i)) &&
            sh->pend_head[i] < NFABRIC_MAX_HEADS &&
            fm->head_job[sh->pend_head[i]] != (uint32_t)jn) {
            nfabric_seterr(err, errlen, "window %u is being enabled by head "
                           "%u, which the assignment puts in another job "
                           "than the window's (%d); try again once the "
                           "enable is done", i, sh->pend_head[i], jn);
            return (int)i;
        }
        if (jn < 0) {
            nfabric_seterr(err, errlen, "window %u is enabled (data 0x%"
                           PRIx64 "+0x%" PRIx64 "): the assignment gives its "
                           "slot to no job; disable it first", i,
                           c.dpa_base, c.dpa_size);
        } else if (jo != jn) {
            nfabric_seterr(err, errlen, "window %u is enabled in job %d (data "
                           "0x%" PRIx64 "+0x%" PRIx64 "): its slot would move "
                           "to job %d; disable it first", i, jo, c.dpa_base,
                           c.dpa_size, jn);
        } else if (!nfabric_fm_job_covers(fm, (uint32_t)jn, c.dpa_base,
                                          c.dpa_size)) {
            nfabric_seterr(err, errlen, "window %u of job %d is enabled over "
                           "0x%" PRIx64 "+0x%" PRIx64 ", which the assignment "
                           "does not leave to job %d; disable it first", i, jn,
                           c.dpa_base, c.dpa_size, jn);
        } else if (clen && !nfabric_fm_job_covers(fm, (uint32_t)jn,
                                                  c.counters, clen)) {
            nfabric_seterr(err, errlen, "window %u of job %d is enabled with "
                           "its counter area over 0x%" PRIx64 "+0x%" PRIx64
                           ", which the assignment does not leave to job %d; "
                           "disable it first", i, jn, c.counters, clen, jn);
        } else {
            continue;
        }
        return (int)i;
    }
    return -1;
}

/*
 * After a new assignment: every attached head that maps memory directly
 * rebuilds its map from it (the map protocol); wait until each did, at
 * most NFABRIC_FM_MAPS_MS.  0, or -1 naming the heads that did not: their
 * guests may reach memory by the old assignment until they do.
 */
#define NFABRIC_FM_MAPS_MS  2000

static int nfabric_fm_maps_wait(NFabricShared *sh, int fd, const char *path,
                                char *err, size_t errlen)
{
    uint32_t target = nfabric_shared_map_bump(sh), late = 0;
    struct timespec t0, t;

    clock_gettime(CLOCK_MONOTONIC, &t0);
    for (;;) {
        uint32_t direct = __atomic_load_n(&sh->map_direct, __ATOMIC_ACQUIRE);

        late = 0;
        for (unsigned h = 0; h < sh->heads && h < NFABRIC_MAX_HEADS; h++) {
            if ((direct & (1u << h)) &&
                (int32_t)(__atomic_load_n(&sh->map_ack[h], __ATOMIC_ACQUIRE) -
                          target) < 0 &&
                nfabric_live_held(fd, h)) {
                late |= 1u << h;
            }
        }
        clock_gettime(CLOCK_MONOTONIC, &t);
        if (!late || ((int64_t)(t.tv_sec - t0.tv_sec) * 1000000000 +
                      (t.tv_nsec - t0.tv_nsec)) / 1000000 >= NFABRIC_FM_MAPS_MS) {
            break;
        }
        nanosleep(&(struct timespec){ .tv_nsec = 1000000 }, NULL);
    }
    if (late) {
        nfabric_seterr(err, errlen, "%s: the assignment is written, but "
                       "head(s) 0x%04" PRIx32 " did not rebuild their direct "
                       "maps within %u ms (stopped?): until they do, their "
                       "guests may still reach memory by the old assignment",
                       path, late, NFABRIC_FM_MAPS_MS);
        return -1;
    }
    return 0;
}

int nfabric_shared_fm_write(const char *path, const NFabricFm *fm,
                            char *err, size_t errlen)
{
    static const NFabricFm none;
    NFabricShared *sh;
    struct stat st;
    const char *why;
    unsigned bad, jobs = 0;
    bool written = false;
    int fd, rc = -1;

    fd = open(path, O_RDWR | O_CLOEXEC);
    if (fd < 0 || fstat(fd, &st) != 0) {
        nfabric_seterr(err, errlen, "%s: %s", path, strerror(errno));
        if (fd >= 0) {
            close(fd);
        }
        return -1;
    }
    if ((uint64_t)st.st_size != sizeof(NFabricShared)) {
        nfabric_seterr(err, errlen, "%s: %lld bytes, not the %zu of a state "
                       "file of this layout (%u)", path, (long long)st.st_size,
                       sizeof(NFabricShared), NFABRIC_SHARED_LAYOUT);
        close(fd);
        return -1;
    }
    sh = mmap(NULL, sizeof(*sh), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (sh == MAP_FAILED) {
        nfabric_seterr(err, errlen, "%s: mmap: %s", path, strerror(errno));
        close(fd);
        return -1;
    }
    if (sh->magic != NFABRIC_SHARED_MAGIC ||
        sh->layout != NFABRIC_SHARED_LAYOUT ||
        sh->struct_size != sizeof(*sh) || sh->pshared != 1 ||
        sh->heads < 1 || sh->heads > NFABRIC_MAX_HEADS) {
        nfabric_seterr(err, errlen, "%s: not a state file of this layout "
                       "(%u) made by a head", path, NFABRIC_SHARED_LAYOUT);
        goto out;
    }
    if (!fm) {
        fm = &none;
    }
    why = nfabric_fm_check(fm, sh->heads, sh->mem_size, &bad);
    if (why) {
        if (bad != UINT32_MAX) {
            nfabric_seterr(err, errlen, "range %u (0x%" PRIx64 "+0x%" PRIx64
                           ", job %" PRIu32 "): %s (device of %" PRIu32
                           " heads, %" PRIu64 " bytes)", bad,
                           fm->range[bad].base, fm->range[bad].size,
                           fm->range[bad].job, why, sh->heads, sh->mem_size);
        } else {
            nfabric_seterr(err, errlen, "%s (device of %" PRIu32 " heads)",
                           why, sh->heads);
        }
        goto out;
    }
    /*
     * The device as a whole: no job changes its windows meanwhile (every
     * job's lock, in job order, then the device's).  Bounded: a job whose
     * head holds its lock past the bound (stopped) fails the write.
     */
    for (jobs = 0; jobs < NFABRIC_FM_MAX_JOBS; jobs++) {
        if (!nfabric_shared_lock_job(sh, jobs)) {
            nfabric_seterr(err, errlen, "%s: job %u's configuration lock "
                           "stayed busy past %u ms (a head of the job "
                           "stopped?): nothing written", path, jobs,
                           NFABRIC_SHARED_LOCK_MS);
            goto unlock_jobs;
        }
    }
    if (!nfabric_shared_lock_cfg(sh)) {
        nfabric_seterr(err, errlen, "%s: the configuration lock stayed busy "
                       "past %u ms", path, NFABRIC_SHARED_LOCK_MS);
        goto unlock_jobs;
    }
    bad = (unsigned)nfabric_fm_taken(&sh->fm, fm, fd, sh->heads);
    if (bad != UINT32_MAX) {
        const NFabricFmRange *r = &sh->fm.range[bad];

        nfabric_shared_unlock_cfg(sh);
        nfabric_seterr(err, errlen, "range 0x%" PRIx64 "+0x%" PRIx64 " is "
                       "head %" PRIu32 "'s own and head %" PRIu32 " is "
                       "attached: a head's own memory (which it may map "
                       "directly) is not taken from it while it runs",
                       r->base, r->size, r->head, r->head);
        goto unlock_jobs;
    }
    if (nfabric_fm_strands(sh, &sh->fm, fm, err, errlen) >= 0) {
        nfabric_shared_unlock_cfg(sh);
        goto unlock_jobs;
    }
    /* Readers copy it under the sequence count and check what they read. */
    __atomic_store_n(&sh->fm.gen, sh->fm.gen | 1, __ATOMIC_RELEASE);
    __atomic_thread_fence(__ATOMIC_SEQ_CST);
    sh->fm.assigned = fm->assigned;
    memcpy(sh->fm.head_job, fm->head_job, sizeof(fm->head_job));
    memcpy(sh->fm.job_windows, fm->job_windows, sizeof(fm->job_windows));
    sh->fm.nranges = fm->nranges;
    memcpy(sh->fm.range, fm->range, sizeof(fm->range));
    __atomic_thread_fence(__ATOMIC_SEQ_CST);
    __atomic_store_n(&sh->fm.gen, sh->fm.gen + 1, __ATOMIC_RELEASE);
    nfabric_shared_unlock_cfg(sh);
    written = true;
unlock_jobs:
    while (jobs > 0) {
        nfabric_shared_unlock_job(sh, --jobs);
    }
    if (written) {
        rc = nfabric_fm_maps_wait(sh, fd, path, err, errlen);
    }
out:
    munmap(sh, sizeof(*sh));
    close(fd);
    return rc;
}

/* ---- the configuration locks and their repairs ------------------- */

#define NFABRIC_STUCK_CFG  (1u << 31)   /* stuck bit of cfg_lock */

bool nfabric_shared_lock_cfg(NFabricShared *sh)
{
    return nfabric_robust_lock(sh, &sh->cfg_lock, nfabric_repair_cfg_cb, 0,
                               NFABRIC_STUCK_CFG);
}

void nfabric_shared_unlock_cfg(NFabricShared *sh)
{
    pthread_mutex_unlock(&sh->cfg_lock);
}

#define NFABRIC_STUCK_JOB(j)  (1u << (16 + (j)))   /* stuck bits of job locks */

bool nfabric_shared_lock_job(NFabricShared *sh, unsigned j)
{
    if (j >= NFABRIC_FM_MAX_JOBS) {
        errno = EINVAL;
        return false;
    }
    return nfabric_robust_lock(sh, &sh->job[j].m, nfabric_repair_job_cb, j,
                               NFABRIC_STUCK_JOB(j));
}

void nfabric_shared_unlock_job(NFabricShared *sh, unsigned j)
{
    pthread_mutex_unlock(&sh->job[j].m);
}
