/* SPDX-License-Identifier: MIT */
/*
 * The sim device backend, borrower's side: a device model's BARs are
 * fabric segments, and what a device may reach is a mapping in the
 * registry, in the device's own bus domain: a segment on the lender's node
 * at its local address, anything else through a window of the lender's
 * adapter, a multicast group at the group's address. The model's side,
 * which translates the device's DMA through these, is dma.c.
 */
#include <stdlib.h>
#include <string.h>
#include "internal.h"

/* Registry lock held: a free device mapping slot, or -1 having said why. */
static int dmamap_slot(struct sio_registry *r)
{
	for (int m = 0; m < SIO_MAX_DMAMAPS; m++)
		if (!r->dmamaps[m].used)
			return m;
	return sio__err(ENOSPC, "the fabric has all %d device mappings in use", SIO_MAX_DMAMAPS);
}

/* The lowest bus address a masked device's mappings are placed at: a zero
 * bus address is a bug, as on the IOMMU side (vfio's IOVA floor). */
#define LOW_FLOOR	(1ull << 20)

struct extent { uint64_t bus, end; };	/* [bus, end) */

static int by_bus(const void *a, const void *b)
{
	const struct extent *x = a, *y = b;

	return x->bus < y->bus ? -1 : x->bus > y->bus;
}

/*
 * Registry lock held: place mapping @m of device slot @dev (size m->size)
 * at or below @mask, first fit from the bottom, clear of the device's other
 * mappings: the device's domain then remaps it, as an IOMMU would, for a
 * device that cannot reach the fabric's high bus addresses. Windows keep
 * their own addresses on the adapter side; only the device's view moves.
 */
static int place_low(struct sio_registry *r, int dev, int self, uint64_t mask, struct reg_dmamap *m)
{
	uint64_t at = LOW_FLOOR, len = sio__page_up(m->size);
	struct extent *x = malloc(SIO_MAX_DMAMAPS * sizeof(*x));
	int n = 0;

	if (!x)
		return sio__err(ENOMEM, "out of memory placing a mapping under a DMA mask");
	for (int i = 0; i < SIO_MAX_DMAMAPS; i++)
		if (i != self && r->dmamaps[i].used && r->dmamaps[i].dev == dev)
			x[n++] = (struct extent){ r->dmamaps[i].bus, r->dmamaps[i].bus + r->dmamaps[i].size };
	qsort(x, (size_t)n, sizeof(*x), by_bus);
	for (int i = 0; i < n && x[i].bus < at + len; i++)	/* the gap below x[i] is too small */
		if (x[i].end > at)
			at = sio__page_up(x[i].end);
	free(x);
	if (at > mask || len - 1 > mask - at)
		return sio__err(ERANGE, "no room for %llu bytes between bus address 0x%llx and device "
				"%u's DMA mask 0x%llx (%d bits)", (unsigned long long)m->size, LOW_FLOOR,
				r->devs[dev].id, (unsigned long long)mask, sio__mask_bits(mask));
	m->bus = at;
	return 0;
}

static int sim_dma_map(struct sio_device *dev, struct sio_segment *seg, uint64_t *bus_addr)
{
	struct sio_registry *r = dev->f->reg;
	struct reg_dmamap *m;
	struct sio_path path;
	int ret, slot, w = -1, lender;
	const struct reg_dev *sd;
	bool same_chassis;

	if (seg->bar_dev)
		return sio__err(EINVAL, "BAR%d of device %u is served by its %s lender: a simulated device cannot reach it",
				seg->bar_idx, sio_device_id(seg->bar_dev), seg->bar_dev->ops->name);
	if ((ret = sio__lock(dev->f)))
		return ret;
	if ((ret = sio__dev_check(dev)) || (ret = sio__seg_check(seg)))
		goto out;
	for (int i = 0; i < SIO_MAX_DMAMAPS; i++) {
		struct reg_dmamap *d = &r->dmamaps[i];

		/* ours, or one kept for the device since its borrower died
		 * (sio__reg_borrow_release()): taken over, at the same address */
		if (d->used && (d->borrow == dev->borrow || (d->borrow == -1 && d->dev == dev->slot)) &&
		    d->seg == seg->slot && d->seg_gen == seg->gen) {
			d->borrow = dev->borrow;
			*bus_addr = d->bus;
			goto out;
		}
	}
	if ((ret = slot = dmamap_slot(r)) < 0)
		goto out;
	lender = r->devs[dev->slot].lender;
	sd = reg_dev_at(r, r->segs[seg->slot].device);	/* the device whose BAR it is, if any */
	same_chassis = sd && sd->chassis && r->devs[dev->slot].chassis && r->segs[seg->slot].node == lender;
	ret = sio__route(dev->f, lender, seg->node, dev->adapter, r->devs[dev->slot].chassis && !same_chassis,
			 sd && sd->chassis && !same_chassis, &path);
	if (ret)
		goto out;
	if (same_chassis && r->segs[seg->slot].device != dev->slot)	/* peer in the chassis */
		path.round_trip_ns = 2 * (path.one_way_ns = r->topo.chassis_ns);
	m = &r->dmamaps[slot];
	*m = (struct reg_dmamap){ .used = 1, .dev = dev->slot, .borrow = dev->borrow, .seg = seg->slot,
				  .group = -1, .window = -1, .seg_gen = seg->gen, .size = seg->size,
				  .link_node = { -1, -1 }, .link_adapter = { -1, -1 } };
	if (r->topo.latency_model) {
		m->rt_ns = path.round_trip_ns;
		m->ow_ns = path.one_way_ns;
	}
	if (seg->node == lender) {
		m->bus = reg_seg_bus(seg->slot);
	} else {
		w = sio__route_window(dev->f, lender, seg->node, dev->adapter,
				      r->devs[dev->slot].chassis && !same_chassis,
				      sd && sd->chassis && !same_chassis, seg->slot, &path, &m->bus);
		if (w < 0) {
			ret = w;
			memset(m, 0, sizeof(*m));
			goto out;
		}
		m->window = w;
		m->win_node = lender;
		m->win_adapter = path.adapter;
		m->link_node[0] = lender;
		m->link_adapter[0] = path.adapter;
		m->link_node[1] = seg->node;
		m->link_adapter[1] = path.adapter;
	}
	if ((m->bus > dev->dma_mask || m->size - 1 > dev->dma_mask - m->bus) &&
	    (ret = place_low(r, dev->slot, slot, dev->dma_mask, m))) {
		sio__reg_dmamap_release(dev->f, slot);	/* and the window */
		goto out;
	}
	*bus_addr = m->bus;
	ret = 0;
	reg_bump(r);
out:
	sio__unlock(dev->f);
	return ret;
}

static int sim_dma_unmap(struct sio_device *dev, struct sio_segment *seg)
{
	struct sio_registry *r = dev->f->reg;
	int ret;

	if ((ret = sio__lock(dev->f)))
		return ret;
	ret = sio__err(ENOENT, "segment %u of node %d is not mapped for device %u", seg->id, seg->node, dev->id);
	for (int i = 0; i < SIO_MAX_DMAMAPS; i++)
		if (r->dmamaps[i].used && r->dmamaps[i].borrow == dev->borrow &&
		    r->dmamaps[i].seg == seg->slot && r->dmamaps[i].seg_gen == seg->gen) {
			sio__reg_dmamap_release(dev->f, i);
			ret = 0;
			break;
		}
	sio__unlock(dev->f);
	return ret;
}

static int sim_mcast_map(struct sio_device *dev, uint32_t group, uint64_t *bus_addr)
{
	struct sio_registry *r = dev->f->reg;
	int g, m, ret;

	if ((ret = sio__lock(dev->f)))
		return ret;
	g = ret = sio__mcast_group(dev->f, group);
	if (g < 0)
		goto out;
	ret = 0;
	*bus_addr = SIO_BUS_MCAST_BASE + ((uint64_t)g << 32);
	for (m = 0; m < SIO_MAX_DMAMAPS; m++)
		if (r->dmamaps[m].used && r->dmamaps[m].borrow == dev->borrow && r->dmamaps[m].group == g)
			goto out;
	if ((ret = m = dmamap_slot(r)) < 0)
		goto out;
	ret = 0;
	r->dmamaps[m] = (struct reg_dmamap){ .used = 1, .dev = dev->slot, .borrow = dev->borrow,
					     .seg = -1, .group = g, .window = -1, .bus = *bus_addr,
					     .size = r->groups[g].size, .link_node = { -1, -1 },
					     .link_adapter = { -1, -1 } };
	reg_bump(r);
out:
	sio__unlock(dev->f);
	return ret;
}

const struct sio_device_ops sio__sim_device_ops = {
	.name = "sim",
	.fabric_bars = true,
	.dma_map = sim_dma_map,
	.dma_unmap = sim_dma_unmap,
	.mcast_map = sim_mcast_map,
	.irq_enable = sio__sim_irq_enable,
	.irq_disable = sio__sim_irq_disable,
	.irq_take = sio__sim_irq_take,
	.irq_gone = sio__sim_irq_gone,
};
