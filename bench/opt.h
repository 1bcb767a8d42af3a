/* SPDX-License-Identifier: MIT */
#ifndef SIO_BENCH_OPT_H
#define SIO_BENCH_OPT_H
/* Option values for the benchmarks: the library's strict parser, and an exit
 * with a message quoting the bad value (what every smartio program does). */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include "parse.h"
#include <smartio/fabric.h>
#include <smartio/device.h>
#include "prog.h"

/* The benchmarks keep every program's contract (prog.h); these name the
 * program for their messages. */
static inline uint64_t bench_u64(const char *prog, const char *opt, const char *s,
				 uint64_t min, uint64_t max)
{
	(void)prog;
	return prog_u64(opt, s, min, max);
}

static inline double bench_double(const char *prog, const char *opt, const char *s,
				  double min, double max)
{
	(void)prog;
	return prog_double(opt, s, min, max);
}

/*
 * The set-up a benchmark measures: by default it makes its own (a private
 * simulated fabric, controller and manager); with --fabric it joins an
 * existing fabric and measures a device lent there (a vfio-lent controller,
 * a multi-guest cluster, a simulated one) as it is.
 */
struct bench_target {
	const char *fabric;	/* NULL: make a private set-up */
	uint32_t device;	/* SIO_DEVICE_ANY: the first NVMe controller */
	int node;		/* node the benchmark's clients join (-1: the default) */
	bool start_manager;	/* no manager serves the device: start one (resets it) */
	bool reset;		/* emu-bench: take the device exclusively and reset it */
};

enum { BENCH_OPT_FABRIC = 0x1000, BENCH_OPT_DEVICE, BENCH_OPT_NODE, BENCH_OPT_START_MANAGER };

#define BENCH_TARGET_LONGOPTS							\
	PROG_LONGOPTS,								\
	{ "fabric", required_argument, NULL, BENCH_OPT_FABRIC },		\
	{ "device", required_argument, NULL, BENCH_OPT_DEVICE },		\
	{ "node", required_argument, NULL, BENCH_OPT_NODE },			\
	{ "start-manager", no_argument, NULL, BENCH_OPT_START_MANAGER }

#define BENCH_TARGET_HELP							\
	"  --fabric NAME    run on this existing fabric instead of a private one\n"	\
	"  --device ID      the NVMe controller to measure (default: the first)\n"	\
	"  --node N         node the benchmark's clients join (default 0)\n"	\
	"  --start-manager  start a manager when none serves the device (it resets\n" \
	"                   the controller; never done unless asked)\n"	\
	"  --help           this text\n  --version        the smartio version\n"

static inline void bench_target_init(struct bench_target *t)
{
	*t = (struct bench_target){ .device = SIO_DEVICE_ANY, .node = -1 };
}

/* One of the target options: 1 when @c was one (the value checked), else 0. */
static inline int bench_target_opt(const char *prog, struct bench_target *t, int c,
				   const char *arg)
{
	switch (c) {
	case BENCH_OPT_FABRIC: t->fabric = arg; return 1;
	case BENCH_OPT_DEVICE:
		t->device = (uint32_t)bench_u64(prog, "--device", arg, 0, UINT32_MAX - 1);
		return 1;
	case BENCH_OPT_NODE:
		t->node = (int)bench_u64(prog, "--node", arg, 0, SIO_MAX_NODES - 1);
		return 1;
	case BENCH_OPT_START_MANAGER: t->start_manager = true; return 1;
	}
	return 0;
}

/* --device, --node and --start-manager only mean something with --fabric. */
static inline void bench_target_check(const char *prog, const struct bench_target *t)
{
	(void)prog;
	if (!t->fabric && (t->device != SIO_DEVICE_ANY || t->node >= 0 || t->start_manager))
		prog_usage_error("--device, --node and --start-manager need --fabric NAME "
				 "(without it the benchmark makes its own set-up)");
}

/* Every argument is an option: a stray word is refused, not ignored. */
static inline void bench_no_args(const char *prog, int optind_, int argc, char **argv)
{
	(void)prog;
	if (optind_ < argc)
		prog_usage_error("unexpected argument '%s'", argv[optind_]);
}
#endif
