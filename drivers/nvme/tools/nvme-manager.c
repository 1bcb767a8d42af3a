/* SPDX-License-Identifier: MIT */
/*
 * nvme-manager: take an NVMe controller, reset it, and share it at queue
 * level with nvme-client processes anywhere on the fabric.
 */

#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <smartio/nvme.h>
#include "tool.h"

static volatile sig_atomic_t stop;

static void on_signal(int sig)
{
	(void)sig;
	stop = 1;
}

#define REATTACH_NS	30000000000ull	/* how long a vanished controller is waited for */

/*
 * The controller @di went away. Wait, bounded, for one of the same name on
 * the same node (a restarted emulator: same backing, a new device id; or
 * the same device once its link is back) and start serving it.
 */
static int reattach(struct sio_fabric *f, struct sio_device_info *di,
		    const struct sio_nvme_manager_opts *mo, struct sio_nvme_manager **m)
{
	struct timespec ts;
	uint64_t now, end;
	int n;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	end = (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec + REATTACH_NS;
	fprintf(stderr, "nvme-manager: waiting up to %llu s for controller '%s' on node %d to come back\n",
		(unsigned long long)(REATTACH_NS / 1000000000ull), di->name, di->lender);
	while (!stop) {
		struct sio_device_info l[64];

		if (sio_fabric_alive(f)) {
			fprintf(stderr, "nvme-manager: %s; stopping\n", sio_errmsg());
			return -ESHUTDOWN;
		}
		n = sio_device_list(f, 0x010802, 0xffffff, l, 64);
		for (int i = 0; i < n && i < 64; i++) {
			if (strcmp(l[i].name, di->name) || l[i].lender != di->lender)
				continue;
			if (!sio_nvme_manager_start(f, l[i].id, mo, m)) {
				fprintf(stderr, "nvme-manager: controller '%s' is back as device %u; serving it\n",
					di->name, l[i].id);
				*di = l[i];
				return 0;
			}
		}
		clock_gettime(CLOCK_MONOTONIC, &ts);
		now = (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
		if (now >= end)
			break;
		usleep(200000);
	}
	if (!stop)
		fprintf(stderr, "nvme-manager: controller '%s' did not come back; giving up\n", di->name);
	return -ENODEV;
}

/*
 * --standby: wait until no manager serves the device, then take it over.
 * The state a manager needs is kept on the lender's node, so the
 * successor may run on any node; a start refused with -EBUSY means the
 * active manager still serves.
 */
static int standby(struct sio_fabric *f, const struct sio_device_info *di,
		   const struct sio_nvme_manager_opts *mo, struct sio_nvme_manager **m)
{
	int ret;

	fprintf(stderr, "nvme-manager: standing by on node %d: taking device %u over when "
		"its manager stops serving\n", sio_fabric_node_id(f), di->id);
	while (!stop) {
		ret = sio_nvme_manager_start(f, di->id, mo, m);
		if (ret != -EBUSY)
			return ret;
		if (sio_fabric_alive(f))
			return -ESHUTDOWN;
		usleep(100000);
	}
	return sio_err_set(EINTR, "stopped while standing by");
}

static void usage(FILE *o)
{
	fprintf(o, "usage: nvme-manager [options]\n"
		"Reset an NVMe controller and serve its I/O queues to nvme-client\n"
		"processes on any node. Runs until SIGINT or SIGTERM.\n\n"
		TOOL_COMMON_HELP
		"  --ready-file F  write our pid to F once serving\n"
		"  --io-queues N   I/O queue pairs to ask the controller for\n"
		"  --arbitration rr|wrr  SQ arbitration (default rr)\n"
		"  --no-cmb        leave the controller memory buffer off\n"
		"  --no-shadow-doorbells  leave Doorbell Buffer Config unused: clients\n"
		"                  write every doorbell to BAR0\n"
		"  --quiet         do not log client arrivals and departures\n"
		"  --standby       wait while another manager serves the device, then\n"
		"                  take it over (after a crash: no reset, clients kept)\n"
		"  --help\n");
}

int main(int argc, char **argv)
{
	static const struct option lo[] = {
		TOOL_COMMON_LONGOPTS,
		{ "ready-file", required_argument, NULL, 'r' },
		{ "io-queues", required_argument, NULL, 'q' },
		{ "arbitration", required_argument, NULL, 'a' },
		{ "no-cmb", no_argument, NULL, 'c' },
		{ "no-shadow-doorbells", no_argument, NULL, 'd' },
		{ "quiet", no_argument, NULL, 's' },
		{ "standby", no_argument, NULL, 'S' },
		{ "help", no_argument, NULL, 'h' },
		{ 0 }
	};
	struct sio_nvme_manager_opts mo = {
		.ctrl = { .arbitration = NVME_CC_AMS_RR, .enable_cmb = true }, .log = stderr };
	struct sio_nvme_manager_stats st;
	struct sio_device_info di;
	struct tool_common t;
	struct sio_nvme_manager *m;
	struct sio_fabric *f;
	struct sigaction sa;
	const char *ready = NULL;
	bool wait_standby = false;
	uint64_t v;
	int c, ret;

	tool_init(&t, "nvme-manager");
	while ((c = tool_getopt(&t, argc, argv, lo)) != -1) {
		if (c == TOOL_OPT_BAD)
			return 2;
		switch (c) {
		case 'r':
			ready = optarg;
			break;
		case 'q':
			if (tool_u64(&t, "--io-queues", optarg, 1, 65535, &v))
				return 2;
			mo.ctrl.io_queues = (uint32_t)v;
			break;
		case 'a':
			if (!strcmp(optarg, "rr"))
				mo.ctrl.arbitration = NVME_CC_AMS_RR;
			else if (!strcmp(optarg, "wrr"))
				mo.ctrl.arbitration = NVME_CC_AMS_WRRU;
			else {
				fprintf(stderr, "nvme-manager: --arbitration '%s' is not rr "
					"or wrr\n", optarg);
				return 2;
			}
			break;
		case 'c':
			mo.ctrl.enable_cmb = false;
			break;
		case 'd':
			mo.ctrl.no_shadow_doorbells = true;
			break;
		case 's':
			mo.log = NULL;
			break;
		case 'S':
			wait_standby = true;
			break;
		case 'h':
			usage(stdout);
			return 0;
		default:
			usage(stderr);
			return 2;
		}
	}
	if (optind < argc) {
		fprintf(stderr, "nvme-manager: unexpected argument '%s'\n", argv[optind]);
		return 2;
	}
	if (tool_open(&t, &f))
		return 1;
	if (sio_nvme_find_device(f, t.device, &di)) {
		fprintf(stderr, "nvme-manager: %s\n", sio_errmsg());
		sio_fabric_close(f);
		return 1;
	}
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_signal;
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	if (wait_standby)
		ret = standby(f, &di, &mo, &m);
	else
		ret = sio_nvme_manager_start(f, di.id, &mo, &m);
	if (ret && (stop || ret == -ESHUTDOWN)) {	/* stopped while standing by */
		sio_fabric_close(f);
		return 0;
	}
	if (ret) {
		fprintf(stderr, "nvme-manager: %s\n", sio_errmsg());
		sio_fabric_close(f);
		return 1;
	}
	if (ready) {
		FILE *rf = fopen(ready, "w");

		if (!rf || fprintf(rf, "%d\n", (int)getpid()) < 0 || fclose(rf)) {
			fprintf(stderr, "nvme-manager: cannot write ready file %s: %s\n",
				ready, strerror(errno));
			sio_nvme_manager_close(m);
			sio_fabric_close(f);
			return 1;
		}
	}
	for (;;) {
		ret = sio_nvme_manager_run(m, &stop);
		if (ret == -ESHUTDOWN) {
			/* nothing to hand back, and a controller whose model left would
			 * only make its shutdown wait out CAP.TO: just leave */
			fprintf(stderr, "nvme-manager: %s; stopping\n", sio_errmsg());
			return 0;
		}
		if (ret)
			fprintf(stderr, "nvme-manager: controller failed: %s\n", sio_errmsg());
		sio_nvme_manager_stats(m, &st);
		if (mo.log)
			fprintf(stderr, "nvme-manager: stopping: %llu requests, %llu refused, "
				"%llu dead clients cleaned up\n", (unsigned long long)st.requests,
				(unsigned long long)st.refused, (unsigned long long)st.reaped);
		sio_nvme_manager_close(m);
		m = NULL;
		/* a controller that went away (unregistered, or all ones) may come back */
		if (stop || (ret != -ENODEV && ret != -EIO))
			break;
		ret = reattach(f, &di, &mo, &m);
		if (ret)
			break;
	}
	sio_fabric_close(f);
	/* stopped by a signal, or the fabric was destroyed: a clean exit */
	return ret && ret != -ESHUTDOWN && !stop ? 1 : 0;
}
