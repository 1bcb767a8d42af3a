/* SPDX-License-Identifier: MIT */
/* CUDA errors as -errno with a message, and what the GPU driver knows of GPUs. */

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "priv.h"

int sio_gpu_cuda_err(cudaError_t e, const char *what)
{
	int err;

	switch (e) {
	case cudaErrorNoDevice:
	case cudaErrorInsufficientDriver:
	case cudaErrorInvalidDevice:
		err = ENODEV;
		break;
	case cudaErrorMemoryAllocation:
		err = ENOMEM;
		break;
	case cudaErrorInvalidValue:
		err = EINVAL;
		break;
	default:
		err = EIO;
		break;
	}
	return sio_err_set(err, "%s: %s (%s)", what, cudaGetErrorString(e), cudaGetErrorName(e));
}

int sio_gpu_count(void)
{
	int n = 0, rt = 0, drv = 0;
	cudaError_t e = cudaGetDeviceCount(&n);

	if (e != cudaSuccess) {
		cudaRuntimeGetVersion(&rt);
		cudaDriverGetVersion(&drv);
		if (!drv)
			return sio_err_set(ENODEV, "no GPU: %s (%s): no NVIDIA driver is loaded "
					   "(libcuda.so.1 not found or no kernel module)",
					   cudaGetErrorString(e), cudaGetErrorName(e));
		return sio_err_set(ENODEV, "no GPU: %s (%s); the CUDA runtime is %d.%d, the "
				   "driver supports CUDA up to %d.%d", cudaGetErrorString(e),
				   cudaGetErrorName(e), rt / 1000, rt % 1000 / 10, drv / 1000,
				   drv % 1000 / 10);
	}
	if (n <= 0)
		return sio_err_set(ENODEV, "no GPU: CUDA reports no device");
	return n;
}

int sio_gpu_use(int gpu)
{
	int n = sio_gpu_count();
	cudaError_t e;

	if (n < 0)
		return n;
	if (gpu < 0 || gpu >= n)
		return sio_err_set(ENODEV, "GPU %d does not exist (%d present)", gpu, n);
	e = cudaSetDevice(gpu);
	return e == cudaSuccess ? 0 : sio_gpu_cuda_err(e, "cudaSetDevice");
}

bool sio_gpu_required(void)
{
	const char *v = getenv("SMARTIO_REQUIRE_GPU");

	return v && *v && strcmp(v, "0") != 0;
}
