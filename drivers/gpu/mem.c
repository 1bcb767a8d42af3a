/* SPDX-License-Identifier: MIT */
/*
 * GPU memory as fabric segments: cudaMalloc, export an IPC handle, register
 * the segment; device models reach it through libsmartio-gpudma.so.
 */

#include <stdlib.h>
#include <string.h>
#include <smartio/model.h>
#include "priv.h"

#define GPU_ALIGN	(64ull << 10)

int sio_gpu_placement(int gpu_node, int lender)
{
	if (gpu_node < 0 || lender < 0)
		return sio_err_set(EINVAL, "sio_gpu_placement: node %d / lender %d is negative",
				   gpu_node, lender);
	return gpu_node == lender ? SIO_PLACE_DEVICE : SIO_PLACE_LOCAL;
}

int sio_gpu_mem_create(struct sio_fabric *f, uint64_t size, int gpu, struct sio_gpu_mem **out)
{
	cudaIpcMemHandle_t h;
	struct sio_gpu_mem *m;
	cudaError_t e;
	int ret;

	if (!f || !out)
		return sio_err_set(EINVAL, "sio_gpu_mem_create: NULL argument");
	if (!size || size > SIO_SEG_MAX_SIZE)
		return sio_err_set(EINVAL, "GPU segment size %llu out of range 1..%llu",
				   (unsigned long long)size, (unsigned long long)SIO_SEG_MAX_SIZE);
	ret = sio_gpu_use(gpu);
	if (ret)
		return ret;
	m = calloc(1, sizeof(*m));
	if (!m)
		return sio_err_set(ENOMEM, "out of memory");
	m->gpu = gpu;
	m->size = (size + GPU_ALIGN - 1) & ~(GPU_ALIGN - 1);
	e = cudaMalloc(&m->dptr, m->size);
	if (e != cudaSuccess) {
		free(m);
		return sio_gpu_cuda_err(e, "cudaMalloc");
	}
	e = cudaMemset(m->dptr, 0, m->size);
	if (e == cudaSuccess)
		e = cudaIpcGetMemHandle(&h, m->dptr);
	if (e != cudaSuccess) {
		ret = sio_gpu_cuda_err(e, "exporting GPU memory (cudaIpcGetMemHandle)");
		goto fail;
	}
	ret = sio_segment_create_gpu(f, m->size, gpu, &h, sizeof(h), &m->seg);
	if (ret) {
		ret = sio_err_wrap(-ret, "registering GPU memory");
		goto fail;
	}
	sio_segment_set_name(m->seg, "gpu");
	*out = m;
	return 0;
fail:
	cudaFree(m->dptr);
	free(m);
	return ret;
}

int sio_gpu_segment_create_hinted(struct sio_device *dev, uint64_t size, unsigned int hints,
				  int gpu, struct sio_gpu_mem **out, enum sio_placement *placed)
{
	struct sio_device_info di;
	struct sio_fabric *f;
	int p, ret;

	if (!dev || !out)
		return sio_err_set(EINVAL, "sio_gpu_segment_create_hinted: NULL argument");
	if (!(hints & (SIO_HINT_DEVICE_READ | SIO_HINT_DEVICE_WRITE | SIO_HINT_HOST_READ |
		       SIO_HINT_HOST_WRITE | SIO_HINT_MULTI_READ | SIO_HINT_MULTI_WRITE)))
		return sio_err_set(EINVAL, "hints 0x%x say nothing about the access", hints);
	/* Memory the CPU polls belongs in host RAM: a CPU read of GPU memory
	 * has no mapping here and is slow everywhere. */
	if ((hints & SIO_HINT_HOST_READ) && !(hints & SIO_HINT_DEVICE_READ))
		return sio_err_set(EINVAL, "hints 0x%x ask for memory the host CPU reads: "
				   "use sio_segment_create_hinted()", hints);
	ret = sio_device_info(dev, &di);
	if (ret)
		return sio_err_wrap(-ret, "sio_device_info");
	f = sio_device_fabric(dev);
	p = sio_gpu_placement(sio_fabric_node_id(f), di.lender);
	if (p < 0)
		return p;
	ret = sio_gpu_mem_create(f, size, gpu, out);
	if (ret)
		return ret;
	if (placed)
		*placed = (enum sio_placement)p;
	return 0;
}

void sio_gpu_mem_close(struct sio_gpu_mem *m)
{
	int cur = -1;

	if (!m)
		return;
	/* Unregistered first: device models close their mappings of it at
	 * their next DMA (the GPU plugin's forget()). */
	sio_segment_close(m->seg);
	if (cudaGetDevice(&cur) != cudaSuccess)
		cur = -1;
	if (cur != m->gpu)
		cudaSetDevice(m->gpu);
	cudaFree(m->dptr);
	if (cur >= 0 && cur != m->gpu)
		cudaSetDevice(cur);	/* the caller's current device stays */
	free(m);
}
