/* SPDX-License-Identifier: MIT */
#ifndef SMARTIO_BACKOFF_H
#define SMARTIO_BACKOFF_H

/**
 * DOC: back-off for polling loops
 *
 * The one way a smartio process waits for memory another process writes
 * (a doorbell, a completion, a mailbox answer): spin briefly, since the
 * answer is often a microsecond away; then yield the CPU; then sleep, one
 * microsecond at first and twice as long each time up to a cap. On a host
 * with few cores a process that only spins starves the one it waits for.
 * The caller bounds the wait itself (a deadline, a stop flag) and calls
 * sio_backoff_reset() when it made progress.
 */

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/**
 * struct sio_backoff - where a waiting loop stands
 * @spins: empty rounds answered with a CPU pause
 * @yields: empty rounds after those answered with sched_yield()
 * @max_ns: longest sleep; the caller may change it between waits (a
 *	controller with commands in flight sleeps less than an idle one)
 * @iter: empty rounds since the last reset
 * @sleep_ns: the next sleep
 */
struct sio_backoff {
	uint32_t spins;
	uint32_t yields;
	uint32_t max_ns;
	uint32_t iter;
	uint32_t sleep_ns;
};

/**
 * sio_backoff_init() - start waiting
 * @b: the state
 * @spins: rounds to spin first
 * @yields: rounds to yield next
 * @max_ns: longest sleep after those (0: 100 us)
 */
void sio_backoff_init(struct sio_backoff *b, uint32_t spins, uint32_t yields, uint32_t max_ns);

/**
 * sio_backoff_reset() - progress was made: spin again at the next wait
 * @b: the state
 */
void sio_backoff_reset(struct sio_backoff *b);

/**
 * sio_backoff_wait() - one empty round: pause, yield or sleep
 * @b: the state
 *
 * Never sleeps longer than @b->max_ns; a signal cuts a sleep short.
 */
void sio_backoff_wait(struct sio_backoff *b);

#ifdef __cplusplus
}
#endif
#endif
