/* SPDX-License-Identifier: MIT */
#ifndef SIO_SUPPORT_PARSE_H
#define SIO_SUPPORT_PARSE_H

/**
 * DOC: parsing numbers
 *
 * The one way smartio reads a number from a person: every program's options,
 * the library's environment variables ($SMARTIO_NODE,
 * $SMARTIO_LOCK_TIMEOUT_MS) and the NVMe driver's queue specs. It is in no
 * library's ABI: libsmartio and libsmartio-nvme each carry a hidden copy,
 * and the programs take it from the static archives they link (meson:
 * sio_parse_dep). A number is the whole string, decimal or 0x
 * hexadecimal, with no sign, no space and no leading 0 taken as octal; it
 * must not overflow and must lie in [@min, @max]. On failure the calling
 * thread's sio_errmsg() quotes the string as given and says what is wrong
 * (set with sio_err_set(), so every copy writes the one message), and the
 * result is left untouched.
 */

#include <stdbool.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/**
 * sio_parse_u64() - parse a whole unsigned number in a range
 * @s: the text, e.g. "4", "0x1f"
 * @min: smallest accepted value
 * @max: largest accepted value
 * @out: the value, set only on success
 *
 * Return: 0; -EINVAL if @s is NULL, empty or not a number (a sign, a space,
 * trailing characters); -ERANGE if it overflows or lies outside [@min, @max].
 */
int sio_parse_u64(const char *s, uint64_t min, uint64_t max, uint64_t *out);

/**
 * sio_parse_size() - parse a byte count with an optional binary suffix
 * @s: the text, e.g. "4096", "64M", "1GiB", "2T" (K, M, G, T: powers of 1024,
 *     in either case, optionally followed by "i", "B" or "iB")
 * @min: smallest accepted size in bytes
 * @max: largest accepted size in bytes
 * @out: the size in bytes, set only on success
 *
 * Return: 0; -EINVAL if @s is not a size; -ERANGE if it overflows 64 bits or
 * lies outside [@min, @max].
 */
int sio_parse_size(const char *s, uint64_t min, uint64_t max, uint64_t *out);

/**
 * sio_parse_bytes() - sio_parse_size(), and whether the text had a suffix
 * @s, @min, @max, @out: as for sio_parse_size(); fio's suffixes are taken
 *	too ("4k", "1m", "2KiB", "1p")
 * @bare: set on success: true when @s is digits alone (a bare number), so
 *	that an option whose unit changed to bytes can refuse what meant
 *	something else before; may be NULL
 *
 * A negative number is out of range (-ERANGE), not "not a number".
 * Return: as sio_parse_size().
 */
int sio_parse_bytes(const char *s, uint64_t min, uint64_t max, uint64_t *out, bool *bare);

/**
 * sio_parse_time() - parse a duration with fio's units
 * @s: the text, e.g. "3s", "500ms", "1.5", "2m", "100us"
 * @unit: seconds that a bare number counts (1 for an option in seconds,
 *	1e-3 for one in milliseconds): a bare number keeps the option's unit
 * @min: shortest accepted duration, in seconds
 * @max: longest accepted duration, in seconds
 * @out: the duration in seconds, set only on success
 *
 * Units: ns, us, ms, s, m (minutes), h, d, and nsec, usec, msec, sec, min.
 * Return: 0; -EINVAL if @s is not a time; -ERANGE if it is negative or lies
 * outside [@min, @max] (the message gives the range with units).
 */
int sio_parse_time(const char *s, double unit, double min, double max, double *out);

/**
 * sio_parse_double() - parse a whole, finite decimal number in a range
 * @s: the text, e.g. "2.5", "10"
 * @min: smallest accepted value
 * @max: largest accepted value
 * @out: the value, set only on success
 *
 * NaN and infinities are refused whatever the range.
 *
 * Return: 0; -EINVAL if @s is not a finite number; -ERANGE if it lies outside
 * [@min, @max].
 */
int sio_parse_double(const char *s, double min, double max, double *out);

#ifdef __cplusplus
}
#endif

#endif
