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

static struct hist lat;	/* every I/O of a point */

static void on_done(void *arg, int err, uint16_t status)
{
	struct slot *s = arg;

	s->done = err || status ? -1 : 1;
	hist_add(&lat, sio__now_ns() - s->t0);
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
	hist_init(&lat);
	sio_nvme_ioq_info(c->q, &qi);
	w0 = qi.db_writes;
	t0 = sio__now_ns();
	t_end = t0 + (uint64_t)(seconds * 1e9);
	for (uint32_t i = 0; i < qd; i++)
		s[i].done = 1;
	while (!rc) {
		bool more = sio__now_ns() < t_end;
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
			s[i].t0 = sio__now_ns();
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
	r->iops = (double)ios / ((double)(sio__now_ns() - t0) / 1e9);
	nb_stats_hist(&lat, &r->lat);
	free(s);
	return rc;
}

/* @node: the client's (the controller and the manager are on node 1) */
static int point(bool dbbuf, int node, double seconds, struct json_object *j)
{
	struct nb_env_opts o = { .nodes = 2, .lender = 1, .model = true, .backing = "ram:256M",
				 .arbitration = NVME_CC_AMS_RR, .dbbuf = dbbuf ? SIO_NVME_DBBUF_ON : SIO_NVME_DBBUF_OFF };
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
		struct json_object *x = pj_push_obj(j);

		pj_bool(x, "shadow_doorbells", dbbuf);
		pj_int(x, "client_node", node);
		pj_u64(x, "qd", qds[k]);
		pj_dbl(x, "mmio_writes_per_io", r.writes_per_io);
		pj_dbl(x, "iops", r.iops);
		json_object_object_add(x, "latency", nb_stats_json(&r.lat));
	}
	nb_client_close(&c);
	nb_env_down(&e);
	return rc;
}

/* Shadow doorbells against MMIO ones, from the lender's node and another. */
static int run_points(double seconds, const char *out)
{
	struct json_object *o = json_object_new_object(), *j;

	setvbuf(stdout, NULL, _IOLBF, 0);
	if (nb_outdir(out))
		return 1;
	printf("doorbells: 4 KiB random reads, controller and manager on node 1, client on node 0 "
	       "or 1; %s\n", nb_model_label(true));
	pj_str(o, "benchmark", "doorbells");
	pj_dbl(o, "seconds", seconds);
	pj_str(o, "model", "simulated fabric, latency model on");
	j = pj_arr(o, "points");
	if (point(false, 0, seconds, j) || point(true, 0, seconds, j) || point(true, 1, seconds, j))
		return 1;
	if (nb_write_json(out, "doorbells.json", o))
		return 1;
	printf("wrote %s/doorbells.json\n", out);
	return 0;
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
	int opt;

	prog_init("nvme-bench-doorbells", usage);
	while ((opt = prog_getopt(argc, argv, "t:o:h", lo)) != -1) {
		switch (opt) {
		case 't': seconds = prog_time("--time", optarg, 1, 0.05, 60); break;
		case 'o': out = optarg; break;
		}
	}
	bench_no_args("nvme-bench-doorbells", optind, argc, argv);
	return run_points(seconds, out);
}
