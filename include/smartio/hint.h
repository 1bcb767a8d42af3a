/* SPDX-License-Identifier: MIT */
#ifndef SMARTIO_HINT_H
#define SMARTIO_HINT_H

/**
 * DOC: access hints
 *
 * Create a segment *for a device* by saying how it will be accessed, and let
 * the library choose where it lives. PCIe reads are non-posted and pay the
 * round trip while writes are posted, so memory goes close to whoever reads
 * it: an SQ (device reads, host writes) lands next to the device, a CQ
 * (device writes, host reads) next to the polling CPU.
 */

#include <stdint.h>
#include <smartio/device.h>

#ifdef __cplusplus
extern "C" {
#endif

#define SIO_HINT_DEVICE_READ	(1u << 0)
#define SIO_HINT_DEVICE_WRITE	(1u << 1)
#define SIO_HINT_HOST_READ	(1u << 2)
#define SIO_HINT_HOST_WRITE	(1u << 3)
#define SIO_HINT_MULTI_READ	(1u << 4)	/* many hosts read it */
#define SIO_HINT_MULTI_WRITE	(1u << 5)	/* many hosts write it */

/**
 * enum sio_placement - where a hinted segment was put
 * @SIO_PLACE_LOCAL: this node's RAM
 * @SIO_PLACE_LENDER: the device lender's RAM
 * @SIO_PLACE_DEVICE: device-adjacent memory (a BAR such as the CMB, or GPU)
 */
enum sio_placement {
	SIO_PLACE_LOCAL = 0,
	SIO_PLACE_LENDER,
	SIO_PLACE_DEVICE,
};

/**
 * sio_hint_place() - where a segment with these hints would go
 * @dev: borrowed device that will access the segment
 * @hints: SIO_HINT_* bits
 * Return: an enum sio_placement, or -EINVAL for hints that say nothing.
 */
int sio_hint_place(struct sio_device *dev, unsigned int hints);

/**
 * sio_segment_create_hinted() - create a segment for a device by hints
 * @dev: borrowed device that will access the segment
 * @size: bytes
 * @hints: SIO_HINT_* bits
 * @out: the segment (owned by this process)
 * @placed: where it went (may be NULL)
 *
 * The segment is not yet mapped for the device: use sio_device_map().
 */
int sio_segment_create_hinted(struct sio_device *dev, uint64_t size,
			      unsigned int hints, struct sio_segment **out,
			      enum sio_placement *placed);

/**
 * sio_placement_name() - "local", "lender" or "device"
 * @p: placement
 */
const char *sio_placement_name(enum sio_placement p);

#ifdef __cplusplus
}
#endif
#endif
