/* SPDX-License-Identifier: MIT */
/*
 * The emulated controller's command decoding, in-process (inproc.h): each
 * field is taken from the dword and the bits the NVMe base specification
 * gives it, and a value out of its range gets the status the specification
 * names, with Do Not Retry. The controller is polled by the test itself:
 * no process, fabric or thread, so each case is a few polls.
 */
#include <criterion/criterion.h>
#include <string.h>
#include <nvme/types.h>
#include <smartio/smartio.h>
#include <smartio/nvme/cmd.h>
#include "inproc.h"

#define ASQ	0x0000u
#define ACQ	0x1000u
#define IOSQ	0x2000u
#define IOCQ	0x3000u
#define DATA	0x8000u		/* 32 KiB: what commands write */
#define RDATA	0x10000u	/* 32 KiB: what they read back */
#define MQES	64u
#define QPAIRS	4u
#define NS1_BLOCKS	((1u << 20) / 512)

#define ST(sct, sc)	SIO_NVME_MK_STATUS(NVME_SCT_##sct, NVME_SC_##sc)

static struct inproc h;
static struct inproc_q a = { .sqoff = ASQ, .cqoff = ACQ };
static struct inproc_q io = { .qid = 1, .sqoff = IOSQ, .cqoff = IOCQ, .phase = 1 };
static uint16_t next_cid;
static uint32_t dw0;		/* the last completion's result */
static bool dnr;		/* ... and its Do Not Retry bit */

static void up(void)
{
	struct sio_nvme_emu_config cfg;

	inproc_config(&cfg);	/* MQES, QPAIRS; MDTS 32 KiB */
	cr_assert_eq(cfg.mqes, MQES);
	cr_assert_eq(cfg.max_qpairs, QPAIRS);
	cr_assert_eq(inproc_open(&h, &cfg), 0, "%s", sio_errmsg());
	inproc_reset(&h);
	cr_assert(inproc_enable(&h, &a), "the controller did not come ready");
	io = (struct inproc_q){ .qid = 1, .sqoff = IOSQ, .cqoff = IOCQ, .phase = 1 };
}

static void down(void)
{
	inproc_close(&h);
}

TestSuite(decode, .init = up, .fini = down, .timeout = 30);

/* @c on @q to its completion; returns SCT << 8 | SC (dw0 and dnr set). */
static uint16_t run_on(struct inproc_q *q, struct sio_nvme_cmd *c)
{
	struct sio_nvme_cpl cpl;

	c->cid = ++next_cid;
	inproc_submit(&h, q, c);
	cr_assert(inproc_wait(&h, q, &cpl), "no completion for opcode 0x%02x", c->opcode);
	cr_assert_eq(cpl.cid, c->cid, "completion for cid %u, not %u", cpl.cid, c->cid);
	dw0 = cpl.result;
	dnr = SIO_NVME_STATUS_DNR(cpl.status);
	return SIO_NVME_STATUS_CODE(cpl.status);
}

static uint16_t admin(struct sio_nvme_cmd *c)
{
	return run_on(&a, c);
}

static struct sio_nvme_cmd cmd(uint8_t opcode, uint32_t nsid, uint32_t cdw10, uint32_t cdw11)
{
	struct sio_nvme_cmd c;

	memset(&c, 0, sizeof(c));
	c.opcode = opcode;
	c.nsid = nsid;
	c.cdw10 = cdw10;
	c.cdw11 = cdw11;
	c.prp1 = INPROC_HOST_BUS + DATA;
	return c;
}

/* Refused as the specification says, and not to be retried. */
#define cr_expect_refused(got, want, what)						\
	do {										\
		uint16_t got_ = (got);							\
		cr_expect_eq(got_, (want), "%s: status 0x%03x, want 0x%03x", what,	\
			     got_, (unsigned)(want));					\
		cr_expect(dnr, "%s: without Do Not Retry", what);			\
	} while (0)

static void io_queues(void)
{
	struct sio_nvme_cmd c;

	sio_nvme_cmd_create_cq(&c, 1, INPROC_QSZ, INPROC_HOST_BUS + IOCQ, SIO_NVME_Q_PC, 0);
	cr_assert_eq(admin(&c), 0, "create I/O CQ");
	sio_nvme_cmd_create_sq(&c, 1, INPROC_QSZ, INPROC_HOST_BUS + IOSQ, 1, 0);
	cr_assert_eq(admin(&c), 0, "create I/O SQ");
}

static uint16_t rw(uint8_t opcode, uint32_t nsid, uint32_t slba_lo, uint32_t slba_hi,
		   uint32_t cdw12, uint32_t buf)
{
	struct sio_nvme_cmd c = cmd(opcode, nsid, slba_lo, slba_hi);

	c.cdw12 = cdw12;
	c.prp1 = INPROC_HOST_BUS + buf;
	c.prp2 = c.prp1 + 4096;		/* up to two pages */
	return run_on(&io, &c);
}

Test(decode, identify_takes_cns_from_the_low_byte_of_cdw10)
{
	struct nvme_id_ctrl *id = (struct nvme_id_ctrl *)(h.host + DATA);
	struct sio_nvme_cmd c = cmd(nvme_admin_identify, 0,
				    NVME_IDENTIFY_CNS_CTRL | 0xabcdu << 16, 0);

	/* CNTID in the upper half is a field of its own */
	cr_assert_eq(admin(&c), 0);
	cr_expect_eq(id->mdts, 3);
	cr_expect_eq(id->nn, 2);
	cr_expect_eq(id->sqes, 0x66);
	cr_expect_eq(id->cqes, 0x44);
	c = cmd(nvme_admin_identify, 0, 0x7f, 0);
	cr_expect_refused(admin(&c), ST(GENERIC, INVALID_FIELD), "CNS 0x7f");
}

Test(decode, identify_namespace_names_it_by_nsid)
{
	struct nvme_id_ns *ns = (struct nvme_id_ns *)(h.host + DATA);
	struct sio_nvme_cmd c = cmd(nvme_admin_identify, 2, NVME_IDENTIFY_CNS_NS, 0);

	cr_assert_eq(admin(&c), 0);
	cr_expect_eq(ns->nsze, (1u << 20) / 4096);
	cr_expect_eq(ns->lbaf[ns->flbas & 0xf].ds, 12);
	c = cmd(nvme_admin_identify, 1, NVME_IDENTIFY_CNS_NS, 0);
	cr_assert_eq(admin(&c), 0);
	cr_expect_eq(ns->nsze, NS1_BLOCKS);
	cr_expect_eq(ns->lbaf[ns->flbas & 0xf].ds, 9);
	c = cmd(nvme_admin_identify, 3, NVME_IDENTIFY_CNS_NS, 0);
	cr_expect_refused(admin(&c), ST(GENERIC, INVALID_NS), "NSID beyond NN");
	c = cmd(nvme_admin_identify, 0, NVME_IDENTIFY_CNS_NS, 0);
	cr_expect_refused(admin(&c), ST(GENERIC, INVALID_NS), "NSID 0");
}

Test(decode, create_cq_takes_qid_from_bits_15_0_and_a_zero_based_size_from_31_16)
{
	struct sio_nvme_cmd c;

	c = cmd(nvme_admin_create_cq, 0, (MQES - 1) << 16 | 1, SIO_NVME_Q_PC);
	cr_expect_eq(admin(&c), 0, "qid 1 of MQES entries");
	c = cmd(nvme_admin_create_cq, 0, MQES << 16 | 2, SIO_NVME_Q_PC);
	cr_expect_refused(admin(&c), ST(CMD_SPECIFIC, QUEUE_SIZE), "MQES + 1 entries");
	c = cmd(nvme_admin_create_cq, 0, 0u << 16 | 2, SIO_NVME_Q_PC);
	cr_expect_refused(admin(&c), ST(CMD_SPECIFIC, QUEUE_SIZE), "one entry");
	c = cmd(nvme_admin_create_cq, 0, 15u << 16 | (QPAIRS + 1), SIO_NVME_Q_PC);
	cr_expect_refused(admin(&c), ST(CMD_SPECIFIC, QID_INVALID), "qid above the queues");
	c = cmd(nvme_admin_create_cq, 0, 15u << 16 | 1, SIO_NVME_Q_PC);
	cr_expect_refused(admin(&c), ST(CMD_SPECIFIC, QID_INVALID), "qid 1 again");
	c = cmd(nvme_admin_create_cq, 0, 15u << 16 | 2, 0);
	cr_expect_refused(admin(&c), ST(GENERIC, INVALID_FIELD), "not physically contiguous");
	c = cmd(nvme_admin_create_cq, 0, 15u << 16 | 2, SIO_NVME_Q_PC);
	c.prp1 += 8;
	cr_expect_refused(admin(&c), ST(GENERIC, PRP_INVALID_OFFSET), "CQ not page aligned");
}

Test(decode, create_sq_names_its_cq_in_bits_31_16_of_cdw11)
{
	struct sio_nvme_cmd c;

	sio_nvme_cmd_create_cq(&c, 1, INPROC_QSZ, INPROC_HOST_BUS + IOCQ, SIO_NVME_Q_PC, 0);
	cr_assert_eq(admin(&c), 0);
	sio_nvme_cmd_create_sq(&c, 1, INPROC_QSZ, INPROC_HOST_BUS + IOSQ, 2, 0);
	cr_expect_refused(admin(&c), ST(CMD_SPECIFIC, CQ_INVALID), "CQ 2 does not exist");
	sio_nvme_cmd_create_sq(&c, 1, INPROC_QSZ, INPROC_HOST_BUS + IOSQ, 1, 0);
	cr_expect_eq(admin(&c), 0, "on CQ 1");
	c = cmd(nvme_admin_delete_cq, 0, 1, 0);
	cr_expect_refused(admin(&c), ST(CMD_SPECIFIC, INVALID_QUEUE),
			  "CQ 1 while SQ 1 posts to it");
}

Test(decode, number_of_queues_is_nsqr_in_bits_15_0_and_ncqr_in_31_16_zero_based)
{
	struct sio_nvme_cmd c;

	c = cmd(nvme_admin_set_features, 0, NVME_FEAT_FID_NUM_QUEUES, 2u << 16 | 0);
	cr_assert_eq(admin(&c), 0);
	cr_expect_eq(dw0, 2u << 16 | 0, "granted 0x%08x", dw0);
	sio_nvme_cmd_create_cq(&c, 3, INPROC_QSZ, INPROC_HOST_BUS + IOCQ, SIO_NVME_Q_PC, 0);
	cr_expect_eq(admin(&c), 0, "CQ 3 of 3");
	sio_nvme_cmd_create_cq(&c, 4, INPROC_QSZ, INPROC_HOST_BUS + IOCQ, SIO_NVME_Q_PC, 0);
	cr_expect_refused(admin(&c), ST(CMD_SPECIFIC, QID_INVALID), "CQ 4 of 3");
	sio_nvme_cmd_create_sq(&c, 2, INPROC_QSZ, INPROC_HOST_BUS + IOSQ, 3, 0);
	cr_expect_refused(admin(&c), ST(CMD_SPECIFIC, QID_INVALID), "SQ 2 of 1");
	c = cmd(nvme_admin_get_features, 0, NVME_FEAT_FID_NUM_QUEUES, 0);
	cr_assert_eq(admin(&c), 0);
	cr_expect_eq(dw0, 2u << 16 | 0, "Get Features reads 0x%08x", dw0);
	c = cmd(nvme_admin_set_features, 0, NVME_FEAT_FID_NUM_QUEUES, 0);
	cr_expect_refused(admin(&c), ST(GENERIC, CMD_SEQ_ERROR), "after a queue was created");
}

Test(decode, get_log_page_length_is_numdu_and_numdl_in_dwords_zero_based)
{
	struct nvme_smart_log *s = (struct nvme_smart_log *)(h.host + DATA);
	struct sio_nvme_cmd c;

	memset(h.host + DATA, 0xa5, 8192);
	/* NUMDL 127: 128 dwords, 512 bytes */
	c = cmd(nvme_admin_get_log_page, 0xffffffffu, NVME_LOG_LID_SMART | 127u << 16, 0);
	cr_assert_eq(admin(&c), 0);
	cr_expect_eq(s->avail_spare, 100);
	cr_expect_eq(s->temperature[0] | s->temperature[1] << 8, 313);
	cr_expect_eq(h.host[DATA + 511], 0, "the log's reserved tail");
	cr_expect_eq(h.host[DATA + 512], 0xa5, "a byte past NUMD was written");
	/* NUMDU 1 makes it 512 KiB: above MDTS */
	c = cmd(nvme_admin_get_log_page, 0xffffffffu, NVME_LOG_LID_SMART | 127u << 16, 1);
	cr_expect_refused(admin(&c), ST(GENERIC, INVALID_FIELD), "NUMDU 1");
	c = cmd(nvme_admin_get_log_page, 0, 0x7fu | 127u << 16, 0);
	cr_expect_refused(admin(&c), ST(CMD_SPECIFIC, INVALID_LOG_PAGE), "log 0x7f");
	c = cmd(nvme_admin_get_log_page, 1, NVME_LOG_LID_SMART | 127u << 16, 0);
	cr_expect_refused(admin(&c), ST(GENERIC, INVALID_FIELD), "SMART of one namespace");
}

Test(decode, opcodes_nobody_defined_are_invalid_on_either_queue)
{
	struct sio_nvme_cmd c = cmd(0x7e, 0, 0, 0);

	cr_expect_refused(admin(&c), ST(GENERIC, INVALID_OPCODE), "admin opcode 0x7e");
	io_queues();
	c = cmd(0x7e, 1, 0, 0);
	cr_expect_refused(run_on(&io, &c), ST(GENERIC, INVALID_OPCODE), "I/O opcode 0x7e");
}

Test(decode, read_write_take_slba_from_cdw10_and_cdw11_and_a_zero_based_nlb)
{
	io_queues();
	memset(h.host + DATA, 0x5a, 1024);
	memset(h.host + RDATA, 0xee, 2048);
	/* NLB 0 is one block: the second half of the buffer stays out */
	cr_assert_eq(rw(nvme_cmd_write, 1, 5, 0, 0, DATA), 0);
	cr_assert_eq(rw(nvme_cmd_read, 1, 5, 0, 1, RDATA), 0);
	for (int i = 0; i < 512; i++)
		cr_assert_eq(h.host[RDATA + i], 0x5a, "byte %d of block 5", i);
	for (int i = 512; i < 1024; i++)
		cr_assert_eq(h.host[RDATA + i], 0, "byte %d of block 6 (never written)", i);
	cr_expect_eq(h.host[RDATA + 1024], 0xee, "read past NLB + 1 blocks");
	/* SLBA 2^32 + 5: the upper dword counts, block 5 is not touched */
	memset(h.host + DATA, 0x11, 512);
	cr_expect_refused(rw(nvme_cmd_write, 1, 5, 1, 0, DATA), ST(GENERIC, LBA_RANGE),
			  "SLBA 2^32 + 5");
	cr_assert_eq(rw(nvme_cmd_read, 1, 5, 0, 0, RDATA), 0);
	cr_expect_eq(h.host[RDATA], 0x5a, "block 5 was written through a wrapped SLBA");
	cr_expect_refused(rw(nvme_cmd_read, 1, NS1_BLOCKS - 1, 0, 1, RDATA),
			  ST(GENERIC, LBA_RANGE), "the last block and one past it");
	cr_expect_refused(rw(nvme_cmd_read, 3, 0, 0, 0, RDATA), ST(GENERIC, INVALID_NS),
			  "namespace 3");
	/* 65 blocks of 512 bytes: above MDTS (32 KiB); NLB's upper bits are not part of it */
	cr_expect_refused(rw(nvme_cmd_read, 1, 0, 0, 64, RDATA), ST(GENERIC, INVALID_FIELD),
			  "65 blocks");
	cr_expect_eq(rw(nvme_cmd_read, 1, 0, 0, 0xabcd0000u, RDATA), 0,
		     "cdw12 31:16 are other fields: NLB is 0");
}

/* @n reads behind one doorbell, ids @cid0..: of block 5 into RDATA, or
 * (@spread) of block k into RDATA + 512 * k; the controller polled, the
 * read counter zeroed first. */
static void ring_reads(uint32_t n, uint16_t cid0, bool spread)
{
	h.noptr_reads = 0;
	for (uint32_t k = 0; k < n; k++) {
		struct sio_nvme_cmd c = cmd(nvme_cmd_read, 1, spread ? k : 5, 0);

		c.cid = (uint16_t)(cid0 + k);
		c.prp1 = INPROC_HOST_BUS + RDATA + (spread ? 512 * k : 0);
		memcpy(h.host + IOSQ + io.tail * 64, &c, sizeof(c));
		io.tail = (io.tail + 1) % INPROC_QSZ;
	}
	inproc_wr32(&h, 0x1000u + 2u * 4u, io.tail);
	inproc_pump(&h, 4);
}

/*
 * An SQ in memory with no host pointer (GPU memory on the fabric, where
 * each read is a CUDA copy waited for) is fetched many entries per read:
 * as many as the doorbell covers up to the ring's end. Every command
 * still completes once, in order, with its own id.
 */
Test(decode, an_sq_without_a_host_pointer_is_fetched_in_batches)
{
	struct sio_nvme_cpl cpl;
	uint32_t k;

	h.noptr_lo = IOSQ;
	h.noptr_hi = IOSQ + INPROC_QSZ * 64;
	io_queues();
	memset(h.host + DATA, 0x5a, 512);
	cr_assert_eq(rw(nvme_cmd_write, 1, 5, 0, 0, DATA), 0);
	cr_assert_eq(h.noptr_reads, 1, "one command, one read");
	/* 12 entries behind one doorbell: tail 1 -> 13, one read */
	ring_reads(12, 100, false);
	cr_expect_eq(h.noptr_reads, 1, "12 entries took %u reads", h.noptr_reads);
	for (k = 0; k < 12; k++) {
		cr_assert(inproc_reap(&h, &io, &cpl), "completion %u of 12 missing", k);
		cr_expect_eq(cpl.cid, 100 + k);
		cr_expect_eq(SIO_NVME_STATUS_CODE(cpl.status), 0);
	}
	inproc_wr32(&h, 0x1000u + 3u * 4u, io.head);
	cr_expect_eq(h.host[RDATA], 0x5a);
	/* across the ring's end (tail 13 -> 3): two reads, one each side */
	ring_reads(6, 200, false);
	cr_expect_eq(h.noptr_reads, 2, "6 entries across the end took %u reads", h.noptr_reads);
	for (k = 0; k < 6; k++) {
		cr_assert(inproc_reap(&h, &io, &cpl), "completion %u of 6 missing", k);
		cr_expect_eq(cpl.cid, 200 + k);
	}
}

/* Blocks 0..@n-1 hold bytes @fill + k, written through DATA (host memory). */
static void fill_blocks(uint32_t n, uint8_t fill)
{
	for (uint32_t k = 0; k < n; k++) {
		memset(h.host + DATA, fill + k, 512);
		cr_assert_eq(rw(nvme_cmd_write, 1, k, 0, 0, DATA), 0);
	}
}

/* @n completions, ids @cid0.., each with @status; the spread reads' data
 * (block k's bytes @fill + k at RDATA + 512 * k) unless they failed. */
static void reap_spread(uint32_t n, uint16_t cid0, uint16_t status, uint8_t fill)
{
	struct sio_nvme_cpl cpl;

	for (uint32_t k = 0; k < n; k++) {
		cr_assert(inproc_reap(&h, &io, &cpl), "completion %u of %u missing", k, n);
		cr_expect_eq(cpl.cid, cid0 + k);
		cr_expect_eq(SIO_NVME_STATUS_CODE(cpl.status), status);
		if (!status)
			cr_expect_eq(h.host[RDATA + 512 * k], fill + k, "block %u's data", k);
	}
	inproc_wr32(&h, 0x1000u + 3u * 4u, io.head);
}

/*
 * Reads into memory with no host pointer (GPU memory) inside the
 * controller's DMA batch: their data lands at the batch's end, many
 * writes with one copy, and no completion is written before the data it
 * stands for has landed. A batch that fails answers every command in it
 * with a Data Transfer Error, and none of its data is taken as written.
 */
Test(decode, reads_into_memory_without_a_pointer_complete_after_their_batch)
{
	io_queues();
	fill_blocks(12, 0x40);
	h.noptr_lo = RDATA;
	h.noptr_hi = RDATA + 32768;
	h.batch = true;
	memset(h.host + RDATA, 0xee, 12 * 512);
	ring_reads(12, 300, true);
	cr_expect_eq(h.deferred, 12, "%u of 12 reads deferred", h.deferred);
	cr_expect_eq(h.batches, 1, "12 reads landed in %u batches", h.batches);
	cr_expect_eq(h.early_cpl, 0, "%u completions written before their data", h.early_cpl);
	reap_spread(12, 300, 0, 0x40);
	/* a batch that fails: every command in it fails, and says so */
	h.batch_fails = true;
	ring_reads(4, 400, true);
	reap_spread(4, 400, ST(GENERIC, DATA_XFER_ERROR), 0);
	cr_expect_eq(h.early_cpl, 0);
}

/*
 * A CQ in memory with no host pointer, in the same batch: its entries are
 * written after the batch has landed, each as two ordered writes, never
 * as part of the batch (whose copies may land in any order).
 */
Test(decode, a_cq_without_a_host_pointer_is_written_after_the_batch)
{
	h.noptr_lo = IOCQ;
	h.noptr_hi = RDATA + 32768;
	h.batch = true;
	io_queues();
	fill_blocks(8, 0x60);
	ring_reads(8, 500, true);
	cr_expect_eq(h.deferred, 8, "%u of 8 reads deferred", h.deferred);
	cr_expect_eq(h.cpl_deferred, 0, "%u completion writes batched", h.cpl_deferred);
	cr_expect_eq(h.early_cpl, 0, "%u completions written before their data", h.early_cpl);
	reap_spread(8, 500, 0, 0x60);
}
