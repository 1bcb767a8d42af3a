/* SPDX-License-Identifier: MIT */
/*
 * Events travel as datagrams to each process's socket in the fabric
 * directory: pollable, bounded, and a sender never blocks on a slow reader
 * (a full queue drops the event, as an interrupt would coalesce).
 */
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include "internal.h"

void sio__event_send(struct sio_fabric *f, int proc, const struct sio_event *ev)
{
	struct sockaddr_un a = { .sun_family = AF_UNIX };
	const struct reg_proc *p = reg_proc_at(f->reg, proc);

	if (!p || !p->used)
		return;
	snprintf(a.sun_path, sizeof(a.sun_path), "%.80s/ev.%d.%d", f->dir, proc, p->pid);
	(void)sendto(f->evfd, ev, sizeof(*ev), MSG_DONTWAIT | MSG_NOSIGNAL,
		     (struct sockaddr *)&a, sizeof(a));
}

void sio__event_broadcast(struct sio_fabric *f, const struct sio_event *ev,
			  bool (*want)(struct sio_fabric *, int, const struct sio_event *))
{
	for (int p = 0; p < SIO_MAX_PROCS; p++)
		if (f->reg->procs[p].used && want(f, p, ev))
			sio__event_send(f, p, ev);
}

int sio_event_fd(struct sio_fabric *f)
{
	return f ? f->evfd : sio__err(EINVAL, "fabric handle is NULL");
}

int sio_event_read(struct sio_fabric *f, struct sio_event *ev, int max)
{
	int n = 0;

	if (!f || !ev || max <= 0)
		return sio__err(EINVAL, "bad arguments to sio_event_read");
	while (n < max) {
		ssize_t r = recv(f->evfd, &ev[n], sizeof(ev[n]), MSG_DONTWAIT);

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

const char *sio_event_name(enum sio_event_type t)
{
	switch (t) {
	case SIO_EV_LINK_DOWN: return "link-down";
	case SIO_EV_LINK_UP: return "link-up";
	case SIO_EV_SEGMENT_LOST: return "segment-lost";
	case SIO_EV_DEVICE_GONE: return "device-gone";
	case SIO_EV_PROCESS_GONE: return "process-gone";
	}
	return "unknown";
}
