/* SPDX-License-Identifier: MIT */
/*
 * What the shmwin tests share: a fabric of their own, made by the process
 * that plays "kernel-0" (children join as other kernels), and a short nap.
 */
#ifndef SIO_TEST_SHMWIN_FIXTURE_H
#define SIO_TEST_SHMWIN_FIXTURE_H

#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>
#include <smartio/smartio.h>

static char name[SIO_NAME_MAX];

/* A fabric of @nodes nodes named @prefix-PID, created as "kernel-0". */
static inline void shmwin_fabric_setup(int nodes, const char *prefix)
{
	struct sio_fabric_config c = { .nodes = nodes, .topology = SIO_TOPO_SWITCH };

	setenv("SMARTIO_QUIET", "1", 1);
	setenv("SMARTIO_SHMWIN_KERNEL", "kernel-0", 1);
	snprintf(name, sizeof(name), "%s-%d", prefix, getpid());
	cr_assert_eq(sio_fabric_create(name, &c), 0, "create: %s", sio_errmsg());
}

static inline void teardown(void)
{
	sio_fabric_destroy(name);
}

static inline void nap_ms(int ms)
{
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };

	nanosleep(&ts, NULL);
}

#endif
