/* SPDX-License-Identifier: MIT */
/*
 * Clients confined to their own doorbells: a controller whose doorbells are
 * a page apart (--dstrd 10), the manager beside it on node 0, client A in
 * this process on node 1 and client B in a forked process on node 2. B can
 * map its own doorbell pages and the register page read-only, and nothing
 * else of BAR0: not A's doorbells, not the whole BAR, not CC.
 */

#include <criterion/criterion.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
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

TestSuite(confine, .fini = down, .timeout = 120);

static uint64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

static uint64_t db_off(uint16_t qid)
{
	return sio_nvme_doorbell_offset(qid, 0, sio_nvme_db_stride(10));
}

/* Map @len bytes of BAR0 at @off through a handle of its own. */
static int map_bar0(struct sio_device *dev, uint64_t off, uint64_t len, unsigned int flags,
		    struct sio_segment **seg, void **va)
{
	int ret = sio_device_bar(dev, 0, seg);

	if (ret)
		return ret;
	ret = len ? sio_segment_map_range(*seg, -1, off, len, flags, va)
		  : sio_segment_map(*seg, va);
	if (ret) {
		sio_segment_close(*seg);
		*seg = NULL;
	}
	return ret;
}

/* Write 16 blocks at @lba with a pattern from @seed, read them back. */
static int write_verify(struct sio_nvme_ioq *q, struct sio_nvme_buf *buf, uint64_t lba,
			uint32_t seed)
{
	uint32_t *p = buf->va, i;
	int ret;

	for (i = 0; i < 16 * 512 / 4; i++)
		p[i] = seed * 2654435761u + i;
	ret = sio_nvme_write(q, 1, lba, 16, buf, 0);
	if (ret)
		return ret;
	memset(buf->va, 0, 16 * 512);
	ret = sio_nvme_read(q, 1, lba, 16, buf, 0);
	if (ret)
		return ret;
	for (i = 0; i < 16 * 512 / 4; i++)
		if (p[i] != seed * 2654435761u + i)
			return -EILSEQ;
	return 0;
}

/* What client B saw, sent to the test through a pipe. */
struct b_report {
	int open, io;			/* its own client and I/O */
	uint16_t qid;
	int map_a_db;			/* A's doorbell pages, read-write */
	int map_a_db_ro;		/* ... read-only */
	int map_whole;			/* all of BAR0 */
	int map_regs_rw;		/* the register page read-write */
	int map_regs_ro;		/* the register page read-only */
	uint32_t csts;			/* read through it */
	int store_sig;			/* signal that ended a store to CC */
	int remap_deleted;		/* its own pages after deleting its queue */
	int db_own, db_a;		/* sio_nvme_client_doorbells() for its qid, A's */
	uint64_t db_own_len;
	char msg[256];
};

static void b_note(struct b_report *r, int ret)
{
	if (ret && ret != -EACCES && !r->msg[0])
		snprintf(r->msg, sizeof(r->msg), "%s", sio_errmsg());
}

/* Client B, in a process of its own (grants are per process). */
static void client_b(uint16_t a_qid, int out_fd, int go_fd)
{
	struct b_report r = { 0 };
	struct sio_fabric *f = NULL;
	struct sio_nvme_client *cl = NULL;
	struct sio_nvme_ioq *q = NULL;
	struct sio_nvme_buf *buf = NULL;
	struct sio_segment *seg;
	struct sio_device *dev;
	volatile uint32_t *regs = NULL;
	struct sio_segment *rseg = NULL;
	void *va;
	int st;
	char c;
	pid_t g;

	r.open = sio_fabric_open(C.fabric, 2, &f);
	if (!r.open)
		r.open = sio_nvme_client_open(f, SIO_DEVICE_ANY, &cl);
	if (!r.open)
		r.open = sio_nvme_ioq_create(cl, NULL, &q);
	if (!r.open)
		r.open = sio_nvme_buf_alloc(cl, 64 << 10, &buf);
	if (r.open) {
		snprintf(r.msg, sizeof(r.msg), "%s", sio_errmsg());
		goto out;
	}
	r.io = write_verify(q, buf, 2048, 22);
	if (r.io)
		snprintf(r.msg, sizeof(r.msg), "%s", sio_errmsg());
	{
		struct sio_nvme_ioq_info qi;

		sio_nvme_ioq_info(q, &qi);
		r.qid = qi.qid;
	}
	dev = sio_nvme_client_device(cl);

	r.map_a_db = map_bar0(dev, db_off(a_qid), 8192, 0, &seg, &va);
	b_note(&r, r.map_a_db);
	sio_segment_close(seg);
	r.map_a_db_ro = map_bar0(dev, db_off(a_qid), 4096, SIO_MAP_RDONLY, &seg, &va);
	b_note(&r, r.map_a_db_ro);
	sio_segment_close(seg);
	r.map_whole = map_bar0(dev, 0, 0, 0, &seg, &va);
	b_note(&r, r.map_whole);
	sio_segment_close(seg);
	r.map_regs_rw = map_bar0(dev, 0, 4096, 0, &seg, &va);
	b_note(&r, r.map_regs_rw);
	sio_segment_close(seg);
	r.map_regs_ro = map_bar0(dev, 0, 4096, SIO_MAP_RDONLY, &rseg, &va);
	b_note(&r, r.map_regs_ro);
	if (!r.map_regs_ro) {
		regs = va;
		r.csts = regs[NVME_REG_CSTS / 4];
		/* Clearing CC.EN would reset the controller under everyone. */
		g = fork();
		if (g == 0) {
			struct rlimit nocore = { 0, 0 };

			/* The default action, whatever the test runner set; no core. */
			setrlimit(RLIMIT_CORE, &nocore);
			signal(SIGSEGV, SIG_DFL);
			regs[NVME_REG_CC / 4] = 0;
			_exit(0);
		}
		if (g > 0 && waitpid(g, &st, 0) == g)
			r.store_sig = WIFSIGNALED(st) ? WTERMSIG(st) : 0;
		sio_segment_close(rseg);
	}

	{
		struct sio_nvme_doorbells db;

		r.db_own = sio_nvme_client_doorbells(cl, r.qid, &db);
		r.db_own_len = db.len;
		sio_nvme_client_doorbells_unmap(&db);
		r.db_a = sio_nvme_client_doorbells(cl, a_qid, &db);
		sio_nvme_client_doorbells_unmap(&db);
	}

	/* Its queue deleted, its doorbell pages are its no more. */
	sio_nvme_ioq_close(q);
	q = NULL;
	r.remap_deleted = map_bar0(dev, db_off(r.qid), 8192, 0, &seg, &va);
	b_note(&r, r.remap_deleted);
	sio_segment_close(seg);
out:
	if (write(out_fd, &r, sizeof(r)) != (ssize_t)sizeof(r))
		_exit(2);
	/* Stay alive (holding the mailbox slot) until the test is done. */
	if (read(go_fd, &c, 1) < 0)
		c = 0;
	if (cl) {
		sio_nvme_buf_close(cl, buf);
		sio_nvme_ioq_close(q);
		sio_nvme_client_close(cl);
	}
	sio_fabric_close(f);
	_exit(0);
}

Test(confine, clients_map_only_their_own_doorbells)
{
	const char *emu[] = { "--backing", "ram:8M", "--dstrd", "10", NULL };
	struct sio_nvme_ctrl_info ci;
	struct sio_nvme_ioq_info qi, qi2;
	struct sio_nvme_client *cl;
	struct sio_nvme_ioq *q, *q2;
	struct sio_nvme_buf *buf;
	struct sio_fabric *f, *f0;
	struct sio_segment *seg;
	struct b_report r;
	int to_test[2], to_b[2], ret;
	uint64_t t0;
	void *va;
	pid_t b;

	cluster_up(&C, 3, 32, emu);
	cr_assert_eq(sio_fabric_open(C.fabric, 1, &f), 0, "%s", sio_errmsg());
	cr_assert_eq(sio_nvme_client_open(f, SIO_DEVICE_ANY, &cl), 0, "%s", sio_errmsg());
	sio_nvme_client_info(cl, &ci);
	cr_assert_eq(ci.dstrd, 10, "the controller reports DSTRD %u", ci.dstrd);
	cr_assert_eq(sio_nvme_ioq_create(cl, NULL, &q), 0, "%s", sio_errmsg());
	cr_assert_eq(sio_nvme_buf_alloc(cl, 64 << 10, &buf), 0, "%s", sio_errmsg());
	sio_nvme_ioq_info(q, &qi);
	cr_assert_eq(write_verify(q, buf, 100, 11), 0, "A: %s", sio_errmsg());

	/* This process holds A's grant, nothing more. */
	ret = map_bar0(sio_nvme_client_device(cl), 0, 0, 0, &seg, &va);
	cr_expect_eq(ret, -EACCES, "A mapped the whole BAR0: %d", ret);
	cr_expect(ret != -EACCES || strstr(sio_errmsg(), "restricted"), "%s", sio_errmsg());
	sio_segment_close(seg);

	cr_assert_eq(pipe(to_test), 0);
	cr_assert_eq(pipe(to_b), 0);
	b = fork();
	cr_assert_geq(b, 0);
	if (b == 0) {
		close(to_test[0]);
		close(to_b[1]);
		client_b(qi.qid, to_test[1], to_b[0]);
	}
	close(to_test[1]);
	close(to_b[0]);
	cr_assert_eq(read(to_test[0], &r, sizeof(r)), (ssize_t)sizeof(r), "B died");
	close(to_test[0]);

	cr_expect_eq(r.open, 0, "B: %s", r.msg);
	cr_expect_eq(r.io, 0, "B's own I/O: %d %s", r.io, r.msg);
	cr_expect_neq(r.qid, qi.qid, "B got A's queue");
	cr_expect_eq(r.map_a_db, -EACCES, "B mapped A's doorbells: %d %s", r.map_a_db, r.msg);
	cr_expect_eq(r.map_a_db_ro, -EACCES, "B mapped A's doorbells read-only: %d",
		     r.map_a_db_ro);
	cr_expect_eq(r.map_whole, -EACCES, "B mapped the whole BAR0: %d", r.map_whole);
	cr_expect_eq(r.map_regs_rw, -EACCES, "B mapped the registers writable: %d",
		     r.map_regs_rw);
	cr_expect_eq(r.map_regs_ro, 0, "B cannot read the registers: %d %s", r.map_regs_ro,
		     r.msg);
	cr_expect(NVME_CSTS_RDY(r.csts), "CSTS read by B: 0x%x", r.csts);
	cr_expect_eq(r.store_sig, SIGSEGV, "a store to CC ended with signal %d", r.store_sig);
	cr_expect_eq(r.db_own, 0, "B cannot map its own doorbells: %d", r.db_own);
	cr_expect_eq(r.db_own_len, 8192, "B's doorbell mapping is %llu bytes",
		     (unsigned long long)r.db_own_len);
	cr_expect_eq(r.db_a, -EACCES, "B mapped A's doorbells by queue id: %d", r.db_a);
	cr_expect_eq(r.remap_deleted, -EACCES, "B mapped its deleted queue's doorbells: %d",
		     r.remap_deleted);

	/* While B lives, its old queue id (whose pages it may still have
	 * mapped) goes to no one else. */
	cr_assert_eq(sio_nvme_ioq_create(cl, NULL, &q2), 0, "%s", sio_errmsg());
	sio_nvme_ioq_info(q2, &qi2);
	cr_expect_neq(qi2.qid, r.qid, "A got queue %u, whose doorbells B had", qi2.qid);
	cr_expect_eq(write_verify(q2, buf, 300, 33), 0, "A's second queue: %s",
		     sio_errmsg());
	sio_nvme_ioq_close(q2);
	cr_assert_eq(write(to_b[1], "x", 1), 1);
	close(to_b[1]);
	cr_expect_eq(cluster_wait(b, 10000), 0, "B did not exit cleanly");

	/* The controller was not reset under A: its queue still works, and
	 * what it wrote is there. */
	cr_expect_eq(write_verify(q, buf, 100, 11), 0, "A after B: %s", sio_errmsg());

	/* The manager's borrow gone, so is the restriction. */
	kill(C.mgr, SIGKILL);
	cluster_wait(C.mgr, 2000);
	C.mgr = 0;
	cr_assert_eq(sio_fabric_open(C.fabric, 0, &f0), 0, "%s", sio_errmsg());
	t0 = now_ms();
	do {
		sio_fabric_reap(f0);
		ret = map_bar0(sio_nvme_client_device(cl), 0, 0, 0, &seg, &va);
		sio_segment_close(seg);
		if (ret != -EACCES)
			break;
		usleep(20000);
	} while (now_ms() - t0 < 5000);
	cr_expect_eq(ret, 0, "BAR0 after the manager died: %d %s", ret, sio_errmsg());
	sio_fabric_close(f0);

	sio_nvme_buf_close(cl, buf);
	sio_nvme_ioq_close(q);
	sio_nvme_client_close(cl);
	sio_fabric_close(f);
}
