/* SPDX-License-Identifier: MIT */
/*
 * NVMe controller bring-up and admin commands, written to the NVMe base
 * specification (reset/enable handshake, CAP.TO bounded waits, admin queue
 * pair, Identify, Set Features Number of Queues, I/O queue creation).
 */

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "priv.h"

/* Admin memory: one segment holding the SQ, the CQ and a scratch page. */
#define ADM_SQ_OFF	0x0000u
#define ADM_CQ_OFF	SIO_NVME_ADM_CQ_OFF
#define ADM_SCRATCH_OFF	0x2000u
#define ADM_KEEP_OFF	0x3000u
#define ADM_SEG_SIZE	0x4000u

/*
 * In a kept admin segment (priv.h), what a successor needs to go on with
 * the admin queue where a crashed manager left it: the registers it set,
 * and the queue positions, the SQ tail recorded before the doorbell.
 */
#define ADM_KEEP_MAGIC	0x5045454b4d4441ull	/* "ADMKEEP" */
struct adm_keep {
	uint64_t magic;		/* written last */
	uint64_t bus;		/* the segment's address for the device */
	uint32_t cc, aqa;	/* as enabled */
	uint16_t sq_tail;
	uint16_t cq_head;
	uint8_t cq_phase;
	uint8_t inflight;	/* commands rung (or about to be), completions not consumed */
	uint8_t naer;		/* Asynchronous Event Requests outstanding: they never */
	uint16_t aer_cid[SIO_NVME_ADMIN_AERS];	/* complete on their own: a successor
						 * claims their ids */
	uint64_t dbbuf_bus;	/* the shadow doorbells given to the controller (0: none) */
	uint32_t dbbuf_size;
};


/* The kept shadow doorbell segment's id: beside the admin segment's (priv.h). */
#define DBBUF_SEGID_DELTA	(SIO_NVME_DBBUF_SEGID(0) - SIO_NVME_ADM_SEGID(0))

struct sio_nvme_ctrl {
	struct sio_device *dev;
	struct sio_segment *bar0;
	volatile uint8_t *regs;
	uint64_t bar0_size;
	struct sio_segment *adm_seg;
	uint8_t *adm_va;
	uint64_t adm_bus;
	struct adm_keep *keep;	/* in a kept admin segment, else NULL */
	struct sio_nvme_queue admin;
	uint16_t adm_cids[SIO_NVME_ADMIN_DEPTH];
	uint64_t adm_cookies[SIO_NVME_ADMIN_DEPTH];
	uint16_t adm_ids[SIO_NVME_ADMIN_DEPTH];
	struct sio_nvme_cmd adm_copy[SIO_NVME_ADMIN_DEPTH];	/* each SQ slot's last (adm_mend()) */
	uint32_t adm_calls;	/* sio_nvme_ctrl_admin_many() calls: their cookies' top half */
	bool adm_dark;		/* the registers read all ones since the last mend */
	bool admin_broken;	/* an admin command timed out: a reset is due */
	bool enabled;
	bool gone;		/* its device left the fabric (sio_nvme_ctrl_gone()) */
	struct sio_nvme_dbbuf dbbuf;	/* shadow doorbells, when configured */
	uint32_t aer_armed;		/* Asynchronous Event Requests outstanding */
	uint32_t aen[SIO_NVME_AEN_MAX];	/* their completions' DW0, not yet taken */
	uint32_t naen;
	struct sio_nvme_ctrl_info info;
	struct nvme_id_ctrl id;
	struct sio_nvme_ctrl_opts opts;	/* as brought up: a reset does the same */
	uint32_t adm_id;
	int (*tick)(void *);		/* called while waiting (sio_nvme_ctrl_set_tick()) */
	void *tick_arg;
};

int sio_nvme_ctrl_info(const struct sio_nvme_ctrl *c, struct sio_nvme_ctrl_info *out)
{
	if (!c || !out)
		return sio_err_set(EINVAL, "sio_nvme_ctrl_info: NULL argument");
	*out = c->info;
	return 0;
}

const struct sio_nvme_ctrl_info *sio_nvme_ctrl_ci(const struct sio_nvme_ctrl *c)
{
	return &c->info;
}

const struct sio_nvme_dbbuf *sio_nvme_ctrl_dbbuf(const struct sio_nvme_ctrl *c)
{
	return &c->dbbuf;
}

const struct nvme_id_ctrl *sio_nvme_ctrl_id(const struct sio_nvme_ctrl *c)
{
	return &c->id;
}

struct sio_device *sio_nvme_ctrl_device(const struct sio_nvme_ctrl *c)
{
	return c->dev;
}

volatile void *sio_nvme_ctrl_regs(const struct sio_nvme_ctrl *c)
{
	return c->regs;
}

void sio_nvme_ctrl_gone(struct sio_nvme_ctrl *c)
{
	/* A model that left keeps its last register values in memory, so only
	 * the fabric knows: no admin command or shutdown waits for it. */
	c->gone = true;
	c->admin_broken = true;
}

/* CSTS; all ones (the device gone, or the link to it down) is noted for
 * adm_mend(): admin stores made meanwhile may have been lost. */
static uint32_t csts_read(struct sio_nvme_ctrl *c)
{
	uint32_t csts = sio_nvme_rd32(c->regs, NVME_REG_CSTS);

	c->adm_dark |= csts == 0xffffffffu;
	return csts;
}

int sio_nvme_ctrl_check(struct sio_nvme_ctrl *c)
{
	uint32_t csts = csts_read(c);

	if (csts == 0xffffffffu)
		return sio_err_set(ENODEV, "controller registers read all ones: "
				   "device gone or link down");
	if (NVME_CSTS_CFS(csts))
		return sio_err_set(EIO, "controller fatal status (CSTS.CFS set)");
	return 0;
}

/* Wait for CSTS.RDY to equal @rdy, bounded by CAP.TO. */
static int wait_ready(struct sio_nvme_ctrl *c, uint32_t rdy)
{
	uint64_t deadline = sio__now_ns() + (uint64_t)c->info.timeout_ms * 1000000ull;
	struct sio_backoff b;
	uint32_t csts;
	int ret;

	sio_nvme_backoff_init(&b, 1000000);
	for (;;) {
		csts = csts_read(c);
		if (csts == 0xffffffffu)
			return sio_err_set(ENODEV, "controller registers read all ones "
					   "while waiting for CSTS.RDY=%u: device gone or "
					   "link down", rdy);
		if (rdy && NVME_CSTS_CFS(csts))
			return sio_err_set(EIO, "controller fatal status (CSTS.CFS) "
					   "while enabling");
		if (NVME_CSTS_RDY(csts) == rdy)
			return 0;
		if (sio__now_ns() > deadline)
			return sio_err_set(ETIMEDOUT, "controller did not %s within "
					   "CAP.TO (%u ms)", rdy ? "become ready" :
					   "finish reset", c->info.timeout_ms);
		if (c->tick && (ret = c->tick(c->tick_arg)))
			return ret;
		sio_backoff_wait(&b);
	}
}

static int ctrl_disable(struct sio_nvme_ctrl *c)
{
	uint32_t cc = sio_nvme_rd32(c->regs, NVME_REG_CC);
	uint32_t csts = sio_nvme_rd32(c->regs, NVME_REG_CSTS);
	int ret;

	/* A controller still coming up must finish before EN may drop. */
	if (NVME_CC_EN(cc) && !NVME_CSTS_RDY(csts) && !NVME_CSTS_CFS(csts)) {
		ret = wait_ready(c, 1);
		if (ret == -ENODEV)
			return ret;
	}
	if (NVME_CC_EN(cc))
		sio_nvme_wr32(c->regs, NVME_REG_CC, cc & ~NVME_SET(1, CC_EN));
	return wait_ready(c, 0);
}

static int map_bar0(struct sio_nvme_ctrl *c)
{
	struct sio_segment_info si;
	void *va;
	int ret;

	ret = sio_device_bar(c->dev, 0, &c->bar0);
	if (ret)
		return sio_err_wrap(-ret, "device %u has no BAR0", sio_device_id(c->dev));
	ret = sio_segment_map(c->bar0, &va);
	if (ret)
		return sio_err_wrap(-ret, "cannot map BAR0 of device %u",
				    sio_device_id(c->dev));
	ret = sio_segment_info(c->bar0, &si);
	if (ret)
		return sio_err_wrap(-ret, "BAR0 of device %u", sio_device_id(c->dev));
	if (si.size < 0x2000)
		return sio_err_set(EINVAL, "BAR0 of device %u is %llu bytes, too small "
				   "for NVMe registers and doorbells",
				   sio_device_id(c->dev), (unsigned long long)si.size);
	c->regs = va;
	c->bar0_size = si.size;
	return 0;
}

int sio_nvme_kept_segment(struct sio_fabric *f, int node, uint32_t id, uint64_t size, bool dma,
			  const char *name, struct sio_segment **seg, void **va)
{
	int ret;

	ret = sio_segment_create_on(f, node, id, size,
				    SIO_SEG_F_KEEP | (dma ? 0 : SIO_SEG_F_NOHUGE), seg);
	if (ret == -EEXIST)
		return sio_err_set(EBUSY, "the %s (segment 0x%x on node %d) is held by a "
				   "manager still running", name, id, node);
	if (ret)
		return sio_err_wrap(-ret, "cannot create the %s", name);
	sio_segment_set_name(*seg, name);
	ret = sio_segment_map(*seg, va);
	if (ret)
		return sio_err_wrap(-ret, "cannot map the %s", name);
	return 0;
}

/* The admin segment: private (@adm_id 0), or kept on the lender's node
 * (adopted when a crashed manager left it; zeroed when @fresh). */
static int alloc_admin(struct sio_nvme_ctrl *c, uint32_t adm_id, bool fresh)
{
	struct sio_fabric *f = sio_device_fabric(c->dev);
	struct sio_device_info di;
	void *va;
	int ret;

	if (adm_id) {
		ret = sio_device_info(c->dev, &di);
		if (ret)
			return ret;
		ret = sio_nvme_kept_segment(f, di.lender, adm_id, ADM_SEG_SIZE, true, "nvme-admin",
					    &c->adm_seg, &va);
		if (ret)
			return ret;
	} else {
		ret = sio_segment_create(f, 0, ADM_SEG_SIZE, 0, &c->adm_seg);
		if (ret)
			return sio_err_wrap(-ret, "cannot create the admin queue segment");
		sio_segment_set_name(c->adm_seg, "nvme-admin");
		ret = sio_segment_map(c->adm_seg, &va);
		if (ret)
			return sio_err_wrap(-ret, "cannot map the admin queue segment");
	}
	ret = sio_device_map(c->dev, c->adm_seg, &c->adm_bus);
	if (ret)
		return sio_err_wrap(-ret, "cannot map the admin queues for the device");
	c->adm_va = va;
	if (adm_id)
		c->keep = (struct adm_keep *)((uint8_t *)va + ADM_KEEP_OFF);
	if (fresh)
		memset(va, 0, ADM_SEG_SIZE);
	return 0;
}

static int init_admin_queue(struct sio_nvme_ctrl *c)
{
	int ret;

	ret = sio_nvme_queue_init(&c->admin, 0, SIO_NVME_ADMIN_DEPTH, c->adm_va + ADM_SQ_OFF,
				  c->adm_va + ADM_CQ_OFF,
				  (volatile uint32_t *)(c->regs +
					sio_nvme_doorbell_offset(0, 0, c->info.db_stride)),
				  (volatile uint32_t *)(c->regs +
					sio_nvme_doorbell_offset(0, 1, c->info.db_stride)),
				  c->adm_cids, c->adm_cookies, c->adm_ids);
	if (ret)
		return sio_err_set(-ret, "admin queue of %u entries rejected",
				   SIO_NVME_ADMIN_DEPTH);
	memset(c->adm_copy, 0, sizeof(c->adm_copy));	/* id 0: no command's */
	c->adm_dark = false;
	return 0;
}

/*
 * The admin queue of a manager on another host than the lender's lies in
 * the lender's memory, written across the NTB: while the link is down
 * (the registers read all ones) those stores are lost, and a slot keeps
 * what it held a lap before. The controller would fetch that old command
 * at the next doorbell and run it again, and the one meant never. So once
 * the registers read again, every slot whose command is still in flight is
 * written again from our copy before the next doorbell. A slot the
 * controller fetched already is not fetched again before it is written
 * anew, so writing it again changes nothing.
 */
static void adm_mend(struct sio_nvme_ctrl *c)
{
	struct sio_nvme_queue *q = &c->admin;

	if (!c->adm_dark || sio_nvme_rd32(c->regs, NVME_REG_CSTS) == 0xffffffffu)
		return;
	c->adm_dark = false;
	for (uint32_t s = 0; s < q->size; s++) {
		uint16_t cid = c->adm_copy[s].cid, tag = SIO_NVME_CID_TAG(cid);

		if (cid && tag < q->nslots && q->ids[tag] == cid)
			q->sq[s] = c->adm_copy[s];
	}
}

/* Place @cmd in the admin SQ, not rung, with a copy of what its slot got. */
static int adm_submit(struct sio_nvme_ctrl *c, const struct sio_nvme_cmd *cmd, uint64_t cookie)
{
	uint16_t slot = c->admin.sq_tail;
	int tag;

	adm_mend(c);
	tag = sio_nvme_sq_submit(&c->admin, cmd, cookie);
	if (tag < 0)
		return tag;
	c->adm_copy[slot] = *cmd;
	c->adm_copy[slot].cid = c->admin.ids[tag];
	return tag;
}

/* Record the admin queue's positions where a successor finds them. */
static void keep_pos(struct sio_nvme_ctrl *c, uint32_t inflight)
{
	if (!c->keep)
		return;
	c->keep->sq_tail = c->admin.sq_tail;
	c->keep->cq_head = c->admin.cq_head;
	c->keep->cq_phase = c->admin.cq_phase;
	c->keep->inflight = (uint8_t)inflight;
	__atomic_thread_fence(__ATOMIC_RELEASE);
}

/* Tell the controller where the host sees its CMB (CBA) and enable memory
 * space: without CMSE a controller such as QEMU's does not treat queue
 * addresses in the CMB as its own. */
static void cmb_set(struct sio_nvme_ctrl *c)
{
	sio_nvme_wr64(c->regs, NVME_REG_CMBMSC,
		      NVME_SET(c->info.cmb.bus >> NVME_CMBMSC_CBA_SHIFT, CMBMSC_CBA) |
		      NVME_SET(1, CMBMSC_CRE) | NVME_SET(1, CMBMSC_CMSE));
}

static int enable_cmb(struct sio_nvme_ctrl *c)
{
	struct sio_nvme_cmb *m = &c->info.cmb;
	struct sio_backoff b;
	struct sio_segment *bar;
	uint32_t loc, sz, szu;
	uint64_t bus, deadline, unit;
	int ret;

	if (!NVME_CAP_CMBS(c->info.cap))
		return 0;
	/* CMBLOC/CMBSZ read 0 until the host sets CMBMSC.CRE. */
	sio_nvme_wr64(c->regs, NVME_REG_CMBMSC, NVME_SET(1, CMBMSC_CRE));
	/* A controller may take a moment to publish them (a polled model
	 * does): wait, bounded by CAP.TO. */
	deadline = sio__now_ns() + (uint64_t)c->info.timeout_ms * 1000000ull;
	sio_nvme_backoff_init(&b, 1000000);
	for (;;) {
		/*
		 * CMBSZ first: a model that publishes CMBLOC, then CMBSZ (ours)
		 * has CMBLOC in place once CMBSZ reads non-zero. Read the other
		 * way round, a CMBLOC of 0 read just before both were published
		 * went with a valid CMBSZ: a CMB at offset 0 of BAR0, on the
		 * registers, which the clients' SQs then overwrote.
		 */
		sz = sio_nvme_rd32(c->regs, NVME_REG_CMBSZ);
		loc = sio_nvme_rd32(c->regs, NVME_REG_CMBLOC);
		if (sz || sio__now_ns() > deadline)
			break;
		sio_backoff_wait(&b);
	}
	szu = NVME_CMBSZ_SZU(sz);
	if (sz == 0 || sz == 0xffffffffu || szu > NVME_CMBSZ_SZU_64G)
		return 0;
	unit = 1ull << (12 + 4 * szu);	/* 4 KiB, 64 KiB, ... 64 GiB */
	m->bar = (int)NVME_CMBLOC_BIR(loc);
	m->size = NVME_CMBSZ_SZ(sz) * unit;
	m->offset = NVME_CMBLOC_OFST(loc) * unit;
	m->sqs = NVME_CMBSZ_SQS(sz);
	m->cqs = NVME_CMBSZ_CQS(sz);
	m->data = NVME_CMBSZ_RDS(sz) && NVME_CMBSZ_WDS(sz);
	if (!m->bar && m->offset < SIO_NVME_REG_DBS) {
		ret = sio_err_set(EPROTO, "the controller places its CMB on its registers "
				  "(BAR0, offset %llu): refusing it",
				  (unsigned long long)m->offset);
		memset(m, 0, sizeof(*m));
		return ret;
	}
	ret = sio_device_bar(c->dev, m->bar, &bar);
	if (!ret) {
		/* the mapping stays for the controller's life; the handle was
		 * only the way to it (backends key mappings by BAR, not handle) */
		ret = sio_device_map(c->dev, bar, &bus);
		sio_segment_close(bar);
	}
	if (ret) {
		memset(m, 0, sizeof(*m));
		return sio_err_wrap(-ret, "cannot resolve the CMB's bus address (BAR%d)",
				    m->bar);
	}
	m->bus = bus + m->offset;
	cmb_set(c);
	return 0;
}

/* Queue ids 0..n whose two doorbells lie inside BAR0; returns n. */
static uint32_t bar0_queues(const struct sio_nvme_ctrl *c)
{
	uint64_t pair = 2ull * c->info.db_stride;

	if (c->bar0_size < SIO_NVME_REG_DBS + pair)
		return 0;
	return (uint32_t)((c->bar0_size - SIO_NVME_REG_DBS) / pair - 1);
}

/* How the controller shares itself: arbitration weights, interrupt
 * coalescing, as the options ask; both are forgotten at every reset. */
static int set_sharing(struct sio_nvme_ctrl *c, const struct sio_nvme_ctrl_opts *o)
{
	uint16_t st = 0;

	if (o->arb_cdw11 &&
	    sio_nvme_ctrl_set_features(c, NVME_FEAT_FID_ARBITRATION, o->arb_cdw11, NULL, &st))
		return sio_err_set(EIO, "Set Features (Arbitration 0x%08x) failed: %s",
				   o->arb_cdw11, sio_nvme_status_str(st));
	if (o->irq_coalesce &&
	    sio_nvme_ctrl_set_features(c, NVME_FEAT_FID_IRQ_COALESCE, o->irq_coalesce, NULL, &st))
		return sio_err_set(EIO, "Set Features (Interrupt Coalescing 0x%04x) failed: %s",
				   o->irq_coalesce, sio_nvme_status_str(st));
	return 0;
}

static int identify_and_queues(struct sio_nvme_ctrl *c, const struct sio_nvme_ctrl_opts *o)
{
	uint32_t want = o->io_queues ? o->io_queues : 0xffff;
	uint32_t res = 0, nsq, ncq, minpage;
	uint16_t st = 0;
	int ret;

	ret = sio_nvme_ctrl_identify(c, NVME_IDENTIFY_CNS_CTRL, 0,
				     c->adm_bus + ADM_SCRATCH_OFF, &st);
	if (ret)
		return ret;
	memcpy(&c->id, c->adm_va + ADM_SCRATCH_OFF, sizeof(c->id));
	sio_nvme_strcpy_id(c->info.mn, c->id.mn, sizeof(c->id.mn));
	sio_nvme_strcpy_id(c->info.sn, c->id.sn, sizeof(c->id.sn));
	sio_nvme_strcpy_id(c->info.fr, c->id.fr, sizeof(c->id.fr));
	c->info.nn = c->id.nn;
	c->info.vwc = c->id.vwc & 1;
	c->info.oncs = c->id.oncs;
	c->info.sgl = (uint8_t)(c->id.sgls & 3u);
	minpage = 4096u << NVME_CAP_MPSMIN(c->info.cap);
	c->info.max_xfer = SIO_NVME_MAX_XFER;
	if (c->id.mdts && c->id.mdts < 20 &&
	    ((uint64_t)minpage << c->id.mdts) < SIO_NVME_MAX_XFER)
		c->info.max_xfer = minpage << c->id.mdts;

	if (want > 0xffff)
		want = 0xffff;
	/* Ask only for queues whose doorbells BAR0 covers: a controller whose
	 * DSTRD spreads them past the BAR could not be rung for the others. */
	if (want > bar0_queues(c)) {
		want = bar0_queues(c);
		if (!want)
			return sio_err_set(EINVAL, "BAR0 of device %u (%llu bytes) has no "
					   "room for I/O queue doorbells at stride %u",
					   sio_device_id(c->dev),
					   (unsigned long long)c->bar0_size,
					   c->info.db_stride);
	}
	ret = sio_nvme_ctrl_set_features(c, NVME_FEAT_FID_NUM_QUEUES,
					 sio_nvme_feat_num_queues(want, want), &res, &st);
	if (ret)
		return sio_err_set(EIO, "Set Features (Number of Queues) failed: %s",
				   sio_nvme_status_str(st));
	nsq = (res & 0xffff) + 1;
	ncq = (res >> 16) + 1;
	c->info.io_queues = nsq < ncq ? nsq : ncq;
	if (c->info.io_queues > want)
		c->info.io_queues = want;
	return set_sharing(c, o);
}

static int stale(const char *why)
{
	return sio_err_set(ESTALE, "the running controller does not match the kept "
			   "state: %s; it must be reset", why);
}

/* An admin command's cookie that marks an Asynchronous Event Request. */
#define AER_COOKIE	0xae5ull

static void aer_done(struct sio_nvme_ctrl *c, const struct sio_nvme_cpl *cpl)
{
	c->aer_armed--;
	if (c->keep) {		/* a successor must not claim this id any more */
		for (uint32_t i = 0; i < c->keep->naer && i < SIO_NVME_ADMIN_AERS; i++) {
			if (c->keep->aer_cid[i] != cpl->cid)
				continue;
			c->keep->aer_cid[i] = c->keep->aer_cid[--c->keep->naer];
			break;
		}
	}
	/* an error (Abort, Asynchronous Event Request Limit) carries no event */
	if (SIO_NVME_STATUS_CODE(cpl->status) == 0 && c->naen < SIO_NVME_AEN_MAX)
		c->aen[c->naen++] = cpl->result;
}

/*
 * Taking over a controller a crashed manager enabled, without a reset
 * (adopt()): the kept state is trusted only as far as the controller
 * confirms it, in steps: its registers, the admin queue where it was
 * left, what was in flight on it, its identity, and its CMB and shadow
 * doorbells where they were.
 */

/* Enabled, ready, not failed, and the same CAP and VS as published. */
static int adopt_check_regs(struct sio_nvme_ctrl *c, const struct sio_nvme_ctrl_info *was)
{
	uint32_t cc = sio_nvme_rd32(c->regs, NVME_REG_CC);
	uint32_t csts = sio_nvme_rd32(c->regs, NVME_REG_CSTS);

	if (csts == 0xffffffffu)
		return sio_err_set(ENODEV, "controller registers read all ones: device gone "
				   "or link down");
	if (NVME_CSTS_CFS(csts))
		return sio_err_set(EIO, "controller fatal status (CSTS.CFS set): it must be "
				   "reset");
	if (c->info.cap != was->cap || c->info.vs != was->vs)
		return stale("CAP or VS differ");
	if (!NVME_CC_EN(cc) || !NVME_CSTS_RDY(csts) || NVME_CSTS_SHST(csts) ||
	    NVME_CC_SHN(cc))
		return stale("it is not enabled, ready and running");
	return 0;
}

/* The kept admin segment, and the admin queue set up where it was left,
 * with the crashed manager's event requests claimed; a copy in @k. */
static int adopt_admin_queue(struct sio_nvme_ctrl *c, uint32_t adm_id, struct adm_keep *k)
{
	uint32_t cc = sio_nvme_rd32(c->regs, NVME_REG_CC);
	int ret;

	if (!adm_id)
		return stale("no kept admin queues");
	ret = alloc_admin(c, adm_id, false);
	if (ret)
		return ret;
	memcpy(k, c->keep, sizeof(*k));
	if (__atomic_load_n(&c->keep->magic, __ATOMIC_ACQUIRE) != ADM_KEEP_MAGIC)
		return stale("the kept admin queue state is missing");
	if (k->bus != c->adm_bus || k->cc != cc ||
	    sio_nvme_rd32(c->regs, NVME_REG_AQA) != k->aqa ||
	    sio_nvme_rd64(c->regs, NVME_REG_ASQ) != c->adm_bus + ADM_SQ_OFF ||
	    sio_nvme_rd64(c->regs, NVME_REG_ACQ) != c->adm_bus + ADM_CQ_OFF)
		return stale("CC, AQA, ASQ or ACQ are not what the kept admin queues need");
	if (k->sq_tail >= SIO_NVME_ADMIN_DEPTH || k->cq_head >= SIO_NVME_ADMIN_DEPTH ||
	    k->cq_phase > 1)
		return stale("the kept admin queue positions are out of range");
	ret = init_admin_queue(c);
	if (ret)
		return ret;
	c->admin.sq_tail = c->admin.sq_rung = c->admin.sq_head = k->sq_tail;
	c->admin.cq_head = k->cq_head;
	c->admin.cq_phase = k->cq_phase;
	if (k->inflight >= SIO_NVME_ADMIN_DEPTH)
		return stale("the kept count of admin commands in flight is out of range");
	if (k->naer > SIO_NVME_ADMIN_AERS)
		return stale("the kept count of Asynchronous Event Requests is out of range");
	/* The crashed manager's event requests are still held by the controller:
	 * their ids stay taken, and their completions are events for us. */
	for (uint32_t i = 0; i < k->naer; i++) {
		if (sio_nvme_queue_claim_cid(&c->admin, k->aer_cid[i], AER_COOKIE) < 0)
			return stale("a kept Asynchronous Event Request id is not valid");
		c->aer_armed++;
	}
	return 0;
}

/* What the crashed manager had in flight: rung again (a no-op if it was),
 * waited for, bounded by CAP.TO; then what it left unconsumed, but events. */
static int adopt_drain(struct sio_nvme_ctrl *c, const struct adm_keep *k)
{
	uint32_t inflight = k->inflight;
	struct sio_backoff b;
	struct sio_nvme_cpl done;
	uint64_t deadline, cookie;
	int ret;

	if (inflight) {
		sio_nvme_wr32(c->regs, sio_nvme_doorbell_offset(0, 0, c->info.db_stride),
			      k->sq_tail);
		deadline = sio__now_ns() + (uint64_t)c->info.timeout_ms * 1000000ull;
		sio_nvme_backoff_init(&b, 1000000);
		while (inflight) {
			ret = sio_nvme_cq_pop(&c->admin, &done, &cookie);
			if (ret >= 0 && cookie == AER_COOKIE) {
				aer_done(c, &done);
				continue;
			}
			if (ret != -EAGAIN) {
				inflight--;
				continue;
			}
			if (sio__now_ns() > deadline)
				return stale("the admin commands in flight at the crash got "
					     "no completion");
			sio_backoff_wait(&b);
		}
	}
	while ((ret = sio_nvme_cq_pop(&c->admin, &done, &cookie)) != -EAGAIN)
		if (ret >= 0 && cookie == AER_COOKIE)
			aer_done(c, &done);
	sio_nvme_cq_ring(&c->admin);
	keep_pos(c, 0);
	return 0;
}

/* Identify through the kept admin queue: the same model and serial, and
 * at least the queues that were granted. */
static int adopt_identity(struct sio_nvme_ctrl *c, const struct sio_nvme_ctrl_info *was)
{
	char sn[sizeof(c->info.sn)];
	uint32_t res = 0;
	uint16_t st = 0;
	int ret;

	c->info.nn = was->nn;
	c->info.vwc = was->vwc;
	c->info.oncs = was->oncs;
	c->info.max_xfer = was->max_xfer;
	c->info.io_queues = was->io_queues;
	ret = sio_nvme_ctrl_identify(c, NVME_IDENTIFY_CNS_CTRL, 0, c->adm_bus + ADM_SCRATCH_OFF,
				     &st);
	if (ret)
		return stale("Identify through the kept admin queue failed");
	memcpy(&c->id, c->adm_va + ADM_SCRATCH_OFF, sizeof(c->id));
	sio_nvme_strcpy_id(c->info.mn, c->id.mn, sizeof(c->id.mn));
	sio_nvme_strcpy_id(sn, c->id.sn, sizeof(c->id.sn));
	sio_nvme_strcpy_id(c->info.fr, c->id.fr, sizeof(c->id.fr));
	if (strcmp(sn, was->sn) || strcmp(c->info.mn, was->mn))
		return stale("it reports another model or serial number");
	memcpy(c->info.sn, sn, sizeof(sn));
	ret = sio_nvme_ctrl_get_features(c, NVME_FEAT_FID_NUM_QUEUES, 0, &res, &st);
	if (ret || (res & 0xffff) + 1 < was->io_queues || (res >> 16) + 1 < was->io_queues)
		return stale("its number of queues is not the kept one");
	return 0;
}

/* The CMB at the address clients use, and the shadow doorbells where the
 * controller reads them. */
static int adopt_cmb_dbbuf(struct sio_nvme_ctrl *c, uint32_t adm_id,
			   const struct sio_nvme_ctrl_info *was, const struct adm_keep *k)
{
	struct sio_segment *bar;
	uint64_t bus;
	int ret;

	if (was->cmb.size) {
		ret = sio_device_bar(c->dev, was->cmb.bar, &bar);
		if (!ret) {
			ret = sio_device_map(c->dev, bar, &bus);
			sio_segment_close(bar);	/* as enable_cmb() does */
		}
		if (ret || bus + was->cmb.offset != was->cmb.bus)
			return stale("its controller memory buffer moved");
		c->info.cmb = was->cmb;
	}
	if (k->dbbuf_bus) {
		ret = sio_nvme_dbbuf_adopt(c, &c->dbbuf, adm_id + DBBUF_SEGID_DELTA, k->dbbuf_bus,
					   k->dbbuf_size);
		if (ret)
			return stale("its shadow doorbells are not where they were kept");
		c->info.dbbuf = true;
	}
	return 0;
}

/* Take over a running controller (@c has BAR0 mapped and CAP read). */
static int adopt(struct sio_nvme_ctrl *c, uint32_t adm_id, const struct sio_nvme_ctrl_info *was)
{
	struct adm_keep k;
	int ret;

	ret = adopt_check_regs(c, was);
	if (!ret)
		ret = adopt_admin_queue(c, adm_id, &k);
	if (!ret)
		ret = adopt_drain(c, &k);
	if (!ret)
		ret = adopt_identity(c, was);
	if (!ret)
		ret = adopt_cmb_dbbuf(c, adm_id, was, &k);
	if (!ret)
		c->enabled = true;
	return ret;
}

/*
 * Bringing a controller up from reset, in the steps of Linux's
 * nvme_pci_enable() → nvme_pci_configure_admin_queue() →
 * nvme_init_ctrl_finish() → nvme_dbbuf_set(): read what CAP allows,
 * disable, place the admin queue, enable, identify and ask for queues,
 * then the CMB and the shadow doorbells.
 */

/* CAP and VS, and whether the driver can work with what they say. */
static int read_cap(struct sio_nvme_ctrl *c)
{
	c->info.cap = sio_nvme_rd64(c->regs, NVME_REG_CAP);
	c->info.vs = sio_nvme_rd32(c->regs, NVME_REG_VS);
	if (c->info.cap == ~0ull)
		return sio_err_set(ENODEV, "controller registers read all ones: "
				   "device gone or link down");
	c->info.mqes = NVME_CAP_MQES(c->info.cap) + 1;
	c->info.dstrd = NVME_CAP_DSTRD(c->info.cap);
	c->info.db_stride = sio_nvme_db_stride(c->info.dstrd);
	c->info.timeout_ms = NVME_CAP_TO(c->info.cap) * 500u;
	if (c->info.timeout_ms < 500)
		c->info.timeout_ms = 500;
	if (c->info.mqes < 2)
		return sio_err_set(EIO, "CAP.MQES reports queues of %u entries", c->info.mqes);
	if (!(NVME_CAP_CSS(c->info.cap) & NVME_CAP_CSS_NVM))
		return sio_err_set(ENOTSUP, "controller does not support the NVM "
				   "command set (CAP.CSS)");
	c->info.page_size = sio_nvme_prp_page_size(NVME_CAP_MPSMIN(c->info.cap));
	if (c->info.page_size > 4096)
		return sio_err_set(ENOTSUP, "controller's smallest page is %u bytes; "
				   "the driver uses 4 KiB pages", c->info.page_size);
	if (c->bar0_size < SIO_NVME_REG_DBS + 2ull * c->info.db_stride)
		return sio_err_set(EINVAL, "BAR0 of device %u is %llu bytes: too small for "
				   "the admin queue's doorbells at a stride of %u bytes (CAP.DSTRD %u)",
				   sio_device_id(c->dev), (unsigned long long)c->bar0_size,
				   c->info.db_stride, c->info.dstrd);
	return 0;
}

/* The admin queue pair over the admin segment, told to the controller. */
static int configure_adminq(struct sio_nvme_ctrl *c)
{
	int ret = init_admin_queue(c);

	if (ret)
		return ret;
	sio_nvme_wr32(c->regs, NVME_REG_AQA, NVME_SET(SIO_NVME_ADMIN_DEPTH - 1, AQA_ACQS) |
		      NVME_SET(SIO_NVME_ADMIN_DEPTH - 1, AQA_ASQS));
	sio_nvme_wr64(c->regs, NVME_REG_ASQ, c->adm_bus + ADM_SQ_OFF);
	sio_nvme_wr64(c->regs, NVME_REG_ACQ, c->adm_bus + ADM_CQ_OFF);
	return 0;
}

/* CC.EN with the options' arbitration; ready within CAP.TO; recorded in
 * the kept segment for a successor. */
static int ctrl_enable(struct sio_nvme_ctrl *c, const struct sio_nvme_ctrl_opts *o)
{
	uint32_t ams = o->arbitration, cc;
	int ret;

	if (ams == NVME_CC_AMS_WRRU && !(NVME_CAP_AMS(c->info.cap) & NVME_CAP_AMS_WRR))
		return sio_err_set(ENOTSUP, "controller does not support weighted "
				   "round robin arbitration (CAP.AMS)");
	cc = NVME_SET(1, CC_EN) | NVME_SET(NVME_CC_CSS_NVM, CC_CSS) |
	     NVME_SET(NVME_CAP_MPSMIN(c->info.cap), CC_MPS) | NVME_SET(ams, CC_AMS) |
	     NVME_SET(SIO_NVME_SQES, CC_IOSQES) | NVME_SET(SIO_NVME_CQES, CC_IOCQES);
	sio_nvme_wr32(c->regs, NVME_REG_CC, cc);
	ret = wait_ready(c, 1);
	if (ret)
		return ret;
	c->enabled = true;
	if (c->keep) {
		c->keep->bus = c->adm_bus;
		c->keep->cc = cc;
		c->keep->aqa = sio_nvme_rd32(c->regs, NVME_REG_AQA);
		keep_pos(c, 0);
		__atomic_store_n(&c->keep->magic, ADM_KEEP_MAGIC, __ATOMIC_RELEASE);
	}
	return 0;
}

static void keep_dbbuf(struct sio_nvme_ctrl *c);

/*
 * Shadow doorbells pay where an MMIO write costs more than a store to
 * memory (sio_device_info.bar_mmio): a PCI function whose controller offers
 * them is a virtual one (QEMU's; SSDs do not offer the feature), where every
 * MMIO write exits to the hypervisor. A device model's BAR0 on the simulated
 * fabric is memory: there a shadow store saves nothing and costs the
 * controller a read of host memory per ring (docs/benchmarks.md).
 */
static bool dbbuf_pays(struct sio_nvme_ctrl *c)
{
	struct sio_device_info di;

	return !sio_device_info(c->dev, &di) && di.bar_mmio;
}

/* Doorbell Buffer Config where the controller has it and it pays (or as
 * asked). Not where BAR0 is confined (DSTRD >= 10): one buffer serves every
 * queue. */
static int init_dbbuf(struct sio_nvme_ctrl *c, const struct sio_nvme_ctrl_opts *o,
		      uint32_t adm_id)
{
	int ret;

	if (o->dbbuf == SIO_NVME_DBBUF_OFF || !(c->id.oacs & NVME_CTRL_OACS_DBBUF_CFG) ||
	    c->info.dstrd >= 10 || (o->dbbuf == SIO_NVME_DBBUF_AUTO && !dbbuf_pays(c)))
		return 0;
	ret = sio_nvme_dbbuf_open(c, &c->dbbuf, adm_id ? adm_id + DBBUF_SEGID_DELTA : 0);
	if (ret)
		return ret;
	c->info.dbbuf = true;
	keep_dbbuf(c);
	return 0;
}

/* Where the shadow doorbells are, for a successor (sio_nvme_dbbuf_adopt()). */
static void keep_dbbuf(struct sio_nvme_ctrl *c)
{
	if (!c->keep)
		return;
	c->keep->dbbuf_size = c->dbbuf.size;
	__atomic_store_n(&c->keep->dbbuf_bus, c->dbbuf.bus, __ATOMIC_RELEASE);
}

/* From reset to serving: the admin segment made anew (@adm_id kept, or 0). */
static int bring_up(struct sio_nvme_ctrl *c, const struct sio_nvme_ctrl_opts *o,
		    uint32_t adm_id)
{
	int ret;

	c->opts = *o;
	c->adm_id = adm_id;
	ret = ctrl_disable(c);
	if (!ret)
		ret = alloc_admin(c, adm_id, true);
	if (!ret)
		ret = configure_adminq(c);
	if (!ret)
		ret = ctrl_enable(c, o);
	if (!ret)
		ret = identify_and_queues(c, o);
	if (!ret && o->enable_cmb)
		ret = enable_cmb(c);
	if (!ret)
		ret = init_dbbuf(c, o, adm_id);
	return ret;
}

int sio_nvme_ctrl_open(struct sio_device *dev, const struct sio_nvme_ctrl_opts *opts,
		       struct sio_nvme_ctrl **out)
{
	return sio_nvme_ctrl_open_kept(dev, opts, 0, NULL, out);
}

int sio_nvme_ctrl_open_kept(struct sio_device *dev, const struct sio_nvme_ctrl_opts *opts,
			    uint32_t adm_id, const struct sio_nvme_ctrl_info *was,
			    struct sio_nvme_ctrl **out)
{
	struct sio_nvme_ctrl_opts def = { .arbitration = NVME_CC_AMS_RR, .enable_cmb = true };
	struct sio_errsave es;
	struct sio_nvme_ctrl *c;
	int ret;

	if (!dev || !out)
		return sio_err_set(EINVAL, "sio_nvme_ctrl_open: NULL argument");
	if (!opts)
		opts = &def;
	c = calloc(1, sizeof(*c));
	if (!c)
		return sio_err_set(ENOMEM, "out of memory");
	c->dev = dev;
	ret = map_bar0(c);
	if (!ret)
		ret = read_cap(c);
	if (!ret)
		ret = was ? adopt(c, adm_id, was) : bring_up(c, opts, adm_id);
	if (ret) {
		sio_err_save(&es);
		sio_nvme_ctrl_close(c);
		sio_err_restore(&es);
		return ret;
	}
	*out = c;
	return 0;
}

/*
 * Reset in place, as Linux's nvme_reset_work(): disable, the admin queue
 * anew over the same memory, enable, identify and ask for queues, the CMB
 * and the shadow doorbells where they were. Every I/O queue is gone after.
 */
int sio_nvme_ctrl_reset(struct sio_nvme_ctrl *c)
{
	int ret;

	if (c->gone)
		return sio_err_set(ENODEV, "controller (device %u) is gone: its lender or "
				   "device model left the fabric", sio_device_id(c->dev));
	/* No successor adopts a controller half reset. */
	if (c->keep)
		__atomic_store_n(&c->keep->magic, 0, __ATOMIC_RELEASE);
	c->enabled = false;
	c->admin_broken = true;		/* until it is enabled again */
	c->aer_armed = c->naen = 0;
	ret = ctrl_disable(c);
	if (!ret) {
		memset(c->adm_va, 0, ADM_SEG_SIZE);
		ret = configure_adminq(c);
	}
	if (!ret)
		ret = ctrl_enable(c, &c->opts);
	if (ret)
		return ret;
	c->admin_broken = false;
	ret = identify_and_queues(c, &c->opts);
	if (!ret && c->info.cmb.size)
		cmb_set(c);
	if (!ret && c->info.dbbuf) {
		ret = sio_nvme_dbbuf_config(c, &c->dbbuf);
		keep_dbbuf(c);
	}
	return ret;
}

int sio_nvme_ctrl_health(struct sio_nvme_ctrl *c)
{
	uint32_t cc, csts;
	int ret = sio_nvme_ctrl_check(c);

	if (ret || c->gone)
		return ret ? ret : sio_err_set(ENODEV, "controller (device %u) is gone",
					       sio_device_id(c->dev));
	if (c->admin_broken)
		return sio_err_set(ETIMEDOUT, "an admin command got no completion");
	cc = sio_nvme_rd32(c->regs, NVME_REG_CC);
	csts = sio_nvme_rd32(c->regs, NVME_REG_CSTS);
	if (c->enabled && (!NVME_CC_EN(cc) || !NVME_CSTS_RDY(csts) || NVME_CC_SHN(cc)))
		return sio_err_set(ESTALE, "the controller is no longer enabled and ready "
				   "(CC 0x%08x, CSTS 0x%08x): something else disabled or shut it "
				   "down", cc, csts);
	return 0;
}

void sio_nvme_ctrl_set_tick(struct sio_nvme_ctrl *c, int (*tick)(void *), void *arg)
{
	c->tick = tick;
	c->tick_arg = arg;
}

void sio_nvme_ctrl_leave(struct sio_nvme_ctrl *c)
{
	if (!c)
		return;
	/* mapped for the device by our borrow, which goes with it */
	if (c->dbbuf.seg)
		sio_segment_leave(c->dbbuf.seg);
	if (c->keep)
		sio_segment_leave(c->adm_seg);
	else
		sio_segment_close(c->adm_seg);
	sio_segment_close(c->bar0);
	free(c);
}

void sio_nvme_ctrl_close(struct sio_nvme_ctrl *c)
{
	uint64_t deadline;
	struct sio_backoff b;
	uint32_t cc, csts;

	struct sio_errsave es;

	if (!c)
		return;
	sio_err_save(&es);
	/* A controller that is gone gets no shutdown: it would only wait CAP.TO. */
	if (c->regs && c->enabled && !c->gone && !sio_nvme_ctrl_check(c)) {
		/* Normal shutdown so a controller with a cache persists it. */
		cc = sio_nvme_rd32(c->regs, NVME_REG_CC);
		if (cc != 0xffffffffu) {
			sio_nvme_wr32(c->regs, NVME_REG_CC,
				      (cc & ~NVME_SET(NVME_CC_SHN_MASK, CC_SHN)) |
				      NVME_SET(NVME_CC_SHN_NORMAL, CC_SHN));
			deadline = sio__now_ns() + (uint64_t)c->info.timeout_ms * 1000000ull;
			sio_nvme_backoff_init(&b, 1000000);
			for (;;) {
				csts = sio_nvme_rd32(c->regs, NVME_REG_CSTS);
				if (csts == 0xffffffffu ||
				    NVME_CSTS_SHST(csts) == NVME_CSTS_SHST_CMPLT ||
				    sio__now_ns() > deadline)
					break;
				sio_backoff_wait(&b);
			}
			cc = sio_nvme_rd32(c->regs, NVME_REG_CC);
			if (cc != 0xffffffffu)
				sio_nvme_wr32(c->regs, NVME_REG_CC, cc & ~NVME_SET(1, CC_EN));
		}
	}
	sio_nvme_dbbuf_close(c->dev, &c->dbbuf);
	if (c->adm_seg) {
		sio_device_unmap(c->dev, c->adm_seg);
		sio_segment_close(c->adm_seg);
	}
	sio_segment_close(c->bar0);
	free(c);
	sio_err_restore(&es);
}

int sio_nvme_ctrl_admin_many(struct sio_nvme_ctrl *c, const struct sio_nvme_cmd *cmds,
			     uint32_t n, struct sio_nvme_cpl *cpls, uint32_t timeout_ms)
{
	struct sio_backoff b;
	struct sio_nvme_cpl done;
	uint64_t deadline, cookie, now, next_check, call;
	uint32_t i, left = n;
	int ret;

	if (c->gone)
		return sio_err_set(ENODEV, "controller (device %u) is gone: its lender or "
				   "device model left the fabric", sio_device_id(c->dev));
	if (c->admin_broken)
		return sio_err_set(EIO, "the admin queue of device %u is unusable after a "
				   "timeout until the controller is reset", sio_device_id(c->dev));
	if (!n || n >= SIO_NVME_ADMIN_DEPTH)
		return sio_err_set(EINVAL, "%u admin commands at once (1..%u)", n,
				   SIO_NVME_ADMIN_DEPTH - 1);
	ret = sio_nvme_ctrl_check(c);
	if (ret)
		return ret;
	/* A command of an earlier call that ended without its completion (the
	 * link went down) may still complete: its cookie names its call. */
	call = (uint64_t)++c->adm_calls << 32;
	for (i = 0; i < n; i++)
		if (adm_submit(c, &cmds[i], call | i) < 0)
			return sio_err_set(EBUSY, "admin queue full");	/* none rung */
	keep_pos(c, n);
	sio_nvme_sq_ring(&c->admin);

	if (!timeout_ms)
		timeout_ms = SIO_NVME_ADMIN_TIMEOUT_MS;
	now = sio__now_ns();
	deadline = now + (uint64_t)timeout_ms * 1000000ull;
	next_check = now + 1000000ull;
	sio_nvme_backoff_init(&b, 200000);
	while (left) {
		if (sio_nvme_cq_peek(&c->admin)) {
			ret = sio_nvme_cq_pop(&c->admin, &done, &cookie);
			sio_nvme_cq_ring(&c->admin);
			if (ret >= 0 && cookie == AER_COOKIE) {
				aer_done(c, &done);
			} else if (ret >= 0 && (cookie & ~0xffffffffull) == call &&
				   (uint32_t)cookie < n) {
				cpls[(uint32_t)cookie] = done;
				left--;
			}
			keep_pos(c, left);	/* a stale completion is skipped */
			continue;
		}
		now = sio__now_ns();
		if (now > next_check) {
			ret = sio_nvme_ctrl_check(c);
			if (ret)
				return ret;
			next_check = now + 1000000ull;
		}
		if (now > deadline) {
			c->admin_broken = true;
			return sio_err_set(ETIMEDOUT, "admin command 0x%02x got no "
					   "completion within %u ms", cmds[0].opcode, timeout_ms);
		}
		if (c->tick && (ret = c->tick(c->tick_arg)))
			return ret;
		sio_backoff_wait(&b);
	}
	return 0;
}

int sio_nvme_ctrl_admin(struct sio_nvme_ctrl *c, const struct sio_nvme_cmd *cmd,
			struct sio_nvme_cpl *cpl, uint32_t timeout_ms)
{
	struct sio_nvme_cpl done;
	int ret;

	ret = sio_nvme_ctrl_admin_many(c, cmd, 1, &done, timeout_ms);
	if (ret)
		return ret;
	if (cpl)
		*cpl = done;
	if (SIO_NVME_STATUS_CODE(done.status))
		return sio_err_set(EIO, "%s (0x%02x) failed: %s (status 0x%03x)",
				   sio_nvme_admin_name(cmd->opcode), cmd->opcode,
				   sio_nvme_status_str(SIO_NVME_STATUS_CODE(done.status)),
				   SIO_NVME_STATUS_CODE(done.status));
	return 0;
}

int sio_nvme_ctrl_aer_arm(struct sio_nvme_ctrl *c)
{
	struct sio_nvme_cmd cmd;
	int ret;

	if (c->gone || c->admin_broken)
		return sio_err_set(ENODEV, "admin queue of device %u unusable", sio_device_id(c->dev));
	if (c->aer_armed >= (uint32_t)c->id.aerl + 1)
		return sio_err_set(EBUSY, "%u Asynchronous Event Requests outstanding: the "
				   "controller's limit (AERL)", c->aer_armed);
	if (c->aer_armed >= SIO_NVME_ADMIN_AERS)
		return sio_err_set(EBUSY, "%u Asynchronous Event Requests outstanding: as many "
				   "as the driver keeps", c->aer_armed);
	sio_nvme_cmd_init(&cmd, nvme_admin_async_event, 0);
	ret = adm_submit(c, &cmd, AER_COOKIE);
	if (ret < 0)
		return sio_err_set(EBUSY, "admin queue full");
	if (c->keep) {		/* recorded before the doorbell, as every admin command */
		c->keep->aer_cid[c->keep->naer++] = c->admin.ids[ret];
		keep_pos(c, 0);
	}
	sio_nvme_sq_ring(&c->admin);
	c->aer_armed++;
	return 0;
}

int sio_nvme_ctrl_aer_take(struct sio_nvme_ctrl *c, uint32_t *dw0, uint32_t max)
{
	struct sio_nvme_cpl done;
	uint64_t cookie;
	uint32_t n;
	int ret;

	/* between admin commands only AERs can complete: take what came */
	while (!c->gone && sio_nvme_cq_peek(&c->admin)) {
		ret = sio_nvme_cq_pop(&c->admin, &done, &cookie);
		if (ret >= 0 && cookie == AER_COOKIE)
			aer_done(c, &done);
	}
	sio_nvme_cq_ring(&c->admin);
	n = c->naen < max ? c->naen : max;
	memcpy(dw0, c->aen, n * sizeof(*dw0));
	memmove(c->aen, c->aen + n, (c->naen - n) * sizeof(*dw0));
	c->naen -= n;
	return (int)n;
}

int sio_nvme_ctrl_aer_ack(struct sio_nvme_ctrl *c, uint32_t dw0)
{
	uint8_t lid = (uint8_t)SIO_NVME_AEN_LID(dw0);
	uint32_t len = lid == NVME_LOG_LID_SMART ? 512 : 4096;

	/* read without RAE: the controller unmasks the event type */
	return sio_nvme_ctrl_get_log(c, lid, 0xffffffffu, c->adm_bus + ADM_SCRATCH_OFF, len, NULL);
}

uint32_t sio_nvme_ctrl_aer_armed(const struct sio_nvme_ctrl *c)
{
	return c->aer_armed;
}

int sio_nvme_ctrl_identify(struct sio_nvme_ctrl *c, uint8_t cns, uint32_t nsid,
			   uint64_t bus, uint16_t *status)
{
	struct sio_nvme_cmd cmd;

	if (bus & 0xfff)
		return sio_err_set(EINVAL, "Identify buffer 0x%llx is not 4 KiB aligned",
				   (unsigned long long)bus);
	sio_nvme_cmd_identify(&cmd, cns, nsid, bus);
	return sio__nvme_admin_st(c, &cmd, NULL, status);
}

int sio_nvme_ctrl_ns(struct sio_nvme_ctrl *c, uint32_t nsid, struct sio_nvme_ns *out)
{
	const struct nvme_id_ns *ns = (const void *)(c->adm_va + ADM_SCRATCH_OFF);
	uint16_t st;
	uint8_t ds;
	int ret;

	memset(out, 0, sizeof(*out));
	out->nsid = nsid;
	if (nsid == 0 || nsid > c->info.nn)
		return sio_err_set(ENOENT, "namespace %u does not exist (the controller "
				   "has %u)", nsid, c->info.nn);
	ret = sio_nvme_ctrl_identify(c, NVME_IDENTIFY_CNS_NS, nsid,
				     c->adm_bus + ADM_SCRATCH_OFF, &st);
	if (ret)
		return ret;
	out->nsze = ns->nsze;
	out->active = ns->nsze != 0;
	if (!out->active)
		return 0;
	/* Checked before the shift: a hostile exponent would be undefined. */
	ds = ns->lbaf[ns->flbas & 0xf].ds;
	if (ds < 9 || ds > 16)
		return sio_err_set(EIO, "namespace %u reports an LBA data size of 2^%u",
				   nsid, ds);
	out->lba_size = 1u << ds;
	return 0;
}

int sio_nvme_ctrl_get_log(struct sio_nvme_ctrl *c, uint8_t lid, uint32_t nsid,
			  uint64_t bus, uint32_t len, uint16_t *status)
{
	struct sio_nvme_cmd cmd;
	uint64_t page_end = (bus | 0xfffull) + 1;

	if (!len || (len & 3) || len > 8192 || (bus & 3))
		return sio_err_set(EINVAL, "log page length %u or address is invalid "
				   "(multiple of 4 bytes, at most 8192)", len);
	if (bus + len > page_end + 4096)
		return sio_err_set(EINVAL, "log page buffer crosses more than two pages");
	sio_nvme_cmd_get_log(&cmd, lid, nsid, bus, bus + len > page_end ? page_end : 0, len);
	return sio__nvme_admin_st(c, &cmd, NULL, status);
}

static int features(struct sio_nvme_ctrl *c, uint8_t opcode, uint8_t fid, uint32_t cdw11,
		    uint32_t *result, uint16_t *status)
{
	struct sio_nvme_cmd cmd;

	sio_nvme_cmd_features(&cmd, opcode, fid, cdw11);
	return sio__nvme_admin_st(c, &cmd, result, status);
}

int sio_nvme_ctrl_get_features(struct sio_nvme_ctrl *c, uint8_t fid, uint32_t cdw11,
			       uint32_t *result, uint16_t *status)
{
	return features(c, nvme_admin_get_features, fid, cdw11, result, status);
}

int sio_nvme_ctrl_set_features(struct sio_nvme_ctrl *c, uint8_t fid, uint32_t cdw11,
			       uint32_t *result, uint16_t *status)
{
	return features(c, nvme_admin_set_features, fid, cdw11, result, status);
}

int sio_nvme_ctrl_create_qpair(struct sio_nvme_ctrl *c, uint16_t qid, uint32_t size,
			       uint64_t sq_bus, uint64_t cq_bus, uint32_t prio,
			       uint16_t *status)
{
	struct sio_nvme_cmd cmd;
	int ret;

	if (qid == 0 || qid > c->info.io_queues)
		return sio_err_set(EINVAL, "queue id %u out of range 1..%u", qid,
				   c->info.io_queues);
	if (size < 2 || size > c->info.mqes)
		return sio_err_set(EINVAL, "queue size %u out of range 2..%u (CAP.MQES)",
				   size, c->info.mqes);
	if ((sq_bus | cq_bus) & (c->info.page_size - 1))
		return sio_err_set(EINVAL, "queue memory is not page aligned");
	sio_nvme_dbbuf_reset(&c->dbbuf, qid);	/* a new queue's doorbells start at 0 */
	sio_nvme_cmd_create_cq(&cmd, qid, size, cq_bus, SIO_NVME_Q_PC, 0);	/* polled */
	ret = sio__nvme_admin_st(c, &cmd, NULL, status);
	if (ret)
		return ret;
	sio_nvme_cmd_create_sq(&cmd, qid, size, sq_bus, qid, prio);
	ret = sio__nvme_admin_st(c, &cmd, NULL, status);
	if (ret) {
		struct sio_errsave es;
		uint16_t st2;

		sio_err_save(&es);
		sio_nvme_cmd_delete_q(&cmd, nvme_admin_delete_cq, qid);
		sio__nvme_admin_st(c, &cmd, NULL, &st2);
		sio_err_restore(&es);
		return ret;
	}
	return 0;
}

int sio_nvme_ctrl_delete_qpair(struct sio_nvme_ctrl *c, uint16_t qid)
{
	struct sio_nvme_cmd cmd;
	int ret, ret2;

	sio_nvme_cmd_delete_q(&cmd, nvme_admin_delete_sq, qid);
	ret = sio__nvme_admin_st(c, &cmd, NULL, NULL);
	sio_nvme_cmd_delete_q(&cmd, nvme_admin_delete_cq, qid);
	ret2 = sio__nvme_admin_st(c, &cmd, NULL, NULL);
	/*
	 * The queue is gone; leave its doorbells at their reset value so a
	 * later owner of this qid starts clean on a controller model that keeps
	 * doorbell values in memory. Controllers ignore writes to doorbells of
	 * queues that do not exist (at most an async event, never requested).
	 */
	if (!c->admin_broken) {
		sio_nvme_wr32(c->regs, sio_nvme_doorbell_offset(qid, 0, c->info.db_stride), 0);
		sio_nvme_wr32(c->regs, sio_nvme_doorbell_offset(qid, 1, c->info.db_stride), 0);
		sio_nvme_dbbuf_reset(&c->dbbuf, qid);
	}
	return ret ? ret : ret2;
}

int sio_nvme_describe_doorbells(volatile void *bar0, uint64_t size, struct sio_doorbells *db,
				void *arg)
{
	volatile uint32_t *r = bar0;
	uint64_t cap;
	uint32_t stride;

	(void)arg;
	if (!bar0 || size < SIO_NVME_REG_DBS + 8)
		return sio_err_set(EINVAL, "BAR0 of %llu bytes holds no NVMe doorbells",
				   (unsigned long long)size);
	/* two 32-bit reads: what every controller decodes */
	cap = r[NVME_REG_CAP / 4] | (uint64_t)r[NVME_REG_CAP / 4 + 1] << 32;
	stride = sio_nvme_db_stride(NVME_CAP_DSTRD(cap));
	*db = (struct sio_doorbells){
		.base = SIO_NVME_REG_DBS,
		.stride = stride,
		.count = (uint32_t)((size - SIO_NVME_REG_DBS) / stride),
		.confined = 2,			/* the admin queue's SQ tail and CQ head */
		.regs = 0x100,			/* CAP .. the CMB's registers */
		.live = NVME_REG_ACQ + 8,	/* CAP .. ACQ: CSTS, and CC and the admin queue's for a takeover */
	};
	return 0;
}

int sio_nvme_find_device(struct sio_fabric *f, uint32_t id, struct sio_device_info *out)
{
	struct sio_device_info *all;
	int n, i, ret;

	n = sio_device_list(f, 0, 0, NULL, 0);
	if (n < 0)
		return sio_err_wrap(-n, "cannot list devices");
	if (n == 0)
		return sio_err_set(ENOENT, "no devices are registered on fabric '%s' (lend one "
				   "first: nvme-emu, or smartio vfio lend BDF; nvme-emu --background "
				   "returns once its device is registered)", sio_fabric_name(f));
	all = calloc((size_t)n, sizeof(*all));
	if (!all)
		return sio_err_set(ENOMEM, "out of memory");
	n = sio_device_list(f, 0, 0, all, n);
	ret = -ENOENT;
	for (i = 0; i < n; i++) {
		if (id != SIO_DEVICE_ANY && all[i].id == id) {
			if (all[i].class_code != SIO_NVME_CLASS) {
				ret = sio_err_set(ENODEV, "device %u is not an NVMe "
						  "controller (class 0x%06x)",
						  all[i].id, all[i].class_code);
				goto out;
			}
			*out = all[i];
			ret = 0;
			goto out;
		}
		if (id == SIO_DEVICE_ANY && all[i].class_code == SIO_NVME_CLASS) {
			*out = all[i];
			ret = 0;
			goto out;
		}
	}
	if (id != SIO_DEVICE_ANY)
		ret = sio_err_set(ENOENT, "device %u does not exist on fabric '%s'", id,
				  sio_fabric_name(f));
	else
		ret = sio_err_set(ENOENT, "no NVMe controller (class 0x%06x) on fabric '%s'",
				  SIO_NVME_CLASS, sio_fabric_name(f));
out:
	free(all);
	return ret;
}
