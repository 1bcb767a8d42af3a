/* SPDX-License-Identifier: MIT */
/*
 * `smartio uio`: bind a function to uio_pci_generic (or give it back) and
 * lend it to a fabric, on a host without an IOMMU (docs/uio.md). Borrowers
 * reach it as they reach a vfio device.
 */
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>

#include <smartio/smartio.h>
#include <smartio/vfio.h>
#include "prog.h"
#include "smartio-vfio.h"

static void usage(FILE *o)
{
	fprintf(o,
		"usage: smartio uio bind [--force] BDF\n"
		"                                     bind to uio_pci_generic (root); refused\n"
		"                                     as smartio vfio bind refuses (see its\n"
		"                                     --help); --force is dangerous\n"
		"       smartio uio unbind BDF        give it back to its kernel driver (root)\n"
		"       smartio uio lend BDF [--fabric NAME] [--ready-file F] [--background]\n"
		"                                     --ready-file: written with our pid once\n"
		"                                     lending; --background: return then\n"
		"For hosts without an IOMMU (with one, use smartio vfio). Lending needs root,\n"
		"huge pages reserved and hugetlbfs mounted: the device is given the physical\n"
		"addresses of the fabric's segments, which must be on huge pages.\n");
}

static int cmd_lend(int argc, char **argv)
{
	static const struct option lo[] = {
		{ "fabric", required_argument, NULL, 'f' },
		{ "ready-file", required_argument, NULL, 'r' },
		{ "background", no_argument, NULL, 'b' },
		{ "help", no_argument, NULL, 'h' },
		{ 0 }
	};
	const char *fabric = NULL, *ready = NULL;
	bool background = false;
	FILE *log;
	int o, ret;

	while ((o = getopt_long(argc, argv, "f:", lo, NULL)) != -1) {
		if (o == 'f') {
			fabric = optarg;
		} else if (o == 'r') {
			ready = optarg;
		} else if (o == 'b') {
			background = true;
		} else if (o == 'h') {
			usage(stdout);	/* smartio uio lend --help */
			return 0;
		} else {
			if (o == '?')
				prog_suggest_option(argc, argv, lo);
			usage(stderr);
			return 2;
		}
	}
	if (optind > argc - 1) {
		fprintf(stderr, "smartio uio lend: which function? (a PCI address such as 0000:00:04.0)\n");
		return 2;
	}
	if (optind < argc - 1) {
		fprintf(stderr, "smartio uio lend: stray argument '%s'\n", argv[optind + 1]);
		return 2;
	}
	if (background)
		prog_background();	/* the parent returns once we lend */
	prog_catch_stop();	/* no SA_RESTART: the lender's poll wakes */
	/* the ready file, --background's parent and systemd (Type=notify)
	 * hear once the lender says it lends */
	log = prog_ready_stream(stdout, "lending ", ready);
	ret = sio_uio_lend(fabric, argv[optind], &prog_stop, log);
	prog_notify_stopping();
	if (log != stdout)
		fclose(log);
	if (ret) {
		fprintf(stderr, "smartio uio lend: %s\n", sio_errmsg());
		return 1;
	}
	return 0;
}

int sio_tool_uio(int argc, char **argv)
{
	const char *sub = argc > 1 ? argv[1] : NULL;

	optind = 0;	/* glibc: 0 restarts getopt afresh */
	if (!sub || !strcmp(sub, "-h") || !strcmp(sub, "--help") || !strcmp(sub, "help")) {
		usage(sub ? stdout : stderr);
		return sub ? 0 : 2;
	}
	if (!strcmp(sub, "lend"))
		return cmd_lend(argc - 1, argv + 1);
	if (strcmp(sub, "bind") && strcmp(sub, "unbind")) {
		fprintf(stderr, "smartio uio: unknown subcommand '%s'\n", sub);
		usage(stderr);
		return 2;
	}
	return sio_tool_bind("uio", argc - 1, argv + 1, "uio_pci_generic");
}
