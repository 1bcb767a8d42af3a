/* SPDX-License-Identifier: MIT */
#ifndef SMARTIO_VFIO_H
#define SMARTIO_VFIO_H

/**
 * DOC: vfio: the real PCI functions of this host
 *
 * What the programs around the vfio device backend need (`smartio vfio`):
 * list this host's PCI functions and how they are bound, probe one through
 * vfio-pci, and lend one to a fabric. Once lent, a function is a device of
 * the fabric like any other (SIO_BACKEND_VFIO): drivers borrow it through
 * <smartio/device.h>. Not part of the bundle. A libsmartio built without
 * the vfio backend (-Dvfio=disabled) answers every call here with
 * -ENOTSUP.
 */

#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <smartio/device.h>	/* SIO_MAX_BARS */

#ifdef __cplusplus
extern "C" {
#endif

#define SIO_VFIO_MAX_RANGES	32	/* IOVA ranges kept from the kernel's list */

enum sio_vfio_mode {
	SIO_VFIO_AUTO = 0,	/* iommufd where present, else type1 */
	SIO_VFIO_TYPE1,		/* a VFIO type1 container */
	SIO_VFIO_IOMMUFD,	/* /dev/iommu */
};

/**
 * struct sio_pci_fn - a PCI function, as libpciaccess and sysfs see it
 * @bdf: its address, "0000:00:04.0"
 * @class_code: PCI class code (24 bits)
 * @vendor: PCI vendor id
 * @device: PCI device id
 * @driver: the driver it is bound to, "" if none
 * @iommu_group: its IOMMU group, -1 if none (no IOMMU)
 */
struct sio_pci_fn {
	char bdf[16];
	uint32_t class_code;
	uint16_t vendor, device;
	char driver[32];
	int iommu_group;
};

/**
 * sio_pci_scan() - list the PCI functions whose class matches
 * @class_code: the class to match under @mask
 * @mask: 0 lists every function
 * @out: array to fill (may be NULL to count)
 * @max: its length
 * Return: the number found (may exceed @max), or -errno.
 */
int sio_pci_scan(uint32_t class_code, uint32_t mask, struct sio_pci_fn *out, int max);

/**
 * sio_pci_fn_get() - one function's facts (driver, IOMMU group, ids)
 * @bdf: its address, as sio_pci_bdf_parse() gives it
 * @out: filled in
 * Return: 0, -ENODEV when there is no such function.
 */
int sio_pci_fn_get(const char *bdf, struct sio_pci_fn *out);

/**
 * sio_pci_bdf_parse() - normalise a PCI address
 * @in: "4:00.0", "00:04.0" or "0000:00:04.0"
 * @out: "0000:00:04.0"
 * Return: 0 or -EINVAL naming what is wrong.
 */
int sio_pci_bdf_parse(const char *in, char out[16]);

/**
 * struct sio_vfio_probe - what opening a function through vfio found
 * @bdf: its address
 * @mode: how it was opened (type1 or iommufd)
 * @iommu_group: its IOMMU group
 * @pgsizes: the IOMMU's page sizes (a bit per size)
 * @nranges: entries of @ranges
 * @ranges: the IOVA ranges the IOMMU allows, inclusive
 * @bar: per BAR, its size (0: absent), the bus address it is programmed
 *	at, and whether vfio lets it be mmapped
 * @class_code: PCI class code from config space
 * @nvme: it is an NVMe controller, and @nvme_cap and @nvme_vs were read
 *	through BAR0
 * @nvme_cap: CAP
 * @nvme_vs: VS
 * @dma_iova: where a 1 MiB buffer was mapped for the device's DMA (and
 *	unmapped again): the IOMMU path works
 */
struct sio_vfio_probe {
	char bdf[16];
	enum sio_vfio_mode mode;
	int iommu_group;
	uint64_t pgsizes;
	int nranges;
	struct {
		uint64_t start, last;
	} ranges[SIO_VFIO_MAX_RANGES];
	struct {
		uint64_t size, bus;
		bool mmap;
	} bar[SIO_MAX_BARS];
	uint32_t class_code;
	bool nvme;
	uint64_t nvme_cap;
	uint32_t nvme_vs;
	uint64_t dma_iova;
};

/**
 * sio_vfio_probe() - open a function bound to vfio-pci and try it
 * @bdf: its address (any form sio_pci_bdf_parse() takes)
 * @mode: how to open it
 * @out: what was found
 *
 * Opens the function, reads its regions and IOVA ranges, enables bus
 * mastering, reads CAP and VS of an NVMe controller, and maps and unmaps a
 * buffer through the IOMMU; then closes it.
 * Return: 0, or -errno saying which it is: not bound to vfio-pci or no
 * IOMMU (-ENODEV), its group held by another process (-EBUSY), permission
 * (-EACCES), a bad address (-EINVAL).
 */
int sio_vfio_probe(const char *bdf, enum sio_vfio_mode mode, struct sio_vfio_probe *out);

/**
 * sio_vfio_lend() - lend a function bound to vfio-pci to a fabric
 * @fabric: fabric name; NULL uses $SMARTIO_FABRIC (joined as $SMARTIO_NODE)
 * @bdf: its address
 * @mode: how to open it
 * @stop: serving ends when *@stop becomes non-zero (a signal handler sets
 *	it); NULL serves until an error
 * @log: progress and the borrowers' comings and goings (may be NULL)
 *
 * Opens the function, enables bus mastering, registers it as a device of
 * @fabric and serves its borrowers (BAR access and DMA mappings through
 * the IOMMU) until told to stop. A borrower that goes away, crashed or
 * not, leaves nothing mapped; the device leaves the fabric with the lender.
 * No doorbells are described: borrowers of other kernels that no window
 * reaches BAR0 from cannot store to it (sio_vfio_lend_opts() describes).
 * Return: 0 once stopped, or -errno.
 */
int sio_vfio_lend(const char *fabric, const char *bdf, enum sio_vfio_mode mode,
		  volatile sig_atomic_t *stop, FILE *log);

/**
 * struct sio_lend_opts - what a driver adds to a lend
 * @doorbells: optional: describe the function's doorbells in @db from its
 *	BAR0 (@bar0 mapped, @size bytes), for the relay that serves borrowers
 *	of other kernels (struct sio_doorbells); 0, or -errno to refuse the
 *	lend. Called once, before the device is registered elsewhere; NULL,
 *	or a @db left with no count: no doorbells are relayed.
 * @arg: @doorbells' last argument
 */
struct sio_lend_opts {
	int (*doorbells)(volatile void *bar0, uint64_t size, struct sio_doorbells *db, void *arg);
	void *arg;
};

/**
 * sio_vfio_lend_opts() - sio_vfio_lend() with a driver's description
 * @fabric: fabric name; NULL uses $SMARTIO_FABRIC (joined as $SMARTIO_NODE)
 * @bdf: its address
 * @mode: how to open it
 * @o: what the driver adds (NULL: nothing, as sio_vfio_lend())
 * @stop: serving ends when *@stop becomes non-zero; NULL serves until an error
 * @log: progress and the borrowers' comings and goings (may be NULL)
 *
 * As sio_vfio_lend(); on a fabric of several kernels, the relay forwards
 * the doorbells @o describes (a driver's lender program: nvme-lend).
 * Return: 0 once stopped, or -errno.
 */
int sio_vfio_lend_opts(const char *fabric, const char *bdf, enum sio_vfio_mode mode,
		       const struct sio_lend_opts *o, volatile sig_atomic_t *stop, FILE *log);

/**
 * sio_uio_lend_opts() - sio_uio_lend() with a driver's description
 * @fabric: fabric name; NULL uses $SMARTIO_FABRIC (joined as $SMARTIO_NODE)
 * @bdf: its address
 * @o: what the driver adds (NULL: nothing, as sio_uio_lend())
 * @stop: serving ends when *@stop becomes non-zero; NULL serves until an error
 * @log: progress and the borrowers' comings and goings (may be NULL)
 *
 * As sio_uio_lend(), with @o as sio_vfio_lend_opts() takes it.
 * Return: 0 once stopped, or -errno.
 */
int sio_uio_lend_opts(const char *fabric, const char *bdf, const struct sio_lend_opts *o,
		      volatile sig_atomic_t *stop, FILE *log);

/**
 * sio_uio_lend() - lend a function bound to uio_pci_generic (no IOMMU)
 * @fabric: fabric name; NULL uses $SMARTIO_FABRIC (joined as $SMARTIO_NODE)
 * @bdf: its address
 * @stop: serving ends when *@stop becomes non-zero; NULL serves until an error
 * @log: progress and the borrowers' comings and goings (may be NULL)
 *
 * For hosts without an IOMMU: registers the function as a device of @fabric
 * (SIO_BACKEND_UIO), enables bus mastering, and serves its borrowers as
 * sio_vfio_lend() does, except that a segment mapped for the device's DMA
 * is given by its physical address: it must be on huge pages and within one
 * physically contiguous run (one huge page always is). Bus mastering is
 * turned off again when the lender stops. docs/uio.md says more.
 * Return: 0 once stopped, or -errno, refusing what is unsafe or impossible:
 * an IOMMU is on (-EOPNOTSUPP: use vfio), not root (-EPERM), the function
 * absent or not bound to uio_pci_generic (-ENODEV), no hugetlbfs mounted or
 * no huge pages reserved (-ENOMEM). Without the uio backend, -ENOTSUP.
 */
int sio_uio_lend(const char *fabric, const char *bdf, volatile sig_atomic_t *stop, FILE *log);

/**
 * sio_vfio_doorbell() - receive a shmwin window's doorbells for this kernel
 * @fabric: a fabric of the shmwin backend; NULL uses $SMARTIO_FABRIC
 * @bdf: the ivshmem-doorbell function whose BAR2 is the window, bound to
 *	vfio-pci
 * @mode: how to open it
 * @stop: serving ends when *@stop becomes non-zero; NULL: until an error
 * @log: progress and, at the end, how many interrupts came (may be NULL)
 *
 * Routes the function's MSI-X vector 0 to an eventfd and wakes the waiters
 * of this kernel at each interrupt, so that notifications from other
 * kernels need no polling. One such process per kernel; without it the
 * fabric polls.
 * Return: 0 once stopped, or -errno.
 */
int sio_vfio_doorbell(const char *fabric, const char *bdf, enum sio_vfio_mode mode,
		      volatile sig_atomic_t *stop, FILE *log);

#ifdef __cplusplus
}
#endif
#endif
