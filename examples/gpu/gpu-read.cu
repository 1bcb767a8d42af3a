// SPDX-License-Identifier: MIT
/*
 * gpu-read: a CUDA kernel reads N MiB from an NVMe controller straight into
 * GPU memory, with queues in GPU memory and doorbells rung by the GPU; the
 * GPU checksums the data, and the CPU reads the same blocks through the
 * NVMe client to check it.
 *
 *   nvme-emu --fabric demo & nvme-manager --fabric demo &
 *   gpu-read --fabric demo --mib 16 --threads 256 --queues 4
 */

#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cuda_runtime.h>
#include <smartio/gpu.h>
#include <smartio/nvme/client.h>

// Thread t reads chunks t, t + nthreads, ... through queue t % nq.
static __global__ void read_kernel(struct sio_gpu_queue *const *qs, int nq, uint64_t bus,
				   uint64_t chunks, uint32_t chunk_blocks, uint32_t lba_size,
				   int *err, uint16_t *status)
{
	uint64_t t = blockIdx.x * (uint64_t)blockDim.x + threadIdx.x;
	uint64_t n = (uint64_t)gridDim.x * blockDim.x;

	for (uint64_t c = t; c < chunks; c += n) {
		uint16_t st = 0;
		int ret = sio_gpu_read(qs[t % nq], 1, c * chunk_blocks, chunk_blocks, lba_size,
				       bus + c * chunk_blocks * lba_size, &st);

		if (ret && atomicCAS(err, 0, ret) == 0)
			*status = st;
	}
}

static int fail(const char *what, const char *msg)
{
	fprintf(stderr, "gpu-read: %s: %s\n", what, msg);
	return 1;
}

int main(int argc, char **argv)
{
	const char *fname = getenv("SMARTIO_FABRIC");
	int node = getenv("SMARTIO_NODE") ? atoi(getenv("SMARTIO_NODE")) : 0;
	long long device = -1;
	uint32_t mib = 16, threads = 256, nq = 4, depth = 64;
	static const struct option lo[] = {
		{ "fabric", 1, 0, 'f' }, { "node", 1, 0, 'n' }, { "device", 1, 0, 'd' },
		{ "mib", 1, 0, 'm' }, { "threads", 1, 0, 't' }, { "queues", 1, 0, 'q' },
		{ "depth", 1, 0, 'D' }, { 0, 0, 0, 0 } };
	int c;

	while ((c = getopt_long(argc, argv, "f:n:d:m:t:q:D:", lo, NULL)) != -1) {
		switch (c) {
		case 'f': fname = optarg; break;
		case 'n': node = atoi(optarg); break;
		case 'd': device = atoll(optarg); break;
		case 'm': mib = (uint32_t)atoi(optarg); break;
		case 't': threads = (uint32_t)atoi(optarg); break;
		case 'q': nq = (uint32_t)atoi(optarg); break;
		case 'D': depth = (uint32_t)atoi(optarg); break;
		default:
			fprintf(stderr, "usage: gpu-read [--fabric NAME] [--node N] [--device ID] "
				"[--mib N] [--threads T] [--queues Q] [--depth D]\n");
			return 2;
		}
	}
	if (!fname || !mib || !threads || nq < 1 || nq > 64)
		return fail("arguments", "need --fabric (or $SMARTIO_FABRIC), --mib >= 1, "
			    "--threads >= 1, --queues 1..64");
	if (sio_gpu_count() <= 0) {
		printf("skipped: %s\n", sio_gpu_errmsg());
		return 77;
	}

	struct sio_fabric *f;
	struct sio_gpu_nvme *g;
	if (sio_fabric_open(fname, node, &f))
		return fail("fabric", sio_errmsg());
	if (sio_gpu_nvme_open(f, device, 0, &g))
		return fail("connect", sio_gpu_errmsg());
	struct sio_nvme_client *cl = sio_gpu_nvme_client(g);
	struct sio_device *dev = sio_nvme_client_device(cl);
	struct sio_nvme_ctrl_info ci;
	struct sio_nvme_ns ns;
	sio_nvme_client_info(cl, &ci);
	if (sio_nvme_client_ns(cl, 1, &ns))
		return fail("namespace 1", sio_nvme_errmsg());
	uint64_t bytes = (uint64_t)mib << 20;
	uint32_t chunk = 64u << 10 < ci.max_xfer ? 64u << 10 : ci.max_xfer;
	uint32_t chunk_blocks = chunk / ns.lba_size;
	uint64_t chunks = bytes / chunk;
	if (bytes / ns.lba_size > ns.nsze)
		return fail("size", "the namespace is smaller than --mib");

	// Queues: SQ and PRP lists in GPU memory, CQ in host memory mapped for the GPU.
	struct sio_gpu_queue *hq[64], **dq;
	struct sio_gpu_qp *qp[64];
	struct sio_gpu_qp_opts o = {};
	o.depth = depth;
	for (uint32_t i = 0; i < nq; i++) {
		struct sio_gpu_qp_info qi;

		if (sio_gpu_qp_create(g, &o, &qp[i]))
			return fail("queue", sio_gpu_errmsg());
		sio_gpu_qp_info(qp[i], &qi);
		hq[i] = qi.queue;
		if (i == 0)
			printf("queue %u: depth %u, SQ in %s memory (%s), CQ in %s memory\n", qi.qid,
			       qi.depth, qi.sq_kind == SIO_SEG_GPU ? "GPU" : "host",
			       sio_placement_name((enum sio_placement)qi.sq_place),
			       qi.cq_kind == SIO_SEG_GPU ? "GPU" : "host");
	}
	cudaMalloc(&dq, sizeof(*dq) * nq);
	cudaMemcpy(dq, hq, sizeof(*dq) * nq, cudaMemcpyHostToDevice);

	// The destination: GPU memory the controller writes into.
	struct sio_gpu_mem *m;
	uint64_t bus;
	if (sio_gpu_mem_create(f, bytes, 0, &m))
		return fail("GPU memory", sio_gpu_errmsg());
	if (sio_device_map(dev, m->seg, &bus))
		return fail("map GPU memory", sio_errmsg());

	int *derr, herr = 0;
	uint16_t *dst, hst = 0;
	cudaEvent_t e0, e1;
	float ms = 0;
	cudaMalloc(&derr, sizeof(int));
	cudaMalloc(&dst, sizeof(uint16_t));
	cudaMemset(derr, 0, sizeof(int));
	cudaEventCreate(&e0);
	cudaEventCreate(&e1);
	cudaEventRecord(e0);
	read_kernel<<<(threads + 127) / 128, threads < 128 ? threads : 128>>>(
		dq, (int)nq, bus, chunks, chunk_blocks, ns.lba_size, derr, dst);
	cudaEventRecord(e1);
	if (cudaEventSynchronize(e1) != cudaSuccess)
		return fail("kernel", cudaGetErrorString(cudaGetLastError()));
	cudaEventElapsedTime(&ms, e0, e1);
	cudaMemcpy(&herr, derr, sizeof(int), cudaMemcpyDeviceToHost);
	cudaMemcpy(&hst, dst, sizeof(uint16_t), cudaMemcpyDeviceToHost);
	if (herr) {
		fprintf(stderr, "gpu-read: a GPU read failed: %d (%s), NVMe status 0x%x (%s)\n", herr,
			strerror(-herr), hst, sio_nvme_status_str(hst));
		return 1;
	}
	uint64_t gsum;
	if (sio_gpu_checksum(m->dptr, bytes, &gsum))
		return fail("checksum", sio_gpu_errmsg());
	printf("GPU read %u MiB in %.3f ms (%.1f MiB/s), %llu commands of %u KiB, "
	       "%u threads, %u queues: checksum %016llx\n", mib, ms, mib / (ms / 1000.0),
	       (unsigned long long)chunks, chunk >> 10, threads, nq, (unsigned long long)gsum);

	// The same blocks through the CPU.
	struct sio_nvme_ioq *q;
	struct sio_nvme_buf *b;
	if (sio_nvme_ioq_create(cl, NULL, &q) || sio_nvme_buf_alloc(cl, bytes, &b))
		return fail("CPU queue", sio_nvme_errmsg());
	for (uint64_t i = 0; i < chunks; i++)
		if (sio_nvme_read(q, 1, i * chunk_blocks, chunk_blocks, b, i * chunk))
			return fail("CPU read", sio_nvme_errmsg());
	uint64_t csum = sio_gpu_checksum_host(b->va, bytes);
	printf("CPU read checksum %016llx: %s\n", (unsigned long long)csum,
	       csum == gsum ? "match" : "MISMATCH");

	sio_nvme_buf_free(cl, b);
	sio_nvme_ioq_destroy(q);
	sio_device_unmap(dev, m->seg);
	sio_gpu_mem_free(m);
	cudaFree(dq);
	sio_gpu_nvme_close(g);
	sio_fabric_close(f);
	return csum == gsum ? 0 : 1;
}
