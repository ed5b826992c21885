/*
 * QTest: seeded random register and CXL.mem sequences against the
 * NEURON-Fabric device (cxl-neuron-fabric) in QEMU.
 *
 * One QEMU runs NFABRIC_FUZZ_SEQUENCES sequences (default 200; seed
 * NFABRIC_FUZZ_SEED, default 0x5eed).  A sequence is 4..12 operations:
 * register writes and reads at random offsets and sizes (1, 2, 4, 8; mostly
 * window registers, some anywhere in the 4 KiB block), window set-ups with
 * mostly valid values in the first MiB of device memory, CXL.mem writes and
 * reads of every size at any alignment near and across window boundaries,
 * commands, disables, global CTRL writes.  After each sequence:
 *
 *   - QEMU is alive (every qtest command gets its answer)
 *   - MAGIC, VERSION, CAPS, WIN_LAYOUT, MEM_SIZE read their constants
 *   - LAST_ERROR is a defined code; ENABLED_MASK has bits 0..15 only, and
 *     every enabled window's configuration (read back) is inside memory,
 *     aligned, a defined path/width/tie/threshold, and overlaps no other
 *   - FP32 identity: a random write of random size outside every enabled
 *     window reads back byte-exact
 *   - a random byte of an enabled G-Binary window reads as the majority of
 *     its 8 counters (read as plain memory), with the tie rule; a G-Ternary
 *     byte as the gate of its 4 sums
 *
 * "# device_sequences=N" reports the count (scripts/lib/fuzz.sh sums it).
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */

#include "qemu/osdep.h"
#include "libqtest.h"
#include "nfabric-qtest.h"
#include "qobject/qdict.h"
#include "hw/pci/pci_regs.h"
#include "hw/mem/nfabric_regs.h"

#define ARENA           (1024 * 1024ull)    /* windows live in the first MiB */
#define NW              NFABRIC_NUM_WINDOWS

typedef struct Win {
    bool on;
    uint64_t base, size, counters;
    uint32_t ctrl, threshold;
} Win;

typedef struct NF {
    QTestState *qts;
    uint64_t regs;
    uint64_t hpa;
    GRand *rand;
    Win win[NW];
    uint32_t mask;
    uint32_t touched;   /* windows whose CTRL was written since the check */
    unsigned ops, checks;
} NF;

/* ---- bring-up (PCI config and the window: nfabric-qtest.h) ---------- */

static void nf_start(NF *nf)
{
    QTestState *qts;

    memset(nf->win, 0, sizeof(nf->win));
    nf->mask = 0;
    qts = nf->qts = qtest_init(NF_CMDLINE);
    map_device(qts);
    nf->regs = BAR0_ADDR + NFABRIC_REGS_OFFSET;
    nf->hpa = find_cfmw_base(qts);
    commit_hdm_at(qts, find_hdm(qts), nf->hpa, 0);
}

/* ---- random helpers ---------------------------------------------------- */

static uint32_t rnd(NF *nf, uint32_t n)
{
    return g_rand_int_range(nf->rand, 0, n);
}

static uint64_t rnd64(NF *nf)
{
    return (uint64_t)g_rand_int(nf->rand) << 32 | g_rand_int(nf->rand);
}

static const unsigned sizes[4] = { 1, 2, 4, 8 };

static void bus_write(NF *nf, uint64_t addr, unsigned size, uint64_t v)
{
    /* A write reaching a window's CTRL may have re-enabled it differently. */
    if (addr + size > nf->regs + NFABRIC_REG_WIN_BASE &&
        addr < nf->regs + NFABRIC_REG_WIN(NW, 0)) {
        for (unsigned i = 0; i < NW; i++) {
            uint64_t c = nf->regs + NFABRIC_REG_WIN(i, NFABRIC_WIN_CTRL);

            if (addr < c + 4 && c < addr + size) {
                nf->touched |= 1u << i;
            }
        }
    }
    switch (size) {
    case 1: qtest_writeb(nf->qts, addr, v); break;
    case 2: qtest_writew(nf->qts, addr, v); break;
    case 4: qtest_writel(nf->qts, addr, v); break;
    default: qtest_writeq(nf->qts, addr, v); break;
    }
    nf->ops++;
}

static uint64_t bus_read(NF *nf, uint64_t addr, unsigned size)
{
    nf->ops++;
    switch (size) {
    case 1: return qtest_readb(nf->qts, addr);
    case 2: return qtest_readw(nf->qts, addr);
    case 4: return qtest_readl(nf->qts, addr);
    default: return qtest_readq(nf->qts, addr);
    }
}

static uint32_t bus_rd32(NF *nf, uint32_t off)
{
    return bus_read(nf, nf->regs + off, 4);
}

static uint64_t bus_rd64(NF *nf, uint32_t off)
{
    return bus_read(nf, nf->regs + off, 8);
}

static void bus_wr32(NF *nf, uint32_t off, uint32_t v)
{
    bus_write(nf, nf->regs + off, 4, v);
}

static void bus_wr64(NF *nf, uint32_t off, uint64_t v)
{
    bus_write(nf, nf->regs + off, 8, v);
}

/* A DPA near a window (either end) or anywhere in the arena. */
static uint64_t rnd_dpa(NF *nf)
{
    const Win *w = &nf->win[rnd(nf, NW)];

    switch (rnd(nf, 4)) {
    case 0:
        return rnd(nf, ARENA);
    case 1:
        return w->base + rnd(nf, 24) - 12;
    case 2:
        return w->base + w->size + rnd(nf, 24) - 12;
    default:
        return w->base + (w->size ? rnd64(nf) % w->size : 0);
    }
}

static uint64_t rnd_reg_value(NF *nf)
{
    static const unsigned widths[] = { 8, 16, 8, 16, 0, 12, 32, 255 };

    switch (rnd(nf, 6)) {
    case 0:
        return rnd64(nf);
    case 1:
        return rnd(nf, 256);
    case 2:
        return NFABRIC_WCTRL(rnd(nf, 4), widths[rnd(nf, 8)], rnd(nf, 3)) |
               rnd(nf, 2) | (rnd(nf, 8) == 0 ? 1u << rnd(nf, 32) : 0);
    case 3:
        return (uint64_t)rnd(nf, ARENA / 64 + 4) * 64;
    case 4:
        return (uint64_t)rnd(nf, 32) * 64;
    default:
        return UINT64_MAX - rnd(nf, 256);
    }
}

/* ---- operations ---------------------------------------------------------- */

static void op_reg_write(NF *nf)
{
    unsigned size = sizes[rnd(nf, 4)];
    uint32_t off;

    if (rnd(nf, 4)) {
        off = NFABRIC_REG_WIN(rnd(nf, NW), rnd(nf, NFABRIC_WIN_STRIDE));
    } else {
        off = rnd(nf, NFABRIC_REGS_SIZE);
    }
    if (rnd(nf, 2)) {
        off &= ~(size - 1);             /* mostly aligned */
    }
    if (off + size > NFABRIC_REGS_SIZE) {
        off = NFABRIC_REGS_SIZE - size;
    }
    bus_write(nf, nf->regs + off, size, rnd_reg_value(nf));
}

static void op_reg_read(NF *nf)
{
    unsigned size = sizes[rnd(nf, 4)];
    uint32_t off = rnd(nf, NFABRIC_REGS_SIZE - 8);
    uint64_t a = bus_read(nf, nf->regs + off, size);

    /* A read never changes state: the same value twice. */
    g_assert_cmphex(bus_read(nf, nf->regs + off, size), ==, a);
}

static void op_window_setup(NF *nf)
{
    unsigned i = rnd(nf, NW);
    unsigned path = rnd(nf, 8) ? rnd(nf, 3) : rnd(nf, 16);
    unsigned width = rnd(nf, 8) ? (rnd(nf, 2) ? 16 : 8) : rnd(nf, 256);
    unsigned tie = rnd(nf, 8) ? rnd(nf, 2) : rnd(nf, 16);
    uint32_t thr = rnd(nf, 8) ? 1 + rnd(nf, 6) : g_rand_int(nf->rand);
    uint64_t base = (uint64_t)rnd(nf, ARENA / 64) * 64;
    uint64_t size = (uint64_t)(1 + rnd(nf, 16)) * 64;
    uint64_t counters = (uint64_t)rnd(nf, ARENA / 64) * 64;

    if (rnd(nf, 10) == 0) {
        base = rnd(nf, 4) ? base + rnd(nf, 64) : rnd64(nf);
    }
    if (rnd(nf, 10) == 0) {
        size = rnd(nf, 2) ? rnd64(nf) : MEM_SIZE - base + 64 * rnd(nf, 3);
    }
    bus_wr64(nf, NFABRIC_REG_WIN(i, NFABRIC_WIN_DPA_BASE), base);
    bus_wr64(nf, NFABRIC_REG_WIN(i, NFABRIC_WIN_DPA_SIZE), size);
    bus_wr64(nf, NFABRIC_REG_WIN(i, NFABRIC_WIN_COUNTERS), counters);
    bus_wr32(nf, NFABRIC_REG_WIN(i, NFABRIC_WIN_THRESHOLD), thr);
    bus_wr32(nf, NFABRIC_REG_WIN(i, NFABRIC_WIN_CTRL),
             NFABRIC_WCTRL(path, width, tie) | NFABRIC_WCTRL_ENABLE);
}

static void op_mem(NF *nf, bool write)
{
    unsigned size = sizes[rnd(nf, 4)];
    uint64_t dpa = rnd_dpa(nf);

    if (dpa > MEM_SIZE - size) {
        dpa = MEM_SIZE - size;
    }
    if (write) {
        bus_write(nf, nf->hpa + dpa, size, rnd64(nf));
    } else {
        uint64_t v = bus_read(nf, nf->hpa + dpa, size);

        g_assert_cmphex(bus_read(nf, nf->hpa + dpa, size), ==, v);
    }
}

/* A few contributions to an enabled window. */
static void op_burst(NF *nf)
{
    const Win *w = &nf->win[rnd(nf, NW)];
    unsigned n = 1 + rnd(nf, 8);

    if (!w->on) {
        return;
    }
    for (unsigned k = 0; k < n; k++) {
        bus_write(nf, nf->hpa + w->base + (8ull * k) % w->size, 8, rnd64(nf));
    }
}

static void op_misc(NF *nf)
{
    unsigned i = rnd(nf, NW);

    switch (rnd(nf, 4)) {
    case 0:
        bus_wr32(nf, NFABRIC_REG_WIN(i, NFABRIC_WIN_CMD),
             rnd(nf, 4) ? NFABRIC_WCMD_CLEAR : g_rand_int(nf->rand));
        break;
    case 1:
        bus_wr32(nf, NFABRIC_REG_WIN(i, NFABRIC_WIN_CTRL), 0);
        break;
    case 2:
        bus_wr32(nf, NFABRIC_REG_CTRL, rnd(nf, 16));
        break;
    default:
        /* Across the end of the block and of device memory. */
        bus_write(nf, nf->regs + NFABRIC_REGS_SIZE - 4, 8, rnd64(nf));
        bus_write(nf, nf->hpa + MEM_SIZE - 4, 8, rnd64(nf));
        bus_read(nf, nf->hpa + MEM_SIZE - 4, 8);
        break;
    }
}

/* ---- checks -------------------------------------------------------------- */

static uint64_t w_clen(const Win *w)
{
    return nfabric_counter_bytes(NFABRIC_WCTRL_PATH(w->ctrl),
                                 NFABRIC_WCTRL_WIDTH(w->ctrl), w->size);
}

static bool overlap(uint64_t a, uint64_t al, uint64_t b, uint64_t bl)
{
    return al && bl && a < b + bl && b < a + al;
}

/* Re-read the window table where ENABLED_MASK changed, and check it. */
static void check_windows(NF *nf)
{
    uint32_t mask = bus_rd32(nf, NFABRIC_REG_ENABLED_MASK);

    g_assert_cmphex(mask >> NW, ==, 0);
    for (unsigned i = 0; i < NW; i++) {
        Win *w = &nf->win[i];
        bool on = mask & (1u << i);

        if (on && (!(nf->mask & (1u << i)) || (nf->touched & (1u << i)))) {
            w->base = bus_rd64(nf, NFABRIC_REG_WIN(i, NFABRIC_WIN_DPA_BASE));
            w->size = bus_rd64(nf, NFABRIC_REG_WIN(i, NFABRIC_WIN_DPA_SIZE));
            w->counters = bus_rd64(nf,
                                   NFABRIC_REG_WIN(i, NFABRIC_WIN_COUNTERS));
            w->ctrl = bus_rd32(nf, NFABRIC_REG_WIN(i, NFABRIC_WIN_CTRL));
            w->threshold = bus_rd32(nf,
                                    NFABRIC_REG_WIN(i, NFABRIC_WIN_THRESHOLD));
            /* 0 after the enable; a later refused write may set it. */
            g_assert_cmpuint(bus_rd32(nf,
                                      NFABRIC_REG_WIN(i, NFABRIC_WIN_ERROR)),
                             <=, NFABRIC_ERR_MAX);
        }
        w->on = on;
    }
    nf->mask = mask;
    nf->touched = 0;
    for (unsigned i = 0; i < NW; i++) {
        const Win *w = &nf->win[i];
        unsigned p = NFABRIC_WCTRL_PATH(w->ctrl);
        unsigned wd = NFABRIC_WCTRL_WIDTH(w->ctrl);
        uint64_t cl = w_clen(w);

        if (!w->on) {
            continue;
        }
        g_assert(w->ctrl & NFABRIC_WCTRL_ENABLE);
        g_assert_cmphex(w->ctrl & ~NFABRIC_WCTRL_VALID, ==, 0);
        g_assert_cmpuint(p, <, NFABRIC_NUM_PATHS);
        if (p != NFABRIC_PATH_FP32) {
            g_assert(wd == 8 || wd == 16);
        }
        if (p == NFABRIC_PATH_GBINARY) {
            g_assert_cmpuint(NFABRIC_WCTRL_TIE(w->ctrl), <=, 1);
        }
        if (p == NFABRIC_PATH_GTERNARY) {
            g_assert(w->threshold >= 1 &&
                     w->threshold <= (wd == 8 ? 127u : 32767u));
        }
        g_assert(w->size && w->base <= MEM_SIZE &&
                 w->size <= MEM_SIZE - w->base);
        g_assert(!cl || (w->counters <= MEM_SIZE &&
                         cl <= MEM_SIZE - w->counters));
        g_assert(w->base % 64 == 0 && w->size % 64 == 0 &&
                 (!cl || w->counters % 64 == 0));
        g_assert(!overlap(w->base, w->size, w->counters, cl));
        for (unsigned j = i + 1; j < NW; j++) {
            const Win *o = &nf->win[j];
            uint64_t ol = w_clen(o);

            if (!o->on) {
                continue;
            }
            g_assert(!overlap(w->base, w->size, o->base, o->size));
            g_assert(!overlap(w->base, w->size, o->counters, ol));
            g_assert(!overlap(w->counters, cl, o->base, o->size));
            g_assert(!overlap(w->counters, cl, o->counters, ol));
        }
    }
}

static bool in_lowbit_window(NF *nf, uint64_t a, unsigned len)
{
    for (unsigned i = 0; i < NW; i++) {
        const Win *w = &nf->win[i];

        if (w->on && NFABRIC_WCTRL_PATH(w->ctrl) != NFABRIC_PATH_FP32 &&
            overlap(a, len, w->base, w->size)) {
            return true;
        }
    }
    return false;
}

/* On a failure: the window table as the device and as the test see it. */
static void dump_windows(NF *nf, uint64_t a, unsigned size)
{
    g_test_message("access DPA 0x%" PRIx64 " size %u; ENABLED_MASK 0x%x",
                   a, size, bus_rd32(nf, NFABRIC_REG_ENABLED_MASK));
    for (unsigned i = 0; i < NW; i++) {
        g_test_message("win %2u: base 0x%" PRIx64 " size 0x%" PRIx64
                       " ctr 0x%" PRIx64 " ctrl 0x%x thr %u | test: %d 0x%"
                       PRIx64 " 0x%" PRIx64 " 0x%x", i,
                       bus_rd64(nf, NFABRIC_REG_WIN(i, NFABRIC_WIN_DPA_BASE)),
                       bus_rd64(nf, NFABRIC_REG_WIN(i, NFABRIC_WIN_DPA_SIZE)),
                       bus_rd64(nf, NFABRIC_REG_WIN(i, NFABRIC_WIN_COUNTERS)),
                       bus_rd32(nf, NFABRIC_REG_WIN(i, NFABRIC_WIN_CTRL)),
                       bus_rd32(nf, NFABRIC_REG_WIN(i, NFABRIC_WIN_THRESHOLD)),
                       nf->win[i].on, nf->win[i].base, nf->win[i].size,
                       nf->win[i].ctrl);
    }
}

static void check_identity(NF *nf)
{
    for (int tries = 0; tries < 8; tries++) {
        unsigned size = sizes[rnd(nf, 4)];
        uint64_t a = rnd(nf, 2) ? rnd_dpa(nf) : rnd(nf, ARENA);
        uint64_t v = rnd64(nf), mask = size == 8 ? ~0ull :
                                        (1ull << (8 * size)) - 1;

        if (a > MEM_SIZE - size || in_lowbit_window(nf, a, size)) {
            continue;
        }
        bus_write(nf, nf->hpa + a, size, v);
        if (bus_read(nf, nf->hpa + a, size) != (v & mask)) {
            dump_windows(nf, a, size);
        }
        g_assert_cmphex(bus_read(nf, nf->hpa + a, size), ==, v & mask);
        nf->checks++;
        return;
    }
}

static int counter_at(const uint8_t *c, unsigned width, unsigned e)
{
    return width == 8 ? (int8_t)c[e] : (int16_t)(c[2 * e] | c[2 * e + 1] << 8);
}

static void check_readout(NF *nf)
{
    unsigned i0 = rnd(nf, NW);

    for (unsigned k = 0; k < NW; k++) {
        const Win *w = &nf->win[(i0 + k) % NW];
        unsigned p = NFABRIC_WCTRL_PATH(w->ctrl);
        unsigned wd = NFABRIC_WCTRL_WIDTH(w->ctrl);
        uint64_t off;
        uint8_t c[16], got, want = 0;

        if (!w->on || p == NFABRIC_PATH_FP32) {
            continue;
        }
        off = rnd64(nf) % w->size;
        got = bus_read(nf, nf->hpa + w->base + off, 1);
        if (p == NFABRIC_PATH_GBINARY) {
            qtest_memread(nf->qts, nf->hpa + w->counters + off * wd, c, wd);
            for (unsigned b = 0; b < 8; b++) {
                int n = counter_at(c, wd, b);
                unsigned tie = NFABRIC_WCTRL_TIE(w->ctrl);

                want |= (n > 0 ? 1 : n < 0 ? 0 : tie) << b;
            }
        } else {
            int t = w->threshold;

            qtest_memread(nf->qts, nf->hpa + w->counters + off * wd / 2, c,
                          wd / 2);
            for (unsigned e = 0; e < 4; e++) {
                int n = counter_at(c, wd, e);

                want |= (n >= t ? NFABRIC_TERN_PLUS : n <= -t ?
                         NFABRIC_TERN_MINUS : NFABRIC_TERN_ZERO) << (2 * e);
            }
        }
        g_assert_cmphex(got, ==, want);
        nf->checks++;
        return;
    }
}

static void check_sane(NF *nf)
{
    g_assert_cmphex(bus_rd32(nf, NFABRIC_REG_MAGIC), ==, NFABRIC_MAGIC);
    g_assert_cmphex(bus_rd32(nf, NFABRIC_REG_VERSION), ==, NFABRIC_VERSION);
    g_assert_cmphex(bus_rd32(nf, NFABRIC_REG_CAPS), ==, 0x03030710);
    g_assert_cmpuint(bus_rd32(nf, NFABRIC_REG_LAST_ERROR), <=, NFABRIC_ERR_MAX);
    check_windows(nf);
    check_identity(nf);
    check_readout(nf);
}

static void run_sequence(NF *nf)
{
    unsigned n = 4 + rnd(nf, 9);

    for (unsigned k = 0; k < n; k++) {
        switch (rnd(nf, 10)) {
        case 0: case 1:
            op_reg_write(nf);
            break;
        case 2:
            op_reg_read(nf);
            break;
        case 3: case 4:
            op_window_setup(nf);
            break;
        case 5: case 6:
            op_mem(nf, true);
            break;
        case 7:
            op_mem(nf, false);
            break;
        case 8:
            op_burst(nf);
            break;
        default:
            op_misc(nf);
            break;
        }
    }
    check_sane(nf);
}

static unsigned env_uint(const char *name, unsigned def)
{
    const char *v = getenv(name);

    return v && *v ? (unsigned)g_ascii_strtoull(v, NULL, 0) : def;
}

static void test_sequences(void)
{
    unsigned count = env_uint("NFABRIC_FUZZ_SEQUENCES", 200);
    unsigned seed = env_uint("NFABRIC_FUZZ_SEED", 0x5eed);
    gint64 t0 = g_get_monotonic_time();
    NF nf = { 0 };
    QDict *rsp;
    unsigned s;

    nf.rand = g_rand_new_with_seed(seed);
    nf_start(&nf);
    for (s = 0; s < count; s++) {
        run_sequence(&nf);
        /* Now and then all windows off, so that set-ups keep succeeding. */
        if (s % 500 == 499) {
            for (unsigned i = 0; i < NW; i++) {
                bus_wr32(&nf, NFABRIC_REG_WIN(i, NFABRIC_WIN_CTRL), 0);
            }
            check_windows(&nf);
        }
    }
    /* QEMU is still there and answers QMP. */
    rsp = qtest_qmp(nf.qts, "{'execute': 'query-status'}");
    g_assert(qdict_haskey(rsp, "return"));
    qobject_unref(rsp);
    qtest_quit(nf.qts);
    g_rand_free(nf.rand);
    g_test_message("device_sequences=%u", s);
    g_test_message("device_ops=%u device_checks=%u seed=0x%x seconds=%.1f",
                   nf.ops, nf.checks, seed,
                   (g_get_monotonic_time() - t0) / 1e6);
}

/* Every offset of the block at every size, read and written with junk. */
static void test_block_sweep(void)
{
    NF nf = { 0 };

    nf.rand = g_rand_new_with_seed(7);
    nf_start(&nf);
    for (uint32_t off = 0; off < NFABRIC_REGS_SIZE; off++) {
        for (unsigned si = 0; si < 4; si++) {
            unsigned size = sizes[si];

            if (off + size > NFABRIC_REGS_SIZE) {
                continue;
            }
            bus_read(&nf, nf.regs + off, size);
            /* Writes that cannot enable: no ENABLE bit, or size 1/2. */
            bus_write(&nf, nf.regs + off, size, rnd64(&nf) & ~1ull);
        }
    }
    check_sane(&nf);
    g_assert_cmpuint(bus_rd32(&nf, NFABRIC_REG_ERROR_COUNT), >, 0);
    qtest_quit(nf.qts);
    g_rand_free(nf.rand);
}

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);

    qtest_add_func("/nfabric-fuzz/block-sweep", test_block_sweep);
    qtest_add_func("/nfabric-fuzz/sequences", test_sequences);
    return g_test_run();
}
