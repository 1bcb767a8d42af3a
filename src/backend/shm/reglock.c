/* SPDX-License-Identifier: MIT */
/*
 * The registry lock of the shm fabric backend (its lock op; it stays here
 * by name): a futex word holding the holder's thread id, and a ticket
 * queue in front of it. A robust pthread mutex in shared memory trusts its
 * owner field, so any process of the fabric (or a bit flip) could wedge
 * every other one forever. Here:
 *
 * - waiters queue fairly: each takes a ticket and takes the word in its
 *   turn, so a thousand processes arriving at once are served in order,
 *   each waiting for those before it, none starved by later ones;
 * - the wait is bounded by progress, not by the queue's length: it fails
 *   only when the holder keeps the word, or the queue does not move, for
 *   $SMARTIO_LOCK_TIMEOUT_MS (default 5 s), and then names the holder (a
 *   process of the fabric, or one joining it) or says it was contention;
 * - a holder that no longer exists (it died, or the word was forged with a
 *   dead thread's id) is taken over, and so is a live process that is no
 *   process of this fabric (it does not even map the registry): a forged
 *   word; a ticket whose turn is not taken (its waiter died or went) is
 *   passed over.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <linux/futex.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include "proc.h"
#include "shm/shm.h"

#define SLICE_MAX_NS		50000000ull	/* longest sleep between looks */
#define TURN_SKIP_NS		500000000ull	/* a turn not taken this long is passed over */
#define STRANGER_LOOK_NS	100000000ull	/* a holder this long is asked who it is */

static __thread uint32_t my_tid;
static __thread uint32_t my_ticket_turn;	/* 1: took the word in its turn */
static pthread_once_t atfork_once = PTHREAD_ONCE_INIT;

/* A forked child is a new thread: its id is not its parent's. */
static void forget_tid(void)
{
	my_tid = 0;
	my_ticket_turn = 0;
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
	uint64_t ns;

	/* refused when the fabric was opened; the default if changed since */
	sio__lock_timeout_ns(&ns);
	return ns;
}

/* Does thread @tid still run? A zombie holds nothing. */
static bool tid_alive(uint32_t tid)
{
	return tid && tid <= REG_LOCK_TID && !sio__task_dead((int)tid);
}

/* Whether thread @tid maps this fabric's registry: 1, 0, or -1 when its
 * maps cannot be read (another user's, for a group fabric). */
static int maps_registry(struct sio_fabric *f, uint32_t tid)
{
	struct shm_fabric *s = shm_of(f);
	unsigned int maj, min;
	unsigned long ino;
	char path[64], line[512];
	struct stat st;
	int found = 0;
	FILE *fp;

	if (fstat(s->regfd, &st))
		return -1;
	snprintf(path, sizeof(path), "/proc/%u/maps", tid);
	fp = fopen(path, "re");
	if (!fp)
		return -1;
	while (!found && fgets(line, sizeof(line), fp))
		found = sscanf(line, "%*s %*s %*s %x:%x %lu", &maj, &min, &ino) == 3 &&
			ino == st.st_ino && makedev(maj, min) == st.st_dev ? 1 : 0;
	fclose(fp);
	return found;
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
		 maps_registry(f, tid) == 1 ? ", a process joining or leaving this fabric" :
		 ", which is not a process of this fabric (a forged or stale lock word)");
}

static uint16_t t_next(uint32_t t)
{
	return (uint16_t)t;
}

static uint16_t t_serving(uint32_t t)
{
	return (uint16_t)(t >> 16);
}

/* A ticket: the next number, the low half counting on its own. */
static uint16_t take_ticket(_Atomic uint32_t *tk)
{
	uint32_t v = atomic_load(tk);

	while (!atomic_compare_exchange_weak(tk, &v, (v & 0xffff0000u) | (uint16_t)(v + 1)))
		;
	return t_next(v);
}

/* The turn passes from @from to the next ticket (unless it moved on). */
static void pass_turn(_Atomic uint32_t *tk, uint16_t from)
{
	uint32_t v = atomic_load(tk);

	while (t_serving(v) == from) {
		if (!atomic_compare_exchange_weak(tk, &v, v + 0x10000u))
			continue;
		/* someone queued: the waiters of the next ticket (mod 32) look,
		 * the others sleep on */
		if (t_next(v) != (uint16_t)(from + 1))
			syscall(SYS_futex, tk, FUTEX_WAKE_BITSET, INT32_MAX, NULL, NULL,
				1u << ((uint16_t)(from + 1) & 31));
		return;
	}
}

struct waiter {
	uint16_t ticket;
	uint64_t start, limit;	/* limit: 0 until a wait needs it (limit_of()) */
	uint32_t holder;	/* last seen on the word, since ... */
	uint64_t holder_ns;
	uint16_t serving;	/* last seen served, since ... */
	uint64_t serving_ns;
	uint32_t turns;		/* tickets served while we waited */
	bool asked;		/* whether the holder is a stranger was asked */
};

/*
 * The wait's bound, read from the environment once a wait needs it: a lock
 * taken at once reads nothing (getenv() on every lock was 5 % of nvme-emu's
 * CPU on its GPU path).
 */
static uint64_t limit_of(struct waiter *w)
{
	if (!w->limit)
		w->limit = timeout_ns();
	return w->limit;
}

/*
 * Our turn: take the word from a holder that is gone, or a stranger, or
 * once it is free; wait for a live member that holds it, bounded.
 * Return: 1 taken, 0 not yet, or -errno.
 */
static int take_word(struct sio_fabric *f, struct waiter *w, bool *holder_died, uint64_t now)
{
	_Atomic uint32_t *word = &f->reg->lock.word;
	uint32_t v = atomic_load(word), holder = v & REG_LOCK_TID, me = self_tid();
	char who[192];

	if (holder != w->holder) {
		w->holder = holder;
		w->holder_ns = now;
		w->asked = false;
	}
	if (holder && holder != me && tid_alive(holder)) {
		/* a live process that does not even map the registry: a forged word */
		if (now - w->holder_ns < STRANGER_LOOK_NS || w->asked)
			goto held;
		w->asked = true;
		if (maps_registry(f, holder) != 0)
			goto held;
	}
	/* keep the waiters bit: others may sleep on the word */
	if (!atomic_compare_exchange_strong(word, &v, me | (v & REG_LOCK_WAITERS)))
		return 0;
	*holder_died = holder != 0 && holder != me;
	return 1;
held:
	if (now - w->holder_ns < limit_of(w))
		return 0;
	describe(f, holder, who, sizeof(who));
	return sio__err(ETIMEDOUT, "fabric '%s': its registry lock has been held for over %.1f s by %s",
			f->name, (double)w->limit / 1e9, who);
}

/* Not our turn: the queue must move, or its stalled turn is passed over. */
static int queue_moves(struct sio_fabric *f, struct waiter *w, uint32_t tk, uint64_t now)
{
	uint16_t s = t_serving(tk);
	uint32_t holder = atomic_load(&f->reg->lock.word) & REG_LOCK_TID;

	if (s != w->serving) {
		w->turns += (uint16_t)(s - w->serving);
		w->serving = s;
		w->serving_ns = now;
		return 0;
	}
	/* a turn nobody takes: its waiter died, or went */
	if ((!holder || !tid_alive(holder)) &&
	    now - w->serving_ns > (TURN_SKIP_NS < limit_of(w) / 4 ? TURN_SKIP_NS : w->limit / 4)) {
		pass_turn(&f->reg->lock.tickets, s);
		return 0;
	}
	if (now - w->serving_ns < limit_of(w))
		return 0;
	if (holder && tid_alive(holder)) {
		char who[192];

		describe(f, holder, who, sizeof(who));
		return sio__err(ETIMEDOUT, "fabric '%s': its registry lock has been held for over "
				"%.1f s by %s", f->name, (double)w->limit / 1e9, who);
	}
	return sio__err(ETIMEDOUT, "fabric '%s': its registry lock's queue did not move for %.1f s "
			"(%u ahead of us)", f->name, (double)w->limit / 1e9,
			(uint16_t)(w->ticket - s));
}

int sio__shm_lock(struct sio_fabric *f, bool *holder_died)
{
	_Atomic uint32_t *tk = &f->reg->lock.tickets;
	struct waiter w = { 0 };
	uint64_t slice = 1000000ull, now;
	uint32_t t;
	int ret;

	*holder_died = false;
	w.ticket = take_ticket(tk);
	w.start = w.holder_ns = w.serving_ns = sio__now_ns();
	w.serving = t_serving(atomic_load(tk));
	for (;;) {
		t = atomic_load(tk);
		now = sio__now_ns();
		if (t_serving(t) == w.ticket) {
			ret = take_word(f, &w, holder_died, now);
			if (ret == 1) {
				my_ticket_turn = 1;
				return 0;
			}
		} else if ((uint16_t)(w.ticket - t_serving(t)) > (uint16_t)(t_next(t) - t_serving(t))) {
			/* our turn was passed over (we were away): queue again */
			w.ticket = take_ticket(tk);
			continue;
		} else {
			ret = queue_moves(f, &w, t, now);
		}
		if (ret < 0) {
			if (t_serving(t) == w.ticket)	/* ours: the next one's */
				pass_turn(tk, w.ticket);
			if (w.turns)
				return sio__err(-ret, "%s; %u other process(es) took it in turn while we "
						"waited %.1f s (contention: raise $SMARTIO_LOCK_TIMEOUT_MS, or "
						"start fewer at once)", sio_errmsg(), w.turns,
						(double)(now - w.start) / 1e9);
			return ret;
		}
		struct timespec ts = { .tv_sec = 0, .tv_nsec = (long)slice }, at;
		if (t_serving(t) == w.ticket) {	/* a stranger or a stuck holder */
			nanosleep(&ts, NULL);
		} else {			/* the turn passes to ours (mod 32) */
			clock_gettime(CLOCK_MONOTONIC, &at);	/* an absolute time here */
			at.tv_nsec += (long)slice;
			at.tv_sec += at.tv_nsec / 1000000000L;
			at.tv_nsec %= 1000000000L;
			syscall(SYS_futex, tk, FUTEX_WAIT_BITSET, t, &at, NULL,
				1u << (w.ticket & 31));
		}
		if (slice < SLICE_MAX_NS)
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
	if (my_ticket_turn) {
		my_ticket_turn = 0;
		pass_turn(&f->reg->lock.tickets, t_serving(atomic_load(&f->reg->lock.tickets)));
	}
}
