/* SPDX-License-Identifier: MIT */
/*
 * nvme-client: write, read and verify LBA ranges of a shared NVMe
 * controller through a queue pair of our own, and report what it cost.
 * Exits non-zero on any mismatch or error.
 */

#include <errno.h>
#include <getopt.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <time.h>
#include <unistd.h>
#include <smartio/nvme.h>
#include "tool.h"

enum op { OP_WRITE, OP_READ, OP_VERIFY, OP_WRITE_VERIFY };
enum pat { PAT_LBA, PAT_ZERO, PAT_BYTE };

struct cfg {
	uint32_t nsid;
	enum op op;
	enum pat pat;
	uint8_t byte;
	uint64_t seed;
	uint64_t lba, count;	/* the range */
	uint32_t io_blocks;
	uint64_t ios;		/* 0: cover the range once */
	bool random;
	uint32_t qd;
	double seconds;		/* repeat until this much time passed */
	bool flush;
	const char *queue;
	uint32_t timeout_ms;
};

struct slot {
	uint64_t lba;
	uint64_t t0;
	int idx;
	bool busy;
};

struct run {
	struct cfg *c;
	struct sio_nvme_ioq *q;
	struct sio_nvme_buf *buf;
	struct sio_nvme_ns ns;
	struct slot *slots;
	bool verify;		/* this pass compares what it reads */
	uint64_t *lat;
	uint64_t nlat, maxlat;
	uint64_t ios, bytes, mismatches, errors;
	uint64_t rng;
	int first_err;
	uint16_t first_status;
	struct sio_fabric *f;
	uint64_t deadline;	/* --time: the run ends here, mid-pass too (0: none) */
	uint64_t next_check;	/* when to ask again whether the fabric still exists */
};

static volatile sig_atomic_t stop;

static void on_signal(int sig)
{
	(void)sig;
	stop = 1;
}

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static uint64_t mix(uint64_t x)
{
	x ^= x >> 33;
	x *= 0xff51afd7ed558ccdull;
	x ^= x >> 33;
	x *= 0xc4ceb9fe1a85ec53ull;
	x ^= x >> 33;
	return x;
}

/* Expected content of one block: a function of (seed, LBA, word). */
static void fill_block(const struct cfg *c, uint64_t lba, uint64_t *p, uint32_t words)
{
	uint64_t base;
	uint32_t i;

	if (c->pat == PAT_ZERO) {
		memset(p, 0, words * 8ull);
		return;
	}
	if (c->pat == PAT_BYTE) {
		memset(p, c->byte, words * 8ull);
		return;
	}
	base = mix(c->seed * 0x9e3779b97f4a7c15ull ^ lba);
	p[0] = lba;		/* readable when debugging a dump */
	for (i = 1; i < words; i++)
		p[i] = base + i * 0x9e3779b97f4a7c15ull;
}

static uint64_t check_blocks(const struct run *r, uint64_t lba, const uint8_t *data,
			     uint32_t nblk)
{
	uint32_t words = r->ns.lba_size / 8, b;
	uint64_t exp[8192], bad = 0;

	for (b = 0; b < nblk; b++) {
		fill_block(r->c, lba + b, exp, words);
		if (memcmp(exp, data + (size_t)b * r->ns.lba_size, r->ns.lba_size))
			bad++;
	}
	return bad;
}

static void io_done(void *arg, int err, uint16_t status);

struct cbarg {
	struct run *r;
	int idx;
};

static struct cbarg *cbargs;

static uint64_t next_lba(struct run *r, uint64_t n)
{
	uint64_t units = r->c->count / r->c->io_blocks;

	if (r->c->random) {
		r->rng = mix(r->rng + 0x9e3779b97f4a7c15ull);
		return r->c->lba + (r->rng % units) * r->c->io_blocks;
	}
	return r->c->lba + (n % units) * r->c->io_blocks;
}

static int issue(struct run *r, int idx, uint64_t lba, bool write)
{
	struct slot *s = &r->slots[idx];
	uint64_t off = (uint64_t)idx * r->c->io_blocks * r->ns.lba_size;
	uint32_t b;
	int ret;

	if (write)
		for (b = 0; b < r->c->io_blocks; b++)
			fill_block(r->c, lba + b,
				   (uint64_t *)((uint8_t *)r->buf->va + off +
						(uint64_t)b * r->ns.lba_size),
				   r->ns.lba_size / 8);
	s->lba = lba;
	s->busy = true;
	s->t0 = now_ns();
	ret = write ? sio_nvme_ioq_write(r->q, r->c->nsid, lba, r->c->io_blocks, r->buf, off,
					  io_done, &cbargs[idx]) :
		      sio_nvme_ioq_read(r->q, r->c->nsid, lba, r->c->io_blocks, r->buf, off,
					 io_done, &cbargs[idx]);
	if (ret)
		s->busy = false;
	return ret;
}

static void io_done(void *arg, int err, uint16_t status)
{
	struct cbarg *a = arg;
	struct run *r = a->r;
	struct slot *s = &r->slots[a->idx];
	uint64_t t = now_ns() - s->t0;

	s->busy = false;
	if (r->nlat < r->maxlat)
		r->lat[r->nlat++] = t;
	r->ios++;
	r->bytes += (uint64_t)r->c->io_blocks * r->ns.lba_size;
	if (err) {
		if (!r->errors) {
			r->first_err = err;
			r->first_status = status;
		}
		r->errors++;
		return;
	}
	if (r->verify)
		r->mismatches += check_blocks(r, s->lba,
					      (uint8_t *)r->buf->va + (uint64_t)a->idx *
					      r->c->io_blocks * r->ns.lba_size,
					      r->c->io_blocks);
}

/* One pass: @n I/Os (writes or reads) at depth qd. */
static int pass(struct run *r, uint64_t n, bool write, uint64_t seed)
{
	uint64_t issued = 0;
	uint32_t i, idle = 0;
	int ret;

	r->rng = seed;
	while (issued < n || sio_nvme_ioq_inflight(r->q)) {
		uint64_t now = now_ns();

		if (r->deadline && now >= r->deadline)
			stop = 1;	/* issue no more; what is in flight completes */
		if (now >= r->next_check) {
			r->next_check = now + 100000000ull;
			if (sio_fabric_alive(r->f)) {
				fprintf(stderr, "nvme-client: %s; stopping\n", sio_errmsg());
				return -ESHUTDOWN;
			}
		}
		for (i = 0; i < r->c->qd && issued < n && !stop; i++) {
			if (r->slots[i].busy)
				continue;
			uint64_t rng = r->rng;
			ret = issue(r, (int)i, next_lba(r, issued), write);
			if (ret == -EAGAIN) {
				/* the queue is full: this offset goes again, so the
				 * read pass replays exactly the offsets written */
				r->rng = rng;
				break;
			}
			if (ret) {
				fprintf(stderr, "nvme-client: cannot submit: %s\n",
					sio_errmsg());
				return ret;
			}
			issued++;
		}
		if (stop && !sio_nvme_ioq_inflight(r->q))
			break;
		ret = sio_nvme_ioq_poll(r->q, 0);
		if (ret < 0) {
			fprintf(stderr, "nvme-client: %s\n", sio_errmsg());
			return ret;
		}
		if (ret == 0) {
			/* Back off so the controller and other clients get the CPU. */
			if (++idle > 64)
				sched_yield();
		} else {
			idle = 0;
		}
	}
	return 0;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

static double pct(const uint64_t *v, uint64_t n, double p)
{
	uint64_t i;

	if (!n)
		return 0;
	i = (uint64_t)(p / 100.0 * (double)(n - 1) + 0.5);
	return (double)v[i] / 1000.0;
}

static void usage(FILE *o)
{
	fprintf(o, "usage: nvme-client [options]\n"
		"Write, read and verify blocks of a shared NVMe controller through a\n"
		"queue pair of our own. Exit status is non-zero on any mismatch or error.\n\n"
		TOOL_COMMON_HELP
		"  --nsid N        namespace (default 1)\n"
		"  --op OP         write | read | verify | write-verify (default)\n"
		"  --lba N         first block of the range (default 0)\n"
		"  --count N       blocks in the range (default 8192)\n"
		"  --bs N          blocks per I/O (default 8)\n"
		"  --ios N         I/Os per pass (default: cover the range once)\n"
		"  --random        random block offsets within the range\n"
		"  --qd N          I/Os in flight, 1..4095 (default 1)\n"
		"  --queue SPEC    queue placement: location=local|lender|device|hint,\n"
		"                  cq=local|lender|hint, depth=N, prio=0..3, multipath\n"
		"                  (a backup queue pair through adapter 1, for failover),\n"
		"                  dptr=auto|prp|sgl (data pointers), dbbuf=auto|on|off\n"
		"                  (shadow doorbells)\n"
		"  --pattern P     lba (default; content from seed and block) | zero | 0xNN\n"
		"  --seed N        pattern seed (default 1)\n"
		"  --time SEC      repeat passes for this long\n"
		"  --flush         flush after writing\n"
		"  --timeout MS    fail an I/O that makes no progress this long\n"
		"  --help\n");
}

int main(int argc, char **argv)
{
	static const struct option lo[] = {
		TOOL_COMMON_LONGOPTS,
		{ "nsid", required_argument, NULL, 'n' },
		{ "op", required_argument, NULL, 'o' },
		{ "lba", required_argument, NULL, 'l' },
		{ "count", required_argument, NULL, 'c' },
		{ "bs", required_argument, NULL, 'b' },
		{ "ios", required_argument, NULL, 'i' },
		{ "random", no_argument, NULL, 'R' },
		{ "qd", required_argument, NULL, 'd' },
		{ "queue", required_argument, NULL, 'q' },
		{ "pattern", required_argument, NULL, 'p' },
		{ "seed", required_argument, NULL, 's' },
		{ "time", required_argument, NULL, 't' },
		{ "flush", no_argument, NULL, 'f' },
		{ "timeout", required_argument, NULL, 'T' },
		{ "help", no_argument, NULL, 'h' },
		{ 0 }
	};
	struct cfg c = { .nsid = 1, .op = OP_WRITE_VERIFY, .pat = PAT_LBA, .seed = 1,
			 .lba = 0, .count = 8192, .io_blocks = 8, .qd = 1 };
	struct tool_common t;
	struct sio_fabric *f = NULL;
	struct sio_nvme_client *cl = NULL;
	struct sio_nvme_qspec spec;
	struct sio_nvme_ioq_info qi;
	struct run r;
	struct sigaction sa;
	uint64_t v, per_pass, t0, elapsed, passes = 0;
	double secs, mibs;
	int ch, ret, rc = 1;
	uint32_t i;

	memset(&r, 0, sizeof(r));
	tool_init(&t, "nvme-client");
	while ((ch = tool_getopt(&t, argc, argv, lo)) != -1) {
		if (ch == TOOL_OPT_BAD)
			return 2;
		switch (ch) {
		case 'n': if (tool_u64(&t, "--nsid", optarg, 1, UINT32_MAX, &v)) return 2; c.nsid = (uint32_t)v; break;
		case 'o':
			if (!strcmp(optarg, "write")) c.op = OP_WRITE;
			else if (!strcmp(optarg, "read")) c.op = OP_READ;
			else if (!strcmp(optarg, "verify")) c.op = OP_VERIFY;
			else if (!strcmp(optarg, "write-verify")) c.op = OP_WRITE_VERIFY;
			else goto bad;
			break;
		case 'l': if (tool_u64(&t, "--lba", optarg, 0, UINT64_MAX, &c.lba)) return 2; break;
		case 'c': if (tool_u64(&t, "--count", optarg, 1, UINT64_MAX, &c.count)) return 2; break;
		case 'b': if (tool_u64(&t, "--bs", optarg, 1, 65536, &v)) return 2; c.io_blocks = (uint32_t)v; break;
		case 'i': if (tool_u64(&t, "--ios", optarg, 0, UINT64_MAX, &c.ios)) return 2; break;
		case 'R': c.random = true; break;
		case 'd': if (tool_u64(&t, "--qd", optarg, 1, SIO_NVME_QUEUE_MAX_SIZE - 1, &v)) return 2; c.qd = (uint32_t)v; break;
		case 'q': c.queue = optarg; break;
		case 'p':
			if (!strcmp(optarg, "lba")) c.pat = PAT_LBA;
			else if (!strcmp(optarg, "zero")) c.pat = PAT_ZERO;
			else if (!tool_u64(&t, "--pattern", optarg, 0, 255, &v)) { c.pat = PAT_BYTE; c.byte = (uint8_t)v; }
			else return 2;
			break;
		case 's': if (tool_u64(&t, "--seed", optarg, 0, UINT64_MAX, &c.seed)) return 2; break;
		case 't': if (tool_double(&t, "--time", optarg, 0.001, 31536000.0, &c.seconds)) return 2; break;
		case 'f': c.flush = true; break;
		case 'T': if (tool_u64(&t, "--timeout", optarg, 1, 3600000, &v)) return 2; c.timeout_ms = (uint32_t)v; break;
		case 'h': usage(stdout); return 0;
		default: usage(stderr); return 2;
		}
		continue;
bad:
		fprintf(stderr, "nvme-client: --op: '%s' is not write, read, verify or write-verify\n", optarg);
		return 2;
	}
	if (c.count < c.io_blocks) {
		fprintf(stderr, "nvme-client: --count %llu is smaller than --bs %u\n",
			(unsigned long long)c.count, c.io_blocks);
		return 2;
	}
	if (sio_nvme_qspec_parse(c.queue, &spec)) {
		fprintf(stderr, "nvme-client: %s\n", sio_errmsg());
		return 2;
	}
	if (!spec.depth)
		spec.depth = c.qd + 1 > 32 ? c.qd + 1 : 32;
	/* Short sleeps in back-off should be short. */
	prctl(PR_SET_TIMERSLACK, 1000UL, 0, 0, 0);
	if (tool_open(&t, &f))
		return 1;
	ret = sio_nvme_client_open(f, t.device, &cl);
	if (ret) {
		fprintf(stderr, "nvme-client: %s\n", sio_errmsg());
		goto out;
	}
	if (c.timeout_ms)
		sio_nvme_client_set_timeout(cl, c.timeout_ms);
	ret = sio_nvme_client_ns(cl, c.nsid, &r.ns);
	if (ret) {
		fprintf(stderr, "nvme-client: %s\n", sio_errmsg());
		goto out;
	}
	if (c.lba >= r.ns.nsze || c.count > r.ns.nsze - c.lba) {
		fprintf(stderr, "nvme-client: blocks %llu..%llu are outside namespace %u "
			"(%llu blocks)\n", (unsigned long long)c.lba,
			(unsigned long long)(c.lba + c.count - 1), c.nsid,
			(unsigned long long)r.ns.nsze);
		goto out;
	}
	if (r.ns.lba_size > 65536) {
		fprintf(stderr, "nvme-client: block size %u not supported\n", r.ns.lba_size);
		goto out;
	}
	ret = sio_nvme_ioq_create(cl, &spec, &r.q);
	if (ret) {
		fprintf(stderr, "nvme-client: %s\n", sio_errmsg());
		goto out;
	}
	sio_nvme_ioq_info(r.q, &qi);
	if (c.qd > qi.max_inflight)
		c.qd = qi.max_inflight;
	ret = sio_nvme_buf_alloc(cl, (uint64_t)c.qd * c.io_blocks * r.ns.lba_size, &r.buf);
	if (ret) {
		fprintf(stderr, "nvme-client: %s\n", sio_errmsg());
		goto out;
	}
	r.c = &c;
	r.slots = calloc(c.qd, sizeof(*r.slots));
	cbargs = calloc(c.qd, sizeof(*cbargs));
	per_pass = c.ios ? c.ios : c.count / c.io_blocks;
	r.maxlat = per_pass * (c.op == OP_WRITE_VERIFY ? 2 : 1);
	if (c.seconds > 0 || r.maxlat > (1u << 22))
		r.maxlat = 1u << 22;
	r.lat = malloc(r.maxlat * sizeof(uint64_t));
	if (!r.slots || !cbargs || !r.lat) {
		fprintf(stderr, "nvme-client: out of memory\n");
		goto out;
	}
	for (i = 0; i < c.qd; i++) {
		cbargs[i].r = &r;
		cbargs[i].idx = (int)i;
	}
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_signal;
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);

	t0 = now_ns();
	r.f = f;
	if (c.seconds > 0)
		r.deadline = t0 + (uint64_t)(c.seconds * 1e9);
	do {
		uint64_t seed = c.seed + passes;

		if (c.op == OP_WRITE || c.op == OP_WRITE_VERIFY) {
			r.verify = false;
			ret = pass(&r, per_pass, true, seed);
			if (!ret && c.flush)
				ret = sio_nvme_flush(r.q, c.nsid);
			if (ret)
				break;
		}
		if (c.op != OP_WRITE) {
			r.verify = c.op != OP_READ;
			ret = pass(&r, per_pass, false, seed);
			if (ret)
				break;
		}
		passes++;
	} while (!stop && c.seconds > 0 && (double)(now_ns() - t0) / 1e9 < c.seconds);
	if (ret == -ESHUTDOWN)
		return 1;	/* the fabric is gone: nothing to hand back, no one to wait for */
	elapsed = now_ns() - t0;
	if (ret && !r.errors) {
		r.errors++;
		r.first_err = ret;
	}

	sio_nvme_ioq_info(r.q, &qi);	/* what the run did: doorbells, data pointers */
	qsort(r.lat, r.nlat, sizeof(uint64_t), cmp_u64);
	secs = (double)elapsed / 1e9;
	mibs = secs > 0 ? (double)r.bytes / 1048576.0 / secs : 0;
	if (t.json) {
		printf("{\"node\": %d, \"device\": %u, \"qid\": %u, \"sq\": \"%s\", \"cq\": "
		       "\"%s\", \"depth\": %u, \"qd\": %u, \"nsid\": %u, \"ios\": %llu, "
		       "\"bytes\": %llu, \"seconds\": %.3f, \"mib_s\": %.2f, \"iops\": %.0f, "
		       "\"lat_us\": {\"p50\": %.2f, \"p99\": %.2f, \"p99.9\": %.2f, "
		       "\"max\": %.2f}, \"mismatches\": %llu, \"errors\": %llu}\n",
		       t.node, sio_device_id(sio_nvme_client_device(cl)), qi.qid,
		       sio_placement_name(qi.sq_place), sio_placement_name(qi.cq_place),
		       qi.depth, c.qd, c.nsid, (unsigned long long)r.ios,
		       (unsigned long long)r.bytes, secs, mibs, secs > 0 ? r.ios / secs : 0,
		       pct(r.lat, r.nlat, 50), pct(r.lat, r.nlat, 99), pct(r.lat, r.nlat, 99.9),
		       r.nlat ? r.lat[r.nlat - 1] / 1000.0 : 0,
		       (unsigned long long)r.mismatches, (unsigned long long)r.errors);
	} else {
		printf("node %d  queue %u (sq %s, cq %s, depth %u)  qd %u  nsid %u\n", t.node,
		       qi.qid, sio_placement_name(qi.sq_place), sio_placement_name(qi.cq_place),
		       qi.depth, c.qd, c.nsid);
		printf("  %llu I/Os, %.1f MiB in %.3f s: %.1f MiB/s, %.0f IOPS\n",
		       (unsigned long long)r.ios, (double)r.bytes / 1048576.0, secs, mibs,
		       secs > 0 ? r.ios / secs : 0);
		printf("  latency us: p50 %.1f  p99 %.1f  p99.9 %.1f  max %.1f\n",
		       pct(r.lat, r.nlat, 50), pct(r.lat, r.nlat, 99), pct(r.lat, r.nlat, 99.9),
		       r.nlat ? r.lat[r.nlat - 1] / 1000.0 : 0);
		printf("  mismatches %llu  errors %llu\n", (unsigned long long)r.mismatches,
		       (unsigned long long)r.errors);
		printf("  doorbells: shadow %s, %llu MMIO writes (%.3f per I/O); %llu SGL commands\n",
		       qi.shadow_doorbells ? "on" : "off", (unsigned long long)qi.db_writes,
		       r.ios ? (double)qi.db_writes / (double)r.ios : 0.0,
		       (unsigned long long)qi.sgl_cmds);
	}
	if (r.errors)
		fprintf(stderr, "nvme-client: %llu I/O error(s), first: %s%s%s\n",
			(unsigned long long)r.errors, strerror(-r.first_err),
			r.first_status ? ": " : "",
			r.first_status ? sio_nvme_status_str(r.first_status) : "");
	if (r.mismatches)
		fprintf(stderr, "nvme-client: %llu block(s) read back differ from what was "
			"expected\n", (unsigned long long)r.mismatches);
	rc = r.errors || r.mismatches ? 1 : 0;
out:
	sio_nvme_buf_close(cl, r.buf);
	if (r.q)
		sio_nvme_ioq_close(r.q);
	sio_nvme_client_close(cl);
	sio_fabric_close(f);
	free(r.slots);
	free(r.lat);
	free(cbargs);
	return rc;
}
