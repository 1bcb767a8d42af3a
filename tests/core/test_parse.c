/* SPDX-License-Identifier: MIT */
/*
 * The number parser every option and environment variable goes through
 * (src/support/parse.h), in-process: whole strings only, decimal or 0x,
 * ranges inclusive, sizes with binary suffixes; on a refusal the message
 * quotes the text and the result is left as it was.
 */

#include <criterion/criterion.h>
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>
#include <smartio/fabric.h>
#include "parse.h"

#define UNTOUCHED	0x5a5a5a5a5a5a5a5aull

static void u64_ok(const char *s, uint64_t min, uint64_t max, uint64_t want)
{
	uint64_t v = UNTOUCHED;

	cr_assert_eq(sio_parse_u64(s, min, max, &v), 0, "'%s': %s", s, sio_errmsg());
	cr_assert_eq(v, want, "'%s' read as %llu", s, (unsigned long long)v);
}

static void u64_refused(const char *s, uint64_t min, uint64_t max, int err, const char *words)
{
	uint64_t v = UNTOUCHED;

	cr_assert_eq(sio_parse_u64(s, min, max, &v), -err, "'%s' was taken as %llu", s ? s : "(null)",
		     (unsigned long long)v);
	cr_assert_eq(v, UNTOUCHED, "'%s': the result was written on a refusal", s ? s : "(null)");
	cr_assert(strstr(sio_errmsg(), words), "\"%s\" does not say \"%s\"", sio_errmsg(), words);
}

Test(parse, u64_whole_decimal_or_hex_in_range)
{
	u64_ok("0", 0, 10, 0);
	u64_ok("10", 0, 10, 10);
	u64_ok("0x1f", 0, 100, 31);
	u64_ok("0X1F", 0, 100, 31);
	u64_ok("010", 0, 100, 10);	/* never octal */
	u64_ok("18446744073709551615", 0, UINT64_MAX, UINT64_MAX);
}

Test(parse, u64_refuses_signs_spaces_tails_overflow_and_the_range)
{
	u64_refused(NULL, 0, 10, EINVAL, "no number given");
	u64_refused("", 0, 10, EINVAL, "'' is empty");
	u64_refused("-1", 0, UINT64_MAX, ERANGE, "'-1' is out of range (0..18446744073709551615)");
	u64_refused("-0", 1, 10, ERANGE, "'-0' is out of range (1..10)");
	u64_refused("+1", 0, 10, EINVAL, "'+1' is not a number");
	u64_refused(" 1", 0, 10, EINVAL, "' 1' is not a number");
	u64_refused("1 ", 0, 10, EINVAL, "trailing ' '");
	u64_refused("12abc", 0, 100, EINVAL, "trailing 'abc'");
	u64_refused("0x", 0, 100, EINVAL, "'0x' is not a number");
	u64_refused("18446744073709551616", 0, UINT64_MAX, ERANGE, "is too large");
	u64_refused("11", 0, 10, ERANGE, "'11' is out of range (0..10)");
	u64_refused("1", 2, 10, ERANGE, "'1' is out of range (2..10)");
}

Test(parse, sizes_take_binary_suffixes_in_either_case)
{
	struct { const char *s; uint64_t v; } ok[] = {
		{ "4096", 4096 }, { "4k", 4096 }, { "64M", 64ull << 20 }, { "1GiB", 1ull << 30 },
		{ "2T", 2ull << 40 }, { "3KB", 3072 }, { "1gi", 1ull << 30 }, { "0x10K", 16384 },
		/* fio's spellings */
		{ "4kb", 4096 }, { "1m", 1ull << 20 }, { "2kib", 2048 }, { "1p", 1ull << 50 },
		{ "512b", 512 }, { "1MiB", 1ull << 20 },
	};
	const char *bad[] = { "4X", "4KK", "K", "4 K", "4kk", "4k ", "4ms" };
	uint64_t v;

	for (size_t i = 0; i < sizeof(ok) / sizeof(ok[0]); i++) {
		v = UNTOUCHED;
		cr_assert_eq(sio_parse_size(ok[i].s, 0, UINT64_MAX, &v), 0, "'%s': %s", ok[i].s,
			     sio_errmsg());
		cr_assert_eq(v, ok[i].v, "'%s' read as %llu", ok[i].s, (unsigned long long)v);
	}
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		v = UNTOUCHED;
		cr_assert_eq(sio_parse_size(bad[i], 0, UINT64_MAX, &v), -EINVAL, "'%s' was taken",
			     bad[i]);
		cr_assert_eq(v, UNTOUCHED);
	}
	cr_assert_eq(sio_parse_size("16777216T", 0, UINT64_MAX, &v), -ERANGE, "2^64 bytes");
	cr_assert_eq(sio_parse_size("4K", 1, 4095, &v), -ERANGE);
	cr_assert_eq(sio_parse_size("-4K", 0, UINT64_MAX, &v), -ERANGE, "a negative size");
	cr_assert(strstr(sio_errmsg(), "'-4K' is out of range"), "%s", sio_errmsg());
}

/* A bare number is told apart from one with a suffix, so that an option
 * whose unit became bytes can refuse what meant blocks or MiB before. */
Test(parse, bytes_say_whether_the_number_was_bare)
{
	uint64_t v = UNTOUCHED;
	bool bare = false;

	cr_assert_eq(sio_parse_bytes("8", 0, 100, &v, &bare), 0);
	cr_assert(bare);
	cr_assert_eq(v, 8);
	cr_assert_eq(sio_parse_bytes("4k", 0, 8192, &v, &bare), 0);
	cr_assert(!bare);
	cr_assert_eq(v, 4096);
	bare = true;
	cr_assert_eq(sio_parse_bytes("4k", 0, 100, &v, &bare), -ERANGE);
	cr_assert(bare, "@bare was written on a refusal");
	cr_assert_eq(v, 4096, "the result was written on a refusal");
}

static void time_ok(const char *s, double unit, double want)
{
	double d = -1;

	cr_assert_eq(sio_parse_time(s, unit, 0, 1e9, &d), 0, "'%s': %s", s, sio_errmsg());
	cr_assert_float_eq(d, want, want * 1e-12, "'%s' read as %g s", s, d);
}

static void time_refused(const char *s, double min, double max, int err, const char *words)
{
	double d = -1;

	cr_assert_eq(sio_parse_time(s, 1, min, max, &d), -err, "'%s' was taken as %g", s, d);
	cr_assert_float_eq(d, -1.0, 1e-12, "'%s': the result was written on a refusal", s);
	cr_assert(strstr(sio_errmsg(), words), "\"%s\" does not say \"%s\"", sio_errmsg(), words);
}

Test(parse, times_take_fio_units_and_bare_numbers_keep_the_options_unit)
{
	time_ok("3s", 1, 3);
	time_ok("3", 1, 3);		/* an option in seconds */
	time_ok("3", 1e-3, 3e-3);	/* an option in milliseconds */
	time_ok("500ms", 1, 0.5);
	time_ok("500msec", 1, 0.5);
	time_ok("100us", 1, 1e-4);
	time_ok("250ns", 1e-3, 2.5e-7);
	time_ok("1.5s", 1e-3, 1.5);
	time_ok("2m", 1, 120);
	time_ok("1h", 1, 3600);
	time_ok("1d", 1, 86400);
	time_ok("0.1S", 1, 0.1);
}

Test(parse, times_refuse_other_words_negatives_and_the_range)
{
	time_refused(NULL, 0, 10, EINVAL, "no time given");
	time_refused("", 0, 10, EINVAL, "is not a time");
	time_refused("3x", 0, 10, EINVAL, "'3x' is not a time");
	time_refused("3 s", 0, 10, EINVAL, "'3 s' is not a time");
	time_refused("s", 0, 10, EINVAL, "'s' is not a time");
	time_refused("0x10", 0, 100, EINVAL, "'0x10' is not a time");
	time_refused("nan", 0, 10, EINVAL, "'nan' is not a time");
	time_refused("-1", 0, 10, ERANGE, "'-1' is out of range (0s..10s)");
	time_refused("0", 0.1, 86400, ERANGE, "'0' is out of range (100ms..86400s)");
	time_refused("50ms", 0.1, 10, ERANGE, "out of range");
	time_refused("11s", 0, 10, ERANGE, "out of range");
	time_refused("1e999", 0, 10, ERANGE, "out of range");
}

Test(parse, doubles_are_finite_whole_and_in_range)
{
	double d = -1;

	cr_assert_eq(sio_parse_double("2.5", 0, 10, &d), 0, "%s", sio_errmsg());
	cr_assert_float_eq(d, 2.5, 1e-12);
	cr_assert_eq(sio_parse_double("1e1", 0, 10, &d), 0);
	cr_assert_float_eq(d, 10.0, 1e-12);
	d = -1;
	cr_assert_eq(sio_parse_double("nan", -1e300, 1e300, &d), -EINVAL);
	cr_assert_eq(sio_parse_double("inf", -1e300, 1e300, &d), -EINVAL);
	cr_assert_eq(sio_parse_double("2.5x", 0, 10, &d), -EINVAL);
	cr_assert_eq(sio_parse_double("", 0, 10, &d), -EINVAL);
	cr_assert_eq(sio_parse_double("10.5", 0, 10, &d), -ERANGE);
	cr_assert_float_eq(d, -1.0, 1e-12, "the result was written on a refusal");
}
