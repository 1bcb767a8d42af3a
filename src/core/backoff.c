/* SPDX-License-Identifier: MIT */
/* Back-off for polling loops: <smartio/backoff.h>. */
#include <sched.h>
#include <time.h>
#include <smartio/backoff.h>

#define FIRST_SLEEP_NS	1000u

void sio_backoff_init(struct sio_backoff *b, uint32_t spins, uint32_t yields, uint32_t max_ns)
{
	b->spins = spins;
	b->yields = yields;
	b->max_ns = max_ns ? max_ns : 100000u;
	sio_backoff_reset(b);
}

void sio_backoff_reset(struct sio_backoff *b)
{
	b->iter = 0;
	b->sleep_ns = FIRST_SLEEP_NS;
}

static inline void cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
	__builtin_ia32_pause();
#elif defined(__aarch64__)
	__asm__ __volatile__("yield" ::: "memory");
#endif
}

void sio_backoff_wait(struct sio_backoff *b)
{
	struct timespec ts = { 0, 0 };

	if (b->iter < b->spins) {
		b->iter++;
		cpu_relax();
		return;
	}
	if (b->iter < b->spins + b->yields) {
		b->iter++;
		sched_yield();
		return;
	}
	if (b->sleep_ns > b->max_ns)
		b->sleep_ns = b->max_ns;
	ts.tv_nsec = b->sleep_ns;
	nanosleep(&ts, NULL);
	b->sleep_ns = b->sleep_ns > b->max_ns / 2 ? b->max_ns : b->sleep_ns * 2;
}
