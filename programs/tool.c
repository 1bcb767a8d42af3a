/* SPDX-License-Identifier: MIT */
/* Options and messages the nvme-* programs share. */

#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "tool.h"

void tool_init(struct tool_common *t, const char *prog)
{
	const char *n = getenv("SMARTIO_NODE");

	memset(t, 0, sizeof(*t));
	t->prog = prog;
	t->fabric = getenv("SMARTIO_FABRIC");
	t->node = n && *n ? atoi(n) : 0;
	t->device = SIO_DEVICE_ANY;
}

int tool_parse_u64(const char *s, uint64_t *out)
{
	char *end;
	unsigned long long v;

	if (!s || !*s || *s == '-')
		return -1;
	errno = 0;
	v = strtoull(s, &end, 0);
	if (errno)
		return -1;
	switch (*end) {
	case 'k': case 'K': v <<= 10; end++; break;
	case 'm': case 'M': v <<= 20; end++; break;
	case 'g': case 'G': v <<= 30; end++; break;
	default: break;
	}
	if (*end == 'i' || *end == 'B')
		end++;
	if (*end == 'B')
		end++;
	if (*end)
		return -1;
	*out = v;
	return 0;
}

int tool_opt(struct tool_common *t, int c, const char *arg)
{
	uint64_t v;

	switch (c) {
	case 'F':
		t->fabric = arg;
		return 1;
	case 'N':
		if (tool_parse_u64(arg, &v) || v >= 256) {
			fprintf(stderr, "%s: --node '%s' is not a node number\n", t->prog, arg);
			return -1;
		}
		t->node = (int)v;
		return 1;
	case 'D':
		if (tool_parse_u64(arg, &v) || v >= SIO_DEVICE_ANY) {
			fprintf(stderr, "%s: --device '%s' is not a device id\n", t->prog, arg);
			return -1;
		}
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
	return -1;
}

int tool_open(struct tool_common *t, struct sio_fabric **f)
{
	int ret, n;

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
	if (ret == -ENODEV) {
		fprintf(stderr, "%s: node %d does not exist on fabric '%s': %s\n", t->prog,
			t->node, t->fabric, sio_errmsg());
		return ret;
	}
	if (ret) {
		fprintf(stderr, "%s: cannot join fabric '%s' as node %d: %s\n", t->prog,
			t->fabric, t->node, sio_errmsg());
		return ret;
	}
	n = sio_fabric_nodes(*f, NULL, 0);
	(void)n;
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
