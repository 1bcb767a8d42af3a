/* SPDX-License-Identifier: MIT */
#ifndef SMARTIO_FABRIC_H
#define SMARTIO_FABRIC_H

/**
 * DOC: fabric
 *
 * A fabric is a set of nodes (hosts) joined by NTB adapters and switches. A
 * process joins a fabric as one node. Every call returns 0 (or a count) on
 * success and a negative errno on failure; sio_errmsg() then says what was
 * wrong in words.
 */

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#ifdef __cplusplus
extern "C" {
#endif

#define SIO_MAX_NODES		256
#define SIO_MAX_ADAPTERS	2
#define SIO_DEFAULT_WINDOWS	32
#define SIO_NAME_MAX		32

struct sio_fabric;

enum sio_topology_kind {
	SIO_TOPO_SWITCH = 0,	/* every node on one cluster switch (the default) */
	SIO_TOPO_B2B,		/* two nodes, adapters cabled back to back */
	SIO_TOPO_CASCADE,	/* a top switch with sub-switches */
};

/**
 * struct sio_fabric_config - parameters of a new fabric
 * @nodes: number of nodes (1..SIO_MAX_NODES)
 * @topology: how nodes are joined
 * @nodes_per_switch: nodes on each sub-switch (cascade only; 0 picks 10)
 * @adapters: NTB adapters per node (1, or 2 for multipath: adapter 1 of
 *	every node sits on a second, separate switch tree)
 * @windows: windows (look-up-table entries) per adapter; 0 picks 32
 * @window_size: largest mapping one window can hold, bytes; 0 picks 1 GiB
 * @mcast_groups: multicast groups the switches support; 0 picks 16
 * @latency_model: apply the modelled per-hop delays to device DMA
 * @adapter_ns: the model's delay through an NTB adapter's switch, ns; 0
 *	picks the paper's 132
 * @chassis_ns: through an expansion chassis's switch; 0 picks 150
 * @switch_ns: through a cluster switch; 0 picks 170
 */
struct sio_fabric_config {
	int nodes;
	enum sio_topology_kind topology;
	int nodes_per_switch;
	int adapters;
	int windows;
	uint64_t window_size;
	int mcast_groups;
	bool latency_model;
	uint32_t adapter_ns, chassis_ns, switch_ns;
};

/**
 * struct sio_node_info - one node of the fabric
 * @id: node id, 0..nodes-1
 * @adapters: adapters in this node
 * @switch_id: the switch each adapter is cabled to (-1: back to back)
 * @link_up: per adapter, whether its link is up
 * @windows_used: per adapter, windows in use
 * @windows_total: windows per adapter
 * @procs: processes currently joined as this node
 */
struct sio_node_info {
	int id;
	int adapters;
	int switch_id[SIO_MAX_ADAPTERS];
	bool link_up[SIO_MAX_ADAPTERS];
	int windows_used[SIO_MAX_ADAPTERS];
	int windows_total;
	int procs;
};

/**
 * struct sio_topology - the shape of the fabric, as made
 * @kind: back to back, one switch, or a cascade
 * @nodes: nodes
 * @adapters: adapters per node
 * @switches: switches per adapter plane, the top switch included
 * @nodes_per_switch: nodes under each switch
 * @windows: windows per adapter
 * @window_size: largest mapping one window holds, bytes
 * @mcast_groups: multicast groups the switches support
 * @latency_model: device DMA pays the modelled per-hop delays
 * @adapter_ns: the model's delays per hop, in ns, as in struct
 *	sio_fabric_config
 * @chassis_ns: the same, for a chassis switch
 * @switch_ns: the same, for a cluster switch
 */
struct sio_topology {
	enum sio_topology_kind kind;
	int nodes;
	int adapters;
	int switches;
	int nodes_per_switch;
	int windows;
	uint64_t window_size;
	int mcast_groups;
	bool latency_model;
	uint32_t adapter_ns, chassis_ns, switch_ns;
};

/**
 * sio_fabric_create() - create a simulated fabric
 * @name: fabric name (letters, digits, '-', '_'); NULL uses $SMARTIO_FABRIC
 * @cfg: its shape and limits
 *
 * The fabric lives where its fabric backend keeps it, picked by
 * $SMARTIO_FABRIC_BACKEND: "shm" (the default), shared memory on this host,
 * makes a directory $SMARTIO_RUNDIR/smartio-NAME (default /dev/shm), mode
 * 0700, holding its registry. The fabric is opened and destroyed through
 * the same backend.
 * Return: 0, -EEXIST if it exists, -EINVAL for a bad configuration or an
 * unknown fabric backend.
 */
int sio_fabric_create(const char *name, const struct sio_fabric_config *cfg);

/**
 * sio_fabric_create_group() - create a fabric that a group may join too
 * @name: fabric name; NULL uses $SMARTIO_FABRIC
 * @cfg: its shape and limits
 * @gid: the group whose members may join it; the caller must be one
 *
 * As sio_fabric_create(), but the fabric's directory is given to group
 * @gid with mode 2770, and its registry and segments with mode 0660
 * (`smartio create --group`). Only its creator may destroy it.
 * Return: as sio_fabric_create(); -EPERM if the group cannot be given.
 */
int sio_fabric_create_group(const char *name, const struct sio_fabric_config *cfg, gid_t gid);

/**
 * sio_fabric_destroy() - remove a fabric and everything in it
 * @name: fabric name; NULL uses $SMARTIO_FABRIC
 *
 * sio_fabric_destroy_flags() with SIO_DESTROY_FORCE: processes still
 * attached are told to leave (SIO_EV_FABRIC_GONE), and the fabric is
 * removed under them. Works on a corrupt registry too; symlinks are not
 * followed.
 * Return: 0, -ENOENT, or -EACCES/-EPERM when the caller may not remove it
 * (the message says why), -EINVAL for an unknown fabric backend.
 */
int sio_fabric_destroy(const char *name);

/* sio_fabric_destroy_flags() flags */
#define SIO_DESTROY_FORCE	(1u << 0)	/* even while processes are attached */

/**
 * sio_fabric_destroy_flags() - remove a fabric, unless it is in use
 * @name: fabric name; NULL uses $SMARTIO_FABRIC
 * @flags: 0 or SIO_DESTROY_FORCE
 *
 * Dead processes are reaped first. Without SIO_DESTROY_FORCE a fabric with
 * processes attached is left alone and the message lists them (pid, node,
 * what they hold). With it, each is sent SIO_EV_FABRIC_GONE and the fabric
 * is removed; sio_fabric_alive() then fails in every process that had
 * joined it, so their loops can stop. A registry that cannot be read is
 * removed without asking.
 * Return: as sio_fabric_destroy(); -EBUSY while processes are attached.
 */
int sio_fabric_destroy_flags(const char *name, unsigned int flags);

/**
 * sio_fabric_list() - the fabrics there are on this host
 * @names: filled with up to @max fabric names (may be NULL with @max 0)
 * @max: entries of @names
 *
 * Lists what the fabric backend $SMARTIO_FABRIC_BACKEND holds (shm: the
 * directories smartio-NAME under $SMARTIO_RUNDIR, default /dev/shm), in no
 * particular order, whoever owns them.
 * Return: the number of fabrics (more than @max when @names was too short),
 * -EOPNOTSUPP for a backend that cannot list, or another -errno.
 */
int sio_fabric_list(char (*names)[SIO_NAME_MAX], int max);

/**
 * sio_fabric_alive() - is the fabric this handle joined still there?
 * @f: handle
 *
 * A cheap check (one fstat on shm) for a program's loop: once the fabric is
 * destroyed the registry it maps is no one else's, and recreating the name
 * makes another fabric, so the program should leave. Likewise once this
 * process was taken for dead and released with what it held: across
 * kernels, after being out of reach for longer than its lease (its link
 * down, its host stopped), while other processes took it for a dead one's.
 * Return: 0 while it exists and this process is in it, -ESHUTDOWN once
 * destroyed, -EOWNERDEAD once this process was released (with a message).
 */
int sio_fabric_alive(struct sio_fabric *f);

/**
 * sio_fabric_open() - join a fabric as one node
 * @name: fabric name; NULL uses $SMARTIO_FABRIC
 * @node: node id to join as; negative uses $SMARTIO_NODE (default 0)
 * @out: the handle
 *
 * A fabric belongs to its creator: its directory and registry must be the
 * caller's (or, for a fabric created for a group, the caller must be in
 * that group), must not be symlinks, and must have the expected modes and
 * size. The registry is validated as a whole before it is used. Every call
 * that takes the registry lock waits for it at most $SMARTIO_LOCK_TIMEOUT_MS
 * (default 5000) and then fails with -ETIMEDOUT naming the holder; a holder
 * that no longer exists is taken over.
 * Return: 0, -ENOENT (no such fabric), -ENODEV (no such node), -EINVAL (a
 * bad $SMARTIO_NODE), -EACCES or -EPERM (not the caller's fabric),
 * -EUCLEAN (a corrupt registry: the message names the field), -EPROTO
 * (another registry version, or a fabric of another fabric backend),
 * -ETIMEDOUT (the lock).
 */
int sio_fabric_open(const char *name, int node, struct sio_fabric **out);

/**
 * sio_fabric_close() - leave the fabric, releasing what this handle holds
 * @f: handle (NULL is ignored)
 */
void sio_fabric_close(struct sio_fabric *f);

/**
 * sio_fabric_node_id() - the node this handle joined as
 * @f: handle
 */
int sio_fabric_node_id(const struct sio_fabric *f);

/**
 * sio_fabric_name() - the fabric's name
 * @f: handle
 */
const char *sio_fabric_name(const struct sio_fabric *f);

/**
 * sio_fabric_nodes() - list the nodes
 * @f: handle
 * @out: array to fill (may be NULL to count)
 * @max: its length
 * Return: the number of nodes, or -errno.
 */
int sio_fabric_nodes(struct sio_fabric *f, struct sio_node_info *out, int max);

/**
 * sio_fabric_topology() - describe the fabric's shape and limits
 * @f: handle
 * @out: filled in
 */
int sio_fabric_topology(struct sio_fabric *f, struct sio_topology *out);

/**
 * sio_fabric_reap() - reclaim what dead processes held, now
 * @f: handle
 *
 * Every registry operation also does this at most every 100 ms; a manager
 * that must notice dead clients promptly calls it from its loop.
 * Return: the number of dead processes reclaimed, or -errno.
 */
int sio_fabric_reap(struct sio_fabric *f);

/**
 * sio_fabric_proc_alive() - is process @pid of node @node still joined?
 * @f: handle
 * @node: the node it joined as
 * @pid: its pid, as its own kernel numbers it
 *
 * Pids mean something only on their own kernel: a program that watches a
 * peer of another node (a manager its clients, a client its manager) asks
 * the fabric, whose backend knows how that node's processes live (shm: the
 * pid; shmwin: a heartbeat). Such a process found dead is reclaimed then
 * and there, as sio_fabric_reap() would; the others are left to the reaps.
 * Return: 1 when such a process is joined, 0 when none is, or -errno.
 */
int sio_fabric_proc_alive(struct sio_fabric *f, int node, int pid);

/**
 * sio_link_set() - inject a link fault, or repair it
 * @f: handle
 * @node: node whose adapter link changes
 * @adapter: adapter index, or -1 for all of the node's adapters
 * @up: true to bring the link up, false to take it down
 *
 * While a link is down, device DMA through it behaves as PCIe does: writes
 * are dropped, reads return all ones. Holders of mappings through it get
 * SIO_EV_LINK_DOWN / SIO_EV_LINK_UP events.
 */
int sio_link_set(struct sio_fabric *f, int node, int adapter, bool up);

/**
 * sio_link_get() - is a link up?
 * @f: handle
 * @node: node
 * @adapter: adapter index of @node
 *
 * A lock-free read of the link state, cheap enough for a driver's slow path.
 * Where the backend follows real links (ntb: the NTB link between this node
 * and @node), a link is up as this process reaches it: up in the registry,
 * and its link up with this process's windows through it mapped again
 * since it last went down. A link that went down and came back reads down
 * until they are mapped again, however short the flap. It maps nothing.
 * Return: 1 (up), 0 (down), or -EINVAL.
 */
int sio_link_get(struct sio_fabric *f, int node, int adapter);

/**
 * sio_link_resume() - map again, now, what a link's loss revoked, and from
 *	now on only when asked
 * @f: handle
 * @node: node
 * @adapter: adapter index of @node
 *
 * Where the backend follows real links (ntb), a link's loss revokes this
 * process's windows through it: stores through them reach nothing, loads
 * read all ones. The heartbeat maps them again once the link is back, at
 * any moment; a driver whose queues live behind them cannot have that: a
 * command stored while they were revoked is lost, and a doorbell stored
 * once they are mapped again would have the device run what the lost
 * store left in its slot. The first call takes the mapping again of
 * @node's windows over from the heartbeat, for this process: from then on
 * they are mapped again here alone, when the link is up, and the caller
 * makes its queues again (sio_nvme: its recovery) before it rings.
 * Elsewhere this is sio_link_get().
 * Return: 1 (up, mapped), 0 (down), or -EINVAL.
 */
int sio_link_resume(struct sio_fabric *f, int node, int adapter);

/*
 * Errors. Every smartio library (libsmartio, the NVMe and GPU drivers, the
 * emulated NVMe controller) reports through one message per thread: a
 * failed call returns -errno and sio_errmsg() says why, whichever layer
 * failed. Libraries built on libsmartio set it with sio_err_set() and
 * sio_err_wrap(), which take a positive errno and return it negated.
 */

/* Longest message kept, terminating NUL included. */
#define SIO_ERRMSG_MAX		512

/**
 * sio_errmsg() - what went wrong in the calling thread's last failed call
 *
 * Return: a message naming the argument or limit at fault; never NULL.
 */
const char *sio_errmsg(void);

/**
 * sio_err_set() - set the calling thread's error message
 * @err: a positive errno value (EINVAL, ENOMEM, ...)
 * @fmt: printf format of the message; its arguments may include
 *	sio_errmsg() itself
 *
 * Return: -@err, so that a failing call can end with
 * `return sio_err_set(EINVAL, "...");`.
 */
int sio_err_set(int err, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/**
 * sio_err_wrap() - set a message that keeps the lower layer's
 * @err: a positive errno value
 * @fmt: printf format of what this layer was doing
 *
 * For a failure whose cause a lower layer has already described (a
 * libsmartio call failed): the message becomes "<this layer's words>: <the
 * message there was>".
 * Return: -@err.
 */
int sio_err_wrap(int err, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/**
 * struct sio_errsave - a message kept across the cleanup after a failure
 * @msg: the saved message
 *
 * Cleanup may fail in turn and set messages of its own; the first failure
 * is the one to report::
 *
 *	sio_err_save(&es); cleanup(); sio_err_restore(&es); return ret;
 */
struct sio_errsave {
	char msg[SIO_ERRMSG_MAX];
};

/** sio_err_save() - keep the calling thread's message in @s */
void sio_err_save(struct sio_errsave *s);

/** sio_err_restore() - make the message kept in @s the thread's message again */
void sio_err_restore(const struct sio_errsave *s);

#ifdef __cplusplus
}
#endif
#endif
