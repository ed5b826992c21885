/* SPDX-License-Identifier: GPL-2.0 WITH Linux-syscall-note */
/*
 * NEURON-Fabric: the checks the driver (nfabric.ko) and libnfabric both
 * make before they touch the device, in one place so that they cannot
 * drift apart.  Pure, allocation-free inline functions over plain values:
 * what only the operating system knows (is a range of host physical
 * memory System RAM?) is asked through a callback, which the kernel
 * answers with region_intersects() and libnfabric from /proc/iomem.
 *
 * Errors are negative errno values, the same in both:
 *   -EINVAL  a private (copy-on-write) mapping of the register page, or one
 *            that is not exactly the page at offset 0
 *   -EPERM   an executable mapping of the register page
 *   -EXDEV   a low-bit window on a device whose memory the host
 *            interleaves with other devices (libnfabric: NFLIB_EINTERLEAVE)
 *   -EBUSY   a low-bit window whose data or counter area is memory the
 *            kernel uses as System RAM (libnfabric: NFLIB_EBUSY)
 * docs/driver.md, docs/guest.md.
 */
#ifndef _NFABRIC_CHECKS_H
#define _NFABRIC_CHECKS_H

#ifdef __KERNEL__
#include <linux/errno.h>
#include <linux/types.h>
#else
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#endif

#include "hw/mem/nfabric_regs.h"

/*
 * mmap() of the register block: shared (a private mapping would be a
 * copy-on-write snapshot of live registers), never executable, exactly
 * one page at offset 0.
 */
static inline int nfabric_check_regs_mmap(bool shared, bool exec,
					  uint64_t offset, uint64_t len,
					  uint64_t page)
{
	if (!shared)
		return -EINVAL;
	if (exec)
		return -EPERM;
	if (offset || len != page)
		return -EINVAL;
	return 0;
}

/*
 * A range of device memory the host maps: the DPA range [dpa, dpa + size)
 * appears at host physical address hpa, interleaved over @ways devices
 * (1: this device alone, a linear map).
 */
struct nfabric_mem_span {
	uint64_t dpa;
	uint64_t size;
	uint64_t hpa;
	uint32_t ways;
};

/* Why a window was refused (filled in on -EBUSY and -EXDEV). */
struct nfabric_mem_why {
	unsigned int span;	/* the span that refused it */
	unsigned int area;	/* -EBUSY: 0 data, 1 counter area */
	uint64_t dpa;		/* -EBUSY: first DPA of the area in the span */
	uint64_t hpa;		/* -EBUSY: its host physical address */
	uint64_t ram_start;	/* -EBUSY: the System RAM range it meets */
	uint64_t ram_end;
};

/*
 * Is [hpa, hpa + len) (partly) System RAM?  If so, true and the range met
 * in *start, *end (inclusive).
 */
typedef bool (*nfabric_sysram_fn)(void *ctx, uint64_t hpa, uint64_t len,
				  uint64_t *start, uint64_t *end);

/*
 * The part of [a, a + n) inside span @s, as a host physical range; false
 * if they do not meet.  The caller checked that a + n does not wrap.
 */
static inline bool nfabric_span_clip(const struct nfabric_mem_span *s,
				     uint64_t a, uint64_t n, uint64_t *dpa,
				     uint64_t *hpa, uint64_t *len)
{
	uint64_t lo, hi;

	if (!n || !s->size || a + n <= s->dpa || a >= s->dpa + s->size)
		return false;
	lo = a > s->dpa ? a : s->dpa;
	hi = a + n < s->dpa + s->size ? a + n : s->dpa + s->size;
	*dpa = lo;
	*hpa = s->hpa + (lo - s->dpa);
	*len = hi - lo;
	return true;
}

/*
 * May a window of @path (NFABRIC_PATH_*) over [base, base + size) with its
 * counters at @counters be enabled, given the spans of device memory the
 * host maps?  FP32 windows are identity and harmless anywhere.  A low-bit
 * window is refused on a device whose memory is interleaved (it would
 * cover only this device's stripes, -EXDEV) and over System RAM (the
 * device would replace the kernel's data, -EBUSY).  Ranges that wrap are
 * left to the range checks (both callers refuse them first).
 */
static inline int nfabric_check_window_memory(unsigned int path,
					      unsigned int width,
					      uint64_t base, uint64_t size,
					      uint64_t counters,
					      const struct nfabric_mem_span *spans,
					      unsigned int nspans,
					      nfabric_sysram_fn is_sysram,
					      void *ctx,
					      struct nfabric_mem_why *why)
{
	uint64_t area[2][2] = {
		{ base, size },
		{ counters, nfabric_counter_bytes(path, width, size) },
	};
	unsigned int i, k;

	if (path == NFABRIC_PATH_FP32)
		return 0;
	for (i = 0; i < nspans; i++) {
		if (spans[i].ways > 1) {
			why->span = i;
			return -EXDEV;
		}
	}
	for (i = 0; i < nspans; i++) {
		for (k = 0; k < 2; k++) {
			uint64_t dpa, hpa, len;

			if (area[k][0] + area[k][1] < area[k][0] ||
			    !nfabric_span_clip(&spans[i], area[k][0], area[k][1],
					       &dpa, &hpa, &len))
				continue;
			if (is_sysram(ctx, hpa, len, &why->ram_start,
				      &why->ram_end)) {
				why->span = i;
				why->area = k;
				why->dpa = dpa;
				why->hpa = hpa;
				return -EBUSY;
			}
		}
	}
	return 0;
}

#endif /* _NFABRIC_CHECKS_H */
