/* SPDX-License-Identifier: MIT */
#ifndef SMARTIO_STATUS_H
#define SMARTIO_STATUS_H

/**
 * DOC: fabric status
 *
 * One consistent look at everything a fabric holds: its nodes and links,
 * the windows in use, segments, devices with their DMA faults, and borrows.
 * It is what `smartio status` prints, and what a monitor would poll. It is
 * taken in one go under the registry lock, after what dead processes held
 * has been reclaimed, so it shows only what the living hold.
 */

#include <stdbool.h>
#include <stdint.h>
#include <smartio/fabric.h>
#include <smartio/segment.h>
#include <smartio/device.h>

#ifdef __cplusplus
extern "C" {
#endif

/**
 * struct sio_segment_status - one segment of the fabric
 * @info: what it is, as sio_segment_info() says (@info.name: its label,
 *	sio_segment_set_name())
 * @owner_pid: the process that created it (for a BAR, its device's lender)
 */
struct sio_segment_status {
	struct sio_segment_info info;
	int owner_pid;
};

/**
 * struct sio_borrow_status - one borrow of a device
 * @device: the device's id
 * @pid: the borrowing process
 * @node: the node it joined as
 * @exclusive: borrowed exclusively
 * @path: how its stores to BAR0 reach the device (SIO_BAR_PATH_MAPPED
 *	also where the backend has nothing to say)
 * @doorbells: the same in words where they are not plain stores to a
 *	mapping of it ("relayed (no window: ...)", "NTB window", "NTB window
 *	(emulated forwarding)"), else ""
 */
struct sio_borrow_status {
	uint32_t device;
	int pid;
	int node;
	bool exclusive;
	enum sio_bar_path path;
	char doorbells[64];
};

/**
 * struct sio_fabric_status - a fabric at one moment
 * @name: the fabric's name
 * @backend: the fabric backend it runs on ("shm")
 * @topo: its shape and limits
 * @procs: processes joined, this one included
 * @nnodes: entries of @nodes (@topo.nodes)
 * @nodes: each node's adapters: switch, link state, windows in use
 * @nsegments: entries of @segments
 * @segments: every segment, in registry order
 * @ndevices: entries of @devices
 * @devices: every registered device, with its borrower count and DMA faults
 * @nborrows: entries of @borrows
 * @borrows: every borrow
 *
 * One allocation: sio_fabric_status_close() frees it and the arrays.
 */
struct sio_fabric_status {
	char name[SIO_NAME_MAX];
	char backend[16];
	struct sio_topology topo;
	int procs;
	int nnodes;
	struct sio_node_info *nodes;
	int nsegments;
	struct sio_segment_status *segments;
	int ndevices;
	struct sio_device_info *devices;
	int nborrows;
	struct sio_borrow_status *borrows;
};

/**
 * sio_fabric_status_get() - take a consistent look at the whole fabric
 * @f: fabric handle
 * @out: the status, owned by the caller (sio_fabric_status_close())
 *
 * Reclaims what dead processes held first, as sio_fabric_reap() does.
 * Return: 0, -ENOMEM, or the registry lock's errors (-ETIMEDOUT naming its
 * holder, -EUCLEAN for a corrupt registry).
 */
int sio_fabric_status_get(struct sio_fabric *f, struct sio_fabric_status **out);

/**
 * sio_fabric_status_close() - free what sio_fabric_status_get() returned
 * @st: the status (NULL is ignored)
 */
void sio_fabric_status_close(struct sio_fabric_status *st);

#ifdef __cplusplus
}
#endif
#endif
