/* SPDX-License-Identifier: GPL-2.0-or-later OR MIT */
/*
 * NEURON-Fabric controller register layout.
 *
 * Shared by the QEMU device (hw/mem/nfabric/) and the guest library
 * (guest/lib/), like a kernel uapi header: plain C11, no QEMU or libc
 * dependencies beyond <stdint.h>.  docs/registers.md is the prose
 * specification of everything defined here; keep the two in step.
 *
 * The device names the block in its Register Locator DVSEC, as a designated
 * vendor specific register block (NFABRIC_DVS_*, below): software finds it
 * there, as Linux's cxl_pci finds the component and device registers.  The
 * same registers are also at offset NFABRIC_REGS_OFFSET of BAR0 (the CXL
 * component register block), in the range the CXL specification leaves to
 * the implementation, where drivers before 1.6 looked.  All registers are little-endian.  32-bit registers take
 * naturally aligned 32-bit accesses; 64-bit registers take naturally aligned
 * 64-bit accesses or two 32-bit accesses to their halves.
 *
 * The contract is written once, as tables (X-macros, like Linux's CXL_CMDS
 * in include/uapi/linux/cxl_mem.h): NFABRIC_PATHS, NFABRIC_TIES,
 * NFABRIC_ERRORS and the register tables NFABRIC_GLOBAL_REGS,
 * NFABRIC_WIN_REGS and NFABRIC_ROUND_REGS.  The constants below are made
 * from them, and so are the controller's register decode, the guest
 * library's names and tests/unit/test_regs_doc.c (docs/registers.md
 * against the tables).  The fuzzers' and unit tests' own reference of the
 * contract (tests/) is written out by hand on purpose: an independent
 * check.  Adding a register is one row here and one in docs/registers.md.
 */
#ifndef HW_MEM_NFABRIC_REGS_H
#define HW_MEM_NFABRIC_REGS_H

#include <stdint.h>

/* PCI identity of the device (class code 0x050210, CXL memory device). */
/*
 * 1b36 is the vendor ID QEMU uses for its own devices; 00f0 is not listed
 * in QEMU's docs/specs/pci-ids.rst.  Linux's cxl_pci binds by class code.
 */
#define NFABRIC_PCI_VENDOR_ID       0x1b36
#define NFABRIC_PCI_DEVICE_ID       0x00f0

/* Where the block sits in BAR0 and how large it is. */
#define NFABRIC_REGS_OFFSET         0x2000
#define NFABRIC_REGS_SIZE           0x1000

/*
 * The Register Locator DVSEC (CXL r3.1 8.1.9.1: PCIe DVSEC vendor 0x1e98,
 * ID 8) names the designated vendor specific register block (Register
 * Block Identifier 0xff) at BAR NFABRIC_DVS_BIR, offset NFABRIC_DVS_OFFSET
 * (the locator's offsets are 64 KiB aligned: the block follows the 64 KiB
 * component registers).  The block starts with its header (32-bit,
 * read-only); the controller's registers are at NFABRIC_DVS_REGS in it.
 */
#define NFABRIC_CXL_DVSEC_VENDOR_ID 0x1e98      /* the CXL consortium */
#define NFABRIC_CXL_DVSEC_REGLOC    8           /* Register Locator DVSEC */
#define NFABRIC_REGLOC_ENTRIES      0x0c        /* first entry, in the DVSEC */
#define NFABRIC_REGLOC_BIR_MASK     0x00000007u /* entry low: BAR */
#define NFABRIC_REGLOC_RBI_SHIFT    8           /* entry low: block ID */
#define NFABRIC_REGLOC_RBI_MASK     0x0000ff00u
#define NFABRIC_REGLOC_OFF_LO_MASK  0xffff0000u /* entry low: offset 31:16 */
#define NFABRIC_REGLOC_RBI_VENDOR   0xff        /* designated vendor specific */

#define NFABRIC_DVS_BIR             0           /* BAR0 */
#define NFABRIC_DVS_OFFSET          0x10000
#define NFABRIC_DVS_SIZE            0x2000      /* header page + registers */
#define NFABRIC_DVS_REGS            0x1000      /* the registers, in the block */
/* The header: */
#define NFABRIC_DVS_HDR_ID          0x0         /* 15:0 vendor, 31:16 block */
#define NFABRIC_DVS_HDR_REVISION    0x4         /* 3:0 revision */
#define NFABRIC_DVS_HDR_LENGTH      0x8         /* bytes, header included */
#define NFABRIC_DVS_HDR_SIZE        0xc
#define NFABRIC_DVS_VENDOR_ID       NFABRIC_PCI_VENDOR_ID
#define NFABRIC_DVS_BLOCK_ID        0x4e46      /* "NF" */
#define NFABRIC_DVS_REVISION        1
#define NFABRIC_DVS_ID \
    ((uint32_t)NFABRIC_DVS_BLOCK_ID << 16 | NFABRIC_DVS_VENDOR_ID)

#define NFABRIC_MAGIC               0x4241464eu /* "NFAB" little-endian */
#define NFABRIC_VERSION_MAJOR       1
/*
 * 1.1: heads and rounds.  1.2: T_MAX_IN_FLIGHT (0x214) and T_MAX_QUEUED
 * (0x268) removed (unmapped): the device's stream is dependent, one access
 * in flight at a time, so they could not say anything.  1.3: error STATE
 * and HEAD_INFO.STATE_FAILED (a head that found the shared device's state
 * file corrupted or truncated refuses the device's accesses).  1.4: jobs
 * set by a fabric manager: register JOB, error OWNER (docs/multihost.md).
 * 1.5: error PEER (an enable on a shared device whose other heads did not
 * trap the window in time: the map protocol).  1.6: the block named in the
 * Register Locator DVSEC (NFABRIC_DVS_*).  1.7: posted low-bit windows
 * (WCTRL_POSTED, the POST and FETCH doorbells at 0xc00, error POSTED).
 * 1.8: interrupts (IRQ_* at 0x0c0).  1.9: a CXL PMU (CPMU) block counting
 * the device's own events (NFABRIC_CPMU_*).
 */
#define NFABRIC_VERSION_MINOR       9
#define NFABRIC_VERSION \
    ((NFABRIC_VERSION_MAJOR << 16) | NFABRIC_VERSION_MINOR)

#define NFABRIC_NUM_WINDOWS         16
/* Window base, length and counter area are multiples of this. */
#define NFABRIC_ALIGN               64

/* ---- Paths ----------------------------------------------------------- */
/* X(NAME, value, name): NFABRIC_PATH_<NAME> = value; name as tools spell it. */
#define NFABRIC_PATHS(X) \
    X(FP32,         0, "fp32")      /* plain memory, identity */ \
    X(GBINARY,      1, "gbinary")   /* sign counts, majority read-out */ \
    X(GTERNARY,     2, "gternary")  /* ternary sums, gated read-out */

/* ---- Tie rules (G-Binary read-out when an element's count is 0) ------- */
#define NFABRIC_TIES(X) \
    X(NEGATIVE,     0, "neg")       /* count 0 reads as bit 0 */ \
    X(POSITIVE,     1, "pos")       /* count 0 reads as bit 1 */

/* ---- Error codes (window ERROR, global LAST_ERROR) -------------------- */
/* X(NAME, code, text): codes run from 0 without gaps. */
#define NFABRIC_ERRORS(X) \
    X(NONE,          0, "no error") \
    X(OVERLAP,       1, "overlaps an enabled window or counter area") \
    X(RANGE,         2, "empty, wrapping or past device memory") \
    X(ALIGN,         3, "not 64-byte aligned") \
    X(PATH,          4, "unknown path") \
    X(WIDTH,         5, "unsupported counter width") \
    X(THRESHOLD,     6, "bad G-Ternary threshold") \
    X(TIE,           7, "unknown tie rule") \
    X(BUSY,          8, "configuration write while enabled") \
    X(READONLY,      9, "write to a read-only register") \
    X(UNMAPPED,     10, "access to an undefined register offset") \
    X(ACCESS,       11, "bad access size or alignment") \
    X(RESERVED_BITS, 12, "reserved bits set") \
    X(COMMAND,      13, "unknown command") \
    X(ROUND,        14, "not the window's current round") \
    X(HEAD,         15, "no such head") \
    X(STATE,        16, "the shared state is unusable, or a lock stayed busy past the bound") \
    X(OWNER,        17, "outside this head's job (fabric manager)") \
    X(PEER,         18, "another head did not trap the window in time") \
    X(POSTED,       19, "not an enabled posted window, or the device has no posted buffers")

#define NFABRIC_X_PATH_(name, v, str)   NFABRIC_PATH_##name = (v),
#define NFABRIC_X_TIE_(name, v, str)    NFABRIC_TIE_##name = (v),
#define NFABRIC_X_ERR_(name, v, str)    NFABRIC_ERR_##name = (v),
#define NFABRIC_X_COUNT_(name, v, str)  + 1
enum {
    NFABRIC_PATHS(NFABRIC_X_PATH_)
    NFABRIC_NUM_PATHS = 0 NFABRIC_PATHS(NFABRIC_X_COUNT_)
};
enum {
    NFABRIC_TIES(NFABRIC_X_TIE_)
    NFABRIC_NUM_TIES = 0 NFABRIC_TIES(NFABRIC_X_COUNT_)
};
enum {
    NFABRIC_ERRORS(NFABRIC_X_ERR_)
    NFABRIC_ERR_MAX = (0 NFABRIC_ERRORS(NFABRIC_X_COUNT_)) - 1
};

/* ---- G-Ternary element codes (2 bits per element) --------------------- */
#define NFABRIC_TERN_ZERO           0x0
#define NFABRIC_TERN_PLUS           0x1
#define NFABRIC_TERN_RESERVED       0x2
#define NFABRIC_TERN_MINUS          0x3

/* ---- Heads (version 1.1) --------------------------------------------- */
/*
 * A device may be shared by several hosts, each attached through its own
 * head (docs/multihost.md).  A device that is not shared has one head, 0.
 */
#define NFABRIC_MAX_HEADS           16

/* ---- Registers: the tables ------------------------------------------ */
/*
 * X(NAME, offset, width, access, reset, scope, count)
 *   offset  NFABRIC_REG_<NAME> (NFABRIC_WIN_<NAME>, NFABRIC_ROUND_<NAME>:
 *           offset in a window's or a round's block)
 *   width   bytes: 4 or 8
 *   access  RO, RW, or WO (a command: reads 0)
 *   reset   the value after a reset of a device that is not shared, or
 *           NFABRIC_RESET_DEVICE: set by the device (its memory size, a
 *           property, the head's index); docs/registers.md says which
 *   scope   HEAD: each head's own; DEVICE: the same for every head of a
 *           shared device (docs/multihost.md)
 *   count   consecutive registers of this kind (an array), each width bytes
 * Offsets not in a table hold no register: reads return 0 and every
 * access is refused with UNMAPPED.
 */
#define NFABRIC_RESET_DEVICE        (~0ull)

#define NFABRIC_GLOBAL_REGS(X) \
    X(MAGIC,           0x000, 4, RO, NFABRIC_MAGIC,      DEVICE, 1) \
    X(VERSION,         0x004, 4, RO, NFABRIC_VERSION,    DEVICE, 1) \
    X(CAPS,            0x008, 4, RO, NFABRIC_CAPS_VALUE, DEVICE, 1) \
    X(WIN_LAYOUT,      0x00c, 4, RO, NFABRIC_WIN_LAYOUT_VALUE, DEVICE, 1) \
    X(CTRL,            0x010, 4, WO, 0, HEAD,   1)  /* CTRL_* commands */ \
    X(LAST_ERROR,      0x014, 4, RO, 0, HEAD,   1) \
    X(ERROR_COUNT,     0x018, 4, RO, 0, HEAD,   1) \
    X(ENABLED_MASK,    0x01c, 4, RO, 0, DEVICE, 1)  /* bit i: window i */ \
    X(MEM_SIZE,        0x020, 8, RO, NFABRIC_RESET_DEVICE, DEVICE, 1) \
    /* Version 1.1: heads. */ \
    X(HEAD_INFO,       0x028, 4, RO, 0x100, HEAD,   1)  /* HEAD_INFO_* */ \
    X(HEADS_LIVE,      0x02c, 4, RO, 0x1,   DEVICE, 1)  /* bit h: head h */ \
    X(HEAD_SELECT,     0x030, 4, RW, NFABRIC_RESET_DEVICE, HEAD, 1) \
    X(HEADS_LOST,      0x034, 4, RO, 0,     DEVICE, 1)  /* bit h: head h */ \
    /* Version 1.4: this head's job (JOB_*), set by a fabric manager. */ \
    X(JOB,             0x038, 4, RO, 0xffff0000, HEAD, 1) \
    /* Version 1.8: this head's interrupts (IRQ_* fields below). */ \
    X(IRQ_MSGNUM,      0x0c0, 4, RO, NFABRIC_RESET_DEVICE, HEAD, 1) \
    X(IRQ_ENABLE,      0x0c4, 4, RW, 0, HEAD, 1) \
    X(IRQ_STATUS,      0x0c8, 4, RW, 0, HEAD, 1)  /* write 1s: acknowledge */ \
    X(IRQ_HEAD_ENABLE, 0x0cc, 4, RW, 0, HEAD, 1) \
    X(IRQ_HEAD_STATUS, 0x0d0, 4, RW, 0, HEAD, 1)  /* write 1s: acknowledge */ \
    /* Writes of the HEAD_SELECT head to window i since its last clear. */ \
    X(HEAD_CONTRIB,    0x040, 8, RO, 0, DEVICE, NFABRIC_NUM_WINDOWS) \
    /* Statistics: per path, STATS_* (u64 each); POOL_: every head's sum. */ \
    X(STATS,           0x100, 8, RO, 0, HEAD, \
      NFABRIC_NUM_PATHS * NFABRIC_STATS_STRIDE / 8) \
    X(POOL_STATS,      0x180, 8, RO, 0, DEVICE, \
      NFABRIC_NUM_PATHS * NFABRIC_STATS_STRIDE / 8) \
    /* Timing model: parameters (the device's properties) ... */ \
    X(T_CLOCK_MHZ,     0x200, 4, RO, NFABRIC_RESET_DEVICE, HEAD, 1) \
    X(T_DEPTH,         0x204, 4, RO, NFABRIC_RESET_DEVICE, HEAD, 1) \
    X(T_SERVICE_NS,    0x208, 4, RO, NFABRIC_RESET_DEVICE, HEAD, 1) \
    X(T_LINK_MBPS,     0x20c, 4, RO, NFABRIC_RESET_DEVICE, HEAD, 1) \
    /* ... and accumulated figures (docs/timing.md). */ \
    X(T_EXPOSED_PPM,   0x210, 4, RO, 0, HEAD, 1) \
    X(T_TOTAL_PS,      0x218, 8, RO, 0, HEAD, 1) \
    /* Per path: T_PATH_TIME_PS, T_PATH_EXPOSED_PS. */ \
    X(T_PATH,          0x220, 8, RO, 0, HEAD, \
      NFABRIC_NUM_PATHS * NFABRIC_T_PATH_STRIDE / 8) \
    X(T_RUNTIME_PS,    0x250, 8, RO, 0, HEAD, 1) \
    X(T_QUEUED_PS,     0x258, 8, RO, 0, HEAD, 1) \
    X(T_LINK_BUSY_PS,  0x260, 8, RO, 0, HEAD, 1) \
    X(T_ACCESSES,      0x270, 8, RO, 0, HEAD, NFABRIC_NUM_PATHS)

/* Window i's registers at NFABRIC_REG_WIN(i, NFABRIC_WIN_<NAME>). */
#define NFABRIC_WIN_REGS(X) \
    X(DPA_BASE,        0x00, 8, RW, 0, DEVICE, 1)  /* data base (DPA) */ \
    X(DPA_SIZE,        0x08, 8, RW, 0, DEVICE, 1)  /* data bytes */ \
    X(COUNTERS,        0x10, 8, RW, 0, DEVICE, 1)  /* counter area (DPA) */ \
    X(CTRL,            0x18, 4, RW, 0, DEVICE, 1)  /* WCTRL_* */ \
    X(THRESHOLD,       0x1c, 4, RW, 0, DEVICE, 1)  /* G-Ternary gate T */ \
    X(CMD,             0x20, 4, WO, 0, DEVICE, 1)  /* WCMD_* */ \
    X(ERROR,           0x24, 4, RO, 0, DEVICE, 1)  /* last error */ \
    X(CONTRIB_WRITES,  0x28, 8, RO, 0, DEVICE, 1)  /* since the clear */ \
    X(CONTRIB_BYTES,   0x30, 8, RO, 0, DEVICE, 1) \
    X(RESERVED_CODES,  0x38, 4, RO, 0, DEVICE, 1)  /* ternary code 2 */

/* Window i's round registers (1.1) at NFABRIC_REG_ROUND(i, NFABRIC_<NAME>). */
#define NFABRIC_ROUND_REGS(X) \
    X(ROUND_SEQ,       0x0, 4, RO, 0, DEVICE, 1)   /* round number */ \
    X(ROUND_DONE,      0x4, 4, RO, 0, DEVICE, 1)   /* bit h: head h done */ \
    X(ROUND_STATUS,    0x8, 4, RO, 0, DEVICE, 1)   /* RSTAT_* */ \
    X(ROUND_COMPLETE,  0xc, 4, WO, 0, DEVICE, 1)   /* write SEQ: done */

/*
 * Window i's posted doorbells (1.7) at NFABRIC_REG_POST(i, NFABRIC_<NAME>):
 * STAGE_OFF is the offset in the window's data of the range the next
 * doorbell names; writing its length to POST contributes that range of
 * this head's staging, to FETCH writes the read-out there.
 */
#define NFABRIC_POST_REGS(X) \
    X(STAGE_OFF,       0x0, 4, RW, 0, HEAD, 1)     /* range offset */ \
    X(POST,            0x4, 4, WO, 0, HEAD, 1)     /* length: contribute */ \
    X(FETCH,           0x8, 4, WO, 0, HEAD, 1)     /* length: read out */

/* The offsets, made from the tables. */
#define NFABRIC_X_REG_(n, off, w, a, r, sc, c)      NFABRIC_REG_##n = (off),
#define NFABRIC_X_WIN_REG_(n, off, w, a, r, sc, c)  NFABRIC_WIN_##n = (off),
#define NFABRIC_X_RND_REG_(n, off, w, a, r, sc, c)  NFABRIC_##n = (off),
enum { NFABRIC_GLOBAL_REGS(NFABRIC_X_REG_) };
enum { NFABRIC_WIN_REGS(NFABRIC_X_WIN_REG_) };
enum { NFABRIC_ROUND_REGS(NFABRIC_X_RND_REG_) };
enum { NFABRIC_POST_REGS(NFABRIC_X_RND_REG_) };
/* Test with #ifdef for the timing model's queue figures (as before 1.1). */
#define NFABRIC_REG_T_ACCESSES      NFABRIC_REG_T_ACCESSES

/* Register access and scope, as the tables name them. */
typedef enum NFabricRegAccess {
    NFABRIC_ACCESS_RO,          /* read-only */
    NFABRIC_ACCESS_RW,          /* read-write */
    NFABRIC_ACCESS_WO,          /* write-only command, reads 0 */
} NFabricRegAccess;

typedef enum NFabricRegScope {
    NFABRIC_SCOPE_HEAD,         /* each head's own */
    NFABRIC_SCOPE_DEVICE,       /* every head's */
} NFabricRegScope;

/* One row of a table, as data (NFABRIC_REG_DESC(X-row) in an initialiser). */
typedef struct NFabricRegDesc {
    const char *name;           /* as docs/registers.md spells it */
    uint32_t off;               /* of the first register */
    uint8_t width;              /* bytes */
    uint8_t access;             /* NFabricRegAccess */
    uint8_t scope;              /* NFabricRegScope */
    uint16_t count;
    uint64_t reset;             /* or NFABRIC_RESET_DEVICE */
} NFabricRegDesc;

#define NFABRIC_REG_DESC(n, off, w, a, r, sc, c) \
    { #n, (off), (w), NFABRIC_ACCESS_##a, NFABRIC_SCOPE_##sc, (c), (r) },

/* ---- Global register fields ------------------------------------------- */
#define NFABRIC_HEAD_INFO_INDEX_MASK    0x000000ffu /* this head's index */
#define NFABRIC_HEAD_INFO_COUNT_SHIFT   8           /* number of heads */
#define NFABRIC_HEAD_INFO_COUNT_MASK    0x0000ff00u
#define NFABRIC_HEAD_INFO_SHARED        (1u << 16)  /* shared by processes */
/* 1.3: this head found the state corrupted or truncated: it refuses accesses */
#define NFABRIC_HEAD_INFO_STATE_FAILED  (1u << 17)
/* 1.7: this head has staging memory: it can enable and use posted windows */
#define NFABRIC_HEAD_INFO_STAGING       (1u << 18)

/*
 * Interrupts (1.8): one MSI/MSI-X message, number IRQ_MSGNUM[10:0] (bit 31
 * NONE: the device has no vector for it).  IRQ_ENABLE/IRQ_STATUS bit i:
 * window i's round became ALL_DONE; bit 16 + i: it became INCOMPLETE.
 * IRQ_HEAD_ENABLE/IRQ_HEAD_STATUS bit 0: this head's state failed.  A
 * status bit is set, and the message sent, when its event happens while
 * its enable bit is set; writing 1s to a status register clears them.
 */
#define NFABRIC_IRQ_MSGNUM_MASK         0x000007ffu
#define NFABRIC_IRQ_MSGNUM_NONE         (1u << 31)
#define NFABRIC_IRQ_DONE(i)             (1u << (i))
#define NFABRIC_IRQ_INCOMPLETE(i)       (1u << (16 + (i)))
#define NFABRIC_IRQ_HEAD_STATE_FAILED   (1u << 0)
#define NFABRIC_IRQ_HEAD_VALID          0x1u

/*
 * CXL event records (1.8, docs/reliability.md "Faults as CXL events"): a
 * head logs a vendor-specific record (CXL r3.1 8.2.9.2.1: the common
 * header with this UUID, then 80 bytes of data) in the device's event log
 * of the record's severity when it sees a fault: another head's process
 * died (HEAD_LOST, Warning log), a round became INCOMPLETE with a
 * contribution missing (INCOMPLETE, Warning), its own shared state failed
 * (STATE_FAILED, Failure), an enable of its was given up because another
 * head did not trap the window in time (PEER, Informational).
 */
#define NFABRIC_EVENT_UUID \
    { 0x4e, 0x46, 0x41, 0x42, 0x2e, 0x4e, 0x4f, 0x75, \
      0x8e, 0x52, 0x6f, 0x75, 0x6e, 0x64, 0x73, 0x01 }
#define NFABRIC_EVENT_UUID_STR      "4e464142-2e4e-4f75-8e52-6f756e647301"
/* The record's data (after the 48-byte header): byte offsets. */
#define NFABRIC_EVENT_KIND          0x00    /* NFABRIC_EVENT_* below */
#define NFABRIC_EVENT_REPORTER      0x01    /* the head whose log it is */
#define NFABRIC_EVENT_HEAD          0x02    /* the head concerned; 0xff: none */
#define NFABRIC_EVENT_WINDOW        0x03    /* the window; 0xff: none */
#define NFABRIC_EVENT_ROUND         0x04    /* u32 LE: the window's ROUND_SEQ */
#define NFABRIC_EVENT_CODE          0x08    /* u32 LE: error code; 0: none */
#define NFABRIC_EVENT_MAGIC         0x0c    /* "NFAB" */
#define NFABRIC_EVENT_TEXT          0x10    /* ASCII, NUL-padded, 64 bytes */
#define NFABRIC_EVENT_HEAD_LOST     1
#define NFABRIC_EVENT_INCOMPLETE    2
#define NFABRIC_EVENT_STATE_FAILED  3
#define NFABRIC_EVENT_PEER          4
#define NFABRIC_EVENT_NONE          0xffu

/*
 * The CXL PMU (1.9, CXL r3.1 8.2.7; docs/registers.md "The CXL PMU"): a
 * second block named in the Register Locator DVSEC (Register Block
 * Identifier 4) at BAR NFABRIC_CPMU_BIR, offset NFABRIC_CPMU_OFFSET, laid
 * out as the specification says (capability 0x000, overflow status 0x010,
 * freeze 0x018, event capabilities 0x100 + 8n, counter configuration
 * 0x200 + 8n, counters 0xc00 + 8n).  Linux's cxl_pci finds it and cxl_pmu
 * binds it.  Every head has its own, counting that head's events.  Events
 * are vendor defined, vendor ID NFABRIC_CPMU_VENDOR_ID, in two groups:
 *
 *   group 1 (event capability 0): the device's events, NFABRIC_CPMU_EV_*:
 *     reads, writes, bytes read and written of path p (as STATS counts
 *     them), contributions, rounds seen done or INCOMPLETE, refusals (as
 *     ERROR_COUNT counts them).  Counters 0-7 are configurable: each
 *     counts the sum of any of these.
 *   group 2 (event capability 1): refusals by error code, bit e - 1 for
 *     code e.  Counter 8 + e - 1 is a fixed-function counter of code e.
 *
 * (Linux's cxl_pmu programs a configurable counter with event capability
 * 0 whatever group was asked for, so the configurable counters have one
 * group; a fixed counter's group is its own.)  Counters are
 * NFABRIC_CPMU_WIDTH bits wide; freeze (writable while frozen), overflow
 * status and its message (number in the capability's bits 47:44).
 */
#define NFABRIC_CPMU_BIR            0           /* BAR0 */
#define NFABRIC_CPMU_OFFSET         0x20000
#define NFABRIC_CPMU_SIZE           0x1000
#define NFABRIC_REGLOC_RBI_CPMU     4
#define NFABRIC_CPMU_CONFIGURABLE   8           /* counters 0-7 */
#define NFABRIC_CPMU_FIXED          NFABRIC_ERR_MAX /* 8..: one per code */
#define NFABRIC_CPMU_COUNTERS       (NFABRIC_CPMU_CONFIGURABLE + NFABRIC_CPMU_FIXED)
#define NFABRIC_CPMU_WIDTH          48
#define NFABRIC_CPMU_VENDOR_ID      NFABRIC_PCI_VENDOR_ID
/* X(NAME, group ID, name, supported events mask) */
#define NFABRIC_CPMU_GROUPS(X) \
    X(DEVICE,      1, "device",       0xffffu) \
    X(REFUSALS,    2, "refusals",     (1u << NFABRIC_ERR_MAX) - 1)
/* Events of group DEVICE (bit numbers): */
#define NFABRIC_CPMU_EV_READS(p)        (0 + (p))   /* path p */
#define NFABRIC_CPMU_EV_WRITES(p)       (3 + (p))
#define NFABRIC_CPMU_EV_READ_BYTES(p)   (6 + (p))
#define NFABRIC_CPMU_EV_WRITE_BYTES(p)  (9 + (p))
#define NFABRIC_CPMU_EV_CONTRIB         12          /* a ROUND_COMPLETE taken */
#define NFABRIC_CPMU_EV_ROUND_DONE      13          /* a round seen ALL_DONE */
#define NFABRIC_CPMU_EV_ROUND_INCOMPLETE 14         /* a round seen INCOMPLETE */
#define NFABRIC_CPMU_EV_REFUSED         15          /* a refusal, any code */
#define NFABRIC_X_CPMU_GROUP_(name, gid, str, mask) \
    NFABRIC_CPMU_GROUP_##name = (gid),
#define NFABRIC_X_CPMU_COUNT_(name, gid, str, mask) + 1
enum {
    NFABRIC_CPMU_GROUPS(NFABRIC_X_CPMU_GROUP_)
    NFABRIC_CPMU_NUM_GROUPS = 0 NFABRIC_CPMU_GROUPS(NFABRIC_X_CPMU_COUNT_)
};
/* The block's registers (CXL r3.1 8.2.7.1-8.2.7.2), 64-bit each: */
#define NFABRIC_CPMU_REG_CAP            0x000
#define NFABRIC_CPMU_REG_OVERFLOW       0x010   /* write 1s: clear */
#define NFABRIC_CPMU_REG_FREEZE         0x018   /* bit n: counter n frozen */
#define NFABRIC_CPMU_REG_EVENT_CAP(n)   (0x100 + 8 * (n))
#define NFABRIC_CPMU_REG_COUNTER_CFG(n) (0x200 + 8 * (n))
#define NFABRIC_CPMU_REG_COUNTER(n)     (0xc00 + 8 * (n))
/* CAP: */
#define NFABRIC_CPMU_CAP_COUNTERS_MASK  0x3full            /* counters - 1 */
#define NFABRIC_CPMU_CAP_WIDTH_SHIFT    8
#define NFABRIC_CPMU_CAP_EVCAPS_SHIFT   20                 /* event caps - 1 */
#define NFABRIC_CPMU_CAP_MSGNUM_SHIFT   44                 /* 47:44 */
#define NFABRIC_CPMU_CAP_MSGNUM_MASK    (0xfull << 44)
#define NFABRIC_CPMU_CAP_WRITABLE_FROZEN (1ull << 48)
#define NFABRIC_CPMU_CAP_FREEZE         (1ull << 49)
#define NFABRIC_CPMU_CAP_INT            (1ull << 50)
#define NFABRIC_CPMU_CAP_VERSION_SHIFT  60
/* EVENT_CAP(n): 31:0 events supported, 47:32 group ID, 63:48 vendor ID. */
#define NFABRIC_CPMU_EVCAP_GID_SHIFT    32
#define NFABRIC_CPMU_EVCAP_VID_SHIFT    48
/* COUNTER_CFG(n): */
#define NFABRIC_CPMU_CFG_TYPE_MASK      0x3ull
#define NFABRIC_CPMU_CFG_TYPE_FIXED 1
#define NFABRIC_CPMU_CFG_TYPE_CONFIGURABLE 2
#define NFABRIC_CPMU_CFG_ENABLE         (1ull << 8)
#define NFABRIC_CPMU_CFG_INT            (1ull << 9)        /* on overflow */
#define NFABRIC_CPMU_CFG_FREEZE_OVF     (1ull << 10)       /* freeze all */
#define NFABRIC_CPMU_CFG_EDGE           (1ull << 11)
#define NFABRIC_CPMU_CFG_INVERT         (1ull << 12)
#define NFABRIC_CPMU_CFG_THRESHOLD_SHIFT 16                /* 23:16 */
#define NFABRIC_CPMU_CFG_EVENTS_SHIFT   24                 /* 55:24 */
#define NFABRIC_CPMU_CFG_EVENTS_MASK    (0xffffffffull << 24)
#define NFABRIC_CPMU_CFG_GROUP_SHIFT    59                 /* 63:59 */
#define NFABRIC_CPMU_CFG_GROUP_MASK     (0x1full << 59)
/*
 * What software may write: the rest is read-only or reserved (zero).  A
 * fixed counter's events and group are read-only too (what is written
 * there is ignored).
 */
#define NFABRIC_CPMU_CFG_CONTROL \
    (NFABRIC_CPMU_CFG_ENABLE | NFABRIC_CPMU_CFG_INT | \
     NFABRIC_CPMU_CFG_FREEZE_OVF | NFABRIC_CPMU_CFG_EDGE | \
     NFABRIC_CPMU_CFG_INVERT | (0xffull << NFABRIC_CPMU_CFG_THRESHOLD_SHIFT))
#define NFABRIC_CPMU_CFG_WRITABLE \
    (NFABRIC_CPMU_CFG_CONTROL | NFABRIC_CPMU_CFG_EVENTS_MASK | \
     NFABRIC_CPMU_CFG_GROUP_MASK)

/* JOB (1.4): this head's job, as the fabric manager set it. */
#define NFABRIC_JOB_INDEX_MASK          0x000000ffu /* the job's index */
#define NFABRIC_JOB_ASSIGNED            (1u << 8)   /* jobs are set */
#define NFABRIC_JOB_WINDOWS_SHIFT       16          /* the job's windows */
#define NFABRIC_JOB_WINDOWS_MASK        0xffff0000u

#define NFABRIC_CAPS_WINDOWS_MASK   0x000000ffu /* number of windows */
#define NFABRIC_CAPS_PATHS_SHIFT    8           /* bit 8+p: path p supported */
#define NFABRIC_CAPS_PATHS_MASK     0x0000ff00u
#define NFABRIC_CAPS_WIDTHS_SHIFT   16          /* bit 16+k: 8<<k bits */
#define NFABRIC_CAPS_WIDTHS_MASK    0x00ff0000u
#define NFABRIC_CAPS_TIES_SHIFT     24          /* bit 24+t: tie rule t */
#define NFABRIC_CAPS_TIES_MASK      0xff000000u
/* What CAPS reads: 16 windows, every path, 8- and 16-bit counters, ties. */
#define NFABRIC_CAPS_VALUE \
    ((uint32_t)NFABRIC_NUM_WINDOWS | \
     ((1u << NFABRIC_NUM_PATHS) - 1) << NFABRIC_CAPS_PATHS_SHIFT | \
     0x3u << NFABRIC_CAPS_WIDTHS_SHIFT | \
     ((1u << NFABRIC_NUM_TIES) - 1) << NFABRIC_CAPS_TIES_SHIFT)
/* What WIN_LAYOUT reads: offset of window 0 | stride << 16. */
#define NFABRIC_WIN_LAYOUT_VALUE \
    ((uint32_t)NFABRIC_REG_WIN_BASE | (uint32_t)NFABRIC_WIN_STRIDE << 16)

#define NFABRIC_CTRL_CLEAR_STATS    (1u << 0)   /* zero the statistics */
#define NFABRIC_CTRL_CLEAR_TIMING   (1u << 1)   /* zero timing accumulators */
#define NFABRIC_CTRL_CLEAR_ERROR    (1u << 2)   /* zero LAST_ERROR/ERROR_COUNT */
#define NFABRIC_CTRL_VALID          0x7u

/* ---- Statistics: per path, four u64 counters -------------------------- */
#define NFABRIC_STATS_STRIDE        0x20
#define NFABRIC_STATS_READS         0x00
#define NFABRIC_STATS_WRITES        0x08
#define NFABRIC_STATS_READ_BYTES    0x10
#define NFABRIC_STATS_WRITE_BYTES   0x18
#define NFABRIC_REG_STATS_PATH(p, field) \
    (NFABRIC_REG_STATS + (p) * NFABRIC_STATS_STRIDE + (field))
#define NFABRIC_REG_POOL_STATS_PATH(p, field) \
    (NFABRIC_REG_POOL_STATS + (p) * NFABRIC_STATS_STRIDE + (field))

/* ---- Timing model: per path ------------------------------------------- */
#define NFABRIC_T_PATH_STRIDE       0x10
#define NFABRIC_T_PATH_TIME_PS      0x00    /* u64 modelled time of the path, ps */
#define NFABRIC_T_PATH_EXPOSED_PS   0x08    /* u64 of which datapath-exposed, ps */
#define NFABRIC_REG_T_PATH_FIELD(p, field) \
    (NFABRIC_REG_T_PATH + (p) * NFABRIC_T_PATH_STRIDE + (field))
#define NFABRIC_REG_T_ACCESSES_PATH(p) (NFABRIC_REG_T_ACCESSES + (p) * 8)
#define NFABRIC_REG_HEAD_CONTRIB_WIN(i) (NFABRIC_REG_HEAD_CONTRIB + (i) * 8)

/* ---- Windows --------------------------------------------------------- */
#define NFABRIC_REG_WIN_BASE        0x400
#define NFABRIC_WIN_STRIDE          0x40
#define NFABRIC_REG_WIN(i, reg)     (NFABRIC_REG_WIN_BASE + \
                                     (i) * NFABRIC_WIN_STRIDE + (reg))

#define NFABRIC_WCTRL_ENABLE        (1u << 0)
#define NFABRIC_WCTRL_PATH_SHIFT    4
#define NFABRIC_WCTRL_PATH_MASK     (0xfu << NFABRIC_WCTRL_PATH_SHIFT)
#define NFABRIC_WCTRL_WIDTH_SHIFT   8       /* counter width in bits */
#define NFABRIC_WCTRL_WIDTH_MASK    (0xffu << NFABRIC_WCTRL_WIDTH_SHIFT)
#define NFABRIC_WCTRL_TIE_SHIFT     16
#define NFABRIC_WCTRL_TIE_MASK      (0xfu << NFABRIC_WCTRL_TIE_SHIFT)
/*
 * 1.7: the window's data range is each head's own staging buffer, plain
 * memory to its stores and loads; POST contributes a range of it, FETCH
 * writes the read-out into it (low-bit windows only).
 */
#define NFABRIC_WCTRL_POSTED        (1u << 20)
#define NFABRIC_WCTRL_VALID         (NFABRIC_WCTRL_ENABLE | \
                                     NFABRIC_WCTRL_PATH_MASK | \
                                     NFABRIC_WCTRL_WIDTH_MASK | \
                                     NFABRIC_WCTRL_TIE_MASK | \
                                     NFABRIC_WCTRL_POSTED)

#define NFABRIC_WCTRL(path, width, tie) \
    ((uint32_t)(path) << NFABRIC_WCTRL_PATH_SHIFT | \
     (uint32_t)(width) << NFABRIC_WCTRL_WIDTH_SHIFT | \
     (uint32_t)(tie) << NFABRIC_WCTRL_TIE_SHIFT)
/* The fields of a window's CTRL value. */
#define NFABRIC_WCTRL_PATH(ctrl) \
    (((ctrl) & NFABRIC_WCTRL_PATH_MASK) >> NFABRIC_WCTRL_PATH_SHIFT)
#define NFABRIC_WCTRL_WIDTH(ctrl) \
    (((ctrl) & NFABRIC_WCTRL_WIDTH_MASK) >> NFABRIC_WCTRL_WIDTH_SHIFT)
#define NFABRIC_WCTRL_TIE(ctrl) \
    (((ctrl) & NFABRIC_WCTRL_TIE_MASK) >> NFABRIC_WCTRL_TIE_SHIFT)

#define NFABRIC_WCMD_CLEAR          1u      /* start a new round */

/* ---- Rounds (version 1.1) --------------------------------------------- */
/*
 * Window i's round registers are at NFABRIC_REG_ROUND(i, reg); the round
 * state is the shared device's, the same for every head.
 */
#define NFABRIC_REG_ROUND_BASE      0x300
#define NFABRIC_ROUND_STRIDE        0x10
#define NFABRIC_REG_ROUND(i, reg)   (NFABRIC_REG_ROUND_BASE + \
                                     (i) * NFABRIC_ROUND_STRIDE + (reg))

/* ---- Posted windows (version 1.7) ------------------------------------ */
#define NFABRIC_REG_POST_BASE       0xc00
#define NFABRIC_POST_STRIDE         0x10
#define NFABRIC_REG_POST(i, reg)    (NFABRIC_REG_POST_BASE + \
                                     (i) * NFABRIC_POST_STRIDE + (reg))

#define NFABRIC_RSTAT_ALL_DONE      (1u << 0)   /* every head done or lost */
#define NFABRIC_RSTAT_INCOMPLETE    (1u << 1)   /* a contribution may be partial */
#define NFABRIC_RSTAT_DONE_SHIFT    8           /* [15:8] heads done */
#define NFABRIC_RSTAT_DONE_MASK     0x0000ff00u
#define NFABRIC_RSTAT_EXPECT_SHIFT  16          /* [23:16] heads expected */
#define NFABRIC_RSTAT_EXPECT_MASK   0x00ff0000u

/* ---- Names, from the tables ------------------------------------------- */
#define NFABRIC_X_CASE_STR_(n, v, str)  case (v): return str;
#define NFABRIC_X_CASE_ID_(n, v, str)   case (v): return #n;
/* A function from a table's values to one of its columns; NULL if none. */
#define NFABRIC_NAME_FN_(fn, table, column) \
    static inline const char *fn(unsigned v) \
    { \
        switch (v) { \
        table(column) \
        } \
        return (const char *)0; \
    }

/* "fp32", "gbinary", "gternary" */
NFABRIC_NAME_FN_(nfabric_path_str, NFABRIC_PATHS, NFABRIC_X_CASE_STR_)
/* "neg", "pos" */
NFABRIC_NAME_FN_(nfabric_tie_str, NFABRIC_TIES, NFABRIC_X_CASE_STR_)
/* "OVERLAP" etc., as docs/registers.md names an error code */
NFABRIC_NAME_FN_(nfabric_err_name, NFABRIC_ERRORS, NFABRIC_X_CASE_ID_)
/* what an error code means, in a few words */
NFABRIC_NAME_FN_(nfabric_err_text, NFABRIC_ERRORS, NFABRIC_X_CASE_STR_)

/* Bytes of counter area a window of data_size bytes needs. */
static inline uint64_t nfabric_counter_bytes(unsigned path, unsigned width_bits,
                                             uint64_t data_size)
{
    switch (path) {
    case NFABRIC_PATH_GBINARY:      /* 8 elements per byte */
        return data_size * 8 * (width_bits / 8);
    case NFABRIC_PATH_GTERNARY:     /* 4 elements per byte */
        return data_size * 4 * (width_bits / 8);
    default:
        return 0;
    }
}

#endif /* HW_MEM_NFABRIC_REGS_H */
