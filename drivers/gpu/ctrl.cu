/* SPDX-License-Identifier: MIT */
/*
 * A controller model that lives on the GPU: a persistent kernel whose
 * warps each own some queue pairs, fetch what the SQ tail doorbell covers,
 * execute it (null: no data, as Linux's null_blk; ram: copy between the
 * command's buffer and a RAM image in GPU memory) and post completions
 * with their phase and SQ head. Decode, range, PRP and status logic is
 * <smartio/nvme/model.h>'s, the CPU-side emulator's, so the host's unit
 * tests cover it. It exists to measure the GPU queue engine
 * (<smartio/gpu/queue.cuh>) where the controller is not the limit.
 *
 * Addresses: the model runs in the engine's own CUDA context, so a bus
 * address is the device pointer (sio_gpu_ctrl_bus()). A data pointer
 * outside the window the creator named, or a PRP list outside the queue's
 * own PRP pages, is a Data Transfer Error: a command cannot make the model
 * touch memory it was not given.
 */

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <cuda_runtime.h>
#include <smartio/gpu.h>
#include <smartio/gpu/queue.cuh>
#include <smartio/nvme/model.h>

/* priv.h's, with C linkage */
extern "C" int sio_gpu_cuda_err(cudaError_t e, const char *what);
extern "C" int sio_gpu_use(int gpu);
extern "C" bool sio__gpu_pools(void);	/* job.cu */
extern "C" int sio__gpu_job_load(void);	/* job.cu */

#define CTRL_PAGE	4096u
#define CTRL_MAX_Q	64u
#define CTRL_WARPS	8u	/* warps per block */

/* One queue pair as the model serves it; one warp owns it. */
struct ctrl_q {
	const struct sio_nvme_cmd *sq;
	struct sio_nvme_cpl *cq;
	const volatile uint32_t *sq_db;
	const volatile uint32_t *cq_db;
	uint64_t prp_lo, prp_hi;	/* the queue's PRP list pages */
	uint32_t depth;
	uint16_t qid;
	bool cq_host;			/* the host's memory: system-scope fences */
	uint32_t sq_head, cq_tail, cq_phase;
	unsigned long long cmds, errors, bad_db;
};

struct ctrl_dev {
	struct ctrl_q *q;
	uint32_t nq;
	int kind;
	uint8_t *ram;
	uint64_t ns_nlb;
	uint32_t lba_shift;
	uint64_t max_bytes;
	uint64_t win_lo, win_hi;	/* where commands' data may be */
	const volatile int *stop;	/* mapped host memory */
	uint64_t bound_ns;		/* the kernel's run time at most */
};

struct sio_gpu_ctrl {
	struct sio_gpu_ctrl_opts o;
	struct ctrl_dev dev;
	struct ctrl_q *hq;		/* host copy of the queue table */
	void *sq[CTRL_MAX_Q], *cq[CTRL_MAX_Q], *prp[CTRL_MAX_Q];
	void *prp_mem[CTRL_MAX_Q];	/* as allocated: prp[] is page aligned in it */
	uint32_t *db;			/* 2 per queue, GPU memory */
	struct sio_gpu_queue *queue[CTRL_MAX_Q];
	int *stop;
	cudaStream_t stream;
	bool running;
};

/* A 64-byte entry, fetched again from memory (the slot is rewritten each round). */
static __device__ void sq_load(const struct sio_nvme_cmd *e, struct sio_nvme_cmd *cmd)
{
	const uint4 *s = (const uint4 *)e;
	uint4 *d = (uint4 *)cmd;

	for (int i = 0; i < 4; i++)
		d[i] = __ldcv(s + i);
}

/* Copy @len bytes, dword aligned at least, bypassing L1 (other SMs write both sides). */
static __device__ void copy(void *dst, const void *src, uint64_t len)
{
	if (!(((uintptr_t)dst | (uintptr_t)src | len) & 15)) {
		for (uint64_t i = 0; i < len / 16; i++)
			__stcg((uint4 *)dst + i, __ldcg((const uint4 *)src + i));
		return;
	}
	for (uint64_t i = 0; i < len / 4; i++)
		__stcg((uint32_t *)dst + i, __ldcg((const uint32_t *)src + i));
}

/* One contiguous piece of a transfer, checked against the window. */
static __device__ uint16_t piece(const struct ctrl_dev *d, uint64_t bus, uint64_t len,
				 uint8_t *img, bool write)
{
	if (bus < d->win_lo || bus > d->win_hi || len > d->win_hi - bus)
		return SIO_NVME_MK_STATUS(0u, SIO_NVME_MODEL_SC_XFER);
	if (write)
		copy(img, (const void *)bus, len);
	else
		copy((void *)bus, img, len);
	return 0;
}

/* Walk PRP1/PRP2 (a list within the queue's PRP pages) and move the data. */
static __device__ uint16_t transfer(const struct ctrl_dev *d, const struct ctrl_q *q,
				   const struct sio_nvme_cmd *cmd, uint64_t bytes,
				   uint8_t *img, bool write)
{
	uint64_t second, first = CTRL_PAGE - (cmd->prp1 & (CTRL_PAGE - 1));
	uint16_t st = sio_nvme_model_prp_simple(cmd->prp1, cmd->prp2, bytes, CTRL_PAGE, &second);

	if (st && st != SIO_NVME_MODEL_ST(SIO_NVME_MODEL_SC_FIELD))
		return st;
	if (d->kind == SIO_GPU_CTRL_NULL)
		return 0;	/* null_blk: the command is checked, no data moves */
	if (first > bytes)
		first = bytes;
	if ((st = piece(d, cmd->prp1, first, img, write)))
		return st;
	if (second)
		return piece(d, cmd->prp2, second, img + first, write);
	if (bytes == first)
		return 0;
	/* a list: one page of entries at most (the engine's max_xfer) */
	uint64_t n = (bytes - first + CTRL_PAGE - 1) / CTRL_PAGE, left = bytes - first;

	if ((cmd->prp2 & 7) || cmd->prp2 < q->prp_lo || cmd->prp2 > q->prp_hi ||
	    n * 8 > q->prp_hi - cmd->prp2 || n > CTRL_PAGE / 8)
		return SIO_NVME_MK_STATUS(0u, SIO_NVME_MODEL_SC_XFER);
	img += first;
	for (uint64_t i = 0; i < n; i++) {
		uint64_t e = __ldcv((const unsigned long long *)cmd->prp2 + i);
		uint64_t l = left < CTRL_PAGE ? left : CTRL_PAGE;

		if (e & (CTRL_PAGE - 1))
			return SIO_NVME_MODEL_ST(SIO_NVME_MODEL_SC_PRP_OFF);
		if ((st = piece(d, e, l, img, write)))
			return st;
		img += l;
		left -= l;
	}
	return 0;
}

/* Execute one command: the CPU model's checks, then the data (or none). */
static __device__ uint16_t execute(const struct ctrl_dev *d, const struct ctrl_q *q,
				  const struct sio_nvme_cmd *cmd)
{
	struct sio_nvme_model_rw rw;
	uint16_t st;

	if ((cmd->flags & 3u) || (cmd->flags >> 6) != SIO_NVME_PSDT_PRP)
		return SIO_NVME_MODEL_ST(SIO_NVME_MODEL_SC_FIELD);	/* no fused, no SGL */
	if (cmd->opcode == SIO_NVME_MODEL_OP_FLUSH)
		return 0;
	if (cmd->opcode != SIO_NVME_CMD_READ && cmd->opcode != SIO_NVME_CMD_WRITE)
		return SIO_NVME_MODEL_ST(SIO_NVME_MODEL_SC_OPCODE);
	if (cmd->nsid != 1)
		return SIO_NVME_MODEL_ST(SIO_NVME_MODEL_SC_NS);
	st = sio_nvme_model_rw_decode(cmd, d->lba_shift, d->ns_nlb, d->max_bytes, &rw);
	if (st)
		return st;
	return transfer(d, q, cmd, rw.bytes, d->ram + (rw.slba << d->lba_shift),
			cmd->opcode == SIO_NVME_CMD_WRITE);
}

/*
 * Post one completion at CQ slot @at: DW0..DW2 first, then the dword with
 * the phase tag, after a fence that also orders the command's data
 * (written by this thread) before it. System scope when the CQ is host
 * memory, as a device posting over PCIe is ordered.
 */
static __device__ void post(const struct ctrl_q *q, uint32_t at, uint32_t phase,
			    uint16_t cid, uint16_t sq_head, uint16_t st)
{
	struct sio_nvme_cpl c;
	volatile uint32_t *w = (volatile uint32_t *)&q->cq[at];

	sio_nvme_model_cpl(&c, cid, q->qid, sq_head, 0);
	c.status = sio_nvme_model_cpl_status(st, phase);
	w[0] = c.result;
	w[1] = c.rsvd;
	w[2] = (uint32_t)c.sq_head | (uint32_t)c.sq_id << 16;
	if (q->cq_host)
		__threadfence_system();
	else
		__threadfence();
	w[3] = (uint32_t)c.cid | (uint32_t)c.status << 16;
}

/*
 * Serve one queue with the calling warp: lane 0 reads the doorbells, up
 * to 32 entries run one per lane, lane 0 moves head and tail.
 * Return: whether anything was done.
 */
static __device__ bool serve(const struct ctrl_dev *d, struct ctrl_q *q, uint32_t lane)
{
	uint32_t head = q->sq_head, tail = q->cq_tail, phase = q->cq_phase;
	int32_t n = 0;

	if (lane == 0) {
		uint32_t cqh = *q->cq_db;

		n = sio_nvme_model_sq_pending(head, *q->sq_db, q->depth);
		if (n < 0 || cqh >= q->depth) {
			q->bad_db++;	/* ignored, as a write past the queue is */
			n = 0;
		} else {
			uint32_t room = (cqh + q->depth - 1u - tail) % q->depth;

			n = min(min((uint32_t)n, room), 32u);
		}
	}
	n = __shfl_sync(0xffffffffu, n, 0);
	if (!n)
		return false;
	/* the doorbell before the entries it covers (acquire) */
	__threadfence();
	if (lane < (uint32_t)n) {
		struct sio_nvme_cmd cmd;
		uint32_t at = tail + lane, ph = phase;
		uint16_t st;

		sq_load(&q->sq[(head + lane) % q->depth], &cmd);
		st = execute(d, q, &cmd);
		if (at >= q->depth) {
			at -= q->depth;
			ph ^= 1u;
		}
		post(q, at, ph, cmd.cid, (uint16_t)((head + n) % q->depth), st);
		if (st)
			atomicAdd(&q->errors, 1ull);
	}
	__syncwarp();
	if (lane == 0) {
		q->sq_head = (head + n) % q->depth;
		for (int32_t i = 0; i < n; i++)
			sio_nvme_model_cq_advance(&tail, &phase, q->depth);
		q->cq_tail = tail;
		q->cq_phase = phase;
		q->cmds += n;
	}
	__syncwarp();
	return true;
}

/* The controller: runs until the host sets *stop, or its deadline. */
static __global__ void ctrl_kernel(struct ctrl_dev d)
{
	uint32_t lane = threadIdx.x & 31u;
	uint32_t warp = (blockIdx.x * blockDim.x + threadIdx.x) >> 5;
	uint32_t nwarps = (gridDim.x * blockDim.x) >> 5, ns = 32;
	uint64_t deadline = sio_gpu_now_ns() + d.bound_ns;

	if (warp >= d.nq)
		return;
	for (uint32_t it = 0;; it++) {
		bool busy = false;
		int quit = 0;

		for (uint32_t i = warp; i < d.nq; i += nwarps)
			busy |= serve(&d, &d.q[i], lane);
		/* the stop flag is host memory, a PCIe read: every 64th pass,
		 * busy or idle (at most about 64 us late) */
		if ((it & 63u) == 0) {
			if (lane == 0)
				quit = *d.stop || sio_gpu_now_ns() > deadline;
			if (__shfl_sync(0xffffffffu, quit, 0))
				return;
		}
		if (busy) {
			ns = 32;
		} else {
			/* idle: back off, but stay within a microsecond of a doorbell */
			__nanosleep(ns);
			if (ns < 1024)
				ns <<= 1;
		}
	}
}

/* Every RAM image word w holds sio_gpu_pattern(seed, w), as gpu-read's data. */
static __global__ void fill_kernel(uint64_t *w, uint64_t n, uint64_t seed)
{
	for (uint64_t i = blockIdx.x * (uint64_t)blockDim.x + threadIdx.x; i < n;
	     i += (uint64_t)gridDim.x * blockDim.x)
		w[i] = sio_gpu_pattern(seed, i);
}

static int opts_check(const struct sio_gpu_ctrl_opts *o)
{
	if (o->kind != SIO_GPU_CTRL_NULL && o->kind != SIO_GPU_CTRL_RAM)
		return sio_err_set(EINVAL, "GPU controller model %d: neither null nor ram", o->kind);
	if (o->lba_size != 512 && o->lba_size != 4096)
		return sio_err_set(EINVAL, "GPU controller model: block size %u is neither 512 "
				   "nor 4096", o->lba_size);
	if (!o->ns_bytes || o->ns_bytes % o->lba_size)
		return sio_err_set(EINVAL, "GPU controller model: namespace of %llu bytes is not "
				   "a multiple of its %u-byte blocks", (unsigned long long)o->ns_bytes,
				   o->lba_size);
	if (!o->nq || o->nq > CTRL_MAX_Q)
		return sio_err_set(EINVAL, "GPU controller model: %u queue pairs, 1..%u",
				   o->nq, CTRL_MAX_Q);
	if (o->depth < 2 || o->depth > 65536 || (o->depth & (o->depth - 1)))
		return sio_err_set(EINVAL, "GPU controller model: depth %u is not a power of two "
				   "in 2..65536", o->depth);
	if (!o->sms)
		return sio_err_set(EINVAL, "GPU controller model: it needs at least one SM "
				   "(sms = 0)");
	if (!o->data || !o->data_size)
		return sio_err_set(EINVAL, "GPU controller model: no data window (data, "
				   "data_size): commands could reach nothing");
	return 0;
}

/* Memory for a queue: GPU memory, or mapped host memory (its device pointer). */
static cudaError_t qmem(void **p, size_t len, bool host)
{
	cudaError_t e;
	void *h;

	if (!host) {
		e = cudaMalloc(p, len);
		return e == cudaSuccess ? cudaMemset(*p, 0, len) : e;
	}
	e = cudaHostAlloc(&h, len, cudaHostAllocMapped);
	if (e != cudaSuccess)
		return e;
	memset(h, 0, len);
	return cudaHostGetDevicePointer(p, h, 0);
}

static void qfree(void *p, bool host)
{
	void *h;

	if (!p)
		return;
	if (!host) {
		cudaFree(p);
		return;
	}
	/* a mapped allocation's device pointer is its host pointer (UVA) */
	h = p;
	cudaFreeHost(h);
}

/* Queue pair @i: its memory, the engine's view of it, the model's. */
static int queue_make(struct sio_gpu_ctrl *c, uint32_t i)
{
	const struct sio_gpu_ctrl_opts *o = &c->o;
	struct sio_gpu_queue_desc qd = {};
	struct ctrl_q *m = &c->hq[i];
	cudaError_t e;

	e = qmem(&c->sq[i], (size_t)o->depth * 64, o->sq_in_host);
	if (e == cudaSuccess)
		e = qmem(&c->cq[i], (size_t)o->depth * 16, o->cq_in_host);
	/* cudaMalloc() aligns to 256 bytes only: a page more, then align */
	if (e == cudaSuccess)
		e = qmem(&c->prp_mem[i], ((size_t)o->depth + 1) * CTRL_PAGE, false);
	if (e != cudaSuccess)
		return sio_gpu_cuda_err(e, "allocating the GPU controller model's queues");
	c->prp[i] = (void *)(((uintptr_t)c->prp_mem[i] + CTRL_PAGE - 1) &
			     ~(uintptr_t)(CTRL_PAGE - 1));
	qd.sq = c->sq[i];
	qd.cq = c->cq[i];
	qd.sq_db = c->db + 2 * i;
	qd.cq_db = c->db + 2 * i + 1;
	qd.prp = c->prp[i];
	qd.prp_bus = (uint64_t)(uintptr_t)c->prp[i];
	qd.qid = (uint16_t)(i + 1);
	qd.depth = o->depth;
	qd.page = CTRL_PAGE;
	qd.max_xfer = (uint32_t)c->dev.max_bytes;
	qd.timeout_ns = (uint64_t)o->timeout_ms * 1000000ull;
	*m = (struct ctrl_q){ .sq = (const struct sio_nvme_cmd *)c->sq[i],
			      .cq = (struct sio_nvme_cpl *)c->cq[i],
			      .sq_db = qd.sq_db, .cq_db = qd.cq_db,
			      .prp_lo = qd.prp_bus,
			      .prp_hi = qd.prp_bus + (uint64_t)o->depth * CTRL_PAGE,
			      .depth = o->depth, .qid = qd.qid, .cq_host = o->cq_in_host,
			      .cq_phase = 1 };
	return sio_gpu_queue_alloc(&qd, &c->queue[i]);
}

/* The RAM image (ram) and the table the kernel reads. */
static int dev_make(struct sio_gpu_ctrl *c)
{
	const struct sio_gpu_ctrl_opts *o = &c->o;
	cudaError_t e = cudaSuccess;

	c->dev.nq = o->nq;
	c->dev.kind = o->kind;
	c->dev.lba_shift = o->lba_size == 4096 ? 12 : 9;
	c->dev.ns_nlb = o->ns_bytes / o->lba_size;
	c->dev.max_bytes = 128u << 10;
	c->dev.win_lo = (uint64_t)(uintptr_t)o->data;
	c->dev.win_hi = c->dev.win_lo + o->data_size;
	if (o->kind == SIO_GPU_CTRL_RAM) {
		e = cudaMalloc((void **)&c->dev.ram, o->ns_bytes);
		if (e == cudaSuccess)
			e = cudaMemset(c->dev.ram, 0, o->ns_bytes);
	}
	if (e == cudaSuccess)
		e = cudaMalloc((void **)&c->db, (size_t)o->nq * 2 * sizeof(uint32_t));
	if (e == cudaSuccess)
		e = cudaMemset(c->db, 0, (size_t)o->nq * 2 * sizeof(uint32_t));
	if (e == cudaSuccess)
		e = cudaHostAlloc((void **)&c->stop, sizeof(*c->stop), cudaHostAllocMapped);
	if (e == cudaSuccess)
		e = cudaMalloc((void **)&c->dev.q, (size_t)o->nq * sizeof(struct ctrl_q));
	if (e == cudaSuccess)
		e = cudaStreamCreateWithFlags(&c->stream, cudaStreamNonBlocking);
	if (e != cudaSuccess)
		return sio_gpu_cuda_err(e, "allocating the GPU controller model");
	*c->stop = 0;
	c->dev.stop = c->stop;
	return 0;
}

extern "C" int sio_gpu_ctrl_create(const struct sio_gpu_ctrl_opts *o, struct sio_gpu_ctrl **out)
{
	struct sio_gpu_ctrl *c;
	int ret;

	if (!o || !out)
		return sio_err_set(EINVAL, "sio_gpu_ctrl_create: NULL argument");
	if ((ret = opts_check(o)) || (ret = sio_gpu_use(o->gpu)))
		return ret;
	/* without them sio_gpu_run_job() frees with cudaFree(), which would
	 * wait for the model's kernel for good */
	if (!sio__gpu_pools())
		return sio_err_set(ENOTSUP, "GPU controller model: GPU %d has no memory pools "
				   "(cudaDevAttrMemoryPoolsSupported), which jobs next to a "
				   "persistent kernel need", o->gpu);
	c = (struct sio_gpu_ctrl *)calloc(1, sizeof(*c));
	if (c)
		c->hq = (struct ctrl_q *)calloc(o->nq, sizeof(*c->hq));
	if (!c || !c->hq) {
		free(c);
		return sio_err_set(ENOMEM, "out of memory");
	}
	c->o = *o;
	ret = dev_make(c);
	for (uint32_t i = 0; !ret && i < o->nq; i++)
		ret = queue_make(c, i);
	if (ret) {
		sio_gpu_ctrl_close(c);
		return ret;
	}
	*out = c;
	return 0;
}

extern "C" struct sio_gpu_queue *sio_gpu_ctrl_queue(const struct sio_gpu_ctrl *c, uint32_t i)
{
	return c && i < c->o.nq ? c->queue[i] : NULL;
}

extern "C" uint64_t sio_gpu_ctrl_bus(const struct sio_gpu_ctrl *c, const void *dptr)
{
	(void)c;
	return (uint64_t)(uintptr_t)dptr;
}

extern "C" int sio_gpu_ctrl_fill(struct sio_gpu_ctrl *c, uint64_t seed)
{
	cudaError_t e;

	if (!c || c->o.kind != SIO_GPU_CTRL_RAM || c->running)
		return sio_err_set(EINVAL, "sio_gpu_ctrl_fill: a stopped ram model only");
	fill_kernel<<<256, 256, 0, c->stream>>>((uint64_t *)c->dev.ram, c->o.ns_bytes / 8, seed);
	e = cudaGetLastError();
	if (e == cudaSuccess)
		e = cudaStreamSynchronize(c->stream);
	return e == cudaSuccess ? 0 : sio_gpu_cuda_err(e, "filling the RAM image");
}

extern "C" int sio_gpu_ctrl_start(struct sio_gpu_ctrl *c)
{
	uint64_t bound = (c && c->o.max_seconds ? c->o.max_seconds : 600) * 1000000000ull;
	cudaError_t e;
	int ret;

	if (!c || c->running)
		return sio_err_set(EINVAL, "sio_gpu_ctrl_start: NULL, or running already");
	*(volatile int *)c->stop = 0;
	/* the queues go on where the last run left them (so do the engine's
	 * tickets); only the counters start again */
	for (uint32_t i = 0; i < c->o.nq; i++)
		c->hq[i].cmds = c->hq[i].errors = c->hq[i].bad_db = 0;
	e = cudaMemcpyAsync(c->dev.q, c->hq, (size_t)c->o.nq * sizeof(*c->hq),
			    cudaMemcpyHostToDevice, c->stream);
	if (e == cudaSuccess)
		e = cudaStreamSynchronize(c->stream);
	if (e != cudaSuccess)
		return sio_gpu_cuda_err(e, "starting the GPU controller model");
	/* a job's first launch must not wait for the model (job.cu) */
	ret = sio__gpu_job_load();
	if (ret)
		return ret;
	/* bounded even if the host dies without stopping it */
	c->dev.bound_ns = bound;
	ctrl_kernel<<<c->o.sms, CTRL_WARPS * 32, 0, c->stream>>>(c->dev);
	e = cudaGetLastError();
	if (e != cudaSuccess)
		return sio_gpu_cuda_err(e, "launching the GPU controller model");
	c->running = true;
	return 0;
}

extern "C" int sio_gpu_ctrl_stop(struct sio_gpu_ctrl *c, struct sio_gpu_ctrl_stats *st)
{
	cudaError_t e;

	if (!c || !c->running)
		return sio_err_set(EINVAL, "sio_gpu_ctrl_stop: NULL, or not running");
	*(volatile int *)c->stop = 1;
	e = cudaStreamSynchronize(c->stream);
	c->running = false;
	if (e == cudaSuccess)
		e = cudaMemcpyAsync(c->hq, c->dev.q, (size_t)c->o.nq * sizeof(*c->hq),
				    cudaMemcpyDeviceToHost, c->stream);
	if (e == cudaSuccess)
		e = cudaStreamSynchronize(c->stream);
	if (e != cudaSuccess)
		return sio_gpu_cuda_err(e, "stopping the GPU controller model");
	if (st) {
		memset(st, 0, sizeof(*st));
		for (uint32_t i = 0; i < c->o.nq; i++) {
			st->commands += c->hq[i].cmds;
			st->errors += c->hq[i].errors;
			st->bad_doorbells += c->hq[i].bad_db;
		}
	}
	return 0;
}

extern "C" void sio_gpu_ctrl_close(struct sio_gpu_ctrl *c)
{
	if (!c)
		return;
	if (c->running)
		sio_gpu_ctrl_stop(c, NULL);
	for (uint32_t i = 0; i < c->o.nq; i++) {
		sio_gpu_queue_close(c->queue[i]);
		qfree(c->sq[i], c->o.sq_in_host);
		qfree(c->cq[i], c->o.cq_in_host);
		qfree(c->prp_mem[i], false);
	}
	if (c->stream)
		cudaStreamDestroy(c->stream);
	cudaFree(c->dev.q);
	cudaFree(c->dev.ram);
	cudaFree(c->db);
	if (c->stop)
		cudaFreeHost(c->stop);
	free(c->hq);
	free(c);
}
