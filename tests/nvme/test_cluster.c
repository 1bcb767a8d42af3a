/* SPDX-License-Identifier: MIT */
/*
 * The distributed driver end to end: an emulated controller lent by node
 * 0, the manager beside it, clients on other nodes.
 */

#include <criterion/criterion.h>
#include <dlfcn.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <json-c/json.h>
#include <smartio/nvme/client.h>
#include "cluster.h"

static struct cluster C;

static void down(void)
{
	cluster_down(&C);
}

static uint64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

TestSuite(nvme_cluster, .fini = down, .timeout = 120);

/* Run @n clients on nodes 1..n, each on its own range; all must verify. */
static void run_clients(int n, const char *queue, int ios)
{
	pid_t pids[32];
	char node[32][8], lba[32][24], seed[32][8], tag[32][16], nios[16];
	int i, rc, failed;

	snprintf(nios, sizeof(nios), "%d", ios);
	for (i = 0; i < n; i++) {
		snprintf(node[i], 8, "%d", i + 1);
		snprintf(lba[i], 24, "%d", i * 4096);
		snprintf(seed[i], 8, "%d", i + 7);
		snprintf(tag[i], 16, "client%d", i + 1);
		const char *argv[] = { "NVME_CLIENT", "--fabric", C.fabric, "--node", node[i],
				       "--lba", lba[i], "--count", "4096", "--random",
				       "--ios", nios, "--qd", "4", "--seed", seed[i],
				       "--queue", queue, "--json", NULL };
		pids[i] = cluster_spawn(&C, tag[i], argv);
	}
	for (i = 0, failed = 0; i < n; i++) {
		rc = cluster_wait(pids[i], 90000);
		cr_expect_eq(rc, 0, "client on node %d: exit %d: %s%s", i + 1, rc,
			     cluster_output(&C, tag[i], "err"), cluster_output(&C, tag[i], "out"));
		failed += rc != 0;
		if (rc)
			continue;
		struct json_object *o = cluster_json(&C, tag[i]);

		/* a write pass and a verifying read pass, each of --ios I/Os */
		cr_expect_eq(cluster_jint(o, "mismatches", -1), 0, "client %d: %s", i + 1,
			     cluster_output(&C, tag[i], "out"));
		cr_expect_eq(cluster_jint(o, "write.ios", -1), ios, "client %d", i + 1);
		cr_expect_eq(cluster_jint(o, "read.ios", -1), ios, "client %d", i + 1);
		cr_expect_eq(cluster_jint(o, "read.lat_us.ios", -1), ios,
			     "client %d: every read's latency is counted", i + 1);
		json_object_put(o);
	}
	if (failed)
		cluster_show_logs(&C);
}

Test(nvme_cluster, sixteen_clients_verify_disjoint_ranges)
{
	const char *emu[] = { "--backing", "ram:64M", NULL };

	/* Each remote client maps its CQ and data buffer for the device: two
	 * windows on the lender's adapter apiece. */
	cluster_up(&C, 17, 64, emu);
	run_clients(16, "hint", 256);
}

static void placement(const char *loc, const char *want)
{
	const char *emu[] = { "--backing", "ram:32M", "--cmb", "4m", NULL };
	char spec[64];
	int i;

	snprintf(spec, sizeof(spec), "location=%s", loc);
	cluster_up(&C, 4, 32, emu);
	run_clients(3, spec, 300);
	for (i = 1; i <= 3; i++) {
		char tag[16];

		snprintf(tag, sizeof(tag), "client%d", i);
		struct json_object *o = cluster_json(&C, tag);

		cr_expect_str_eq(cluster_jstr(o, "sq"), want, "client %d placed its SQ elsewhere: %s",
				 i, cluster_output(&C, tag, "out"));
		json_object_put(o);
	}
}

Test(nvme_cluster, sq_local) { placement("local", "local"); }
Test(nvme_cluster, sq_lender) { placement("lender", "lender"); }
Test(nvme_cluster, sq_in_cmb) { placement("device", "device"); }

Test(nvme_cluster, killed_client_queues_deleted_others_continue)
{
	const char *emu[] = { "--backing", "ram:32M", "--queues", "2", NULL };
	const char *victim[] = { "NVME_CLIENT", "--fabric", NULL, "--node", "1", "--lba", "0",
				 "--count", "4096", "--random", "--qd", "8", "--time", "30",
				 NULL };
	const char *other[] = { "NVME_CLIENT", "--fabric", NULL, "--node", "2", "--lba",
				"8192", "--count", "4096", "--random", "--qd", "4", "--time",
				"3", NULL };
	const char *late[] = { "NVME_CLIENT", "--fabric", NULL, "--node", "3", "--lba",
			       "16384", "--count", "512", NULL };
	pid_t v, o, l;
	uint64_t t0;
	int rc;

	cluster_up(&C, 4, 32, emu);
	victim[2] = other[2] = late[2] = C.fabric;
	v = cluster_spawn(&C, "victim", victim);
	o = cluster_spawn(&C, "other", other);
	usleep(800000);
	/* Both queue pairs are taken: a third client is refused, clearly. */
	l = cluster_spawn(&C, "late0", late);
	rc = cluster_wait(l, 20000);
	cr_assert_neq(rc, 0, "a third client got a queue from a 2-queue controller");
	cr_assert(strstr(cluster_output(&C, "late0", "err"), "no I/O queue pair left"),
		  "unclear refusal: %s", cluster_output(&C, "late0", "err"));

	kill(v, SIGKILL);
	t0 = now_ms();
	cluster_wait(v, 1000);
	/* Its queue pair must come free within about a second. */
	do {
		l = cluster_spawn(&C, "late", late);
		rc = cluster_wait(l, 20000);
	} while (rc != 0 && now_ms() - t0 < 4000);
	cr_assert_eq(rc, 0, "the killed client's queues were not deleted: %s",
		     cluster_output(&C, "late", "err"));
	cr_expect_lt(now_ms() - t0, 2500, "cleanup took %llu ms",
		     (unsigned long long)(now_ms() - t0));
	rc = cluster_wait(o, 60000);
	cr_assert_eq(rc, 0, "the other client was disturbed: %s",
		     cluster_output(&C, "other", "err"));
}

Test(nvme_cluster, too_many_queues_is_a_clear_error)
{
	const char *emu[] = { "--backing", "ram:16M", "--queues", "3", NULL };
	struct sio_nvme_ioq *q[4];
	struct sio_nvme_client *cl;
	struct sio_nvme_qspec spec;
	struct sio_fabric *f;
	int i, ret;

	cluster_up(&C, 3, 32, emu);
	cr_assert_eq(sio_fabric_open(C.fabric, 1, &f), 0, "%s", sio_errmsg());
	cr_assert_eq(sio_nvme_client_open(f, SIO_DEVICE_ANY, &cl), 0, "%s", sio_errmsg());
	sio_nvme_qspec_parse("depth=16", &spec);
	for (i = 0; i < 3; i++)
		cr_assert_eq(sio_nvme_ioq_create(cl, &spec, &q[i]), 0, "queue %d: %s", i,
			     sio_errmsg());
	ret = sio_nvme_ioq_create(cl, &spec, &q[3]);
	cr_assert_eq(ret, -ENOSPC);
	cr_assert(strstr(sio_errmsg(), "has 3"), "message: %s", sio_errmsg());
	/* Giving one back makes room again. */
	sio_nvme_ioq_close(q[1]);
	cr_assert_eq(sio_nvme_ioq_create(cl, &spec, &q[1]), 0, "%s", sio_errmsg());
	/* Bad specs are refused before anything is asked of the manager. */
	cr_assert_eq(sio_nvme_qspec_parse("location=moon", &spec), -EINVAL);
	cr_assert_eq(sio_nvme_qspec_parse("depth=1", &spec), -EINVAL);
	cr_assert_eq(sio_nvme_qspec_parse("depth= 16", &spec), -EINVAL);
	cr_assert_eq(sio_nvme_qspec_parse("depth=16x", &spec), -EINVAL);
	cr_assert_eq(sio_nvme_qspec_parse("depth=4097", &spec), -EINVAL);
	cr_assert_eq(sio_nvme_qspec_parse("prio=-1", &spec), -EINVAL);
	cr_assert_eq(sio_nvme_qspec_parse("colour=blue", &spec), -EINVAL);
	sio_nvme_client_close(cl);
	sio_fabric_close(f);
}

Test(nvme_cluster, flushed_data_survives_controller_restart)
{
	char backing[300], arg[320];
	const char *emu[] = { "--backing", arg, NULL };
	const char *w[] = { "NVME_CLIENT", "--fabric", NULL, "--node", "1", "--lba", "1000",
			    "--count", "2048", "--op", "write", "--flush", "--seed", "99",
			    "--qd", "8", NULL };
	const char *r[] = { "NVME_CLIENT", "--fabric", NULL, "--node", "2", "--lba", "1000",
			    "--count", "2048", "--op", "verify", "--seed", "99", NULL };
	const char *bad[] = { "NVME_CLIENT", "--fabric", NULL, "--node", "2", "--lba", "1000",
			      "--count", "2048", "--op", "verify", "--seed", "98", NULL };
	FILE *f;
	int rc;

	snprintf(backing, sizeof(backing), "/tmp/nvmet-backing-%d", (int)getpid());
	snprintf(arg, sizeof(arg), "%s", backing);
	f = fopen(backing, "w");
	cr_assert(f);
	cr_assert_eq(ftruncate(fileno(f), 16 << 20), 0);
	fclose(f);
	cluster_up(&C, 3, 32, emu);
	w[2] = r[2] = bad[2] = C.fabric;
	rc = cluster_wait(cluster_spawn(&C, "write", w), 60000);
	cr_assert_eq(rc, 0, "write: %s", cluster_output(&C, "write", "err"));

	/* Restart the controller process (and so the manager). */
	cluster_stop(&C.mgr);
	cluster_stop(&C.emu);
	cluster_start_emu(&C, emu);
	cluster_start_mgr(&C);

	rc = cluster_wait(cluster_spawn(&C, "verify", r), 60000);
	unlink(backing);
	cr_assert_eq(rc, 0, "verify after restart: %s%s", cluster_output(&C, "verify", "err"),
		     cluster_output(&C, "verify", "out"));
	/* And verification does notice wrong data. */
	rc = cluster_wait(cluster_spawn(&C, "bad", bad), 60000);
	cr_assert_neq(rc, 0, "verify with another pattern passed");
	cr_assert(strstr(cluster_output(&C, "bad", "err"), "differ"));
}

/* A program that must exit non-zero and say @msg on stderr. */
static void expect_failure(const char *tag, const char *const *argv, const char *msg)
{
	cr_expect_neq(cluster_wait(cluster_spawn(&C, tag, argv), 20000), 0, "%s succeeded", argv[0]);
	cr_expect(strstr(cluster_output(&C, tag, "err"), msg), "%s: wanted '%s' in: %s", argv[0], msg,
		  cluster_output(&C, tag, "err"));
}

Test(nvme_cluster, tools_say_what_is_wrong)
{
	const char *emu[] = { "--backing", "ram:16M", NULL };
	const char *nofab[] = { "NVME_CLIENT", "--fabric", "no-such-fabric-x", NULL };
	const char *nonode[] = { "NVME_CLIENT", "--fabric", NULL, "--node", "77", NULL };
	const char *nodev[] = { "NVME_CLIENT", "--fabric", NULL, "--node", "1", "--device",
				"4242", NULL };
	const char *nons[] = { "NVME_CLIENT", "--fabric", NULL, "--node", "1", "--nsid", "5",
			       NULL };
	const char *mgr2[] = { "NVME_MANAGER", "--fabric", NULL, "--node", "1", NULL };
	const char *id[] = { "NVME_IDENTIFY", "--fabric", NULL, "--node", "2", "--json", NULL };

	cluster_up(&C, 3, 32, emu);
	nonode[2] = nodev[2] = nons[2] = mgr2[2] = id[2] = C.fabric;
	expect_failure("a", nofab, "no fabric 'no-such-fabric-x'");	/* the backend's reason */
	expect_failure("b", nonode, "node 77");
	expect_failure("c", nodev, "device 4242 does not exist");
	expect_failure("d", nons, "namespace 5 does not exist");
	expect_failure("e", mgr2, "already serves");
	cr_expect_eq(cluster_wait(cluster_spawn(&C, "f", id), 20000), 0, "%s",
		     cluster_output(&C, "f", "err"));
	struct json_object *o = cluster_json(&C, "f");

	cr_expect_str_eq(cluster_jstr(o, "smartio.via"), "through the manager", "%s",
			 cluster_output(&C, "f", "out"));
	json_object_put(o);
}

/*
 * Requests above MDTS are split; a full queue refuses a request whole
 * (-EAGAIN) and the client replays the same offset. Random 32 KiB I/O on a
 * 4 KiB-block namespace with an 8 KiB transfer limit, 8 in flight.
 */
Test(nvme_cluster, split_requests_under_a_small_mdts_verify)
{
	const char *emu[] = { "--backing", "ram:64M", "--ns", "16M:512", "--ns", "16M:4096",
			      "--mdts", "1", NULL };
	const char *argv[] = { "NVME_CLIENT", "--fabric", C.fabric, "--node", "1", "--nsid", "2",
			       "--count", "4096", "--bs", "4k", "--random", "--qd", "8",
			       "--queue", "depth=16", "--json", NULL };

	cluster_up(&C, 2, 32, emu);
	for (int run = 0; run < 4; run++) {
		pid_t pid = cluster_spawn(&C, "split", argv);
		int rc = cluster_wait(pid, 60000);

		cr_assert_eq(rc, 0, "run %d: exit %d: %s%s", run, rc, cluster_output(&C, "split", "err"),
			     cluster_output(&C, "split", "out"));
		struct json_object *o = cluster_json(&C, "split");

		cr_assert_eq(cluster_jint(o, "mismatches", -1), 0, "run %d: %s", run,
			     cluster_output(&C, "split", "out"));
		cr_assert_eq(cluster_jint(o, "errors", -1), 0, "run %d", run);
		json_object_put(o);
	}
}

/* The fake NTB's test hook @name (tests/ntb/fake.c), or NULL off it. */
static void *fake_hook(const char *name)
{
	const char *lib = getenv("SMARTIO_NTB_FAKE_LIB"), *dev = getenv("SMARTIO_NTB_DEV");
	void *h;

	if (!lib || !dev || strncmp(dev, "fake:", 5))
		return NULL;
	h = dlopen(lib, RTLD_NOW);
	cr_assert(h, "%s", dlerror());
	return dlsym(h, name);
}

/* Port @port's link on the fake NTB up again after @ms, in a thread. */
struct relink {
	int (*link)(const char *dir, int port, int on);
	int port, ms;
	pthread_t t;
};

static void *relink_run(void *arg)
{
	struct relink *r = arg;

	usleep((useconds_t)r->ms * 1000);
	r->link(getenv("SMARTIO_NTB_DEV") + 5, r->port, 1);
	return NULL;
}

/*
 * A client's link to the lender that goes down during its set-up, after
 * its first look at the link: on an NTB the map of a window across it is
 * refused (-ENOTCONN). The client's attaching, and then a queue pair's
 * making, are made again once the link is back, within the link's grace,
 * and the application sees no error (both failed: "cannot map the
 * doorbells (BAR0) ... its link is down", "cannot place queue memory").
 */
Test(nvme_cluster, a_link_that_flaps_during_set_up_is_ridden_out)
{
	int (*refuse)(const char *, int, unsigned int) = fake_hook("sio_test_ntb_fake_refuse_maps");
	const char *emu[] = { "--backing", "ram:8M", NULL }, *dir;
	struct relink r = { .port = 1, .ms = 500 };
	struct sio_nvme_client *cl;
	struct sio_nvme_qspec spec;
	struct sio_nvme_ioq *q;
	struct sio_nvme_buf *buf;
	struct sio_fabric *f;
	int ret;

	*(void **)&r.link = fake_hook("sio_test_ntb_fake_link");
	if (!refuse || !r.link)
		cr_skip_test("needs the fake NTB, whose maps and links a test can cut "
			     "(ntb-nvme-cluster runs it)");
	dir = getenv("SMARTIO_NTB_DEV") + 5;
	cluster_up(&C, 2, 32, emu);
	cr_assert_eq(sio_fabric_open(C.fabric, 1, &f), 0, "%s", sio_errmsg());
	cr_assert_eq(refuse(dir, 1, 1), 0);
	ret = sio_nvme_client_open(f, SIO_DEVICE_ANY, &cl);
	cr_assert_eq(ret, 0, "a client whose first map was refused: %s", sio_errmsg());
	cr_assert_eq(sio_nvme_qspec_parse("location=lender", &spec), 0, "%s", sio_errmsg());
	cr_assert_eq(r.link(dir, 1, 0), 0);
	cr_assert_eq(pthread_create(&r.t, NULL, relink_run, &r), 0);
	ret = sio_nvme_ioq_create(cl, &spec, &q);
	pthread_join(r.t, NULL);
	cr_assert_eq(ret, 0, "a queue pair made as the link went down: %s", sio_errmsg());
	cr_assert_eq(sio_nvme_buf_alloc(cl, 8192, &buf), 0, "%s", sio_errmsg());
	memset(buf->va, 0x5a, 8192);
	cr_expect_eq(sio_nvme_write(q, 1, 64, 16, buf, 0), 0, "%s", sio_errmsg());
	memset(buf->va, 0, 8192);
	cr_expect_eq(sio_nvme_read(q, 1, 64, 16, buf, 0), 0, "%s", sio_errmsg());
	cr_expect_eq(((uint8_t *)buf->va)[8191], 0x5a, "the data read back");
	sio_nvme_buf_close(cl, buf);
	sio_nvme_client_close(cl);
	sio_fabric_close(f);
}

/*
 * A manager that stopped cleanly with no client in its mailbox removed its
 * state, while a process still held the device: a client about to ask, or
 * one not reaped yet. The next manager found the device borrowed and no
 * state, and refused ("is another manager running?") for as long as any
 * borrower stayed: in a storm, clients run one after another, and no
 * standby served for 300 s. The mailbox, which only one live manager can
 * hold, says that none serves: the next one starts afresh.
 */
Test(nvme_cluster, a_manager_starts_afresh_under_a_borrower_no_manager_left_state_for)
{
	const char *emu[] = { "--backing", "ram:8M", NULL };
	const char *w[] = { "NVME_CLIENT", "--fabric", NULL, "--node", "1", "--lba", "300",
			    "--count", "16", "--pattern", "0x6b", "--flush", NULL };
	struct sio_fabric *f;
	struct sio_device *dev;
	char *log;

	cluster_up(&C, 2, 32, emu);
	cr_assert_eq(sio_fabric_open(C.fabric, 1, &f), 0, "%s", sio_errmsg());
	cr_assert_eq(sio_device_borrow(f, cluster_device_id(&C), SIO_BORROW_SHARED, &dev), 0,
		     "%s", sio_errmsg());
	cluster_stop(&C.mgr);
	cluster_start_mgr(&C);
	log = cluster_output(&C, "nvme-manager", "err");
	cr_expect(strstr(log, "and no manager left state to take over: starting afresh"),
		  "%s", log);
	w[2] = C.fabric;
	cr_expect_eq(cluster_wait(cluster_spawn(&C, "w", w), 60000), 0, "%s",
		     cluster_output(&C, "w", "err"));
	sio_device_close(dev);
	sio_fabric_close(f);
}
