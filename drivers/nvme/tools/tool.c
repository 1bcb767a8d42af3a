/* SPDX-License-Identifier: MIT */
/* Options the nvme-* programs share (tool.h). */

#include <stdlib.h>
#include <string.h>
#include <smartio/fabric.h>
#include "tool.h"

void tool_init(struct tool_common *t, const char *prog, void (*usage)(FILE *))
{
	memset(t, 0, sizeof(*t));
	prog_init(prog, usage);
	t->fabric = getenv("SMARTIO_FABRIC");
	t->node = -1;	/* libsmartio reads and checks $SMARTIO_NODE */
	t->device = SIO_DEVICE_ANY;
}

int tool_getopt(struct tool_common *t, int argc, char **argv, const char *shortopts,
		const struct option *lo)
{
	int c;

	while ((c = prog_getopt(argc, argv, shortopts, lo)) != -1) {
		switch (c) {
		case TOOL_OPT_FABRIC:
			t->fabric = optarg;
			break;
		case TOOL_OPT_NODE:
			t->node = (int)prog_u64("--node", optarg, 0, SIO_MAX_NODES - 1);
			break;
		case TOOL_OPT_DEVICE:
			/* SIO_DEVICE_ANY is what no --device means, not an id */
			t->device = prog_u32("--device", optarg, 0, SIO_DEVICE_ANY - 1);
			break;
		case TOOL_OPT_JSON:
			t->json = true;
			break;
		default:
			return c;
		}
	}
	prog_no_args(argc, argv);
	return -1;
}

int tool_open(struct tool_common *t, struct sio_fabric **f)
{
	int ret = prog_join(t->fabric, t->node, f);

	if (!ret)
		t->node = sio_fabric_node_id(*f);
	return ret;
}
