/* SPDX-License-Identifier: MIT */
/*
 * Devices across kernels on the shmwin backend.
 *
 * DMA: the lender maps the whole window into its device's IOVA space once
 * (vfio: VFIO_IOMMU_MAP_DMA of its mmap of the window BAR: peer to peer
 * through the IOMMU), so every segment is reachable at window_bus + its
 * offset, and a remote borrower computes that address with no request to
 * the lender. The IOMMU confines the device to the window, not to the
 * segments mapped for it: the isolation is per window here, per segment on
 * the sim backend and on one vfio host.
 *
 * MMIO: a remote node cannot store to the lender's BAR through ivshmem, as
 * it could through an NTB window. This is the one place where this backend
 * differs from NTB hardware: each remote borrower's BAR0 is a mirror in the
 * window (register page copied from the lender's, CSTS kept fresh), and the
 * lender's relay thread forwards the doorbell writes it sees there to the
 * real BAR0, shadow-doorbell style: it takes each value, leaving an
 * impossible one (SHMWIN_DB_EMPTY) in its place, so every write is
 * forwarded once, a repeated value too. The admin queue's doorbells are never
 * forwarded: they are the manager's, on the lender's kernel.
 *
 * Multicast: one window cannot fan a device write out to several places as
 * a PCIe switch's multicast does. A group's address is a landing segment
 * in the window; the relay copies what lands there into every subscriber's
 * segment when they differ (every 5 ms). The second place this backend
 * differs from NTB hardware: subscribers see the data after that copy.
 */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "shmwin.h"

#define NAP_MIN_NS	2000ull
#define NAP_MAX_NS	100000ull	/* while a mirror is watched */
#define NAP_IDLE_NS	10000000ull	/* while none is */
#define CSTS		0x1c
#define REGS_COPY	0x100		/* CAP .. CMB registers */

struct shmwin_relay {
	struct shmwin_relay *next;
	struct sio_fabric *f;
	struct shmwin_fabric *s;
	int dev;
	struct sio_dev_export x;
	void *win;			/* the whole window, mapped for the device */
	uint64_t bus;
	struct sio_segment *regs;
	volatile uint32_t *regs_va;
	pthread_t thr;
	_Atomic bool stop;
	struct {			/* the mirrors as this relay maps them */
		int32_t slot;
		uint64_t gen, len;
		volatile uint32_t *va;
	} m[SHMWIN_MIRRORS];
};

static volatile uint32_t *reg32(volatile void *bar, uint64_t off)
{
	return (volatile uint32_t *)((volatile char *)bar + off);
}

/* Is mirror entry @i of @d a live segment? Its window offset and size. */
static bool mirror_live(struct sio_fabric *f, const struct shmwin_dev *d, int i, uint64_t *off,
			uint64_t *len)
{
	int slot = d->mirror[i].slot;
	const struct reg_seg *sg = reg_seg_at(f->reg, slot);

	return sg && sg->used && sg->gen == d->mirror[i].gen && d->mirror[i].gen &&
	       !shmwin_seg_where(f, slot, off, len);
}

/* Follow the mirror table: map new mirrors, drop gone ones. */
static int mirrors_sync(struct shmwin_relay *r)
{
	const struct shmwin_dev *d = &r->s->hdr->devs[r->dev];
	int n = 0;

	for (int i = 0; i < SHMWIN_MIRRORS; i++) {
		uint64_t off, len;
		bool live = mirror_live(r->f, d, i, &off, &len);

		if (r->m[i].va && (!live || r->m[i].slot != d->mirror[i].slot ||
				   r->m[i].gen != d->mirror[i].gen)) {
			shmwin_unmap((void *)r->m[i].va, r->m[i].len);
			r->m[i].va = NULL;
		}
		if (live && !r->m[i].va && len >= r->x.bar0_size) {
			void *va;
			if (shmwin_map(r->s, off, r->x.bar0_size, false, &va))
				continue;
			r->m[i].va = va;
			r->m[i].len = r->x.bar0_size;
			r->m[i].slot = d->mirror[i].slot;
			r->m[i].gen = d->mirror[i].gen;
		}
		n += r->m[i].va != NULL;
	}
	return n;
}

/* Copy each group's landing segment into its subscribers' segments where they differ. */
static void groups_sync(struct shmwin_relay *r)
{
	struct sio_registry *reg = r->f->reg;
	char *w = r->win;

	for (int g = 0; g < SIO_MAX_GROUPS; g++) {
		const struct shmwin_group *sg = &r->s->hdr->groups[g];
		const struct reg_group *gr = &reg->groups[g];
		const struct reg_seg *ls = reg_seg_at(reg, sg->slot);
		uint64_t loff, llen, off, len;
		int n = gr->nsubs;

		if (!gr->used || !sg->gen || !ls || ls->gen != sg->gen || gr->gen != sg->group_gen ||
		    shmwin_seg_where(r->f, sg->slot, &loff, &llen) || n < 0 || n > SIO_MAX_SUBS)
			continue;
		if (llen > gr->size)
			llen = gr->size;
		for (int i = 0; i < n; i++) {
			const struct reg_seg *ss = reg_seg_at(reg, gr->sub_seg[i]);
			if (!ss || ss->gen != gr->sub_gen[i] ||
			    shmwin_seg_where(r->f, gr->sub_seg[i], &off, &len))
				continue;
			if (len > llen)
				len = llen;
			if (memcmp(w + off, w + loff, len))
				memcpy(w + off, w + loff, len);
		}
	}
}

static void *relay_thread(void *arg)
{
	struct shmwin_relay *r = arg;
	struct shmwin_dev *d = &r->s->hdr->devs[r->dev];
	uint32_t stride = 4u << d->dstrd, ndb = 2 * (SHMWIN_RELAY_QUEUES + 1);
	uint64_t nap = NAP_MIN_NS, last_sync = 0, end = r->x.db_end;
	int watched = 0;

	/* the doorbells, and nothing past them (QEMU's NVMe keeps its MSI-X table in BAR0) */
	if (!end || end > r->x.bar0_size)
		end = r->x.bar0_size;
	while ((0x1000 + (uint64_t)ndb * stride) > end && ndb > 2)
		ndb -= 2;
	while (!atomic_load(&r->stop)) {
		uint64_t now = sio__now_ns();
		bool moved = false;

		if (now - last_sync > 5000000ull) {	/* every 5 ms: the table, CSTS */
			uint32_t csts = *reg32(r->x.bar0, CSTS);

			watched = mirrors_sync(r);
			r->regs_va[CSTS / 4] = csts;
			for (int i = 0; i < SHMWIN_MIRRORS; i++)
				if (r->m[i].va)
					r->m[i].va[CSTS / 4] = csts;
			groups_sync(r);
			atomic_fetch_add(&d->relay_beat, 1);
			last_sync = now;
		}
		for (int i = 0; i < SHMWIN_MIRRORS; i++) {
			if (!r->m[i].va)
				continue;
			for (uint32_t q = 2; q < ndb; q++) {	/* 0, 1: the admin queue's */
				uint64_t off = 0x1000 + (uint64_t)q * stride;
				uint32_t *db = (uint32_t *)&r->m[i].va[off / 4];
				uint32_t v = __atomic_load_n(db, __ATOMIC_ACQUIRE);

				/* taken once: a borrower's write of the value it wrote
				 * before (a queue made anew) is forwarded too */
				if (v == SHMWIN_DB_EMPTY ||
				    !__atomic_compare_exchange_n(db, &v, SHMWIN_DB_EMPTY, false,
								 __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE))
					continue;
				/* the borrower's queue entries are in the window before its doorbell */
				atomic_thread_fence(memory_order_seq_cst);
				*reg32(r->x.bar0, off) = v;
				atomic_fetch_add_explicit(&d->relayed, 1, memory_order_relaxed);
				moved = true;
			}
		}
		if (moved) {
			nap = NAP_MIN_NS;
			continue;
		}
		struct timespec ts = { 0, (long)(watched ? nap : NAP_IDLE_NS) };
		nanosleep(&ts, NULL);
		if (nap < NAP_MAX_NS)
			nap *= 2;
	}
	return NULL;
}

static struct shmwin_relay *relay_of(struct shmwin_fabric *s, int dev, struct shmwin_relay ***pp)
{
	for (struct shmwin_relay **p = &s->relays; *p; p = &(*p)->next)
		if ((*p)->dev == dev) {
			if (pp)
				*pp = p;
			return *p;
		}
	return NULL;
}

static void relay_free(struct shmwin_relay *r)
{
	for (int i = 0; i < SHMWIN_MIRRORS; i++)
		if (r->m[i].va)
			shmwin_unmap((void *)r->m[i].va, r->m[i].len);
	if (r->bus)
		r->x.dma_unmap(r->x.ctx, r->bus, r->s->win.size);
	if (r->win)
		shmwin_unmap(r->win, r->s->win.size);
	if (r->regs)
		sio_segment_close(r->regs);
	free(r);
}

int sio__shmwin_dev_export(struct sio_fabric *f, int dev, const struct sio_dev_export *x)
{
	struct shmwin_fabric *s = shmwin_of(f);
	struct shmwin_relay *r;
	struct reg_dev *dv;
	uint64_t cap;
	int ret;

	if (dev < 0 || dev >= SIO_MAX_DEVS || !x->bar0 || x->bar0_size < 0x2000)
		return sio__err(EINVAL, "shmwin: device slot %d: no BAR0 of doorbells to relay", dev);
	if (!(r = calloc(1, sizeof(*r))))
		return sio__err(ENOMEM, "out of memory");
	r->f = f;
	r->s = s;
	r->dev = dev;
	r->x = *x;
	/* the whole window, once, for the device: every segment at bus + offset */
	if ((ret = shmwin_map(s, 0, s->win.size, false, &r->win)) ||
	    (ret = x->dma_map(x->ctx, r->win, s->win.size, s->win.bus, &r->bus)))
		goto fail;
	if ((ret = sio_segment_create_on(f, f->node, 0, 4096, 0, &r->regs)) ||
	    (ret = sio_segment_map(r->regs, (void **)&r->regs_va)))
		goto fail;
	for (uint64_t o = 0; o < REGS_COPY; o += 4)
		r->regs_va[o / 4] = *reg32(x->bar0, o);
	cap = r->regs_va[0] | (uint64_t)r->regs_va[1] << 32;
	if ((ret = sio__lock(f)))
		goto fail;
	dv = reg_dev_at(f->reg, dev);
	s->hdr->devs[dev] = (struct shmwin_dev){ .gen = dv->gen, .window_bus = r->bus,
						 .bar0_size = x->bar0_size, .regs_slot = r->regs->slot,
						 .regs_gen = r->regs->gen, .dstrd = (cap >> 32) & 0xf };
	sio__unlock(f);
	if ((ret = pthread_create(&r->thr, NULL, relay_thread, r))) {
		ret = sio__err(ret, "shmwin: cannot start the doorbell relay: %s", strerror(ret));
		goto fail;
	}
	r->next = s->relays;
	s->relays = r;
	return 0;
fail:
	relay_free(r);
	return ret;
}

void sio__shmwin_dev_unexport(struct sio_fabric *f, int dev)
{
	struct shmwin_fabric *s = shmwin_of(f);
	struct shmwin_relay **pp, *r = relay_of(s, dev, &pp);

	if (!r)
		return;
	*pp = r->next;
	atomic_store(&r->stop, true);
	pthread_join(r->thr, NULL);
	if (!sio__lock(f)) {
		memset(&s->hdr->devs[dev], 0, sizeof(s->hdr->devs[dev]));
		sio__unlock(f);
	}
	relay_free(r);
}

/* Borrower's side: what a borrow of a device of another kernel keeps. */
struct remote {
	struct sio_segment *mirror;
};

/* Lock held: the window record of @dev's device, if it is exported and current. */
static struct shmwin_dev *exported(struct sio_fabric *f, int dev)
{
	struct shmwin_fabric *s = shmwin_of(f);
	const struct reg_dev *dv = reg_dev_at(f->reg, dev);
	struct shmwin_dev *d;

	if (!dv || !dv->used)
		return NULL;
	d = &s->hdr->devs[dev];
	return d->gen == dv->gen && d->window_bus ? d : NULL;
}

static int remote_bar_map(struct sio_device *dev, int bar, void **vaddr, uint64_t *size)
{
	struct sio_fabric *f = dev->f;
	struct shmwin_fabric *s = shmwin_of(f);
	struct remote *rm = dev->backend_priv;
	struct shmwin_dev *d;
	uint64_t bsize, off, len, roff, rlen;
	void *va = NULL, *regs = NULL;
	int ret, i;

	if (bar != 0)
		return sio__err(EOPNOTSUPP, "device %u is lent by another kernel: only its BAR0 doorbells reach it (relayed), not BAR%d",
				dev->id, bar);
	if ((ret = sio__lock(f)))
		return ret;
	d = exported(f, dev->slot);
	bsize = d ? d->bar0_size : 0;
	sio__unlock(f);
	if (!d)
		return sio__err(ENODEV, "device %u is no longer exported by its lender", dev->id);
	if (!rm && !(rm = dev->backend_priv = calloc(1, sizeof(*rm))))
		return sio__err(ENOMEM, "out of memory");
	if (!rm->mirror && (ret = sio_segment_create_on(f, f->node, 0, bsize, 0, &rm->mirror)))
		return ret;
	if ((ret = sio__lock(f)))
		return ret;
	if (!(d = exported(f, dev->slot)) || d->bar0_size != bsize) {
		ret = sio__err(ENODEV, "device %u is no longer exported by its lender", dev->id);
		goto out;
	}
	if ((ret = shmwin_seg_where(f, rm->mirror->slot, &off, &len)) ||
	    (ret = shmwin_seg_where(f, d->regs_slot, &roff, &rlen)) ||
	    (ret = shmwin_map(s, off, bsize, false, &va)) ||
	    (ret = shmwin_map(s, roff, 4096, true, &regs)))
		goto out;
	memcpy(va, regs, REGS_COPY);	/* CAP, VS, CSTS... as the lender read them */
	for (uint64_t o = 0x1000; o + 4 <= bsize; o += 4)	/* no doorbell written yet */
		((uint32_t *)va)[o / 4] = SHMWIN_DB_EMPTY;
	for (i = 0; i < SHMWIN_MIRRORS; i++) {
		uint64_t o, l;
		if (!mirror_live(f, d, i, &o, &l) || d->mirror[i].slot == rm->mirror->slot)
			break;
	}
	if (i == SHMWIN_MIRRORS) {
		ret = sio__err(ENOSPC, "device %u has all %d doorbell mirrors in use by other kernels' borrowers",
			       dev->id, SHMWIN_MIRRORS);
		goto out;
	}
	d->mirror[i].slot = rm->mirror->slot;
	d->mirror[i].gen = rm->mirror->gen;
	*vaddr = va;
	*size = bsize;
	va = NULL;
out:
	sio__unlock(f);
	if (regs)
		shmwin_unmap(regs, 4096);
	if (va)
		shmwin_unmap(va, bsize);
	return ret;
}

static int remote_dma_map(struct sio_device *dev, struct sio_segment *seg, uint64_t *bus)
{
	struct sio_fabric *f = dev->f;
	struct shmwin_dev *d;
	uint64_t off, len;
	int ret;

	if (seg->f != f)
		return sio__err(EINVAL, "the segment belongs to another fabric handle");
	if ((ret = sio__lock(f)))
		return ret;
	if (!(d = exported(f, dev->slot)))
		ret = sio__err(ENODEV, "device %u is no longer exported by its lender", dev->id);
	else if (seg->kind != SIO_SEG_RAM)
		ret = sio__err(ENOTSUP, "device %u is lent by another kernel: it reaches memory in the window only, not segment %u (a %s)",
			       dev->id, seg->id, seg->kind == SIO_SEG_BAR ? "BAR" : "GPU segment");
	else if (!(ret = sio__seg_check(seg)) && !(ret = shmwin_seg_where(f, seg->slot, &off, &len)))
		*bus = d->window_bus + off;
	sio__unlock(f);
	return ret;
}

static int remote_dma_unmap(struct sio_device *dev, struct sio_segment *seg)
{
	(void)dev;
	(void)seg;
	return 0;	/* the window stays mapped for the device */
}

static void remote_release(struct sio_device *dev)
{
	struct remote *rm = dev->backend_priv;

	if (!rm)
		return;
	if (rm->mirror)
		sio_segment_close(rm->mirror);
	free(rm);
	dev->backend_priv = NULL;
}

/* Lock held: the landing segment of group slot @g, if it serves this group. */
static bool landing(struct sio_fabric *f, int g, uint64_t *off, uint64_t *len)
{
	const struct shmwin_group *sg = &shmwin_of(f)->hdr->groups[g];
	const struct reg_seg *ls = reg_seg_at(f->reg, sg->slot);

	return sg->gen && ls && ls->used && ls->gen == sg->gen &&
	       f->reg->groups[g].gen == sg->group_gen && !shmwin_seg_where(f, sg->slot, off, len);
}

/*
 * The address at which the device's write reaches group @group: its landing
 * segment in the window (made by the first mapper, owned by it), which the
 * lender's relay copies into the subscribers' segments.
 */
static int window_mcast_map(struct sio_device *dev, uint32_t group, uint64_t *bus)
{
	struct sio_fabric *f = dev->f;
	struct sio_segment *seg = NULL;
	struct shmwin_dev *d;
	uint64_t off, len, size;
	int g, ret;

	for (int tries = 0; tries < 2; tries++) {
		if ((ret = sio__lock(f)))
			break;
		if ((g = ret = sio__mcast_group(f, group)) < 0) {
			sio__unlock(f);
			break;
		}
		size = f->reg->groups[g].size;
		if (!(d = exported(f, dev->slot))) {
			ret = sio__err(ENODEV, "device %u is no longer exported by its lender", dev->id);
		} else if (landing(f, g, &off, &len)) {
			*bus = d->window_bus + off;
			ret = 0;
		} else if (seg) {	/* made below: record it as the group's */
			shmwin_of(f)->hdr->groups[g] = (struct shmwin_group){
				.slot = seg->slot, .gen = seg->gen, .group_gen = f->reg->groups[g].gen };
			ret = shmwin_seg_where(f, seg->slot, &off, &len);
			if (!ret) {
				*bus = d->window_bus + off;
				seg = NULL;	/* kept: the group's landing until this process leaves */
			}
		} else {
			ret = -EAGAIN;
		}
		sio__unlock(f);
		if (ret != -EAGAIN)
			break;
		if ((ret = sio_segment_create_on(f, f->node, 0, size ? size : 4096, 0, &seg)))
			break;
	}
	if (seg)
		sio_segment_close(seg);
	return ret;
}

static const struct sio_device_ops remote_ops = {
	.name = "vfio via shmwin",
	.bar_map = remote_bar_map,
	.dma_map = remote_dma_map,
	.dma_unmap = remote_dma_unmap,
	.mcast_map = window_mcast_map,
	.release = remote_release,
};

/*
 * A borrower on the lender's own kernel: vfio's ops, and multicast through
 * the window. Without an IOMMU (uio) the lender cannot translate the window
 * (MMIO) by pagemap: its segments are at the window's bus address + offset,
 * as for a remote borrower.
 */
static struct sio_device_ops local_ops, local_bus_ops;
static pthread_once_t local_once = PTHREAD_ONCE_INIT;

static void local_init(void)
{
	const struct sio_device_ops *v = sio__device_ops(SIO_BACKEND_VFIO);

	if (v) {
		local_ops = *v;
		local_ops.mcast_map = window_mcast_map;
		local_bus_ops = local_ops;
		local_bus_ops.dma_map = remote_dma_map;
		local_bus_ops.dma_unmap = remote_dma_unmap;
	}
}

const struct sio_device_ops *sio__shmwin_dev_ops(struct sio_fabric *f, int dev)
{
	struct shmwin_fabric *s = shmwin_of(f);
	const struct reg_dev *dv = reg_dev_at(f->reg, dev);

	if (!exported(f, dev) || !dv || dv->owner < 0 || dv->owner >= SIO_MAX_PROCS)
		return NULL;
	if (s->hdr->procs[dv->owner].boot == shmwin_boot_id()) {
		pthread_once(&local_once, local_init);
		if (!local_ops.name)
			return NULL;
		return dv->backend == SIO_BACKEND_UIO ? &local_bus_ops : &local_ops;
	}
	return &remote_ops;
}
