/* SPDX-License-Identifier: MIT */
/* The backends this libsmartio was built with, picked at run time. */
#include "internal.h"
#include "sio_config.h"

static const struct sio_device_ops *const device_backends[] = {
	[SIO_BACKEND_SIM] = &sio__sim_device_ops,
#if SIO_HAVE_VFIO
	[SIO_BACKEND_VFIO] = &sio__vfio_device_ops,
#else
	[SIO_BACKEND_VFIO] = NULL,	/* built without libpciaccess (-Dvfio) */
#endif
};

static const char *const device_backend_names[] = {
	[SIO_BACKEND_SIM] = "sim",
	[SIO_BACKEND_VFIO] = "vfio",
};

#define NDEV (int)(sizeof(device_backends) / sizeof(device_backends[0]))

const struct sio_device_ops *sio__device_ops(int backend)
{
	return backend >= 0 && backend < NDEV ? device_backends[backend] : NULL;
}

const char *sio__device_backend_name(int backend)
{
	return backend >= 0 && backend < NDEV ? device_backend_names[backend] : "unknown";
}
