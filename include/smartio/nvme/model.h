/* SPDX-License-Identifier: MIT */
#ifndef SMARTIO_NVME_MODEL_H
#define SMARTIO_NVME_MODEL_H

/**
 * DOC: command handling shared by the controller models
 *
 * What an NVMe controller model decides about an I/O command before it
 * moves data, written once for the CPU-side emulator (drivers/nvme/emu)
 * and the GPU-resident model (drivers/gpu/ctrl.cu): decoding a Read or
 * Write, its length and LBA range checks, the PRP1/PRP2 checks of a
 * transfer that needs no PRP list, and the completion entry with its
 * phase tag and SQ head. Every function is pure and usable from host C
 * and CUDA device code (SIO_HD), so the host's unit tests cover what the
 * GPU runs.
 *
 * Statuses are SCT << 8 | SC (SIO_NVME_MK_STATUS), with
 * SIO_NVME_MODEL_DNR set on errors a retry cannot fix; 0 is success.
 */

#include <stdbool.h>
#include <stdint.h>
#include <smartio/nvme/types.h>

#define SIO_NVME_MODEL_DNR		0x8000u
#define SIO_NVME_MODEL_OP_FLUSH		0x00u
/* Generic status codes the models answer with (NVMe 1.4, Figure 126) */
#define SIO_NVME_MODEL_SC_OPCODE	0x01u
#define SIO_NVME_MODEL_SC_FIELD		0x02u
#define SIO_NVME_MODEL_SC_XFER		0x04u
#define SIO_NVME_MODEL_SC_NS		0x0bu
#define SIO_NVME_MODEL_SC_PRP_OFF	0x13u
#define SIO_NVME_MODEL_SC_LBA		0x80u
#define SIO_NVME_MODEL_ST(sc)	((uint16_t)(SIO_NVME_MK_STATUS(0u, (sc)) | SIO_NVME_MODEL_DNR))

/**
 * struct sio_nvme_model_rw - a decoded Read or Write
 * @slba: first block
 * @nlb: blocks (CDW12.NLB + 1, 1..65536)
 * @bytes: @nlb blocks of the namespace's size
 */
struct sio_nvme_model_rw {
	uint64_t slba;
	uint64_t nlb;
	uint64_t bytes;
};

/**
 * sio_nvme_model_lba_check() - is [@slba, @slba + @nlb) inside the namespace
 * @slba: first block
 * @nlb: blocks
 * @ns_nlb: the namespace's blocks
 * Return: 0 or LBA Out of Range; no overflow for any input.
 */
static inline SIO_HD uint16_t sio_nvme_model_lba_check(uint64_t slba, uint64_t nlb,
						       uint64_t ns_nlb)
{
	if (slba >= ns_nlb || nlb > ns_nlb - slba)
		return SIO_NVME_MODEL_ST(SIO_NVME_MODEL_SC_LBA);
	return 0;
}

/**
 * sio_nvme_model_rw_decode() - decode and check a Read or Write's range
 * @cmd: the command (hostile)
 * @lba_shift: log2 of the namespace's block size
 * @ns_nlb: the namespace's blocks
 * @max_bytes: largest transfer (MDTS)
 * @out: the decoded command
 * Return: 0, Invalid Field (longer than @max_bytes) or LBA Out of Range.
 */
static inline SIO_HD uint16_t sio_nvme_model_rw_decode(const struct sio_nvme_cmd *cmd,
						       uint32_t lba_shift, uint64_t ns_nlb,
						       uint64_t max_bytes,
						       struct sio_nvme_model_rw *out)
{
	out->slba = cmd->cdw10 | ((uint64_t)cmd->cdw11 << 32);
	out->nlb = (cmd->cdw12 & 0xffffu) + 1u;
	out->bytes = out->nlb << lba_shift;
	if (out->bytes > max_bytes)
		return SIO_NVME_MODEL_ST(SIO_NVME_MODEL_SC_FIELD);
	return sio_nvme_model_lba_check(out->slba, out->nlb, ns_nlb);
}

/**
 * sio_nvme_model_prp_simple() - check PRPs of a transfer of at most two pages
 * @prp1: first PRP (dword aligned, any offset in its page)
 * @prp2: second page when the transfer crosses into it (page aligned)
 * @len: bytes
 * @page: memory page size, a power of two
 * @second: set to the bytes in the second page (0: none)
 * Return: 0; PRP Offset Invalid; Invalid Field when @len needs a PRP list
 * (more than the rest of PRP1's page plus one page), which the caller walks.
 */
static inline SIO_HD uint16_t sio_nvme_model_prp_simple(uint64_t prp1, uint64_t prp2,
							uint64_t len, uint32_t page,
							uint64_t *second)
{
	uint64_t first = page - (prp1 & (page - 1u));

	*second = 0;
	if (prp1 & 3u)
		return SIO_NVME_MODEL_ST(SIO_NVME_MODEL_SC_PRP_OFF);
	if (len <= first)
		return 0;
	if (len - first > page)
		return SIO_NVME_MODEL_ST(SIO_NVME_MODEL_SC_FIELD);
	if (prp2 & (page - 1u))
		return SIO_NVME_MODEL_ST(SIO_NVME_MODEL_SC_PRP_OFF);
	*second = len - first;
	return 0;
}

/**
 * sio_nvme_model_cpl() - the completion entry a model posts
 * @cpl: filled in (the whole 16 bytes but @status's phase is written
 *	last by the caller, after a fence: see sio_nvme_model_cpl_status())
 * @cid: the command's id
 * @sqid: its SQ
 * @sq_head: the SQ head after the model consumed the command
 * @result: DW0
 */
static inline SIO_HD void sio_nvme_model_cpl(struct sio_nvme_cpl *cpl, uint16_t cid,
					     uint16_t sqid, uint16_t sq_head, uint32_t result)
{
	cpl->result = result;
	cpl->rsvd = 0;
	cpl->sq_head = sq_head;
	cpl->sq_id = sqid;
	cpl->cid = cid;
}

/**
 * sio_nvme_model_cpl_status() - the status field with its phase tag
 * @st: SCT << 8 | SC, with SIO_NVME_MODEL_DNR on errors
 * @phase: the CQ's current phase (0 or 1)
 */
static inline SIO_HD uint16_t sio_nvme_model_cpl_status(uint16_t st, uint32_t phase)
{
	uint16_t dnr = (st & SIO_NVME_MODEL_DNR) ? 0x8000u : 0u;

	return (uint16_t)(dnr | ((st & 0x7ffu) << 1) | (phase & 1u));
}

/**
 * sio_nvme_model_cq_advance() - step a CQ tail, flipping the phase on wrap
 * @tail: the tail, updated
 * @phase: the phase, updated
 * @depth: entries
 */
static inline SIO_HD void sio_nvme_model_cq_advance(uint32_t *tail, uint32_t *phase,
						    uint32_t depth)
{
	if (++*tail == depth) {
		*tail = 0;
		*phase ^= 1u;
	}
}

/**
 * sio_nvme_model_sq_pending() - entries between an SQ head and a tail
 * @head: the model's head
 * @tail: the doorbell's value (hostile: checked)
 * @depth: entries
 * Return: entries to fetch, or -1 when @tail is not below @depth.
 */
static inline SIO_HD int32_t sio_nvme_model_sq_pending(uint32_t head, uint32_t tail,
						       uint32_t depth)
{
	if (tail >= depth)
		return -1;
	return (int32_t)((tail + depth - head) % depth);
}

#endif
