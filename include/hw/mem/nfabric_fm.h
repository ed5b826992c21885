/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * NEURON-Fabric shared device state: jobs as a fabric manager sets them
 * (hw/mem/nfabric/nfabric_fm.c; docs/multihost.md, "Jobs and owners"):
 * the check of an assignment and its write into a live state file.  The
 * assignment's layout (NFabricFm) is nfabric_shared.h's; a head's view of
 * it is the controller's (nfabric_jobs.c).  Pure C11.
 */
#ifndef HW_MEM_NFABRIC_FM_H
#define HW_MEM_NFABRIC_FM_H

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

#endif
