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

/* Close the @n files of @fds (-1: none). */
static void close_fds(int *fds, int n)
{
	for (int k = 0; k < n; k++)
		if (fds[k] >= 0)
			close(fds[k]);
}

/* Send @req, receive the answer and its files, adapter 0's first (-1: none came). */
static int ask(int sk, const struct ntb_req *req, struct ntb_rep *rep, int *fds)
{
	char cbuf[CMSG_SPACE(SIO_MAX_ADAPTERS * sizeof(int))];
	struct iovec iov = { .iov_base = rep, .iov_len = sizeof(*rep) };
	struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = cbuf,
			     .msg_controllen = sizeof(cbuf) };
	struct cmsghdr *c;
	ssize_t n;

	for (int k = 0; k < SIO_MAX_ADAPTERS; k++)
		fds[k] = -1;
	if (send(sk, req, sizeof(*req), MSG_NOSIGNAL) != sizeof(*req))
		return -errno;
	n = recvmsg(sk, &mh, MSG_CMSG_CLOEXEC);
	if (n < 0)
		return -errno;
	for (c = CMSG_FIRSTHDR(&mh); c; c = CMSG_NXTHDR(&mh, c))
		if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_RIGHTS) {
			size_t k = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);

			memcpy(fds, CMSG_DATA(c), (k < SIO_MAX_ADAPTERS ? k : SIO_MAX_ADAPTERS) * sizeof(int));
		}
	if (n != sizeof(*rep) || rep->magic != NTB_PROTO_MAGIC) {
		close_fds(fds, SIO_MAX_ADAPTERS);
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
 * answer in @rep, the files it passed in @fds (SIO_MAX_ADAPTERS, -1: none).
 * Return 0, -EHOSTDOWN (no service, said naming @path), or the socket's
 * -errno.
 */
static int service_ask(const char *spec, int fake_port, const struct ntb_req *req,
		       struct ntb_rep *rep, int *fds, char *path, size_t len)
{
	int sk, ret;

	if ((ret = sio__ntbdev_service_path(spec, fake_port, path, len)))
		return ret;
	if ((sk = connect_service(path)) < 0)
		return sio__err(EHOSTDOWN, "ntb: no node service on this kernel%s (%s: %s): start `smartio ntb serve`, which holds the NTB for the fabric's processes",
				fake_port >= 0 ? fake_node(fake_port) : "", path, strerror(-sk));
	ret = ask(sk, req, rep, fds);
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
	int fds[SIO_MAX_ADAPTERS], ret;
	struct ntb_rep rep;
	char path[PATH_MAX];

	if (sv) {	/* the service itself: its own board */
		if (!sio__ntb_service_dev(sv, &node, NULL))
			return -ENODEV;
		*out = node.board;
		sio__ntb_service_note(sv, note, len);
		return 0;
	}
	ret = service_ask(spec, fake_port, &req, &rep, fds, path, sizeof(path));
	if (!ret)
		close_fds(fds, SIO_MAX_ADAPTERS);
	if (ret || rep.err)
		return ret ? ret : -rep.err;
	*out = rep.node.board;
	rep.msg[sizeof(rep.msg) - 1] = 0;
	snprintf(note, len, "%s", rep.msg);
	return 0;
}

/*
 * The further NTBs the service passed (@fds[1] on), as @rep names them,
 * into @more; one that cannot be taken is left out (NULL), the path
 * through its adapter then taking adapter 0's NTB.
 */
static void adopt_more(const struct ntb_rep *rep, int *fds, struct ntbdev **more)
{
	for (int a = 1; a < SIO_MAX_ADAPTERS; a++) {
		char what[sizeof(rep->more[0])];

		more[a - 1] = NULL;
		if (fds[a] < 0 || a >= rep->adapters)
			continue;
		memcpy(what, rep->more[a - 1], sizeof(what));
		what[sizeof(what) - 1] = 0;
		if (sio__ntbdev_adopt(fds[a], rep->node.fake_port, what, &more[a - 1]))
			more[a - 1] = NULL;
		else
			fds[a] = -1;
	}
}

int sio__ntb_node_connect(const char *spec, int fake_port, uint32_t op, const char *name,
			  struct ntbdev **dev, struct ntbdev **more, struct ntb_node *node,
			  uint32_t *gen)
{
	struct ntb_req req = { .magic = NTB_PROTO_MAGIC, .op = op };
	struct ntb_service *sv = sio__ntb_service_here();
	int fds[SIO_MAX_ADAPTERS], ret;
	struct ntb_rep rep;
	char path[PATH_MAX];

	for (int a = 1; more && a < SIO_MAX_ADAPTERS; a++)
		more[a - 1] = NULL;
	if (sv && op == NTB_OP_HELLO) {	/* the service itself joins its fabric */
		*dev = sio__ntb_service_dev(sv, node, more);
		return *dev ? 0 : sio__err(ENODEV, "ntb: the node service holds no NTB yet");
	}
	snprintf(req.name, sizeof(req.name), "%s", name ? name : "");
	if ((ret = service_ask(spec, fake_port, &req, &rep, fds, path, sizeof(path))))
		return ret;
	if (rep.err) {
		close_fds(fds, SIO_MAX_ADAPTERS);
		rep.msg[sizeof(rep.msg) - 1] = 0;
		return sio__err(rep.err, "%s", rep.msg);
	}
	if (fds[0] < 0) {
		close_fds(fds, SIO_MAX_ADAPTERS);
		return sio__err(EPROTO, "ntb: the node service at %s passed no NTB file", path);
	}
	rep.node.what[sizeof(rep.node.what) - 1] = 0;
	if ((ret = sio__ntbdev_adopt(fds[0], rep.node.fake_port, rep.node.what, dev))) {
		close_fds(fds, SIO_MAX_ADAPTERS);
		return ret;
	}
	(*dev)->sided = rep.node.sided;
	if (more)
		adopt_more(&rep, fds, more);
	close_fds(fds + 1, SIO_MAX_ADAPTERS - 1);
	*node = rep.node;
	if (gen)
		*gen = rep.gen;
	return 0;
}
