/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * NEURON-Fabric controller model: interrupts (register version 1.8,
 * docs/registers.md "Interrupts").  A head's IRQ_* registers, and the scan
 * that turns what happened to the rounds and to the head into status bits
 * and tells the owner a message is due.
 *
 * An event sets its status bit, and asks for a message, once: when it is
 * seen while its enable bit is set (a round becoming ALL_DONE, a round
 * becoming INCOMPLETE, this head's state failing).  The owner calls
 * nfabric_ctrl_irq_scan() after every register write of its own head and
 * whenever the shared state's event_gen moves (another head completed,
 * cleared, died), and now and then meanwhile (a head found dead only when
 * someone looks).  Pure C11; only the view of this head's job is read.
 * Calls the base (nfabric_head.c) and the table's rounds (nfabric_table.c).
 */
#include "hw/mem/nfabric_ctrl.h"
#include "nfabric_ctrl_int.h"

/* What window i's round has shown this head (irq_seen[i]). */
#define NFABRIC_IRQ_SEEN_DONE       1u
#define NFABRIC_IRQ_SEEN_INCOMPLETE 2u

void nfabric_ctrl_set_irq(NFabricCtrl *s, uint32_t msgnum)
{
    s->irq_msgnum = msgnum;
}

/*
 * What window i's round shows now, as irq_seen bits; a new round (its
 * number moved) has shown nothing yet.
 */
static unsigned nfabric_irq_now(NFabricCtrl *s, unsigned i)
{
    uint32_t seq = __atomic_load_n(&s->sh->round[i].seq, __ATOMIC_ACQUIRE);
    uint32_t st;

    if (seq != s->irq_seq[i]) {
        s->irq_seq[i] = seq;
        s->irq_seen[i] = 0;
    }
    if (!nfabric_fm_window(s, i)) {
        return 0;
    }
    st = nfabric_round_status(s, i);
    return (st & NFABRIC_RSTAT_ALL_DONE ? NFABRIC_IRQ_SEEN_DONE : 0) |
           (st & NFABRIC_RSTAT_INCOMPLETE ? NFABRIC_IRQ_SEEN_INCOMPLETE : 0);
}

bool nfabric_ctrl_irq_scan(NFabricCtrl *s)
{
    uint32_t want = s->irq_enable, fresh = 0, hfresh = 0;

    if (s->shared) {
        nfabric_shared_thread_enter();
    }
    for (unsigned i = 0; want && i < NFABRIC_NUM_WINDOWS; i++) {
        unsigned now, news;

        if (!(want & (NFABRIC_IRQ_DONE(i) | NFABRIC_IRQ_INCOMPLETE(i)))) {
            continue;
        }
        if (s->failed) {
            break;          /* nothing of an unusable state is shown */
        }
        now = nfabric_irq_now(s, i);
        news = now & ~s->irq_seen[i];
        s->irq_seen[i] |= now;
        if ((news & NFABRIC_IRQ_SEEN_DONE) && (want & NFABRIC_IRQ_DONE(i))) {
            fresh |= NFABRIC_IRQ_DONE(i);
        }
        if ((news & NFABRIC_IRQ_SEEN_INCOMPLETE) &&
            (want & NFABRIC_IRQ_INCOMPLETE(i))) {
            fresh |= NFABRIC_IRQ_INCOMPLETE(i);
        }
    }
    if (s->failed && !s->irq_failed_seen) {
        s->irq_failed_seen = true;
        if (s->irq_head_enable & NFABRIC_IRQ_HEAD_STATE_FAILED) {
            hfresh = NFABRIC_IRQ_HEAD_STATE_FAILED;
        }
    }
    s->irq_status |= fresh;
    s->irq_head_status |= hfresh;
    return (fresh | hfresh) && !(s->irq_msgnum & NFABRIC_IRQ_MSGNUM_NONE);
}

uint64_t nfabric_irq_reg_read(NFabricCtrl *s, uint64_t off)
{
    switch (off) {
    case NFABRIC_REG_IRQ_MSGNUM:
        return s->irq_msgnum;
    case NFABRIC_REG_IRQ_ENABLE:
        return s->irq_enable;
    case NFABRIC_REG_IRQ_STATUS:
        return s->irq_status;
    case NFABRIC_REG_IRQ_HEAD_ENABLE:
        return s->irq_head_enable;
    case NFABRIC_REG_IRQ_HEAD_STATUS:
        return s->irq_head_status;
    }
    return 0;
}

void nfabric_irq_reg_write(NFabricCtrl *s, uint64_t off, uint32_t val,
                           uint64_t reg)
{
    switch (off) {
    case NFABRIC_REG_IRQ_ENABLE:
        /*
         * What the newly enabled windows' rounds show now is not news: a
         * message tells of a change after the enable (a waiter enables,
         * then looks at ROUND_STATUS once, then sleeps).
         */
        for (unsigned i = 0; i < NFABRIC_NUM_WINDOWS; i++) {
            uint32_t bits = NFABRIC_IRQ_DONE(i) | NFABRIC_IRQ_INCOMPLETE(i);

            if ((val & bits) && !(s->irq_enable & bits) && !s->failed) {
                s->irq_seen[i] = nfabric_irq_now(s, i);
            }
        }
        s->irq_enable = val;
        return;
    case NFABRIC_REG_IRQ_STATUS:
        s->irq_status &= ~val;
        return;
    case NFABRIC_REG_IRQ_HEAD_ENABLE:
        if (val & ~NFABRIC_IRQ_HEAD_VALID) {
            nfabric_set_error(s, -1, NFABRIC_ERR_RESERVED_BITS, reg,
                              "reserved bits set in IRQ_HEAD_ENABLE");
            return;
        }
        if ((val & NFABRIC_IRQ_HEAD_STATE_FAILED) &&
            !(s->irq_head_enable & NFABRIC_IRQ_HEAD_STATE_FAILED)) {
            s->irq_failed_seen = s->failed;
        }
        s->irq_head_enable = val;
        return;
    case NFABRIC_REG_IRQ_HEAD_STATUS:
        s->irq_head_status &= ~val;
        return;
    case NFABRIC_REG_IRQ_MSGNUM:
        break;
    }
}
