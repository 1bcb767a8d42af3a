/* SPDX-License-Identifier: MIT */
/*
 * Events and notifications of the shm fabric backend. Events travel as
 * datagrams to each process's socket in the fabric directory: pollable,
 * bounded, and a sender never blocks on a slow reader. Notifications are
 * futex wakes on the word itself: every process maps the same pages.
 */
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <linux/futex.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include "shm.h"

/* The socket of process slot @proc, pid @pid. */
static void ev_path(struct sio_fabric *f, int proc, int pid, struct sockaddr_un *a)
{
	*a = (struct sockaddr_un){ .sun_family = AF_UNIX };
	snprintf(a->sun_path, sizeof(a->sun_path), "%.80s/ev.%d.%d", shm_of(f)->dir, proc, pid);
}

int sio__shm_ev_open(struct sio_fabric *f)
{
	struct shm_fabric *s = shm_of(f);
	struct sockaddr_un a;
	int fd;

	if (strlen(s->dir) > 80)
		return sio__err(ENAMETOOLONG, "fabric directory %s is too long for its event sockets; use a shorter SMARTIO_RUNDIR",
				s->dir);
	fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return sio__err(errno, "socket: %s", strerror(errno));
	ev_path(f, f->proc, getpid(), &a);
	unlink(a.sun_path);
	if (bind(fd, (struct sockaddr *)&a, sizeof(a)) || chmod(a.sun_path, s->group ? 0660 : 0600)) {
		int e = errno;
		close(fd);
		return sio__err(e, "cannot bind event socket %s: %s", a.sun_path, strerror(e));
	}
	s->evfd = fd;
	return 0;
}

void sio__shm_ev_close(struct sio_fabric *f)
{
	struct shm_fabric *s = shm_of(f);
	struct sockaddr_un a;

	if (s->evfd < 0)
		return;
	ev_path(f, f->proc, getpid(), &a);
	unlink(a.sun_path);
	close(s->evfd);
	s->evfd = -1;
}

void sio__shm_proc_gone(struct sio_fabric *f, int proc)
{
	const struct reg_proc *p = reg_proc_at(f->reg, proc);
	struct sockaddr_un a;

	if (!p)
		return;
	ev_path(f, proc, p->pid, &a);
	unlink(a.sun_path);
}

void sio__shm_ev_send(struct sio_fabric *f, int proc, const struct sio_event *ev)
{
	const struct reg_proc *p = reg_proc_at(f->reg, proc);
	struct sockaddr_un a;
	int fd, tmp = -1;

	if (!p || !p->used)
		return;
	ev_path(f, proc, p->pid, &a);
	/*
	 * A process that reaps before its own socket exists (sio_fabric_open()
	 * does) sends from a socket of the moment: an event it owes others
	 * (a device gone with its dead lender) is never dropped for that.
	 */
	fd = shm_of(f)->evfd;
	if (fd < 0)
		fd = tmp = socket(AF_UNIX, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	/* a full queue drops the event, as an interrupt would coalesce */
	(void)sendto(fd, ev, sizeof(*ev), MSG_DONTWAIT | MSG_NOSIGNAL, (struct sockaddr *)&a,
		     sizeof(a));
	if (tmp >= 0)
		close(tmp);
}

int sio__shm_ev_fd(struct sio_fabric *f)
{
	return shm_of(f)->evfd;
}

int sio__shm_ev_read(struct sio_fabric *f, struct sio_event *ev, int max)
{
	int n = 0;

	while (n < max) {
		ssize_t r = recv(shm_of(f)->evfd, &ev[n], sizeof(ev[n]), MSG_DONTWAIT);

		if (r < 0) {
			if (errno == EAGAIN || errno == EWOULDBLOCK)
				break;
			return n ? n : sio__err(errno, "event socket: %s", strerror(errno));
		}
		if (r == sizeof(ev[n]))
			n++;
	}
	return n;
}

int sio__shm_notify(struct sio_fabric *f, uint32_t *word)
{
	long r = syscall(SYS_futex, word, FUTEX_WAKE, INT_MAX, NULL, NULL, 0);

	return r < 0 ? sio__err(errno, "futex wake: %s", strerror(errno)) : (int)r;
}

int sio__shm_wait(struct sio_fabric *f, uint32_t *word, uint32_t old, uint64_t timeout_ns)
{
	struct timespec ts = { .tv_sec = timeout_ns / 1000000000ull,
			       .tv_nsec = timeout_ns % 1000000000ull };

	if (syscall(SYS_futex, word, FUTEX_WAIT, old, &ts, NULL, 0) == 0)
		return 0;
	if (errno == EAGAIN || errno == EINTR)
		return 0;
	if (errno == ETIMEDOUT)
		return -ETIMEDOUT;
	return sio__err(errno, "futex wait: %s", strerror(errno));
}
