/* SPDX-License-Identifier: MIT */
#ifndef SIO_REGISTRY_H
#define SIO_REGISTRY_H

/*
 * The fabric registry: one region that every process of the fabric maps
 * (the fabric backend provides it; shm: a file in the fabric's directory),
 * guarded by a lock whose holder is known (shm: reglock.c): a dead holder
 * is taken over and a live one waited for a bounded time, so nothing can
 * wedge the others. Fixed-size tables: no
 * pointers, only slot indices, since every process maps it elsewhere. A
 * slot's gen moves each time it is reused, so a stale handle is detected.
 *
 * Everything here is input: any process of the fabric can write it, and a
 * bit flip is a bit flip. regcheck.c validates the whole registry when a
 * process joins; afterwards every index read from it goes through the
 * reg_*_at() accessors below before it indexes anything.
 */

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <smartio/fabric.h>
#include <smartio/path.h>
#include <smartio/segment.h>
#include <smartio/model.h>

#define SIO_REG_MAGIC		0x534d494fu	/* "SMIO" */
#define SIO_REG_VERSION		6	/* 2: lock word, owner and group; 3: backend; 4: kept segments;
				 * 5: grants by (node, pid); 6: a borrow's bound vectors */
#define SIO_MAX_PROCS		512
#define SIO_MAX_SEGS		4096
_Static_assert(SIO_MAX_SEGS == SIO_GPU_SEG_SLOTS, "a GPU segment's slot indexes its plugin's table");
#define SIO_MAX_DEVS		64
#define SIO_MAX_BORROWS		1024
#define SIO_MAX_DMAMAPS		4096
#define SIO_MAX_PMAPS		4096
#define SIO_MAX_WINDOWS		64	/* per adapter, upper bound of the setting */
#define SIO_MAX_GROUPS		64
#define SIO_MAX_SUBS		256
#define SIO_MAX_GRANTS		1024
#define SIO_AUTO_SEG_ID		0x10000u

/* Bus address layout of every node's domain. */
#define SIO_BUS_LOCAL_BASE	0x100000000000ull	/* + slot << 32 */
#define SIO_BUS_WINDOW_BASE	0x400000000000ull	/* + adapter << 42 + w * window_size */
#define SIO_BUS_MCAST_BASE	0x600000000000ull	/* + group << 32 */

struct reg_proc {
	int32_t used;
	int32_t pid;
	int32_t node;
	int32_t flags;		/* REG_PROC_F_* */
	uint64_t starttime;	/* the fabric backend's liveness check (shm: the start
				 * time in /proc/PID/stat, against pid reuse) */
};

/* reg_proc.flags: a process that joined only to destroy the fabric (not
 * one that keeps it busy: another destroy does not count it) */
#define REG_PROC_F_DESTROY	1

struct reg_node {
	int32_t sw[SIO_MAX_ADAPTERS];	/* switch each adapter is cabled to */
	_Atomic uint8_t link_up[SIO_MAX_ADAPTERS];
	int32_t windows_used[SIO_MAX_ADAPTERS];
};

struct reg_seg {
	int32_t used;
	uint32_t id;
	int32_t node;
	int32_t owner;		/* proc slot; -1: a kept segment whose owner died */
	uint64_t size;
	uint64_t gen;
	int32_t kind;
	int32_t device;		/* dev slot for BARs, else -1 */
	int32_t bar;
	uint8_t huge;
	uint8_t keep;		/* SIO_SEG_F_KEEP: outlives its owner's death */
	char name[SIO_NAME_MAX];
	int32_t gpu;		/* CUDA device ordinal for GPU segments */
	uint8_t gpu_handle[SIO_GPU_HANDLE_MAX];	/* the exporter's IPC handle */
};

struct reg_window {
	int32_t refs;
	int32_t seg;
	uint64_t seg_gen;
};

struct reg_pmap {		/* a process mapping of a remote segment */
	int32_t used;
	int32_t proc;
	int32_t seg;
	int32_t node, adapter, window;
};

struct reg_dev {
	int32_t used;
	uint32_t id;
	int32_t lender;
	int32_t owner;		/* registering proc */
	uint32_t class_code;
	uint16_t vendor, device;
	int32_t backend;
	int32_t nbars;
	int32_t bar_seg[SIO_MAX_BARS];
	uint64_t bar_size[SIO_MAX_BARS];
	uint8_t chassis;
	int32_t excl;		/* borrow slot holding it exclusively, or -1 */
	int32_t nborrows;
	uint64_t gen;
	int32_t restricted[SIO_MAX_BARS];	/* per BAR: restricting borrow slot + 1, 0: open */
	uint64_t public_len[SIO_MAX_BARS];	/* per BAR: read-only prefix open to all */
	_Atomic uint64_t dma_faults, dma_linkdown, last_fault;
	char name[SIO_NAME_MAX];
	char bdf[16];
	char svc[108];
};

struct reg_borrow {
	int32_t used;
	int32_t dev;
	int32_t proc;
	int32_t excl;
	/* the vectors the borrower bound a socket for (simulated fabric: bit v
	 * for vector v), so that a raise writes only to those; the borrower's
	 * own word, changed with atomic operations and read by the raiser
	 * without the lock */
	uint32_t irq_vecs;
	uint32_t rsvd;
};

struct reg_dmamap {
	int32_t used;
	int32_t dev;
	int32_t borrow;		/* -1: kept for the device after its borrow went
				 * (a kept segment's, sio__reg_borrow_release()) */
	int32_t seg;		/* -1 for a multicast mapping */
	int32_t group;		/* group slot, or -1 */
	int32_t window;		/* -1 when the segment is in the lender's domain */
	int32_t win_node, win_adapter;
	int32_t link_node[2], link_adapter[2];	/* -1: no link on the path */
	uint64_t seg_gen;
	uint64_t bus;
	uint64_t size;
	uint32_t rt_ns, ow_ns;
};

struct reg_grant {		/* a BAR range one process may map read-write */
	int32_t used;
	int32_t dev;
	int32_t bar;
	int32_t pid;		/* the grantee: pid @pid of node @node (a pid */
	int32_t node;		/* alone names no process once kernels differ) */
	int32_t rsvd;
	uint64_t off, len;
};

struct reg_group {
	int32_t used;
	int32_t owner;
	uint64_t size;
	uint64_t gen;
	int32_t nsubs;
	int32_t sub_seg[SIO_MAX_SUBS];
	uint64_t sub_gen[SIO_MAX_SUBS];
};

/*
 * The registry lock's words, the fabric backend's to use. shm: @word 0
 * free, else the holder's thread id (| waiters bit); @tickets the queue
 * of waiters, the next ticket in the low 16 bits, the one served in the
 * high 16 (reglock.c).
 */
#define REG_LOCK_WAITERS	0x80000000u
#define REG_LOCK_TID		0x3fffffffu
struct reg_lock {
	_Atomic uint32_t word;
	_Atomic uint32_t tickets;
};

#define REG_F_GROUP		1u	/* members of gid may join (smartio create --group) */

/*
 * The header is written by the core and the fabric backend together: the
 * backend sets who owns the fabric (uid, gid, flags) and hugedir, and uses
 * lock; the core the rest.
 */
struct sio_registry {
	uint32_t magic, version;
	uint64_t size;
	struct reg_lock lock;
	uint32_t uid, gid;	/* creator; gid: the group that may join, with REG_F_GROUP */
	uint32_t flags;
	uint32_t rsvd;
	struct sio_topology topo;
	_Atomic uint64_t map_gen;	/* moves on any map/unmap/link change */
	uint64_t last_reap_ns;
	uint64_t next_gen;
	uint32_t next_dev_id;
	uint32_t next_seg_id[SIO_MAX_NODES];
	char hugedir[128];
	char backend[16];	/* the fabric backend that made it ("shm") */
	struct reg_node nodes[SIO_MAX_NODES];
	struct reg_proc procs[SIO_MAX_PROCS];
	struct reg_seg segs[SIO_MAX_SEGS];
	struct reg_window windows[SIO_MAX_NODES][SIO_MAX_ADAPTERS][SIO_MAX_WINDOWS];
	struct reg_pmap pmaps[SIO_MAX_PMAPS];
	struct reg_dev devs[SIO_MAX_DEVS];
	struct reg_borrow borrows[SIO_MAX_BORROWS];
	struct reg_dmamap dmamaps[SIO_MAX_DMAMAPS];
	struct reg_group groups[SIO_MAX_GROUPS];
	struct reg_grant grants[SIO_MAX_GRANTS];
};

struct sio_fabric;

/*
 * Checked accessors: NULL when index @i, read from the registry, is out of
 * its table. Callers treat NULL as a corrupt entry (skip it, or fail with
 * sio__reg_corrupt()).
 */
#define REG_AT(r, tab, i) ((unsigned)(i) < sizeof((r)->tab) / sizeof((r)->tab[0]) ? &(r)->tab[i] : NULL)
static inline struct reg_proc *reg_proc_at(struct sio_registry *r, int i) { return REG_AT(r, procs, i); }
static inline struct reg_seg *reg_seg_at(struct sio_registry *r, int i) { return REG_AT(r, segs, i); }
static inline struct reg_dev *reg_dev_at(struct sio_registry *r, int i) { return REG_AT(r, devs, i); }
static inline struct reg_borrow *reg_borrow_at(struct sio_registry *r, int i) { return REG_AT(r, borrows, i); }
static inline struct reg_group *reg_group_at(struct sio_registry *r, int i) { return REG_AT(r, groups, i); }
/* The pid of proc slot @i, for messages; -1 when @i is out of range. */
static inline int reg_proc_pid(struct sio_registry *r, int i)
{
	const struct reg_proc *p = reg_proc_at(r, i);

	return p ? p->pid : -1;
}
/* The window entry of (@node, @adapter, @window), or NULL outside the topology. */
struct reg_window *sio__reg_window_at(struct sio_fabric *f, int node, int adapter, int window);

/* regcheck.c: validation of what the registry holds. */
int sio__reg_check_header(const struct sio_registry *r, const char *name);
/* -ENOLINK where f's state lies across a link and its registry reads all
 * ones (the link is down: out of reach, not corrupt); else 0. */
int sio__reg_reach_check(struct sio_fabric *f);
int sio__reg_validate(struct sio_fabric *f);
int sio__reg_corrupt(struct sio_fabric *f, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
int sio__reg_topo_check(const struct sio_topology *t, const char **why);

/* registry.c: table operations, all called with the lock held. */
int sio__reg_window_get(struct sio_fabric *f, int node, int adapter, int seg, uint64_t *bus);
void sio__reg_window_put(struct sio_fabric *f, int node, int adapter, int window);
void sio__reg_borrow_release(struct sio_fabric *f, int b);
void sio__reg_pmap_release(struct sio_fabric *f, int i);
void sio__reg_grants_drop(struct sio_fabric *f, int dev, int bar, int node, int pid);
void sio__reg_dmamap_release(struct sio_fabric *f, int m);
void sio__reg_seg_release(struct sio_fabric *f, int s, bool notify);
void sio__reg_dev_release(struct sio_fabric *f, int d);
void sio__reg_proc_release(struct sio_fabric *f, int p, bool died);
int sio__reg_reap(struct sio_fabric *f);
static inline uint64_t reg_seg_bus(int slot) { return SIO_BUS_LOCAL_BASE + ((uint64_t)slot << 32); }
static inline void reg_bump(struct sio_registry *r)
{
	atomic_fetch_add_explicit(&r->map_gen, 1, memory_order_release);
}

#endif
