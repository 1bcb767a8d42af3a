/* SPDX-License-Identifier: MIT */
#ifndef SIO_SHMWIN_H
#define SIO_SHMWIN_H

/*
 * The shmwin fabric backend: a fabric whose nodes are separate kernels that
 * share one PCI memory window (the BAR2 of a QEMU ivshmem function in each
 * guest; on one host, a file stands in for it). Everything shared lives in
 * the window: a header of the backend's own (the lease lock, a heartbeat
 * per process slot, where each segment sits, an event ring per process,
 * per-device relay state), the core's registry, then the segments.
 *
 * Nothing here relies on a common kernel: the lock is a lease renewed by
 * its holder's heartbeat thread and taken over when it stops moving;
 * liveness is a heartbeat counter, read against this process's own clock
 * (the kernels' clocks are not comparable); events are rings in the window;
 * notifications are polled. Pids are kept for messages, and are trusted
 * only where the peer runs on this very kernel (same boot id).
 *
 * How a node maps the window is one replaceable piece (window.c): a file,
 * a PCI BAR through sysfs (resourceN, whatever driver holds the function),
 * or another source added there (UIO) -- an fd and an offset to mmap.
 */

#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>
#include "internal.h"

#define SHMWIN_MAGIC		0x31304e49574f4953ull	/* "SIOWIN01" */
#define SHMWIN_VERSION		1
#define SHMWIN_EVQ_LEN		32
#define SHMWIN_PAGE		4096ull
#define SHMWIN_LEASE_MS		5000	/* $SMARTIO_SHMWIN_LEASE_MS: longer than a TCG guest stalls */
#define SHMWIN_BEAT_NS		50000000ull	/* heartbeat period */

/* Where a node finds the window: the piece that differs per host setup. */
struct shmwin_win {
	int fd;			/* mmap()able */
	uint64_t base;		/* offset of the window in @fd */
	uint64_t size;
	char what[160];		/* for messages: "file /x", "PCI 0000:00:05.0 BAR2" */
	char bdf[16];		/* a PCI source's function, else "" */
	int bar;
	uint64_t bus;		/* a PCI source's bus address (sysfs resource), else UINT64_MAX */
};

/* window.c: $SMARTIO_SHMWIN names it: a file path, or pci:BDF[:BAR] (default BAR 2). */
int shmwin_win_open(const char *spec, bool create, struct shmwin_win *w);
void shmwin_win_close(struct shmwin_win *w);

/* The lease lock: no thread ids; an owner token and a lease its holder renews. */
struct shmwin_lock {
	_Atomic uint64_t owner;		/* 0 free, else the holder's token */
	_Atomic uint64_t lease;		/* bumped by the holder's heartbeat */
	int32_t node, pid;		/* the holder, for messages */
	uint64_t boot;			/* its kernel (boot id hash) */
	_Atomic uint64_t info;		/* the token these details are of */
};

struct shmwin_proc {			/* per reg->procs slot */
	_Atomic uint64_t token;		/* the process's token, 0: none */
	_Atomic uint64_t beat;		/* moves while it lives */
	uint64_t boot;			/* its kernel */
	int32_t pid, node;
	int32_t peer;			/* its kernel's ivshmem doorbell id, -1: none */
	int32_t rsvd;
};

struct shmwin_seg {			/* per reg->segs slot: its place in the window */
	uint64_t off, len;		/* from the data area's start; len 0: none */
	uint64_t gen;			/* the reg_seg gen it was made for */
};

struct shmwin_evq {			/* per process slot: events to it */
	_Atomic uint32_t head, tail;	/* head: the sender's (lock held), tail: the reader's */
	struct sio_event ev[SHMWIN_EVQ_LEN];
};

/*
 * A device of one kernel (vfio) lent to the others (relay.c): its lender
 * maps the whole window into the device's IOVA space at @window_bus, so a
 * segment's bus address is window_bus + its offset in the window, and keeps
 * a copy of BAR0's register page. Each remote borrower gets a BAR0 mirror
 * (a segment of its own); the lender's relay forwards the doorbell writes
 * it sees there to the real BAR0.
 */
#define SHMWIN_MIRRORS		32
#define SHMWIN_RELAY_QUEUES	1024	/* I/O queue pairs whose doorbells may be relayed */
#define SHMWIN_DB_EMPTY		0xffffffffu	/* a mirror doorbell the relay has taken */
struct shmwin_dev {
	uint64_t gen;			/* the reg_dev gen this is for */
	uint64_t window_bus;		/* the device's address of the window's start */
	uint64_t bar0_size;
	int32_t regs_slot;		/* the register page copy: segment slot, gen */
	uint32_t dstrd;			/* CAP.DSTRD */
	uint64_t regs_gen;
	_Atomic uint64_t relay_beat;	/* the relay's heartbeat */
	_Atomic uint64_t relayed;	/* doorbell writes forwarded */
	struct { int32_t slot, rsvd; uint64_t gen; } mirror[SHMWIN_MIRRORS];
};

/*
 * A multicast group that a lent device writes to (relay.c): its landing
 * segment in the window, which the device's writes reach; the lender's
 * relay copies it into every subscriber's segment.
 */
struct shmwin_group {
	int32_t slot, rsvd;		/* the landing segment: slot, gen */
	uint64_t gen;
	uint64_t group_gen;		/* the reg_group gen it serves */
};

struct shmwin_hdr {
	uint64_t magic;
	uint32_t version, rsvd;
	uint64_t size;			/* the window's */
	uint64_t create_gen;		/* moves at each create: a handle of an older fabric is stale */
	char name[SIO_NAME_MAX];
	uint64_t reg_off, data_off, data_size;
	struct shmwin_lock lock;
	struct shmwin_proc procs[SIO_MAX_PROCS];
	struct shmwin_seg segs[SIO_MAX_SEGS];
	struct shmwin_evq evq[SIO_MAX_PROCS];
	struct shmwin_dev devs[SIO_MAX_DEVS];
	struct shmwin_group groups[SIO_MAX_GROUPS];
};

/*
 * Doorbells (doorbell.c), where the window is an ivshmem-doorbell function:
 * a notification rings every other kernel's doorbell (BAR0 Doorbell
 * register, peer << 16 | vector 0); in each kernel one process holds the
 * function through vfio (smartio vfio doorbell) and turns its MSI-X
 * interrupt, delivered to an eventfd, into a futex wake on a wake page of
 * this host, on which the kernel's waiters sleep. Without it, polling.
 */
struct shmwin_wake {			/* the host's wake page, in host_path "wake" */
	_Atomic uint32_t seq;		/* moves at every interrupt or local notify */
	int32_t pid;			/* the receiving process, 0: none */
	_Atomic uint64_t interrupts;
	_Atomic uint64_t rung;		/* doorbells rung from this host */
};

struct shmwin_db {
	volatile uint32_t *regs;	/* BAR0 of the ivshmem-doorbell function */
	int peer;			/* its IVPosition */
	struct shmwin_wake *wake;
	uint64_t checked_ns;		/* when the receiver was last seen alive */
	bool receiver;
};

/* What the backend keeps per fabric handle (sio_fabric.be). */
struct shmwin_fabric {
	struct shmwin_win win;
	struct shmwin_hdr *hdr;		/* the header, mapped */
	uint64_t create_gen;
	int evfd;			/* eventfd the heartbeat thread signals, or -1 */
	int slot;			/* our proc slot, or -1 */
	/* what this process saw of each slot's heartbeat, on its own clock */
	uint64_t seen_beat[SIO_MAX_PROCS], seen_ns[SIO_MAX_PROCS];
	struct shmwin_fabric *next;	/* the heartbeat thread's list */
	struct shmwin_relay *relays;	/* devices this process exports (relay.c) */
	struct shmwin_db db;
	struct sio_fabric *f;
};

static inline struct shmwin_fabric *shmwin_of(struct sio_fabric *f)
{
	return (struct shmwin_fabric *)f->be;
}

/* state.c */
uint64_t shmwin_boot_id(void);
uint64_t shmwin_proc_token(void);
uint64_t shmwin_lease_ns(void);
bool shmwin_trust_pids(void);
bool shmwin_pid_dead(int pid);
void shmwin_beat_add(struct shmwin_fabric *s);
void shmwin_beat_del(struct shmwin_fabric *s);

/* lock.c */
int sio__shmwin_lock(struct sio_fabric *f, bool *holder_died);
void sio__shmwin_unlock(struct sio_fabric *f);
void shmwin_lock_renew(struct shmwin_fabric *s);

/* seg.c */
int sio__shmwin_seg_create(struct sio_fabric *f, int slot, unsigned int flags);
void sio__shmwin_seg_remove(struct sio_fabric *f, int slot);
int sio__shmwin_seg_map(struct sio_fabric *f, int slot, uint64_t off, uint64_t len, bool rdonly,
			void **vaddr);
void sio__shmwin_seg_unmap(struct sio_fabric *f, void *vaddr, uint64_t len);
/* The window offset of segment slot @slot's memory, checked; -errno. */
int shmwin_seg_where(struct sio_fabric *f, int slot, uint64_t *off, uint64_t *len);
/* Map [@off, @off + @len) of the window (page aligned inside); munmap with shmwin_unmap(). */
int shmwin_map(struct shmwin_fabric *s, uint64_t off, uint64_t len, bool rdonly, void **vaddr);
void shmwin_unmap(void *vaddr, uint64_t len);

/* relay.c */
const struct sio_device_ops *sio__shmwin_dev_ops(struct sio_fabric *f, int dev);
int sio__shmwin_dev_export(struct sio_fabric *f, int dev, const struct sio_dev_export *x);
void sio__shmwin_dev_unexport(struct sio_fabric *f, int dev);

/* doorbell.c */
void shmwin_db_open(struct sio_fabric *f, struct shmwin_fabric *s);
void shmwin_db_close(struct shmwin_fabric *s);
int shmwin_db_ring(struct sio_fabric *f);
/* Sleep on the wake page while *@word is @old, at most @ns: false when no receiver serves this host. */
bool shmwin_db_sleep(struct shmwin_fabric *s, uint32_t *word, uint32_t old, uint64_t ns);
/* The receiver: every event on @efd (the function's interrupt) wakes this host's waiters. */
int sio__shmwin_doorbell_serve(struct sio_fabric *f, int efd, volatile sig_atomic_t *stop,
			       FILE *log);

/* event.c */
int sio__shmwin_ev_open(struct sio_fabric *f);
void sio__shmwin_ev_close(struct sio_fabric *f);
void sio__shmwin_ev_send(struct sio_fabric *f, int proc, const struct sio_event *ev);
int sio__shmwin_ev_fd(struct sio_fabric *f);
int sio__shmwin_ev_read(struct sio_fabric *f, struct sio_event *ev, int max);
int sio__shmwin_notify(struct sio_fabric *f, uint32_t *word);
int sio__shmwin_wait(struct sio_fabric *f, uint32_t *word, uint32_t old, uint64_t timeout_ns);
/* The heartbeat thread: wake this handle's event fd when its ring holds events. */
void shmwin_ev_poll(struct shmwin_fabric *s);

#endif
