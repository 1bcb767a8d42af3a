/* SPDX-License-Identifier: MIT */
/* Readiness (--ready-file, sd_notify), daemon logs and --watch (prog.h). */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>
#include "parse.h"
#include "prog.h"
#include "safe-file.h"

/*
 * The sd_notify protocol: one datagram of "KEY=VALUE" lines to the unix
 * socket named by $NOTIFY_SOCKET (a leading '@': the abstract namespace).
 * Spoken directly, so that no program needs libsystemd.
 */
int prog_notify(const char *msg)
{
	const char *path = getenv("NOTIFY_SOCKET");
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	size_t len;
	ssize_t n;
	int fd;

	if (!path || !*path)
		return 0;
	len = strlen(path);
	if ((path[0] != '/' && path[0] != '@') || len >= sizeof(sa.sun_path))
		return -EINVAL;
	memcpy(sa.sun_path, path, len);
	if (sa.sun_path[0] == '@')
		sa.sun_path[0] = 0;
	fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	n = sendto(fd, msg, strlen(msg), MSG_NOSIGNAL, (struct sockaddr *)&sa,
		   (socklen_t)(offsetof(struct sockaddr_un, sun_path) + len));
	close(fd);
	return n < 0 ? -errno : 1;
}

/* --background: the pipe on which the child tells the waiting parent. */
static int bg_fd = -1;

void prog_background(void)
{
	struct pollfd p;
	int fds[2], st;
	pid_t pid;
	char c;

	fflush(NULL);
	if (pipe2(fds, O_CLOEXEC) || (pid = fork()) < 0)
		exit(prog_fail("--background: %s", strerror(errno)));
	if (pid == 0) {
		close(fds[0]);
		bg_fd = fds[1];
		setsid();	/* the terminal's ^C is the shell's, not ours */
		return;
	}
	close(fds[1]);
	p = (struct pollfd){ .fd = fds[0], .events = POLLIN };
	if (poll(&p, 1, 120000) == 1 && read(fds[0], &c, 1) == 1)
		exit(PROG_OK);	/* serving */
	if (waitpid(pid, &st, WNOHANG) == pid)	/* it failed, and said why */
		exit(WIFEXITED(st) && WEXITSTATUS(st) ? WEXITSTATUS(st) : PROG_FAIL);
	exit(prog_fail("--background: pid %d is not serving after 120 s; left running",
		       (int)pid));
}

/*
 * Once serving in the background, let go of the caller's pipes (as QEMU's
 * -daemonize does): a reader of `$(prog --background)` or `| tee` would wait
 * for their end as long as the program runs. A terminal or a file keeps
 * what the program says later (errors, its stop).
 */
static void background_detach(void)
{
	int null = open("/dev/null", O_RDWR | O_CLOEXEC);
	struct stat st;

	if (null < 0)
		return;
	dup2(null, 0);
	for (int fd = 1; fd <= 2; fd++)
		if (!fstat(fd, &st) && (S_ISFIFO(st.st_mode) || S_ISSOCK(st.st_mode)))
			dup2(null, fd);
	close(null);
}

/*
 * --ready-file: @id and a newline, written whole (safe-file.h), so a
 * script polling for the file never reads half a line. Return: 0 or -errno.
 */
static int ready_file_write(const char *path, long long id)
{
	struct safe_file sf;
	int ret = safe_file_open(&sf, path);

	if (ret)
		return ret;
	fprintf(sf.f, "%lld\n", id);
	return safe_file_close(&sf, 1);
}

int prog_ready(const char *ready_file, long long id, const char *status)
{
	char msg[512];
	int ret;

	if (ready_file && (ret = ready_file_write(ready_file, id)))
		return prog_fail("--ready-file %s: %s", ready_file, strerror(-ret));
	snprintf(msg, sizeof(msg), "READY=1\nMAINPID=%d%s%s", (int)getpid(),
		 status ? "\nSTATUS=" : "", status ? status : "");
	if (bg_fd >= 0) {	/* the parent of --background exits now */
		if (write(bg_fd, "r", 1) != 1)
			fprintf(stderr, "%s: --background: cannot tell the parent\n", prog_name);
		close(bg_fd);
		bg_fd = -1;
		fflush(NULL);
		background_detach();
	}
	ret = prog_notify(msg);
	if (ret < 0)	/* systemd would wait out TimeoutStartSec: say why */
		fprintf(stderr, "%s: cannot tell systemd we are ready ($NOTIFY_SOCKET %s): %s\n",
			prog_name, getenv("NOTIFY_SOCKET"), strerror(-ret));
	return 0;
}

void prog_notify_stopping(void)
{
	prog_notify("STOPPING=1");
}

/* ---- log lines with a time, or as JSON ---- */

struct logbuf {
	bool json;
	size_t len;
	char line[4096];
};

static void log_emit(struct logbuf *b)
{
	struct timeval tv;
	struct tm tm;
	char when[40];

	gettimeofday(&tv, NULL);
	gmtime_r(&tv.tv_sec, &tm);
	strftime(when, sizeof(when), "%Y-%m-%dT%H:%M:%S", &tm);
	snprintf(when + strlen(when), sizeof(when) - strlen(when), ".%03dZ",
		 (int)(tv.tv_usec / 1000));
	b->line[b->len] = 0;
	if (b->json) {
		struct json_object *o = json_object_new_object();
		size_t n = strlen(prog_name);
		const char *msg = b->line;

		/* "PROG: what": the program is a key of its own */
		if (!strncmp(msg, prog_name, n) && !strncmp(msg + n, ": ", 2))
			msg += n + 2;

		pj_str(o, "time", when);
		pj_str(o, "prog", prog_name);
		pj_int(o, "pid", getpid());
		pj_str(o, "msg", msg);
		fprintf(stderr, "%s\n", json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN |
								 JSON_C_TO_STRING_NOSLASHESCAPE));
		json_object_put(o);
	} else if (getenv("JOURNAL_STREAM")) {
		fprintf(stderr, "%s\n", b->line);	/* the journal keeps the time */
	} else {
		fprintf(stderr, "%s %s\n", when, b->line);
	}
	b->len = 0;
}

static ssize_t log_write(void *cookie, const char *buf, size_t size)
{
	struct logbuf *b = cookie;

	for (size_t i = 0; i < size; i++) {
		if (buf[i] == '\n' || b->len == sizeof(b->line) - 1) {
			log_emit(b);
			if (buf[i] == '\n')
				continue;
		}
		b->line[b->len++] = buf[i];
	}
	return (ssize_t)size;
}

static int log_close(void *cookie)
{
	struct logbuf *b = cookie;

	if (b->len)
		log_emit(b);
	free(b);
	return 0;
}

FILE *prog_log_stream(bool json)
{
	cookie_io_functions_t io = { .write = log_write, .close = log_close };
	struct logbuf *b = calloc(1, sizeof(*b));
	FILE *f;

	if (!b)
		return stderr;
	b->json = json;
	f = fopencookie(b, "w", io);
	if (!f) {
		free(b);
		return stderr;
	}
	setvbuf(f, NULL, _IOLBF, 0);
	return f;
}

/* ---- readiness read from a library's log ---- */

struct readybuf {
	FILE *out;
	const char *prefix, *file;
	bool said;
	size_t len;
	char line[1024];
};

static ssize_t ready_write(void *cookie, const char *buf, size_t size)
{
	struct readybuf *b = cookie;

	fwrite(buf, 1, size, b->out);
	fflush(b->out);
	for (size_t i = 0; i < size && !b->said; i++) {
		if (buf[i] != '\n' && b->len < sizeof(b->line) - 1) {
			b->line[b->len++] = buf[i];
			continue;
		}
		b->line[b->len] = 0;
		if (!strncmp(b->line, b->prefix, strlen(b->prefix))) {
			b->said = true;
			prog_ready(b->file, getpid(), b->line);
		}
		b->len = 0;
	}
	return (ssize_t)size;
}

static int ready_close(void *cookie)
{
	free(cookie);
	return 0;
}

FILE *prog_ready_stream(FILE *out, const char *prefix, const char *ready_file)
{
	cookie_io_functions_t io = { .write = ready_write, .close = ready_close };
	struct readybuf *b = calloc(1, sizeof(*b));
	FILE *f;

	if (!b)
		return out;
	*b = (struct readybuf){ .out = out, .prefix = prefix, .file = ready_file };
	f = fopencookie(b, "w", io);
	if (!f) {
		free(b);
		return out;
	}
	setvbuf(f, NULL, _IOLBF, 0);
	return f;
}

int prog_repeat(int (*once)(void *arg), void *arg, double interval, uint64_t count, bool json)
{
	bool tty = isatty(1) && !json;
	int ret = 0;

	prog_catch_stop();
	for (uint64_t i = 0; !prog_stop && (!count || i < count); i++) {
		struct timespec ts = { (time_t)interval,
				       (long)((interval - (double)(time_t)interval) * 1e9) };

		if (i && !tty && !json)
			printf("\n");
		if (tty)	/* home and clear, as top(1) */
			printf("\033[H\033[2J");
		fflush(stdout);
		if ((ret = once(arg)))
			break;
		if (count && i + 1 == count)
			break;
		while (!prog_stop && nanosleep(&ts, &ts) && errno == EINTR)
			;
	}
	return ret;
}

double prog_watch_arg(const char *arg, int argc, char **argv)
{
	double w = 1;

	if (arg)
		return prog_time("--watch", arg, 1, 0.1, 86400);
	/* the next word is the interval when it looks like one: "--watch 0"
	 * is a bad interval ("out of range"), not a stray argument */
	if (optind < argc && ((argv[optind][0] >= '0' && argv[optind][0] <= '9') ||
			      argv[optind][0] == '.'))
		w = prog_time("--watch", argv[optind++], 1, 0.1, 86400);
	return w;
}
