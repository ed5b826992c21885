/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * NEURON-Fabric aggregation engine (see include/hw/mem/nfabric_engine.h and
 * docs/engine.md).
 *
 * Three implementations of the same semantics:
 *  - portable: plain C, SWAR on 64-bit words (8 or 4 counters per word);
 *  - sse2 and avx2: x86-64 only, saturating vector adds, selected at run
 *    time with __builtin_cpu_supports;
 * plus the scalar reference (one element at a time), never dispatched.
 *
 * The only mutable global is the pointer to the selected implementation.
 */
#include <string.h>

#include "hw/mem/nfabric_engine.h"
#include "hw/mem/nfabric_window.h"

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

/* ---- Configuration and range checks ---------------------------------- */

static int32_t width_max(unsigned width)
{
    return width == 8 ? INT8_MAX : INT16_MAX;
}

unsigned nfabric_agg_check(const NFabricAggCfg *cfg)
{
    /* The path-select table's rules, the same the controller applies. */
    return nfabric_window_check_fields(cfg->path, cfg->width, cfg->tie,
                                       cfg->threshold);
}

/* Valid configuration and [off, off + len) inside the window. */
static bool range_ok(const NFabricAggCfg *cfg, uint64_t off, size_t len)
{
    return nfabric_agg_check(cfg) == NFABRIC_ERR_NONE &&
           off <= cfg->size && (uint64_t)len <= cfg->size - off;
}

/* Elements per data byte: 8 (G-Binary) or 4 (G-Ternary). */
static unsigned elems_per_byte(const NFabricAggCfg *cfg)
{
    return cfg->path == NFABRIC_PATH_GBINARY ? 8 : 4;
}

/* First counter byte of the element that window byte off starts with. */
static size_t counter_offset(const NFabricAggCfg *cfg, uint64_t off)
{
    return (size_t)(off * elems_per_byte(cfg) * (cfg->width / 8));
}

/* ---- Counter access --------------------------------------------------- */

int32_t nfabric_counter_get(const void *counters, unsigned width, uint64_t e)
{
    const uint8_t *p = counters;

    if (width == 8) {
        return (int8_t)p[e];
    }
    if (width == 16) {
        return (int16_t)(uint16_t)(p[2 * e] | (unsigned)p[2 * e + 1] << 8);
    }
    return 0;
}

void nfabric_counter_set(void *counters, unsigned width, uint64_t e,
                         int32_t v)
{
    uint8_t *p = counters;

    if (width != 8 && width != 16) {
        return;
    }
    if (v > width_max(width)) {
        v = width_max(width);
    } else if (v < -width_max(width) - 1) {
        v = -width_max(width) - 1;
    }
    if (width == 8) {
        p[e] = (uint8_t)v;
    } else {
        p[2 * e] = (uint8_t)v;
        p[2 * e + 1] = (uint8_t)((uint32_t)v >> 8);
    }
}

/* ---- Scalar reference: one element at a time -------------------------- */

int64_t nfabric_agg_write_ref(const NFabricAggCfg *cfg, void *counters,
                              uint64_t off, const uint8_t *data, size_t len)
{
    uint64_t first, n;
    int64_t reserved = 0;

    if (!range_ok(cfg, off, len)) {
        return -1;
    }
    first = off * elems_per_byte(cfg);
    n = (uint64_t)len * elems_per_byte(cfg);
    for (uint64_t i = 0; i < n; i++) {
        int32_t delta, v;

        if (cfg->path == NFABRIC_PATH_GBINARY) {
            delta = (data[i / 8] >> (i % 8)) & 1 ? 1 : -1;
        } else {
            switch ((data[i / 4] >> (2 * (i % 4))) & 3) {
            case NFABRIC_TERN_PLUS:
                delta = 1;
                break;
            case NFABRIC_TERN_MINUS:
                delta = -1;
                break;
            case NFABRIC_TERN_RESERVED:
                reserved++;
                delta = 0;
                break;
            default:
                delta = 0;
                break;
            }
        }
        v = nfabric_counter_get(counters, cfg->width, first + i) + delta;
        nfabric_counter_set(counters, cfg->width, first + i, v);
    }
    return reserved;
}

int nfabric_agg_read_ref(const NFabricAggCfg *cfg, const void *counters,
                         uint64_t off, uint8_t *out, size_t len)
{
    uint64_t first;
    unsigned epb;
    int32_t t = (int32_t)cfg->threshold;

    if (!range_ok(cfg, off, len)) {
        return -1;
    }
    epb = elems_per_byte(cfg);
    first = off * epb;
    for (size_t b = 0; b < len; b++) {
        unsigned byte = 0;

        for (unsigned k = 0; k < epb; k++) {
            int32_t v = nfabric_counter_get(counters, cfg->width,
                                            first + (uint64_t)b * epb + k);
            unsigned code;

            if (cfg->path == NFABRIC_PATH_GBINARY) {
                code = v > 0 ? 1 : v < 0 ? 0 :
                       cfg->tie == NFABRIC_TIE_POSITIVE;
                byte |= code << k;
            } else {
                code = v >= t ? NFABRIC_TERN_PLUS :
                       v <= -t ? NFABRIC_TERN_MINUS : NFABRIC_TERN_ZERO;
                byte |= code << (2 * k);
            }
        }
        out[b] = (uint8_t)byte;
    }
    return 0;
}

/* ---- Portable implementation: SWAR on 64-bit words -------------------- */

/*
 * Lane constants: ONE has 1 in every lane, HI the lane sign bits, LOW the
 * other bits.  A word holds 8 counters of width 8 or 4 of width 16, lane k
 * being counter k of the word (the loads are little-endian).
 */
#define ONE8    0x0101010101010101ULL
#define HI8     0x8080808080808080ULL
#define LOW8    0x7f7f7f7f7f7f7f7fULL
#define ONE16   0x0001000100010001ULL
#define HI16    0x8000800080008000ULL
#define LOW16   0x7fff7fff7fff7fffULL
#define EVEN64  0x5555555555555555ULL

/*
 * Saturating +1 on the lanes in act (ONE-style: 1 in lane bit 0) of x,
 * with the lanes in neg (full-lane masks) decremented instead: a
 * decrement is an increment of the complement, and -min is max there.
 */
static inline uint64_t swar_step(uint64_t x, uint64_t act, uint64_t neg,
                                 uint64_t hi, unsigned w)
{
    uint64_t y = x ^ neg;
    uint64_t r = ((y & ~hi) + act) ^ (y & hi);
    uint64_t ov = ~y & r & hi;          /* lanes that were max: undo */

    r ^= (ov >> (w - 1)) * ((1ULL << w) - 1);
    return r ^ neg;
}

/* Bit k of b (8 bits) -> lane k all ones, 8-bit lanes. */
static inline uint64_t expand8(unsigned b)
{
    uint64_t t = ((uint64_t)b * ONE8) & 0x8040201008040201ULL;

    t = (((t & LOW8) + LOW8) | t) & HI8;
    return (t >> 7) * 0xff;
}

/* Bit k of n (4 bits) -> lane k all ones, 16-bit lanes. */
static inline uint64_t expand16(unsigned n)
{
    uint64_t t = ((uint64_t)n * ONE16) & 0x0008000400020001ULL;

    t = (((t & LOW16) + LOW16) | t) & HI16;
    return (t >> 15) * 0xffff;
}

/* Lane sign bits (HI8 positions) -> 8 dense bits. */
static inline unsigned gather8(uint64_t h)
{
    return (unsigned)((((h >> 7) & ONE8) * 0x0102040810204080ULL) >> 56);
}

/* Lane sign bits (HI16 positions) -> 4 dense bits. */
static inline unsigned gather16(uint64_t h)
{
    return (unsigned)((((h >> 15) & ONE16) * 0x0000200040008001ULL) >> 45)
           & 0xf;
}

/* Even bits of x (bit 2k) -> bit k, 32 dense bits. */
static inline uint32_t compress_even(uint64_t x)
{
    x &= EVEN64;
    x = (x | (x >> 1)) & 0x3333333333333333ULL;
    x = (x | (x >> 2)) & 0x0f0f0f0f0f0f0f0fULL;
    x = (x | (x >> 4)) & 0x00ff00ff00ff00ffULL;
    x = (x | (x >> 8)) & 0x0000ffff0000ffffULL;
    x = (x | (x >> 16)) & 0x00000000ffffffffULL;
    return (uint32_t)x;
}

/* Bit k of x -> bit 2k. */
static inline uint64_t spread32(uint32_t v)
{
    uint64_t x = v;

    x = (x | (x << 16)) & 0x0000ffff0000ffffULL;
    x = (x | (x << 8)) & 0x00ff00ff00ff00ffULL;
    x = (x | (x << 4)) & 0x0f0f0f0f0f0f0f0fULL;
    x = (x | (x << 2)) & 0x3333333333333333ULL;
    x = (x | (x << 1)) & EVEN64;
    return x;
}

/* Reserved codes (binary 10) among the 32 codes of d. */
static inline unsigned tern_reserved64(uint64_t d)
{
    uint64_t r = (d >> 1) & ~d & EVEN64;

    r = (r & 0x3333333333333333ULL) + ((r >> 2) & 0x3333333333333333ULL);
    r = (r + (r >> 4)) & 0x0f0f0f0f0f0f0f0fULL;
    return (unsigned)((r * ONE8) >> 56);
}

/* Codes of d -> active (code 1 or 3) and negative (code 3) dense masks. */
static inline void tern_masks(uint64_t d, uint32_t *act, uint32_t *neg)
{
    *act = compress_even(d);
    *neg = compress_even(d & (d >> 1));
}

NF_NOINLINE static int64_t
port_write_bin8(uint8_t *c, const uint8_t *d, size_t len)
{
    for (size_t i = 0; i < len; i++, c += 8) {
        st64(c, swar_step(ld64(c), ONE8, ~expand8(d[i]), HI8, 8));
    }
    return 0;
}

NF_NOINLINE static int64_t
port_write_bin16(uint8_t *c, const uint8_t *d, size_t len)
{
    for (size_t i = 0; i < len; i++, c += 16) {
        st64(c, swar_step(ld64(c), ONE16, ~expand16(d[i] & 0xf), HI16, 16));
        st64(c + 8, swar_step(ld64(c + 8), ONE16, ~expand16(d[i] >> 4),
                              HI16, 16));
    }
    return 0;
}

/* Apply n (<= 32) ternary elements given as dense masks, width 8. */
static inline void tern_apply8(uint8_t *c, uint32_t act, uint32_t neg,
                               unsigned n)
{
    for (unsigned i = 0; i < n; i += 8, c += 8, act >>= 8, neg >>= 8) {
        uint64_t a = expand8(act & 0xff) & ONE8;
        uint64_t g = expand8(neg & 0xff);

        if (n - i >= 8) {
            st64(c, swar_step(ld64(c), a, g, HI8, 8));
        } else {
            stn(c, swar_step(ldn(c, n - i), a, g, HI8, 8), n - i);
        }
    }
}

static inline void tern_apply16(uint8_t *c, uint32_t act, uint32_t neg,
                                unsigned n)
{
    for (unsigned i = 0; i < n; i += 4, c += 8, act >>= 4, neg >>= 4) {
        uint64_t a = expand16(act & 0xf) & ONE16;
        uint64_t g = expand16(neg & 0xf);

        st64(c, swar_step(ld64(c), a, g, HI16, 16));
    }
}

NF_NOINLINE static int64_t
port_write_ter8(uint8_t *c, const uint8_t *d, size_t len)
{
    int64_t reserved = 0;
    uint32_t act, neg;
    uint64_t v;

    for (; len >= 8; len -= 8, d += 8, c += 32) {
        v = ld64(d);
        reserved += tern_reserved64(v);
        tern_masks(v, &act, &neg);
        tern_apply8(c, act, neg, 32);
    }
    if (len) {
        v = ldn(d, len);        /* zero padding: code 0, inactive */
        reserved += tern_reserved64(v);
        tern_masks(v, &act, &neg);
        tern_apply8(c, act, neg, (unsigned)len * 4);
    }
    return reserved;
}

NF_NOINLINE static int64_t
port_write_ter16(uint8_t *c, const uint8_t *d, size_t len)
{
    int64_t reserved = 0;
    uint32_t act, neg;
    uint64_t v;

    for (; len >= 8; len -= 8, d += 8, c += 64) {
        v = ld64(d);
        reserved += tern_reserved64(v);
        tern_masks(v, &act, &neg);
        tern_apply16(c, act, neg, 32);
    }
    if (len) {
        v = ldn(d, len);
        reserved += tern_reserved64(v);
        tern_masks(v, &act, &neg);
        tern_apply16(c, act, neg, (unsigned)len * 4);
    }
    return reserved;
}

/* Positive-lane sign bits: x > 0, or x >= 0 with the positive tie rule. */
static inline uint64_t pos_lanes(uint64_t x, uint64_t hi, uint64_t low,
                                 unsigned tie)
{
    uint64_t nz;

    if (tie == NFABRIC_TIE_POSITIVE) {
        return ~x & hi;
    }
    nz = (((x & low) + low) | x) & hi;
    return nz & ~x & hi;
}

NF_NOINLINE static void
port_read_bin8(const uint8_t *c, uint8_t *out, size_t len, uint32_t tie)
{
    for (size_t i = 0; i < len; i++, c += 8) {
        out[i] = (uint8_t)gather8(pos_lanes(ld64(c), HI8, LOW8, tie));
    }
}

NF_NOINLINE static void
port_read_bin16(const uint8_t *c, uint8_t *out, size_t len, uint32_t tie)
{
    for (size_t i = 0; i < len; i++, c += 16) {
        out[i] = (uint8_t)(gather16(pos_lanes(ld64(c), HI16, LOW16, tie)) |
                           gather16(pos_lanes(ld64(c + 8), HI16, LOW16,
                                              tie)) << 4);
    }
}

/*
 * Gate of one word: sign bits of the lanes with x >= t (ge) and x <= -t
 * (le), 1 <= t <= max.  Lanes compare as (w-1)-bit unsigned values with
 * the sign bit as a guard: (v | hi) - u keeps hi iff v >= u.
 */
static inline void gate_lanes(uint64_t x, uint64_t tl, uint64_t tm1l,
                              uint64_t hi, uint64_t *ge, uint64_t *le)
{
    uint64_t low = ~hi;
    uint64_t nx = ~x;

    *ge = nx & ((((x & low) | hi) - tl) & hi);
    *le = x & ((((nx & low) | hi) - tm1l) & hi);
}

NF_NOINLINE static void
port_read_ter8(const uint8_t *c, uint8_t *out, size_t len, uint32_t t)
{
    uint64_t tl = t * ONE8, tm1l = (t - 1) * ONE8;
    uint64_t ge, le, x;
    unsigned lo, hi;

    for (; len >= 2; len -= 2, out += 2, c += 8) {
        gate_lanes(ld64(c), tl, tm1l, HI8, &ge, &le);
        lo = gather8(ge | le);
        hi = gather8(le);
        stn(out, spread32(lo) | spread32(hi) << 1, 2);
    }
    if (len) {
        x = ldn(c, 4);
        gate_lanes(x, tl, tm1l, HI8, &ge, &le);
        lo = gather8(ge | le) & 0xf;
        hi = gather8(le) & 0xf;
        out[0] = (uint8_t)(spread32(lo) | spread32(hi) << 1);
    }
}

NF_NOINLINE static void
port_read_ter16(const uint8_t *c, uint8_t *out, size_t len, uint32_t t)
{
    uint64_t tl = t * ONE16, tm1l = (t - 1) * ONE16;
    uint64_t ge, le;

    for (size_t i = 0; i < len; i++, c += 8) {
        gate_lanes(ld64(c), tl, tm1l, HI16, &ge, &le);
        out[i] = (uint8_t)(spread32(gather16(ge | le)) |
                           spread32(gather16(le)) << 1);
    }
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

static const NFabricOps nf_ops_portable = {
    .impl = NFABRIC_IMPL_PORTABLE,
    .write = { { port_write_bin8, port_write_bin16 },
               { port_write_ter8, port_write_ter16 } },
    .read = { { port_read_bin8, port_read_bin16 },
              { port_read_ter8, port_read_ter16 } },
};

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
    return len > n ? port_write_bin8(c, d, len - n) : 0;
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
    return len > n ? reserved + port_write_ter8(c, d, len - n) : reserved;
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
    return len > n ? reserved + port_write_ter16(c, d, len - n) : reserved;
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
        port_read_bin8(c, out + n, len - n, tie);
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
        port_read_bin16(c, out + n, len - n, tie);
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
        port_read_ter8(c, out + n, len - n, t);
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
        port_read_ter16(c, out + n, len - n, t);
    }
}

static const NFabricOps nf_ops_sse2 = {
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
    return len > n ? port_write_bin8(c, d, len - n) : 0;
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
    return len > n ? port_write_bin16(c, d, len - n) : 0;
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
    return len > n ? reserved + port_write_ter8(c, d, len - n) : reserved;
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
    return len > n ? reserved + port_write_ter16(c, d, len - n) : reserved;
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
        port_read_bin8(c, out + n, len - n, tie);
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
        port_read_bin16(c, out + n, len - n, tie);
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
        port_read_ter8(c, out + n, len - n, t);
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
        port_read_ter16(c, out + n, len - n, t);
    }
}

static const NFabricOps nf_ops_avx2 = {
    .impl = NFABRIC_IMPL_AVX2,
    .write = { { avx2_write_bin8, avx2_write_bin16 },
               { avx2_write_ter8, avx2_write_ter16 } },
    .read = { { avx2_read_bin8, avx2_read_bin16 },
              { avx2_read_ter8, avx2_read_ter16 } },
};

#endif /* NF_HAVE_X86 */

/* ---- Selection --------------------------------------------------------- */

/* The one mutable global: NULL until first use, then the chosen ops. */
static const NFabricOps *nf_ops;

static const NFabricOps *ops_load(void)
{
#if defined(__ATOMIC_RELAXED)
    return __atomic_load_n(&nf_ops, __ATOMIC_RELAXED);
#else
    return nf_ops;
#endif
}

static void ops_store(const NFabricOps *ops)
{
#if defined(__ATOMIC_RELAXED)
    __atomic_store_n(&nf_ops, ops, __ATOMIC_RELAXED);
#else
    nf_ops = ops;
#endif
}

bool nfabric_engine_supported(NFabricImpl impl)
{
    switch (impl) {
    case NFABRIC_IMPL_AUTO:
    case NFABRIC_IMPL_PORTABLE:
        return true;
#if NF_HAVE_X86
    case NFABRIC_IMPL_SSE2:
        return true;
    case NFABRIC_IMPL_AVX2:
        __builtin_cpu_init();
        return __builtin_cpu_supports("avx2");
#endif
    default:
        return false;
    }
}

static const NFabricOps *ops_for(NFabricImpl impl)
{
    switch (impl) {
#if NF_HAVE_X86
    case NFABRIC_IMPL_SSE2:
        return &nf_ops_sse2;
    case NFABRIC_IMPL_AVX2:
        return &nf_ops_avx2;
#endif
    case NFABRIC_IMPL_AUTO:
        for (int i = NFABRIC_IMPL_COUNT - 1; i > NFABRIC_IMPL_PORTABLE; i--) {
            if (nfabric_engine_supported((NFabricImpl)i)) {
                return ops_for((NFabricImpl)i);
            }
        }
        return &nf_ops_portable;
    default:
        return &nf_ops_portable;
    }
}

static const NFabricOps *ops_get(void)
{
    const NFabricOps *ops = ops_load();

    if (!ops) {
        ops = ops_for(NFABRIC_IMPL_AUTO);
        ops_store(ops);
    }
    return ops;
}

bool nfabric_engine_select(NFabricImpl impl)
{
    if (impl >= NFABRIC_IMPL_COUNT || !nfabric_engine_supported(impl)) {
        return false;
    }
    ops_store(ops_for(impl));
    return true;
}

NFabricImpl nfabric_engine_active(void)
{
    return ops_get()->impl;
}

const char *nfabric_engine_impl_name(NFabricImpl impl)
{
    switch (impl) {
    case NFABRIC_IMPL_AUTO:
        return "auto";
    case NFABRIC_IMPL_PORTABLE:
        return "portable";
    case NFABRIC_IMPL_SSE2:
        return "sse2";
    case NFABRIC_IMPL_AVX2:
        return "avx2";
    default:
        return "unknown";
    }
}

/* ---- Dispatched entry points ------------------------------------------ */

int64_t nfabric_agg_write(const NFabricAggCfg *cfg, void *counters,
                          uint64_t off, const uint8_t *data, size_t len)
{
    if (!range_ok(cfg, off, len)) {
        return -1;
    }
    if (len == 0) {
        return 0;
    }
    return ops_get()->write[cfg->path - NFABRIC_PATH_GBINARY]
                           [cfg->width == 16]
        ((uint8_t *)counters + counter_offset(cfg, off), data, len);
}

int nfabric_agg_read(const NFabricAggCfg *cfg, const void *counters,
                     uint64_t off, uint8_t *out, size_t len)
{
    if (!range_ok(cfg, off, len)) {
        return -1;
    }
    if (len == 0) {
        return 0;
    }
    ops_get()->read[cfg->path - NFABRIC_PATH_GBINARY][cfg->width == 16]
        ((const uint8_t *)counters + counter_offset(cfg, off), out, len,
         cfg->path == NFABRIC_PATH_GBINARY ? cfg->tie : cfg->threshold);
    return 0;
}
