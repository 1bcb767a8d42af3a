/* SPDX-License-Identifier: MIT */
/* The command-line contract every smartio program keeps (prog.h). */
#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include "parse.h"
#include <smartio/fabric.h>
#include "prog.h"

const char *prog_name = "smartio";
static void (*prog_usage)(FILE *out);
volatile sig_atomic_t prog_stop;

void prog_init(const char *name, void (*usage)(FILE *out))
{
	prog_name = name;
	prog_usage = usage;
}

int prog_getopt(int argc, char **argv, const char *shortopts, const struct option *longopts)
{
	int c = getopt_long(argc, argv, shortopts, longopts, NULL);

	switch (c) {
	case PROG_OPT_HELP:
		if (prog_usage)
			prog_usage(stdout);
		exit(PROG_OK);
	case PROG_OPT_VERSION:
		printf("%s (smartio) %s\n", prog_name, SIO_VERSION);
		exit(PROG_OK);
	case '?':
	case ':':
		/* getopt said which option, and what is wrong with it */
		fprintf(stderr, "%s: see %s --help\n", prog_name, prog_name);
		exit(PROG_USAGE);
	}
	return c;
}

void prog_no_args(int argc, char **argv)
{
	if (optind < argc)
		prog_usage_error("unexpected argument '%s'", argv[optind]);
}

/* "PROG: MESSAGE" and @tail on stderr. */
static __attribute__((format(printf, 2, 0))) void say(const char *tail, const char *fmt,
							 va_list ap)
{
	fprintf(stderr, "%s: ", prog_name);
	vfprintf(stderr, fmt, ap);
	fprintf(stderr, "%s\n", tail);
}

void prog_usage_error(const char *fmt, ...)
{
	char tail[128];
	va_list ap;

	snprintf(tail, sizeof(tail), " (see %s --help)", prog_name);
	va_start(ap, fmt);
	say(tail, fmt, ap);
	va_end(ap);
	exit(PROG_USAGE);
}

int prog_fail(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	say("", fmt, ap);
	va_end(ap);
	return PROG_FAIL;
}

static void bad_value(const char *opt, const char *what)
{
	fprintf(stderr, "%s: %s: %s\n", prog_name, opt, what);
	exit(PROG_USAGE);
}

uint64_t prog_u64(const char *opt, const char *arg, uint64_t min, uint64_t max)
{
	uint64_t v;

	if (sio_parse_u64(arg, min, max, &v)) {
		char m[512];

		/* "'-1' is not a number": say which numbers are */
		if (strstr(sio_errmsg(), "range"))
			bad_value(opt, sio_errmsg());
		snprintf(m, sizeof(m), "%s (give %llu..%llu)", sio_errmsg(),
			 (unsigned long long)min, (unsigned long long)max);
		bad_value(opt, m);
	}
	return v;
}

uint32_t prog_u32(const char *opt, const char *arg, uint32_t min, uint32_t max)
{
	return (uint32_t)prog_u64(opt, arg, min, max);
}

uint64_t prog_size(const char *opt, const char *arg, uint64_t min, uint64_t max)
{
	uint64_t v;

	if (sio_parse_size(arg, min, max, &v))
		bad_value(opt, sio_errmsg());
	return v;
}

double prog_double(const char *opt, const char *arg, double min, double max)
{
	double v;

	if (sio_parse_double(arg, min, max, &v))
		bad_value(opt, sio_errmsg());
	return v;
}

int prog_choice(const char *opt, const char *arg, const char *const *names)
{
	char m[512];
	size_t o;

	for (int i = 0; names[i]; i++)
		if (!strcmp(arg, names[i]))
			return i;
	o = (size_t)snprintf(m, sizeof(m), "'%s' is not one of ", arg);
	for (int i = 0; names[i] && o < sizeof(m); i++)
		o += (size_t)snprintf(m + o, sizeof(m) - o, "%s%s", i ? ", " : "", names[i]);
	bad_value(opt, m);
	return -1;
}

static void on_stop(int sig)
{
	(void)sig;
	prog_stop = 1;
}

void prog_catch_stop(void)
{
	struct sigaction sa = { .sa_handler = on_stop };

	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
}
