/* SPDX-License-Identifier: MIT */
#ifndef SIO_BACKEND_H
#define SIO_BACKEND_H

/**
 * DOC: backends
 *
 * The core of libsmartio (the registry's tables, segments, devices, hints,
 * paths, multicast, events) reaches hardware, or its simulation, only
 * through the op tables below. docs/architecture.md draws the layers.
 *
 * A *device backend* is how a borrower reaches a device: how its BARs are
 * mapped into this process and how memory is made reachable for its DMA.
 * Every device is registered with one (its enum sio_device_backend, kept in
 * the registry); a borrow takes that backend's ops from sio__device_ops()
 * when it is made, and the core calls dev->ops->...() from then on. The
 * backends are peers: "sim" (device models on the fabric, whose DMA the
 * library translates through the fabric's windows: src/sim/) and "vfio" (a
 * real PCI function on this host, served by its lender process through the
 * IOMMU: src/vfio/).
 *
 * The rules every op follows:
 *
 * - It returns 0 (or what it documents) or a negative errno, and then has
 *   said why with sio__err(): the core passes both on to the caller.
 * - It is called without the registry lock unless it says otherwise, and
 *   takes the lock itself (sio__lock()) for what it reads or writes there.
 * - What it reads from the registry is input, written by other processes:
 *   indices go through the checked accessors of registry.h.
 */

#include <stdbool.h>
#include <stdint.h>

struct sio_device;
struct sio_segment;

/**
 * struct sio_device_ops - what a device backend provides to the core
 * @name: the backend's name, for messages ("sim", "vfio")
 * @fabric_bars: the device's BARs are segments of the fabric, emulated by
 *	its model: registering the device creates them, and borrowers map
 *	them as any segment, through windows. Otherwise @bar_map serves them.
 * @host_local: the device reaches memory of its own host only, so hint
 *	placement keeps everything local ("near the lender" means nothing).
 * @bar_map: map BAR @bar whole into this process; *@size is what was
 *	mapped. Called for BARs that are not fabric segments only; NULL when
 *	@fabric_bars.
 * @dma_map: make @seg reachable for the device's DMA and put in *@bus the
 *	address the device must use (its own bus domain). Mapping the same
 *	segment again through the same borrow gives the same address.
 * @dma_unmap: undo @dma_map; -ENOENT if @seg was not mapped.
 * @mcast_map: put in *@bus the address at which one device write reaches
 *	every subscriber of multicast @group; NULL when the backend has no
 *	multicast (the core then fails with -ENOTSUP).
 * @release: the borrow ends (sio_device_return()): drop what the backend
 *	holds for it, such as a connection to the lender; mappings made
 *	through it must go too. NULL when it holds nothing of its own.
 */
struct sio_device_ops {
	const char *name;
	bool fabric_bars;
	bool host_local;
	int (*bar_map)(struct sio_device *dev, int bar, void **vaddr, uint64_t *size);
	int (*dma_map)(struct sio_device *dev, struct sio_segment *seg, uint64_t *bus);
	int (*dma_unmap)(struct sio_device *dev, struct sio_segment *seg);
	int (*mcast_map)(struct sio_device *dev, uint32_t group, uint64_t *bus);
	void (*release)(struct sio_device *dev);
};

extern const struct sio_device_ops sio__sim_device_ops;	/* src/sim/device.c */
extern const struct sio_device_ops sio__vfio_device_ops;	/* src/vfio/client.c */

/*
 * The ops of device backend @backend (enum sio_device_backend), or NULL
 * when this libsmartio was built without it (src/backends.c).
 */
const struct sio_device_ops *sio__device_ops(int backend);
/* Its name, known even when it is not built in: "sim", "vfio", "unknown". */
const char *sio__device_backend_name(int backend);

#endif
