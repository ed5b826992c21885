/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * docs/registers.md against include/hw/mem/nfabric_regs.h and the
 * controller: every register the header defines is in the specification's
 * tables at the same offset and width, every register of the tables is in
 * the header, and every reset value the tables give is what a fresh
 * controller reads.  TAP output.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hw/mem/nfabric_ctrl.h"
#include "tap.h"

#ifndef NF_REGISTERS_MD
#error "NF_REGISTERS_MD: the path of docs/registers.md"
#endif

typedef struct Reg {
    const char *name;
    uint64_t off;       /* first instance */
    unsigned width;     /* bits */
    int found;
} Reg;

/* The header's registers, by the names the specification uses. */
static Reg regs[] = {
#define G(n, w) { #n, NFABRIC_REG_##n, w, 0 }
    G(MAGIC, 32), G(VERSION, 32), G(CAPS, 32), G(WIN_LAYOUT, 32), G(CTRL, 32),
    G(LAST_ERROR, 32), G(ERROR_COUNT, 32), G(ENABLED_MASK, 32),
    G(MEM_SIZE, 64), G(HEAD_INFO, 32), G(HEADS_LIVE, 32), G(HEAD_SELECT, 32),
    G(HEADS_LOST, 32), G(HEAD_CONTRIB, 64),
    G(T_CLOCK_MHZ, 32), G(T_DEPTH, 32), G(T_SERVICE_NS, 32),
    G(T_LINK_MBPS, 32), G(T_EXPOSED_PPM, 32), G(T_MAX_IN_FLIGHT, 32),
    G(T_TOTAL_PS, 64), G(T_RUNTIME_PS, 64), G(T_QUEUED_PS, 64),
    G(T_LINK_BUSY_PS, 64), G(T_MAX_QUEUED, 32), G(T_ACCESSES, 64),
#undef G
    { "T_PATH_TIME_PS", NFABRIC_REG_T_PATH_FIELD(0, NFABRIC_T_PATH_TIME_PS), 64, 0 },
    { "T_PATH_EXPOSED_PS", NFABRIC_REG_T_PATH_FIELD(0, NFABRIC_T_PATH_EXPOSED_PS), 64, 0 },
    /* Window registers (offsets within a window), then round registers. */
#define W(n, w) { #n, NFABRIC_WIN_##n, w, 0 }
    W(DPA_BASE, 64), W(DPA_SIZE, 64), W(COUNTERS, 64), W(CTRL, 32),
    W(THRESHOLD, 32), W(CMD, 32), W(ERROR, 32), W(CONTRIB_WRITES, 64),
    W(CONTRIB_BYTES, 64), W(RESERVED_CODES, 32),
#undef W
#define R(n, w) { #n, NFABRIC_##n, w, 0 }
    R(ROUND_SEQ, 32), R(ROUND_DONE, 32), R(ROUND_STATUS, 32),
    R(ROUND_COMPLETE, 32),
#undef R
};
#define NREGS (sizeof(regs) / sizeof(regs[0]))
#define FIRST_WIN 28        /* index of DPA_BASE in regs[] */

static Reg *find(const char *name, int window)
{
    for (unsigned i = window ? FIRST_WIN : 0;
         i < (window ? NREGS : FIRST_WIN); i++) {
        if (!strcmp(regs[i].name, name)) {
            return &regs[i];
        }
    }
    return NULL;
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
        char offs[64], name[64], width[16], reset[64];
        unsigned long long off;
        int window = 0, n;
        Reg *r;

        /* | `0x000` | `MAGIC` | 32 | RO | `0x4241464e` | ... (global)
         * | `+0x00` | `DPA_BASE` | 64 | RW | ...               (window, round) */
        if (sscanf(line, "| `%63[^`]` | `%63[^`]` | %15[^ |] | %*[^|]| %63[^|]|%n",
                   offs, name, width, reset, &n) < 4) {
            continue;
        }
        window = offs[0] == '+';
        off = strtoull(offs + window, NULL, 16);
        r = find(name, window);
        rows++;
        if (!r || r->off != off || r->width != (unsigned)atoi(width)) {
            bad_off++;
            tap_diag("registers.md: %s at %s, %s bits: header %s", name, offs,
                     width, r ? "has another offset or width" : "lacks it");
            continue;
        }
        r->found++;
        /* A reset value given as a number must be what a reset reads. */
        if (!window && reset[0] == '`' && !strncmp(reset, "`0x", 3)) {
            uint64_t want = strtoull(reset + 1, NULL, 16), got = 0;

            resets++;
            nfabric_ctrl_reg_peek(&c, off, r->width / 8, &got);
            if (got != want) {
                bad_reset++;
                tap_diag("%s resets to 0x%" PRIx64 ", registers.md says 0x%"
                         PRIx64, name, got, want);
            }
        }
    }
    fclose(f);
    TAP_CHECK(rows >= NREGS && bad_off == 0, "every register row of "
              "registers.md (%u) has the header's offset and width", rows);
    {
        unsigned missing = 0;

        for (unsigned i = 0; i < NREGS; i++) {
            if (!regs[i].found) {
                missing++;
                tap_diag("registers.md has no row for %s", regs[i].name);
            }
        }
        TAP_CHECK(missing == 0, "every register of the header (%zu) is "
                  "specified in registers.md", NREGS);
    }
    TAP_CHECK(resets >= 6 && bad_reset == 0, "every reset value registers.md "
              "gives as a number (%u) is what a fresh controller reads", resets);
    return tap_done();
}
