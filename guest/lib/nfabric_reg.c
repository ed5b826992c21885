/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * libnfabric: the register block.  It owns register access (nfabric_rd32
 * and the others: through the mapping, or the transport's functions), a
 * register write judged by the device (nfl_judged), windows (set, disable,
 * clear, reset, get, check, with the check of the memory a window covers),
 * CTRL commands, statistics and the timing model's figures.  It may call
 * libnfabric.c (nfl_fail), nfabric_find.c (the region of the device's
 * memdev), the path-select table's rules (hw/mem/nfabric/nfabric_window.c)
 * and the driver's checks (guest/kernel/uapi/nfabric_checks.h).
 */
#include "nfabric_priv.h"
#include "hw/mem/nfabric_window.h"
#include "../kernel/uapi/nfabric_checks.h"

#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>

/* ---- registers ------------------------------------------------------- */

uint32_t nfabric_rd32(const nfabric_dev *d, uint32_t off)
{
    if (nfl_by_calls(d)) {
        return d->xport->rd32(d->xport_priv, off);
    }
    return *(volatile uint32_t *)(d->regs + off);
}

void nfabric_wr32(const nfabric_dev *d, uint32_t off, uint32_t v)
{
    if (nfl_by_calls(d)) {
        d->xport->wr32(d->xport_priv, off, v);
        return;
    }
    *(volatile uint32_t *)(d->regs + off) = v;
}

uint64_t nfabric_rd64(const nfabric_dev *d, uint32_t off)
{
    uint64_t lo = nfabric_rd32(d, off);
    uint64_t hi = nfabric_rd32(d, off + 4);

    return lo | hi << 32;
}

void nfabric_wr64(const nfabric_dev *d, uint32_t off, uint64_t v)
{
    nfabric_wr32(d, off, (uint32_t)v);
    nfabric_wr32(d, off + 4, (uint32_t)(v >> 32));
}

unsigned nfabric_num_windows(const nfabric_dev *d)
{
    unsigned n = d->caps & NFABRIC_CAPS_WINDOWS_MASK;

    return n > NFABRIC_NUM_WINDOWS ? NFABRIC_NUM_WINDOWS : n;
}

static int need_regs(nfabric_dev *d)
{
    if (!nfl_has_regs(d)) {
        return nfl_fail(d, NFLIB_ENOREGS, "no register block mapped");
    }
    return 0;
}

/*
 * A register write, judged by the device: if its error count moved, the
 * write was refused and the window's (else the global) error is returned.
 */
int nfl_judged(nfabric_dev *d, unsigned win, uint32_t before, const char *what)
{
    uint32_t err;

    if (nfabric_rd32(d, NFABRIC_REG_ERROR_COUNT) == before) {
        return 0;
    }
    err = win < NFABRIC_NUM_WINDOWS ?
        nfabric_rd32(d, NFABRIC_REG_WIN(win, NFABRIC_WIN_ERROR)) : 0;
    if (!err) {
        err = nfabric_rd32(d, NFABRIC_REG_LAST_ERROR);
    }
    if (!err) {
        err = NFABRIC_ERR_MAX + 1;
    }
    return nfl_fail(d, (int)err, "%s refused by the device (error %u)", what, err);
}

int nfl_check_win(nfabric_dev *d, unsigned i)
{
    int rc = need_regs(d);

    if (rc) {
        return rc;
    }
    if (i >= nfabric_num_windows(d)) {
        return nfl_fail(d, NFLIB_EINVAL, "window %u: the device has %u windows", i,
                    nfabric_num_windows(d));
    }
    return 0;
}

/*
 * Where device memory sits in the guest: the region of our memdev (its HPA
 * and size, the DPA its endpoint decoder starts at, its interleave ways).
 * 0 if there is one, 1 if there is none; an interleaved region is a span
 * of 2 ways (nfl_find_region refuses it, so its addresses are unknown) and
 * *why says which.
 */
static int region_of_memdev(const nfabric_dev *d, struct nfabric_mem_span *span,
                            char *why, size_t whylen)
{
    nfabric_dev t;
    char path[PATH_MAX];
    int rc;

    memset(&t, 0, sizeof(t));
    memset(span, 0, sizeof(*span));
    snprintf(t.pci_name, sizeof(t.pci_name), "%s", d->pci_name);
    if (nfl_find_memdev(&t)) {
        return 1;
    }
    rc = nfl_find_region(&t, &span->hpa);
    if (rc == NFLIB_ESYSFS && strstr(t.errmsg, "interleave_ways")) {
        snprintf(why, whylen, "%s", t.errmsg);
        span->ways = 2;
        return 0;
    }
    if (rc) {
        return 1;
    }
    span->dpa = t.dpa_base;
    span->ways = 1;
    snprintf(path, sizeof(path), CXL_DEVICES "/%s/size", t.region);
    return nfl_read_u64(path, &span->size) ? 1 : 0;
}

/* Does host physical [hpa, hpa + len) meet a System RAM range? */
static bool hpa_is_system_ram(void *ctx, uint64_t hpa, uint64_t len,
                              uint64_t *ram_start, uint64_t *ram_end)
{
    FILE *f = fopen("/proc/iomem", "r");
    char line[256];
    bool hit = false;

    (void)ctx;
    if (!f) {
        return false;
    }
    while (!hit && fgets(line, sizeof(line), f)) {
        unsigned long long a, b;
        int n = 0;

        if (sscanf(line, " %llx-%llx : %n", &a, &b, &n) == 2 && n > 0 &&
            !strncmp(line + n, "System RAM", 10) && a < hpa + len && hpa <= b) {
            *ram_start = a;
            *ram_end = b;
            hit = true;
        }
    }
    fclose(f);
    return hit;
}

/*
 * A low-bit window must not transform memory the kernel owns, nor cover
 * only this device's stripes of an interleaved region: the rule is
 * nfabric_check_window_memory (guest/kernel/uapi/nfabric_checks.h), which
 * the driver's WIN_SET applies too.
 */
static int check_window_memory(nfabric_dev *d, const nfabric_win_cfg *c)
{
    struct nfabric_mem_span span;
    struct nfabric_mem_why w;
    char why[sizeof(d->errmsg)] = "";
    int rc;

    if (c->path == NFABRIC_PATH_FP32 ||
        region_of_memdev(d, &span, why, sizeof(why))) {
        return 0;       /* identity, or no region: the kernel does not use the memory */
    }
    memset(&w, 0, sizeof(w));
    rc = nfabric_check_window_memory(c->path, c->width, c->base, c->size,
                                     c->counters, &span, 1, hpa_is_system_ram,
                                     NULL, &w);
    if (rc == -EXDEV) {
        return nfl_fail(d, NFLIB_EINTERLEAVE, "%s; a window programmed on this "
                    "device alone would cover only its stripes of the region",
                    why);
    }
    if (rc == -EBUSY) {
        return nfl_fail(d, NFLIB_EBUSY, "the window's %s (DPA 0x%" PRIx64
                    ", HPA 0x%" PRIx64 ") is System RAM of the guest "
                    "kernel (0x%" PRIx64 "-0x%" PRIx64 " in /proc/iomem): "
                    "the device would replace the kernel's data; give "
                    "the memory back (daxctl reconfigure-device "
                    "--mode=devdax) first", w.area ? "counter area" : "data",
                    w.dpa, w.hpa, w.ram_start, w.ram_end);
    }
    return rc;
}

int nfabric_window_set(nfabric_dev *d, unsigned i, const nfabric_win_cfg *c)
{
    uint32_t before, wctrl;
    int rc = nfl_check_win(d, i);

    if (rc) {
        return rc;
    }
    if ((rc = check_window_memory(d, c))) {
        return rc;
    }
    if (c->posted && (d->version >> 16 != NFABRIC_VERSION_MAJOR ||
                      (d->version & 0xffff) < 7)) {
        return nfl_fail(d, NFABRIC_ERR_POSTED, "window %u: posted windows "
                        "need register version 1.7, the device has %u.%u", i,
                        d->version >> 16, d->version & 0xffff);
    }
    before = nfabric_rd32(d, NFABRIC_REG_ERROR_COUNT);
    nfabric_wr64(d, NFABRIC_REG_WIN(i, NFABRIC_WIN_DPA_BASE), c->base);
    nfabric_wr64(d, NFABRIC_REG_WIN(i, NFABRIC_WIN_DPA_SIZE), c->size);
    nfabric_wr64(d, NFABRIC_REG_WIN(i, NFABRIC_WIN_COUNTERS), c->counters);
    nfabric_wr32(d, NFABRIC_REG_WIN(i, NFABRIC_WIN_THRESHOLD), c->threshold);
    if ((rc = nfl_judged(d, i, before, "window configuration write"))) {
        return rc;
    }
    wctrl = NFABRIC_WCTRL(c->path, c->width, c->tie) | NFABRIC_WCTRL_ENABLE |
            (c->posted ? NFABRIC_WCTRL_POSTED : 0);
    nfabric_wr32(d, NFABRIC_REG_WIN(i, NFABRIC_WIN_CTRL), wctrl);
    if ((rc = nfl_judged(d, i, before, "window enable"))) {
        return rc;
    }
    if (!(nfabric_rd32(d, NFABRIC_REG_WIN(i, NFABRIC_WIN_CTRL)) & NFABRIC_WCTRL_ENABLE)) {
        uint32_t err = nfabric_rd32(d, NFABRIC_REG_WIN(i, NFABRIC_WIN_ERROR));

        return nfl_fail(d, err ? (int)err : NFABRIC_ERR_MAX + 1,
                    "window %u: enable refused (error %u)", i, err);
    }
    return 0;
}

int nfabric_window_disable(nfabric_dev *d, unsigned i)
{
    uint32_t before, wctrl;
    int rc = nfl_check_win(d, i);

    if (rc) {
        return rc;
    }
    before = nfabric_rd32(d, NFABRIC_REG_ERROR_COUNT);
    wctrl = nfabric_rd32(d, NFABRIC_REG_WIN(i, NFABRIC_WIN_CTRL));
    nfabric_wr32(d, NFABRIC_REG_WIN(i, NFABRIC_WIN_CTRL), wctrl & ~NFABRIC_WCTRL_ENABLE);
    return nfl_judged(d, i, before, "window disable");
}

int nfabric_window_clear(nfabric_dev *d, unsigned i)
{
    uint32_t before;
    int rc = nfl_check_win(d, i);

    if (rc) {
        return rc;
    }
    before = nfabric_rd32(d, NFABRIC_REG_ERROR_COUNT);
    nfabric_wr32(d, NFABRIC_REG_WIN(i, NFABRIC_WIN_CMD), NFABRIC_WCMD_CLEAR);
    return nfl_judged(d, i, before, "window clear");
}

int nfabric_windows_reset(nfabric_dev *d)
{
    int rc = need_regs(d);

    for (unsigned i = 0; !rc && i < nfabric_num_windows(d); i++) {
        if (nfabric_rd32(d, NFABRIC_REG_WIN(i, NFABRIC_WIN_CTRL)) & NFABRIC_WCTRL_ENABLE) {
            rc = nfabric_window_disable(d, i);
        }
    }
    return rc;
}

int nfabric_window_get(const nfabric_dev *d, unsigned i, nfabric_win_state *s)
{
    uint32_t wctrl;

    memset(s, 0, sizeof(*s));
    if (!nfl_has_regs(d) || i >= nfabric_num_windows(d)) {
        return !nfl_has_regs(d) ? NFLIB_ENOREGS : NFLIB_EINVAL;
    }
    s->cfg.base = nfabric_rd64(d, NFABRIC_REG_WIN(i, NFABRIC_WIN_DPA_BASE));
    s->cfg.size = nfabric_rd64(d, NFABRIC_REG_WIN(i, NFABRIC_WIN_DPA_SIZE));
    s->cfg.counters = nfabric_rd64(d, NFABRIC_REG_WIN(i, NFABRIC_WIN_COUNTERS));
    wctrl = nfabric_rd32(d, NFABRIC_REG_WIN(i, NFABRIC_WIN_CTRL));
    s->wctrl = wctrl;
    s->enabled = wctrl & NFABRIC_WCTRL_ENABLE;
    s->cfg.path = (wctrl & NFABRIC_WCTRL_PATH_MASK) >> NFABRIC_WCTRL_PATH_SHIFT;
    s->cfg.width = (wctrl & NFABRIC_WCTRL_WIDTH_MASK) >> NFABRIC_WCTRL_WIDTH_SHIFT;
    s->cfg.tie = (wctrl & NFABRIC_WCTRL_TIE_MASK) >> NFABRIC_WCTRL_TIE_SHIFT;
    s->cfg.posted = wctrl & NFABRIC_WCTRL_POSTED;
    s->cfg.threshold = nfabric_rd32(d, NFABRIC_REG_WIN(i, NFABRIC_WIN_THRESHOLD));
    s->error = nfabric_rd32(d, NFABRIC_REG_WIN(i, NFABRIC_WIN_ERROR));
    s->contrib_writes = nfabric_rd64(d, NFABRIC_REG_WIN(i, NFABRIC_WIN_CONTRIB_WRITES));
    s->contrib_bytes = nfabric_rd64(d, NFABRIC_REG_WIN(i, NFABRIC_WIN_CONTRIB_BYTES));
    s->reserved_codes = nfabric_rd32(d, NFABRIC_REG_WIN(i, NFABRIC_WIN_RESERVED_CODES));
    return 0;
}

unsigned nfabric_window_check(const nfabric_dev *d, unsigned i,
                              const nfabric_win_cfg *c)
{
    NFabricWindowCfg table[NFABRIC_NUM_WINDOWS] = { { 0 } };
    NFabricWindowCfg w = {
        c->base, c->size, c->counters, c->path, c->width, c->tie, c->threshold,
        c->posted ? 1u : 0u,
    };
    uint32_t enabled = 0;
    nfabric_win_state s;

    for (unsigned j = 0; j < nfabric_num_windows(d); j++) {
        if (j == i || nfabric_window_get(d, j, &s) || !s.enabled) {
            continue;
        }
        table[j] = nfabric_window_cfg(s.cfg.base, s.cfg.size, s.cfg.counters,
                                      s.wctrl, s.cfg.threshold);
        enabled |= 1u << j;
    }
    /* The controller's own rules (hw/mem/nfabric/nfabric_window.c). */
    return nfabric_window_validate(&w, i, d->dev_mem_size, table, enabled);
}

int nfabric_ctrl(nfabric_dev *d, uint32_t cmd)
{
    uint32_t before;
    int rc = need_regs(d);

    if (rc) {
        return rc;
    }
    before = nfabric_rd32(d, NFABRIC_REG_ERROR_COUNT);
    nfabric_wr32(d, NFABRIC_REG_CTRL, cmd);
    if (cmd & NFABRIC_CTRL_CLEAR_ERROR) {
        return 0;   /* the count was just zeroed */
    }
    return nfl_judged(d, NFABRIC_NUM_WINDOWS, before, "CTRL command");
}

/* The four statistics of every path from the block at base (STATS, POOL_STATS). */
void nfl_read_path_stats(const nfabric_dev *d, uint32_t base,
                         nfabric_path_stats st[NFABRIC_NUM_PATHS])
{
    for (unsigned p = 0; p < NFABRIC_NUM_PATHS; p++) {
        uint32_t off = base + p * NFABRIC_STATS_STRIDE;

        st[p].reads = nfabric_rd64(d, off + NFABRIC_STATS_READS);
        st[p].writes = nfabric_rd64(d, off + NFABRIC_STATS_WRITES);
        st[p].read_bytes = nfabric_rd64(d, off + NFABRIC_STATS_READ_BYTES);
        st[p].write_bytes = nfabric_rd64(d, off + NFABRIC_STATS_WRITE_BYTES);
    }
}

int nfabric_stats(const nfabric_dev *d, nfabric_path_stats st[NFABRIC_NUM_PATHS])
{
    if (!nfl_has_regs(d)) {
        return NFLIB_ENOREGS;
    }
    nfl_read_path_stats(d, NFABRIC_REG_STATS, st);
    return 0;
}

int nfabric_timing_read(const nfabric_dev *d, nfabric_timing *t)
{
    if (!nfl_has_regs(d)) {
        return NFLIB_ENOREGS;
    }
    t->clock_mhz = nfabric_rd32(d, NFABRIC_REG_T_CLOCK_MHZ);
    t->depth = nfabric_rd32(d, NFABRIC_REG_T_DEPTH);
    t->service_ns = nfabric_rd32(d, NFABRIC_REG_T_SERVICE_NS);
    t->link_mbps = nfabric_rd32(d, NFABRIC_REG_T_LINK_MBPS);
    t->exposed_ppm = nfabric_rd32(d, NFABRIC_REG_T_EXPOSED_PPM);
    t->total_ps = nfabric_rd64(d, NFABRIC_REG_T_TOTAL_PS);
    for (unsigned p = 0; p < NFABRIC_NUM_PATHS; p++) {
        t->path_time_ps[p] = nfabric_rd64(d, NFABRIC_REG_T_PATH_FIELD(p, NFABRIC_T_PATH_TIME_PS));
        t->path_exposed_ps[p] = nfabric_rd64(d, NFABRIC_REG_T_PATH_FIELD(p, NFABRIC_T_PATH_EXPOSED_PS));
    }
    return 0;
}

uint64_t nfabric_mem_size(const nfabric_dev *d)
{
    return nfl_has_regs(d) ? nfabric_rd64(d, NFABRIC_REG_MEM_SIZE) : 0;
}

uint32_t nfabric_enabled_mask(const nfabric_dev *d)
{
    return nfl_has_regs(d) ? nfabric_rd32(d, NFABRIC_REG_ENABLED_MASK) : 0;
}
