/* SPDX-License-Identifier: MIT */
/*
 * The lender of a real PCI function (vfio or uio, lend.h): holds the
 * function, registers it in the fabric's registry, and serves borrowers over
 * a unix socket: BAR access (an fd to mmap it from, passed by SCM_RIGHTS)
 * and DMA mappings of segments (through the IOMMU with vfio, physical
 * addresses of pinned huge pages with uio). Each connection's mappings are
 * undone when it closes, so a crashed borrower leaves nothing pinned or
 * mapped; if the lender itself dies, closing its fds and mappings does the
 * same in the kernel.
 */
#include <errno.h>
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
#include "pci.h"
#include "proto.h"
#include "lend.h"

#define MAX_CONN	64

struct mapping {
	int32_t node, bar;	/* the key: segment (node, id), or BAR of device id */
	uint32_t id;
	uint64_t iova, len;
	struct sio_segment *seg;
	void *va;		/* this process's mapping of @seg */
	bool dma;		/* false for the device's own BAR (the CMB) */
};

struct conn {
	int fd;
	struct mapping *maps;
	int nmaps, cap;
};

struct lender {
	struct sio_fabric *f;
	struct sio_lend_dev *dev;
	struct sio_devreg *reg;
	uint32_t id;
	char svc[108];
	int lfd;		/* listening on svc, or -1 */
	struct conn conns[MAX_CONN];
	struct conn *irq_conn;	/* the borrower holding the interrupts, or NULL */
	int irq_kind;
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
	if (m->dma && l->dev->dma_unmap(l->dev->priv, m->va, m->iova, m->len))
		say(l, "%s lender: %s\n", l->dev->kind, sio_errmsg());
	if (m->seg) {
		sio_segment_unmap(m->seg);
		sio_segment_close(m->seg);
	}
}

static void conn_close(struct lender *l, struct conn *c)
{
	if (l->irq_conn == c) {		/* its eventfds: nobody reads them now */
		if (l->dev->irq_off(l->dev->priv, l->irq_kind))
			say(l, "vfio lender: %s\n", sio_errmsg());
		l->irq_conn = NULL;
	}
	for (int i = 0; i < c->nmaps; i++)
		unmap_one(l, &c->maps[i]);
	if (c->nmaps)
		say(l, "%s lender: connection closed, %d mapping(s) released\n", l->dev->kind,
		    c->nmaps);
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
		return sio__err(ENOTSUP, "%s: device %u cannot DMA to BAR %d of device %u "
				"(peer-to-peer between %s devices is not supported)",
				l->dev->kind, l->id, rq->bar, rq->seg, l->dev->kind);
	if (rq->bar < 0 || rq->bar >= SIO_MAX_BARS || !l->dev->bar[rq->bar].size)
		return sio__err(ENOENT, "%s has no BAR %d", l->dev->cfg.bdf, rq->bar);
	m->len = l->dev->bar[rq->bar].size;
	return sio_pci_bar_bus(&l->dev->cfg, rq->bar, &m->iova);
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
		rc = sio__err(ENOTSUP, "%s: segment %u of node %d is not host memory",
			      l->dev->kind, rq->seg, rq->node);
	/* Map the same shared pages here and pin them for the device. */
	if (!rc)
		rc = sio_segment_map(m->seg, &va);
	if (rc)
		goto fail;
	m->len = sio__page_up(si.size);
	rc = l->dev->dma_map(l->dev->priv, va, m->len, rq->mask ? rq->mask : UINT64_MAX,
			     &m->iova);
	if (rc) {
		sio_segment_unmap(m->seg);
		goto fail;
	}
	m->va = va;
	m->dma = true;
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
			return sio__err(ENOMEM, "%s lender: out of memory", l->dev->kind);
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

/* OP_IRQ: one borrower at a time holds the function's interrupts. */
static int do_irq(struct lender *l, struct conn *c, const struct sio_vfio_req *rq,
		  const int *fds, int nfds, struct sio_vfio_rep *rp)
{
	int kind;

	if (!rq->size) {
		if (l->irq_conn != c)
			return 0;
		l->irq_conn = NULL;
		return l->dev->irq_off(l->dev->priv, l->irq_kind);
	}
	if (!l->dev->irq_set)
		return sio__err(ENOTSUP, "%s lender: %s serves no interrupts: poll the device",
				l->dev->kind, l->dev->cfg.bdf);
	if (l->irq_conn)
		return sio__err(EBUSY, "%s lender: the interrupts of %s are held by %s borrower",
				l->dev->kind, l->dev->cfg.bdf, l->irq_conn == c ? "this" : "another");
	if (rq->size > SIO_IRQ_MAX_VECS || nfds != (int)rq->size)
		return sio__err(EPROTO, "%s lender: %llu vectors asked for with %d eventfds",
				l->dev->kind, (unsigned long long)rq->size, nfds);
	kind = l->dev->irq_set(l->dev->priv, rq->seg, (int)rq->size, fds);
	if (kind < 0)
		return kind;
	l->irq_conn = c;
	l->irq_kind = kind;
	rp->offset = (uint64_t)kind;
	say(l, "%s lender: %llu %s vector(s) of %s enabled for a borrower\n", l->dev->kind,
	    (unsigned long long)rq->size, sio_irq_kind_name(kind), l->dev->cfg.bdf);
	return 0;
}

/* A request and the fds it carries (OP_IRQ's eventfds): their count, or -1. */
static int recv_req(int fd, struct sio_vfio_req *rq, ssize_t *n, int *fds)
{
	char cbuf[CMSG_SPACE(SIO_IRQ_MAX_VECS * sizeof(int))];
	struct iovec iov = { rq, sizeof(*rq) };
	struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1,
			     .msg_control = cbuf, .msg_controllen = sizeof(cbuf) };
	int nfds = 0;

	*n = recvmsg(fd, &mh, MSG_CMSG_CLOEXEC);
	for (struct cmsghdr *cm = CMSG_FIRSTHDR(&mh); *n > 0 && cm; cm = CMSG_NXTHDR(&mh, cm))
		if (cm->cmsg_level == SOL_SOCKET && cm->cmsg_type == SCM_RIGHTS) {
			int k = (int)((cm->cmsg_len - CMSG_LEN(0)) / sizeof(int));

			memcpy(fds + nfds, CMSG_DATA(cm), (size_t)k * sizeof(int));
			nfds += k;
		}
	return nfds;
}

/* One request; false when the connection should close. */
static bool serve(struct lender *l, struct conn *c)
{
	struct sio_vfio_req rq;
	struct sio_vfio_rep rp = { 0 };
	int fds[SIO_IRQ_MAX_VECS], pass = -1;
	ssize_t n;
	int nfds = recv_req(c->fd, &rq, &n, fds);

	if (n <= 0) {
		for (int i = 0; i < nfds; i++)
			close(fds[i]);
		return false;
	}
	if (n != sizeof(rq)) {
		rp.status = sio__err(EPROTO, "%s lender: malformed request of %zd bytes",
				     l->dev->kind, n);
	} else if (rq.op == SIO_VFIO_OP_BAR) {
		if (rq.bar < 0 || rq.bar >= SIO_MAX_BARS || !l->dev->bar[rq.bar].size) {
			rp.status = sio__err(ENOENT, "%s has no BAR %d", l->dev->cfg.bdf, rq.bar);
		} else if (!l->dev->bar[rq.bar].mmap) {
			rp.status = sio__err(ENOTSUP, "%s BAR %d cannot be mmapped", l->dev->cfg.bdf,
					     rq.bar);
		} else {
			rp.offset = l->dev->bar[rq.bar].offset;
			rp.size = l->dev->bar[rq.bar].size;
			pass = l->dev->bar[rq.bar].fd;
		}
	} else if (rq.op == SIO_VFIO_OP_MAP) {
		rp.status = do_map(l, c, &rq, &rp);
	} else if (rq.op == SIO_VFIO_OP_UNMAP) {
		rp.status = do_unmap(l, c, &rq);
	} else if (rq.op == SIO_VFIO_OP_IRQ) {
		rp.status = do_irq(l, c, &rq, fds, nfds, &rp);
	} else if (rq.op == SIO_VFIO_OP_IRQ_UNMASK) {
		rp.status = l->irq_conn == c && l->irq_kind == SIO_IRQ_INTX ?
			    l->dev->irq_unmask(l->dev->priv) : 0;
	} else {
		rp.status = sio__err(EPROTO, "%s lender: unknown request %u", l->dev->kind, rq.op);
	}
	for (int i = 0; i < nfds; i++)	/* the kernel holds its own reference */
		close(fds[i]);
	if (rp.status)
		snprintf(rp.msg, sizeof(rp.msg), "%s", sio_errmsg());
	return sio__send_fds(c->fd, &rp, sizeof(rp), &pass, pass >= 0) == 0;
}

static int listen_on(struct lender *l)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	int fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);

	if (fd < 0)
		return sio__err(errno, "%s lender: socket: %s", l->dev->kind, strerror(errno));
	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", l->svc);
	unlink(l->svc);		/* a stale socket from a lender that crashed */
	if (bind(fd, (struct sockaddr *)&sa, sizeof(sa)) || listen(fd, 16)) {
		int e = errno;

		close(fd);
		return sio__err(e, "%s lender: cannot listen on %s: %s", l->dev->kind, l->svc,
				strerror(e));
	}
	return fd;
}

static int describe(struct lender *l, struct sio_device_desc *d, char *name, size_t len)
{
	uint32_t id, cls;
	int rc = sio_pci_cfg_read(&l->dev->cfg, 0x00, &id, 4);

	if (!rc)
		rc = sio_pci_cfg_read(&l->dev->cfg, 0x08, &cls, 4);
	if (rc)
		return rc;
	memset(d, 0, sizeof(*d));
	d->vendor = id & 0xffff;
	d->device = id >> 16;
	d->class_code = cls >> 8;
	for (int b = 0; b < SIO_MAX_BARS; b++) {
		d->bar_size[b] = l->dev->bar[b].size;
		if (d->bar_size[b])
			d->nbars = b + 1;
	}
	snprintf(name, len, "%s %s", l->dev->kind, l->dev->cfg.bdf);
	d->name = name;
	return 0;
}

static int export_map(void *ctx, void *va, uint64_t len, uint64_t phys, uint64_t *bus)
{
	struct sio_lend_dev *d = ((struct lender *)ctx)->dev;

	if (d->backend == SIO_BACKEND_VFIO)
		return d->dma_map(d->priv, va, len, UINT64_MAX, bus);
	/*
	 * No IOMMU: the device reaches the window (MMIO of another function,
	 * which pagemap cannot translate) at the window's own bus address.
	 */
	if (phys == UINT64_MAX)
		return sio__err(ENOTSUP, "%s lender: the fabric's window has no bus address (it "
				"is no PCI BAR): %s, without an IOMMU, cannot reach it",
				d->kind, d->cfg.bdf);
	if (!len || len - 1 > d->dma_mask || phys > d->dma_mask - (len - 1))
		return sio__err(ERANGE, "%s lender: the window at bus 0x%llx (%llu bytes) is "
				"beyond the DMA mask 0x%llx of %s", d->kind,
				(unsigned long long)phys, (unsigned long long)len,
				(unsigned long long)d->dma_mask, d->cfg.bdf);
	*bus = phys;
	return 0;
}

static int export_unmap(void *ctx, uint64_t bus, uint64_t len)
{
	struct sio_lend_dev *d = ((struct lender *)ctx)->dev;

	return d->backend == SIO_BACKEND_VFIO ? d->dma_unmap(d->priv, NULL, bus, len) : 0;
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

	if (sio_pci_cfg_read(&l->dev->cfg, 0x34, &at, 1))
		return end;
	for (int n = 0; at >= 0x40 && n < 48; n++) {
		if (sio_pci_cfg_read(&l->dev->cfg, at, &id, 1))
			break;
		if (id == 0x11 && !sio_pci_cfg_read(&l->dev->cfg, at + 4u, tab, sizeof(tab))) {
			for (int i = 0; i < 2; i++)	/* table, PBA: BIR in bits 0..2 */
				if ((tab[i] & 7) == 0 && (tab[i] & ~7u) < end)
					end = tab[i] & ~7u;
			break;
		}
		if (sio_pci_cfg_read(&l->dev->cfg, at + 1u, &at, 1))
			break;
	}
	return end;
}

/* What the backend says later (a pool the device cannot reach yet), logged. */
static void export_say(void *ctx, const char *msg)
{
	struct lender *l = ctx;

	say(l, "%s lender: %s\n", l->dev->kind, msg);
}

/*
 * On a fabric of several kernels, borrowers elsewhere cannot reach this
 * socket: the fabric backend serves them (its dev_export), given BAR0 and a
 * way to map memory for the device's DMA: through this IOMMU (vfio), or at
 * the window's bus address (uio).
 */
static int export(struct lender *l)
{
	struct sio_dev_export x = { .ctx = l, .dma_map = export_map, .dma_unmap = export_unmap,
				    .say = export_say };
	char dir[96];
	void *bar0;
	int rc;

	if (!l->f->ops->dev_export)
		return 0;
	if (!l->dev->bar[0].size || !l->dev->bar[0].mmap)
		return sio__err(ENOTSUP, "%s has no BAR 0 to map", l->dev->cfg.bdf);
	l->bar0_size = l->dev->bar[0].size;
	bar0 = mmap(NULL, l->bar0_size, PROT_READ | PROT_WRITE, MAP_SHARED, l->dev->bar[0].fd,
		    (off_t)l->dev->bar[0].offset);
	if (bar0 == MAP_FAILED)
		return sio__err(errno, "%s: cannot map BAR 0: %s", l->dev->cfg.bdf,
				strerror(errno));
	l->bar0 = x.bar0 = bar0;
	x.bar0_size = l->bar0_size;
	snprintf(dir, sizeof(dir), "/sys/bus/pci/devices/%s", l->dev->cfg.bdf);
	x.bar0_bus = sio__pci_bar_bus(dir, 0);	/* for a window onto it (ntb) */
	x.db_end = bar0_regs_end(l);
	/* the doorbells, as the driver that knows the device describes them */
	if (l->dev->opts && l->dev->opts->doorbells &&
	    (rc = l->dev->opts->doorbells(bar0, l->bar0_size, &x.db, l->dev->opts->arg)))
		return rc;
	rc = l->f->ops->dev_export(l->f, l->reg->slot, &x);
	if (!rc) {
		l->exported = true;
		say(l, "device %u is reachable from the other kernels of fabric %s\n", l->id,
		    sio_fabric_name(l->f));
		if (x.how[0])
			say(l, "the other kernels' doorbells: %s\n", x.how);
	}
	return rc;
}

/*
 * Bus mastering on, the fabric joined, the service socket listening, the
 * device registered (pointing borrowers at the socket) and, on a fabric of
 * several kernels, exported to them.
 */
static int lend_setup(struct lender *l, const char *fabric)
{
	struct sio_lend_dev *dev = l->dev;
	struct sio_device_desc desc;
	char name[SIO_NAME_MAX], leaf[64];
	int rc;

	rc = sio_pci_enable_master(&dev->cfg);
	if (rc)
		return rc;
	rc = sio_fabric_open(fabric, -1, &l->f);
	if (rc)
		return rc;
	rc = describe(l, &desc, name, sizeof(name));
	if (rc)
		return rc;
	snprintf(leaf, sizeof(leaf), "%s-%s.sock", dev->kind, dev->cfg.bdf);
	rc = sio__fabric_host_path(l->f, leaf, l->svc, sizeof(l->svc));
	if (rc)
		return rc;
	l->lfd = listen_on(l);
	if (l->lfd < 0)
		return l->lfd;
	rc = sio__device_register_ext(l->f, &desc, dev->backend, dev->cfg.bdf, l->svc, &l->reg);
	if (rc)
		return rc;
	l->id = sio_devreg_id(l->reg);
	rc = export(l);
	if (rc)
		return rc;
	say(l, "lending %s (%04x:%04x class %06x) as device %u of fabric %s via %s\n",
	    dev->cfg.bdf, desc.vendor, desc.device, desc.class_code, l->id,
	    sio_fabric_name(l->f), dev->how);
	return 0;
}

/* A borrower connects: a free connection slot, or a refusal said in the log. */
static void accept_one(struct lender *l)
{
	int cfd = accept4(l->lfd, NULL, NULL, SOCK_CLOEXEC), i;

	for (i = 0; cfd >= 0 && i < MAX_CONN; i++)
		if (l->conns[i].fd < 0) {
			l->conns[i].fd = cfd;
			break;
		}
	if (cfd >= 0 && i == MAX_CONN) {
		say(l, "%s lender: %d borrowers connected already, refusing one\n",
		    l->dev->kind, MAX_CONN);
		close(cfd);
	}
}

/*
 * The kernel wants the function back (it is being removed or unbound) and
 * waits until it is closed: the lend ends as at a stop, said with why.
 */
static int given_back(struct lender *l)
{
	say(l, "%s lender: the kernel asks for %s back (it is being removed or unbound): "
	    "device %u is no longer lent\n", l->dev->kind, l->dev->cfg.bdf, l->id);
	return sio__err(ENODEV, "%s lender: the kernel asked for %s back (removed or unbound); "
			"device %u is no longer lent", l->dev->kind, l->dev->cfg.bdf, l->id);
}

/*
 * Serve borrowers' requests and connections until *@stop is set, or the
 * kernel asks for the function back.
 */
static int serve_loop(struct lender *l, volatile sig_atomic_t *stop)
{
	struct pollfd pfd[MAX_CONN + 2];

	while (!stop || !*stop) {
		int n = 0, map[MAX_CONN + 2];

		pfd[n].fd = l->lfd;
		pfd[n++].events = POLLIN;
		pfd[n].fd = l->dev->req_fd;	/* -1: poll() skips it */
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
			return sio__err(errno, "%s lender: poll: %s", l->dev->kind, strerror(errno));
		}
		if (pfd[1].revents & POLLIN)
			return given_back(l);
		for (int k = 2; k < n; k++)
			if (pfd[k].revents && !serve(l, &l->conns[map[k]]))
				conn_close(l, &l->conns[map[k]]);
		if (pfd[0].revents & POLLIN)
			accept_one(l);
	}
	return 0;
}

/* Undo lend_setup() and close every borrower's connection. */
static void lend_teardown(struct lender *l)
{
	for (int i = 0; i < MAX_CONN; i++)
		if (l->conns[i].fd >= 0)
			conn_close(l, &l->conns[i]);
	if (l->exported)
		l->f->ops->dev_unexport(l->f, l->reg->slot);
	if (l->bar0)
		munmap((void *)l->bar0, l->bar0_size);
	if (l->reg)
		sio_devreg_close(l->reg);
	if (l->lfd >= 0) {
		close(l->lfd);
		unlink(l->svc);
	}
	sio_fabric_close(l->f);
}

int sio__lend(const char *fabric, struct sio_lend_dev *dev, volatile sig_atomic_t *stop,
	      FILE *log)
{
	struct lender *l = calloc(1, sizeof(*l));
	int rc;

	if (!l)
		return sio__err(ENOMEM, "%s lender: out of memory", dev->kind);
	l->log = log;
	l->dev = dev;
	l->lfd = -1;
	for (int i = 0; i < MAX_CONN; i++)
		l->conns[i].fd = -1;
	rc = lend_setup(l, fabric);
	if (!rc)
		rc = serve_loop(l, stop);
	lend_teardown(l);
	free(l);
	return rc;
}
