/* SPDX-License-Identifier: MIT */
/*
 * remote-local: the same client on the lender (node 1) and on another node
 * (node 0), QD1 4 KiB random reads, interleaved in rounds.
 *
 * Model off, queues placed by hints: any difference is the software cost of
 * being remote (target: p50 ratio <= 1.05). Model on: the difference must be
 * what the hop model charges and nothing more. The model charges device
 * reads (SQ fetch, PRP lists) the path round trip; writes are posted. With
 * hints both SQs sit in lender memory, so the model predicts no difference;
 * a second model-on pass puts each client's SQ in its own RAM, where the
 * model predicts the extra SQ-fetch round trip of the remote node.
 *
 * With --fabric NAME it runs on an existing fabric of two nodes or more: one
 * client on the device's lender, one on --node (default: the first other
 * node), with the fabric's latency model as it is (two passes: SQ by hints,
 * SQ in each client's RAM).
 *
 * The clients (one process) and the controller are pinned to stated CPUs,
 * and the passes are run --repeat times, each on a set-up of its own: every
 * run is printed, and the summary gives the median and the range of the
 * runs' p50s and ratios.
 */
#include "opt.h"
#include "common.h"

#include <getopt.h>
#include <stdlib.h>
#include <string.h>

struct side {
	struct nb_client c;
	struct hist lat;	/* every measured read */
	struct nb_stats st;
	struct sio_path sqp;
};

static void on_done(void *arg, int err, uint16_t status)
{
	*(volatile int *)arg = err ? err : 1;
	(void)status;
}

static int measure(struct side *s, struct hist *dst, uint64_t n, uint64_t *seed)
{
	uint32_t nlb = 4096 / s->c.ns.lba_size;
	uint64_t nblk = s->c.ns.nsze / nlb;

	for (uint64_t i = 0; i < n; i++) {
		volatile int st = 0;
		uint64_t lba = nb_rand(seed) % nblk * nlb, t0, t1;
		int rc;

		t0 = sio__now_ns();
		if ((rc = sio_nvme_ioq_read(s->c.q, 1, lba, nlb, s->c.buf, 0, on_done, (void *)&st)))
			return rc;
		while (!st)
			if ((rc = sio_nvme_ioq_poll(s->c.q, 1)) < 0)
				return rc;
		t1 = sio__now_ns();
		if (st < 0)
			return st;
		if (dst)
			hist_add(dst, t1 - t0);
	}
	return 0;
}

/* What one run of a pass found: p50 local, p50 remote, their ratio. */
struct result {
	double local, remote, ratio;
};

/* The two clients' nodes: 0 the lender, 1 another (--node on an existing
 * fabric); 1 (said) where the fabric has no other node. */
static int pick_nodes(const struct nb_env *env, const struct bench_target *tgt, int node[2])
{
	node[0] = env->o.lender;
	node[1] = env->external && tgt->node >= 0 ? tgt->node : env->o.lender ? 0 : 1;
	if (env->o.nodes < 2 || node[0] == node[1]) {
		fprintf(stderr, "remote-local: needs a client on another node than the lender "
				"(node %d): fabric %s has %d node(s)%s\n", node[0], env->fabric,
			env->o.nodes, env->o.nodes < 2 ? " (a vfio fabric has one)" : "; give --node");
		return 1;
	}
	return 0;
}

/* A client on each node, its SQ's modelled path, warmed up. */
static int open_sides(struct side *s, const struct nb_env *env, const int node[2],
		      const struct sio_nvme_qspec *qs, uint64_t *seed)
{
	for (int k = 0; k < 2; k++) {
		struct sio_endpoint from = { SIO_EP_DEVICE, node[0], (uint32_t)env->devid };
		struct sio_endpoint to = { SIO_EP_NODE, 0, 0 };

		if (nb_client_open(&s[k].c, env, node[k], qs, 4096))
			return 1;
		to.node = s[k].c.qi.sq_place == SIO_PLACE_LOCAL ? node[k] : node[0];
		if (sio_path_resolve(s[k].c.f, &from, &to, -1, &s[k].sqp))
			return 1;
		hist_init(&s[k].lat);
		if (measure(&s[k], NULL, 2000, seed))
			return 1;
	}
	return 0;
}

/* One run of a pass on stdout and as an object of @j; its p50s in @res. */
static void report(const char *name, unsigned run_no, int sq_loc, const struct nb_env *env,
		   const struct nb_run *run, const int node[2], const struct side *s,
		   struct json_object *j, struct result *res)
{
	bool model = env->o.model;
	double dm = s[1].st.p50 - s[0].st.p50;
	double dp = model ? (double)s[1].sqp.round_trip_ns - s[0].sqp.round_trip_ns : 0;
	double ratio = s[1].st.p50 / s[0].st.p50;
	struct json_object *x;
	char where[32];

	printf("\n%s, run %u: %s; SQ %s, CQ in the client's RAM\n", name, run_no + 1,
	       nb_env_model_label(env), sq_loc == SIO_NVME_QLOC_HINT ? "by hints" :
	       "in the client's RAM");
	nb_run_describe(run, env, stdout);
	printf("  %-16s %-7s %8s %8s %8s %8s %8s %10s\n", "client on", "SQ in", "p1", "p50", "p99",
	       "p99.9", "mean", "SQ RT mod");
	for (int k = 0; k < 2; k++) {
		snprintf(where, sizeof(where), "node %d (%s)", node[k], k ? "remote" : "lender");
		printf("  %-16s %-7s %8.0f %8.0f %8.0f %8.0f %8.0f %10u\n",
		       where,
		       sio_placement_name(s[k].c.qi.sq_place), s[k].st.p1, s[k].st.p50, s[k].st.p99,
		       s[k].st.p999, s[k].st.mean, s[k].sqp.round_trip_ns);
	}
	printf("  p50 remote/local %.3f; remote - local: measured %.0f ns, modelled %.0f ns, "
	       "residual %+.0f ns\n", ratio, dm, dp, dm - dp);
	if (!model)
		printf("  target p50 ratio <= 1.05: %s\n", ratio <= 1.05 ? "met" : "MISSED");
	x = pj_push_obj(j);
	pj_str(x, "pass", name);
	pj_u64(x, "run", run_no + 1);
	pj_bool(x, "latency_model", model);
	pj_str(x, "model_note", nb_env_model_label(env));
	pj_str(x, "sq", sq_loc == SIO_NVME_QLOC_HINT ? "hints" : "local");
	pj_dbl(x, "p50_ratio", ratio);
	pj_dbl(x, "diff_p50_ns", dm);
	pj_dbl(x, "modelled_diff_ns", dp);
	json_object_object_add(x, "target", nb_target_json(env));
	json_object_object_add(x, "placement", nb_run_json(run, env));
	json_object_object_add(x, "local", nb_stats_json(&s[0].st));
	json_object_object_add(x, "remote", nb_stats_json(&s[1].st));
	*res = (struct result){ s[0].st.p50, s[1].st.p50, ratio };
}

/* One configuration: both clients, n reads each, interleaved in rounds; fills JSON. */
static int pass(const char *name, bool model, int sq_loc, uint64_t n, struct json_object *j,
		const struct bench_target *tgt, const struct nb_run *run, unsigned run_no,
		struct result *res)
{
	struct nb_env_opts eo = { .nodes = 2, .lender = 1, .model = model, .backing = "ram:256M",
				  .chassis = true };
	struct sio_nvme_qspec qs = { .sq_loc = sq_loc, .cq_loc = SIO_PLACE_LOCAL, .depth = 64 };
	const unsigned rounds = 16;
	uint64_t seed = 99, per = n / rounds;
	struct side *s = calloc(2, sizeof(*s));	/* 0: on the lender, 1: remote */
	struct nb_env env;
	int node[2];	/* 0: the lender, 1: the remote node */

	nb_run_apply(run, &eo);
	if (!s || nb_env_open(&env, name, &eo, tgt))
		return 1;
	if (pick_nodes(&env, tgt, node)) {
		nb_env_down(&env);
		return 1;
	}
	if (env.external && run_no == 0)
		nb_env_describe(&env, stdout);
	nb_pin(run->client_cpu);
	if (open_sides(s, &env, node, &qs, &seed))
		return 1;
	for (unsigned r = 0; r < rounds; r++) {
		for (int k = 0; k < 2; k++)
			if (measure(&s[k], &s[k].lat, per, &seed)) {
				fprintf(stderr, "remote-local: %s\n", sio_errmsg());
				return 1;
			}
		nb_progress(name, r + 1, rounds);
	}
	nb_progress(name, 1, 1);
	for (int k = 0; k < 2; k++)
		nb_stats_hist(&s[k].lat, &s[k].st);
	report(name, run_no, sq_loc, &env, run, node, s, j, res);
	for (int k = 0; k < 2; k++)
		nb_client_close(&s[k].c);
	free(s);
	nb_env_down(&env);
	return 0;
}

struct passdef {
	const char *name;
	bool model;
	int sq_loc;
};

/* Each pass --repeat times, interleaved (all passes, then again); then the
 * median and range of each pass's p50s and ratio. */
static int run_all(const struct passdef *pd, int np, uint64_t n, struct json_object *o,
		   const struct bench_target *tgt, const struct nb_run *run)
{
	struct json_object *j = pj_arr(o, "passes"), *sj = pj_arr(o, "summary"), *x;
	struct result (*res)[3] = calloc(run->repeat, sizeof(*res));
	double *v = calloc(run->repeat, sizeof(*v));
	struct nb_spread sp[3];
	char b[2][64];

	if (!res || !v)
		return 1;
	for (unsigned r = 0; r < run->repeat; r++)
		for (int k = 0; k < np; k++)
			if (pass(pd[k].name, pd[k].model, pd[k].sq_loc, n, j, tgt, run, r, &res[r][k]))
				return 1;
	printf("\nsummary over %u run(s): p50 median [min..max] ns, and the ratio's\n", run->repeat);
	for (int k = 0; k < np; k++) {
		for (int m = 0; m < 3; m++) {
			for (unsigned r = 0; r < run->repeat; r++)
				v[r] = m == 0 ? res[r][k].local : m == 1 ? res[r][k].remote : res[r][k].ratio;
			nb_spread(v, run->repeat, &sp[m]);
		}
		printf("  %-18s lender %-20s remote %-20s remote/local %.3f [%.3f..%.3f]\n",
		       pd[k].name, nb_spread_str(&sp[0], b[0], 64), nb_spread_str(&sp[1], b[1], 64),
		       sp[2].median, sp[2].min, sp[2].max);
		x = pj_push_obj(sj);
		pj_str(x, "pass", pd[k].name);
		pj_u64(x, "runs", run->repeat);
		pj_dbl(x, "local_p50_median_ns", sp[0].median);
		pj_dbl(x, "local_p50_min_ns", sp[0].min);
		pj_dbl(x, "local_p50_max_ns", sp[0].max);
		pj_dbl(x, "remote_p50_median_ns", sp[1].median);
		pj_dbl(x, "remote_p50_min_ns", sp[1].min);
		pj_dbl(x, "remote_p50_max_ns", sp[1].max);
		pj_dbl(x, "p50_ratio_median", sp[2].median);
		pj_dbl(x, "p50_ratio_min", sp[2].min);
		pj_dbl(x, "p50_ratio_max", sp[2].max);
	}
	free(res);
	free(v);
	return 0;
}

static int run(uint64_t n, const char *out, const struct bench_target *t,
	       const struct nb_run *nr);

static void usage(FILE *o)
{
	fprintf(o, "usage: nvme-bench-remote-local [options]\n"
		"  -n, --ios N      reads per pass (default 100000)\n"
		"  -q, --quick      16384 reads per pass\n"
		"  -o, --out DIR    output directory (default bench-out/remote-local)\n"
		NB_RUN_HELP BENCH_TARGET_HELP);
}

int main(int argc, char **argv)
{
	static const struct option lo[] = {
		{ "ios", required_argument, NULL, 'n' }, { "quick", no_argument, NULL, 'q' },
		{ "out", required_argument, NULL, 'o' }, NB_RUN_LONGOPTS, BENCH_TARGET_LONGOPTS,
		{ 0 },
	};
	struct bench_target tgt;
	struct nb_run nr;
	const char *out = "bench-out/remote-local";
	uint64_t n = 100000;
	int opt;

	prog_init("nvme-bench-remote-local", usage);
	bench_target_init(&tgt);
	nb_run_init(&nr, 3);
	while ((opt = prog_getopt(argc, argv, "n:qo:h", lo)) != -1) {
		switch (opt) {
		case 'n': n = bench_u64("nvme-bench-remote-local", "--ios", optarg, 1, 1000000000); break;
		case 'q': n = 16384; break;
		case 'o': out = optarg; break;
		default:
			if (!nb_run_opt("nvme-bench-remote-local", &nr, opt, optarg) &&
			    !bench_target_opt("nvme-bench-remote-local", &tgt, opt, optarg))
				prog_usage_error("unhandled option");
		}
	}
	bench_no_args("nvme-bench-remote-local", optind, argc, argv);
	bench_target_check("nvme-bench-remote-local", &tgt);
	if (n < 1024 || n > 50000000)
		prog_usage_error("--ios %llu: give 1024..50000000", (unsigned long long)n);
	return run(n, out, &tgt, &nr);
}

/* The passes, and the JSON of them all. */
static int run(uint64_t n, const char *out, const struct bench_target *t,
	       const struct nb_run *nr)
{
	static const struct passdef own[] = {
		{ "model-off", false, SIO_NVME_QLOC_HINT }, { "model-on", true, SIO_NVME_QLOC_HINT },
		{ "model-on-sq-local", true, SIO_PLACE_LOCAL },
	}, existing[] = {	/* the fabric's model as it is */
		{ "existing", false, SIO_NVME_QLOC_HINT },
		{ "existing-sq-local", false, SIO_PLACE_LOCAL },
	};
	struct bench_target tgt = *t;
	struct json_object *o = json_object_new_object();

	setvbuf(stdout, NULL, _IOLBF, 0);
	if (nb_outdir(out))
		return 1;
	if (!tgt.fabric)
		printf("remote-local: QD1 4 KiB random reads, %llu per client, node 0 -> cluster "
		       "switch -> node 1 (lender, controller behind a chassis)\n",
		       (unsigned long long)n);
	pj_str(o, "benchmark", "remote-local");
	pj_u64(o, "ios", n);
	if (tgt.fabric ? run_all(existing, 2, n, o, &tgt, nr) : run_all(own, 3, n, o, &tgt, nr))
		return 1;
	if (nb_write_json(out, "remote-local.json", o))
		return 1;
	printf("\nwrote %s/remote-local.json\n", out);
	return 0;
}
