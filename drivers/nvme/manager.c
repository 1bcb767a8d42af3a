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
#include "mgr-priv.h"

/* Answer slot @s's request, if any, with "ask again" (@why). */
void sio_nvme_mgr_retry(struct sio_nvme_manager *m, int s, const char *why)
{
	struct sio_nvme_mbox_slot *sl = &m->mb->slots[s];
	struct sio_nvme_mbox_resp r;

	memset(&r, 0, sizeof(r));
	r.err = -EAGAIN;
	r.flags = SIO_MBOX_RESP_RETRY;
	snprintf(r.msg, sizeof(r.msg), "%s", why);
	memcpy((void *)&sl->resp, &r, sizeof(r));
	__atomic_store_n(&sl->state, SIO_MBOX_RESP, __ATOMIC_RELEASE);
	sio_segment_notify(m->seg, sio_nvme_mbox_slot_off(s, 0));
}

void sio_nvme_mgr_log(struct sio_nvme_manager *m, const char *fmt, ...)
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

int sio_nvme_manager_stats(const struct sio_nvme_manager *m,
			   struct sio_nvme_manager_stats *out)
{
	if (!m || !out)
		return sio_err_set(EINVAL, "sio_nvme_manager_stats: NULL argument");
	*out = m->st;
	return 0;
}

/* What a reset took: every queue pair, each kept for its owner to create
 * again with the same id (and doorbell pages); none beyond the controller's
 * new count. */
void sio_nvme_mgr_queues_gone(struct sio_nvme_manager *m)
{
	for (uint32_t q = 1; q <= STATE_QIDS; q++) {
		uint8_t p = m->state->pend[q];

		/* one half made or deleted when a manager died was no one's yet */
		if (m->qowner[q] >= 0 && (q > m->ci->io_queues || p == PEND_CREATE ||
					  p == PEND_DELETE))
			m->qowner[q] = -1;
		m->state->pend[q] = m->qowner[q] >= 0 ? PEND_GONE : PEND_NONE;
	}
	m->state->io_queues = m->ci->io_queues;
	m->st.queues = 0;
}

/* Confine BAR0 when each queue's doorbells have pages of their own (the
 * rule: manager.h, DOC); with a smaller stride, leave it whole. */
static int confine(struct sio_nvme_manager *m)
{
	int ret;

	if (m->ci->db_stride < SIO_NVME_CONFINE_PAGE)
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

/* The mailbox and the state: kept segments on the lender's node, adopted
 * when a crashed manager left them. */
static int open_kept(struct sio_nvme_manager *m)
{
	void *va;
	int ret;

	ret = sio_nvme_kept_segment(m->f, m->dinfo.lender, SIO_NVME_MBOX_SEGID(m->dinfo.id),
				    SIO_NVME_MBOX_SIZE, false, "nvme-mailbox", &m->seg, &va);
	if (ret)
		return ret == -EBUSY ? sio_err_set(EBUSY, "a manager for device %u already "
						   "serves: %s (smartio status names its pid as the "
						   "segment's owner); nvme-manager --standby takes "
						   "over when it stops", m->dinfo.id, sio_errmsg()) : ret;
	m->mb = va;
	ret = sio_nvme_kept_segment(m->f, m->dinfo.lender, SIO_NVME_STATE_SEGID(m->dinfo.id),
				    sizeof(struct mgr_state), false, "nvme-manager-state",
				    &m->state_seg, &va);
	if (ret)
		return ret;
	m->state = va;
	/* what a predecessor left counted goes on (mbox.c keeps the header) */
	m->resets = m->mb->h.resets;
	m->epoch = m->mb->h.epoch;
	m->qowner = m->state->qowner;
	m->qpid = m->state->qpid;
	m->dbpid = m->state->dbpid;
	m->cmb = m->state->cmb;
	return 0;
}

/* Whether a crashed manager of this device left state to go on from. */
static bool kept_state(const struct sio_nvme_manager *m)
{
	return __atomic_load_n(&m->state->magic, __ATOMIC_ACQUIRE) == STATE_MAGIC &&
	       m->state->device == m->dinfo.id && m->state->io_queues <= STATE_QIDS &&
	       __atomic_load_n(&m->mb->h.magic, __ATOMIC_ACQUIRE) == SIO_NVME_MBOX_MAGIC &&
	       m->mb->h.device == m->dinfo.id;
}

/* No queue pair exists: fresh tables. The doorbell grants stay with a
 * reset under running clients, who may still have the pages mapped. */
static void state_reset(struct sio_nvme_manager *m, bool keep_grants)
{
	uint32_t i;

	m->state->magic = 0;
	__atomic_thread_fence(__ATOMIC_RELEASE);
	if (!keep_grants)
		memset(m->dbpid, 0, sizeof(m->state->dbpid));
	memset(m->state->pend, PEND_NONE, sizeof(m->state->pend));
	for (i = 0; i <= STATE_QIDS; i++)
		m->qowner[i] = -1;
	for (i = 0; i < CMB_MAX_ALLOCS; i++)
		m->cmb[i].slot = -1;
	m->state->device = m->dinfo.id;
	m->state->io_queues = m->ci->io_queues;
	__atomic_store_n(&m->state->magic, STATE_MAGIC, __ATOMIC_RELEASE);
}

/* Whether slot @s looks like a client's: a state in range, a pid, and a
 * node of the fabric (whether that process lives is another question). */
bool sio_nvme_mgr_slot_plausible(const struct sio_nvme_manager *m, int s)
{
	const struct sio_nvme_mbox_slot *sl = &m->mb->slots[s];
	uint32_t st = __atomic_load_n(&sl->state, __ATOMIC_ACQUIRE);

	return st > SIO_MBOX_FREE && st <= SIO_MBOX_RESP &&
	       __atomic_load_n(&sl->pid, __ATOMIC_ACQUIRE) > 0 && sl->node >= 0 &&
	       sl->node < m->nodes;
}


/*
 * Go on where a crashed manager stopped: settle the queue pair it was
 * creating or deleting, answer the requests it had taken with "ask again",
 * grant the live clients their doorbell pages anew (its grants died with
 * its borrow), and look for clients that died meanwhile at once.
 */
static void take_over(struct sio_nvme_manager *m)
{
	struct sio_nvme_mbox_resp r;
	uint32_t qid;
	int s;

	for (qid = 1; qid <= m->ci->io_queues; qid++) {
		if (!m->state->pend[qid] || m->state->pend[qid] == PEND_GONE)
			continue;
		sio_nvme_ctrl_delete_qpair(m->ctrl, (uint16_t)qid);
		m->qowner[qid] = -1;
		mlog(m, "queue pair %u was being %s when the manager died: deleted", qid,
		     m->state->pend[qid] == PEND_CREATE ? "created" : "deleted");
		m->state->pend[qid] = PEND_NONE;
	}
	for (qid = 1; qid <= m->ci->io_queues; qid++) {
		if (m->qowner[qid] < 0)
			continue;
		if (m->qowner[qid] >= SIO_NVME_MBOX_SLOTS) {
			m->qowner[qid] = -1;	/* not a slot: nobody's */
			m->state->pend[qid] = PEND_NONE;
			continue;
		}
		if (m->state->pend[qid] != PEND_GONE)
			m->st.queues++;
		memset(&r, 0, sizeof(r));
		if (m->confined && m->dbpid[qid] && sio_nvme_mgr_grant_doorbells(m, qid, m->dbpid[qid], &r))
			mlog(m, "%s", r.msg);
	}
	for (s = 0; s < SIO_NVME_MBOX_SLOTS; s++) {
		struct sio_nvme_mbox_slot *sl = &m->mb->slots[s];

		/* the predecessor's clients, as far as their slots look like ones;
		 * whether they live is asked at once (sio_nvme_mgr_check_clients()) */
		if (!sio_nvme_mgr_slot_plausible(m, s))
			continue;
		m->slot_pid[s] = __atomic_load_n(&sl->pid, __ATOMIC_ACQUIRE);
		m->slot_node[s] = sl->node;
		m->st.clients++;
		if (__atomic_load_n(&sl->state, __ATOMIC_ACQUIRE) == SIO_MBOX_BUSY)
			sio_nvme_mgr_retry(m, s, "manager restarting: the request was cut "
					   "short, ask again");
	}
	m->last_pidcheck = 0;
}

/*
 * Starting a manager, in steps: borrow the controller (exclusively, or
 * shared when a crashed manager's clients hold it), open the kept
 * segments, bring the controller up (adopted as it runs, or reset), then
 * go live: tables, BAR0 confined, the mailbox published, events armed.
 */

/* Whether the fabric and the device are still there: 0, or -ENODEV (the
 * device left; its model may have cleared its registers as it did) or
 * the fabric's error. */
int sio_nvme_mgr_still_there(struct sio_nvme_manager *m)
{
	struct sio_device_info di;
	int ret = sio_fabric_alive(m->f);

	if (ret)
		return ret;
	if (sio_device_info(m->dev, &di) == -ENODEV) {
		m->dev_gone = true;
		return sio_err_set(ENODEV, "device %u is gone: its lender, node %d, has left "
				   "the fabric", m->dinfo.id, m->dinfo.lender);
	}
	return 0;
}

/* The controller driver waits (admin commands, CSTS.RDY): we still live. */
static int mgr_tick(void *arg)
{
	struct sio_nvme_manager *m = arg;
	uint64_t now = sio__now_ns();

	__atomic_fetch_add(&m->mb->h.heartbeat, 1, __ATOMIC_RELAXED);
	/* no waiting out CAP.TO for a device that left, or a fabric destroyed */
	if (now - m->last_look < 100000000ull)
		return 0;
	m->last_look = now;
	return sio_nvme_mgr_still_there(m);
}

static struct sio_nvme_manager *mgr_new(struct sio_fabric *f,
					const struct sio_nvme_manager_opts *opts)
{
	struct sio_nvme_manager *m = calloc(1, sizeof(*m));

	if (!m)
		return NULL;
	m->f = f;
	m->log = opts ? opts->log : NULL;
	m->co = (struct sio_nvme_ctrl_opts){ .arbitration = NVME_CC_AMS_RR, .enable_cmb = true };
	if (opts)
		m->co = opts->ctrl;
	if (!m->co.io_queues || m->co.io_queues > STATE_QIDS)
		m->co.io_queues = STATE_QIDS;
	return m;
}

/* Exclusive, or shared (@shared) when running clients hold the device:
 * then a crashed manager must have left state to take over. */
static int mgr_borrow(struct sio_nvme_manager *m, uint32_t device, bool *shared)
{
	struct sio_topology t;
	int ret;

	ret = sio_nvme_find_device(m->f, device, &m->dinfo);
	if (!ret)
		ret = sio_fabric_topology(m->f, &t);
	if (ret)
		return ret;
	m->nodes = t.nodes;
	/* A crashed manager's borrow goes now, and its kept segments wait. */
	sio_fabric_reap(m->f);
	*shared = false;
	ret = sio_device_borrow(m->f, m->dinfo.id, SIO_BORROW_EXCLUSIVE, &m->dev);
	if (ret == -EBUSY) {
		*shared = true;
		ret = sio_device_borrow(m->f, m->dinfo.id, SIO_BORROW_SHARED, &m->dev);
	}
	if (ret)
		return sio_err_wrap(-ret, "cannot borrow device %u", m->dinfo.id);
	ret = open_kept(m);
	if (ret)
		return ret;
	if (*shared && !kept_state(m))
		return sio_err_set(EBUSY, "device %u is already borrowed (%d borrower%s) and "
				   "no crashed manager left state to take over: is another "
				   "manager running?", m->dinfo.id, m->dinfo.borrowers,
				   m->dinfo.borrowers == 1 ? "" : "s");
	return 0;
}

/* The controller: adopted as it runs (@shared), or reset (and then, under
 * running clients, they are told: their queues are gone). */
static int mgr_ctrl_up(struct sio_nvme_manager *m, bool shared)
{
	uint32_t adm = SIO_NVME_ADM_SEGID(m->dinfo.id);
	struct sio_nvme_ctrl_info was;
	int ret;

	if (!shared)
		return sio_nvme_ctrl_open_kept(m->dev, &m->co, adm, NULL, &m->ctrl);
	sio_nvme_mbox_ctrl_unpack(&was, &m->mb->h.ctrl);
	ret = sio_nvme_ctrl_open_kept(m->dev, &m->co, adm, &was, &m->ctrl);
	if (!ret) {
		m->adopted = true;
		return 0;
	}
	if (ret != -ESTALE && ret != -EIO)
		return ret;
	mlog(m, "%s: resetting device %u; its %d client(s) create their queue pairs again",
	     sio_errmsg(), m->dinfo.id, m->dinfo.borrowers);
	sio_nvme_mbox_reset_mark(m, true);
	return sio_nvme_ctrl_open_kept(m->dev, &m->co, adm, NULL, &m->ctrl);
}

/* Tables, confinement, sharing, the take-over, the mailbox, events. */
static int mgr_go_live(struct sio_nvme_manager *m, bool shared)
{
	int ret;

	m->ci = sio_nvme_ctrl_ci(m->ctrl);
	sio_nvme_ctrl_set_tick(m->ctrl, mgr_tick, m);
	if (!m->adopted && shared)
		sio_nvme_mgr_queues_gone(m);	/* reset under running clients */
	else if (!m->adopted)
		state_reset(m, false);
	/* Exclusive, so no one maps BAR0 unconfined; on a take-over, at once. */
	ret = confine(m);
	if (ret)
		return ret;
	if (!shared && (ret = sio_device_downgrade(m->dev)))
		return sio_err_wrap(-ret, "cannot share device %u", m->dinfo.id);
	if (shared)
		take_over(m);
	sio_nvme_mbox_publish(m, shared);
	if (sio_nvme_aer_start(m->ctrl))
		mlog(m, "asynchronous events not served: %s", sio_errmsg());
	m->last_reap = sio__now_ns();
	if (!m->adopted)
		m->last_pidcheck = m->last_reap;
	return 0;
}

static void mgr_log_serving(struct sio_nvme_manager *m)
{
	if (m->adopted)
		mlog(m, "took over device %u (%s, %s) without a reset: %u client(s), %u "
		     "queue pair(s) in use", m->dinfo.id, m->ci->mn, m->ci->sn,
		     m->st.clients, m->st.queues);
	mlog(m, "device %u (%s, %s) on node %d: %u I/O queue pairs of up to %u "
	     "entries, %u namespace(s), max transfer %u KiB%s%s; mailbox segment 0x%x "
	     "on node %d", m->dinfo.id, m->ci->mn, m->ci->sn, m->dinfo.lender,
	     m->ci->io_queues, m->ci->mqes, m->ci->nn, m->ci->max_xfer / 1024,
	     m->ci->cmb.size ? ", CMB enabled" : "",
	     m->confined ? ", BAR0 confined (each client maps its own doorbell pages)" : "",
	     SIO_NVME_MBOX_SEGID(m->dinfo.id), m->dinfo.lender);
}

int sio_nvme_manager_start(struct sio_fabric *f, uint32_t device,
			   const struct sio_nvme_manager_opts *opts,
			   struct sio_nvme_manager **out)
{
	struct sio_nvme_manager *m;
	struct sio_errsave es;
	bool shared = false;
	int ret;

	if (!f || !out)
		return sio_err_set(EINVAL, "sio_nvme_manager_start: NULL argument");
	m = mgr_new(f, opts);
	if (!m)
		return sio_err_set(ENOMEM, "out of memory");
	ret = mgr_borrow(m, device, &shared);
	if (!ret)
		ret = mgr_ctrl_up(m, shared);
	if (!ret)
		ret = mgr_go_live(m, shared);
	if (ret) {
		sio_err_save(&es);
		sio_nvme_manager_close(m);
		sio_err_restore(&es);
		return ret;
	}
	mgr_log_serving(m);
	*out = m;
	return 0;
}

uint64_t sio_nvme_mgr_db_offset(const struct sio_nvme_manager *m, uint32_t qid)
{
	return sio_nvme_doorbell_offset((uint16_t)qid, 0, m->ci->db_stride);
}

bool sio_nvme_mgr_pid_alive(int32_t pid)
{
	return pid > 0 && (kill(pid, 0) == 0 || errno != ESRCH);
}

/* Withdraw the grant of qid's doorbell pages (its owner keeps them in
 * dbpid until it is gone). */
void sio_nvme_mgr_revoke_doorbells(struct sio_nvme_manager *m, uint32_t qid)
{
	int ret;

	if (!m->confined || !m->dbpid[qid])
		return;
	ret = sio_device_revoke(m->dev, m->dbpid[qid], 0, sio_nvme_mgr_db_offset(m, qid));
	if (ret)
		mlog(m, "cannot revoke the doorbells of queue %u from pid %d: %s", qid,
		     (int)m->dbpid[qid], sio_errmsg());
}

/* Delete queue pair @q in the controller (unless a reset took it) and
 * take it from its owner. Return: the controller's answer (its message
 * set, not a revocation's). */
int sio_nvme_mgr_qpair_drop(struct sio_nvme_manager *m, uint32_t q)
{
	bool gone = m->state->pend[q] == PEND_GONE;
	struct sio_errsave es;
	int ret = 0;

	m->state->pend[q] = PEND_DELETE;
	if (!gone)
		ret = sio_nvme_ctrl_delete_qpair(m->ctrl, (uint16_t)q);
	sio_err_save(&es);
	sio_nvme_mgr_revoke_doorbells(m, q);
	sio_err_restore(&es);
	m->qowner[q] = -1;
	m->state->pend[q] = PEND_NONE;
	if (!gone && m->st.queues)
		m->st.queues--;
	return ret;
}

/* Delete what a slot holds: its queues and its CMB ranges. */
int sio_nvme_mgr_release_slot(struct sio_nvme_manager *m, int s)
{
	uint32_t q;
	int i, n = 0;

	for (q = 1; q <= m->ci->io_queues; q++) {
		if (m->qowner[q] != s)
			continue;
		sio_nvme_mgr_qpair_drop(m, q);
		n++;
	}
	for (i = 0; i < CMB_MAX_ALLOCS; i++)
		if (m->cmb[i].slot == s)
			m->cmb[i].slot = -1;
	return n;
}

/* Slot @s back to free. */
static void slot_free(struct sio_nvme_manager *m, int s)
{
	struct sio_nvme_mbox_slot *sl = &m->mb->slots[s];

	__atomic_store_n(&sl->state, SIO_MBOX_FREE, __ATOMIC_RELEASE);
	sl->node = -1;
	__atomic_store_n(&sl->pid, 0, __ATOMIC_RELEASE);
	m->slot_pid[s] = 0;
}

/* A client gone: what it held deleted, its slot free. Its pid and node as
 * the manager saw them, not as the slot (shared memory) says now. */
static void reap_slot(struct sio_nvme_manager *m, int s, const char *why)
{
	int n = sio_nvme_mgr_release_slot(m, s);

	mlog(m, "client pid %d (node %d, slot %d) %s: deleted %d queue pair%s",
	     (int)m->slot_pid[s], (int)m->slot_node[s], s, why, n, n == 1 ? "" : "s");
	slot_free(m, s);
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
		if (m->slot_pid[s] == pid && m->slot_node[s] == node)
			reap_slot(m, s, "is gone");
}

/*
 * Slots no client made a request from, judged now and then: one holding
 * what no client writes (a state out of range; claimed, with no pid or a
 * node that does not exist) or naming no process of the fabric is freed,
 * said once per look. A claim in progress (FREE, its pid set) is left be.
 */
static void check_strangers(struct sio_nvme_manager *m)
{
	int freed = 0, s;

	for (s = 0; s < SIO_NVME_MBOX_SLOTS; s++) {
		struct sio_nvme_mbox_slot *sl = &m->mb->slots[s];
		uint32_t st = __atomic_load_n(&sl->state, __ATOMIC_ACQUIRE);

		if (m->slot_pid[s] || st == SIO_MBOX_FREE)
			continue;
		if (!sio_nvme_mgr_slot_plausible(m, s) ||
		    !sio_fabric_proc_alive(m->f, sl->node, __atomic_load_n(&sl->pid,
									   __ATOMIC_ACQUIRE))) {
			slot_free(m, s);
			freed++;
		}
	}
	if (freed)
		mlog(m, "%d mailbox slot(s) named no client of the fabric (written over, or "
		     "left by one that died before asking anything): freed", freed);
}

/* Clients that died: from fabric events, and (on single-host backends,
 * where pids are meaningful) from a periodic check of the owner's pid,
 * asked of the fabric: a pid names a process of its own kernel only. */
void sio_nvme_mgr_check_clients(struct sio_nvme_manager *m, uint64_t now)
{
	struct sio_device_info di;
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
	/* An event can be dropped (a full socket): the fabric is asked too. */
	if (!m->dev_gone && sio_device_info(m->dev, &di) == -ENODEV)
		m->dev_gone = true;
	for (s = 0; s < SIO_NVME_MBOX_SLOTS; s++)	/* the clients we know */
		if (m->slot_pid[s] > 0 &&
		    !sio_fabric_proc_alive(m->f, m->slot_node[s], m->slot_pid[s]))
			reap_slot(m, s, "is gone");
	check_strangers(m);
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
	/* The admin queue timed out: the controller is reset before the next
	 * request (sio_nvme_mgr_check_ctrl()), which the client makes again. */
	if (ret == -ETIMEDOUT && sio_nvme_ctrl_health(m->ctrl) == -ETIMEDOUT) {
		snprintf(r->msg, sizeof(r->msg), "the controller timed out and is being "
			 "reset: ask again");
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

	if (qid > m->ci->io_queues || m->qowner[qid] != c->s)
		c->ret = refuse(m, &c->r, EPERM, "queue %u is not yours to create again", qid);
	else if (m->state->pend[qid] != PEND_GONE)
		c->ret = refuse(m, &c->r, EBUSY, "queue %u exists: only one a reset took is "
				"created again", qid);
	if (c->ret)
		return true;
	c->qid = qid;
	c->again = true;
	m->state->pend[qid] = PEND_CREATE;
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
	sio_nvme_cmd_create_cq(cmd, (uint16_t)c->qid, c->q.qsize, c->q.bus2, SIO_NVME_Q_PC, 0);
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
	m->state->pend[q->qid] = PEND_DELETE;
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
	ret = sio_nvme_ctrl_get_features(m->ctrl, (uint8_t)q->cdw10, q->cdw11, &res, &st);
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

/* Sleep @ms, the heartbeat going on (clients see a manager at work). */
static void pause_beating(struct sio_nvme_manager *m, uint32_t ms)
{
	for (uint32_t i = 0; i < ms / 50; i++) {
		__atomic_fetch_add(&m->mb->h.heartbeat, 1, __ATOMIC_RELAXED);
		usleep(50000);
	}
}

/*
 * Reset the controller in place, as Linux's nvme_reset_work(): the admin
 * queue anew, the same CMB and shadow doorbells. Every queue pair is gone;
 * the clients learn it from the mailbox's reset count and create theirs
 * again (recover.c), sending again what was in flight. A controller that
 * does not come back within SIO_NVME_RESET_TRIES tries is given up.
 */
static int reset_ctrl(struct sio_nvme_manager *m, const char *why)
{
	int ret, tries;

	mlog(m, "%s: resetting device %u; its %u client(s) create their queue pairs again",
	     why, m->dinfo.id, m->st.clients);
	sio_nvme_mbox_reset_mark(m, true);
	for (tries = 1;; tries++) {
		ret = sio_nvme_ctrl_reset(m->ctrl);
		if (!ret || ret == -ENODEV || tries == SIO_NVME_RESET_TRIES ||
		    (ret = sio_nvme_mgr_still_there(m)))
			break;
		mlog(m, "reset %d of %d failed: %s; trying again in %d s", tries,
		     SIO_NVME_RESET_TRIES, sio_errmsg(), tries);
		pause_beating(m, 1000u * (uint32_t)tries);
	}
	if (ret)
		return sio_err_wrap(ret == -ENODEV ? ENODEV : EIO, "device %u did not come back "
				    "after %d reset%s; restart the controller (its device model, "
				    "or its host's device) and nvme-manager serves it again",
				    m->dinfo.id, tries, tries == 1 ? "" : "s");
	m->ci = sio_nvme_ctrl_ci(m->ctrl);
	sio_nvme_mgr_queues_gone(m);
	sio_nvme_mbox_ctrl_changed(m);
	if (sio_nvme_aer_start(m->ctrl))	/* the reset dropped the event requests */
		mlog(m, "asynchronous events not served: %s", sio_errmsg());
	m->st.resets++;
	sio_nvme_mbox_reset_mark(m, false);
	mlog(m, "device %u is ready again after the reset%s", m->dinfo.id,
	     tries > 1 ? " (more than one try)" : "");
	return 0;
}

/* After the requests: reset a controller that failed, timed out or was
 * disabled behind our back. Return: 0, or -errno when it is gone or does
 * not come back. */
int sio_nvme_mgr_check_ctrl(struct sio_nvme_manager *m)
{
	int ret = sio_nvme_ctrl_health(m->ctrl);
	char why[200];

	if (!ret || ret == -ENODEV)
		return ret;
	/* a model that left, or a fabric destroyed, reads as disabled too */
	if ((ret = sio_nvme_mgr_still_there(m)))
		return ret;
	snprintf(why, sizeof(why), "%s", ret == -EIO ? "controller fatal status (CSTS.CFS)" :
		 sio_errmsg());
	return reset_ctrl(m, why);
}

int sio_nvme_manager_serve(struct sio_nvme_manager *m, uint32_t timeout_ms)
{
	struct sio_nvme_mbox_hdr *h = &m->mb->h;
	struct creating cr[CREATE_BATCH];
	struct sio_nvme_mbox_req q;
	uint32_t db;
	int s, n = 0, ncr = 0, ret;
	uint32_t exp;

	db = __atomic_load_n(&h->doorbell, __ATOMIC_ACQUIRE);
	if (db == m->last_doorbell)
		sio_segment_wait(m->seg, offsetof(struct sio_nvme_mbox_hdr, doorbell), db,
				 (uint64_t)timeout_ms * 1000000ull);
	m->last_doorbell = __atomic_load_n(&h->doorbell, __ATOMIC_ACQUIRE);
	__atomic_fetch_add(&h->heartbeat, 1, __ATOMIC_RELAXED);
	sio_nvme_mbox_check(m, sio__now_ns());	/* what others wrote over, back */

	/* Scan every slot: a bump may cover several requests. Queue pairs to
	 * create are gathered and created together (create_many()). */
	for (s = 0; s < SIO_NVME_MBOX_SLOTS; s++) {
		exp = SIO_MBOX_REQ;
		if (!__atomic_compare_exchange_n(&m->mb->slots[s].state, &exp, SIO_MBOX_BUSY,
						 false, __ATOMIC_ACQ_REL, __ATOMIC_RELAXED))
			continue;
		/* Work on a copy: the client's memory could change under us. */
		memcpy(&q, (const void *)&m->mb->slots[s].req, sizeof(q));
		n++;
		if (!sio_nvme_mgr_note_client(m, s, q.op))
			continue;
		if (q.op != SIO_MBOX_OP_CREATE_QP) {
			sio_nvme_mgr_handle(m, s, &q);
			continue;
		}
		memset(&cr[ncr], 0, sizeof(cr[ncr]));
		cr[ncr].s = s;
		cr[ncr++].q = q;
		if (ncr == CREATE_BATCH) {
			sio_nvme_mgr_create_and_respond(m, cr, ncr);
			ncr = 0;
		}
	}
	if (ncr)
		sio_nvme_mgr_create_and_respond(m, cr, ncr);
	if (sio_nvme_aer_service(m->ctrl, m->dev, &m->events) < 0)
		mlog(m, "asynchronous event: %s", sio_errmsg());
	sio_nvme_mbox_events(m);
	sio_nvme_mgr_check_clients(m, sio__now_ns());
	if (m->dev_gone) {
		__atomic_store_n(&h->serving, 0, __ATOMIC_RELEASE);
		return sio_err_set(ENODEV, "device %u is gone: its lender, node %d, has left "
				   "the fabric", m->dinfo.id, m->dinfo.lender);
	}
	ret = sio_nvme_mgr_check_ctrl(m);
	return ret ? ret : n;
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

/* Clients with a slot, whose queue pairs run on without us. */
static uint32_t clients_running(const struct sio_nvme_manager *m)
{
	uint32_t n = 0;

	for (int s = 0; s < SIO_NVME_MBOX_SLOTS; s++)
		n += __atomic_load_n(&m->mb->slots[s].pid, __ATOMIC_ACQUIRE) > 0 &&
		     __atomic_load_n(&m->mb->slots[s].state, __ATOMIC_ACQUIRE) != SIO_MBOX_FREE;
	return n;
}

/*
 * Stop with clients running: their queue pairs and the controller go on
 * (the data path needs no manager), and the kept state stays whole for a
 * successor, a --standby or the next manager started, which takes it over
 * as after a crash. The mailbox says so: clients' requests wait for it
 * ($SMARTIO_NVME_RESTART_MS), and their I/O does not stop.
 */
static void leave(struct sio_nvme_manager *m, uint32_t clients)
{
	if (m->published) {
		mlog(m, "stopping with %u client(s) running: their queue pairs go on, and the "
		     "next manager of device %u (--standby, or one started later) takes them "
		     "over", clients, m->dinfo.id);
		__atomic_store_n(&m->mb->h.left, 1, __ATOMIC_RELEASE);
		__atomic_store_n(&m->mb->h.serving, 0, __ATOMIC_RELEASE);
		for (int s = 0; s < SIO_NVME_MBOX_SLOTS; s++)	/* waiters see it at once */
			if (m->mb->slots[s].pid)
				sio_segment_notify(m->seg, sio_nvme_mbox_slot_off(s, 0));
	}
	sio_nvme_ctrl_leave(m->ctrl);
	sio_segment_leave(m->state_seg);
	sio_segment_leave(m->seg);
	sio_device_close(m->dev);
	free(m);
}

void sio_nvme_manager_close(struct sio_nvme_manager *m)
{
	uint32_t clients;
	int s;

	if (!m)
		return;
	if (m->dev_gone && m->ctrl)
		sio_nvme_ctrl_gone(m->ctrl);
	/* a take-over that failed leaves what it found, too */
	if (m->mb && m->state && !m->dev_gone && (clients = clients_running(m))) {
		leave(m, clients);
		return;
	}
	if (m->mb && m->published) {
		__atomic_store_n(&m->mb->h.serving, 0, __ATOMIC_RELEASE);
		if (m->ctrl)
			for (s = 0; s < SIO_NVME_MBOX_SLOTS; s++)
				sio_nvme_mgr_release_slot(m, s);
		/* Wake clients sleeping on their slots so they see serving = 0. */
		for (s = 0; s < SIO_NVME_MBOX_SLOTS; s++)
			if (m->mb->slots[s].pid)
				sio_segment_notify(m->seg, sio_nvme_mbox_slot_off(s, 0));
	}
	/* A clean stop removes the kept state: a successor starts afresh. */
	if (m->state_seg)
		sio_segment_close(m->state_seg);
	if (m->seg)
		sio_segment_close(m->seg);
	sio_nvme_ctrl_close(m->ctrl);
	sio_device_close(m->dev);
	free(m);
}
