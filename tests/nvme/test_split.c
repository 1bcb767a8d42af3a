/* SPDX-License-Identifier: MIT */
/*
 * The client's I/O submission in-process, against a controller played by
 * hand over plain memory (as test_queue.c plays one for queue.h): a request
 * above the transfer limit (MDTS) from where it starts goes as several
 * commands, each within the limit from its own start, that together cover
 * the request block for block and byte for byte, with the PRPs the
 * controller needs; the request completes once, after its last command,
 * and with the first error if one failed; a request the queue cannot hold
 * whole is refused with nothing written. White-box: the queue pair is put
 * together here from the parts ioq.c would allocate (client-priv.h).
 */

#include <criterion/criterion.h>
#include <errno.h>
#include <string.h>
#include <nvme/types.h>
#include <smartio/smartio.h>
#include "client-priv.h"

#define QS		16u			/* entries: 15 commands at once */
#define PAGE		4096u
#define MAX_XFER	(4u * PAGE)		/* MDTS: 16 KiB */
#define LBA		512u
#define NSZE		(1u << 20)		/* blocks */
#define BUF_BUS		0x40000000ull		/* the data buffer, as the device sees it */
#define BUF_SIZE	(1u << 20)
#define PRP_BUS		0x7f000000ull		/* the PRP lists */

static struct sio_nvme_client cl;
static struct sio_nvme_ioq q;
static struct sio_nvme_buf buf = { .bus = BUF_BUS, .size = BUF_SIZE };
static struct sio_nvme_cmd sq[QS];
static struct sio_nvme_cpl cq[QS];
static uint32_t sqdb, cqdb;
static uint16_t cids[QS - 1], req_stack[QS - 1];
static uint64_t cookies[QS - 1];
static uint16_t ids[QS - 1];
static sio_nvme_io_cb cbs[QS - 1];
static struct sio_nvme_cmd sent[QS - 1];	/* per tag: its command as built */
static struct sent_side side[QS - 1];
static struct ioreq reqs[QS - 1];
static uint64_t prp[(QS - 1) * (MAX_XFER / PAGE)];	/* prp_stride bytes per cid */
/* the controller's view */
static uint32_t c_head, c_tail;
static uint8_t c_phase;
/* the request's callback */
static int calls, cb_err;
static uint16_t cb_status;

static void setup(void)
{
	struct qpair *p = &q.qp[0];

	memset(&cl, 0, sizeof(cl));
	memset(&q, 0, sizeof(q));
	memset(sq, 0, sizeof(sq));
	memset(cq, 0, sizeof(cq));
	sqdb = cqdb = c_head = c_tail = 0;
	c_phase = 1;
	calls = cb_err = 0;
	cb_status = 0;
	cl.ns[1] = (struct sio_nvme_ns){ .nsid = 1, .nsze = NSZE, .lba_size = LBA, .active = true };
	cl.timeout_ms = 1000;
	cr_assert_eq(sio_nvme_queue_init(&p->q, 1, QS, sq, cq, &sqdb, &cqdb, cids, cookies, ids), 0);
	p->cids = cids;
	p->cookies = cookies;
	p->ids = ids;
	p->cbs = cbs;
	p->sent = sent;
	p->side = side;
	p->prp_va = prp;
	p->prp_bus = PRP_BUS;
	p->live = true;
	q.cl = &cl;
	q.act = p;
	q.depth = QS;
	q.page = PAGE;
	q.page_mask = PAGE - 1;
	q.off_mask = 3;		/* PRPs: dword-aligned offsets (as ioq.c sets it) */
	q.max_xfer = MAX_XFER;
	q.prp_stride = MAX_XFER / PAGE * 8;	/* as ioq.c sets it */
	q.sgl = SIO_NVME_SGL_NONE;
	q.reqs = reqs;
	q.req_stack = req_stack;
	for (uint32_t i = 0; i < QS - 1; i++)
		req_stack[i] = (uint16_t)(QS - 2 - i);
	q.nreq_free = QS - 1;
	q.qs = &q.qs_local;
	sio_nvme_fast_off(&q);	/* as ioq.c leaves a new queue */
}

TestSuite(split, .init = setup, .timeout = 10);

static void on_done(void *arg, int err, uint16_t status)
{
	calls++;
	cb_err = err;
	cb_status = status;
}

/* The commands the doorbell says are new, as the controller fetches them. */
static uint32_t fetch(struct sio_nvme_cmd *out, uint32_t max)
{
	uint32_t n = 0;

	while (c_head != sqdb && n < max) {
		out[n++] = sq[c_head];
		c_head = (c_head + 1) % QS;
	}
	return n;
}

static void complete(uint16_t cid, uint16_t sc)
{
	struct sio_nvme_cpl *c = &cq[c_tail];

	c->result = 0;
	c->sq_head = (uint16_t)c_head;
	c->sq_id = 1;
	c->cid = cid;
	c->status = (uint16_t)(sc << 1 | c_phase);
	if (++c_tail == QS) {
		c_tail = 0;
		c_phase ^= 1;
	}
}

/* The pages a command's PRPs name, each its address; returns how many. */
static uint32_t prp_pages(const struct sio_nvme_cmd *c, uint32_t len, uint64_t *pages)
{
	uint64_t first_end = (c->prp1 | (PAGE - 1)) + 1;
	uint32_t n = 0;

	pages[n++] = c->prp1;
	if (c->prp1 + len <= first_end)
		return n;
	if (c->prp1 + len <= first_end + PAGE) {
		pages[n++] = c->prp2;
		return n;
	}
	cr_assert(c->prp2 >= PRP_BUS && c->prp2 < PRP_BUS + sizeof(prp),
		  "PRP2 0x%llx is not a list of this queue", (unsigned long long)c->prp2);
	cr_assert_eq((c->prp2 - PRP_BUS) % q.prp_stride, 0, "PRP list not at a cid's slot");
	for (uint64_t a = first_end; a < c->prp1 + len; a += PAGE, n++)
		pages[n] = prp[(c->prp2 - PRP_BUS) / 8 + (n - 1)];
	return n;
}

/*
 * A read of @nlb blocks at @slba into the buffer at @off, as it reaches
 * the controller: every command within MDTS from where it starts, the
 * blocks consecutive, the data consecutive, the PRPs naming its pages.
 * Returns the commands, in @cmds.
 */
static uint32_t expect_split(uint64_t slba, uint32_t nlb, uint64_t off, struct sio_nvme_cmd *cmds)
{
	uint64_t next_lba = slba, next_bus = BUF_BUS + off;
	uint32_t n, blocks = 0;

	n = fetch(cmds, QS);
	cr_assert_gt(n, 0, "nothing reached the controller");
	for (uint32_t i = 0; i < n; i++) {
		const struct sio_nvme_cmd *c = &cmds[i];
		uint64_t lba = c->cdw10 | (uint64_t)c->cdw11 << 32, pages[MAX_XFER / PAGE + 1];
		uint32_t cnt = (c->cdw12 & 0xffff) + 1, len = cnt * LBA, np;

		cr_assert_eq(c->opcode, nvme_cmd_read, "command %u", i);
		cr_assert_eq(c->nsid, 1);
		cr_assert_eq(lba, next_lba, "command %u starts at block %llu, not %llu", i,
			     (unsigned long long)lba, (unsigned long long)next_lba);
		cr_assert_eq(c->prp1, next_bus, "command %u's data starts at 0x%llx, not 0x%llx",
			     i, (unsigned long long)c->prp1, (unsigned long long)next_bus);
		cr_assert_leq(len, MAX_XFER - (c->prp1 & (PAGE - 1)),
			      "command %u: %u bytes from page offset %llu exceed MDTS", i, len,
			      (unsigned long long)(c->prp1 & (PAGE - 1)));
		np = prp_pages(c, len, pages);
		for (uint32_t k = 1; k < np; k++)
			cr_assert_eq(pages[k], (c->prp1 & ~(uint64_t)(PAGE - 1)) + k * PAGE,
				     "command %u, PRP entry %u", i, k);
		next_lba += cnt;
		next_bus += len;
		blocks += cnt;
	}
	cr_assert_eq(blocks, nlb, "the commands cover %u blocks of %u", blocks, nlb);
	return n;
}

Test(split, a_request_within_mdts_is_one_command)
{
	struct sio_nvme_cmd cmds[QS];

	cr_assert_eq(sio_nvme_ioq_read(&q, 1, 100, MAX_XFER / LBA, &buf, 0, on_done, NULL), 0,
		     "%s", sio_errmsg());
	cr_assert_eq(expect_split(100, MAX_XFER / LBA, 0, cmds), 1);
}

Test(split, an_aligned_request_splits_at_mdts)
{
	struct sio_nvme_cmd cmds[QS];
	uint32_t nlb = 3 * MAX_XFER / LBA;

	cr_assert_eq(sio_nvme_ioq_read(&q, 1, 7, nlb, &buf, 0, on_done, NULL), 0, "%s",
		     sio_errmsg());
	cr_assert_eq(expect_split(7, nlb, 0, cmds), 3);
	for (int i = 0; i < 3; i++)
		cr_expect_eq((cmds[i].cdw12 & 0xffff) + 1, MAX_XFER / LBA, "command %d", i);
}

Test(split, an_unaligned_start_takes_mdts_from_its_page_offset)
{
	struct sio_nvme_cmd cmds[QS];
	uint32_t nlb = 3 * MAX_XFER / LBA;

	/* 512 bytes into a page: the first command stops a block short of
	 * MDTS, the rest start page aligned, one block is left over */
	cr_assert_eq(sio_nvme_ioq_read(&q, 1, 0, nlb, &buf, LBA, on_done, NULL), 0, "%s",
		     sio_errmsg());
	cr_assert_eq(expect_split(0, nlb, LBA, cmds), 4);
	cr_expect_eq((cmds[0].cdw12 & 0xffff) + 1, MAX_XFER / LBA - 1);
	cr_expect_eq((cmds[1].cdw12 & 0xffff) + 1, MAX_XFER / LBA);
	cr_expect_eq((cmds[3].cdw12 & 0xffff) + 1, 1);
}

Test(split, the_request_completes_once_after_its_last_command)
{
	struct sio_nvme_cmd cmds[QS];
	uint32_t n;

	cr_assert_eq(sio_nvme_ioq_read(&q, 1, 0, 2 * MAX_XFER / LBA + 1, &buf, 0, on_done,
				       NULL), 0, "%s", sio_errmsg());
	n = expect_split(0, 2 * MAX_XFER / LBA + 1, 0, cmds);
	cr_assert_eq(n, 3);
	/* out of order, as a controller may */
	complete(cmds[2].cid, 0);
	complete(cmds[0].cid, 0);
	cr_assert_eq(sio_nvme_ioq_poll(&q, 0), 2);
	cr_expect_eq(calls, 0, "completed before its last command");
	complete(cmds[1].cid, 0);
	cr_assert_eq(sio_nvme_ioq_poll(&q, 0), 1);
	cr_expect_eq(calls, 1);
	cr_expect_eq(cb_err, 0);
	cr_expect_eq(sio_nvme_ioq_inflight(&q), 0);
	cr_expect_eq(q.nreq_free, QS - 1, "the request went back");
}

Test(split, one_failed_command_fails_the_request_once_with_its_status)
{
	struct sio_nvme_cmd cmds[QS];

	cr_assert_eq(sio_nvme_ioq_read(&q, 1, 0, 3 * MAX_XFER / LBA, &buf, 0, on_done, NULL), 0);
	cr_assert_eq(expect_split(0, 3 * MAX_XFER / LBA, 0, cmds), 3);
	complete(cmds[0].cid, 0);
	complete(cmds[1].cid, NVME_SC_LBA_RANGE);
	complete(cmds[2].cid, 0);
	cr_assert_eq(sio_nvme_ioq_poll(&q, 0), 3);
	cr_expect_eq(calls, 1);
	cr_expect_eq(cb_err, -EIO);
	cr_expect_eq(cb_status, NVME_SC_LBA_RANGE);
}

Test(split, a_request_longer_than_the_queue_is_refused_with_nothing_sent)
{
	/* 16 commands' worth: the queue holds 15 */
	cr_assert_eq(sio_nvme_ioq_read(&q, 1, 0, 16 * MAX_XFER / LBA, &buf, 0, on_done, NULL),
		     -EINVAL);
	cr_expect(strstr(sio_errmsg(), "needs 16 commands"), "%s", sio_errmsg());
	cr_expect_eq(sqdb, 0, "the doorbell moved");
	cr_expect_eq(sio_nvme_ioq_inflight(&q), 0);
	cr_expect_eq(q.nreq_free, QS - 1);
}

Test(split, a_request_that_does_not_fit_now_waits_whole)
{
	struct sio_nvme_cmd cmds[QS];
	uint32_t rung, reqs_free;

	/* 13 commands in flight leave 2 slots: a 3-command request must wait */
	for (int i = 0; i < 13; i++)
		cr_assert_eq(sio_nvme_ioq_read(&q, 1, (uint64_t)i, 1, &buf, 0, NULL, NULL), 0);
	rung = sqdb;
	reqs_free = q.nreq_free;
	cr_assert_eq(sio_nvme_ioq_read(&q, 1, 0, 3 * MAX_XFER / LBA, &buf, 0, on_done, NULL),
		     -EAGAIN);
	cr_expect_eq(sqdb, rung, "part of the request went in");
	cr_expect_eq(sio_nvme_ioq_inflight(&q), 13);
	cr_expect_eq(q.nreq_free, reqs_free, "the refused request kept an entry of the table");
	/* once one completes, it goes in whole */
	cr_assert_eq(fetch(cmds, QS), 13);
	complete(cmds[0].cid, 0);
	cr_assert_eq(sio_nvme_ioq_poll(&q, 0), 1);
	cr_assert_eq(sio_nvme_ioq_read(&q, 1, 0, 3 * MAX_XFER / LBA, &buf, 0, on_done, NULL), 0);
	cr_expect_eq(expect_split(0, 3 * MAX_XFER / LBA, 0, cmds), 3);
}

Test(split, with_sgls_a_command_takes_one_data_block_where_prps_would_need_a_list)
{
	struct sio_nvme_cmd cmds[QS];
	uint64_t next = BUF_BUS + LBA;
	uint32_t n, blocks = 0;

	q.sgl = SIO_NVME_SGL_BYTE;
	/* 31 blocks unaligned, 32 aligned (four pages), 1 aligned */
	cr_assert_eq(sio_nvme_ioq_read(&q, 1, 0, 2 * MAX_XFER / LBA, &buf, LBA, on_done, NULL), 0);
	n = fetch(cmds, QS);
	cr_assert_eq(n, 3);
	for (uint32_t i = 0; i < n; i++) {
		uint32_t len = ((cmds[i].cdw12 & 0xffff) + 1) * LBA;

		cr_assert_leq(len, MAX_XFER - (next & (PAGE - 1)), "command %u", i);
		if (i < 2) {
			cr_assert_eq(cmds[i].flags >> 6, SIO_NVME_PSDT_SGL_MPTR, "command %u", i);
			cr_assert_eq(cmds[i].sgl.type, SIO_NVME_SGL_TYPE(SIO_NVME_SGL_DATA));
			cr_assert_eq(cmds[i].sgl.addr, next, "command %u", i);
			cr_assert_eq(cmds[i].sgl.length, len, "command %u", i);
		} else {
			cr_assert_eq(cmds[i].flags >> 6, SIO_NVME_PSDT_PRP, "one aligned block: PRPs");
			cr_assert_eq(cmds[i].prp1, next);
		}
		next += len;
		blocks += len / LBA;
	}
	cr_assert_eq(blocks, 2 * MAX_XFER / LBA);
	cr_expect_eq(q.sgl_cmds, 2);
}

/* One or two pages on a page take the fast path: one command, PRP2 0 or
 * the second page, no request of the table, the caller's callback and
 * argument back with the completion. */
Test(split, one_or_two_pages_go_straight_in_with_prp1_and_prp2)
{
	static const uint32_t len[] = { LBA, PAGE, PAGE + LBA, 2 * PAGE };
	struct sio_nvme_cmd cmds[QS];
	uint64_t pages[2];

	for (uint32_t i = 0; i < 4; i++) {
		uint64_t off = (uint64_t)(i + 1) * 2 * PAGE;

		calls = 0;
		cr_assert_eq(sio_nvme_ioq_read(&q, 1, 10 * i, len[i] / LBA, &buf, off, on_done,
					       &calls), 0, "%s", sio_errmsg());
		cr_assert_eq(expect_split(10 * i, len[i] / LBA, off, cmds), 1);
		cr_assert_eq(prp_pages(&cmds[0], len[i], pages), len[i] > PAGE ? 2 : 1);
		if (len[i] <= PAGE)
			cr_expect_eq(cmds[0].prp2, 0, "%u bytes: PRP2 0", len[i]);
		cr_expect_eq(q.nreq_free, QS - 1, "a request of the table was taken");
		complete(cmds[0].cid, 0);
		cr_assert_eq(sio_nvme_ioq_poll(&q, 1), 1);
		cr_assert_eq(calls, 1, "%u bytes: the callback", len[i]);
	}
	cr_expect_eq(q.qs->reads, 4);
	cr_expect_eq(q.qs->read_bytes, LBA + PAGE + PAGE + LBA + 2 * PAGE);
}

/* What the general path refuses, the fast path refuses too, with the same
 * error, nothing written: before the fast path is armed (namespace 0 must
 * not pass for the namespace of a queue not used yet) and after. */
Test(split, bad_arguments_are_refused_with_the_fast_path_armed_or_not)
{
	struct sio_nvme_buf small = { .bus = BUF_BUS, .size = PAGE };
	struct sio_nvme_cmd cmds[QS];

	for (int armed = 0; armed < 2; armed++) {
		cr_assert_eq(sio_nvme_ioq_read(&q, 0, 0, 1, &buf, 0, on_done, NULL), -ENOENT,
			     "namespace 0, armed %d", armed);
		cr_assert_eq(sio_nvme_ioq_read(&q, 1, 0, 0, &buf, 0, on_done, NULL), -EINVAL);
		cr_assert_eq(sio_nvme_ioq_read(&q, 1, NSZE - 1, 2, &buf, 0, on_done, NULL),
			     -EINVAL);
		cr_expect(strstr(sio_errmsg(), "outside namespace 1"), "%s", sio_errmsg());
		cr_assert_eq(sio_nvme_ioq_read(&q, 1, UINT64_MAX, 2, &buf, 0, on_done, NULL),
			     -EINVAL, "a block range that wraps");
		cr_assert_eq(sio_nvme_ioq_read(&q, 1, 0, 1, NULL, 0, on_done, NULL), -EINVAL);
		cr_assert_eq(sio_nvme_ioq_read(&q, 1, 0, 2 * PAGE / LBA, &small, 0, on_done,
					       NULL), -EINVAL, "past the buffer's end");
		cr_expect(strstr(sio_errmsg(), "do not fit the buffer"), "%s", sio_errmsg());
		cr_assert_eq(sio_nvme_ioq_read(&q, 1, 0, 1, &buf, UINT64_MAX - 100, on_done,
					       NULL), -EINVAL, "an offset that wraps");
		cr_assert_eq(sio_nvme_ioq_read(&q, 1, 0, 1, &buf, 2, on_done, NULL), -EINVAL,
			     "an offset off a dword, PRPs");
		cr_expect_eq(sqdb, armed, "a refused request rang");
		cr_expect_eq(sio_nvme_ioq_inflight(&q), 0);
		/* a good one arms the fast path */
		cr_assert_eq(sio_nvme_ioq_read(&q, 1, 0, 1, &buf, 0, on_done, NULL), 0);
		cr_assert_eq(q.fast_nsid, 1);
		cr_assert_eq(fetch(cmds, QS), 1);
		complete(cmds[0].cid, 0);
		cr_assert_eq(sio_nvme_ioq_poll(&q, 1), 1);
	}
}

/* A queue that holds its doorbell does not take the fast path, which rings
 * after each submission: the commands wait for sio_nvme_ioq_ring(). */
Test(split, a_held_doorbell_is_not_rung_by_the_fast_path)
{
	struct sio_nvme_cmd cmds[QS];

	cr_assert_eq(sio_nvme_ioq_read(&q, 1, 0, 1, &buf, 0, on_done, NULL), 0);
	cr_assert_eq(sqdb, 1);
	cr_assert_eq(sio_nvme_ioq_hold(&q, true), 0);
	cr_assert_eq(sio_nvme_ioq_read(&q, 1, 1, 1, &buf, 0, on_done, NULL), 0);
	cr_assert_eq(sio_nvme_ioq_read(&q, 1, 2, 1, &buf, PAGE, on_done, NULL), 0);
	cr_expect_eq(sqdb, 1, "the doorbell moved while held");
	sio_nvme_ioq_ring(&q);
	cr_expect_eq(sqdb, 3);
	cr_assert_eq(sio_nvme_ioq_hold(&q, false), 0);
	cr_assert_eq(sio_nvme_ioq_read(&q, 1, 3, 1, &buf, 0, on_done, NULL), 0);
	cr_expect_eq(sqdb, 4, "not rung once released");
	cr_assert_eq(fetch(cmds, QS), 4);
}
