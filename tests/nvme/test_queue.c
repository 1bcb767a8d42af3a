/* SPDX-License-Identifier: MIT */
/*
 * queue.h against a controller played by hand over plain memory: cid
 * tracking, SQ head from completions, phase wrap, full queues, doorbells.
 */

#include <criterion/criterion.h>
#include <string.h>
#include <smartio/nvme/queue.h>

#define QS 8

static struct sio_nvme_cmd sq[QS];
static struct sio_nvme_cpl cq[QS];
static uint32_t sqdb, cqdb;
static uint16_t cids[QS - 1];
static uint64_t cookies[QS - 1];
static uint8_t busy[QS - 1];
static struct sio_nvme_queue q;
/* the controller's view */
static uint16_t c_sqhead, c_cqtail;
static uint8_t c_phase;

static void setup(void)
{
	memset(sq, 0, sizeof(sq));
	memset(cq, 0, sizeof(cq));
	sqdb = cqdb = 0;
	c_sqhead = c_cqtail = 0;
	c_phase = 1;
	cr_assert_eq(sio_nvme_queue_init(&q, 3, QS, sq, cq, &sqdb, &cqdb, cids, cookies, busy), 0);
}

/* Fetch one command (if the doorbell says so) and complete it with @sc. */
static int ctrl_fetch(struct sio_nvme_cmd *out)
{
	if (c_sqhead == sqdb)
		return 0;
	*out = sq[c_sqhead];
	c_sqhead = (uint16_t)((c_sqhead + 1) % QS);
	return 1;
}

static void ctrl_complete(uint16_t cid, uint16_t sc)
{
	struct sio_nvme_cpl *c = &cq[c_cqtail];

	c->result = 0;
	c->sq_head = c_sqhead;
	c->sq_id = 3;
	c->cid = cid;
	c->status = (uint16_t)(sc << 1 | c_phase);
	if (++c_cqtail == QS) {
		c_cqtail = 0;
		c_phase ^= 1;
	}
}

TestSuite(queue, .init = setup);

Test(queue, init_rejects_bad_sizes)
{
	cr_assert_eq(sio_nvme_queue_init(&q, 1, 1, sq, cq, &sqdb, &cqdb, cids, cookies, busy), -22);
	cr_assert_eq(sio_nvme_queue_init(&q, 1, 65536, sq, cq, &sqdb, &cqdb, cids, cookies, busy), -22);
}

Test(queue, submit_ring_complete)
{
	struct sio_nvme_cmd cmd, got;
	struct sio_nvme_cpl cpl;
	uint64_t ck;
	int cid;

	sio_nvme_cmd_rw(&cmd, SIO_NVME_CMD_READ, 1, 0x123456789ull, 8, 0x1000, 0);
	cid = sio_nvme_sq_submit(&q, &cmd, 42);
	cr_assert_geq(cid, 0);
	cr_assert_eq(sqdb, 0, "no doorbell before ring");
	sio_nvme_sq_ring(&q);
	cr_assert_eq(sqdb, 1);
	cr_assert(ctrl_fetch(&got));
	cr_assert_eq(got.cid, cid);
	cr_assert_eq(got.cdw10, 0x23456789u);
	cr_assert_eq(got.cdw11, 0x1u);
	cr_assert_eq(got.cdw12, 7u);
	cr_assert_null(sio_nvme_cq_peek(&q));
	ctrl_complete((uint16_t)cid, 0);
	cr_assert_not_null(sio_nvme_cq_peek(&q));
	cr_assert_eq(sio_nvme_cq_pop(&q, &cpl, &ck), cid);
	cr_assert_eq(ck, 42);
	cr_assert_eq(sio_nvme_queue_inflight(&q), 0);
	sio_nvme_cq_ring(&q);
	cr_assert_eq(cqdb, 1);
}

Test(queue, full_queue_and_unique_cids)
{
	struct sio_nvme_cmd cmd, got;
	int seen[QS] = { 0 }, i, cid;

	memset(&cmd, 0, sizeof(cmd));
	for (i = 0; i < QS - 1; i++) {
		cid = sio_nvme_sq_submit(&q, &cmd, (uint64_t)i);
		cr_assert_geq(cid, 0);
		cr_assert_lt(cid, QS - 1);
		cr_assert_eq(seen[cid], 0, "cid %d handed out twice", cid);
		seen[cid] = 1;
	}
	cr_assert_eq(sio_nvme_sq_submit(&q, &cmd, 99), -11, "queue holds size-1");
	sio_nvme_sq_ring(&q);
	/* The controller fetches everything but completes only one: the SQ
	 * has room, yet no cid is free, so submission still waits. */
	while (ctrl_fetch(&got))
		;
	ctrl_complete(sq[0].cid, 0);
	cr_assert_eq(sio_nvme_sq_submit(&q, &cmd, 99), -11);
	cr_assert_eq(sio_nvme_cq_pop(&q, NULL, NULL), sq[0].cid);
	cr_assert_eq(q.sq_head, c_sqhead, "SQ head taken from the completion");
	cid = sio_nvme_sq_submit(&q, &cmd, 7);
	cr_assert_eq(cid, sq[0].cid, "the one free cid is reused only after completion");
}

Test(queue, phase_wraps_and_spurious_ignored)
{
	struct sio_nvme_cmd cmd, got;
	struct sio_nvme_cpl cpl;
	uint64_t ck;
	int round, cid, n = 0;

	memset(&cmd, 0, sizeof(cmd));
	for (round = 0; round < 5 * QS; round++) {
		cid = sio_nvme_sq_submit(&q, &cmd, (uint64_t)round);
		cr_assert_geq(cid, 0);
		sio_nvme_sq_ring(&q);
		cr_assert(ctrl_fetch(&got));
		ctrl_complete(got.cid, round % 3 == 0 ? SIO_NVME_SC_LBA_RANGE : 0);
		cr_assert_not_null(sio_nvme_cq_peek(&q));
		cr_assert_eq(sio_nvme_cq_pop(&q, &cpl, &ck), cid);
		cr_assert_eq(ck, (uint64_t)round);
		cr_assert_eq(SIO_NVME_STATUS_SC(cpl.status),
			     round % 3 == 0 ? SIO_NVME_SC_LBA_RANGE : 0);
		sio_nvme_cq_ring(&q);
		n++;
	}
	cr_assert_eq(n, 5 * QS);
	cr_assert_eq(cqdb, q.cq_head);
	/* A completion for a cid nobody submitted is counted and skipped. */
	ctrl_complete(5, 0);
	cr_assert_not_null(sio_nvme_cq_peek(&q));
	cr_assert_eq(sio_nvme_cq_pop(&q, NULL, NULL), -71);
	cr_assert_eq(q.spurious, 1);
	cr_assert_eq(sio_nvme_queue_free_slots(&q), QS - 1);
}

Test(queue, prp_fill)
{
	uint64_t list[64], p1, p2;

	cr_assert_eq(sio_nvme_prp_fill(0x10000, 4096, 4096, list, 0x9000, &p1, &p2), 0);
	cr_assert_eq(p1, 0x10000);
	cr_assert_eq(p2, 0);
	cr_assert_eq(sio_nvme_prp_fill(0x10200, 4096, 4096, list, 0x9000, &p1, &p2), 0);
	cr_assert_eq(p2, 0x11000, "two pages: PRP2 is the second page");
	cr_assert_eq(sio_nvme_prp_fill(0x10200, 3 * 4096, 4096, list, 0x9000, &p1, &p2), 3);
	cr_assert_eq(p2, 0x9000, "more: PRP2 points at the list");
	cr_assert_eq(list[0], 0x11000);
	cr_assert_eq(list[2], 0x13000);
	cr_assert_eq(sio_nvme_doorbell_offset(3, 1, 2), 0x1000u + 7u * 16u);
}
