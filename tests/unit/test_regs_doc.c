/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * docs/registers.md against the register contract's tables
 * (include/hw/mem/nfabric_regs.h) and the controller: every register of
 * the tables is in the specification's tables at the same offset, width
 * and access, every register row of the specification is in the tables,
 * every reset value the specification gives as a number is the tables'
 * and every reset value of the tables is what a fresh controller reads.
 * Then where the registers are (NFABRIC_REGS_*, NFABRIC_DVS_* and
 * NFABRIC_REGLOC_* of nfabric_regs.h): the summary rows, the BAR0 table,
 * the vendor block's header table and the Register Locator's steps of
 * registers.md, each against the constants, so that a doc change that
 * disagrees fails.
 * TAP output.
 */
#include <inttypes.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hw/mem/nfabric_ctrl.h"
#include "tap.h"

#ifndef NF_REGISTERS_MD
#error "NF_REGISTERS_MD: the path of docs/registers.md"
#endif

enum { GLOBAL, WINDOW, ROUND, POSTED, NKINDS };

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
#define P(...) ROW(POSTED, __VA_ARGS__)
    NFABRIC_GLOBAL_REGS(G)
    NFABRIC_WIN_REGS(W)
    NFABRIC_ROUND_REGS(R)
    NFABRIC_POST_REGS(P)
#undef P
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
           kind == ROUND ? NFABRIC_REG_ROUND(i, 0) :
           kind == POSTED ? NFABRIC_REG_POST(i, 0) : 0;
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
                         r->kind == POSTED ? NFABRIC_POST_STRIDE :
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

/* ---- where the registers are ------------------------------------------ */

#define MAX_LINES 2048
static char *doc[MAX_LINES];
static unsigned ndoc;

static void load_doc(void)
{
    FILE *f = fopen(NF_REGISTERS_MD, "r");
    char line[4096];

    while (f && ndoc < MAX_LINES && fgets(line, sizeof(line), f)) {
        size_t n = strlen(line) + 1;

        doc[ndoc] = malloc(n);
        if (!doc[ndoc]) {
            break;
        }
        memcpy(doc[ndoc++], line, n);
    }
    if (f) {
        fclose(f);
    }
}

/*
 * The lines of the section whose heading (any level) begins with title,
 * up to the next heading: [*first, *end).  False if there is none.
 */
static bool section(const char *title, unsigned *first, unsigned *end)
{
    for (unsigned k = 0; k < ndoc; k++) {
        const char *t = doc[k] + strspn(doc[k], "#");

        if (doc[k][0] == '#' && *t == ' ' &&
            !strncmp(t + 1, title, strlen(title))) {
            *first = k + 1;
            for (*end = k + 1; *end < ndoc && doc[*end][0] != '#'; (*end)++) {
            }
            return true;
        }
    }
    *first = *end = 0;
    tap_diag("registers.md has no section \"%s\"", title);
    return false;
}

/* Does line hold the text fmt makes (from nfabric_regs.h's values)? */
static bool says(const char *line, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
static bool says(const char *line, const char *fmt, ...)
{
    char want[256];
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(want, sizeof(want), fmt, ap);
    va_end(ap);
    if (line && strstr(line, want)) {
        return true;
    }
    tap_diag("registers.md should say \"%s\" in: %.160s", want,
             line ? line : "(no such row)");
    return false;
}

/* The row of a table in [first, end) whose first cell is cell. */
static const char *row(unsigned first, unsigned end, const char *cell)
{
    size_t n = strlen(cell);

    for (unsigned k = first; k < end; k++) {
        if (!strncmp(doc[k], "| ", 2) && !strncmp(doc[k] + 2, cell, n) &&
            !strncmp(doc[k] + 2 + n, " |", 2)) {
            return doc[k];
        }
    }
    return NULL;
}

/*
 * The summary rows: the vendor block at BAR0 + NFABRIC_DVS_OFFSET, of
 * NFABRIC_DVS_SIZE bytes; the register page, NFABRIC_REGS_SIZE bytes, at
 * the vendor block + NFABRIC_DVS_REGS and at BAR0 + NFABRIC_REGS_OFFSET.
 */
static void check_where(void)
{
    unsigned a, b;
    bool ok = section("Where the registers are", &a, &b);
    const char *vb = row(a, b, "vendor block");
    const char *rp = row(a, b, "register page");

    ok = says(vb, "BAR0 + `0x%x`, %u KiB", NFABRIC_DVS_OFFSET,
              NFABRIC_DVS_SIZE / 1024) && ok;
    ok = says(rp, "the vendor block + `0x%x` (BAR0 + `0x%x`), %u KiB",
              NFABRIC_DVS_REGS, NFABRIC_DVS_OFFSET + NFABRIC_DVS_REGS,
              NFABRIC_REGS_SIZE / 1024) && ok;
    ok = says(rp, "the same registers at BAR0 + `0x%x`",
              NFABRIC_REGS_OFFSET) && ok;
    TAP_CHECK(ok, "registers.md's summary: the vendor block at BAR0 + 0x%x, "
              "%u KiB; the register page at its + 0x%x and at BAR0 + 0x%x, "
              "%u KiB", NFABRIC_DVS_OFFSET, NFABRIC_DVS_SIZE / 1024,
              NFABRIC_DVS_REGS, NFABRIC_REGS_OFFSET, NFABRIC_REGS_SIZE / 1024);
}

/*
 * The BAR0 table: rows | `0xSTART-0xEND` | what | an access there |, in
 * order and without a gap over BAR0 (twice the CXL PMU's offset: the
 * component register block, the 64 KiB the vendor block starts, the 64
 * KiB the CPMU starts, 64 KiB more); the register page at
 * NFABRIC_REGS_OFFSET and at the vendor block + NFABRIC_DVS_REGS, the
 * header page at NFABRIC_DVS_OFFSET, the CXL PMU at NFABRIC_CPMU_OFFSET,
 * and after each of the two last pages of the component register block,
 * of the vendor block and of the CPMU nothing, which reads 0 and counts
 * nothing.
 */
static void check_bar0(void)
{
    const uint64_t bar_end = 2ull * NFABRIC_CPMU_OFFSET;
    const uint64_t page2 = NFABRIC_DVS_OFFSET + NFABRIC_DVS_REGS;
    const uint64_t cpmu_end = NFABRIC_CPMU_OFFSET + NFABRIC_CPMU_SIZE;
    unsigned a, b, rows = 0, pages = 0, headers = 0, holes = 0, bad = 0;
    unsigned cpmus = 0;
    uint64_t next = 0;
    bool ok = section("BAR0", &a, &b);

    for (unsigned k = a; k < b; k++) {
        unsigned long long lo, hi;
        char what[512], acc[512];

        if (sscanf(doc[k], "| `%llx-%llx` | %511[^|]| %511[^|]|", &lo, &hi,
                   what, acc) != 4) {
            continue;
        }
        rows++;
        if (lo != next || hi < lo) {
            bad++;
            tap_diag("BAR0 table: 0x%llx-0x%llx does not follow 0x%" PRIx64,
                     lo, hi, next);
        }
        next = hi + 1;
        if (!strncmp(what, "the register page", 17)) {
            pages++;
            if ((lo != NFABRIC_REGS_OFFSET && lo != page2) ||
                hi + 1 - lo != NFABRIC_REGS_SIZE) {
                bad++;
                tap_diag("BAR0 table: a register page at 0x%llx-0x%llx; "
                         "nfabric_regs.h: at 0x%x and 0x%x, 0x%x bytes", lo,
                         hi, NFABRIC_REGS_OFFSET, (unsigned)page2,
                         NFABRIC_REGS_SIZE);
            }
        } else if (strstr(what, "header page")) {
            headers++;
            if (lo != NFABRIC_DVS_OFFSET || hi + 1 != page2) {
                bad++;
                tap_diag("BAR0 table: the header page at 0x%llx-0x%llx; "
                         "nfabric_regs.h: 0x%x-0x%x", lo, hi,
                         NFABRIC_DVS_OFFSET, (unsigned)page2 - 1);
            }
        } else if (!strncmp(what, "the CXL PMU", 11)) {
            cpmus++;
            if (lo != NFABRIC_CPMU_OFFSET || hi + 1 != cpmu_end) {
                bad++;
                tap_diag("BAR0 table: the CXL PMU at 0x%llx-0x%llx; "
                         "nfabric_regs.h: 0x%x-0x%" PRIx64, lo, hi,
                         NFABRIC_CPMU_OFFSET, cpmu_end - 1);
            }
        } else if (!strncmp(what, "nothing", 7)) {
            holes++;
            if (!(lo == NFABRIC_REGS_OFFSET + NFABRIC_REGS_SIZE &&
                  hi + 1 == NFABRIC_DVS_OFFSET) &&
                !(lo == NFABRIC_DVS_OFFSET + NFABRIC_DVS_SIZE &&
                  hi + 1 == NFABRIC_CPMU_OFFSET) &&
                !(lo == cpmu_end && hi + 1 == bar_end)) {
                bad++;
                tap_diag("BAR0 table: nothing at 0x%llx-0x%llx; "
                         "nfabric_regs.h: at 0x%x-0x%x, 0x%x-0x%x and 0x%"
                         PRIx64 "-0x%" PRIx64,
                         lo, hi, NFABRIC_REGS_OFFSET + NFABRIC_REGS_SIZE,
                         NFABRIC_DVS_OFFSET - 1,
                         NFABRIC_DVS_OFFSET + NFABRIC_DVS_SIZE,
                         NFABRIC_CPMU_OFFSET - 1, cpmu_end, bar_end - 1);
            }
            if (!strstr(acc, "reads 0") || !strstr(acc, "not counted")) {
                bad++;
                tap_diag("BAR0 table: 0x%llx-0x%llx: \"reads 0\" and \"not "
                         "counted\" missing", lo, hi);
            }
        } else if (hi >= NFABRIC_REGS_OFFSET) {
            bad++;
            tap_diag("BAR0 table: 0x%llx-0x%llx is neither the register "
                     "page, the header page, the CXL PMU nor nothing", lo, hi);
        }
    }
    if (next != bar_end) {
        bad++;
        tap_diag("BAR0 table: it ends at 0x%" PRIx64 ", BAR0 is 0x%" PRIx64
                 " bytes", next, bar_end);
    }
    ok = says(a < b ? doc[a + 1] : NULL, "BAR0 is %u KiB",
              (unsigned)(bar_end / 1024)) && ok;
    TAP_CHECK(ok && rows >= 8 && pages == 2 && headers == 1 && cpmus == 1 &&
              holes == 3 && bad == 0, "registers.md's BAR0 table (%u rows): "
              "0-0x%" PRIx64 ", the register page at 0x%x and 0x%x, the "
              "header page at 0x%x, the CXL PMU at 0x%x, nothing (reads 0, "
              "not counted) after each", rows, bar_end - 1,
              NFABRIC_REGS_OFFSET, (unsigned)page2, NFABRIC_DVS_OFFSET,
              NFABRIC_CPMU_OFFSET);
}

/*
 * The vendor block's header table: | `+0xOFF` | field | HI:LO | `VALUE` |,
 * one row per field at nfabric_regs.h's offset, bits and value, the
 * fields ending at NFABRIC_DVS_HDR_SIZE, where the refusals begin.
 */
static void check_header(void)
{
    static const struct {
        const char *field;
        unsigned off, hi, lo;
        uint32_t value;
    } want[] = {
        { "vendor ID", NFABRIC_DVS_HDR_ID, 15, 0, NFABRIC_DVS_VENDOR_ID },
        { "vendor block ID", NFABRIC_DVS_HDR_ID, 31, 16, NFABRIC_DVS_BLOCK_ID },
        { "revision", NFABRIC_DVS_HDR_REVISION, 3, 0, NFABRIC_DVS_REVISION },
        { "length", NFABRIC_DVS_HDR_LENGTH, 31, 0, NFABRIC_DVS_SIZE },
    };
    enum { NW = sizeof(want) / sizeof(want[0]) };
    unsigned a, b, seen = 0, bad = 0, found[NW] = { 0 }, end = 0, past = 0;
    bool ok = section("The vendor block's header", &a, &b);
    char refused[32];

    for (unsigned k = a; k < b; k++) {
        unsigned off, hi, lo, value, w;
        char field[64];

        if (sscanf(doc[k], "| `+%x` | %63[^|]| %u:%u | `%x`", &off, field,
                   &hi, &lo, &value) != 5) {
            continue;
        }
        for (size_t n = strlen(field); n && field[n - 1] == ' '; n--) {
            field[n - 1] = '\0';
        }
        seen++;
        for (w = 0; w < NW && strcmp(want[w].field, field); w++) {
        }
        if (w == NW || off != want[w].off || hi != want[w].hi ||
            lo != want[w].lo || value != want[w].value) {
            bad++;
            tap_diag("header: %s at +0x%x, bits %u:%u, 0x%x: not what "
                     "nfabric_regs.h says", field, off, hi, lo, value);
            continue;
        }
        found[w]++;
        end = off + 4 > end ? off + 4 : end;
    }
    for (unsigned w = 0; w < NW; w++) {
        if (found[w] != 1) {
            bad++;
            tap_diag("header: %u rows for the %s", found[w], want[w].field);
        }
    }
    if (end != NFABRIC_DVS_HDR_SIZE) {
        bad++;
        tap_diag("header: its fields end at +0x%x, nfabric_regs.h's at +0x%x",
                 end, NFABRIC_DVS_HDR_SIZE);
    }
    /* Reads and writes there are refused with UNMAPPED. */
    snprintf(refused, sizeof(refused), "`+0x%x` or beyond",
             NFABRIC_DVS_HDR_SIZE);
    for (unsigned k = a; k < b; k++) {
        past += strstr(doc[k], refused) != NULL;
    }
    if (past != 2) {
        bad++;
        tap_diag("header: \"%s\" should be said of reads and of writes",
                 refused);
    }
    TAP_CHECK(ok && seen == NW && bad == 0, "registers.md's vendor block "
              "header: vendor 0x%04x, block 0x%04x, revision %u, length 0x%x "
              "at +0x%x/+0x%x/+0x%x; refusals from +0x%x",
              NFABRIC_DVS_VENDOR_ID, NFABRIC_DVS_BLOCK_ID,
              NFABRIC_DVS_REVISION, NFABRIC_DVS_SIZE, NFABRIC_DVS_HDR_ID,
              NFABRIC_DVS_HDR_REVISION, NFABRIC_DVS_HDR_LENGTH,
              NFABRIC_DVS_HDR_SIZE);
}

/* The Register Locator's steps, against NFABRIC_CXL_DVSEC_*, _REGLOC_*. */
static void check_locator(void)
{
    unsigned a, b;
    bool ok = section("Finding the block: the Register Locator DVSEC", &a, &b);
    const char *s1 = row(a, b, "1"), *s2 = row(a, b, "2");
    const char *s3 = row(a, b, "3"), *s4 = row(a, b, "4");

    ok = says(s1, "vendor `0x%04x` (CXL) and header 2 (`+0x8`) ID `%u`",
              NFABRIC_CXL_DVSEC_VENDOR_ID, NFABRIC_CXL_DVSEC_REGLOC) && ok;
    ok = says(s2, "entry from `+0x%x`", NFABRIC_REGLOC_ENTRIES) && ok;
    ok = says(s2, "bits %d:0 the BAR, %d:%d the Register Block Identifier, "
              "31:%d the offset's bits 31:%d",
              31 - __builtin_clz(NFABRIC_REGLOC_BIR_MASK),
              31 - __builtin_clz(NFABRIC_REGLOC_RBI_MASK),
              NFABRIC_REGLOC_RBI_SHIFT,
              __builtin_ctz(NFABRIC_REGLOC_OFF_LO_MASK),
              __builtin_ctz(NFABRIC_REGLOC_OFF_LO_MASK)) && ok;
    ok = says(s2, "identifier `0x%02x`", NFABRIC_REGLOC_RBI_VENDOR) && ok;
    ok = says(s2, "BAR `%u`, offset `0x%x`", NFABRIC_DVS_BIR,
              NFABRIC_DVS_OFFSET) && ok;
    ok = says(s3, "vendor `0x%04x`, block `0x%04x`", NFABRIC_DVS_VENDOR_ID,
              NFABRIC_DVS_BLOCK_ID) && ok;
    ok = says(s3, "revision %u or later, length at least `0x%x`",
              NFABRIC_DVS_REVISION, NFABRIC_DVS_REGS + NFABRIC_REGS_SIZE) &&
         ok;
    ok = says(s4, "the vendor block + `0x%x` (%u KiB)", NFABRIC_DVS_REGS,
              NFABRIC_REGS_SIZE / 1024) && ok;
    TAP_CHECK(ok, "registers.md's Register Locator steps: DVSEC vendor "
              "0x%04x ID %u, entries from +0x%x, identifier 0x%02x at BAR %u "
              "+ 0x%x, the header's values, the register page at + 0x%x",
              NFABRIC_CXL_DVSEC_VENDOR_ID, NFABRIC_CXL_DVSEC_REGLOC,
              NFABRIC_REGLOC_ENTRIES, NFABRIC_REGLOC_RBI_VENDOR,
              NFABRIC_DVS_BIR, NFABRIC_DVS_OFFSET, NFABRIC_DVS_REGS);
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
               !strncmp(name, "ROUND_", 6) ? ROUND :
               !strcmp(name, "STAGE_OFF") || !strcmp(name, "POST") ||
               !strcmp(name, "FETCH") ? POSTED : WINDOW;
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
    load_doc();
    check_where();
    check_bar0();
    check_header();
    check_locator();
    return tap_done();
}
