/* SPDX-License-Identifier: MIT */
/*
 * Shadow doorbells (Doorbell Buffer Config, NVMe 1.4, 5.8), both sides.
 *
 * The controller's owner (the manager) makes one segment holding the
 * shadow doorbell page(s) and, after them, the EventIdx page(s), laid out
 * as BAR0's doorbells (queue y's SQ slot at 2y * stride, its CQ slot after),
 * maps it for the device and hands both addresses to the controller. The
 * segment lives on the owner's node, beside the controller: the controller
 * reads shadow doorbells (non-posted reads, cheapest near it), hosts store
 * them (posted writes, cheap from anywhere). Clients connect to the segment
 * and point their queue pairs' rings at their slots (queue.h).
 *
 * Not offered where the manager confines BAR0 (CAP.DSTRD >= 10): one shared
 * buffer would let a client write another's doorbells.
 */
#include <string.h>
#include <smartio/smartio.h>
#include "priv.h"
#include "client-priv.h"

/* The buffers' segment, mapped here and for the device: a kept one on the
 * lender's node (@kept_id, manager failover: the controller goes on using
 * it after its owner died) or a private one. */
static int dbbuf_seg(struct sio_nvme_ctrl *c, struct sio_nvme_dbbuf *d, uint32_t kept_id)
{
	struct sio_device *dev = sio_nvme_ctrl_device(c);
	struct sio_fabric *f = sio_device_fabric(dev);
	const struct sio_nvme_ctrl_info *ci = sio_nvme_ctrl_ci(c);
	struct sio_device_info di;
	uint64_t page = ci->page_size, bytes;
	void *va;
	int ret;

	memset(d, 0, sizeof(*d));
	d->stride = ci->db_stride;
	bytes = 2ull * (ci->io_queues + 1) * d->stride;
	d->size = (uint32_t)((bytes + page - 1) / page * page);
	if (kept_id) {
		ret = sio_device_info(dev, &di);
		if (!ret)
			ret = sio_nvme_kept_segment(f, di.lender, kept_id, 2ull * d->size, true,
						    "nvme-dbbuf", &d->seg, &va);
		if (ret)
			return ret;
	} else {
		ret = sio_segment_create(f, 0, 2ull * d->size, 0, &d->seg);
		if (ret)
			return sio_err_wrap(-ret, "cannot create the shadow doorbell segment");
		sio_segment_set_name(d->seg, "nvme-dbbuf");
		ret = sio_segment_map(d->seg, &va);
	}
	if (!ret)
		ret = sio_device_map(dev, d->seg, &d->bus);
	if (ret)
		return sio_err_wrap(-ret, "cannot map the shadow doorbells for the device");
	d->va = va;
	return 0;
}

/**
 * sio_nvme_dbbuf_open() - make the buffers and configure the controller
 * @c: controller, enabled, its I/O queue count known
 * @d: filled in
 * @kept_id: a kept segment's id (manager failover), or 0 for a private one
 * Return: 0, or -errno with the error set.
 */
int sio_nvme_dbbuf_open(struct sio_nvme_ctrl *c, struct sio_nvme_dbbuf *d, uint32_t kept_id)
{
	int ret;

	ret = dbbuf_seg(c, d, kept_id);
	if (!ret)
		ret = sio_nvme_dbbuf_config(c, d);
	if (ret)
		sio_nvme_dbbuf_close(sio_nvme_ctrl_device(c), d);
	return ret;
}

/**
 * sio_nvme_dbbuf_config() - give the controller the buffers, zeroed (after
 *	a reset too: it forgets them)
 * @c: controller, enabled
 * @d: the buffers
 * Return: 0, or -errno with the error set.
 */
int sio_nvme_dbbuf_config(struct sio_nvme_ctrl *c, struct sio_nvme_dbbuf *d)
{
	struct sio_nvme_cmd cmd;
	int ret;

	memset(d->va, 0, 2ull * d->size);
	sio_nvme_cmd_init(&cmd, nvme_admin_dbbuf, 0);
	cmd.prp1 = d->bus;
	cmd.prp2 = d->bus + d->size;
	ret = sio_nvme_ctrl_admin(c, &cmd, NULL, 0);
	return ret ? sio_err_wrap(-ret, "Doorbell Buffer Config") : 0;
}

/**
 * sio_nvme_dbbuf_adopt() - take over the buffers a crashed manager gave the
 *	controller, as they are: it goes on using them
 * @c: controller, adopted
 * @d: filled in
 * @kept_id: their kept segment
 * @bus: where the controller was told they are
 * @size: bytes of each buffer, as kept
 * Return: 0, or -ESTALE when they are not where the controller reads them.
 */
int sio_nvme_dbbuf_adopt(struct sio_nvme_ctrl *c, struct sio_nvme_dbbuf *d, uint32_t kept_id,
			 uint64_t bus, uint32_t size)
{
	int ret = dbbuf_seg(c, d, kept_id);

	if (!ret && (d->bus != bus || d->size != size))
		ret = sio_err_set(ESTALE, "the kept shadow doorbells are at 0x%llx (%u bytes), "
				  "the controller's at 0x%llx (%u bytes)",
				  (unsigned long long)d->bus, d->size, (unsigned long long)bus, size);
	if (ret)
		sio_nvme_dbbuf_close(sio_nvme_ctrl_device(c), d);
	return ret;
}

/** sio_nvme_dbbuf_close() - release the buffers (after the controller let go) */
void sio_nvme_dbbuf_close(struct sio_device *dev, struct sio_nvme_dbbuf *d)
{
	if (!d->seg)
		return;
	if (d->bus)
		sio_device_unmap(dev, d->seg);
	sio_segment_close(d->seg);
	memset(d, 0, sizeof(*d));
}

/** sio_nvme_dbbuf_publish() - where clients find the buffers (the mailbox header) */
void sio_nvme_dbbuf_publish(struct sio_nvme_mbox_dbbuf *m, const struct sio_nvme_dbbuf *d)
{
	struct sio_segment_info si;

	memset(m, 0, sizeof(*m));
	if (!d->seg || sio_segment_info(d->seg, &si))
		return;
	m->node = si.node;
	m->seg = si.id;
	m->size = d->size;
	m->stride = d->stride;
}

/* The slot of queue @qid's SQ (or CQ) doorbell in a buffer at @base. */
static volatile uint32_t *slot(uint8_t *base, uint32_t stride, uint32_t qid, bool cq)
{
	return (volatile uint32_t *)(base + (2ull * qid + (cq ? 1 : 0)) * stride);
}

/**
 * sio_nvme_dbbuf_reset() - queue @qid's shadow doorbells and EventIdx back to
 *	0, while no queue @qid exists. A stale EventIdx from an earlier queue of
 *	that id would tell the host not to ring for the new one, and a
 *	controller that publishes EventIdx only as it works (QEMU's) would then
 *	never look: its commands would wait for ever.
 */
void sio_nvme_dbbuf_reset(struct sio_nvme_dbbuf *d, uint32_t qid)
{
	if (!d->va)
		return;
	*slot(d->va, d->stride, qid, false) = 0;
	*slot(d->va, d->stride, qid, true) = 0;
	*slot(d->va + d->size, d->stride, qid, false) = 0;
	*slot(d->va + d->size, d->stride, qid, true) = 0;
	sio_nvme_wmb();
}

/**
 * sio_nvme_client_dbbuf() - connect to the manager's shadow doorbells, if
 *	it offers them (its mailbox says where)
 * @cl: client, its mailbox header read
 * Return: 0 (also when none are offered), or -errno.
 */
int sio_nvme_client_dbbuf(struct sio_nvme_client *cl)
{
	struct sio_nvme_mbox_dbbuf m;
	void *va;
	int ret;

	memcpy(&m, (const void *)&cl->mb->h.dbbuf, sizeof(m));
	if (!m.size || cl->confined)
		return 0;
	if (m.size % 4096 || m.size > (64u << 20) || m.stride != cl->ci.db_stride ||
	    2ull * (cl->ci.io_queues + 1) * m.stride > m.size)
		return sio_err_set(EPROTO, "the mailbox of device %u offers a bad shadow doorbell "
				   "buffer: refusing it", cl->dinfo.id);
	ret = sio_segment_connect(cl->f, m.node, m.seg, &cl->dbbuf.seg);
	if (!ret)
		ret = sio_segment_map(cl->dbbuf.seg, &va);
	if (ret) {
		sio_segment_close(cl->dbbuf.seg);
		cl->dbbuf.seg = NULL;
		return sio_err_wrap(-ret, "cannot map the shadow doorbells of device %u",
				    cl->dinfo.id);
	}
	cl->dbbuf.va = va;
	cl->dbbuf.size = m.size;
	cl->dbbuf.stride = m.stride;
	cl->dbbuf_local = m.node == sio_fabric_node_id(cl->f);
	cl->ci.dbbuf = true;
	return 0;
}

/**
 * sio_nvme_qpair_dbbuf() - have a queue pair ring through the shadow doorbells
 * @cl: client
 * @q: the queue pair's rings
 * @path: the path it takes: a multipath client's backup (1) writes the
 *	shadow through adapter 1, as its queues and doorbells go
 * @eventidx: ring BAR0 only as EventIdx asks (else at every submission)
 */
void sio_nvme_qpair_dbbuf(struct sio_nvme_client *cl, struct sio_nvme_queue *q, int path,
			  bool eventidx)
{
	struct sio_nvme_dbbuf *d = path ? &cl->dbbuf2 : &cl->dbbuf;

	if (!d->va)
		return;
	sio_nvme_queue_shadow(q, slot(d->va, d->stride, q->qid, false),
			      slot(d->va, d->stride, q->qid, true),
			      eventidx ? slot(d->va + d->size, d->stride, q->qid, false) : NULL,
			      eventidx ? slot(d->va + d->size, d->stride, q->qid, true) : NULL);
}
