/* SPDX-License-Identifier: MIT */
/*
 * sio_uio_lend() of a libsmartio built without the uio backend (-Duio, or
 * no vfio backend or libhugetlbfs): it says so. A device of that backend is
 * refused when borrowed (core/backends.c).
 */
#include <smartio/vfio.h>
#include "internal.h"

int sio_uio_lend_opts(const char *fabric, const char *bdf, const struct sio_lend_opts *o,
		      volatile sig_atomic_t *stop, FILE *log)
{
	return sio_uio_lend(fabric, bdf, stop, log);
}

int sio_uio_lend(const char *fabric, const char *bdf, volatile sig_atomic_t *stop, FILE *log)
{
	return sio__err(ENOTSUP, "this libsmartio was built without the uio backend (meson -Duio=enabled needs the vfio backend and libhugetlbfs-dev)");
}
