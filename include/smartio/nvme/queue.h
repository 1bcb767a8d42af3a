/* SPDX-License-Identifier: MIT */
#ifndef SMARTIO_NVME_QUEUE_H
#define SMARTIO_NVME_QUEUE_H

/**
 * DOC: NVMe queue pair, the I/O hot path
 *
 * One submission queue and its completion queue, driven without locks,
 * system calls or allocation. Everything here is static inline and usable
 * unchanged from host C, C++ and CUDA device code (SIO_HD). A queue pair is
 * driven by one thread at a time; callers that share one serialise. (The
 * GPU driver shares a queue pair among many threads with an engine of its
 * own in gpu/queue.cuh; it takes only the barriers, doorbell stores and
 * command builders from here.)
 *
 * Ordering is explicit (barrier.h): SQ entries are fenced before the
 * doorbell store, and a completion's phase tag is read once, then fenced,
 * before the rest of the entry.
 *
 * Tags and command ids. A command holds a tag, 0..size-2, from a free stack
 * until its completion arrives, so a tag is never reused while in flight.
 * The command id on the wire is the tag in its low 12 bits and a 4-bit
 * generation in the top ones, bumped each time the tag is handed out (as
 * Linux does, nvme_cid()): a completion is delivered only when its id names
 * a tag in flight with the same generation. A late or repeated completion
 * is consumed, counted (@spurious, @duplicate, @stale) and not delivered,
 * so it can neither complete the wrong command nor free a tag twice.
 * Generations run 1..15 (0 marks a tag never used), so only a completion
 * late by 15 reuses of its tag could pass for the current command; id 0 is
 * never on the wire. The queue keeps, per tag, the id of its latest
 * command: while that is in flight, the id alone, so a completion is
 * checked with one compare of its id; otherwise with two bits of its tag
 * part flipped to say why not (free, abandoned), which no id can match.
 * Queues hold at most SIO_NVME_QUEUE_MAX_SIZE entries (12-bit tags).
 *
 * The SQ head. At most size - 1 commands are in flight and every SQ entry
 * the controller has not fetched is one of them, so the tail cannot catch
 * the head: submission checks only for a free tag. The head a completion
 * reports (@sq_head) is kept for information, taken only from completions
 * that are delivered and only when it lies between the last head and the
 * tail. A controller reporting a wild head can therefore not wedge the SQ.
 *
 * An entry whose last word reads all ones is not taken. That is what a
 * load through an NTB window reads while its link is down (a CQ in memory
 * of another host: the NVMe manager's admin queue on the lender), and its
 * phase bit is set: taken, it would move the head past entries the
 * controller has not written yet, and their completions would be missed
 * for good. No command of ours has id 0xffff (tag 4095 is never handed
 * out), so no completion of ours reads so.
 *
 * Errors are negative errno values from <errno.h> (nvcc takes it too).
 */

#include <errno.h>
#include <stdbool.h>
#include <smartio/nvme/types.h>
#include <smartio/nvme/barrier.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Largest queue (entries): tags need 12 bits, generations take the rest. */
#define SIO_NVME_QUEUE_MAX_SIZE	4096u
#define SIO_NVME_CID_TAG_BITS	12
#define SIO_NVME_CID_TAG_MASK	0x0fffu
/* A command id's tag and generation (see DOC above). */
#define SIO_NVME_CID_TAG(cid)	((uint16_t)((cid) & SIO_NVME_CID_TAG_MASK))
#define SIO_NVME_CID_GEN(cid)	((uint16_t)((cid) >> SIO_NVME_CID_TAG_BITS))

/* A tag's state (sio_nvme_queue_tag_state()) */
#define SIO_NVME_CID_FREE	0u	/* on the free stack */
#define SIO_NVME_CID_BUSY	1u	/* in flight: its completion is delivered */
#define SIO_NVME_CID_ABANDONED	2u	/* given up (the queue failed): held, never
					 * delivered, not reused before queue_init */
/* The bits of its tag part flipped in the id kept for a tag in @state: none
 * while in flight; bits 10-11, so the tag part stays below 4096. */
#define SIO_NVME__ID_FLIP(state)	((((state) ^ 1u) & 3u) << 10)

/* The state a tag's kept id @id says @tag is in. */
static inline SIO_HD uint32_t sio_nvme__id_state(uint16_t id, uint32_t tag)
{
	return ((((uint32_t)id ^ tag) >> 10) & 3u) ^ 1u;
}

/* @id (a tag's kept id) with the generation kept, for @tag in @state. */
static inline SIO_HD uint16_t sio_nvme__id_with(uint16_t id, uint32_t tag, uint32_t state)
{
	return (uint16_t)((id & ~SIO_NVME_CID_TAG_MASK) | (tag ^ SIO_NVME__ID_FLIP(state)));
}

/**
 * struct sio_nvme_queue - an I/O (or admin) queue pair as the host sees it
 * @sq: SQ entries (host or device memory mapped into this process)
 * @cq: CQ entries
 * @sq_db: the SQ tail doorbell (the caller may point it elsewhere, e.g. at
 *	memory of its own once the real one is unmapped)
 * @cq_db: the CQ head doorbell (likewise)
 * @qid: queue id
 * @size: entries in the SQ and in the CQ (they are equal)
 * @nslots: tags available, size - 1: at most this many in flight, so
 *	neither the SQ nor the CQ can overflow
 * @sq_head: SQ head as last reported by a delivered completion (for
 *	information; submission does not depend on it)
 * @spurious: completions consumed and not delivered because their id names
 *	no command ever issued: a tag out of range or not used yet, or
 *	generation 0
 * @duplicate: completions consumed and not delivered because their command
 *	had already completed (a repeat) or was abandoned
 * @stale: completions consumed and not delivered because their generation
 *	is not the tag's latest: a late completion of an earlier command whose
 *	tag has been reused since
 * @db_writes: MMIO doorbell stores made (SQ and CQ); with shadow doorbells
 *	(sio_nvme_queue_shadow()) only those EventIdx asked for
 *
 * The three counters are the caller's to read (or fold elsewhere and zero)
 * at any time; queue.h only increments them, and sio_nvme_queue_init()
 * zeroes them. The fields marked private are the queue's own state, kept
 * by the functions below: callers must not touch them (the tag storage
 * they provided included; sio_nvme_queue_tag_state() reads a tag).
 */
struct sio_nvme_queue {
	struct sio_nvme_cmd *sq;
	volatile struct sio_nvme_cpl *cq;
	volatile uint32_t *sq_db;
	volatile uint32_t *cq_db;
	uint16_t qid;
	uint16_t size;
	uint16_t nslots;
	uint16_t sq_head;

	/* private: */
	uint16_t *cid_stack;	/* free tags, @nfree of them on top */
	uint64_t *cookie;	/* per tag, the submitter's value */
	uint16_t *ids;		/* per tag, its latest command's id and its state */
	uint16_t nfree;
	uint16_t sq_tail;	/* next SQ slot to fill */
	uint16_t sq_rung;	/* tail last written to the doorbell */
	uint16_t cq_head;	/* next CQ slot to look at */
	uint8_t cq_phase;	/* phase tag of a new completion */
	uint16_t cq_pending;	/* consumed, not yet told to the controller */
	volatile uint32_t *sq_shadow, *cq_shadow;	/* Doorbell Buffer Config, or NULL */
	const volatile uint32_t *sq_ei, *cq_ei;

	/* public: */
	uint64_t spurious;
	uint64_t duplicate;
	uint64_t stale;
	uint64_t db_writes;
};

/**
 * sio_nvme_queue_init() - set up a queue pair over memory the caller placed
 * @q: the queue
 * @qid: queue id (0 for the admin queue)
 * @size: entries per queue, 2..SIO_NVME_QUEUE_MAX_SIZE (4096; the
 *	specification allows 65536, but tags have 12 bits)
 * @sq: SQ memory, @size * 64 bytes, zeroed not required
 * @cq: CQ memory, @size * 16 bytes, must be zeroed (phase tags 0)
 * @sq_db: SQ tail doorbell
 * @cq_db: CQ head doorbell
 * @cid_stack: @size - 1 entries
 * @cookie: @size - 1 entries
 * @ids: @size - 1 entries (per tag: the id of its latest command, and its state)
 * Return: 0, or -EINVAL for a size out of range (@q is then untouched).
 */
static inline SIO_HD int sio_nvme_queue_init(struct sio_nvme_queue *q, uint16_t qid,
					      uint32_t size, void *sq, void *cq,
					      volatile uint32_t *sq_db,
					      volatile uint32_t *cq_db,
					      uint16_t *cid_stack, uint64_t *cookie,
					      uint16_t *ids)
{
	uint32_t i;

	if (size < 2 || size > SIO_NVME_QUEUE_MAX_SIZE)
		return -EINVAL;
	q->sq = (struct sio_nvme_cmd *)sq;
	q->cq = (volatile struct sio_nvme_cpl *)cq;
	q->sq_db = sq_db;
	q->cq_db = cq_db;
	q->cid_stack = cid_stack;
	q->cookie = cookie;
	q->ids = ids;
	q->qid = qid;
	q->size = (uint16_t)size;
	q->nslots = (uint16_t)(size - 1);
	/* Low tags on top of the stack, so a QD1 user keeps reusing tag 0;
	 * the generation tells its commands apart. */
	for (i = 0; i < q->nslots; i++) {
		cid_stack[i] = (uint16_t)(q->nslots - 1 - i);
		ids[i] = sio_nvme__id_with(0, i, SIO_NVME_CID_FREE);	/* generation 0: unused */
		cookie[i] = 0;
	}
	q->nfree = q->nslots;
	q->sq_tail = q->sq_head = q->sq_rung = 0;
	q->cq_head = 0;
	q->cq_phase = 1;
	q->cq_pending = 0;
	q->sq_shadow = q->cq_shadow = 0;
	q->sq_ei = q->cq_ei = 0;
	q->spurious = 0;
	q->duplicate = 0;
	q->stale = 0;
	q->db_writes = 0;
	return 0;
}

/**
 * sio_nvme_queue_shadow() - ring through shadow doorbells (Doorbell Buffer Config)
 * @q: queue, just initialised (its doorbells at 0)
 * @sq_shadow: the SQ's slot in the shadow doorbell buffer
 * @cq_shadow: the CQ's slot in it
 * @sq_ei: the SQ's slot in the EventIdx buffer, or NULL (with @cq_ei): the
 *	shadow is written and MMIO rung every time, as for a host that cannot
 *	read EventIdx cheaply
 * @cq_ei: the CQ's slot in it, or NULL
 *
 * From now on a ring stores the shadow doorbell and writes the MMIO one only
 * when the new value passes the EventIdx the controller published (NVMe
 * 1.4, 5.8; Linux's nvme_dbbuf_need_event()). Memory stores reach where an
 * MMIO write may not: a node that can map the buffer but not BAR0.
 */
static inline SIO_HD void sio_nvme_queue_shadow(struct sio_nvme_queue *q,
						volatile uint32_t *sq_shadow,
						volatile uint32_t *cq_shadow,
						const volatile uint32_t *sq_ei,
						const volatile uint32_t *cq_ei)
{
	q->sq_shadow = sq_shadow;
	q->cq_shadow = cq_shadow;
	q->sq_ei = sq_ei;
	q->cq_ei = cq_ei;
}

/**
 * sio_nvme_dbbuf_need_event() - does moving a doorbell from @old to @v pass @ei?
 * @ei: the EventIdx the controller published
 * @v: the doorbell's new value
 * @old: its value before
 *
 * In 16-bit wrapping arithmetic, as the specification's EventIdx is used:
 * true when @ei lies in [@old, @v).
 */
static inline SIO_HD_HOT bool sio_nvme_dbbuf_need_event(uint16_t ei, uint16_t v, uint16_t old)
{
	return (uint16_t)(v - ei - 1) < (uint16_t)(v - old);
}

/* Store doorbell @v in MMIO, and count it. */
static inline SIO_HD_HOT void sio_nvme__db_mmio(struct sio_nvme_queue *q, volatile uint32_t *db,
					    uint16_t v)
{
	sio_nvme_mmio_write32(db, v);
	q->db_writes++;
}

/*
 * Store doorbell @v (from @old) through the shadow @shadow, and in MMIO if
 * EventIdx asks (or always, for a queue that does not read EventIdx: @ei
 * NULL).
 */
static inline SIO_HD void sio_nvme__db_shadow(struct sio_nvme_queue *q, volatile uint32_t *db,
					      volatile uint32_t *shadow,
					      const volatile uint32_t *ei, uint16_t v, uint16_t old)
{
	*shadow = v;
	if (ei) {
		/* the shadow store is seen before EventIdx is read: a controller
		 * that stopped looking has published it, or sees the store */
		sio_nvme_mb();
		if (!sio_nvme_dbbuf_need_event((uint16_t)*ei, v, old))
			return;
	} else {
		sio_nvme_wmb();	/* a controller that reads the shadow at the ring sees it */
	}
	sio_nvme__db_mmio(q, db, v);
}

/**
 * sio_nvme_queue_inflight() - commands submitted and not yet completed
 * @q: queue
 *
 * Abandoned commands count: their tags are not free.
 */
static inline SIO_HD uint32_t sio_nvme_queue_inflight(const struct sio_nvme_queue *q)
{
	return (uint32_t)(q->nslots - q->nfree);
}

/** sio_nvme_queue_free_slots() - commands that may be submitted now */
static inline SIO_HD uint32_t sio_nvme_queue_free_slots(const struct sio_nvme_queue *q)
{
	return q->nfree;
}

/** sio_nvme_queue_ignored() - completions consumed and not delivered */
static inline SIO_HD uint64_t sio_nvme_queue_ignored(const struct sio_nvme_queue *q)
{
	return q->spurious + q->duplicate + q->stale;
}

/**
 * sio_nvme_queue_tag_state() - SIO_NVME_CID_FREE, _BUSY or _ABANDONED
 * @q: queue
 * @tag: a tag, below @q->nslots
 */
static inline SIO_HD uint32_t sio_nvme_queue_tag_state(const struct sio_nvme_queue *q,
						       uint32_t tag)
{
	return sio_nvme__id_state(q->ids[tag], tag);
}

/**
 * sio_nvme_queue_abandon() - stop waiting for a command
 * @q: queue
 * @tag: its tag
 *
 * For a command the caller has ended itself (a timeout): a completion that
 * still comes for it is consumed and counted in @q->duplicate, never
 * delivered. The tag stays taken until sio_nvme_queue_init(), since the
 * controller may still hold the command. Does nothing unless @tag is in flight.
 */
static inline SIO_HD void sio_nvme_queue_abandon(struct sio_nvme_queue *q, uint32_t tag)
{
	uint16_t id = q->ids[tag];

	if (sio_nvme__id_state(id, tag) == SIO_NVME_CID_BUSY)
		q->ids[tag] = sio_nvme__id_with(id, tag, SIO_NVME_CID_ABANDONED);
}

/**
 * sio_nvme_queue_release() - take back the tag of a command that cannot
 *	complete any more
 * @q: queue
 * @tag: its tag
 *
 * Only once the controller holds no command of this queue (the queue was
 * deleted in it): the tag goes back on the free stack. Does nothing for a
 * free tag.
 */
static inline SIO_HD void sio_nvme_queue_release(struct sio_nvme_queue *q, uint32_t tag)
{
	uint16_t id = q->ids[tag];

	if (sio_nvme__id_state(id, tag) == SIO_NVME_CID_FREE)
		return;
	q->ids[tag] = sio_nvme__id_with(id, tag, SIO_NVME_CID_FREE);
	q->cid_stack[q->nfree++] = (uint16_t)tag;
}

/**
 * sio_nvme_queue_claim_cid() - take command id @cid as in flight, for a
 *	command an earlier owner of the queue submitted
 * @q: queue, as set up to go on where the earlier owner left it
 * @cid: the command id the controller holds (tag and generation)
 * @cookie: returned with its completion
 *
 * A driver that takes a running queue over (a manager after a crash)
 * claims the ids of commands still held by the controller, so it neither
 * reuses them (a command id must be unique among those outstanding on an
 * SQ) nor mistakes their completions for spurious ones.
 * Return: the tag, or -EINVAL when @cid is not a free tag of @q.
 */
static inline SIO_HD int sio_nvme_queue_claim_cid(struct sio_nvme_queue *q, uint16_t cid,
						  uint64_t cookie)
{
	uint16_t tag = (uint16_t)SIO_NVME_CID_TAG(cid);
	uint32_t gen = SIO_NVME_CID_GEN(cid);

	if (gen == 0 || tag >= q->nslots ||
	    sio_nvme__id_state(q->ids[tag], tag) != SIO_NVME_CID_FREE)
		return -EINVAL;
	for (uint16_t i = 0; i < q->nfree; i++) {
		if (q->cid_stack[i] != tag)
			continue;
		q->cid_stack[i] = q->cid_stack[--q->nfree];
		q->cookie[tag] = cookie;
		q->ids[tag] = cid;
		return tag;
	}
	return -EINVAL;
}

/**
 * sio_nvme_sq_next_cid() - the tag the next sio_nvme_sq_submit() will use
 * @q: queue
 *
 * Lets a caller place per-command memory (a PRP list page indexed by tag)
 * before submitting. Return: the tag, or -EAGAIN if none is free.
 */
static inline SIO_HD_HOT int sio_nvme_sq_next_cid(const struct sio_nvme_queue *q)
{
	return q->nfree ? (int)q->cid_stack[q->nfree - 1] : -EAGAIN;
}

/**
 * sio_nvme_sq_entry() - the SQ entry the next command goes in, to fill in place
 * @q: queue
 *
 * Building the command in its slot saves writing it elsewhere and copying
 * it. Fill every field but the cid, then sio_nvme_sq_commit(); the tag it
 * will get is sio_nvme_sq_next_cid().
 * Return: the entry, or NULL (0) when no tag is free. A free tag is all it
 * takes: with at most size - 1 commands in flight the SQ cannot be full.
 */
static inline SIO_HD_HOT struct sio_nvme_cmd *sio_nvme_sq_entry(struct sio_nvme_queue *q)
{
	if (q->nfree == 0)
		return 0;
	return &q->sq[q->sq_tail];
}

/*
 * Take a free tag for a command, with its next generation: the tag, and its
 * command id in *@cid. Each field of @q is read once, where it is used, and
 * little is held across the stores: few registers live, and no frame in an
 * inlining caller for them.
 */
static inline SIO_HD_HOT uint32_t sio_nvme__tag_take(struct sio_nvme_queue *q, uint64_t cookie,
						     uint16_t *cid)
{
	uint32_t nfree = q->nfree - 1u, tag;
	uint16_t id;

	q->nfree = (uint16_t)nfree;
	tag = q->cid_stack[nfree];
	q->cookie[tag] = cookie;
	/* the next generation: 1..15, 15 wraps to 1 (0 only ever for unused) */
	id = (uint16_t)((q->ids[tag] | SIO_NVME_CID_TAG_MASK) + 1u);
	if (!id)
		id = 1u << SIO_NVME_CID_TAG_BITS;
	id = (uint16_t)(id | tag);
	q->ids[tag] = id;
	*cid = id;
	return tag;
}

/* The SQ slot the next command goes in, taken: the tail moves on. */
static inline SIO_HD_HOT struct sio_nvme_cmd *sio_nvme__slot_take(struct sio_nvme_queue *q)
{
	uint16_t tail = q->sq_tail, next = (uint16_t)(tail + 1u);

	q->sq_tail = next == q->size ? 0 : next;
	return &q->sq[tail];
}

/**
 * sio_nvme_sq_commit() - take the entry filled through sio_nvme_sq_entry()
 * @q: queue
 * @cookie: user value returned with the completion
 *
 * Assigns the entry's command id (tag and next generation) and advances
 * the tail, without ringing. Only after sio_nvme_sq_entry() returned an
 * entry.
 * Return: the tag.
 */
static inline SIO_HD_HOT int sio_nvme_sq_commit(struct sio_nvme_queue *q, uint64_t cookie)
{
	struct sio_nvme_cmd *e = sio_nvme__slot_take(q);
	uint16_t cid;
	int tag = (int)sio_nvme__tag_take(q, cookie, &cid);

	e->cid = cid;
	return tag;
}

/**
 * sio_nvme_sq_submit() - place a command in the SQ, without ringing
 * @q: queue
 * @cmd: the command, copied into the SQ; its cid is assigned here
 * @cookie: user value returned with the completion
 *
 * Return: the tag, or -EAGAIN when no tag is free. The command reaches the
 * controller at the next sio_nvme_sq_ring().
 */
static inline SIO_HD int sio_nvme_sq_submit(struct sio_nvme_queue *q,
					    const struct sio_nvme_cmd *cmd,
					    uint64_t cookie)
{
	struct sio_nvme_cmd *e = sio_nvme_sq_entry(q);

	if (!e)
		return -EAGAIN;
	*e = *cmd;
	return sio_nvme_sq_commit(q, cookie);
}

/**
 * sio_nvme_sq_ring() - tell the controller about new SQ entries
 * @q: queue
 *
 * Fences the entries written so far, then stores the tail doorbell.
 * Nothing is written when no entry was added since the last ring.
 */
static inline SIO_HD_HOT void sio_nvme_sq_ring(struct sio_nvme_queue *q)
{
	uint16_t tail = q->sq_tail, rung = q->sq_rung;

	if (tail == rung)
		return;
	q->sq_rung = tail;
	sio_nvme_wmb();
	if (q->sq_shadow)
		sio_nvme__db_shadow(q, q->sq_db, q->sq_shadow, q->sq_ei, tail, rung);
	else
		sio_nvme__db_mmio(q, q->sq_db, tail);
}

/* sio_nvme_sq_ring() for a caller that knows an entry was added since the
 * last ring. */
static inline SIO_HD_HOT void sio_nvme__sq_ring_new(struct sio_nvme_queue *q)
{
	uint16_t tail = q->sq_tail;

	if (__builtin_expect(q->sq_shadow != 0, 0)) {
		sio_nvme_sq_ring(q);
		return;
	}
	q->sq_rung = tail;
	sio_nvme_wmb();
	sio_nvme__db_mmio(q, q->sq_db, tail);
}

/**
 * sio_nvme_cq_peek() - the next completion if the controller posted one
 * @q: queue
 * Return: a pointer to the entry (valid until sio_nvme_cq_pop()), or NULL.
 */
static inline SIO_HD volatile struct sio_nvme_cpl *sio_nvme_cq_peek(struct sio_nvme_queue *q)
{
	volatile struct sio_nvme_cpl *c = &q->cq[q->cq_head];
	uint32_t w3 = ((const volatile uint32_t *)c)[3];

	if (((w3 >> 16) & 1u) != q->cq_phase || w3 == UINT32_MAX)
		return 0;
	/* The status store is the controller's last; read the rest after it. */
	sio_nvme_rmb();
	return c;
}

/* A completion whose id names no command in flight: counted by why. */
static inline SIO_HD int sio_nvme__cq_reject(struct sio_nvme_queue *q, uint32_t gen, uint16_t id)
{
	if (gen == 0 || !SIO_NVME_CID_GEN(id))
		q->spurious++;
	else if (SIO_NVME_CID_GEN(id) != gen)
		q->stale++;
	else
		q->duplicate++;
	return -EPROTO;
}

/*
 * Consume the next completion, as sio_nvme_cq_pop() does, and give its DW3
 * (command id and status) in *@dw3. DW3 holds the phase tag: one 32-bit load
 * gives the id and status that go with it; the rest of the entry is read
 * after the barrier.
 */
static inline SIO_HD_HOT int sio_nvme__cq_take(struct sio_nvme_queue *q, struct sio_nvme_cpl *out,
					       uint32_t *dw3, uint64_t *cookie)
{
	const volatile uint32_t *e = (const volatile uint32_t *)&q->cq[q->cq_head];
	uint32_t w3 = e[3], w2;
	uint16_t cid = (uint16_t)w3, tag = SIO_NVME_CID_TAG(cid), head, next, id;

	if (((w3 >> 16) & 1u) != q->cq_phase || __builtin_expect(w3 == UINT32_MAX, 0))
		return -EAGAIN;		/* not written yet, or out of reach (DOC) */
	sio_nvme_rmb();
	w2 = e[2];
	*dw3 = w3;
	head = (uint16_t)w2;
	if (out) {
		out->result = e[0];
		out->rsvd = e[1];
		out->sq_head = head;
		out->sq_id = (uint16_t)(w2 >> 16);
		out->cid = cid;
		out->status = (uint16_t)(w3 >> 16);
	}
	next = (uint16_t)(q->cq_head + 1);
	if (next == q->size) {
		next = 0;
		q->cq_phase ^= 1u;
	}
	q->cq_head = next;
	q->cq_pending++;
	/* In flight with this generation: the id kept for the tag is this one
	 * (a tag in flight has a generation of 1..15, so an id of generation 0
	 * never matches; nor does 0, kept here for a tag out of range). Fields
	 * are read where they are used: a store could alias the queue, so a
	 * copy taken early would not save a load. */
	id = tag < q->nslots ? q->ids[tag] : 0;
	if (id != cid)
		return sio_nvme__cq_reject(q, SIO_NVME_CID_GEN(cid), id);
	if (cookie)
		*cookie = q->cookie[tag];
	q->cid_stack[q->nfree++] = tag;
	q->ids[tag] = (uint16_t)(cid ^ SIO_NVME__ID_FLIP(SIO_NVME_CID_FREE));	/* was in flight */
	/* The head moves forward from where it was, never past the tail, nor
	 * off the queue. Positions are below 4096, so in 16-bit arithmetic
	 * head - old <= tail - old says just that, wrapped or not, for a head
	 * on the queue. */
	if (__builtin_expect(head < q->size && (uint16_t)(head - q->sq_head) <=
			     (uint16_t)(q->sq_tail - q->sq_head), 1))
		q->sq_head = head;
	return tag;
}

/**
 * sio_nvme_cq_pop() - consume the next completion
 * @q: queue
 * @out: copy of the entry (may be NULL); filled in for any entry consumed
 * @cookie: the cookie given at submission (may be NULL); set only when the
 *	completion is delivered
 *
 * Usable alone or after sio_nvme_cq_peek(): it reads the status word once,
 * and the phase it checks is the one in the status it returns. A delivered
 * completion frees its tag and may update @q->sq_head. The CQ doorbell is
 * written by sio_nvme_cq_ring(), so a batch costs one MMIO write.
 * Return: the tag; -EAGAIN when there is no new entry (nothing consumed);
 * -EPROTO for an entry consumed but not delivered because its id matches no
 * command in flight (counted in @q->spurious, @q->duplicate or @q->stale).
 */
static inline SIO_HD_HOT int sio_nvme_cq_pop(struct sio_nvme_queue *q,
					 struct sio_nvme_cpl *out, uint64_t *cookie)
{
	uint32_t dw3;

	return sio_nvme__cq_take(q, out, &dw3, cookie);
}

/* sio_nvme_cq_ring() for a caller that knows an entry was consumed since
 * the last ring. */
static inline SIO_HD_HOT void sio_nvme__cq_ring_new(struct sio_nvme_queue *q)
{
	uint16_t head = q->cq_head, n;

	/* Our reads of the consumed entries complete before the slots are
	 * handed back to the controller (a read barrier orders loads before
	 * later stores too). */
	sio_nvme_rmb();
	if (__builtin_expect(q->cq_shadow != 0, 0)) {
		n = q->cq_pending;
		q->cq_pending = 0;
		sio_nvme__db_shadow(q, q->cq_db, q->cq_shadow, q->cq_ei, head,
				    (uint16_t)(head >= n ? head - n : head + q->size - n));
		return;
	}
	q->cq_pending = 0;
	sio_nvme__db_mmio(q, q->cq_db, head);
}

/**
 * sio_nvme_cq_ring() - tell the controller which completions were consumed
 * @q: queue
 */
static inline SIO_HD_HOT void sio_nvme_cq_ring(struct sio_nvme_queue *q)
{
	if (q->cq_pending)
		sio_nvme__cq_ring_new(q);
}

/**
 * sio_nvme_queue_restart() - the queue pair was made anew in the controller:
 *	positions back to the start, and the commands still in flight put back
 * @q: queue; its CQ memory zeroed by the caller
 * @cmds: the commands in flight, with their command ids, built again from
 *	the caller's own copies (the SQ's memory may have lost them)
 * @n: how many
 *
 * Tags and generations are kept, so the completions match as before; the
 * commands go in at slots 0..@n-1 and reach the controller at the next
 * sio_nvme_sq_ring().
 */
static inline SIO_HD void sio_nvme_queue_restart(struct sio_nvme_queue *q,
						 const struct sio_nvme_cmd *cmds, uint32_t n)
{
	q->sq_tail = q->sq_head = q->sq_rung = 0;
	q->cq_head = 0;
	q->cq_phase = 1;
	q->cq_pending = 0;
	for (uint32_t i = 0; i < n && i < q->nslots; i++)
		q->sq[q->sq_tail++] = cmds[i];
}

/**
 * sio_nvme_db_stride() - bytes between two doorbells, 4 << CAP.DSTRD
 * @dstrd: CAP.DSTRD (0..15)
 *
 * Computed once per controller and kept (struct sio_nvme_ctrl_info
 * @db_stride), as Linux keeps dev->db_stride.
 */
static inline SIO_HD uint32_t sio_nvme_db_stride(uint32_t dstrd)
{
	return 4u << dstrd;
}

/**
 * sio_nvme_doorbell_offset() - byte offset of a doorbell in BAR0
 * @qid: queue id
 * @cq: 0 for the SQ tail doorbell, 1 for the CQ head doorbell
 * @stride: bytes between doorbells, sio_nvme_db_stride()
 */
static inline SIO_HD uint32_t sio_nvme_doorbell_offset(uint32_t qid, uint32_t cq,
						      uint32_t stride)
{
	return SIO_NVME_REG_DBS + (2u * qid + cq) * stride;
}

/* Command builders for the NVM command set. */

/* Most blocks one Read or Write moves: NLB is a 0-based 16-bit field. */
#define SIO_NVME_MAX_NLB	65536u

/**
 * sio_nvme_cmd_rw() - fill a Read or Write command
 * @cmd: command to fill (cid is assigned at submission)
 * @opcode: SIO_NVME_CMD_READ or SIO_NVME_CMD_WRITE
 * @nsid: namespace
 * @slba: first LBA
 * @nlb: number of blocks, 1..SIO_NVME_MAX_NLB
 * @prp1: data pointer, first PRP entry
 * @prp2: data pointer, second PRP entry or PRP list
 */
static inline SIO_HD_HOT void sio_nvme_cmd_rw(struct sio_nvme_cmd *cmd, uint8_t opcode,
					  uint32_t nsid, uint64_t slba, uint32_t nlb,
					  uint64_t prp1, uint64_t prp2)
{
	cmd->opcode = opcode;
	cmd->flags = 0;
	cmd->cid = 0;
	cmd->nsid = nsid;
	cmd->cdw2 = 0;
	cmd->cdw3 = 0;
	cmd->mptr = 0;
	cmd->prp1 = prp1;
	cmd->prp2 = prp2;
	cmd->cdw10 = (uint32_t)slba;
	cmd->cdw11 = (uint32_t)(slba >> 32);
	cmd->cdw12 = (nlb - 1) & 0xffffu;
	cmd->cdw13 = 0;
	cmd->cdw14 = 0;
	cmd->cdw15 = 0;
}

/**
 * sio_nvme_prp_fill() - PRP entries for a physically contiguous buffer
 * @bus: bus address of the data (dword aligned)
 * @len: bytes
 * @page: memory page size (CC.MPS)
 * @list: PRP list page, used when the data spans more than two pages
 * @list_bus: its bus address
 * @prp1: the first PRP entry (@bus)
 * @prp2: the second: 0, the next page, or @list_bus
 *
 * The buffer is contiguous in the device's address space (a segment mapped
 * for it), so the list holds consecutive page addresses; one list page of
 * page/8 entries is enough up to the driver's transfer cap.
 * Return: the number of list entries written.
 */
static inline SIO_HD_HOT uint32_t sio_nvme_prp_fill(uint64_t bus, uint32_t len, uint32_t page,
						uint64_t *list, uint64_t list_bus,
						uint64_t *prp1, uint64_t *prp2)
{
	uint64_t first_end = (bus | (page - 1)) + 1;	/* end of PRP1's page */
	uint64_t end = bus + len;
	uint64_t a;
	uint32_t n = 0;

	*prp1 = bus;
	if (end <= first_end) {
		*prp2 = 0;
		return 0;
	}
	if (end <= first_end + page) {
		*prp2 = first_end;
		return 0;
	}
	for (a = first_end; a < end; a += page)
		list[n++] = a;
	*prp2 = list_bus;
	return n;
}

/* Identify SGLS bits 1:0, as struct sio_nvme_ctrl_info.sgl keeps them */
#define SIO_NVME_SGL_NONE	0u	/* PRPs only */
#define SIO_NVME_SGL_BYTE	1u	/* SGLs, data blocks at any byte */
#define SIO_NVME_SGL_DWORD	2u	/* SGLs, data blocks dword aligned */

/**
 * sio_nvme_sgl_wanted() - whether a contiguous transfer goes better as an SGL
 * @sgl: the controller's SIO_NVME_SGL_* support
 * @bus: where the data starts
 * @len: bytes
 * @page: memory page size
 *
 * One SGL Data Block descriptor describes any contiguous buffer in the
 * command itself, where PRPs need a list page (written by the host, read
 * by the controller: a round trip across the fabric) once the data spans
 * more than two pages, and cannot start off a dword at all. So: an SGL when
 * the controller takes one and the data is not page aligned or spans more
 * than two pages; PRPs otherwise (what every controller takes).
 */
static inline SIO_HD_HOT bool sio_nvme_sgl_wanted(uint32_t sgl, uint64_t bus, uint32_t len,
					      uint32_t page)
{
	if (sgl == SIO_NVME_SGL_NONE || (sgl == SIO_NVME_SGL_DWORD && (bus & 3)))
		return false;
	return (bus & (page - 1)) != 0 || len > 2 * page;
}

/**
 * sio_nvme_cmd_sgl_data() - make a command's data pointer one SGL Data Block
 * @cmd: command (PSDT is set to SGL, MPTR unused)
 * @bus: where the data starts
 * @len: bytes
 */
static inline SIO_HD_HOT void sio_nvme_cmd_sgl_data(struct sio_nvme_cmd *cmd, uint64_t bus,
						uint32_t len)
{
	cmd->flags = (uint8_t)((cmd->flags & 0x3fu) | SIO_NVME_PSDT_SGL_MPTR << 6);
	cmd->sgl.addr = bus;
	cmd->sgl.length = len;
	cmd->sgl.rsvd[0] = cmd->sgl.rsvd[1] = cmd->sgl.rsvd[2] = 0;
	cmd->sgl.type = SIO_NVME_SGL_TYPE(SIO_NVME_SGL_DATA);
}

#ifdef __cplusplus
}
#endif
#endif
