/* SPDX-License-Identifier: MIT */
/*
 * Batched doorbells (sio_nvme_ioq_hold): commands held back are not seen by
 * the controller until sio_nvme_ioq_ring(), the next poll, or hold turned
 * off; a second queue pair reads the blocks to tell.
 */

#include <criterion/criterion.h>
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

TestSuite(hold, .fini = down, .timeout = 60);

static void done(void *arg, int err, uint16_t status)
{
	*(int *)arg = err ? err : 1;
	(void)status;
}

/* The first byte of every block of 4 KiB at @lba, read through @q. */
static uint8_t read_back(struct sio_nvme_ioq *q, struct sio_nvme_buf *b, uint32_t nlb, uint64_t lba)
{
	memset(b->va, 0x11, 4096);
	cr_assert_eq(sio_nvme_read(q, 1, lba, nlb, b, 0), 0, "%s", sio_errmsg());
	for (int i = 1; i < 4096; i++)
		cr_assert_eq(((uint8_t *)b->va)[i], ((uint8_t *)b->va)[0], "byte %d", i);
	return ((uint8_t *)b->va)[0];
}

Test(hold, held_commands_reach_the_controller_only_when_rung)
{
	const char *emu[] = { "--backing", "ram:8M", NULL };
	struct sio_nvme_buf *w, *r;
	struct sio_nvme_ioq *q, *q2;
	struct sio_nvme_client *cl;
	struct sio_nvme_ns ns;
	struct sio_fabric *f;
	uint32_t nlb;
	int st;

	cluster_up(&C, 2, 32, emu);
	cr_assert_eq(sio_fabric_open(C.fabric, 1, &f), 0, "%s", sio_errmsg());
	cr_assert_eq(sio_nvme_client_open(f, SIO_DEVICE_ANY, &cl), 0, "%s", sio_errmsg());
	cr_assert_eq(sio_nvme_client_ns(cl, 1, &ns), 0, "%s", sio_errmsg());
	nlb = 4096 / ns.lba_size;
	cr_assert_eq(sio_nvme_ioq_create(cl, NULL, &q), 0, "%s", sio_errmsg());
	cr_assert_eq(sio_nvme_ioq_create(cl, NULL, &q2), 0, "%s", sio_errmsg());
	cr_assert_eq(sio_nvme_buf_alloc(cl, 4096, &w), 0, "%s", sio_errmsg());
	cr_assert_eq(sio_nvme_buf_alloc(cl, 4096, &r), 0, "%s", sio_errmsg());
	cr_assert_eq(sio_nvme_ioq_hold(q, true), 0, "%s", sio_errmsg());

	/* held: the controller has not seen it after 200 ms */
	memset(w->va, 0x5a, 4096);
	st = 0;
	cr_assert_eq(sio_nvme_ioq_write(q, 1, 0, nlb, w, 0, done, &st), 0, "%s", sio_errmsg());
	usleep(200000);
	cr_expect_eq(read_back(q2, r, nlb, 0), 0, "a held write reached the controller");
	cr_expect_eq(st, 0);
	/* rung: it runs */
	sio_nvme_ioq_ring(q);
	cr_assert_eq(sio_nvme_ioq_wait(q), 0, "%s", sio_errmsg());
	cr_expect_eq(st, 1);
	cr_expect_eq(read_back(q2, r, nlb, 0), 0x5a);

	/* a poll rings what was held: nothing waits unseen */
	memset(w->va, 0xa5, 4096);
	st = 0;
	cr_assert_eq(sio_nvme_ioq_write(q, 1, nlb, nlb, w, 0, done, &st), 0, "%s", sio_errmsg());
	cr_assert_eq(sio_nvme_ioq_wait(q), 0, "%s", sio_errmsg());
	cr_expect_eq(st, 1);
	cr_expect_eq(read_back(q2, r, nlb, nlb), 0xa5);

	/* turning hold off rings what was held */
	memset(w->va, 0x3c, 4096);
	st = 0;
	cr_assert_eq(sio_nvme_ioq_write(q, 1, 2 * nlb, nlb, w, 0, done, &st), 0, "%s", sio_errmsg());
	usleep(100000);
	cr_expect_eq(read_back(q2, r, nlb, 2 * nlb), 0);
	cr_assert_eq(sio_nvme_ioq_hold(q, false), 0);
	usleep(100000);
	cr_expect_eq(read_back(q2, r, nlb, 2 * nlb), 0x3c, "hold off did not ring");
	cr_assert_eq(sio_nvme_ioq_wait(q), 0, "%s", sio_errmsg());

	sio_nvme_buf_close(cl, w);
	sio_nvme_buf_close(cl, r);
	sio_nvme_ioq_close(q);
	sio_nvme_ioq_close(q2);
	sio_nvme_client_close(cl);
	sio_fabric_close(f);
}
