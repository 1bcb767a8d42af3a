/* SPDX-License-Identifier: MIT */
/*
 * nvme-emu: an emulated NVMe controller as a device of a simulated fabric
 * node. Runs until SIGINT or SIGTERM, then unregisters the device. SIGUSR1
 * makes it fail with a fatal status (CSTS.CFS), for fault tests.
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <smartio/smartio.h>
#include "parse.h"
#include "emu.h"
#include "prog.h"

static struct sio_nvme_emu *the_emu;

static void on_fail(int sig)
{
	(void)sig;
	sio_nvme_emu_fail(the_emu);
}

static void usage(FILE *out)
{
	fprintf(out,
		"usage: nvme-emu [options]\n"
		"An emulated NVMe controller lent by a node of a simulated fabric. Runs until\n"
		"SIGINT or SIGTERM, then unregisters the device.\n\n"
		PROG_SERVICE_HELP
		"                    (the device id)\n"
		"  --backing SPEC    FILE or ram:SIZE (default ram:64M)\n"
		"  --ns SIZE[:LBA]   add a namespace of SIZE bytes with 512 or 4096 B LBAs;\n"
		"                    repeat for more (default: one covering the backing store)\n"
		"  --lba BYTES       LBA size of the default namespace (512 or 4096)\n"
		"  --queues N        I/O queue pairs offered (default 64, at most 1024)\n"
		"  --mqes N          largest queue, entries (default 1024, at most 65536)\n"
		"  --cmb SIZE        controller memory buffer, as BAR 2: 16m, 1g (default 0:\n"
		"                    none)\n"
		"  --chassis         the controller sits in an expansion chassis behind a switch\n"
		"  --mdts N          maximum transfer, 4 KiB << N (default 5: 128 KiB; 1..10)\n"
		"  --dstrd N         doorbell stride, 4 << N bytes (default 0)\n"
		"  --io-depth N      file commands in flight (default 64)\n"
		"  --name LABEL      device label\n"
		"  --ns-state FILE   remember the namespaces there; a namespace added, removed or\n"
		"                    reshaped since the last run is a Namespace Attribute Changed event\n"
		"  --cap-to N        CAP.TO, in 500 ms units: how long a host waits for the\n"
		"                    controller at each reset step (default 15: 7.5 s; 1..255)\n"
		"  --lost-dma-ok     admin data (Identify, a log page) lost on a link that is\n"
		"                    down completes with success, as QEMU's controller does\n"
		"                    (default: a data transfer error)\n"
		PROG_HELP
		"SIGUSR1 fails the controller (CSTS.CFS) until the host resets it.\n"
		"Exit status: 0 stopped, 1 failed, 2 usage error.\n");
}

/* What RAM a store may take: MemAvailable. The store fills lazily, so a
 * larger one would start and then be killed by the OOM killer mid-run. */
static uint64_t ram_available(void)
{
	char line[128];
	unsigned long long kb;
	uint64_t v = (uint64_t)sysconf(_SC_PHYS_PAGES) * (uint64_t)sysconf(_SC_PAGESIZE);
	FILE *fp = fopen("/proc/meminfo", "re");

	while (fp && fgets(line, sizeof(line), fp))
		if (sscanf(line, "MemAvailable: %llu kB", &kb) == 1)
			v = kb * 1024;
	if (fp)
		fclose(fp);
	return v;
}

/* --backing ram:SIZE and the --ns sizes against the RAM there is. */
static int check_ram(const struct sio_nvme_emu_config *cfg)
{
	uint64_t size, ns = 0, avail;

	if (strncmp(cfg->backing, "ram:", 4))
		return 0;
	if (sio_parse_size(cfg->backing + 4, 0, UINT64_MAX, &size)) {
		fprintf(stderr, "nvme-emu: --backing '%s': %s\n", cfg->backing, sio_errmsg());
		return -EINVAL;
	}
	for (int i = 0; i < cfg->nns; i++)
		ns = cfg->ns[i].size > UINT64_MAX - ns ? UINT64_MAX : ns + cfg->ns[i].size;
	avail = ram_available();
	if (size > avail) {
		fprintf(stderr, "nvme-emu: --backing '%s': %llu bytes is more than the %llu bytes "
			"of memory available\n", cfg->backing, (unsigned long long)size,
			(unsigned long long)avail);
		return -ENOMEM;
	}
	if (ns > avail) {	/* a RAM store grows to hold its namespaces */
		fprintf(stderr, "nvme-emu: --ns: namespaces of %llu bytes in all are more than the "
			"%llu bytes of memory available to --backing '%s'\n", (unsigned long long)ns,
			(unsigned long long)avail, cfg->backing);
		return -ENOMEM;
	}
	return 0;
}

static void parse_ns(const char *s, struct sio_nvme_emu_config *cfg)
{
	char buf[64], *colon;
	uint64_t size;
	uint32_t lba = 512;

	if (cfg->nns >= SIO_NVME_EMU_MAX_NS)
		prog_usage_error("--ns: at most %d namespaces", SIO_NVME_EMU_MAX_NS);
	snprintf(buf, sizeof(buf), "%s", s);
	colon = strchr(buf, ':');
	if (colon) {
		*colon = '\0';
		lba = (uint32_t)prog_bytes("--ns LBA", colon + 1, 512, 4096, 0, NULL);
		if (lba != 512 && lba != 4096)
			prog_usage_error("--ns %s: LBA size %u is not 512 or 4096", s, lba);
	}
	if (sio_nvme_emu_parse_size(buf, &size))
		prog_usage_error("--ns: %s", sio_errmsg());
	cfg->ns[cfg->nns].size = size;
	cfg->ns[cfg->nns].lba_size = lba;
	cfg->nns++;
}

/* Lend the controller @cfg describes until stopped. */
static int serve(struct sio_nvme_emu_config *cfg, const struct prog_service *svc)
{
	struct sigaction sa = { .sa_handler = on_fail };
	struct sio_nvme_emu *emu;
	struct sio_fabric *f;
	char status[128];
	int rc;

	if (check_ram(cfg))
		return PROG_USAGE;
	if (sio_nvme_emu_create(cfg, &emu))
		return prog_fail("%s", sio_errmsg());
	if (prog_join(svc->fabric, svc->node, &f)) {
		sio_nvme_emu_destroy(emu);
		return PROG_FAIL;
	}
	if (sio_nvme_emu_attach(emu, f)) {
		prog_fail("%s", sio_errmsg());
		sio_nvme_emu_destroy(emu);
		sio_fabric_close(f);
		return PROG_FAIL;
	}
	prog_catch_stop();
	the_emu = emu;
	sigaction(SIGUSR1, &sa, NULL);
	snprintf(status, sizeof(status), "device %lld on node %d of fabric %s",
		 (long long)sio_nvme_emu_device_id(emu), sio_fabric_node_id(f), sio_fabric_name(f));
	/* before announcing ready: a script waiting on the file must not wait forever */
	if (prog_ready(svc->ready_file, sio_nvme_emu_device_id(emu), status)) {
		sio_nvme_emu_destroy(emu);
		sio_fabric_close(f);
		return PROG_FAIL;
	}
	printf("nvme-emu: device %lld ready on node %d of fabric %s\n", (long long)sio_nvme_emu_device_id(emu),
		       sio_fabric_node_id(f), sio_fabric_name(f));
	fflush(stdout);
	prog_watch_fabric(f);
	rc = sio_nvme_emu_run(emu, &prog_stop);
	prog_notify_stopping();
	prog_unwatch_fabric();
	sio_nvme_emu_destroy(emu);
	sio_fabric_close(f);
	return rc ? PROG_FAIL : PROG_OK;	/* a destroyed fabric is an orderly stop */
}

int main(int argc, char **argv)
{
	enum { O_BACKING = 256, O_NS, O_LBA, O_QUEUES, O_MQES, O_CMB,
	       O_MDTS, O_DSTRD, O_DEPTH, O_NAME, O_CHASSIS, O_NS_STATE, O_CAP_TO,
	       O_LOST_DMA_OK };
	static const struct option opts[] = {
		PROG_SERVICE_LONGOPTS,
		{ "backing", required_argument, 0, O_BACKING },
		{ "ns", required_argument, 0, O_NS },
		{ "lba", required_argument, 0, O_LBA },
		{ "queues", required_argument, 0, O_QUEUES },
		{ "mqes", required_argument, 0, O_MQES },
		{ "cmb", required_argument, 0, O_CMB },
		{ "mdts", required_argument, 0, O_MDTS },
		{ "dstrd", required_argument, 0, O_DSTRD },
		{ "io-depth", required_argument, 0, O_DEPTH },
		{ "name", required_argument, 0, O_NAME },
		{ "chassis", no_argument, 0, O_CHASSIS },
		{ "ns-state", required_argument, 0, O_NS_STATE },
		{ "cap-to", required_argument, 0, O_CAP_TO },
		{ "lost-dma-ok", no_argument, 0, O_LOST_DMA_OK },
		PROG_LONGOPTS,
		{ 0, 0, 0, 0 },
	};
	struct sio_nvme_emu_config cfg;
	struct prog_service svc;
	int c;

	prog_init("nvme-emu", usage);
	prog_service_init(&svc);
	sio_nvme_emu_config_default(&cfg);
	while ((c = prog_getopt(argc, argv, "h", opts)) != -1) {
		switch (c) {
		case O_BACKING: cfg.backing = optarg; break;
		case O_NS: parse_ns(optarg, &cfg); break;
		case O_LBA:
			cfg.lba_size = (uint32_t)prog_bytes("--lba", optarg, 512, 4096, 0, NULL);
			if (cfg.lba_size != 512 && cfg.lba_size != 4096)
				prog_usage_error("--lba: LBA size %s is not 512 or 4096", optarg);
			break;
		case O_CAP_TO: cfg.cap_to = prog_u32("--cap-to", optarg, 1, 255); break;
		case O_LOST_DMA_OK: cfg.lost_dma_ok = true; break;
		case O_QUEUES: cfg.max_qpairs = prog_u32("--queues", optarg, 0, 65535); break;
		case O_MQES: cfg.mqes = prog_u32("--mqes", optarg, 0, 65536); break;
		case O_CMB: cfg.cmb_mib = prog_mib("--cmb", optarg, 65535); break;
		case O_MDTS: cfg.mdts = prog_u32("--mdts", optarg, 0, 255); break;
		case O_DSTRD: cfg.dstrd = prog_u32("--dstrd", optarg, 0, 15); break;
		case O_DEPTH: cfg.io_depth = prog_u32("--io-depth", optarg, 0, 65535); break;
		case O_NAME: cfg.name = optarg; break;
		case O_CHASSIS: cfg.chassis = true; break;
		case O_NS_STATE: cfg.ns_state = optarg; break;
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
