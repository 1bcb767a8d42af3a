/* SPDX-License-Identifier: MIT */
/*
 * Doorbells of the window fabric, where its source has them (shmwin: an
 * ivshmem-doorbell function; ntb: the NTB's doorbell bits): a notification
 * rings every other kernel's doorbell (the source's ring) and wakes this
 * host's sleepers; in each kernel one process, the receiver, turns the
 * doorbells it is told of (an eventfd) into a futex wake on a wake page of
 * this host, on which the kernel's waiters sleep. Everything here is
 * optional: a source without doorbells, or a kernel where no receiver runs,
 * is polled (event.c).
 */
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <linux/futex.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include "proc.h"
#include "winfab.h"

#define SLICE_NS	20000000ull	/* longest sleep before looking at the word again */

void sio__wf_wake_open(struct sio_fabric *f, struct wf_fabric *s)
{
	char path[PATH_MAX];
	void *p;
	int fd;

	if (sio__fabric_host_path(f, "wake", path, sizeof(path)) ||
	    (fd = open(path, O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600)) < 0)
		return;
	p = ftruncate(fd, WF_PAGE) ? MAP_FAILED :
	    mmap(NULL, WF_PAGE, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	close(fd);
	if (p != MAP_FAILED)
		s->wake = p;
}

void sio__wf_wake_close(struct wf_fabric *s)
{
	if (s->wake)
		munmap(s->wake, WF_PAGE);
	s->wake = NULL;
	s->receiver = false;
	s->checked_ns = 0;
}

static void futex_wake(_Atomic uint32_t *w)
{
	atomic_fetch_add(w, 1);
	syscall(SYS_futex, w, FUTEX_WAKE, INT_MAX, NULL, NULL, 0);
}

int sio__wf_wake_all(struct wf_fabric *s)
{
	int n;

	if (!s->wake)
		return 0;
	futex_wake(&s->wake->seq);
	n = s->src->ring ? s->src->ring(s) : 0;
	if (n > 0)
		atomic_fetch_add_explicit(&s->wake->rung, (uint64_t)n, memory_order_relaxed);
	return n;
}

static bool receiver_alive(struct wf_fabric *s)
{
	uint64_t now = sio__now_ns();

	if (now - s->checked_ns > 200000000ull) {
		int pid = s->wake->pid;

		s->receiver = pid > 0 && !sio__task_dead(pid);	/* a pid of this kernel */
		s->checked_ns = now;
	}
	return s->receiver;
}

bool sio__wf_wake_sleep(struct wf_fabric *s, uint32_t *word, uint32_t old, uint64_t ns)
{
	uint64_t start = sio__now_ns();

	if (!s->wake || !receiver_alive(s))
		return false;
	for (;;) {
		uint32_t seq = atomic_load(&s->wake->seq);
		uint64_t el = sio__now_ns() - start, nap;

		if (__atomic_load_n(word, __ATOMIC_ACQUIRE) != old || el >= ns)
			return true;
		nap = ns - el < SLICE_NS ? ns - el : SLICE_NS;
		struct timespec ts = { (time_t)(nap / 1000000000ull), (long)(nap % 1000000000ull) };
		syscall(SYS_futex, &s->wake->seq, FUTEX_WAIT, seq, &ts, NULL, 0);
	}
}

void sio__wf_wake_receive(struct wf_fabric *s, bool on)
{
	if (s->wake)
		s->wake->pid = on ? getpid() : 0;
}

void sio__wf_wake_rx(struct wf_fabric *s, uint64_t n)
{
	if (!s->wake)
		return;
	atomic_fetch_add(&s->wake->interrupts, n);
	futex_wake(&s->wake->seq);
}

int sio__wf_doorbell_serve(struct sio_fabric *f, int efd, volatile sig_atomic_t *stop, FILE *log,
		      const char *what)
{
	struct wf_fabric *s = wf_of(f);
	struct pollfd pfd = { .fd = efd, .events = POLLIN };
	uint64_t v;

	if (!s->wake)
		return sio__err(ENODEV, "fabric '%s': %s has no doorbells", f->name, s->src->what(s, WF_STATE));
	sio__wf_wake_receive(s, true);
	if (log) {
		fprintf(log, "doorbell: kernel of node %d is %s; waking its waiters\n", f->node, what);
		fflush(log);
	}
	while (!stop || !*stop) {
		int r = poll(&pfd, 1, 500);

		if (r < 0 && errno != EINTR)
			return sio__err(errno, "doorbell: poll: %s", strerror(errno));
		if (r > 0 && read(efd, &v, sizeof(v)) == sizeof(v))
			sio__wf_wake_rx(s, v);
	}
	sio__wf_wake_receive(s, false);
	if (log) {
		fprintf(log, "doorbell: %llu interrupt(s) received, %llu doorbell(s) rung from this kernel\n",
			(unsigned long long)atomic_load(&s->wake->interrupts),
			(unsigned long long)atomic_load(&s->wake->rung));
		fflush(log);
	}
	return 0;
}
