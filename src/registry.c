/* SPDX-License-Identifier: MIT */
/*
 * Registry table operations. Every function here runs with the registry
 * lock held. Releasing is layered: a process owns borrows, process
 * mappings, segments and devices; a borrow owns device mappings; mappings
 * hold window references. Dead processes are found lazily by whoever takes
 * the lock next, so no daemon has to be alive.
 */
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include "internal.h"

uint64_t reg_starttime(int pid)
{
	char path[64], buf[1024], *p;
	unsigned long long st = 0;
	FILE *fp;

	snprintf(path, sizeof(path), "/proc/%d/stat", pid);
	fp = fopen(path, "r");
	if (!fp)
		return 0;
	if (fgets(buf, sizeof(buf), fp) && (p = strrchr(buf, ')'))) {
		/* fields after the command: state is 3, starttime is 22 */
		int field = 2;
		for (p++; *p && field < 21; p++)
			if (*p == ' ')
				field++;
		sscanf(p, "%llu", &st);
	}
	fclose(fp);
	return st;
}

static bool proc_alive(const struct reg_proc *p)
{
	if (kill(p->pid, 0) && errno == ESRCH)
		return false;
	/* a zombie or a new process with a reused pid does not count */
	return reg_starttime(p->pid) == p->starttime;
}

int reg_window_get(struct sio_fabric *f, int node, int adapter, int seg, uint64_t *bus)
{
	struct sio_registry *r = f->reg;
	struct reg_window *w = r->windows[node][adapter];
	int free_w = -1;

	if (r->segs[seg].size > r->topo.window_size)
		return sio__err(E2BIG, "segment of %llu bytes is larger than a window (%llu bytes)",
				(unsigned long long)r->segs[seg].size,
				(unsigned long long)r->topo.window_size);
	for (int i = 0; i < r->topo.windows; i++) {
		if (w[i].refs && w[i].seg == seg && w[i].seg_gen == r->segs[seg].gen) {
			w[i].refs++;
			*bus = SIO_BUS_WINDOW_BASE + ((uint64_t)adapter << 42) + i * r->topo.window_size;
			return i;
		}
		if (!w[i].refs && free_w < 0)
			free_w = i;
	}
	if (free_w < 0)
		return sio__err(ENOSPC, "no free window on node %d adapter %d: all %d windows per adapter are in use",
				node, adapter, r->topo.windows);
	w[free_w] = (struct reg_window){ .refs = 1, .seg = seg, .seg_gen = r->segs[seg].gen };
	r->nodes[node].windows_used[adapter]++;
	*bus = SIO_BUS_WINDOW_BASE + ((uint64_t)adapter << 42) + free_w * r->topo.window_size;
	return free_w;
}

void reg_window_put(struct sio_fabric *f, int node, int adapter, int window)
{
	struct reg_window *w;

	if (window < 0)
		return;
	w = &f->reg->windows[node][adapter][window];
	if (w->refs > 0 && --w->refs == 0)
		f->reg->nodes[node].windows_used[adapter]--;
}

void reg_pmap_release(struct sio_fabric *f, int i)
{
	struct reg_pmap *pm = &f->reg->pmaps[i];

	reg_window_put(f, pm->node, pm->adapter, pm->window);
	memset(pm, 0, sizeof(*pm));
}

void reg_dmamap_release(struct sio_fabric *f, int m)
{
	struct reg_dmamap *d = &f->reg->dmamaps[m];

	if (!d->used)
		return;
	reg_window_put(f, d->win_node, d->win_adapter, d->window);
	memset(d, 0, sizeof(*d));
	reg_bump(f->reg);
}

/* Drop grants matching @dev (-1 any), @bar (-1 any) and @pid (-1 any). */
void reg_grants_drop(struct sio_fabric *f, int dev, int bar, int pid)
{
	for (int i = 0; i < SIO_MAX_GRANTS; i++) {
		struct reg_grant *g = &f->reg->grants[i];
		if (g->used && (dev < 0 || g->dev == dev) && (bar < 0 || g->bar == bar) &&
		    (pid < 0 || g->pid == pid))
			memset(g, 0, sizeof(*g));
	}
}

void reg_borrow_release(struct sio_fabric *f, int b)
{
	struct sio_registry *r = f->reg;
	struct reg_borrow *br = &r->borrows[b];

	if (!br->used)
		return;
	for (int bar = 0; bar < SIO_MAX_BARS; bar++)	/* its restrictions end with it */
		if (r->devs[br->dev].restricted[bar] == b + 1) {
			r->devs[br->dev].restricted[bar] = 0;
			reg_grants_drop(f, br->dev, bar, -1);
		}
	for (int m = 0; m < SIO_MAX_DMAMAPS; m++)
		if (r->dmamaps[m].used && r->dmamaps[m].borrow == b)
			reg_dmamap_release(f, m);
	if (r->devs[br->dev].used) {
		r->devs[br->dev].nborrows--;
		if (r->devs[br->dev].excl == b)
			r->devs[br->dev].excl = -1;
	}
	memset(br, 0, sizeof(*br));
}

static bool want_seg_users(struct sio_fabric *f, int p, const struct sio_event *ev)
{
	struct sio_registry *r = f->reg;

	for (int i = 0; i < SIO_MAX_PMAPS; i++)
		if (r->pmaps[i].used && r->pmaps[i].proc == p &&
		    r->segs[r->pmaps[i].seg].id == ev->segment && r->segs[r->pmaps[i].seg].node == ev->node)
			return true;
	for (int m = 0; m < SIO_MAX_DMAMAPS; m++) {
		const struct reg_dmamap *d = &r->dmamaps[m];
		if (d->used && d->seg >= 0 && r->borrows[d->borrow].proc == p &&
		    r->segs[d->seg].id == ev->segment && r->segs[d->seg].node == ev->node)
			return true;
	}
	return false;
}

void reg_seg_release(struct sio_fabric *f, int s, bool notify)
{
	struct sio_registry *r = f->reg;
	struct reg_seg *sg = &r->segs[s];
	char path[PATH_MAX + 64];

	if (!sg->used)
		return;
	if (notify) {
		struct sio_event ev = { .type = SIO_EV_SEGMENT_LOST, .node = sg->node, .adapter = -1,
					.segment = sg->id, .device = -1, .time_ns = sio__now_ns() };
		sio__event_broadcast(f, &ev, want_seg_users);
	}
	for (int i = 0; i < SIO_MAX_PMAPS; i++)
		if (r->pmaps[i].used && r->pmaps[i].seg == s)
			reg_pmap_release(f, i);
	for (int m = 0; m < SIO_MAX_DMAMAPS; m++)
		if (r->dmamaps[m].used && r->dmamaps[m].seg == s)
			reg_dmamap_release(f, m);
	for (int g = 0; g < SIO_MAX_GROUPS; g++)
		for (int i = 0; r->groups[g].used && i < r->groups[g].nsubs; i++)
			if (r->groups[g].sub_seg[i] == s) {
				r->groups[g].sub_seg[i] = r->groups[g].sub_seg[--r->groups[g].nsubs];
				r->groups[g].sub_gen[i] = r->groups[g].sub_gen[r->groups[g].nsubs];
				i--;
			}
	sio__segment_path(f, s, path, sizeof(path));
	unlink(path);
	sg->used = 0;
	sg->gen = r->next_gen++;	/* stale handles now fail */
	reg_bump(r);
}

static bool want_dev_users(struct sio_fabric *f, int p, const struct sio_event *ev)
{
	for (int b = 0; b < SIO_MAX_BORROWS; b++)
		if (f->reg->borrows[b].used && f->reg->borrows[b].proc == p &&
		    f->reg->devs[f->reg->borrows[b].dev].id == (uint32_t)ev->device)
			return true;
	return false;
}

void reg_dev_release(struct sio_fabric *f, int d)
{
	struct sio_registry *r = f->reg;
	struct reg_dev *dv = &r->devs[d];
	struct sio_event ev = { .type = SIO_EV_DEVICE_GONE, .node = dv->lender, .adapter = -1,
				.device = (int32_t)dv->id, .time_ns = sio__now_ns() };

	if (!dv->used)
		return;
	sio__event_broadcast(f, &ev, want_dev_users);
	for (int b = 0; b < SIO_MAX_BORROWS; b++)
		if (r->borrows[b].used && r->borrows[b].dev == d)
			reg_borrow_release(f, b);
	for (int i = 0; i < dv->nbars; i++)
		if (dv->bar_seg[i] >= 0)
			reg_seg_release(f, dv->bar_seg[i], false);
	reg_grants_drop(f, d, -1, -1);
	dv->used = 0;
	dv->gen = r->next_gen++;
	reg_bump(r);
}

/* Tell the other borrowers of what @p borrowed that it is gone. */
static void notify_gone(struct sio_fabric *f, int p, bool died)
{
	struct sio_registry *r = f->reg;

	for (int b = 0; b < SIO_MAX_BORROWS; b++) {
		if (!r->borrows[b].used || r->borrows[b].proc != p)
			continue;
		struct sio_event ev = { .type = SIO_EV_PROCESS_GONE, .node = r->procs[p].node,
					.adapter = died, .pid = r->procs[p].pid,
					.device = (int32_t)r->devs[r->borrows[b].dev].id,
					.time_ns = sio__now_ns() };
		for (int o = 0; o < SIO_MAX_BORROWS; o++)
			if (r->borrows[o].used && r->borrows[o].dev == r->borrows[b].dev &&
			    r->borrows[o].proc != p)
				sio__event_send(f, r->borrows[o].proc, &ev);
	}
}

void reg_proc_release(struct sio_fabric *f, int p, bool died)
{
	struct sio_registry *r = f->reg;
	char path[PATH_MAX + 32];

	if (!r->procs[p].used)
		return;
	notify_gone(f, p, died);
	bool last = true;	/* grants are per process, not per handle */
	for (int o = 0; o < SIO_MAX_PROCS; o++)
		last &= o == p || !r->procs[o].used || r->procs[o].pid != r->procs[p].pid;
	if (last)
		reg_grants_drop(f, -1, -1, r->procs[p].pid);
	for (int b = 0; b < SIO_MAX_BORROWS; b++)
		if (r->borrows[b].used && r->borrows[b].proc == p)
			reg_borrow_release(f, b);
	for (int i = 0; i < SIO_MAX_PMAPS; i++)
		if (r->pmaps[i].used && r->pmaps[i].proc == p)
			reg_pmap_release(f, i);
	for (int d = 0; d < SIO_MAX_DEVS; d++)
		if (r->devs[d].used && r->devs[d].owner == p)
			reg_dev_release(f, d);
	for (int s = 0; s < SIO_MAX_SEGS; s++)
		if (r->segs[s].used && r->segs[s].owner == p)
			reg_seg_release(f, s, true);
	for (int g = 0; g < SIO_MAX_GROUPS; g++)
		if (r->groups[g].used && r->groups[g].owner == p)
			memset(&r->groups[g], 0, sizeof(r->groups[g]));
	snprintf(path, sizeof(path), "%s/ev.%d.%d", f->dir, p, r->procs[p].pid);
	if (died)
		unlink(path);
	memset(&r->procs[p], 0, sizeof(r->procs[p]));
	reg_bump(r);
}

int reg_reap(struct sio_fabric *f)
{
	struct sio_registry *r = f->reg;
	int n = 0;

	r->last_reap_ns = sio__now_ns();
	for (int p = 0; p < SIO_MAX_PROCS; p++) {
		if (!r->procs[p].used || r->procs[p].pid == getpid() || proc_alive(&r->procs[p]))
			continue;
		reg_proc_release(f, p, true);
		n++;
	}
	return n;
}
