/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Unit tests of the interrupts (hw/mem/nfabric/nfabric_irq.c, register
 * version 1.8) on a device that is not shared, without QEMU: a message is
 * asked for once per event seen while enabled (a round becoming ALL_DONE,
 * INCOMPLETE is the shared heads' test-shared), never for a window nobody
 * enabled, nor for what a round showed before its enable; status bits
 * latch until written back (acknowledged); a new round can raise again;
 * IRQ_MSGNUM says none by default and what the owner set; reset clears
 * the enables and status; reserved bits of IRQ_HEAD_ENABLE are refused.
 */
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "hw/mem/nfabric_ctrl.h"
#include "tap.h"

#define RAM_SIZE        (1u << 20)

static const NFabricTimingParams tparams = { 1000, 5, 300, 32000 };
static NFabricCtrl c;
static uint8_t *ram;

static void wr(uint64_t off, uint64_t v)
{
    nfabric_ctrl_reg_write(&c, off, v, 4);
}

static uint32_t rd(uint64_t off)
{
    return (uint32_t)nfabric_ctrl_reg_read(&c, off, 4);
}

static void win_on(unsigned i)
{
    nfabric_ctrl_reg_write(&c, NFABRIC_REG_WIN(i, NFABRIC_WIN_DPA_BASE),
                           0x1000 * (i + 1), 8);
    nfabric_ctrl_reg_write(&c, NFABRIC_REG_WIN(i, NFABRIC_WIN_DPA_SIZE), 64, 8);
    nfabric_ctrl_reg_write(&c, NFABRIC_REG_WIN(i, NFABRIC_WIN_COUNTERS),
                           0x40000 + 0x1000 * i, 8);
    wr(NFABRIC_REG_WIN(i, NFABRIC_WIN_CTRL),
       NFABRIC_WCTRL(NFABRIC_PATH_GBINARY, 8, 0) | NFABRIC_WCTRL_ENABLE);
}

static void complete(unsigned i)
{
    wr(NFABRIC_REG_ROUND(i, NFABRIC_ROUND_COMPLETE),
       rd(NFABRIC_REG_ROUND(i, NFABRIC_ROUND_SEQ)));
}

int main(void)
{
    bool a, b;

    ram = calloc(1, RAM_SIZE);
    nfabric_ctrl_init(&c, ram, RAM_SIZE, &tparams, NULL, NULL);
    TAP_CHECK(rd(NFABRIC_REG_IRQ_MSGNUM) == NFABRIC_IRQ_MSGNUM_NONE &&
              !nfabric_ctrl_irq_scan(&c),
              "IRQ_MSGNUM reads NONE until the owner gives a vector; no "
              "message is due");
    nfabric_ctrl_set_irq(&c, 8);
    win_on(0);
    win_on(1);
    wr(NFABRIC_REG_IRQ_ENABLE, NFABRIC_IRQ_DONE(0));
    complete(1);
    TAP_CHECK(rd(NFABRIC_REG_IRQ_MSGNUM) == 8 && !nfabric_ctrl_irq_scan(&c) &&
              rd(NFABRIC_REG_IRQ_STATUS) == 0,
              "window 1's round done, its interrupt not enabled: no message, "
              "no status");
    complete(0);
    a = nfabric_ctrl_irq_scan(&c);
    b = nfabric_ctrl_irq_scan(&c);
    TAP_CHECK(a && !b && rd(NFABRIC_REG_IRQ_STATUS) == NFABRIC_IRQ_DONE(0),
              "window 0's round done: one message (a second look: none), "
              "IRQ_STATUS bit 0");
    wr(NFABRIC_REG_IRQ_STATUS, NFABRIC_IRQ_DONE(0));
    TAP_CHECK(rd(NFABRIC_REG_IRQ_STATUS) == 0 && !nfabric_ctrl_irq_scan(&c),
              "acknowledged (write 1): status 0, the same round raises nothing "
              "more");
    wr(NFABRIC_REG_WIN(0, NFABRIC_WIN_CMD), NFABRIC_WCMD_CLEAR);
    TAP_CHECK(!nfabric_ctrl_irq_scan(&c), "a CLEAR (a new round, not done): "
              "no message");
    complete(0);
    TAP_CHECK(nfabric_ctrl_irq_scan(&c) &&
              rd(NFABRIC_REG_IRQ_STATUS) == NFABRIC_IRQ_DONE(0),
              "the next round done: a message again");
    /* Enabled after the round was done: not news. */
    wr(NFABRIC_REG_IRQ_ENABLE, NFABRIC_IRQ_DONE(0) | NFABRIC_IRQ_DONE(1) |
       NFABRIC_IRQ_INCOMPLETE(1));
    TAP_CHECK(!nfabric_ctrl_irq_scan(&c) &&
              !(rd(NFABRIC_REG_IRQ_STATUS) & NFABRIC_IRQ_DONE(1)),
              "window 1 enabled after its round was done: no message");
    wr(NFABRIC_REG_IRQ_ENABLE, 0);
    wr(NFABRIC_REG_WIN(0, NFABRIC_WIN_CMD), NFABRIC_WCMD_CLEAR);
    complete(0);
    TAP_CHECK(!nfabric_ctrl_irq_scan(&c) &&
              rd(NFABRIC_REG_IRQ_STATUS) == NFABRIC_IRQ_DONE(0),
              "disabled: a round done raises nothing and sets no status "
              "(the old status stays until acknowledged)");
    wr(NFABRIC_REG_IRQ_HEAD_ENABLE, 2);
    TAP_CHECK(rd(NFABRIC_REG_LAST_ERROR) == NFABRIC_ERR_RESERVED_BITS &&
              rd(NFABRIC_REG_IRQ_HEAD_ENABLE) == 0,
              "IRQ_HEAD_ENABLE bit 1: RESERVED_BITS, not stored");
    wr(NFABRIC_REG_IRQ_HEAD_ENABLE, NFABRIC_IRQ_HEAD_STATE_FAILED);
    wr(NFABRIC_REG_IRQ_ENABLE, 0xffffffffu);
    nfabric_ctrl_reset(&c);
    TAP_CHECK(rd(NFABRIC_REG_IRQ_ENABLE) == 0 && rd(NFABRIC_REG_IRQ_STATUS) == 0 &&
              rd(NFABRIC_REG_IRQ_HEAD_ENABLE) == 0 &&
              rd(NFABRIC_REG_IRQ_MSGNUM) == 8 && !nfabric_ctrl_irq_scan(&c),
              "reset: enables and status 0, IRQ_MSGNUM kept, nothing due");
    free(ram);
    return tap_done();
}
