/* SPDX-License-Identifier: MIT */
/*
 * Segments of the shmwin backend: carved from the window's data area, first
 * fit, page aligned, and recorded per registry slot in the window header (a
 * record counts only while its slot is in use with the same generation, so
 * a dead node's leftovers free themselves when the core reclaims its slots).
 * Every node maps the same bytes, so load/store across kernels is real, and
 * a device that reaches the window (relay.c) reaches every segment.
 */
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include "shmwin.h"

int shmwin_map(struct shmwin_fabric *s, uint64_t off, uint64_t len, bool rdonly, void **vaddr)
{
	uint64_t a = off & ~(SHMWIN_PAGE - 1), d = off - a;
	void *p;

	if (!len || off > s->win.size || len > s->win.size - off)
		return sio__err(EINVAL, "shmwin: %llu bytes at %llu are outside the window (%llu bytes)",
				(unsigned long long)len, (unsigned long long)off,
				(unsigned long long)s->win.size);
	p = mmap(NULL, len + d, rdonly ? PROT_READ : PROT_READ | PROT_WRITE, MAP_SHARED, s->win.fd,
		 (off_t)(s->win.base + a));
	if (p == MAP_FAILED)
		return sio__err(errno, "shmwin: cannot map %llu bytes of the window (%s) at %llu: %s",
				(unsigned long long)len, s->win.what, (unsigned long long)off, strerror(errno));
	*vaddr = (char *)p + d;
	return 0;
}

void shmwin_unmap(void *vaddr, uint64_t len)
{
	uintptr_t v = (uintptr_t)vaddr, a = v & ~(uintptr_t)(SHMWIN_PAGE - 1);

	munmap((void *)a, len + (v - a));
}

/* Is the window record of slot @i a live segment's? */
static bool live(struct sio_fabric *f, int i)
{
	const struct shmwin_seg *w = &shmwin_of(f)->hdr->segs[i];

	return w->len && f->reg->segs[i].used && f->reg->segs[i].gen == w->gen &&
	       f->reg->segs[i].kind != SIO_SEG_GPU;
}

int shmwin_seg_where(struct sio_fabric *f, int slot, uint64_t *off, uint64_t *len)
{
	struct shmwin_fabric *s = shmwin_of(f);
	const struct shmwin_seg *w;

	if (slot < 0 || slot >= SIO_MAX_SEGS)
		return sio__err(EINVAL, "no segment slot %d", slot);
	w = &s->hdr->segs[slot];
	if (!live(f, slot))
		return sio__err(ENOENT, "shmwin: segment slot %d has no memory in the window", slot);
	if (w->off > s->hdr->data_size || w->len > s->hdr->data_size - w->off ||
	    (w->off & (SHMWIN_PAGE - 1)))
		return reg_corrupt(f, "the window places segment slot %d at %llu (+%llu bytes), outside its %llu-byte data area",
				   slot, (unsigned long long)w->off, (unsigned long long)w->len,
				   (unsigned long long)s->hdr->data_size);
	*off = s->hdr->data_off + w->off;
	*len = w->len;
	return 0;
}

struct ext { uint64_t off, len; };

static int by_off(const void *a, const void *b)
{
	const struct ext *x = a, *y = b;

	return x->off < y->off ? -1 : x->off > y->off;
}

int sio__shmwin_seg_create(struct sio_fabric *f, int slot, unsigned int flags)
{
	struct shmwin_fabric *s = shmwin_of(f);
	struct reg_seg *sg = reg_seg_at(f->reg, slot);
	uint64_t len, at = 0, used = 0, size = s->hdr->data_size;
	struct ext *x;
	int n = 0, ret;
	void *p;

	if (!sg)
		return sio__err(EINVAL, "no segment slot %d", slot);
	if (flags & SIO_SEG_F_HUGE)
		return sio__err(EOPNOTSUPP, "shmwin: segments are carved from the shared window; huge pages cannot be asked for");
	sg->huge = 0;
	len = (sg->size + SHMWIN_PAGE - 1) & ~(SHMWIN_PAGE - 1);
	if (!(x = malloc(SIO_MAX_SEGS * sizeof(*x))))
		return sio__err(ENOMEM, "out of memory");
	for (int i = 0; i < SIO_MAX_SEGS; i++)
		if (i != slot && live(f, i) && s->hdr->segs[i].off < size) {
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
		return sio__err(ENOSPC, "shmwin: the window has no free %llu KiB for a segment (%llu of its %llu KiB in use by %d segments)",
				(unsigned long long)(len >> 10), (unsigned long long)(used >> 10),
				(unsigned long long)(size >> 10), n);
	/* new memory reads as zeroes, as a new file's does */
	if ((ret = shmwin_map(s, s->hdr->data_off + at, len, false, &p)))
		return ret;
	memset(p, 0, len);
	shmwin_unmap(p, len);
	s->hdr->segs[slot] = (struct shmwin_seg){ .off = at, .len = len, .gen = sg->gen };
	sg->size = len;
	return 0;
}

void sio__shmwin_seg_remove(struct sio_fabric *f, int slot)
{
	if (slot >= 0 && slot < SIO_MAX_SEGS)
		memset(&shmwin_of(f)->hdr->segs[slot], 0, sizeof(struct shmwin_seg));
}

int sio__shmwin_seg_map(struct sio_fabric *f, int slot, uint64_t off, uint64_t len, bool rdonly,
			void **vaddr)
{
	uint64_t at, size;
	int ret = shmwin_seg_where(f, slot, &at, &size);

	if (ret)
		return ret;
	if (!len || off > size || len > size - off)
		return reg_corrupt(f, "segment slot %d maps %llu bytes at %llu; it has %llu in the window",
				   slot, (unsigned long long)len, (unsigned long long)off,
				   (unsigned long long)size);
	return shmwin_map(shmwin_of(f), at + off, len, rdonly, vaddr);
}

void sio__shmwin_seg_unmap(struct sio_fabric *f, void *vaddr, uint64_t len)
{
	(void)f;
	shmwin_unmap(vaddr, len);
}
