/* SPDX-License-Identifier: MIT */
#ifndef SIO_VFIO_H
#define SIO_VFIO_H

/*
 * The vfio backend's own layer: opening a PCI function bound to vfio-pci
 * (VFIO type1 container, or iommufd), its regions and config space, DMA
 * mapping through the IOMMU with an IOVA allocator that keeps to the ranges
 * the kernel reports, and PCI enumeration with libpciaccess. It knows
 * nothing of the registry. What programs may call of it (PCI listing, probe,
 * the lender) is public, in <smartio/vfio.h>.
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <smartio/fabric.h>
#include <smartio/vfio.h>

/* The library's error setter, as in core/internal.h. */
#define sio__err sio_err_set

#define SIO_VFIO_NREGIONS	9	/* BAR0..5, ROM, config, VGA */
#define SIO_VFIO_CONFIG		7	/* VFIO_PCI_CONFIG_REGION_INDEX */

struct sio_iova_range {
	uint64_t start, last;	/* inclusive, as the kernel reports them */
};

/* First-fit allocator over the usable IOVA ranges. */
struct sio_iova_alloc {
	struct sio_iova_range ranges[SIO_VFIO_MAX_RANGES];
	int nranges;
	struct sio_iova_range *used;	/* sorted by start */
	int nused, cap;
};

struct sio_vfio_region {
	uint64_t offset;	/* in the device fd */
	uint64_t size;
	uint32_t flags;		/* VFIO_REGION_INFO_FLAG_* */
};

struct sio_vfio_dev {
	char bdf[16];
	enum sio_vfio_mode mode;	/* what was actually opened */
	int fd;				/* the device */
	int container;			/* type1: /dev/vfio/vfio */
	int group;			/* type1: /dev/vfio/N */
	int iommufd;			/* iommufd: /dev/iommu */
	uint32_t ioas;
	int iommu_group;
	uint64_t pgsizes;		/* IOMMU page sizes; smallest is the granule */
	struct sio_vfio_region region[SIO_VFIO_NREGIONS];
	struct sio_iova_alloc iova;
	int msix_standby;		/* MSI-X vectors enabled with no eventfd (irq.c) */
	bool msix_keep;			/* put MSI-X back to standby when a borrower leaves */
};

/*
 * sio_vfio_open() - open a function bound to vfio-pci
 * Errors say which of these it is: not bound to vfio-pci (-ENODEV), no IOMMU
 * group or no IOMMU at all (-ENODEV), group not viable (-EBUSY), permission
 * (-EACCES).
 */
int sio_vfio_open(const char *bdf, enum sio_vfio_mode mode, struct sio_vfio_dev *d);
void sio_vfio_close(struct sio_vfio_dev *d);

/*
 * A function's config space as a file: vfio's config region of the device
 * fd, or sysfs's config file (uio). Shared by both backends.
 */
struct sio_pci_cfg {
	const char *bdf;
	int fd;
	uint64_t base, size;	/* where config space starts in @fd, its length */
};

int sio_pci_cfg_read(const struct sio_pci_cfg *c, uint32_t off, void *buf, size_t len);
int sio_pci_cfg_write(const struct sio_pci_cfg *c, uint32_t off, const void *buf, size_t len);
/* Set the command register's memory-space and bus-master bits. */
int sio_pci_enable_master(const struct sio_pci_cfg *c);
/* The bus address a BAR is programmed at (from config space). */
int sio_pci_bar_bus(const struct sio_pci_cfg *c, int bar, uint64_t *bus);
/* Is an IOMMU on (any group in /sys/kernel/iommu_groups)? */
bool sio_pci_iommu_active(void);

int sio_vfio_cfg_read(struct sio_vfio_dev *d, uint32_t off, void *buf, size_t len);
int sio_vfio_cfg_write(struct sio_vfio_dev *d, uint32_t off, const void *buf, size_t len);
/* Set the command register's memory-space and bus-master bits. */
int sio_vfio_enable_master(struct sio_vfio_dev *d);
/* The bus address a BAR is programmed at (from config space). */
int sio_vfio_bar_bus(struct sio_vfio_dev *d, int bar, uint64_t *bus);
/* mmap a BAR of this process's device fd. */
int sio_vfio_bar_mmap(struct sio_vfio_dev *d, int bar, void **vaddr, uint64_t *size);

/* Map @len bytes at @vaddr for device DMA; picks the IOVA. */
int sio_vfio_dma_map(struct sio_vfio_dev *d, void *vaddr, uint64_t len, uint64_t *iova);
/* ... with the IOVA at or below @limit (the device's DMA mask): -ERANGE naming it. */
int sio_vfio_dma_map_below(struct sio_vfio_dev *d, void *vaddr, uint64_t len, uint64_t limit,
			   uint64_t *iova);
int sio_vfio_dma_unmap(struct sio_vfio_dev *d, uint64_t iova, uint64_t len);

void sio_iova_init(struct sio_iova_alloc *a, const struct sio_iova_range *r, int n);
int sio_iova_get(struct sio_iova_alloc *a, uint64_t len, uint64_t align, uint64_t *iova);
/* ... the whole extent at or below @limit. */
int sio_iova_get_below(struct sio_iova_alloc *a, uint64_t len, uint64_t align, uint64_t limit,
		       uint64_t *iova);
int sio_iova_put(struct sio_iova_alloc *a, uint64_t iova);
void sio_iova_fini(struct sio_iova_alloc *a);

/*
 * Interrupts (irq.c): enable @nvec vectors of the best kind @kinds allows
 * (SIO_IRQ_F bits, 0: any; MSI-X, MSI, then INTx), each signalling the
 * eventfd @fds[i]; the kind, or -EOPNOTSUPP naming what the function has.
 */
int sio_vfio_irq_set(struct sio_vfio_dev *d, unsigned int kinds, int nvec, const int *fds);
/* Disable the vectors of @kind again (MSI-X goes back to standby). */
int sio_vfio_irq_off(struct sio_vfio_dev *d, int kind);
/*
 * Enable the function's MSI-X vectors (up to SIO_IRQ_MAX_VECS) with no
 * eventfd behind them: a controller may refuse a queue on a vector while
 * MSI-X is off (QEMU's NVMe answers Invalid Interrupt Vector), and a
 * borrower's queue pair exists before it takes its vector. 0, or -errno
 * (nothing changed) for a function without MSI-X or a kernel that refuses.
 */
int sio_vfio_irq_standby(struct sio_vfio_dev *d);
/* Unmask INTx after the device was serviced (vfio masks it when it fires). */
int sio_vfio_irq_unmask(struct sio_vfio_dev *d);
/*
 * An eventfd that vfio-pci signals when the kernel wants the function back
 * (its removal, an unbind): the kernel then waits, asking again, until every
 * user has closed it. The fd, or -errno (-EOPNOTSUPP: a kernel without it).
 */
int sio_vfio_req_eventfd(struct sio_vfio_dev *d);

#endif
