/* SPDX-License-Identifier: MIT */
/*
 * The NVMe manager: owns the admin queues of a shared controller and serves
 * queue-level requests from clients through a mailbox segment.
 */

#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <unistd.h>
#include <smartio/nvme/manager.h>
#include "mailbox.h"
#include "priv.h"

#define CMB_MAX_ALLOCS	256
#define REAP_EVERY_NS	200000000ull
#define PIDCHECK_EVERY_NS 500000000ull

struct cmb_alloc {
	int slot;		/* -1: unused entry */
	uint64_t off, size;
};

struct sio_nvme_manager {
	struct sio_fabric *f;
	struct sio_device *dev;
	struct sio_device_info dinfo;
	struct sio_nvme_ctrl *ctrl;
	const struct sio_nvme_ctrl_info *ci;
	struct sio_segment *seg;
	struct sio_nvme_mbox *mb;
	int *qowner;		/* per qid: owning slot or -1 */
	int32_t *qpid;		/* per qid: owner's pid when created */
	/* BAR0 confined: per qid, the process last granted its doorbell pages
	 * (0: none). A revoked grant does not undo a mapping, so a qid goes to
	 * another process only once that one is gone. */
	int32_t *dbpid;
	bool confined;
	uint32_t db_stride;
	struct cmb_alloc cmb[CMB_MAX_ALLOCS];
	uint32_t last_doorbell;
	uint64_t last_reap, last_pidcheck;
	FILE *log;
	bool dev_gone;		/* the controller was unregistered */
	struct sio_nvme_manager_stats st;
	int32_t slot_pid[SIO_NVME_MBOX_SLOTS];	/* pid seen on the slot */
};

static void mlog(struct sio_nvme_manager *m, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

static void mlog(struct sio_nvme_manager *m, const char *fmt, ...)
{
	va_list ap;

	if (!m->log)
		return;
	va_start(ap, fmt);
	fprintf(m->log, "nvme-manager: ");
	vfprintf(m->log, fmt, ap);
	fputc('\n', m->log);
	va_end(ap);
	fflush(m->log);
}

struct sio_nvme_ctrl *sio_nvme_manager_ctrl(const struct sio_nvme_manager *m)
{
	return m->ctrl;
}

void sio_nvme_manager_stats(const struct sio_nvme_manager *m,
			    struct sio_nvme_manager_stats *out)
{
	*out = m->st;
}

static void publish(struct sio_nvme_manager *m)
{
	struct sio_nvme_mbox_hdr *h = &m->mb->h;
	int i;

	memset(m->mb, 0, sizeof(*m->mb));
	h->version = SIO_NVME_MBOX_VERSION;
	h->mgr_pid = getpid();
	h->mgr_node = sio_fabric_node_id(m->f);
	h->device = m->dinfo.id;
	h->nslots = SIO_NVME_MBOX_SLOTS;
	sio_nvme_mbox_ctrl_pack(&h->ctrl, m->ci);
	for (i = 0; i < SIO_NVME_MBOX_SLOTS; i++)
		m->mb->slots[i].state = SIO_MBOX_FREE;
	__atomic_store_n(&h->serving, 1, __ATOMIC_RELEASE);
	/* The magic goes last: a client that sees it sees a whole header. */
	__atomic_store_n(&h->magic, SIO_NVME_MBOX_MAGIC, __ATOMIC_RELEASE);
}

/* Confine BAR0 when each queue's doorbells have pages of their own (the
 * rule: manager.h, DOC); with a smaller stride, leave it whole. */
static int confine(struct sio_nvme_manager *m)
{
	int ret;

	m->db_stride = 4u << m->ci->dstrd;
	if (m->db_stride < SIO_NVME_CONFINE_PAGE)
		return 0;
	ret = sio_device_restrict(m->dev, 0, SIO_NVME_CONFINE_PAGE);
	if (ret == -EOPNOTSUPP) {
		mlog(m, "BAR0 cannot be confined on this backend: clients map it whole");
		return 0;
	}
	if (ret)
		return sio_err_wrap(-ret, "cannot confine BAR0 of device %u", m->dinfo.id);
	m->confined = true;
	return 0;
}

int sio_nvme_manager_start(struct sio_fabric *f, uint32_t device,
			   const struct sio_nvme_manager_opts *opts,
			   struct sio_nvme_manager **out)
{
	struct sio_errsave es;
	struct sio_nvme_manager *m;
	void *va;
	uint32_t i;
	int ret;

	if (!f || !out)
		return sio_err_set(EINVAL, "sio_nvme_manager_start: NULL argument");
	m = calloc(1, sizeof(*m));
	if (!m)
		return sio_err_set(ENOMEM, "out of memory");
	m->f = f;
	m->log = opts ? opts->log : NULL;
	for (i = 0; i < CMB_MAX_ALLOCS; i++)
		m->cmb[i].slot = -1;

	ret = sio_nvme_find_device(f, device, &m->dinfo);
	if (ret)
		goto fail;
	ret = sio_device_borrow(f, m->dinfo.id, SIO_BORROW_EXCLUSIVE, &m->dev);
	if (ret) {
		if (ret == -EBUSY)
			ret = sio_err_set(EBUSY, "device %u is already borrowed (%d "
					  "borrower%s): is another manager running?",
					  m->dinfo.id, m->dinfo.borrowers,
					  m->dinfo.borrowers == 1 ? "" : "s");
		else
			ret = sio_err_wrap(-ret, "cannot borrow device %u", m->dinfo.id);
		goto fail;
	}
	ret = sio_nvme_ctrl_open(m->dev, opts ? &opts->ctrl : NULL, &m->ctrl);
	if (ret)
		goto fail;
	m->ci = sio_nvme_ctrl_info(m->ctrl);

	m->qowner = malloc(sizeof(int) * (m->ci->io_queues + 1));
	m->qpid = calloc(m->ci->io_queues + 1, sizeof(int32_t));
	m->dbpid = calloc(m->ci->io_queues + 1, sizeof(int32_t));
	if (!m->qowner || !m->qpid || !m->dbpid) {
		ret = sio_err_set(ENOMEM, "out of memory");
		goto fail;
	}
	for (i = 0; i <= m->ci->io_queues; i++)
		m->qowner[i] = -1;

	ret = sio_segment_create(f, SIO_NVME_MBOX_SEGID(m->dinfo.id), SIO_NVME_MBOX_SIZE,
				 SIO_SEG_F_NOHUGE, &m->seg);
	if (ret == -EEXIST) {
		ret = sio_err_set(EBUSY, "a manager for device %u already serves on "
				  "node %d", m->dinfo.id, sio_fabric_node_id(f));
		goto fail;
	}
	if (ret) {
		ret = sio_err_wrap(-ret, "cannot create the mailbox segment");
		goto fail;
	}
	sio_segment_set_name(m->seg, "nvme-mailbox");
	ret = sio_segment_map(m->seg, &va);
	if (ret) {
		ret = sio_err_wrap(-ret, "cannot map the mailbox segment");
		goto fail;
	}
	m->mb = va;
	/* While the borrow is exclusive, so no one maps BAR0 unconfined. */
	ret = confine(m);
	if (ret)
		goto fail;
	ret = sio_device_downgrade(m->dev);
	if (ret) {
		ret = sio_err_wrap(-ret, "cannot share device %u", m->dinfo.id);
		goto fail;
	}
	publish(m);
	m->last_reap = m->last_pidcheck = sio_nvme_now_ns();
	mlog(m, "device %u (%s, %s) on node %d: %u I/O queue pairs of up to %u "
	     "entries, %u namespace(s), max transfer %u KiB%s%s; mailbox segment 0x%x "
	     "on node %d", m->dinfo.id, m->ci->mn, m->ci->sn, m->dinfo.lender,
	     m->ci->io_queues, m->ci->mqes, m->ci->nn, m->ci->max_xfer / 1024,
	     m->ci->cmb.size ? ", CMB enabled" : "",
	     m->confined ? ", BAR0 confined (each client maps its own doorbell pages)" : "",
	     SIO_NVME_MBOX_SEGID(m->dinfo.id), sio_fabric_node_id(f));
	*out = m;
	return 0;
fail:
	sio_err_save(&es);
	sio_nvme_manager_close(m);
	sio_err_restore(&es);
	return ret;
}

static uint64_t db_offset(const struct sio_nvme_manager *m, uint32_t qid)
{
	return sio_nvme_doorbell_offset((uint16_t)qid, 0, m->ci->dstrd);
}

static bool pid_alive(int32_t pid)
{
	return pid > 0 && (kill(pid, 0) == 0 || errno != ESRCH);
}

/* Withdraw the grant of qid's doorbell pages (its owner keeps them in
 * dbpid until it is gone). */
static void revoke_doorbells(struct sio_nvme_manager *m, uint32_t qid)
{
	int ret;

	if (!m->confined || !m->dbpid[qid])
		return;
	ret = sio_device_revoke(m->dev, m->dbpid[qid], 0, db_offset(m, qid));
	if (ret)
		mlog(m, "cannot revoke the doorbells of queue %u from pid %d: %s", qid,
		     (int)m->dbpid[qid], sio_errmsg());
}

/* Delete what a slot holds: its queues and its CMB ranges. */
static int release_slot(struct sio_nvme_manager *m, int s)
{
	uint32_t q;
	int i, n = 0;

	for (q = 1; q <= m->ci->io_queues; q++) {
		if (m->qowner[q] != s)
			continue;
		sio_nvme_ctrl_delete_qpair(m->ctrl, (uint16_t)q);
		revoke_doorbells(m, q);
		m->qowner[q] = -1;
		m->st.queues--;
		n++;
	}
	for (i = 0; i < CMB_MAX_ALLOCS; i++)
		if (m->cmb[i].slot == s)
			m->cmb[i].slot = -1;
	return n;
}

static void reap_slot(struct sio_nvme_manager *m, int s, const char *why)
{
	struct sio_nvme_mbox_slot *sl = &m->mb->slots[s];
	int32_t pid = sl->pid;
	int n = release_slot(m, s);

	mlog(m, "client pid %d (node %d, slot %d) %s: deleted %d queue pair%s",
	     (int)pid, (int)sl->node, s, why, n, n == 1 ? "" : "s");
	__atomic_store_n(&sl->state, SIO_MBOX_FREE, __ATOMIC_RELEASE);
	sl->node = -1;
	__atomic_store_n(&sl->pid, 0, __ATOMIC_RELEASE);
	m->slot_pid[s] = 0;
	m->st.reaped++;
	if (m->st.clients)
		m->st.clients--;
}

static void reap_pid(struct sio_nvme_manager *m, int node, int32_t pid)
{
	int s;

	if (pid <= 0)
		return;
	for (s = 0; s < SIO_NVME_MBOX_SLOTS; s++)	/* a pid names a process of one node */
		if (__atomic_load_n(&m->mb->slots[s].pid, __ATOMIC_ACQUIRE) == pid &&
		    m->mb->slots[s].node == node)
			reap_slot(m, s, "is gone");
}

/* Clients that died: from fabric events, and (on single-host backends,
 * where pids are meaningful) from a periodic check of the owner's pid,
 * asked of the fabric: a pid names a process of its own kernel only. */
static void check_clients(struct sio_nvme_manager *m, uint64_t now)
{
	struct sio_event ev[32];
	int n, i, s;

	if (now - m->last_reap >= REAP_EVERY_NS) {
		m->last_reap = now;
		sio_fabric_reap(m->f);
	}
	while ((n = sio_event_read(m->f, ev, 32)) > 0) {
		for (i = 0; i < n; i++) {
			if (ev[i].type == SIO_EV_PROCESS_GONE)
				reap_pid(m, ev[i].node, ev[i].pid);
			/* Its BAR may stay mapped and read as alive: trust the event. */
			if (ev[i].type == SIO_EV_DEVICE_GONE &&
			    (uint32_t)ev[i].device == m->dinfo.id)
				m->dev_gone = true;
		}
		if (n < 32)
			break;
	}
	if (now - m->last_pidcheck < PIDCHECK_EVERY_NS)
		return;
	m->last_pidcheck = now;
	for (s = 0; s < SIO_NVME_MBOX_SLOTS; s++) {
		int32_t pid = __atomic_load_n(&m->mb->slots[s].pid, __ATOMIC_ACQUIRE);

		/* its node is written once the slot leaves FREE: judge settled slots only */
		if (pid > 0 && __atomic_load_n(&m->mb->slots[s].state, __ATOMIC_ACQUIRE) != SIO_MBOX_FREE &&
		    !sio_fabric_proc_alive(m->f, m->mb->slots[s].node, pid))
			reap_slot(m, s, "is gone");
	}
}

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
	if (!ret)
		return 0;
	r->status = status;
	snprintf(r->msg, sizeof(r->msg), "%s", sio_errmsg());
	r->err = ret;
	m->st.refused++;
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
	char cause[80] = "", was[sizeof(r->msg) - sizeof(cause)];

	if ((r->status & 0x7ff) != SIO_NVME_MK_STATUS(NVME_SCT_GENERIC,
						      NVME_SC_DATA_XFER_ERROR) &&
	    r->err != -ETIMEDOUT)
		return;
	if (sio_fabric_topology(m->f, &t) || node < 0 || node >= t.nodes)
		return;
	for (a = 0; a < t.adapters && !cause[0]; a++) {
		if (node != lender && sio_link_get(m->f, node, a) == 0)
			snprintf(cause, sizeof(cause), "node %d's link to the lender (adapter "
				 "%d) is down", node, a);
		else if (node != lender && sio_link_get(m->f, lender, a) == 0)
			snprintf(cause, sizeof(cause), "the lender's link (node %d, adapter "
				 "%d) is down", lender, a);
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
		if (!pid_alive(m->dbpid[qid])) {
			m->dbpid[qid] = 0;
			return qid;
		}
		*held = true;
	}
	return 0;
}

/* Let @pid map qid's SQ tail and CQ head doorbell pages, read-write: the
 * range up to the next queue's SQ doorbell, which is qid's alone. */
static int grant_doorbells(struct sio_nvme_manager *m, uint32_t qid, int32_t pid,
			   struct sio_nvme_mbox_resp *r)
{
	int ret;

	if (!m->confined)
		return 0;
	if (m->dbpid[qid] && m->dbpid[qid] != pid)
		revoke_doorbells(m, qid);	/* a dead process's, to be sure */
	ret = sio_device_grant(m->dev, pid, 0, db_offset(m, qid), 2ull * m->db_stride);
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

static int op_create_qp(struct sio_nvme_manager *m, int s, const struct sio_nvme_mbox_req *q,
			struct sio_nvme_mbox_resp *r)
{
	uint32_t qid, page = m->ci->page_size;
	int32_t pid = __atomic_load_n(&m->mb->slots[s].pid, __ATOMIC_ACQUIRE);
	uint16_t st = 0;
	bool held;
	int ret;

	if (q->qsize < 2 || q->qsize > m->ci->mqes)
		return refuse(m, r, EINVAL, "queue size %u out of range 2..%u (CAP.MQES)",
			      q->qsize, m->ci->mqes);
	if (!q->bus1 || !q->bus2 || ((q->bus1 | q->bus2) & (page - 1)))
		return refuse(m, r, EINVAL, "queue addresses must be non-zero and "
			      "%u-byte aligned", page);
	if (q->cdw10 > 3)
		return refuse(m, r, EINVAL, "SQ priority %u out of range 0..3", q->cdw10);
	if (m->confined && pid <= 0)
		return refuse(m, r, EINVAL, "mailbox slot %d names no process", s);
	qid = pick_qid(m, pid, &held);
	if (!qid && held)
		return refuse(m, r, ENOSPC, "no I/O queue pair left: the free ones' "
			      "doorbells were granted to processes still running");
	if (!qid)
		return refuse(m, r, ENOSPC, "no I/O queue pair left: the controller has "
			      "%u and all are taken", m->ci->io_queues);
	ret = sio_nvme_ctrl_create_qpair(m->ctrl, (uint16_t)qid, q->qsize, q->bus1,
					 q->bus2, q->cdw10, &st);
	if (ret)
		return from_ctrl(m, r, ret, st);
	ret = grant_doorbells(m, qid, pid, r);
	if (ret) {
		sio_nvme_ctrl_delete_qpair(m->ctrl, (uint16_t)qid);
		return ret;
	}
	m->qowner[qid] = s;
	m->qpid[qid] = pid;
	m->st.queues++;
	r->qid = (uint16_t)qid;
	return 0;
}

static int op_delete_qp(struct sio_nvme_manager *m, int s, const struct sio_nvme_mbox_req *q,
			struct sio_nvme_mbox_resp *r)
{
	int ret;

	if (q->qid == 0 || q->qid > m->ci->io_queues)
		return refuse(m, r, EINVAL, "queue id %u out of range 1..%u", q->qid,
			      m->ci->io_queues);
	if (m->qowner[q->qid] != s)
		return refuse(m, r, EPERM, "queue %u is not yours", q->qid);
	/* The controller's answer first: revoking may set a message of its own. */
	ret = from_ctrl(m, r, sio_nvme_ctrl_delete_qpair(m->ctrl, q->qid), 0);
	revoke_doorbells(m, q->qid);
	m->qowner[q->qid] = -1;
	m->st.queues--;
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
	ret = sio_nvme_ctrl_get_features(m->ctrl, (uint8_t)q->cdw10, q->cdw11, &res, &st);
	r->result = res;
	return from_ctrl(m, r, ret, st);
}

static int op_cmb_alloc(struct sio_nvme_manager *m, int s, const struct sio_nvme_mbox_req *q,
			struct sio_nvme_mbox_resp *r)
{
	uint64_t size = (q->value + 4095) & ~4095ull, off = 0;
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

static void handle(struct sio_nvme_manager *m, int s)
{
	struct sio_nvme_mbox_slot *sl = &m->mb->slots[s];
	struct sio_nvme_mbox_req q;
	struct sio_nvme_mbox_resp r;
	int ret = 0;

	/* Work on a copy: the client's memory could change under us. */
	memcpy(&q, (const void *)&sl->req, sizeof(q));
	memset(&r, 0, sizeof(r));
	if (m->slot_pid[s] != sl->pid) {
		m->slot_pid[s] = sl->pid;
		m->st.clients++;
		mlog(m, "client pid %d on node %d connected (slot %d)", (int)sl->pid,
		     (int)sl->node, s);
	}
	switch (q.op) {
	case SIO_MBOX_OP_HELLO:
		break;
	case SIO_MBOX_OP_CREATE_QP:
		ret = op_create_qp(m, s, &q, &r);
		break;
	case SIO_MBOX_OP_DELETE_QP:
		ret = op_delete_qp(m, s, &q, &r);
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
		release_slot(m, s);
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
	if (ret) {
		name_cause(m, s, &r);
		mlog(m, "refused request %u from pid %d: %s", q.op, (int)sl->pid, r.msg);
	}
	m->st.requests++;
	memcpy((void *)&sl->resp, &r, sizeof(r));
	__atomic_store_n(&sl->state, SIO_MBOX_RESP, __ATOMIC_RELEASE);
	sio_segment_notify(m->seg, sio_nvme_mbox_slot_off(s, offsetof(struct sio_nvme_mbox_slot, state)));
}

int sio_nvme_manager_serve(struct sio_nvme_manager *m, uint32_t timeout_ms)
{
	struct sio_nvme_mbox_hdr *h = &m->mb->h;
	uint32_t db;
	int s, n = 0, ret;
	uint32_t exp;

	db = __atomic_load_n(&h->doorbell, __ATOMIC_ACQUIRE);
	if (db == m->last_doorbell)
		sio_segment_wait(m->seg, offsetof(struct sio_nvme_mbox_hdr, doorbell), db,
				 (uint64_t)timeout_ms * 1000000ull);
	m->last_doorbell = __atomic_load_n(&h->doorbell, __ATOMIC_ACQUIRE);
	__atomic_fetch_add(&h->heartbeat, 1, __ATOMIC_RELAXED);

	/* Scan every slot: a bump may cover several requests. */
	for (s = 0; s < SIO_NVME_MBOX_SLOTS; s++) {
		exp = SIO_MBOX_REQ;
		if (!__atomic_compare_exchange_n(&m->mb->slots[s].state, &exp, SIO_MBOX_BUSY,
						 false, __ATOMIC_ACQ_REL, __ATOMIC_RELAXED))
			continue;
		handle(m, s);
		n++;
	}
	check_clients(m, sio_nvme_now_ns());
	if (m->dev_gone) {
		__atomic_store_n(&h->serving, 0, __ATOMIC_RELEASE);
		return sio_err_set(ENODEV, "device %u is gone (its lender left the fabric)",
				   m->dinfo.id);
	}
	ret = sio_nvme_ctrl_check(m->ctrl);
	if (ret)
		return ret;
	return n;
}

int sio_nvme_manager_run(struct sio_nvme_manager *m, volatile sig_atomic_t *stop)
{
	int ret;

	while (!*stop) {
		ret = sio_nvme_manager_serve(m, 100);
		if (ret < 0)
			return ret;
		/* a destroyed fabric is no one's: the clients are told to leave too */
		if ((ret = sio_fabric_alive(m->f)))
			return ret;
	}
	return 0;
}

void sio_nvme_manager_close(struct sio_nvme_manager *m)
{
	int s;

	if (!m)
		return;
	if (m->dev_gone && m->ctrl)
		sio_nvme_ctrl_gone(m->ctrl);
	if (m->mb) {
		__atomic_store_n(&m->mb->h.serving, 0, __ATOMIC_RELEASE);
		if (m->ctrl)
			for (s = 0; s < SIO_NVME_MBOX_SLOTS; s++)
				release_slot(m, s);
		/* Wake clients sleeping on their slots so they see serving = 0. */
		for (s = 0; s < SIO_NVME_MBOX_SLOTS; s++)
			if (m->mb->slots[s].pid)
				sio_segment_notify(m->seg, sio_nvme_mbox_slot_off(s, 0));
	}
	if (m->seg)
		sio_segment_close(m->seg);
	sio_nvme_ctrl_close(m->ctrl);
	sio_device_close(m->dev);
	free(m->qowner);
	free(m->qpid);
	free(m->dbpid);
	free(m);
}
