/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * NEURON-Fabric CXL Type-3 memory device: faults as CXL event records
 * (register version 1.8, docs/reliability.md "Faults as CXL events").
 * QEMU code.
 *
 * Each fault the controller reports (nfabric_ctrl_faults: a head lost, a
 * round INCOMPLETE with a contribution missing, this head's state failed,
 * an enable given up with PEER) becomes a vendor-specific record, with the
 * UUID and data layout of nfabric_regs.h, in cxl-type3's event log of its
 * severity (hw/cxl/cxl-events.c), and the log's interrupt is raised as
 * for any record: Linux's cxl_pci reads the logs on it (Get Event
 * Records) and traces each unknown record as cxl:cxl_generic_event.
 * Called where the interrupt is looked at (cxl_nfabric_irq.c).
 */

#include "qemu/osdep.h"
#include "hw/mem/cxl_nfabric.h"
#include "hw/cxl/cxl_events.h"
#include "trace.h"

static const uint8_t nfabric_event_uuid[16] = NFABRIC_EVENT_UUID;

static const struct {
    CXLEventLogType log;
    uint8_t severity;           /* the record's flags[0] bits 1:0 */
    const char *what;
} nfabric_event_kinds[] = {
    [NFABRIC_EVENT_HEAD_LOST] = { CXL_EVENT_TYPE_WARN, 1, "head lost" },
    [NFABRIC_EVENT_INCOMPLETE] = { CXL_EVENT_TYPE_WARN, 1,
                                   "round incomplete" },
    [NFABRIC_EVENT_STATE_FAILED] = { CXL_EVENT_TYPE_FAIL, 2,
                                     "shared state unusable" },
    [NFABRIC_EVENT_PEER] = { CXL_EVENT_TYPE_INFO, 0,
                             "enable given up (peer)" },
};

static void nfabric_event_log(CXLNFabricState *s, const NFabricFault *f,
                              bool *irq)
{
    CXLType3Dev *ct3d = &s->parent_obj;
    CXLEventRecordRaw rec;
    uint8_t *d = rec.data;

    if (f->kind >= ARRAY_SIZE(nfabric_event_kinds) ||
        !nfabric_event_kinds[f->kind].what) {
        return;
    }
    memset(&rec, 0, sizeof(rec));
    memcpy(&rec.hdr.id, nfabric_event_uuid, sizeof(nfabric_event_uuid));
    rec.hdr.length = sizeof(rec);
    rec.hdr.flags[0] = nfabric_event_kinds[f->kind].severity;
    d[NFABRIC_EVENT_KIND] = f->kind;
    d[NFABRIC_EVENT_REPORTER] = s->ctrl.head;
    d[NFABRIC_EVENT_HEAD] = f->head;
    d[NFABRIC_EVENT_WINDOW] = f->window;
    stl_le_p(d + NFABRIC_EVENT_ROUND, f->seq);
    stl_le_p(d + NFABRIC_EVENT_CODE, f->code);
    memcpy(d + NFABRIC_EVENT_MAGIC, "NFAB", 4);
    snprintf((char *)d + NFABRIC_EVENT_TEXT,
             CXL_EVENT_RECORD_DATA_LENGTH - NFABRIC_EVENT_TEXT,
             "%s: head %u window %u round %u",
             nfabric_event_kinds[f->kind].what, f->head, f->window, f->seq);
    trace_nfabric_event(s->ctrl.head, f->kind, f->head, f->window, f->seq);
    if (cxl_event_insert(&ct3d->cxl_dstate, nfabric_event_kinds[f->kind].log,
                         &rec)) {
        *irq = true;
    }
}

void nfabric_events_update(CXLNFabricState *s)
{
    NFabricFault f[8];
    unsigned n;
    bool irq = false;

    do {
        n = nfabric_ctrl_faults(&s->ctrl, f, ARRAY_SIZE(f));
        for (unsigned k = 0; k < n; k++) {
            nfabric_event_log(s, &f[k], &irq);
        }
    } while (n == ARRAY_SIZE(f));
    if (irq) {
        cxl_event_irq_assert(&s->parent_obj);
    }
}
