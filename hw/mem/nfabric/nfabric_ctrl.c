/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * NEURON-Fabric controller model (see include/hw/mem/nfabric_ctrl.h and
 * docs/registers.md): the top of the controller, a head's life (init,
 * reset, use of a shared state, post-load with the rebuild of the derived
 * window state).  Pure C11.
 *
 * The controller's other concerns are files of their own, layered as
 * nfabric_ctrl_int.h lists them, which declares what they share.  This
 * file may call every one of them; of them it calls the path-select
 * table's validation (nfabric_table.c), the datapath's record and the
 * registers' statistics clear (a reset), and else the shared state and
 * the timing shim.
 */
#include <string.h>

#include "hw/mem/nfabric_ctrl.h"
#include "nfabric_ctrl_int.h"

/* ---- the head: reset, init, a shared state, migration --------------- */

void nfabric_ctrl_reset(NFabricCtrl *s)
{
    if (s->shared) {
        nfabric_shared_thread_enter();
    }
    s->view.valid = false;
    if (!s->shared) {
        /* The device is this head's alone: windows and rounds too. */
        uint64_t mem_size = s->sh->mem_size;

        nfabric_shared_init_local(s->sh, mem_size);
    }
    nfabric_head_clear_stats(s);
    s->head_select = s->head;
    memset(s->stage_off, 0, sizeof(s->stage_off));
    s->irq_enable = s->irq_status = 0;
    s->irq_head_enable = s->irq_head_status = 0;
    memset(s->irq_seq, 0, sizeof(s->irq_seq));
    memset(s->irq_seen, 0, sizeof(s->irq_seen));
    s->irq_failed_seen = false;
    s->fault_primed = false;
    s->fault_inc_reported = 0;
    s->fault_failed_seen = false;
    s->fault_peer_win = -1;
    nfabric_cpmu_reset(s);
    s->last_error = NFABRIC_ERR_NONE;
    s->error_count = 0;
    nfabric_timing_init(&s->timing, &s->timing.p);
    nfabric_record_clear(s);
}

void nfabric_ctrl_set_staging(NFabricCtrl *s, uint8_t *staging)
{
    s->staging = staging;
}

void nfabric_ctrl_init(NFabricCtrl *s, uint8_t *ram, uint64_t ram_size,
                       const NFabricTimingParams *tp,
                       const NFabricCtrlOps *ops, void *opaque)
{
    memset(s, 0, sizeof(*s));
    s->ram = ram;
    s->ram_size = ram_size;
    s->ops = ops;
    s->opaque = opaque;
    s->timing.p = *tp;
    nfabric_shared_init_local(&s->local, ram_size);
    s->sh = &s->local;
    s->head = 0;
    s->heads = 1;
    s->shared = false;
    s->stats = s->sh->head[0].stats;
    s->map_win = -1;
    s->map_abort = -1;
    s->irq_msgnum = NFABRIC_IRQ_MSGNUM_NONE;
    nfabric_ctrl_reset(s);
}

void nfabric_ctrl_use_shared(NFabricCtrl *s, NFabricShared *sh, unsigned head)
{
    s->sh = sh;
    s->shared = sh != &s->local;
    /* As attached (checked then; nfabric_shared_check keeps it so). */
    s->heads = s->shared ? sh->heads : 1;
    if (s->heads < 1 || s->heads > NFABRIC_MAX_HEADS) {
        s->heads = 1;
    }
    s->head = head < s->heads ? head : 0;
    s->head_select = s->head;
    s->stats = sh->head[s->head].stats;
    s->lock_token = s->shared ? nfabric_shared_token(sh) : 0;
    s->view.valid = false;
    s->failed = false;
    s->failure[0] = 0;
    s->faults_seen = nfabric_shared_faults();
    s->map_join = false;
    s->map_win = -1;
    s->map_abort = -1;
    nfabric_faults_prime(s);
}

/*
 * Rebuild the derived state from win[] (after migration): every enabled
 * window must still validate, else the incoming state is refused.
 */
static int nfabric_rebuild(NFabricCtrl *s, uint32_t enabled)
{
    s->sh->enabled_mask = 0;
    for (unsigned i = 0; i < NFABRIC_NUM_WINDOWS; i++) {
        NFabricAggCfg cfg;

        if (!(enabled & (1u << i))) {
            continue;
        }
        if (nfabric_win_validate(s, i, s->sh->win[i].ctrl, &cfg) !=
            NFABRIC_ERR_NONE) {
            return -1;
        }
        s->sh->cfg[i] = cfg;
        s->sh->enabled_mask |= 1u << i;
    }
    return 0;
}

int nfabric_ctrl_post_load(NFabricCtrl *s)
{
    uint32_t enabled = 0;

    /*
     * The occupancy ring is not migrated: the device's stream is dependent
     * (each access arrives when the previous completed), so nothing is in
     * flight between accesses.
     */
    s->timing.occ_head = 0;
    s->timing.occ_count = 0;
    s->timing.occ_started = 0;

    s->view.valid = false;
    if (s->sh != &s->local || s->head_select >= NFABRIC_MAX_HEADS ||
        s->head_select >= s->sh->heads) {
        return -1;          /* shared devices do not migrate */
    }
    for (unsigned i = 0; i < NFABRIC_NUM_WINDOWS; i++) {
        if (s->sh->win[i].ctrl & ~NFABRIC_WCTRL_VALID) {
            return -1;      /* a guest can never store reserved bits */
        }
        if (s->sh->win[i].ctrl & NFABRIC_WCTRL_ENABLE) {
            enabled |= 1u << i;
        }
    }
    return nfabric_rebuild(s, enabled);
}
