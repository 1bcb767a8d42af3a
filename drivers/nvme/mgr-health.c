/* SPDX-License-Identifier: MIT */
/*
 * The NVMe manager: the controller's health, and its reset
 * (mgr-priv.h says which file holds which job).
 */

#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <unistd.h>
#include "mgr-priv.h"

/* Sleep @ms, the heartbeat going on (clients see a manager at work). */
static void pause_beating(struct sio_nvme_manager *m, uint32_t ms)
{
	for (uint32_t i = 0; i < ms / 50; i++) {
		__atomic_fetch_add(&m->mb->h.heartbeat, 1, __ATOMIC_RELAXED);
		usleep(50000);
	}
}

/*
 * Reset the controller in place, as Linux's nvme_reset_work(): the admin
 * queue anew, the same CMB and shadow doorbells. Every queue pair is gone;
 * the clients learn it from the mailbox's reset count and create theirs
 * again (recover.c), sending again what was in flight. A controller that
 * does not come back within SIO_NVME_RESET_TRIES tries is given up.
 */
static int reset_ctrl(struct sio_nvme_manager *m, const char *why)
{
	int ret, tries;

	mlog(m, "%s: resetting device %u; its %u client(s) create their queue pairs again",
	     why, m->dinfo.id, m->st.clients);
	sio_nvme_mbox_reset_mark(m, true);
	for (tries = 1;; tries++) {
		ret = sio_nvme_ctrl_reset(m->ctrl);
		if (!ret || ret == -ENODEV || tries == SIO_NVME_RESET_TRIES ||
		    (ret = sio_nvme_mgr_still_there(m)))
			break;
		mlog(m, "reset %d of %d failed: %s; trying again in %d s", tries,
		     SIO_NVME_RESET_TRIES, sio_errmsg(), tries);
		pause_beating(m, 1000u * (uint32_t)tries);
	}
	if (ret)
		return sio_err_wrap(ret == -ENODEV ? ENODEV : EIO, "device %u did not come back "
				    "after %d reset%s; restart the controller (its device model, "
				    "or its host's device) and nvme-manager serves it again",
				    m->dinfo.id, tries, tries == 1 ? "" : "s");
	m->ci = sio_nvme_ctrl_ci(m->ctrl);
	sio_nvme_mgr_queues_gone(m);
	sio_nvme_mbox_ctrl_changed(m);
	if (sio_nvme_aer_start(m->ctrl))	/* the reset dropped the event requests */
		mlog(m, "asynchronous events not served: %s", sio_errmsg());
	m->st.resets++;
	sio_nvme_mbox_reset_mark(m, false);
	mlog(m, "device %u is ready again after the reset%s", m->dinfo.id,
	     tries > 1 ? " (more than one try)" : "");
	return 0;
}

/* After the requests: reset a controller that failed, timed out or was
 * disabled behind our back. Return: 0, or -errno when it is gone or does
 * not come back. */
int sio_nvme_mgr_check_ctrl(struct sio_nvme_manager *m)
{
	int ret = sio_nvme_ctrl_health(m->ctrl);
	char why[200];

	if (!ret || ret == -ENODEV)
		return ret;
	/* a model that left, or a fabric destroyed, reads as disabled too */
	if ((ret = sio_nvme_mgr_still_there(m)))
		return ret;
	snprintf(why, sizeof(why), "%s", ret == -EIO ? "controller fatal status (CSTS.CFS)" :
		 sio_errmsg());
	return reset_ctrl(m, why);
}
