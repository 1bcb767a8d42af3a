/* SPDX-License-Identifier: MIT */
/* The calling thread's error message, one for every smartio library. */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include "internal.h"

static __thread char errbuf[SIO_ERRMSG_MAX];	/* room for a path and a reason */

/* Formatted aside first: the arguments may point into errbuf. */
static __attribute__((format(printf, 1, 0))) void vset(const char *fmt, va_list ap, const char *cause)
{
	char msg[SIO_ERRMSG_MAX];
	size_t n;

	vsnprintf(msg, sizeof(msg), fmt, ap);
	n = strlen(msg);
	if (cause && cause[0] && n + 3 < sizeof(msg))
		snprintf(msg + n, sizeof(msg) - n, ": %s", cause);
	memcpy(errbuf, msg, sizeof(errbuf));
}

int sio_err_set(int err, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vset(fmt, ap, NULL);
	va_end(ap);
	return -err;
}

int sio_err_wrap(int err, const char *fmt, ...)
{
	char cause[SIO_ERRMSG_MAX];
	va_list ap;

	memcpy(cause, errbuf, sizeof(cause));
	va_start(ap, fmt);
	vset(fmt, ap, cause);
	va_end(ap);
	return -err;
}

void sio_err_save(struct sio_errsave *s)
{
	memcpy(s->msg, errbuf, sizeof(s->msg));
}

void sio_err_restore(const struct sio_errsave *s)
{
	memcpy(errbuf, s->msg, sizeof(errbuf));
	errbuf[sizeof(errbuf) - 1] = 0;
}

const char *sio_errmsg(void)
{
	return errbuf[0] ? errbuf : "no error";
}
