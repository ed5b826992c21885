/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * NEURON-Fabric shared device state: this process's mappings of state
 * files (hw/mem/nfabric/nfabric_mappings.c): the SIGBUS faults of a state
 * file truncated under them and the per-thread set-up that lets a thread
 * survive one, the heads whose live byte is held, and the futex on
 * map_gen by which the map protocol wakes its waiters in every process.
 * The state's layout is nfabric_shared.h's.  Pure C11.
 */
#ifndef HW_MEM_NFABRIC_MAPPINGS_H
#define HW_MEM_NFABRIC_MAPPINGS_H

#include <stdbool.h>
#include <stdint.h>

#include "hw/mem/nfabric_shared.h"

/*
 * The heads (a bit each) whose live byte of the state file behind fd a
 * process holds, as another description than fd's sees them (the reader
 * nfabric-state); a head it cannot tell about counts as live.
 */
uint32_t nfabric_live_heads(int fd);

/* SIGBUS faults of state mappings in this process (a cheap "look again"). */
unsigned nfabric_shared_faults(void);

/*
 * Call in a thread before it touches a state mapping.  A SIGBUS that a
 * thread raises while it blocks SIGBUS is not delivered to any handler:
 * the kernel kills the process.  QEMU's vCPU threads under TCG block every
 * signal, so the first call in each thread unblocks SIGBUS there (as QEMU
 * does itself in KVM's vCPU threads); later calls cost one thread-local
 * load.
 */
void nfabric_shared_thread_enter_slow(void);
extern __thread bool nfabric_shared_thread_ready;

static inline void nfabric_shared_thread_enter(void)
{
    if (__builtin_expect(!nfabric_shared_thread_ready, 0)) {
        nfabric_shared_thread_enter_slow();
    }
}

/*
 * The map protocol's notifications: wait (up to ms) until map_gen is no
 * longer seen, and wake every waiter after moving it.  A futex on the
 * state file's mapping, so across processes.
 */
void nfabric_shared_map_wait(NFabricShared *sh, uint32_t seen, unsigned ms);
uint32_t nfabric_shared_map_bump(NFabricShared *sh);  /* the new map_gen */
/*
 * Interrupts (1.8): event_gen moves when a round may have changed state;
 * wait (at most ms) until it is no longer seen, or tell the others it moved.
 */
uint32_t nfabric_shared_event_gen(const NFabricShared *sh);
void nfabric_shared_event_wait(NFabricShared *sh, uint32_t seen, unsigned ms);
void nfabric_shared_event_bump(NFabricShared *sh);

#endif
