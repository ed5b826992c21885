/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * NEURON-Fabric aggregation engine: the x86-64 SIMD kernels (SSE2, the
 * baseline there, and AVX2 through per-function target attributes, so
 * this file needs no compile flag of its own), the same semantics as the
 * portable kernels (docs/engine.md).
 *
 * It owns the kernels and their tables nfabric_ops_sse2 and
 * nfabric_ops_avx2, which nfabric_engine.c selects and dispatches to.  It
 * may call the C library, the compiler's intrinsics and the portable
 * kernels (nfabric_port_*, for the tails a vector kernel leaves); nothing
 * else.  On any other host (or with NFABRIC_ENGINE_GENERIC) it is empty.
 */
#include "nfabric_engine_int.h"

#if NF_HAVE_X86

/* ---- SSE2 (baseline on x86-64) ---------------------------------------- */

static inline __m128i sse_ld(const uint8_t *p)
{
    return _mm_loadu_si128((const __m128i *)(const void *)p);
}

static inline void sse_st(uint8_t *p, __m128i v)
{
    _mm_storeu_si128((__m128i *)(void *)p, v);
}

static inline __m128i sse_ld8(const uint8_t *p)
{
    return _mm_loadl_epi64((const __m128i *)(const void *)p);
}

/* Saturating +-1 on 16 counters; v holds one data byte per 8 lanes. */
static inline void sse_bin8_step(uint8_t *c, __m128i v, __m128i bits,
                                 __m128i one)
{
    __m128i m0 = _mm_cmpeq_epi8(_mm_and_si128(v, bits),
                                _mm_setzero_si128());

    sse_st(c, _mm_adds_epi8(sse_ld(c), _mm_or_si128(m0, one)));
}

static int64_t sse2_write_bin8(uint8_t *c, const uint8_t *d, size_t len)
{
    const __m128i bits = _mm_set_epi8(-128, 64, 32, 16, 8, 4, 2, 1,
                                      -128, 64, 32, 16, 8, 4, 2, 1);
    const __m128i one = _mm_set1_epi8(1);
    size_t n = len & ~(size_t)7;

    for (size_t i = 0; i < n; i += 8, d += 8, c += 64) {
        __m128i u = _mm_unpacklo_epi8(sse_ld8(d), sse_ld8(d));
        __m128i w0 = _mm_unpacklo_epi16(u, u);
        __m128i w1 = _mm_unpackhi_epi16(u, u);

        sse_bin8_step(c, _mm_unpacklo_epi32(w0, w0), bits, one);
        sse_bin8_step(c + 16, _mm_unpackhi_epi32(w0, w0), bits, one);
        sse_bin8_step(c + 32, _mm_unpacklo_epi32(w1, w1), bits, one);
        sse_bin8_step(c + 48, _mm_unpackhi_epi32(w1, w1), bits, one);
    }
    return len > n ? nfabric_port_write_bin8(c, d, len - n) : 0;
}

static int64_t sse2_write_bin16(uint8_t *c, const uint8_t *d, size_t len)
{
    const __m128i bits = _mm_set_epi16(128, 64, 32, 16, 8, 4, 2, 1);
    const __m128i one = _mm_set1_epi16(1);

    for (size_t i = 0; i < len; i++, c += 16) {
        __m128i v = _mm_set1_epi16(d[i]);
        __m128i m0 = _mm_cmpeq_epi16(_mm_and_si128(v, bits),
                                     _mm_setzero_si128());

        sse_st(c, _mm_adds_epi16(sse_ld(c), _mm_or_si128(m0, one)));
    }
    return 0;
}

/*
 * G-Ternary kernels compare each lane's code (masked by pat) with the
 * PLUS, MINUS (= pat) and RESERVED patterns.  Reserved codes are counted
 * in vector lanes, drained every NF_RES_BLOCK data bytes (8-bit lanes then
 * hold at most 2 * NF_RES_BLOCK / 8 = 240).
 */
#define NF_RES_BLOCK    960

typedef struct SseTern {
    __m128i pat, plus, resv;
} SseTern;

static inline __m128i sse_ter8_step(uint8_t *c, __m128i v, const SseTern *k,
                                    __m128i racc)
{
    __m128i x = _mm_and_si128(v, k->pat);
    __m128i p = _mm_cmpeq_epi8(x, k->plus);
    __m128i m = _mm_cmpeq_epi8(x, k->pat);

    sse_st(c, _mm_adds_epi8(sse_ld(c), _mm_sub_epi8(m, p)));
    return _mm_sub_epi8(racc, _mm_cmpeq_epi8(x, k->resv));
}

static inline __m128i sse_ter16_step(uint8_t *c, __m128i v,
                                     const SseTern *k, __m128i racc)
{
    __m128i x = _mm_and_si128(v, k->pat);
    __m128i p = _mm_cmpeq_epi16(x, k->plus);
    __m128i m = _mm_cmpeq_epi16(x, k->pat);

    sse_st(c, _mm_adds_epi16(sse_ld(c), _mm_sub_epi16(m, p)));
    return _mm_sub_epi16(racc, _mm_cmpeq_epi16(x, k->resv));
}

static inline int64_t sse_sum8(__m128i acc)
{
    __m128i s = _mm_sad_epu8(acc, _mm_setzero_si128());

    return _mm_cvtsi128_si32(s) + _mm_cvtsi128_si32(_mm_srli_si128(s, 8));
}

static inline int64_t sse_sum16(__m128i acc)
{
    __m128i s = _mm_madd_epi16(acc, _mm_set1_epi16(1));

    s = _mm_add_epi32(s, _mm_srli_si128(s, 8));
    s = _mm_add_epi32(s, _mm_srli_si128(s, 4));
    return _mm_cvtsi128_si32(s);
}

static int64_t sse2_write_ter8(uint8_t *c, const uint8_t *d, size_t len)
{
    const SseTern k = {
        .pat = _mm_set1_epi32((int)0xc0300c03),
        .plus = _mm_set1_epi32(0x40100401),
        .resv = _mm_set1_epi32((int)0x80200802),
    };
    size_t n = len & ~(size_t)7;
    int64_t reserved = 0;

    for (size_t i = 0, blk; i < n; i += blk) {
        __m128i racc = _mm_setzero_si128();

        blk = n - i > NF_RES_BLOCK ? NF_RES_BLOCK : n - i;
        for (size_t j = 0; j < blk; j += 8, d += 8, c += 32) {
            __m128i u = _mm_unpacklo_epi8(sse_ld8(d), sse_ld8(d));

            racc = sse_ter8_step(c, _mm_unpacklo_epi16(u, u), &k, racc);
            racc = sse_ter8_step(c + 16, _mm_unpackhi_epi16(u, u), &k, racc);
        }
        reserved += sse_sum8(racc);
    }
    return len > n ? reserved + nfabric_port_write_ter8(c, d, len - n)
                   : reserved;
}

static int64_t sse2_write_ter16(uint8_t *c, const uint8_t *d, size_t len)
{
    const SseTern k = {
        .pat = _mm_set_epi16(0xc0, 0x30, 0x0c, 0x03, 0xc0, 0x30, 0x0c, 0x03),
        .plus = _mm_set_epi16(0x40, 0x10, 0x04, 0x01, 0x40, 0x10, 0x04, 0x01),
        .resv = _mm_set_epi16(0x80, 0x20, 0x08, 0x02, 0x80, 0x20, 0x08, 0x02),
    };
    size_t n = len & ~(size_t)7;
    int64_t reserved = 0;

    for (size_t i = 0, blk; i < n; i += blk) {
        __m128i racc = _mm_setzero_si128();

        blk = n - i > NF_RES_BLOCK ? NF_RES_BLOCK : n - i;
        for (size_t j = 0; j < blk; j += 8, d += 8, c += 64) {
            __m128i u = _mm_unpacklo_epi8(sse_ld8(d), _mm_setzero_si128());
            __m128i w0 = _mm_unpacklo_epi16(u, u);
            __m128i w1 = _mm_unpackhi_epi16(u, u);

            racc = sse_ter16_step(c, _mm_unpacklo_epi32(w0, w0), &k, racc);
            racc = sse_ter16_step(c + 16, _mm_unpackhi_epi32(w0, w0), &k,
                                  racc);
            racc = sse_ter16_step(c + 32, _mm_unpacklo_epi32(w1, w1), &k,
                                  racc);
            racc = sse_ter16_step(c + 48, _mm_unpackhi_epi32(w1, w1), &k,
                                  racc);
        }
        reserved += sse_sum16(racc);
    }
    return len > n ? reserved + nfabric_port_write_ter16(c, d, len - n)
                   : reserved;
}

/* Lanes reading as 1: x > 0, or x >= 0 (not x < 0) with the positive tie. */
static void sse2_read_bin8(const uint8_t *c, uint8_t *out, size_t len,
                           uint32_t tie)
{
    const __m128i z = _mm_setzero_si128();
    size_t n = len & ~(size_t)1;

    for (size_t i = 0; i < n; i += 2, c += 16) {
        __m128i x = sse_ld(c);
        unsigned m = tie == NFABRIC_TIE_POSITIVE ?
                     ~(unsigned)_mm_movemask_epi8(x) :
                     (unsigned)_mm_movemask_epi8(_mm_cmpgt_epi8(x, z));

        out[i] = (uint8_t)m;
        out[i + 1] = (uint8_t)(m >> 8);
    }
    if (len > n) {
        nfabric_port_read_bin8(c, out + n, len - n, tie);
    }
}

static void sse2_read_bin16(const uint8_t *c, uint8_t *out, size_t len,
                            uint32_t tie)
{
    const __m128i z = _mm_setzero_si128();
    size_t n = len & ~(size_t)1;

    for (size_t i = 0; i < n; i += 2, c += 32) {
        __m128i a = sse_ld(c), b = sse_ld(c + 16);
        unsigned m;

        if (tie == NFABRIC_TIE_POSITIVE) {
            m = ~(unsigned)_mm_movemask_epi8(_mm_packs_epi16(a, b));
        } else {
            m = (unsigned)_mm_movemask_epi8(
                _mm_packs_epi16(_mm_cmpgt_epi16(a, z), _mm_cmpgt_epi16(b, z)));
        }
        out[i] = (uint8_t)m;
        out[i + 1] = (uint8_t)(m >> 8);
    }
    if (len > n) {
        nfabric_port_read_bin16(c, out + n, len - n, tie);
    }
}

/* 16 bits of "code != 0" and 16 bits of "code == MINUS" -> 4 bytes. */
static inline void store_codes16(uint8_t *out, unsigned lo, unsigned hi)
{
    stn(out, spread32(lo & 0xffff) | spread32(hi & 0xffff) << 1, 4);
}

static void sse2_read_ter8(const uint8_t *c, uint8_t *out, size_t len,
                           uint32_t t)
{
    const __m128i tm1 = _mm_set1_epi8((char)(t - 1));
    const __m128i mt1 = _mm_set1_epi8((char)(1 - (int)t));
    size_t n = len & ~(size_t)3;

    for (size_t i = 0; i < n; i += 4, c += 16) {
        __m128i x = sse_ld(c);
        __m128i ge = _mm_cmpgt_epi8(x, tm1);
        __m128i le = _mm_cmpgt_epi8(mt1, x);

        store_codes16(out + i,
                      (unsigned)_mm_movemask_epi8(_mm_or_si128(ge, le)),
                      (unsigned)_mm_movemask_epi8(le));
    }
    if (len > n) {
        nfabric_port_read_ter8(c, out + n, len - n, t);
    }
}

static void sse2_read_ter16(const uint8_t *c, uint8_t *out, size_t len,
                            uint32_t t)
{
    const __m128i tm1 = _mm_set1_epi16((short)(t - 1));
    const __m128i mt1 = _mm_set1_epi16((short)(1 - (int)t));
    size_t n = len & ~(size_t)3;

    for (size_t i = 0; i < n; i += 4, c += 32) {
        __m128i a = sse_ld(c), b = sse_ld(c + 16);
        __m128i le = _mm_packs_epi16(_mm_cmpgt_epi16(mt1, a),
                                     _mm_cmpgt_epi16(mt1, b));
        __m128i ge = _mm_packs_epi16(_mm_cmpgt_epi16(a, tm1),
                                     _mm_cmpgt_epi16(b, tm1));

        store_codes16(out + i,
                      (unsigned)_mm_movemask_epi8(_mm_or_si128(ge, le)),
                      (unsigned)_mm_movemask_epi8(le));
    }
    if (len > n) {
        nfabric_port_read_ter16(c, out + n, len - n, t);
    }
}

const NFabricOps nfabric_ops_sse2 = {
    .impl = NFABRIC_IMPL_SSE2,
    .write = { { sse2_write_bin8, sse2_write_bin16 },
               { sse2_write_ter8, sse2_write_ter16 } },
    .read = { { sse2_read_bin8, sse2_read_bin16 },
              { sse2_read_ter8, sse2_read_ter16 } },
};

/* ---- AVX2 -------------------------------------------------------------- */

/*
 * Each kernel ends with an explicit vzeroupper: GCC 12 omits it in some of
 * them, and a dirty upper state slows the SSE code that runs afterwards
 * (QEMU's, and the SSE2 kernels: measured 5x).
 */
#define NF_AVX2 __attribute__((target("avx2")))

NF_AVX2 static inline __m256i avx_ld(const uint8_t *p)
{
    return _mm256_loadu_si256((const __m256i *)(const void *)p);
}

NF_AVX2 static inline void avx_st(uint8_t *p, __m256i v)
{
    _mm256_storeu_si256((__m256i *)(void *)p, v);
}

/* 8 data bytes in every 64-bit lane. */
NF_AVX2 static inline __m256i avx_bcast8(const uint8_t *d)
{
    long long q;

    memcpy(&q, d, 8);
    return _mm256_set1_epi64x(q);
}

NF_AVX2 static inline __m256i avx_bits8(void)
{
    return _mm256_set1_epi64x((long long)0x8040201008040201ULL);
}

NF_AVX2 static inline void avx_bin8_step(uint8_t *c, __m256i v,
                                         __m256i idx, __m256i bits,
                                         __m256i one)
{
    __m256i x = _mm256_and_si256(_mm256_shuffle_epi8(v, idx), bits);
    __m256i m0 = _mm256_cmpeq_epi8(x, _mm256_setzero_si256());

    avx_st(c, _mm256_adds_epi8(avx_ld(c), _mm256_or_si256(m0, one)));
}

NF_AVX2 static int64_t avx2_write_bin8(uint8_t *c, const uint8_t *d,
                                       size_t len)
{
    /* Byte j of the 32-counter vector takes data byte j / 8. */
    const __m256i idx0 = _mm256_set_epi64x(0x0303030303030303LL,
                                           0x0202020202020202LL,
                                           0x0101010101010101LL, 0);
    const __m256i idx1 = _mm256_add_epi8(idx0, _mm256_set1_epi8(4));
    const __m256i bits = avx_bits8();
    const __m256i one = _mm256_set1_epi8(1);
    size_t n = len & ~(size_t)7;

    for (size_t i = 0; i < n; i += 8, d += 8, c += 64) {
        __m256i v = avx_bcast8(d);

        avx_bin8_step(c, v, idx0, bits, one);
        avx_bin8_step(c + 32, v, idx1, bits, one);
    }
    _mm256_zeroupper();      /* no AVX-SSE transition penalty */
    return len > n ? nfabric_port_write_bin8(c, d, len - n) : 0;
}

NF_AVX2 static inline void avx_bin16_step(uint8_t *c, __m256i v,
                                          __m256i idx, __m256i bits,
                                          __m256i one)
{
    __m256i x = _mm256_and_si256(_mm256_shuffle_epi8(v, idx), bits);
    __m256i m0 = _mm256_cmpeq_epi16(x, _mm256_setzero_si256());

    avx_st(c, _mm256_adds_epi16(avx_ld(c), _mm256_or_si256(m0, one)));
}

NF_AVX2 static int64_t avx2_write_bin16(uint8_t *c, const uint8_t *d,
                                        size_t len)
{
    /* 16-bit lane j of vector k takes data byte 2k + j / 8, high byte 0. */
    const __m256i idx0 = _mm256_set_epi64x(
        (long long)0x8001800180018001ULL, (long long)0x8001800180018001ULL,
        (long long)0x8000800080008000ULL, (long long)0x8000800080008000ULL);
    const __m256i two = _mm256_set1_epi16(2);
    const __m256i idx1 = _mm256_add_epi16(idx0, two);
    const __m256i idx2 = _mm256_add_epi16(idx1, two);
    const __m256i idx3 = _mm256_add_epi16(idx2, two);
    const __m256i bits = _mm256_set_epi16(128, 64, 32, 16, 8, 4, 2, 1,
                                          128, 64, 32, 16, 8, 4, 2, 1);
    const __m256i one = _mm256_set1_epi16(1);
    size_t n = len & ~(size_t)7;

    for (size_t i = 0; i < n; i += 8, d += 8, c += 128) {
        __m256i v = avx_bcast8(d);

        avx_bin16_step(c, v, idx0, bits, one);
        avx_bin16_step(c + 32, v, idx1, bits, one);
        avx_bin16_step(c + 64, v, idx2, bits, one);
        avx_bin16_step(c + 96, v, idx3, bits, one);
    }
    _mm256_zeroupper();      /* no AVX-SSE transition penalty */
    return len > n ? nfabric_port_write_bin16(c, d, len - n) : 0;
}

NF_AVX2 static inline int64_t avx_sum8(__m256i acc)
{
    __m256i s = _mm256_sad_epu8(acc, _mm256_setzero_si256());
    __m128i h = _mm_add_epi64(_mm256_castsi256_si128(s),
                              _mm256_extracti128_si256(s, 1));

    return _mm_cvtsi128_si32(h) + _mm_cvtsi128_si32(_mm_srli_si128(h, 8));
}

NF_AVX2 static inline int64_t avx_sum16(__m256i acc)
{
    __m256i s = _mm256_madd_epi16(acc, _mm256_set1_epi16(1));
    __m128i h = _mm_add_epi32(_mm256_castsi256_si128(s),
                              _mm256_extracti128_si256(s, 1));

    h = _mm_add_epi32(h, _mm_srli_si128(h, 8));
    h = _mm_add_epi32(h, _mm_srli_si128(h, 4));
    return _mm_cvtsi128_si32(h);
}

NF_AVX2 static int64_t avx2_write_ter8(uint8_t *c, const uint8_t *d,
                                       size_t len)
{
    /* Byte j of the 32-counter vector takes data byte j / 4. */
    const __m256i idx = _mm256_set_epi64x(0x0707070706060606LL,
                                          0x0505050504040404LL,
                                          0x0303030302020202LL,
                                          0x0101010100000000LL);
    const __m256i pat = _mm256_set1_epi32((int)0xc0300c03);
    const __m256i plus = _mm256_set1_epi32(0x40100401);
    const __m256i resv = _mm256_set1_epi32((int)0x80200802);
    size_t n = len & ~(size_t)7;
    int64_t reserved = 0;

    for (size_t i = 0, blk; i < n; i += blk) {
        __m256i racc = _mm256_setzero_si256();

        blk = n - i > NF_RES_BLOCK ? NF_RES_BLOCK : n - i;
        for (size_t j = 0; j < blk; j += 8, d += 8, c += 32) {
            __m256i x = _mm256_and_si256(
                _mm256_shuffle_epi8(avx_bcast8(d), idx), pat);
            __m256i p = _mm256_cmpeq_epi8(x, plus);
            __m256i m = _mm256_cmpeq_epi8(x, pat);

            racc = _mm256_sub_epi8(racc, _mm256_cmpeq_epi8(x, resv));
            avx_st(c, _mm256_adds_epi8(avx_ld(c), _mm256_sub_epi8(m, p)));
        }
        reserved += avx_sum8(racc);
    }
    _mm256_zeroupper();      /* no AVX-SSE transition penalty */
    return len > n ? reserved + nfabric_port_write_ter8(c, d, len - n)
                   : reserved;
}

NF_AVX2 static inline __m256i avx_ter16_step(uint8_t *c, __m256i v,
                                             __m256i idx, __m256i pat,
                                             __m256i plus, __m256i resv,
                                             __m256i racc)
{
    __m256i x = _mm256_and_si256(_mm256_shuffle_epi8(v, idx), pat);
    __m256i p = _mm256_cmpeq_epi16(x, plus);
    __m256i m = _mm256_cmpeq_epi16(x, pat);

    avx_st(c, _mm256_adds_epi16(avx_ld(c), _mm256_sub_epi16(m, p)));
    return _mm256_sub_epi16(racc, _mm256_cmpeq_epi16(x, resv));
}

NF_AVX2 static int64_t avx2_write_ter16(uint8_t *c, const uint8_t *d,
                                        size_t len)
{
    /* 16-bit lane j of vector k takes data byte 4k + j / 4, high byte 0. */
    const __m256i idx0 = _mm256_set_epi64x(
        (long long)0x8003800380038003ULL, (long long)0x8002800280028002ULL,
        (long long)0x8001800180018001ULL, (long long)0x8000800080008000ULL);
    const __m256i idx1 = _mm256_add_epi16(idx0, _mm256_set1_epi16(4));
    const __m256i pat = _mm256_set1_epi64x(0x00c00030000c0003LL);
    const __m256i plus = _mm256_set1_epi64x(0x0040001000040001LL);
    const __m256i resv = _mm256_set1_epi64x(0x0080002000080002LL);
    size_t n = len & ~(size_t)7;
    int64_t reserved = 0;

    for (size_t i = 0, blk; i < n; i += blk) {
        __m256i racc = _mm256_setzero_si256();

        blk = n - i > NF_RES_BLOCK ? NF_RES_BLOCK : n - i;
        for (size_t j = 0; j < blk; j += 8, d += 8, c += 64) {
            __m256i v = avx_bcast8(d);

            racc = avx_ter16_step(c, v, idx0, pat, plus, resv, racc);
            racc = avx_ter16_step(c + 32, v, idx1, pat, plus, resv, racc);
        }
        reserved += avx_sum16(racc);
    }
    _mm256_zeroupper();      /* no AVX-SSE transition penalty */
    return len > n ? reserved + nfabric_port_write_ter16(c, d, len - n)
                   : reserved;
}

NF_AVX2 static void avx2_read_bin8(const uint8_t *c, uint8_t *out,
                                   size_t len, uint32_t tie)
{
    const __m256i z = _mm256_setzero_si256();
    size_t n = len & ~(size_t)3;

    for (size_t i = 0; i < n; i += 4, c += 32) {
        __m256i x = avx_ld(c);
        uint32_t m = tie == NFABRIC_TIE_POSITIVE ?
                     ~(uint32_t)_mm256_movemask_epi8(x) :
                     (uint32_t)_mm256_movemask_epi8(_mm256_cmpgt_epi8(x, z));

        memcpy(out + i, &m, 4);
    }
    _mm256_zeroupper();      /* no AVX-SSE transition penalty */
    if (len > n) {
        nfabric_port_read_bin8(c, out + n, len - n, tie);
    }
}

/* Pack two vectors of 16-bit masks to 32 byte masks in element order. */
NF_AVX2 static inline uint32_t avx_pack_mask16(__m256i a, __m256i b)
{
    __m256i p = _mm256_permute4x64_epi64(_mm256_packs_epi16(a, b), 0xd8);

    return (uint32_t)_mm256_movemask_epi8(p);
}

NF_AVX2 static void avx2_read_bin16(const uint8_t *c, uint8_t *out,
                                    size_t len, uint32_t tie)
{
    const __m256i z = _mm256_setzero_si256();
    size_t n = len & ~(size_t)3;

    for (size_t i = 0; i < n; i += 4, c += 64) {
        __m256i a = avx_ld(c), b = avx_ld(c + 32);
        uint32_t m;

        if (tie == NFABRIC_TIE_POSITIVE) {
            m = ~avx_pack_mask16(a, b);
        } else {
            m = avx_pack_mask16(_mm256_cmpgt_epi16(a, z),
                                _mm256_cmpgt_epi16(b, z));
        }
        memcpy(out + i, &m, 4);
    }
    _mm256_zeroupper();      /* no AVX-SSE transition penalty */
    if (len > n) {
        nfabric_port_read_bin16(c, out + n, len - n, tie);
    }
}

NF_AVX2 static void avx2_read_ter8(const uint8_t *c, uint8_t *out,
                                   size_t len, uint32_t t)
{
    const __m256i tm1 = _mm256_set1_epi8((char)(t - 1));
    const __m256i mt1 = _mm256_set1_epi8((char)(1 - (int)t));
    size_t n = len & ~(size_t)7;

    for (size_t i = 0; i < n; i += 8, c += 32) {
        __m256i x = avx_ld(c);
        __m256i ge = _mm256_cmpgt_epi8(x, tm1);
        __m256i le = _mm256_cmpgt_epi8(mt1, x);
        uint32_t lo = (uint32_t)_mm256_movemask_epi8(_mm256_or_si256(ge, le));
        uint32_t hi = (uint32_t)_mm256_movemask_epi8(le);
        uint64_t codes = spread32(lo) | spread32(hi) << 1;

        memcpy(out + i, &codes, 8);
    }
    _mm256_zeroupper();      /* no AVX-SSE transition penalty */
    if (len > n) {
        nfabric_port_read_ter8(c, out + n, len - n, t);
    }
}

NF_AVX2 static void avx2_read_ter16(const uint8_t *c, uint8_t *out,
                                    size_t len, uint32_t t)
{
    const __m256i tm1 = _mm256_set1_epi16((short)(t - 1));
    const __m256i mt1 = _mm256_set1_epi16((short)(1 - (int)t));
    size_t n = len & ~(size_t)7;

    for (size_t i = 0; i < n; i += 8, c += 64) {
        __m256i a = avx_ld(c), b = avx_ld(c + 32);
        __m256i gea = _mm256_cmpgt_epi16(a, tm1);
        __m256i geb = _mm256_cmpgt_epi16(b, tm1);
        __m256i lea = _mm256_cmpgt_epi16(mt1, a);
        __m256i leb = _mm256_cmpgt_epi16(mt1, b);
        uint32_t lo = avx_pack_mask16(_mm256_or_si256(gea, lea),
                                      _mm256_or_si256(geb, leb));
        uint32_t hi = avx_pack_mask16(lea, leb);
        uint64_t codes = spread32(lo) | spread32(hi) << 1;

        memcpy(out + i, &codes, 8);
    }
    _mm256_zeroupper();      /* no AVX-SSE transition penalty */
    if (len > n) {
        nfabric_port_read_ter16(c, out + n, len - n, t);
    }
}

const NFabricOps nfabric_ops_avx2 = {
    .impl = NFABRIC_IMPL_AVX2,
    .write = { { avx2_write_bin8, avx2_write_bin16 },
               { avx2_write_ter8, avx2_write_ter16 } },
    .read = { { avx2_read_bin8, avx2_read_bin16 },
              { avx2_read_ter8, avx2_read_ter16 } },
};

#endif /* NF_HAVE_X86 */
