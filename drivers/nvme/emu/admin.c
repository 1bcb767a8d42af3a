/* SPDX-License-Identifier: MIT */
/*
 * Admin commands (NVMe 1.4, 5): Identify, queue creation and deletion,
 * log pages; features are in features.c. The checks are made in the order QEMU's controller
 * makes them, so that one bad command gets the same status from both.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include "emu_priv.h"

static void put_str(char *dst, size_t n, const char *src)
{
	/* Identify strings are space padded, not NUL terminated. */
	size_t l = strlen(src);

	memset(dst, ' ', n);
	memcpy(dst, src, l < n ? l : n);
}

static void put_u128(uint8_t *dst, uint64_t v)
{
	memset(dst, 0, 16);
	memcpy(dst, &v, 8);
}

static void identify_ctrl(struct sio_nvme_emu *emu, struct nvme_id_ctrl *id)
{
	char buf[48];

	id->vid = emu->cfg.vendor ? emu->cfg.vendor : 0x1b36;
	id->ssvid = id->vid;
	snprintf(buf, sizeof(buf), "SIOEMU%08llx", (unsigned long long)(emu->devid < 0 ? 0 : emu->devid));
	put_str(id->sn, sizeof(id->sn), buf);
	put_str(id->mn, sizeof(id->mn), "smartio emulated NVMe");
	put_str(id->fr, sizeof(id->fr), "0.1");
	id->rab = 6;
	id->ieee[0] = 0x00; id->ieee[1] = 0x54; id->ieee[2] = 0x52;	/* as QEMU */
	id->mdts = (uint8_t)emu->cfg.mdts;
	id->cntlid = (uint16_t)(emu->devid < 0 ? 0 : emu->devid);
	id->ver = EMU_VS;
	id->cntrltype = 1;	/* I/O controller */
	id->acl = 3;
	id->aerl = EMU_AERL;
	id->frmw = 0x3;		/* one slot, read only */
	/* SMART log is controller-wide; NUMDU and the log page offset are honoured */
	id->lpa = NVME_CTRL_LPA_EXTENDED;
	id->elpe = EMU_ELOG_ENTRIES - 1;
	id->wctemp = EMU_WCTEMP;
	id->cctemp = EMU_CCTEMP;
	id->sqes = 0x66;
	id->cqes = 0x44;
	id->maxcmd = (uint16_t)(emu->cfg.mqes > 0xffff ? 0xffff : emu->cfg.mqes);
	id->nn = (uint32_t)emu->nns;
	/* Save/Select: SEL is honoured and SV answered (nothing is saveable) */
	id->oncs = NVME_CTRL_ONCS_COMPARE | NVME_CTRL_ONCS_DSM | NVME_CTRL_ONCS_WRITE_ZEROES |
		   NVME_CTRL_ONCS_SAVE_FEATURES | NVME_CTRL_ONCS_VERIFY;
	id->oacs = NVME_CTRL_OACS_FORMAT | NVME_CTRL_OACS_DBBUF_CFG;
	id->fna = 0;		/* Format and secure erase per namespace; no crypto erase */
	id->oaes = NVME_CTRL_OAES_NA;	/* Namespace Attribute Notices (aer.c) */
	id->vwc = 0x7;		/* volatile write cache; flush to all namespaces */
	id->sgls = 1;		/* SGLs for I/O, byte-aligned data blocks; nothing optional */
	snprintf(buf, sizeof(buf), "nqn.2024-01.io.smartio:emu-%lld", (long long)emu->devid);
	memcpy(id->subnqn, buf, strlen(buf));
	id->psd[0].mp = 2500;	/* 25 W, in 0.01 W */
}

static void identify_ns(struct sio_nvme_emu *emu, uint32_t nsid, struct nvme_id_ns *id)
{
	const struct emu_ns *ns = &emu->ns[nsid - 1];

	id->nsze = id->ncap = id->nuse = ns->nlb;
	id->nlbaf = 0;
	id->flbas = 0;
	id->lbaf[0].ds = (uint8_t)ns->lba_shift;
	/* deallocated blocks read as zeroes; Write Zeroes deallocates (DEAC honoured) */
	id->dlfeat = NVME_NS_DLFEAT_RB_ALL_0S | NVME_NS_DLFEAT_WRITE_ZEROES;
	put_u128(id->nvmcap, ns->nlb << ns->lba_shift);
	memcpy(id->nguid, ns->nguid, sizeof(id->nguid));
	memcpy(id->eui64, ns->eui64, sizeof(id->eui64));
}

static uint8_t *put_desc(uint8_t *p, uint8_t nidt, const uint8_t *nid, uint8_t len)
{
	struct nvme_ns_id_desc *d = (struct nvme_ns_id_desc *)p;

	d->nidt = nidt;
	d->nidl = len;
	memcpy(d->nid, nid, len);
	return p + sizeof(*d) + len;
}

/* CNS 03h: the namespace's identifiers, as Identify Namespace reports the first two. */
static void identify_descs(struct sio_nvme_emu *emu, uint32_t nsid, uint8_t *buf)
{
	const struct emu_ns *ns = &emu->ns[nsid - 1];

	buf = put_desc(buf, NVME_NIDT_EUI64, ns->eui64, NVME_NIDT_EUI64_LEN);
	buf = put_desc(buf, NVME_NIDT_NGUID, ns->nguid, NVME_NIDT_NGUID_LEN);
	put_desc(buf, NVME_NIDT_UUID, ns->uuid, NVME_NIDT_UUID_LEN);
}

/* splitmix64's finaliser: every input bit reaches every output bit */
static uint64_t mix(uint64_t x)
{
	x += 0x9e3779b97f4a7c15ull;
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
	x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
	return x ^ (x >> 31);
}

static void put_be64(uint8_t *dst, uint64_t v)
{
	for (int i = 0; i < 8; i++)
		dst[i] = (uint8_t)(v >> (56 - 8 * i));
}

/**
 * emu_ns_ids() - derive each namespace's EUI64, NGUID and UUID
 * @emu: controller, its namespaces laid out
 * @seed: names the backing store (the same store gives the same seed)
 *
 * The identifiers depend only on @seed and the namespace's number and place
 * in the store, so a store reopened with the same layout keeps them, and a
 * namespace laid out differently is a new namespace with new identifiers.
 * EUI64 is OUI 52-54-00 (as Identify's IEEE field) and a 40-bit extension;
 * NGUID is a 64-bit vendor extension followed by that EUI64; UUID is RFC 9562
 * version 8 (vendor-defined) from the same hash.
 */
void emu_ns_ids(struct sio_nvme_emu *emu, uint64_t seed)
{
	for (int i = 0; i < emu->nns; i++) {
		struct emu_ns *ns = &emu->ns[i];
		uint64_t h = mix(seed ^ mix((uint64_t)i + 1));

		h = mix(h ^ ns->off);
		h = mix(h ^ (ns->nlb << 5 | ns->lba_shift));
		put_be64(ns->eui64, 0x525400ull << 40 | (mix(h + 1) & 0xffffffffffull));
		put_be64(ns->nguid, mix(h + 2));
		memcpy(ns->nguid + 8, ns->eui64, 8);
		put_be64(ns->uuid, mix(h + 3));
		put_be64(ns->uuid + 8, mix(h + 4));
		ns->uuid[6] = (uint8_t)((ns->uuid[6] & 0x0f) | 0x80);	/* version 8 */
		ns->uuid[8] = (uint8_t)((ns->uuid[8] & 0x3f) | 0x80);	/* variant 10b */
	}
}

static uint16_t cmd_identify(struct sio_nvme_emu *emu, const struct sio_nvme_cmd *cmd)
{
	uint8_t *buf = emu->scratch;
	uint32_t cns = cmd->cdw10 & 0xff, nsid = cmd->nsid;

	memset(buf, 0, 4096);
	switch (cns) {
	case NVME_IDENTIFY_CNS_NS:
		if (nsid == 0 || nsid > (uint32_t)emu->nns)
			return EMU_ST_NS;
		identify_ns(emu, nsid, (struct nvme_id_ns *)buf);
		break;
	case NVME_IDENTIFY_CNS_CTRL:
		identify_ctrl(emu, (struct nvme_id_ctrl *)buf);
		break;
	case NVME_IDENTIFY_CNS_NS_DESC_LIST:
		if (nsid == 0 || nsid > (uint32_t)emu->nns)
			return EMU_ST_NS;
		identify_descs(emu, nsid, buf);
		break;
	case NVME_IDENTIFY_CNS_NS_ACTIVE_LIST: {
		uint32_t *list = (uint32_t *)buf, n = 0;

		if (nsid >= 0xfffffffeu)
			return EMU_ST_NS;
		for (uint32_t i = nsid + 1; i <= (uint32_t)emu->nns && n < 1024; i++)
			list[n++] = i;
		break;
	}
	default:
		return EMU_ST_FIELD;
	}
	return emu_xfer(emu, cmd, buf, 4096, true);
}

/*
 * Queue memory with no host pointer (GPU memory): an SQ there is fetched
 * in batches, a CQ's entries wait for the pass's DMA batch (ctrl.c).
 */
static bool no_pointer(struct sio_nvme_emu *emu, uint64_t base)
{
	void *p;

	return emu->dma.ptr(emu->dma.ctx, base, 16, false, &p) == -EOPNOTSUPP;
}

static uint16_t cmd_create_cq(struct sio_nvme_emu *emu, const struct sio_nvme_cmd *cmd)
{
	uint32_t qid = cmd->cdw10 & 0xffff, qsize = (cmd->cdw10 >> 16) + 1;
	uint32_t iv = cmd->cdw11 >> 16, iosz = NVME_CC_IOCQES(emu_cc(emu));
	bool pc = cmd->cdw11 & 1, ien = cmd->cdw11 & 2;

	if (qid == 0 || qid > emu->ncqa || emu->cq[qid].valid)
		return EMU_ST_QID;
	if (qsize < 2 || qsize > emu->cfg.mqes)
		return EMU_ST_QSIZE;
	if (cmd->prp1 & (emu->page_size - 1))
		return EMU_ST_PRP_OFF;
	if (!pc)
		return EMU_ST_FIELD;	/* CAP.CQR: queues must be contiguous */
	if (ien && iv >= emu_vectors(emu))
		return EMU_ST_IV;
	if (iosz != 0 && iosz != 4)
		return EMU_ST_FIELD;	/* CC.IOCQES: 16-byte entries only */
	emu->cq[qid] = (struct emu_cq){ .valid = true, .phase = 1, .qid = (uint16_t)qid,
					.size = qsize, .base = cmd->prp1, .ien = ien,
					.iv = (uint16_t)iv,
					.noptr = no_pointer(emu, cmd->prp1) };
	emu_dbbuf_queue(emu, qid, true);
	emu->ioq_created = true;
	return EMU_OK;
}

static uint16_t cmd_create_sq(struct sio_nvme_emu *emu, const struct sio_nvme_cmd *cmd)
{
	uint32_t qid = cmd->cdw10 & 0xffff, qsize = (cmd->cdw10 >> 16) + 1;
	uint32_t cqid = cmd->cdw11 >> 16, iosz = NVME_CC_IOSQES(emu_cc(emu));
	bool pc = cmd->cdw11 & 1;

	if (qid == 0 || qid > emu->nsqa || emu->sq[qid].valid)
		return EMU_ST_QID;
	if (cqid == 0 || cqid > emu->ncqa || !emu->cq[cqid].valid)
		return EMU_ST_CQ_INVALID;
	if (qsize < 2 || qsize > emu->cfg.mqes)
		return EMU_ST_QSIZE;
	if (cmd->prp1 & (emu->page_size - 1))
		return EMU_ST_PRP_OFF;
	if (!pc)
		return EMU_ST_FIELD;
	if (iosz != 0 && iosz != 6)
		return EMU_ST_FIELD;	/* CC.IOSQES: 64-byte entries only */
	emu->arbpage->q[qid] = (struct emu_arb_q){ .cls = (cmd->cdw11 >> 1) & 3 };
	emu->sq[qid] = (struct emu_sq){ .valid = true, .arb = &emu->arbpage->q[qid],
					.qid = (uint16_t)qid, .size = qsize, .base = cmd->prp1,
					.cq = &emu->cq[cqid], .batch = no_pointer(emu, cmd->prp1) };
	emu->cq[cqid].nsq++;
	emu_active_add(emu, &emu->sq[qid]);
	emu_dbbuf_queue(emu, qid, false);
	emu->ioq_created = true;
	return EMU_OK;
}

static uint16_t cmd_delete_sq(struct sio_nvme_emu *emu, const struct sio_nvme_cmd *cmd)
{
	uint32_t qid = cmd->cdw10 & 0xffff;
	struct emu_sq *sq;

	if (qid == 0 || qid >= emu->nq || !emu->sq[qid].valid)
		return EMU_ST_QID;
	sq = &emu->sq[qid];
	/* Commands already started finish (and complete) before the SQ goes. */
	emu_drain(emu, sq);
	emu_active_del(emu, sq);
	sq->cq->nsq--;
	memset(sq, 0, sizeof(*sq));
	return EMU_OK;
}

static uint16_t cmd_delete_cq(struct sio_nvme_emu *emu, const struct sio_nvme_cmd *cmd)
{
	uint32_t qid = cmd->cdw10 & 0xffff;

	if (qid == 0 || qid >= emu->nq || !emu->cq[qid].valid)
		return EMU_ST_QID;
	if (emu->cq[qid].nsq)
		return EMU_ST_Q_DELETE;
	memset(&emu->cq[qid], 0, sizeof(emu->cq[qid]));
	return EMU_OK;
}

/* 128-bit little-endian counter; data units are thousands of 512 B, rounded up */
static void put_units(uint8_t *dst, uint64_t units512)
{
	put_u128(dst, (units512 + 999) / 1000);
}

static uint32_t build_log(struct sio_nvme_emu *emu, uint32_t lid, uint8_t *buf)
{
	switch (lid) {
	case NVME_LOG_LID_ERROR: {
		struct nvme_error_log_page *e = (struct nvme_error_log_page *)buf;

		/* newest first */
		for (uint32_t i = 0; i < EMU_ELOG_ENTRIES; i++)
			e[i] = emu->elog[(emu->elog_next + EMU_ELOG_ENTRIES - 1 - i) % EMU_ELOG_ENTRIES];
		return EMU_ELOG_ENTRIES * sizeof(*e);
	}
	case NVME_LOG_LID_SMART: {
		struct nvme_smart_log *s = (struct nvme_smart_log *)buf;
		uint64_t hours = (sio__now_ns() - emu->start_ns) / 3600000000000ull;

		s->temperature[0] = EMU_TEMP & 0xff;
		s->temperature[1] = EMU_TEMP >> 8;
		/* past a threshold of Temperature Threshold */
		if (emu_temp_warning(emu))
			s->critical_warning |= NVME_SMART_CRIT_TEMPERATURE;
		s->avail_spare = 100;
		s->spare_thresh = 10;
		put_units(s->data_units_read, emu->units_read);
		put_units(s->data_units_written, emu->units_written);
		put_u128(s->host_reads, emu->host_reads);
		put_u128(s->host_writes, emu->host_writes);
		put_u128(s->ctrl_busy_time, emu->busy_ns / 60000000000ull);
		put_u128(s->power_cycles, 1);
		put_u128(s->power_on_hours, hours);
		put_u128(s->num_err_log_entries, emu->err_count);
		return sizeof(*s);
	}
	case NVME_LOG_LID_CHANGED_NS:
		return emu_changed_ns_log(emu, buf);
	case 0x03: {	/* Firmware Slot Information */
		struct nvme_firmware_slot *fw = (struct nvme_firmware_slot *)buf;

		fw->afi = 1;
		put_str(fw->frs[0], sizeof(fw->frs[0]), "0.1");
		return sizeof(*fw);
	}
	default:
		return 0;
	}
}

static uint16_t cmd_get_log(struct sio_nvme_emu *emu, const struct sio_nvme_cmd *cmd)
{
	uint32_t lid = cmd->cdw10 & 0xff;
	uint64_t numd = (cmd->cdw10 >> 16) | ((uint64_t)(cmd->cdw11 & 0xffff) << 16);
	uint64_t len = (numd + 1) * 4, off = cmd->cdw12 | ((uint64_t)cmd->cdw13 << 32);
	uint8_t *buf = emu->scratch;
	uint32_t size;
	uint16_t st;

	if (lid != NVME_LOG_LID_ERROR && lid != NVME_LOG_LID_SMART && lid != 0x03 &&
	    lid != NVME_LOG_LID_CHANGED_NS)
		return EMU_ST_LOG_PAGE;
	if (lid == NVME_LOG_LID_SMART && cmd->nsid != 0 && cmd->nsid != 0xffffffffu)
		return EMU_ST_FIELD;	/* LPA: no per-namespace SMART */
	if (len > emu->mdts_bytes || (off & 3))
		return EMU_ST_FIELD;
	memset(buf, 0, emu->mdts_bytes);
	size = build_log(emu, lid, buf);
	if (off >= size)
		return EMU_ST_FIELD;
	if (off)
		memmove(buf, buf + off, size - off);
	memset(buf + (size - off), 0, emu->mdts_bytes - (size - off));
	st = emu_xfer(emu, cmd, buf, len, true);
	if (st == EMU_OK)
		emu_aer_log_read(emu, lid, cmd->cdw10 >> 15 & 1);
	return st;
}

/**
 * emu_admin() - execute one admin command
 * @emu: controller
 * @cmd: the command as fetched (hostile: every field is checked)
 * @result: completion DW0
 * Return: internal status, or EMU_PENDING for a held Asynchronous Event Request.
 */
uint16_t emu_admin(struct sio_nvme_emu *emu, const struct sio_nvme_cmd *cmd, uint32_t *result)
{
	if (cmd->flags & 0x3)
		return EMU_ST_FIELD;	/* no fused operations */
	if ((cmd->flags >> 6) != SIO_NVME_PSDT_PRP)
		return EMU_ST_FIELD;	/* admin commands use PRPs */
	switch (cmd->opcode) {
	case nvme_admin_delete_sq:
		return cmd_delete_sq(emu, cmd);
	case nvme_admin_create_sq:
		return cmd_create_sq(emu, cmd);
	case nvme_admin_get_log_page:
		return cmd_get_log(emu, cmd);
	case nvme_admin_delete_cq:
		return cmd_delete_cq(emu, cmd);
	case nvme_admin_create_cq:
		return cmd_create_cq(emu, cmd);
	case nvme_admin_identify:
		return cmd_identify(emu, cmd);
	case nvme_admin_dbbuf:
		return emu_dbbuf_config(emu, cmd);
	case nvme_admin_format_nvm:
		return emu_format(emu, cmd);
	case nvme_admin_abort_cmd:
		*result = 1;	/* the command was not aborted */
		return EMU_OK;
	case nvme_admin_set_features:
		return emu_set_features(emu, cmd, result);
	case nvme_admin_get_features:
		return emu_get_features(emu, cmd, result);
	case nvme_admin_async_event:	/* held until an event (aer.c) */
		return emu_aer_request(emu, cmd);
	default:
		return EMU_ST_OPCODE;
	}
}
