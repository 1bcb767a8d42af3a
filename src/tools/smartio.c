/* SPDX-License-Identifier: MIT */
/* smartio: create, inspect and break simulated fabrics. */
#include <errno.h>
#include <getopt.h>
#include <grp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <smartio/smartio.h>
#include "parse.h"
#ifdef SIO_TOOL_VFIO
#include "smartio-vfio.h"
#endif

static const char *fabric_arg(int argc, char **argv)
{
	if (optind < argc)
		return argv[optind++];
	return getenv("SMARTIO_FABRIC");
}

/* A number option or argument, strictly (<smartio/parse.h>); 0 or -1, reported. */
static int num(const char *cmd, const char *what, const char *arg, uint64_t min, uint64_t max,
	       uint64_t *out)
{
	if (!sio_parse_u64(arg, min, max, out))
		return 0;
	fprintf(stderr, "smartio %s: %s: %s\n", cmd, what, sio_errmsg());
	return -1;
}

static int inum(const char *cmd, const char *what, const char *arg, uint64_t min, uint64_t max,
		int *out)
{
	uint64_t v;

	if (num(cmd, what, arg, min, max, &v))
		return -1;
	*out = (int)v;
	return 0;
}

/* [NAME] and nothing after it: a stray argument is an error, not ignored. */
static int no_more(const char *cmd, int argc, char **argv)
{
	if (optind >= argc)
		return 0;
	fprintf(stderr, "smartio %s: unexpected argument '%s'\n", cmd, argv[optind]);
	return -1;
}

static int fail(int ret, const char *what)
{
	fprintf(stderr, "smartio %s: %s\n", what, sio_errmsg());
	return ret == -ENOENT || ret == -ENODEV ? 2 : 1;
}

static int usage(FILE *o, int code)
{
	fprintf(o,
"usage: smartio COMMAND [ARGS]\n"
"  create NAME [--nodes N] [--topology b2b|switch|cascade] [--per-switch K]\n"
"              [--adapters 1|2] [--windows W] [--window-size BYTES]\n"
"              [--mcast-groups G] [--latency-model] [--group GROUP]\n"
"              [--adapter-ns NS] [--chassis-ns NS] [--switch-ns NS]   per-hop model delays\n"
"  destroy NAME [--force]          refused while processes are attached;\n"
"                                  --force tells them to leave\n"
"  status [NAME] [--json]          nodes, windows, segments, devices, borrows\n"
"  path [NAME] FROM TO [--json]    FROM/TO: node:N, dev:ID or seg:NODE:ID\n"
"  link [NAME] NODE [ADAPTER] up|down\n"
#ifdef SIO_TOOL_VFIO
"  vfio ...                        real devices through vfio-pci (smartio vfio --help)\n"
#endif
#ifdef SIO_TOOL_UIO
"  uio ...                         real devices without an IOMMU (smartio uio --help)\n"
#endif
"NAME defaults to $SMARTIO_FABRIC. A fabric is its creator's alone; with --group,\n"
"members of GROUP may join it too. Exit codes: 0 ok, 1 error, 2 not found.\n");
	return code;
}

static int cmd_create(int argc, char **argv)
{
	static const struct option o[] = {
		{ "nodes", 1, 0, 'n' }, { "topology", 1, 0, 't' }, { "per-switch", 1, 0, 'p' },
		{ "adapters", 1, 0, 'a' }, { "windows", 1, 0, 'w' }, { "window-size", 1, 0, 's' },
		{ "mcast-groups", 1, 0, 'g' }, { "latency-model", 0, 0, 'l' }, { "help", 0, 0, 'h' },
		{ "adapter-ns", 1, 0, 'A' }, { "chassis-ns", 1, 0, 'C' }, { "switch-ns", 1, 0, 'S' },
		{ "group", 1, 0, 'G' }, { 0 } };
	struct sio_fabric_config c = { .nodes = 2, .topology = SIO_TOPO_SWITCH };
	const char *name, *group = NULL;
	struct group *gr;
	uint64_t v;
	int opt, ret = 0;

	while ((opt = getopt_long(argc, argv, "n:t:p:a:w:s:g:lh", o, NULL)) != -1) {
		switch (opt) {
		case 'G': group = optarg; break;
		/* a hop's modelled delay: up to 1 ms, far beyond any real one */
		case 'A': ret = num("create", "--adapter-ns", optarg, 0, 1000000, &v); c.adapter_ns = (uint32_t)v; break;
		case 'C': ret = num("create", "--chassis-ns", optarg, 0, 1000000, &v); c.chassis_ns = (uint32_t)v; break;
		case 'S': ret = num("create", "--switch-ns", optarg, 0, 1000000, &v); c.switch_ns = (uint32_t)v; break;
		case 'n': ret = inum("create", "--nodes", optarg, 1, SIO_MAX_NODES, &c.nodes); break;
		case 'p': ret = inum("create", "--per-switch", optarg, 1, SIO_MAX_NODES, &c.nodes_per_switch); break;
		case 'a': ret = inum("create", "--adapters", optarg, 1, SIO_MAX_ADAPTERS, &c.adapters); break;
		/* the library checks the finer limits (windows, groups, a power of 2) */
		case 'w': ret = inum("create", "--windows", optarg, 1, INT32_MAX, &c.windows); break;
		case 's':
			if (sio_parse_size(optarg, 4096, UINT64_MAX, &c.window_size)) {
				fprintf(stderr, "smartio create: --window-size: %s\n", sio_errmsg());
				ret = -1;
			}
			break;
		case 'g': ret = inum("create", "--mcast-groups", optarg, 0, INT32_MAX, &c.mcast_groups); break;
		case 'l': c.latency_model = true; break;
		case 't':
			if (!strcmp(optarg, "b2b")) c.topology = SIO_TOPO_B2B;
			else if (!strcmp(optarg, "switch")) c.topology = SIO_TOPO_SWITCH;
			else if (!strcmp(optarg, "cascade")) c.topology = SIO_TOPO_CASCADE;
			else {
				fprintf(stderr, "smartio create: unknown topology '%s' (b2b, switch, cascade)\n", optarg);
				return 1;
			}
			break;
		case 'h': return usage(stdout, 0);
		default: return usage(stderr, 1);
		}
		if (ret)
			return 1;
	}
	name = fabric_arg(argc, argv);
	if (no_more("create", argc, argv))
		return 1;
	if (group) {
		char *end;
		unsigned long g = strtoul(group, &end, 10);
		if ((gr = getgrnam(group)))
			g = gr->gr_gid;
		else if (!*group || *end || g > 0x7fffffff) {
			fprintf(stderr, "smartio create: no group '%s'\n", group);
			return 1;
		}
		ret = sio_fabric_create_group(name, &c, (gid_t)g);
	} else {
		ret = sio_fabric_create(name, &c);
	}
	if (ret)
		return fail(ret, "create");
	printf("fabric '%s': %d nodes, %s, %d adapter(s), %d windows per adapter%s%s%s\n",
	       name ? name : getenv("SMARTIO_FABRIC"), c.nodes,
	       c.topology == SIO_TOPO_B2B ? "back-to-back" : c.topology == SIO_TOPO_SWITCH ? "one switch" : "cascade",
	       c.adapters ? c.adapters : 1, c.windows ? c.windows : SIO_DEFAULT_WINDOWS,
	       c.latency_model ? ", latency model on (modelled delays, not measured)" : "",
	       group ? ", shared with group " : "", group ? group : "");
	return 0;
}

static int cmd_destroy(int argc, char **argv)
{
	unsigned int flags = 0;
	const char *name;
	int ret;

	for (int i = 1; i < argc; i++)
		if (!strcmp(argv[i], "--force")) {
			flags = SIO_DESTROY_FORCE;
			memmove(&argv[i], &argv[i + 1], (argc - i) * sizeof(*argv));
			argc--, i--;
		}
	optind = 2;
	name = fabric_arg(argc, argv);
	if (no_more("destroy", argc, argv))
		return 1;
	/* refused while processes are attached; --force tells them to leave */
	ret = sio_fabric_destroy_flags(name, flags);
	return ret ? fail(ret, "destroy") : 0;
}

static const char *kind_name(int k)
{
	return k == SIO_SEG_BAR ? "bar" : k == SIO_SEG_GPU ? "gpu" : "ram";
}

static void status_json(const struct sio_fabric_status *st, const char *topo)
{
	const struct sio_topology *t = &st->topo;

	printf("{\"fabric\":\"%s\",\"topology\":\"%s\",\"nodes\":%d,\"adapters\":%d,\"windows\":%d,"
	       "\"latency_model\":%s,\"node\":[", st->name, topo, t->nodes, t->adapters, t->windows,
	       t->latency_model ? "true" : "false");
	for (int n = 0; n < st->nnodes; n++) {
		const struct sio_node_info *ni = &st->nodes[n];

		printf("%s{\"id\":%d,\"adapters\":[", n ? "," : "", n);
		for (int a = 0; a < ni->adapters; a++)
			printf("%s{\"switch\":%d,\"link_up\":%s,\"windows_used\":%d}", a ? "," : "",
			       ni->switch_id[a], ni->link_up[a] ? "true" : "false", ni->windows_used[a]);
		printf("]}");
	}
	printf("],\"segments\":[");
	for (int i = 0; i < st->nsegments; i++) {
		const struct sio_segment_info *sg = &st->segments[i].info;

		printf("%s{\"node\":%d,\"id\":%u,\"size\":%llu,\"kind\":\"%s\",\"name\":\"%s\",\"pid\":%d}",
		       i ? "," : "", sg->node, sg->id, (unsigned long long)sg->size, kind_name(sg->kind),
		       sg->name, st->segments[i].owner_pid);
	}
	printf("],\"devices\":[");
	for (int i = 0; i < st->ndevices; i++) {
		const struct sio_device_info *d = &st->devices[i];

		printf("%s{\"id\":%u,\"lender\":%d,\"class\":\"0x%06x\",\"name\":\"%s\",\"borrowers\":%d,"
		       "\"exclusive\":%s,\"dma_faults\":%llu}", i ? "," : "", d->id, d->lender,
		       d->class_code, d->name, d->borrowers, d->exclusive ? "true" : "false",
		       (unsigned long long)d->dma_faults);
	}
	printf("]}\n");
}

static void status_text(const struct sio_fabric_status *st, const char *topo)
{
	const struct sio_topology *t = &st->topo;

	printf("fabric %s: %s, %d nodes, %d adapter(s) per node, %d windows per adapter, latency model %s\n",
	       st->name, topo, t->nodes, t->adapters, t->windows,
	       t->latency_model ? "on (modelled, not measured)" : "off");
	printf("%-6s %-8s %-10s %-14s %s\n", "node", "adapter", "switch", "link", "windows used");
	for (int n = 0; n < st->nnodes; n++)
		for (int a = 0; a < st->nodes[n].adapters; a++)
			printf("%-6d %-8d %-10d %-14s %d/%d\n", n, a, st->nodes[n].switch_id[a],
			       st->nodes[n].link_up[a] ? "up" : "DOWN", st->nodes[n].windows_used[a],
			       t->windows);
	printf("\nsegments:\n%-6s %-10s %-12s %-5s %-8s %s\n", "node", "id", "size", "kind", "pid", "name");
	for (int i = 0; i < st->nsegments; i++) {
		const struct sio_segment_info *sg = &st->segments[i].info;

		printf("%-6d %-10u %-12llu %-5s %-8d %s\n", sg->node, sg->id,
		       (unsigned long long)sg->size, kind_name(sg->kind), st->segments[i].owner_pid,
		       sg->name);
	}
	printf("\ndevices:\n%-4s %-7s %-9s %-16s %-10s %s\n", "id", "lender", "class", "name", "borrowers", "dma faults");
	for (int i = 0; i < st->ndevices; i++) {
		const struct sio_device_info *d = &st->devices[i];

		printf("%-4u %-7d 0x%06x  %-16s %d%-9s %llu\n", d->id, d->lender, d->class_code, d->name,
		       d->borrowers, d->exclusive ? " (excl)" : "", (unsigned long long)d->dma_faults);
	}
	printf("\nborrows:\n");
	for (int i = 0; i < st->nborrows; i++)
		printf("  device %u by pid %d on node %d%s\n", st->borrows[i].device, st->borrows[i].pid,
		       st->borrows[i].node, st->borrows[i].exclusive ? " (exclusive)" : "");
}

static int cmd_status(int argc, char **argv)
{
	struct sio_fabric_status *st;
	struct sio_fabric *f;
	bool json = false;
	const char *topo;
	int ret;

	for (int i = 1; i < argc; i++)
		if (!strcmp(argv[i], "--json"))
			json = true, memmove(&argv[i], &argv[i + 1], (argc - i) * sizeof(*argv)), argc--, i--;
	const char *name;

	optind = 1;
	if (optind < argc && argv[optind][0] == '-') {
		fprintf(stderr, "smartio status: unknown option '%s'\n", argv[optind]);
		return 1;
	}
	name = fabric_arg(argc, argv);
	if (no_more("status", argc, argv))
		return 1;
	ret = sio_fabric_open(name, 0, &f);
	if (ret)
		return fail(ret, "status");
	ret = sio_fabric_status_get(f, &st);
	sio_fabric_close(f);
	if (ret)
		return fail(ret, "status");
	topo = st->topo.kind == SIO_TOPO_B2B ? "b2b" : st->topo.kind == SIO_TOPO_SWITCH ? "switch" : "cascade";
	if (json)
		status_json(st, topo);
	else
		status_text(st, topo);
	sio_fabric_status_close(st);
	return 0;
}

/* node:N, dev:ID or seg:NODE:ID, every number whole and in range. */
static int parse_ep(const char *s, struct sio_endpoint *e)
{
	char buf[64], *colon = NULL;
	uint64_t a, b;

	if (!strncmp(s, "seg:", 4) && strlen(s) < sizeof(buf))
		colon = strchr(strcpy(buf, s + 4), ':');
	if (!strncmp(s, "node:", 5)) {
		if (num("path", s, s + 5, 0, SIO_MAX_NODES - 1, &a))
			return -1;
		*e = (struct sio_endpoint){ .kind = SIO_EP_NODE, .node = (int)a };
	} else if (!strncmp(s, "dev:", 4)) {
		if (num("path", s, s + 4, 0, UINT32_MAX - 1, &a))
			return -1;
		*e = (struct sio_endpoint){ .kind = SIO_EP_DEVICE, .id = (uint32_t)a };
	} else if (colon) {
		*colon = 0;
		if (num("path", s, buf, 0, SIO_MAX_NODES - 1, &a) ||
		    num("path", s, colon + 1, 0, UINT32_MAX, &b))
			return -1;
		*e = (struct sio_endpoint){ .kind = SIO_EP_SEGMENT, .node = (int)a, .id = (uint32_t)b };
	} else {
		fprintf(stderr, "smartio path: '%s' is not node:N, dev:ID or seg:NODE:ID\n", s);
		return -1;
	}
	return 0;
}

static int cmd_path(int argc, char **argv)
{
	struct sio_endpoint from, to;
	struct sio_fabric *f;
	struct sio_path p;
	bool json = false;
	int ret;

	for (int i = 1; i < argc; i++)
		if (!strcmp(argv[i], "--json"))
			json = true, memmove(&argv[i], &argv[i + 1], (argc - i) * sizeof(*argv)), argc--, i--;
	optind = 1;
	for (int i = 1; i < argc; i++)
		if (argv[i][0] == '-') {
			fprintf(stderr, "smartio path: unknown option '%s'\n", argv[i]);
			return 1;
		}
	if (argc - optind < 2 || argc - optind > 3)
		return usage(stderr, 1);
	const char *name = argc - optind == 3 ? argv[optind++] : getenv("SMARTIO_FABRIC");
	if (parse_ep(argv[optind], &from) || parse_ep(argv[optind + 1], &to))
		return 1;
	if ((ret = sio_fabric_open(name, 0, &f)))
		return fail(ret, "path");
	ret = sio_path_resolve(f, &from, &to, -1, &p);
	if (ret) {
		sio_fabric_close(f);
		return fail(ret, "path");
	}
	if (json) {
		printf("{\"from_node\":%d,\"to_node\":%d,\"adapter\":%d,\"up\":%s,\"hops\":[",
		       p.from_node, p.to_node, p.adapter, p.up ? "true" : "false");
		for (int i = 0; i < p.nhops; i++)
			printf("%s{\"kind\":\"%s\",\"id\":%d,\"ns\":%u}", i ? "," : "",
			       sio_hop_kind_name(p.hops[i].kind), p.hops[i].id, p.hops[i].ns);
		printf("],\"model_one_way_ns\":%u,\"model_round_trip_ns\":%u}\n", p.one_way_ns, p.round_trip_ns);
	} else {
		printf("node %d -> node %d via adapter %d, link %s, %d hop(s):\n", p.from_node, p.to_node,
		       p.adapter, p.up ? "up" : "DOWN", p.nhops);
		for (int i = 0; i < p.nhops; i++)
			printf("  %-8s %-4d %4u ns\n", sio_hop_kind_name(p.hops[i].kind), p.hops[i].id, p.hops[i].ns);
		printf("latency model (not a measurement): one way %u ns, round trip %u ns\n",
		       p.one_way_ns, p.round_trip_ns);
	}
	sio_fabric_close(f);
	return 0;
}

static int cmd_link(int argc, char **argv)
{
	struct sio_fabric *f;
	const char *name;
	int node, adapter = -1, ret, nargs = argc - 1;
	bool up;

	if (nargs < 2 || nargs > 4)
		return usage(stderr, 1);
	up = !strcmp(argv[argc - 1], "up");
	if (!up && strcmp(argv[argc - 1], "down")) {
		fprintf(stderr, "smartio link: last argument must be 'up' or 'down'\n");
		return 1;
	}
	/* [NAME] NODE [ADAPTER] up|down: the name is there when the
	 * arguments are too many for NODE [ADAPTER], or the first is no number */
	int i = 1;
	uint64_t v;
	bool named = nargs == 4 || (nargs == 3 && sio_parse_u64(argv[1], 0, UINT64_MAX, &v));

	name = named ? argv[i++] : getenv("SMARTIO_FABRIC");
	if (inum("link", "node", argv[i++], 0, SIO_MAX_NODES - 1, &node))
		return 1;
	if (i < argc - 1 && inum("link", "adapter", argv[i], 0, SIO_MAX_ADAPTERS - 1, &adapter))
		return 1;
	if ((ret = sio_fabric_open(name, 0, &f)))
		return fail(ret, "link");
	ret = sio_link_set(f, node, adapter, up);
	sio_fabric_close(f);
	if (ret)
		return fail(ret, "link");
	printf("node %d adapter %s: link %s\n", node, adapter < 0 ? "all" : argv[i], up ? "up" : "down");
	return 0;
}

int main(int argc, char **argv)
{
	if (argc < 2)
		return usage(stderr, 1);
	const char *c = argv[1];
	if (!strcmp(c, "--help") || !strcmp(c, "-h") || !strcmp(c, "help"))
		return usage(stdout, 0);
	if (!strcmp(c, "create")) return optind = 2, cmd_create(argc, argv);
	if (!strcmp(c, "destroy")) return optind = 1, cmd_destroy(argc, argv);
	if (!strcmp(c, "status")) return cmd_status(argc - 1, argv + 1);
	if (!strcmp(c, "path")) return cmd_path(argc - 1, argv + 1);
	if (!strcmp(c, "link")) return cmd_link(argc - 1, argv + 1);
#ifdef SIO_TOOL_VFIO
	if (!strcmp(c, "vfio")) return sio_tool_vfio(argc - 1, argv + 1);
#endif
#ifdef SIO_TOOL_UIO
	if (!strcmp(c, "uio")) return sio_tool_uio(argc - 1, argv + 1);
#endif
	fprintf(stderr, "smartio: unknown command '%s'\n", c);
	return usage(stderr, 1);
}
