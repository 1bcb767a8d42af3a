/* SPDX-License-Identifier: MIT */
/* Closed-loop random-read workers; see worker.h. */
#include "worker.h"

#include <errno.h>
#include <fcntl.h>
#include <liburing.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>
#include <smartio/nvme/stats.h>
#include "sched-acct.h"

#define MAX_QD		256

/* What the workers (forked processes) report: per worker a latency
 * histogram of every I/O, in constant memory whatever the run's length. */
struct shared {
	_Atomic int ready, go, err;
	struct {
		uint64_t ios, cpu_ns, idle_ns;
		uint64_t setup_ns, verified, mismatches;
		uint64_t offcpu_ns, skipped, blocked;
		uint64_t sleeps, lost;
	} w[64];
	struct hist lat[];		/* one per worker */
};

struct slot {
	uint64_t t0;
	uint64_t slba;
	volatile int st;
};

#define POISON	0xa5

/*
 * What a 4 KiB read at @slba must find: a RAM store starts zeroed (the
 * sweep only reads it), a file store holds nb_make_file()'s pattern. The
 * buffer was poisoned before the read, so data that never landed shows.
 */
static bool read_ok(const struct nb_env *e, const uint8_t *b, uint64_t slba, uint32_t lba_size)
{
	static uint8_t zero[4096], *pat;
	uint64_t off = slba * lba_size;

	if (!strncmp(e->o.backing, "ram:", 4))
		return !memcmp(b, zero, sizeof(zero));
	if (!pat) {	/* nb_make_file()'s MiB, and a page more for reads across its end */
		pat = malloc((1u << 20) + 4096);
		if (!pat)
			return false;
		for (uint32_t k = 0; k < (1u << 20) + 4096; k++)
			pat[k] = (uint8_t)((k & ((1u << 20) - 1)) * 131 + 7);
	}
	return !memcmp(b, pat + (off & ((1u << 20) - 1)), 4096);
}

struct loop {
	struct shared *sh;
	int w;
	uint64_t seed, end;
	struct hist *lat;
	double tpn;			/* TSC ticks per ns */
};

static void cpl(void *arg, int err, uint16_t status)
{
	((struct slot *)arg)->st = err ? err : 1;
	(void)status;
}

static void record(struct loop *l, uint64_t lat)
{
	hist_add(l->lat, lat);
	l->sh->w[l->w].ios++;
}

static uint64_t cpu_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* Start together: report ready, wait for go (sleeping, not spinning). */
static void barrier(struct shared *sh)
{
	atomic_fetch_add(&sh->ready, 1);
	while (!atomic_load(&sh->go))
		usleep(200);
}

/* The controller's counters of our SQ, read once at the end (the emulated
 * controller publishes them; elsewhere they stay 0). */
static void ctrl_counters(struct nb_client *cl, struct loop *l)
{
	struct sio_nvme_client_stats st[64];
	int n = sio_nvme_stats_read(cl->f, SIO_DEVICE_ANY, st, 64);

	for (int i = 0; i < n && i < 64; i++) {
		if (st[i].pid != (int)getpid())
			continue;
		for (uint32_t k = 0; k < st[i].nqueues; k++)
			if (st[i].q[k].qid == cl->qi.qid) {
				l->sh->w[l->w].skipped = st[i].q[k].ctrl_skipped;
				l->sh->w[l->w].blocked = st[i].q[k].ctrl_blocked;
			}
	}
}

/*
 * Wait for completions as the queue's mode says, until @until (ns) at most:
 * polling spins (yielding when crowded), the others sleep on the CQ's
 * interrupt or, with nothing in flight, until @until. 0, a count or -errno.
 */
static int wait_cpl(const struct nb_point_cfg *c, struct nb_client *cl, struct loop *l,
		    struct sio__sched_acct *a, uint64_t until, bool crowded, uint64_t *idle)
{
	uint64_t t = nb_tsc(), now, slept = 0;
	int rc;

	if (c->completions == SIO_NVME_CPL_POLL) {
		rc = sio_nvme_ioq_poll(cl->q, 0);
		/* A poll that found nothing is waiting on the device. Longer than
		 * 10 us means we were preempted inside it: no CPU, not counted. */
		if (rc == 0 && (t = nb_tsc() - t) < (uint64_t)(10000 * l->tpn)) {
			*idle += t;
			sio__sched_wait(a, (uint64_t)((double)t / l->tpn), 0);
		}
		if (rc == 0 && crowded)
			sched_yield();	/* more clients than cores: let the others run */
		return rc;
	}
	now = sio__now_ns();
	if (!sio_nvme_ioq_inflight(cl->q)) {	/* an open loop between I/Os: asleep */
		if (until > now) {
			struct timespec ts = { 0, (long)(until - now) };

			nanosleep(&ts, NULL);
			sio__sched_wait(a, sio__now_ns() - now, 1);
		}
		return 0;
	}
	rc = sio_nvme_ioq_reap(cl->q, 0, until > now ? (uint32_t)((until - now) / 1000) + 1 : 1,
			       &slept);
	t = sio__now_ns() - now;
	sio__sched_wait(a, t > slept ? t - slept : 0, 0);
	sio__sched_wait(a, slept, 1);
	return rc;
}

static int run_smartio(const struct nb_point_cfg *c, struct loop *l)
{
	struct sio_nvme_qspec qs = { .sq_loc = SIO_NVME_QLOC_HINT, .cq_loc = SIO_NVME_QLOC_HINT,
				     .depth = c->qd * 2 < 32 ? 32 : c->qd * 2,
				     .completions = c->completions };
	struct slot s[MAX_QD];
	struct nb_client cl;
	struct sio__sched_acct a;
	struct sio_nvme_ioq_info qi;
	uint32_t nlb;
	uint64_t nblk, c0, t, idle = 0, next = 0, until, gap = c->rate > 0 ? (uint64_t)(1e9 / c->rate) : 0;
	int rc;

	/* Decided once: sysconf(_SC_NPROCESSORS_ONLN) reads /sys on every call
	 * (three system calls, ~5 us), far too slow for the poll loop. */
	bool crowded = c->nclients > nb_ncpus();

	if (c->wrr_prios)
		qs.prio = 1 + l->w % 3;
	/* hybrid's sleeps of a few microseconds need the timer's slack (50 us
	 * by default) cut */
	if (c->completions == SIO_NVME_CPL_HYBRID)
		prctl(PR_SET_TIMERSLACK, 1000UL, 0, 0, 0);
	t = sio__now_ns();
	/* a private fabric gives each client a node; an existing one, --node */
	rc = nb_client_open(&cl, c->env, nb_env_client_node(c->env, l->w), &qs,
			    (uint64_t)c->qd * 4096);
	if (rc)
		return rc;
	if (cl.qi.completions != c->completions) {
		nb_client_close(&cl);
		return -EOPNOTSUPP;	/* a mode measured must be the mode asked */
	}
	l->sh->w[l->w].setup_ns = sio__now_ns() - t;
	nlb = 4096 / cl.ns.lba_size;
	nblk = cl.ns.nsze / nlb;
	/* a round's submissions go out with one doorbell write, at its poll */
	if ((rc = sio_nvme_ioq_hold(cl.q, true))) {
		nb_client_close(&cl);
		return rc;
	}
	barrier(l->sh);
	l->end = sio__now_ns() + (uint64_t)(c->seconds * 1e9);
	c0 = cpu_ns();
	sio__sched_start(&a, sio__now_ns());
	next = sio__now_ns();
	for (uint32_t i = 0; i < c->qd; i++)
		s[i].st = 1, s[i].t0 = 0;
	for (;;) {
		uint64_t now = sio__now_ns();
		bool more = now < l->end;

		sio__sched_tick(&a, now);
		for (uint32_t i = 0; i < c->qd; i++) {
			if (!s[i].st)
				continue;
			if (s[i].st < 0) {
				rc = s[i].st;
				goto out;
			}
			if (s[i].t0)
				record(l, now - s[i].t0);
			if (s[i].t0 && c->verify) {
				l->sh->w[l->w].verified++;
				if (!read_ok(c->env, (uint8_t *)cl.buf->va + (uint64_t)i * 4096,
					     s[i].slba, cl.ns.lba_size))
					l->sh->w[l->w].mismatches++;
			}
			s[i].t0 = 0;
			if (!more || (gap && now < next))
				continue;
			next += gap;
			s[i].st = 0;
			s[i].slba = nb_rand(&l->seed) % nblk * nlb;
			if (c->verify)
				memset((uint8_t *)cl.buf->va + (uint64_t)i * 4096, POISON, 4096);
			s[i].t0 = sio__now_ns();
			rc = sio_nvme_ioq_read(cl.q, 1, s[i].slba, nlb, cl.buf, (uint64_t)i * 4096,
					       cpl, &s[i]);
			if (rc)
				goto out;
		}
		if (!more && !sio_nvme_ioq_inflight(cl.q))
			break;
		/* wake for the next issue only with a slot to issue into */
		until = gap && next > now && sio_nvme_ioq_inflight(cl.q) < c->qd ? next :
			now + 1000000;
		rc = wait_cpl(c, &cl, l, &a, until, crowded, &idle);
		if (rc < 0)
			goto out;
	}
	rc = 0;
out:
	l->sh->w[l->w].cpu_ns = cpu_ns() - c0;
	l->sh->w[l->w].idle_ns = (uint64_t)((double)idle / l->tpn);
	sio__sched_tick(&a, sio__now_ns());
	l->sh->w[l->w].offcpu_ns = a.offcpu_ns;
	if (!sio_nvme_ioq_info(cl.q, &qi)) {
		l->sh->w[l->w].sleeps = qi.sleeps;
		l->sh->w[l->w].lost = qi.wakeups_lost;
	}
	ctrl_counters(&cl, l);
	nb_client_close(&cl);
	return rc;
}

static int run_uring(const struct nb_point_cfg *c, struct loop *l)
{
	uint64_t nblk = c->file_size / 4096, c0, t0[MAX_QD];
	struct io_uring ring;
	struct io_uring_cqe *cqe;
	unsigned inflight = 0;
	char *bufs;
	int fd, rc;

	fd = c->buffered ? -1 : open(c->file, O_RDONLY | O_DIRECT);
	if (fd < 0 && (c->buffered || errno == EINVAL))	/* tmpfs: no O_DIRECT, buffered it is */
		fd = open(c->file, O_RDONLY);
	if (fd < 0)
		return -errno;
	if (posix_memalign((void **)&bufs, 4096, (size_t)c->qd * 4096))
		return -ENOMEM;
	if ((rc = io_uring_queue_init(c->qd < 4 ? 4 : c->qd, &ring, 0)))
		return rc;
	barrier(l->sh);
	l->end = sio__now_ns() + (uint64_t)(c->seconds * 1e9);
	c0 = cpu_ns();
	for (uint32_t i = 0; i < c->qd; i++) {
		struct io_uring_sqe *sqe = io_uring_get_sqe(&ring);

		io_uring_prep_read(sqe, fd, bufs + (size_t)i * 4096, 4096,
				   nb_rand(&l->seed) % nblk * 4096);
		io_uring_sqe_set_data64(sqe, i);
		t0[i] = sio__now_ns();
		inflight++;
	}
	while (inflight) {
		rc = io_uring_submit_and_wait(&ring, 1);
		if (rc < 0)
			break;
		while (io_uring_peek_cqe(&ring, &cqe) == 0) {
			uint64_t i = io_uring_cqe_get_data64(cqe), now = sio__now_ns();

			rc = cqe->res;
			io_uring_cqe_seen(&ring, cqe);
			if (rc != 4096) {
				rc = rc < 0 ? rc : -EIO;
				goto out;
			}
			record(l, now - t0[i]);
			inflight--;
			if (now < l->end) {
				struct io_uring_sqe *sqe = io_uring_get_sqe(&ring);

				io_uring_prep_read(sqe, fd, bufs + i * 4096, 4096,
						   nb_rand(&l->seed) % nblk * 4096);
				io_uring_sqe_set_data64(sqe, i);
				t0[i] = sio__now_ns();
				inflight++;
			}
		}
	}
	rc = rc < 0 ? rc : 0;
out:
	l->sh->w[l->w].cpu_ns = cpu_ns() - c0;
	io_uring_queue_exit(&ring);
	close(fd);
	free(bufs);
	return rc;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

static void setup_stats(const struct shared *sh, int n, struct nb_point *out)
{
	uint64_t t[64];

	for (int w = 0; w < n; w++) {
		t[w] = sh->w[w].setup_ns;
		out->verified += sh->w[w].verified;
		out->mismatches += sh->w[w].mismatches;
	}
	qsort(t, (size_t)n, sizeof(t[0]), cmp_u64);
	out->setup_p50_ms = (double)t[n / 2] / 1e6;
	out->setup_max_ms = (double)t[n - 1] / 1e6;
}

int nb_run_point(const struct nb_point_cfg *c, struct nb_point *out)
{
	size_t sz;
	struct shared *sh;
	pid_t pid[64];
	uint64_t total = 0, cpu = 0, idle = 0;
	struct hist *all;
	static double tpn;
	int rc = 0, n = c->nclients;

	memset(out, 0, sizeof(*out));
	out->nclients = n;
	out->qd = c->qd;
	if (n < 1 || n > 64 || c->qd < 1 || c->qd > MAX_QD)
		return -EINVAL;
	sz = sizeof(*sh) + (size_t)(n + 1) * sizeof(struct hist);
	sh = mmap(NULL, sz, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (sh == MAP_FAILED)
		return -errno;
	for (int w = 0; w <= n; w++)	/* lat[n]: all of them, merged */
		hist_init(&sh->lat[w]);
	if (!tpn)
		tpn = nb_tsc_per_ns();
	fflush(NULL);
	for (int w = 0; w < n; w++) {
		pid[w] = fork();
		if (pid[w] == 0) {
			struct loop l = { .sh = sh, .w = w, .seed = 0x9e3779b97f4a7c15ull * (w + 1),
					  .lat = &sh->lat[w], .tpn = tpn };

			if (n == 1 && c->pin)
				nb_pin(0);
			else if (c->engine == NB_SMARTIO && c->env->o.pin &&
				 c->env->o.clients_off_ctrl)
				nb_pin_off(nb_env_ctrl_cpu(c->env));
			rc = c->engine == NB_SMARTIO ? run_smartio(c, &l) : run_uring(c, &l);
			if (rc) {
				fprintf(stderr, "bench: worker %d: %s (%s)\n", w, strerror(-rc),
					c->engine == NB_SMARTIO ? sio_errmsg() : c->file);
				atomic_store(&sh->err, rc);
				atomic_fetch_add(&sh->ready, 1);	/* never hold the others */
			}
			_exit(rc ? 1 : 0);
		}
	}
	/* Wait for every worker to be set up (bounded), then start them. */
	for (int i = 0; i < 6000 && atomic_load(&sh->ready) < n; i++)
		usleep(10000);
	atomic_store(&sh->go, 1);
	for (int w = 0; w < n; w++)
		if (pid[w] > 0)
			waitpid(pid[w], NULL, 0);
	rc = atomic_load(&sh->err);
	if (!rc) {
		all = &sh->lat[n];
		for (int w = 0; w < n; w++) {
			hist_merge(all, &sh->lat[w]);
			total += sh->w[w].ios;
			cpu += sh->w[w].cpu_ns;
			idle += sh->w[w].idle_ns < sh->w[w].cpu_ns ? sh->w[w].idle_ns : sh->w[w].cpu_ns;
			out->client_iops[w] = (double)sh->w[w].ios / c->seconds;
			out->client_offcpu[w] = (double)sh->w[w].offcpu_ns / 1e9 / c->seconds;
			out->client_skipped[w] = sh->w[w].skipped;
			out->client_blocked[w] = sh->w[w].blocked;
			out->sleeps += sh->w[w].sleeps;
			out->wakeups_lost += sh->w[w].lost;
			out->client_prio[w] = c->wrr_prios ? 1 + w % 3 : 0;
		}
		nb_stats_hist(all, &out->lat);
		setup_stats(sh, n, out);
		out->ios = total;
		out->iops = (double)total / c->seconds;
		/* The same measure for both engines: CPU time (user + system) of
		 * the client processes while they ran, from getrusage's clock. */
		out->iops_per_core = cpu ? (double)total / ((double)cpu / 1e9) : 0;
		out->iops_per_busy_core = cpu > idle ? (double)total / ((double)(cpu - idle) / 1e9) : 0;
		out->cpu_util = (double)cpu / 1e9 / c->seconds / n;
		out->cpu_per_io_ns = total ? (double)cpu / (double)total : 0;
		out->jain = nb_jain(out->client_iops, n);
	}
	out->err = rc;
	munmap(sh, sz);
	return rc;
}

int nb_make_file(const char *path, uint64_t size)
{
	static char blk[1 << 20];
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);

	if (fd < 0)
		return -errno;
	for (size_t i = 0; i < sizeof(blk); i++)
		blk[i] = (char)(i * 131 + 7);
	for (uint64_t o = 0; o < size; o += sizeof(blk))
		if (write(fd, blk, sizeof(blk)) != (ssize_t)sizeof(blk)) {
			close(fd);
			return -EIO;
		}
	fsync(fd);
	close(fd);
	return 0;
}
