/* SPDX-License-Identifier: MIT */
/*
 * Get Features and Set Features (NVMe 1.4, 5.9 and 5.21; the features in
 * 5.21.1): every feature that 1.4 makes mandatory for an NVM controller on
 * PCIe, and Volatile Write Cache. None is saveable (ONCS.SAVE tells the host
 * it may still use SEL and SV: SEL = saved answers the default value, SV is
 * refused with Feature Identifier Not Saveable). Every value reverts to its
 * default on a controller reset.
 */
#include <string.h>
#include "emu_priv.h"

#define ST_SEQ_ERROR	EMU_ST(NVME_SCT_GENERIC, NVME_SC_CMD_SEQ_ERROR)
#define ST_NOT_PER_NS	EMU_ST(NVME_SCT_CMD_SPECIFIC, NVME_SC_FEATURE_NOT_PER_NS)

/* Get Features, SEL = supported capabilities (5.9.2) */
#define CAP_SAVE	(1u << 0)
#define CAP_NS		(1u << 1)
#define CAP_CHANGE	(1u << 2)

#define TT_OVER		0u	/* THSEL */
#define TT_UNDER	1u
#define TT_ALL		0xfu	/* TMPSEL: every implemented sensor (Set only) */

/* What Asynchronous Event Configuration can enable: SMART warnings, and the Namespace
 * Attribute notice (OAES bit 8). */
#define AEC_SUPPORTED	0x1ffu

static uint32_t feat_caps(uint32_t fid)
{
	switch (fid) {
	case NVME_FEAT_FID_ERR_RECOVERY:
		return CAP_CHANGE | CAP_NS;
	case NVME_FEAT_FID_ARBITRATION:
	case NVME_FEAT_FID_POWER_MGMT:
	case NVME_FEAT_FID_TEMP_THRESH:
	case NVME_FEAT_FID_VOLATILE_WC:
	case NVME_FEAT_FID_NUM_QUEUES:
	case NVME_FEAT_FID_IRQ_COALESCE:
	case NVME_FEAT_FID_IRQ_CONFIG:
	case NVME_FEAT_FID_WRITE_ATOMIC:
	case NVME_FEAT_FID_ASYNC_EVENT:
		return CAP_CHANGE;
	default:
		return 0;	/* not implemented */
	}
}

static bool ivc_cd(const struct sio_nvme_emu *emu, uint32_t iv)
{
	return emu->ivc_cd[iv / 64] >> (iv % 64) & 1;
}

static void ivc_set(struct sio_nvme_emu *emu, uint32_t iv, bool cd)
{
	if (cd)
		emu->ivc_cd[iv / 64] |= 1ull << (iv % 64);
	else
		emu->ivc_cd[iv / 64] &= ~(1ull << (iv % 64));
}

void emu_features_reset(struct sio_nvme_emu *emu)
{
	emu->nsqa = emu->ncqa = emu->cfg.max_qpairs;
	emu->ioq_created = false;
	emu->arb = 0;		/* burst 1, weights 1: plain alternation */
	emu_arb_config(&emu->arbiter, emu->wrr, emu->arb);
	emu->wce = true;
	emu->power_mgmt = 0;
	emu->temp_over = EMU_WCTEMP;	/* the composite's over threshold starts at WCTEMP */
	emu->temp_under = 0;
	emu->irq_coalesce = 0;
	emu->write_atomic = 0;
	emu->async_cfg = 0;
	memset(emu->ivc_cd, 0, sizeof(emu->ivc_cd));
	ivc_set(emu, 0, true);	/* the admin queue's vector is never coalesced */
	for (int i = 0; i < SIO_NVME_EMU_MAX_NS; i++)
		emu->ns[i].tler = 0;
}

/* Temperature Threshold: only the Composite Temperature (TMPSEL 0) is implemented. */
static uint16_t temp_check(uint32_t v, bool set)
{
	uint32_t tmpsel = NVME_GET(v, FEAT_TT_TMPSEL), thsel = NVME_GET(v, FEAT_TT_THSEL);

	if (thsel != TT_OVER && thsel != TT_UNDER)
		return EMU_ST_FIELD;
	if (tmpsel != 0 && !(set && tmpsel == TT_ALL))
		return EMU_ST_FIELD;
	return EMU_OK;
}

/* Current (or default) value of a feature already known to be implemented. */
static uint16_t feat_value(struct sio_nvme_emu *emu, uint32_t fid, uint32_t nsid, uint32_t cdw11,
			   bool dflt, uint32_t *v)
{
	uint32_t max = emu->cfg.max_qpairs;
	uint16_t st;

	switch (fid) {
	case NVME_FEAT_FID_ARBITRATION:
		*v = dflt ? 0 : emu->arb;
		break;
	case NVME_FEAT_FID_POWER_MGMT:
		*v = dflt ? 0 : emu->power_mgmt;
		break;
	case NVME_FEAT_FID_TEMP_THRESH:
		st = temp_check(cdw11, false);
		if (st)
			return st;
		if (NVME_GET(cdw11, FEAT_TT_THSEL) == TT_OVER)
			*v = dflt ? EMU_WCTEMP : emu->temp_over;
		else
			*v = dflt ? 0 : emu->temp_under;
		*v |= cdw11 & 0x3f0000u;	/* echo TMPSEL and THSEL */
		break;
	case NVME_FEAT_FID_ERR_RECOVERY:
		*v = dflt ? 0 : emu->ns[nsid - 1].tler;
		break;
	case NVME_FEAT_FID_VOLATILE_WC:
		*v = dflt ? 1 : emu->wce;
		break;
	case NVME_FEAT_FID_NUM_QUEUES:
		*v = dflt ? (max - 1) | ((max - 1) << 16)
			  : (emu->nsqa - 1) | ((emu->ncqa - 1) << 16);
		break;
	case NVME_FEAT_FID_IRQ_COALESCE:
		*v = dflt ? 0 : emu->irq_coalesce;
		break;
	case NVME_FEAT_FID_IRQ_CONFIG: {
		uint32_t iv = NVME_GET(cdw11, FEAT_ICFG_IV);

		if (iv >= emu_vectors(emu))
			return EMU_ST_FIELD;
		*v = iv | (uint32_t)(dflt ? iv == 0 : ivc_cd(emu, iv)) << NVME_FEAT_ICFG_CD_SHIFT;
		break;
	}
	case NVME_FEAT_FID_WRITE_ATOMIC:
		*v = dflt ? 0 : emu->write_atomic;
		break;
	default:	/* NVME_FEAT_FID_ASYNC_EVENT */
		*v = dflt ? 0 : emu->async_cfg;
		break;
	}
	return EMU_OK;
}

/*
 * NSID rules (5.9, 5.21): a namespace-specific feature names an active
 * namespace (Set may name all with FFFFFFFFh); any other feature is set with
 * NSID 0 or FFFFFFFFh and otherwise refused as Feature Not Namespace Specific.
 */
static uint16_t nsid_check(struct sio_nvme_emu *emu, uint32_t caps, uint32_t nsid, bool set)
{
	bool active = nsid >= 1 && nsid <= (uint32_t)emu->nns;

	if (caps & CAP_NS) {
		if (active || (set && nsid == 0xffffffffu))
			return EMU_OK;
		return EMU_ST_NS;
	}
	if (!set || nsid == 0 || nsid == 0xffffffffu)
		return EMU_OK;
	return active ? ST_NOT_PER_NS : EMU_ST_NS;
}

uint16_t emu_get_features(struct sio_nvme_emu *emu, const struct sio_nvme_cmd *cmd,
			  uint32_t *result)
{
	uint32_t fid = cmd->cdw10 & 0xff, sel = (cmd->cdw10 >> 8) & 7;
	uint32_t caps = feat_caps(fid);
	uint16_t st;

	if (sel > NVME_GET_FEATURES_SEL_SUPPORTED || !caps)
		return EMU_ST_FIELD;
	st = nsid_check(emu, caps, cmd->nsid, false);
	if (st)
		return st;
	if (sel == NVME_GET_FEATURES_SEL_SUPPORTED) {
		*result = caps;
		return EMU_OK;
	}
	/* Nothing is saveable: the saved value is the default (5.9.1). */
	return feat_value(emu, fid, cmd->nsid, cmd->cdw11,
			  sel != NVME_GET_FEATURES_SEL_CURRENT, result);
}

static uint16_t set_num_queues(struct sio_nvme_emu *emu, uint32_t v, uint32_t *result)
{
	uint32_t nsqr = v & 0xffff, ncqr = v >> 16, max = emu->cfg.max_qpairs;

	if (nsqr == 0xffff || ncqr == 0xffff)
		return EMU_ST_FIELD;
	/* Only before the first I/O queue since the last reset, even if deleted since. */
	if (emu->ioq_created)
		return ST_SEQ_ERROR;
	emu->nsqa = nsqr + 1 < max ? nsqr + 1 : max;
	emu->ncqa = ncqr + 1 < max ? ncqr + 1 : max;
	*result = (emu->nsqa - 1) | ((emu->ncqa - 1) << 16);
	return EMU_OK;
}

static uint16_t set_temp(struct sio_nvme_emu *emu, uint32_t v)
{
	uint16_t st = temp_check(v, true), th = (uint16_t)NVME_GET(v, FEAT_TT_TMPTH);

	if (st)
		return st;
	if (NVME_GET(v, FEAT_TT_THSEL) == TT_OVER)
		emu->temp_over = th;
	else
		emu->temp_under = th;
	emu_aer_settings(emu);	/* crossed now: a SMART event, if enabled */
	return EMU_OK;
}

static uint16_t set_err_recovery(struct sio_nvme_emu *emu, uint32_t nsid, uint32_t v)
{
	/* DULBE needs NSFEAT.DAE, which no namespace reports: deallocation is not tracked. */
	if (NVME_GET(v, FEAT_ERROR_RECOVERY_DULBE))
		return EMU_ST_FIELD;
	for (int i = 0; i < emu->nns; i++)
		if (nsid == 0xffffffffu || nsid == (uint32_t)i + 1)
			emu->ns[i].tler = (uint16_t)NVME_GET(v, FEAT_ERROR_RECOVERY_TLER);
	return EMU_OK;
}

uint16_t emu_set_features(struct sio_nvme_emu *emu, const struct sio_nvme_cmd *cmd,
			  uint32_t *result)
{
	uint32_t fid = cmd->cdw10 & 0xff, v = cmd->cdw11, caps = feat_caps(fid);
	uint16_t st;

	if (!caps)
		return EMU_ST_FIELD;
	if (cmd->cdw10 >> 31 && !(caps & CAP_SAVE))
		return EMU_ST_NOT_SAVEABLE;
	if (!(caps & CAP_CHANGE))
		return EMU_ST(NVME_SCT_CMD_SPECIFIC, NVME_SC_FEATURE_NOT_CHANGEABLE);
	st = nsid_check(emu, caps, cmd->nsid, true);
	if (st)
		return st;
	switch (fid) {
	case NVME_FEAT_FID_ARBITRATION:
		emu->arb = v & 0xffffff07u;
		emu_arb_config(&emu->arbiter, emu->wrr, emu->arb);
		return EMU_OK;
	case NVME_FEAT_FID_POWER_MGMT:
		/* NPSS = 0: power state 0 is the only one */
		if (NVME_GET(v, FEAT_PWRMGMT_PS) != 0)
			return EMU_ST_FIELD;
		emu->power_mgmt = v & (NVME_FEAT_PWRMGMT_PS_MASK |
				       NVME_FEAT_PWRMGMT_WH_MASK << NVME_FEAT_PWRMGMT_WH_SHIFT);
		return EMU_OK;
	case NVME_FEAT_FID_TEMP_THRESH:
		return set_temp(emu, v);
	case NVME_FEAT_FID_ERR_RECOVERY:
		return set_err_recovery(emu, cmd->nsid, v);
	case NVME_FEAT_FID_VOLATILE_WC:
		emu->wce = v & 1;
		return EMU_OK;
	case NVME_FEAT_FID_NUM_QUEUES:
		return set_num_queues(emu, v, result);
	case NVME_FEAT_FID_IRQ_COALESCE:
		emu->irq_coalesce = v & 0xffff;
		return EMU_OK;
	case NVME_FEAT_FID_IRQ_CONFIG: {
		uint32_t iv = NVME_GET(v, FEAT_ICFG_IV);

		if (iv >= emu_vectors(emu))
			return EMU_ST_FIELD;
		ivc_set(emu, iv, NVME_GET(v, FEAT_ICFG_CD));
		return EMU_OK;
	}
	case NVME_FEAT_FID_WRITE_ATOMIC:
		emu->write_atomic = v & 1;
		return EMU_OK;
	default:	/* NVME_FEAT_FID_ASYNC_EVENT */
		emu->async_cfg = v & AEC_SUPPORTED;
		emu_aer_settings(emu);
		return EMU_OK;
	}
}
