/* SPDX-License-Identifier: MIT */
/*
 * A client's queue pairs made again, as Linux's nvme_reset_work() makes
 * its own after a controller reset and nvme_timeout() resets what timed
 * out: when the manager reset the controller (on a fatal status, an admin
 * timeout, or a controller disabled behind its back; the mailbox's reset
 * count says so), or when the queue's commands got no completion within
 * the timeout (the manager then deletes the queue pair, which ends what
 * the controller started and drops what it never fetched). The queue pair
 * is created again over the same memory with the same id, and the commands
 * still in flight are sent again, with the same command ids, from the
 * copies the client built them in (struct qpair @sent): the SQ may be
 * behind a window that a link's loss revoked, where what was stored was
 * lost. Every other SQ slot is cleared first, so that no doorbell, however
 * late, has the controller run what an earlier lap left there. Only a
 * queue that cannot be made again, or keeps timing out, fails; each
 * command ends once.
 */

#include <stdlib.h>
#include "client-priv.h"

/* Recoveries within four timeouts of each other before the queue fails. */
#define RECOVER_TRIES	3

/* The reset count once no reset is under way: the manager answers a
 * HELLO (await() waits out a reset) between resets. */
static int settled_resets(struct sio_nvme_client *cl, uint32_t *resets)
{
	struct sio_nvme_mbox_req req = { .op = SIO_MBOX_OP_HELLO };
	struct sio_nvme_mbox_resp resp;
	int ret;

	for (int i = 0; i < RECOVER_TRIES; i++) {
		ret = sio_nvme_mbox_call(cl, &req, &resp);
		if (ret)
			return ret;
		*resets = sio_nvme_resets(cl);
		if (!(*resets & 1))
			return 0;
	}
	return sio_err_set(EAGAIN, "the NVMe manager keeps resetting the controller");
}

/* Have the manager delete @p in the controller, keeping its id for us. */
static int reset_qpair(struct sio_nvme_ioq *q, struct qpair *p)
{
	struct sio_nvme_mbox_req req = { .op = SIO_MBOX_OP_RESET_QP, .qid = p->q.qid };
	struct sio_nvme_mbox_resp resp;

	return sio_nvme_mbox_call(q->cl, &req, &resp);
}

/* What @p's CQ holds: delivered, but what its deletion aborted, which is
 * taken back to be sent again. */
static void take_completions(struct sio_nvme_ioq *q, struct qpair *p)
{
	struct sio_nvme_cpl cpl;
	uint64_t cookie;
	uint16_t st;
	int tag;

	for (uint32_t seen = 0; seen < p->q.size; seen++) {
		tag = sio_nvme_cq_pop(&p->q, &cpl, &cookie);
		if (tag == -EAGAIN)
			break;
		if (tag < 0)
			continue;
		st = SIO_NVME_STATUS_CODE(cpl.status);
		if (st == SIO_NVME_MK_STATUS(NVME_SCT_GENERIC, NVME_SC_ABORT_QUEUE) &&
		    sio_nvme_queue_claim_cid(&p->q, cpl.cid, cookie) >= 0)
			continue;
		sio_nvme_ioq_end(q, p, (uint32_t)tag, cookie, st ? -EIO : 0, st);
	}
}

/* The commands in flight, from their copies, with their ids (a tag in
 * flight keeps its command's id, struct sio_nvme_queue @ids), and what
 * they have beside the SQ written again. Return: how many. */
static uint32_t in_flight(struct sio_nvme_ioq *q, struct qpair *p, struct sio_nvme_cmd *cmds)
{
	uint32_t n = 0;
	uint64_t prp1, prp2;
	size_t off;

	for (uint32_t tag = 0; tag < p->q.nslots; tag++) {
		if (sio_nvme_queue_tag_state(&p->q, tag) != SIO_NVME_CID_BUSY)
			continue;
		cmds[n] = p->sent[tag];
		cmds[n++].cid = p->ids[tag];
		off = (size_t)tag * q->prp_stride;
		if (p->side[tag].kind == SIDE_PRP)
			sio_nvme_prp_fill(p->side[tag].a, p->side[tag].b, q->page,
					  (uint64_t *)((uint8_t *)p->prp_va + off),
					  p->prp_bus + off, &prp1, &prp2);
		else if (p->side[tag].kind == SIDE_DSM)
			*(struct nvme_dsm_range *)((uint8_t *)p->prp_va + off) =
				(struct nvme_dsm_range){ .nlb = p->side[tag].b,
							 .slba = p->side[tag].a };
	}
	return n;
}

/* @p made again in the controller with its id, over its memory, and what
 * it had in flight sent again. */
static int qpair_restart(struct sio_nvme_ioq *q, struct qpair *p)
{
	struct sio_nvme_mbox_req req;
	struct sio_nvme_mbox_resp resp;
	struct sio_nvme_cmd *cmds;
	uint32_t n;
	int ret;

	take_completions(q, p);
	cmds = malloc(p->q.nslots * sizeof(*cmds));
	if (!cmds)
		return sio_err_set(ENOMEM, "out of memory");
	n = in_flight(q, p, cmds);
	memset(p->cq_va, 0, p->cq_bytes);	/* phase tags 0 before the controller sees it */
	/* an entry of 0s is a Flush of namespace 0, which fails, with id 0,
	 * which no command has (generation 0): nothing runs, nothing ends */
	memset(p->sq_va, 0, (size_t)p->q.size * sizeof(struct sio_nvme_cmd));
	sio_nvme_queue_restart(&p->q, cmds, n);
	free(cmds);
	memset(&req, 0, sizeof(req));
	req.op = SIO_MBOX_OP_CREATE_QP;
	req.qid = p->q.qid;
	req.qsize = q->depth;
	req.bus1 = p->sq_bus;
	req.bus2 = p->cq_bus;
	req.cdw10 = q->prio;
	req.cdw11 = sio_nvme_cpl_irq(q->cpl_mode) ? SIO_MBOX_QP_IRQ : 0;
	ret = sio_nvme_mbox_call(q->cl, &req, &resp);
	if (ret)
		return ret;
	sio_nvme_sq_ring(&p->q);
	q->resubmitted += n;
	return 0;
}

/*
 * A link on the way to the lender down under a single-path queue (a flap,
 * the lender's host rebooting; a multipath queue fails over instead):
 * what the controller fetched or posted meanwhile was lost. Pause until
 * the links are up, $SMARTIO_NVME_LINK_GRACE_MS at most, counted; the
 * caller then makes the pair again and sends again what was in flight.
 * That is safe: a read sent twice reads the same blocks, and a write sent
 * twice writes the same data to the same blocks (the first may have been
 * executed; no block ends up with anything else). Return: 0 once the
 * links are up, or -ENOLINK past the grace.
 */
static int link_pause(struct sio_nvme_ioq *q)
{
	struct sio_nvme_client *cl = q->cl;
	uint64_t waited;
	int ret;

	q->link_flaps++;
	ret = sio_nvme_grace_wait(sio_nvme_links_lost, cl, cl->grace_ms, &waited);
	q->paused_ns += waited;
	sio_nvme_stats_sync(q);
	if (ret)
		return sio_err_set(ENOLINK, "queue %u: the link between this node (%d) and the "
				   "lender (node %d) has been down for over %u ms "
				   "($SMARTIO_NVME_LINK_GRACE_MS)", q->qp[0].q.qid,
				   sio_fabric_node_id(cl->f), cl->dinfo.lender, cl->grace_ms);
	/* back within the grace, but past the lease: taken for dead, the
	 * queue pair deleted and the slot freed by the manager */
	return sio_fabric_alive(cl->f);
}

/* Nothing to make again: the device left, or reads all ones. */
static bool gone(struct sio_nvme_ioq *q)
{
	struct sio_device_info di;

	return sio_nvme_csts(q->cl->regs) == 0xffffffffu ||
	       sio_device_info(q->cl->dev, &di) == -ENODEV;
}

int sio_nvme_ioq_recover(struct sio_nvme_ioq *q, bool timed_out)
{
	struct sio_nvme_client *cl = q->cl;
	uint64_t now = sio__now_ns();
	uint32_t resets = 0;
	bool reset;
	int ret, settled;

	if (timed_out) {
		q->timeouts++;
		sio_nvme_stats_sync(q);
	}
	/* first: across a link that is down, the registers read all ones */
	if (q->mp)
		sio_nvme_mp_settle(q);
	if (!q->mp && !sio_nvme_path_links_up(cl, 0)) {
		ret = link_pause(q);
		if (ret)
			return sio_nvme_ioq_fail_with(q, ret);
		timed_out = true;	/* what it had in flight is lost */
		q->recover_tries = 0;	/* a flap ridden out is no failed try */
		now = sio__now_ns();
	}
	if (now - q->recover_ns > 4ull * cl->timeout_ms * 1000000ull)
		q->recover_tries = 0;
	q->recover_ns = now;
	q->stall_since = 0;
	if (++q->recover_tries > RECOVER_TRIES || gone(q))
		return sio_nvme_ioq_fail(q);
	ret = settled_resets(cl, &resets);
	if (!ret && resets == q->resets_seen && !timed_out)
		return 0;
	reset = resets != q->resets_seen;
	/* the manager says whether the pair is gone (the count is shared
	 * memory, which anyone may write): deleted now if it was not */
	if (!ret && !q->mp) {
		ret = reset_qpair(q, &q->qp[0]);
		settled = settled_resets(cl, &resets);	/* a reset meanwhile: its count */
		if (!ret)
			ret = settled;
	}
	if (!ret) {
		q->resets_seen = resets;
		ret = q->mp ? sio_nvme_mp_recover(q) : qpair_restart(q, &q->qp[0]);
	}
	if (ret)
		return sio_nvme_ioq_fail_with(q, sio_err_wrap(-ret, "queue %u could not be made "
				"again after %s", q->qp[0].q.qid, reset ? "a controller reset" :
				"a timeout"));
	q->recoveries++;
	sio_nvme_stats_sync(q);		/* the fault counters, for smartio nvme stats */
	return 0;
}
