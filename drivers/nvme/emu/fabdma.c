/* SPDX-License-Identifier: MIT */
/*
 * The controller's DMA on a fabric (sio_dma_read/write/ptr through its
 * device's mappings), and its own memory buffer. An address in the CMB,
 * where the host said it sees it (CMBMSC.CBA, with CMSE set), is the
 * controller's own memory and is served from BAR2 directly, as QEMU's
 * nvme_addr_is_cmb() does: the fabric's mappings of the BAR are a
 * borrower's. SQs placed in the CMB were fetched through the manager's
 * mapping, and while a crashed manager's borrow was gone and its
 * successor's not yet made, their commands were consumed and lost.
 */
#include <string.h>
#include <smartio/model.h>
#include "emu_priv.h"

/* @len bytes at @bus inside the CMB, or NULL. */
static uint8_t *cmb_at(struct sio_nvme_emu *emu, uint64_t bus, size_t len)
{
	uint64_t size = (uint64_t)emu->cfg.cmb_mib << 20, cba;

	if (!emu->cmb || !NVME_CMBMSC_CMSE(emu->cmbmsc))
		return NULL;
	cba = NVME_CMBMSC_CBA(emu->cmbmsc) << NVME_CMBMSC_CBA_SHIFT;
	if (bus < cba || bus - cba >= size || len > size - (bus - cba))
		return NULL;
	return emu->cmb + (bus - cba);
}

static int fab_read(void *ctx, uint64_t bus, void *buf, size_t len)
{
	struct sio_nvme_emu *emu = ctx;
	uint8_t *p = cmb_at(emu, bus, len);

	if (!p)
		return sio_dma_read(emu->reg, bus, buf, len);
	memcpy(buf, p, len);
	return 0;
}

static int fab_write(void *ctx, uint64_t bus, const void *buf, size_t len)
{
	struct sio_nvme_emu *emu = ctx;
	uint8_t *p = cmb_at(emu, bus, len);

	if (!p)
		return sio_dma_write(emu->reg, bus, buf, len);
	memcpy(p, buf, len);
	return 0;
}

static int fab_ptr(void *ctx, uint64_t bus, size_t len, bool write, void **ptr)
{
	struct sio_nvme_emu *emu = ctx;
	uint8_t *p = cmb_at(emu, bus, len);

	if (!p)
		return sio_dma_ptr(emu->reg, bus, len, write, ptr);
	*ptr = p;
	return 0;
}

static void fab_batch_begin(void *ctx)
{
	sio_dma_batch_begin(((struct sio_nvme_emu *)ctx)->reg);
}

static bool fab_batch_pending(void *ctx)
{
	return sio_dma_batch_pending(((struct sio_nvme_emu *)ctx)->reg);
}

static int fab_batch_end(void *ctx)
{
	return sio_dma_batch_end(((struct sio_nvme_emu *)ctx)->reg);
}

/**
 * emu_fabric_dma() - DMA through the fabric, and the CMB as the
 *	controller's own memory
 * @emu: controller, registered (emu->reg)
 * Return: 0, or -errno when its CMB cannot be mapped here.
 */
int emu_fabric_dma(struct sio_nvme_emu *emu)
{
	struct sio_segment *bar;
	void *va;
	int rc;

	emu->dma = (struct sio_nvme_emu_dma){ fab_read, fab_write, fab_ptr, emu,
					      fab_batch_begin, fab_batch_pending,
					      fab_batch_end };
	if (!emu->cfg.cmb_mib)
		return 0;
	rc = sio_devreg_bar(emu->reg, EMU_CMB_BAR, &bar);
	if (!rc)
		rc = sio_segment_map(bar, &va);
	if (rc)
		return sio_err_wrap(-rc, "map the CMB (BAR%d)", EMU_CMB_BAR);
	emu->cmb = va;
	return 0;
}
