/* SPDX-License-Identifier: MIT */
/*
 * Events: which processes are told what is the core's (the filters of
 * registry.c); how an event travels is the fabric backend's.
 */
#include "internal.h"

void sio__event_send(struct sio_fabric *f, int proc, const struct sio_event *ev)
{
	f->ops->ev_send(f, proc, ev);
}

void sio__event_broadcast(struct sio_fabric *f, const struct sio_event *ev,
			  bool (*want)(struct sio_fabric *, int, const struct sio_event *))
{
	for (int p = 0; p < SIO_MAX_PROCS; p++)
		if (f->reg->procs[p].used && want(f, p, ev))
			f->ops->ev_send(f, p, ev);
}

int sio_event_fd(struct sio_fabric *f)
{
	return f ? f->ops->ev_fd(f) : sio__err(EINVAL, "fabric handle is NULL");
}

int sio_event_read(struct sio_fabric *f, struct sio_event *ev, int max)
{
	if (!f || !ev || max <= 0)
		return sio__err(EINVAL, "bad arguments to sio_event_read");
	return f->ops->ev_read(f, ev, max);
}

const char *sio_event_name(enum sio_event_type t)
{
	switch (t) {
	case SIO_EV_LINK_DOWN: return "link-down";
	case SIO_EV_LINK_UP: return "link-up";
	case SIO_EV_SEGMENT_LOST: return "segment-lost";
	case SIO_EV_DEVICE_GONE: return "device-gone";
	case SIO_EV_PROCESS_GONE: return "process-gone";
	case SIO_EV_FABRIC_GONE: return "fabric-gone";
	case SIO_EV_DEVICE_NOTICE: return "device-notice";
	}
	return "unknown";
}
