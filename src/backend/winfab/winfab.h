/* SPDX-License-Identifier: MIT */
#ifndef SIO_WINFAB_H
#define SIO_WINFAB_H

/*
 * The window fabric: a fabric whose nodes are separate kernels that reach
 * one another's memory through PCI windows, the code that the shmwin and ntb
 * fabric backends share. Everything shared lives in memory that every
 * kernel maps: a header of the window fabric's own (the lock, a heartbeat
 * per process slot, where each segment sits, an event ring per process,
 * per-device relay state), the core's registry, then the segments, carved
 * from pools of memory.
 *
 * Nothing here relies on a common kernel: liveness is a heartbeat counter
 * read against this process's own clock (the kernels' clocks are not
 * comparable); events are rings in the shared memory; notifications ring
 * the other kernels' doorbells where there are some and are polled
 * otherwise. Pids are kept for messages, and are trusted only where the
 * peer runs on this very kernel (same boot id).
 *
 * Where the memory comes from is a window source (struct wf_source):
 *
 *   shmwin (backend/shmwin/)  one PCI window (an ivshmem BAR2) that every
 *                             kernel maps whole: the state at its start, one
 *                             pool for every node's segments after it
 *   ntb (backend/ntb/)        the Linux NTB framework: each node's memory is
 *                             its own, exported through inbound windows and
 *                             reached through outbound ones; the state lives
 *                             at the start of one node's memory, and each node
 *                             has a pool of its own
 *
 * Each word of the shared memory is written by one kernel at a time (its
 * owner, or the lock's holder), except where a source says its memory takes
 * atomic operations from every kernel (shmwin: one host's RAM). A source
 * whose memory does not (an NTB: a locked read-modify-write does not cross
 * PCIe) brings a lock of its own.
 */

#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>
#include <smartio/backoff.h>
#include "internal.h"

#define WF_MAGIC		0x31304e49574f4953ull	/* "SIOWIN01" */
#define WF_VERSION		12	/* 3: the bakery; 4: wf_pool.unreached; 5: the relay's counters; 6: own windows; 7: wf_dev.desc; 8: wf_home; 9: wf_dev.db_emulated; 10: wf_pool.reach1; 11: wf_pool.reach0; 12: wf_dev.pool_bus per adapter */
#define WF_EVQ_LEN		32
#define WF_PAGE			4096ull
#define WF_LEASE_MS		5000	/* $SMARTIO_SHMWIN_LEASE_MS: longer than a TCG guest stalls */
#define WF_BEAT_NS		50000000ull	/* heartbeat period */
#define WF_MAX_POOLS		64	/* pools of memory for segments: one per node at most */
#define WF_STATE		(-1)	/* the pool argument that names the state's memory */

/* The lease lock: no thread ids; an owner token and a lease its holder renews. */
struct wf_lock {
	_Atomic uint64_t owner;		/* 0 free, else the holder's token */
	_Atomic uint64_t lease;		/* bumped by the holder's heartbeat */
	int32_t node, pid;		/* the holder, for messages */
	uint64_t boot;			/* its kernel (boot id hash) */
	_Atomic uint64_t info;		/* the token these details are of */
};

/*
 * The bakery: the lock among kernels where no atomic operation crosses them
 * (lock.c). An entry per kernel (its pool's index), written only by the
 * process of that kernel that holds the kernel's own lock.
 */
struct wf_bakery {
	_Atomic uint32_t choosing, number;	/* number 0: not in the bakery */
	_Atomic uint64_t lease;		/* moves while the entry's holder lives */
	int32_t pid, rsvd;		/* the holder, for messages */
};

struct wf_proc {			/* per reg->procs slot */
	_Atomic uint64_t token;		/* this life of the slot: its process's token and claim, 0: none */
	_Atomic uint64_t beat;		/* moves while it lives (its own thread writes it) */
	uint64_t boot;			/* its kernel */
	int32_t pid, node;
	int32_t peer;			/* its kernel's doorbell id (shmwin: ivshmem), -1: none */
	int32_t rsvd;
};

/*
 * A pool of memory for segments: pool @i's memory as its source maps it,
 * from @off on, @size bytes. @epoch moves when the memory is new (ntb: the
 * node's service started again): segments placed in an older one are gone.
 */
struct wf_pool {
	uint64_t off, size;		/* size 0: no pool (yet) */
	uint64_t epoch;
	uint64_t unreached;		/* ntb: nodes whose window to it is not translated */
	int32_t seg_windows;		/* ntb: windows per peer its node translates per segment, 0: none */
	uint32_t xlat_align;		/* ntb: its hardware driver's translation alignment, KiB */
	uint64_t reach1;		/* ntb: ports whose NTB of adapter 1 reaches its memory too */
	uint64_t reach0;		/* ntb, inbound translation: ports whose window 0 of
					 * adapter 0's NTB its node translated onto it */
};

/*
 * A segment's own window (ntb: backend/ntb/ownwin.c): node @peer's
 * connection to segment slot @seg of node @owner, through an inbound window
 * of @owner's NTB for @peer translated to that segment alone. The
 * connecting process writes the request (@seq moves; registry lock held),
 * the owner's node service the answer (@done = @seq, then @widx or @err);
 * the service clears the translation once no window of the core's counts
 * @peer's connection (sio__reg_window_get()). An entry whose owner's pool epoch
 * is not @epoch is void.
 */
#define WF_OWNWINS		128
struct wf_ownwin {
	uint32_t seq;			/* the requester's; 0: never used */
	int32_t seg;
	uint64_t seg_gen;
	int32_t owner, peer;		/* nodes (ntb: ports) */
	uint64_t epoch;			/* the owner's pool epoch */
	_Atomic uint32_t done;		/* the owner's service's from here on */
	int32_t widx;			/* its inbound window for @peer, -1: none */
	int32_t err;			/* why none: an errno */
	uint32_t rsvd;
	uint64_t size;			/* the translation's bytes */
};

struct wf_seg {				/* per reg->segs slot: where its memory is */
	uint64_t off, len;		/* from its pool's start; len 0: none */
	uint64_t gen;			/* the reg_seg gen it was made for */
	int32_t pool, rsvd;
	uint64_t epoch;			/* its pool's epoch then */
};

struct wf_evq {				/* per process slot: events to it */
	_Atomic uint32_t head, tail;	/* head: the sender's (lock held), tail: the reader's */
	struct sio_event ev[WF_EVQ_LEN];
};

/*
 * A device of one kernel (vfio, uio) lent to the others (relay.c): its
 * lender maps each pool into the device's bus space at @pool_bus[0][pool]
 * (0: not reachable), so a segment's bus address is pool_bus + its offset;
 * where its source reaches a pool through a further adapter too (ntb: a
 * second NTB), at @pool_bus[adapter][pool] as well, for borrowers on a
 * path through that adapter (0: none, adapter 0's serves), and
 * keeps a copy of BAR0's registers, as many as @desc, the lender's
 * description of BAR0 (struct sio_doorbells), says. Where its source can (ntb: an
 * inbound window of each peer translated to BAR0), the other kernels store
 * to BAR0 through a window: @db_window (-1: none; @db_err says why, an
 * errno), at @db_off in it, for the ports in @db_ports; @db_emulated when
 * the source's driver emulates that translation in software (the label
 * says so). Otherwise each remote
 * borrower gets a BAR0 mirror (a segment on the lender's node); the lender's
 * relay forwards the writes it sees there of the doorbells @desc describes
 * to the real BAR0 (none where it describes none).
 */
#define WF_MIRRORS		32
#define WF_RELAY_DOORBELLS	2050	/* doorbells the relay looks at, at most (NVMe: 1024 I/O queue pairs and the admin's) */
#define WF_DB_EMPTY		0xffffffffu	/* a mirror doorbell the relay has taken */
struct wf_dev {
	uint64_t gen;			/* the reg_dev gen this is for */
	uint64_t bar0_size;
	int32_t regs_slot;		/* the register page copy: segment slot, gen */
	uint32_t db_emulated;		/* 1: @db_window's translation is emulated */
	uint64_t regs_gen;
	_Atomic uint64_t relay_beat;	/* the relay's heartbeat */
	_Atomic uint64_t relayed;	/* doorbell writes forwarded */
	_Atomic uint64_t relay_wait_ns;	/* each: since the relay's look before the one that found it */
	_Atomic uint64_t relay_fwd_ns;	/* each: its write to BAR0 */
	struct { int32_t slot, rsvd; uint64_t gen; } mirror[WF_MIRRORS];
	/* where the device reaches each pool through each adapter, and the
	 * pool's epoch when it was mapped there */
	uint64_t pool_bus[SIO_MAX_ADAPTERS][WF_MAX_POOLS];
	uint64_t pool_epoch[SIO_MAX_ADAPTERS][WF_MAX_POOLS];
	int32_t db_window, db_err;
	uint64_t db_off, db_ports;
	struct sio_doorbells desc;	/* BAR0's doorbells and registers, as the lender described them */
};

/*
 * How a borrow's stores reach BAR0 (wf_hdr.borrow_db, for smartio status),
 * as the window fabric records it; relay.c tells it as enum sio_bar_path.
 */
enum wf_db_path { WF_DB_LOCAL = 0, WF_DB_RELAY, WF_DB_WINDOW, WF_DB_WINDOW_EMULATED };

/*
 * A multicast group that a lent device writes to (relay.c): its landing
 * segment, which the device's writes reach; the lender's relay copies it
 * into every subscriber's segment.
 */
struct wf_group {
	int32_t slot, rsvd;		/* the landing segment: slot, gen */
	uint64_t gen;
	uint64_t group_gen;		/* the reg_group gen it serves */
};

/*
 * Where the state lives (ntb: backend/ntb/home.c): @port, the home, whose
 * memory holds it; @standby, a node that keeps a copy at the start of its
 * own memory, written by every holder of the registry lock before it
 * unlocks, and that becomes the home when the home's link goes down
 * (-1: none). @epoch moves at each take-over. @mirror is the copy's own
 * word, never copied: WF_MIRROR_WHOLE once a copy ended with the home's
 * state intact, 0 while one is under way or after one that was torn.
 */
#define WF_MIRROR_WHOLE		0x57484f4cu	/* "WHOL" */
struct wf_home {
	int32_t port, standby;
	uint32_t epoch;
	_Atomic uint32_t mirror;
};

struct wf_hdr {
	uint64_t magic;
	uint32_t version, rsvd;
	uint64_t size;			/* the state's memory, as its source laid it out */
	uint64_t create_gen;		/* moves at each create: a handle of an older fabric is stale */
	char name[SIO_NAME_MAX];
	uint64_t reg_off;		/* the registry, in the state's memory */
	struct wf_lock lock;
	struct wf_bakery bakery[WF_MAX_POOLS];
	struct wf_pool pools[WF_MAX_POOLS];
	struct wf_proc procs[SIO_MAX_PROCS];
	struct wf_seg segs[SIO_MAX_SEGS];
	struct wf_evq evq[SIO_MAX_PROCS];
	struct wf_dev devs[SIO_MAX_DEVS];
	struct wf_group groups[SIO_MAX_GROUPS];
	struct wf_ownwin ownwin[WF_OWNWINS];
	struct {			/* per borrow slot: its doorbell path, while it is this borrow */
		int32_t dev, proc;
		int32_t path, err;	/* enum wf_db_path; the relay's reason, an errno */
	} borrow_db[SIO_MAX_BORROWS];
	struct wf_home home;
};

/* Where the registry and the data follow the header in a source's layout. */
#define WF_REG_OFF		SIO__ALIGN_UP(sizeof(struct wf_hdr), WF_PAGE)
#define WF_STATE_END		SIO__ALIGN_UP(WF_REG_OFF + sizeof(struct sio_registry), 64 * 1024)

/*
 * The host's wake page (wake.c), in host_path "wake": doorbells of other
 * kernels, delivered to this host's receiver process, and local notifies
 * move @seq, on which the host's waiters sleep (futex).
 */
struct wf_wake {
	_Atomic uint32_t seq;		/* moves at every interrupt or local notify */
	int32_t pid;			/* the receiving process, 0: none */
	_Atomic uint64_t interrupts;
	_Atomic uint64_t rung;		/* doorbells rung from this host */
};

struct wf_fabric;

/**
 * struct wf_source - where a window fabric's memory comes from
 * @name: "shmwin", "ntb": messages and the host directory's name
 * @map: map [@off, @off + @len) of pool @pool's memory (WF_STATE: the
 *	state's: header, registry) into this process
 * @unmap: undo @map
 * @bus: the bus address of pool @pool's memory at offset 0, which a device
 *	without an IOMMU is given; UINT64_MAX where it has none
 * @pool_of: the pool in which segments of node @node live
 * @ring: ring every other kernel's doorbell once; the count rung. NULL:
 *	no doorbells, waiters poll.
 * @beat: the heartbeat thread's hook, every period (optional)
 * @lock, @unlock: the registry lock (struct sio_fabric_ops says how)
 * @bar_export: optional: let the other kernels store to a BAR of this host
 *	(@bus, @size bytes) through windows; -errno where the hardware cannot
 *	(the relay then serves them). Set @d's db_window, db_off, db_ports
 *	and db_emulated.
 * @bar_unexport: undo @bar_export
 * @bar_map: optional: map @size bytes of device record @d's BAR window, as
 *	node @node (the lender's) exports it
 * @map_via: optional: as @map, through further adapter @a (1 and up) of
 *	this node; -EHOSTUNREACH where that adapter does not reach the pool
 *	(the caller takes @map's way)
 * @bus_via: optional: as @bus, through further adapter @a; UINT64_MAX where
 *	it has none
 * @what: pool @pool's memory (WF_STATE: the state's), for messages ("the
 *	window (file /x)", "port 2's memory (the NTB /dev/smartio-ntb0)")
 */
struct wf_source {
	const char *name;
	int (*map)(struct wf_fabric *s, int pool, uint64_t off, uint64_t len, bool rdonly,
		   void **va);
	void (*unmap)(struct wf_fabric *s, void *va, uint64_t len);
	uint64_t (*bus)(struct wf_fabric *s, int pool);
	int (*pool_of)(struct wf_fabric *s, int node);
	int (*ring)(struct wf_fabric *s);
	void (*beat)(struct wf_fabric *s);
	int (*lock)(struct sio_fabric *f, bool *holder_died);
	void (*unlock)(struct sio_fabric *f);
	int (*bar_export)(struct wf_fabric *s, struct wf_dev *d, uint64_t bus, uint64_t size);
	void (*bar_unexport)(struct wf_fabric *s, struct wf_dev *d);
	int (*bar_map)(struct wf_fabric *s, const struct wf_dev *d, int node, uint64_t size,
		       void **va);
	int (*map_via)(struct wf_fabric *s, int a, int pool, uint64_t off, uint64_t len,
		       bool rdonly, void **va);
	uint64_t (*bus_via)(struct wf_fabric *s, int a, int pool);
	const char *(*what)(struct wf_fabric *s, int pool);
};

/* What the backend keeps per fabric handle (sio_fabric.be). */
struct wf_fabric {
	const struct wf_source *src;
	void *priv;			/* the source's own */
	struct wf_hdr *hdr;		/* the header, mapped */
	uint64_t create_gen;
	int evfd;			/* eventfd the heartbeat thread signals, or -1 */
	int slot;			/* our proc slot, or -1 */
	uint64_t tok;			/* its token: this process's, and which of its claims */
	int32_t peer;			/* this kernel's doorbell id for wf_proc.peer, -1: none */
	/* what this process saw of each slot's heartbeat, on its own clock, and
	 * of which life (the token: a slot freed is taken by a new one) */
	uint64_t seen_beat[SIO_MAX_PROCS], seen_ns[SIO_MAX_PROCS], seen_tok[SIO_MAX_PROCS];
	struct wf_fabric *next;		/* the heartbeat thread's list */
	struct wf_relay *relays;	/* devices this process exports (relay.c) */
	struct wf_wake *wake;		/* this host's wake page, or NULL: polling */
	uint64_t checked_ns;		/* when the receiver was last seen alive */
	bool receiver;
	struct sio_fabric *f;
};

static inline struct wf_fabric *wf_of(struct sio_fabric *f)
{
	return (struct wf_fabric *)f->be;
}

/*
 * The window fabric's waits for memory another kernel writes go through
 * the one back-off (smartio/backoff.h), but sleep at once, without
 * spinning or yielding (the writer is often on another kernel), from
 * @first_ns doubling up to @max_ns.
 */
static inline struct sio_backoff wf_nap(uint32_t first_ns, uint32_t max_ns)
{
	struct sio_backoff b;

	sio_backoff_init(&b, 0, 0, max_ns);
	b.sleep_ns = first_ns;
	return b;
}

/* state.c: identities, liveness, the heartbeat thread, the state's lifetime */
uint64_t sio__wf_boot_id(void);
uint64_t sio__wf_proc_token(void);
/* $SMARTIO_SHMWIN_LEASE_MS in @ns (sio__env_ms()): 0, or -EINVAL naming a bad value. */
int sio__wf_lease_check(uint64_t *ns);
uint64_t sio__wf_lease_ns(void);
bool sio__wf_trust_pids(void);
uint64_t sio__wf_fnv(const char *p);
struct wf_fabric *sio__wf_new(struct sio_fabric *f, const struct wf_source *src);
/* A new fabric's header, after the source claimed it (magic set): fill it, map the registry. */
int sio__wf_init(struct sio_fabric *f, struct wf_fabric *s, uint64_t size, uint64_t create_gen);
/* Is the mapped header fabric @name's, laid out as this smartio lays it? */
int sio__wf_check(struct wf_fabric *s, const char *name, uint64_t size, const char *how_to_create);
/* Map the registry of a checked header and start the handle's life. */
int sio__wf_attach(struct sio_fabric *f, struct wf_fabric *s);
/* Undo sio__wf_attach (or sio__wf_init); the source's state is then its to drop. */
void sio__wf_detach(struct sio_fabric *f, struct wf_fabric *s);
void sio__wf_beat_add(struct wf_fabric *s);
void sio__wf_beat_del(struct wf_fabric *s);
int sio__wf_host_path(struct sio_fabric *f, const char *leaf, char *buf, size_t len);
/* Has a process of this host been in fabric @name (its wake page is here)? */
bool sio__wf_host_knew(const struct wf_fabric *s, const char *name);
/* Fabric @name destroyed: this host's files of it (wake page, sockets) go. */
void sio__wf_host_forget(const struct wf_fabric *s, const char *name);
bool sio__wf_removed(struct sio_fabric *f);
void sio__wf_proc_init(struct sio_fabric *f, struct reg_proc *p);
bool sio__wf_proc_alive(struct sio_fabric *f, const struct reg_proc *p);
void sio__wf_proc_gone(struct sio_fabric *f, int proc);
int sio__wf_lock(struct sio_fabric *f, bool *holder_died);
void sio__wf_unlock(struct sio_fabric *f);

/* lock.c: the lease lock, for a source whose memory takes atomics from every kernel */
int sio__wf_lease_lock(struct sio_fabric *f, struct wf_lock *l, bool *holder_died);
void sio__wf_lease_unlock(struct wf_lock *l);
void sio__wf_lease_renew(struct wf_lock *l);
/*
 * The bakery lock, for a source whose memory does not: @local (a lease lock
 * on a page of this host) among this kernel's processes, then entry @me of
 * the header's bakery among the kernels.
 */
int sio__wf_bakery_lock(struct sio_fabric *f, struct wf_lock *local, int me, bool *holder_died);
void sio__wf_bakery_unlock(struct sio_fabric *f, struct wf_lock *local, int me);
void sio__wf_bakery_renew(struct wf_fabric *s, struct wf_lock *local, int me);

/* seg.c */
int sio__wf_seg_create(struct sio_fabric *f, int slot, unsigned int flags);
void sio__wf_seg_remove(struct sio_fabric *f, int slot);
int sio__wf_seg_map(struct sio_fabric *f, int slot, uint64_t off, uint64_t len, bool rdonly,
		    void **vaddr);
void sio__wf_seg_unmap(struct sio_fabric *f, void *vaddr, uint64_t len);
/* Segment slot @slot's pool and its offset there (from the pool's memory start), checked. */
int sio__wf_seg_where(struct sio_fabric *f, int slot, int *pool, uint64_t *off, uint64_t *len);
/* Map bytes [@off, @off + @len) of segment slot @slot, checked. */
int sio__wf_slot_map(struct sio_fabric *f, int slot, uint64_t off, uint64_t len, bool rdonly, void **va);
/* ... through adapter @a where the source reaches its pool through it, else as above. */
int sio__wf_slot_map_via(struct sio_fabric *f, int slot, int a, uint64_t off, uint64_t len,
			 bool rdonly, void **va);
/* mmap() of an fd at any offset, whole pages inside; sio__wf_munmap() undoes it. */
int sio__wf_mmap(int fd, uint64_t off, uint64_t len, bool rdonly, const char *what, void **va);
void sio__wf_munmap(void *va, uint64_t len);

/* relay.c */
const struct sio_device_ops *sio__wf_dev_ops(struct sio_fabric *f, int dev);
enum sio_bar_path sio__wf_borrow_doorbells(struct sio_fabric *f, int borrow, char *why,
					   size_t len);
void sio__wf_dev_relay(struct sio_fabric *f, int dev, struct sio_device_info *o);
int sio__wf_dev_export(struct sio_fabric *f, int dev, struct sio_dev_export *x);
void sio__wf_dev_unexport(struct sio_fabric *f, int dev);

/* wake.c: the host's wake page, and the receiver that feeds it */
void sio__wf_wake_open(struct sio_fabric *f, struct wf_fabric *s);
void sio__wf_wake_close(struct wf_fabric *s);
/* Wake this host's sleepers and ring every other kernel once (the source's ring). */
int sio__wf_wake_all(struct wf_fabric *s);
/* Sleep on the wake page while *@word is @old, at most @ns: false when no receiver serves this host. */
bool sio__wf_wake_sleep(struct wf_fabric *s, uint32_t *word, uint32_t old, uint64_t ns);
/* This process is (no longer) the host's receiver; @n doorbells of other kernels came to it. */
void sio__wf_wake_receive(struct wf_fabric *s, bool on);
void sio__wf_wake_rx(struct wf_fabric *s, uint64_t n);
/* The receiver: every event on @efd (doorbells of other kernels) wakes this host's waiters. */
int sio__wf_doorbell_serve(struct sio_fabric *f, int efd, volatile sig_atomic_t *stop, FILE *log,
		      const char *what);

/* event.c */
int sio__wf_ev_open(struct sio_fabric *f);
void sio__wf_ev_close(struct sio_fabric *f);
void sio__wf_ev_send(struct sio_fabric *f, int proc, const struct sio_event *ev);
int sio__wf_ev_fd(struct sio_fabric *f);
int sio__wf_ev_read(struct sio_fabric *f, struct sio_event *ev, int max);
int sio__wf_notify(struct sio_fabric *f, uint32_t *word);
int sio__wf_wait(struct sio_fabric *f, uint32_t *word, uint32_t old, uint64_t timeout_ns);
/* The heartbeat thread: wake this handle's event fd when its ring holds events. */
void sio__wf_ev_poll(struct wf_fabric *s);

/* The fabric ops every window source shares; a backend fills in the rest. */
#define WF_FABRIC_OPS \
	.host_path = sio__wf_host_path, \
	.lock = sio__wf_lock, \
	.unlock = sio__wf_unlock, \
	.proc_alive = sio__wf_proc_alive, \
	.proc_gone = sio__wf_proc_gone, \
	.seg_create = sio__wf_seg_create, \
	.seg_remove = sio__wf_seg_remove, \
	.seg_map = sio__wf_seg_map, \
	.seg_unmap = sio__wf_seg_unmap, \
	.ev_open = sio__wf_ev_open, \
	.ev_close = sio__wf_ev_close, \
	.ev_send = sio__wf_ev_send, \
	.ev_fd = sio__wf_ev_fd, \
	.ev_read = sio__wf_ev_read, \
	.notify = sio__wf_notify, \
	.wait = sio__wf_wait, \
	.dev_ops = sio__wf_dev_ops, \
	.borrow_doorbells = sio__wf_borrow_doorbells, \
	.dev_relay = sio__wf_dev_relay, \
	.dev_export = sio__wf_dev_export, \
	.dev_unexport = sio__wf_dev_unexport

#endif
