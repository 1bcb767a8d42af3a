/* SPDX-License-Identifier: MIT */
/*
 * The device-side state of a GPU queue: built on the host, copied into GPU
 * memory once, then owned by the kernels that use it. Its failure is
 * mirrored in mapped host memory, so the host reads it without waiting for
 * a kernel.
 */

#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <smartio/gpu/queue.cuh>
#include "priv.h"

/* Per-slot arrays, laid out after the struct in one allocation. */
static size_t arrays_size(uint32_t depth)
{
	return (size_t)depth * (4 * sizeof(uint32_t) + sizeof(uint16_t));
}

/* Host mirrors of the queues' failure, by device pointer. */
struct mirror {
	struct sio_gpu_queue *q;
	volatile int32_t *host;
	struct mirror *next;
};
static struct mirror *mirrors;
static pthread_mutex_t mirrors_lock = PTHREAD_MUTEX_INITIALIZER;

static volatile int32_t *mirror_of(struct sio_gpu_queue *q)
{
	volatile int32_t *h = NULL;

	pthread_mutex_lock(&mirrors_lock);
	for (struct mirror *m = mirrors; m; m = m->next)
		if (m->q == q) {
			h = m->host;
			break;
		}
	pthread_mutex_unlock(&mirrors_lock);
	return h;
}

/*
 * The per-slot markers for tickets starting at @base: slot p's first ticket
 * t0 is the one in base..base+depth-1 with t0 % depth == p, and the slot
 * looks as if ticket t0 - depth had used it and been waited on.
 */
static int slots_init(const struct sio_gpu_queue *q, uint32_t base)
{
	uint32_t d = q->depth, *h;
	cudaError_t e;

	h = calloc(4 * (size_t)d, sizeof(uint32_t));
	if (!h)
		return sio_err_set(ENOMEM, "out of memory");
	for (uint32_t i = 0; i < d; i++) {
		uint32_t t0 = base + i, p = t0 & (d - 1);

		h[p] = t0;			/* round: next allowed ticket */
		h[d + p] = t0 - d + 1;		/* ready */
		h[2 * d + p] = t0 - d;		/* tick */
		h[3 * d + p] = t0 - d + 1;	/* done */
	}
	e = cudaMemcpy(q->round, h, 4 * (size_t)d * sizeof(uint32_t), cudaMemcpyHostToDevice);
	if (e == cudaSuccess)
		e = cudaMemset(q->status, 0, (size_t)d * sizeof(uint16_t));
	free(h);
	return e == cudaSuccess ? 0 : sio_gpu_cuda_err(e, "initialising GPU queue slots");
}

static int desc_check(const struct sio_gpu_queue_desc *d)
{
	if (d->depth < 2 || d->depth > 65536 || (d->depth & (d->depth - 1)))
		return sio_err_set(EINVAL, "GPU queue depth %u must be a power of two in 2..65536",
				   d->depth);
	if (!d->sq || !d->cq || !d->sq_db || !d->cq_db || !d->prp)
		return sio_err_set(EINVAL, "GPU queue: SQ, CQ, doorbells and PRP pages are required");
	if (d->page < 4096 || (d->page & (d->page - 1)))
		return sio_err_set(EINVAL, "GPU queue: page size %u is not a power of two >= 4096",
				   d->page);
	if (!d->max_xfer || (d->prp_bus & (d->page - 1)))
		return sio_err_set(EINVAL, "GPU queue: max_xfer is 0 or the PRP pages are not "
				   "page aligned");
	return 0;
}

/* The host copy of the queue as @d describes it, before its state exists. */
static void queue_from_desc(struct sio_gpu_queue *q, const struct sio_gpu_queue_desc *d)
{
	memset(q, 0, sizeof(*q));
	q->sq = d->sq;
	q->cq = d->cq;
	q->sq_db = d->sq_db;
	q->cq_db = d->cq_db;
	q->prp = d->prp;
	q->prp_bus = d->prp_bus;
	q->depth = d->depth;
	while ((1u << q->shift) < d->depth)
		q->shift++;
	q->page = d->page;
	/* one PRP list page per slot bounds a transfer */
	q->max_xfer = d->max_xfer;
	if ((uint64_t)q->max_xfer > (uint64_t)(d->page / 8) * d->page)
		q->max_xfer = (d->page / 8) * d->page;
	q->timeout_ns = d->timeout_ns ? d->timeout_ns : 2000000000ull;
	q->qid = d->qid;
	q->cq_phase = 1;
}

/*
 * GPU memory for the queue and its per-slot arrays (@mem, the arrays'
 * pointers set in @q), and its failure's mirror in mapped host memory
 * (@host, its device pointer in @q).
 */
static int state_alloc(struct sio_gpu_queue *q, char **mem, int32_t **host)
{
	size_t hdr = (sizeof(*q) + 255) & ~(size_t)255;
	cudaError_t e;

	e = cudaHostAlloc((void **)host, sizeof(**host), cudaHostAllocMapped);
	if (e == cudaSuccess) {
		**host = 0;
		e = cudaHostGetDevicePointer((void **)&q->failed_host, *host, 0);
	}
	if (e == cudaSuccess)
		e = cudaMalloc((void **)mem, hdr + arrays_size(q->depth));
	if (e != cudaSuccess)
		return sio_gpu_cuda_err(e, "allocating GPU queue state");
	q->round = (uint32_t *)(*mem + hdr);
	q->ready = q->round + q->depth;
	q->tick = q->ready + q->depth;
	q->done = q->tick + q->depth;
	q->status = (uint16_t *)(q->done + q->depth);
	return 0;
}

/* Validate, build the state on the host, copy it into GPU memory once,
 * and keep its failure's mirror where sio_gpu_queue_failed() finds it. */
int sio_gpu_queue_alloc(const struct sio_gpu_queue_desc *d, struct sio_gpu_queue **out)
{
	struct sio_gpu_queue q;
	struct mirror *m = NULL;
	int32_t *host = NULL;
	char *mem = NULL;
	cudaError_t e;
	int ret;

	if (!d || !out)
		return sio_err_set(EINVAL, "sio_gpu_queue_alloc: NULL argument");
	ret = desc_check(d);
	if (ret)
		return ret;
	queue_from_desc(&q, d);
	m = calloc(1, sizeof(*m));
	if (!m)
		return sio_err_set(ENOMEM, "out of memory");
	ret = state_alloc(&q, &mem, &host);
	if (!ret)
		ret = slots_init(&q, 0);
	if (!ret) {
		e = cudaMemcpy(mem, &q, sizeof(q), cudaMemcpyHostToDevice);
		if (e != cudaSuccess)
			ret = sio_gpu_cuda_err(e, "initialising GPU queue state");
	}
	if (ret) {
		cudaFree(mem);
		if (host)
			cudaFreeHost(host);
		free(m);
		return ret;
	}
	m->q = (struct sio_gpu_queue *)mem;
	m->host = host;
	pthread_mutex_lock(&mirrors_lock);
	m->next = mirrors;
	mirrors = m;
	pthread_mutex_unlock(&mirrors_lock);
	*out = (struct sio_gpu_queue *)mem;
	return 0;
}

void sio_gpu_queue_close(struct sio_gpu_queue *q)
{
	struct mirror **pp, *m = NULL;

	if (!q)
		return;
	pthread_mutex_lock(&mirrors_lock);
	for (pp = &mirrors; *pp; pp = &(*pp)->next)
		if ((*pp)->q == q) {
			m = *pp;
			*pp = m->next;
			break;
		}
	pthread_mutex_unlock(&mirrors_lock);
	cudaFree(q);
	if (m) {
		cudaFreeHost((void *)m->host);
		free(m);
	}
}

int sio_gpu_queue_failed(struct sio_gpu_queue *q)
{
	volatile int32_t *h;
	int32_t v;
	cudaError_t e;

	if (!q)
		return sio_err_set(EINVAL, "sio_gpu_queue_failed: NULL queue");
	h = mirror_of(q);
	if (h)
		return __atomic_load_n(h, __ATOMIC_ACQUIRE);
	/* not made here: read it from the GPU (waits for running kernels) */
	e = cudaMemcpy(&v, &q->failed, sizeof(v), cudaMemcpyDeviceToHost);
	if (e != cudaSuccess)
		return sio_gpu_cuda_err(e, "reading GPU queue state");
	return v;
}

int sio_gpu_queue_set_ticket(struct sio_gpu_queue *q, uint32_t ticket)
{
	struct sio_gpu_queue h;
	cudaError_t e;
	int ret;

	if (!q)
		return sio_err_set(EINVAL, "sio_gpu_queue_set_ticket: NULL queue");
	e = cudaMemcpy(&h, q, sizeof(h), cudaMemcpyDeviceToHost);
	if (e != cudaSuccess)
		return sio_gpu_cuda_err(e, "reading GPU queue state");
	if (h.failed)
		return sio_err_set(EBUSY, "the GPU queue failed (%d): make a new one", h.failed);
	if (h.ticket != h.rung)
		return sio_err_set(EINVAL, "the GPU queue is not idle: tickets %u..%u not rung",
				   h.rung, h.ticket - 1);
	/* The controller fetches from the SQ tail it was rung with: a ticket
	 * in another slot would leave entries it has run before (or none) in
	 * between. */
	if ((ticket ^ h.ticket) & (h.depth - 1))
		return sio_err_set(EINVAL, "ticket %u names SQ slot %u, but the queue's SQ tail is at "
				   "slot %u: pick a ticket that is %u modulo the depth (%u)", ticket,
				   ticket & (h.depth - 1), h.ticket & (h.depth - 1),
				   h.ticket & (h.depth - 1), h.depth);
	/* every ticket waited on: its slot's round moved one on */
	{
		uint32_t *round = malloc((size_t)h.depth * sizeof(*round));
		uint32_t bad = 0;
		bool idle = true;

		if (!round)
			return sio_err_set(ENOMEM, "out of memory");
		e = cudaMemcpy(round, h.round, (size_t)h.depth * sizeof(*round),
			       cudaMemcpyDeviceToHost);
		for (uint32_t i = 0; e == cudaSuccess && i < h.depth && idle; i++) {
			uint32_t t = h.ticket + i;

			if (round[t & (h.depth - 1)] != t) {
				idle = false;
				bad = t;
			}
		}
		free(round);
		if (e != cudaSuccess)
			return sio_gpu_cuda_err(e, "reading GPU queue slots");
		if (!idle)
			return sio_err_set(EINVAL, "the GPU queue is not idle: a ticket before %u "
					   "was not waited on", bad);
	}
	ret = slots_init(&h, ticket);
	if (ret)
		return ret;
	h.ticket = h.rung = h.cq_seen = ticket;
	e = cudaMemcpy(&q->ticket, &h.ticket, sizeof(h.ticket), cudaMemcpyHostToDevice);
	if (e == cudaSuccess)
		e = cudaMemcpy(&q->rung, &h.rung, sizeof(h.rung), cudaMemcpyHostToDevice);
	if (e == cudaSuccess)
		e = cudaMemcpy(&q->cq_seen, &h.cq_seen, sizeof(h.cq_seen), cudaMemcpyHostToDevice);
	return e == cudaSuccess ? 0 : sio_gpu_cuda_err(e, "writing GPU queue state");
}
