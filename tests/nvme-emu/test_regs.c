/* SPDX-License-Identifier: MIT */
/* Registers, enable/reset, Identify, queue management, features, logs. */
#include <criterion/criterion.h>
#include <string.h>
#include <nvme/types.h>
#include "harness.h"

static struct host H;

static void up(void)
{
	h_up_raw(&H);
}

static void down(void)
{
	h_stop(&H);
}

TestSuite(regs, .init = up, .fini = down, .timeout = 60);

static struct sio_nvme_cmd adm(uint8_t opc, uint32_t nsid, uint32_t cdw10, uint32_t cdw11, uint64_t prp1)
{
	struct sio_nvme_cmd c;

	memset(&c, 0, sizeof(c));
	c.opcode = opc;
	c.nsid = nsid;
	c.cdw10 = cdw10;
	c.cdw11 = cdw11;
	c.prp1 = prp1;
	return c;
}

Test(regs, capabilities)
{
	uint64_t cap = h_rd64(&H, NVME_REG_CAP);
	struct sio_device_info in;

	cr_assert_eq(NVME_CAP_MQES(cap), 255);
	cr_assert_eq(NVME_CAP_CQR(cap), 1);
	cr_assert_eq(NVME_CAP_AMS(cap) & 1, 1, "weighted round robin offered");
	cr_assert_neq(NVME_CAP_TO(cap), 0);
	cr_assert_eq(NVME_CAP_DSTRD(cap), 0);
	cr_assert_eq(NVME_CAP_CSS(cap) & 1, 1, "NVM command set");
	cr_assert_eq(NVME_CAP_MPSMIN(cap), 0);
	cr_assert_geq(NVME_CAP_MPSMAX(cap), 0);
	cr_assert_eq(NVME_CAP_CMBS(cap), 0);
	cr_assert_eq(h_rd32(&H, NVME_REG_VS), 0x00010400);
	cr_assert_eq(h_rd32(&H, NVME_REG_CMBLOC), 0);
	cr_assert_eq(h_rd32(&H, NVME_REG_CMBSZ), 0);
	cr_assert_eq(sio_device_info(H.dev, &in), 0);
	cr_assert_eq(in.class_code, 0x010802);
	cr_assert_geq(in.bar_size[0], 0x1000 + 2 * 9 * 4);
}

Test(regs, read_only_registers_restored)
{
	h_wr64(&H, NVME_REG_CAP, 0);
	h_wr32(&H, NVME_REG_VS, 0xdead);
	h_wr32(&H, NVME_REG_CSTS, 0);
	cr_assert(h_wait_reg(&H, NVME_REG_VS, ~0u, 0x00010400, 2000));
	cr_assert(h_wait_reg(&H, NVME_REG_CSTS, NVME_SET(1, CSTS_RDY), NVME_SET(1, CSTS_RDY),
			     2000));
	cr_assert_eq(NVME_CAP_MQES(h_rd64(&H, NVME_REG_CAP)), 255);
}

Test(regs, identify)
{
	struct hmem m;
	struct sio_nvme_cmd c;

	cr_assert_eq(h_mem(&H, 8192, &m), 0);
	c = adm(nvme_admin_identify, 0, NVME_IDENTIFY_CNS_CTRL, 0, m.bus);
	cr_assert_eq(h_admin(&H, &c, NULL), 0);
	struct nvme_id_ctrl *ic = (void *)m.va;
	cr_assert_eq(ic->nn, 2);
	cr_assert_eq(ic->sqes, 0x66);
	cr_assert_eq(ic->cqes, 0x44);
	cr_assert_eq(ic->mdts, 5);
	cr_assert_eq(ic->ver, 0x00010400);
	cr_assert(ic->oncs & (1 << 3), "Write Zeroes");
	cr_assert(ic->vwc & 1);

	/* Namespace 2 has 4 KiB LBAs; the data crosses a page (PRP2). */
	c = adm(nvme_admin_identify, 2, NVME_IDENTIFY_CNS_NS, 0, m.bus + 2048);
	c.prp2 = m.bus + 4096;
	cr_assert_eq(h_admin(&H, &c, NULL), 0);
	struct nvme_id_ns *in = (void *)(m.va + 2048);
	cr_assert_eq(in->nsze, (8u << 20) / 4096);
	cr_assert_eq(in->lbaf[in->flbas & 0xf].ds, 12);
	c = adm(nvme_admin_identify, 1, NVME_IDENTIFY_CNS_NS, 0, m.bus);
	cr_assert_eq(h_admin(&H, &c, NULL), 0);
	in = (void *)m.va;
	cr_assert_eq(in->nsze, (8u << 20) / 512);
	cr_assert_eq(in->lbaf[0].ds, 9);

	c = adm(nvme_admin_identify, 0, NVME_IDENTIFY_CNS_NS_ACTIVE_LIST, 0, m.bus);
	cr_assert_eq(h_admin(&H, &c, NULL), 0);
	uint32_t *l = (void *)m.va;
	cr_assert_eq(l[0], 1);
	cr_assert_eq(l[1], 2);
	cr_assert_eq(l[2], 0);
	c = adm(nvme_admin_identify, 1, NVME_IDENTIFY_CNS_NS_ACTIVE_LIST, 0, m.bus);
	cr_assert_eq(h_admin(&H, &c, NULL), 0);
	cr_assert_eq(l[0], 2, "list starts after CDW1.NSID");

	c = adm(nvme_admin_identify, 0, NVME_IDENTIFY_CNS_NS, 0, m.bus);
	cr_assert_eq(h_admin(&H, &c, NULL), ST(0, NVME_SC_INVALID_NS));
	c = adm(nvme_admin_identify, 3, NVME_IDENTIFY_CNS_NS, 0, m.bus);
	cr_assert_eq(h_admin(&H, &c, NULL), ST(0, NVME_SC_INVALID_NS));
	c = adm(nvme_admin_identify, 0, 0x55, 0, m.bus);
	cr_assert_eq(h_admin(&H, &c, NULL), ST(0, NVME_SC_INVALID_FIELD));
	c = adm(0x7f, 0, 0, 0, 0);
	cr_assert_eq(h_admin(&H, &c, NULL), ST(0, NVME_SC_INVALID_OPCODE));
	/* Identify into memory nobody mapped for the device: data transfer error. */
	c = adm(nvme_admin_identify, 0, NVME_IDENTIFY_CNS_CTRL, 0, 0x7f0000000000ull);
	cr_assert_eq(h_admin(&H, &c, NULL), ST(0, NVME_SC_DATA_XFER_ERROR));
	c = adm(nvme_admin_identify, 0, NVME_IDENTIFY_CNS_CTRL, 0, m.bus);
	cr_assert_eq(h_admin(&H, &c, NULL), 0, "still serving after a DMA fault");
}

Test(regs, queue_creation_checks)
{
	struct hmem m;
	struct sio_nvme_cmd c;
	struct hq q;

	cr_assert_eq(h_mem(&H, 65536, &m), 0);
	/* CQ id 0, beyond the limit */
	c = adm(nvme_admin_create_cq, 0, (15u << 16) | 0, 1, m.bus);
	cr_assert_eq(h_admin(&H, &c, NULL), ST(1, NVME_SC_QID_INVALID));
	c = adm(nvme_admin_create_cq, 0, (15u << 16) | 9, 1, m.bus);
	cr_assert_eq(h_admin(&H, &c, NULL), ST(1, NVME_SC_QID_INVALID));
	/* size 0 (1 entry) and above MQES+1 */
	c = adm(nvme_admin_create_cq, 0, (0u << 16) | 1, 1, m.bus);
	cr_assert_eq(h_admin(&H, &c, NULL), ST(1, NVME_SC_QUEUE_SIZE));
	c = adm(nvme_admin_create_cq, 0, (256u << 16) | 1, 1, m.bus);
	cr_assert_eq(h_admin(&H, &c, NULL), ST(1, NVME_SC_QUEUE_SIZE));
	/* not page aligned; not contiguous */
	c = adm(nvme_admin_create_cq, 0, (15u << 16) | 1, 1, m.bus + 64);
	cr_assert_eq(h_admin(&H, &c, NULL), ST(0, NVME_SC_PRP_INVALID_OFFSET));
	c = adm(nvme_admin_create_cq, 0, (15u << 16) | 1, 0, m.bus);
	cr_assert_eq(h_admin(&H, &c, NULL), ST(0, NVME_SC_INVALID_FIELD));
	/* SQ before its CQ */
	c = adm(nvme_admin_create_sq, 0, (15u << 16) | 1, (1u << 16) | 1, m.bus);
	cr_assert_eq(h_admin(&H, &c, NULL), ST(1, NVME_SC_CQ_INVALID));
	/* a full size queue is fine */
	cr_assert_eq(h_qpair(&H, 1, 256, 0, &q), 0);
	/* twice */
	c = adm(nvme_admin_create_cq, 0, (15u << 16) | 1, 1, m.bus);
	cr_assert_eq(h_admin(&H, &c, NULL), ST(1, NVME_SC_QID_INVALID));
	c = adm(nvme_admin_create_sq, 0, (15u << 16) | 1, (1u << 16) | 1, m.bus);
	cr_assert_eq(h_admin(&H, &c, NULL), ST(1, NVME_SC_QID_INVALID));
	/* CQ in use */
	c = adm(nvme_admin_delete_cq, 0, 1, 0, 0);
	cr_assert_eq(h_admin(&H, &c, NULL), ST(1, NVME_SC_INVALID_QUEUE));
	c = adm(nvme_admin_delete_sq, 0, 2, 0, 0);
	cr_assert_eq(h_admin(&H, &c, NULL), ST(1, NVME_SC_QID_INVALID));
	c = adm(nvme_admin_delete_sq, 0, 0, 0, 0);
	cr_assert_eq(h_admin(&H, &c, NULL), ST(1, NVME_SC_QID_INVALID), "admin SQ is not deletable");
	c = adm(nvme_admin_delete_sq, 0, 1, 0, 0);
	cr_assert_eq(h_admin(&H, &c, NULL), 0);
	c = adm(nvme_admin_delete_cq, 0, 1, 0, 0);
	cr_assert_eq(h_admin(&H, &c, NULL), 0);
	c = adm(nvme_admin_delete_cq, 0, 1, 0, 0);
	cr_assert_eq(h_admin(&H, &c, NULL), ST(1, NVME_SC_QID_INVALID));
}

Test(regs, reset_deletes_io_queues)
{
	struct hq q;
	struct sio_nvme_cmd c;
	struct hmem m;

	cr_assert_eq(h_qpair(&H, 1, 16, 0, &q), 0);
	cr_assert_eq(h_disable(&H), 0, "RDY clears after CC.EN = 0");
	cr_assert_eq(h_enable(&H, 8, 0), 0, "re-enable");
	cr_assert_eq(h_mem(&H, 4096, &m), 0);
	c = adm(nvme_admin_create_sq, 0, (15u << 16) | 1, (1u << 16) | 1, m.bus);
	int rc = h_admin(&H, &c, NULL);
	cr_assert_eq(rc, ST(1, NVME_SC_CQ_INVALID), "CQ 1 went with the reset (%d)", rc);
	cr_assert_eq(h_qpair(&H, 1, 16, 0, &q), 0, "and can be made again");
}

Test(regs, bad_enable_stays_not_ready)
{
	cr_assert_eq(h_disable(&H), 0);
	h_wr32(&H, NVME_REG_AQA, 0);	/* one-entry admin queues */
	h_wr32(&H, NVME_REG_CC, NVME_SET(1, CC_EN));
	cr_assert_not(h_wait_reg(&H, NVME_REG_CSTS, NVME_SET(1, CSTS_RDY), NVME_SET(1, CSTS_RDY),
				 200));
	cr_assert_eq(h_disable(&H), 0);
	cr_assert_eq(h_enable(&H, 8, 0), 0, "a good enable after a bad one");
}

Test(regs, shutdown)
{
	h_wr32(&H, NVME_REG_CC, h_rd32(&H, NVME_REG_CC) | NVME_SET(NVME_CC_SHN_NORMAL, CC_SHN));
	cr_assert(h_wait_reg(&H, NVME_REG_CSTS, NVME_SET(NVME_CSTS_SHST_MASK, CSTS_SHST),
			     NVME_SET(NVME_CSTS_SHST_CMPLT, CSTS_SHST), 5000));
}

Test(regs, features)
{
	struct sio_nvme_cmd c;
	struct sio_nvme_cpl r;

	c = adm(nvme_admin_get_features, 0, NVME_FEAT_FID_NUM_QUEUES, 0, 0);
	cr_assert_eq(h_admin(&H, &c, &r), 0);
	cr_assert_eq(r.result, 7u | (7u << 16));
	c = adm(nvme_admin_set_features, 0, NVME_FEAT_FID_NUM_QUEUES, 1u | (1u << 16), 0);
	cr_assert_eq(h_admin(&H, &c, &r), 0);
	cr_assert_eq(r.result, 1u | (1u << 16), "two of each allocated");
	c = adm(nvme_admin_set_features, 0, NVME_FEAT_FID_NUM_QUEUES, 0xffff, 0);
	cr_assert_eq(h_admin(&H, &c, NULL), ST(0, NVME_SC_INVALID_FIELD));
	struct hq q;
	cr_assert_eq(h_qpair(&H, 3, 8, 0, &q), ST(1, NVME_SC_QID_INVALID), "beyond the allocation");
	cr_assert_eq(h_qpair(&H, 2, 8, 0, &q), 0);

	c = adm(nvme_admin_set_features, 0, NVME_FEAT_FID_ARBITRATION, 0x03020103, 0);
	cr_assert_eq(h_admin(&H, &c, NULL), 0);
	c = adm(nvme_admin_get_features, 0, NVME_FEAT_FID_ARBITRATION, 0, 0);
	cr_assert_eq(h_admin(&H, &c, &r), 0);
	cr_assert_eq(r.result, 0x03020103);

	c = adm(nvme_admin_set_features, 0, NVME_FEAT_FID_VOLATILE_WC, 0, 0);
	cr_assert_eq(h_admin(&H, &c, NULL), 0);
	c = adm(nvme_admin_get_features, 0, NVME_FEAT_FID_VOLATILE_WC, 0, 0);
	cr_assert_eq(h_admin(&H, &c, &r), 0);
	cr_assert_eq(r.result, 0);
	c = adm(nvme_admin_get_features, 0, NVME_FEAT_FID_VOLATILE_WC | (1u << 8), 0, 0);
	cr_assert_eq(h_admin(&H, &c, &r), 0);
	cr_assert_eq(r.result, 1, "default: cache enabled");

	c = adm(nvme_admin_set_features, 0, NVME_FEAT_FID_VOLATILE_WC | (1u << 31), 1, 0);
	cr_assert_eq(h_admin(&H, &c, NULL), ST(1, NVME_SC_FEATURE_NOT_SAVEABLE));
	c = adm(nvme_admin_get_features, 0, 0x7e, 0, 0);
	cr_assert_eq(h_admin(&H, &c, NULL), ST(0, NVME_SC_INVALID_FIELD));
	c = adm(nvme_admin_set_features, 0, 0x7e, 0, 0);
	cr_assert_eq(h_admin(&H, &c, NULL), ST(0, NVME_SC_INVALID_FIELD));
}

Test(regs, log_pages)
{
	struct hmem m, d;
	struct sio_nvme_cmd c;
	struct hq q;

	cr_assert_eq(h_mem(&H, 8192, &m), 0);
	cr_assert_eq(h_mem(&H, 65536, &d), 0);
	cr_assert_eq(h_qpair(&H, 1, 16, 0, &q), 0);
	for (int i = 0; i < 3; i++) {
		c = h_rw(nvme_cmd_write, 1, 0, 8, d.bus, 0);
		cr_assert_eq(h_cmd(&H, &q, &c, NULL), 0);
	}
	c = h_rw(nvme_cmd_read, 1, 0, 2000 / 2, 0, 0);	/* 500 KiB > MDTS */
	cr_assert_eq(h_cmd(&H, &q, &c, NULL), ST(0, NVME_SC_INVALID_FIELD));

	c = adm(nvme_admin_get_log_page, 0xffffffff, NVME_LOG_LID_SMART | ((512 / 4 - 1) << 16), 0, m.bus);
	cr_assert_eq(h_admin(&H, &c, NULL), 0);
	struct nvme_smart_log *s = (void *)m.va;
	cr_assert_eq(s->host_writes[0], 3);
	cr_assert_eq(s->data_units_written[0], 1, "24 units of 512 B round up to 1 thousand");
	cr_assert_eq(s->host_reads[0], 0, "a refused read is not counted");
	cr_assert_gt(s->temperature[0] | s->temperature[1], 0);

	c = adm(nvme_admin_get_log_page, 0, NVME_LOG_LID_ERROR | ((64 / 4 - 1) << 16), 0, m.bus);
	cr_assert_eq(h_admin(&H, &c, NULL), 0);
	struct nvme_error_log_page *e = (void *)m.va;
	cr_assert_geq(e->error_count, 1);
	cr_assert_eq(e->sqid, 1);
	cr_assert_eq((e->status_field >> 1) & 0x7ff, NVME_SC_INVALID_FIELD);

	c = adm(nvme_admin_get_log_page, 0, 0x70 | (127u << 16), 0, m.bus);
	cr_assert_eq(h_admin(&H, &c, NULL), ST(1, NVME_SC_INVALID_LOG_PAGE));
	c = adm(nvme_admin_get_log_page, 0, NVME_LOG_LID_SMART | (127u << 16), 0, m.bus);
	c.cdw12 = 2;	/* offset not dword aligned */
	cr_assert_eq(h_admin(&H, &c, NULL), ST(0, NVME_SC_INVALID_FIELD));
}

Test(regs, async_event_request_limit)
{
	struct sio_nvme_cmd c = adm(0x0c, 0, 0, 0, 0);
	struct sio_nvme_cpl r;
	int n = 0;

	/* AERL + 1 are held; one more completes with the limit error */
	for (int i = 0; i < 8; i++) {
		c.cid = (uint16_t)(100 + i);
		h_submit(&H, &H.admin, &c);
	}
	while (h_reap(&H, &H.admin, &r, 500) == 0) {
		cr_assert_eq(SIO_NVME_STATUS_CODE(r.status), ST(1, 0x05));
		n++;
	}
	cr_assert_eq(n, 8 - 4);
	c = adm(nvme_admin_identify, 0, NVME_IDENTIFY_CNS_CTRL, 0, 0x7f0000000000ull);
	cr_assert_eq(h_admin(&H, &c, NULL), ST(0, NVME_SC_DATA_XFER_ERROR), "admin still served");
}
