/* SPDX-License-Identifier: MIT */
/*
 * GPU driver checks that need no GPU: the DMA plugin's argument checks and
 * its path from sim DMA, placement, the argument checks of the host API,
 * and the emulated controller's answer to an SQ entry it cannot fetch
 * (GPU memory it cannot reach, or no plugin at all). Where a GPU is
 * present the same calls must succeed instead, and the IPC round trip runs:
 * GPU memory of this process read and written by a device model in another
 * process through the plugin.
 *
 * SMARTIO_REQUIRE_GPU=1 makes a missing GPU a failure.
 */

#include <dlfcn.h>
#include <fcntl.h>
#include <stdarg.h>
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
#include <smartio/model.h>
#include "cluster.h"
#include "mps.h"

static const struct sio_gpu_dma_plugin *plugin(void)
{
	const char *p = getenv("SMARTIO_GPU_PLUGIN");
	void *h;
	const struct sio_gpu_dma_plugin *ops;

	cr_assert(p && *p, "SMARTIO_GPU_PLUGIN is not set");
	h = dlopen(p, RTLD_NOW | RTLD_LOCAL);
	cr_assert(h, "dlopen %s: %s", p, dlerror());
	ops = dlsym(h, SIO_GPU_DMA_PLUGIN_SYMBOL);
	cr_assert(ops && ops->copy && ops->forget, "plugin exports no %s", SIO_GPU_DMA_PLUGIN_SYMBOL);
	return ops;
}

static bool have_gpu(void)
{
	return sio_gpu_count() > 0;
}

static uint64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

Test(gpu_plugin, argument_checks)
{
	const struct sio_gpu_dma_plugin *ops = plugin();
	struct sio_gpu_seg s = { .slot = 0, .id = 7, .size = 8192, .gen = 1 };
	char buf[64];

	cr_expect_eq(ops->copy(NULL, 0, buf, 8, true), -EINVAL);
	cr_expect_eq(ops->copy(&s, 0, NULL, 8, true), -EINVAL);
	s.slot = SIO_GPU_SEG_SLOTS;
	cr_expect_eq(ops->copy(&s, 0, buf, 8, true), -EINVAL, "slot past the table");
	s.slot = 0;
	cr_expect_eq(ops->copy(&s, 8192, buf, 1, false), -ERANGE);
	cr_expect_eq(ops->copy(&s, 8190, buf, 8, false), -ERANGE);
	cr_expect_eq(ops->copy(&s, UINT64_MAX, buf, 8, false), -ERANGE);
	cr_expect_eq(ops->copy(&s, 0, buf, 0, true), 0);
	s.gen = 0;
	cr_expect_eq(ops->copy(&s, 0, buf, 8, true), -EINVAL, "generation 0 names no segment");
	s.gen = 1;
	s.gpu = -1;
	cr_expect_eq(ops->copy(&s, 0, buf, 8, true), -EINVAL);
	s.gpu = 4096;
	cr_expect_eq(ops->copy(&s, 0, buf, 8, true), -ENODEV, "GPU 4096 does not exist");
	/* nothing open: forgetting is a no-op */
	ops->forget(NULL, 0);
	ops->forget(&s, 1);
}

Test(gpu_placement, device_adjacent_only_on_the_lender)
{
	cr_expect_eq(sio_gpu_placement(0, 0), SIO_PLACE_DEVICE);
	cr_expect_eq(sio_gpu_placement(3, 3), SIO_PLACE_DEVICE);
	cr_expect_eq(sio_gpu_placement(1, 0), SIO_PLACE_LOCAL);
	cr_expect_eq(sio_gpu_placement(-1, 0), -EINVAL);
	cr_expect_eq(sio_gpu_placement(0, -2), -EINVAL);
}

Test(gpu_api, bad_arguments_are_refused)
{
	struct sio_gpu_queue_desc d = { 0 };
	struct sio_gpu_queue *q;
	struct sio_gpu_mem *m;

	cr_expect_eq(sio_gpu_mem_create(NULL, 4096, 0, &m), -EINVAL);
	cr_expect_eq(sio_gpu_queue_alloc(NULL, &q), -EINVAL);
	d.depth = 3;
	cr_expect_eq(sio_gpu_queue_alloc(&d, &q), -EINVAL);
	cr_expect(strstr(sio_errmsg(), "power of two"), "message: %s", sio_errmsg());
	d.depth = 16;
	cr_expect_eq(sio_gpu_queue_alloc(&d, &q), -EINVAL, "no memory given");
	cr_expect_eq(sio_gpu_segment_create_hinted(NULL, 4096, SIO_HINT_DEVICE_READ, 0, &m, NULL),
		     -EINVAL);
	cr_expect_eq(sio_gpu_run_job(NULL, 1, NULL, NULL), -EINVAL);
	cr_expect_eq(sio_gpu_queue_failed(NULL), -EINVAL);
	cr_expect_eq(sio_gpu_queue_set_ticket(NULL, 0), -EINVAL);
}

Test(gpu_api, checksum_and_pattern_on_the_host)
{
	uint64_t w[4] = { 1, 2, 3, 4 };

	/* (1^0) + (2^1) + (3^2) + (4^3) */
	cr_expect_eq(sio_gpu_checksum_host(w, sizeof(w)), 1 + 3 + 1 + 7);
	cr_expect_eq(sio_gpu_checksum_host(w, 0), 0);
	/* what the CPU-written test data always was */
	cr_expect_eq(sio_gpu_pattern(0, 0), 0x9e3779b97f4a7c15ull);
	cr_expect_eq(sio_gpu_pattern(0, 9), 0x9e3779b97f4a7c15ull * 10);
	for (uint64_t i = 0; i < 4096; i++)
		cr_assert_neq(sio_gpu_pattern(0, i), 0);
	cr_expect_neq(sio_gpu_pattern(1, 5), sio_gpu_pattern(0, 5));
}

Test(gpu_api, require_gpu_switch)
{
	setenv("SMARTIO_REQUIRE_GPU", "1", 1);
	cr_expect(sio_gpu_required());
	setenv("SMARTIO_REQUIRE_GPU", "0", 1);
	cr_expect(!sio_gpu_required());
	setenv("SMARTIO_REQUIRE_GPU", "", 1);
	cr_expect(!sio_gpu_required());
	unsetenv("SMARTIO_REQUIRE_GPU");
	cr_expect(!sio_gpu_required());
}

struct fab {
	char name[64];
	struct sio_fabric *f;
	struct sio_devreg *reg;
	struct sio_device *dev;
};

static void fab_up(struct fab *x)
{
	struct sio_fabric_config c = { .nodes = 2, .topology = SIO_TOPO_SWITCH };
	struct sio_device_desc desc = { .class_code = 0x010802, .vendor = 0x1b36, .device = 0x10,
					.nbars = 1, .bar_size = { 16384 }, .name = "gpu-test" };

	snprintf(x->name, sizeof(x->name), "gpuhost%d", (int)getpid());
	sio_fabric_destroy(x->name);
	cr_assert_eq(sio_fabric_create(x->name, &c), 0, "%s", sio_errmsg());
	cr_assert_eq(sio_fabric_open(x->name, 0, &x->f), 0, "%s", sio_errmsg());
	cr_assert_eq(sio_device_register(x->f, &desc, &x->reg), 0, "%s", sio_errmsg());
	cr_assert_eq(sio_device_borrow(x->f, sio_devreg_id(x->reg), SIO_BORROW_SHARED, &x->dev), 0,
		     "%s", sio_errmsg());
}

static void fab_down(struct fab *x)
{
	sio_device_close(x->dev);
	sio_devreg_close(x->reg);
	sio_fabric_close(x->f);
	sio_fabric_destroy(x->name);
}

Test(gpu_hinted, placement_and_refusals)
{
	struct sio_segment_info si;
	struct sio_gpu_mem *m = NULL;
	enum sio_placement placed = SIO_PLACE_LENDER;
	struct fab x;
	int ret;

	fab_up(&x);
	cr_expect_eq(sio_gpu_segment_create_hinted(x.dev, 65536, 0, 0, &m, &placed), -EINVAL);
	cr_expect_eq(sio_gpu_segment_create_hinted(x.dev, 65536, SIO_HINT_HOST_READ |
						   SIO_HINT_DEVICE_WRITE, 0, &m, &placed),
		     -EINVAL, "a CPU-polled CQ does not belong in GPU memory");
	ret = sio_gpu_segment_create_hinted(x.dev, 65536, SIO_HINT_DEVICE_READ |
					    SIO_HINT_HOST_WRITE, 0, &m, &placed);
	if (sio_gpu_count() < 0) {
		cr_expect_eq(ret, -ENODEV);
		cr_expect(strstr(sio_errmsg(), "no GPU"),
			  "message: %s", sio_errmsg());
	} else {
		cr_assert_eq(ret, 0, "%s", sio_errmsg());
		cr_expect_eq(placed, SIO_PLACE_DEVICE, "node 0 lends the device");
		cr_assert_eq(sio_segment_info(m->seg, &si), 0);
		cr_expect_eq(si.kind, SIO_SEG_GPU);
		sio_gpu_mem_close(m);
	}
	fab_down(&x);
}

/* Device DMA into a GPU segment goes through the plugin; without a GPU it
 * fails cleanly, and there is never a host pointer. */
Test(gpu_dma, through_the_plugin)
{
	unsigned char handle[64] = { 0 };
	struct sio_segment_info si;
	struct sio_segment *seg;
	uint64_t bus;
	void *p;
	char buf[512];
	struct fab x;
	int ret;

	fab_up(&x);
	cr_assert_eq(sio_segment_create_gpu(x.f, 65536, 4095, handle, sizeof(handle), &seg), 0,
		     "%s", sio_errmsg());
	cr_assert_eq(sio_segment_info(seg, &si), 0);
	cr_expect_eq(si.kind, SIO_SEG_GPU);
	cr_assert_eq(sio_device_map(x.dev, seg, &bus), 0, "%s", sio_errmsg());
	cr_expect_eq(sio_dma_ptr(x.reg, bus, 512, true, &p), -EOPNOTSUPP);
	memset(buf, 0x5a, sizeof(buf));
	/* GPU 4095 exists nowhere: the plugin is reached and says so */
	ret = sio_dma_write(x.reg, bus, buf, sizeof(buf));
	cr_expect_eq(ret, -ENODEV, "write to a GPU that is not there: %d (%s)", ret, sio_errmsg());
	ret = sio_dma_read(x.reg, bus, buf, sizeof(buf));
	cr_expect_eq(ret, -ENODEV, "read from a GPU that is not there: %d (%s)", ret, sio_errmsg());
	sio_device_unmap(x.dev, seg);
	/* unmapped: a fault, the plugin is not asked */
	cr_expect_eq(sio_dma_read(x.reg, bus, buf, sizeof(buf)), -EFAULT);
	sio_segment_close(seg);
	fab_down(&x);
}

/* ---- the controller and an SQ it cannot read (review D2) ---- */

static struct cluster C;

static void cluster_fini(void)
{
	cluster_down(&C);
}

/*
 * A queue pair whose SQ is GPU memory nobody can reach (GPU 4095): every
 * fetch fails in the plugin (or for want of one). The controller must not
 * run the garbage it did not read: it answers with a Data Transfer Error for
 * cid 0xffff in the CQ (host memory here), once per entry, and says why on
 * its stderr, once.
 */
static void unreadable_sq(const char *why_in_log)
{
	unsigned char handle[64] = { 0 };
	struct sio_fabric *f;
	struct sio_nvme_client *cl = NULL;
	struct sio_nvme_doorbells db;
	struct sio_segment *sq, *cq;
	struct sio_device *dev;
	volatile struct sio_nvme_cpl *cpl;
	uint64_t sq_bus, cq_bus, t0;
	uint16_t qid;
	void *cq_va;
	char *log;
	int ret = -1;

	cr_assert_eq(sio_fabric_open(C.fabric, 1, &f), 0, "%s", sio_errmsg());
	for (int i = 0; i < 100 && ret; i++) {
		ret = sio_nvme_client_open(f, SIO_DEVICE_ANY, &cl);
		if (ret)
			usleep(50000);
	}
	cr_assert_eq(ret, 0, "%s", sio_errmsg());
	dev = sio_nvme_client_device(cl);
	cr_assert_eq(sio_segment_create_gpu(f, 65536, 4095, handle, sizeof(handle), &sq), 0,
		     "%s", sio_errmsg());
	cr_assert_eq(sio_segment_create(f, 0, 65536, 0, &cq), 0, "%s", sio_errmsg());
	cr_assert_eq(sio_segment_map(cq, &cq_va), 0, "%s", sio_errmsg());
	memset(cq_va, 0, 65536);
	cr_assert_eq(sio_device_map(dev, sq, &sq_bus), 0, "%s", sio_errmsg());
	cr_assert_eq(sio_device_map(dev, cq, &cq_bus), 0, "%s", sio_errmsg());
	cr_assert_eq(sio_nvme_ioq_create_at(cl, sq_bus, cq_bus, 8, 0, &qid), 0, "%s",
		     sio_errmsg());
	cr_assert_eq(sio_nvme_client_doorbells(cl, qid, &db), 0, "%s", sio_errmsg());
	sio_nvme_mmio_write32(db.sq_db, 2);	/* two entries */
	cpl = cq_va;
	t0 = now_ms();
	while (!(cpl[1].status & 1) && now_ms() - t0 < 3000)
		usleep(1000);
	for (int i = 0; i < 2; i++) {
		cr_assert(cpl[i].status & 1, "no completion %d within 3 s: the fetch failure "
			  "was not answered", i);
		cr_expect_eq(cpl[i].cid, 0xffff, "cid 0x%x: the controller ran a command it "
			     "never read", cpl[i].cid);
		cr_expect_eq(SIO_NVME_STATUS_CODE(cpl[i].status), 0x0004,
			     "status 0x%x, not a Data Transfer Error",
			     SIO_NVME_STATUS_CODE(cpl[i].status));
		cr_expect_eq(cpl[i].sq_id, qid);
	}
	cr_expect_eq(cpl[2].status, 0, "a third completion for two entries");
	sio_nvme_client_doorbells_unmap(&db);
	sio_nvme_ioq_delete_at(cl, qid);
	sio_device_unmap(dev, sq);
	sio_device_unmap(dev, cq);
	sio_segment_close(sq);
	sio_segment_close(cq);
	sio_nvme_client_close(cl);
	sio_fabric_close(f);
	log = cluster_output(&C, "nvme-emu", "err");
	cr_expect(strstr(log, "cannot fetch an entry of SQ"), "nvme-emu said nothing: %s", log);
	cr_expect(strstr(log, why_in_log), "nvme-emu's log does not say '%s': %s", why_in_log,
		  log);
}

Test(gpu_emu, unreadable_sq_is_answered_not_run, .fini = cluster_fini, .timeout = 60)
{
	cluster_up(&C, 2, 0, NULL);
	/* with a GPU the plugin says GPU 4095 is not there; without, no GPU */
	unreadable_sq("GPU");
}

Test(gpu_emu, missing_plugin_is_said, .fini = cluster_fini, .timeout = 60)
{
	setenv("SMARTIO_GPU_PLUGIN", "/nonexistent/libsmartio-gpudma.so", 1);
	cluster_up(&C, 2, 0, NULL);
	unreadable_sq("cannot load /nonexistent/libsmartio-gpudma.so");
}

/* ---- IPC round trip with a device model in another process ---- */

/*
 * The child: a device registered on node 0 of fabric argv[2]; it prints
 * its id, then obeys lines on stdin:
 *   r BUS LEN SEED   read, compare with sio_gpu_pattern(SEED): "ok MISMATCHES"
 *   w BUS LEN SEED   write the pattern: "ok 0"
 *   n                IPC mappings the plugin holds: "ok N"
 *   q                quit
 * and answers "err RC MESSAGE" on failure.
 */
static int ipc_child(const char *fabric)
{
	struct sio_device_desc desc = { .class_code = 0x010802, .vendor = 0x1b36, .device = 0x10,
					.nbars = 1, .bar_size = { 16384 }, .name = "gpu-ipc" };
	struct sio_fabric *f;
	struct sio_devreg *reg;
	char line[256];
	int ret;

	setvbuf(stdout, NULL, _IOLBF, 0);
	if (sio_fabric_open(fabric, 0, &f) || sio_device_register(f, &desc, &reg)) {
		printf("err %d %s\n", -1, sio_errmsg());
		return 1;
	}
	printf("%u\n", sio_devreg_id(reg));
	while (fgets(line, sizeof(line), stdin)) {
		unsigned long long bus = 0, len = 0, seed = 0, bad = 0;
		uint64_t *buf;
		char op = 0;

		if (sscanf(line, "%c %llx %llu %llx", &op, &bus, &len, &seed) < 1 || op == 'q')
			break;
		if (op == 'n') {
			const char *p = getenv("SMARTIO_GPU_PLUGIN");
			void *h = p ? dlopen(p, RTLD_NOW | RTLD_NOLOAD) : NULL;
			int (*count)(void) = h ? (int (*)(void))dlsym(h,
					"sio_gpu_dma_plugin_open_count") : NULL;

			printf("ok %d\n", count ? count() : -1);
			continue;
		}
		buf = malloc(len);
		if (!buf) {
			printf("err %d out of memory\n", -ENOMEM);
			continue;
		}
		if (op == 'r') {
			ret = sio_dma_read(reg, bus, buf, len);
			for (uint64_t i = 0; !ret && i < len / 8; i++)
				bad += buf[i] != sio_gpu_pattern(seed, i);
		} else {
			for (uint64_t i = 0; i < len / 8; i++)
				buf[i] = sio_gpu_pattern(seed, i);
			ret = sio_dma_write(reg, bus, buf, len);
		}
		free(buf);
		if (ret)
			printf("err %d %s\n", ret, sio_errmsg());
		else
			printf("ok %llu\n", bad);
	}
	sio_devreg_close(reg);
	sio_fabric_close(f);
	return 0;
}

struct child {
	pid_t pid;
	FILE *in, *out;
};

static void child_start(struct child *c, const char *fabric)
{
	int to[2], from[2];

	cr_assert_eq(pipe(to), 0);
	cr_assert_eq(pipe(from), 0);
	c->pid = fork();
	cr_assert_geq(c->pid, 0);
	if (c->pid == 0) {
		dup2(to[0], 0);
		dup2(from[1], 1);
		close(to[1]);
		close(from[0]);
		/* A fresh process: CUDA is not fork-safe. Criterion's sandbox
		 * variable would make it a test worker of ours: it would abort. */
		unsetenv("BXFI_MAP");
		execl("/proc/self/exe", "test-gpu-host", "--ipc-child", fabric, (char *)NULL);
		_exit(127);
	}
	close(to[0]);
	close(from[1]);
	c->in = fdopen(to[1], "w");
	c->out = fdopen(from[0], "r");
	setvbuf(c->in, NULL, _IOLBF, 0);
}

/* The device process's next line, or the test fails saying how it ended. */
static void child_line(struct child *c, char *line, int size)
{
	char why[64] = "still running";
	int st;

	if (fgets(line, size, c->out))
		return;
	if (waitpid(c->pid, &st, 0) == c->pid)
		snprintf(why, sizeof(why), WIFSIGNALED(st) ? "killed by signal %d" : "exit %d",
			 WIFSIGNALED(st) ? WTERMSIG(st) : WEXITSTATUS(st));
	cr_assert_fail("the device process closed its output (%s); its stderr is above", why);
}

/* Send one request; returns the number after "ok", or fails the test. */
static unsigned long long child_ask(struct child *c, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
static unsigned long long child_ask(struct child *c, const char *fmt, ...)
{
	char line[512];
	unsigned long long v = 0;
	va_list ap;

	va_start(ap, fmt);
	vfprintf(c->in, fmt, ap);
	va_end(ap);
	fflush(c->in);
	child_line(c, line, sizeof(line));
	cr_assert(sscanf(line, "ok %llu", &v) == 1, "device process: %s", line);
	return v;
}

static void fill(struct sio_gpu_mem *m, uint64_t len, uint64_t seed)
{
	uint64_t *h = malloc(len);

	for (uint64_t i = 0; i < len / 8; i++)
		h[i] = sio_gpu_pattern(seed, i);
	cr_assert_eq(cudaMemcpy(m->dptr, h, len, cudaMemcpyHostToDevice), cudaSuccess);
	free(h);
}

static uint64_t mismatches(struct sio_gpu_mem *m, uint64_t len, uint64_t seed)
{
	uint64_t *h = malloc(len), bad = 0;

	cr_assert_eq(cudaMemcpy(h, m->dptr, len, cudaMemcpyDeviceToHost), cudaSuccess);
	for (uint64_t i = 0; i < len / 8; i++)
		bad += h[i] != sio_gpu_pattern(seed, i);
	free(h);
	return bad;
}

#define NSEGS	70	/* more than the 64 mappings the plugin once held */

Test(gpu_ipc, roundtrip_with_another_process, .timeout = 120)
{
	struct sio_fabric_config cfg = { .nodes = 2, .topology = SIO_TOPO_SWITCH };
	struct sio_gpu_mem *m, *m2, *many[NSEGS];
	uint64_t bus, bus2, busn[NSEGS], len = 1 << 20;
	struct sio_fabric *f;
	struct sio_device *dev;
	struct child ch;
	char name[64];
	unsigned int id;
	char line[256];

	if (!have_gpu())
		cr_skip_test("%s", sio_errmsg());
	snprintf(name, sizeof(name), "gpuipc%d", (int)getpid());
	sio_fabric_destroy(name);
	cr_assert_eq(sio_fabric_create(name, &cfg), 0, "%s", sio_errmsg());
	/* the GPU on the device's node: no window per segment */
	cr_assert_eq(sio_fabric_open(name, 0, &f), 0, "%s", sio_errmsg());
	child_start(&ch, name);
	child_line(&ch, line, sizeof(line));
	cr_assert(sscanf(line, "%u", &id) == 1, "device process: %s", line);
	cr_assert_eq(sio_device_borrow(f, id, SIO_BORROW_SHARED, &dev), 0, "%s", sio_errmsg());

	/* both directions, and the copy to the GPU has landed when it answers */
	cr_assert_eq(sio_gpu_mem_create(f, len, 0, &m), 0, "%s", sio_errmsg());
	fill(m, len, 0xa);
	cr_assert_eq(sio_device_map(dev, m->seg, &bus), 0, "%s", sio_errmsg());
	cr_expect_eq(child_ask(&ch, "r %llx %llu %x\n", (unsigned long long)bus,
			       (unsigned long long)len, 0xa), 0, "words read wrong");
	cr_expect_eq(child_ask(&ch, "w %llx %llu %x\n", (unsigned long long)bus,
			       (unsigned long long)len, 0xb), 0);
	cr_expect_eq(mismatches(m, len, 0xb), 0, "the device's write did not land");

	/* the slot reused by new memory: the old mapping must not serve it */
	sio_device_unmap(dev, m->seg);
	sio_gpu_mem_close(m);
	cr_assert_eq(sio_gpu_mem_create(f, len, 0, &m2), 0, "%s", sio_errmsg());
	fill(m2, len, 0xc);
	cr_assert_eq(sio_device_map(dev, m2->seg, &bus2), 0, "%s", sio_errmsg());
	cr_expect_eq(child_ask(&ch, "r %llx %llu %x\n", (unsigned long long)bus2,
			       (unsigned long long)len, 0xc), 0, "read the freed memory");

	/* more segments than the old cache held, each used twice */
	for (int i = 0; i < NSEGS; i++) {
		cr_assert_eq(sio_gpu_mem_create(f, 65536, 0, &many[i]), 0, "%s", sio_errmsg());
		fill(many[i], 65536, 0x100 + i);
		cr_assert_eq(sio_device_map(dev, many[i]->seg, &busn[i]), 0, "%s", sio_errmsg());
	}
	for (int k = 0; k < 2; k++)
		for (int i = 0; i < NSEGS; i++)
			cr_expect_eq(child_ask(&ch, "r %llx %u %x\n", (unsigned long long)busn[i],
					       65536, 0x100 + i), 0, "segment %d", i);
	cr_expect_eq(child_ask(&ch, "n\n"), NSEGS + 1, "IPC mappings open");
	/* gone: the device process closes its mappings at its next DMA */
	for (int i = 0; i < NSEGS; i++) {
		sio_device_unmap(dev, many[i]->seg);
		sio_gpu_mem_close(many[i]);
	}
	cr_expect_eq(child_ask(&ch, "r %llx %llu %x\n", (unsigned long long)bus2,
			       (unsigned long long)len, 0xc), 0);
	cr_expect_eq(child_ask(&ch, "n\n"), 1, "mappings of freed GPU memory left open");

	fprintf(ch.in, "q\n");
	fclose(ch.in);
	fclose(ch.out);
	waitpid(ch.pid, NULL, 0);
	sio_device_unmap(dev, m2->seg);
	sio_gpu_mem_close(m2);
	sio_device_close(dev);
	sio_fabric_close(f);
	sio_fabric_destroy(name);
}

int main(int argc, char *argv[])
{
	struct criterion_test_set *tests;
	int result = 0;

	if (argc == 3 && !strcmp(argv[1], "--ipc-child"))
		return ipc_child(argv[2]);
	gpu_test_mps();
	if (sio_gpu_required() && !have_gpu()) {
		printf("FAIL: SMARTIO_REQUIRE_GPU is set, but %s\n", sio_errmsg());
		return 1;
	}
	if (!have_gpu()) {
		printf("no GPU (%s): the GPU-only tests skip\n", sio_errmsg());
		fflush(stdout);
	}
	tests = criterion_initialize();
	if (criterion_handle_args(argc, argv, true))
		result = !criterion_run_all_tests(tests);
	criterion_finalize(tests);
	return result;
}
