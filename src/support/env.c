/* SPDX-License-Identifier: MIT */
/* Times from the environment (env.h). */
#include <errno.h>
#include <stdlib.h>
#include <smartio/fabric.h>
#include "env.h"
#include "parse.h"

int sio__env_ms(const char *name, uint64_t def_ms, uint64_t min_ms, uint64_t max_ms,
		uint64_t *ns)
{
	const char *e = getenv(name);
	uint64_t ms = def_ms;
	int ret = 0;

	if (e && *e && sio_parse_u64(e, min_ms, max_ms, &ms)) {
		ms = def_ms;
		/* the parser's reason follows: not a number, or the range */
		ret = sio_err_wrap(EINVAL, "%s='%s' is not a time in milliseconds", name, e);
	}
	*ns = ms * 1000000ull;
	return ret;
}
