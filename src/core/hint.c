/* SPDX-License-Identifier: MIT */
/*
 * Access-hint placement. Reads across PCIe are non-posted and wait for the
 * round trip; writes are posted. So memory goes next to whoever reads it.
 */
#include "internal.h"

int sio_hint_place(struct sio_device *dev, unsigned int hints)
{
	bool dev_reads = hints & SIO_HINT_DEVICE_READ;
	bool host_reads = hints & (SIO_HINT_HOST_READ | SIO_HINT_MULTI_READ);

	if (!dev)
		return sio__err(EINVAL, "device handle is NULL");
	if (!hints || (hints & ~0x3fu))
		return sio__err(EINVAL, "hints 0x%x say nothing usable (SIO_HINT_* bits)", hints);
	if (hints & (SIO_HINT_MULTI_READ | SIO_HINT_MULTI_WRITE))
		return SIO_PLACE_LENDER;	/* a meeting point for many hosts */
	if (dev_reads && !host_reads)
		return SIO_PLACE_LENDER;	/* SQ-like: near the device */
	return SIO_PLACE_LOCAL;			/* CQ-like: near the polling CPU */
}

int sio_segment_create_hinted(struct sio_device *dev, uint64_t size, unsigned int hints,
			      struct sio_segment **out, enum sio_placement *placed)
{
	int p = sio_hint_place(dev, hints), node, ret;

	if (p < 0)
		return p;
	if (!out)
		return sio__err(EINVAL, "out pointer is NULL");
	if (dev->ops->host_local)	/* one host: everything is local */
		p = SIO_PLACE_LOCAL;
	node = dev->f->node;
	if (p == SIO_PLACE_LENDER) {	/* locked: a state out of reach reads all ones */
		if ((ret = sio__lock(dev->f)))
			return ret;
		node = dev->f->reg->devs[dev->slot].lender;
		sio__unlock(dev->f);
	}
	if (node == dev->f->node)
		p = SIO_PLACE_LOCAL;
	ret = sio_segment_create_on(dev->f, node, 0, size, 0, out);
	if (!ret && placed)
		*placed = p;
	return ret;
}

const char *sio_placement_name(enum sio_placement p)
{
	switch (p) {
	case SIO_PLACE_LOCAL: return "local";
	case SIO_PLACE_LENDER: return "lender";
	case SIO_PLACE_DEVICE: return "device";
	}
	return "unknown";
}
