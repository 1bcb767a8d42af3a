/* SPDX-License-Identifier: MIT */
/*
 * The standby home of an ntb fabric: no host whose loss ends the fabric
 * (docs/ntb.md, "The home and its standby").
 *
 * The state (winfab's header, the registry) lives at the start of the home's
 * memory. One other node, the standby, keeps a copy at the start of its own
 * (every node that can host keeps that room: sio__ntb_pool_off()):
 *
 * - every holder of the registry lock copies the whole state there before
 *   it unlocks, so the copy holds every change the lock made, before any
 *   other process sees it. The copy's own word (wf_home.mirror, never
 *   copied) says whether it ended with the home's state intact: a copy that
 *   the home's link going down tore is no copy to take over from;
 * - the standby's node service takes over when the home's link is down: it
 *   names itself the home in its copy (the bakery cleared: the dead home's
 *   numbers with it), moves the epoch and publishes the bootstrap;
 * - every process's heartbeat thread watches the standby's copy, and once it
 *   names itself the home with a newer epoch, maps each of its mappings of
 *   the state again, in place (MAP_FIXED), onto the new home's memory: every
 *   pointer into the state stays valid.
 *
 * - two homes of one fabric (a partition healed, a home back after its
 *   standby took over): the rule (sio__ntb_home_rule()) has one yield; its
 *   service points its state at the other (wf_home.port), withdraws its
 *   bootstrap, and its processes follow as after a take-over, but only
 *   those the other's state still holds: nothing is merged.
 *
 * What a take-over loses: what lives in the state without the lock (each
 * process's heartbeat count, the events in flight on the rings, the relay's
 * counters, own windows' answers) is as the last unlock copied it; the
 * dead home's own processes, segments and pool, which are gone with it.
 */
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "env.h"
#include "ntb.h"

#define MIRROR_AT	offsetof(struct wf_hdr, home.mirror)

/*
 * The home's link as this process sees it, on the NTB the state rides
 * (ntb.c: adapter 0's, or a further one while adapter 0's link with the
 * home is down): its generation, UINT64_MAX while down.
 */
static uint64_t home_link(struct ntbsrc *n)
{
	int a = __atomic_load_n(&n->state_a, __ATOMIC_ACQUIRE);
	struct ntbdev *d = n->adev[a] ? n->adev[a] : n->dev;
	uint64_t gen;

	if (n->boot.port == n->node.port)
		return 0;
	return sio__ntb_peer_link(d, n->boot.port, &gen) ? gen : UINT64_MAX;
}

/* Map standby @port's copy (-1: none), in place of the one mapped. */
static int sb_map(struct wf_fabric *s, int port)
{
	struct ntbsrc *n = src_of(s);
	void *va = NULL;
	int ret = 0;

	if (port >= 0 && (ret = sio__ntb_map_copy(s, port, WF_STATE_END, &va)))
		return ret;
	if (n->sb)
		s->src->unmap(s, n->sb, WF_STATE_END);
	n->sb = va;
	n->sb_port = va ? port : -1;
	return 0;
}

/* Is port @port's link up, as this process sees it? */
static bool port_up(struct ntbsrc *n, int port)
{
	struct sio_ntb_peer pr;
	int pidx;

	if (port == n->node.port)
		return true;
	if ((pidx = sio__ntbdev_pidx(n->dev, port)) < 0)
		return false;
	pr = (struct sio_ntb_peer){ .pidx = (uint32_t)pidx };
	return !ntbdev_ioctl(n->dev, SIO_NTB_IOC_PEER, &pr) && pr.link_up;
}

/* The standby named in the header, valid: a node that is not the home. */
static int standby_of(const struct ntbsrc *n, const struct wf_hdr *h)
{
	int sb = h->home.standby;

	return sb >= 0 && sb < WF_MAX_POOLS && sb != n->boot.port ? sb : -1;
}

/* Page @off of @dst, from @src, but the copy's own word. */
static void page_put(char *dst, const char *src, uint64_t off)
{
	uint64_t w = MIRROR_AT - off;

	if (MIRROR_AT < off || MIRROR_AT >= off + WF_PAGE) {
		memcpy(dst + off, src + off, WF_PAGE);
		return;
	}
	memcpy(dst + off, src + off, w);
	memcpy(dst + off + w + sizeof(uint32_t), src + off + w + sizeof(uint32_t),
	       WF_PAGE - w - sizeof(uint32_t));
}

/*
 * The lock's holder, n->home_mu held: the standby's copy brought in step
 * with the state. The pages that differ are read first, into this
 * process's staging buffer, and written only if the home's link stayed up
 * meanwhile (the hardware driver says it is down before smartio_ntb
 * revokes the mapping: what was read is the state, not all ones); the copy
 * is marked torn only while they are written, a page or a few.
 */
static void push(struct wf_fabric *s)
{
	struct ntbsrc *n = src_of(s);
	struct wf_hdr *h = s->hdr, *dst;
	int sb = standby_of(n, h), pages = 0;
	uint64_t link;

	if (__atomic_load_n(&h->magic, __ATOMIC_ACQUIRE) != WF_MAGIC)
		return;
	if (sb != n->sb_port && sb_map(s, sb))
		return;	/* unreachable: its copy stays torn, and it cannot take over */
	if (sb < 0 || (!n->whole && s->src->map(s, WF_STATE, 0, WF_STATE_END, false, &n->whole)))
		return;
	if (!n->stage && !(n->stage = malloc(WF_STATE_END + WF_STATE_END / WF_PAGE)))
		return;
	dst = n->sb;
	/*
	 * it took over already (its link to the home went down before ours):
	 * never write over it; a state of a fabric destroyed or of another
	 * generation there is no take-over
	 */
	if (__atomic_load_n(&dst->magic, __ATOMIC_ACQUIRE) == WF_MAGIC && dst->create_gen == h->create_gen &&
	    dst->home.port == sb && dst->home.epoch > h->home.epoch)
		return;
	if ((link = home_link(n)) == UINT64_MAX || !port_up(n, sb))
		return;	/* a copy written across a link that is down lands nowhere */
	for (uint64_t off = 0, i = 0; off < WF_STATE_END; off += WF_PAGE, i++) {
		char *st = (char *)n->stage + off, *dirty = (char *)n->stage + WF_STATE_END;

		memcpy(st, (const char *)n->whole + off, WF_PAGE);
		if (MIRROR_AT >= off && MIRROR_AT < off + WF_PAGE)
			memcpy(st + (MIRROR_AT - off), (char *)dst + MIRROR_AT, sizeof(uint32_t));
		dirty[i] = memcmp(st, (char *)dst + off, WF_PAGE) != 0;
		pages += dirty[i];
	}
	atomic_thread_fence(memory_order_seq_cst);
	if (!pages || home_link(n) != link || __atomic_load_n(&h->magic, __ATOMIC_ACQUIRE) != WF_MAGIC)
		return;
	atomic_store_explicit(&dst->home.mirror, 0, memory_order_release);
	atomic_thread_fence(memory_order_seq_cst);
	for (uint64_t off = 0, i = 0; off < WF_STATE_END; off += WF_PAGE, i++)
		if (((char *)n->stage)[WF_STATE_END + i])
			page_put((char *)dst, n->stage, off);
	atomic_thread_fence(memory_order_seq_cst);	/* the copy, then the word that vouches for it */
	atomic_store_explicit(&dst->home.mirror, WF_MIRROR_WHOLE, memory_order_release);
}

void sio__ntb_mirror_push(struct wf_fabric *s)
{
	struct ntbsrc *n = src_of(s);

	pthread_mutex_lock(&n->home_mu);
	push(s);
	pthread_mutex_unlock(&n->home_mu);
}

/* Every mapping of the state, moved in place onto port @port's memory; n->mu held. */
static int move_state(struct ntbsrc *n, int port)
{
	uint64_t base, size;
	int ret;

	if ((ret = sio__ntb_mem_of(n, port, &base, &size)))
		return ret;
	if (size < WF_STATE_END)
		return sio__err(EMSGSIZE, "ntb: port %d's memory is smaller than the state", port);
	for (struct peer_map *m = n->maps; m; m = m->next) {
		if (!m->state)
			continue;
		if ((ret = sio__ntbdev_remap(n->dev, m->va, base + m->soff, m->len)))
			return sio__err(-ret, "ntb: cannot map the state at port %d: %s", port, strerror(-ret));
		m->port = port;
		m->off = base + m->soff;
		m->adapter = 0;
	}
	__atomic_store_n(&n->state_a, 0, __ATOMIC_RELEASE);	/* the new home, through NTB 0 */
	return 0;
}

/* The port the home this handle maps yielded to (two homes: serve.c), -1: none. */
static int yielded_to(const struct ntbsrc *n, const struct wf_hdr *h)
{
	int p = h->home.port;

	if (__atomic_load_n(&h->magic, __ATOMIC_ACQUIRE) != WF_MAGIC)
		return -1;
	return p >= 0 && p < WF_MAX_POOLS && p != n->boot.port ? p : -1;
}

/*
 * This process is not in the state of the home to follow (its slot
 * reclaimed there while the two were apart): following it would act as a
 * process that state does not have. It stays where it is, removed.
 */
static void orphan(struct wf_fabric *s, int port)
{
	struct ntbsrc *n = src_of(s);

	if (n->orphaned)
		return;
	__atomic_store_n(&n->orphaned, true, __ATOMIC_RELEASE);
	if (!getenv("SMARTIO_QUIET"))
		fprintf(stderr, "smartio: fabric '%s': its home is port %d now (it took over from port %d, or port %d yielded to it: two homes after a partition, docs/ntb.md), and its state no longer holds this process (slot %d, reclaimed while the two were apart): its changes since are not merged; attach again\n",
			s->f->name, port, n->boot.port, n->boot.port, s->slot);
}

/* n->home_mu held */
static void follow(struct wf_fabric *s)
{
	struct ntbsrc *n = src_of(s);
	const struct wf_hdr *h = s->hdr, *c;
	int sb, y = yielded_to(n, h), want = y >= 0 ? y : standby_of(n, h);

	/*
	 * the port the home yielded to, else the standby it names, while the
	 * home can be read; a home that names none keeps the copy mapped (cut
	 * off from its standby, it drops it, and that copy is the one to follow)
	 */
	if (want >= 0 && want != n->sb_port && __atomic_load_n(&h->magic, __ATOMIC_ACQUIRE) == WF_MAGIC)
		sb_map(s, want);
	c = n->sb;
	sb = n->sb_port;
	if (n->orphaned || !c || !port_up(n, sb) || __atomic_load_n(&c->magic, __ATOMIC_ACQUIRE) != WF_MAGIC ||
	    c->create_gen != s->create_gen || c->home.port != n->sb_port ||
	    (__atomic_load_n(&c->home.epoch, __ATOMIC_ACQUIRE) <= n->home_epoch && sb != y))
		return;
	/* a take-over's copy holds every process; a state the two sides kept apart may not */
	if (s->slot >= 0 &&
	    atomic_load_explicit(&c->procs[s->slot].token, memory_order_acquire) != s->tok) {
		orphan(s, sb);
		return;
	}
	pthread_mutex_lock(&n->mu);
	if (move_state(n, sb)) {
		pthread_mutex_unlock(&n->mu);
		return;	/* again at the next beat */
	}
	n->boot.port = sb;
	n->home_epoch = c->home.epoch;
	pthread_mutex_unlock(&n->mu);
	sb_map(s, -1);	/* the copy is the home now, mapped as the state */
}

int sio__ntb_home_check(struct sio_fabric *f)
{
	struct ntbsrc *n = src_of(wf_of(f));
	int home = n->boot.port, sb;
	bool up = home_link(n) != UINT64_MAX;

	if (up && __atomic_load_n(&wf_of(f)->hdr->magic, __ATOMIC_ACQUIRE) == WF_MAGIC)
		return 0;
	pthread_mutex_lock(&n->home_mu);
	sb = n->sb_port;
	pthread_mutex_unlock(&n->home_mu);
	if (up)
		return sio__err(EHOSTDOWN, "fabric '%s': its state in port %d's memory cannot be read: it was destroyed, or this process maps it again after a link flap",
				f->name, home);
	if (sb < 0)
		return sio__err(EHOSTDOWN, "fabric '%s': the link to its home, port %d, is down, and this process knows of no standby home (none was named, or its copy could not be mapped here): the fabric is back when port %d or a standby is (docs/ntb.md, \"The home and its standby\")",
				f->name, home, home);
	if (!port_up(n, sb))
		return sio__err(EHOSTDOWN, "fabric '%s': the link to its home, port %d, is down, and its standby home, port %d, is out of reach too: no node can take over until one of them is back",
				f->name, home, sb);
	return sio__err(EHOSTDOWN, "fabric '%s': the link to its home, port %d, is down: its standby home, port %d, takes over once the link has been down for $SMARTIO_NTB_TAKEOVER_MS",
			f->name, home, sb);
}

void sio__ntb_home_follow(struct wf_fabric *s)
{
	struct ntbsrc *n = src_of(s);

	pthread_mutex_lock(&n->home_mu);
	follow(s);
	pthread_mutex_unlock(&n->home_mu);
}

bool sio__ntb_home_take(struct sio_fabric *f, struct ntbdev *d, void *mem, int me, char *msg,
			size_t len)
{
	struct ntbsrc *n = src_of(wf_of(f));
	struct wf_hdr *c = mem;
	struct sio_ntb_peer pr;
	int pidx, home = n->boot.port;

	if (home == me || c->magic != WF_MAGIC || c->home.standby != me || c->home.port != home ||
	    c->create_gen != wf_of(f)->create_gen || (pidx = sio__ntbdev_pidx(d, home)) < 0)
		return false;
	pr = (struct sio_ntb_peer){ .pidx = (uint32_t)pidx };
	if (ntbdev_ioctl(d, SIO_NTB_IOC_PEER, &pr) || pr.link_up)
		return false;
	if (atomic_load_explicit(&c->home.mirror, memory_order_acquire) != WF_MIRROR_WHOLE) {
		snprintf(msg, len, "port %d, the home, is gone, and this node's copy of the state is not whole (the last copy was torn by the link going down): cannot take over",
			 home);
		return false;
	}
	/* no number of the dead home's, nor of a holder whose unlock went to it, holds the lock */
	memset(c->bakery, 0, sizeof(c->bakery));
	c->home.standby = -1;
	c->home.port = me;
	atomic_thread_fence(memory_order_seq_cst);
	__atomic_store_n(&c->home.epoch, c->home.epoch + 1, __ATOMIC_RELEASE);
	snprintf(msg, len, "port %d, the home, is gone (its link down): this node (port %d) is the fabric's home from now on (epoch %u)",
		 home, me, c->home.epoch);
	return true;
}

void sio__ntb_standby_void(struct wf_fabric *s)
{
	struct ntbsrc *n = src_of(s);
	int sb = standby_of(n, s->hdr);
	struct wf_hdr *c;

	if (sb >= 0 && !sio__ntb_map_copy(s, sb, sizeof(*c), (void **)&c)) {
		__atomic_store_n(&c->magic, 0, __ATOMIC_RELEASE);
		s->src->unmap(s, c, sizeof(*c));
	}
}

int sio__ntb_standby_claim(struct sio_fabric *f, int me)
{
	struct wf_fabric *s = wf_of(f);
	int ret;

	/* a home this node cannot reach (its link down) gets no standby here: no copy could come */
	if (src_of(s)->boot.port == me || home_link(src_of(s)) == UINT64_MAX ||
	    s->hdr->home.standby >= 0 || __atomic_load_n(&s->hdr->magic, __ATOMIC_ACQUIRE) != WF_MAGIC)
		return 0;
	if ((ret = sio__lock(f)))
		return ret;
	ret = s->hdr->home.standby < 0;
	if (ret)
		s->hdr->home.standby = me;
	sio__unlock(f);	/* which copies the state here */
	return ret;
}

int sio__ntb_standby_drop(struct sio_fabric *f, struct ntbdev *d)
{
	struct wf_fabric *s = wf_of(f);
	int sb = standby_of(src_of(s), s->hdr), pidx, ret;
	struct sio_ntb_peer pr;

	if (sb < 0 || (pidx = sio__ntbdev_pidx(d, sb)) < 0)
		return -1;
	pr = (struct sio_ntb_peer){ .pidx = (uint32_t)pidx };
	if (ntbdev_ioctl(d, SIO_NTB_IOC_PEER, &pr) || pr.link_up || sio__lock(f))
		return -1;
	ret = s->hdr->home.standby == sb ? sb : -1;
	if (ret >= 0)
		s->hdr->home.standby = -1;
	sio__unlock(f);
	return ret;
}

/* Slots of @a's processes that @b does not hold (the same life of the slot). */
static int procs_only_in(const struct wf_hdr *a, const struct wf_hdr *b)
{
	int k = 0;

	for (int i = 0; i < SIO_MAX_PROCS; i++) {
		uint64_t t = atomic_load_explicit(&a->procs[i].token, memory_order_relaxed);

		k += t && t != atomic_load_explicit(&b->procs[i].token, memory_order_relaxed);
	}
	return k;
}

int sio__ntb_home_rule(const struct wf_hdr *mine, int me, const struct wf_hdr *theirs, int port,
		       char *msg, size_t len)
{
	uint32_t em = mine->home.epoch, et = theirs->home.epoch;
	bool yield;

	if (__atomic_load_n(&theirs->magic, __ATOMIC_ACQUIRE) != WF_MAGIC ||
	    theirs->create_gen != mine->create_gen || theirs->home.port != port || port == me)
		return -1;	/* not the same fabric hosted there: boot.c's complaint stands */
	yield = et > em || (et == em && port < me);
	if (yield)
		snprintf(msg, len, "port %d hosts fabric '%.32s' (generation %u) too, at epoch %u; this node (port %d) is at epoch %u: it yields (the higher epoch, then the lower port, stays the home) and points its state at port %d's; nothing is merged: %d of its processes are not in port %d's state and end there",
			 port, mine->name, (unsigned)mine->create_gen, et, me, em, port,
			 procs_only_in(mine, theirs), port);
	else
		snprintf(msg, len, "port %d hosts fabric '%.32s' (generation %u) too, at epoch %u; this node (port %d) is at epoch %u: port %d yields (the higher epoch, then the lower port, stays the home)",
			 port, mine->name, (unsigned)mine->create_gen, et, me, em, port);
	return yield;
}

void sio__ntb_home_yield(void *mem, int to)
{
	struct wf_hdr *h = mem;

	h->home.standby = -1;
	atomic_thread_fence(memory_order_seq_cst);
	__atomic_store_n(&h->home.port, to, __ATOMIC_RELEASE);	/* its processes follow */
}

int sio__ntb_takeover_ns(uint64_t *ns)
{
	return sio__env_ms("SMARTIO_NTB_TAKEOVER_MS", 5000, 0, 3600000, ns);
}
