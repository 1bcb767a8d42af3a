/* SPDX-License-Identifier: MIT */
/*
 * The NVMe client's connection: borrow the controller, find and talk to its
 * manager's mailbox, and the admin commands the manager relays.
 */

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>
#include "parse.h"
#include "client-priv.h"

/* How long a request waits for the answer of a manager at work (however
 * busy), unless $SMARTIO_NVME_ANSWER_MS says otherwise. */
#define ANSWER_WAIT_MS	30000u
#define ANSWER_WAIT_MAX	3600000u
/* How long a link to the lender may be down before a client or a manager
 * gives up, unless $SMARTIO_NVME_LINK_GRACE_MS says otherwise. */
#define LINK_GRACE_MS	10000u

/* The manager stopped serving: because its device left with its lender
 * (the manager stops then), or of its own accord. */
static int stopped(struct sio_nvme_client *cl)
{
	struct sio_device_info di;

	if (sio_device_info(cl->dev, &di) == -ENODEV)
		return sio_err_set(ENOTCONN, "the NVMe manager has stopped: device %u is "
				   "gone, its lender, node %d, has left the fabric",
				   cl->dinfo.id, cl->dinfo.lender);
	return sio_err_set(ENOTCONN, "the NVMe manager has stopped");
}

/* How long a request waits for a successor to a manager that died or
 * stopped, or for one that does not run, unless $SMARTIO_NVME_RESTART_MS
 * says otherwise. */
#define RESTART_WAIT_MS	10000u
#define RESTART_WAIT_MAX 600000u
#define RETRIES		8	/* requests cut short by take-overs, in a row */
#define SLOT_LOST_NS	2000000000ull	/* a slot not ours this long is lost */
/* What an admin data buffer holds until the controller writes it */
#define ADMIN_POISON	0xa5
#define ADMIN_TRIES	3	/* asks for data that never lands */

int sio_nvme_env_u32(const char *var, uint32_t def, uint32_t max, const char *what,
		     uint32_t *out)
{
	const char *e = getenv(var);
	uint64_t v;

	*out = def;
	if (!e)
		return 0;
	if (sio_parse_u64(e, 0, max, &v))
		return sio_err_wrap(EINVAL, "$%s (%s, 0..%u)", var, what, max);
	*out = (uint32_t)v;
	return 0;
}

int sio_nvme_link_grace_ms(uint32_t *ms)
{
	return sio_nvme_env_u32("SMARTIO_NVME_LINK_GRACE_MS", LINK_GRACE_MS, ANSWER_WAIT_MAX,
				"milliseconds a client or a manager waits for a link to the "
				"lender that is down", ms);
}

int sio_nvme_grace_wait(int (*away)(void *arg), void *arg, uint32_t grace_ms,
			uint64_t *waited_ns)
{
	uint64_t t0 = sio__now_ns(), grace = (uint64_t)grace_ms * 1000000ull, now = t0;
	struct sio_backoff b;
	int ret;

	sio_nvme_backoff_init(&b, 20000000);
	while ((ret = away(arg)) > 0 && now - t0 <= grace) {
		sio_backoff_wait(&b);
		now = sio__now_ns();
	}
	if (waited_ns)
		*waited_ns = now - t0;
	return ret > 0 ? -ETIMEDOUT : ret;
}

/* Post the request in our slot and ring the manager. */
static void post(struct sio_nvme_client *cl, struct sio_nvme_mbox_slot *sl,
		 const struct sio_nvme_mbox_req *req)
{
	memcpy((void *)&sl->req, req, sizeof(*req));
	sl->seq++;
	__atomic_store_n(&sl->state, SIO_MBOX_REQ, __ATOMIC_RELEASE);
	__atomic_fetch_add(&cl->mb->h.doorbell, 1, __ATOMIC_ACQ_REL);
	sio_segment_notify(cl->mseg, offsetof(struct sio_nvme_mbox_hdr, doorbell));
}

/* What a client waiting for an answer knows of the manager. */
struct mgr_watch {
	int32_t pid;		/* the manager it waits for */
	uint32_t beat;		/* its heartbeat, last seen moving ... */
	uint64_t beat_ns;	/* ... then */
	uint32_t pulse;		/* its pulse (mailbox.h), last seen moving ... */
	uint64_t pulse_ns;	/* ... then */
	uint64_t look_ns;	/* when its process was last looked up ... */
	bool gone;		/* ... and found gone */
	uint64_t away_ns;	/* since when it is dead or stopped, with no successor */
	uint64_t reset_ns;	/* since when it resets the controller */
	uint64_t deadline;	/* for an answer from a manager at work */
	uint32_t successors;	/* managers that took over while we waited */
	bool lost;		/* given up on: dead, stopped or stuck, no successor */
	uint64_t dark_ns;	/* since when the header reads all ones */
};

/* A manager whose heartbeat and pulse stood still this long is looked up
 * in the fabric (which takes the registry lock: not at every wake of
 * every client), and not more often. */
#define PROC_LOOK_NS	500000000ull

/* How long a request waits for a controller reset: $SMARTIO_NVME_RESET_MS,
 * or (0, unset) as long as the manager may take (reset_ctrl(), mgr-health.c):
 * CAP.TO to disable, and again to enable, each try, and the pauses. */
static uint64_t reset_bound_ns(const struct sio_nvme_client *cl)
{
	if (cl->reset_ms)
		return (uint64_t)cl->reset_ms * 1000000ull;
	return (uint64_t)SIO_NVME_RESET_TRIES * (3ull * cl->ci.timeout_ms + 2000) * 1000000ull;
}

/* Whether its process is gone, as the fabric said at the last look. */
static bool mgr_gone(struct sio_nvme_client *cl, struct mgr_watch *w, int32_t pid, uint64_t now)
{
	/* a pid means something on its own kernel only; a manager whose beat
	 * or pulse moved lately is there */
	if (pid <= 0 || now - w->beat_ns < PROC_LOOK_NS || now - w->pulse_ns < PROC_LOOK_NS)
		return false;
	if (now - w->look_ns >= PROC_LOOK_NS) {
		w->look_ns = now;
		w->gone = !sio_fabric_proc_alive(cl->f, __atomic_load_n(&cl->mb->h.mgr_node,
									 __ATOMIC_RELAXED), pid);
	}
	return w->gone;
}

/* A new manager, or the one we wait for moving: the watch goes on from now. */
static void seen(struct mgr_watch *w, int32_t pid, uint32_t beat, uint32_t pulse, uint64_t now)
{
	if (pulse != w->pulse || pid != w->pid) {
		w->pulse = pulse;
		w->pulse_ns = now;
	}
	if (pid == w->pid && beat == w->beat)
		return;
	w->pid = pid;
	w->beat = beat;
	w->beat_ns = now;
	w->away_ns = 0;
	w->gone = false;
}

/* No answer yet from a manager that runs: past the deadline, say whether
 * its loop comes round (slow to answer) or only its pulse moves (busy, or
 * stuck in one pass). */
static int late(struct sio_nvme_client *cl, const struct mgr_watch *w, uint64_t now)
{
	if (now - w->beat_ns > 1000000000ull)
		return sio_err_set(ETIMEDOUT, "the NVMe manager (pid %d) runs but its loop has "
				   "not come round for %llu ms (busy, or stuck), and did not "
				   "answer within %u ms ($SMARTIO_NVME_ANSWER_MS)", (int)w->pid,
				   (unsigned long long)((now - w->beat_ns) / 1000000),
				   cl->answer_ms);
	return sio_err_set(ETIMEDOUT, "the NVMe manager did not answer within %u ms "
			   "($SMARTIO_NVME_ANSWER_MS)", cl->answer_ms);
}

/*
 * A header that reads all ones is across a link that is down, or a window
 * mapped again after a new link generation: no manager came or went. It
 * is waited for $SMARTIO_NVME_LINK_GRACE_MS, and the answer's time starts
 * again once it reads.
 */
static int dark(struct sio_nvme_client *cl, struct mgr_watch *w, uint64_t now)
{
	if (!w->dark_ns)
		w->dark_ns = now;
	if (now - w->dark_ns > (uint64_t)cl->grace_ms * 1000000ull)
		return sio_err_set(ENOLINK, "the NVMe manager's mailbox on node %d reads all "
				   "ones: the link to it has been down for over %u ms "
				   "($SMARTIO_NVME_LINK_GRACE_MS)", cl->dinfo.lender,
				   cl->grace_ms);
	w->deadline = now + (uint64_t)cl->answer_ms * 1000000ull;
	return 0;
}

/*
 * Whether to go on waiting: 0, or -errno with the reason. A successor's
 * pid restarts the watch; a manager dead, or stopped having left its
 * clients to a successor, is waited for $SMARTIO_NVME_RESTART_MS; one
 * whose heartbeat and pulse stand still (stopped by a signal, or stuck) as
 * long, at least a second; one whose pulse moves is at work, however busy,
 * and answers within $SMARTIO_NVME_ANSWER_MS; one resetting the controller
 * takes as long as that takes.
 */
static int watch(struct sio_nvme_client *cl, struct mgr_watch *w, uint64_t now)
{
	const struct sio_nvme_mbox_hdr *h = &cl->mb->h;
	int32_t pid = __atomic_load_n(&h->mgr_pid, __ATOMIC_ACQUIRE);
	uint32_t beat = __atomic_load_n(&h->heartbeat, __ATOMIC_ACQUIRE);
	uint32_t pulse = __atomic_load_n(&h->pulse, __ATOMIC_ACQUIRE);
	uint64_t wait_ns = (uint64_t)cl->restart_ms * 1000000ull;
	uint64_t still_ns = wait_ns > 1000000000ull ? wait_ns : 1000000000ull;
	uint64_t answer_ns = (uint64_t)cl->answer_ms * 1000000ull;
	bool serving = __atomic_load_n(&h->serving, __ATOMIC_ACQUIRE);

	if (pid == -1 && beat == UINT32_MAX && pulse == UINT32_MAX)
		return dark(cl, w, now);
	w->dark_ns = 0;
	/* each successor gets its time; managers that come and go without an
	 * answer (a storm of restarts) do not keep us here for ever */
	if (pid != w->pid && ++w->successors > RETRIES)
		return sio_err_set(ETIMEDOUT, "%u NVMe managers took over in turn and "
				   "none answered", w->successors);
	if (pid != w->pid)
		w->deadline = now + answer_ns;
	seen(w, pid, beat, pulse, now);
	if (!serving && !__atomic_load_n(&h->left, __ATOMIC_ACQUIRE))
		return stopped(cl);
	if (!serving || mgr_gone(cl, w, pid, now)) {
		if (!w->away_ns)
			w->away_ns = now;
		if (now - w->away_ns > wait_ns && (w->lost = true))
			return sio_err_set(ENOTCONN, "the NVMe manager (pid %d) %s and no manager "
					   "took over within %u ms ($SMARTIO_NVME_RESTART_MS)",
					   (int)pid, serving ? "has died" : "has stopped",
					   cl->restart_ms);
		w->deadline = now + answer_ns;
		return 0;
	}
	if (now - w->beat_ns > still_ns && now - w->pulse_ns > still_ns && (w->lost = true))
		return sio_err_set(ETIMEDOUT, "the NVMe manager (pid %d) has not run for %llu ms: "
				   "it is stopped (SIGSTOP) or stuck ($SMARTIO_NVME_RESTART_MS)",
				   (int)pid, (unsigned long long)((now - w->beat_ns) / 1000000));
	if (__atomic_load_n(&h->resets, __ATOMIC_ACQUIRE) & 1) {
		if (!w->reset_ns)
			w->reset_ns = now;
		if (now - w->reset_ns > reset_bound_ns(cl))
			return sio_err_set(ETIMEDOUT, "the NVMe manager has been resetting the "
					   "controller for over %llu ms ($SMARTIO_NVME_RESET_MS)",
					   (unsigned long long)(reset_bound_ns(cl) / 1000000));
		w->deadline = now + answer_ns;
	} else {
		w->reset_ns = 0;
	}
	return now > w->deadline ? late(cl, w, now) : 0;
}

/* Wait for the answer in our slot: the mailbox outlives a manager, and a
 * successor that takes over (writing its pid in the header) answers what
 * is waiting. */
static int await(struct sio_nvme_client *cl, struct sio_nvme_mbox_slot *sl)
{
	uint64_t now = sio__now_ns(), lost_ns = 0;
	int32_t pid;
	struct mgr_watch w = { .pid = cl->mgr_pid, .beat = cl->mb->h.heartbeat, .beat_ns = now,
			       .pulse = cl->mb->h.pulse, .pulse_ns = now,
			       .deadline = now + (uint64_t)cl->answer_ms * 1000000ull };
	uint32_t st;
	int ret;

	for (;;) {
		st = __atomic_load_n(&sl->state, __ATOMIC_ACQUIRE);
		if (st == SIO_MBOX_RESP)
			return 0;
		/* written over (the manager puts it back and answers "ask
		 * again"), or freed by a manager that took us for dead; all
		 * ones is neither but out of reach, which watch() waits for */
		now = sio__now_ns();
		pid = __atomic_load_n(&sl->pid, __ATOMIC_ACQUIRE);
		if (st == UINT32_MAX && pid == -1) {
			lost_ns = 0;
		} else if (st == SIO_MBOX_FREE || st > SIO_MBOX_RESP || pid != getpid()) {
			if (!lost_ns)
				lost_ns = now;
			if (now - lost_ns > SLOT_LOST_NS)
				return sio_err_set(ENOTCONN, "this client's mailbox slot %d is no "
						   "longer its own (the manager took it for "
						   "gone); open the client again", cl->slot);
		} else {
			lost_ns = 0;
		}
		ret = watch(cl, &w, now);
		if (ret && w.lost) {	/* the next requests do not wait for it again */
			cl->lost_pid = w.pid;
			cl->lost_beat = w.beat;
		}
		if (ret)
			return ret;
		cl->mgr_pid = w.pid;
		sio_segment_wait(cl->mseg, sio_nvme_mbox_slot_off(cl->slot,
			offsetof(struct sio_nvme_mbox_slot, state)), st,
			w.away_ns ? 20000000ull : 100000000ull);
	}
}

/* One request to the manager; bounded wait; a request a manager restart cut
 * short is asked again, a bounded number of times. */
int sio_nvme_mbox_call(struct sio_nvme_client *cl, const struct sio_nvme_mbox_req *req,
		     struct sio_nvme_mbox_resp *resp)
{
	struct sio_nvme_mbox_slot *sl = &cl->mb->slots[cl->slot];
	int ret, tries = 0;

	pthread_mutex_lock(&cl->lock);
	/* a manager given up on, that no successor replaced, is not waited for
	 * again: a client that failed leaves at once */
	if (cl->lost_pid && __atomic_load_n(&cl->mb->h.mgr_pid, __ATOMIC_ACQUIRE) == cl->lost_pid &&
	    __atomic_load_n(&cl->mb->h.heartbeat, __ATOMIC_ACQUIRE) == cl->lost_beat) {
		ret = sio_err_set(ENOTCONN, "the NVMe manager (pid %d) is gone or stopped, and "
				  "no manager took over", (int)cl->lost_pid);
		goto out;
	}
	cl->lost_pid = 0;
	/* released by the fabric, the slot may be another client's now */
	if ((ret = sio_fabric_alive(cl->f)))
		goto out;
	do {
		post(cl, sl, req);
		ret = await(cl, sl);
		if (ret)
			goto out;
		memcpy(resp, (const void *)&sl->resp, sizeof(*resp));
		__atomic_store_n(&sl->state, SIO_MBOX_IDLE, __ATOMIC_RELEASE);
		ret = resp->err;
	} while (ret == -EAGAIN && (resp->flags & SIO_MBOX_RESP_RETRY) && ++tries < RETRIES);
	if (ret) {
		resp->msg[sizeof(resp->msg) - 1] = 0;
		sio_err_set(-ret, "manager: %s", resp->msg);
	}
out:
	pthread_mutex_unlock(&cl->lock);
	return ret;
}

static int find_mailbox(struct sio_nvme_client *cl)
{
	struct sio_segment_info si;
	struct sio_segment *seg;
	struct sio_nvme_mbox *mb;
	void *va;
	int nodes, order[SIO_MAX_NODES + 1], n = 0, i, ret;

	nodes = sio_fabric_nodes(cl->f, NULL, 0);
	if (nodes < 0)
		return sio_err_wrap(-nodes, "cannot list nodes");
	/* The manager normally runs on the lender: look there first. */
	order[n++] = cl->dinfo.lender;
	for (i = 0; i < nodes && i < SIO_MAX_NODES; i++)
		if (i != cl->dinfo.lender)
			order[n++] = i;
	for (i = 0; i < n; i++) {
		ret = sio_segment_connect(cl->f, order[i], SIO_NVME_MBOX_SEGID(cl->dinfo.id),
					  &seg);
		if (ret)
			continue;
		ret = sio_segment_info(seg, &si);
		if (!ret && si.size < SIO_NVME_MBOX_SIZE) {
			sio_segment_close(seg);
			return sio_err_set(EPROTO, "the mailbox of device %u on node %d is %llu "
					   "bytes, not %zu: not a mailbox", cl->dinfo.id,
					   order[i], (unsigned long long)si.size,
					   SIO_NVME_MBOX_SIZE);
		}
		if (!ret)
			ret = sio_segment_map(seg, &va);
		if (ret) {
			sio_segment_close(seg);
			return sio_err_wrap(-ret, "cannot map the manager's mailbox on "
					    "node %d", order[i]);
		}
		mb = va;
		if (__atomic_load_n(&mb->h.magic, __ATOMIC_ACQUIRE) != SIO_NVME_MBOX_MAGIC ||
		    mb->h.version != SIO_NVME_MBOX_VERSION || mb->h.device != cl->dinfo.id ||
		    !mb->h.serving) {
			sio_segment_close(seg);
			return sio_err_set(EAGAIN, "the manager of device %u on node %d "
					   "is not serving yet", cl->dinfo.id, order[i]);
		}
		cl->mseg = seg;
		cl->mb = cl->mb0 = mb;
		cl->mgr_node = order[i];
		cl->mgr_pid = mb->h.mgr_pid;
		return 0;
	}
	return sio_err_set(ENOENT, "no NVMe manager serves device %u on fabric '%s' "
			   "(start nvme-manager)", cl->dinfo.id, sio_fabric_name(cl->f));
}

/*
 * The controller as the mailbox describes it. The header is shared memory
 * any process of the fabric can write, so it is copied out once and what the
 * client derives strides, sizes and waits from is checked on the copy.
 */
static int load_info(struct sio_nvme_client *cl)
{
	struct sio_nvme_mbox_ctrl m;
	const char *why = NULL;

	memcpy(&m, (const void *)&cl->mb->h.ctrl, sizeof(m));
	if (m.dstrd > 15)
		why = "doorbell stride";
	else if (m.page_size < 4096 || m.page_size > (1u << 27) ||
		 (m.page_size & (m.page_size - 1)))
		why = "page size";
	else if (m.mqes < 2 || m.mqes > 65536)
		why = "queue size limit";
	else if (!m.io_queues || m.io_queues > 65535)
		why = "I/O queue count";
	else if (m.max_xfer < 4096 || m.max_xfer > SIO_NVME_MAX_XFER)
		why = "transfer limit";
	else if (!m.timeout_ms || m.timeout_ms > 255 * 500)
		why = "timeout";
	else if (m.cmb_size && (m.cmb_bar < 0 || m.cmb_bar >= SIO_MAX_BARS ||
				m.cmb_size > (1ull << 32) || m.cmb_offset > (1ull << 32)))
		why = "controller memory buffer";
	if (why)
		return sio_err_set(EPROTO, "the mailbox of device %u on node %d has a bad %s: "
				   "refusing it", cl->dinfo.id, cl->mgr_node, why);
	sio_nvme_mbox_ctrl_unpack(&cl->ci, &m);
	return 0;
}

static int claim_slot(struct sio_nvme_client *cl)
{
	int32_t me = getpid(), zero;
	int s;

	for (s = 0; s < SIO_NVME_MBOX_SLOTS; s++) {
		struct sio_nvme_mbox_slot *sl = &cl->mb->slots[s];

		zero = 0;
		if (__atomic_load_n(&sl->state, __ATOMIC_ACQUIRE) != SIO_MBOX_FREE)
			continue;
		if (!__atomic_compare_exchange_n(&sl->pid, &zero, me, false,
						 __ATOMIC_ACQ_REL, __ATOMIC_RELAXED))
			continue;
		sl->node = sio_fabric_node_id(cl->f);
		__atomic_store_n(&sl->state, SIO_MBOX_IDLE, __ATOMIC_RELEASE);
		cl->slot = s;
		return 0;
	}
	return -ENOSPC;
}

/* A slot, once one is free: clients joining by the hundred queue for the
 * mailbox's slots as for the manager, $SMARTIO_NVME_ANSWER_MS at most. */
static int await_slot(struct sio_nvme_client *cl)
{
	uint64_t t0 = sio__now_ns(), wait_ns = (uint64_t)cl->answer_ms * 1000000ull;
	struct sio_backoff b;
	int ret;

	sio_nvme_backoff_init(&b, 50000000);
	while ((ret = claim_slot(cl)) == -ENOSPC && sio__now_ns() - t0 < wait_ns)
		sio_backoff_wait(&b);
	if (ret)
		return sio_err_set(ENOSPC, "the manager's mailbox is full (%d clients), and no "
				   "slot came free within %u ms ($SMARTIO_NVME_ANSWER_MS)",
				   SIO_NVME_MBOX_SLOTS, cl->answer_ms);
	return 0;
}

/*
 * BAR0: confined (manager.h), the register page read-only, for CSTS; each
 * queue pair maps its own doorbell pages (ioq.c). Otherwise the whole BAR.
 */
static int map_registers(struct sio_nvme_client *cl)
{
	void *va;
	int ret;

	ret = sio_device_bar(cl->dev, 0, &cl->bar0);
	if (ret)
		return sio_err_wrap(-ret, "cannot reach BAR0 of device %u", cl->dinfo.id);
	if (cl->ci.db_stride >= SIO_NVME_CONFINE_PAGE) {
		ret = sio_segment_map_range(cl->bar0, -1, 0, SIO_NVME_CONFINE_PAGE,
					    SIO_MAP_RDONLY, &va);
		if (!ret) {
			cl->confined = true;
			cl->regs = cl->regs0 = va;
			return 0;
		}
		/* Real devices' BARs are mapped whole (vfio); so be it. */
		if (ret != -EOPNOTSUPP)
			return sio_err_wrap(-ret, "cannot map the register page of "
					    "device %u read-only", cl->dinfo.id);
	}
	ret = sio_segment_map(cl->bar0, &va);
	if (ret)
		return sio_err_wrap(-ret, "cannot map the doorbells (BAR0) of device %u",
				    cl->dinfo.id);
	cl->regs = cl->regs0 = va;
	return 0;
}

/*
 * A link on the way to the lender that is down as the client starts (a
 * flap, a lender rebooting) is waited for, $SMARTIO_NVME_LINK_GRACE_MS,
 * as a running client pauses for one (recover.c); then the client fails
 * saying which link.
 */
static int links_down(void *cl)
{
	return !sio_nvme_path_links_up(cl, 0);
}

/* The link to the lender did not come back within the grace: -@err, and
 * what it cut short, @why (NULL: nothing). */
static int link_gone(struct sio_nvme_client *cl, int err, const char *why)
{
	return sio_err_set(err, "the link between this node (%d) and the lender of device %u "
			   "(node %d) is down%s%s%s, and did not come back within %u ms "
			   "($SMARTIO_NVME_LINK_GRACE_MS)", sio_fabric_node_id(cl->f),
			   cl->dinfo.id, cl->dinfo.lender, why ? " (" : "", why ? why : "",
			   why ? ")" : "", cl->grace_ms);
}

static int links_wait(struct sio_nvme_client *cl)
{
	if (!sio_nvme_grace_wait(links_down, cl, cl->grace_ms, NULL))
		return 0;
	return link_gone(cl, ENOLINK, NULL);
}

int sio_nvme_setup_again(struct sio_nvme_client *cl, int ret, uint64_t t0, bool resume)
{
	uint64_t spent = (sio__now_ns() - t0) / 1000000ull;
	char why[256];

	if ((ret != -ENOTCONN && ret != -ENOLINK && ret != -EHOSTDOWN) || spent >= cl->grace_ms)
		return ret;
	snprintf(why, sizeof(why), "%s", sio_errmsg());
	/* a link seen up again whose windows are not mapped yet refuses a
	 * map as well: a little later each time, within the grace */
	usleep((useconds_t)(spent < 4000 ? 20 + spent / 4 : 1000) * 1000);
	spent = (sio__now_ns() - t0) / 1000000ull;
	if (spent < cl->grace_ms &&
	    !sio_nvme_grace_wait(resume ? sio_nvme_links_lost : links_down, cl,
				 (uint32_t)(cl->grace_ms - spent), NULL))
		return 0;
	return link_gone(cl, ENOLINK, why);
}

/* Borrow the device and find its manager's mailbox. A manager that is
 * starting holds the device exclusively, briefly, and one taking a
 * restarted controller over serves after a while: wait for it, at least
 * 3 s, as long as $SMARTIO_NVME_LINK_GRACE_MS. */
static int borrow(struct sio_nvme_client *cl)
{
	uint64_t wait_ns = cl->grace_ms > 3000 ? (uint64_t)cl->grace_ms * 1000000ull : 3000000000ull;
	uint64_t deadline = sio__now_ns() + wait_ns;
	struct sio_backoff b;
	int ret;

	sio_nvme_backoff_init(&b, 20000000);
	for (;;) {
		ret = sio_device_borrow(cl->f, cl->dinfo.id, SIO_BORROW_SHARED, &cl->dev);
		if (!ret) {
			ret = find_mailbox(cl);
			if (ret != -EAGAIN)
				return ret;
			sio_device_close(cl->dev);
			cl->dev = NULL;
		} else if (ret != -EBUSY) {
			return sio_err_wrap(-ret, "cannot borrow device %u", cl->dinfo.id);
		}
		if (sio__now_ns() > deadline) {
			if (ret == -EBUSY)
				ret = sio_err_set(EBUSY, "device %u is borrowed exclusively "
						  "by another process (a manager starting, "
						  "or nvme-identify without a manager)",
						  cl->dinfo.id);
			return ret;
		}
		sio_backoff_wait(&b);
	}
}

/* Take a mailbox slot and say hello to the manager. */
static int hello(struct sio_nvme_client *cl)
{
	struct sio_nvme_mbox_req req;
	struct sio_nvme_mbox_resp resp;
	int ret = await_slot(cl);

	if (ret)
		return ret;
	memset(&req, 0, sizeof(req));
	req.op = SIO_MBOX_OP_HELLO;
	return sio_nvme_mbox_call(cl, &req, &resp);
}

/* Where admin data lands: in the arena, or a segment of its own. */
static int admin_buffer(struct sio_nvme_client *cl)
{
	struct sio_nvme_slice sl;
	int ret = sio_nvme_arena_open(cl);

	if (ret)
		return ret;
	if (!sio_nvme_arena_alloc(cl, 8192, &sl)) {
		cl->scratch_va = sl.va;
		cl->scratch_off = sl.off;
		return 0;
	}
	ret = sio_segment_create(cl->f, 0, 8192, 0, &cl->scratch);
	if (!ret)
		ret = sio_segment_map(cl->scratch, &cl->scratch_va);
	if (ret)
		return sio_err_wrap(-ret, "cannot create the client's admin buffer");
	sio_segment_set_name(cl->scratch, "nvme-client-admin");
	return 0;
}

/* A client of fabric @f, its settings read; nothing attached yet. */
static int client_new(struct sio_fabric *f, struct sio_nvme_client **out)
{
	struct sio_nvme_client *cl = calloc(1, sizeof(*cl));
	int ret;

	*out = cl;
	if (!cl)
		return sio_err_set(ENOMEM, "out of memory");
	cl->f = f;
	cl->slot = -1;
	pthread_mutex_init(&cl->lock, NULL);
	ret = sio_nvme_env_u32("SMARTIO_NVME_RESTART_MS", RESTART_WAIT_MS, RESTART_WAIT_MAX,
			       "milliseconds a request waits for a manager to take over",
			       &cl->restart_ms);
	if (!ret)
		ret = sio_nvme_env_u32("SMARTIO_NVME_ANSWER_MS", ANSWER_WAIT_MS, ANSWER_WAIT_MAX,
				       "milliseconds a request waits for a busy manager's "
				       "answer", &cl->answer_ms);
	if (!ret)
		ret = sio_nvme_env_u32("SMARTIO_NVME_RESET_MS", 0, ANSWER_WAIT_MAX,
				       "milliseconds a request waits for a controller reset; 0: "
				       "as long as the manager's tries may take", &cl->reset_ms);
	if (!ret)
		ret = sio_nvme_env_u32("SMARTIO_NVME_ARENA_MB", SIO_NVME_ARENA_MB,
				       SIO_NVME_ARENA_MAX_MB, "MiB of the client's arena; 0 "
				       "turns it off", &cl->arena_mb);
	if (!ret)
		ret = sio_nvme_link_grace_ms(&cl->grace_ms);
	return ret;
}

/* Borrow the device and find its manager, read what the mailbox says of
 * the controller, say hello, map the doorbells (and the shadow ones), make
 * the admin buffer. */
static int attach(struct sio_nvme_client *cl)
{
	int ret = borrow(cl);

	if (!ret)
		ret = load_info(cl);
	if (ret)
		return ret;
	sio_nvme_client_set_timeout(cl, 0);
	ret = hello(cl);
	if (!ret)
		ret = map_registers(cl);
	if (!ret)
		ret = sio_nvme_client_dbbuf(cl);
	if (!ret)
		ret = admin_buffer(cl);
	return ret;
}

/* A fresh client in place of @cl, whose attaching the link cut short: what
 * it had attached goes (its slot with a goodbye, once the link is back). */
static int client_again(struct sio_nvme_client **cl)
{
	struct sio_nvme_client *old = *cl;
	int ret = client_new(old->f, cl);

	if (*cl)
		(*cl)->dinfo = old->dinfo;
	sio_nvme_client_close(old);
	return ret;
}

/* The steps: find the device, wait for the links to its lender, attach.
 * A link that goes down meanwhile has the attaching made again once it is
 * back, within the grace (sio_nvme_setup_again()). */
int sio_nvme_client_open(struct sio_fabric *f, uint32_t device, struct sio_nvme_client **out)
{
	struct sio_nvme_client *cl = NULL;
	struct sio_errsave es;
	uint64_t t0;
	int ret;

	if (!f || !out)
		return sio_err_set(EINVAL, "sio_nvme_client_open: NULL argument");
	ret = client_new(f, &cl);
	if (!ret)
		ret = sio_nvme_find_device(f, device, &cl->dinfo);
	if (!ret)
		ret = links_wait(cl);
	for (t0 = sio__now_ns(); !ret;) {
		ret = attach(cl);
		if (!ret || (ret = sio_nvme_setup_again(cl, ret, t0, false)))
			break;
		ret = client_again(&cl);
	}
	if (ret)
		goto fail;
	sio_nvme_stats_open(cl);	/* the live counters: no reason to refuse a client */
	*out = cl;
	return 0;
fail:
	sio_err_save(&es);
	sio_nvme_client_close(cl);
	sio_err_restore(&es);
	return ret;
}

void sio_nvme_client_close(struct sio_nvme_client *cl)
{
	struct sio_nvme_mbox_req req;
	struct sio_nvme_mbox_resp resp;

	if (!cl)
		return;
	while (cl->queues)
		sio_nvme_ioq_close(cl->queues);
	/* a client the fabric released has no slot to hand back */
	if (cl->mb && cl->slot >= 0 && !sio_fabric_alive(cl->f)) {
		memset(&req, 0, sizeof(req));
		req.op = SIO_MBOX_OP_BYE;
		sio_nvme_mbox_call(cl, &req, &resp);
		/* Hand the slot back: state first, then the owner. */
		__atomic_store_n(&cl->mb->slots[cl->slot].state, SIO_MBOX_FREE,
				 __ATOMIC_RELEASE);
		__atomic_store_n(&cl->mb->slots[cl->slot].pid, 0, __ATOMIC_RELEASE);
	}
	if (cl->scratch)
		sio_segment_close(cl->scratch);
	sio_nvme_stats_close(cl);
	sio_nvme_arena_close(cl);
	if (cl->dbbuf.seg)
		sio_segment_close(cl->dbbuf.seg);
	if (cl->bar0)
		sio_segment_close(cl->bar0);
	if (cl->bar0_2)
		sio_segment_close(cl->bar0_2);
	if (cl->mseg2)
		sio_segment_close(cl->mseg2);
	if (cl->dbbuf2.seg)
		sio_segment_close(cl->dbbuf2.seg);
	sio_device_close(cl->dev2);
	if (cl->mseg)
		sio_segment_close(cl->mseg);
	sio_device_close(cl->dev);
	pthread_mutex_destroy(&cl->lock);
	free(cl);
}

int sio_nvme_client_info(const struct sio_nvme_client *cl, struct sio_nvme_ctrl_info *out)
{
	if (!cl || !out)
		return sio_err_set(EINVAL, "sio_nvme_client_info: NULL argument");
	*out = cl->ci;
	return 0;
}

struct sio_device *sio_nvme_client_device(const struct sio_nvme_client *cl)
{
	return cl->dev;
}

int sio_nvme_client_manager_node(const struct sio_nvme_client *cl)
{
	return cl->mgr_node;
}

void sio_nvme_client_set_timeout(struct sio_nvme_client *cl, uint32_t ms)
{
	if (!ms) {
		ms = cl->ci.timeout_ms;
		if (ms < 2000)
			ms = 2000;
	}
	cl->timeout_ms = ms;
}


/* Admin data: map the scratch buffer for the device only while in use, so a
 * client holds no window on the lender's adapter for it between calls.
 * The buffer is filled with ADMIN_POISON first (admin_data_call()). */
static int admin_data_once(struct sio_nvme_client *cl, struct sio_nvme_mbox_req *req,
			   void *out, uint32_t len)
{
	struct sio_nvme_mbox_resp resp;
	struct sio_device *dev = cl->dev;
	struct sio_errsave es;
	uint64_t bus;
	int ret;

	/* A multipath client takes the second path while the first is down. */
	if (cl->dev2 && !sio_nvme_path_links_up(cl, 0) && sio_nvme_path_links_up(cl, 1))
		dev = cl->dev2;
	if (!cl->scratch) {	/* in the arena, mapped for good */
		ret = dev == cl->dev2 ? sio_nvme_arena_bus2(cl, &bus) : sio_nvme_arena_bus(cl, &bus);
		if (ret)
			return ret;
		bus += cl->scratch_off;
	} else {
		ret = sio_device_map(dev, cl->scratch, &bus);
		if (ret == -ENODEV)
			return sio_err_wrap(ENODEV, "cannot map the admin buffer for the device: "
					    "its lender, node %d, has left the fabric",
					    cl->dinfo.lender);
		if (ret)
			return sio_err_wrap(-ret, "cannot map the admin buffer for the device");
	}
	memset(cl->scratch_va, ADMIN_POISON, len);
	req->bus1 = bus;
	ret = sio_nvme_mbox_call(cl, req, &resp);
	if (!ret)
		memcpy(out, cl->scratch_va, len);
	if (cl->scratch) {
		sio_err_save(&es);
		sio_device_unmap(dev, cl->scratch);
		sio_err_restore(&es);
	}
	return ret;
}

/* Whether the controller wrote any of the @len bytes at @p. */
static bool landed(const uint8_t *p, uint32_t len)
{
	for (uint32_t i = 0; i < len; i++)
		if (p[i] != ADMIN_POISON)
			return true;
	return false;
}

/*
 * A command whose data went nowhere still completes with success (a
 * controller's DMA across a link that is down is dropped, and QEMU's
 * controller says nothing of it): handed back as it was, an Identify
 * Namespace of zeros said "namespace 1 is not active" after a lender's
 * flap. Data that did not land, or a transfer error while the link to the
 * lender is down, is asked for again once the link is up, ADMIN_TRIES
 * times in all; then the call fails saying so.
 */
static int admin_data_call(struct sio_nvme_client *cl, struct sio_nvme_mbox_req *req,
			   void *out, uint32_t len, const char *what)
{
	char why[320];
	bool lost;
	int ret;

	for (int i = 1;; i++) {
		ret = admin_data_once(cl, req, out, len);
		lost = ret ? ret == -EIO && !sio_nvme_path_links_up(cl, 0) : !landed(out, len);
		if (!lost || i == ADMIN_TRIES)
			break;
		snprintf(why, sizeof(why), "%s: %s", what, ret ? sio_errmsg() :
			 "its data never reached this client's buffer");
		if (sio_nvme_grace_wait(links_down, cl, cl->grace_ms, NULL))
			return link_gone(cl, ret ? -ret : ENOLINK, why);
	}
	if (lost && !ret)
		return sio_err_set(EIO, "%s: the controller completed it %d times, and its data "
				   "never reached this client's buffer (dropped on the way from "
				   "the lender, node %d?)", what, ADMIN_TRIES, cl->dinfo.lender);
	return ret;
}

int sio_nvme_client_identify(struct sio_nvme_client *cl, uint8_t cns, uint32_t nsid,
			     void *out)
{
	struct sio_nvme_mbox_req req;

	memset(&req, 0, sizeof(req));
	req.op = SIO_MBOX_OP_IDENTIFY;
	req.cdw10 = cns;
	req.nsid = nsid;
	req.len = 4096;
	return admin_data_call(cl, &req, out, 4096, "Identify");
}

int sio_nvme_client_get_log(struct sio_nvme_client *cl, uint8_t lid, uint32_t nsid,
			    void *out, uint32_t len)
{
	struct sio_nvme_mbox_req req;

	if (!len || len > 8192 || (len & 3))
		return sio_err_set(EINVAL, "log page length %u invalid (a multiple of 4, "
				   "at most 8192)", len);
	memset(&req, 0, sizeof(req));
	req.op = SIO_MBOX_OP_GET_LOG;
	req.cdw10 = lid;
	req.nsid = nsid;
	req.len = len;
	return admin_data_call(cl, &req, out, len, "Get Log Page");
}

int sio_nvme_client_get_features(struct sio_nvme_client *cl, uint8_t fid, uint32_t cdw11,
				 uint32_t *result)
{
	return sio_nvme_client_get_features_ns(cl, fid, 0, cdw11, result);
}

int sio_nvme_client_ns(struct sio_nvme_client *cl, uint32_t nsid, struct sio_nvme_ns *out)
{
	struct nvme_id_ns *id;
	uint8_t ds;
	int ret;

	if (nsid >= 1 && nsid <= NS_CACHE && cl->ns[nsid].active) {
		*out = cl->ns[nsid];
		return 0;
	}
	if (nsid == 0 || nsid > cl->ci.nn)
		return sio_err_set(ENOENT, "namespace %u does not exist (the controller "
				   "has %u)", nsid, cl->ci.nn);
	id = malloc(4096);
	if (!id)
		return sio_err_set(ENOMEM, "out of memory");
	ret = sio_nvme_client_identify(cl, NVME_IDENTIFY_CNS_NS, nsid, id);
	if (ret)
		goto out;
	ds = id->lbaf[id->flbas & 0xf].ds;
	if (!id->nsze) {
		ret = sio_err_set(ENOENT, "namespace %u is not active", nsid);
		goto out;
	}
	if (ds < 9 || ds > 16) {
		ret = sio_err_set(EIO, "namespace %u reports an LBA size of 2^%u", nsid, ds);
		goto out;
	}
	out->nsid = nsid;
	out->nsze = id->nsze;
	out->lba_size = 1u << ds;
	out->active = true;
	if (nsid <= NS_CACHE)
		cl->ns[nsid] = *out;
out:
	free(id);
	return ret;
}
