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

/* The device's registers at REGS (BAR0 + the register block's offset). */
static inline uint32_t nf_regs_rd32(QTestState *qts, uint64_t regs, uint32_t off)
{
    return qtest_readl(qts, regs + off);
}

static inline uint64_t nf_regs_rd64(QTestState *qts, uint64_t regs, uint32_t off)
{
    return qtest_readq(qts, regs + off);
}

static inline void nf_regs_wr32(QTestState *qts, uint64_t regs, uint32_t off,
                                uint32_t val)
{
    qtest_writel(qts, regs + off, val);
}

static inline void nf_regs_wr64(QTestState *qts, uint64_t regs, uint32_t off,
                                uint64_t val)
{
    qtest_writeq(qts, regs + off, val);
}

#endif /* NFABRIC_QTEST_H */
