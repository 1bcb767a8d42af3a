/* SPDX-License-Identifier: MIT */
/*
 * Completions that sleep (struct sio_nvme_qspec.completions): a queue pair
 * in irq mode is woken by the emulated controller's interrupts through the
 * fabric; interrupt coalescing held by the controller ends in the client's
 * bounded sleep, never a hang; what cannot have interrupts is refused for
 * irq and polled for adaptive, saying why; a priority class the controller
 * does not run is refused by name.
 */

#include <criterion/criterion.h>
#include <dirent.h>
#include <signal.h>
#include <string.h>
#include <unistd.h>
#include <json-c/json.h>
#include <smartio/smartio.h>
#include <smartio/nvme/client.h>
#include "cluster.h"

static struct cluster C;

static void down(void)
{
	cluster_down(&C);
}

TestSuite(completions, .fini = down, .timeout = 120);

/* nvme-client on node 1 with @mode: write-verify at @qd until @limit (--ios
 * or --time) reaches @value. */
static pid_t client_run(const char *tag, const char *mode, const char *qd, const char *limit,
			const char *value)
{
	const char *argv[] = { "NVME_CLIENT", "--fabric", C.fabric, "--node", "1",
			       "--count", "2048", "--random", limit, value, "--qd", qd,
			       "--completions", mode, "--json", NULL };

	return cluster_spawn(&C, tag, argv);
}

/* Its JSON, once it ended well. */
static struct json_object *client_end(const char *tag, const char *mode, pid_t pid)
{
	int rc = cluster_wait(pid, 90000);

	cr_assert_eq(rc, 0, "nvme-client --completions %s: exit %d: %s", mode, rc,
		     cluster_output(&C, tag, "err"));
	return cluster_json(&C, tag);
}

static struct json_object *client(const char *tag, const char *mode, const char *qd,
				  const char *ios)
{
	return client_end(tag, mode, client_run(tag, mode, qd, "--ios", ios));
}

Test(completions, irq_and_adaptive_are_woken_by_the_controller)
{
	const char *emu[] = { "--backing", "ram:8M", NULL };
	static const char *const modes[] = { "irq", "adaptive" };

	cluster_up(&C, 2, 32, emu);
	for (int i = 0; i < 2; i++) {
		/* adaptive runs for a time, not a count: it must outlast the
		 * hold below however slow this machine is */
		pid_t pid = i ? client_run(modes[i], modes[i], "4", "--time", "2") :
				client_run(modes[i], modes[i], "4", "--ios", "500");
		struct json_object *o;
		int64_t sleeps, bound;

		if (i) {
			/* adaptive spins while completions come (at most 50 us), and a
			 * preempted spin finds them there: hold the controller for
			 * 100 ms so that it must sleep, and be woken */
			usleep(300000);
			cr_assert_eq(kill(C.emu, SIGSTOP), 0);
			usleep(100000);
			cr_assert_eq(kill(C.emu, SIGCONT), 0);
		}
		o = client_end(modes[i], modes[i], pid);
		sleeps = cluster_jint(o, "completions.sleeps", -1);
		bound = cluster_jint(o, "completions.woken_by_bound", -1);
		cr_expect_eq(cluster_jint(o, "mismatches", -1), 0);
		cr_expect_str_eq(cluster_jstr(o, "completions.mode"), modes[i]);
		/* irq sleeps for every wait; adaptive at least while the controller
		 * was held */
		cr_expect_gt(sleeps, 0, "%s: never slept", modes[i]);
		cr_expect_gt(sleeps - bound, 0, "%s: %lld sleeps, all ended by their bound: no "
			     "interrupt arrived", modes[i], (long long)sleeps);
		json_object_put(o);
	}
}

/* A cluster of two nodes, and a client of node 1 with namespace 1. */
static void client_up(struct sio_fabric **f, struct sio_nvme_client **cl, struct sio_nvme_ns *ns)
{
	const char *emu[] = { "--backing", "ram:8M", NULL };

	cluster_up(&C, 2, 32, emu);
	cr_assert_eq(sio_fabric_open(C.fabric, 1, f), 0, "%s", sio_errmsg());
	cr_assert_eq(sio_nvme_client_open(*f, SIO_DEVICE_ANY, cl), 0, "%s", sio_errmsg());
	cr_assert_eq(sio_nvme_client_ns(*cl, 1, ns), 0, "%s", sio_errmsg());
}

static void read_done(void *arg, int err, uint16_t status)
{
	*(int *)arg = err ? err : 1;
	(void)status;
}

/* One read at QD 1 on @q, reaped by sio_nvme_ioq_reap(). */
static void read_reaped(struct sio_nvme_ioq *q, struct sio_nvme_buf *b, uint32_t nlb)
{
	int st = 0;

	cr_assert_eq(sio_nvme_ioq_read(q, 1, 0, nlb, b, 0, read_done, &st), 0, "%s", sio_errmsg());
	while (!st)
		cr_assert_geq(sio_nvme_ioq_reap(q, 0, 1000000, NULL), 0, "%s", sio_errmsg());
	cr_assert_eq(st, 1);
}

Test(completions, adaptive_sleeps_at_once_when_completions_stopped)
{
	struct sio_nvme_qspec spec;
	struct sio_nvme_ioq_info qi;
	struct sio_nvme_client *cl;
	struct sio_nvme_ioq *q;
	struct sio_nvme_buf *b;
	struct sio_nvme_ns ns;
	struct sio_fabric *f;

	client_up(&f, &cl, &ns);
	cr_assert_eq(sio_nvme_qspec_parse("completions=adaptive", &spec), 0);
	cr_assert_eq(sio_nvme_ioq_create(cl, &spec, &q), 0, "%s", sio_errmsg());
	cr_assert_eq(sio_nvme_buf_alloc(cl, 4096, &b), 0, "%s", sio_errmsg());
	/*
	 * A client issuing now and then: 5 ms between reads, a hundred times
	 * the longest spin. Each wait starts with the queue's completions long
	 * stopped; a spin there is CPU spent on a device that has gone idle.
	 */
	for (int i = 0; i < 20; i++) {
		usleep(5000);
		read_reaped(q, b, 4096 / ns.lba_size);
	}
	cr_assert_eq(sio_nvme_ioq_info(q, &qi), 0);
	cr_expect_eq(qi.completions, SIO_NVME_CPL_ADAPTIVE);
	/* a read the controller answered before the first poll never waits */
	cr_expect_gt(qi.sleeps_direct, 0, "adaptive spun before every sleep (%llu sleeps)",
		     (unsigned long long)qi.sleeps);
	cr_expect_leq(qi.sleeps_direct, qi.sleeps);
	sio_nvme_buf_close(cl, b);
	sio_nvme_ioq_close(q);
	sio_nvme_client_close(cl);
	sio_fabric_close(f);
}

/* Interrupt sockets bound in the fabric's directory (the shm backend's). */
/*
 * Hybrid takes no vector: a second queue pair of a client whose first took
 * the borrow's interrupts is hybrid without a note. Kept 16 deep, it sleeps
 * once the first windows give the device's pace, and every read ends well.
 */
Test(completions, hybrid_sleeps_at_the_devices_pace_without_a_vector)
{
	struct sio_nvme_qspec spec;
	struct sio_nvme_ioq_info qi;
	struct sio_nvme_client *cl;
	struct sio_nvme_ioq *qirq, *q;
	struct sio_nvme_buf *b;
	struct sio_nvme_ns ns;
	struct sio_fabric *f;
	int st[16] = { 0 }, issued = 0, done = 0;
	struct json_object *o;
	uint64_t slept = 0;
	uint32_t nlb;

	client_up(&f, &cl, &ns);
	cr_assert_eq(sio_nvme_qspec_parse("completions=irq", &spec), 0);
	cr_assert_eq(sio_nvme_ioq_create(cl, &spec, &qirq), 0, "%s", sio_errmsg());
	cr_assert_eq(sio_nvme_qspec_parse("completions=hybrid,depth=32", &spec), 0);
	cr_assert_eq(sio_nvme_ioq_create(cl, &spec, &q), 0, "%s", sio_errmsg());
	cr_assert_eq(sio_nvme_ioq_info(q, &qi), 0);
	cr_expect_eq(qi.completions, SIO_NVME_CPL_HYBRID, "%s", qi.completions_note);
	cr_expect_eq(qi.irq_vector, -1);
	cr_expect_str_eq(qi.completions_note, "");
	cr_expect_str_eq(sio_nvme_completions_name(qi.completions), "hybrid");
	nlb = 4096 / ns.lba_size;
	cr_assert_eq(sio_nvme_buf_alloc(cl, 16 * 4096, &b), 0, "%s", sio_errmsg());
	while (done < 4000) {
		for (int i = 0; i < 16; i++) {
			if (st[i] < 0)
				cr_assert_fail("read %d: %s", i, strerror(-st[i]));
			if (st[i] == 1)
				st[i] = 0, done++;
			if (st[i] || issued >= 4000 + 16)
				continue;
			st[i] = 2;	/* in flight: read_done() writes 1 or -errno */
			cr_assert_eq(sio_nvme_ioq_read(q, 1, (uint64_t)(issued++ % 256) * nlb, nlb,
						       b, (uint64_t)i * 4096, read_done, &st[i]),
				     0, "%s", sio_errmsg());
		}
		cr_assert_geq(sio_nvme_ioq_reap(q, 0, 1000000, &slept), 0, "%s", sio_errmsg());
	}
	/* a hybrid queue that never slept polled all along */
	cr_expect_gt(slept, 0, "hybrid never slept in 4000 reads at QD 16");
	sio_nvme_buf_close(cl, b);
	sio_nvme_ioq_close(q);
	sio_nvme_ioq_close(qirq);
	sio_nvme_client_close(cl);
	sio_fabric_close(f);
	/* and nvme-client takes it by name, its data verified */
	o = client("hybrid", "hybrid", "8", "500");
	cr_expect_str_eq(cluster_jstr(o, "completions.mode"), "hybrid");
	cr_expect_eq(cluster_jint(o, "mismatches", -1), 0);
	json_object_put(o);
}

static int irq_sockets(void)
{
	char dir[512];
	struct dirent *e;
	DIR *d;
	int n = 0;

	cluster_dir(&C, dir, sizeof(dir));
	d = opendir(dir);
	cr_assert(d, "%s", dir);
	while ((e = readdir(d)))
		n += !strncmp(e->d_name, "irq-", 4);
	closedir(d);
	return n;
}

Test(completions, client_killed_asleep_leaves_its_successor_a_clean_vector)
{
	const char *emu[] = { "--backing", "ram:8M", NULL };
	const char *argv[] = { "NVME_CLIENT", "--fabric", NULL, "--node", "1", "--op", "read",
			       "--random", "--qd", "1", "--time", "30", "--completions", "irq",
			       NULL };
	struct json_object *o;
	struct sio_fabric *f;
	int before, bound;
	pid_t pid;

	cluster_up(&C, 2, 32, emu);
	argv[2] = C.fabric;
	before = irq_sockets();
	pid = cluster_spawn(&C, "victim", argv);
	usleep(1500000);	/* running, and asleep between completions */
	bound = irq_sockets();
	cr_assert_eq(kill(pid, SIGKILL), 0);
	cluster_wait(pid, 10000);
	/* reaped (by the manager, or here), its vector's socket is gone with it */
	cr_assert_eq(sio_fabric_open(C.fabric, 1, &f), 0, "%s", sio_errmsg());
	sio_fabric_reap(f);
	sio_fabric_close(f);
	cr_expect_gt(bound, before, "the victim bound no interrupt socket");
	cr_expect_eq(irq_sockets(), before, "the dead client left %d interrupt socket(s) bound",
		     irq_sockets() - before);
	/* same node, same queue pair and vector once the manager reaped it */
	o = client("successor", "irq", "1", "200");
	cr_expect_eq(cluster_jint(o, "mismatches", -1), 0);
	cr_expect_gt(cluster_jint(o, "completions.sleeps", -1) -
		     cluster_jint(o, "completions.woken_by_bound", -1), 0,
		     "the successor's interrupts do not arrive");
	json_object_put(o);
}

Test(completions, coalesced_interrupt_ends_in_the_bounded_sleep)
{
	/* hold each CQ's interrupt for 8 entries or 25.5 ms: a client at QD 1
	 * never has 8, so every wait outlasts the 10 ms sleep and polls */
	const char *emu[] = { "--backing", "ram:8M", NULL };
	const char *mgr[] = { "--irq-coalesce", "8,25500", NULL };
	struct json_object *o;

	cluster_up(&C, 2, 32, emu);
	cluster_stop(&C.mgr);
	cluster_start_mgr_args(&C, mgr);
	o = client("coalesced", "irq", "1", "20");
	cr_expect_eq(cluster_jint(o, "mismatches", -1), 0);
	cr_expect_eq(cluster_jint(o, "write.ios", -1), 20);
	cr_expect_geq(cluster_jint(o, "completions.woken_by_bound", -1), 20,
		      "the controller did not hold the interrupts back: %lld of 40 waits ended "
		      "by the sleep's bound", (long long)cluster_jint(o, "completions.woken_by_bound", -1));
	json_object_put(o);
}

Test(completions, what_cannot_sleep_is_refused_or_polled_saying_why)
{
	const char *emu[] = { "--backing", "ram:8M", NULL };
	struct sio_nvme_qspec spec;
	struct sio_nvme_ioq_info qi;
	struct sio_nvme_ioq *q, *q2;
	struct sio_nvme_client *cl;
	struct sio_fabric *f;

	cluster_up(&C, 2, 32, emu);
	cr_assert_eq(sio_fabric_open(C.fabric, 1, &f), 0, "%s", sio_errmsg());
	cr_assert_eq(sio_nvme_client_open(f, SIO_DEVICE_ANY, &cl), 0, "%s", sio_errmsg());
	cr_assert_eq(sio_nvme_qspec_parse("completions=fast", &spec), -EINVAL);
	cr_assert(strstr(sio_errmsg(), "poll, irq, adaptive or hybrid"), "%s", sio_errmsg());
	cr_assert_eq(sio_nvme_qspec_parse("completions=irq", &spec), 0);
	cr_assert_eq(sio_nvme_ioq_create(cl, &spec, &q), 0, "%s", sio_errmsg());
	sio_nvme_ioq_info(q, &qi);
	cr_expect_eq(qi.completions, SIO_NVME_CPL_IRQ);
	cr_expect_gt(qi.irq_vector, 0);
	cr_expect_str_empty(qi.completions_note);

	/* this borrow's interrupts are q's: a second queue pair has none */
	cr_assert_eq(sio_nvme_ioq_create(cl, &spec, &q2), -EBUSY);
	cr_expect(strstr(sio_errmsg(), "completions=irq") && strstr(sio_errmsg(), "adaptive"),
		  "%s", sio_errmsg());
	cr_assert_eq(sio_nvme_qspec_parse("completions=adaptive", &spec), 0);
	cr_assert_eq(sio_nvme_ioq_create(cl, &spec, &q2), 0, "%s", sio_errmsg());
	sio_nvme_ioq_info(q2, &qi);
	cr_expect_eq(qi.completions, SIO_NVME_CPL_POLL, "adaptive without interrupts polls");
	cr_expect(strstr(qi.completions_note, "completions=adaptive polls"), "note: '%s'",
		  qi.completions_note);
	sio_nvme_ioq_close(q2);
	sio_nvme_ioq_close(q);

	/* the manager runs round robin: a priority class is refused by name */
	cr_assert_eq(sio_nvme_qspec_parse("prio=2", &spec), 0);
	cr_assert_eq(sio_nvme_ioq_create(cl, &spec, &q), -ENOTSUP);
	cr_expect(strstr(sio_errmsg(), "medium") && strstr(sio_errmsg(), "--arbitration wrr"),
		  "%s", sio_errmsg());
	sio_nvme_client_close(cl);
	sio_fabric_close(f);
}
