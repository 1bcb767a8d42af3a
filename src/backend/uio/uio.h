/* SPDX-License-Identifier: MIT */
#ifndef SIO_UIO_H
#define SIO_UIO_H

/*
 * The uio backend's own layer: a PCI function bound to uio_pci_generic on a
 * host without an IOMMU. Its BARs are sysfs's resourceN files, its config
 * space sysfs's config file; the device is given physical addresses, so
 * only memory that stays put may be mapped for it: huge pages (hugetlbfs),
 * locked, translated through /proc/self/pagemap, one physically contiguous
 * range per mapping. The lender (vfio/lend.h) serves it to borrowers.
 */
#include <stdbool.h>
#include <stdint.h>

#include "vfio/vfio.h"

struct sio_uio_dev {
	char bdf[16];
	int uio;		/* N of /dev/uioN */
	int cfg_fd;		/* /sys/bus/pci/devices/BDF/config */
	uint64_t cfg_size;
	int res_fd[SIO_MAX_BARS];	/* .../resourceN, -1 where absent */
	uint64_t bar_size[SIO_MAX_BARS];
	bool bar_io[SIO_MAX_BARS];	/* an I/O port BAR: not mmappable */
};

/*
 * sio_uio_host_check() - may this host give a device physical addresses?
 * Refuses, saying which: an IOMMU is on (-EOPNOTSUPP: use vfio), not root
 * (-EPERM).
 */
int sio_uio_host_check(void);

/*
 * sio_uio_huge_check() - are there huge pages to give? -ENOMEM when no
 * hugetlbfs is mounted or no huge pages are reserved; else *@hugesz is
 * their size (libhugetlbfs's default).
 */
int sio_uio_huge_check(long *hugesz);

/*
 * sio_uio_open() - open a function bound to uio_pci_generic, after
 * sio_uio_host_check(): -ENODEV when it is absent or bound elsewhere.
 */
int sio_uio_open(const char *bdf, struct sio_uio_dev *d);
void sio_uio_close(struct sio_uio_dev *d);

/*
 * sio_uio_phys() - the physical address of [@va, @va + @len) of this process
 * Every page must be resident, a hugetlb page (from /proc/kpageflags), and
 * the range one physically contiguous run; -EPERM when the kernel hides
 * physical addresses (not CAP_SYS_ADMIN), -EOPNOTSUPP naming what is not
 * so. The caller keeps the range mapped and locked while the device uses it.
 */
int sio_uio_phys(const void *va, uint64_t len, uint64_t *phys);

#endif
