/* SPDX-License-Identifier: GPL-2.0 WITH Linux-syscall-note */
/*
 * NEURON-Fabric controller driver (nfabric.ko): user-space interface.
 *
 * One character device per controller, /dev/nfabricN.  Every ioctl takes a
 * structure that starts with its own size (which must equal sizeof the
 * structure) and a flags word (unknown bits are refused).  Reserved fields
 * must be zero on input and are zero on output.  Errors: EINVAL for a bad
 * size, flag, index, path, width, tie rule, threshold or alignment; ERANGE
 * for a range outside the device memory; EBUSY for a window that is
 * enabled or a range that overlaps an enabled window, or a low-bit window
 * over System RAM; EXDEV for a low-bit window on interleaved memory;
 * EPERM without the capability an operation needs (state changes and
 * clears: CAP_SYS_ADMIN); ENODEV once the device is gone (unbound); ENOTTY
 * for an unknown command; the round calls have their own (below).
 * docs/driver.md describes each call and the privilege model.
 *
 * mmap() of offset 0, one page, shared, not executable, maps the register
 * block itself (needs CAP_SYS_RAWIO; MAP_PRIVATE: EINVAL, PROT_EXEC:
 * EPERM); it is revoked (SIGBUS on access) when the device goes.
 * nfabric_checks.h holds the checks shared with libnfabric.
 */
#ifndef _UAPI_NFABRIC_H
#define _UAPI_NFABRIC_H

#include <linux/ioctl.h>
#include <linux/types.h>

#define NFABRIC_IOC_MAGIC	0xC7	/* not in ioctl-number.rst (0xC0, 0xCA are) */

#define NFABRIC_DRV_NUM_PATHS	3

/* NFABRIC_IOC_INFO: identification (everything but size/flags is output). */
struct nfabric_ioc_info {
	__u32 size;
	__u32 flags;		/* must be 0 */
	__u32 version;		/* VERSION register: major << 16 | minor */
	__u32 caps;		/* CAPS register */
	__u32 num_windows;
	__u32 num_paths;
	__u64 mem_size;		/* bytes of device memory (DPA 0..mem_size-1) */
	__u64 regs_phys;	/* physical address of the register block */
	char memdev[16];	/* the cxl_memdev, e.g. "mem0" ("" if none) */
	char pci_dev[32];	/* e.g. "0000:0d:00.0" */
	__u64 reserved[4];
};

/*
 * NFABRIC_IOC_WIN_SET (in: index and configuration; out: error) and
 * NFABRIC_IOC_WIN_GET (in: index; out: everything else).
 */
struct nfabric_ioc_window {
	__u32 size;
	__u32 flags;		/* must be 0 */
	__u32 index;		/* window, 0 .. num_windows - 1 */
	__u32 path;		/* NFABRIC_PATH_*: 0 FP32, 1 G-Binary, 2 G-Ternary */
	__u32 width;		/* counter bits, 8 or 16 (0 for FP32) */
	__u32 tie;		/* G-Binary tie rule 0/1 (0 otherwise) */
	__u32 threshold;	/* G-Ternary gate (0 otherwise) */
	__u32 reserved0;
	__u64 base;		/* DPA of the data, 64-byte aligned */
	__u64 length;		/* data bytes, a non-zero multiple of 64 */
	__u64 counters;		/* DPA of the counter area (0 for FP32) */
	/* Output (must be 0 on input). */
	__u32 enabled;		/* WIN_GET: 1 while enabled */
	__u32 error;		/* the window's ERROR register (device code) */
	__u64 contrib_writes;	/* WIN_GET: writes since the last clear */
	__u64 contrib_bytes;	/* WIN_GET: bytes those writes carried */
	__u32 reserved_codes;	/* WIN_GET: reserved G-Ternary codes */
	__u32 reserved1;
	__u64 reserved[2];
};

/* NFABRIC_IOC_WIN_DISABLE and NFABRIC_IOC_WIN_CLEAR. */
struct nfabric_ioc_window_cmd {
	__u32 size;
	__u32 flags;		/* must be 0 */
	__u32 index;
	__u32 reserved;
};

struct nfabric_ioc_path_stats {
	__u64 reads;
	__u64 writes;
	__u64 read_bytes;
	__u64 write_bytes;
};

/* NFABRIC_IOC_STATS: statistics per path and the error registers. */
#define NFABRIC_STATS_F_CLEAR		(1u << 0)	/* zero statistics after reading */
#define NFABRIC_STATS_F_CLEAR_ERRORS	(1u << 1)	/* zero LAST_ERROR/ERROR_COUNT */
#define NFABRIC_STATS_F_VALID		0x3u
struct nfabric_ioc_stats {
	__u32 size;
	__u32 flags;
	struct nfabric_ioc_path_stats path[NFABRIC_DRV_NUM_PATHS];
	__u32 error_count;
	__u32 last_error;
	__u32 enabled_mask;
	__u32 reserved0;
	__u64 reserved[2];
};

/* NFABRIC_IOC_TIMING: the timing model's parameters and figures. */
#define NFABRIC_TIMING_F_CLEAR		(1u << 0)	/* restart the model after reading */
#define NFABRIC_TIMING_F_VALID		0x1u
struct nfabric_ioc_timing {
	__u32 size;
	__u32 flags;
	__u32 clock_mhz;
	__u32 depth;
	__u32 service_ns;
	__u32 link_mbps;
	__u32 exposed_ppm;
	__u32 reserved1[2];	/* 0 (register layout 1.1's queue maxima) */
	__u32 reserved0;
	__u64 total_ps;
	__u64 runtime_ps;
	__u64 queued_ps;
	__u64 link_busy_ps;
	__u64 path_time_ps[NFABRIC_DRV_NUM_PATHS];
	__u64 path_exposed_ps[NFABRIC_DRV_NUM_PATHS];
	__u64 path_accesses[NFABRIC_DRV_NUM_PATHS];
	__u64 reserved[2];
};

/*
 * NFABRIC_IOC_ROUND_GET (in: index), NFABRIC_IOC_ROUND_COMPLETE (in: index,
 * seq: this head's contribution to round seq is complete) and
 * NFABRIC_IOC_ROUND_WAIT (in: index, seq, timeout_ms: sleep until every
 * head completed round seq).  Register layout 1.1 and later
 * (EOPNOTSUPP before); the window must be enabled (ENOENT).  ESTALE: the
 * window is no longer at round seq; ETIMEDOUT, EINTR: the wait ended
 * first; EIO: this head found the shared state unusable
 * (HEAD_INFO.STATE_FAILED).  The outputs are filled in on success, ESTALE,
 * ETIMEDOUT and EIO.  With the device's interrupt (layout 1.8) the wait
 * sleeps until a message; without it, it looks every millisecond.
 */
#define NFABRIC_ROUND_MAX_TIMEOUT_MS	60000
struct nfabric_ioc_round {
	__u32 size;
	__u32 flags;		/* must be 0 */
	__u32 index;
	__u32 seq;		/* COMPLETE, WAIT: the round; GET: 0 in, out */
	__u32 timeout_ms;	/* WAIT: 0 .. NFABRIC_ROUND_MAX_TIMEOUT_MS; else 0 */
	/* Output (must be 0 on input). */
	__u32 status;		/* ROUND_STATUS register */
	__u32 done;		/* ROUND_DONE: bit h, head h completed */
	__u32 heads_done;
	__u32 heads_expected;
	__u32 all_done;		/* 1 when every expected head completed */
	__u64 reserved[2];
};

#define NFABRIC_IOC_INFO	_IOWR(NFABRIC_IOC_MAGIC, 0x00, struct nfabric_ioc_info)
#define NFABRIC_IOC_WIN_SET	_IOWR(NFABRIC_IOC_MAGIC, 0x01, struct nfabric_ioc_window)
#define NFABRIC_IOC_WIN_GET	_IOWR(NFABRIC_IOC_MAGIC, 0x02, struct nfabric_ioc_window)
#define NFABRIC_IOC_WIN_DISABLE	_IOW(NFABRIC_IOC_MAGIC, 0x03, struct nfabric_ioc_window_cmd)
#define NFABRIC_IOC_WIN_CLEAR	_IOW(NFABRIC_IOC_MAGIC, 0x04, struct nfabric_ioc_window_cmd)
#define NFABRIC_IOC_STATS	_IOWR(NFABRIC_IOC_MAGIC, 0x05, struct nfabric_ioc_stats)
#define NFABRIC_IOC_TIMING	_IOWR(NFABRIC_IOC_MAGIC, 0x06, struct nfabric_ioc_timing)
#define NFABRIC_IOC_ROUND_GET	_IOWR(NFABRIC_IOC_MAGIC, 0x07, struct nfabric_ioc_round)
#define NFABRIC_IOC_ROUND_COMPLETE _IOWR(NFABRIC_IOC_MAGIC, 0x08, struct nfabric_ioc_round)
#define NFABRIC_IOC_ROUND_WAIT	_IOWR(NFABRIC_IOC_MAGIC, 0x09, struct nfabric_ioc_round)

/*
 * NFABRIC_IOC_EVENTS (register layout 1.8): what the device's interrupt
 * reported since this open file last asked (or opened): window i's round
 * became ALL_DONE (bit i of done) or INCOMPLETE (bit i of incomplete),
 * this head's shared state failed (bit 0 of head).  irq: 1 when the
 * driver has the device's interrupt (ROUND_WAIT, poll() and eventfds are
 * woken by it), 0 when it has none (waits poll; no event is reported).
 * poll() on the file: EPOLLIN while EVENTS has something to say; EPOLLHUP
 * once the device is detached.  No privilege beyond the open file.
 */
struct nfabric_ioc_events {
	__u32 size;
	__u32 flags;		/* must be 0 */
	/* Output (must be 0 on input). */
	__u32 done;
	__u32 incomplete;
	__u32 head;
	__u32 irq;
	__u64 reserved[2];
};

/*
 * NFABRIC_IOC_EVENTFD: signal the eventfd fd at each of the device's
 * messages, until the file is closed or fd is -1.  EBADF, EINVAL: fd is
 * not an eventfd.
 */
struct nfabric_ioc_eventfd {
	__u32 size;
	__u32 flags;		/* must be 0 */
	__s32 fd;
	__u32 reserved;
};

#define NFABRIC_IOC_EVENTS	_IOWR(NFABRIC_IOC_MAGIC, 0x0a, struct nfabric_ioc_events)
#define NFABRIC_IOC_EVENTFD	_IOW(NFABRIC_IOC_MAGIC, 0x0b, struct nfabric_ioc_eventfd)

#endif /* _UAPI_NFABRIC_H */
