/* SPDX-License-Identifier: MIT */
/*
 * The ntb backend's window source (ntb.h says what lives where): a pool is
 * a node's memory, mapped through the node service's NTB file: this node's
 * own buffer, or a peer's through the outbound window that reaches its
 * inbound window 0. Mappings of a peer's window are revoked by smartio_ntb
 * when its link goes down (they read all ones); the heartbeat thread maps
 * them again, in place, once the link is back.
 */
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/mman.h>

#include "ntb.h"


/* Inbound window @w of port @port, as this port reaches it: its mmap() offset and size. */
int sio__ntb_window_of(struct ntbsrc *n, int port, uint32_t w, uint64_t *off, uint64_t *size)
{
	struct sio_ntb_peer_mw pm;
	int pidx, ret;

	if ((pidx = sio__ntbdev_pidx(n->dev, port)) < 0)
		return sio__err(ENODEV, "ntb: port %d is no peer of %s", port, n->dev->what);
	pm = (struct sio_ntb_peer_mw){ .widx = (uint32_t)pidx * n->info.mws_per_peer + w };
	if ((ret = ntbdev_ioctl(n->dev, SIO_NTB_IOC_PEER_MW, &pm)))
		return sio__err(-ret, "ntb: the outbound window to port %d: %s", port, strerror(-ret));
	*off = pm.mmap_offset;
	*size = pm.size;
	return 0;
}

int sio__ntb_mem_of(struct ntbsrc *n, int port, uint64_t *off, uint64_t *size)
{
	if (port == n->node.port) {
		*off = SIO_NTB_MMAP_INBOUND(n->node.mem_pidx, n->node.mem_widx);
		*size = n->node.mem_size;
		return 0;
	}
	/* outbound translation: untranslated, window 0 reaches no memory of the peer's */
	if (!(n->info.flags & SIO_NTB_F_INBOUND_XLAT) && port >= 0 && port < 64 &&
	    !(n->node.reached >> port & 1))
		return sio__err(ENOTCONN, "ntb: this node's window to port %d is not translated yet: port %d has not said by message where its memory is (its smartio ntb serve runs? this node's serve log says when it is translated)",
				port, port);
	return sio__ntb_window_of(n, port, NTB_MEM_WIDX, off, size);
}

bool sio__ntb_peer_link(struct ntbdev *d, int port, uint64_t *gen)
{
	int pidx = sio__ntbdev_pidx(d, port);
	struct sio_ntb_peer pr = { .pidx = (uint32_t)pidx };

	if (pidx < 0 || ntbdev_ioctl(d, SIO_NTB_IOC_PEER, &pr) || !pr.link_up)
		return false;
	*gen = pr.link_gen;
	return true;
}

/*
 * mmap() @len bytes at @off of adapter @a's file (@port's window: kept to
 * map again after a link loss; through a further NTB, at the link's
 * generation it maps).
 */
static int map_on(struct ntbsrc *n, int a, int port, uint64_t off, uint64_t len, bool rdonly,
		  void **va)
{
	uint64_t at = off & ~(WF_PAGE - 1), d = off - at, gen = 0;
	struct peer_map *m = NULL;
	void *p;
	int ret;

	if (port != n->node.port && !(m = calloc(1, sizeof(*m))))
		return sio__err(ENOMEM, "out of memory");
	if (a && !sio__ntb_peer_link(n->adev[a], port, &gen))
		ret = -ENOTCONN;
	else
		ret = ntbdev_mmap(n->adev[a], NULL, at, len + d, &p);
	if (ret) {
		free(m);
		return sio__err(-ret, "ntb: cannot map %llu bytes of port %d's memory%s%s: %s%s",
				(unsigned long long)len, port, a ? " through " : "",
				a ? n->adev[a]->what : "", strerror(-ret),
				ret == -ENOTCONN ? " (its link is down)" : "");
	}
	if (rdonly)
		mprotect(p, len + d, PROT_READ);
	if (m) {
		*m = (struct peer_map){ .va = p, .len = len + d, .off = at, .port = port, .widx = -1,
					.adapter = a, .gen = gen };
		pthread_mutex_lock(&n->mu);
		m->next = n->maps;
		n->maps = m;
		pthread_mutex_unlock(&n->mu);
	}
	*va = (char *)p + d;
	return 0;
}

int sio__ntb_map_at(struct ntbsrc *n, int port, uint64_t off, uint64_t len, bool rdonly, void **va)
{
	return map_on(n, 0, port, off, len, rdonly, va);
}

/* Port @port's window 0 through the NTB of further adapter @a: its mmap() offset and size. */
static int window_via(struct ntbsrc *n, int a, int port, uint64_t *off, uint64_t *size)
{
	struct sio_ntb_peer_mw pm;
	int pidx, ret;

	if ((pidx = sio__ntbdev_pidx(n->adev[a], port)) < 0)
		return -EHOSTUNREACH;
	pm = (struct sio_ntb_peer_mw){ .widx = (uint32_t)pidx * n->info.mws_per_peer + NTB_MEM_WIDX };
	if ((ret = ntbdev_ioctl(n->adev[a], SIO_NTB_IOC_PEER_MW, &pm)))
		return sio__err(-ret, "ntb: the outbound window to port %d of %s: %s", port,
				n->adev[a]->what, strerror(-ret));
	*off = pm.mmap_offset;
	*size = pm.size;
	return 0;
}

/* Port @port's memory through adapter @a's NTB: its mmap() offset and size. */
static int mem_via(struct ntbsrc *n, int a, int port, uint64_t *off, uint64_t *size)
{
	return a ? window_via(n, a, port, off, size) : sio__ntb_mem_of(n, port, off, size);
}

int sio__ntb_map_via(struct wf_fabric *s, int a, int port, uint64_t at, uint64_t len, bool rdonly,
		     void **va)
{
	struct ntbsrc *n = src_of(s);
	uint64_t reach, off, size;
	int ret;

	if (a < 1 || a >= SIO_MAX_ADAPTERS || !n->adev[a] || port < 0 || port >= WF_MAX_POOLS ||
	    n->node.port < 0 || n->node.port >= 64)
		return -EHOSTUNREACH;
	/* adapter 1 is the only further one (SIO_MAX_ADAPTERS) */
	reach = __atomic_load_n(&s->hdr->pools[port].reach1, __ATOMIC_ACQUIRE);
	if (!(reach >> n->node.port & 1))
		return -EHOSTUNREACH;
	if ((ret = window_via(n, a, port, &off, &size)))
		return ret;
	if (!len || at > size || len > size - at)
		return sio__err(EINVAL, "ntb: %llu bytes at %llu are outside port %d's memory through %s (%llu bytes)",
				(unsigned long long)len, (unsigned long long)at, port, n->adev[a]->what,
				(unsigned long long)size);
	return map_on(n, a, port, off + at, len, rdonly, va);
}

static void src_unmap(struct wf_fabric *s, void *va, uint64_t len);

/*
 * A mapping of the state (it follows the home, home.c) or of the standby's
 * copy: kept in the list even where it is this node's own memory.
 */
static int keep(struct ntbsrc *n, void *va, int port, uint64_t off, uint64_t len, uint64_t soff,
		bool state)
{
	void *a = (void *)((uintptr_t)va & ~(uintptr_t)(WF_PAGE - 1));
	struct peer_map *m;

	pthread_mutex_lock(&n->mu);
	for (m = n->maps; m && m->va != a; m = m->next)
		;
	if (!m && (m = calloc(1, sizeof(*m)))) {
		*m = (struct peer_map){ .va = a, .off = off & ~(WF_PAGE - 1), .port = port, .widx = -1,
					.len = len + ((uintptr_t)va - (uintptr_t)a), .next = n->maps };
		n->maps = m;
	}
	if (m) {
		m->state = state;
		m->soff = soff & ~(WF_PAGE - 1);
	}
	pthread_mutex_unlock(&n->mu);
	return m ? 0 : sio__err(ENOMEM, "out of memory");
}

/*
 * The adapter whose NTB maps @port's memory for the window fabric: the
 * state's rides the one state_route() chose; a pool, adapter 0's NTB
 * unless its link with @port is down while a further one's is up (a
 * segment made or zeroed during adapter 0's fault).
 */
static int src_adapter(struct ntbsrc *n, int pool, int port)
{
	uint64_t gen;

	if (pool == WF_STATE)
		return __atomic_load_n(&n->state_a, __ATOMIC_ACQUIRE);
	if (port == n->node.port || !n->adev[1] || sio__ntb_peer_link(n->dev, port, &gen))
		return 0;
	return sio__ntb_peer_link(n->adev[1], port, &gen) ? 1 : 0;
}

/*
 * Inbound translation: port @port translates its window 0 for this node
 * onto its memory when their link comes up, and its pool's reach0 says so;
 * until then the window reaches whatever it did before, on ntb_hw_ivshmem
 * the region a former life of that port used: a device's DMA mapped there
 * was dropped with a success status. A port with no pool yet is not asked.
 */
static bool reached0(struct wf_fabric *s, int port)
{
	struct ntbsrc *n = src_of(s);
	const struct wf_pool *pl;

	if (!s->hdr || port == n->node.port || !(n->info.flags & SIO_NTB_F_INBOUND_XLAT) ||
	    n->node.port < 0 || n->node.port >= 64)
		return true;
	pl = &s->hdr->pools[port];
	return !__atomic_load_n(&pl->size, __ATOMIC_ACQUIRE) ||
	       (__atomic_load_n(&pl->reach0, __ATOMIC_ACQUIRE) >> n->node.port & 1);
}

static int src_map(struct wf_fabric *s, int pool, uint64_t off, uint64_t len, bool rdonly,
		   void **va)
{
	struct ntbsrc *n = src_of(s);
	int port = pool == WF_STATE ? n->boot.port : pool, a, ret;
	uint64_t base, size;

	if (port < 0 || port >= WF_MAX_POOLS)
		return sio__err(EINVAL, "ntb: no node %d", port);
	a = src_adapter(n, pool, port);
	if (a && pool != WF_STATE &&
	    (ret = sio__ntb_map_via(s, a, port, off, len, rdonly, va)) != -EHOSTUNREACH)
		return ret;
	if (pool != WF_STATE)
		a = 0;	/* not exported through it: adapter 0's NTB says why not */
	/* untranslated, a window reaches whatever its default is: never map that */
	if (pool != WF_STATE && s->hdr && port != n->node.port &&
	    (__atomic_load_n(&s->hdr->pools[port].unreached, __ATOMIC_ACQUIRE) >> n->node.port & 1))
		return sio__err(ENXIO, "ntb: port %d's hardware driver refused to translate its inbound window %d for port %d: its memory is out of this node's reach (port %d's smartio ntb serve says why)",
				port, NTB_MEM_WIDX, n->node.port, port);
	if (pool != WF_STATE && !reached0(s, port))
		return sio__err(ENOTCONN, "ntb: port %d has not translated its inbound window %d for port %d yet: until it does, the window reaches other memory (its node service does so within a tick of the link coming up)",
				port, NTB_MEM_WIDX, n->node.port);
	if ((ret = mem_via(n, a, port, &base, &size)))
		return ret;
	if (!len || off > size || len > size - off)
		return sio__err(EINVAL, "ntb: %llu bytes at %llu are outside port %d's memory (%llu bytes, as its window to this port reaches)",
				(unsigned long long)len, (unsigned long long)off, port,
				(unsigned long long)size);
	if ((ret = map_on(n, a, port, base + off, len, rdonly, va)) || pool != WF_STATE)
		return ret;
	if ((ret = keep(n, *va, port, base + off, len, off, true)))
		src_unmap(s, *va, len);
	return ret;
}

/* Map the first @len bytes of port @port's memory (the standby's copy), kept in the list. */
int sio__ntb_map_copy(struct wf_fabric *s, int port, uint64_t len, void **va)
{
	struct ntbsrc *n = src_of(s);
	int ret;

	if ((ret = src_map(s, port, 0, len, false, va)))
		return ret;
	if ((ret = keep(n, *va, port, 0, len, 0, false)))
		src_unmap(s, *va, len);
	return ret;
}

static void src_unmap(struct wf_fabric *s, void *va, uint64_t len)
{
	struct ntbsrc *n = src_of(s);
	uintptr_t v = (uintptr_t)va, a = v & ~(uintptr_t)(WF_PAGE - 1);

	pthread_mutex_lock(&n->mu);
	for (struct peer_map **pp = &n->maps; *pp; pp = &(*pp)->next)
		if ((*pp)->va == (void *)a) {
			struct peer_map *m = *pp;
			*pp = m->next;
			free(m);
			break;
		}
	pthread_mutex_unlock(&n->mu);
	munmap((void *)a, len + (v - a));
}

/* The bus address of @d's outbound window 0 to port @port; UINT64_MAX: none. */
static uint64_t window_bus(struct ntbsrc *n, struct ntbdev *d, int port)
{
	struct sio_ntb_peer_mw pm;
	int pidx;

	if ((pidx = sio__ntbdev_pidx(d, port)) < 0)
		return UINT64_MAX;
	pm = (struct sio_ntb_peer_mw){ .widx = (uint32_t)pidx * n->info.mws_per_peer + NTB_MEM_WIDX };
	if (ntbdev_ioctl(d, SIO_NTB_IOC_PEER_MW, &pm) || !pm.bus_addr)
		return UINT64_MAX;
	return pm.bus_addr;
}

static uint64_t src_bus(struct wf_fabric *s, int pool)
{
	struct ntbsrc *n = src_of(s);

	if (pool == n->node.port)
		return n->node.mem_dma ? n->node.mem_dma : UINT64_MAX;
	return window_bus(n, n->dev, pool);
}

/* A pool through a further NTB, where its node exports its memory there (reach1). */
static int src_map_via(struct wf_fabric *s, int a, int pool, uint64_t off, uint64_t len,
		       bool rdonly, void **va)
{
	if (pool == WF_STATE)
		return -EHOSTUNREACH;	/* the state's NTB is state_route()'s to choose */
	return sio__ntb_map_via(s, a, pool, off, len, rdonly, va);
}

static uint64_t src_bus_via(struct wf_fabric *s, int a, int pool)
{
	struct ntbsrc *n = src_of(s);

	if (a < 1 || a >= SIO_MAX_ADAPTERS || !n->adev[a] || pool == n->node.port)
		return UINT64_MAX;
	return window_bus(n, n->adev[a], pool);
}

static int src_pool_of(struct wf_fabric *s, int node)
{
	(void)s;
	return node >= 0 && node < WF_MAX_POOLS ? node : -1;
}

/* One ring of the fabric's bit reaches every peer whose link is up. */
static int src_ring(struct wf_fabric *s)
{
	uint64_t bits = 1ull << src_of(s)->bit;

	atomic_thread_fence(memory_order_seq_cst);	/* the word before the interrupt */
	return ntbdev_ioctl(src_of(s)->dev, SIO_NTB_IOC_DB_RING, &bits) ? 0 : 1;
}

/*
 * Map again, in place, what a link that went down and came back revoked:
 * the heartbeat (@beat) every peer's, but of a peer whose windows this
 * process maps again itself (sio_link_resume()) the fabric's state alone
 * (the lease and the home's registry go on); a resume, peer @port's all.
 * A peer's generation moves only once all of them are mapped again.
 * False: one was refused, to try again at the next beat or resume.
 */
static bool remap(struct ntbsrc *n, bool beat, int port)
{
	bool all = true;

	for (uint32_t p = 0; p < n->info.peers; p++) {
		struct sio_ntb_peer pr = { .pidx = p };
		bool segs, ok = true;

		if (ntbdev_ioctl(n->dev, SIO_NTB_IOC_PEER, &pr) || pr.port < 0 ||
		    pr.port >= WF_MAX_POOLS || (!beat && pr.port != port))
			continue;
		if (!pr.link_up)
			continue;	/* still down: later */
		segs = !beat || !n->resumed[pr.port];
		for (struct peer_map *m = n->maps; m; m = m->next)
			if (m->port == pr.port && !m->adapter &&
			    (m->state ? n->state_gen[pr.port] : segs ? n->peer_gen[pr.port] :
			     pr.link_gen) != pr.link_gen)
				ok = !sio__ntbdev_remap(n->dev, m->va, m->off, m->len) && ok;
		all = all && ok;
		if (!ok)
			continue;
		/* atomic: sio__ntb_removed() reads it without the mutex */
		__atomic_store_n(&n->state_gen[pr.port], pr.link_gen, __ATOMIC_RELEASE);
		if (segs)
			n->peer_gen[pr.port] = pr.link_gen;
	}
	return all;
}

/*
 * Mappings through a further NTB (a segment on a path through its adapter)
 * of port @port, or of every port (-1): mapped again, in place, where that
 * NTB's link with their port is up at another generation than they map.
 * True when every one of them is at its link's generation, up.
 */
static bool remap_further(struct ntbsrc *n, int port)
{
	bool all = true;

	for (struct peer_map *m = n->maps; m; m = m->next) {
		uint64_t gen;

		if (!m->adapter || (port >= 0 && m->port != port))
			continue;
		if (!sio__ntb_peer_link(n->adev[m->adapter], m->port, &gen))
			all = false;
		else if (gen != m->gen && !sio__ntbdev_remap(n->adev[m->adapter], m->va, m->off, m->len))
			m->gen = gen;
		else if (gen != m->gen)
			all = false;
	}
	return all;
}

/* Every mapping of the state, moved in place onto the home's memory through adapter @a's NTB. */
static int state_onto(struct ntbsrc *n, int a, int home, uint64_t gen)
{
	uint64_t base, size;
	int ret = mem_via(n, a, home, &base, &size);

	if (ret || size < WF_STATE_END)
		return ret ? ret : -EMSGSIZE;
	for (struct peer_map *m = n->maps; m; m = m->next) {
		if (!m->state || m->port != home)
			continue;
		if ((ret = sio__ntbdev_remap(n->adev[a], m->va, base + m->soff, m->len)))
			return ret;
		*m = (struct peer_map){ .next = m->next, .va = m->va, .len = m->len, .off = base + m->soff,
					.port = home, .widx = -1, .state = true, .soff = m->soff,
					.adapter = a, .gen = gen };
	}
	/* atomic: home_check() and sio__ntb_removed() read it without the mutex */
	__atomic_store_n(&n->state_a, a, __ATOMIC_RELEASE);
	if (!a)
		__atomic_store_n(&n->state_gen[home], gen, __ATOMIC_RELEASE);
	return 0;
}

/*
 * The state rides adapter 0's NTB. When the link of the NTB it rides is
 * down with the home while another NTB's is up, and the home exports its
 * memory to this port through that one (its pool's reach1, read while the
 * state could be), the home is alive and only this host's way to it
 * failed: the state's mappings move onto that NTB, in place, and the
 * fabric goes on. n->mu held.
 */
static void state_route(struct wf_fabric *s)
{
	struct ntbsrc *n = src_of(s);
	int home = n->boot.port;
	uint64_t gen;

	if (home == n->node.port || home < 0 || home >= WF_MAX_POOLS || !n->adev[1] ||
	    n->node.port < 0 || n->node.port >= 64)
		return;
	if (sio__ntb_peer_link(n->adev[n->state_a], home, &gen)) {
		if (__atomic_load_n(&s->hdr->magic, __ATOMIC_ACQUIRE) == WF_MAGIC)
			n->home_reach1 = __atomic_load_n(&s->hdr->pools[home].reach1, __ATOMIC_ACQUIRE);
		return;
	}
	for (int a = 0; a < SIO_MAX_ADAPTERS; a++) {
		bool reached = !a || (a == 1 && (n->home_reach1 >> n->node.port & 1));

		if (a != n->state_a && n->adev[a] && reached && sio__ntb_peer_link(n->adev[a], home, &gen) &&
		    !state_onto(n, a, home, gen))
			return;
	}
}

int sio__ntb_state_adapter(struct sio_fabric *f)
{
	return __atomic_load_n(&src_of(wf_of(f))->state_a, __ATOMIC_ACQUIRE);
}

static void src_beat(struct wf_fabric *s)
{
	struct ntbsrc *n = src_of(s);
	struct sio_ntb_info i;

	if (n->local)
		sio__wf_bakery_renew(s, n->local, n->node.port);
	sio__ntb_home_follow(s);
	pthread_mutex_lock(&n->mu);
	remap_further(n, -1);
	state_route(s);
	pthread_mutex_unlock(&n->mu);
	if (ntbdev_ioctl(n->dev, SIO_NTB_IOC_INFO, &i) || i.link_gen == n->link_gen)
		return;
	pthread_mutex_lock(&n->mu);
	/* a mapping refused: the next beat tries again */
	n->link_gen = remap(n, true, -1) ? i.link_gen : ~i.link_gen;
	sio__ntb_bar_refresh(n);
	pthread_mutex_unlock(&n->mu);
}

/*
 * Does this process reach node @node? Its NTB link up, and what the link's
 * loss revoked mapped again at the link's new generation: until then the
 * link reads down, however short the flap (down and up again between two
 * looks of a driver), so a driver whose queue stalled on what the loss
 * took sees it. With @resume, what the loss revoked is mapped again here,
 * and from now on here alone (sio_link_resume()).
 */
static int link_at(struct sio_fabric *f, int node, bool resume)
{
	struct ntbsrc *n = src_of(wf_of(f));
	struct sio_ntb_peer pr;
	int pidx, up;

	if (node == n->node.port)
		return 1;
	if (node < 0 || node >= WF_MAX_POOLS || (pidx = sio__ntbdev_pidx(n->dev, node)) < 0)
		return 0;
	pthread_mutex_lock(&n->mu);
	if (resume)
		n->resumed[node] = true;	/* the heartbeat leaves it to us */
	pr = (struct sio_ntb_peer){ .pidx = (uint32_t)pidx };
	up = !ntbdev_ioctl(n->dev, SIO_NTB_IOC_PEER, &pr) && pr.link_up;
	if (up && resume && pr.link_gen != n->peer_gen[node]) {
		remap(n, false, node);
		sio__ntb_bar_refresh(n);
	}
	up = up && pr.link_gen == n->peer_gen[node];
	pthread_mutex_unlock(&n->mu);
	return up;
}

/*
 * A further adapter whose NTB this process holds: that NTB's link with
 * @node up, and what it maps of @node through it mapped again at the
 * link's generation (here, with @resume; else by the heartbeat). One this
 * process does not hold: the registry's link state alone (1).
 */
static int further_at(struct sio_fabric *f, int node, int adapter, bool resume)
{
	struct ntbsrc *n = src_of(wf_of(f));
	uint64_t gen;
	int up;

	if (!n->adev[adapter])
		return 1;
	if (node == n->node.port)
		return 1;
	pthread_mutex_lock(&n->mu);
	up = sio__ntb_peer_link(n->adev[adapter], node, &gen);
	if (up && resume)
		remap_further(n, node);
	for (struct peer_map *m = n->maps; up && m; m = m->next)
		up = !(m->adapter == adapter && m->port == node && m->gen != gen);
	pthread_mutex_unlock(&n->mu);
	return up;
}

/* Adapter 0's NTB carries the fabric's windows; a further one, segments on its paths. */
static int sio__ntb_link(struct sio_fabric *f, int node, int adapter, bool resume)
{
	if (adapter > 0 && adapter < SIO_MAX_ADAPTERS)
		return further_at(f, node, adapter, resume);
	return link_at(f, node, resume);
}

static int src_lock(struct sio_fabric *f, bool *holder_died)
{
	struct ntbsrc *n = src_of(wf_of(f));
	int ret = sio__ntb_home_check(f);	/* which of the home and its standby is gone */

	if (ret && n->adev[1]) {	/* another NTB may reach it: now, not at the next beat */
		pthread_mutex_lock(&n->mu);
		state_route(wf_of(f));
		pthread_mutex_unlock(&n->mu);
		ret = sio__ntb_home_check(f);
	}

	return ret ? ret : sio__wf_bakery_lock(f, n->local, n->node.port, holder_died);
}

static void src_unlock(struct sio_fabric *f)
{
	struct ntbsrc *n = src_of(wf_of(f));

	sio__ntb_mirror_push(wf_of(f));	/* what this holder changed, on the standby before anyone sees it */
	sio__wf_bakery_unlock(f, n->local, n->node.port);
}

static const char *src_what(struct wf_fabric *s, int pool)
{
	static __thread char buf[192];
	struct ntbsrc *n = src_of(s);

	snprintf(buf, sizeof(buf), "port %d's memory (the NTB %s)",
		 pool == WF_STATE ? n->boot.port : pool, n->dev->what);
	return buf;
}

static const struct wf_source ntb_source = {
	.name = "ntb",
	.map = src_map,
	.unmap = src_unmap,
	.bus = src_bus,
	.pool_of = src_pool_of,
	.ring = src_ring,
	.beat = src_beat,
	.lock = src_lock,
	.unlock = src_unlock,
	.bar_export = sio__ntb_bar_export,
	.bar_unexport = sio__ntb_bar_unexport,
	.bar_map = sio__ntb_bar_map,
	.map_via = src_map_via,
	.bus_via = src_bus_via,
	.what = src_what,
};

/* The highest doorbell bit: the fabric's. */
static int fabric_bit(const struct sio_ntb_info *i)
{
	return i->db_valid ? 63 - __builtin_clzll(i->db_valid) : -1;
}

/* The link generation of each peer that is up: what is mapped from now on is of it. */
static void peer_gens(struct ntbsrc *n)
{
	for (uint32_t p = 0; p < n->info.peers; p++) {
		struct sio_ntb_peer pr = { .pidx = p };

		if (!ntbdev_ioctl(n->dev, SIO_NTB_IOC_PEER, &pr) && pr.link_up &&
		    pr.port >= 0 && pr.port < WF_MAX_POOLS)
			n->peer_gen[pr.port] = n->state_gen[pr.port] = pr.link_gen;
	}
}

/* The NTBs this handle opened; the node service's own handle borrows its service's. */
static void src_close_devs(struct ntbsrc *n)
{
	if (!n->own_dev)
		return;
	sio__ntbdev_close(n->dev);
	for (int a = 1; a < SIO_MAX_ADAPTERS; a++)
		sio__ntbdev_close(n->adev[a]);
}

/* A handle's source state: the node service's file and what it said. */
static int src_open(struct sio_fabric *f, uint32_t op, uint32_t *gen, struct wf_fabric **out)
{
	const char *spec = getenv("SMARTIO_NTB_DEV");
	bool fake = spec && !strncmp(spec, "fake:", 5);
	struct wf_fabric *s;
	struct ntbsrc *n;
	uint64_t ns;
	int ret;

	/* bad times are refused here, named, not replaced inside a wait */
	if ((ret = sio__wf_lease_check(&ns)) || (ret = sio__ntb_ownwin_wait_check(&ns)))
		return ret;
	s = sio__wf_new(f, &ntb_source);
	n = calloc(1, sizeof(*n));
	if (!s || !n) {
		free(s);
		free(n);
		return sio__err(ENOMEM, "out of memory");
	}
	s->priv = n;
	pthread_mutex_init(&n->mu, NULL);
	pthread_mutex_init(&n->home_mu, NULL);
	n->sb_port = -1;
	n->own_dev = !sio__ntb_service_here() || op != NTB_OP_HELLO;
	if ((ret = sio__ntb_node_connect(spec, fake ? f->node : -1, op, f->name, &n->dev, n->adev + 1,
					 &n->node, gen)) ||
	    (ret = sio__ntbdev_info(n->dev, &n->info)))
		goto fail;
	n->adev[0] = n->dev;
	n->bit = fabric_bit(&n->info);
	n->link_gen = n->info.link_gen;
	peer_gens(n);
	*out = s;
	return 0;
fail:
	src_close_devs(n);
	free(n);
	free(s);
	return ret;
}

static void src_drop(struct wf_fabric *s)
{
	struct ntbsrc *n = src_of(s);

	if (s->hdr)
		src_unmap(s, s->hdr, sizeof(*s->hdr));
	while (n->maps) {
		struct peer_map *m = n->maps;
		n->maps = m->next;
		munmap(m->va, m->len);
		free(m);
	}
	if (n->local)
		munmap(n->local, WF_PAGE);
	sio__ntb_bar_drop(n);
	free(n->stage);
	src_close_devs(n);
	free(n);
	free(s);
}

/* This kernel's lock among its processes: a page of this host. */
static int local_lock_open(struct sio_fabric *f, struct ntbsrc *n)
{
	char leaf[32], path[PATH_MAX];
	void *p;
	int fd, ret;

	snprintf(leaf, sizeof(leaf), "lock-%d", n->node.port);
	if ((ret = sio__fabric_host_path(f, leaf, path, sizeof(path))))
		return ret;
	if ((fd = open(path, O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600)) < 0)
		return sio__err(errno, "ntb: %s: %s", path, strerror(errno));
	p = ftruncate(fd, WF_PAGE) ? MAP_FAILED :
	    mmap(NULL, WF_PAGE, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	close(fd);
	if (p == MAP_FAILED)
		return sio__err(errno, "ntb: cannot map %s: %s", path, strerror(errno));
	n->local = p;
	return 0;
}

/*
 * No bootstrap through NTB 0, while the node service reads the fabric's
 * header through a further NTB (its link with the home up, NTB 0's down):
 * the bootstrap the service joined by, and the state through that NTB,
 * whose header is checked as any (its magic, name and generation).
 */
static bool join_via(struct ntbsrc *n)
{
	int a = n->node.via_a;

	if (a < 1 || a >= SIO_MAX_ADAPTERS || !n->adev[a] || n->node.via.port == n->node.port ||
	    n->node.via.port < 0 || n->node.via.port >= WF_MAX_POOLS)
		return false;
	n->boot = n->node.via;
	__atomic_store_n(&n->state_a, a, __ATOMIC_RELEASE);
	return true;
}

/* Find the home, check the window to it, map the header: for attach and destroy. */
static int state_find(struct sio_fabric *f, struct wf_fabric *s)
{
	struct ntbsrc *n = src_of(s);
	uint64_t off, size;
	int ret;

	if ((ret = sio__ntb_boot_find(n->dev, &n->info, &n->node.board, &n->boot)) && !join_via(n))
		return ret;
	/* untranslated, the window reaches whatever its default is: never read that as the state */
	if (!n->state_a && n->boot.port != n->node.port &&
	    sio__ntb_unreached(n->dev, &n->info, &n->node.board, n->boot.port, n->node.port))
		return sio__err(ENXIO, "ntb: port %d hosts fabric '%s', but its hardware driver refused to translate its inbound window %d for port %d: the fabric's state is out of this node's reach (port %d's smartio ntb serve log says why)",
				n->boot.port, f->name, NTB_MEM_WIDX, n->node.port, n->boot.port);
	if ((ret = mem_via(n, n->state_a, n->boot.port, &off, &size)))
		return ret;
	if (size < n->boot.state_size)
		return sio__err(EMSGSIZE, "ntb: port %d hosts the fabric, whose state needs %llu KiB; its window to this port reaches %llu KiB (a larger window on port %d: see docs/ntb.md)",
				n->boot.port, (unsigned long long)(n->boot.state_size >> 10),
				(unsigned long long)(size >> 10), n->boot.port);
	if ((ret = src_map(s, WF_STATE, 0, sizeof(struct wf_hdr), false, (void **)&s->hdr)))
		return ret;
	return sio__wf_check(s, f->name, n->boot.state_size, " on the node that is to host it");
}

/* The header holds the generation the bootstrap says, or the bootstrap is stale. */
static int gen_check(struct sio_fabric *f, struct wf_fabric *s)
{
	struct ntbsrc *n = src_of(s);

	if (s->hdr->create_gen == n->boot.gen)
		return 0;
	return sio__err(ESTALE, "ntb: fabric '%s': port %d's scratchpads say generation %u, its memory holds generation %llu: a stale bootstrap (the fabric was made again, or port %d's node service restarted; it publishes the bootstrap again within a second)",
			f->name, n->boot.port, n->boot.gen, (unsigned long long)s->hdr->create_gen,
			n->boot.port);
}

/*
 * Lock held, or the fabric new: this node's memory as its pool (its node
 * service does the same; the first process of the node need not wait for it).
 */
static void pool_record(struct wf_fabric *s)
{
	struct ntbsrc *n = src_of(s);
	uint64_t off = sio__ntb_pool_off(&n->node);

	if (n->node.mem_size > off)
		s->hdr->pools[n->node.port] = (struct wf_pool){ .off = off, .size = n->node.mem_size - off,
								 .epoch = n->node.epoch,
								 .seg_windows = n->node.seg_windows,
								 .xlat_align = n->node.xlat_align,
								 .reach0 = n->node.reach0 };
}

/* Lock held: a process joins; its node's memory is the node's pool from now on. */
static void sio__ntb_proc_init(struct sio_fabric *f, struct reg_proc *p)
{
	struct wf_fabric *s = wf_of(f);
	struct wf_pool *pl = &s->hdr->pools[src_of(s)->node.port];

	sio__wf_proc_init(f, p);
	if (!pl->size || pl->epoch != src_of(s)->node.epoch)
		pool_record(s);
}

/*
 * A joiner finding no home while some peer has no link may be in the hold
 * before the home's standby takes over (the home's host died): where a
 * process of this host has been in the fabric (so it was made), it waits
 * for that, bounded by $SMARTIO_NTB_TAKEOVER_MS and a margin for the link's
 * detection and the claim, instead of calling a live fabric absent. A name
 * this host never saw is refused at once. The same wait covers a peer whose
 * words by message have not come yet (a link back a moment ago): the node
 * service's board is asked for again at each tick. The service's answer
 * also says when no take-over will come because another NTB of this node
 * still reaches the home: the joiner is told so at once.
 */
#define HOME_WAIT_MARGIN_NS	5000000000ull

/* Ask the node service for its board (by message) and its note: 0, or the
 * error naming why no take-over comes. */
static int service_says(struct sio_fabric *f, struct ntbsrc *n)
{
	struct ntb_board bd;
	char note[256];

	if (sio__ntb_node_board(getenv("SMARTIO_NTB_DEV"), n->node.fake_port, &bd, note,
				sizeof(note)))
		return 0;	/* no answer: the wait's bound still holds */
	if (n->node.board.by_msg)
		n->node.board = bd;
	return note[0] ? sio__err(EHOSTUNREACH, "ntb: %s: this node's service says: %s", f->name,
				  note) : 0;
}

/* When a wait for a home's take-over, from now, is over. */
static uint64_t home_wait_end(void)
{
	uint64_t hold;

	if (sio__ntb_takeover_ns(&hold))
		hold = 5000000000ull;	/* the service refuses a bad value */
	return sio__now_ns() + hold + HOME_WAIT_MARGIN_NS;
}

static int state_find_waiting(struct sio_fabric *f, struct wf_fabric *s)
{
	struct ntbsrc *n = src_of(s);
	uint64_t end = 0;
	int ret;

	while ((ret = state_find(f, s)) == -ENOENT && n->boot.unheard) {
		struct timespec ts = { 0, NTB_TICK_MS * 1000000L };
		int said;

		if (!end) {
			if (!sio__wf_host_knew(s, f->name))
				break;
			end = home_wait_end();
		} else if (sio__now_ns() > end) {
			break;
		}
		/* (after the checks that end the wait with state_find()'s error:
		 * a service that does not answer sets an error of its own) */
		if ((said = service_says(f, n)))
			return said;
		nanosleep(&ts, NULL);
	}
	return ret;
}

static int attach_once(struct sio_fabric *f)
{
	struct wf_fabric *s;
	int ret;

	if ((ret = src_open(f, NTB_OP_HELLO, NULL, &s)))
		return ret;
	if (f->node != src_of(s)->node.port) {
		ret = sio__err(EINVAL, "ntb: this kernel is port %d of %s: join fabric '%s' as node %d (SMARTIO_NODE=%d, or --node %d), not node %d",
			       src_of(s)->node.port, src_of(s)->dev->what, f->name, src_of(s)->node.port,
			       src_of(s)->node.port, src_of(s)->node.port, f->node);
		goto fail;
	}
	if ((ret = state_find_waiting(f, s)) || (ret = gen_check(f, s)) ||
	    (ret = sio__wf_attach(f, s)))
		goto fail;
	src_of(s)->home_epoch = s->hdr->home.epoch;
	if ((ret = local_lock_open(f, src_of(s)))) {
		sio__wf_detach(f, s);
		goto fail;
	}
	sio__wf_wake_open(f, s);
	return 0;
fail:
	f->reg = NULL;
	src_drop(s);
	return ret;
}

/*
 * The home's link lost half way through the join (its host died, or was
 * cut off, as this process came in: a map of the state refused, the lock
 * finding the home down) is joined again: the standby takes over within
 * the hold, and the next try waits for it as one that finds no home does
 * (state_find_waiting()), bounded by the hold and its margin.
 */
static int sio__ntb_attach(struct sio_fabric *f)
{
	struct timespec ts = { 0, NTB_TICK_MS * 1000000L };
	uint64_t end = 0;
	int ret;

	while ((ret = attach_once(f)) == -ENOTCONN || ret == -EHOSTDOWN) {
		if (!end)
			end = home_wait_end();
		else if (sio__now_ns() > end)
			break;
		nanosleep(&ts, NULL);
	}
	return ret;
}

static int sio__ntb_create(struct sio_fabric *f, bool group, gid_t gid)
{
	struct wf_fabric *s;
	uint32_t gen = 0;
	int ret;

	(void)gid;
	if (group)
		return sio__err(EOPNOTSUPP, "ntb: a fabric over an NTB has no group access: every node that runs the node service may join");
	f->node = sio__ntb_port_default();	/* the fabric's home: this kernel's port */
	if ((ret = src_open(f, NTB_OP_CREATE, &gen, &s)))
		return ret;
	src_of(s)->boot = (struct ntb_boot){ .port = src_of(s)->node.port, .gen = gen,
					 .name_hash = sio__ntb_name_hash(f->name),
					 .state_size = WF_STATE_END, .widx = src_of(s)->node.mem_widx };
	src_of(s)->created = true;
	/* the node service claimed the header (its magic) in its own memory */
	if ((ret = src_map(s, WF_STATE, 0, sizeof(struct wf_hdr), false, (void **)&s->hdr)) ||
	    (ret = sio__wf_init(f, s, WF_STATE_END, gen))) {
		src_drop(s);
		return ret;
	}
	s->hdr->home = (struct wf_home){ .port = src_of(s)->node.port, .standby = -1, .epoch = 1 };
	src_of(s)->home_epoch = 1;
	pool_record(s);
	return local_lock_open(f, src_of(s));
}

static void sio__ntb_detach(struct sio_fabric *f)
{
	struct wf_fabric *s = wf_of(f);
	struct ntbsrc *n;

	if (!s) {
		f->reg = NULL;
		return;
	}
	n = src_of(s);
	/* the registry whole (the core made it): the bootstrap goes out now, not a tick later */
	if (n->created && f->reg && __atomic_load_n(&f->reg->magic, __ATOMIC_ACQUIRE) == SIO_REG_MAGIC)
		sio__ntb_boot_publish(n->dev, &n->info, &n->node.board, &n->boot);
	sio__wf_detach(f, s);
	src_drop(s);
}

/* Clear the state's magic words: the home's node service then takes the bootstrap back. */
static int sio__ntb_destroy(const char *name)
{
	struct sio_fabric f = { .proc = -1, .node = sio__ntb_port_default() };
	struct wf_fabric *s;
	struct sio_registry *r;
	int ret;

	snprintf(f.name, sizeof(f.name), "%s", name);
	if ((ret = src_open(&f, NTB_OP_HELLO, NULL, &s)))
		return ret;
	if (!(ret = state_find(&f, s)) &&
	    !(ret = src_map(s, WF_STATE, s->hdr->reg_off, sizeof(*r), false, (void **)&r))) {
		r->magic = 0;
		atomic_thread_fence(memory_order_seq_cst);
		__atomic_store_n(&s->hdr->magic, 0, __ATOMIC_RELEASE);
		src_unmap(s, r, sizeof(*r));
		sio__ntb_standby_void(s);	/* nor may its standby take a destroyed fabric over */
	}
	src_drop(s);
	return ret;
}

/* The one fabric of this NTB, if there is one. */
static int sio__ntb_list(char (*names)[SIO_NAME_MAX], int max)
{
	struct sio_fabric f = { .proc = -1, .node = sio__ntb_port_default() };
	struct wf_fabric *s;
	int ret;

	if ((ret = src_open(&f, NTB_OP_HELLO, NULL, &s)))
		return ret;
	ret = sio__ntb_boot_find(src_of(s)->dev, &src_of(s)->info, &src_of(s)->node.board,
				 &src_of(s)->boot);
	if (!ret && !(ret = src_map(s, WF_STATE, 0, sizeof(struct wf_hdr), false, (void **)&s->hdr)))
		ret = s->hdr->magic == WF_MAGIC && memchr(s->hdr->name, 0, SIO_NAME_MAX) ? 1 : 0;
	if (ret == 1 && max > 0)
		snprintf(names[0], SIO_NAME_MAX, "%s", s->hdr->name);
	src_drop(s);
	return ret == -ENOENT ? 0 : ret;
}

/*
 * A home we cannot hear from (its link down) has not destroyed the fabric:
 * we do not know. Nor do we while its link is up again after a flap and
 * the heartbeat has not mapped the state again at the new generation: the
 * old mapping reads all ones, which no destroyed state says (its magic is
 * cleared). A manager away from a lender that flapped with the home took
 * that for a destroyed fabric, and stopped.
 */
static bool sio__ntb_removed(struct sio_fabric *f)
{
	struct ntbsrc *n = src_of(wf_of(f));
	struct sio_ntb_peer pr;
	int pidx, a, home = n->boot.port;

	if (__atomic_load_n(&n->orphaned, __ATOMIC_ACQUIRE))
		return true;	/* its home yielded to a state without it (home.c) */
	if ((a = __atomic_load_n(&n->state_a, __ATOMIC_ACQUIRE)) && home != n->node.port) {
		uint64_t gen;	/* the state through a further NTB (state_route()) */
		bool now = sio__ntb_peer_link(n->adev[a], home, &gen);

		pthread_mutex_lock(&n->mu);
		for (struct peer_map *m = n->maps; now && m; m = m->next)
			now = !(m->state && m->gen != gen);
		pthread_mutex_unlock(&n->mu);
		if (!now)
			return false;
	} else if (home != n->node.port && home >= 0 && home < WF_MAX_POOLS &&
	    (pidx = sio__ntbdev_pidx(n->dev, home)) >= 0) {
		pr = (struct sio_ntb_peer){ .pidx = (uint32_t)pidx };
		if (ntbdev_ioctl(n->dev, SIO_NTB_IOC_PEER, &pr) || !pr.link_up ||
		    pr.link_gen != __atomic_load_n(&n->state_gen[home], __ATOMIC_ACQUIRE))
			return false;
	}
	return sio__wf_removed(f);
}

/* A two-port NTB without port numbers: this side's id, as the node service agreed it. */
static int side_port(int port)
{
	struct ntb_service *sv = sio__ntb_service_here();
	struct ntb_node node;
	struct ntbdev *d;

	if (sv)
		return sio__ntb_service_dev(sv, &node, NULL) ? node.port : port;
	if (sio__ntb_node_connect(NULL, -1, NTB_OP_HELLO, "", &d, NULL, &node, NULL))
		return port;
	sio__ntbdev_close(d);
	return node.port;
}

/*
 * This kernel's port: the node a process joins as by default. A fake NTB's
 * processes play whichever port $SMARTIO_NODE says (0 without it).
 */
uint64_t sio__ntb_pool_off(const struct ntb_node *node)
{
	return node->mem_size >= WF_STATE_END + NTB_MIN_POOL ? WF_STATE_END : 0;
}

int sio__ntb_port_default(void)
{
	const char *spec = getenv("SMARTIO_NTB_DEV"), *e = getenv("SMARTIO_NODE");
	struct ntbdev *d;
	struct sio_ntb_info i;
	int port = 0;

	if (spec && !strncmp(spec, "fake:", 5))
		return e && (port = atoi(e)) > 0 && port < WF_MAX_POOLS ? port : 0;
	if (sio__ntbdev_open(NULL, 0, &d))
		return 0;
	if (!ntbdev_ioctl(d, SIO_NTB_IOC_INFO, &i))
		port = sio__ntbdev_sideless(d, &i) ? side_port(i.port) : i.port;
	sio__ntbdev_close(d);
	return port;
}

static int sio__ntb_default_node(void)
{
	return sio__ntb_port_default();
}

const struct sio_fabric_ops sio__ntb_fabric_ops = {
	.name = "ntb",
	.state_across_links = true,
	.create = sio__ntb_create,
	.attach = sio__ntb_attach,
	.detach = sio__ntb_detach,
	.destroy = sio__ntb_destroy,
	.list = sio__ntb_list,
	.default_node = sio__ntb_default_node,
	.removed = sio__ntb_removed,
	.link = sio__ntb_link,
	WF_FABRIC_OPS,
	.proc_init = sio__ntb_proc_init,
	.seg_connect = sio__ntb_seg_connect,
	.seg_reach = sio__ntb_seg_reach,
};
