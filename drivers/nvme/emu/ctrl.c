/* SPDX-License-Identifier: MIT */
/*
 * The controller: registers in BAR0, enable and reset, doorbells,
 * arbitration between submission queues, and completion posting.
 *
 * BAR0 is shared memory the host writes with plain stores, so nothing traps
 * a register write: the model notices CC, CMBMSC and doorbell changes by
 * polling, and re-publishes the registers the host may only read.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <smartio/smartio.h>
#include <smartio/model.h>
#include "parse.h"
#include "emu_priv.h"

/* ---- register access: the host stores into the same page concurrently ---- */

static inline uint32_t rd32(struct sio_nvme_emu *emu, uint32_t off)
{
	return __atomic_load_n((uint32_t *)(emu->bar0 + off), __ATOMIC_RELAXED);
}

static inline uint64_t rd64(struct sio_nvme_emu *emu, uint32_t off)
{
	return __atomic_load_n((uint64_t *)(emu->bar0 + off), __ATOMIC_RELAXED);
}

static inline void wr32(struct sio_nvme_emu *emu, uint32_t off, uint32_t v)
{
	__atomic_store_n((uint32_t *)(emu->bar0 + off), v, __ATOMIC_RELEASE);
}

static inline void wr64(struct sio_nvme_emu *emu, uint32_t off, uint64_t v)
{
	__atomic_store_n((uint64_t *)(emu->bar0 + off), v, __ATOMIC_RELEASE);
}

static uint32_t csts(struct sio_nvme_emu *emu)
{
	return emu->csts;
}

static void set_csts(struct sio_nvme_emu *emu, uint32_t v)
{
	emu->csts = v;
	wr32(emu, NVME_REG_CSTS, v);
}

/* CSTS.SHST: shutdown processing not started, under way, or complete. */
static void set_shst(struct sio_nvme_emu *emu, uint32_t shst)
{
	set_csts(emu, (csts(emu) & ~NVME_SET(NVME_CSTS_SHST_MASK, CSTS_SHST)) |
		 NVME_SET(shst, CSTS_SHST));
}

/* CMBLOC/CMBSZ read 0 until CMBMSC.CRE is set, as QEMU's controller does. */
static void cmb_regs(struct sio_nvme_emu *emu, uint32_t *loc, uint32_t *sz)
{
	*loc = *sz = 0;
	if (!emu->cfg.cmb_mib || !NVME_CMBMSC_CRE(emu->cmbmsc))
		return;
	*loc = NVME_SET(EMU_CMB_BAR, CMBLOC_BIR);	/* offset 0 */
	/* in 1 MiB units; SQs, CQs and read and write data may live in it */
	*sz = NVME_SET(emu->cfg.cmb_mib, CMBSZ_SZ) | NVME_SET(NVME_CMBSZ_SZU_1M, CMBSZ_SZU) |
	      NVME_SET(1, CMBSZ_SQS) | NVME_SET(1, CMBSZ_CQS) | NVME_SET(1, CMBSZ_RDS) |
	      NVME_SET(1, CMBSZ_WDS);
}

/* Restore what the host may only read, if a host store clobbered it. */
static void republish(struct sio_nvme_emu *emu)
{
	uint32_t loc, sz;

	if (rd64(emu, NVME_REG_CAP) != emu->cap)
		wr64(emu, NVME_REG_CAP, emu->cap);
	if (rd32(emu, NVME_REG_VS) != EMU_VS)
		wr32(emu, NVME_REG_VS, EMU_VS);
	if (rd32(emu, NVME_REG_CSTS) != csts(emu))
		wr32(emu, NVME_REG_CSTS, csts(emu));
	cmb_regs(emu, &loc, &sz);
	/* CMBLOC before CMBSZ (release stores): a host that reads CMBSZ
	 * set reads CMBLOC after it (enable_cmb()), and finds it in place */
	if (rd32(emu, NVME_REG_CMBLOC) != loc)
		wr32(emu, NVME_REG_CMBLOC, loc);
	if (rd32(emu, NVME_REG_CMBSZ) != sz)
		wr32(emu, NVME_REG_CMBSZ, sz);
	/* CMBSTS (0x58) is read-only and reports no errors */
	if (rd32(emu, 0x58) != 0)
		wr32(emu, 0x58, 0);
}

/* ---- queues ---- */

static void log_error(struct sio_nvme_emu *emu, struct emu_sq *sq, uint16_t cid,
		      uint16_t status, const struct sio_nvme_cmd *cmd)
{
	struct nvme_error_log_page *e = &emu->elog[emu->elog_next];

	memset(e, 0, sizeof(*e));
	e->error_count = ++emu->err_count;
	e->sqid = sq->qid;
	e->cmdid = cid;
	e->status_field = (uint16_t)(((status & 0x7ffu) << 1) | (status & EMU_DNR ? 0x8000u : 0));
	e->parm_error_location = 0xffff;
	if (cmd) {
		e->nsid = cmd->nsid;
		if (sq->qid && (cmd->opcode == nvme_cmd_read || cmd->opcode == nvme_cmd_write ||
				cmd->opcode == nvme_cmd_write_zeroes))
			e->lba = (uint64_t)cmd->cdw10 | ((uint64_t)cmd->cdw11 << 32);
	}
	emu->elog_next = (emu->elog_next + 1) % EMU_ELOG_ENTRIES;
}

/* A completion entry: DW0, DW1, DW2 (SQ head and id), DW3 (cid, status, phase). */
static void cq_entry(uint32_t e[4], uint32_t result, uint32_t sqhd, uint16_t cid,
		     uint16_t status, uint8_t phase)
{
	e[0] = result;
	e[1] = 0;
	e[2] = sqhd;
	e[3] = cid | (uint32_t)sio_nvme_model_cpl_status(status, phase) << 16;
}

static void batch_begin(struct sio_nvme_emu *emu);
static void batch_end(struct sio_nvme_emu *emu);

/*
 * Store entry @e at CQ address @at. The first three dwords go first; the
 * dword holding the phase tag is stored last with release order, so a host
 * that sees the new phase sees the whole entry.
 */
static void cq_store(struct sio_nvme_emu *emu, uint64_t at, const uint32_t e[4])
{
	void *p;
	int rc = emu->dma.ptr(emu->dma.ctx, at, 16, true, &p);

	if (rc == 0) {
		uint64_t *d = p;	/* CQ entries are 16-byte aligned */

		/*
		 * Two stores, not four: the host spins on this line, and every
		 * store it can slip in between costs another transfer of the
		 * line. DW2 and DW3 (phase) go together, last, with release.
		 */
		__atomic_store_n(&d[0], (uint64_t)e[0] | (uint64_t)e[1] << 32, __ATOMIC_RELAXED);
		__atomic_store_n(&d[1], (uint64_t)e[2] | (uint64_t)e[3] << 32, __ATOMIC_RELEASE);
	} else if (rc == -EOPNOTSUPP) {
		/* memory with no host pointer (GPU): two ordered writes, phase
		 * last, never in a batch (an admin CQ there: no noptr flag) */
		if (emu->batching) {
			batch_end(emu);
			batch_begin(emu);
		}
		if (!emu->dma.write(emu->dma.ctx, at, e, 12))
			emu->dma.write(emu->dma.ctx, at + 12, &e[3], 4);
	}
	/* else: a CQ nobody mapped, or a dead link; the write is lost as on PCIe */
}

/*
 * A pass's DMA batch (sio_dma_batch_begin()): writes into GPU memory may
 * land at its end, many with one copy, so the completions of commands
 * whose data may not have landed are held until then. Where nothing is
 * deferred (host memory, no plugin), nothing is held.
 */
static void batch_begin(struct sio_nvme_emu *emu)
{
	if (!emu->dma.batch_begin || !emu->dma.batch_pending || !emu->dma.batch_end)
		return;	/* all three, or no batch */
	emu->dma.batch_begin(emu->dma.ctx);
	emu->batching = true;
}

/* Land the batch, then post what was held: a failed batch's data is lost. */
static void batch_end(struct sio_nvme_emu *emu)
{
	uint32_t e[4];
	int rc;

	if (!emu->batching)
		return;
	rc = emu->dma.batch_end(emu->dma.ctx);
	emu->batching = false;
	for (uint32_t i = 0; i < emu->nheld; i++) {
		const struct emu_held *h = &emu->held[i];

		cq_entry(e, h->result, h->sqhd, h->cid, rc ? EMU_ST_XFER : h->status, h->phase);
		if (!emu->resetting)
			cq_store(emu, h->at, e);
	}
	emu->nheld = 0;
}

/*
 * Whether a completion on @cq waits for the batch: its data may not have
 * landed, or an earlier one waits; or @cq is GPU memory, where its two
 * writes (phase last) must not be batched, as a batch's copies may land
 * in any order.
 */
static bool must_hold(struct sio_nvme_emu *emu, const struct emu_cq *cq)
{
	if (!emu->batching ||
	    (!emu->nheld && !cq->noptr && !emu->dma.batch_pending(emu->dma.ctx)))
		return false;
	if (emu->nheld < EMU_HELD_MAX)
		return true;
	batch_end(emu);	/* full: land what is in flight, then go on batching */
	batch_begin(emu);
	return false;
}

/**
 * emu_post() - post a completion for a fetched command
 * @emu: controller
 * @sq: the SQ it came from (its CQ has a slot reserved for it)
 * @cid: command id
 * @status: internal status (SCT << 8 | SC, EMU_DNR)
 * @result: DW0
 * @cmd: the command, for the error log (may be NULL)
 *
 * At once, or, in a DMA batch whose data may not have landed, when the
 * batch has (batch_end()). The CQ's tail moves now either way.
 */
void emu_post(struct sio_nvme_emu *emu, struct emu_sq *sq, uint16_t cid,
	      uint16_t status, uint32_t result, const struct sio_nvme_cmd *cmd)
{
	struct emu_cq *cq = sq->cq;
	uint64_t at = cq->base + (uint64_t)cq->tail * 16;
	uint32_t sqhd = sq->head | ((uint32_t)sq->qid << 16), e[4], phase;

	if (status & 0x7ffu)
		log_error(emu, sq, cid, status, cmd);
	if (emu->resetting) {
		/* dropped */
	} else if (must_hold(emu, cq)) {
		emu->held[emu->nheld++] = (struct emu_held){ .at = at,
			.result = result, .sqhd = sqhd, .cid = cid, .status = status,
			.phase = cq->phase };
	} else {
		cq_entry(e, result, sqhd, cid, status, cq->phase);
		cq_store(emu, at, e);
	}
	/* the hold and the aggregation time run from the first entry not yet signalled */
	if (cq->ien && cq->irq_pending++ == 0) {
		cq->irq_since = sio__now_ns();
		cq->irq_first = cq->tail;
	}
	phase = cq->phase;
	sio_nvme_model_cq_advance(&cq->tail, &phase, cq->size);
	cq->phase = (uint8_t)phase;
	cq->reserved--;
	sq->inflight--;
}

/*
 * An SQ entry that could not be fetched. Said once per process on stderr,
 * with the reason: on the GPU path this is usually the plugin missing or
 * CUDA failing in this process, and the GPU side sees only a timeout.
 */
static void fetch_fault(struct sio_nvme_emu *emu, struct emu_sq *sq, uint64_t at, int rc)
{
	static bool said;

	if (said)
		return;
	said = true;
	fprintf(stderr, "nvme-emu: cannot fetch an entry of SQ %u at bus 0x%llx: %s%s%s; "
		"answered with a Data Transfer Error, cid 0xffff (said once)\n", sq->qid,
		(unsigned long long)at, strerror(-rc),
		emu->fabric ? ": " : "", emu->fabric ? sio_errmsg() : "");
}

/* Room for a batched SQ's entries read ahead; NULL without memory. */
static struct sio_nvme_cmd *ahead_buf(struct sio_nvme_emu *emu, struct emu_sq *sq)
{
	if (!emu->ahead)
		emu->ahead = calloc(emu->nq, sizeof(*emu->ahead));
	if (!emu->ahead)
		return NULL;
	if (!emu->ahead[sq->qid])
		emu->ahead[sq->qid] = malloc(EMU_FETCH_BATCH * sizeof(struct sio_nvme_cmd));
	return emu->ahead[sq->qid];
}

/*
 * Read @sq's entry at its head into @cmd. A batched SQ is read up to
 * EMU_FETCH_BATCH entries at once, as many as the doorbell covers up to
 * the ring's end and the CQ has room for (@room), and they are kept for
 * the passes that follow: an entry between head and tail is the
 * controller's, and the host rewrites it only after the head has passed.
 * A reset or a new SQ zeroes the count (emu_sq.ahead_n).
 */
static int read_entry(struct sio_nvme_emu *emu, struct emu_sq *sq, uint32_t room,
		      struct sio_nvme_cmd *cmd)
{
	uint64_t at = sq->base + (uint64_t)sq->head * 64;
	struct sio_nvme_cmd *buf = sq->batch ? ahead_buf(emu, sq) : NULL;
	uint32_t k;
	int rc;

	if (!buf)
		return emu->dma.read(emu->dma.ctx, at, cmd, 64);
	if (sq->ahead_next == sq->ahead_n) {
		k = (sq->tail + sq->size - sq->head) % sq->size;
		k = k < sq->size - sq->head ? k : sq->size - sq->head;
		k = k < room ? k : room;
		k = k < EMU_FETCH_BATCH ? k : EMU_FETCH_BATCH;
		sq->ahead_n = sq->ahead_next = 0;
		rc = emu->dma.read(emu->dma.ctx, at, buf, (size_t)k * 64);
		if (rc) {
			memset(cmd, 0xff, sizeof(*cmd));	/* as a failed read returns */
			return rc;
		}
		sq->ahead_n = k;
	}
	*cmd = buf[sq->ahead_next++];
	return 0;
}

/* Fetch and start up to @max commands from @sq. */
static uint32_t fetch(struct sio_nvme_emu *emu, struct emu_sq *sq, uint32_t max)
{
	uint32_t n = 0;

	while (n < max && sq->valid && sq->head != sq->tail) {
		struct sio_nvme_cmd cmd;
		uint32_t result = 0;
		uint64_t at;
		uint16_t st;
		int rc;

		if (cq_room(sq->cq) == 0)
			break;
		if (sq->qid && emu->fd >= 0 && !emu->free_reqs)
			break;	/* every io_uring slot busy: leave it in the SQ */
		at = sq->base + (uint64_t)sq->head * 64;
		rc = read_entry(emu, sq, cq_room(sq->cq), &cmd);
		if (++sq->head == sq->size)
			sq->head = 0;
		sq->cq->reserved++;
		sq->inflight++;
		n++;
		if (rc && rc != -ENOLINK) {
			/*
			 * The entry could not be read (SQ memory nobody mapped, or
			 * GPU memory the plugin cannot reach): never run what is
			 * in @cmd. There is no command id to answer, so the error
			 * goes out with cid 0xffff, as for unmapped memory.
			 */
			fetch_fault(emu, sq, at, rc);
			emu_post(emu, sq, 0xffff, EMU_ST_XFER, 0, NULL);
			continue;
		}
		/* -ENOLINK reads back all ones: opcode 0xff, answered as invalid */
		st = sq->qid ? emu_io(emu, sq, &cmd) : emu_admin(emu, &cmd, &result);
		if (st != EMU_PENDING)
			emu_post(emu, sq, cmd.cid, st, result, &cmd);
	}
	return n;
}

/* The arbiter's view of the active I/O SQs (arb.h). */
static struct emu_arb_q *arb_q(void *ctx, uint32_t i)
{
	return ((struct sio_nvme_emu *)ctx)->active[i]->arb;
}

static bool arb_ready(void *ctx, uint32_t i)
{
	struct emu_sq *sq = ((struct sio_nvme_emu *)ctx)->active[i];

	return sq->valid && sq->head != sq->tail;
}

static uint32_t arb_fetch(void *ctx, uint32_t i, uint32_t max)
{
	struct sio_nvme_emu *emu = ctx;

	return fetch(emu, emu->active[i], max);
}

static const struct emu_arb_ops arb_ops = { arb_q, arb_ready, arb_fetch };

static void read_doorbells(struct sio_nvme_emu *emu)
{
	for (uint32_t i = 0; i <= emu->nactive; i++) {
		struct emu_sq *sq = i == 0 ? &emu->sq[0] : emu->active[i - 1];
		struct emu_cq *cq = sq->cq;
		uint32_t t, h;

		if (emu->dbs && sq->qid) {	/* I/O queues, once configured */
			t = sq->tail;
			h = cq->head;
			emu_dbbuf_doorbells(emu, sq, &t, &h);
		} else {
			t = rd32_db(emu, sq->qid, false);
			h = rd32_db(emu, cq->qid, true);
		}

		/* A value past the queue is an invalid doorbell write: ignored. */
		if (t < sq->size)
			sq->tail = t;
		/* The head may only move over entries we posted. */
		if (h < cq->size && h != cq->head) {
			uint32_t adv = h >= cq->head ? h - cq->head : cq->size - cq->head + h;

			if (adv <= cq_used(cq))
				cq->head = h;
		}
	}
	/* The SQ entries were written before the doorbell: read them after. */
	atomic_thread_fence(memory_order_acquire);
}

static uint32_t process_queues(struct sio_nvme_emu *emu)
{
	uint32_t total = 0;

	read_doorbells(emu);
	batch_begin(emu);
	total += fetch(emu, &emu->sq[0], 16);	/* admin is in the urgent class */
	emu_aer_poll(emu);
	total += emu_arb_pass(&emu->arbiter, &arb_ops, emu, emu->nactive, 256);
	batch_end(emu);
	return total;
}

/* ---- enable, reset, shutdown ---- */

void emu_drain(struct sio_nvme_emu *emu, struct emu_sq *only)
{
	while (only ? only->inflight : emu->inflight) {
		if (emu->inflight == 0)
			break;	/* only RAM I/O: nothing asynchronous */
		emu_reap(emu, true);
	}
}

static void queues_clear(struct sio_nvme_emu *emu)
{
	emu->resetting = true;
	emu_drain(emu, NULL);
	emu->resetting = false;
	/* Doorbells reset to 0 with the controller; stale tails would replay. */
	for (uint32_t q = 0; q < emu->nq; q++) {
		wr32(emu, db_off(emu, q, false), 0);
		wr32(emu, db_off(emu, q, true), 0);
	}
	memset(emu->sq, 0, sizeof(*emu->sq) * emu->nq);
	memset(emu->cq, 0, sizeof(*emu->cq) * emu->nq);
	emu->nactive = 0;
	emu_aer_reset(emu);
	emu->dbs = emu->eis = 0;	/* Doorbell Buffer Config is forgotten */
}

static void ctrl_reset(struct sio_nvme_emu *emu)
{
	queues_clear(emu);
	emu->enabled = false;
	emu->failed = false;
	emu_features_reset(emu);
	set_csts(emu, csts(emu) & ~(NVME_SET(1, CSTS_RDY) | NVME_SET(1, CSTS_CFS)));
}

static const char *enable_check(struct sio_nvme_emu *emu, uint32_t cc, uint32_t aqa,
				uint64_t asq, uint64_t acq)
{
	uint32_t mps = NVME_CC_MPS(cc);
	uint32_t css = NVME_CC_CSS(cc);
	uint32_t ams = NVME_CC_AMS(cc);

	if (NVME_AQA_ASQS(aqa) == 0 || NVME_AQA_ACQS(aqa) == 0)
		return "AQA: admin queue sizes must be at least 2 entries";
	if ((asq & 0xfff) || (acq & 0xfff))
		return "ASQ/ACQ must be 4 KiB aligned";
	if (mps > EMU_MPSMAX)
		return "CC.MPS above CAP.MPSMAX";
	if (css != NVME_CC_CSS_NVM)
		return "CC.CSS: only the NVM command set";
	if (ams != NVME_CC_AMS_RR && ams != NVME_CC_AMS_WRRU)
		return "CC.AMS: unsupported arbitration mechanism";
	return NULL;
}

static void ctrl_enable(struct sio_nvme_emu *emu, uint32_t cc)
{
	uint32_t aqa = rd32(emu, NVME_REG_AQA);
	uint64_t asq = rd64(emu, NVME_REG_ASQ), acq = rd64(emu, NVME_REG_ACQ);
	const char *why = enable_check(emu, cc, aqa, asq, acq);

	if (why) {
		/* As QEMU: the controller stays not ready; the host times out. */
		fprintf(stderr, "nvme-emu: enable refused: %s\n", why);
		return;
	}
	emu->page_size = sio_nvme_prp_page_size(NVME_CC_MPS(cc));
	emu->wrr = NVME_CC_AMS(cc) == NVME_CC_AMS_WRRU;
	emu_arb_config(&emu->arbiter, emu->wrr, emu->arb);
	/*
	 * One weighted round per pass: the model's capacity, as a device's
	 * command slots are. Without it a pass takes all there is (RAM serves
	 * every command at once) and the weights never matter.
	 */
	emu->arbiter.round_limit = 1;
	emu->cq[0] = (struct emu_cq){ .valid = true, .phase = 1, .qid = 0,
				      .size = NVME_AQA_ACQS(aqa) + 1, .base = acq, .nsq = 1 };
	emu->sq[0] = (struct emu_sq){ .valid = true, .qid = 0, .size = NVME_AQA_ASQS(aqa) + 1,
				      .base = asq, .cq = &emu->cq[0] };
	emu->enabled = true;
	set_csts(emu, (csts(emu) & ~NVME_SET(1, CSTS_CFS)) | NVME_SET(1, CSTS_RDY));
}

static int cc_changed(struct sio_nvme_emu *emu, uint32_t cc)
{
	uint32_t old = emu->cc;

	emu->cc = cc;
	/*
	 * A refused enable is retried when the host rewrites CC with EN still
	 * set: a host may clear and set EN faster than one poll, and with RDY
	 * already 0 it has nothing to wait for in between.
	 */
	if (NVME_CC_EN(cc) && (!NVME_CC_EN(old) || !emu->enabled))
		ctrl_enable(emu, cc);
	else if (!NVME_CC_EN(cc) && NVME_CC_EN(old))
		ctrl_reset(emu);

	if (NVME_CC_SHN(cc) && !NVME_CC_SHN(old)) {
		set_shst(emu, NVME_CSTS_SHST_OCCUR);
		emu->resetting = true;
		emu_drain(emu, NULL);
		emu->resetting = false;
		emu_flush_all(emu);
		set_shst(emu, NVME_CSTS_SHST_CMPLT);
	} else if (!NVME_CC_SHN(cc) && NVME_CC_SHN(old)) {
		set_shst(emu, NVME_CSTS_SHST_NORMAL);
	}
	return 1;
}

/* ---- public ---- */

int sio_nvme_emu_poll(struct sio_nvme_emu *emu)
{
	uint32_t cc = rd32(emu, NVME_REG_CC);
	uint64_t msc = rd64(emu, NVME_REG_CMBMSC);
	int work = 0;

	if (cc != emu->cc)
		work += cc_changed(emu, cc);
	if (msc != emu->cmbmsc) {
		emu->cmbmsc = msc;
		republish(emu);
		work++;
	}
	if ((++emu->polls & 63) == 0)
		republish(emu);
	if (__atomic_exchange_n(&emu->fail_req, 0, __ATOMIC_ACQ_REL) && emu->enabled) {
		emu->failed = true;
		set_csts(emu, csts(emu) | NVME_SET(1, CSTS_CFS));
		work++;
	}
	if (!emu->enabled || emu->failed)
		return work;
	if (emu->inflight)
		work += emu_reap(emu, false);
	work += (int)process_queues(emu);
	if (emu->to_submit) {
		io_uring_submit(&emu->ring);
		emu->to_submit = 0;
	}
	work += emu_irq_flush(emu);
	return work;
}

void sio_nvme_emu_fail(struct sio_nvme_emu *emu)
{
	__atomic_store_n(&emu->fail_req, 1, __ATOMIC_RELEASE);
}

int sio_nvme_emu_run(struct sio_nvme_emu *emu, volatile sig_atomic_t *stop)
{
	struct sio_backoff b;

	/* Spin a little (a busy host answers within ~1 us), then yield, then
	 * sleep: less long while file I/O is in flight. */
	sio_backoff_init(&b, 2000, 100, 200000);
	while (!*stop) {
		int w = sio_nvme_emu_poll(emu);

		if (w < 0)
			return w;
		if (w > 0) {
			sio_backoff_reset(&b);
			continue;
		}
		b.max_ns = emu->inflight ? 20000 : 200000;
		sio_backoff_wait(&b);
	}
	return 0;
}

void sio_nvme_emu_config_default(struct sio_nvme_emu_config *cfg)
{
	memset(cfg, 0, sizeof(*cfg));
	cfg->backing = "ram:64M";
	cfg->max_qpairs = 64;
	cfg->mqes = 1024;
	cfg->dstrd = 0;
	cfg->mdts = 5;
	cfg->io_depth = 64;
	cfg->vendor = 0x1b36;
	cfg->name = "nvme-emu";
	cfg->cap_to = EMU_CAP_TO;
}

int sio_nvme_emu_parse_size(const char *s, uint64_t *out)
{
	return sio_parse_size(s, 0, UINT64_MAX, out) ? sio_err_wrap(EINVAL, "size") : 0;
}

uint64_t sio_nvme_emu_bar0_size(const struct sio_nvme_emu_config *cfg)
{
	uint64_t db = 2ull * (cfg->max_qpairs + 1) * sio_nvme_db_stride(cfg->dstrd);

	return (SIO_NVME_REG_DBS + db + EMU_PAGE - 1) & ~(uint64_t)(EMU_PAGE - 1);
}

static int config_check(const struct sio_nvme_emu_config *c)
{
	if (c->max_qpairs < 1 || c->max_qpairs > SIO_NVME_EMU_MAX_QUEUES)
		return sio_err_set(EINVAL, "queues: %u I/O queue pairs (1..%d)", c->max_qpairs,
				   SIO_NVME_EMU_MAX_QUEUES);
	if (c->mqes < 2 || c->mqes > 65536)
		return sio_err_set(EINVAL, "max queue entries: %u (2..65536)", c->mqes);
	if (c->dstrd > 15)	/* CAP.DSTRD is 4 bits; >= 10 puts doorbells a page apart */
		return sio_err_set(EINVAL, "dstrd: %u (0..15)", c->dstrd);
	if (sio_nvme_emu_bar0_size(c) > (1ull << 30))
		return sio_err_set(EINVAL, "dstrd %u with %u queue pairs needs a BAR0 over 1 GiB",
				   c->dstrd, c->max_qpairs);
	if (c->cap_to < 1 || c->cap_to > 255)
		return sio_err_set(EINVAL, "CAP.TO: %u (1..255, in 500 ms units)", c->cap_to);
	if (c->mdts < 1 || c->mdts > 10)
		return sio_err_set(EINVAL, "mdts: %u (1..10, a power of two of 4 KiB)", c->mdts);
	if (c->io_depth < 1 || c->io_depth > 1024)
		return sio_err_set(EINVAL, "io depth: %u (1..1024)", c->io_depth);
	if (c->cmb_mib > 4096)
		return sio_err_set(EINVAL, "cmb: %u MiB (at most 4096)", c->cmb_mib);
	if (c->nns == 0 && c->lba_size != 0 && c->lba_size != 512 && c->lba_size != 4096)
		return sio_err_set(EINVAL, "LBA size %u (512 or 4096)", c->lba_size);
	if (c->nns < 0 || c->nns > SIO_NVME_EMU_MAX_NS)
		return sio_err_set(EINVAL, "namespaces: %d (0..%d)", c->nns, SIO_NVME_EMU_MAX_NS);
	for (int i = 0; i < c->nns; i++) {
		if (c->ns[i].lba_size != 512 && c->ns[i].lba_size != 4096)
			return sio_err_set(EINVAL, "namespace %d: LBA size %u (512 or 4096)", i + 1,
					   c->ns[i].lba_size);
		if (c->ns[i].size < c->ns[i].lba_size || c->ns[i].size % c->ns[i].lba_size)
			return sio_err_set(EINVAL, "namespace %d: size %llu is not a multiple of %u",
					   i + 1, (unsigned long long)c->ns[i].size, c->ns[i].lba_size);
	}
	if (!c->backing)
		return sio_err_set(EINVAL, "backing: none given");
	return 0;
}

/* The arbiter's counters, a page or more: one entry per qid. */
static size_t arb_page_size(const struct sio_nvme_emu *emu)
{
	size_t sz = sizeof(struct emu_arb_page) + emu->nq * sizeof(struct emu_arb_q);

	return (sz + EMU_PAGE - 1) & ~(size_t)(EMU_PAGE - 1);
}

int sio_nvme_emu_create(const struct sio_nvme_emu_config *cfg, struct sio_nvme_emu **out)
{
	struct sio_nvme_emu *emu;
	int rc = config_check(cfg);

	if (rc)
		return rc;
	emu = calloc(1, sizeof(*emu));
	if (!emu)
		return sio_err_set(ENOMEM, "out of memory");
	emu->cfg = *cfg;
	emu->fd = -1;
	emu->devid = -1;
	emu->nq = cfg->max_qpairs + 1;
	emu->db_stride = sio_nvme_db_stride(cfg->dstrd);
	emu->mdts_bytes = EMU_PAGE << cfg->mdts;
	/* a PRP transfer takes at most a piece per page; an SGL up to EMU_SGL_PIECES */
	emu->max_segs = (emu->mdts_bytes / EMU_PAGE) + 1;
	if (emu->max_segs < EMU_SGL_PIECES)
		emu->max_segs = EMU_SGL_PIECES;
	emu->page_size = EMU_PAGE;
	emu->sq = calloc(emu->nq, sizeof(*emu->sq));
	emu->cq = calloc(emu->nq, sizeof(*emu->cq));
	emu->active = calloc(emu->nq, sizeof(*emu->active));
	emu->segs = calloc(emu->max_segs, sizeof(*emu->segs));
	emu->scratch = aligned_alloc(EMU_PAGE, emu->mdts_bytes);
	emu->elog = calloc(EMU_ELOG_ENTRIES, sizeof(*emu->elog));
	emu->arbpage = calloc(1, arb_page_size(emu));
	if (!emu->sq || !emu->cq || !emu->active || !emu->segs || !emu->scratch || !emu->elog ||
	    !emu->arbpage) {
		sio_nvme_emu_destroy(emu);
		return sio_err_set(ENOMEM, "out of memory");
	}
	emu->cap = NVME_SET((uint64_t)cfg->mqes - 1, CAP_MQES) |
		   NVME_SET(1ull, CAP_CQR) |			/* contiguous queues only */
		   NVME_SET((uint64_t)NVME_CAP_AMS_WRR, CAP_AMS) |
		   NVME_SET((uint64_t)cfg->cap_to, CAP_TO) |
		   NVME_SET((uint64_t)cfg->dstrd, CAP_DSTRD) |
		   NVME_SET((uint64_t)NVME_CAP_CSS_NVM, CAP_CSS) |
		   NVME_SET(0ull, CAP_MPSMIN) |			/* 4 KiB */
		   NVME_SET((uint64_t)EMU_MPSMAX, CAP_MPSMAX) |
		   NVME_SET((uint64_t)(cfg->cmb_mib ? 1 : 0), CAP_CMBS);
	emu_features_reset(emu);
	emu->start_ns = sio__now_ns();
	rc = emu_backing_open(emu);
	if (!rc)
		rc = emu_ns_state(emu);
	if (rc) {
		sio_nvme_emu_destroy(emu);
		return rc;
	}
	*out = emu;
	return 0;
}

/*
 * Move the arbiter's counters into a segment of this node, where `smartio
 * nvme stats` finds them beside each client's own. Without one they stay
 * private: counters are no reason to refuse a controller.
 */
static void arb_publish(struct sio_nvme_emu *emu)
{
	struct emu_arb_page *p;
	void *va;

	if (emu->arbseg || sio_segment_create(emu->fabric, 0, arb_page_size(emu), 0, &emu->arbseg))
		return;
	if (sio_segment_map(emu->arbseg, &va)) {
		sio_segment_close(emu->arbseg);
		emu->arbseg = NULL;
		return;
	}
	sio_segment_set_name(emu->arbseg, EMU_ARB_PAGE_NAME);
	p = va;
	memcpy(p->q, emu->arbpage->q, emu->nq * sizeof(struct emu_arb_q));
	p->device = (uint32_t)emu->devid;
	p->nq = emu->nq;
	for (uint32_t q = 1; q < emu->nq; q++)	/* live queues point into the page */
		if (emu->sq[q].arb)
			emu->sq[q].arb = &p->q[q];
	free(emu->arbpage);
	emu->arbpage = p;
	__atomic_store_n(&p->magic, EMU_ARB_PAGE_MAGIC, __ATOMIC_RELEASE);
}

static void publish_initial(struct sio_nvme_emu *emu)
{
	wr64(emu, NVME_REG_CAP, emu->cap);
	wr32(emu, NVME_REG_VS, EMU_VS);
	emu->cc = rd32(emu, NVME_REG_CC);
	emu->cmbmsc = rd64(emu, NVME_REG_CMBMSC);
	set_csts(emu, 0);
	republish(emu);
	for (uint32_t q = 0; q < emu->nq; q++) {
		wr32(emu, db_off(emu, q, false), 0);
		wr32(emu, db_off(emu, q, true), 0);
	}
	/* A CC left enabled by an earlier owner is acted on at the first poll. */
	emu->cc = 0;
}

int sio_nvme_emu_attach_mem(struct sio_nvme_emu *emu, void *bar0,
			    const struct sio_nvme_emu_dma *dma)
{
	if (!emu || !bar0 || !dma || !dma->read || !dma->write || !dma->ptr)
		return sio_err_set(EINVAL, "attach: controller, BAR0 and all DMA calls are required");
	emu->bar0 = bar0;
	emu->bar0_size = sio_nvme_emu_bar0_size(&emu->cfg);
	emu->dma = *dma;
	publish_initial(emu);
	return 0;
}

int sio_nvme_emu_attach(struct sio_nvme_emu *emu, struct sio_fabric *f)
{
	struct sio_device_desc desc = {
		.class_code = 0x010802,
		.vendor = emu->cfg.vendor ? emu->cfg.vendor : 0x1b36,
		.device = 0x0010,
		.nbars = emu->cfg.cmb_mib ? EMU_CMB_BAR + 1 : 1,
		.name = emu->cfg.name ? emu->cfg.name : "nvme-emu",
		.chassis = emu->cfg.chassis,
	};
	struct sio_segment *bar;
	struct sio_errsave es;
	void *va;
	int rc;

	if (emu->reg)
		return sio_err_set(EBUSY, "attach: already registered");
	desc.bar_size[0] = sio_nvme_emu_bar0_size(&emu->cfg);
	if (emu->cfg.cmb_mib)
		desc.bar_size[EMU_CMB_BAR] = (uint64_t)emu->cfg.cmb_mib << 20;
	rc = sio_device_register(f, &desc, &emu->reg);
	if (rc)
		return sio_err_wrap(-rc, "register device");
	rc = sio_devreg_bar(emu->reg, 0, &bar);
	if (!rc)
		rc = sio_segment_map(bar, &va);
	if (rc)
		rc = sio_err_wrap(-rc, "map BAR0");
	if (!rc)
		rc = emu_fabric_dma(emu);
	if (rc) {
		sio_err_save(&es);
		sio_devreg_close(emu->reg);
		sio_err_restore(&es);
		emu->reg = NULL;
		return rc;
	}
	emu->fabric = f;
	emu->devid = sio_devreg_id(emu->reg);
	emu->bar0 = va;
	emu->bar0_size = desc.bar_size[0];
	publish_initial(emu);
	arb_publish(emu);
	return 0;
}

int64_t sio_nvme_emu_device_id(const struct sio_nvme_emu *emu)
{
	return emu->devid;
}

void sio_nvme_emu_destroy(struct sio_nvme_emu *emu)
{
	if (!emu)
		return;
	if (emu->bar0) {
		emu->resetting = true;
		emu_drain(emu, NULL);
		set_csts(emu, 0);
	}
	if (emu->arbseg)
		sio_segment_close(emu->arbseg);
	else
		free(emu->arbpage);
	if (emu->reg)
		sio_devreg_close(emu->reg);
	emu_backing_close(emu);
	for (uint32_t q = 0; emu->ahead && q < emu->nq; q++)
		free(emu->ahead[q]);
	free(emu->ahead);
	free(emu->sq);
	free(emu->cq);
	free(emu->active);
	free(emu->segs);
	free(emu->scratch);
	free(emu->elog);
	free(emu);
}

/* ---- queue bookkeeping used by admin.c ---- */

void emu_active_add(struct sio_nvme_emu *emu, struct emu_sq *sq)
{
	/* Keep qid order so that round robin visits queues predictably. */
	uint32_t i = emu->nactive;

	while (i > 0 && emu->active[i - 1]->qid > sq->qid) {
		emu->active[i] = emu->active[i - 1];
		i--;
	}
	emu->active[i] = sq;
	emu->nactive++;
	emu_arb_reset(&emu->arbiter);
}

void emu_active_del(struct sio_nvme_emu *emu, struct emu_sq *sq)
{
	uint32_t j = 0;

	for (uint32_t i = 0; i < emu->nactive; i++)
		if (emu->active[i] != sq)
			emu->active[j++] = emu->active[i];
	emu->nactive = j;
	emu_arb_reset(&emu->arbiter);
}

uint32_t emu_cc(struct sio_nvme_emu *emu)
{
	return rd32(emu, NVME_REG_CC);
}
