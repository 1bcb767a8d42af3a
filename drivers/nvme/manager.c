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
		uint8_t p = m->state->pend[qid];

		if (p == PEND_NONE || p == PEND_GONE)
			continue;
		sio_nvme_ctrl_delete_qpair(m->ctrl, (uint16_t)qid);
		mlog(m, "queue pair %u was being %s when the manager died: deleted%s", qid,
		     p == PEND_CREATE ? "created" : p == PEND_DELETE ? "deleted" : "made again",
		     p == PEND_REDO ? ", kept for its owner to create again" : "");
		if (p != PEND_REDO)
			m->qowner[qid] = -1;
		m->state->pend[qid] = p == PEND_REDO ? PEND_GONE : PEND_NONE;
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
	int ret = sio_fabric_alive(m->f);

	if (ret)
		return ret;
	if (m->dev_gone || sio_nvme_mgr_dev_missing(m, sio__now_ns())) {
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

/* Exclusive, or shared (@shared) when running clients hold the device and
 * a manager that stopped left state to take over. */
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
	/* No manager serves (the mailbox is ours now) and none left state:
	 * the borrowers are clients waiting for one, or processes not reaped
	 * yet. Refusing, a standby waited as long as any client ran. */
	if (*shared && !kept_state(m)) {
		mlog(m, "device %u is borrowed by %d other process(es), and no manager left "
		     "state to take over: starting afresh, with a reset", m->dinfo.id,
		     m->dinfo.borrowers);
		*shared = false;
		m->fresh_shared = true;
	}
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

/*
 * The pulse: a thread that bumps the mailbox's pulse word whatever the
 * serve loop does. A loop busy with many clients (or starved of the CPU by
 * them) moves its heartbeat seldom; the pulse tells its clients it runs,
 * and they wait for it, where a manager stopped by a signal moves neither.
 */
static void *pulse_run(void *arg)
{
	struct sio_nvme_manager *m = arg;

	while (!__atomic_load_n(&m->pulse_stop, __ATOMIC_ACQUIRE)) {
		__atomic_fetch_add(&m->mb->h.pulse, 1, __ATOMIC_RELEASE);
		usleep(SIO_NVME_PULSE_MS * 1000u);
	}
	return NULL;
}

static void pulse_start(struct sio_nvme_manager *m)
{
	/* without it, clients judge the manager by its heartbeat alone */
	m->pulsing = !pthread_create(&m->pulse, NULL, pulse_run, m);
	if (!m->pulsing)
		mlog(m, "cannot start the pulse thread: clients judge this manager by its "
		     "serve loop's heartbeat alone");
}

static void pulse_end(struct sio_nvme_manager *m)
{
	if (!m->pulsing)
		return;
	__atomic_store_n(&m->pulse_stop, 1, __ATOMIC_RELEASE);
	pthread_join(m->pulse, NULL);
	m->pulsing = false;
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
	if (!shared && !m->fresh_shared && (ret = sio_device_downgrade(m->dev)))
		return sio_err_wrap(-ret, "cannot share device %u", m->dinfo.id);
	if (shared)
		take_over(m);
	sio_nvme_mbox_publish(m, shared);
	pulse_start(m);
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
	ret = sio_nvme_link_grace_ms(&m->grace_ms);
	if (!ret)
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
	/* across a link that is down, nothing read is the mailbox's, and
	 * nothing written reaches it: no mending what only reads all ones */
	if (__atomic_load_n(&h->magic, __ATOMIC_ACQUIRE) == UINT64_MAX &&
	    (ret = sio_nvme_mgr_link_wait(m)))
		return ret;
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
 * ($SMARTIO_NVME_RESTART_MS), and their I/O does not stop. A manager the
 * fabric @released says nothing: the mailbox is no longer its own.
 */
static void leave(struct sio_nvme_manager *m, uint32_t clients, bool released)
{
	if (m->published && !released) {
		if (m->hand_over)
			mlog(m, "stopping with device %u's state kept for a manager on node %d, "
			     "which resets it (nvme-manager --standby there takes over): %u "
			     "client(s) running", m->dinfo.id, m->dinfo.lender, clients);
		else
			mlog(m, "stopping with %u client(s) running: their queue pairs go on, "
			     "and the next manager of device %u (--standby, or one started "
			     "later) takes them over", clients, m->dinfo.id);
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
	pulse_end(m);
	/* Taken for dead (out of reach past the lease): the mailbox, the
	 * state and the controller are a successor's now, or will be. */
	if (sio_fabric_alive(m->f) == -EOWNERDEAD) {
		mlog(m, "%s: stopping, device %u left as it is for the manager that takes "
		     "it over", sio_errmsg(), m->dinfo.id);
		leave(m, 0, true);
		return;
	}
	if (m->dev_gone && m->ctrl)
		sio_nvme_ctrl_gone(m->ctrl);
	/* a take-over that failed leaves what it found, too */
	clients = m->mb ? clients_running(m) : 0;
	if (m->mb && m->state && !m->dev_gone && (clients || m->hand_over)) {
		leave(m, clients, false);
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
