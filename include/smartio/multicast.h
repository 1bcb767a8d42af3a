/* SPDX-License-Identifier: MIT */
#ifndef SMARTIO_MULTICAST_H
#define SMARTIO_MULTICAST_H

/**
 * DOC: multicast
 *
 * A multicast group is a fabric address range. Nodes subscribe by attaching
 * a local segment; one posted device write to the group lands in every
 * subscriber's segment. Reads from a group address fault. Switches support
 * a finite number of groups.
 */

#include <stdint.h>
#include <smartio/device.h>

#ifdef __cplusplus
extern "C" {
#endif

/**
 * sio_mcast_create() - allocate a multicast group
 * @f: fabric handle
 * @size: bytes of the group's address range
 * @group: the group id
 * Return: 0, -ENOSPC when every group the switches support is taken.
 */
int sio_mcast_create(struct sio_fabric *f, uint64_t size, uint32_t *group);

/**
 * sio_mcast_destroy() - free a group
 * @f: fabric handle
 * @group: group id
 */
int sio_mcast_destroy(struct sio_fabric *f, uint32_t group);

/**
 * sio_mcast_subscribe() - attach a local segment to a group
 * @f: fabric handle
 * @group: group id
 * @seg: a segment homed on this node, at least as large as the group
 */
int sio_mcast_subscribe(struct sio_fabric *f, uint32_t group,
			struct sio_segment *seg);

/**
 * sio_mcast_unsubscribe() - detach a segment from a group
 * @f: fabric handle
 * @group: group id
 * @seg: the subscribed segment
 */
int sio_mcast_unsubscribe(struct sio_fabric *f, uint32_t group,
			  struct sio_segment *seg);

/**
 * sio_mcast_subscribers() - how many segments a group reaches
 * @f: fabric handle
 * @group: group id
 * Return: the count, or -errno.
 */
int sio_mcast_subscribers(struct sio_fabric *f, uint32_t group);

/**
 * sio_device_map_mcast() - the bus address a device writes to reach a group
 * @dev: borrow handle
 * @group: group id
 * @bus_addr: the group's address as the device sees it
 */
int sio_device_map_mcast(struct sio_device *dev, uint32_t group,
			 uint64_t *bus_addr);

#ifdef __cplusplus
}
#endif
#endif
