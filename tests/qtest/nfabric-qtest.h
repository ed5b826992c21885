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

#endif /* NFABRIC_QTEST_H */
