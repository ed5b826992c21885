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
 * This file owns the configuration and range checks, the counter access,
 * the scalar reference, the portable kernels, the selection and the
 * dispatched entry points.  The SSE2 and AVX2 kernels are in
 * nfabric_engine_simd.c; what the two files share is in
 * nfabric_engine_int.h.  It may call the C library, nfabric_window.c (the
 * path-select table's rules) and the SIMD kernels' tables.
 *
 * The only mutable global is the pointer to the selected implementation.
 */
#include "hw/mem/nfabric_window.h"
#include "nfabric_engine_int.h"

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

NF_NOINLINE int64_t
nfabric_port_write_bin8(uint8_t *c, const uint8_t *d, size_t len)
{
    for (size_t i = 0; i < len; i++, c += 8) {
        st64(c, swar_step(ld64(c), ONE8, ~expand8(d[i]), HI8, 8));
    }
    return 0;
}

NF_NOINLINE int64_t
nfabric_port_write_bin16(uint8_t *c, const uint8_t *d, size_t len)
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

/* tern_apply8 or tern_apply16. */
static inline void tern_apply(uint8_t *c, uint32_t act, uint32_t neg,
                              unsigned n, bool wide)
{
    if (wide) {
        tern_apply16(c, act, neg, n);
    } else {
        tern_apply8(c, act, neg, n);
    }
}

/*
 * Ternary elements of len data bytes (4 a byte, 32 in 8 bytes) onto their
 * counters, width 16 if wide (else 8); returns the reserved codes seen.
 */
static NF_ALWAYS_INLINE int64_t tern_write(uint8_t *c, const uint8_t *d,
                                           size_t len, bool wide)
{
    int64_t reserved = 0;
    uint32_t act, neg;
    uint64_t v;

    for (; len >= 8; len -= 8, d += 8, c += wide ? 64 : 32) {
        v = ld64(d);
        reserved += tern_reserved64(v);
        tern_masks(v, &act, &neg);
        tern_apply(c, act, neg, 32, wide);
    }
    if (len) {
        v = ldn(d, len);        /* zero padding: code 0, inactive */
        reserved += tern_reserved64(v);
        tern_masks(v, &act, &neg);
        tern_apply(c, act, neg, (unsigned)len * 4, wide);
    }
    return reserved;
}

NF_NOINLINE int64_t
nfabric_port_write_ter8(uint8_t *c, const uint8_t *d, size_t len)
{
    return tern_write(c, d, len, false);
}

NF_NOINLINE int64_t
nfabric_port_write_ter16(uint8_t *c, const uint8_t *d, size_t len)
{
    return tern_write(c, d, len, true);
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

NF_NOINLINE void
nfabric_port_read_bin8(const uint8_t *c, uint8_t *out, size_t len,
                       uint32_t tie)
{
    for (size_t i = 0; i < len; i++, c += 8) {
        out[i] = (uint8_t)gather8(pos_lanes(ld64(c), HI8, LOW8, tie));
    }
}

NF_NOINLINE void
nfabric_port_read_bin16(const uint8_t *c, uint8_t *out, size_t len,
                        uint32_t tie)
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

NF_NOINLINE void
nfabric_port_read_ter8(const uint8_t *c, uint8_t *out, size_t len,
                       uint32_t t)
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

NF_NOINLINE void
nfabric_port_read_ter16(const uint8_t *c, uint8_t *out, size_t len,
                        uint32_t t)
{
    uint64_t tl = t * ONE16, tm1l = (t - 1) * ONE16;
    uint64_t ge, le;

    for (size_t i = 0; i < len; i++, c += 8) {
        gate_lanes(ld64(c), tl, tm1l, HI16, &ge, &le);
        out[i] = (uint8_t)(spread32(gather16(ge | le)) |
                           spread32(gather16(le)) << 1);
    }
}

const NFabricOps nfabric_ops_portable = {
    .impl = NFABRIC_IMPL_PORTABLE,
    .write = { { nfabric_port_write_bin8, nfabric_port_write_bin16 },
               { nfabric_port_write_ter8, nfabric_port_write_ter16 } },
    .read = { { nfabric_port_read_bin8, nfabric_port_read_bin16 },
              { nfabric_port_read_ter8, nfabric_port_read_ter16 } },
};

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
        return &nfabric_ops_sse2;
    case NFABRIC_IMPL_AVX2:
        return &nfabric_ops_avx2;
#endif
    case NFABRIC_IMPL_AUTO:
        for (int i = NFABRIC_IMPL_COUNT - 1; i > NFABRIC_IMPL_PORTABLE; i--) {
            if (nfabric_engine_supported((NFabricImpl)i)) {
                return ops_for((NFabricImpl)i);
            }
        }
        return &nfabric_ops_portable;
    default:
        return &nfabric_ops_portable;
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
