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

int sio_gpu_qp_create(struct sio_gpu_nvme *g, const struct sio_gpu_qp_opts *opts,
		      struct sio_gpu_qp **out)
{
	struct sio_gpu_qp_opts o = { .depth = 64 };
	struct sio_gpu_queue_desc d;
	struct sio_errsave es;
	struct sio_gpu_qp *qp;
	uint64_t page, sq_sz, cq_sz, goff = 0, hoff = 0, gbus = 0, hbus = 0;
	uint64_t sq_off, cq_off, prp_off, sq_bus, cq_bus;
	char *hdev = NULL;
	uint32_t depth;
	uint16_t qid;
	cudaError_t e;
	int ret;

	if (!g || !out)
		return sio_err_set(EINVAL, "sio_gpu_qp_create: NULL argument");
	if (opts)
		o = *opts;
	if (o.prio > 3)
		return sio_err_set(EINVAL, "SQ priority %u out of range 0..3", o.prio);
	if (o.depth == 0)
		o.depth = 64;
	if (o.depth > g->ci.mqes)
		o.depth = g->ci.mqes;
	for (depth = 2; depth * 2 <= o.depth; depth *= 2)
		;
	if (o.depth < 2)
		return sio_err_set(EINVAL, "queue depth %u: at least 2 entries", o.depth);
	page = g->ci.page_size;
	sq_sz = align_up((uint64_t)depth * 64, page);
	cq_sz = align_up((uint64_t)depth * 16, page);

	qp = calloc(1, sizeof(*qp));
	if (!qp)
		return sio_err_set(ENOMEM, "out of memory");
	qp->g = g;
	/* GPU memory: SQ, CQ, PRP lists as chosen; host memory the rest. */
	sq_off = o.sq_in_host ? hoff : goff;
	if (o.sq_in_host)
		hoff += sq_sz;
	else
		goff += sq_sz;
	cq_off = o.cq_in_gpu ? goff : hoff;
	if (o.cq_in_gpu)
		goff += cq_sz;
	else
		hoff += cq_sz;
	prp_off = goff;
	goff += (uint64_t)depth * page;

	ret = sio_gpu_mem_create(g->f, goff, g->gpu, &qp->gmem);
	if (ret)
		goto fail;
	sio_segment_set_name(qp->gmem->seg, "gpu-nvme-queue");
	ret = sio_device_map(g->dev, qp->gmem->seg, &gbus);
	if (ret) {
		ret = sio_err_wrap(-ret, "mapping GPU queue memory for the controller");
		goto fail;
	}
	qp->gmapped = true;
	if (hoff) {
		ret = sio_segment_create(g->f, 0, hoff, 0, &qp->hseg);
		if (!ret)
			ret = sio_segment_map(qp->hseg, &qp->hva);
		if (!ret)
			ret = sio_device_map(g->dev, qp->hseg, &hbus);
		if (ret) {
			ret = sio_err_wrap(-ret, "host queue memory");
			goto fail;
		}
		qp->hmapped = true;
		sio_segment_set_name(qp->hseg, "gpu-nvme-queue-host");
		memset(qp->hva, 0, hoff);
		e = cudaHostRegister(qp->hva, hoff, cudaHostRegisterMapped);
		if (e == cudaSuccess) {
			qp->hreg = true;
			e = cudaHostGetDevicePointer((void **)&hdev, qp->hva, 0);
		}
		if (e != cudaSuccess) {
			ret = sio_gpu_cuda_err(e, "mapping host queue memory for the GPU");
			goto fail;
		}
	}
	sq_bus = (o.sq_in_host ? hbus : gbus) + sq_off;
	cq_bus = (o.cq_in_gpu ? gbus : hbus) + cq_off;

	ret = sio_nvme_ioq_create_at(g->cl, sq_bus, cq_bus, depth, o.prio, &qid);
	if (ret)
		goto fail;
	qp->created = true;
	qp->info.qid = qid;
	memset(&d, 0, sizeof(d));
	ret = doorbells_for_gpu(qp, &d);
	if (ret)
		goto fail;
	qp->info.depth = depth;
	qp->info.sq_kind = o.sq_in_host ? SIO_SEG_RAM : SIO_SEG_GPU;
	qp->info.cq_kind = o.cq_in_gpu ? SIO_SEG_GPU : SIO_SEG_RAM;
	qp->info.sq_place = o.sq_in_host ? SIO_PLACE_LOCAL :
			    sio_gpu_placement(sio_fabric_node_id(g->f), g->di.lender);

	d.sq = (o.sq_in_host ? hdev : (char *)qp->gmem->dptr) + sq_off;
	d.cq = (o.cq_in_gpu ? (char *)qp->gmem->dptr : hdev) + cq_off;
	d.prp = (char *)qp->gmem->dptr + prp_off;
	d.prp_bus = gbus + prp_off;
	d.qid = qid;
	d.depth = depth;
	d.page = (uint32_t)page;
	d.max_xfer = g->ci.max_xfer;
	d.timeout_ns = (uint64_t)(o.timeout_ms ? o.timeout_ms :
				  (g->ci.timeout_ms > 2000 ? g->ci.timeout_ms : 2000)) * 1000000ull;
	ret = sio_gpu_queue_alloc(&d, &qp->info.queue);
	if (ret)
		goto fail;
	qp->next = g->qps;
	g->qps = qp;
	*out = qp;
	return 0;
fail:
	sio_err_save(&es);
	sio_gpu_qp_close(qp);	/* not on g->qps yet */
	sio_err_restore(&es);
	return ret;
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
