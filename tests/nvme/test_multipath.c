/* SPDX-License-Identifier: MIT */
/*
 * Multipath failover: a fabric with two adapters per node (adapter 1 on a
 * separate switch tree), the emulated controller and the manager on node 0,
 * a client on node 1 with a multipath queue pair doing continuous verified
 * writes and reads while another thread flaps the primary path's links
 * (node 1 adapter 0 and node 0 adapter 0) many times.
 */

#include <criterion/criterion.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include <smartio/smartio.h>
#include <smartio/nvme/client.h>
#include "cluster.h"

static struct cluster C;

static void down(void)
{
	cluster_down(&C);
}

TestSuite(multipath, .fini = down, .timeout = 180);

static void msleep(int ms)
{
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };

	nanosleep(&ts, NULL);
}

static uint64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

/* As cluster_up(), with @adapters per node and nvme-emu's @emu arguments. */
static void mp_cluster_up_emu(int adapters, const char *const *emu)
{
	struct sio_fabric_config cfg;

	memset(&C, 0, sizeof(C));
	snprintf(C.fabric, sizeof(C.fabric), "mpath-%d", (int)getpid());
	snprintf(C.dir, sizeof(C.dir), "/tmp/mpath-%d", (int)getpid());
	mkdir(C.dir, 0700);
	memset(&cfg, 0, sizeof(cfg));
	cfg.nodes = 2;
	cfg.topology = SIO_TOPO_SWITCH;
	cfg.adapters = adapters;
	sio_fabric_destroy(C.fabric);
	cr_assert_eq(sio_fabric_create(C.fabric, &cfg), 0, "fabric: %s", sio_errmsg());
	cluster_start_emu(&C, emu);
	cluster_start_mgr(&C);
}

static void mp_cluster_up(int adapters)
{
	const char *emu[] = { "--backing", "ram:16M", NULL };

	mp_cluster_up_emu(adapters, emu);
}

Test(multipath, refused_without_a_second_adapter_and_bad_specs)
{
	struct sio_nvme_qspec spec;
	struct sio_nvme_client *cl;
	struct sio_nvme_ioq *q = NULL;
	struct sio_fabric *f;

	cr_expect_eq(sio_nvme_qspec_parse("multipath=2", &spec), -EINVAL);
	cr_expect(strstr(sio_errmsg(), "multipath"), "%s", sio_errmsg());
	cr_assert_eq(sio_nvme_qspec_parse("location=local,multipath", &spec), 0);
	cr_expect(spec.multipath);
	cr_assert_eq(sio_nvme_qspec_parse("multipath=0", &spec), 0);
	cr_expect(!spec.multipath);

	mp_cluster_up(1);
	cr_assert_eq(sio_fabric_open(C.fabric, 1, &f), 0, "%s", sio_errmsg());
	cr_assert_eq(sio_nvme_client_open(f, SIO_DEVICE_ANY, &cl), 0, "%s", sio_errmsg());
	cr_assert_eq(sio_nvme_qspec_parse("multipath", &spec), 0);
	cr_expect_eq(sio_nvme_ioq_create(cl, &spec, &q), -EINVAL);
	cr_expect(strstr(sio_errmsg(), "two adapters"), "%s", sio_errmsg());
	cr_expect_null(q);
	sio_nvme_client_close(cl);
	sio_fabric_close(f);
}

/*
 * A controller whose doorbells are a page apart (DSTRD 10: the manager
 * confines BAR0): the backup's register page is mapped through adapter 1
 * read-only, as the primary's is, and its doorbell pages granted apart.
 */
Test(multipath, a_confined_controller_gets_a_backup_queue_pair)
{
	const char *emu[] = { "--backing", "ram:16M", "--dstrd", "10", NULL };
	struct sio_nvme_qspec spec;
	struct sio_nvme_ioq_info qi;
	struct sio_nvme_ctrl_info ci;
	struct sio_nvme_client *cl;
	struct sio_nvme_ioq *q;
	struct sio_fabric *f;

	mp_cluster_up_emu(2, emu);
	cr_assert_eq(sio_fabric_open(C.fabric, 1, &f), 0, "%s", sio_errmsg());
	cr_assert_eq(sio_nvme_client_open(f, SIO_DEVICE_ANY, &cl), 0, "%s", sio_errmsg());
	cr_assert_eq(sio_nvme_client_info(cl, &ci), 0);
	cr_assert_eq(ci.dstrd, 10, "the controller reports DSTRD %u", ci.dstrd);
	cr_assert_eq(sio_nvme_qspec_parse("multipath", &spec), 0);
	cr_assert_eq(sio_nvme_ioq_create(cl, &spec, &q), 0, "%s", sio_errmsg());
	sio_nvme_ioq_info(q, &qi);
	cr_expect(qi.multipath);
	cr_expect_neq(qi.backup_qid, 0, "no backup queue pair");
	sio_nvme_ioq_close(q);
	sio_nvme_client_close(cl);
	sio_fabric_close(f);
}

#define QD	8
#define NLB	8		/* 4 KiB of 512-byte blocks */
#define REGIONS	256
#define FLAPS	20

struct slot {
	int busy;		/* a command of this slot is in flight */
	int ready;		/* completed, next step not yet submitted */
	int writing;		/* the step submitted last is a write */
	int retry;		/* it met -EAGAIN: submit it again */
	uint32_t region;
	uint32_t seed;
	int err;
};

static struct slot slots[QD];
static uint32_t expect[REGIONS];	/* seed last written, 0: never */
static uint64_t ops, dups;

static void on_done(void *arg, int err, uint16_t status)
{
	struct slot *s = arg;

	(void)status;
	if (!s->busy) {
		dups++;
		return;
	}
	s->busy = 0;
	s->ready = 1;
	s->err = err;
	ops++;
}

static void pattern(uint32_t *p, uint32_t region, uint32_t seed)
{
	uint32_t i;

	for (i = 0; i < NLB * 512 / 4; i++)
		p[i] = (seed * 2654435761u) ^ (region << 20) ^ i;
}

static uint32_t bad_words(const uint32_t *p, uint32_t region, uint32_t seed)
{
	uint32_t i, bad = 0;

	for (i = 0; i < NLB * 512 / 4; i++)
		bad += p[i] != ((seed * 2654435761u) ^ (region << 20) ^ i);
	return bad;
}

struct flapper {
	const char *fabric;
	volatile int done;
	int flaps;
	int err;
};

/* Take the primary path's links down and up, alternating the client's end
 * (node 1 adapter 0) and the lender's end (node 0 adapter 0). */
static void *flap(void *arg)
{
	struct flapper *fl = arg;
	struct sio_fabric *f;
	unsigned int seed = 12345;
	int i, node;

	if (sio_fabric_open(fl->fabric, 0, &f)) {
		fl->err = 1;
		fl->done = 1;
		return NULL;
	}
	msleep(200);
	for (i = 0; i < FLAPS; i++) {
		node = i & 1 ? 0 : 1;
		if (sio_link_set(f, node, 0, false))
			fl->err = 1;
		msleep(50 + (int)(rand_r(&seed) % 100));
		if (sio_link_set(f, node, 0, true))
			fl->err = 1;
		fl->flaps++;
		msleep(120 + (int)(rand_r(&seed) % 80));
	}
	sio_fabric_close(f);
	fl->done = 1;
	return NULL;
}

Test(multipath, link_flaps_during_verified_io_cost_no_errors_and_no_data)
{
	struct sio_nvme_qspec spec;
	struct sio_nvme_ioq_info qi;
	struct sio_nvme_client *cl;
	struct sio_nvme_ioq *q;
	struct sio_nvme_buf *buf;
	struct sio_fabric *f;
	struct flapper fl = { 0 };
	pthread_t th;
	uint64_t errors = 0, mismatches = 0, t_end = 0, t0;
	uint32_t next_region[QD], r, i;
	int ret, s, n;

	mp_cluster_up(2);
	cr_assert_eq(sio_fabric_open(C.fabric, 1, &f), 0, "%s", sio_errmsg());
	cr_assert_eq(sio_nvme_client_open(f, SIO_DEVICE_ANY, &cl), 0, "%s", sio_errmsg());
	cr_assert_eq(sio_nvme_qspec_parse("multipath,depth=32", &spec), 0);
	cr_assert_eq(sio_nvme_ioq_create(cl, &spec, &q), 0, "%s", sio_errmsg());
	sio_nvme_ioq_info(q, &qi);
	cr_assert(qi.multipath);
	cr_assert_eq(qi.path, 0);
	cr_assert_neq(qi.backup_qid, 0, "no backup queue pair");
	cr_assert_neq(qi.backup_qid, qi.qid);
	cr_assert_eq(sio_nvme_buf_alloc(cl, QD * NLB * 512, &buf), 0, "%s", sio_errmsg());
	cr_assert_neq(buf->bus2, 0, "the buffer has no address on the second path");

	memset(slots, 0, sizeof(slots));
	memset(expect, 0, sizeof(expect));
	ops = dups = 0;
	for (s = 0; s < QD; s++) {
		next_region[s] = (uint32_t)s;
		slots[s].ready = 1;	/* start by writing */
	}
	fl.fabric = C.fabric;
	cr_assert_eq(pthread_create(&th, NULL, flap, &fl), 0);

	/* Each slot owns regions s, s + QD, ...: write one, read it back and
	 * check it, move on. No two commands in flight touch the same blocks. */
	t0 = now_ms();
	for (;;) {
		if (fl.done && !t_end)
			t_end = now_ms() + 300;
		if (t_end && now_ms() > t_end)
			break;
		cr_assert_lt(now_ms() - t0, 120000, "the run did not end");
		for (s = 0; s < QD; s++) {
			struct slot *sl = &slots[s];
			uint32_t *p = (uint32_t *)((uint8_t *)buf->va + (size_t)s * NLB * 512);

			if (!sl->ready)
				continue;
			if (sl->err) {
				errors++;
				sl->err = 0;
			}
			if (!sl->retry && sl->writing) {
				/* The write is done: it is what a read must now see. */
				expect[sl->region] = sl->seed;
				memset(p, 0, NLB * 512);
				sl->writing = 0;
			} else if (!sl->retry) {
				if (sl->seed && bad_words(p, sl->region, expect[sl->region]))
					mismatches++;
				sl->region = next_region[s];
				next_region[s] = (next_region[s] + QD) % REGIONS;
				sl->seed = (uint32_t)(ops + 1) * 7919u + (uint32_t)s;
				pattern(p, sl->region, sl->seed);
				sl->writing = 1;
			}
			if (sl->writing)
				ret = sio_nvme_ioq_write(q, 1, (uint64_t)sl->region * NLB, NLB, buf,
							 (uint64_t)s * NLB * 512, on_done, sl);
			else
				ret = sio_nvme_ioq_read(q, 1, (uint64_t)sl->region * NLB, NLB, buf,
							(uint64_t)s * NLB * 512, on_done, sl);
			sl->retry = ret == -EAGAIN;	/* the same step again later */
			if (sl->retry)
				continue;
			cr_assert_eq(ret, 0, "submit: %d %s", ret, sio_errmsg());
			sl->ready = 0;
			sl->busy = 1;
		}
		n = sio_nvme_ioq_poll(q, 0);
		cr_assert_geq(n, 0, "poll: %d %s", n, sio_errmsg());
		if (!n)
			usleep(20);
	}
	pthread_join(th, NULL);
	cr_assert_eq(sio_nvme_ioq_wait(q), 0, "%s", sio_errmsg());
	for (s = 0; s < QD; s++) {
		if (slots[s].ready && slots[s].err)
			errors++;
		/* A write that completed as the loop ended is the region's data. */
		if (slots[s].writing && !slots[s].retry)
			expect[slots[s].region] = slots[s].seed;
	}

	sio_nvme_ioq_info(q, &qi);
	fprintf(stderr, "multipath: %d flaps, %llu I/Os, %u failovers, %u restores, "
		"%llu resubmitted, %llu stale completions ignored\n", fl.flaps,
		(unsigned long long)ops, qi.failovers, qi.restores,
		(unsigned long long)qi.resubmitted, (unsigned long long)qi.stale);
	cr_expect_eq(fl.err, 0, "link_set failed: %s", sio_errmsg());
	cr_expect_eq(fl.flaps, FLAPS);
	cr_expect_eq(errors, 0, "%llu I/O errors reached the application",
		     (unsigned long long)errors);
	cr_expect_eq(mismatches, 0, "%llu reads returned the wrong data",
		     (unsigned long long)mismatches);
	cr_expect_eq(dups, 0, "%llu completions reported twice", (unsigned long long)dups);
	/* Every flap broke the primary while I/O ran; most must have moved it. */
	cr_expect_geq(qi.failovers, FLAPS * 3 / 4, "only %u failovers for %d flaps",
		      qi.failovers, FLAPS);
	cr_expect_geq(qi.restores, FLAPS * 3 / 4, "only %u restores for %d flaps",
		      qi.restores, FLAPS);
	cr_expect_gt(qi.resubmitted, 0, "no command was ever resubmitted");
	cr_expect_eq(qi.path, 0, "the primary path was not restored at the end");
	cr_expect_gt(ops, 1000, "only %llu I/Os completed", (unsigned long long)ops);

	/* Every region as last written, read on the restored primary. */
	for (r = 0; r < REGIONS; r++) {
		if (!expect[r])
			continue;
		memset(buf->va, 0, NLB * 512);
		ret = sio_nvme_read(q, 1, (uint64_t)r * NLB, NLB, buf, 0);
		cr_expect_eq(ret, 0, "final read of region %u: %s", r, sio_errmsg());
		i = bad_words(buf->va, r, expect[r]);
		cr_expect_eq(i, 0, "region %u: %u words differ from the last write", r, i);
	}
	sio_nvme_buf_close(cl, buf);
	sio_nvme_ioq_close(q);
	sio_nvme_client_close(cl);
	sio_fabric_close(f);
}
