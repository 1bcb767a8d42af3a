/* SPDX-License-Identifier: MIT */
/*
 * edu-emu: a model of QEMU's edu device (1234:11e8) as a device of a
 * simulated fabric node. Runs until SIGINT or SIGTERM, then unregisters the
 * device: its borrowers get SIO_EV_DEVICE_GONE, even in the middle of a DMA.
 */
#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <smartio/smartio.h>
#include "parse.h"
#include "edu-model.h"
#include "ready.h"

static volatile sig_atomic_t stop;

static void on_signal(int sig)
{
	(void)sig;
	stop = 1;
}

static void usage(FILE *out)
{
	fprintf(out,
		"usage: edu-emu [options]\n"
		"  --fabric NAME      fabric to join (default $SMARTIO_FABRIC)\n"
		"  --node N           node the device is installed in (default $SMARTIO_NODE or 0)\n"
		"  --dma-bits N       DMA mask of N bits, 12..64 (default 28, as QEMU's edu)\n"
		"  --dma-ms MS        each DMA takes MS ms, 0..60000 (QEMU's timer: 100; default 0)\n"
		"  --poll-ms MS       look at the registers only every MS ms, 1..60000 (default:\n"
		"                     adaptive, from a yield up to 1 ms when idle)\n"
		"  --chassis          the device sits in an expansion chassis behind a switch\n"
		"  --name LABEL       device label (default edu)\n"
		"  --ready-file PATH  write the device id there once ready\n");
}

int main(int argc, char **argv)
{
	enum { O_FABRIC = 256, O_NODE, O_BITS, O_MS, O_POLL, O_CHASSIS, O_NAME, O_READY };
	static const struct option opts[] = {
		{ "fabric", required_argument, 0, O_FABRIC },
		{ "node", required_argument, 0, O_NODE },
		{ "dma-bits", required_argument, 0, O_BITS },
		{ "dma-ms", required_argument, 0, O_MS },
		{ "poll-ms", required_argument, 0, O_POLL },
		{ "chassis", no_argument, 0, O_CHASSIS },
		{ "name", required_argument, 0, O_NAME },
		{ "ready-file", required_argument, 0, O_READY },
		{ "help", no_argument, 0, 'h' },
		{ 0, 0, 0, 0 },
	};
	struct sio_edu_emu_config cfg = { 0 };
	const char *fabric = NULL, *ready = NULL, *opt = NULL;
	struct sio_edu_emu *e;
	struct sio_fabric *f;
	struct sigaction sa = { .sa_handler = on_signal };
	uint64_t node = UINT64_MAX, v;
	int c, rc = 0;

	while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
		switch (c) {
		case O_FABRIC: fabric = optarg; break;
		case O_NODE: rc = sio_parse_u64(optarg, 0, SIO_MAX_NODES - 1, &node); opt = "--node"; break;
		case O_BITS:
			rc = sio_parse_u64(optarg, 12, 64, &v);
			opt = "--dma-bits";
			cfg.dma_mask = v == 64 ? UINT64_MAX : (1ull << v) - 1;
			break;
		case O_MS:
			rc = sio_parse_u64(optarg, 0, 60000, &v);
			opt = "--dma-ms";
			cfg.dma_ms = (uint32_t)v;
			break;
		case O_POLL:
			rc = sio_parse_u64(optarg, 1, 60000, &v);
			opt = "--poll-ms";
			cfg.poll_ms = (uint32_t)v;
			break;
		case O_CHASSIS: cfg.chassis = true; break;
		case O_NAME: cfg.name = optarg; break;
		case O_READY: ready = optarg; break;
		case 'h': usage(stdout); return 0;
		default: usage(stderr); return 2;
		}
		if (rc) {
			fprintf(stderr, "edu-emu: %s: %s\n", opt, sio_errmsg());
			return 2;
		}
	}
	if (optind < argc) {
		fprintf(stderr, "edu-emu: unexpected argument '%s'\n", argv[optind]);
		usage(stderr);
		return 2;
	}
	if (sio_fabric_open(fabric, node == UINT64_MAX ? -1 : (int)node, &f)) {
		fprintf(stderr, "edu-emu: join fabric %s: %s\n", fabric ? fabric : "$SMARTIO_FABRIC",
			sio_errmsg());
		return 1;
	}
	if (sio_edu_emu_create(f, &cfg, &e)) {
		fprintf(stderr, "edu-emu: %s\n", sio_errmsg());
		sio_fabric_close(f);
		return 1;
	}
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	if (ready && (rc = ready_file_write(ready, sio_edu_emu_device_id(e)))) {
		fprintf(stderr, "edu-emu: --ready-file %s: %s\n", ready, strerror(-rc));
		stop = 1;
	} else {
		printf("edu-emu: device %u ready on node %d of fabric %s\n", sio_edu_emu_device_id(e),
		       sio_fabric_node_id(f), sio_fabric_name(f));
		fflush(stdout);
	}
	sio_edu_emu_run(e, &stop);
	sio_edu_emu_destroy(e);
	sio_fabric_close(f);
	return rc ? 1 : 0;
}
