/* SPDX-License-Identifier: MIT */
/* Numbers from people: options and environment variables (parse.h). */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
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

int sio_parse_u64(const char *s, uint64_t min, uint64_t max, uint64_t *out)
{
	const char *end;
	uint64_t v;
	int ret;

	if ((ret = digits(s, &v, &end)))
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
	const char *end;
	unsigned shift = 0;
	uint64_t v;
	int ret;

	if ((ret = digits(s, &v, &end)))
		return ret;
	switch (*end) {
	case 'k': case 'K': shift = 10; end++; break;
	case 'm': case 'M': shift = 20; end++; break;
	case 'g': case 'G': shift = 30; end++; break;
	case 't': case 'T': shift = 40; end++; break;
	default: break;
	}
	if (shift && *end == 'i')
		end++;
	if (*end == 'B')
		end++;
	if (*end)
		return sio_err_set(EINVAL, "'%s' is not a size (a number with K, M, G or T)", s);
	if (shift && v > UINT64_MAX >> shift)
		return sio_err_set(ERANGE, "'%s' is too large (more than %" PRIu64 " bytes)", s, UINT64_MAX);
	v <<= shift;
	if ((ret = in_range(s, v, min, max)))
		return ret;
	*out = v;
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
