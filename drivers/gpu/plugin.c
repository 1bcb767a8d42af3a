/* SPDX-License-Identifier: MIT */
/*
 * libsmartio-gpudma.so: how a device model in another process reaches GPU
 * memory. libsmartio loads it on the first DMA to a GPU segment and calls
 * copy(); we open the exporter's IPC handle once per segment generation
 * and move data with cudaMemcpyAsync on a stream of our own, waiting for
 * it to finish, so a completion the model posts afterwards can never be
 * seen before its data. It links no libsmartio symbol (the host process
 * may carry libsmartio statically) and reports only -errno; it carries its
 * CUDA runtime statically, so dlopen() needs nothing but the driver.
 *
 * IPC mappings are cached per segment slot and closed as soon as the
 * slot's segment went away (forget(), called by libsmartio when the
 * registry's mappings change), so an exporter's cudaFree() finds no mapping
 * of ours left open for longer than our next DMA.
 *
 * A write the model lets land later (copy_later(), inside libsmartio's
 * sio_dma_batch_begin() .. _end()) is staged in pinned host memory of ours,
 * mapped into the GPU, and listed; land() launches one kernel that moves
 * every listed piece to its place (scatter.cu) and waits once. Each copy
 * waited for alone costs a round trip to the GPU (about 10 us on an H200
 * under MPS), which capped the emulator near 100,000 commands per second;
 * one cudaMemcpyBatchAsync() per batch cost the driver a pointer query per
 * piece. A read from the GPU goes behind the listed writes only where it
 * could overlap them.
 */

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <cuda_runtime_api.h>
#include "clock.h"
#include "scatter.h"
#include <smartio/model.h>

#define MAX_GPUS	64

struct ent {
	uint64_t gen;		/* generation of the segment mapped; 0: none */
	int gpu;
	void *ptr;		/* our mapping of it */
	uint64_t failed_gen;	/* an open of this generation failed (said once) */
};

/*
 * Writes listed by copy_later(), on one GPU: their data in the stage, the
 * list after it, both pinned host memory mapped into the GPU.
 */
#define LATER_MAX	1024
#define STAGE_BYTES	(8u << 20)

struct later {
	int gpu;			/* of the listed writes; -1: none */
	uint32_t n;			/* listed, not yet issued */
	size_t used;			/* of the stage, until the writes landed */
	uintptr_t lo, hi;		/* where the listed writes go, at most */
	uint8_t *stage;			/* STAGE_BYTES, then LATER_MAX pieces */
	struct gpudma_piece *piece;
	void *stage_dev, *piece_dev;	/* both as the GPU addresses them */
	bool no_stage;			/* pinned memory refused: copy at once */
	bool no_kernel;			/* the scatter kernel refused: one by one */
	bool failed;			/* issued with a copy that failed */
};

static struct ent cache[SIO_GPU_SEG_SLOTS];
static struct later later = { .gpu = -1, .lo = UINTPTR_MAX };
static int nopen;
static cudaStream_t streams[MAX_GPUS];
static int ndev = -1;
static bool warm[MAX_GPUS];
/* Held across each copy: forget() must not close a mapping in use. */
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;

static void close_ent(struct ent *e)
{
	if (!e->ptr)
		return;
	cudaSetDevice(e->gpu);
	cudaIpcCloseMemHandle(e->ptr);
	e->ptr = NULL;
	e->gen = 0;
	nopen--;
}

static int stream_of(int gpu, cudaStream_t *out);

/* Issue the listed writes on @st (the stage stays theirs until they land). */
static cudaError_t later_issue(cudaStream_t st)
{
	cudaError_t ce = cudaErrorNotSupported;

	if (!later.n)
		return cudaSuccess;
	/* one piece (a queue depth of one) by the copy engine: the kernel's
	 * launch made a QD1 read 4 to 6 us slower on an H200 */
	if (!later.no_kernel && later.n > 1) {
		ce = sio__gpudma_scatter(later.piece_dev, later.n, later.stage_dev, st);
		if (ce != cudaSuccess) {
			fprintf(stderr, "smartio-gpudma: the scatter kernel cannot run (%s); "
				"copying piece by piece\n", cudaGetErrorString(ce));
			later.no_kernel = true;
			cudaGetLastError();
		}
	}
	if (ce != cudaSuccess) {
		ce = cudaSuccess;
		for (uint32_t i = 0; i < later.n && ce == cudaSuccess; i++)
			ce = cudaMemcpyAsync((void *)(uintptr_t)later.piece[i].dst,
					     later.stage + later.piece[i].off, later.piece[i].len,
					     cudaMemcpyHostToDevice, st);
	}
	later.n = 0;
	later.lo = UINTPTR_MAX;
	later.hi = 0;
	return ce;
}

/* Every listed write landed: issued, then waited for. */
static int land_locked(void)
{
	cudaStream_t st;
	cudaError_t ce;
	int gpu = later.gpu;
	bool failed = later.failed;

	later.failed = false;
	if (gpu < 0)
		return failed ? -EIO : 0;
	later.gpu = -1;
	later.used = 0;
	if (cudaSetDevice(gpu) != cudaSuccess || stream_of(gpu, &st)) {
		later.n = 0;
		return -EIO;
	}
	ce = later_issue(st);
	if (ce == cudaSuccess)
		ce = cudaStreamSynchronize(st);
	if (ce != cudaSuccess) {
		fprintf(stderr, "smartio-gpudma: deferred copies to GPU %d failed: %s\n", gpu,
			cudaGetErrorString(ce));
		return -EIO;
	}
	return 0;
}

/* The mapping of segment @s in this process. */
static int lookup(const struct sio_gpu_seg *s, void **out)
{
	struct ent *e = &cache[s->slot];
	cudaIpcMemHandle_t h;
	cudaError_t ce;

	if (e->ptr && e->gen == s->gen && e->gpu == s->gpu) {
		*out = e->ptr;
		return 0;
	}
	if (e->ptr) {
		land_locked();	/* listed writes may go through it */
		close_ent(e);	/* an older segment of this slot: gone */
		cudaSetDevice(s->gpu);
	}
	memcpy(&h, s->handle, sizeof(h));
	ce = cudaIpcOpenMemHandle(out, h, cudaIpcMemLazyEnablePeerAccess);
	if (ce != cudaSuccess) {
		if (e->failed_gen != s->gen)
			fprintf(stderr, "smartio-gpudma: cannot open GPU segment %u (GPU %d) in "
				"process %d: %s (%s); the GPU's compute mode must be Default, and "
				"CUDA_VISIBLE_DEVICES must be the same in the exporting process\n",
				s->id, s->gpu, (int)getpid(), cudaGetErrorString(ce),
				cudaGetErrorName(ce));
		e->failed_gen = s->gen;
		return ce == cudaErrorInvalidDevice || ce == cudaErrorNoDevice ||
		       ce == cudaErrorInsufficientDriver ? -ENODEV : -EIO;
	}
	e->gen = s->gen;
	e->gpu = s->gpu;
	e->ptr = *out;
	nopen++;
	return 0;
}

/* The plugin's own stream on @gpu: it waits for no other work in this
 * process, and what is copied on it is complete after a synchronize. */
static int stream_of(int gpu, cudaStream_t *out)
{
	cudaError_t ce;

	if (!streams[gpu]) {
		ce = cudaStreamCreateWithFlags(&streams[gpu], cudaStreamNonBlocking);
		if (ce != cudaSuccess) {
			fprintf(stderr, "smartio-gpudma: cannot create a stream on GPU %d: %s\n", gpu,
				cudaGetErrorString(ce));
			streams[gpu] = NULL;
			return -EIO;
		}
	}
	*out = streams[gpu];
	return 0;
}

static void count_gpus(void)
{
	cudaError_t ce = cudaGetDeviceCount(&ndev);

	if (ce != cudaSuccess) {
		fprintf(stderr, "smartio-gpudma: no GPU in process %d: %s (%s)\n", (int)getpid(),
			cudaGetErrorString(ce), cudaGetErrorName(ce));
		ndev = 0;
	}
}

/*
 * Without MPS the GPU time-slices between the exporter's context, whose
 * kernel polls its queues, and ours: every copy then waits for a slice
 * (about a millisecond on an H200) and a GPU thread's QD1 read takes
 * milliseconds, not tens of microseconds. Say so once, after a few.
 */
static void slow_copy(uint64_t ns)
{
	static unsigned int slow;

	if (ns < 500000 || ++slow != 8)
		return;
	fprintf(stderr, "smartio-gpudma: copies to and from GPU memory take %.1f ms in process %d: "
		"the GPU is time-sliced between this process and the one running the kernel; "
		"run both under MPS (nvidia-cuda-mps-control -d, same CUDA_MPS_PIPE_DIRECTORY) "
		"for microsecond copies (docs/gpu.md)\n", ns / 1e6, (int)getpid());
}

static int copy_locked(const struct sio_gpu_seg *s, uint64_t off, void *buf, size_t len,
		       bool to_gpu)
{
	uint64_t t0;
	cudaStream_t st;
	cudaError_t ce;
	bool issue;
	void *p;
	int ret;

	if (ndev < 0)
		count_gpus();
	if (s->gpu >= ndev || s->gpu >= MAX_GPUS)
		return -ENODEV;
	/* listed writes go first: on this GPU's stream, else landed */
	if (later.gpu >= 0 && later.gpu != s->gpu && (ret = land_locked()))
		return ret;
	ce = cudaSetDevice(s->gpu);
	if (ce != cudaSuccess) {
		static bool said;

		if (!said)
			fprintf(stderr, "smartio-gpudma: cannot use GPU %d in process %d: %s (%s)%s\n",
				s->gpu, (int)getpid(), cudaGetErrorString(ce), cudaGetErrorName(ce),
				ce == cudaErrorDevicesUnavailable ? "; the GPU's compute mode must be "
				"Default (nvidia-smi -c DEFAULT)" : "");
		said = true;
		return -ENODEV;
	}
	ret = lookup(s, &p);
	if (!ret)
		ret = stream_of(s->gpu, &st);
	if (ret)
		return ret;
	/* the listed writes first, if this copy could meet them (stream order) */
	issue = later.n && (to_gpu || ((uintptr_t)p + off < later.hi &&
				       later.lo < (uintptr_t)p + off + len));
	t0 = issue ? 0 : sio__now_ns();	/* timed alone only (slow_copy) */
	ce = issue ? later_issue(st) : cudaSuccess;
	if (ce == cudaSuccess)
		ce = to_gpu ? cudaMemcpyAsync((char *)p + off, buf, len, cudaMemcpyHostToDevice, st)
			    : cudaMemcpyAsync(buf, (char *)p + off, len, cudaMemcpyDeviceToHost,
					      st);
	/* A pageable host-to-device copy may return before the data landed:
	 * wait, or a completion posted next could overtake it. */
	if (ce == cudaSuccess)
		ce = cudaStreamSynchronize(st);
	/* what was issued landed with it, or failed with it */
	if (issue) {
		later.failed |= ce != cudaSuccess;
		later.gpu = -1;
		later.used = 0;
	}
	if (ce != cudaSuccess) {
		fprintf(stderr, "smartio-gpudma: copy %s GPU segment %u failed: %s\n",
			to_gpu ? "to" : "from", s->id, cudaGetErrorString(ce));
		return -EIO;
	}
	if (t0)
		slow_copy(sio__now_ns() - t0);
	return 0;
}

/* The stage and its list, made once: pinned, mapped into every GPU. */
static bool stage_ready(void)
{
	size_t len = STAGE_BYTES + LATER_MAX * sizeof(struct gpudma_piece);

	if (later.stage || later.no_stage)
		return later.stage != NULL;
	if (cudaHostAlloc((void **)&later.stage, len,
			  cudaHostAllocPortable | cudaHostAllocMapped) != cudaSuccess ||
	    cudaHostGetDevicePointer(&later.stage_dev, later.stage, 0) != cudaSuccess) {
		cudaGetLastError();
		if (later.stage)
			cudaFreeHost(later.stage);
		later.stage = NULL;
		later.no_stage = true;
		return false;
	}
	later.piece = (struct gpudma_piece *)(later.stage + STAGE_BYTES);
	later.piece_dev = (uint8_t *)later.stage_dev + STAGE_BYTES;
	return true;
}

/* List a write into the GPU, its source staged; or copy it now. */
static int later_locked(const struct sio_gpu_seg *s, uint64_t off, const void *buf, size_t len)
{
	uintptr_t dst;
	int ret;
	void *p;

	if (later.no_stage || len > STAGE_BYTES / 4)
		return copy_locked(s, off, (void *)buf, len, true);
	if ((later.gpu >= 0 && later.gpu != s->gpu) || later.n == LATER_MAX ||
	    later.used + len > STAGE_BYTES) {
		ret = land_locked();
		if (ret)
			return ret;
	}
	if (ndev < 0)
		count_gpus();
	if (s->gpu >= ndev || s->gpu >= MAX_GPUS)
		return -ENODEV;
	if (cudaSetDevice(s->gpu) != cudaSuccess || !stage_ready())
		return copy_locked(s, off, (void *)buf, len, true);	/* says why */
	ret = lookup(s, &p);
	if (ret)
		return ret;
	dst = (uintptr_t)p + off;
	memcpy(later.stage + later.used, buf, len);
	later.piece[later.n++] = (struct gpudma_piece){ .dst = dst, .off = (uint32_t)later.used,
							.len = (uint32_t)len };
	later.used += (len + 63) & ~(size_t)63;
	later.lo = dst < later.lo ? dst : later.lo;
	later.hi = dst + len > later.hi ? dst + len : later.hi;
	later.gpu = s->gpu;
	return 0;
}

/* Check the arguments, then copy now (or, @later, list the write) under the lock. */
static int checked_copy(const struct sio_gpu_seg *s, uint64_t off, void *buf, size_t len,
			bool to_gpu, bool later_ok)
{
	int ret;

	if (!s || (!buf && len) || s->slot >= SIO_GPU_SEG_SLOTS || s->gpu < 0 || !s->gen)
		return -EINVAL;
	if (off > s->size || len > s->size - off)
		return -ERANGE;
	if (!len)
		return 0;
	pthread_mutex_lock(&lock);
	ret = later_ok ? later_locked(s, off, buf, len) : copy_locked(s, off, buf, len, to_gpu);
	pthread_mutex_unlock(&lock);
	return ret;
}

static int gpu_copy(const struct sio_gpu_seg *s, uint64_t off, void *buf, size_t len,
		    bool to_gpu)
{
	return checked_copy(s, off, buf, len, to_gpu, false);
}

static int gpu_copy_later(const struct sio_gpu_seg *s, uint64_t off, const void *buf,
			  size_t len)
{
	return checked_copy(s, off, (void *)buf, len, true, true);
}

static int gpu_land(void)
{
	int ret;

	pthread_mutex_lock(&lock);
	ret = land_locked();
	pthread_mutex_unlock(&lock);
	return ret;
}

static void gpu_forget(const struct sio_gpu_seg *live, int n)
{
	static uint64_t live_gen[SIO_GPU_SEG_SLOTS];	/* 0: no such segment now */
	cudaStream_t st;

	if (n < 0 || (n && !live))
		return;
	pthread_mutex_lock(&lock);
	land_locked();	/* the listed writes hold mappings; a failure is said there */
	if (ndev < 0)
		count_gpus();
	memset(live_gen, 0, sizeof(live_gen));
	for (int i = 0; i < n; i++) {
		const struct sio_gpu_seg *s = &live[i];

		if (s->slot >= SIO_GPU_SEG_SLOTS)
			continue;
		live_gen[s->slot] = s->gen;
		/* Start CUDA on the GPUs of the fabric's GPU segments before the
		 * first copy, which a GPU thread would wait for. */
		if (s->gpu >= 0 && s->gpu < ndev && s->gpu < MAX_GPUS && !warm[s->gpu]) {
			warm[s->gpu] = true;
			if (cudaSetDevice(s->gpu) == cudaSuccess)
				stream_of(s->gpu, &st);
		}
	}
	for (int i = 0; i < SIO_GPU_SEG_SLOTS; i++)
		if (cache[i].ptr && live_gen[i] != cache[i].gen)
			close_ent(&cache[i]);
	pthread_mutex_unlock(&lock);
}

/* For tests: how many IPC mappings are open. */
int sio_gpu_dma_plugin_open_count(void);	/* found with dlsym() */
__attribute__((visibility("default")))
int sio_gpu_dma_plugin_open_count(void)
{
	int n;

	pthread_mutex_lock(&lock);
	n = nopen;
	pthread_mutex_unlock(&lock);
	return n;
}

__attribute__((visibility("default")))
const struct sio_gpu_dma_plugin SIO_GPU_DMA_PLUGIN = {
	.copy = gpu_copy,
	.forget = gpu_forget,
	.copy_later = gpu_copy_later,
	.land = gpu_land,
};
