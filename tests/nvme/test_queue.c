/* SPDX-License-Identifier: MIT */
/*
 * queue.h against a controller played by hand over plain memory: tags and
 * command ids, phase wrap, full queues, doorbells; and a hostile controller
 * (spurious, repeated, late and early completions, wild SQ heads), after
 * each of which the queue must still work and the entry must be counted.
 */

#include <criterion/criterion.h>
#include <errno.h>
#include <string.h>
#include <nvme/types.h>
#include <smartio/nvme/queue.h>

#define QS 8

static struct sio_nvme_cmd sq[QS];
static struct sio_nvme_cpl cq[QS];
static uint32_t sqdb, cqdb;
static uint16_t cids[QS - 1];
static uint64_t cookies[QS - 1];
static uint16_t ids[QS - 1];
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
	cr_assert_eq(sio_nvme_queue_init(&q, 3, QS, sq, cq, &sqdb, &cqdb, cids, cookies, ids), 0);
}

/* Fetch one command (if the doorbell says so). */
static int ctrl_fetch(struct sio_nvme_cmd *out)
{
	if (c_sqhead == sqdb)
		return 0;
	*out = sq[c_sqhead];
	c_sqhead = (uint16_t)((c_sqhead + 1) % QS);
	return 1;
}

/* Post a completion at the controller's CQ tail, any fields it likes. */
static void ctrl_post(uint16_t cid, uint16_t sq_head, uint16_t sc)
{
	struct sio_nvme_cpl *c = &cq[c_cqtail];

	c->result = 0;
	c->sq_head = sq_head;
	c->sq_id = 3;
	c->cid = cid;
	c->status = (uint16_t)(sc << 1 | c_phase);
	if (++c_cqtail == QS) {
		c_cqtail = 0;
		c_phase ^= 1;
	}
}

/* Complete @cid with status code @sc, as a well-behaved controller does. */
static void ctrl_complete(uint16_t cid, uint16_t sc)
{
	ctrl_post(cid, c_sqhead, sc);
}

/* One command all the way round; returns its wire command id. */
static uint16_t roundtrip(uint64_t ck)
{
	struct sio_nvme_cmd cmd, got;
	uint64_t back = 0;
	int tag;

	memset(&cmd, 0, sizeof(cmd));
	tag = sio_nvme_sq_submit(&q, &cmd, ck);
	cr_assert_geq(tag, 0, "submit: %d (free %u, in flight %u)", tag,
		      sio_nvme_queue_free_slots(&q), sio_nvme_queue_inflight(&q));
	sio_nvme_sq_ring(&q);
	cr_assert(ctrl_fetch(&got), "the doorbell did not move");
	cr_assert_eq(SIO_NVME_CID_TAG(got.cid), tag);
	ctrl_complete(got.cid, 0);
	cr_assert_eq(sio_nvme_cq_pop(&q, NULL, &back), tag);
	cr_assert_eq(back, ck);
	sio_nvme_cq_ring(&q);
	cr_assert_eq(cqdb, q.cq_head);
	return got.cid;
}

/* The queue still works: single commands, then a full queue's worth in
 * flight at once, every tag coming back. */
static void assert_usable(void)
{
	struct sio_nvme_cmd cmd, got;
	uint64_t ck;
	int i, tag, seen[QS] = { 0 };

	cr_assert_eq(sio_nvme_queue_inflight(&q), 0, "something is still in flight");
	for (i = 0; i < 2 * QS; i++)
		roundtrip(1000 + (uint64_t)i);
	memset(&cmd, 0, sizeof(cmd));
	for (i = 0; i < QS - 1; i++)
		cr_assert_geq(sio_nvme_sq_submit(&q, &cmd, 2000 + (uint64_t)i), 0,
			      "submit %d of a full queue", i);
	cr_assert_eq(sio_nvme_sq_submit(&q, &cmd, 0), -EAGAIN);
	sio_nvme_sq_ring(&q);
	while (ctrl_fetch(&got))
		ctrl_complete(got.cid, 0);
	for (i = 0; i < QS - 1; i++) {
		tag = sio_nvme_cq_pop(&q, NULL, &ck);
		cr_assert_geq(tag, 0, "completion %d: %d", i, tag);
		cr_assert_eq(seen[tag]++, 0, "tag %d delivered twice", tag);
		cr_assert(ck >= 2000 && ck < 2000 + QS - 1);
	}
	cr_assert_eq(sio_nvme_cq_pop(&q, NULL, NULL), -EAGAIN);
	sio_nvme_cq_ring(&q);
	cr_assert_eq(sio_nvme_queue_inflight(&q), 0);
	cr_assert_eq(sio_nvme_queue_free_slots(&q), QS - 1);
}

TestSuite(queue, .init = setup);

Test(queue, init_rejects_bad_sizes)
{
	static uint16_t bc[4095];
	static uint64_t bk[4095];
	static uint16_t bb[4095];
	static struct sio_nvme_cmd bsq[4096];
	static struct sio_nvme_cpl bcq[4096];
	struct sio_nvme_queue big;
	struct sio_nvme_cmd cmd;
	int i, tag;

	cr_assert_eq(sio_nvme_queue_init(&q, 1, 1, sq, cq, &sqdb, &cqdb, cids, cookies, ids),
		     -EINVAL);
	cr_assert_eq(sio_nvme_queue_init(&q, 1, 4097, sq, cq, &sqdb, &cqdb, cids, cookies, ids),
		     -EINVAL, "tags have 12 bits");
	cr_assert_eq(sio_nvme_queue_init(&q, 1, 65536, sq, cq, &sqdb, &cqdb, cids, cookies, ids),
		     -EINVAL);
	/* The largest queue: every tag fits beside its generation. */
	cr_assert_eq(sio_nvme_queue_init(&big, 1, SIO_NVME_QUEUE_MAX_SIZE, bsq, bcq, &sqdb, &cqdb,
					 bc, bk, bb), 0);
	memset(&cmd, 0, sizeof(cmd));
	for (i = 0; i < 4095; i++) {
		tag = sio_nvme_sq_submit(&big, &cmd, 0);
		cr_assert_eq(tag, i);
		cr_assert_eq(SIO_NVME_CID_TAG(bsq[i].cid), i);
		cr_assert_eq(SIO_NVME_CID_GEN(bsq[i].cid), 1);
	}
	cr_assert_eq(sio_nvme_sq_submit(&big, &cmd, 0), -EAGAIN);
}

Test(queue, submit_ring_complete)
{
	struct sio_nvme_cmd cmd, got;
	struct sio_nvme_cpl cpl = { 0 };
	uint64_t ck;
	int cid;

	sio_nvme_cmd_rw(&cmd, nvme_cmd_read, 1, 0x123456789ull, 8, 0x1000, 0);
	cid = sio_nvme_sq_submit(&q, &cmd, 42);
	cr_assert_geq(cid, 0);
	cr_assert_eq(sqdb, 0, "no doorbell before ring");
	sio_nvme_sq_ring(&q);
	cr_assert_eq(sqdb, 1);
	cr_assert(ctrl_fetch(&got));
	cr_assert_eq(SIO_NVME_CID_TAG(got.cid), cid);
	cr_assert_eq(SIO_NVME_CID_GEN(got.cid), 1, "first use of a tag: generation 1");
	cr_assert_eq(got.cdw10, 0x23456789u);
	cr_assert_eq(got.cdw11, 0x1u);
	cr_assert_eq(got.cdw12, 7u);
	cr_assert_null(sio_nvme_cq_peek(&q));
	cr_assert_eq(sio_nvme_cq_pop(&q, &cpl, &ck), -EAGAIN, "nothing posted, nothing taken");
	ctrl_complete(got.cid, 0);
	cr_assert_not_null(sio_nvme_cq_peek(&q));
	cr_assert_eq(sio_nvme_cq_pop(&q, &cpl, &ck), cid);
	cr_assert_eq(ck, 42);
	cr_assert_eq(cpl.cid, got.cid);
	cr_assert_eq(cpl.status & 1u, 1u, "the status returned is the one checked");
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
		cr_assert_eq(seen[cid], 0, "tag %d handed out twice", cid);
		seen[cid] = 1;
	}
	cr_assert_eq(sio_nvme_sq_submit(&q, &cmd, 99), -EAGAIN, "queue holds size-1");
	sio_nvme_sq_ring(&q);
	/* The controller fetches everything but completes only one: the SQ
	 * has room, yet no tag is free, so submission still waits. */
	while (ctrl_fetch(&got))
		;
	ctrl_complete(sq[0].cid, 0);
	cr_assert_eq(sio_nvme_sq_submit(&q, &cmd, 99), -EAGAIN);
	cr_assert_eq(sio_nvme_cq_pop(&q, NULL, NULL), SIO_NVME_CID_TAG(sq[0].cid));
	cr_assert_eq(q.sq_head, c_sqhead, "SQ head taken from the completion");
	cid = sio_nvme_sq_submit(&q, &cmd, 7);
	cr_assert_eq(cid, SIO_NVME_CID_TAG(sq[0].cid),
		     "the one free tag is reused only after completion");
	cr_assert_eq(SIO_NVME_CID_GEN(sq[(QS - 1) % QS].cid), 2, "with the next generation");
}

Test(queue, phase_wraps_and_unknown_ids_ignored)
{
	struct sio_nvme_cmd cmd, got;
	struct sio_nvme_cpl cpl = { 0 };
	uint64_t ck;
	int round, cid, n = 0;

	memset(&cmd, 0, sizeof(cmd));
	for (round = 0; round < 5 * QS; round++) {
		cid = sio_nvme_sq_submit(&q, &cmd, (uint64_t)round);
		cr_assert_geq(cid, 0);
		sio_nvme_sq_ring(&q);
		cr_assert(ctrl_fetch(&got));
		ctrl_complete(got.cid, round % 3 == 0 ? NVME_SC_LBA_RANGE : 0);
		cr_assert_not_null(sio_nvme_cq_peek(&q));
		cr_assert_eq(sio_nvme_cq_pop(&q, &cpl, &ck), cid);
		cr_assert_eq(ck, (uint64_t)round);
		cr_assert_eq(SIO_NVME_STATUS_SC(cpl.status),
			     round % 3 == 0 ? NVME_SC_LBA_RANGE : 0);
		sio_nvme_cq_ring(&q);
		n++;
	}
	cr_assert_eq(n, 5 * QS);
	cr_assert_eq(cqdb, q.cq_head);
	/* A completion for an id nobody submitted is counted and skipped. */
	ctrl_complete(5, 0);
	cr_assert_not_null(sio_nvme_cq_peek(&q));
	cr_assert_eq(sio_nvme_cq_pop(&q, NULL, NULL), -EPROTO);
	cr_assert_eq(q.spurious, 1);
	cr_assert_eq(sio_nvme_queue_free_slots(&q), QS - 1);
	assert_usable();
}

Test(queue, generations_cycle_and_skip_zero)
{
	uint16_t wire;
	int i;

	/* At depth 1 tag 0 is used again and again: 1..15, then 1 again. */
	for (i = 0; i < 40; i++) {
		wire = roundtrip((uint64_t)i);
		cr_assert_eq(SIO_NVME_CID_TAG(wire), 0);
		cr_assert_eq(SIO_NVME_CID_GEN(wire), (uint16_t)(i % 15 + 1), "use %d", i);
		cr_assert_neq(wire, 0, "id 0 is never on the wire");
	}
}

/* ---- a hostile controller ---- */

/* The review's reproducer: one normal completion, then one for no command
 * whose SQ head is one past the tail. That used to leave the queue "full"
 * with nothing in flight, and every submission -EAGAIN, for good. */
Test(queue, spurious_completion_with_wild_sq_head_cannot_wedge)
{
	uint16_t head_before;

	roundtrip(1);
	head_before = q.sq_head;
	ctrl_post(5, (uint16_t)((q.sq_tail + 1) % QS), 0);
	cr_assert_eq(sio_nvme_cq_pop(&q, NULL, NULL), -EPROTO);
	cr_assert_eq(q.spurious, 1);
	cr_assert_eq(q.sq_head, head_before, "a head from an entry we reject is not taken");
	cr_assert_eq(sio_nvme_queue_inflight(&q), 0);
	cr_assert_eq(sio_nvme_queue_free_slots(&q), QS - 1);
	cr_assert_not_null(sio_nvme_sq_entry(&q));
	assert_usable();
	cr_assert_eq(q.spurious, 1);
	cr_assert_eq(q.duplicate + q.stale, 0);
}

/* A completion that is delivered but reports a head past the tail (or out
 * of range): the head is not taken, and submission never looked at it. */
Test(queue, wild_sq_head_in_a_real_completion_is_not_taken)
{
	struct sio_nvme_cmd cmd, got;
	int tag;

	memset(&cmd, 0, sizeof(cmd));
	tag = sio_nvme_sq_submit(&q, &cmd, 1);
	sio_nvme_sq_ring(&q);
	cr_assert(ctrl_fetch(&got));
	ctrl_post(got.cid, (uint16_t)((q.sq_tail + 1) % QS), 0);
	cr_assert_eq(sio_nvme_cq_pop(&q, NULL, NULL), tag);
	cr_assert_eq(q.sq_head, 0, "head past the tail ignored");
	tag = sio_nvme_sq_submit(&q, &cmd, 2);
	sio_nvme_sq_ring(&q);
	cr_assert(ctrl_fetch(&got));
	ctrl_post(got.cid, 0xffff, 0);
	cr_assert_eq(sio_nvme_cq_pop(&q, NULL, NULL), tag);
	cr_assert_eq(q.sq_head, 0, "head out of range ignored");
	sio_nvme_cq_ring(&q);
	assert_usable();
	cr_assert_eq(q.sq_head, c_sqhead, "a sane head is taken again");
	cr_assert_eq(sio_nvme_queue_ignored(&q), 0, "nothing was ignored: the ids were right");
}

/* The same with the tail wrapped past the end of the SQ and the last head
 * before it: a head at or past the size is refused there too, a head
 * between the last one and the tail, across the wrap, is taken. */
Test(queue, wild_sq_head_across_the_wrap_is_not_taken)
{
	struct sio_nvme_cmd cmd, got[3];
	int i, tag[3];

	for (i = 0; i < QS - 2; i++)
		roundtrip(1);
	cr_assert_eq(q.sq_head, QS - 2);
	memset(&cmd, 0, sizeof(cmd));
	for (i = 0; i < 3; i++)
		tag[i] = sio_nvme_sq_submit(&q, &cmd, (uint64_t)i);
	cr_assert_eq(q.sq_tail, 1, "the tail wrapped");
	sio_nvme_sq_ring(&q);
	for (i = 0; i < 3; i++)
		cr_assert(ctrl_fetch(&got[i]));
	ctrl_post(got[0].cid, QS, 0);		/* off the queue */
	ctrl_post(got[1].cid, 3, 0);		/* past the tail */
	ctrl_post(got[2].cid, QS - 1, 0);	/* sane: between, before the wrap */
	for (i = 0; i < 2; i++) {
		cr_assert_eq(sio_nvme_cq_pop(&q, NULL, NULL), tag[i]);
		cr_assert_eq(q.sq_head, QS - 2, "wild head %d ignored", i);
	}
	cr_assert_eq(sio_nvme_cq_pop(&q, NULL, NULL), tag[2]);
	cr_assert_eq(q.sq_head, QS - 1, "a sane head is taken");
	sio_nvme_cq_ring(&q);
	assert_usable();
	cr_assert_eq(sio_nvme_queue_ignored(&q), 0);
}

Test(queue, duplicate_completion_is_counted_not_delivered)
{
	uint16_t wire;
	uint64_t ck = 77;

	wire = roundtrip(1);
	/* The same completion again: the tag is free now. */
	ctrl_complete(wire, 0);
	cr_assert_eq(sio_nvme_cq_pop(&q, NULL, &ck), -EPROTO);
	cr_assert_eq(ck, 77, "no cookie for an entry not delivered");
	cr_assert_eq(q.duplicate, 1);
	cr_assert_eq(sio_nvme_queue_free_slots(&q), QS - 1, "the tag was not freed twice");
	sio_nvme_cq_ring(&q);
	assert_usable();
	cr_assert_eq(q.duplicate, 1);
	cr_assert_eq(q.spurious + q.stale, 0);
}

/* A late duplicate after the tag was handed out again: without generations
 * it would complete the new command with the old one's status. */
Test(queue, late_duplicate_after_reissue_is_stale)
{
	struct sio_nvme_cmd cmd, got;
	struct sio_nvme_cpl cpl = { 0 };
	uint16_t old;
	uint64_t ck = 0;
	int tag;

	old = roundtrip(1);
	memset(&cmd, 0, sizeof(cmd));
	tag = sio_nvme_sq_submit(&q, &cmd, 2);
	cr_assert_eq(tag, SIO_NVME_CID_TAG(old), "QD1 reuses the tag");
	sio_nvme_sq_ring(&q);
	cr_assert(ctrl_fetch(&got));
	cr_assert_neq(got.cid, old, "but not the id");
	/* The old command's completion, with an error, arrives now. */
	ctrl_complete(old, NVME_SC_LBA_RANGE);
	cr_assert_eq(sio_nvme_cq_pop(&q, &cpl, &ck), -EPROTO);
	cr_assert_eq(q.stale, 1);
	cr_assert_eq(sio_nvme_queue_inflight(&q), 1, "the new command is still in flight");
	cr_assert_eq(sio_nvme_queue_tag_state(&q, (uint32_t)tag), SIO_NVME_CID_BUSY);
	/* Its own completion is delivered, with its own status and cookie. */
	ctrl_complete(got.cid, 0);
	cr_assert_eq(sio_nvme_cq_pop(&q, &cpl, &ck), tag);
	cr_assert_eq(ck, 2);
	cr_assert_eq(SIO_NVME_STATUS_CODE(cpl.status), 0);
	/* And once more after that: the old id is stale still. */
	ctrl_complete(old, 0);
	cr_assert_eq(sio_nvme_cq_pop(&q, NULL, NULL), -EPROTO);
	cr_assert_eq(q.stale, 2);
	sio_nvme_cq_ring(&q);
	assert_usable();
	cr_assert_eq(q.spurious + q.duplicate, 0);
}

Test(queue, completion_for_an_id_never_issued)
{
	/* Generation 0, a tag never used, a tag out of range, and the
	 * largest id: none is delivered, each is counted as spurious. */
	static const uint16_t bad[] = { 0x0000, 0x0003, 0x1005, 0x1000 | (QS - 1), 0x1fff,
					0xffff };
	unsigned int i;

	roundtrip(1);	/* tag 0 has been used: 0x1005 names tag 5, which has not */
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		ctrl_complete(bad[i], 0);
		cr_assert_eq(sio_nvme_cq_pop(&q, NULL, NULL), -EPROTO, "id 0x%04x", bad[i]);
	}
	cr_assert_eq(q.spurious, sizeof(bad) / sizeof(bad[0]));
	cr_assert_eq(sio_nvme_queue_free_slots(&q), QS - 1);
	sio_nvme_cq_ring(&q);
	assert_usable();
	cr_assert_eq(q.duplicate + q.stale, 0);
}

/* A CQ read through a window whose link is down reads all ones, phase bit
 * set: not an entry. Taking it moved the head past the controller's next
 * entry, whose completion was then never seen (a manager's admin command
 * after its guest's link flap). */
Test(queue, cq_reading_all_ones_is_not_taken)
{
	struct sio_nvme_cmd cmd, got;
	uint64_t back = 0;
	uint16_t head;
	int tag;

	roundtrip(1);
	memset(&cmd, 0, sizeof(cmd));
	tag = sio_nvme_sq_submit(&q, &cmd, 77);
	cr_assert_geq(tag, 0);
	sio_nvme_sq_ring(&q);
	cr_assert(ctrl_fetch(&got));
	head = q.cq_head;
	cr_assert_eq(q.cq_phase, 1);
	memset(&cq[head], 0xff, sizeof(cq[head]));	/* the window, revoked */
	cr_assert_null(sio_nvme_cq_peek(&q));
	cr_assert_eq(sio_nvme_cq_pop(&q, NULL, &back), -EAGAIN);
	cr_assert_eq(q.cq_head, head, "the head moved over an entry that is not one");
	cr_assert_eq(q.spurious + q.duplicate + q.stale, 0);
	ctrl_complete(got.cid, 0);			/* the link back, the entry written */
	cr_assert_not_null(sio_nvme_cq_peek(&q));
	cr_assert_eq(sio_nvme_cq_pop(&q, NULL, &back), tag);
	cr_assert_eq(back, 77);
	sio_nvme_cq_ring(&q);
	assert_usable();
}

/* An entry whose phase is not the one expected (left from the previous lap,
 * or a controller that forgot to flip) is never consumed. */
Test(queue, wrong_phase_is_not_consumed)
{
	struct sio_nvme_cmd cmd, got;
	int tag;

	memset(&cmd, 0, sizeof(cmd));
	tag = sio_nvme_sq_submit(&q, &cmd, 5);
	sio_nvme_sq_ring(&q);
	cr_assert(ctrl_fetch(&got));
	/* Right id, wrong phase, at the head. */
	cq[q.cq_head].cid = got.cid;
	cq[q.cq_head].sq_head = c_sqhead;
	cq[q.cq_head].status = (uint16_t)(q.cq_phase ^ 1u);
	cr_assert_null(sio_nvme_cq_peek(&q));
	cr_assert_eq(sio_nvme_cq_pop(&q, NULL, NULL), -EAGAIN);
	cr_assert_eq(q.cq_head, 0);
	cr_assert_eq(q.cq_pending, 0);
	cr_assert_eq(sio_nvme_queue_ignored(&q), 0);
	cr_assert_eq(sio_nvme_queue_inflight(&q), 1);
	/* The real one replaces it and is delivered. */
	ctrl_complete(got.cid, 0);
	cr_assert_eq(sio_nvme_cq_pop(&q, NULL, NULL), tag);
	sio_nvme_cq_ring(&q);

	/* The same across a wrap: fill the CQ once round, then an entry of
	 * the first lap's phase at slot 0 is old, not new. */
	while (q.cq_head != 0)
		roundtrip(9);
	cr_assert_eq(q.cq_phase, 0);
	cr_assert_eq(cq[0].status & 1u, 1u, "slot 0 still holds lap one's entry");
	cr_assert_null(sio_nvme_cq_peek(&q));
	cr_assert_eq(sio_nvme_cq_pop(&q, NULL, NULL), -EAGAIN);
	assert_usable();
	cr_assert_eq(sio_nvme_queue_ignored(&q), 0);
}

/* Entries written ahead of the head, with the right phase, for slots the
 * host has not reached: not looked at until their turn, then judged like
 * any other. */
Test(queue, early_entry_waits_for_its_turn)
{
	struct sio_nvme_cmd cmd, a, b;
	uint64_t ck;
	int ta, tb;

	memset(&cmd, 0, sizeof(cmd));
	ta = sio_nvme_sq_submit(&q, &cmd, 10);
	tb = sio_nvme_sq_submit(&q, &cmd, 11);
	sio_nvme_sq_ring(&q);
	cr_assert(ctrl_fetch(&a));
	cr_assert(ctrl_fetch(&b));
	/* B's entry lands in the slot after A's before A's does. */
	c_cqtail++;
	ctrl_complete(b.cid, 0);
	cr_assert_null(sio_nvme_cq_peek(&q), "the head slot is still empty");
	cr_assert_eq(sio_nvme_cq_pop(&q, NULL, NULL), -EAGAIN);
	cr_assert_eq(sio_nvme_queue_inflight(&q), 2);
	/* A's arrives; both are delivered, in CQ order. */
	c_cqtail = 0;
	ctrl_complete(a.cid, 0);
	c_cqtail = 2;
	cr_assert_eq(sio_nvme_cq_pop(&q, NULL, &ck), ta);
	cr_assert_eq(ck, 10);
	cr_assert_eq(sio_nvme_cq_pop(&q, NULL, &ck), tb);
	cr_assert_eq(ck, 11);

	/* A forged early entry for no command, two slots ahead: ignored until
	 * reached, then counted and skipped. */
	cq[(q.cq_head + 1) % QS] = (struct sio_nvme_cpl){ .cid = 0x1006, .sq_head = 0,
							  .status = q.cq_phase };
	cr_assert_null(sio_nvme_cq_peek(&q));
	ta = sio_nvme_sq_submit(&q, &cmd, 12);
	sio_nvme_sq_ring(&q);
	cr_assert(ctrl_fetch(&a));
	ctrl_complete(a.cid, 0);
	c_cqtail++;			/* the controller's tail passes the forged slot */
	cr_assert_eq(sio_nvme_cq_pop(&q, NULL, &ck), ta);
	cr_assert_eq(sio_nvme_cq_pop(&q, NULL, NULL), -EPROTO);
	cr_assert_eq(q.spurious, 1);
	sio_nvme_cq_ring(&q);
	assert_usable();
}

/* A command given up on (its queue failed) keeps its tag; its completion,
 * if it still comes, is not delivered. Once the controller cannot hold it
 * any more, the tag can be taken back. */
Test(queue, abandoned_then_released)
{
	struct sio_nvme_cmd cmd, got;
	int tag;

	memset(&cmd, 0, sizeof(cmd));
	tag = sio_nvme_sq_submit(&q, &cmd, 1);
	sio_nvme_sq_ring(&q);
	cr_assert(ctrl_fetch(&got));
	sio_nvme_queue_abandon(&q, (uint32_t)tag);
	cr_assert_eq(sio_nvme_queue_tag_state(&q, (uint32_t)tag), SIO_NVME_CID_ABANDONED);
	cr_assert_eq(sio_nvme_queue_inflight(&q), 1, "its tag is still taken");
	ctrl_complete(got.cid, 0);
	cr_assert_eq(sio_nvme_cq_pop(&q, NULL, NULL), -EPROTO);
	cr_assert_eq(q.duplicate, 1);
	cr_assert_eq(sio_nvme_queue_inflight(&q), 1);
	sio_nvme_queue_release(&q, (uint32_t)tag);
	sio_nvme_queue_release(&q, (uint32_t)tag);	/* a second release is a no-op */
	cr_assert_eq(sio_nvme_queue_tag_state(&q, (uint32_t)tag), SIO_NVME_CID_FREE);
	cr_assert_eq(sio_nvme_queue_free_slots(&q), QS - 1);
	sio_nvme_cq_ring(&q);
	assert_usable();
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
	cr_assert_eq(sio_nvme_doorbell_offset(3, 1, sio_nvme_db_stride(2)), 0x1000u + 7u * 16u);
}

Test(queue, prp_fill_at_the_edges)
{
	uint64_t list[512], p1, p2;

	/* ending exactly at a page boundary needs no more than that page */
	cr_assert_eq(sio_nvme_prp_fill(0x10800, 0x800, 4096, list, 0x9000, &p1, &p2), 0);
	cr_assert_eq(p2, 0);
	/* one byte into the next page: PRP2 names it */
	cr_assert_eq(sio_nvme_prp_fill(0x10800, 0x801, 4096, list, 0x9000, &p1, &p2), 0);
	cr_assert_eq(p2, 0x11000);
	/* exactly two pages from a page start: still no list */
	cr_assert_eq(sio_nvme_prp_fill(0x10000, 8192, 4096, list, 0x9000, &p1, &p2), 0);
	cr_assert_eq(p2, 0x11000);
	/* the driver's cap, one list page of page/8 entries past PRP1's page */
	cr_assert_eq(sio_nvme_prp_fill(0x10000, 513 * 4096, 4096, list, 0x9000, &p1, &p2), 512);
	cr_assert_eq(p2, 0x9000);
	cr_assert_eq(list[0], 0x11000);
	cr_assert_eq(list[511], 0x10000 + 512ull * 4096);
	/* a 64 KiB memory page */
	cr_assert_eq(sio_nvme_prp_fill(0x30000, 3 * 65536, 65536, list, 0x9000, &p1, &p2), 2);
	cr_assert_eq(list[1], 0x50000);
}

Test(queue, sgl_wanted_where_prps_would_need_a_list_or_cannot_start)
{
	/* no SGLs: never */
	cr_assert_not(sio_nvme_sgl_wanted(SIO_NVME_SGL_NONE, 0x10001, 9000, 4096));
	/* aligned, up to two pages: PRPs in the command do as well */
	cr_assert_not(sio_nvme_sgl_wanted(SIO_NVME_SGL_BYTE, 0x10000, 8192, 4096));
	cr_assert(sio_nvme_sgl_wanted(SIO_NVME_SGL_BYTE, 0x10000, 8193, 4096));
	cr_assert(sio_nvme_sgl_wanted(SIO_NVME_SGL_BYTE, 0x10004, 512, 4096));
	/* off a dword: only a byte-granular SGL can */
	cr_assert(sio_nvme_sgl_wanted(SIO_NVME_SGL_BYTE, 0x10001, 512, 4096));
	cr_assert_not(sio_nvme_sgl_wanted(SIO_NVME_SGL_DWORD, 0x10001, 512, 4096));
	cr_assert(sio_nvme_sgl_wanted(SIO_NVME_SGL_DWORD, 0x10004, 512, 4096));
}

Test(queue, sgl_data_block_in_the_command)
{
	struct sio_nvme_cmd cmd;

	memset(&cmd, 0xff, sizeof(cmd));
	cmd.flags = 0x05;	/* FUSE and reserved bits stay */
	sio_nvme_cmd_sgl_data(&cmd, 0x123456789ull, 12345);
	cr_assert_eq(cmd.flags, 0x05 | SIO_NVME_PSDT_SGL_MPTR << 6);
	cr_assert_eq(cmd.sgl.addr, 0x123456789ull);
	cr_assert_eq(cmd.sgl.length, 12345);
	cr_assert_eq(cmd.sgl.type, SIO_NVME_SGL_TYPE(SIO_NVME_SGL_DATA));
	for (int i = 0; i < 3; i++)
		cr_assert_eq(cmd.sgl.rsvd[i], 0);
}
