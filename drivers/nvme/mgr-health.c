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

	/* Across a relay only doorbells reach the device, CC not: a reset
	 * from here would wait out CAP.TO for every try and then give up a
	 * controller that a manager on the lender's node brings back. */
	if (sio_device_bar_path_kind(m->dev, 0) == SIO_BAR_PATH_RELAYED) {
		m->hand_over = true;
		return sio_err_set(EOPNOTSUPP, "%s: device %u needs a reset, which a manager "
				   "on node %d cannot do (its BAR0 is relayed: doorbells "
				   "only); run nvme-manager --standby on node %d, the "
				   "lender's, which takes over and resets it", why,
				   m->dinfo.id, sio_fabric_node_id(m->f), m->dinfo.lender);
	}
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

/*
 * The lender out of reach of a manager on another node: its registers
 * read all ones, or its mailbox does while the link to the lender reads
 * down (with the link up, all ones in the mailbox is another process's
 * write, which is mended).
 */
static bool lender_dark(struct sio_nvme_manager *m)
{
	int me = sio_fabric_node_id(m->f), l = m->dinfo.lender;

	if (sio_nvme_ctrl_check(m->ctrl) == -ENODEV)
		return true;
	return __atomic_load_n(&m->mb->h.magic, __ATOMIC_ACQUIRE) == UINT64_MAX &&
	       (sio_link_get(m->f, me, 0) != 1 || sio_link_get(m->f, l, 0) != 1);
}

/*
 * A link flap, or the lender's host stopped a while, is not the
 * controller's failure, though across an NTB its registers read all ones
 * as a controller that died does. A manager that took it for a dead one
 * stopped serving with its mailbox out of reach, so its last words were
 * lost and the mailbox went on naming it the manager: its clients waited
 * on a heartbeat that stood still, and no standby took over from a live
 * process. Away from the lender it cannot tell the two apart at once, so
 * it waits as the clients do, up to $SMARTIO_NVME_LINK_GRACE_MS, for the
 * lender to read again (the fabric's heartbeat maps the windows again at
 * the link's new generation), or for the device to be gone. What this
 * manager wrote meanwhile is lost: a client whose answer it was asks
 * again when its wait ends. On the lender, all ones is the device's end.
 */
/* Still out of reach (1), in reach (0), or the device or fabric gone. */
static int lender_away(void *arg)
{
	struct sio_nvme_manager *m = arg;
	int ret;

	if (!lender_dark(m))
		return 0;
	ret = sio_nvme_mgr_still_there(m);
	return ret ? ret : 1;
}

int sio_nvme_mgr_link_wait(struct sio_nvme_manager *m)
{
	uint64_t waited;
	int ret;

	if (sio_fabric_node_id(m->f) == m->dinfo.lender || !lender_dark(m))
		return 0;
	mlog(m, "the lender (node %d) is out of reach: what it holds reads all ones (its "
	     "link down, or its host stopped); waiting for it up to %u ms "
	     "($SMARTIO_NVME_LINK_GRACE_MS)", m->dinfo.lender, m->grace_ms);
	ret = sio_nvme_grace_wait(lender_away, m, m->grace_ms, &waited);
	if (ret == -ETIMEDOUT)
		return sio_err_set(ENOLINK, "the lender (node %d) has been out of reach for "
				   "over %u ms ($SMARTIO_NVME_LINK_GRACE_MS)", m->dinfo.lender,
				   m->grace_ms);
	if (ret)
		return ret;
	/* back, but taken for dead meanwhile (out of reach past the lease): a
	 * standby may serve from the mailbox now, which is not ours to mend */
	if ((ret = sio_fabric_alive(m->f)))
		return ret;
	m->link_losses++;
	mlog(m, "the lender (node %d) is in reach again after %llu ms: serving on (%u time(s) "
	     "out of reach so far)", m->dinfo.lender, (unsigned long long)(waited / 1000000),
	     m->link_losses);
	return 0;
}

/* After the requests: reset a controller that failed, timed out or was
 * disabled behind our back. Return: 0, or -errno when it is gone or does
 * not come back. */
int sio_nvme_mgr_check_ctrl(struct sio_nvme_manager *m)
{
	int ret = sio_nvme_ctrl_health(m->ctrl);
	char why[200];

	/* all ones, away from the lender: perhaps its link, waited for */
	if (ret == -ENODEV && !(ret = sio_nvme_mgr_link_wait(m)))
		ret = sio_nvme_ctrl_health(m->ctrl);
	if (!ret || ret == -ENODEV)
		return ret;
	/* a model that left, or a fabric destroyed, reads as disabled too */
	if ((ret = sio_nvme_mgr_still_there(m)))
		return ret;
	snprintf(why, sizeof(why), "%s", ret == -EIO ? "controller fatal status (CSTS.CFS)" :
		 sio_errmsg());
	return reset_ctrl(m, why);
}
