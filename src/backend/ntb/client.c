/* SPDX-License-Identifier: MIT */
/*
 * A process of an ntb fabric reaches its kernel's node service (serve.c):
 * one request over the service's unix socket, one answer with the
 * service's open NTB file (SCM_RIGHTS), through which the process maps the
 * node's memory and the peers' windows. In the service's own process the
 * service answers directly.
 */
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/un.h>
#include <unistd.h>

#include "ntb.h"

/* Send @req, receive the answer and its fd (-1: none came). */
static int ask(int sk, const struct ntb_req *req, struct ntb_rep *rep, int *fd)
{
	char cbuf[CMSG_SPACE(sizeof(int))];
	struct iovec iov = { .iov_base = rep, .iov_len = sizeof(*rep) };
	struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = cbuf,
			     .msg_controllen = sizeof(cbuf) };
	struct cmsghdr *c;
	ssize_t n;

	*fd = -1;
	if (send(sk, req, sizeof(*req), MSG_NOSIGNAL) != sizeof(*req))
		return -errno;
	n = recvmsg(sk, &mh, MSG_CMSG_CLOEXEC);
	if (n < 0)
		return -errno;
	for (c = CMSG_FIRSTHDR(&mh); c; c = CMSG_NXTHDR(&mh, c))
		if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_RIGHTS)
			memcpy(fd, CMSG_DATA(c), sizeof(int));
	if (n != sizeof(*rep) || rep->magic != NTB_PROTO_MAGIC) {
		if (*fd >= 0)
			close(*fd);
		*fd = -1;
		return -EPROTO;
	}
	return 0;
}

static int connect_service(const char *path)
{
	struct sockaddr_un a = { .sun_family = AF_UNIX };
	struct timeval tv = { 30, 0 };	/* the service answers at once, or is stuck */
	int sk = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);

	if (sk < 0)
		return -errno;
	if (strlen(path) >= sizeof(a.sun_path))
		return -ENAMETOOLONG;
	memcpy(a.sun_path, path, strlen(path) + 1);
	setsockopt(sk, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	if (connect(sk, (struct sockaddr *)&a, sizeof(a))) {
		int e = errno;
		close(sk);
		return -e;
	}
	return sk;
}

static const char *fake_node(int port)
{
	static __thread char buf[64];

	snprintf(buf, sizeof(buf), " for node %d (the fake's port %d)", port, port);
	return buf;
}

/*
 * A process's own kernel is not rung by its doorbell: where its node
 * service answers a request of the process (an own window translated
 * outbound), the process wakes it through its socket instead of waiting
 * for its next tick.
 */
void sio__ntb_node_poke(int fake_port)
{
	struct ntb_req req = { .magic = NTB_PROTO_MAGIC, .op = NTB_OP_POKE };
	char path[PATH_MAX];
	int sk;

	if (sio__ntb_service_here() ||
	    sio__ntbdev_service_path(NULL, fake_port, path, sizeof(path)) ||
	    (sk = connect_service(path)) < 0)
		return;	/* its tick answers all the same */
	send(sk, &req, sizeof(req), MSG_NOSIGNAL);
	close(sk);
}

/*
 * Ask this kernel's node service @req over a connection of its own; its
 * answer in @rep, a file it passed in @fd (-1: none). Return 0, -EHOSTDOWN
 * (no service, said naming @path), or the socket's -errno.
 */
static int service_ask(const char *spec, int fake_port, const struct ntb_req *req,
		       struct ntb_rep *rep, int *fd, char *path, size_t len)
{
	int sk, ret;

	if ((ret = sio__ntbdev_service_path(spec, fake_port, path, len)))
		return ret;
	if ((sk = connect_service(path)) < 0)
		return sio__err(EHOSTDOWN, "ntb: no node service on this kernel%s (%s: %s): start `smartio ntb serve`, which holds the NTB for the fabric's processes",
				fake_port >= 0 ? fake_node(fake_port) : "", path, strerror(-sk));
	ret = ask(sk, req, rep, fd);
	close(sk);
	return ret ? sio__err(-ret, "ntb: the node service at %s did not answer: %s", path,
			      strerror(-ret)) : 0;
}

/*
 * Where the NTB has message registers and no scratchpads, a process holds
 * the words its node service had heard when it joined (a copy); a peer's
 * words missing then (its link came back a moment before, and they are on
 * their way) come from here while the process waits for them. The answer
 * carries the service's note too: a process cannot see the node's other
 * NTBs, and the service can (why no take-over comes).
 */
int sio__ntb_node_board(const char *spec, int fake_port, struct ntb_board *out, char *note,
			size_t len)
{
	struct ntb_req req = { .magic = NTB_PROTO_MAGIC, .op = NTB_OP_BOARD };
	struct ntb_service *sv = sio__ntb_service_here();
	struct ntb_node node;
	struct ntb_rep rep;
	char path[PATH_MAX];
	int fd, ret;

	if (sv) {	/* the service itself: its own board */
		if (!sio__ntb_service_dev(sv, &node))
			return -ENODEV;
		*out = node.board;
		sio__ntb_service_note(sv, note, len);
		return 0;
	}
	ret = service_ask(spec, fake_port, &req, &rep, &fd, path, sizeof(path));
	if (!ret && fd >= 0)
		close(fd);
	if (ret || rep.err)
		return ret ? ret : -rep.err;
	*out = rep.node.board;
	rep.msg[sizeof(rep.msg) - 1] = 0;
	snprintf(note, len, "%s", rep.msg);
	return 0;
}

int sio__ntb_node_connect(const char *spec, int fake_port, uint32_t op, const char *name,
		     struct ntbdev **dev, struct ntb_node *node, uint32_t *gen)
{
	struct ntb_req req = { .magic = NTB_PROTO_MAGIC, .op = op };
	struct ntb_service *sv = sio__ntb_service_here();
	struct ntb_rep rep;
	char path[PATH_MAX];
	int fd, ret;

	if (sv && op == NTB_OP_HELLO) {	/* the service itself joins its fabric */
		*dev = sio__ntb_service_dev(sv, node);
		return *dev ? 0 : sio__err(ENODEV, "ntb: the node service holds no NTB yet");
	}
	snprintf(req.name, sizeof(req.name), "%s", name ? name : "");
	if ((ret = service_ask(spec, fake_port, &req, &rep, &fd, path, sizeof(path))))
		return ret;
	if (rep.err) {
		if (fd >= 0)
			close(fd);
		rep.msg[sizeof(rep.msg) - 1] = 0;
		return sio__err(rep.err, "%s", rep.msg);
	}
	if (fd < 0)
		return sio__err(EPROTO, "ntb: the node service at %s passed no NTB file", path);
	rep.node.what[sizeof(rep.node.what) - 1] = 0;
	if ((ret = sio__ntbdev_adopt(fd, rep.node.fake_port, rep.node.what, dev))) {
		close(fd);
		return ret;
	}
	(*dev)->sided = rep.node.sided;
	*node = rep.node;
	if (gen)
		*gen = rep.gen;
	return 0;
}
