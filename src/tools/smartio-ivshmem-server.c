/* SPDX-License-Identifier: MIT */
/*
 * smartio-ivshmem-server: the small ivshmem server QEMU's ivshmem-doorbell
 * devices connect to (Debian ships none), so that guests sharing one window
 * can interrupt each other. It speaks the protocol of QEMU's
 * docs/specs/ivshmem-spec.rst: to each new peer, the protocol version (0),
 * its id, the shared memory's fd (with -1), the other peers' eventfds (their
 * id, once per vector), then its own eventfds (its id, once per vector);
 * the others learn of it the same way. Every message is a little-endian
 * int64, an fd rides along by SCM_RIGHTS.
 *
 * A new peer takes the lowest id free, so a guest that dies and boots again
 * comes back under its old id (its old port of an NTB over the window). The
 * others are never told that a peer left: QEMU's ivshmem frees a departed
 * peer's eventfd array and never allocates it again, so a new peer under the
 * old id would make every other QEMU write into freed memory. Instead an
 * id's eventfds are made once and kept: the QEMUs that were told of them keep
 * ringing the same ones, which the next peer under that id reads.
 *
 * usage: smartio-ivshmem-server --socket PATH --shm FILE [--vectors N]
 *        [--ready-file PATH]
 */
#include <errno.h>
#include <fcntl.h>
#include "prog.h"
#include <poll.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>

#define MAX_PEERS	64		/* ids 0..63 */
#define MAX_VECTORS	8

/* An id: the peer connected under it now, if any, and its eventfds. */
struct peer {
	int sock;		/* -1: no peer under this id now */
	int ev[MAX_VECTORS];	/* its eventfds (-1: none made yet): kept for good */
	uint64_t told;		/* ids whose eventfds this peer's QEMU has */
};

static struct peer peers[MAX_PEERS];
static int nvec = 1, shm_fd = -1;

/* One message: @v, little endian, with @fd when >= 0. */
static int msg(int sock, int64_t v, int fd)
{
	char cbuf[CMSG_SPACE(sizeof(int))] = { 0 };
	int64_t le = (int64_t)htole64((uint64_t)v);
	struct iovec iov = { &le, sizeof(le) };
	struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1 };

	if (fd >= 0) {
		struct cmsghdr *cm;

		mh.msg_control = cbuf;
		mh.msg_controllen = sizeof(cbuf);
		cm = CMSG_FIRSTHDR(&mh);
		cm->cmsg_level = SOL_SOCKET;
		cm->cmsg_type = SCM_RIGHTS;
		cm->cmsg_len = CMSG_LEN(sizeof(int));
		memcpy(CMSG_DATA(cm), &fd, sizeof(int));
	}
	return sendmsg(sock, &mh, MSG_NOSIGNAL) == (ssize_t)sizeof(le) ? 0 : -1;
}

/* The peer under @id left: its eventfds stay, for the QEMUs that hold them. */
static void drop(int id)
{
	close(peers[id].sock);
	peers[id].sock = -1;
	peers[id].told = 0;
	printf("ivshmem-server: peer %d left\n", id);
	fflush(stdout);
}

/* @id's eventfds, made the first time the id is taken. */
static int eventfds(int id)
{
	struct peer *p = &peers[id];

	for (int v = 0; v < nvec; v++)
		if (p->ev[v] < 0 && (p->ev[v] = eventfd(0, EFD_CLOEXEC)) < 0) {
			fprintf(stderr, "ivshmem-server: eventfd: %s\n", strerror(errno));
			return -1;
		}
	return 0;
}

/* Tell peer @to of @id's eventfds, once per QEMU. */
static int tell(int to, int id)
{
	struct peer *p = &peers[to];

	if (p->told >> id & 1)
		return 0;
	for (int v = 0; v < nvec; v++)
		if (msg(p->sock, id, peers[id].ev[v]))
			return -1;
	p->told |= 1ULL << id;
	return 0;
}

static void join(int sock)
{
	int id, o;
	int bad;

	for (id = 0; id < MAX_PEERS && peers[id].sock >= 0; id++)
		;
	if (id == MAX_PEERS || eventfds(id)) {
		fprintf(stderr, "ivshmem-server: %s; refusing a peer\n",
			id == MAX_PEERS ? "all 64 peer ids in use" : "no eventfds");
		close(sock);
		return;
	}
	peers[id].sock = sock;
	bad = msg(sock, 0, -1) || msg(sock, id, -1) || msg(sock, -1, shm_fd);
	for (o = 0; o < MAX_PEERS && !bad; o++) {
		if (o == id || peers[o].sock < 0)
			continue;
		bad = tell(id, o);			/* the others, to the newcomer */
		if (tell(o, id))			/* the newcomer, to the others */
			fprintf(stderr, "ivshmem-server: cannot tell peer %d of %d\n", o, id);
	}
	bad = bad || tell(id, id);			/* its own, to receive */
	printf("ivshmem-server: peer %d joined%s\n", id, bad ? ", and failed" : "");
	fflush(stdout);
	if (bad)
		drop(id);
}

static void usage(FILE *o)
{
	fprintf(o, "usage: smartio-ivshmem-server --socket PATH --shm FILE [options]\n"
		"Serve QEMU's ivshmem-doorbell: hand each guest that connects to PATH the\n"
		"shared memory FILE and its peers' interrupt vectors. Runs until SIGINT or\n"
		"SIGTERM.\n\n"
		"  --socket PATH     the unix socket QEMU's ivshmem-doorbell chardev connects to\n"
		"  --shm FILE        the file of shared memory to serve\n"
		"  --vectors N       interrupt vectors per peer, 1..%d (default 1)\n"
		"  --ready-file F    write our pid to F once listening\n"
		PROG_BACKGROUND_HELP
		PROG_HELP
		"Exit status: 0 stopped, 1 failed, 2 usage error.\n", MAX_VECTORS);
}

/* Serve until stopped: accept peers, drop the ones that hang up. */
static void serve(int lfd)
{
	while (!prog_stop) {
		struct pollfd pfd[MAX_PEERS + 1];
		int map[MAX_PEERS + 1], n = 0;

		pfd[n].fd = lfd;
		pfd[n++].events = POLLIN;
		for (int i = 0; i < MAX_PEERS; i++)
			if (peers[i].sock >= 0) {
				map[n] = i;
				pfd[n].fd = peers[i].sock;
				pfd[n++].events = POLLIN;	/* peers send nothing: only hangups */
			}
		if (poll(pfd, (nfds_t)n, 1000) < 0) {
			if (errno == EINTR)
				continue;
			prog_fail("poll: %s", strerror(errno));
			break;
		}
		for (int k = 1; k < n; k++) {
			char b;
			if (pfd[k].revents && recv(pfd[k].fd, &b, 1, MSG_DONTWAIT) <= 0)
				drop(map[k]);
		}
		if (pfd[0].revents & POLLIN) {
			int c = accept4(lfd, NULL, NULL, SOCK_CLOEXEC);
			if (c >= 0)
				join(c);
		}
	}
	for (int i = 0; i < MAX_PEERS; i++)
		if (peers[i].sock >= 0)
			drop(i);
}

static int run(const char *path, const char *shm, const char *ready)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	struct stat st;
	char status[256];
	int lfd;

	if (strlen(path) >= sizeof(sa.sun_path))
		return prog_fail("socket path %s is too long", path);
	shm_fd = open(shm, O_RDWR | O_CLOEXEC);
	if (shm_fd < 0 || fstat(shm_fd, &st) || !S_ISREG(st.st_mode) || !st.st_size)
		return prog_fail("%s is no file of shared memory to serve: %s", shm,
				 shm_fd < 0 ? strerror(errno) : "empty or not a plain file");
	for (int i = 0; i < MAX_PEERS; i++) {
		peers[i].sock = -1;
		for (int v = 0; v < MAX_VECTORS; v++)
			peers[i].ev[v] = -1;
	}
	strcpy(sa.sun_path, path);
	unlink(path);
	lfd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (lfd < 0 || bind(lfd, (struct sockaddr *)&sa, sizeof(sa)) || listen(lfd, 8))
		return prog_fail("cannot listen on %s: %s", path, strerror(errno));
	prog_catch_stop();
	signal(SIGPIPE, SIG_IGN);
	snprintf(status, sizeof(status), "serving %s (%lld bytes) on %s, %d vector(s) per peer",
		 shm, (long long)st.st_size, path, nvec);
	printf("smartio-ivshmem-server: %s\n", status);
	fflush(stdout);
	if (prog_ready(ready, getpid(), status)) {
		close(lfd);
		unlink(path);
		return PROG_FAIL;
	}
	serve(lfd);
	prog_notify_stopping();
	close(lfd);
	unlink(path);
	return PROG_OK;
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "socket", required_argument, 0, 's' }, { "shm", required_argument, 0, 'm' },
		{ "vectors", required_argument, 0, 'n' }, { "ready-file", required_argument, 0, 'r' },
		PROG_BACKGROUND_LONGOPT, PROG_LONGOPTS, { 0, 0, 0, 0 }
	};
	const char *path = NULL, *shm = NULL, *ready = NULL;
	bool background = false;
	int opt;

	prog_init("smartio-ivshmem-server", usage);
	while ((opt = prog_getopt(argc, argv, "h", opts)) != -1) {
		switch (opt) {
		case 's': path = optarg; break;
		case 'm': shm = optarg; break;
		case 'r': ready = optarg; break;
		case PROG_OPT_BACKGROUND: background = true; break;
		case 'n': nvec = (int)prog_u64("--vectors", optarg, 1, MAX_VECTORS); break;
		}
	}
	prog_no_args(argc, argv);
	if (!path || !shm)
		prog_usage_error("--socket PATH and --shm FILE are needed");
	if (background)
		prog_background();	/* the parent returns once we listen */
	return run(path, shm, ready);
}
