/* SPDX-License-Identifier: MIT */
/*
 * NVMe client multipath: the second path through adapter 1, failover of a
 * queue pair's commands to its backup, and restore of the primary.
 */

#include <stdlib.h>
#include "client-priv.h"

/* Whether the links of path @a (adapter @a at both ends) are up: two
 * lock-free reads, no copy of the node table. */
bool sio_nvme_path_links_up(struct sio_nvme_client *cl, int a)
{
	int me = sio_fabric_node_id(cl->f);

	if (me == cl->dinfo.lender)
		return true;
	return sio_link_get(cl->f, me, a) == 1 && sio_link_get(cl->f, cl->dinfo.lender, a) == 1;
}

/* As sio_nvme_path_links_up(), mapping again what the loss of the link to
 * the lender revoked (sio_link_resume()): from the first call on, only a
 * call here does, never the heartbeat behind a queue's back. */
bool sio_nvme_path_resume(struct sio_nvme_client *cl, int a)
{
	int me = sio_fabric_node_id(cl->f);

	if (me == cl->dinfo.lender)
		return true;
	return sio_link_get(cl->f, me, a) == 1 && sio_link_resume(cl->f, cl->dinfo.lender, a) == 1;
}

/* The links to the lender down, or their windows not mapped again here
 * yet (a condition for sio_nvme_grace_wait()). */
int sio_nvme_links_lost(void *cl)
{
	return !sio_nvme_path_resume(cl, 0);
}

/* Segment @id of node @node through adapter 1: a handle of the client's own. */
static int seg_via(struct sio_nvme_client *cl, int node, uint32_t id, struct sio_segment **seg,
		   void **va)
{
	int ret = sio_segment_connect(cl->f, node, id, seg);

	if (!ret && (ret = sio_segment_map_adapter(*seg, 1, va))) {
		sio_segment_close(*seg);
		*seg = NULL;
	}
	return ret;
}

/* The manager's mailbox, and its shadow doorbells if the client uses them,
 * through adapter 1. */
static int mailbox_via(struct sio_nvme_client *cl)
{
	struct sio_nvme_mbox_dbbuf m;
	void *va;
	int ret;

	ret = seg_via(cl, cl->mgr_node, SIO_NVME_MBOX_SEGID(cl->dinfo.id), &cl->mseg2, &va);
	if (ret)
		return ret;
	cl->mb2 = va;
	if (!cl->dbbuf.va)
		return 0;
	memcpy(&m, (const void *)&cl->mb->h.dbbuf, sizeof(m));
	ret = seg_via(cl, m.node, m.seg, &cl->dbbuf2.seg, &va);
	if (ret)
		return ret;
	cl->dbbuf2.va = va;
	cl->dbbuf2.size = cl->dbbuf.size;
	cl->dbbuf2.stride = cl->dbbuf.stride;
	return 0;
}

/* BAR0 through adapter 1: whole, or confined its register page, read-only. */
static int registers_via(struct sio_nvme_client *cl, void **va)
{
	int ret = sio_device_bar(cl->dev2, 0, &cl->bar0_2);

	if (ret)
		return ret;
	if (cl->confined)
		return sio_segment_map_range(cl->bar0_2, 1, 0, SIO_NVME_CONFINE_PAGE,
					     SIO_MAP_RDONLY, va);
	return sio_segment_map_adapter(cl->bar0_2, 1, va);
}

/*
 * What the client reads of the manager's mailbox and of the registers:
 * through adapter 0 while @path0 (its links are up), else through adapter
 * 1. On an NTB fabric the two are two NTBs' windows onto one memory, and
 * adapter 0's reads all ones once its link is down.
 */
void sio_nvme_ctl_follow(struct sio_nvme_client *cl, bool path0)
{
	if (!cl->mb2 || !cl->regs2)
		return;
	__atomic_store_n(&cl->mb, path0 ? cl->mb0 : cl->mb2, __ATOMIC_RELEASE);
	__atomic_store_n(&cl->regs, path0 ? cl->regs0 : cl->regs2, __ATOMIC_RELEASE);
}

/* The second path of a multipath client: a borrow through adapter 1, the
 * registers and the manager's mailbox through this node's adapter 1 too, and
 * the doorbells (the whole BAR0 here, or, confined, each backup queue pair's
 * own doorbell pages as it is made). */
int sio_nvme_client_second_path(struct sio_nvme_client *cl)
{
	struct sio_topology t;
	struct sio_errsave es;
	void *va = NULL;
	int ret;

	if (cl->dev2)
		return 0;
	ret = sio_fabric_topology(cl->f, &t);
	if (ret)
		return sio_err_wrap(-ret, "cannot read the fabric's topology");
	if (t.adapters < 2)
		return sio_err_set(EINVAL, "multipath needs two adapters per node, and "
				   "fabric '%s' has %d (smartio create NAME --adapters 2)",
				   sio_fabric_name(cl->f), t.adapters);
	ret = sio_device_borrow(cl->f, cl->dinfo.id, SIO_BORROW_SHARED, &cl->dev2);
	if (ret)
		return sio_err_wrap(-ret, "cannot borrow device %u a second time",
				    cl->dinfo.id);
	ret = sio_device_use_adapter(cl->dev2, 1);
	if (!ret)
		ret = sio_device_use_adapter(cl->dev, 0);
	if (!ret)
		ret = registers_via(cl, &va);
	if (!ret)
		ret = mailbox_via(cl);
	if (ret) {
		ret = sio_err_wrap(-ret, "cannot set up the second path to device %u",
				   cl->dinfo.id);
		sio_err_save(&es);
		sio_segment_close(cl->dbbuf2.seg);
		sio_segment_close(cl->mseg2);
		sio_segment_close(cl->bar0_2);
		memset(&cl->dbbuf2, 0, sizeof(cl->dbbuf2));
		cl->mseg2 = cl->bar0_2 = NULL;
		cl->mb2 = NULL;
		sio_device_close(cl->dev2);
		cl->dev2 = NULL;
		sio_err_restore(&es);
		return ret;
	}
	cl->regs2 = va;
	return 0;
}

/* Send waiting commands on the active path, oldest first, as room allows.
 * Return: whether none is left waiting. */
bool sio_nvme_mp_flush(struct sio_nvme_ioq *q)
{
	uint32_t i, n;

	if (!q->act || !q->npend)
		return !q->npend;
	n = sio_nvme_queue_free_slots(&q->act->q);
	if (n > q->npend)
		n = q->npend;
	/* Stops at the first that does not go in; it waits for the next. */
	for (i = 0; i < n && put_cmd(q, q->act, &q->pend[i]) >= 0; i++)
		;
	if (i) {
		sio_nvme_sq_ring(&q->act->q);
		memmove(q->pend, q->pend + i, (q->npend - i) * sizeof(*q->pend));
		q->npend -= i;
	}
	return !q->npend;
}

/*
 * A path failed. Take what its CQ holds, then have the manager delete the
 * queue pair: the controller finishes what it started and fetches nothing
 * more, so no command of it can run after (or beside) its resubmission.
 * What is still in flight then waits to be sent on the other path.
 */
static void path_down(struct sio_nvme_ioq *q, struct qpair *p, bool timed_out)
{
	uint32_t cid;

	if (!p->live)
		return;
	sio_nvme_qpair_reap(q, p, 0, true);
	/* On failure (the manager gone) there is no one left to ask. */
	(void)sio_nvme_qpair_delete(q, p);
	/* Completions posted while it drained, through a link that works. */
	sio_nvme_qpair_reap(q, p, 0, false);
	/* The controller holds none of its commands now: take their tags back
	 * and send them again on the other path. */
	for (cid = 0; cid < p->q.nslots; cid++) {
		if (sio_nvme_queue_tag_state(&p->q, cid) == SIO_NVME_CID_FREE)
			continue;
		if (sio_nvme_queue_tag_state(&p->q, cid) == SIO_NVME_CID_BUSY &&
		    q->npend < q->pend_cap) {
			q->pend[q->npend++] = p->rec[cid];
			q->resubmitted++;
		}
		sio_nvme_queue_release(&p->q, cid);
	}
	/* Its counters start over when it is created again. */
	q->stale += sio_nvme_queue_ignored(&p->q);
	p->q.spurious = p->q.duplicate = p->q.stale = 0;
	p->retry_ns = timed_out ? sio__now_ns() + (uint64_t)q->cl->timeout_ms * 1000000ull : 0;
	if (q->act == p) {
		q->act = q->qp[!p->path].live ? &q->qp[!p->path] : NULL;
		if (p->path == 0)
			q->failovers++;
	}
	if (!q->act && !q->down_since)
		q->down_since = sio__now_ns();
	sio_nvme_stats_sync(q);		/* the fault counters, for smartio nvme stats */
}

/* Remap a segment of @p for its device; when the mapping changed, move the
 * addresses that lie in it. Return: 0 or -errno. */
static int remap(struct qpair *p, struct sio_segment *seg, uint64_t *base)
{
	struct sio_segment_info si;
	uint64_t bus, old = *base;
	int ret;

	if (!seg)
		return 0;
	ret = sio_device_map(p->dev, seg, &bus);
	if (ret || bus == old)
		return ret;
	if (sio_segment_info(seg, &si))
		si.size = 0;
	if (p->sq_bus >= old && p->sq_bus < old + si.size)
		p->sq_bus = p->sq_bus - old + bus;
	if (p->cq_bus >= old && p->cq_bus < old + si.size)
		p->cq_bus = p->cq_bus - old + bus;
	if (p->prp_bus >= old && p->prp_bus < old + si.size)
		p->prp_bus = p->prp_bus - old + bus;
	*base = bus;
	return 0;
}

/* A path came back: create its queue pair again over the same memory. */
static int path_up(struct sio_nvme_ioq *q, struct qpair *p)
{
	int ret;

	if (p->live || (p->retry_ns && sio__now_ns() < p->retry_ns))
		return 0;
	ret = remap(p, p->cq_seg, &p->cq_seg_bus);
	if (!ret)
		ret = remap(p, p->sq_seg, &p->sq_seg_bus);
	if (ret)
		return ret;
	memset(p->cq_va, 0, p->cq_bytes);
	ret = sio_nvme_qpair_create(q, p);
	if (ret)
		return ret;
	p->retry_ns = 0;
	/* The primary takes new commands again; the backup drains. */
	if (!q->act || p->path == 0) {
		if (p->path == 0 && q->act)
			q->restores++;
		q->act = p;
	}
	q->down_since = 0;
	return 0;
}

/* Bring each path's queue pair in line with the state of its links. */
static void mp_evaluate(struct sio_nvme_ioq *q)
{
	bool up[2];
	int p;

	q->seen_gen = __atomic_load_n(&q->cl->link_gen, __ATOMIC_ACQUIRE);
	for (p = 0; p < 2; p++)
		up[p] = sio_nvme_path_links_up(q->cl, p);
	sio_nvme_ctl_follow(q->cl, up[0] || !up[1]);
	for (p = 0; p < 2; p++)
		if (!up[p])
			path_down(q, &q->qp[p], false);
	for (p = 0; p < 2; p++)
		if (up[p])
			path_up(q, &q->qp[p]);
	sio_nvme_mp_flush(q);
}

/* Link events for this client's paths, read from its fabric handle; any
 * queue pair of the client acts on them at its next poll. */
static void mp_events(struct sio_nvme_ioq *q)
{
	struct sio_nvme_client *cl = q->cl;
	struct sio_event ev[16];
	int n, i, me = sio_fabric_node_id(cl->f);

	while ((n = sio_event_read(cl->f, ev, 16)) > 0) {
		for (i = 0; i < n; i++)
			if ((ev[i].type == SIO_EV_LINK_DOWN || ev[i].type == SIO_EV_LINK_UP) &&
			    (ev[i].node == me || ev[i].node == cl->dinfo.lender))
				__atomic_fetch_add(&cl->link_gen, 1, __ATOMIC_ACQ_REL);
		if (n < 16)
			break;
	}
}

/* What the client reads through adapter 0 reads all ones. */
static bool ctl0_lost(const struct sio_nvme_client *cl)
{
	return __atomic_load_n(&cl->mb0->h.magic, __ATOMIC_ACQUIRE) != SIO_NVME_MBOX_MAGIC ||
	       sio_nvme_csts(cl->regs0) == 0xffffffffu;
}

/* ... while path 0 is still called up. */
static int path0_unsettled(void *arg)
{
	struct sio_nvme_client *cl = arg;

	return ctl0_lost(cl) && sio_nvme_path_links_up(cl, 0);
}

/*
 * The mailbox or the registers read all ones through adapter 0: on an NTB,
 * its link lost, whose windows the kernel revokes before the fabric's link
 * state says so. Wait for the link state to catch up (the link grace at
 * most), then follow the path that is up, before anything is taken for a
 * reset or a device gone.
 */
void sio_nvme_mp_settle(struct sio_nvme_ioq *q)
{
	if (!q->cl->mb2 || !ctl0_lost(q->cl))
		return;
	(void)sio_nvme_grace_wait(path0_unsettled, q->cl, q->cl->grace_ms, NULL);
	mp_evaluate(q);
}

/* A controller reset took both queue pairs: what they held waits, and the
 * paths whose links are up get theirs again (new ids). */
int sio_nvme_mp_recover(struct sio_nvme_ioq *q)
{
	for (int p = 0; p < 2; p++)
		path_down(q, &q->qp[p], false);
	mp_evaluate(q);
	return q->act ? 0 : sio_err_set(ENOTCONN, "neither path's queue pair could be made "
					"again");
}

/* Poll of a multipath queue: events every few polls (a syscall that finds
 * nothing costs little), both queue pairs, waiting commands, and on a stall
 * a failover before the queue is failed. */
int sio_nvme_mp_poll(struct sio_nvme_ioq *q, uint32_t max)
{
	uint64_t now;
	int n = 0, p;

	if (!(++q->polls & 31) || !q->act || q->npend) {
		mp_events(q);
		/* A path that is not live is looked at again now and then, in
		 * case its link-up event was lost (a full event socket drops). */
		if ((!q->qp[0].live || !q->qp[1].live) && !(q->polls & 1023)) {
			now = sio__now_ns();
			if (now >= q->next_check) {
				q->next_check = now + 100000000ull;
				mp_evaluate(q);
			}
		}
	}
	if (__atomic_load_n(&q->cl->link_gen, __ATOMIC_ACQUIRE) != q->seen_gen)
		mp_evaluate(q);
	for (p = 0; p < 2; p++)
		if (q->qp[p].live)
			n += sio_nvme_qpair_reap(q, &q->qp[p], max ? max - (uint32_t)n : 0, true);
	if (q->npend)
		sio_nvme_mp_flush(q);
	if (n) {
		q->empty_polls = 0;
		q->stall_since = 0;
		q->tmo_failovers = 0;
		return n;
	}
	if (!sio_nvme_ioq_inflight(q) || (++q->empty_polls & 255))
		return 0;
	if (sio_nvme_reset_moved(q))
		return sio_nvme_ioq_recover(q, false);
	now = sio__now_ns();
	if (!q->act) {
		if (now - q->down_since > (uint64_t)q->cl->timeout_ms * 1000000ull)
			return sio_nvme_ioq_fail(q);
		return 0;
	}
	if (!q->stall_since) {
		q->stall_since = now;
	} else if (now - q->stall_since > (uint64_t)q->cl->timeout_ms * 1000000ull) {
		/* Stuck with no event: try the other path, once per path. */
		q->stall_since = 0;
		q->timeouts++;
		if (++q->tmo_failovers > 2 || !q->qp[!q->act->path].live)
			return sio_nvme_ioq_fail(q);
		path_down(q, q->act, true);
		sio_nvme_mp_flush(q);
	}
	return 0;
}
