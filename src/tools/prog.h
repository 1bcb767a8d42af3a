/* SPDX-License-Identifier: MIT */
#ifndef SIO_PROG_H
#define SIO_PROG_H

/**
 * DOC: the contract every smartio program keeps
 *
 * Each installed program and benchmark links this small static helper
 * (libsio-prog, not part of libsmartio's ABI) and so behaves the same way:
 *
 * - ``--help`` prints the usage on stdout and exits 0;
 * - ``--version`` prints "PROG (smartio) VERSION" and exits 0;
 * - a usage error (an unknown option, a bad value, a stray argument) names
 *   the option on stderr and exits 2 (%PROG_USAGE);
 * - a runtime failure says what went wrong and exits 1 (%PROG_FAIL);
 * - SIGINT and SIGTERM set @prog_stop; long-running programs finish what
 *   they are doing and exit 0;
 * - readiness is announced once: the --ready-file and, under systemd, the
 *   sd_notify protocol (READY=1 on $NOTIFY_SOCKET);
 * - JSON is built with json-c and printed by prog_json_print(): always
 *   valid, strings escaped.
 */

#include <getopt.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <json-c/json.h>

enum { PROG_OK = 0, PROG_FAIL = 1, PROG_USAGE = 2 };

/* getopt values of the options every program has */
enum { PROG_OPT_HELP = 'h', PROG_OPT_VERSION = 0x7f00 };

#define PROG_LONGOPTS						\
	{ "help", no_argument, NULL, PROG_OPT_HELP },		\
	{ "version", no_argument, NULL, PROG_OPT_VERSION }

#define PROG_HELP							\
	"  --help            this text\n"				\
	"  --version         the smartio version\n"

/* The program's name, as set by prog_init(). */
extern const char *prog_name;

/**
 * prog_init() - name the program and give it its usage text
 * @name: the installed name ("nvme-client")
 * @usage: prints the usage on the stream it is given
 */
void prog_init(const char *name, void (*usage)(FILE *out));

/**
 * prog_getopt() - getopt_long() that keeps the contract
 * @argc, @argv, @shortopts, @longopts: as for getopt_long(); @longopts
 *	should hold PROG_LONGOPTS
 *
 * --help and --version are answered here (the program exits 0); an unknown
 * option or a missing value exits %PROG_USAGE after getopt's message, which
 * names the option.
 * Return: the next option of the program's own, or -1 at the end.
 */
int prog_getopt(int argc, char **argv, const char *shortopts, const struct option *longopts);

/*
 * After getopt_long() answered '?' for an unknown long option: name the
 * closest known one, or ours for fio's (prog_getopt() does this itself;
 * for a subcommand that calls getopt_long() directly).
 */
void prog_suggest_option(int argc, char **argv, const struct option *longopts);

/* No positional arguments may follow the options: a stray one exits 2. */
void prog_no_args(int argc, char **argv);

/* Print "PROG: MESSAGE (see --help)" and exit %PROG_USAGE. */
void prog_usage_error(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));

/* Print "PROG: MESSAGE" on stderr. Return: %PROG_FAIL, for return prog_fail(...). */
int prog_fail(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/*
 * Option values, parsed strictly (src/support/parse.h); a bad one exits
 * %PROG_USAGE with "PROG: OPT: what is wrong with 'VALUE' (MIN..MAX)".
 */
uint64_t prog_u64(const char *opt, const char *arg, uint64_t min, uint64_t max);
uint32_t prog_u32(const char *opt, const char *arg, uint32_t min, uint32_t max);
uint64_t prog_size(const char *opt, const char *arg, uint64_t min, uint64_t max);
double prog_double(const char *opt, const char *arg, double min, double max);

/**
 * prog_bytes() - a size in bytes, with fio's suffixes ("4k", "1m", "4096")
 * @opt, @arg, @min, @max: as prog_size()
 * @old_unit: bytes the option's bare number counted before it counted
 *	bytes (512 for blocks, 1 MiB for MiB), or 0
 * @old_name: that unit's name, for the message ("blocks of 512 B")
 *
 * A bare number below @min that meant something under the old unit is
 * refused with a message giving that meaning in bytes (--bs 8 was 8
 * blocks: "--bs 4k"), never taken in the new unit silently.
 */
uint64_t prog_bytes(const char *opt, const char *arg, uint64_t min, uint64_t max,
		    uint64_t old_unit, const char *old_name);
/* A size in whole MiB for an option that counted MiB ("16m", "1g"; "0":
 * none). Return: MiB. */
uint32_t prog_mib(const char *opt, const char *arg, uint32_t max_mib);
/* @v bytes as an option takes it: "4k", "16m", "3000". Return: @buf. */
const char *prog_size_str(uint64_t v, char *buf, size_t len);
/**
 * prog_time() - a duration with fio's units ("3s", "500ms", "2m")
 * @opt, @arg: as prog_u64()
 * @unit: seconds a bare number counts (the option's documented unit)
 * @min, @max: the range, in seconds
 *
 * Return: the duration in seconds; a bad one exits %PROG_USAGE.
 */
double prog_time(const char *opt, const char *arg, double unit, double min, double max);
/* @arg must be one of the NULL-terminated @names: its index. */
int prog_choice(const char *opt, const char *arg, const char *const *names);

/* ---- signals ---- */

/* Set (to 1) by SIGINT and SIGTERM once prog_catch_stop() ran; 2 is left for
 * a program's own reason to stop (its fabric went away). */
extern volatile sig_atomic_t prog_stop;

/* SIGINT and SIGTERM set @prog_stop instead of killing the program. */
void prog_catch_stop(void);

/*
 * A fatal signal (SIGSEGV, SIGBUS, SIGILL, SIGFPE) writes its number, the
 * thread and the return addresses on the stack to stderr, then kills the
 * program as it would have: for daemons whose end is read from a log
 * (`addr2line -f -e PROGRAM OFFSET...`, each OFFSET the "+0x..." of a line).
 */
void prog_report_crash(void);

/**
 * prog_repeat() - show a reading again and again (--watch)
 * @once: takes and prints one reading; non-zero stops
 * @arg: passed to @once
 * @interval: seconds between readings
 * @count: readings to take (0: until SIGINT or SIGTERM)
 * @json: readings are JSON, one a line
 *
 * On a terminal each reading is drawn on a cleared screen (as top(1)
 * does); elsewhere text readings are apart by a blank line.
 * Return: 0, or what @once returned when it failed.
 */
int prog_repeat(int (*once)(void *arg), void *arg, double interval, uint64_t count, bool json);

/**
 * prog_watch_arg() - the seconds of --watch [SEC]
 * @arg: optarg of an optional-argument --watch (--watch=SEC), or NULL
 * @argc, @argv: the command line; the next word is taken (optind moves on)
 *	when it is a number of seconds
 *
 * Return: the seconds between readings, 0.1 to 86400; 1 when none is given.
 * A bad --watch=SEC exits %PROG_USAGE.
 */
double prog_watch_arg(const char *arg, int argc, char **argv);

/* ---- readiness and logs ---- */

/**
 * prog_ready() - say the program serves now
 * @ready_file: the --ready-file path, or NULL
 * @id: what is written there (a device id, a pid)
 * @status: a line for systemd's status (STATUS=), or NULL
 *
 * Writes @ready_file (whole or not at all) and, when started by systemd
 * with Type=notify, sends READY=1 to $NOTIFY_SOCKET.
 * Return: 0, or %PROG_FAIL after saying why the file could not be written.
 */
int prog_ready(const char *ready_file, long long id, const char *status);

/**
 * prog_ready_stream() - a log stream that announces readiness at a line
 * @out: where the lines go on to (stdout)
 * @prefix: the line that says the service serves ("lending ")
 * @ready_file: written then (as prog_ready(), with our pid), or NULL
 *
 * For a service whose readiness a library reports in its log (the vfio and
 * uio lenders): the first line that starts with @prefix calls prog_ready().
 * Return: the stream (@out itself if none could be made).
 */
FILE *prog_ready_stream(FILE *out, const char *prefix, const char *ready_file);

/**
 * prog_background() - go on in the background once ready (--background)
 *
 * Forks: the parent waits (at most 120 s) until the child has called
 * prog_ready(), then exits 0, so a shell script's next line finds the
 * service serving; it exits 1 when the child fails first (the child has
 * said why). The child leaves the terminal's session and goes on. Call it
 * after the options are parsed, before the service starts.
 */
void prog_background(void);

/* Tell systemd (when it started us) that we are stopping: STOPPING=1. */
void prog_notify_stopping(void);

/**
 * prog_notify() - send one sd_notify message
 * @msg: "READY=1", "STOPPING=1", "STATUS=..." (newline-separated lines)
 *
 * Return: 1 when sent, 0 when not started by systemd ($NOTIFY_SOCKET unset),
 * -errno when the socket refused it.
 */
int prog_notify(const char *msg);

/**
 * prog_log_stream() - a stream for a daemon's log lines
 * @json: each line becomes a JSON object {"time", "prog", "pid", "msg"}
 *
 * Lines written to the stream go to stderr, each prefixed with the time
 * (ISO 8601, UTC, milliseconds) unless systemd's journal takes stderr (it
 * keeps its own), or as JSON lines with @json.
 * Return: the stream (stderr itself if none could be made).
 */
FILE *prog_log_stream(bool json);

/* ---- joining a fabric; services ---- */

#include <smartio/fabric.h>

/**
 * prog_join() - join a fabric, saying what is wrong if it cannot be done
 * @fabric: its name (NULL or "": $SMARTIO_FABRIC)
 * @node: the node to join as (-1: $SMARTIO_NODE, else 0)
 * @f: the handle
 *
 * The messages name what fixes the problem (--fabric, smartio create).
 * Return: 0 or a negative errno (already reported).
 */
int prog_join(const char *fabric, int node, struct sio_fabric **f);

/*
 * @st, read through @f, as it is without this process: a tool that joined
 * to look (status, top) counts itself out of the processes, the fabric's
 * and its node's.
 */
struct sio_fabric_status;
void prog_status_without_me(const struct sio_fabric *f, struct sio_fabric_status *st);

/* A topology's name as options and JSON spell it: "b2b", "switch", "cascade". */
const char *prog_topo_name(enum sio_topology_kind k);

/*
 * Options of a long-running program that serves on a fabric (nvme-emu,
 * edu-emu, nvme-manager): --fabric, --node, --ready-file.
 */
struct prog_service {
	const char *fabric;	/* default $SMARTIO_FABRIC */
	int node;		/* -1: $SMARTIO_NODE, else 0 */
	const char *ready_file;
	bool background;
};

enum { PROG_OPT_FABRIC = 0x7f10, PROG_OPT_NODE, PROG_OPT_READY, PROG_OPT_BACKGROUND };

#define PROG_BACKGROUND_LONGOPT						\
	{ "background", no_argument, NULL, PROG_OPT_BACKGROUND }

#define PROG_SERVICE_LONGOPTS						\
	{ "fabric", required_argument, NULL, PROG_OPT_FABRIC },		\
	{ "node", required_argument, NULL, PROG_OPT_NODE },		\
	{ "ready-file", required_argument, NULL, PROG_OPT_READY },	\
	PROG_BACKGROUND_LONGOPT

#define PROG_BACKGROUND_HELP						\
	"  --background      return once serving, and go on in the background (its\n"	\
	"                    later messages go to a terminal or file, not a pipe)\n"

#define PROG_SERVICE_HELP						\
	"  --fabric NAME     fabric to join (default $SMARTIO_FABRIC)\n"	\
	"  --node N          node to join as (default $SMARTIO_NODE, else 0)\n" \
	"  --ready-file F    once serving, write F (see the program's text for what)\n" \
	PROG_BACKGROUND_HELP

void prog_service_init(struct prog_service *s);
/* One of the service options: 1 when @c was one (its value checked), else 0. */
int prog_service_opt(struct prog_service *s, int c, const char *arg);

/*
 * Watch @f from a thread: when the fabric is destroyed, say so and set
 * @prog_stop to 2, which ends a model's or a manager's run loop. A
 * program's own loop does not know the fabric's life.
 */
void prog_watch_fabric(struct sio_fabric *f);
/* Stop watching (sets @prog_stop if it is not set). */
void prog_unwatch_fabric(void);

/* ---- JSON (json-c) ---- */

/* Print @o on @out as one line, and free it. Return: 0 or %PROG_FAIL. */
int prog_json_print(FILE *out, struct json_object *o);
/* Write @o to @path (as prog_json_print()), and free it. 0 or %PROG_FAIL. */
int prog_json_write(const char *path, struct json_object *o);

/* Add @key = value to object @o (json-c's calls, shorter). */
void pj_str(struct json_object *o, const char *key, const char *v);
void pj_int(struct json_object *o, const char *key, int64_t v);
void pj_u64(struct json_object *o, const char *key, uint64_t v);
void pj_bool(struct json_object *o, const char *key, bool v);
void pj_dbl(struct json_object *o, const char *key, double v);
/* A new object or array added under @key; returned for filling. */
struct json_object *pj_obj(struct json_object *o, const char *key);
struct json_object *pj_arr(struct json_object *o, const char *key);
/* A new object appended to array @a. */
struct json_object *pj_push_obj(struct json_object *a);

/* When, as fio's JSON says it: "timestamp" (s) and "timestamp_ms" since
 * the epoch, so that readings from several hosts line up. */
void pj_timestamp(struct json_object *o);
/* Where the output came from: version, host, kernel, date, load. */
void pj_run_info(struct json_object *o);

#endif
