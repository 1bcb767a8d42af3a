/* SPDX-License-Identifier: MIT */
/*
 * The client's arena: one segment on the client's node that holds what the
 * controller writes to it (CQs placed on this node, data buffers, admin
 * data), mapped once for the device. A device reaches a segment on another
 * node through one window of its lender's adapter per segment, so a remote
 * client whose CQ, buffers and admin data were segments of their own held
 * two windows or more; through the arena it holds one, and a 64-window
 * adapter serves 63 remote clients and its own node. What does not fit in
 * the arena gets a segment (and a window) of its own, as before.
 */

#include <stdlib.h>
#include "client-priv.h"


struct range {
	uint64_t off, len;
};

struct sio_nvme_arena {
	pthread_mutex_t lock;
	struct sio_segment *seg;
	uint8_t *va;
	uint64_t size, bus, bus2;	/* bus2: 0 until mapped on the second path */
	struct range taken[SIO_NVME_ARENA_RANGES];	/* sorted by offset */
	uint32_t n;
};

/* The arena's size: $SMARTIO_NVME_ARENA_MB (default 64 MiB), at most a
 * window; 0 turns the arena off. */
static uint64_t arena_bytes(struct sio_nvme_client *cl)
{
	struct sio_topology t;
	uint64_t bytes = (uint64_t)cl->arena_mb << 20;

	if (!sio_fabric_topology(cl->f, &t) && bytes > t.window_size)
		bytes = t.window_size;	/* one window must cover it */
	return bytes;
}

int sio_nvme_arena_open(struct sio_nvme_client *cl)
{
	struct sio_nvme_arena *a;
	uint64_t size = arena_bytes(cl);
	void *va;
	int ret;

	/* It saves adapter windows, which only a remote client of a device
	 * model spends; a real device's DMA memory has other rules (uio: huge
	 * pages), which the per-buffer segments follow. */
	if (!size || cl->dinfo.backend != SIO_BACKEND_SIM ||
	    cl->dinfo.lender == sio_fabric_node_id(cl->f))
		return 0;
	a = calloc(1, sizeof(*a));
	if (!a)
		return sio_err_set(ENOMEM, "out of memory");
	pthread_mutex_init(&a->lock, NULL);
	/* its pages reserved as ranges are handed out (arena_alloc()) */
	ret = sio_segment_create(cl->f, 0, size, SIO_SEG_F_NOHUGE | SIO_SEG_F_LAZY, &a->seg);
	if (ret == -ENOSPC) {
		/* a fabric whose memory is a window of fixed size (shmwin) may
		 * have no room for it: buffers then take segments of their own */
		pthread_mutex_destroy(&a->lock);
		free(a);
		return 0;
	}
	if (!ret) {
		sio_segment_set_name(a->seg, "nvme-client-arena");
		ret = sio_segment_map(a->seg, &va);
	}
	if (!ret)
		ret = sio_device_map(cl->dev, a->seg, &a->bus);
	if (ret) {
		ret = sio_err_wrap(-ret, "cannot set up the client's %llu MiB arena "
				   "($SMARTIO_NVME_ARENA_MB)", (unsigned long long)(size >> 20));
		if (a->seg)
			sio_segment_close(a->seg);
		pthread_mutex_destroy(&a->lock);
		free(a);
		return ret;
	}
	a->va = va;
	a->size = size;
	cl->arena = a;
	return 0;
}

void sio_nvme_arena_close(struct sio_nvme_client *cl)
{
	struct sio_nvme_arena *a = cl->arena;

	if (!a)
		return;
	sio_device_unmap(cl->dev, a->seg);
	if (a->bus2 && cl->dev2)
		sio_device_unmap(cl->dev2, a->seg);
	sio_segment_close(a->seg);
	pthread_mutex_destroy(&a->lock);
	free(a);
	cl->arena = NULL;
}

int sio_nvme_arena_alloc(struct sio_nvme_client *cl, uint64_t len, struct sio_nvme_slice *out)
{
	struct sio_nvme_arena *a = cl->arena;
	uint64_t off = 0;
	uint32_t i;

	if (!a)
		return -ENOSPC;
	len = sio__page_up(len);
	pthread_mutex_lock(&a->lock);
	/* First fit in the gaps between the taken ranges. */
	for (i = 0; i < a->n && a->taken[i].off < off + len; i++)
		off = a->taken[i].off + a->taken[i].len;
	if (a->n == SIO_NVME_ARENA_RANGES || !len || off + len > a->size ||
	    sio_segment_reserve(a->seg, off, len)) {
		pthread_mutex_unlock(&a->lock);
		return -ENOSPC;
	}
	memmove(&a->taken[i + 1], &a->taken[i], (a->n - i) * sizeof(a->taken[0]));
	a->taken[i] = (struct range){ off, len };
	a->n++;
	pthread_mutex_unlock(&a->lock);
	out->seg = a->seg;
	out->off = off;
	out->va = a->va + off;
	out->bus = a->bus + off;
	out->bus2 = a->bus2 ? a->bus2 + off : 0;
	return 0;
}

void sio_nvme_arena_free(struct sio_nvme_client *cl, uint64_t off)
{
	struct sio_nvme_arena *a = cl->arena;
	uint32_t i;

	if (!a)
		return;
	pthread_mutex_lock(&a->lock);
	for (i = 0; i < a->n; i++)
		if (a->taken[i].off == off) {
			memmove(&a->taken[i], &a->taken[i + 1],
				(a->n - i - 1) * sizeof(a->taken[0]));
			a->n--;
			break;
		}
	pthread_mutex_unlock(&a->lock);
}

bool sio_nvme_arena_owns(const struct sio_nvme_client *cl, const struct sio_segment *seg)
{
	return cl->arena && seg == cl->arena->seg;
}

int sio_nvme_arena_bus(struct sio_nvme_client *cl, uint64_t *bus)
{
	*bus = cl->arena->bus;
	return 0;
}

int sio_nvme_arena_bus2(struct sio_nvme_client *cl, uint64_t *bus2)
{
	struct sio_nvme_arena *a = cl->arena;
	int ret = 0;

	pthread_mutex_lock(&a->lock);
	if (!a->bus2)
		ret = sio_device_map(cl->dev2, a->seg, &a->bus2);
	*bus2 = a->bus2;
	pthread_mutex_unlock(&a->lock);
	if (ret)
		return sio_err_wrap(-ret, "cannot map the client's arena for the second path");
	return 0;
}
