/* SPDX-License-Identifier: MIT */
/*
 * The NVMe manager: clients that died, and what they held: their
 * mailbox slots, queue pairs and doorbell grants
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

/*
 * Whether the fabric has said "no such device" for half a second: one byte
 * of the registry written over by another process (a hostile one, or the
 * mailbox fuzzer) reads as no device while it lasts, and a manager that
 * believed one look would give up a controller that is there.
 */
bool sio_nvme_mgr_dev_missing(struct sio_nvme_manager *m, uint64_t now)
{
	struct sio_device_info di;

	if (sio_device_info(m->dev, &di) != -ENODEV) {
		m->dev_missed_ns = 0;
		return false;
	}
	if (!m->dev_missed_ns)
		m->dev_missed_ns = now;
	return now - m->dev_missed_ns >= PIDCHECK_EVERY_NS;
}

/* Clients that died: from fabric events, and (on single-host backends,
 * where pids are meaningful) from a periodic check of the owner's pid,
 * asked of the fabric: a pid names a process of its own kernel only. */
void sio_nvme_mgr_check_clients(struct sio_nvme_manager *m, uint64_t now)
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
	/* An event can be dropped (a full socket): the fabric is asked too */
	if (!m->dev_gone && sio_nvme_mgr_dev_missing(m, now))
		m->dev_gone = true;
	for (s = 0; s < SIO_NVME_MBOX_SLOTS; s++)	/* the clients we know */
		if (m->slot_pid[s] > 0 &&
		    !sio_fabric_proc_alive(m->f, m->slot_node[s], m->slot_pid[s]))
			reap_slot(m, s, "is gone");
	check_strangers(m);
}
