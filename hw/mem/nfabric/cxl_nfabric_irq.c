/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * NEURON-Fabric CXL Type-3 memory device: its interrupt (register version
 * 1.8, docs/registers.md "Interrupts").  QEMU code.
 *
 * The device adds two MSI-X vectors after cxl-type3's own (the class's
 * extra_msix_vectors, qemu-patches/0011), the first of them this one, and
 * tells the controller its number (IRQ_MSGNUM).  The controller's scan (nfabric_irq.c) says when a
 * message is due; this file sends it (msix_notify, under the BQL) after
 * each register write of this head, and, on a head of a shared device,
 * whenever another head moved the shared state's event_gen: a thread
 * waits on it (a futex, at most 100 ms at a time, so that a head that died
 * without a word is found within that) and schedules a bottom half that
 * scans and sends.  The same bottom half logs the faults it finds as CXL
 * event records (cxl_nfabric_events.c).
 */

#include "qemu/osdep.h"
#include "hw/mem/cxl_nfabric.h"
#include "hw/mem/nfabric_mappings.h"
#include "hw/pci/msix.h"
#include "qemu/main-loop.h"
#include "qemu/thread.h"
#include "trace.h"

/* How long the event thread waits before it looks anyway. */
#define NFABRIC_IRQ_WAIT_MS     100

/* The controller says a message is due: send it (under the BQL). */
void nfabric_irq_update(CXLNFabricState *s)
{
    PCIDevice *pdev = PCI_DEVICE(s);
    uint32_t num = s->ctrl.irq_msgnum;

    if (!nfabric_ctrl_irq_scan(&s->ctrl)) {
        return;
    }
    trace_nfabric_irq(num, s->ctrl.irq_status, s->ctrl.irq_head_status);
    if (msix_enabled(pdev)) {
        msix_notify(pdev, num & NFABRIC_IRQ_MSGNUM_MASK);
    }
}

static void nfabric_irq_bh(void *opaque)
{
    CXLNFabricState *s = opaque;

    /*
     * A register write of this head waits inside the controller with the
     * BQL dropped (an enable waiting for the other heads' maps): the
     * controller is not to be entered beside it.  That write looks when
     * it ends, and the event thread schedules this again within 100 ms.
     */
    if (s->map_waiting) {
        return;
    }
    nfabric_irq_update(s);
    nfabric_events_update(s);       /* faults as CXL event records */
}

/* A head of a shared device: wait for the others' events. */
static void *nfabric_irq_thread(void *opaque)
{
    CXLNFabricState *s = opaque;

    /*
     * QEMU's threads block SIGBUS: a state file truncated under the
     * mapping would kill the process at this thread's next look.
     */
    nfabric_shared_thread_enter();
    while (!qatomic_read(&s->irq_stop)) {
        uint32_t seen = nfabric_shared_event_gen(s->shared);

        /*
         * Every time: dead heads are found by looking, and become CXL
         * event records whether or not the interrupt is enabled.
         */
        nfabric_shared_event_wait(s->shared, seen, NFABRIC_IRQ_WAIT_MS);
        qemu_bh_schedule(s->irq_bh);
    }
    return NULL;
}

/* After the parent's realize: the vector, and on a shared head the thread. */
void nfabric_irq_start(CXLNFabricState *s)
{
    unsigned nvec = cxl_type3_msix_vectors(&s->parent_obj);

    nfabric_ctrl_set_irq(&s->ctrl, nvec - 2);   /* the last: the CPMU's */
    s->irq_bh = qemu_bh_new(nfabric_irq_bh, s);
    if (s->shared) {
        s->irq_stop = false;
        qemu_thread_create(&s->irq_thread, "nfabric-irq", nfabric_irq_thread,
                           s, QEMU_THREAD_JOINABLE);
        s->irq_threaded = true;
    }
}

void nfabric_irq_stop(CXLNFabricState *s)
{
    if (s->irq_threaded) {
        qatomic_set(&s->irq_stop, true);
        qemu_thread_join(&s->irq_thread);   /* within its 100 ms wait */
        s->irq_threaded = false;
    }
    if (s->irq_bh) {
        qemu_bh_delete(s->irq_bh);
        s->irq_bh = NULL;
    }
}

/* From any thread (the controller's hooks): look at it soon. */
void nfabric_irq_kick(CXLNFabricState *s)
{
    if (s->irq_bh) {
        qemu_bh_schedule(s->irq_bh);
    }
}
