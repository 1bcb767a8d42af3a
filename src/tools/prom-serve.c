/* SPDX-License-Identifier: MIT */
/*
 * A small HTTP server for Prometheus's scrapes (prom.h): GET /metrics on
 * one listening socket, one request at a time, each bounded in size and
 * time, until a signal stops the program. Enough for a scrape every few
 * seconds; not a web server.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>
#include "parse.h"
#include "prog.h"
#include "prom.h"

#define REQ_MAX		8192	/* a scrape's request is a few hundred bytes */
#define IO_TIMEOUT_S	5	/* a client that stalls is dropped */

/* "HOST:PORT", IPv4: the address to listen on. */
static int parse_listen(const char *arg, struct sockaddr_in *sa)
{
	const char *colon = strrchr(arg, ':');
	char host[64];
	uint64_t port;

	memset(sa, 0, sizeof(*sa));
	sa->sin_family = AF_INET;
	if (!colon || (size_t)(colon - arg) >= sizeof(host) ||
	    sio_parse_u64(colon + 1, 0, 65535, &port))
		return -1;
	memcpy(host, arg, (size_t)(colon - arg));
	host[colon - arg] = 0;
	if (!strcmp(host, "localhost"))
		strcpy(host, "127.0.0.1");
	if (inet_pton(AF_INET, host, &sa->sin_addr) != 1)
		return -1;
	sa->sin_port = htons((uint16_t)port);
	return 0;
}

static int listen_on(const char *arg, struct sockaddr_in *sa)
{
	socklen_t len = sizeof(*sa);
	int one = 1, fd;

	if (parse_listen(arg, sa))
		prog_usage_error("--listen '%s': give HOST:PORT, an IPv4 address and a port "
				 "(127.0.0.1:9400; port 0 takes a free one)", arg);
	fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return prog_fail("socket: %s", strerror(errno)), -1;
	setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (bind(fd, (struct sockaddr *)sa, sizeof(*sa)) || listen(fd, 8) ||
	    getsockname(fd, (struct sockaddr *)sa, &len)) {
		prog_fail("--listen %s: %s%s", arg, strerror(errno),
			  errno == EADDRINUSE ? " (another port, or stop what listens there)" : "");
		close(fd);
		return -1;
	}
	return fd;
}

/* The request's head, up to its blank line; NULL when it is cut or late. */
static char *read_head(int fd, char *buf, size_t len)
{
	size_t at = 0;

	while (at < len - 1) {
		ssize_t n = read(fd, buf + at, len - 1 - at);

		if (n <= 0)
			return NULL;
		at += (size_t)n;
		buf[at] = 0;
		if (strstr(buf, "\r\n\r\n") || strstr(buf, "\n\n"))
			return buf;
	}
	return NULL;
}

static void send_all(int fd, const char *p, size_t len)
{
	while (len) {
		ssize_t n = send(fd, p, len, MSG_NOSIGNAL);

		if (n <= 0)
			return;
		p += n;
		len -= (size_t)n;
	}
}

static void reply(int fd, const char *status, const char *type, const char *body, size_t len)
{
	char head[256];
	int n = snprintf(head, sizeof(head), "HTTP/1.1 %s\r\nContent-Type: %s\r\n"
			 "Content-Length: %zu\r\nConnection: close\r\n\r\n", status, type, len);

	send_all(fd, head, (size_t)n);
	send_all(fd, body, len);
}

static void serve_one(int fd, int (*metrics)(void *, FILE *), void *arg)
{
	struct timeval tv = { .tv_sec = IO_TIMEOUT_S };
	char *req = malloc(REQ_MAX), *body = NULL;
	size_t len = 0;
	FILE *f;

	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
	if (!req || !read_head(fd, req, REQ_MAX)) {
		free(req);
		return;
	}
	if (strncmp(req, "GET ", 4)) {
		reply(fd, "405 Method Not Allowed", "text/plain", "GET only\n", 9);
	} else if (strncmp(req + 4, "/metrics ", 9) && strncmp(req + 4, "/metrics?", 9)) {
		reply(fd, "404 Not Found", "text/plain", "see /metrics\n", 13);
	} else if (!(f = open_memstream(&body, &len))) {
		reply(fd, "500 Internal Server Error", "text/plain", "out of memory\n", 14);
	} else {
		int ret = metrics(arg, f);

		fclose(f);
		if (ret)
			reply(fd, "500 Internal Server Error", "text/plain", "the fabric could not "
			      "be read: see the exporter's log\n", 50);
		else
			reply(fd, "200 OK", PROM_CONTENT_TYPE, body, len);
		free(body);
	}
	free(req);
}

int prom_serve(const char *listen_arg, int (*metrics)(void *, FILE *), void *arg)
{
	struct sockaddr_in sa;
	char addr[INET_ADDRSTRLEN];
	int lfd = listen_on(listen_arg, &sa);

	if (lfd < 0)
		return PROG_FAIL;
	inet_ntop(AF_INET, &sa.sin_addr, addr, sizeof(addr));
	printf("serving http://%s:%u/metrics\n", addr, ntohs(sa.sin_port));
	fflush(stdout);
	if (prog_ready(NULL, 0, "serving /metrics"))
		return PROG_FAIL;
	while (!prog_stop) {
		struct pollfd pfd = { .fd = lfd, .events = POLLIN };
		int fd;

		/* a second at most between looks at prog_stop */
		if (poll(&pfd, 1, 1000) <= 0)
			continue;
		fd = accept4(lfd, NULL, NULL, SOCK_CLOEXEC);
		if (fd < 0)
			continue;
		serve_one(fd, metrics, arg);
		close(fd);
	}
	prog_notify_stopping();
	close(lfd);
	return PROG_OK;
}
