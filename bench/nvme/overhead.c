/* SPDX-License-Identifier: MIT */
/*
 * overhead: the NVMe client's own cost per I/O, measured as SPDK's overhead
 * tool does. QD1 4 KiB random reads; TSC timestamps around the submit call,
 * and around each poll call: a poll that reaps the completion is the
 * completion cost, polls that find nothing are counted apart. Device time
 * falls between the two and is excluded. The client and the controller are
 * pinned to stated CPUs, and the whole is run --repeat times: each run is
 * reported, the summary is the median and the range of the runs' p50s (the
 * completion figure moves with where the two CPUs sit at the moment).
 *
 * Instructions per I/O: this machine has no usable PMU (perf stat reports
 * instructions as unsupported, no rdpmc), so --instructions reruns the
 * client under valgrind --tool=callgrind, which counts deterministically,
 * with collection switched on only around the submit call (one pass) and
 * only around the reaping poll (another pass, started once the read's data
 * has landed, so the poll finds the completion). Two figures: inside the
 * driver's calls (callgrind's inclusive cost of sio_nvme_ioq_read() and of
 * the reaping sio_nvme_ioq_poll(), callback included), and with the loop's
 * own instructions between the toggles: issue 27's measure, the one its
 * table gives for e1d480b and main, which tests/bench/instructions.sh checks
 * against the budget in tests/bench/instructions-budget.
 */
#include "opt.h"
#include "common.h"

#include <errno.h>
#include <getopt.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>
#if __has_include(<valgrind/callgrind.h>)
#include <valgrind/callgrind.h>
#define HAVE_CALLGRIND 1
#else	/* valgrind's headers absent: no instruction counts (--instructions refuses) */
#define CALLGRIND_TOGGLE_COLLECT do { } while (0)
#define HAVE_CALLGRIND 0
#endif
#include <smartio/nvme.h>

#define POISON	0xa5a5a5a5a5a5a5a5ull

struct opts {
	uint64_t n, ncg;
	bool instr, instr_only;
	const char *out;
	struct nb_run run;
	struct bench_target tgt;
};

/* What the callgrind passes found, per I/O. */
struct instr {
	double submit, complete;		/* inside the driver's calls */
	double submit_loop, complete_loop;	/* all collected, the loop's too */
	uint64_t missed;			/* reaping polls that found nothing */
};

static void on_done(void *arg, int err, uint16_t status)
{
	*(volatile int *)arg = err ? err : 1;
	(void)status;
}

/* The read's data has landed (the buffer's last word left the poison): the
 * controller posts the completion right after. Bounded: a second. */
static void wait_data(volatile uint64_t *last)
{
	for (int i = 0; i < 100000 && *last == POISON; i++)
		if (i > 1000)
			usleep(10);
	usleep(100);
}

/* Client side of a callgrind pass: @what is "submit" or "complete". */
static int cg_pass(const char *fabric, int64_t devid, int lender, const char *what, uint64_t n)
{
	struct nb_env e = { .devid = devid, .o = { .lender = lender } };
	bool sub = !strcmp(what, "submit");
	uint64_t seed = 42, nblk, miss = 0;
	volatile uint64_t *last;
	struct nb_client c;
	uint32_t nlb;
	int rc;

	snprintf(e.fabric, sizeof(e.fabric), "%s", fabric);
	if ((rc = nb_client_open(&c, &e, -1, NULL, 4096)))	/* $SMARTIO_NODE */
		return 1;
	nlb = 4096 / c.ns.lba_size;
	nblk = c.ns.nsze / nlb;
	last = (volatile uint64_t *)((uint8_t *)c.buf->va + 4096 - 8);
	for (uint64_t i = 0; i < n; i++) {
		volatile int st = 0;
		uint64_t lba = nb_rand(&seed) % nblk * nlb;

		*last = POISON;
		if (sub)
			CALLGRIND_TOGGLE_COLLECT;
		rc = sio_nvme_ioq_read(c.q, 1, lba, nlb, c.buf, 0, on_done, (void *)&st);
		if (sub)
			CALLGRIND_TOGGLE_COLLECT;
		if (rc)
			break;
		if (!sub)
			wait_data(last);
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
	return rc ? 1 : miss ? 3 : 0;
}

/*
 * From a callgrind profile: all instructions collected, and the inclusive
 * cost of the calls to @fn (from the calling function's "calls=" records:
 * the line after one holds the call's inclusive cost). Function names are
 * compressed, "(id) name" the first time and "(id)" after.
 */
static int cg_parse(const char *file, const char *fn, double *total, double *inclusive)
{
	static char names[4096][64];
	char line[1024];
	int want = -1, callee = -1, id;
	bool take = false;
	FILE *f = fopen(file, "r");

	if (!f)
		return -1;
	*total = *inclusive = 0;
	memset(names, 0, sizeof(names));
	while (fgets(line, sizeof(line), f)) {
		char *p = NULL;

		if (!strncmp(line, "fn=(", 4))
			p = line + 4;
		else if (!strncmp(line, "cfn=(", 5))
			p = line + 5;
		if (p) {
			id = atoi(p);
			p = strchr(p, ')');
			if (id >= 0 && id < 4096 && p && p[1] == ' ') {
				snprintf(names[id], sizeof(names[id]), "%s", p + 2);
				names[id][strcspn(names[id], "\n")] = 0;
				if (!strcmp(names[id], fn))
					want = id;
			}
			if (line[0] == 'c')
				callee = id;
			continue;
		}
		if (!strncmp(line, "calls=", 6)) {
			take = callee >= 0 && callee == want;
			continue;
		}
		if (take) {
			char *sp = strrchr(line, ' ');

			*inclusive += sp ? atof(sp + 1) : 0;
			take = false;
		}
		if (!strncmp(line, "totals:", 7) || !strncmp(line, "summary:", 8))
			*total = atof(strchr(line, ':') + 1);
	}
	fclose(f);
	return want >= 0 ? 0 : -1;
}

/* Run one callgrind pass over a child: instructions per I/O inside @fn's
 * calls and in all, or -1. A pass whose reaping poll found nothing is run
 * again (at most three times): its count would be an empty poll's. */
static int callgrind(const char *self, const struct nb_env *e, const char *out, const char *what,
		     const char *fn, uint64_t n, double *in, double *all, uint64_t *missed)
{
	char cmd[8192], file[4096];
	double tot, inc;
	int st = -1;

	snprintf(file, sizeof(file), "%s/callgrind.%s.out", out, what);
	snprintf(cmd, sizeof(cmd),
		 "SMARTIO_NODE=%d valgrind --tool=callgrind --collect-atstart=no "
		 "--callgrind-out-file='%s' '%s' --cg-pass %s --cg-fabric %s --cg-dev %lld "
		 "--cg-lender %d -n %llu >'%s/callgrind.%s.log' 2>&1",
		 nb_env_client_node(e, 0), file, self, what, e->fabric, (long long)e->devid,
		 e->o.lender, (unsigned long long)n, out, what);
	for (int t = 0; t < 3; t++) {
		st = system(cmd);
		if (!WIFEXITED(st) || WEXITSTATUS(st) != 3)
			break;
		(*missed)++;
	}
	if (st) {
		fprintf(stderr, "overhead: callgrind pass %s failed, see %s/callgrind.%s.log\n",
			what, out, what);
		return -1;
	}
	if (cg_parse(file, fn, &tot, &inc)) {
		fprintf(stderr, "overhead: %s: no calls to %s recorded\n", file, fn);
		return -1;
	}
	*in = inc / (double)n;
	*all = tot / (double)n;
	return 0;
}

static int count_instructions(const struct opts *o, const struct nb_env *e, struct instr *ir)
{
	char self[4096];
	ssize_t l = readlink("/proc/self/exe", self, sizeof(self) - 1);

	self[l > 0 ? l : 0] = 0;
	memset(ir, 0, sizeof(*ir));
	fprintf(stderr, "  callgrind: %llu I/Os per pass\n", (unsigned long long)o->ncg);
	if (callgrind(self, e, o->out, "submit", "sio_nvme_ioq_read", o->ncg, &ir->submit,
		      &ir->submit_loop, &ir->missed) ||
	    callgrind(self, e, o->out, "complete", "sio_nvme_ioq_poll", o->ncg, &ir->complete,
		      &ir->complete_loop, &ir->missed))
		return -1;
	return 0;
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

/* One run: @n timed I/Os (after 1000 to warm up); stats in ns. */
struct run {
	struct nb_stats sub, cpl;
	double empty_per_io, empty_ns;
};

static int measure(struct nb_client *c, uint64_t n, double tpn, uint64_t *seed,
		   struct hist *sub, struct hist *cpl, struct run *r)
{
	uint32_t nlb = 4096 / c->ns.lba_size;
	uint64_t nblk = c->ns.nsze / nlb, empty = 0, empty_ticks = 0;
	int rc;

	hist_init(sub);
	hist_init(cpl);
	for (uint64_t i = 0; i < n + 1000; i++) {
		volatile int st = 0;
		uint64_t lba = nb_rand(seed) % nblk * nlb, a, b, done = 0;

		a = nb_tsc();
		rc = sio_nvme_ioq_read(c->q, 1, lba, nlb, c->buf, 0, on_done, (void *)&st);
		b = nb_tsc();
		if (rc) {
			fprintf(stderr, "overhead: submit: %s\n", sio_errmsg());
			return -1;
		}
		if (i >= 1000)
			hist_add(sub, (uint64_t)((double)(b - a) / tpn + 0.5));
		while (!st) {
			a = nb_tsc();
			rc = sio_nvme_ioq_poll(c->q, 1);
			b = nb_tsc();
			if (rc < 0) {
				fprintf(stderr, "overhead: poll: %s\n", sio_errmsg());
				return -1;
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
	nb_stats_hist(sub, &r->sub);
	nb_stats_hist(cpl, &r->cpl);
	r->empty_per_io = (double)empty / (double)n;
	r->empty_ns = empty ? (double)empty_ticks / tpn / (double)empty : 0;
	return 0;
}

static void write_json(const struct opts *o, const struct nb_env *e, const struct run *runs,
		       unsigned nruns, double tpn, double ts_ns, double rt_ns,
		       const struct nb_spread sp[3], const struct instr *ir)
{
	const struct run *mid = &runs[0];	/* the run whose sum is the median */
	FILE *j = nb_open_out(o->out, "overhead.json");
	double net;

	if (!j)
		return;
	for (unsigned r = 0; r < nruns; r++)
		if (runs[r].sub.p50 + runs[r].cpl.p50 == sp[2].median)
			mid = &runs[r];
	net = sp[2].median > 2 * ts_ns ? sp[2].median - 2 * ts_ns : 0;
	fprintf(j, "{\"benchmark\": \"overhead\", \"latency_model\": %s, \"model_note\": \"%s\", "
		   "\"count\": %llu, \"tsc_ticks_per_ns\": %.4f, ", e->o.model ? "true" : "false",
		nb_env_model_label(e), (unsigned long long)o->n, tpn);
	nb_json_target(j, e);
	fprintf(j, ", ");
	nb_json_run(j, &o->run, e);
	fprintf(j, ", \"runs\": [");
	for (unsigned r = 0; r < nruns; r++)
		fprintf(j, "%s{\"submit_p50_ns\": %.1f, \"complete_p50_ns\": %.1f, "
			   "\"empty_polls_per_io\": %.3f}", r ? ", " : "", runs[r].sub.p50,
			runs[r].cpl.p50, runs[r].empty_per_io);
	fprintf(j, "], ");
	nb_json_stats(j, "submit", &mid->sub);
	fprintf(j, ", ");
	nb_json_stats(j, "complete", &mid->cpl);
	fprintf(j, ", \"submit_p50_median_ns\": %.1f, \"submit_p50_min_ns\": %.1f, "
		   "\"submit_p50_max_ns\": %.1f, \"complete_p50_median_ns\": %.1f, "
		   "\"complete_p50_min_ns\": %.1f, \"complete_p50_max_ns\": %.1f, "
		   "\"submit_plus_complete_p50_ns\": %.1f, \"submit_plus_complete_p50_min_ns\": %.1f, "
		   "\"submit_plus_complete_p50_max_ns\": %.1f, \"empty_polls_per_io\": %.3f, ",
		sp[0].median, sp[0].min, sp[0].max, sp[1].median, sp[1].min, sp[1].max,
		sp[2].median, sp[2].min, sp[2].max, mid->empty_per_io);
	fprintf(j, "\"instructions_submit\": %.1f, \"instructions_complete\": %.1f, "
		   "\"instructions_submit_with_loop\": %.1f, \"instructions_complete_with_loop\": %.1f, "
		   "\"instructions_source\": \"%s\", \"timestamp_pair_ns\": %.1f, "
		   "\"cacheline_round_trip_ns\": %.1f, \"submit_plus_complete_net_p50_ns\": %.1f, "
		   "\"target_ns\": 150, \"target_met\": %s}\n",
		ir ? ir->submit : -1, ir ? ir->complete : -1, ir ? ir->submit_loop : -1,
		ir ? ir->complete_loop : -1,
		ir ? "valgrind --tool=callgrind, inclusive cost of the calls" : "not measured",
		ts_ns, rt_ns, net, net <= 150 ? "true" : "false");
	fclose(j);
}

static void plot(const char *out, const struct run *r)
{
	FILE *j = nb_open_out(out, "overhead.dat");

	if (!j)
		return;
	fprintf(j, "# x name p1 p25 p50 p75 p99 (ns)\n1 submit %.0f %.0f %.0f %.0f %.0f\n"
		   "2 complete %.0f %.0f %.0f %.0f %.0f\n", r->sub.p1, r->sub.p25, r->sub.p50,
		r->sub.p75, r->sub.p99, r->cpl.p1, r->cpl.p25, r->cpl.p50, r->cpl.p75, r->cpl.p99);
	fclose(j);
	if (!(j = nb_open_out(out, "overhead.gp")))
		return;
	fprintf(j, "set terminal pngcairo size 700,500 noenhanced\nset output 'overhead.png'\n"
		   "set title 'NVMe client cost per I/O (box p25..p75, whiskers p1..p99, line p50)'\n"
		   "set ylabel 'ns'\nset xrange [0.5:2.5]\nset boxwidth 0.4\nunset key\nset grid y\n"
		   "plot 'overhead.dat' using 1:4:3:7:6:xtic(2) with candlesticks whiskerbars lw 2, "
		   "'' using 1:5:5:5:5 with candlesticks lw 3 lc 'black'\n");
	fclose(j);
	nb_gnuplot(out, "overhead.gp");
}

static void print_instr(const struct instr *ir)
{
	printf("instructions per I/O (valgrind --tool=callgrind, Ir; the PMU is not available "
	       "here):\n  inside the calls: submit %.1f + complete %.1f = %.1f\n"
	       "  with the benchmark's loop between the toggles (issue 27's measure, the "
	       "budget's): %.1f + %.1f = %.1f\n",
	       ir->submit, ir->complete, ir->submit + ir->complete, ir->submit_loop,
	       ir->complete_loop, ir->submit_loop + ir->complete_loop);
	if (ir->missed)
		printf("  (%llu pass(es) run again: a reaping poll found nothing)\n",
		       (unsigned long long)ir->missed);
}

/* The timed runs, one after the other on one set-up; then the summary. */
static int timed(const struct opts *o, struct nb_env *env, double tpn, double ts_ns,
		 double rt_ns, const struct instr *ir)
{
	struct run *runs = calloc(o->run.repeat, sizeof(*runs));
	struct hist *sub = malloc(sizeof(*sub)), *cpl = malloc(sizeof(*cpl));	/* ns, every I/O */
	double v[3][1000];
	struct nb_spread sp[3];
	struct nb_client c;
	uint64_t seed = 7;
	char b[3][64];

	if (!runs || !sub || !cpl)
		return 1;
	nb_pin(o->run.client_cpu);
	if (nb_client_open(&c, env, nb_env_client_node(env, 0), NULL, 4096))
		return 1;
	printf("\n%-5s %22s %22s %10s\n", "run", "submit p1/p50/p99 ns", "complete p1/p50/p99 ns",
	       "empty/IO");
	for (unsigned r = 0; r < o->run.repeat; r++) {
		if (measure(&c, o->n, tpn, &seed, sub, cpl, &runs[r]))
			return 1;
		nb_progress("overhead", 1, 1);
		printf("%-5u %8.0f %6.0f %6.0f %8.0f %6.0f %6.0f %10.2f\n", r + 1, runs[r].sub.p1,
		       runs[r].sub.p50, runs[r].sub.p99, runs[r].cpl.p1, runs[r].cpl.p50,
		       runs[r].cpl.p99, runs[r].empty_per_io);
		v[0][r] = runs[r].sub.p50;
		v[1][r] = runs[r].cpl.p50;
		v[2][r] = runs[r].sub.p50 + runs[r].cpl.p50;
	}
	nb_client_close(&c);
	for (int k = 0; k < 3; k++)
		nb_spread(v[k], o->run.repeat, &sp[k]);
	printf("\np50 over %u run(s), median [min..max] ns: submit %s, complete %s, "
	       "submit + complete %s\n", o->run.repeat, nb_spread_str(&sp[0], b[0], 64),
	       nb_spread_str(&sp[1], b[1], 64), nb_spread_str(&sp[2], b[2], 64));
	printf("timestamp pair (lfence; rdtsc; lfence, twice): %.1f ns at p50, inside each "
	       "figure above\n", ts_ns);
	printf("cache-line round trip CPU %d <-> CPU %d: %.0f ns at p50 (one transfer about "
	       "%.0f ns;\n  the reaping poll loads a CQ entry the controller's CPU just wrote)\n",
	       o->run.client_cpu, o->run.ctrl_cpu, rt_ns, rt_ns / 2);
	printf("submit + complete net of the two timestamp pairs: %.0f ns (target <= 150 ns: "
	       "%s)\n", sp[2].median - 2 * ts_ns, sp[2].median - 2 * ts_ns <= 150 ? "met" : "MISSED");
	if (ir)
		print_instr(ir);
	write_json(o, env, runs, o->run.repeat, tpn, ts_ns, rt_ns, sp, ir);
	plot(o->out, &runs[0]);
	free(runs);
	free(sub);
	free(cpl);
	return 0;
}

static int run(struct opts *o)
{
	struct nb_env_opts eo = { .nodes = 2, .lender = 1, .backing = "ram:256M" };
	struct nb_env env;
	struct instr ir;
	double tpn, ts_ns = 0, rt_ns = 0;
	int rc;

	setvbuf(stdout, NULL, _IOLBF, 0);
	if (nb_outdir(o->out))
		return 1;
	tpn = nb_tsc_per_ns();
	if (!o->instr_only && calibrate(o->run.client_cpu, o->run.ctrl_cpu, &ts_ns, &rt_ns)) {
		fprintf(stderr, "overhead: calibration thread: %s\n", strerror(errno));
		return 1;
	}
	ts_ns /= tpn;
	rt_ns /= tpn;
	nb_run_apply(&o->run, &eo);
	if (nb_env_open(&env, "overhead", &eo, &o->tgt))
		return 1;
	printf("overhead: QD1 4 KiB random reads, %llu I/Os per run, client on node %d, "
	       "controller on node %d; %s; TSC %.3f ticks/ns\n", (unsigned long long)o->n,
	       nb_env_client_node(&env, 0), env.o.lender, nb_env_model_label(&env), tpn);
	nb_env_describe(&env, stdout);
	nb_run_describe(&o->run, &env, stdout);
	rc = o->instr ? count_instructions(o, &env, &ir) : 0;
	if (!rc && o->instr_only) {
		print_instr(&ir);
		write_json(o, &env, &(struct run){ 0 }, 0, tpn, 0, 0,
			   (struct nb_spread[3]){ { 0 } }, &ir);
	} else if (!rc) {
		rc = timed(o, &env, tpn, ts_ns, rt_ns, o->instr ? &ir : NULL);
	}
	nb_env_down(&env);
	return rc ? 1 : 0;
}

static void usage(FILE *o)
{
	fprintf(o,
		"usage: nvme-bench-overhead [options]\n"
		"  -n, --ios N         I/Os per run (default 200000)\n"
		"  -q, --quick         20000 I/Os per run, 500 under callgrind\n"
		"      --instructions  also count instructions with valgrind --tool=callgrind\n"
		"      --instructions-only  only count them (no timed runs)\n"
		"  -o, --out DIR       output directory (default bench-out/overhead)\n"
		NB_RUN_HELP BENCH_TARGET_HELP);
}

int main(int argc, char **argv)
{
	static const struct option lo[] = {
		{ "ios", required_argument, NULL, 'n' }, { "quick", no_argument, NULL, 'q' },
		{ "instructions", no_argument, NULL, 'I' },
		{ "instructions-only", no_argument, NULL, 'i' }, { "out", required_argument, NULL, 'o' },
		{ "cg-pass", required_argument, NULL, 'P' }, { "cg-fabric", required_argument, NULL, 'F' },
		{ "cg-dev", required_argument, NULL, 'D' }, { "cg-lender", required_argument, NULL, 'L' },
		NB_RUN_LONGOPTS, BENCH_TARGET_LONGOPTS, { 0 },
	};
	struct opts o = { .n = 200000, .ncg = 2000, .out = "bench-out/overhead" };
	const char *pass = NULL, *cgfab = NULL;
	int64_t cgdev = -1;
	int opt, cglender = 1;
	bool quick = false;

	prog_init("nvme-bench-overhead", usage);
	bench_target_init(&o.tgt);
	nb_run_init(&o.run, 3);
	while ((opt = prog_getopt(argc, argv, "n:qo:h", lo)) != -1) {
		switch (opt) {
		case 'n': o.n = o.ncg = prog_u64("--ios", optarg, 100, 50000000); break;
		case 'q': quick = true; break;
		case 'I': case 'i':
			if (!HAVE_CALLGRIND)
				prog_usage_error("--instructions needs valgrind's headers at build time "
						 "(apt-get install valgrind)");
			o.instr = true;
			o.instr_only |= opt == 'i';
			break;
		case 'o': o.out = optarg; break;
		case 'P': pass = optarg; break;
		case 'F': cgfab = optarg; break;
		case 'D': cgdev = atoll(optarg); break;
		case 'L': cglender = (int)prog_u64("-L", optarg, 0, SIO_MAX_NODES - 1); break;
		default:
			if (!nb_run_opt(prog_name, &o.run, opt, optarg) &&
			    !bench_target_opt(prog_name, &o.tgt, opt, optarg))
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
	return run(&o);
}
