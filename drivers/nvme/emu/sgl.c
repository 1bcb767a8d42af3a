/* SPDX-License-Identifier: MIT */
/*
 * SGL walking (NVMe 1.4, 4.4): the command's SGL1 is a Data Block, or a
 * (Last) Segment descriptor pointing to a list of descriptors in host
 * memory. Only a segment's last descriptor may chain to the next segment;
 * a Last Segment holds data blocks only. Data blocks may start and end at
 * any byte (SGLS 01b). No bit bucket, keyed, offset or oversized SGLs: each
 * is refused with the status the specification names.
 */
#include <errno.h>
#include "emu_priv.h"

#define ST_SEG		EMU_ST(NVME_SCT_GENERIC, NVME_SC_SGL_INVALID_LAST)
#define ST_COUNT	EMU_ST(NVME_SCT_GENERIC, NVME_SC_SGL_INVALID_COUNT)
#define ST_DATA_LEN	EMU_ST(NVME_SCT_GENERIC, NVME_SC_SGL_INVALID_DATA)
#define ST_TYPE		EMU_ST(NVME_SCT_GENERIC, NVME_SC_SGL_INVALID_TYPE)

/* Descriptors read per DMA: one 4 KiB piece of a segment. */
#define CHUNK		256u
/* Descriptors one command may use in all, segments included (a loop ends here). */
#define MAX_DESC	4096u

struct walk {
	struct sio_nvme_emu *emu;
	struct emu_seg *segs;
	int n;
	uint64_t want, got;
	uint32_t ndesc;
};

static uint16_t data_block(struct walk *w, const struct sio_nvme_sgl *d)
{
	uint64_t bus = d->addr;

	if (d->length == 0)
		return EMU_OK;	/* transfers nothing */
	if (w->got + d->length > w->want)
		return ST_DATA_LEN;	/* SGLS.OVERSIZE is not reported */
	if (w->n > 0 && w->segs[w->n - 1].bus + w->segs[w->n - 1].len == bus) {
		w->segs[w->n - 1].len += d->length;	/* <= mdts_bytes: no overflow */
	} else {
		if ((uint32_t)w->n >= w->emu->max_segs)
			return ST_COUNT;
		w->segs[w->n].bus = bus;
		w->segs[w->n].len = d->length;
		w->n++;
	}
	w->got += d->length;
	return EMU_OK;
}

static bool is_seg(uint8_t type)
{
	return type == SIO_NVME_SGL_TYPE(SIO_NVME_SGL_SEGMENT) ||
	       type == SIO_NVME_SGL_TYPE(SIO_NVME_SGL_LAST_SEGMENT);
}

/* Walk segments from @d (a Segment or Last Segment descriptor). */
static uint16_t segments(struct walk *w, struct sio_nvme_sgl d)
{
	struct sio_nvme_sgl buf[CHUNK];

	for (;;) {
		bool last = d.type == SIO_NVME_SGL_TYPE(SIO_NVME_SGL_LAST_SEGMENT);
		uint32_t count = d.length / 16, done = 0;
		uint64_t at = d.addr;
		bool chained = false;

		if (d.length == 0 || d.length % 16)
			return ST_SEG;
		while (done < count) {
			uint32_t take = count - done < CHUNK ? count - done : CHUNK;

			if (w->ndesc + take > MAX_DESC)
				return ST_COUNT;
			w->ndesc += take;
			if (w->emu->dma.read(w->emu->dma.ctx, at, buf, take * 16ull))
				return EMU_ST_XFER;
			for (uint32_t i = 0; i < take; i++) {
				bool final = done + i == count - 1;
				uint16_t st;

				if (is_seg(buf[i].type)) {
					/* only a Segment's last descriptor chains */
					if (!final || last)
						return ST_SEG;
					d = buf[i];
					chained = true;
					break;
				}
				/* a Bit Bucket, Keyed or Transport block, or another subtype */
				st = buf[i].type == SIO_NVME_SGL_TYPE(SIO_NVME_SGL_DATA)
					? data_block(w, &buf[i]) : ST_TYPE;
				if (st)
					return st;
			}
			done += take;
			at += take * 16ull;
		}
		if (!chained)
			return last ? EMU_OK : ST_SEG;	/* a Segment must chain on */
	}
}

/**
 * emu_sgl_segs() - turn the command's SGL into contiguous bus ranges
 * @emu: controller
 * @sgl1: the command's first descriptor
 * @len: bytes the command transfers (at most emu->mdts_bytes)
 * @segs: room for emu->max_segs pieces
 * @status: the NVMe status when this fails
 * Return: the number of pieces, or -1 with *@status set.
 */
int emu_sgl_segs(struct sio_nvme_emu *emu, const struct sio_nvme_sgl *sgl1, uint64_t len,
		 struct emu_seg *segs, uint16_t *status)
{
	struct walk w = { .emu = emu, .segs = segs, .want = len };
	uint16_t st;

	if (len == 0)
		return 0;
	if (sgl1->type == SIO_NVME_SGL_TYPE(SIO_NVME_SGL_DATA))
		st = data_block(&w, sgl1);
	else if (is_seg(sgl1->type))
		st = segments(&w, *sgl1);
	else
		st = ST_TYPE;
	if (!st && w.got != len)
		st = ST_DATA_LEN;	/* the SGL describes less than the command moves */
	if (st) {
		*status = st;
		return -1;
	}
	return w.n;
}
