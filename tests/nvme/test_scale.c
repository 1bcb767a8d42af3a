/* SPDX-License-Identifier: MIT */
/*
 * A full adapter: each remote client holds one window of the lender's
 * adapter (its CQ, data buffers and admin data share one arena segment),
 * so 63 client nodes share one controller through a 64-window adapter,
 * each doing verified I/O.
 */

#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>
#include <smartio/smartio.h>
#include <smartio/nvme/client.h>
#include "cluster.h"

static struct cluster C;

static void down(void)
{
	cluster_down(&C);
}

TestSuite(scale, .fini = down, .timeout = 300);

static int windows_used(struct sio_fabric *f, int node)
{
	struct sio_node_info ni[SIO_MAX_NODES];
	int n = sio_fabric_nodes(f, ni, SIO_MAX_NODES);

	cr_assert_gt(n, node, "%s", sio_errmsg());
	return ni[node].windows_used[0];
}

Test(scale, a_remote_client_holds_one_lender_window)
{
	const char *emu[] = { "--backing", "ram:16M", NULL };
	struct sio_fabric *f;
	struct sio_nvme_client *cl;
	struct sio_nvme_ioq *q;
	struct sio_nvme_buf *b1, *b2;
	struct sio_nvme_ns ns;
	int base;

	cluster_up(&C, 2, 32, emu);
	cr_assert_eq(sio_fabric_open(C.fabric, 1, &f), 0, "%s", sio_errmsg());
	base = windows_used(f, 0);
	cr_assert_eq(sio_nvme_client_open(f, SIO_DEVICE_ANY, &cl), 0, "%s", sio_errmsg());
	cr_assert_eq(sio_nvme_ioq_create(cl, NULL, &q), 0, "%s", sio_errmsg());
	cr_assert_eq(sio_nvme_buf_alloc(cl, 64 << 10, &b1), 0, "%s", sio_errmsg());
	cr_assert_eq(sio_nvme_buf_alloc(cl, 4096, &b2), 0, "%s", sio_errmsg());
	cr_expect_eq(sio_nvme_client_ns(cl, 1, &ns), 0, "%s", sio_errmsg());
	cr_expect_eq(windows_used(f, 0) - base, 1, "a client with a queue pair and two "
		     "buffers holds %d windows of the lender's adapter",
		     windows_used(f, 0) - base);
	/* The buffers work, at their offsets in the shared segment. */
	memset(b1->va, 0xa5, 4096);
	cr_expect_eq(sio_nvme_write(q, 1, 8, 8, b1, 0), 0, "%s", sio_errmsg());
	memset(b2->va, 0, 4096);
	cr_expect_eq(sio_nvme_read(q, 1, 8, 8, b2, 0), 0, "%s", sio_errmsg());
	cr_expect_eq(memcmp(b1->va, b2->va, 4096), 0, "read back differs");
	sio_nvme_buf_close(cl, b2);
	sio_nvme_buf_close(cl, b1);
	sio_nvme_ioq_close(q);
	sio_nvme_client_close(cl);
	cr_expect_eq(windows_used(f, 0), base, "windows left behind");
	sio_fabric_close(f);
}

/* @n clients on nodes 1..@n, each writing and verifying its own 256 blocks
 * at queue depth @qd for @secs seconds, started at once. */
static void writers(int n, const char *qd, const char *secs, char (*tags)[32], pid_t *pid)
{
	static char nodes[64][8], lba[64][16];

	cr_assert_leq(n, 64);
	for (int i = 0; i < n; i++) {
		const char *argv[] = { "NVME_CLIENT", "--fabric", C.fabric, "--node", nodes[i],
				       "--op", "write-verify", "--lba", lba[i], "--count", "256",
				       "--bs", "4k", "--qd", qd, "--seed", nodes[i], "--time", secs,
				       NULL };

		snprintf(nodes[i], sizeof(nodes[i]), "%d", i + 1);
		snprintf(lba[i], sizeof(lba[i]), "%d", i * 256);
		snprintf(tags[i], sizeof(tags[i]), "client-%d", i + 1);
		pid[i] = cluster_spawn(&C, tags[i], argv);
	}
}

/* 63 client nodes, each writing and verifying its own range for 3 s, all
 * at once: the lender's adapter has 64 windows. */
Test(scale, clients_63_share_one_controller_with_verified_io)
{
	enum { N = 63 };
	const char *emu[] = { "--backing", "ram:32M", "--queues", "64", NULL };
	static char tags[N][32];
	pid_t pid[N];
	int i, st, failed = 0;

	cluster_up(&C, N + 1, 64, emu);
	writers(N, "4", "3", tags, pid);
	for (i = 0; i < N; i++) {
		st = cluster_wait(pid[i], 120000);
		if (st) {
			failed++;
			cr_expect_eq(st, 0, "%s exited %d: %s", tags[i], st,
				     cluster_output(&C, tags[i], "err"));
			continue;
		}
		cr_expect(strstr(cluster_output(&C, tags[i], "out"), "mismatches 0  errors 0"),
			  "%s: %s", tags[i], cluster_output(&C, tags[i], "out"));
	}
	cr_expect_eq(failed, 0, "%d of %d clients failed", failed, N);
	cr_log_info("client 63: %s", cluster_output(&C, tags[N - 1], "out"));
}

/* A lender with two adapters of 4 windows: 8 client nodes, each holding
 * one window of the lender, all served; the first adapter's windows spent,
 * the second's are taken (it refused 4 of them, with 4 windows free). */
Test(scale, a_lenders_second_adapter_serves_when_the_first_is_full)
{
	enum { N = 8 };
	const char *emu[] = { "--backing", "ram:16M", NULL };
	struct sio_fabric_config cfg;
	struct sio_node_info ni[N + 1];
	static char tags[N][32];
	struct sio_fabric *f;
	pid_t pid[N];
	int i, st;

	memset(&C, 0, sizeof(C));
	snprintf(C.fabric, sizeof(C.fabric), "twoad-%d", (int)getpid());
	snprintf(C.dir, sizeof(C.dir), "/tmp/twoad-%d", (int)getpid());
	mkdir(C.dir, 0700);
	memset(&cfg, 0, sizeof(cfg));
	cfg.nodes = N + 1;
	cfg.topology = SIO_TOPO_SWITCH;
	cfg.adapters = 2;
	cfg.windows = 4;
	sio_fabric_destroy(C.fabric);
	cr_assert_eq(sio_fabric_create(C.fabric, &cfg), 0, "fabric: %s", sio_errmsg());
	cluster_start_emu(&C, emu);
	cluster_start_mgr(&C);
	writers(N, "2", "2", tags, pid);
	cr_assert_eq(sio_fabric_open(C.fabric, 0, &f), 0, "%s", sio_errmsg());
	for (i = 0; i < 200; i++) {	/* until all eight hold their window */
		cr_assert_gt(sio_fabric_nodes(f, ni, N + 1), 0, "%s", sio_errmsg());
		if (ni[0].windows_used[0] + ni[0].windows_used[1] >= N)
			break;
		usleep(10000);
	}
	cr_expect_eq(ni[0].windows_used[1] > 0, 1, "the second adapter holds no window "
		     "(%d and %d in use)", ni[0].windows_used[0], ni[0].windows_used[1]);
	sio_fabric_close(f);
	for (i = 0; i < N; i++) {
		st = cluster_wait(pid[i], 60000);
		cr_expect_eq(st, 0, "%s exited %d: %s", tags[i], st,
			     cluster_output(&C, tags[i], "err"));
	}
}

/*
 * Clients joining all at once, as many as the mailbox has slots for (less
 * a few for the tools): the manager, busy with them and starved of the
 * CPUs they take, is at work, not stopped, and each client waits its turn.
 * None may be told the manager "has not run" (stopped or stuck).
 */
Test(scale, clients_joining_at_once_queue_for_a_busy_manager)
{
	enum { N = 120 };
	const char *emu[] = { "--backing", "ram:16M", "--queues", "128", NULL };
	static char tags[N][32], nodes[N][8], lba[N][16];
	pid_t pid[N];
	int i, st, failed = 0, stuck = 0;
	const char *err;

	cluster_up(&C, 8, 64, emu);
	for (i = 0; i < N; i++) {
		const char *argv[] = { "NVME_CLIENT", "--fabric", C.fabric, "--node", nodes[i],
				       "--op", "write-verify", "--lba", lba[i], "--count", "64",
				       "--bs", "4k", "--qd", "1", NULL };

		/* two of five on nodes 1..7 (one lender window each), the rest local */
		snprintf(nodes[i], sizeof(nodes[i]), "%d", i % 5 < 2 ? 1 + i % 7 : 0);
		snprintf(lba[i], sizeof(lba[i]), "%d", i * 64);
		snprintf(tags[i], sizeof(tags[i]), "join-%d", i);
		pid[i] = cluster_spawn(&C, tags[i], argv);
	}
	for (i = 0; i < N; i++) {
		st = cluster_wait(pid[i], 240000);
		err = cluster_output(&C, tags[i], "err");
		if (strstr(err, "has not run for"))
			stuck++;
		if (st) {
			failed++;
			cr_expect_eq(st, 0, "%s exited %d: %s", tags[i], st, err);
		}
	}
	cr_expect_eq(stuck, 0, "%d of %d clients called the busy manager stopped or stuck",
		     stuck, N);
	cr_expect_eq(failed, 0, "%d of %d clients joining at once failed", failed, N);
}
