/* SPDX-License-Identifier: MIT */
#ifndef SMARTIO_GPU_SCATTER_H
#define SMARTIO_GPU_SCATTER_H

#include <stdint.h>
#include <cuda_runtime_api.h>

/* A deferred write: @len bytes from the stage at @off to @dst (GPU memory,
 * our mapping of it). */
struct gpudma_piece {
	uint64_t dst;
	uint32_t off;
	uint32_t len;
};

#ifdef __cplusplus
extern "C" {
#endif
/*
 * sio__gpudma_scatter() - launch, on @st, the copy of @n pieces from @stage
 * (pinned host memory mapped into the GPU, as the GPU addresses it; @p
 * likewise) to their places. Return: the launch's error.
 */
cudaError_t sio__gpudma_scatter(const struct gpudma_piece *p, uint32_t n, const void *stage,
			   cudaStream_t st);
#ifdef __cplusplus
}
#endif

#endif
