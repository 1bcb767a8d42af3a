/* SPDX-License-Identifier: MIT */
/*
 * Interrupts and DMA masks of a borrow: what the core keeps and checks; the
 * backends (core/backend.h) deliver the interrupts and place the mappings.
 */
#include <poll.h>
#include <string.h>
#include <unistd.h>
#include "internal.h"

int sio__mask_bits(uint64_t mask)
{
	return mask == UINT64_MAX ? 64 : __builtin_ctzll(~mask);
}

int sio_device_set_dma_mask(struct sio_device *dev, uint64_t mask)
{
	if (!dev)
		return sio__err(EINVAL, "device handle is NULL");
	/* 2^n - 1: the mask plus one is a power of two (or wraps to 0) */
	if ((mask & (mask + 1)) || mask < 4095)
		return sio__err(EINVAL, "DMA mask 0x%llx is not 2^n - 1 with 12 <= n <= 64",
				(unsigned long long)mask);
	dev->dma_mask = mask;
	return 0;
}

uint64_t sio_device_dma_mask(const struct sio_device *dev)
{
	return dev ? dev->dma_mask : 0;
}

int sio__dma_map_masked(struct sio_device *dev, struct sio_segment *seg, uint64_t *bus)
{
	struct sio_segment_info si;
	uint64_t b;
	int ret = sio_segment_info(seg, &si);

	if (ret)
		return ret;
	ret = dev->ops->dma_map(dev, seg, &b);
	if (ret)
		return ret;
	if (b > dev->dma_mask || si.size - 1 > dev->dma_mask - b) {
		/* say why after the unmap, whose own message would hide it */
		dev->ops->dma_unmap(dev, seg);
		return sio__err(ERANGE, "segment %u of node %d (%llu bytes) was given bus address 0x%llx, "
				"beyond device %u's DMA mask 0x%llx (%d bits)", si.id, si.node,
				(unsigned long long)si.size, (unsigned long long)b, dev->id,
				(unsigned long long)dev->dma_mask, sio__mask_bits(dev->dma_mask));
	}
	*bus = b;
	return 0;
}

const char *sio_irq_kind_name(int kind)
{
	switch (kind) {
	case SIO_IRQ_INTX: return "INTx";
	case SIO_IRQ_MSI: return "MSI";
	case SIO_IRQ_MSIX: return "MSI-X";
	default: return "none";
	}
}

/* Vectors 0..@nvec-1, or of them @only alone (-1: all). */
static int irq_enable(struct sio_device *dev, unsigned int kinds, int nvec, int only)
{
	int fds[SIO_IRQ_MAX_VECS], kind;

	if (!dev)
		return sio__err(EINVAL, "device handle is NULL");
	if (nvec < 1 || nvec > SIO_IRQ_MAX_VECS)
		return sio__err(EINVAL, "%d interrupt vectors asked for: 1..%d", nvec, SIO_IRQ_MAX_VECS);
	if (kinds & ~(SIO_IRQ_F(SIO_IRQ_INTX) | SIO_IRQ_F(SIO_IRQ_MSI) | SIO_IRQ_F(SIO_IRQ_MSIX)))
		return sio__err(EINVAL, "interrupt kinds 0x%x: unknown bits", kinds);
	if (dev->irq_kind)
		return sio__err(EBUSY, "device %u: interrupts are enabled on this borrow already (%s)",
				dev->id, sio_irq_kind_name(dev->irq_kind));
	if (!dev->ops->irq_enable)
		return sio__err(EOPNOTSUPP, "device %u: the %s backend delivers no interrupts",
				dev->id, dev->ops->name);
	for (int i = 0; i < nvec; i++)
		fds[i] = only < 0 || i == only ? -1 : SIO__IRQ_SKIP;
	kind = dev->ops->irq_enable(dev, kinds, nvec, fds);
	if (kind < 0)
		return kind;
	for (int i = 0; i < nvec; i++)	/* a backend that binds all may leave a mark */
		dev->irq_fd[i] = fds[i] < 0 ? -1 : fds[i];
	dev->irq_nvec = nvec;
	dev->irq_kind = kind;
	return kind;
}

int sio_device_irq_enable(struct sio_device *dev, unsigned int kinds, int nvec)
{
	return irq_enable(dev, kinds, nvec, -1);
}

int sio_device_irq_enable_one(struct sio_device *dev, unsigned int kinds, int vec)
{
	if (vec < 0 || vec >= SIO_IRQ_MAX_VECS)
		return sio__err(EINVAL, "interrupt vector %d: 0..%d", vec, SIO_IRQ_MAX_VECS - 1);
	return irq_enable(dev, kinds, vec + 1, vec);
}

static int vec_check(struct sio_device *dev, int vec)
{
	if (!dev)
		return sio__err(EINVAL, "device handle is NULL");
	if (!dev->irq_kind)
		return sio__err(EINVAL, "device %u: interrupts are not enabled on this borrow", dev->id);
	if (vec < 0 || vec >= dev->irq_nvec || dev->irq_fd[vec] < 0)
		return sio__err(EINVAL, "device %u: vector %d is not enabled on this borrow", dev->id,
				vec);
	return 0;
}

int sio_device_irq_fd(struct sio_device *dev, int vec)
{
	int ret = vec_check(dev, vec);

	return ret ? ret : dev->irq_fd[vec];
}

/* What vector @vec has pending, without blocking: a count or -EAGAIN. */
static int take(struct sio_device *dev, int vec)
{
	uint64_t n;
	ssize_t r;

	if (dev->ops->irq_take)
		return dev->ops->irq_take(dev, vec);
	r = read(dev->irq_fd[vec], &n, sizeof(n));	/* an eventfd: the count, reset */
	if (r == sizeof(n))
		return n > INT32_MAX ? INT32_MAX : (int)n;
	if (r < 0 && errno != EAGAIN)
		return sio__err(errno, "device %u: reading vector %d: %s", dev->id, vec, strerror(errno));
	return -EAGAIN;
}

int sio_device_irq_wait(struct sio_device *dev, int vec, int timeout_ms)
{
	struct pollfd p;
	int ret = vec_check(dev, vec);

	if (ret)
		return ret;
	p = (struct pollfd){ .fd = dev->irq_fd[vec], .events = POLLIN };
	/*
	 * Poll first, then take: an interrupt already pending makes the poll
	 * return at once, and a sleep costs the poll and one take, not a take
	 * that finds nothing before it as well.
	 */
	for (;;) {
		if (timeout_ms) {
			ret = poll(&p, 1, timeout_ms);
			if (ret < 0)
				return sio__err(errno, "device %u: waiting for vector %d: %s", dev->id,
						vec, strerror(errno));
			if (!ret)
				return sio__err(ETIMEDOUT, "device %u: no interrupt on vector %d "
						"within %d ms", dev->id, vec, timeout_ms);
		}
		ret = take(dev, vec);
		if (ret != -EAGAIN)
			return ret;
		if (!timeout_ms)
			return sio__err(EAGAIN, "device %u: no interrupt pending on vector %d", dev->id, vec);
		/* readable and nothing to take (spurious): poll again, with the
		 * full timeout: rare, and bounded by the interrupts that come */
	}
}

int sio_device_irq_ack(struct sio_device *dev, int vec)
{
	int ret = vec_check(dev, vec);

	if (ret || !dev->ops->irq_unmask)
		return ret;
	return dev->ops->irq_unmask(dev, vec);
}

void sio_device_irq_disable(struct sio_device *dev)
{
	if (!dev || !dev->irq_kind)
		return;
	dev->ops->irq_disable(dev);
	dev->irq_kind = dev->irq_nvec = 0;
}
