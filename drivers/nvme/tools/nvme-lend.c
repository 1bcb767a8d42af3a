/* SPDX-License-Identifier: MIT */
/*
 * nvme-lend: lend an NVMe controller of this host to a fabric, as `smartio
 * vfio lend` (or `smartio uio lend`) does, with the NVMe driver's
 * description of its doorbells (sio_nvme_describe_doorbells()): on a fabric of
 * several kernels, the lender's relay forwards the queues' doorbells of
 * borrowers that no window reaches BAR0 from. libsmartio itself knows no
 * device class, so a controller lent without it is not relayed.
 */
#include <stdio.h>
#include <string.h>
#include <smartio/nvme.h>
#include <smartio/vfio.h>
#include "prog.h"

static void usage(FILE *out)
{
	fprintf(out,
		"usage: nvme-lend [options] BDF\n"
		"Lend the NVMe controller at PCI address BDF (bound to vfio-pci, or with --uio\n"
		"to uio_pci_generic) to a fabric until SIGINT or SIGTERM, describing its\n"
		"doorbells for the relay that serves borrowers of other kernels.\n\n"
		"  --fabric NAME     fabric to join (default $SMARTIO_FABRIC)\n"
		"  --uio             the controller is bound to uio_pci_generic (no IOMMU)\n"
		"  --type1           open it through a VFIO type1 container\n"
		"  --iommufd         open it through /dev/iommu\n"
		PROG_HELP
		"Exit status: 0 stopped, 1 failed, 2 usage error.\n");
}

int main(int argc, char **argv)
{
	enum { O_FABRIC = 256, O_UIO, O_TYPE1, O_IOMMUFD };
	static const struct option opts[] = {
		{ "fabric", required_argument, 0, O_FABRIC },
		{ "uio", no_argument, 0, O_UIO },
		{ "type1", no_argument, 0, O_TYPE1 },
		{ "iommufd", no_argument, 0, O_IOMMUFD },
		PROG_LONGOPTS,
		{ 0, 0, 0, 0 },
	};
	const struct sio_lend_opts lo = { .doorbells = sio_nvme_describe_doorbells };
	enum sio_vfio_mode mode = SIO_VFIO_AUTO;
	const char *fabric = NULL, *bdf;
	bool uio = false;
	FILE *log;
	int c, rc;

	prog_init("nvme-lend", usage);
	while ((c = prog_getopt(argc, argv, "h", opts)) != -1) {
		switch (c) {
		case O_FABRIC: fabric = optarg; break;
		case O_UIO: uio = true; break;
		case O_TYPE1: mode = SIO_VFIO_TYPE1; break;
		case O_IOMMUFD: mode = SIO_VFIO_IOMMUFD; break;
		default: prog_usage_error("unhandled option");
		}
	}
	if (optind != argc - 1)
		prog_usage_error("one PCI address (BDF) is wanted");
	bdf = argv[optind];
	prog_catch_stop();	/* no SA_RESTART: the lender's poll wakes */
	/* under systemd (Type=notify): ready once the lender says it lends */
	log = prog_ready_stream(stdout, "lending ", NULL);
	rc = uio ? sio_uio_lend_opts(fabric, bdf, &lo, &prog_stop, log)
		 : sio_vfio_lend_opts(fabric, bdf, mode, &lo, &prog_stop, log);
	prog_notify_stopping();
	if (log != stdout)
		fclose(log);
	return rc ? prog_fail("%s", sio_errmsg()) : PROG_OK;
}
