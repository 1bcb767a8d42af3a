/* SPDX-License-Identifier: MIT */
/*
 * GPU queue pairs on a managed NVMe controller. The manager creates the
 * queues like any client's (sio_nvme_ioq_create_at()); the SQ, PRP lists and
 * optionally the CQ are GPU memory segments, and the queue's doorbells are
 * registered with CUDA so kernels store to them: on a confined controller
 * (doorbells a page or more apart) just the queue pair's own doorbell pages
 * (sio_nvme_client_doorbells()), otherwise the client's mapping of BAR0,
 * registered once per connection.
 */

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <smartio/nvme/client.h>
#include "priv.h"

struct sio_gpu_nvme {
	struct sio_fabric *f;
	struct sio_nvme_client *cl;
	struct sio_device *dev;
	struct sio_device_info di;
	struct sio_nvme_ctrl_info ci;
	int gpu;
	/* unconfined: the client's whole-BAR0 mapping, registered once */
	void *bar0_va;
	char *bar0_dev;			/* as the GPU addresses it */
	struct sio_gpu_qp *qps;
};

struct sio_gpu_qp {
	struct sio_gpu_nvme *g;
	struct sio_gpu_qp *next;
	struct sio_gpu_mem *gmem;	/* SQ (unless in host), CQ (if in GPU), PRP lists */
	struct sio_segment *hseg;	/* SQ and/or CQ in host memory */
	void *hva;
	bool hreg, gmapped, hmapped;
	bool created;
	struct sio_nvme_doorbells db;	/* this queue pair's doorbells */
	bool dbmapped, dbreg;		/* dbreg: its own pages registered */
	struct sio_gpu_qp_info info;
};

/* Real BARs are MMIO and need the I/O memory flag; the sim's are RAM. */
static unsigned int bar_flags(const struct sio_gpu_nvme *g)
{
	return cudaHostRegisterMapped |
	       (g->di.backend != SIO_BACKEND_SIM ? cudaHostRegisterIoMemory : 0);
}

/* Register @len bytes at @va (doorbell pages) for the GPU. */
static int register_bar(struct sio_gpu_nvme *g, void *va, uint64_t len, char **dev)
{
	cudaError_t e = cudaHostRegister(va, len, bar_flags(g));

	if (e == cudaSuccess) {
		e = cudaHostGetDevicePointer((void **)dev, va, 0);
		if (e != cudaSuccess)
			cudaHostUnregister(va);
	}
	if (e != cudaSuccess)
		return sio_gpu_cuda_err(e, "mapping the doorbells (BAR0) for the GPU");
	return 0;
}

/*
 * Map qp's doorbells for the GPU and set d->sq_db, d->cq_db. Confined, the
 * queue pair's own pages, registered for it alone; otherwise they lie in
 * the client's BAR0 mapping, registered once for every queue pair.
 */
static int doorbells_for_gpu(struct sio_gpu_qp *qp, struct sio_gpu_queue_desc *d)
{
	struct sio_gpu_nvme *g = qp->g;
	char *dev;
	int ret;

	ret = sio_nvme_client_doorbells(g->cl, qp->info.qid, &qp->db);
	if (ret)
		return sio_err_wrap(-ret, "doorbells of queue %u", qp->info.qid);
	qp->dbmapped = true;
	if (qp->db.seg) {
		ret = register_bar(g, qp->db.va, qp->db.len, &dev);
		if (ret)
			return ret;
		qp->dbreg = true;
	} else {
		if (g->bar0_dev && g->bar0_va != qp->db.va)
			return sio_err_set(EINVAL, "BAR0 moved under the connection");
		if (!g->bar0_dev) {
			ret = register_bar(g, qp->db.va, qp->db.len, &g->bar0_dev);
			if (ret)
				return ret;
			g->bar0_va = qp->db.va;
		}
		dev = g->bar0_dev;
	}
	d->sq_db = (volatile uint32_t *)(dev + ((char *)qp->db.sq_db - (char *)qp->db.va));
	d->cq_db = (volatile uint32_t *)(dev + ((char *)qp->db.cq_db - (char *)qp->db.va));
	return 0;
}

int sio_gpu_nvme_open(struct sio_fabric *f, int64_t device, int gpu, struct sio_gpu_nvme **out)
{
	struct sio_errsave es;
	struct sio_gpu_nvme *g;
	int ret;

	if (!f || !out)
		return sio_err_set(EINVAL, "sio_gpu_nvme_open: NULL argument");
	ret = sio_gpu_use(gpu);
	if (ret)
		return ret;
	g = calloc(1, sizeof(*g));
	if (!g)
		return sio_err_set(ENOMEM, "out of memory");
	g->f = f;
	g->gpu = gpu;
	ret = sio_nvme_client_open(f, device, &g->cl);
	if (ret)
		goto fail;
	g->dev = sio_nvme_client_device(g->cl);
	sio_nvme_client_info(g->cl, &g->ci);
	ret = sio_device_info(g->dev, &g->di);
	if (ret)
		goto fail;
	*out = g;
	return 0;
fail:
	sio_err_save(&es);
	sio_gpu_nvme_close(g);
	sio_err_restore(&es);
	return ret;
}

void sio_gpu_nvme_close(struct sio_gpu_nvme *g)
{
	if (!g)
		return;
	while (g->qps)
		sio_gpu_qp_close(g->qps);
	if (g->bar0_dev)
		cudaHostUnregister(g->bar0_va);	/* the client's mapping: it unmaps */
	sio_nvme_client_close(g->cl);
	free(g);
}

struct sio_nvme_client *sio_gpu_nvme_client(struct sio_gpu_nvme *g)
{
	return g ? g->cl : NULL;
}

static uint64_t align_up(uint64_t v, uint64_t a)
{
	return (v + a - 1) & ~(a - 1);
}

/*
 * Where a queue pair's parts lie. The SQ, the CQ and the PRP lists (one
 * page per slot) are carved from one GPU segment and one host segment, as
 * the options place them; once both are mapped, an offset becomes a bus
 * address for the controller and a device pointer for kernels.
 */
struct qp_layout {
	uint32_t depth;
	uint64_t page;
	bool sq_in_host, cq_in_gpu;
	uint64_t sq_off, cq_off, prp_off;	/* in the memory each lives in */
	uint64_t gpu_len, host_len;		/* host_len 0: no host segment */
	uint64_t gbus, hbus;			/* the two as the controller sees them */
	char *gdev, *hdev;			/* and as the GPU does */
};

static uint64_t carve(uint64_t *len, uint64_t size)
{
	uint64_t off = *len;

	*len += size;
	return off;
}

static uint64_t sq_bus(const struct qp_layout *l)
{
	return (l->sq_in_host ? l->hbus : l->gbus) + l->sq_off;
}

static uint64_t cq_bus(const struct qp_layout *l)
{
	return (l->cq_in_gpu ? l->gbus : l->hbus) + l->cq_off;
}

/* The options checked; the depth rounded down to a power of two, capped by
 * the controller's MQES. */
static int qp_opts(const struct sio_gpu_nvme *g, const struct sio_gpu_qp_opts *opts,
		   struct sio_gpu_qp_opts *o, uint32_t *depth)
{
	*o = opts ? *opts : (struct sio_gpu_qp_opts){ .depth = 64 };
	if (o->prio > 3)
		return sio_err_set(EINVAL, "SQ priority %u out of range 0..3", o->prio);
	if (o->depth == 0)
		o->depth = 64;
	if (o->depth > g->ci.mqes)
		o->depth = g->ci.mqes;
	for (*depth = 2; *depth * 2 <= o->depth; *depth *= 2)
		;
	if (o->depth < 2)
		return sio_err_set(EINVAL, "queue depth %u: at least 2 entries", o->depth);
	return 0;
}

static void qp_layout(struct qp_layout *l, const struct sio_gpu_qp_opts *o, uint32_t depth,
		      uint64_t page)
{
	memset(l, 0, sizeof(*l));
	l->depth = depth;
	l->page = page;
	l->sq_in_host = o->sq_in_host;
	l->cq_in_gpu = o->cq_in_gpu;
	l->sq_off = carve(l->sq_in_host ? &l->host_len : &l->gpu_len,
			  align_up((uint64_t)depth * sizeof(struct sio_nvme_cmd), page));
	l->cq_off = carve(l->cq_in_gpu ? &l->gpu_len : &l->host_len,
			  align_up((uint64_t)depth * sizeof(struct sio_nvme_cpl), page));
	l->prp_off = carve(&l->gpu_len, (uint64_t)depth * page);
}

/* The GPU segment, mapped for the controller. */
static int qp_gpu_mem(struct sio_gpu_qp *qp, struct qp_layout *l)
{
	struct sio_gpu_nvme *g = qp->g;
	int ret;

	ret = sio_gpu_mem_create(g->f, l->gpu_len, g->gpu, &qp->gmem);
	if (ret)
		return ret;
	sio_segment_set_name(qp->gmem->seg, "gpu-nvme-queue");
	ret = sio_device_map(g->dev, qp->gmem->seg, &l->gbus);
	if (ret)
		return sio_err_wrap(-ret, "mapping GPU queue memory for the controller");
	qp->gmapped = true;
	l->gdev = qp->gmem->dptr;
	return 0;
}

/* The host segment, if any: zeroed, mapped for the controller and the GPU. */
static int qp_host_mem(struct sio_gpu_qp *qp, struct qp_layout *l)
{
	struct sio_gpu_nvme *g = qp->g;
	cudaError_t e;
	int ret;

	if (!l->host_len)
		return 0;
	ret = sio_segment_create(g->f, 0, l->host_len, 0, &qp->hseg);
	if (!ret)
		ret = sio_segment_map(qp->hseg, &qp->hva);
	if (!ret)
		ret = sio_device_map(g->dev, qp->hseg, &l->hbus);
	if (ret)
		return sio_err_wrap(-ret, "host queue memory");
	qp->hmapped = true;
	sio_segment_set_name(qp->hseg, "gpu-nvme-queue-host");
	memset(qp->hva, 0, l->host_len);
	e = cudaHostRegister(qp->hva, l->host_len, cudaHostRegisterMapped);
	if (e == cudaSuccess) {
		qp->hreg = true;
		e = cudaHostGetDevicePointer((void **)&l->hdev, qp->hva, 0);
	}
	if (e != cudaSuccess)
		return sio_gpu_cuda_err(e, "mapping host queue memory for the GPU");
	return 0;
}

/* What the kernels run on (the doorbells are already in @d). */
static void qp_desc(const struct sio_gpu_qp *qp, const struct qp_layout *l,
		    const struct sio_gpu_qp_opts *o, struct sio_gpu_queue_desc *d)
{
	const struct sio_nvme_ctrl_info *ci = &qp->g->ci;
	uint32_t ms = o->timeout_ms ? o->timeout_ms : ci->timeout_ms > 2000 ? ci->timeout_ms : 2000;

	d->sq = (l->sq_in_host ? l->hdev : l->gdev) + l->sq_off;
	d->cq = (l->cq_in_gpu ? l->gdev : l->hdev) + l->cq_off;
	d->prp = l->gdev + l->prp_off;
	d->prp_bus = l->gbus + l->prp_off;
	d->qid = qp->info.qid;
	d->depth = l->depth;
	d->page = (uint32_t)l->page;
	d->max_xfer = ci->max_xfer;
	d->timeout_ns = (uint64_t)ms * 1000000ull;
}

/*
 * Memory laid out and mapped, the queue pair created by the manager, its
 * doorbells mapped for the GPU, then the device-side queue built on it.
 */
int sio_gpu_qp_create(struct sio_gpu_nvme *g, const struct sio_gpu_qp_opts *opts,
		      struct sio_gpu_qp **out)
{
	struct sio_gpu_queue_desc d = { 0 };
	struct sio_gpu_qp_opts o;
	struct sio_errsave es;
	struct sio_gpu_qp *qp;
	struct qp_layout l;
	uint32_t depth = 0;
	int ret;

	if (!g || !out)
		return sio_err_set(EINVAL, "sio_gpu_qp_create: NULL argument");
	ret = qp_opts(g, opts, &o, &depth);
	if (ret)
		return ret;
	qp_layout(&l, &o, depth, g->ci.page_size);
	qp = calloc(1, sizeof(*qp));
	if (!qp)
		return sio_err_set(ENOMEM, "out of memory");
	qp->g = g;
	qp->info.depth = depth;
	qp->info.sq_kind = o.sq_in_host ? SIO_SEG_RAM : SIO_SEG_GPU;
	qp->info.cq_kind = o.cq_in_gpu ? SIO_SEG_GPU : SIO_SEG_RAM;
	qp->info.sq_place = o.sq_in_host ? SIO_PLACE_LOCAL :
			    sio_gpu_placement(sio_fabric_node_id(g->f), g->di.lender);

	ret = qp_gpu_mem(qp, &l);
	if (!ret)
		ret = qp_host_mem(qp, &l);
	if (!ret)
		ret = sio_nvme_ioq_create_at(g->cl, sq_bus(&l), cq_bus(&l), depth, o.prio,
					     &qp->info.qid);
	if (!ret) {
		qp->created = true;
		ret = doorbells_for_gpu(qp, &d);
	}
	if (!ret) {
		qp_desc(qp, &l, &o, &d);
		ret = sio_gpu_queue_alloc(&d, &qp->info.queue);
	}
	if (ret) {
		sio_err_save(&es);
		sio_gpu_qp_close(qp);	/* not on g->qps yet */
		sio_err_restore(&es);
		return ret;
	}
	qp->next = g->qps;
	g->qps = qp;
	*out = qp;
	return 0;
}

void sio_gpu_qp_close(struct sio_gpu_qp *qp)
{
	struct sio_errsave es;
	struct sio_gpu_qp **pp;
	struct sio_gpu_nvme *g;

	if (!qp)
		return;
	g = qp->g;
	for (pp = &g->qps; *pp; pp = &(*pp)->next)
		if (*pp == qp) {
			*pp = qp->next;
			break;
		}
	/* doorbells go before the queue (sio_nvme_client_doorbells()) */
	if (qp->dbreg)
		cudaHostUnregister(qp->db.va);
	if (qp->dbmapped)
		sio_nvme_client_doorbells_unmap(&qp->db);
	if (qp->created)
		sio_nvme_ioq_delete_at(g->cl, qp->info.qid);
	/* What follows may set messages of its own; a failed deletion's counts. */
	sio_err_save(&es);
	sio_gpu_queue_close(qp->info.queue);
	if (qp->hreg)
		cudaHostUnregister(qp->hva);
	if (qp->hseg) {
		if (qp->hmapped)
			sio_device_unmap(g->dev, qp->hseg);
		sio_segment_close(qp->hseg);
	}
	if (qp->gmem) {
		if (qp->gmapped)
			sio_device_unmap(g->dev, qp->gmem->seg);
		sio_gpu_mem_close(qp->gmem);
	}
	sio_err_restore(&es);
	free(qp);
}

int sio_gpu_qp_info(const struct sio_gpu_qp *qp, struct sio_gpu_qp_info *out)
{
	if (!qp || !out)
		return sio_err_set(EINVAL, "sio_gpu_qp_info: NULL argument");
	*out = qp->info;
	return 0;
}
