/* SPDX-License-Identifier: MIT */
/*
 * Manager failover: a manager killed with SIGKILL while clients do verified
 * I/O, and a new one started, takes the controller and the clients' queues
 * over without a reset. The clients see no I/O error and no mismatch, their
 * admin requests wait for the new manager, and a new client joins.
 */

#include <criterion/criterion.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <smartio/smartio.h>
#include <smartio/nvme/client.h>
#include "cluster.h"

static struct cluster C;

static void down(void)
{
	if (C.emu)	/* one a test stopped stops on SIGTERM too */
		kill(C.emu, SIGCONT);
	cluster_down(&C);
}

TestSuite(failover, .fini = down, .timeout = 240);

static const char *emu[] = { "--backing", "ram:64M", NULL };

static uint64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

/* nvme-client on @node: write and verify its own 1 MiB for @secs seconds. */
static pid_t io_client(int node, const char *secs, char *tag, size_t len)
{
	static char lba[16][16], nodes[64][12];
	const char *argv[] = { "NVME_CLIENT", "--fabric", C.fabric, "--node", nodes[node],
			       "--op", "write-verify", "--lba", lba[node % 16], "--count", "2048",
			       "--bs", "4k", "--qd", "4", "--random", "--seed", nodes[node],
			       "--time", secs, NULL };

	snprintf(nodes[node], sizeof(nodes[node]), "%d", node);
	snprintf(lba[node % 16], sizeof(lba[0]), "%d", (node % 16) * 2048);
	snprintf(tag, len, "client-%d", node);
	return cluster_spawn(&C, tag, argv);
}

/* A client joins on @node: its queue pair is created; then it leaves. */
static void join(int node)
{
	struct sio_fabric *f;
	struct sio_nvme_client *cl;
	struct sio_nvme_ioq *q;

	cr_assert_eq(sio_fabric_open(C.fabric, node, &f), 0, "%s", sio_errmsg());
	cr_assert_eq(sio_nvme_client_open(f, SIO_DEVICE_ANY, &cl), 0, "%s", sio_errmsg());
	cr_assert_eq(sio_nvme_ioq_create(cl, NULL, &q), 0, "%s", sio_errmsg());
	sio_nvme_ioq_close(q);
	sio_nvme_client_close(cl);
	sio_fabric_close(f);
}

/* Every I/O client ended well: no I/O error, no mismatch. */
static void expect_clients_ok(const pid_t *pid, char (*tags)[32], int n)
{
	for (int i = 0; i < n; i++) {
		int st = cluster_wait(pid[i], 90000);

		cr_expect_eq(st, 0, "%s exited %d: %s", tags[i], st,
			     cluster_output(&C, tags[i], "err"));
	}
}

static void kill_manager(void)
{
	cr_assert_eq(kill(C.mgr, SIGKILL), 0);
	cr_assert_eq(cluster_wait(C.mgr, 5000), 128 + SIGKILL);
	C.mgr = 0;
}

/* 16 clients run verified I/O for 30 s; the manager is killed 5 s in and a
 * new one started 2 s later. */
Test(failover, manager_killed_and_restarted_under_16_clients)
{
	enum { N = 16 };
	char tags[N][32], *log;
	pid_t pid[N];
	uint64_t t0;
	int i;

	cluster_up(&C, N + 2, 64, emu);
	for (i = 0; i < N; i++)
		pid[i] = io_client(i + 1, "30", tags[i], sizeof(tags[i]));
	sleep(5);
	kill_manager();
	sleep(2);
	cluster_start_mgr(&C);
	log = cluster_output(&C, "nvme-manager", "err");
	cr_expect(strstr(log, "took over device"), "the new manager reset the controller: %s",
		  log);

	/* A new client joins: its queue pair is created. */
	t0 = now_ms();
	join(N + 1);
	cr_log_info("a new client joined (and left) %llu ms after the new manager was "
		    "ready", (unsigned long long)(now_ms() - t0));
	expect_clients_ok(pid, tags, N);
	log = cluster_output(&C, "nvme-manager", "err");
	cr_expect(!strstr(log, "controller failed"), "%s", log);
}

/* A standby manager on another node takes over when the active one is
 * killed, under 8 clients doing verified I/O for 10 s. */
Test(failover, standby_on_another_node_takes_over)
{
	enum { N = 8 };
	const char *argv[] = { "NVME_MANAGER", "--fabric", C.fabric, "--node", "9",
			       "--standby", "--ready-file", NULL, "--shadow-doorbells", "on",
			       NULL };
	char tags[N][32], ready[300], *log;
	pid_t pid[N], sb;
	FILE *rf;
	int i;

	cluster_up(&C, N + 2, 64, emu);
	argv[2] = C.fabric;
	snprintf(ready, sizeof(ready), "%s/standby.ready", C.dir);
	argv[7] = ready;
	sb = cluster_spawn(&C, "standby", argv);
	for (i = 0; i < N; i++)
		pid[i] = io_client(i + 1, "10", tags[i], sizeof(tags[i]));
	sleep(3);
	log = cluster_output(&C, "standby", "err");
	cr_expect(strstr(log, "standing by on node 9"), "%s", log);
	cr_expect(access(ready, F_OK) != 0, "the standby served while the manager ran");
	kill_manager();
	C.mgr = sb;	/* stopped at the end as the manager */
	/* The take-over is logged at once; the ready file follows it, after
	 * an fsync: a CI run saw it come over 6 s after the log. A bound,
	 * not a speed target. */
	for (i = 0; i < 1500 && access(ready, F_OK) != 0; i++)
		usleep(20000);
	rf = fopen(ready, "r");
	cr_assert(rf, "the standby did not take over: %s", cluster_output(&C, "standby", "err"));
	fclose(rf);
	log = cluster_output(&C, "standby", "err");
	cr_expect(strstr(log, "took over device"), "%s", log);
	join(N + 1);
	expect_clients_ok(pid, tags, N);
}

/* A client that dies while no manager runs has its queues reclaimed by the
 * next one; a client alive across the restart is served by it. */
Test(failover, dead_clients_reclaimed_live_ones_served)
{
	struct sio_fabric *f;
	struct sio_nvme_client *cl;
	struct sio_nvme_ioq *q;
	char tag[32], *log;
	uint8_t id[4096];
	pid_t dead;
	int ret;

	cluster_up(&C, 4, 32, emu);
	dead = io_client(2, "60", tag, sizeof(tag));
	cr_assert_eq(sio_fabric_open(C.fabric, 1, &f), 0, "%s", sio_errmsg());
	cr_assert_eq(sio_nvme_client_open(f, SIO_DEVICE_ANY, &cl), 0, "%s", sio_errmsg());
	cr_assert_eq(sio_nvme_ioq_create(cl, NULL, &q), 0, "%s", sio_errmsg());
	sleep(1);
	kill_manager();
	kill(dead, SIGKILL);
	cluster_wait(dead, 5000);
	cluster_start_mgr(&C);
	/* An admin request after the take-over is served. */
	ret = sio_nvme_client_identify(cl, NVME_IDENTIFY_CNS_CTRL, 0, id);
	cr_expect_eq(ret, 0, "identify after the take-over: %s", sio_errmsg());
	/* The live client's queue pair was kept, and is deleted by its owner. */
	sio_nvme_ioq_close(q);
	sio_nvme_client_close(cl);
	sio_fabric_close(f);
	for (int i = 0; i < 100; i++) {
		log = cluster_output(&C, "nvme-manager", "err");
		if (strstr(log, "is gone: deleted 1 queue pair"))
			break;
		usleep(50000);
	}
	cr_expect(strstr(log, "took over device"), "%s", log);
	cr_expect(strstr(log, "is gone: deleted 1 queue pair"),
		  "the dead client's queue pair was not reclaimed: %s", log);
}

struct feat_call {
	struct sio_nvme_client *cl;
	uint32_t res;
	int ret;
	char err[256];
};

static void *get_features(void *arg)
{
	struct feat_call *c = arg;

	c->ret = sio_nvme_client_get_features(c->cl, NVME_FEAT_FID_NUM_QUEUES, 0, &c->res);
	snprintf(c->err, sizeof(c->err), "%s", c->ret ? sio_errmsg() : "");
	return NULL;
}

/* An admin request made while no manager runs waits for the next one. */
Test(failover, admin_request_waits_for_the_new_manager)
{
	struct sio_fabric *f;
	struct feat_call c = { 0 };
	pthread_t t;

	cluster_up(&C, 2, 32, emu);
	cr_assert_eq(sio_fabric_open(C.fabric, 1, &f), 0, "%s", sio_errmsg());
	cr_assert_eq(sio_nvme_client_open(f, SIO_DEVICE_ANY, &c.cl), 0, "%s", sio_errmsg());
	kill_manager();
	cr_assert_eq(pthread_create(&t, NULL, get_features, &c), 0);
	sleep(1);
	cluster_start_mgr(&C);
	pthread_join(t, NULL);
	cr_expect_eq(c.ret, 0, "Get Features across the restart: %s", c.err);
	cr_expect_gt(c.res, 0);
	sio_nvme_client_close(c.cl);
	sio_fabric_close(f);
}

static void done_cb(void *arg, int err, uint16_t status)
{
	(void)status;
	*(int *)arg = err ? -1 : 1;
}

/* An in-process client on node 1 with a queue pair and a 4 KiB buffer. */
struct cli {
	struct sio_fabric *f;
	struct sio_nvme_client *cl;
	struct sio_nvme_ioq *q;
	struct sio_nvme_buf *buf;
};

static void cli_open(struct cli *c)
{
	if (!c->f)
		cr_assert_eq(sio_fabric_open(C.fabric, 1, &c->f), 0, "%s", sio_errmsg());
	cr_assert_eq(sio_nvme_client_open(c->f, SIO_DEVICE_ANY, &c->cl), 0, "%s", sio_errmsg());
	sio_nvme_client_set_timeout(c->cl, 1000);
	cr_assert_eq(sio_nvme_ioq_create(c->cl, NULL, &c->q), 0, "%s", sio_errmsg());
	cr_assert_eq(sio_nvme_buf_alloc(c->cl, 4096, &c->buf), 0, "%s", sio_errmsg());
}

static void cli_close(struct cli *c)
{
	sio_nvme_buf_close(c->cl, c->buf);
	sio_nvme_ioq_close(c->q);
	sio_nvme_client_close(c->cl);
}

/* Blocks 64..71 hold 0x5a before the controller is reset under @c. */
static void cli_write(struct cli *c)
{
	memset(c->buf->va, 0x5a, 4096);
	cr_assert_eq(sio_nvme_write(c->q, 1, 64, 8, c->buf, 0), 0, "%s", sio_errmsg());
}

/* The reset took @c's queue pair: the client made it again and goes on,
 * finding what it wrote (the controller kept it). */
static void cli_goes_on(struct cli *c)
{
	struct sio_nvme_ioq_info qi;
	int ret;

	memset(c->buf->va, 0, 4096);
	ret = sio_nvme_read(c->q, 1, 64, 8, c->buf, 0);
	cr_expect_eq(ret, 0, "I/O on a queue pair the reset took: %d %s", ret, sio_errmsg());
	cr_expect_eq(((uint8_t *)c->buf->va)[4095], 0x5a);
	sio_nvme_ioq_info(c->q, &qi);
	cr_expect_eq(qi.recoveries, 1, "made again %u times", qi.recoveries);
	memset(c->buf->va, 0x6b, 4096);
	cr_expect_eq(sio_nvme_write(c->q, 1, 72, 8, c->buf, 0), 0, "%s", sio_errmsg());
	cli_close(c);
	sio_fabric_close(c->f);
}

/* A controller fatal status: the manager resets the controller in place,
 * and running clients, told by the mailbox, make their queue pairs again. */
Test(failover, fatal_status_reset_is_told_and_clients_go_on)
{
	struct cli c = { 0 };
	char *log = NULL;
	int i;

	cluster_up(&C, 2, 32, emu);
	cli_open(&c);
	cli_write(&c);
	cr_assert_eq(kill(C.emu, SIGUSR1), 0);	/* nvme-emu fails: CSTS.CFS */
	for (i = 0; i < 200; i++) {
		log = cluster_output(&C, "nvme-manager", "err");
		if (strstr(log, "ready again after the reset"))
			break;
		usleep(50000);
	}
	cr_assert(strstr(log, "controller fatal status"), "%s", log);
	cli_goes_on(&c);
}

/* Requests made as the controller fails (CSTS.CFS), before the manager's
 * reset: answered "ask again", not failed, and done after the reset (a
 * lender's flap under a queue's DMA fails QEMU's controller so). */
Test(failover, a_request_as_the_controller_fails_is_asked_again)
{
	struct cli c = { 0 };
	uint8_t id[4096];
	int i;

	cluster_up(&C, 2, 32, emu);
	cli_open(&c);
	cli_write(&c);
	for (i = 0; i < 5; i++) {
		cr_assert_eq(kill(C.emu, SIGUSR1), 0);	/* nvme-emu fails: CSTS.CFS */
		cr_expect_eq(sio_nvme_client_identify(c.cl, NVME_IDENTIFY_CNS_CTRL, 0, id), 0,
			     "Identify %d as the controller failed: %s", i, sio_errmsg());
	}
	memset(c.buf->va, 0, 4096);
	cr_expect_eq(sio_nvme_read(c.q, 1, 64, 8, c.buf, 0), 0, "%s", sio_errmsg());
	cr_expect_eq(((uint8_t *)c.buf->va)[4095], 0x5a, "the data written before");
	cli_close(&c);
	sio_fabric_close(c.f);
}

/* The manager's log, once it holds @what (bounded), or the test fails. */
static void await_log(const char *what, int secs)
{
	char *log = NULL;

	for (int i = 0; i < secs * 20; i++) {
		log = cluster_output(&C, "nvme-manager", "err");
		if (strstr(log, what))
			return;
		usleep(50000);
	}
	cr_assert_fail("the manager did not say '%s' within %d s: %s", what, secs, log);
}

/*
 * A controller that does not come back (its model stopped): the manager
 * gives up after its last reset try and says so; a request meanwhile waits
 * no longer than $SMARTIO_NVME_RESET_MS, and says so; once the controller
 * runs again the manager serves it, and clients join and go on.
 */
Test(failover, reset_given_up_is_said_and_waits_are_bounded)
{
	static const char *fast[] = { "--backing", "ram:64M", "--cap-to", "1", NULL };
	struct cli c = { 0 };
	uint8_t id[4096];
	uint64_t t0;
	int ret;

	setenv("SMARTIO_NVME_RESET_MS", "1000", 1);
	cluster_up(&C, 2, 32, fast);
	cli_open(&c);
	cli_write(&c);
	cr_assert_eq(kill(C.emu, SIGSTOP), 0);	/* answers nothing: admin times out */
	ret = sio_nvme_client_identify(c.cl, NVME_IDENTIFY_CNS_CTRL, 0, id);
	cr_expect_eq(ret, -ETIMEDOUT, "%d %s", ret, sio_errmsg());
	cr_expect(strstr(sio_errmsg(), "resetting the controller") &&
		  strstr(sio_errmsg(), "SMARTIO_NVME_RESET_MS"), "%s", sio_errmsg());
	await_log("did not come back after 3 resets", 60);
	cr_assert_eq(kill(C.emu, SIGCONT), 0);
	await_log("serving it", 60);
	join(1);
	for (t0 = now_ms(); now_ms() - t0 < 10000; usleep(50000))
		if (!(ret = sio_nvme_client_identify(c.cl, NVME_IDENTIFY_CNS_CTRL, 0, id)))
			break;
	cr_expect_eq(ret, 0, "once the controller is back: %s", sio_errmsg());
	cli_goes_on(&c);
	unsetenv("SMARTIO_NVME_RESET_MS");
}

/* A controller disabled behind the manager's back while none ran does not
 * match the kept state: the next manager resets it, and clients are told
 * and go on. */
Test(failover, a_controller_changed_meanwhile_is_reset_not_adopted)
{
	struct cli c = { 0 };
	struct sio_device *dev;
	struct sio_segment *bar;
	void *regs;
	char *log;

	cluster_up(&C, 2, 32, emu);
	cli_open(&c);
	cli_write(&c);
	kill_manager();
	/* CC.EN to 0: the controller drops every queue. */
	cr_assert_eq(sio_device_borrow(c.f, sio_device_id(sio_nvme_client_device(c.cl)),
				       SIO_BORROW_SHARED, &dev), 0, "%s", sio_errmsg());
	cr_assert_eq(sio_device_bar(dev, 0, &bar), 0, "%s", sio_errmsg());
	cr_assert_eq(sio_segment_map(bar, &regs), 0, "%s", sio_errmsg());
	__atomic_store_n((uint32_t *)((uint8_t *)regs + NVME_REG_CC), 0, __ATOMIC_RELEASE);
	usleep(200000);
	sio_segment_close(bar);
	sio_device_close(dev);

	cluster_start_mgr(&C);
	log = cluster_output(&C, "nvme-manager", "err");
	cr_expect(strstr(log, "does not match the kept state"), "%s", log);
	cr_expect(!strstr(log, "took over device"), "%s", log);
	cli_goes_on(&c);
}

/* SQs in the controller memory buffer (location=device) while no manager
 * runs: the controller reads its own CMB, not through the crashed
 * manager's mapping of it (which went with its borrow), so a command
 * issued then is fetched and completes, not lost until a timeout. */
Test(failover, cmb_queues_lose_nothing_while_no_manager_runs)
{
	const char *cmb[] = { "--backing", "ram:64M", "--cmb", "16m", NULL };
	struct sio_nvme_ioq_info qi;
	struct sio_nvme_qspec spec;
	struct cli c = { 0 };
	int done = 0, err = 0, ret;
	uint64_t t0;

	cluster_up(&C, 2, 32, cmb);
	cr_assert_eq(sio_fabric_open(C.fabric, 1, &c.f), 0, "%s", sio_errmsg());
	cr_assert_eq(sio_nvme_client_open(c.f, SIO_DEVICE_ANY, &c.cl), 0, "%s", sio_errmsg());
	sio_nvme_client_set_timeout(c.cl, 60000);	/* no queue reset within the test */
	cr_assert_eq(sio_nvme_qspec_parse("location=device", &spec), 0);
	cr_assert_eq(sio_nvme_ioq_create(c.cl, &spec, &c.q), 0, "%s", sio_errmsg());
	cr_assert_eq(sio_nvme_buf_alloc(c.cl, 4096, &c.buf), 0, "%s", sio_errmsg());
	cli_write(&c);
	kill_manager();
	sio_fabric_reap(c.f);	/* its borrow, and its mappings, are gone */
	memset(c.buf->va, 0x6b, 4096);
	cr_assert_eq(sio_nvme_ioq_write(c.q, 1, 72, 8, c.buf, 0, done_cb, &done), 0, "%s",
		     sio_errmsg());
	for (t0 = now_ms(); !done && now_ms() - t0 < 15000; usleep(1000)) {
		ret = sio_nvme_ioq_poll(c.q, 0);
		if (ret < 0)
			err = ret;
	}
	cr_expect_eq(done, 1, "a write with no manager running never completed (%d): %s",
		     err, cluster_output(&C, "nvme-emu", "err"));
	cluster_start_mgr(&C);
	memset(c.buf->va, 0, 4096);
	cr_expect_eq(sio_nvme_read(c.q, 1, 72, 8, c.buf, 0), 0, "%s", sio_errmsg());
	cr_expect_eq(((uint8_t *)c.buf->va)[4095], 0x6b);
	sio_nvme_ioq_info(c.q, &qi);
	cr_expect_eq(qi.recoveries, 0, "the queue pair had to be made again");
	cr_expect(!strstr(cluster_output(&C, "nvme-emu", "err"), "cannot fetch"), "%s",
		  cluster_output(&C, "nvme-emu", "err"));
	cli_close(&c);
	sio_fabric_close(c.f);
}

/* SIGTERM to the manager under clients doing verified I/O, with a standby
 * on another node: the stopping manager leaves the controller and the
 * clients' queue pairs running and says so, the standby takes them over
 * without a reset, and no client sees an I/O error (it saw "Connection
 * timed out": the stopping manager deleted their queue pairs). */
Test(failover, sigterm_hands_over_to_a_standby_and_io_goes_on)
{
	enum { N = 6 };
	const char *argv[] = { "NVME_MANAGER", "--fabric", NULL, "--node", "8",
			       "--standby", "--ready-file", NULL, NULL };
	char tags[N][32], ready[300], *log;
	pid_t pid[N], sb;
	int i, ret;

	cluster_up(&C, N + 3, 64, emu);
	argv[2] = C.fabric;
	snprintf(ready, sizeof(ready), "%s/standby.ready", C.dir);
	argv[7] = ready;
	sb = cluster_spawn(&C, "standby", argv);
	for (i = 0; i < N; i++)
		pid[i] = io_client(i + 1, "8", tags[i], sizeof(tags[i]));
	sleep(2);
	cr_assert_eq(kill(C.mgr, SIGTERM), 0);
	ret = cluster_wait(C.mgr, 10000);
	cr_expect_eq(ret, 0, "the manager did not stop cleanly (%d): %s", ret,
		     cluster_output(&C, "nvme-manager", "err"));
	C.mgr = sb;
	log = cluster_output(&C, "nvme-manager", "err");
	cr_expect(strstr(log, "client(s) running: their queue pairs go on"), "%s", log);
	for (i = 0; i < 500 && access(ready, F_OK) != 0; i++)
		usleep(20000);
	log = cluster_output(&C, "standby", "err");
	cr_expect(strstr(log, "took over device"), "%s", log);
	expect_clients_ok(pid, tags, N);
}

/* SIGTERM with no standby: the clients' I/O goes on; their admin requests
 * wait for a successor $SMARTIO_NVME_RESTART_MS and then say the manager
 * stopped; the next manager started takes over, and serves them. */
Test(failover, sigterm_without_a_standby_leaves_io_running_and_requests_wait)
{
	struct cli c = { 0 };
	uint8_t id[4096];
	uint64_t t0;
	int ret;

	setenv("SMARTIO_NVME_RESTART_MS", "1000", 1);
	cluster_up(&C, 2, 32, emu);
	cli_open(&c);
	cli_write(&c);
	cr_assert_eq(kill(C.mgr, SIGTERM), 0);
	ret = cluster_wait(C.mgr, 10000);
	cr_expect_eq(ret, 0, "the manager did not stop cleanly (%d): %s", ret,
		     cluster_output(&C, "nvme-manager", "err"));
	C.mgr = 0;
	memset(c.buf->va, 0, 4096);
	cr_expect_eq(sio_nvme_read(c.q, 1, 64, 8, c.buf, 0), 0, "I/O after the manager "
		     "stopped: %s", sio_errmsg());
	cr_expect_eq(((uint8_t *)c.buf->va)[4095], 0x5a);
	t0 = now_ms();
	ret = sio_nvme_client_identify(c.cl, NVME_IDENTIFY_CNS_CTRL, 0, id);
	cr_expect_eq(ret, -ENOTCONN, "%d %s", ret, sio_errmsg());
	cr_expect(strstr(sio_errmsg(), "has stopped and no manager took over within 1000 ms"),
		  "%s", sio_errmsg());
	cr_expect_lt(now_ms() - t0, 30000);
	cluster_start_mgr(&C);
	cr_expect(strstr(cluster_output(&C, "nvme-manager", "err"), "took over device"), "%s",
		  cluster_output(&C, "nvme-manager", "err"));
	ret = sio_nvme_client_identify(c.cl, NVME_IDENTIFY_CNS_CTRL, 0, id);
	cr_expect_eq(ret, 0, "%s", sio_errmsg());
	cli_close(&c);
	sio_fabric_close(c.f);
	unsetenv("SMARTIO_NVME_RESTART_MS");
}

/* A manager that is stopped (SIGSTOP), not dead: a request waits for it
 * $SMARTIO_NVME_RESTART_MS, not 10 s or more, and says why; the next
 * request does not wait again; once it runs again it serves. */
Test(failover, stopped_manager_is_waited_for_restart_ms_and_said)
{
	struct cli c = { 0 };
	uint8_t id[4096];
	uint64_t t0, took;
	int ret;

	setenv("SMARTIO_NVME_RESTART_MS", "1500", 1);
	cluster_up(&C, 2, 32, emu);
	cli_open(&c);
	cr_assert_eq(kill(C.mgr, SIGSTOP), 0);
	t0 = now_ms();
	ret = sio_nvme_client_identify(c.cl, NVME_IDENTIFY_CNS_CTRL, 0, id);
	took = now_ms() - t0;
	cr_expect_eq(ret, -ETIMEDOUT, "%d %s", ret, sio_errmsg());
	cr_expect(strstr(sio_errmsg(), "has not run for") && strstr(sio_errmsg(),
		  "SMARTIO_NVME_RESTART_MS"), "%s", sio_errmsg());
	cr_expect(took >= 1500 && took < 9000, "waited %llu ms for a manager stopped, with "
		  "$SMARTIO_NVME_RESTART_MS=1500", (unsigned long long)took);
	t0 = now_ms();
	ret = sio_nvme_client_identify(c.cl, NVME_IDENTIFY_CNS_CTRL, 0, id);
	cr_expect_eq(ret, -ENOTCONN, "%d %s", ret, sio_errmsg());
	cr_expect_lt(now_ms() - t0, 1500, "the second request waited again");
	kill(C.mgr, SIGCONT);
	for (t0 = now_ms(); ret && now_ms() - t0 < 10000; usleep(50000))
		ret = sio_nvme_client_identify(c.cl, NVME_IDENTIFY_CNS_CTRL, 0, id);
	cr_expect_eq(ret, 0, "once the manager runs again: %s", sio_errmsg());
	cli_close(&c);
	sio_fabric_close(c.f);
	unsetenv("SMARTIO_NVME_RESTART_MS");
}

/* The NVMe driver's variables are numbers or refused, as the others. */
Test(failover, nvme_variables_are_parsed_strictly)
{
	static const char *const bad[][2] = {
		{ "SMARTIO_NVME_RESTART_MS", "3s" }, { "SMARTIO_NVME_RESTART_MS", "-1" },
		{ "SMARTIO_NVME_RESTART_MS", "" }, { "SMARTIO_NVME_ARENA_MB", "64M" },
		{ "SMARTIO_NVME_ARENA_MB", "99999" }, { "SMARTIO_NVME_ANSWER_MS", "30s" },
		{ "SMARTIO_NVME_ANSWER_MS", "3600001" }, { "SMARTIO_NVME_RESET_MS", "1s" },
		{ "SMARTIO_NVME_LINK_GRACE_MS", "-5" },
	};
	struct sio_nvme_client *cl;
	struct sio_fabric *f;
	int ret;

	cluster_up(&C, 2, 32, emu);
	cr_assert_eq(sio_fabric_open(C.fabric, 1, &f), 0, "%s", sio_errmsg());
	for (unsigned i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		setenv(bad[i][0], bad[i][1], 1);
		ret = sio_nvme_client_open(f, SIO_DEVICE_ANY, &cl);
		cr_expect_eq(ret, -EINVAL, "%s='%s': %d", bad[i][0], bad[i][1], ret);
		if (!ret)
			sio_nvme_client_close(cl);
		cr_expect(strstr(sio_errmsg(), bad[i][0]), "%s", sio_errmsg());
		unsetenv(bad[i][0]);
	}
	sio_fabric_close(f);
}
