/* SPDX-License-Identifier: MIT */
/*
 * The command handling the CPU-side emulator and the GPU-resident model
 * share (<smartio/nvme/model.h>), on the host: what the GPU runs is the
 * same code, so these cases cover both. Statuses are checked against
 * libnvme's names, the emulator's source of truth.
 */
#include <criterion/criterion.h>
#include <string.h>
#include <nvme/types.h>
#include <smartio/nvme/queue.h>
#include <smartio/nvme/model.h>

#define ST(sc)	((uint16_t)(SIO_NVME_MK_STATUS(NVME_SCT_GENERIC, (sc)) | 0x8000u))

static struct sio_nvme_cmd rw_cmd(uint64_t slba, uint32_t nlb)
{
	struct sio_nvme_cmd c;

	sio_nvme_cmd_rw(&c, SIO_NVME_CMD_READ, 1, slba, nlb, 0, 0);
	return c;
}

Test(model, status_codes_are_the_specifications)
{
	cr_assert_eq(SIO_NVME_MODEL_ST(SIO_NVME_MODEL_SC_OPCODE), ST(NVME_SC_INVALID_OPCODE));
	cr_assert_eq(SIO_NVME_MODEL_ST(SIO_NVME_MODEL_SC_FIELD), ST(NVME_SC_INVALID_FIELD));
	cr_assert_eq(SIO_NVME_MODEL_ST(SIO_NVME_MODEL_SC_XFER), ST(NVME_SC_DATA_XFER_ERROR));
	cr_assert_eq(SIO_NVME_MODEL_ST(SIO_NVME_MODEL_SC_NS), ST(NVME_SC_INVALID_NS));
	cr_assert_eq(SIO_NVME_MODEL_ST(SIO_NVME_MODEL_SC_PRP_OFF), ST(NVME_SC_PRP_INVALID_OFFSET));
	cr_assert_eq(SIO_NVME_MODEL_ST(SIO_NVME_MODEL_SC_LBA), ST(NVME_SC_LBA_RANGE));
}

Test(model, rw_decode)
{
	struct sio_nvme_cmd c = rw_cmd(0x123456789ull, 8);
	struct sio_nvme_model_rw d;

	cr_assert_eq(sio_nvme_model_rw_decode(&c, 9, 1ull << 40, 4096, &d), 0);
	cr_assert_eq(d.slba, 0x123456789ull);
	cr_assert_eq(d.nlb, 8);
	cr_assert_eq(d.bytes, 4096);
	/* one byte over MDTS: Invalid Field, before the range is looked at */
	cr_assert_eq(sio_nvme_model_rw_decode(&c, 9, 1ull << 40, 4095, &d),
		     ST(NVME_SC_INVALID_FIELD));
	/* NLB is 0's based: 65536 blocks at most, never 0 */
	c.cdw12 = 0xffff;
	cr_assert_eq(sio_nvme_model_rw_decode(&c, 9, 1ull << 40, 1u << 25, &d), 0);
	cr_assert_eq(d.nlb, 65536);
}

Test(model, lba_range)
{
	cr_assert_eq(sio_nvme_model_lba_check(0, 1, 1), 0);
	cr_assert_eq(sio_nvme_model_lba_check(1000, 24, 1024), 0);
	cr_assert_eq(sio_nvme_model_lba_check(1000, 25, 1024), ST(NVME_SC_LBA_RANGE));
	cr_assert_eq(sio_nvme_model_lba_check(1024, 1, 1024), ST(NVME_SC_LBA_RANGE));
	/* slba + nlb would wrap: still out of range */
	cr_assert_eq(sio_nvme_model_lba_check(UINT64_MAX, 2, 1024), ST(NVME_SC_LBA_RANGE));
	cr_assert_eq(sio_nvme_model_lba_check(10, UINT64_MAX, 1024), ST(NVME_SC_LBA_RANGE));
}

Test(model, prp_simple)
{
	uint64_t second;

	/* inside PRP1's page: PRP2 is not looked at */
	cr_assert_eq(sio_nvme_model_prp_simple(0x10000, 0x7, 4096, 4096, &second), 0);
	cr_assert_eq(second, 0);
	cr_assert_eq(sio_nvme_model_prp_simple(0x10e00, 0, 512, 4096, &second), 0);
	cr_assert_eq(second, 0);
	/* crossing into the second page */
	cr_assert_eq(sio_nvme_model_prp_simple(0x10e00, 0x20000, 4096, 4096, &second), 0);
	cr_assert_eq(second, 3584);
	cr_assert_eq(sio_nvme_model_prp_simple(0x10e00, 0x20010, 4096, 4096, &second),
		     ST(NVME_SC_PRP_INVALID_OFFSET));
	/* PRP1 not dword aligned */
	cr_assert_eq(sio_nvme_model_prp_simple(0x10002, 0, 512, 4096, &second),
		     ST(NVME_SC_PRP_INVALID_OFFSET));
	/* needs a list: the caller's to walk */
	cr_assert_eq(sio_nvme_model_prp_simple(0x10000, 0x20000, 8193, 4096, &second),
		     ST(NVME_SC_INVALID_FIELD));
}

Test(model, completion_entry_and_phase)
{
	struct sio_nvme_cpl c;
	uint32_t tail = 2, phase = 1;

	memset(&c, 0xa5, sizeof(c));
	sio_nvme_model_cpl(&c, 7, 3, 12, 0xdead);
	cr_assert_eq(c.cid, 7);
	cr_assert_eq(c.sq_id, 3);
	cr_assert_eq(c.sq_head, 12);
	cr_assert_eq(c.result, 0xdead);
	cr_assert_eq(c.rsvd, 0);
	cr_assert_eq(sio_nvme_model_cpl_status(0, 1), 1);
	cr_assert_eq(sio_nvme_model_cpl_status(0, 0), 0);
	/* as the host decodes it: SC in bits 1..8, DNR in bit 15 */
	c.status = sio_nvme_model_cpl_status(ST(NVME_SC_LBA_RANGE), 1);
	cr_assert_eq(SIO_NVME_STATUS_CODE(c.status), NVME_SC_LBA_RANGE);
	cr_assert_eq(c.status & 1, 1);
	cr_assert_eq(c.status & 0x8000, 0x8000);
	sio_nvme_model_cq_advance(&tail, &phase, 4);
	cr_assert(tail == 3 && phase == 1);
	sio_nvme_model_cq_advance(&tail, &phase, 4);
	cr_assert(tail == 0 && phase == 0);
}

Test(model, sq_pending)
{
	cr_assert_eq(sio_nvme_model_sq_pending(0, 0, 8), 0);
	cr_assert_eq(sio_nvme_model_sq_pending(6, 2, 8), 4);
	cr_assert_eq(sio_nvme_model_sq_pending(2, 6, 8), 4);
	cr_assert_eq(sio_nvme_model_sq_pending(0, 8, 8), -1);
}
