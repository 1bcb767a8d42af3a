/* SPDX-License-Identifier: MIT */
/*
 * NVMe client I/O: submission on top of queue.h, polling for completions,
 * timeouts, and the synchronous calls.
 */

#include "client-priv.h"

/* A namespace's geometry: the client's cached entry, or @tmp filled in for
 * one beyond the cache. Return: 0 or -errno. */
static inline int ns_get(struct sio_nvme_ioq *q, uint32_t nsid, struct sio_nvme_ns *tmp,
			 const struct sio_nvme_ns **ns)
{
	if (nsid - 1u < NS_CACHE && q->cl->ns[nsid].active) {
		*ns = &q->cl->ns[nsid];
		return 0;
	}
	*ns = tmp;
	return sio_nvme_client_ns(q->cl, nsid, tmp);
}

/* Blocks in the first command of a transfer starting at @bus. */
static inline uint32_t chunk_blocks(const struct sio_nvme_ioq *q, uint64_t bus,
				    uint32_t lba_size, uint32_t left)
{
	uint32_t bytes = q->max_xfer - (uint32_t)(bus & (q->page - 1));
	uint32_t n = bytes / lba_size;

	if (n > SIO_NVME_MAX_NLB)
		n = SIO_NVME_MAX_NLB;
	if (n == 0)
		n = 1;
	return n < left ? n : left;
}

/* Room for @chunks commands and a request, on the path new commands take
 * (the caller has checked that the queue has not failed). */
static inline int room(struct sio_nvme_ioq *q, uint32_t chunks)
{
	if (q->mp && q->npend && !sio_nvme_mp_flush(q))
		return -EAGAIN;
	if (!q->act || chunks > sio_nvme_queue_free_slots(&q->act->q) || !q->nreq_free)
		return -EAGAIN;
	return 0;
}

static inline uint32_t req_get(struct sio_nvme_ioq *q, sio_nvme_io_cb cb, void *arg,
			       uint32_t chunks)
{
	uint32_t ridx = q->req_stack[--q->nreq_free];
	struct ioreq *r = &q->reqs[ridx];

	r->q = q;
	r->cb = cb;
	r->arg = arg;
	r->remaining = chunks;
	r->err = 0;
	r->status = 0;
	return ridx;
}

/* Give back a request that none of whose commands went in. */
static inline void req_put(struct sio_nvme_ioq *q, uint32_t ridx)
{
	q->req_stack[q->nreq_free++] = (uint16_t)ridx;
}

/* The SQ doorbell after a submission, unless the caller batches them
 * (sio_nvme_ioq_hold()): then sio_nvme_ioq_ring() or the next poll rings. */
static inline void ring(struct sio_nvme_ioq *q, struct qpair *p)
{
	if (!q->hold)
		sio_nvme_sq_ring(&p->q);
}

/* A request above the transfer limit (MDTS): several commands, counted
 * first so that the request goes in whole or not at all. */
static int submit_split(struct sio_nvme_ioq *q, const struct cmdrec *r, uint32_t lba_size,
			sio_nvme_io_cb cb, void *arg)
{
	struct cmdrec each = *r, *rec = &each;
	uint64_t bus = r->buf->bus + r->off, b;
	uint32_t chunks = 0, nlb = r->nlb, left, n, sent = 0;
	struct ioreq *req;
	int ret;

	for (left = nlb, b = bus; left; left -= n, b += (uint64_t)n * lba_size) {
		n = chunk_blocks(q, b, lba_size, left);
		chunks++;
	}
	if (chunks > q->depth - 1)
		return sio_err_set(EINVAL, "a request of %u blocks needs %u commands "
				   "but the queue holds %u", nlb, chunks, q->depth - 1);
	ret = room(q, chunks);
	if (ret)
		return ret;
	rec->ridx = (uint16_t)req_get(q, cb, arg, chunks);
	for (left = nlb; left; left -= n, sent++) {
		n = chunk_blocks(q, bus, lba_size, left);
		rec->nlb = n;
		rec->len = n * lba_size;
		ret = put_cmd(q, q->act, rec);
		if (ret < 0)
			break;
		rec->slba += n;
		rec->off += rec->len;
		bus += rec->len;
	}
	if (sent < chunks) {
		/* room() counted the tags, so this is not expected; but no
		 * error is dropped. Nothing went in: the caller gets it back. */
		if (!sent) {
			req_put(q, rec->ridx);
			return ret;
		}
		/* Some parts went in: the request ends, with the error, once
		 * they have completed. */
		req = &q->reqs[rec->ridx];
		req->remaining = sent;
		req->err = ret;
	}
	ring(q, q->act);
	return 0;
}

/* The live counters (stats.c): memory only this client writes; @opc is a
 * constant where this is inlined, so the branch goes at compile time. */
static inline __attribute__((always_inline)) void
count_rw(struct sio_nvme_ioq *q, uint8_t opc, uint64_t bytes)
{
	struct sio_nvme_qstats *s = q->qs;

	if (opc == nvme_cmd_write) {
		s->writes++;
		s->write_bytes += bytes;
	} else {
		s->reads++;
		s->read_bytes += bytes;
	}
}

/* What every read or write must pass, and what is wrong if it does not. The
 * fast path (submit_rw()) checks the same in fewer instructions, and takes
 * this path for anything it does not pass. */
static int rw_check(const struct sio_nvme_ioq *q, const struct sio_nvme_ns *ns, uint32_t nsid,
		    uint64_t slba, uint32_t nlb, const struct sio_nvme_buf *buf, uint64_t off,
		    uint64_t bytes)
{
	if (slba >= ns->nsze || (uint64_t)nlb - 1 >= ns->nsze - slba)	/* nlb 0 too */
		return sio_err_set(EINVAL, "blocks %llu+%u outside namespace %u (%llu "
				   "blocks)", (unsigned long long)slba, nlb, nsid,
				   (unsigned long long)ns->nsze);
	if (!buf || (off & q->off_mask) || off > buf->size || bytes > buf->size - off)
		return sio_err_set(EINVAL, "%llu bytes at offset %llu do not fit the "
				   "buffer (%llu bytes, offset a multiple of 4 unless SGLs)",
				   (unsigned long long)bytes, (unsigned long long)off,
				   buf ? (unsigned long long)buf->size : 0ull);
	return 0;
}

/* Most bytes a read or write takes on the fast path: two pages (PRP1 and
 * PRP2, no list), within the transfer limit, and no more blocks than a
 * command takes at the smallest block size (512 bytes). */
static uint64_t fast_max(const struct sio_nvme_ioq *q)
{
	uint64_t m = 2ull * q->page;

	if (m > q->max_xfer)
		m = q->max_xfer;
	if (m > 512ull * SIO_NVME_MAX_NLB)
		m = 512ull * SIO_NVME_MAX_NLB;
	return m;
}

/* Any read or write: an uncached namespace, an error to report, a request
 * above the transfer limit or of more than two pages or off a page, a
 * multipath or failed queue, dptr=sgl. */
static __attribute__((noinline)) int
submit_rw_any(struct sio_nvme_ioq *q, uint8_t opc, uint32_t nsid, uint64_t slba, uint32_t nlb,
	      struct sio_nvme_buf *buf, uint64_t off, sio_nvme_io_cb cb, void *arg)
{
	const struct sio_nvme_ns *ns;
	struct sio_nvme_ns tmp;
	struct qpair *p;
	uint64_t bytes;
	uint16_t ridx;
	int ret, cid;

	if (q->failed)
		return q->failed;
	ret = ns_get(q, nsid, &tmp, &ns);
	if (ret)
		return ret;
	if (!q->slow && !q->sgl_always && ns != &tmp) {
		/* cached: the next ones may take the fast path */
		q->fast_nsid = nsid;
		q->fast_ns = ns;
		q->fast_max = fast_max(q);
	}
	bytes = (uint64_t)nlb * ns->lba_size;
	ret = rw_check(q, ns, nsid, slba, nlb, buf, off, bytes);
	if (ret)
		return ret;
	if (q->mp && !buf->bus2) {
		ret = sio_nvme_buf_second_path(q, buf);
		if (ret)
			return ret;
	}
	/* Within the transfer limit (MDTS) from where it starts, a request is
	 * one command, built straight into the SQ. */
	if (bytes > q->max_xfer - (uint32_t)((buf->bus + off) & (q->page - 1))) {
		ret = submit_split(q, &(struct cmdrec){ .opc = opc, .nsid = nsid, .nlb = nlb,
							.slba = slba, .buf = buf, .off = off },
				   ns->lba_size, cb, arg);
		if (!ret)
			count_rw(q, opc, bytes);
		return ret;
	}
	if (!q->mp) {	/* one command, one path: the callback rides with the tag */
		p = q->act;
		cid = put_rw(q, p, opc, nsid, slba, nlb, buf->bus + off, (uint32_t)bytes,
			     (uint64_t)(uintptr_t)arg, cb);
		if (cid < 0)
			return cid;
		ring(q, p);
		count_rw(q, opc, bytes);
		return 0;
	}
	ret = room(q, 1);
	if (ret)
		return ret;
	ridx = (uint16_t)req_get(q, cb, arg, 1);
	p = q->act;
	/* Data buffers have an address per path; their page offsets agree. */
	cid = put_rw(q, p, opc, nsid, slba, nlb, (p->path ? buf->bus2 : buf->bus) + off,
		     (uint32_t)bytes, (uint64_t)(uintptr_t)&q->reqs[ridx], sio_nvme_req_chunk_done);
	if (cid < 0) {
		req_put(q, ridx);
		return cid;
	}
	p->rec[cid] = (struct cmdrec){ .opc = opc, .ridx = ridx, .nsid = nsid, .nlb = nlb,
				       .len = (uint32_t)bytes, .slba = slba, .buf = buf, .off = off };
	ring(q, p);
	count_rw(q, opc, bytes);
	return 0;
}

/* submit_rw_any() with the arguments of sio_nvme_ioq_read(), so that the fast
 * path reaches it with a jump (its frame is the caller's). */
#define RW_ANY(name, opc)							\
static __attribute__((noinline)) int						\
name(struct sio_nvme_ioq *q, uint32_t nsid, uint64_t slba, uint32_t nlb,	\
     struct sio_nvme_buf *buf, uint64_t off, sio_nvme_io_cb cb, void *arg)	\
{										\
	return submit_rw_any(q, opc, nsid, slba, nlb, buf, off, cb, arg);	\
}
RW_ANY(read_any, nvme_cmd_read)
RW_ANY(write_any, nvme_cmd_write)
RW_ANY(compare_any, nvme_cmd_compare)

/*
 * Inlined into the read, write and compare calls: the hot path. One
 * command of one or two pages, starting on a page of a page-aligned buffer,
 * on a queue pair of one path, for a namespace the client has cached: the
 * command goes straight into the SQ with PRP1 and PRP2, no request of the
 * queue's table, the caller's callback and argument ride with the tag.
 * Everything else goes to @any (a jump: the caller's arguments are where
 * they came), with every check again and a clear error.
 */
static inline __attribute__((always_inline)) int
submit_rw(struct sio_nvme_ioq *q, uint8_t opc, uint32_t nsid, uint64_t slba, uint32_t nlb,
	  struct sio_nvme_buf *buf, uint64_t off, sio_nvme_io_cb cb, void *arg,
	  int (*any)(struct sio_nvme_ioq *, uint32_t, uint64_t, uint32_t,
		     struct sio_nvme_buf *, uint64_t, sio_nvme_io_cb, void *))
{
	const struct sio_nvme_ns *ns = q->fast_ns;
	struct sio_nvme_queue *sq = &q->qp[0].q;
	struct sio_nvme_cmd *e, *c;
	uint64_t bytes, bus, prp2, end;
	uint32_t tag;
	uint16_t cid;

	/* the namespace the queue armed the fast path for (it is not armed
	 * while the queue is slow or takes SGLs always: see
	 * sio_nvme_fast_off() for what then) */
	if (nsid != q->fast_nsid)
		goto any;
	/* Each check one add or mask and one compare; nlb 0 fails the last. */
	if (__builtin_add_overflow(slba, (uint64_t)nlb, &end) || end > ns->nsze)
		goto any;
	bytes = (uint64_t)nlb * ns->lba_size;
	if (!buf || __builtin_add_overflow(off, bytes, &end) || end > buf->size)
		goto any;
	/* A buffer and an offset on a page (so on a dword, as PRPs need it),
	 * and 1 byte to fast_max. */
	if (((uint32_t)(buf->bus | off) & q->page_mask) || bytes - 1 >= q->fast_max)
		goto any;
	if (!sio_nvme_queue_free_slots(sq))
		return -EAGAIN;
	/* the entry first, the line the controller reads, then its id and
	 * the tag's bookkeeping; few values live at once, and the live
	 * counters after the doorbell */
	bus = buf->bus + off;
	prp2 = bytes > q->page ? bus + q->page : 0;
	/* built in the tag's copy, which a recovery sends again (recover.c) */
	c = &q->qp[0].sent[sio_nvme_sq_next_cid(sq)];
	*c = (struct sio_nvme_cmd){ .opcode = opc, .nsid = nsid, .prp1 = bus,
				    .prp2 = prp2, .cdw10 = (uint32_t)slba,
				    .cdw11 = (uint32_t)(slba >> 32), .cdw12 = nlb - 1 };
	e = sio_nvme__slot_take(sq);
	*e = *c;
	tag = sio_nvme__tag_take(sq, (uint64_t)(uintptr_t)arg, &cid);
	e->cid = cid;
	q->qp[0].cbs[tag] = cb;
	sio_nvme__sq_ring_new(sq);	/* not holding: rung after every submission */
	count_rw(q, opc, bytes);
	return 0;
any:
	return any(q, nsid, slba, nlb, buf, off, cb, arg);
}

int sio_nvme_ioq_read(struct sio_nvme_ioq *q, uint32_t nsid, uint64_t slba, uint32_t nlb,
		      struct sio_nvme_buf *buf, uint64_t off, sio_nvme_io_cb cb, void *arg)
{
	return submit_rw(q, nvme_cmd_read, nsid, slba, nlb, buf, off, cb, arg, read_any);
}

int sio_nvme_ioq_write(struct sio_nvme_ioq *q, uint32_t nsid, uint64_t slba, uint32_t nlb,
		       struct sio_nvme_buf *buf, uint64_t off, sio_nvme_io_cb cb, void *arg)
{
	return submit_rw(q, nvme_cmd_write, nsid, slba, nlb, buf, off, cb, arg, write_any);
}

static int submit_simple(struct sio_nvme_ioq *q, struct cmdrec *rec, sio_nvme_io_cb cb,
			 void *arg)
{
	int ret = q->failed ? q->failed : room(q, 1);

	if (ret)
		return ret;
	rec->retries = 0;
	rec->buf = NULL;
	rec->off = 0;
	rec->len = 0;
	rec->ridx = (uint16_t)req_get(q, cb, arg, 1);
	ret = put_cmd(q, q->act, rec);
	if (ret < 0) {
		req_put(q, rec->ridx);
		return ret;
	}
	ring(q, q->act);
	q->qs->other++;
	return 0;
}

/* A command on a block range and no data: Write Zeroes, Verify, Deallocate.
 * @oncs: the ONCS bit that offers it; @max: most blocks one command takes. */
static int submit_range(struct sio_nvme_ioq *q, uint8_t opc, uint16_t oncs, const char *name,
			uint32_t nsid, uint64_t slba, uint32_t nlb, uint32_t max,
			sio_nvme_io_cb cb, void *arg)
{
	const struct sio_nvme_ns *ns;
	struct sio_nvme_ns tmp;
	struct cmdrec rec;
	int ret;

	if (!(q->cl->ci.oncs & oncs))
		return sio_err_set(ENOTSUP, "the controller does not support %s (ONCS bit %d)",
				   name, __builtin_ctz(oncs));
	ret = ns_get(q, nsid, &tmp, &ns);
	if (ret)
		return ret;
	if (!nlb || nlb > max || slba >= ns->nsze || nlb > ns->nsze - slba)
		return sio_err_set(EINVAL, "%s of %llu+%u outside namespace %u "
				   "(%llu blocks) or above %u blocks", name,
				   (unsigned long long)slba, nlb, nsid,
				   (unsigned long long)ns->nsze, max);
	rec.opc = opc;
	rec.nsid = nsid;
	rec.slba = slba;
	rec.nlb = nlb;
	return submit_simple(q, &rec, cb, arg);
}

int sio_nvme_ioq_write_zeroes(struct sio_nvme_ioq *q, uint32_t nsid, uint64_t slba,
			      uint32_t nlb, sio_nvme_io_cb cb, void *arg)
{
	return submit_range(q, nvme_cmd_write_zeroes, NVME_CTRL_ONCS_WRITE_ZEROES, "Write Zeroes",
			    nsid, slba, nlb, SIO_NVME_MAX_NLB, cb, arg);
}

int sio_nvme_ioq_verify(struct sio_nvme_ioq *q, uint32_t nsid, uint64_t slba, uint32_t nlb,
			sio_nvme_io_cb cb, void *arg)
{
	return submit_range(q, nvme_cmd_verify, NVME_CTRL_ONCS_VERIFY, "Verify", nsid, slba, nlb,
			    SIO_NVME_MAX_NLB, cb, arg);
}

int sio_nvme_ioq_deallocate(struct sio_nvme_ioq *q, uint32_t nsid, uint64_t slba, uint32_t nlb,
			    sio_nvme_io_cb cb, void *arg)
{
	/* a range's length is 32 bits */
	return submit_range(q, nvme_cmd_dsm, NVME_CTRL_ONCS_DSM, "Dataset Management", nsid, slba,
			    nlb, UINT32_MAX, cb, arg);
}

int sio_nvme_ioq_compare(struct sio_nvme_ioq *q, uint32_t nsid, uint64_t slba, uint32_t nlb,
			 struct sio_nvme_buf *buf, uint64_t off, sio_nvme_io_cb cb, void *arg)
{
	if (!(q->cl->ci.oncs & NVME_CTRL_ONCS_COMPARE))
		return sio_err_set(ENOTSUP, "the controller does not support Compare (ONCS bit 0)");
	return submit_rw(q, nvme_cmd_compare, nsid, slba, nlb, buf, off, cb, arg, compare_any);
}

int sio_nvme_ioq_flush(struct sio_nvme_ioq *q, uint32_t nsid, sio_nvme_io_cb cb, void *arg)
{
	struct cmdrec rec;

	rec.opc = nvme_cmd_flush;
	rec.nsid = nsid;
	rec.slba = 0;
	rec.nlb = 0;
	return submit_simple(q, &rec, cb, arg);
}

static void finish(struct sio_nvme_ioq *q, uint32_t ridx, int err, uint16_t status)
{
	struct ioreq *r = &q->reqs[ridx];
	sio_nvme_io_cb cb;
	void *arg;

	if (err && !r->err) {	/* (counted in the live counters by the caller) */
		r->err = err;
		r->status = status;
	}
	if (--r->remaining)
		return;
	cb = r->cb;
	arg = r->arg;
	err = r->err;
	status = r->status;
	req_put(q, ridx);
	if (cb)
		cb(arg, err, status);
}

void sio_nvme_req_chunk_done(void *arg, int err, uint16_t status)
{
	struct ioreq *r = arg;

	finish(r->q, (uint32_t)(r - r->q->reqs), err, status);
}

/* Command @tag of @p ended: its caller is told, or its request counts it. */
static inline void done(struct sio_nvme_ioq *q, struct qpair *p, uint32_t tag, uint64_t cookie,
			int err, uint16_t status)
{
	sio_nvme_io_cb cb = p->cbs[tag];

	if (err)
		q->qs->errors++;
	if (cb)
		cb((void *)(uintptr_t)cookie, err, status);
}

void sio_nvme_ioq_end(struct sio_nvme_ioq *q, struct qpair *p, uint32_t tag, uint64_t cookie,
		      int err, uint16_t status)
{
	done(q, p, tag, cookie, err, status);
}

/* No progress for too long, and no recovery: fail the queue, saying why. */
int sio_nvme_ioq_fail(struct sio_nvme_ioq *q)
{
	uint32_t csts = sio_nvme_csts(q->cl->regs);
	struct sio_device_info di;
	int err;

	if (sio_device_info(q->cl->dev, &di) == -ENODEV)
		err = sio_err_set(ENODEV, "queue %u: device %u is gone: its lender, node %d, "
				  "has left the fabric", q->qp[0].q.qid, q->cl->dinfo.id,
				  q->cl->dinfo.lender);
	else if (csts == 0xffffffffu)
		err = sio_err_set(ENODEV, "queue %u: controller registers read all ones "
				  "(device gone or link down)", q->qp[0].q.qid);
	else if (NVME_CSTS_CFS(csts))
		err = sio_err_set(EIO, "queue %u: controller fatal status", q->qp[0].q.qid);
	else if (q->mp && !q->act)
		err = sio_err_set(ETIMEDOUT, "queue %u: no path to the controller for "
				  "%u ms (both links down)", q->qp[0].q.qid, q->cl->timeout_ms);
	else
		err = sio_err_set(ETIMEDOUT, "queue %u: %u command(s) got no completion "
				  "within %u ms%s", q->qp[0].q.qid, sio_nvme_ioq_inflight(q),
				  q->cl->timeout_ms, q->mp ? " on either path" : "");
	return sio_nvme_ioq_fail_with(q, err);
}

int sio_nvme_ioq_fail_with(struct sio_nvme_ioq *q, int err)
{
	uint32_t cid, i;
	int p;

	q->failed = err;
	q->slow = true;
	sio_nvme_fast_off(q);
	for (p = 0; p < 2; p++) {
		struct qpair *qp = &q->qp[p];

		if (!qp->ids)
			continue;
		for (cid = 0; cid < qp->q.nslots; cid++) {
			if (sio_nvme_queue_tag_state(&qp->q, cid) != SIO_NVME_CID_BUSY)
				continue;
			/* The tag stays taken: the controller may still complete
			 * the command, and that completion is not delivered. */
			sio_nvme_queue_abandon(&qp->q, cid);
			done(q, qp, cid, qp->cookies[cid], err, 0);
		}
	}
	for (i = 0; i < q->npend; i++) {
		q->qs->errors++;
		finish(q, q->pend[i].ridx, err, 0);
	}
	q->npend = 0;
	return err;
}

/* Take @p's completions (at most @max, 0: all). A multipath queue sends a
 * command that met a data transfer error again, since a link failing under
 * it looks just so, unless the controller said Do Not Retry. Completions
 * that match no command in flight are consumed and counted by queue.h, and
 * do not count as progress; at most a queue's worth of entries is looked
 * at per call, so a controller posting garbage cannot keep us here.
 * Return: completions delivered. */
/* A multipath queue's command that met a data transfer error goes again
 * (on the path then active), unless it may not. Return: whether it will. */
static __attribute__((noinline)) bool resend(struct sio_nvme_ioq *q, struct qpair *p, int cid,
					     uint16_t status)
{
	if (SIO_NVME_STATUS_CODE(status) != NVME_SC_DATA_XFER_ERROR ||
	    SIO_NVME_STATUS_DNR(status) || p->rec[cid].retries >= 4 || q->npend >= q->pend_cap)
		return false;
	q->pend[q->npend] = p->rec[cid];
	q->pend[q->npend++].retries++;
	q->resubmitted++;
	return true;
}

/* @mp: the queue is multipath (a constant where it is known, so the fast
 * path of polling has no trace of it). */
static inline __attribute__((always_inline)) int
reap(struct sio_nvme_ioq *q, struct qpair *p, uint32_t max, bool ring, bool mp)
{
	uint64_t cookie;
	uint32_t seen, dw3;
	uint16_t st;
	int n = 0, cid;

	seen = 0;
	do {	/* a queue holds at least two entries */
		cid = sio_nvme__cq_take(&p->q, NULL, &dw3, &cookie);
		if (cid < 0) {
			if (cid == -EAGAIN)
				break;
			continue;
		}
		st = (uint16_t)(dw3 >> 16);
		n++;
		if (!mp || !st || !resend(q, p, cid, st))
			done(q, p, (uint32_t)cid, cookie, SIO_NVME_STATUS_CODE(st) ? -EIO : 0,
			     SIO_NVME_STATUS_CODE(st));
		if ((uint32_t)n == max)
			break;
	} while (++seen < p->q.size);
	if (ring)
		sio_nvme_cq_ring(&p->q);
	return n;
}

int sio_nvme_qpair_reap(struct sio_nvme_ioq *q, struct qpair *p, uint32_t max, bool ring)
{
	return reap(q, p, max, ring, q->mp);
}

int sio_nvme_ioq_hold(struct sio_nvme_ioq *q, bool on)
{
	if (q->mp && on)
		return sio_err_set(EINVAL, "a multipath queue pair rings its doorbell at every "
				   "submission (its commands may move to the other path)");
	q->hold = on;
	q->slow = on || q->mp || q->failed;
	if (q->slow)
		sio_nvme_fast_off(q);
	if (!on)
		sio_nvme_sq_ring(&q->qp[0].q);
	return 0;
}

void sio_nvme_ioq_ring(struct sio_nvme_ioq *q)
{
	if (q->hold && !q->failed)
		sio_nvme_sq_ring(&q->qp[0].q);	/* nothing written if nothing is new */
}

/* A poll that delivered nothing: only a queue that looks stuck reads the
 * clock, and one stuck past the timeout fails. */
static __attribute__((noinline)) int poll_idle(struct sio_nvme_ioq *q)
{
	uint64_t now;

	if (!sio_nvme_queue_inflight(&q->qp[0].q) || (++q->empty_polls & 255))
		return 0;
	/* Only a queue that looks stuck reads the clock, and the reset count:
	 * a queue pair a reset took, or that timed out, is made again. */
	if (sio_nvme_reset_moved(q))
		return sio_nvme_ioq_recover(q, false);
	/* a link to the lender down: what the controller posts is lost; pause
	 * for it at once (recover.c), not after the timeout */
	if (!q->mp && !sio_nvme_path_links_up(q->cl, 0))
		return sio_nvme_ioq_recover(q, true);
	now = sio__now_ns();
	if (!q->stall_since)
		q->stall_since = now;
	else if (now - q->stall_since > (uint64_t)q->cl->timeout_ms * 1000000ull)
		return sio_nvme_ioq_recover(q, true);
	return 0;
}

/* @n completions delivered: the queue is not stuck. */
static inline int progress(struct sio_nvme_ioq *q, int n)
{
	if (!n)
		return poll_idle(q);
	q->stall_since = 0;	/* (empty_polls only spaces the clock reads out) */
	q->qs->db_writes = q->qp[0].q.db_writes;
	return n;
}

/* Polling, all but the fast path: a failed, multipath or holding queue;
 * several completions at once, or an entry the queue rejected (@cid < 0,
 * not -EAGAIN); a completion already taken is delivered first. */
static __attribute__((noinline)) int poll_any(struct sio_nvme_ioq *q, uint32_t max, int cid,
					     uint32_t dw3, uint64_t cookie)
{
	struct qpair *p = &q->qp[0];
	uint16_t st = SIO_NVME_STATUS_CODE(dw3 >> 16);
	int n = 0;

	if (cid >= 0) {
		done(q, p, (uint32_t)cid, cookie, st ? -EIO : 0, st);
		n = 1;
	} else if (q->slow) {
		if (q->failed)
			return q->failed;
		if (q->mp)
			return sio_nvme_mp_poll(q, max);	/* held doorbells are refused there */
		sio_nvme_sq_ring(&p->q);	/* what was held back goes now */
	}
	if (!max || (uint32_t)n < max)
		n += reap(q, p, max ? max - (uint32_t)n : 0, false, false);
	sio_nvme_cq_ring(&p->q);
	return progress(q, n);
}

/*
 * The fast path: one completion taken and none behind it, the common case
 * at low depth. Its slot goes back to the controller and the stall clock
 * stops before its caller is told, so that nothing waits across the call.
 */
int sio_nvme_ioq_poll(struct sio_nvme_ioq *q, uint32_t max)
{
	struct qpair *p = &q->qp[0];
	sio_nvme_io_cb cb;
	uint32_t dw3;
	uint16_t st;
	int cid;

	if (q->slow)
		return poll_any(q, max, -EPROTO, 0, 0);
	/* the cookie is read last, from the array the queue was given: one
	 * value fewer to hold across the ring (its tag's entry stays until the
	 * tag is taken again, which nothing here does) */
	cid = sio_nvme__cq_take(&p->q, NULL, &dw3, NULL);
	if (cid < 0)
		return cid == -EAGAIN ? poll_idle(q) : poll_any(q, max, cid, 0, 0);
	if (max != 1 && sio_nvme_cq_peek(&p->q))
		return poll_any(q, max, cid, dw3, p->cookies[cid]);
	sio_nvme__cq_ring_new(&p->q);
	q->stall_since = 0;	/* (empty_polls only spaces the clock reads out) */
	q->qs->db_writes = p->q.db_writes;
	st = SIO_NVME_STATUS_CODE(dw3 >> 16);
	if (st)
		q->qs->errors++;
	cb = p->cbs[cid];
	if (cb)
		cb((void *)(uintptr_t)p->cookies[cid], st ? -EIO : 0, st);
	return 1;
}

int sio_nvme_ioq_wait(struct sio_nvme_ioq *q)
{
	struct sio_backoff b;
	int ret;

	sio_nvme_backoff_init_io(&b);
	while (sio_nvme_ioq_inflight(q)) {
		if (q->irq_vec >= 0) {	/* asleep on the CQ's interrupt, bounded */
			ret = sio_nvme_ioq_reap(q, 0, 1000000, NULL);
			if (ret < 0)
				return ret;
			continue;
		}
		ret = sio_nvme_ioq_poll(q, 0);
		if (ret < 0)
			return ret;
		if (ret > 0)
			sio_backoff_reset(&b);
		else
			sio_backoff_wait(&b);
	}
	return q->failed;
}

struct sync_done {
	int done;
	int err;
	uint16_t status;
};

static void sync_cb(void *arg, int err, uint16_t status)
{
	struct sync_done *d = arg;

	d->done = 1;
	d->err = err;
	d->status = status;
}

/* Wait for our request. The queue's own stall timeout ends it when the
 * controller stops answering (every request in flight then ends with
 * -ETIMEDOUT or -ENODEV); and with nothing in flight nothing can end it,
 * so that is an error at once rather than a wait forever. */
static int sync_wait(struct sio_nvme_ioq *q, struct sync_done *d, const char *what)
{
	struct sio_backoff b;
	int ret;

	sio_nvme_backoff_init_io(&b);
	while (!d->done) {
		/* with interrupts, asleep on them (bounded); else polled, backing off */
		ret = q->irq_vec >= 0 ? sio_nvme_ioq_reap(q, 0, 1000000, NULL) :
					sio_nvme_ioq_poll(q, 0);
		if (d->done)
			break;
		if (ret < 0)
			return ret;
		if (ret > 0)
			continue;
		if (!sio_nvme_ioq_inflight(q))
			return sio_err_set(EIO, "queue %u: %s is no longer in flight and "
					   "never completed", q->qp[0].q.qid, what);
		if (q->irq_vec < 0)
			sio_backoff_wait(&b);
	}
	if (d->err == -EIO)
		return sio_err_set(EIO, "%s failed: %s (status 0x%03x)", what,
				   sio_nvme_status_str(d->status), d->status);
	return d->err;
}

/* No room for a command: poll, back off, and give up once nothing has
 * completed for the timeout (a multipath queue with no path and nothing in
 * flight, say, which the queue's own stall timeout does not see).
 * Return: 0 to try again, or -errno. */
static int sync_room_wait(struct sio_nvme_ioq *q, struct sio_backoff *b, uint64_t *since)
{
	uint64_t now;
	int ret = sio_nvme_ioq_poll(q, 0);

	if (ret < 0)
		return ret;
	if (ret > 0) {
		*since = 0;
		return 0;
	}
	sio_backoff_wait(b);
	now = sio__now_ns();
	if (!*since)
		*since = now;
	else if (now - *since > (uint64_t)q->cl->timeout_ms * 1000000ull)
		return sio_err_set(ETIMEDOUT, "queue %u: no room for a command for %u ms "
				   "(%u in flight%s)", q->qp[0].q.qid, q->cl->timeout_ms,
				   sio_nvme_ioq_inflight(q), q->mp && !q->act ? ", no path" : "");
	return 0;
}

/* Submit with retries while the queue is full (others' async I/O). */
#define SYNC_SUBMIT(q, call, what) do {						\
	struct sync_done d = { 0, 0, 0 };					\
	struct sio_backoff b;						\
	uint64_t since_ = 0;							\
	int r_;									\
	sio_nvme_backoff_init_io(&b);						\
	while ((r_ = (call)) == -EAGAIN) {					\
		r_ = sync_room_wait((q), &b, &since_);				\
		if (r_ < 0)							\
			return r_;						\
	}									\
	if (r_)									\
		return r_;							\
	return sync_wait((q), &d, (what));					\
} while (0)

static int sync_rw1(struct sio_nvme_ioq *q, uint8_t opc, uint32_t nsid, uint64_t slba,
		    uint32_t nlb, struct sio_nvme_buf *buf, uint64_t off)
{
	SYNC_SUBMIT(q, opc == nvme_cmd_read ?
		    sio_nvme_ioq_read(q, nsid, slba, nlb, buf, off, sync_cb, &d) :
		    sio_nvme_ioq_write(q, nsid, slba, nlb, buf, off, sync_cb, &d),
		    opc == nvme_cmd_read ? "read" : "write");
}

/* Synchronous transfers of any size: pieces that fit half the queue. */
static int sync_rw(struct sio_nvme_ioq *q, uint8_t opc, uint32_t nsid, uint64_t slba,
		   uint32_t nlb, struct sio_nvme_buf *buf, uint64_t off)
{
	const struct sio_nvme_ns *ns;
	struct sio_nvme_ns tmp;
	uint64_t piece;
	uint32_t n, lba_size;
	int ret = ns_get(q, nsid, &tmp, &ns);

	if (ret)
		return ret;
	lba_size = ns->lba_size;
	piece = (uint64_t)(q->max_xfer / lba_size) * (q->depth - 1 > 2 ? (q->depth - 1) / 2 : 1);
	if (piece > 64ull * SIO_NVME_MAX_NLB)	/* at most 64 commands' worth */
		piece = 64ull * SIO_NVME_MAX_NLB;
	do {
		n = nlb > piece ? (uint32_t)piece : nlb;
		ret = sync_rw1(q, opc, nsid, slba, n, buf, off);
		slba += n;
		off += (uint64_t)n * lba_size;
		nlb -= n;
	} while (!ret && nlb);
	return ret;
}

int sio_nvme_read(struct sio_nvme_ioq *q, uint32_t nsid, uint64_t slba, uint32_t nlb,
		  struct sio_nvme_buf *buf, uint64_t off)
{
	return sync_rw(q, nvme_cmd_read, nsid, slba, nlb, buf, off);
}

int sio_nvme_write(struct sio_nvme_ioq *q, uint32_t nsid, uint64_t slba, uint32_t nlb,
		   struct sio_nvme_buf *buf, uint64_t off)
{
	return sync_rw(q, nvme_cmd_write, nsid, slba, nlb, buf, off);
}

int sio_nvme_write_zeroes(struct sio_nvme_ioq *q, uint32_t nsid, uint64_t slba, uint32_t nlb)
{
	SYNC_SUBMIT(q, sio_nvme_ioq_write_zeroes(q, nsid, slba, nlb, sync_cb, &d),
		    "write zeroes");
}

int sio_nvme_verify(struct sio_nvme_ioq *q, uint32_t nsid, uint64_t slba, uint32_t nlb)
{
	SYNC_SUBMIT(q, sio_nvme_ioq_verify(q, nsid, slba, nlb, sync_cb, &d), "verify");
}

int sio_nvme_deallocate(struct sio_nvme_ioq *q, uint32_t nsid, uint64_t slba, uint32_t nlb)
{
	SYNC_SUBMIT(q, sio_nvme_ioq_deallocate(q, nsid, slba, nlb, sync_cb, &d), "deallocate");
}

int sio_nvme_compare(struct sio_nvme_ioq *q, uint32_t nsid, uint64_t slba, uint32_t nlb,
		     struct sio_nvme_buf *buf, uint64_t off)
{
	SYNC_SUBMIT(q, sio_nvme_ioq_compare(q, nsid, slba, nlb, buf, off, sync_cb, &d), "compare");
}

int sio_nvme_flush(struct sio_nvme_ioq *q, uint32_t nsid)
{
	SYNC_SUBMIT(q, sio_nvme_ioq_flush(q, nsid, sync_cb, &d), "flush");
}
