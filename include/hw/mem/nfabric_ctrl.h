/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * NEURON-Fabric controller model: the register block, the path-select table
 * and the CXL.mem path, over a device memory the caller owns.
 *
 * Pure C11, no QEMU headers: the QEMU device (cxl_nfabric.c) wraps it in
 * MemoryRegions, and the host unit tests and fuzzers drive it directly.
 * docs/registers.md specifies the behaviour.  One NFabricCtrl is one head
 * of a device: its own registers (errors, timing, HEAD_SELECT) live here,
 * the device's (windows, rounds, statistics of every head) in an
 * NFabricShared, private to the head (nfabric_ctrl_init) or shared with the
 * device's other heads in other processes (nfabric_ctrl_use_shared).  Calls
 * on one NFabricCtrl are serialised by the caller (QEMU holds the BQL);
 * calls of different heads of one shared device may run at the same time
 * in different processes (docs/multihost.md).
 */
#ifndef HW_MEM_NFABRIC_CTRL_H
#define HW_MEM_NFABRIC_CTRL_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "hw/mem/nfabric_engine.h"
#include "hw/mem/nfabric_regs.h"
#include "hw/mem/nfabric_shared.h"
#include "hw/mem/nfabric_timing.h"
#include "hw/mem/nfabric_record.h"
#include "hw/mem/nfabric_window.h"

typedef enum NFabricWinEvent {
    NFABRIC_WIN_EV_ENABLE,
    NFABRIC_WIN_EV_REJECT,
    NFABRIC_WIN_EV_DISABLE,
    NFABRIC_WIN_EV_CLEAR,
    /* A clear begins: its round is INCOMPLETE until it ends (tests). */
    NFABRIC_WIN_EV_CLEAR_BEGIN,
} NFabricWinEvent;

/* What the controller tells its owner.  Any hook may be NULL. */
typedef struct NFabricCtrlOps {
    /* Device memory [dpa, dpa + len) changed (migration dirty tracking). */
    void (*dirty)(void *opaque, uint64_t dpa, uint64_t len);
    /* A register access was rejected with code (log it as a guest error). */
    void (*guest_error)(void *opaque, uint64_t off, uint32_t code,
                        const char *what);
    /* Tracing. */
    void (*reg_access)(void *opaque, bool write, uint64_t off, unsigned size,
                       uint64_t val);
    void (*window)(void *opaque, NFabricWinEvent ev, unsigned win,
                   uint32_t code);
    /* Writing the access-stream record failed; recording stopped. */
    void (*record_failed)(void *opaque);
    /*
     * What nfabric_ctrl_trap_ranges() returns changed other than by an
     * enable or disable event: the fabric manager's assignment moved, or
     * this head is enabling a window (the map protocol: the owner traps
     * it at once, before the others are waited for).
     */
    void (*traps_changed)(void *opaque);
    /*
     * The map protocol's wait for the other heads (up to
     * NFABRIC_SHARED_MAP_MS) begins and ends: the owner may let other
     * threads in meanwhile (QEMU drops its big lock, so that its own map
     * updates and QMP go on); the controller touches nothing of s but its
     * own locals in between.
     */
    void (*wait_begin)(void *opaque);
    void (*wait_end)(void *opaque);
    /*
     * The shared device's state file is unusable (why says how: corrupted,
     * truncated, made anew): from now on this head refuses the device's
     * accesses (docs/multihost.md).  Called once.  Without the hook the
     * controller prints why to stderr.
     */
    void (*state_failed)(void *opaque, const char *why);
    /*
     * With the RTL comparing (NFABRIC_RTL_COMPARE): the RTL and the engine
     * differ on an access of window win at window byte off (len bytes);
     * what says how (the first differing byte, both values).  The access
     * was dropped: counters as before it, a read returns zeros.
     */
    void (*rtl_mismatch)(void *opaque, unsigned win, bool write, uint64_t off,
                         unsigned len, const char *what);
    /*
     * This head's staging [dpa, dpa + len) changed by the device (a FETCH
     * wrote a read-out there, or a staging access on the I/O path): as
     * dirty for the staging memory what dirty is for device memory.
     */
    void (*staging_dirty)(void *opaque, uint64_t dpa, uint64_t len);
} NFabricCtrlOps;

/*
 * The low-bit datapath in RTL (hw/rtl/nfrtl.h, loaded by the device), with
 * the engine's signatures: NFABRIC_RTL_SERVE serves every low-bit access
 * through it instead of the engine; NFABRIC_RTL_COMPARE serves through the
 * engine and runs the RTL beside it on a copy of the counters, and the
 * first difference (return value, a counter byte, a read-out byte) drops
 * the access and calls ops->rtl_mismatch (docs/rtl.md).
 */
typedef enum NFabricRtlMode {
    NFABRIC_RTL_OFF = 0,
    NFABRIC_RTL_SERVE,
    NFABRIC_RTL_COMPARE,
} NFabricRtlMode;

typedef struct NFabricRtlOps {
    int64_t (*agg_write)(void *rtl, const NFabricAggCfg *cfg, void *counters,
                         uint64_t off, const uint8_t *data, size_t len);
    int (*agg_read)(void *rtl, const NFabricAggCfg *cfg, const void *counters,
                    uint64_t off, uint8_t *out, size_t len);
} NFabricRtlOps;

/*
 * A head's private copy of the window table, made from the shared table
 * and validated before any of it is used (nfabric_jobs.c): the memory path
 * works only from it, so nothing another head or a corrupted state file
 * wrote can send an access outside device memory.
 */
typedef struct NFabricView {
    uint32_t gen;               /* its job's sequence count it copies */
    unsigned job;               /* whose windows (the head's job) */
    bool valid;
    uint32_t mask;              /* enabled windows */
    uint64_t base[NFABRIC_NUM_WINDOWS];
    uint64_t size[NFABRIC_NUM_WINDOWS];
    uint64_t counters[NFABRIC_NUM_WINDOWS];
    uint64_t clen[NFABRIC_NUM_WINDOWS];     /* counter area bytes */
    NFabricAggCfg cfg[NFABRIC_NUM_WINDOWS];
    uint32_t posted;            /* of mask, the posted windows (1.7) */
    uint32_t pmask;             /* windows being enabled (map protocol) */
    NFabricWindowCfg pend[NFABRIC_NUM_WINDOWS];
    uint64_t pclen[NFABRIC_NUM_WINDOWS];
} NFabricView;

/*
 * A head's private copy of the fabric manager's assignment (its job, the
 * job's windows and heads, the memory ranges this head reaches), made and
 * checked (nfabric_fm_check) whenever the assignment's sequence count
 * moved; only this copy is used.
 */
typedef struct NFabricFmView {
    uint32_t gen;
    bool valid;
    bool assigned;              /* false: one job of all, no checks */
    uint32_t job;
    uint32_t windows;           /* the job's window slots */
    uint32_t job_heads;         /* the job's heads */
    unsigned n;                 /* ranges this head reaches */
    unsigned last;              /* the range the last access hit */
    uint64_t base[NFABRIC_FM_MAX_RANGES];
    uint64_t end[NFABRIC_FM_MAX_RANGES];
    unsigned nown;              /* of which this head's alone, by address */
    uint64_t own_base[NFABRIC_FM_MAX_RANGES];
    uint64_t own_end[NFABRIC_FM_MAX_RANGES];
} NFabricFmView;

/*
 * A head's CXL PMU (register version 1.9, nfabric_cpmu.c).  total[] counts
 * every event of this head since reset, whatever the counters do; a
 * counter's value is value[n] plus what its events' total grew by since
 * seen[n] was taken (while it runs), folded in whenever its configuration,
 * the freeze or a counter is written and when overflow is looked for.
 */
typedef struct NFabricCpmu {
    uint64_t total[NFABRIC_CPMU_NUM_GROUPS][32];   /* [group - 1][event] */
    uint64_t cfg[NFABRIC_CPMU_COUNTERS];           /* the writable bits */
    uint64_t value[NFABRIC_CPMU_COUNTERS];
    uint64_t seen[NFABRIC_CPMU_COUNTERS];
    uint64_t overflow;                             /* OVERFLOW */
    uint64_t freeze;                               /* FREEZE */
    uint32_t round_seq[NFABRIC_NUM_WINDOWS];       /* rounds seen ended */
    uint8_t round_seen[NFABRIC_NUM_WINDOWS];
    uint32_t msgnum;        /* the overflow message (1..15); 0: none */
    bool irq_due;           /* an overflow asked for it, not yet sent */
} NFabricCpmu;

typedef struct NFabricCtrl {
    /* Device memory, owned by the caller. */
    uint8_t *ram;
    uint64_t ram_size;
    /*
     * This head's staging memory for posted windows (nfabric_posted.c),
     * ram_size bytes at the same offsets as device memory, owned by the
     * caller and private to this head; NULL: the head has none, and a
     * posted window is refused (POSTED).
     */
    uint8_t *staging;
    const NFabricCtrlOps *ops;
    void *opaque;

    /*
     * The device's state: &local, or a state file's mapping shared with the
     * other heads.  stats points at this head's statistics in it.
     */
    NFabricShared *sh;
    unsigned head;
    uint64_t (*stats)[NFABRIC_NUM_STATS];
    bool shared;                /* sh is a state file's mapping */
    uint32_t lock_token;        /* this head's token for the stripe locks */
    uint32_t heads;             /* the device's heads, as attached */
    NFabricView view;
    NFabricFmView fm;           /* the fabric manager's jobs, as checked */
    unsigned faults_seen;       /* nfabric_shared_faults() last checked */
    /*
     * The state file was found unusable: every access of the device is
     * refused (HEAD_INFO.STATE_FAILED, error STATE) until the process
     * attaches again.  failure says why.
     */
    bool failed;
    char failure[256];

    /* This head's own registers (the device migrates these). */
    uint32_t last_error;
    uint32_t error_count;
    uint32_t head_select;
    uint32_t stage_off[NFABRIC_NUM_WINDOWS];    /* STAGE_OFF (1.7) */
    /* Interrupts (1.8, nfabric_irq.c): the registers, what rounds showed. */
    uint32_t irq_msgnum;
    uint32_t irq_enable, irq_status;
    uint32_t irq_head_enable, irq_head_status;
    uint32_t irq_seq[NFABRIC_NUM_WINDOWS];
    uint8_t irq_seen[NFABRIC_NUM_WINDOWS];
    bool irq_failed_seen;
    /* Faults as CXL events (nfabric_faults.c): what was reported. */
    bool fault_primed;
    uint32_t fault_lost_seen;
    uint32_t fault_inc_seq[NFABRIC_NUM_WINDOWS];
    uint32_t fault_inc_reported;
    bool fault_failed_seen;
    int fault_peer_win;                 /* a PEER give-up to report, or -1 */
    NFabricCpmu cpmu;                   /* the CXL PMU (1.9) */
    NFabricTiming timing;

    /*
     * Optional record of the access stream (docs/timing.md), written in
     * the order the timing model sees it; the owner opens it and writes
     * the header.  record_failed is set, recording stops and ops->
     * record_failed is called once if a write fails.
     */
    FILE *record;
    bool record_failed;
    uint64_t record_lost;       /* records not written since the failure */

    /*
     * The RTL datapath (nfabric_ctrl_set_rtl): mode, its calls, the model;
     * accesses it ran and differences it showed (compare mode).
     */
    NFabricRtlMode rtl_mode;
    const NFabricRtlOps *rtl_ops;
    void *rtl;
    uint64_t rtl_accesses;
    uint64_t rtl_mismatches;

    /*
     * The map protocol (a shared head): map_join, this head maps memory
     * directly (nfabric_ctrl_map_join); an enable this head began under the
     * configuration lock and finishes after it (map_win >= 0: window,
     * configuration and the map_gen the others must reach); a pending
     * window it could not give up (map_abort >= 0).
     */
    bool map_join;
    int map_win;
    int map_abort;
    unsigned locked_job;        /* the job lock this head holds (if any) */
    uint32_t map_target;
    uint32_t map_val;
    uint64_t map_off;           /* the CTRL register's offset */
    NFabricWindowCfg map_cfg;
    uint32_t map_late;          /* heads that did not answer, last time */

    /* The state of a device that is not shared (migrated with it). */
    NFabricShared local;
} NFabricCtrl;

extern const char *const nfabric_path_names[NFABRIC_NUM_PATHS];

/* Set up over ram (checked timing parameters) and reset: one private head. */
void nfabric_ctrl_init(NFabricCtrl *s, uint8_t *ram, uint64_t ram_size,
                       const NFabricTimingParams *tp,
                       const NFabricCtrlOps *ops, void *opaque);
/*
 * Serve low-bit accesses through the RTL (mode SERVE), or compare it with
 * the engine on every one (COMPARE); OFF (or ops NULL) is the engine alone.
 * Accesses of up to 8 bytes (the CXL.mem path's) go through the RTL; a
 * longer one (a host transport's) is served by the engine alone.
 */
void nfabric_ctrl_set_rtl(NFabricCtrl *s, NFabricRtlMode mode,
                          const NFabricRtlOps *ops, void *rtl);
/*
 * Give the head staging memory for posted windows (ram_size bytes, or NULL
 * for none: a posted enable is then refused with POSTED).  Before any
 * window is enabled.
 */
void nfabric_ctrl_set_staging(NFabricCtrl *s, uint8_t *staging);
/*
 * Interrupts (register version 1.8): the message number IRQ_MSGNUM reads
 * (NFABRIC_IRQ_MSGNUM_NONE, the default: the device sends none).  Set once
 * at realize; kept by reset.
 */
void nfabric_ctrl_set_irq(NFabricCtrl *s, uint32_t msgnum);
/*
 * Look at the rounds and at this head's state for events its guest enabled
 * (IRQ_ENABLE, IRQ_HEAD_ENABLE) that happened since the last look, and set
 * their status bits.  True if the owner should send the message.  Call it
 * after each register write of this head and whenever the shared state's
 * event_gen moves (nfabric_shared_event_wait), and every 100 ms or so
 * while an interrupt is enabled (dead heads are found by looking).
 */
bool nfabric_ctrl_irq_scan(NFabricCtrl *s);

/*
 * The CXL PMU block (register version 1.9, docs/registers.md "The CXL
 * PMU"): its overflow message number (1..15; 0, the default: none, and
 * the capability register says the block has no interrupt), set once at
 * realize and kept by reset; reads and writes of its registers (offsets
 * in the block; 4- or 8-byte, naturally aligned); a look for counters
 * that overflowed, true if the overflow message is due (call it after
 * every access of the block and now and then while
 * nfabric_ctrl_cpmu_ticking() says a counter could overflow unseen).
 */
void nfabric_ctrl_set_cpmu_irq(NFabricCtrl *s, uint32_t msgnum);
uint64_t nfabric_ctrl_cpmu_read(NFabricCtrl *s, uint64_t off, unsigned size);
void nfabric_ctrl_cpmu_write(NFabricCtrl *s, uint64_t off, uint64_t val,
                             unsigned size);
bool nfabric_ctrl_cpmu_check(NFabricCtrl *s);
bool nfabric_ctrl_cpmu_ticking(const NFabricCtrl *s);

/*
 * A fault this head saw (nfabric_ctrl_faults): what its owner logs as a
 * CXL event record (NFABRIC_EVENT_* in nfabric_regs.h).
 */
typedef struct NFabricFault {
    uint8_t kind;               /* NFABRIC_EVENT_HEAD_LOST, ... */
    uint8_t head;               /* the head concerned, or NFABRIC_EVENT_NONE */
    uint8_t window;             /* or NFABRIC_EVENT_NONE */
    uint32_t seq;               /* the window's round (0 without a window) */
    uint32_t code;              /* NFABRIC_ERR_* (0: none) */
} NFabricFault;

/*
 * The faults seen since the last call (at most max, into out; the rest
 * the next time): heads whose process died (found by a reap this does),
 * rounds of this head's job that became INCOMPLETE with a contribution
 * missing (a contributor that did not complete), this head's state
 * failing, an enable of this head's given up with PEER.  Each fault once.
 * A device that is not shared has only the last two.  Call it when the
 * interrupt's scan is called.
 */
unsigned nfabric_ctrl_faults(NFabricCtrl *s, NFabricFault *out, unsigned max);
/*
 * Use the shared state sh (nfabric_shared_attach) as head head, instead of
 * the private state.  Call after nfabric_ctrl_init.
 */
void nfabric_ctrl_use_shared(NFabricCtrl *s, NFabricShared *sh, unsigned head);
/*
 * A reset of this head: every register to its documented default.  On a
 * private device that disables every window; on a shared one only this
 * head's own registers and statistics are reset (the windows and rounds
 * belong to every head).
 */
void nfabric_ctrl_reset(NFabricCtrl *s);

/* A register access at offset off of the block (any size, any offset). */
uint64_t nfabric_ctrl_reg_read(NFabricCtrl *s, uint64_t off, unsigned size);
void nfabric_ctrl_reg_write(NFabricCtrl *s, uint64_t off, uint64_t val,
                            unsigned size);
/*
 * An access at offset off of the designated vendor specific block's header
 * page (the first NFABRIC_DVS_REGS bytes of the block the Register Locator
 * names; the controller's registers follow it): the header's 32-bit fields
 * read as nfabric_regs.h gives them; any other read, and every write, is
 * refused with an error status as a register access would be.
 */
uint64_t nfabric_ctrl_dvs_read(NFabricCtrl *s, uint64_t off, unsigned size);
void nfabric_ctrl_dvs_write(NFabricCtrl *s, uint64_t off, uint64_t val,
                            unsigned size);
/*
 * The value a read would return, without its side effects (no error
 * status, no trace): false if the read would be rejected.  For QMP.
 */
bool nfabric_ctrl_reg_peek(NFabricCtrl *s, uint64_t off, unsigned size,
                           uint64_t *val);

/*
 * A CXL.mem access of len (1..8) bytes at dpa; buf holds the bytes in
 * memory order.  Returns false (and does nothing) if the range is not
 * inside device memory or len is 0 or over 8.
 */
bool nfabric_ctrl_mem_access(NFabricCtrl *s, uint64_t dpa, uint8_t *buf,
                             unsigned len, bool write);

/*
 * A range [dpa, dpa + len) of device memory; staging: the data range of a
 * posted window, which the owner maps to this head's staging memory at the
 * same offset instead of trapping it.
 */
typedef struct NFabricRange {
    uint64_t dpa;
    uint64_t len;
    bool staging;
} NFabricRange;

/*
 * At most one data range and one counter area per window (enabled or
 * being enabled), and on a shared head the gaps around the ranges it
 * reaches (one more than there are ranges).
 */
#define NFABRIC_MAX_TRAPS (2 * NFABRIC_NUM_WINDOWS + NFABRIC_FM_MAX_RANGES + 1)

/*
 * The ranges of device memory whose accesses must reach
 * nfabric_ctrl_mem_access() to keep their semantics: the data range and
 * the counter area of every enabled G-Binary or G-Ternary window and, if
 * fp32, the data range of every enabled FP32 window.  On a head of a
 * shared device also those of every window another head is enabling (the
 * map protocol: nfabric_ctrl_map_join), the memory outside the ranges a
 * fabric manager let this head reach, and all of it if its state failed.  The
 * rest is plain memory, which an owner may let the CPU access directly
 * (the device's direct map, docs/device.md): such accesses are byte-exact
 * but not seen by the statistics, the timing model or the record.  Writes
 * the ranges to out (room for NFABRIC_MAX_TRAPS; they may overlap) and
 * returns their number.  A device that is not shared: reads the table
 * without its locks (it changes only under the caller's serialisation);
 * a shared head: its checked copies of the table and of the assignment.
 */
unsigned nfabric_ctrl_trap_ranges(NFabricCtrl *s, bool fp32,
                                  NFabricRange *out);

/*
 * The map protocol (docs/multihost.md, "Direct maps"), for a shared head
 * whose owner maps device memory directly.  map_join: from now on an
 * enable by another head of its job waits (bounded) until this head's
 * map_ack reaches the enable's map_gen; call it before the first
 * nfabric_ctrl_trap_ranges().  To update the map: g = map_gen(), then
 * trap_ranges(), change the map, then map_ack(g).  nfabric_shared_map_wait()
 * tells when map_gen moves.  No-ops for a device that is not shared.
 */
void nfabric_ctrl_map_join(NFabricCtrl *s);
uint32_t nfabric_ctrl_map_gen(NFabricCtrl *s);
void nfabric_ctrl_map_ack(NFabricCtrl *s, uint32_t gen);

/*
 * After local.win[] and the other fields were loaded (migration): re-validate
 * every window whose CTRL has ENABLE set and rebuild the derived state.
 * Returns 0, or -1 if a window does not validate (state is then unusable).
 */
int nfabric_ctrl_post_load(NFabricCtrl *s);

#endif /* HW_MEM_NFABRIC_CTRL_H */
