/* SPDX-License-Identifier: MIT */
/*
 * Segments of the window fabric: carved from the pool of their node's
 * memory (shmwin: the one pool of the window; ntb: the node's own), first
 * fit, page aligned, and recorded per registry slot in the header (a record
 * counts only while its slot is in use with the same generation, and its
 * pool with the same epoch, so a dead node's leftovers free themselves when
 * the core reclaims its slots). Every node maps the same bytes, so
 * load/store across kernels is real, and a device that reaches a pool
 * (relay.c) reaches every segment in it.
 */
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include "winfab.h"

int sio__wf_mmap(int fd, uint64_t off, uint64_t len, bool rdonly, const char *what, void **va)
{
	uint64_t a = off & ~(WF_PAGE - 1), d = off - a;
	void *p;

	p = mmap(NULL, len + d, rdonly ? PROT_READ : PROT_READ | PROT_WRITE, MAP_SHARED, fd, (off_t)a);
	if (p == MAP_FAILED)
		return sio__err(errno, "cannot map %llu bytes of %s at %llu: %s",
				(unsigned long long)len, what, (unsigned long long)off, strerror(errno));
	*va = (char *)p + d;
	return 0;
}

void sio__wf_munmap(void *vaddr, uint64_t len)
{
	uintptr_t v = (uintptr_t)vaddr, a = v & ~(uintptr_t)(WF_PAGE - 1);

	munmap((void *)a, len + (v - a));
}

/* Pool @p as the header has it, or NULL. */
static const struct wf_pool *pool_at(struct wf_fabric *s, int p)
{
	return p >= 0 && p < WF_MAX_POOLS && s->hdr->pools[p].size ? &s->hdr->pools[p] : NULL;
}

/* Is the record of slot @i a live segment's? */
static bool live(struct sio_fabric *f, int i)
{
	struct wf_fabric *s = wf_of(f);
	const struct wf_seg *w = &s->hdr->segs[i];
	const struct wf_pool *p = pool_at(s, w->pool);

	return w->len && f->reg->segs[i].used && f->reg->segs[i].gen == w->gen &&
	       f->reg->segs[i].kind != SIO_SEG_GPU && p && p->epoch == w->epoch;
}

int sio__wf_seg_where(struct sio_fabric *f, int slot, int *pool, uint64_t *off, uint64_t *len)
{
	struct wf_fabric *s = wf_of(f);
	const struct wf_seg *w;
	const struct wf_pool *p;

	if (slot < 0 || slot >= SIO_MAX_SEGS)
		return sio__err(EINVAL, "no segment slot %d", slot);
	w = &s->hdr->segs[slot];
	if (!live(f, slot))
		return sio__err(ENOENT, "%s: segment slot %d has no memory (its node's memory is gone, or it never had any)",
				s->src->name, slot);
	p = pool_at(s, w->pool);
	if (w->off > p->size || w->len > p->size - w->off || (w->off & (WF_PAGE - 1)))
		return sio__reg_corrupt(f, "the window places segment slot %d at %llu (+%llu bytes), outside its pool's %llu-byte data area",
				   slot, (unsigned long long)w->off, (unsigned long long)w->len,
				   (unsigned long long)p->size);
	*pool = w->pool;
	*off = p->off + w->off;
	*len = w->len;
	return 0;
}

int sio__wf_slot_map_via(struct sio_fabric *f, int slot, int a, uint64_t off, uint64_t len,
			 bool rdonly, void **va)
{
	const struct wf_source *src = wf_of(f)->src;
	uint64_t at, size;
	int pool, ret = sio__wf_seg_where(f, slot, &pool, &at, &size);

	if (ret)
		return ret;
	if (!len || off > size || len > size - off)
		return sio__reg_corrupt(f, "segment slot %d maps %llu bytes at %llu; it has %llu in the window",
				   slot, (unsigned long long)len, (unsigned long long)off,
				   (unsigned long long)size);
	if (a > 0 && src->map_via &&
	    (ret = src->map_via(wf_of(f), a, pool, at + off, len, rdonly, va)) != -EHOSTUNREACH)
		return ret;
	return src->map(wf_of(f), pool, at + off, len, rdonly, va);
}

int sio__wf_slot_map(struct sio_fabric *f, int slot, uint64_t off, uint64_t len, bool rdonly, void **va)
{
	return sio__wf_slot_map_via(f, slot, 0, off, len, rdonly, va);
}

struct ext { uint64_t off, len; };

static int by_off(const void *a, const void *b)
{
	const struct ext *x = a, *y = b;

	return x->off < y->off ? -1 : x->off > y->off;
}

/* First fit of @len bytes in pool @pool, around its live segments but @slot. */
static int carve(struct sio_fabric *f, int pool, int slot, uint64_t len, uint64_t *at_out)
{
	struct wf_fabric *s = wf_of(f);
	uint64_t at = 0, used = 0, size = s->hdr->pools[pool].size;
	struct ext *x;
	int n = 0;

	if (!(x = malloc(SIO_MAX_SEGS * sizeof(*x))))
		return sio__err(ENOMEM, "out of memory");
	for (int i = 0; i < SIO_MAX_SEGS; i++)
		if (i != slot && live(f, i) && s->hdr->segs[i].pool == pool &&
		    s->hdr->segs[i].off < size) {
			x[n++] = (struct ext){ s->hdr->segs[i].off, s->hdr->segs[i].len };
			used += s->hdr->segs[i].len;
		}
	qsort(x, (size_t)n, sizeof(*x), by_off);
	for (int i = 0; i < n; i++) {
		if (x[i].off >= at && x[i].off - at >= len)
			break;	/* the gap before it fits */
		if (x[i].off + x[i].len > at)
			at = x[i].off + x[i].len;
	}
	free(x);
	if (at >= size || size - at < len)
		return sio__err(ENOSPC, "%s: %s has no free %llu KiB for a segment (%llu of its %llu KiB in use by %d segments)",
				s->src->name, s->src->what(s, pool), (unsigned long long)(len >> 10),
				(unsigned long long)(used >> 10), (unsigned long long)(size >> 10), n);
	*at_out = at;
	return 0;
}

int sio__wf_seg_create(struct sio_fabric *f, int slot, unsigned int flags)
{
	struct wf_fabric *s = wf_of(f);
	struct reg_seg *sg = reg_seg_at(f->reg, slot);
	uint64_t len, at = 0;
	int pool, ret;
	void *p;

	if (!sg)
		return sio__err(EINVAL, "no segment slot %d", slot);
	if (flags & SIO_SEG_F_HUGE)
		return sio__err(EOPNOTSUPP, "%s: segments are carved from shared windows; huge pages cannot be asked for",
				s->src->name);
	pool = s->src->pool_of(s, sg->node);
	if (!pool_at(s, pool))
		return sio__err(ENODEV, "%s: node %d has no memory in fabric '%s' (yet): %s",
				s->src->name, sg->node, f->name,
				pool < 0 ? "it is no node of this fabric's windows" :
				"its kernel exports none; is its service running?");
	sg->huge = 0;
	len = (sg->size + WF_PAGE - 1) & ~(WF_PAGE - 1);
	if ((ret = carve(f, pool, slot, len, &at)))
		return ret;
	/* new memory reads as zeroes, as a new file's does */
	if ((ret = s->src->map(s, pool, s->hdr->pools[pool].off + at, len, false, &p)))
		return ret;
	memset(p, 0, len);
	s->src->unmap(s, p, len);
	s->hdr->segs[slot] = (struct wf_seg){ .off = at, .len = len, .gen = sg->gen, .pool = pool,
					      .epoch = s->hdr->pools[pool].epoch };
	sg->size = len;
	return 0;
}

void sio__wf_seg_remove(struct sio_fabric *f, int slot)
{
	if (slot >= 0 && slot < SIO_MAX_SEGS)
		memset(&wf_of(f)->hdr->segs[slot], 0, sizeof(struct wf_seg));
}

int sio__wf_seg_map(struct sio_fabric *f, int slot, uint64_t off, uint64_t len, bool rdonly,
		    void **vaddr)
{
	return sio__wf_slot_map(f, slot, off, len, rdonly, vaddr);
}

void sio__wf_seg_unmap(struct sio_fabric *f, void *vaddr, uint64_t len)
{
	wf_of(f)->src->unmap(wf_of(f), vaddr, len);
}
