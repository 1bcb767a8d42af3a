/* SPDX-License-Identifier: MIT */
/*
 * The number parser every option and environment variable goes through
 * (src/support/parse.h), in-process: whole strings only, decimal or 0x,
 * ranges inclusive, sizes with binary suffixes; on a refusal the message
 * quotes the text and the result is left as it was.
 */

#include <criterion/criterion.h>
#include <errno.h>
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
	u64_refused("-1", 0, UINT64_MAX, EINVAL, "'-1' is not a number");
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
	};
	const char *bad[] = { "4X", "4KK", "K", "4 K", "-4K" };
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
