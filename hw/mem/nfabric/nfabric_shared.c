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
 * consistent again, so no head ever waits for a dead one.  Waits for a
 * live holder are bounded (NFABRIC_SHARED_LOCK_MS).  What the file holds
 * is untrusted too (a corrupted or truncated file): see
 * nfabric_shared_check().
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

/* ---- the state mappings of this process ------------------------------ */

/*
 * What this process attached to, per mapping: the file descriptor that
 * holds the head's live byte, and the identity the state had at attach.
 * Read by the SIGBUS handler without a lock: an entry is filled before
 * its .sh is published and cleared (.sh = NULL) before it is reused.
 */
typedef struct NFabricMapping {
    NFabricShared *sh;
    int fd;
    int mem_fd;                     /* holds the memory file's claim, or -1 */
    unsigned head;
    uint32_t heads;
    uint64_t mem_size;
    uint64_t state_id;
    volatile sig_atomic_t lost;     /* replaced by zeros after a SIGBUS */
    uint32_t stuck;                 /* locks whose last wait ran out */
    uint32_t token;                 /* this head's stripe lock token */
    /*
     * The one thread of this process that may hold this head's biased
     * stripes (nfabric_thread_number), 0 until one is given a bias, or
     * NFABRIC_BIAS_NONE: none (a fork copied the mapping; see
     * nfabric_fork_child).  Under nfabric_maps_lock.
     */
    uint32_t bias_thr;
    /*
     * The stripes that thread was given last, oldest first: window *
     * NFABRIC_WIN_STRIPES + stripe + 1, 0 for none (NFABRIC_BIAS_KEPT).
     * Only that thread uses them.
     */
    uint16_t kept[NFABRIC_BIAS_KEPT];
} NFabricMapping;

#define NFABRIC_BIAS_NONE   UINT32_MAX

#define NFABRIC_MAX_MAPPINGS 64

static NFabricMapping nfabric_maps[NFABRIC_MAX_MAPPINGS];
static pthread_mutex_t nfabric_maps_lock = PTHREAD_MUTEX_INITIALIZER;
static volatile sig_atomic_t nfabric_fault_count;
static struct sigaction nfabric_old_sigbus;
static bool nfabric_sigbus_installed;

__thread bool nfabric_shared_thread_ready;

void nfabric_shared_thread_enter_slow(void)
{
    sigset_t set;

    sigemptyset(&set);
    sigaddset(&set, SIGBUS);
    pthread_sigmask(SIG_UNBLOCK, &set, NULL);
    nfabric_shared_thread_ready = true;
}

unsigned nfabric_shared_faults(void)
{
    return (unsigned)__atomic_load_n(&nfabric_fault_count, __ATOMIC_ACQUIRE);
}

static NFabricMapping *nfabric_mapping(const NFabricShared *sh)
{
    for (unsigned k = 0; k < NFABRIC_MAX_MAPPINGS; k++) {
        if (__atomic_load_n(&nfabric_maps[k].sh, __ATOMIC_ACQUIRE) == sh) {
            return &nfabric_maps[k];
        }
    }
    return NULL;
}

/* Mappings with a stuck lock: while 0, no lock looks its mapping up. */
static unsigned nfabric_stuck_maps;

static void nfabric_stuck_set(NFabricMapping *map, uint32_t bit)
{
    if (!__atomic_fetch_or(&map->stuck, bit, __ATOMIC_RELAXED)) {
        __atomic_fetch_add(&nfabric_stuck_maps, 1, __ATOMIC_RELAXED);
    }
}

static void nfabric_stuck_clear(NFabricMapping *map, uint32_t bit)
{
    uint32_t old = __atomic_fetch_and(&map->stuck, ~bit, __ATOMIC_RELAXED);

    if (old == bit) {
        __atomic_fetch_sub(&nfabric_stuck_maps, 1, __ATOMIC_RELAXED);
    }
}

/*
 * ---- threads and biased stripes -----------------------------------------
 *
 * A stripe biased to a thread is taken by it with plain stores, and given
 * back by another head only after a barrier on every running thread of
 * the processes that registered for it (membarrier(2)): see
 * NFABRIC_BIAS_MIN.  Only one thread of a process may hold a head's
 * biased stripes (its busy bytes have one writer), and after a fork only
 * one of the two processes: the parent keeps the mappings one of its
 * threads holds biases of, the child may take the others.
 */
static __thread uint32_t nfabric_thr;       /* 0: no number yet */
static uint32_t nfabric_thr_next;
static int nfabric_mb_state;                /* 1 registered, -1 cannot */
static bool nfabric_atfork_installed;

static uint32_t nfabric_thread_number(void)
{
    while (!nfabric_thr || nfabric_thr == NFABRIC_BIAS_NONE) {
        nfabric_thr = __atomic_add_fetch(&nfabric_thr_next, 1,
                                         __ATOMIC_RELAXED);
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

static void nfabric_fork_prepare(void)
{
    pthread_mutex_lock(&nfabric_maps_lock);
}

static void nfabric_fork_parent(void)
{
    for (unsigned k = 0; k < NFABRIC_MAX_MAPPINGS; k++) {
        if (nfabric_maps[k].sh && !nfabric_maps[k].bias_thr) {
            nfabric_maps[k].bias_thr = NFABRIC_BIAS_NONE;
        }
    }
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

/* May this thread hold biased stripes of sh's head?  Claims it if none. */
static bool nfabric_bias_claim(const NFabricShared *sh, uint32_t thr)
{
    NFabricMapping *map;
    bool ok = false;

    pthread_mutex_lock(&nfabric_maps_lock);
    map = nfabric_mapping(sh);
    if (map && !map->lost && nfabric_mb_registered()) {
        if (!map->bias_thr) {
            map->bias_thr = thr;
        }
        ok = map->bias_thr == thr;
    }
    pthread_mutex_unlock(&nfabric_maps_lock);
    return ok;
}

/*
 * A SIGBUS: if it hit a state mapping (its file was truncated), put
 * zero-filled private memory in its place, so that the faulting access
 * reads zeros instead of killing the process; the head's next check
 * finds the state lost.  Every other SIGBUS goes to the handler that was
 * there before (QEMU's, a sanitizer's, or the default action).
 */
static void nfabric_sigbus(int sig, siginfo_t *si, void *uc)
{
    uintptr_t a = (uintptr_t)si->si_addr;

    for (unsigned k = 0; k < NFABRIC_MAX_MAPPINGS; k++) {
        NFabricMapping *m = &nfabric_maps[k];
        uintptr_t base = (uintptr_t)__atomic_load_n(&m->sh, __ATOMIC_ACQUIRE);

        if (base && a >= base && a - base < sizeof(NFabricShared)) {
            if (mmap((void *)base, sizeof(NFabricShared),
                     PROT_READ | PROT_WRITE,
                     MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0) !=
                MAP_FAILED) {
                m->lost = 1;
                __atomic_fetch_add(&nfabric_fault_count, 1, __ATOMIC_RELEASE);
                return;
            }
            break;
        }
    }
    if (nfabric_old_sigbus.sa_flags & SA_SIGINFO) {
        if (nfabric_old_sigbus.sa_sigaction) {
            nfabric_old_sigbus.sa_sigaction(sig, si, uc);
            return;
        }
    } else if (nfabric_old_sigbus.sa_handler == SIG_IGN) {
        return;
    } else if (nfabric_old_sigbus.sa_handler != SIG_DFL) {
        nfabric_old_sigbus.sa_handler(sig);
        return;
    }
    /* The default action: die of the SIGBUS, as without this handler. */
    signal(SIGBUS, SIG_DFL);
    raise(SIGBUS);
}

/* Remember a new mapping (and install the SIGBUS handler once). */
static NFabricMapping *nfabric_mapping_add(NFabricShared *sh, int fd,
                                           const NFabricAttach *a,
                                           uint64_t state_id)
{
    NFabricMapping *m = NULL;

    pthread_mutex_lock(&nfabric_maps_lock);
    if (!nfabric_sigbus_installed) {
        struct sigaction sa;

        memset(&sa, 0, sizeof(sa));
        sa.sa_sigaction = nfabric_sigbus;
        sa.sa_flags = SA_SIGINFO | SA_NODEFER;
        sigemptyset(&sa.sa_mask);
        if (sigaction(SIGBUS, &sa, &nfabric_old_sigbus) == 0) {
            nfabric_sigbus_installed = true;
        }
    }
    if (!nfabric_atfork_installed &&
        pthread_atfork(nfabric_fork_prepare, nfabric_fork_parent,
                       nfabric_fork_child) == 0) {
        nfabric_atfork_installed = true;
    }
    for (unsigned k = 0; k < NFABRIC_MAX_MAPPINGS; k++) {
        if (!nfabric_maps[k].sh) {
            m = &nfabric_maps[k];
            break;
        }
    }
    if (m) {
        m->fd = fd;
        m->mem_fd = -1;
        m->head = a->head;
        m->heads = a->heads;
        m->mem_size = a->mem_size;
        m->state_id = state_id;
        m->lost = 0;
        m->token = 0;
        m->bias_thr = 0;
        memset(m->kept, 0, sizeof(m->kept));
        __atomic_store_n(&m->sh, sh, __ATOMIC_RELEASE);
    }
    pthread_mutex_unlock(&nfabric_maps_lock);
    return m;
}

static void nfabric_mapping_del(NFabricMapping *m)
{
    pthread_mutex_lock(&nfabric_maps_lock);
    __atomic_store_n(&m->sh, NULL, __ATOMIC_RELEASE);
    if (__atomic_exchange_n(&m->stuck, 0, __ATOMIC_RELAXED)) {
        __atomic_fetch_sub(&nfabric_stuck_maps, 1, __ATOMIC_RELAXED);
    }
    pthread_mutex_unlock(&nfabric_maps_lock);
}

/* ---- liveness: an OFD lock per head ---------------------------------- */

/*
 * Take (F_WRLCK) or drop (F_UNLCK) head h's live byte through fd.  OFD
 * locks belong to the open file description, not to a thread or even a
 * process id: the kernel drops them when the last descriptor of it closes,
 * which is at the latest when the process ends.  Taking fails (EAGAIN)
 * while another description holds the byte.
 */
static int nfabric_live_lock(int fd, unsigned h, short type)
{
    struct flock fl;

    memset(&fl, 0, sizeof(fl));
    fl.l_type = type;
    fl.l_whence = SEEK_SET;
    fl.l_start = (off_t)NFABRIC_SHARED_LIVE_BYTE(h);
    fl.l_len = 1;
    return fcntl(fd, F_OFD_SETLK, &fl);
}

/*
 * Does another description than fd's hold a live byte of heads [h, h + n)?
 * When it cannot tell, yes: a head is never taken for dead on an error.
 */
static bool nfabric_live_held_range(int fd, unsigned h, unsigned n)
{
    struct flock fl;

    memset(&fl, 0, sizeof(fl));
    fl.l_type = F_WRLCK;
    fl.l_whence = SEEK_SET;
    fl.l_start = (off_t)NFABRIC_SHARED_LIVE_BYTE(h);
    fl.l_len = n;
    return fcntl(fd, F_OFD_GETLK, &fl) != 0 || fl.l_type != F_UNLCK;
}

/* Does another description than fd's hold a live byte of heads [0, n)? */
static bool nfabric_live_any(int fd, unsigned n)
{
    return nfabric_live_held_range(fd, 0, n);
}

/* Does some process hold head h's live byte (is it attached)? */
static bool nfabric_live_held(int fd, unsigned h)
{
    return nfabric_live_held_range(fd, h, 1);
}

static void nfabric_shared_reset_tables(NFabricShared *sh)
{
    for (unsigned j = 0; j < NFABRIC_FM_MAX_JOBS; j++) {
        sh->job[j].busy = -1;
        sh->gen[j] = 0;
    }
    sh->enabled_mask = 0;
    sh->lost_mask = 0;
    memset(sh->win, 0, sizeof(sh->win));
    memset(sh->cfg, 0, sizeof(sh->cfg));
    sh->pending_mask = 0;
    memset(sh->pend, 0, sizeof(sh->pend));
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

/* A state's identity: random, so that a state made anew differs. */
static uint64_t nfabric_state_id(void)
{
    struct timespec ts;
    uint64_t z;

    clock_gettime(CLOCK_REALTIME, &ts);
    z = (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
    z ^= (uint64_t)getpid() << 32;
    z ^= (uintptr_t)&ts;
    /* splitmix64's finaliser */
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    z ^= z >> 31;
    return z ? z : 1;
}

/* ---- the map protocol's notifications -------------------------------- */

void nfabric_shared_map_wait(NFabricShared *sh, uint32_t seen, unsigned ms)
{
    struct timespec ts = {
        .tv_sec = ms / 1000,
        .tv_nsec = (long)(ms % 1000) * 1000000L,
    };

    /* Returns at once if map_gen moved; EINTR and timeouts are fine too. */
    syscall(SYS_futex, &sh->map_gen, FUTEX_WAIT, seen, &ts, NULL, 0);
}

uint32_t nfabric_shared_map_bump(NFabricShared *sh)
{
    uint32_t gen = __atomic_add_fetch(&sh->map_gen, 1, __ATOMIC_SEQ_CST);

    syscall(SYS_futex, &sh->map_gen, FUTEX_WAKE, INT32_MAX, NULL, NULL, 0);
    return gen;
}

/* Make a state file's content anew (no head alive; flock held). */
static int nfabric_shared_format(NFabricShared *sh, const NFabricAttach *a)
{
    memset(sh, 0, sizeof(*sh));
    if (nfabric_robust_init(&sh->cfg_lock)) {
        return -1;
    }
    for (unsigned j = 0; j < NFABRIC_FM_MAX_JOBS; j++) {
        if (nfabric_robust_init(&sh->job[j].m)) {
            return -1;
        }
    }
    nfabric_shared_reset_tables(sh);
    sh->heads = a->heads;
    sh->mem_size = a->mem_size;
    sh->mem_dev = a->mem_dev;
    sh->mem_ino = a->mem_ino;
    sh->pshared = 1;
    sh->state_id = nfabric_state_id();
    sh->layout = NFABRIC_SHARED_LAYOUT;
    sh->struct_size = sizeof(*sh);
    /* Last: a file with the magic is a complete one. */
    __atomic_store_n(&sh->magic, NFABRIC_SHARED_MAGIC, __ATOMIC_RELEASE);
    return 0;
}

/*
 * A head that dies inside an access leaves the stripes it held: window i's
 * counters there may hold part of its write.  The round says so.
 */
static void nfabric_stripe_repaired(NFabricShared *sh, unsigned i)
{
    __atomic_fetch_add(&sh->lock_repairs, 1, __ATOMIC_RELAXED);
    __atomic_store_n(&sh->round[i].incomplete, 1, __ATOMIC_RELAXED);
}

/* Free the stripes head h (dead: its live byte is ours now) held. */
static void nfabric_stripes_release_head(NFabricShared *sh, unsigned h)
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
        nfabric_stripes_release_head(sh, h);
    }
    /*
     * Its map no longer matters.  A window it was enabling (the map
     * protocol) is its job's: the job's next holder of its lock gives it
     * up (nfabric_ctrl.c), as only the job's lock holder changes the job's
     * windows.  The map moves so that waiters look again.
     */
    __atomic_fetch_and(&sh->map_direct, ~bit, __ATOMIC_ACQ_REL);
    nfabric_shared_map_bump(sh);
    /* Rounds are the jobs'; only ever more cautious here. */
    for (unsigned i = 0; i < NFABRIC_NUM_WINDOWS; i++) {
        NFabricRound *r = &sh->round[i];

        if ((__atomic_load_n(&r->contrib, __ATOMIC_RELAXED) & bit) &&
            !(__atomic_load_n(&r->done, __ATOMIC_RELAXED) & bit)) {
            __atomic_store_n(&r->incomplete, 1, __ATOMIC_RELAXED);
        }
    }
}

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
    }
    sh->job[j].busy = -1;
    if (__atomic_load_n(&sh->gen[j], __ATOMIC_ACQUIRE) & 1) {
        nfabric_shared_gen_bump(sh, j);  /* publish a consistent table */
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

#define NFABRIC_STUCK_CFG  (1u << 31)   /* stuck bit of cfg_lock */

/*
 * Lock m of sh; bit names it among this head's stuck locks.  A wait that
 * runs out marks the lock stuck for this process (its holder is stopped,
 * or the word is garbage); until this process takes it again, a wait for
 * it lasts NFABRIC_SHARED_STUCK_MS, not the whole bound: one stopped
 * holder costs each head one full bound, not one per access.
 */
static bool nfabric_robust_lock(NFabricShared *sh, pthread_mutex_t *m,
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

static int64_t nfabric_now_ns(void)
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
                              unsigned i, int64_t now, int64_t *deadline,
                              bool *slept)
{
    struct timespec nap = { 0, NFABRIC_STRIPE_NAP_US * 1000L };

    if (!*deadline) {
        unsigned ms = (__atomic_load_n(&map->stuck, __ATOMIC_RELAXED) &
                       (1u << i)) ? NFABRIC_SHARED_STUCK_MS
                                  : NFABRIC_SHARED_LOCK_MS;

        *deadline = now + (int64_t)ms * 1000000;
    }
    if (now >= *deadline) {
        __atomic_fetch_add(&sh->lock_timeouts, 1, __ATOMIC_RELAXED);
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
 * Take stripe w of window i, held by another: 0, ETIMEDOUT past *deadline
 * (0: not set yet; set on the first sleep, shorter while the window is
 * stuck for this head), or EINVAL for a corrupted word.
 */
static int nfabric_stripe_lock_slow(NFabricShared *sh, unsigned i,
                                    uint32_t *w, uint32_t token,
                                    int64_t *deadline)
{
    NFabricMapping *map;
    bool slept = false;
    int64_t next_live = 0;
    uint32_t v;

    __atomic_fetch_add(&sh->lock_waits, 1, __ATOMIC_RELAXED);
    for (unsigned k = 0; k < NFABRIC_STRIPE_SPINS + NFABRIC_STRIPE_YIELDS; k++) {
        if (k < NFABRIC_STRIPE_SPINS) {
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
        if (nfabric_stripe_nap(sh, map, i, now, deadline, &slept)) {
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
        if (nfabric_stripe_nap(sh, map, i, now, deadline, &slept)) {
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
 * Take back the biases of the stripes in mask of window i (their words
 * held by this thread): 0, EINVAL for a bias no head can have written,
 * ETIMEDOUT for a holder that stays inside past the bound (its bias is
 * then given back to it: it still holds the stripe), or membarrier's
 * error.  All or none.
 */
static int nfabric_stripes_unbias(NFabricShared *sh, unsigned i, uint64_t mask,
                                  int64_t *deadline)
{
    NFabricMapping *map = nfabric_mapping(sh);
    uint64_t was[NFABRIC_WIN_STRIPES];
    uint64_t m;
    int64_t now;
    int rc;

    if (!map) {
        return EINVAL;
    }
    for (m = mask; m; m &= m - 1) {
        unsigned k = (unsigned)__builtin_ctzll(m);

        was[k] = __atomic_load_n(&sh->stripe[i][k].bias, __ATOMIC_RELAXED);
        if (!(was[k] >> 32) || was[k] >> 32 == NFABRIC_BIAS_NONE ||
            !(uint32_t)was[k] ||
            !nfabric_stripe_sane((uint32_t)was[k], map->heads)) {
            return EINVAL;
        }
    }
    for (m = mask; m; m &= m - 1) {
        __atomic_store_n(&sh->stripe[i][__builtin_ctzll(m)].bias, 0,
                         __ATOMIC_RELAXED);
    }
    rc = nfabric_barrier_all();
    now = nfabric_now_ns();
    for (m = mask; m; m &= m - 1) {
        unsigned k = (unsigned)__builtin_ctzll(m);

        if (!rc) {
            rc = nfabric_stripe_wait_busy(sh, map, i, k, was[k], deadline);
        }
        if (rc) {
            /* Not taken back: its holder may be inside. */
            __atomic_store_n(&sh->stripe[i][k].bias, was[k], __ATOMIC_RELAXED);
        } else {
            /* Kept briefly: the next bias needs a longer run, else shorter. */
            __typeof__(sh->stripe[0][0]) *st = &sh->stripe[i][k];
            uint32_t need = nfabric_bias_need(st->need);
            int64_t kept = now - (int64_t)st->granted_ns;

            st->need = kept < NFABRIC_BIAS_KEEP_NS ? nfabric_bias_need(need * 2)
                                                   : nfabric_bias_need(need / 2);
            __atomic_fetch_add(&sh->bias_revokes, 1, __ATOMIC_RELAXED);
        }
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
    if (nfabric_bias_claim(sh, thr)) {
        st->granted_ns = (uint64_t)nfabric_now_ns();
        __atomic_store_n(&st->bias, me, __ATOMIC_RELAXED);
        __atomic_fetch_add(&sh->bias_grants, 1, __ATOMIC_RELAXED);
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
            rc = nfabric_stripe_lock_slow(sh, i, w, token, &deadline);
        }
        if (rc) {
            nfabric_stripes_unlock_words(sh, i, held);
            errno = rc;
            return false;
        }
        held |= 1ull << k;
    }
    /* Biased to another thread (of this head or another): taken back. */
    me = token | (uint64_t)nfabric_thr << 32;
    for (uint64_t m = mask; m; m &= m - 1) {
        unsigned k = (unsigned)__builtin_ctzll(m);
        uint64_t b = __atomic_load_n(&sh->stripe[i][k].bias, __ATOMIC_RELAXED);

        if (b && (b != me || !nfabric_thr)) {
            revoke |= 1ull << k;
        }
    }
    if (revoke) {
        int rc = nfabric_stripes_unbias(sh, i, revoke, &deadline);

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

        if (map && (__atomic_load_n(&map->stuck, __ATOMIC_RELAXED) &
                    (1u << i))) {
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

uint32_t nfabric_shared_reap(NFabricShared *sh, unsigned self)
{
    NFabricMapping *m = nfabric_mapping(sh);
    uint32_t live = 0;

    if (!m || m->lost) {
        return 1u << self;      /* a private state, or one lost */
    }
    for (unsigned h = 0; h < m->heads; h++) {
        if (__atomic_load_n(&sh->head[h].state, __ATOMIC_ACQUIRE) !=
            NFABRIC_HEAD_ATTACHED) {
            continue;
        }
        if (h == self || nfabric_live_lock(m->fd, h, F_WRLCK) != 0) {
            live |= 1u << h;    /* ours, or another description holds it */
            continue;
        }
        /* We hold its live byte: its process is gone.  Mark it, free it. */
        if (nfabric_shared_lock_cfg(sh)) {
            if (sh->head[h].state == NFABRIC_HEAD_ATTACHED) {
                nfabric_shared_mark_gone(sh, h, true);
            }
            nfabric_shared_unlock_cfg(sh);
        }
        nfabric_live_lock(m->fd, h, F_UNLCK);
    }
    return live;
}

int nfabric_shared_check(NFabricShared *sh, char *err, size_t errlen)
{
    NFabricMapping *m = nfabric_mapping(sh);
    struct stat st;

    if (!m) {
        return 0;               /* private: this process's own memory */
    }
    if (m->lost) {
        nfabric_seterr(err, errlen, "the state file was truncated under "
                       "its mapping (SIGBUS): the device's state is lost");
        return -1;
    }
    if (fstat(m->fd, &st) != 0 || (uint64_t)st.st_size < sizeof(*sh)) {
        nfabric_seterr(err, errlen, "the state file is %lld bytes now, not "
                       "%zu: it was truncated", (long long)st.st_size,
                       sizeof(*sh));
        return -1;
    }
    if (sh->magic != NFABRIC_SHARED_MAGIC ||
        sh->layout != NFABRIC_SHARED_LAYOUT ||
        sh->struct_size != sizeof(*sh) || sh->pshared != 1 ||
        sh->heads != m->heads || sh->mem_size != m->mem_size ||
        sh->state_id != m->state_id) {
        nfabric_seterr(err, errlen, "the state file's identity changed "
                       "(magic 0x%08" PRIx32 ", layout %" PRIu32 ", heads %"
                       PRIu32 ", memory %" PRIu64 " bytes, id %016" PRIx64
                       "; attached to heads %" PRIu32 ", %" PRIu64 " bytes, id %016"
                       PRIx64 "): it was overwritten or made anew",
                       sh->magic, sh->layout, sh->heads, sh->mem_size,
                       sh->state_id, m->heads, m->mem_size, m->state_id);
        return -1;
    }
    return 0;
}

/* ---- one device state per memory file ------------------------------- */

/*
 * The state file, next to ours (in its directory), whose live heads hold
 * the claim bits of the memory file: from /proc/locks, the files with OFD
 * write locks on live bytes, and their state ids.  Fills name, or leaves
 * it empty.
 */
static void nfabric_find_claimer(const char *ours, uint64_t bits, char *name,
                                 size_t len)
{
    char dirbuf[4096], line[256], path[4096 + 256];
    unsigned long inos[32];
    unsigned n = 0;
    struct dirent *de;
    char *dir;
    FILE *f;
    DIR *d;

    name[0] = 0;
    f = fopen("/proc/locks", "r");
    if (!f) {
        return;
    }
    while (n < 32 && fgets(line, sizeof(line), f)) {
        unsigned long long start;
        unsigned long ino;
        char kind[16], rw[16];
        unsigned maj, min;

        if (sscanf(line, "%*d: %15s %*s %15s %*s %x:%x:%lu %llu", kind, rw,
                   &maj, &min, &ino, &start) == 6 &&
            !strcmp(kind, "OFDLCK") && !strcmp(rw, "WRITE") &&
            start >= NFABRIC_SHARED_LIVE_BASE &&
            start < NFABRIC_SHARED_LIVE_BASE + NFABRIC_MAX_HEADS) {
            inos[n++] = ino;
        }
    }
    fclose(f);
    snprintf(dirbuf, sizeof(dirbuf), "%s", ours);
    dir = dirname(dirbuf);
    d = opendir(dir);
    if (!d) {
        return;
    }
    while ((de = readdir(d)) != NULL) {
        uint64_t id;
        bool candidate = false;
        int fd;

        for (unsigned k = 0; k < n; k++) {
            candidate |= de->d_ino == inos[k];
        }
        if (!candidate) {
            continue;
        }
        snprintf(path, sizeof(path), "%s/%s", dir, de->d_name);
        fd = open(path, O_RDONLY | O_CLOEXEC);
        if (fd < 0) {
            continue;
        }
        if (pread(fd, &id, sizeof(id), offsetof(NFabricShared, state_id)) ==
            (ssize_t)sizeof(id) &&
            NFABRIC_SHARED_MEM_BYTE(id) - NFABRIC_SHARED_MEM_BASE == bits &&
            strlen(path) < len) {
            memcpy(name, path, strlen(path) + 1);
            close(fd);
            break;
        }
        close(fd);
    }
    closedir(d);
}

/* Another description's lock on [start, start + len) of fd: its start. */
static bool nfabric_lock_other(int fd, uint64_t start, uint64_t len,
                               uint64_t *at)
{
    struct flock fl;

    if (!len) {
        return false;
    }
    memset(&fl, 0, sizeof(fl));
    fl.l_type = F_WRLCK;
    fl.l_whence = SEEK_SET;
    fl.l_start = (off_t)start;
    fl.l_len = (off_t)len;
    if (fcntl(fd, F_OFD_GETLK, &fl) != 0 || fl.l_type == F_UNLCK) {
        return false;
    }
    *at = (uint64_t)fl.l_start;
    return true;
}

/*
 * Claim the memory file a->mem_path for the state sh: an OFD read lock on
 * its byte of this state, then no byte of another state may be held.
 * Returns the descriptor that holds the claim (or -1 without mem_path),
 * or -2 with a message.
 */
static int nfabric_mem_claim(const NFabricAttach *a, const NFabricShared *sh,
                             char *err, size_t errlen)
{
    uint64_t own = NFABRIC_SHARED_MEM_BYTE(sh->state_id), at = 0;
    uint64_t end = NFABRIC_SHARED_MEM_BASE + (1ull << NFABRIC_SHARED_MEM_BITS);
    char other[512];
    struct flock fl;
    int fd;

    if (!a->mem_path) {
        return -1;
    }
    fd = open(a->mem_path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        nfabric_seterr(err, errlen, "property 'volatile-memdev': cannot open "
                       "the memory file to claim it: %s", strerror(errno));
        return -2;
    }
    memset(&fl, 0, sizeof(fl));
    fl.l_type = F_RDLCK;
    fl.l_whence = SEEK_SET;
    fl.l_start = (off_t)own;
    fl.l_len = 1;
    if (fcntl(fd, F_OFD_SETLK, &fl) != 0) {
        nfabric_seterr(err, errlen, "property 'volatile-memdev': cannot lock "
                       "the memory file: %s", strerror(errno));
        close(fd);
        return -2;
    }
    if (nfabric_lock_other(fd, NFABRIC_SHARED_MEM_BASE,
                           own - NFABRIC_SHARED_MEM_BASE, &at) ||
        nfabric_lock_other(fd, own + 1, end - own - 1, &at)) {
        nfabric_find_claimer(a->path, at - NFABRIC_SHARED_MEM_BASE, other,
                             sizeof(other));
        nfabric_seterr(err, errlen, "property 'volatile-memdev': the memory "
                       "file (device:inode %" PRIu64 ":%" PRIu64 ") is the "
                       "device memory of live heads of another device state "
                       "(%s%s%s, state id %010" PRIx64 "...), not of '%s': one "
                       "memory file belongs to one device state while any "
                       "head is attached", a->mem_dev, a->mem_ino,
                       other[0] ? "'" : "", other[0] ? other :
                       "a state file not found next to this one",
                       other[0] ? "'" : "",
                       (uint64_t)(at - NFABRIC_SHARED_MEM_BASE), a->path);
        close(fd);
        return -2;
    }
    return fd;
}

/*
 * flock() fd (LOCK_EX), waiting at most ms: a process stopped in the middle
 * of an attach or a detach must not stop the others for good.
 */
static int nfabric_flock_bounded(int fd, unsigned ms)
{
    for (unsigned t = 0;; t++) {
        if (flock(fd, LOCK_EX | LOCK_NB) == 0) {
            return 0;
        }
        if (errno != EWOULDBLOCK && errno != EINTR) {
            return -1;
        }
        if (t >= ms) {
            errno = ETIMEDOUT;
            return -1;
        }
        usleep(1000);
    }
}

/* How long an attach waits for another attach or detach of the file. */
#define NFABRIC_ATTACH_WAIT_MS  10000

int nfabric_shared_attach(const NFabricAttach *a, NFabricShared **out,
                          int *fdp, NFabricAttachHow *how,
                          char *err, size_t errlen)
{
    NFabricShared *sh = MAP_FAILED;
    NFabricMapping *m = NULL;
    struct stat st;
    bool fresh, live_taken = false;
    int fd;

    *out = NULL;
    *fdp = -1;
    nfabric_shared_thread_enter();
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
    if (nfabric_flock_bounded(fd, NFABRIC_ATTACH_WAIT_MS) != 0 ||
        fstat(fd, &st) != 0) {
        nfabric_seterr(err, errlen, "property 'shared-state': cannot lock "
                       "'%s': %s", a->path, errno == ETIMEDOUT ?
                       "another process has been attaching to it for 10 s" :
                       strerror(errno));
        close(fd);
        return -1;
    }
    fresh = st.st_size == 0;
    if (fresh && nfabric_live_any(fd, NFABRIC_MAX_HEADS)) {
        nfabric_seterr(err, errlen, "property 'shared-state': '%s' is empty "
                       "but heads are attached to it: it was truncated under "
                       "them", a->path);
        goto fail;
    }
    if (fresh && ftruncate(fd, sizeof(NFabricShared)) != 0) {
        nfabric_seterr(err, errlen, "property 'shared-state': cannot size "
                       "'%s': %s", a->path, strerror(errno));
        goto fail;
    }
    if (!fresh && (uint64_t)st.st_size != sizeof(NFabricShared)) {
        nfabric_seterr(err, errlen, "property 'shared-state': '%s' is %" PRIu64
                       " bytes, not the %zu of state layout %u (another "
                       "version's file, or truncated?)", a->path,
                       (uint64_t)st.st_size, sizeof(NFabricShared),
                       NFABRIC_SHARED_LAYOUT);
        goto fail;
    }
    sh = mmap(NULL, sizeof(*sh), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (sh == MAP_FAILED) {
        nfabric_seterr(err, errlen, "property 'shared-state': cannot map "
                       "'%s': %s", a->path, strerror(errno));
        goto fail;
    }
    /* From here a truncation of the file cannot kill the process. */
    m = nfabric_mapping_add(sh, fd, a, 0);
    if (!m) {
        nfabric_seterr(err, errlen, "property 'shared-state': this process "
                       "has %u state files attached already",
                       NFABRIC_MAX_MAPPINGS);
        goto fail;
    }
    if (!fresh && (sh->magic != NFABRIC_SHARED_MAGIC ||
                   sh->layout != NFABRIC_SHARED_LAYOUT ||
                   sh->struct_size != sizeof(*sh))) {
        if (sh->magic == 0 && !nfabric_live_any(fd, NFABRIC_MAX_HEADS)) {
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
    } else if (!nfabric_live_any(fd, NFABRIC_MAX_HEADS)) {
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
        if (sh->pshared != 1) {
            nfabric_seterr(err, errlen, "property 'shared-state': '%s' is "
                           "corrupted (pshared %" PRIu32 ")", a->path,
                           sh->pshared);
            goto fail;
        }
        *how = NFABRIC_ATTACH_JOINED;
    }
    m->state_id = sh->state_id;

    /* This head's live byte, held through fd until we detach or die. */
    if (nfabric_live_lock(fd, a->head, F_WRLCK) != 0) {
        nfabric_seterr(err, errlen, "property 'head': head %u of '%s' is in "
                       "use by a live process (pid %" PRIu32 ")", a->head,
                       a->path, sh->head[a->head].pid);
        goto fail;
    }
    live_taken = true;
    m->mem_fd = nfabric_mem_claim(a, sh, err, errlen);
    if (m->mem_fd == -2) {
        m->mem_fd = -1;
        goto fail;
    }
    if (!nfabric_shared_lock_cfg(sh)) {
        nfabric_seterr(err, errlen, "property 'shared-state': the "
                       "configuration lock of '%s' is unusable (corrupted, "
                       "or held for over %u ms)", a->path,
                       NFABRIC_SHARED_LOCK_MS);
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
    m->token = NFABRIC_STRIPE_EPOCH(sh->head[a->head].attaches) | (a->head + 1);
    sh->lost_mask &= ~(1u << a->head);
    __atomic_store_n(&sh->head[a->head].state, NFABRIC_HEAD_ATTACHED,
                     __ATOMIC_RELEASE);
    nfabric_shared_unlock_cfg(sh);
    if (m->lost) {
        nfabric_seterr(err, errlen, "property 'shared-state': '%s' was "
                       "truncated while this head attached", a->path);
        goto fail;
    }
    flock(fd, LOCK_UN);
    *out = sh;
    *fdp = fd;
    return 0;

fail:
    if (live_taken) {
        nfabric_live_lock(fd, a->head, F_UNLCK);
    }
    if (m) {
        bool lost = m->lost;

        if (m->mem_fd >= 0) {
            close(m->mem_fd);
        }

        nfabric_mapping_del(m);
        if (lost) {
            sh = MAP_FAILED;    /* zero pages now: left mapped, see .h */
        }
    }
    if (sh != MAP_FAILED) {
        munmap(sh, sizeof(*sh));
    }
    flock(fd, LOCK_UN);
    close(fd);
    return -1;
}

void nfabric_shared_detach(NFabricShared *sh, int fd, unsigned head)
{
    NFabricMapping *m = sh ? nfabric_mapping(sh) : NULL;
    bool lost;

    if (!m) {
        return;                 /* a private state */
    }
    nfabric_shared_thread_enter();
    /* Bounded: the cfg lock, not the flock, is what keeps the state sane. */
    nfabric_flock_bounded(fd, NFABRIC_SHARED_LOCK_MS);
    if (nfabric_shared_check(sh, NULL, 0) == 0 && nfabric_shared_lock_cfg(sh)) {
        if (sh->head[head].state == NFABRIC_HEAD_ATTACHED) {
            nfabric_shared_mark_gone(sh, head, false);
        }
        nfabric_shared_unlock_cfg(sh);
    }
    nfabric_live_lock(fd, head, F_UNLCK);
    if (m->mem_fd >= 0) {
        close(m->mem_fd);       /* drops this head's claim of the memory */
    }
    flock(fd, LOCK_UN);
    lost = m->lost;
    nfabric_mapping_del(m);
    if (!lost) {
        munmap(sh, sizeof(*sh));
    }
    close(fd);
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
