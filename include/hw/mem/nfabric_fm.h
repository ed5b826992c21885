/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * NEURON-Fabric shared device state: jobs as a fabric manager sets them
 * (hw/mem/nfabric/nfabric_fm.c; docs/multihost.md, "Jobs and owners"):
 * the check of an assignment and its write into a live state file, and
 * the configuration locks (the device's and each job's).  The
 * assignment's layout (NFabricFm) is nfabric_shared.h's; a head's view of
 * it is the controller's (nfabric_jobs.c).  Pure C11.
 */
#ifndef HW_MEM_NFABRIC_FM_H
#define HW_MEM_NFABRIC_FM_H

#include <stdbool.h>
#include <stddef.h>

#include "hw/mem/nfabric_shared.h"

/*
 * Is fm a valid assignment for a device of heads heads and mem_size bytes?
 * NULL if so, else what is wrong (a static string naming the field): a
 * job index past NFABRIC_FM_MAX_JOBS, a window slot given to two jobs, a
 * range empty, unaligned, past memory, overlapping another, of a job its
 * owner is not in.  Used by the fabric manager before it writes and by
 * every head on what it reads (the state file is untrusted).
 */
const char *nfabric_fm_check(const NFabricFm *fm, unsigned heads,
                             uint64_t mem_size, unsigned *bad_range);

/*
 * The fabric manager: write fm (checked first) into the state file path
 * of live heads, under its configuration lock, or (fm = NULL) go back to
 * the default.  Returns 0, or -1 with a message in err.
 */
int nfabric_shared_fm_write(const char *path, const NFabricFm *fm,
                            char *err, size_t errlen);

/*
 * The device's configuration lock (cfg_lock: attach, detach, a dead
 * head's marking, the fabric manager's write) and job j's (its heads'
 * register writes).  Robust, process-shared, bounded: false if the lock
 * is unusable (not a lock of the kind the state was made with:
 * corrupted), or another head held it for over NFABRIC_SHARED_LOCK_MS;
 * the caller then gives up.  A holder that died is repaired first (its
 * half-written assignment revoked, its job's half-changed window
 * disabled).
 */
bool nfabric_shared_lock_cfg(NFabricShared *sh);
void nfabric_shared_unlock_cfg(NFabricShared *sh);
bool nfabric_shared_lock_job(NFabricShared *sh, unsigned job);
void nfabric_shared_unlock_job(NFabricShared *sh, unsigned job);

#endif
