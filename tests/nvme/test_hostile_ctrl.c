/* SPDX-License-Identifier: MIT */
/*
 * The controller driver (sio_nvme_ctrl_open) against a hand-played hostile
 * controller: a device model in a thread of this process that answers the
 * admin queue with values a broken or malicious controller could report.
 * Each case must end in a clear error or a safe clamp, never undefined
 * behaviour (the sanitizer run covers the shifts).
 */
#include <pthread.h>
#include <stdatomic.h>
#include <string.h>
#include <nvme/types.h>
#include <smartio/model.h>
#include <smartio/nvme/ctrl.h>
#include <smartio/nvme/queue.h>
#include "../core/common.h"

struct hostile {
	struct sio_devreg *reg;
	volatile uint32_t *bar;
	pthread_t thread;
	atomic_bool stop;
	uint8_t lba_ds;		/* Identify Namespace LBA data size exponent */
	uint32_t nq_grant;	/* queues granted by Set Features (0-based) */
	uint32_t nq_asked;	/* what the driver asked for (0-based, NSQR) */
	atomic_bool dark;	/* the link goes down at the next doorbell: all
				 * ones, nothing fetched */
	_Atomic uint64_t asq;	/* the admin SQ, once enabled */
	uint8_t ops[64];	/* the admin opcodes fetched, in order */
	atomic_uint nops;
};

static uint32_t rd(struct hostile *h, uint32_t off)
{
	return __atomic_load_n(&h->bar[off / 4], __ATOMIC_ACQUIRE);
}

static void wr(struct hostile *h, uint32_t off, uint32_t v)
{
	__atomic_store_n(&h->bar[off / 4], v, __ATOMIC_RELEASE);
}

/* Returns the completion's status (SCT << 8 | SC) and fills @result. */
static uint16_t answer(struct hostile *h, const struct sio_nvme_cmd *cmd, uint32_t *result)
{
	static uint8_t page[4096];

	memset(page, 0, sizeof(page));
	switch (cmd->opcode) {
	case nvme_admin_identify:
		if ((cmd->cdw10 & 0xff) == NVME_IDENTIFY_CNS_CTRL) {
			struct nvme_id_ctrl *id = (void *)page;

			memcpy(id->mn, "hostile", 7);
			id->nn = 1;
			id->sqes = 0x66;
			id->cqes = 0x44;
		} else if ((cmd->cdw10 & 0xff) == NVME_IDENTIFY_CNS_NS) {
			struct nvme_id_ns *ns = (void *)page;

			ns->nsze = ns->ncap = ns->nuse = 1024;
			ns->lbaf[0].ds = h->lba_ds;
		} else {
			return SIO_NVME_MK_STATUS(0, 0x02);	/* Invalid Field */
		}
		return sio_dma_write(h->reg, cmd->prp1, page, sizeof(page)) ? 0x04 : 0;
	case nvme_admin_set_features:
		if ((cmd->cdw10 & 0xff) != NVME_FEAT_FID_NUM_QUEUES)
			return SIO_NVME_MK_STATUS(0, 0x02);
		h->nq_asked = cmd->cdw11 & 0xffff;
		*result = h->nq_grant | h->nq_grant << 16;
		return 0;
	default:
		return SIO_NVME_MK_STATUS(0, 0x01);		/* Invalid Opcode */
	}
}

static void *play(void *arg)
{
	struct hostile *h = arg;
	uint64_t asq = 0, acq = 0;
	uint32_t qsize = 0, sqh = 0, cqt = 0, phase = 1;

	while (!atomic_load(&h->stop)) {
		uint32_t cc = rd(h, NVME_REG_CC), csts = rd(h, NVME_REG_CSTS);

		if (atomic_load(&h->dark)) {
			if (qsize && sqh != rd(h, SIO_NVME_REG_DBS) % qsize)
				wr(h, NVME_REG_CSTS, 0xffffffffu);
			usleep(100);
			continue;
		}
		if (NVME_CC_EN(cc) && !NVME_CSTS_RDY(csts)) {
			qsize = (rd(h, NVME_REG_AQA) & 0xfff) + 1;
			asq = rd(h, NVME_REG_ASQ) | (uint64_t)rd(h, NVME_REG_ASQ + 4) << 32;
			acq = rd(h, NVME_REG_ACQ) | (uint64_t)rd(h, NVME_REG_ACQ + 4) << 32;
			atomic_store(&h->asq, asq);
			sqh = cqt = 0;
			phase = 1;
			wr(h, NVME_REG_CSTS, NVME_SET(1, CSTS_RDY));
		} else if (!NVME_CC_EN(cc) && csts) {
			wr(h, NVME_REG_CSTS, 0);
		} else if (cc & (3u << 14)) {	/* CC.SHN: shut down at once */
			wr(h, NVME_REG_CSTS, csts | NVME_SET(NVME_CSTS_SHST_CMPLT, CSTS_SHST));
		}
		while (NVME_CSTS_RDY(csts) && qsize && sqh != rd(h, SIO_NVME_REG_DBS) % qsize) {
			struct sio_nvme_cmd cmd;
			struct sio_nvme_cpl cpl = { 0 };

			if (sio_dma_read(h->reg, asq + sqh * sizeof(cmd), &cmd, sizeof(cmd)))
				break;
			sqh = (sqh + 1) % qsize;
			if (atomic_load(&h->nops) < sizeof(h->ops))
				h->ops[atomic_fetch_add(&h->nops, 1)] = cmd.opcode;
			cpl.status = (uint16_t)(answer(h, &cmd, &cpl.result) << 1 | phase);
			cpl.sq_head = (uint16_t)sqh;
			cpl.cid = cmd.cid;
			sio_dma_write(h->reg, acq + cqt * sizeof(cpl), &cpl, sizeof(cpl));
			if (++cqt == qsize) {
				cqt = 0;
				phase ^= 1;
			}
		}
		usleep(100);
	}
	return NULL;
}

/* A controller with @bar0 bytes of BAR0 and CAP.DSTRD @dstrd, lent by node 0. */
static void hostile_start(struct hostile *h, struct sio_fabric *f, uint64_t bar0, uint32_t dstrd)
{
	struct sio_device_desc d = { .class_code = 0x010802, .vendor = 0x1b36, .device = 0x10,
				     .nbars = 1, .bar_size = { bar0 }, .name = "hostile-nvme" };
	struct sio_segment *seg;
	void *va;
	uint64_t cap = 63 | 1ull << 16 | 4ull << 24 | (uint64_t)dstrd << 32 | 1ull << 37;

	cr_assert_eq(sio_device_register(f, &d, &h->reg), 0, "%s", sio_errmsg());
	cr_assert_eq(sio_devreg_bar(h->reg, 0, &seg), 0, "%s", sio_errmsg());
	cr_assert_eq(sio_segment_map(seg, &va), 0, "%s", sio_errmsg());
	h->bar = va;
	wr(h, NVME_REG_CAP, (uint32_t)cap);
	wr(h, NVME_REG_CAP + 4, (uint32_t)(cap >> 32));
	wr(h, NVME_REG_VS, 0x10400);
	atomic_store(&h->stop, false);
	cr_assert_eq(pthread_create(&h->thread, NULL, play, h), 0);
}

static void hostile_stop(struct hostile *h)
{
	atomic_store(&h->stop, true);
	pthread_join(h->thread, NULL);
	sio_devreg_close(h->reg);
}

/* A two-node fabric: node 0 lends the hostile controller, node 1 borrows it. */
struct bench {
	const char *name;
	struct sio_fabric *lender, *borrower;
	struct hostile h;
	struct sio_device *dev;
};

static void bench_up(struct bench *b, const char *tag, uint64_t bar0, uint32_t dstrd)
{
	struct sio_fabric_config c = { .nodes = 2 };

	b->name = test_fabric(tag, &c);
	b->lender = join(b->name, 0);
	b->borrower = join(b->name, 1);
	hostile_start(&b->h, b->lender, bar0, dstrd);
	cr_assert_eq(sio_device_borrow(b->borrower, sio_devreg_id(b->h.reg), SIO_BORROW_EXCLUSIVE,
				       &b->dev), 0, "%s", sio_errmsg());
}

static void bench_down(struct bench *b)
{
	sio_device_close(b->dev);
	hostile_stop(&b->h);
	sio_fabric_close(b->borrower);
	sio_fabric_close(b->lender);
	sio_fabric_destroy(b->name);
}

Test(hostile_ctrl, bar0_too_small_for_the_doorbell_stride)
{
	struct bench b = { .h = { .lba_ds = 9, .nq_grant = 3 } };
	struct sio_nvme_ctrl *ctrl;

	/* Stride 2^15 * 4 bytes: the admin doorbells alone need 0x1000 + 256 KiB. */
	bench_up(&b, "hc-bar", 0x4000, 15);
	cr_assert_eq(sio_nvme_ctrl_open(b.dev, NULL, &ctrl), -EINVAL);
	cr_assert(strstr(sio_errmsg(), "too small"), "message: %s", sio_errmsg());
	bench_down(&b);
}

Test(hostile_ctrl, queue_count_clamped_to_the_doorbells_bar0_holds)
{
	struct bench b = { .h = { .lba_ds = 9, .nq_grant = 0xfffe } };	/* grants anything */
	struct sio_nvme_ctrl_info ci;
	struct sio_nvme_ctrl *ctrl;

	/* 0x4000 bytes, doorbells 1 KiB apart: queue ids 0..5 fit (12 KiB / 2 KiB). */
	bench_up(&b, "hc-nq", 0x4000, 8);
	cr_assert_eq(sio_nvme_ctrl_open(b.dev, NULL, &ctrl), 0, "%s", sio_errmsg());
	cr_assert_eq(b.h.nq_asked + 1, 5, "asked for %u queues", b.h.nq_asked + 1);
	cr_assert_eq(sio_nvme_ctrl_info(ctrl, &ci), 0);
	cr_assert_eq(ci.io_queues, 5);
	sio_nvme_ctrl_close(ctrl);
	bench_down(&b);
}

Test(hostile_ctrl, lba_size_exponent_out_of_range)
{
	static const uint8_t bad[] = { 0, 8, 17, 31, 32, 200, 255 };
	struct bench b = { .h = { .lba_ds = 9, .nq_grant = 3 } };
	struct sio_nvme_ctrl *ctrl;
	struct sio_nvme_ns ns;

	bench_up(&b, "hc-ds", 0x4000, 0);
	cr_assert_eq(sio_nvme_ctrl_open(b.dev, NULL, &ctrl), 0, "%s", sio_errmsg());
	cr_assert_eq(sio_nvme_ctrl_ns(ctrl, 1, &ns), 0, "%s", sio_errmsg());
	cr_assert_eq(ns.lba_size, 512);
	for (size_t i = 0; i < sizeof(bad); i++) {
		b.h.lba_ds = bad[i];
		cr_assert_eq(sio_nvme_ctrl_ns(ctrl, 1, &ns), -EIO, "ds %u accepted", bad[i]);
		cr_assert(strstr(sio_errmsg(), "LBA data size"), "%s", sio_errmsg());
	}
	b.h.lba_ds = 12;
	cr_assert_eq(sio_nvme_ctrl_ns(ctrl, 1, &ns), 0, "%s", sio_errmsg());
	cr_assert_eq(ns.lba_size, 4096);
	sio_nvme_ctrl_close(ctrl);
	bench_down(&b);
}

/*
 * A link down under the admin queue (a manager on another host than the
 * lender's): the registers read all ones, and the command written meanwhile
 * never lands: its slot holds what it held a lap before, and the doorbell
 * is lost. When the link is back, the next command must not make the
 * controller run that old entry; the lost one is run once, and its late
 * completion is not taken for the next command's.
 */
Test(hostile_ctrl, admin_writes_lost_while_the_link_was_down)
{
	struct bench b = { .h = { .lba_ds = 9, .nq_grant = 3 } };
	struct sio_nvme_cmd old = { .opcode = 0x7e, .cid = 0x1003 }, set = { 0 };
	struct sio_nvme_cpl cpl;
	struct sio_nvme_ctrl *ctrl;
	uint32_t tail, csts, n0, ops = 0, i;

	bench_up(&b, "hc-dark", 0x4000, 0);
	cr_assert_eq(sio_nvme_ctrl_open(b.dev, NULL, &ctrl), 0, "%s", sio_errmsg());
	/* the link goes down as a command goes out: nothing is fetched, and
	 * the registers read all ones */
	tail = rd(&b.h, SIO_NVME_REG_DBS);
	csts = rd(&b.h, NVME_REG_CSTS);
	atomic_store(&b.h.dark, true);
	cr_assert_eq(sio_nvme_ctrl_identify(ctrl, NVME_IDENTIFY_CNS_CTRL, 0, 0, NULL), -ENODEV,
		     "%s", sio_errmsg());
	/* what it wrote is lost: the slot holds an old entry, the doorbell its old tail */
	cr_assert_eq(rd(&b.h, SIO_NVME_REG_DBS), (tail + 1) % SIO_NVME_ADMIN_DEPTH);
	cr_assert_eq(sio_dma_write(b.h.reg, atomic_load(&b.h.asq) + tail * sizeof(old), &old,
				   sizeof(old)), 0);
	wr(&b.h, SIO_NVME_REG_DBS, tail);
	/* the link is back */
	n0 = atomic_load(&b.h.nops);
	wr(&b.h, NVME_REG_CSTS, csts);
	atomic_store(&b.h.dark, false);
	set.opcode = nvme_admin_set_features;
	set.cdw10 = NVME_FEAT_FID_NUM_QUEUES;
	set.cdw11 = 2 | 2u << 16;
	cr_assert_eq(sio_nvme_ctrl_admin(ctrl, &set, &cpl, 0), 0, "%s", sio_errmsg());
	cr_assert_eq(cpl.result, 3 | 3u << 16,
		     "the Identify's completion was taken for the Set Features' (result 0x%x)",
		     cpl.result);
	for (i = n0; i < atomic_load(&b.h.nops); i++) {
		cr_assert_neq(b.h.ops[i], old.opcode, "the controller ran the slot's old entry");
		ops = ops << 8 | b.h.ops[i];
	}
	cr_assert_eq(ops, (uint32_t)nvme_admin_identify << 8 | nvme_admin_set_features,
		     "fetched after the link came back: 0x%x", ops);
	sio_nvme_ctrl_close(ctrl);
	bench_down(&b);
}
