/* SPDX-License-Identifier: MIT */
#ifndef SMARTIO_NVME_CMD_H
#define SMARTIO_NVME_CMD_H

/**
 * DOC: NVMe admin command builders
 *
 * Typed builders for the admin commands the driver and its tests send, so
 * no caller packs CDW10/CDW11 by hand. Each fills a whole submission entry
 * (every field it does not name is zero; the cid is assigned at submission),
 * which makes them usable on an SQ slot from sio_nvme_sq_entry(). Field
 * layouts are those of NVMe 1.4, section 5. Usable from host C, C++ and CUDA.
 */

#include <smartio/nvme/types.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Create I/O CQ (CDW11) and Create I/O SQ (CDW11) flags */
#define SIO_NVME_Q_PC			(1u << 0)	/* physically contiguous */
#define SIO_NVME_CQ_IEN			(1u << 1)	/* interrupts enabled */
#define SIO_NVME_SQ_QPRIO_SHIFT		1		/* 2 bits, weighted round robin */

/** sio_nvme_cmd_init() - a zeroed command with @opcode and @nsid */
static inline SIO_HD void sio_nvme_cmd_init(struct sio_nvme_cmd *cmd, uint8_t opcode,
					    uint32_t nsid)
{
#ifdef __cplusplus
	struct sio_nvme_cmd zero = {};
#else
	struct sio_nvme_cmd zero = { 0 };
#endif

	*cmd = zero;
	cmd->opcode = opcode;
	cmd->nsid = nsid;
}

/** sio_nvme_cmd_identify() - Identify (CNS @cns) into the 4 KiB page at @bus */
static inline SIO_HD void sio_nvme_cmd_identify(struct sio_nvme_cmd *cmd, uint8_t cns,
						uint32_t nsid, uint64_t bus)
{
	sio_nvme_cmd_init(cmd, SIO_NVME_ADM_IDENTIFY, nsid);
	cmd->prp1 = bus;
	cmd->cdw10 = cns;
}

/**
 * sio_nvme_cmd_get_log() - Get Log Page
 * @cmd: command to fill
 * @lid: log page identifier
 * @nsid: namespace (0xffffffff: controller wide)
 * @prp1: data pointer, first PRP entry
 * @prp2: data pointer, second PRP entry
 * @len: bytes, a non-zero multiple of 4 (NUMD is 0-based dwords)
 */
static inline SIO_HD void sio_nvme_cmd_get_log(struct sio_nvme_cmd *cmd, uint8_t lid,
					       uint32_t nsid, uint64_t prp1, uint64_t prp2,
					       uint32_t len)
{
	uint32_t numd = len / 4 - 1;

	sio_nvme_cmd_init(cmd, SIO_NVME_ADM_GET_LOG, nsid);
	cmd->prp1 = prp1;
	cmd->prp2 = prp2;
	cmd->cdw10 = lid | (numd & 0xffffu) << 16;	/* NUMDL */
	cmd->cdw11 = numd >> 16;			/* NUMDU */
}

/**
 * sio_nvme_cmd_features() - Get Features or Set Features
 * @cmd: command to fill
 * @opcode: SIO_NVME_ADM_GET_FEAT or SIO_NVME_ADM_SET_FEAT
 * @fid: feature identifier
 * @cdw11: the feature's value (Set) or its command-specific input (Get)
 */
static inline SIO_HD void sio_nvme_cmd_features(struct sio_nvme_cmd *cmd, uint8_t opcode,
						uint8_t fid, uint32_t cdw11)
{
	sio_nvme_cmd_init(cmd, opcode, 0);
	cmd->cdw10 = fid;
	cmd->cdw11 = cdw11;
}

/** sio_nvme_feat_num_queues() - Number of Queues value: @nsq SQs and @ncq CQs (1-based) */
static inline SIO_HD uint32_t sio_nvme_feat_num_queues(uint32_t nsq, uint32_t ncq)
{
	return ((nsq - 1) & 0xffffu) | ((ncq - 1) & 0xffffu) << 16;
}

/**
 * sio_nvme_feat_arbitration() - Arbitration value
 * @ab: arbitration burst, log2 (7: no limit)
 * @lpw: low priority weight, 0-based
 * @mpw: medium priority weight, 0-based
 * @hpw: high priority weight, 0-based
 */
static inline SIO_HD uint32_t sio_nvme_feat_arbitration(uint32_t ab, uint32_t lpw, uint32_t mpw,
							uint32_t hpw)
{
	return (ab & 7u) | (lpw & 0xffu) << 8 | (mpw & 0xffu) << 16 | (hpw & 0xffu) << 24;
}

/**
 * sio_nvme_cmd_create_cq() - Create I/O Completion Queue
 * @cmd: command to fill
 * @qid: queue id (1-based)
 * @size: entries (1-based; the command carries size - 1)
 * @bus: bus address of the queue memory
 * @flags: SIO_NVME_Q_PC, SIO_NVME_CQ_IEN
 * @iv: interrupt vector (with SIO_NVME_CQ_IEN)
 */
static inline SIO_HD void sio_nvme_cmd_create_cq(struct sio_nvme_cmd *cmd, uint16_t qid,
						 uint32_t size, uint64_t bus, uint32_t flags,
						 uint16_t iv)
{
	sio_nvme_cmd_init(cmd, SIO_NVME_ADM_CREATE_CQ, 0);
	cmd->prp1 = bus;
	cmd->cdw10 = (size - 1) << 16 | qid;
	cmd->cdw11 = (uint32_t)iv << 16 | (flags & 3u);
}

/**
 * sio_nvme_cmd_create_sq() - Create I/O Submission Queue
 * @cmd: command to fill
 * @qid: queue id (1-based)
 * @size: entries (1-based)
 * @bus: bus address of the queue memory
 * @cqid: the completion queue it posts to
 * @qprio: priority class for weighted round robin (0 urgent .. 3 low)
 */
static inline SIO_HD void sio_nvme_cmd_create_sq(struct sio_nvme_cmd *cmd, uint16_t qid,
						 uint32_t size, uint64_t bus, uint16_t cqid,
						 uint32_t qprio)
{
	sio_nvme_cmd_init(cmd, SIO_NVME_ADM_CREATE_SQ, 0);
	cmd->prp1 = bus;
	cmd->cdw10 = (size - 1) << 16 | qid;
	cmd->cdw11 = (uint32_t)cqid << 16 | (qprio & 3u) << SIO_NVME_SQ_QPRIO_SHIFT | SIO_NVME_Q_PC;
}

/** sio_nvme_cmd_delete_q() - Delete I/O SQ or CQ (@opcode) @qid */
static inline SIO_HD void sio_nvme_cmd_delete_q(struct sio_nvme_cmd *cmd, uint8_t opcode,
						uint16_t qid)
{
	sio_nvme_cmd_init(cmd, opcode, 0);
	cmd->cdw10 = qid;
}

#ifdef __cplusplus
}
#endif
#endif
