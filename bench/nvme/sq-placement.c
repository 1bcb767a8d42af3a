/* SPDX-License-Identifier: MIT */
/*
 * sq-placement: the SmartIO paper's figure 34 (section 7.4.1) on the
 * simulated fabric. QD1 4 KiB random reads with the SQ in borrower RAM, in
 * lender RAM and in device-adjacent memory (the controller's CMB), the CQ
 * always in borrower RAM. Topology as in the paper: borrower (node 0) ->
 * cluster switch -> lender (node 1), controller behind an expansion chassis.
 *
 * Latency is command completion latency as the paper defines it: from before
 * the command is written into the SQ until its completion is seen in the CQ.
 * The placements run interleaved in rounds so that drift hits all alike.
 *
 * With --fabric NAME it measures a device lent there as it is (a vfio-lent
 * controller, say): the placements that device and fabric offer run, and
 * each one that cannot is named with the reason (no CMB, the client on the
 * lender so lender RAM is its own RAM, no GPU location).
 */
#include "opt.h"
#include "common.h"

#include <errno.h>
#include <getopt.h>
#include <stdlib.h>
#include <string.h>

enum { P_LOCAL, P_LENDER, P_DEVICE, P_GPU, NPLACE };

static const struct {
	const char *name, *what;
	int sq_loc;
} place[NPLACE] = {
	[P_LOCAL] = { "local", "SQ in borrower RAM", SIO_PLACE_LOCAL },
	[P_LENDER] = { "lender", "SQ in lender RAM", SIO_PLACE_LENDER },
	[P_DEVICE] = { "cmb", "SQ in the controller's CMB", SIO_PLACE_DEVICE },
	/* Hook: GPU memory next to the controller. The client's queue spec has
	 * no GPU location yet (sio_nvme_qspec.sq_loc knows local, lender and
	 * device); when it does, set sq_loc here and enable it with --gpu. */
	[P_GPU] = { "gpu", "SQ in GPU memory beside the controller", -100 },
};

struct run {
	bool on;
	const char *skip;	/* why it did not run */
	struct sio_nvme_ioq *q;
	struct hist *lat;	/* every measured read; NULL in a warm-up */
	struct sio_path path;
	struct nb_stats st;
};

static void on_done(void *arg, int err, uint16_t status)
{
	*(int *)arg = err ? err : 1;
	(void)status;
}

static void usage(FILE *o)
{
	fprintf(o,
		"usage: nvme-bench-sq-placement [options]\n"
		"  -n, --ios N      reads per placement (default 327680)\n"
		"  -q, --quick      32768 reads per placement\n"
		"      --no-model   latency model off (software cost only)\n"
		"      --cmb SIZE   CMB size (default 16m; 0 drops the CMB placement)\n"
		"      --gpu        also place the SQ in GPU memory (not available yet)\n"
		"  -o, --out DIR    output directory (default bench-out/sq-placement)\n"
		BENCH_TARGET_HELP);
}

/* Modelled DMA round trip from the controller to where its SQ lives. */
static int sq_path(struct nb_client *c, const struct nb_env *e, int p, struct sio_path *out)
{
	struct sio_endpoint from = { SIO_EP_DEVICE, e->o.lender, (uint32_t)e->devid };
	struct sio_endpoint to = { SIO_EP_NODE, nb_env_client_node(e, 0), 0 };
	struct sio_segment_info si;
	struct sio_segment *bar;
	int rc;

	if (p == P_LENDER)
		to.node = e->o.lender;
	if (p == P_DEVICE) {
		if ((rc = sio_device_bar(sio_nvme_client_device(c->cl), 2, &bar)) ||
		    (rc = sio_segment_info(bar, &si)))
			return rc;
		to = (struct sio_endpoint){ SIO_EP_SEGMENT, si.node, si.id };
	}
	return sio_path_resolve(c->f, &from, &to, -1, out);
}

static void hops_str(const struct sio_path *p, char *b, size_t n)
{
	size_t o = 0;

	b[0] = 0;
	for (int i = 0; i < p->nhops && o < n; i++)
		o += snprintf(b + o, n - o, "%s%s", i ? "," : "", sio_hop_kind_name(p->hops[i].kind));
	if (!p->nhops)
		snprintf(b, n, "none");
}

static int measure(struct nb_client *c, struct run *r, uint64_t n, uint64_t *seed,
		   uint32_t nlb, uint64_t nblk)
{
	for (uint64_t i = 0; i < n; i++) {
		volatile int st = 0;
		uint64_t lba = nb_rand(seed) % nblk * nlb, t0, t1;
		int rc;

		t0 = sio__now_ns();
		rc = sio_nvme_ioq_read(r->q, 1, lba, nlb, c->buf, 0, on_done, (void *)&st);
		if (rc)
			return rc;
		while (!st)
			if ((rc = sio_nvme_ioq_poll(r->q, 1)) < 0)
				return rc;
		t1 = sio__now_ns();
		if (st < 0)
			return st;
		if (r->lat)
			hist_add(r->lat, t1 - t0);
	}
	return 0;
}

/* What to measure: parsed from the command line. */
struct sqp_opts {
	uint64_t n;
	struct nb_env_opts eo;
	const char *out;
	struct bench_target tgt;
};

static int run_placements(struct sqp_opts *o);

int main(int argc, char **argv)
{
	static const struct option lo[] = {
		{ "ios", required_argument, NULL, 'n' }, { "quick", no_argument, NULL, 'q' },
		{ "no-model", no_argument, NULL, 'M' }, { "cmb", required_argument, NULL, 'c' },
		{ "gpu", no_argument, NULL, 'g' }, { "out", required_argument, NULL, 'o' },
		BENCH_TARGET_LONGOPTS, { 0 },
	};
	struct sqp_opts o = {
		.n = 327680, .out = "bench-out/sq-placement",
		.eo = { .nodes = 2, .lender = 1, .model = true, .backing = "ram:1G", .cmb_mib = 16,
			.chassis = true, .pin = true },
	};
	int opt;

	prog_init("nvme-bench-sq-placement", usage);
	bench_target_init(&o.tgt);
	while ((opt = prog_getopt(argc, argv, "n:qo:h", lo)) != -1) {
		switch (opt) {
		case 'n': o.n = prog_u64("--ios", optarg, 8, 100000000); break;
		case 'q': o.n = 32768; break;
		case 'M': o.eo.model = false; break;
		case 'c': o.eo.cmb_mib = prog_mib("--cmb", optarg, 4096); break;
		case 'g':
			prog_usage_error("--gpu: the NVMe client cannot place an SQ in GPU memory yet "
					 "(no GPU location in struct sio_nvme_qspec)");
		case 'o': o.out = optarg; break;
		default:
			if (!bench_target_opt(prog_name, &o.tgt, opt, optarg))
				prog_usage_error("unhandled option");
		}
	}
	prog_no_args(argc, argv);
	bench_target_check(prog_name, &o.tgt);
	return run_placements(&o);
}

static int write_json(const struct run *r, uint64_t n, const struct nb_env *env, const char *out)
{
	struct json_object *o = json_object_new_object(), *a;
	char hops[96];

	pj_str(o, "benchmark", "sq-placement");
	pj_bool(o, "latency_model", env->o.model);
	pj_str(o, "model_note", nb_env_model_label(env));
	pj_u64(o, "ios", n);
	pj_int(o, "block", 4096);
	pj_int(o, "queue_depth", 1);
	json_object_object_add(o, "target", nb_target_json(env));
	a = pj_arr(o, "skipped");
	for (int p = 0; p < NPLACE; p++)
		if (!r[p].on) {
			struct json_object *x = pj_push_obj(a);

			pj_str(x, "sq", place[p].name);
			pj_str(x, "why", r[p].skip);
		}
	a = pj_arr(o, "placements");
	for (int p = 0; p < NPLACE; p++) {
		struct json_object *x;

		if (!r[p].on)
			continue;
		x = pj_push_obj(a);
		hops_str(&r[p].path, hops, sizeof(hops));
		pj_str(x, "sq", place[p].name);
		pj_str(x, "cq", "local");
		pj_str(x, "path_hops", hops);
		pj_u64(x, "modelled_rt_ns", r[p].path.round_trip_ns);
		json_object_object_add(x, "latency", nb_stats_json(&r[p].st));
	}
	return nb_write_json(out, "sq-placement.json", o);
}

/*
 * hist.dat: the latency histograms' buckets (log-linear, the same for every
 * placement) from the smallest p1 to the largest p95, as reads per ns of
 * latency (the buckets' widths differ); box.dat: percentiles, in us.
 */
static int write_plot_data(const struct run *r, const char *out)
{
	double lo = 1e18, hi = 0;
	FILE *h, *b;

	for (int p = 0; p < NPLACE; p++)
		if (r[p].on) {
			double p95 = hist_pct(r[p].lat, 95);

			lo = lo < r[p].st.p1 ? lo : r[p].st.p1;
			hi = hi > p95 ? hi : p95;
		}
	if (!(h = nb_open_out(out, "hist.dat")) || !(b = nb_open_out(out, "box.dat")))
		return -1;
	fprintf(h, "bin_us width_us");
	for (int p = 0; p < NPLACE; p++)
		if (r[p].on)
			fprintf(h, " %s", place[p].name);
	fprintf(h, "\n");
	for (unsigned i = hist_index((uint64_t)lo); i < HIST_BUCKETS &&
	     (double)hist_bucket_lo(i) <= hi; i++) {
		uint64_t blo = hist_bucket_lo(i), w = hist_bucket_hi(i) - blo;

		fprintf(h, "%.4f %.4f", ((double)blo + (double)w / 2) / 1e3, (double)w / 1e3);
		for (int p = 0; p < NPLACE; p++)
			if (r[p].on)
				fprintf(h, " %.6f", (double)r[p].lat->b[i] / (double)w);
		fprintf(h, "\n");
	}
	fclose(h);
	fprintf(b, "# x name p1 p25 p50 p75 p99 (us)\n");
	for (int p = 0, x = 1; p < NPLACE; p++)
		if (r[p].on)
			fprintf(b, "%d %s %.3f %.3f %.3f %.3f %.3f\n", x++, place[p].name,
				r[p].st.p1 / 1e3, r[p].st.p25 / 1e3, r[p].st.p50 / 1e3,
				r[p].st.p75 / 1e3, r[p].st.p99 / 1e3);
	fclose(b);
	return 0;
}

/* The placements run interleaved in this many rounds. */
enum { ROUNDS = 8 };

/* A run of the benchmark: its set-up, client, and one struct run per placement. */
struct sqp {
	struct nb_env env;
	struct nb_client c;
	struct run r[NPLACE];
	uint64_t n, seed, nblk;		/* reads per placement; blocks of 4 KiB */
	uint32_t nlb;			/* LBAs per 4 KiB */
};

/* Which placements run: all the simulated set-up offers; on an existing
 * fabric, what its device and the client's node offer. */
static void choose(struct sqp *s, const struct nb_env_opts *eo, int cnode)
{
	struct run *r = s->r;

	r[P_LOCAL].on = r[P_LENDER].on = true;
	r[P_DEVICE].on = eo->cmb_mib > 0;
	r[P_DEVICE].skip = "--cmb 0";
	r[P_GPU].skip = "no GPU location in the client's queue spec yet";
	if (!s->env.external)
		return;
	if (cnode == s->env.o.lender) {
		r[P_LENDER].on = false;
		r[P_LENDER].skip = "the client runs on the lender, so lender RAM is its own RAM "
				   "(give --node of another node to compare)";
	}
	r[P_DEVICE].on = s->env.ctrl.cmb.size && s->env.ctrl.cmb.sqs;
	r[P_DEVICE].skip = !s->env.ctrl.cmb.size ? "the controller has no CMB (or its manager "
						   "left it off)"
			   : "the controller's CMB does not take SQs (CMBSZ.SQS is 0)";
}

/* Placement @p's queue, checked to be where asked, its modelled path, its
 * histogram, warmed up. */
static int open_placement(struct sqp *s, int p)
{
	struct sio_nvme_qspec qs = { .sq_loc = place[p].sq_loc, .cq_loc = SIO_PLACE_LOCAL,
				     .depth = 64 };
	struct run *r = &s->r[p];
	struct sio_nvme_ioq_info qi;
	int rc;

	if (sio_nvme_ioq_create(s->c.cl, &qs, &r->q)) {
		fprintf(stderr, "sq-placement: %s: %s\n", place[p].name, sio_errmsg());
		return 1;
	}
	sio_nvme_ioq_info(r->q, &qi);
	if (qi.sq_place != place[p].sq_loc || qi.cq_place != SIO_PLACE_LOCAL) {
		fprintf(stderr, "sq-placement: %s: the SQ went to %s, CQ to %s\n", place[p].name,
			sio_placement_name(qi.sq_place), sio_placement_name(qi.cq_place));
		return 1;
	}
	if (sq_path(&s->c, &s->env, p, &r->path)) {
		if (!s->env.external) {
			fprintf(stderr, "sq-placement: path: %s\n", sio_errmsg());
			return 1;
		}
		/* a backend without paths to this memory: no modelled figure */
		printf("  %s: no path from the device to the SQ's memory (%s): no modelled "
		       "round trip\n", place[p].name, sio_errmsg());
		memset(&r->path, 0, sizeof(r->path));
	}
	rc = 0;
	r->lat = malloc(sizeof(*r->lat));
	if (r->lat)
		hist_init(r->lat);
	if (!r->lat || (rc = measure(&s->c, &(struct run){ .q = r->q }, 2000, &s->seed, s->nlb,
				     s->nblk))) {
		fprintf(stderr, "sq-placement: warm-up %s: %s\n", place[p].name,
			rc ? sio_errmsg() : "out of memory");
		return 1;
	}
	return 0;
}

/* The client and buffer on @cnode, and every placement's queue. */
static int open_all(struct sqp *s, int cnode)
{
	nb_pin(0);
	if (nb_client_open(&s->c, &s->env, cnode, NULL, 4096) == 0)
		sio_nvme_ioq_close(s->c.q), s->c.q = NULL;	/* only the client and buffer */
	else
		return 1;
	s->nlb = 4096 / s->c.ns.lba_size;
	s->nblk = s->c.ns.nsze / s->nlb;
	for (int p = 0; p < NPLACE; p++)
		if (s->r[p].on && open_placement(s, p))
			return 1;
	return 0;
}

/* Say what runs, then the placements interleaved in rounds; their statistics. */
static int measure_all(struct sqp *s, bool model)
{
	struct run *r = s->r;

	printf("sq-placement: QD1 4 KiB random reads, %llu per placement, CQ in borrower RAM\n",
	       (unsigned long long)s->n);
	if (s->env.external)
		nb_env_describe(&s->env, stdout);
	else
		printf("  topology: node 0 (borrower) -> cluster switch -> node 1 (lender), "
		       "controller behind an expansion chassis\n  %s\n", nb_model_label(model));
	for (int p = 0; p < NPLACE; p++)
		if (!r[p].on)
			printf("  skipped: %s (%s): %s\n", place[p].name, place[p].what, r[p].skip);
	for (unsigned k = 0; k < ROUNDS; k++)
		for (int p = 0; p < NPLACE; p++) {
			if (!r[p].on)
				continue;
			if (measure(&s->c, &(struct run){ .q = r[p].q, .lat = r[p].lat },
				    s->n / ROUNDS, &s->seed, s->nlb, s->nblk)) {
				fprintf(stderr, "\nsq-placement: %s: %s\n", place[p].name,
					sio_errmsg());
				return 1;
			}
			nb_progress("sq-placement", (uint64_t)k * NPLACE + p + 1,
				    (uint64_t)ROUNDS * NPLACE);
		}
	nb_progress("sq-placement", 1, 1);
	for (int p = 0; p < NPLACE; p++)
		if (r[p].on)
			nb_stats_hist(r[p].lat, &r[p].st);
	return 0;
}

/* The table, and each placement against SQ in borrower RAM. */
static void print_table(const struct run *r, bool model)
{
	char hops[96];

	printf("\n%-7s %-30s %9s %8s %8s %8s %8s %8s  %s\n", "SQ in", "SQ-fetch path (model)",
	       "model RT", "p1", "p50", "p99", "p99.9", "mean", "(ns)");
	for (int p = 0; p < NPLACE; p++) {
		if (!r[p].on)
			continue;
		hops_str(&r[p].path, hops, sizeof(hops));
		printf("%-7s %-30s %9u %8.0f %8.0f %8.0f %8.0f %8.0f\n", place[p].name, hops,
		       r[p].path.round_trip_ns, r[p].st.p1, r[p].st.p50, r[p].st.p99,
		       r[p].st.p999, r[p].st.mean);
	}
	printf("\ndifference to SQ in borrower RAM (p50 measured vs modelled SQ-fetch round trip%s):\n",
	       model ? "" : "; model off, so 0 is expected");
	for (int p = 1; p < NPLACE; p++) {
		double dm, dp;

		if (!r[p].on)
			continue;
		dm = r[P_LOCAL].st.p50 - r[p].st.p50;
		dp = model ? (double)r[P_LOCAL].path.round_trip_ns - r[p].path.round_trip_ns : 0;
		printf("  local - %-6s measured %7.0f ns   modelled %7.0f ns   residual %+6.0f ns\n",
		       place[p].name, dm, dp, dm - dp);
	}
}

/* sq-placement.gp and the PNG from it (hist.dat, box.dat): 0 when made. */
static int write_plot(const struct run *r, const struct nb_env *env, const char *out)
{
	int ncol = r[P_LOCAL].on + r[P_LENDER].on + r[P_DEVICE].on;
	double ylo = 1e18, yhi = 0;	/* the box plot's axis: no empty decades */
	FILE *h = nb_open_out(out, "sq-placement.gp");

	if (!h)
		return -EIO;
	for (int p = 0; p < NPLACE; p++)
		if (r[p].on) {
			ylo = ylo < r[p].st.p1 ? ylo : r[p].st.p1;
			yhi = yhi > r[p].st.p99 ? yhi : r[p].st.p99;
		}
	fprintf(h,
		"set terminal pngcairo size 1400,560 noenhanced\n"
		"set output 'sq-placement.png'\n"
		"set multiplot layout 1,2 title 'SQ placement, QD1 4 KiB random reads, CQ in "
		"borrower RAM - %s'\n"
		"set title 'histogram, p1..p95 (every read counted; the tail is in the JSON)'\n"
		"set xlabel 'command completion latency (us)'\n"
		"set ylabel 'reads per ns of latency'\nset style fill transparent solid 0.45 noborder\n"
		"set key top right opaque box\n"
		"plot for [i=3:%d] 'hist.dat' using 1:i:2 with boxes title columnhead(i)\n"
		"set title 'box: p25..p75, whiskers p1..p99, line p50'\nset xlabel 'SQ in'\n"
		"set ylabel 'us (log scale, p1..p99 of all)'\nset logscale y\nset yrange [%g:%g]\n"
		"set xrange [0.5:%d.5]\nset boxwidth 0.4\nunset key\n"
		"plot 'box.dat' using 1:4:3:7:6:1:xtic(2) with candlesticks whiskerbars lw 2 lc variable, "
		"'' using 1:5:5:5:5 with candlesticks lw 3 lc 'black'\n"
		"unset multiplot\n", nb_env_model_label(env), ncol + 2, ylo * 0.9 / 1e3,
		yhi * 1.1 / 1e3, ncol);
	fclose(h);
	return nb_gnuplot(out, "sq-placement.gp");
}

static int run_placements(struct sqp_opts *o)
{
	struct sqp s = { .n = o->n - o->n % ROUNDS, .seed = 0x5eed };
	int cnode;

	if (nb_outdir(o->out))
		return 1;
	setvbuf(stdout, NULL, _IOLBF, 0);
	if (nb_env_open(&s.env, "sqplace", &o->eo, &o->tgt))
		return 1;
	cnode = nb_env_client_node(&s.env, 0);
	choose(&s, &o->eo, cnode);
	if (open_all(&s, cnode) || measure_all(&s, o->eo.model))
		return 1;
	print_table(s.r, s.env.o.model);
	if (write_json(s.r, s.n, &s.env, o->out) || write_plot_data(s.r, o->out))
		return 1;
	printf("\nwrote %s/sq-placement.json, hist.dat, box.dat%s\n", o->out,
	       write_plot(s.r, &s.env, o->out) ? "" : ", sq-placement.png");
	for (int p = 0; p < NPLACE; p++) {
		sio_nvme_ioq_close(s.r[p].q);
		free(s.r[p].lat);
	}
	nb_client_close(&s.c);
	nb_env_down(&s.env);
	return 0;
}
