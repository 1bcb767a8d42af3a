/* SPDX-License-Identifier: MIT */
#ifndef SMARTIO_PATH_H
#define SMARTIO_PATH_H

/**
 * DOC: paths
 *
 * The route between two places of the fabric (a node, a device, a segment):
 * its hops, their kinds, and the modelled one-way and round-trip latency.
 * The latency figures come from a per-hop model calibrated from the SmartIO
 * paper; they are a model, not a measurement.
 */

#include <stdbool.h>
#include <stdint.h>
#include <smartio/fabric.h>

#ifdef __cplusplus
extern "C" {
#endif

#define SIO_PATH_MAX_HOPS	12

enum sio_hop_kind {
	SIO_HOP_ADAPTER = 0,	/* an NTB adapter's switch chip */
	SIO_HOP_CHASSIS,	/* an expansion-chassis switch */
	SIO_HOP_SWITCH,		/* a cluster switch */
};

enum sio_endpoint_kind {
	SIO_EP_NODE = 0,	/* a node's CPU or RAM */
	SIO_EP_DEVICE,		/* a registered device */
	SIO_EP_SEGMENT,		/* a segment, wherever it lives */
};

/**
 * struct sio_endpoint - one end of a path
 * @kind: what @id names
 * @node: the node (SIO_EP_NODE) or the segment's home node (SIO_EP_SEGMENT)
 * @id: device id or segment id
 */
struct sio_endpoint {
	enum sio_endpoint_kind kind;
	int node;
	uint32_t id;
};

struct sio_hop {
	enum sio_hop_kind kind;
	int id;			/* node id for adapters and chassis, switch id */
	uint32_t ns;		/* modelled one-way delay of this hop */
};

/**
 * struct sio_path - a resolved route
 * @from_node: the node at the start
 * @to_node: the node at the end
 * @adapter: the adapter used on @from_node (-1 when local)
 * @nhops: number of hops
 * @hops: the hops in order
 * @one_way_ns: modelled one-way latency (posted write)
 * @round_trip_ns: modelled round trip (non-posted read)
 * @up: every link along the path is up
 */
struct sio_path {
	int from_node, to_node;
	int adapter;
	int nhops;
	struct sio_hop hops[SIO_PATH_MAX_HOPS];
	uint32_t one_way_ns;
	uint32_t round_trip_ns;
	bool up;
};

/**
 * sio_path_resolve() - find the route between two endpoints
 * @f: fabric handle
 * @from: where accesses start (a node, or a device doing DMA)
 * @to: where they land
 * @adapter: adapter to leave @from's node by, or -1 for the first one up
 * @out: the route
 */
int sio_path_resolve(struct sio_fabric *f, const struct sio_endpoint *from,
		     const struct sio_endpoint *to, int adapter,
		     struct sio_path *out);

/**
 * sio_hop_kind_name() - "adapter", "chassis" or "switch"
 * @k: hop kind
 */
const char *sio_hop_kind_name(enum sio_hop_kind k);

#ifdef __cplusplus
}
#endif
#endif
