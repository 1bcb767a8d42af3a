/* SPDX-License-Identifier: MIT */
#ifndef SIO_VFIO_PROTO_H
#define SIO_VFIO_PROTO_H

/*
 * What a borrower asks a vfio lender over its unix socket (SOCK_SEQPACKET,
 * one request, one reply). BAR replies carry the vfio device fd by
 * SCM_RIGHTS, so the borrower mmaps the BAR itself and MMIO has no software
 * in between. Mappings belong to the connection: when it closes (exit or
 * crash) the lender unmaps them all.
 */
#include <errno.h>
#include <stdint.h>
#include <string.h>
#include <sys/socket.h>
#include <smartio/irq.h>

enum sio_vfio_op {
	SIO_VFIO_OP_BAR = 1,	/* @bar -> device fd, region offset, size */
	SIO_VFIO_OP_MAP,	/* segment (@node, @seg) -> @iova; or, with @bar >= 0,
				 * BAR @bar of device @seg -> its bus address */
	SIO_VFIO_OP_UNMAP,	/* undo the MAP of the same (@node, @seg, @bar) */
	SIO_VFIO_OP_IRQ,	/* enable @size vectors of kinds @seg (SIO_IRQ_F bits), one
				 * eventfd each by SCM_RIGHTS -> kind in @offset; @size 0
				 * disables. The connection holds them until it closes. */
	SIO_VFIO_OP_IRQ_UNMASK,	/* re-arm INTx once the device is serviced */
};

struct sio_vfio_req {
	uint32_t op;
	int32_t bar;
	int32_t node;
	uint32_t seg;
	uint64_t size;
	uint64_t iova;
	uint64_t mask;		/* MAP: the device's DMA mask (0: all 64 bits) */
};

struct sio_vfio_rep {
	int32_t status;		/* 0 or -errno */
	uint32_t pad;
	uint64_t offset;
	uint64_t size;
	uint64_t iova;
	char msg[320];		/* the lender's error message */
};

/*
 * Send the message @buf of @len bytes on @sock with @nfds (0..SIO_IRQ_MAX_VECS)
 * file descriptors @fds beside it (SCM_RIGHTS): 0, or -errno (a short send
 * is -EPIPE). Both sides of the protocol pass descriptors: the lender a
 * BAR's, a borrower its interrupt eventfds.
 */
static inline int sio__send_fds(int sock, const void *buf, size_t len, const int *fds, int nfds)
{
	char cbuf[CMSG_SPACE(SIO_IRQ_MAX_VECS * sizeof(int))] = { 0 };
	struct iovec iov = { (void *)buf, len };
	struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1 };
	ssize_t n;

	if (nfds > 0) {
		struct cmsghdr *cm;

		mh.msg_control = cbuf;
		mh.msg_controllen = CMSG_SPACE((size_t)nfds * sizeof(int));
		cm = CMSG_FIRSTHDR(&mh);
		cm->cmsg_level = SOL_SOCKET;
		cm->cmsg_type = SCM_RIGHTS;
		cm->cmsg_len = CMSG_LEN((size_t)nfds * sizeof(int));
		memcpy(CMSG_DATA(cm), fds, (size_t)nfds * sizeof(int));
	}
	n = sendmsg(sock, &mh, MSG_NOSIGNAL);
	if (n < 0)
		return -errno;
	return (size_t)n == len ? 0 : -EPIPE;
}

#endif
