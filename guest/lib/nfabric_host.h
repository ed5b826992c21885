/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * libnfabric on the host, without a VM: a head of a shared NEURON-Fabric
 * device served by the controller model itself (hw/mem/nfabric/, pure C)
 * over the device's state file and memory file, as a QEMU process serves
 * it.  Every libnfabric call works on such a device; device memory is
 * reached with nfabric_mem_write/read.  docs/pytorch.md.
 */
#ifndef NFABRIC_GUEST_HOST_H
#define NFABRIC_GUEST_HOST_H

#include "libnfabric.h"

/*
 * Attach head `head` of a `heads`-head device whose state file is
 * state_path and whose memory (mem_size bytes, a multiple of 64 KiB) is
 * the file mem_path (created if missing).  Other heads may be QEMU
 * processes with the same files, or other host processes.
 */
int nfabric_open_host(nfabric_dev *d, const char *state_path,
                      const char *mem_path, uint64_t mem_size,
                      unsigned head, unsigned heads);

#endif /* NFABRIC_GUEST_HOST_H */
