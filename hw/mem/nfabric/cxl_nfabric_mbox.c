/*
 * NEURON-Fabric CXL device: mailbox commands scoped to a head's memory.
 *
 * A head of a shared device (shared-state=FILE, docs/multihost.md) shares
 * its device memory with the other heads' hosts, and no head alone owns
 * any of it.  cxl-type3's mailbox commands that change memory (Sanitize,
 * Secure Erase, Media Operations, poison injection and clearing, which
 * writes the cache line it clears) would act on memory the other hosts
 * use, so on such a head they are refused, with the return code the CXL
 * specification gives for a command the device may not run now
 * (docs/multihost.md, "Device commands").  They stay in the Command
 * Effects Log: the command exists, this head may not use it.
 *
 * The mailbox's command table is rebuilt on every reset of cxl-type3, so
 * the device scopes it after realize and after each reset.
 *
 * Copyright (c) 2026 NEURON-Fabric authors
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */

#include "qemu/osdep.h"
#include "qemu/log.h"
#include "hw/cxl/cxl.h"
#include "hw/mem/cxl_nfabric.h"
#include "trace.h"

/* Command sets and opcodes (CXL r3.1, 8.2.9.9). */
#define NFABRIC_MBOX_MEDIA_AND_POISON   0x43
#define NFABRIC_MBOX_INJECT_POISON      0x01
#define NFABRIC_MBOX_CLEAR_POISON       0x02
#define NFABRIC_MBOX_SANITIZE           0x44    /* every command of the set */

/* The commands refused on a shared head, and what each gets. */
static const struct {
    uint8_t set;
    int cmd;            /* -1: every command of the set */
    CXLRetCode rc;
} nfabric_mbox_scoped[] = {
    /* Sanitize, Secure Erase, Media Operations: the whole media. */
    { NFABRIC_MBOX_SANITIZE, -1, CXL_MBOX_INVALID_SECURITY_STATE },
    /* An address no head alone owns. */
    { NFABRIC_MBOX_MEDIA_AND_POISON, NFABRIC_MBOX_INJECT_POISON,
      CXL_MBOX_INVALID_PA },
    { NFABRIC_MBOX_MEDIA_AND_POISON, NFABRIC_MBOX_CLEAR_POISON,
      CXL_MBOX_INVALID_PA },
};

static CXLRetCode nfabric_mbox_refuse(const struct cxl_cmd *cmd,
                                      uint8_t *payload_in, size_t len_in,
                                      uint8_t *payload_out, size_t *len_out,
                                      CXLCCI *cci)
{
    CXLNFabricState *s = CXL_NFABRIC(cci->d);
    ptrdiff_t op = cmd - &cci->cxl_cmd_set[0][0];   /* set << 8 | command */
    CXLRetCode rc = CXL_MBOX_INVALID_SECURITY_STATE;

    for (size_t k = 0; k < ARRAY_SIZE(nfabric_mbox_scoped); k++) {
        if (op >> 8 == nfabric_mbox_scoped[k].set &&
            (nfabric_mbox_scoped[k].cmd < 0 ||
             (op & 0xff) == nfabric_mbox_scoped[k].cmd)) {
            rc = nfabric_mbox_scoped[k].rc;
            break;
        }
    }
    qemu_log_mask(LOG_GUEST_ERROR, "%s: head %" PRIu32 ": mailbox command "
                  "%s (0x%04x) refused (return code 0x%x): the device's "
                  "memory is shared with other hosts and no head alone owns "
                  "it\n", TYPE_CXL_NFABRIC, s->head, cmd->name, (unsigned)op,
                  rc);
    trace_nfabric_mbox_refused(s->head, (unsigned)op, cmd->name, rc);
    *len_out = 0;
    return rc;
}

/* Scope one CCI's command table (its handlers, not its CEL). */
static void nfabric_mbox_scope_cci(CXLCCI *cci)
{
    for (size_t k = 0; k < ARRAY_SIZE(nfabric_mbox_scoped); k++) {
        uint8_t set = nfabric_mbox_scoped[k].set;
        int cmd = nfabric_mbox_scoped[k].cmd;
        int lo = cmd < 0 ? 0 : cmd;
        int hi = cmd < 0 ? 255 : cmd;

        for (int c = lo; c <= hi; c++) {
            if (cci->cxl_cmd_set[set][c].handler) {
                cci->cxl_cmd_set[set][c].handler = nfabric_mbox_refuse;
            }
        }
    }
}

void nfabric_mbox_scope(CXLNFabricState *s)
{
    CXLType3Dev *ct3d = CXL_TYPE3(s);

    if (!s->shared_path) {
        return;     /* a device of one host: every command as cxl-type3 */
    }
    /*
     * The host's own mailbox.  A CCI a fabric manager reaches (MCTP) is
     * the fabric manager's, which may sanitize what it assigns.
     */
    nfabric_mbox_scope_cci(&ct3d->cci);
}
