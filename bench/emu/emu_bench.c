/* SPDX-License-Identifier: MIT */
/*
 * emu-bench: the emulated NVMe controller's own speed, RAM backing, latency
 * model off. One controller process, one polling client on the same node:
 *   - QD1 4 KiB random reads: latency percentiles (submit to completion seen)
 *   - QD32 4 KiB random reads: IOPS
 * Prints a table and writes JSON (and the QD1 latencies, one per line).
 *
 * With --fabric NAME --device ID --reset it measures a controller lent on an
 * existing fabric instead (vfio-lent, say): it borrows it exclusively, resets
 * it and writes the first 64 MiB of namespace 1, so it does so only when
 * asked, and never while a manager or client holds the device.
 */
#include "ready.h"
#include "opt.h"
#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/wait.h>
#include <nvme/types.h>
#include <smartio/nvme.h>
#include "emu.h"
#include "hist.h"

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

struct mem {
	struct sio_segment *seg;
	uint8_t *va;
	uint64_t bus;
};

struct q {
	uint16_t qid;
	uint32_t size, tail, head;
	uint8_t phase;
	struct mem sq, cq;
};

static volatile uint8_t *regs;
static struct sio_device *dev;
static struct sio_fabric *fab;

static __attribute__((noreturn)) void die(const char *what)
{
	fprintf(stderr, "emu-bench: %s: %s\n", what, sio_errmsg());
	exit(1);
}

static void mem(uint64_t size, struct mem *m)
{
	void *va;

	if (sio_segment_create(fab, 0, size, 0, &m->seg) || sio_segment_map(m->seg, &va) ||
	    sio_device_map(dev, m->seg, &m->bus))
		die("segment");
	m->va = va;
	memset(va, 0, size);
}

static inline void db(uint16_t qid, bool cq, uint32_t v)
{
	atomic_thread_fence(memory_order_release);	/* entries before the doorbell */
	__atomic_store_n((uint32_t *)(regs + 0x1000 + (2u * qid + cq) * 4), v, __ATOMIC_RELAXED);
}

static inline void submit(struct q *q, const struct sio_nvme_cmd *c)
{
	memcpy(q->sq.va + (uint64_t)q->tail * sizeof(*c), c, sizeof(*c));
	if (++q->tail == q->size)
		q->tail = 0;
	db(q->qid, false, q->tail);
}

/* Poll for one completion; spins (the bench owns a core), bounded by 2 s. */
static inline int reap(struct q *q, struct sio_nvme_cpl *out, bool ring)
{
	volatile struct sio_nvme_cpl *e = (volatile struct sio_nvme_cpl *)q->cq.va + q->head;
	uint64_t t0 = 0;

	for (uint32_t n = 0; (__atomic_load_n(&e->status, __ATOMIC_ACQUIRE) & 1) != q->phase; n++) {
		if ((n & 0xffff) == 0) {
			if (!t0)
				t0 = now_ns();
			else if (now_ns() - t0 > 2000000000ull)
				return -ETIMEDOUT;
		}
		__builtin_ia32_pause();
	}
	*out = *(const struct sio_nvme_cpl *)e;
	if (++q->head == q->size) {
		q->head = 0;
		q->phase ^= 1;
	}
	if (ring)
		db(q->qid, true, q->head);
	return 0;
}

static int sync_cmd(struct q *q, struct sio_nvme_cmd *c)
{
	struct sio_nvme_cpl r;

	submit(q, c);
	if (reap(q, &r, true))
		return -ETIMEDOUT;
	return SIO_NVME_STATUS_CODE(r.status);
}

/* Take an existing fabric's controller (--fabric, --reset): its device id. */
static char measured[512];	/* what is measured, said once the device is ours */

static uint32_t existing(const struct bench_target *t)
{
	struct sio_device_info d[64];
	int n, node = t->node < 0 ? 0 : t->node;

	if (!t->reset) {
		fprintf(stderr, "emu-bench: --fabric: emu-bench drives the controller's registers "
				"itself: it borrows the device exclusively, resets it and writes the "
				"first 64 MiB of namespace 1; give --reset to allow that\n");
		exit(2);
	}
	if (sio_fabric_open(t->fabric, node, &fab))
		die("join fabric");
	n = sio_device_list(fab, 0x010802, 0xffffff, d, 64);
	for (int i = 0; i < n && i < 64; i++)
		if (t->device == SIO_DEVICE_ANY || d[i].id == t->device) {
			snprintf(measured, sizeof(measured),
				 "measured: fabric %s, device %u%s%s on node %d (%s), taken "
				 "exclusively and reset (--reset); no latency model%s\n", t->fabric,
				 d[i].id, d[i].bdf[0] ? " at " : "", d[i].bdf, d[i].lender,
				 d[i].backend == SIO_BACKEND_VFIO ? "vfio" : "sim",
				 d[i].backend == SIO_BACKEND_VFIO ? " (a real device path)"
				 : " applied by emu-bench (the fabric's own setting holds)");
			return d[i].id;
		}
	fprintf(stderr, "emu-bench: fabric %s has no NVMe controller%s (%d listed)\n", t->fabric,
		t->device == SIO_DEVICE_ANY ? "" : " with that device id", n < 0 ? 0 : n);
	exit(1);
}

/* CC.EN = 0 and wait for CSTS.RDY = 0, bounded by CAP.TO. */
static void disable(void)
{
	uint64_t cap = __atomic_load_n((uint64_t *)(regs + NVME_REG_CAP), __ATOMIC_ACQUIRE);
	uint64_t t0 = now_ns(), to = (NVME_CAP_TO(cap) + 1) * 500000000ull;

	__atomic_store_n((uint32_t *)(regs + NVME_REG_CC), 0, __ATOMIC_RELEASE);
	while (NVME_CSTS_RDY(__atomic_load_n((uint32_t *)(regs + NVME_REG_CSTS), __ATOMIC_ACQUIRE))) {
		if (now_ns() - t0 > to) {
			fprintf(stderr, "emu-bench: the controller did not reset within CAP.TO\n");
			exit(1);
		}
		usleep(100);
	}
}

static uint64_t xorshift(uint64_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 7;
	*s ^= *s << 17;
	return *s;
}

static void usage(FILE *o)
{
	fprintf(o, "usage: emu-bench [options]\n"
		"The emulated NVMe controller's own speed: QD1 4 KiB random reads (latency),\n"
		"then QD32 (IOPS), from one polling client on the controller's node.\n\n"
		"  -n, --ios N           QD1 reads (default 200000, at least 100)\n"
		"  -t, --time SEC        QD32 run time (default 3)\n"
		"  -j, --json FILE       the results as JSON (default emu-bench.json)\n"
		"  -l, --latencies FILE  every QD1 latency, one per line in ns\n"
		"                        (default emu-bench-qd1.dat)\n"
		"  --fabric NAME [--device ID] [--node N] --reset\n"
		"                        an existing fabric's controller instead, taken\n"
		"                        exclusively and reset (it writes the first 64 MiB)\n"
		PROG_HELP);
}

struct emu_opts {
	uint64_t n_qd1, secs;
	const char *json, *lat_out;
	struct bench_target tgt;
};

static int run_bench(struct emu_opts *o);

int main(int argc, char **argv)
{
	static const struct option lo[] = {
		{ "ios", required_argument, NULL, 'n' }, { "time", required_argument, NULL, 't' },
		{ "json", required_argument, NULL, 'j' }, { "latencies", required_argument, NULL, 'l' },
		BENCH_TARGET_LONGOPTS, { "reset", no_argument, NULL, 'R' }, { 0 },
	};
	struct emu_opts o = { .n_qd1 = 200000, .secs = 3, .json = "emu-bench.json",
			      .lat_out = "emu-bench-qd1.dat" };
	int c;

	prog_init("emu-bench", usage);
	bench_target_init(&o.tgt);
	while ((c = prog_getopt(argc, argv, "n:t:j:l:h", lo)) != -1) {
		switch (c) {
		case 'n': o.n_qd1 = prog_u64("--ios", optarg, 100, 1000000000); break;
		case 't': o.secs = prog_u64("--time", optarg, 1, 3600); break;
		case 'j': o.json = optarg; break;
		case 'l': o.lat_out = optarg; break;
		case 'R': o.tgt.reset = true; break;
		default:
			if (c == BENCH_OPT_START_MANAGER ||
			    !bench_target_opt(prog_name, &o.tgt, c, optarg))
				prog_usage_error("emu-bench drives the controller itself: no manager");
		}
	}
	prog_no_args(argc, argv);
	bench_target_check(prog_name, &o.tgt);
	return run_bench(&o);
}

static int run_bench(struct emu_opts *o)
{
	uint64_t n_qd1 = o->n_qd1, secs = o->secs, size = 1ull << 30;
	const char *json = o->json, *lat_out = o->lat_out;
	struct bench_target tgt = o->tgt;
	char name[SIO_NAME_MAX];
	uint32_t nlb = 8, lbads = 512;	/* LBAs per 4 KiB, LBA size */
	pid_t pid = 0;

	uint32_t devid;
	if (tgt.fabric) {
		devid = existing(&tgt);
		snprintf(name, sizeof(name), "%s", tgt.fabric);
		goto borrow;
	}
	snprintf(name, sizeof(name), "emubench-%d", (int)getpid());
	struct sio_fabric_config fc = { .nodes = 1, .latency_model = false };
	if (sio_fabric_create(name, &fc))
		die("fabric");

	/* the controller, in a process of its own as in use */
	int pfd[2];
	if (pipe(pfd))
		return 1;
	pid = fork();
	if (pid == 0) {
		static volatile sig_atomic_t stop;
		struct sio_nvme_emu_config cfg;
		struct sio_nvme_emu *emu;
		struct sio_fabric *f;
		uint32_t id;

		sio_nvme_emu_config_default(&cfg);
		cfg.backing = "ram:1G";
		cfg.max_qpairs = 4;
		if (sio_nvme_emu_create(&cfg, &emu) || sio_fabric_open(name, 0, &f) ||
		    sio_nvme_emu_attach(emu, f)) {
			fprintf(stderr, "emu-bench: controller: %s\n", sio_errmsg());
			_exit(1);
		}
		id = (uint32_t)sio_nvme_emu_device_id(emu);
		if (write(pfd[1], &id, sizeof(id)) != sizeof(id))
			_exit(1);
		signal(SIGTERM, SIG_DFL);
		sio_nvme_emu_run(emu, &stop);	/* ends with SIGTERM */
		_exit(0);
	}
	if (read(pfd[0], &devid, sizeof(devid)) != sizeof(devid)) {
		fprintf(stderr, "emu-bench: controller did not start\n");
		return 1;
	}
	if (sio_fabric_open(name, 0, &fab))
		die("join fabric");
borrow:;
	struct sio_segment *bar;
	void *va;
	if (sio_device_borrow(fab, devid, SIO_BORROW_EXCLUSIVE, &dev)) {
		fprintf(stderr, "emu-bench: borrow device %u exclusively: %s%s\n", devid, sio_errmsg(),
			tgt.fabric ? " (a manager or client holds it? emu-bench needs it alone)" : "");
		return 1;
	}
	if (sio_device_bar(dev, 0, &bar) || sio_segment_map(bar, &va))
		die("map BAR0");
	if (measured[0])
		printf("%s", measured);
	regs = va;
	disable();	/* from a known state: a lent controller may be running */

	struct q admin = { .qid = 0, .size = 32, .phase = 1 }, io = { .qid = 1, .size = 64, .phase = 1 };
	struct mem data;
	mem(4096, &admin.sq);
	mem(4096, &admin.cq);
	mem(4096, &io.sq);
	mem(4096, &io.cq);
	mem(64 * 4096, &data);
	__atomic_store_n((uint32_t *)(regs + NVME_REG_AQA),
			 NVME_SET(31u, AQA_ASQS) | NVME_SET(31u, AQA_ACQS), __ATOMIC_RELAXED);
	__atomic_store_n((uint64_t *)(regs + NVME_REG_ASQ), admin.sq.bus, __ATOMIC_RELAXED);
	__atomic_store_n((uint64_t *)(regs + NVME_REG_ACQ), admin.cq.bus, __ATOMIC_RELAXED);
	__atomic_store_n((uint32_t *)(regs + NVME_REG_CC),
			 NVME_SET(1, CC_EN) | NVME_SET(SIO_NVME_SQES, CC_IOSQES) |
			 NVME_SET(SIO_NVME_CQES, CC_IOCQES), __ATOMIC_RELEASE);
	for (uint64_t t0 = now_ns();
	     !NVME_CSTS_RDY(__atomic_load_n((uint32_t *)(regs + NVME_REG_CSTS), __ATOMIC_ACQUIRE));) {
		if (now_ns() - t0 > 5000000000ull) {
			fprintf(stderr, "emu-bench: controller not ready\n");
			return 1;
		}
		usleep(50);
	}
	struct sio_nvme_cmd cmd;

	/* namespace 1's size and LBA size (Identify Namespace) */
	sio_nvme_cmd_identify(&cmd, NVME_IDENTIFY_CNS_NS, 1, data.bus);
	if (sync_cmd(&admin, &cmd))
		die("identify namespace 1");
	{
		const struct nvme_id_ns *ns = (const void *)data.va;
		uint64_t nsze = ns->nsze;

		lbads = 1u << ns->lbaf[ns->flbas & 0xf].ds;
		if (lbads < 512 || lbads > 4096) {
			fprintf(stderr, "emu-bench: namespace 1 has %u B blocks (512..4096 taken)\n", lbads);
			return 1;
		}
		nlb = 4096 / lbads;
		if (nsze * lbads < size)
			size = nsze * lbads;
		if (size < (1ull << 20)) {
			fprintf(stderr, "emu-bench: namespace 1 is too small (%llu B)\n",
				(unsigned long long)size);
			return 1;
		}
	}

	sio_nvme_cmd_create_cq(&cmd, 1, 64, io.cq.bus, SIO_NVME_Q_PC, 0);
	if (sync_cmd(&admin, &cmd))
		die("create CQ");
	sio_nvme_cmd_create_sq(&cmd, 1, 64, io.sq.bus, 1, 0);
	if (sync_cmd(&admin, &cmd))
		die("create SQ");

	const uint64_t nblk = size / 4096;
	uint64_t seed = 0x9e3779b97f4a7c15ull;
	struct sio_nvme_cpl r;

	/* warm up: write every block once is too slow for 1 GiB; write the first 64 MiB */
	for (uint64_t b = 0; b < 16384 && b < nblk; b++) {
		sio_nvme_cmd_rw(&cmd, nvme_cmd_write, 1, b * nlb, nlb, data.bus, 0);
		cmd.cid = 1;
		if (sync_cmd(&io, &cmd))
			die("warm-up write");
	}

	/* QD1: every read's latency in the histogram, and in the file as it comes */
	struct hist *lat = malloc(sizeof(*lat));
	FILE *lf = safe_fopen_w(lat_out);

	if (!lat || !lf) {
		fprintf(stderr, "emu-bench: %s: %s\n", lat ? lat_out : "histogram", strerror(errno));
		return 1;
	}
	hist_init(lat);
	fprintf(stderr, "QD1: %llu reads\n", (unsigned long long)n_qd1);
	for (uint64_t i = 0; i < n_qd1; i++) {
		uint64_t lba = (xorshift(&seed) % nblk) * nlb;

		sio_nvme_cmd_rw(&cmd, nvme_cmd_read, 1, lba, nlb, data.bus, 0);
		cmd.cid = (uint16_t)i;
		uint64_t t0 = now_ns();
		submit(&io, &cmd);
		if (reap(&io, &r, true) || SIO_NVME_STATUS_CODE(r.status))
			die("QD1 read");
		uint64_t t = now_ns() - t0;

		hist_add(lat, t);
		fprintf(lf, "%llu\n", (unsigned long long)t);	/* outside the timed span */
		if (i % (n_qd1 / 10 + 1) == 0 && i)
			fprintf(stderr, "  %llu%%\n", (unsigned long long)(i * 100 / n_qd1));
	}
	fclose(lf);
	double pv[5] = { hist_pct(lat, 50), hist_pct(lat, 90), hist_pct(lat, 99), hist_pct(lat, 99.9),
			 (double)lat->max };

	/* QD32: keep 32 reads outstanding, ring the CQ head once per batch */
	const uint32_t qd = 32;
	uint64_t done = 0, t_end, t0;
	fprintf(stderr, "QD32: %llu s\n", (unsigned long long)secs);
	for (uint32_t i = 0; i < qd; i++) {
		uint64_t lba = (xorshift(&seed) % nblk) * nlb;
		sio_nvme_cmd_rw(&cmd, nvme_cmd_read, 1, lba, nlb, data.bus + (uint64_t)i * 4096, 0);
		cmd.cid = (uint16_t)i;
		memcpy(io.sq.va + (uint64_t)io.tail * sizeof(cmd), &cmd, sizeof(cmd));
		io.tail = (io.tail + 1) % io.size;
	}
	db(1, false, io.tail);
	t0 = now_ns();
	t_end = t0 + secs * 1000000000ull;
	for (uint64_t now = t0; now < t_end; now = (done & 1023) ? now : now_ns()) {
		uint32_t got = 0;
		do {
			if (reap(&io, &r, false) || SIO_NVME_STATUS_CODE(r.status))
				die("QD32 read");
			uint64_t lba = (xorshift(&seed) % nblk) * nlb;
			sio_nvme_cmd_rw(&cmd, nvme_cmd_read, 1, lba, nlb,
					data.bus + (uint64_t)(r.cid % qd) * 4096, 0);
			cmd.cid = r.cid;
			memcpy(io.sq.va + (uint64_t)io.tail * sizeof(cmd), &cmd, sizeof(cmd));
			io.tail = (io.tail + 1) % io.size;
			got++;
			done++;
		} while ((__atomic_load_n(&((volatile struct sio_nvme_cpl *)io.cq.va)[io.head].status,
					  __ATOMIC_ACQUIRE) & 1) == io.phase && got < qd);
		db(1, true, io.head);
		db(1, false, io.tail);
	}
	double el = (double)(now_ns() - t0) / 1e9;
	double iops = (double)done / el;
	for (uint32_t i = 0; i < qd; i++)
		reap(&io, &r, true);

	if (!tgt.fabric)
		printf("emulated NVMe controller, RAM backing, latency model off (no modelled delays)\n");
	printf("%-28s %12s\n", "metric", "value");
	printf("%-28s %12.3f\n", "QD1 4KiB read p50 (us)", pv[0] / 1e3);	/* within 1.6 % */
	printf("%-28s %12.3f\n", "QD1 4KiB read p90 (us)", pv[1] / 1e3);
	printf("%-28s %12.3f\n", "QD1 4KiB read p99 (us)", pv[2] / 1e3);
	printf("%-28s %12.3f\n", "QD1 4KiB read p99.9 (us)", pv[3] / 1e3);
	printf("%-28s %12.3f\n", "QD1 4KiB read max (us)", pv[4] / 1e3);
	printf("%-28s %12.0f\n", "QD32 4KiB reads/s", iops);
	struct json_object *jo = json_object_new_object(), *q;

	pj_str(jo, "bench", "emu");
	pj_str(jo, "backing", tgt.fabric ? "existing device" : "ram");
	pj_str(jo, "fabric", name);
	pj_u64(jo, "device", devid);
	pj_bool(jo, "latency_model", false);
	pj_u64(jo, "lba_size", lbads);
	q = pj_obj(jo, "qd1");
	pj_u64(q, "reads", n_qd1);
	json_object_object_add(q, "lat_ns", hist_json(lat, 1));
	q = pj_obj(jo, "qd32");
	pj_dbl(q, "seconds", el);
	pj_u64(q, "reads", done);
	pj_dbl(q, "iops", iops);
	pj_run_info(jo);
	if (prog_json_write(json, jo))
		return 1;
	disable();	/* leave the controller off, its queues gone, for the next owner */
	sio_device_close(dev);
	sio_fabric_close(fab);
	if (pid > 0) {
		kill(pid, SIGTERM);
		waitpid(pid, NULL, 0);
		sio_fabric_destroy(name);
	}
	free(lat);
	return 0;
}
