/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * docs/registers.md against the register contract's tables
 * (include/hw/mem/nfabric_regs.h) and the controller: every register of
 * the tables is in the specification's tables at the same offset, width
 * and access, every register row of the specification is in the tables,
 * every reset value the specification gives as a number is the tables'
 * and every reset value of the tables is what a fresh controller reads.
 * TAP output.
 */
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hw/mem/nfabric_ctrl.h"
#include "tap.h"

#ifndef NF_REGISTERS_MD
#error "NF_REGISTERS_MD: the path of docs/registers.md"
#endif

enum { GLOBAL, WINDOW, ROUND, NKINDS };

typedef struct Reg {
    NFabricRegDesc d;
    int kind;
    int found;
} Reg;

static Reg regs[] = {
#define ROW(kind, n, off, w, a, r, sc, c) \
    { NFABRIC_REG_DESC(n, off, w, a, r, sc, c) kind, 0 },
#define G(...) ROW(GLOBAL, __VA_ARGS__)
#define W(...) ROW(WINDOW, __VA_ARGS__)
#define R(...) ROW(ROUND, __VA_ARGS__)
    NFABRIC_GLOBAL_REGS(G)
    NFABRIC_WIN_REGS(W)
    NFABRIC_ROUND_REGS(R)
#undef G
#undef W
#undef R
#undef ROW
};
#define NREGS (sizeof(regs) / sizeof(regs[0]))

static const char *const access_names[] = { "RO", "RW", "WO" };

/* The block of a register of this kind in window i (0 for globals). */
static uint64_t block(int kind, unsigned i)
{
    return kind == WINDOW ? NFABRIC_REG_WIN(i, 0) :
           kind == ROUND ? NFABRIC_REG_ROUND(i, 0) : 0;
}

/*
 * The register a row of the specification names: its own name, or a
 * name that extends an array's (T_PATH_TIME_PS of T_PATH) at an offset
 * inside the array.
 */
static Reg *find(const char *name, int kind, uint64_t off)
{
    for (unsigned k = 0; k < NREGS; k++) {
        Reg *r = &regs[k];

        if ((r->kind == GLOBAL) != (kind == GLOBAL)) {
            continue;
        }
        if (!strcmp(r->d.name, name)) {
            return r;
        }
        if (r->d.count > 1 && !strncmp(name, r->d.name, strlen(r->d.name)) &&
            name[strlen(r->d.name)] == '_' && off >= r->d.off &&
            off - r->d.off < (uint64_t)r->d.width * r->d.count) {
            return r;
        }
    }
    return NULL;
}

/* No two registers share a byte; each is aligned and inside its block. */
static void check_tables(void)
{
    static uint8_t owner[NFABRIC_REGS_SIZE];
    unsigned clash = 0;

    for (unsigned k = 0; k < NREGS; k++) {
        const Reg *r = &regs[k];
        unsigned blocks = r->kind == GLOBAL ? 1 : NFABRIC_NUM_WINDOWS;
        uint64_t len = (uint64_t)r->d.width * r->d.count;
        uint64_t limit = r->kind == WINDOW ? NFABRIC_WIN_STRIDE :
                         r->kind == ROUND ? NFABRIC_ROUND_STRIDE :
                         NFABRIC_REGS_SIZE;

        if (r->d.off % r->d.width || r->d.off + len > limit ||
            (r->d.width != 4 && r->d.width != 8)) {
            clash++;
            tap_diag("%s: misaligned, bad width or outside its block",
                     r->d.name);
            continue;
        }
        for (unsigned i = 0; i < blocks; i++) {
            for (uint64_t b = 0; b < len; b++) {
                uint64_t off = block(r->kind, i) + r->d.off + b;

                if (off >= NFABRIC_REGS_SIZE || owner[off]) {
                    clash++;
                    tap_diag("%s: byte 0x%" PRIx64 " taken", r->d.name, off);
                    break;
                }
                owner[off] = 1;
            }
        }
    }
    TAP_CHECK(clash == 0, "the tables' %zu registers are aligned, inside "
              "their blocks and share no byte", NREGS);
}

/* Every reset value of the tables is what a fresh controller reads. */
static void check_resets(NFabricCtrl *c)
{
    unsigned n = 0, bad = 0;

    for (unsigned k = 0; k < NREGS; k++) {
        const Reg *r = &regs[k];
        unsigned blocks = r->kind == GLOBAL ? 1 : NFABRIC_NUM_WINDOWS;

        if (r->d.reset == NFABRIC_RESET_DEVICE) {
            continue;
        }
        for (unsigned i = 0; i < blocks; i++) {
            for (unsigned e = 0; e < r->d.count; e++) {
                uint64_t off = block(r->kind, i) + r->d.off +
                               (uint64_t)e * r->d.width;
                uint64_t got = ~0ull;

                n++;
                if (!nfabric_ctrl_reg_peek(c, off, r->d.width, &got) ||
                    got != r->d.reset) {
                    bad++;
                    tap_diag("%s (0x%" PRIx64 ") reads 0x%" PRIx64 " after "
                             "reset, the table says 0x%" PRIx64, r->d.name,
                             off, got, r->d.reset);
                }
            }
        }
    }
    TAP_CHECK(n >= NREGS && bad == 0, "every reset value of the tables (%u "
              "registers) is what a fresh controller reads", n);
}

/* The table of error codes in registers.md against NFABRIC_ERRORS, both ways. */
static void check_errors(void)
{
    FILE *f = fopen(NF_REGISTERS_MD, "r");
    char line[1024], name[64];
    unsigned code, seen = 0, bad = 0;
    bool found[NFABRIC_ERR_MAX + 1] = { false };

    while (f && fgets(line, sizeof(line), f)) {
        if (sscanf(line, "| %u | `%63[^`]` |", &code, name) != 2) {
            continue;
        }
        seen++;
        if (code > NFABRIC_ERR_MAX || strcmp(nfabric_err_name(code), name)) {
            bad++;
            tap_diag("registers.md: error %u `%s`: the table says %s", code,
                     name, code > NFABRIC_ERR_MAX ? "no such code" :
                     nfabric_err_name(code));
            continue;
        }
        found[code] = true;
    }
    if (f) {
        fclose(f);
    }
    for (unsigned c = 0; c <= NFABRIC_ERR_MAX; c++) {
        if (!found[c]) {
            bad++;
            tap_diag("registers.md has no row for error %u %s", c,
                     nfabric_err_name(c));
        }
    }
    TAP_CHECK(seen == NFABRIC_ERR_MAX + 1 && bad == 0, "every error code of "
              "the table (%d) is in registers.md with its name, and no other",
              NFABRIC_ERR_MAX + 1);
}

int main(void)
{
    static const NFabricTimingParams tp = { 1000, 5, 300, 32000 };
    static uint8_t ram[1 << 20];
    static NFabricCtrl c;
    FILE *f = fopen(NF_REGISTERS_MD, "r");
    char line[1024];
    unsigned rows = 0, bad_off = 0, resets = 0, bad_reset = 0;

    TAP_CHECK(f != NULL, "open %s", NF_REGISTERS_MD);
    if (!f) {
        return tap_done();
    }
    nfabric_ctrl_init(&c, ram, sizeof(ram), &tp, NULL, NULL);
    while (fgets(line, sizeof(line), f)) {
        char offs[64], name[64], width[16], access[16], reset[64];
        unsigned long long off;
        int kind, n;
        Reg *r;

        /* | `0x000` | `MAGIC` | 32 | RO | `0x4241464e` | ... (global)
         * | `+0x00` | `DPA_BASE` | 64 | RW | ...   (window, round) */
        if (sscanf(line, "| `%63[^`]` | `%63[^`]` | %15[^ |] | %15[^ |] | "
                   "%63[^|]|%n", offs, name, width, access, reset, &n) < 5) {
            continue;
        }
        kind = offs[0] != '+' ? GLOBAL :
               !strncmp(name, "ROUND_", 6) ? ROUND : WINDOW;
        off = strtoull(offs + (kind != GLOBAL), NULL, 16);
        r = find(name, kind, off);
        rows++;
        if (!r || (!strcmp(r->d.name, name) && r->d.off != off) ||
            r->d.width * 8 != (unsigned)atoi(width) ||
            strcmp(access_names[r->d.access], access)) {
            bad_off++;
            tap_diag("registers.md: %s at %s, %s bits, %s: the tables %s",
                     name, offs, width, access,
                     r ? "have another offset, width or access" : "lack it");
            continue;
        }
        r->found++;
        /* A reset value given as a number must be the tables'. */
        if (reset[0] == '`' && !strncmp(reset, "`0x", 3)) {
            uint64_t want = strtoull(reset + 1, NULL, 16);

            resets++;
            if (r->d.reset != want) {
                bad_reset++;
                tap_diag("%s resets to 0x%" PRIx64 " in the tables, "
                         "registers.md says 0x%" PRIx64, name, r->d.reset,
                         want);
            }
        }
    }
    fclose(f);
    check_errors();
    TAP_CHECK(rows >= NREGS && bad_off == 0, "every register row of "
              "registers.md (%u) has the tables' offset, width and access",
              rows);
    {
        unsigned missing = 0;

        for (unsigned i = 0; i < NREGS; i++) {
            if (!regs[i].found) {
                missing++;
                tap_diag("registers.md has no row for %s", regs[i].d.name);
            }
        }
        TAP_CHECK(missing == 0, "every register of the tables (%zu) is "
                  "specified in registers.md", NREGS);
    }
    TAP_CHECK(resets >= 6 && bad_reset == 0, "every reset value registers.md "
              "gives as a number (%u) is the tables'", resets);
    check_tables();
    check_resets(&c);
    return tap_done();
}
