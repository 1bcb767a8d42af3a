/* SPDX-License-Identifier: MIT */
/* Small helpers the driver's files share: back-off, identify strings, status words. */

#include <sched.h>
#include <stdio.h>
#include <string.h>
#include "priv.h"

/* The driver's messages go to libsmartio's channel (sio_errmsg()); this
 * name is kept for programs written against it. */
const char *sio_nvme_errmsg(void)
{
	return sio_errmsg();
}

void sio_nvme_backoff_wait(struct sio_nvme_backoff *b)
{
	struct timespec ts;

	if (b->iter < b->spins) {
		b->iter++;
		sio_nvme_cpu_relax();
		return;
	}
	if (b->iter < b->spins + b->yields) {
		b->iter++;
		sched_yield();
		return;
	}
	ts.tv_sec = 0;
	ts.tv_nsec = b->sleep_ns;
	nanosleep(&ts, NULL);
	if (b->sleep_ns < b->max_ns)
		b->sleep_ns = b->sleep_ns * 2 > b->max_ns ? b->max_ns : b->sleep_ns * 2;
}

void sio_nvme_strcpy_id(char *dst, const char *src, size_t n)
{
	size_t i;

	memcpy(dst, src, n);
	dst[n] = 0;
	for (i = n; i > 0 && (dst[i - 1] == ' ' || dst[i - 1] == 0); i--)
		dst[i - 1] = 0;
	for (i = 0; dst[i]; i++)
		if ((unsigned char)dst[i] < 0x20 || (unsigned char)dst[i] > 0x7e)
			dst[i] = '?';
}

static const struct { uint16_t code; const char *s; } status_names[] = {
	{ 0x000, "success" },
	{ 0x001, "invalid command opcode" },
	{ 0x002, "invalid field in command" },
	{ 0x003, "command id conflict" },
	{ 0x004, "data transfer error" },
	{ 0x005, "commands aborted due to power loss" },
	{ 0x006, "internal error" },
	{ 0x007, "command abort requested" },
	{ 0x008, "command aborted due to SQ deletion" },
	{ 0x00b, "invalid namespace or format" },
	{ 0x013, "PRP offset invalid" },
	{ 0x080, "LBA out of range" },
	{ 0x081, "capacity exceeded" },
	{ 0x082, "namespace not ready" },
	{ 0x100, "completion queue invalid" },
	{ 0x101, "invalid queue identifier" },
	{ 0x102, "invalid queue size" },
	{ 0x109, "invalid log page" },
	{ 0x10c, "invalid queue deletion" },
	{ 0x10d, "feature identifier not saveable" },
	{ 0x280, "write fault" },
	{ 0x281, "unrecovered read error" },
};

const char *sio_nvme_status_str(uint16_t status)
{
	size_t i;

	for (i = 0; i < sizeof(status_names) / sizeof(status_names[0]); i++)
		if (status_names[i].code == status)
			return status_names[i].s;
	return "unknown status";
}
