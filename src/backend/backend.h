/* SPDX-License-Identifier: MIT */
#ifndef SIO_BACKEND_H
#define SIO_BACKEND_H

/**
 * DOC: backends
 *
 * The core of libsmartio (the registry's tables, segments, devices, hints,
 * paths, multicast, events) reaches hardware, or its simulation, only
 * through the two op tables below. docs/architecture.md draws the layers.
 *
 * A *fabric backend* is how the nodes of a fabric share its state: where
 * the registry lives and how it is locked, how a node learns that a peer
 * died, how a segment is backed and mapped, how events and notifications
 * travel. One serves a whole fabric. It is picked by name at run time
 * ($SMARTIO_FABRIC_BACKEND, default "shm") when a fabric is created,
 * opened or destroyed, and the registry records which one made it, so
 * another is refused. The fabric backends are peers: "shm" (backend/shm/)
 * is one host's shared memory, processes its nodes; "shmwin"
 * (backend/shmwin/) is one PCI memory window shared by several kernels
 * (QEMU guests over ivshmem), each kernel a node: its lock a lease with a
 * timeout in the window instead of a thread id, liveness a heartbeat
 * instead of pids, segments carved from the window instead of files,
 * notifications a doorbell or polling instead of futexes and sockets.
 * "ntb" (backend/ntb/) is the Linux NTB framework, through the smartio_ntb
 * module: each kernel a node with memory of its own, exported to the others
 * through NTB windows; shmwin and ntb share the window fabric (winfab/).
 *
 * A *device backend* is how a borrower reaches a device: how its BARs are
 * mapped into this process and how memory is made reachable for its DMA.
 * Every device is registered with one (its enum sio_device_backend, kept in
 * the registry); a borrow takes that backend's ops from sio__device_ops()
 * when it is made, and the core calls dev->ops->...() from then on. The
 * backends are peers: "sim" (device models on the fabric, whose DMA the
 * library translates through the fabric's windows: backend/sim/), "vfio" (a
 * real PCI function on this host, served by its lender process through the
 * IOMMU: backend/vfio/) and "uio" (the same on uio_pci_generic for hosts
 * without an IOMMU, physical addresses of pinned huge pages: backend/uio/,
 * served by the vfio backend's lender, vfio/lend.h).
 *
 * The rules every op follows:
 *
 * - It returns 0 (or what it documents) or a negative errno, and then has
 *   said why with sio__err(): the core passes both on to the caller.
 * - It runs without the registry lock unless it says "lock held"; then it
 *   must not take it, and must not block for long.
 * - What it reads from the registry is input, written by other processes:
 *   indices go through the checked accessors of registry.h.
 */

#include <signal.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>
#include <smartio/device.h>

struct sio_device;
struct sio_event;
struct sio_fabric;
struct sio_segment;
struct reg_proc;
struct sio_dev_export;

/**
 * struct sio_fabric_ops - what a fabric backend provides to the core
 *
 * The members are documented in line, in five groups: the shared state,
 * the registry lock, processes, segments, events and notifications.
 */
struct sio_fabric_ops {
	/**
	 * @name: its name, as $SMARTIO_FABRIC_BACKEND gives it and the
	 * registry records it (at most 15 characters)
	 */
	const char *name;
	/**
	 * @state_across_links: the shared state may be another host's
	 * memory reached across a link (ntb): a registry that reads all ones
	 * is then out of reach, the link down, not corrupt
	 */
	bool state_across_links;

	/*
	 * The shared state. The core fills in the registry's tables; the
	 * backend gives it a place of sizeof(struct sio_registry) bytes,
	 * zeroed when new, that every process of the fabric maps as f->reg
	 * (at an address of its own: the registry holds slot indices, never
	 * pointers), and keeps its own state in f->be.
	 */

	/**
	 * @create: make fabric f->name's shared state, new (-EEXIST if it
	 * exists), and attach it. The core initialises the registry, sets its
	 * magic last and detaches. With @group, members of group @gid may
	 * join too (-EOPNOTSUPP where the backend has no such notion).
	 */
	int (*create)(struct sio_fabric *f, bool group, gid_t gid);
	/**
	 * @attach: find fabric f->name's shared state, check that this process
	 * may use it and that its header is whole (sio__reg_check_header()), and map
	 * it: f->reg, f->be. On failure it leaves nothing behind (f->reg NULL).
	 */
	int (*attach)(struct sio_fabric *f);
	/** @detach: undo @attach (or @create): unmap, close, free f->be. */
	void (*detach)(struct sio_fabric *f);
	/**
	 * @destroy: remove fabric @name and everything in it, even when its
	 * registry is corrupt; only its owner may.
	 */
	int (*destroy)(const char *name);
	/**
	 * @removed: has the fabric this handle attached been destroyed since
	 * (shm: its registry file has no link left)? Optional: NULL is never.
	 */
	bool (*removed)(struct sio_fabric *f);
	/**
	 * @list: the names of the fabrics this backend holds on this host,
	 * @max at most into @names; the count there are. Optional: NULL
	 * cannot list (-EOPNOTSUPP).
	 */
	int (*list)(char (*names)[SIO_NAME_MAX], int max);
	/**
	 * @default_node: the node a process of this host joins as when it
	 * names none and $SMARTIO_NODE is unset (ntb: this kernel's NTB port).
	 * Optional: NULL is node 0.
	 */
	int (*default_node)(void);
	/**
	 * @link: whether this process reaches node @node through adapter
	 * @adapter now, where the backend knows better than the registry's
	 * link state (ntb: the NTB link to that peer is up, and what its loss
	 * revoked is mapped again at its new link generation): 1 or 0.
	 * sio_link_get() says up only where the registry and this both do,
	 * and maps nothing (@resume false); with @resume (sio_link_resume())
	 * what the link's loss revoked is mapped again first, and from then
	 * on for @node by such calls alone. Optional: NULL is the registry
	 * alone.
	 */
	int (*link)(struct sio_fabric *f, int node, int adapter, bool resume);
	/**
	 * @host_path: a place on this host where a service of this fabric
	 * meets its clients (the vfio lender's socket): @leaf made a path.
	 */
	int (*host_path)(struct sio_fabric *f, const char *leaf, char *buf, size_t len);

	/*
	 * The registry lock. Every change to the registry, and every read that
	 * must be consistent, happens under it.
	 */

	/**
	 * @lock: take it, waiting a bounded time. A holder that died is taken
	 * over and *@holder_died set, so the core reaps at once. On failure
	 * say who holds it; the caller then must not touch the registry.
	 */
	int (*lock)(struct sio_fabric *f, bool *holder_died);
	/** @unlock: release it; a caller that does not hold it releases nothing. */
	void (*unlock)(struct sio_fabric *f);

	/*
	 * Processes. A process joins as one slot of reg->procs; the core fills
	 * in its node and pid (the pid names it in events, grants, messages).
	 */

	/**
	 * @proc_init: lock held: record in @p what tells later whether this
	 * process still lives (shm: its start time, against pid reuse).
	 */
	void (*proc_init)(struct sio_fabric *f, struct reg_proc *p);
	/**
	 * @proc_alive: does the process of slot @p still live? The core
	 * reclaims what a dead one held (sio__reg_reap()); this process is alive.
	 */
	bool (*proc_alive)(struct sio_fabric *f, const struct reg_proc *p);
	/**
	 * @proc_gone: lock held: the process of slot @proc died; drop what the
	 * backend keeps for it (shm: its event socket). The slot still holds it.
	 */
	void (*proc_gone)(struct sio_fabric *f, int proc);

	/*
	 * Segments. The core keeps each segment's slot in reg->segs; the
	 * backend keeps its memory. GPU segments have none here (their memory
	 * stays with the exporting process): these are not called for them.
	 */

	/**
	 * @seg_create: lock held: back segment slot @slot (filled in, its size
	 * page aligned) with memory of its home node. It may round the size up
	 * and set the slot's huge flag (@flags: SIO_SEG_F_HUGE, _NOHUGE).
	 */
	int (*seg_create)(struct sio_fabric *f, int slot, unsigned int flags);
	/**
	 * @seg_reserve: optional: reserve the memory of bytes [@off, @off +
	 * @len) of slot @slot (created with SIO_SEG_F_LAZY; without it
	 * @seg_create reserves it all), -ENOSPC naming where there is no room.
	 * NULL: the memory is always there.
	 */
	int (*seg_reserve)(struct sio_fabric *f, int slot, uint64_t off, uint64_t len);
	/**
	 * @seg_remove: lock held: free the backing of slot @slot; mappings made
	 * of it may stay until they are unmapped.
	 */
	void (*seg_remove)(struct sio_fabric *f, int slot);
	/**
	 * @seg_map: map bytes [@off, @off + @len) of slot @slot's memory into
	 * this process, read-only with @rdonly. The backing is input too: one
	 * that does not hold the range is refused, not a SIGBUS later.
	 */
	int (*seg_map)(struct sio_fabric *f, int slot, uint64_t off, uint64_t len, bool rdonly,
		       void **vaddr);
	/** @seg_unmap: undo @seg_map. */
	void (*seg_unmap)(struct sio_fabric *f, void *vaddr, uint64_t len);
	/**
	 * @seg_connect: lock held: as @seg_map, for a process's connection to
	 * another node's segment, for which the core counts a window of this
	 * node's adapter @adapter (sio__reg_window_get()): a backend whose
	 * hardware gives a window per segment maps through one, and one with
	 * an NTB per adapter through that adapter's (ntb). Undone by
	 * @seg_unmap. Optional.
	 */
	int (*seg_connect)(struct sio_fabric *f, int slot, int adapter, uint64_t off, uint64_t len,
			   bool rdonly, void **vaddr);
	/**
	 * @seg_reach: lock held: how segment slot @slot is reached from other
	 * nodes, in @buf: by the mapping at @vaddr of this process (a
	 * connection), or (@vaddr NULL) by every node connected to it.
	 * NULL where there is nothing to say. Optional.
	 */
	const char *(*seg_reach)(struct sio_fabric *f, int slot, const void *vaddr, char *buf,
				 size_t len);

	/*
	 * Events and notifications. An event (struct sio_event) goes to one
	 * process; a sender never blocks, and a full queue drops it, as an
	 * interrupt would coalesce. A notification wakes whoever waits on a
	 * 32-bit word of a mapped segment; it carries no data.
	 */

	/** @ev_open: this process's event endpoint, once it has its slot (f->proc). */
	int (*ev_open)(struct sio_fabric *f);
	/** @ev_close: close and remove it, as the process leaves. */
	void (*ev_close)(struct sio_fabric *f);
	/**
	 * @ev_send: lock held: send @ev to the process of slot @proc; a failure
	 * is a dropped event.
	 */
	void (*ev_send)(struct sio_fabric *f, int proc, const struct sio_event *ev);
	/** @ev_fd: a file descriptor that polls readable when events wait. */
	int (*ev_fd)(struct sio_fabric *f);
	/** @ev_read: take up to @max waiting events, without blocking; the count. */
	int (*ev_read)(struct sio_fabric *f, struct sio_event *ev, int max);
	/** @notify: wake every waiter on @word; the number woken. */
	int (*notify)(struct sio_fabric *f, uint32_t *word);
	/**
	 * @wait: sleep while *@word is @old, at most @timeout_ns: 0 when woken,
	 * changed (or spuriously), -ETIMEDOUT.
	 */
	int (*wait)(struct sio_fabric *f, uint32_t *word, uint32_t old, uint64_t timeout_ns);
	/**
	 * @doorbell_serve: be this kernel's receiver of the doorbells other
	 * kernels ring (sio_vfio_doorbell()): every event on @efd, which the
	 * caller routed an interrupt to, wakes this kernel's waiters, until
	 * *@stop; @log says what came. Optional: NULL where the fabric has no
	 * doorbells to receive (the caller fails with -EINVAL).
	 */
	int (*doorbell_serve)(struct sio_fabric *f, int efd, volatile sig_atomic_t *stop,
			      FILE *log);

	/*
	 * Devices lent across kernels (optional: NULL where every node shares
	 * the lender's host, as in shm). A device backend of one host (vfio)
	 * serves its own host's borrowers; these let the fabric backend serve
	 * the others by its own means (shmwin: the window).
	 */

	/**
	 * @dev_ops: lock held: the device ops a borrow of device slot @dev from
	 * this process uses instead of its registered backend's, or NULL to
	 * keep those (shmwin: a vfio device of another kernel).
	 */
	const struct sio_device_ops *(*dev_ops)(struct sio_fabric *f, int dev);
	/**
	 * @dev_export: device slot @dev, registered by this process and served
	 * by a device backend of this host, is to be reached from other nodes:
	 * @x says how. The backend keeps it up until @dev_unexport.
	 */
	int (*dev_export)(struct sio_fabric *f, int dev, struct sio_dev_export *x);
	/** @dev_unexport: undo @dev_export, before the device is unregistered. */
	void (*dev_unexport)(struct sio_fabric *f, int dev);
	/**
	 * @borrow_doorbells: lock held: how the stores of borrow slot @borrow
	 * to its device's BAR0 reach it, with what more there is to say in
	 * @why ("no window: ...", "" for nothing); SIO_BAR_PATH_MAPPED where
	 * they are plain stores to a mapping of it. Optional.
	 */
	enum sio_bar_path (*borrow_doorbells)(struct sio_fabric *f, int borrow, char *why,
					      size_t len);
	/**
	 * @dev_relay: lock held: fill @o's relay counters (relayed,
	 * relay_wait_ns, relay_fwd_ns) for device slot @dev. Optional.
	 */
	void (*dev_relay)(struct sio_fabric *f, int dev, struct sio_device_info *o);
};

/**
 * struct sio_dev_export - what a lender gives @dev_export
 * @bar0: BAR0 mapped in the lender's process; @bar0_size its size;
 *	@bar0_bus its bus address (UINT64_MAX: not known), for a window onto it
 * @db_end: where BAR0's registers end (an MSI-X table may follow): nothing
 *	from there on is written on a remote borrower's behalf
 * @db: BAR0's doorbells and registers, as the device's driver describes
 *	them (struct sio_doorbells): the relay forwards those doorbells and
 *	nothing else; none (count 0) where no driver described them
 * @dma_map: map @len bytes at @va of this process for the device's DMA, the
 *	device's address in *@bus (vfio: through the IOMMU); @phys is their
 *	bus address where the fabric knows it (its window is a PCI BAR), else
 *	UINT64_MAX: a device without an IOMMU (uio) is given that; @dma_unmap
 *	undoes it
 * @ctx: their first argument
 * @how: out: how the other kernels' stores reach BAR0 (a window, or the relay
 *	and why), for the lender to say
 */
struct sio_dev_export {
	volatile void *bar0;
	uint64_t bar0_size;
	uint64_t bar0_bus;
	uint64_t db_end;
	struct sio_doorbells db;
	void *ctx;
	int (*dma_map)(void *ctx, void *va, uint64_t len, uint64_t phys, uint64_t *bus);
	int (*dma_unmap)(void *ctx, uint64_t bus, uint64_t len);
	/* what the lender's log should say later (NULL: nothing): memory the
	 * device cannot reach yet, and again; called from the relay's thread */
	void (*say)(void *ctx, const char *msg);
	char how[160];
};

extern const struct sio_fabric_ops sio__shm_fabric_ops;	/* backend/shm/ */
extern const struct sio_fabric_ops sio__shmwin_fabric_ops;	/* backend/shmwin/ */
extern const struct sio_fabric_ops sio__ntb_fabric_ops;	/* backend/ntb/ */

/*
 * The fabric backend $SMARTIO_FABRIC_BACKEND names (default "shm"), or
 * -EINVAL naming the ones there are (core/backends.c).
 */
int sio__fabric_backend(const struct sio_fabric_ops **out);

/**
 * struct sio_device_ops - what a device backend provides to the core
 * @name: the backend's name, for messages ("sim", "vfio")
 * @fabric_bars: the device's BARs are segments of the fabric, emulated by
 *	its model: registering the device creates them, and borrowers map
 *	them as any segment, through windows. Otherwise @bar_map serves them.
 * @host_local: the device reaches memory of its own host only, so hint
 *	placement keeps everything local ("near the lender" means nothing).
 * @bar_map: map BAR @bar whole into this process; *@size is what was
 *	mapped, and the core unmaps it with munmap(). Called for BARs that are
 *	not fabric segments only; NULL when @fabric_bars.
 * @dma_map: make @seg reachable for the device's DMA and put in *@bus the
 *	address the device must use (its own bus domain). Mapping the same
 *	segment again through the same borrow gives the same address.
 * @dma_unmap: undo @dma_map; -ENOENT if @seg was not mapped.
 * @mcast_map: put in *@bus the address at which one device write reaches
 *	every subscriber of multicast @group; NULL when the backend has no
 *	multicast (the core then fails with -ENOTSUP).
 * @bar_path: optional: how stores to BAR @bar reach the device, with what
 *	more there is to say in @why ("no window: ...", "" for nothing). NULL:
 *	SIO_BAR_PATH_FABRIC_SEGMENT with @fabric_bars, else SIO_BAR_PATH_MAPPED
 * @release: the borrow ends (sio_device_close()): drop what the backend
 *	holds for it, such as a connection to the lender; mappings made
 *	through it must go too. NULL when it holds nothing of its own.
 *
 * DMA masks: @dma_map places the mapping at or below dev->dma_mask when it
 * can choose (an IOVA allocator, the simulator); the core checks every
 * address it returns against the mask either way and undoes a mapping that
 * does not fit (a backend that cannot choose, such as physical addresses,
 * needs nothing more).
 *
 * Interrupts (optional: NULL where the backend has none, and
 * sio_device_irq_enable() then fails with -EOPNOTSUPP):
 * @irq_enable: enable @nvec vectors of one of @kinds (SIO_IRQ_F bits, 0 for
 *	any, best first) and put in @fds one fd per vector that polls
 *	readable when it fired; the backend owns them. Return the kind. An
 *	entry of @fds that comes in as SIO__IRQ_SKIP is a vector this borrow
 *	does not take: a backend that can leaves it -1 and unopened.
 * @irq_disable: undo @irq_enable and close the fds.
 * @irq_take: take what vector @vec has pending without blocking: the
 *	count, or -EAGAIN. NULL when the fds are eventfds (the core reads them).
 * @irq_unmask: re-arm vector @vec once the device is serviced (a level
 *	interrupt is masked when it fires). NULL when there is nothing to do.
 * @irq_gone: registry lock held, any process: borrow @borrow of device @id
 *	is released with vectors @vecs still marked bound in its slot (its
 *	process died): drop what the backend left for them on this host.
 *	NULL when it leaves nothing.
 */
struct sio_device_ops {
	const char *name;
	bool fabric_bars;
	bool host_local;
	int (*bar_map)(struct sio_device *dev, int bar, void **vaddr, uint64_t *size);
	int (*dma_map)(struct sio_device *dev, struct sio_segment *seg, uint64_t *bus);
	int (*dma_unmap)(struct sio_device *dev, struct sio_segment *seg);
	int (*mcast_map)(struct sio_device *dev, uint32_t group, uint64_t *bus);
	enum sio_bar_path (*bar_path)(struct sio_device *dev, int bar, char *why, size_t len);
	void (*release)(struct sio_device *dev);
	int (*irq_enable)(struct sio_device *dev, unsigned int kinds, int nvec, int *fds);
	void (*irq_disable)(struct sio_device *dev);
	int (*irq_take)(struct sio_device *dev, int vec);
	int (*irq_unmask)(struct sio_device *dev, int vec);
	void (*irq_gone)(struct sio_fabric *f, uint32_t id, int borrow, uint32_t vecs);
};

extern const struct sio_device_ops sio__sim_device_ops;	/* backend/sim/device.c */
extern const struct sio_device_ops sio__vfio_device_ops;	/* backend/vfio/client.c */
extern const struct sio_device_ops sio__uio_device_ops;	/* backend/vfio/client.c too */

/*
 * The ops of device backend @backend (enum sio_device_backend), or NULL
 * when this libsmartio was built without it (core/backends.c).
 */
const struct sio_device_ops *sio__device_ops(int backend);
/* Its name, known even when it is not built in: "sim", "vfio", "unknown". */
const char *sio__device_backend_name(int backend);

#endif
