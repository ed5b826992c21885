/*
 * QTest: migration of the NEURON-Fabric device (cxl-neuron-fabric) in the
 * middle of an aggregation round.
 *
 * The source runs a G-Binary round (16-bit counters, tie POSITIVE) and a
 * G-Ternary round (threshold 2) half-way, plus FP32 traffic, register
 * errors and a disabled but programmed window; it is then migrated to a
 * destination QEMU started with -incoming (both with the qtest
 * accelerator), over a unix socket or through a file (exec:).  On the
 * destination every register of the block must read what it read on the
 * source (windows, ENABLED_MASK, contribution counts, errors, statistics,
 * timing figures), the HDM decoder must still be committed (CXL.mem
 * reaches device memory), and the counter areas and the majority / gated
 * read-back must be identical to the source's and to a host reference.
 * The round is then completed on the destination and checked against the
 * host reference: counters, read-back, CONTRIB_* counts, and the timing
 * figures grown by exactly the modelled time of the new accesses.
 * live-writes contributes while the migration iterates and after it, at
 * pre-switchover, and checks that every contribution arrived.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */

#include "qemu/osdep.h"
#include "libqtest.h"
#include "nfabric-qtest.h"
#include "qobject/qdict.h"
#include "hw/pci/pci_regs.h"
#include "hw/mem/nfabric_regs.h"

/* The rounds. */
#define GB_WIN          2
#define GB_BASE         0x200000ull
#define GB_BYTES        256
#define GB_CTRS         0x300000ull
#define GB_WIDTH        16
#define GB_CONTRIB      12              /* 6 before, 6 after migration */
#define GT_WIN          5
#define GT_BASE         0x400000ull
#define GT_BYTES        64
#define GT_CTRS         0x500000ull
#define GT_T            2
#define GT_CONTRIB      8
#define FP_WIN          9
#define FP_BASE         0x600000ull

/* The device and its registers (rd32, wr32, ...): nfabric-qtest.h. */
typedef NFDev NF;

typedef struct Ref {
    int gb[GB_BYTES * 8];
    int gt[GT_BYTES * 4];
    uint64_t gb_writes, gb_bytes, gt_writes, gt_bytes, gt_reserved;
    GRand *rand;
} Ref;

/* ---- bring-up (PCI config and the window: nfabric-qtest.h) ---------- */

static void nf_start(NF *nf)
{
    QTestState *qts = nf->qts = qtest_init(NF_CMDLINE);

    map_device(qts);
    nf->regs = BAR0_ADDR + NFABRIC_REGS_OFFSET;
    nf->hpa = find_cfmw_base(qts);
    nf->hdm = find_hdm(qts);
    /* HDM decoder 0: HPA [hpa, hpa + MEM_SIZE) -> DPA 0, committed. */
    commit_hdm_at(qts, nf->hdm, nf->hpa, 0);
}

static uint32_t win_set(NF *nf, int i, uint64_t base, uint64_t size,
                        uint64_t counters, uint32_t ctrl, uint32_t thr)
{
    wr64(nf, NFABRIC_REG_WIN(i, NFABRIC_WIN_DPA_BASE), base);
    wr64(nf, NFABRIC_REG_WIN(i, NFABRIC_WIN_DPA_SIZE), size);
    wr64(nf, NFABRIC_REG_WIN(i, NFABRIC_WIN_COUNTERS), counters);
    wr32(nf, NFABRIC_REG_WIN(i, NFABRIC_WIN_THRESHOLD), thr);
    wr32(nf, NFABRIC_REG_WIN(i, NFABRIC_WIN_CTRL), ctrl);
    return rd32(nf, NFABRIC_REG_WIN(i, NFABRIC_WIN_ERROR));
}

/* The G-Binary and the G-Ternary round's windows, enabled. */
static void enable_rounds(NF *nf)
{
    g_assert_cmpuint(win_set(nf, GB_WIN, GB_BASE, GB_BYTES, GB_CTRS,
                             NFABRIC_WCTRL(NFABRIC_PATH_GBINARY, GB_WIDTH,
                                           NFABRIC_TIE_POSITIVE) |
                             NFABRIC_WCTRL_ENABLE, 0), ==, 0);
    g_assert_cmpuint(win_set(nf, GT_WIN, GT_BASE, GT_BYTES, GT_CTRS,
                             NFABRIC_WCTRL(NFABRIC_PATH_GTERNARY, 8, 0) |
                             NFABRIC_WCTRL_ENABLE, GT_T), ==, 0);
}

/* ---- the register block ------------------------------------------------- */

typedef struct Reg {
    uint32_t off;
    unsigned size;
} Reg;

static Reg regs[256];
static unsigned nregs;

static void add(uint32_t off, unsigned size)
{
    regs[nregs++] = (Reg){ off, size };
}

/* Every readable register of docs/registers.md (reads change nothing). */
static void build_regs(void)
{
    for (uint32_t o = 0; o < 0x20; o += 4) {
        add(o, 4);              /* MAGIC .. ENABLED_MASK (CTRL reads 0) */
    }
    add(NFABRIC_REG_MEM_SIZE, 8);
    for (uint32_t o = 0; o < NFABRIC_NUM_PATHS * NFABRIC_STATS_STRIDE; o += 8) {
        add(NFABRIC_REG_STATS + o, 8);
    }
    for (uint32_t o = 0x200; o <= 0x210; o += 4) {
        add(o, 4);              /* timing parameters, T_EXPOSED_PPM */
    }
    add(NFABRIC_REG_T_TOTAL_PS, 8);
    for (uint32_t o = 0; o < NFABRIC_NUM_PATHS * NFABRIC_T_PATH_STRIDE; o += 8) {
        add(NFABRIC_REG_T_PATH + o, 8);
    }
#ifdef NFABRIC_REG_T_ACCESSES
    add(NFABRIC_REG_T_RUNTIME_PS, 8);
    add(NFABRIC_REG_T_QUEUED_PS, 8);
    add(NFABRIC_REG_T_LINK_BUSY_PS, 8);
    for (int p = 0; p < NFABRIC_NUM_PATHS; p++) {
        add(NFABRIC_REG_T_ACCESSES_PATH(p), 8);
    }
#endif
    for (int i = 0; i < NFABRIC_NUM_WINDOWS; i++) {
        add(NFABRIC_REG_WIN(i, NFABRIC_WIN_DPA_BASE), 8);
        add(NFABRIC_REG_WIN(i, NFABRIC_WIN_DPA_SIZE), 8);
        add(NFABRIC_REG_WIN(i, NFABRIC_WIN_COUNTERS), 8);
        add(NFABRIC_REG_WIN(i, NFABRIC_WIN_CTRL), 4);
        add(NFABRIC_REG_WIN(i, NFABRIC_WIN_THRESHOLD), 4);
        add(NFABRIC_REG_WIN(i, NFABRIC_WIN_ERROR), 4);
        add(NFABRIC_REG_WIN(i, NFABRIC_WIN_CONTRIB_WRITES), 8);
        add(NFABRIC_REG_WIN(i, NFABRIC_WIN_CONTRIB_BYTES), 8);
        add(NFABRIC_REG_WIN(i, NFABRIC_WIN_RESERVED_CODES), 4);
    }
}

static void read_regs(NF *nf, uint64_t *v)
{
    for (unsigned i = 0; i < nregs; i++) {
        v[i] = regs[i].size == 8 ? rd64(nf, regs[i].off) : rd32(nf, regs[i].off);
    }
}

/* ---- the rounds and their host reference -------------------------------- */

static int sat(int v, unsigned width)
{
    int max = (1 << (width - 1)) - 1;

    return v > max ? max : v < -max - 1 ? -max - 1 : v;
}

static void contribute(NF *nf, Ref *r, unsigned gb, unsigned gt)
{
    for (unsigned c = 0; c < gb; c++) {
        for (unsigned w = 0; w < GB_BYTES / 8; w++) {
            uint64_t v = (uint64_t)g_rand_int(r->rand) << 32 |
                         g_rand_int(r->rand);

            qtest_writeq(nf->qts, nf->hpa + GB_BASE + 8 * w, v);
            for (unsigned b = 0; b < 64; b++) {
                int *e = &r->gb[w * 64 + b];

                *e = sat(*e + ((v >> b) & 1 ? 1 : -1), GB_WIDTH);
            }
            r->gb_writes++;
            r->gb_bytes += 8;
        }
    }
    for (unsigned c = 0; c < gt; c++) {
        for (unsigned w = 0; w < GT_BYTES / 4; w++) {
            uint32_t v = g_rand_int(r->rand);

            for (unsigned k = 0; k < 16; k++) {
                unsigned code = (v >> (2 * k)) & 3;

                if (code == NFABRIC_TERN_RESERVED) {
                    r->gt_reserved++;
                    continue;
                }
                r->gt[w * 16 + k] = sat(r->gt[w * 16 + k] +
                                        (code == NFABRIC_TERN_PLUS ? 1 :
                                         code == NFABRIC_TERN_MINUS ? -1 : 0),
                                        8);
            }
            qtest_writel(nf->qts, nf->hpa + GT_BASE + 4 * w, v);
            r->gt_writes++;
            r->gt_bytes += 4;
        }
    }
}

/* Counter areas and read-back against the reference (and return them). */
static void check_round(NF *nf, const Ref *r, uint8_t *gb_ctrs,
                        uint8_t *gt_ctrs)
{
    uint8_t out[GB_BYTES];

    qtest_memread(nf->qts, nf->hpa + GB_CTRS, gb_ctrs, GB_BYTES * 8 * 2);
    for (unsigned e = 0; e < GB_BYTES * 8; e++) {
        int16_t c = gb_ctrs[2 * e] | gb_ctrs[2 * e + 1] << 8;

        g_assert_cmpint(c, ==, r->gb[e]);
    }
    qtest_memread(nf->qts, nf->hpa + GB_BASE, out, GB_BYTES);
    for (unsigned i = 0; i < GB_BYTES; i++) {
        uint8_t want = 0;

        for (unsigned b = 0; b < 8; b++) {
            int c = r->gb[i * 8 + b];

            want |= (c > 0 ? 1 : c < 0 ? 0 : 1 /* POSITIVE */) << b;
        }
        g_assert_cmphex(out[i], ==, want);
    }
    qtest_memread(nf->qts, nf->hpa + GT_CTRS, gt_ctrs, GT_BYTES * 4);
    for (unsigned e = 0; e < GT_BYTES * 4; e++) {
        g_assert_cmpint((int8_t)gt_ctrs[e], ==, r->gt[e]);
    }
    qtest_memread(nf->qts, nf->hpa + GT_BASE, out, GT_BYTES);
    for (unsigned i = 0; i < GT_BYTES; i++) {
        uint8_t want = 0;

        for (unsigned k = 0; k < 4; k++) {
            int c = r->gt[i * 4 + k];

            want |= (c >= GT_T ? NFABRIC_TERN_PLUS : c <= -GT_T ?
                     NFABRIC_TERN_MINUS : NFABRIC_TERN_ZERO) << (2 * k);
        }
        g_assert_cmphex(out[i], ==, want);
    }
    g_assert_cmpuint(rd64(nf, NFABRIC_REG_WIN(GB_WIN,
                          NFABRIC_WIN_CONTRIB_WRITES)), ==, r->gb_writes);
    g_assert_cmpuint(rd64(nf, NFABRIC_REG_WIN(GB_WIN,
                          NFABRIC_WIN_CONTRIB_BYTES)), ==, r->gb_bytes);
    g_assert_cmpuint(rd64(nf, NFABRIC_REG_WIN(GT_WIN,
                          NFABRIC_WIN_CONTRIB_WRITES)), ==, r->gt_writes);
    g_assert_cmpuint(rd32(nf, NFABRIC_REG_WIN(GT_WIN,
                          NFABRIC_WIN_RESERVED_CODES)), ==, r->gt_reserved);
}

/* ---- migration ------------------------------------------------------------ */

static const char *migrate_status(QTestState *qts)
{
    static char buf[64];
    QDict *rsp = qtest_qmp(qts, "{'execute': 'query-migrate'}");
    QDict *ret = qdict_get_qdict(rsp, "return");
    const char *st = ret && qdict_haskey(ret, "status") ?
                     qdict_get_str(ret, "status") : "none";

    if (!strcmp(st, "failed") && qdict_haskey(ret, "error-desc")) {
        g_test_message("migration failed: %s",
                       qdict_get_str(ret, "error-desc"));
    }
    g_strlcpy(buf, st, sizeof(buf));
    qobject_unref(rsp);
    return buf;
}

static const char *run_status(QTestState *qts)
{
    static char buf[64];
    QDict *rsp = qtest_qmp(qts, "{'execute': 'query-status'}");

    g_strlcpy(buf, qdict_get_str(qdict_get_qdict(rsp, "return"), "status"),
              sizeof(buf));
    qobject_unref(rsp);
    return buf;
}

static void wait_migrated(QTestState *qts)
{
    for (int i = 0; i < 6000; i++) {
        const char *st = migrate_status(qts);

        g_assert_cmpstr(st, !=, "failed");
        if (!strcmp(st, "completed")) {
            return;
        }
        g_usleep(10 * 1000);
    }
    g_assert_not_reached();
}

static void check_no_error(QDict *rsp)
{
    if (qdict_haskey(rsp, "error")) {
        g_test_message("QMP error: %s",
                       qdict_get_str(qdict_get_qdict(rsp, "error"), "desc"));
        g_assert_not_reached();
    }
    qobject_unref(rsp);
}

/* Migrate src to a new QEMU; over a unix socket, or through a file. */
static QTestState *migrate(QTestState *src, bool via_file)
{
    g_autofree char *dir = g_dir_make_tmp("nfabric-mig-XXXXXX", NULL);
    g_autofree char *path = g_build_filename(dir, via_file ? "state" : "sock",
                                             NULL);
    g_autofree char *out_uri = via_file ?
        g_strdup_printf("exec:cat > %s", path) :
        g_strdup_printf("unix:%s", path);
    g_autofree char *in_uri = via_file ?
        g_strdup_printf("exec:cat %s", path) : g_strdup(out_uri);
    QTestState *dst;

    g_assert(dir);
    if (via_file) {
        /* The whole state goes to the file first, then a new QEMU reads it. */
        check_no_error(qtest_qmp(src, "{'execute': 'migrate', 'arguments': "
                                 "{'uri': %s}}", out_uri));
        wait_migrated(src);
        dst = qtest_initf(NF_CMDLINE "-incoming defer");
        check_no_error(qtest_qmp(dst, "{'execute': 'migrate-incoming', "
                                 "'arguments': {'uri': %s}}", in_uri));
    } else {
        dst = qtest_initf(NF_CMDLINE "-incoming defer");
        check_no_error(qtest_qmp(dst, "{'execute': 'migrate-incoming', "
                                 "'arguments': {'uri': %s}}", in_uri));
        check_no_error(qtest_qmp(src, "{'execute': 'migrate', 'arguments': "
                                 "{'uri': %s}}", out_uri));
        wait_migrated(src);
    }
    wait_migrated(dst);
    g_assert_cmpstr(run_status(src), ==, "postmigrate");
    for (int i = 0; i < 1000 && strcmp(run_status(dst), "running"); i++) {
        g_usleep(10 * 1000);
    }
    g_assert_cmpstr(run_status(dst), ==, "running");
    unlink(path);
    rmdir(dir);
    return dst;
}

static void run_migration(bool via_file)
{
    NF src, dst;
    Ref ref = { 0 };
    g_autofree uint64_t *before = g_new0(uint64_t, nregs);
    g_autofree uint64_t *after = g_new0(uint64_t, nregs);
    g_autofree uint8_t *gb_src = g_malloc(GB_BYTES * 16);
    g_autofree uint8_t *gb_dst = g_malloc(GB_BYTES * 16);
    uint8_t gt_src[GT_BYTES * 4], gt_dst[GT_BYTES * 4];
    uint64_t fp_pat = 0x0123456789abcdefull, total, gb_ps, t_fp, t_gt;
    uint32_t rp_bus;
    unsigned bad = 0;

    ref.rand = g_rand_new_with_seed(via_file ? 4242 : 2424);
    nf_start(&src);
    enable_rounds(&src);
    g_assert_cmpuint(win_set(&src, FP_WIN, FP_BASE, 0x1000, 0,
                             NFABRIC_WCTRL(NFABRIC_PATH_FP32, 0, 0) |
                             NFABRIC_WCTRL_ENABLE, 0), ==, 0);
    /* Programmed, disabled; and a refused one. */
    win_set(&src, 11, 0x700000, 0x80, 0x710000,
            NFABRIC_WCTRL(NFABRIC_PATH_GTERNARY, 16, 0), 9);
    g_assert_cmpuint(win_set(&src, 12, GB_BASE, 64, 0x720000,
                             NFABRIC_WCTRL(NFABRIC_PATH_GBINARY, 8, 0) |
                             NFABRIC_WCTRL_ENABLE, 0), ==, NFABRIC_ERR_OVERLAP);
    wr32(&src, NFABRIC_REG_MAGIC, 0);           /* READONLY */

    /* Half of each round, and FP32 traffic. */
    contribute(&src, &ref, GB_CONTRIB / 2, GT_CONTRIB / 2);
    for (int i = 0; i < 32; i++) {
        qtest_writeq(src.qts, src.hpa + FP_BASE + 8 * i, fp_pat * i);
        qtest_writel(src.qts, src.hpa + 0x800000 + 4 * i, i);
    }
    check_round(&src, &ref, gb_src, gt_src);
    read_regs(&src, before);
    g_assert_cmpuint(rd32(&src, NFABRIC_REG_ENABLED_MASK), ==,
                     1u << GB_WIN | 1u << GT_WIN | 1u << FP_WIN);

    dst.qts = migrate(src.qts, via_file);
    dst.regs = src.regs;
    dst.hpa = src.hpa;
    dst.hdm = src.hdm;

    /*
     * The root port's bus numbers, memory window and command register
     * migrated (qemu-patches/0007: cxl-rp VMState); without them BAR0
     * would be unreachable.
     */
    rp_bus = cfg_readl(dst.qts, RP_BUS, 0, PCI_PRIMARY_BUS);
    g_assert_cmphex(rp_bus & 0xffffff, ==, RP_BUS | DEV_BUS << 8 | DEV_BUS << 16);
    g_assert_cmphex(cfg_readl(dst.qts, RP_BUS, 0, PCI_MEMORY_BASE) & 0xffff,
                    ==, (BAR0_ADDR >> 16) & 0xfff0);
    g_assert(cfg_readl(dst.qts, RP_BUS, 0, PCI_COMMAND) & PCI_COMMAND_MEMORY);
    /* The device's PCI configuration migrated: BAR0, memory decoding. */
    g_assert_cmphex(cfg_readl(dst.qts, DEV_BUS, 0, PCI_BASE_ADDRESS_0) &
                    ~0xfu, ==, BAR0_ADDR);
    g_assert(cfg_readl(dst.qts, DEV_BUS, 0, PCI_COMMAND) & PCI_COMMAND_MEMORY);
    /* The HDM decoder is still committed, to the same range. */
    g_assert(qtest_readl(dst.qts, dst.hdm + 0x20) & (1 << 10));
    g_assert_cmphex(qtest_readl(dst.qts, dst.hdm + 0x10), ==,
                    dst.hpa & 0xf0000000u);

    read_regs(&dst, after);
    for (unsigned i = 0; i < nregs; i++) {
        if (before[i] != after[i]) {
            g_test_message("register 0x%03x: source 0x%" PRIx64
                           ", destination 0x%" PRIx64, regs[i].off,
                           before[i], after[i]);
            bad++;
        }
    }
    g_assert_cmpuint(bad, ==, 0);

    /* FP32 data (in a window and outside) came over as the backend's RAM. */
    g_assert_cmphex(qtest_readq(dst.qts, dst.hpa + FP_BASE + 8 * 5), ==,
                    fp_pat * 5);
    g_assert_cmphex(qtest_readl(dst.qts, dst.hpa + 0x800000 + 4 * 31), ==, 31);

    /* Device memory and read-back identical, and equal to the reference. */
    check_round(&dst, &ref, gb_dst, gt_dst);
    g_assert_cmpmem(gb_src, GB_BYTES * 16, gb_dst, GB_BYTES * 16);
    g_assert_cmpmem(gt_src, sizeof(gt_src), gt_dst, sizeof(gt_dst));

    /*
     * The rest of the round on the destination.  The timing figures go on
     * from where the source left: G-Binary grows by exactly the modelled
     * time of the new accesses (LLC-miss regime: service + 8 bytes on the
     * link + the datapath, 300000 + 250 + 5000 ps each).
     */
    gb_ps = rd64(&dst, NFABRIC_REG_T_PATH_FIELD(NFABRIC_PATH_GBINARY,
                                                NFABRIC_T_PATH_TIME_PS));
    contribute(&dst, &ref, GB_CONTRIB / 2, 0);
    g_assert_cmpuint(rd64(&dst, NFABRIC_REG_T_PATH_FIELD(NFABRIC_PATH_GBINARY,
                          NFABRIC_T_PATH_TIME_PS)), ==,
                     gb_ps + (uint64_t)(GB_CONTRIB / 2) * (GB_BYTES / 8) *
                     (300000 + 250 + 5000));
    contribute(&dst, &ref, 0, GT_CONTRIB / 2);
    check_round(&dst, &ref, gb_dst, gt_dst);
    total = rd64(&dst, NFABRIC_REG_T_TOTAL_PS);
    t_fp = rd64(&dst, NFABRIC_REG_T_PATH_FIELD(NFABRIC_PATH_FP32, 0));
    t_gt = rd64(&dst, NFABRIC_REG_T_PATH_FIELD(NFABRIC_PATH_GTERNARY, 0));
    g_assert_cmpuint(total, ==, t_fp + t_gt +
                     rd64(&dst, NFABRIC_REG_T_PATH_FIELD(NFABRIC_PATH_GBINARY,
                                                         0)));
    g_assert_cmpuint(rd64(&dst, NFABRIC_REG_STATS_PATH(NFABRIC_PATH_GBINARY,
                          NFABRIC_STATS_WRITES)), ==, ref.gb_writes);
    g_assert_cmpuint(rd32(&dst, NFABRIC_REG_ERROR_COUNT), ==, 2);

    /* A new round on the destination starts from zero. */
    wr32(&dst, NFABRIC_REG_WIN(GB_WIN, NFABRIC_WIN_CMD), NFABRIC_WCMD_CLEAR);
    g_assert_cmphex(qtest_readq(dst.qts, dst.hpa + GB_BASE), ==, ~0ull);
    g_assert_cmpuint(rd64(&dst, NFABRIC_REG_WIN(GB_WIN,
                          NFABRIC_WIN_CONTRIB_WRITES)), ==, 0);

    qtest_quit(src.qts);
    qtest_quit(dst.qts);
    g_rand_free(ref.rand);
}

/*
 * Contributions while the migration runs: during the iterations, and
 * after them with the source stopped at pre-switchover (before the final
 * pass).  All of them must arrive: the device marks what it writes dirty
 * while migration tracks the RAM.
 */
static void test_migrate_live(void)
{
    g_autofree char *dir = g_dir_make_tmp("nfabric-mig-XXXXXX", NULL);
    g_autofree char *path = g_build_filename(dir, "sock", NULL);
    g_autofree char *uri = g_strdup_printf("unix:%s", path);
    g_autofree uint8_t *gb = g_malloc(GB_BYTES * 16);
    uint8_t gt[GT_BYTES * 4];
    unsigned during = 0, i;
    Ref ref = { 0 };
    NF src, dst;
    const char *st = "setup";

    ref.rand = g_rand_new_with_seed(777);
    nf_start(&src);
    enable_rounds(&src);
    contribute(&src, &ref, 1, 1);

    dst.qts = qtest_initf(NF_CMDLINE "-incoming defer");
    check_no_error(qtest_qmp(dst.qts, "{'execute': 'migrate-incoming', "
                             "'arguments': {'uri': %s}}", uri));
    check_no_error(qtest_qmp(src.qts, "{'execute': 'migrate-set-capabilities',"
                             " 'arguments': {'capabilities': [{'capability': "
                             "'pause-before-switchover', 'state': true}]}}"));
    check_no_error(qtest_qmp(src.qts, "{'execute': 'migrate-set-parameters', "
                             "'arguments': {'max-bandwidth': 4194304}}"));
    check_no_error(qtest_qmp(src.qts, "{'execute': 'migrate', 'arguments': "
                             "{'uri': %s}}", uri));
    for (i = 0; i < 20000; i++) {
        st = migrate_status(src.qts);
        g_assert_cmpstr(st, !=, "failed");
        if (strcmp(st, "setup") && strcmp(st, "active")) {
            break;
        }
        contribute(&src, &ref, 1, 1);
        during++;
    }
    g_assert_cmpstr(st, ==, "pre-switchover");
    /* Stopped, final pass not yet done: these must go with it. */
    contribute(&src, &ref, 2, 2);
    check_no_error(qtest_qmp(src.qts, "{'execute': 'migrate-continue', "
                             "'arguments': {'state': 'pre-switchover'}}"));
    wait_migrated(src.qts);
    wait_migrated(dst.qts);
    g_test_message("%u contributions during the iterations, 2 at "
                   "pre-switchover", during);

    dst.regs = src.regs;
    dst.hpa = src.hpa;
    map_root_port(dst.qts);
    check_round(&dst, &ref, gb, gt);
    qtest_quit(src.qts);
    qtest_quit(dst.qts);
    unlink(path);
    rmdir(dir);
    g_rand_free(ref.rand);
}

static void test_migrate_unix(void)
{
    run_migration(false);
}

static void test_migrate_file(void)
{
    run_migration(true);
}

/* A destination whose device has other timing parameters still loads;
 * a corrupt window table in the stream is refused (post_load). */
static void test_migrate_refused(void)
{
    g_autofree char *dir = g_dir_make_tmp("nfabric-mig-XXXXXX", NULL);
    g_autofree char *path = g_build_filename(dir, "state", NULL);
    g_autofree char *out_uri = g_strdup_printf("exec:cat > %s", path);
    g_autofree char *in_uri = g_strdup_printf("exec:cat %s", path);
    g_autofree char *bad_uri = NULL;
    g_autofree gchar *data = NULL;
    gsize len;
    NF src;
    QTestState *dst;
    const char *st = NULL;
    uint8_t *p;
    /* Window 3's DPA_BASE and DPA_SIZE in the stream (big-endian). */
    static const uint8_t needle[16] = {
        0x00, 0x00, 0x00, 0x00, 0x00, 0x9a, 0x00, 0x00,     /* 0x9a0000 */
        0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x80, 0x00,     /* 0x8000 */
    };

    nf_start(&src);
    g_assert_cmpuint(win_set(&src, 3, 0x9a0000, 0x8000, 0xa00000,
                             NFABRIC_WCTRL(NFABRIC_PATH_GBINARY, 8, 0) |
                             NFABRIC_WCTRL_ENABLE, 0), ==, 0);
    check_no_error(qtest_qmp(src.qts, "{'execute': 'migrate', 'arguments': "
                             "{'uri': %s}}", out_uri));
    wait_migrated(src.qts);
    qtest_quit(src.qts);

    /* Find window 3 in the device's section (big-endian fields) and make
     * its length 0: an enabled window that no longer validates. */
    g_assert(g_file_get_contents(path, &data, &len, NULL));
    p = memmem(data, len, needle, sizeof(needle));
    g_assert(p);
    g_assert(!memmem(p + 1, len - (p + 1 - (uint8_t *)data), needle,
                     sizeof(needle)));
    p[8 + 6] = 0;
    bad_uri = g_strdup_printf("exec:cat %s.bad", path);
    {
        g_autofree char *bad = g_strdup_printf("%s.bad", path);

        g_assert(g_file_set_contents(bad, data, len, NULL));
    }
    dst = qtest_initf(NF_CMDLINE "-incoming defer");
    /* exit-on-error false: stay up and report "failed" (QEMU >= 9.1). */
    check_no_error(qtest_qmp(dst, "{'execute': 'migrate-incoming', "
                             "'arguments': {'uri': %s, 'exit-on-error': false}}",
                             bad_uri));
    for (int i = 0; i < 1000; i++) {
        st = migrate_status(dst);
        if (!strcmp(st, "failed") || !strcmp(st, "completed")) {
            break;
        }
        g_usleep(10 * 1000);
    }
    g_assert_cmpstr(st, ==, "failed");
    qtest_quit(dst);

    /* The untouched stream loads. */
    dst = qtest_initf(NF_CMDLINE "-incoming defer");
    check_no_error(qtest_qmp(dst, "{'execute': 'migrate-incoming', "
                             "'arguments': {'uri': %s}}", in_uri));
    wait_migrated(dst);
    qtest_quit(dst);
    {
        g_autofree char *bad = g_strdup_printf("%s.bad", path);

        unlink(bad);
    }
    unlink(path);
    rmdir(dir);
}

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    build_regs();

    qtest_add_func("/nfabric-migration/unix-socket", test_migrate_unix);
    qtest_add_func("/nfabric-migration/file", test_migrate_file);
    qtest_add_func("/nfabric-migration/live-writes", test_migrate_live);
    qtest_add_func("/nfabric-migration/corrupt-stream-refused",
                   test_migrate_refused);
    return g_test_run();
}
