/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * NEURON-Fabric shared device state: what its four files share and no
 * one else sees.  From the bottom up, each calling only the ones below:
 * nfabric_mappings.c (this process's mappings, the SIGBUS handler, live
 * bytes, stuck marks, map_gen's futex), nfabric_locks.c (robust mutexes,
 * window stripes and their biases), nfabric_fm.c (jobs: the fabric
 * manager's write, the configuration locks and their repairs) and
 * nfabric_heads.c (heads: attach, detach, reap, the state's checks).
 * Pure C11: no QEMU header.
 */
#ifndef HW_MEM_NFABRIC_SHARED_INT_H
#define HW_MEM_NFABRIC_SHARED_INT_H

#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "hw/mem/nfabric_fm.h"
#include "hw/mem/nfabric_locks.h"
#include "hw/mem/nfabric_mappings.h"
#include "hw/mem/nfabric_shared.h"

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
    /* Of a window's bit in .stuck: the stripes whose last wait ran out. */
    uint64_t stuck_stripes[NFABRIC_NUM_WINDOWS];
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

/* nfabric_mappings.c: this process's mappings, under nfabric_maps_lock. */
extern NFabricMapping nfabric_maps[NFABRIC_MAX_MAPPINGS];
extern pthread_mutex_t nfabric_maps_lock;
NFabricMapping *nfabric_mapping(const NFabricShared *sh);
/* A new mapping of sh through fd (NULL: the table is full), and its end. */
NFabricMapping *nfabric_mapping_add(NFabricShared *sh, int fd,
                                    const NFabricAttach *a, uint64_t state_id);
void nfabric_mapping_del(NFabricMapping *m);
void nfabric_seterr(char *err, size_t errlen, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* Head h's live byte through fd. */
int nfabric_live_lock(int fd, unsigned h, short type);
bool nfabric_live_held(int fd, unsigned h);
bool nfabric_live_any(int fd, unsigned n);
/* Locks whose last wait ran out, per mapping (see nfabric_robust_lock). */
extern unsigned nfabric_stuck_maps;
void nfabric_stuck_set(NFabricMapping *map, uint32_t bit);
void nfabric_stuck_clear(NFabricMapping *map, uint32_t bit);

/* nfabric_locks.c */
int nfabric_robust_init(pthread_mutex_t *m);
/*
 * Lock m of sh, bounded; a holder that died hands it over after
 * repair(sh, arg) undid what it may have left half-done.  bit names the
 * lock among this head's stuck ones.
 */
bool nfabric_robust_lock(NFabricShared *sh, pthread_mutex_t *m,
                         void (*repair)(NFabricShared *, unsigned),
                         unsigned arg, uint32_t bit);
int64_t nfabric_now_ns(void);
void nfabric_stripe_repaired(NFabricShared *sh, unsigned i);
void nfabric_stripes_release_head(NFabricShared *sh, unsigned h);

#endif
