/* SPDX-License-Identifier: MIT */
/*
 * sweep: IOPS and latency percentiles of 4 KiB random reads over queue depth
 * (1..256, one client) and over clients (1..32 processes, each on its own
 * fabric node, QD 8 each), on RAM and on file backing, with the kernel's
 * io_uring on the same kind of store measured in the same run; then fairness
 * between clients (Jain's index) under round-robin and weighted round-robin
 * arbitration. Latency model off: this measures software.
 *
 * With --fabric NAME it measures an existing fabric's device instead (a
 * vfio-lent controller, a cluster, a simulated one): the queue-depth sweep
 * and the client sweep, every client on --node; the io_uring baseline and
 * the fairness runs need the private set-up (the same store, a manager set
 * to WRR) and are skipped, saying so.
 */
#include "opt.h"
#include "worker.h"

#include <errno.h>
#include <getopt.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define FILE_SIZE	(256ull << 20)

static char ram_file[256], disk_file[256];

static void cleanup(void)
{
	if (ram_file[0])
		unlink(ram_file);
	if (disk_file[0])
		unlink(disk_file);
}

static void row(struct json_object *j, const char *backing, const char *engine, const char *sweep,
		const struct nb_point *p)
{
	struct json_object *x = pj_push_obj(j), *a;

	printf("%-5s %-15s %7s %4d %4u %11.0f %11.0f %5.0f %11.0f %8.0f %8.0f %8.0f %8.0f %6.3f\n",
	       backing, engine, sweep, p->nclients, p->qd, p->iops, p->iops_per_core,
	       p->cpu_util * 100, p->iops_per_busy_core, p->lat.p1, p->lat.p50, p->lat.p99,
	       p->lat.p999, p->jain);
	pj_str(x, "backing", backing);
	pj_str(x, "engine", engine);
	pj_str(x, "sweep", sweep);
	pj_int(x, "clients", p->nclients);
	pj_u64(x, "qd", p->qd);
	pj_dbl(x, "iops", p->iops);
	pj_dbl(x, "iops_per_client_core", p->iops_per_core);
	pj_dbl(x, "client_cpu_util", p->cpu_util);
	pj_dbl(x, "iops_per_busy_client_core", p->iops_per_busy_core);
	pj_dbl(x, "jain", p->jain);
	pj_dbl(x, "setup_p50_ms", p->setup_p50_ms);
	pj_dbl(x, "setup_max_ms", p->setup_max_ms);
	pj_u64(x, "verified", p->verified);
	pj_u64(x, "mismatches", p->mismatches);
	a = pj_arr(x, "client_iops");
	for (int i = 0; i < p->nclients; i++)
		json_object_array_add(a, json_object_new_int64((int64_t)p->client_iops[i]));
	json_object_object_add(x, "latency", nb_stats_json(&p->lat));
}

static void header(void)
{
	printf("%-5s %-15s %7s %4s %4s %11s %11s %5s %11s %8s %8s %8s %8s %6s\n", "store",
	       "engine", "sweep", "cl", "qd", "IOPS", "IOPS/core", "CPU%", "IOPS/busy", "p1 ns",
	       "p50 ns", "p99 ns", "p99.9 ns", "Jain");
}

static void usage(FILE *o)
{
	fprintf(o,
		"usage: nvme-bench-sweep [options]\n"
		"  -t, --time S         run time per point, seconds (default 1.0)\n"
		"  -q, --quick          0.3 s per point, depths 1,4,16,64,256, clients 1,2,8,32\n"
		"  -c, --max-clients N  largest client count (default 32, at most 63): the client\n"
		"                       sweep runs 1,2,4,...,32 up to N, and N itself\n"
		"      --verify         smartio clients check every read's data (client sweep)\n"
		"      --fairness       only the fairness runs (6 and 32 clients, QD 8 and 32,\n"
		"                       each completion mode beside io_uring; WRR; one client;\n"
		"                       with -c below 6, the one-client runs and WRR alone)\n"
		"      --irq-coalesce N,US  the fairness runs' controller holds a CQ's interrupt\n"
		"                       for N entries or US microseconds (100..25500)\n"
		"      --clients-anywhere  the fairness runs' smartio clients may run on the\n"
		"                       emulated controller's CPU too; by default they keep off\n"
		"                       it, as it stands for a device with hardware of its own\n"
		"                       (--clients-off-ctrl)\n"
		"      --no-file        RAM backing only\n"
		"  -d, --qd N           only queue depth N, one client: no client or fairness sweep\n"
		"      --completions M  how the smartio clients of the depth and client sweeps\n"
		"                       wait: poll (default), irq, adaptive or hybrid\n"
		"  -r, --repeat N       run each point N times, interleaved (default 1)\n"
		"  -o, --out DIR        output directory (default bench-out/sweep)\n"
		BENCH_TARGET_HELP);
}

/*
 * One plot, its series from @dat: column @col of index 0 (RAM) and, unless
 * @nofile, index 1 (file). A single point is drawn as a point (a line needs
 * two), over an x range set around it (gnuplot cannot autoscale one value).
 */
static void plot_series(FILE *g, const char *dat, int npoints, const int *cols,
			const char *const *titles, int nseries, bool nofile)
{
	const char *sty = npoints > 1 ? "lp" : "p pt 7 ps 1.5";
	int i, ix;

	fprintf(g, "plot ");
	for (ix = 0; ix < (nofile ? 1 : 2); ix++)
		for (i = 0; i < nseries; i++) {
			if (!titles[ix * nseries + i])
				continue;
			fprintf(g, "%s'%s' index %d using 2:%d w %s t '%s'",
				ix || i ? ", " : "", ix || i ? "" : dat, ix, cols[i], sty,
				titles[ix * nseries + i]);
		}
	fprintf(g, "\n");
}

/* sweep.gp, and the PNGs from it: qd.png, and clients.png when the client
 * sweep ran (@ncl points; @cl0 the first one's client count). 0 when made. */
static int write_plot(const char *out, int nqd, uint32_t qd0, int ncl, int cl0, bool nofile,
		       const struct nb_env *ext)
{
	static const int iops[] = { 3, 4 }, lat[] = { 5, 7, 6, 8 }, jain[] = { 5, 6 };
	const char *iops_t[] = { "smartio RAM", "io_uring tmpfs", "smartio file",
				 "io_uring file O_DIRECT" };
	const char *lat_t[] = { "smartio RAM p50", "smartio RAM p99", "io_uring tmpfs p50",
				"io_uring tmpfs p99", NULL, NULL, NULL, NULL };
	const char *jain_t[] = { "smartio RAM", "io_uring tmpfs", NULL, NULL };
	char what[160];
	FILE *g = nb_open_out(out, "sweep.gp");

	if (!g)
		return -EIO;
	snprintf(what, sizeof(what), "latency model off");
	if (ext) {	/* one device, no io_uring baseline */
		iops_t[0] = jain_t[0] = "smartio", iops_t[1] = jain_t[1] = NULL;
		lat_t[0] = "smartio p50", lat_t[1] = "smartio p99", lat_t[2] = lat_t[3] = NULL;
		snprintf(what, sizeof(what), "device %lld (%s) on %s, %s", (long long)ext->devid,
			 ext->ctrl.mn, ext->fabric, nb_env_model_label(ext));
	}
	fprintf(g, "set terminal pngcairo size 1400,560 noenhanced\n"
		   "set key top left\nset grid\n"
		   "set output 'qd.png'\n"
		   "set multiplot layout 1,2 title '4 KiB random reads vs queue depth, 1 client "
		   "(%s)'\n"
		   "set logscale x 2\nset xlabel 'queue depth'\nset ylabel 'IOPS'\n", what);
	if (nqd == 1)
		fprintf(g, "set xrange [%g:%g]\nset xtics (%u)\n"
			   "set offsets 0, 0, graph 0.05, graph 0.05\n", qd0 / 2.0, qd0 * 2.0, qd0);
	/* IOPS from 0: one series of one point would leave an empty y range */
	fprintf(g, "set yrange [0:*]\n");
	plot_series(g, "qd.dat", nqd, iops, iops_t, 2, nofile);
	fprintf(g, "set yrange [*:*]\nset logscale y\nset ylabel 'p50 / p99 latency (ns)'\n");
	plot_series(g, "qd.dat", nqd, lat, lat_t, 4, true);
	fprintf(g, "unset multiplot\nunset logscale y\n");
	if (nqd == 1)
		fprintf(g, "set xrange [*:*]\nset xtics autofreq\nset offsets\n");
	if (ncl) {
		fprintf(g, "set output 'clients.png'\n"
			   "set multiplot layout 1,2 title '4 KiB random reads vs client processes, "
			   "QD 8 each (%s; clients above the CPU count share cores)'\n"
			   "set xlabel 'clients'\nset ylabel 'IOPS (all clients)'\n", what);
		if (ncl == 1)
			fprintf(g, "set xrange [%g:%g]\nset xtics (%d)\n"
				   "set offsets 0, 0, graph 0.05, graph 0.05\n", cl0 / 2.0,
				cl0 * 2.0, cl0);
		fprintf(g, "set yrange [0:*]\n");
		plot_series(g, "clients.dat", ncl, iops, iops_t, 2, nofile);
		fprintf(g, "set ylabel \"Jain's fairness index\"\nset yrange [0:1.05]\n");
		plot_series(g, "clients.dat", ncl, jain, jain_t, 2, true);
		fprintf(g, "unset multiplot\n");
	}
	fclose(g);
	return nb_gnuplot(out, "sweep.gp");
}

/* What to sweep: parsed from the command line. */
struct sweep_opts {
	double secs;
	bool quick, nofile, verify, fair_only;
	bool off_ctrl;			/* not --clients-anywhere */
	int maxc, one_qd, repeat;
	int completions;		/* SIO_NVME_CPL_* of the depth and client sweeps */
	uint32_t irq_coalesce;		/* Set Features 0x08 for the fairness runs */
	const char *out;
	struct bench_target tgt;
};

static int run_sweep(struct sweep_opts *o);

int main(int argc, char **argv)
{
	static const struct option lo[] = {
		{ "time", required_argument, NULL, 't' }, { "quick", no_argument, NULL, 'q' },
		{ "max-clients", required_argument, NULL, 'c' }, { "no-file", no_argument, NULL, 'F' },
		{ "out", required_argument, NULL, 'o' },
		{ "qd", required_argument, NULL, 'd' }, { "repeat", required_argument, NULL, 'r' },
		{ "verify", no_argument, NULL, 'V' }, { "fairness", no_argument, NULL, 'R' },
		{ "irq-coalesce", required_argument, NULL, 'C' },
		{ "clients-off-ctrl", no_argument, NULL, 'P' },
		{ "clients-anywhere", no_argument, NULL, 'A' },
		{ "completions", required_argument, NULL, 'M' },
		BENCH_TARGET_LONGOPTS, { 0 },
	};
	struct sweep_opts o = { .secs = 1.0, .maxc = 32, .repeat = 1, .out = "bench-out/sweep",
				.off_ctrl = true };
	int opt;

	prog_init("nvme-bench-sweep", usage);
	bench_target_init(&o.tgt);
	while ((opt = prog_getopt(argc, argv, "t:qc:o:hd:r:", lo)) != -1) {
		switch (opt) {
		case 't': o.secs = prog_time("--time", optarg, 1, 0.05, 60); break;
		case 'q': o.quick = true; break;
		case 'c': o.maxc = (int)prog_u64("--max-clients", optarg, 1, 63); break;
		case 'F': o.nofile = true; break;
		case 'V': o.verify = true; break;
		case 'R': o.fair_only = true; break;
		case 'P': o.off_ctrl = true; break;
		case 'A': o.off_ctrl = false; break;
		case 'C': {
			unsigned int n, us;
			char end;

			if (sscanf(optarg, "%u,%u%c", &n, &us, &end) != 2 || n < 1 || n > 256 ||
			    us < 100 || us > 25500 || us % 100)
				prog_usage_error("--irq-coalesce '%s': N,US with N 1..256 and US "
						 "100..25500 in steps of 100", optarg);
			o.irq_coalesce = (n - 1) | (us / 100) << 8;
			break;
		}
		case 'M':
			for (o.completions = 0; o.completions <= SIO_NVME_CPL_HYBRID; o.completions++)
				if (!strcmp(optarg, sio_nvme_completions_name(o.completions)))
					break;
			if (o.completions > SIO_NVME_CPL_HYBRID)
				prog_usage_error("--completions '%s': poll, irq, adaptive or hybrid",
						 optarg);
			break;
		case 'o': o.out = optarg; break;
		case 'd': o.one_qd = (int)prog_u64("--qd", optarg, 1, 256); break;
		case 'r': o.repeat = (int)prog_u64("--repeat", optarg, 1, 100); break;
		default:
			if (!bench_target_opt(prog_name, &o.tgt, opt, optarg))
				prog_usage_error("unhandled option");
		}
	}
	prog_no_args(argc, argv);
	bench_target_check(prog_name, &o.tgt);
	return run_sweep(&o);
}

/* A sweep under way: its points, outputs and progress. */
struct sweep {
	const struct sweep_opts *o;
	const uint32_t *qds;		/* queue depths */
	uint32_t qd_one;		/* --qd */
	int nqd, ncl, cls[8];		/* client counts */
	double secs;
	bool nofile, existing;		/* existing: --fabric, on @target */
	int steps, step;
	int ncl_done;			/* client-sweep points measured (RAM) */
	bool mismatched;
	struct nb_env target;
	struct json_object *root, *j;	/* j: the points */
	FILE *qf, *cf;			/* qd.dat, clients.dat */
};

/* The points to run: queue depths and client counts, from the options. */
static void plan(struct sweep *s, const struct sweep_opts *o)
{
	static const uint32_t qd_full[] = { 1, 2, 4, 8, 16, 32, 64, 128, 256 }, qd_quick[] = { 1, 4, 16, 64, 256 };
	static const int cl_full[] = { 1, 2, 4, 8, 16, 32 }, cl_quick[] = { 1, 2, 8, 32 };
	const int *cls = cl_full;
	int ncl = 6, n = 0;

	s->o = o;
	s->secs = o->secs;
	s->existing = o->tgt.fabric;
	s->nofile = o->nofile || s->existing;	/* on a device, the device is the store */
	s->qds = qd_full, s->nqd = 9;
	if (o->quick) {
		s->qds = qd_quick, s->nqd = 5, cls = cl_quick, ncl = 4;
		if (s->secs == 1.0)
			s->secs = 0.3;
	}
	if (o->one_qd) {
		s->qd_one = (uint32_t)o->one_qd;
		s->qds = &s->qd_one, s->nqd = 1, ncl = 0;
	}
	/* The client counts up to --max-clients, and that count itself. */
	for (int i = 0; i < ncl && cls[i] <= o->maxc; i++)
		s->cls[n++] = cls[i];
	if (ncl && (!n || s->cls[n - 1] != o->maxc))
		s->cls[n++] = o->maxc;
	s->ncl = n;
}

/* The output directory, the target, the backing files and the .dat files. */
static int prepare(struct sweep *s)
{
	const char *out = s->o->out;
	int rc;

	if (nb_outdir(out))
		return 1;
	setvbuf(stdout, NULL, _IOLBF, 0);
	if (s->existing && nb_env_attach(&s->target, &s->o->tgt))
		return 1;
	snprintf(ram_file, sizeof(ram_file), "/dev/shm/nb-sweep-%d.img", (int)getpid());
	snprintf(disk_file, sizeof(disk_file), "/var/tmp/nb-sweep-%d.img", (int)getpid());
	atexit(cleanup);
	if (s->existing)
		ram_file[0] = disk_file[0] = 0;	/* no baseline: no files */
	else if ((rc = nb_make_file(ram_file, FILE_SIZE)) ||
	    (!s->nofile && (rc = nb_make_file(disk_file, FILE_SIZE)))) {
		fprintf(stderr, "sweep: make backing files: %s\n", strerror(-rc));
		return 1;
	}
	if (!(s->qf = nb_open_out(out, "qd.dat")) || !(s->cf = nb_open_out(out, "clients.dat")))
		return 1;
	return 0;
}

/* Say what is measured: the JSON's head, the .dat headers, the text's. */
static void describe(struct sweep *s)
{
	const char *model = s->existing ? nb_env_model_label(&s->target) : nb_model_label(false);
	struct json_object *root = json_object_new_object();

	pj_str(root, "benchmark", "sweep");
	pj_bool(root, "latency_model", s->existing && s->target.o.model);
	pj_str(root, "model_note", model);
	pj_int(root, "block", 4096);
	pj_dbl(root, "seconds_per_point", s->secs);
	pj_int(root, "cpus", nb_ncpus());
	pj_bool(root, "clients_off_ctrl", s->o->off_ctrl);
	if (s->existing)
		json_object_object_add(root, "target", nb_target_json(&s->target));
	s->root = root;
	s->j = pj_arr(root, "points");
	fprintf(s->qf, "# backing qd smartio_iops uring_iops smartio_p50 uring_p50 smartio_p99 uring_p99\n");
	fprintf(s->cf, "# backing clients smartio_iops uring_iops smartio_jain uring_jain smartio_p99 uring_p99\n");
	printf("sweep: 4 KiB random reads, %.2f s per point, %d CPUs; %s\n"
	       "IOPS/core: IOPS per CPU-second used by the issuing processes (user + kernel),\n"
	       "the same clock for both engines; the emulated controller's own core is not\n"
	       "counted (it stands for the device). CPU%%: client CPU time per wall second\n"
	       "(per client). IOPS/busy: IOPS/core less the CPU of smartio polls that found\n"
	       "nothing (device time); io_uring sleeps instead, so there it equals IOPS/core\n\n",
	       s->secs, nb_ncpus(), model);
	if (s->existing) {
		nb_env_describe(&s->target, stdout);
		printf("skipped: the io_uring baseline (it needs the same store as a file; for the "
		       "kernel's driver on the same device see bench/vm/side-by-side.sh) and the "
		       "fairness runs (they need a manager set to WRR arbitration)\n");
	}
	header();
	s->steps = (s->o->fair_only ? 0 : (s->nofile ? 1 : 2) * (s->nqd * s->o->repeat + s->ncl)) +
		   (s->o->one_qd || s->existing ? 0 : 6);
}

static const char *mode_engine(int m);

/* The smartio rows' engine: "smartio" polling, as ever, else its mode. */
static const char *sm_engine(const struct sweep *s)
{
	return s->o->completions ? mode_engine(s->o->completions) : "smartio";
}

/* One queue depth, one client: smartio, then io_uring on the same kind of
 * store (and, on the file, buffered too: the controller's file I/O is). */
static int qd_point(struct sweep *s, struct nb_point_cfg *pc, int bk, const char *bname,
		    uint32_t qd)
{
	struct nb_point sm, u, ub;

	pc->nclients = 1, pc->qd = qd;
	pc->engine = NB_SMARTIO;
	if (nb_run_point(pc, &sm))
		return 1;
	row(s->j, bname, sm_engine(s), "qd", &sm);
	if (s->existing) {
		fprintf(s->qf, "%s %u %.0f NaN %.0f NaN %.0f NaN\n", bname, pc->qd, sm.iops,
			sm.lat.p50, sm.lat.p99);
		nb_progress("sweep", ++s->step, s->steps);
		return 0;
	}
	pc->engine = NB_URING;
	if (nb_run_point(pc, &u))
		return 1;
	row(s->j, bname, bk ? "io_uring-direct" : "io_uring-tmpfs", "qd", &u);
	if (bk) {
		pc->buffered = true;
		if (nb_run_point(pc, &ub))
			return 1;
		pc->buffered = false;
		row(s->j, bname, "io_uring-buffer", "qd", &ub);
	}
	fprintf(s->qf, "%s %u %.0f %.0f %.0f %.0f %.0f %.0f\n", bname, pc->qd, sm.iops, u.iops,
		sm.lat.p50, u.lat.p50, sm.lat.p99, u.lat.p99);
	nb_progress("sweep", ++s->step, s->steps);
	return 0;
}

/* @n clients at QD 8: smartio (verified with --verify), then io_uring.
 * 0, 1 to stop the benchmark, -1 to end the client sweep (said). */
static int clients_point(struct sweep *s, struct nb_point_cfg *pc, int bk, const char *bname,
			 int n)
{
	struct nb_point sm, u;
	int rc;

	pc->nclients = n, pc->qd = 8;
	pc->engine = NB_SMARTIO;
	pc->verify = s->o->verify;
	rc = nb_run_point(pc, &sm);
	pc->verify = false;
	if (rc) {
		fprintf(stderr, "sweep: %d clients: %s\n", n, strerror(-rc));
		return -1;
	}
	row(s->j, bname, sm_engine(s), "clients", &sm);
	printf("      setup of %d clients arriving together (client, queue pair, "
	       "buffer): p50 %.1f ms, max %.1f ms", n, sm.setup_p50_ms, sm.setup_max_ms);
	if (s->o->verify)
		printf("; %llu reads verified, %llu mismatches", (unsigned long long)sm.verified,
		       (unsigned long long)sm.mismatches);
	printf("\n");
	if (sm.mismatches)
		s->mismatched = true;
	if (s->existing) {
		fprintf(s->cf, "%s %d %.0f NaN %.4f NaN %.0f NaN\n", bname, n, sm.iops, sm.jain,
			sm.lat.p99);
		s->ncl_done++;
		nb_progress("sweep", ++s->step, s->steps);
		return 0;
	}
	pc->engine = NB_URING;
	if (nb_run_point(pc, &u))
		return 1;
	row(s->j, bname, bk ? "io_uring-direct" : "io_uring-tmpfs", "clients", &u);
	fprintf(s->cf, "%s %d %.0f %.0f %.4f %.4f %.0f %.0f\n", bname, n, sm.iops, u.iops,
		sm.jain, u.jain, sm.lat.p99, u.lat.p99);
	if (!bk)
		s->ncl_done++;
	nb_progress("sweep", ++s->step, s->steps);
	return 0;
}

/* The queue-depth and client sweeps on one store: RAM (@bk 0) or file (1),
 * a set-up of their own; on an existing fabric, its device. */
static int sweep_store(struct sweep *s, int bk)
{
	const char *bname = bk ? "file" : "ram";
	int maxc = s->o->maxc, repeat = s->o->repeat, rc;
	struct nb_env_opts eo = { .nodes = maxc + 1, .lender = maxc, .model = false,
				  .backing = bk ? disk_file : "ram:256M", .windows = 64,
				  .pin = true };
	struct nb_env env;
	struct nb_point_cfg pc = { .env = &env, .file_size = FILE_SIZE, .seconds = s->secs,
				   .pin = true, .completions = s->o->completions };

	if (s->existing)
		env = s->target, bname = "device";
	else if (nb_env_up(&env, "sweep", &eo))
		return 1;
	/* io_uring reads the same kind of store: tmpfs for RAM, the same file */
	pc.file = bk ? disk_file : ram_file;
	for (int i = 0; i < s->nqd * repeat; i++)
		if (qd_point(s, &pc, bk, bname, s->qds[i / repeat]))
			return 1;
	for (int i = 0; i < s->ncl && s->cls[i] <= maxc; i++) {
		if ((rc = clients_point(s, &pc, bk, bname, s->cls[i])) > 0)
			return 1;
		if (rc < 0)
			break;
	}
	if (!s->existing)
		nb_env_down(&env);
	fprintf(s->qf, "\n\n");
	fprintf(s->cf, "\n\n");
	return 0;
}

/* The completion modes compared, in the order each point runs them. */
static const int cpl_modes[] = { SIO_NVME_CPL_POLL, SIO_NVME_CPL_IRQ, SIO_NVME_CPL_ADAPTIVE };
#define NMODES	3

static const char *mode_engine(int m)
{
	static const char *const e[] = { "smartio-poll", "smartio-irq", "smartio-adapt",
					 "smartio-hybrid" };	/* SIO_NVME_CPL_* */

	return e[m];
}

/* Where the shares went: off the CPU (mean, least, most) and skipped by
 * the controller, per client; in the JSON as well. */
static void where(struct json_object *j, const struct nb_point *p)
{
	struct json_object *x = json_object_array_get_idx(j, json_object_array_length(j) - 1);
	struct json_object *off = pj_arr(x, "client_offcpu"), *sk = pj_arr(x, "client_ctrl_skipped");
	double sum = 0, lo = 1e9, hi = 0;
	uint64_t skipped = 0, blocked = 0;

	for (int i = 0; i < p->nclients; i++) {
		double o = p->client_offcpu[i];

		sum += o;
		lo = o < lo ? o : lo;
		hi = o > hi ? o : hi;
		skipped += p->client_skipped[i];
		blocked += p->client_blocked[i];
		json_object_array_add(off, json_object_new_double(o));
		json_object_array_add(sk, json_object_new_int64((int64_t)p->client_skipped[i]));
	}
	pj_dbl(x, "cpu_per_io_ns", p->cpu_per_io_ns);
	pj_u64(x, "sleeps", p->sleeps);
	pj_u64(x, "wakeups_lost", p->wakeups_lost);
	printf("      off the CPU with work to do: mean %.0f %% of the run (%.0f..%.0f %%); "
	       "controller passes that skipped an SQ with commands: %llu (%llu blocked by a "
	       "full CQ)\n", 100 * sum / p->nclients, 100 * lo, 100 * hi,
	       (unsigned long long)skipped, (unsigned long long)blocked);
	if (p->sleeps)
		printf("      sleeps on interrupts: %.2f per I/O, %.1f %% of them ended by their "
		       "bound with completions waiting (no interrupt came)\n",
		       (double)p->sleeps / (double)(p->ios ? p->ios : 1),
		       100.0 * (double)p->wakeups_lost / (double)p->sleeps);
}

/* @n clients at @qd under round robin: io_uring, then each completion mode. */
static int fair_rr(struct sweep *s, struct nb_env *env, int n, uint32_t qd)
{
	struct nb_point_cfg pc = { .env = env, .nclients = n, .qd = qd, .seconds = s->secs * 2,
				   .file = ram_file, .file_size = FILE_SIZE };
	struct nb_point p;

	pc.engine = NB_URING;
	if (nb_run_point(&pc, &p))
		return 1;
	row(s->j, "ram", "io_uring-tmpfs", "fair-rr", &p);
	pc.engine = NB_SMARTIO;
	for (int m = 0; m < NMODES; m++) {
		pc.completions = cpl_modes[m];
		if (nb_run_point(&pc, &p))
			return 1;
		row(s->j, "ram", mode_engine(cpl_modes[m]), "fair-rr", &p);
		where(s->j, &p);
	}
	nb_progress("sweep", ++s->step, s->steps);
	return 0;
}

/* 6 clients at QD 32 under WRR 8:4:1 (priorities high, medium, low in turn):
 * each mode, with the class shares and Jain's index within each class. */
static int fair_wrr(struct sweep *s)
{
	struct nb_env_opts eo = { .nodes = 7, .lender = 6, .backing = "ram:256M", .pin = true,
				  .arbitration = NVME_CC_AMS_WRRU,
				  .arb_cdw11 = sio_nvme_feat_arbitration(0, 0, 3, 7),
				  .irq_coalesce = s->o->irq_coalesce,
				  .clients_off_ctrl = s->o->off_ctrl };
	struct nb_point_cfg pc = { .engine = NB_SMARTIO, .nclients = 6, .qd = 32,
				   .seconds = s->secs * 2, .wrr_prios = true };
	struct nb_env env;
	struct nb_point p;

	if (nb_env_up(&env, "wrr", &eo))
		return 1;
	pc.env = &env;
	for (int m = 0; m < NMODES; m++) {
		double cls[4] = { 0 }, in[4][6];
		int nin[4] = { 0 };

		pc.completions = cpl_modes[m];
		if (nb_run_point(&pc, &p))
			return 1;
		row(s->j, "ram", mode_engine(cpl_modes[m]), "fair-wrr", &p);
		for (int i = 0; i < 6; i++) {
			cls[p.client_prio[i]] += p.client_iops[i];
			in[p.client_prio[i]][nin[p.client_prio[i]]++] = p.client_iops[i];
		}
		printf("      per client IOPS:");
		for (int i = 0; i < 6; i++)
			printf(" %.0f(%c)", p.client_iops[i], "?HML"[p.client_prio[i]]);
		printf("\n      share high/medium/low %.3f / %.3f / %.3f (weights 8/4/1: 0.615 / "
		       "0.308 / 0.077); Jain within high %.3f, medium %.3f, low %.3f\n",
		       cls[1] / p.iops, cls[2] / p.iops, cls[3] / p.iops, nb_jain(in[1], nin[1]),
		       nb_jain(in[2], nin[2]), nb_jain(in[3], nin[3]));
		where(s->j, &p);
	}
	nb_env_down(&env);
	nb_progress("sweep", ++s->step, s->steps);
	return 0;
}

/* One client: QD 1 latency per mode (interleaved, --repeat times), then the
 * CPU each mode spends per I/O when 1,000 IOPS are offered. */
static int one_client(struct sweep *s, struct nb_env *env)
{
	struct nb_point_cfg pc = { .env = env, .engine = NB_SMARTIO, .nclients = 1, .qd = 1,
				   .seconds = s->secs, .pin = true };
	struct nb_point p;

	for (int r = 0; r < s->o->repeat; r++)
		for (int m = 0; m < NMODES; m++) {
			pc.completions = cpl_modes[m];
			if (nb_run_point(&pc, &p))
				return 1;
			row(s->j, "ram", mode_engine(cpl_modes[m]), "qd1", &p);
		}
	pc.rate = 1000;
	pc.seconds = s->secs * 2;
	for (int m = 0; m < NMODES; m++) {
		pc.completions = cpl_modes[m];
		if (nb_run_point(&pc, &p))
			return 1;
		row(s->j, "ram", mode_engine(cpl_modes[m]), "1k-iops", &p);
		printf("      %s at 1,000 IOPS offered: %.0f IOPS, %.1f us of client CPU per I/O\n",
		       sio_nvme_completions_name(cpl_modes[m]), p.iops, p.cpu_per_io_ns / 1e3);
		pj_dbl(json_object_array_get_idx(s->j, json_object_array_length(s->j) - 1),
		       "cpu_per_io_ns", p.cpu_per_io_ns);
	}
	nb_progress("sweep", ++s->step, s->steps);
	return 0;
}

/*
 * Fairness with more clients than CPUs: 6 and 32 clients at QD 8 and 32
 * under round robin, io_uring and each completion mode in the same run;
 * WRR's classes; one client's QD 1 latency and its CPU at low load.
 */
static int fairness(struct sweep *s)
{
	static const int ns[] = { 6, 32 };
	static const uint32_t qds[] = { 8, 32 };

	printf("\nfairness: RAM backing, round robin (burst 1); clients on %d CPUs; io_uring "
	       "on tmpfs, then smartio polling, on interrupts and adaptive, interleaved; "
	       "interrupt coalescing %s; smartio clients %s\n", nb_ncpus(),
	       s->o->irq_coalesce ? "on" : "off",
	       s->o->off_ctrl ? "off the controller's CPU" : "on any CPU");
	if (s->o->irq_coalesce)
		printf("interrupt coalescing: %u entries or %u us\n", (s->o->irq_coalesce & 0xff) + 1,
		       (s->o->irq_coalesce >> 8) * 100);
	header();
	for (int i = 0; i < 2; i++) {
		struct nb_env_opts eo = { .nodes = ns[i] + 1, .lender = ns[i], .backing = "ram:256M",
					  .windows = 64, .pin = true,
					  .irq_coalesce = s->o->irq_coalesce,
					  .clients_off_ctrl = s->o->off_ctrl };
		struct nb_env env;

		if (ns[i] > s->o->maxc && i)
			continue;
		if (ns[i] > s->o->maxc) {	/* -c below 6: the one-client runs alone */
			eo.nodes = 2, eo.lender = 1;
			if (nb_env_up(&env, "fair", &eo) || one_client(s, &env))
				return 1;
			nb_env_down(&env);
			continue;
		}
		if (nb_env_up(&env, "fair", &eo))
			return 1;
		for (int k = 0; k < 2; k++)
			if (fair_rr(s, &env, ns[i], qds[k]))
				return 1;
		if (i == 0 && one_client(s, &env))
			return 1;
		nb_env_down(&env);
	}
	printf("\nweighted round robin: 6 clients, QD 32, weights high 8, medium 4, low 1 per SQ\n");
	header();
	return fair_wrr(s);
}

/* The JSON, the plots; the target left as found; 1 if data did not verify. */
static int finish(struct sweep *s)
{
	const char *out = s->o->out;
	bool plotted;

	nb_progress("sweep", 1, 1);
	if (nb_write_json(out, "sweep.json", s->root))
		return 1;
	fclose(s->qf);
	fclose(s->cf);
	/* --fairness: no depth or client sweep ran, nothing to plot (the
	 * fairness points are in the JSON and the table) */
	plotted = !s->o->fair_only &&
		  !write_plot(out, s->nqd, s->qds[0], s->ncl_done, s->cls[0], s->nofile,
			      s->existing ? &s->target : NULL);
	if (s->existing)
		nb_env_down(&s->target);
	printf("\nwrote %s/sweep.json%s%s%s\n", out, s->o->fair_only ? "" : ", qd.dat, clients.dat",
	       plotted ? ", qd.png" : "", plotted && s->ncl_done ? ", clients.png" : "");
	if (s->mismatched) {
		fprintf(stderr, "sweep: verified reads found data that was not the store's\n");
		return 1;
	}
	return 0;
}

static int run_sweep(struct sweep_opts *o)
{
	struct sweep s = { 0 };

	plan(&s, o);
	if (prepare(&s))
		return 1;
	describe(&s);
	for (int bk = 0; bk < (s.nofile ? 1 : 2) && !o->fair_only; bk++)
		if (sweep_store(&s, bk))
			return 1;
	if (!o->one_qd && !s.existing && fairness(&s))
		return 1;
	return finish(&s);
}
