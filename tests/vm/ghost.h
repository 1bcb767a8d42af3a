/* SPDX-License-Identifier: MIT */
#ifndef SIO_TEST_GHOST_H
#define SIO_TEST_GHOST_H

/*
 * For the vfio and uio unit tests: a device of a lender's backend registered
 * in a new fabric with a lender socket nobody serves, and borrowed.
 */
#include <criterion/criterion.h>
#include <stdio.h>
#include <unistd.h>

#include "internal.h"

struct ghost {
	char name[64];
	struct sio_fabric *f;
	struct sio_devreg *reg;
	struct sio_device *dev;
};

static inline void ghost_up(struct ghost *g, enum sio_device_backend backend)
{
	struct sio_fabric_config cfg = { .nodes = 1 };
	struct sio_device_desc desc = { .class_code = 0x010802, .vendor = 0x1b36, .device = 0x10,
					.nbars = 1, .bar_size = { 16384 }, .name = "ghost" };
	char svc[108];

	snprintf(g->name, sizeof(g->name), "%s-unit-%d", sio__device_backend_name(backend),
		 getpid());
	snprintf(svc, sizeof(svc), "/tmp/sio-no-lender-%s.sock", g->name);
	cr_assert_eq(sio_fabric_create(g->name, &cfg), 0, "%s", sio_errmsg());
	cr_assert_eq(sio_fabric_open(g->name, 0, &g->f), 0, "%s", sio_errmsg());
	cr_assert_eq(sio__device_register_ext(g->f, &desc, backend, "0000:00:04.0", svc, &g->reg),
		     0, "%s", sio_errmsg());
	cr_assert_eq(sio_device_borrow(g->f, sio_devreg_id(g->reg), SIO_BORROW_EXCLUSIVE, &g->dev),
		     0, "%s", sio_errmsg());
}

static inline void ghost_down(struct ghost *g)
{
	sio_device_close(g->dev);
	sio_devreg_close(g->reg);
	sio_fabric_close(g->f);
	cr_assert_eq(sio_fabric_destroy(g->name), 0, "%s", sio_errmsg());
}

#endif
