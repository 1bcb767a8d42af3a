/* SPDX-License-Identifier: MIT */
/*
 * GPU paths end to end: an emulated NVMe controller (nvme-emu, its own
 * process, reaching GPU memory through the plugin), a manager process, and
 * CUDA kernels in this process driving GPU-hosted queues. Skipped with
 * "no GPU" where CUDA finds no device.
 */

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/wait.h>
#include <criterion/criterion.h>
#include <cuda_runtime_api.h>
#include <smartio/gpu.h>
#include <smartio/nvme/client.h>
#include <smartio/nvme/manager.h>

static char fabric[64];
static pid_t emu_pid = -1, mgr_pid = -1;
static struct sio_fabric *fab;
static struct sio_gpu_nvme *gn;

static void need_gpu(void)
{
	if (sio_gpu_count() <= 0)
		cr_skip_test("%s", sio_gpu_errmsg());
}

static volatile sig_atomic_t stop;
static void on_term(int sig)
{
	(void)sig;
	stop = 1;
}

static pid_t start_manager(void)
{
	pid_t pid = fork();

	if (pid == 0) {
		struct sio_fabric *f;
		struct sio_nvme_manager *m;

		signal(SIGTERM, on_term);
		if (sio_fabric_open(fabric, 0, &f) || sio_nvme_manager_start(f, -1, NULL, &m))
			_exit(1);
		sio_nvme_manager_run(m, &stop);
		sio_nvme_manager_stop(m);
		sio_fabric_close(f);
		_exit(0);
	}
	return pid;
}

static pid_t start_emu(void)
{
	char cmd[1024], ready[128];
	pid_t pid;

	snprintf(ready, sizeof(ready), "/tmp/%s.ready", fabric);
	unlink(ready);
	snprintf(cmd, sizeof(cmd), "exec %s --fabric %s --node 0 --backing ram:64M "
		 "--ready-file %s >/dev/null", getenv("NVME_EMU") ? getenv("NVME_EMU") : "nvme-emu",
		 fabric, ready);
	pid = fork();
	if (pid == 0) {
		execl("/bin/sh", "sh", "-c", cmd, (char *)NULL);
		_exit(127);
	}
	for (int i = 0; i < 5000 && pid > 0; i++) {
		if (access(ready, R_OK) == 0) {
			unlink(ready);
			return pid;
		}
		usleep(2000);
	}
	return -1;
}

static void setup(void)
{
	struct sio_fabric_config c = { .nodes = 2, .topology = SIO_TOPO_SWITCH };
	int ret = -1;

	if (sio_gpu_count() <= 0)
		return;		/* each test skips */
	snprintf(fabric, sizeof(fabric), "gpuio%d", (int)getpid());
	sio_fabric_destroy(fabric);
	cr_assert_eq(sio_fabric_create(fabric, &c), 0, "%s", sio_errmsg());
	emu_pid = start_emu();
	cr_assert(emu_pid > 0, "nvme-emu did not start");
	mgr_pid = start_manager();
	cr_assert(mgr_pid > 0);
	cr_assert_eq(sio_fabric_open(fabric, 0, &fab), 0, "%s", sio_errmsg());
	/* the manager needs a moment to bring the controller up */
	for (int i = 0; i < 100; i++) {
		ret = sio_gpu_nvme_open(fab, -1, 0, &gn);
		if (ret != -ENOENT && ret != -EBUSY && ret != -EAGAIN)
			break;
		usleep(50000);
	}
	cr_assert_eq(ret, 0, "sio_gpu_nvme_open: %s", sio_gpu_errmsg());
}

static void teardown(void)
{
	sio_gpu_nvme_close(gn);
	gn = NULL;
	if (fab)
		sio_fabric_close(fab);
	fab = NULL;
	if (mgr_pid > 0) {
		kill(mgr_pid, SIGTERM);
		waitpid(mgr_pid, NULL, 0);
	}
	if (emu_pid > 0) {
		kill(emu_pid, SIGTERM);
		waitpid(emu_pid, NULL, 0);
	}
	if (fabric[0])
		sio_fabric_destroy(fabric);
}

/* Write a pattern through the CPU client: block b holds words b*64+i. */
static void cpu_pattern(uint32_t nsid, uint64_t blocks, uint32_t lba)
{
	struct sio_nvme_client *cl = sio_gpu_nvme_client(gn);
	struct sio_nvme_ioq *q;
	struct sio_nvme_buf *b;
	uint64_t *w;

	cr_assert_eq(sio_nvme_ioq_create(cl, NULL, &q), 0, "%s", sio_nvme_errmsg());
	cr_assert_eq(sio_nvme_buf_alloc(cl, blocks * lba, &b), 0, "%s", sio_nvme_errmsg());
	w = b->va;
	for (uint64_t i = 0; i < blocks * lba / 8; i++)
		w[i] = 0x9e3779b97f4a7c15ull * (i + 1);
	for (uint64_t done = 0; done < blocks; done += 32)
		cr_assert_eq(sio_nvme_write(q, nsid, done, blocks - done < 32 ? blocks - done : 32, b,
					    done * lba), 0, "%s", sio_nvme_errmsg());
	sio_nvme_buf_free(cl, b);
	sio_nvme_ioq_destroy(q);
}

static void gpu_read_verify(uint32_t threads, int nq, uint32_t depth, uint32_t nlb, uint64_t blocks)
{
	struct sio_nvme_client *cl = sio_gpu_nvme_client(gn);
	struct sio_gpu_qp_opts o = { .depth = depth };
	struct sio_gpu_queue *dq[8];
	struct sio_gpu_qp *qp[8];
	struct sio_gpu_qp_info qi;
	struct sio_gpu_job_result r;
	struct sio_gpu_mem *m;
	struct sio_nvme_ns ns;
	uint64_t bus, sum = 0, *h;

	cr_assert_eq(sio_nvme_client_ns(cl, 1, &ns), 0, "%s", sio_nvme_errmsg());
	cpu_pattern(1, blocks, ns.lba_size);
	for (int i = 0; i < nq; i++) {
		cr_assert_eq(sio_gpu_qp_create(gn, &o, &qp[i]), 0, "%s", sio_gpu_errmsg());
		sio_gpu_qp_info(qp[i], &qi);
		cr_expect_eq(qi.sq_kind, SIO_SEG_GPU);
		cr_expect_eq(qi.sq_place, SIO_PLACE_DEVICE);
		dq[i] = qi.queue;
	}
	cr_assert_eq(sio_gpu_mem_create(fab, blocks * ns.lba_size, 0, &m), 0, "%s", sio_gpu_errmsg());
	cr_assert_eq(sio_device_map(sio_nvme_client_device(cl), m->seg, &bus), 0, "%s", sio_errmsg());
	struct sio_gpu_job j = { .opcode = SIO_NVME_CMD_READ, .nsid = 1, .lba_size = ns.lba_size,
				 .nlb = nlb, .nios = blocks / nlb, .threads = threads,
				 .dptr = m->dptr, .bus = bus, .size = blocks * ns.lba_size };
	cr_assert_eq(sio_gpu_run_job(dq, nq, &j, &r), 0, "%s", sio_gpu_errmsg());
	cr_expect_eq(r.failed, 0, "%llu failed, first %d status 0x%x", (unsigned long long)r.failed,
		     r.first_err, r.first_status);
	cr_expect_eq(r.ok, blocks / nlb);
	h = malloc(j.size);
	cr_assert_eq(cudaMemcpy(h, m->dptr, j.size, cudaMemcpyDeviceToHost), cudaSuccess);
	for (uint64_t i = 0; i < j.size / 8; i++)
		if (h[i] != 0x9e3779b97f4a7c15ull * (i + 1))
			cr_assert_fail("word %llu differs", (unsigned long long)i);
	cr_assert_eq(sio_gpu_checksum(m->dptr, j.size, &sum), 0);
	cr_expect_eq(sum, sio_gpu_checksum_host(h, j.size));
	free(h);
	sio_device_unmap(sio_nvme_client_device(cl), m->seg);
	sio_gpu_mem_free(m);
	for (int i = 0; i < nq; i++)
		cr_expect_eq(sio_gpu_qp_destroy(qp[i]), 0, "%s", sio_gpu_errmsg());
}

Test(gpu_io, verified_read, .init = setup, .fini = teardown, .timeout = 120)
{
	need_gpu();
	gpu_read_verify(64, 2, 32, 8, 2048);
}

Test(gpu_io, many_threads_one_queue, .init = setup, .fini = teardown, .timeout = 120)
{
	need_gpu();
	gpu_read_verify(1024, 1, 16, 1, 4096);
}

/* Doorbells nobody listens to: every wait ends in -ETIMEDOUT, the GPU does
 * not hang, and the queue is marked failed. */
Test(gpu_io, timeout_fails_the_queue, .timeout = 60)
{
	struct sio_gpu_queue_desc d = { .depth = 8, .page = 4096, .max_xfer = 4096,
					.timeout_ns = 50000000ull, .qid = 1 };
	struct sio_gpu_queue *q;
	struct sio_gpu_job_result r;
	void *mem;
	struct timespec t0, t1;

	need_gpu();
	cr_assert_eq(cudaMalloc(&mem, 1 << 20), cudaSuccess);
	cudaMemset(mem, 0, 1 << 20);
	d.sq = mem;
	d.cq = (char *)mem + 4096;
	d.sq_db = (volatile uint32_t *)((char *)mem + 8192);
	d.cq_db = (volatile uint32_t *)((char *)mem + 8196);
	d.prp = (char *)mem + 65536;
	d.prp_bus = 0x10000;
	cr_assert_eq(sio_gpu_queue_alloc(&d, &q), 0, "%s", sio_gpu_errmsg());
	struct sio_gpu_job j = { .opcode = SIO_NVME_CMD_READ, .nsid = 1, .lba_size = 512, .nlb = 1,
				 .nios = 64, .threads = 32, .dptr = (char *)mem + 131072,
				 .bus = 0x20000, .size = 65536 };
	clock_gettime(CLOCK_MONOTONIC, &t0);
	cr_assert_eq(sio_gpu_run_job(&q, 1, &j, &r), 0, "%s", sio_gpu_errmsg());
	clock_gettime(CLOCK_MONOTONIC, &t1);
	cr_expect_eq(r.ok, 0);
	cr_expect_eq(r.failed, 64);
	cr_expect_eq(r.first_err, -ETIMEDOUT);
	cr_expect_eq(sio_gpu_queue_failed(q), -ETIMEDOUT);
	cr_expect_lt(t1.tv_sec - t0.tv_sec, 10, "the kernel returned within the bound");
	sio_gpu_queue_free(q);
	cudaFree(mem);
}

/* Without a GPU, say so and exit 77 so meson reports the suite as skipped
 * (each test also skips itself when run alone under Criterion). */
int main(int argc, char *argv[])
{
	struct criterion_test_set *tests;
	int result = 0;

	if (sio_gpu_count() <= 0) {
		printf("skipped: %s\n", sio_gpu_errmsg());
		return 77;
	}
	tests = criterion_initialize();
	if (criterion_handle_args(argc, argv, true))
		result = !criterion_run_all_tests(tests);
	criterion_finalize(tests);
	return result;
}
