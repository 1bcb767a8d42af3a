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
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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
