/* SPDX-License-Identifier: GPL-2.0-or-later OR MIT */
/*
 * NEURON-Fabric controller register layout.
 *
 * Shared by the QEMU device (hw/mem/nfabric/) and the guest library
 * (guest/lib/), like a kernel uapi header: plain C11, no QEMU or libc
 * dependencies beyond <stdint.h>.  docs/registers.md is the prose
 * specification of everything defined here; keep the two in step.
 *
 * The block lives at offset NFABRIC_REGS_OFFSET of BAR0 (the CXL component
 * register block), in the range the CXL specification leaves to the
 * implementation.  All registers are little-endian.  32-bit registers take
 * naturally aligned 32-bit accesses; 64-bit registers take naturally aligned
 * 64-bit accesses or two 32-bit accesses to their halves.
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

#define NFABRIC_MAGIC               0x4241464eu /* "NFAB" little-endian */
#define NFABRIC_VERSION_MAJOR       1
#define NFABRIC_VERSION_MINOR       1   /* 1.1: heads and rounds */
#define NFABRIC_VERSION \
    ((NFABRIC_VERSION_MAJOR << 16) | NFABRIC_VERSION_MINOR)

#define NFABRIC_NUM_WINDOWS         16
/* Window base, length and counter area are multiples of this. */
#define NFABRIC_ALIGN               64

/* ---- Paths ----------------------------------------------------------- */
#define NFABRIC_PATH_FP32           0
#define NFABRIC_PATH_GBINARY        1
#define NFABRIC_PATH_GTERNARY       2
#define NFABRIC_NUM_PATHS           3

/* ---- Tie rules (G-Binary read-out when an element's count is 0) ------- */
#define NFABRIC_TIE_NEGATIVE        0   /* count 0 reads as bit 0 */
#define NFABRIC_TIE_POSITIVE        1   /* count 0 reads as bit 1 */
#define NFABRIC_NUM_TIES            2

/* ---- G-Ternary element codes (2 bits per element) --------------------- */
#define NFABRIC_TERN_ZERO           0x0
#define NFABRIC_TERN_PLUS           0x1
#define NFABRIC_TERN_RESERVED       0x2
#define NFABRIC_TERN_MINUS          0x3

/* ---- Error codes (window ERROR, global LAST_ERROR) -------------------- */
#define NFABRIC_ERR_NONE            0
#define NFABRIC_ERR_OVERLAP         1   /* overlaps an enabled window/counters */
#define NFABRIC_ERR_RANGE           2   /* empty, wraps, or past device memory */
#define NFABRIC_ERR_ALIGN           3   /* base/size/counters not 64-byte aligned */
#define NFABRIC_ERR_PATH            4   /* unknown path */
#define NFABRIC_ERR_WIDTH           5   /* unsupported counter width */
#define NFABRIC_ERR_THRESHOLD       6   /* G-Ternary threshold 0 or > max count */
#define NFABRIC_ERR_TIE             7   /* unknown tie rule */
#define NFABRIC_ERR_BUSY            8   /* configuration write while enabled */
#define NFABRIC_ERR_READONLY        9   /* write to a read-only register */
#define NFABRIC_ERR_UNMAPPED        10  /* access to an undefined offset */
#define NFABRIC_ERR_ACCESS          11  /* bad access size or alignment */
#define NFABRIC_ERR_RESERVED_BITS   12  /* reserved bits set in a register */
#define NFABRIC_ERR_COMMAND         13  /* unknown command */
#define NFABRIC_ERR_ROUND           14  /* completes a round that is not current */
#define NFABRIC_ERR_HEAD            15  /* head index out of range */
#define NFABRIC_ERR_MAX             15

/* ---- Heads (version 1.1) --------------------------------------------- */
/*
 * A device may be shared by several hosts, each attached through its own
 * head (docs/multihost.md).  A device that is not shared has one head, 0.
 */
#define NFABRIC_MAX_HEADS           16

/* ---- Global registers ------------------------------------------------- */
#define NFABRIC_REG_MAGIC           0x000   /* u32 RO */
#define NFABRIC_REG_VERSION         0x004   /* u32 RO major<<16 | minor */
#define NFABRIC_REG_CAPS            0x008   /* u32 RO, see CAPS_* */
#define NFABRIC_REG_WIN_LAYOUT      0x00c   /* u32 RO offset | stride << 16 */
#define NFABRIC_REG_CTRL            0x010   /* u32 WO commands, reads 0 */
#define NFABRIC_REG_LAST_ERROR      0x014   /* u32 RO last register error */
#define NFABRIC_REG_ERROR_COUNT     0x018   /* u32 RO rejected register writes */
#define NFABRIC_REG_ENABLED_MASK    0x01c   /* u32 RO bit i: window i enabled */
#define NFABRIC_REG_MEM_SIZE        0x020   /* u64 RO device memory bytes */
/* Version 1.1: heads.  Per head: each head reads its own values. */
#define NFABRIC_REG_HEAD_INFO       0x028   /* u32 RO, see HEAD_INFO_* */
#define NFABRIC_REG_HEADS_LIVE      0x02c   /* u32 RO bit h: head h attached */
#define NFABRIC_REG_HEAD_SELECT     0x030   /* u32 RW head the HEAD_* window
                                               registers report, per head */
#define NFABRIC_REG_HEADS_LOST      0x034   /* u32 RO bit h: head h died */

#define NFABRIC_HEAD_INFO_INDEX_MASK    0x000000ffu /* this head's index */
#define NFABRIC_HEAD_INFO_COUNT_SHIFT   8           /* number of heads */
#define NFABRIC_HEAD_INFO_COUNT_MASK    0x0000ff00u
#define NFABRIC_HEAD_INFO_SHARED        (1u << 16)  /* shared by processes */

#define NFABRIC_CAPS_WINDOWS_MASK   0x000000ffu /* number of windows */
#define NFABRIC_CAPS_PATHS_SHIFT    8           /* bit 8+p: path p supported */
#define NFABRIC_CAPS_PATHS_MASK     0x0000ff00u
#define NFABRIC_CAPS_WIDTHS_SHIFT   16          /* bit 16+k: 8<<k bits */
#define NFABRIC_CAPS_WIDTHS_MASK    0x00ff0000u
#define NFABRIC_CAPS_TIES_SHIFT     24          /* bit 24+t: tie rule t */
#define NFABRIC_CAPS_TIES_MASK      0xff000000u

#define NFABRIC_CTRL_CLEAR_STATS    (1u << 0)   /* zero the statistics */
#define NFABRIC_CTRL_CLEAR_TIMING   (1u << 1)   /* zero timing accumulators */
#define NFABRIC_CTRL_CLEAR_ERROR    (1u << 2)   /* zero LAST_ERROR/ERROR_COUNT */
#define NFABRIC_CTRL_VALID          0x7u

/* ---- Statistics: per path, four u64 counters, all RO ------------------ */
#define NFABRIC_REG_STATS           0x100
#define NFABRIC_STATS_STRIDE        0x20
#define NFABRIC_STATS_READS         0x00
#define NFABRIC_STATS_WRITES        0x08
#define NFABRIC_STATS_READ_BYTES    0x10
#define NFABRIC_STATS_WRITE_BYTES   0x18
#define NFABRIC_REG_STATS_PATH(p, field) \
    (NFABRIC_REG_STATS + (p) * NFABRIC_STATS_STRIDE + (field))
/* Version 1.1: the same counters summed over every head of the device. */
#define NFABRIC_REG_POOL_STATS      0x180
#define NFABRIC_REG_POOL_STATS_PATH(p, field) \
    (NFABRIC_REG_POOL_STATS + (p) * NFABRIC_STATS_STRIDE + (field))

/* ---- Timing model ---------------------------------------------------- */
/* Parameters (u32 RO, set by the device's properties). */
#define NFABRIC_REG_T_CLOCK_MHZ     0x200   /* controller clock */
#define NFABRIC_REG_T_DEPTH         0x204   /* low-bit datapath depth, cycles */
#define NFABRIC_REG_T_SERVICE_NS    0x208   /* CXL service time per access */
#define NFABRIC_REG_T_LINK_MBPS     0x20c   /* link bandwidth, MB/s (10^6 B/s) */
/* Accumulated figures (RO). */
#define NFABRIC_REG_T_EXPOSED_PPM   0x210   /* u32 exposed/base, parts per million */
#define NFABRIC_REG_T_MAX_IN_FLIGHT 0x214   /* u32 most requests in flight */
#define NFABRIC_REG_T_TOTAL_PS      0x218   /* u64 modelled time, all paths, ps */
#define NFABRIC_REG_T_PATH          0x220   /* per path: */
#define NFABRIC_T_PATH_STRIDE       0x10
#define NFABRIC_T_PATH_TIME_PS      0x00    /* u64 modelled time of the path, ps */
#define NFABRIC_T_PATH_EXPOSED_PS   0x08    /* u64 of which datapath-exposed, ps */
#define NFABRIC_REG_T_PATH_FIELD(p, field) \
    (NFABRIC_REG_T_PATH + (p) * NFABRIC_T_PATH_STRIDE + (field))
/* Queue figures of the model (RO). */
#define NFABRIC_REG_T_RUNTIME_PS    0x250   /* u64 first arrival to last completion */
#define NFABRIC_REG_T_QUEUED_PS     0x258   /* u64 sum of waits for the link */
#define NFABRIC_REG_T_LINK_BUSY_PS  0x260   /* u64 sum of link occupancy */
#define NFABRIC_REG_T_MAX_QUEUED    0x268   /* u32 most requests waiting for the link */
#define NFABRIC_REG_T_ACCESSES      0x270   /* u64 per path: accesses accounted */
#define NFABRIC_REG_T_ACCESSES_PATH(p) (NFABRIC_REG_T_ACCESSES + (p) * 8)

/* ---- Windows --------------------------------------------------------- */
#define NFABRIC_REG_WIN_BASE        0x400
#define NFABRIC_WIN_STRIDE          0x40
#define NFABRIC_REG_WIN(i, reg)     (NFABRIC_REG_WIN_BASE + \
                                     (i) * NFABRIC_WIN_STRIDE + (reg))

#define NFABRIC_WIN_DPA_BASE        0x00    /* u64 RW data base (DPA) */
#define NFABRIC_WIN_DPA_SIZE        0x08    /* u64 RW data length, bytes */
#define NFABRIC_WIN_COUNTERS        0x10    /* u64 RW counter area (DPA) */
#define NFABRIC_WIN_CTRL            0x18    /* u32 RW, see WCTRL_* */
#define NFABRIC_WIN_THRESHOLD       0x1c    /* u32 RW G-Ternary gate T */
#define NFABRIC_WIN_CMD             0x20    /* u32 WO, see WCMD_*, reads 0 */
#define NFABRIC_WIN_ERROR           0x24    /* u32 RO last error of window */
#define NFABRIC_WIN_CONTRIB_WRITES  0x28    /* u64 RO writes since clear */
#define NFABRIC_WIN_CONTRIB_BYTES   0x30    /* u64 RO bytes since clear */
#define NFABRIC_WIN_RESERVED_CODES  0x38    /* u32 RO reserved ternary codes */

#define NFABRIC_WCTRL_ENABLE        (1u << 0)
#define NFABRIC_WCTRL_PATH_SHIFT    4
#define NFABRIC_WCTRL_PATH_MASK     (0xfu << NFABRIC_WCTRL_PATH_SHIFT)
#define NFABRIC_WCTRL_WIDTH_SHIFT   8       /* counter width in bits */
#define NFABRIC_WCTRL_WIDTH_MASK    (0xffu << NFABRIC_WCTRL_WIDTH_SHIFT)
#define NFABRIC_WCTRL_TIE_SHIFT     16
#define NFABRIC_WCTRL_TIE_MASK      (0xfu << NFABRIC_WCTRL_TIE_SHIFT)
#define NFABRIC_WCTRL_VALID         (NFABRIC_WCTRL_ENABLE | \
                                     NFABRIC_WCTRL_PATH_MASK | \
                                     NFABRIC_WCTRL_WIDTH_MASK | \
                                     NFABRIC_WCTRL_TIE_MASK)

#define NFABRIC_WCTRL(path, width, tie) \
    ((uint32_t)(path) << NFABRIC_WCTRL_PATH_SHIFT | \
     (uint32_t)(width) << NFABRIC_WCTRL_WIDTH_SHIFT | \
     (uint32_t)(tie) << NFABRIC_WCTRL_TIE_SHIFT)

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

#define NFABRIC_ROUND_SEQ           0x00    /* u32 RO round number */
#define NFABRIC_ROUND_DONE          0x04    /* u32 RO bit h: head h completed */
#define NFABRIC_ROUND_STATUS        0x08    /* u32 RO, see RSTAT_* */
#define NFABRIC_ROUND_COMPLETE      0x0c    /* u32 WO write SEQ: this head done */

/*
 * u64 RO: writes of the head selected by HEAD_SELECT to window i since the
 * window's last clear (per-head contribution counts).
 */
#define NFABRIC_REG_HEAD_CONTRIB    0x040
#define NFABRIC_REG_HEAD_CONTRIB_WIN(i) (NFABRIC_REG_HEAD_CONTRIB + (i) * 8)

#define NFABRIC_RSTAT_ALL_DONE      (1u << 0)   /* every head done or lost */
#define NFABRIC_RSTAT_INCOMPLETE    (1u << 1)   /* a contribution may be partial */
#define NFABRIC_RSTAT_DONE_SHIFT    8           /* [15:8] heads done */
#define NFABRIC_RSTAT_DONE_MASK     0x0000ff00u
#define NFABRIC_RSTAT_EXPECT_SHIFT  16          /* [23:16] heads expected */
#define NFABRIC_RSTAT_EXPECT_MASK   0x00ff0000u

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
