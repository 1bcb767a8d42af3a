/* SPDX-License-Identifier: MIT */
/*
 * The lease lock of the window fabric, for sources whose memory takes atomic
 * operations from every kernel (shmwin: one host's RAM): a lease in the
 * shared memory. The owner
 * word holds the holder's token (its process's random token and a thread
 * number: thread ids mean nothing on another kernel); the lease word moves
 * while the holder's heartbeat thread runs. A waiter that sees neither move
 * for $SMARTIO_SHMWIN_LEASE_MS (default 5 s) of its own clock takes the lock
 * over, the holder's node having died (a guest killed, a kernel stopped).
 * On the holder's own kernel its pid settles it at once. One live holder is
 * waited for up to $SMARTIO_LOCK_TIMEOUT_MS, then named in the error: live,
 * as its lease moved after that time. The bound is on a holder, not on the
 * wait: a lock that passes from holder to holder is progress (a hundred
 * processes opening the fabric at once), and this lock is not a queue, so
 * a waiter may lose many turns; it gives up, saying it was contention,
 * only after WF_BUSY_TIMEOUTS times the timeout. A lease that stands still
 * is waited out, however much longer than the timeout it is, or a lock
 * whose holder died could never be taken over.
 *
 * A lease cannot fence: a holder stalled past the lease (a guest paused for
 * seconds) and then resumed would run on beside the new one. Leases long
 * against the longest stall are the defence, as on any fabric without a
 * common kernel.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>
#include <linux/futex.h>
#include <sys/syscall.h>
#include "proc.h"
#include "winfab.h"

/* Sleeps between looks at a lock another kernel holds. */
#define NAP_MIN_NS	20000u
#define NAP_MAX_NS	2000000u
/* ... and at one this kernel holds: its unlock wakes a sleeper. */
#define NAP_LOCAL_MAX_NS 50000000u

/*
 * Cleared once a futex call on the lock failed for want of a futex
 * (the window is device memory: an ivshmem BAR): naps alone from then.
 */
static _Atomic bool futex_ok = true;

/* The owner word's low half, which a futex can wait on (little-endian). */
static uint32_t *owner_low(struct wf_lock *l)
{
	return (uint32_t *)&l->owner;
}

/*
 * One nap of a waiter for a lock held as @v. A holder on this kernel wakes
 * one sleeper when it lets go, so the nap may be long and a hundred
 * waiters do not poll the word; a holder on another kernel wakes no one,
 * so the waiter looks again at NAP_MAX_NS at most.
 */
static void lease_nap(struct wf_lock *l, uint64_t v, struct sio_backoff *b)
{
	struct timespec ts;
	bool sleep = atomic_load(&l->info) == v && l->boot == sio__wf_boot_id() &&
		     atomic_load(&futex_ok);

	b->max_ns = sleep ? NAP_LOCAL_MAX_NS : NAP_MAX_NS;
	if (!sleep) {
		sio_backoff_wait(b);
		return;
	}
	ts.tv_sec = b->sleep_ns / 1000000000u;
	ts.tv_nsec = b->sleep_ns % 1000000000u;
	if (syscall(SYS_futex, owner_low(l), FUTEX_WAIT, (uint32_t)v, &ts, NULL, 0) &&
	    (errno == EFAULT || errno == ENOSYS))
		atomic_store(&futex_ok, false);
	b->sleep_ns = b->sleep_ns * 2 < b->max_ns ? b->sleep_ns * 2 : b->max_ns;
}
/* A lock that passes among others is given up after this many timeouts. */
#define WF_BUSY_TIMEOUTS 4

static __thread uint32_t my_tix;
static _Atomic uint32_t next_tix;

static uint64_t token(void)
{
	if (!my_tix)
		my_tix = (atomic_fetch_add(&next_tix, 1) % 0xffffu) + 1;
	return sio__wf_proc_token() | my_tix;
}

static uint64_t timeout_ns(void)
{
	uint64_t ns;

	/* refused when the fabric was opened; the default if changed since */
	sio__lock_timeout_ns(&ns);
	return ns;
}

/* The holder's details, stamped with its token: trusted only while they are the owner's. */
static void took(struct wf_lock *l, struct sio_fabric *f, uint64_t me)
{
	l->node = f->node;
	l->pid = getpid();
	l->boot = sio__wf_boot_id();
	atomic_store(&l->info, me);
	atomic_fetch_add(&l->lease, 1);
}

/* Has the holder @v died on this kernel? Only when the details are its own. */
static bool holder_dead_here(struct wf_lock *l, uint64_t v)
{
	int pid;
	uint64_t boot;

	if (atomic_load(&l->info) != v)
		return false;
	pid = l->pid;
	boot = l->boot;
	atomic_thread_fence(memory_order_acquire);
	if (atomic_load(&l->info) != v || atomic_load(&l->owner) != v ||
	    boot != sio__wf_boot_id() || !sio__wf_trust_pids())
		return false;
	return pid > 0 && sio__task_dead(pid);
}

/*
 * Why a waiter gives up: one live holder kept the lock for @limit since
 * @held_t (its lease moved since: alive), or it passed among @turns other
 * holders for WF_BUSY_TIMEOUTS times @limit. 0: wait on.
 */
static int lease_wait_over(struct sio_fabric *f, struct wf_lock *l, uint64_t now,
			   uint64_t start, uint64_t held_t, uint64_t seen_t, unsigned int turns)
{
	uint64_t limit = timeout_ns();

	if (now - held_t >= limit && seen_t - held_t >= limit)
		return sio__err(ETIMEDOUT, "fabric '%s': its registry lock has been held for over %.1f s by pid %d on node %d, whose lease is still renewed",
				f->name, (double)limit / 1e9, l->pid, l->node);
	if (now - start >= WF_BUSY_TIMEOUTS * limit)
		return sio__err(ETIMEDOUT, "fabric '%s': its registry lock passed among %u other holders while we waited %.1f s (contention: raise $SMARTIO_LOCK_TIMEOUT_MS, or start fewer at once)",
				f->name, turns, (double)(now - start) / 1e9);
	return 0;
}

int sio__wf_lease_lock(struct sio_fabric *f, struct wf_lock *l, bool *holder_died)
{
	uint64_t me = token(), v = 0, lease, seen_v = 0, seen_l = 0, seen_t, held_t, start;
	struct sio_backoff b = wf_nap(NAP_MIN_NS, NAP_MAX_NS);
	unsigned int turns = 0;
	int ret;

	*holder_died = false;
	if (atomic_compare_exchange_strong(&l->owner, &v, me)) {
		took(l, f, me);
		return 0;
	}
	start = seen_t = held_t = sio__now_ns();
	for (;;) {
		uint64_t now = sio__now_ns();
		bool dead = false;

		v = atomic_load(&l->owner);
		lease = atomic_load(&l->lease);
		if (v && v != me) {
			if (v != seen_v) {	/* another holder: progress */
				turns += seen_v != 0;
				held_t = now;
			}
			if (v != seen_v || lease != seen_l) {
				seen_v = v;
				seen_l = lease;
				seen_t = now;
			} else if (now - seen_t >= sio__wf_lease_ns()) {
				dead = true;	/* its lease ran out */
			}
			dead = dead || holder_dead_here(l, v);
		}
		if (!v || v == me || dead) {
			if (atomic_compare_exchange_strong(&l->owner, &v, me)) {
				*holder_died = v != 0;
				took(l, f, me);
				return 0;
			}
			continue;
		}
		if ((ret = lease_wait_over(f, l, now, start, held_t, seen_t, turns)))
			return ret;
		lease_nap(l, v, &b);
	}
}

void sio__wf_lease_unlock(struct wf_lock *l)
{
	uint64_t me = token();

	/* only the holder unlocks: a caller whose lock failed frees no one's */
	if (atomic_compare_exchange_strong(&l->owner, &me, 0) && atomic_load(&futex_ok) &&
	    syscall(SYS_futex, owner_low(l), FUTEX_WAKE, 1, NULL, NULL, 0) < 0 &&
	    (errno == EFAULT || errno == ENOSYS))
		atomic_store(&futex_ok, false);
}

/* Heartbeat thread: renew the lease while a thread of this process holds the lock. */
void sio__wf_lease_renew(struct wf_lock *l)
{
	if ((atomic_load(&l->owner) & ~0xffffull) == sio__wf_proc_token())
		atomic_fetch_add(&l->lease, 1);
}

/*
 * The bakery (Lamport's), for sources whose shared memory takes no atomic
 * operation from another kernel (an NTB: a locked read-modify-write does not
 * cross PCIe). Each kernel has an entry in the header, written only by the
 * one process of that kernel that holds the kernel's own lock (@local, a
 * lease lock on a page of that host, where atomics work): it takes a number
 * above every other, then waits for each kernel with a smaller one. Every
 * store is fenced before the next load (store-load order, and write
 * combining flushed): the bakery needs no more than ordered loads and
 * stores. A kernel whose entry's lease stands still for the lease time is
 * dead: its entry is cleared by the waiter, which reaps at once. The
 * fencing caveat of the lease lock holds here too.
 */

static bool holds_local(struct wf_lock *local)
{
	return atomic_load(&local->owner) == token();
}

/* Lock held: wait until kernel @j's entry lets entry @me in; -ETIMEDOUT past @deadline. */
static int bakery_wait(struct sio_fabric *f, struct wf_bakery *b, int j, int me,
		       uint64_t deadline, bool *died)
{
	uint32_t mine = atomic_load(&b[me].number);
	uint64_t lease = atomic_load(&b[j].lease), seen = sio__now_ns();
	struct sio_backoff nap = wf_nap(NAP_MIN_NS, NAP_MAX_NS);

	for (;;) {
		uint32_t n = atomic_load(&b[j].number);
		uint64_t now = sio__now_ns(), l = atomic_load(&b[j].lease);

		if (!atomic_load(&b[j].choosing) && (!n || n > mine || (n == mine && j > me)))
			return 0;
		if (l != lease) {
			lease = l;
			seen = now;
		} else if (now - seen >= sio__wf_lease_ns()) {
			/* its kernel stopped renewing: dead, or cut off for the lease */
			atomic_store(&b[j].number, 0);
			atomic_store(&b[j].choosing, 0);
			atomic_thread_fence(memory_order_seq_cst);
			*died = true;
			return 0;
		}
		if (now >= deadline && seen >= deadline)	/* renewed since: alive */
			return sio__err(ETIMEDOUT, "fabric '%s': its registry lock has been held for over %.1f s by pid %d of node %d, whose lease is still renewed",
					f->name, (double)timeout_ns() / 1e9, b[j].pid, j);
		sio_backoff_wait(&nap);
	}
}

int sio__wf_bakery_lock(struct sio_fabric *f, struct wf_lock *local, int me, bool *holder_died)
{
	struct wf_fabric *s = wf_of(f);
	struct wf_bakery *b = s->hdr->bakery;
	uint64_t deadline = sio__now_ns() + timeout_ns();
	uint32_t max = 0;
	int ret;

	if (me < 0 || me >= WF_MAX_POOLS)
		return sio__err(EINVAL, "fabric '%s': kernel %d has no bakery entry", f->name, me);
	if (__atomic_load_n(&s->hdr->magic, __ATOMIC_ACQUIRE) != WF_MAGIC)
		return sio__err(EHOSTDOWN, "fabric '%s': its state in %s cannot be read (the link to its home is down, or it was destroyed)",
				f->name, s->src->what(s, WF_STATE));
	if ((ret = sio__wf_lease_lock(f, local, holder_died)))
		return ret;
	atomic_store(&b[me].choosing, 1);
	atomic_thread_fence(memory_order_seq_cst);
	for (int j = 0; j < WF_MAX_POOLS; j++) {
		uint32_t n = atomic_load(&b[j].number);

		if (n > max && n < UINT32_MAX / 2)
			max = n;
	}
	atomic_store(&b[me].number, max + 1);
	b[me].pid = getpid();
	atomic_thread_fence(memory_order_seq_cst);
	atomic_store(&b[me].choosing, 0);
	atomic_thread_fence(memory_order_seq_cst);
	for (int j = 0; j < WF_MAX_POOLS; j++) {
		if (j != me && (ret = bakery_wait(f, b, j, me, deadline, holder_died))) {
			sio__wf_bakery_unlock(f, local, me);
			return ret;
		}
	}
	atomic_thread_fence(memory_order_seq_cst);	/* the registry's loads after the bakery's */
	return 0;
}

void sio__wf_bakery_unlock(struct sio_fabric *f, struct wf_lock *local, int me)
{
	struct wf_bakery *b = wf_of(f)->hdr->bakery;

	if (!holds_local(local) || me < 0 || me >= WF_MAX_POOLS)
		return;	/* only the holder: a caller whose lock failed frees no one's */
	atomic_thread_fence(memory_order_seq_cst);	/* the registry's stores first */
	atomic_store(&b[me].number, 0);
	atomic_thread_fence(memory_order_seq_cst);
	sio__wf_lease_unlock(local);
}

/* Heartbeat thread: while a thread of this process holds the local lock, both leases move. */
void sio__wf_bakery_renew(struct wf_fabric *s, struct wf_lock *local, int me)
{
	struct wf_bakery *e;

	if ((atomic_load(&local->owner) & ~0xffffull) != sio__wf_proc_token())
		return;
	atomic_fetch_add(&local->lease, 1);
	if (me < 0 || me >= WF_MAX_POOLS)
		return;
	e = &s->hdr->bakery[me];
	atomic_store(&e->lease, atomic_load(&e->lease) + 1);	/* its one writer: no RMW */
}
