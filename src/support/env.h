/* SPDX-License-Identifier: MIT */
#ifndef SIO_SUPPORT_ENV_H
#define SIO_SUPPORT_ENV_H

/**
 * DOC: times from the environment
 *
 * The library's waits that a person may lengthen or shorten
 * ($SMARTIO_LOCK_TIMEOUT_MS, $SMARTIO_SHMWIN_LEASE_MS, $SMARTIO_NTB_XLAT_MS;
 * docs/env.md lists each with its default and range) are read here, the
 * one way: a whole number of milliseconds, parsed as every number is
 * (parse.h), in a range, with a default when the variable is unset or
 * empty. A bad value is refused where a fabric is opened, with a message
 * that names the variable, its value and its range; a reader deep inside
 * a wait takes the default instead, as the value was checked on the way
 * in. In no library's ABI (the ``sio__`` prefix).
 */

#include <stdint.h>

/**
 * sio__env_ms() - a time in milliseconds from the environment
 * @name: the variable, e.g. "SMARTIO_LOCK_TIMEOUT_MS"
 * @def_ms: the time when @name is unset or empty
 * @min_ms: the shortest time accepted
 * @max_ms: the longest time accepted
 * @ns: the time in nanoseconds: the value given, or @def_ms when there is
 *	none or it is bad
 *
 * Return: 0; -EINVAL when @name holds no whole number in [@min_ms, @max_ms],
 * with sio_errmsg() naming the variable, its value and what is wrong with
 * it (the range, for a number outside it).
 */
int sio__env_ms(const char *name, uint64_t def_ms, uint64_t min_ms, uint64_t max_ms,
		uint64_t *ns);

#endif
