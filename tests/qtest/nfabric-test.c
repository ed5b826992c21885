/*
 * QTest testcase for the NEURON-Fabric CXL Type-3 device (cxl-neuron-fabric)
 *
 * Starts the device behind a CXL host bridge and root port, enumerates it
 * by hand (config cycles through 0xcf8/0xcfc), commits an HDM decoder so
 * that the fixed memory window reaches device memory, then drives the
 * controller's registers and the CXL.mem path.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */

#include "qemu/osdep.h"
#include "libqtest.h"
#include "nfabric-qtest.h"
#include "qobject/qdict.h"
#include "hw/pci/pci_regs.h"
#include "hw/mem/nfabric_regs.h"
#include "hw/mem/nfabric_timing.h"
#include "hw/mem/nfabric_record.h"

/* The device and its registers (rd32, wr32, ...): nfabric-qtest.h. */
typedef NFDev NF;

/* ---- windows ----------------------------------------------------------- */

/* Program window i and try to enable it; returns the window's ERROR. */
static uint32_t win_set(NF *nf, int i, uint64_t base, uint64_t size,
                        uint64_t counters, unsigned path, unsigned width,
                        unsigned tie, uint32_t threshold)
{
    wr64(nf, NFABRIC_REG_WIN(i, NFABRIC_WIN_DPA_BASE), base);
    wr64(nf, NFABRIC_REG_WIN(i, NFABRIC_WIN_DPA_SIZE), size);
    wr64(nf, NFABRIC_REG_WIN(i, NFABRIC_WIN_COUNTERS), counters);
    wr32(nf, NFABRIC_REG_WIN(i, NFABRIC_WIN_THRESHOLD), threshold);
    wr32(nf, NFABRIC_REG_WIN(i, NFABRIC_WIN_CTRL),
         NFABRIC_WCTRL(path, width, tie) | NFABRIC_WCTRL_ENABLE);
    return rd32(nf, NFABRIC_REG_WIN(i, NFABRIC_WIN_ERROR));
}

static void win_disable(NF *nf, int i)
{
    wr32(nf, NFABRIC_REG_WIN(i, NFABRIC_WIN_CTRL), 0);
}

/* ---- bring-up ---------------------------------------------------------- */

/*
 * Commit HDM decoder 0 of the device: HPA [hpa, hpa + MEM_SIZE) -> DPA 0,
 * interleaved over 1 << iw_enc ways (0: not interleaved).
 */
static void commit_hdm_ways(NF *nf, unsigned iw_enc)
{
    nf->hdm = find_hdm(nf->qts);
    commit_hdm_at(nf->qts, nf->hdm, nf->hpa, iw_enc);
}

static void commit_hdm(NF *nf)
{
    commit_hdm_ways(nf, 0);
}

static void uncommit_hdm(NF *nf)
{
    qtest_writel(nf->qts, nf->hdm + 0x20, 0);
    g_assert(!(qtest_readl(nf->qts, nf->hdm + 0x20) & (1 << 10)));
}

/* Enumerate the root port and the device, map the BARs (after any reset). */
static void nf_bringup(NF *nf)
{
    QTestState *qts = nf->qts;
    uint32_t id;

    /* Root port: bus numbers, a memory window, memory decoding. */
    id = cfg_readl(qts, RP_BUS, 0, PCI_VENDOR_ID);
    g_assert_cmphex(id & 0xffff, !=, 0xffff);
    map_root_port(qts);

    /* The device: BARs, memory decoding. */
    id = cfg_readl(qts, DEV_BUS, 0, PCI_VENDOR_ID);
    g_assert_cmphex(id & 0xffff, ==, NFABRIC_PCI_VENDOR_ID);
    g_assert_cmphex(id >> 16, ==, NFABRIC_PCI_DEVICE_ID);
    map_device_bars(qts);

    nf->regs = BAR0_ADDR + NFABRIC_REGS_OFFSET;
    nf->hpa = find_cfmw_base(qts);
}

static void nf_start_args(NF *nf, const char *extra)
{
    nf->qts = qtest_initf(NF_CMDLINE "%s", extra ? extra : "");
    nf_bringup(nf);
    commit_hdm(nf);
}

static void nf_start(NF *nf)
{
    nf_start_args(nf, NULL);
}

static void nf_stop(NF *nf)
{
    qtest_quit(nf->qts);
}

/* ---- host references -------------------------------------------------- */

static int sat(int v, unsigned width)
{
    int max = (1 << (width - 1)) - 1, min = -(1 << (width - 1));

    return v > max ? max : v < min ? min : v;
}

static int32_t counter_read(NF *nf, uint64_t counters, unsigned width,
                            uint64_t e)
{
    uint64_t a = nf->hpa + counters + e * (width / 8);

    return width == 8 ? (int8_t)qtest_readb(nf->qts, a)
                      : (int16_t)qtest_readw(nf->qts, a);
}

/* ---- tests --------------------------------------------------------------- */

static void test_ident(void)
{
    NF nf;
    uint32_t caps;

    nf_start(&nf);
    g_assert_cmphex(cfg_readl(nf.qts, DEV_BUS, 0, PCI_CLASS_REVISION) >> 8,
                    ==, 0x050210);
    g_assert_cmphex(rd32(&nf, NFABRIC_REG_MAGIC), ==, NFABRIC_MAGIC);
    g_assert_cmphex(rd32(&nf, NFABRIC_REG_VERSION), ==, NFABRIC_VERSION);
    caps = rd32(&nf, NFABRIC_REG_CAPS);
    g_assert_cmpuint(caps & NFABRIC_CAPS_WINDOWS_MASK, ==,
                     NFABRIC_NUM_WINDOWS);
    g_assert_cmphex((caps & NFABRIC_CAPS_PATHS_MASK) >>
                    NFABRIC_CAPS_PATHS_SHIFT, ==, 0x7);
    g_assert_cmphex((caps & NFABRIC_CAPS_WIDTHS_MASK) >>
                    NFABRIC_CAPS_WIDTHS_SHIFT, ==, 0x3);
    g_assert_cmphex((caps & NFABRIC_CAPS_TIES_MASK) >>
                    NFABRIC_CAPS_TIES_SHIFT, ==, 0x3);
    g_assert_cmphex(rd32(&nf, NFABRIC_REG_WIN_LAYOUT), ==,
                    NFABRIC_REG_WIN_BASE | NFABRIC_WIN_STRIDE << 16);
    g_assert_cmpuint(rd64(&nf, NFABRIC_REG_MEM_SIZE), ==, MEM_SIZE);
    /* 64-bit register read as two halves. */
    g_assert_cmpuint(rd32(&nf, NFABRIC_REG_MEM_SIZE), ==, MEM_SIZE);
    g_assert_cmpuint(rd32(&nf, NFABRIC_REG_MEM_SIZE + 4), ==, 0);
    g_assert_cmpuint(rd32(&nf, NFABRIC_REG_ENABLED_MASK), ==, 0);
    g_assert_cmpuint(rd32(&nf, NFABRIC_REG_LAST_ERROR), ==, 0);
    /* The CXL component registers below are the parent's, untouched. */
    g_assert_cmpuint(qtest_readl(nf.qts, BAR0_ADDR + 0x1000) & 0xffff, ==, 1);
    nf_stop(&nf);
}

/*
 * 1.6: the Register Locator DVSEC (extended configuration space, read
 * through the MCH's ECAM window) names the controller's block as a
 * designated vendor specific block; its header reads as nfabric_regs.h
 * says, and is read-only; the registers after it are the block at BAR0 +
 * NFABRIC_REGS_OFFSET.
 */
#define ECAM_BASE       0xb0000000ull
#define MCH_PCIEXBAR    0x60

static uint32_t regloc_find(QTestState *qts, uint64_t ecam, uint32_t *len)
{
    uint32_t off = 0x100;

    for (int n = 0; off && n < 64; n++) {
        uint32_t hdr = qtest_readl(qts, ecam + off);

        if ((hdr & 0xffff) == 0x23 &&   /* PCI_EXT_CAP_ID_DVSEC */
            (qtest_readl(qts, ecam + off + 4) & 0xffff) ==
                NFABRIC_CXL_DVSEC_VENDOR_ID &&
            (qtest_readl(qts, ecam + off + 8) & 0xffff) ==
                NFABRIC_CXL_DVSEC_REGLOC) {
            *len = qtest_readl(qts, ecam + off + 4) >> 20;
            return off;
        }
        off = hdr >> 20;
    }
    return 0;
}

static void test_regloc(void)
{
    NF nf;
    QTestState *qts;
    uint64_t ecam = ECAM_BASE + ((uint64_t)DEV_BUS << 20), dvs;
    uint32_t loc, len, lo = 0, hi = 0, found = 0, bar;

    nf_start(&nf);
    qts = nf.qts;
    /* ECAM at ECAM_BASE, 256 buses, enabled (what firmware does). */
    cfg_writel(qts, 0, 0, MCH_PCIEXBAR + 4, 0);
    cfg_writel(qts, 0, 0, MCH_PCIEXBAR, ECAM_BASE | 1);
    g_assert_cmphex(qtest_readl(qts, ecam) & 0xffff, ==, NFABRIC_PCI_VENDOR_ID);
    loc = regloc_find(qts, ecam, &len);
    g_assert_cmpuint(loc, !=, 0);
    g_assert_cmpuint(len, ==, 0x2c);    /* four entries (1.9: the CPMU) */
    for (uint32_t e = NFABRIC_REGLOC_ENTRIES; e + 8 <= len; e += 8) {
        uint32_t l = qtest_readl(qts, ecam + loc + e);
        uint32_t rbi = (l & NFABRIC_REGLOC_RBI_MASK) >> NFABRIC_REGLOC_RBI_SHIFT;

        if (rbi == NFABRIC_REGLOC_RBI_VENDOR) {
            lo = l;
            hi = qtest_readl(qts, ecam + loc + e + 4);
            found++;
        } else if (rbi == NFABRIC_REGLOC_RBI_CPMU) {
            g_assert_cmpuint(l & NFABRIC_REGLOC_BIR_MASK, ==, NFABRIC_CPMU_BIR);
            g_assert_cmphex(l & NFABRIC_REGLOC_OFF_LO_MASK, ==,
                            NFABRIC_CPMU_OFFSET);
            g_assert_cmphex(qtest_readl(qts, ecam + loc + e + 4), ==, 0);
            found += 0x100;
        }
    }
    g_assert_cmphex(found, ==, 0x101);  /* one vendor block, one CPMU */
    g_assert_cmpuint(lo & NFABRIC_REGLOC_BIR_MASK, ==, NFABRIC_DVS_BIR);
    g_assert_cmphex(lo & NFABRIC_REGLOC_OFF_LO_MASK, ==, NFABRIC_DVS_OFFSET);
    g_assert_cmphex(hi, ==, 0);

    dvs = BAR0_ADDR + NFABRIC_DVS_OFFSET;
    g_assert_cmphex(qtest_readl(qts, dvs + NFABRIC_DVS_HDR_ID), ==,
                    NFABRIC_DVS_ID);
    g_assert_cmphex(qtest_readl(qts, dvs + NFABRIC_DVS_HDR_ID) & 0xffff, ==,
                    NFABRIC_PCI_VENDOR_ID);
    g_assert_cmpuint(qtest_readl(qts, dvs + NFABRIC_DVS_HDR_REVISION) & 0xf,
                     ==, NFABRIC_DVS_REVISION);
    g_assert_cmpuint(qtest_readl(qts, dvs + NFABRIC_DVS_HDR_LENGTH), ==,
                     NFABRIC_DVS_SIZE);
    g_assert_cmpuint(rd32(&nf, NFABRIC_REG_LAST_ERROR), ==, 0);
    /* The registers, through the block: the same registers. */
    g_assert_cmphex(qtest_readl(qts, dvs + NFABRIC_DVS_REGS + NFABRIC_REG_MAGIC),
                    ==, NFABRIC_MAGIC);
    g_assert_cmphex(qtest_readl(qts, dvs + NFABRIC_DVS_REGS +
                                NFABRIC_REG_VERSION), ==, NFABRIC_VERSION);
    qtest_writeq(qts, dvs + NFABRIC_DVS_REGS + NFABRIC_REG_WIN(3, NFABRIC_WIN_DPA_BASE),
                 0x40000);
    g_assert_cmphex(rd64(&nf, NFABRIC_REG_WIN(3, NFABRIC_WIN_DPA_BASE)), ==,
                    0x40000);
    /* The header refuses writes, other sizes and what lies past it. */
    qtest_writel(qts, dvs + NFABRIC_DVS_HDR_ID, 0);
    g_assert_cmpuint(rd32(&nf, NFABRIC_REG_LAST_ERROR), ==, NFABRIC_ERR_READONLY);
    g_assert_cmphex(qtest_readl(qts, dvs + NFABRIC_DVS_HDR_ID), ==,
                    NFABRIC_DVS_ID);
    g_assert_cmpuint(qtest_readw(qts, dvs + NFABRIC_DVS_HDR_ID), ==, 0);
    g_assert_cmpuint(rd32(&nf, NFABRIC_REG_LAST_ERROR), ==, NFABRIC_ERR_ACCESS);
    g_assert_cmpuint(qtest_readl(qts, dvs + NFABRIC_DVS_HDR_SIZE), ==, 0);
    g_assert_cmpuint(rd32(&nf, NFABRIC_REG_LAST_ERROR), ==,
                     NFABRIC_ERR_UNMAPPED);
    qtest_writel(qts, dvs + 0x800, 1);
    g_assert_cmpuint(rd32(&nf, NFABRIC_REG_LAST_ERROR), ==,
                     NFABRIC_ERR_UNMAPPED);
    g_assert_cmpuint(rd32(&nf, NFABRIC_REG_ERROR_COUNT), ==, 4);
    /* BAR0 is 256 KiB: the component registers, the block, the CPMU. */
    cfg_writel(qts, DEV_BUS, 0, PCI_BASE_ADDRESS_0, 0xffffffff);
    bar = cfg_readl(qts, DEV_BUS, 0, PCI_BASE_ADDRESS_0);
    g_assert_cmphex(bar & ~0xfu, ==, (uint32_t)~(4 * NFABRIC_DVS_OFFSET - 1));
    nf_stop(&nf);

    /* x-register-locator=off: the device as before 1.6, for refusals. */
    nf_start_args(&nf, " -global cxl-neuron-fabric.x-register-locator=off");
    qts = nf.qts;
    cfg_writel(qts, 0, 0, MCH_PCIEXBAR + 4, 0);
    cfg_writel(qts, 0, 0, MCH_PCIEXBAR, ECAM_BASE | 1);
    loc = regloc_find(qts, ecam, &len);
    g_assert_cmpuint(loc, !=, 0);
    for (uint32_t e = NFABRIC_REGLOC_ENTRIES; e + 8 <= len; e += 8) {
        g_assert_cmphex((qtest_readl(qts, ecam + loc + e) &
                         NFABRIC_REGLOC_RBI_MASK) >> NFABRIC_REGLOC_RBI_SHIFT,
                        !=, NFABRIC_REGLOC_RBI_VENDOR);
    }
    g_assert_cmphex(rd32(&nf, NFABRIC_REG_MAGIC), ==, NFABRIC_MAGIC);
    cfg_writel(qts, DEV_BUS, 0, PCI_BASE_ADDRESS_0, 0xffffffff);
    bar = cfg_readl(qts, DEV_BUS, 0, PCI_BASE_ADDRESS_0);
    g_assert_cmphex(bar & ~0xfu, ==, (uint32_t)~(4 * NFABRIC_DVS_OFFSET - 1));
    nf_stop(&nf);
}

/* Byte-exact identity for 1/2/4/8-byte accesses at every alignment. */
static void check_identity_at(NF *nf, uint64_t dpa)
{
    QTestState *qts = nf->qts;
    static const unsigned sizes[] = { 1, 2, 4, 8 };

    for (unsigned si = 0; si < ARRAY_SIZE(sizes); si++) {
        for (unsigned align = 0; align < 8; align++) {
            uint64_t a = nf->hpa + dpa + align;
            uint64_t pat = 0x0123456789abcdefull * (si + 1) + align * 0x1111;
            uint8_t got[16], want[16];

            memset(want, 0x5a, sizeof(want));
            qtest_memwrite(qts, nf->hpa + dpa, want, sizeof(want));
            switch (sizes[si]) {
            case 1:
                qtest_writeb(qts, a, pat);
                g_assert_cmphex(qtest_readb(qts, a), ==, (uint8_t)pat);
                break;
            case 2:
                qtest_writew(qts, a, pat);
                g_assert_cmphex(qtest_readw(qts, a), ==, (uint16_t)pat);
                break;
            case 4:
                qtest_writel(qts, a, pat);
                g_assert_cmphex(qtest_readl(qts, a), ==, (uint32_t)pat);
                break;
            case 8:
                qtest_writeq(qts, a, pat);
                g_assert_cmphex(qtest_readq(qts, a), ==, pat);
                break;
            }
            for (unsigned b = 0; b < sizes[si]; b++) {
                want[align + b] = pat >> (8 * b);
            }
            qtest_memread(qts, nf->hpa + dpa, got, sizeof(got));
            g_assert_cmpmem(got, sizeof(got), want, sizeof(want));
        }
    }
}

static void test_fp32_identity(void)
{
    NF nf;

    nf_start(&nf);
    check_identity_at(&nf, 0);
    check_identity_at(&nf, 0x12340);
    check_identity_at(&nf, MEM_SIZE / 2 - 8);
    check_identity_at(&nf, MEM_SIZE - 16);
    /* An FP32 window behaves the same. */
    g_assert_cmpuint(win_set(&nf, 3, 0x100000, 0x1000, 0,
                             NFABRIC_PATH_FP32, 0, 0, 0), ==, 0);
    check_identity_at(&nf, 0x100000);
    check_identity_at(&nf, 0x100ff8);   /* straddles the window's end */
    g_assert_cmpuint(rd64(&nf, NFABRIC_REG_STATS_PATH(NFABRIC_PATH_GBINARY,
                          NFABRIC_STATS_WRITES)), ==, 0);
    nf_stop(&nf);
}

/* Expect a window configuration to be refused with err, changing nothing. */
static void expect_reject(NF *nf, int i, uint32_t err, uint64_t base,
                          uint64_t size, uint64_t counters, unsigned path,
                          unsigned width, unsigned tie, uint32_t threshold)
{
    uint32_t mask = rd32(nf, NFABRIC_REG_ENABLED_MASK);
    uint32_t count = rd32(nf, NFABRIC_REG_ERROR_COUNT);

    g_assert_cmpuint(win_set(nf, i, base, size, counters, path, width, tie,
                             threshold), ==, err);
    g_assert_cmpuint(rd32(nf, NFABRIC_REG_LAST_ERROR), ==, err);
    g_assert_cmpuint(rd32(nf, NFABRIC_REG_ERROR_COUNT), ==, count + 1);
    g_assert_cmpuint(rd32(nf, NFABRIC_REG_ENABLED_MASK), ==, mask);
    g_assert_false(rd32(nf, NFABRIC_REG_WIN(i, NFABRIC_WIN_CTRL)) &
                   NFABRIC_WCTRL_ENABLE);
}

static void test_validation(void)
{
    NF nf;
    const unsigned gb = NFABRIC_PATH_GBINARY, gt = NFABRIC_PATH_GTERNARY;
    uint64_t err_before;

    nf_start(&nf);
    /* Window 0: G-Binary, 4 KiB of data, 32 KiB of 8-bit counters. */
    g_assert_cmpuint(win_set(&nf, 0, 0x10000, 0x1000, 0x20000, gb, 8,
                             NFABRIC_TIE_NEGATIVE, 0), ==, 0);
    g_assert_cmpuint(rd32(&nf, NFABRIC_REG_ENABLED_MASK), ==, 1);

    /* Overlap: data with data, data with counters, counters with data. */
    expect_reject(&nf, 1, NFABRIC_ERR_OVERLAP, 0x10800, 0x1000, 0x40000, gb,
                  8, 0, 0);
    expect_reject(&nf, 1, NFABRIC_ERR_OVERLAP, 0x24000, 0x40, 0x40000, gb,
                  8, 0, 0);
    expect_reject(&nf, 1, NFABRIC_ERR_OVERLAP, 0x40000, 0x40, 0x10000, gb,
                  8, 0, 0);
    /* Own counters over own data. */
    expect_reject(&nf, 1, NFABRIC_ERR_OVERLAP, 0x40000, 0x1000, 0x40800, gb,
                  8, 0, 0);
    /* Range: empty, past the end, wrapping, counters past the end. */
    expect_reject(&nf, 1, NFABRIC_ERR_RANGE, 0x40000, 0, 0x80000, gb, 8, 0, 0);
    expect_reject(&nf, 1, NFABRIC_ERR_RANGE, MEM_SIZE - 0x40, 0x80,
                  0x80000, gb, 8, 0, 0);
    expect_reject(&nf, 1, NFABRIC_ERR_RANGE, 0xffffffffffffffc0ull, 0x80,
                  0x80000, gb, 8, 0, 0);
    expect_reject(&nf, 1, NFABRIC_ERR_RANGE, 0x40000, 0x1000,
                  MEM_SIZE - 0x40, gb, 8, 0, 0);
    expect_reject(&nf, 1, NFABRIC_ERR_RANGE, 0, MEM_SIZE, 0, gb, 16, 0, 0);
    /* Alignment of base, size and counters. */
    expect_reject(&nf, 1, NFABRIC_ERR_ALIGN, 0x40008, 0x40, 0x80000, gb,
                  8, 0, 0);
    expect_reject(&nf, 1, NFABRIC_ERR_ALIGN, 0x40000, 0x48, 0x80000, gb,
                  8, 0, 0);
    expect_reject(&nf, 1, NFABRIC_ERR_ALIGN, 0x40000, 0x40, 0x80004, gb,
                  8, 0, 0);
    /* Path, width, tie, threshold. */
    expect_reject(&nf, 1, NFABRIC_ERR_PATH, 0x40000, 0x40, 0x80000, 7, 8, 0, 0);
    expect_reject(&nf, 1, NFABRIC_ERR_WIDTH, 0x40000, 0x40, 0x80000, gb,
                  12, 0, 0);
    expect_reject(&nf, 1, NFABRIC_ERR_WIDTH, 0x40000, 0x40, 0x80000, gt,
                  32, 0, 1);
    expect_reject(&nf, 1, NFABRIC_ERR_TIE, 0x40000, 0x40, 0x80000, gb, 8, 5, 0);
    expect_reject(&nf, 1, NFABRIC_ERR_THRESHOLD, 0x40000, 0x40, 0x80000, gt,
                  8, 0, 0);
    expect_reject(&nf, 1, NFABRIC_ERR_THRESHOLD, 0x40000, 0x40, 0x80000, gt,
                  8, 0, 128);
    expect_reject(&nf, 1, NFABRIC_ERR_THRESHOLD, 0x40000, 0x40, 0x80000, gt,
                  16, 0, 40000);

    /* A rejected window never took effect: its range is plain memory. */
    qtest_writeq(nf.qts, nf.hpa + 0x40000, 0x1122334455667788ull);
    g_assert_cmphex(qtest_readq(nf.qts, nf.hpa + 0x40000), ==,
                    0x1122334455667788ull);

    /* Busy: configuration of an enabled window. */
    err_before = rd32(&nf, NFABRIC_REG_ERROR_COUNT);
    wr64(&nf, NFABRIC_REG_WIN(0, NFABRIC_WIN_DPA_BASE), 0x50000);
    g_assert_cmpuint(rd32(&nf, NFABRIC_REG_WIN(0, NFABRIC_WIN_ERROR)), ==,
                     NFABRIC_ERR_BUSY);
    g_assert_cmphex(rd64(&nf, NFABRIC_REG_WIN(0, NFABRIC_WIN_DPA_BASE)), ==,
                    0x10000);
    wr32(&nf, NFABRIC_REG_WIN(0, NFABRIC_WIN_CTRL),
         NFABRIC_WCTRL(gb, 16, 0) | NFABRIC_WCTRL_ENABLE);
    g_assert_cmpuint(rd32(&nf, NFABRIC_REG_LAST_ERROR), ==, NFABRIC_ERR_BUSY);
    g_assert_cmphex(rd32(&nf, NFABRIC_REG_WIN(0, NFABRIC_WIN_CTRL)), ==,
                    NFABRIC_WCTRL(gb, 8, 0) | NFABRIC_WCTRL_ENABLE);
    g_assert_cmpuint(rd32(&nf, NFABRIC_REG_ERROR_COUNT), ==, err_before + 2);

    /* Register-level errors. */
    wr32(&nf, NFABRIC_REG_MAGIC, 0);
    g_assert_cmpuint(rd32(&nf, NFABRIC_REG_LAST_ERROR), ==,
                     NFABRIC_ERR_READONLY);
    g_assert_cmphex(rd32(&nf, NFABRIC_REG_MAGIC), ==, NFABRIC_MAGIC);
    wr32(&nf, NFABRIC_REG_WIN(2, NFABRIC_WIN_ERROR), 0);
    g_assert_cmpuint(rd32(&nf, NFABRIC_REG_LAST_ERROR), ==,
                     NFABRIC_ERR_READONLY);
    wr32(&nf, 0x0f0, 1);       /* undefined in 1.0 and 1.1 */
    g_assert_cmpuint(rd32(&nf, NFABRIC_REG_LAST_ERROR), ==,
                     NFABRIC_ERR_UNMAPPED);
    qtest_writew(nf.qts, nf.regs + NFABRIC_REG_WIN(2, NFABRIC_WIN_THRESHOLD),
                 1);
    g_assert_cmpuint(rd32(&nf, NFABRIC_REG_LAST_ERROR), ==,
                     NFABRIC_ERR_ACCESS);
    qtest_writel(nf.qts, nf.regs + NFABRIC_REG_WIN(2, NFABRIC_WIN_CTRL) + 2,
                 1);
    g_assert_cmpuint(rd32(&nf, NFABRIC_REG_LAST_ERROR), ==,
                     NFABRIC_ERR_ACCESS);
    qtest_writeq(nf.qts, nf.regs + NFABRIC_REG_WIN(2, NFABRIC_WIN_CTRL), 1);
    g_assert_cmpuint(rd32(&nf, NFABRIC_REG_LAST_ERROR), ==,
                     NFABRIC_ERR_ACCESS);
    g_assert_cmpuint(rd32(&nf, NFABRIC_REG_ENABLED_MASK), ==, 1);
    wr32(&nf, NFABRIC_REG_WIN(2, NFABRIC_WIN_CTRL), 0x8);
    g_assert_cmpuint(rd32(&nf, NFABRIC_REG_LAST_ERROR), ==,
                     NFABRIC_ERR_RESERVED_BITS);
    wr32(&nf, NFABRIC_REG_CTRL, 0x80);
    g_assert_cmpuint(rd32(&nf, NFABRIC_REG_LAST_ERROR), ==,
                     NFABRIC_ERR_RESERVED_BITS);
    wr32(&nf, NFABRIC_REG_WIN(0, NFABRIC_WIN_CMD), 7);
    g_assert_cmpuint(rd32(&nf, NFABRIC_REG_WIN(0, NFABRIC_WIN_ERROR)), ==,
                     NFABRIC_ERR_COMMAND);
    /* A 64-bit register written as two halves. */
    wr32(&nf, NFABRIC_REG_WIN(5, NFABRIC_WIN_DPA_BASE), 0x89abcdc0);
    wr32(&nf, NFABRIC_REG_WIN(5, NFABRIC_WIN_DPA_BASE) + 4, 0x1);
    g_assert_cmphex(rd64(&nf, NFABRIC_REG_WIN(5, NFABRIC_WIN_DPA_BASE)), ==,
                    0x189abcdc0ull);
    /* Clearing the errors. */
    wr32(&nf, NFABRIC_REG_CTRL, NFABRIC_CTRL_CLEAR_ERROR);
    g_assert_cmpuint(rd32(&nf, NFABRIC_REG_LAST_ERROR), ==, 0);
    g_assert_cmpuint(rd32(&nf, NFABRIC_REG_ERROR_COUNT), ==, 0);

    /* Disable, reconfigure, enable: now accepted. */
    win_disable(&nf, 0);
    g_assert_cmpuint(rd32(&nf, NFABRIC_REG_ENABLED_MASK), ==, 0);
    g_assert_cmpuint(win_set(&nf, 1, 0x10800, 0x1000, 0x40000, gb, 8, 0, 0),
                     ==, 0);
    g_assert_cmpuint(rd32(&nf, NFABRIC_REG_ENABLED_MASK), ==, 2);
    nf_stop(&nf);
}

/* N contributors write random sign lines; compare with a host reference. */
static void run_gbinary(unsigned width, unsigned tie, unsigned contributors,
                        uint32_t seed)
{
    enum { LINES = 2, BYTES = LINES * 64, ELEMS = BYTES * 8 };
    const uint64_t base = 0x200000, counters = 0x300000;
    NF nf;
    int ref[ELEMS] = { 0 };
    GRand *rand = g_rand_new_with_seed(seed);

    nf_start(&nf);
    g_assert_cmpuint(win_set(&nf, 2, base, BYTES, counters,
                             NFABRIC_PATH_GBINARY, width, tie, 0), ==, 0);
    for (unsigned c = 0; c < contributors; c++) {
        for (unsigned w = 0; w < BYTES / 8; w++) {
            uint64_t v = (uint64_t)g_rand_int(rand) << 32 | g_rand_int(rand);

            qtest_writeq(nf.qts, nf.hpa + base + 8 * w, v);
            for (unsigned b = 0; b < 64; b++) {
                unsigned e = w * 64 + b;

                ref[e] = sat(ref[e] + ((v >> b) & 1 ? 1 : -1), width);
            }
        }
    }
    for (unsigned w = 0; w < BYTES / 8; w++) {
        uint64_t got = qtest_readq(nf.qts, nf.hpa + base + 8 * w), want = 0;

        for (unsigned b = 0; b < 64; b++) {
            int cnt = ref[w * 64 + b];
            int bit = cnt > 0 ? 1 : cnt < 0 ? 0 : tie == NFABRIC_TIE_POSITIVE;

            want |= (uint64_t)bit << b;
        }
        g_assert_cmphex(got, ==, want);
    }
    for (unsigned e = 0; e < ELEMS; e += 7) {
        g_assert_cmpint(counter_read(&nf, counters, width, e), ==, ref[e]);
    }
    g_assert_cmpuint(rd64(&nf, NFABRIC_REG_WIN(2, NFABRIC_WIN_CONTRIB_WRITES)),
                     ==, contributors * BYTES / 8);
    g_assert_cmpuint(rd64(&nf, NFABRIC_REG_WIN(2, NFABRIC_WIN_CONTRIB_BYTES)),
                     ==, contributors * BYTES);

    /* A new round: clear, one contribution, read back equals it. */
    wr32(&nf, NFABRIC_REG_WIN(2, NFABRIC_WIN_CMD), NFABRIC_WCMD_CLEAR);
    g_assert_cmpuint(rd64(&nf, NFABRIC_REG_WIN(2, NFABRIC_WIN_CONTRIB_WRITES)),
                     ==, 0);
    g_assert_cmpint(counter_read(&nf, counters, width, 0), ==, 0);
    g_assert_cmpint(counter_read(&nf, counters, width, ELEMS - 1), ==, 0);
    qtest_writeq(nf.qts, nf.hpa + base, 0xf0f0f0f00ff00ff0ull);
    g_assert_cmphex(qtest_readq(nf.qts, nf.hpa + base), ==,
                    0xf0f0f0f00ff00ff0ull);
    /* Untouched elements read as the tie. */
    g_assert_cmphex(qtest_readb(nf.qts, nf.hpa + base + 8), ==,
                    tie == NFABRIC_TIE_POSITIVE ? 0xff : 0x00);
    nf_stop(&nf);
    g_rand_free(rand);
}

static void test_gbinary(void)
{
    for (unsigned n = 1; n <= 16; n++) {
        run_gbinary(n % 2 ? 8 : 16, n % 3 ? NFABRIC_TIE_NEGATIVE
                                          : NFABRIC_TIE_POSITIVE, n, 1000 + n);
    }
}

static void test_gbinary_saturation(void)
{
    const uint64_t base = 0x1000, counters = 0x2000;
    NF nf;

    nf_start(&nf);
    g_assert_cmpuint(win_set(&nf, 0, base, 64, counters,
                             NFABRIC_PATH_GBINARY, 8, 0, 0), ==, 0);
    for (int i = 0; i < 130; i++) {
        qtest_writeb(nf.qts, nf.hpa + base, 0xff);      /* +1 x 8 */
        qtest_writeb(nf.qts, nf.hpa + base + 1, 0x00);  /* -1 x 8 */
    }
    g_assert_cmpint(counter_read(&nf, counters, 8, 0), ==, 127);
    g_assert_cmpint(counter_read(&nf, counters, 8, 8), ==, -128);
    /* Sub-word writes touched exactly their 8 elements. */
    g_assert_cmpint(counter_read(&nf, counters, 8, 16), ==, 0);
    g_assert_cmphex(qtest_readw(nf.qts, nf.hpa + base), ==, 0x00ff);
    nf_stop(&nf);
}

static unsigned tern_code(int v)
{
    return v > 0 ? NFABRIC_TERN_PLUS : v < 0 ? NFABRIC_TERN_MINUS
                                             : NFABRIC_TERN_ZERO;
}

static void test_gternary(void)
{
    enum { BYTES = 64, ELEMS = BYTES * 4, CONTRIB = 6 };
    const uint64_t base = 0x400000, counters = 0x500000;
    static const uint32_t thresholds[] = { 1, 2, 3, 5 };

    for (unsigned t = 0; t < ARRAY_SIZE(thresholds); t++) {
        GRand *rand = g_rand_new_with_seed(77 + t);
        int sum[ELEMS] = { 0 };
        uint64_t reserved = 0;
        NF nf;

        nf_start(&nf);
        g_assert_cmpuint(win_set(&nf, 4, base, BYTES, counters,
                                 NFABRIC_PATH_GTERNARY, 8, 0, thresholds[t]),
                         ==, 0);
        for (unsigned c = 0; c < CONTRIB; c++) {
            for (unsigned i = 0; i < BYTES / 4; i++) {
                uint32_t v = g_rand_int(rand);

                /* Rarely leave a reserved code in, else map it to 0. */
                for (unsigned k = 0; k < 16; k++) {
                    unsigned code = (v >> (2 * k)) & 3;
                    unsigned e = i * 16 + k;

                    if (code == NFABRIC_TERN_RESERVED) {
                        if (g_rand_int_range(rand, 0, 8) == 0) {
                            reserved++;
                            continue;
                        }
                        v &= ~(3u << (2 * k));
                        code = NFABRIC_TERN_ZERO;
                    }
                    sum[e] += code == NFABRIC_TERN_PLUS ? 1 :
                              code == NFABRIC_TERN_MINUS ? -1 : 0;
                }
                qtest_writel(nf.qts, nf.hpa + base + 4 * i, v);
            }
        }
        for (unsigned i = 0; i < BYTES / 4; i++) {
            uint32_t got = qtest_readl(nf.qts, nf.hpa + base + 4 * i);
            uint32_t want = 0;

            for (unsigned k = 0; k < 16; k++) {
                int s = sum[i * 16 + k];
                int g = s >= (int)thresholds[t] ? 1 :
                        s <= -(int)thresholds[t] ? -1 : 0;

                want |= tern_code(g) << (2 * k);
            }
            g_assert_cmphex(got, ==, want);
        }
        for (unsigned e = 0; e < ELEMS; e += 5) {
            g_assert_cmpint(counter_read(&nf, counters, 8, e), ==, sum[e]);
        }
        g_assert_cmpuint(rd32(&nf, NFABRIC_REG_WIN(4,
                              NFABRIC_WIN_RESERVED_CODES)), ==, reserved);
        nf_stop(&nf);
        g_rand_free(rand);
    }
}

/*
 * Statistics and timing of every access: the fixed window's I/O path, so
 * without the direct map (test_direct_map checks what it changes).
 */
static void test_stats_and_timing(void)
{
    NF nf;
    uint64_t fp32_ps, lb_ps, total, exposed, ppm;
    QDict *rsp;

    nf_start_args(&nf, "-global cxl-neuron-fabric.direct-map=off");
    g_assert_cmpuint(rd32(&nf, NFABRIC_REG_T_CLOCK_MHZ), ==, 1000);
    g_assert_cmpuint(rd32(&nf, NFABRIC_REG_T_DEPTH), ==, 5);
    g_assert_cmpuint(rd32(&nf, NFABRIC_REG_T_SERVICE_NS), ==, 300);
    g_assert_cmpuint(rd32(&nf, NFABRIC_REG_T_LINK_MBPS), ==, 32000);
    wr32(&nf, NFABRIC_REG_CTRL, NFABRIC_CTRL_CLEAR_STATS |
         NFABRIC_CTRL_CLEAR_TIMING);
    g_assert_cmpuint(win_set(&nf, 0, 0x1000, 64, 0x2000,
                             NFABRIC_PATH_GBINARY, 8, 0, 0), ==, 0);
    for (int i = 0; i < 10; i++) {
        qtest_writeq(nf.qts, nf.hpa + 0x10000 + 8 * i, i);      /* FP32 */
    }
    for (int i = 0; i < 3; i++) {
        qtest_readl(nf.qts, nf.hpa + 0x10000 + 4 * i);          /* FP32 */
    }
    for (int i = 0; i < 4; i++) {
        qtest_writeq(nf.qts, nf.hpa + 0x1000 + 8 * i, ~0ull);   /* G-Binary */
    }
    qtest_readq(nf.qts, nf.hpa + 0x1000);
    g_assert_cmpuint(rd64(&nf, NFABRIC_REG_STATS_PATH(NFABRIC_PATH_FP32,
                          NFABRIC_STATS_WRITES)), ==, 10);
    g_assert_cmpuint(rd64(&nf, NFABRIC_REG_STATS_PATH(NFABRIC_PATH_FP32,
                          NFABRIC_STATS_WRITE_BYTES)), ==, 80);
    g_assert_cmpuint(rd64(&nf, NFABRIC_REG_STATS_PATH(NFABRIC_PATH_FP32,
                          NFABRIC_STATS_READS)), ==, 3);
    g_assert_cmpuint(rd64(&nf, NFABRIC_REG_STATS_PATH(NFABRIC_PATH_FP32,
                          NFABRIC_STATS_READ_BYTES)), ==, 12);
    g_assert_cmpuint(rd64(&nf, NFABRIC_REG_STATS_PATH(NFABRIC_PATH_GBINARY,
                          NFABRIC_STATS_WRITES)), ==, 4);
    g_assert_cmpuint(rd64(&nf, NFABRIC_REG_STATS_PATH(NFABRIC_PATH_GBINARY,
                          NFABRIC_STATS_WRITE_BYTES)), ==, 32);
    g_assert_cmpuint(rd64(&nf, NFABRIC_REG_STATS_PATH(NFABRIC_PATH_GBINARY,
                          NFABRIC_STATS_READS)), ==, 1);
    g_assert_cmpuint(rd64(&nf, NFABRIC_REG_STATS_PATH(NFABRIC_PATH_GTERNARY,
                          NFABRIC_STATS_WRITES)), ==, 0);

    /* Modelled time: 300 ns + n bytes at 32 GB/s, + 5 ns on low-bit. */
    fp32_ps = 10 * (300000 + 8 * 1000000 / 32000) +
              3 * (300000 + 4 * 1000000 / 32000);
    lb_ps = 5 * (300000 + 8 * 1000000 / 32000 + 5000);
    g_assert_cmpuint(rd64(&nf, NFABRIC_REG_T_PATH_FIELD(NFABRIC_PATH_FP32,
                          NFABRIC_T_PATH_TIME_PS)), ==, fp32_ps);
    g_assert_cmpuint(rd64(&nf, NFABRIC_REG_T_PATH_FIELD(NFABRIC_PATH_GBINARY,
                          NFABRIC_T_PATH_TIME_PS)), ==, lb_ps);
    g_assert_cmpuint(rd64(&nf, NFABRIC_REG_T_PATH_FIELD(NFABRIC_PATH_GBINARY,
                          NFABRIC_T_PATH_EXPOSED_PS)), ==, 5 * 5000);
    total = rd64(&nf, NFABRIC_REG_T_TOTAL_PS);
    g_assert_cmpuint(total, ==, fp32_ps + lb_ps);
    exposed = 5 * 5000;
    ppm = (uint64_t)((double)exposed * 1e6 / (double)(total - exposed) + 0.5);
    g_assert_cmpuint(rd32(&nf, NFABRIC_REG_T_EXPOSED_PPM), ==, ppm);

    /* The same figures through QOM. */
    rsp = qtest_qmp(nf.qts, "{'execute': 'qom-get', 'arguments': "
                    "{'path': '/machine/peripheral/nf0', "
                    "'property': 'timing-exposed-ppm'}}");
    g_assert_cmpuint(qdict_get_int(rsp, "return"), ==, ppm);
    qobject_unref(rsp);
    rsp = qtest_qmp(nf.qts, "{'execute': 'qom-get', 'arguments': "
                    "{'path': '/machine/peripheral/nf0', "
                    "'property': 'timing-gbinary-ps'}}");
    g_assert_cmpuint(qdict_get_int(rsp, "return"), ==, lb_ps);
    qobject_unref(rsp);

    /* Register reads are not memory accesses: the figures did not move. */
    g_assert_cmpuint(rd64(&nf, NFABRIC_REG_T_TOTAL_PS), ==, total);
    wr32(&nf, NFABRIC_REG_CTRL, NFABRIC_CTRL_CLEAR_STATS |
         NFABRIC_CTRL_CLEAR_TIMING);
    g_assert_cmpuint(rd64(&nf, NFABRIC_REG_T_TOTAL_PS), ==, 0);
    g_assert_cmpuint(rd64(&nf, NFABRIC_REG_STATS_PATH(NFABRIC_PATH_FP32,
                          NFABRIC_STATS_WRITES)), ==, 0);
    nf_stop(&nf);
}

/* ---- the direct map ------------------------------------------------------ */

static bool direct_mapped(NF *nf)
{
    QDict *rsp = qtest_qmp(nf->qts, "{'execute': 'qom-get', 'arguments': "
                           "{'path': '/machine/peripheral/nf0', "
                           "'property': 'direct-mapped'}}");
    bool v = qdict_get_bool(rsp, "return");

    qobject_unref(rsp);
    return v;
}

static uint64_t stat_of(NF *nf, unsigned path, unsigned stat)
{
    return rd64(nf, NFABRIC_REG_STATS_PATH(path, stat));
}

#define FP32_W(nf)  stat_of(nf, NFABRIC_PATH_FP32, NFABRIC_STATS_WRITES)
#define FP32_R(nf)  stat_of(nf, NFABRIC_PATH_FP32, NFABRIC_STATS_READS)
#define GB_W(nf)    stat_of(nf, NFABRIC_PATH_GBINARY, NFABRIC_STATS_WRITES)

/* A plain qword at dpa reads back what was written, and was not counted. */
static void check_plain_direct(NF *nf, uint64_t dpa, uint64_t v)
{
    uint64_t w = FP32_W(nf), r = FP32_R(nf);

    qtest_writeq(nf->qts, nf->hpa + dpa, v);
    g_assert_cmphex(qtest_readq(nf->qts, nf->hpa + dpa), ==, v);
    g_assert_cmpuint(FP32_W(nf), ==, w);
    g_assert_cmpuint(FP32_R(nf), ==, r);
}

/*
 * Every transition of the map: commit, enable, clear, disable, uncommit,
 * recommit, reset, an interleaved decoder; what aggregates and what is
 * plain, byte-exact memory at each step.
 */
static void test_direct_map(void)
{
    const uint64_t base = 0x1000, counters = 0x2000;
    NF nf;

    nf.qts = qtest_initf(NF_CMDLINE);
    nf_bringup(&nf);
    g_assert_false(direct_mapped(&nf));         /* nothing committed */
    commit_hdm(&nf);
    g_assert_true(direct_mapped(&nf));
    wr32(&nf, NFABRIC_REG_CTRL, NFABRIC_CTRL_CLEAR_STATS);
    check_plain_direct(&nf, 0x10000, 0x0123456789abcdefull);
    qtest_writeb(nf.qts, nf.hpa + 0x10003, 0x5a);               /* sub-word */
    g_assert_cmphex(qtest_readq(nf.qts, nf.hpa + 0x10000), ==,
                    0x012345675aabcdefull);

    /* Enable: the window and its counter area trap, around them is RAM. */
    g_assert_cmpuint(win_set(&nf, 0, base, 64, counters,
                             NFABRIC_PATH_GBINARY, 8, 0, 0), ==, 0);
    g_assert_true(direct_mapped(&nf));
    for (int i = 0; i < 3; i++) {
        qtest_writeb(nf.qts, nf.hpa + base, 0xff);              /* +1 x 8 */
    }
    g_assert_cmpuint(GB_W(&nf), ==, 3);
    g_assert_cmpuint(rd64(&nf, NFABRIC_REG_WIN(0, NFABRIC_WIN_CONTRIB_WRITES)),
                     ==, 3);
    g_assert_cmpint(counter_read(&nf, counters, 8, 0), ==, 3);
    g_assert_cmpint(counter_read(&nf, counters, 8, 8), ==, 0);
    g_assert_cmpuint(FP32_R(&nf), ==, 2);       /* the counter area trapped */
    g_assert_cmphex(qtest_readb(nf.qts, nf.hpa + base), ==, 0xff);
    check_plain_direct(&nf, base - 8, 0x1111111111111111ull);
    check_plain_direct(&nf, base + 64, 0x2222222222222222ull);
    check_plain_direct(&nf, counters + nfabric_counter_bytes(
                                           NFABRIC_PATH_GBINARY, 8, 64),
                       0x3333333333333333ull);

    /* Clear: the map stays, writes still aggregate from zero. */
    wr32(&nf, NFABRIC_REG_WIN(0, NFABRIC_WIN_CMD), NFABRIC_WCMD_CLEAR);
    g_assert_cmpint(counter_read(&nf, counters, 8, 0), ==, 0);
    qtest_writeb(nf.qts, nf.hpa + base, 0x00);                  /* -1 x 8 */
    g_assert_cmpint(counter_read(&nf, counters, 8, 0), ==, -1);
    g_assert_cmpuint(GB_W(&nf), ==, 4);

    /* Disable: the window's range is plain memory again, not counted. */
    win_disable(&nf, 0);
    check_plain_direct(&nf, base, 0x4444444444444444ull);
    check_plain_direct(&nf, counters, 0x5555555555555555ull);
    g_assert_cmpuint(GB_W(&nf), ==, 4);

    /* An FP32 window traps by default: identity, counted. */
    g_assert_cmpuint(win_set(&nf, 1, 0x3000, 0x1000, 0,
                             NFABRIC_PATH_FP32, 0, 0, 0), ==, 0);
    qtest_writeq(nf.qts, nf.hpa + 0x3008, 0x6666666666666666ull);
    g_assert_cmphex(qtest_readq(nf.qts, nf.hpa + 0x3008), ==,
                    0x6666666666666666ull);
    g_assert_cmpuint(FP32_W(&nf), ==, 1);
    g_assert_cmpuint(rd64(&nf, NFABRIC_REG_WIN(1, NFABRIC_WIN_CONTRIB_WRITES)),
                     ==, 1);

    /* Uncommit: nothing reaches the device; commit again: the same map. */
    g_assert_cmpuint(win_set(&nf, 2, 0x5000, 64, 0x6000,
                             NFABRIC_PATH_GBINARY, 8, 0, 0), ==, 0);
    uncommit_hdm(&nf);
    g_assert_false(direct_mapped(&nf));
    qtest_writeq(nf.qts, nf.hpa + 0x10000, 0x7777777777777777ull);
    qtest_writeb(nf.qts, nf.hpa + 0x5000, 0xff);
    commit_hdm(&nf);
    g_assert_true(direct_mapped(&nf));
    g_assert_cmphex(qtest_readq(nf.qts, nf.hpa + 0x10000), ==,
                    0x012345675aabcdefull);
    g_assert_cmpint(counter_read(&nf, 0x6000, 8, 0), ==, 0);
    qtest_writeb(nf.qts, nf.hpa + 0x5000, 0xff);
    g_assert_cmpint(counter_read(&nf, 0x6000, 8, 0), ==, 1);
    g_assert_cmpuint(GB_W(&nf), ==, 5);

    /* Reset: decoders uncommitted, windows off; after bring-up all plain. */
    qtest_qmp_assert_success(nf.qts, "{'execute': 'system_reset'}");
    g_assert_false(direct_mapped(&nf));
    nf_bringup(&nf);
    commit_hdm(&nf);
    g_assert_true(direct_mapped(&nf));
    g_assert_cmpuint(GB_W(&nf), ==, 0);
    check_plain_direct(&nf, 0x5000, 0x8888888888888888ull);
    check_plain_direct(&nf, 0x3008, 0x9999999999999999ull);
    g_assert_cmpuint(FP32_W(&nf), ==, 0);

    /* An interleaved endpoint decoder keeps the I/O path (every access). */
    uncommit_hdm(&nf);
    commit_hdm_ways(&nf, 1);
    g_assert_false(direct_mapped(&nf));
    nf_stop(&nf);
}

/* direct-map=off: every access takes the I/O path and is counted. */
static void test_direct_map_off(void)
{
    NF nf;

    nf_start_args(&nf, "-global cxl-neuron-fabric.direct-map=off");
    g_assert_false(direct_mapped(&nf));
    qtest_writeq(nf.qts, nf.hpa + 0x10000, 0xabcdull);
    g_assert_cmphex(qtest_readq(nf.qts, nf.hpa + 0x10000), ==, 0xabcdull);
    g_assert_cmpuint(FP32_W(&nf), ==, 1);
    g_assert_cmpuint(FP32_R(&nf), ==, 1);
    nf_stop(&nf);
}

/* direct-map-fp32=on: FP32 windows are RAM too; low-bit windows trap. */
static void test_direct_map_fp32(void)
{
    NF nf;

    nf_start_args(&nf, "-global cxl-neuron-fabric.direct-map-fp32=on");
    g_assert_true(direct_mapped(&nf));
    g_assert_cmpuint(win_set(&nf, 1, 0x3000, 0x1000, 0,
                             NFABRIC_PATH_FP32, 0, 0, 0), ==, 0);
    g_assert_cmpuint(win_set(&nf, 2, 0x5000, 64, 0x6000,
                             NFABRIC_PATH_GBINARY, 8, 0, 0), ==, 0);
    check_plain_direct(&nf, 0x3008, 0x1212121212121212ull);
    g_assert_cmpuint(rd64(&nf, NFABRIC_REG_WIN(1, NFABRIC_WIN_CONTRIB_WRITES)),
                     ==, 0);
    qtest_writeb(nf.qts, nf.hpa + 0x5000, 0xff);
    g_assert_cmpuint(GB_W(&nf), ==, 1);
    g_assert_cmpint(counter_read(&nf, 0x6000, 8, 0), ==, 1);
    nf_stop(&nf);
}

static void test_timing_properties(void)
{
    NF nf;

    nf_start_args(&nf, "-global cxl-neuron-fabric.clock-mhz=2000 "
                  "-global cxl-neuron-fabric.datapath-depth=8 "
                  "-global cxl-neuron-fabric.service-ns=150 "
                  "-global cxl-neuron-fabric.link-mbps=64000");
    g_assert_cmpuint(rd32(&nf, NFABRIC_REG_T_CLOCK_MHZ), ==, 2000);
    g_assert_cmpuint(rd32(&nf, NFABRIC_REG_T_DEPTH), ==, 8);
    g_assert_cmpuint(rd32(&nf, NFABRIC_REG_T_SERVICE_NS), ==, 150);
    g_assert_cmpuint(rd32(&nf, NFABRIC_REG_T_LINK_MBPS), ==, 64000);
    g_assert_cmpuint(win_set(&nf, 0, 0, 64, 64, NFABRIC_PATH_GBINARY, 8, 0, 0),
                     ==, 0);
    qtest_writeq(nf.qts, nf.hpa, 1);
    /* 150 ns + 8 B at 64 GB/s (125 ps) + 8 cycles at 2 GHz (4 ns). */
    g_assert_cmpuint(rd64(&nf, NFABRIC_REG_T_TOTAL_PS), ==,
                     150000 + 125 + 4000);
    nf_stop(&nf);
}

/*
 * Reset without re-enumeration: after system_reset the device's BAR is
 * gone, so set it up again on the same QEMU and check every register.
 */
static void test_reset_defaults(void)
{
    NF nf;
    QDict *rsp;

    nf_start(&nf);
    g_assert_cmpuint(win_set(&nf, 7, 0x1000, 64, 0x2000,
                             NFABRIC_PATH_GBINARY, 16, 1, 0), ==, 0);
    qtest_writeq(nf.qts, nf.hpa + 0x1000, 5);
    wr32(&nf, NFABRIC_REG_MAGIC, 0);
    g_assert_cmpuint(rd32(&nf, NFABRIC_REG_ERROR_COUNT), ==, 1);

    rsp = qtest_qmp(nf.qts, "{'execute': 'system_reset'}");
    qobject_unref(rsp);
    qtest_qmp_eventwait(nf.qts, "RESET");

    /* Enumerate again (reset cleared BARs, bus numbers and decoders). */
    cfg_writel(nf.qts, RP_BUS, 0, PCI_PRIMARY_BUS,
               RP_BUS | DEV_BUS << 8 | DEV_BUS << 16);
    cfg_writew(nf.qts, RP_BUS, 0, PCI_MEMORY_BASE, (BAR0_ADDR >> 16) & 0xfff0);
    cfg_writew(nf.qts, RP_BUS, 0, PCI_MEMORY_LIMIT,
               ((BAR0_ADDR + 0xffffff) >> 16) & 0xfff0);
    cfg_writew(nf.qts, RP_BUS, 0, PCI_COMMAND, PCI_COMMAND_MEMORY);
    cfg_writel(nf.qts, DEV_BUS, 0, PCI_BASE_ADDRESS_0, BAR0_ADDR);
    cfg_writel(nf.qts, DEV_BUS, 0, PCI_BASE_ADDRESS_1, 0);
    cfg_writew(nf.qts, DEV_BUS, 0, PCI_COMMAND, PCI_COMMAND_MEMORY);

    g_assert_cmpuint(rd32(&nf, NFABRIC_REG_ENABLED_MASK), ==, 0);
    g_assert_cmpuint(rd32(&nf, NFABRIC_REG_ERROR_COUNT), ==, 0);
    g_assert_cmpuint(rd32(&nf, NFABRIC_REG_LAST_ERROR), ==, 0);
    g_assert_cmpuint(rd64(&nf, NFABRIC_REG_T_TOTAL_PS), ==, 0);
    for (int p = 0; p < NFABRIC_NUM_PATHS; p++) {
        for (int f = 0; f < 4; f++) {
            g_assert_cmpuint(rd64(&nf, NFABRIC_REG_STATS_PATH(p, 8 * f)), ==,
                             0);
        }
    }
    for (int i = 0; i < NFABRIC_NUM_WINDOWS; i++) {
        for (uint32_t r = 0; r < NFABRIC_WIN_STRIDE - 4; r += 4) {
            if (r == NFABRIC_WIN_CMD) {
                continue;
            }
            g_assert_cmphex(rd32(&nf, NFABRIC_REG_WIN(i, r)), ==, 0);
        }
    }
    g_assert_cmpuint(rd32(&nf, NFABRIC_REG_T_DEPTH), ==, 5);
    nf_stop(&nf);
}

/*
 * The device records its access stream (record=FILE); replaying the record
 * through the offline model gives exactly the figures the registers show.
 */
static void test_record_replay(void)
{
    g_autofree char *path = g_strdup_printf("%s/nfabric-record-%d.bin",
                                            g_get_tmp_dir(), getpid());
    g_autofree char *arg = g_strdup_printf("-global cxl-neuron-fabric.record=%s",
                                           path);
    g_autofree NFabricTiming *t = g_new0(NFabricTiming, 1);
    uint64_t total, runtime, path_ps[NFABRIC_NUM_PATHS];
    uint64_t path_exp[NFABRIC_NUM_PATHS], acc[NFABRIC_NUM_PATHS];
    uint32_t ppm;
    int64_t records;
    FILE *f;
    NF nf;

    nf_start_args(&nf, arg);
    for (int i = 0; i < 20; i++) {
        qtest_writeq(nf.qts, nf.hpa + 0x80000 + 8 * i, i);
    }
    /* A clear in the middle: the record says so too. */
    wr32(&nf, NFABRIC_REG_CTRL, NFABRIC_CTRL_CLEAR_TIMING);
    g_assert_cmpuint(win_set(&nf, 0, 0x1000, 64, 0x2000,
                             NFABRIC_PATH_GBINARY, 8, 0, 0), ==, 0);
    g_assert_cmpuint(win_set(&nf, 1, 0x4000, 64, 0x5000,
                             NFABRIC_PATH_GTERNARY, 16, 0, 2), ==, 0);
    for (int i = 0; i < 8; i++) {
        qtest_writeq(nf.qts, nf.hpa + 0x1000 + 8 * i, 0x5555 * i);
        qtest_writel(nf.qts, nf.hpa + 0x4000 + 4 * i, 0x1111 * i);
        qtest_writeb(nf.qts, nf.hpa + 0x90000 + i, i);
    }
    qtest_readq(nf.qts, nf.hpa + 0x1000);
    qtest_readw(nf.qts, nf.hpa + 0x4002);
    qtest_readl(nf.qts, nf.hpa + 0x90000);

    total = rd64(&nf, NFABRIC_REG_T_TOTAL_PS);
    runtime = rd64(&nf, NFABRIC_REG_T_RUNTIME_PS);
    ppm = rd32(&nf, NFABRIC_REG_T_EXPOSED_PPM);
    for (int p = 0; p < NFABRIC_NUM_PATHS; p++) {
        path_ps[p] = rd64(&nf, NFABRIC_REG_T_PATH_FIELD(p,
                          NFABRIC_T_PATH_TIME_PS));
        path_exp[p] = rd64(&nf, NFABRIC_REG_T_PATH_FIELD(p,
                           NFABRIC_T_PATH_EXPOSED_PS));
        acc[p] = rd64(&nf, NFABRIC_REG_T_ACCESSES_PATH(p));
    }
    g_assert_cmpuint(acc[NFABRIC_PATH_FP32], ==, 9);
    g_assert_cmpuint(acc[NFABRIC_PATH_GBINARY], ==, 9);
    g_assert_cmpuint(acc[NFABRIC_PATH_GTERNARY], ==, 9);
    g_assert_cmpuint(ppm, >, 0);
    nf_stop(&nf);   /* QEMU exits: the record is flushed */

    f = fopen(path, "rb");
    g_assert(f);
    records = nfabric_record_replay(f, t, NULL, NULL);
    fclose(f);
    unlink(path);
    g_assert_cmpint(records, >, 27);
    g_assert_cmpuint(nfabric_timing_total_ps(t), ==, total);
    g_assert_cmpuint(nfabric_timing_runtime_ps(t), ==, runtime);
    g_assert_cmpuint(nfabric_timing_exposed_ppm(t), ==, ppm);
    for (int p = 0; p < NFABRIC_NUM_PATHS; p++) {
        g_assert_cmpuint(t->time_ps[p], ==, path_ps[p]);
        g_assert_cmpuint(t->exposed_ps[p], ==, path_exp[p]);
        g_assert_cmpuint(t->accesses[p], ==, acc[p]);
    }
}

/*
 * HEAD_INFO: one head, not shared, on a private device (head=0,heads=1
 * given or not: the defaults); SHARED on a device with a state file, even
 * with one head (docs/registers.md, docs/multihost.md).
 */
static void test_head_info(void)
{
    g_autofree char *dir = g_dir_make_tmp("nfabric-qtest-XXXXXX", NULL);
    g_autofree char *mem = g_strdup_printf("%s/mem", dir);
    g_autofree char *state = g_strdup_printf("%s/state", dir);
    g_autofree char *args = NULL;
    NF nf;

    g_assert(dir);
    nf_start(&nf);
    g_assert_cmphex(rd32(&nf, NFABRIC_REG_HEAD_INFO), ==,
                    NFABRIC_HEAD_INFO_STAGING |
                    1 << NFABRIC_HEAD_INFO_COUNT_SHIFT);
    nf_stop(&nf);

    nf_start_args(&nf, "-global cxl-neuron-fabric.head=0 "
                  "-global cxl-neuron-fabric.heads=1 "
                  "-global cxl-neuron-fabric.posted=off");
    g_assert_cmphex(rd32(&nf, NFABRIC_REG_HEAD_INFO), ==,
                    1 << NFABRIC_HEAD_INFO_COUNT_SHIFT);
    nf_stop(&nf);

    args = g_strdup_printf(
        NF_QTEST_MACHINE("memory-backend-file,id=vmem0,share=on,mem-path=%s,size=256M",
                         ",shared-state=%s,head=0,heads=1"), mem, state);
    nf.qts = qtest_init(args);
    nf_bringup(&nf);
    g_assert_cmphex(rd32(&nf, NFABRIC_REG_HEAD_INFO), ==,
                    NFABRIC_HEAD_INFO_SHARED | NFABRIC_HEAD_INFO_STAGING |
                    1 << NFABRIC_HEAD_INFO_COUNT_SHIFT);
    nf_stop(&nf);
    unlink(mem);
    unlink(state);
    rmdir(dir);
}

/*
 * 1.7: a posted window through the fixed memory window, as a guest's
 * stores reach it (the direct map: the staging as RAM; direct-map=off:
 * the I/O path into the staging): the stores count nothing, POST counts
 * them as a trapped window counts the same stores, FETCH brings the
 * read-out back; a device with posted=off refuses the enable (POSTED).
 */
static void posted_run(const char *extra)
{
    const uint64_t tb = 0x100000, pb = 0x200000;
    const uint64_t tc = 0x400000, pc = 0x500000, size = 4096;
    NF nf;

    nf_start_args(&nf, extra);
    g_assert_cmpuint(win_set(&nf, 0, tb, size, tc, 1, 8, 0, 1), ==, 0);
    wr64(&nf, NFABRIC_REG_WIN(1, NFABRIC_WIN_DPA_BASE), pb);
    wr64(&nf, NFABRIC_REG_WIN(1, NFABRIC_WIN_DPA_SIZE), size);
    wr64(&nf, NFABRIC_REG_WIN(1, NFABRIC_WIN_COUNTERS), pc);
    wr32(&nf, NFABRIC_REG_WIN(1, NFABRIC_WIN_CTRL), NFABRIC_WCTRL(1, 8, 0) |
         NFABRIC_WCTRL_ENABLE | NFABRIC_WCTRL_POSTED);
    g_assert_cmpuint(rd32(&nf, NFABRIC_REG_WIN(1, NFABRIC_WIN_ERROR)), ==, 0);
    for (uint64_t k = 0; k < size; k += 8) {
        uint64_t v = 0x9e3779b97f4a7c15ull * (k + 1);

        qtest_writeq(nf.qts, nf.hpa + tb + k, v);
        qtest_writeq(nf.qts, nf.hpa + pb + k, v);
    }
    g_assert_cmpuint(rd64(&nf, NFABRIC_REG_WIN(1, NFABRIC_WIN_CONTRIB_BYTES)),
                     ==, 0);
    wr32(&nf, NFABRIC_REG_POST(1, NFABRIC_STAGE_OFF), 0);
    wr32(&nf, NFABRIC_REG_POST(1, NFABRIC_POST), size);
    g_assert_cmpuint(rd32(&nf, NFABRIC_REG_ERROR_COUNT), ==, 0);
    g_assert_cmpuint(rd64(&nf, NFABRIC_REG_WIN(1, NFABRIC_WIN_CONTRIB_WRITES)),
                     ==, rd64(&nf, NFABRIC_REG_WIN(0, NFABRIC_WIN_CONTRIB_WRITES)));
    g_assert_cmpuint(rd64(&nf, NFABRIC_REG_WIN(1, NFABRIC_WIN_CONTRIB_BYTES)),
                     ==, size);
    for (uint64_t e = 0; e < size * 8; e += 61) {
        g_assert_cmpint(counter_read(&nf, pc, 8, e), ==,
                        counter_read(&nf, tc, 8, e));
    }
    wr32(&nf, NFABRIC_REG_POST(1, NFABRIC_FETCH), size);
    for (uint64_t k = 0; k < size; k += 8) {
        g_assert_cmphex(qtest_readq(nf.qts, nf.hpa + pb + k), ==,
                        qtest_readq(nf.qts, nf.hpa + tb + k));
    }
    nf_stop(&nf);
}

static void test_posted(void)
{
    NF nf;

    posted_run(NULL);
    posted_run("-global cxl-neuron-fabric.direct-map=off");
    nf_start_args(&nf, "-global cxl-neuron-fabric.posted=off");
    wr64(&nf, NFABRIC_REG_WIN(1, NFABRIC_WIN_DPA_BASE), 0x200000);
    wr64(&nf, NFABRIC_REG_WIN(1, NFABRIC_WIN_DPA_SIZE), 4096);
    wr64(&nf, NFABRIC_REG_WIN(1, NFABRIC_WIN_COUNTERS), 0x500000);
    wr32(&nf, NFABRIC_REG_WIN(1, NFABRIC_WIN_CTRL), NFABRIC_WCTRL(1, 8, 0) |
         NFABRIC_WCTRL_ENABLE | NFABRIC_WCTRL_POSTED);
    g_assert_cmpuint(rd32(&nf, NFABRIC_REG_WIN(1, NFABRIC_WIN_ERROR)), ==,
                     NFABRIC_ERR_POSTED);
    g_assert_cmpuint(rd32(&nf, NFABRIC_REG_ENABLED_MASK), ==, 0);
    nf_stop(&nf);
}

/*
 * 1.8: the interrupt, as a driver sets it up: MSI-X enabled in the
 * device's capability, the table entry IRQ_MSGNUM names pointed at guest
 * RAM (a message is then a 32-bit store there).  One message when the
 * enabled window's round becomes done, none when another register write
 * follows, none for a window nobody enabled, none with IRQ_ENABLE 0, none
 * while the vector is masked (pending in the PBA), sent when it is
 * unmasked.
 */
#define MSI_ADDR        0x100000ull     /* guest RAM: where messages land */
#define MSI_DATA        0x4e460000u

static uint8_t msix_cap(QTestState *qts)
{
    uint8_t off = cfg_readl(qts, DEV_BUS, 0, PCI_CAPABILITY_LIST) & 0xfc;

    for (int n = 0; off && n < 48; n++) {
        uint32_t hdr = cfg_readl(qts, DEV_BUS, 0, off);

        if ((hdr & 0xff) == PCI_CAP_ID_MSIX) {
            return off;
        }
        off = (hdr >> 8) & 0xfc;
    }
    return 0;
}

static uint32_t msi_take(NF *nf)
{
    uint32_t v = qtest_readl(nf->qts, MSI_ADDR);

    qtest_writel(nf->qts, MSI_ADDR, 0);
    return v;
}

/*
 * Point MSI-X vector num (table: the capability's table register) at
 * MSI_ADDR with data MSI_DATA | num, unmasked, and enable MSI-X as a driver
 * does; nothing pending afterwards.  The vector's table entry.
 */
static uint64_t msix_point(NF *nf, uint8_t cap, uint32_t ctl, uint32_t table,
                           uint32_t num)
{
    uint64_t entry = BAR4_ADDR + (table & ~PCI_MSIX_FLAGS_BIRMASK) +
                     num * PCI_MSIX_ENTRY_SIZE;

    qtest_writel(nf->qts, entry + PCI_MSIX_ENTRY_LOWER_ADDR, MSI_ADDR);
    qtest_writel(nf->qts, entry + PCI_MSIX_ENTRY_UPPER_ADDR, 0);
    qtest_writel(nf->qts, entry + PCI_MSIX_ENTRY_DATA, MSI_DATA | num);
    qtest_writel(nf->qts, entry + PCI_MSIX_ENTRY_VECTOR_CTRL, 0);
    cfg_writew(nf->qts, DEV_BUS, 0, cap + PCI_MSIX_FLAGS,
               (ctl & ~PCI_MSIX_FLAGS_MASKALL) | PCI_MSIX_FLAGS_ENABLE);
    msi_take(nf);
    return entry;
}

static void complete_round(NF *nf, int i)
{
    wr32(nf, NFABRIC_REG_ROUND(i, NFABRIC_ROUND_COMPLETE),
         rd32(nf, NFABRIC_REG_ROUND(i, NFABRIC_ROUND_SEQ)));
}

static void test_irq(void)
{
    NF nf;
    uint8_t cap;
    uint32_t ctl, num, table, nvec;
    uint64_t entry;

    nf_start(&nf);
    cap = msix_cap(nf.qts);
    g_assert_cmpuint(cap, !=, 0);
    ctl = cfg_readl(nf.qts, DEV_BUS, 0, cap) >> 16;
    nvec = (ctl & PCI_MSIX_FLAGS_QSIZE) + 1;
    table = cfg_readl(nf.qts, DEV_BUS, 0, cap + PCI_MSIX_TABLE);
    g_assert_cmpuint(table & PCI_MSIX_FLAGS_BIRMASK, ==, 4);   /* BAR4 */
    num = rd32(&nf, NFABRIC_REG_IRQ_MSGNUM);
    /* cxl-type3's own 8 vectors, then the device's two (1.9: the CPMU's). */
    g_assert_cmpuint(num, ==, nvec - 2);
    g_assert_cmpuint(nvec, ==, 10);
    entry = msix_point(&nf, cap, ctl, table, num);

    g_assert_cmpuint(win_set(&nf, 0, 0x100000, 64, 0x200000, 1, 8, 0, 1), ==, 0);
    g_assert_cmpuint(win_set(&nf, 1, 0x110000, 64, 0x210000, 1, 8, 0, 1), ==, 0);
    wr32(&nf, NFABRIC_REG_IRQ_ENABLE, NFABRIC_IRQ_DONE(0));
    complete_round(&nf, 1);
    g_assert_cmphex(msi_take(&nf), ==, 0);          /* nobody waits on 1 */
    complete_round(&nf, 0);
    g_assert_cmphex(msi_take(&nf), ==, MSI_DATA | num);
    g_assert_cmphex(rd32(&nf, NFABRIC_REG_IRQ_STATUS), ==, NFABRIC_IRQ_DONE(0));
    complete_round(&nf, 0);                         /* again: harmless */
    wr32(&nf, NFABRIC_REG_IRQ_STATUS, NFABRIC_IRQ_DONE(0));
    g_assert_cmphex(msi_take(&nf), ==, 0);          /* raised once */
    g_assert_cmphex(rd32(&nf, NFABRIC_REG_IRQ_STATUS), ==, 0);

    /* Disabled: nothing. */
    wr32(&nf, NFABRIC_REG_IRQ_ENABLE, 0);
    wr32(&nf, NFABRIC_REG_WIN(0, NFABRIC_WIN_CMD), NFABRIC_WCMD_CLEAR);
    complete_round(&nf, 0);
    g_assert_cmphex(msi_take(&nf), ==, 0);
    g_assert_cmphex(rd32(&nf, NFABRIC_REG_IRQ_STATUS), ==, 0);

    /* The vector masked: pending, sent at the unmask. */
    wr32(&nf, NFABRIC_REG_IRQ_ENABLE, NFABRIC_IRQ_DONE(0));
    wr32(&nf, NFABRIC_REG_WIN(0, NFABRIC_WIN_CMD), NFABRIC_WCMD_CLEAR);
    qtest_writel(nf.qts, entry + PCI_MSIX_ENTRY_VECTOR_CTRL,
                 PCI_MSIX_ENTRY_CTRL_MASKBIT);
    complete_round(&nf, 0);
    g_assert_cmphex(msi_take(&nf), ==, 0);
    qtest_writel(nf.qts, entry + PCI_MSIX_ENTRY_VECTOR_CTRL, 0);
    g_assert_cmphex(msi_take(&nf), ==, MSI_DATA | num);
    nf_stop(&nf);
}

/*
 * 1.9: the CXL PMU block where the Register Locator says (BAR0 + 128 KiB),
 * driven as Linux's cxl_pmu drives it: freeze all, configure, zero, unfreeze.
 * Its counters equal the statistics registers for G-Binary writes and
 * FP32 reads through the CXL.mem path; a counter written near the top
 * overflows: OVERFLOW, the message the capability names (at the next
 * access of the block, or within the 100 ms tick without one), every
 * counter frozen; refused configurations set LAST_ERROR.
 */
#define CPMU_ADDR       (BAR0_ADDR + NFABRIC_CPMU_OFFSET)

/* Counter n: a configurable one counting mask of event capability 0. */
static void cpmu_start(NF *nf, unsigned n, uint32_t mask)
{
    uint64_t cfg = qtest_readq(nf->qts, CPMU_ADDR +
                               NFABRIC_CPMU_REG_COUNTER_CFG(n));

    cfg |= NFABRIC_CPMU_CFG_ENABLE | NFABRIC_CPMU_CFG_INT |
           NFABRIC_CPMU_CFG_FREEZE_OVF;
    cfg |= (uint64_t)mask << NFABRIC_CPMU_CFG_EVENTS_SHIFT;
    qtest_writeq(nf->qts, CPMU_ADDR + NFABRIC_CPMU_REG_COUNTER_CFG(n), cfg);
    qtest_writeq(nf->qts, CPMU_ADDR + NFABRIC_CPMU_REG_COUNTER(n), 0);
}

static uint64_t cpmu_counter(NF *nf, unsigned n)
{
    return qtest_readq(nf->qts, CPMU_ADDR + NFABRIC_CPMU_REG_COUNTER(n));
}

static void test_cpmu(void)
{
    NF nf;
    uint8_t cap;
    uint32_t ctl, table, nvec, num;
    uint64_t pcap, gbw, fpr;

    nf_start_args(&nf, "-global cxl-neuron-fabric.direct-map=off");
    pcap = qtest_readq(nf.qts, CPMU_ADDR + NFABRIC_CPMU_REG_CAP);
    cap = msix_cap(nf.qts);
    ctl = cfg_readl(nf.qts, DEV_BUS, 0, cap) >> 16;
    nvec = (ctl & PCI_MSIX_FLAGS_QSIZE) + 1;
    num = (pcap & NFABRIC_CPMU_CAP_MSGNUM_MASK) >> NFABRIC_CPMU_CAP_MSGNUM_SHIFT;
    g_assert_true(pcap & NFABRIC_CPMU_CAP_INT);
    g_assert_true(pcap & NFABRIC_CPMU_CAP_FREEZE);
    g_assert_true(pcap & NFABRIC_CPMU_CAP_WRITABLE_FROZEN);
    g_assert_cmpuint(num, ==, nvec - 1);    /* the device's last vector */
    g_assert_cmpuint(num, !=, rd32(&nf, NFABRIC_REG_IRQ_MSGNUM));
    g_assert_cmphex(qtest_readq(nf.qts, CPMU_ADDR +
                                NFABRIC_CPMU_REG_EVENT_CAP(0)) >> 48, ==,
                    NFABRIC_CPMU_VENDOR_ID);
    table = cfg_readl(nf.qts, DEV_BUS, 0, cap + PCI_MSIX_TABLE);
    msix_point(&nf, cap, ctl, table, num);

    g_assert_cmpuint(win_set(&nf, 0, 0x1000, 4096, 0x10000,
                             NFABRIC_PATH_GBINARY, 8, 0, 0), ==, 0);
    gbw = stat_of(&nf, NFABRIC_PATH_GBINARY, NFABRIC_STATS_WRITES);
    fpr = stat_of(&nf, NFABRIC_PATH_FP32, NFABRIC_STATS_READS);
    qtest_writeq(nf.qts, CPMU_ADDR + NFABRIC_CPMU_REG_FREEZE, ~0ull);
    cpmu_start(&nf, 0, 1u << NFABRIC_CPMU_EV_WRITES(NFABRIC_PATH_GBINARY));
    cpmu_start(&nf, 1, 1u << NFABRIC_CPMU_EV_READS(NFABRIC_PATH_FP32));
    qtest_writeq(nf.qts, CPMU_ADDR + NFABRIC_CPMU_REG_FREEZE, 0);
    for (int i = 0; i < 40; i++) {
        qtest_writeq(nf.qts, nf.hpa + 0x1000 + 8 * i, 0x0123456789abcdefull * i);
    }
    for (int i = 0; i < 9; i++) {
        qtest_readl(nf.qts, nf.hpa + 0x80000 + 4 * i);
    }
    g_assert_cmpuint(cpmu_counter(&nf, 0), ==, 40);
    g_assert_cmpuint(cpmu_counter(&nf, 0), ==,
                     stat_of(&nf, NFABRIC_PATH_GBINARY, NFABRIC_STATS_WRITES) -
                     gbw);
    g_assert_cmpuint(cpmu_counter(&nf, 1), ==, 9);
    g_assert_cmpuint(cpmu_counter(&nf, 1), ==,
                     stat_of(&nf, NFABRIC_PATH_FP32, NFABRIC_STATS_READS) - fpr);
    g_assert_cmphex(msi_take(&nf), ==, 0);

    /* Overflow seen at the next access of the block. */
    qtest_writeq(nf.qts, CPMU_ADDR + NFABRIC_CPMU_REG_COUNTER(0),
                 (1ull << NFABRIC_CPMU_WIDTH) - 2);
    for (int i = 0; i < 3; i++) {
        qtest_writeq(nf.qts, nf.hpa + 0x1000 + 8 * i, 1);
    }
    g_assert_cmphex(qtest_readq(nf.qts, CPMU_ADDR + NFABRIC_CPMU_REG_OVERFLOW),
                    ==, 1);
    g_assert_cmphex(msi_take(&nf), ==, MSI_DATA | num);
    g_assert_cmpuint(cpmu_counter(&nf, 0), ==, 1);
    g_assert_cmphex(qtest_readq(nf.qts, CPMU_ADDR + NFABRIC_CPMU_REG_FREEZE),
                    ==, (1ull << NFABRIC_CPMU_COUNTERS) - 1);
    qtest_writeq(nf.qts, nf.hpa + 0x1000, 2);
    g_assert_cmpuint(cpmu_counter(&nf, 0), ==, 1);      /* frozen */
    g_assert_cmphex(msi_take(&nf), ==, 0);              /* once */

    /* Overflow with no access of the block: the tick finds it. */
    qtest_writeq(nf.qts, CPMU_ADDR + NFABRIC_CPMU_REG_OVERFLOW, 1);
    qtest_writeq(nf.qts, CPMU_ADDR + NFABRIC_CPMU_REG_COUNTER(0),
                 (1ull << NFABRIC_CPMU_WIDTH) - 1);
    qtest_writeq(nf.qts, CPMU_ADDR + NFABRIC_CPMU_REG_FREEZE, 0);
    qtest_writeq(nf.qts, nf.hpa + 0x1000, 3);
    qtest_writeq(nf.qts, nf.hpa + 0x1008, 3);
    g_assert_cmphex(msi_take(&nf), ==, 0);
    qtest_clock_step(nf.qts, 150 * 1000 * 1000);
    g_assert_cmphex(msi_take(&nf), ==, MSI_DATA | num);
    g_assert_cmphex(qtest_readq(nf.qts, CPMU_ADDR + NFABRIC_CPMU_REG_OVERFLOW),
                    ==, 1);

    /* A configuration naming an event capability it does not have. */
    qtest_writeq(nf.qts, CPMU_ADDR + NFABRIC_CPMU_REG_COUNTER_CFG(2),
                 31ull << NFABRIC_CPMU_CFG_GROUP_SHIFT | NFABRIC_CPMU_CFG_ENABLE);
    g_assert_cmpuint(rd32(&nf, NFABRIC_REG_LAST_ERROR), ==,
                     NFABRIC_ERR_RESERVED_BITS);
    g_assert_cmphex(qtest_readq(nf.qts, CPMU_ADDR +
                                NFABRIC_CPMU_REG_COUNTER_CFG(2)), ==,
                    NFABRIC_CPMU_CFG_TYPE_CONFIGURABLE);
    nf_stop(&nf);
}

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);

    qtest_add_func("/nfabric/ident", test_ident);
    qtest_add_func("/nfabric/register-locator", test_regloc);
    qtest_add_func("/nfabric/fp32-identity", test_fp32_identity);
    qtest_add_func("/nfabric/validation", test_validation);
    qtest_add_func("/nfabric/gbinary", test_gbinary);
    qtest_add_func("/nfabric/gbinary-saturation", test_gbinary_saturation);
    qtest_add_func("/nfabric/gternary", test_gternary);
    qtest_add_func("/nfabric/stats-timing", test_stats_and_timing);
    qtest_add_func("/nfabric/direct-map", test_direct_map);
    qtest_add_func("/nfabric/direct-map-off", test_direct_map_off);
    qtest_add_func("/nfabric/direct-map-fp32", test_direct_map_fp32);
    qtest_add_func("/nfabric/timing-properties", test_timing_properties);
    qtest_add_func("/nfabric/reset-defaults", test_reset_defaults);
    qtest_add_func("/nfabric/record-replay", test_record_replay);
    qtest_add_func("/nfabric/head-info", test_head_info);
    qtest_add_func("/nfabric/posted", test_posted);
    qtest_add_func("/nfabric/irq", test_irq);
    qtest_add_func("/nfabric/cpmu", test_cpmu);
    return g_test_run();
}
