/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Transitional name of nfabric_record.c (the access-stream record format;
 * "trace" is QEMU's trace events, trace-events).  qemu-patches/0002 still
 * links nfabric-test with this file name; delete this file when that patch
 * names nfabric_record.c.  Nothing else builds it.
 */
#include "nfabric_record.c"
