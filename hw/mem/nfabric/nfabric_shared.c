/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * NEURON-Fabric shared device state (include/hw/mem/nfabric_shared.h,
 * docs/multihost.md): creating, joining and leaving a state file, robust
 * process-shared locks, and finding heads whose process died.
 *
 * Every other head is untrusted too: a head's process can die at any
 * instruction (SIGKILL), holding a lock or not.  Robust mutexes hand a
 * dead holder's lock to the next locker with EOWNERDEAD; the locker repairs
 * what the holder may have left half-done before it marks the lock
 * consistent again, so no head ever waits for a dead one.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "hw/mem/nfabric_shared.h"

static void nfabric_seterr(char *err, size_t errlen, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static void nfabric_seterr(char *err, size_t errlen, const char *fmt, ...)
{
    va_list ap;

    if (!err || !errlen) {
        return;
    }
    va_start(ap, fmt);
    vsnprintf(err, errlen, fmt, ap);
    va_end(ap);
}

static void nfabric_shared_reset_tables(NFabricShared *sh)
{
    sh->cfg_busy = -1;
    sh->gen = 0;
    sh->enabled_mask = 0;
    sh->lost_mask = 0;
    memset(sh->win, 0, sizeof(sh->win));
    memset(sh->cfg, 0, sizeof(sh->cfg));
    memset(sh->round, 0, sizeof(sh->round));
}

void nfabric_shared_init_local(NFabricShared *sh, uint64_t mem_size)
{
    memset(sh, 0, sizeof(*sh));
    sh->magic = NFABRIC_SHARED_MAGIC;
    sh->layout = NFABRIC_SHARED_LAYOUT;
    sh->struct_size = sizeof(*sh);
    sh->heads = 1;
    sh->mem_size = mem_size;
    sh->pshared = 0;
    nfabric_shared_reset_tables(sh);
    sh->head[0].state = NFABRIC_HEAD_ATTACHED;
    sh->head[0].pid = (uint32_t)getpid();
    sh->head[0].attaches = 1;
}

static int nfabric_robust_init(pthread_mutex_t *m)
{
    pthread_mutexattr_t a;
    int rc;

    pthread_mutexattr_init(&a);
    pthread_mutexattr_setpshared(&a, PTHREAD_PROCESS_SHARED);
    pthread_mutexattr_setrobust(&a, PTHREAD_MUTEX_ROBUST);
    rc = pthread_mutex_init(m, &a);
    pthread_mutexattr_destroy(&a);
    return rc;
}

/* Make a state file's content anew (no head alive; flock held). */
static int nfabric_shared_format(NFabricShared *sh, const NFabricAttach *a)
{
    memset(sh, 0, sizeof(*sh));
    if (nfabric_robust_init(&sh->cfg_lock)) {
        return -1;
    }
    for (unsigned i = 0; i < NFABRIC_NUM_WINDOWS; i++) {
        if (nfabric_robust_init(&sh->win_lock[i].m)) {
            return -1;
        }
    }
    for (unsigned h = 0; h < NFABRIC_MAX_HEADS; h++) {
        if (nfabric_robust_init(&sh->head[h].alive)) {
            return -1;
        }
    }
    nfabric_shared_reset_tables(sh);
    sh->heads = a->heads;
    sh->mem_size = a->mem_size;
    sh->mem_dev = a->mem_dev;
    sh->mem_ino = a->mem_ino;
    sh->pshared = 1;
    sh->layout = NFABRIC_SHARED_LAYOUT;
    sh->struct_size = sizeof(*sh);
    /* Last: a file with the magic is a complete one. */
    __atomic_store_n(&sh->magic, NFABRIC_SHARED_MAGIC, __ATOMIC_RELEASE);
    return 0;
}

/*
 * Head h left (died, or detached): it is no longer expected in rounds, and
 * a round it wrote in without completing may hold a partial contribution.
 * Called with cfg_lock held.
 */
static void nfabric_shared_mark_gone(NFabricShared *sh, unsigned h, bool died)
{
    uint32_t bit = 1u << h;

    sh->head[h].state = NFABRIC_HEAD_GONE;
    if (died) {
        sh->lost_mask |= bit;
        sh->reaped++;
    }
    for (unsigned i = 0; i < NFABRIC_NUM_WINDOWS; i++) {
        NFabricRound *r = &sh->round[i];

        if ((r->contrib & bit) && !(r->done & bit)) {
            r->incomplete = 1;
        }
    }
}

/* A dead holder left the configuration lock: finish or undo its change. */
static void nfabric_shared_repair_cfg(NFabricShared *sh)
{
    int busy = sh->cfg_busy;

    sh->lock_repairs++;
    if (busy >= 0 && busy < NFABRIC_NUM_WINDOWS) {
        /* Its window's configuration may be half-written: disable it. */
        sh->enabled_mask &= ~(1u << busy);
        sh->win[busy].ctrl &= ~NFABRIC_WCTRL_ENABLE;
        sh->round[busy].incomplete = 1;
    }
    sh->cfg_busy = -1;
    if (__atomic_load_n(&sh->gen, __ATOMIC_ACQUIRE) & 1) {
        nfabric_shared_gen_bump(sh);    /* publish a consistent table */
    }
}

static inline void nfabric_cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#endif
}

/*
 * Locks are held for one access (tens of nanoseconds): spin a while before
 * sleeping in the kernel, which costs microseconds to enter and leave.
 */
#define NFABRIC_LOCK_SPINS 2000

static bool nfabric_robust_lock(NFabricShared *sh, pthread_mutex_t *m,
                                void (*repair)(NFabricShared *, unsigned),
                                unsigned arg)
{
    int rc = pthread_mutex_trylock(m);

    if (rc == EBUSY) {
        __atomic_fetch_add(&sh->lock_waits, 1, __ATOMIC_RELAXED);
        for (unsigned i = 0; i < NFABRIC_LOCK_SPINS && rc == EBUSY; i++) {
            nfabric_cpu_relax();
            rc = pthread_mutex_trylock(m);
        }
        if (rc == EBUSY) {
            __atomic_fetch_add(&sh->lock_sleeps, 1, __ATOMIC_RELAXED);
            rc = pthread_mutex_lock(m);
        }
    }
    if (rc == EOWNERDEAD) {
        repair(sh, arg);
        pthread_mutex_consistent(m);
        rc = 0;
    }
    return rc == 0;
}

static void nfabric_repair_cfg_cb(NFabricShared *sh, unsigned unused)
{
    (void)unused;
    nfabric_shared_repair_cfg(sh);
}

static void nfabric_repair_win_cb(NFabricShared *sh, unsigned i)
{
    /* The holder died inside one access or a clear of window i. */
    sh->lock_repairs++;
    sh->round[i].incomplete = 1;
}

bool nfabric_shared_lock_cfg(NFabricShared *sh)
{
    if (!sh->pshared) {
        return true;
    }
    return nfabric_robust_lock(sh, &sh->cfg_lock, nfabric_repair_cfg_cb, 0);
}

void nfabric_shared_unlock_cfg(NFabricShared *sh)
{
    if (sh->pshared) {
        pthread_mutex_unlock(&sh->cfg_lock);
    }
}

bool nfabric_shared_lock_win(NFabricShared *sh, unsigned i)
{
    if (!sh->pshared) {
        return true;
    }
    return nfabric_robust_lock(sh, &sh->win_lock[i].m, nfabric_repair_win_cb, i);
}

void nfabric_shared_unlock_win(NFabricShared *sh, unsigned i)
{
    if (sh->pshared) {
        pthread_mutex_unlock(&sh->win_lock[i].m);
    }
}

uint32_t nfabric_shared_expected(const NFabricShared *sh)
{
    uint32_t mask = 0;

    for (unsigned h = 0; h < sh->heads && h < NFABRIC_MAX_HEADS; h++) {
        if (__atomic_load_n(&sh->head[h].state, __ATOMIC_RELAXED) !=
            NFABRIC_HEAD_GONE) {
            mask |= 1u << h;
        }
    }
    return mask;
}

/*
 * Is head h's process alive?  Takes its alive mutex if the process died
 * (EOWNERDEAD) or the head is free; then the caller owns it.
 * Returns 1 alive (EBUSY), 0 dead or free (caller holds the mutex).
 */
static int nfabric_head_probe(NFabricShared *sh, unsigned h, bool *died)
{
    int rc = pthread_mutex_trylock(&sh->head[h].alive);

    *died = false;
    if (rc == EBUSY) {
        return 1;
    }
    if (rc == EOWNERDEAD) {
        pthread_mutex_consistent(&sh->head[h].alive);
        *died = true;
        return 0;
    }
    if (rc == 0) {
        return 0;
    }
    /* EDEADLK (our own) or unrecoverable: treat as alive, never take it. */
    return 1;
}

uint32_t nfabric_shared_reap(NFabricShared *sh, unsigned self)
{
    uint32_t live = 0;

    if (!sh->pshared) {
        return 1u << self;
    }
    for (unsigned h = 0; h < sh->heads && h < NFABRIC_MAX_HEADS; h++) {
        bool died;

        if (__atomic_load_n(&sh->head[h].state, __ATOMIC_ACQUIRE) !=
            NFABRIC_HEAD_ATTACHED) {
            continue;
        }
        if (h == self) {
            live |= 1u << h;
            continue;
        }
        if (nfabric_head_probe(sh, h, &died)) {
            live |= 1u << h;
            continue;
        }
        /* Its process is gone: mark it, then free the slot. */
        if (nfabric_shared_lock_cfg(sh)) {
            if (sh->head[h].state == NFABRIC_HEAD_ATTACHED) {
                nfabric_shared_mark_gone(sh, h, true);
            }
            nfabric_shared_unlock_cfg(sh);
        }
        pthread_mutex_unlock(&sh->head[h].alive);
    }
    return live;
}

/* Is any head's process alive (flock held)? */
static bool nfabric_any_alive(NFabricShared *sh)
{
    bool alive = false;

    for (unsigned h = 0; h < NFABRIC_MAX_HEADS; h++) {
        bool died;

        if (nfabric_head_probe(sh, h, &died)) {
            alive = true;
        } else {
            pthread_mutex_unlock(&sh->head[h].alive);
        }
    }
    return alive;
}

int nfabric_shared_attach(const NFabricAttach *a, NFabricShared **out,
                          int *fdp, NFabricAttachHow *how,
                          char *err, size_t errlen)
{
    NFabricShared *sh = MAP_FAILED;
    struct stat st;
    bool fresh;
    int fd, rc;
    bool died;

    *out = NULL;
    *fdp = -1;
    if (a->heads < 1 || a->heads > NFABRIC_MAX_HEADS) {
        nfabric_seterr(err, errlen, "property 'heads' must be 1..%u, not %u",
                       NFABRIC_MAX_HEADS, a->heads);
        return -1;
    }
    if (a->head >= a->heads) {
        nfabric_seterr(err, errlen, "property 'head' must be 0..%u "
                       "(heads=%u), not %u", a->heads - 1, a->heads, a->head);
        return -1;
    }
    fd = open(a->path, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
    if (fd < 0) {
        nfabric_seterr(err, errlen, "property 'shared-state': cannot open "
                       "'%s': %s", a->path, strerror(errno));
        return -1;
    }
    /* One attach at a time; the kernel drops the lock if we die. */
    if (flock(fd, LOCK_EX) != 0 || fstat(fd, &st) != 0) {
        nfabric_seterr(err, errlen, "property 'shared-state': cannot lock "
                       "'%s': %s", a->path, strerror(errno));
        close(fd);
        return -1;
    }
    fresh = st.st_size == 0;
    if (fresh && ftruncate(fd, sizeof(NFabricShared)) != 0) {
        nfabric_seterr(err, errlen, "property 'shared-state': cannot size "
                       "'%s': %s", a->path, strerror(errno));
        goto fail;
    }
    if (!fresh && (uint64_t)st.st_size != sizeof(NFabricShared)) {
        nfabric_seterr(err, errlen, "property 'shared-state': '%s' is %" PRIu64
                       " bytes, not the %zu of state layout %u (another "
                       "version's file?)", a->path, (uint64_t)st.st_size,
                       sizeof(NFabricShared), NFABRIC_SHARED_LAYOUT);
        goto fail;
    }
    sh = mmap(NULL, sizeof(*sh), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (sh == MAP_FAILED) {
        nfabric_seterr(err, errlen, "property 'shared-state': cannot map "
                       "'%s': %s", a->path, strerror(errno));
        goto fail;
    }
    if (!fresh && (sh->magic != NFABRIC_SHARED_MAGIC ||
                   sh->layout != NFABRIC_SHARED_LAYOUT ||
                   sh->struct_size != sizeof(*sh))) {
        if (sh->magic == 0) {
            /* A creator died before it finished: nobody can be attached. */
            fresh = true;
        } else {
            nfabric_seterr(err, errlen, "property 'shared-state': '%s' is not "
                           "a state file of layout %u (magic 0x%08" PRIx32
                           ", layout %" PRIu32 ")", a->path,
                           NFABRIC_SHARED_LAYOUT, sh->magic, sh->layout);
            goto fail;
        }
    }
    if (fresh) {
        if (nfabric_shared_format(sh, a)) {
            nfabric_seterr(err, errlen, "property 'shared-state': cannot "
                           "initialise the locks in '%s'", a->path);
            goto fail;
        }
        *how = NFABRIC_ATTACH_CREATED;
    } else if (!nfabric_any_alive(sh)) {
        /* Left by a crashed or finished run: no head is alive. */
        if (nfabric_shared_format(sh, a)) {
            nfabric_seterr(err, errlen, "property 'shared-state': cannot "
                           "initialise the locks in '%s'", a->path);
            goto fail;
        }
        *how = NFABRIC_ATTACH_REINIT;
    } else {
        if (sh->heads != a->heads) {
            nfabric_seterr(err, errlen, "property 'heads': %u, but the "
                           "device in '%s' has %" PRIu32 " heads", a->heads,
                           a->path, sh->heads);
            goto fail;
        }
        if (sh->mem_size != a->mem_size) {
            nfabric_seterr(err, errlen, "property 'volatile-memdev': %" PRIu64
                           " bytes, but the device in '%s' has %" PRIu64,
                           a->mem_size, a->path, sh->mem_size);
            goto fail;
        }
        if (sh->mem_dev != a->mem_dev || sh->mem_ino != a->mem_ino) {
            nfabric_seterr(err, errlen, "property 'volatile-memdev': maps "
                           "another file than the other heads of '%s' "
                           "(device:inode %" PRIu64 ":%" PRIu64 ", theirs %"
                           PRIu64 ":%" PRIu64 ")", a->path, a->mem_dev,
                           a->mem_ino, sh->mem_dev, sh->mem_ino);
            goto fail;
        }
        *how = NFABRIC_ATTACH_JOINED;
    }

    rc = nfabric_head_probe(sh, a->head, &died);
    if (rc == 1) {
        nfabric_seterr(err, errlen, "property 'head': head %u of '%s' is in "
                       "use by a live process (pid %" PRIu32 ")", a->head,
                       a->path, sh->head[a->head].pid);
        goto fail;
    }
    /* We hold head a->head's alive mutex from here until we detach. */
    if (!nfabric_shared_lock_cfg(sh)) {
        pthread_mutex_unlock(&sh->head[a->head].alive);
        nfabric_seterr(err, errlen, "property 'shared-state': the "
                       "configuration lock of '%s' is unusable", a->path);
        goto fail;
    }
    if (sh->head[a->head].state == NFABRIC_HEAD_ATTACHED) {
        /* Its last process died and nobody noticed yet. */
        nfabric_shared_mark_gone(sh, a->head, true);
        if (*how == NFABRIC_ATTACH_JOINED) {
            *how = NFABRIC_ATTACH_REJOINED;
        }
    }
    memset(sh->head[a->head].stats, 0, sizeof(sh->head[a->head].stats));
    /* Its contributions to the current rounds stay counted (a rejoin). */
    sh->head[a->head].pid = (uint32_t)getpid();
    sh->head[a->head].attaches++;
    sh->lost_mask &= ~(1u << a->head);
    __atomic_store_n(&sh->head[a->head].state, NFABRIC_HEAD_ATTACHED,
                     __ATOMIC_RELEASE);
    nfabric_shared_unlock_cfg(sh);
    flock(fd, LOCK_UN);
    *out = sh;
    *fdp = fd;
    return 0;

fail:
    if (sh != MAP_FAILED) {
        munmap(sh, sizeof(*sh));
    }
    flock(fd, LOCK_UN);
    close(fd);
    return -1;
}

void nfabric_shared_detach(NFabricShared *sh, int fd, unsigned head)
{
    if (!sh || !sh->pshared) {
        return;
    }
    flock(fd, LOCK_EX);
    if (nfabric_shared_lock_cfg(sh)) {
        if (sh->head[head].state == NFABRIC_HEAD_ATTACHED) {
            nfabric_shared_mark_gone(sh, head, false);
        }
        nfabric_shared_unlock_cfg(sh);
    }
    pthread_mutex_unlock(&sh->head[head].alive);
    flock(fd, LOCK_UN);
    munmap(sh, sizeof(*sh));
    close(fd);
}
