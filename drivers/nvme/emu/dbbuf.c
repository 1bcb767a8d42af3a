/* SPDX-License-Identifier: MIT */
/*
 * Doorbell Buffer Config (NVMe 1.4, 5.8): the host keeps each I/O queue's
 * SQ tail and CQ head in a shadow doorbell in its own memory and writes the
 * MMIO doorbell only when the new value passes the EventIdx the controller
 * publishes beside it. Both buffers are laid out as the doorbells: queue y's
 * SQ entry at 2y * the doorbell stride, its CQ entry after it. The admin queue
 * keeps its MMIO doorbells (as Linux's driver uses it). A reset forgets both.
 * A host that writes only MMIO doorbells for some queue (a GPU kernel's)
 * still works: while a queue's shadow slots stay 0, BAR0 holds its values.
 *
 * The shadow buffer is host memory: each look is a DMA read (the fabric's
 * latency model applies), so the controller looks only when told to (the
 * MMIO doorbell moved) or while it expects more: once it has fetched all it
 * found, it publishes EventIdx = the tail it acted on and looks once more
 * (a host that stored past it in between either is seen now or sees the new
 * EventIdx and rings). CQ heads matter only for room: EventIdx asks for a
 * ring every half queue, and the shadow is read when room runs low.
 */
#include <errno.h>
#include "emu_priv.h"

static uint64_t slot(const struct sio_nvme_emu *emu, uint64_t base, uint32_t qid, bool cq)
{
	return base + db_off(emu, qid, cq) - SIO_NVME_REG_DBS;
}

static void publish(struct sio_nvme_emu *emu, uint32_t qid, bool cq, uint32_t v)
{
	/* posted; a lost write (dead link) only costs the host a ring */
	emu->dma.write(emu->dma.ctx, slot(emu, emu->eis, qid, cq), &v, 4);
}

/* Read the shadow value into *@v: false when it cannot be read (a DMA fault). */
static bool shadow(struct sio_nvme_emu *emu, uint32_t qid, bool cq, uint32_t *v)
{
	return emu->dma.read(emu->dma.ctx, slot(emu, emu->dbs, qid, cq), v, 4) == 0;
}

/**
 * emu_dbbuf_config() - Doorbell Buffer Config (admin 7Ch)
 * @emu: controller
 * @cmd: PRP1 the shadow doorbells, PRP2 the EventIdx buffer, each memory
 *	 page aligned
 * Return: internal status.
 */
uint16_t emu_dbbuf_config(struct sio_nvme_emu *emu, const struct sio_nvme_cmd *cmd)
{
	uint64_t mask = emu->page_size - 1, len = 2ull * emu->nq * emu->db_stride;
	void *p;

	if (!cmd->prp1 || !cmd->prp2 || (cmd->prp1 & mask) || (cmd->prp2 & mask))
		return EMU_ST_FIELD;
	/* both must be memory mapped for the controller, all of it */
	if (emu->dma.ptr(emu->dma.ctx, cmd->prp1, len, false, &p) == -EFAULT ||
	    emu->dma.ptr(emu->dma.ctx, cmd->prp2, len, true, &p) == -EFAULT)
		return EMU_ST_XFER;
	emu->dbs = cmd->prp1;
	emu->eis = cmd->prp2;
	/* queues that exist carry on from their MMIO doorbells' values */
	for (uint32_t q = 1; q < emu->nq; q++) {
		if (emu->sq[q].valid) {
			publish(emu, q, false, emu->sq[q].tail);
			emu->sq[q].db_mmio = rd32_db(emu, q, false);
			emu->sq[q].db_look = true;
			emu->sq[q].db_used = false;
		}
		if (emu->cq[q].valid) {
			emu->cq[q].db_used = false;
			emu_dbbuf_queue(emu, q, true);
		}
	}
	return EMU_OK;
}

/** emu_dbbuf_queue() - a queue was created: its EventIdx starts at 0 (SQ) or half way (CQ) */
void emu_dbbuf_queue(struct sio_nvme_emu *emu, uint32_t qid, bool cq)
{
	if (!emu->dbs)
		return;
	if (cq) {
		struct emu_cq *c = &emu->cq[qid];

		c->db_mmio = rd32_db(emu, qid, true);
		publish(emu, qid, true, (c->head + c->size / 2) % c->size);
	} else {
		emu->sq[qid].db_mmio = rd32_db(emu, qid, false);
		emu->sq[qid].db_look = true;
		publish(emu, qid, false, emu->sq[qid].tail);
	}
}

/*
 * A queue's doorbell value. Once its shadow slot has left 0 the host uses
 * shadow doorbells for it, and the MMIO doorbell only says "look"; while
 * the slot stays 0 the host writes BAR0 only (a GPU kernel's queue), and
 * BAR0 holds the value. The controller never writes the shadow buffer, so
 * it cannot undo a host's store.
 */
static uint32_t look(struct sio_nvme_emu *emu, uint32_t qid, bool cq, bool *used,
		     uint32_t mmio, uint32_t cur, bool *unread)
{
	uint32_t s;

	/* The buffer cannot be read (its mapping lapsed: an owner that crashed,
	 * until a successor maps it again): BAR0 is all there is, and a queue
	 * that rings through the shadow is looked at again until it reads. */
	if (!shadow(emu, qid, cq, &s)) {
		*unread = *used;
		return *used ? cur : mmio;
	}
	if (*used || s != 0) {
		*used = true;
		return s;
	}
	return mmio;
}

/*
 * Was the MMIO doorbell written since the last look? BAR0 is memory the
 * controller polls, so a write of the value already there is invisible;
 * with shadow doorbells the host rings rarely, and may ring with the value
 * of its last ring a whole queue later. Once a queue uses its shadow slot,
 * the controller swaps a value no host writes into the register as it
 * reads it, so every ring changes it. Before that, BAR0 holds the value.
 */
static bool rang(struct sio_nvme_emu *emu, uint32_t qid, bool cq, bool used, uint32_t *seen)
{
	volatile uint32_t *r = (volatile uint32_t *)(emu->bar0 + db_off(emu, qid, cq));
	uint32_t m;

	if (used) {
		if (__atomic_load_n(r, __ATOMIC_RELAXED) == EMU_DB_IDLE)
			return false;
		*seen = __atomic_exchange_n(r, EMU_DB_IDLE, __ATOMIC_ACQ_REL);
		return true;	/* whatever value: a ring */
	}
	m = __atomic_load_n(r, __ATOMIC_RELAXED);
	if (m == *seen)
		return false;
	*seen = m;
	return true;
}

/**
 * emu_dbbuf_doorbells() - an I/O queue's SQ tail and CQ head
 * @emu: controller with a shadow buffer
 * @sq: the SQ (its CQ too)
 * @t, @h: in: the values acted on; out: the values to act on
 *
 * What each I/O costs here (one look is one DMA read of host memory):
 * an SQ ring is one look, before the command is fetched; once everything
 * taken is fetched, EventIdx is published and the shadow looked at once
 * more, after the command went on its way. A CQ ring costs nothing: CQ
 * heads only make room, so the shadow is read when room runs below half
 * the queue, and a queue that keeps its head in BAR0 (no shadow) has the
 * value rung taken as it is.
 */
void emu_dbbuf_doorbells(struct sio_nvme_emu *emu, struct emu_sq *sq, uint32_t *t, uint32_t *h)
{
	struct emu_cq *cq = sq->cq;
	uint32_t old = *t;
	bool unread = false;

	if (rang(emu, sq->qid, false, sq->db_used, &sq->db_mmio)) {
		/*
		 * The tail is in the shadow: a value rung may be older than what
		 * a look already took (the host stores the shadow first), so it
		 * only says "look". A queue that keeps it in BAR0 has it there.
		 */
		*t = look(emu, sq->qid, false, &sq->db_used, sq->db_mmio, old, &unread);
		sq->db_look = true;
	} else if (sq->db_look && sq->head == old) {
		/*
		 * All taken so far is fetched: from here the host rings. Say so in
		 * EventIdx, then look once more: a host that stored past it before
		 * it saw the new EventIdx did not ring.
		 */
		publish(emu, sq->qid, false, old);
		atomic_thread_fence(memory_order_seq_cst);
		*t = look(emu, sq->qid, false, &sq->db_used, sq->db_mmio, old, &unread);
		sq->db_look = *t != old || unread;
	}
	if (rang(emu, cq->qid, true, cq->db_used, &cq->db_mmio) && !cq->db_used) {
		*h = cq->db_mmio;	/* kept in BAR0, as rung */
	} else if (cq_room(cq) < cq->size / 2) {
		*h = look(emu, cq->qid, true, &cq->db_used, cq->db_mmio, *h, &unread);
		if (*h < cq->size)
			publish(emu, cq->qid, true, (*h + cq->size / 2) % cq->size);
	}
}
