/* SPDX-License-Identifier: MIT */
/*
 * Routes through the modelled topology. Per-hop delays are the latency
 * model's (calibrated from the SmartIO paper), not measurements.
 */
#include <string.h>
#include "internal.h"

static void hop(struct sio_path *p, enum sio_hop_kind k, int id, uint32_t ns)
{
	if (p->nhops < SIO_PATH_MAX_HOPS)
		p->hops[p->nhops++] = (struct sio_hop){ .kind = k, .id = id, .ns = ns };
}

int sio__route(struct sio_fabric *f, int from, int to, int adapter, bool chassis_from,
	       bool chassis_to, struct sio_path *out)
{
	const struct sio_topology *t = &f->topo;
	const struct reg_node *n = f->reg->nodes;

	if (from < 0 || from >= t->nodes || to < 0 || to >= t->nodes)
		return sio__err(EINVAL, "no route between nodes %d and %d: fabric has %d nodes",
				from, to, t->nodes);
	if (adapter >= t->adapters)
		return sio__err(EINVAL, "node %d has adapters 0..%d, not %d", from, t->adapters - 1, adapter);
	memset(out, 0, sizeof(*out));
	out->from_node = from;
	out->to_node = to;
	out->adapter = -1;
	out->up = true;
	if (chassis_from)
		hop(out, SIO_HOP_CHASSIS, from, t->chassis_ns);
	if (from != to) {
		int a = adapter;

		if (a < 0) {	/* first adapter whose links are up at both ends */
			for (a = 0; a < t->adapters; a++)
				if (n[from].link_up[a] && n[to].link_up[a])
					break;
			if (a == t->adapters)
				a = 0;
		}
		out->adapter = a;
		out->up = n[from].link_up[a] && n[to].link_up[a];
		hop(out, SIO_HOP_ADAPTER, from, t->adapter_ns);
		if (t->kind == SIO_TOPO_SWITCH) {
			hop(out, SIO_HOP_SWITCH, n[from].sw[a], t->switch_ns);
		} else if (t->kind == SIO_TOPO_CASCADE) {
			hop(out, SIO_HOP_SWITCH, n[from].sw[a], t->switch_ns);
			if (n[from].sw[a] != n[to].sw[a]) {
				hop(out, SIO_HOP_SWITCH, a * t->switches, t->switch_ns);
				hop(out, SIO_HOP_SWITCH, n[to].sw[a], t->switch_ns);
			}
		}
		hop(out, SIO_HOP_ADAPTER, to, t->adapter_ns);
	}
	if (chassis_to)
		hop(out, SIO_HOP_CHASSIS, to, t->chassis_ns);
	for (int i = 0; i < out->nhops; i++)
		out->one_way_ns += out->hops[i].ns;
	out->round_trip_ns = 2 * out->one_way_ns;
	return 0;
}

/* Registry lock held. */
static int endpoint(struct sio_fabric *f, const struct sio_endpoint *e, int *node, bool *chassis,
		    int *dev)
{
	struct sio_registry *r = f->reg;

	*chassis = false;
	*dev = -1;
	switch (e->kind) {
	case SIO_EP_NODE:
		*node = e->node;
		return 0;
	case SIO_EP_DEVICE:
		for (int d = 0; d < SIO_MAX_DEVS; d++)
			if (r->devs[d].used && r->devs[d].id == e->id) {
				*node = r->devs[d].lender;
				*chassis = r->devs[d].chassis;
				*dev = d;
				return 0;
			}
		return sio__err(ENOENT, "no device %u", e->id);
	case SIO_EP_SEGMENT:
		for (int s = 0; s < SIO_MAX_SEGS; s++)
			if (r->segs[s].used && r->segs[s].node == e->node && r->segs[s].id == e->id) {
				const struct reg_dev *d = reg_dev_at(r, r->segs[s].device);
				*node = e->node;
				*chassis = d && d->chassis;
				*dev = d ? r->segs[s].device : -1;
				return 0;
			}
		return sio__err(ENOENT, "no segment %u on node %d", e->id, e->node);
	}
	return sio__err(EINVAL, "unknown endpoint kind %d", (int)e->kind);
}

int sio_path_resolve(struct sio_fabric *f, const struct sio_endpoint *from,
		     const struct sio_endpoint *to, int adapter, struct sio_path *out)
{
	int fn, tn, fd, td, ret;
	bool fc, tc;

	if (!f || !from || !to || !out)
		return sio__err(EINVAL, "bad arguments to sio_path_resolve");
	if ((ret = sio__lock(f)))
		return ret;
	ret = endpoint(f, from, &fn, &fc, &fd);
	if (!ret)
		ret = endpoint(f, to, &tn, &tc, &td);
	/* a device reaching its own BAR (a CMB) crosses nothing */
	if (!ret && fd >= 0 && fd == td)
		ret = sio__route(f, fn, tn, adapter, false, false, out);
	/* a device and a segment of the same chassis meet at its switch */
	else if (!ret && fc && tc && fn == tn)
		fc = tc = false, ret = sio__route(f, fn, tn, adapter, true, false, out);
	else if (!ret)
		ret = sio__route(f, fn, tn, adapter, fc, tc, out);
	sio__unlock(f);
	return ret;
}

int sio__route_window(struct sio_fabric *f, int from, int to, int adapter, bool chassis_from,
		      bool chassis_to, int seg, struct sio_path *out, uint64_t *bus)
{
	struct sio_path p;
	int ret = sio__route(f, from, to, adapter, chassis_from, chassis_to, out), w;

	if (ret)
		return ret;
	w = sio__reg_window_get(f, from, out->adapter, seg, bus);
	for (int a = 0; w == -ENOSPC && adapter < 0 && a < f->topo.adapters; a++) {
		if (a == out->adapter ||
		    sio__route(f, from, to, a, chassis_from, chassis_to, &p) || !p.up)
			continue;
		w = sio__reg_window_get(f, from, a, seg, bus);
		if (w >= 0)
			*out = p;
	}
	if (w == -ENOSPC && adapter < 0 && f->topo.adapters > 1)
		return sio__err(ENOSPC, "no free window on node %d: all %d windows of each of its "
				"%d adapters (whose links are up) are in use", from, f->topo.windows,
				f->topo.adapters);
	return w;
}

const char *sio_hop_kind_name(enum sio_hop_kind k)
{
	switch (k) {
	case SIO_HOP_ADAPTER: return "adapter";
	case SIO_HOP_CHASSIS: return "chassis";
	case SIO_HOP_SWITCH: return "switch";
	}
	return "unknown";
}
