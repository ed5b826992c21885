/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * libnfabric: guest user-space access to a NEURON-Fabric CXL device.
 *
 * Finds the device in /sys/bus/pci/devices by PCI ID, maps its register
 * page (through nfabric.ko's /dev/nfabricN, or the vendor block the
 * Register Locator DVSEC names, through sysfs resourceN) and the
 * device memory of its CXL RAM region (/dev/daxX.Y), and programs the
 * path-select windows.  Plain C11 + POSIX; docs/guest.md describes it.
 *
 * In the style of ndctl's libcxl: an opaque context (nfabric_new(),
 * nfabric_free()), library errors as negative errno values with the
 * message of the last failure kept in the context (nfabric_errmsg()).
 * Return values: 0 on success; a negative errno value is a library error
 * (the NFLIB_E* names below say what each means here); a positive value is
 * the device's answer to a refused register write, its error code
 * (NFABRIC_ERR_*, include/hw/mem/nfabric_regs.h), which has no errno.
 * nfabric_strerror() names both.
 *
 * It walks sysfs itself rather than linking libcxl: the guest programs are
 * static binaries for a busybox initramfs without shared libraries, and
 * libcxl comes as a shared library with libkmod, libudev and json-c behind
 * it; the few sysfs files needed (docs/registers.md, "From a DPA to an
 * offset in /dev/daxX.Y") are read directly.
 */
#ifndef NFABRIC_GUEST_LIB_H
#define NFABRIC_GUEST_LIB_H

#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/*
 * The register contract: a standalone header (C99 and <stdint.h> only, like
 * a kernel uapi header), the same file the device is built from
 * (include/hw/mem/nfabric_regs.h); a program copies it beside this one.
 */
#include "nfabric_regs.h"

/* Library errors: negative errno values. */
#define NFLIB_ENODEV      (-ENODEV)     /* no device with the NEURON-Fabric PCI ID */
#define NFLIB_EOPEN       (-ENOENT)     /* a sysfs or /dev file could not be opened */
#define NFLIB_EMMAP       (-ENOMEM)     /* mmap failed */
#define NFLIB_EMAGIC      (-EPROTO)     /* register block has the wrong magic */
#define NFLIB_EVERSION    (-EPROTONOSUPPORT) /* unsupported register layout version */
#define NFLIB_ENODAX      (-ENXIO)      /* no dax device for the device's region */
#define NFLIB_EINVAL      (-EINVAL)     /* invalid argument */
#define NFLIB_ENOREGS     (-EOPNOTSUPP) /* opened without registers */
#define NFLIB_ENOMEM      (-ENOMEDIUM)  /* opened without device memory */
#define NFLIB_ESYSFS      (-EIO)        /* unexpected sysfs content */
#define NFLIB_ETIMEDOUT   (-ETIMEDOUT)  /* a wait timed out */
#define NFLIB_ESTALE      (-ESTALE)     /* the round moved on (another head cleared) */
#define NFLIB_EBUSY       (-EBUSY)      /* the memory is in use by the kernel (System RAM) */
#define NFLIB_EINTERLEAVE (-EXDEV)      /* the region is interleaved over several devices */

/* nfabric_open() flags. */
#define NFABRIC_OPEN_NO_REGS  (1u << 0) /* memory only (e.g. stock cxl-type3) */
#define NFABRIC_OPEN_NO_MEM   (1u << 1) /* registers only */

/*
 * A library context: one device (or one head of a shared device), its
 * mappings and the message of its last failure.  Opaque: nfabric_new()
 * makes one, nfabric_free() ends it; the accessors below read what
 * callers may know of it.
 */
typedef struct nfabric_dev nfabric_dev;

/* What a window is programmed with. */
typedef struct nfabric_win_cfg {
    uint64_t base;              /* DPA of the data */
    uint64_t size;              /* data bytes */
    uint64_t counters;          /* DPA of the counter area (aggregating paths) */
    unsigned path;              /* NFABRIC_PATH_* */
    unsigned width;             /* counter width in bits: 8, 16 */
    unsigned tie;               /* NFABRIC_TIE_* */
    uint32_t threshold;         /* G-Ternary gate */
    /*
     * A posted window (register version 1.7; G-Binary and G-Ternary):
     * nfabric_mem_write() and nfabric_mem_read() then move its data with
     * plain stores and loads and ring its POST and FETCH doorbells.
     */
    bool posted;
} nfabric_win_cfg;

/* What a window reports. */
typedef struct nfabric_win_state {
    nfabric_win_cfg cfg;
    uint32_t wctrl;             /* the window's CTRL register, raw */
    bool enabled;
    uint32_t error;             /* WIN_ERROR */
    uint64_t contrib_writes;    /* writes since the round was cleared */
    uint64_t contrib_bytes;
    uint32_t reserved_codes;
} nfabric_win_state;

typedef struct nfabric_path_stats {
    uint64_t reads, writes, read_bytes, write_bytes;
} nfabric_path_stats;

typedef struct nfabric_timing {
    uint32_t clock_mhz, depth, service_ns, link_mbps;
    uint32_t exposed_ppm;
    uint64_t total_ps;
    uint64_t path_time_ps[NFABRIC_NUM_PATHS];
    uint64_t path_exposed_ps[NFABRIC_NUM_PATHS];
} nfabric_timing;

/* The heads of the device (version 1.1; docs/multihost.md). */
typedef struct nfabric_heads {
    unsigned index;             /* this host's head */
    unsigned count;             /* heads of the device (1: not shared) */
    bool shared;                /* shared by several hosts */
    uint32_t live;              /* bit h: head h attached */
    uint32_t lost;              /* bit h: head h's process died */
    /* Jobs (device 1.4): set by a fabric manager on a shared device. */
    bool jobs_assigned;         /* false: one job of every head */
    unsigned job;               /* this head's job */
    uint32_t job_windows;       /* bit i: window i is the job's */
    bool staging;               /* 1.7: this head can use posted windows */
} nfabric_heads;

/* A window's current round. */
typedef struct nfabric_round {
    uint32_t seq;               /* round number */
    uint32_t done;              /* bit h: head h completed it */
    uint32_t status;            /* raw ROUND_STATUS */
    bool all_done;              /* every expected head completed */
    bool incomplete;            /* a contribution may be partial */
    unsigned ndone, nexpected;
} nfabric_round;

const char *nfabric_strerror(int err);
const char *nfabric_errmsg(const nfabric_dev *d);
/* A path's and a tie rule's name ("fp32", "neg"), "?" if unknown. */
const char *nfabric_path_name(unsigned path);
const char *nfabric_tie_name(unsigned tie);
/*
 * Parse a path's name ("fp32", "gbinary", "gternary") or a tie rule's ("neg",
 * "pos"), or a number that fits the CTRL field; -1 if neither.
 */
int nfabric_path_parse(const char *s);
int nfabric_tie_parse(const char *s);

/*
 * Open the first NEURON-Fabric device (or, with NFABRIC_OPEN_NO_REGS, the
 * first CXL memory device with a dax region).  d is always initialised, so
 * nfabric_close() and nfabric_errmsg() may be called after a failure.
 */
int nfabric_open(nfabric_dev *d, unsigned flags);
/*
 * The same for the device `name`: its PCI address (e.g. "0000:0d:00.0") or
 * the name of its CXL memdev (e.g. "mem1"); NULL or "" means the device
 * $NFABRIC_DEVICE names, else the first by PCI address.
 */
int nfabric_open_dev(nfabric_dev *d, const char *name, unsigned flags);
/*
 * The PCI addresses of every NEURON-Fabric device (with any_cxl_mem: every
 * CXL memory device), sorted; up to max in names.  Returns how many there
 * are, or a negative library error.
 */
int nfabric_list(char (*names)[64], unsigned max, bool any_cxl_mem);
void nfabric_close(nfabric_dev *d);

/* Raw register access at offsets of the register block (32-bit MMIO). */
uint32_t nfabric_rd32(const nfabric_dev *d, uint32_t off);
void nfabric_wr32(const nfabric_dev *d, uint32_t off, uint32_t v);
/* 64-bit registers as two 32-bit halves, low then high. */
uint64_t nfabric_rd64(const nfabric_dev *d, uint32_t off);
void nfabric_wr64(const nfabric_dev *d, uint32_t off, uint64_t v);

unsigned nfabric_num_windows(const nfabric_dev *d);

/*
 * Program window i and enable it.  Returns 0, the device's error code
 * (positive: WIN_ERROR after a refused write or enable), or a library
 * error.  The library does not pre-validate the configuration (the device
 * is the judge), but it refuses, before touching the device, a low-bit
 * window whose data or counters lie in memory the guest kernel uses as
 * System RAM (NFLIB_EBUSY: the device would replace the kernel's data),
 * and a low-bit window on a device whose region is interleaved with other
 * devices (NFLIB_EINTERLEAVE: the window would cover only this device's
 * stripes of the region).
 */
int nfabric_window_set(nfabric_dev *d, unsigned i, const nfabric_win_cfg *c);
/* Disable window i (its counters stay in memory). */
int nfabric_window_disable(nfabric_dev *d, unsigned i);
/* Start a new aggregation round on window i (zeroes counters, contributions). */
int nfabric_window_clear(nfabric_dev *d, unsigned i);
int nfabric_window_get(const nfabric_dev *d, unsigned i, nfabric_win_state *s);
/* Disable every window. */
int nfabric_windows_reset(nfabric_dev *d);

/*
 * The error code the device should give for c in window i against the
 * other enabled windows: the controller's own rules
 * (nfabric_window_validate, hw/mem/nfabric/nfabric_window.c), for the
 * tool's diagnostics and the tests' cross checks.
 */
unsigned nfabric_window_check(const nfabric_dev *d, unsigned i,
                              const nfabric_win_cfg *c);

/* Global CTRL command (NFABRIC_CTRL_*); returns the device error. */
int nfabric_ctrl(nfabric_dev *d, uint32_t cmd);
int nfabric_stats(const nfabric_dev *d, nfabric_path_stats st[NFABRIC_NUM_PATHS]);
int nfabric_timing_read(const nfabric_dev *d, nfabric_timing *t);

/* Statistics summed over every head of a shared device (POOL_STATS). */
int nfabric_pool_stats(const nfabric_dev *d,
                       nfabric_path_stats st[NFABRIC_NUM_PATHS]);

/* This head's index, the head count, and which heads are attached. */
int nfabric_heads_read(const nfabric_dev *d, nfabric_heads *h);
/* Writes head `head` made to window i since its last clear. */
int nfabric_head_contrib(nfabric_dev *d, unsigned head, unsigned i,
                         uint64_t *writes);

/* Window i's round state. */
int nfabric_round_read(const nfabric_dev *d, unsigned i, nfabric_round *r);
/*
 * Tell the device this head's contribution to round seq of window i is
 * complete.  NFABRIC_ERR_ROUND if seq is not the current round.
 */
int nfabric_round_complete(nfabric_dev *d, unsigned i, uint32_t seq);
/*
 * Wait until every expected head completed round seq of window i (polling
 * ROUND_STATUS), at most timeout_ms.  0 (r filled in), NFLIB_ETIMEDOUT,
 * NFLIB_ESTALE if the window moved to another round meanwhile, or
 * NFABRIC_ERR_STATE at once if this head found the shared state unusable
 * (HEAD_INFO.STATE_FAILED: no round can end).
 */
int nfabric_round_wait(nfabric_dev *d, unsigned i, uint32_t seq,
                       unsigned timeout_ms, nfabric_round *r);
/*
 * Wait until window i's round number is no longer seq (a clear); the same
 * errors (NFABRIC_ERR_STATE at once when the state failed).
 */
int nfabric_round_wait_next(nfabric_dev *d, unsigned i, uint32_t seq,
                            unsigned timeout_ms);

/*
 * Device memory as accesses, through the mapping or the transport: len
 * bytes at DPA dpa, in naturally aligned accesses of at most 8 bytes (each
 * one a CXL.mem access the device aggregates on low-bit windows).  On a
 * shared device, a write of 4 KiB or more begins at this head's share of
 * the range (head h of n at h/n of it) and wraps around: heads writing
 * the same range at once are at different places of it.  0, or an error:
 * one of the transport's, or the device's own (LAST_ERROR, e.g.
 * NFABRIC_ERR_STATE, NFABRIC_ERR_OWNER) when it refused any of the
 * accesses (its ERROR_COUNT moved meanwhile): a refused store was not
 * counted, a refused load read all-ones.
 */
int nfabric_mem_write(nfabric_dev *d, uint64_t dpa, const void *buf,
                      uint64_t len);
int nfabric_mem_read(nfabric_dev *d, uint64_t dpa, void *buf, uint64_t len);

/*
 * Posted windows (device 1.7, docs/registers.md "Posted windows"): the
 * doorbells of window i.  nfabric_window_post() hands the device len bytes
 * of this head's staging from offset off of the window's data (stored
 * before with plain stores, e.g. through nfabric_dpa_ptr()): they count as
 * this head's writes of them.  nfabric_window_fetch() has the device write
 * the read-out of those bytes into the staging, where plain loads read it.
 * nfabric_mem_write() and nfabric_mem_read() do both by themselves for the
 * parts of a range in posted windows.  0, or the device's error
 * (NFABRIC_ERR_POSTED: not an enabled posted window; NFABRIC_ERR_RANGE).
 */
int nfabric_window_post(nfabric_dev *d, unsigned i, uint64_t off,
                        uint64_t len);
int nfabric_window_fetch(nfabric_dev *d, unsigned i, uint64_t off,
                         uint64_t len);

/* Device memory bytes (MEM_SIZE) and ENABLED_MASK, for bindings. */
uint64_t nfabric_mem_size(const nfabric_dev *d);
uint32_t nfabric_enabled_mask(const nfabric_dev *d);

/* Bytes of counter area a window needs (nfabric_counter_bytes, exported). */
uint64_t nfabric_counter_size(unsigned path, unsigned width, uint64_t size);

/* A new context (NULL if out of memory), and its end (closes it too). */
nfabric_dev *nfabric_new(void);
void nfabric_free(nfabric_dev *d);

/*
 * What an opened context found ("" or 0 where it found nothing): the PCI
 * address ("0000:0d:00.0"), the CXL memdev ("mem0"), region ("region0")
 * and dax device ("dax0.0"), how the registers are reached ("driver
 * /dev/nfabric0", "resource0 (...)"), VERSION and CAPS.
 */
const char *nfabric_pci_name(const nfabric_dev *d);
const char *nfabric_memdev_name(const nfabric_dev *d);
const char *nfabric_region_name(const nfabric_dev *d);
const char *nfabric_dax_name(const nfabric_dev *d);
const char *nfabric_access_name(const nfabric_dev *d);
uint32_t nfabric_version(const nfabric_dev *d);
uint32_t nfabric_caps(const nfabric_dev *d);
/* The dax mapping: its first byte's DPA, its length, its address. */
uint64_t nfabric_map_dpa(const nfabric_dev *d);
uint64_t nfabric_map_size(const nfabric_dev *d);
uint8_t *nfabric_map(const nfabric_dev *d);
/* The mapped register block (NULL when reached through a transport). */
volatile uint8_t *nfabric_regs_map(const nfabric_dev *d);

/* Device memory: pointer to DPA dpa (NULL if outside the mapping). */
void *nfabric_dpa_ptr(const nfabric_dev *d, uint64_t dpa, uint64_t len);

/* Counter e of a counter area at DPA counters (signed LE, width bits). */
int32_t nfabric_counter(const nfabric_dev *d, uint64_t counters,
                        unsigned width, uint64_t e);

#endif /* NFABRIC_GUEST_LIB_H */
