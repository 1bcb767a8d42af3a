/* SPDX-License-Identifier: MIT */
/*
 * Events and notifications of the window fabric. An event goes into a ring
 * per process slot in the shared memory (the sender holds the registry
 * lock, so there is one writer at a time; the owner is the one reader), and
 * the owner's heartbeat thread makes its eventfd readable when the ring
 * holds some. Notifications ring the other kernels' doorbells where the
 * source has them and a receiver serves this kernel (wake.c); otherwise a
 * waiter polls the word with a backoff bounded at a millisecond, since a
 * futex wakes only its own kernel.
 */
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/eventfd.h>
#include "winfab.h"

#define WAIT_NAP_MIN_NS		10000u
#define WAIT_NAP_MAX_NS		1000000ull

int sio__wf_ev_open(struct sio_fabric *f)
{
	struct wf_fabric *s = wf_of(f);

	s->evfd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	if (s->evfd < 0)
		return sio__err(errno, "eventfd: %s", strerror(errno));
	return 0;
}

void sio__wf_ev_close(struct sio_fabric *f)
{
	struct wf_fabric *s = wf_of(f);
	uint64_t tok = s->tok;

	/* the slot may be someone else's by now: clear only our own record */
	if (s->slot >= 0)
		atomic_compare_exchange_strong(&s->hdr->procs[s->slot].token, &tok, 0);
	s->slot = -1;
	if (s->evfd >= 0)
		close(s->evfd);
	s->evfd = -1;
}

void sio__wf_ev_send(struct sio_fabric *f, int proc, const struct sio_event *ev)
{
	struct wf_fabric *s = wf_of(f);
	struct wf_evq *q;
	uint32_t h, t;

	if (proc < 0 || proc >= SIO_MAX_PROCS || !atomic_load(&s->hdr->procs[proc].token))
		return;
	q = &s->hdr->evq[proc];
	h = atomic_load(&q->head);
	t = atomic_load(&q->tail);
	if (h - t >= WF_EVQ_LEN)
		return;	/* full: dropped, as an interrupt would coalesce */
	q->ev[h % WF_EVQ_LEN] = *ev;
	atomic_store_explicit(&q->head, h + 1, memory_order_release);
}

int sio__wf_ev_fd(struct sio_fabric *f)
{
	return wf_of(f)->evfd;
}

int sio__wf_ev_read(struct sio_fabric *f, struct sio_event *ev, int max)
{
	struct wf_fabric *s = wf_of(f);
	struct wf_evq *q;
	uint64_t drain;
	uint32_t h, t;
	int n = 0;

	if (s->slot < 0)
		return 0;
	if (s->evfd >= 0 && read(s->evfd, &drain, sizeof(drain)) < 0)
		drain = 0;
	q = &s->hdr->evq[s->slot];
	h = atomic_load_explicit(&q->head, memory_order_acquire);
	t = atomic_load(&q->tail);
	if (h - t > WF_EVQ_LEN)	/* a corrupt ring: what it held is lost */
		t = h;
	while (n < max && t != h)
		ev[n++] = q->ev[t++ % WF_EVQ_LEN];
	atomic_store_explicit(&q->tail, t, memory_order_release);
	return n;
}

void sio__wf_ev_poll(struct wf_fabric *s)
{
	struct wf_evq *q;
	uint64_t one = 1;

	if (s->slot < 0 || s->evfd < 0)
		return;
	q = &s->hdr->evq[s->slot];
	if (atomic_load(&q->head) != atomic_load(&q->tail) && write(s->evfd, &one, sizeof(one)) < 0)
		return;
}

int sio__wf_notify(struct sio_fabric *f, uint32_t *word)
{
	(void)word;
	return sio__wf_wake_all(wf_of(f));	/* without doorbells, waiters poll the word */
}

int sio__wf_wait(struct sio_fabric *f, uint32_t *word, uint32_t old, uint64_t timeout_ns)
{
	uint64_t start = sio__now_ns();
	struct sio_backoff b = wf_nap(WAIT_NAP_MIN_NS, WAIT_NAP_MAX_NS);

	if (sio__wf_wake_sleep(wf_of(f), word, old, timeout_ns))
		return __atomic_load_n(word, __ATOMIC_ACQUIRE) != old ? 0 : -ETIMEDOUT;
	while (__atomic_load_n(word, __ATOMIC_ACQUIRE) == old) {
		uint64_t el = sio__now_ns() - start;

		if (el >= timeout_ns)
			return -ETIMEDOUT;
		/* no sleep runs past the deadline */
		b.max_ns = (uint32_t)(timeout_ns - el < WAIT_NAP_MAX_NS ? timeout_ns - el :
				      WAIT_NAP_MAX_NS);
		sio_backoff_wait(&b);
	}
	return 0;
}
