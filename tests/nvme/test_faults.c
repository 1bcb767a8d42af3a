/* SPDX-License-Identifier: MIT */
/*
 * Faults survived and hostile input refused: an emulated controller lent by
 * node 0, the manager beside it, clients on other nodes (in this process or
 * spawned), and things going wrong underneath them.
 */

#include <criterion/criterion.h>
#include <json-c/json.h>
#include <dirent.h>
#include <fcntl.h>
#include <ftw.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <smartio/smartio.h>
#include <smartio/nvme/client.h>
#include <smartio/nvme/manager.h>
#include <smartio/nvme/stats.h>
#include "cluster.h"
#include "mailbox.h"
#include "internal.h"
/* White-box: the forged-completion test writes into a queue pair's CQ. */
#include "client-priv.h"

static struct cluster C;

static void down(void)
{
	cluster_down(&C);
}

TestSuite(faults, .fini = down, .timeout = 150);

static uint64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

/* An in-process client on @node with one queue pair and a 64 KiB buffer. */
struct cli {
	struct sio_fabric *f;
	struct sio_nvme_client *cl;
	struct sio_nvme_ioq *q;
	struct sio_nvme_buf *buf;
};

static void cli_open(struct cli *c, int node)
{
	memset(c, 0, sizeof(*c));
	cr_assert_eq(sio_fabric_open(C.fabric, node, &c->f), 0, "%s", sio_errmsg());
	cr_assert_eq(sio_nvme_client_open(c->f, SIO_DEVICE_ANY, &c->cl), 0, "%s", sio_errmsg());
	cr_assert_eq(sio_nvme_ioq_create(c->cl, NULL, &c->q), 0, "%s", sio_errmsg());
	cr_assert_eq(sio_nvme_buf_alloc(c->cl, 64 << 10, &c->buf), 0, "%s", sio_errmsg());
}

static void cli_close(struct cli *c)
{
	if (c->cl) {
		sio_nvme_buf_close(c->cl, c->buf);
		sio_nvme_ioq_close(c->q);
		sio_nvme_client_close(c->cl);
	}
	sio_fabric_close(c->f);
	memset(c, 0, sizeof(*c));
}

/* cli_open() once a manager serves the controller again, within @ms. */
static void cli_open_served(struct cli *c, int node, int ms)
{
	uint64_t t0 = now_ms();
	int ret = -1;

	while (ret && now_ms() - t0 < (uint64_t)ms) {
		memset(c, 0, sizeof(*c));
		cr_assert_eq(sio_fabric_open(C.fabric, node, &c->f), 0, "%s", sio_errmsg());
		ret = sio_nvme_client_open(c->f, SIO_DEVICE_ANY, &c->cl);
		if (ret) {
			sio_fabric_close(c->f);
			usleep(100000);
		}
	}
	cr_assert_eq(ret, 0, "no manager served the restarted controller within %d ms: %s; "
		     "the manager said: %s", ms, sio_errmsg(),
		     cluster_output(&C, "nvme-manager", "err"));
	cr_assert_eq(sio_nvme_ioq_create(c->cl, NULL, &c->q), 0, "%s", sio_errmsg());
	cr_assert_eq(sio_nvme_buf_alloc(c->cl, 64 << 10, &c->buf), 0, "%s", sio_errmsg());
}

static void fill(struct cli *c, uint32_t seed, uint32_t bytes)
{
	uint32_t *p = c->buf->va, i;

	for (i = 0; i < bytes / 4; i++)
		p[i] = seed * 2654435761u + i;
}

static uint32_t mismatches(struct cli *c, uint32_t seed, uint32_t bytes)
{
	uint32_t *p = c->buf->va, i, bad = 0;

	for (i = 0; i < bytes / 4; i++)
		bad += p[i] != seed * 2654435761u + i;
	return bad;
}

/* Write 16 blocks of 512 bytes at @lba with @seed, flush. */
static int cli_write(struct cli *c, uint64_t lba, uint32_t seed)
{
	int ret;

	fill(c, seed, 16 * 512);
	ret = sio_nvme_write(c->q, 1, lba, 16, c->buf, 0);
	return ret ? ret : sio_nvme_flush(c->q, 1);
}

static int cli_verify(struct cli *c, uint64_t lba, uint32_t seed)
{
	int ret;

	memset(c->buf->va, 0, 16 * 512);
	ret = sio_nvme_read(c->q, 1, lba, 16, c->buf, 0);
	if (ret)
		return ret;
	return mismatches(c, seed, 16 * 512) ? -EILSEQ : 0;
}

static int windows_used(struct sio_fabric *f, int node)
{
	struct sio_node_info ni[SIO_MAX_NODES];
	int n = sio_fabric_nodes(f, ni, SIO_MAX_NODES);

	cr_assert_gt(n, node, "%s", sio_errmsg());
	return ni[node].windows_used[0];
}

/* -------------------------------------------------------------------------- */

static int bad_modes, nfiles;
static char bad_path[512];

static int check_mode(const char *path, const struct stat *st, int type, struct FTW *ftw)
{
	(void)ftw;
	nfiles += type == FTW_F;
	/* Directories 0700; regular files and event sockets 0600. */
	if ((type == FTW_D && (st->st_mode & 07777) != 0700) ||
	    ((S_ISREG(st->st_mode) || S_ISSOCK(st->st_mode)) && (st->st_mode & 07777) != 0600)) {
		bad_modes++;
		snprintf(bad_path, sizeof(bad_path), "%s (mode %o)", path,
			 st->st_mode & 07777);
	}
	return 0;
}

/* An 8 MiB file for a controller's backing store, private to this test run. */
static void make_backing(char *path, size_t len)
{
	FILE *fp;

	snprintf(path, len, "/tmp/faults-backing-%d", (int)getpid());
	fp = fopen(path, "w");
	cr_assert(fp, "cannot create %s", path);
	cr_assert_eq(ftruncate(fileno(fp), 8 << 20), 0);
	fclose(fp);
}

Test(faults, fabric_files_are_private_to_their_user)
{
	const char *emu[] = { "--backing", "ram:8M", NULL };
	struct cli c;
	char dir[512];

	cluster_up(&C, 2, 32, emu);
	cli_open(&c, 1);	/* a client's segments and windows exist too */
	cluster_dir(&C, dir, sizeof(dir));
	bad_modes = nfiles = 0;
	cr_assert_eq(nftw(dir, check_mode, 16, FTW_PHYS), 0, "cannot walk %s", dir);
	cr_expect_eq(bad_modes, 0, "%d path(s) readable by others, e.g. %s", bad_modes,
		     bad_path);
	/* The walk saw the registry and segments, not an empty folder. */
	cr_expect_geq(nfiles, 3, "only %d files under %s", nfiles, dir);
	cli_close(&c);
}

/* Raw mailbox access, as a hostile client would have it. */
struct rawmb {
	struct sio_fabric *f;
	struct sio_segment *seg;
	struct sio_nvme_mbox *mb;
	int slot;
};

static void raw_open(struct rawmb *r, int node, uint32_t dev)
{
	void *va;
	int s;

	cr_assert_eq(sio_fabric_open(C.fabric, node, &r->f), 0, "%s", sio_errmsg());
	cr_assert_eq(sio_segment_connect(r->f, 0, SIO_NVME_MBOX_SEGID(dev), &r->seg), 0, "%s",
		     sio_errmsg());
	cr_assert_eq(sio_segment_map(r->seg, &va), 0, "%s", sio_errmsg());
	r->mb = va;
	for (s = 0; s < SIO_NVME_MBOX_SLOTS; s++) {
		uint32_t exp = SIO_MBOX_FREE;

		if (__atomic_compare_exchange_n(&r->mb->slots[s].state, &exp, SIO_MBOX_IDLE,
						false, __ATOMIC_ACQ_REL, __ATOMIC_RELAXED))
			break;
	}
	cr_assert_lt(s, SIO_NVME_MBOX_SLOTS, "no free mailbox slot");
	r->slot = s;
	r->mb->slots[s].pid = getpid();
	r->mb->slots[s].node = node;
}

static int raw_call(struct rawmb *r, const struct sio_nvme_mbox_req *req,
		    struct sio_nvme_mbox_resp *resp)
{
	struct sio_nvme_mbox_slot *sl = &r->mb->slots[r->slot];
	uint64_t t0 = now_ms();

	memcpy((void *)&sl->req, req, sizeof(*req));
	__atomic_store_n(&sl->state, SIO_MBOX_REQ, __ATOMIC_RELEASE);
	__atomic_fetch_add(&r->mb->h.doorbell, 1, __ATOMIC_ACQ_REL);
	sio_segment_notify(r->seg, offsetof(struct sio_nvme_mbox_hdr, doorbell));
	while (__atomic_load_n(&sl->state, __ATOMIC_ACQUIRE) != SIO_MBOX_RESP) {
		cr_assert_lt(now_ms() - t0, 10000, "the manager did not answer");
		usleep(1000);
	}
	memcpy(resp, (const void *)&sl->resp, sizeof(*resp));
	__atomic_store_n(&sl->state, SIO_MBOX_IDLE, __ATOMIC_RELEASE);
	return resp->err;
}

static void raw_close(struct rawmb *r)
{
	struct sio_nvme_mbox_req req = { .op = SIO_MBOX_OP_BYE };
	struct sio_nvme_mbox_resp resp;

	raw_call(r, &req, &resp);
	r->mb->slots[r->slot].pid = 0;
	__atomic_store_n(&r->mb->slots[r->slot].state, SIO_MBOX_FREE, __ATOMIC_RELEASE);
	sio_segment_close(r->seg);
	sio_fabric_close(r->f);
}

/* A client opening in a thread of its own (sio_nvme_client_open()'s
 * return and message). */
struct opening {
	struct sio_fabric *f;
	struct sio_nvme_client *cl;
	int ret;
	char msg[256];
	pthread_t t;
};

static void *opening_run(void *arg)
{
	struct opening *o = arg;

	o->ret = sio_nvme_client_open(o->f, SIO_DEVICE_ANY, &o->cl);
	snprintf(o->msg, sizeof(o->msg), "%s", sio_errmsg());
	return NULL;
}

/*
 * Every mailbox slot held (by a live process of the fabric, which the
 * manager leaves be): a client joining queues for a slot rather than
 * fail, and takes one that comes free; with none coming free it fails
 * after $SMARTIO_NVME_ANSWER_MS, saying so.
 */
Test(faults, a_full_mailbox_is_queued_for)
{
	const char *emu[] = { "--backing", "ram:8M", NULL };
	struct opening o = { 0 };
	struct rawmb r;
	int s, held = 0, last = -1;

	cluster_up(&C, 4, 32, emu);
	raw_open(&r, 3, 1);
	for (s = 0; s < SIO_NVME_MBOX_SLOTS; s++) {
		uint32_t exp = SIO_MBOX_FREE;

		if (!__atomic_compare_exchange_n(&r.mb->slots[s].state, &exp, SIO_MBOX_IDLE,
						 false, __ATOMIC_ACQ_REL, __ATOMIC_RELAXED))
			continue;
		r.mb->slots[s].node = 3;
		__atomic_store_n(&r.mb->slots[s].pid, getpid(), __ATOMIC_RELEASE);
		held++;
		last = s;
	}
	cr_assert_gt(held, 0);
	cr_assert_eq(sio_fabric_open(C.fabric, 1, &o.f), 0, "%s", sio_errmsg());
	setenv("SMARTIO_NVME_ANSWER_MS", "300", 1);
	opening_run(&o);
	cr_expect_eq(o.ret, -ENOSPC, "%d %s", o.ret, o.msg);
	cr_expect(strstr(o.msg, "no slot came free within 300 ms") &&
		  strstr(o.msg, "SMARTIO_NVME_ANSWER_MS"), "%s", o.msg);
	if (!o.ret)
		sio_nvme_client_close(o.cl);
	setenv("SMARTIO_NVME_ANSWER_MS", "60000", 1);
	cr_assert_eq(pthread_create(&o.t, NULL, opening_run, &o), 0);
	usleep(1000000);
	__atomic_store_n(&r.mb->slots[last].pid, 0, __ATOMIC_RELEASE);	/* one comes free */
	__atomic_store_n(&r.mb->slots[last].state, SIO_MBOX_FREE, __ATOMIC_RELEASE);
	pthread_join(o.t, NULL);
	unsetenv("SMARTIO_NVME_ANSWER_MS");
	cr_expect_eq(o.ret, 0, "a client queued for a slot: %s", o.msg);
	for (s = 0; s < SIO_NVME_MBOX_SLOTS; s++)	/* the held ones back */
		if (s != r.slot && __atomic_load_n(&r.mb->slots[s].pid, __ATOMIC_ACQUIRE) ==
		    getpid()) {
			__atomic_store_n(&r.mb->slots[s].pid, 0, __ATOMIC_RELEASE);
			__atomic_store_n(&r.mb->slots[s].state, SIO_MBOX_FREE, __ATOMIC_RELEASE);
		}
	if (!o.ret)
		sio_nvme_client_close(o.cl);
	sio_fabric_close(o.f);
	raw_close(&r);
}

Test(faults, forged_queue_id_is_refused_and_the_victim_keeps_working)
{
	const char *emu[] = { "--backing", "ram:8M", NULL };
	struct sio_nvme_mbox_req req;
	struct sio_nvme_mbox_resp resp;
	struct sio_nvme_ioq_info qi;
	struct rawmb evil;
	struct cli v;
	int i;

	cluster_up(&C, 3, 32, emu);
	cli_open(&v, 1);
	sio_nvme_ioq_info(v.q, &qi);
	cr_assert_eq(cli_write(&v, 100, 1), 0, "%s", sio_errmsg());
	raw_open(&evil, 2, sio_device_id(sio_nvme_client_device(v.cl)));

	/* Delete the victim's queue pair by its id. */
	memset(&req, 0, sizeof(req));
	req.op = SIO_MBOX_OP_DELETE_QP;
	req.qid = qi.qid;
	cr_expect_eq(raw_call(&evil, &req, &resp), -EPERM, "forged delete: %d %s", resp.err,
		     resp.msg);
	cr_expect(strstr(resp.msg, "not yours"), "message: %s", resp.msg);
	/* Out-of-range ids, the admin queue, and garbage ops are refused too. */
	for (i = 0; i < 3; i++) {
		static const uint16_t ids[] = { 0, 0xffff, 4096 };

		req.qid = ids[i];
		cr_expect_eq(raw_call(&evil, &req, &resp), -EINVAL, "qid %u: %d %s", ids[i],
			     resp.err, resp.msg);
	}
	memset(&req, 0, sizeof(req));
	req.op = 0xdeadbeef;
	cr_expect_eq(raw_call(&evil, &req, &resp), -EINVAL);
	/* A create that names the victim's queues as its own memory is refused
	 * or gets a queue of its own, never the victim's id. */
	memset(&req, 0, sizeof(req));
	req.op = SIO_MBOX_OP_CREATE_QP;
	req.qid = qi.qid;
	req.qsize = 16;
	req.bus1 = 0x1000;
	req.bus2 = 0x2000;
	if (raw_call(&evil, &req, &resp) == 0) {
		cr_expect_neq(resp.qid, qi.qid, "the forged create got the victim's queue");
		memset(&req, 0, sizeof(req));
		req.op = SIO_MBOX_OP_DELETE_QP;
		req.qid = resp.qid;
		raw_call(&evil, &req, &resp);
	}
	raw_close(&evil);

	/* The victim's queue pair still does I/O, and its data is intact. */
	cr_expect_eq(cli_verify(&v, 100, 1), 0, "victim read: %s", sio_errmsg());
	cr_expect_eq(cli_write(&v, 200, 2), 0, "victim write: %s", sio_errmsg());
	cr_expect_eq(cli_verify(&v, 200, 2), 0, "victim read: %s", sio_errmsg());
	cli_close(&v);
}

struct done {
	int n, err;
	uint16_t status;
};

static void on_done(void *arg, int err, uint16_t status)
{
	struct done *d = arg;

	d->n++;
	d->err = err;
	d->status = status;
}

Test(faults, prp_to_unmapped_memory_is_a_data_transfer_error)
{
	const char *emu[] = { "--backing", "ram:8M", NULL };
	struct sio_nvme_buf wild;
	struct done d = { 0 };
	struct cli c;
	int i, ret;

	cluster_up(&C, 2, 32, emu);
	cli_open(&c, 1);
	cr_assert_eq(cli_write(&c, 300, 3), 0, "%s", sio_errmsg());
	/* A buffer whose bus address was never mapped for the device. */
	wild = *c.buf;
	wild.bus = 0x7f5500000000ull;
	for (i = 0; i < 2; i++) {
		memset(&d, 0, sizeof(d));
		ret = i ? sio_nvme_ioq_write(c.q, 1, 400, 8, &wild, 0, on_done, &d)
			: sio_nvme_ioq_read(c.q, 1, 300, 8, &wild, 0, on_done, &d);
		cr_assert_eq(ret, 0, "%s", sio_errmsg());
		cr_assert_eq(sio_nvme_ioq_wait(c.q), 0, "%s", sio_errmsg());
		cr_expect_eq(d.n, 1);
		cr_expect_eq(d.err, -EIO, "%s: err %d", i ? "write" : "read", d.err);
		cr_expect_eq(d.status & 0x7ff, NVME_SC_DATA_XFER_ERROR,
			     "%s: status 0x%x, want Data Transfer Error", i ? "write" : "read",
			     d.status);
	}
	/* The controller keeps serving, and the failed write changed nothing. */
	cr_expect_eq(cli_verify(&c, 300, 3), 0, "%s", sio_errmsg());
	cr_expect_eq(cli_write(&c, 400, 4), 0, "%s", sio_errmsg());
	cr_expect_eq(cli_verify(&c, 400, 4), 0, "%s", sio_errmsg());
	cli_close(&c);
}

Test(faults, killed_client_windows_are_reclaimed)
{
	const char *emu[] = { "--backing", "ram:16M", NULL };
	const char *victim[] = { "NVME_CLIENT", "--fabric", NULL, "--node", "1", "--lba", "0",
				 "--count", "2048", "--random", "--qd", "8", "--time", "30",
				 NULL };
	struct sio_fabric *f;
	struct cli c;
	int base, busy, i;
	pid_t v;
	uint64_t t0;

	cluster_up(&C, 3, 32, emu);
	victim[2] = C.fabric;
	cr_assert_eq(sio_fabric_open(C.fabric, 2, &f), 0, "%s", sio_errmsg());
	base = windows_used(f, 0);
	v = cluster_spawn(&C, "victim", victim);
	/* Wait until its CQ and buffer are mapped through the lender's adapter. */
	for (i = 0, busy = base; i < 500 && busy <= base; i++) {
		usleep(10000);
		busy = windows_used(f, 0);
	}
	cr_assert_gt(busy, base, "the client never took a window on the lender");
	usleep(300000);
	kill(v, SIGKILL);
	cluster_wait(v, 2000);
	t0 = now_ms();
	while (windows_used(f, 0) > base && now_ms() - t0 < 5000) {
		sio_fabric_reap(f);
		usleep(20000);
	}
	cr_expect_eq(windows_used(f, 0), base, "windows: %d before, %d with the client, "
		     "%d after it was killed", base, busy, windows_used(f, 0));
	/* And the controller serves the next client. */
	cli_open(&c, 2);
	cr_expect_eq(cli_write(&c, 4096, 5), 0, "%s", sio_errmsg());
	cr_expect_eq(cli_verify(&c, 4096, 5), 0, "%s", sio_errmsg());
	cli_close(&c);
	sio_fabric_close(f);
}

Test(faults, killed_manager_gives_clear_errors_and_loses_no_flushed_data)
{
	char backing[300];
	const char *emu[] = { "--backing", backing, NULL };
	struct sio_nvme_ctrl_info ci;
	uint8_t id[4096];
	struct cli c;
	int ret;

	make_backing(backing, sizeof(backing));
	/* Requests wait this long for a manager to take over (test_failover.c). */
	setenv("SMARTIO_NVME_RESTART_MS", "1000", 1);
	cluster_up(&C, 2, 32, emu);
	cli_open(&c, 1);
	sio_nvme_client_info(c.cl, &ci);
	cr_assert_eq(cli_write(&c, 500, 6), 0, "%s", sio_errmsg());

	kill(C.mgr, SIGKILL);
	cluster_wait(C.mgr, 2000);
	C.mgr = 0;
	/* Requests to the manager end with a clear error, not a hang. */
	ret = sio_nvme_client_identify(c.cl, NVME_IDENTIFY_CNS_CTRL, 0, id);
	cr_expect_eq(ret, -ENOTCONN, "identify with the manager dead: %d %s", ret,
		     sio_errmsg());
	cr_expect(strstr(sio_errmsg(), "manager"), "%s", sio_errmsg());
	cli_close(&c);

	/* A new manager takes the controller over; a client registers again
	 * and finds what it was told is written and flushed. */
	cluster_start_mgr(&C);
	cli_open(&c, 1);
	ret = cli_verify(&c, 500, 6);
	cr_expect_eq(ret, 0, "after the manager restarted: %d %s", ret, sio_errmsg());
	cli_close(&c);
	unlink(backing);
}

Test(faults, killed_controller_restarts_with_its_file_backing)
{
	char backing[300];
	const char *emu[] = { "--backing", backing, NULL };
	struct done d = { 0 };
	struct cli c;
	int ret, rc;

	make_backing(backing, sizeof(backing));
	cluster_up(&C, 2, 32, emu);
	cli_open(&c, 1);
	sio_nvme_client_set_timeout(c.cl, 1000);
	cr_assert_eq(cli_write(&c, 600, 7), 0, "%s", sio_errmsg());

	kill(C.emu, SIGKILL);
	cluster_wait(C.emu, 2000);
	C.emu = 0;
	/* I/O to a dead controller ends with an error within the timeout. */
	ret = sio_nvme_ioq_read(c.q, 1, 600, 16, c.buf, 0, on_done, &d);
	if (ret == 0)
		ret = sio_nvme_ioq_wait(c.q);
	cr_expect(ret == -ETIMEDOUT || ret == -ENODEV, "I/O to a dead controller: %d %s",
		  ret, sio_errmsg());
	cli_close(&c);

	/* The manager waits for it: the restarted controller (same backing, a
	 * new device id) is served again without restarting the manager. */
	cluster_start_emu(&C, emu);
	cli_open_served(&c, 1, 10000);
	ret = cli_verify(&c, 600, 7);
	cr_expect_eq(ret, 0, "after the controller restarted: %d %s", ret, sio_errmsg());
	cli_close(&c);
	rc = waitpid(C.mgr, NULL, WNOHANG);
	cr_expect_eq(rc, 0, "the manager is the one that served before");
	unlink(backing);
}

/* A restarted controller that dies again at once (50 ms after it is
 * ready, maybe while the manager brings it up) is followed to the next
 * one: the manager reached the second registration's death by an event
 * its reaper, not yet listening, never sent, and served the dead device. */
Test(faults, a_restarted_controller_killed_at_once_is_still_followed)
{
	char backing[300];
	const char *emu[] = { "--backing", backing, NULL };
	struct cli c;
	int ret;

	make_backing(backing, sizeof(backing));
	cluster_up(&C, 2, 32, emu);
	cli_open(&c, 1);
	cr_assert_eq(cli_write(&c, 640, 13), 0, "%s", sio_errmsg());
	cli_close(&c);
	for (int i = 0; i < 2; i++) {
		kill(C.emu, SIGKILL);
		cluster_wait(C.emu, 2000);
		cluster_start_emu(&C, emu);
		if (!i)
			usleep(50000);
	}
	cli_open_served(&c, 1, 30000);
	ret = cli_verify(&c, 640, 13);
	cr_expect_eq(ret, 0, "the third controller: %d %s", ret, sio_errmsg());
	cli_close(&c);
	cr_expect_eq(waitpid(C.mgr, NULL, WNOHANG), 0, "the manager is the one that served "
		     "before");
	unlink(backing);
}

Test(faults, lender_link_down_gives_errors_then_recovers)
{
	const char *emu[] = { "--backing", "ram:8M", NULL };
	struct sio_fabric *admin;
	struct cli c;
	uint64_t t0;
	int ret;

	cluster_up(&C, 2, 32, emu);
	setenv("SMARTIO_NVME_LINK_GRACE_MS", "500", 1);	/* a flap shorter is ridden out */
	cli_open(&c, 1);
	unsetenv("SMARTIO_NVME_LINK_GRACE_MS");
	sio_nvme_client_set_timeout(c.cl, 1000);
	cr_assert_eq(cli_write(&c, 700, 8), 0, "%s", sio_errmsg());
	cr_assert_eq(sio_fabric_open(C.fabric, 0, &admin), 0, "%s", sio_errmsg());
	cr_assert_eq(sio_link_set(admin, 0, -1, false), 0, "%s", sio_errmsg());

	/* Errors past the grace, not hangs. */
	t0 = now_ms();
	ret = cli_verify(&c, 700, 8);
	cr_expect(ret == -ENOLINK && strstr(sio_errmsg(), "(node 0) has been down for over"),
		  "I/O through a dead link: %d %s", ret, sio_errmsg());
	cr_expect_lt(now_ms() - t0, 10000, "the error took %llu ms",
		     (unsigned long long)(now_ms() - t0));

	cr_assert_eq(sio_link_set(admin, 0, -1, true), 0, "%s", sio_errmsg());
	/* The failed queue pair is replaced; the data written before is there. */
	sio_nvme_ioq_close(c.q);
	c.q = NULL;
	ret = sio_nvme_ioq_create(c.cl, NULL, &c.q);
	cr_assert_eq(ret, 0, "new queue after link up: %s", sio_errmsg());
	cr_expect_eq(cli_verify(&c, 700, 8), 0, "%s", sio_errmsg());
	cr_expect_eq(cli_write(&c, 800, 9), 0, "%s", sio_errmsg());
	cr_expect_eq(cli_verify(&c, 800, 9), 0, "%s", sio_errmsg());
	cli_close(&c);
	sio_fabric_close(admin);
}

/* The lender's links (node 0, every adapter) up again after @ms, in a
 * thread of its own. */
struct relink {
	struct sio_fabric *admin;
	int ms;
	pthread_t t;
};

static void *relink_run(void *arg)
{
	struct relink *r = arg;

	usleep((useconds_t)r->ms * 1000);
	sio_link_set(r->admin, 0, -1, true);
	return NULL;
}

/* A lender whose link is down as a client starts: the client waits for
 * it $SMARTIO_NVME_LINK_GRACE_MS, and goes on once it is up; past the
 * grace it fails, naming the link and the variable. */
Test(faults, a_link_down_at_start_is_waited_for_its_grace)
{
	const char *emu[] = { "--backing", "ram:8M", NULL };
	struct relink r = { .ms = 1000 };
	struct cli c;
	int ret;

	cluster_up(&C, 2, 32, emu);
	cr_assert_eq(sio_fabric_open(C.fabric, 0, &r.admin), 0, "%s", sio_errmsg());
	cr_assert_eq(sio_link_set(r.admin, 0, -1, false), 0, "%s", sio_errmsg());
	memset(&c, 0, sizeof(c));
	cr_assert_eq(sio_fabric_open(C.fabric, 1, &c.f), 0, "%s", sio_errmsg());
	setenv("SMARTIO_NVME_LINK_GRACE_MS", "300", 1);
	ret = sio_nvme_client_open(c.f, SIO_DEVICE_ANY, &c.cl);
	cr_expect_eq(ret, -ENOLINK, "%d %s", ret, sio_errmsg());
	cr_expect(strstr(sio_errmsg(), "(node 0) is down") &&
		  strstr(sio_errmsg(), "SMARTIO_NVME_LINK_GRACE_MS"), "%s", sio_errmsg());
	if (!ret)
		sio_nvme_client_close(c.cl);
	c.cl = NULL;
	setenv("SMARTIO_NVME_LINK_GRACE_MS", "60000", 1);
	cr_assert_eq(pthread_create(&r.t, NULL, relink_run, &r), 0);
	ret = sio_nvme_client_open(c.f, SIO_DEVICE_ANY, &c.cl);
	pthread_join(r.t, NULL);
	unsetenv("SMARTIO_NVME_LINK_GRACE_MS");
	cr_assert_eq(ret, 0, "a client started while the link was down: %s", sio_errmsg());
	cr_assert_eq(sio_nvme_ioq_create(c.cl, NULL, &c.q), 0, "%s", sio_errmsg());
	cr_assert_eq(sio_nvme_buf_alloc(c.cl, 64 << 10, &c.buf), 0, "%s", sio_errmsg());
	cr_expect_eq(cli_write(&c, 700, 5), 0, "%s", sio_errmsg());
	cr_expect_eq(cli_verify(&c, 700, 5), 0, "%s", sio_errmsg());
	cli_close(&c);
	sio_fabric_close(r.admin);
}

/* An Identify Namespace across the lender's links taken down: said when
 * they stay down past the grace, answered when they are back within it. */
static void identify_across_a_flap(const char *const *emu)
{
	struct relink r = { .ms = 500 };
	uint8_t want[4096], id[4096];
	struct cli c;
	int ret;

	cluster_up(&C, 2, 32, emu);
	setenv("SMARTIO_NVME_LINK_GRACE_MS", "1000", 1);
	cli_open(&c, 1);
	unsetenv("SMARTIO_NVME_LINK_GRACE_MS");
	cr_assert_eq(sio_nvme_client_identify(c.cl, NVME_IDENTIFY_CNS_NS, 1, want), 0, "%s",
		     sio_errmsg());
	cr_assert_eq(sio_fabric_open(C.fabric, 0, &r.admin), 0, "%s", sio_errmsg());
	cr_assert_eq(sio_link_set(r.admin, 0, -1, false), 0, "%s", sio_errmsg());
	ret = sio_nvme_client_identify(c.cl, NVME_IDENTIFY_CNS_NS, 1, id);
	cr_expect((ret == -ENOLINK || ret == -EIO) &&
		  strstr(sio_errmsg(), "did not come back within 1000 ms"),
		  "an Identify across a link that stays down: %d %s", ret, sio_errmsg());
	cr_assert_eq(pthread_create(&r.t, NULL, relink_run, &r), 0);
	ret = sio_nvme_client_identify(c.cl, NVME_IDENTIFY_CNS_NS, 1, id);
	pthread_join(r.t, NULL);
	cr_expect_eq(ret, 0, "an Identify across a flap: %s", sio_errmsg());
	cr_expect_eq(memcmp(id, want, sizeof(id)), 0, "the namespace's data differs");
	cli_close(&c);
	sio_fabric_close(r.admin);
}

/*
 * Admin data that never lands: across a link that is down QEMU's
 * controller completes the command with success, and the host's buffer
 * holds what it held (an Identify Namespace of zeros said "namespace 1 is
 * not active" after a lender's flap, in a storm across guests). The
 * client fills its buffer first and asks again once the link is back.
 */
Test(faults, admin_data_that_never_lands_is_asked_again)
{
	const char *emu[] = { "--backing", "ram:8M", "--lost-dma-ok", NULL };

	identify_across_a_flap(emu);
}

/* ... and one the controller says it could not transfer, the link down. */
Test(faults, admin_data_refused_across_a_flap_is_asked_again)
{
	const char *emu[] = { "--backing", "ram:8M", NULL };

	identify_across_a_flap(emu);
}

/* One client's counters as sio_nvme_stats_read() shows them (the first
 * queue of the client of pid @pid), or the test fails. */
static struct sio_nvme_qstats stats_of(struct sio_fabric *f, int pid)
{
	static struct sio_nvme_client_stats cs[8];
	int n = sio_nvme_stats_read(f, SIO_DEVICE_ANY, cs, 8);

	for (int i = 0; i < n && i < 8; i++)
		if (cs[i].pid == pid && cs[i].nqueues)
			return cs[i].q[0];
	cr_assert_fail("no counters of pid %d: %d %s", pid, n, sio_errmsg());
	return cs[0].q[0];
}

/*
 * The lender's link flaps under a client's I/O (down 5 s, past the 1 s
 * I/O timeout and the three recoveries it allows): the client pauses, makes its queue pair again and sends
 * again what was in flight, and the application sees no error, and its
 * data; the flap and its pause are counted, in the queue's info and in
 * the live counters. Past $SMARTIO_NVME_LINK_GRACE_MS it fails, saying so.
 */
Test(faults, a_link_flap_under_io_is_ridden_out)
{
	const char *emu[] = { "--backing", "ram:8M", NULL };
	struct relink r = { .ms = 5000 };
	struct sio_nvme_ioq_info qi;
	struct sio_nvme_qstats qs;
	struct cli c;
	int ret;

	cluster_up(&C, 2, 32, emu);
	cr_assert_eq(sio_fabric_open(C.fabric, 0, &r.admin), 0, "%s", sio_errmsg());
	cli_open(&c, 1);
	sio_nvme_client_set_timeout(c.cl, 1000);
	cr_assert_eq(cli_write(&c, 700, 7), 0, "%s", sio_errmsg());
	cr_assert_eq(sio_link_set(r.admin, 0, -1, false), 0, "%s", sio_errmsg());
	cr_assert_eq(pthread_create(&r.t, NULL, relink_run, &r), 0);
	ret = cli_write(&c, 800, 8);	/* sent while the link is down */
	pthread_join(r.t, NULL);
	cr_expect_eq(ret, 0, "a write across a 5 s flap: %s", sio_errmsg());
	cr_expect_eq(cli_verify(&c, 700, 7), 0, "%s", sio_errmsg());
	cr_expect_eq(cli_verify(&c, 800, 8), 0, "%s", sio_errmsg());
	sio_nvme_ioq_info(c.q, &qi);
	cr_expect_geq(qi.link_flaps, 1, "flaps counted: %u", qi.link_flaps);
	cr_expect_gt(qi.paused_ns, 0, "no pause counted");
	cr_expect_geq(qi.resubmitted, 1, "nothing sent again");
	cr_log_info("a 5 s flap: %u flap(s), %llu ms paused, %llu command(s) sent again",
		    qi.link_flaps, (unsigned long long)(qi.paused_ns / 1000000),
		    (unsigned long long)qi.resubmitted);
	qs = stats_of(r.admin, getpid());
	cr_expect_eq(qs.link_flaps, qi.link_flaps, "live counters: %llu flaps",
		     (unsigned long long)qs.link_flaps);
	cr_expect_eq(qs.paused_ns, qi.paused_ns);
	cr_expect_geq(qs.resubmitted, 1);
	cli_close(&c);

	/* past the grace: the error says so */
	setenv("SMARTIO_NVME_LINK_GRACE_MS", "300", 1);
	cli_open(&c, 1);
	unsetenv("SMARTIO_NVME_LINK_GRACE_MS");
	sio_nvme_client_set_timeout(c.cl, 1000);
	cr_assert_eq(cli_write(&c, 900, 9), 0, "%s", sio_errmsg());
	cr_assert_eq(sio_link_set(r.admin, 0, -1, false), 0, "%s", sio_errmsg());
	ret = cli_write(&c, 900, 9);
	cr_expect_eq(ret, -ENOLINK, "%d %s", ret, sio_errmsg());
	cr_expect(strstr(sio_errmsg(), "has been down for over 300 ms") &&
		  strstr(sio_errmsg(), "SMARTIO_NVME_LINK_GRACE_MS"), "%s", sio_errmsg());
	cr_assert_eq(sio_link_set(r.admin, 0, -1, true), 0, "%s", sio_errmsg());
	cli_close(&c);
	sio_fabric_close(r.admin);
}

/* Stop the controller (SIGSTOP) for @ms in a thread of its own. */
struct stall {
	pid_t pid;
	int ms;
	pthread_t t;
};

static void *stall_run(void *arg)
{
	struct stall *s = arg;

	kill(s->pid, SIGSTOP);
	usleep((useconds_t)s->ms * 1000);
	kill(s->pid, SIGCONT);
	return NULL;
}

static void stall_start(struct stall *s, pid_t pid, int ms)
{
	s->pid = pid;
	s->ms = ms;
	cr_assert_eq(pthread_create(&s->t, NULL, stall_run, s), 0);
}

/* Reads of 16 blocks, four asynchronous and one synchronous, at 900.. */
static void stalled_reads(struct cli *c, struct done *d)
{
	int i, ret;

	memset(d, 0, 4 * sizeof(*d));
	for (i = 0; i < 4; i++) {
		ret = sio_nvme_ioq_read(c->q, 1, 900, 16, c->buf, 8192 * (uint64_t)(i + 1),
					on_done, &d[i]);
		cr_expect_eq(ret, 0, "async read %d: %s", i, sio_errmsg());
	}
	ret = sio_nvme_read(c->q, 1, 900, 16, c->buf, 5 * 8192);
	cr_expect_eq(ret, 0, "sync read across the stall: %d %s", ret, sio_errmsg());
	cr_expect_eq(sio_nvme_ioq_wait(c->q), 0, "%s", sio_errmsg());
	for (i = 0; i < 4; i++) {
		cr_expect_eq(d[i].n, 1, "async read %d: callback ran %d times", i, d[i].n);
		cr_expect_eq(d[i].err, 0, "async read %d: %d", i, d[i].err);
	}
	for (i = 0; i <= 4; i++)	/* what was read is what was written */
		cr_expect_eq(memcmp((uint8_t *)c->buf->va + 8192 * (i + 1), c->buf->va, 8192), 0,
			     "read %d returned other data", i);
}

/* A controller that stops answering (SIGSTOP, 4 s) with commands in
 * flight, past the client's 1 s timeout: the queue pair is not abandoned
 * but reset through the manager (deleted in the controller and made
 * again), and every command in flight is sent again: each waiter gets its
 * data once the controller runs again. */
Test(faults, stalled_controller_gets_the_queue_pair_reset_not_abandoned)
{
	const char *emu[] = { "--backing", "ram:8M", NULL };
	struct sio_nvme_ioq_info qi;
	struct done d[4];
	struct stall st;
	struct cli c;

	cluster_up(&C, 2, 32, emu);
	cli_open(&c, 1);
	sio_nvme_client_set_timeout(c.cl, 1000);
	cr_assert_eq(cli_write(&c, 900, 10), 0, "%s", sio_errmsg());
	cr_assert_eq(cli_verify(&c, 900, 10), 0, "%s", sio_errmsg());
	stall_start(&st, C.emu, 4000);	/* well past the 1 s I/O timeout */
	usleep(100000);
	stalled_reads(&c, d);
	pthread_join(st.t, NULL);
	sio_nvme_ioq_info(c.q, &qi);
	cr_expect_geq(qi.recoveries, 1, "the queue pair was never made again");
	cr_expect_eq(cli_verify(&c, 900, 10), 0, "%s", sio_errmsg());
	cr_expect(strstr(cluster_output(&C, "nvme-manager", "err"), "timed out: deleted"),
		  "%s", cluster_output(&C, "nvme-manager", "err"));
	cli_close(&c);
}

/* A controller stopped past the manager's admin timeout (5 s), under a
 * client's I/O and another's admin request: the manager does not give up
 * on it ("admin queue unusable ... reset the controller" for ever after) but
 * resets it, as Linux's nvme_reset_work(); the admin request is asked
 * again, the I/O is sent again on the queue pair made anew, and nothing is
 * lost. */
Test(faults, admin_timeout_resets_the_controller_and_clients_go_on)
{
	const char *emu[] = { "--backing", "ram:8M", NULL };
	struct sio_nvme_ioq_info qi;
	struct done d[4];
	struct stall st;
	struct cli c, a;
	uint8_t id[4096];
	char *log;
	int ret;

	cluster_up(&C, 3, 32, emu);
	cli_open(&c, 1);
	cli_open(&a, 2);
	sio_nvme_client_set_timeout(c.cl, 1000);
	cr_assert_eq(cli_write(&c, 900, 10), 0, "%s", sio_errmsg());
	stall_start(&st, C.emu, 8500);	/* well past the 5 s admin timeout */
	usleep(100000);
	ret = sio_nvme_client_identify(a.cl, NVME_IDENTIFY_CNS_CTRL, 0, id);
	cr_expect_eq(ret, 0, "Identify across the reset: %d %s", ret, sio_errmsg());
	stalled_reads(&c, d);
	pthread_join(st.t, NULL);
	log = cluster_output(&C, "nvme-manager", "err");
	cr_expect(strstr(log, "resetting device") && strstr(log, "ready again after the reset"),
		  "%s", log);
	cr_expect(!strstr(log, "unusable"), "%s", log);
	sio_nvme_ioq_info(c.q, &qi);
	cr_expect_geq(qi.recoveries, 1);
	cr_expect_eq(cli_verify(&c, 900, 10), 0, "%s", sio_errmsg());
	cr_expect_eq(cli_write(&a, 1100, 12), 0, "%s", sio_errmsg());
	cr_expect_eq(cli_verify(&a, 1100, 12), 0, "%s", sio_errmsg());
	cr_expect_eq(waitpid(C.mgr, NULL, WNOHANG), 0, "the manager is the one that served");
	cli_close(&a);
	cli_close(&c);
}

/*
 * A manager in this process, in a thread, that stops the controller when
 * the client's queue pair is being made again: served request by request,
 * each looked at before it is served (the client has one request out at
 * a time). The controller runs again for the deletion that follows the
 * client's timeout, and stops for the creation after it, past the admin
 * timeout: the creation's fate is unknown, and the manager resets.
 */
struct scripted {
	struct sio_nvme_manager *m;
	struct sio_nvme_client *cl;	/* set once the client is open */
	struct stall st;
	int step, stop, plain;	/* plain: serving without looking (cl NULL) */
	pthread_t t;
};

static void *scripted_run(void *arg)
{
	struct scripted *s = arg;
	struct sio_nvme_mbox_slot *sl;
	struct sio_nvme_client *cl;
	uint32_t op;

	while (!__atomic_load_n(&s->stop, __ATOMIC_ACQUIRE)) {
		cl = __atomic_load_n(&s->cl, __ATOMIC_ACQUIRE);
		if (!cl) {
			__atomic_store_n(&s->plain, 1, __ATOMIC_RELEASE);
			sio_nvme_manager_serve(s->m, 10);
			continue;
		}
		sl = &cl->mb->slots[cl->slot];
		if (__atomic_load_n(&sl->state, __ATOMIC_ACQUIRE) != SIO_MBOX_REQ) {
			usleep(200);
			continue;
		}
		op = sl->req.op;
		if (s->step == 0 && op == SIO_MBOX_OP_RESET_QP) {
			kill(s->st.pid, SIGCONT);	/* the deletion runs */
			s->step = 1;
		} else if (s->step == 1 && op == SIO_MBOX_OP_CREATE_QP) {
			kill(s->st.pid, SIGSTOP);	/* the creation does not */
			stall_start(&s->st, s->st.pid, SIO_NVME_ADMIN_TIMEOUT_MS + 1000);
			s->step = 2;
		}
		sio_nvme_manager_serve(s->m, 0);
	}
	return NULL;
}

/* The controller stops while a queue pair is made again after a timeout:
 * the creation times out too, and the manager resets the controller. The
 * queue pair stays its owner's, which makes it again once the controller
 * is back; the read in flight through all of it gets its data (it was
 * "queue 1 is not yours to create again": the reset gave the half-made
 * pair to no one). */
Test(faults, a_reset_while_a_queue_pair_is_made_again_keeps_it_its_owners)
{
	const char *emu[] = { "--backing", "ram:8M", NULL };
	struct sio_nvme_ioq_info qi;
	struct scripted s = { 0 };
	struct sio_fabric *fm;
	struct cli c;
	int ret;

	cluster_up(&C, 2, 32, emu);
	cluster_stop(&C.mgr);
	cr_assert_eq(sio_fabric_open(C.fabric, 0, &fm), 0, "%s", sio_errmsg());
	cr_assert_eq(sio_nvme_manager_start(fm, cluster_device_id(&C), NULL, &s.m), 0, "%s",
		     sio_errmsg());
	s.st.pid = C.emu;
	cr_assert_eq(pthread_create(&s.t, NULL, scripted_run, &s), 0);
	cli_open(&c, 1);
	sio_nvme_client_set_timeout(c.cl, 1000);
	cr_assert_eq(cli_write(&c, 900, 10), 0, "%s", sio_errmsg());
	__atomic_store_n(&s.cl, c.cl, __ATOMIC_RELEASE);
	kill(C.emu, SIGSTOP);	/* the read times out */
	ret = cli_verify(&c, 900, 10);
	cr_expect_eq(ret, 0, "the read across the reset: %d %s", ret, sio_errmsg());
	cr_expect_eq(s.step, 2, "the queue pair was not made again under a stopped controller");
	if (s.step == 2)
		pthread_join(s.st.t, NULL);
	sio_nvme_ioq_info(c.q, &qi);
	cr_expect_geq(qi.recoveries, 1);
	cr_expect_eq(cli_write(&c, 1000, 11), 0, "%s", sio_errmsg());
	cr_expect_eq(cli_verify(&c, 1000, 11), 0, "%s", sio_errmsg());
	__atomic_store_n(&s.plain, 0, __ATOMIC_RELEASE);
	__atomic_store_n(&s.cl, NULL, __ATOMIC_RELEASE);
	while (!__atomic_load_n(&s.plain, __ATOMIC_ACQUIRE))
		usleep(1000);	/* it looks at the client no more */
	cli_close(&c);
	__atomic_store_n(&s.stop, 1, __ATOMIC_RELEASE);
	pthread_join(s.t, NULL);
	kill(C.emu, SIGCONT);
	sio_nvme_manager_close(s.m);
	sio_fabric_close(fm);
}

/* The mailbox's header and the client's slot reading all ones, then
 * themselves again, a dozen times, then once for 2.5 s, while the manager
 * is stopped (SIGSTOP: nothing writes them meanwhile) and the client's
 * request waits in its slot. */
struct flicker {
	struct sio_nvme_mbox_hdr *h;
	struct sio_nvme_mbox_slot *sl;
	pid_t mgr;
	pthread_t t;
};

static void flicker_dark(struct flicker *k, int ms)
{
	memset(k->h, 0xff, sizeof(*k->h));
	memset(k->sl, 0xff, sizeof(*k->sl));
	usleep((useconds_t)ms * 1000);
}

static void *flicker_run(void *arg)
{
	struct flicker *k = arg;
	struct sio_nvme_mbox_hdr h;
	struct sio_nvme_mbox_slot sl;

	for (int i = 0; i < 500 && __atomic_load_n(&k->sl->state, __ATOMIC_ACQUIRE) !=
				   SIO_MBOX_REQ; i++)
		usleep(10000);
	memcpy(&h, k->h, sizeof(h));
	memcpy(&sl, k->sl, sizeof(sl));
	for (int i = 0; i <= 12; i++) {	/* each state seen: a client looks every 100 ms */
		flicker_dark(k, i < 12 ? 150 : 2500);	/* past the 2 s of a slot lost */
		memcpy(k->h, &h, sizeof(h));
		memcpy(k->sl, &sl, sizeof(sl));
		usleep(150000);
	}
	kill(k->mgr, SIGCONT);
	return NULL;
}

/* A request waits while the mailbox reads all ones now and then, as it
 * does across an NTB link that flaps or a window mapped again at a new
 * link generation: no manager came or went (it was "9 NVMe managers took
 * over in turn and none answered" on the idt profile), the slot is still
 * the client's ("no longer its own", there too), and the answer comes
 * once the manager runs. */
Test(faults, a_mailbox_that_reads_all_ones_for_a_while_is_waited_for)
{
	const char *emu[] = { "--backing", "ram:8M", NULL };
	struct flicker k;
	uint8_t id[4096];
	struct cli c;
	int ret;

	cluster_up(&C, 2, 32, emu);
	cli_open(&c, 1);
	k.h = &c.cl->mb->h;
	k.sl = &c.cl->mb->slots[c.cl->slot];
	k.mgr = C.mgr;
	cr_assert_eq(kill(C.mgr, SIGSTOP), 0);
	cr_assert_eq(pthread_create(&k.t, NULL, flicker_run, &k), 0);
	ret = sio_nvme_client_identify(c.cl, NVME_IDENTIFY_CNS_CTRL, 0, id);
	pthread_join(k.t, NULL);
	cr_expect_eq(ret, 0, "Identify across the flicker: %d %s", ret, sio_errmsg());
	cr_expect_eq(cli_write(&c, 900, 12), 0, "%s", sio_errmsg());
	cr_expect_eq(cli_verify(&c, 900, 12), 0, "%s", sio_errmsg());
	cli_close(&c);
}

/* The manager of the cluster moved to node 1, away from the lender (node
 * 0), its link grace @grace (ms); a client on the lender. */
static void mgr_away(struct cli *c, const char *grace)
{
	static const char *const args[] = { "--node", "1", "--shadow-doorbells", "on", NULL };

	cluster_stop(&C.mgr);
	setenv("SMARTIO_NVME_LINK_GRACE_MS", grace, 1);
	cluster_start_mgr_args(&C, args);
	unsetenv("SMARTIO_NVME_LINK_GRACE_MS");
	cli_open(c, 0);
}

/* The lender's links down for @ms, the mailbox reading all ones meanwhile,
 * as across an NTB link that flaps; then both back as they were. */
static void lender_dark(struct cli *c, int ms)
{
	struct sio_nvme_mbox_hdr *h = &c->cl->mb->h, saved;
	struct sio_fabric *admin;

	cr_assert_eq(sio_fabric_open(C.fabric, 0, &admin), 0, "%s", sio_errmsg());
	memcpy(&saved, h, sizeof(saved));
	cr_assert_eq(sio_link_set(admin, 0, -1, false), 0, "%s", sio_errmsg());
	memset(h, 0xff, sizeof(*h));
	usleep((useconds_t)ms * 1000);
	memcpy(h, &saved, sizeof(saved));
	cr_assert_eq(sio_link_set(admin, 0, -1, true), 0, "%s", sio_errmsg());
	sio_fabric_close(admin);
}

/*
 * A manager on another node than the lender whose link to it goes down
 * (an NTB link's flap): the mailbox reads all ones, and across an NTB the
 * registers too. The manager waits for the link instead of taking the
 * controller for dead (it stopped serving, and its last words never reached
 * the mailbox, which went on saying it served), or mending what only
 * reads all ones; once the link is back it serves on, the same process.
 */
Test(faults, a_manager_rides_out_its_link_to_the_lender)
{
	const char *emu[] = { "--backing", "ram:8M", NULL };
	uint8_t id[4096];
	struct cli c;
	char *log;
	int st;

	cluster_up(&C, 2, 32, emu);
	mgr_away(&c, "10000");
	cr_assert_eq(cli_write(&c, 500, 3), 0, "%s", sio_errmsg());
	lender_dark(&c, 1500);
	cr_expect_eq(waitpid(C.mgr, &st, WNOHANG), 0, "the manager stopped across the flap");
	cr_expect_eq(cli_verify(&c, 500, 3), 0, "%s", sio_errmsg());
	cr_expect_eq(sio_nvme_client_identify(c.cl, NVME_IDENTIFY_CNS_CTRL, 0, id), 0,
		     "a request after the flap: %s", sio_errmsg());
	log = cluster_output(&C, "nvme-manager", "err");
	cr_expect(strstr(log, "the lender (node 0) is out of reach: what it holds reads all "
			 "ones") && strstr(log, "(node 0) is in reach again after"), "%s", log);
	cr_expect(!strstr(log, "wrote over the mailbox"), "mended what read all ones: %s", log);
	cli_close(&c);
}

/*
 * ... and its admin queue, which lies on the lender and so across the link:
 * when the link goes down in the middle of a serve pass, the manager reads
 * its admin CQ before it finds the mailbox dark. Entries reading all ones
 * carry a phase bit of 1; taken as completions, they moved the head past
 * where the controller writes next, so the first admin command after the
 * flap got no completion, and the manager reset the controller (from
 * another kernel it cannot: a storm's manager gave the device up so).
 */
Test(faults, a_manager_admin_cq_reading_all_ones_is_not_taken)
{
	const char *emu[] = { "--backing", "ram:8M", NULL };
	struct sio_segment *adm;
	uint8_t id[4096], saved[SIO_NVME_ADMIN_DEPTH * 16];
	uint8_t *cq;
	struct cli c;
	char *log;

	cluster_up(&C, 2, 32, emu);
	mgr_away(&c, "10000");
	cr_assert_eq(cli_write(&c, 500, 3), 0, "%s", sio_errmsg());
	cr_assert_eq(sio_segment_connect(c.f, 0, SIO_NVME_ADM_SEGID(sio_device_id(
					 sio_nvme_client_device(c.cl))), &adm), 0, "%s", sio_errmsg());
	cr_assert_eq(sio_segment_map(adm, (void **)&cq), 0, "%s", sio_errmsg());
	cq += SIO_NVME_ADM_CQ_OFF;
	memcpy(saved, cq, sizeof(saved));
	memset(cq, 0xff, sizeof(saved));
	usleep(500000);		/* serve passes: each looks for events on the admin CQ */
	lender_dark(&c, 500);
	memcpy(cq, saved, sizeof(saved));
	cr_expect_eq(sio_nvme_client_identify(c.cl, NVME_IDENTIFY_CNS_CTRL, 0, id), 0,
		     "a request after the flap: %s", sio_errmsg());
	cr_expect_eq(cli_verify(&c, 500, 3), 0, "%s", sio_errmsg());
	log = cluster_output(&C, "nvme-manager", "err");
	cr_expect(!strstr(log, "resetting device"), "the controller was reset: %s", log);
	sio_segment_close(adm);
	cli_close(&c);
}

/*
 * ... and one that the fabric took for dead meanwhile (out of its lender's
 * reach past the lease, which across kernels is how the survivors judge
 * it; here a reaper's verdict is forced) and released, with its kept
 * mailbox, which a standby may hold by now: back within its grace, it went
 * on serving from a mailbox no longer its own, mending back what the new
 * manager wrote. It stops now, writing nothing to the mailbox, and the
 * next manager takes the device over.
 */
Test(faults, a_manager_taken_for_dead_while_away_touches_nothing)
{
	const char *emu[] = { "--backing", "ram:8M", NULL };
	struct sio_nvme_mbox_hdr *h, saved;
	struct sio_fabric *admin;
	struct cli c;
	char *log;
	int p, st;

	cluster_up(&C, 2, 32, emu);
	mgr_away(&c, "10000");
	cr_assert_eq(cli_write(&c, 700, 4), 0, "%s", sio_errmsg());
	h = &c.cl->mb->h;
	cr_assert_eq(sio_fabric_open(C.fabric, 0, &admin), 0, "%s", sio_errmsg());
	memcpy(&saved, h, sizeof(saved));
	cr_assert_eq(sio_link_set(admin, 0, -1, false), 0, "%s", sio_errmsg());
	memset(h, 0xff, sizeof(*h));
	usleep(500000);
	cr_assert_eq(sio__lock(admin), 0, "%s", sio_errmsg());
	for (p = 0; p < SIO_MAX_PROCS; p++)
		if (admin->reg->procs[p].used && admin->reg->procs[p].pid == C.mgr)
			break;
	cr_assert_lt(p, SIO_MAX_PROCS, "the manager's process slot");
	sio__reg_proc_release(admin, p, true);
	sio__unlock(admin);
	memcpy(h, &saved, sizeof(saved));
	cr_assert_eq(sio_link_set(admin, 0, -1, true), 0, "%s", sio_errmsg());
	sio_fabric_close(admin);

	st = cluster_wait(C.mgr, 10000);
	C.mgr = 0;
	log = cluster_output(&C, "nvme-manager", "err");
	cr_expect(st > 0, "the manager went on, released: %d: %s", st, log);
	cr_expect(strstr(log, "was taken for dead") &&
		  strstr(log, "left as it is for the manager that takes it over"), "%s", log);
	cr_expect(!strstr(log, "stopping with"), "it wrote to the mailbox: %s", log);
	cr_expect_eq(h->left, 0, "it wrote to the mailbox");
	cluster_start_mgr(&C);
	cr_expect_eq(cli_verify(&c, 700, 4), 0, "%s", sio_errmsg());
	log = cluster_output(&C, "nvme-manager", "err");
	cr_expect(strstr(log, "took over device"), "%s", log);
	cli_close(&c);
}

/*
 * A client the fabric took for dead and released while it lived (across
 * kernels: its link down past the lease): its mailbox slot may be another
 * client's by now, so it writes no request there, and says why.
 */
Test(faults, a_client_taken_for_dead_writes_no_request)
{
	const char *emu[] = { "--backing", "ram:8M", NULL };
	uint8_t id[4096];
	struct cli c;
	int slot;

	cluster_up(&C, 2, 32, emu);
	cli_open(&c, 1);
	cr_assert_eq(cli_write(&c, 800, 5), 0, "%s", sio_errmsg());
	slot = c.cl->slot;
	cr_assert_eq(sio__lock(c.f), 0, "%s", sio_errmsg());
	sio__reg_proc_release(c.f, c.f->proc, true);
	sio__unlock(c.f);
	cr_expect_eq(sio_nvme_client_identify(c.cl, NVME_IDENTIFY_CNS_CTRL, 0, id), -EOWNERDEAD,
		     "%s", sio_errmsg());
	cr_expect(strstr(sio_errmsg(), "was taken for dead"), "%s", sio_errmsg());
	cr_expect_neq(__atomic_load_n(&c.cl->mb->slots[slot].state, __ATOMIC_ACQUIRE),
		      SIO_MBOX_REQ, "a request was posted");
	cli_close(&c);
}

/* ... and one whose link stays down past its grace stops, saying so. */
Test(faults, a_manager_stops_past_its_link_grace)
{
	const char *emu[] = { "--backing", "ram:8M", NULL };
	struct cli c;
	char *log;
	int st;

	cluster_up(&C, 2, 32, emu);
	mgr_away(&c, "300");
	lender_dark(&c, 1500);
	st = cluster_wait(C.mgr, 5000);
	cr_expect(st > 0, "the manager went on past its grace: %d", st);
	C.mgr = 0;	/* reaped, exited or killed */
	log = cluster_output(&C, "nvme-manager", "err");
	cr_expect(strstr(log, "(node 0) has been out of reach for over 300 ms "
			 "($SMARTIO_NVME_LINK_GRACE_MS)"), "%s", log);
	cr_expect(!strstr(log, "controller failed"), "%s", log);
	cli_close(&c);
}

/* Garbage stored into the controller's registers (CC, AQA, ASQ, ACQ) by
 * another process under a client's I/O: the controller stops, shuts down
 * or refuses; the manager sees it no longer enabled and ready and resets
 * it, and the client's I/O goes on. */
Test(faults, garbage_in_the_registers_gets_the_controller_reset)
{
	const char *emu[] = { "--backing", "ram:8M", NULL };
	static const uint32_t junk[] = { 0xdeadbeef, 0, 0x00460001, 0xffffffff };
	struct sio_device *dev;
	struct sio_segment *bar;
	struct done d[4];
	struct cli c;
	uint8_t *regs;
	char *log;

	cluster_up(&C, 2, 32, emu);
	cli_open(&c, 1);
	sio_nvme_client_set_timeout(c.cl, 1000);
	cr_assert_eq(cli_write(&c, 900, 10), 0, "%s", sio_errmsg());
	cr_assert_eq(sio_device_borrow(c.f, sio_device_id(sio_nvme_client_device(c.cl)),
				       SIO_BORROW_SHARED, &dev), 0, "%s", sio_errmsg());
	cr_assert_eq(sio_device_bar(dev, 0, &bar), 0, "%s", sio_errmsg());
	cr_assert_eq(sio_segment_map(bar, (void **)&regs), 0, "%s", sio_errmsg());
	for (unsigned i = 0; i < sizeof(junk) / sizeof(junk[0]); i++) {
		for (uint32_t off = NVME_REG_CC; off < NVME_REG_ACQ + 8; off += 4)
			__atomic_store_n((uint32_t *)(regs + off), junk[i] ^ off, __ATOMIC_RELEASE);
		stalled_reads(&c, d);
		cr_expect_eq(cli_verify(&c, 900, 10), 0, "after junk 0x%08x: %s", junk[i],
			     sio_errmsg());
	}
	log = cluster_output(&C, "nvme-manager", "err");
	cr_expect(strstr(log, "ready again after the reset"), "%s", log);
	sio_segment_close(bar);
	sio_device_close(dev);
	cli_close(&c);
}

/* The completion the controller posted next, before the host takes it. */
static volatile struct sio_nvme_cpl *posted(struct sio_nvme_ioq *q)
{
	struct sio_nvme_queue *h = &q->qp[0].q;
	volatile struct sio_nvme_cpl *e = &h->cq[h->cq_head];
	uint64_t t0 = now_ms();

	while ((e->status & 1u) != h->cq_phase) {
		cr_assert_lt(now_ms() - t0, 5000, "the controller posted no completion");
		usleep(100);
	}
	return e;
}

/* Completions a controller could forge, written over real ones in the CQ
 * before the host reads them. A wild SQ head used to leave the queue
 * looking full with nothing in flight: sio_nvme_read() then returned 0
 * from a submission that never went in and waited forever. A completion
 * under an id the host did not issue is counted and not delivered, and the
 * command it stood for is sent again when the queue times out, not hung. */
Test(faults, forged_completions_cannot_hang_a_read)
{
	const char *emu[] = { "--backing", "ram:8M", NULL };
	struct sio_nvme_ioq_info qi;
	volatile struct sio_nvme_cpl *e;
	struct sio_nvme_queue *h;
	struct done d = { 0 };
	struct cli c;
	uint64_t t0;
	int i, ret;

	cluster_up(&C, 2, 32, emu);
	cli_open(&c, 1);
	sio_nvme_client_set_timeout(c.cl, 1000);
	cr_assert_eq(cli_write(&c, 1000, 11), 0, "%s", sio_errmsg());
	h = &c.q->qp[0].q;

	/* A real completion that reports the SQ head one past the tail. */
	cr_assert_eq(sio_nvme_ioq_read(c.q, 1, 1000, 16, c.buf, 0, on_done, &d), 0, "%s",
		     sio_errmsg());
	e = posted(c.q);
	e->sq_head = (uint16_t)((h->sq_tail + 1) % h->size);
	cr_assert_eq(sio_nvme_ioq_wait(c.q), 0, "%s", sio_errmsg());
	cr_expect_eq(d.n, 1);
	cr_expect_eq(d.err, 0);
	for (i = 0; i < 2 * (int)h->size; i++) {
		ret = cli_verify(&c, 1000, 11);
		cr_assert_eq(ret, 0, "read %d after the wild SQ head: %d %s", i, ret,
			     sio_errmsg());
	}

	/* The next completion comes under another generation of its id. */
	memset(&d, 0, sizeof(d));
	cr_assert_eq(sio_nvme_ioq_read(c.q, 1, 1000, 16, c.buf, 16384, on_done, &d), 0, "%s",
		     sio_errmsg());
	e = posted(c.q);
	e->cid ^= 0x8000;
	/* Other commands go on around it. */
	cr_assert_eq(cli_verify(&c, 1000, 11), 0, "%s", sio_errmsg());
	sio_nvme_ioq_info(c.q, &qi);
	cr_expect_eq(qi.stale, 1, "the forged completion is counted (%llu)",
		     (unsigned long long)qi.stale);
	cr_expect_eq(h->stale, 1, "as a stale id");
	cr_expect_eq(d.n, 0, "and not delivered");
	/* The command it stood for gets no completion: once the queue times
	 * out, its queue pair is reset and the command sent again. */
	t0 = now_ms();
	ret = sio_nvme_ioq_wait(c.q);
	cr_expect_eq(ret, 0, "%d %s", ret, sio_errmsg());
	cr_expect_lt(now_ms() - t0, 10000);
	cr_expect_eq(d.n, 1);
	cr_expect_eq(d.err, 0);
	sio_nvme_ioq_info(c.q, &qi);
	cr_expect_eq(qi.recoveries, 1);
	cr_expect_eq(mismatches(&(struct cli){ .buf = &(struct sio_nvme_buf){
		.va = (uint8_t *)c.buf->va + 16384 } }, 11, 16 * 512), 0);
	cli_close(&c);
}

/* Do Not Retry: a multipath queue sends a command that met a Data Transfer
 * Error again (a link failing under it looks just so), but never one the
 * controller marked DNR, as Linux's nvme_decide_disposition(). */
Test(faults, multipath_resends_transfer_errors_unless_do_not_retry)
{
	const char *emu[] = { "--backing", "ram:8M", NULL };
	struct sio_fabric_config cfg;
	struct sio_nvme_ioq_info qi;
	struct sio_nvme_qspec spec;
	struct sio_nvme_buf wild;
	volatile struct sio_nvme_cpl *e;
	struct done d = { 0 };
	struct cli c;
	uint64_t before;

	/* Two adapters per node, so the queue has a backup path. */
	memset(&C, 0, sizeof(C));
	snprintf(C.fabric, sizeof(C.fabric), "dnr-%d", (int)getpid());
	snprintf(C.dir, sizeof(C.dir), "/tmp/dnr-%d", (int)getpid());
	mkdir(C.dir, 0700);
	memset(&cfg, 0, sizeof(cfg));
	cfg.nodes = 2;
	cfg.topology = SIO_TOPO_SWITCH;
	cfg.adapters = 2;
	sio_fabric_destroy(C.fabric);
	cr_assert_eq(sio_fabric_create(C.fabric, &cfg), 0, "fabric: %s", sio_errmsg());
	cluster_start_emu(&C, emu);
	cluster_start_mgr(&C);

	memset(&c, 0, sizeof(c));
	cr_assert_eq(sio_fabric_open(C.fabric, 1, &c.f), 0, "%s", sio_errmsg());
	cr_assert_eq(sio_nvme_client_open(c.f, SIO_DEVICE_ANY, &c.cl), 0, "%s", sio_errmsg());
	cr_assert_eq(sio_nvme_qspec_parse("multipath,depth=32", &spec), 0);
	cr_assert_eq(sio_nvme_ioq_create(c.cl, &spec, &c.q), 0, "%s", sio_errmsg());
	cr_assert_eq(sio_nvme_buf_alloc(c.cl, 64 << 10, &c.buf), 0, "%s", sio_errmsg());
	/* A buffer mapped for the device on neither path. */
	wild = *c.buf;
	wild.bus = wild.bus2 = 0x7f5500000000ull;

	cr_assert_eq(sio_nvme_ioq_read(c.q, 1, 0, 8, &wild, 0, on_done, &d), 0, "%s",
		     sio_errmsg());
	cr_assert_eq(sio_nvme_ioq_wait(c.q), 0, "%s", sio_errmsg());
	sio_nvme_ioq_info(c.q, &qi);
	cr_expect_eq(d.n, 1);
	cr_expect_eq(d.err, -EIO);
	cr_expect_eq(d.status, NVME_SC_DATA_XFER_ERROR, "status 0x%x", d.status);
	cr_expect_eq(qi.resubmitted, 4, "sent again %llu times, want 4",
		     (unsigned long long)qi.resubmitted);
	before = qi.resubmitted;

	/* The same error with DNR set (in the entry as posted): ended at once. */
	memset(&d, 0, sizeof(d));
	cr_assert_eq(sio_nvme_ioq_read(c.q, 1, 0, 8, &wild, 0, on_done, &d), 0, "%s",
		     sio_errmsg());
	e = posted(c.q);
	cr_assert_eq(SIO_NVME_STATUS_CODE(e->status), NVME_SC_DATA_XFER_ERROR);
	e->status |= 0x8000;
	cr_assert_eq(sio_nvme_ioq_wait(c.q), 0, "%s", sio_errmsg());
	sio_nvme_ioq_info(c.q, &qi);
	cr_expect_eq(d.n, 1);
	cr_expect_eq(d.err, -EIO);
	cr_expect_eq(d.status, NVME_SC_DATA_XFER_ERROR, "status 0x%x", d.status);
	cr_expect_eq(qi.resubmitted, before, "a DNR completion was sent again");

	/* Good I/O goes on. */
	cr_expect_eq(cli_write(&c, 64, 12), 0, "%s", sio_errmsg());
	cr_expect_eq(cli_verify(&c, 64, 12), 0, "%s", sio_errmsg());
	cli_close(&c);
}

/* A run directory on an 8 MiB tmpfs: a client whose buffers do not fit is
 * refused when it makes them, naming the directory and the size; the
 * controller's model, which writes read data into them, used to die of
 * SIGBUS on the first page tmpfs had no room for, taking the device from
 * every client. */
Test(faults, full_run_directory_is_an_error_not_a_crash)
{
	const char *emu[] = { "--backing", "ram:16M", NULL };
	const char *argv[] = { "NVME_CLIENT", "--fabric", NULL, "--node", NULL, "--op", "read",
			       "--lba", "0", "--count", "16384", "--bs", "1m", "--qd", "16",
			       "--time", "2", NULL };
	char dir[128], tag[2][16], node[2][4], *err;
	pid_t pid[2];
	struct cli c;
	int i, st;

	snprintf(dir, sizeof(dir), "/tmp/faults-tmpfs-%d", (int)getpid());
	mkdir(dir, 0700);
	if (geteuid() || mount("tmpfs", dir, "tmpfs", 0, "size=8m,mode=0700")) {
		rmdir(dir);
		cr_skip_test("skipped: mounting an 8 MiB tmpfs needs root (%s)", strerror(errno));
	}
	setenv("SMARTIO_RUNDIR", dir, 1);
	cluster_up(&C, 3, 32, emu);
	argv[2] = C.fabric;
	for (i = 0; i < 2; i++) {
		snprintf(tag[i], sizeof(tag[i]), "reader-%d", i + 1);
		snprintf(node[i], sizeof(node[i]), "%d", i + 1);
		argv[4] = node[i];
		pid[i] = cluster_spawn(&C, tag[i], argv);
	}
	for (i = 0; i < 2; i++) {
		st = cluster_wait(pid[i], 60000);
		err = cluster_output(&C, tag[i], "err");
		if (st)
			cr_expect(strstr(err, "no room for") && strstr(err, dir),
				  "%s exited %d: %s", tag[i], st, err);
	}
	cr_expect_eq(waitpid(C.emu, &st, WNOHANG), 0, "nvme-emu died (status 0x%x): %s", st,
		     cluster_output(&C, "nvme-emu", "err"));
	/* The device still serves a client that fits. */
	setenv("SMARTIO_NVME_ARENA_MB", "1", 1);
	cli_open(&c, 1);
	cr_expect_eq(cli_write(&c, 64, 14), 0, "%s", sio_errmsg());
	cr_expect_eq(cli_verify(&c, 64, 14), 0, "%s", sio_errmsg());
	cli_close(&c);
	unsetenv("SMARTIO_NVME_ARENA_MB");
	cluster_down(&C);
	memset(&C, 0, sizeof(C));
	unsetenv("SMARTIO_RUNDIR");
	umount2(dir, MNT_DETACH);
	rmdir(dir);
}

/* The fabric files of @size bytes (segments are files seg.SLOT.GEN in the
 * fabric's directory), cut to nothing or filled with random bytes. */
static int damage_files(uint64_t size, bool cut)
{
	char dir[300], path[600];
	struct dirent *e;
	struct stat st;
	int n = 0;
	DIR *d;

	cluster_dir(&C, dir, sizeof(dir));
	d = opendir(dir);
	cr_assert(d, "cannot read %s", dir);
	while ((e = readdir(d))) {
		snprintf(path, sizeof(path), "%s/%s", dir, e->d_name);
		if (strncmp(e->d_name, "seg.", 4) || stat(path, &st) || (uint64_t)st.st_size != size)
			continue;
		if (cut) {
			cr_assert_eq(truncate(path, 0), 0);
		} else {
			FILE *fp = fopen(path, "r+");
			uint32_t x = 0x12345678u;

			cr_assert(fp);
			for (uint64_t i = 0; i < size / 4; i++) {
				x = x * 1664525u + 1013904223u;
				fwrite(&x, 4, 1, fp);
			}
			fclose(fp);
		}
		n++;
	}
	closedir(d);
	return n;
}

/* A writer on node 2 for @secs seconds, its report in JSON: verified. */
static pid_t writer(const char *secs)
{
	const char *argv[] = { "NVME_CLIENT", "--fabric", C.fabric, "--node", "2", "--op",
			       "write-verify", "--lba", "8192", "--count", "2048", "--qd", "4",
			       "--time", secs, "--json", NULL };

	return cluster_spawn(&C, "writer", argv);
}

/* Random bytes over the whole mailbox, slots and header: the manager
 * neither trusts nor logs what it finds (it logged clients "pid 1726429678
 * on node 1226452539" and served no new client); it writes its header and
 * its clients' slots back, answers what they asked "ask again", frees the
 * rest; running clients go on and new ones are served. */
Test(faults, random_bytes_over_the_mailbox_are_mended_not_trusted)
{
	const char *emu[] = { "--backing", "ram:16M", NULL };
	struct cli c, n;
	uint8_t id[4096];
	pid_t w;
	char *log;
	int st;

	cluster_up(&C, 4, 32, emu);
	cli_open(&c, 1);
	cr_assert_eq(cli_write(&c, 64, 15), 0, "%s", sio_errmsg());
	w = writer("4");
	usleep(1000000);
	cr_assert_eq(damage_files(SIO_NVME_MBOX_SIZE, false), 1, "no mailbox file");
	usleep(300000);
	cli_open(&n, 3);
	cr_expect_eq(cli_write(&n, 128, 16), 0, "%s", sio_errmsg());
	cr_expect_eq(cli_verify(&n, 128, 16), 0, "%s", sio_errmsg());
	cli_close(&n);
	cr_expect_eq(sio_nvme_client_identify(c.cl, NVME_IDENTIFY_CNS_CTRL, 0, id), 0, "%s",
		     sio_errmsg());
	cr_expect_eq(cli_verify(&c, 64, 15), 0, "%s", sio_errmsg());
	st = cluster_wait(w, 60000);
	cr_expect_eq(st, 0, "the running client: %s", cluster_output(&C, "writer", "err"));
	cli_close(&c);
	cr_expect_eq(waitpid(C.mgr, NULL, WNOHANG), 0, "the manager died");
	log = cluster_output(&C, "nvme-manager", "err");
	cr_expect(strstr(log, "another process wrote over the mailbox"), "%s", log);
	cr_expect(!strstr(log, "is gone"), "a forged slot was taken for a client: %s", log);
}

/* The controller and the manager live on after a fault another process
 * made, and serve a new client on node 3: blocks at 128 written with
 * @seed's pattern read back the same. */
static void shared_pieces_serve(uint32_t seed)
{
	struct cli n;

	cr_expect_eq(waitpid(C.mgr, NULL, WNOHANG), 0, "the manager died: %s",
		     cluster_output(&C, "nvme-manager", "err"));
	cr_expect_eq(waitpid(C.emu, NULL, WNOHANG), 0, "the controller died: %s",
		     cluster_output(&C, "nvme-emu", "err"));
	cli_open(&n, 3);
	cr_expect_eq(cli_write(&n, 128, seed), 0, "%s", sio_errmsg());
	cr_expect_eq(cli_verify(&n, 128, seed), 0, "%s", sio_errmsg());
	cli_close(&n);
}

/* truncate -s 0 on the mailbox and on a running client's arena (its CQ and
 * buffers): SIGBUS killed the manager, the client and the controller's
 * model. The files are grown back where they are touched, by whichever
 * process touches them first, and every process goes on sharing them (the
 * controller once covered the arena with private zeros when the client had
 * grown it first, and the client's queue never completed again); the
 * mailbox is rebuilt, and completions the cut took are waited for, then
 * the queue pair made again and the commands sent again. What the cut
 * zeroed of the commands in flight is lost: an SQ entry (that command ends
 * with an error that says so) or a buffer (the writer's verification finds
 * those blocks wrong); the writer says so and exits 1. No more than the
 * commands in flight fail, none for want of a completion, and no one dies. */
Test(faults, truncated_files_kill_no_one)
{
	const char *emu[] = { "--backing", "ram:16M", NULL };
	struct json_object *o;
	int64_t qd;
	char *out;
	pid_t w;
	int st;

	cluster_up(&C, 4, 32, emu);
	w = writer("5");
	usleep(1500000);
	cr_assert_eq(damage_files(SIO_NVME_MBOX_SIZE, true), 1, "no mailbox file");
	cr_assert_geq(damage_files(64ull << 20, true), 1, "no client arena");
	st = cluster_wait(w, 60000);
	out = cluster_output(&C, "writer", "err");
	cr_expect(st == 0 || st == 1, "the running client (status %d): %s", st, out);
	cr_expect(!strstr(out, "timed out"), "the running client's queue died: %s", out);
	o = cluster_json(&C, "writer");
	/* the commands in flight at the cut, and their blocks, at most */
	qd = cluster_jint(o, "qd", 0);
	cr_expect_leq(cluster_jint(o, "errors", -1), qd, "more errors than the cut explains");
	cr_expect_leq(cluster_jint(o, "mismatches", -1),
		      qd * cluster_jint(o, "io_bytes", 0) / cluster_jint(o, "block_size", 1),
		      "more blocks wrong than the cut explains");
	cr_expect_gt(cluster_jint(o, "ios", 0), 0);
	json_object_put(o);
	/* said by whichever process touched a page of it first */
	st = 0;
	for (int i = 0; i < 3; i++) {
		const char *tag[] = { "writer", "nvme-emu", "nvme-manager" };

		out = cluster_output(&C, tag[i], "err");
		st += !!strstr(out, "was shrunk by another process");
		cr_expect(!strstr(out, "cannot be reached any more"),
			  "%s left the shared file for private zeros: %s", tag[i], out);
	}
	cr_expect_geq(st, 1, "no process said a file was shrunk");
	shared_pieces_serve(17);
}

/* Random bytes over a running client's arena (its SQ, CQ and buffers):
 * what the controller fetches from there is input like any other, so it
 * fails those commands or that queue, never itself; the manager lives
 * on; the client, whose completions are garbage too, ends on its own
 * (an error that says why, or a mismatch), not killed and not hung; a new
 * client is served and its data verified. */
Test(faults, random_bytes_over_a_queue_fail_that_queue_not_the_controller)
{
	const char *emu[] = { "--backing", "ram:16M", NULL };
	pid_t w;
	int st;

	cluster_up(&C, 4, 32, emu);
	w = writer("4");
	usleep(1500000);
	cr_assert_geq(damage_files(64ull << 20, false), 1, "no client arena");
	st = cluster_wait(w, 60000);
	cr_expect(st == 0 || st == 1, "the running client (status %d): %s", st,
		  cluster_output(&C, "writer", "err"));
	shared_pieces_serve(18);
}

/* What a file holds, up to 63 bytes. */
static const char *slurp(const char *path)
{
	static char buf[64];
	FILE *fp = fopen(path, "r");
	size_t n = fp ? fread(buf, 1, sizeof(buf) - 1, fp) : 0;

	if (fp)
		fclose(fp);
	buf[n] = 0;
	return buf;
}

/* --ready-file and --ns-state pointed at symlinks planted by someone
 * else: each is replaced by a file of the program's own, and the files the
 * links name are not written through (root's nvme-emu overwrote a
 * symlink's target with its device id). */
Test(faults, planted_symlinks_are_not_written_through)
{
	char victim[300], ready[300], state[300], tmp[320];
	const char *argv[] = { "NVME_EMU", "--fabric", NULL, "--node", "0", "--backing", "ram:8M",
			       "--ready-file", ready, "--ns-state", state, NULL };
	struct sio_fabric_config cfg = { .nodes = 2, .topology = SIO_TOPO_SWITCH, .adapters = 1 };
	struct stat st;
	int i, go[2];

	memset(&C, 0, sizeof(C));
	snprintf(C.fabric, sizeof(C.fabric), "planted-%d", (int)getpid());
	snprintf(C.dir, sizeof(C.dir), "/tmp/planted-%d", (int)getpid());
	mkdir(C.dir, 0700);
	sio_fabric_destroy(C.fabric);
	cr_assert_eq(sio_fabric_create(C.fabric, &cfg), 0, "%s", sio_errmsg());
	snprintf(victim, sizeof(victim), "%s/victim", C.dir);
	snprintf(ready, sizeof(ready), "%s/ready", C.dir);
	snprintf(state, sizeof(state), "%s/ns-state", C.dir);
	FILE *fp = fopen(victim, "w");
	cr_assert(fp);
	fputs("precious\n", fp);
	fclose(fp);
	cr_assert_eq(symlink(victim, ready), 0);
	cr_assert_eq(symlink(victim, state), 0);
	argv[2] = C.fabric;
	argv[0] = getenv("NVME_EMU");
	cr_assert(argv[0]);
	/* the temporaries' names too, as they were: PATH.tmpPID, PATH.tmp */
	cr_assert_eq(pipe(go), 0);
	C.emu = fork();
	cr_assert_geq(C.emu, 0);
	if (!C.emu) {
		char c;

		close(go[1]);
		dup2(open("/dev/null", O_WRONLY), 1);
		if (read(go[0], &c, 1) == 1)
			execv(argv[0], (char *const *)argv);
		_exit(127);
	}
	snprintf(tmp, sizeof(tmp), "%s.tmp%d", ready, (int)C.emu);
	cr_assert_eq(symlink(victim, tmp), 0);
	snprintf(tmp, sizeof(tmp), "%s.tmp", state);
	cr_assert_eq(symlink(victim, tmp), 0);
	cr_assert_eq(write(go[1], "g", 1), 1);
	close(go[0]);
	close(go[1]);
	for (i = 0; i < 500; i++) {
		if (!lstat(ready, &st) && S_ISREG(st.st_mode))
			break;
		usleep(10000);
	}
	cr_expect(S_ISREG(st.st_mode), "the ready file is still a symlink");
	cr_expect(!lstat(state, &st) && S_ISREG(st.st_mode), "the --ns-state file is still a "
		  "symlink");
	cr_expect_str_eq(slurp(victim), "precious\n", "a symlink's target was written through");
	cr_expect(atoi(slurp(ready)) > 0, "ready file: '%s'", slurp(ready));
}

/* A client's stats block on @fabric as another process reads it: 0 when it
 * was found, the first queue pair's counters in @out. */
static int client_qstats(struct sio_fabric *f, int pid, struct sio_nvme_qstats *out)
{
	struct sio_nvme_client_stats cs[8];
	int n = sio_nvme_stats_read(f, SIO_DEVICE_ANY, cs, 8);

	for (int i = 0; i < n && i < 8; i++)
		if (cs[i].pid == pid && cs[i].nqueues) {
			*out = cs[i].q[0];
			return 0;
		}
	return -1;
}

/* A link that goes down for 1.5 s under a running nvme-client, whose
 * timeout is 1 s: its commands time out, the queue pair is made again and
 * what it held sent again, and the I/O completes. The run's report says
 * so (it used to end with "errors 0" and no word of it), as does
 * smartio nvme stats (the client's shared counters) while it runs. */
Test(faults, link_down_mid_run_is_in_the_report)
{
	const char *emu[] = { "--backing", "ram:16M", NULL };
	const char *argv[] = { "NVME_CLIENT", "--fabric", C.fabric, "--node", "1", "--qd", "4",
			       "--time", "10s", "--timeout", "1000ms", "--progress", "0", "--json",
			       NULL };
	struct sio_nvme_qstats qs = { 0 };
	struct json_object *o;
	struct sio_fabric *admin;
	pid_t pid;
	int st;

	cluster_up(&C, 2, 32, emu);
	argv[2] = C.fabric;
	cr_assert_eq(sio_fabric_open(C.fabric, 0, &admin), 0, "%s", sio_errmsg());
	pid = cluster_spawn(&C, "flapped", argv);
	usleep(1000000);
	cr_assert_eq(sio_link_set(admin, 1, -1, false), 0, "%s", sio_errmsg());
	usleep(1500000);
	cr_assert_eq(sio_link_set(admin, 1, -1, true), 0, "%s", sio_errmsg());
	/* the counters, shared while the client runs: give it time to recover
	 * (it runs 10 s; seconds go by on a loaded machine) */
	for (int i = 0; i < 60 && !qs.recoveries; i++) {
		usleep(100000);
		client_qstats(admin, pid, &qs);
	}
	cr_expect_geq(qs.timeouts, 1, "smartio nvme stats shows no timeout");
	cr_expect_geq(qs.recoveries, 1, "smartio nvme stats shows no recovery");
	st = cluster_wait(pid, 60000);
	cr_expect_eq(st, 0, "a recovered run: %s", cluster_output(&C, "flapped", "err"));
	o = cluster_json(&C, "flapped");
	cr_expect_eq(cluster_jint(o, "errors", -1), 0);
	cr_expect_geq(cluster_jint(o, "faults.link_downs", -1), 1, "%s",
		      json_object_to_json_string(o));
	cr_expect_geq(cluster_jint(o, "faults.timeouts", -1), 1);
	cr_expect_geq(cluster_jint(o, "faults.recoveries", -1), 1);
	cr_expect_geq(cluster_jint(o, "faults.resubmitted", -1), 1);
	json_object_put(o);
	sio_fabric_close(admin);
}

/* A client whose controller stopped answering says where it stands when
 * asked (SIGUSR1, as the vm storm's watchdog asks a client that said
 * nothing for longer than its timeouts): the I/Os done, the last
 * completion, the queue's tails and heads, each command in flight. */
Test(faults, a_stuck_client_says_where_it_stands)
{
	const char *emu[] = { "--backing", "ram:16M", NULL };
	/* one write pass longer than the case: the end of a pass waits for
	 * what it has in flight, and the controller stopped there would leave
	 * one I/O in flight, not two */
	const char *argv[] = { "NVME_CLIENT", "--fabric", C.fabric, "--node", "1", "--qd", "2",
			       "--count", "1024", "--ios", "1000000000", "--time", "60s",
			       "--timeout", "60s", "--progress", "100ms", NULL };
	const char *err = "";
	pid_t pid;

	cluster_up(&C, 2, 32, emu);
	argv[2] = C.fabric;
	pid = cluster_spawn(&C, "stuck", argv);
	for (int i = 0; i < 300 && !strstr(cluster_output(&C, "stuck", "err"), "IOPS"); i++)
		usleep(100000);
	cr_assert(strstr(cluster_output(&C, "stuck", "err"), "IOPS"), "the client ran no I/O: %s",
		  cluster_output(&C, "stuck", "err"));
	cr_assert_eq(kill(C.emu, SIGSTOP), 0);
	usleep(300000);	/* what was in flight stays there */
	cr_assert_eq(kill(pid, SIGUSR1), 0);
	for (int i = 0; i < 100 && !strstr(err, "I/O 1:"); i++) {
		usleep(100000);
		err = cluster_output(&C, "stuck", "err");
	}
	kill(C.emu, SIGCONT);
	kill(pid, SIGKILL);
	cluster_wait(pid, 10000);
	cr_expect(strstr(err, "nvme-client: state: write pass") ||
		  strstr(err, "nvme-client: state: read pass"), "no state: %s", err);
	cr_expect(strstr(err, "2 in flight, SQ tail"), "not both I/Os in flight: %s", err);
	cr_expect(strstr(err, "CQ head") && strstr(err, "ms ago"), "%s", err);
	cr_expect(strstr(err, "nvme-client: state:   I/O 0: block ") &&
		  strstr(err, "nvme-client: state:   I/O 1: block "), "%s", err);
}

/* A fabric destroyed under a running client: it stops, prints what it did
 * until then (marked partial) and exits 1. */
Test(faults, destroyed_fabric_ends_the_run_with_a_partial_report)
{
	const char *emu[] = { "--backing", "ram:16M", NULL };
	const char *argv[] = { "NVME_CLIENT", "--fabric", C.fabric, "--node", "1", "--qd", "2",
			       "--time", "30s", "--progress", "0", NULL };
	char *out;
	pid_t pid;
	int st;

	cluster_up(&C, 2, 32, emu);
	argv[2] = C.fabric;
	pid = cluster_spawn(&C, "cut", argv);
	usleep(1000000);
	cr_assert_eq(sio_fabric_destroy_flags(C.fabric, SIO_DESTROY_FORCE), 0, "%s", sio_errmsg());
	st = cluster_wait(pid, 20000);
	cr_expect_eq(st, 1, "exit status %d", st);
	out = cluster_output(&C, "cut", "out");
	cr_expect(strstr(out, " I/Os, "), "no report: %s", out);
	cr_expect(strstr(out, "partial: the fabric was destroyed"), "%s", out);
	cr_expect(strstr(cluster_output(&C, "cut", "err"), "was destroyed"), "%s",
		  cluster_output(&C, "cut", "err"));
}
