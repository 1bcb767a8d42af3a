/* SPDX-License-Identifier: MIT */
#ifndef SIO_GPU_PRIV_H
#define SIO_GPU_PRIV_H

/* Internal to the GPU driver: CUDA error translation. Messages go through
 * libsmartio's sio_err_set() and sio_err_wrap(). */

#include <errno.h>
#include <cuda_runtime_api.h>
#include <smartio/gpu.h>

/* A CUDA failure as -errno, with its words in the message. */
int sio_gpu_cuda_err(cudaError_t e, const char *what);

/* Make @gpu current; -ENODEV when there is none. */
int sio_gpu_use(int gpu);

#endif
