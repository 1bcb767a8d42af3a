/* SPDX-License-Identifier: MIT */
#ifndef SIO_INTERNAL_H
#define SIO_INTERNAL_H

/*
 * Internal to libsmartio: process-local handles and the calls the core and
 * its backends share. The registry itself is in registry.h, the backends'
 * contract in backend.h.
 */

#include <errno.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <limits.h>
#include <sys/types.h>

#include <smartio/smartio.h>
#include <smartio/model.h>
#include <smartio/status.h>
#include "backend.h"
#include <smartio/irq.h>
#include "registry.h"
#include "align.h"
#include "clock.h"
#include "env.h"

/* Set the thread's error message and return -err: the library's own name
 * for sio_err_set(), the one setter every layer uses. */
#define sio__err sio_err_set

struct sio_fabric {
	char name[SIO_NAME_MAX];
	int node;
	const struct sio_fabric_ops *ops;	/* its fabric backend's */
	void *be;			/* the fabric backend's own state */
	struct sio_registry *reg;	/* mapped by the backend */
	/* a copy made when joining, after validation: the registry's may change */
	struct sio_topology topo;
	int proc;			/* our slot in reg->procs */
	int pid;			/* the pid that slot was claimed with */
	/* kept segments let go of while the registry was out of reach (its
	 * lock failed): let go of at this handle's next lock (segment.c) */
	struct { int slot; uint64_t gen; } left[4];
	int nleft;
	/* this process's own mappings of segments, for DMA and lenders */
	void **segmap;
	uint64_t *segmap_gen;
	uint64_t *segmap_len;
};

struct sio_segment {
	struct sio_fabric *f;
	int slot;			/* index in reg->segs */
	uint32_t id;
	int node;
	uint64_t size;
	uint64_t gen;			/* reg->segs[slot].gen when looked up */
	bool owner;			/* created by this handle: remove frees it */
	void *vaddr;			/* process mapping, or NULL */
	int window;			/* process mapping (reg->pmaps) holding a window, or -1 */
	uint64_t map_len;		/* bytes mapped at vaddr */
	/* a BAR that is no fabric segment: its device's backend maps it */
	struct sio_device *bar_dev;
	int bar_idx;
	enum sio_segment_kind kind;
};

struct sio_device {
	struct sio_fabric *f;
	int slot;			/* reg->devs */
	uint32_t id;
	int borrow;			/* reg->borrows */
	const struct sio_device_ops *ops;	/* its backend's, chosen at borrow */
	int adapter;			/* lender adapter for windows, -1: any */
	void *backend_priv;		/* the backend's own state (vfio: the connection) */
	uint64_t dma_mask;		/* highest bus address the device reaches (irq.c) */
	int irq_kind, irq_nvec;		/* enum sio_irq_kind, 0: not enabled */
	int irq_fd[SIO_IRQ_MAX_VECS];	/* the backend's, per vector */
};

struct sio_devreg {
	struct sio_fabric *f;
	int slot;
	uint32_t id;
	struct sio_segment *bars[SIO_MAX_BARS];
	/* translation cache, reloaded when reg->map_gen moves */
	uint64_t cache_gen;
	int ncache;
	int mru;
	struct sio_dma_cache_ent *cache;
	int cache_cap;
	/* the fabric's GPU segments at the last reload, for the GPU plugin */
	struct sio_gpu_seg *gpu;
	int ngpu, gpu_cap;
	/* sio_dma_batch_begin() .. _end(); a write into GPU memory deferred */
	bool batch, later;
};

/* Map a segment slot into this process (cached per fabric handle). */
void *sio__segmap(struct sio_fabric *f, int slot, uint64_t gen);
void sio__segmap_drop(struct sio_fabric *f, int slot);
/* Registry lock held: let go of what sio_segment_leave() could not. */
void sio__seg_leaves_apply(struct sio_fabric *f);

/* Segment slots, registry lock held. */
int sio__seg_new_locked(struct sio_fabric *f, int node, uint32_t id, uint64_t size,
			unsigned int flags, int kind, int *slotp);
int sio__seg_check(struct sio_segment *seg);
/* Registry lock held: does the borrow behind @dev still stand? */
int sio__dev_check(struct sio_device *dev);
/* Registry lock held: the slot of multicast group @group, or -errno. */
int sio__mcast_group(struct sio_fabric *f, uint32_t group);
/* Registry lock held: describe node @n, device slot @d, segment slot @s
 * (an entry in use). */
void sio__node_info(struct sio_fabric *f, int n, struct sio_node_info *o);
void sio__device_info(struct sio_registry *r, int d, struct sio_device_info *o);
void sio__segment_info(struct sio_registry *r, int s, struct sio_segment_info *o);
/* ... and how segment slot @s is reached: by this process's mapping @va, or
 * (@va NULL) by every node connected to it (o->reach, "" where unsaid) */
void sio__segment_reach(struct sio_fabric *f, int s, const void *va, struct sio_segment_info *o);
/* Registry lock held: may this process map that part of a (BAR) segment? */
int sio__bar_access(struct sio_fabric *f, int slot, uint64_t off, uint64_t len, bool rdonly);

/*
 * $SMARTIO_LOCK_TIMEOUT_MS in @ns: how long every fabric backend's lock
 * waits for a holder that keeps it (1 ms..1 h; one default, 5 s, for
 * every backend). Return: 0, or -EINVAL naming a bad value (then @ns holds
 * the default).
 */
static inline int sio__lock_timeout_ns(uint64_t *ns)
{
	return sio__env_ms("SMARTIO_LOCK_TIMEOUT_MS", 5000, 1, 3600000, ns);
}

/*
 * Registry lock (the fabric backend's, fabric.c), also reaping dead
 * processes lazily. The wait is bounded (shm: $SMARTIO_LOCK_TIMEOUT_MS,
 * default 5 s): on failure it returns -errno with a message naming the
 * fabric and the holder, and the caller must not touch the registry. A dead
 * holder's lock is taken over. Then the header and topology are checked.
 */
int sio__lock(struct sio_fabric *f) __attribute__((warn_unused_result));
/* The same without the lazy reaping (joining, sio_fabric_reap). */
int sio__lock_noreap(struct sio_fabric *f) __attribute__((warn_unused_result));
void sio__unlock(struct sio_fabric *f);

void sio__delay_ns(uint64_t ns);

/*
 * Attach fabric @name's shared state as node @node without joining it as a
 * process (no slot: a service of the backend, ntb's node service, that holds
 * the lock at times but is no process of the fabric); sio__fabric_detach()
 * undoes it.
 */
int sio__fabric_attach(const char *name, int node, struct sio_fabric **out);
void sio__fabric_detach(struct sio_fabric *f);

/* A path on this host for a service of fabric @f (the vfio lender's socket). */
int sio__fabric_host_path(struct sio_fabric *f, const char *leaf, char *buf, size_t len);

/* Events: send to every process that is joined (filter decides). */
void sio__event_broadcast(struct sio_fabric *f, const struct sio_event *ev,
			  bool (*want)(struct sio_fabric *, int proc, const struct sio_event *));
void sio__event_send(struct sio_fabric *f, int proc, const struct sio_event *ev);
/* The filter for processes that borrow device @ev->device. */
bool sio__want_dev_users(struct sio_fabric *f, int proc, const struct sio_event *ev);

/* Path resolution from a node (and adapter) to a node. */
/*
 * Route from node @from to @to (as sio__route(), through @adapter, -1: the
 * first whose links are up) and take a window of @from's adapter on it for
 * segment slot @seg. When that adapter has no window free and the caller
 * did not pin one (@adapter -1), another adapter whose links are up serves,
 * with its route in @out: a node's windows are those of all its adapters.
 * Registry lock held. Return: the window, or -errno.
 */
int sio__route_window(struct sio_fabric *f, int from, int to, int adapter, bool chassis_from,
		      bool chassis_to, int seg, struct sio_path *out, uint64_t *bus);
int sio__route(struct sio_fabric *f, int from, int to, int adapter, bool chassis_from,
	       bool chassis_to, struct sio_path *out);

/*
 * Register a device whose BARs and DMA are served by another backend's
 * lender process (vfio): @svc is the unix socket the lender listens on.
 */
int sio__device_register_ext(struct sio_fabric *f, const struct sio_device_desc *desc,
			     enum sio_device_backend backend, const char *bdf,
			     const char *svc, struct sio_devreg **out);
/*
 * @path in words, for display: its name, and @why in parentheses where
 * there is one ("relayed (no window: ...)"); @buf, or a constant.
 */
const char *sio__bar_path_text(enum sio_bar_path path, const char *why, char *buf, size_t len);

/* The lender's service socket of a device (vfio backend). */
const char *sio__device_svc(struct sio_device *dev);

/*
 * The backend's dma_map, then the check every mapping passes: the bus
 * address must lie under the borrow's DMA mask, or the mapping is undone
 * and refused naming the mask (core/irq.c).
 */
int sio__dma_map_masked(struct sio_device *dev, struct sio_segment *seg, uint64_t *bus);
/* The number of bits of a DMA mask (2^n - 1), for messages. */
int sio__mask_bits(uint64_t mask);

/*
 * An fd that sio_device_irq_enable_one() asks the backend's @irq_enable not
 * to open: a vector of the device this borrow does not take. A backend that
 * opens every vector anyway overwrites it.
 */
#define SIO__IRQ_SKIP	(-2)

/* The sim device backend's interrupts (backend/sim/irq.c). */
int sio__sim_irq_enable(struct sio_device *dev, unsigned int kinds, int nvec, int *fds);
void sio__sim_irq_disable(struct sio_device *dev);
int sio__sim_irq_take(struct sio_device *dev, int vec);
void sio__sim_irq_gone(struct sio_fabric *f, uint32_t id, int borrow, uint32_t vecs);

#endif
