/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * NEURON-Fabric controller model: the faults a head reports as CXL event
 * records (register version 1.8, docs/reliability.md "Faults as CXL
 * events").  What the shared state shows now is compared with what was
 * reported: a head newly in HEADS_LOST, a round of this head's job newly
 * INCOMPLETE with a contributor that did not complete, this head's state
 * failed, an enable given up with PEER.  The owner turns each into a
 * vendor-specific record in its device's event log (cxl_nfabric_events.c).
 * Pure C11.  Calls the base (nfabric_head.c), jobs and the shared state.
 */
#include "hw/mem/nfabric_ctrl.h"
#include "nfabric_ctrl_int.h"

static unsigned nfabric_fault_add(NFabricFault *out, unsigned n, unsigned max,
                                  uint8_t kind, unsigned head, unsigned win,
                                  uint32_t seq, uint32_t code)
{
    if (n < max) {
        out[n].kind = kind;
        out[n].head = head < NFABRIC_MAX_HEADS ? (uint8_t)head :
                      NFABRIC_EVENT_NONE;
        out[n].window = win < NFABRIC_NUM_WINDOWS ? (uint8_t)win :
                        NFABRIC_EVENT_NONE;
        out[n].seq = seq;
        out[n].code = code;
    }
    return n + 1;
}

/*
 * At attach (nfabric_ctrl_use_shared): what the state shows already is not
 * this head's to report.
 */
void nfabric_faults_prime(NFabricCtrl *s)
{
    NFabricShared *sh = s->sh;

    s->fault_primed = true;
    s->fault_inc_reported = 0;
    s->fault_lost_seen = __atomic_load_n(&sh->lost_mask, __ATOMIC_ACQUIRE);
    for (unsigned i = 0; i < NFABRIC_NUM_WINDOWS; i++) {
        s->fault_inc_seq[i] = __atomic_load_n(&sh->round[i].seq,
                                              __ATOMIC_RELAXED);
        if (__atomic_load_n(&sh->round[i].incomplete, __ATOMIC_RELAXED)) {
            s->fault_inc_reported |= 1u << i;
        }
    }
}

unsigned nfabric_ctrl_faults(NFabricCtrl *s, NFabricFault *out, unsigned max)
{
    NFabricShared *sh = s->sh;
    unsigned n = 0;
    uint32_t lost;

    if (s->failed) {
        if (!s->fault_failed_seen && n < max) {
            s->fault_failed_seen = true;
            n = nfabric_fault_add(out, n, max, NFABRIC_EVENT_STATE_FAILED,
                                  s->head, NFABRIC_EVENT_NONE, 0,
                                  NFABRIC_ERR_STATE);
        }
        return n;       /* nothing of an unusable state is shown */
    }
    if (s->fault_peer_win >= 0 && n < max) {
        n = nfabric_fault_add(out, n, max, NFABRIC_EVENT_PEER, s->head,
                              (unsigned)s->fault_peer_win, 0,
                              NFABRIC_ERR_PEER);
        s->fault_peer_win = -1;
    }
    if (!s->shared) {
        return n;
    }
    nfabric_shared_thread_enter();
    nfabric_shared_reap(sh, s->head);
    lost = __atomic_load_n(&sh->lost_mask, __ATOMIC_ACQUIRE);
    if (!s->fault_primed) {
        nfabric_faults_prime(s);
    }
    for (unsigned h = 0; h < NFABRIC_MAX_HEADS && n < max; h++) {
        if ((lost & ~s->fault_lost_seen) & (1u << h)) {
            n = nfabric_fault_add(out, n, max, NFABRIC_EVENT_HEAD_LOST, h,
                                  NFABRIC_EVENT_NONE, 0, 0);
            s->fault_lost_seen |= 1u << h;
        }
    }
    /* A head that attached again may die again: a new fault then. */
    s->fault_lost_seen &= lost;
    for (unsigned i = 0; i < NFABRIC_NUM_WINDOWS && n < max; i++) {
        const NFabricRound *r = &sh->round[i];
        uint32_t seq = __atomic_load_n(&r->seq, __ATOMIC_ACQUIRE);
        uint32_t contrib = __atomic_load_n(&r->contrib, __ATOMIC_RELAXED);
        uint32_t done = __atomic_load_n(&r->done, __ATOMIC_RELAXED);
        bool inc = __atomic_load_n(&r->incomplete, __ATOMIC_RELAXED);

        if (seq != s->fault_inc_seq[i]) {
            s->fault_inc_seq[i] = seq;
            s->fault_inc_reported &= ~(1u << i);
        }
        /*
         * A clear marks its round INCOMPLETE while it zeroes the counters:
         * only a contributor that did not complete makes it a fault.
         */
        if (!inc || !(contrib & ~done) || !nfabric_win_enabled(s, i) ||
            !nfabric_fm_window(s, i) ||
            (s->fault_inc_reported & (1u << i))) {
            continue;
        }
        s->fault_inc_reported |= 1u << i;
        n = nfabric_fault_add(out, n, max, NFABRIC_EVENT_INCOMPLETE,
                              (unsigned)__builtin_ctz(contrib & ~done), i,
                              seq, 0);
    }
    return n < max ? n : max;
}
