// SPDX-License-Identifier: GPL-2.0-or-later
//
// A stand-in for libnfrtl.so (hw/rtl/nfrtl.h) with one fault, to show that
// the device's rtl=compare catches a datapath that differs from the engine
// and that rtl=serve really serves through the library: the engine's
// arithmetic, except that lane 5 of every G-Binary line a write covers
// (element 5 of the line: bit 5 of its first byte) counts once more.
// Reads are the engine's.  Built by scripts/lib/rtl.sh (nf_rtl_fault_lib).
#include <stdint.h>
#include <stdlib.h>

#include "hw/mem/nfabric_engine.h"
#include "hw/rtl/nfrtl.h"

struct NFRtl {
    uint64_t lines;
};

int nfrtl_abi_version(void)
{
    return NFRTL_ABI_VERSION;
}

NFRtl *nfrtl_new(void)
{
    return calloc(1, sizeof(NFRtl));
}

void nfrtl_free(NFRtl *r)
{
    free(r);
}

int64_t nfrtl_agg_write(NFRtl *r, const NFabricAggCfg *cfg, void *counters,
                        uint64_t off, const uint8_t *data, size_t len)
{
    int64_t rc = nfabric_agg_write(cfg, counters, off, data, len);
    uint64_t line;

    if (rc < 0 || cfg->path != NFABRIC_PATH_GBINARY) {
        return rc;
    }
    for (line = (off + 63) / 64 * 64; line < off + len; line += 64) {
        uint64_t e = line * 8 + 5;

        nfabric_counter_set(counters, cfg->width, e,
                            nfabric_counter_get(counters, cfg->width, e) + 1);
        r->lines++;
    }
    return rc;
}

int nfrtl_agg_read(NFRtl *r, const NFabricAggCfg *cfg, const void *counters,
                   uint64_t off, uint8_t *out, size_t len)
{
    (void)r;
    return nfabric_agg_read(cfg, counters, off, out, len);
}

uint64_t nfrtl_cycles(const NFRtl *r)
{
    return r->lines;
}

uint64_t nfrtl_lines(const NFRtl *r)
{
    return r->lines;
}

unsigned nfrtl_latency(const NFRtl *r)
{
    (void)r;
    return 0;
}
