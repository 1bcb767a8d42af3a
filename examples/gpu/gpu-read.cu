// SPDX-License-Identifier: MIT
/*
 * gpu-read: a CUDA kernel reads N MiB from an NVMe controller straight into
 * GPU memory, with queues in GPU memory and doorbells rung by the GPU; the
 * GPU checksums the data, and the CPU reads the same blocks through the
 * NVMe client to check it. With --pattern, the CPU first writes a pattern
 * (nowhere zero) over those blocks and every GPU thread checks what it read,
 * in the kernel, right after the completion.
 *
 * The emulated controller reaches GPU memory through the plugin
 * libsmartio-gpudma.so; in a build tree, tell nvme-emu where it is:
 *
 *   SMARTIO_GPU_PLUGIN=$PWD/build/drivers/gpu/libsmartio-gpudma.so \
 *       build/drivers/nvme/emu/nvme-emu --fabric demo --backing ram:256M &
 *   build/drivers/nvme/tools/nvme-manager --fabric demo &
 *   build/examples/gpu/gpu-read --fabric demo --mib 16 --threads 256 --queues 4 --pattern 7
 *
 * Exit status: 0 verified, 1 failure, 2 usage, 77 no GPU (a failure when
 * SMARTIO_REQUIRE_GPU=1).
 */

#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cuda_runtime.h>
#include <smartio/gpu.h>
#include <smartio/gpu/queue.cuh>
#include <smartio/nvme.h>

struct check {
	int err;
	unsigned int status;
	unsigned long long mismatches;
	unsigned long long first_bad;	// word index + 1, lowest wins
};

// Thread t reads chunks t, t + nthreads, ... through queue t % nq; with
// @check_data it compares each chunk with the pattern as soon as it is read.
static __global__ void read_kernel(struct sio_gpu_queue *const *qs, int nq, uint64_t bus,
				   const uint64_t *data, uint64_t chunks, uint32_t chunk_blocks,
				   uint32_t lba_size, bool check_data, uint64_t seed,
				   struct check *ck)
{
	uint64_t t = blockIdx.x * (uint64_t)blockDim.x + threadIdx.x;
	uint64_t n = (uint64_t)gridDim.x * blockDim.x;
	uint64_t words = (uint64_t)chunk_blocks * lba_size / 8;

	for (uint64_t c = t; c < chunks; c += n) {
		uint16_t st = 0;
		int ret = sio_gpu_read(qs[t % nq], 1, c * chunk_blocks, chunk_blocks, lba_size,
				       bus + c * chunk_blocks * lba_size, &st);

		if (ret) {
			if (atomicCAS(&ck->err, 0, ret) == 0)
				ck->status = st;
			continue;
		}
		if (!check_data)
			continue;
		unsigned long long bad = 0, first = 0;
		for (uint64_t k = 0; k < words; k++) {
			uint64_t w = c * words + k;

			if (data[w] != sio_gpu_pattern(seed, w) && !bad++)
				first = w + 1;
		}
		if (bad) {
			atomicAdd(&ck->mismatches, bad);
			atomicMin(&ck->first_bad, first);
		}
	}
}

static int fail(const char *what, const char *msg)
{
	fprintf(stderr, "gpu-read: %s: %s\n", what, msg);
	return 1;
}

static int cuda_fail(const char *what, cudaError_t e)
{
	fprintf(stderr, "gpu-read: %s: %s (%s)\n", what, cudaGetErrorString(e), cudaGetErrorName(e));
	return 1;
}

static void usage(FILE *out)
{
	fprintf(out,
		"usage: gpu-read [--fabric NAME] [--node N] [--device ID] [--mib N] [--threads T]\n"
		"                [--queues Q] [--depth D] [--pattern SEED]\n"
		"  --pattern SEED  first write a pattern over the blocks through the CPU (this\n"
		"                  overwrites them), then check it in the kernel as it is read\n"
		"nvme-emu must find the GPU plugin: start it with\n"
		"  SMARTIO_GPU_PLUGIN=<build>/drivers/gpu/libsmartio-gpudma.so\n"
		"(or install libsmartio-gpudma.so on the library path).\n"
		"SMARTIO_REQUIRE_GPU=1: no GPU is a failure (exit 1), not a skip (exit 77).\n");
}

int main(int argc, char **argv)
{
	const char *fname = getenv("SMARTIO_FABRIC");
	int node = getenv("SMARTIO_NODE") ? atoi(getenv("SMARTIO_NODE")) : 0;
	long long device = -1;
	uint32_t mib = 16, threads = 256, nq = 4, depth = 64;
	bool use_pattern = false;
	uint64_t seed = 0;
	static const struct option lo[] = {
		{ "fabric", 1, 0, 'f' }, { "node", 1, 0, 'n' }, { "device", 1, 0, 'd' },
		{ "mib", 1, 0, 'm' }, { "threads", 1, 0, 't' }, { "queues", 1, 0, 'q' },
		{ "depth", 1, 0, 'D' }, { "pattern", 1, 0, 'p' }, { "help", 0, 0, 'h' },
		{ 0, 0, 0, 0 } };
	cudaError_t ce;
	int c;

	while ((c = getopt_long(argc, argv, "f:n:d:m:t:q:D:p:h", lo, NULL)) != -1) {
		switch (c) {
		case 'f': fname = optarg; break;
		case 'n': node = atoi(optarg); break;
		case 'd': device = atoll(optarg); break;
		case 'm': mib = (uint32_t)atoi(optarg); break;
		case 't': threads = (uint32_t)atoi(optarg); break;
		case 'q': nq = (uint32_t)atoi(optarg); break;
		case 'D': depth = (uint32_t)atoi(optarg); break;
		case 'p': use_pattern = true; seed = strtoull(optarg, NULL, 0); break;
		case 'h': usage(stdout); return 0;
		default: usage(stderr); return 2;
		}
	}
	if (!fname || !mib || !threads || nq < 1 || nq > 64)
		return fail("arguments", "need --fabric (or $SMARTIO_FABRIC), --mib >= 1, "
			    "--threads >= 1, --queues 1..64");
	if (sio_gpu_count() <= 0) {
		if (sio_gpu_required()) {
			fprintf(stderr, "gpu-read: FAIL: SMARTIO_REQUIRE_GPU is set, but %s\n",
				sio_errmsg());
			return 1;
		}
		printf("skipped: %s\n", sio_errmsg());
		return 77;
	}

	struct sio_fabric *f;
	struct sio_gpu_nvme *g;
	if (sio_fabric_open(fname, node, &f))
		return fail("fabric", sio_errmsg());
	if (sio_gpu_nvme_open(f, device, 0, &g))
		return fail("connect", sio_errmsg());
	struct sio_nvme_client *cl = sio_gpu_nvme_client(g);
	struct sio_device *dev = sio_nvme_client_device(cl);
	struct sio_nvme_ctrl_info ci;
	struct sio_nvme_ns ns;
	sio_nvme_client_info(cl, &ci);
	if (sio_nvme_client_ns(cl, 1, &ns))
		return fail("namespace 1", sio_errmsg());
	uint64_t bytes = (uint64_t)mib << 20;
	uint32_t chunk = 64u << 10 < ci.max_xfer ? 64u << 10 : ci.max_xfer;
	uint32_t chunk_blocks = chunk / ns.lba_size;
	uint64_t chunks = bytes / chunk;
	if (bytes / ns.lba_size > ns.nsze)
		return fail("size", "the namespace is smaller than --mib");

	// The CPU's queue and buffer: the pattern goes in first, the check after.
	struct sio_nvme_ioq *q;
	struct sio_nvme_buf *b;
	if (sio_nvme_ioq_create(cl, NULL, &q) || sio_nvme_buf_alloc(cl, bytes, &b))
		return fail("CPU queue", sio_errmsg());
	if (use_pattern) {
		uint64_t *w = (uint64_t *)b->va;

		for (uint64_t i = 0; i < bytes / 8; i++)
			w[i] = sio_gpu_pattern(seed, i);
		for (uint64_t i = 0; i < chunks; i++)
			if (sio_nvme_write(q, 1, i * chunk_blocks, chunk_blocks, b, i * chunk))
				return fail("CPU write of the pattern", sio_errmsg());
	}

	// Queues: SQ and PRP lists in GPU memory, CQ in host memory mapped for the GPU.
	struct sio_gpu_queue *hq[64], **dq;
	struct sio_gpu_qp *qp[64];
	struct sio_gpu_qp_opts o = {};
	o.depth = depth;
	for (uint32_t i = 0; i < nq; i++) {
		struct sio_gpu_qp_info qi;

		if (sio_gpu_qp_create(g, &o, &qp[i]))
			return fail("queue", sio_errmsg());
		sio_gpu_qp_info(qp[i], &qi);
		hq[i] = qi.queue;
		if (i == 0)
			printf("queue %u: depth %u, SQ in %s memory (%s), CQ in %s memory\n", qi.qid,
			       qi.depth, qi.sq_kind == SIO_SEG_GPU ? "GPU" : "host",
			       sio_placement_name((enum sio_placement)qi.sq_place),
			       qi.cq_kind == SIO_SEG_GPU ? "GPU" : "host");
	}
	if ((ce = cudaMalloc(&dq, sizeof(*dq) * nq)) != cudaSuccess ||
	    (ce = cudaMemcpy(dq, hq, sizeof(*dq) * nq, cudaMemcpyHostToDevice)) != cudaSuccess)
		return cuda_fail("queue table", ce);

	// The destination: GPU memory the controller writes into, poisoned with
	// 0xff so that nothing read is mistaken for data that arrived.
	struct sio_gpu_mem *m;
	uint64_t bus;
	if (sio_gpu_mem_create(f, bytes, 0, &m))
		return fail("GPU memory", sio_errmsg());
	if ((ce = cudaMemset(m->dptr, 0xff, m->size)) != cudaSuccess)
		return cuda_fail("poisoning GPU memory", ce);
	if (sio_device_map(dev, m->seg, &bus))
		return fail("map GPU memory", sio_errmsg());

	struct check *dck, hck = {};
	cudaEvent_t e0, e1;
	float ms = 0;
	hck.first_bad = ~0ull;
	if ((ce = cudaMalloc(&dck, sizeof(*dck))) != cudaSuccess ||
	    (ce = cudaMemcpy(dck, &hck, sizeof(hck), cudaMemcpyHostToDevice)) != cudaSuccess ||
	    (ce = cudaEventCreate(&e0)) != cudaSuccess || (ce = cudaEventCreate(&e1)) != cudaSuccess)
		return cuda_fail("kernel state", ce);
	cudaEventRecord(e0);
	read_kernel<<<(threads + 127) / 128, threads < 128 ? threads : 128>>>(
		dq, (int)nq, bus, (const uint64_t *)m->dptr, chunks, chunk_blocks, ns.lba_size,
		use_pattern, seed, dck);
	cudaEventRecord(e1);
	if ((ce = cudaGetLastError()) != cudaSuccess || (ce = cudaEventSynchronize(e1)) != cudaSuccess)
		return cuda_fail("kernel", ce);
	cudaEventElapsedTime(&ms, e0, e1);
	if ((ce = cudaMemcpy(&hck, dck, sizeof(hck), cudaMemcpyDeviceToHost)) != cudaSuccess)
		return cuda_fail("kernel result", ce);
	if (hck.err) {
		fprintf(stderr, "gpu-read: a GPU read failed: %d (%s), NVMe status 0x%x (%s)%s\n",
			hck.err, strerror(-hck.err), hck.status, sio_nvme_status_str(hck.status),
			hck.err == -ETIMEDOUT || hck.err == -EFAULT ? "; see nvme-emu's stderr "
			"(is SMARTIO_GPU_PLUGIN set for it?)" : "");
		return 1;
	}
	uint64_t gsum;
	if (sio_gpu_checksum(m->dptr, bytes, &gsum))
		return fail("checksum", sio_errmsg());
	printf("GPU read %u MiB in %.3f ms (%.1f MiB/s), %llu commands of %u KiB, "
	       "%u threads, %u queues: checksum %016llx\n", mib, ms, mib / (ms / 1000.0),
	       (unsigned long long)chunks, chunk >> 10, threads, nq, (unsigned long long)gsum);
	if (use_pattern)
		printf("in-kernel check against pattern %#llx: %s (%llu words differ%s)\n",
		       (unsigned long long)seed, hck.mismatches ? "MISMATCH" : "match",
		       hck.mismatches, hck.mismatches ? ", see below" : "");
	if (hck.mismatches)
		fprintf(stderr, "gpu-read: first bad word %llu (byte 0x%llx)\n",
			hck.first_bad - 1, (hck.first_bad - 1) * 8);

	// The same blocks through the CPU.
	memset(b->va, 0, bytes);
	for (uint64_t i = 0; i < chunks; i++)
		if (sio_nvme_read(q, 1, i * chunk_blocks, chunk_blocks, b, i * chunk))
			return fail("CPU read", sio_errmsg());
	uint64_t csum = sio_gpu_checksum_host(b->va, bytes);
	bool zeros = true;
	for (uint64_t i = 0; i < bytes / 8 && zeros; i++)
		zeros = ((uint64_t *)b->va)[i] == 0;
	printf("CPU read checksum %016llx: %s\n", (unsigned long long)csum,
	       csum == gsum ? "match" : "MISMATCH");
	if (zeros && !use_pattern)
		printf("note: the blocks read are all zeros; the GPU buffer was poisoned with 0xff, "
		       "so the match still shows the data moved, but --pattern checks more\n");

	int ok = csum == gsum && !hck.mismatches;
	cudaEventDestroy(e0);
	cudaEventDestroy(e1);
	cudaFree(dck);
	sio_nvme_buf_close(cl, b);
	sio_nvme_ioq_close(q);
	sio_device_unmap(dev, m->seg);
	sio_gpu_mem_close(m);
	cudaFree(dq);
	sio_gpu_nvme_close(g);
	sio_fabric_close(f);
	return ok ? 0 : 1;
}
