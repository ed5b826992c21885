/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * NEURON-Fabric shared device state: its locks (hw/mem/nfabric/
 * nfabric_locks.c; docs/multihost.md, "Locks and their cost"): the 64
 * stripes of each window, taken by a word or through a bias.  The
 * device's and each job's configuration locks (robust, process-shared
 * mutexes) are nfabric_fm.h's, with their repairs.  The state's layout
 * is nfabric_shared.h's.  Pure C11.
 */
#ifndef HW_MEM_NFABRIC_LOCKS_H
#define HW_MEM_NFABRIC_LOCKS_H

#include <stdbool.h>
#include <stdint.h>

#include "hw/mem/nfabric_shared.h"

/*
 * Locks of a state file (a private state has none: its callers do not
 * lock; a state's own pshared field is never trusted for that).  False if
 * a stripe word or bias is one no head can have written (corrupted), or
 * another head held a stripe for over NFABRIC_SHARED_LOCK_MS; the caller
 * then gives up.
 */
/* Every stripe of window i (a clear, an enable, a round command). */
bool nfabric_shared_lock_win(NFabricShared *sh, unsigned i);
void nfabric_shared_unlock_win(NFabricShared *sh, unsigned i);

/*
 * The memory path: the stripes of window i (of size bytes, as the caller
 * validated it) that offsets [off, off + len) touch, taken in stripe
 * order as the head whose token is token (nfabric_shared_token); *held
 * says which and how, for the unlock.  A span of one stripe biased to
 * this thread is taken with plain stores.  False, with
 * nothing held, as for the locks above (errno ETIMEDOUT or EINVAL), or
 * EAGAIN when another thread's bias had to be taken back and this process
 * cannot issue membarrier(2) (the state is fine; the holder keeps it).  A
 * stripe held by a head that died (its live byte free), or by an earlier
 * process of this head, is taken over and window i's round flagged
 * INCOMPLETE.
 */
typedef struct NFabricHeld {
    uint64_t word;              /* stripes taken by their word */
    uint64_t bias;              /* stripes taken by this thread's bias */
    unsigned head;              /* whose busy bytes .bias raised */
} NFabricHeld;

bool nfabric_shared_lock_span(NFabricShared *sh, uint32_t token, unsigned i,
                              uint64_t size, uint64_t off, uint64_t len,
                              NFabricHeld *held);
void nfabric_shared_unlock_span(NFabricShared *sh, unsigned i,
                                const NFabricHeld *held);

/* This process's token as its head of sh (0: a private state). */
uint32_t nfabric_shared_token(const NFabricShared *sh);

#endif
