/* SPDX-License-Identifier: MIT */
#ifndef SIO_NVME_CLIENT_PRIV_H
#define SIO_NVME_CLIENT_PRIV_H

/*
 * Internal to the NVMe client: its structures, and what its files share.
 * client.c: open/close, the mailbox, admin relays, namespaces
 * buffer.c: data buffers
 * ioq.c: queue specs, placement, creation and deletion of queue pairs
 * io.c: submission, polling, timeouts, the synchronous calls
 * multipath.c: the second path, failover and restore
 * arena.c: one segment for what the device writes here (one window)
 */

#include <pthread.h>
#include <string.h>
#include <smartio/nvme/client.h>
#include <smartio/nvme/queue.h>
#include "mailbox.h"
#include "priv.h"

#define NS_CACHE	64

struct sio_nvme_client {
	struct sio_fabric *f;
	struct sio_device *dev;
	struct sio_device_info dinfo;
	struct sio_segment *mseg;
	struct sio_nvme_mbox *mb;
	int slot;
	int mgr_node;
	int32_t mgr_pid;
	int32_t lost_pid;		/* a manager given up on (client.c, await()), */
	uint32_t lost_beat;		/* its heartbeat then */
	uint32_t restart_ms;		/* $SMARTIO_NVME_RESTART_MS */
	uint32_t answer_ms;		/* $SMARTIO_NVME_ANSWER_MS */
	uint32_t reset_ms;		/* $SMARTIO_NVME_RESET_MS (0: what the tries take) */
	uint32_t grace_ms;		/* $SMARTIO_NVME_LINK_GRACE_MS */
	uint32_t arena_mb;		/* $SMARTIO_NVME_ARENA_MB */
	pthread_mutex_t lock;		/* one mailbox request at a time */
	struct sio_segment *bar0;
	volatile uint8_t *regs;		/* BAR0, or only its register page (read-only) */
	/* Doorbells a page or more apart: each queue pair maps its own pages
	 * (the manager grants them to this process), not the whole BAR. */
	bool confined;
	struct sio_nvme_arena *arena;	/* NULL: none (arena.c) */
	struct sio_segment *scratch;	/* admin data lands here (NULL: in the arena) */
	void *scratch_va;
	uint64_t scratch_off;		/* in the arena */
	struct sio_nvme_ctrl_info ci;
	uint32_t timeout_ms;
	struct sio_nvme_ns ns[NS_CACHE + 1];
	struct sio_nvme_ioq *queues;	/* list, for close */
	/*
	 * multipath: a second borrow through adapter 1, made on first use,
	 * and the registers and the mailbox through adapter 1 too. @mb and
	 * @regs are what the client reads: @mb0 and @regs0 (through adapter
	 * 0) while path 0's links are up, else these (sio_nvme_ctl_follow()).
	 */
	struct sio_device *dev2;
	struct sio_segment *bar0_2, *mseg2;
	volatile uint8_t *regs2, *regs0;
	struct sio_nvme_mbox *mb2, *mb0;
	struct sio_nvme_dbbuf dbbuf2;	/* the shadow doorbells through adapter 1 */
	uint32_t link_gen;		/* bumped when a link event is read */
	struct sio_nvme_dbbuf dbbuf;	/* the manager's shadow doorbells, mapped here */
	bool dbbuf_local;		/* ... in this node's memory */
	struct sio_segment *stats_seg;	/* live counters (stats.c) */
	struct sio_nvme_stats_page *stats;
};

struct ioreq {
	struct sio_nvme_ioq *q;
	sio_nvme_io_cb cb;
	void *arg;
	uint32_t remaining;
	int err;
	uint16_t status;
};

/* What a command has in its tag's PRP list slot, to write again with it:
 * a PRP list (@a the data's bus address, @b its bytes) or a Deallocate
 * range (@a its first block, @b its blocks). */
enum { SIDE_NONE, SIDE_PRP, SIDE_DSM };
struct sent_side {
	uint8_t kind;
	uint32_t b;
	uint64_t a;
};

/* What a command was, so it can be sent again on another queue pair. */
struct cmdrec {
	uint8_t opc;
	uint8_t retries;
	uint16_t ridx;
	uint32_t nsid;
	uint32_t nlb;
	uint32_t len;			/* bytes of data */
	uint64_t slba;
	struct sio_nvme_buf *buf;
	uint64_t off;
};

/* One queue pair in the controller, reached through one path. A command
 * ends with a call of its tag's @cbs entry with its cookie: the caller's
 * callback and argument for a request of one command on a queue pair of
 * one path; else sio_nvme_req_chunk_done() (io.c) and the request it is part of
 * (struct ioreq, in the queue's table). */
struct qpair {
	struct sio_nvme_queue q;
	uint16_t *cids;
	uint64_t *cookies;
	uint16_t *ids;
	sio_nvme_io_cb *cbs;		/* per tag */
	struct sio_nvme_cmd *sent;	/* per tag: its command as built, in this
					 * process's memory, to send again (recover.c) */
	struct sent_side *side;		/* per tag: what it has beside the SQ */
	struct cmdrec *rec;		/* per cid, multipath only */
	struct sio_device *dev;		/* the borrow its memory is mapped for */
	int path;
	struct sio_nvme_doorbells db;	/* db.seg: its own doorbell pages (confined) */
	uint32_t db_sink[2];		/* doorbells point here once unmapped */
	bool live;			/* exists in the controller */
	struct sio_segment *sq_seg, *cq_seg;	/* sq_seg NULL: in cq_seg or CMB */
	uint64_t sq_seg_bus, cq_seg_bus;
	bool cq_arena;			/* the CQ (and what shares it) is in the arena */
	uint64_t cq_off;
	bool sq_cmb;
	uint64_t cmb_off;
	struct sio_segment *cmb_seg;	/* the CMB's BAR, mapped here for the SQ */
	uint8_t *sq_va, *cq_va;
	uint64_t sq_bus, cq_bus, cq_bytes;
	uint64_t *prp_va;
	uint64_t prp_bus;
	int sq_place, cq_place;
	uint64_t retry_ns;		/* timed out: not before then again */
};

struct sio_nvme_ioq {
	struct sio_nvme_client *cl;
	struct sio_nvme_ioq *next;
	struct qpair *act;		/* where new commands go; NULL: nowhere now */
	struct qpair qp[2];		/* primary, and the backup of a multipath queue */
	bool slow;			/* multipath, failed or holding doorbells: not
					 * the fast path of polling (io.c) */
	uint32_t fast_nsid;		/* reads and writes of this namespace may take
					 * the fast path (io.c) */
	const struct sio_nvme_ns *fast_ns;	/* its entry in the client's cache; never
						 * NULL (sio_nvme_fast_off()) */
	uint64_t fast_max;		/* most bytes a fast-path command takes */
	uint32_t off_mask;		/* buffer offsets must have these bits clear */
	bool mp;
	uint16_t prio;
	/* completions (cpl.c) */
	int cpl_mode;			/* SIO_NVME_CPL_* in force */
	int irq_vec;			/* the CQ's vector, taken on qp[0].dev; -1: none */
	char cpl_note[160];		/* why cpl_mode is not what was asked */
	uint32_t spin_ns;		/* adaptive: how long to spin before sleeping */
	uint64_t sleeps, wakeups_lost, sleeps_direct;
	bool reaped_since_wait;		/* sio_nvme_ioq_reap() returned completions
					 * without waiting since its last wait */
	uint64_t waited_ns;		/* when that wait ended */
	uint64_t reaped;		/* completions sio_nvme_ioq_reap() returned */
	uint64_t pace_t0, pace_n;	/* hybrid: the window the pace is taken over */
	uint64_t pace_ns;		/* hybrid: the device's time per completion */
	struct ioreq *reqs;
	uint16_t *req_stack;
	uint32_t nreq_free;
	uint32_t prp_stride;		/* bytes of PRP list per cid */
	uint8_t sgl;			/* SIO_NVME_SGL_*: what this queue may use */
	bool sgl_always;		/* dptr=sgl */
	bool dbbuf;			/* rings go through the shadow doorbells */
	uint64_t sgl_cmds;
	uint32_t page;
	uint32_t page_mask;		/* page - 1 */
	uint32_t max_xfer;
	uint32_t depth;
	int failed;
	bool hold;			/* submissions leave the doorbell to the caller */
	uint32_t empty_polls;
	uint64_t stall_since;
	/* multipath */
	struct cmdrec *pend;		/* to be sent again, oldest first */
	uint32_t npend, pend_cap;
	uint32_t polls;
	uint32_t seen_gen;
	uint32_t tmo_failovers;		/* in a row, without a completion */
	uint64_t down_since;		/* no path since then */
	uint64_t next_check;
	uint32_t failovers, restores;
	uint64_t resubmitted;
	uint64_t stale;			/* completions ignored by queue pairs since
					 * deleted (their counters start over) */
	struct sio_nvme_qstats *qs;	/* live counters: in the client's stats page,
					 * or qs_local (stats.c) */
	struct sio_nvme_qstats qs_local;
	/* recovery (recover.c) */
	uint32_t resets_seen;		/* the mailbox's reset count its pairs were made under */
	uint32_t recover_tries;		/* in a row, without progress */
	uint64_t recover_ns;
	uint32_t recoveries;
	uint32_t timeouts;		/* times commands made no progress for the timeout */
	uint32_t link_flaps;		/* pauses for a link to the lender down */
	uint64_t paused_ns;		/* ... their time, in all */
};

/* cpl.c */
/* Does completion mode @mode sleep on the CQ's interrupt (needs a vector)? */
static inline bool sio_nvme_cpl_irq(int mode)
{
	return mode == SIO_NVME_CPL_IRQ || mode == SIO_NVME_CPL_ADAPTIVE;
}

int sio_nvme_cpl_setup(struct sio_nvme_ioq *q, int asked);
void sio_nvme_cpl_release(struct sio_nvme_ioq *q);

/*
 * No read or write of @q takes the fast path (io.c) until submit_rw_any()
 * arms it again: a slow queue (multipath, failed, holding its doorbell), or
 * one not used yet. The namespace it points at has no block, so every
 * request fails the fast path's first checks, whatever its nsid.
 */
static inline void sio_nvme_fast_off(struct sio_nvme_ioq *q)
{
	static const struct sio_nvme_ns none;

	q->fast_nsid = 0;
	q->fast_ns = &none;
}


/* arena.c: ranges of the client's arena ($SMARTIO_NVME_ARENA_MB, default 64). */
#define SIO_NVME_ARENA_MB	64u
#define SIO_NVME_ARENA_MAX_MB	4096u
#define SIO_NVME_ARENA_RANGES	256
struct sio_nvme_arena;
struct sio_nvme_slice {
	struct sio_segment *seg;	/* the arena's */
	uint64_t off;
	uint8_t *va;
	uint64_t bus, bus2;		/* bus2: 0 until mapped on the second path */
};
int sio_nvme_arena_open(struct sio_nvme_client *cl);
void sio_nvme_arena_close(struct sio_nvme_client *cl);
/* Return: 0, or -ENOSPC (no arena, or no room: the caller makes a segment). */
int sio_nvme_arena_alloc(struct sio_nvme_client *cl, uint64_t len, struct sio_nvme_slice *out);
void sio_nvme_arena_free(struct sio_nvme_client *cl, uint64_t off);
bool sio_nvme_arena_owns(const struct sio_nvme_client *cl, const struct sio_segment *seg);
/* The arena's address for the device (first path). */
int sio_nvme_arena_bus(struct sio_nvme_client *cl, uint64_t *bus);
/* The arena's address on the second path, mapped there at first use. */
int sio_nvme_arena_bus2(struct sio_nvme_client *cl, uint64_t *bus2);

/* client.c: one request to the manager; bounded wait, detects a vanished
 * manager. */
int sio_nvme_mbox_call(struct sio_nvme_client *cl, const struct sio_nvme_mbox_req *req,
		       struct sio_nvme_mbox_resp *resp);

/* buffer.c: give a buffer made before the second path its address there. */
int sio_nvme_buf_second_path(struct sio_nvme_ioq *q, struct sio_nvme_buf *buf);

/* ioq.c: have @p's queues created over its memory; the host's view anew. */
int sio_nvme_qpair_create(struct sio_nvme_ioq *q, struct qpair *p);
/* ioq.c: let go of @p's doorbells and have the manager delete it. */
int sio_nvme_qpair_delete(struct sio_nvme_ioq *q, struct qpair *p);

/* io.c: take @p's completions; end command @tag of @p (its caller told, or
 * its request counting it); end everything in flight and fail the queue
 * (saying why, or with @err). */
int sio_nvme_qpair_reap(struct sio_nvme_ioq *q, struct qpair *p, uint32_t max, bool ring);
void sio_nvme_ioq_end(struct sio_nvme_ioq *q, struct qpair *p, uint32_t tag, uint64_t cookie,
		      int err, uint16_t status);
int sio_nvme_ioq_fail(struct sio_nvme_ioq *q);
int sio_nvme_ioq_fail_with(struct sio_nvme_ioq *q, int err);

/* recover.c: the queue's pairs made again after a controller reset, or a
 * timeout (@timed_out); 0, or the queue fails. */
int sio_nvme_ioq_recover(struct sio_nvme_ioq *q, bool timed_out);
/* The reset count a queue compares with its own (even: none under way). */
static inline uint32_t sio_nvme_resets(const struct sio_nvme_client *cl)
{
	return __atomic_load_n(&cl->mb->h.resets, __ATOMIC_ACQUIRE);
}

/* CSTS, through the mapping @regs of BAR0: all ones when the device is
 * gone or the path to it is down. */
static inline uint32_t sio_nvme_csts(const volatile uint8_t *regs)
{
	return __atomic_load_n((const volatile uint32_t *)(regs + NVME_REG_CSTS), __ATOMIC_ACQUIRE);
}

/* Whether a controller reset took the queue's pairs since they were made. */
static inline bool sio_nvme_reset_moved(const struct sio_nvme_ioq *q)
{
	return sio_nvme_resets(q->cl) != q->resets_seen;
}

/* stats.c: the client's page of counters, a block per queue pair. */
int sio_nvme_stats_open(struct sio_nvme_client *cl);
void sio_nvme_stats_close(struct sio_nvme_client *cl);
void sio_nvme_stats_attach(struct sio_nvme_ioq *q);
void sio_nvme_stats_detach(struct sio_nvme_ioq *q);
void sio_nvme_stats_sync(struct sio_nvme_ioq *q);

/* io.c: a command of a request in the queue's table ended (@arg: the
 * struct ioreq). */
void sio_nvme_req_chunk_done(void *arg, int err, uint16_t status);

/* dbbuf.c */
int sio_nvme_client_dbbuf(struct sio_nvme_client *cl);
void sio_nvme_qpair_dbbuf(struct sio_nvme_client *cl, struct sio_nvme_queue *q, int path,
			  bool eventidx);

/* multipath.c */
bool sio_nvme_path_links_up(struct sio_nvme_client *cl, int a);
void sio_nvme_ctl_follow(struct sio_nvme_client *cl, bool path0);
void sio_nvme_mp_settle(struct sio_nvme_ioq *q);
bool sio_nvme_path_resume(struct sio_nvme_client *cl, int a);
int sio_nvme_links_lost(void *cl);

/**
 * sio_nvme_setup_again() - a set-up step cut short by the link to the lender
 * @cl: the client
 * @ret: what the step (a client's attaching, a queue pair's making) returned
 * @t0: when the first try began (sio__now_ns())
 * @resume: the windows are mapped again by this process's calls alone
 *	(sio_nvme_path_resume()), not by its heartbeat
 *
 * A map refused across a link that is down (-ENOTCONN), a link seen down
 * (-ENOLINK) or the fabric's state out of reach, its home's link down
 * (-EHOSTDOWN), is waited out, $SMARTIO_NVME_LINK_GRACE_MS from @t0, as a
 * running queue pauses for one (recover.c); the caller then undoes what
 * the step made and makes it again.
 * Return: 0 to make it again; else what the step fails with: @ret as it
 * is, or -ENOLINK past the grace.
 */
int sio_nvme_setup_again(struct sio_nvme_client *cl, int ret, uint64_t t0, bool resume);
int sio_nvme_client_second_path(struct sio_nvme_client *cl);
bool sio_nvme_mp_flush(struct sio_nvme_ioq *q);
int sio_nvme_mp_recover(struct sio_nvme_ioq *q);
int sio_nvme_mp_poll(struct sio_nvme_ioq *q, uint32_t max);

/* Put command @tag, built in @p->sent (its cid aside), in the next SQ entry
 * and commit it (not rung): the SQ may live behind a window that a link's
 * loss revokes, where stores are lost; the copy here is what recovery sends
 * again. Return: @tag. */
static inline __attribute__((always_inline)) int
put_sent(struct qpair *p, int tag, uint64_t cookie, sio_nvme_io_cb cb)
{
	*sio_nvme_sq_entry(&p->q) = p->sent[tag];
	tag = sio_nvme_sq_commit(&p->q, cookie);
	/* (a side written at this tag's last use stays marked: rewriting it
	 * at a recovery is harmless, and clearing it here costs every I/O) */
	p->cbs[tag] = cb;
	return tag;
}

/* Build a Read or Write of @len bytes at @bus in @p's next SQ entry and
 * commit it (not rung), with @cookie and @cb (struct qpair).
 * Return: the tag, or -EAGAIN when no tag is free (nothing was written). */
static inline __attribute__((always_inline)) int
put_rw(struct sio_nvme_ioq *q, struct qpair *p, uint8_t opc, uint32_t nsid, uint64_t slba,
       uint32_t nlb, uint64_t bus, uint32_t len, uint64_t cookie, sio_nvme_io_cb cb)
{
	struct sio_nvme_cmd *e;
	size_t list_off;
	uint64_t prp1, prp2;
	int tag;

	if (!sio_nvme_queue_free_slots(&p->q))
		return -EAGAIN;
	tag = sio_nvme_sq_next_cid(&p->q);	/* a tag is free */
	e = &p->sent[tag];	/* built here, then copied to the SQ (put_sent()) */
	/* An SGL when asked for, or where sio_nvme_sgl_wanted() says so: never
	 * for an aligned transfer of two pages at most, tested first. */
	if (q->sgl_always || (((bus & q->page_mask) || len > 2 * q->page) &&
			      sio_nvme_sgl_wanted(q->sgl, bus, len, q->page))) {
		/* one descriptor in the command: no list for the controller to fetch */
		sio_nvme_cmd_rw(e, opc, nsid, slba, nlb, 0, 0);
		sio_nvme_cmd_sgl_data(e, bus, len);
		q->sgl_cmds++;
	} else {
		list_off = (size_t)tag * q->prp_stride;
		sio_nvme_prp_fill(bus, len, q->page, (uint64_t *)((uint8_t *)p->prp_va + list_off),
				  p->prp_bus + list_off, &prp1, &prp2);
		sio_nvme_cmd_rw(e, opc, nsid, slba, nlb, prp1, prp2);
		if (__builtin_expect(prp2 == p->prp_bus + list_off, 0))
			p->side[tag] = (struct sent_side){ .kind = SIDE_PRP, .a = bus, .b = len };
	}
	return put_sent(p, tag, cookie, cb);
}

/* Dataset Management, Deallocate, one range: the range goes where this
 * command's PRP list would, which it does not need. */
static inline void put_deallocate(struct sio_nvme_ioq *q, struct qpair *p, struct sio_nvme_cmd *e,
				  const struct cmdrec *r)
{
	size_t off = (size_t)sio_nvme_sq_next_cid(&p->q) * q->prp_stride;
	struct nvme_dsm_range *range = (struct nvme_dsm_range *)((uint8_t *)p->prp_va + off);

	range->cattr = 0;
	range->nlb = r->nlb;
	range->slba = r->slba;
	p->side[sio_nvme_sq_next_cid(&p->q)] = (struct sent_side){ .kind = SIDE_DSM,
								  .a = r->slba, .b = r->nlb };
	memset(e, 0, sizeof(*e));
	e->opcode = nvme_cmd_dsm;
	e->nsid = r->nsid;
	e->prp1 = p->prp_bus + off;
	e->cdw10 = 0;			/* NR: one range */
	e->cdw11 = NVME_DSMGMT_AD;
}

/* Put the command @r describes in @p's SQ (not rung); a multipath queue
 * remembers it. Return: the tag, or -EAGAIN when no tag is free (nothing
 * was written, and the caller still owns request @r->ridx). */
static inline int put_cmd(struct sio_nvme_ioq *q, struct qpair *p, const struct cmdrec *r)
{
	struct sio_nvme_cmd *e;
	int cid;

	if (r->opc == nvme_cmd_read || r->opc == nvme_cmd_write || r->opc == nvme_cmd_compare) {
		/* Data buffers have an address per path; their page offsets agree. */
		cid = put_rw(q, p, r->opc, r->nsid, r->slba, r->nlb,
			     (p->path ? r->buf->bus2 : r->buf->bus) + r->off, r->len,
			     (uint64_t)(uintptr_t)&q->reqs[r->ridx], sio_nvme_req_chunk_done);
	} else {
		if ((cid = sio_nvme_sq_next_cid(&p->q)) < 0)
			return -EAGAIN;
		e = &p->sent[cid];
		if (r->opc == nvme_cmd_write_zeroes || r->opc == nvme_cmd_verify) {
			sio_nvme_cmd_rw(e, r->opc, r->nsid, r->slba, r->nlb, 0, 0);
		} else if (r->opc == nvme_cmd_dsm) {
			put_deallocate(q, p, e, r);
		} else {
			memset(e, 0, sizeof(*e));
			e->opcode = r->opc;
			e->nsid = r->nsid;
		}
		cid = put_sent(p, cid, (uint64_t)(uintptr_t)&q->reqs[r->ridx],
			       sio_nvme_req_chunk_done);
	}
	if (q->mp && cid >= 0)
		p->rec[cid] = *r;
	return cid;
}

#endif
