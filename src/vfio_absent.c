/* SPDX-License-Identifier: MIT */
/* Built when the vfio backend is not compiled in. */
#include "internal.h"

static int no_bar(struct sio_device *d, int bar, void **v, uint64_t *s)
{
	return sio__err(ENOTSUP, "this libsmartio was built without the vfio backend");
}

static int no_map(struct sio_device *d, struct sio_segment *s, uint64_t *iova)
{
	return sio__err(ENOTSUP, "this libsmartio was built without the vfio backend");
}

static int no_unmap(struct sio_device *d, struct sio_segment *s, uint64_t iova)
{
	return sio__err(ENOTSUP, "this libsmartio was built without the vfio backend");
}

static void no_release(struct sio_device *d)
{
}

const struct sio_backend_ops sio__vfio_ops = { no_bar, no_map, no_unmap, no_release };
