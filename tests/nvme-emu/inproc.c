/* SPDX-License-Identifier: MIT */
/* The emulated controller in this process, on plain memory (inproc.h). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <nvme/types.h>
#include "inproc.h"

static bool in_host(uint64_t bus, size_t len)
{
	return bus >= INPROC_HOST_BUS && bus - INPROC_HOST_BUS < INPROC_HOST_SIZE &&
	       len <= INPROC_HOST_SIZE - (bus - INPROC_HOST_BUS);
}

static bool dead(uint64_t bus)
{
	return bus >= INPROC_DEAD_BUS && bus - INPROC_DEAD_BUS < INPROC_HOST_SIZE;
}

/* Is a write of @len at host offset @off a completion entry, or part of one? */
static bool cq_entry(const struct inproc *h, uint64_t off, size_t len)
{
	for (int i = 0; i < 2; i++) {
		uint64_t rel = off - h->cq[i];

		if (h->cq[i] && off >= h->cq[i] && rel < INPROC_QSZ * 16u &&
		    (rel % 16) + len <= 16)
			return true;
	}
	return false;
}

static void note_write(struct inproc *h, uint64_t bus, size_t len)
{
	uint64_t off = bus - INPROC_HOST_BUS;

	if (off < h->guard_end && !cq_entry(h, off, len))
		h->clobbered++;
	if (h->nlater && cq_entry(h, off, len))
		h->early_cpl++;
}

static bool noptr(const struct inproc *h, uint64_t bus)
{
	uint64_t off = bus - INPROC_HOST_BUS;

	return off >= h->noptr_lo && off < h->noptr_hi;
}

/* A write into memory with no pointer, inside a batch: it lands at the end. */
static bool defer(struct inproc *h, uint64_t bus, const void *buf, size_t len)
{
	struct inproc_later *l;

	if (!h->batch || !h->in_batch || !noptr(h, bus) ||
	    len > sizeof(l->data) || h->nlater == sizeof(h->later) / sizeof(h->later[0]))
		return false;
	if (cq_entry(h, bus - INPROC_HOST_BUS, len))
		h->cpl_deferred++;
	l = &h->later[h->nlater++];
	l->off = (uint32_t)(bus - INPROC_HOST_BUS);
	l->len = (uint32_t)len;
	memcpy(l->data, buf, len);
	h->deferred++;
	return true;
}

static void batch_begin(void *ctx)
{
	((struct inproc *)ctx)->in_batch = true;
}

static bool batch_pending(void *ctx)
{
	return ((struct inproc *)ctx)->nlater;
}

static int batch_end(void *ctx)
{
	struct inproc *h = ctx;

	h->in_batch = false;
	if (!h->nlater)
		return 0;
	h->batches++;
	for (unsigned i = 0; i < h->nlater && !h->batch_fails; i++)
		memcpy(h->host + h->later[i].off, h->later[i].data, h->later[i].len);
	h->nlater = 0;
	return h->batch_fails ? -EIO : 0;
}

static int dma_read(void *ctx, uint64_t bus, void *buf, size_t len)
{
	struct inproc *h = ctx;

	if (in_host(bus, len)) {
		if (noptr(h, bus))
			h->noptr_reads++;
		memcpy(buf, h->host + (bus - INPROC_HOST_BUS), len);
		return 0;
	}
	if (dead(bus)) {
		memset(buf, 0xff, len);
		return -ENOLINK;
	}
	return -EFAULT;
}

static int dma_write(void *ctx, uint64_t bus, const void *buf, size_t len)
{
	struct inproc *h = ctx;

	if (in_host(bus, len)) {
		note_write(h, bus, len);
		if (!defer(h, bus, buf, len))
			memcpy(h->host + (bus - INPROC_HOST_BUS), buf, len);
		return 0;
	}
	return dead(bus) ? -ENOLINK : -EFAULT;
}

static int dma_ptr(void *ctx, uint64_t bus, size_t len, bool write, void **p)
{
	struct inproc *h = ctx;

	if (in_host(bus, len)) {
		if (noptr(h, bus))
			return -EOPNOTSUPP;
		if (write)
			note_write(h, bus, len);
		*p = h->host + (bus - INPROC_HOST_BUS);
		return 0;
	}
	return dead(bus) ? -ENOLINK : -EFAULT;
}

void inproc_config(struct sio_nvme_emu_config *cfg)
{
	sio_nvme_emu_config_default(cfg);
	cfg->backing = "ram:2M";
	cfg->nns = 2;
	cfg->ns[0] = (struct sio_nvme_emu_ns){ 1u << 20, 512 };
	cfg->ns[1] = (struct sio_nvme_emu_ns){ 1u << 20, 4096 };
	cfg->max_qpairs = 4;
	cfg->mqes = 64;
	cfg->mdts = 3;
}

int inproc_open(struct inproc *h, const struct sio_nvme_emu_config *cfg)
{
	struct sio_nvme_emu_dma dma = { .read = dma_read, .write = dma_write,
					.ptr = dma_ptr, .ctx = h, .batch_begin = batch_begin,
					.batch_pending = batch_pending,
					.batch_end = batch_end };
	int ret;

	memset(h, 0, sizeof(*h));
	ret = sio_nvme_emu_create(cfg, &h->emu);
	if (ret)
		return ret;
	h->bar0_size = sio_nvme_emu_bar0_size(cfg);
	h->bar0 = calloc(1, h->bar0_size);
	h->host = aligned_alloc(4096, INPROC_HOST_SIZE);
	if (!h->bar0 || !h->host) {
		inproc_close(h);
		return -ENOMEM;
	}
	memset(h->host, 0, INPROC_HOST_SIZE);
	ret = sio_nvme_emu_attach_mem(h->emu, h->bar0, &dma);
	if (ret)
		inproc_close(h);
	return ret;
}

void inproc_close(struct inproc *h)
{
	sio_nvme_emu_destroy(h->emu);
	free(h->bar0);
	free(h->host);
	memset(h, 0, sizeof(*h));
}

void inproc_wr32(struct inproc *h, uint32_t off, uint32_t v)
{
	memcpy(h->bar0 + off, &v, 4);
}

void inproc_wr64(struct inproc *h, uint32_t off, uint64_t v)
{
	memcpy(h->bar0 + off, &v, 8);
}

uint32_t inproc_rd32(struct inproc *h, uint32_t off)
{
	uint32_t v;

	memcpy(&v, h->bar0 + off, 4);
	return v;
}

void inproc_pump(struct inproc *h, int n)
{
	for (int i = 0; i < n; i++)
		sio_nvme_emu_poll(h->emu);
}

void inproc_reset(struct inproc *h)
{
	inproc_wr32(h, NVME_REG_CC, 0);
	inproc_pump(h, 2);
}

bool inproc_enable(struct inproc *h, struct inproc_q *a)
{
	*a = (struct inproc_q){ .qid = 0, .sqoff = a->sqoff, .cqoff = a->cqoff, .phase = 1 };
	memset(h->host + a->cqoff, 0, INPROC_QSZ * sizeof(struct sio_nvme_cpl));
	inproc_wr32(h, NVME_REG_AQA, NVME_SET(INPROC_QSZ - 1, AQA_ASQS) |
		    NVME_SET(INPROC_QSZ - 1, AQA_ACQS));
	inproc_wr64(h, NVME_REG_ASQ, INPROC_HOST_BUS + a->sqoff);
	inproc_wr64(h, NVME_REG_ACQ, INPROC_HOST_BUS + a->cqoff);
	inproc_wr32(h, NVME_REG_CC, NVME_SET(1, CC_EN) | NVME_SET(SIO_NVME_SQES, CC_IOSQES) |
		    NVME_SET(SIO_NVME_CQES, CC_IOCQES));
	inproc_pump(h, 2);
	return NVME_CSTS_RDY(inproc_rd32(h, NVME_REG_CSTS));
}

/* The queue's doorbells at CAP.DSTRD 0 (the tests' and the fuzzer's). */
static uint32_t db(const struct inproc_q *q, bool cq)
{
	return 0x1000u + (2u * q->qid + (cq ? 1u : 0u)) * 4u;
}

void inproc_submit(struct inproc *h, struct inproc_q *q, const struct sio_nvme_cmd *c)
{
	memcpy(h->host + q->sqoff + q->tail * sizeof(*c), c, sizeof(*c));
	q->tail = (q->tail + 1) % INPROC_QSZ;
	q->out++;
	inproc_wr32(h, db(q, false), q->tail);
}

bool inproc_reap(struct inproc *h, struct inproc_q *q, struct sio_nvme_cpl *out)
{
	struct sio_nvme_cpl c;

	memcpy(&c, h->host + q->cqoff + q->head * sizeof(c), sizeof(c));
	if ((c.status & 1) != q->phase)
		return false;
	if (++q->head == INPROC_QSZ) {
		q->head = 0;
		q->phase ^= 1;
	}
	if (q->out)
		q->out--;
	if (out)
		*out = c;
	return true;
}

bool inproc_wait(struct inproc *h, struct inproc_q *q, struct sio_nvme_cpl *out)
{
	for (int i = 0; i < 64; i++) {
		if (inproc_reap(h, q, out)) {
			inproc_wr32(h, db(q, true), q->head);
			return true;
		}
		inproc_pump(h, 1);
	}
	return false;
}

int inproc_drain(struct inproc *h, struct inproc_q *q)
{
	int n = 0;

	while (inproc_reap(h, q, NULL))
		n++;
	inproc_wr32(h, db(q, true), q->head);
	return n;
}
