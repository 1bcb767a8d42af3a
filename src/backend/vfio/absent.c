/* SPDX-License-Identifier: MIT */
/*
 * The public vfio calls (<smartio/vfio.h>) of a libsmartio built without
 * the vfio backend (-Dvfio=disabled): each says so. A device of that
 * backend is refused when borrowed (core/backends.c).
 */
#include <smartio/vfio.h>
#include "internal.h"

static int absent(void)
{
	return sio__err(ENOTSUP, "this libsmartio was built without the vfio backend (meson -Dvfio=enabled needs libpciaccess)");
}

int sio_pci_scan(uint32_t class_code, uint32_t mask, struct sio_pci_fn *out, int max)
{
	return absent();
}

int sio_pci_fn_get(const char *bdf, struct sio_pci_fn *out)
{
	return absent();
}

int sio_pci_bdf_parse(const char *in, char out[16])
{
	return absent();
}

int sio_vfio_probe(const char *bdf, enum sio_vfio_mode mode, struct sio_vfio_probe *out)
{
	return absent();
}

int sio_vfio_doorbell(const char *fabric, const char *bdf, enum sio_vfio_mode mode,
		      volatile sig_atomic_t *stop, FILE *log)
{
	return absent();
}

int sio_vfio_lend(const char *fabric, const char *bdf, enum sio_vfio_mode mode,
		  volatile sig_atomic_t *stop, FILE *log)
{
	return absent();
}

int sio_vfio_lend_opts(const char *fabric, const char *bdf, enum sio_vfio_mode mode,
		       const struct sio_lend_opts *o, volatile sig_atomic_t *stop, FILE *log)
{
	return absent();
}
