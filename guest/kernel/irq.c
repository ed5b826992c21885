// SPDX-License-Identifier: GPL-2.0
/*
 * NEURON-Fabric reference driver: the device's interrupt (register version
 * 1.8, docs/registers.md "Interrupts").  The vector is one cxl_pci
 * allocated with the function's others; the driver requests it as cxl_pmu
 * requests its own (pci_irq_vector() of the message number the registers
 * name), enables every window's ALL_DONE and INCOMPLETE events and the
 * head's STATE_FAILED, and counts what each message reports.  Waits
 * (ROUND_WAIT), poll() and eventfds are woken by it; NFABRIC_IOC_EVENTS
 * tells an open file what happened since it last asked (docs/driver.md).
 */
#include <linux/eventfd.h>
#include <linux/interrupt.h>
#include <linux/poll.h>

#include "core.h"

/* Every window's ALL_DONE and INCOMPLETE events. */
#define NF_IRQ_ALL_WINDOWS	0xffffffffu

static irqreturn_t nf_irq(int irq, void *data)
{
	struct nfabric_dev *nf = data;
	struct nfabric_file *nff;
	unsigned long flags;
	u32 st, hs;
	int i;

	st = nf_rd32(nf, NFABRIC_REG_IRQ_STATUS);
	hs = nf_rd32(nf, NFABRIC_REG_IRQ_HEAD_STATUS);
	if (!st && !hs)
		return IRQ_NONE;
	/* Acknowledged before counted: a later event raises again. */
	nf_wr32(nf, NFABRIC_REG_IRQ_STATUS, st);
	nf_wr32(nf, NFABRIC_REG_IRQ_HEAD_STATUS, hs);
	spin_lock_irqsave(&nf->ev_lock, flags);
	for (i = 0; i < NFABRIC_NUM_WINDOWS; i++) {
		if (st & NFABRIC_IRQ_DONE(i))
			nf->ev_done[i]++;
		if (st & NFABRIC_IRQ_INCOMPLETE(i))
			nf->ev_incomplete[i]++;
	}
	if (hs & NFABRIC_IRQ_HEAD_STATE_FAILED)
		nf->ev_failed++;
	WRITE_ONCE(nf->ev_count, nf->ev_count + 1);
	list_for_each_entry(nff, &nf->efd_files, efd_node)
		eventfd_signal(nff->efd);
	spin_unlock_irqrestore(&nf->ev_lock, flags);
	wake_up_interruptible_all(&nf->wq);
	return IRQ_HANDLED;
}

/*
 * At attach, with the registers mapped: the interrupt, if the device has
 * one and cxl_pci allocated its vector.  Without it waits poll, as before
 * register version 1.8.
 */
void nf_irq_setup(struct nfabric_dev *nf)
{
	struct pci_dev *pdev = nf->pdev;
	u32 num;
	int irq, rc;

	nf->irq = -1;
	spin_lock_init(&nf->ev_lock);
	init_waitqueue_head(&nf->wq);
	INIT_LIST_HEAD(&nf->efd_files);
	if ((nf->version & 0xffff) < 8)
		return;
	num = nf_rd32(nf, NFABRIC_REG_IRQ_MSGNUM);
	if (num & NFABRIC_IRQ_MSGNUM_NONE)
		return;
	irq = pci_irq_vector(pdev, num & NFABRIC_IRQ_MSGNUM_MASK);
	if (irq < 0) {
		pci_info(pdev, "nfabric: message %u has no vector (%pe): waits poll\n",
			 num & NFABRIC_IRQ_MSGNUM_MASK, ERR_PTR(irq));
		return;
	}
	rc = request_irq(irq, nf_irq, 0, "nfabric", nf);
	if (rc) {
		pci_info(pdev, "nfabric: interrupt %d not had (%pe): waits poll\n",
			 irq, ERR_PTR(rc));
		return;
	}
	nf->irq = irq;
	nf_wr32(nf, NFABRIC_REG_IRQ_STATUS, NF_IRQ_ALL_WINDOWS);
	nf_wr32(nf, NFABRIC_REG_IRQ_ENABLE, NF_IRQ_ALL_WINDOWS);
	nf_wr32(nf, NFABRIC_REG_IRQ_HEAD_ENABLE, NFABRIC_IRQ_HEAD_STATE_FAILED);
}

/* At detach, before the registers go: no message, no handler, from now. */
void nf_irq_teardown(struct nfabric_dev *nf)
{
	if (nf->irq < 0)
		return;
	nf_wr32(nf, NFABRIC_REG_IRQ_ENABLE, 0);
	nf_wr32(nf, NFABRIC_REG_IRQ_HEAD_ENABLE, 0);
	free_irq(nf->irq, nf);
	nf->irq = -1;
}

/* Events counted so far; a waiter reads it before it looks at the device. */
u64 nf_irq_events(struct nfabric_dev *nf)
{
	return READ_ONCE(nf->ev_count);
}

/*
 * Sleep until another event is counted (seen: what nf_irq_events() said
 * before the caller looked), a signal, detach, or timeout jiffies.
 * Without the interrupt: 1 ms.  0, or -EINTR.
 */
int nf_irq_wait(struct nfabric_dev *nf, u64 seen, unsigned long timeout)
{
	long rc;

	if (nf->irq < 0) {
		msleep_interruptible(1);
		return signal_pending(current) ? -EINTR : 0;
	}
	rc = wait_event_interruptible_timeout(nf->wq,
					      READ_ONCE(nf->ev_count) != seen ||
					      !READ_ONCE(nf->regs), timeout);
	return rc < 0 ? -EINTR : 0;
}

/* A new open file sees only what happens after its open. */
void nf_irq_file_open(struct nfabric_file *nff)
{
	struct nfabric_dev *nf = nff->nf;
	int i;

	spin_lock_irq(&nf->ev_lock);
	for (i = 0; i < NFABRIC_NUM_WINDOWS; i++) {
		nff->done_seen[i] = nf->ev_done[i];
		nff->incomplete_seen[i] = nf->ev_incomplete[i];
	}
	nff->failed_seen = nf->ev_failed;
	nff->ev_seen = nf->ev_count;
	spin_unlock_irq(&nf->ev_lock);
}

void nf_irq_file_release(struct nfabric_file *nff)
{
	struct nfabric_dev *nf = nff->nf;
	struct eventfd_ctx *efd;

	spin_lock_irq(&nf->ev_lock);
	efd = nff->efd;
	if (efd)
		list_del(&nff->efd_node);
	nff->efd = NULL;
	spin_unlock_irq(&nf->ev_lock);
	if (efd)
		eventfd_ctx_put(efd);
}

__poll_t nf_irq_poll(struct file *filp, poll_table *pt)
{
	struct nfabric_file *nff = filp->private_data;
	struct nfabric_dev *nf = nff->nf;

	poll_wait(filp, &nf->wq, pt);
	if (!READ_ONCE(nf->regs))
		return EPOLLHUP | EPOLLERR;
	return READ_ONCE(nf->ev_count) != READ_ONCE(nff->ev_seen) ?
	       EPOLLIN | EPOLLRDNORM : 0;
}

/* NFABRIC_IOC_EVENTS: what happened since this file last asked. */
int nf_ioc_events(struct nfabric_file *nff, void *arg, bool *out)
{
	struct nfabric_ioc_events *e = arg;
	struct nfabric_dev *nf = nff->nf;
	int i;

	if (!READ_ONCE(nf->regs))
		return -ENODEV;
	spin_lock_irq(&nf->ev_lock);
	for (i = 0; i < NFABRIC_NUM_WINDOWS; i++) {
		if (nf->ev_done[i] != nff->done_seen[i])
			e->done |= BIT(i);
		if (nf->ev_incomplete[i] != nff->incomplete_seen[i])
			e->incomplete |= BIT(i);
		nff->done_seen[i] = nf->ev_done[i];
		nff->incomplete_seen[i] = nf->ev_incomplete[i];
	}
	if (nf->ev_failed != nff->failed_seen)
		e->head |= NFABRIC_IRQ_HEAD_STATE_FAILED;
	nff->failed_seen = nf->ev_failed;
	WRITE_ONCE(nff->ev_seen, nf->ev_count);
	spin_unlock_irq(&nf->ev_lock);
	e->irq = nf->irq >= 0;
	*out = true;
	return 0;
}

/* NFABRIC_IOC_EVENTFD: signal fd at every message (-1: no longer). */
int nf_ioc_eventfd(struct nfabric_file *nff, void *arg, bool *out)
{
	struct nfabric_ioc_eventfd *e = arg;
	struct nfabric_dev *nf = nff->nf;
	struct eventfd_ctx *ctx = NULL, *old;

	if (!READ_ONCE(nf->regs))
		return -ENODEV;
	if (e->fd >= 0) {
		ctx = eventfd_ctx_fdget(e->fd);
		if (IS_ERR(ctx))
			return PTR_ERR(ctx);
	}
	spin_lock_irq(&nf->ev_lock);
	old = nff->efd;
	if (old && !ctx)
		list_del(&nff->efd_node);
	else if (!old && ctx)
		list_add(&nff->efd_node, &nf->efd_files);
	nff->efd = ctx;
	spin_unlock_irq(&nf->ev_lock);
	if (old)
		eventfd_ctx_put(old);
	return 0;
}
