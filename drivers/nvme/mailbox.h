/* SPDX-License-Identifier: MIT */
#ifndef SIO_NVME_MAILBOX_H
#define SIO_NVME_MAILBOX_H

/*
 * The manager's mailbox: one segment on the lender's node, built only from
 * fabric primitives (shared memory plus sio_segment_notify/wait), so it works
 * on every backend. It is kept (SIO_SEG_F_KEEP): a manager that crashes
 * leaves it, with the clients' slots, to the manager that takes over.
 *
 * A client claims a slot with a compare-and-swap of its state from FREE to
 * IDLE and keeps it for its lifetime. To ask something it fills the request,
 * stores REQ (release), bumps the header's doorbell word and notifies it.
 * The manager, sleeping on the doorbell, takes every REQ slot (BUSY), writes
 * the response, stores RESP and notifies the slot's state word, on which
 * the client sleeps. Each client has one request in flight; many clients
 * have theirs at once.
 */

#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <smartio/nvme/ctrl.h>

#define SIO_NVME_MBOX_MAGIC	0x31584f424d564e53ull	/* "SNVMBOX1" */
#define SIO_NVME_MBOX_VERSION	1u
#define SIO_NVME_MBOX_SLOTS	128
/* Well-known segment id: one mailbox per device. */
#define SIO_NVME_MBOX_SEGID(dev) (0x4e560000u | ((dev) & 0xffffu))

enum sio_nvme_mbox_state {
	SIO_MBOX_FREE = 0,
	SIO_MBOX_IDLE,
	SIO_MBOX_REQ,
	SIO_MBOX_BUSY,
	SIO_MBOX_RESP,
};

enum sio_nvme_mbox_op {
	SIO_MBOX_OP_HELLO = 1,	/* check the manager is serving */
	SIO_MBOX_OP_CREATE_QP,	/* qsize, bus1 = SQ, bus2 = CQ, cdw10 = prio, cdw11 =
				 * SIO_MBOX_QP_*; qid 0, or
				 * the slot's own that a reset took: made again */
	SIO_MBOX_OP_DELETE_QP,	/* qid */
	SIO_MBOX_OP_IDENTIFY,	/* cdw10 = CNS, nsid, bus1 = 4 KiB */
	SIO_MBOX_OP_GET_LOG,	/* cdw10 = LID, nsid, bus1, len */
	SIO_MBOX_OP_GET_FEAT,	/* cdw10 = FID, cdw11 */
	SIO_MBOX_OP_CMB_ALLOC,	/* len: bytes of the CMB, answer in value */
	SIO_MBOX_OP_CMB_FREE,	/* value: offset returned by CMB_ALLOC */
	SIO_MBOX_OP_BYE,	/* release everything the slot holds */
	SIO_MBOX_OP_RESET_QP,	/* qid timed out: deleted in the controller (what it
				 * holds ends), kept for its owner to create again */
	SIO_MBOX_OP_MAX,
};

struct sio_nvme_mbox_req {
	uint32_t op;
	uint32_t nsid;
	uint32_t cdw10;
	uint32_t cdw11;
	uint64_t bus1;
	uint64_t bus2;
	uint64_t value;
	uint32_t len;
	uint16_t qid;
	uint16_t pad;
	uint32_t qsize;
	uint32_t flags;
};

/* sio_nvme_mbox_resp.flags */
/* CREATE_QP's cdw11: the CQ signals interrupts, on sio_nvme_mbox_vector(qid) */
#define SIO_MBOX_QP_IRQ		(1u << 0)

/*
 * The interrupt vector of queue pair @qid: 1..31 (0 is the admin queue's),
 * what every fabric delivers (SIO_IRQ_MAX_VECS) and every controller with
 * 32 MSI-X vectors has. Past 31 queue pairs, vectors are shared: a client
 * may wake for another's completions, and polls to find none.
 */
static inline uint16_t sio_nvme_mbox_vector(uint16_t qid)
{
	return (uint16_t)(1 + (qid - 1) % 31);
}

#define SIO_MBOX_RESP_RETRY	(1u << 0)	/* cut short by a manager restart: ask again */

struct sio_nvme_mbox_resp {
	int32_t err;		/* 0 or -errno */
	uint16_t status;	/* NVMe status (SCT << 8 | SC) if the device refused */
	uint16_t qid;
	uint32_t result;
	uint32_t flags;		/* SIO_MBOX_RESP_* */
	uint64_t value;
	char msg[160];
};

struct sio_nvme_mbox_slot {
	uint32_t state;		/* enum sio_nvme_mbox_state, notified on */
	uint32_t seq;
	int32_t pid;		/* owner */
	int32_t node;
	struct sio_nvme_mbox_req req;
	struct sio_nvme_mbox_resp resp;
	uint8_t pad[512 - 16 - sizeof(struct sio_nvme_mbox_req) -
		    sizeof(struct sio_nvme_mbox_resp)];
};

_Static_assert(sizeof(struct sio_nvme_mbox_slot) == 512, "mailbox slot is 512 bytes");

/* What the controller's memory buffer may hold (sio_nvme_mbox_ctrl.cmb_flags). */
#define SIO_NVME_MBOX_CMB_SQS	(1u << 0)
#define SIO_NVME_MBOX_CMB_CQS	(1u << 1)
#define SIO_NVME_MBOX_CMB_DATA	(1u << 2)

/*
 * The controller as the manager brought it up: struct sio_nvme_ctrl_info in
 * fixed-width fields (no bool, whose stray values a hostile writer could
 * make undefined to read). The manager packs it once; a client copies it
 * out once, checks the copy, and unpacks that.
 */
struct sio_nvme_mbox_ctrl {
	uint64_t cap;
	uint32_t vs;
	uint32_t dstrd;
	uint32_t mqes;
	uint32_t page_size;
	uint32_t max_xfer;
	uint32_t io_queues;
	uint32_t nn;
	uint32_t timeout_ms;
	uint32_t vwc;
	uint32_t oncs;
	int32_t cmb_bar;	/* -1: no CMB */
	uint32_t cmb_flags;	/* SIO_NVME_MBOX_CMB_* */
	uint64_t cmb_offset;
	uint64_t cmb_size;
	uint64_t cmb_bus;
	char mn[41];
	char sn[21];
	char fr[9];
	uint8_t sgl;		/* Identify SGLS bits 1:0 */
};

_Static_assert(offsetof(struct sio_nvme_mbox_ctrl, cmb_offset) == 56, "mailbox ctrl layout");
_Static_assert(offsetof(struct sio_nvme_mbox_ctrl, mn) == 80, "mailbox ctrl layout");
_Static_assert(sizeof(struct sio_nvme_mbox_ctrl) == 152, "mailbox ctrl is 152 bytes");
_Static_assert(sizeof(((struct sio_nvme_mbox_ctrl *)0)->mn) ==
	       sizeof(((struct sio_nvme_ctrl_info *)0)->mn) &&
	       sizeof(((struct sio_nvme_mbox_ctrl *)0)->sn) ==
	       sizeof(((struct sio_nvme_ctrl_info *)0)->sn) &&
	       sizeof(((struct sio_nvme_mbox_ctrl *)0)->fr) ==
	       sizeof(((struct sio_nvme_ctrl_info *)0)->fr), "identify strings fit");

/* The manager's shadow doorbells (dbbuf.c): size 0 when it offers none. */
struct sio_nvme_mbox_dbbuf {
	int32_t node;
	uint32_t seg;
	uint32_t size;
	uint32_t stride;
};

/* Asynchronous events the manager took (aer.c): event k is dw0[k % N];
 * @seq counts them all and is stored after the entry. */
#define SIO_NVME_MBOX_EVENTS	16u
struct sio_nvme_mbox_events {
	uint32_t seq;
	uint32_t dw0[SIO_NVME_MBOX_EVENTS];
};

struct sio_nvme_mbox_hdr {
	uint64_t magic;		/* written last, once the header is valid */
	uint32_t version;
	uint32_t doorbell;	/* bumped by clients, notified on */
	int32_t mgr_pid;
	int32_t mgr_node;
	uint32_t device;
	uint32_t heartbeat;	/* bumped by the manager's loop */
	uint32_t serving;	/* 0 once the manager stops */
	uint32_t nslots;
	struct sio_nvme_mbox_ctrl ctrl;
	/* Failover: the mailbox outlives a manager's crash (SIO_SEG_F_KEEP)
	 * and its successor takes it over, writing mgr_pid anew. */
	uint32_t epoch;		/* bumped by each manager that takes over */
	uint32_t resets;	/* moved when a manager reset the controller under
				 * running clients: their queues are gone, to be made
				 * again; odd while the reset is under way */
	struct sio_nvme_mbox_dbbuf dbbuf;
	struct sio_nvme_mbox_events events;
	uint32_t left;		/* with serving 0: the manager stopped and left the
				 * clients' queue pairs running for a successor */
	uint32_t pulse;		/* bumped every SIO_NVME_PULSE_MS by a thread of the
				 * manager's, whatever its loop does: moving while the
				 * heartbeat stands still, the manager is busy, not
				 * stopped */
};

#define SIO_NVME_PULSE_MS	100u

/* Tries a manager makes to reset a controller before it gives up; each
 * waits CAP.TO at most to disable, and to enable it. */
#define SIO_NVME_RESET_TRIES	3

_Static_assert(offsetof(struct sio_nvme_mbox_hdr, ctrl) == 40, "mailbox header layout");

struct sio_nvme_mbox {
	union {
		struct sio_nvme_mbox_hdr h;
		uint8_t raw[4096];
	};
	struct sio_nvme_mbox_slot slots[SIO_NVME_MBOX_SLOTS];
};

_Static_assert(sizeof(struct sio_nvme_mbox_hdr) <= 4096, "header fits its page");

#define SIO_NVME_MBOX_SIZE	sizeof(struct sio_nvme_mbox)

/* The manager's side: @ci into the header's wire form. */
static inline void sio_nvme_mbox_ctrl_pack(struct sio_nvme_mbox_ctrl *m,
					   const struct sio_nvme_ctrl_info *ci)
{
	memset(m, 0, sizeof(*m));
	m->cap = ci->cap;
	m->vs = ci->vs;
	m->dstrd = ci->dstrd;
	m->mqes = ci->mqes;
	m->page_size = ci->page_size;
	m->max_xfer = ci->max_xfer;
	m->io_queues = ci->io_queues;
	m->nn = ci->nn;
	m->timeout_ms = ci->timeout_ms;
	m->vwc = ci->vwc;
	m->oncs = ci->oncs;
	m->sgl = ci->sgl;
	m->cmb_bar = ci->cmb.size ? ci->cmb.bar : -1;
	m->cmb_flags = (ci->cmb.sqs ? SIO_NVME_MBOX_CMB_SQS : 0) |
		       (ci->cmb.cqs ? SIO_NVME_MBOX_CMB_CQS : 0) |
		       (ci->cmb.data ? SIO_NVME_MBOX_CMB_DATA : 0);
	m->cmb_offset = ci->cmb.offset;
	m->cmb_size = ci->cmb.size;
	m->cmb_bus = ci->cmb.bus;
	memcpy(m->mn, ci->mn, sizeof(m->mn));
	memcpy(m->sn, ci->sn, sizeof(m->sn));
	memcpy(m->fr, ci->fr, sizeof(m->fr));
}

/* The client's side: a checked copy of the wire form into @ci. */
static inline void sio_nvme_mbox_ctrl_unpack(struct sio_nvme_ctrl_info *ci,
					     const struct sio_nvme_mbox_ctrl *m)
{
	memset(ci, 0, sizeof(*ci));
	ci->cap = m->cap;
	ci->vs = m->vs;
	ci->dstrd = m->dstrd;
	ci->db_stride = sio_nvme_db_stride(m->dstrd);	/* DSTRD checked by the caller */
	ci->mqes = m->mqes;
	ci->page_size = m->page_size;
	ci->max_xfer = m->max_xfer;
	ci->io_queues = m->io_queues;
	ci->nn = m->nn;
	ci->timeout_ms = m->timeout_ms;
	ci->vwc = m->vwc != 0;
	ci->oncs = (uint16_t)m->oncs;
	ci->sgl = m->sgl < 3 ? m->sgl : 0;	/* 3 is reserved */
	ci->cmb.bar = m->cmb_bar;
	ci->cmb.offset = m->cmb_offset;
	ci->cmb.size = m->cmb_size;
	ci->cmb.bus = m->cmb_bus;
	ci->cmb.sqs = m->cmb_flags & SIO_NVME_MBOX_CMB_SQS;
	ci->cmb.cqs = m->cmb_flags & SIO_NVME_MBOX_CMB_CQS;
	ci->cmb.data = m->cmb_flags & SIO_NVME_MBOX_CMB_DATA;
	memcpy(ci->mn, m->mn, sizeof(ci->mn));
	memcpy(ci->sn, m->sn, sizeof(ci->sn));
	memcpy(ci->fr, m->fr, sizeof(ci->fr));
	ci->mn[sizeof(ci->mn) - 1] = 0;
	ci->sn[sizeof(ci->sn) - 1] = 0;
	ci->fr[sizeof(ci->fr) - 1] = 0;
}

/* Byte offset in the mailbox of a field of slot @s (for notify and wait). */
static inline uint32_t sio_nvme_mbox_slot_off(int s, size_t field)
{
	return (uint32_t)(offsetof(struct sio_nvme_mbox, slots) +
			  (size_t)s * sizeof(struct sio_nvme_mbox_slot) + field);
}

#endif
