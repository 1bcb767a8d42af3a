/* SPDX-License-Identifier: MIT */
/*
 * nvme-emu: an emulated NVMe controller as a device of a simulated fabric
 * node. Runs until SIGINT or SIGTERM, then unregisters the device. SIGUSR1
 * makes it fail with a fatal status (CSTS.CFS), for fault tests.
 */
#include <errno.h>
#include <getopt.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <smartio/smartio.h>
#include "parse.h"
#include "emu.h"
#include "ready.h"

static volatile sig_atomic_t stop;

static void on_signal(int sig)
{
	(void)sig;
	stop = 1;
}

static struct sio_nvme_emu *the_emu;

static void on_fail(int sig)
{
	(void)sig;
	sio_nvme_emu_fail(the_emu);
}

/* The controller's loop knows nothing of the fabric's life: watch it here. */
static void *watch_fabric(void *arg)
{
	struct sio_fabric *f = arg;

	while (!stop) {
		if (sio_fabric_alive(f)) {
			fprintf(stderr, "nvme-emu: %s; stopping\n", sio_errmsg());
			stop = 2;
			break;
		}
		usleep(100000);
	}
	return NULL;
}

static void usage(FILE *out)
{
	fprintf(out,
		"usage: nvme-emu [options]\n"
		"  --fabric NAME      fabric to join (default $SMARTIO_FABRIC)\n"
		"  --node N           node the controller is installed in (default $SMARTIO_NODE or 0)\n"
		"  --backing SPEC     FILE or ram:SIZE (default ram:64M)\n"
		"  --ns SIZE[:LBA]    add a namespace of SIZE bytes with 512 or 4096 B LBAs;\n"
		"                     repeat for more (default: one covering the backing store)\n"
		"  --lba BYTES        LBA size of the default namespace (512 or 4096)\n"
		"  --queues N         I/O queue pairs offered (default 64, at most 1024)\n"
		"  --mqes N           largest queue, entries (default 1024, at most 65536)\n"
		"  --cmb MIB          controller memory buffer in MiB, as BAR 2 (default 0: none)\n"
		"  --chassis          the controller sits in an expansion chassis behind a switch\n"
		"  --mdts N           maximum transfer, 4 KiB << N (default 5: 128 KiB; 1..10)\n"
		"  --dstrd N          doorbell stride, 4 << N bytes (default 0)\n"
		"  --io-depth N       file commands in flight (default 64)\n"
		"  --name LABEL       device label\n"
		"  --ready-file PATH  write the device id there once ready\n"
		"  --ns-state FILE    remember the namespaces there; a namespace added, removed or\n"
		"                     reshaped since the last run is a Namespace Attribute Changed event\n"
		"SIGUSR1 fails the controller (CSTS.CFS) until the host resets it.\n");
}

static int parse_u32(const char *opt, const char *s, uint32_t max, uint32_t *out)
{
	uint64_t v;

	if (sio_parse_u64(s, 0, max, &v)) {
		fprintf(stderr, "nvme-emu: %s: %s\n", opt, sio_errmsg());
		return -EINVAL;
	}
	*out = (uint32_t)v;
	return 0;
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

static int parse_ns(const char *s, struct sio_nvme_emu_config *cfg)
{
	char buf[64], *colon;
	uint64_t size;
	uint32_t lba = 512;

	if (cfg->nns >= SIO_NVME_EMU_MAX_NS) {
		fprintf(stderr, "nvme-emu: --ns: at most %d namespaces\n", SIO_NVME_EMU_MAX_NS);
		return -EINVAL;
	}
	snprintf(buf, sizeof(buf), "%s", s);
	colon = strchr(buf, ':');
	if (colon) {
		*colon = '\0';
		if (parse_u32("--ns LBA", colon + 1, 4096, &lba))
			return -EINVAL;
	}
	if (sio_nvme_emu_parse_size(buf, &size)) {
		fprintf(stderr, "nvme-emu: --ns: %s\n", sio_errmsg());
		return -EINVAL;
	}
	cfg->ns[cfg->nns].size = size;
	cfg->ns[cfg->nns].lba_size = lba;
	cfg->nns++;
	return 0;
}

int main(int argc, char **argv)
{
	enum { O_FABRIC = 256, O_NODE, O_BACKING, O_NS, O_LBA, O_QUEUES, O_MQES, O_CMB,
	       O_MDTS, O_DSTRD, O_DEPTH, O_NAME, O_READY, O_CHASSIS, O_NS_STATE };
	static const struct option opts[] = {
		{ "fabric", required_argument, 0, O_FABRIC },
		{ "node", required_argument, 0, O_NODE },
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
		{ "ready-file", required_argument, 0, O_READY },
		{ "chassis", no_argument, 0, O_CHASSIS },
		{ "ns-state", required_argument, 0, O_NS_STATE },
		{ "help", no_argument, 0, 'h' },
		{ 0, 0, 0, 0 },
	};
	struct sio_nvme_emu_config cfg;
	struct sio_nvme_emu *emu;
	struct sio_fabric *f;
	const char *fabric = NULL, *ready = NULL;
	uint32_t node = UINT32_MAX;
	struct sigaction sa;
	int c, rc;

	sio_nvme_emu_config_default(&cfg);
	while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
		rc = 0;
		switch (c) {
		case O_FABRIC: fabric = optarg; break;
		case O_NODE: rc = parse_u32("--node", optarg, SIO_MAX_NODES - 1, &node); break;
		case O_BACKING: cfg.backing = optarg; break;
		case O_NS: rc = parse_ns(optarg, &cfg); break;
		case O_LBA: rc = parse_u32("--lba", optarg, 4096, &cfg.lba_size); break;
		case O_QUEUES: rc = parse_u32("--queues", optarg, 65535, &cfg.max_qpairs); break;
		case O_MQES: rc = parse_u32("--mqes", optarg, 65536, &cfg.mqes); break;
		case O_CMB: rc = parse_u32("--cmb", optarg, 65535, &cfg.cmb_mib); break;
		case O_MDTS: rc = parse_u32("--mdts", optarg, 255, &cfg.mdts); break;
		case O_DSTRD: rc = parse_u32("--dstrd", optarg, 15, &cfg.dstrd); break;
		case O_DEPTH: rc = parse_u32("--io-depth", optarg, 65535, &cfg.io_depth); break;
		case O_NAME: cfg.name = optarg; break;
		case O_READY: ready = optarg; break;
		case O_CHASSIS: cfg.chassis = true; break;
		case O_NS_STATE: cfg.ns_state = optarg; break;
		case 'h': usage(stdout); return 0;
		default: usage(stderr); return 2;
		}
		if (rc)
			return 2;
	}
	if (optind < argc) {
		fprintf(stderr, "nvme-emu: unexpected argument '%s'\n", argv[optind]);
		usage(stderr);
		return 2;
	}
	if (check_ram(&cfg))
		return 2;

	rc = sio_nvme_emu_create(&cfg, &emu);
	if (rc) {
		fprintf(stderr, "nvme-emu: %s\n", sio_errmsg());
		return 1;
	}
	rc = sio_fabric_open(fabric, node == UINT32_MAX ? -1 : (int)node, &f);
	if (rc) {
		fprintf(stderr, "nvme-emu: join fabric %s: %s\n",
			fabric ? fabric : "$SMARTIO_FABRIC", sio_errmsg());
		sio_nvme_emu_destroy(emu);
		return 1;
	}
	rc = sio_nvme_emu_attach(emu, f);
	if (rc) {
		fprintf(stderr, "nvme-emu: %s\n", sio_errmsg());
		sio_nvme_emu_destroy(emu);
		sio_fabric_close(f);
		return 1;
	}

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_signal;
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	the_emu = emu;
	sa.sa_handler = on_fail;
	sigaction(SIGUSR1, &sa, NULL);

	/* before announcing ready: a script waiting on the file must not wait forever */
	if (ready && (rc = ready_file_write(ready, sio_nvme_emu_device_id(emu)))) {
		fprintf(stderr, "nvme-emu: --ready-file %s: %s\n", ready, strerror(-rc));
		sio_nvme_emu_destroy(emu);
		sio_fabric_close(f);
		return 1;
	}
	printf("nvme-emu: device %lld ready on node %d of fabric %s\n",
	       (long long)sio_nvme_emu_device_id(emu), sio_fabric_node_id(f), sio_fabric_name(f));
	fflush(stdout);

	pthread_t watcher;
	bool watching = !pthread_create(&watcher, NULL, watch_fabric, f);
	rc = sio_nvme_emu_run(emu, &stop);
	if (!stop)
		stop = 1;
	if (watching)
		pthread_join(watcher, NULL);
	sio_nvme_emu_destroy(emu);
	sio_fabric_close(f);
	return rc ? 1 : 0;	/* a destroyed fabric is an orderly stop */
}
