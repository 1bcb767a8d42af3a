/* SPDX-License-Identifier: MIT */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include "internal.h"

static __thread char errbuf[512];	/* room for a path and a reason */

int sio__err(int err, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(errbuf, sizeof(errbuf), fmt, ap);
	va_end(ap);
	return -err;
}

const char *sio_errmsg(void)
{
	return errbuf[0] ? errbuf : "no error";
}
