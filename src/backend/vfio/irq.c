/* SPDX-License-Identifier: MIT */
/*
 * A vfio function's interrupts: VFIO_DEVICE_GET_IRQ_INFO says how many
 * vectors each kind has; VFIO_DEVICE_SET_IRQS points them at eventfds
 * (ACTION_TRIGGER), takes them away (count 0), and unmasks INTx, which
 * the kernel masks each time it fires, until the driver has serviced the
 * device (a level interrupt would otherwise fire again at once).
 *
 * MSI-X can stand by: enabled on the function, every vector's eventfd -1
 * (the kernel leaves such a vector masked; what the device signals there
 * waits in its pending bit). A borrower's eventfds then replace those of
 * vectors [0, n) without MSI-X going off, and its leaving puts -1 back.
 */
#include <errno.h>
#include <linux/vfio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/eventfd.h>
#include <sys/ioctl.h>
#include <smartio/irq.h>

#include "vfio.h"

/* VFIO's index of each kind */
static int index_of(int kind)
{
	return kind == SIO_IRQ_MSIX ? VFIO_PCI_MSIX_IRQ_INDEX :
	       kind == SIO_IRQ_MSI ? VFIO_PCI_MSI_IRQ_INDEX : VFIO_PCI_INTX_IRQ_INDEX;
}

static uint32_t count_of(struct sio_vfio_dev *d, int kind)
{
	struct vfio_irq_info info = { .argsz = sizeof(info), .index = (uint32_t)index_of(kind) };

	return ioctl(d->fd, VFIO_DEVICE_GET_IRQ_INFO, &info) ? 0 : info.count;
}

/* SET_IRQS on VFIO's @index: @flags, vectors [0, @n), with eventfds @fds. */
static int set_irqs(struct sio_vfio_dev *d, uint32_t index, uint32_t flags, int n,
		    const int *fds)
{
	size_t sz = sizeof(struct vfio_irq_set) + (size_t)n * sizeof(int32_t);
	struct vfio_irq_set *s = calloc(1, sz);
	int rc;

	if (!s)
		return sio__err(ENOMEM, "vfio: out of memory");
	s->argsz = (uint32_t)sz;
	s->flags = flags;
	s->index = index;
	s->count = (uint32_t)n;
	if (n && fds)
		memcpy(s->data, fds, (size_t)n * sizeof(int32_t));
	rc = ioctl(d->fd, VFIO_DEVICE_SET_IRQS, s) ? -errno : 0;
	free(s);
	return rc;
}

int sio_vfio_irq_standby(struct sio_vfio_dev *d)
{
	int fds[SIO_IRQ_MAX_VECS], n = (int)count_of(d, SIO_IRQ_MSIX), rc;

	if (n > SIO_IRQ_MAX_VECS)
		n = SIO_IRQ_MAX_VECS;
	if (n < 1)
		return -EOPNOTSUPP;
	for (int i = 0; i < n; i++)
		fds[i] = -1;
	rc = set_irqs(d, VFIO_PCI_MSIX_IRQ_INDEX, VFIO_IRQ_SET_DATA_EVENTFD |
		      VFIO_IRQ_SET_ACTION_TRIGGER, n, fds);
	d->msix_standby = rc ? 0 : n;
	d->msix_keep |= !rc;
	return rc;
}

/* Out of standby, for another kind or more vectors than it has. */
static void standby_off(struct sio_vfio_dev *d)
{
	if (d->msix_standby)
		set_irqs(d, VFIO_PCI_MSIX_IRQ_INDEX, VFIO_IRQ_SET_DATA_NONE |
			 VFIO_IRQ_SET_ACTION_TRIGGER, 0, NULL);
	d->msix_standby = 0;
}

int sio_vfio_irq_set(struct sio_vfio_dev *d, unsigned int kinds, int nvec, const int *fds)
{
	static const int order[] = { SIO_IRQ_MSIX, SIO_IRQ_MSI, SIO_IRQ_INTX };
	uint32_t have[4] = { 0 };
	int rc;

	if (d->msix_standby >= nvec && (!kinds || (kinds & SIO_IRQ_F(SIO_IRQ_MSIX)))) {
		rc = set_irqs(d, VFIO_PCI_MSIX_IRQ_INDEX, VFIO_IRQ_SET_DATA_EVENTFD |
			      VFIO_IRQ_SET_ACTION_TRIGGER, nvec, fds);
		if (!rc)
			return SIO_IRQ_MSIX;
		return sio__err(-rc, "vfio: %s: pointing %d MSI-X vector(s) at eventfds: %s",
				d->bdf, nvec, strerror(-rc));
	}
	standby_off(d);

	for (int i = 0; i < 3; i++) {
		int k = order[i];

		have[k] = count_of(d, k);
		if ((kinds && !(kinds & SIO_IRQ_F(k))) || have[k] < (uint32_t)nvec)
			continue;
		rc = set_irqs(d, (uint32_t)index_of(k), VFIO_IRQ_SET_DATA_EVENTFD |
			      VFIO_IRQ_SET_ACTION_TRIGGER, nvec, fds);
		if (!rc)
			return k;
		return sio__err(-rc, "vfio: %s: enabling %d %s vector(s): %s", d->bdf, nvec,
				sio_irq_kind_name(k), strerror(-rc));
	}
	return sio__err(EOPNOTSUPP, "vfio: %s has no %d vector(s) of the kinds asked for "
			"(it has MSI-X %u, MSI %u, INTx %u)", d->bdf, nvec, have[SIO_IRQ_MSIX],
			have[SIO_IRQ_MSI], have[SIO_IRQ_INTX]);
}

int sio_vfio_irq_off(struct sio_vfio_dev *d, int kind)
{
	int rc;

	if (kind == SIO_IRQ_MSIX && d->msix_standby)	/* back to standby: -1 for each */
		return sio_vfio_irq_standby(d) ? sio__err(EIO, "vfio: %s: MSI-X back to standby "
							"failed", d->bdf) : 0;
	rc = set_irqs(d, (uint32_t)index_of(kind), VFIO_IRQ_SET_DATA_NONE |
		      VFIO_IRQ_SET_ACTION_TRIGGER, 0, NULL);
	if (rc)
		return sio__err(-rc, "vfio: %s: disabling %s: %s", d->bdf, sio_irq_kind_name(kind),
				strerror(-rc));
	if (d->msix_keep)	/* MSI or INTx went: MSI-X stands by again */
		sio_vfio_irq_standby(d);
	return 0;
}

int sio_vfio_irq_unmask(struct sio_vfio_dev *d)
{
	size_t sz = sizeof(struct vfio_irq_set);
	struct vfio_irq_set s = { .argsz = (uint32_t)sz, .index = VFIO_PCI_INTX_IRQ_INDEX,
				  .flags = VFIO_IRQ_SET_DATA_NONE | VFIO_IRQ_SET_ACTION_UNMASK,
				  .start = 0, .count = 1 };

	if (ioctl(d->fd, VFIO_DEVICE_SET_IRQS, &s))
		return sio__err(errno, "vfio: %s: unmasking INTx: %s", d->bdf, strerror(errno));
	return 0;
}

int sio_vfio_req_eventfd(struct sio_vfio_dev *d)
{
	struct vfio_irq_info info = { .argsz = sizeof(info), .index = VFIO_PCI_REQ_IRQ_INDEX };
	int fd, rc;

	if (ioctl(d->fd, VFIO_DEVICE_GET_IRQ_INFO, &info) || !info.count)
		return -EOPNOTSUPP;
	fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (fd < 0)
		return -errno;
	rc = set_irqs(d, VFIO_PCI_REQ_IRQ_INDEX, VFIO_IRQ_SET_DATA_EVENTFD |
		      VFIO_IRQ_SET_ACTION_TRIGGER, 1, &fd);
	if (rc) {
		close(fd);
		return rc;
	}
	return fd;
}
