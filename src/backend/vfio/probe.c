/* SPDX-License-Identifier: MIT */
/*
 * Probe a function through vfio: open it, read what the kernel and its
 * config space say, touch BAR0 of an NVMe controller, and map a buffer
 * through the IOMMU. `smartio vfio probe` prints what this finds.
 */
#include <errno.h>
#include <linux/vfio.h>
#include <string.h>
#include <sys/mman.h>

#include "vfio.h"

#define NVME_CLASS	0x010802
#define PROBE_DMA_LEN	(1u << 20)

/* Read CAP and VS through BAR0. */
static int nvme_regs(struct sio_vfio_dev *d, struct sio_vfio_probe *out)
{
	volatile uint32_t *bar;
	uint64_t sz;
	int rc = sio_vfio_bar_mmap(d, 0, (void **)&bar, &sz);

	if (rc)
		return rc;
	out->nvme = true;
	out->nvme_cap = bar[0] | (uint64_t)bar[1] << 32;
	out->nvme_vs = bar[2];
	munmap((void *)bar, sz);
	return 0;
}

/* Exercise the IOMMU path: map and unmap a buffer. */
static int dma_try(struct sio_vfio_dev *d, struct sio_vfio_probe *out)
{
	void *buf = mmap(NULL, PROBE_DMA_LEN, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
			 -1, 0);
	int rc;

	if (buf == MAP_FAILED)
		return sio__err(errno, "probe: no memory for a DMA buffer: %s", strerror(errno));
	rc = sio_vfio_dma_map(d, buf, PROBE_DMA_LEN, &out->dma_iova);
	if (!rc)
		rc = sio_vfio_dma_unmap(d, out->dma_iova, PROBE_DMA_LEN);
	munmap(buf, PROBE_DMA_LEN);
	return rc;
}

int sio_vfio_probe(const char *bdf, enum sio_vfio_mode mode, struct sio_vfio_probe *out)
{
	struct sio_vfio_dev d;
	uint32_t cls;
	int rc;

	if (!out)
		return sio__err(EINVAL, "probe: out pointer is NULL");
	memset(out, 0, sizeof(*out));
	if ((rc = sio_vfio_open(bdf, mode, &d)))
		return rc;
	memcpy(out->bdf, d.bdf, sizeof(out->bdf));
	out->mode = d.mode;
	out->iommu_group = d.iommu_group;
	out->pgsizes = d.pgsizes;
	out->nranges = d.iova.nranges;
	for (int r = 0; r < d.iova.nranges && r < SIO_VFIO_MAX_RANGES; r++) {
		out->ranges[r].start = d.iova.ranges[r].start;
		out->ranges[r].last = d.iova.ranges[r].last;
	}
	for (int b = 0; b < SIO_MAX_BARS; b++) {
		if (!(out->bar[b].size = d.region[b].size))
			continue;
		sio_vfio_bar_bus(&d, b, &out->bar[b].bus);
		out->bar[b].mmap = d.region[b].flags & VFIO_REGION_INFO_FLAG_MMAP;
	}
	rc = sio_vfio_enable_master(&d);
	if (!rc)
		rc = sio_vfio_cfg_read(&d, 0x08, &cls, 4);
	if (!rc)
		out->class_code = cls >> 8;
	if (!rc && out->class_code == NVME_CLASS)
		rc = nvme_regs(&d, out);
	if (!rc)
		rc = dma_try(&d, out);
	sio_vfio_close(&d);
	return rc;
}
