/* SPDX-License-Identifier: MIT */
/*
 * The GPU-resident controller model (sio_gpu_ctrl_*) driven by the queue
 * engine, in this process, no fabric: null and ram models, reads checked
 * in the kernel right after each completion against a pattern written
 * over the RAM image, writes read back, the four SQ/CQ placements, PRP
 * lists (128 KiB), and the errors a command can earn (LBA out of range,
 * data outside the window) that must not fail the queue.
 *
 * Without a GPU the suite prints why and exits 77 (meson: SKIP);
 * SMARTIO_REQUIRE_GPU=1 makes that a failure.
 */

#include <stdio.h>
#include <string.h>
#include <criterion/criterion.h>
#include <cuda_runtime_api.h>
#include <smartio/gpu.h>
#include "gpumain.h"

#define NS_BYTES	(64ull << 20)
#define BUF_BYTES	(32ull << 20)
#define SEED		0x5eedull

static void *buf;

static void buf_alloc(void)
{
	cr_assert_eq(cudaMalloc(&buf, BUF_BYTES), cudaSuccess);
	cr_assert_eq(cudaMemset(buf, 0xff, BUF_BYTES), cudaSuccess);
}

static void buf_free(void)
{
	cudaFree(buf);
}

TestSuite(gpu_ctrl, .init = buf_alloc, .fini = buf_free, .timeout = 60);

static struct sio_gpu_ctrl *make(int kind, uint32_t nq, bool sq_host, bool cq_host)
{
	struct sio_gpu_ctrl_opts o = { .kind = kind, .ns_bytes = NS_BYTES, .lba_size = 512,
				       .sms = 2, .nq = nq, .depth = 64, .sq_in_host = sq_host,
				       .cq_in_host = cq_host, .data = buf, .data_size = BUF_BYTES,
				       .timeout_ms = 2000, .max_seconds = 30 };
	struct sio_gpu_ctrl *c;

	cr_assert_eq(sio_gpu_ctrl_create(&o, &c), 0, "%s", sio_errmsg());
	if (kind == SIO_GPU_CTRL_RAM)
		cr_assert_eq(sio_gpu_ctrl_fill(c, SEED), 0, "%s", sio_errmsg());
	return c;
}

/* Run @j over every queue of @c with the model running; its counters in @st. */
static void run(struct sio_gpu_ctrl *c, uint32_t nq, struct sio_gpu_job *j,
		struct sio_gpu_job_result *r, struct sio_gpu_ctrl_stats *st)
{
	struct sio_gpu_queue *q[8];

	for (uint32_t i = 0; i < nq; i++)
		q[i] = sio_gpu_ctrl_queue(c, i);
	cr_assert_null(sio_gpu_ctrl_queue(c, nq));
	if (!j->bus)
		j->bus = sio_gpu_ctrl_bus(c, buf);
	cr_assert_eq(sio_gpu_ctrl_start(c), 0, "%s", sio_errmsg());
	cr_assert_eq(sio_gpu_run_job(q, (int)nq, j, r), 0, "%s", sio_errmsg());
	cr_assert_eq(sio_gpu_ctrl_stop(c, st), 0, "%s", sio_errmsg());
}

static struct sio_gpu_job reads(uint32_t bytes, uint32_t threads, uint64_t nios, bool verify)
{
	return (struct sio_gpu_job){ .opcode = SIO_NVME_CMD_READ, .nsid = 1, .lba_size = 512,
				     .nlb = bytes / 512, .nios = nios, .span = NS_BYTES / 512,
				     .seed = 7, .threads = threads, .dptr = buf,
				     .size = BUF_BYTES, .verify = verify, .pattern = SEED };
}

Test(gpu_ctrl, null_model_completes_every_command)
{
	struct sio_gpu_ctrl *c = make(SIO_GPU_CTRL_NULL, 4, false, false);
	struct sio_gpu_job j = reads(4096, 1024, 100000, false);
	struct sio_gpu_job_result r;
	struct sio_gpu_ctrl_stats st;

	run(c, 4, &j, &r, &st);
	cr_assert_eq(r.failed, 0, "first error %d status 0x%x", r.first_err, r.first_status);
	cr_assert_eq(r.ok, 100000);
	cr_assert_eq(st.commands, 100000);
	cr_assert_eq(st.errors, 0);
	cr_assert_eq(st.bad_doorbells, 0);
	sio_gpu_ctrl_close(c);
}

/* Reads of 512 B, 4 KiB and 128 KiB (a PRP list) from the RAM image,
 * checked by the issuing thread in the kernel. */
Test(gpu_ctrl, ram_model_reads_are_verified)
{
	static const uint32_t sizes[] = { 512, 4096, 128 << 10 };
	struct sio_gpu_ctrl *c = make(SIO_GPU_CTRL_RAM, 2, false, false);

	for (int i = 0; i < 3; i++) {
		struct sio_gpu_job j = reads(sizes[i], 256, 4096, true);
		struct sio_gpu_job_result r;
		struct sio_gpu_ctrl_stats st;

		run(c, 2, &j, &r, &st);
		cr_assert_eq(r.failed, 0, "%u B: first error %d status 0x%x", sizes[i],
			     r.first_err, r.first_status);
		cr_assert_eq(r.mismatches, 0, "%u B: word %llu read 0x%llx", sizes[i],
			     (unsigned long long)r.first_bad_word,
			     (unsigned long long)r.first_bad_value);
		cr_assert_eq(st.commands, 4096);
	}
	sio_gpu_ctrl_close(c);
}

Test(gpu_ctrl, every_placement)
{
	for (int k = 0; k < 4; k++) {
		struct sio_gpu_ctrl *c = make(SIO_GPU_CTRL_RAM, 2, k & 1, k >> 1);
		struct sio_gpu_job j = reads(4096, 512, 8192, true);
		struct sio_gpu_job_result r;
		struct sio_gpu_ctrl_stats st;

		run(c, 2, &j, &r, &st);
		cr_assert_eq(r.failed, 0, "SQ in %s, CQ in %s: error %d", k & 1 ? "host" : "GPU",
			     k >> 1 ? "host" : "GPU", r.first_err);
		cr_assert_eq(r.mismatches, 0);
		sio_gpu_ctrl_close(c);
	}
}

/* Sequential writes of a new pattern, then reads that must see it. */
Test(gpu_ctrl, writes_are_read_back)
{
	struct sio_gpu_ctrl *c = make(SIO_GPU_CTRL_RAM, 1, false, false);
	struct sio_gpu_job j = reads(4096, 128, BUF_BYTES / 4096, true);
	struct sio_gpu_job_result r;
	struct sio_gpu_ctrl_stats st;

	j.opcode = SIO_NVME_CMD_WRITE;
	j.span = 0;
	j.pattern = SEED + 1;
	run(c, 1, &j, &r, &st);
	cr_assert_eq(r.failed, 0, "write: error %d", r.first_err);
	cr_assert_eq(cudaMemset(buf, 0xff, BUF_BYTES), cudaSuccess);
	j.opcode = SIO_NVME_CMD_READ;
	run(c, 1, &j, &r, &st);
	cr_assert_eq(r.failed, 0, "read: error %d", r.first_err);
	cr_assert_eq(r.mismatches, 0, "word %llu read 0x%llx",
		     (unsigned long long)r.first_bad_word, (unsigned long long)r.first_bad_value);
	sio_gpu_ctrl_close(c);
}

/* A command's error is its own: -EIO with the status, the queue goes on. */
Test(gpu_ctrl, errors_do_not_fail_the_queue)
{
	struct sio_gpu_ctrl *c = make(SIO_GPU_CTRL_RAM, 1, false, false);
	struct sio_gpu_job j = reads(4096, 4, 4, false);
	struct sio_gpu_job_result r;
	struct sio_gpu_ctrl_stats st;

	/* past the namespace's end: LBA Out of Range (SC 0x80) */
	j.span = 0;
	j.slba = NS_BYTES / 512;
	run(c, 1, &j, &r, &st);
	cr_assert_eq(r.failed, 4);
	cr_assert_eq(r.first_err, -EIO);
	cr_assert_eq(r.first_status, 0x80, "status 0x%x", r.first_status);
	cr_assert_eq(st.errors, 4);
	/* data outside the model's window: Data Transfer Error (SC 0x04) */
	j = reads(4096, 4, 4, false);
	j.bus = sio_gpu_ctrl_bus(c, buf) + BUF_BYTES;
	run(c, 1, &j, &r, &st);
	cr_assert_eq(r.failed, 4);
	cr_assert_eq(r.first_status, 0x04, "status 0x%x", r.first_status);
	/* and the queue still works */
	j = reads(4096, 4, 64, true);
	run(c, 1, &j, &r, &st);
	cr_assert_eq(r.ok, 64);
	cr_assert_eq(r.mismatches, 0);
	sio_gpu_ctrl_close(c);
}

Test(gpu_ctrl, bad_options_are_named)
{
	struct sio_gpu_ctrl_opts o = { .kind = SIO_GPU_CTRL_NULL, .ns_bytes = NS_BYTES,
				       .lba_size = 512, .sms = 1, .nq = 1, .depth = 64,
				       .data = buf, .data_size = BUF_BYTES };
	struct sio_gpu_ctrl *c;

	o.depth = 48;
	cr_assert_eq(sio_gpu_ctrl_create(&o, &c), -EINVAL);
	cr_assert(strstr(sio_errmsg(), "depth 48"), "%s", sio_errmsg());
	o.depth = 64;
	o.sms = 0;
	cr_assert_eq(sio_gpu_ctrl_create(&o, &c), -EINVAL);
	cr_assert(strstr(sio_errmsg(), "SM"), "%s", sio_errmsg());
	o.sms = 1;
	o.data = NULL;
	cr_assert_eq(sio_gpu_ctrl_create(&o, &c), -EINVAL);
	cr_assert(strstr(sio_errmsg(), "data window"), "%s", sio_errmsg());
}

int main(int argc, char *argv[])
{
	return gpu_suite_main(argc, argv);
}
