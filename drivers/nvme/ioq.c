/* SPDX-License-Identifier: MIT */
/*
 * NVMe client queue pairs: queue specs, placing and mapping queue memory,
 * and having the manager create and delete them.
 */

#include <stdio.h>
#include <stdlib.h>
#include <strings.h>
#include "parse.h"
#include "client-priv.h"

/* ---- queue spec ---- */

static int parse_loc(const char *v, bool sq, int *out)
{
	if (!strcasecmp(v, "local"))
		*out = SIO_PLACE_LOCAL;
	else if (!strcasecmp(v, "lender") || !strcasecmp(v, "remote"))
		*out = SIO_PLACE_LENDER;
	else if (sq && (!strcasecmp(v, "device") || !strcasecmp(v, "cmb")))
		*out = SIO_PLACE_DEVICE;
	else if (!strcasecmp(v, "hint") || !strcasecmp(v, "auto"))
		*out = SIO_NVME_QLOC_HINT;
	else
		return -1;
	return 0;
}

/* The index of @v among @words, or -1. */
static int word(const char *v, const char *const *words, int n)
{
	for (int i = 0; i < n; i++)
		if (!strcmp(v, words[i]))
			return i;
	return -1;
}

int sio_nvme_qspec_parse(const char *s, struct sio_nvme_qspec *out)
{
	char buf[256], *tok, *save = NULL, *eq;
	uint64_t v;

	out->sq_loc = SIO_NVME_QLOC_HINT;
	out->cq_loc = SIO_NVME_QLOC_HINT;
	out->depth = 0;
	out->prio = 0;
	out->multipath = false;
	out->dptr = SIO_NVME_DPTR_AUTO;
	out->dbbuf = SIO_NVME_DBBUF_AUTO;
	out->completions = SIO_NVME_CPL_POLL;
	if (!s || !*s)
		return 0;
	if (strlen(s) >= sizeof(buf))
		return sio_err_set(EINVAL, "queue spec too long");
	strcpy(buf, s);
	for (tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		eq = strchr(tok, '=');
		if (!eq && !strcmp(tok, "multipath")) {
			out->multipath = true;
			continue;
		}
		if (!eq) {
			/* a bare word is a location: "--queue lender" */
			if (parse_loc(tok, true, &out->sq_loc))
				return sio_err_set(EINVAL, "queue spec: '%s' is not "
						   "key=value nor a location", tok);
			continue;
		}
		*eq++ = 0;
		if (!strcmp(tok, "location") || !strcmp(tok, "sq")) {
			if (parse_loc(eq, true, &out->sq_loc))
				return sio_err_set(EINVAL, "queue spec: location '%s' is "
						   "not local, lender, device or hint", eq);
		} else if (!strcmp(tok, "cq")) {
			if (parse_loc(eq, false, &out->cq_loc))
				return sio_err_set(EINVAL, "queue spec: cq '%s' is not "
						   "local, lender or hint", eq);
		} else if (!strcmp(tok, "depth") || !strcmp(tok, "qd")) {
			if (sio_parse_u64(eq, 2, SIO_NVME_QUEUE_MAX_SIZE, &v))
				return sio_err_set(EINVAL, "queue spec: depth '%s' out of "
						   "range 2..%u", eq, SIO_NVME_QUEUE_MAX_SIZE);
			out->depth = (uint32_t)v;
		} else if (!strcmp(tok, "prio")) {
			if (sio_parse_u64(eq, 0, 3, &v))
				return sio_err_set(EINVAL, "queue spec: prio '%s' out of "
						   "range 0..3", eq);
			out->prio = (uint32_t)v;
		} else if (!strcmp(tok, "multipath")) {
			if (strcmp(eq, "0") && strcmp(eq, "1"))
				return sio_err_set(EINVAL, "queue spec: multipath '%s' is "
						   "not 0 or 1", eq);
			out->multipath = *eq == '1';
		} else if (!strcmp(tok, "dptr")) {
			static const char *const w[] = { "auto", "prp", "sgl" };	/* SIO_NVME_DPTR_* */

			if ((out->dptr = word(eq, w, 3)) < 0)
				return sio_err_set(EINVAL, "queue spec: dptr '%s' is not auto, "
						   "prp or sgl", eq);
		} else if (!strcmp(tok, "dbbuf")) {
			static const char *const w[] = { "auto", "on", "off" };	/* SIO_NVME_DBBUF_* */

			if ((out->dbbuf = word(eq, w, 3)) < 0)
				return sio_err_set(EINVAL, "queue spec: dbbuf '%s' is not auto, "
						   "on or off", eq);
		} else if (!strcmp(tok, "completions")) {
			static const char *const w[] = { "poll", "irq", "adaptive",
							 "hybrid" };	/* SIO_NVME_CPL_* */

			if ((out->completions = word(eq, w, 4)) < 0)
				return sio_err_set(EINVAL, "queue spec: completions '%s' is not "
						   "poll, irq, adaptive or hybrid", eq);
		} else {
			return sio_err_set(EINVAL, "queue spec: unknown key '%s' (location, "
					   "cq, depth, prio, multipath, dptr, dbbuf, completions)", tok);
		}
	}
	return 0;
}


/* ---- queue pairs ---- */

/* A RAM segment for queue memory: by hints, here, or on the lender. */
static int queue_segment(struct sio_nvme_client *cl, struct sio_device *dev, int loc,
			 unsigned int hints, uint64_t size, struct sio_segment **seg, int *placed)
{
	enum sio_placement p;
	int ret;

	if (loc == SIO_NVME_QLOC_HINT) {
		ret = sio_segment_create_hinted(dev, size, hints, seg, &p);
		if (ret)
			return sio_err_wrap(-ret, "cannot place queue memory by hints");
		*placed = p;
		return 0;
	}
	if (loc == SIO_PLACE_LENDER && cl->dinfo.lender != sio_fabric_node_id(cl->f))
		ret = sio_segment_create_on(cl->f, cl->dinfo.lender, 0, size, 0, seg);
	else
		ret = sio_segment_create(cl->f, 0, size, 0, seg);
	if (ret)
		return sio_err_wrap(-ret, "cannot create queue memory on the %s",
				    loc == SIO_PLACE_LENDER ? "lender" : "local node");
	*placed = loc;
	return 0;
}

/* Map memory here, through the path's own adapter when it is remote. */
static int map_here(const struct qpair *p, struct sio_segment *seg, void **va)
{
	return p->path ? sio_segment_map_adapter(seg, p->path, va) : sio_segment_map(seg, va);
}

/* Place one queue's memory and map it here and for the device (through the
 * path's borrow). */
static int queue_mem(struct sio_nvme_client *cl, struct qpair *p, int loc, unsigned int hints,
		     uint64_t size, const char *name, struct sio_segment **seg, int *placed,
		     uint8_t **va, uint64_t *bus)
{
	int ret = queue_segment(cl, p->dev, loc, hints, size, seg, placed);

	if (ret)
		return ret;
	sio_segment_set_name(*seg, name);
	ret = map_here(p, *seg, (void **)va);
	if (ret)
		return sio_err_wrap(-ret, "cannot map queue memory");
	ret = sio_device_map(p->dev, *seg, bus);
	if (ret == -ENODEV)
		return sio_err_wrap(ENODEV, "cannot map queue memory for the device: its "
				    "lender, node %d, has left the fabric", cl->dinfo.lender);
	if (ret)
		return sio_err_wrap(-ret, "cannot map queue memory for the device");
	return 0;
}

/* @v rounded up to the controller's memory page (a power of two). */
static uint64_t align_page(const struct sio_nvme_ioq *q, uint64_t v)
{
	return (v + q->page - 1) & ~((uint64_t)q->page - 1);
}

/*
 * Map qid's doorbells through @dev and @path's adapter. Confined (manager.h),
 * just its SQ tail and CQ head doorbell pages, through a BAR0 handle of their
 * own: the range up to the next queue's SQ doorbell, qid's alone. Otherwise
 * the whole-BAR0 mapping serves.
 */
static int doorbells_map(struct sio_nvme_client *cl, struct sio_device *dev, int path,
			 uint16_t qid, struct sio_nvme_doorbells *out)
{
	uint64_t sq_off = sio_nvme_doorbell_offset(qid, 0, cl->ci.db_stride);
	uint64_t cq_off = sio_nvme_doorbell_offset(qid, 1, cl->ci.db_stride);
	struct sio_segment_info si;
	struct sio_errsave es;
	volatile uint8_t *base;
	int ret;

	memset(out, 0, sizeof(*out));
	if (!qid || qid > cl->ci.io_queues)
		return sio_err_set(EINVAL, "queue id %u out of range 1..%u", qid,
				   cl->ci.io_queues);
	if (!cl->confined) {
		base = path ? cl->regs2 : cl->regs0;
		out->sq_db = (volatile uint32_t *)(base + sq_off);
		out->cq_db = (volatile uint32_t *)(base + cq_off);
		out->va = (void *)base;
		out->len = sio_segment_info(path ? cl->bar0_2 : cl->bar0, &si) ? 0 : si.size;
		return 0;
	}
	ret = sio_device_bar(dev, 0, &out->seg);
	if (ret)
		return sio_err_wrap(-ret, "cannot reach BAR0 of device %u", cl->dinfo.id);
	ret = sio_segment_map_range(out->seg, path ? path : -1, sq_off, 2ull * cl->ci.db_stride,
				    0, &out->va);
	if (ret) {
		ret = sio_err_wrap(-ret, "cannot map the doorbell pages of queue %u "
				   "(BAR0 0x%llx+0x%x)", qid, (unsigned long long)sq_off,
				   2 * cl->ci.db_stride);
		sio_err_save(&es);
		sio_segment_close(out->seg);
		sio_err_restore(&es);
		memset(out, 0, sizeof(*out));
		return ret;
	}
	out->len = 2ull * cl->ci.db_stride;
	out->sq_db = (volatile uint32_t *)out->va;
	out->cq_db = (volatile uint32_t *)((uint8_t *)out->va + (cq_off - sq_off));
	return 0;
}

int sio_nvme_client_doorbells(struct sio_nvme_client *cl, uint16_t qid,
			      struct sio_nvme_doorbells *out)
{
	if (!cl || !out)
		return sio_err_set(EINVAL, "sio_nvme_client_doorbells: NULL argument");
	return doorbells_map(cl, cl->dev, 0, qid, out);
}

void sio_nvme_client_doorbells_unmap(struct sio_nvme_doorbells *db)
{
	if (!db)
		return;
	sio_segment_close(db->seg);	/* unmaps */
	memset(db, 0, sizeof(*db));
}

static void qpair_doorbells_unmap(struct qpair *p)
{
	if (!p->db.seg)
		return;
	/* A stray ring after this lands in memory of our own, not a fault. */
	p->q.sq_db = &p->db_sink[0];
	p->q.cq_db = &p->db_sink[1];
	sio_nvme_client_doorbells_unmap(&p->db);
}

static void qpair_free(struct sio_nvme_client *cl, struct qpair *p)
{
	struct sio_nvme_mbox_req req;
	struct sio_nvme_mbox_resp resp;

	qpair_doorbells_unmap(p);
	if (p->sq_seg) {
		sio_device_unmap(p->dev, p->sq_seg);
		sio_segment_close(p->sq_seg);
	}
	if (p->cq_seg) {
		sio_device_unmap(p->dev, p->cq_seg);
		sio_segment_close(p->cq_seg);
	}
	if (p->cq_arena)
		sio_nvme_arena_free(cl, p->cq_off);
	p->cq_arena = false;
	sio_segment_close(p->cmb_seg);
	if (p->sq_cmb) {
		memset(&req, 0, sizeof(req));
		req.op = SIO_MBOX_OP_CMB_FREE;
		req.value = p->cmb_off;
		sio_nvme_mbox_call(cl, &req, &resp);
	}
	free(p->cids);
	free(p->cookies);
	free(p->ids);
	free(p->cbs);
	free(p->sent);
	free(p->side);
	free(p->rec);
	memset(p, 0, sizeof(*p));
}

/* Delete the queue pairs that exist in the controller and free the rest.
 * Return: 0, or the first deletion's failure. */
static int ioq_delete_free(struct sio_nvme_ioq *q)
{
	int ret = 0, r, p;

	sio_nvme_cpl_release(q);
	for (p = 0; p < 2; p++) {
		if (!q->qp[p].live)
			continue;
		r = sio_nvme_qpair_delete(q, &q->qp[p]);
		if (r && !ret)
			ret = r;
	}
	qpair_free(q->cl, &q->qp[0]);
	qpair_free(q->cl, &q->qp[1]);
	free(q->reqs);
	free(q->req_stack);
	free(q->pend);
	free(q);
	return ret;
}

/* Ask the manager for a queue pair over the given memory; @flags SIO_MBOX_QP_*. */
static int create_req(struct sio_nvme_client *cl, uint64_t sq_bus, uint64_t cq_bus,
		      uint32_t depth, uint32_t prio, uint32_t flags, uint16_t *qid)
{
	struct sio_nvme_mbox_req req;
	struct sio_nvme_mbox_resp resp;
	uint64_t page;
	int ret;

	if (!cl || !qid)
		return sio_err_set(EINVAL, "sio_nvme_ioq_create_at: NULL argument");
	page = cl->ci.page_size;
	if (depth < 2 || depth > cl->ci.mqes)
		return sio_err_set(EINVAL, "queue depth %u out of range 2..%u (CAP.MQES)",
				   depth, cl->ci.mqes);
	if (prio > 3)
		return sio_err_set(EINVAL, "SQ priority %u out of range 0..3", prio);
	if (!sq_bus || !cq_bus || ((sq_bus | cq_bus) & (page - 1)))
		return sio_err_set(EINVAL, "queue addresses 0x%llx (SQ) and 0x%llx (CQ) "
				   "must be non-zero and %llu-byte aligned",
				   (unsigned long long)sq_bus, (unsigned long long)cq_bus,
				   (unsigned long long)page);
	memset(&req, 0, sizeof(req));
	req.op = SIO_MBOX_OP_CREATE_QP;
	req.qsize = depth;
	req.bus1 = sq_bus;
	req.bus2 = cq_bus;
	req.cdw10 = prio;
	req.cdw11 = flags;
	ret = sio_nvme_mbox_call(cl, &req, &resp);
	if (ret)
		return ret;
	*qid = resp.qid;
	return 0;
}

/* Have the manager create @p's queues in the controller over the memory it
 * has, and point the host's view of them there, as new. */
int sio_nvme_qpair_create(struct sio_nvme_ioq *q, struct qpair *p)
{
	struct sio_errsave es;
	uint16_t qid = 0;
	int ret;

	ret = create_req(q->cl, p->sq_bus, p->cq_bus, q->depth, q->prio,
			 sio_nvme_cpl_irq(q->cpl_mode) ? SIO_MBOX_QP_IRQ : 0, &qid);
	if (ret)
		return ret;
	ret = sio_nvme_queue_init(&p->q, qid, q->depth, p->sq_va, p->cq_va, NULL, NULL,
				  p->cids, p->cookies, p->ids);
	if (ret)
		ret = sio_err_set(-ret, "queue %u: depth %u out of range 2..%u", qid,
				  q->depth, SIO_NVME_QUEUE_MAX_SIZE);
	else
		ret = doorbells_map(q->cl, p->dev, p->path, qid, &p->db);
	if (ret) {
		sio_err_save(&es);
		sio_nvme_ioq_delete_at(q->cl, qid);
		sio_err_restore(&es);
		return ret;
	}
	p->q.sq_db = p->db.sq_db;
	p->q.cq_db = p->db.cq_db;
	/* With Doorbell Buffer Config on, a controller may read the shadow
	 * alone (QEMU's does): every queue writes it, a multipath queue's
	 * backup through adapter 1; EventIdx decides the MMIO rings of those
	 * that read it (q->dbbuf), the others ring every time. */
	sio_nvme_qpair_dbbuf(q->cl, &p->q, p->path, q->dbbuf);
	p->live = true;
	return 0;
}

int sio_nvme_qpair_delete(struct sio_nvme_ioq *q, struct qpair *p)
{
	/* Unmapped first: the manager revokes the grant when it deletes. */
	qpair_doorbells_unmap(p);
	p->live = false;
	return sio_nvme_ioq_delete_at(q->cl, p->q.qid);
}

/*
 * A CQ that goes on this node goes in the client's arena (arena.c), with
 * what shares its memory: no window of its own. Not for multipath queues,
 * whose memory is mapped again when a path comes back.
 */
static bool cq_in_arena(struct sio_nvme_ioq *q, struct qpair *p, int loc, uint64_t bytes)
{
	struct sio_nvme_slice sl;

	if (q->mp || p->path)
		return false;
	if (loc == SIO_NVME_QLOC_HINT)
		loc = sio_hint_place(p->dev, SIO_HINT_DEVICE_WRITE | SIO_HINT_HOST_READ);
	if (loc != SIO_PLACE_LOCAL || sio_nvme_arena_alloc(q->cl, bytes, &sl))
		return false;
	p->cq_arena = true;
	p->cq_off = sl.off;
	p->cq_place = SIO_PLACE_LOCAL;
	p->cq_va = sl.va;
	p->cq_bus = sl.bus;
	return true;
}

/* Place and map one queue pair's memory for @p->dev, and create it. */
static int qpair_setup(struct sio_nvme_ioq *q, struct qpair *p, const struct sio_nvme_qspec *spec)
{
	struct sio_nvme_client *cl = q->cl;
	struct sio_nvme_mbox_req req;
	struct sio_nvme_mbox_resp resp;
	uint64_t sq_bytes, cq_bytes, prp_bytes, cq_seg_bytes;
	uint32_t nslots = q->depth - 1;
	bool prp_with_sq, sq_in_cq;
	int ret;

	p->cids = calloc(nslots, sizeof(*p->cids));
	p->cookies = calloc(nslots, sizeof(*p->cookies));
	p->ids = calloc(nslots, sizeof(*p->ids));
	p->cbs = calloc(nslots, sizeof(*p->cbs));
	p->sent = calloc(nslots, sizeof(*p->sent));
	p->side = calloc(nslots, sizeof(*p->side));
	p->rec = q->mp ? calloc(nslots, sizeof(*p->rec)) : NULL;
	if (!p->cids || !p->cookies || !p->ids || !p->cbs || !p->sent || !p->side || (q->mp && !p->rec))
		return sio_err_set(ENOMEM, "out of memory");
	sq_bytes = align_page(q, (uint64_t)q->depth * sizeof(struct sio_nvme_cmd));
	cq_bytes = align_page(q, (uint64_t)q->depth * sizeof(struct sio_nvme_cpl));
	prp_bytes = align_page(q, (uint64_t)nslots * q->prp_stride);
	p->cq_bytes = cq_bytes;
	/* PRP lists are written by the host and read by the device, like the
	 * SQ: they go with it unless it sits in the CMB. */
	prp_with_sq = spec->sq_loc != SIO_PLACE_DEVICE;
	sq_in_cq = spec->sq_loc == spec->cq_loc && spec->sq_loc != SIO_NVME_QLOC_HINT;

	cq_seg_bytes = cq_bytes + (sq_in_cq ? sq_bytes : 0) +
		       (!prp_with_sq || sq_in_cq ? prp_bytes : 0);
	if (!cq_in_arena(q, p, spec->cq_loc, cq_seg_bytes)) {
		ret = queue_mem(cl, p, spec->cq_loc, SIO_HINT_DEVICE_WRITE | SIO_HINT_HOST_READ,
				cq_seg_bytes, p->path ? "nvme-cq-backup" : "nvme-cq",
				&p->cq_seg, &p->cq_place, &p->cq_va, &p->cq_bus);
		if (ret)
			return ret;
	}
	p->cq_seg_bus = p->cq_bus;
	memset(p->cq_va, 0, cq_bytes);
	if (sq_in_cq) {
		p->sq_va = p->cq_va + cq_bytes;
		p->sq_bus = p->cq_bus + cq_bytes;
		p->sq_place = p->cq_place;
		p->prp_va = (uint64_t *)(p->sq_va + sq_bytes);
		p->prp_bus = p->sq_bus + sq_bytes;
	} else if (spec->sq_loc == SIO_PLACE_DEVICE) {
		void *bva;

		if (!cl->ci.cmb.sqs)
			return sio_err_set(ENOTSUP, "device %u's CMB does not take SQs",
					   cl->dinfo.id);
		memset(&req, 0, sizeof(req));
		req.op = SIO_MBOX_OP_CMB_ALLOC;
		req.value = sq_bytes;
		ret = sio_nvme_mbox_call(cl, &req, &resp);
		if (ret)
			return ret;
		p->sq_cmb = true;
		p->cmb_off = resp.value;
		ret = sio_device_bar(p->dev, cl->ci.cmb.bar, &p->cmb_seg);
		if (!ret)
			ret = map_here(p, p->cmb_seg, &bva);
		if (ret)
			return sio_err_wrap(-ret, "cannot map the CMB (BAR%d)", cl->ci.cmb.bar);
		p->sq_va = (uint8_t *)bva + cl->ci.cmb.offset + p->cmb_off;
		p->sq_bus = cl->ci.cmb.bus + p->cmb_off;
		p->sq_place = SIO_PLACE_DEVICE;
		p->prp_va = (uint64_t *)(p->cq_va + cq_bytes);
		p->prp_bus = p->cq_bus + cq_bytes;
	} else {
		ret = queue_mem(cl, p, spec->sq_loc, SIO_HINT_DEVICE_READ | SIO_HINT_HOST_WRITE,
				sq_bytes + prp_bytes, p->path ? "nvme-sq-backup" : "nvme-sq",
				&p->sq_seg, &p->sq_place, &p->sq_va, &p->sq_bus);
		if (ret)
			return ret;
		p->sq_seg_bus = p->sq_bus;
		p->prp_va = (uint64_t *)(p->sq_va + sq_bytes);
		p->prp_bus = p->sq_bus + sq_bytes;
	}
	return sio_nvme_qpair_create(q, p);
}

/* What @spec asks of @cl's controller, checked; the depth it gets in *@depth. */
static int spec_check(const struct sio_nvme_client *cl, const struct sio_nvme_qspec *spec,
		      uint32_t *depth)
{
	*depth = spec->depth ? spec->depth : 256;
	if (*depth > SIO_NVME_QUEUE_MAX_SIZE)
		return sio_err_set(EINVAL, "queue depth %u above %u, the most the driver "
				   "tracks (12-bit command tags)", *depth,
				   SIO_NVME_QUEUE_MAX_SIZE);
	if (*depth > cl->ci.mqes)
		*depth = cl->ci.mqes;
	if (*depth < 2)
		return sio_err_set(EINVAL, "queue depth %u below 2", *depth);
	if (spec->prio > 3)
		return sio_err_set(EINVAL, "SQ priority %u out of range 0..3", spec->prio);
	if (spec->sq_loc == SIO_PLACE_DEVICE && !cl->ci.cmb.size)
		return sio_err_set(ENODEV, "location=device needs a controller memory "
				   "buffer, and device %u has none (nvme-emu --cmb MIB gives the "
				   "emulated controller one)", cl->dinfo.id);
	if (spec->cq_loc == SIO_PLACE_DEVICE)
		return sio_err_set(EINVAL, "the CQ cannot be placed in the device");
	if (spec->dptr < SIO_NVME_DPTR_AUTO || spec->dptr > SIO_NVME_DPTR_SGL)
		return sio_err_set(EINVAL, "data pointer choice %d is not auto, prp or sgl",
				   spec->dptr);
	if (spec->dbbuf < SIO_NVME_DBBUF_AUTO || spec->dbbuf > SIO_NVME_DBBUF_OFF)
		return sio_err_set(EINVAL, "shadow doorbell choice %d is not auto, on or off",
				   spec->dbbuf);
	if (spec->dbbuf == SIO_NVME_DBBUF_ON && (!cl->dbbuf.va || spec->multipath))
		return sio_err_set(ENOTSUP, "dbbuf=on: %s", spec->multipath ?
				   "a multipath queue keeps MMIO doorbells" :
				   "the manager offers no shadow doorbells (Doorbell Buffer Config)");
	if (spec->completions < SIO_NVME_CPL_POLL || spec->completions > SIO_NVME_CPL_HYBRID)
		return sio_err_set(EINVAL, "completion mode %d is not poll, irq, adaptive or hybrid",
				   spec->completions);
	if (spec->completions == SIO_NVME_CPL_IRQ && spec->multipath)
		return sio_err_set(ENOTSUP, "completions=irq: a multipath queue polls both paths "
				   "(completions=adaptive polls it, saying so)");
	if (spec->dptr == SIO_NVME_DPTR_SGL && cl->ci.sgl == SIO_NVME_SGL_NONE)
		return sio_err_set(ENOTSUP, "dptr=sgl: device %u takes PRPs only (Identify SGLS)",
				   cl->dinfo.id);
	return 0;
}

/* The host's side of a queue pair, before any memory is placed: its
 * settings from @spec, the request table and the free stack. */
static struct sio_nvme_ioq *ioq_alloc(struct sio_nvme_client *cl,
				      const struct sio_nvme_qspec *spec, uint32_t depth)
{
	struct sio_nvme_ioq *q = calloc(1, sizeof(*q));
	uint32_t i, nreqs;

	if (!q)
		return NULL;
	q->cl = cl;
	q->mp = spec->multipath;
	q->slow = q->mp;
	sio_nvme_fast_off(q);
	q->prio = (uint16_t)spec->prio;
	q->irq_vec = -1;
	/* asked for: what the manager is asked to create; settled once it is */
	q->cpl_mode = spec->multipath ? SIO_NVME_CPL_POLL : spec->completions;
	if (spec->multipath && spec->completions)
		snprintf(q->cpl_note, sizeof(q->cpl_note), "a multipath queue polls both paths");
	q->depth = depth;
	q->page = cl->ci.page_size;
	q->page_mask = q->page - 1;
	q->max_xfer = cl->ci.max_xfer;
	q->sgl = spec->dptr == SIO_NVME_DPTR_PRP ? SIO_NVME_SGL_NONE : cl->ci.sgl;
	q->sgl_always = spec->dptr == SIO_NVME_DPTR_SGL;
	/* PRPs start at a dword; byte-granular SGL data blocks anywhere */
	q->off_mask = q->sgl == SIO_NVME_SGL_BYTE ? 0 : 3;
	q->dbbuf = !spec->multipath && (spec->dbbuf == SIO_NVME_DBBUF_ON ||
					(spec->dbbuf == SIO_NVME_DBBUF_AUTO && cl->dbbuf_local));
	/* A multipath queue can hold a full queue on each path at once (one
	 * draining while the other fills), or one full and one to resend. */
	nreqs = (depth - 1) * (q->mp ? 2 : 1);
	q->reqs = calloc(nreqs, sizeof(*q->reqs));
	q->req_stack = calloc(nreqs, sizeof(*q->req_stack));
	if (q->mp) {
		q->pend_cap = nreqs;
		q->pend = calloc(nreqs, sizeof(*q->pend));
	}
	if (!q->reqs || !q->req_stack || (q->mp && !q->pend)) {
		free(q->reqs);
		free(q->req_stack);
		free(q->pend);
		free(q);
		return NULL;
	}
	for (i = 0; i < nreqs; i++)
		q->req_stack[i] = (uint16_t)(nreqs - 1 - i);
	q->nreq_free = nreqs;
	/* Per-cid PRP list: max_xfer/page entries, a power of two dividing the
	 * page, so no list crosses a page boundary. */
	q->prp_stride = q->max_xfer / q->page * 8;
	if (q->prp_stride < 64)
		q->prp_stride = 64;
	return q;
}

/* The memory of each path's queue pair placed, mapped and created, and
 * its completions set up; what was made goes again on a failure. */
static int ioq_make(struct sio_nvme_client *cl, const struct sio_nvme_qspec *spec,
		    uint32_t depth, struct sio_nvme_ioq **out)
{
	struct sio_errsave es;
	struct sio_nvme_ioq *q = ioq_alloc(cl, spec, depth);
	int ret;

	if (!q)
		return sio_err_set(ENOMEM, "out of memory");
	q->qp[0].dev = cl->dev;
	q->qp[0].path = 0;
	ret = qpair_setup(q, &q->qp[0], spec);
	if (!ret && q->mp) {
		q->qp[1].dev = cl->dev2;
		q->qp[1].path = 1;
		ret = qpair_setup(q, &q->qp[1], spec);
	}
	if (!ret)
		ret = sio_nvme_cpl_setup(q, spec->completions);
	if (ret) {
		sio_err_save(&es);
		ioq_delete_free(q);
		sio_err_restore(&es);
		return ret;
	}
	*out = q;
	return 0;
}

int sio_nvme_ioq_create(struct sio_nvme_client *cl, const struct sio_nvme_qspec *spec,
			struct sio_nvme_ioq **out)
{
	struct sio_nvme_qspec def;
	struct sio_nvme_ioq *q;
	uint32_t depth;
	uint64_t t0;
	int ret;

	if (!cl || !out)
		return sio_err_set(EINVAL, "sio_nvme_ioq_create: NULL argument");
	if (!spec) {
		sio_nvme_qspec_parse(NULL, &def);
		spec = &def;
	}
	ret = spec_check(cl, spec, &depth);
	if (!ret && spec->multipath)
		ret = sio_nvme_client_second_path(cl);
	if (ret)
		return ret;
	/* from now on this process's windows to the lender are mapped again,
	 * after a link's loss, by a queue's recovery alone (recover.c): never
	 * behind its back, between a command lost and a doorbell that lands */
	if (!spec->multipath)
		sio_nvme_path_resume(cl, 0);
	/* a link that goes down meanwhile: made again once it is back */
	t0 = sio__now_ns();
	while ((ret = ioq_make(cl, spec, depth, &q)) &&
	       !(ret = sio_nvme_setup_again(cl, ret, t0, !spec->multipath)))
		;
	if (ret)
		return ret;
	q->act = &q->qp[0];
	/* a reset under way when it was made (odd) took it too */
	q->resets_seen = sio_nvme_resets(cl) & ~1u;
	q->seen_gen = __atomic_load_n(&cl->link_gen, __ATOMIC_ACQUIRE);
	sio_nvme_stats_attach(q);
	q->next = cl->queues;
	cl->queues = q;
	*out = q;
	return 0;
}

int sio_nvme_ioq_create_at(struct sio_nvme_client *cl, uint64_t sq_bus, uint64_t cq_bus,
			   uint32_t depth, uint32_t prio, uint16_t *qid)
{
	return create_req(cl, sq_bus, cq_bus, depth, prio, 0, qid);
}

int sio_nvme_ioq_delete_at(struct sio_nvme_client *cl, uint16_t qid)
{
	struct sio_nvme_mbox_req req;
	struct sio_nvme_mbox_resp resp;

	if (!cl)
		return sio_err_set(EINVAL, "sio_nvme_ioq_delete_at: NULL client");
	if (!qid || qid > cl->ci.io_queues)
		return sio_err_set(EINVAL, "queue id %u out of range 1..%u", qid,
				   cl->ci.io_queues);
	memset(&req, 0, sizeof(req));
	req.op = SIO_MBOX_OP_DELETE_QP;
	req.qid = qid;
	return sio_nvme_mbox_call(cl, &req, &resp);
}

void sio_nvme_ioq_close(struct sio_nvme_ioq *q)
{
	struct sio_nvme_ioq **pp;

	if (!q)
		return;
	for (pp = &q->cl->queues; *pp; pp = &(*pp)->next)
		if (*pp == q) {
			*pp = q->next;
			break;
		}
	sio_nvme_stats_detach(q);
	ioq_delete_free(q);
}

int sio_nvme_ioq_info(const struct sio_nvme_ioq *q, struct sio_nvme_ioq_info *out)
{
	const struct sio_nvme_queue *sq;

	if (!q || !out)
		return sio_err_set(EINVAL, "sio_nvme_ioq_info: NULL argument");
	sq = &q->qp[0].q;
	memset(out, 0, sizeof(*out));
	out->qid = q->qp[0].q.qid;
	out->depth = q->depth;
	out->max_inflight = q->depth - 1;
	out->sq_place = q->qp[0].sq_place;
	out->cq_place = q->qp[0].cq_place;
	out->multipath = q->mp;
	out->path = q->act ? q->act->path : -1;
	out->backup_qid = q->mp && q->qp[1].live ? q->qp[1].q.qid : 0;
	out->failovers = q->failovers;
	out->restores = q->restores;
	out->resubmitted = q->resubmitted;
	out->stale = q->stale + sio_nvme_queue_ignored(&q->qp[0].q) +
		     sio_nvme_queue_ignored(&q->qp[1].q);
	out->sgl_cmds = q->sgl_cmds;
	out->shadow_doorbells = q->qp[0].q.sq_ei != NULL;	/* rings as EventIdx says */
	out->db_writes = q->qp[0].q.db_writes + q->qp[1].q.db_writes;
	out->recoveries = q->recoveries;
	out->timeouts = q->timeouts;
	out->completions = q->cpl_mode;
	out->irq_vector = q->irq_vec;
	snprintf(out->completions_note, sizeof(out->completions_note), "%s", q->cpl_note);
	out->sleeps = q->sleeps;
	out->wakeups_lost = q->wakeups_lost;
	out->sleeps_direct = q->sleeps_direct;
	out->link_flaps = q->link_flaps;
	out->paused_ns = q->paused_ns;
	out->inflight = sio_nvme_ioq_inflight(q);
	out->sq_tail = sq->sq_tail;
	out->sq_rung = sq->sq_rung;
	out->sq_head = sq->sq_head;
	out->cq_head = sq->cq_head;
	out->cq_phase = sq->cq_phase;
	/* as the controller left it: read once, acquire, as a poll does */
	if (sq->cq)
		out->cq_head_phase = __atomic_load_n(&sq->cq[sq->cq_head].status,
						     __ATOMIC_ACQUIRE) & 1;
	return 0;
}

uint32_t sio_nvme_ioq_inflight(const struct sio_nvme_ioq *q)
{
	uint32_t n = sio_nvme_queue_inflight(&q->qp[0].q);

	if (q->mp)
		n += sio_nvme_queue_inflight(&q->qp[1].q) + q->npend;
	return n;
}
