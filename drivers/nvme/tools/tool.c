/* SPDX-License-Identifier: MIT */
/* Options and messages the nvme-* programs share. */

#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "parse.h"
#include "tool.h"

void tool_init(struct tool_common *t, const char *prog)
{
	memset(t, 0, sizeof(*t));
	t->prog = prog;
	t->fabric = getenv("SMARTIO_FABRIC");
	t->node = -1;	/* libsmartio reads and checks $SMARTIO_NODE */
	t->device = SIO_DEVICE_ANY;
}

int tool_u64(const struct tool_common *t, const char *opt, const char *arg,
	     uint64_t min, uint64_t max, uint64_t *out)
{
	if (!sio_parse_u64(arg, min, max, out))
		return 0;
	fprintf(stderr, "%s: %s: %s\n", t->prog, opt, sio_errmsg());
	return -1;
}

int tool_size(const struct tool_common *t, const char *opt, const char *arg,
	      uint64_t min, uint64_t max, uint64_t *out)
{
	if (!sio_parse_size(arg, min, max, out))
		return 0;
	fprintf(stderr, "%s: %s: %s\n", t->prog, opt, sio_errmsg());
	return -1;
}

int tool_double(const struct tool_common *t, const char *opt, const char *arg,
		double min, double max, double *out)
{
	if (!sio_parse_double(arg, min, max, out))
		return 0;
	fprintf(stderr, "%s: %s: %s\n", t->prog, opt, sio_errmsg());
	return -1;
}

int tool_opt(struct tool_common *t, int c, const char *arg)
{
	uint64_t v;

	switch (c) {
	case 'F':
		t->fabric = arg;
		return 1;
	case 'N':
		if (tool_u64(t, "--node", arg, 0, SIO_MAX_NODES - 1, &v))
			return -1;
		t->node = (int)v;
		return 1;
	case 'D':
		/* SIO_DEVICE_ANY is what no --device means, not an id */
		if (tool_u64(t, "--device", arg, 0, SIO_DEVICE_ANY - 1, &v))
			return -1;
		t->device = (uint32_t)v;
		return 1;
	case 'J':
		t->json = true;
		return 1;
	default:
		return 0;
	}
}

int tool_getopt(struct tool_common *t, int argc, char **argv, const struct option *lo)
{
	int c, ret;

	while ((c = getopt_long(argc, argv, "h", lo, NULL)) != -1) {
		ret = tool_opt(t, c, optarg);
		if (ret < 0)
			return TOOL_OPT_BAD;
		if (!ret)
			return c;
	}
	if (optind < argc) {
		fprintf(stderr, "%s: unexpected argument '%s' (see --help)\n", t->prog, argv[optind]);
		return TOOL_OPT_BAD;
	}
	return -1;
}

int tool_open(struct tool_common *t, struct sio_fabric **f)
{
	int ret;

	if (!t->fabric || !*t->fabric) {
		fprintf(stderr, "%s: no fabric given: use --fabric NAME or set "
			"SMARTIO_FABRIC\n", t->prog);
		return -EINVAL;
	}
	ret = sio_fabric_open(t->fabric, t->node, f);
	if (ret == -ENOENT) {
		fprintf(stderr, "%s: fabric '%s' does not exist (create it with "
			"'smartio create %s')\n", t->prog, t->fabric, t->fabric);
		return ret;
	}
	if (ret) {	/* the message names the node, or what is wrong with $SMARTIO_NODE */
		fprintf(stderr, "%s: cannot join fabric '%s': %s\n", t->prog, t->fabric,
			sio_errmsg());
		return ret;
	}
	t->node = sio_fabric_node_id(*f);
	return 0;
}

void tool_json_str(const char *s)
{
	putchar('"');
	for (; *s; s++) {
		if (*s == '"' || *s == '\\')
			printf("\\%c", *s);
		else if ((unsigned char)*s < 0x20)
			printf("\\u%04x", *s);
		else
			putchar(*s);
	}
	putchar('"');
}
