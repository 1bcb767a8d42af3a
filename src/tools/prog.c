/* SPDX-License-Identifier: MIT */
/* The command-line contract every smartio program keeps (prog.h). */
#include <errno.h>
#include <execinfo.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>
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

/* fio's (and nvme-cli's) names for what our options do, so a habit gets
 * pointed at our name; @note when no option of ours does it. */
static const struct {
	const char *theirs, *ours, *note;
} aliases[] = {
	{ "iodepth", "qd", NULL },
	{ "runtime", "time", NULL },
	{ "time_based", "time", NULL },
	{ "rw", "op", "with --random for fio's randread/randwrite" },
	{ "readwrite", "op", "with --random for fio's randread/randwrite" },
	{ "blocksize", "bs", NULL },
	{ "offset", "lba", "in blocks" },
	{ "start-block", "lba", NULL },
	{ "size", "count", "in blocks" },
	{ "block-count", "count", NULL },
	{ "number_ios", "ios", NULL },
	{ "status-interval", "progress", NULL },
	{ "output-format", "json", NULL },
	{ "namespace-id", "nsid", NULL },
	{ "interval", "watch", NULL },
	{ "numjobs", NULL, "each nvme-client is one job: start one per job (several "
	  "on a fabric share the controller, as fio's jobs do; the fio engine "
	  "takes numjobs)" },
	{ "ioengine", NULL, "for fio's engine see docs/fio.md" },
};

/* Edits that turn @a into @b (Levenshtein), counted up to 15 letters. */
static unsigned distance(const char *a, size_t la, const char *b)
{
	unsigned row[16], prev, tmp;
	size_t lb = strlen(b);

	if (la > 15 || lb > 15)
		return 99;
	for (size_t j = 0; j <= lb; j++)
		row[j] = (unsigned)j;
	for (size_t i = 1; i <= la; i++) {
		prev = row[0];
		row[0] = (unsigned)i;
		for (size_t j = 1; j <= lb; j++) {
			tmp = row[j];
			row[j] = prev + (a[i - 1] != b[j - 1]);
			if (row[j - 1] + 1 < row[j])
				row[j] = row[j - 1] + 1;
			if (tmp + 1 < row[j])
				row[j] = tmp + 1;
			prev = tmp;
		}
	}
	return row[lb];
}

static bool has_option(const struct option *longopts, const char *name)
{
	for (; longopts && longopts->name; longopts++)
		if (!strcmp(longopts->name, name))
			return true;
	return false;
}

/* After getopt's "unrecognized option '--iodepth'": what was meant. */
static void suggest(const char *word, const struct option *longopts)
{
	size_t len = strcspn(word, "=");
	const char *best = NULL;
	unsigned d, best_d = 99;

	for (size_t i = 0; i < sizeof(aliases) / sizeof(aliases[0]); i++) {
		if (strlen(aliases[i].theirs) != len || strncmp(aliases[i].theirs, word, len))
			continue;
		if (aliases[i].ours && has_option(longopts, aliases[i].ours)) {
			fprintf(stderr, "%s: did you mean --%s? (fio's --%s%s%s)\n", prog_name,
				aliases[i].ours, aliases[i].theirs, aliases[i].note ? "; " : "",
				aliases[i].note ? aliases[i].note : "");
			return;
		}
		if (!aliases[i].ours) {
			fprintf(stderr, "%s: --%s: %s\n", prog_name, aliases[i].theirs, aliases[i].note);
			return;
		}
	}
	for (; longopts && longopts->name; longopts++) {
		d = distance(word, len, longopts->name);
		if (d < best_d) {
			best_d = d;
			best = longopts->name;
		}
	}
	if (best && best_d <= (len < 6 ? 1 : 2))
		fprintf(stderr, "%s: did you mean --%s?\n", prog_name, best);
}

void prog_suggest_option(int argc, char **argv, const struct option *longopts)
{
	if (!optopt && optind > 0 && optind <= argc && !strncmp(argv[optind - 1], "--", 2))
		suggest(argv[optind - 1] + 2, longopts);
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
		if (c == '?')
			prog_suggest_option(argc, argv, longopts);
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

uint64_t prog_bytes(const char *opt, const char *arg, uint64_t min, uint64_t max,
		    uint64_t old_unit, const char *old_name)
{
	char m[512], hint[32];
	uint64_t v;
	bool bare;

	if (sio_parse_bytes(arg, 0, max, &v, &bare))
		bad_value(opt, sio_errmsg());
	if (v >= min)
		return v;
	if (bare && old_unit && v && v <= max / old_unit && v * old_unit >= min) {
		/* a bare number too small for bytes: what it meant before */
		snprintf(m, sizeof(m), "'%s' would be %s byte(s): %s counts bytes now, as "
			 "fio does (it counted %s before; that meaning is %s %s)", arg, arg, opt,
			 old_name, opt, prog_size_str(v * old_unit, hint, sizeof(hint)));
		bad_value(opt, m);
	}
	sio_parse_bytes(arg, min, max, &v, NULL);	/* says "out of range" */
	bad_value(opt, sio_errmsg());
	return 0;
}

uint32_t prog_mib(const char *opt, const char *arg, uint32_t max_mib)
{
	uint64_t v;

	if (!strcmp(arg, "0"))
		return 0;
	v = prog_bytes(opt, arg, 1u << 20, (uint64_t)max_mib << 20, 1u << 20, "MiB");
	if (v & ((1u << 20) - 1))
		prog_usage_error("%s %s is not a whole number of MiB (16m, 1g)", opt, arg);
	return (uint32_t)(v >> 20);
}

const char *prog_size_str(uint64_t v, char *buf, size_t len)
{
	static const char sfx[] = "kmgtp";
	int i = -1;

	while (v && !(v & 1023) && i < 4) {
		v >>= 10;
		i++;
	}
	if (i < 0)
		snprintf(buf, len, "%llu", (unsigned long long)v);
	else
		snprintf(buf, len, "%llu%c", (unsigned long long)v, sfx[i]);
	return buf;
}

double prog_time(const char *opt, const char *arg, double unit, double min, double max)
{
	double v;

	if (sio_parse_time(arg, unit, min, max, &v))
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

/* Append @s, or @v in @base (10 or 16), at @out + *@len: by hand, since
 * only write(2) is safe in a signal handler. */
static void put_str(char *out, int *len, const char *s)
{
	while (*s)
		out[(*len)++] = *s++;
}

static void put_num(char *out, int *len, unsigned long v, unsigned int base)
{
	char t[24];
	int n = 0;

	do
		t[n++] = "0123456789abcdef"[v % base];
	while ((v /= base));
	while (n)
		out[(*len)++] = t[--n];
}

/* SA_RESETHAND: the raise() at the end ends the program as the fault would have. */
static void on_crash(int sig, siginfo_t *si, void *uc)
{
	void *pcs[64];
	char line[96];
	int n = backtrace(pcs, 64), len = 0;

	(void)uc;
	put_str(line, &len, "fatal signal ");
	put_num(line, &len, (unsigned long)sig, 10);
	put_str(line, &len, " at 0x");
	put_num(line, &len, (unsigned long)si->si_addr, 16);
	put_str(line, &len, " in thread ");
	put_num(line, &len, (unsigned long)syscall(SYS_gettid), 10);
	line[len++] = '\n';
	(void)!write(STDERR_FILENO, line, (size_t)len);
	backtrace_symbols_fd(pcs, n, STDERR_FILENO);
	raise(sig);
}

void prog_report_crash(void)
{
	static const int sigs[] = { SIGSEGV, SIGBUS, SIGILL, SIGFPE };
	struct sigaction sa = { .sa_sigaction = on_crash, .sa_flags = SA_RESETHAND | SA_SIGINFO };
	void *pc;

	backtrace(&pc, 1);	/* loads what backtrace() needs now, not in the handler */
	sigemptyset(&sa.sa_mask);
	for (size_t i = 0; i < sizeof(sigs) / sizeof(sigs[0]); i++)
		sigaction(sigs[i], &sa, NULL);
}

void prog_catch_stop(void)
{
	struct sigaction sa = { .sa_handler = on_stop };

	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
}
