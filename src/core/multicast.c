/* SPDX-License-Identifier: MIT */
/* Multicast groups: a finite set of address ranges the switches replicate. */
#include <string.h>
#include "internal.h"

/* The group's subscriber count is checked, being input. */
int sio__mcast_group(struct sio_fabric *f, uint32_t group)
{
	const struct reg_group *g;

	if (group >= (uint32_t)f->topo.mcast_groups || !f->reg->groups[group].used)
		return sio__err(ENOENT, "no multicast group %u", group);
	g = &f->reg->groups[group];
	if (g->nsubs < 0 || g->nsubs > SIO_MAX_SUBS)
		return sio__reg_corrupt(f, "multicast group %u has %d subscribers (0..%d)", group, g->nsubs,
				   SIO_MAX_SUBS);
	return (int)group;
}

int sio_mcast_create(struct sio_fabric *f, uint64_t size, uint32_t *group)
{
	int g, ret = 0;

	if (!f || !group || !size || size > SIO_SEG_MAX_SIZE)
		return sio__err(EINVAL, "multicast group needs a fabric, an out pointer and 1 byte..4 GiB");
	if ((ret = sio__lock(f)))
		return ret;
	for (g = 0; g < f->topo.mcast_groups && f->reg->groups[g].used; g++)
		;
	if (g == f->topo.mcast_groups) {
		ret = sio__err(ENOSPC, "all %d multicast groups the switches support are in use",
			       f->topo.mcast_groups);
	} else {
		memset(&f->reg->groups[g], 0, sizeof(f->reg->groups[g]));
		f->reg->groups[g].used = 1;
		f->reg->groups[g].owner = f->proc;
		f->reg->groups[g].size = size;
		f->reg->groups[g].gen = f->reg->next_gen++;
		*group = (uint32_t)g;
	}
	sio__unlock(f);
	return ret;
}

int sio_mcast_destroy(struct sio_fabric *f, uint32_t group)
{
	int g;

	if (!f)
		return sio__err(EINVAL, "fabric handle is NULL");
	if ((g = sio__lock(f)))
		return g;
	g = sio__mcast_group(f, group);
	if (g >= 0) {
		for (int m = 0; m < SIO_MAX_DMAMAPS; m++)
			if (f->reg->dmamaps[m].used && f->reg->dmamaps[m].group == g)
				sio__reg_dmamap_release(f, m);
		memset(&f->reg->groups[g], 0, sizeof(f->reg->groups[g]));
		reg_bump(f->reg);
	}
	sio__unlock(f);
	return g < 0 ? g : 0;
}

int sio_mcast_subscribe(struct sio_fabric *f, uint32_t group, struct sio_segment *seg)
{
	struct reg_group *gr;
	int g, ret;

	if (!f || !seg || seg->bar_dev)
		return sio__err(EINVAL, "subscribe needs a fabric and a RAM segment");
	if ((ret = sio__lock(f)))
		return ret;
	if ((g = ret = sio__mcast_group(f, group)) < 0 || (ret = sio__seg_check(seg)))
		goto out;
	gr = &f->reg->groups[g];
	if (seg->node != f->node)
		ret = sio__err(EINVAL, "only a segment of this node (%d) can subscribe it", f->node);
	else if (seg->size < gr->size)
		ret = sio__err(EINVAL, "segment of %llu bytes is smaller than group %u (%llu bytes)",
			       (unsigned long long)seg->size, group, (unsigned long long)gr->size);
	else if (gr->nsubs == SIO_MAX_SUBS)
		ret = sio__err(ENOSPC, "group %u has all %d subscribers", group, SIO_MAX_SUBS);
	if (ret)
		goto out;
	for (int i = 0; i < gr->nsubs; i++)
		if (gr->sub_seg[i] == seg->slot) {
			ret = sio__err(EEXIST, "segment %u is already subscribed to group %u", seg->id, group);
			goto out;
		}
	gr->sub_seg[gr->nsubs] = seg->slot;
	gr->sub_gen[gr->nsubs++] = seg->gen;
	reg_bump(f->reg);
out:
	sio__unlock(f);
	return ret < 0 ? ret : 0;
}

int sio_mcast_unsubscribe(struct sio_fabric *f, uint32_t group, struct sio_segment *seg)
{
	int g, ret;

	if (!f || !seg)
		return sio__err(EINVAL, "fabric or segment is NULL");
	if ((ret = sio__lock(f)))
		return ret;
	g = ret = sio__mcast_group(f, group);
	if (g >= 0) {
		struct reg_group *gr = &f->reg->groups[g];
		ret = sio__err(ENOENT, "segment %u is not subscribed to group %u", seg->id, group);
		for (int i = 0; i < gr->nsubs; i++)
			if (gr->sub_seg[i] == seg->slot) {
				gr->sub_seg[i] = gr->sub_seg[--gr->nsubs];
				gr->sub_gen[i] = gr->sub_gen[gr->nsubs];
				ret = 0;
				reg_bump(f->reg);
				break;
			}
	}
	sio__unlock(f);
	return ret;
}

int sio_mcast_subscribers(struct sio_fabric *f, uint32_t group)
{
	int g;

	if (!f)
		return sio__err(EINVAL, "fabric handle is NULL");
	if ((g = sio__lock(f)))
		return g;
	g = sio__mcast_group(f, group);
	if (g >= 0)
		g = f->reg->groups[g].nsubs;
	sio__unlock(f);
	return g;
}

int sio_device_map_mcast(struct sio_device *dev, uint32_t group, uint64_t *bus_addr)
{
	if (!dev || !bus_addr)
		return sio__err(EINVAL, "device or bus_addr pointer is NULL");
	if (!dev->ops->mcast_map)
		return sio__err(ENOTSUP, "device %u (%s backend) cannot reach multicast groups: they need a fabric of switches",
				dev->id, dev->ops->name);
	uint64_t b;
	int ret = dev->ops->mcast_map(dev, group, &b);

	if (ret)
		return ret;
	/* a group's address is the fabric's: a device that drives fewer bits cannot reach it */
	if (b > dev->dma_mask)
		return sio__err(ERANGE, "multicast group %u is at bus address 0x%llx, beyond device %u's "
				"DMA mask 0x%llx (%d bits)", group, (unsigned long long)b, dev->id,
				(unsigned long long)dev->dma_mask, sio__mask_bits(dev->dma_mask));
	*bus_addr = b;
	return 0;
}
