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
 * On the holder's own kernel its pid settles it at once. A live holder is
 * waited for up to $SMARTIO_LOCK_TIMEOUT_MS, then named in the error.
 *
 * A lease cannot fence: a holder stalled past the lease (a guest paused for
 * seconds) and then resumed would run on beside the new one. Leases long
 * against the longest stall are the defence, as on any fabric without a
 * common kernel.
 */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>
#include "parse.h"
#include "winfab.h"

static __thread uint32_t my_tix;
static _Atomic uint32_t next_tix;

static uint64_t token(void)
{
	if (!my_tix)
		my_tix = (atomic_fetch_add(&next_tix, 1) % 0xffffu) + 1;
	return wf_proc_token() | my_tix;
}

static uint64_t timeout_ns(void)
{
	const char *e = getenv("SMARTIO_LOCK_TIMEOUT_MS");
	uint64_t ms;

	if (!e || !*e || sio_parse_u64(e, 1, SIO_LOCK_TIMEOUT_MAX_MS, &ms))
		ms = 5000;
	return ms * 1000000ull;
}

/* The holder's details, stamped with its token: trusted only while they are the owner's. */
static void took(struct wf_lock *l, struct sio_fabric *f, uint64_t me)
{
	l->node = f->node;
	l->pid = getpid();
	l->boot = wf_boot_id();
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
	    boot != wf_boot_id() || !wf_trust_pids())
		return false;
	return pid > 0 && wf_pid_dead(pid);
}

int wf_lease_lock(struct sio_fabric *f, struct wf_lock *l, bool *holder_died)
{
	uint64_t me = token(), v = 0, lease, seen_v = 0, seen_l = 0, seen_t, start, limit;
	uint64_t nap = 20000;

	*holder_died = false;
	if (atomic_compare_exchange_strong(&l->owner, &v, me)) {
		took(l, f, me);
		return 0;
	}
	start = seen_t = sio__now_ns();
	limit = timeout_ns();
	for (;;) {
		uint64_t now = sio__now_ns();
		bool dead = false;

		v = atomic_load(&l->owner);
		lease = atomic_load(&l->lease);
		if (v && v != me) {
			if (v != seen_v || lease != seen_l) {
				seen_v = v;
				seen_l = lease;
				seen_t = now;
			} else if (now - seen_t >= wf_lease_ns()) {
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
		if (now - start >= limit)
			return sio__err(ETIMEDOUT, "fabric '%s': its registry lock has been held for over %.1f s by pid %d on node %d, whose lease is still renewed",
					f->name, (double)limit / 1e9, l->pid, l->node);
		struct timespec ts = { 0, (long)nap };
		nanosleep(&ts, NULL);
		if (nap < 2000000)
			nap *= 2;
	}
}

void wf_lease_unlock(struct wf_lock *l)
{
	uint64_t me = token();

	/* only the holder unlocks: a caller whose lock failed frees no one's */
	atomic_compare_exchange_strong(&l->owner, &me, 0);
}

/* Heartbeat thread: renew the lease while a thread of this process holds the lock. */
void wf_lease_renew(struct wf_lock *l)
{
	if ((atomic_load(&l->owner) & ~0xffffull) == wf_proc_token())
		atomic_fetch_add(&l->lease, 1);
}
