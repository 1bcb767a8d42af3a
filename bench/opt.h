/* SPDX-License-Identifier: MIT */
#ifndef SIO_BENCH_OPT_H
#define SIO_BENCH_OPT_H
/* Option values for the benchmarks: the library's strict parser, and an exit
 * with a message quoting the bad value (what every smartio program does). */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <smartio/parse.h>
#include <smartio/fabric.h>

static inline uint64_t bench_u64(const char *prog, const char *opt, const char *s,
				 uint64_t min, uint64_t max)
{
	uint64_t v;

	if (sio_parse_u64(s, min, max, &v)) {
		fprintf(stderr, "%s: %s: %s\n", prog, opt, sio_errmsg());
		exit(2);
	}
	return v;
}

static inline double bench_double(const char *prog, const char *opt, const char *s,
				  double min, double max)
{
	double v;

	if (sio_parse_double(s, min, max, &v)) {
		fprintf(stderr, "%s: %s: %s\n", prog, opt, sio_errmsg());
		exit(2);
	}
	return v;
}

/* Every argument is an option: a stray word is refused, not ignored. */
static inline void bench_no_args(const char *prog, int optind_, int argc, char **argv)
{
	if (optind_ < argc) {
		fprintf(stderr, "%s: unexpected argument '%s' (see --help)\n", prog, argv[optind_]);
		exit(2);
	}
}
#endif
