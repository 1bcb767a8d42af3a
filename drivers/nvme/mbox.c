/* SPDX-License-Identifier: MIT */
/*
 * The manager's side of its mailbox (mailbox.h): published, and kept as it
 * wrote it. The mailbox is shared memory that any process of the fabric's
 * user can write, random bytes or a truncate included; the manager trusts
 * none of it. Its header is compared with the manager's own copy at every
 * turn of the loop and written again where it differs; each slot a client
 * made a request from holds that client (pid and node, as the manager saw
 * them) and a state in range, or is written back so, and a request it may
 * have held is answered "ask again"; a slot no client made a request from
 * that holds what no client writes is freed. A client that reads the
 * mailbox meanwhile checks what it reads (client.c).
 */
#include <string.h>
#include <unistd.h>
#include "mgr-priv.h"

/* Damage said at most once a second, with the count since. */
#define MEND_SAY_NS	1000000000ull

/* The header from the manager's copy; the magic last. */
static void hdr_write(struct sio_nvme_manager *m)
{
	struct sio_nvme_mbox_hdr *h = &m->mb->h;

	h->version = SIO_NVME_MBOX_VERSION;
	h->mgr_node = sio_fabric_node_id(m->f);
	h->device = m->dinfo.id;
	h->nslots = SIO_NVME_MBOX_SLOTS;
	memcpy(&h->ctrl, &m->hdr_ctrl, sizeof(h->ctrl));
	memcpy(&h->dbbuf, &m->hdr_dbbuf, sizeof(h->dbbuf));
	memcpy(&h->events, &m->events, sizeof(h->events));
	h->epoch = m->epoch;
	__atomic_store_n(&h->resets, m->resets, __ATOMIC_RELEASE);
	__atomic_store_n(&h->left, 0, __ATOMIC_RELEASE);
	__atomic_store_n(&h->mgr_pid, getpid(), __ATOMIC_RELEASE);
	__atomic_store_n(&h->serving, 1, __ATOMIC_RELEASE);
	/* a client that sees the magic sees a whole header */
	__atomic_store_n(&h->magic, SIO_NVME_MBOX_MAGIC, __ATOMIC_RELEASE);
}

/* Whether the header differs from what this manager wrote. */
static bool hdr_damaged(const struct sio_nvme_manager *m)
{
	const struct sio_nvme_mbox_hdr *h = &m->mb->h;

	return h->magic != SIO_NVME_MBOX_MAGIC || h->version != SIO_NVME_MBOX_VERSION ||
	       h->mgr_pid != getpid() || h->mgr_node != sio_fabric_node_id(m->f) ||
	       h->device != m->dinfo.id || h->nslots != SIO_NVME_MBOX_SLOTS ||
	       h->serving != 1 || h->left || h->epoch != m->epoch || h->resets != m->resets ||
	       memcmp((const void *)&h->ctrl, &m->hdr_ctrl, sizeof(h->ctrl)) ||
	       memcmp((const void *)&h->dbbuf, &m->hdr_dbbuf, sizeof(h->dbbuf)) ||
	       memcmp((const void *)&h->events, &m->events, sizeof(h->events));
}

void sio_nvme_mbox_publish(struct sio_nvme_manager *m, bool clients)
{
	struct sio_nvme_mbox_hdr *h = &m->mb->h;

	if (!clients) {
		memset(m->mb, 0, sizeof(*m->mb));
		memset(&m->events, 0, sizeof(m->events));
		m->resets = m->epoch = 0;
	} else {	/* a predecessor's events and counts go on */
		memcpy(&m->events, (const void *)&h->events, sizeof(m->events));
	}
	if (m->adopted)	/* the same controller and buffers, which clients use already */
		memcpy(&m->hdr_ctrl, (const void *)&h->ctrl, sizeof(m->hdr_ctrl));
	else
		sio_nvme_mbox_ctrl_pack(&m->hdr_ctrl, m->ci);
	sio_nvme_dbbuf_publish(&m->hdr_dbbuf, sio_nvme_ctrl_dbbuf(m->ctrl));
	m->epoch++;
	m->resets += m->resets & 1;	/* one a predecessor left under way is over */
	hdr_write(m);
	m->published = true;
}

/* The controller changed (a reset): what clients read of it, anew. */
void sio_nvme_mbox_ctrl_changed(struct sio_nvme_manager *m)
{
	sio_nvme_mbox_ctrl_pack(&m->hdr_ctrl, m->ci);
	sio_nvme_dbbuf_publish(&m->hdr_dbbuf, sio_nvme_ctrl_dbbuf(m->ctrl));
	hdr_write(m);
}

void sio_nvme_mbox_reset_mark(struct sio_nvme_manager *m, bool underway)
{
	if ((m->resets & 1) != underway)
		m->resets++;
	__atomic_store_n(&m->mb->h.resets, m->resets, __ATOMIC_RELEASE);
}

/* The events the manager took (aer.c, into its copy): in the header, each
 * entry before the count that covers it. */
void sio_nvme_mbox_events(struct sio_nvme_manager *m)
{
	struct sio_nvme_mbox_events *e = &m->mb->h.events;

	if (__atomic_load_n(&e->seq, __ATOMIC_ACQUIRE) == m->events.seq)
		return;
	memcpy(e->dw0, m->events.dw0, sizeof(e->dw0));
	__atomic_store_n(&e->seq, m->events.seq, __ATOMIC_RELEASE);
}

/* Whether slot @s holds the client seen on it (and a state in range):
 * what the manager may believe of it. */
bool sio_nvme_mbox_known(struct sio_nvme_manager *m, int s)
{
	const struct sio_nvme_mbox_slot *sl = &m->mb->slots[s];

	return m->slot_pid[s] > 0 && __atomic_load_n(&sl->pid, __ATOMIC_ACQUIRE) == m->slot_pid[s] &&
	       sl->node == m->slot_node[s] &&
	       __atomic_load_n(&sl->state, __ATOMIC_ACQUIRE) <= SIO_MBOX_RESP;
}

/* A client's slot written over: its client back in it, and whatever it
 * asked answered "ask again". */
static void slot_mend(struct sio_nvme_manager *m, int s)
{
	struct sio_nvme_mbox_slot *sl = &m->mb->slots[s];

	sl->node = m->slot_node[s];
	__atomic_store_n(&sl->pid, m->slot_pid[s], __ATOMIC_RELEASE);
	sio_nvme_mgr_retry(m, s, "the mailbox slot was overwritten by another process: ask "
			   "again");
}

void sio_nvme_mbox_check(struct sio_nvme_manager *m, uint64_t now)
{
	uint32_t slots = 0;
	bool hdr = hdr_damaged(m);

	if (hdr)
		hdr_write(m);
	for (int s = 0; s < SIO_NVME_MBOX_SLOTS; s++)
		if (m->slot_pid[s] > 0 && !sio_nvme_mbox_known(m, s)) {
			slot_mend(m, s);
			slots++;
		}
	if (!hdr && !slots)
		return;
	m->mended += (hdr ? 1 : 0) + slots;
	if (now - m->last_mend < MEND_SAY_NS)
		return;
	m->last_mend = now;
	mlog(m, "another process wrote over the mailbox (%s%s%u client slot(s)): written back; "
	     "%llu repair(s) so far", hdr ? "its header" : "", hdr ? ", " : "", slots,
	     (unsigned long long)m->mended);
}
