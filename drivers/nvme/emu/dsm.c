/* SPDX-License-Identifier: MIT */
/*
 * The optional NVM commands (NVMe 1.4, 6.2 Compare, 6.7 Dataset Management,
 * 6.16 Verify) and Format NVM (5.23). Deallocated blocks read as zeroes
 * (DLFEAT 001b): a RAM store drops or zeroes the pages, a file store punches
 * holes. These run to completion before the next command is fetched, so a
 * deallocation either happened or was refused whole.
 */
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <unistd.h>
#include <linux/falloc.h>
#include <sys/mman.h>
#include "emu_priv.h"

#define ST_COMPARE	EMU_ST(NVME_SCT_MEDIA, NVME_SC_COMPARE_FAILED)
#define ST_READ_ERROR	SIO_NVME_MK_STATUS(NVME_SCT_MEDIA, NVME_SC_READ_ERROR)
#define ST_FORMAT	EMU_ST(NVME_SCT_CMD_SPECIFIC, NVME_SC_INVALID_FORMAT)

#define DSM_AD		(1u << 2)	/* CDW11: Attribute - Deallocate */

static bool in_range(const struct emu_ns *ns, uint64_t slba, uint64_t nlb)
{
	return slba < ns->nlb && nlb <= ns->nlb - slba;
}

/* Zero [off, off+len) of a file store by writing zeroes. */
int emu_zero_file(struct sio_nvme_emu *emu, uint64_t off, uint64_t len)
{
	static const uint8_t zeroes[65536];

	while (len) {
		size_t n = len < sizeof(zeroes) ? (size_t)len : sizeof(zeroes);
		ssize_t w = pwrite(emu->fd, zeroes, n, (off_t)off);

		if (w <= 0)
			return -1;
		off += (uint64_t)w;
		len -= (uint64_t)w;
	}
	return 0;
}

/**
 * emu_deallocate() - make blocks of the store read as zeroes, synchronously
 * @emu: controller
 * @off, @len: bytes of the backing store
 * Return: 0, or -1 when the store refused.
 */
int emu_deallocate(struct sio_nvme_emu *emu, uint64_t off, uint64_t len)
{
	if (emu->ram) {
		/* whole pages go back to the kernel (and read as zeroes); the edges are zeroed */
		uint64_t a = (off + EMU_PAGE - 1) & ~(uint64_t)(EMU_PAGE - 1);
		uint64_t b = (off + len) & ~(uint64_t)(EMU_PAGE - 1);

		if (b > a && madvise(emu->ram + a, b - a, MADV_DONTNEED) == 0) {
			memset(emu->ram + off, 0, a - off);
			memset(emu->ram + b, 0, off + len - b);
		} else {
			memset(emu->ram + off, 0, len);
		}
		return 0;
	}
	if (fallocate(emu->fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, (off_t)off, (off_t)len))
		return emu_zero_file(emu, off, len);
	return 0;
}

/* Read @len bytes of the store at @off into @buf. */
static uint16_t store_read(struct sio_nvme_emu *emu, uint64_t off, void *buf, uint32_t len)
{
	if (emu->ram) {
		memcpy(buf, emu->ram + off, len);
		return EMU_OK;
	}
	/* past the end of a file: zeroes, as a read of unwritten blocks */
	ssize_t r = pread(emu->fd, buf, len, (off_t)off);

	if (r < 0)
		return ST_READ_ERROR;
	memset((uint8_t *)buf + r, 0, len - (size_t)r);
	return EMU_OK;
}

/* Compare: the host's data against the blocks, a chunk at a time. */
static uint16_t compare(struct sio_nvme_emu *emu, const struct sio_nvme_cmd *cmd,
			const struct emu_ns *ns)
{
	uint64_t slba = cmd->cdw10 | ((uint64_t)cmd->cdw11 << 32);
	uint64_t nlb = (cmd->cdw12 & 0xffff) + 1, bytes = nlb << ns->lba_shift, off;
	uint32_t chunk = emu->mdts_bytes / 2;	/* the admin scratch, halved */
	uint8_t *host = emu->scratch, *media = emu->scratch + chunk;
	uint16_t st = EMU_OK;
	int n;

	if (bytes > emu->mdts_bytes)
		return EMU_ST_FIELD;
	if (!in_range(ns, slba, nlb))
		return EMU_ST_LBA;
	n = emu_dptr_segs(emu, cmd, bytes, emu->segs, &st);
	if (n < 0)
		return st;
	off = ns->off + (slba << ns->lba_shift);
	emu->host_reads++;
	emu->units_read += bytes >> 9;
	for (int i = 0; i < n; i++) {
		for (uint32_t done = 0; done < emu->segs[i].len;) {
			uint32_t l = emu->segs[i].len - done < chunk ? emu->segs[i].len - done : chunk;

			if (emu->dma.read(emu->dma.ctx, emu->segs[i].bus + done, host, l))
				return EMU_ST_XFER;
			st = store_read(emu, off, media, l);
			if (st)
				return st;
			if (memcmp(host, media, l))
				return ST_COMPARE;
			done += l;
			off += l;
		}
	}
	return EMU_OK;
}

/* Verify: the blocks are readable; no data moves to the host. */
static uint16_t verify(struct sio_nvme_emu *emu, const struct sio_nvme_cmd *cmd,
		       const struct emu_ns *ns)
{
	uint64_t slba = cmd->cdw10 | ((uint64_t)cmd->cdw11 << 32);
	uint64_t nlb = (cmd->cdw12 & 0xffff) + 1, bytes = nlb << ns->lba_shift, off;

	if (!in_range(ns, slba, nlb))
		return EMU_ST_LBA;
	if (emu->ram)
		return EMU_OK;	/* RAM does not fail */
	off = ns->off + (slba << ns->lba_shift);
	for (uint64_t done = 0; done < bytes;) {
		uint32_t l = bytes - done < emu->mdts_bytes ? (uint32_t)(bytes - done) : emu->mdts_bytes;
		uint16_t st = store_read(emu, off + done, emu->scratch, l);

		if (st)
			return st;
		done += l;
	}
	return EMU_OK;
}

/* Dataset Management: with AD, deallocate every range; without, hints only. */
static uint16_t dsm(struct sio_nvme_emu *emu, const struct sio_nvme_cmd *cmd,
		    const struct emu_ns *ns)
{
	uint32_t nr = (cmd->cdw10 & 0xff) + 1;
	struct nvme_dsm_range *r = (struct nvme_dsm_range *)emu->scratch;
	uint16_t st = emu_xfer(emu, cmd, r, nr * sizeof(*r), false);

	if (st)
		return st;
	/* Every range is checked before any is acted on: all or nothing. */
	for (uint32_t i = 0; i < nr; i++)
		if (r[i].nlb && !in_range(ns, r[i].slba, r[i].nlb))
			return EMU_ST_LBA;
	if (!(cmd->cdw11 & DSM_AD))
		return EMU_OK;
	for (uint32_t i = 0; i < nr; i++) {
		if (!r[i].nlb)
			continue;
		if (emu_deallocate(emu, ns->off + (r[i].slba << ns->lba_shift),
				   (uint64_t)r[i].nlb << ns->lba_shift))
			return SIO_NVME_MK_STATUS(NVME_SCT_MEDIA, NVME_SC_WRITE_FAULT);
	}
	return EMU_OK;
}

/**
 * emu_nvm_optional() - Compare, Dataset Management or Verify
 * @emu: controller
 * @cmd: the command; its namespace is known to be active
 * Return: internal status (these complete before the next command is fetched).
 */
uint16_t emu_nvm_optional(struct sio_nvme_emu *emu, const struct sio_nvme_cmd *cmd)
{
	const struct emu_ns *ns = &emu->ns[cmd->nsid - 1];

	switch (cmd->opcode) {
	case nvme_cmd_compare:
		return compare(emu, cmd, ns);
	case nvme_cmd_dsm:
		return dsm(emu, cmd, ns);
	default:	/* nvme_cmd_verify */
		return verify(emu, cmd, ns);
	}
}

/**
 * emu_format() - Format NVM: the namespace (or all, NSID FFFFFFFFh; FNA = 0)
 * keeps its one LBA format and reads as zeroes afterwards
 * @emu: controller
 * @cmd: the admin command
 * Return: internal status.
 */
uint16_t emu_format(struct sio_nvme_emu *emu, const struct sio_nvme_cmd *cmd)
{
	uint32_t lbaf = cmd->cdw10 & 0xf, pi = (cmd->cdw10 >> 5) & 7, ses = (cmd->cdw10 >> 9) & 7;
	bool all = cmd->nsid == 0xffffffffu;

	if (!all && (cmd->nsid == 0 || cmd->nsid > (uint32_t)emu->nns))
		return EMU_ST_NS;
	if (ses > 2)
		return EMU_ST_FIELD;
	/* NLBAF 0 (one format), no metadata so no protection, no cryptographic erase (FNA) */
	if (lbaf != 0 || pi != 0 || ses == 2)
		return ST_FORMAT;
	/* I/O already started on the store finishes first; none starts meanwhile */
	emu_drain(emu, NULL);
	for (int i = 0; i < emu->nns; i++) {
		const struct emu_ns *ns = &emu->ns[i];

		if (!all && cmd->nsid != (uint32_t)i + 1)
			continue;
		if (emu_deallocate(emu, ns->off, ns->nlb << ns->lba_shift))
			return EMU_ST_INTERNAL;
	}
	if (emu->fd >= 0 && fdatasync(emu->fd))
		return EMU_ST_INTERNAL;
	return EMU_OK;
}
