/* SPDX-License-Identifier: MIT */
/* smartio: create, inspect and break simulated fabrics. */
#include <errno.h>
#include <grp.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <smartio/smartio.h>
#include "parse.h"
#include "smartio-cmd.h"
#include "smartio-ntb.h"
#ifdef SIO_TOOL_VFIO
#include "smartio-vfio.h"
#endif

/* [NAME]: the fabric, or $SMARTIO_FABRIC. */
/* --fabric NAME, where a command takes it (the no-fabric message offers it) */
static const char *fabric_opt;

static const char *fabric_arg(int argc, char **argv)
{
	if (fabric_opt)
		return fabric_opt;
	if (optind < argc)
		return argv[optind++];
	return getenv("SMARTIO_FABRIC");
}

static int fail(const char *what)
{
	return prog_fail("%s: %s", what, sio_errmsg());
}

static void usage(FILE *o)
{
	fprintf(o,
"usage: smartio COMMAND [ARGS]\n"
"  create NAME [--nodes N] [--topology b2b|switch|cascade] [--per-switch K]\n"
"              [--adapters 1|2] [--windows W] [--window-size BYTES]\n"
"              [--mcast-groups G] [--latency-model] [--group GROUP]\n"
"              [--adapter-ns NS] [--chassis-ns NS] [--switch-ns NS]   per-hop model delays\n"
"  destroy NAME [--force]          refused while processes are attached;\n"
"                                  --force tells them to leave\n"
"  list [--json]                   the fabrics on this host\n"
"  status [NAME|--fabric NAME] [--json|--dot|--prometheus] [--watch [TIME]]\n"
"         [--count N]\n"
"                                  nodes, windows, segments, devices, borrows;\n"
"                                  --dot: a Graphviz picture (dot -Tsvg);\n"
"                                  --prometheus: Prometheus's text format\n"
"  path [NAME] FROM TO [--json] [--adapter A]\n"
"                                  FROM/TO: node:N, dev:ID or seg:NODE:ID; the\n"
"                                  path through adapter A (default: the first\n"
"                                  whose links are up at both ends)\n"
"  link [NAME] NODE [ADAPTER] up|down\n"
#ifdef SIO_TOOL_NVME
"  top [NAME] [--interval TIME] [--count N]\n"
"                                  live NVMe clients and queue pairs: IOPS, MiB/s,\n"
"                                  latency, errors, doorbells\n"
"  nvme stats [NAME] [--json|--prometheus] [--watch [TIME]] [--count N]\n"
"                                  the NVMe driver's counters, per client and queue\n"
"  exporter [NAME] --listen HOST:PORT\n"
"                                  serve the status and NVMe counters to Prometheus\n"
"                                  on http://HOST:PORT/metrics\n"
#endif
#ifdef SIO_TOOL_VFIO
"  vfio ...                        real devices through vfio-pci (smartio vfio --help)\n"
#endif
#ifdef SIO_TOOL_UIO
"  uio ...                         real devices without an IOMMU (smartio uio --help)\n"
#endif
"  ntb status|ping|bench|serve ...\n"
"                                  NTB devices of the Linux NTB framework, through\n"
"                                  smartio_ntb (smartio ntb --help)\n"
"  --help, --version\n"
"NAME defaults to $SMARTIO_FABRIC. A fabric is its creator's alone; with --group,\n"
"members of GROUP may join it too.\n"
"Exit status: 0 ok, 1 failed (a fabric, node or device that does not exist\n"
"included), 2 usage error.\n");
}

/* A hop's modelled delay: a time up to 1 ms (a bare number is ns, as the
 * option's name says), far beyond any real one. */
static uint32_t hop_ns(const char *opt, const char *arg)
{
	return (uint32_t)(prog_time(opt, arg, 1e-9, 0, 1e-3) * 1e9 + 0.5);
}

static int topology(const char *arg)
{
	static const char *const names[] = { "b2b", "switch", "cascade", NULL };
	static const enum sio_topology_kind kinds[] = { SIO_TOPO_B2B, SIO_TOPO_SWITCH,
							SIO_TOPO_CASCADE };

	return (int)kinds[prog_choice("--topology", arg, names)];
}

/* --group G: a group name or number. */
static gid_t group_id(const char *group)
{
	struct group *gr = getgrnam(group);
	char *end;
	unsigned long g;

	if (gr)
		return gr->gr_gid;
	g = strtoul(group, &end, 10);
	if (!*group || *end || g > 0x7fffffff)
		prog_usage_error("--group: no group '%s'", group);
	return (gid_t)g;
}

static int cmd_create(int argc, char **argv)
{
	enum { O_NODES = 256, O_TOPO, O_PER, O_ADAPTERS, O_WINDOWS, O_WSIZE, O_GROUPS, O_MODEL,
	       O_ADAPTER_NS, O_CHASSIS_NS, O_SWITCH_NS, O_GROUP };
	static const struct option o[] = {
		{ "nodes", 1, 0, O_NODES }, { "topology", 1, 0, O_TOPO }, { "per-switch", 1, 0, O_PER },
		{ "adapters", 1, 0, O_ADAPTERS }, { "windows", 1, 0, O_WINDOWS },
		{ "window-size", 1, 0, O_WSIZE }, { "mcast-groups", 1, 0, O_GROUPS },
		{ "latency-model", 0, 0, O_MODEL }, { "adapter-ns", 1, 0, O_ADAPTER_NS },
		{ "chassis-ns", 1, 0, O_CHASSIS_NS }, { "switch-ns", 1, 0, O_SWITCH_NS },
		{ "group", 1, 0, O_GROUP }, PROG_LONGOPTS, { 0 } };
	struct sio_fabric_config c = { .nodes = 2, .topology = SIO_TOPO_SWITCH };
	const char *name, *group = NULL;
	int opt, ret;

	while ((opt = prog_getopt(argc, argv, "h", o)) != -1) {
		switch (opt) {
		case O_GROUP: group = optarg; break;
		case O_ADAPTER_NS: c.adapter_ns = hop_ns("--adapter-ns", optarg); break;
		case O_CHASSIS_NS: c.chassis_ns = hop_ns("--chassis-ns", optarg); break;
		case O_SWITCH_NS: c.switch_ns = hop_ns("--switch-ns", optarg); break;
		case O_NODES: c.nodes = (int)prog_u64("--nodes", optarg, 1, SIO_MAX_NODES); break;
		case O_PER: c.nodes_per_switch = (int)prog_u64("--per-switch", optarg, 1, SIO_MAX_NODES); break;
		case O_ADAPTERS: c.adapters = (int)prog_u64("--adapters", optarg, 1, SIO_MAX_ADAPTERS); break;
		/* the library checks the finer limits (windows, groups, a power of 2) */
		case O_WINDOWS: c.windows = (int)prog_u64("--windows", optarg, 1, INT32_MAX); break;
		case O_WSIZE: c.window_size = prog_size("--window-size", optarg, 4096, UINT64_MAX); break;
		case O_GROUPS: c.mcast_groups = (int)prog_u64("--mcast-groups", optarg, 0, INT32_MAX); break;
		case O_MODEL: c.latency_model = true; break;
		case O_TOPO: c.topology = topology(optarg); break;
		}
	}
	name = fabric_arg(argc, argv);
	prog_no_args(argc, argv);
	if (group)
		ret = sio_fabric_create_group(name, &c, group_id(group));
	else
		ret = sio_fabric_create(name, &c);
	if (ret)
		return fail("create");
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
	static const struct option o[] = { { "force", 0, 0, 'f' }, PROG_LONGOPTS, { 0 } };
	unsigned int flags = 0;
	const char *name;

	while (prog_getopt(argc, argv, "hf", o) != -1)
		flags = SIO_DESTROY_FORCE;
	name = fabric_arg(argc, argv);
	prog_no_args(argc, argv);
	/* refused while processes are attached; --force tells them to leave */
	return sio_fabric_destroy_flags(name, flags) ? fail("destroy") : 0;
}

struct status_arg {
	const char *name;
	enum sio_tool_fmt fmt;
};

static int status_once(void *arg)
{
	const struct status_arg *a = arg;

	return sio_tool_status_once(a->name, a->fmt);
}

static int cmd_status(int argc, char **argv)
{
	enum { O_JSON = 256, O_DOT, O_WATCH, O_COUNT, O_PROM, O_FABRIC };
	static const struct option o[] = {
		{ "json", 0, 0, O_JSON }, { "dot", 0, 0, O_DOT }, { "watch", 2, 0, O_WATCH },
		{ "prometheus", 0, 0, O_PROM }, { "count", 1, 0, O_COUNT },
		{ "fabric", 1, 0, O_FABRIC }, PROG_LONGOPTS, { 0 } };
	struct status_arg a = { .fmt = SIO_TOOL_TEXT };
	double interval = 0;
	uint64_t count = 0;
	int c;

	while ((c = prog_getopt(argc, argv, "h", o)) != -1) {
		switch (c) {
		case O_JSON: a.fmt = SIO_TOOL_JSON; break;
		case O_DOT: a.fmt = SIO_TOOL_DOT; break;
		case O_PROM: a.fmt = SIO_TOOL_PROM; break;
		case O_WATCH: interval = prog_watch_arg(optarg, argc, argv); break;
		case O_COUNT: count = prog_u64("--count", optarg, 1, UINT64_MAX); break;
		case O_FABRIC: fabric_opt = optarg; break;
		}
	}
	a.name = fabric_arg(argc, argv);
	prog_no_args(argc, argv);
	if (count && !interval)
		prog_usage_error("--count goes with --watch");
	if (!interval)
		return status_once(&a);
	return prog_repeat(status_once, &a, interval, count, a.fmt == SIO_TOOL_JSON);
}

static int cmd_list(int argc, char **argv)
{
	static const struct option o[] = { { "json", 0, 0, 'j' }, PROG_LONGOPTS, { 0 } };
	char (*names)[SIO_NAME_MAX] = NULL;
	struct json_object *arr = json_object_new_array();
	bool json = false;
	int n, i;

	while (prog_getopt(argc, argv, "h", o) != -1)
		json = true;
	prog_no_args(argc, argv);
	n = sio_fabric_list(NULL, 0);
	if (n > 0 && !(names = calloc((size_t)n, sizeof(*names))))
		return prog_fail("out of memory");
	if (n > 0)
		n = sio_fabric_list(names, n);
	if (n < 0) {
		json_object_put(arr);
		free(names);
		return fail("list");
	}
	if (!json)
		printf("%-24s %-8s %-6s %-6s %-8s %s\n", "fabric", "topology", "nodes", "procs",
		       "devices", "state");
	for (i = 0; i < n; i++) {
		struct sio_fabric_status *st = NULL;
		struct sio_fabric *f = NULL;
		const char *why = NULL;

		/* a fabric another user made, or one half made, is listed as such */
		if (sio_fabric_open(names[i], -1, &f))
			why = sio_errmsg(), f = NULL;
		else if (sio_fabric_status_get(f, &st))
			why = sio_errmsg();
		if (json) {
			struct json_object *x = pj_push_obj(arr);

			pj_str(x, "fabric", names[i]);
			pj_str(x, "state", st ? "live" : "unreadable");
			if (st) {
				pj_str(x, "topology", prog_topo_name(st->topo.kind));
				pj_int(x, "nodes", st->topo.nodes);
				pj_int(x, "procs", st->procs - 1);	/* not counting us */
				pj_int(x, "devices", st->ndevices);
			} else {
				pj_str(x, "error", why);
			}
		} else if (st) {
			printf("%-24s %-8s %-6d %-6d %-8d live\n", names[i],
			       prog_topo_name(st->topo.kind), st->topo.nodes, st->procs - 1,
			       st->ndevices);
		} else {
			printf("%-24s %-8s %-6s %-6s %-8s %s\n", names[i], "-", "-", "-", "-", why);
		}
		sio_fabric_status_close(st);
		sio_fabric_close(f);
	}
	free(names);
	if (json)
		return prog_json_print(stdout, arr);
	json_object_put(arr);
	return 0;
}

/* A number in an endpoint, strictly: a bad one is a usage error. */
static int num(const char *what, const char *arg, uint64_t min, uint64_t max, uint64_t *out)
{
	if (sio_parse_u64(arg, min, max, out))
		prog_usage_error("path: %s: %s", what, sio_errmsg());
	return 0;
}

/* node:N, dev:ID or seg:NODE:ID, every number whole and in range. */
static int parse_ep(const char *s, struct sio_endpoint *e)
{
	char buf[64], *colon = NULL;
	size_t len;
	uint64_t a, b;

	if (!strncmp(s, "seg:", 4)) {
		len = strnlen(s + 4, sizeof(buf));
		if (len == sizeof(buf))
			prog_usage_error("path: '%s' is too long for seg:NODE:ID", s);
		memcpy(buf, s + 4, len);
		buf[len] = 0;
		colon = strchr(buf, ':');
	}
	if (!strncmp(s, "node:", 5)) {
		if (num(s, s + 5, 0, SIO_MAX_NODES - 1, &a))
			return -1;
		*e = (struct sio_endpoint){ .kind = SIO_EP_NODE, .node = (int)a };
	} else if (!strncmp(s, "dev:", 4)) {
		if (num(s, s + 4, 0, UINT32_MAX - 1, &a))
			return -1;
		*e = (struct sio_endpoint){ .kind = SIO_EP_DEVICE, .id = (uint32_t)a };
	} else if (colon) {
		*colon = 0;
		if (num(s, buf, 0, SIO_MAX_NODES - 1, &a) ||
		    num(s, colon + 1, 0, UINT32_MAX, &b))
			return -1;
		*e = (struct sio_endpoint){ .kind = SIO_EP_SEGMENT, .node = (int)a, .id = (uint32_t)b };
	} else {
		prog_usage_error("path: '%s' is not node:N, dev:ID or seg:NODE:ID", s);
	}
	return 0;
}

static void path_json(const struct sio_path *p)
{
	struct json_object *o = json_object_new_object(), *hops = NULL;

	pj_int(o, "from_node", p->from_node);
	pj_int(o, "to_node", p->to_node);
	pj_int(o, "adapter", p->adapter);
	pj_bool(o, "up", p->up);
	hops = pj_arr(o, "hops");
	for (int i = 0; i < p->nhops; i++) {
		struct json_object *h = pj_push_obj(hops);

		pj_str(h, "kind", sio_hop_kind_name(p->hops[i].kind));
		pj_int(h, "id", p->hops[i].id);
		pj_u64(h, "ns", p->hops[i].ns);
	}
	pj_u64(o, "model_one_way_ns", p->one_way_ns);
	pj_u64(o, "model_round_trip_ns", p->round_trip_ns);
	prog_json_print(stdout, o);
}

static void path_text(const struct sio_path *p)
{
	printf("node %d -> node %d via adapter %d, link %s, %d hop(s):\n", p->from_node,
	       p->to_node, p->adapter, p->up ? "up" : "DOWN", p->nhops);
	for (int i = 0; i < p->nhops; i++)
		printf("  %-8s %-4d %4u ns\n", sio_hop_kind_name(p->hops[i].kind), p->hops[i].id,
		       p->hops[i].ns);
	printf("latency model (not a measurement): one way %u ns, round trip %u ns\n",
	       p->one_way_ns, p->round_trip_ns);
}

static int cmd_path(int argc, char **argv)
{
	static const struct option o[] = { { "json", 0, 0, 'j' }, { "adapter", 1, 0, 'a' },
					   PROG_LONGOPTS, { 0 } };
	struct sio_endpoint from, to;
	struct sio_fabric *f;
	struct sio_path p;
	const char *name;
	bool json = false;
	int ret, n, c, adapter = -1;

	while ((c = prog_getopt(argc, argv, "h", o)) != -1) {
		if (c == 'a')	/* checked against the fabric's adapters by the resolve */
			adapter = (int)prog_u64("--adapter", optarg, 0, SIO_MAX_ADAPTERS - 1);
		else
			json = true;
	}
	n = argc - optind;
	if (n < 2 || n > 3)
		prog_usage_error("path wants [NAME] FROM TO, not %d argument(s)", n);
	/* "path NAME node:1": a fabric's name where FROM should be */
	if (n == 2 && !strchr(argv[optind], ':'))
		prog_usage_error("path: '%s' is no endpoint: after the fabric's name give FROM and "
				 "TO (node:N, dev:ID or seg:NODE:ID)", argv[optind]);
	name = n == 3 ? argv[optind++] : getenv("SMARTIO_FABRIC");
	parse_ep(argv[optind], &from);
	parse_ep(argv[optind + 1], &to);
	if (prog_join(name, -1, &f))	/* -1: $SMARTIO_NODE, or the backend's (ntb: this kernel's port) */
		return PROG_FAIL;
	ret = sio_path_resolve(f, &from, &to, adapter, &p);
	sio_fabric_close(f);
	if (ret)
		return fail("path");
	if (json)
		path_json(&p);
	else
		path_text(&p);
	return 0;
}

static int cmd_link(int argc, char **argv)
{
	static const struct option o[] = { PROG_LONGOPTS, { 0 } };
	struct sio_fabric *f;
	const char *name;
	int node, adapter = -1, ret, i, nargs;
	bool up, named;
	uint64_t v;

	/* --help and --version; nothing else: "-3" is a node, to be refused */
	if (argc > 1 && argv[1][0] == '-' && argv[1][1] == '-')
		prog_getopt(2, argv, "", o);
	i = 1;
	nargs = argc - i;
	if (nargs < 2 || nargs > 4)
		prog_usage_error("link wants [NAME] NODE [ADAPTER] up|down");
	up = !strcmp(argv[argc - 1], "up");
	if (!up && strcmp(argv[argc - 1], "down"))
		prog_usage_error("link: last argument must be 'up' or 'down'");
	/* [NAME] NODE [ADAPTER] up|down: the name is there when the
	 * arguments are too many for NODE [ADAPTER], or the first is no number */
	named = nargs == 4 || (nargs == 3 && sio_parse_u64(argv[i], 0, UINT64_MAX, &v));
	name = named ? argv[i++] : getenv("SMARTIO_FABRIC");
	node = (int)prog_u64("link: node", argv[i++], 0, SIO_MAX_NODES - 1);
	if (i < argc - 1)
		adapter = (int)prog_u64("link: adapter", argv[i], 0, SIO_MAX_ADAPTERS - 1);
	if (prog_join(name, -1, &f))	/* -1: $SMARTIO_NODE, or the backend's (ntb: this kernel's port) */
		return PROG_FAIL;
	ret = sio_link_set(f, node, adapter, up);
	sio_fabric_close(f);
	if (ret)
		return fail("link");
	printf("node %d adapter %s: link %s\n", node, adapter < 0 ? "all" : argv[i], up ? "up" : "down");
	return 0;
}

/*
 * A command that lives with the part it belongs to, as git's do: `smartio
 * CMD ARGS` runs the program smartio-CMD as `smartio-CMD ARGS`, found
 * beside this smartio (an installed tree) or else on $PATH (a build tree,
 * as `meson devenv` sets it). The NVMe driver's `smartio nvme` is its
 * smartio-nvme, and `smartio top` is short for `smartio nvme top`. Return:
 * only when there is no such program, or it could not be run (said why).
 */
static void run_external(int argc, char **argv)
{
	/* top and exporter are the NVMe driver's smartio-nvme's */
	const char *cmd = strcmp(argv[1], "top") && strcmp(argv[1], "exporter") ? argv[1] : "nvme";
	char self[PATH_MAX], prog[PATH_MAX + 80], name[64], **args;
	ssize_t n;
	int k = 0;

	/* a command's name, not a path nor an option */
	if (!*cmd || strspn(cmd, "abcdefghijklmnopqrstuvwxyz0123456789-") != strlen(cmd) ||
	    (size_t)snprintf(name, sizeof(name), "smartio-%s", cmd) >= sizeof(name))
		return;
	if (!(args = calloc((size_t)argc + 2, sizeof(*args))))
		return;
	args[k++] = name;
	if (cmd != argv[1])
		args[k++] = argv[1];	/* top, exporter */
	for (int i = 2; i < argc; i++)
		args[k++] = argv[i];
	n = readlink("/proc/self/exe", self, sizeof(self) - 1);
	if (n > 0 && (self[n] = 0, strrchr(self, '/'))) {
		*strrchr(self, '/') = 0;
		snprintf(prog, sizeof(prog), "%s/%s", self, name);
		if (!access(prog, X_OK)) {
			execv(prog, args);
			prog_fail("%s: %s", prog, strerror(errno));
			exit(PROG_FAIL);
		}
	}
	execvp(name, args);
	if (errno != ENOENT) {
		prog_fail("%s: %s", name, strerror(errno));
		exit(PROG_FAIL);
	}
	free(args);
}

int main(int argc, char **argv)
{
	static const struct {
		const char *name;
		int (*fn)(int argc, char **argv);
	} cmds[] = {
		{ "create", cmd_create }, { "destroy", cmd_destroy }, { "list", cmd_list },
		{ "status", cmd_status }, { "path", cmd_path }, { "link", cmd_link },
#ifdef SIO_TOOL_VFIO
		{ "vfio", sio_tool_vfio },
#endif
#ifdef SIO_TOOL_UIO
		{ "uio", sio_tool_uio },
#endif
		{ "ntb", sio_tool_ntb },
	};
	static const struct option o[] = { PROG_LONGOPTS, { 0 } };
	const char *c;

	prog_init("smartio", usage);
	if (argc < 2 || !strcmp(argv[1], "help")) {
		usage(argc < 2 ? stderr : stdout);
		return argc < 2 ? PROG_USAGE : PROG_OK;
	}
	if (argv[1][0] == '-') {	/* --help, --version */
		prog_getopt(2, argv, "h", o);
		prog_usage_error("unknown option '%s'", argv[1]);
	}
	c = argv[1];
	for (size_t i = 0; i < sizeof(cmds) / sizeof(cmds[0]); i++)
		if (!strcmp(c, cmds[i].name)) {
			optind = 1;
			return cmds[i].fn(argc - 1, argv + 1);
		}
	run_external(argc, argv);
	prog_usage_error("unknown command '%s'", c);
}
