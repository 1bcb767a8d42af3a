/* SPDX-License-Identifier: MIT */
/*
 * The doorbell receiver of a shmwin fabric (sio_vfio_doorbell()): holds the
 * ivshmem-doorbell function whose BAR2 is the window through vfio-pci,
 * routes its MSI-X vector 0 to an eventfd (VFIO_DEVICE_SET_IRQS) and hands
 * that to the fabric backend's doorbell_serve op (shmwin's), which wakes
 * this kernel's waiters at each interrupt. The window itself stays mapped
 * through sysfs by every process.
 */
#include <errno.h>
#include <linux/vfio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/eventfd.h>
#include <sys/ioctl.h>

#include "internal.h"
#include "vfio.h"

static int msix_to(struct sio_vfio_dev *d, int efd)
{
	char buf[sizeof(struct vfio_irq_set) + sizeof(int)];
	struct vfio_irq_set *set = (struct vfio_irq_set *)buf;

	set->argsz = sizeof(buf);
	set->flags = VFIO_IRQ_SET_DATA_EVENTFD | VFIO_IRQ_SET_ACTION_TRIGGER;
	set->index = VFIO_PCI_MSIX_IRQ_INDEX;
	set->start = 0;
	set->count = 1;
	memcpy(set->data, &efd, sizeof(int));
	if (ioctl(d->fd, VFIO_DEVICE_SET_IRQS, set))
		return sio__err(errno, "%s: cannot route MSI-X vector 0 to an eventfd: %s", d->bdf,
				strerror(errno));
	return 0;
}

int sio_vfio_doorbell(const char *fabric, const char *bdf, enum sio_vfio_mode mode,
		      volatile sig_atomic_t *stop, FILE *log)
{
	struct sio_vfio_dev d;
	struct sio_fabric *f = NULL;
	int efd = -1, rc;

	if ((rc = sio_fabric_open(fabric, -1, &f)))
		return rc;
	/* checked before the function is touched: only a fabric with doorbells takes them */
	if (!f->ops->doorbell_serve) {
		rc = sio__err(EINVAL, "fabric '%s' is of the %s backend, which has no doorbells to receive",
			      f->name, f->ops->name);
		sio_fabric_close(f);
		return rc;
	}
	if ((rc = sio_vfio_open(bdf, mode, &d))) {
		sio_fabric_close(f);
		return rc;
	}
	/* MSI-X messages are writes of the function: it must master the bus */
	if (!(rc = sio_vfio_enable_master(&d)) &&
	    (efd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK)) < 0)
		rc = sio__err(errno, "eventfd: %s", strerror(errno));
	if (!rc && !(rc = msix_to(&d, efd)))
		rc = f->ops->doorbell_serve(f, efd, stop, log);
	if (efd >= 0)
		close(efd);
	sio_vfio_close(&d);
	sio_fabric_close(f);
	return rc;
}
