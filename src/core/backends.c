/* SPDX-License-Identifier: MIT */
/* The backends this libsmartio was built with, picked at run time. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "internal.h"
#include "sio_config.h"

static const struct sio_fabric_ops *const fabric_backends[] = {
	&sio__shm_fabric_ops,
	&sio__shmwin_fabric_ops,
	&sio__ntb_fabric_ops,
};

int sio__fabric_backend(const struct sio_fabric_ops **out)
{
	const char *want = getenv("SMARTIO_FABRIC_BACKEND");
	char have[128] = "";

	if (!want || !*want)
		want = "shm";
	for (size_t i = 0; i < sizeof(fabric_backends) / sizeof(fabric_backends[0]); i++) {
		if (!strcmp(want, fabric_backends[i]->name)) {
			*out = fabric_backends[i];
			return 0;
		}
		snprintf(have + strlen(have), sizeof(have) - strlen(have), "%s%s", i ? ", " : "",
			 fabric_backends[i]->name);
	}
	return sio__err(EINVAL, "SMARTIO_FABRIC_BACKEND='%s' names no fabric backend of this libsmartio (it has: %s)",
			want, have);
}

static const struct sio_device_ops *const device_backends[] = {
	[SIO_BACKEND_SIM] = &sio__sim_device_ops,
#if SIO_HAVE_VFIO
	[SIO_BACKEND_VFIO] = &sio__vfio_device_ops,
#else
	[SIO_BACKEND_VFIO] = NULL,	/* built without libpciaccess (-Dvfio) */
#endif
#if SIO_HAVE_UIO
	[SIO_BACKEND_UIO] = &sio__uio_device_ops,
#else
	[SIO_BACKEND_UIO] = NULL,	/* built without it (-Duio) */
#endif
};

static const char *const device_backend_names[] = {
	[SIO_BACKEND_SIM] = "sim",
	[SIO_BACKEND_VFIO] = "vfio",
	[SIO_BACKEND_UIO] = "uio",
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
