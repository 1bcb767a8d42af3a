/* SPDX-License-Identifier: MIT */
/*
 * nvme-client: write, read and verify LBA ranges of a shared NVMe
 * controller through a queue pair of our own, and report what it cost:
 * writes and reads apart, latency percentiles over every I/O (log-linear
 * histograms, constant memory), progress every few seconds on long runs.
 * Exits non-zero on any mismatch or error.
 */

#include <errno.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <time.h>
#include <unistd.h>
#include <smartio/nvme.h>
#include "clock.h"
#include "hist.h"
#include "sched-acct.h"
#include "tool.h"

enum op { OP_WRITE, OP_READ, OP_VERIFY, OP_WRITE_VERIFY };
enum pat { PAT_LBA, PAT_ZERO, PAT_BYTE };
enum { DIR_WRITE, DIR_READ, NDIR };

struct cfg {
	uint32_t nsid;
	enum op op;
	enum pat pat;
	uint8_t byte;
	uint64_t seed;
	uint64_t lba, count;	/* the range */
	uint64_t bs;		/* bytes per I/O (--bs) */
	uint32_t io_blocks;	/* the same in blocks, once the namespace is known */
	uint64_t ios;		/* 0: cover the range once */
	bool random;
	uint32_t qd;
	double seconds;		/* repeat until this much time passed */
	double progress;	/* a progress line this often (s; 0: none) */
	bool flush;
	const char *queue;
	int completions;	/* SIO_NVME_CPL_*, or -1: as --queue says */
	uint32_t timeout_ms;
};

struct slot {
	uint64_t lba;
	uint64_t t0;
	int idx;
	bool busy;
};

/* What one direction (writes or reads) did. */
struct dir_stats {
	uint64_t ios, bytes, errors;
	struct hist lat;	/* ns, every I/O */
};

struct run {
	struct cfg *c;
	struct sio_nvme_ioq *q;
	struct sio_nvme_buf *buf;
	struct sio_nvme_ns ns;
	struct slot *slots;
	bool verify;		/* this pass compares what it reads */
	int dir;		/* DIR_WRITE or DIR_READ: this pass */
	struct dir_stats d[NDIR];
	uint64_t mismatches;
	uint64_t rng;
	int first_err;
	uint16_t first_status;
	struct sio_fabric *f;
	uint64_t t0;
	uint64_t deadline;	/* --time: the run ends here, mid-pass too (0: none) */
	uint64_t next_check;	/* when to ask again whether the fabric still exists */
	uint64_t next_progress;
	uint64_t next_publish;	/* latency shown beside the live counters */
	uint64_t last_ios, last_ns;	/* at the last progress line */
	/* the links between us and the lender, as last seen (1 up) */
	int link_node[2];
	int link_up[2][SIO_MAX_ADAPTERS];
	uint64_t link_downs;	/* times one of them was seen going down */
	uint64_t last_cpl;	/* when the last completion came (0: none yet) */
	bool fabric_gone;	/* the run ended with the fabric's destruction */
	struct sio__sched_acct sched;	/* off the CPU, waiting: published */
	int cpl;			/* SIO_NVME_CPL_* in force */
};

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

/*
 * What a block that differs holds, for the first few: another block's
 * content (its first word is its block number: a write that went to the
 * wrong block, or a read that got another's data), all ones (a load
 * through a dead link), zeros (never written), or none of these.
 */
static void say_mismatch(const struct run *r, uint64_t lba, const uint8_t *data)
{
	uint32_t words = r->ns.lba_size / 8, w, ones = 0, zeros = 0;
	uint64_t exp[8192], first;

	memcpy(&first, data, sizeof(first));
	for (w = 0; w < words; w++) {
		uint64_t v;

		memcpy(&v, data + (size_t)w * 8, sizeof(v));
		ones += v == ~0ull;
		zeros += !v;
	}
	if (ones == words || zeros == words) {
		fprintf(stderr, "nvme-client: block %llu differs: it holds all %s\n",
			(unsigned long long)lba, ones == words ? "ones" : "zeros");
		return;
	}
	fill_block(r->c, first, exp, words);
	fprintf(stderr, "nvme-client: block %llu differs: it holds %s%llu\n",
		(unsigned long long)lba, memcmp(exp, data, r->ns.lba_size) ?
		"unknown data, first word " : "the content of block ",
		(unsigned long long)first);
}

static uint64_t check_blocks(const struct run *r, uint64_t lba, const uint8_t *data,
			     uint32_t nblk)
{
	uint32_t words = r->ns.lba_size / 8, b;
	uint64_t exp[8192], bad = 0;

	for (b = 0; b < nblk; b++) {
		fill_block(r->c, lba + b, exp, words);
		if (memcmp(exp, data + (size_t)b * r->ns.lba_size, r->ns.lba_size)) {
			if (r->mismatches + bad < 8)
				say_mismatch(r, lba + b, data + (size_t)b * r->ns.lba_size);
			bad++;
		}
	}
	return bad;
}

static void io_done(void *arg, int err, uint16_t status);

struct cbarg {
	struct run *r;
	int idx;
};

static struct cbarg *cbargs;

static uint64_t total_ios(const struct run *r)
{
	return r->d[DIR_WRITE].ios + r->d[DIR_READ].ios;
}

/* Every --progress seconds: what was done since the last line, and in all. */
static void progress(struct run *r, uint64_t now)
{
	uint64_t ios = total_ios(r), bytes = r->d[DIR_WRITE].bytes + r->d[DIR_READ].bytes;
	double dt = (double)(now - r->last_ns) / 1e9, el = (double)(now - r->t0) / 1e9;
	char of[32] = "";	/* "5 s of 60 s" with --time, "5 s" without */

	if (r->c->seconds > 0)
		snprintf(of, sizeof(of), " of %.0f s", r->c->seconds);
	fprintf(stderr, "nvme-client: %.0f s%s: %llu I/Os, %.1f MiB; last %.1f s: %.0f IOPS, "
		"p99 %s %.1f us\n", el, of, (unsigned long long)ios,
		(double)bytes / 1048576.0, dt, dt > 0 ? (double)(ios - r->last_ios) / dt : 0.0,
		r->dir == DIR_WRITE ? "write" : "read", hist_pct(&r->d[r->dir].lat, 99) / 1000.0);
	r->last_ios = ios;
	r->last_ns = now;
	r->next_progress = now + (uint64_t)(r->c->progress * 1e9);
}

/* This pass's latency so far, for smartio top (<smartio/nvme/stats.h>). */
static void publish(struct run *r)
{
	static const uint64_t bound[SIO_NVME_LAT_BUCKETS] = SIO_NVME_LAT_BOUNDS_NS;
	const struct hist *h = &r->d[r->dir].lat;
	struct sio_nvme_lat l = {
		.ios = h->n, .p50_ns = (uint64_t)hist_pct(h, 50), .p99_ns = (uint64_t)hist_pct(h, 99),
		.p999_ns = (uint64_t)hist_pct(h, 99.9), .max_ns = h->max, .sum_ns = h->sum,
	};

	hist_cumulative(h, bound, SIO_NVME_LAT_BUCKETS, l.le);
	if (h->n)
		sio_nvme_ioq_publish_latency(r->q, &l);
	sio_nvme_ioq_publish_sched(r->q, &(struct sio_nvme_sched){ .offcpu_ns = r->sched.offcpu_ns,
								   .wait_ns = r->sched.wait_ns });
}

/* Count the links on our path (ours and the lender's adapters) that went
 * down since the last look; 100 ms apart, so a shorter flap can be missed,
 * but then its timeouts and recoveries are counted by the library. */
static void watch_links(struct run *r)
{
	for (int i = 0; i < 2; i++)
		for (int a = 0; a < SIO_MAX_ADAPTERS; a++) {
			int up = sio_link_get(r->f, r->link_node[i], a);

			if (up < 0)
				break;
			if (r->link_up[i][a] == 1 && !up)
				r->link_downs++;
			r->link_up[i][a] = up;
		}
}

/* Between polls: the deadline, the fabric's life, progress. */
static int tick(struct run *r)
{
	uint64_t now = sio__now_ns();

	sio__sched_tick(&r->sched, now);
	if (r->deadline && now >= r->deadline)
		prog_stop = 1;	/* issue no more; what is in flight completes */
	if (r->next_progress && now >= r->next_progress)
		progress(r, now);
	if (now >= r->next_publish) {
		publish(r);
		r->next_publish = now + 1000000000ull;
	}
	if (now < r->next_check)
		return 0;
	r->next_check = now + 100000000ull;
	if (sio_fabric_alive(r->f)) {
		prog_fail("%s; stopping", sio_errmsg());
		r->fabric_gone = true;
		return -ESHUTDOWN;
	}
	watch_links(r);
	return 0;
}

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
	s->t0 = sio__now_ns();
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
	uint64_t t = sio__now_ns() - s->t0;

	struct dir_stats *d = &r->d[r->dir];

	s->busy = false;
	r->last_cpl = s->t0 + t;
	hist_add(&d->lat, t);
	d->ios++;
	d->bytes += (uint64_t)r->c->io_blocks * r->ns.lba_size;
	if (err) {
		if (!r->d[DIR_WRITE].errors && !r->d[DIR_READ].errors) {
			r->first_err = err;
			r->first_status = status;
		}
		d->errors++;
		return;
	}
	if (r->verify)
		r->mismatches += check_blocks(r, s->lba,
					      (uint8_t *)r->buf->va + (uint64_t)a->idx *
					      r->c->io_blocks * r->ns.lba_size,
					      r->c->io_blocks);
}

/* The run SIGUSR1 asks about. */
static struct run *asked;

/*
 * SIGUSR1: where the run stands, on stderr, from the handler itself, so
 * that a client stuck inside a library call answers too (a watchdog's
 * question: the storm across guests asks a client that said nothing for
 * longer than its timeouts): the I/Os done, the last completion, the
 * queue's tails and heads as the client knows them and the phase of the
 * CQ entry at its head, each command in flight and its age. Diagnostics
 * only: the fields are read as they stand, snprintf into a stack buffer,
 * one write(2) a line.
 */
static void dump_state(int sig)
{
	struct run *r = asked;
	struct sio_nvme_ioq_info qi;
	uint64_t now = sio__now_ns();
	char b[512];
	int n;

	(void)sig;
	if (!r || !r->q || sio_nvme_ioq_info(r->q, &qi))
		return;
	n = snprintf(b, sizeof(b), "nvme-client: state: %s pass, %llu write(s) and %llu read(s) "
		     "done, last completion %.1f ms ago; queue %u: %u in flight, SQ tail %u "
		     "(rung %u, head %u as last reported), CQ head %u phase %u (the entry there: "
		     "%u), %u timeout(s), %u recover%s\n", r->dir == DIR_WRITE ? "write" : "read",
		     (unsigned long long)r->d[DIR_WRITE].ios, (unsigned long long)r->d[DIR_READ].ios,
		     r->last_cpl ? (double)(now - r->last_cpl) / 1e6 : -1.0, qi.qid, qi.inflight,
		     qi.sq_tail, qi.sq_rung, qi.sq_head, qi.cq_head, qi.cq_phase, qi.cq_head_phase,
		     qi.timeouts, qi.recoveries, qi.recoveries == 1 ? "y" : "ies");
	if (n > 0 && write(2, b, (size_t)n < sizeof(b) ? (size_t)n : sizeof(b) - 1) < 0)
		return;
	for (uint32_t i = 0; r->slots && i < r->c->qd; i++) {
		if (!r->slots[i].busy)
			continue;
		n = snprintf(b, sizeof(b), "nvme-client: state:   I/O %u: block %llu, in flight "
			     "%.1f ms\n", i, (unsigned long long)r->slots[i].lba,
			     (double)(now - r->slots[i].t0) / 1e6);
		if (n > 0 && write(2, b, (size_t)n < sizeof(b) ? (size_t)n : sizeof(b) - 1) < 0)
			return;
	}
}

/* One pass: @n I/Os (writes or reads) at depth qd. */
static int pass(struct run *r, uint64_t n, bool write, uint64_t seed)
{
	uint64_t issued = 0, t;
	uint32_t i, idle = 0;
	int ret;

	r->rng = seed;
	r->dir = write ? DIR_WRITE : DIR_READ;
	while (issued < n || sio_nvme_ioq_inflight(r->q)) {
		if ((ret = tick(r)))
			return ret;
		for (i = 0; i < r->c->qd && issued < n && !prog_stop; i++) {
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
				prog_fail("cannot submit: %s", sio_errmsg());
				return ret;
			}
			issued++;
		}
		if (prog_stop && !sio_nvme_ioq_inflight(r->q))
			break;
		if (r->cpl != SIO_NVME_CPL_POLL) {
			/* asleep on the interrupt, or spinning a while (adaptive) */
			uint64_t slept = 0;

			t = sio__now_ns();
			ret = sio_nvme_ioq_reap(r->q, 0, 10000, &slept);
			if (ret < 0) {
				prog_fail("%s", sio_errmsg());
				return ret;
			}
			/* the call is the wait for the first completion */
			t = sio__now_ns() - t;
			sio__sched_wait(&r->sched, t > slept ? t - slept : 0, 0);
			sio__sched_wait(&r->sched, slept, 1);
			continue;
		}
		t = sio__now_ns();
		ret = sio_nvme_ioq_poll(r->q, 0);
		if (ret < 0) {
			prog_fail("%s", sio_errmsg());
			return ret;
		}
		if (ret == 0) {
			/* waiting on the device; a poll this long was preempted */
			if ((t = sio__now_ns() - t) < 10000)
				sio__sched_wait(&r->sched, t, 0);
			/* Back off so the controller and other clients get the CPU. */
			if (++idle > 64)
				sched_yield();
		} else {
			idle = 0;
		}
	}
	return 0;
}

static void usage(FILE *o)
{
	fprintf(o, "usage: nvme-client [options]\n"
		"Write, read and verify blocks of a shared NVMe controller through a\n"
		"queue pair of our own.\n\n"
		TOOL_COMMON_HELP
		"  --nsid N          namespace (default 1)\n"
		"  --op OP           write | read | verify | write-verify (default: a write\n"
		"                    pass, then a read pass that verifies it)\n"
		"  --lba N           first block of the range (default 0)\n"
		"  --count N         blocks in the range (default 8192)\n"
		"  --bs SIZE         bytes per I/O, a whole number of blocks: 4096, 4k, 1m\n"
		"                    (default 4k; fio's bs)\n"
		"  --ios N           I/Os per pass (default: cover the range once); a\n"
		"                    write-verify run makes two passes: N writes, N reads\n"
		"  --random          random block offsets within the range\n"
		"  --qd N            I/Os in flight, 1..4095 (default 1)\n"
		"  --queue SPEC      queue placement: location=local|lender|device|hint\n"
		"                    (lender: also 'remote'; device: the controller's CMB, also\n"
		"                    'cmb'; hint: as the access hints place it, also 'auto'),\n"
		"                    cq=local|lender|hint,\n"
		"                    depth=N (at most the controller's MQES), prio=0..3, multipath\n"
		"                    (a backup queue pair through adapter 1, for failover),\n"
		"                    dptr=auto|prp|sgl (data pointers), dbbuf=auto|on|off\n"
		"                    (shadow doorbells), completions=poll|irq|adaptive|hybrid\n"
		"  --completions M   poll (spin on the CQ; the default) | irq (sleep on its\n"
		"                    interrupt) | adaptive (spin while completions come,\n"
		"                    sleep when they stop; polls where there are no interrupts)\n"
		"                    | hybrid (no interrupt: sleep for about the time half of\n"
		"                    what is in flight takes, then poll)\n"
		"  --pattern P       lba (default; content from seed and block) | zero | 0xNN\n"
		"  --seed N          pattern seed (default 1)\n"
		"  --time TIME       repeat passes for this long: 3s, 500ms, 2m (a bare number\n"
		"                    is seconds; fio's runtime)\n"
		"  --progress TIME   a progress line on stderr this often (default 5s; 0: none)\n"
		"  --flush           flush after writing\n"
		"  --timeout TIME    fail an I/O that makes no progress this long (a bare\n"
		"                    number is milliseconds)\n"

		TOOL_JSON_HELP
		PROG_HELP
		"Latency percentiles count every I/O (log-linear buckets, within 1.6 %%).\n"
		"SIGUSR1 prints where the run stands on stderr: I/Os done, the last\n"
		"completion, the queue's heads and tails, each I/O in flight and its age.\n"
		"Exit status: 0 all verified, 1 an I/O error, a mismatch or a run cut short\n"
		"by the fabric's destruction (its report is partial), 2 usage error.\n");
}

/* The write and read passes until done, stopped or out of time. */
static int run_passes(struct run *r)
{
	const struct cfg *c = r->c;
	uint64_t per_pass = c->ios ? c->ios : c->count / c->io_blocks, passes = 0;
	int ret = 0;

	r->t0 = r->last_ns = sio__now_ns();
	sio__sched_start(&r->sched, r->t0);
	if (c->seconds > 0)
		r->deadline = r->t0 + (uint64_t)(c->seconds * 1e9);
	if (c->progress > 0)
		r->next_progress = r->t0 + (uint64_t)(c->progress * 1e9);
	do {
		uint64_t seed = c->seed + passes;

		if (c->op == OP_WRITE || c->op == OP_WRITE_VERIFY) {
			r->verify = false;
			ret = pass(r, per_pass, true, seed);
			if (!ret && c->flush)
				ret = sio_nvme_flush(r->q, c->nsid);
			if (ret)
				break;
		}
		if (c->op != OP_WRITE) {
			r->verify = c->op != OP_READ;
			ret = pass(r, per_pass, false, seed);
			if (ret)
				break;
		}
		passes++;
	} while (!prog_stop && c->seconds > 0 && (double)(sio__now_ns() - r->t0) / 1e9 < c->seconds);
	return ret;
}

static struct json_object *dir_json(const struct dir_stats *d, double secs)
{
	struct json_object *o = json_object_new_object();

	pj_u64(o, "ios", d->ios);
	pj_u64(o, "bytes", d->bytes);
	pj_dbl(o, "iops", secs > 0 ? (double)d->ios / secs : 0);
	pj_dbl(o, "mib_s", secs > 0 ? (double)d->bytes / 1048576.0 / secs : 0);
	pj_u64(o, "errors", d->errors);
	json_object_object_add(o, "lat_us", hist_json(&d->lat, 1000.0));
	return o;
}

/* Links that went down: as the run watched them, or as the queue paused for
 * them (a pause holds the loop that watches, so it can miss the flap). */
static uint64_t link_downs(const struct run *r, const struct sio_nvme_ioq_info *qi)
{
	return r->link_downs > qi->link_flaps ? r->link_downs : qi->link_flaps;
}

static int report_json(const struct run *r, const struct tool_common *t,
		       const struct sio_nvme_ioq_info *qi, uint32_t device, const char *dbpath,
		       double secs)
{
	struct json_object *o = json_object_new_object(), *db;
	uint64_t ios = total_ios(r), bytes = r->d[DIR_WRITE].bytes + r->d[DIR_READ].bytes;

	pj_timestamp(o);
	pj_int(o, "node", t->node);
	pj_u64(o, "device", device);
	pj_u64(o, "qid", qi->qid);
	pj_str(o, "sq", sio_placement_name(qi->sq_place));
	pj_str(o, "cq", sio_placement_name(qi->cq_place));
	pj_u64(o, "depth", qi->depth);
	pj_u64(o, "qd", r->c->qd);
	pj_u64(o, "nsid", r->c->nsid);
	pj_u64(o, "block_size", r->ns.lba_size);
	pj_u64(o, "io_bytes", (uint64_t)r->c->io_blocks * r->ns.lba_size);
	pj_u64(o, "ios", ios);
	pj_u64(o, "bytes", bytes);
	pj_dbl(o, "seconds", secs);
	pj_dbl(o, "mib_s", secs > 0 ? (double)bytes / 1048576.0 / secs : 0);
	pj_dbl(o, "iops", secs > 0 ? (double)ios / secs : 0);
	if (r->d[DIR_WRITE].ios)
		json_object_object_add(o, "write", dir_json(&r->d[DIR_WRITE], secs));
	if (r->d[DIR_READ].ios)
		json_object_object_add(o, "read", dir_json(&r->d[DIR_READ], secs));
	pj_u64(o, "mismatches", r->mismatches);
	pj_u64(o, "errors", r->d[DIR_WRITE].errors + r->d[DIR_READ].errors);
	db = pj_obj(o, "faults");
	pj_u64(db, "link_downs", link_downs(r, qi));
	pj_u64(db, "link_flaps", qi->link_flaps);
	pj_u64(db, "paused_ns", qi->paused_ns);
	pj_u64(db, "timeouts", qi->timeouts);
	pj_u64(db, "recoveries", qi->recoveries);
	pj_u64(db, "resubmitted", qi->resubmitted);
	pj_u64(db, "failovers", qi->failovers);
	pj_bool(db, "fabric_destroyed", r->fabric_gone);
	db = pj_obj(o, "doorbells");
	pj_bool(db, "shadow", qi->shadow_doorbells);
	pj_str(db, "path", dbpath);
	pj_u64(db, "mmio_writes", qi->db_writes);
	pj_dbl(db, "per_io", ios ? (double)qi->db_writes / (double)ios : 0);
	pj_u64(o, "sgl_cmds", qi->sgl_cmds);
	db = pj_obj(o, "completions");
	pj_str(db, "mode", sio_nvme_completions_name(qi->completions));
	pj_u64(db, "sleeps", qi->sleeps);
	pj_u64(db, "woken_by_bound", qi->wakeups_lost);
	pj_u64(db, "offcpu_ns", r->sched.offcpu_ns);
	pj_u64(db, "wait_ns", r->sched.wait_ns);
	return prog_json_print(stdout, o);
}

static void report_dir(const char *what, const struct dir_stats *d, double secs)
{
	const struct hist *h = &d->lat;

	if (!d->ios)
		return;
	printf("  %-5s %llu I/Os, %.1f MiB: %.1f MiB/s, %.0f IOPS; latency us: p50 %.1f  "
	       "p99 %.1f  p99.9 %.1f  max %.1f\n", what, (unsigned long long)d->ios,
	       (double)d->bytes / 1048576.0, secs > 0 ? (double)d->bytes / 1048576.0 / secs : 0,
	       secs > 0 ? (double)d->ios / secs : 0, hist_pct(h, 50) / 1000, hist_pct(h, 99) / 1000,
	       hist_pct(h, 99.9) / 1000, (double)h->max / 1000);
}

static void report_text(const struct run *r, const struct tool_common *t,
			const struct sio_nvme_ioq_info *qi, const char *dbpath, double secs)
{
	uint64_t ios = total_ios(r), bytes = r->d[DIR_WRITE].bytes + r->d[DIR_READ].bytes;

	printf("node %d  queue %u (sq %s, cq %s, depth %u)  qd %u  nsid %u\n", t->node,
	       qi->qid, sio_placement_name(qi->sq_place), sio_placement_name(qi->cq_place),
	       qi->depth, r->c->qd, r->c->nsid);
	printf("  %llu I/Os, %.1f MiB in %.3f s: %.1f MiB/s, %.0f IOPS\n",
	       (unsigned long long)ios, (double)bytes / 1048576.0, secs,
	       secs > 0 ? (double)bytes / 1048576.0 / secs : 0, secs > 0 ? (double)ios / secs : 0);
	report_dir("write", &r->d[DIR_WRITE], secs);
	report_dir("read", &r->d[DIR_READ], secs);
	printf("  mismatches %llu  errors %llu\n", (unsigned long long)r->mismatches,
	       (unsigned long long)(r->d[DIR_WRITE].errors + r->d[DIR_READ].errors));
	if (link_downs(r, qi) || qi->timeouts || qi->recoveries || qi->resubmitted ||
	    qi->failovers)
		printf("  faults: %llu link(s) went down, %u timeout(s), %u queue recover%s, "
		       "%llu command(s) resent, %u failover(s)\n",
		       (unsigned long long)link_downs(r, qi), qi->timeouts, qi->recoveries,
		       qi->recoveries == 1 ? "y" : "ies", (unsigned long long)qi->resubmitted,
		       qi->failovers);
	if (r->fabric_gone)
		printf("  (partial: the fabric was destroyed during the run)\n");
	/* a remote client reads EventIdx only with dbbuf=on: "off" is no fault */
	printf("  doorbells: shadow %s, %llu MMIO writes (%.3f per I/O), BAR0 %s; %llu SGL commands\n",
	       qi->shadow_doorbells ? "on" : "off (dbbuf=on asks for it)",
	       (unsigned long long)qi->db_writes,
	       ios ? (double)qi->db_writes / (double)ios : 0.0, dbpath,
	       (unsigned long long)qi->sgl_cmds);
	printf("  completions: %s, %llu sleeps (%llu woken by their bound); off the CPU %.3f s, "
	       "waiting %.3f s\n", sio_nvme_completions_name(qi->completions),
	       (unsigned long long)qi->sleeps, (unsigned long long)qi->wakeups_lost,
	       (double)r->sched.offcpu_ns / 1e9, (double)r->sched.wait_ns / 1e9);
	if (qi->link_flaps)	/* ridden out: no error, but said */
		printf("  link flaps ridden out %u, paused %.1f ms in all\n", qi->link_flaps,
		       (double)qi->paused_ns / 1e6);
}

/* Open the queue pair and its buffer for @c on @cl: 0 or PROG_FAIL (said). */
static int setup(struct run *r, struct sio_nvme_client *cl, struct sio_nvme_qspec *spec)
{
	struct cfg *c = r->c;
	struct sio_nvme_ioq_info qi;

	if (sio_nvme_client_ns(cl, c->nsid, &r->ns))
		return prog_fail("%s", sio_errmsg());
	if (c->lba >= r->ns.nsze || c->count > r->ns.nsze - c->lba)
		return prog_fail("blocks %llu..%llu are outside namespace %u (%llu blocks; "
				 "--lba and --count choose the range)", (unsigned long long)c->lba,
				 (unsigned long long)(c->lba + c->count - 1), c->nsid,
				 (unsigned long long)r->ns.nsze);
	if (r->ns.lba_size > 65536)
		return prog_fail("block size %u not supported", r->ns.lba_size);
	if ((c->bs % r->ns.lba_size))
		return prog_fail("--bs %llu is not a whole number of namespace %u's %u-byte blocks "
				 "(give a multiple of %u)", (unsigned long long)c->bs, c->nsid,
				 r->ns.lba_size, r->ns.lba_size);
	c->io_blocks = (uint32_t)(c->bs / r->ns.lba_size);
	if (c->count < c->io_blocks)
		return prog_fail("--count %llu blocks is less than one I/O (--bs %llu is %u "
				 "blocks)", (unsigned long long)c->count, (unsigned long long)c->bs,
				 c->io_blocks);
	if (sio_nvme_ioq_create(cl, spec, &r->q))
		return prog_fail("%s", sio_errmsg());
	sio_nvme_ioq_info(r->q, &qi);
	if (spec->depth > qi.depth)	/* said, not silently taken */
		fprintf(stderr, "nvme-client: --queue depth=%u: the controller takes at most %u "
			"entries (CAP.MQES); the queue has %u\n", spec->depth, qi.depth, qi.depth);
	if (c->qd > qi.max_inflight)
		c->qd = qi.max_inflight;
	if (qi.completions_note[0])	/* adaptive without interrupts: polling, said */
		fprintf(stderr, "nvme-client: %s\n", qi.completions_note);
	r->cpl = qi.completions;
	if (sio_nvme_buf_alloc(cl, (uint64_t)c->qd * c->io_blocks * r->ns.lba_size, &r->buf))
		return prog_fail("%s", sio_errmsg());
	r->slots = calloc(c->qd, sizeof(*r->slots));
	cbargs = calloc(c->qd, sizeof(*cbargs));
	if (!r->slots || !cbargs)
		return prog_fail("out of memory");
	for (uint32_t i = 0; i < c->qd; i++) {
		cbargs[i].r = r;
		cbargs[i].idx = (int)i;
	}
	return 0;
}

/* What the run did, and its exit status. */
static int report(struct run *r, struct tool_common *t, struct sio_nvme_client *cl,
		  uint64_t elapsed)
{
	struct sio_nvme_ioq_info qi;
	double secs = (double)elapsed / 1e9;
	uint64_t errors = r->d[DIR_WRITE].errors + r->d[DIR_READ].errors;
	/* the registry is gone with the fabric: no path to read */
	const char *dbpath = r->fabric_gone ? "-" :
			     sio_device_bar_path(sio_nvme_client_device(cl), 0);

	sio_nvme_ioq_info(r->q, &qi);	/* what the run did: doorbells, data pointers */
	if (t->json)
		report_json(r, t, &qi, sio_device_id(sio_nvme_client_device(cl)), dbpath, secs);
	else
		report_text(r, t, &qi, dbpath, secs);
	if (errors)
		prog_fail("%llu I/O error(s), first: %s%s%s", (unsigned long long)errors,
			  strerror(-r->first_err), r->first_status ? ": " : "",
			  r->first_status ? sio_nvme_status_str(r->first_status) : "");
	if (r->mismatches)
		prog_fail("%llu block(s) read back differ from what was expected",
			  (unsigned long long)r->mismatches);
	return errors || r->mismatches || r->fabric_gone ? PROG_FAIL : PROG_OK;
}

static int run_client(struct tool_common *t, struct cfg *c, struct sio_nvme_qspec *spec)
{
	struct sio_nvme_client *cl = NULL;
	struct sio_fabric *f = NULL;
	struct run *r = calloc(1, sizeof(*r));	/* two histograms: 60 KiB */
	struct sio_device_info di;
	int ret, rc = PROG_FAIL;

	if (!r)
		return prog_fail("out of memory");
	r->c = c;
	hist_init(&r->d[DIR_WRITE].lat);
	hist_init(&r->d[DIR_READ].lat);
	/* Short sleeps in back-off should be short. */
	prctl(PR_SET_TIMERSLACK, 1000UL, 0, 0, 0);
	if (tool_open(t, &f))
		goto out;
	if (sio_nvme_client_open(f, t->device, &cl)) {
		prog_fail("%s", sio_errmsg());
		goto out;
	}
	if (c->timeout_ms)
		sio_nvme_client_set_timeout(cl, c->timeout_ms);
	if (setup(r, cl, spec))
		goto out;
	prog_catch_stop();
	asked = r;
	sigaction(SIGUSR1, &(struct sigaction){ .sa_handler = dump_state, .sa_flags = SA_RESTART },
		  NULL);
	r->f = f;
	r->link_node[0] = r->link_node[1] = t->node;
	if (!sio_device_info(sio_nvme_client_device(cl), &di))
		r->link_node[1] = di.lender;
	memset(r->link_up, 0xff, sizeof(r->link_up));
	watch_links(r);
	ret = run_passes(r);
	if (ret == -ESHUTDOWN) {
		/* the fabric is gone: its partial report, and nothing to hand
		 * back, no one to wait for */
		report(r, t, cl, sio__now_ns() - r->t0);
		free(r);
		return PROG_FAIL;
	}
	publish(r);
	if (ret && !r->d[DIR_WRITE].errors && !r->d[DIR_READ].errors) {
		r->d[r->dir].errors++;
		r->first_err = ret;
	}
	rc = report(r, t, cl, sio__now_ns() - r->t0);
out:
	sio_nvme_buf_close(cl, r->buf);
	if (r->q)
		sio_nvme_ioq_close(r->q);
	sio_nvme_client_close(cl);
	sio_fabric_close(f);
	free(r->slots);
	free(cbargs);
	free(r);
	return rc;
}

int main(int argc, char **argv)
{
	enum { O_NSID = 256, O_OP, O_LBA, O_COUNT, O_BS, O_IOS, O_RANDOM, O_QD, O_QUEUE,
	       O_PATTERN, O_SEED, O_TIME, O_PROGRESS, O_FLUSH, O_TIMEOUT, O_COMPLETIONS };
	static const struct option lo[] = {
		TOOL_COMMON_LONGOPTS,
		TOOL_JSON_LONGOPT,
		{ "nsid", required_argument, NULL, O_NSID },
		{ "op", required_argument, NULL, O_OP },
		{ "lba", required_argument, NULL, O_LBA },
		{ "count", required_argument, NULL, O_COUNT },
		{ "bs", required_argument, NULL, O_BS },
		{ "ios", required_argument, NULL, O_IOS },
		{ "random", no_argument, NULL, O_RANDOM },
		{ "qd", required_argument, NULL, O_QD },
		{ "queue", required_argument, NULL, O_QUEUE },
		{ "pattern", required_argument, NULL, O_PATTERN },
		{ "seed", required_argument, NULL, O_SEED },
		{ "time", required_argument, NULL, O_TIME },
		{ "progress", required_argument, NULL, O_PROGRESS },
		{ "flush", no_argument, NULL, O_FLUSH },
		{ "timeout", required_argument, NULL, O_TIMEOUT },
		{ "completions", required_argument, NULL, O_COMPLETIONS },
		{ 0 }
	};
	static const char *const ops[] = { "write", "read", "verify", "write-verify", NULL };
	struct cfg c = { .nsid = 1, .op = OP_WRITE_VERIFY, .pat = PAT_LBA, .seed = 1,
			 .lba = 0, .count = 8192, .bs = 4096, .qd = 1, .progress = 5,
			 .completions = -1 };
	static const char *const cpls[] = { "poll", "irq", "adaptive", "hybrid", NULL };	/* SIO_NVME_CPL_* */
	struct sio_nvme_qspec spec;
	struct tool_common t;
	int ch;

	tool_init(&t, "nvme-client", usage);
	while ((ch = tool_getopt(&t, argc, argv, "h", lo)) != -1) {
		switch (ch) {
		case O_NSID: c.nsid = prog_u32("--nsid", optarg, 1, UINT32_MAX); break;
		case O_OP: c.op = (enum op)prog_choice("--op", optarg, ops); break;
		case O_LBA: c.lba = prog_u64("--lba", optarg, 0, UINT64_MAX); break;
		case O_COUNT: c.count = prog_u64("--count", optarg, 1, UINT64_MAX); break;
		case O_BS:
			c.bs = prog_bytes("--bs", optarg, 512, 32u << 20, 512, "blocks of 512 B");
			break;
		case O_IOS: c.ios = prog_u64("--ios", optarg, 0, UINT64_MAX); break;
		case O_RANDOM: c.random = true; break;
		case O_QD: c.qd = prog_u32("--qd", optarg, 1, SIO_NVME_QUEUE_MAX_SIZE - 1); break;
		case O_QUEUE: c.queue = optarg; break;
		case O_PATTERN:
			if (!strcmp(optarg, "lba")) {
				c.pat = PAT_LBA;
			} else if (!strcmp(optarg, "zero")) {
				c.pat = PAT_ZERO;
			} else {
				c.pat = PAT_BYTE;
				c.byte = (uint8_t)prog_u64("--pattern", optarg, 0, 255);
			}
			break;
		case O_SEED: c.seed = prog_u64("--seed", optarg, 0, UINT64_MAX); break;
		case O_TIME: c.seconds = prog_time("--time", optarg, 1, 0.001, 31536000.0); break;
		case O_PROGRESS: c.progress = prog_time("--progress", optarg, 1, 0, 86400.0); break;
		case O_FLUSH: c.flush = true; break;
		case O_TIMEOUT:
			c.timeout_ms = (uint32_t)(prog_time("--timeout", optarg, 1e-3, 1e-3, 3600) *
						  1e3 + 0.5);
			break;
		case O_COMPLETIONS: c.completions = prog_choice("--completions", optarg, cpls); break;
		}
	}
	if (sio_nvme_qspec_parse(c.queue, &spec))
		prog_usage_error("--queue: %s", sio_errmsg());
	if (c.completions >= 0)
		spec.completions = c.completions;
	if (!spec.depth)
		spec.depth = c.qd + 1 > 32 ? c.qd + 1 : 32;
	return run_client(&t, &c, &spec);
}
