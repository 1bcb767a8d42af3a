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
 */

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <cuda_runtime_api.h>
#include "clock.h"
#include <smartio/model.h>

#define MAX_GPUS	64

struct ent {
	uint64_t gen;		/* generation of the segment mapped; 0: none */
	int gpu;
	void *ptr;		/* our mapping of it */
	uint64_t failed_gen;	/* an open of this generation failed (said once) */
};

static struct ent cache[SIO_GPU_SEG_SLOTS];
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
	void *p;
	int ret;

	if (ndev < 0)
		count_gpus();
	if (s->gpu >= ndev || s->gpu >= MAX_GPUS)
		return -ENODEV;
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
	t0 = sio__now_ns();
	ce = to_gpu ? cudaMemcpyAsync((char *)p + off, buf, len, cudaMemcpyHostToDevice, st)
		    : cudaMemcpyAsync(buf, (char *)p + off, len, cudaMemcpyDeviceToHost, st);
	/* A pageable host-to-device copy may return before the data landed:
	 * wait, or a completion posted next could overtake it. */
	if (ce == cudaSuccess)
		ce = cudaStreamSynchronize(st);
	if (ce != cudaSuccess) {
		fprintf(stderr, "smartio-gpudma: copy %s GPU segment %u failed: %s\n",
			to_gpu ? "to" : "from", s->id, cudaGetErrorString(ce));
		return -EIO;
	}
	slow_copy(sio__now_ns() - t0);
	return 0;
}

static int gpu_copy(const struct sio_gpu_seg *s, uint64_t off, void *buf, size_t len,
		    bool to_gpu)
{
	int ret;

	if (!s || (!buf && len) || s->slot >= SIO_GPU_SEG_SLOTS || s->gpu < 0 || !s->gen)
		return -EINVAL;
	if (off > s->size || len > s->size - off)
		return -ERANGE;
	if (!len)
		return 0;
	pthread_mutex_lock(&lock);
	ret = copy_locked(s, off, buf, len, to_gpu);
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
const struct sio_gpu_dma_plugin SIO_GPU_DMA_PLUGIN = { .copy = gpu_copy, .forget = gpu_forget };
