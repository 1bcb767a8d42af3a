// SPDX-License-Identifier: MIT
/*
 * The vfio lender: holds a function bound to vfio-pci, registers it in the
 * fabric's registry, and serves borrowers over a unix socket: BAR access (the
 * device fd, passed by SCM_RIGHTS) and DMA mappings of segments through the
 * IOMMU. Each connection's mappings are undone when it closes, so a crashed
 * borrower leaves nothing pinned or mapped; if the lender itself dies, closing
 * its vfio fds tears down every mapping in the kernel.
 */
#include <errno.h>
#include <linux/vfio.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "internal.h"
#include "proto.h"
#include "vfio.h"

#define MAX_CONN	64

struct mapping {
	int32_t node, bar;	/* the key: segment (node, id), or BAR of device id */
	uint32_t id;
	uint64_t iova, len;
	struct sio_segment *seg;
	bool iommu;		/* false for the device's own BAR (the CMB) */
};

struct conn {
	int fd;
	struct mapping *maps;
	int nmaps, cap;
};

struct lender {
	struct sio_fabric *f;
	struct sio_vfio_dev dev;
	struct sio_devreg *reg;
	uint32_t id;
	char svc[108];
	struct conn conns[MAX_CONN];
	FILE *log;
	volatile void *bar0;	/* mapped here when exported to other kernels */
	uint64_t bar0_size;
	bool exported;
};

static __attribute__((format(printf, 2, 3))) void say(struct lender *l, const char *fmt, ...)
{
	va_list ap;

	if (!l->log)
		return;
	va_start(ap, fmt);
	vfprintf(l->log, fmt, ap);
	va_end(ap);
	fflush(l->log);
}

static void unmap_one(struct lender *l, struct mapping *m)
{
	if (m->iommu && sio_vfio_dma_unmap(&l->dev, m->iova, m->len))
		say(l, "vfio lender: %s\n", sio_errmsg());
	if (m->seg) {
		sio_segment_unmap(m->seg);
		sio_segment_close(m->seg);
	}
}

static void conn_close(struct lender *l, struct conn *c)
{
	for (int i = 0; i < c->nmaps; i++)
		unmap_one(l, &c->maps[i]);
	if (c->nmaps)
		say(l, "vfio lender: connection closed, %d mapping(s) released\n", c->nmaps);
	free(c->maps);
	close(c->fd);
	memset(c, 0, sizeof(*c));
	c->fd = -1;
}

static struct mapping *find(struct conn *c, const struct sio_vfio_req *rq)
{
	for (int i = 0; i < c->nmaps; i++)
		if (c->maps[i].node == rq->node && c->maps[i].id == rq->seg &&
		    c->maps[i].bar == rq->bar)
			return &c->maps[i];
	return NULL;
}

static int map_bar(struct lender *l, const struct sio_vfio_req *rq, struct mapping *m)
{
	/*
	 * A BAR of this very device (the CMB): the controller decodes its own
	 * BAR address before any IOMMU, so the bus address is the BAR's.
	 */
	if (rq->seg != l->id)
		return sio__err(ENOTSUP, "vfio: device %u cannot DMA to BAR %d of device %u "
				"(peer-to-peer between vfio devices is not supported)",
				l->id, rq->bar, rq->seg);
	if (rq->bar < 0 || rq->bar > 5 || !l->dev.region[rq->bar].size)
		return sio__err(ENOENT, "%s has no BAR %d", l->dev.bdf, rq->bar);
	m->len = l->dev.region[rq->bar].size;
	return sio_vfio_bar_bus(&l->dev, rq->bar, &m->iova);
}

static int map_seg(struct lender *l, const struct sio_vfio_req *rq, struct mapping *m)
{
	struct sio_segment_info si;
	void *va;
	int rc = sio_segment_connect(l->f, rq->node, rq->seg, &m->seg);

	if (rc)
		return rc;
	rc = sio_segment_info(m->seg, &si);
	if (!rc && si.kind != SIO_SEG_RAM)
		rc = sio__err(ENOTSUP, "vfio: segment %u of node %d is not host memory",
			      rq->seg, rq->node);
	/* Map the same shared pages here and pin them for the device. */
	if (!rc)
		rc = sio_segment_map(m->seg, &va);
	if (rc)
		goto fail;
	m->len = (si.size + 4095) & ~4095ull;
	rc = sio_vfio_dma_map(&l->dev, va, m->len, &m->iova);
	if (rc) {
		sio_segment_unmap(m->seg);
		goto fail;
	}
	m->iommu = true;
	return 0;
fail:
	sio_segment_close(m->seg);
	m->seg = NULL;
	return rc;
}

static int do_map(struct lender *l, struct conn *c, const struct sio_vfio_req *rq,
		  struct sio_vfio_rep *rp)
{
	struct mapping m = { .node = rq->node, .id = rq->seg, .bar = rq->bar }, *old;
	int rc;

	old = find(c, rq);
	if (old) {		/* mapping twice gives the same address */
		rp->iova = old->iova;
		rp->size = old->len;
		return 0;
	}
	if (c->nmaps == c->cap) {
		int nc = c->cap ? 2 * c->cap : 8;
		void *p = realloc(c->maps, nc * sizeof(*c->maps));

		if (!p)
			return sio__err(ENOMEM, "vfio lender: out of memory");
		c->maps = p;
		c->cap = nc;
	}
	rc = rq->bar >= 0 ? map_bar(l, rq, &m) : map_seg(l, rq, &m);
	if (rc)
		return rc;
	c->maps[c->nmaps++] = m;
	rp->iova = m.iova;
	rp->size = m.len;
	return 0;
}

static int do_unmap(struct lender *l, struct conn *c, const struct sio_vfio_req *rq)
{
	struct mapping *m = find(c, rq);

	if (!m) {
		if (rq->bar >= 0)
			return sio__err(ENOENT, "BAR %d of device %u is not mapped for device %u",
					rq->bar, rq->seg, l->id);
		return sio__err(ENOENT, "segment %u of node %d is not mapped for device %u",
				rq->seg, rq->node, l->id);
	}
	unmap_one(l, m);
	*m = c->maps[--c->nmaps];
	return 0;
}

static int send_rep(int fd, struct sio_vfio_rep *rp, int pass_fd)
{
	char cbuf[CMSG_SPACE(sizeof(int))] = { 0 };
	struct iovec iov = { rp, sizeof(*rp) };
	struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1 };

	if (pass_fd >= 0) {
		struct cmsghdr *cm;

		mh.msg_control = cbuf;
		mh.msg_controllen = sizeof(cbuf);
		cm = CMSG_FIRSTHDR(&mh);
		cm->cmsg_level = SOL_SOCKET;
		cm->cmsg_type = SCM_RIGHTS;
		cm->cmsg_len = CMSG_LEN(sizeof(int));
		memcpy(CMSG_DATA(cm), &pass_fd, sizeof(int));
	}
	return sendmsg(fd, &mh, MSG_NOSIGNAL) == (ssize_t)sizeof(*rp) ? 0 : -errno;
}

/* One request; false when the connection should close. */
static bool serve(struct lender *l, struct conn *c)
{
	struct sio_vfio_req rq;
	struct sio_vfio_rep rp = { 0 };
	ssize_t n = recv(c->fd, &rq, sizeof(rq), 0);
	int pass = -1;

	if (n <= 0)
		return false;
	if (n != sizeof(rq)) {
		rp.status = sio__err(EPROTO, "vfio lender: malformed request of %zd bytes", n);
	} else if (rq.op == SIO_VFIO_OP_BAR) {
		if (rq.bar < 0 || rq.bar > 5 || !l->dev.region[rq.bar].size) {
			rp.status = sio__err(ENOENT, "%s has no BAR %d", l->dev.bdf, rq.bar);
		} else if (!(l->dev.region[rq.bar].flags & VFIO_REGION_INFO_FLAG_MMAP)) {
			rp.status = sio__err(ENOTSUP, "%s BAR %d cannot be mmapped", l->dev.bdf, rq.bar);
		} else {
			rp.offset = l->dev.region[rq.bar].offset;
			rp.size = l->dev.region[rq.bar].size;
			pass = l->dev.fd;
		}
	} else if (rq.op == SIO_VFIO_OP_MAP) {
		rp.status = do_map(l, c, &rq, &rp);
	} else if (rq.op == SIO_VFIO_OP_UNMAP) {
		rp.status = do_unmap(l, c, &rq);
	} else {
		rp.status = sio__err(EPROTO, "vfio lender: unknown request %u", rq.op);
	}
	if (rp.status)
		snprintf(rp.msg, sizeof(rp.msg), "%s", sio_errmsg());
	return send_rep(c->fd, &rp, pass) == 0;
}

static int listen_on(struct lender *l)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	int fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);

	if (fd < 0)
		return sio__err(errno, "vfio lender: socket: %s", strerror(errno));
	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", l->svc);
	unlink(l->svc);		/* a stale socket from a lender that crashed */
	if (bind(fd, (struct sockaddr *)&sa, sizeof(sa)) || listen(fd, 16)) {
		int e = errno;

		close(fd);
		return sio__err(e, "vfio lender: cannot listen on %s: %s", l->svc, strerror(e));
	}
	return fd;
}

static int describe(struct lender *l, struct sio_device_desc *d, char *name, size_t len)
{
	uint32_t id, cls;
	int rc = sio_vfio_cfg_read(&l->dev, 0x00, &id, 4);

	if (!rc)
		rc = sio_vfio_cfg_read(&l->dev, 0x08, &cls, 4);
	if (rc)
		return rc;
	memset(d, 0, sizeof(*d));
	d->vendor = id & 0xffff;
	d->device = id >> 16;
	d->class_code = cls >> 8;
	for (int b = 0; b < SIO_MAX_BARS; b++) {
		d->bar_size[b] = l->dev.region[b].size;
		if (d->bar_size[b])
			d->nbars = b + 1;
	}
	snprintf(name, len, "vfio %s", l->dev.bdf);
	d->name = name;
	return 0;
}

static int export_map(void *ctx, void *va, uint64_t len, uint64_t *bus)
{
	return sio_vfio_dma_map(&((struct lender *)ctx)->dev, va, len, bus);
}

static int export_unmap(void *ctx, uint64_t bus, uint64_t len)
{
	return sio_vfio_dma_unmap(&((struct lender *)ctx)->dev, bus, len);
}

/*
 * Where BAR0's registers end: at its MSI-X table or PBA when the MSI-X
 * capability puts them in BAR0 (QEMU's NVMe does), else at its end.
 */
static uint64_t bar0_regs_end(struct lender *l)
{
	uint64_t end = l->bar0_size;
	uint8_t at = 0, id = 0;
	uint32_t tab[2];

	if (sio_vfio_cfg_read(&l->dev, 0x34, &at, 1))
		return end;
	for (int n = 0; at >= 0x40 && n < 48; n++) {
		if (sio_vfio_cfg_read(&l->dev, at, &id, 1))
			break;
		if (id == 0x11 && !sio_vfio_cfg_read(&l->dev, at + 4u, tab, sizeof(tab))) {
			for (int i = 0; i < 2; i++)	/* table, PBA: BIR in bits 0..2 */
				if ((tab[i] & 7) == 0 && (tab[i] & ~7u) < end)
					end = tab[i] & ~7u;
			break;
		}
		if (sio_vfio_cfg_read(&l->dev, at + 1u, &at, 1))
			break;
	}
	return end;
}

/*
 * On a fabric of several kernels, borrowers elsewhere cannot reach this
 * socket: the fabric backend serves them (its dev_export), given BAR0 and a
 * way to map memory for the device's DMA through this IOMMU.
 */
static int export(struct lender *l)
{
	struct sio_dev_export x = { .ctx = l, .dma_map = export_map, .dma_unmap = export_unmap };
	void *bar0;
	int rc;

	if (!l->f->ops->dev_export)
		return 0;
	rc = sio_vfio_bar_mmap(&l->dev, 0, &bar0, &l->bar0_size);
	if (rc)
		return rc;
	l->bar0 = x.bar0 = bar0;
	x.bar0_size = l->bar0_size;
	x.db_end = bar0_regs_end(l);
	rc = l->f->ops->dev_export(l->f, l->reg->slot, &x);
	if (!rc) {
		l->exported = true;
		say(l, "device %u is reachable from the other kernels of fabric %s\n", l->id,
		    sio_fabric_name(l->f));
	}
	return rc;
}

int sio_vfio_lend(const char *fabric, const char *bdf, enum sio_vfio_mode mode,
		  volatile sig_atomic_t *stop, FILE *log)
{
	struct lender *l = calloc(1, sizeof(*l));
	struct sio_device_desc desc;
	struct pollfd pfd[MAX_CONN + 1];
	char name[SIO_NAME_MAX], leaf[64];
	int lfd = -1, rc;

	if (!l)
		return sio__err(ENOMEM, "vfio lender: out of memory");
	l->log = log;
	for (int i = 0; i < MAX_CONN; i++)
		l->conns[i].fd = -1;
	rc = sio_vfio_open(bdf, mode, &l->dev);
	if (rc)
		goto out;
	rc = sio_vfio_enable_master(&l->dev);
	if (rc)
		goto out;
	rc = sio_fabric_open(fabric, -1, &l->f);
	if (rc)
		goto out;
	rc = describe(l, &desc, name, sizeof(name));
	if (rc)
		goto out;
	snprintf(leaf, sizeof(leaf), "vfio-%s.sock", l->dev.bdf);
	rc = sio__fabric_host_path(l->f, leaf, l->svc, sizeof(l->svc));
	if (rc)
		goto out;
	lfd = listen_on(l);
	if (lfd < 0) {
		rc = lfd;
		goto out;
	}
	rc = sio__device_register_ext(l->f, &desc, SIO_BACKEND_VFIO, l->dev.bdf, l->svc, &l->reg);
	if (rc)
		goto out;
	l->id = sio_devreg_id(l->reg);
	rc = export(l);
	if (rc)
		goto out;
	say(l, "lending %s (%04x:%04x class %06x) as device %u of fabric %s via %s; %d IOVA range(s)\n",
	    l->dev.bdf, desc.vendor, desc.device, desc.class_code, l->id,
	    sio_fabric_name(l->f), l->dev.mode == SIO_VFIO_IOMMUFD ? "iommufd" : "VFIO type1",
	    l->dev.iova.nranges);

	while (!stop || !*stop) {
		int n = 0, map[MAX_CONN + 1];

		pfd[n].fd = lfd;
		pfd[n++].events = POLLIN;
		for (int i = 0; i < MAX_CONN; i++)
			if (l->conns[i].fd >= 0) {
				map[n] = i;
				pfd[n].fd = l->conns[i].fd;
				pfd[n++].events = POLLIN;
			}
		/* Sleeps in the kernel; the timeout only bounds the stop check. */
		if (poll(pfd, n, 500) < 0) {
			if (errno == EINTR)
				continue;
			rc = sio__err(errno, "vfio lender: poll: %s", strerror(errno));
			break;
		}
		for (int k = 1; k < n; k++)
			if (pfd[k].revents && !serve(l, &l->conns[map[k]]))
				conn_close(l, &l->conns[map[k]]);
		if (pfd[0].revents & POLLIN) {
			int cfd = accept4(lfd, NULL, NULL, SOCK_CLOEXEC), i;

			for (i = 0; cfd >= 0 && i < MAX_CONN; i++)
				if (l->conns[i].fd < 0) {
					l->conns[i].fd = cfd;
					break;
				}
			if (cfd >= 0 && i == MAX_CONN) {
				say(l, "vfio lender: %d borrowers connected already, refusing one\n",
				    MAX_CONN);
				close(cfd);
			}
		}
	}
out:
	for (int i = 0; i < MAX_CONN; i++)
		if (l->conns[i].fd >= 0)
			conn_close(l, &l->conns[i]);
	if (l->exported)
		l->f->ops->dev_unexport(l->f, l->reg->slot);
	if (l->bar0)
		munmap((void *)l->bar0, l->bar0_size);
	if (l->reg)
		sio_devreg_close(l->reg);
	if (lfd >= 0) {
		close(lfd);
		unlink(l->svc);
	}
	sio_fabric_close(l->f);
	sio_vfio_close(&l->dev);
	free(l);
	return rc;
}
