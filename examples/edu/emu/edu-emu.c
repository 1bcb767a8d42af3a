/* SPDX-License-Identifier: MIT */
/*
 * edu-emu: a model of QEMU's edu device (1234:11e8) as a device of a
 * simulated fabric node. Runs until SIGINT or SIGTERM, then unregisters the
 * device: its borrowers get SIO_EV_DEVICE_GONE, even in the middle of a DMA.
 */
#include <stdio.h>
#include <stdlib.h>
#include <smartio/smartio.h>
#include "edu-model.h"
#include "prog.h"

static void usage(FILE *out)
{
	fprintf(out,
		"usage: edu-emu [options]\n"
		"A model of QEMU's edu device lent by a node of a simulated fabric. Runs until\n"
		"SIGINT or SIGTERM, then unregisters the device.\n\n"
		PROG_SERVICE_HELP
		"                    (the device id)\n"
		"  --dma-bits N      DMA mask of N bits, 12..64 (default 28, as QEMU's edu)\n"
		"  --dma-ms MS       each DMA takes MS ms, 0..60000 (QEMU's timer: 100; default 0)\n"
		"  --poll-ms MS      look at the registers only every MS ms, 1..60000 (default:\n"
		"                    adaptive, from a yield up to 1 ms when idle)\n"
		"  --chassis         the device sits in an expansion chassis behind a switch\n"
		"  --name LABEL      device label (default edu)\n"
		PROG_HELP
		"Exit status: 0 stopped, 1 failed, 2 usage error.\n");
}

/* Lend the model @cfg describes until stopped. */
static int serve(const struct sio_edu_emu_config *cfg, const struct prog_service *svc)
{
	struct sio_edu_emu *e;
	struct sio_fabric *f;
	char status[128];
	int rc;

	if (prog_join(svc->fabric, svc->node, &f))
		return PROG_FAIL;
	if (sio_edu_emu_create(f, cfg, &e)) {
		prog_fail("%s", sio_errmsg());
		sio_fabric_close(f);
		return PROG_FAIL;
	}
	prog_catch_stop();
	snprintf(status, sizeof(status), "device %u on node %d of fabric %s",
		 sio_edu_emu_device_id(e), sio_fabric_node_id(f), sio_fabric_name(f));
	rc = prog_ready(svc->ready_file, sio_edu_emu_device_id(e), status);
	if (rc) {
		prog_stop = 1;
	} else {
		printf("edu-emu: device %u ready on node %d of fabric %s\n", sio_edu_emu_device_id(e),
		       sio_fabric_node_id(f), sio_fabric_name(f));
		fflush(stdout);
	}
	sio_edu_emu_run(e, &prog_stop);	/* it watches the fabric itself */
	prog_notify_stopping();
	sio_edu_emu_destroy(e);
	sio_fabric_close(f);
	return rc;
}

int main(int argc, char **argv)
{
	enum { O_BITS = 256, O_MS, O_POLL, O_CHASSIS, O_NAME };
	static const struct option opts[] = {
		PROG_SERVICE_LONGOPTS,
		{ "dma-bits", required_argument, 0, O_BITS },
		{ "dma-ms", required_argument, 0, O_MS },
		{ "poll-ms", required_argument, 0, O_POLL },
		{ "chassis", no_argument, 0, O_CHASSIS },
		{ "name", required_argument, 0, O_NAME },
		PROG_LONGOPTS,
		{ 0, 0, 0, 0 },
	};
	struct sio_edu_emu_config cfg = { 0 };
	struct prog_service svc;
	uint64_t v;
	int c;

	prog_init("edu-emu", usage);
	prog_service_init(&svc);
	while ((c = prog_getopt(argc, argv, "h", opts)) != -1) {
		switch (c) {
		case O_BITS:
			v = prog_u64("--dma-bits", optarg, 12, 64);
			cfg.dma_mask = v == 64 ? UINT64_MAX : (1ull << v) - 1;
			break;
		case O_MS: cfg.dma_ms = (uint32_t)(prog_time("--dma-ms", optarg, 1e-3, 0, 60) * 1e3 + 0.5);
			break;
		case O_POLL:
			cfg.poll_ms = (uint32_t)(prog_time("--poll-ms", optarg, 1e-3, 1e-3, 60) * 1e3 + 0.5);
			break;
		case O_CHASSIS: cfg.chassis = true; break;
		case O_NAME: cfg.name = optarg; break;
		default:
			if (!prog_service_opt(&svc, c, optarg))
				prog_usage_error("unhandled option");
		}
	}
	prog_no_args(argc, argv);
	if (svc.background)
		prog_background();
	return serve(&cfg, &svc);
}
