/* SPDX-License-Identifier: MIT */
/*
 * overhead: the NVMe client's own cost per I/O, measured as SPDK's overhead
 * tool does. QD1 4 KiB random reads; TSC timestamps around the submit call,
 * and around each poll call: a poll that reaps the completion is the
 * completion cost, polls that find nothing are counted apart. Device time
 * falls between the two and is excluded.
 *
 * Instructions per I/O: this machine has no usable PMU (perf stat reports
 * instructions as unsupported, no rdpmc), so --instructions reruns the
 * client under valgrind --tool=callgrind, which counts deterministically,
 * with collection switched on only around the submit call (one pass) and
 * only around the reaping poll (another pass, started once the completion
 * has surely been posted).
 */
#include "opt.h"
#include "common.h"

#include <errno.h>
#include <getopt.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#if __has_include(<valgrind/callgrind.h>)
#include <valgrind/callgrind.h>
#define HAVE_CALLGRIND 1
#else	/* valgrind's headers absent: no instruction counts (--instructions refuses) */
#define CALLGRIND_TOGGLE_COLLECT do { } while (0)
#define HAVE_CALLGRIND 0
#endif
#include <smartio/nvme.h>

static void on_done(void *arg, int err, uint16_t status)
{
	*(volatile int *)arg = err ? err : 1;
	(void)status;
}

/* Client side of a callgrind pass: @what is "submit" or "complete". */
static int cg_pass(const char *fabric, int64_t devid, int lender, const char *what, uint64_t n)
{
	struct nb_env e = { .devid = devid, .o = { .lender = lender } };
	bool sub = !strcmp(what, "submit");
	uint64_t seed = 42, nblk, miss = 0;
	struct nb_client c;
	uint32_t nlb;
	int rc;

	snprintf(e.fabric, sizeof(e.fabric), "%s", fabric);
	if ((rc = nb_client_open(&c, &e, -1, NULL, 4096)))	/* $SMARTIO_NODE */
		return 1;
	nlb = 4096 / c.ns.lba_size;
	nblk = c.ns.nsze / nlb;
	for (uint64_t i = 0; i < n; i++) {
		volatile int st = 0;
		uint64_t lba = nb_rand(&seed) % nblk * nlb;

		if (sub)
			CALLGRIND_TOGGLE_COLLECT;
		rc = sio_nvme_ioq_read(c.q, 1, lba, nlb, c.buf, 0, on_done, (void *)&st);
		if (sub)
			CALLGRIND_TOGGLE_COLLECT;
		if (rc)
			break;
		if (!sub)
			usleep(400);	/* longer than the controller's deepest idle sleep */
		for (int k = 0; !st; k++) {
			if (!sub && k == 0)
				CALLGRIND_TOGGLE_COLLECT;
			rc = sio_nvme_ioq_poll(c.q, 1);
			if (!sub && k == 0)
				CALLGRIND_TOGGLE_COLLECT;
			if (rc < 0)
				goto out;
			if (!sub && k == 0 && rc == 0)
				miss++;
		}
	}
	rc = 0;
out:
	printf("callgrind-pass %s ios %llu missed %llu rc %d\n", what, (unsigned long long)n,
	       (unsigned long long)miss, rc);
	nb_client_close(&c);
	return rc ? 1 : 0;
}

/* Run one callgrind pass over a child; Ir per I/O, or -1. */
static double callgrind(const char *self, const struct nb_env *e, const char *out,
			const char *what, uint64_t n)
{
	char cmd[8192], file[4096], line[512];
	double ir = -1;
	FILE *f;

	snprintf(file, sizeof(file), "%s/callgrind.%s.out", out, what);
	snprintf(cmd, sizeof(cmd),
		 "SMARTIO_NODE=%d valgrind --tool=callgrind --collect-atstart=no --callgrind-out-file='%s' "
		 "'%s' --cg-pass %s --cg-fabric %s --cg-dev %lld --cg-lender %d -n %llu "
		 ">'%s/callgrind.%s.log' 2>&1",
		 nb_env_client_node(e, 0), file, self, what, e->fabric, (long long)e->devid, e->o.lender,
		 (unsigned long long)n, out, what);
	if (system(cmd)) {
		fprintf(stderr, "overhead: callgrind pass failed, see %s/callgrind.%s.log\n", out, what);
		return -1;
	}
	if (!(f = fopen(file, "r")))
		return -1;
	while (fgets(line, sizeof(line), f))
		if (!strncmp(line, "totals:", 7) || !strncmp(line, "summary:", 8))
			ir = atof(strchr(line, ':') + 1) / (double)n;
	fclose(f);
	return ir;
}

/*
 * What the numbers are made of, measured on the same two CPUs before the
 * controller starts: the cost of one timestamp pair with nothing between
 * (subtracted from the net figures), and the round trip of a cache line
 * between the client's CPU and the controller's (a completion is a line the
 * other CPU wrote, so the reaping poll pays one transfer, half the round trip).
 */
#define CAL_N	100000

static volatile uint32_t ping[16] __attribute__((aligned(64)));
static volatile uint32_t pong[16] __attribute__((aligned(64)));

static void *pong_thread(void *arg)
{
	nb_pin(*(int *)arg);
	for (uint32_t i = 1; i <= CAL_N; i++) {
		/* bounded by the main thread, which always sends CAL_N pings */
		while (ping[0] != i)
			sio_nvme_cpu_relax();
		pong[0] = i;
	}
	return NULL;
}

/* p50 of an empty timestamp pair and of a cache-line round trip, in ticks. */
static int calibrate(int cpu_a, int cpu_b, double *ts_ticks, double *rt_ticks)
{
	uint64_t *v = malloc(CAL_N * sizeof(*v));
	pthread_t t;

	if (!v)
		return -1;
	nb_pin(cpu_a);
	for (uint32_t i = 0; i < CAL_N; i++) {
		uint64_t a = nb_tsc(), b = nb_tsc();

		v[i] = b - a;
	}
	qsort(v, CAL_N, sizeof(*v), nb_cmp_u64);
	*ts_ticks = (double)v[CAL_N / 2];
	ping[0] = pong[0] = 0;
	if (pthread_create(&t, NULL, pong_thread, &cpu_b)) {
		free(v);
		return -1;
	}
	for (uint32_t i = 1; i <= CAL_N; i++) {
		uint64_t a = nb_tsc(), b;

		ping[0] = i;
		while (pong[0] != i)
			sio_nvme_cpu_relax();
		b = nb_tsc();
		v[i - 1] = b - a;
	}
	pthread_join(t, NULL);
	qsort(v, CAL_N, sizeof(*v), nb_cmp_u64);
	*rt_ticks = (double)v[CAL_N / 2];
	free(v);
	return 0;
}

static void usage(FILE *o)
{
	fprintf(o,
		"usage: nvme-bench-overhead [options]\n"
		"  -n, --ios N         I/Os (default 200000)\n"
		"  -q, --quick         20000 I/Os, 500 under callgrind\n"
		"      --instructions  also count instructions with valgrind --tool=callgrind\n"
		"  -o, --out DIR       output directory (default bench-out/overhead)\n"
		BENCH_TARGET_HELP);
}

/* What to measure: parsed from the command line. */
struct ovh_opts {
	struct bench_target tgt;
	const char *out;
	uint64_t n, ncg;
	bool instr;
};

static int run_overhead(struct ovh_opts *o);

int main(int argc, char **argv)
{
	static const struct option lo[] = {
		{ "ios", required_argument, NULL, 'n' }, { "quick", no_argument, NULL, 'q' },
		{ "instructions", no_argument, NULL, 'I' }, { "out", required_argument, NULL, 'o' },
		{ "cg-pass", required_argument, NULL, 'P' }, { "cg-fabric", required_argument, NULL, 'F' },
		{ "cg-dev", required_argument, NULL, 'D' }, { "cg-lender", required_argument, NULL, 'L' },
		BENCH_TARGET_LONGOPTS, { 0 },
	};
	struct ovh_opts o = { .out = "bench-out/overhead", .n = 200000, .ncg = 2000 };
	const char *pass = NULL, *cgfab = NULL;
	int64_t cgdev = -1;
	int opt, cglender = 1;
	bool quick = false;

	prog_init("nvme-bench-overhead", usage);
	bench_target_init(&o.tgt);
	while ((opt = prog_getopt(argc, argv, "n:qo:h", lo)) != -1) {
		switch (opt) {
		case 'n': o.n = o.ncg = prog_u64("--ios", optarg, 100, 50000000); break;
		case 'q': quick = true; break;
		case 'I':
			if (!HAVE_CALLGRIND)
				prog_usage_error("--instructions needs valgrind's headers at build time "
						 "(apt-get install valgrind)");
			o.instr = true;
			break;
		case 'o': o.out = optarg; break;
		case 'P': pass = optarg; break;
		case 'F': cgfab = optarg; break;
		case 'D': cgdev = atoll(optarg); break;
		case 'L': cglender = (int)prog_u64("-L", optarg, 0, SIO_MAX_NODES - 1); break;
		default:
			if (!bench_target_opt(prog_name, &o.tgt, opt, optarg))
				prog_usage_error("unhandled option");
		}
	}
	prog_no_args(argc, argv);
	bench_target_check(prog_name, &o.tgt);
	if (pass)	/* a callgrind pass: this program again, under valgrind */
		return cgfab ? cg_pass(cgfab, cgdev, cglender, pass, o.n) : PROG_USAGE;
	if (quick)
		o.n = 20000, o.ncg = 500;
	if (o.ncg > 5000)
		o.ncg = 5000;
	return run_overhead(&o);
}

static int run_overhead(struct ovh_opts *o)
{
	struct nb_env_opts eo = { .nodes = 2, .lender = 1, .backing = "ram:256M", .pin = true };
	struct bench_target tgt = o->tgt;
	const char *out = o->out;
	uint64_t n = o->n, ncg = o->ncg, seed = 7, nblk, empty = 0;
	struct hist *sub, *cpl;	/* ns, every I/O */
	uint64_t empty_ticks = 0;
	int rc;
	bool instr = o->instr;
	struct nb_stats ss, cs;
	struct nb_client c;
	struct nb_env env, shown;
	double tpn, ir_sub = -1, ir_cpl = -1, ts_ns, rt_ns, net_sub, net_cpl;
	uint32_t nlb;
	FILE *j;

	setvbuf(stdout, NULL, _IOLBF, 0);
	if (nb_outdir("bench-out") || nb_outdir(out))
		return 1;
	tpn = nb_tsc_per_ns();
	if (calibrate(0, nb_ncpus() - 1, &ts_ns, &rt_ns)) {
		fprintf(stderr, "overhead: calibration thread: %s\n", strerror(errno));
		return 1;
	}
	ts_ns /= tpn;
	rt_ns /= tpn;
	if (nb_env_open(&env, "overhead", &eo, &tgt))
		return 1;
	nb_pin(0);
	if (nb_client_open(&c, &env, nb_env_client_node(&env, 0), NULL, 4096))
		return 1;
	nlb = 4096 / c.ns.lba_size;
	nblk = c.ns.nsze / nlb;
	sub = malloc(sizeof(*sub));
	cpl = malloc(sizeof(*cpl));
	if (!sub || !cpl)
		return 1;
	hist_init(sub);
	hist_init(cpl);
	printf("overhead: QD1 4 KiB random reads, %llu I/Os, client on node %d, controller on node "
	       "%d; %s; TSC %.3f ticks/ns\n", (unsigned long long)n, nb_env_client_node(&env, 0),
	       env.o.lender, nb_env_model_label(&env), tpn);
	nb_env_describe(&env, stdout);
	for (uint64_t i = 0; i < n + 1000; i++) {	/* the first 1000 warm up */
		volatile int st = 0;
		uint64_t lba = nb_rand(&seed) % nblk * nlb, a, b, done = 0;

		a = nb_tsc();
		rc = sio_nvme_ioq_read(c.q, 1, lba, nlb, c.buf, 0, on_done, (void *)&st);
		b = nb_tsc();
		if (rc) {
			fprintf(stderr, "overhead: submit: %s\n", sio_errmsg());
			return 1;
		}
		if (i >= 1000)
			hist_add(sub, (uint64_t)((double)(b - a) / tpn + 0.5));
		while (!st) {
			a = nb_tsc();
			rc = sio_nvme_ioq_poll(c.q, 1);
			b = nb_tsc();
			if (rc < 0) {
				fprintf(stderr, "overhead: poll: %s\n", sio_errmsg());
				return 1;
			}
			if (rc > 0)
				done = b - a;
			else if (i >= 1000)
				empty++, empty_ticks += b - a;
		}
		if (i >= 1000)
			hist_add(cpl, (uint64_t)((double)done / tpn + 0.5));
		if (i % 4096 == 0)
			nb_progress("overhead", i, n + 1000);
	}
	nb_progress("overhead", 1, 1);
	nb_stats_hist(sub, &ss);
	nb_stats_hist(cpl, &cs);
	nb_client_close(&c);

	if (instr) {
		char self[4096];
		ssize_t l = readlink("/proc/self/exe", self, sizeof(self) - 1);

		self[l > 0 ? l : 0] = 0;
		fprintf(stderr, "  callgrind: %llu I/Os per pass (slow)\n", (unsigned long long)ncg);
		ir_sub = callgrind(self, &env, out, "submit", ncg);
		ir_cpl = callgrind(self, &env, out, "complete", ncg);
	}
	shown = env;	/* what was measured, for the JSON */
	nb_env_down(&env);

	printf("\n%-22s %8s %8s %8s %8s %8s %12s\n", "per I/O (ns)", "p1", "p50", "mean", "p99",
	       "p99.9", "instructions");
	printf("%-22s %8.0f %8.0f %8.1f %8.0f %8.0f %12.0f\n", "submit", ss.p1, ss.p50, ss.mean,
	       ss.p99, ss.p999, ir_sub);
	printf("%-22s %8.0f %8.0f %8.1f %8.0f %8.0f %12.0f\n", "complete (reaping poll)", cs.p1,
	       cs.p50, cs.mean, cs.p99, cs.p999, ir_cpl);
	printf("%-22s %8s %8.0f %8.1f\n", "submit + complete", "", ss.p50 + cs.p50, ss.mean + cs.mean);
	printf("empty polls: %.2f per I/O, %.1f ns each (device time, excluded)\n",
	       (double)empty / (double)n, empty ? (double)empty_ticks / tpn / (double)empty : 0);
	/* The timestamp pair is inside every figure above: take it out once. */
	net_sub = ss.p50 > ts_ns ? ss.p50 - ts_ns : 0;
	net_cpl = cs.p50 > ts_ns ? cs.p50 - ts_ns : 0;
	printf("\ntimestamp pair (lfence; rdtsc; lfence, twice): %.1f ns at p50, subtracted below\n",
	       ts_ns);
	printf("cache-line round trip CPU 0 <-> CPU %d: %.0f ns at p50 (one transfer about %.0f ns;\n"
	       "  the reaping poll loads a CQ entry the controller's CPU just wrote)\n",
	       nb_ncpus() - 1, rt_ns, rt_ns / 2);
	printf("p50 net of timestamps: submit %.0f ns, complete %.0f ns, sum %.0f ns\n", net_sub,
	       net_cpl, net_sub + net_cpl);
	printf("target: median submit + complete <= 150 ns (net of timestamps): %s (%.0f ns; "
	       "%.0f ns with them)\n", net_sub + net_cpl <= 150 ? "met" : "MISSED",
	       net_sub + net_cpl, ss.p50 + cs.p50);
	if (instr)
		printf("instructions: valgrind --tool=callgrind (Ir), collection only inside the "
		       "timed calls; the PMU is not available here\n");

	if ((j = nb_open_out(out, "overhead.json"))) {
		fprintf(j, "{\"benchmark\": \"overhead\", \"latency_model\": %s, \"model_note\": \"%s\", "
			   "\"count\": %llu, \"tsc_ticks_per_ns\": %.4f, ",
			shown.o.model ? "true" : "false", nb_env_model_label(&shown),
			(unsigned long long)n, tpn);
		nb_json_target(j, &shown);
		fprintf(j, ", ");
		nb_json_stats(j, "submit", &ss);
		fprintf(j, ", ");
		nb_json_stats(j, "complete", &cs);
		fprintf(j, ", \"submit_plus_complete_p50_ns\": %.1f, \"empty_polls_per_io\": %.3f, "
			   "\"instructions_submit\": %.1f, \"instructions_complete\": %.1f, "
			   "\"instructions_source\": \"%s\", \"timestamp_pair_ns\": %.1f, "
			   "\"cacheline_round_trip_ns\": %.1f, \"submit_net_p50_ns\": %.1f, "
			   "\"complete_net_p50_ns\": %.1f, \"target_ns\": 150, \"target_met\": %s}\n",
			ss.p50 + cs.p50, (double)empty / (double)n, ir_sub, ir_cpl,
			instr ? "valgrind --tool=callgrind" : "not measured", ts_ns, rt_ns, net_sub,
			net_cpl, net_sub + net_cpl <= 150 ? "true" : "false");
		fclose(j);
	}
	if ((j = nb_open_out(out, "overhead.dat"))) {
		fprintf(j, "# x name p1 p25 p50 p75 p99 (ns)\n1 submit %.0f %.0f %.0f %.0f %.0f\n"
			   "2 complete %.0f %.0f %.0f %.0f %.0f\n", ss.p1, ss.p25, ss.p50, ss.p75,
			ss.p99, cs.p1, cs.p25, cs.p50, cs.p75, cs.p99);
		fclose(j);
	}
	if ((j = nb_open_out(out, "overhead.gp"))) {
		fprintf(j, "set terminal pngcairo size 700,500 noenhanced\nset output 'overhead.png'\n"
			   "set title 'NVMe client cost per I/O (box p25..p75, whiskers p1..p99, line p50)'\n"
			   "set ylabel 'ns'\nset xrange [0.5:2.5]\nset boxwidth 0.4\nunset key\nset grid y\n"
			   "plot 'overhead.dat' using 1:4:3:7:6:xtic(2) with candlesticks whiskerbars lw 2, "
			   "'' using 1:5:5:5:5 with candlesticks lw 3 lc 'black'\n");
		fclose(j);
		nb_gnuplot(out, "overhead.gp");
	}
	free(sub);
	free(cpl);
	return 0;
}
