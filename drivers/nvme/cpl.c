/* SPDX-License-Identifier: MIT */
/*
 * How a queue pair waits for completions (struct sio_nvme_qspec.completions):
 * spinning on its CQ, asleep on the CQ's interrupt, adaptively, spinning
 * while completions keep coming and sleeping once they stop, as NAPI's busy
 * polling and SPDK's interrupt mode do, or hybrid: timed sleeps at the
 * device's pace, then polls, as Linux's hybrid polling of a polled queue
 * does. The manager gives an interrupt-driven
 * CQ the vector sio_nvme_mbox_vector(qid); this borrow takes that vector alone.
 *
 * Every sleep is bounded and followed by a poll: an interrupt that is lost
 * (a full socket, a controller that coalesced it away) delays completions
 * by SIO_NVME_WAIT_SLEEP_MS at most and never hangs the caller.
 */
#include <errno.h>
#include <sched.h>
#include <stdio.h>
#include <time.h>
#include <smartio/smartio.h>
#include "client-priv.h"

/*
 * Adaptive: spin for up to four times the wait the last successful spin
 * took, within these bounds, before sleeping; a sleep halves it. A
 * completion of the emulated controller from RAM takes one to a few
 * microseconds and a wake-up about twenty, so a busy queue keeps spinning;
 * one whose completions stop coming (a slow device, a controller without a
 * CPU of its own) soon spins only the floor before it sleeps.
 */
#define CPL_SPIN_MIN_NS	10000u
#define CPL_SPIN_MAX_NS	50000u

/*
 * Hybrid: the device's time per completion is taken over windows of this
 * many completions (a caller that keeps the queue full measures the
 * device's pace, not its own); a sleep lasts 1 us to 1 ms, and 50 us
 * between polls until the first window gives the pace.
 */
#define HYB_WINDOW	256u
#define HYB_FIRST_NS	50000u
#define HYB_MIN_NS	1000u
#define HYB_MAX_NS	1000000u

const char *sio_nvme_completions_name(int mode)
{
	switch (mode) {
	case SIO_NVME_CPL_POLL: return "poll";
	case SIO_NVME_CPL_IRQ: return "irq";
	case SIO_NVME_CPL_ADAPTIVE: return "adaptive";
	case SIO_NVME_CPL_HYBRID: return "hybrid";
	default: return "?";
	}
}

/*
 * Take the CQ's vector once the queue pair exists. Without interrupts
 * (a backend that has none, a borrow whose interrupts another queue pair
 * took) irq is refused and adaptive polls, noting why.
 */
int sio_nvme_cpl_setup(struct sio_nvme_ioq *q, int asked)
{
	uint16_t qid = q->qp[0].q.qid, vec = sio_nvme_mbox_vector(qid);
	int ret;

	if (!sio_nvme_cpl_irq(q->cpl_mode))
		return 0;
	ret = sio_device_irq_enable_one(q->qp[0].dev, SIO_IRQ_F(SIO_IRQ_MSI) |
					SIO_IRQ_F(SIO_IRQ_MSIX), vec);
	if (ret >= 0) {
		q->irq_vec = vec;
		return 0;
	}
	if (asked == SIO_NVME_CPL_IRQ)
		return sio_err_wrap(-ret, "completions=irq: no interrupt for queue %u (vector %u; "
				    "completions=adaptive polls where there is none)", qid, vec);
	snprintf(q->cpl_note, sizeof(q->cpl_note), "completions=adaptive polls queue %u: %s",
		 qid, sio_errmsg());
	q->cpl_mode = SIO_NVME_CPL_POLL;
	return 0;
}

void sio_nvme_cpl_release(struct sio_nvme_ioq *q)
{
	if (q->irq_vec >= 0)
		sio_device_irq_disable(q->qp[0].dev);
	q->irq_vec = -1;
}

/* One bounded sleep on the CQ's vector, then a poll. */
static int sleep_once(struct sio_nvme_ioq *q, uint32_t max, uint64_t ns, uint64_t *slept)
{
	int ms = (int)((ns + 999999) / 1000000), r, n;
	uint64_t t0 = sio__now_ns(), t;

	if (ms > SIO_NVME_WAIT_SLEEP_MS)
		ms = SIO_NVME_WAIT_SLEEP_MS;
	r = sio_device_irq_wait(q->qp[0].dev, q->irq_vec, ms);
	t = sio__now_ns();
	if (slept)
		*slept += t - t0;
	q->sleeps++;
	if (r < 0 && r != -ETIMEDOUT && r != -EINTR)
		return r;
	n = sio_nvme_ioq_poll(q, max);
	if (n > 0 && r == -ETIMEDOUT)
		q->wakeups_lost++;
	return n;
}

/* Adaptive: keep spinning as long as spinning pays. */
static void spin_paid(struct sio_nvme_ioq *q, uint64_t waited)
{
	uint64_t s = waited * 4;

	if (s > q->spin_ns)
		q->spin_ns = (uint32_t)(s > CPL_SPIN_MAX_NS ? CPL_SPIN_MAX_NS : s);
}

static void spin_failed(struct sio_nvme_ioq *q)
{
	q->spin_ns = q->spin_ns / 2 < CPL_SPIN_MIN_NS ? CPL_SPIN_MIN_NS : q->spin_ns / 2;
}

/*
 * Adaptive: have completions stopped? None came back from a reap since the
 * last wait, and that wait ended longer ago than the longest spin: a queue
 * used now and then (a client issuing at a low rate, between bursts), whose
 * device has likely gone idle too. A spin would not pay: sleep at once.
 */
static bool cpl_stopped(const struct sio_nvme_ioq *q, uint64_t now)
{
	return !q->reaped_since_wait && now - q->waited_ns > CPL_SPIN_MAX_NS;
}

/* A wait that found @n completions at @now. */
static int waited(struct sio_nvme_ioq *q, int n, uint64_t now)
{
	if (n > 0) {
		q->reaped_since_wait = false;
		q->waited_ns = now;
	}
	return n;
}

/* Hybrid: the device's pace, from the completions returned since the
 * window began (the first window only starts the clock). */
static void hyb_pace(struct sio_nvme_ioq *q, uint64_t now)
{
	uint64_t n = q->reaped - q->pace_n, per;

	if (n < HYB_WINDOW)
		return;
	per = (now - q->pace_t0) / n;
	if (q->pace_t0)
		q->pace_ns = q->pace_ns ? (3 * q->pace_ns + per) / 4 : per;
	q->pace_t0 = now;
	q->pace_n = q->reaped;
}

/* A sleep of @ns (1 us to 1 ms), and no further than @deadline. */
static void hyb_nap(uint64_t ns, uint64_t now, uint64_t deadline, uint64_t *slept)
{
	struct timespec ts;

	ns = ns < HYB_MIN_NS ? HYB_MIN_NS : ns > HYB_MAX_NS ? HYB_MAX_NS : ns;
	if (ns > deadline - now)
		ns = deadline - now;
	ts = (struct timespec){ 0, (long)ns };
	nanosleep(&ts, NULL);
	if (slept)
		*slept += sio__now_ns() - now;
}

/*
 * Hybrid, with two or more in flight and none there: one sleep for about
 * the time half of them take, so the other half keeps the device busy;
 * then polls, with sleeps of one completion's time between them, not
 * yields: where the device shares the CPUs (an emulated controller, a
 * loaded host) the first sleep often falls short, and a yielding spin
 * spends a system call per round for the rest of the wait.
 */
static int hybrid_wait(struct sio_nvme_ioq *q, uint32_t max, uint64_t start, uint64_t deadline,
		       uint64_t *slept)
{
	uint64_t now = start, step = q->pace_ns ? q->pace_ns : HYB_FIRST_NS;
	uint32_t polls = 0;
	int n;

	if (q->pace_ns)
		hyb_nap(sio_nvme_ioq_inflight(q) / 2 * q->pace_ns, start, deadline, slept);
	while ((n = sio_nvme_ioq_poll(q, max)) == 0 && (now = sio__now_ns()) < deadline)
		if (++polls > 32)
			hyb_nap(step, now, deadline, slept);
	return n;
}

static int reap_wait(struct sio_nvme_ioq *q, uint32_t max, uint32_t timeout_us,
		     uint64_t *slept_ns)
{
	uint64_t start, now, deadline, spin = 0;
	uint32_t empty = 0;
	int n;

	n = sio_nvme_ioq_poll(q, max);
	if (n > 0)
		q->reaped_since_wait = true;
	if (n || !timeout_us || !sio_nvme_ioq_inflight(q))
		return n;
	start = sio__now_ns();
	deadline = start + (uint64_t)timeout_us * 1000;
	if (q->cpl_mode == SIO_NVME_CPL_HYBRID) {
		hyb_pace(q, start);
		if (sio_nvme_ioq_inflight(q) >= 2)
			return hybrid_wait(q, max, start, deadline, slept_ns);
	}
	if (q->cpl_mode == SIO_NVME_CPL_ADAPTIVE) {
		if (!q->spin_ns)
			q->spin_ns = CPL_SPIN_MAX_NS;
		if (cpl_stopped(q, start))
			q->sleeps_direct++;
		else
			spin = q->spin_ns;
	}
	while ((now = sio__now_ns()) < deadline) {
		if (!sio_nvme_cpl_irq(q->cpl_mode) || now - start < spin) {
			n = sio_nvme_ioq_poll(q, max);
			if (n) {
				if (q->cpl_mode == SIO_NVME_CPL_ADAPTIVE)
					spin_paid(q, now - start);
				return waited(q, n, now);
			}
			/* polling backs off by giving the core away; adaptive's spin
			 * is short, and a yield on a busy machine costs milliseconds */
			if (++empty % 64 == 0 && !sio_nvme_cpl_irq(q->cpl_mode))
				sched_yield();
			continue;
		}
		if (q->cpl_mode == SIO_NVME_CPL_ADAPTIVE && empty) {
			spin_failed(q);
			empty = 0;
		}
		n = sleep_once(q, max, deadline - now, slept_ns);
		if (n)
			return waited(q, n, sio__now_ns());
	}
	return 0;
}

int sio_nvme_ioq_reap(struct sio_nvme_ioq *q, uint32_t max, uint32_t timeout_us,
		      uint64_t *slept_ns)
{
	int n;

	if (!q)
		return sio_err_set(EINVAL, "sio_nvme_ioq_reap: NULL queue pair");
	n = reap_wait(q, max, timeout_us, slept_ns);
	if (n > 0)
		q->reaped += (uint64_t)n;
	return n;
}
