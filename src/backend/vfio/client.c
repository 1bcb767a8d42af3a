/* SPDX-License-Identifier: MIT */
/*
 * The vfio and uio device backends, borrower's side: the core calls these
 * ops for devices registered with SIO_BACKEND_VFIO or SIO_BACKEND_UIO (see
 * core/backend.h). Both are served by the same lender (lend.h); requests go
 * to its socket, and the BAR is mmapped here from the fd the lender passes
 * (the vfio device fd, or sysfs's resourceN), so MMIO (and doorbells) has
 * nothing in between. Control path only.
 */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "internal.h"
#include "proto.h"
#include "vfio.h"

struct vfio_conn {
	int fd;
	pthread_mutex_t lock;	/* one request in flight per connection */
};

static int conn_get(struct sio_device *dev, struct vfio_conn **out)
{
	struct vfio_conn *c = dev->backend_priv;
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	const char *svc;

	if (c) {
		*out = c;
		return 0;
	}
	svc = sio__device_svc(dev);
	if (!svc || !svc[0])
		return sio__err(EINVAL, "%s: device %u has no lender socket", dev->ops->name,
				dev->id);
	if (strlen(svc) >= sizeof(sa.sun_path))
		return sio__err(ENAMETOOLONG, "%s: lender socket path too long: %s",
				dev->ops->name, svc);
	c = calloc(1, sizeof(*c));
	if (!c)
		return sio__err(ENOMEM, "%s: out of memory", dev->ops->name);
	c->fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
	if (c->fd < 0) {
		free(c);
		return sio__err(errno, "%s: socket: %s", dev->ops->name, strerror(errno));
	}
	strcpy(sa.sun_path, svc);
	if (connect(c->fd, (struct sockaddr *)&sa, sizeof(sa))) {
		int e = errno;

		close(c->fd);
		free(c);
		return sio__err(e == ENOENT || e == ECONNREFUSED ? ENODEV : e,
				"%s: cannot reach the lender of device %u at %s: %s "
				"(is `smartio %s lend` running?)", dev->ops->name, dev->id, svc,
				strerror(e), dev->ops->name);
	}
	pthread_mutex_init(&c->lock, NULL);
	dev->backend_priv = c;
	*out = c;
	return 0;
}

/* Send @rq with @nsend fds @send, wait for the reply (and an fd if @fdp). */
static int call_fds(struct sio_device *dev, const struct sio_vfio_req *rq, const int *send,
		    int nsend, struct sio_vfio_rep *rp, int *fdp)
{
	char cbuf[CMSG_SPACE(sizeof(int))];
	struct iovec iov = { rp, sizeof(*rp) };
	struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1,
			     .msg_control = cbuf, .msg_controllen = sizeof(cbuf) };
	struct vfio_conn *c = NULL;
	ssize_t n;
	int rc = conn_get(dev, &c);

	if (rc)
		return rc;
	pthread_mutex_lock(&c->lock);
	rc = sio__send_fds(c->fd, rq, sizeof(*rq), send, nsend);
	if (rc) {
		rc = sio__err(ENOLINK, "%s: the lender of device %u is gone: %s", dev->ops->name,
			      dev->id, strerror(-rc));
		goto out;
	}
	do
		n = recvmsg(c->fd, &mh, MSG_CMSG_CLOEXEC);
	while (n < 0 && errno == EINTR);
	if (n != sizeof(*rp)) {
		rc = sio__err(ENOLINK, "%s: the lender of device %u is gone: it closed the connection",
			      dev->ops->name, dev->id);
		goto out;
	}
	if (fdp) {
		struct cmsghdr *cm = CMSG_FIRSTHDR(&mh);

		*fdp = -1;
		if (cm && cm->cmsg_level == SOL_SOCKET && cm->cmsg_type == SCM_RIGHTS)
			memcpy(fdp, CMSG_DATA(cm), sizeof(int));
	}
	rp->msg[sizeof(rp->msg) - 1] = 0;
	rc = rp->status ? sio__err(-rp->status, "%s", rp->msg) : 0;
out:
	pthread_mutex_unlock(&c->lock);
	return rc;
}

static int call(struct sio_device *dev, const struct sio_vfio_req *rq,
		struct sio_vfio_rep *rp, int *fdp)
{
	return call_fds(dev, rq, NULL, 0, rp, fdp);
}

static int vfio_bar_map(struct sio_device *dev, int bar, void **vaddr, uint64_t *size)
{
	struct sio_vfio_req rq = { .op = SIO_VFIO_OP_BAR, .bar = bar };
	struct sio_vfio_rep rp;
	int fd = -1, rc = call(dev, &rq, &rp, &fd);
	void *p;

	if (rc)
		return rc;
	if (fd < 0)
		return sio__err(EPROTO, "%s: the lender sent no fd for BAR %d", dev->ops->name, bar);
	p = mmap(NULL, rp.size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, rp.offset);
	rc = errno;
	close(fd);	/* the mapping keeps the device open */
	if (p == MAP_FAILED)
		return sio__err(rc, "%s: mmap of BAR %d (%llu bytes): %s", dev->ops->name, bar,
				(unsigned long long)rp.size, strerror(rc));
	*vaddr = p;
	*size = rp.size;
	return 0;
}

/* The lender's key for a segment: (node, id), or a BAR of a device. */
static int seg_key(struct sio_segment *seg, struct sio_vfio_req *rq)
{
	struct sio_segment_info si;
	int rc = sio_segment_info(seg, &si);

	if (rc)
		return rc;
	rq->node = si.node;
	rq->seg = si.id;
	rq->size = si.size;
	rq->bar = -1;
	if (si.kind == SIO_SEG_BAR) {
		rq->seg = (uint32_t)si.device;
		rq->bar = si.bar;
	}
	return 0;
}

static int vfio_dma_map(struct sio_device *dev, struct sio_segment *seg, uint64_t *iova)
{
	struct sio_vfio_req rq = { .op = SIO_VFIO_OP_MAP, .mask = dev->dma_mask };
	struct sio_vfio_rep rp;
	int rc = seg_key(seg, &rq);

	if (!rc)
		rc = call(dev, &rq, &rp, NULL);
	if (!rc)
		*iova = rp.iova;
	return rc;
}

/* The lender finds the mapping by segment. */
static int vfio_dma_unmap(struct sio_device *dev, struct sio_segment *seg)
{
	struct sio_vfio_req rq = { .op = SIO_VFIO_OP_UNMAP };
	struct sio_vfio_rep rp;
	int rc = seg_key(seg, &rq);

	return rc ? rc : call(dev, &rq, &rp, NULL);
}

static void vfio_release(struct sio_device *dev)
{
	struct vfio_conn *c = dev->backend_priv;

	if (!c)
		return;
	/* Closing the socket makes the lender unmap all we mapped. */
	close(c->fd);
	pthread_mutex_destroy(&c->lock);
	free(c);
	dev->backend_priv = NULL;
}

/*
 * Interrupts: eventfds made here, handed to the lender, which points the
 * function's vectors at them (VFIO_DEVICE_SET_IRQS); the kernel signals
 * them directly, with nothing in between. They go when the connection does.
 */
static int vfio_irq_enable(struct sio_device *dev, unsigned int kinds, int nvec, int *fds)
{
	struct sio_vfio_req rq = { .op = SIO_VFIO_OP_IRQ, .seg = kinds, .size = (uint64_t)nvec };
	struct sio_vfio_rep rp;
	int rc = 0;

	for (int i = 0; i < nvec && !rc; i++)
		if ((fds[i] = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC)) < 0)
			rc = sio__err(errno, "vfio: eventfd: %s", strerror(errno));
	if (!rc)
		rc = call_fds(dev, &rq, fds, nvec, &rp, NULL);
	if (rc) {
		for (int i = 0; i < nvec; i++)
			if (fds[i] >= 0)
				close(fds[i]);
		return rc;
	}
	return (int)rp.offset;
}

static void vfio_irq_disable(struct sio_device *dev)
{
	struct sio_vfio_req rq = { .op = SIO_VFIO_OP_IRQ };
	struct sio_vfio_rep rp;

	call(dev, &rq, &rp, NULL);	/* a lender that is gone has let them go */
	for (int i = 0; i < dev->irq_nvec; i++)
		close(dev->irq_fd[i]);
}

static int vfio_irq_unmask(struct sio_device *dev, int vec)
{
	struct sio_vfio_req rq = { .op = SIO_VFIO_OP_IRQ_UNMASK };
	struct sio_vfio_rep rp;

	(void)vec;
	return dev->irq_kind == SIO_IRQ_INTX ? call(dev, &rq, &rp, NULL) : 0;
}

const struct sio_device_ops sio__vfio_device_ops = {
	.name = "vfio",
	.host_local = true,
	.bar_map = vfio_bar_map,
	.dma_map = vfio_dma_map,
	.dma_unmap = vfio_dma_unmap,
	.release = vfio_release,
	.irq_enable = vfio_irq_enable,
	.irq_disable = vfio_irq_disable,
	.irq_unmask = vfio_irq_unmask,
};

/* The same borrower's side: only the lender differs (uio/uio_dev.c). */
const struct sio_device_ops sio__uio_device_ops = {
	.name = "uio",
	.host_local = true,
	.bar_map = vfio_bar_map,
	.dma_map = vfio_dma_map,
	.dma_unmap = vfio_dma_unmap,
	.release = vfio_release,
};
