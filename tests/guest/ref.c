/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The guest tests' own reference of the aggregation semantics
 * (include/hw/mem/nfabric_engine.h), one element at a time, written
 * independently of the device's engine.
 */
#include "gt.h"

int32_t ref_max(unsigned width)
{
    return width == 16 ? 32767 : 127;
}

int32_t ref_min(unsigned width)
{
    return -ref_max(width) - 1;
}

unsigned ref_epb(unsigned path)
{
    return path == NFABRIC_PATH_GBINARY ? 8 : 4;
}

uint64_t ref_apply(unsigned path, unsigned width, int32_t *sums, uint64_t off,
                   const uint8_t *data, size_t len)
{
    unsigned epb = ref_epb(path);
    uint64_t reserved = 0;

    for (size_t b = 0; b < len; b++) {
        for (unsigned k = 0; k < epb; k++) {
            uint64_t e = (off + b) * epb + k;
            int32_t delta;

            if (path == NFABRIC_PATH_GBINARY) {
                delta = (data[b] >> k) & 1 ? 1 : -1;
            } else {
                unsigned code = (data[b] >> (2 * k)) & 3;

                delta = code == NFABRIC_TERN_PLUS ? 1 :
                        code == NFABRIC_TERN_MINUS ? -1 : 0;
                reserved += code == NFABRIC_TERN_RESERVED;
            }
            int32_t v = sums[e] + delta;
            if (v > ref_max(width)) {
                v = ref_max(width);
            }
            if (v < ref_min(width)) {
                v = ref_min(width);
            }
            sums[e] = v;
        }
    }
    return reserved;
}

void ref_readout(unsigned path, unsigned tie, uint32_t threshold,
                 const int32_t *sums, uint64_t off, uint8_t *out, size_t len)
{
    unsigned epb = ref_epb(path);
    int32_t t = (int32_t)threshold;

    for (size_t b = 0; b < len; b++) {
        unsigned byte = 0;

        for (unsigned k = 0; k < epb; k++) {
            int32_t v = sums[(off + b) * epb + k];

            if (path == NFABRIC_PATH_GBINARY) {
                unsigned bit = v > 0 ? 1u : v < 0 ? 0u :
                               (tie == NFABRIC_TIE_POSITIVE ? 1u : 0u);
                byte |= bit << k;
            } else {
                unsigned code = v >= t ? NFABRIC_TERN_PLUS :
                                v <= -t ? NFABRIC_TERN_MINUS : NFABRIC_TERN_ZERO;
                byte |= code << (2 * k);
            }
        }
        out[b] = (uint8_t)byte;
    }
}
