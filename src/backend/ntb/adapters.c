/* SPDX-License-Identifier: MIT */
/*
 * A node's NTBs as its adapters: adapter 0 is the NTB the node service
 * holds for the fabric (its memory, the state, the doorbells), adapters 1
 * and up are further NTBs of the same host (`smartio ntb serve --dev DEV0
 * --dev DEV1`), cabled to the same peers for a second path. Each NTB's
 * links give its adapter the link state the core routes by (path.c picks
 * an adapter whose links are up at both ends; a multipath client fails over
 * on its events), written by this node's service for this node alone.
 *
 * The core keeps a link per node and adapter; NTB links are per pair of
 * ports. A node's adapter is called down while its NTB has no link with a
 * node of the fabric that another NTB of this node reaches: that peer is
 * alive, so the link of this NTB is what failed. A peer that no NTB reaches
 * is gone (its lease says so), not a fault of an adapter.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "ntb.h"

int sio__ntb_adapters_open(struct ntb_adapters *x, struct ntbdev *first, const char *more, int port)
{
	char spec[sizeof(first->spec)];
	const char *s = more;
	struct sio_ntb_info i;
	size_t len;
	int ret;

	memset(x, 0, sizeof(*x));
	x->dev[0] = first;
	x->n = 1;
	while (s && *s) {
		len = strcspn(s, ",");
		if (x->n == SIO_MAX_ADAPTERS)
			return sio__err(E2BIG, "ntb: one NTB per adapter, and a node has %d adapters at most: '%s' is one too many",
					SIO_MAX_ADAPTERS, s);
		if (!len || len >= sizeof(spec))
			return sio__err(EINVAL, "ntb: '%.*s' names no NTB device for adapter %d (/dev/smartio-ntbN, N or fake:DIR)",
					(int)len, s, x->n);
		memcpy(spec, s, len);
		spec[len] = 0;
		s += len + (s[len] == ',');
		if ((ret = sio__ntbdev_open(spec, first->fake ? port : 0, &x->dev[x->n])))
			return ret;
		x->n++;
		if ((ret = sio__ntbdev_info(x->dev[x->n - 1], &i)))
			return ret;
		if (sio__ntbdev_sideless(x->dev[x->n - 1], &i))
			return sio__err(EOPNOTSUPP, "ntb: %s (%s) gives no port numbers: as adapter %d it cannot say which of its peers is which node",
					x->dev[x->n - 1]->what, i.driver, x->n - 1);
		if (i.port != port)
			return sio__err(EINVAL, "ntb: %s is port %d, and %s (adapter 0) port %d: a node's NTBs must give it one port, its node's id (cable and number them alike)",
					x->dev[x->n - 1]->what, i.port, first->what, port);
	}
	return 0;
}

void sio__ntb_adapters_close(struct ntb_adapters *x)
{
	for (int a = 1; a < x->n; a++)
		sio__ntbdev_close(x->dev[a]);
	x->n = 0;
}

/* The ports (a bit each) that NTB @d has its link up with; 0 if it cannot say. */
static uint64_t ports_up(struct ntbdev *d)
{
	struct sio_ntb_info i;
	uint64_t m = 0;

	if (ntbdev_ioctl(d, SIO_NTB_IOC_INFO, &i))
		return 0;
	for (uint32_t p = 0; p < i.peers && p < SIO_NTB_MAX_PEERS; p++) {
		struct sio_ntb_peer pr = { .pidx = p };

		if ((i.link >> p & 1) && !ntbdev_ioctl(d, SIO_NTB_IOC_PEER, &pr) && pr.link_up &&
		    pr.port >= 0 && pr.port < 64)
			m |= 1ull << pr.port;
	}
	return m;
}

/* The lowest port of @m (not 0). */
static int first_port(uint64_t m)
{
	return __builtin_ctzll(m);
}

int sio__ntb_adapters_follow(struct ntb_adapters *x, struct sio_fabric *f, int me, char *msg,
			     size_t len)
{
	uint64_t alive = 0, nodes;
	int n = x->n < f->topo.adapters ? x->n : f->topo.adapters;

	msg[0] = 0;
	if (n < 2)
		return 0;	/* one NTB: no adapter to tell apart from another */
	nodes = (f->topo.nodes >= 64 ? ~0ull : (1ull << f->topo.nodes) - 1) & ~(1ull << me);
	for (int a = 0; a < n; a++)
		alive |= x->ports[a] = ports_up(x->dev[a]) & nodes;
	if (!alive)
		return 0;	/* no peer at all: nothing to route to, nothing told */
	for (int a = 0; a < n; a++) {
		bool up = (x->ports[a] & alive) == alive;
		int was = sio_link_get(f, me, a);

		if (was < 0 || was == up || sio_link_set(f, me, a, up))
			continue;
		if (up)
			snprintf(msg, len, "adapter %d of node %d (%s): link up with every node reached: paths may take it again",
				 a, me, x->dev[a]->what);
		else
			snprintf(msg, len, "adapter %d of node %d (%s): link down: no link with port %d, which another adapter reaches (paths take another adapter)",
				 a, me, x->dev[a]->what, first_port(alive & ~x->ports[a]));
		return 1;
	}
	return 0;
}

int sio__ntb_adapters_reach(struct ntb_adapters *x, int port)
{
	for (int a = 1; a < x->n && port >= 0 && port < 64; a++)
		if (ports_up(x->dev[a]) >> port & 1)
			return a;
	return -1;
}

/*
 * A node's memory through a further NTB. On NTB hardware a host's memory
 * sits behind all of its NTBs: the buffer that adapter 0's NTB exports can
 * be exported through another's inbound window too (its bus address, which
 * the other NTB reaches where no IOMMU stands between), and a peer reaches
 * the same bytes through either. Whether it does is not taken on trust: the
 * first page of a peer's memory is read through both NTBs and compared.
 */
#define PEEK	4096

/* The peer index of @port on NTB @d and its link's generation; -1 if its link is down. */
static int peer_of(struct ntbdev *d, int port, uint64_t *gen)
{
	struct sio_ntb_info i;

	if (ntbdev_ioctl(d, SIO_NTB_IOC_INFO, &i))
		return -1;
	for (uint32_t p = 0; p < i.peers && p < SIO_NTB_MAX_PEERS; p++) {
		struct sio_ntb_peer pr = { .pidx = p };

		if (!ntbdev_ioctl(d, SIO_NTB_IOC_PEER, &pr) && pr.port == port && pr.link_up) {
			*gen = pr.link_gen;
			return (int)p;
		}
	}
	return -1;
}

/* The first @len bytes (a page at most) of peer @p's memory (its window 0) on NTB @d. */
static int peek(struct ntbdev *d, uint32_t p, void *buf, size_t len)
{
	struct sio_ntb_peer_mw pm = { 0 };
	struct sio_ntb_info i;
	volatile uint8_t *va;
	void *m;
	int ret;

	if (len > PEEK)
		return -EINVAL;
	if ((ret = ntbdev_ioctl(d, SIO_NTB_IOC_INFO, &i)))
		return ret;
	pm.widx = p * i.mws_per_peer + NTB_MEM_WIDX;
	if ((ret = ntbdev_ioctl(d, SIO_NTB_IOC_PEER_MW, &pm)))
		return ret;
	if (pm.size < PEEK)
		return -ENOSPC;
	if ((ret = ntbdev_mmap(d, NULL, pm.mmap_offset, PEEK, &m)))
		return ret;
	va = m;
	for (size_t k = 0; k < len; k++)
		((uint8_t *)buf)[k] = va[k];
	munmap(m, PEEK);
	return 0;
}

int sio__ntb_adapters_peek(struct ntb_adapters *x, int a, int port, void *buf, size_t len)
{
	uint64_t gen;
	int p = a < x->n ? peer_of(x->dev[a], port, &gen) : -1;

	return p < 0 ? -ENOLINK : peek(x->dev[a], (uint32_t)p, buf, len);
}

/*
 * Peer @p (port @port) of adapter @a's NTB and adapter 0's: the same first
 * page, read up to three times (a live page may change between the reads);
 * 1 same, 0 differ, -errno when either cannot be read. *@zero: all zero.
 */
static int same_bytes(struct ntb_adapters *x, int a, uint32_t p, int port, bool *zero)
{
	uint8_t b0[PEEK], b1[PEEK];
	uint64_t gen;
	int p0 = peer_of(x->dev[0], port, &gen), ret;

	if (p0 < 0)
		return -ENOLINK;
	for (int t = 0; t < 3; t++) {
		if ((ret = peek(x->dev[0], (uint32_t)p0, b0, PEEK)) ||
		    (ret = peek(x->dev[a], p, b1, PEEK)))
			return ret;
		if (!memcmp(b0, b1, PEEK)) {
			*zero = true;
			for (size_t k = 0; k < PEEK && *zero; k++)
				*zero = !b0[k];
			return 1;
		}
	}
	return 0;
}

/* Adapter @a's window 0 of peer @p onto the node's memory: 1 when @msg says how it went. */
static int export_to(struct ntb_adapters *x, int a, int me, uint32_t p, int port, uint64_t dma,
		     uint64_t size, char *msg, size_t len)
{
	struct sio_ntb_xlat t = { .pidx = p, .widx = NTB_MEM_WIDX, .addr = dma, .size = size };
	int ret;

	if ((x->exported[a] | x->refused[a]) >> p & 1)
		return 0;
	if (!(ret = ntbdev_ioctl(x->dev[a], SIO_NTB_IOC_MW_XLAT, &t))) {
		x->exported[a] |= 1ull << p;
		x->reach[a] |= port >= 0 && port < 64 ? 1ull << port : 0;
		snprintf(msg, len, "adapter %d of node %d (%s): its memory exported to port %d through window %d, the buffer adapter 0 exports",
			 a, me, x->dev[a]->what, port, NTB_MEM_WIDX);
	} else {
		x->refused[a] |= 1ull << p;
		snprintf(msg, len, "adapter %d of node %d (%s): cannot export its memory to port %d: %s (this NTB's driver translates no window onto the buffer of adapter 0's NTB: the adapter carries paths, not memory)",
			 a, me, x->dev[a]->what, port, strerror(-ret));
	}
	return 1;
}

/*
 * Compare what adapter @a reaches of port @port with adapter 0, once per
 * link, and at each look while it is all zero (nothing told apart yet): 1
 * when @msg says a change.
 */
static int compare(struct ntb_adapters *x, int a, int me, uint32_t p, int port, uint64_t gen,
		   char *msg, size_t len)
{
	uint64_t bit = 1ull << p;
	bool was = x->same[a] & bit, was_zero = x->zero[a] & bit, zero = false;
	int r;

	if ((x->looked[a] & bit) && x->gen[a][p] == gen && !was_zero)
		return 0;
	if ((r = same_bytes(x, a, p, port, &zero)) < 0)
		return 0;	/* adapter 0's link is down, or a window not there yet: later */
	x->looked[a] |= bit;
	x->gen[a][p] = gen;
	x->same[a] = (x->same[a] & ~bit) | (r == 1 ? bit : 0);
	x->zero[a] = (x->zero[a] & ~bit) | (r == 1 && zero ? bit : 0);
	if ((r == 1) == was && (r != 1 || zero == was_zero))
		return 0;
	if (r == 1)
		snprintf(msg, len, "adapter %d of node %d (%s): port %d's memory through it is the memory adapter 0 reaches (the first %d bytes the same%s)",
			 a, me, x->dev[a]->what, port, PEEK,
			 zero ? ", all zero: not told apart from memory never written" : "");
	else
		snprintf(msg, len, "adapter %d of node %d (%s): port %d's memory through it differs from what adapter 0 reaches: this NTB reaches other memory, so the adapter carries paths, not memory",
			 a, me, x->dev[a]->what, port);
	return 1;
}

int sio__ntb_adapters_export(struct ntb_adapters *x, int me, uint64_t dma, uint64_t size,
			     char *msg, size_t len)
{
	msg[0] = 0;
	for (int a = 1; a < x->n; a++) {
		struct sio_ntb_info i;

		if (ntbdev_ioctl(x->dev[a], SIO_NTB_IOC_INFO, &i))
			continue;
		for (uint32_t p = 0; p < i.peers && p < SIO_NTB_MAX_PEERS; p++) {
			struct sio_ntb_peer pr = { .pidx = p };

			if (!(i.link >> p & 1) || ntbdev_ioctl(x->dev[a], SIO_NTB_IOC_PEER, &pr) ||
			    !pr.link_up)
				continue;
			if (export_to(x, a, me, p, pr.port, dma, size, msg, len) ||
			    ((x->exported[a] >> p & 1) &&
			     compare(x, a, me, p, pr.port, pr.link_gen, msg, len)))
				return 1;
		}
	}
	return 0;
}
