/* SPDX-License-Identifier: MIT */
/*
 * `smartio vfio`: list PCI functions and how they are bound, bind one to
 * vfio-pci (or give it back), probe one through vfio, and lend one to a
 * fabric so that drivers borrow it through libsmartio.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <smartio/smartio.h>
#include <smartio/vfio.h>
#include "prog.h"
#include "smartio-vfio.h"

static void usage(FILE *o)
{
	fprintf(o,
		"usage: smartio vfio list [--class HEX] [--vfio-only] [--json]\n"
		"       smartio vfio bind [--force] BDF\n"
		"                                      bind to vfio-pci (root); refused for a\n"
		"                                      function this host uses (a mounted\n"
		"                                      filesystem, swap, LVM/MD/dm member),\n"
		"                                      and for one of a class smartio does not\n"
		"                                      lend unless --force (dangerous: it takes\n"
		"                                      the device from its driver)\n"
		"       smartio vfio unbind BDF        give it back to its kernel driver (root)\n"
		"       smartio vfio probe BDF [--type1|--iommufd]\n"
		"       smartio vfio lend BDF [--fabric NAME] [--type1|--iommufd]\n"
		"                             [--ready-file F] [--background]\n"
		"                                      --ready-file: written with our pid once\n"
		"                                      lending; --background: return then\n"
		"       smartio vfio doorbell BDF [--fabric NAME] [--type1|--iommufd]\n"
		"                                      receive a shmwin window's doorbells\n"
		"BDF is a PCI address such as 0000:00:04.0. A class given as 2 hex digits\n"
		"matches the base class, 4 the subclass too, 6 the programming interface\n"
		"(NVMe: 010802).\n");
}

static int fail(const char *what)
{
	fprintf(stderr, "smartio vfio %s: %s\n", what, sio_errmsg());
	return 1;
}

static int parse_class(const char *s, uint32_t *cls, uint32_t *mask)
{
	char *end;
	const char *h = (s[0] == '0' && (s[1] == 'x' || s[1] == 'X')) ? s + 2 : s;
	unsigned long v = strtoul(h, &end, 16);
	size_t n = end - h;

	/* strtoul would take a sign or spaces: only hex digits count */
	if (*end || (n != 2 && n != 4 && n != 6) || strspn(h, "0123456789abcdefABCDEF") != n) {
		fprintf(stderr, "smartio vfio list: --class wants 2, 4 or 6 hex digits, not '%s'\n", s);
		return -1;
	}
	*cls = v << (8 * (3 - n / 2));
	*mask = 0xffffffu << (8 * (3 - n / 2)) & 0xffffff;
	return 0;
}

/* The functions as JSON: one object each, as the table's columns. */
static int list_json(const struct sio_pci_fn *fn, int n, bool vonly)
{
	struct json_object *a = json_object_new_array();
	char s[16], use[1024];

	for (int i = 0; i < n; i++) {
		bool v = !strcmp(fn[i].driver, "vfio-pci");
		struct json_object *x;

		if (vonly && !v)
			continue;
		x = pj_push_obj(a);
		pj_str(x, "bdf", fn[i].bdf);
		snprintf(s, sizeof(s), "0x%06x", fn[i].class_code);
		pj_str(x, "class", s);
		snprintf(s, sizeof(s), "%04x:%04x", fn[i].vendor, fn[i].device);
		pj_str(x, "id", s);
		pj_int(x, "iommu_group", fn[i].iommu_group);
		pj_str(x, "driver", fn[i].driver);
		pj_bool(x, "vfio", v);
		pj_str(x, "in_use", sio_tool_pci_users(fn[i].bdf, use, sizeof(use)) > 0 ? use : NULL);
	}
	return prog_json_print(stdout, a);
}

static int cmd_list(int argc, char **argv)
{
	static const struct option lo[] = {
		{ "class", required_argument, NULL, 'c' },
		{ "vfio-only", no_argument, NULL, 'v' },
		{ "json", no_argument, NULL, 'j' },
		{ 0 }
	};
	uint32_t cls = 0, mask = 0;
	bool vonly = false, hint = false, json = false;
	struct sio_pci_fn *fn;
	int o, n;

	while ((o = getopt_long(argc, argv, "c:v", lo, NULL)) != -1) {
		if (o == 'c' && parse_class(optarg, &cls, &mask))
			return 2;
		if (o == 'v')
			vonly = true;
		if (o == 'j')
			json = true;
		if (o == '?')
			return 2;
	}
	n = sio_pci_scan(cls, mask, NULL, 0);
	if (n < 0)
		return fail("list");
	fn = calloc(n + 1, sizeof(*fn));
	if (!fn)
		return 1;
	n = sio_pci_scan(cls, mask, fn, n);
	if (n < 0)
		return fail("list");
	if (json) {
		o = list_json(fn, n, vonly);
		free(fn);
		return o;
	}
	printf("%-13s %-6s %-9s %-6s %-14s %-19s %s\n", "BDF", "CLASS", "ID", "GROUP", "DRIVER",
	       "VFIO", "IN USE BY THIS HOST");
	for (int i = 0; i < n; i++) {
		bool v = !strcmp(fn[i].driver, "vfio-pci");
		char grp[12] = "-", use[1024];

		if (vonly && !v)
			continue;
		if (fn[i].iommu_group >= 0)
			snprintf(grp, sizeof(grp), "%d", fn[i].iommu_group);
		if (sio_tool_pci_users(fn[i].bdf, use, sizeof(use)) <= 0)
			strcpy(use, "-");
		printf("%-13s %06x %04x:%04x %-6s %-14s %-19s %s\n", fn[i].bdf, fn[i].class_code,
		       fn[i].vendor, fn[i].device, grp, fn[i].driver[0] ? fn[i].driver : "-",
		       v ? "yes" : fn[i].iommu_group < 0 ? "no (no IOMMU group)" : "no", use);
		hint |= !v && fn[i].iommu_group >= 0;
	}
	if (hint)
		printf("to bind one to vfio-pci (as root): smartio vfio bind BDF\n");
	if (n > 0 && fn[0].iommu_group < 0 && access("/sys/kernel/iommu_groups/0", F_OK))
		printf("no IOMMU is active: enable VT-d/AMD-Vi and boot with intel_iommu=on\n");
	free(fn);
	return 0;
}

static int sysfs_write(const char *path, const char *val, bool quiet_enodev)
{
	int fd = open(path, O_WRONLY | O_CLOEXEC);
	ssize_t n;

	if (fd < 0) {
		fprintf(stderr, "smartio: cannot open %s: %s%s\n", path, strerror(errno),
			errno == EACCES ? " (run as root)" : "");
		return -1;
	}
	n = write(fd, val, strlen(val));
	if (n < 0 && !(quiet_enodev && (errno == ENODEV || errno == EINVAL))) {
		fprintf(stderr, "smartio: writing '%s' to %s: %s\n", val, path, strerror(errno));
		close(fd);
		return -1;
	}
	close(fd);
	return 0;
}

/* Refuse to take a function from this host: in use never, another class
 * only with --force. */
static int bind_ok(const char *cmd, const struct sio_pci_fn *fn, bool force)
{
	char use[1024];
	int n = sio_tool_pci_users(fn->bdf, use, sizeof(use));

	if (n < 0) {
		fprintf(stderr, "smartio %s bind: cannot tell whether this host uses %s: %s\n",
			cmd, fn->bdf, strerror(-n));
		return 1;
	}
	if (n > 0) {
		fprintf(stderr, "smartio %s bind: %s is in use on this host: %s; stop using it "
			"first (--force does not override this)\n", cmd, fn->bdf, use);
		return 1;
	}
	if (!force && !sio_tool_pci_lendable(fn)) {
		fprintf(stderr, "smartio %s bind: %s (%04x:%04x, class %06x%s) is of no class "
			"smartio lends (NVMe 010802, display 03, memory 05, NTB 0680, "
			"accelerators 0b/11/12, unclassified 00): most likely the machine's own "
			"disk, network or bus; check the address (smartio vfio list), or bind "
			"it anyway with --force (dangerous)\n", cmd, fn->bdf, fn->vendor,
			fn->device, fn->class_code, fn->vendor == 0x1af4 ? ", virtio" : "");
		return 1;
	}
	return 0;
}

static int rebind(const char *cmd, const char *arg, const char *override, const char *want,
		  bool force)
{
	struct sio_pci_fn fn;
	char bdf[16], p[160];

	if (sio_pci_bdf_parse(arg, bdf) || sio_pci_fn_get(bdf, &fn)) {
		fprintf(stderr, "smartio %s %s: %s\n", cmd, want ? "bind" : "unbind", sio_errmsg());
		return 1;
	}
	if (want && !strcmp(fn.driver, want)) {
		printf("%s is already bound to %s\n", bdf, want);
		return 0;
	}
	if (want && bind_ok(cmd, &fn, force))
		return 1;
	if (geteuid() != 0) {	/* sysfs would say EACCES, or that the driver is absent */
		fprintf(stderr, "smartio %s %s: binding a PCI function to a driver needs root\n",
			cmd, want ? "bind" : "unbind");
		return 1;
	}
	snprintf(p, sizeof(p), "/sys/bus/pci/drivers/%s", want ? want : "");
	if (want && access(p, F_OK)) {
		fprintf(stderr, "smartio %s bind: %s is not loaded: modprobe %s\n", cmd, want, want);
		return 1;
	}
	snprintf(p, sizeof(p), "/sys/bus/pci/devices/%s/driver_override", bdf);
	if (sysfs_write(p, override, false))
		return 1;
	if (fn.driver[0]) {
		snprintf(p, sizeof(p), "/sys/bus/pci/devices/%s/driver/unbind", bdf);
		if (sysfs_write(p, bdf, false))
			return 1;
	}
	/* Probing may find no driver (nvme not loaded): that is not an error. */
	if (sysfs_write("/sys/bus/pci/drivers_probe", bdf, true))
		return 1;
	if (sio_pci_fn_get(bdf, &fn)) {
		fprintf(stderr, "smartio %s bind: %s\n", cmd, sio_errmsg());
		return 1;
	}
	if (want && strcmp(fn.driver, want)) {
		fprintf(stderr, "smartio %s bind: %s did not bind to %s (driver now '%s')%s\n", cmd,
			bdf, want, fn.driver, !strcmp(want, "vfio-pci") ?
			"; is it in an IOMMU group?" : "");
		return 1;
	}
	printf("%s: driver %s\n", bdf, fn.driver[0] ? fn.driver : "(none)");
	return 0;
}

int sio_tool_bind(const char *cmd, int argc, char **argv, const char *drv)
{
	bool bind = !strcmp(argv[0], "bind"), force = false;
	const char *bdf = NULL;

	for (int i = 1; i < argc; i++) {
		if (bind && !strcmp(argv[i], "--force")) {
			force = true;
		} else if (argv[i][0] == '-' || bdf) {
			fprintf(stderr, "smartio %s %s: unexpected argument '%s' (usage: smartio %s "
				"%s%s BDF)\n", cmd, argv[0], argv[i], cmd, argv[0],
				bind ? " [--force]" : "");
			return 2;
		} else {
			bdf = argv[i];
		}
	}
	if (!bdf) {
		fprintf(stderr, "smartio %s %s: which function? (a PCI address such as "
			"0000:00:04.0)\n", cmd, argv[0]);
		return 2;
	}
	return rebind(cmd, bdf, bind ? drv : "\n", bind ? drv : NULL, force);
}

/* A lender's readiness (lend only): --ready-file, --background. */
struct lend_ready {
	const char *file;
	bool background;
};

static int mode_opt(int argc, char **argv, enum sio_vfio_mode *mode, const char **fabric,
		    struct lend_ready *ready)
{
	static const struct option lo[] = {
		{ "type1", no_argument, NULL, '1' },
		{ "iommufd", no_argument, NULL, 'i' },
		{ "fabric", required_argument, NULL, 'f' },
		{ "ready-file", required_argument, NULL, 'r' },
		{ "background", no_argument, NULL, 'b' },
		{ "help", no_argument, NULL, 'h' },
		{ 0 }
	};
	int o;

	while ((o = getopt_long(argc, argv, "f:", lo, NULL)) != -1) {
		if (o == '1')
			*mode = SIO_VFIO_TYPE1;
		else if (o == 'i')
			*mode = SIO_VFIO_IOMMUFD;
		else if (o == 'f' && fabric)
			*fabric = optarg;
		else if (o == 'r' && ready)
			ready->file = optarg;
		else if (o == 'b' && ready)
			ready->background = true;
		else if (o == 'h') {
			usage(stdout);	/* smartio vfio lend --help */
			exit(0);
		} else {
			if (o == '?')
				prog_suggest_option(argc, argv, lo);
			return -1;
		}
	}
	return optind < argc ? optind : -1;
}

static int cmd_probe(int argc, char **argv)
{
	enum sio_vfio_mode mode = SIO_VFIO_AUTO;
	struct sio_vfio_probe p;
	int i = mode_opt(argc, argv, &mode, NULL, NULL);

	if (i < 0) {
		usage(stderr);
		return 2;
	}
	if (sio_vfio_probe(argv[i], mode, &p))
		return fail("probe");
	printf("%s: opened via %s, IOMMU group %d, page sizes 0x%llx\n", p.bdf,
	       p.mode == SIO_VFIO_IOMMUFD ? "iommufd" : "VFIO type1", p.iommu_group,
	       (unsigned long long)p.pgsizes);
	for (int r = 0; r < p.nranges; r++)
		printf("  IOVA range %#llx-%#llx\n", (unsigned long long)p.ranges[r].start,
		       (unsigned long long)p.ranges[r].last);
	for (int b = 0; b < SIO_MAX_BARS; b++)
		if (p.bar[b].size)
			printf("  BAR%d %llu bytes at bus %#llx%s\n", b, (unsigned long long)p.bar[b].size,
			       (unsigned long long)p.bar[b].bus, p.bar[b].mmap ? ", mmappable" : "");
	if (p.nvme)
		printf("  NVMe CAP %#018llx (MQES %u, TO %u x 500 ms, DSTRD %u), VS %u.%u.%u\n",
		       (unsigned long long)p.nvme_cap, (unsigned)(p.nvme_cap & 0xffff) + 1,
		       (unsigned)(p.nvme_cap >> 24) & 0xff, (unsigned)(p.nvme_cap >> 32) & 0xf,
		       p.nvme_vs >> 16, (p.nvme_vs >> 8) & 0xff, p.nvme_vs & 0xff);
	printf("  DMA map of 1 MiB at IOVA %#llx: ok\n", (unsigned long long)p.dma_iova);
	return 0;
}

/* lend, doorbell: serve a function until a signal; the same options. */
static int cmd_serve(int argc, char **argv, const char *what,
		     int (*fn)(const char *, const char *, enum sio_vfio_mode,
			       volatile sig_atomic_t *, FILE *))
{
	enum sio_vfio_mode mode = SIO_VFIO_AUTO;
	const char *fabric = NULL;
	struct lend_ready ready = { 0 };
	bool lend = !strcmp(what, "lend");
	FILE *log = stdout;
	int i = mode_opt(argc, argv, &mode, &fabric, lend ? &ready : NULL), ret;

	if (i < 0) {
		usage(stderr);
		return 2;
	}
	if (ready.background)
		prog_background();	/* the parent returns once we lend */
	prog_catch_stop();	/* no SA_RESTART: the lender's poll wakes */
	/* the ready file, --background's parent and systemd (Type=notify)
	 * hear once the lender says it lends */
	if (lend)
		log = prog_ready_stream(stdout, "lending ", ready.file);
	ret = fn(fabric, argv[i], mode, &prog_stop, log);
	prog_notify_stopping();
	if (log != stdout)
		fclose(log);
	return ret ? fail(what) : 0;
}

int sio_tool_vfio(int argc, char **argv)
{
	const char *sub = argc > 1 ? argv[1] : NULL;

	optind = 0;	/* glibc: 0 restarts getopt afresh */
	if (!sub || !strcmp(sub, "-h") || !strcmp(sub, "--help") || !strcmp(sub, "help")) {
		usage(sub ? stdout : stderr);
		return sub ? 0 : 2;
	}
	if (!strcmp(sub, "list"))
		return cmd_list(argc - 1, argv + 1);
	if (!strcmp(sub, "bind") || !strcmp(sub, "unbind"))
		return sio_tool_bind("vfio", argc - 1, argv + 1, "vfio-pci");
	if (!strcmp(sub, "probe"))
		return cmd_probe(argc - 1, argv + 1);
	if (!strcmp(sub, "lend"))
		return cmd_serve(argc - 1, argv + 1, "lend", sio_vfio_lend);
	if (!strcmp(sub, "doorbell"))
		return cmd_serve(argc - 1, argv + 1, "doorbell", sio_vfio_doorbell);
	fprintf(stderr, "smartio vfio: unknown subcommand '%s'\n", sub);
	usage(stderr);
	return 2;
}
