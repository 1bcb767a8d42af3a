/* SPDX-License-Identifier: MIT */
/*
 * Asynchronous events, both sides. The manager keeps an Asynchronous Event
 * Request outstanding, enables every event the controller offers (SMART /
 * health warnings; namespace attribute notices when OAES says so), and for
 * each event: reads its log page (so the controller reports that type
 * again), records it in the mailbox header's event ring, tells the
 * device's other borrowers (SIO_EV_DEVICE_NOTICE, info = the DW0), and arms
 * a new request. A client reads the ring whenever it asks, so an event that
 * came before it connected is not lost to it (the last 16 are kept).
 */
#include <string.h>
#include <smartio/smartio.h>
#include "client-priv.h"

/* SMART critical warnings NVMe 1.4 defines (bits 0..4), and bit 8 */
#define AEC_SMART	0x1fu
#define AEC_NS_ATTR	(1u << 8)

/**
 * sio_nvme_aer_start() - enable events and arm a request
 * @c: controller, just brought up
 * Return: 0 or -errno (events are then not served).
 */
int sio_nvme_aer_start(struct sio_nvme_ctrl *c)
{
	const struct nvme_id_ctrl *id = sio_nvme_ctrl_id(c);
	uint32_t aec = AEC_SMART | (id->oaes & NVME_CTRL_OAES_NA ? AEC_NS_ATTR : 0);
	int ret;

	ret = sio_nvme_ctrl_set_features(c, NVME_FEAT_FID_ASYNC_EVENT, aec, NULL, NULL);
	if (ret)
		return sio_err_wrap(-ret, "Asynchronous Event Configuration");
	/* one outstanding is enough; a manager that took over may hold one already */
	return sio_nvme_ctrl_aer_armed(c) ? 0 : sio_nvme_ctrl_aer_arm(c);
}

/**
 * sio_nvme_aer_service() - hand on the events that came, and re-arm
 * @c: controller
 * @dev: its borrow (to notify the other borrowers)
 * @ring: the mailbox header's event ring
 * Return: events handed on, or -errno.
 */
int sio_nvme_aer_service(struct sio_nvme_ctrl *c, struct sio_device *dev,
			 struct sio_nvme_mbox_events *ring)
{
	uint32_t ev[SIO_NVME_AEN_MAX];
	int n = sio_nvme_ctrl_aer_take(c, ev, SIO_NVME_AEN_MAX), ret = 0;

	for (int i = 0; i < n; i++) {
		uint32_t seq = ring->seq;

		ring->dw0[seq % SIO_NVME_MBOX_EVENTS] = ev[i];
		__atomic_store_n(&ring->seq, seq + 1, __ATOMIC_RELEASE);
		sio_device_notice(dev, ev[i]);
		if (sio_nvme_ctrl_aer_ack(c, ev[i]) && !ret)
			ret = -EIO;
	}
	if (n > 0 && sio_nvme_ctrl_aer_armed(c) == 0) {
		int r = sio_nvme_ctrl_aer_arm(c);

		if (r && !ret)
			ret = r;
	}
	return ret ? ret : n;
}

int sio_nvme_client_events(struct sio_nvme_client *cl, uint32_t *seq, uint32_t *dw0, uint32_t max)
{
	const struct sio_nvme_mbox_events *ring = &cl->mb->h.events;
	uint32_t now, start, from, n = 0;

	if (!seq || (max && !dw0))
		return sio_err_set(EINVAL, "sio_nvme_client_events: NULL argument");
	now = __atomic_load_n(&ring->seq, __ATOMIC_ACQUIRE);
	start = *seq;
	if (now - start > SIO_NVME_MBOX_EVENTS)
		start = now - SIO_NVME_MBOX_EVENTS;	/* older ones were overwritten */
	for (from = start; from != now && n < max; from++)
		dw0[n++] = __atomic_load_n(&ring->dw0[from % SIO_NVME_MBOX_EVENTS],
					   __ATOMIC_RELAXED);
	/* event k's slot is reused by event k + 16: had that come, what we read is not k */
	if (n && __atomic_load_n(&ring->seq, __ATOMIC_ACQUIRE) - start >= SIO_NVME_MBOX_EVENTS + 1)
		return sio_err_set(EAGAIN, "events came faster than they were read; ask again");
	*seq = from;
	return (int)n;
}
