/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * libnfrtl: the Verilated nf_agg behind the engine's calls (hw/rtl/nfrtl.h).
 */
#include <cstdint>
#include <cstring>
#include <new>

#include "Vnf_agg.h"
#include "verilated.h"

#include "nfrtl.h"

namespace {

const unsigned LINE = 64;               // data bytes per line (512 lanes)
const unsigned CBLK = LINE * 16;        // counter bytes per line, widest

template <std::size_t W>
void put(VlWide<W> &w, const uint8_t *p, unsigned n)
{
    for (std::size_t i = 0; i < W; i++) {
        uint32_t v = 0;
        for (unsigned k = 0; k < 4 && 4 * i + k < n; k++) {
            v |= (uint32_t)p[4 * i + k] << (8 * k);
        }
        w[i] = v;
    }
}

template <std::size_t W>
void get(const VlWide<W> &w, uint8_t *p, unsigned n)
{
    for (unsigned i = 0; i < n; i++) {
        p[i] = (uint8_t)(w[i / 4] >> (8 * (i % 4)));
    }
}

struct Pending {
    uint64_t line;                      // window line index
    uint64_t be;                        // enabled data bytes of the line
};

} // namespace

struct NFRtl {
    VerilatedContext ctx;
    Vnf_agg *top;
    uint64_t cycles, lines;
    unsigned latency;
    uint16_t tag;
};

static void tick(NFRtl *r)
{
    r->top->clk = 0;
    r->top->eval();
    r->top->clk = 1;
    r->top->eval();
    r->cycles++;
}

extern "C" int nfrtl_abi_version(void)
{
    return NFRTL_ABI_VERSION;
}

extern "C" NFRtl *nfrtl_new(void)
{
    NFRtl *r = new (std::nothrow) NFRtl;
    if (!r) {
        return nullptr;
    }
    r->top = new (std::nothrow) Vnf_agg{ &r->ctx };
    if (!r->top) {
        delete r;
        return nullptr;
    }
    r->cycles = r->lines = 0;
    r->tag = 0;
    r->top->rst = 1;
    r->top->i_valid = 0;
    for (int i = 0; i < 4; i++) {
        tick(r);
    }
    r->top->rst = 0;
    /* Measure the latency once: an empty line (no byte enabled). */
    r->top->i_valid = 1;
    r->top->i_write = 0;
    r->top->i_path = NFABRIC_PATH_GBINARY;
    r->top->i_width = 8;
    r->top->i_be = 0;
    tick(r);
    r->top->i_valid = 0;
    r->latency = 0;
    for (unsigned c = 1; c < 64; c++) {
        if (r->top->o_valid) {
            r->latency = c;
            break;
        }
        tick(r);
    }
    return r;
}

extern "C" void nfrtl_free(NFRtl *r)
{
    if (r) {
        r->top->final();
        delete r->top;
        delete r;
    }
}

extern "C" uint64_t nfrtl_cycles(const NFRtl *r)
{
    return r->cycles;
}

extern "C" uint64_t nfrtl_lines(const NFRtl *r)
{
    return r->lines;
}

extern "C" unsigned nfrtl_latency(const NFRtl *r)
{
    return r->latency;
}

/*
 * The window's fields on the RTL's ports.  A value wider than its register
 * field becomes the field's largest value, which the RTL refuses as the
 * engine refuses the wide one (path 15, width 255; tie 15 is refused on
 * G-Binary and ignored on G-Ternary, as any tie above 1).
 */
static void set_cfg(NFRtl *r, const NFabricAggCfg *cfg)
{
    r->top->i_path = cfg->path > 0xf ? 0xf : cfg->path;
    r->top->i_width = cfg->width > 0xff ? 0xff : cfg->width;
    r->top->i_tie = cfg->tie > 0xf ? 0xf : cfg->tie;
    r->top->i_thr = cfg->threshold;
}

/*
 * Run [off, off + len) of the window through the RTL, line by line.
 * Returns the RTL's error code (0 or the refusal's) and, for writes, the
 * reserved codes counted.
 */
static unsigned run(NFRtl *r, const NFabricAggCfg *cfg, uint8_t *wcnt,
                    const uint8_t *rcnt, uint64_t off, const uint8_t *data,
                    uint8_t *out, size_t len, bool write, int64_t *reserved)
{
    unsigned epb = cfg->path == NFABRIC_PATH_GTERNARY ? 4 : 8;
    unsigned cpb = epb * (cfg->width == 16 ? 2 : 1);   /* counter bytes/byte */
    uint64_t first = off / LINE, last = (off + len - 1) / LINE;   /* len > 0 */
    uint64_t next = first, done = 0, total = last - first + 1;
    Pending ring[64];
    unsigned head = 0, count = 0, err = 0;
    uint8_t buf[CBLK], line_data[LINE], o_cnt[CBLK], o_rd[LINE];

    *reserved = 0;
    while (done < total) {
        if (next <= last) {
            uint64_t base = next * LINE, be = 0;
            uint64_t n = cfg->size - base < LINE ? cfg->size - base : LINE;

            memset(buf, 0, sizeof(buf));
            memset(line_data, 0, sizeof(line_data));
            /* Counter bytes of the line's data bytes inside the window. */
            memcpy(buf, rcnt + base * cpb, (size_t)(n * cpb));
            for (unsigned b = 0; b < LINE; b++) {
                uint64_t a = base + b;
                if (a >= off && a < off + len) {
                    be |= 1ull << b;
                    if (data) {
                        line_data[b] = data[a - off];
                    }
                }
            }
            r->top->i_valid = 1;
            r->top->i_write = write;
            set_cfg(r, cfg);
            r->top->i_be = be;
            put(r->top->i_data, line_data, LINE);
            put(r->top->i_cnt, buf, CBLK);
            r->top->i_tag = r->tag++;
            ring[(head + count) % 64] = Pending{ next, be };
            count++;
            next++;
        } else {
            r->top->i_valid = 0;
        }
        tick(r);
        if (r->top->o_valid && count) {
            Pending p = ring[head];
            uint64_t base = p.line * LINE;

            head = (head + 1) % 64;
            count--;
            done++;
            r->lines++;
            if (r->top->o_err) {
                err = r->top->o_err;
                continue;
            }
            get(r->top->o_cnt, o_cnt, CBLK);
            get(r->top->o_rdata, o_rd, LINE);
            *reserved += r->top->o_reserved;
            for (unsigned b = 0; b < LINE; b++) {
                if (!(p.be >> b & 1)) {
                    continue;
                }
                if (write) {
                    memcpy(wcnt + (base + b) * cpb, o_cnt + b * cpb, cpb);
                } else {
                    out[base + b - off] = o_rd[b];
                }
            }
        }
    }
    r->top->i_valid = 0;
    return err;
}

static bool range_ok(const NFabricAggCfg *cfg, uint64_t off, size_t len)
{
    return off <= cfg->size && (uint64_t)len <= cfg->size - off;
}

/*
 * The RTL's verdict on cfg: an empty line (no byte enabled, zero counters)
 * through the pipeline.  Asked before any counter byte is read, so that a
 * refused configuration (whose counter area may not exist) touches no
 * memory, as in the engine.
 */
static unsigned rtl_check(NFRtl *r, const NFabricAggCfg *cfg)
{
    static const uint8_t zero[CBLK] = { 0 };
    unsigned err = 0;

    r->top->i_valid = 1;
    r->top->i_write = 0;
    set_cfg(r, cfg);
    r->top->i_be = 0;
    put(r->top->i_cnt, zero, CBLK);
    r->top->i_tag = r->tag++;
    tick(r);
    r->top->i_valid = 0;
    for (unsigned c = 1; c < 64; c++) {
        if (r->top->o_valid) {
            err = r->top->o_err;
            break;
        }
        tick(r);
    }
    return err;
}

extern "C" int64_t nfrtl_agg_write(NFRtl *r, const NFabricAggCfg *cfg,
                                   void *counters, uint64_t off,
                                   const uint8_t *data, size_t len)
{
    int64_t reserved;

    if (!range_ok(cfg, off, len) || rtl_check(r, cfg)) {
        return -1;
    }
    if (len == 0) {
        return 0;
    }
    if (run(r, cfg, (uint8_t *)counters, (const uint8_t *)counters, off,
            data, nullptr, len, true, &reserved)) {
        return -1;
    }
    return reserved;
}

extern "C" int nfrtl_agg_read(NFRtl *r, const NFabricAggCfg *cfg,
                              const void *counters, uint64_t off,
                              uint8_t *out, size_t len)
{
    int64_t reserved;
    /*
     * The engine leaves out untouched when it refuses; the RTL reads as
     * zero then, so read into a copy first.
     */
    uint8_t *tmp = len ? new (std::nothrow) uint8_t[len] : nullptr;

    if (!range_ok(cfg, off, len) || (len && !tmp) || rtl_check(r, cfg)) {
        delete[] tmp;
        return -1;
    }
    if (len == 0) {
        return 0;
    }
    if (run(r, cfg, nullptr, (const uint8_t *)counters, off, nullptr, tmp,
            len, false, &reserved)) {
        delete[] tmp;
        return -1;
    }
    if (len) {
        memcpy(out, tmp, len);
    }
    delete[] tmp;
    return 0;
}
