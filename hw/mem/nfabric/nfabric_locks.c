/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * NEURON-Fabric shared device state: its locks (docs/multihost.md, "Locks
 * and their cost").  The robust process-shared mutexes (cfg_lock and one
 * per job), the 64 stripes of each window with their biases (taken by one
 * thread with plain stores, given back after a membarrier(2)), and the
 * repair of what a dead holder left: a dead holder's word or busy byte is
 * taken over and the window's round flagged INCOMPLETE.
 *
 * Robust mutexes hand a dead holder's lock to the next locker with
 * EOWNERDEAD; the locker repairs what the holder may have left half-done
 * (nfabric_fm.c's repairs) before it marks the lock consistent again, so
 * no head ever waits for a dead one.  Waits for a live holder are bounded
 * (NFABRIC_SHARED_LOCK_MS).  May call nfabric_mappings.c only (the
 * mapping table, live bytes, stuck marks; nfabric_shared_int.h); the
 * repairs are given by the callers of nfabric_robust_lock (nfabric_fm.c).
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
 * ---- threads and biased stripes -----------------------------------------
 *
 * A stripe biased to a thread is taken by it with plain stores, and given
 * back by another head only after a barrier on every running thread of
 * the processes that registered for it (membarrier(2)): see
 * NFABRIC_BIAS_MIN.  Only one thread of a process may hold a head's
 * biased stripes (its list of kept biases has one user).  After a fork
 * the parent keeps the mappings one of its threads holds biases of, the
 * child may take the others; a mapping no thread held biases of stays
 * open to both (their threads' numbers differ: a busy byte still has one
 * writer, the holder of that stripe's bias).
 */
static __thread uint32_t nfabric_thr;       /* 0: no number yet */
static int nfabric_mb_state;                /* 1 registered, -1 cannot */

/*
 * A thread's number is its kernel thread id: no two live threads of the
 * machine share one, so that two processes forked from one head (the
 * same token) never take each other's bias for their own.
 */
static void nfabric_fork_prepare(void)
{
    pthread_mutex_lock(&nfabric_maps_lock);
}

static void nfabric_fork_parent(void)
{
    pthread_mutex_unlock(&nfabric_maps_lock);
}

static void nfabric_fork_child(void)
{
    for (unsigned k = 0; k < NFABRIC_MAX_MAPPINGS; k++) {
        if (nfabric_maps[k].sh && nfabric_maps[k].bias_thr) {
            nfabric_maps[k].bias_thr = NFABRIC_BIAS_NONE;
        }
    }
    nfabric_thr = 0;            /* the parent's thread's number */
    nfabric_mb_state = 0;       /* a new process: register again */
    pthread_mutex_unlock(&nfabric_maps_lock);
}

static pthread_once_t nfabric_atfork_once = PTHREAD_ONCE_INIT;

static void nfabric_atfork_install(void)
{
    pthread_atfork(nfabric_fork_prepare, nfabric_fork_parent,
                   nfabric_fork_child);
}

/*
 * A thread's number; the first one installs the fork handlers (before
 * it, no number and no bias exists for a fork to copy).
 */
static uint32_t nfabric_thread_number(void)
{
    if (!nfabric_thr) {
        pthread_once(&nfabric_atfork_once, nfabric_atfork_install);
        long tid = syscall(SYS_gettid);

        nfabric_thr = tid > 0 && (unsigned long)tid < NFABRIC_BIAS_NONE ?
                      (uint32_t)tid : NFABRIC_BIAS_NONE - 1;
    }
    return nfabric_thr;
}

static long nfabric_membarrier(int cmd)
{
#ifdef __NR_membarrier
    return syscall(__NR_membarrier, cmd, 0, 0);
#else
    errno = ENOSYS;
    return -1;
#endif
}

/* This process registered for others' barriers (under nfabric_maps_lock)? */
static bool nfabric_mb_registered(void)
{
    if (!nfabric_mb_state) {
        nfabric_mb_state =
            nfabric_membarrier(MEMBARRIER_CMD_REGISTER_GLOBAL_EXPEDITED) == 0 ?
            1 : -1;
    }
    return nfabric_mb_state > 0;
}

/* Every running thread of every registered process: a full barrier. */
static int nfabric_barrier_all(void)
{
    if (nfabric_membarrier(MEMBARRIER_CMD_GLOBAL_EXPEDITED) == 0 ||
        nfabric_membarrier(MEMBARRIER_CMD_GLOBAL) == 0) {
        return 0;
    }
    return errno ? errno : ENOSYS;
}

/* Does thread thr of map's head hold a bias of sh (any window, stripe)? */
static bool nfabric_bias_held(const NFabricShared *sh,
                              const NFabricMapping *map, uint32_t thr)
{
    uint64_t b = map->token | (uint64_t)thr << 32;

    for (unsigned i = 0; i < NFABRIC_NUM_WINDOWS; i++) {
        for (unsigned k = 0; k < NFABRIC_WIN_STRIPES; k++) {
            if (__atomic_load_n(&sh->stripe[i][k].bias, __ATOMIC_RELAXED) == b) {
                return true;
            }
        }
    }
    return false;
}

/*
 * Give stripe st (its word held by this thread, thr) the bias me if this
 * thread may hold sh's head's biases: the first thread that earns one
 * may, and another once that one holds none any more (a guest's writer
 * that moved to another vCPU).  Stored under nfabric_maps_lock, so that
 * no other thread is given them meanwhile.  The list of kept biases is
 * advisory (nfabric_bias_drop gives back only a bias still its own,
 * under the word): a thread that loses it to another loses nothing else.
 */
static bool nfabric_bias_claim(NFabricShared *sh, uint32_t thr,
                               __typeof__(sh->stripe[0][0]) *st, uint64_t me)
{
    NFabricMapping *map;
    bool ok = false;

    pthread_mutex_lock(&nfabric_maps_lock);
    map = nfabric_mapping(sh);
    if (map && !map->lost && nfabric_mb_registered() &&
        map->bias_thr != NFABRIC_BIAS_NONE) {
        if (map->bias_thr && map->bias_thr != thr &&
            !nfabric_bias_held(sh, map, map->bias_thr)) {
            map->bias_thr = 0;
            memset(map->kept, 0, sizeof(map->kept));
        }
        if (!map->bias_thr) {
            map->bias_thr = thr;
        }
        ok = map->bias_thr == thr;
    }
    if (ok) {
        st->granted_ns = (uint64_t)nfabric_now_ns();
        __atomic_store_n(&st->bias, me, __ATOMIC_RELAXED);
        __atomic_fetch_add(&sh->bias_grants, 1, __ATOMIC_RELAXED);
    }
    pthread_mutex_unlock(&nfabric_maps_lock);
    return ok;
}

int nfabric_robust_init(pthread_mutex_t *m)
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

/*
 * A head that dies inside an access leaves the stripes it held: window i's
 * counters there may hold part of its write.  The round says so.
 */
void nfabric_stripe_repaired(NFabricShared *sh, unsigned i)
{
    __atomic_fetch_add(&sh->lock_repairs, 1, __ATOMIC_RELAXED);
    __atomic_store_n(&sh->round[i].incomplete, 1, __ATOMIC_RELAXED);
    nfabric_shared_event_bump(sh);
}

/* Free the stripes head h (dead: its live byte is ours now) held. */
void nfabric_stripes_release_head(NFabricShared *sh, unsigned h)
{
    for (unsigned i = 0; i < NFABRIC_NUM_WINDOWS; i++) {
        for (unsigned k = 0; k < NFABRIC_WIN_STRIPES; k++) {
            uint32_t *w = &sh->stripe[i][k].word;
            uint32_t v = __atomic_load_n(w, __ATOMIC_RELAXED);
            uint64_t *b = &sh->stripe[i][k].bias;
            uint64_t bv = __atomic_load_n(b, __ATOMIC_RELAXED);
            uint8_t *busy = &sh->head[h].stripe_busy[i][k];

            if ((v & NFABRIC_STRIPE_OWNER) == h + 1 &&
                __atomic_compare_exchange_n(w, &v, 0, false, __ATOMIC_ACQ_REL,
                                            __ATOMIC_RELAXED)) {
                nfabric_stripe_repaired(sh, i);
            }
            /* Its bias, and a stripe it held through it. */
            if ((bv & NFABRIC_STRIPE_OWNER) == h + 1) {
                __atomic_compare_exchange_n(b, &bv, 0, false, __ATOMIC_ACQ_REL,
                                            __ATOMIC_RELAXED);
            }
            if (__atomic_exchange_n(busy, 0, __ATOMIC_ACQ_REL)) {
                nfabric_stripe_repaired(sh, i);
            }
        }
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

/*
 * Is m a robust, process-shared mutex as nfabric_robust_init() makes them?
 * A corrupted state file may hold anything in a lock: glibc trusts the
 * mutex's kind word (it picks the code path, and asserts on combinations
 * it never makes), so a lock of another kind is never handed to it.
 */
static pthread_once_t nfabric_kind_once = PTHREAD_ONCE_INIT;
static int nfabric_kind = -1;

static void nfabric_kind_init(void)
{
#ifdef __GLIBC__
    pthread_mutex_t m;

    if (nfabric_robust_init(&m) == 0) {
        nfabric_kind = m.__data.__kind;
        pthread_mutex_destroy(&m);
    }
#endif
}

static bool nfabric_mutex_sane(pthread_mutex_t *m)
{
#ifdef __GLIBC__
    pthread_once(&nfabric_kind_once, nfabric_kind_init);
    return __atomic_load_n(&m->__data.__kind, __ATOMIC_RELAXED) == nfabric_kind;
#else
    (void)m;
    return true;
#endif
}


/*
 * Lock m of sh; bit names it among this head's stuck locks.  A wait that
 * runs out marks the lock stuck for this process (its holder is stopped,
 * or the word is garbage); until this process takes it again, a wait for
 * it lasts NFABRIC_SHARED_STUCK_MS, not the whole bound: one stopped
 * holder costs each head one full bound, not one per access.
 */
bool nfabric_robust_lock(NFabricShared *sh, pthread_mutex_t *m,
                                void (*repair)(NFabricShared *, unsigned),
                                unsigned arg, uint32_t bit)
{
    NFabricMapping *map = NULL;
    int rc;

    if (!nfabric_mutex_sane(m)) {
        errno = EINVAL;
        return false;
    }
    rc = pthread_mutex_trylock(m);
    if (rc == EBUSY) {
        __atomic_fetch_add(&sh->lock_waits, 1, __ATOMIC_RELAXED);
        for (unsigned i = 0; i < NFABRIC_LOCK_SPINS && rc == EBUSY; i++) {
            nfabric_cpu_relax();
            rc = pthread_mutex_trylock(m);
        }
        if (rc == EBUSY) {
            unsigned ms = NFABRIC_SHARED_LOCK_MS;
            struct timespec t;

            /* Bounded: a stopped holder, or a garbage lock word. */
            map = nfabric_mapping(sh);
            if (map && (__atomic_load_n(&map->stuck, __ATOMIC_RELAXED) & bit)) {
                ms = NFABRIC_SHARED_STUCK_MS;
            }
            __atomic_fetch_add(&sh->lock_sleeps, 1, __ATOMIC_RELAXED);
            clock_gettime(CLOCK_MONOTONIC, &t);
            t.tv_sec += ms / 1000;
            t.tv_nsec += (ms % 1000) * 1000000L;
            if (t.tv_nsec >= 1000000000L) {
                t.tv_sec++;
                t.tv_nsec -= 1000000000L;
            }
            rc = pthread_mutex_clocklock(m, CLOCK_MONOTONIC, &t);
            if (rc == ETIMEDOUT) {
                __atomic_fetch_add(&sh->lock_timeouts, 1, __ATOMIC_RELAXED);
                if (map) {
                    nfabric_stuck_set(map, bit);
                }
            }
        }
    }
    /* Taken: no longer stuck (looked up only while some lock is). */
    if ((rc == 0 || rc == EOWNERDEAD) &&
        __atomic_load_n(&nfabric_stuck_maps, __ATOMIC_RELAXED)) {
        map = map ? map : nfabric_mapping(sh);
        if (map && (__atomic_load_n(&map->stuck, __ATOMIC_RELAXED) & bit)) {
            nfabric_stuck_clear(map, bit);
        }
    }
    if (rc == EOWNERDEAD) {
        repair(sh, arg);
        pthread_mutex_consistent(m);
        rc = 0;
    }
    if (rc != 0) {
        /* ETIMEDOUT: held too long; anything else: a corrupted lock. */
        errno = rc == ETIMEDOUT ? ETIMEDOUT : EINVAL;
        return false;
    }
    return true;
}

/*
 * ---- window stripes ----------------------------------------------------
 *
 * Taken on every access to a window: a compare-and-swap of 0 to the
 * holder's token when free, a plain store of 0 (release order) to give it
 * back: one locked instruction per access, no system call, no list of held
 * locks.  A head that finds a stripe held spins a while, then yields its
 * core a few times, then polls in short sleeps until the bound (nobody
 * wakes it: a wake would cost every release a second locked instruction,
 * and a wait past the spins is rare: bench cluster prints lock_sleeps).
 * A holder is dead when its head's live byte is free, or when it is this
 * head's index with another attach count (an earlier process of this
 * head): the stripe is then taken over with a compare-and-swap from the
 * dead holder's word, so that of several heads noticing it one takes it.
 */
/*
 * A stripe is held for one access (tens of nanoseconds) by a head that
 * runs: a few hundred spins outlast it.  Past them its holder was most
 * likely descheduled (more heads than cores): yield the core a few times,
 * which lets it run if it waits on this core, then sleep between looks.
 */
#define NFABRIC_STRIPE_SPINS    256
#define NFABRIC_STRIPE_YIELDS   4
#define NFABRIC_STRIPE_NAP_US   100     /* a sleep between looks */
#define NFABRIC_STRIPE_LIVE_MS  10      /* how often the holder's life is looked at */

static inline bool nfabric_stripe_try(uint32_t *w, uint32_t token)
{
    uint32_t free_word = 0;

    return __atomic_compare_exchange_n(w, &free_word, token, false,
                                       __ATOMIC_ACQUIRE, __ATOMIC_RELAXED);
}

static inline void nfabric_stripe_release(uint32_t *w)
{
    __atomic_store_n(w, 0, __ATOMIC_RELEASE);
}

/* A word a head can have written (the state file is untrusted). */
static inline bool nfabric_stripe_sane(uint32_t v, unsigned heads)
{
    unsigned owner = v & NFABRIC_STRIPE_OWNER;

    return v == 0 ||
           (owner >= 1 && owner <= heads && !(v & NFABRIC_STRIPE_RESERVED));
}

static bool nfabric_stripe_dead(const NFabricMapping *map, uint32_t v)
{
    unsigned owner = (v & NFABRIC_STRIPE_OWNER) - 1;

    if (owner == map->head) {
        /* Another thread of ours, or an earlier process of this head. */
        return v != map->token;
    }
    return !nfabric_live_held(map->fd, owner);
}

int64_t nfabric_now_ns(void)
{
    struct timespec t;

    clock_gettime(CLOCK_MONOTONIC, &t);
    return (int64_t)t.tv_sec * 1000000000 + t.tv_nsec;
}

/*
 * One look of a stripe wait past its spins found the stripe still held:
 * ETIMEDOUT once *deadline passed (set on the first look: shorter while
 * window i is stuck for this head, which it then is), else 0 after a nap.
 */
static int nfabric_stripe_nap(NFabricShared *sh, NFabricMapping *map,
                              unsigned i, unsigned k, int64_t now,
                              int64_t *deadline, bool *slept)
{
    struct timespec nap = { 0, NFABRIC_STRIPE_NAP_US * 1000L };

    if (!*deadline) {
        unsigned ms = (__atomic_load_n(&map->stuck_stripes[i],
                                       __ATOMIC_RELAXED) >> k) & 1 ?
                      NFABRIC_SHARED_STUCK_MS : NFABRIC_SHARED_LOCK_MS;

        *deadline = now + (int64_t)ms * 1000000;
    }
    if (now >= *deadline) {
        __atomic_fetch_add(&sh->lock_timeouts, 1, __ATOMIC_RELAXED);
        __atomic_fetch_or(&map->stuck_stripes[i], 1ull << k, __ATOMIC_RELAXED);
        nfabric_stuck_set(map, 1u << i);
        return ETIMEDOUT;
    }
    if (!*slept) {
        __atomic_fetch_add(&sh->lock_sleeps, 1, __ATOMIC_RELAXED);
        *slept = true;
    }
    nanosleep(&nap, NULL);
    return 0;
}

/*
 * Take stripe k of window i, held by another: 0, ETIMEDOUT past *deadline
 * (0: not set yet; set on the first sleep, shorter while the window is
 * stuck for this head), or EINVAL for a corrupted word.
 */
static int nfabric_stripe_lock_slow(NFabricShared *sh, unsigned i,
                                    unsigned k, uint32_t token,
                                    int64_t *deadline)
{
    uint32_t *w = &sh->stripe[i][k].word;
    NFabricMapping *map;
    bool slept = false;
    int64_t next_live = 0;
    uint32_t v;

    __atomic_fetch_add(&sh->lock_waits, 1, __ATOMIC_RELAXED);
    for (unsigned n = 0; n < NFABRIC_STRIPE_SPINS + NFABRIC_STRIPE_YIELDS; n++) {
        if (n < NFABRIC_STRIPE_SPINS) {
            nfabric_cpu_relax();
        } else {
            sched_yield();
        }
        v = __atomic_load_n(w, __ATOMIC_RELAXED);
        if (v == 0 && nfabric_stripe_try(w, token)) {
            return 0;
        }
    }
    map = nfabric_mapping(sh);
    if (!map) {
        return EINVAL;          /* not a state this process attached */
    }
    for (;;) {
        int64_t now;

        v = __atomic_load_n(w, __ATOMIC_RELAXED);
        if (v == 0) {
            if (nfabric_stripe_try(w, token)) {
                return 0;
            }
            continue;
        }
        if (!nfabric_stripe_sane(v, map->heads)) {
            return EINVAL;
        }
        now = nfabric_now_ns();
        if (now >= next_live) {
            if (nfabric_stripe_dead(map, v)) {
                if (__atomic_compare_exchange_n(w, &v, token, false,
                                                __ATOMIC_ACQUIRE,
                                                __ATOMIC_RELAXED)) {
                    nfabric_stripe_repaired(sh, i);
                    return 0;
                }
                continue;
            }
            next_live = now + NFABRIC_STRIPE_LIVE_MS * 1000000ll;
        }
        if (nfabric_stripe_nap(sh, map, i, k, now, deadline, &slept)) {
            return ETIMEDOUT;
        }
    }
}

static void nfabric_stripes_unlock_words(NFabricShared *sh, unsigned i,
                                         uint64_t held)
{
    for (; held; held &= held - 1) {
        nfabric_stripe_release(&sh->stripe[i][__builtin_ctzll(held)].word);
    }
}

/*
 * Wait for head h's busy byte of stripe k of window i to fall after its
 * bias b was taken back: 0, ETIMEDOUT past *deadline, as a word's wait.
 * A dead holder's byte is cleared (a repair).
 */
static int nfabric_stripe_wait_busy(NFabricShared *sh, NFabricMapping *map,
                                    unsigned i, unsigned k, uint64_t b,
                                    int64_t *deadline)
{
    unsigned h = (unsigned)(b & NFABRIC_STRIPE_OWNER) - 1;
    uint8_t *busy = &sh->head[h].stripe_busy[i][k];
    int64_t next_live = 0;
    bool slept = false;

    for (unsigned n = 0; n < NFABRIC_STRIPE_SPINS + NFABRIC_STRIPE_YIELDS; n++) {
        if (!__atomic_load_n(busy, __ATOMIC_ACQUIRE)) {
            return 0;
        }
        if (n < NFABRIC_STRIPE_SPINS) {
            nfabric_cpu_relax();
        } else {
            sched_yield();
        }
    }
    __atomic_fetch_add(&sh->lock_waits, 1, __ATOMIC_RELAXED);
    for (;;) {
        int64_t now;

        if (!__atomic_load_n(busy, __ATOMIC_ACQUIRE)) {
            return 0;
        }
        now = nfabric_now_ns();
        if (now >= next_live) {
            if (nfabric_stripe_dead(map, (uint32_t)b)) {
                __atomic_store_n(busy, 0, __ATOMIC_RELEASE);
                nfabric_stripe_repaired(sh, i);
                return 0;
            }
            next_live = now + NFABRIC_STRIPE_LIVE_MS * 1000000ll;
        }
        if (nfabric_stripe_nap(sh, map, i, k, now, deadline, &slept)) {
            return ETIMEDOUT;
        }
    }
}

/* A stripe's .need as it is used (the state file is untrusted). */
static uint32_t nfabric_bias_need(uint32_t need)
{
    return need < NFABRIC_BIAS_MIN ? NFABRIC_BIAS_MIN :
           need > NFABRIC_BIAS_MAX ? NFABRIC_BIAS_MAX : need;
}

/*
 * Take back the biases was[k] of the stripes k in mask of window i (their
 * words held by this thread; was as read once under them, a bias or the
 * one a taker that died was taking back): 0, EINVAL for a bias no head
 * can have written,
 * ETIMEDOUT for a holder that stays inside past the bound (its bias is
 * then given back to it: it still holds the stripe), or EAGAIN when no
 * barrier could be issued (the biases given back too).  All or none.
 */
static int nfabric_stripes_unbias(NFabricShared *sh, unsigned i, uint64_t mask,
                                  const uint64_t *was, int64_t *deadline)
{
    NFabricMapping *map = nfabric_mapping(sh);
    uint64_t m;
    int64_t now;
    int rc;

    if (!map) {
        return EINVAL;
    }
    for (m = mask; m; m &= m - 1) {
        unsigned k = (unsigned)__builtin_ctzll(m);

        if (!(was[k] >> 32) || was[k] >> 32 == NFABRIC_BIAS_NONE ||
            !(uint32_t)was[k] ||
            !nfabric_stripe_sane((uint32_t)was[k], map->heads)) {
            return EINVAL;
        }
    }
    for (m = mask; m; m &= m - 1) {
        __typeof__(sh->stripe[0][0]) *st = &sh->stripe[i][__builtin_ctzll(m)];

        /* Said first: a taker that dies from here on is finished for. */
        __atomic_store_n(&st->revoking, was[__builtin_ctzll(m)],
                         __ATOMIC_RELAXED);
        __atomic_store_n(&st->bias, 0, __ATOMIC_RELEASE);
    }
    /*
     * No barrier (membarrier(2) refused to this process: a seccomp
     * filter, a kernel without it): the bias is not taken back now, the
     * operation is refused (EAGAIN); the state is fine.
     */
    rc = nfabric_barrier_all() ? EAGAIN : 0;
    now = nfabric_now_ns();
    for (m = mask; m; m &= m - 1) {
        unsigned k = (unsigned)__builtin_ctzll(m);
        __typeof__(sh->stripe[0][0]) *st = &sh->stripe[i][k];

        if (!rc) {
            rc = nfabric_stripe_wait_busy(sh, map, i, k, was[k], deadline);
        }
        if (rc) {
            /* Not taken back: its holder may be inside. */
            __atomic_store_n(&st->bias, was[k], __ATOMIC_RELAXED);
        } else {
            /*
             * Kept briefly: the next bias needs a longer run, else shorter.
             * A granted_ns no head can have written is a long keep, not an
             * overflow.
             */
            uint32_t need = nfabric_bias_need(st->need);
            int64_t kept;

            if (__builtin_sub_overflow(now, (int64_t)st->granted_ns, &kept)) {
                kept = INT64_MAX;
            }
            st->need = kept < NFABRIC_BIAS_KEEP_NS ? nfabric_bias_need(need * 2)
                                                   : nfabric_bias_need(need / 2);
            __atomic_fetch_add(&sh->bias_revokes, 1, __ATOMIC_RELAXED);
        }
        __atomic_store_n(&st->revoking, 0, __ATOMIC_RELEASE);
    }
    return rc;
}

/*
 * This thread's bias me of stripe slot - 1 (window * NFABRIC_WIN_STRIPES
 * + stripe) given back: under its word, taken only if free (a head taking
 * it meanwhile takes the bias back itself), and not while this thread is
 * inside the stripe.
 */
static void nfabric_bias_drop(NFabricShared *sh, const NFabricMapping *map,
                              unsigned slot, uint64_t me)
{
    unsigned i = (slot - 1) / NFABRIC_WIN_STRIPES;
    unsigned k = (slot - 1) % NFABRIC_WIN_STRIPES;
    __typeof__(sh->stripe[0][0]) *st;

    if (!slot || i >= NFABRIC_NUM_WINDOWS ||
        __atomic_load_n(&sh->head[map->head].stripe_busy[i][k],
                        __ATOMIC_RELAXED)) {
        return;
    }
    st = &sh->stripe[i][k];
    if (!nfabric_stripe_try(&st->word, (uint32_t)me)) {
        return;
    }
    if (__atomic_load_n(&st->bias, __ATOMIC_RELAXED) == me) {
        __atomic_store_n(&st->bias, 0, __ATOMIC_RELAXED);
        st->streak = 0;
        __atomic_fetch_add(&sh->bias_drops, 1, __ATOMIC_RELAXED);
    }
    nfabric_stripe_release(&st->word);
}

/*
 * Stripe k of window i just biased to this thread (me): the newest kept.
 * It leaves the list if it was in it (taken back, earned again), else the
 * oldest does and is given back.
 */
static void nfabric_bias_keep(NFabricShared *sh, unsigned i, unsigned k,
                              uint64_t me)
{
    NFabricMapping *map = nfabric_mapping(sh);
    uint16_t slot = (uint16_t)(i * NFABRIC_WIN_STRIPES + k + 1), old;
    unsigned j = 0;

    if (!map) {
        return;
    }
    while (j < NFABRIC_BIAS_KEPT - 1 && map->kept[j] != slot) {
        j++;
    }
    if (map->kept[j] != slot) {
        j = 0;
    }
    old = map->kept[j];
    memmove(map->kept + j, map->kept + j + 1,
            (NFABRIC_BIAS_KEPT - 1 - j) * sizeof(map->kept[0]));
    map->kept[NFABRIC_BIAS_KEPT - 1] = slot;
    if (old != slot) {
        nfabric_bias_drop(sh, map, old, me);
    }
}

/*
 * Stripe k of window i, its word just taken by this thread with token:
 * biased to it once it took it .need times in a row.
 */
static void nfabric_stripe_streak(NFabricShared *sh, unsigned i, unsigned k,
                                  uint32_t token)
{
    __typeof__(sh->stripe[0][0]) *st = &sh->stripe[i][k];
    uint32_t thr = nfabric_thread_number();
    uint64_t me = token | (uint64_t)thr << 32;

    if (st->bias) {
        return;                 /* ours: nobody else's is left by now */
    }
    if (st->last != me) {
        st->last = me;
        st->streak = 1;
        return;
    }
    if (++st->streak < nfabric_bias_need(st->need)) {
        return;
    }
    st->streak = 0;
    if (nfabric_bias_claim(sh, thr, st, me)) {
        nfabric_bias_keep(sh, i, k, me);
    }
}

/*
 * Take the stripes of mask (of window i) in order; all or none.  Their
 * biases to other threads are taken back; a single stripe (may_bias) may
 * be biased to this thread.
 */
static bool nfabric_stripes_lock(NFabricShared *sh, uint32_t token, unsigned i,
                                 uint64_t mask, bool may_bias)
{
    int64_t deadline = 0;
    uint64_t held = 0, revoke = 0;
    uint64_t was[NFABRIC_WIN_STRIPES];
    uint64_t me;

    if (i >= NFABRIC_NUM_WINDOWS || !token) {
        errno = EINVAL;
        return false;
    }
    for (uint64_t m = mask; m; m &= m - 1) {
        unsigned k = (unsigned)__builtin_ctzll(m);
        uint32_t *w = &sh->stripe[i][k].word;
        int rc = 0;

        if (!nfabric_stripe_try(w, token)) {
            rc = nfabric_stripe_lock_slow(sh, i, k, token, &deadline);
        }
        if (rc) {
            nfabric_stripes_unlock_words(sh, i, held);
            errno = rc;
            return false;
        }
        held |= 1ull << k;
    }
    /*
     * Biased to another thread (of this head or another), or being taken
     * back by a taker that died: taken back.  Each bias is read once here:
     * one that a reap gives back meanwhile is taken back all the same (its
     * holder is dead, not inside).
     */
    me = token | (uint64_t)nfabric_thr << 32;
    for (uint64_t m = mask; m; m &= m - 1) {
        unsigned k = (unsigned)__builtin_ctzll(m);
        uint64_t b = __atomic_load_n(&sh->stripe[i][k].bias, __ATOMIC_RELAXED);
        uint64_t r = __atomic_load_n(&sh->stripe[i][k].revoking,
                                     __ATOMIC_RELAXED);

        if (r && r == me && nfabric_thr && (!b || b == me)) {
            /* A taker of this thread's bias died: it is not inside, here. */
            __atomic_store_n(&sh->stripe[i][k].revoking, 0, __ATOMIC_RELAXED);
            r = 0;
        }
        if ((b && (b != me || !nfabric_thr)) || r) {
            if (b && r && b != r) {
                nfabric_stripes_unlock_words(sh, i, held);
                errno = EINVAL;     /* no head writes two at once */
                return false;
            }
            was[k] = b ? b : r;
            revoke |= 1ull << k;
        }
    }
    if (revoke) {
        int rc = nfabric_stripes_unbias(sh, i, revoke, was, &deadline);

        if (rc) {
            nfabric_stripes_unlock_words(sh, i, held);
            errno = rc;
            return false;
        }
    }
    if (may_bias) {
        nfabric_stripe_streak(sh, i, (unsigned)__builtin_ctzll(mask), token);
    }
    /* Taken: no longer stuck (looked up only while some lock is). */
    if (__atomic_load_n(&nfabric_stuck_maps, __ATOMIC_RELAXED)) {
        NFabricMapping *map = nfabric_mapping(sh);

        /* The window stays stuck while another of its stripes is. */
        if (map && (__atomic_load_n(&map->stuck, __ATOMIC_RELAXED) &
                    (1u << i)) &&
            !__atomic_and_fetch(&map->stuck_stripes[i], ~mask,
                                __ATOMIC_RELAXED)) {
            nfabric_stuck_clear(map, 1u << i);
        }
    }
    return true;
}

uint32_t nfabric_shared_token(const NFabricShared *sh)
{
    NFabricMapping *map = nfabric_mapping(sh);

    return map ? map->token : 0;
}

bool nfabric_shared_lock_span(NFabricShared *sh, uint32_t token, unsigned i,
                              uint64_t size, uint64_t off, uint64_t len,
                              NFabricHeld *held)
{
    unsigned shift = nfabric_stripe_shift(size);
    uint64_t first = off >> shift;
    uint64_t last = (off + (len ? len : 1) - 1) >> shift;
    unsigned h = (token & NFABRIC_STRIPE_OWNER) - 1;
    uint64_t mask = 0;

    held->word = held->bias = 0;
    held->head = h;
    if (first == last && nfabric_thr && i < NFABRIC_NUM_WINDOWS &&
        h < NFABRIC_MAX_HEADS) {
        /* Biased to this thread: busy up, then the bias looked at again. */
        unsigned k = (unsigned)(first % NFABRIC_WIN_STRIPES);
        uint64_t *bias = &sh->stripe[i][k].bias;
        uint64_t me = token | (uint64_t)nfabric_thr << 32;

        if (__atomic_load_n(bias, __ATOMIC_RELAXED) == me) {
            uint8_t *busy = &sh->head[h].stripe_busy[i][k];

            __atomic_store_n(busy, 1, __ATOMIC_RELAXED);
            /* Ordered against a taker's store by its membarrier(2). */
            __atomic_signal_fence(__ATOMIC_SEQ_CST);
            if (__atomic_load_n(bias, __ATOMIC_ACQUIRE) == me) {
                held->bias = 1ull << k;
                return true;
            }
            __atomic_store_n(busy, 0, __ATOMIC_RELEASE);
        }
    }
    if (last - first >= NFABRIC_WIN_STRIPES - 1) {
        mask = UINT64_MAX;
    } else {
        for (uint64_t k = first; k <= last; k++) {
            mask |= 1ull << (k % NFABRIC_WIN_STRIPES);
        }
    }
    if (!nfabric_stripes_lock(sh, token, i, mask, first == last)) {
        return false;
    }
    held->word = mask;
    return true;
}

void nfabric_shared_unlock_span(NFabricShared *sh, unsigned i,
                                const NFabricHeld *held)
{
    for (uint64_t m = held->bias; m; m &= m - 1) {
        __atomic_store_n(&sh->head[held->head].stripe_busy[i][__builtin_ctzll(m)],
                         0, __ATOMIC_RELEASE);
    }
    nfabric_stripes_unlock_words(sh, i, held->word);
}

bool nfabric_shared_lock_win(NFabricShared *sh, unsigned i)
{
    return nfabric_stripes_lock(sh, nfabric_shared_token(sh), i, UINT64_MAX,
                                false);
}

void nfabric_shared_unlock_win(NFabricShared *sh, unsigned i)
{
    nfabric_stripes_unlock_words(sh, i, UINT64_MAX);
}
