/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * NEURON-Fabric shared device state: this process's mappings of state
 * files (docs/multihost.md).  The table of what it attached to, the
 * SIGBUS handler that keeps a state file truncated under its mapping from
 * killing the process, each head's live byte (an OFD lock: held while the
 * head's process lives), the marks of locks whose last wait ran out, and
 * the futex on map_gen by which the map protocol's waiters across
 * processes are woken.  The bottom of the shared state's files: it calls
 * none of the others (nfabric_heads.c, nfabric_locks.c, nfabric_fm.c
 * call it through nfabric_shared_int.h).
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

void nfabric_seterr(char *err, size_t errlen, const char *fmt, ...)
{
    va_list ap;

    if (!err || !errlen) {
        return;
    }
    va_start(ap, fmt);
    vsnprintf(err, errlen, fmt, ap);
    va_end(ap);
}

NFabricMapping nfabric_maps[NFABRIC_MAX_MAPPINGS];
pthread_mutex_t nfabric_maps_lock = PTHREAD_MUTEX_INITIALIZER;
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

NFabricMapping *nfabric_mapping(const NFabricShared *sh)
{
    for (unsigned k = 0; k < NFABRIC_MAX_MAPPINGS; k++) {
        if (__atomic_load_n(&nfabric_maps[k].sh, __ATOMIC_ACQUIRE) == sh) {
            return &nfabric_maps[k];
        }
    }
    return NULL;
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
NFabricMapping *nfabric_mapping_add(NFabricShared *sh, int fd,
                                    const NFabricAttach *a, uint64_t state_id)
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
        memset(m->stuck_stripes, 0, sizeof(m->stuck_stripes));
        __atomic_store_n(&m->sh, sh, __ATOMIC_RELEASE);
    }
    pthread_mutex_unlock(&nfabric_maps_lock);
    return m;
}

void nfabric_mapping_del(NFabricMapping *m)
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
int nfabric_live_lock(int fd, unsigned h, short type)
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
bool nfabric_live_any(int fd, unsigned n)
{
    return nfabric_live_held_range(fd, 0, n);
}

/* Does some process hold head h's live byte (is it attached)? */
bool nfabric_live_held(int fd, unsigned h)
{
    return nfabric_live_held_range(fd, h, 1);
}

uint32_t nfabric_live_heads(int fd)
{
    uint32_t live = 0;

    for (unsigned h = 0; h < NFABRIC_MAX_HEADS; h++) {
        if (nfabric_live_held(fd, h)) {
            live |= 1u << h;
        }
    }
    return live;
}

/* Mappings with a stuck lock: while 0, no lock looks its mapping up. */
unsigned nfabric_stuck_maps;

void nfabric_stuck_set(NFabricMapping *map, uint32_t bit)
{
    if (!__atomic_fetch_or(&map->stuck, bit, __ATOMIC_RELAXED)) {
        __atomic_fetch_add(&nfabric_stuck_maps, 1, __ATOMIC_RELAXED);
    }
}

void nfabric_stuck_clear(NFabricMapping *map, uint32_t bit)
{
    uint32_t old = __atomic_fetch_and(&map->stuck, ~bit, __ATOMIC_RELAXED);

    if (old == bit) {
        __atomic_fetch_sub(&nfabric_stuck_maps, 1, __ATOMIC_RELAXED);
    }
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

uint32_t nfabric_shared_event_gen(const NFabricShared *sh)
{
    return __atomic_load_n(&sh->event_gen, __ATOMIC_ACQUIRE);
}

void nfabric_shared_event_wait(NFabricShared *sh, uint32_t seen, unsigned ms)
{
    struct timespec ts = {
        .tv_sec = ms / 1000,
        .tv_nsec = (long)(ms % 1000) * 1000000L,
    };

    syscall(SYS_futex, &sh->event_gen, FUTEX_WAIT, seen, &ts, NULL, 0);
}

void nfabric_shared_event_bump(NFabricShared *sh)
{
    __atomic_add_fetch(&sh->event_gen, 1, __ATOMIC_SEQ_CST);
    if (sh->pshared) {
        syscall(SYS_futex, &sh->event_gen, FUTEX_WAKE, INT32_MAX, NULL, NULL,
                0);
    }
}

uint32_t nfabric_shared_map_bump(NFabricShared *sh)
{
    uint32_t gen = __atomic_add_fetch(&sh->map_gen, 1, __ATOMIC_SEQ_CST);

    syscall(SYS_futex, &sh->map_gen, FUTEX_WAKE, INT32_MAX, NULL, NULL, 0);
    return gen;
}
