/* SPDX-License-Identifier: MIT */
/*
 * edu-lend: lend QEMU's edu device of this host (bound to vfio-pci) to a
 * fabric, as `smartio vfio lend` does, with the edu driver's description of
 * its doorbells (edu_doorbells()): on a fabric of several kernels, the
 * lender's relay forwards the interrupt raise and acknowledge registers of
 * borrowers that no window reaches BAR0 from, and shows them ID to
 * IRQ_STATUS. On the public API only.
 */
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <smartio/smartio.h>
#include <smartio/vfio.h>
#include "edu.h"

static volatile sig_atomic_t stop;

static void on_stop(int sig)
{
	(void)sig;
	stop = 1;
}

static void usage(FILE *out)
{
	fprintf(out,
		"usage: edu-lend [options] BDF\n"
		"Lend the edu device at PCI address BDF, bound to vfio-pci, to a fabric until\n"
		"SIGINT or SIGTERM, describing its doorbells for the relay that serves borrowers\n"
		"of other kernels (edu-dma --ring drives it from there).\n"
		"  --fabric NAME    fabric to join (default $SMARTIO_FABRIC)\n"
		"  --help, --version\n"
		"Exit status: 0 stopped, 1 failed, 2 usage error.\n");
}

int main(int argc, char **argv)
{
	enum { O_FABRIC = 256, O_VERSION };
	static const struct option opts[] = {
		{ "fabric", required_argument, 0, O_FABRIC }, { "help", no_argument, 0, 'h' },
		{ "version", no_argument, 0, O_VERSION }, { 0, 0, 0, 0 },
	};
	const struct sio_lend_opts lo = { .doorbells = edu_doorbells };
	/* no SA_RESTART: the lender's poll wakes to see the stop */
	struct sigaction sa = { .sa_handler = on_stop };
	const char *fabric = NULL;
	int c;

	while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
		switch (c) {
		case O_FABRIC: fabric = optarg; break;
		case 'h': usage(stdout); return 0;
		case O_VERSION: printf("edu-lend (smartio) %s\n", EDU_DMA_VERSION); return 0;
		default: usage(stderr); return 2;
		}
	}
	if (optind != argc - 1) {
		fprintf(stderr, "edu-lend: one PCI address (BDF) is wanted\n");
		return 2;
	}
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	setvbuf(stdout, NULL, _IOLBF, 0);
	if (sio_vfio_lend_opts(fabric, argv[optind], SIO_VFIO_AUTO, &lo, &stop, stdout)) {
		fprintf(stderr, "edu-lend: %s\n", sio_errmsg());
		return 1;
	}
	return 0;
}
