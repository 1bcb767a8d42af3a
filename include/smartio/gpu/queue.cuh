/* SPDX-License-Identifier: MIT */
#ifndef SMARTIO_GPU_QUEUE_CUH
#define SMARTIO_GPU_QUEUE_CUH

/**
 * DOC: GPU queues, the device side
 *
 * The calls a CUDA kernel makes on a queue pair that sio_gpu_qp_create()
 * (or sio_gpu_queue_alloc()) set up: kernels include this header, host
 * code needs only <smartio/gpu.h>. Command building, PRP lists, fences and
 * doorbell stores are <smartio/nvme/queue.h>'s; what is added here is
 * sharing one queue pair among many threads.
 *
 * Many GPU threads share one queue pair: each takes a ticket (atomicAdd),
 * which names its SQ slot and command id; the thread that wins the doorbell
 * lock rings for every entry written so far (batched doorbells); whoever
 * holds the CQ lock reaps every posted completion and hands each to its
 * waiter by command id. Every wait is bounded by the queue's timeout
 * (globaltimer) and ends in -ETIMEDOUT, which fails the queue, rather than
 * hanging the GPU. A failed queue stays failed (a late completion could
 * otherwise complete the next user of its slot): destroy it and make
 * another.
 *
 * Tickets are 32-bit and wrap: every comparison is modulo 2^32, so a queue
 * runs for any number of commands.
 *
 * Rule: a thread holds at most one ticket it has not waited on. Its next
 * submit may need the slot its own unwaited command holds, which only its
 * sio_gpu_wait() frees: the submit then times out and fails the queue
 * (bounded, never a hang). sio_gpu_rw() and its wrappers obey the rule by
 * construction; callers of the split sio_gpu_submit()/sio_gpu_wait() must
 * wait before they submit again.
 *
 * Data a read brought in is visible to the thread that waited for it (and,
 * after a __syncthreads() or fence, to others) as soon as sio_gpu_wait()
 * returns 0: the controller posts the completion only after the data
 * landed.
 *
 * Device functions return 0, -EIO with the NVMe status, -ETIMEDOUT,
 * -EINVAL, or the queue's failure: -ETIMEDOUT, or -EFAULT when the
 * controller reported that it could not read an SQ entry (its log says why,
 * e.g. nvme-emu without the GPU plugin).
 *
 * Outside nvcc only the queue's layout is declared: libsmartio-gpu builds
 * it on the host.
 */

#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <smartio/gpu.h>
#include <smartio/nvme/types.h>
#include <smartio/nvme/queue.h>

/**
 * struct sio_gpu_queue - a queue pair as GPU threads drive it
 *
 * Lives in GPU memory; filled by sio_gpu_queue_alloc(). Kernels take a
 * pointer to it and use only the device functions below.
 */
struct sio_gpu_queue {
	/* private: the engine's, for the device functions below */
	struct sio_nvme_cmd *sq;		/* device pointer */
	volatile struct sio_nvme_cpl *cq;	/* device pointer (GPU or host memory) */
	volatile uint32_t *sq_db;		/* device pointer into BAR0 */
	volatile uint32_t *cq_db;
	uint64_t *prp;				/* depth PRP list pages */
	uint64_t prp_bus;			/* their bus address */
	uint32_t depth;				/* entries, a power of two */
	uint32_t shift;				/* log2(depth) */
	uint32_t page;				/* controller memory page size */
	uint32_t max_xfer;			/* bytes per command at most */
	uint64_t timeout_ns;			/* bound on every wait */
	uint16_t qid;
	volatile int32_t *failed_host;		/* mirror of @failed in mapped host
						 * memory (device pointer), or NULL */
	/* state shared by the threads */
	uint32_t ticket;			/* next ticket */
	uint32_t rung;				/* tickets the SQ doorbell covers */
	uint32_t sq_lock, cq_lock;
	uint32_t cq_head, cq_phase;
	uint32_t cq_seen;			/* completions consumed (from the
						 * first ticket) */
	int32_t failed;				/* 0, or the error that failed it */
	uint32_t spurious;			/* completions for no command */
	/*
	 * Per slot (depth entries each). Slot p serves tickets t with
	 * t % depth == p in turn; all markers are whole tickets compared for
	 * equality, so they wrap with the ticket, and each starts as if the
	 * ticket one round before the first had used the slot.
	 */
	uint32_t *round;			/* the ticket allowed to use it next */
	uint32_t *ready;			/* ticket + 1 once the entry is written */
	uint32_t *tick;				/* ticket occupying it */
	uint32_t *done;				/* ticket + 1 once completed */
	uint16_t *status;			/* NVMe status (SCT << 8 | SC) */
};

#if defined(__CUDACC__)
/** sio_gpu_now_ns() - the GPU's global timer in ns, the clock of every wait */
static __device__ __forceinline__ uint64_t sio_gpu_now_ns(void)
{
	uint64_t t;

	asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
	return t;
}

/**
 * sio_gpu_backoff() - sleep *@ns between polls, doubling it up to 2 us
 * @ns: the next sleep, kept by the caller
 *
 * A spinning warp steals issue slots from the threads that do the work.
 */
static __device__ __forceinline__ void sio_gpu_backoff(uint32_t *ns)
{
#if __CUDA_ARCH__ >= 700
	__nanosleep(*ns);
#endif
	if (*ns < 2048)
		*ns <<= 1;
}

/** sio_gpu_ld() - a load that polls memory, never a value held in a register */
static __device__ __forceinline__ uint32_t sio_gpu_ld(const volatile uint32_t *p)
{
	return *p;
}

/**
 * sio_gpu_trylock() - take a queue lock if free (acquire); false if held
 * @l: the lock word
 *
 * A plain load first: every waiting thread tries the queue's locks on each
 * poll, and an atomic on one address from thousands of threads queues up
 * in L2 behind the holder's own accesses.
 */
static __device__ __forceinline__ bool sio_gpu_trylock(uint32_t *l)
{
	if (sio_gpu_ld(l) != 0u || atomicCAS(l, 0u, 1u) != 0u)
		return false;
	__threadfence();
	return true;
}

/** sio_gpu_unlock() - release a queue lock (release) */
static __device__ __forceinline__ void sio_gpu_unlock(uint32_t *l)
{
	__threadfence();
	atomicExch(l, 0u);
}

/**
 * sio_gpu_fail() - fail the queue, once
 * @q: queue
 * @err: the failure, unless an earlier one stands
 *
 * Every waiter sees it and returns. The host reads the mirror
 * (sio_gpu_queue_failed()) without waiting for the kernel.
 * Return: the queue's failure (the first one).
 */
static __device__ __forceinline__ int sio_gpu_fail(struct sio_gpu_queue *q, int err)
{
	int v;

	atomicCAS((int *)&q->failed, 0, err);
	v = (int)sio_gpu_ld((volatile uint32_t *)&q->failed);
	if (q->failed_host) {
		*q->failed_host = v;
		__threadfence_system();
	}
	return v ? v : err;
}

/** sio_gpu_failed() - the queue's failure, 0 while it is healthy */
static __device__ __forceinline__ int sio_gpu_failed(struct sio_gpu_queue *q)
{
	return (int)sio_gpu_ld((volatile uint32_t *)&q->failed);
}

/*
 * Entries the ringer and the reaper look at per round trip. Their loads are
 * independent and issued together, so a batch costs one memory latency (a
 * PCIe round trip when the CQ is host memory) where one entry after the
 * other cost one each.
 */
#define SIO_GPU_BATCH 8u

/**
 * sio_gpu_leader() - whether the calling thread acts for its warp's threads
 * @q: the queue they are here with
 *
 * The lowest of the warp's threads here with the same queue acts for them.
 * The others need not try a lock it will take for them, which would queue
 * their atomics behind its work on the same word.
 */
static __device__ __forceinline__ bool sio_gpu_leader(const struct sio_gpu_queue *q)
{
#if __CUDA_ARCH__ >= 700
	uint32_t lane, peers = __match_any_sync(__activemask(),
					       (unsigned long long)(uintptr_t)q);

	asm("mov.u32 %0, %%laneid;" : "=r"(lane));
	return (int)lane == __ffs(peers) - 1;
#else
	return true;
#endif
}

/**
 * sio_gpu_ready_run() - entries written and not yet rung, up to one batch
 * @q: queue
 * @n: the first ticket not rung
 *
 * Return: how many consecutive tickets from @n on have their entries
 * written, at most SIO_GPU_BATCH.
 */
static __device__ __forceinline__ uint32_t sio_gpu_ready_run(struct sio_gpu_queue *q, uint32_t n)
{
	uint32_t r[SIO_GPU_BATCH], k, c = 0;
	bool run = true;

	/* unrolled with constant indices: the batch stays in registers */
#pragma unroll
	for (k = 0; k < SIO_GPU_BATCH; k++)
		r[k] = sio_gpu_ld(&q->ready[(n + k) & (q->depth - 1)]);
#pragma unroll
	for (k = 0; k < SIO_GPU_BATCH; k++) {
		run = run && r[k] == n + k + 1;
		c += run;
	}
	return c;
}

/** sio_gpu_sq_ring() - ring for every consecutive written entry (batched), if no one else is */
static __device__ __forceinline__ void sio_gpu_sq_ring(struct sio_gpu_queue *q)
{
	uint32_t n, k, start;

	if (!sio_gpu_leader(q) || !sio_gpu_trylock(&q->sq_lock))
		return;
	start = n = sio_gpu_ld(&q->rung);
	do {
		k = sio_gpu_ready_run(q, n);
		n += k;
	} while (k == SIO_GPU_BATCH);
	if (n != start) {
		/* the entries (written by any thread) before the tail */
		sio_nvme_wmb();
		sio_nvme_mmio_write32(q->sq_db, n & (q->depth - 1));
		/* the tail leaves before the next holder's: never an older
		 * tail after a newer one */
		__threadfence_system();
		*(volatile uint32_t *)&q->rung = n;
	}
	sio_gpu_unlock(&q->sq_lock);
}

/**
 * sio_gpu_cq_batch() - reap the posted completions of the next batch
 * @q: queue, its CQ lock held
 * @head: the CQ entry to start at
 * @phase: the phase tag a posted entry there has
 *
 * Only an entry's last dword is read: its command id and status with the
 * phase tag, in one untorn load. Completions may be posted out of order
 * (the GPU model posts a pass's entries from parallel lanes): the batch ends
 * at the first entry not yet posted.
 * Return: the entries reaped, at most SIO_GPU_BATCH and q->depth.
 */
static __device__ __forceinline__ uint32_t sio_gpu_cq_batch(struct sio_gpu_queue *q,
							    uint32_t head, uint32_t phase)
{
	uint32_t w3[SIO_GPU_BATCH], t[SIO_GPU_BATCH], d[SIO_GPU_BATCH], k, n = 0;
	uint32_t lim = q->depth < SIO_GPU_BATCH ? q->depth : SIO_GPU_BATCH;
	bool run = true;

	/* unrolled with constant indices: the batch stays in registers */
#pragma unroll
	for (k = 0; k < SIO_GPU_BATCH; k++) {
		uint32_t at = (head + k) & (q->depth - 1);

		if (k < lim)
			w3[k] = ((const volatile uint32_t *)&q->cq[at])[3];
	}
#pragma unroll
	for (k = 0; k < SIO_GPU_BATCH; k++) {
		uint32_t ph = head + k >= q->depth ? phase ^ 1u : phase;

		run = run && k < lim && ((w3[k] >> 16) & 1u) == ph;
		n += run;
	}
	if (!n)
		return 0;
	/* the phase tags before what the entries cover (the commands' data,
	 * read by their waiters once done[] says so) */
	sio_nvme_rmb();
#pragma unroll
	for (k = 0; k < SIO_GPU_BATCH; k++) {
		uint32_t cid = w3[k] & 0xffffu;

		if (k < n && cid < q->depth) {
			t[k] = sio_gpu_ld(&q->tick[cid]);
			d[k] = sio_gpu_ld(&q->done[cid]);
		}
	}
#pragma unroll
	for (k = 0; k < SIO_GPU_BATCH; k++) {
		uint32_t cid = w3[k] & 0xffffu;

		if (k >= n)
			break;
		if (cid < q->depth && d[k] != t[k] + 1) {
			q->status[cid] = SIO_NVME_STATUS_CODE(w3[k] >> 16);
			continue;
		}
		q->spurious++;
		/* An error for no command (cid 0xffff): the controller could
		 * not fetch an SQ entry, whose command will never complete.
		 * Fail now rather than at the timeout. */
		if (cid >= q->depth && SIO_NVME_STATUS_CODE(w3[k] >> 16))
			sio_gpu_fail(q, -EFAULT);
	}
	/* every status before its done marker */
	__threadfence();
#pragma unroll
	for (k = 0; k < SIO_GPU_BATCH; k++) {
		uint32_t cid = w3[k] & 0xffffu;

		if (k < n && cid < q->depth && d[k] != t[k] + 1)
			*(volatile uint32_t *)&q->done[cid] = t[k] + 1;
	}
	return n;
}

/** sio_gpu_cq_reap() - reap every posted completion into its slot, ring the CQ head */
static __device__ __forceinline__ void sio_gpu_cq_reap(struct sio_gpu_queue *q)
{
	uint32_t head, phase, k, n = 0;

	if (!sio_gpu_leader(q) || !sio_gpu_trylock(&q->cq_lock))
		return;
	head = sio_gpu_ld(&q->cq_head);
	phase = sio_gpu_ld(&q->cq_phase);
	/* at most one ring's worth: the CQ head doorbell must not lap */
	do {
		k = sio_gpu_cq_batch(q, head, phase);
		head += k;
		if (head >= q->depth) {
			head -= q->depth;
			phase ^= 1u;
		}
		n += k;
	} while (k == SIO_GPU_BATCH && n + SIO_GPU_BATCH < q->depth);
	if (n) {
		*(volatile uint32_t *)&q->cq_head = head;
		*(volatile uint32_t *)&q->cq_phase = phase;
		/* our reads of the entries before the slots go back */
		sio_nvme_wmb();
		sio_nvme_mmio_write32(q->cq_db, head);
		__threadfence_system();
		atomicAdd(&q->cq_seen, n);
	}
	sio_gpu_unlock(&q->cq_lock);
}

/**
 * sio_gpu_ticket() - the next ticket of @q, one atomic per warp
 * @q: queue
 *
 * The threads of a warp that take a ticket of the same queue together
 * share one atomicAdd: the lowest takes as many as they are, each gets
 * its own in lane order (warp-aggregated atomics).
 */
static __device__ __forceinline__ uint32_t sio_gpu_ticket(struct sio_gpu_queue *q)
{
#if __CUDA_ARCH__ >= 700
	uint32_t lane, base = 0;
	uint32_t peers = __match_any_sync(__activemask(), (unsigned long long)(uintptr_t)q);
	int leader = __ffs(peers) - 1;

	asm("mov.u32 %0, %%laneid;" : "=r"(lane));
	if ((int)lane == leader)
		base = atomicAdd(&q->ticket, (uint32_t)__popc(peers));
	base = __shfl_sync(peers, base, leader);
	return base + (uint32_t)__popc(peers & ((1u << lane) - 1u));
#else
	return atomicAdd(&q->ticket, 1u);
#endif
}

/**
 * sio_gpu_submit() - place one command in a shared GPU queue and ring
 * @q: queue (device pointer)
 * @cmd: the command; its cid and, when @bytes > 0, its PRPs are filled here
 * @bus: data address as the controller sees it (dword aligned)
 * @bytes: data length, at most q->max_xfer (0: no data)
 * @ticket: the ticket to wait on with sio_gpu_wait()
 *
 * The calling thread must not hold another ticket it has not waited on
 * (see the DOC at the top).
 * Return: 0, -EINVAL, -ETIMEDOUT (no slot freed in time), or the queue's
 * failure. A timeout fails the queue.
 */
static __device__ int sio_gpu_submit(struct sio_gpu_queue *q, struct sio_nvme_cmd *cmd,
				     uint64_t bus, uint32_t bytes, uint32_t *ticket)
{
	uint64_t deadline;
	uint32_t t, p, ns = 32;
	int failed;

	if (bytes > q->max_xfer || (bus & 3u))
		return -EINVAL;
	if ((failed = sio_gpu_failed(q)))
		return failed;
	deadline = sio_gpu_now_ns() + q->timeout_ns;
	t = sio_gpu_ticket(q);
	p = t & (q->depth - 1);
	/* The slot's previous command has been waited on (round[p] is our
	 * ticket), and at most depth - 1 are in flight so the CQ cannot
	 * overflow. Both comparisons hold across the 2^32 wrap. */
	while (sio_gpu_ld(&q->round[p]) != t ||
	       (int32_t)(t - sio_gpu_ld(&q->cq_seen)) >= (int32_t)(q->depth - 1)) {
		if ((failed = sio_gpu_failed(q)))
			return failed;
		if (sio_gpu_now_ns() > deadline)
			return sio_gpu_fail(q, -ETIMEDOUT);
		sio_gpu_cq_reap(q);
		sio_gpu_backoff(&ns);
	}
	*(volatile uint32_t *)&q->tick[p] = t;
	if (bytes) {
		uint64_t *list = q->prp + (uint64_t)p * (q->page / 8);

		sio_nvme_prp_fill(bus, bytes, q->page, list,
				  q->prp_bus + (uint64_t)p * q->page, &cmd->prp1, &cmd->prp2);
	}
	cmd->cid = (uint16_t)p;
	q->sq[p] = *cmd;
	/* entry and PRP list visible to the controller before anyone rings */
	__threadfence_system();
	atomicExch(&q->ready[p], t + 1);
	ns = 32;
	while ((int32_t)(sio_gpu_ld(&q->rung) - t) <= 0) {
		sio_gpu_sq_ring(q);
		if ((int32_t)(sio_gpu_ld(&q->rung) - t) > 0)
			break;
		/* a failed queue rings no more: leave now, not at the deadline */
		if ((failed = sio_gpu_failed(q)))
			return failed;
		if (sio_gpu_now_ns() > deadline)
			return sio_gpu_fail(q, -ETIMEDOUT);
		sio_gpu_backoff(&ns);
	}
	*ticket = t;
	return 0;
}

/**
 * sio_gpu_wait() - wait for a submitted command's completion
 * @q: queue
 * @ticket: from sio_gpu_submit()
 * @status: NVMe status (SCT << 8 | SC), 0 on success (may be NULL)
 * Return: 0, -EIO (see @status), -ETIMEDOUT (fails the queue), or the
 * queue's failure. On 0 the command's data is in place and visible to the
 * calling thread.
 */
static __device__ int sio_gpu_wait(struct sio_gpu_queue *q, uint32_t ticket, uint16_t *status)
{
	uint32_t p = ticket & (q->depth - 1), ns = 64;
	uint64_t deadline = sio_gpu_now_ns() + q->timeout_ns;
	uint16_t st;
	int failed;

	while (sio_gpu_ld(&q->done[p]) != ticket + 1) {
		if ((failed = sio_gpu_failed(q)))
			return failed;
		sio_gpu_cq_reap(q);
		if (sio_gpu_ld(&q->done[p]) == ticket + 1)
			break;
		if (sio_gpu_now_ns() > deadline)
			return sio_gpu_fail(q, -ETIMEDOUT);
		sio_gpu_backoff(&ns);
	}
	/* the completion (and the data before it) before our reads */
	__threadfence_system();
	st = *(volatile uint16_t *)&q->status[p];
	if (status)
		*status = st;
	/* hand the slot to the ticket one round on */
	__threadfence();
	atomicExch(&q->round[p], ticket + q->depth);
	return st ? -EIO : 0;
}

/**
 * sio_gpu_rw() - read or write blocks between the device and GPU memory
 * @q: queue
 * @opcode: SIO_NVME_CMD_READ or SIO_NVME_CMD_WRITE
 * @nsid: namespace
 * @slba: first block
 * @nlb: blocks
 * @lba_size: bytes per block
 * @bus: bus address of the GPU buffer (as the controller sees it)
 * @status: NVMe status on -EIO (may be NULL)
 * Return: as sio_gpu_wait(), or -EINVAL above q->max_xfer.
 */
static __device__ int sio_gpu_rw(struct sio_gpu_queue *q, uint8_t opcode, uint32_t nsid,
				 uint64_t slba, uint32_t nlb, uint32_t lba_size, uint64_t bus,
				 uint16_t *status)
{
	struct sio_nvme_cmd cmd;
	uint32_t t;
	int ret;

	if (nlb == 0 || nlb > 65536u || (uint64_t)nlb * lba_size > q->max_xfer)
		return -EINVAL;
	sio_nvme_cmd_rw(&cmd, opcode, nsid, slba, nlb, 0, 0);
	ret = sio_gpu_submit(q, &cmd, bus, nlb * lba_size, &t);
	if (ret)
		return ret;
	return sio_gpu_wait(q, t, status);
}

/** sio_gpu_read() - read blocks into GPU memory at @bus; as sio_gpu_rw() */
static __device__ __forceinline__ int sio_gpu_read(struct sio_gpu_queue *q, uint32_t nsid,
						   uint64_t slba, uint32_t nlb,
						   uint32_t lba_size, uint64_t bus,
						   uint16_t *status)
{
	return sio_gpu_rw(q, SIO_NVME_CMD_READ, nsid, slba, nlb, lba_size, bus, status);
}

/** sio_gpu_write() - write blocks from GPU memory at @bus; as sio_gpu_rw() */
static __device__ __forceinline__ int sio_gpu_write(struct sio_gpu_queue *q, uint32_t nsid,
						    uint64_t slba, uint32_t nlb,
						    uint32_t lba_size, uint64_t bus,
						    uint16_t *status)
{
	return sio_gpu_rw(q, SIO_NVME_CMD_WRITE, nsid, slba, nlb, lba_size, bus, status);
}
#endif /* __CUDACC__ */

#endif
