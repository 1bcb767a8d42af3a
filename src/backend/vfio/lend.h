/* SPDX-License-Identifier: MIT */
#ifndef SIO_LEND_H
#define SIO_LEND_H

/*
 * The lender of a real PCI function on this host, shared by the vfio and
 * uio backends: it registers the function in a fabric and serves borrowers
 * over a unix socket (proto.h): an fd to mmap a BAR from, and DMA mappings
 * of segments. What differs between the backends is here: how a BAR is
 * reached and how memory becomes reachable for the device's DMA.
 */
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "vfio.h"

/**
 * struct sio_lend_dev - what the lender needs of the function it serves
 * @kind: the backend's name ("vfio", "uio"): messages, the socket's name
 * @backend: its enum sio_device_backend
 * @how: how it is held, for the lender's first line ("via VFIO type1 ...")
 * @cfg: its config space
 * @bar: per BAR: its size (0: absent), the fd a borrower mmaps it from and
 *	at which offset, and whether it may be mmapped at all
 * @priv: the backend's own state, passed to the two calls below
 * @dma_map: make [@va, @va + @len) of this process reachable for the
 *	device's DMA at a bus address no higher than @mask (the borrower's
 *	DMA mask); *@bus is the address the device must use
 * @dma_unmap: undo @dma_map
 * @dma_mask: the highest bus address the device is given without an IOMMU
 *	(the fabric's window on a fabric of several kernels); unused by vfio
 * @irq_set: point @nvec vectors of the first kind in @kinds (SIO_IRQ_*
 *	bits) that the function offers at eventfds @fds; the kind used, or
 *	-errno. NULL: the backend serves no interrupts.
 * @irq_off: stop the vectors of @kind
 * @irq_unmask: unmask INTx after the borrower handled it
 * @opts: what the driver adds (its doorbells), or NULL
 * @req_fd: an eventfd the kernel signals when it wants the function back
 *	(vfio's device request: its removal, an unbind), or -1: the lend
 *	then ends, as at a stop, and the function is closed
 */
struct sio_lend_dev {
	const char *kind;
	int backend;
	char how[160];
	struct sio_pci_cfg cfg;
	struct {
		uint64_t size, offset;
		int fd;
		bool mmap;
	} bar[SIO_MAX_BARS];
	void *priv;
	int (*dma_map)(void *priv, void *va, uint64_t len, uint64_t mask, uint64_t *bus);
	int (*dma_unmap)(void *priv, void *va, uint64_t bus, uint64_t len);
	uint64_t dma_mask;
	int (*irq_set)(void *priv, unsigned int kinds, int nvec, const int *fds);
	int (*irq_off)(void *priv, int kind);
	int (*irq_unmask)(void *priv);
	const struct sio_lend_opts *opts;
	int req_fd;
};

/*
 * Enable bus mastering, register @d in @fabric and serve its borrowers until
 * *@stop (sio_vfio_lend() and sio_uio_lend() say the rest).
 */
int sio__lend(const char *fabric, struct sio_lend_dev *d, volatile sig_atomic_t *stop,
	      FILE *log);

#endif
