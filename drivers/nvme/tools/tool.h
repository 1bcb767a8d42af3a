/* SPDX-License-Identifier: MIT */
#ifndef SIO_NVME_TOOL_H
#define SIO_NVME_TOOL_H

/* Options the nvme-* programs share, on the contract every program keeps
 * (prog.h). */

#include <stdbool.h>
#include <stdint.h>
#include <smartio/nvme.h>
#include "prog.h"

struct tool_common {
	const char *fabric;	/* --fabric, default $SMARTIO_FABRIC */
	int node;		/* --node; -1: $SMARTIO_NODE, else 0 (the node joined after tool_open) */
	uint32_t device;	/* --device, default SIO_DEVICE_ANY: first NVMe */
	bool json;
};

enum { TOOL_OPT_FABRIC = 'F', TOOL_OPT_NODE = 'N', TOOL_OPT_DEVICE = 'D', TOOL_OPT_JSON = 'J' };

#define TOOL_COMMON_LONGOPTS						\
	{ "fabric", required_argument, NULL, TOOL_OPT_FABRIC },		\
	{ "node", required_argument, NULL, TOOL_OPT_NODE },		\
	{ "device", required_argument, NULL, TOOL_OPT_DEVICE },		\
	PROG_LONGOPTS

#define TOOL_JSON_LONGOPT	{ "json", no_argument, NULL, TOOL_OPT_JSON }

#define TOOL_COMMON_HELP						\
	"  --fabric NAME     fabric to join (default $SMARTIO_FABRIC)\n"	\
	"  --node N          node to join as (default $SMARTIO_NODE, else 0)\n" \
	"  --device ID       NVMe device id (default: first of class 0x010802)\n"

#define TOOL_JSON_HELP							\
	"  --json            print one JSON object instead of text\n"

/* Name the program (prog_init()) and set the defaults. */
void tool_init(struct tool_common *t, const char *prog, void (*usage)(FILE *));

/* prog_getopt() over @lo that takes the common options itself.
 * Return: the program's next own option, or -1 at the end (stray
 * arguments refused). */
int tool_getopt(struct tool_common *t, int argc, char **argv, const char *shortopts,
		const struct option *lo);

/* Join the fabric, printing what is wrong on failure. */
int tool_open(struct tool_common *t, struct sio_fabric **f);

#endif
