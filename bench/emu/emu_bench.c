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
#include "clock.h"
#include "safe-file.h"
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
				t0 = sio__now_ns();
			else if (sio__now_ns() - t0 > 2000000000ull)
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
	uint64_t t0 = sio__now_ns(), to = (NVME_CAP_TO(cap) + 1) * 500000000ull;

	__atomic_store_n((uint32_t *)(regs + NVME_REG_CC), 0, __ATOMIC_RELEASE);
	while (NVME_CSTS_RDY(__atomic_load_n((uint32_t *)(regs + NVME_REG_CSTS), __ATOMIC_ACQUIRE))) {
		if (sio__now_ns() - t0 > to) {
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
		case 't': o.secs = (uint64_t)(prog_time("--time", optarg, 1, 1, 3600) + 0.5); break;
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

/* What one run holds: its set-up and what it measured. */
struct emu_run {
	char name[SIO_NAME_MAX];	/* the fabric */
	uint32_t devid;
	pid_t pid;			/* the private controller (0: none) */
	uint64_t size;			/* bytes of namespace 1 read over */
	uint32_t nlb, lbads;		/* LBAs per 4 KiB, LBA size */
	uint64_t seed;
	struct q admin, io;
	struct mem data;
	struct hist *lat;		/* QD1 latencies */
	double pv[5];			/* QD1 p50, p90, p99, p99.9, max */
	double el, iops;		/* QD32 seconds and reads per second */
	uint64_t done;			/* QD32 reads */
};

/* The controller, in a process of its own as in use; it ends with SIGTERM. */
static __attribute__((noreturn)) void controller(const char *name, int wfd)
{
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
	if (write(wfd, &id, sizeof(id)) != sizeof(id))
		_exit(1);
	signal(SIGTERM, SIG_DFL);
	sio_nvme_emu_run(emu, &stop);
	_exit(0);
}

/* A private fabric, its controller started and joined. */
static int start_private(struct emu_run *r)
{
	struct sio_fabric_config fc = { .nodes = 1, .latency_model = false };
	int pfd[2];

	snprintf(r->name, sizeof(r->name), "emubench-%d", (int)getpid());
	if (sio_fabric_create(r->name, &fc))
		die("fabric");
	if (pipe(pfd))
		return 1;
	r->pid = fork();
	if (r->pid == 0)
		controller(r->name, pfd[1]);
	if (read(pfd[0], &r->devid, sizeof(r->devid)) != sizeof(r->devid)) {
		fprintf(stderr, "emu-bench: controller did not start\n");
		return 1;
	}
	if (sio_fabric_open(r->name, 0, &fab))
		die("join fabric");
	return 0;
}

/* Borrow the device alone, map its registers, turn it off. */
static int take_device(const struct emu_run *r, const struct bench_target *tgt)
{
	struct sio_segment *bar;
	void *va;

	if (sio_device_borrow(fab, r->devid, SIO_BORROW_EXCLUSIVE, &dev)) {
		fprintf(stderr, "emu-bench: borrow device %u exclusively: %s%s\n", r->devid,
			sio_errmsg(),
			tgt->fabric ? " (a manager or client holds it? emu-bench needs it alone)" : "");
		return 1;
	}
	if (sio_device_bar(dev, 0, &bar) || sio_segment_map(bar, &va))
		die("map BAR0");
	if (measured[0])
		printf("%s", measured);
	regs = va;
	disable();	/* from a known state: a lent controller may be running */
	return 0;
}

/* The admin queue and the data buffer; CC.EN = 1 and wait for CSTS.RDY. */
static int enable(struct emu_run *r)
{
	r->admin = (struct q){ .qid = 0, .size = 32, .phase = 1 };
	r->io = (struct q){ .qid = 1, .size = 64, .phase = 1 };
	mem(4096, &r->admin.sq);
	mem(4096, &r->admin.cq);
	mem(4096, &r->io.sq);
	mem(4096, &r->io.cq);
	mem(64 * 4096, &r->data);
	__atomic_store_n((uint32_t *)(regs + NVME_REG_AQA),
			 NVME_SET(31u, AQA_ASQS) | NVME_SET(31u, AQA_ACQS), __ATOMIC_RELAXED);
	__atomic_store_n((uint64_t *)(regs + NVME_REG_ASQ), r->admin.sq.bus, __ATOMIC_RELAXED);
	__atomic_store_n((uint64_t *)(regs + NVME_REG_ACQ), r->admin.cq.bus, __ATOMIC_RELAXED);
	__atomic_store_n((uint32_t *)(regs + NVME_REG_CC),
			 NVME_SET(1, CC_EN) | NVME_SET(SIO_NVME_SQES, CC_IOSQES) |
			 NVME_SET(SIO_NVME_CQES, CC_IOCQES), __ATOMIC_RELEASE);
	for (uint64_t t0 = sio__now_ns();
	     !NVME_CSTS_RDY(__atomic_load_n((uint32_t *)(regs + NVME_REG_CSTS), __ATOMIC_ACQUIRE));) {
		if (sio__now_ns() - t0 > 5000000000ull) {
			fprintf(stderr, "emu-bench: controller not ready\n");
			return 1;
		}
		usleep(50);
	}
	return 0;
}

/* Namespace 1's size and LBA size (Identify Namespace). */
static int identify_ns(struct emu_run *r)
{
	const struct nvme_id_ns *ns = (const void *)r->data.va;
	struct sio_nvme_cmd cmd;

	sio_nvme_cmd_identify(&cmd, NVME_IDENTIFY_CNS_NS, 1, r->data.bus);
	if (sync_cmd(&r->admin, &cmd))
		die("identify namespace 1");
	r->lbads = 1u << ns->lbaf[ns->flbas & 0xf].ds;
	if (r->lbads < 512 || r->lbads > 4096) {
		fprintf(stderr, "emu-bench: namespace 1 has %u B blocks (512..4096 taken)\n",
			r->lbads);
		return 1;
	}
	r->nlb = 4096 / r->lbads;
	if (ns->nsze * r->lbads < r->size)
		r->size = ns->nsze * r->lbads;
	if (r->size < (1ull << 20)) {
		fprintf(stderr, "emu-bench: namespace 1 is too small (%llu B)\n",
			(unsigned long long)r->size);
		return 1;
	}
	return 0;
}

/* I/O queue pair 1; then the first 64 MiB written once (all of 1 GiB is too slow). */
static void create_ioq(struct emu_run *r)
{
	struct sio_nvme_cmd cmd;

	sio_nvme_cmd_create_cq(&cmd, 1, 64, r->io.cq.bus, SIO_NVME_Q_PC, 0);
	if (sync_cmd(&r->admin, &cmd))
		die("create CQ");
	sio_nvme_cmd_create_sq(&cmd, 1, 64, r->io.sq.bus, 1, 0);
	if (sync_cmd(&r->admin, &cmd))
		die("create SQ");
	for (uint64_t b = 0; b < 16384 && b < r->size / 4096; b++) {
		sio_nvme_cmd_rw(&cmd, nvme_cmd_write, 1, b * r->nlb, r->nlb, r->data.bus, 0);
		cmd.cid = 1;
		if (sync_cmd(&r->io, &cmd))
			die("warm-up write");
	}
}

/* A 4 KiB read of a random block into @r->data at @off, command id @cid. */
static void random_read(struct emu_run *r, struct sio_nvme_cmd *cmd, uint64_t off, uint16_t cid)
{
	uint64_t lba = (xorshift(&r->seed) % (r->size / 4096)) * r->nlb;

	sio_nvme_cmd_rw(cmd, nvme_cmd_read, 1, lba, r->nlb, r->data.bus + off, 0);
	cmd->cid = cid;
}

/* QD1: every read's latency in the histogram, and in @lat_out as it comes. */
static int run_qd1(struct emu_run *r, uint64_t n_qd1, const char *lat_out)
{
	struct sio_nvme_cmd cmd;
	struct sio_nvme_cpl cpl;
	FILE *lf;

	r->lat = malloc(sizeof(*r->lat));
	lf = safe_fopen_w(lat_out);
	if (!r->lat || !lf) {
		fprintf(stderr, "emu-bench: %s: %s\n", r->lat ? lat_out : "histogram",
			strerror(errno));
		return 1;
	}
	hist_init(r->lat);
	fprintf(stderr, "QD1: %llu reads\n", (unsigned long long)n_qd1);
	for (uint64_t i = 0; i < n_qd1; i++) {
		random_read(r, &cmd, 0, (uint16_t)i);
		uint64_t t0 = sio__now_ns();
		submit(&r->io, &cmd);
		if (reap(&r->io, &cpl, true) || SIO_NVME_STATUS_CODE(cpl.status))
			die("QD1 read");
		uint64_t t = sio__now_ns() - t0;

		hist_add(r->lat, t);
		fprintf(lf, "%llu\n", (unsigned long long)t);	/* outside the timed span */
		if (i % (n_qd1 / 10 + 1) == 0 && i)
			fprintf(stderr, "  %llu%%\n", (unsigned long long)(i * 100 / n_qd1));
	}
	fclose(lf);
	r->pv[0] = hist_pct(r->lat, 50), r->pv[1] = hist_pct(r->lat, 90);
	r->pv[2] = hist_pct(r->lat, 99), r->pv[3] = hist_pct(r->lat, 99.9);
	r->pv[4] = (double)r->lat->max;
	return 0;
}

/* QD32 for @secs: keep 32 reads outstanding, ring the CQ head once per batch. */
static void run_qd32(struct emu_run *r, uint64_t secs)
{
	const uint32_t qd = 32;
	struct q *io = &r->io;
	struct sio_nvme_cmd cmd;
	struct sio_nvme_cpl cpl;
	uint64_t t_end, t0;

	fprintf(stderr, "QD32: %llu s\n", (unsigned long long)secs);
	for (uint32_t i = 0; i < qd; i++) {
		random_read(r, &cmd, (uint64_t)i * 4096, (uint16_t)i);
		memcpy(io->sq.va + (uint64_t)io->tail * sizeof(cmd), &cmd, sizeof(cmd));
		io->tail = (io->tail + 1) % io->size;
	}
	db(1, false, io->tail);
	t0 = sio__now_ns();
	t_end = t0 + secs * 1000000000ull;
	for (uint64_t now = t0; now < t_end; now = (r->done & 1023) ? now : sio__now_ns()) {
		uint32_t got = 0;
		do {
			if (reap(io, &cpl, false) || SIO_NVME_STATUS_CODE(cpl.status))
				die("QD32 read");
			random_read(r, &cmd, (uint64_t)(cpl.cid % qd) * 4096, cpl.cid);
			memcpy(io->sq.va + (uint64_t)io->tail * sizeof(cmd), &cmd, sizeof(cmd));
			io->tail = (io->tail + 1) % io->size;
			got++;
			r->done++;
		} while ((__atomic_load_n(&((volatile struct sio_nvme_cpl *)io->cq.va)[io->head].status,
					  __ATOMIC_ACQUIRE) & 1) == io->phase && got < qd);
		db(1, true, io->head);
		db(1, false, io->tail);
	}
	r->el = (double)(sio__now_ns() - t0) / 1e9;
	r->iops = (double)r->done / r->el;
	for (uint32_t i = 0; i < qd; i++)
		reap(io, &cpl, true);
}

/* The table on stdout and the JSON file. */
static int report(const struct emu_run *r, const struct emu_opts *o)
{
	struct json_object *jo = json_object_new_object(), *q;

	if (!o->tgt.fabric)
		printf("emulated NVMe controller, RAM backing, latency model off (no modelled delays)\n");
	printf("%-28s %12s\n", "metric", "value");
	printf("%-28s %12.3f\n", "QD1 4KiB read p50 (us)", r->pv[0] / 1e3);	/* within 1.6 % */
	printf("%-28s %12.3f\n", "QD1 4KiB read p90 (us)", r->pv[1] / 1e3);
	printf("%-28s %12.3f\n", "QD1 4KiB read p99 (us)", r->pv[2] / 1e3);
	printf("%-28s %12.3f\n", "QD1 4KiB read p99.9 (us)", r->pv[3] / 1e3);
	printf("%-28s %12.3f\n", "QD1 4KiB read max (us)", r->pv[4] / 1e3);
	printf("%-28s %12.0f\n", "QD32 4KiB reads/s", r->iops);
	pj_str(jo, "bench", "emu");
	pj_str(jo, "backing", o->tgt.fabric ? "existing device" : "ram");
	pj_str(jo, "fabric", r->name);
	pj_u64(jo, "device", r->devid);
	pj_bool(jo, "latency_model", false);
	pj_u64(jo, "lba_size", r->lbads);
	q = pj_obj(jo, "qd1");
	pj_u64(q, "reads", o->n_qd1);
	json_object_object_add(q, "lat_ns", hist_json(r->lat, 1));
	q = pj_obj(jo, "qd32");
	pj_dbl(q, "seconds", r->el);
	pj_u64(q, "reads", r->done);
	pj_dbl(q, "iops", r->iops);
	pj_run_info(jo);
	return prog_json_write(o->json, jo) ? 1 : 0;
}

/* Leave the controller off, its queues gone, for the next owner; stop ours. */
static void teardown(struct emu_run *r)
{
	disable();
	sio_device_close(dev);
	sio_fabric_close(fab);
	if (r->pid > 0) {
		kill(r->pid, SIGTERM);
		waitpid(r->pid, NULL, 0);
		sio_fabric_destroy(r->name);
	}
	free(r->lat);
}

static int run_bench(struct emu_opts *o)
{
	struct emu_run r = { .size = 1ull << 30, .nlb = 8, .lbads = 512,
			     .seed = 0x9e3779b97f4a7c15ull };

	if (o->tgt.fabric) {
		r.devid = existing(&o->tgt);
		snprintf(r.name, sizeof(r.name), "%s", o->tgt.fabric);
	} else if (start_private(&r)) {
		return 1;
	}
	if (take_device(&r, &o->tgt) || enable(&r) || identify_ns(&r))
		return 1;
	create_ioq(&r);
	if (run_qd1(&r, o->n_qd1, o->lat_out))
		return 1;
	run_qd32(&r, o->secs);
	if (report(&r, o))
		return 1;
	teardown(&r);
	return 0;
}
