/* SPDX-License-Identifier: MIT */
#ifndef SIO_GPU_PRIV_H
#define SIO_GPU_PRIV_H

/* Internal to the GPU driver: errors and CUDA error translation. */

#include <errno.h>
#include <cuda_runtime_api.h>
#include <smartio/gpu.h>

/* Set the thread's message and return -err. */
int sio_gpu_err(int err, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* A CUDA failure as -errno, with its words in the message. */
int sio_gpu_cuda_err(cudaError_t e, const char *what);

/* Make @gpu current; -ENODEV when there is none. */
int sio_gpu_use(int gpu);

#endif
