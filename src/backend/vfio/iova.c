/* SPDX-License-Identifier: MIT */
/*
 * IOVA allocator: first fit inside the ranges the kernel says the IOMMU can
 * translate (VFIO_IOMMU_TYPE1_INFO_CAP_IOVA_RANGE, IOMMU_IOAS_IOVA_RANGES),
 * which exclude for instance the x86 MSI window at 0xfee00000. Mappings are
 * few (queues and data buffers), so a sorted array is enough.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "vfio.h"

/* Keep IOVA 0 and the first megabyte unused: a zero bus address is a bug. */
#define IOVA_FLOOR	(1ull << 20)

void sio_iova_init(struct sio_iova_alloc *a, const struct sio_iova_range *r, int n)
{
	memset(a, 0, sizeof(*a));
	if (n > SIO_VFIO_MAX_RANGES)
		n = SIO_VFIO_MAX_RANGES;
	for (int i = 0; i < n; i++) {
		struct sio_iova_range x = r[i];

		if (x.last < IOVA_FLOOR)
			continue;
		if (x.start < IOVA_FLOOR)
			x.start = IOVA_FLOOR;
		a->ranges[a->nranges++] = x;
	}
}

void sio_iova_fini(struct sio_iova_alloc *a)
{
	free(a->used);
	a->used = NULL;
	a->nused = a->cap = 0;
}

static uint64_t align_up(uint64_t v, uint64_t a)
{
	return (v + a - 1) & ~(a - 1);
}

/* Try [lo, hi] (inclusive) for @len bytes at @align; 0 on success. */
static int fit(uint64_t lo, uint64_t hi, uint64_t len, uint64_t align, uint64_t *out)
{
	uint64_t s = align_up(lo, align);

	if (s < lo || s > hi || hi - s < len - 1)
		return -1;
	*out = s;
	return 0;
}

static int take(struct sio_iova_alloc *a, uint64_t s, uint64_t len)
{
	int at = 0;

	if (a->nused == a->cap) {
		int nc = a->cap ? 2 * a->cap : 16;
		void *p = realloc(a->used, nc * sizeof(*a->used));

		if (!p)
			return sio__err(ENOMEM, "iova: out of memory");
		a->used = p;
		a->cap = nc;
	}
	while (at < a->nused && a->used[at].start < s)
		at++;
	memmove(&a->used[at + 1], &a->used[at], (a->nused - at) * sizeof(*a->used));
	a->used[at].start = s;
	a->used[at].last = s + len - 1;
	a->nused++;
	return 0;
}

int sio_iova_get(struct sio_iova_alloc *a, uint64_t len, uint64_t align, uint64_t *iova)
{
	return sio_iova_get_below(a, len, align, UINT64_MAX, iova);
}

int sio_iova_get_below(struct sio_iova_alloc *a, uint64_t len, uint64_t align, uint64_t limit,
		       uint64_t *iova)
{
	uint64_t s;

	if (!len || !align || (align & (align - 1)))
		return sio__err(EINVAL, "iova: bad length %llu or alignment %llu",
				(unsigned long long)len, (unsigned long long)align);
	for (int r = 0; r < a->nranges; r++) {
		uint64_t cur = a->ranges[r].start, hi = a->ranges[r].last;

		if (hi > limit)		/* the device's DMA mask */
			hi = limit;
		if (cur > hi)
			continue;

		/* Walk the gaps between used extents (sorted) inside this range. */
		for (int k = 0; k < a->nused && cur <= hi; k++) {
			const struct sio_iova_range *e = &a->used[k];

			if (e->last < cur)
				continue;
			if (e->start > hi)
				break;
			if (e->start > cur && fit(cur, e->start - 1, len, align, &s) == 0)
				goto found;
			cur = e->last + 1;
			if (cur == 0)	/* wrapped past the top */
				break;
		}
		if (cur && cur <= hi && fit(cur, hi, len, align, &s) == 0)
			goto found;
	}
	if (limit != UINT64_MAX)
		return sio__err(ERANGE, "iova: no room for %llu bytes at or below the device's DMA mask "
				"0x%llx (%d bits) in the %d IOVA range(s) the IOMMU allows",
				(unsigned long long)len, (unsigned long long)limit,
				limit == UINT64_MAX ? 64 : __builtin_ctzll(~limit), a->nranges);
	return sio__err(ENOSPC, "iova: no room for %llu bytes in the %d IOVA range(s) the IOMMU allows",
			(unsigned long long)len, a->nranges);
found:
	if (take(a, s, len))
		return -ENOMEM;
	*iova = s;
	return 0;
}

int sio_iova_put(struct sio_iova_alloc *a, uint64_t iova)
{
	for (int k = 0; k < a->nused; k++) {
		if (a->used[k].start == iova) {
			memmove(&a->used[k], &a->used[k + 1],
				(a->nused - k - 1) * sizeof(*a->used));
			a->nused--;
			return 0;
		}
	}
	return sio__err(ENOENT, "iova: 0x%llx was not allocated", (unsigned long long)iova);
}
