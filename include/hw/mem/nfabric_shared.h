/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * NEURON-Fabric shared device state: what every head of one device sees.
 *
 * A device that several hosts share (docs/multihost.md) keeps its window
 * table, round state, contribution counts and every head's statistics in
 * one NFabricShared, mapped from a state file by each head's process (a
 * QEMU process, or a host program using the controller directly).  A
 * device that is not shared keeps the same structure in private memory,
 * with one head and no locking.
 *
 * Locking (only for a state file, .pshared = 1):
 *   job[j].m     job j's configuration: its windows' registers, enables,
 *                CLEARs, round commands (every head's register writes;
 *                without an assignment every head is job 0's)
 *   cfg_lock     the device as a whole: head attach/detach, dead heads,
 *                the fabric manager's writes
 *   stripe[i][s] window i's counters of the stripe s of its offsets (an
 *                access takes the stripes it touches; a clear, enable,
 *                disable or round command takes all of window i's)
 * taken in that order (the fabric manager takes every job's lock, in job
 * order, then cfg_lock).  A head of one job never takes another job's
 * lock, so a head of another job that is stopped or busy holds up nothing
 * of its configuration.  The first two are process-shared robust mutexes;
 * the stripes, taken on every access to a window, are a lock word each
 * (the holder's token, see NFABRIC_STRIPE_*: a compare-and-swap to take,
 * a store to release), whose dead holder is found by its live byte
 * (below).  Each job's windows are also published with a
 * sequence count of the job's (gen[j], odd while they change) so that the
 * memory path can look a DPA up without a lock; a head reads only its own
 * job's windows.  A process that dies holding a lock leaves it to the next
 * locker, which repairs what the dead holder may have left half-done and
 * flags the window's round INCOMPLETE.  Every wait for a lock is bounded
 * (NFABRIC_SHARED_LOCK_MS).
 *
 * Liveness belongs to a head's process, not to the thread that attached
 * it: each attached head holds an OFD write lock (fcntl F_OFD_SETLK) on
 * one byte of the state file, NFABRIC_SHARED_LIVE_BYTE(h), through the
 * file descriptor it keeps open; the kernel drops it when the process
 * ends (or detaches), whatever thread took it.  Any other head recognises
 * a dead one by taking that byte (reaping).
 *
 * The state file is untrusted input: other heads, or anything that can
 * write the file, may corrupt or truncate it.  A head checks the state's
 * identity whenever it takes the configuration lock, reads the window
 * table into a private, validated copy before it uses any of it (the
 * memory path works only from that copy), bounds every wait and retry,
 * checks the file's size, and survives a truncation (SIGBUS) of the
 * mapping (nfabric_shared_check).  A head that finds the state unusable
 * reports it and refuses the device's accesses (nfabric_ctrl.c,
 * nfabric_datapath.c).
 *
 * Pure C11 + POSIX (pthread, mmap, flock, fcntl, sigaction) and Linux's
 * futex (the map protocol's notifications): no QEMU
 * headers.
 */
#ifndef HW_MEM_NFABRIC_SHARED_H
#define HW_MEM_NFABRIC_SHARED_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "hw/mem/nfabric_engine.h"
#include "hw/mem/nfabric_regs.h"

#define NFABRIC_SHARED_MAGIC    0x48534e46u     /* "NFSH" */
/* Bump when NFabricShared changes: old state files are then refused. */
#define NFABRIC_SHARED_LAYOUT   14

/*
 * Window locks are striped over the window's offsets: a window of size
 * bytes is cut into NFABRIC_WIN_STRIPES runs of 2^nfabric_stripe_shift(size)
 * bytes (256 at least: 2 or 4 KiB of counters), stripe s guarding the
 * offsets o with o >> shift == s, so heads writing different parts of one
 * window take different locks, and a head going through a window stays on
 * one stripe for a while (its bias, below, pays).  A stripe is a whole
 * number of the datapath's 64-byte lines.
 */
#define NFABRIC_WIN_STRIPES     64
#define NFABRIC_STRIPE_SHIFT    8

static inline unsigned nfabric_stripe_shift(uint64_t size)
{
    unsigned bits = size > 1 ? 64 - (unsigned)__builtin_clzll(size - 1) : 0;

    return bits > NFABRIC_STRIPE_SHIFT + 6 ? bits - 6 : NFABRIC_STRIPE_SHIFT;
}
/*
 * A stripe's lock word: 0 when free, else its holder's token: bits 0-7
 * the head's index + 1, bits 8-30 the head's attach count (a later process
 * of the same head is another holder), bit 31 0.  Any other value is a
 * corrupted lock.
 */
#define NFABRIC_STRIPE_OWNER    0xffu
#define NFABRIC_STRIPE_EPOCH(n) (((uint32_t)(n) & 0x7fffffu) << 8)
#define NFABRIC_STRIPE_RESERVED 0x80000000u
/*
 * A stripe's bias (docs/multihost.md, "Biased stripes"): 0, or the token
 * of the head that takes the stripe without a locked instruction (bits
 * 0-31) and the number of its one thread that may (bits 32-63, not 0).
 * That thread raises its busy byte for the stripe (NFabricSharedHead) and
 * looks at the bias again; a head that wants the stripe takes its word,
 * sets the bias to 0, has every thread of the biased process execute a
 * memory barrier (membarrier(2)) and waits for the busy byte to fall.
 * A head is given a stripe's bias once it took the word .need times in a
 * row (NFABRIC_BIAS_MIN..NFABRIC_BIAS_MAX): a bias taken back within
 * NFABRIC_BIAS_KEEP_NS of its grant doubles .need, one kept longer halves
 * it, so that a stripe heads take in turns stays on its word.  A thread
 * keeps its NFABRIC_BIAS_KEPT latest biases: given another, it gives the
 * oldest back itself (under its word, no barrier), so that a head that
 * moved on leaves no bias behind for the next head to take back.
 */
#define NFABRIC_BIAS_MIN        64u
#define NFABRIC_BIAS_MAX        65536u
#define NFABRIC_BIAS_KEEP_NS    1000000ll
#define NFABRIC_BIAS_KEPT       2u

/*
 * The byte of the state file whose OFD lock says head h is alive (beyond
 * the end of the file: a lock there changes nothing in it).
 */
#define NFABRIC_SHARED_LIVE_BASE    (1ull << 32)
#define NFABRIC_SHARED_LIVE_BYTE(h) (NFABRIC_SHARED_LIVE_BASE + (h))

/*
 * The longest a head waits for a lock another head holds before it gives
 * up on that operation (ms).  A head waits holding its QEMU's big lock, so
 * this is also how long its QMP may go unanswered (docs/multihost.md,
 * "Waits").  The fuzzers build with a shorter one.
 */
#ifndef NFABRIC_SHARED_LOCK_MS
#define NFABRIC_SHARED_LOCK_MS      500
#endif

/*
 * Once a wait for a lock ran out, the same head's later waits for that
 * lock last a tenth of the bound until it takes the lock again: a holder that
 * stays stopped costs a head's QMP one full bound, not one per access.
 */
#ifndef NFABRIC_SHARED_STUCK_MS
#define NFABRIC_SHARED_STUCK_MS     (NFABRIC_SHARED_LOCK_MS / 10)
#endif

/*
 * The longest a head enabling a window waits for the other heads of its job
 * that map device memory directly to trap the window's ranges (ms; the map
 * protocol, docs/multihost.md "Direct maps").  It waits holding no lock
 * (QEMU's big lock neither), so a stopped head costs only this enable.
 */
#ifndef NFABRIC_SHARED_MAP_MS
#define NFABRIC_SHARED_MAP_MS       1000
#endif

/* Statistics kept per path (register order). */
enum {
    NFABRIC_STAT_READS,
    NFABRIC_STAT_WRITES,
    NFABRIC_STAT_READ_BYTES,
    NFABRIC_STAT_WRITE_BYTES,
    NFABRIC_NUM_STATS
};

/* One entry of the path-select table, as a head programmed it. */
typedef struct NFabricWindow {
    uint64_t dpa_base;
    uint64_t dpa_size;
    uint64_t counters;
    uint32_t ctrl;
    uint32_t threshold;
    uint32_t error;
    uint32_t reserved_codes;
    uint64_t contrib_writes;    /* all heads, since the last clear */
    uint64_t contrib_bytes;
} NFabricWindow;

/* A window's current round (docs/registers.md, "Rounds"). */
typedef struct NFabricRound {
    uint32_t seq;               /* round number: +1 on enable and clear */
    uint32_t done;              /* bit h: head h completed this round */
    uint32_t contrib;           /* bit h: head h wrote in this round */
    uint32_t incomplete;        /* a contribution may be partial */
} NFabricRound;

/* Head states. */
enum {
    NFABRIC_HEAD_FREE = 0,      /* not attached since the state was made */
    NFABRIC_HEAD_ATTACHED,      /* its process holds its live byte */
    NFABRIC_HEAD_GONE,          /* detached or died: not expected in rounds */
};

typedef struct NFabricSharedHead {
    uint32_t state;             /* NFABRIC_HEAD_* */
    uint32_t pid;               /* of the attached (or last) process */
    uint64_t attaches;          /* times a process attached this head */
    /*
     * This head's statistics and contribution counts, written on every
     * access: not on the line of .state, which other heads read while
     * they wait for a round.
     */
    uint64_t stats[NFABRIC_NUM_PATHS][NFABRIC_NUM_STATS] __attribute__((aligned(64)));
    uint64_t contrib_writes[NFABRIC_NUM_WINDOWS];
    uint64_t contrib_bytes[NFABRIC_NUM_WINDOWS];
    uint32_t reserved_codes[NFABRIC_NUM_WINDOWS];
    /* 1 while this head holds the stripe through its bias (written by it). */
    uint8_t stripe_busy[NFABRIC_NUM_WINDOWS][NFABRIC_WIN_STRIPES]
        __attribute__((aligned(64)));
} __attribute__((aligned(64))) NFabricSharedHead;

/*
 * Jobs, as a fabric manager sets them (nfabric_shared_fm_write; the tool
 * nfabric-state fm; docs/multihost.md "Jobs and owners").  Without an
 * assignment (assigned = 0) the device is one job of every head over all
 * of its memory and every window.  With one, head h belongs to job
 * head_job[h], uses only the window slots job_windows[its job], and
 * reaches only the memory ranges of its job that are the job's (head =
 * NFABRIC_FM_JOB_WIDE) or its own (head = h).
 */
#define NFABRIC_FM_MAX_JOBS     8
#define NFABRIC_FM_MAX_RANGES   32
#define NFABRIC_FM_JOB_WIDE     0xffu

typedef struct NFabricFmRange {
    uint64_t base;              /* DPA, a multiple of NFABRIC_ALIGN */
    uint64_t size;              /* bytes, a multiple of NFABRIC_ALIGN */
    uint32_t job;
    uint32_t head;              /* the owner, or NFABRIC_FM_JOB_WIDE */
} NFabricFmRange;

typedef struct NFabricFm {
    uint32_t gen;               /* sequence count: odd while it is written */
    uint32_t assigned;          /* 0: the default (one job of all) */
    uint8_t head_job[NFABRIC_MAX_HEADS];
    uint32_t job_windows[NFABRIC_FM_MAX_JOBS];  /* bit i: window i */
    uint32_t nranges;
    uint32_t pad;
    NFabricFmRange range[NFABRIC_FM_MAX_RANGES];
} NFabricFm;

typedef struct NFabricShared {
    /* Identity, written when the state is made. */
    uint32_t magic;
    uint32_t layout;
    uint32_t struct_size;
    uint32_t heads;             /* number of heads, 1..NFABRIC_MAX_HEADS */
    uint64_t mem_size;          /* device memory bytes */
    uint64_t mem_dev, mem_ino;  /* the device memory file (0: private) */
    uint32_t pshared;           /* 1: in a state file, locks in use */
    uint32_t pad0;
    uint64_t state_id;          /* random, made with the state (identity) */

    /*
     * Cache lines: what every access reads (the table), what only some
     * accesses write (figures), each window's lock, each head's counts
     * are kept apart, so that a write of one never evicts another head's
     * copy of the others (measured: bench cluster).
     */
    pthread_mutex_t cfg_lock __attribute__((aligned(64)));
    uint32_t lost_mask;         /* bit h: head h died (reaped) */
    uint32_t pad1;
    /* Each job's configuration lock, and the window its holder changes. */
    struct {
        pthread_mutex_t m;
        int32_t busy;           /* window being changed, or -1 */
    } __attribute__((aligned(64))) job[NFABRIC_FM_MAX_JOBS];

    uint64_t reaped __attribute__((aligned(64)));  /* dead heads found */
    uint64_t lock_repairs;      /* locks taken over from a dead holder */
    uint64_t lock_waits;        /* contended lock acquisitions */
    uint64_t lock_sleeps;       /* of which slept in the kernel */
    uint64_t lock_timeouts;     /* of which gave up (NFABRIC_SHARED_LOCK_MS) */
    uint64_t bias_grants;       /* stripes biased to a head's thread */
    uint64_t bias_revokes;      /* biases taken back (a barrier each time) */
    uint64_t bias_drops;        /* biases given back by their holder */

    /*
     * Read by every access; written only when a window is (dis)enabled:
     * gen[j], job j's windows' sequence count (odd: busy).
     */
    uint32_t gen[NFABRIC_FM_MAX_JOBS] __attribute__((aligned(64)));
    uint32_t enabled_mask;      /* bit i: window i enabled */
    NFabricWindow win[NFABRIC_NUM_WINDOWS];
    NFabricAggCfg cfg[NFABRIC_NUM_WINDOWS];     /* valid while enabled */
    /*
     * Windows being enabled (the map protocol): bit i of pending_mask
     * while head pend_head[i] waits for the others to trap pend[i]'s
     * ranges (base, size, counters, ctrl, threshold as it will be
     * published).  Under the same sequence count as the table (its job's).
     */
    uint32_t pending_mask;
    uint8_t pend_head[NFABRIC_NUM_WINDOWS];
    NFabricWindow pend[NFABRIC_NUM_WINDOWS];

    /*
     * The map protocol (docs/multihost.md, "Direct maps").  map_gen moves
     * whenever the ranges a head must trap change (a window pending,
     * enabled, disabled or given up); a head that maps device memory
     * directly sets its bit in map_direct and, once its map traps every
     * range of the table as of map_gen = g, stores g in map_ack[h].
     */
    uint32_t map_gen __attribute__((aligned(64)));
    uint32_t map_direct;        /* bit h: head h maps memory directly */
    uint32_t map_ack[NFABRIC_MAX_HEADS];
    /*
     * Interrupts (register version 1.8): moves whenever a round may have
     * changed state (a completion, a clear, INCOMPLETE, a dead head
     * found), so that every head raises its own (a futex, woken).
     */
    uint32_t event_gen;

    NFabricRound round[NFABRIC_NUM_WINDOWS] __attribute__((aligned(64)));
    /* A line each: heads at different stripes share no line. */
    struct {
        uint32_t word;
        uint32_t streak;        /* takings of the word in a row by .last */
        uint64_t bias;          /* see NFABRIC_BIAS_MIN; read by every access */
        uint64_t last;          /* token | thread << 32 of the last taker */
        uint64_t granted_ns;    /* when .bias was given (CLOCK_MONOTONIC) */
        uint32_t need;          /* takings in a row that earn the bias */
        /*
         * The bias being taken back, while its taker waits for the holder
         * to leave; a taker that dies there leaves it, and the next holder
         * of the word finishes the taking back before it goes in.
         */
        uint64_t revoking;
    } __attribute__((aligned(64))) stripe[NFABRIC_NUM_WINDOWS][NFABRIC_WIN_STRIPES];
    NFabricSharedHead head[NFABRIC_MAX_HEADS];

    /* Written by the fabric manager only (rarely): read by every access. */
    NFabricFm fm __attribute__((aligned(64)));
} NFabricShared;

/* Private state of one head, not shared (heads = 1, no locking). */
void nfabric_shared_init_local(NFabricShared *sh, uint64_t mem_size);

/*
 * What a head brings to attach: the state file, its index, the number of
 * heads it expects, and the device memory it maps (size and file).
 */
typedef struct NFabricAttach {
    const char *path;
    unsigned head;
    unsigned heads;
    uint64_t mem_size;
    uint64_t mem_dev, mem_ino;
    /*
     * The device memory file, opened to claim it for this state (NULL: not
     * claimed).  Each attached head holds an OFD read lock on the byte
     * NFABRIC_SHARED_MEM_BYTE(state_id) of it (beyond its end: the memory
     * is untouched), dropped when it detaches or dies; an attach whose
     * state is another (a second state file, or one made anew) while such
     * a lock of another state is held is refused, naming both.
     */
    const char *mem_path;
} NFabricAttach;

#define NFABRIC_SHARED_MEM_BASE     (1ull << 62)
#define NFABRIC_SHARED_MEM_BITS     40
#define NFABRIC_SHARED_MEM_BYTE(id) \
    (NFABRIC_SHARED_MEM_BASE + ((id) >> (64 - NFABRIC_SHARED_MEM_BITS)))

/* How an attach went (for messages and tests). */
typedef enum NFabricAttachHow {
    NFABRIC_ATTACH_CREATED,     /* new state file */
    NFABRIC_ATTACH_REINIT,      /* no head was alive: state made anew */
    NFABRIC_ATTACH_JOINED,      /* joined live heads */
    NFABRIC_ATTACH_REJOINED,    /* joined; this head's last process died */
} NFabricAttachHow;

/*
 * Attach head a->head to the state file a->path: create and initialise it
 * if it is new or no head is alive, else join after checking the geometry.
 * On success returns 0 and sets *out (the mapping) and *fd (keep it open);
 * on failure returns -1 and writes a message naming the property and the
 * conflict to err.  Attaches are serialised with flock() on the file.
 */
int nfabric_shared_attach(const NFabricAttach *a, NFabricShared **out,
                          int *fd, NFabricAttachHow *how,
                          char *err, size_t errlen);
/* Detach head h (as if it had died, but cleanly) and unmap. */
void nfabric_shared_detach(NFabricShared *sh, int fd, unsigned head);
/*
 * Leave sh as this head's process would if it were killed now: unmap and
 * close, nothing marked, every lock word, bias, busy byte and round bit
 * left as it is.  For the tests and the fuzzers, which kill heads at any
 * point without a process of their own per head.
 */
void nfabric_shared_abandon(NFabricShared *sh, int fd);

/*
 * Is the attached state sh still usable?  Checks that its mapping was not
 * lost to a truncation (SIGBUS, see below), the file's size, and the
 * identity written when the state was made (magic, layout, size, heads,
 * memory size, state id) against what this process attached to.  Returns
 * 0, or -1 with a message in err.  For a private state (not shared),
 * always 0.
 *
 * Truncation: a mapping of a file that shrinks raises SIGBUS on access.
 * The first shared attach installs a SIGBUS handler (chained to the one
 * before it, which still gets every other SIGBUS) that replaces a state
 * mapping the fault hit with zero-filled private memory of the same size
 * and counts the event (nfabric_shared_faults); the faulting access then
 * reads zeros, and the head's next check reports the state lost.  Such a
 * mapping stays until the process ends (detach does not unmap it).
 */
int nfabric_shared_check(NFabricShared *sh, char *err, size_t errlen);

/*
 * Find heads whose process died (other than self), mark them gone, and
 * return the mask of attached heads.  Cheap when nobody died.
 */
uint32_t nfabric_shared_reap(NFabricShared *sh, unsigned self);

/* Heads a round waits for: every head not gone. */
uint32_t nfabric_shared_expected(const NFabricShared *sh);

/* Job j's windows' sequence count (acquire / release for writers). */
static inline uint32_t nfabric_shared_gen(const NFabricShared *sh, unsigned j)
{
    return __atomic_load_n(&sh->gen[j % NFABRIC_FM_MAX_JOBS], __ATOMIC_ACQUIRE);
}

static inline void nfabric_shared_gen_bump(NFabricShared *sh, unsigned j)
{
    __atomic_fetch_add(&sh->gen[j % NFABRIC_FM_MAX_JOBS], 1, __ATOMIC_ACQ_REL);
}

#endif /* HW_MEM_NFABRIC_SHARED_H */
