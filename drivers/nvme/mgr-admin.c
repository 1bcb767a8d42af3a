/* SPDX-License-Identifier: MIT */
/*
 * The NVMe manager: the clients' requests: queue pairs, Identify,
 * logs, features and the CMB, answered through the mailbox
 * (mgr-priv.h says which file holds which job).
 */

#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <unistd.h>
#include "mgr-priv.h"

static int refuse(struct sio_nvme_manager *m, struct sio_nvme_mbox_resp *r, int err,
		  const char *fmt, ...) __attribute__((format(printf, 4, 5)));

static int refuse(struct sio_nvme_manager *m, struct sio_nvme_mbox_resp *r, int err,
		  const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(r->msg, sizeof(r->msg), fmt, ap);
	va_end(ap);
	r->err = -err;
	m->st.refused++;
	return -err;
}

static int from_ctrl(struct sio_nvme_manager *m, struct sio_nvme_mbox_resp *r, int ret,
		     uint16_t status)
{
	int health;

	if (!ret)
		return 0;
	r->status = status;
	snprintf(r->msg, sizeof(r->msg), "%s", sio_errmsg());
	r->err = ret;
	m->st.refused++;
	/* The controller timed out, failed (CSTS.CFS) or was disabled: it is
	 * reset before the next request (sio_nvme_mgr_check_ctrl()), which the
	 * client makes again. A lender whose link flapped under a queue's DMA
	 * left its controller failed so, and clients failed on it. */
	health = sio_nvme_ctrl_health(m->ctrl);
	if (health == -ETIMEDOUT || health == -EIO || health == -ESTALE) {
		snprintf(r->msg, sizeof(r->msg), "the controller %s and is being reset: ask "
			 "again", health == -EIO ? "reports a fatal status" :
			 health == -ESTALE ? "was disabled" : "timed out");
		r->err = ret = -EAGAIN;
		r->flags |= SIO_MBOX_RESP_RETRY;
	}
	return ret;
}

/*
 * A command that failed moving data (or got no answer) while a link on the
 * way between the controller and the client's node is down failed because
 * of it: say so, with the node and adapter, before the bare NVMe status.
 * The client's node comes from its slot, which it wrote: range-checked.
 */
static void name_cause(struct sio_nvme_manager *m, int s, struct sio_nvme_mbox_resp *r)
{
	int node = m->mb->slots[s].node, lender = m->dinfo.lender, a;
	struct sio_topology t;
	char cause[96] = "", was[sizeof(r->msg) - sizeof(cause)];

	if ((r->status & 0x7ff) != SIO_NVME_MK_STATUS(NVME_SCT_GENERIC,
						      NVME_SC_DATA_XFER_ERROR) &&
	    r->err != -ETIMEDOUT)
		return;
	if (sio_fabric_topology(m->f, &t) || node < 0 || node >= t.nodes)
		return;
	for (a = 0; a < t.adapters && !cause[0]; a++) {
		if (node != lender && sio_link_get(m->f, node, a) == 0)
			snprintf(cause, sizeof(cause), "node %u's link to the lender (adapter %u) "
				 "is down (smartio link ... %u %u up)", (uint8_t)node, (uint8_t)a,
				 (uint8_t)node, (uint8_t)a);
		else if (node != lender && sio_link_get(m->f, lender, a) == 0)
			snprintf(cause, sizeof(cause), "the lender's link (node %u, adapter %u) "
				 "is down (smartio link ... %u %u up)", (uint8_t)lender, (uint8_t)a,
				 (uint8_t)lender, (uint8_t)a);
	}
	if (!cause[0])
		return;
	/* The status after the cause: cut short if need be, the cause is whole. */
	memcpy(was, r->msg, sizeof(was) - 1);
	was[sizeof(was) - 1] = 0;
	snprintf(r->msg, sizeof(r->msg), "%s: %s", cause, was);
}

/* A free qid for @pid: confined, not one whose doorbell pages another live
 * process may still have mapped. Return: the qid, or 0 (@held says whether
 * free ones exist but are held so). */
static uint32_t pick_qid(struct sio_nvme_manager *m, int32_t pid, bool *held)
{
	uint32_t qid;

	*held = false;
	for (qid = 1; qid <= m->ci->io_queues; qid++) {
		if (m->qowner[qid] >= 0)
			continue;
		if (!m->confined || !m->dbpid[qid] || m->dbpid[qid] == pid)
			return qid;
		if (!sio_nvme_mgr_pid_alive(m->dbpid[qid])) {
			m->dbpid[qid] = 0;
			return qid;
		}
		*held = true;
	}
	return 0;
}

/* Let @pid map qid's SQ tail and CQ head doorbell pages, read-write: the
 * range up to the next queue's SQ doorbell, which is qid's alone. */
int sio_nvme_mgr_grant_doorbells(struct sio_nvme_manager *m, uint32_t qid, int32_t pid,
			   struct sio_nvme_mbox_resp *r)
{
	int ret;

	if (!m->confined)
		return 0;
	if (m->dbpid[qid] && m->dbpid[qid] != pid)
		sio_nvme_mgr_revoke_doorbells(m, qid);	/* a dead process's, to be sure */
	ret = sio_device_grant(m->dev, pid, 0, sio_nvme_mgr_db_offset(m, qid), 2ull * m->ci->db_stride);
	if (ret) {
		snprintf(r->msg, sizeof(r->msg), "cannot grant the doorbells of queue %u: %s",
			 qid, sio_errmsg());
		r->err = ret;
		m->st.refused++;
		return ret;
	}
	m->dbpid[qid] = pid;
	return 0;
}


/* A request to make again a queue pair of the slot's that a reset took:
 * the same id, so its doorbell pages stay its own. Return: true when
 * handled (reserved, or refused). */
static bool create_again_check(struct sio_nvme_manager *m, struct creating *c)
{
	uint32_t qid = c->q.qid;
	uint8_t p = qid <= STATE_QIDS ? m->state->pend[qid] : PEND_NONE;

	if (qid > m->ci->io_queues || m->qowner[qid] != c->s)
		c->ret = refuse(m, &c->r, EPERM, "queue %u is not yours to create again", qid);
	else if (p != PEND_GONE && p != PEND_REDO)
		c->ret = refuse(m, &c->r, EBUSY, "queue %u exists: only one a reset took is "
				"created again", qid);
	if (c->ret)
		return true;
	/* an earlier try that came to no known end: deleted to be sure */
	if (p == PEND_REDO)
		sio_nvme_ctrl_delete_qpair(m->ctrl, (uint16_t)qid);
	c->qid = qid;
	c->again = true;
	m->state->pend[qid] = PEND_REDO;
	return true;
}

/* Check a request and reserve a qid for it, or refuse it. */
static void create_check(struct sio_nvme_manager *m, struct creating *c)
{
	const struct sio_nvme_mbox_req *q = &c->q;
	uint32_t page = m->ci->page_size;
	bool held;

	c->pid = __atomic_load_n(&m->mb->slots[c->s].pid, __ATOMIC_ACQUIRE);
	if (q->qsize < 2 || q->qsize > m->ci->mqes)
		c->ret = refuse(m, &c->r, EINVAL, "queue size %u out of range 2..%u (CAP.MQES)",
				q->qsize, m->ci->mqes);
	else if (!q->bus1 || !q->bus2 || ((q->bus1 | q->bus2) & (page - 1)))
		c->ret = refuse(m, &c->r, EINVAL, "queue addresses must be non-zero and "
				"%u-byte aligned", page);
	else if (q->cdw10 > 3)
		c->ret = refuse(m, &c->r, EINVAL, "SQ priority %u out of range 0..3", q->cdw10);
	else if (q->cdw10 && m->co.arbitration != NVME_CC_AMS_WRRU)
		c->ret = refuse(m, &c->r, ENOTSUP, "SQ priority %u (%s) needs weighted round robin "
				"arbitration, and the controller runs round robin: start the manager "
				"with --arbitration wrr (where CAP.AMS offers it)", q->cdw10,
				q->cdw10 == 1 ? "high" : q->cdw10 == 2 ? "medium" : "low");
	else if (m->confined && c->pid <= 0)
		c->ret = refuse(m, &c->r, EINVAL, "mailbox slot %d names no process", c->s);
	if (c->ret || (q->qid && create_again_check(m, c)))
		return;
	c->qid = pick_qid(m, c->pid, &held);
	if (!c->qid && held)
		c->ret = refuse(m, &c->r, ENOSPC, "no I/O queue pair left: the free ones' "
				"doorbells were granted to processes still running");
	else if (!c->qid)
		c->ret = refuse(m, &c->r, ENOSPC, "no I/O queue pair left: the controller has "
				"%u and all are taken", m->ci->io_queues);
	if (c->ret)
		return;
	m->state->pend[c->qid] = PEND_CREATE;
	m->qowner[c->qid] = c->s;	/* taken: the next pick skips it */
}

/* One admin command per pending request (@mk builds it, false: none), all
 * at once; a request whose command failed is answered with its status. */
static void create_step(struct sio_nvme_manager *m, struct creating *c, int n,
			bool (*mk)(const struct creating *, struct sio_nvme_cmd *))
{
	struct sio_nvme_cmd cmd[SIO_NVME_ADMIN_DEPTH];
	struct sio_nvme_cpl cpl[SIO_NVME_ADMIN_DEPTH];
	int idx[SIO_NVME_ADMIN_DEPTH], k = 0, i, j, ret;
	uint16_t st;

	for (i = 0; i < n; i++)
		if (!c[i].ret && mk(&c[i], &cmd[k]))
			idx[k++] = i;
	if (!k)
		return;
	ret = sio_nvme_ctrl_admin_many(m->ctrl, cmd, (uint32_t)k, cpl, 0);
	for (j = 0; j < k; j++) {
		i = idx[j];
		st = ret ? 0 : SIO_NVME_STATUS_CODE(cpl[j].status);
		if (!ret && !st)
			continue;
		if (!ret)
			sio_err_set(EIO, "%s (0x%02x) failed: %s (status 0x%03x)",
				    sio_nvme_admin_name(cmd[j].opcode), cmd[j].opcode,
				    sio_nvme_status_str(st), st);
		c[i].ret = from_ctrl(m, &c[i].r, ret ? ret : -EIO, st);
		c[i].drop_cq = !ret && cmd[j].opcode == nvme_admin_create_sq;
		if (ret)
			c[i].qid = 0;	/* fate unknown: pend stays for a successor */
	}
}

static bool mk_cq(const struct creating *c, struct sio_nvme_cmd *cmd)
{
	bool irq = c->q.cdw11 & SIO_MBOX_QP_IRQ;

	sio_nvme_cmd_create_cq(cmd, (uint16_t)c->qid, c->q.qsize, c->q.bus2,
			       SIO_NVME_Q_PC | (irq ? SIO_NVME_CQ_IEN : 0),
			       irq ? sio_nvme_mbox_vector((uint16_t)c->qid) : 0);
	return true;
}

static bool mk_sq(const struct creating *c, struct sio_nvme_cmd *cmd)
{
	sio_nvme_cmd_create_sq(cmd, (uint16_t)c->qid, c->q.qsize, c->q.bus1, (uint16_t)c->qid,
			       c->q.cdw10);
	return true;
}

/*
 * Create the queue pairs of @n requests together: the CQs in one batch of
 * admin commands, then the SQs in another, so clients arriving at once
 * wait for two admin round trips, not two each.
 */
static void create_many(struct sio_nvme_manager *m, struct creating *c, int n)
{
	struct sio_nvme_cmd cmd;
	int i;

	for (i = 0; i < n; i++)
		create_check(m, &c[i]);
	create_step(m, c, n, mk_cq);
	create_step(m, c, n, mk_sq);
	for (i = 0; i < n; i++) {
		if (c[i].drop_cq) {
			sio_nvme_cmd_delete_q(&cmd, nvme_admin_delete_cq, (uint16_t)c[i].qid);
			sio_nvme_ctrl_admin(m->ctrl, &cmd, NULL, 0);
		}
		/* made again: its doorbell pages were never taken back */
		if (!c[i].ret && !(c[i].again && m->dbpid[c[i].qid] == c[i].pid) &&
		    (c[i].ret = sio_nvme_mgr_grant_doorbells(m, c[i].qid, c[i].pid, &c[i].r)))
			sio_nvme_ctrl_delete_qpair(m->ctrl, (uint16_t)c[i].qid);
		if (!c[i].qid)
			continue;
		m->state->pend[c[i].qid] = PEND_NONE;
		if (c[i].ret && c[i].again) {
			m->state->pend[c[i].qid] = PEND_GONE;	/* still the slot's */
		} else if (c[i].ret) {
			m->qowner[c[i].qid] = -1;
		} else {
			m->qpid[c[i].qid] = c[i].pid;
			m->st.queues++;
			c[i].r.qid = (uint16_t)c[i].qid;
		}
	}
}

static int op_delete_qp(struct sio_nvme_manager *m, int s, const struct sio_nvme_mbox_req *q,
			struct sio_nvme_mbox_resp *r)
{
	if (q->qid == 0 || q->qid > m->ci->io_queues)
		return refuse(m, r, EINVAL, "queue id %u out of range 1..%u", q->qid,
			      m->ci->io_queues);
	if (m->qowner[q->qid] != s)
		return refuse(m, r, EPERM, "queue %u is not yours", q->qid);
	return from_ctrl(m, r, sio_nvme_mgr_qpair_drop(m, q->qid), 0);
}

/* A client's queue pair timed out: deleted in the controller, which ends
 * what it holds (or drops what it never fetched), and kept for its owner
 * to create again over the same memory. */
static int op_reset_qp(struct sio_nvme_manager *m, int s, const struct sio_nvme_mbox_req *q,
		       struct sio_nvme_mbox_resp *r)
{
	int ret;

	if (q->qid == 0 || q->qid > m->ci->io_queues)
		return refuse(m, r, EINVAL, "queue id %u out of range 1..%u", q->qid,
			      m->ci->io_queues);
	if (m->qowner[q->qid] != s)
		return refuse(m, r, EPERM, "queue %u is not yours", q->qid);
	if (m->state->pend[q->qid] == PEND_GONE)
		return 0;
	m->state->pend[q->qid] = PEND_REDO;	/* the owner's, whatever comes */
	ret = from_ctrl(m, r, sio_nvme_ctrl_delete_qpair(m->ctrl, q->qid), 0);
	m->state->pend[q->qid] = PEND_GONE;
	if (m->st.queues)
		m->st.queues--;
	mlog(m, "queue pair %u of pid %d (slot %d) timed out: deleted for its owner to "
	     "create again%s%s", q->qid, (int)m->qpid[q->qid], s, ret ? ": " : "",
	     ret ? r->msg : "");
	return ret;
}

static int op_identify(struct sio_nvme_manager *m, const struct sio_nvme_mbox_req *q,
		       struct sio_nvme_mbox_resp *r)
{
	uint16_t st = 0;
	int ret;

	/* Only the read-only CNS values a client has use for. */
	if (q->cdw10 != NVME_IDENTIFY_CNS_NS && q->cdw10 != NVME_IDENTIFY_CNS_CTRL &&
	    q->cdw10 != NVME_IDENTIFY_CNS_NS_ACTIVE_LIST &&
	    q->cdw10 != NVME_IDENTIFY_CNS_NS_DESC_LIST)
		return refuse(m, r, EINVAL, "Identify CNS 0x%x is not relayed", q->cdw10);
	if (!q->bus1 || (q->bus1 & 0xfff))
		return refuse(m, r, EINVAL, "Identify buffer must be non-zero and 4 KiB "
			      "aligned");
	/* The call first: @st is its output. */
	ret = sio_nvme_ctrl_identify(m->ctrl, (uint8_t)q->cdw10, q->nsid, q->bus1, &st);
	return from_ctrl(m, r, ret, st);
}

static int op_get_log(struct sio_nvme_manager *m, const struct sio_nvme_mbox_req *q,
		      struct sio_nvme_mbox_resp *r)
{
	uint16_t st = 0;
	int ret;

	if (q->cdw10 > 0xff)
		return refuse(m, r, EINVAL, "log page id %u out of range", q->cdw10);
	if (!q->len || q->len > 8192 || (q->len & 3))
		return refuse(m, r, EINVAL, "log page length %u invalid (a multiple of 4, "
			      "at most 8192)", q->len);
	if (!q->bus1 || (q->bus1 & 0xfff))
		return refuse(m, r, EINVAL, "log page buffer must be non-zero and 4 KiB "
			      "aligned");
	ret = sio_nvme_ctrl_get_log(m->ctrl, (uint8_t)q->cdw10, q->nsid, q->bus1, q->len,
				    &st);
	return from_ctrl(m, r, ret, st);
}

static int op_get_feat(struct sio_nvme_manager *m, const struct sio_nvme_mbox_req *q,
		       struct sio_nvme_mbox_resp *r)
{
	uint16_t st = 0;
	uint32_t res = 0;
	int ret;

	/* Features that return data through a buffer are not relayed. */
	if (q->cdw10 > 0xff || q->cdw10 == NVME_FEAT_FID_LBA_RANGE ||
	    q->cdw10 == NVME_FEAT_FID_AUTO_PST || q->cdw10 == NVME_FEAT_FID_HOST_MEM_BUF ||
	    q->cdw10 == NVME_FEAT_FID_TIMESTAMP || q->cdw10 == NVME_FEAT_FID_HCTM)
		return refuse(m, r, EINVAL, "Get Features for feature 0x%x is not relayed",
			      q->cdw10);
	/* NSID as the client gave it: namespace-scoped features need it */
	ret = sio_nvme_ctrl_get_features_ns(m->ctrl, (uint8_t)q->cdw10, q->nsid, q->cdw11, &res,
					    &st);
	r->result = res;
	return from_ctrl(m, r, ret, st);
}

static int op_cmb_alloc(struct sio_nvme_manager *m, int s, const struct sio_nvme_mbox_req *q,
			struct sio_nvme_mbox_resp *r)
{
	uint64_t size = sio__page_up(q->value), off = 0;
	int i, free_ent = -1;
	bool moved;

	if (!m->ci->cmb.size)
		return refuse(m, r, ENODEV, "the controller has no controller memory "
			      "buffer");
	if (!m->ci->cmb.sqs)
		return refuse(m, r, ENOTSUP, "the controller's CMB does not take SQs");
	if (!size || size > m->ci->cmb.size)
		return refuse(m, r, EINVAL, "CMB request of %llu bytes out of range (the "
			      "CMB has %llu)", (unsigned long long)q->value,
			      (unsigned long long)m->ci->cmb.size);
	/* First fit over the taken ranges, which are few. */
	do {
		moved = false;
		for (i = 0; i < CMB_MAX_ALLOCS; i++) {
			struct cmb_alloc *a = &m->cmb[i];

			if (a->slot < 0)
				continue;
			if (off < a->off + a->size && a->off < off + size) {
				off = a->off + a->size;
				moved = true;
			}
		}
	} while (moved && off + size <= m->ci->cmb.size);
	if (off + size > m->ci->cmb.size)
		return refuse(m, r, ENOSPC, "the CMB has no free %llu bytes left (size "
			      "%llu)", (unsigned long long)size,
			      (unsigned long long)m->ci->cmb.size);
	for (i = 0; i < CMB_MAX_ALLOCS; i++)
		if (m->cmb[i].slot < 0) {
			free_ent = i;
			break;
		}
	if (free_ent < 0)
		return refuse(m, r, ENOSPC, "too many CMB ranges handed out (%d)",
			      CMB_MAX_ALLOCS);
	m->cmb[free_ent].slot = s;
	m->cmb[free_ent].off = off;
	m->cmb[free_ent].size = size;
	r->value = off;
	return 0;
}

static int op_cmb_free(struct sio_nvme_manager *m, int s, const struct sio_nvme_mbox_req *q,
		       struct sio_nvme_mbox_resp *r)
{
	int i;

	for (i = 0; i < CMB_MAX_ALLOCS; i++)
		if (m->cmb[i].slot == s && m->cmb[i].off == q->value) {
			m->cmb[i].slot = -1;
			return 0;
		}
	return refuse(m, r, EPERM, "CMB offset 0x%llx is not yours",
		      (unsigned long long)q->value);
}

/* A request from slot @s: its client is known from now on. */
static void respond(struct sio_nvme_manager *m, int s, uint32_t op, int ret,
		    struct sio_nvme_mbox_resp *r);

/*
 * The client a request comes from: the one seen on the slot before, or a
 * new one, which must be a process of the fabric on the node it names.
 * Return: whether to serve the request (if not, it was answered).
 */
bool sio_nvme_mgr_note_client(struct sio_nvme_manager *m, int s, uint32_t op)
{
	struct sio_nvme_mbox_slot *sl = &m->mb->slots[s];
	int32_t pid = __atomic_load_n(&sl->pid, __ATOMIC_ACQUIRE), node = sl->node;
	struct sio_nvme_mbox_resp r;

	if (m->slot_pid[s] && sio_nvme_mbox_known(m, s))
		return true;
	if (m->slot_pid[s]) {	/* written over: mended at the next look */
		sio_nvme_mgr_retry(m, s, "the mailbox slot was overwritten: ask again");
		return false;
	}
	if (!sio_nvme_mgr_slot_plausible(m, s) || !sio_fabric_proc_alive(m->f, node, pid)) {
		memset(&r, 0, sizeof(r));
		refuse(m, &r, EPERM, "mailbox slot %d names pid %d on node %d, which is no "
		       "process of fabric '%s'", s, (int)pid, (int)node, sio_fabric_name(m->f));
		respond(m, s, op, -EPERM, &r);
		return false;
	}
	m->slot_pid[s] = pid;
	m->slot_node[s] = node;
	m->st.clients++;
	mlog(m, "client pid %d on node %d connected (slot %d)", (int)pid, (int)node, s);
	return true;
}

static void respond(struct sio_nvme_manager *m, int s, uint32_t op, int ret,
		    struct sio_nvme_mbox_resp *r)
{
	struct sio_nvme_mbox_slot *sl = &m->mb->slots[s];

	if (ret) {
		name_cause(m, s, r);
		mlog(m, "refused request %u from pid %d: %s", op, (int)sl->pid, r->msg);
	}
	m->st.requests++;
	memcpy((void *)&sl->resp, r, sizeof(*r));
	__atomic_store_n(&sl->state, SIO_MBOX_RESP, __ATOMIC_RELEASE);
	sio_segment_notify(m->seg, sio_nvme_mbox_slot_off(s, offsetof(struct sio_nvme_mbox_slot, state)));
}

/* Serve the create requests taken at once, and answer them. */
void sio_nvme_mgr_create_and_respond(struct sio_nvme_manager *m, struct creating *c, int n)
{
	create_many(m, c, n);
	if (n > 1)
		mlog(m, "%d queue pair requests served together", n);
	for (int i = 0; i < n; i++)
		respond(m, c[i].s, SIO_MBOX_OP_CREATE_QP, c[i].ret, &c[i].r);
}

void sio_nvme_mgr_handle(struct sio_nvme_manager *m, int s, const struct sio_nvme_mbox_req *req)
{
	struct sio_nvme_mbox_slot *sl = &m->mb->slots[s];
	struct sio_nvme_mbox_req q = *req;
	struct sio_nvme_mbox_resp r;
	struct creating c;
	int ret = 0;

	memset(&r, 0, sizeof(r));
	switch (q.op) {
	case SIO_MBOX_OP_HELLO:
		break;
	case SIO_MBOX_OP_CREATE_QP:
		memset(&c, 0, sizeof(c));
		c.s = s;
		c.q = q;
		create_many(m, &c, 1);
		ret = c.ret;
		r = c.r;
		break;
	case SIO_MBOX_OP_DELETE_QP:
		ret = op_delete_qp(m, s, &q, &r);
		break;
	case SIO_MBOX_OP_RESET_QP:
		ret = op_reset_qp(m, s, &q, &r);
		break;
	case SIO_MBOX_OP_IDENTIFY:
		ret = op_identify(m, &q, &r);
		break;
	case SIO_MBOX_OP_GET_LOG:
		ret = op_get_log(m, &q, &r);
		break;
	case SIO_MBOX_OP_GET_FEAT:
		ret = op_get_feat(m, &q, &r);
		break;
	case SIO_MBOX_OP_CMB_ALLOC:
		ret = op_cmb_alloc(m, s, &q, &r);
		break;
	case SIO_MBOX_OP_CMB_FREE:
		ret = op_cmb_free(m, s, &q, &r);
		break;
	case SIO_MBOX_OP_BYE:
		sio_nvme_mgr_release_slot(m, s);
		mlog(m, "client pid %d on node %d left (slot %d)", (int)sl->pid,
		     (int)sl->node, s);
		m->slot_pid[s] = 0;
		if (m->st.clients)
			m->st.clients--;
		break;
	default:
		ret = refuse(m, &r, EINVAL, "unknown request %u", q.op);
		break;
	}
	respond(m, s, q.op, ret, &r);
}
