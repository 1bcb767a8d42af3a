/* SPDX-License-Identifier: MIT */
/*
 * Kernels the examples, benchmarks and tests share: a batch of NVMe I/O
 * issued by GPU threads over several queues, and a GPU checksum.
 */

#include <errno.h>
#include <cuda_runtime.h>
#include <smartio/gpu.h>
#include <smartio/gpu/queue.cuh>

extern "C" int sio_gpu_cuda_err(cudaError_t e, const char *what);

struct job_stats {
	unsigned long long ok;
	unsigned long long failed;
	int first_err;
	unsigned int first_status;
	unsigned long long mismatches;
	unsigned long long first_bad;	/* word index + 1, lowest wins */
	unsigned long long first_bad_value;
};

/* Write the pattern into, or check it against, one command's data. */
static __device__ void pattern_fill(uint64_t *w, uint64_t words, uint64_t word0, uint64_t seed)
{
	for (uint64_t k = 0; k < words; k++)
		w[k] = sio_gpu_pattern(seed, word0 + k);
	/* the controller reads it after the doorbell: system scope */
	__threadfence_system();
}

static __device__ void pattern_check(const uint64_t *w, uint64_t words, uint64_t word0,
				     uint64_t seed, struct job_stats *st)
{
	unsigned long long bad = 0, first = 0, val = 0;

	for (uint64_t k = 0; k < words; k++) {
		uint64_t v = w[k];

		if (v != sio_gpu_pattern(seed, word0 + k)) {
			if (!bad) {
				first = word0 + k + 1;
				val = v;
			}
			bad++;
		}
	}
	if (!bad)
		return;
	atomicAdd(&st->mismatches, bad);
	if (atomicMin(&st->first_bad, first) > first) {
		/* racy with another thread's smaller index; good enough for a report */
		st->first_bad_value = val;
	}
}

static __device__ uint64_t mix64(uint64_t x)
{
	x += 0x9e3779b97f4a7c15ull;
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
	x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
	return x ^ (x >> 31);
}

static __global__ void job_kernel(struct sio_gpu_queue *const *qs, int nq, struct sio_gpu_job j,
				  struct job_stats *st)
{
	uint32_t tid = blockIdx.x * blockDim.x + threadIdx.x;
	uint64_t bytes = (uint64_t)j.nlb * j.lba_size, slots = j.size / bytes;
	struct sio_gpu_queue *q;

	if (tid >= j.threads)
		return;
	/* neighbouring threads share a queue (whole warps once there are 32
	 * threads a queue): a warp takes its tickets with one atomic, and its
	 * polls of the queue's words coalesce */
	q = qs[(uint64_t)tid * (uint32_t)nq / j.threads];
	for (uint64_t i = tid; i < j.nios; i += j.threads) {
		uint64_t slba, off, t0;
		uint16_t status = 0;
		int ret;

		if (j.span) {
			slba = j.slba + (mix64(j.seed ^ i) % (j.span / j.nlb)) * j.nlb;
			off = (tid % slots) * bytes;
		} else {
			slba = j.slba + i * j.nlb;
			off = (i % slots) * bytes;
		}
		uint64_t *data = (uint64_t *)((char *)j.dptr + off);
		uint64_t word0 = slba * j.lba_size / 8;

		if (j.verify && j.opcode == SIO_NVME_CMD_WRITE)
			pattern_fill(data, bytes / 8, word0, j.pattern);
		t0 = sio_gpu_now_ns();
		ret = sio_gpu_rw(q, j.opcode, j.nsid, slba, j.nlb, j.lba_size, j.bus + off, &status);
		if (j.lat_ns)
			j.lat_ns[i] = sio_gpu_now_ns() - t0;
		if (!ret) {
			atomicAdd(&st->ok, 1ull);
			/* right after the completion, in this kernel: data that
			 * has not landed yet shows up here */
			if (j.verify && j.opcode == SIO_NVME_CMD_READ)
				pattern_check(data, bytes / 8, word0, j.pattern, st);
		} else {
			atomicAdd(&st->failed, 1ull);
			if (atomicCAS(&st->first_err, 0, ret) == 0)
				st->first_status = status;
		}
	}
}

static int job_check(struct sio_gpu_queue *const *qs, int nq, const struct sio_gpu_job *job,
		     const struct sio_gpu_job_result *res)
{
	uint64_t bytes;

	if (!qs || nq <= 0 || !job || !res)
		return sio_err_set(EINVAL, "sio_gpu_run_job: NULL argument or no queue");
	if (job->opcode != SIO_NVME_CMD_READ && job->opcode != SIO_NVME_CMD_WRITE)
		return sio_err_set(EINVAL, "job opcode 0x%x is neither read nor write", job->opcode);
	bytes = (uint64_t)job->nlb * job->lba_size;
	if (!job->threads || !job->nlb || !job->lba_size || !job->dptr || job->size < bytes)
		return sio_err_set(EINVAL, "job needs threads, blocks per command and a buffer "
				   "of at least one command (%llu bytes)",
				   (unsigned long long)bytes);
	if (job->span && job->span < job->nlb)
		return sio_err_set(EINVAL, "random span %llu is smaller than one command",
				   (unsigned long long)job->span);
	if (job->verify && ((bytes & 7) || ((uintptr_t)job->dptr & 7) ||
			    (job->span ? job->size / bytes < job->threads :
					 job->size / bytes < job->nios)))
		return sio_err_set(EINVAL, "verify needs a buffer of %llu commands of %llu bytes "
				   "(one per command in flight), 8-byte aligned",
				   (unsigned long long)(job->span ? job->threads : job->nios),
				   (unsigned long long)bytes);
	for (int i = 0; i < nq; i++)
		if (!qs[i])
			return sio_err_set(EINVAL, "queue %d is NULL", i);
	return 0;
}

/*
 * What one run of the kernel needs on the GPU, its timing events, and a
 * stream of its own. All of it is stream-ordered (cudaMallocAsync,
 * cudaFreeAsync): nothing here waits for the whole device, so a job runs
 * next to a persistent kernel such as the GPU-resident controller model
 * (ctrl.cu), which a device-wide wait would wait for forever.
 */
struct job_run {
	struct sio_gpu_queue **dqs;
	struct job_stats *dst;
	cudaEvent_t ev[2];
	cudaStream_t s;
	bool pools;		/* stream-ordered allocation supported */
};

/* Device memory for a job: stream-ordered where the device can, else plain. */
static cudaError_t job_alloc(struct job_run *r, void **p, size_t len)
{
	return r->pools ? cudaMallocAsync(p, len, r->s) : cudaMalloc(p, len);
}

static void job_release(struct job_run *r, void *p)
{
	if (r->pools)
		cudaFreeAsync(p, r->s);
	else
		cudaFree(p);
}

/* Whether the current device supports cudaMallocAsync (memory pools). */
extern "C" bool sio__gpu_pools(void)
{
	int dev = 0, v = 0;

	return cudaGetDevice(&dev) == cudaSuccess &&
	       cudaDeviceGetAttribute(&v, cudaDevAttrMemoryPoolsSupported, dev) == cudaSuccess &&
	       v;
}

/*
 * Load the engine's kernels now. CUDA loads a kernel at its first launch
 * (CUDA_MODULE_LOADING=LAZY, the default since CUDA 12.2), and a load may
 * wait for the whole context: next to a persistent kernel, the GPU-resident
 * model's, the first job waited for the model to end (on the H200 every
 * command of the model's tests timed out, after the model's 30 s bound).
 * cudaFuncGetAttributes() loads the kernel it is asked about.
 */
static __global__ void checksum_kernel(const uint64_t *w, uint64_t n,
				       unsigned long long *sum);

extern "C" int sio__gpu_job_load(void)
{
	cudaFuncAttributes a;
	cudaError_t e = cudaFuncGetAttributes(&a, job_kernel);

	if (e == cudaSuccess)
		e = cudaFuncGetAttributes(&a, checksum_kernel);
	return e == cudaSuccess ? 0 : sio_gpu_cuda_err(e, "loading the GPU queue engine's kernels");
}

/* The queue pointers and zeroed statistics in GPU memory, the events made. */
static int job_prepare(struct job_run *r, struct sio_gpu_queue *const *qs, int nq)
{
	const unsigned long long none = ~0ull;	/* no bad word yet: atomicMin wins */
	cudaError_t e;

	r->pools = sio__gpu_pools();
	e = cudaStreamCreateWithFlags(&r->s, cudaStreamNonBlocking);
	if (e == cudaSuccess)
		e = job_alloc(r, (void **)&r->dqs, sizeof(*r->dqs) * nq);
	if (e == cudaSuccess)
		e = cudaMemcpyAsync(r->dqs, qs, sizeof(*r->dqs) * nq, cudaMemcpyHostToDevice, r->s);
	if (e == cudaSuccess)
		e = job_alloc(r, (void **)&r->dst, sizeof(*r->dst));
	if (e == cudaSuccess)
		e = cudaMemsetAsync(r->dst, 0, sizeof(*r->dst), r->s);
	if (e == cudaSuccess)
		e = cudaMemcpyAsync(&r->dst->first_bad, &none, sizeof(none), cudaMemcpyHostToDevice,
				    r->s);
	if (e == cudaSuccess)
		e = cudaEventCreate(&r->ev[0]);
	if (e == cudaSuccess)
		e = cudaEventCreate(&r->ev[1]);
	/* the pageable sources above are read before the calls return, but
	 * the stream's work is not done: finish it before the kernel's clock */
	if (e == cudaSuccess)
		e = cudaStreamSynchronize(r->s);
	return e == cudaSuccess ? 0 : sio_gpu_cuda_err(e, "preparing the I/O kernel");
}

/* Run the kernel, wait for it, and bring its statistics back. */
static int job_launch(struct job_run *r, int nq, const struct sio_gpu_job *job,
		      struct job_stats *st, float *ms)
{
	const uint32_t block = 128;
	cudaError_t e;

	cudaEventRecord(r->ev[0], r->s);
	job_kernel<<<(job->threads + block - 1) / block, block, 0, r->s>>>(r->dqs, nq, *job,
									  r->dst);
	cudaEventRecord(r->ev[1], r->s);
	e = cudaGetLastError();
	if (e == cudaSuccess)
		e = cudaEventSynchronize(r->ev[1]);
	if (e == cudaSuccess)
		e = cudaMemcpyAsync(st, r->dst, sizeof(*st), cudaMemcpyDeviceToHost, r->s);
	if (e == cudaSuccess)
		e = cudaStreamSynchronize(r->s);
	if (e != cudaSuccess)
		return sio_gpu_cuda_err(e, "running the I/O kernel");
	cudaEventElapsedTime(ms, r->ev[0], r->ev[1]);
	return 0;
}

static void job_free(struct job_run *r)
{
	if (r->ev[0])
		cudaEventDestroy(r->ev[0]);
	if (r->ev[1])
		cudaEventDestroy(r->ev[1]);
	if (!r->s)
		return;
	if (r->dst)
		job_release(r, r->dst);
	if (r->dqs)
		job_release(r, r->dqs);
	cudaStreamSynchronize(r->s);
	cudaStreamDestroy(r->s);
}

extern "C" int sio_gpu_run_job(struct sio_gpu_queue *const *qs, int nq,
			       const struct sio_gpu_job *job, struct sio_gpu_job_result *res)
{
	struct job_run run = {};
	struct job_stats st = {};
	float ms = 0;
	int ret;

	ret = job_check(qs, nq, job, res);
	if (ret)
		return ret;
	ret = job_prepare(&run, qs, nq);
	if (!ret)
		ret = job_launch(&run, nq, job, &st, &ms);
	if (!ret) {
		res->ok = st.ok;
		res->failed = st.failed;
		res->first_err = st.first_err;
		res->first_status = (uint16_t)st.first_status;
		res->seconds = ms / 1000.0;
		res->mismatches = st.mismatches;
		res->first_bad_word = st.mismatches ? st.first_bad - 1 : 0;
		res->first_bad_value = st.first_bad_value;
	}
	job_free(&run);
	return ret;
}

static __global__ void checksum_kernel(const uint64_t *w, uint64_t n, unsigned long long *sum)
{
	unsigned long long acc = 0;

	for (uint64_t i = blockIdx.x * (uint64_t)blockDim.x + threadIdx.x; i < n;
	     i += (uint64_t)gridDim.x * blockDim.x)
		acc += w[i] ^ i;
	atomicAdd(sum, acc);
}

extern "C" int sio_gpu_checksum(const void *dptr, uint64_t len, uint64_t *out)
{
	unsigned long long *d = NULL, h = 0;
	cudaError_t e;

	if (!dptr || !out || (len & 7) || ((uintptr_t)dptr & 7))
		return sio_err_set(EINVAL, "sio_gpu_checksum: NULL, or not 8-byte aligned");
	e = cudaMalloc((void **)&d, sizeof(*d));
	if (e == cudaSuccess)
		e = cudaMemset(d, 0, sizeof(*d));
	if (e == cudaSuccess) {
		checksum_kernel<<<256, 256>>>((const uint64_t *)dptr, len / 8, d);
		e = cudaGetLastError();
	}
	if (e == cudaSuccess)
		e = cudaMemcpy(&h, d, sizeof(h), cudaMemcpyDeviceToHost);
	cudaFree(d);
	if (e != cudaSuccess)
		return sio_gpu_cuda_err(e, "checksum kernel");
	*out = h;
	return 0;
}

extern "C" uint64_t sio_gpu_checksum_host(const void *p, uint64_t len)
{
	const uint64_t *w = (const uint64_t *)p;
	uint64_t acc = 0;

	for (uint64_t i = 0; i < len / 8; i++)
		acc += w[i] ^ i;
	return acc;
}
