/* SPDX-License-Identifier: MIT */
/*
 * Queue pairs in caller-provided memory (sio_nvme_ioq_create_at), as the
 * GPU driver uses them: the caller places and maps the SQ and CQ, the
 * manager creates them, the caller drives them with queue.h.
 */

#include <criterion/criterion.h>
#include <string.h>
#include <unistd.h>
#include <smartio/smartio.h>
#include <smartio/nvme/client.h>
#include <smartio/nvme/queue.h>
#include "cluster.h"

static struct cluster C;

static void down(void)
{
	cluster_down(&C);
}

TestSuite(ioq_at, .fini = down, .timeout = 60);

#define DEPTH 16

Test(ioq_at, caller_placed_queue_does_io_and_bad_input_is_refused)
{
	const char *emu[] = { "--backing", "ram:8M", NULL };
	struct sio_nvme_ctrl_info ci;
	struct sio_fabric *f;
	struct sio_nvme_client *cl;
	struct sio_segment *seg;
	struct sio_nvme_buf *buf;
	struct sio_nvme_queue q;
	struct sio_nvme_cmd cmd;
	struct sio_nvme_cpl cpl;
	uint16_t cids[DEPTH], qid, qid2;
	uint64_t cookies[DEPTH], bus, cookie;
	uint16_t ids[DEPTH];
	uint8_t *va;
	uint32_t *p, i, spins;
	void *v;
	int ret;

	cluster_up(&C, 2, 32, emu);
	cr_assert_eq(sio_fabric_open(C.fabric, 1, &f), 0, "%s", sio_errmsg());
	cr_assert_eq(sio_nvme_client_open(f, SIO_DEVICE_ANY, &cl), 0, "%s", sio_errmsg());
	sio_nvme_client_info(cl, &ci);

	/* One message for every layer: a refusal relayed from the manager
	 * survives the unmapping of the admin buffer after it, and a library
	 * failure under the driver reads as the driver's words and its cause. */
	{
		static uint8_t id[4096];

		cr_expect_eq(sio_nvme_client_identify(cl, 0x10, 0, id), -EINVAL);
		cr_expect(strstr(sio_errmsg(), "manager: Identify CNS 0x10 is not relayed"),
			  "%s", sio_errmsg());
		cr_expect_lt(sio_nvme_buf_alloc(cl, 1ull << 50, &buf), 0);
		cr_expect(strstr(sio_errmsg(), "cannot create a 1125899906842624-byte data "
				 "buffer: ") && !strstr(sio_errmsg(), "buffer: no error"),
			  "%s", sio_errmsg());
	}

	/* Bad input: clear errors, nothing created. */
	cr_expect_eq(sio_nvme_ioq_create_at(cl, 0, 0x2000, DEPTH, 0, &qid), -EINVAL);
	cr_expect(strstr(sio_errmsg(), "aligned"), "%s", sio_errmsg());
	cr_expect_eq(sio_nvme_ioq_create_at(cl, 0x1000, 0x2001, DEPTH, 0, &qid), -EINVAL);
	cr_expect_eq(sio_nvme_ioq_create_at(cl, 0x1000, 0x2000, 1, 0, &qid), -EINVAL);
	cr_expect(strstr(sio_errmsg(), "depth"), "%s", sio_errmsg());
	cr_expect_eq(sio_nvme_ioq_create_at(cl, 0x1000, 0x2000, DEPTH, 4, &qid), -EINVAL);
	cr_expect_eq(sio_nvme_ioq_create_at(cl, 0x1000, 0x2000, DEPTH, 0, NULL), -EINVAL);
	cr_expect_eq(sio_nvme_ioq_delete_at(cl, 0), -EINVAL);

	/* SQ then CQ in one segment of our own, mapped for the device. */
	cr_assert_eq(sio_segment_create(f, 0, 2 * 4096, 0, &seg), 0, "%s", sio_errmsg());
	cr_assert_eq(sio_segment_map(seg, &v), 0, "%s", sio_errmsg());
	va = v;
	memset(va, 0, 2 * 4096);
	cr_assert_eq(sio_device_map(sio_nvme_client_device(cl), seg, &bus), 0, "%s",
		     sio_errmsg());
	ret = sio_nvme_ioq_create_at(cl, bus, bus + 4096, DEPTH, 0, &qid);
	cr_assert_eq(ret, 0, "%s", sio_errmsg());
	cr_assert(qid >= 1 && qid <= ci.io_queues, "qid %u", qid);

	{
		struct sio_segment *bar0;
		void *regs;

		cr_assert_eq(sio_device_bar(sio_nvme_client_device(cl), 0, &bar0), 0);
		cr_assert_eq(sio_segment_map(bar0, &regs), 0, "%s", sio_errmsg());
		sio_nvme_queue_init(&q, qid, DEPTH, va, va + 4096,
				    (volatile uint32_t *)((uint8_t *)regs +
					sio_nvme_doorbell_offset(qid, 0, ci.db_stride)),
				    (volatile uint32_t *)((uint8_t *)regs +
					sio_nvme_doorbell_offset(qid, 1, ci.db_stride)),
				    cids, cookies, ids);
	}
	cr_assert_eq(sio_nvme_buf_alloc(cl, 4096, &buf), 0, "%s", sio_errmsg());
	p = buf->va;
	for (i = 0; i < 1024; i++)
		p[i] = 0xa5a50000u + i;

	/* Write 8 blocks, read them back, through the caller's queue. */
	for (i = 0; i < 2; i++) {
		if (i == 1)
			memset(buf->va, 0, 4096);
		sio_nvme_cmd_rw(&cmd, i ? nvme_cmd_read : nvme_cmd_write, 1, 40, 8,
				buf->bus, 0);
		cr_assert_geq(sio_nvme_sq_submit(&q, &cmd, 7 + i), 0);
		sio_nvme_sq_ring(&q);
		for (spins = 0; !sio_nvme_cq_peek(&q) && spins < 2000000; spins++)
			if (spins > 1000)
				usleep(10);
		cr_assert(sio_nvme_cq_peek(&q), "no completion");
		cr_assert_geq(sio_nvme_cq_pop(&q, &cpl, &cookie), 0);
		sio_nvme_cq_ring(&q);
		cr_expect_eq(cookie, 7 + i);
		cr_expect_eq(SIO_NVME_STATUS_CODE(cpl.status), 0, "status 0x%x", cpl.status);
	}
	for (i = 0; i < 1024; i++)
		cr_assert_eq(p[i], 0xa5a50000u + i, "word %u", i);

	/* Another client may not delete it; its owner may, once. */
	{
		struct sio_fabric *f2;
		struct sio_nvme_client *other;

		cr_assert_eq(sio_fabric_open(C.fabric, 1, &f2), 0, "%s", sio_errmsg());
		cr_assert_eq(sio_nvme_client_open(f2, -1, &other), 0, "%s", sio_errmsg());
		cr_expect_eq(sio_nvme_ioq_delete_at(other, qid), -EPERM, "%s",
			     sio_errmsg());
		sio_nvme_client_close(other);
		sio_fabric_close(f2);
	}
	cr_expect_eq(sio_nvme_ioq_delete_at(cl, qid), 0, "%s", sio_errmsg());
	cr_expect_eq(sio_nvme_ioq_delete_at(cl, qid), -EPERM);
	/* The id is free again. */
	memset(va, 0, 2 * 4096);
	cr_expect_eq(sio_nvme_ioq_create_at(cl, bus, bus + 4096, DEPTH, 0, &qid2), 0, "%s",
		     sio_errmsg());
	cr_expect_eq(qid2, qid);
	/* Left for sio_nvme_client_close() to delete; returning the borrow
	 * unmaps the segment for the device. */
	sio_nvme_buf_close(cl, buf);
	sio_nvme_client_close(cl);
	sio_segment_close(seg);
	sio_fabric_close(f);
}
