/*
 * Shared by the NEURON-Fabric qtests: the platform they build (a q35 with a
 * CXL host bridge, one root port and the device) and PCI configuration
 * through 0xcf8/0xcfc, since the device sits behind a bus that libqos's
 * PCI helpers do not reach.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#ifndef NFABRIC_QTEST_H
#define NFABRIC_QTEST_H

#include "libqtest.h"
#include "hw/pci/pci_regs.h"
#include "hw/mem/nfabric_regs.h"

/*
 * The machine every NEURON-Fabric qtest boots (the one scripts/nfmachine
 * boots guests on, without the guest): q35 with CXL, host bridge cxl.1,
 * root port rp0, the device nf0 on 256 MiB in BACKEND (an -object for
 * id vmem0), PROPS more device properties ("" or ",k=v,...").
 */
#define NF_QTEST_MACHINE(backend, props) \
    "-machine q35,cxl=on -m 128M " \
    "-object " backend " " \
    "-device pxb-cxl,bus_nr=12,bus=pcie.0,id=cxl.1 " \
    "-device cxl-rp,port=0,bus=cxl.1,id=rp0,chassis=0,slot=2 " \
    "-device cxl-neuron-fabric,bus=rp0,volatile-memdev=vmem0,id=nf0" props " " \
    "-M cxl-fmw.0.targets.0=cxl.1,cxl-fmw.0.size=4G "
#define NF_QTEST_RAM    "memory-backend-ram,id=vmem0,size=256M"
#define NF_CMDLINE      NF_QTEST_MACHINE(NF_QTEST_RAM, "")

#define MEM_SIZE        (256 * 1024 * 1024ull)
#define RP_BUS          12
#define DEV_BUS         13
#define BAR0_ADDR       0xc0000000ull   /* component registers */
#define BAR2_ADDR       0xc0100000ull   /* device registers */
#define BAR4_ADDR       0xc0200000ull   /* MSI-X */

static inline uint32_t cfg_addr(int bus, int dev, int reg)
{
    return 0x80000000u | bus << 16 | dev << 11 | (reg & 0xfc);
}

static inline uint32_t cfg_readl(QTestState *qts, int bus, int dev, int reg)
{
    qtest_outl(qts, 0xcf8, cfg_addr(bus, dev, reg));
    return qtest_inl(qts, 0xcfc);
}

static inline void cfg_writel(QTestState *qts, int bus, int dev, int reg,
                       uint32_t val)
{
    qtest_outl(qts, 0xcf8, cfg_addr(bus, dev, reg));
    qtest_outl(qts, 0xcfc, val);
}

static inline void cfg_writew(QTestState *qts, int bus, int dev, int reg,
                       uint16_t val)
{
    qtest_outl(qts, 0xcf8, cfg_addr(bus, dev, reg));
    qtest_outw(qts, 0xcfc + (reg & 2), val);
}

/* Place the device's BARs at BAR0/2/4_ADDR and turn on memory decoding. */
static inline void map_device_bars(QTestState *qts)
{
    cfg_writel(qts, DEV_BUS, 0, PCI_BASE_ADDRESS_0, BAR0_ADDR);
    cfg_writel(qts, DEV_BUS, 0, PCI_BASE_ADDRESS_1, 0);
    cfg_writel(qts, DEV_BUS, 0, PCI_BASE_ADDRESS_2, BAR2_ADDR);
    cfg_writel(qts, DEV_BUS, 0, PCI_BASE_ADDRESS_3, 0);
    cfg_writel(qts, DEV_BUS, 0, PCI_BASE_ADDRESS_4, BAR4_ADDR);
    cfg_writel(qts, DEV_BUS, 0, PCI_BASE_ADDRESS_5, 0);
    cfg_writew(qts, DEV_BUS, 0, PCI_COMMAND,
               PCI_COMMAND_MEMORY | PCI_COMMAND_MASTER);
}

static inline uint64_t find_cfmw_base(QTestState *qts)
{
    g_autofree char *mtree = qtest_hmp(qts, "info mtree");
    const char *p = strstr(mtree, "cxl-fixed-memory-region");
    const char *line;

    g_assert(p);
    for (line = p; line > mtree && line[-1] != '\n'; line--) {
        ;
    }
    while (*line == ' ') {
        line++;
    }
    return g_ascii_strtoull(line, NULL, 16);
}

/* The root port: bus numbers, a memory window over the BARs, decoding. */
static inline void map_root_port(QTestState *qts)
{
    cfg_writel(qts, RP_BUS, 0, PCI_PRIMARY_BUS,
               RP_BUS | DEV_BUS << 8 | DEV_BUS << 16);
    cfg_writew(qts, RP_BUS, 0, PCI_MEMORY_BASE, (BAR0_ADDR >> 16) & 0xfff0);
    cfg_writew(qts, RP_BUS, 0, PCI_MEMORY_LIMIT,
               ((BAR0_ADDR + 0xffffff) >> 16) & 0xfff0);
    cfg_writew(qts, RP_BUS, 0, PCI_COMMAND,
               PCI_COMMAND_MEMORY | PCI_COMMAND_MASTER);
}

/*
 * After QEMU starts: the root port mapped, the device found behind it (our
 * vendor ID) and its BARs mapped.
 */
static inline void map_device(QTestState *qts)
{
    map_root_port(qts);
    g_assert_cmphex(cfg_readl(qts, DEV_BUS, 0, PCI_VENDOR_ID) & 0xffff, ==,
                    NFABRIC_PCI_VENDOR_ID);
    map_device_bars(qts);
}

/* The device's HDM decoder capability, in its CXL.cache/mem registers. */
static inline uint64_t find_hdm(QTestState *qts)
{
    uint64_t cm = BAR0_ADDR + 0x1000;   /* CXL.cache/mem registers */
    uint32_t hdr = qtest_readl(qts, cm);
    uint64_t hdm = 0;

    g_assert_cmpuint(hdr & 0xffff, ==, 1);      /* CXL capability header */
    for (unsigned i = 1; i <= hdr >> 24; i++) {
        uint32_t e = qtest_readl(qts, cm + 4 * i);

        if ((e & 0xffff) == 5) {                /* HDM decoder capability */
            hdm = cm + (e >> 20);
        }
    }
    g_assert(hdm);
    return hdm;
}

/*
 * Commit decoder 0 of the HDM decoder capability at HDM: HPA
 * [hpa, hpa + MEM_SIZE) -> DPA 0, interleaved over 1 << iw_enc ways
 * (0: not interleaved).
 */
static inline void commit_hdm_at(QTestState *qts, uint64_t hdm, uint64_t hpa,
                                 unsigned iw_enc)
{
    qtest_writel(qts, hdm + 0x04, 0x2);         /* HDM decoder enable */
    qtest_writel(qts, hdm + 0x10, hpa & 0xf0000000u);
    qtest_writel(qts, hdm + 0x14, hpa >> 32);
    qtest_writel(qts, hdm + 0x18, MEM_SIZE & 0xf0000000u);
    qtest_writel(qts, hdm + 0x1c, MEM_SIZE >> 32);
    qtest_writel(qts, hdm + 0x20, 1 << 9 | iw_enc << 4);    /* commit */
    g_assert(qtest_readl(qts, hdm + 0x20) & (1 << 10));     /* committed */
}

/* One device as nfabric-test.c and nfabric-migration-test.c drive it. */
typedef struct NFDev {
    QTestState *qts;
    uint64_t regs;      /* BAR0 + NFABRIC_REGS_OFFSET */
    uint64_t hpa;       /* host physical address of DPA 0 */
    uint64_t hdm;       /* the device's HDM decoder capability */
} NFDev;

/* Its registers, at OFF in the register block. */
static inline uint32_t rd32(NFDev *nf, uint32_t off)
{
    return qtest_readl(nf->qts, nf->regs + off);
}

static inline uint64_t rd64(NFDev *nf, uint32_t off)
{
    return qtest_readq(nf->qts, nf->regs + off);
}

static inline void wr32(NFDev *nf, uint32_t off, uint32_t v)
{
    qtest_writel(nf->qts, nf->regs + off, v);
}

static inline void wr64(NFDev *nf, uint32_t off, uint64_t v)
{
    qtest_writeq(nf->qts, nf->regs + off, v);
}

#endif /* NFABRIC_QTEST_H */
