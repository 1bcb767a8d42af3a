/* SPDX-License-Identifier: MIT */
/*
 * PRP walking (NVMe 1.4, 4.3): PRP1 may start anywhere dword aligned in a
 * memory page; PRP2 is the second page when the transfer ends there, else a
 * pointer to a PRP list whose last entry chains to the next list page. Every
 * entry after the first must be page aligned. List pages are read by DMA, so
 * a bad list pointer is a data transfer error, as on hardware.
 */
#include <errno.h>
#include <string.h>
#include "emu_priv.h"

static uint16_t dma_status(int rc)
{
	/* -EFAULT or -ENOLINK: the transfer failed on the bus */
	(void)rc;
	return EMU_ST_XFER;
}

/* Append [bus, bus+len) to the list, merging with the previous piece. */
static inline int seg_add(struct emu_seg *segs, int n, uint64_t bus, uint32_t len)
{
	if (n > 0 && segs[n - 1].bus + segs[n - 1].len == bus &&
	    (uint64_t)segs[n - 1].len + len <= UINT32_MAX) {
		segs[n - 1].len += len;
		return n;
	}
	segs[n].bus = bus;
	segs[n].len = len;
	return n + 1;
}

/**
 * emu_prp_segs() - turn PRP1/PRP2 into contiguous bus ranges
 * @emu: controller
 * @prp1, @prp2: the command's data pointer
 * @len: bytes to transfer (at most emu->mdts_bytes)
 * @segs: room for emu->max_segs pieces
 * @status: the NVMe status when this fails
 * Return: the number of pieces, or -1 with *@status set.
 */
int emu_prp_segs(struct sio_nvme_emu *emu, uint64_t prp1, uint64_t prp2,
		 uint64_t len, struct emu_seg *segs, uint16_t *status)
{
	const uint64_t ps = emu->page_size, mask = ps - 1;
	uint64_t first, left;
	int n = 0;

	if (len == 0)
		return 0;
	if (prp1 & 3) {
		*status = EMU_ST_PRP_OFF;
		return -1;
	}
	first = ps - (prp1 & mask);
	if (first > len)
		first = len;
	n = seg_add(segs, n, prp1, (uint32_t)first);
	left = len - first;
	if (left == 0)
		return n;
	if (left <= ps) {
		if (prp2 & mask) {
			*status = EMU_ST_PRP_OFF;
			return -1;
		}
		return seg_add(segs, n, prp2, (uint32_t)left);
	}

	/* PRP2 points to a list; read it a list page at a time. */
	uint64_t list = prp2;
	uint64_t ents[512];	/* one 4 KiB list page; larger pages in pieces */
	if (list & 7) {
		*status = EMU_ST_PRP_OFF;
		return -1;
	}
	while (left > 0) {
		uint64_t room = (ps - (list & mask)) / 8;	/* entries left in this list page */
		uint64_t need = (left + ps - 1) / ps;
		uint64_t take = need <= room ? need : room;	/* last slot chains when need > room */
		uint64_t i = 0;

		if (take > 512)
			take = 512;
		if (emu->dma.read(emu->dma.ctx, list, ents, take * 8)) {
			*status = dma_status(-EFAULT);
			return -1;
		}
		for (i = 0; i < take; i++) {
			uint64_t e = ents[i];
			bool chain = (i == take - 1) && need > room && take == room;

			if (chain) {
				if (e & 7) {
					*status = EMU_ST_PRP_OFF;
					return -1;
				}
				list = e;
				break;
			}
			if (e & mask) {
				*status = EMU_ST_PRP_OFF;
				return -1;
			}
			uint32_t l = left < ps ? (uint32_t)left : (uint32_t)ps;
			if ((uint32_t)n >= emu->max_segs) {
				*status = EMU_ST_FIELD;
				return -1;
			}
			n = seg_add(segs, n, e, l);
			left -= l;
		}
		if (i == take && left > 0)
			list += take * 8;	/* list page larger than 4 KiB: read on */
	}
	return n;
}

/**
 * emu_dptr_segs() - the command's data pointer (PRPs or an SGL, as PSDT says)
 * as contiguous bus ranges; see emu_prp_segs(). PSDT was checked on fetch.
 */
int emu_dptr_segs(struct sio_nvme_emu *emu, const struct sio_nvme_cmd *cmd, uint64_t len,
		  struct emu_seg *segs, uint16_t *status)
{
	if ((cmd->flags >> 6) == SIO_NVME_PSDT_SGL_MPTR)
		return emu_sgl_segs(emu, &cmd->sgl, len, segs, status);
	return emu_prp_segs(emu, cmd->prp1, cmd->prp2, len, segs, status);
}

/**
 * emu_xfer() - copy between a buffer and the command's data pointer
 * @emu: controller
 * @cmd: the command (PRPs or SGL)
 * @buf: model-side buffer
 * @len: bytes
 * @to_host: true for controller-to-host (reads, Identify)
 * Return: an NVMe status (EMU_OK on success).
 */
uint16_t emu_xfer(struct sio_nvme_emu *emu, const struct sio_nvme_cmd *cmd,
		  void *buf, uint64_t len, bool to_host)
{
	uint16_t st = EMU_OK;
	uint8_t *p = buf;
	int n = emu_dptr_segs(emu, cmd, len, emu->segs, &st);

	if (n < 0)
		return st;
	for (int i = 0; i < n; i++) {
		int rc = to_host ? emu->dma.write(emu->dma.ctx, emu->segs[i].bus, p, emu->segs[i].len)
				 : emu->dma.read(emu->dma.ctx, emu->segs[i].bus, p, emu->segs[i].len);
		/* posted writes across a dead link vanish; QEMU's says nothing */
		if (rc && !(rc == -ENOLINK && to_host && emu->cfg.lost_dma_ok))
			return dma_status(rc);
		p += emu->segs[i].len;
	}
	return EMU_OK;
}
