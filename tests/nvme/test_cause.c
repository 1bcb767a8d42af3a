/* SPDX-License-Identifier: MIT */
/*
 * Errors that name their cause: a client whose link to the lender is down,
 * whose windows ran out, or whose lender left the fabric is told that, with
 * the node and adapter, not an NVMe status alone.
 */

#include <criterion/criterion.h>
#include <signal.h>
#include <string.h>
#include <unistd.h>
#include <smartio/smartio.h>
#include <smartio/nvme/client.h>
#include "cluster.h"

static struct cluster C;

static void down(void)
{
	cluster_down(&C);
}

TestSuite(cause, .fini = down, .timeout = 120);

static const char *emu[] = { "--backing", "ram:8M", NULL };

static void client(int node, struct sio_fabric **f, struct sio_nvme_client **cl)
{
	cr_assert_eq(sio_fabric_open(C.fabric, node, f), 0, "%s", sio_errmsg());
	cr_assert_eq(sio_nvme_client_open(*f, SIO_DEVICE_ANY, cl), 0, "%s", sio_errmsg());
}

/* Identify with @node's links down fails naming the link, then, the link
 * repaired, works. */
static void identify_with_link_down(struct sio_fabric *admin, struct sio_nvme_client *cl,
				    int node, const char *want)
{
	static uint8_t id[4096];
	int ret;

	cr_assert_eq(sio_link_set(admin, node, -1, false), 0, "%s", sio_errmsg());
	ret = sio_nvme_client_identify(cl, NVME_IDENTIFY_CNS_CTRL, 0, id);
	cr_expect_eq(ret, -EIO, "identify with node %d's link down: %d %s", node, ret,
		     sio_errmsg());
	cr_expect(strstr(sio_errmsg(), want), "wanted \"%s\" in: %s", want, sio_errmsg());
	/* The controller's status stays, as the detail. */
	cr_expect(strstr(sio_errmsg(), "data transfer error"), "%s", sio_errmsg());
	cr_assert_eq(sio_link_set(admin, node, -1, true), 0, "%s", sio_errmsg());
	ret = sio_nvme_client_identify(cl, NVME_IDENTIFY_CNS_CTRL, 0, id);
	cr_expect_eq(ret, 0, "identify with the link back up: %s", sio_errmsg());
}

Test(cause, link_down_is_named_with_its_node_and_adapter)
{
	struct sio_fabric *f, *admin;
	struct sio_nvme_client *cl;

	cluster_up(&C, 2, 32, emu);
	/* a link down is waited for before the request fails (client.c) */
	setenv("SMARTIO_NVME_LINK_GRACE_MS", "500", 1);
	client(1, &f, &cl);
	unsetenv("SMARTIO_NVME_LINK_GRACE_MS");
	cr_assert_eq(sio_fabric_open(C.fabric, 0, &admin), 0, "%s", sio_errmsg());
	identify_with_link_down(admin, cl, 1, "node 1's link to the lender (adapter 0) is down");
	identify_with_link_down(admin, cl, 0, "the lender's link (node 0, adapter 0) is down");
	sio_nvme_client_close(cl);
	sio_fabric_close(admin);
	sio_fabric_close(f);
}

Test(cause, windows_run_out_is_named_with_the_adapter)
{
	struct sio_nvme_ioq *q[16];
	struct sio_fabric *f;
	struct sio_nvme_client *cl;
	int ret = 0, n;

	cluster_up(&C, 2, 4, emu);
	client(1, &f, &cl);
	for (n = 0; n < 16; n++) {
		ret = sio_nvme_ioq_create(cl, NULL, &q[n]);
		if (ret)
			break;
	}
	cr_expect_eq(ret, -ENOSPC, "queue pair %d of a fabric with 4 windows: %d %s", n, ret,
		     sio_errmsg());
	cr_expect(strstr(sio_errmsg(), "adapter 0") && strstr(sio_errmsg(), "node ") &&
		  strstr(sio_errmsg(), "all 4 windows"), "%s", sio_errmsg());
	while (n-- > 0)
		sio_nvme_ioq_close(q[n]);
	/* Freed, they serve again. */
	ret = sio_nvme_ioq_create(cl, NULL, &q[0]);
	cr_expect_eq(ret, 0, "%s", sio_errmsg());
	sio_nvme_ioq_close(q[0]);
	sio_nvme_client_close(cl);
	sio_fabric_close(f);
}

Test(cause, lender_that_left_is_named)
{
	struct sio_fabric *f;
	struct sio_nvme_client *cl;
	struct sio_nvme_ioq *q = NULL;
	uint32_t res;
	int ret = 0, i;

	cluster_up(&C, 2, 32, emu);
	client(1, &f, &cl);
	kill(C.emu, SIGKILL);
	cluster_wait(C.emu, 2000);
	C.emu = 0;
	/* The registry reclaims the dead lender's device within moments. */
	for (i = 0; i < 100; i++) {
		ret = sio_nvme_ioq_create(cl, NULL, &q);
		if (ret == -ENODEV)
			break;
		sio_nvme_ioq_close(q);
		q = NULL;
		sio_fabric_reap(f);
		usleep(50000);
	}
	cr_expect_eq(ret, -ENODEV, "a queue pair on a device whose lender died: %d %s", ret,
		     sio_errmsg());
	cr_expect(strstr(sio_errmsg(), "its lender, node 0, has left the fabric"), "%s",
		  sio_errmsg());
	/* The manager stops serving the gone device; the client is told why. */
	for (i = 0; i < 100; i++) {
		ret = sio_nvme_client_get_features(cl, NVME_FEAT_FID_NUM_QUEUES, 0, &res);
		if (ret == -ENOTCONN)
			break;
		usleep(50000);
	}
	cr_expect_eq(ret, -ENOTCONN, "%d %s", ret, sio_errmsg());
	cr_expect(strstr(sio_errmsg(), "is gone, its lender, node 0, has left"), "%s",
		  sio_errmsg());
	sio_nvme_client_close(cl);
	sio_fabric_close(f);
}
