/* SPDX-License-Identifier: MIT */
/*
 * nvme-manager: take an NVMe controller, reset it, and share it at queue
 * level with nvme-client processes anywhere on the fabric.
 */

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <smartio/nvme.h>
#include "tool.h"

/* The log: text lines with a time, or JSON lines (--json). */
static FILE *lg;

/*
 * The controller @di went away. Follow every new registration of the same
 * name on the same node (a restarted emulator: same backing, a new device
 * id; or the same device once its link is back), newest first, for as
 * long as the manager runs: one that dies again while it is being brought
 * up is left for the next.
 */
static int reattach(struct sio_fabric *f, struct sio_device_info *di,
		    const struct sio_nvme_manager_opts *mo, struct sio_nvme_manager **m)
{
	uint32_t tried = 0, since = 0;
	int n;

	fprintf(lg, "nvme-manager: waiting for controller '%s' on node %d to come back "
		"(SIGTERM stops the wait)\n", di->name, di->lender);
	while (!prog_stop) {
		struct sio_device_info l[64];
		int best = -1;

		if (sio_fabric_alive(f)) {
			fprintf(lg, "nvme-manager: %s; stopping\n", sio_errmsg());
			return -ESHUTDOWN;
		}
		n = sio_device_list(f, 0x010802, 0xffffff, l, 64);
		for (int i = 0; i < n && i < 64; i++)	/* the newest registration */
			if (!strcmp(l[i].name, di->name) && l[i].lender == di->lender &&
			    (best < 0 || l[i].id > l[best].id))
				best = i;
		/* the one that just failed is tried again after 2 s */
		if (best >= 0 && (l[best].id != tried || ++since >= 10)) {
			tried = l[best].id;
			since = 0;
			if (!sio_nvme_manager_start(f, tried, mo, m)) {
				fprintf(lg, "nvme-manager: controller '%s' is back as device %u; "
					"serving it\n", di->name, tried);
				*di = l[best];
				return 0;
			}
			fprintf(lg, "nvme-manager: device %u: %s; waiting for the next\n",
				tried, sio_errmsg());
		}
		usleep(200000);
	}
	return -ENODEV;
}

/*
 * --standby: wait until no manager serves the device, then take it over.
 * The state a manager needs is kept on the lender's node, so the
 * successor may run on any node; a start refused with -EBUSY means the
 * active manager still serves. A fabric whose state is out of reach (its
 * home's link down: -EHOSTDOWN, or reading all ones: -ENOLINK) is waited
 * for, once a second: a standby home takes over, or the link comes back,
 * and a standby that gave up then would leave the device with no manager
 * after the next loss.
 */
static int standby(struct sio_fabric *f, const struct sio_device_info *di,
		   const struct sio_nvme_manager_opts *mo, struct sio_nvme_manager **m)
{
	bool dark = false;
	int ret;

	fprintf(lg, "nvme-manager: standing by on node %d: taking device %u over when "
		"its manager stops serving\n", sio_fabric_node_id(f), di->id);
	while (!prog_stop) {
		ret = sio_nvme_manager_start(f, di->id, mo, m);
		if (ret == -EHOSTDOWN || ret == -ENOLINK) {
			if (!dark)
				fprintf(lg, "nvme-manager: standing by while the fabric's "
					"state is out of reach: %s\n", sio_errmsg());
			dark = true;
			sleep(1);
			continue;
		}
		if (ret != -EBUSY)
			return ret;
		if (dark)
			fprintf(lg, "nvme-manager: the fabric's state is in reach again: "
				"standing by\n");
		dark = false;
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
		"  --ready-file F    write our pid to F once serving\n"
		"  --io-queues N     I/O queue pairs to ask the controller for\n"
		"  --arbitration rr|wrr  SQ arbitration (default rr)\n"
		"  --weights H,M,L   weighted round robin: commands per round each SQ of the\n"
		"                    high, medium and low class takes (1..256; default 1,1,1)\n"
		"  --burst N         commands an SQ takes per turn: 1, 2, 4 ... 64, or 0 for\n"
		"                    no limit (default 1)\n"
		"  --irq-coalesce N,US  interrupt coalescing: hold a CQ's interrupt until N\n"
		"                    entries (1..256) or US microseconds (100..25500, in\n"
		"                    steps of 100) have passed; default none\n"
		"  --no-cmb          leave the controller memory buffer off\n"
		"  --shadow-doorbells auto|on|off  Doorbell Buffer Config, where the\n"
		"                    controller offers it: auto (default) where an MMIO\n"
		"                    write exits to a hypervisor (a PCI function, e.g.\n"
		"                    QEMU's), not on the simulated fabric; off: clients\n"
		"                    write every doorbell to BAR0\n"
		"  --quiet           do not log client arrivals and departures\n"
		"  --json            log as JSON lines ({\"time\", \"prog\", \"pid\", \"msg\"})\n"
		"  --standby         wait while another manager serves the device, then\n"
		"                    take it over (after a crash: no reset, clients kept);\n"
		"                    a fabric whose state is out of reach (its home's link\n"
		"                    down) is waited for, not given up on\n"
		PROG_BACKGROUND_HELP
		PROG_HELP
		"Log lines go to stderr with a UTC time (none under systemd's journal).\n"
		"Exit status: 0 stopped, 1 failed, 2 usage error.\n");
}

struct mgr_cfg {
	struct sio_nvme_manager_opts mo;
	const char *ready;
	bool standby;
	bool quiet;
	bool background;
	bool weights;		/* --weights given (0 in arb_cdw11 is the reset value) */
};

/* --weights H,M,L: into the Arbitration feature's weights, 0's based. */
static void weights(struct mgr_cfg *c, const char *arg)
{
	unsigned int h, m, l;
	char end;

	if (sscanf(arg, "%u,%u,%u%c", &h, &m, &l, &end) != 3 || !h || !m || !l ||
	    h > 256 || m > 256 || l > 256)
		prog_usage_error("--weights '%s': three weights 1..256, high,medium,low "
				 "(e.g. 8,4,1)", arg);
	c->mo.ctrl.arb_cdw11 = (c->mo.ctrl.arb_cdw11 & 7u) | sio_nvme_feat_arbitration(0, l - 1, m - 1, h - 1);
	c->weights = true;
}

/* --burst N: the Arbitration Burst, a power of two (0: no limit). */
static void burst(struct mgr_cfg *c, const char *arg)
{
	uint32_t n = prog_u32("--burst", arg, 0, 64), ab = 7;

	if (n) {
		if (n & (n - 1))
			prog_usage_error("--burst %u: a power of two 1..64, or 0 for no limit", n);
		ab = (uint32_t)__builtin_ctz(n);
	}
	c->mo.ctrl.arb_cdw11 = (c->mo.ctrl.arb_cdw11 & ~7u) | ab;
}

/* --irq-coalesce N,US: Interrupt Coalescing's threshold and time. */
static void coalesce(struct mgr_cfg *c, const char *arg)
{
	unsigned int n, us;
	char end;

	if (sscanf(arg, "%u,%u%c", &n, &us, &end) != 2 || n < 1 || n > 256 || us < 100 ||
	    us > 25500 || us % 100)
		prog_usage_error("--irq-coalesce '%s': N,US with N entries 1..256 and US "
				 "microseconds 100..25500 in steps of 100 (e.g. 8,100)", arg);
	c->mo.ctrl.irq_coalesce = (n - 1) | (us / 100) << 8;
}

/* Serve the controller until stopped, and again when it comes back. */
static int serve_loop(struct sio_fabric *f, struct sio_device_info *di,
		      const struct sio_nvme_manager_opts *mo, struct sio_nvme_manager *m)
{
	struct sio_nvme_manager_stats st;
	int ret;

	for (;;) {
		ret = sio_nvme_manager_run(m, &prog_stop);
		if (ret == -ESHUTDOWN) {
			/* nothing to hand back, and a controller whose model left would
			 * only make its shutdown wait out CAP.TO: just leave */
			fprintf(lg, "nvme-manager: %s; stopping\n", sio_errmsg());
			return 0;
		}
		if (ret)	/* a link lost past its grace is no controller's failure */
			fprintf(lg, "nvme-manager: %s%s\n", ret == -ENOLINK ? "" :
				"controller failed: ", sio_errmsg());
		sio_nvme_manager_stats(m, &st);
		if (mo->log)
			fprintf(lg, "nvme-manager: stopping: %llu requests, %llu refused, "
				"%llu dead clients cleaned up\n", (unsigned long long)st.requests,
				(unsigned long long)st.refused, (unsigned long long)st.reaped);
		sio_nvme_manager_close(m);
		m = NULL;
		/* a controller that went away (unregistered, or all ones) may come back */
		if (prog_stop || (ret != -ENODEV && ret != -EIO))
			break;
		ret = reattach(f, di, mo, &m);
		if (ret)
			break;
	}
	/* stopped by a signal, or the fabric was destroyed: a clean exit */
	return ret && ret != -ESHUTDOWN && !prog_stop ? PROG_FAIL : PROG_OK;
}

static int serve(struct tool_common *t, struct mgr_cfg *c)
{
	struct sio_nvme_manager *m;
	struct sio_device_info di;
	struct sio_fabric *f;
	char status[160];
	int ret;

	if (tool_open(t, &f))
		return PROG_FAIL;
	if (sio_nvme_find_device(f, t->device, &di)) {
		fprintf(lg, "nvme-manager: %s\n", sio_errmsg());
		sio_fabric_close(f);
		return PROG_FAIL;
	}
	prog_catch_stop();
	if (c->standby)
		ret = standby(f, &di, &c->mo, &m);
	else
		ret = sio_nvme_manager_start(f, di.id, &c->mo, &m);
	if (ret && (prog_stop || ret == -ESHUTDOWN)) {	/* stopped while standing by */
		sio_fabric_close(f);
		return PROG_OK;
	}
	if (ret) {
		fprintf(lg, "nvme-manager: %s\n", sio_errmsg());
		sio_fabric_close(f);
		return PROG_FAIL;
	}
	snprintf(status, sizeof(status), "serving device %u of fabric %s from node %d", di.id,
		 sio_fabric_name(f), sio_fabric_node_id(f));
	if (prog_ready(c->ready, getpid(), status)) {
		sio_nvme_manager_close(m);
		sio_fabric_close(f);
		return PROG_FAIL;
	}
	ret = serve_loop(f, &di, &c->mo, m);
	prog_notify_stopping();
	sio_fabric_close(f);
	return ret;
}

int main(int argc, char **argv)
{
	enum { O_READY = 256, O_QUEUES, O_ARB, O_NO_CMB, O_DBBUF, O_QUIET, O_STANDBY, O_WEIGHTS,
	       O_BURST, O_COALESCE };
	static const struct option lo[] = {
		TOOL_COMMON_LONGOPTS,
		TOOL_JSON_LONGOPT,
		{ "ready-file", required_argument, NULL, O_READY },
		{ "io-queues", required_argument, NULL, O_QUEUES },
		{ "arbitration", required_argument, NULL, O_ARB },
		{ "weights", required_argument, NULL, O_WEIGHTS },
		{ "burst", required_argument, NULL, O_BURST },
		{ "irq-coalesce", required_argument, NULL, O_COALESCE },
		{ "no-cmb", no_argument, NULL, O_NO_CMB },
		{ "shadow-doorbells", required_argument, NULL, O_DBBUF },
		{ "quiet", no_argument, NULL, O_QUIET },
		{ "standby", no_argument, NULL, O_STANDBY },
		PROG_BACKGROUND_LONGOPT,
		{ 0 }
	};
	static const char *const arbs[] = { "rr", "wrr", NULL };
	static const char *const dbbufs[] = { "auto", "on", "off", NULL };	/* SIO_NVME_DBBUF_* */
	struct mgr_cfg c = { .mo = { .ctrl = { .arbitration = NVME_CC_AMS_RR, .enable_cmb = true } } };
	struct tool_common t;
	int opt, ret;

	tool_init(&t, "nvme-manager", usage);
	while ((opt = tool_getopt(&t, argc, argv, "h", lo)) != -1) {
		switch (opt) {
		case O_READY: c.ready = optarg; break;
		case O_QUEUES: c.mo.ctrl.io_queues = prog_u32("--io-queues", optarg, 1, 65535); break;
		case O_ARB:
			c.mo.ctrl.arbitration = prog_choice("--arbitration", optarg, arbs) ?
						NVME_CC_AMS_WRRU : NVME_CC_AMS_RR;
			break;
		case O_WEIGHTS: weights(&c, optarg); break;
		case O_BURST: burst(&c, optarg); break;
		case O_COALESCE: coalesce(&c, optarg); break;
		case O_NO_CMB: c.mo.ctrl.enable_cmb = false; break;
		case O_DBBUF: c.mo.ctrl.dbbuf = prog_choice("--shadow-doorbells", optarg, dbbufs); break;
		case O_QUIET: c.quiet = true; break;
		case O_STANDBY: c.standby = true; break;
		case PROG_OPT_BACKGROUND: c.background = true; break;
		}
	}
	if (c.weights && c.mo.ctrl.arbitration != NVME_CC_AMS_WRRU)
		prog_usage_error("--weights: weighted round robin only (--arbitration wrr)");
	if (c.background)
		prog_background();
	lg = prog_log_stream(t.json);
	c.mo.log = c.quiet ? NULL : lg;
	ret = serve(&t, &c);
	fclose(lg);
	return ret;
}
