/* SPDX-License-Identifier: MIT */
/*
 * NVMe 1.4's mandatory features (Get/Set Features, 5.9, 5.21), Identify CNS
 * 03h and the capabilities Identify Controller reports, from raw commands.
 */
#include <criterion/criterion.h>
#include <string.h>
#include <nvme/types.h>
#include "harness.h"

#define QUEUES		8	/* --queues: vectors 0..8 */
#define ALL_NS		0xffffffffu
#define SV		(1u << 31)
#define CAP_NS		(1u << 1)
#define CAP_CHANGE	(1u << 2)

static struct host H;

static void up(void)
{
	h_up_raw(&H);
}

static void down(void)
{
	h_stop(&H);
}

TestSuite(features, .init = up, .fini = down, .timeout = 60);

/* Get Features @fid with SEL @sel: status, value in *@v */
static int get(uint8_t fid, uint32_t sel, uint32_t nsid, uint32_t cdw11, uint32_t *v)
{
	struct sio_nvme_cmd c;
	struct sio_nvme_cpl r = { 0 };
	int st;

	sio_nvme_cmd_features(&c, SIO_NVME_ADM_GET_FEAT, fid, cdw11);
	c.cdw10 |= sel << 8;
	c.nsid = nsid;
	st = h_admin(&H, &c, &r);
	if (v)
		*v = r.result;
	return st;
}

static int set(uint8_t fid, uint32_t nsid, uint32_t cdw11, uint32_t flags)
{
	struct sio_nvme_cmd c;

	sio_nvme_cmd_features(&c, SIO_NVME_ADM_SET_FEAT, fid, cdw11);
	c.cdw10 |= flags;
	c.nsid = nsid;
	return h_admin(&H, &c, NULL);
}

static uint32_t cur(uint8_t fid, uint32_t nsid, uint32_t cdw11)
{
	uint32_t v;

	cr_assert_eq(get(fid, NVME_GET_FEATURES_SEL_CURRENT, nsid, cdw11, &v), 0, "get 0x%02x", fid);
	return v;
}

static const struct { uint8_t fid; uint32_t nsid, caps; } mandatory[] = {
	{ NVME_FEAT_FID_ARBITRATION, 0, CAP_CHANGE },
	{ NVME_FEAT_FID_POWER_MGMT, 0, CAP_CHANGE },
	{ NVME_FEAT_FID_TEMP_THRESH, 0, CAP_CHANGE },
	{ NVME_FEAT_FID_ERR_RECOVERY, 1, CAP_CHANGE | CAP_NS },
	{ NVME_FEAT_FID_VOLATILE_WC, 0, CAP_CHANGE },
	{ NVME_FEAT_FID_NUM_QUEUES, 0, CAP_CHANGE },
	{ NVME_FEAT_FID_IRQ_COALESCE, 0, CAP_CHANGE },
	{ NVME_FEAT_FID_IRQ_CONFIG, 0, CAP_CHANGE },
	{ NVME_FEAT_FID_WRITE_ATOMIC, 0, CAP_CHANGE },
	{ NVME_FEAT_FID_ASYNC_EVENT, 0, CAP_CHANGE },
};

Test(features, every_mandatory_feature_answers_each_select)
{
	for (size_t i = 0; i < sizeof(mandatory) / sizeof(mandatory[0]); i++) {
		uint8_t fid = mandatory[i].fid;
		uint32_t nsid = mandatory[i].nsid, c, d, s, caps;

		cr_assert_eq(get(fid, NVME_GET_FEATURES_SEL_CURRENT, nsid, 0, &c), 0, "fid 0x%02x", fid);
		cr_assert_eq(get(fid, NVME_GET_FEATURES_SEL_DEFAULT, nsid, 0, &d), 0, "fid 0x%02x", fid);
		cr_assert_eq(c, d, "fid 0x%02x: current is the default after enable", fid);
		cr_assert_eq(get(fid, NVME_GET_FEATURES_SEL_SAVED, nsid, 0, &s), 0, "fid 0x%02x", fid);
		cr_assert_eq(s, d, "fid 0x%02x: not saveable, so saved reads the default", fid);
		cr_assert_eq(get(fid, NVME_GET_FEATURES_SEL_SUPPORTED, nsid, 0, &caps), 0);
		cr_assert_eq(caps, mandatory[i].caps, "fid 0x%02x capabilities 0x%x", fid, caps);
		cr_assert_eq(set(fid, nsid, d, SV), ST(1, NVME_SC_FEATURE_NOT_SAVEABLE),
			     "fid 0x%02x with SV", fid);
	}
	cr_assert_eq(get(NVME_FEAT_FID_ARBITRATION, 4, 0, 0, NULL), ST(0, NVME_SC_INVALID_FIELD),
		     "SEL 100b is reserved");
	/* optional features this controller does not implement */
	cr_assert_eq(get(NVME_FEAT_FID_LBA_RANGE, 0, 1, 0, NULL), ST(0, NVME_SC_INVALID_FIELD));
	cr_assert_eq(get(NVME_FEAT_FID_TIMESTAMP, 0, 0, 0, NULL), ST(0, NVME_SC_INVALID_FIELD));
	cr_assert_eq(set(NVME_FEAT_FID_HOST_MEM_BUF, 0, 0, SV), ST(0, NVME_SC_INVALID_FIELD),
		     "an unknown feature is invalid before it is unsaveable");
}

Test(features, power_management)
{
	cr_assert_eq(set(NVME_FEAT_FID_POWER_MGMT, 0, 1, 0), ST(0, NVME_SC_INVALID_FIELD),
		     "power state 1 beyond NPSS = 0");
	cr_assert_eq(set(NVME_FEAT_FID_POWER_MGMT, 0, 2u << 5, 0), 0);
	cr_assert_eq(cur(NVME_FEAT_FID_POWER_MGMT, 0, 0), 2u << 5, "workload hint kept, PS 0");
}

static uint8_t smart_warning(void)
{
	struct hmem m;
	struct sio_nvme_cmd c;

	cr_assert_eq(h_mem(&H, 4096, &m), 0);
	sio_nvme_cmd_get_log(&c, NVME_LOG_LID_SMART, ALL_NS, m.bus, 0, 512);
	cr_assert_eq(h_admin(&H, &c, NULL), 0);
	return ((struct nvme_smart_log *)m.va)->critical_warning;
}

Test(features, temperature_threshold)
{
	struct hmem m;
	struct sio_nvme_cmd c;
	const uint32_t under = 1u << NVME_FEAT_TT_THSEL_SHIFT;

	cr_assert_eq(h_mem(&H, 4096, &m), 0);
	sio_nvme_cmd_identify(&c, NVME_IDENTIFY_CNS_CTRL, 0, m.bus);
	cr_assert_eq(h_admin(&H, &c, NULL), 0);
	struct nvme_id_ctrl *id = (void *)m.va;
	cr_assert_gt(id->wctemp, 273);
	cr_assert_gt(id->cctemp, id->wctemp);
	cr_assert_eq(cur(NVME_FEAT_FID_TEMP_THRESH, 0, 0), id->wctemp,
		     "the composite's over threshold starts at WCTEMP");
	cr_assert_eq(cur(NVME_FEAT_FID_TEMP_THRESH, 0, under), under, "under threshold 0 K");
	cr_assert_eq(smart_warning() & NVME_SMART_CRIT_TEMPERATURE, 0);

	cr_assert_eq(set(NVME_FEAT_FID_TEMP_THRESH, 0, 300, 0), 0);
	cr_assert_eq(cur(NVME_FEAT_FID_TEMP_THRESH, 0, 0), 300);
	cr_assert_neq(smart_warning() & NVME_SMART_CRIT_TEMPERATURE, 0, "40 C is over 300 K");
	cr_assert_eq(set(NVME_FEAT_FID_TEMP_THRESH, 0, 0xfu << 16 | 350, 0), 0, "TMPSEL: all");
	cr_assert_eq(cur(NVME_FEAT_FID_TEMP_THRESH, 0, 0), 350);
	cr_assert_eq(smart_warning() & NVME_SMART_CRIT_TEMPERATURE, 0);
	cr_assert_eq(set(NVME_FEAT_FID_TEMP_THRESH, 0, under | 320, 0), 0);
	cr_assert_neq(smart_warning() & NVME_SMART_CRIT_TEMPERATURE, 0, "40 C is under 320 K");
	cr_assert_eq(set(NVME_FEAT_FID_TEMP_THRESH, 0, under, 0), 0);

	/* sensors 1..8 are not implemented; THSEL 10b is reserved */
	cr_assert_eq(set(NVME_FEAT_FID_TEMP_THRESH, 0, 1u << 16 | 300, 0), ST(0, NVME_SC_INVALID_FIELD));
	cr_assert_eq(get(NVME_FEAT_FID_TEMP_THRESH, 0, 0, 1u << 16, NULL), ST(0, NVME_SC_INVALID_FIELD));
	cr_assert_eq(set(NVME_FEAT_FID_TEMP_THRESH, 0, 2u << 20 | 300, 0), ST(0, NVME_SC_INVALID_FIELD));
	cr_assert_eq(get(NVME_FEAT_FID_TEMP_THRESH, 0, 0, 0xfu << 16, NULL), ST(0, NVME_SC_INVALID_FIELD),
		     "TMPSEL 'all' names no one threshold to read");
}

Test(features, error_recovery_is_per_namespace)
{
	cr_assert_eq(set(NVME_FEAT_FID_ERR_RECOVERY, 1, 5, 0), 0);
	cr_assert_eq(cur(NVME_FEAT_FID_ERR_RECOVERY, 1, 0), 5);
	cr_assert_eq(cur(NVME_FEAT_FID_ERR_RECOVERY, 2, 0), 0);
	cr_assert_eq(set(NVME_FEAT_FID_ERR_RECOVERY, ALL_NS, 7, 0), 0);
	cr_assert_eq(cur(NVME_FEAT_FID_ERR_RECOVERY, 1, 0), 7);
	cr_assert_eq(cur(NVME_FEAT_FID_ERR_RECOVERY, 2, 0), 7);
	cr_assert_eq(set(NVME_FEAT_FID_ERR_RECOVERY, 1, 1u << 16, 0), ST(0, NVME_SC_INVALID_FIELD),
		     "DULBE without NSFEAT.DAE");
	cr_assert_eq(set(NVME_FEAT_FID_ERR_RECOVERY, 0, 5, 0), ST(0, NVME_SC_INVALID_NS));
	cr_assert_eq(set(NVME_FEAT_FID_ERR_RECOVERY, 3, 5, 0), ST(0, NVME_SC_INVALID_NS));
	cr_assert_eq(get(NVME_FEAT_FID_ERR_RECOVERY, 0, 0, 0, NULL), ST(0, NVME_SC_INVALID_NS));
	cr_assert_eq(get(NVME_FEAT_FID_ERR_RECOVERY, 0, ALL_NS, 0, NULL), ST(0, NVME_SC_INVALID_NS));
}

Test(features, controller_features_are_not_per_namespace)
{
	cr_assert_eq(set(NVME_FEAT_FID_ARBITRATION, 1, 0, 0), ST(1, NVME_SC_FEATURE_NOT_PER_NS));
	cr_assert_eq(set(NVME_FEAT_FID_ARBITRATION, 9, 0, 0), ST(0, NVME_SC_INVALID_NS));
	cr_assert_eq(set(NVME_FEAT_FID_ARBITRATION, ALL_NS, 0, 0), 0);
}

Test(features, coalescing_atomicity_async_events)
{
	cr_assert_eq(set(NVME_FEAT_FID_IRQ_COALESCE, 0, 0x0a04, 0), 0);
	cr_assert_eq(cur(NVME_FEAT_FID_IRQ_COALESCE, 0, 0), 0x0a04, "TIME 10, THR 4");
	cr_assert_eq(set(NVME_FEAT_FID_WRITE_ATOMIC, 0, 1, 0), 0);
	cr_assert_eq(cur(NVME_FEAT_FID_WRITE_ATOMIC, 0, 0), 1);
	cr_assert_eq(set(NVME_FEAT_FID_ASYNC_EVENT, 0, 0x3ff, 0), 0);
	cr_assert_eq(cur(NVME_FEAT_FID_ASYNC_EVENT, 0, 0), 0x1ff,
		     "SMART warnings and namespace notices kept; firmware notices not offered");
}

Test(features, interrupt_vector_configuration)
{
	const uint32_t cd = 1u << NVME_FEAT_ICFG_CD_SHIFT;

	cr_assert_eq(cur(NVME_FEAT_FID_IRQ_CONFIG, 0, 0), cd, "admin vector never coalesced");
	cr_assert_eq(cur(NVME_FEAT_FID_IRQ_CONFIG, 0, 3), 3);
	cr_assert_eq(set(NVME_FEAT_FID_IRQ_CONFIG, 0, cd | 3, 0), 0);
	cr_assert_eq(cur(NVME_FEAT_FID_IRQ_CONFIG, 0, 3), cd | 3);
	cr_assert_eq(cur(NVME_FEAT_FID_IRQ_CONFIG, 0, QUEUES), QUEUES);
	cr_assert_eq(get(NVME_FEAT_FID_IRQ_CONFIG, 0, 0, QUEUES + 1, NULL), ST(0, NVME_SC_INVALID_FIELD));
	cr_assert_eq(set(NVME_FEAT_FID_IRQ_CONFIG, 0, cd | (QUEUES + 1), 0), ST(0, NVME_SC_INVALID_FIELD));

	/* the same vectors a CQ may name */
	struct sio_nvme_cmd c;
	struct hmem m;

	cr_assert_eq(h_mem(&H, 4096, &m), 0);
	sio_nvme_cmd_create_cq(&c, 1, 16, m.bus, SIO_NVME_Q_PC | SIO_NVME_CQ_IEN, QUEUES + 1);
	cr_assert_eq(h_admin(&H, &c, NULL), ST(1, NVME_SC_INVALID_VECTOR));
	sio_nvme_cmd_create_cq(&c, 1, 16, m.bus, SIO_NVME_Q_PC | SIO_NVME_CQ_IEN, QUEUES);
	cr_assert_eq(h_admin(&H, &c, NULL), 0);
}

Test(features, num_queues_refused_once_any_io_queue_was_made)
{
	struct sio_nvme_cmd c;
	struct hq q;

	cr_assert_eq(h_qpair(&H, 1, 16, 0, &q), 0);
	cr_assert_eq(set(NVME_FEAT_FID_NUM_QUEUES, 0, sio_nvme_feat_num_queues(2, 2), 0),
		     ST(0, NVME_SC_CMD_SEQ_ERROR), "while queues exist");
	sio_nvme_cmd_delete_q(&c, SIO_NVME_ADM_DELETE_SQ, 1);
	cr_assert_eq(h_admin(&H, &c, NULL), 0);
	sio_nvme_cmd_delete_q(&c, SIO_NVME_ADM_DELETE_CQ, 1);
	cr_assert_eq(h_admin(&H, &c, NULL), 0);
	cr_assert_eq(set(NVME_FEAT_FID_NUM_QUEUES, 0, sio_nvme_feat_num_queues(2, 2), 0),
		     ST(0, NVME_SC_CMD_SEQ_ERROR), "after they were deleted, until a reset");
	cr_assert_eq(cur(NVME_FEAT_FID_NUM_QUEUES, 0, 0), sio_nvme_feat_num_queues(QUEUES, QUEUES));

	cr_assert_eq(h_disable(&H), 0);
	cr_assert_eq(h_enable(&H, 8, 0), 0);
	cr_assert_eq(set(NVME_FEAT_FID_NUM_QUEUES, 0, sio_nvme_feat_num_queues(2, 2), 0), 0,
		     "a reset allows it again");
}

Test(features, reset_restores_defaults)
{
	cr_assert_eq(set(NVME_FEAT_FID_VOLATILE_WC, 0, 0, 0), 0);
	cr_assert_eq(set(NVME_FEAT_FID_TEMP_THRESH, 0, 300, 0), 0);
	cr_assert_eq(set(NVME_FEAT_FID_ERR_RECOVERY, ALL_NS, 9, 0), 0);
	cr_assert_eq(set(NVME_FEAT_FID_IRQ_CONFIG, 0, 5 | 1u << 16, 0), 0);
	cr_assert_eq(h_disable(&H), 0);
	cr_assert_eq(h_enable(&H, 8, 0), 0);
	cr_assert_eq(cur(NVME_FEAT_FID_VOLATILE_WC, 0, 0), 1);
	cr_assert_neq(cur(NVME_FEAT_FID_TEMP_THRESH, 0, 0), 300);
	cr_assert_eq(cur(NVME_FEAT_FID_ERR_RECOVERY, 2, 0), 0);
	cr_assert_eq(cur(NVME_FEAT_FID_IRQ_CONFIG, 0, 5), 5);
}

Test(features, identify_reports_only_what_is_implemented)
{
	struct hmem m;
	struct sio_nvme_cmd c;

	cr_assert_eq(h_mem(&H, 4096, &m), 0);
	sio_nvme_cmd_identify(&c, NVME_IDENTIFY_CNS_CTRL, 0, m.bus);
	cr_assert_eq(h_admin(&H, &c, NULL), 0);
	struct nvme_id_ctrl *id = (void *)m.va;
	cr_assert_eq(id->oacs, NVME_CTRL_OACS_FORMAT | NVME_CTRL_OACS_DBBUF_CFG,
		     "Format NVM and Doorbell Buffer Config");
	cr_assert_eq(id->oncs, NVME_CTRL_ONCS_COMPARE | NVME_CTRL_ONCS_DSM |
		     NVME_CTRL_ONCS_WRITE_ZEROES | NVME_CTRL_ONCS_SAVE_FEATURES | NVME_CTRL_ONCS_VERIFY);
	cr_assert_eq(id->fna, 0, "Format per namespace, no cryptographic erase");
	cr_assert_eq(id->lpa, NVME_CTRL_LPA_EXTENDED, "offsets honoured, SMART controller-wide");
	cr_assert_eq(id->sgls, 1, "SGLs, byte-aligned data blocks, no bit bucket");
	cr_assert_eq(id->oaes, NVME_CTRL_OAES_NA, "Namespace Attribute Notices only");
	cr_assert_eq(id->fuses, 0);
	cr_assert_eq(id->aerl, 3);
	cr_assert_eq(id->npss, 0);

	/* what it leaves out is refused */
	sio_nvme_cmd_init(&c, nvme_admin_fw_commit, 0);
	cr_assert_eq(h_admin(&H, &c, NULL), ST(0, NVME_SC_INVALID_OPCODE), "OACS.FW clear");
	sio_nvme_cmd_init(&c, nvme_admin_ns_mgmt, 0);
	cr_assert_eq(h_admin(&H, &c, NULL), ST(0, NVME_SC_INVALID_OPCODE), "OACS.NS_MGMT clear");
	struct hq q;
	cr_assert_eq(h_qpair(&H, 1, 16, 0, &q), 0);
	sio_nvme_cmd_init(&c, nvme_cmd_write_uncor, 1);
	cr_assert_eq(h_cmd(&H, &q, &c, NULL), ST(0, NVME_SC_INVALID_OPCODE),
		     "ONCS.WRITE_UNCORRECTABLE clear");
	sio_nvme_cmd_init(&c, nvme_cmd_resv_register, 1);
	cr_assert_eq(h_cmd(&H, &q, &c, NULL), ST(0, NVME_SC_INVALID_OPCODE), "ONCS.RESERVATIONS clear");
}

/* Identify CNS 03h for @nsid into @m; the descriptors, checked for shape. */
static void descs(uint32_t nsid, struct hmem *m, uint8_t eui[8], uint8_t nguid[16], uint8_t uuid[16])
{
	struct sio_nvme_cmd c;
	uint8_t *p = m->va;
	int seen = 0;

	memset(m->va, 0xa5, 4096);
	sio_nvme_cmd_identify(&c, NVME_IDENTIFY_CNS_NS_DESC_LIST, nsid, m->bus);
	cr_assert_eq(h_admin(&H, &c, NULL), 0);
	while (p < m->va + 4096 && p[0] != 0) {
		struct nvme_ns_id_desc *d = (void *)p;

		switch (d->nidt) {
		case NVME_NIDT_EUI64:
			cr_assert_eq(d->nidl, NVME_NIDT_EUI64_LEN);
			memcpy(eui, d->nid, 8);
			break;
		case NVME_NIDT_NGUID:
			cr_assert_eq(d->nidl, NVME_NIDT_NGUID_LEN);
			memcpy(nguid, d->nid, 16);
			break;
		case NVME_NIDT_UUID:
			cr_assert_eq(d->nidl, NVME_NIDT_UUID_LEN);
			memcpy(uuid, d->nid, 16);
			break;
		default:
			cr_assert_fail("descriptor type %u", d->nidt);
		}
		cr_assert_eq(d->rsvd, 0);
		seen |= 1 << d->nidt;
		p += sizeof(*d) + d->nidl;
	}
	cr_assert_eq(seen, 0xe, "EUI64, NGUID and UUID, each once (0x%x)", seen);
	cr_assert_eq(p[0], 0, "the list ends in zeroes");
}

Test(features, namespace_identification_descriptors)
{
	uint8_t e1[8], n1[16], u1[16], e2[8], n2[16], u2[16], again[16], zero[16] = { 0 };
	struct sio_nvme_cmd c;
	struct hmem m;

	cr_assert_eq(h_mem(&H, 4096, &m), 0);
	descs(1, &m, e1, n1, u1);
	descs(2, &m, e2, n2, u2);
	cr_assert_neq(memcmp(n1, zero, 16), 0);
	cr_assert_neq(memcmp(e1, zero, 8), 0);
	cr_assert_neq(memcmp(u1, zero, 16), 0);
	cr_assert_neq(memcmp(n1, n2, 16), 0, "unique per namespace");
	cr_assert_neq(memcmp(e1, e2, 8), 0);
	cr_assert_neq(memcmp(u1, u2, 16), 0);
	cr_assert_eq(u1[6] >> 4, 8, "UUID version 8");
	cr_assert_eq(u1[8] >> 6, 2, "UUID variant");
	descs(1, &m, e2, again, u2);
	cr_assert_eq(memcmp(n1, again, 16), 0, "stable");

	/* Identify Namespace carries the same NGUID and EUI64 */
	sio_nvme_cmd_identify(&c, NVME_IDENTIFY_CNS_NS, 1, m.bus);
	cr_assert_eq(h_admin(&H, &c, NULL), 0);
	struct nvme_id_ns *in = (void *)m.va;
	cr_assert_eq(memcmp(in->nguid, n1, 16), 0);
	cr_assert_eq(memcmp(in->eui64, e1, 8), 0);

	const uint32_t bad[] = { 0, 3, ALL_NS };
	for (size_t i = 0; i < 3; i++) {
		sio_nvme_cmd_identify(&c, NVME_IDENTIFY_CNS_NS_DESC_LIST, bad[i], m.bus);
		cr_assert_eq(h_admin(&H, &c, NULL), ST(0, NVME_SC_INVALID_NS), "nsid 0x%x", bad[i]);
	}
}
