/* SPDX-License-Identifier: MIT */
#ifndef SIO_SUPPORT_SCHED_ACCT_H
#define SIO_SUPPORT_SCHED_ACCT_H

/**
 * DOC: where a client's time goes
 *
 * A client that gets less than its share of a device either lost it to the
 * device's arbitration or was not running when it could have submitted. The
 * second is the wall clock less the thread's CPU time (CLOCK_THREAD_CPUTIME_ID)
 * less the time it chose to sleep, taken over windows of a millisecond so
 * that the CPU clock, a system call, is read rarely. The time it waited for
 * completions (polls that found nothing, sleeps on an interrupt) is counted
 * apart. Programs publish both with sio_nvme_ioq_publish_sched().
 */

#include <stdint.h>
#include <time.h>

#define SIO__SCHED_WINDOW_NS	1000000ull

struct sio__sched_acct {
	uint64_t w0, c0;	/* the window's start: wall clock, thread CPU */
	uint64_t slept;		/* asleep on purpose in this window */
	uint64_t offcpu_ns;	/* not running, not asleep on purpose */
	uint64_t wait_ns;	/* waiting for completions */
};

static inline uint64_t sio__thread_cpu_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* Start counting at @now (sio__now_ns()). */
static inline void sio__sched_start(struct sio__sched_acct *a, uint64_t now)
{
	*a = (struct sio__sched_acct){ .w0 = now, .c0 = sio__thread_cpu_ns() };
}

/* @ns spent waiting for completions; @asleep: in a sleep of its own choosing. */
static inline void sio__sched_wait(struct sio__sched_acct *a, uint64_t ns, int asleep)
{
	a->wait_ns += ns;
	if (asleep)
		a->slept += ns;
}

/* Once per loop: closes a window when a millisecond has passed. */
static inline void sio__sched_tick(struct sio__sched_acct *a, uint64_t now)
{
	uint64_t c, wall, ran;

	if (now - a->w0 < SIO__SCHED_WINDOW_NS)
		return;
	c = sio__thread_cpu_ns();
	wall = now - a->w0;
	ran = (c - a->c0) + a->slept;
	if (wall > ran)
		a->offcpu_ns += wall - ran;
	a->w0 = now;
	a->c0 = c;
	a->slept = 0;
}

#endif
