/* SPDX-License-Identifier: MIT */
/*
 * Asynchronous events end to end: the manager keeps a request outstanding,
 * takes a temperature-threshold event and a namespace change across a
 * controller restart, and hands them to clients: in the mailbox's event ring
 * (read when the client asks, even for events from before it came) and as
 * SIO_EV_DEVICE_NOTICE on the fabric. The manager runs in this process so
 * that the test can move a threshold with its admin queue.
 */
#include <criterion/criterion.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <sys/wait.h>
#include <smartio/smartio.h>
#include <smartio/nvme/client.h>
#include <smartio/nvme/manager.h>
#include "cluster.h"

static struct cluster C;
static char img[256], state[256];

static void down(void)
{
	cluster_down(&C);
	unlink(img);
	unlink(state);
}

TestSuite(aer, .fini = down, .timeout = 120);

static uint32_t devid(void)
{
	return cluster_device_id(&C);
}

/* Serve (bounded) until the client sees @n events in its ring. */
static void serve_until(struct sio_nvme_manager *m, struct sio_nvme_client *cl, uint32_t *seq,
			uint32_t *dw0, int n)
{
	int got = 0;

	for (int i = 0; i < 200 && got < n; i++) {
		cr_assert_geq(sio_nvme_manager_serve(m, 10), 0, "%s", sio_errmsg());
		int r = sio_nvme_client_events(cl, seq, dw0 + got, (uint32_t)(n - got));
		cr_assert_geq(r, 0, "%s", sio_errmsg());
		got += r;
	}
	cr_assert_eq(got, n, "%d event(s) reached the client", n);
}

/* Opening and closing a client need the manager to answer: serve while a
 * thread does it. */
struct beside {
	struct sio_fabric *f;
	struct sio_nvme_client *cl;
	int ret;
	volatile int done;
};

static void *open_client(void *arg)
{
	struct beside *o = arg;

	o->ret = sio_nvme_client_open(o->f, SIO_DEVICE_ANY, &o->cl);
	o->done = 1;
	return NULL;
}

static void *close_client(void *arg)
{
	struct beside *o = arg;

	sio_nvme_client_close(o->cl);
	o->done = 1;
	return NULL;
}

static void serving(struct sio_nvme_manager *m, void *(*fn)(void *), struct beside *o)
{
	pthread_t t;

	cr_assert_eq(pthread_create(&t, NULL, fn, o), 0);
	for (int i = 0; i < 3000 && !o->done; i++)
		sio_nvme_manager_serve(m, 2);
	pthread_join(t, NULL);
}

static struct sio_nvme_client *client(struct sio_nvme_manager *m, struct sio_fabric *f)
{
	struct beside o = { .f = f };

	serving(m, open_client, &o);
	cr_assert_eq(o.ret, 0, "client: %s", sio_errmsg());
	return o.cl;
}

static void client_close(struct sio_nvme_manager *m, struct sio_nvme_client *cl)
{
	struct beside o = { .cl = cl };

	serving(m, close_client, &o);
}

static bool notice(struct sio_fabric *f, uint32_t dev, uint32_t dw0)
{
	struct sio_event ev[16];
	struct pollfd p = { .fd = sio_event_fd(f), .events = POLLIN };

	for (int tries = 0; tries < 50; tries++) {
		int n = sio_event_read(f, ev, 16);

		for (int i = 0; i < n; i++)
			if (ev[i].type == SIO_EV_DEVICE_NOTICE && ev[i].device == (int32_t)dev &&
			    ev[i].info == dw0)
				return true;
		poll(&p, 1, 100);
	}
	return false;
}

Test(aer, temperature_and_namespace_events_reach_clients)
{
	const uint32_t temp = 1 | 1u << 8 | 2u << 16;	/* SMART, temperature, log 02h */
	const uint32_t nsch = 2 | 0u << 8 | 4u << 16;	/* notice, namespace attribute, log 04h */
	struct sio_fabric *fm, *fc;
	struct sio_nvme_manager *m;
	struct sio_nvme_client *cl;
	uint32_t dw0[4], seq = 0;

	snprintf(img, sizeof(img), "/tmp/nvmet-aer-%d.img", (int)getpid());
	snprintf(state, sizeof(state), "/tmp/nvmet-aer-%d.ns", (int)getpid());
	unlink(img);
	unlink(state);
	const char *emu[] = { "--backing", img, "--ns-state", state, "--ns", "4M", NULL };
	cluster_up(&C, 2, 32, emu);
	cluster_stop(&C.mgr);
	cr_assert_eq(sio_fabric_open(C.fabric, 0, &fm), 0, "%s", sio_errmsg());
	cr_assert_eq(sio_fabric_open(C.fabric, 1, &fc), 0, "%s", sio_errmsg());
	cr_assert_eq(sio_nvme_manager_start(fm, devid(), NULL, &m), 0, "%s", sio_errmsg());
	cr_assert_eq(sio_nvme_ctrl_aer_armed(sio_nvme_manager_ctrl(m)), 1, "a request outstanding");
	cl = client(m, fc);

	/* the composite (313 K) is over a 300 K threshold: a SMART event */
	cr_assert_eq(sio_nvme_ctrl_set_features(sio_nvme_manager_ctrl(m), NVME_FEAT_FID_TEMP_THRESH,
						300, NULL, NULL), 0, "%s", sio_errmsg());
	serve_until(m, cl, &seq, dw0, 1);
	cr_assert_eq(dw0[0], temp, "0x%x", dw0[0]);
	cr_assert(notice(fc, devid(), temp), "SIO_EV_DEVICE_NOTICE on the fabric");
	cr_assert_eq(sio_nvme_ctrl_aer_armed(sio_nvme_manager_ctrl(m)), 1, "armed again");
	/* the SMART log was read (unmasked): the next crossing is reported too */
	cr_assert_eq(sio_nvme_ctrl_set_features(sio_nvme_manager_ctrl(m), NVME_FEAT_FID_TEMP_THRESH,
						343, NULL, NULL), 0);
	cr_assert_eq(sio_nvme_ctrl_set_features(sio_nvme_manager_ctrl(m), NVME_FEAT_FID_TEMP_THRESH,
						310, NULL, NULL), 0);
	serve_until(m, cl, &seq, dw0, 1);
	cr_assert_eq(dw0[0], temp);
	client_close(m, cl);
	sio_nvme_manager_close(m);

	/* a new controller process on the same store with a second namespace */
	cluster_stop(&C.emu);
	const char *emu2[] = { "--backing", img, "--ns-state", state, "--ns", "4M", "--ns", "4M",
			       NULL };
	cluster_start_emu(&C, emu2);
	cr_assert_eq(sio_nvme_manager_start(fm, devid(), NULL, &m), 0, "%s", sio_errmsg());
	for (int i = 0; i < 5; i++)
		sio_nvme_manager_serve(m, 10);	/* the event comes before any client */
	cl = client(m, fc);
	seq = 0;
	serve_until(m, cl, &seq, dw0, 1);
	cr_assert_eq(dw0[0], nsch, "a client that comes later still reads it: 0x%x", dw0[0]);
	struct sio_nvme_ctrl_info ci;
	sio_nvme_client_info(cl, &ci);
	cr_assert_eq(ci.nn, 2);
	cr_assert_eq(sio_nvme_client_events(cl, &seq, dw0, 4), 0, "nothing new");
	client_close(m, cl);
	sio_nvme_manager_close(m);
	sio_fabric_close(fc);
	sio_fabric_close(fm);
}

/*
 * A manager killed while its event request is outstanding: the successor
 * that takes the controller over claims that request's command id (it must
 * not reuse it) and takes its completion as the event it is, without
 * arming a second request.
 */
Test(aer, a_successor_takes_the_crashed_managers_request_over)
{
	const uint32_t temp = 1 | 1u << 8 | 2u << 16;	/* SMART, temperature, log 02h */
	const char *emu[] = { "--backing", "ram:16M", NULL };
	const char *io[] = { "NVME_CLIENT", "--fabric", NULL, "--node", "1", "--op", "write-verify",
			     "--count", "256", "--qd", "2", "--time", "6", NULL };
	struct sio_fabric *fm, *fc;
	struct sio_nvme_manager *m;
	struct sio_nvme_client *cl;
	uint32_t dw0[2], seq = 0;
	pid_t p;

	cluster_up(&C, 3, 32, emu);
	io[2] = C.fabric;
	p = cluster_spawn(&C, "io", io);	/* a running client keeps the device borrowed */
	usleep(500000);
	cr_assert_eq(kill(C.mgr, SIGKILL), 0);
	cr_assert_eq(cluster_wait(C.mgr, 5000), 128 + SIGKILL);
	C.mgr = 0;
	cr_assert_eq(sio_fabric_open(C.fabric, 0, &fm), 0, "%s", sio_errmsg());
	cr_assert_eq(sio_fabric_open(C.fabric, 2, &fc), 0, "%s", sio_errmsg());
	cr_assert_eq(sio_nvme_manager_start(fm, devid(), NULL, &m), 0, "%s", sio_errmsg());
	/* one outstanding: the claimed one (an unclaimed one would take the
	 * event below as a spurious completion, and the client would see none) */
	cr_assert_eq(sio_nvme_ctrl_aer_armed(sio_nvme_manager_ctrl(m)), 1,
		     "one event request outstanding");
	cl = client(m, fc);
	cr_assert_eq(sio_nvme_ctrl_set_features(sio_nvme_manager_ctrl(m), NVME_FEAT_FID_TEMP_THRESH,
						300, NULL, NULL), 0, "%s", sio_errmsg());
	serve_until(m, cl, &seq, dw0, 1);
	cr_assert_eq(dw0[0], temp, "0x%x", dw0[0]);
	cr_assert_eq(sio_nvme_ctrl_aer_armed(sio_nvme_manager_ctrl(m)), 1, "armed again");
	/* the I/O client ends on its own, with no error across the take-over */
	int st = -1;

	for (int i = 0; i < 2000 && waitpid(p, &st, WNOHANG) != p; i++)
		sio_nvme_manager_serve(m, 10);
	cr_expect(WIFEXITED(st) && WEXITSTATUS(st) == 0, "the I/O client: %s",
		  cluster_output(&C, "io", "err"));
	client_close(m, cl);
	sio_nvme_manager_close(m);
	sio_fabric_close(fc);
	sio_fabric_close(fm);
}
