/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * NEURON-Fabric aggregation engine, private to its two files: what the
 * portable engine (nfabric_engine.c: reference, SWAR kernels, selection
 * and dispatch) shares with the x86 SIMD kernels (nfabric_engine_simd.c:
 * SSE2 and AVX2).  Not part of the API (include/hw/mem/nfabric_engine.h).
 *
 * It holds the host checks (NF_HAVE_X86, NF_HOST_LE), the little-endian
 * loads and stores, the kernels' table type NFabricOps and the portable
 * kernels, which the SIMD kernels call for the tails they leave.  Pure C11:
 * no QEMU header.
 */
#ifndef HW_MEM_NFABRIC_ENGINE_INT_H
#define HW_MEM_NFABRIC_ENGINE_INT_H

#include <string.h>

#include "hw/mem/nfabric_engine.h"


/*
 * NFABRIC_ENGINE_GENERIC builds what a non-x86, big-endian host gets: no
 * SIMD, byte-by-byte little-endian loads (tests use it on x86 too).
 */
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__)) && \
    !defined(NFABRIC_ENGINE_GENERIC)
#define NF_HAVE_X86 1
#include <immintrin.h>
#else
#define NF_HAVE_X86 0
#endif

/*
 * The portable kernels also finish the SIMD kernels' tails: kept out of
 * line so that no AVX2 copy of them is made inside an AVX2 kernel.
 */
#if defined(__GNUC__) || defined(__clang__)
#define NF_NOINLINE __attribute__((noinline))
#else
#define NF_NOINLINE
#endif

/*
 * A kernel body shared by the kernels of two widths: inlined into each,
 * so that each is compiled for its own width.
 */
#if defined(__GNUC__) || defined(__clang__)
#define NF_ALWAYS_INLINE inline __attribute__((always_inline))
#else
#define NF_ALWAYS_INLINE inline
#endif

/* ---- Little-endian loads and stores ---------------------------------- */

#if defined(__BYTE_ORDER__) && defined(__ORDER_LITTLE_ENDIAN__) && \
    __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__ && \
    !defined(NFABRIC_ENGINE_GENERIC)
#define NF_HOST_LE 1
#else
#define NF_HOST_LE 0
#endif

static inline uint64_t ld64(const uint8_t *p)
{
#if NF_HOST_LE
    uint64_t v;

    memcpy(&v, p, 8);
    return v;
#else
    uint64_t v = 0;

    for (int i = 7; i >= 0; i--) {
        v = (v << 8) | p[i];
    }
    return v;
#endif
}

static inline void st64(uint8_t *p, uint64_t v)
{
#if NF_HOST_LE
    memcpy(p, &v, 8);
#else
    for (int i = 0; i < 8; i++) {
        p[i] = (uint8_t)(v >> (8 * i));
    }
#endif
}

/* Load n (0..8) bytes little-endian, zero-padded; store n bytes. */
static inline uint64_t ldn(const uint8_t *p, size_t n)
{
    uint64_t v = 0;

    for (size_t i = 0; i < n; i++) {
        v |= (uint64_t)p[i] << (8 * i);
    }
    return v;
}

static inline void stn(uint8_t *p, uint64_t v, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        p[i] = (uint8_t)(v >> (8 * i));
    }
}

/* Bit k of x -> bit 2k (0x5555... is EVEN64 of nfabric_engine.c). */
static inline uint64_t spread32(uint32_t v)
{
    uint64_t x = v;

    x = (x | (x << 16)) & 0x0000ffff0000ffffULL;
    x = (x | (x << 8)) & 0x00ff00ff00ff00ffULL;
    x = (x | (x << 4)) & 0x0f0f0f0f0f0f0f0fULL;
    x = (x | (x << 2)) & 0x3333333333333333ULL;
    x = (x | (x << 1)) & 0x5555555555555555ULL;
    return x;
}

/* ---- Dispatch tables --------------------------------------------------- */

typedef int64_t (*NFabricWriteFn)(uint8_t *c, const uint8_t *d, size_t len);
typedef void (*NFabricReadFn)(const uint8_t *c, uint8_t *out, size_t len,
                              uint32_t param);

/* Indexed [path - GBINARY][width == 16]; read param: tie or threshold. */
typedef struct NFabricOps {
    NFabricImpl impl;
    NFabricWriteFn write[2][2];
    NFabricReadFn read[2][2];
} NFabricOps;

/* The portable kernels (nfabric_engine.c), for the SIMD kernels' tails too. */
int64_t nfabric_port_write_bin8(uint8_t *c, const uint8_t *d, size_t len);
int64_t nfabric_port_write_bin16(uint8_t *c, const uint8_t *d, size_t len);
int64_t nfabric_port_write_ter8(uint8_t *c, const uint8_t *d, size_t len);
int64_t nfabric_port_write_ter16(uint8_t *c, const uint8_t *d, size_t len);
void nfabric_port_read_bin8(const uint8_t *c, uint8_t *out, size_t len,
                            uint32_t param);
void nfabric_port_read_bin16(const uint8_t *c, uint8_t *out, size_t len,
                             uint32_t param);
void nfabric_port_read_ter8(const uint8_t *c, uint8_t *out, size_t len,
                            uint32_t param);
void nfabric_port_read_ter16(const uint8_t *c, uint8_t *out, size_t len,
                             uint32_t param);

/* The kernels' tables: nfabric_engine.c's, nfabric_engine_simd.c's (x86-64). */
extern const NFabricOps nfabric_ops_portable;
#if NF_HAVE_X86
extern const NFabricOps nfabric_ops_sse2;
extern const NFabricOps nfabric_ops_avx2;
#endif

#endif /* HW_MEM_NFABRIC_ENGINE_INT_H */
