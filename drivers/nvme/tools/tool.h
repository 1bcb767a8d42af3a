/* SPDX-License-Identifier: MIT */
#ifndef SIO_NVME_TOOL_H
#define SIO_NVME_TOOL_H

/* Options and messages the nvme-* programs share. */

#include <stdbool.h>
#include <stdint.h>
#include <smartio/nvme.h>

struct tool_common {
	const char *prog;
	const char *fabric;	/* --fabric, default $SMARTIO_FABRIC */
	int node;		/* --node; -1: $SMARTIO_NODE, else 0 (the node joined after tool_open) */
	uint32_t device;	/* --device, default SIO_DEVICE_ANY: first NVMe */
	bool json;
};

#define TOOL_COMMON_LONGOPTS						\
	{ "fabric", required_argument, NULL, 'F' },			\
	{ "node", required_argument, NULL, 'N' },			\
	{ "device", required_argument, NULL, 'D' },			\
	{ "json", no_argument, NULL, 'J' }

#define TOOL_COMMON_HELP						\
	"  --fabric NAME   fabric to join (default $SMARTIO_FABRIC)\n"	\
	"  --node N        node to join as (default $SMARTIO_NODE, else 0)\n" \
	"  --device ID     NVMe device id (default: first of class 0x010802)\n" \
	"  --json          machine-readable output\n"

void tool_init(struct tool_common *t, const char *prog);
/* Handle a common option; returns 1 if it was one, 0 if not, -1 on error. */
int tool_opt(struct tool_common *t, int c, const char *arg);

#define TOOL_OPT_BAD	(-2)
struct option;
/* getopt_long() over @lo (short option -h) that takes the common options
 * itself. Return: the program's next own option, -1 at the end, or
 * TOOL_OPT_BAD after a bad common value or a stray argument (reported). */
int tool_getopt(struct tool_common *t, int argc, char **argv, const struct option *lo);
/* Join the fabric, printing what is wrong on failure. */
int tool_open(struct tool_common *t, struct sio_fabric **f);
/* Option @opt's value @arg by sio_parse_u64(), sio_parse_size() or
 * sio_parse_double() (<smartio/parse.h>); on failure each prints
 * "PROG: OPT: what is wrong with 'ARG'" and returns -1. */
int tool_u64(const struct tool_common *t, const char *opt, const char *arg,
	     uint64_t min, uint64_t max, uint64_t *out);
int tool_size(const struct tool_common *t, const char *opt, const char *arg,
	      uint64_t min, uint64_t max, uint64_t *out);
int tool_double(const struct tool_common *t, const char *opt, const char *arg,
		double min, double max, double *out);
/* Print a JSON string with escaping. */
void tool_json_str(const char *s);

#endif
