/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Shared declarations of the guest tests (nfabric-test).  The TAP counters
 * of tests/tap.h live in test_main.c; the other files report through
 * CHECK().  Layout of device memory used by the tests: docs/guest.md.
 */
#ifndef NFABRIC_GUEST_GT_H
#define NFABRIC_GUEST_GT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "libnfabric.h"

int gt_check_at(int ok, const char *file, int line, const char *fmt, ...);
#define CHECK(cond, ...) gt_check_at(!!(cond), __FILE__, __LINE__, __VA_ARGS__)
void gt_diag(const char *fmt, ...);
/* A line of the human-readable summary ("summary: ..."). */
void gt_summary(const char *fmt, ...);

/* The opened device; have_regs is false on a stock cxl-type3. */
extern nfabric_dev *gt_dev;
extern bool gt_have_regs;
extern uint64_t gt_seed;
/* Number of worker processes of the aggregation tests (K). */
#define GT_WORKERS 4

/* Report (as one failed check) that a group needs the register block. */
bool gt_need_regs(const char *group);

/* ---- access helpers: one access of size bytes (x86: any alignment) ---- */
static inline void gt_st(volatile void *p, unsigned size, uint64_t v)
{
    switch (size) {
    case 1: *(volatile uint8_t *)p = (uint8_t)v; break;
    case 2: *(volatile uint16_t *)p = (uint16_t)v; break;
    case 4: *(volatile uint32_t *)p = (uint32_t)v; break;
    default: *(volatile uint64_t *)p = v; break;
    }
}

static inline uint64_t gt_ld(const volatile void *p, unsigned size)
{
    switch (size) {
    case 1: return *(const volatile uint8_t *)p;
    case 2: return *(const volatile uint16_t *)p;
    case 4: return *(const volatile uint32_t *)p;
    default: return *(const volatile uint64_t *)p;
    }
}

/* Copy len bytes with accesses of size bytes (len a multiple of size). */
void gt_write_bytes(volatile uint8_t *dst, const uint8_t *src, size_t len,
                    unsigned size);
void gt_read_bytes(uint8_t *dst, const volatile uint8_t *src, size_t len,
                   unsigned size);

uint64_t gt_rand(uint64_t *state);          /* splitmix64 */
double gt_uniform(uint64_t *state);         /* [-1, 1) */
double gt_now(void);                        /* seconds, monotonic */

/* Device memory at DPA dpa (the test fails if it is not mapped). */
volatile uint8_t *gt_mem(uint64_t dpa, uint64_t len);

/*
 * Run fn(contributor, arg) for contributors 0..n-1 in GT_WORKERS forked
 * processes (worker w takes w, w + K, ...).  Returns true if every worker
 * exited 0.
 */
bool gt_fork_workers(unsigned n, int (*fn)(unsigned j, void *arg), void *arg);

/* ---- plain reference of the aggregation semantics (ref.c) ------------- */
int32_t ref_max(unsigned width);
int32_t ref_min(unsigned width);
/* Apply one write of len packed bytes at window byte off; returns the
 * number of reserved ternary codes in it. */
uint64_t ref_apply(unsigned path, unsigned width, int32_t *sums, uint64_t off,
                   const uint8_t *data, size_t len);
void ref_readout(unsigned path, unsigned tie, uint32_t threshold,
                 const int32_t *sums, uint64_t off, uint8_t *out, size_t len);
/* Elements per packed byte: 8 (G-Binary) or 4 (G-Ternary). */
unsigned ref_epb(unsigned path);

/* ---- the groups ------------------------------------------------------- */
void gt_group_fp32(void);
void gt_group_gbinary(void);
void gt_group_gternary(void);
void gt_group_mixed(void);
void gt_group_config(void);
void gt_group_stats(void);
void gt_group_sysram(void);
void gt_group_devices(void);
void gt_group_toggle(void);
void gt_group_posted(void);
void gt_group_cpmu(void);
/* nfabric-test --cpmu-load PATH: the cpmu group's workload under perf. */
int gt_cpmu_load_main(int argc, char **argv);

#endif /* NFABRIC_GUEST_GT_H */
