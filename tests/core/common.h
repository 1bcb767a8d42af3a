/* SPDX-License-Identifier: MIT */
#ifndef SIO_TEST_COMMON_H
#define SIO_TEST_COMMON_H
#include <criterion/criterion.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>
#include <smartio/smartio.h>
#include <smartio/model.h>

/* A fabric private to one test, removed when it ends. */
static inline const char *test_fabric(const char *tag, const struct sio_fabric_config *cfg)
{
	static char name[SIO_NAME_MAX];

	snprintf(name, sizeof(name), "t-%s-%d", tag, getpid());
	sio_fabric_destroy(name);
	setenv("SMARTIO_QUIET", "1", 1);
	cr_assert_eq(sio_fabric_create(name, cfg), 0, "create: %s", sio_errmsg());
	return name;
}

static inline struct sio_fabric *join(const char *name, int node)
{
	struct sio_fabric *f;

	cr_assert_eq(sio_fabric_open(name, node, &f), 0, "open node %d: %s", node, sio_errmsg());
	return f;
}

/* A device model with one BAR, registered by @f's node. */
static inline struct sio_devreg *make_device(struct sio_fabric *f, bool chassis)
{
	struct sio_device_desc d = { .class_code = 0x010802, .vendor = 0x1b36, .device = 0x10,
				     .nbars = 1, .bar_size = { 0x4000 }, .chassis = chassis,
				     .name = "test-dev" };
	struct sio_devreg *reg;

	cr_assert_eq(sio_device_register(f, &d, &reg), 0, "register: %s", sio_errmsg());
	return reg;
}
#endif
