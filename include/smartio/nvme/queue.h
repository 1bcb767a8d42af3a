/* SPDX-License-Identifier: MIT */
#ifndef SMARTIO_NVME_QUEUE_H
#define SMARTIO_NVME_QUEUE_H

/**
 * DOC: NVMe queue pair, the I/O hot path
 *
 * One submission queue and its completion queue, driven without locks,
 * system calls or allocation. Everything here is static inline and usable
 * unchanged from host C, C++ and CUDA device code (SIO_HD). A queue pair is
 * driven by one thread at a time; callers that share one serialise.
 *
 * Ordering is explicit and never relies on the host's memory model alone:
 * SQ entries are published with a release fence (plus SFENCE on x86, which
 * also drains write-combining buffers for an SQ in a CMB) before the
 * doorbell store, and a completion's status word is read with acquire
 * semantics before the rest of the entry. On a GPU __threadfence_system()
 * takes both roles.
 *
 * Command ids index a fixed slot table; a cid is handed out from a free
 * stack and only returns to it when its completion arrives, so it is never
 * reused while in flight. The SQ head is taken from completions
 * (cpl.sq_head), as the specification requires.
 *
 * This header includes only <stdint.h> (through types.h) so nvcc takes it.
 */

#include <smartio/nvme/types.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Marks a cid that is not in flight in sio_nvme_queue.busy. */
#define SIO_NVME_CID_FREE	0u
#define SIO_NVME_CID_BUSY	1u

/**
 * struct sio_nvme_queue - an I/O (or admin) queue pair as the host sees it
 * @sq: SQ entries (host or device memory mapped into this process)
 * @cq: CQ entries
 * @sq_db: the SQ tail doorbell
 * @cq_db: the CQ head doorbell
 * @cid_stack: free command ids (caller-provided, @nslots entries)
 * @cookie: per-cid user value, set at submission (caller-provided)
 * @busy: per-cid in-flight flag (caller-provided, @nslots entries)
 * @qid: queue id
 * @size: entries in the SQ and in the CQ (they are equal)
 * @nslots: command ids available, size - 1: at most this many in flight, so
 *	the CQ cannot overflow
 * @nfree: entries on @cid_stack
 * @sq_tail: next SQ slot to fill
 * @sq_head: SQ head as last reported by the controller
 * @sq_rung: tail value last written to the doorbell
 * @cq_head: next CQ slot to look at
 * @cq_phase: phase tag that marks a new completion
 * @cq_pending: completions consumed but not yet told to the controller
 * @spurious: completions whose cid was not in flight (counted, ignored)
 */
struct sio_nvme_queue {
	struct sio_nvme_cmd *sq;
	volatile struct sio_nvme_cpl *cq;
	volatile uint32_t *sq_db;
	volatile uint32_t *cq_db;
	uint16_t *cid_stack;
	uint64_t *cookie;
	uint8_t *busy;
	uint16_t qid;
	uint16_t size;
	uint16_t nslots;
	uint16_t nfree;
	uint16_t sq_tail;
	uint16_t sq_head;
	uint16_t sq_rung;
	uint16_t cq_head;
	uint8_t cq_phase;
	uint16_t cq_pending;
	uint64_t spurious;
};

/* Store/load fences. Release before a doorbell, acquire after a phase tag. */
static inline SIO_HD void sio_nvme_wmb(void)
{
#if defined(__CUDA_ARCH__)
	__threadfence_system();
#else
	__atomic_thread_fence(__ATOMIC_RELEASE);
#if defined(__x86_64__) || defined(__i386__)
	__builtin_ia32_sfence();
#endif
#endif
}

static inline SIO_HD void sio_nvme_rmb(void)
{
#if defined(__CUDA_ARCH__)
	__threadfence_system();
#else
	__atomic_thread_fence(__ATOMIC_ACQUIRE);
#endif
}

static inline SIO_HD void sio_nvme_mmio_write32(volatile uint32_t *reg, uint32_t v)
{
#if defined(__CUDA_ARCH__)
	*reg = v;
#else
	__atomic_store_n(reg, v, __ATOMIC_RELAXED);
#endif
}

/** sio_nvme_cpu_relax() - tell the CPU we are spinning */
static inline SIO_HD void sio_nvme_cpu_relax(void)
{
#if defined(__CUDA_ARCH__)
	/* nothing: the caller bounds its loop */
#elif defined(__x86_64__) || defined(__i386__)
	__builtin_ia32_pause();
#elif defined(__aarch64__)
	__asm__ __volatile__("yield" ::: "memory");
#endif
}

/**
 * sio_nvme_queue_init() - set up a queue pair over memory the caller placed
 * @q: the queue
 * @qid: queue id (0 for the admin queue)
 * @size: entries per queue (2..65536 is the spec's range; we take <= 65535)
 * @sq: SQ memory, @size * 64 bytes, zeroed not required
 * @cq: CQ memory, @size * 16 bytes, must be zeroed (phase tags 0)
 * @sq_db: SQ tail doorbell
 * @cq_db: CQ head doorbell
 * @cid_stack: @size - 1 entries
 * @cookie: @size - 1 entries
 * @busy: @size - 1 entries
 * Return: 0, or -22 (EINVAL) for a size out of range.
 */
static inline SIO_HD int sio_nvme_queue_init(struct sio_nvme_queue *q, uint16_t qid,
					      uint32_t size, void *sq, void *cq,
					      volatile uint32_t *sq_db,
					      volatile uint32_t *cq_db,
					      uint16_t *cid_stack, uint64_t *cookie,
					      uint8_t *busy)
{
	uint32_t i;

	if (size < 2 || size > 65535)
		return -22;
	q->sq = (struct sio_nvme_cmd *)sq;
	q->cq = (volatile struct sio_nvme_cpl *)cq;
	q->sq_db = sq_db;
	q->cq_db = cq_db;
	q->cid_stack = cid_stack;
	q->cookie = cookie;
	q->busy = busy;
	q->qid = qid;
	q->size = (uint16_t)size;
	q->nslots = (uint16_t)(size - 1);
	/* Low cids on top of the stack, so a QD1 user keeps reusing cid 0. */
	for (i = 0; i < q->nslots; i++) {
		cid_stack[i] = (uint16_t)(q->nslots - 1 - i);
		busy[i] = SIO_NVME_CID_FREE;
		cookie[i] = 0;
	}
	q->nfree = q->nslots;
	q->sq_tail = q->sq_head = q->sq_rung = 0;
	q->cq_head = 0;
	q->cq_phase = 1;
	q->cq_pending = 0;
	q->spurious = 0;
	return 0;
}

/** sio_nvme_queue_inflight() - commands submitted and not yet completed */
static inline SIO_HD uint32_t sio_nvme_queue_inflight(const struct sio_nvme_queue *q)
{
	return (uint32_t)(q->nslots - q->nfree);
}

/** sio_nvme_queue_free_slots() - commands that may be submitted now */
static inline SIO_HD uint32_t sio_nvme_queue_free_slots(const struct sio_nvme_queue *q)
{
	return q->nfree;
}

/**
 * sio_nvme_sq_next_cid() - the cid the next sio_nvme_sq_submit() will use
 * @q: queue
 *
 * Lets a caller place per-command memory (a PRP list page indexed by cid)
 * before submitting. Return: the cid, or -11 (EAGAIN) if none is free.
 */
static inline SIO_HD int sio_nvme_sq_next_cid(const struct sio_nvme_queue *q)
{
	return q->nfree ? (int)q->cid_stack[q->nfree - 1] : -11;
}

/**
 * sio_nvme_sq_entry() - the SQ entry the next command goes in, to fill in place
 * @q: queue
 *
 * Building the command in its slot saves writing it elsewhere and copying
 * it. Fill every field but the cid, then sio_nvme_sq_commit(); the cid it
 * will get is sio_nvme_sq_next_cid().
 * Return: the entry, or NULL (0) when no cid or SQ slot is free.
 */
static inline SIO_HD struct sio_nvme_cmd *sio_nvme_sq_entry(struct sio_nvme_queue *q)
{
	uint16_t next = (uint16_t)(q->sq_tail + 1 == q->size ? 0 : q->sq_tail + 1);

	/* A free cid bounds in-flight commands; the SQ check also covers
	 * entries the controller has not fetched yet. */
	if (q->nfree == 0 || next == q->sq_head)
		return 0;
	return &q->sq[q->sq_tail];
}

/**
 * sio_nvme_sq_commit() - take the entry filled through sio_nvme_sq_entry()
 * @q: queue
 * @cookie: user value returned with the completion
 *
 * Assigns the entry's cid and advances the tail, without ringing. Only
 * after sio_nvme_sq_entry() returned an entry.
 * Return: the cid.
 */
static inline SIO_HD int sio_nvme_sq_commit(struct sio_nvme_queue *q, uint64_t cookie)
{
	uint16_t tail = q->sq_tail;
	uint16_t cid = q->cid_stack[--q->nfree];

	/* Everything read from @q before the byte store to busy[], which the
	 * compiler must assume could alias it. */
	q->sq_tail = (uint16_t)(tail + 1 == q->size ? 0 : tail + 1);
	q->sq[tail].cid = cid;
	q->cookie[cid] = cookie;
	q->busy[cid] = SIO_NVME_CID_BUSY;
	return cid;
}

/**
 * sio_nvme_sq_submit() - place a command in the SQ, without ringing
 * @q: queue
 * @cmd: the command, copied into the SQ; its cid is assigned here
 * @cookie: user value returned with the completion
 *
 * Return: the cid, or -11 (EAGAIN) when no cid or SQ slot is free. The
 * command reaches the controller at the next sio_nvme_sq_ring().
 */
static inline SIO_HD int sio_nvme_sq_submit(struct sio_nvme_queue *q,
					    const struct sio_nvme_cmd *cmd,
					    uint64_t cookie)
{
	struct sio_nvme_cmd *e = sio_nvme_sq_entry(q);

	if (!e)
		return -11;
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
static inline SIO_HD void sio_nvme_sq_ring(struct sio_nvme_queue *q)
{
	if (q->sq_tail == q->sq_rung)
		return;
	sio_nvme_wmb();
	sio_nvme_mmio_write32(q->sq_db, q->sq_tail);
	q->sq_rung = q->sq_tail;
}

/**
 * sio_nvme_cq_peek() - the next completion if the controller posted one
 * @q: queue
 * Return: a pointer to the entry (valid until sio_nvme_cq_pop()), or NULL.
 */
static inline SIO_HD volatile struct sio_nvme_cpl *sio_nvme_cq_peek(struct sio_nvme_queue *q)
{
	volatile struct sio_nvme_cpl *c = &q->cq[q->cq_head];
	uint16_t st;

#if defined(__CUDA_ARCH__)
	st = c->status;
#else
	st = __atomic_load_n(&c->status, __ATOMIC_ACQUIRE);
#endif
	if ((st & 1u) != q->cq_phase)
		return 0;
	/* The status store is the controller's last; read the rest after it. */
	sio_nvme_rmb();
	return c;
}

/**
 * sio_nvme_cq_pop() - consume a completion returned by sio_nvme_cq_peek()
 * @q: queue
 * @out: copy of the entry (may be NULL)
 * @cookie: the cookie given at submission (may be NULL)
 *
 * Frees the cid and takes the SQ head from the completion. The CQ doorbell
 * is written by sio_nvme_cq_ring(), so a batch costs one MMIO write.
 * Return: the cid, or -71 (EPROTO) for a completion whose cid was not in
 * flight (counted in @q->spurious and skipped).
 */
static inline SIO_HD int sio_nvme_cq_pop(struct sio_nvme_queue *q,
					 struct sio_nvme_cpl *out, uint64_t *cookie)
{
	volatile struct sio_nvme_cpl *c = &q->cq[q->cq_head];
	uint16_t cid = c->cid;
	uint16_t head = c->sq_head;

	if (out) {
		out->result = c->result;
		out->rsvd = c->rsvd;
		out->sq_head = head;
		out->sq_id = c->sq_id;
		out->cid = cid;
		out->status = c->status;
	}
	if (++q->cq_head == q->size) {
		q->cq_head = 0;
		q->cq_phase ^= 1u;
	}
	q->cq_pending++;
	if (head < q->size)
		q->sq_head = head;
	if (cid >= q->nslots || q->busy[cid] != SIO_NVME_CID_BUSY) {
		q->spurious++;
		return -71;
	}
	q->busy[cid] = SIO_NVME_CID_FREE;
	if (cookie)
		*cookie = q->cookie[cid];
	q->cid_stack[q->nfree++] = cid;
	return cid;
}

/**
 * sio_nvme_cq_ring() - tell the controller which completions were consumed
 * @q: queue
 */
static inline SIO_HD void sio_nvme_cq_ring(struct sio_nvme_queue *q)
{
	if (!q->cq_pending)
		return;
	/* Our reads of the consumed entries complete before the slots are
	 * handed back to the controller. */
	sio_nvme_wmb();
	sio_nvme_mmio_write32(q->cq_db, q->cq_head);
	q->cq_pending = 0;
}

/**
 * sio_nvme_doorbell_offset() - byte offset of a doorbell in BAR0
 * @qid: queue id
 * @cq: 0 for the SQ tail doorbell, 1 for the CQ head doorbell
 * @dstrd: CAP.DSTRD
 */
static inline SIO_HD uint32_t sio_nvme_doorbell_offset(uint32_t qid, uint32_t cq,
						      uint32_t dstrd)
{
	return SIO_NVME_REG_DBS + (2u * qid + cq) * (4u << dstrd);
}

/* Command builders for the NVM command set. */

/**
 * sio_nvme_cmd_rw() - fill a Read or Write command
 * @cmd: command to fill (cid is assigned at submission)
 * @opcode: SIO_NVME_CMD_READ or SIO_NVME_CMD_WRITE
 * @nsid: namespace
 * @slba: first LBA
 * @nlb: number of blocks, 1..65536
 * @prp1, @prp2: data pointer
 */
static inline SIO_HD void sio_nvme_cmd_rw(struct sio_nvme_cmd *cmd, uint8_t opcode,
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
 * @prp1, @prp2: results
 *
 * The buffer is contiguous in the device's address space (a segment mapped
 * for it), so the list holds consecutive page addresses; one list page of
 * page/8 entries is enough up to the driver's transfer cap.
 * Return: the number of list entries written.
 */
static inline SIO_HD uint32_t sio_nvme_prp_fill(uint64_t bus, uint32_t len, uint32_t page,
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

#ifdef __cplusplus
}
#endif
#endif
