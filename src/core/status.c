/* SPDX-License-Identifier: MIT */
/* The whole fabric at one moment, for `smartio status` and monitors. */
#include <stdalign.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "internal.h"

/* Bytes for @n entries of @size, rounded so that what follows is aligned. */
static size_t span(size_t n, size_t size)
{
	size_t a = alignof(max_align_t);

	return (n * size + a - 1) / a * a;
}

/* Registry lock held: how many of each there are. */
static void count(struct sio_registry *r, int *segs, int *devs, int *borrows)
{
	*segs = *devs = *borrows = 0;
	for (int s = 0; s < SIO_MAX_SEGS; s++)
		*segs += r->segs[s].used != 0;
	for (int d = 0; d < SIO_MAX_DEVS; d++)
		*devs += r->devs[d].used != 0;
	for (int b = 0; b < SIO_MAX_BORROWS; b++)
		*borrows += r->borrows[b].used != 0;
}

/* Registry lock held: fill @st, whose arrays have room for what count() found. */
static void fill(struct sio_fabric *f, struct sio_fabric_status *st)
{
	struct sio_registry *r = f->reg;
	const struct reg_dev *dv;
	const struct reg_proc *pr;

	snprintf(st->name, sizeof(st->name), "%s", f->name);
	snprintf(st->backend, sizeof(st->backend), "%s", f->ops->name);
	st->topo = f->topo;
	for (int p = 0; p < SIO_MAX_PROCS; p++)
		st->procs += r->procs[p].used != 0;
	for (int n = 0; n < st->nnodes; n++)
		sio__node_info(f, n, &st->nodes[n]);
	for (int s = 0, i = 0; s < SIO_MAX_SEGS; s++) {
		struct sio_segment_status *o = &st->segments[i];

		if (!r->segs[s].used)
			continue;
		sio__segment_info(r, s, &o->info);
		o->owner_pid = reg_proc_pid(r, r->segs[s].owner);
		sio__segment_reach(f, s, NULL, &o->info);
		i++;
	}
	for (int d = 0, i = 0; d < SIO_MAX_DEVS; d++)
		if (r->devs[d].used) {
			sio__device_info(r, d, &st->devices[i]);
			if (f->ops->dev_relay)
				f->ops->dev_relay(f, d, &st->devices[i]);
			i++;
		}
	for (int b = 0; b < SIO_MAX_BORROWS; b++) {
		const struct reg_borrow *br = &r->borrows[b];

		/* a borrow naming no device or process is corrupt: not shown */
		if (!br->used || !(dv = reg_dev_at(r, br->dev)) || !(pr = reg_proc_at(r, br->proc)))
			continue;
		struct sio_borrow_status *o = &st->borrows[st->nborrows++];
		char why[sizeof(o->doorbells)], text[sizeof(o->doorbells)];
		enum sio_bar_path path = SIO_BAR_PATH_MAPPED;

		why[0] = 0;
		if (f->ops->borrow_doorbells)
			path = f->ops->borrow_doorbells(f, b, why, sizeof(why));
		*o = (struct sio_borrow_status){ .device = dv->id, .pid = pr->pid, .node = pr->node,
						 .exclusive = br->excl != 0, .path = path };
		/* words only where the stores are not plain ones, as smartio status shows them */
		if (path != SIO_BAR_PATH_MAPPED)
			snprintf(o->doorbells, sizeof(o->doorbells), "%s",
				 sio__bar_path_text(path, why, text, sizeof(text)));
	}
}

int sio_fabric_status_get(struct sio_fabric *f, struct sio_fabric_status **out)
{
	struct sio_fabric_status *st;
	int ret, ns, nd, nb;
	size_t len;
	char *p;

	if (!f || !out)
		return sio__err(EINVAL, "fabric handle or out pointer is NULL");
	if ((ret = sio__lock_noreap(f)))
		return ret;
	sio__reg_reap(f);
	count(f->reg, &ns, &nd, &nb);
	len = span(1, sizeof(*st)) + span(f->topo.nodes, sizeof(*st->nodes)) +
	      span(ns, sizeof(*st->segments)) + span(nd, sizeof(*st->devices)) +
	      span(nb, sizeof(*st->borrows));
	if (!(st = calloc(1, len))) {
		sio__unlock(f);
		return sio__err(ENOMEM, "out of memory for the status of fabric '%s'", f->name);
	}
	/* the arrays follow the struct in the same allocation */
	p = (char *)st + span(1, sizeof(*st));
	st->nodes = (struct sio_node_info *)p;
	p += span(f->topo.nodes, sizeof(*st->nodes));
	st->segments = (struct sio_segment_status *)p;
	p += span(ns, sizeof(*st->segments));
	st->devices = (struct sio_device_info *)p;
	p += span(nd, sizeof(*st->devices));
	st->borrows = (struct sio_borrow_status *)p;
	st->nnodes = f->topo.nodes;
	st->nsegments = ns;
	st->ndevices = nd;
	fill(f, st);
	sio__unlock(f);
	*out = st;
	return 0;
}

void sio_fabric_status_close(struct sio_fabric_status *st)
{
	free(st);
}
