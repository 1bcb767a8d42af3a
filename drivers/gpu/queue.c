/* SPDX-License-Identifier: MIT */
/*
 * The device-side state of a GPU queue: built on the host, copied into GPU
 * memory once, then owned by the kernels that use it.
 */

#include <stdlib.h>
#include <string.h>
#include "priv.h"

/* Per-slot arrays, laid out after the struct in one allocation. */
static size_t arrays_size(uint32_t depth)
{
	return (size_t)depth * (4 * sizeof(uint32_t) + sizeof(uint16_t));
}

int sio_gpu_queue_alloc(const struct sio_gpu_queue_desc *d, struct sio_gpu_queue **out)
{
	struct sio_gpu_queue q;
	size_t hdr = (sizeof(q) + 255) & ~(size_t)255;
	char *mem;
	cudaError_t e;
	uint32_t shift = 0;

	if (!d || !out)
		return sio_gpu_err(EINVAL, "sio_gpu_queue_alloc: NULL argument");
	if (d->depth < 2 || d->depth > 65536 || (d->depth & (d->depth - 1)))
		return sio_gpu_err(EINVAL, "GPU queue depth %u must be a power of two in 2..65536",
				   d->depth);
	if (!d->sq || !d->cq || !d->sq_db || !d->cq_db || !d->prp)
		return sio_gpu_err(EINVAL, "GPU queue: SQ, CQ, doorbells and PRP pages are required");
	if (d->page < 4096 || (d->page & (d->page - 1)))
		return sio_gpu_err(EINVAL, "GPU queue: page size %u is not a power of two >= 4096",
				   d->page);
	if (!d->max_xfer || (d->prp_bus & (d->page - 1)))
		return sio_gpu_err(EINVAL, "GPU queue: max_xfer is 0 or the PRP pages are not "
				   "page aligned");
	while ((1u << shift) < d->depth)
		shift++;
	memset(&q, 0, sizeof(q));
	q.sq = d->sq;
	q.cq = d->cq;
	q.sq_db = d->sq_db;
	q.cq_db = d->cq_db;
	q.prp = d->prp;
	q.prp_bus = d->prp_bus;
	q.depth = d->depth;
	q.shift = shift;
	q.page = d->page;
	/* one PRP list page per slot bounds a transfer */
	q.max_xfer = d->max_xfer;
	if ((uint64_t)q.max_xfer > (uint64_t)(d->page / 8) * d->page)
		q.max_xfer = (d->page / 8) * d->page;
	q.timeout_ns = d->timeout_ns ? d->timeout_ns : 2000000000ull;
	q.qid = d->qid;
	q.cq_phase = 1;

	e = cudaMalloc((void **)&mem, hdr + arrays_size(d->depth));
	if (e != cudaSuccess)
		return sio_gpu_cuda_err(e, "cudaMalloc (GPU queue state)");
	q.round = (uint32_t *)(mem + hdr);
	q.ready = q.round + d->depth;
	q.tick = q.ready + d->depth;
	q.done = q.tick + d->depth;
	q.status = (uint16_t *)(q.done + d->depth);
	e = cudaMemset(mem + hdr, 0, arrays_size(d->depth));
	if (e == cudaSuccess)
		e = cudaMemcpy(mem, &q, sizeof(q), cudaMemcpyHostToDevice);
	if (e != cudaSuccess) {
		cudaFree(mem);
		return sio_gpu_cuda_err(e, "initialising GPU queue state");
	}
	*out = (struct sio_gpu_queue *)mem;
	return 0;
}

void sio_gpu_queue_free(struct sio_gpu_queue *q)
{
	if (q)
		cudaFree(q);
}

int sio_gpu_queue_failed(struct sio_gpu_queue *q)
{
	int32_t v;
	cudaError_t e;

	if (!q)
		return sio_gpu_err(EINVAL, "sio_gpu_queue_failed: NULL queue");
	e = cudaMemcpy(&v, &q->failed, sizeof(v), cudaMemcpyDeviceToHost);
	if (e != cudaSuccess)
		return sio_gpu_cuda_err(e, "reading GPU queue state");
	return v;
}
