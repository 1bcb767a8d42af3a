/* SPDX-License-Identifier: MIT */
/*
 * The registry lock of the shm fabric backend (its lock op; it stays here
 * by name): a futex word holding the holder's thread id. A robust
 * pthread mutex in shared memory trusts its owner field, so any process of
 * the fabric (or a bit flip) could wedge every other one forever. Here the
 * wait is bounded and looks at the holder: one that no longer exists (it
 * died, or the word was forged) is taken over; a live one is waited for up
 * to $SMARTIO_LOCK_TIMEOUT_MS (default 5 s), then the caller gets an error
 * naming it and does not touch the registry.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <linux/futex.h>
#include <sys/syscall.h>
#include "parse.h"
#include "shm/shm.h"

#define LOCK_TIMEOUT_MS		5000
#define LOCK_SLICE_MAX_NS	50000000ull	/* longest sleep between looks at the holder */

static __thread uint32_t my_tid;
static pthread_once_t atfork_once = PTHREAD_ONCE_INIT;

/* A forked child is a new thread: its id is not its parent's. */
static void forget_tid(void)
{
	my_tid = 0;
}

static void atfork_init(void)
{
	pthread_atfork(NULL, NULL, forget_tid);
}

static uint32_t self_tid(void)
{
	if (!my_tid) {
		pthread_once(&atfork_once, atfork_init);
		my_tid = (uint32_t)syscall(SYS_gettid);
	}
	return my_tid;
}

static uint64_t timeout_ns(void)
{
	const char *e = getenv("SMARTIO_LOCK_TIMEOUT_MS");
	uint64_t ms;

	/* refused when the fabric was opened; the default if changed since */
	if (!e || !*e || sio_parse_u64(e, 1, SIO_LOCK_TIMEOUT_MAX_MS, &ms))
		ms = LOCK_TIMEOUT_MS;
	return ms * 1000000ull;
}

/* Does thread @tid still run? A zombie holds nothing. */
static bool tid_alive(uint32_t tid)
{
	return tid && tid <= REG_LOCK_TID && !sio__shm_task_dead((int)tid);
}

/* "thread T of pid P (comm), a process of this fabric", for messages. */
static void describe(struct sio_fabric *f, uint32_t tid, char *out, size_t len)
{
	char path[64], line[128], comm[64] = "?";
	int tgid = 0;
	bool member = false;
	FILE *fp;

	snprintf(path, sizeof(path), "/proc/%u/status", tid);
	if ((fp = fopen(path, "re"))) {
		while (fgets(line, sizeof(line), fp)) {
			if (!strncmp(line, "Name:", 5))
				sscanf(line + 5, " %63s", comm);
			else if (!strncmp(line, "Tgid:", 5))
				sscanf(line + 5, " %d", &tgid);
		}
		fclose(fp);
	}
	/* read unlocked, for the message only */
	for (int p = 0; p < SIO_MAX_PROCS && tgid > 0; p++)
		member |= f->reg->procs[p].used && f->reg->procs[p].pid == tgid;
	if (tgid > 0 && (uint32_t)tgid != tid)
		snprintf(out, len, "thread %u of pid %d (%s)", tid, tgid, comm);
	else
		snprintf(out, len, "pid %u (%s)", tid, comm);
	snprintf(out + strlen(out), len - strlen(out), member ? ", a process of this fabric" :
		 ", which is not a process of this fabric (a forged or stale lock word)");
}

int sio__shm_lock(struct sio_fabric *f, bool *holder_died)
{
	_Atomic uint32_t *w = &f->reg->lock.word;
	uint32_t me = self_tid(), v = 0, holder;
	uint64_t start = 0, limit = 0, slice = 1000000ull;
	char who[192];

	*holder_died = false;
	if (atomic_compare_exchange_strong(w, &v, me))
		return 0;
	for (;;) {
		v = atomic_load(w);
		holder = v & REG_LOCK_TID;
		/* free, or held by no one alive (this thread never nests) */
		if (!holder || holder == me || !tid_alive(holder)) {
			/* keep the waiters bit: others may sleep on the word */
			if (atomic_compare_exchange_strong(w, &v, me | REG_LOCK_WAITERS)) {
				*holder_died = holder != 0;
				return 0;
			}
			continue;
		}
		if (!start) {
			start = sio__now_ns();
			limit = timeout_ns();
		} else if (sio__now_ns() - start >= limit) {
			describe(f, holder, who, sizeof(who));
			return sio__err(ETIMEDOUT, "fabric '%s': its registry lock has been held for over %.1f s by %s",
					f->name, (double)limit / 1e9, who);
		}
		if (!(v & REG_LOCK_WAITERS) &&
		    !atomic_compare_exchange_strong(w, &v, v | REG_LOCK_WAITERS))
			continue;
		struct timespec ts = { .tv_sec = 0, .tv_nsec = (long)slice };
		syscall(SYS_futex, w, FUTEX_WAIT, v | REG_LOCK_WAITERS, &ts, NULL, 0);
		if (slice < LOCK_SLICE_MAX_NS)
			slice *= 2;
	}
}

void sio__shm_unlock(struct sio_fabric *f)
{
	_Atomic uint32_t *w = &f->reg->lock.word;
	uint32_t v;

	/* only the holder unlocks: a caller whose lock failed frees no one's */
	if ((atomic_load(w) & REG_LOCK_TID) != self_tid())
		return;
	v = atomic_exchange(w, 0);
	if (v & REG_LOCK_WAITERS)
		syscall(SYS_futex, w, FUTEX_WAKE, 1, NULL, NULL, 0);
}
