/* SPDX-License-Identifier: MIT */
/*
 * libsmartio-gpudma.so: how a device model in another process reaches GPU
 * memory. libsmartio loads it on the first DMA to a GPU segment and calls
 * copy(); we open the exporter's IPC handle once per segment generation
 * and move data with cudaMemcpy. It links no libsmartio symbol (the host
 * process may carry libsmartio statically) and reports only -errno.
 */

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <cuda_runtime_api.h>
#include "../../src/internal.h"

#define CACHE_ENTS	64

struct ent {
	uint64_t gen;		/* 0: empty */
	int gpu;
	void *ptr;
	uint64_t used;		/* for eviction, least recently used goes */
};

static struct ent cache[CACHE_ENTS];
static uint64_t clock_;
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;

/* The mapping of segment @s in this process, opened on first use. */
static int lookup(const struct reg_seg *s, void **out)
{
	cudaIpcMemHandle_t h;
	struct ent *e, *victim = &cache[0];
	cudaError_t ce;
	int i;

	for (i = 0; i < CACHE_ENTS; i++) {
		e = &cache[i];
		if (e->gen == s->gen && e->gpu == s->gpu && e->ptr) {
			e->used = ++clock_;
			*out = e->ptr;
			return 0;
		}
		if (e->used < victim->used)
			victim = e;
	}
	if (victim->ptr) {
		cudaSetDevice(victim->gpu);
		cudaIpcCloseMemHandle(victim->ptr);
		memset(victim, 0, sizeof(*victim));
	}
	if (cudaSetDevice(s->gpu) != cudaSuccess)
		return -ENODEV;
	memcpy(&h, s->gpu_handle, sizeof(h));
	ce = cudaIpcOpenMemHandle(out, h, cudaIpcMemLazyEnablePeerAccess);
	if (ce != cudaSuccess) {
		fprintf(stderr, "smartio-gpudma: cannot open GPU segment %u (GPU %d): %s\n",
			s->id, s->gpu, cudaGetErrorString(ce));
		return ce == cudaErrorInvalidDevice || ce == cudaErrorNoDevice ? -ENODEV : -EIO;
	}
	*victim = (struct ent){ .gen = s->gen, .gpu = s->gpu, .ptr = *out, .used = ++clock_ };
	return 0;
}

static int gpu_copy(const struct reg_seg *s, uint64_t off, void *buf, size_t len, bool to_gpu)
{
	cudaError_t ce;
	void *p;
	int n = 0, ret;

	if (!s || (!buf && len))
		return -EINVAL;
	if (s->kind != SIO_SEG_GPU || s->gpu < 0)
		return -EINVAL;
	if (off > s->size || len > s->size - off)
		return -ERANGE;
	if (!len)
		return 0;
	if (cudaGetDeviceCount(&n) != cudaSuccess || s->gpu >= n)
		return -ENODEV;
	pthread_mutex_lock(&lock);
	ret = lookup(s, &p);
	pthread_mutex_unlock(&lock);
	if (ret)
		return ret;
	ce = to_gpu ? cudaMemcpy((char *)p + off, buf, len, cudaMemcpyHostToDevice)
		    : cudaMemcpy(buf, (char *)p + off, len, cudaMemcpyDeviceToHost);
	return ce == cudaSuccess ? 0 : -EIO;
}

__attribute__((visibility("default")))
const struct sio_gpu_dma_ops sio_gpu_dma_plugin = { .copy = gpu_copy };
