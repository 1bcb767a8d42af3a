/* SPDX-License-Identifier: MIT */
#ifndef SIO_SUPPORT_CLOCK_H
#define SIO_SUPPORT_CLOCK_H

/**
 * DOC: the monotonic clock
 *
 * The one clock every part of smartio measures time with: deadlines,
 * leases, heartbeats, latencies and rates. It is CLOCK_MONOTONIC, which
 * neither jumps with the wall clock nor stops while the host is busy, in
 * nanoseconds. Like every src/support helper it is in no library's ABI:
 * its name begins with ``sio__``, and it is static inline because the NVMe
 * driver's queue pairs and the device models read it for each command.
 */

#include <stdint.h>
#include <time.h>

/**
 * sio__now_ns() - the monotonic clock in nanoseconds
 *
 * Return: nanoseconds since an arbitrary point, the same for every process
 * of the host.
 */
static inline uint64_t sio__now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

#endif
