/* SPDX-License-Identifier: MIT */
/*
 * doorbells: MMIO doorbell writes per I/O and latency with shadow doorbells
 * (Doorbell Buffer Config) on and off, at QD1 and QD32, 4 KiB random reads
 * from a client on another node than the controller, and with them on from a
 * client beside it.
 *
 * Runs on the simulated fabric with its latency model on (modelled per-hop
 * delays, not hardware): the controller's looks at the shadow buffer are
 * device reads the model charges a round trip; MMIO doorbell stores are
 * posted. Against QEMU's NVMe the vm suite's vfio-nvme program measures the
 * same counts under TCG.
 */
#include "opt.h"
#include "common.h"

#include <getopt.h>
#include <stdlib.h>
#include <string.h>

struct result {
	double writes_per_io, iops;
	struct nb_stats lat;	/* ns per I/O, submit to completion */
};

struct slot {
	uint64_t t0;
	int done;
};

static uint64_t *lat;
static uint64_t nlat, cap;

static void on_done(void *arg, int err, uint16_t status)
{
	struct slot *s = arg;

	s->done = err || status ? -1 : 1;
	if (nlat < cap)
		lat[nlat++] = nb_now_ns() - s->t0;
}

/* Closed loop at @qd for @seconds: every completion submits the next read. */
static int run(struct nb_client *c, uint32_t qd, double seconds, struct result *r)
{
	struct slot *s = calloc(qd, sizeof(*s));
	uint32_t nlb = 4096 / c->ns.lba_size;
	uint64_t nblk = c->ns.nsze / nlb, seed = 7, ios = 0, w0, t_end, t0;
	struct sio_nvme_ioq_info qi;
	int rc = 0;

	if (!s)
		return -1;
	nlat = 0;
	sio_nvme_ioq_info(c->q, &qi);
	w0 = qi.db_writes;
	t0 = nb_now_ns();
	t_end = t0 + (uint64_t)(seconds * 1e9);
	for (uint32_t i = 0; i < qd; i++)
		s[i].done = 1;
	while (!rc) {
		bool more = nb_now_ns() < t_end;
		uint32_t busy = 0;

		for (uint32_t i = 0; i < qd; i++) {
			if (s[i].done < 0) {
				rc = -1;
				break;
			}
			if (!s[i].done) {
				busy++;
				continue;
			}
			if (!more)
				continue;
			s[i].done = 0;
			s[i].t0 = nb_now_ns();
			rc = sio_nvme_ioq_read(c->q, 1, nb_rand(&seed) % nblk * nlb, nlb, c->buf,
					       (uint64_t)i * 4096, on_done, &s[i]);
			if (rc)
				break;
			ios++;
			busy++;
		}
		if (!busy)
			break;
		if (sio_nvme_ioq_poll(c->q, 0) < 0)
			rc = -1;
	}
	sio_nvme_ioq_info(c->q, &qi);
	r->writes_per_io = ios ? (double)(qi.db_writes - w0) / (double)ios : 0;
	r->iops = (double)ios / ((double)(nb_now_ns() - t0) / 1e9);
	nb_stats_compute(lat, nlat, &r->lat);
	free(s);
	return rc;
}

/* @node: the client's (the controller and the manager are on node 1) */
static int point(bool dbbuf, int node, double seconds, FILE *j, bool *first)
{
	struct nb_env_opts o = { .nodes = 2, .lender = 1, .model = true, .backing = "ram:256M",
				 .arbitration = NVME_CC_AMS_RR, .no_dbbuf = !dbbuf };
	static const uint32_t qds[] = { 1, 32 };
	struct sio_nvme_qspec qs;
	struct nb_client c;
	struct nb_env e;
	int rc;

	if ((rc = nb_env_up(&e, dbbuf ? "dbbuf" : "mmio", &o)))
		return rc;
	/* from another node than their buffer's, shadow doorbells are asked for */
	sio_nvme_qspec_parse(dbbuf ? "depth=64,dbbuf=on" : "depth=64", &qs);
	if ((rc = nb_client_open(&c, &e, node, &qs, 32 * 4096))) {
		nb_env_down(&e);
		return rc;
	}
	if (c.qi.shadow_doorbells != dbbuf) {
		fprintf(stderr, "doorbells: the queue %s shadow doorbells, expected %s\n",
			c.qi.shadow_doorbells ? "uses" : "lacks", dbbuf ? "on" : "off");
		rc = -1;
	}
	for (size_t k = 0; !rc && k < sizeof(qds) / sizeof(qds[0]); k++) {
		struct result r;

		if ((rc = run(&c, qds[k], seconds, &r)))
			break;
		printf("  %-6s node %d QD%-3u  MMIO doorbell writes/IO %5.3f  IOPS %9.0f  latency p50 "
		       "%7.1f us p99 %7.1f us\n", dbbuf ? "shadow" : "mmio", node, qds[k],
		       r.writes_per_io, r.iops, r.lat.p50 / 1e3, r.lat.p99 / 1e3);
		fprintf(j, "%s{\"shadow_doorbells\": %s, \"client_node\": %d, \"qd\": %u, "
			"\"mmio_writes_per_io\": %.4f, \"iops\": %.0f, \"lat_p50_ns\": %.0f, "
			"\"lat_p99_ns\": %.0f, \"lat_mean_ns\": %.0f}",
			*first ? "" : ",\n", dbbuf ? "true" : "false", node, qds[k], r.writes_per_io,
			r.iops, r.lat.p50, r.lat.p99, r.lat.mean);
		*first = false;
	}
	nb_client_close(&c);
	nb_env_down(&e);
	return rc;
}

static void usage(FILE *o)
{
	fprintf(o, "usage: nvme-bench-doorbells [options]\n"
		"  -t, --time S     seconds per point, 0.05..60 (default 2)\n"
		"  -o, --out DIR    output directory (default bench-out/doorbells)\n"
		PROG_HELP);
}

int main(int argc, char **argv)
{
	static const struct option lo[] = {
		{ "time", required_argument, NULL, 't' }, { "out", required_argument, NULL, 'o' },
		PROG_LONGOPTS, { 0 },
	};
	const char *out = "bench-out/doorbells";
	double seconds = 2;
	bool first = true;
	FILE *j;
	int opt;

	prog_init("nvme-bench-doorbells", usage);
	while ((opt = prog_getopt(argc, argv, "t:o:h", lo)) != -1) {
		switch (opt) {
		case 't': seconds = prog_double("--time", optarg, 0.05, 60); break;
		case 'o': out = optarg; break;
		}
	}
	bench_no_args("nvme-bench-doorbells", optind, argc, argv);
	cap = (uint64_t)(seconds * 2e6) + 1024;
	lat = malloc(cap * sizeof(*lat));
	if (!lat)
		return 1;
	setvbuf(stdout, NULL, _IOLBF, 0);
	if (nb_outdir("bench-out") || nb_outdir(out) || !(j = nb_open_out(out, "doorbells.json")))
		return 1;
	printf("doorbells: 4 KiB random reads, controller and manager on node 1, client on node 0 "
	       "or 1; %s\n", nb_model_label(true));
	fprintf(j, "{\"benchmark\": \"doorbells\", \"seconds\": %g, \"model\": \"simulated fabric, "
		"latency model on\", \"points\": [\n", seconds);
	if (point(false, 0, seconds, j, &first) || point(true, 0, seconds, j, &first) ||
	    point(true, 1, seconds, j, &first))
		return 1;
	fprintf(j, "\n]}\n");
	fclose(j);
	printf("wrote %s/doorbells.json\n", out);
	return 0;
}
