/* SPDX-License-Identifier: MIT */
/* Numbers from people: options and environment variables (parse.h). */
#include <errno.h>
#include <inttypes.h>
#include <ctype.h>
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>
#include <stdlib.h>
#include <smartio/fabric.h>
#include "parse.h"

/* The digits at the start of @s; *end is left after them. strtoull alone
 * would skip spaces, take a sign and wrap "-1" to UINT64_MAX. */
static int digits(const char *s, uint64_t *v, const char **end)
{
	int base = 10;
	const char *p = s;
	char *e;

	if (!s)
		return sio_err_set(EINVAL, "no number given");
	if (!*s)
		return sio_err_set(EINVAL, "'' is empty, not a number");
	if (p[0] == '0' && (p[1] == 'x' || p[1] == 'X')) {
		base = 16;
		p += 2;
	}
	if (!(base == 10 ? *p >= '0' && *p <= '9' :
	      (*p >= '0' && *p <= '9') || (*p >= 'a' && *p <= 'f') || (*p >= 'A' && *p <= 'F')))
		return sio_err_set(EINVAL, "'%s' is not a number", s);
	errno = 0;
	*v = strtoull(p, &e, base);
	if (errno == ERANGE)
		return sio_err_set(ERANGE, "'%s' is too large (more than %" PRIu64 ")", s, UINT64_MAX);
	*end = e;
	return 0;
}

static int in_range(const char *s, uint64_t v, uint64_t min, uint64_t max)
{
	if (v < min || v > max)
		return sio_err_set(ERANGE, "'%s' is out of range (%" PRIu64 "..%" PRIu64 ")", s, min, max);
	return 0;
}

/* "-1" is a number, just not one of ours: say so, as for any other value
 * outside the range, rather than "not a number". */
static int negative(const char *s, uint64_t min, uint64_t max)
{
	if (s && s[0] == '-' && s[1] >= '0' && s[1] <= '9')
		return sio_err_set(ERANGE, "'%s' is out of range (%" PRIu64 "..%" PRIu64 ")", s,
				   min, max);
	return 0;
}

int sio_parse_u64(const char *s, uint64_t min, uint64_t max, uint64_t *out)
{
	const char *end = NULL;
	uint64_t v = 0;
	int ret;

	if ((ret = negative(s, min, max)) || (ret = digits(s, &v, &end)))
		return ret;
	if (*end)
		return sio_err_set(EINVAL, "'%s' is not a number (trailing '%s')", s, end);
	if ((ret = in_range(s, v, min, max)))
		return ret;
	*out = v;
	return 0;
}

int sio_parse_size(const char *s, uint64_t min, uint64_t max, uint64_t *out)
{
	return sio_parse_bytes(s, min, max, out, NULL);
}

/* The power of 1024 a size's suffix names (fio's: k, m, g, t, p, either
 * case, then an optional "i", then an optional "b"); *end moves past it. */
static int suffix_shift(const char **end)
{
	static const char units[] = "kmgtp";
	const char *p = *end, *u;
	int shift = 0;

	if (*p && (u = strchr(units, tolower((unsigned char)*p)))) {
		shift = 10 * (int)(u - units + 1);
		p++;
		if (*p == 'i' || *p == 'I')
			p++;
	}
	if (*p == 'b' || *p == 'B')
		p++;
	*end = p;
	return shift;
}

int sio_parse_bytes(const char *s, uint64_t min, uint64_t max, uint64_t *out, bool *bare)
{
	const char *end = NULL;
	unsigned shift;
	bool was_bare;
	uint64_t v = 0;
	int ret;

	if ((ret = negative(s, min, max)) || (ret = digits(s, &v, &end)))
		return ret;
	was_bare = !*end;
	shift = was_bare ? 0 : (unsigned)suffix_shift(&end);
	if (*end)
		return sio_err_set(EINVAL, "'%s' is not a size (a number with k, m, g, t or p: "
				   "4k, 1m, 2GiB)", s);
	if (shift && v > UINT64_MAX >> shift)
		return sio_err_set(ERANGE, "'%s' is too large (more than %" PRIu64 " bytes)", s, UINT64_MAX);
	v <<= shift;
	if ((ret = in_range(s, v, min, max)))
		return ret;
	*out = v;
	if (bare)
		*bare = was_bare;
	return 0;
}

int sio_parse_double(const char *s, double min, double max, double *out)
{
	char *end;
	double v;

	if (!s)
		return sio_err_set(EINVAL, "no number given");
	/* strtod would take spaces, "nan", "inf" and hex floats */
	if (!((*s >= '0' && *s <= '9') || (*s == '.' && s[1] >= '0' && s[1] <= '9') ||
	      (*s == '-' && ((s[1] >= '0' && s[1] <= '9') || s[1] == '.'))) ||
	    (s[0] == '0' && (s[1] == 'x' || s[1] == 'X')))
		return sio_err_set(EINVAL, "'%s' is not a number", s);
	errno = 0;
	v = strtod(s, &end);
	if (*end)
		return sio_err_set(EINVAL, "'%s' is not a number (trailing '%s')", s, end);
	if (errno == ERANGE || !isfinite(v) || v < min || v > max)
		return sio_err_set(ERANGE, "'%s' is out of range (%g..%g)", s, min, max);
	*out = v;
	return 0;
}

/* Seconds per unit of a time's suffix (fio's: ns, us, ms, s, m, h, d and
 * their longer spellings), 0 for an unknown one. */
static double time_unit(const char *u)
{
	static const struct { const char *name; double s; } units[] = {
		{ "ns", 1e-9 }, { "nsec", 1e-9 }, { "us", 1e-6 }, { "usec", 1e-6 },
		{ "ms", 1e-3 }, { "msec", 1e-3 }, { "s", 1 }, { "sec", 1 }, { "m", 60 },
		{ "min", 60 }, { "h", 3600 }, { "d", 86400 },
	};

	for (size_t i = 0; i < sizeof(units) / sizeof(units[0]); i++)
		if (!strcasecmp(u, units[i].name))
			return units[i].s;
	return 0;
}

/* @sec as a person writes it: "500ms", "3s", "0.1s", "2h". */
static const char *time_str(double sec, char *buf, size_t len)
{
	if (sec > 0 && sec < 1e-3)
		snprintf(buf, len, "%gus", sec * 1e6);
	else if (sec > 0 && sec < 1)
		snprintf(buf, len, "%gms", sec * 1e3);
	else
		snprintf(buf, len, "%gs", sec);
	return buf;
}

int sio_parse_time(const char *s, double unit, double min, double max, double *out)
{
	char lo[32], hi[32];
	const char *p = s;
	char *end;
	double v, u;

	if (!s)
		return sio_err_set(EINVAL, "no time given");
	if (p[0] == '-' && ((p[1] >= '0' && p[1] <= '9') || p[1] == '.'))
		return sio_err_set(ERANGE, "'%s' is out of range (%s..%s)", s,
				   time_str(min, lo, sizeof(lo)), time_str(max, hi, sizeof(hi)));
	if (!((*p >= '0' && *p <= '9') || (*p == '.' && p[1] >= '0' && p[1] <= '9')) ||
	    (p[0] == '0' && (p[1] == 'x' || p[1] == 'X')))
		return sio_err_set(EINVAL, "'%s' is not a time (a number with ns, us, ms, s, m "
				   "or h: 500ms, 3s)", s);
	errno = 0;
	v = strtod(p, &end);
	u = *end ? time_unit(end) : unit;
	if (!u || end[0] == ' ')
		return sio_err_set(EINVAL, "'%s' is not a time (a number with ns, us, ms, s, m "
				   "or h: 500ms, 3s)", s);
	v *= u;
	/* the limits are compared in the units they are written in */
	if (errno == ERANGE || !isfinite(v) || v < min * (1 - 1e-12) || v > max * (1 + 1e-12))
		return sio_err_set(ERANGE, "'%s' is out of range (%s..%s)", s,
				   time_str(min, lo, sizeof(lo)), time_str(max, hi, sizeof(hi)));
	*out = v;
	return 0;
}
