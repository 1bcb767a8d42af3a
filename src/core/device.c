/* SPDX-License-Identifier: MIT */
/* Devices: registration by the lender, borrowing, BARs, mapping for DMA. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "internal.h"

void sio__device_info(struct sio_registry *r, int d, struct sio_device_info *o)
{
	const struct reg_dev *v = &r->devs[d];

	memset(o, 0, sizeof(*o));
	o->id = v->id;
	o->lender = v->lender;
	o->class_code = v->class_code;
	o->vendor = v->vendor;
	o->device = v->device;
	o->backend = v->backend;
	o->nbars = v->nbars < 0 ? 0 : v->nbars > SIO_MAX_BARS ? SIO_MAX_BARS : v->nbars;
	for (int i = 0; i < o->nbars; i++)
		o->bar_size[i] = v->bar_size[i];
	o->chassis = v->chassis;
	o->exclusive = v->excl >= 0;
	o->borrowers = v->nborrows;
	o->dma_faults = atomic_load(&v->dma_faults);
	/* only a device model's BARs are memory: the sim backend's, always built */
	o->bar_mmio = v->backend != SIO_BACKEND_SIM;
	memcpy(o->name, v->name, sizeof(o->name));
	memcpy(o->bdf, v->bdf, sizeof(o->bdf));
	o->name[sizeof(o->name) - 1] = o->bdf[sizeof(o->bdf) - 1] = 0;
}

int sio_device_list(struct sio_fabric *f, uint32_t class_code, uint32_t class_mask,
		    struct sio_device_info *out, int max)
{
	int n;

	if (!f || max < 0 || (max && !out))
		return sio__err(EINVAL, "bad arguments to sio_device_list");
	if ((n = sio__lock(f)))
		return n;
	for (int d = 0; d < SIO_MAX_DEVS; d++) {
		const struct reg_dev *v = &f->reg->devs[d];
		if (!v->used || ((v->class_code ^ class_code) & class_mask))
			continue;
		if (n < max)
			sio__device_info(f->reg, d, &out[n]);
		n++;
	}
	sio__unlock(f);
	return n;
}

static int find_dev(struct sio_registry *r, uint32_t id)
{
	for (int d = 0; d < SIO_MAX_DEVS; d++)
		if (r->devs[d].used && r->devs[d].id == id)
			return d;
	return -1;
}

int sio__dev_check(struct sio_device *dev)
{
	struct sio_registry *r = dev->f->reg;
	const struct reg_borrow *b = &r->borrows[dev->borrow];

	if (!r->devs[dev->slot].used || r->devs[dev->slot].id != dev->id)
		return sio__err(ENODEV, "device %u is gone", dev->id);
	if (!b->used || b->proc != dev->f->proc || b->dev != dev->slot)
		return sio__err(ENODEV, "the borrow of device %u was revoked", dev->id);
	return 0;
}

int sio_device_borrow(struct sio_fabric *f, uint32_t id, unsigned int flags, struct sio_device **out)
{
	const struct sio_device_ops *ops;
	struct sio_registry *r;
	struct sio_device *h;
	const struct reg_borrow *eb;
	int d, b, ret;

	if (!f || !out)
		return sio__err(EINVAL, "fabric handle or out pointer is NULL");
	if (flags & ~SIO_BORROW_EXCLUSIVE)
		return sio__err(EINVAL, "unknown borrow flags 0x%x", flags);
	h = calloc(1, sizeof(*h));
	if (!h)
		return sio__err(ENOMEM, "out of memory");
	r = f->reg;
	if ((ret = sio__lock(f))) {
		free(h);
		return ret;
	}
	d = find_dev(r, id);
	if (d < 0) {
		ret = sio__err(ENOENT, "no device %u in fabric '%s'", id, f->name);
		goto out;
	}
	if (!(ops = sio__device_ops(r->devs[d].backend))) {
		ret = sio__err(ENOTSUP, "device %u is served by the %s backend (%d), which this libsmartio was built without",
			       id, sio__device_backend_name(r->devs[d].backend), r->devs[d].backend);
		goto out;
	}
	if (f->ops->dev_ops && f->ops->dev_ops(f, d))	/* lent by another kernel */
		ops = f->ops->dev_ops(f, d);
	if (r->devs[d].excl >= 0) {
		eb = reg_borrow_at(r, r->devs[d].excl);
		ret = eb ? sio__err(EBUSY, "device %u is borrowed exclusively by pid %d", id,
				    reg_proc_pid(r, eb->proc))
			 : sio__reg_corrupt(f, "device %u names exclusive borrow %d", id, r->devs[d].excl);
		goto out;
	}
	if ((flags & SIO_BORROW_EXCLUSIVE) && r->devs[d].nborrows) {
		ret = sio__err(EBUSY, "device %u has %d borrowers; an exclusive borrow needs none",
			       id, r->devs[d].nborrows);
		goto out;
	}
	for (b = 0; b < SIO_MAX_BORROWS && r->borrows[b].used; b++)
		;
	if (b == SIO_MAX_BORROWS) {
		ret = sio__err(ENOSPC, "the fabric has all %d borrows in use", SIO_MAX_BORROWS);
		goto out;
	}
	r->borrows[b] = (struct reg_borrow){ .used = 1, .dev = d, .proc = f->proc,
					     .excl = !!(flags & SIO_BORROW_EXCLUSIVE) };
	r->devs[d].nborrows++;
	if (flags & SIO_BORROW_EXCLUSIVE)
		r->devs[d].excl = b;
	*h = (struct sio_device){ .f = f, .slot = d, .id = id, .borrow = b, .ops = ops,
				  .adapter = -1, .dma_mask = UINT64_MAX };
	*out = h;
out:
	sio__unlock(f);
	if (ret)
		free(h);
	return ret;
}

int sio_device_downgrade(struct sio_device *dev)
{
	int ret;

	if (!dev)
		return sio__err(EINVAL, "device handle is NULL");
	if ((ret = sio__lock(dev->f)))
		return ret;
	ret = sio__dev_check(dev);
	if (!ret && dev->f->reg->devs[dev->slot].excl != dev->borrow)
		ret = sio__err(EINVAL, "device %u is not borrowed exclusively by this handle", dev->id);
	if (!ret) {
		dev->f->reg->devs[dev->slot].excl = -1;
		dev->f->reg->borrows[dev->borrow].excl = 0;
	}
	sio__unlock(dev->f);
	return ret;
}

/* Every borrower but the poster. */
static bool want_others(struct sio_fabric *f, int p, const struct sio_event *ev)
{
	return p != f->proc && sio__want_dev_users(f, p, ev);
}

int sio_device_notice(struct sio_device *dev, uint32_t info)
{
	struct sio_event ev;
	int ret;

	if (!dev)
		return sio__err(EINVAL, "device handle is NULL");
	if ((ret = sio__lock(dev->f)))
		return ret;
	ret = sio__dev_check(dev);
	if (!ret) {
		ev = (struct sio_event){ .type = SIO_EV_DEVICE_NOTICE, .node = dev->f->node,
					 .adapter = -1, .device = (int32_t)dev->id,
					 .pid = (int32_t)getpid(), .time_ns = sio__now_ns(),
					 .info = info };
		sio__event_broadcast(dev->f, &ev, want_others);
	}
	sio__unlock(dev->f);
	return ret;
}

void sio_device_close(struct sio_device *dev)
{
	if (!dev)
		return;
	sio_device_irq_disable(dev);
	if (dev->ops->release)
		dev->ops->release(dev);
	/* the handle goes either way; the borrow goes when this process leaves */
	if (!sio__lock(dev->f)) {
		if (!sio__dev_check(dev))
			sio__reg_borrow_release(dev->f, dev->borrow);
		sio__unlock(dev->f);
	}
	free(dev);
}

int sio_device_info(struct sio_device *dev, struct sio_device_info *out)
{
	int ret;

	if (!dev || !out)
		return sio__err(EINVAL, "device handle or out pointer is NULL");
	if ((ret = sio__lock(dev->f)))
		return ret;
	ret = sio__dev_check(dev);
	if (!ret)
		sio__device_info(dev->f->reg, dev->slot, out);
	sio__unlock(dev->f);
	return ret;
}

const char *sio_bar_path_name(enum sio_bar_path path)
{
	switch (path) {
	case SIO_BAR_PATH_MAPPED: return "mapped";
	case SIO_BAR_PATH_FABRIC_SEGMENT: return "fabric segment";
	case SIO_BAR_PATH_NTB_WINDOW: return "NTB window";
	case SIO_BAR_PATH_RELAYED: return "relayed";
	case SIO_BAR_PATH_NTB_WINDOW_EMULATED: return "NTB window (emulated forwarding)";
	}
	return "unknown";
}

const char *sio__bar_path_text(enum sio_bar_path path, const char *why, char *buf, size_t len)
{
	if (!why || !*why)
		return sio_bar_path_name(path);
	snprintf(buf, len, "%s (%s)", sio_bar_path_name(path), why);
	return buf;
}

/* The path of @dev's stores to BAR @bar, and why in @why ("" for nothing). */
static enum sio_bar_path bar_path(struct sio_device *dev, int bar, char *why, size_t len)
{
	why[0] = 0;
	if (dev->ops && dev->ops->bar_path)
		return dev->ops->bar_path(dev, bar, why, len);
	return dev->ops && dev->ops->fabric_bars ? SIO_BAR_PATH_FABRIC_SEGMENT : SIO_BAR_PATH_MAPPED;
}

enum sio_bar_path sio_device_bar_path_kind(struct sio_device *dev, int bar)
{
	char why[96];

	return dev ? bar_path(dev, bar, why, sizeof(why)) : SIO_BAR_PATH_MAPPED;
}

const char *sio_device_bar_path(struct sio_device *dev, int bar)
{
	static __thread char buf[128];
	char why[96];
	enum sio_bar_path p;

	if (!dev)
		return "";
	p = bar_path(dev, bar, why, sizeof(why));
	return sio__bar_path_text(p, why, buf, sizeof(buf));
}

int sio_device_bar(struct sio_device *dev, int bar, struct sio_segment **out)
{
	struct sio_registry *r;
	int ret, s;

	if (!dev || !out)
		return sio__err(EINVAL, "device handle or out pointer is NULL");
	r = dev->f->reg;
	if ((ret = sio__lock(dev->f)))
		return ret;
	ret = sio__dev_check(dev);
	if (!ret && (bar < 0 || bar >= SIO_MAX_BARS || bar >= r->devs[dev->slot].nbars ||
		     !r->devs[dev->slot].bar_size[bar]))
		ret = sio__err(ENOENT, "device %u has no BAR %d", dev->id, bar);
	if (ret)
		goto out;
	s = r->devs[dev->slot].bar_seg[bar];
	if (s >= 0 && !reg_seg_at(r, s)) {
		ret = sio__reg_corrupt(dev->f, "BAR%d of device %u names segment slot %d", bar, dev->id, s);
		goto out;
	}
	if (s < 0) {	/* not a fabric segment: the device's backend maps it */
		struct sio_segment *h = calloc(1, sizeof(*h));
		if (!h) {
			ret = sio__err(ENOMEM, "out of memory");
			goto out;
		}
		*h = (struct sio_segment){ .f = dev->f, .slot = -1, .id = (uint32_t)bar,
					   .node = r->devs[dev->slot].lender,
					   .size = r->devs[dev->slot].bar_size[bar], .window = -1,
					   .bar_dev = dev, .bar_idx = bar, .kind = SIO_SEG_BAR };
		*out = h;
		goto out;
	}
	int node = r->segs[s].node;
	uint32_t id = r->segs[s].id;
	sio__unlock(dev->f);
	return sio_segment_connect(dev->f, node, id, out);
out:
	sio__unlock(dev->f);
	return ret;
}

int sio_device_map(struct sio_device *dev, struct sio_segment *seg, uint64_t *bus_addr)
{
	if (!dev || !seg || !bus_addr)
		return sio__err(EINVAL, "device, segment or bus_addr pointer is NULL");
	return sio__dma_map_masked(dev, seg, bus_addr);
}

int sio_device_unmap(struct sio_device *dev, struct sio_segment *seg)
{
	if (!dev || !seg)
		return sio__err(EINVAL, "device or segment is NULL");
	return dev->ops->dma_unmap(dev, seg);
}

static int bar_check(struct sio_device *dev, int bar, uint64_t off, uint64_t len)
{
	const struct reg_dev *v = &dev->f->reg->devs[dev->slot];

	if (bar < 0 || bar >= SIO_MAX_BARS || bar >= v->nbars || !v->bar_size[bar])
		return sio__err(ENOENT, "device %u has no BAR %d", dev->id, bar);
	if ((off | len) & 4095 || off > v->bar_size[bar] || len > v->bar_size[bar] - off)
		return sio__err(EINVAL, "range 0x%llx+0x%llx is not page aligned inside BAR%d (%llu bytes)",
				(unsigned long long)off, (unsigned long long)len, bar,
				(unsigned long long)v->bar_size[bar]);
	return 0;
}

int sio_device_restrict(struct sio_device *dev, int bar, uint64_t public_len)
{
	struct reg_dev *v;
	int ret;

	if (!dev)
		return sio__err(EINVAL, "device handle is NULL");
	if ((ret = sio__lock(dev->f)))
		return ret;
	v = &dev->f->reg->devs[dev->slot];
	if (!(ret = sio__dev_check(dev)) && !(ret = bar_check(dev, bar, 0, public_len))) {
		/* what is confined is the mapping of a fabric segment */
		if (v->bar_seg[bar] < 0)
			ret = sio__err(EOPNOTSUPP, "BAR%d of device %u is mapped from its %s lender, not through the fabric: it cannot be restricted",
				       bar, dev->id, dev->ops->name);
		else if (v->restricted[bar] && v->restricted[bar] != dev->borrow + 1)
			ret = sio__err(EBUSY, "BAR%d of device %u is already restricted by another borrow", bar, dev->id);
		else {
			v->restricted[bar] = dev->borrow + 1;
			v->public_len[bar] = public_len;
		}
	}
	sio__unlock(dev->f);
	return ret;
}

/* Registry lock held: @dev restricted @bar. */
static int owner_check(struct sio_device *dev, int bar)
{
	int ret = sio__dev_check(dev);

	if (!ret && (bar < 0 || bar >= SIO_MAX_BARS ||
		     dev->f->reg->devs[dev->slot].restricted[bar] != dev->borrow + 1))
		ret = sio__err(EPERM, "BAR%d of device %u was not restricted by this borrow", bar, dev->id);
	return ret;
}

/*
 * Lock held: the node of joined process @pid, for the calls that name a pid
 * alone: the one node where such a process is joined, else the caller's own
 * (one kernel: pids are unique). Refused when pid @pid is joined on two
 * nodes, as it may be once the nodes are separate kernels.
 */
static int pid_node(struct sio_fabric *f, int pid)
{
	int node = -1;

	for (int p = 0; p < SIO_MAX_PROCS; p++) {
		const struct reg_proc *pr = &f->reg->procs[p];
		if (!pr->used || pr->pid != pid || pr->node == node)
			continue;
		if (node >= 0)
			return sio__err(EINVAL, "pid %d is a process of node %d and of node %d: name the node (sio_device_grant_node())",
					pid, node, pr->node);
		node = pr->node;
	}
	return node >= 0 ? node : f->node;
}

static int grant(struct sio_device *dev, int node, int pid, int bar, uint64_t offset,
		 uint64_t length)
{
	struct sio_registry *r;
	int ret, i;

	if (!dev || pid <= 0 || !length)
		return sio__err(EINVAL, "grant needs a device, a pid and a length");
	if (node < -1 || node >= dev->f->topo.nodes)
		return sio__err(EINVAL, "no node %d (the fabric has %d)", node, dev->f->topo.nodes);
	r = dev->f->reg;
	if ((ret = sio__lock(dev->f)))
		return ret;
	if ((ret = owner_check(dev, bar)) || (ret = bar_check(dev, bar, offset, length)))
		goto out;
	if (node < 0 && (ret = node = pid_node(dev->f, pid)) < 0)
		goto out;
	ret = 0;
	for (i = 0; i < SIO_MAX_GRANTS && r->grants[i].used; i++)
		;
	if (i == SIO_MAX_GRANTS) {
		ret = sio__err(ENOSPC, "the fabric has all %d BAR grants in use", SIO_MAX_GRANTS);
		goto out;
	}
	r->grants[i] = (struct reg_grant){ .used = 1, .dev = dev->slot, .bar = bar, .pid = pid,
					   .node = node, .off = offset, .len = length };
out:
	sio__unlock(dev->f);
	return ret;
}

int sio_device_grant(struct sio_device *dev, int pid, int bar, uint64_t offset, uint64_t length)
{
	return grant(dev, -1, pid, bar, offset, length);
}

int sio_device_grant_node(struct sio_device *dev, int node, int pid, int bar, uint64_t offset,
			  uint64_t length)
{
	if (node < 0)
		return sio__err(EINVAL, "no node %d", node);
	return grant(dev, node, pid, bar, offset, length);
}

static int grant_revoke(struct sio_device *dev, int node, int pid, int bar, uint64_t offset)
{
	struct sio_registry *r;
	int ret;

	if (!dev)
		return sio__err(EINVAL, "device handle is NULL");
	r = dev->f->reg;
	if ((ret = sio__lock(dev->f)))
		return ret;
	if (!(ret = owner_check(dev, bar)) && (node >= 0 || (ret = node = pid_node(dev->f, pid)) >= 0)) {
		ret = sio__err(ENOENT, "no grant of BAR%d+0x%llx to pid %d of node %d", bar,
			       (unsigned long long)offset, pid, node);
		for (int i = 0; i < SIO_MAX_GRANTS; i++) {
			struct reg_grant *g = &r->grants[i];
			if (g->used && g->dev == dev->slot && g->bar == bar && g->pid == pid &&
			    g->node == node && g->off == offset) {
				memset(g, 0, sizeof(*g));
				ret = 0;
			}
		}
	}
	sio__unlock(dev->f);
	return ret;
}

int sio_device_revoke(struct sio_device *dev, int pid, int bar, uint64_t offset)
{
	return grant_revoke(dev, -1, pid, bar, offset);
}

int sio_device_revoke_node(struct sio_device *dev, int node, int pid, int bar, uint64_t offset)
{
	if (node < 0)
		return sio__err(EINVAL, "no node %d", node);
	return grant_revoke(dev, node, pid, bar, offset);
}

int sio__bar_access(struct sio_fabric *f, int slot, uint64_t off, uint64_t len, bool rdonly)
{
	struct sio_registry *r = f->reg;
	const struct reg_seg *s = reg_seg_at(r, slot);
	const struct reg_borrow *rb;
	const struct reg_dev *v;
	int pid = getpid();

	if (!s)
		return sio__reg_corrupt(f, "segment slot %d is out of range", slot);
	if (s->kind != SIO_SEG_BAR || s->device < 0 || s->bar < 0)
		return 0;
	if (!(v = reg_dev_at(r, s->device)) || s->bar >= SIO_MAX_BARS)
		return sio__reg_corrupt(f, "BAR segment slot %d names device slot %d BAR%d", slot, s->device, s->bar);
	if (!v->restricted[s->bar] || v->owner == f->proc)
		return 0;	/* open, or the device model itself */
	if (!(rb = reg_borrow_at(r, v->restricted[s->bar] - 1)))
		return sio__reg_corrupt(f, "BAR%d of device %u names restricting borrow %d", s->bar, v->id,
				   v->restricted[s->bar] - 1);
	if (reg_proc_pid(r, rb->proc) == pid && r->procs[rb->proc].node == f->node)
		return 0;	/* the restricting process */
	if (rdonly && off + len <= v->public_len[s->bar])
		return 0;
	for (int i = 0; i < SIO_MAX_GRANTS; i++) {
		const struct reg_grant *g = &r->grants[i];
		if (g->used && g->dev == s->device && g->bar == s->bar && g->pid == pid &&
		    g->node == f->node && off >= g->off && off + len <= g->off + g->len)
			return 0;
	}
	return sio__err(EACCES, "BAR%d of device %u is restricted: map its first %llu bytes read-only, or ranges granted to this process",
			s->bar, v->id, (unsigned long long)v->public_len[s->bar]);
}

int sio_device_use_adapter(struct sio_device *dev, int adapter)
{
	if (!dev)
		return sio__err(EINVAL, "device handle is NULL");
	if (adapter < -1 || adapter >= dev->f->topo.adapters)
		return sio__err(EINVAL, "nodes of fabric '%s' have adapters 0..%d, not %d", dev->f->name,
				dev->f->topo.adapters - 1, adapter);
	dev->adapter = adapter;
	return 0;
}

struct sio_fabric *sio_device_fabric(const struct sio_device *dev)
{
	return dev ? dev->f : NULL;
}

uint32_t sio_device_id(const struct sio_device *dev)
{
	return dev ? dev->id : 0;
}

const char *sio__device_svc(struct sio_device *dev)
{
	const char *svc = dev->f->reg->devs[dev->slot].svc;

	return memchr(svc, 0, sizeof(dev->f->reg->devs[0].svc)) ? svc : "";
}

/* What a device model or a lender describes, checked before the registry
 * is locked; @ops: its backend's. */
static int desc_check(const struct sio_device_desc *desc, enum sio_device_backend backend,
		      const struct sio_device_ops **ops)
{
	if (!(*ops = sio__device_ops(backend)))
		return sio__err(ENOTSUP, "device backend %d (%s) is not built into this libsmartio",
				backend, sio__device_backend_name(backend));
	if (desc->nbars < 0 || desc->nbars > SIO_MAX_BARS)
		return sio__err(EINVAL, "a device has 0..%d BARs, not %d", SIO_MAX_BARS, desc->nbars);
	for (int i = 0; i < desc->nbars; i++)
		if (desc->bar_size[i] > SIO_SEG_MAX_SIZE)
			return sio__err(EINVAL, "BAR %d of %llu bytes exceeds 4 GiB", i,
					(unsigned long long)desc->bar_size[i]);
	return 0;
}

/* Registry lock held: a free device slot, and a next device id to trust. */
static int dev_slot_locked(struct sio_fabric *f, int *slot)
{
	struct sio_registry *r = f->reg;
	int d;

	for (d = 0; d < SIO_MAX_DEVS && r->devs[d].used; d++)
		;
	if (d == SIO_MAX_DEVS)
		return sio__err(ENOSPC, "the fabric has all %d devices registered", SIO_MAX_DEVS);
	if (!r->next_dev_id || r->next_dev_id > INT32_MAX || find_dev(r, r->next_dev_id) >= 0)
		return sio__reg_corrupt(f, "the next device id is %u", r->next_dev_id);
	*slot = d;
	return 0;
}

/* Registry lock held: device slot @d as @desc says, lent by this process
 * (not yet in use: no BAR segment yet, and not visible). */
static void dev_init_locked(struct sio_fabric *f, int d, const struct sio_device_desc *desc,
			    enum sio_device_backend backend, const char *bdf, const char *svc)
{
	struct sio_registry *r = f->reg;
	struct reg_dev *v = &r->devs[d];
	uint64_t gen = v->gen;

	memset(v, 0, sizeof(*v));
	*v = (struct reg_dev){ .id = r->next_dev_id++, .lender = f->node, .owner = f->proc,
			       .class_code = desc->class_code, .vendor = desc->vendor,
			       .device = desc->device, .backend = backend, .nbars = desc->nbars,
			       .chassis = desc->chassis, .excl = -1, .gen = gen };
	snprintf(v->name, sizeof(v->name), "%s", desc->name ? desc->name : "");
	snprintf(v->bdf, sizeof(v->bdf), "%s", bdf ? bdf : "");
	snprintf(v->svc, sizeof(v->svc), "%s", svc ? svc : "");
	for (int i = 0; i < SIO_MAX_BARS; i++)
		v->bar_seg[i] = -1;
	for (int i = 0; i < desc->nbars; i++)
		v->bar_size[i] = desc->bar_size[i];
}

/* Registry lock held: device slot @d's BARs as segments, where its backend
 * keeps BARs in fabric memory; on failure none is left. */
static int dev_bars_locked(struct sio_fabric *f, const struct sio_device_ops *ops, int d)
{
	struct sio_registry *r = f->reg;
	struct reg_dev *v = &r->devs[d];
	int ret;

	for (int i = 0; i < v->nbars; i++) {
		if (!ops->fabric_bars || !v->bar_size[i])
			continue;
		ret = sio__seg_new_locked(f, f->node, 0, sio__page_up(v->bar_size[i]),
					  SIO_SEG_F_NOHUGE, SIO_SEG_BAR, &v->bar_seg[i]);
		if (ret) {
			for (int j = 0; j < i; j++)
				if (v->bar_seg[j] >= 0)
					sio__reg_seg_release(f, v->bar_seg[j], false);
			return ret;
		}
		r->segs[v->bar_seg[i]].device = d;
		r->segs[v->bar_seg[i]].bar = i;
		snprintf(r->segs[v->bar_seg[i]].name, SIO_NAME_MAX, "dev%u.bar%d", v->id, i);
	}
	return 0;
}

/* The registration of slot @d, with a handle on each of its BAR segments. */
static void devreg_fill(struct sio_devreg *reg, struct sio_fabric *f, int d)
{
	const struct reg_dev *v = &f->reg->devs[d];

	*reg = (struct sio_devreg){ .f = f, .slot = d, .id = v->id, .mru = -1 };
	for (int i = 0; i < v->nbars; i++) {
		const struct reg_seg *s;

		if (v->bar_seg[i] < 0)
			continue;
		s = &f->reg->segs[v->bar_seg[i]];
		reg->bars[i] = calloc(1, sizeof(struct sio_segment));
		if (reg->bars[i])
			*reg->bars[i] = (struct sio_segment){ .f = f, .slot = v->bar_seg[i], .id = s->id,
							      .node = s->node, .size = s->size, .gen = s->gen,
							      .window = -1, .bar_idx = -1,
							      .kind = SIO_SEG_BAR };
	}
}

int sio__device_register_ext(struct sio_fabric *f, const struct sio_device_desc *desc,
			     enum sio_device_backend backend, const char *bdf, const char *svc,
			     struct sio_devreg **out)
{
	const struct sio_device_ops *ops;
	struct sio_devreg *reg;
	int d = -1, ret;

	if (!f || !desc || !out)
		return sio__err(EINVAL, "fabric, descriptor or out pointer is NULL");
	ret = desc_check(desc, backend, &ops);
	if (ret)
		return ret;
	reg = calloc(1, sizeof(*reg));
	if (!reg)
		return sio__err(ENOMEM, "out of memory");
	if ((ret = sio__lock(f))) {
		free(reg);
		return ret;
	}
	ret = dev_slot_locked(f, &d);
	if (!ret) {
		dev_init_locked(f, d, desc, backend, bdf, svc);
		ret = dev_bars_locked(f, ops, d);
	}
	if (!ret) {
		f->reg->devs[d].used = 1;
		devreg_fill(reg, f, d);
		reg_bump(f->reg);
		*out = reg;
	}
	sio__unlock(f);
	if (ret)
		free(reg);
	return ret;
}

int sio_device_register(struct sio_fabric *f, const struct sio_device_desc *desc,
			struct sio_devreg **out)
{
	return sio__device_register_ext(f, desc, SIO_BACKEND_SIM, NULL, NULL, out);
}

void sio_devreg_close(struct sio_devreg *reg)
{
	if (!reg)
		return;
	for (int i = 0; i < SIO_MAX_BARS; i++)
		if (reg->bars[i]) {
			if (reg->bars[i]->vaddr)
				sio_segment_unmap(reg->bars[i]);
			free(reg->bars[i]);
		}
	/* the handle goes either way; the device goes when this process leaves */
	if (!sio__lock(reg->f)) {
		if (reg->f->reg->devs[reg->slot].used && reg->f->reg->devs[reg->slot].id == reg->id)
			sio__reg_dev_release(reg->f, reg->slot);
		sio__unlock(reg->f);
	}
	free(reg->cache);
	free(reg->gpu);
	free(reg);
}

uint32_t sio_devreg_id(const struct sio_devreg *reg)
{
	return reg ? reg->id : 0;
}

int sio_devreg_bar(struct sio_devreg *reg, int bar, struct sio_segment **out)
{
	if (!reg || !out)
		return sio__err(EINVAL, "registration or out pointer is NULL");
	if (bar < 0 || bar >= SIO_MAX_BARS || !reg->bars[bar])
		return sio__err(ENOENT, "device %u has no BAR %d", reg->id, bar);
	*out = reg->bars[bar];
	return 0;
}
