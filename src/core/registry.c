/* SPDX-License-Identifier: MIT */
/*
 * Registry table operations. Every function here runs with the registry
 * lock held. Releasing is layered: a process owns borrows, process
 * mappings, segments and devices; a borrow owns device mappings; mappings
 * hold window references. Dead processes are found lazily by whoever takes
 * the lock next, so no daemon has to be alive.
 *
 * Indices read from the tables go through the checked accessors: a release
 * skips what a corrupt entry names rather than writing out of bounds.
 */
#include <string.h>
#include "internal.h"

struct reg_window *sio__reg_window_at(struct sio_fabric *f, int node, int adapter, int window)
{
	if (node < 0 || node >= f->topo.nodes || adapter < 0 || adapter >= f->topo.adapters ||
	    window < 0 || window >= f->topo.windows)
		return NULL;
	return &f->reg->windows[node][adapter][window];
}

int sio__reg_window_get(struct sio_fabric *f, int node, int adapter, int seg, uint64_t *bus)
{
	struct sio_registry *r = f->reg;
	struct reg_window *w = sio__reg_window_at(f, node, adapter, 0);
	int free_w = -1;

	if (!w || !reg_seg_at(r, seg))
		return sio__err(EINVAL, "no window on node %d adapter %d for segment slot %d", node, adapter, seg);
	if (r->segs[seg].size > f->topo.window_size)
		return sio__err(E2BIG, "segment of %llu bytes is larger than a window (%llu bytes)",
				(unsigned long long)r->segs[seg].size,
				(unsigned long long)f->topo.window_size);
	for (int i = 0; i < f->topo.windows; i++) {
		if (w[i].refs && w[i].seg == seg && w[i].seg_gen == r->segs[seg].gen) {
			w[i].refs++;
			*bus = SIO_BUS_WINDOW_BASE + ((uint64_t)adapter << 42) + i * f->topo.window_size;
			return i;
		}
		if (!w[i].refs && free_w < 0)
			free_w = i;
	}
	if (free_w < 0)
		return sio__err(ENOSPC, "no free window on node %d adapter %d: all %d windows per adapter "
				"are in use (smartio create --windows N makes more; an NVMe client maps "
				"a few of its own node's, and one of the lender's)",
				node, adapter, f->topo.windows);
	w[free_w] = (struct reg_window){ .refs = 1, .seg = seg, .seg_gen = r->segs[seg].gen };
	r->nodes[node].windows_used[adapter]++;
	*bus = SIO_BUS_WINDOW_BASE + ((uint64_t)adapter << 42) + free_w * f->topo.window_size;
	return free_w;
}

void sio__reg_window_put(struct sio_fabric *f, int node, int adapter, int window)
{
	struct reg_window *w = sio__reg_window_at(f, node, adapter, window);

	if (w && w->refs > 0 && --w->refs == 0 && f->reg->nodes[node].windows_used[adapter] > 0)
		f->reg->nodes[node].windows_used[adapter]--;
}

void sio__reg_pmap_release(struct sio_fabric *f, int i)
{
	struct reg_pmap *pm = &f->reg->pmaps[i];

	sio__reg_window_put(f, pm->node, pm->adapter, pm->window);
	memset(pm, 0, sizeof(*pm));
}

void sio__reg_dmamap_release(struct sio_fabric *f, int m)
{
	struct reg_dmamap *d = &f->reg->dmamaps[m];

	if (!d->used)
		return;
	sio__reg_window_put(f, d->win_node, d->win_adapter, d->window);
	memset(d, 0, sizeof(*d));
	reg_bump(f->reg);
}

/* Drop grants matching @dev, @bar and process (@node, @pid) (-1: any). */
void sio__reg_grants_drop(struct sio_fabric *f, int dev, int bar, int node, int pid)
{
	for (int i = 0; i < SIO_MAX_GRANTS; i++) {
		struct reg_grant *g = &f->reg->grants[i];
		if (g->used && (dev < 0 || g->dev == dev) && (bar < 0 || g->bar == bar) &&
		    (pid < 0 || (g->pid == pid && g->node == node)))
			memset(g, 0, sizeof(*g));
	}
}

void sio__reg_borrow_release(struct sio_fabric *f, int b)
{
	struct sio_registry *r = f->reg;
	struct reg_borrow *br = reg_borrow_at(r, b);
	struct reg_dev *dv;

	if (!br || !br->used)
		return;
	dv = reg_dev_at(r, br->dev);
	if (dv && br->irq_vecs) {	/* its process died with vectors bound */
		const struct sio_device_ops *ops = sio__device_ops(dv->backend);

		if (ops && ops->irq_gone)
			ops->irq_gone(f, dv->id, b, br->irq_vecs);
	}
	br->irq_vecs = 0;
	for (int bar = 0; dv && bar < SIO_MAX_BARS; bar++)	/* its restrictions end with it */
		if (dv->restricted[bar] == b + 1) {
			dv->restricted[bar] = 0;
			sio__reg_grants_drop(f, br->dev, bar, -1, -1);
		}
	for (int m = 0; m < SIO_MAX_DMAMAPS; m++) {
		struct reg_dmamap *d = &r->dmamaps[m];
		const struct reg_seg *sg;

		if (!d->used || d->borrow != b)
			continue;
		/*
		 * A kept segment (SIO_SEG_F_KEEP) outlives its owner for a
		 * successor, and so does what the device was given of it: a
		 * controller goes on reaching the admin queues and shadow
		 * doorbells of a manager that died until the next one maps them
		 * again (and so adopts this mapping), or they go.
		 */
		sg = d->seg >= 0 ? reg_seg_at(r, d->seg) : NULL;
		if (sg && sg->used && sg->keep && sg->gen == d->seg_gen && dv && dv->used)
			d->borrow = -1;
		else
			sio__reg_dmamap_release(f, m);
	}
	if (dv && dv->used) {
		if (dv->nborrows > 0)
			dv->nborrows--;
		if (dv->excl == b)
			dv->excl = -1;
	}
	memset(br, 0, sizeof(*br));
}

static bool want_seg_users(struct sio_fabric *f, int p, const struct sio_event *ev)
{
	struct sio_registry *r = f->reg;

	const struct reg_seg *s;
	const struct reg_borrow *b;

	for (int i = 0; i < SIO_MAX_PMAPS; i++)
		if (r->pmaps[i].used && r->pmaps[i].proc == p && (s = reg_seg_at(r, r->pmaps[i].seg)) &&
		    s->id == ev->segment && s->node == ev->node)
			return true;
	for (int m = 0; m < SIO_MAX_DMAMAPS; m++) {
		const struct reg_dmamap *d = &r->dmamaps[m];
		if (d->used && (s = reg_seg_at(r, d->seg)) && (b = reg_borrow_at(r, d->borrow)) &&
		    b->proc == p && s->id == ev->segment && s->node == ev->node)
			return true;
	}
	return false;
}

void sio__reg_seg_release(struct sio_fabric *f, int s, bool notify)
{
	struct sio_registry *r = f->reg;
	struct reg_seg *sg = reg_seg_at(r, s);

	if (!sg || !sg->used)
		return;
	if (notify) {
		struct sio_event ev = { .type = SIO_EV_SEGMENT_LOST, .node = sg->node, .adapter = -1,
					.segment = sg->id, .device = -1, .time_ns = sio__now_ns() };
		sio__event_broadcast(f, &ev, want_seg_users);
	}
	for (int i = 0; i < SIO_MAX_PMAPS; i++)
		if (r->pmaps[i].used && r->pmaps[i].seg == s)
			sio__reg_pmap_release(f, i);
	for (int m = 0; m < SIO_MAX_DMAMAPS; m++)
		if (r->dmamaps[m].used && r->dmamaps[m].seg == s)
			sio__reg_dmamap_release(f, m);
	for (int g = 0; g < SIO_MAX_GROUPS; g++) {
		struct reg_group *gr = &r->groups[g];
		if (gr->nsubs < 0 || gr->nsubs > SIO_MAX_SUBS)
			gr->nsubs = 0;	/* a corrupt count: the list means nothing */
		for (int i = 0; gr->used && i < gr->nsubs; i++)
			if (gr->sub_seg[i] == s) {
				gr->sub_seg[i] = gr->sub_seg[--gr->nsubs];
				gr->sub_gen[i] = gr->sub_gen[gr->nsubs];
				i--;
			}
	}
	if (sg->kind != SIO_SEG_GPU)	/* GPU memory stays with its exporter */
		f->ops->seg_remove(f, s);
	sg->used = 0;
	sg->gen = r->next_gen++;	/* stale handles now fail */
	reg_bump(r);
}

bool sio__want_dev_users(struct sio_fabric *f, int p, const struct sio_event *ev)
{
	const struct reg_dev *dv;

	for (int b = 0; b < SIO_MAX_BORROWS; b++)
		if (f->reg->borrows[b].used && f->reg->borrows[b].proc == p &&
		    (dv = reg_dev_at(f->reg, f->reg->borrows[b].dev)) && dv->id == (uint32_t)ev->device)
			return true;
	return false;
}

void sio__reg_dev_release(struct sio_fabric *f, int d)
{
	struct sio_registry *r = f->reg;
	struct reg_dev *dv = reg_dev_at(r, d);
	struct sio_event ev;

	if (!dv || !dv->used)
		return;
	ev = (struct sio_event){ .type = SIO_EV_DEVICE_GONE, .node = dv->lender, .adapter = -1,
				 .device = (int32_t)dv->id, .time_ns = sio__now_ns() };
	sio__event_broadcast(f, &ev, sio__want_dev_users);
	for (int b = 0; b < SIO_MAX_BORROWS; b++)
		if (r->borrows[b].used && r->borrows[b].dev == d)
			sio__reg_borrow_release(f, b);
	for (int m = 0; m < SIO_MAX_DMAMAPS; m++)	/* the kept ones, no one's now */
		if (r->dmamaps[m].used && r->dmamaps[m].dev == d)
			sio__reg_dmamap_release(f, m);
	for (int i = 0; i < dv->nbars && i < SIO_MAX_BARS; i++)
		sio__reg_seg_release(f, dv->bar_seg[i], false);
	sio__reg_grants_drop(f, d, -1, -1, -1);
	dv->used = 0;
	dv->gen = r->next_gen++;
	reg_bump(r);
}

/* Tell the other borrowers of what @p borrowed that it is gone. */
static void notify_gone(struct sio_fabric *f, int p, bool died)
{
	struct sio_registry *r = f->reg;

	for (int b = 0; b < SIO_MAX_BORROWS; b++) {
		const struct reg_dev *dv;
		if (!r->borrows[b].used || r->borrows[b].proc != p ||
		    !(dv = reg_dev_at(r, r->borrows[b].dev)))
			continue;
		struct sio_event ev = { .type = SIO_EV_PROCESS_GONE, .node = r->procs[p].node,
					.adapter = died, .pid = r->procs[p].pid,
					.device = (int32_t)dv->id, .time_ns = sio__now_ns() };
		for (int o = 0; o < SIO_MAX_BORROWS; o++)
			if (r->borrows[o].used && r->borrows[o].dev == r->borrows[b].dev &&
			    r->borrows[o].proc != p)
				sio__event_send(f, r->borrows[o].proc, &ev);
	}
}

void sio__reg_proc_release(struct sio_fabric *f, int p, bool died)
{
	struct sio_registry *r = f->reg;

	if (!reg_proc_at(r, p) || !r->procs[p].used)
		return;
	notify_gone(f, p, died);
	bool last = true;	/* grants are per process, not per handle */
	for (int o = 0; o < SIO_MAX_PROCS; o++)
		last &= o == p || !r->procs[o].used || r->procs[o].pid != r->procs[p].pid ||
			r->procs[o].node != r->procs[p].node;
	if (last && r->procs[p].pid > 0)	/* -1 would match every pid */
		sio__reg_grants_drop(f, -1, -1, r->procs[p].node, r->procs[p].pid);
	for (int b = 0; b < SIO_MAX_BORROWS; b++)
		if (r->borrows[b].used && r->borrows[b].proc == p)
			sio__reg_borrow_release(f, b);
	for (int i = 0; i < SIO_MAX_PMAPS; i++)
		if (r->pmaps[i].used && r->pmaps[i].proc == p)
			sio__reg_pmap_release(f, i);
	for (int d = 0; d < SIO_MAX_DEVS; d++)
		if (r->devs[d].used && r->devs[d].owner == p)
			sio__reg_dev_release(f, d);
	for (int s = 0; s < SIO_MAX_SEGS; s++) {
		if (!r->segs[s].used || r->segs[s].owner != p)
			continue;
		if (died && r->segs[s].keep)	/* a restarted owner adopts it */
			r->segs[s].owner = -1;
		else
			sio__reg_seg_release(f, s, true);
	}
	for (int g = 0; g < SIO_MAX_GROUPS; g++)
		if (r->groups[g].used && r->groups[g].owner == p)
			memset(&r->groups[g], 0, sizeof(r->groups[g]));
	if (died)
		f->ops->proc_gone(f, p);
	memset(&r->procs[p], 0, sizeof(r->procs[p]));
	reg_bump(r);
}

int sio__reg_reap(struct sio_fabric *f)
{
	struct sio_registry *r = f->reg;
	int n = 0;

	r->last_reap_ns = sio__now_ns();
	for (int p = 0; p < SIO_MAX_PROCS; p++) {
		if (!r->procs[p].used || f->ops->proc_alive(f, &r->procs[p]))
			continue;
		sio__reg_proc_release(f, p, true);
		n++;
	}
	return n;
}
