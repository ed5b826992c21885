/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * NEURON-Fabric shared device state (include/hw/mem/nfabric_shared.h,
 * docs/multihost.md), its heads: creating, joining and leaving a state
 * file, the memory file's claim, finding heads whose process died (reap)
 * and checking that the state is still the one attached to.
 *
 * Every other head is untrusted too: a head's process can die at any
 * instruction (SIGKILL), holding a lock or not.  What the file holds is
 * untrusted too (a corrupted or truncated file): see
 * nfabric_shared_check().  The top of the shared state's files: it may
 * call nfabric_fm.c (the configuration lock), nfabric_locks.c (a dead
 * head's stripes) and nfabric_mappings.c (this process's mappings, live
 * bytes), through nfabric_shared_int.h; none of them calls it.
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
     * up (nfabric_map.c), as only the job's lock holder changes the job's
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
    /* Fewer heads expected, maybe INCOMPLETE: every head looks again. */
    nfabric_shared_event_bump(sh);
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
        if (h == self || nfabric_live_held(m->fd, h)) {
            live |= 1u << h;    /* ours, or another description holds it */
            continue;
        }
        /*
         * Its process looks gone.  Under cfg_lock (a bounded wait), take
         * its live byte, mark it and free the byte at once: a restarting
         * process of that head is never refused for the time of our wait.
         */
        if (!nfabric_shared_lock_cfg(sh)) {
            continue;           /* marked by a later reap */
        }
        if (nfabric_live_lock(m->fd, h, F_WRLCK) != 0) {
            live |= 1u << h;    /* attached again meanwhile */
        } else {
            if (sh->head[h].state == NFABRIC_HEAD_ATTACHED) {
                nfabric_shared_mark_gone(sh, h, true);
            }
            nfabric_live_lock(m->fd, h, F_UNLCK);
        }
        nfabric_shared_unlock_cfg(sh);
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
/* Looks (1 ms apart) at a live byte a reap may hold for a moment. */
#define NFABRIC_ATTACH_LIVE_TRIES   20

int nfabric_shared_attach(const NFabricAttach *a, NFabricShared **out,
                          int *fdp, NFabricAttachHow *how,
                          char *err, size_t errlen)
{
    NFabricShared *sh = MAP_FAILED;
    NFabricMapping *m = NULL;
    struct stat st;
    bool fresh, live_taken = false;
    int fd, rc;

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

    /*
     * This head's live byte, held through fd until we detach or die.  A
     * reap of this head's dead process holds it for a moment (under
     * cfg_lock, nfabric_shared_reap): looked at again for a while.
     */
    for (unsigned n = 0; (rc = nfabric_live_lock(fd, a->head, F_WRLCK)) != 0 &&
         n < NFABRIC_ATTACH_LIVE_TRIES; n++) {
        struct timespec ms = { 0, 1000000 };

        nanosleep(&ms, NULL);
    }
    if (rc != 0) {
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

void nfabric_shared_abandon(NFabricShared *sh, int fd)
{
    NFabricMapping *m = sh ? nfabric_mapping(sh) : NULL;
    bool lost;

    if (!m) {
        return;                 /* a private state */
    }
    if (m->mem_fd >= 0) {
        close(m->mem_fd);
    }
    lost = m->lost;
    nfabric_mapping_del(m);
    if (!lost) {
        munmap(sh, sizeof(*sh));
    }
    close(fd);                  /* its live byte falls with the description */
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

