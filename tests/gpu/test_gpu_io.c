/* SPDX-License-Identifier: MIT */
/*
 * GPU paths end to end: an emulated NVMe controller (nvme-emu, its own
 * process, reaching GPU memory through the plugin), the manager (its own
 * process), and CUDA kernels in this process driving GPU-hosted queues.
 *
 * Every read is checked twice: in the kernel, by the thread that issued
 * it, right after its completion (data that has not landed yet shows up
 * there), and by the CPU after the kernel. Destination buffers are poisoned
 * with 0xff first and the namespace holds a pattern that is nowhere zero,
 * so a read that moved nothing cannot pass.
 *
 * Without a GPU the suite prints why and exits 77 (meson: SKIP);
 * SMARTIO_REQUIRE_GPU=1 makes that a failure. Queue timeouts are 2 s at
 * most, so a failure costs seconds.
 */

#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <criterion/criterion.h>
#include <cuda_runtime_api.h>
#include <smartio/gpu.h>
#include <smartio/nvme/client.h>
#include "cluster.h"
#include "gpumain.h"
#include "mps.h"

#define TIMEOUT_MS	2000

static struct cluster C;
static struct sio_fabric *fab;
static struct sio_gpu_nvme *gn;
static struct sio_nvme_ns ns;

static void need_gpu(void)
{
	if (sio_gpu_count() <= 0)
		cr_skip_test("%s", sio_errmsg());
}

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static void up(const char *const *emu_args)
{
	int ret = -1;

	if (sio_gpu_count() <= 0)
		return;		/* the test skips */
	cluster_up(&C, 2, 0, emu_args);
	cr_assert_eq(sio_fabric_open(C.fabric, 0, &fab), 0, "%s", sio_errmsg());
	for (int i = 0; i < 100; i++) {
		ret = sio_gpu_nvme_open(fab, -1, 0, &gn);
		if (ret != -ENOENT && ret != -EBUSY && ret != -EAGAIN)
			break;
		usleep(50000);
	}
	cr_assert_eq(ret, 0, "sio_gpu_nvme_open: %s", sio_errmsg());
	cr_assert_eq(sio_nvme_client_ns(sio_gpu_nvme_client(gn), 1, &ns), 0, "%s",
		     sio_errmsg());
}

static void setup(void)
{
	static const char *const args[] = { "--backing", "ram:64M", NULL };

	up(args);
}

static void setup_confined(void)
{
	static const char *const args[] = { "--backing", "ram:64M", "--dstrd", "10", NULL };

	up(args);
}

static void teardown(void)
{
	sio_gpu_nvme_close(gn);
	gn = NULL;
	if (fab)
		sio_fabric_close(fab);
	fab = NULL;
	if (C.fabric[0]) {
		/* the controller's log, for whoever reads a failure */
		char *log = cluster_output(&C, "nvme-emu", "err");

		if (log[0])
			fprintf(stderr, "nvme-emu stderr:\n%s\n", log);
		cluster_down(&C);
	}
}

static uint64_t word_of(uint64_t lba)
{
	return lba * ns.lba_size / 8;
}

/* Write sio_gpu_pattern(@seed) over blocks [@slba, +@blocks) through the CPU. */
static void cpu_pattern(uint64_t slba, uint64_t blocks, uint64_t seed)
{
	struct sio_nvme_client *cl = sio_gpu_nvme_client(gn);
	struct sio_nvme_ioq *q;
	struct sio_nvme_buf *b;
	uint64_t *w, chunk = 64;

	cr_assert_eq(sio_nvme_ioq_create(cl, NULL, &q), 0, "%s", sio_errmsg());
	cr_assert_eq(sio_nvme_buf_alloc(cl, blocks * ns.lba_size, &b), 0, "%s", sio_errmsg());
	w = b->va;
	for (uint64_t i = 0; i < blocks * ns.lba_size / 8; i++)
		w[i] = sio_gpu_pattern(seed, word_of(slba) + i);
	for (uint64_t d = 0; d < blocks; d += chunk)
		cr_assert_eq(sio_nvme_write(q, 1, slba + d, blocks - d < chunk ? blocks - d : chunk,
					    b, d * ns.lba_size), 0, "%s", sio_errmsg());
	sio_nvme_buf_close(cl, b);
	sio_nvme_ioq_close(q);
}

/* Read blocks [@slba, +@blocks) through the CPU and count pattern mismatches. */
static uint64_t cpu_check(uint64_t slba, uint64_t blocks, uint64_t seed)
{
	struct sio_nvme_client *cl = sio_gpu_nvme_client(gn);
	struct sio_nvme_ioq *q;
	struct sio_nvme_buf *b;
	uint64_t *w, chunk = 64, bad = 0;

	cr_assert_eq(sio_nvme_ioq_create(cl, NULL, &q), 0, "%s", sio_errmsg());
	cr_assert_eq(sio_nvme_buf_alloc(cl, blocks * ns.lba_size, &b), 0, "%s", sio_errmsg());
	memset(b->va, 0, blocks * ns.lba_size);
	for (uint64_t d = 0; d < blocks; d += chunk)
		cr_assert_eq(sio_nvme_read(q, 1, slba + d, blocks - d < chunk ? blocks - d : chunk,
					   b, d * ns.lba_size), 0, "%s", sio_errmsg());
	w = b->va;
	for (uint64_t i = 0; i < blocks * ns.lba_size / 8; i++)
		bad += w[i] != sio_gpu_pattern(seed, word_of(slba) + i);
	sio_nvme_buf_close(cl, b);
	sio_nvme_ioq_close(q);
	return bad;
}

static struct sio_gpu_qp *qp_make(uint32_t depth, bool sq_in_host, bool cq_in_gpu,
				  struct sio_gpu_qp_info *qi)
{
	struct sio_gpu_qp_opts o = { .depth = depth, .sq_in_host = sq_in_host,
				     .cq_in_gpu = cq_in_gpu, .timeout_ms = TIMEOUT_MS };
	struct sio_gpu_qp *qp;

	cr_assert_eq(sio_gpu_qp_create(gn, &o, &qp), 0, "%s", sio_errmsg());
	sio_gpu_qp_info(qp, qi);
	return qp;
}

struct gbuf {
	struct sio_gpu_mem *m;
	uint64_t bus;
};

/* GPU memory mapped for the controller, poisoned with 0xff. */
static void gbuf_make(struct gbuf *b, uint64_t size)
{
	struct sio_device *dev = sio_nvme_client_device(sio_gpu_nvme_client(gn));

	cr_assert_eq(sio_gpu_mem_create(fab, size, 0, &b->m), 0, "%s", sio_errmsg());
	cr_assert_eq(cudaMemset(b->m->dptr, 0xff, b->m->size), cudaSuccess);
	cr_assert_eq(sio_device_map(dev, b->m->seg, &b->bus), 0, "%s", sio_errmsg());
}

static void gbuf_free(struct gbuf *b)
{
	sio_device_unmap(sio_nvme_client_device(sio_gpu_nvme_client(gn)), b->m->seg);
	sio_gpu_mem_close(b->m);
}

/*
 * A kernel of @threads threads reads blocks [@slba, +@blocks) in commands of
 * @nlb blocks over @nq queues, checks each in the kernel; then the CPU
 * checks the whole buffer. The namespace must hold pattern @seed there.
 */
static void gpu_read_check(struct sio_gpu_queue *const *dq, int nq, uint32_t threads,
			   uint32_t nlb, uint64_t slba, uint64_t blocks, uint64_t seed)
{
	struct sio_gpu_job_result r;
	struct gbuf b;
	uint64_t size = blocks * ns.lba_size, *h, bad = 0, first = 0;

	gbuf_make(&b, size);
	struct sio_gpu_job j = { .opcode = SIO_NVME_CMD_READ, .nsid = 1, .lba_size = ns.lba_size,
				 .nlb = nlb, .nios = blocks / nlb, .slba = slba, .threads = threads,
				 .dptr = b.m->dptr, .bus = b.bus, .size = size, .verify = true,
				 .pattern = seed };
	cr_assert_eq(sio_gpu_run_job(dq, nq, &j, &r), 0, "%s", sio_errmsg());
	cr_expect_eq(r.failed, 0, "%llu failed, first %d status 0x%x",
		     (unsigned long long)r.failed, r.first_err, r.first_status);
	cr_expect_eq(r.ok, blocks / nlb);
	cr_expect_eq(r.mismatches, 0, "in the kernel, right after completion: %llu words "
		     "differ, first word %llu = 0x%llx (0xffffffffffffffff: the data had not "
		     "landed)", (unsigned long long)r.mismatches,
		     (unsigned long long)r.first_bad_word, (unsigned long long)r.first_bad_value);
	h = malloc(size);
	cr_assert_eq(cudaMemcpy(h, b.m->dptr, size, cudaMemcpyDeviceToHost), cudaSuccess);
	for (uint64_t i = 0; i < size / 8; i++)
		if (h[i] != sio_gpu_pattern(seed, word_of(slba) + i) && !bad++)
			first = i;
	cr_expect_eq(bad, 0, "after the kernel: %llu words differ, first %llu = 0x%llx",
		     (unsigned long long)bad, (unsigned long long)first,
		     (unsigned long long)h[first]);
	free(h);
	gbuf_free(&b);
}

static void qps_read(uint32_t threads, int nq, uint32_t depth, uint32_t nlb, uint64_t blocks)
{
	struct sio_gpu_queue *dq[8];
	struct sio_gpu_qp *qp[8];
	struct sio_gpu_qp_info qi;

	cpu_pattern(0, blocks, 0);
	for (int i = 0; i < nq; i++) {
		qp[i] = qp_make(depth, false, false, &qi);
		cr_expect_eq(qi.sq_kind, SIO_SEG_GPU);
		cr_expect_eq(qi.sq_place, SIO_PLACE_DEVICE);
		dq[i] = qi.queue;
	}
	gpu_read_check(dq, nq, threads, nlb, 0, blocks, 0);
	for (int i = 0; i < nq; i++) {
		cr_expect_eq(sio_gpu_queue_failed(dq[i]), 0);
		sio_gpu_qp_close(qp[i]);
	}
}

TestSuite(gpu_io, .init = setup, .fini = teardown, .timeout = 120);

Test(gpu_io, verified_read)
{
	need_gpu();
	qps_read(64, 2, 32, 8, 2048);
}

Test(gpu_io, many_threads_one_queue)
{
	need_gpu();
	qps_read(1024, 1, 16, 1, 4096);
}

/* One thread, one command, then 64 one after the other: the latency line
 * tools/gpu-check.sh prints. Tens of microseconds expected; milliseconds
 * mean the controller's copies wait behind the kernel (review R1). */
Test(gpu_io, qd1_single)
{
	struct sio_gpu_qp_info qi;
	struct sio_gpu_qp *qp;
	struct sio_gpu_job_result r;
	struct gbuf b;
	uint64_t *dlat, lat[64], nlb;

	need_gpu();
	nlb = 4096 / ns.lba_size;
	cpu_pattern(0, 64 * nlb, 0x51);
	qp = qp_make(2, false, false, &qi);
	cr_expect_eq(qi.depth, 2);
	gpu_read_check(&qi.queue, 1, 1, nlb, 0, nlb, 0x51);
	gbuf_make(&b, 64 * nlb * ns.lba_size);
	cr_assert_eq(cudaMalloc((void **)&dlat, sizeof(lat)), cudaSuccess);
	struct sio_gpu_job j = { .opcode = SIO_NVME_CMD_READ, .nsid = 1, .lba_size = ns.lba_size,
				 .nlb = nlb, .nios = 64, .threads = 1, .dptr = b.m->dptr,
				 .bus = b.bus, .size = b.m->size, .lat_ns = dlat, .verify = true,
				 .pattern = 0x51 };
	cr_assert_eq(sio_gpu_run_job(&qi.queue, 1, &j, &r), 0, "%s", sio_errmsg());
	cr_expect_eq(r.ok, 64, "%llu failed, first %d", (unsigned long long)r.failed, r.first_err);
	cr_expect_eq(r.mismatches, 0);
	cr_assert_eq(cudaMemcpy(lat, dlat, sizeof(lat), cudaMemcpyDeviceToHost), cudaSuccess);
	for (int i = 1; i < 64; i++)	/* insertion sort */
		for (int k = i; k > 0 && lat[k - 1] > lat[k]; k--) {
			uint64_t t = lat[k];

			lat[k] = lat[k - 1];
			lat[k - 1] = t;
		}
	printf("QD1 latency (1 GPU thread, depth 2, 4 KiB reads, 64 commands): "
	       "min %.1f us, median %.1f us, max %.1f us\n", lat[0] / 1e3, lat[32] / 1e3,
	       lat[63] / 1e3);
	fflush(stdout);
	cudaFree(dlat);
	gbuf_free(&b);
	sio_gpu_qp_close(qp);
}

/* SQ in GPU or host memory x CQ in host or GPU memory. */
Test(gpu_io, placements)
{
	uint32_t nlb;

	need_gpu();
	nlb = 4096 / ns.lba_size;
	cpu_pattern(0, 256 * nlb, 0x9);
	for (int k = 0; k < 4; k++) {
		bool sq_host = k & 1, cq_gpu = k & 2;
		struct sio_gpu_qp_info qi;
		struct sio_gpu_qp *qp = qp_make(32, sq_host, cq_gpu, &qi);

		cr_expect_eq(qi.sq_kind, sq_host ? SIO_SEG_RAM : SIO_SEG_GPU, "placement %d", k);
		cr_expect_eq(qi.cq_kind, cq_gpu ? SIO_SEG_GPU : SIO_SEG_RAM, "placement %d", k);
		gpu_read_check(&qi.queue, 1, 32, nlb, 0, 256 * nlb, 0x9);
		cr_expect_eq(sio_gpu_queue_failed(qi.queue), 0, "placement %d", k);
		sio_gpu_qp_close(qp);
	}
}

/* 128 KiB per command, checked by the thread that read it, in the kernel,
 * right after the completion: a completion posted before its data (review
 * D1) fails here. */
Test(gpu_io, data_checked_in_kernel)
{
	struct sio_nvme_ctrl_info ci;
	struct sio_gpu_qp_info qi;
	struct sio_gpu_qp *qp;
	uint32_t bytes = 128 << 10, nlb;

	need_gpu();
	sio_nvme_client_info(sio_gpu_nvme_client(gn), &ci);
	if (ci.max_xfer < bytes)
		bytes = ci.max_xfer;
	nlb = bytes / ns.lba_size;
	cpu_pattern(0, 64 * nlb, 0x1234);
	qp = qp_make(32, false, false, &qi);
	gpu_read_check(&qi.queue, 1, 16, nlb, 0, 64 * nlb, 0x1234);
	sio_gpu_qp_close(qp);
}

/* The kernel writes a pattern it made itself; the CPU reads it back. */
Test(gpu_io, write_then_cpu_read)
{
	struct sio_gpu_qp_info qi;
	struct sio_gpu_job_result r;
	struct sio_gpu_qp *qp;
	struct gbuf b;
	uint32_t nlb;
	uint64_t blocks, bad;

	need_gpu();
	nlb = 4096 / ns.lba_size;
	blocks = 512 * nlb;
	cpu_pattern(1024, blocks, 0x1);		/* something else there first */
	qp = qp_make(32, false, false, &qi);
	gbuf_make(&b, blocks * ns.lba_size);
	struct sio_gpu_job j = { .opcode = SIO_NVME_CMD_WRITE, .nsid = 1, .lba_size = ns.lba_size,
				 .nlb = nlb, .nios = 512, .slba = 1024, .threads = 32,
				 .dptr = b.m->dptr, .bus = b.bus, .size = b.m->size, .verify = true,
				 .pattern = 0x77 };
	cr_assert_eq(sio_gpu_run_job(&qi.queue, 1, &j, &r), 0, "%s", sio_errmsg());
	cr_expect_eq(r.ok, 512, "%llu failed, first %d status 0x%x", (unsigned long long)r.failed,
		     r.first_err, r.first_status);
	bad = cpu_check(1024, blocks, 0x77);
	cr_expect_eq(bad, 0, "%llu words the GPU wrote read back wrong", (unsigned long long)bad);
	gbuf_free(&b);
	sio_gpu_qp_close(qp);
}

/* An NVMe error is the command's, not the queue's: -EIO with the status,
 * the queue stays healthy and the next read works. */
Test(gpu_io, error_status_does_not_fail_the_queue)
{
	struct sio_gpu_qp_info qi;
	struct sio_gpu_job_result r;
	struct sio_gpu_qp *qp;
	struct gbuf b;

	need_gpu();
	cpu_pattern(0, 64, 0x3);
	qp = qp_make(8, false, false, &qi);
	gbuf_make(&b, 65536);
	struct sio_gpu_job j = { .opcode = SIO_NVME_CMD_READ, .nsid = 1, .lba_size = ns.lba_size,
				 .nlb = 1, .nios = 1, .slba = ns.nsze, .threads = 1,
				 .dptr = b.m->dptr, .bus = b.bus, .size = b.m->size };
	cr_assert_eq(sio_gpu_run_job(&qi.queue, 1, &j, &r), 0, "%s", sio_errmsg());
	cr_expect_eq(r.ok, 0);
	cr_expect_eq(r.failed, 1);
	cr_expect_eq(r.first_err, -EIO, "%d", r.first_err);
	cr_expect_eq(r.first_status, 0x0080, "status 0x%x, not LBA Out of Range", r.first_status);
	cr_expect_eq(sio_gpu_queue_failed(qi.queue), 0, "an NVMe error failed the queue");
	gbuf_free(&b);
	gpu_read_check(&qi.queue, 1, 4, 1, 0, 64, 0x3);
	sio_gpu_qp_close(qp);
}

/* One queue pair across kernel launches, then tickets across 2^32. */
Test(gpu_io, reuse_and_ticket_wrap)
{
	struct sio_gpu_qp_info qi;
	struct sio_gpu_qp *qp;
	uint32_t nlb = 4096 / ns.lba_size;

	need_gpu();
	cpu_pattern(0, 256 * nlb, 0x5);
	qp = qp_make(16, false, false, &qi);
	cr_assert_eq(qi.depth, 16);
	gpu_read_check(&qi.queue, 1, 8, nlb, 0, 64 * nlb, 0x5);
	gpu_read_check(&qi.queue, 1, 8, nlb, 64 * nlb, 64 * nlb, 0x5);
	/* a ticket must keep its SQ slot: 128 commands so far, slot 0 next */
	cr_expect_eq(sio_gpu_queue_set_ticket(qi.queue, 0xffffffffu - 20), -EINVAL);
	cr_expect(strstr(sio_errmsg(), "SQ tail is at slot 0"), "%s", sio_errmsg());
	/* 2 x depth tickets before the wrap, 3 x depth commands across it */
	cr_assert_eq(sio_gpu_queue_set_ticket(qi.queue, 0u - 2 * 16), 0, "%s", sio_errmsg());
	gpu_read_check(&qi.queue, 1, 8, nlb, 128 * nlb, 48 * nlb, 0x5);
	cr_expect_eq(sio_gpu_queue_failed(qi.queue), 0, "the wrap failed the queue");
	/* and once more, well past it */
	gpu_read_check(&qi.queue, 1, 16, nlb, 0, 256 * nlb, 0x5);
	cr_expect_eq(sio_gpu_queue_failed(qi.queue), 0);
	sio_gpu_qp_close(qp);
}

/* Doorbells a page apart: the manager confines BAR0 and the GPU queue pair
 * registers only its own doorbell pages (review D5). */
Test(gpu_confined, doorbells_only, .init = setup_confined, .fini = teardown, .timeout = 120)
{
	need_gpu();
	qps_read(64, 2, 32, 8, 1024);
}

/* ---- without a controller ---- */

struct bg_job {
	struct sio_gpu_queue *q;
	struct sio_gpu_job j;
	struct sio_gpu_job_result r;
	int ret;
};

static void *bg_run(void *arg)
{
	struct bg_job *b = arg;

	b->ret = sio_gpu_run_job(&b->q, 1, &b->j, &b->r);
	return NULL;
}

/* Doorbells nobody listens to: every wait ends in -ETIMEDOUT, the GPU does
 * not hang, the queue is marked failed, every thread leaves soon after the
 * first timeout, and the host can read the state while the kernel runs. */
Test(gpu_nodev, timeout_fails_the_queue, .timeout = 60)
{
	struct sio_gpu_queue_desc d = { .depth = 8, .page = 4096, .max_xfer = 4096,
					.timeout_ns = 1000000000ull, .qid = 1 };
	struct bg_job b = { 0 };
	pthread_t th;
	double t0, t1, t;
	void *mem;
	int v;

	need_gpu();
	cr_assert_eq(cudaMalloc(&mem, 1 << 20), cudaSuccess);
	cudaMemset(mem, 0, 1 << 20);
	d.sq = mem;
	d.cq = (char *)mem + 4096;
	d.sq_db = (volatile uint32_t *)((char *)mem + 8192);
	d.cq_db = (volatile uint32_t *)((char *)mem + 8196);
	d.prp = (char *)mem + 65536;
	d.prp_bus = 0x10000;
	cr_assert_eq(sio_gpu_queue_alloc(&d, &b.q), 0, "%s", sio_errmsg());
	b.j = (struct sio_gpu_job){ .opcode = SIO_NVME_CMD_READ, .nsid = 1, .lba_size = 512,
				    .nlb = 1, .nios = 64, .threads = 32,
				    .dptr = (char *)mem + 131072, .bus = 0x20000, .size = 65536 };
	t0 = now_s();
	cr_assert_eq(pthread_create(&th, NULL, bg_run, &b), 0);
	usleep(300000);
	t = now_s();
	v = sio_gpu_queue_failed(b.q);
	t = now_s() - t;
	cr_expect_lt(t, 0.1, "sio_gpu_queue_failed() took %.3f s: it waited for the kernel", t);
	cr_expect_eq(v, 0, "failed before its timeout: %d", v);
	pthread_join(th, NULL);
	t1 = now_s();
	cr_assert_eq(b.ret, 0, "%s", sio_errmsg());
	cr_expect_eq(b.r.ok, 0);
	cr_expect_eq(b.r.failed, 64);
	cr_expect_eq(b.r.first_err, -ETIMEDOUT);
	cr_expect_eq(sio_gpu_queue_failed(b.q), -ETIMEDOUT);
	cr_expect_lt(t1 - t0, 4.0, "the kernel took %.1f s to leave after a 1 s timeout", t1 - t0);
	cr_expect_eq(sio_gpu_queue_set_ticket(b.q, 0), -EBUSY, "a failed queue was reset");
	sio_gpu_queue_close(b.q);
	cudaFree(mem);
}

/* Without a GPU, say so and exit 77 so meson reports the suite as skipped
 * (each test also skips itself when run alone under Criterion), or fail
 * when SMARTIO_REQUIRE_GPU says a GPU must be there. */
int main(int argc, char *argv[])
{
	gpu_test_mps();
	return gpu_suite_main(argc, argv);
}
