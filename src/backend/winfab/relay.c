/* SPDX-License-Identifier: MIT */
/*
 * Devices across kernels on the window fabric.
 *
 * DMA: the lender maps each pool of memory into its device's bus space
 * once (vfio: VFIO_IOMMU_MAP_DMA of its mapping of the pool: peer to peer
 * through the IOMMU when the pool is a window; uio: the pool's own bus
 * address), so every segment is reachable at pool_bus + its offset, and a
 * remote borrower computes that address with no request to the lender. The
 * IOMMU confines the device to the pools, not to the segments mapped for
 * it: the isolation is per pool here, per segment on the sim backend and on
 * one vfio host. Pools that appear later (ntb: a node that joins, or comes
 * back) are mapped as the relay thread finds them. Where the source reaches
 * a pool through a further adapter too (ntb: a second NTB between the same
 * hosts), the pool is mapped a second time through it, for the borrows on
 * a path through that adapter (sio_device_use_adapter(): a multipath
 * client's backup): their segments' bus addresses go through it, so that a
 * fault of the first NTB leaves their DMA alone.
 *
 * MMIO: where a remote node cannot store to the lender's BAR (ivshmem; an
 * NTB whose hardware driver refuses a window onto it), each remote
 * borrower's BAR0 is a mirror on the lender's node, and the lender's relay
 * thread forwards the doorbell writes it sees there to the real BAR0,
 * shadow-doorbell style: it takes each value, leaving an impossible one
 * (WF_DB_EMPTY) in its place, so every write is forwarded once, a repeated
 * value too. Which writes are doorbells the relay does not know by itself:
 * the lender describes them (struct sio_doorbells, from the device's
 * driver), and a device lent without a description is not relayed. It
 * forwards what the borrower could have written to a mapping of BAR0: every
 * described doorbell while BAR0 is unconfined (QEMU's NVMe: a manager of
 * another kernel rings the admin queue), from the description's @confined
 * on once the manager confines it. Other register writes are not forwarded
 * (a remote manager takes a controller over without a reset, or needs a
 * window); the registers the description calls live are read again every
 * 5 ms for every mirror.
 *
 * Multicast: one window cannot fan a device write out to several places as
 * a PCIe switch's multicast does. A group's address is a landing segment;
 * the relay copies what lands there into every subscriber's segment when
 * they differ (every 5 ms). Subscribers see the data after that copy.
 */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "winfab.h"

#define NAP_MIN_NS	2000ull
#define NAP_MAX_NS	100000ull	/* while a mirror is watched */
#define NAP_IDLE_NS	10000000ull	/* while none is */
#define REGS_MAX	4096		/* the register copy: one page */

struct relay_pool {			/* a pool, mapped here and for the device */
	void *va;
	uint64_t len, bus, epoch;
	int err;			/* the last failure said, 0: none */
};

struct wf_relay {
	struct wf_relay *next;
	struct sio_fabric *f;
	struct wf_fabric *s;
	int dev;
	struct sio_dev_export x;
	struct relay_pool pool[SIO_MAX_ADAPTERS][WF_MAX_POOLS];	/* through each adapter */
	struct sio_segment *regs;
	volatile uint32_t *regs_va;
	pthread_t thr;
	_Atomic bool stop;
	struct {			/* the mirrors, in the pools as this relay maps them */
		int32_t slot;
		uint64_t gen;
		volatile uint32_t *va;
	} m[WF_MIRRORS];
};

static volatile uint32_t *reg32(volatile void *bar, uint64_t off)
{
	return (volatile uint32_t *)((volatile char *)bar + off);
}

/*
 * Segment slot @slot through the relay's mapping of its pool, and its
 * length, or NULL: not live, or in a pool the relay has not mapped.
 */
static void *seg_va(struct wf_relay *r, int slot, uint64_t *len)
{
	uint64_t off;
	int p;

	if (sio__wf_seg_where(r->f, slot, &p, &off, len) || !r->pool[0][p].va ||
	    r->pool[0][p].epoch != r->s->hdr->pools[p].epoch)
		return NULL;
	off -= r->s->hdr->pools[p].off;
	return off <= r->pool[0][p].len && *len <= r->pool[0][p].len - off ?
	       (char *)r->pool[0][p].va + off : NULL;
}

/* Pool @p through adapter @a: mapped here, and its bus address at offset 0. */
static int pool_src_map(struct wf_relay *r, int a, int p, void **va, uint64_t *phys)
{
	const struct wf_source *src = r->s->src;
	const struct wf_pool *pl = &r->s->hdr->pools[p];

	if (!a) {
		*phys = src->bus(r->s, p);
		return src->map(r->s, p, pl->off, pl->size, false, va);
	}
	if (!src->map_via || !src->bus_via)
		return -EHOSTUNREACH;
	*phys = src->bus_via(r->s, a, p);
	return src->map_via(r->s, a, p, pl->off, pl->size, false, va);
}

/*
 * Map pool @p for the device through adapter @a (again, when its memory is
 * new), and say where it is. A further adapter that does not reach the
 * pool (-EHOSTUNREACH) leaves its address 0: adapter 0's serves.
 */
static int pool_map(struct wf_relay *r, int a, int p)
{
	struct wf_dev *d = &r->s->hdr->devs[r->dev];
	const struct wf_pool *pl = &r->s->hdr->pools[p];
	struct relay_pool *rp = &r->pool[a][p];
	uint64_t phys, size = pl->size, epoch = pl->epoch, bus;
	void *va;
	int ret;

	if (rp->va) {
		d->pool_bus[a][p] = 0;
		r->x.dma_unmap(r->x.ctx, rp->bus, rp->len);
		r->s->src->unmap(r->s, rp->va, rp->len);
		rp->va = NULL;
	}
	if (!size)
		return 0;
	if ((ret = pool_src_map(r, a, p, &va, &phys)))
		return ret;
	if ((ret = r->x.dma_map(r->x.ctx, va, size, phys == UINT64_MAX ? phys : phys + pl->off,
				&bus))) {
		r->s->src->unmap(r->s, va, size);
		return ret;
	}
	*rp = (struct relay_pool){ .va = va, .len = size, .bus = bus, .epoch = epoch, .err = rp->err };
	/* the epoch before the address: a reader that sees the address sees its epoch */
	d->pool_epoch[a][p] = epoch;
	atomic_thread_fence(memory_order_release);
	d->pool_bus[a][p] = bus;
	return 0;
}

/* Tell the lender's log when pool @p's mapping through adapter @a fails
 * (@e), once per error, and when it works again; through a further
 * adapter, each new mapping with its bus address (a test tells which NTB
 * it is by it). */
static void pool_say(struct wf_relay *r, int a, int p, int e)
{
	char msg[SIO_ERRMSG_MAX + 128], via[48] = "";

	if (a && e == -EHOSTUNREACH)
		return;		/* not reached through it: adapter 0's address serves */
	if (a && !e ? !r->pool[a][p].va : e == r->pool[a][p].err)
		return;
	r->pool[a][p].err = e;
	if (!r->x.say)
		return;
	if (a)
		snprintf(via, sizeof(via), " through adapter %d", a);
	if (e)
		snprintf(msg, sizeof(msg), "the device cannot reach pool %d%s yet, tried again "
			 "every 5 ms: %s", p, via, sio_errmsg());
	else if (a)
		snprintf(msg, sizeof(msg), "the device reaches pool %d%s too, at bus address 0x%llx",
			 p, via, (unsigned long long)r->pool[a][p].bus);
	else
		snprintf(msg, sizeof(msg), "the device reaches pool %d", p);
	r->x.say(r->x.ctx, msg);
}

/* Errors of memory across a link that is down or not translated yet: the
 * source's (-ENOTCONN, -ENOLINK), or pinning a window that has no memory
 * behind it for now (-EFAULT). */
static bool link_err(int e)
{
	return e == -ENOTCONN || e == -ENOLINK || e == -EFAULT;
}

/*
 * Map the pools that are new since last time. Memory across a link (as
 * link_err() says) is said and tried again at the next sync. Return: the
 * first other error, if any.
 */
static int pools_sync(struct wf_relay *r)
{
	int ret = 0, e;

	for (int a = 0; a < SIO_MAX_ADAPTERS; a++)
		for (int p = 0; p < WF_MAX_POOLS; p++) {
			const struct wf_pool *pl = &r->s->hdr->pools[p];
			struct relay_pool *rp = &r->pool[a][p];

			if (pl->size == rp->len && pl->epoch == rp->epoch && (rp->va || !pl->size))
				continue;
			e = pool_map(r, a, p);
			pool_say(r, a, p, e);
			/* a further adapter's failure leaves adapter 0's way */
			if (!ret && !a && !link_err(e))
				ret = e;
		}
	return ret;
}

/* Is mirror entry @i of @d a live segment? */
static bool mirror_live(struct sio_fabric *f, const struct wf_dev *d, int i)
{
	int slot = d->mirror[i].slot;
	const struct reg_seg *sg = reg_seg_at(f->reg, slot);

	return sg && sg->used && sg->gen == d->mirror[i].gen && d->mirror[i].gen;
}

/* Follow the mirror table: find new mirrors, drop gone ones. */
static int mirrors_sync(struct wf_relay *r)
{
	const struct wf_dev *d = &r->s->hdr->devs[r->dev];
	int n = 0;

	for (int i = 0; i < WF_MIRRORS; i++) {
		uint64_t len = 0;
		void *va = mirror_live(r->f, d, i) ? seg_va(r, d->mirror[i].slot, &len) : NULL;

		r->m[i].va = va && len >= r->x.bar0_size ? va : NULL;
		r->m[i].slot = d->mirror[i].slot;
		r->m[i].gen = d->mirror[i].gen;
		n += r->m[i].va != NULL;
	}
	return n;
}

/* Copy each group's landing segment into its subscribers' segments where they differ. */
static void groups_sync(struct wf_relay *r)
{
	struct sio_registry *reg = r->f->reg;

	for (int g = 0; g < SIO_MAX_GROUPS; g++) {
		const struct wf_group *sg = &r->s->hdr->groups[g];
		const struct reg_group *gr = &reg->groups[g];
		const struct reg_seg *ls = reg_seg_at(reg, sg->slot);
		uint64_t llen, len;
		char *land, *sub;
		int n = gr->nsubs;

		if (!gr->used || !sg->gen || !ls || ls->gen != sg->gen || gr->gen != sg->group_gen ||
		    !(land = seg_va(r, sg->slot, &llen)) || n < 0 || n > SIO_MAX_SUBS)
			continue;
		if (llen > gr->size)
			llen = gr->size;
		for (int i = 0; i < n; i++) {
			const struct reg_seg *ss = reg_seg_at(reg, gr->sub_seg[i]);
			if (!ss || ss->gen != gr->sub_gen[i] || !(sub = seg_va(r, gr->sub_seg[i], &len)))
				continue;
			if (len > llen)
				len = llen;
			if (memcmp(sub, land, len))
				memcpy(sub, land, len);
		}
	}
}

/*
 * Every 5 ms: new pools and mirrors, the registers a borrower reads that
 * change (the description's live ones, fresh from BAR0: NVMe's CSTS, and CC
 * and the admin queue's for a manager that takes the controller over from
 * another kernel), multicast copies, and whether BAR0 is confined (then the
 * doorbells before the description's @confined are the lender's kernel's
 * alone, as a confined mapping would have them: NVMe's admin queue's).
 */
static int relay_sync(struct wf_relay *r, struct wf_dev *d, uint32_t *first_db)
{
	const struct reg_dev *dv = reg_dev_at(r->f->reg, r->dev);
	uint32_t regs[REGS_MAX / 4], live = r->x.db.live;
	int watched;

	pools_sync(r);
	watched = mirrors_sync(r);
	for (uint64_t o = 0; o < live; o += 4)
		regs[o / 4] = *reg32(r->x.bar0, o);
	memcpy((void *)r->regs_va, regs, live);
	for (int i = 0; i < WF_MIRRORS; i++)
		if (r->m[i].va)
			memcpy((void *)r->m[i].va, regs, live);
	groups_sync(r);
	*first_db = dv && dv->restricted[0] ? r->x.db.confined : 0;
	atomic_fetch_add(&d->relay_beat, 1);
	return watched;
}

/*
 * Forward what mirror @m holds of doorbells @first .. @ndb - 1; whether any
 * came. Each forward is counted with its share of the relay: how long since
 * the look before this one (@prev: it was written in between) and its write.
 */
static bool relay_mirror(struct wf_relay *r, struct wf_dev *d, volatile uint32_t *m,
			 uint32_t first, uint32_t ndb, uint64_t prev)
{
	const struct sio_doorbells *desc = &r->x.db;
	bool moved = false;
	uint64_t t0, t1;

	for (uint32_t q = first; q < ndb; q++) {
		uint64_t off = desc->base + (uint64_t)q * desc->stride;
		uint32_t *db = (uint32_t *)&m[off / 4];
		uint32_t v = __atomic_load_n(db, __ATOMIC_ACQUIRE);

		/* taken once: a borrower's write of the value it wrote before (a
		 * queue made anew) is forwarded too; the mirror is memory of this
		 * node, so the atomic is this CPU's */
		if (v == WF_DB_EMPTY ||
		    !__atomic_compare_exchange_n(db, &v, WF_DB_EMPTY, false, __ATOMIC_ACQ_REL,
						 __ATOMIC_ACQUIRE))
			continue;
		/* the borrower's queue entries are in memory before its doorbell */
		atomic_thread_fence(memory_order_seq_cst);
		t0 = sio__now_ns();
		*reg32(r->x.bar0, off) = v;
		t1 = sio__now_ns();
		atomic_fetch_add_explicit(&d->relayed, 1, memory_order_relaxed);
		atomic_fetch_add_explicit(&d->relay_wait_ns, t0 - prev, memory_order_relaxed);
		atomic_fetch_add_explicit(&d->relay_fwd_ns, t1 - t0, memory_order_relaxed);
		moved = true;
	}
	return moved;
}

static void *relay_thread(void *arg)
{
	struct wf_relay *r = arg;
	struct wf_dev *d = &r->s->hdr->devs[r->dev];
	const struct sio_doorbells *db = &r->x.db;
	uint32_t ndb = db->count, first = db->confined;
	uint64_t last_sync = 0, end = r->x.db_end, prev = sio__now_ns();
	struct sio_backoff nap = wf_nap(NAP_MIN_NS, NAP_MAX_NS);
	int watched = 0;

	/* the doorbells, and nothing past BAR0's registers (QEMU's NVMe keeps its MSI-X table in BAR0) */
	if (!end || end > r->x.bar0_size)
		end = r->x.bar0_size;
	if (ndb > WF_RELAY_DOORBELLS)
		ndb = WF_RELAY_DOORBELLS;
	if (ndb && (db->base >= end || ndb > (end - db->base) / db->stride))
		ndb = db->base < end ? (uint32_t)((end - db->base) / db->stride) : 0;
	while (!atomic_load(&r->stop)) {
		uint64_t now = sio__now_ns();
		bool moved = false;

		if (now - last_sync > 5000000ull) {
			watched = relay_sync(r, d, &first);
			last_sync = now;
		}
		for (int i = 0; i < WF_MIRRORS; i++)
			if (r->m[i].va)
				moved |= relay_mirror(r, d, r->m[i].va, first, ndb, prev);
		prev = now;
		if (moved) {
			nap = wf_nap(NAP_MIN_NS, NAP_MAX_NS);
			continue;
		}
		/* while no mirror is watched there is nothing to forward soon */
		nap.max_ns = watched ? NAP_MAX_NS : NAP_IDLE_NS;
		sio_backoff_wait(&nap);
	}
	return NULL;
}

static struct wf_relay *relay_of(struct wf_fabric *s, int dev, struct wf_relay ***pp)
{
	for (struct wf_relay **p = &s->relays; *p; p = &(*p)->next)
		if ((*p)->dev == dev) {
			if (pp)
				*pp = p;
			return *p;
		}
	return NULL;
}

static void relay_free(struct wf_relay *r)
{
	for (int a = 0; a < SIO_MAX_ADAPTERS; a++)
		for (int p = 0; p < WF_MAX_POOLS; p++)
			if (r->pool[a][p].va) {
				r->x.dma_unmap(r->x.ctx, r->pool[a][p].bus, r->pool[a][p].len);
				r->s->src->unmap(r->s, r->pool[a][p].va, r->pool[a][p].len);
			}
	if (r->regs)
		sio_segment_close(r->regs);
	free(r);
}

/* The copy of BAR0's registers that the description names, in a segment of the lender's node. */
static int regs_copy(struct wf_relay *r)
{
	int ret;

	if ((ret = sio_segment_create_on(r->f, r->f->node, 0, REGS_MAX, 0, &r->regs)) ||
	    (ret = sio_segment_map(r->regs, (void **)&r->regs_va)))
		return ret;
	for (uint64_t o = 0; o < r->x.db.regs; o += 4)
		r->regs_va[o / 4] = *reg32(r->x.bar0, o);
	return 0;
}

/* Does @x's description of BAR0 fit in it? One without doorbells says nothing. */
static int doorbells_check(struct wf_fabric *s, int dev, struct sio_dev_export *x)
{
	const struct sio_doorbells *db = &x->db;

	if (!db->count) {
		x->db = (struct sio_doorbells){ 0 };
		return 0;
	}
	if (db->stride < 4 || db->stride % 4 || db->base % 4 || db->base + 4 > x->bar0_size ||
	    db->regs > REGS_MAX || db->regs % 4 || db->regs > db->base || db->live > db->regs ||
	    db->live % 4)
		return sio__err(EINVAL, "%s: device slot %d: its doorbells (base 0x%llx, stride %u, count %u, registers 0x%x, live 0x%x) do not fit its BAR0 of %llu bytes",
				s->src->name, dev, (unsigned long long)db->base, db->stride, db->count,
				db->regs, db->live, (unsigned long long)x->bar0_size);
	return 0;
}

int sio__wf_dev_export(struct sio_fabric *f, int dev, struct sio_dev_export *x)
{
	struct wf_fabric *s = wf_of(f);
	struct wf_relay *r;
	struct wf_dev *d;
	int ret;

	if (dev < 0 || dev >= SIO_MAX_DEVS || !x->bar0 || !x->bar0_size)
		return sio__err(EINVAL, "%s: device slot %d: no BAR0 to export", s->src->name, dev);
	if ((ret = doorbells_check(s, dev, x)))
		return ret;
	if (!(r = calloc(1, sizeof(*r))))
		return sio__err(ENOMEM, "out of memory");
	r->f = f;
	r->s = s;
	r->dev = dev;
	r->x = *x;
	d = &s->hdr->devs[dev];
	if ((ret = regs_copy(r)) || (ret = sio__lock(f)))
		goto fail;
	*d = (struct wf_dev){ .gen = reg_dev_at(f->reg, dev)->gen, .regs_slot = r->regs->slot,
			      .regs_gen = r->regs->gen, .db_window = -1, .desc = x->db };
	sio__unlock(f);
	/* every pool, once, for the device: every segment at its pool's bus + offset */
	if ((ret = pools_sync(r)))
		goto fail;
	/* BAR0 through windows where the source can; the relay for the rest */
	d->db_err = x->bar0_bus == UINT64_MAX ? ENXIO : EOPNOTSUPP;
	if (s->src->bar_export && x->bar0_bus != UINT64_MAX)
		d->db_err = -s->src->bar_export(s, d, x->bar0_bus, x->bar0_size);
	if (!d->db_err)
		snprintf(x->how, sizeof(x->how), "stores through inbound window %d of each peer, translated to BAR0 (ports 0x%llx)%s",
			 d->db_window, (unsigned long long)d->db_ports,
			 d->db_emulated ? ", by the NTB driver's emulated forwarding" : "");
	else if (x->db.count)
		snprintf(x->how, sizeof(x->how), "relayed from a mirror on this node: no window onto BAR0 (%s)",
			 strerror(d->db_err));
	else
		snprintf(x->how, sizeof(x->how), "not relayed: no doorbells described, and no window onto BAR0 (%s)",
			 strerror(d->db_err));
	atomic_thread_fence(memory_order_release);
	d->bar0_size = x->bar0_size;	/* exported from here on */
	if ((ret = pthread_create(&r->thr, NULL, relay_thread, r))) {
		ret = sio__err(ret, "%s: cannot start the doorbell relay: %s", s->src->name,
			       strerror(ret));
		goto fail;
	}
	r->next = s->relays;
	s->relays = r;
	return 0;
fail:
	d->bar0_size = 0;
	d->gen = 0;
	if (d->db_window >= 0 && s->src->bar_unexport)
		s->src->bar_unexport(s, d);
	relay_free(r);
	return ret;
}

void sio__wf_dev_unexport(struct sio_fabric *f, int dev)
{
	struct wf_fabric *s = wf_of(f);
	struct wf_relay **pp, *r = relay_of(s, dev, &pp);

	if (!r)
		return;
	*pp = r->next;
	atomic_store(&r->stop, true);
	pthread_join(r->thr, NULL);
	if (s->hdr->devs[dev].db_window >= 0 && s->src->bar_unexport)
		s->src->bar_unexport(s, &s->hdr->devs[dev]);
	if (!sio__lock(f)) {
		memset(&s->hdr->devs[dev], 0, sizeof(s->hdr->devs[dev]));
		sio__unlock(f);
	}
	relay_free(r);
}

/* Borrower's side: what a borrow of a device of another kernel keeps. */
struct remote {
	struct sio_segment *mirror;
	int path, err;			/* enum wf_db_path, and why not a window */
};

/* Lock held: record how borrow @dev reaches BAR0, for smartio status. */
static void path_note(struct sio_fabric *f, struct sio_device *dev, int path, int err)
{
	const struct reg_borrow *b = reg_borrow_at(f->reg, dev->borrow);
	struct remote *rm = dev->backend_priv;

	rm->path = path;
	rm->err = err;
	if (b)
		wf_of(f)->hdr->borrow_db[dev->borrow] = (typeof(wf_of(f)->hdr->borrow_db[0])){
			.dev = b->dev, .proc = b->proc, .path = path, .err = err };
}

/* A path of enum wf_db_path as the public enum, and why (the relay's reason) in @why. */
static enum sio_bar_path path_of(int path, int err, char *why, size_t len)
{
	if (path == WF_DB_WINDOW)
		return SIO_BAR_PATH_NTB_WINDOW;
	if (path == WF_DB_WINDOW_EMULATED)
		return SIO_BAR_PATH_NTB_WINDOW_EMULATED;
	if (path != WF_DB_RELAY)
		return SIO_BAR_PATH_MAPPED;
	if (err == EXDEV)	/* mirror_map(): a further adapter's path */
		snprintf(why, len, "on a path through a further adapter, and the window onto BAR0 is adapter 0's");
	else
		snprintf(why, len, "no window: %s", strerror(err));
	return SIO_BAR_PATH_RELAYED;
}

enum sio_bar_path sio__wf_borrow_doorbells(struct sio_fabric *f, int borrow, char *why,
					   size_t len)
{
	const struct reg_borrow *b = reg_borrow_at(f->reg, borrow);
	const typeof(wf_of(f)->hdr->borrow_db[0]) *r;

	if (!b || !b->used)
		return SIO_BAR_PATH_MAPPED;
	r = &wf_of(f)->hdr->borrow_db[borrow];
	if (r->dev != b->dev || r->proc != b->proc)
		return SIO_BAR_PATH_MAPPED;
	return path_of(r->path, r->err, why, len);
}

static enum sio_bar_path remote_bar_path(struct sio_device *dev, int bar, char *why, size_t len)
{
	struct remote *rm = dev->backend_priv;

	return bar == 0 && rm ? path_of(rm->path, rm->err, why, len) : SIO_BAR_PATH_MAPPED;
}

/*
 * Lock held: BAR0 through the lender's window, where it made one that
 * reaches this node: through adapter 0's (a borrow on a path through a
 * further adapter takes the mirror, through that adapter).
 */
static int window_bar_map(struct sio_device *dev, struct wf_dev *d, void **vaddr)
{
	struct sio_fabric *f = dev->f;
	struct wf_fabric *s = wf_of(f);
	const struct reg_dev *dv = reg_dev_at(f->reg, dev->slot);

	if (d->db_window < 0 || !s->src->bar_map || f->node >= 64 || !(d->db_ports >> f->node & 1) ||
	    !dv || dev->adapter > 0)
		return -EOPNOTSUPP;
	return s->src->bar_map(s, d, dv->lender, d->bar0_size, vaddr);
}

/* Lock held: the window record of @dev's device, if it is exported and current. */
static struct wf_dev *exported(struct sio_fabric *f, int dev)
{
	struct wf_fabric *s = wf_of(f);
	const struct reg_dev *dv = reg_dev_at(f->reg, dev);
	struct wf_dev *d;

	if (!dv || !dv->used)
		return NULL;
	d = &s->hdr->devs[dev];
	return d->gen == dv->gen && d->bar0_size ? d : NULL;
}

/*
 * Lock held: why device slot @slot (id @id) is not exported: what says so
 * reads all ones, as memory behind a link that is down does (-ENOLINK, for
 * now), or its lender no longer exports it (-ENODEV).
 */
static int unexported(struct sio_fabric *f, int slot, uint32_t id)
{
	const struct reg_dev *dv = reg_dev_at(f->reg, slot);

	if ((dv && dv->gen == ~0ull) || wf_of(f)->hdr->devs[slot].gen == ~0ull)
		return sio__err(ENOLINK, "device %u: what its lender exports reads all ones, as memory behind a link that is down does (try again once it is back)",
				id);
	return sio__err(ENODEV, "device %u is no longer exported by its lender", id);
}

/* Lock held: the relay's counters of @dev's device, if it is lent across kernels. */
void sio__wf_dev_relay(struct sio_fabric *f, int dev, struct sio_device_info *o)
{
	struct wf_dev *d = exported(f, dev);

	if (!d)
		return;
	o->relayed = atomic_load(&d->relayed);
	o->relay_wait_ns = atomic_load(&d->relay_wait_ns);
	o->relay_fwd_ns = atomic_load(&d->relay_fwd_ns);
}

/*
 * Lock held: the bus address at which exported device @d reaches segment
 * slot @slot, through the lender's adapter @a where it maps the pool
 * through that one (a path through a second NTB), else through adapter 0.
 */
static int seg_bus(struct sio_fabric *f, const struct wf_dev *d, uint32_t id, int slot, int a,
		   uint64_t *bus)
{
	const struct wf_hdr *h = wf_of(f)->hdr;
	uint64_t off, len;
	int p, ret = sio__wf_seg_where(f, slot, &p, &off, &len);

	if (ret)
		return ret;
	if (a > 0 && a < SIO_MAX_ADAPTERS && d->pool_bus[a][p] &&
	    d->pool_epoch[a][p] == h->pools[p].epoch) {
		*bus = d->pool_bus[a][p] + (off - h->pools[p].off);
		return 0;
	}
	if (!d->pool_bus[0][p] || d->pool_epoch[0][p] != h->pools[p].epoch)
		return sio__err(EHOSTUNREACH, "device %u's lender does not reach the memory of segment slot %d (pool %d) yet: it maps new memory within 5 ms, unless it cannot (its messages say why)",
				id, slot, p);
	*bus = d->pool_bus[0][p] + (off - h->pools[p].off);
	return 0;
}

/*
 * BAR0 through a mirror on the lender's node (its relay takes each value
 * there with a local atomic): the register page as the lender read it, no
 * doorbell written yet, recorded in the device's mirror table. A borrow on
 * a path through a further adapter maps the mirror through it, so that its
 * doorbells take the path its queues take (two NTBs: two PCIe paths, and
 * no order between a store on one and a store on the other).
 */
static int mirror_map(struct sio_device *dev, uint64_t bsize, int lender, void **vaddr)
{
	struct sio_fabric *f = dev->f;
	struct remote *rm = dev->backend_priv;
	void *va = NULL, *regs = NULL;
	struct wf_dev *d;
	int ret, i;

	if (!rm->mirror && (ret = sio_segment_create_on(f, lender, 0, bsize, 0, &rm->mirror)))
		return ret;
	if ((ret = sio__lock(f)))
		return ret;
	if (!(d = exported(f, dev->slot)) || d->bar0_size != bsize) {
		ret = d ? sio__err(ENODEV, "device %u was lent again meanwhile, with another BAR0",
				   dev->id) : unexported(f, dev->slot, dev->id);
		goto out;
	}
	if ((ret = sio__wf_slot_map_via(f, rm->mirror->slot, dev->adapter, 0, bsize, false, &va)) ||
	    (ret = sio__wf_slot_map(f, d->regs_slot, 0, 4096, true, &regs)))
		goto out;
	/* NVMe's CAP, VS, CSTS... as the lender read them; the record is input, so bounded */
	memcpy(va, regs, d->desc.regs <= REGS_MAX && d->desc.regs <= bsize ? d->desc.regs : 0);
	for (uint64_t o = d->desc.base; o + 4 <= bsize; o += 4)	/* no doorbell written yet */
		((uint32_t *)va)[o / 4] = WF_DB_EMPTY;
	for (i = 0; i < WF_MIRRORS; i++)
		if (!mirror_live(f, d, i) || d->mirror[i].slot == rm->mirror->slot)
			break;
	if (i == WF_MIRRORS) {
		ret = sio__err(ENOSPC, "device %u has all %d doorbell mirrors in use by other kernels' borrowers",
			       dev->id, WF_MIRRORS);
		goto out;
	}
	d->mirror[i].slot = rm->mirror->slot;
	d->mirror[i].gen = rm->mirror->gen;
	path_note(f, dev, WF_DB_RELAY, dev->adapter > 0 && !d->db_err ? EXDEV : d->db_err);
	*vaddr = va;
	va = NULL;
out:
	sio__unlock(f);
	if (regs)
		wf_of(f)->src->unmap(wf_of(f), regs, 4096);
	if (va)
		wf_of(f)->src->unmap(wf_of(f), va, bsize);
	return ret;
}

/* BAR0 of a device of another kernel: through the lender's window onto it, else a mirror. */
static int remote_bar_map(struct sio_device *dev, int bar, void **vaddr, uint64_t *size)
{
	struct sio_fabric *f = dev->f;
	struct wf_dev *d;
	uint64_t bsize = 0;
	uint32_t ndb = 0;
	int ret, lender = f->node;

	if (bar != 0)
		return sio__err(EOPNOTSUPP, "device %u is lent by another kernel: only its BAR0 doorbells reach it, not BAR%d",
				dev->id, bar);
	if (!dev->backend_priv && !(dev->backend_priv = calloc(1, sizeof(struct remote))))
		return sio__err(ENOMEM, "out of memory");
	if ((ret = sio__lock(f)))
		return ret;
	if ((d = exported(f, dev->slot))) {
		bsize = d->bar0_size;
		ndb = d->desc.count;
		lender = reg_dev_at(f->reg, dev->slot)->lender;
		if (!(ret = window_bar_map(dev, d, vaddr)))
			path_note(f, dev, d->db_emulated ? WF_DB_WINDOW_EMULATED : WF_DB_WINDOW, 0);
	} else {
		ret = unexported(f, dev->slot, dev->id);
	}
	sio__unlock(f);
	if (!d)
		return ret;
	if (ret && !ndb)
		return sio__err(EOPNOTSUPP, "device %u: no window reaches its BAR0 from this kernel, and its lender described no doorbells for its relay to forward (a driver's lender describes them: sio_vfio_lend_opts())",
				dev->id);
	if (ret)
		ret = mirror_map(dev, bsize, lender, vaddr);
	if (!ret)
		*size = bsize;
	return ret;
}

static int remote_dma_map(struct sio_device *dev, struct sio_segment *seg, uint64_t *bus)
{
	struct sio_fabric *f = dev->f;
	struct wf_dev *d;
	int ret;

	if (seg->f != f)
		return sio__err(EINVAL, "the segment belongs to another fabric handle");
	if ((ret = sio__lock(f)))
		return ret;
	if (!(d = exported(f, dev->slot)))
		ret = unexported(f, dev->slot, dev->id);
	else if (seg->kind != SIO_SEG_RAM)
		ret = sio__err(ENOTSUP, "device %u is lent by another kernel: it reaches memory in the window only, not segment %u (a %s)",
			       dev->id, seg->id, seg->kind == SIO_SEG_BAR ? "BAR" : "GPU segment");
	else if (!(ret = sio__seg_check(seg)))
		ret = seg_bus(f, d, dev->id, seg->slot, dev->adapter, bus);
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
static bool landing(struct sio_fabric *f, int g)
{
	const struct wf_group *sg = &wf_of(f)->hdr->groups[g];
	const struct reg_seg *ls = reg_seg_at(f->reg, sg->slot);

	return sg->gen && ls && ls->used && ls->gen == sg->gen &&
	       f->reg->groups[g].gen == sg->group_gen;
}

/*
 * The address at which the device's write reaches group @group: its landing
 * segment on the lender's node (made by the first mapper, owned by it), which the
 * lender's relay copies into the subscribers' segments.
 */
static int window_mcast_map(struct sio_device *dev, uint32_t group, uint64_t *bus)
{
	struct sio_fabric *f = dev->f;
	struct sio_segment *seg = NULL;
	struct wf_dev *d;
	uint64_t size;
	int g, ret, lender = f->node;

	for (int tries = 0; tries < 2; tries++) {
		if ((ret = sio__lock(f)))
			break;
		if ((g = ret = sio__mcast_group(f, group)) < 0) {
			sio__unlock(f);
			break;
		}
		size = f->reg->groups[g].size;
		if (reg_dev_at(f->reg, dev->slot))
			lender = reg_dev_at(f->reg, dev->slot)->lender;
		if (!(d = exported(f, dev->slot))) {
			ret = unexported(f, dev->slot, dev->id);
		} else if (landing(f, g)) {
			ret = seg_bus(f, d, dev->id, wf_of(f)->hdr->groups[g].slot, 0, bus);
		} else if (seg) {	/* made below: record it as the group's */
			wf_of(f)->hdr->groups[g] = (struct wf_group){
				.slot = seg->slot, .gen = seg->gen, .group_gen = f->reg->groups[g].gen };
			ret = seg_bus(f, d, dev->id, seg->slot, 0, bus);
			if (!ret)
				seg = NULL;	/* kept: the group's landing until this process leaves */
		} else {
			ret = -EAGAIN;
		}
		sio__unlock(f);
		if (ret != -EAGAIN)
			break;
		/* on the lender's node, which the relay copies from */
		if ((ret = sio_segment_create_on(f, lender, 0, size ? size : 4096, 0, &seg)))
			break;
	}
	if (seg)
		sio_segment_close(seg);
	return ret;
}

static const struct sio_device_ops remote_ops = {
	.name = "lent across kernels",
	.bar_map = remote_bar_map,
	.dma_map = remote_dma_map,
	.dma_unmap = remote_dma_unmap,
	.mcast_map = window_mcast_map,
	.bar_path = remote_bar_path,
	.release = remote_release,
};

/*
 * A borrower on the lender's own kernel: vfio's ops, and multicast through
 * the pools. Its segments, like a remote borrower's, are at their pool's bus
 * address + offset (the lender mapped every pool for the device): one
 * address for a segment from every kernel, so that a manager of another
 * kernel takes over the admin queue this kernel's manager made, where the
 * controller was told it is. Without an IOMMU (uio) that is the only way:
 * the lender cannot translate a window (MMIO) by pagemap. A vfio borrower's
 * other segments (a BAR, GPU memory) go through vfio's own mappings.
 */
static struct sio_device_ops local_ops, local_bus_ops;
static pthread_once_t local_once = PTHREAD_ONCE_INIT;

static int local_dma_map(struct sio_device *dev, struct sio_segment *seg, uint64_t *bus)
{
	if (seg->kind == SIO_SEG_RAM)
		return remote_dma_map(dev, seg, bus);
	return sio__device_ops(SIO_BACKEND_VFIO)->dma_map(dev, seg, bus);
}

static int local_dma_unmap(struct sio_device *dev, struct sio_segment *seg)
{
	if (seg->kind == SIO_SEG_RAM)
		return remote_dma_unmap(dev, seg);
	return sio__device_ops(SIO_BACKEND_VFIO)->dma_unmap(dev, seg);
}

static void local_init(void)
{
	const struct sio_device_ops *v = sio__device_ops(SIO_BACKEND_VFIO);

	if (v) {
		local_ops = *v;
		local_ops.mcast_map = window_mcast_map;
		local_bus_ops = local_ops;
		local_ops.dma_map = local_dma_map;
		local_ops.dma_unmap = local_dma_unmap;
		local_bus_ops.dma_map = remote_dma_map;
		local_bus_ops.dma_unmap = remote_dma_unmap;
	}
}

const struct sio_device_ops *sio__wf_dev_ops(struct sio_fabric *f, int dev)
{
	struct wf_fabric *s = wf_of(f);
	const struct reg_dev *dv = reg_dev_at(f->reg, dev);

	if (!exported(f, dev) || !dv || dv->owner < 0 || dv->owner >= SIO_MAX_PROCS)
		return NULL;
	if (s->hdr->procs[dv->owner].boot == sio__wf_boot_id()) {
		pthread_once(&local_once, local_init);
		if (!local_ops.name)
			return NULL;
		return dv->backend == SIO_BACKEND_UIO ? &local_bus_ops : &local_ops;
	}
	return &remote_ops;
}
