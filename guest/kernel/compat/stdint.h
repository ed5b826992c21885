/* SPDX-License-Identifier: GPL-2.0 */
/*
 * include/hw/mem/nfabric_regs.h is shared with user space and includes
 * <stdint.h>; in the kernel, <linux/types.h> has those types.
 */
#ifndef NFABRIC_COMPAT_STDINT_H
#define NFABRIC_COMPAT_STDINT_H
#include <linux/types.h>
#endif
