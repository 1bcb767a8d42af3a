/* SPDX-License-Identifier: MIT */
#ifndef SMARTIO_DMA_H
#define SMARTIO_DMA_H

/**
 * DOC: device models and DMA
 *
 * The lender side of a device on the simulated fabric: a device model
 * registers a device with its BARs, then moves data only through the DMA
 * calls below, which translate a device bus address to memory the way the
 * fabric would: device domain, lender adapter window, target node, segment.
 * An address nobody mapped for the device is a DMA fault (counted, reported,
 * never a crash). With the latency model on, reads pay the modelled round
 * trip and writes are posted.
 */

#include <stddef.h>
#include <stdint.h>
#include <smartio/device.h>

#ifdef __cplusplus
extern "C" {
#endif

struct sio_devreg;

/**
 * struct sio_device_desc - a device a model registers
 * @class_code: PCI class code
 * @vendor: PCI vendor id
 * @device: PCI device id
 * @nbars: number of BARs
 * @bar_size: bytes per BAR; each becomes a segment of kind SIO_SEG_BAR
 * @chassis: the device sits behind an expansion-chassis switch
 * @name: label
 */
struct sio_device_desc {
	uint32_t class_code;
	uint16_t vendor;
	uint16_t device;
	int nbars;
	uint64_t bar_size[SIO_MAX_BARS];
	bool chassis;
	const char *name;
};

/**
 * sio_device_register() - register a device on this node (the lender)
 * @f: fabric handle
 * @desc: the device
 * @out: the registration, owned by this process
 *
 * The device disappears (SIO_EV_DEVICE_GONE to borrowers) when this process
 * unregisters it or dies.
 */
int sio_device_register(struct sio_fabric *f, const struct sio_device_desc *desc,
			struct sio_devreg **out);

/**
 * sio_device_unregister() - remove a registered device
 * @reg: registration (NULL is ignored)
 */
int sio_device_unregister(struct sio_devreg *reg);

/**
 * sio_devreg_id() - the fabric id assigned to a registered device
 * @reg: registration
 */
uint32_t sio_devreg_id(const struct sio_devreg *reg);

/**
 * sio_devreg_bar() - a registered device's BAR segment
 * @reg: registration
 * @bar: BAR index
 * @out: the segment (owned by the registration; map it to emulate the BAR)
 */
int sio_devreg_bar(struct sio_devreg *reg, int bar, struct sio_segment **out);

/**
 * sio_dma_read() - device reads memory at a bus address
 * @reg: the device
 * @bus: device-side bus address
 * @buf: destination
 * @len: bytes
 *
 * Return: 0; -EFAULT on a DMA fault (nothing mapped there for this device,
 * or a multicast address); -ENOLINK if the path is down (@buf is filled with
 * all ones, as PCIe completes such reads).
 */
int sio_dma_read(struct sio_devreg *reg, uint64_t bus, void *buf, size_t len);

/**
 * sio_dma_write() - device writes memory at a bus address (posted)
 * @reg: the device
 * @bus: device-side bus address (a multicast group address reaches every
 *	subscriber)
 * @buf: source
 * @len: bytes
 * Return: 0, -EFAULT on a DMA fault, -ENOLINK if the path is down (dropped).
 */
int sio_dma_write(struct sio_devreg *reg, uint64_t bus, const void *buf, size_t len);

/**
 * sio_dma_ptr() - direct pointer to memory a device may access
 * @reg: the device
 * @bus: device-side bus address
 * @len: bytes that must be contiguous behind the pointer
 * @write: true if the device will write
 * @ptr: the pointer
 *
 * For zero-copy data movement (for example handing a buffer to io_uring).
 * The latency model is applied as for sio_dma_read()/sio_dma_write().
 * Return: 0, -EFAULT, -ENOLINK (no pointer: the caller drops or fills ones).
 */
int sio_dma_ptr(struct sio_devreg *reg, uint64_t bus, size_t len, bool write,
		void **ptr);

/**
 * struct sio_dma_stats - a device's DMA counters
 */
struct sio_dma_stats {
	uint64_t faults;
	uint64_t linkdown;
	uint64_t last_fault_addr;
};

/**
 * sio_dma_stats() - read a device's DMA counters
 * @reg: the device
 * @out: filled in
 */
int sio_dma_stats(struct sio_devreg *reg, struct sio_dma_stats *out);

#ifdef __cplusplus
}
#endif
#endif
