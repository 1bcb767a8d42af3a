/* SPDX-License-Identifier: MIT */
/*
 * NVM commands (Read, Write, Flush, Write Zeroes; the others in dsm.c) and
 * the backing store.
 * RAM backing copies inline between the store and host memory; file backing
 * hands host memory (reached by sio_dma_ptr) straight to io_uring, with up
 * to io_depth commands in flight, reaped from the same polling loop.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <linux/falloc.h>
#include <sys/mman.h>
#include <sys/random.h>
#include <sys/stat.h>
#include "emu_priv.h"

#define ST_WRITE_FAULT		SIO_NVME_MK_STATUS(NVME_SCT_MEDIA, NVME_SC_WRITE_FAULT)
#define ST_READ_ERROR		SIO_NVME_MK_STATUS(NVME_SCT_MEDIA, NVME_SC_READ_ERROR)

static int layout(struct sio_nvme_emu *emu, uint64_t avail, bool grow, uint64_t *need)
{
	const struct sio_nvme_emu_config *c = &emu->cfg;
	uint64_t off = 0;

	if (c->nns == 0) {
		uint32_t shift = c->lba_size == 4096 ? 12 : 9;

		avail &= ~(uint64_t)(EMU_PAGE - 1);
		if (avail < EMU_PAGE)
			return sio_err_set(EINVAL, "backing: %llu bytes is too small for a namespace "
					   "(give --ns SIZE)", (unsigned long long)avail);
		emu->nns = 1;
		emu->ns[0] = (struct emu_ns){ .off = 0, .nlb = avail >> shift, .lba_shift = shift };
		*need = avail;
		return 0;
	}
	emu->nns = c->nns;
	for (int i = 0; i < c->nns; i++) {
		uint32_t shift = c->ns[i].lba_size == 4096 ? 12 : 9;

		emu->ns[i] = (struct emu_ns){ .off = off, .nlb = c->ns[i].size >> shift,
					      .lba_shift = shift };
		off += (c->ns[i].size + EMU_PAGE - 1) & ~(uint64_t)(EMU_PAGE - 1);
	}
	if (!grow && avail && off > avail)
		return sio_err_set(EINVAL, "backing: namespaces need %llu bytes, the store has %llu",
				   (unsigned long long)off, (unsigned long long)avail);
	*need = off;
	return 0;
}

/* A RAM store lives as long as the controller: its identifiers need only differ from others'. */
static uint64_t ram_seed(void)
{
	uint64_t seed;

	if (getrandom(&seed, sizeof(seed), 0) != sizeof(seed))
		seed = sio__now_ns() ^ ((uint64_t)getpid() << 32);
	return seed;
}

/*
 * A file store is named by what survives a restart: its device and inode
 * (a block device by its device number), not the path it was opened by.
 */
static int file_seed(struct sio_nvme_emu *emu, uint64_t *seed)
{
	struct stat st;

	if (fstat(emu->fd, &st))
		return sio_err_set(errno, "backing: stat %s: %s", emu->cfg.backing, strerror(errno));
	if (S_ISBLK(st.st_mode))
		*seed = (uint64_t)st.st_rdev;
	else
		*seed = (uint64_t)st.st_dev << 32 ^ (uint64_t)st.st_ino;
	return 0;
}

/* "ram:SIZE": anonymous memory; a SIZE of 0 or short of the namespaces grows to fit them. */
static int ram_open(struct sio_nvme_emu *emu, const char *arg)
{
	uint64_t size = 0, need = 0;
	int rc;

	rc = sio_nvme_emu_parse_size(arg, &size);
	if (rc)
		return rc;
	rc = layout(emu, size, size == 0, &need);
	if (rc)
		return rc;
	emu_ns_ids(emu, ram_seed());
	if (size < need)
		size = need;
	/*
	 * Up to 4 GiB is populated now (huge pages where the kernel gives
	 * them): a page fault on the data path costs microseconds. Larger
	 * stores fill lazily; untouched pages read as zeroes.
	 */
	emu->ram = mmap(NULL, size, PROT_READ | PROT_WRITE,
			MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (emu->ram == MAP_FAILED) {
		emu->ram = NULL;
		return sio_err_set(ENOMEM, "backing: cannot map %llu bytes of RAM",
				   (unsigned long long)size);
	}
	madvise(emu->ram, size, MADV_HUGEPAGE);
	if (size <= (4ull << 30))
		madvise(emu->ram, size, MADV_POPULATE_WRITE);
	emu->backing_size = size;
	return 0;
}

/* A file or block device @b: opened (a file created when the namespaces
 * are given), laid out, named, and grown to fit the namespaces. */
static int file_open(struct sio_nvme_emu *emu, const char *b)
{
	uint64_t size = 0, need = 0, seed = 0;
	struct stat st;
	bool exists = stat(b, &st) == 0;
	int rc;

	if (exists && !S_ISREG(st.st_mode) && !S_ISBLK(st.st_mode))
		return sio_err_set(EINVAL, "backing: %s is not a file", b);
	if (!exists && emu->cfg.nns == 0)
		return sio_err_set(ENOENT, "backing: %s does not exist (create it, or give --ns SIZE)", b);
	/* never through a symlink; a store made here is private to its user */
	emu->fd = open(b, O_RDWR | O_NOFOLLOW | O_CLOEXEC | (exists ? 0 : O_CREAT | O_EXCL), 0600);
	if (emu->fd < 0)
		return sio_err_set(errno, "backing: open %s: %s", b, strerror(errno));
	if (S_ISBLK(st.st_mode) && exists) {
		off_t end = lseek(emu->fd, 0, SEEK_END);
		size = end > 0 ? (uint64_t)end : 0;
	} else {
		size = exists ? (uint64_t)st.st_size : 0;
	}
	rc = layout(emu, size, true, &need);
	if (rc)
		return rc;
	rc = file_seed(emu, &seed);
	if (rc)
		return rc;
	emu_ns_ids(emu, seed);
	if (size < need) {
		if (ftruncate(emu->fd, (off_t)need))
			return sio_err_set(errno, "backing: grow %s to %llu bytes: %s", b,
					   (unsigned long long)need, strerror(errno));
		size = need;
	}
	emu->backing_size = size;
	return 0;
}

/* The file's io_uring and its io_depth requests, each with its iovecs. */
static int ring_open(struct sio_nvme_emu *emu)
{
	int rc;

	rc = io_uring_queue_init(emu->cfg.io_depth * 2, &emu->ring, 0);
	if (rc < 0)
		return sio_err_set(-rc, "io_uring: %s", strerror(-rc));
	emu->ring_ok = true;
	emu->reqs = calloc(emu->cfg.io_depth, sizeof(*emu->reqs));
	emu->iov_pool = calloc((size_t)emu->cfg.io_depth * emu->max_segs, sizeof(struct iovec));
	if (!emu->reqs || !emu->iov_pool)
		return sio_err_set(ENOMEM, "out of memory");
	for (uint32_t i = 0; i < emu->cfg.io_depth; i++) {
		emu->reqs[i].iov = &emu->iov_pool[(size_t)i * emu->max_segs];
		emu->reqs[i].next_free = emu->free_reqs;
		emu->free_reqs = &emu->reqs[i];
	}
	return 0;
}

int emu_backing_open(struct sio_nvme_emu *emu)
{
	const char *b = emu->cfg.backing;
	int rc;

	if (strncmp(b, "ram:", 4) == 0)
		return ram_open(emu, b + 4);
	rc = file_open(emu, b);
	return rc ? rc : ring_open(emu);
}

void emu_backing_close(struct sio_nvme_emu *emu)
{
	if (emu->ring_ok) {
		while (emu->inflight)
			emu_reap(emu, true);
		io_uring_queue_exit(&emu->ring);
		emu->ring_ok = false;
	}
	if (emu->fd >= 0) {
		fdatasync(emu->fd);
		close(emu->fd);
		emu->fd = -1;
	}
	if (emu->ram)
		munmap(emu->ram, emu->backing_size);
	emu->ram = NULL;
	free(emu->reqs);
	free(emu->iov_pool);
	emu->reqs = NULL;
	emu->iov_pool = NULL;
}

int emu_flush_all(struct sio_nvme_emu *emu)
{
	return emu->fd >= 0 ? fdatasync(emu->fd) : 0;
}

static struct io_uring_sqe *get_sqe(struct sio_nvme_emu *emu)
{
	struct io_uring_sqe *sqe = io_uring_get_sqe(&emu->ring);

	if (!sqe) {
		io_uring_submit(&emu->ring);
		emu->to_submit = 0;
		sqe = io_uring_get_sqe(&emu->ring);
	}
	return sqe;
}

static struct emu_req *req_get(struct sio_nvme_emu *emu, struct emu_sq *sq,
			       const struct sio_nvme_cmd *cmd)
{
	struct emu_req *r = emu->free_reqs;

	emu->free_reqs = r->next_free;
	r->sq = sq;
	r->cid = cmd->cid;
	r->opcode = cmd->opcode;
	r->nsid = cmd->nsid;
	r->bytes = 0;
	r->niov = 0;
	return r;
}

static void req_put(struct sio_nvme_emu *emu, struct emu_req *r)
{
	r->next_free = emu->free_reqs;
	emu->free_reqs = r;
}

static void submit(struct sio_nvme_emu *emu, struct io_uring_sqe *sqe, struct emu_req *r)
{
	io_uring_sqe_set_data(sqe, r);
	emu->to_submit++;
	emu->inflight++;
}

static uint16_t req_status(struct sio_nvme_emu *emu, struct emu_req *r, int res)
{
	switch (r->opcode) {
	case nvme_cmd_read:
		if (res < 0)
			return ST_READ_ERROR;
		if ((uint64_t)res < r->bytes) {
			/* past the end of the file: the rest reads as zeroes */
			uint64_t skip = (uint64_t)res;

			for (int i = 0; i < r->niov; i++) {
				if (skip >= r->iov[i].iov_len) {
					skip -= r->iov[i].iov_len;
					continue;
				}
				memset((uint8_t *)r->iov[i].iov_base + skip, 0, r->iov[i].iov_len - skip);
				skip = 0;
			}
		}
		return EMU_OK;
	case nvme_cmd_write:
		return res < 0 || (uint64_t)res < r->bytes ? ST_WRITE_FAULT : EMU_OK;
	case nvme_cmd_write_zeroes:
		if (res < 0) {
			const struct emu_ns *ns = &emu->ns[r->nsid - 1];

			if (emu_zero_file(emu, ns->off + (r->slba << ns->lba_shift), r->bytes))
				return ST_WRITE_FAULT;
		}
		return EMU_OK;
	default:	/* flush */
		return res < 0 ? ST_WRITE_FAULT : EMU_OK;
	}
}

/**
 * emu_reap() - complete finished file I/O
 * @emu: controller
 * @wait: block for at least one completion (when any is in flight)
 * Return: the number completed.
 */
int emu_reap(struct sio_nvme_emu *emu, bool wait)
{
	struct io_uring_cqe *cqe;
	int n = 0;

	if (!emu->ring_ok || !emu->inflight)
		return 0;
	if (emu->to_submit) {
		io_uring_submit(&emu->ring);
		emu->to_submit = 0;
	}
	if (wait && io_uring_wait_cqe(&emu->ring, &cqe) < 0)
		return 0;
	while (io_uring_peek_cqe(&emu->ring, &cqe) == 0) {
		struct emu_req *r = io_uring_cqe_get_data(cqe);
		int res = cqe->res;

		io_uring_cqe_seen(&emu->ring, cqe);
		emu->inflight--;
		emu_post(emu, r->sq, r->cid, req_status(emu, r, res), 0, NULL);
		req_put(emu, r);
		n++;
	}
	return n;
}

/*
 * File I/O for memory the controller has no pointer to (GPU memory): a
 * synchronous copy through a bounce buffer, one PRP segment at a time.
 */
static uint16_t bounce_rw(struct sio_nvme_emu *emu, const struct emu_seg *segs, int n,
			  uint64_t off, bool write)
{
	uint8_t *buf = NULL;
	uint16_t st = EMU_OK;

	for (int i = 0; i < n && st == EMU_OK; i++) {
		uint8_t *b = realloc(buf, segs[i].len);
		ssize_t done;

		if (!b) {
			st = EMU_ST_INTERNAL;
			break;
		}
		buf = b;
		if (write) {
			if (emu->dma.read(emu->dma.ctx, segs[i].bus, buf, segs[i].len))
				st = EMU_ST_XFER;
			else if ((done = pwrite(emu->fd, buf, segs[i].len, (off_t)off)) != (ssize_t)segs[i].len)
				st = EMU_ST_INTERNAL;
		} else {
			if ((done = pread(emu->fd, buf, segs[i].len, (off_t)off)) != (ssize_t)segs[i].len)
				st = EMU_ST_INTERNAL;
			else if (emu->dma.write(emu->dma.ctx, segs[i].bus, buf, segs[i].len))
				st = EMU_ST_XFER;
		}
		off += segs[i].len;
	}
	if (write && st == EMU_OK && !emu->wce && fdatasync(emu->fd))
		st = EMU_ST_INTERNAL;	/* no volatile cache: durable on completion */
	free(buf);
	return st;
}

/* RAM backing: copied at once between the store at @off and host memory. */
static uint16_t rw_ram(struct sio_nvme_emu *emu, const struct sio_nvme_cmd *cmd, uint64_t bytes,
		       uint64_t off, bool write)
{
	uint16_t st = EMU_OK;
	int n;

	n = emu_dptr_segs(emu, cmd, bytes, emu->segs, &st);
	if (n < 0)
		return st;
	for (int i = 0; i < n; i++) {
		uint8_t *m = emu->ram + off;
		int rc = write ? emu->dma.read(emu->dma.ctx, emu->segs[i].bus, m, emu->segs[i].len)
			       : emu->dma.write(emu->dma.ctx, emu->segs[i].bus, m, emu->segs[i].len);
		if (rc)
			return EMU_ST_XFER;
		off += emu->segs[i].len;
	}
	return EMU_OK;
}

/* File backing: handed to io_uring (EMU_PENDING; emu_reap() completes it),
 * or bounced when the memory has no host pointer. */
static uint16_t rw_file(struct sio_nvme_emu *emu, struct emu_sq *sq,
			const struct sio_nvme_cmd *cmd, uint64_t slba, uint64_t bytes,
			uint64_t off, bool write)
{
	struct emu_req *r = req_get(emu, sq, cmd);
	struct emu_seg *segs = emu->segs;
	struct io_uring_sqe *sqe;
	uint16_t st = EMU_OK;
	int n;

	n = emu_dptr_segs(emu, cmd, bytes, segs, &st);
	if (n < 0)
		goto fail;
	for (int i = 0; i < n; i++) {
		void *p;

		/* Zero copy: io_uring moves data straight to or from host memory. */
		int rc = emu->dma.ptr(emu->dma.ctx, segs[i].bus, segs[i].len, !write, &p);
		if (rc == -EOPNOTSUPP) {	/* memory without a host pointer (GPU) */
			req_put(emu, r);
			return bounce_rw(emu, segs, n, off, write);
		}
		if (rc) {
			st = EMU_ST_XFER;
			goto fail;
		}
		r->iov[i].iov_base = p;
		r->iov[i].iov_len = segs[i].len;
	}
	r->niov = n;
	r->bytes = bytes;
	r->slba = slba;
	sqe = get_sqe(emu);
	if (!sqe) {
		st = EMU_ST_INTERNAL;
		goto fail;
	}
	if (write) {
		io_uring_prep_writev(sqe, emu->fd, r->iov, (unsigned)n, off);
		if (!emu->wce)
			sqe->rw_flags = RWF_DSYNC;	/* no volatile cache: durable on completion */
	} else {
		io_uring_prep_readv(sqe, emu->fd, r->iov, (unsigned)n, off);
	}
	submit(emu, sqe, r);
	return EMU_PENDING;
fail:
	req_put(emu, r);
	return st;
}

/* Read or Write: the range checked and counted (SMART), then the store's way. */
static uint16_t rw(struct sio_nvme_emu *emu, struct emu_sq *sq, const struct sio_nvme_cmd *cmd,
		   const struct emu_ns *ns, bool write)
{
	struct sio_nvme_model_rw d;
	uint16_t st = sio_nvme_model_rw_decode(cmd, ns->lba_shift, ns->nlb, emu->mdts_bytes, &d);
	uint64_t off;

	if (st)
		return st;
	off = ns->off + (d.slba << ns->lba_shift);
	if (write) {
		emu->host_writes++;
		emu->units_written += d.bytes >> 9;
	} else {
		emu->host_reads++;
		emu->units_read += d.bytes >> 9;
	}
	if (emu->ram)
		return rw_ram(emu, cmd, d.bytes, off, write);
	return rw_file(emu, sq, cmd, d.slba, d.bytes, off, write);
}

static uint16_t write_zeroes(struct sio_nvme_emu *emu, struct emu_sq *sq,
			     const struct sio_nvme_cmd *cmd, const struct emu_ns *ns)
{
	uint64_t slba = cmd->cdw10 | ((uint64_t)cmd->cdw11 << 32);
	uint64_t nlb = (cmd->cdw12 & 0xffff) + 1;
	uint64_t bytes = nlb << ns->lba_shift, off;

	if (sio_nvme_model_lba_check(slba, nlb, ns->nlb))
		return EMU_ST_LBA;
	off = ns->off + (slba << ns->lba_shift);
	if (emu->ram) {
		emu_deallocate(emu, off, bytes);
		return EMU_OK;
	}

	struct emu_req *r = req_get(emu, sq, cmd);
	struct io_uring_sqe *sqe = get_sqe(emu);

	if (!sqe) {
		req_put(emu, r);
		return EMU_ST_INTERNAL;
	}
	r->slba = slba;
	r->bytes = bytes;
	io_uring_prep_fallocate(sqe, emu->fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE,
				off, bytes);
	submit(emu, sqe, r);
	return EMU_PENDING;
}

static uint16_t flush(struct sio_nvme_emu *emu, struct emu_sq *sq, const struct sio_nvme_cmd *cmd)
{
	struct emu_req *r;
	struct io_uring_sqe *sqe;

	if (emu->ram)
		return EMU_OK;
	r = req_get(emu, sq, cmd);
	sqe = get_sqe(emu);
	if (!sqe) {
		req_put(emu, r);
		return EMU_ST_INTERNAL;
	}
	io_uring_prep_fsync(sqe, emu->fd, IORING_FSYNC_DATASYNC);
	submit(emu, sqe, r);
	return EMU_PENDING;
}

/**
 * emu_io() - execute one NVM command
 * @emu: controller
 * @sq: the I/O SQ it came from
 * @cmd: the command (hostile)
 * Return: internal status, or EMU_PENDING when io_uring will complete it.
 */
uint16_t emu_io(struct sio_nvme_emu *emu, struct emu_sq *sq, const struct sio_nvme_cmd *cmd)
{
	const struct emu_ns *ns;

	if (cmd->flags & 0x3)
		return EMU_ST_FIELD;	/* no fused operations */
	/* PRPs or an SGL with a contiguous metadata pointer (SGLS.MPTR_SGL is not reported) */
	if ((cmd->flags >> 6) != SIO_NVME_PSDT_PRP && (cmd->flags >> 6) != SIO_NVME_PSDT_SGL_MPTR)
		return EMU_ST_FIELD;
	if (cmd->opcode == nvme_cmd_flush) {
		if (cmd->nsid != 0xffffffffu && (cmd->nsid == 0 || cmd->nsid > (uint32_t)emu->nns))
			return EMU_ST_NS;
		return flush(emu, sq, cmd);
	}
	switch (cmd->opcode) {
	case nvme_cmd_read:
	case nvme_cmd_write:
	case nvme_cmd_write_zeroes:
	case nvme_cmd_compare:
	case nvme_cmd_dsm:
	case nvme_cmd_verify:
		break;
	default:
		return EMU_ST_OPCODE;
	}
	if (cmd->nsid == 0 || cmd->nsid > (uint32_t)emu->nns)
		return EMU_ST_NS;
	ns = &emu->ns[cmd->nsid - 1];
	if (cmd->opcode == nvme_cmd_compare || cmd->opcode == nvme_cmd_dsm ||
	    cmd->opcode == nvme_cmd_verify)
		return emu_nvm_optional(emu, cmd);
	if (cmd->opcode == nvme_cmd_write_zeroes)
		return write_zeroes(emu, sq, cmd, ns);
	return rw(emu, sq, cmd, ns, cmd->opcode == nvme_cmd_write);
}
