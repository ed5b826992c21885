/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * libnfabric internals: reaching the register block through the driver
 * nfabric.ko (guest/kernel/) when it is attached to the device.
 */
#ifndef NFABRIC_GUEST_DRV_H
#define NFABRIC_GUEST_DRV_H

#include <stddef.h>

#include "nfabric_priv.h"

/*
 * Map the register block of d->pci_name through /dev/nfabricN (mmap of
 * its one page) and set d->bar, d->bar_size, d->bar_fd, d->regs and
 * d->access.  Returns 0 when mapped, 1 when the driver is not attached to
 * the device (the caller falls back to sysfs resource0), or a negative
 * library error (with d->errmsg set).  path receives the file used.
 *
 * The environment variable NFABRIC_ACCESS chooses: "driver" (the driver
 * is required), "resource0" (never use the driver), "auto" or unset (the
 * driver if attached, else resource0).
 */
int nfabric_drv_map(nfabric_dev *d, char *path, size_t len);

#endif /* NFABRIC_GUEST_DRV_H */
