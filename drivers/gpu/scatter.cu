/* SPDX-License-Identifier: MIT */
/*
 * The GPU DMA plugin's one kernel: deferred writes into GPU memory landed
 * by the GPU itself. Their data waits in pinned host memory mapped into
 * the GPU, listed by piece; one launch moves every piece to its place.
 * cudaMemcpyBatchAsync() did the same work but asked the driver about
 * each piece's pointers, which on an H200 was about 40 % of nvme-emu's CPU
 * time (docs/gpu.md).
 */

#include <stdint.h>
#include <cuda_runtime.h>
#include "scatter.h"

/* One block per piece at a time; a piece is read from host memory over
 * PCIe, so many pieces in flight hide that latency. */
static __global__ void scatter_kernel(const struct gpudma_piece *p, uint32_t n,
				      const uint8_t *stage)
{
	for (uint32_t i = blockIdx.x; i < n; i += gridDim.x) {
		uint8_t *d = (uint8_t *)(uintptr_t)p[i].dst;
		const uint8_t *s = stage + p[i].off;
		uint32_t len = p[i].len;

		/* the stage's pieces start 64-byte aligned */
		if (!(((uintptr_t)d | len) & 15)) {
			for (uint32_t k = threadIdx.x; k < len / 16; k += blockDim.x)
				((uint4 *)d)[k] = ((const uint4 *)s)[k];
		} else {
			for (uint32_t k = threadIdx.x; k < len; k += blockDim.x)
				d[k] = s[k];
		}
	}
}

extern "C" cudaError_t sio__gpudma_scatter(const struct gpudma_piece *p, uint32_t n,
				      const void *stage, cudaStream_t st)
{
	if (!n)
		return cudaSuccess;
	scatter_kernel<<<n < 1024 ? n : 1024, 128, 0, st>>>(p, n, (const uint8_t *)stage);
	return cudaGetLastError();
}
