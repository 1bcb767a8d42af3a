/* SPDX-License-Identifier: MIT */
#ifndef SMARTIO_EVENT_H
#define SMARTIO_EVENT_H

/**
 * DOC: events
 *
 * Link, segment and device events arrive on a pollable file descriptor;
 * sio_event_read() drains them without blocking.
 */

#include <stdint.h>
#include <smartio/fabric.h>

#ifdef __cplusplus
extern "C" {
#endif

enum sio_event_type {
	SIO_EV_LINK_DOWN = 1,	/* @node's @adapter link went down */
	SIO_EV_LINK_UP,		/* ... and came back */
	SIO_EV_SEGMENT_LOST,	/* segment (@node, @segment) went away */
	SIO_EV_DEVICE_GONE,	/* device @device was unregistered */
	SIO_EV_PROCESS_GONE,	/* process @pid died; what it held is reclaimed */
	SIO_EV_FABRIC_GONE,	/* the fabric is being destroyed: leave it (sio_fabric_alive()) */
	SIO_EV_DEVICE_NOTICE,	/* a borrower of @device posted @info (sio_device_notice()) */
};

/**
 * struct sio_event - one event
 * @type: what happened
 * @node: the node concerned
 * @adapter: adapter index for link events, else -1
 * @segment: segment id for SIO_EV_SEGMENT_LOST
 * @device: device id for device events, and for SIO_EV_PROCESS_GONE the
 *	device the dead process had borrowed (-1 if none)
 * @pid: the process concerned
 * @time_ns: CLOCK_MONOTONIC time of the event
 * @info: for SIO_EV_DEVICE_NOTICE, what the poster said (an NVMe manager:
 *	an Asynchronous Event Request's completion DW0)
 */
struct sio_event {
	enum sio_event_type type;
	int node;
	int adapter;
	uint32_t segment;
	int32_t device;
	int32_t pid;
	uint64_t time_ns;
	uint32_t info;
};

/**
 * sio_event_fd() - a file descriptor that polls readable when events wait
 * @f: fabric handle
 */
int sio_event_fd(struct sio_fabric *f);

/**
 * sio_event_read() - take waiting events, without blocking
 * @f: fabric handle
 * @ev: array to fill
 * @max: its length
 * Return: the number of events (0 if none), or -errno.
 */
int sio_event_read(struct sio_fabric *f, struct sio_event *ev, int max);

/**
 * sio_event_name() - a short name such as "link-down"
 * @t: event type
 */
const char *sio_event_name(enum sio_event_type t);

#ifdef __cplusplus
}
#endif
#endif
