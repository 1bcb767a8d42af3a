/* SPDX-License-Identifier: MIT */
/* NVMe client data buffers: segments mapped for the device, on each path. */

#include <stdlib.h>
#include "client-priv.h"

int sio_nvme_buf_alloc(struct sio_nvme_client *cl, uint64_t size, struct sio_nvme_buf **out)
{
	struct sio_errsave es;
	struct sio_nvme_slice sl;
	struct sio_nvme_buf *b;
	int ret;

	if (!size)
		return sio_err_set(EINVAL, "buffer size 0");
	b = calloc(1, sizeof(*b));
	if (!b)
		return sio_err_set(ENOMEM, "out of memory");
	if (!sio_nvme_arena_alloc(cl, size, &sl)) {
		*b = (struct sio_nvme_buf){ .seg = sl.seg, .va = sl.va, .bus = sl.bus,
					    .size = size, .off = sl.off };
		ret = cl->dev2 ? sio_nvme_arena_bus2(cl, &b->bus2) : 0;
		if (ret) {
			sio_nvme_arena_free(cl, sl.off);
			free(b);
			return ret;
		}
		if (b->bus2)
			b->bus2 += sl.off;
		*out = b;
		return 0;
	}
	ret = sio_segment_create(cl->f, 0, size, 0, &b->seg);
	if (ret) {
		free(b);
		return sio_err_wrap(-ret, "cannot create a %llu-byte data buffer",
				    (unsigned long long)size);
	}
	sio_segment_set_name(b->seg, "nvme-data");
	ret = sio_segment_map(b->seg, &b->va);
	if (!ret)
		ret = sio_device_map(cl->dev, b->seg, &b->bus);
	if (!ret && cl->dev2)
		ret = sio_device_map(cl->dev2, b->seg, &b->bus2);
	if (ret) {
		ret = sio_err_wrap(-ret, "cannot map a data buffer for the device");
		sio_err_save(&es);
		if (cl->dev2)
			sio_device_unmap(cl->dev, b->seg);
		sio_segment_close(b->seg);
		sio_err_restore(&es);
		free(b);
		return ret;
	}
	b->size = size;
	*out = b;
	return 0;
}

void sio_nvme_buf_close(struct sio_nvme_client *cl, struct sio_nvme_buf *b)
{
	if (!b)
		return;
	if (sio_nvme_arena_owns(cl, b->seg)) {
		sio_nvme_arena_free(cl, b->off);
		free(b);
		return;
	}
	sio_device_unmap(cl->dev, b->seg);
	if (b->bus2 && cl->dev2)
		sio_device_unmap(cl->dev2, b->seg);
	sio_segment_close(b->seg);
	free(b);
}

/* A buffer allocated before the client had its second path gets its
 * address on that path at first use. */
int sio_nvme_buf_second_path(struct sio_nvme_ioq *q, struct sio_nvme_buf *buf)
{
	int ret;

	if (!buf->seg)
		return sio_err_set(EINVAL, "a multipath queue needs buffers from "
				   "sio_nvme_buf_alloc()");
	if (sio_nvme_arena_owns(q->cl, buf->seg)) {
		ret = sio_nvme_arena_bus2(q->cl, &buf->bus2);
		if (!ret)
			buf->bus2 += buf->off;
		return ret;
	}
	ret = sio_device_map(q->cl->dev2, buf->seg, &buf->bus2);
	if (ret)
		return sio_err_wrap(-ret, "cannot map a data buffer for the second path");
	return 0;
}
