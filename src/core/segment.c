/* SPDX-License-Identifier: MIT */
/*
 * Segments: slots of the registry named by (node, id). Their memory, and
 * mapping it, is the fabric backend's.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include "internal.h"

void *sio__segmap(struct sio_fabric *f, int slot, uint64_t gen)
{
	const struct reg_seg *s = reg_seg_at(f->reg, slot);
	uint64_t len;
	void *p;

	if (!s)
		return NULL;
	if (f->segmap[slot] && f->segmap_gen[slot] == gen)
		return f->segmap[slot];
	sio__segmap_drop(f, slot);
	len = s->size;	/* read once: what is mapped is what is unmapped */
	if (f->ops->seg_map(f, slot, 0, len, false, &p))
		return NULL;
	f->segmap[slot] = p;
	f->segmap_gen[slot] = gen;
	f->segmap_len[slot] = len;
	return p;
}

void sio__segmap_drop(struct sio_fabric *f, int slot)
{
	if (slot < 0 || slot >= SIO_MAX_SEGS)
		return;
	if (f->segmap[slot])
		f->ops->seg_unmap(f, f->segmap[slot], f->segmap_len[slot]);
	f->segmap[slot] = NULL;
}

static int find_seg(struct sio_registry *r, int node, uint32_t id)
{
	for (int s = 0; s < SIO_MAX_SEGS; s++)
		if (r->segs[s].used && r->segs[s].node == node && r->segs[s].id == id)
			return s;
	return -1;
}

static struct sio_segment *handle_new(struct sio_fabric *f, int slot, bool owner)
{
	struct sio_segment *h = calloc(1, sizeof(*h));
	const struct reg_seg *s = &f->reg->segs[slot];

	if (!h)
		return NULL;
	*h = (struct sio_segment){ .f = f, .slot = slot, .id = s->id, .node = s->node,
				   .size = s->size, .gen = s->gen, .owner = owner,
				   .window = -1, .bar_idx = -1, .kind = s->kind };
	return h;
}

/* Create a segment slot and its memory; registry lock held. */
static int seg_new(struct sio_fabric *f, int node, uint32_t id, uint64_t size,
		   unsigned int flags, int kind, int *slotp)
{
	struct sio_registry *r = f->reg;
	int s, ret;

	if (id == 0) {
		do
			id = r->next_seg_id[node]++;
		while (find_seg(r, node, id) >= 0);
	} else if ((s = find_seg(r, node, id)) >= 0) {
		/* A kept segment whose owner died: adopted, contents and all. */
		if ((flags & SIO_SEG_F_KEEP) && kind == SIO_SEG_RAM && r->segs[s].keep &&
		    r->segs[s].owner == -1 && r->segs[s].kind == SIO_SEG_RAM &&
		    /* on huge pages it was rounded up to whole ones */
		    (r->segs[s].huge ? size <= r->segs[s].size : r->segs[s].size == size)) {
			r->segs[s].owner = f->proc;
			*slotp = s;
			return 0;
		}
		return sio__err(EEXIST, "segment id %u is already in use on node %d", id, node);
	}
	for (s = 0; s < SIO_MAX_SEGS && r->segs[s].used; s++)
		;
	if (s == SIO_MAX_SEGS)
		return sio__err(ENOSPC, "the fabric has all %d segments in use", SIO_MAX_SEGS);
	r->segs[s] = (struct reg_seg){ .used = 1, .id = id, .node = node, .owner = f->proc,
				       .size = size, .gen = r->next_gen++, .kind = kind,
				       .device = -1, .bar = -1, .keep = !!(flags & SIO_SEG_F_KEEP) };
	if ((ret = f->ops->seg_create(f, s, flags))) {
		r->segs[s].used = 0;
		return ret;
	}
	*slotp = s;
	return 0;
}

int sio__seg_new_locked(struct sio_fabric *f, int node, uint32_t id, uint64_t size,
			unsigned int flags, int kind, int *slotp)
{
	return seg_new(f, node, id, size, flags, kind, slotp);
}

int sio_segment_create_on(struct sio_fabric *f, int node, uint32_t id, uint64_t size,
			  unsigned int flags, struct sio_segment **out)
{
	int ret, slot;

	if (!f || !out)
		return sio__err(EINVAL, "fabric handle or out pointer is NULL");
	if (size == 0 || size > SIO_SEG_MAX_SIZE)
		return sio__err(EINVAL, "segment size must be 1 byte to 4 GiB, not %llu",
				(unsigned long long)size);
	/* the copy made when joining: the registry may read all ones now */
	if (node < 0 || node >= f->topo.nodes)
		return sio__err(EINVAL, "no node %d in fabric '%s'", node, f->name);
	if ((flags & SIO_SEG_F_HUGE) && (flags & SIO_SEG_F_NOHUGE))
		return sio__err(EINVAL, "SIO_SEG_F_HUGE and SIO_SEG_F_NOHUGE together");
	size = sio__page_up(size);
	if ((ret = sio__lock(f)))
		return ret;
	ret = seg_new(f, node, id, size, flags, SIO_SEG_RAM, &slot);
	if (!ret && !(*out = handle_new(f, slot, true))) {
		sio__reg_seg_release(f, slot, false);
		ret = sio__err(ENOMEM, "out of memory");
	}
	sio__unlock(f);
	return ret;
}

int sio_segment_create_gpu(struct sio_fabric *f, uint64_t size, int gpu, const void *handle,
			   size_t len, struct sio_segment **out)
{
	struct sio_registry *r;
	int s, ret = 0;

	if (!f || !out || !handle)
		return sio__err(EINVAL, "fabric handle, IPC handle or out pointer is NULL");
	if (!len || len > SIO_GPU_HANDLE_MAX)
		return sio__err(EINVAL, "a GPU segment's IPC handle is 1..%d bytes, not %zu",
				SIO_GPU_HANDLE_MAX, len);
	if (!size || size > SIO_SEG_MAX_SIZE)
		return sio__err(EINVAL, "GPU segment size must be 1 byte to 4 GiB, not %llu",
				(unsigned long long)size);
	if (gpu < 0)
		return sio__err(EINVAL, "GPU %d is not a CUDA device ordinal", gpu);
	r = f->reg;
	if ((ret = sio__lock(f)))
		return ret;
	for (s = 0; s < SIO_MAX_SEGS && r->segs[s].used; s++)
		;
	if (s == SIO_MAX_SEGS) {
		ret = sio__err(ENOSPC, "the fabric has all %d segments in use", SIO_MAX_SEGS);
		goto out;
	}
	uint32_t id;
	do
		id = r->next_seg_id[f->node]++;
	while (find_seg(r, f->node, id) >= 0);
	r->segs[s] = (struct reg_seg){ .used = 1, .id = id, .node = f->node, .owner = f->proc,
				       .size = size, .gen = r->next_gen++, .kind = SIO_SEG_GPU,
				       .device = -1, .bar = -1, .gpu = gpu };
	memcpy(r->segs[s].gpu_handle, handle, len);
	if (!(*out = handle_new(f, s, true))) {
		r->segs[s].used = 0;
		ret = sio__err(ENOMEM, "out of memory");
	}
out:
	sio__unlock(f);
	return ret;
}

int sio_segment_create(struct sio_fabric *f, uint32_t id, uint64_t size, unsigned int flags,
		       struct sio_segment **out)
{
	if (!f)
		return sio__err(EINVAL, "fabric handle is NULL");
	return sio_segment_create_on(f, f->node, id, size, flags, out);
}

int sio_segment_connect(struct sio_fabric *f, int node, uint32_t id, struct sio_segment **out)
{
	int s, ret = 0;

	if (!f || !out)
		return sio__err(EINVAL, "fabric handle or out pointer is NULL");
	if ((ret = sio__lock(f)))
		return ret;
	s = find_seg(f->reg, node, id);
	if (s < 0)
		ret = sio__err(ENOENT, "no segment %u on node %d", id, node);
	else if (!(*out = handle_new(f, s, false)))
		ret = sio__err(ENOMEM, "out of memory");
	sio__unlock(f);
	return ret;
}

/* Registry lock held. The handle's segment must still be the one it named. */
static int seg_check(struct sio_segment *seg)
{
	const struct reg_seg *s = reg_seg_at(seg->f->reg, seg->slot);

	if (!s || !s->used || s->gen != seg->gen)
		return sio__err(ENOENT, "segment %u of node %d is gone", seg->id, seg->node);
	return 0;
}

int sio__seg_check(struct sio_segment *seg)
{
	return seg_check(seg);
}

int sio_segment_map(struct sio_segment *seg, void **vaddr)
{
	return sio_segment_map_range(seg, -1, 0, 0, 0, vaddr);
}

int sio_segment_map_adapter(struct sio_segment *seg, int adapter, void **vaddr)
{
	return sio_segment_map_range(seg, adapter, 0, 0, 0, vaddr);
}

int sio_segment_map_range(struct sio_segment *seg, int adapter, uint64_t offset,
			  uint64_t length, unsigned int flags, void **vaddr)
{
	struct sio_fabric *f;
	struct sio_path path;
	int ret, pm = -1;
	uint64_t bus;

	if (!seg || !vaddr)
		return sio__err(EINVAL, "segment or vaddr pointer is NULL");
	if (flags & ~SIO_MAP_RDONLY)
		return sio__err(EINVAL, "unknown map flags 0x%x", flags);
	if (!length && !offset)
		length = seg->size;
	if ((offset | length) & 4095 || !length || offset > seg->size || length > seg->size - offset)
		return sio__err(EINVAL, "range 0x%llx+0x%llx is not page aligned inside the %llu-byte segment",
				(unsigned long long)offset, (unsigned long long)length,
				(unsigned long long)seg->size);
	if (seg->vaddr) {
		*vaddr = seg->vaddr;
		return 0;
	}
	if (seg->bar_dev) {	/* no fabric segment: its device's backend maps it, whole */
		const struct sio_device_ops *ops = seg->bar_dev->ops;
		uint64_t sz;
		if (offset || length != seg->size || flags)
			return sio__err(EOPNOTSUPP, "BARs of %s devices are mapped whole", ops->name);
		if (!ops->bar_map)
			return sio__err(EOPNOTSUPP, "the %s backend maps no BARs of its own", ops->name);
		ret = ops->bar_map(seg->bar_dev, seg->bar_idx, &seg->vaddr, &sz);
		if (!ret) {
			seg->map_len = seg->size;
			*vaddr = seg->vaddr;
		}
		return ret;
	}
	f = seg->f;
	if (seg->kind == SIO_SEG_GPU)
		return sio__err(EOPNOTSUPP, "GPU segment %u has no CPU mapping; reach it through CUDA", seg->id);
	if ((ret = sio__lock(f)))
		return ret;
	if ((ret = seg_check(seg)) ||
	    (ret = sio__bar_access(f, seg->slot, offset, length, flags & SIO_MAP_RDONLY)))
		goto out;
	if (seg->node != f->node) {
		for (pm = 0; pm < SIO_MAX_PMAPS && f->reg->pmaps[pm].used; pm++)
			;
		if (pm == SIO_MAX_PMAPS) {
			ret = sio__err(ENOSPC, "the fabric has all %d process mappings in use", SIO_MAX_PMAPS);
			pm = -1;
			goto out;
		}
		ret = sio__route_window(f, f->node, seg->node, adapter, false, false, seg->slot,
					&path, &bus);
		if (ret < 0) {
			pm = -1;
			goto out;
		}
		f->reg->pmaps[pm] = (struct reg_pmap){ .used = 1, .proc = f->proc, .seg = seg->slot,
						       .node = f->node, .adapter = path.adapter,
						       .window = ret };
		seg->window = pm;
	}
	if (pm >= 0 && f->ops->seg_connect)
		ret = f->ops->seg_connect(f, seg->slot, path.adapter, offset, length,
					  flags & SIO_MAP_RDONLY, &seg->vaddr);
	else
		ret = f->ops->seg_map(f, seg->slot, offset, length, flags & SIO_MAP_RDONLY,
				      &seg->vaddr);
	if (ret && pm >= 0) {
		sio__reg_pmap_release(f, pm);
		seg->window = -1;
	}
	if (!ret) {
		seg->map_len = length;
		*vaddr = seg->vaddr;
		reg_bump(f->reg);
	}
out:
	sio__unlock(f);
	return ret < 0 ? ret : 0;
}

int sio_segment_unmap(struct sio_segment *seg)
{
	struct sio_fabric *f;
	int ret;

	if (!seg)
		return sio__err(EINVAL, "segment is NULL");
	if (!seg->vaddr)
		return sio__err(EINVAL, "segment %u of node %d is not mapped", seg->id, seg->node);
	if (seg->bar_dev) {
		munmap(seg->vaddr, seg->map_len);
		seg->vaddr = NULL;
		return 0;
	}
	f = seg->f;
	f->ops->seg_unmap(f, seg->vaddr, seg->map_len);
	seg->vaddr = NULL;
	if ((ret = sio__lock(f)))
		return ret;	/* the window stays counted until this process leaves */
	if (seg->window >= 0) {
		struct reg_pmap *pm = &f->reg->pmaps[seg->window];
		if (pm->used && pm->proc == f->proc && pm->seg == seg->slot)
			sio__reg_pmap_release(f, seg->window);
		seg->window = -1;
	}
	reg_bump(f->reg);
	sio__unlock(f);
	return 0;
}

void sio__segment_reach(struct sio_fabric *f, int s, const void *va, struct sio_segment_info *o)
{
	if (!f->ops->seg_reach || !f->ops->seg_reach(f, s, va, o->reach, sizeof(o->reach)))
		o->reach[0] = 0;
}

void sio__segment_info(struct sio_registry *r, int s, struct sio_segment_info *o)
{
	const struct reg_seg *sg = &r->segs[s];
	const struct reg_dev *dv = reg_dev_at(r, sg->device);

	memset(o, 0, sizeof(*o));
	o->id = sg->id;
	o->node = sg->node;
	o->size = sg->size;
	o->kind = (enum sio_segment_kind)sg->kind;
	o->device = dv ? (int)dv->id : -1;
	o->bar = dv ? sg->bar : -1;
	o->hugepages = sg->huge;
	memcpy(o->name, sg->name, sizeof(o->name));
	o->name[sizeof(o->name) - 1] = 0;
}

int sio_segment_info(const struct sio_segment *seg, struct sio_segment_info *out)
{
	const struct reg_seg *s;

	if (!seg || !out)
		return sio__err(EINVAL, "segment or out pointer is NULL");
	if (seg->bar_dev) {
		memset(out, 0, sizeof(*out));
		out->id = seg->id;
		out->node = seg->node;
		out->size = seg->size;
		out->kind = seg->kind;
		out->device = (int)sio_device_id(seg->bar_dev);
		out->bar = seg->bar_idx;
		snprintf(out->name, sizeof(out->name), "bar%d", seg->bar_idx);
		return 0;
	}
	s = &seg->f->reg->segs[seg->slot];
	if (!s->used || s->gen != seg->gen)
		return sio__err(ENOENT, "segment %u of node %d is gone", seg->id, seg->node);
	sio__segment_info(seg->f->reg, seg->slot, out);
	/* the handle's view: a connected segment's id, node and size as mapped */
	out->id = seg->id;
	out->node = seg->node;
	out->size = seg->size;
	if (seg->vaddr && seg->node != seg->f->node)
		sio__segment_reach(seg->f, seg->slot, seg->vaddr, out);
	return 0;
}

int sio_segment_set_name(struct sio_segment *seg, const char *name)
{
	int ret;

	if (!seg || !name)
		return sio__err(EINVAL, "segment or name is NULL");
	if (seg->bar_dev)
		return sio__err(EINVAL, "BAR segments of real devices cannot be renamed");
	if ((ret = sio__lock(seg->f)))
		return ret;
	if (!(ret = seg_check(seg)))
		snprintf(seg->f->reg->segs[seg->slot].name, SIO_NAME_MAX, "%s", name);
	sio__unlock(seg->f);
	return ret;
}

void sio_segment_close(struct sio_segment *seg)
{
	if (!seg)
		return;
	if (seg->vaddr)
		sio_segment_unmap(seg);
	/* the handle goes either way; what the registry holds, a reaper frees */
	if (seg->owner && !seg->bar_dev && !sio__lock(seg->f)) {
		if (!seg_check(seg))
			sio__reg_seg_release(seg->f, seg->slot, true);
		sio__unlock(seg->f);
	}
	free(seg);
}

int sio_segment_reserve(struct sio_segment *seg, uint64_t offset, uint64_t length)
{
	int ret;

	if (!seg)
		return sio__err(EINVAL, "segment is NULL");
	if (!length || offset > seg->size || length > seg->size - offset)
		return sio__err(EINVAL, "range %llu+%llu is not inside the %llu-byte segment",
				(unsigned long long)offset, (unsigned long long)length,
				(unsigned long long)seg->size);
	if (!seg->owner || seg->bar_dev || !seg->f->ops->seg_reserve)
		return 0;
	if ((ret = sio__lock(seg->f)))
		return ret;
	ret = seg_check(seg);
	if (!ret)
		ret = seg->f->ops->seg_reserve(seg->f, seg->slot, offset, length);
	sio__unlock(seg->f);
	return ret;
}

void sio__seg_leaves_apply(struct sio_fabric *f)
{
	for (int i = 0; i < f->nleft; i++) {
		struct reg_seg *s = reg_seg_at(f->reg, f->left[i].slot);

		if (s && s->used && s->gen == f->left[i].gen && s->keep && s->owner == f->proc)
			s->owner = -1;
	}
	f->nleft = 0;
}

/*
 * A registry out of reach (the state across a link that is down) cannot
 * be written now: the segment is let go of at this handle's next lock
 * that reaches it, or else it stays this live process's, refused to a
 * successor and to this process's own next start alike.
 */
void sio_segment_leave(struct sio_segment *seg)
{
	struct sio_fabric *f;
	struct reg_seg *s;

	if (!seg)
		return;
	f = seg->f;
	if (seg->owner && !seg->bar_dev && !sio__lock(f)) {
		s = &f->reg->segs[seg->slot];
		if (!seg_check(seg) && s->keep && s->owner == f->proc) {
			s->owner = -1;
			seg->owner = false;	/* closed as a connected handle */
		}
		sio__unlock(f);
	} else if (seg->owner && !seg->bar_dev &&
		   f->nleft < (int)(sizeof(f->left) / sizeof(f->left[0]))) {
		f->left[f->nleft].slot = seg->slot;
		f->left[f->nleft++].gen = seg->gen;
		seg->owner = false;
	}
	sio_segment_close(seg);
}

struct sio_fabric *sio_segment_fabric(const struct sio_segment *seg)
{
	return seg ? seg->f : NULL;
}

static uint32_t *word(struct sio_segment *seg, uint64_t off)
{
	if (!seg || !seg->vaddr || (off & 3) || off + 4 > seg->size)
		return NULL;
	return (uint32_t *)((char *)seg->vaddr + off);
}

int sio_segment_notify(struct sio_segment *seg, uint64_t offset)
{
	uint32_t *w = word(seg, offset);

	if (!w)
		return sio__err(EINVAL, "notify needs a mapped segment and an aligned offset inside it");
	return seg->f->ops->notify(seg->f, w);
}

int sio_segment_wait(struct sio_segment *seg, uint64_t offset, uint32_t old, uint64_t timeout_ns)
{
	uint32_t *w = word(seg, offset);

	if (!w)
		return sio__err(EINVAL, "wait needs a mapped segment and an aligned offset inside it");
	if (__atomic_load_n(w, __ATOMIC_ACQUIRE) != old)
		return 0;
	return seg->f->ops->wait(seg->f, w, old, timeout_ns);
}
