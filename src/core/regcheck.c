/* SPDX-License-Identifier: MIT */
/*
 * Validation of the registry: shared memory that every process of the
 * fabric can write, so input like any other. A process joining checks the
 * header and every table; a corrupt registry is refused with a message
 * naming the fabric and the first thing wrong, before anything acts on it.
 */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include "internal.h"

/*
 * A registry behind a link that went down reads all ones (PCIe completes
 * such reads so, and a revoked NTB window reads so): that is no corrupt
 * registry to destroy, but one out of reach for now.
 */
#define REG_ONES	0xffffffffu

int sio__reg_reach_check(struct sio_fabric *f)
{
	if (!f->ops->state_across_links || !f->reg ||
	    __atomic_load_n(&f->reg->magic, __ATOMIC_ACQUIRE) != REG_ONES)
		return 0;
	return sio__err(ENOLINK, "fabric '%s': its registry reads all ones, as memory behind a link that is down does: the link to the node holding it went down (try again once it is back)",
			f->name);
}

int sio__reg_corrupt(struct sio_fabric *f, const char *fmt, ...)
{
	char what[200];
	va_list ap;
	int ret = sio__reg_reach_check(f);

	if (ret)
		return ret;
	va_start(ap, fmt);
	vsnprintf(what, sizeof(what), fmt, ap);
	va_end(ap);
	return sio__err(EUCLEAN, "fabric '%s': its registry is corrupt: %s (remove it with 'smartio destroy %s')",
			f->name, what, f->name);
}

int sio__reg_check_header(const struct sio_registry *r, const char *name)
{
	if (r->magic != SIO_REG_MAGIC)
		return sio__err(EUCLEAN, "fabric '%s': its registry has a bad magic number 0x%08x (corrupt, or not a registry; remove it with 'smartio destroy %s')",
				name, r->magic, name);
	if (r->version != SIO_REG_VERSION)
		return sio__err(EPROTO, "fabric '%s' has a registry of version %u; this library reads version %d",
				name, r->version, SIO_REG_VERSION);
	if (r->size != sizeof(*r))
		return sio__err(EUCLEAN, "fabric '%s': its registry says it is %llu bytes, not %zu (corrupt; remove it with 'smartio destroy %s')",
				name, (unsigned long long)r->size, sizeof(*r), name);
	return 0;
}

/* A topology as config_check() makes them; @why says what is wrong. */
int sio__reg_topo_check(const struct sio_topology *t, const char **why)
{
	*why = NULL;
	if ((unsigned)t->kind > SIO_TOPO_CASCADE)
		*why = "an unknown kind";
	else if (t->nodes < 1 || t->nodes > SIO_MAX_NODES)
		*why = "a node count out of range";
	else if (t->kind == SIO_TOPO_B2B && t->nodes > 2)
		*why = "more than 2 nodes back to back";
	else if (t->adapters < 1 || t->adapters > SIO_MAX_ADAPTERS)
		*why = "an adapter count out of range";
	else if (t->windows < 1 || t->windows > SIO_MAX_WINDOWS)
		*why = "a window count out of range";
	else if (t->window_size < 4096 || t->window_size > SIO_SEG_MAX_SIZE ||
		 (t->window_size & (t->window_size - 1)))
		*why = "a window size that is not a power of two from 4 KiB to 4 GiB";
	else if (t->mcast_groups < 0 || t->mcast_groups > SIO_MAX_GROUPS)
		*why = "a multicast group count out of range";
	else if (t->nodes_per_switch < 1 || t->nodes_per_switch > SIO_MAX_NODES)
		*why = "a nodes-per-switch count out of range";
	else if (t->switches < 0 || t->switches > SIO_MAX_NODES + 1)
		*why = "a switch count out of range";
	return *why ? -EINVAL : 0;
}

static bool in(int v, int n)
{
	return v >= 0 && v < n;
}

static bool has_nul(const char *s, size_t n)
{
	return memchr(s, 0, n) != NULL;
}

#define BAD(...) return sio__reg_corrupt(f, __VA_ARGS__)

static int check_procs_segs(struct sio_fabric *f)
{
	const struct sio_registry *r = f->reg;
	const struct sio_topology *t = &f->topo;

	for (int p = 0; p < SIO_MAX_PROCS; p++) {
		const struct reg_proc *pr = &r->procs[p];
		if ((uint32_t)pr->used > 1)
			BAD("process slot %d has used = %d", p, pr->used);
		if (pr->used && (pr->pid <= 0 || !in(pr->node, t->nodes)))
			BAD("process slot %d names pid %d on node %d", p, pr->pid, pr->node);
	}
	for (int s = 0; s < SIO_MAX_SEGS; s++) {
		const struct reg_seg *sg = &r->segs[s];
		if ((uint32_t)sg->used > 1)
			BAD("segment slot %d has used = %d", s, sg->used);
		if (!sg->used)
			continue;
		if (!in(sg->node, t->nodes))
			BAD("segment slot %d is on node %d (0..%d)", s, sg->node, t->nodes - 1);
		if (!in(sg->owner, SIO_MAX_PROCS) && !(sg->keep == 1 && sg->owner == -1))
			BAD("segment slot %d names owner process slot %d (0..%d)", s, sg->owner, SIO_MAX_PROCS - 1);
		if (!sg->size || sg->size > SIO_SEG_MAX_SIZE)
			BAD("segment slot %d is %llu bytes", s, (unsigned long long)sg->size);
		if ((unsigned)sg->kind > SIO_SEG_GPU)
			BAD("segment slot %d is of unknown kind %d", s, sg->kind);
		if (sg->device != -1 && !in(sg->device, SIO_MAX_DEVS))
			BAD("segment slot %d names device slot %d", s, sg->device);
		if (sg->bar < -1 || sg->bar >= SIO_MAX_BARS)
			BAD("segment slot %d names BAR %d", s, sg->bar);
		if (!has_nul(sg->name, sizeof(sg->name)))
			BAD("segment slot %d has an unterminated name", s);
	}
	return 0;
}

static int check_maps(struct sio_fabric *f)
{
	const struct sio_registry *r = f->reg;
	const struct sio_topology *t = &f->topo;

	for (int n = 0; n < t->nodes; n++)
		for (int a = 0; a < t->adapters; a++) {
			if (r->nodes[n].windows_used[a] < 0 || r->nodes[n].windows_used[a] > t->windows)
				BAD("node %d adapter %d has %d windows in use (of %d)", n, a,
				    r->nodes[n].windows_used[a], t->windows);
			for (int w = 0; w < t->windows; w++) {
				const struct reg_window *wi = &r->windows[n][a][w];
				if (wi->refs < 0 || (wi->refs && !in(wi->seg, SIO_MAX_SEGS)))
					BAD("window %d of node %d adapter %d has %d references to segment slot %d",
					    w, n, a, wi->refs, wi->seg);
			}
		}
	for (int i = 0; i < SIO_MAX_PMAPS; i++) {
		const struct reg_pmap *pm = &r->pmaps[i];
		if ((uint32_t)pm->used > 1)
			BAD("process mapping %d has used = %d", i, pm->used);
		if (pm->used && (!in(pm->proc, SIO_MAX_PROCS) || !in(pm->seg, SIO_MAX_SEGS) ||
				 !in(pm->node, t->nodes) || !in(pm->adapter, t->adapters) ||
				 (pm->window != -1 && !in(pm->window, t->windows))))
			BAD("process mapping %d names process %d, segment %d, node %d adapter %d window %d",
			    i, pm->proc, pm->seg, pm->node, pm->adapter, pm->window);
	}
	for (int m = 0; m < SIO_MAX_DMAMAPS; m++) {
		const struct reg_dmamap *d = &r->dmamaps[m];
		if ((uint32_t)d->used > 1)
			BAD("device mapping %d has used = %d", m, d->used);
		if (!d->used)
			continue;
		if (!in(d->dev, SIO_MAX_DEVS) || (d->borrow != -1 && !in(d->borrow, SIO_MAX_BORROWS)) ||
		    (d->borrow == -1 && d->seg == -1))
			BAD("device mapping %d names device slot %d, borrow %d", m, d->dev, d->borrow);
		if ((d->seg == -1) == (d->group == -1) || (d->seg != -1 && !in(d->seg, SIO_MAX_SEGS)) ||
		    (d->group != -1 && !in(d->group, t->mcast_groups)))
			BAD("device mapping %d names segment slot %d, multicast group %d", m, d->seg, d->group);
		if (d->window != -1 && (!in(d->window, t->windows) || !in(d->win_node, t->nodes) ||
					!in(d->win_adapter, t->adapters)))
			BAD("device mapping %d names window %d of node %d adapter %d", m, d->window,
			    d->win_node, d->win_adapter);
		for (int i = 0; i < 2; i++)
			if (d->link_node[i] != -1 && (!in(d->link_node[i], t->nodes) ||
						      !in(d->link_adapter[i], t->adapters)))
				BAD("device mapping %d crosses node %d adapter %d", m, d->link_node[i],
				    d->link_adapter[i]);
		if (!d->size || d->size > SIO_SEG_MAX_SIZE || d->bus + d->size < d->bus)
			BAD("device mapping %d is %llu bytes at 0x%llx", m, (unsigned long long)d->size,
			    (unsigned long long)d->bus);
	}
	return 0;
}

static int check_devs(struct sio_fabric *f)
{
	const struct sio_registry *r = f->reg;
	const struct sio_topology *t = &f->topo;

	for (int d = 0; d < SIO_MAX_DEVS; d++) {
		const struct reg_dev *v = &r->devs[d];
		if ((uint32_t)v->used > 1)
			BAD("device slot %d has used = %d", d, v->used);
		if (!v->used)
			continue;
		if (!v->id || v->id > INT32_MAX)
			BAD("device slot %d has id %u", d, v->id);
		for (int o = 0; o < d; o++)
			if (r->devs[o].used && r->devs[o].id == v->id)
				BAD("device slots %d and %d both have id %u", o, d, v->id);
		if (!in(v->lender, t->nodes) || !in(v->owner, SIO_MAX_PROCS))
			BAD("device %u names lender node %d, owner process slot %d", v->id, v->lender, v->owner);
		if ((unsigned)v->backend > SIO_BACKEND_UIO || !in(v->nbars, SIO_MAX_BARS + 1))
			BAD("device %u has backend %d, %d BARs", v->id, v->backend, v->nbars);
		if ((v->excl != -1 && !in(v->excl, SIO_MAX_BORROWS)) || !in(v->nborrows, SIO_MAX_BORROWS + 1))
			BAD("device %u names exclusive borrow %d, %d borrowers", v->id, v->excl, v->nborrows);
		for (int b = 0; b < SIO_MAX_BARS; b++)
			if ((v->bar_seg[b] != -1 && !in(v->bar_seg[b], SIO_MAX_SEGS)) ||
			    v->bar_size[b] > SIO_SEG_MAX_SIZE || !in(v->restricted[b], SIO_MAX_BORROWS + 1) ||
			    v->public_len[b] > v->bar_size[b])
				BAD("BAR%d of device %u names segment slot %d, %llu bytes, restricting borrow %d",
				    b, v->id, v->bar_seg[b], (unsigned long long)v->bar_size[b],
				    v->restricted[b] - 1);
		if (!has_nul(v->name, sizeof(v->name)) || !has_nul(v->bdf, sizeof(v->bdf)) ||
		    !has_nul(v->svc, sizeof(v->svc)))
			BAD("device %u has an unterminated name, address or socket path", v->id);
	}
	if (!r->next_dev_id || r->next_dev_id > INT32_MAX)
		BAD("the next device id is %u", r->next_dev_id);
	for (int b = 0; b < SIO_MAX_BORROWS; b++) {
		const struct reg_borrow *br = &r->borrows[b];
		if ((uint32_t)br->used > 1)
			BAD("borrow %d has used = %d", b, br->used);
		if (br->used && (!in(br->dev, SIO_MAX_DEVS) || !in(br->proc, SIO_MAX_PROCS)))
			BAD("borrow %d names device slot %d, process slot %d", b, br->dev, br->proc);
	}
	for (int i = 0; i < SIO_MAX_GRANTS; i++) {
		const struct reg_grant *g = &r->grants[i];
		if ((uint32_t)g->used > 1)
			BAD("BAR grant %d has used = %d", i, g->used);
		if (g->used && (!in(g->dev, SIO_MAX_DEVS) || !in(g->bar, SIO_MAX_BARS) || g->pid <= 0 ||
				!in(g->node, t->nodes) ||
				g->off > SIO_SEG_MAX_SIZE || g->len > SIO_SEG_MAX_SIZE - g->off))
			BAD("BAR grant %d names device slot %d BAR%d, pid %d of node %d", i, g->dev, g->bar,
			    g->pid, g->node);
	}
	for (int g = 0; g < SIO_MAX_GROUPS; g++) {
		const struct reg_group *gr = &r->groups[g];
		if ((uint32_t)gr->used > 1 || (gr->used && g >= t->mcast_groups))
			BAD("multicast group slot %d has used = %d (the fabric has %d groups)", g, gr->used,
			    t->mcast_groups);
		if (!gr->used)
			continue;
		if (!in(gr->owner, SIO_MAX_PROCS) || !gr->size || gr->size > SIO_SEG_MAX_SIZE ||
		    !in(gr->nsubs, SIO_MAX_SUBS + 1))
			BAD("multicast group %d names owner process slot %d, %llu bytes, %d subscribers", g,
			    gr->owner, (unsigned long long)gr->size, gr->nsubs);
		for (int i = 0; i < gr->nsubs; i++)
			if (!in(gr->sub_seg[i], SIO_MAX_SEGS))
				BAD("multicast group %d names subscriber segment slot %d", g, gr->sub_seg[i]);
	}
	return 0;
}

/*
 * Everything a process of the fabric reads and acts on. Registry lock held;
 * f->topo already checked and copied by the caller.
 */
int sio__reg_validate(struct sio_fabric *f)
{
	const struct sio_registry *r = f->reg;
	int ret;

	if (r->flags & ~REG_F_GROUP)
		BAD("unknown flags 0x%x", r->flags);
	if (!has_nul(r->hugedir, sizeof(r->hugedir)) || (r->hugedir[0] && r->hugedir[0] != '/'))
		BAD("its huge page directory is not an absolute path");
	if ((ret = check_procs_segs(f)) || (ret = check_maps(f)) || (ret = check_devs(f)))
		return ret;
	return 0;
}
