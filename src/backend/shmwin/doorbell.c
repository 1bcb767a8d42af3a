/* SPDX-License-Identifier: MIT */
/*
 * Doorbells of the shmwin backend, where the window is BAR2 of an
 * ivshmem-doorbell function (an ivshmem server joins the guests' QEMUs):
 * what shmwin.h describes. Everything here is optional: a window without
 * doorbells, or a kernel where no receiver runs, is polled (event.c).
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
#include <sys/stat.h>
#include <sys/syscall.h>
#include "shmwin.h"

#define DOORBELL	3	/* BAR0 registers, in dwords: IVPosition 2, Doorbell 3 */
#define IVPOSITION	2
#define SLICE_NS	20000000ull	/* longest sleep before looking at the word again */

/* An ivshmem-doorbell function has BAR1 (MSI-X); ivshmem-plain has none. */
static bool has_doorbell(const char *bdf)
{
	char path[96];
	struct stat st;

	snprintf(path, sizeof(path), "/sys/bus/pci/devices/%s/resource1", bdf);
	return !stat(path, &st) && st.st_size > 0;
}

void shmwin_db_open(struct sio_fabric *f, struct shmwin_fabric *s)
{
	char path[PATH_MAX];
	void *p;
	int fd;

	if (!s->win.bdf[0] || s->win.bar != 2 || !has_doorbell(s->win.bdf))
		return;
	snprintf(path, sizeof(path), "/sys/bus/pci/devices/%s/resource0", s->win.bdf);
	if ((fd = open(path, O_RDWR | O_SYNC | O_CLOEXEC)) < 0)
		return;
	p = mmap(NULL, SHMWIN_PAGE, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	close(fd);
	if (p == MAP_FAILED)
		return;
	if (sio__fabric_host_path(f, "wake", path, sizeof(path)) ||
	    (fd = open(path, O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600)) < 0) {
		munmap(p, SHMWIN_PAGE);
		return;
	}
	s->db.wake = ftruncate(fd, SHMWIN_PAGE) ? MAP_FAILED :
		     mmap(NULL, SHMWIN_PAGE, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	close(fd);
	if (s->db.wake == MAP_FAILED) {
		s->db.wake = NULL;
		munmap(p, SHMWIN_PAGE);
		return;
	}
	s->db.regs = p;
	s->db.peer = (int)(s->db.regs[IVPOSITION] & 0xffff);
}

void shmwin_db_close(struct shmwin_fabric *s)
{
	if (s->db.regs)
		munmap((void *)s->db.regs, SHMWIN_PAGE);
	if (s->db.wake)
		munmap(s->db.wake, SHMWIN_PAGE);
	memset(&s->db, 0, sizeof(s->db));
}

static void futex_wake(_Atomic uint32_t *w)
{
	atomic_fetch_add(w, 1);
	syscall(SYS_futex, w, FUTEX_WAKE, INT_MAX, NULL, NULL, 0);
}

/* Wake this host's sleepers and ring every other kernel's doorbell once. */
int shmwin_db_ring(struct sio_fabric *f)
{
	struct shmwin_fabric *s = shmwin_of(f);
	uint64_t done = 0;
	int n = 0;

	if (!s->db.regs)
		return 0;
	futex_wake(&s->db.wake->seq);
	/* read unlocked: a stale entry costs one spurious interrupt */
	for (int i = 0; i < SIO_MAX_PROCS; i++) {
		int peer = s->hdr->procs[i].peer;

		if (!atomic_load_explicit(&s->hdr->procs[i].token, memory_order_relaxed) ||
		    peer < 0 || peer >= 64 || peer == s->db.peer || (done & (1ull << peer)))
			continue;
		done |= 1ull << peer;
		atomic_thread_fence(memory_order_seq_cst);	/* the word before the interrupt */
		s->db.regs[DOORBELL] = (uint32_t)peer << 16;
		n++;
	}
	atomic_fetch_add_explicit(&s->db.wake->rung, (uint64_t)n, memory_order_relaxed);
	return n;
}

static bool receiver_alive(struct shmwin_fabric *s)
{
	uint64_t now = sio__now_ns();

	if (now - s->db.checked_ns > 200000000ull) {
		int pid = s->db.wake->pid;

		s->db.receiver = pid > 0 && !shmwin_pid_dead(pid);	/* a pid of this kernel */
		s->db.checked_ns = now;
	}
	return s->db.receiver;
}

bool shmwin_db_sleep(struct shmwin_fabric *s, uint32_t *word, uint32_t old, uint64_t ns)
{
	uint64_t start = sio__now_ns();

	if (!s->db.wake || !receiver_alive(s))
		return false;
	for (;;) {
		uint32_t seq = atomic_load(&s->db.wake->seq);
		uint64_t el = sio__now_ns() - start, nap;

		if (__atomic_load_n(word, __ATOMIC_ACQUIRE) != old || el >= ns)
			return true;
		nap = ns - el < SLICE_NS ? ns - el : SLICE_NS;
		struct timespec ts = { (time_t)(nap / 1000000000ull), (long)(nap % 1000000000ull) };
		syscall(SYS_futex, &s->db.wake->seq, FUTEX_WAIT, seq, &ts, NULL, 0);
	}
}

int sio__shmwin_doorbell_serve(struct sio_fabric *f, int efd, volatile sig_atomic_t *stop,
			       FILE *log)
{
	struct shmwin_fabric *s = shmwin_of(f);
	struct pollfd pfd = { .fd = efd, .events = POLLIN };
	uint64_t v;

	if (!s->db.wake)
		return sio__err(ENODEV, "fabric '%s': its window (%s) has no doorbells (an ivshmem-doorbell function)",
				f->name, s->win.what);
	s->db.wake->pid = getpid();
	if (log) {
		fprintf(log, "doorbell: kernel of node %d is peer %d of %s; waking its waiters\n",
			f->node, s->db.peer, s->win.what);
		fflush(log);
	}
	while (!stop || !*stop) {
		int r = poll(&pfd, 1, 500);

		if (r < 0 && errno != EINTR)
			return sio__err(errno, "doorbell: poll: %s", strerror(errno));
		if (r > 0 && read(efd, &v, sizeof(v)) == sizeof(v)) {
			atomic_fetch_add(&s->db.wake->interrupts, v);
			futex_wake(&s->db.wake->seq);
		}
	}
	s->db.wake->pid = 0;
	if (log) {
		fprintf(log, "doorbell: %llu interrupt(s) received, %llu doorbell(s) rung from this kernel\n",
			(unsigned long long)atomic_load(&s->db.wake->interrupts),
			(unsigned long long)atomic_load(&s->db.wake->rung));
		fflush(log);
	}
	return 0;
}
