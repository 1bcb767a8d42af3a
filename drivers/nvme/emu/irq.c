/* SPDX-License-Identifier: MIT */
/*
 * Completion interrupts: a CQ created with IEN signals its vector (IV)
 * once entries were posted to it, through the fabric's interrupts
 * (sio_devreg_irq_raise(): a message to each borrower that took the
 * vector, as an MSI-X write). One poll of the controller raises a CQ's
 * vector at most once, whatever it posted: the host reaps all it finds;
 * and the vectors due in one poll go out together, so that the first host
 * woken cannot take the controller's CPU before the others are told.
 *
 * An entry is signalled EMU_IRQ_HOLD_NS after it was posted at the
 * earliest, and not at all if by then the host has reaped it (its head
 * doorbell says so): a host that polls, or spins before it sleeps, would
 * find nothing, and on the simulated fabric each interrupt is a system call
 * of the controller's, the device's time. Entries posted since are held in
 * turn: a host that reaps as it goes always has one entry or two not yet
 * reaped, and signalling those sent a datagram nobody read for every fifth
 * I/O of a spinning client at queue depth 1. A sleeping host waits a couple
 * of microseconds more, against the ten or twenty of its wake-up. (An
 * emulated-controller choice; hardware writes the MSI-X message at once.)
 *
 * Interrupt Coalescing (Set Features 0x08, NVMe 1.4 §5.21.1.8): with an
 * Aggregation Time, a vector is held back until Aggregation Threshold + 1
 * entries are waiting or the time since the first has passed; with no
 * time, nothing is held back. Interrupt Vector Configuration's Coalescing
 * Disable exempts a vector (the admin queue's always is).
 */
#include <smartio/irq.h>
#include <smartio/model.h>
#include "emu_priv.h"

#define EMU_IRQ_HOLD_NS	2000u

static bool coalesce_off(const struct sio_nvme_emu *emu, uint32_t iv)
{
	return emu->ivc_cd[iv / 64] & (1ull << (iv % 64));
}

/* Is it time for @cq's interrupt? @now: read once per flush. */
static bool due(struct sio_nvme_emu *emu, const struct emu_cq *cq, uint64_t now)
{
	uint32_t thr = (emu->irq_coalesce & 0xff) + 1;	/* 0's based */
	uint64_t time = (uint64_t)((emu->irq_coalesce >> 8) & 0xff) * 100000;	/* 100 us */

	if (!time || coalesce_off(emu, cq->iv) || cq->irq_pending >= thr)
		return true;
	return now - cq->irq_since >= time;
}

/* Has the host reaped the first entry not yet signalled? It polls, then. */
static bool first_reaped(const struct emu_cq *cq)
{
	uint32_t since = cq->tail >= cq->irq_first ? cq->tail - cq->irq_first :
			 cq->size - cq->irq_first + cq->tail;

	return cq_used(cq) < since;
}

/* Signal the CQs whose entries are due; returns those held back (work). */
int emu_irq_flush(struct sio_nvme_emu *emu)
{
	uint32_t vecs = 0;
	uint64_t now = 0;
	int held = 0;

	for (uint32_t i = 0; i < emu->nactive; i++) {
		struct emu_cq *cq = emu->active[i]->cq;

		if (!cq->irq_pending)
			continue;
		if (!now)
			now = sio__now_ns();
		if (now - cq->irq_since < EMU_IRQ_HOLD_NS) {
			held++;		/* a polling host may reap it first */
			continue;
		}
		if (!cq_used(cq)) {
			cq->irq_pending = 0;	/* reaped already: nothing to signal */
			continue;
		}
		if (first_reaped(cq)) {		/* hold what came since, from now */
			cq->irq_since = now;
			cq->irq_first = cq->head;
			cq->irq_pending = cq_used(cq);
			held++;
			continue;
		}
		if (!due(emu, cq, now)) {
			held++;
			continue;
		}
		cq->irq_pending = 0;
		if (cq->iv < SIO_IRQ_MAX_VECS)	/* what a fabric delivers */
			vecs |= 1u << cq->iv;
	}
	emu->irqs += (uint64_t)__builtin_popcount(vecs);
	if (vecs && emu->reg)	/* together: see sio_devreg_irq_raise_mask() */
		sio_devreg_irq_raise_mask(emu->reg, vecs);
	return held;
}

uint64_t sio_nvme_emu_irqs(const struct sio_nvme_emu *emu)
{
	return emu->irqs;
}
