/* SPDX-License-Identifier: MIT */
/*
 * A segment's own window. Where the owner's hardware driver translates an
 * inbound window to any page-aligned range (NTB hardware with page-granular
 * translation; ntb_hw_ivshmem with page_xlat=1), a process of another
 * kernel that connects to a segment reaches it through an inbound window of
 * the owner's NTB for its kernel, translated to that segment's pages alone
 * (per-segment isolation), instead of through window 0, which reaches all
 * of the owner's memory (the pool). The owner's node service holds the
 * NTB file, so it makes the translation:
 *
 *   the connecting process   registry lock held (the core has counted a
 *                            window of its node for the connection), writes
 *                            a request in the fabric's state (struct
 *                            wf_ownwin), rings the fabric's doorbell, waits for
 *                            the answer (bounded), maps its outbound window
 *   the owner's service      translates a free window (1 .. per_peer) of the
 *                            peer to the segment, answers, rings; clears the
 *                            translation once no window of the core's counts
 *                            that node's connection (disconnected, or its
 *                            processes dead and reclaimed)
 *
 * Where the hardware translates outbound only (IDT), the connecting kernel
 * translates a window of its own instead: the same request is answered by
 * its own node service, which translates its outbound window (1 ..
 * per_peer) to the owner to the segment's bus address (the owner's memory,
 * as the owner's words say, boot.c) and clears it in the same way.
 *
 * Every failure (the driver translates whole regions, no window free, a
 * refusal, no answer) connects through the pool window instead, and says why.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "ntb.h"

#define OWNWIN_WAIT_MS	5000	/* $SMARTIO_NTB_XLAT_MS: the owner's answer, at most */
#define OWNWIN_NAP_MAX_NS	50000000ull

int sio__ntb_ownwin_wait_check(uint64_t *ns)
{
	return sio__env_ms("SMARTIO_NTB_XLAT_MS", OWNWIN_WAIT_MS, 1, 599999, ns);
}

static uint64_t wait_ns(void)
{
	uint64_t ns;

	/* refused when the fabric was opened; the default if changed since */
	sio__ntb_ownwin_wait_check(&ns);
	return ns;
}

static bool connected(struct sio_fabric *f, int node, int slot, uint64_t gen);

/*
 * Is the entry free to take: never used, void (its owner's service is
 * gone), released, or refused to a connection that is gone (a refusal
 * stays while its connection does: smartio status says why)?
 */
static bool entry_free(struct sio_fabric *f, const struct wf_ownwin *x)
{
	const struct wf_hdr *h = wf_of(f)->hdr;

	if (!x->seq || x->owner < 0 || x->owner >= WF_MAX_POOLS ||
	    h->pools[x->owner].epoch != x->epoch)
		return true;
	if (atomic_load_explicit(&x->done, memory_order_acquire) != x->seq || x->widx >= 0)
		return false;
	return !x->err || !connected(f, x->peer, x->seg, x->seg_gen);
}

/* Lock held: the entry of (@owner, @me, @slot, @gen) (*@same), else a free one; -1: none. */
static int entry_of(struct sio_fabric *f, int owner, int me, int slot, uint64_t gen, bool *same)
{
	const struct wf_hdr *h = wf_of(f)->hdr;
	int free_i = -1;

	for (int i = 0; i < WF_OWNWINS; i++) {
		const struct wf_ownwin *x = &h->ownwin[i];

		if (x->seq && x->owner == owner && x->peer == me && x->seg == slot &&
		    x->seg_gen == gen && x->epoch == h->pools[owner].epoch) {
			*same = true;
			return i;
		}
		if (free_i < 0 && entry_free(f, x))
			free_i = i;
	}
	*same = false;
	return free_i;
}

/* Wait for the owner's answer to @seq, bounded, napping longer each time. */
static int answer_wait(struct wf_fabric *s, struct wf_ownwin *x, uint32_t seq)
{
	uint64_t end = sio__now_ns() + wait_ns(), nap = 1000000;
	uint32_t d;

	while ((d = atomic_load_explicit(&x->done, memory_order_acquire)) != seq) {
		if (sio__now_ns() >= end)
			return ETIMEDOUT;
		/* the owner rings when it answers: this kernel's service wakes us */
		if (!sio__wf_wake_sleep(s, (uint32_t *)&x->done, d, nap)) {
			struct timespec ts = { 0, (long)nap };
			nanosleep(&ts, NULL);
		}
		nap = nap * 2 < OWNWIN_NAP_MAX_NS ? nap * 2 : OWNWIN_NAP_MAX_NS;
	}
	return x->widx >= 0 ? 0 : x->err > 0 ? x->err : EIO;
}

/* Lock held: ask @owner's service for a window to segment @slot; 0, or why not (an errno). */
static int request(struct sio_fabric *f, int owner, int slot, uint64_t gen, struct wf_ownwin **out)
{
	struct wf_fabric *s = wf_of(f);
	struct wf_hdr *h = s->hdr;
	int me = src_of(s)->node.port, i;
	struct wf_ownwin *x;
	uint32_t seq;
	bool same;

	if ((i = entry_of(f, owner, me, slot, gen, &same)) < 0)
		return EMFILE;
	x = &h->ownwin[i];
	if (same && atomic_load_explicit(&x->done, memory_order_acquire) != x->seq)
		return ETIMEDOUT;	/* an earlier request is still unanswered: no second wait */
	seq = x->seq + 1 ? x->seq + 1 : 1;
	/* the requester's words only: @done and what follows are the owner's */
	x->seg = slot;
	x->seg_gen = gen;
	x->owner = owner;
	x->peer = me;
	x->epoch = h->pools[owner].epoch;
	atomic_thread_fence(memory_order_release);	/* the request before its number */
	__atomic_store_n(&x->seq, seq, __ATOMIC_RELEASE);
	sio__wf_wake_all(s);
	if (!(src_of(s)->info.flags & SIO_NTB_F_INBOUND_XLAT))
		sio__ntb_node_poke(src_of(s)->node.fake_port);	/* outbound: our own service answers */
	*out = x;
	return answer_wait(s, x, seq);
}

/* Record how the mapping at @va connects. */
static void note(struct ntbsrc *n, const void *va, int widx, int why)
{
	uintptr_t a = (uintptr_t)va & ~(uintptr_t)(WF_PAGE - 1);

	pthread_mutex_lock(&n->mu);
	for (struct peer_map *m = n->maps; m; m = m->next)
		if ((uintptr_t)m->va == a) {
			m->widx = widx;
			m->why = why;
		}
	pthread_mutex_unlock(&n->mu);
}

static bool link_up(struct ntbsrc *n, int port)
{
	struct sio_ntb_peer pr;
	int pidx = sio__ntbdev_pidx(n->dev, port);

	if (pidx < 0)
		return false;
	pr = (struct sio_ntb_peer){ .pidx = (uint32_t)pidx };
	return !ntbdev_ioctl(n->dev, SIO_NTB_IOC_PEER, &pr) && pr.link_up;
}

/* Lock held: map [@off, @off + @len) of segment @slot of @owner through its own window; 0 or why not. */
static int own_window(struct sio_fabric *f, int slot, int owner, uint64_t seglen, uint64_t off,
		      uint64_t len, bool rdonly, void **va)
{
	struct wf_fabric *s = wf_of(f);
	struct ntbsrc *n = src_of(s);
	struct wf_ownwin *x = NULL;
	uint64_t woff, wsize;
	int why;

	if (s->hdr->pools[owner].seg_windows <= 0)
		return EOPNOTSUPP;
	if (!link_up(n, owner))
		return ENOTCONN;	/* no wait for a service that cannot hear us */
	if ((why = request(f, owner, slot, f->reg->segs[slot].gen, &x)))
		return why;
	if (sio__ntb_window_of(n, owner, (uint32_t)x->widx, &woff, &wsize))
		return ENXIO;
	if (wsize < seglen)
		return E2BIG;	/* said as the service's own refusal of a segment too large */
	if (sio__ntb_map_at(n, owner, woff + off, len, rdonly, va))
		return ENXIO;
	note(n, *va, x->widx, 0);
	return 0;
}

/*
 * A path through a further adapter maps through that adapter's NTB, onto
 * the owner's memory as that NTB reaches it (its pool window): a fault of
 * adapter 0's NTB leaves it alone. Where this node holds no such NTB, or
 * the owner does not export its memory through it, adapter 0's NTB
 * carries the path, as a path's link state alone follows the adapter.
 */
int sio__ntb_seg_connect(struct sio_fabric *f, int slot, int adapter, uint64_t off, uint64_t len,
			 bool rdonly, void **va)
{
	uint64_t at, size;
	int pool, why, ret;

	if ((ret = sio__wf_seg_where(f, slot, &pool, &at, &size)))
		return ret;
	if (pool == src_of(wf_of(f))->node.port || !len || off > size || len > size - off)
		return sio__wf_slot_map(f, slot, off, len, rdonly, va);	/* ours, or its error */
	if (adapter > 0 &&
	    (ret = sio__ntb_map_via(wf_of(f), adapter, pool, at + off, len, rdonly, va)) != -EHOSTUNREACH)
		return ret;
	if (!(why = own_window(f, slot, pool, size, off, len, rdonly, va)))
		return 0;
	if ((ret = sio__wf_slot_map(f, slot, off, len, rdonly, va)))
		return ret;
	note(src_of(wf_of(f)), *va, -1, why);
	return 0;
}

/* Why a connection to @owner's segment goes through its pool window. */
static const char *why_pool(int why, int owner, char *buf, size_t len)
{
	switch (why) {
	case EOPNOTSUPP:
		snprintf(buf, len, "port %d's hardware driver translates no window per segment", owner);
		break;
	case ENOSPC:
		snprintf(buf, len, "every window of port %d for this node is in use", owner);
		break;
	case ETIMEDOUT:
		snprintf(buf, len, "port %d's node service did not answer", owner);
		break;
	case EMFILE:
		snprintf(buf, len, "the fabric's %d own windows are all in use", WF_OWNWINS);
		break;
	case ENOTCONN:
		snprintf(buf, len, "port %d's link is down", owner);
		break;
	case E2BIG:
		snprintf(buf, len, "the segment is larger than port %d's windows", owner);
		break;
	default:
		snprintf(buf, len, "port %d refused a window: %s", owner, strerror(why));
	}
	return buf;
}

/* Lock held: does any window of the core's count node @node's connection to @slot? */
static bool connected(struct sio_fabric *f, int node, int slot, uint64_t gen)
{
	for (int a = 0; a < f->topo.adapters; a++)
		for (int w = 0; w < f->topo.windows; w++) {
			const struct reg_window *rw = sio__reg_window_at(f, node, a, w);

			if (rw && __atomic_load_n(&rw->refs, __ATOMIC_ACQUIRE) > 0 && rw->seg == slot &&
			    rw->seg_gen == gen)
				return true;
		}
	return false;
}

/* Node @node's connection to segment @slot of @owner, for smartio status. */
static void reach_of(struct sio_fabric *f, int owner, int node, int slot, char *buf, size_t len)
{
	const struct wf_hdr *h = wf_of(f)->hdr;
	char why[96];
	bool same;
	int i = entry_of(f, owner, node, slot, f->reg->segs[slot].gen, &same);
	const struct wf_ownwin *x = i >= 0 && same ? &h->ownwin[i] : NULL;
	bool answered = x && atomic_load_explicit(&x->done, memory_order_acquire) == x->seq;

	if (answered && x->widx >= 0)
		snprintf(buf, len, "node %d: own window %d (%llu KiB)", node, x->widx,
			 (unsigned long long)(x->size >> 10));
	else if (x && !answered)
		snprintf(buf, len, "node %d: pool window (%s)", node,
			 why_pool(ETIMEDOUT, owner, why, sizeof(why)));
	else
		snprintf(buf, len, "node %d: pool window (%s)", node,
			 x && x->err ? why_pool(x->err, owner, why, sizeof(why)) :
			 h->pools[owner].seg_windows <= 0 ? why_pool(EOPNOTSUPP, owner, why, sizeof(why)) :
			 "no own window was asked for");
}

/* Every node's connection to @slot, "; " between. */
static const char *reach_all(struct sio_fabric *f, int slot, char *buf, size_t len)
{
	int owner = f->reg->segs[slot].node;
	size_t at = 0;

	buf[0] = 0;
	for (int node = 0; node < f->topo.nodes && at < len; node++) {
		char one[160];

		if (node == owner || !connected(f, node, slot, f->reg->segs[slot].gen))
			continue;
		reach_of(f, owner, node, slot, one, sizeof(one));
		at += (size_t)snprintf(buf + at, len - at, "%s%s", at ? "; " : "", one);
	}
	return buf[0] ? buf : NULL;
}

const char *sio__ntb_seg_reach(struct sio_fabric *f, int slot, const void *va, char *buf, size_t len)
{
	struct ntbsrc *n = src_of(wf_of(f));
	uintptr_t a = (uintptr_t)va & ~(uintptr_t)(WF_PAGE - 1);
	int widx = -2, why = 0, port = -1, adapter = 0;
	char w[96];

	if (slot < 0 || slot >= SIO_MAX_SEGS || !f->reg->segs[slot].used)
		return NULL;
	if (!va)
		return reach_all(f, slot, buf, len);
	pthread_mutex_lock(&n->mu);
	for (struct peer_map *m = n->maps; m; m = m->next)
		if ((uintptr_t)m->va == a)
			widx = m->widx, why = m->why, port = m->port, adapter = m->adapter;
	pthread_mutex_unlock(&n->mu);
	if (widx == -2)
		return NULL;
	if (adapter)
		snprintf(buf, len, "pool window through adapter %d: port %d's window %d of %s, all of its memory",
			 adapter, port, NTB_MEM_WIDX, n->adev[adapter]->what);
	else if (widx >= 0 && !(n->info.flags & SIO_NTB_F_INBOUND_XLAT))
		snprintf(buf, len, "own window: this node's outbound window %d to port %d, translated to this segment alone",
			 widx, port);
	else if (widx >= 0)
		snprintf(buf, len, "own window: port %d's inbound window %d for this node, translated to this segment alone",
			 port, widx);
	else
		snprintf(buf, len, "pool window: port %d's window %d, all of its memory (%s)", port,
			 NTB_MEM_WIDX, why ? why_pool(why, port, w, sizeof(w)) : "not a connection");
	return buf;
}

/* ---- the owner's node service ---- */

void sio__ntb_ownwin_probe(struct ntbdev *d, const struct sio_ntb_info *i, uint32_t pidx,
		    struct ntb_ownwins *x)
{
	struct sio_ntb_mw m = { .pidx = pidx, .widx = 1 };

	if (x->align)
		return;
	if (i->mws_per_peer < 2) {	/* window 0 is the pool's: none left */
		x->align = ~0ull;
		return;
	}
	if (ntbdev_ioctl(d, SIO_NTB_IOC_MW, &m))
		return;	/* its link went: ask again later */
	x->align = m.addr_align ? m.addr_align : 1;
	x->size_max = m.size_max;
	x->outbound = i->flags & SIO_NTB_F_INBOUND_XLAT ? NULL : i;
	if (m.addr_align <= WF_PAGE && m.size_align <= WF_PAGE)
		x->per_peer = i->mws_per_peer - 1 < NTB_OWNWIN_MAX ? i->mws_per_peer - 1 : NTB_OWNWIN_MAX;
}

/*
 * The memory of @e's owner: this node's, or where the hardware translates
 * outbound, the owner's as its words say (peer @pidx).
 */
static int owner_mem(struct ntbdev *d, struct ntb_node *node, const struct ntb_ownwins *x,
		     int pidx, uint64_t *base, uint64_t *len)
{
	if (!x->outbound) {
		*base = node->mem_dma;
		*len = node->mem_size;
		return 0;
	}
	return sio__ntb_mem_of_peer(d, x->outbound, &node->board, (uint32_t)pidx, base, len) ? ENOTCONN : 0;
}

/* Where segment @e asks for lies in its owner's memory: its bus address and size. */
static int seg_range(struct sio_fabric *f, struct ntbdev *d, struct ntb_node *node,
		     const struct ntb_ownwins *x, int pidx, const struct wf_ownwin *e,
		     uint64_t *addr, uint64_t *size)
{
	const struct wf_hdr *h = wf_of(f)->hdr;
	const struct wf_pool *p = &h->pools[e->owner];
	const struct wf_seg *w;
	uint64_t off, base, len;

	if (e->seg < 0 || e->seg >= SIO_MAX_SEGS)
		return EINVAL;
	w = &h->segs[e->seg];
	if (!w->len || w->gen != e->seg_gen || w->pool != e->owner ||
	    w->epoch != (x->outbound ? p->epoch : node->epoch))
		return ENOENT;
	if (owner_mem(d, node, x, pidx, &base, &len))
		return ENOTCONN;
	off = p->off + w->off;
	if (off > len || w->len > len - off || ((off | w->len) & (WF_PAGE - 1)))
		return EINVAL;
	*addr = base + off;
	*size = w->len;
	return 0;
}

/*
 * Translate window @w of peer @pidx to @size bytes at @addr (0 bytes:
 * clear it): the peer's inbound window, or where the hardware translates
 * outbound, this node's outbound window @w to the peer. 0 or an errno.
 */
static int xlat(struct ntbdev *d, const struct ntb_ownwins *x, int pidx, int w, uint64_t addr,
		uint64_t size)
{
	struct sio_ntb_xlat t = { .pidx = (uint32_t)pidx, .widx = (uint32_t)w, .addr = addr,
				  .size = size };
	struct sio_ntb_peer_xlat o = { .pidx = (uint32_t)pidx, .addr = addr, .size = size };

	if (!x->outbound)
		return -ntbdev_ioctl(d, SIO_NTB_IOC_MW_XLAT, &t);
	o.widx = (uint32_t)pidx * x->outbound->mws_per_peer + (uint32_t)w;
	return -ntbdev_ioctl(d, SIO_NTB_IOC_PEER_MW_XLAT, &o);
}

/* The window entry @i holds for peer @pidx, else a free one taken; -1: none. */
static int window_for(struct ntb_ownwins *x, int pidx, int i)
{
	int w;

	for (w = 1; w <= (int)x->per_peer; w++)
		if (x->holder[pidx][w] == i + 1)
			return w;
	for (w = 1; w <= (int)x->per_peer; w++)
		if (!x->holder[pidx][w]) {
			x->holder[pidx][w] = (int16_t)(i + 1);
			return w;
		}
	return -1;
}

/* Translate window @w of peer @pidx as asked, and keep what it translates. */
static int xlat_keep(struct ntbdev *d, struct ntb_ownwins *x, int pidx, int w, uint64_t addr,
		     uint64_t size)
{
	int err = xlat(d, x, pidx, w, addr, size);

	x->at[pidx][w] = err ? 0 : addr;
	x->len[pidx][w] = err ? 0 : size;
	return err;
}

static void drop(struct ntbdev *d, struct ntb_ownwins *x, int pidx, int w)
{
	xlat_keep(d, x, pidx, w, 0, 0);	/* size 0: cleared */
	x->holder[pidx][w] = 0;
}

/*
 * Window @w of peer @pidx to [@addr, +@size), for its holder's request.
 * Translated there already (another process of the peer's kernel asked
 * before: the entry is the kernel's), it is left alone: translated again,
 * the driver says the window is taken (-EEXIST), and taking that for a
 * failure would clear it under the connections that use it. Translated
 * elsewhere (the entry, taken again, asks for another segment), it is
 * cleared first.
 */
static int xlat_for(struct ntbdev *d, struct ntb_ownwins *x, int pidx, int w, uint64_t addr,
		    uint64_t size)
{
	if (x->len[pidx][w] == size && x->at[pidx][w] == addr)
		return 0;
	if (x->len[pidx][w])
		xlat_keep(d, x, pidx, w, 0, 0);
	return xlat_keep(d, x, pidx, w, addr, size);
}

/*
 * Answer request @seq of entry @i: translate a window of its peer to the
 * segment (outbound: a window of this node to its owner).
 */
static void answer(struct sio_fabric *f, struct ntbdev *d, struct ntb_node *node,
		   struct ntb_ownwins *x, int i, uint32_t seq)
{
	struct wf_ownwin *e = &wf_of(f)->hdr->ownwin[i];
	int pidx = sio__ntbdev_pidx(d, x->outbound ? e->owner : e->peer), w = -1, err;
	uint64_t addr = 0, size = 0;

	if (pidx < 0 || pidx >= SIO_NTB_MAX_PEERS)
		err = ENODEV;
	else if (!x->per_peer)
		err = EOPNOTSUPP;
	else if (!(err = seg_range(f, d, node, x, pidx, e, &addr, &size)) && size > x->size_max)
		err = E2BIG;
	else if (!err && (w = window_for(x, pidx, i)) < 0)
		err = ENOSPC;
	if (!err)
		err = xlat_for(d, x, pidx, w, addr, size);
	for (int v = 1; err && pidx >= 0 && pidx < SIO_NTB_MAX_PEERS && v <= (int)x->per_peer; v++)
		if (x->holder[pidx][v] == i + 1)
			drop(d, x, pidx, v);	/* what it held before is no longer its */
	e->widx = err ? -1 : w;
	e->err = err;
	e->size = err ? 0 : size;
	atomic_store_explicit(&e->done, seq, memory_order_release);
}

/* Clear the windows that no connection uses any more. */
static void collect(struct sio_fabric *f, struct ntbdev *d, struct ntb_ownwins *x)
{
	struct wf_hdr *h = wf_of(f)->hdr;

	for (int p = 0; p < SIO_NTB_MAX_PEERS; p++)
		for (int w = 1; w <= (int)x->per_peer; w++) {
			int i = x->holder[p][w] - 1;
			struct wf_ownwin *e;
			uint32_t seq;

			if (i < 0 || i >= WF_OWNWINS)
				continue;
			e = &h->ownwin[i];
			seq = __atomic_load_n(&e->seq, __ATOMIC_ACQUIRE);
			if (atomic_load_explicit(&e->done, memory_order_acquire) != seq ||
			    connected(f, e->peer, e->seg, e->seg_gen))
				continue;	/* pending (answered first), or in use */
			drop(d, x, p, w);
			e->widx = -1;
		}
}

void sio__ntb_ownwin_reset(struct ntbdev *d, struct ntb_ownwins *x)
{
	for (int p = 0; p < SIO_NTB_MAX_PEERS; p++)
		for (int w = 1; w <= (int)x->per_peer; w++)
			if (x->holder[p][w])
				drop(d, x, p, w);
}

bool sio__ntb_ownwin_serve(struct sio_fabric *f, struct ntbdev *d, struct ntb_node *node,
		    struct ntb_ownwins *x)
{
	struct wf_hdr *h = wf_of(f)->hdr;
	bool rang = false;

	for (int i = 0; i < WF_OWNWINS; i++) {
		struct wf_ownwin *e = &h->ownwin[i];
		uint32_t seq = __atomic_load_n(&e->seq, __ATOMIC_ACQUIRE);

		/* the owner's service answers; outbound, the connecting kernel's */
		if (!seq || (x->outbound ? e->peer : e->owner) != node->port || e->owner < 0 ||
		    e->owner >= WF_MAX_POOLS ||
		    e->epoch != (x->outbound ? h->pools[e->owner].epoch : node->epoch) ||
		    atomic_load_explicit(&e->done, memory_order_acquire) == seq)
			continue;
		answer(f, d, node, x, i, seq);
		rang = true;
	}
	collect(f, d, x);
	if (rang)
		sio__wf_wake_all(wf_of(f));	/* the answers before the ring: sio__wf_wake_all fences */
	return rang;
}
