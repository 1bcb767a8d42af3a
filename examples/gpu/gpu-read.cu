/* SPDX-License-Identifier: MIT */
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

// Thread t reads chunks t, t + nthreads, ... through queue t * nq / nthreads:
// neighbouring threads share a queue, so a warp takes its tickets with one
// atomic and its polls coalesce. With @check_data it compares each chunk
// with the pattern as soon as it is read.
static __global__ void read_kernel(struct sio_gpu_queue *const *qs, int nq, uint64_t bus,
				   const uint64_t *data, uint64_t chunks, uint32_t chunk_blocks,
				   uint32_t lba_size, bool check_data, uint64_t seed,
				   struct check *ck)
{
	uint64_t t = blockIdx.x * (uint64_t)blockDim.x + threadIdx.x;
	uint64_t n = (uint64_t)gridDim.x * blockDim.x;
	uint64_t words = (uint64_t)chunk_blocks * lba_size / 8;
	struct sio_gpu_queue *q = qs[t * (uint64_t)nq / n];

	for (uint64_t c = t; c < chunks; c += n) {
		uint16_t st = 0;
		int ret = sio_gpu_read(q, 1, c * chunk_blocks, chunk_blocks, lba_size,
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

// What to read: from the command line.
struct opts {
	const char *fname;
	int node;
	long long device;
	uint32_t mib, threads, nq, depth;
	bool use_pattern;
	uint64_t seed;
};

// A read under way: the connection, the CPU's and the GPU's queues and
// buffers, and what the kernel found.
struct run {
	struct sio_fabric *f;
	struct sio_gpu_nvme *g;
	struct sio_nvme_client *cl;
	struct sio_device *dev;
	struct sio_nvme_ns ns;
	uint64_t bytes, chunks;
	uint32_t chunk, chunk_blocks;	// one command's bytes and blocks
	struct sio_nvme_ioq *q;		// the CPU's
	struct sio_nvme_buf *b;
	struct sio_gpu_queue **dq;	// the GPU's queues, a table in GPU memory
	struct sio_gpu_mem *m;		// where the GPU reads to
	uint64_t bus;
	struct check *dck, hck;
	cudaEvent_t e0, e1;
	float ms;
	uint64_t gsum;
};

// No GPU: skipped (77), or a failure (1) with SMARTIO_REQUIRE_GPU=1; 0: go on.
static int gpu_or_skip(void)
{
	if (sio_gpu_count() > 0)
		return 0;
	if (sio_gpu_required()) {
		fprintf(stderr, "gpu-read: FAIL: SMARTIO_REQUIRE_GPU is set, but %s\n", sio_errmsg());
		return 1;
	}
	printf("skipped: %s\n", sio_errmsg());
	return 77;
}

// Join the fabric and connect to the controller; size the commands.
static int open_controller(const struct opts *o, struct run *r)
{
	struct sio_nvme_ctrl_info ci;

	if (sio_fabric_open(o->fname, o->node, &r->f))
		return fail("fabric", sio_errmsg());
	if (sio_gpu_nvme_open(r->f, o->device, 0, &r->g))
		return fail("connect", sio_errmsg());
	r->cl = sio_gpu_nvme_client(r->g);
	r->dev = sio_nvme_client_device(r->cl);
	sio_nvme_client_info(r->cl, &ci);
	if (sio_nvme_client_ns(r->cl, 1, &r->ns))
		return fail("namespace 1", sio_errmsg());
	r->bytes = (uint64_t)o->mib << 20;
	r->chunk = 64u << 10 < ci.max_xfer ? 64u << 10 : ci.max_xfer;
	r->chunk_blocks = r->chunk / r->ns.lba_size;
	r->chunks = r->bytes / r->chunk;
	if (r->bytes / r->ns.lba_size > r->ns.nsze)
		return fail("size", "the namespace is smaller than --mib");
	return 0;
}

// The CPU's queue and buffer: the pattern goes in first, the check after.
static int cpu_queue(const struct opts *o, struct run *r)
{
	if (sio_nvme_ioq_create(r->cl, NULL, &r->q) || sio_nvme_buf_alloc(r->cl, r->bytes, &r->b))
		return fail("CPU queue", sio_errmsg());
	if (!o->use_pattern)
		return 0;
	uint64_t *w = (uint64_t *)r->b->va;

	for (uint64_t i = 0; i < r->bytes / 8; i++)
		w[i] = sio_gpu_pattern(o->seed, i);
	for (uint64_t i = 0; i < r->chunks; i++)
		if (sio_nvme_write(r->q, 1, i * r->chunk_blocks, r->chunk_blocks, r->b, i * r->chunk))
			return fail("CPU write of the pattern", sio_errmsg());
	return 0;
}

// Queues: SQ and PRP lists in GPU memory, CQ in host memory mapped for the GPU.
static int gpu_queues(const struct opts *o, struct run *r)
{
	struct sio_gpu_queue *hq[64];
	struct sio_gpu_qp *qp[64];
	struct sio_gpu_qp_opts qo = {};
	cudaError_t ce;

	qo.depth = o->depth;
	for (uint32_t i = 0; i < o->nq; i++) {
		struct sio_gpu_qp_info qi;

		if (sio_gpu_qp_create(r->g, &qo, &qp[i]))
			return fail("queue", sio_errmsg());
		sio_gpu_qp_info(qp[i], &qi);
		hq[i] = qi.queue;
		if (i == 0)
			printf("queue %u: depth %u, SQ in %s memory (%s), CQ in %s memory\n", qi.qid,
			       qi.depth, qi.sq_kind == SIO_SEG_GPU ? "GPU" : "host",
			       sio_placement_name((enum sio_placement)qi.sq_place),
			       qi.cq_kind == SIO_SEG_GPU ? "GPU" : "host");
	}
	if ((ce = cudaMalloc(&r->dq, sizeof(*r->dq) * o->nq)) != cudaSuccess ||
	    (ce = cudaMemcpy(r->dq, hq, sizeof(*r->dq) * o->nq, cudaMemcpyHostToDevice)) != cudaSuccess)
		return cuda_fail("queue table", ce);
	return 0;
}

// The destination: GPU memory the controller writes into, poisoned with
// 0xff so that nothing read is mistaken for data that arrived.
static int gpu_buffer(struct run *r)
{
	cudaError_t ce;

	if (sio_gpu_mem_create(r->f, r->bytes, 0, &r->m))
		return fail("GPU memory", sio_errmsg());
	if ((ce = cudaMemset(r->m->dptr, 0xff, r->m->size)) != cudaSuccess)
		return cuda_fail("poisoning GPU memory", ce);
	if (sio_device_map(r->dev, r->m->seg, &r->bus))
		return fail("map GPU memory", sio_errmsg());
	return 0;
}

// The kernel, timed; what it found in r->hck.
static int run_kernel(const struct opts *o, struct run *r)
{
	cudaError_t ce;

	r->hck.first_bad = ~0ull;
	if ((ce = cudaMalloc(&r->dck, sizeof(*r->dck))) != cudaSuccess ||
	    (ce = cudaMemcpy(r->dck, &r->hck, sizeof(r->hck), cudaMemcpyHostToDevice)) != cudaSuccess ||
	    (ce = cudaEventCreate(&r->e0)) != cudaSuccess ||
	    (ce = cudaEventCreate(&r->e1)) != cudaSuccess)
		return cuda_fail("kernel state", ce);
	cudaEventRecord(r->e0);
	read_kernel<<<(o->threads + 127) / 128, o->threads < 128 ? o->threads : 128>>>(
		r->dq, (int)o->nq, r->bus, (const uint64_t *)r->m->dptr, r->chunks, r->chunk_blocks,
		r->ns.lba_size, o->use_pattern, o->seed, r->dck);
	cudaEventRecord(r->e1);
	if ((ce = cudaGetLastError()) != cudaSuccess || (ce = cudaEventSynchronize(r->e1)) != cudaSuccess)
		return cuda_fail("kernel", ce);
	cudaEventElapsedTime(&r->ms, r->e0, r->e1);
	if ((ce = cudaMemcpy(&r->hck, r->dck, sizeof(r->hck), cudaMemcpyDeviceToHost)) != cudaSuccess)
		return cuda_fail("kernel result", ce);
	if (r->hck.err) {
		fprintf(stderr, "gpu-read: a GPU read failed: %d (%s), NVMe status 0x%x (%s)%s\n",
			r->hck.err, strerror(-r->hck.err), r->hck.status,
			sio_nvme_status_str(r->hck.status),
			r->hck.err == -ETIMEDOUT || r->hck.err == -EFAULT ? "; see nvme-emu's stderr "
			"(is SMARTIO_GPU_PLUGIN set for it?)" : "");
		return 1;
	}
	return 0;
}

// What the GPU read: its time, its checksum, the in-kernel check.
static int report_gpu(const struct opts *o, struct run *r)
{
	const struct check *ck = &r->hck;

	if (sio_gpu_checksum(r->m->dptr, r->bytes, &r->gsum))
		return fail("checksum", sio_errmsg());
	printf("GPU read %u MiB in %.3f ms (%.1f MiB/s), %llu commands of %u KiB, "
	       "%u threads, %u queues: checksum %016llx\n", o->mib, r->ms, o->mib / (r->ms / 1000.0),
	       (unsigned long long)r->chunks, r->chunk >> 10, o->threads, o->nq,
	       (unsigned long long)r->gsum);
	if (o->use_pattern)
		printf("in-kernel check against pattern %#llx: %s (%llu words differ%s)\n",
		       (unsigned long long)o->seed, ck->mismatches ? "MISMATCH" : "match",
		       ck->mismatches, ck->mismatches ? ", see below" : "");
	if (ck->mismatches)
		fprintf(stderr, "gpu-read: first bad word %llu (byte 0x%llx)\n",
			ck->first_bad - 1, (ck->first_bad - 1) * 8);
	return 0;
}

// The same blocks through the CPU: 0 when their checksum is the GPU's.
static int cpu_check(const struct opts *o, struct run *r, bool *same)
{
	memset(r->b->va, 0, r->bytes);
	for (uint64_t i = 0; i < r->chunks; i++)
		if (sio_nvme_read(r->q, 1, i * r->chunk_blocks, r->chunk_blocks, r->b, i * r->chunk))
			return fail("CPU read", sio_errmsg());
	uint64_t csum = sio_gpu_checksum_host(r->b->va, r->bytes);
	bool zeros = true;
	for (uint64_t i = 0; i < r->bytes / 8 && zeros; i++)
		zeros = ((uint64_t *)r->b->va)[i] == 0;
	printf("CPU read checksum %016llx: %s\n", (unsigned long long)csum,
	       csum == r->gsum ? "match" : "MISMATCH");
	if (zeros && !o->use_pattern)
		printf("note: the blocks read are all zeros; the GPU buffer was poisoned with 0xff, "
		       "so the match still shows the data moved, but --pattern checks more\n");
	*same = csum == r->gsum;
	return 0;
}

static void teardown(struct run *r)
{
	cudaEventDestroy(r->e0);
	cudaEventDestroy(r->e1);
	cudaFree(r->dck);
	sio_nvme_buf_close(r->cl, r->b);
	sio_nvme_ioq_close(r->q);
	sio_device_unmap(r->dev, r->m->seg);
	sio_gpu_mem_close(r->m);
	cudaFree(r->dq);
	sio_gpu_nvme_close(r->g);
	sio_fabric_close(r->f);
}

// Read with the GPU, check with the CPU: 0 verified, 1 failed, 77 no GPU.
static int run_read(const struct opts *o)
{
	struct run r = {};
	bool same;
	int rc;

	if ((rc = gpu_or_skip()))
		return rc;
	if (open_controller(o, &r) || cpu_queue(o, &r) || gpu_queues(o, &r) || gpu_buffer(&r) ||
	    run_kernel(o, &r) || report_gpu(o, &r) || cpu_check(o, &r, &same))
		return 1;
	rc = same && !r.hck.mismatches ? 0 : 1;
	teardown(&r);
	return rc;
}

int main(int argc, char **argv)
{
	struct opts o = {};
	static const struct option lo[] = {
		{ "fabric", 1, 0, 'f' }, { "node", 1, 0, 'n' }, { "device", 1, 0, 'd' },
		{ "mib", 1, 0, 'm' }, { "threads", 1, 0, 't' }, { "queues", 1, 0, 'q' },
		{ "depth", 1, 0, 'D' }, { "pattern", 1, 0, 'p' }, { "help", 0, 0, 'h' },
		{ 0, 0, 0, 0 } };
	int c;

	o.fname = getenv("SMARTIO_FABRIC");
	o.node = getenv("SMARTIO_NODE") ? atoi(getenv("SMARTIO_NODE")) : 0;
	o.device = -1;
	o.mib = 16, o.threads = 256, o.nq = 4, o.depth = 64;
	while ((c = getopt_long(argc, argv, "f:n:d:m:t:q:D:p:h", lo, NULL)) != -1) {
		switch (c) {
		case 'f': o.fname = optarg; break;
		case 'n': o.node = atoi(optarg); break;
		case 'd': o.device = atoll(optarg); break;
		case 'm': o.mib = (uint32_t)atoi(optarg); break;
		case 't': o.threads = (uint32_t)atoi(optarg); break;
		case 'q': o.nq = (uint32_t)atoi(optarg); break;
		case 'D': o.depth = (uint32_t)atoi(optarg); break;
		case 'p': o.use_pattern = true; o.seed = strtoull(optarg, NULL, 0); break;
		case 'h': usage(stdout); return 0;
		default: usage(stderr); return 2;
		}
	}
	if (!o.fname || !o.mib || !o.threads || o.nq < 1 || o.nq > 64)
		return fail("arguments", "need --fabric (or $SMARTIO_FABRIC), --mib >= 1, "
			    "--threads >= 1, --queues 1..64");
	return run_read(&o);
}
