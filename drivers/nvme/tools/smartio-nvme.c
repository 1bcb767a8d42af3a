/* SPDX-License-Identifier: MIT */
/*
 * smartio-nvme: `smartio nvme stats` and `smartio top`, the NVMe driver's
 * live counters (<smartio/nvme/stats.h>) per client and queue pair, with
 * rates between two readings, beside the fabric's nodes, windows and
 * borrows. A program of the driver's own: `smartio nvme ARGS` runs it as
 * `smartio-nvme ARGS` and `smartio top ARGS` as `smartio-nvme top ARGS`,
 * so that the smartio command knows nothing of the driver.
 */
#include <errno.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <smartio/smartio.h>
#include <smartio/nvme/stats.h>
#include "clock.h"
#include "prog.h"
#include "prom.h"

#define MAX_CLIENTS	256

struct reading {
	uint64_t t_ns;
	int n;
	struct sio_nvme_client_stats c[MAX_CLIENTS];
};

/* Two readings, for rates: the last and the one before it. */
struct stats_view {
	const char *name;
	uint32_t device;
	bool json;
	bool prom;
	bool top;
	struct reading *bufs;	/* two: the last reading and the one before */
	int k;			/* bufs[k] is filled next */
	bool have_prev;
	struct reading *cur, *prev;	/* while printing: prev NULL the first time */
};

static const char *place(int p)
{
	return p < 0 ? "?" : sio_placement_name(p);
}

static const char *doorbell_path(const struct sio_nvme_qstats *q)
{
	bool relay = q->flags & SIO_NVME_QS_RELAYED, win = q->flags & SIO_NVME_QS_NTB_WINDOW;
	bool emu = win && (q->flags & SIO_NVME_QS_EMULATED);

	if (q->flags & SIO_NVME_QS_MULTIPATH)
		return q->flags & SIO_NVME_QS_BACKUP ? "mmio, backup" : "mmio, primary";
	if (q->flags & SIO_NVME_QS_SHADOW_DB)
		return relay ? "shadow, relayed" : emu ? "shadow, NTB window (emulated forwarding)" :
		       win ? "shadow, NTB window" : "shadow";
	return relay ? "relayed" : emu ? "NTB window (emulated forwarding)" : win ? "NTB window" : "mmio";
}

/* Queue pair @q of client @c as it was in @prev, or NULL. */
static const struct sio_nvme_qstats *before(const struct reading *prev,
					    const struct sio_nvme_client_stats *c,
					    const struct sio_nvme_qstats *q)
{
	for (int i = 0; prev && i < prev->n; i++) {
		const struct sio_nvme_client_stats *p = &prev->c[i];

		if (p->pid != c->pid || p->node != c->node)
			continue;
		for (uint32_t k = 0; k < p->nqueues; k++)
			if (p->q[k].qid == q->qid)
				return &p->q[k];
	}
	return NULL;
}

struct rate {
	bool have;
	double iops, read_iops, write_iops, mib_s;
	double offcpu, wait;	/* fractions of the interval */
	double skipped_s;	/* controller passes skipping it, per second */
};

static struct rate rate_of(const struct stats_view *v, const struct sio_nvme_client_stats *c,
			   const struct sio_nvme_qstats *q)
{
	const struct sio_nvme_qstats *b = before(v->prev, c, q);
	struct rate r = { 0 };
	double dt;

	if (!b || !v->prev || v->cur->t_ns <= v->prev->t_ns || b->reads > q->reads ||
	    b->writes > q->writes)
		return r;	/* new, or a queue pair made anew under the same id */
	dt = (double)(v->cur->t_ns - v->prev->t_ns) / 1e9;
	r.have = true;
	r.read_iops = (double)(q->reads - b->reads) / dt;
	r.write_iops = (double)(q->writes - b->writes) / dt;
	r.iops = r.read_iops + r.write_iops;
	r.mib_s = (double)(q->read_bytes - b->read_bytes + q->write_bytes - b->write_bytes) /
		  1048576.0 / dt;
	r.offcpu = q->offcpu_ns >= b->offcpu_ns ? (double)(q->offcpu_ns - b->offcpu_ns) / 1e9 / dt : 0;
	r.wait = q->wait_ns >= b->wait_ns ? (double)(q->wait_ns - b->wait_ns) / 1e9 / dt : 0;
	r.skipped_s = q->ctrl_skipped >= b->ctrl_skipped ?
		      (double)(q->ctrl_skipped - b->ctrl_skipped) / dt : 0;
	return r;
}

static struct json_object *queue_json(const struct stats_view *v,
				      const struct sio_nvme_client_stats *c,
				      const struct sio_nvme_qstats *q)
{
	struct json_object *o = json_object_new_object(), *x;
	struct rate r = rate_of(v, c, q);

	pj_u64(o, "qid", q->qid);
	pj_str(o, "sq", place(q->sq_place));
	pj_str(o, "cq", place(q->cq_place));
	pj_str(o, "doorbells", doorbell_path(q));
	pj_bool(o, "multipath", q->flags & SIO_NVME_QS_MULTIPATH);
	pj_u64(o, "reads", q->reads);
	pj_u64(o, "writes", q->writes);
	pj_u64(o, "other", q->other);
	pj_u64(o, "read_bytes", q->read_bytes);
	pj_u64(o, "write_bytes", q->write_bytes);
	pj_u64(o, "errors", q->errors);
	pj_u64(o, "db_writes", q->db_writes);
	x = pj_obj(o, "faults");
	pj_u64(x, "timeouts", q->timeouts);
	pj_u64(x, "recoveries", q->recoveries);
	pj_u64(x, "resubmitted", q->resubmitted);
	pj_u64(x, "failovers", q->failovers);
	pj_u64(x, "link_flaps", q->link_flaps);
	pj_u64(x, "paused_ns", q->paused_ns);
	/* where the share went: the controller's arbitration, the CPU */
	pj_u64(o, "ctrl_fetched", q->ctrl_fetched);
	pj_u64(o, "ctrl_skipped", q->ctrl_skipped);
	pj_u64(o, "ctrl_blocked", q->ctrl_blocked);
	pj_u64(o, "offcpu_ns", q->offcpu_ns);
	pj_u64(o, "wait_ns", q->wait_ns);
	if (r.have) {
		x = pj_obj(o, "rate");
		pj_dbl(x, "iops", r.iops);
		pj_dbl(x, "read_iops", r.read_iops);
		pj_dbl(x, "write_iops", r.write_iops);
		pj_dbl(x, "mib_s", r.mib_s);
		pj_dbl(x, "offcpu", r.offcpu);
		pj_dbl(x, "wait", r.wait);
		pj_dbl(x, "ctrl_skipped_s", r.skipped_s);
	}
	if (q->lat_ios) {	/* what the client program measured and published */
		x = pj_obj(o, "lat_us");
		pj_u64(x, "ios", q->lat_ios);
		pj_dbl(x, "p50", (double)q->lat_p50_ns / 1e3);
		pj_dbl(x, "p99", (double)q->lat_p99_ns / 1e3);
		pj_dbl(x, "p99_9", (double)q->lat_p999_ns / 1e3);
		pj_dbl(x, "max", (double)q->lat_max_ns / 1e3);
	}
	return o;
}

static struct json_object *stats_json(const struct stats_view *v)
{
	struct json_object *o = json_object_new_object(), *a = NULL;

	pj_str(o, "fabric", v->name);
	pj_timestamp(o);
	pj_u64(o, "time_ns", v->cur->t_ns);	/* monotonic: intervals */
	if (v->prev)
		pj_dbl(o, "interval_s", (double)(v->cur->t_ns - v->prev->t_ns) / 1e9);
	a = pj_arr(o, "clients");
	for (int i = 0; i < v->cur->n; i++) {
		const struct sio_nvme_client_stats *c = &v->cur->c[i];
		struct json_object *x = pj_push_obj(a), *qa;

		pj_int(x, "pid", c->pid);
		pj_int(x, "node", c->node);
		pj_u64(x, "device", c->device);
		qa = pj_arr(x, "queues");
		for (uint32_t k = 0; k < c->nqueues; k++)
			json_object_array_add(qa, queue_json(v, c, &c->q[k]));
	}
	return o;
}

/* One queue pair's latency histogram, as the client program published it. */
static void lat_prom(struct prom *p, const char *labels, const struct sio_nvme_qstats *q)
{
	static const uint64_t bound[SIO_NVME_LAT_BUCKETS] = SIO_NVME_LAT_BOUNDS_NS;
	static const char *const name = "smartio_nvme_latency_seconds";
	static const char *const help = "Latency of the queue pair's I/O as the client program "
					"measured it (its current pass).";
	char l[384], le[32];
	size_t n = strlen(labels);

	for (int i = 0; i <= SIO_NVME_LAT_BUCKETS; i++) {
		if (i < SIO_NVME_LAT_BUCKETS)
			snprintf(le, sizeof(le), "%g", (double)bound[i] / 1e9);
		else
			snprintf(le, sizeof(le), "+Inf");
		/* the queue's labels, and le */
		snprintf(l, sizeof(l), "%.*s,le=\"%s\"}", (int)(n - 1), labels, le);
		prom_add(p, name, "histogram", help, "_bucket", l,
			 (double)(i < SIO_NVME_LAT_BUCKETS ? q->lat_le[i] : q->lat_ios));
	}
	prom_add(p, name, "histogram", help, "_sum", labels, (double)q->lat_sum_ns / 1e9);
	prom_add(p, name, "histogram", help, "_count", labels, (double)q->lat_ios);
}

/* The queue pair's counters, as Prometheus counters. */
#define QS(f) offsetof(struct sio_nvme_qstats, f)
static const struct { const char *name, *help; size_t off; } counters[] = {
	{ "smartio_nvme_reads_total", "Read requests the queue pair accepted.", QS(reads) },
	{ "smartio_nvme_writes_total", "Write requests the queue pair accepted.",
	  QS(writes) },
	{ "smartio_nvme_other_commands_total", "Other commands the queue pair accepted "
	  "(flush, deallocate, ...).", QS(other) },
	{ "smartio_nvme_read_bytes_total", "Bytes the queue pair's reads asked for.",
	  QS(read_bytes) },
	{ "smartio_nvme_written_bytes_total", "Bytes the queue pair's writes carried.",
	  QS(write_bytes) },
	{ "smartio_nvme_errors_total", "Commands of the queue pair that completed with "
	  "an error.", QS(errors) },
	{ "smartio_nvme_doorbell_writes_total", "MMIO doorbell writes of the queue pair.",
	  QS(db_writes) },
};
#undef QS

/* Prometheus's text format: counters per queue pair, labelled by fabric,
 * node, device and qid (one client per qid of a device). */
static void stats_prom(struct prom *p, const struct stats_view *v)
{
	char l[256], node[12], dev[12], qid[12];

	prom_labels(l, sizeof(l), "fabric", v->name, NULL);
	prom_add(p, "smartio_nvme_clients", "gauge", "NVMe clients on the fabric.", "", l,
		 v->cur->n);
	for (int i = 0; i < v->cur->n; i++) {
		const struct sio_nvme_client_stats *c = &v->cur->c[i];

		snprintf(node, sizeof(node), "%d", c->node);
		snprintf(dev, sizeof(dev), "%u", c->device);
		for (uint32_t k = 0; k < c->nqueues; k++) {
			const struct sio_nvme_qstats *q = &c->q[k];

			snprintf(qid, sizeof(qid), "%u", q->qid);
			prom_labels(l, sizeof(l), "fabric", v->name, "node", node, "device", dev,
				    "qid", qid, NULL);
			for (size_t m = 0; m < sizeof(counters) / sizeof(counters[0]); m++)
				prom_add(p, counters[m].name, "counter", counters[m].help, "", l,
					 (double)*(const uint64_t *)((const char *)q +
								     counters[m].off));
			if (q->lat_sum_ns)
				lat_prom(p, l, q);
		}
	}
}

/* The columns; the last three (where the share went) only when some queue
 * has them: a controller that counts its arbitration, a program that
 * publishes its time off the CPU. */
enum { NCOL = 17, NCOL_BASE = 14, CELL = 48 };	/* CELL: a cell's bytes, a doorbell path's words */

/* One queue pair's row of the table, a string a column. */
static void row_cells(const struct stats_view *v, const struct sio_nvme_client_stats *c,
		      const struct sio_nvme_qstats *q, char cell[NCOL][CELL])
{
	struct rate r = rate_of(v, c, q);
	uint64_t ios = q->reads + q->writes;

	for (int i = 0; i < NCOL; i++)
		snprintf(cell[i], CELL, "-");
	snprintf(cell[0], CELL, "%d", c->node);
	snprintf(cell[1], CELL, "%d", c->pid);
	snprintf(cell[2], CELL, "%u", c->device);
	snprintf(cell[3], CELL, "%u", q->qid);
	snprintf(cell[4], CELL, "%s", place(q->sq_place));
	snprintf(cell[5], CELL, "%s", place(q->cq_place));
	snprintf(cell[6], CELL, "%s", doorbell_path(q));
	if (r.have) {
		snprintf(cell[7], CELL, "%.0f", r.iops);
		snprintf(cell[8], CELL, "%.1f", r.mib_s);
		if (r.iops > 0)
			snprintf(cell[9], CELL, "%.0f", 100 * r.read_iops / r.iops);
	}
	if (q->lat_ios) {
		snprintf(cell[10], CELL, "%.1f", (double)q->lat_p50_ns / 1e3);
		snprintf(cell[11], CELL, "%.1f", (double)q->lat_p99_ns / 1e3);
	}
	snprintf(cell[12], CELL, "%llu", (unsigned long long)q->errors);
	snprintf(cell[13], CELL, "%.2f", ios ? (double)q->db_writes / (double)ios : 0.0);
	if (r.have && (q->offcpu_ns || q->wait_ns)) {	/* published by the program */
		snprintf(cell[14], CELL, "%.0f", 100 * r.offcpu);
		snprintf(cell[15], CELL, "%.0f", 100 * r.wait);
	}
	if (r.have && q->ctrl_fetched)
		snprintf(cell[16], CELL, "%.0f", r.skipped_s);
}

static bool has_share(const struct sio_nvme_qstats *q)
{
	return q->offcpu_ns || q->wait_ns || q->ctrl_fetched;
}

/* One row: text columns to the left, numbers to the right, each as wide as
 * its widest cell, so that a usual table fits 80 columns. */
static void print_row(FILE *o, char cell[NCOL][CELL], const int *w, int ncol)
{
	for (int i = 0; i < ncol; i++)
		fprintf(o, i < 7 ? "%s%-*s" : "%s%*s", i ? " " : "", w[i], cell[i]);
	fprintf(o, "\n");
}

static void stats_text(FILE *o, const struct stats_view *v)
{
	static const char *const head[NCOL] = { "node", "pid", "dev", "qid", "sq", "cq",
						"doorbells", "IOPS", "MiB/s", "rd%", "p50us",
						"p99us", "err", "db/IO", "offcpu%", "wait%",
						"skip/s" };
	char cell[NCOL][CELL];
	int w[NCOL], ncol = NCOL_BASE;

	if (!v->cur->n) {
		fprintf(o, "(no NVMe client runs on this fabric now: the counters are a running "
			"client's; the device's own totals: nvme-identify --log smart)\n");
		return;
	}
	for (int i = 0; i < NCOL; i++) {
		w[i] = (int)strlen(head[i]);
		snprintf(cell[i], CELL, "%s", head[i]);
	}
	for (int i = 0; i < v->cur->n; i++)
		for (uint32_t k = 0; k < v->cur->c[i].nqueues; k++) {
			char x[NCOL][CELL];

			row_cells(v, &v->cur->c[i], &v->cur->c[i].q[k], x);
			if (has_share(&v->cur->c[i].q[k]))
				ncol = NCOL;
			for (int j = 0; j < NCOL; j++)
				if ((int)strlen(x[j]) > w[j])
					w[j] = (int)strlen(x[j]);
		}
	print_row(o, cell, w, ncol);
	for (int i = 0; i < v->cur->n; i++) {
		const struct sio_nvme_client_stats *c = &v->cur->c[i];

		for (uint32_t k = 0; k < c->nqueues; k++) {
			const struct sio_nvme_qstats *q = &c->q[k];

			row_cells(v, c, q, cell);
			print_row(o, cell, w, ncol);
			if (q->timeouts || q->recoveries || q->resubmitted || q->failovers ||
			    q->link_flaps)
				fprintf(o, "      faults: %llu timeout(s), %llu recover%s, %llu "
					"command(s) resent, %llu failover(s), %llu link flap(s) "
					"ridden out, paused %.1f ms\n",
					(unsigned long long)q->timeouts,
					(unsigned long long)q->recoveries,
					q->recoveries == 1 ? "y" : "ies",
					(unsigned long long)q->resubmitted,
					(unsigned long long)q->failovers,
					(unsigned long long)q->link_flaps,
					(double)q->paused_ns / 1e6);
		}
	}
}

/* The fabric in a few lines: nodes, links down, windows, devices, borrows. */
static void fabric_summary(FILE *o, const struct sio_fabric_status *st)
{
	int down = 0, used = 0, most = 0, mnode = 0;

	for (int n = 0; n < st->nnodes; n++)
		for (int a = 0; a < st->nodes[n].adapters; a++) {
			down += !st->nodes[n].link_up[a];
			used += st->nodes[n].windows_used[a];
			if (st->nodes[n].windows_used[a] > most)
				most = st->nodes[n].windows_used[a], mnode = n;
		}
	fprintf(o, "fabric %s: %d nodes (%s), %d processes, %d link(s) down\n"
		"windows in use %d, most %d/%d on node %d\n", st->name, st->topo.nodes,
		prog_topo_name(st->topo.kind), st->procs, down, used, most, st->topo.windows, mnode);
	/* per node and adapter: windows in use, and a link that is down */
	fprintf(o, "windows (of %d) per node%s:", st->topo.windows,
		st->topo.adapters > 1 ? " and adapter" : "");
	for (int n = 0; n < st->nnodes; n++)
		for (int a = 0; a < st->nodes[n].adapters; a++) {
			if (st->topo.adapters > 1)
				fprintf(o, " %d.%d:", n, a);
			else
				fprintf(o, " %d:", n);
			fprintf(o, "%d%s", st->nodes[n].windows_used[a],
				st->nodes[n].link_up[a] ? "" : "(DOWN)");
		}
	fprintf(o, "\n");
	for (int i = 0; i < st->ndevices; i++) {
		const struct sio_device_info *d = &st->devices[i];

		fprintf(o, "device %u %-16s lent by node %d, %d borrower(s)%s, %llu DMA fault(s):",
			d->id, d->name, d->lender, d->borrowers, d->exclusive ? " (exclusive)" : "",
			(unsigned long long)d->dma_faults);
		for (int b = 0; b < st->nborrows; b++)
			if (st->borrows[b].device == d->id)
				fprintf(o, " %d@%d", st->borrows[b].pid, st->borrows[b].node);
		fprintf(o, "\n");
	}
}

static int stats_once(void *arg)
{
	struct stats_view *v = arg;
	struct sio_fabric_status *st = NULL;
	struct sio_fabric *f;
	int n;

	if (prog_join(v->name, -1, &f))	/* as this host's node ($SMARTIO_NODE, or ntb: its port) */
		return PROG_FAIL;
	v->cur = &v->bufs[v->k];
	v->prev = v->have_prev ? &v->bufs[!v->k] : NULL;
	v->cur->t_ns = sio__now_ns();
	n = sio_nvme_stats_read(f, v->device, v->cur->c, MAX_CLIENTS);
	if (n >= 0 && v->top && sio_fabric_status_get(f, &st))
		n = -1;
	if (st)
		prog_status_without_me(f, st);
	sio_fabric_close(f);
	if (n < 0)
		return prog_fail("%s", sio_errmsg());
	v->cur->n = n < MAX_CLIENTS ? n : MAX_CLIENTS;
	if (v->json) {
		prog_json_print(stdout, stats_json(v));
	} else if (v->prom) {
		struct prom *p = prom_open(stdout);

		if (!p) {
			sio_fabric_status_close(st);
			return prog_fail("out of memory");
		}
		stats_prom(p, v);
		prom_close(p);
	} else {
		if (st)
			fabric_summary(stdout, st);
		stats_text(stdout, v);
		if (v->top)
			printf("(latency: as each client program publishes it; rates over the last "
			       "interval)\n");
	}
	fflush(stdout);
	sio_fabric_status_close(st);
	v->k = !v->k;
	v->have_prev = true;
	return 0;
}

static int run_view(struct stats_view *v, double interval, uint64_t count)
{
	int ret;

	v->bufs = calloc(2, sizeof(*v->bufs));
	if (!v->bufs)
		return prog_fail("out of memory");
	if (interval > 0)
		ret = prog_repeat(stats_once, v, interval, count, v->json);
	else
		ret = stats_once(v);
	free(v->bufs);
	return ret;
}

static int cmd_stats(int argc, char **argv)
{
	enum { O_JSON = 256, O_WATCH, O_COUNT, O_DEVICE, O_PROM, O_FABRIC };
	static const struct option o[] = {
		{ "json", 0, 0, O_JSON }, { "watch", 2, 0, O_WATCH }, { "count", 1, 0, O_COUNT },
		{ "device", 1, 0, O_DEVICE }, { "prometheus", 0, 0, O_PROM },
		{ "fabric", 1, 0, O_FABRIC }, PROG_LONGOPTS, { 0 } };
	struct stats_view v = { .device = SIO_DEVICE_ANY };
	double interval = 0;
	uint64_t count = 0;
	int c;

	while ((c = prog_getopt(argc, argv, "h", o)) != -1) {
		switch (c) {
		case O_JSON: v.json = true; break;
		case O_PROM: v.prom = true; break;
		case O_WATCH: interval = prog_watch_arg(optarg, argc, argv); break;
		case O_COUNT: count = prog_u64("--count", optarg, 1, UINT64_MAX); break;
		case O_DEVICE: v.device = prog_u32("--device", optarg, 0, SIO_DEVICE_ANY - 1); break;
		case O_FABRIC: v.name = optarg; break;
		}
	}
	if (optind < argc && !v.name)
		v.name = argv[optind++];
	prog_no_args(argc, argv);
	if (count && !interval)
		prog_usage_error("--count goes with --watch");
	if (v.json && v.prom)
		prog_usage_error("--json or --prometheus: one format");
	return run_view(&v, interval, count);
}

static int cmd_top(int argc, char **argv)
{
	enum { O_INTERVAL = 256, O_COUNT, O_DEVICE, O_FABRIC };
	static const struct option o[] = {
		{ "interval", 1, 0, O_INTERVAL }, { "count", 1, 0, O_COUNT },
		{ "device", 1, 0, O_DEVICE }, { "fabric", 1, 0, O_FABRIC }, PROG_LONGOPTS, { 0 } };
	struct stats_view v = { .device = SIO_DEVICE_ANY, .top = true };
	double interval = 1;
	uint64_t count = 0;
	int c;

	while ((c = prog_getopt(argc, argv, "hd:n:", o)) != -1) {
		switch (c) {
		case O_INTERVAL: case 'd': interval = prog_time("--interval", optarg, 1, 0.1, 86400); break;
		case O_COUNT: case 'n': count = prog_u64("--count", optarg, 1, UINT64_MAX); break;
		case O_DEVICE: v.device = prog_u32("--device", optarg, 0, SIO_DEVICE_ANY - 1); break;
		case O_FABRIC: v.name = optarg; break;
		}
	}
	if (optind < argc && !v.name)
		v.name = argv[optind++];
	prog_no_args(argc, argv);
	return run_view(&v, interval, count);
}

/* One scrape: the fabric's status and its NVMe clients' counters. */
static int exporter_metrics(void *arg, FILE *out)
{
	struct stats_view *v = arg;
	struct sio_fabric_status *st = NULL;
	struct sio_fabric *f;
	struct prom *p;
	int n;

	if (prog_join(v->name, -1, &f))	/* as this host's node ($SMARTIO_NODE, or ntb: its port) */
		return PROG_FAIL;
	v->cur = &v->bufs[0];
	v->prev = NULL;
	n = sio_nvme_stats_read(f, v->device, v->cur->c, MAX_CLIENTS);
	if (n >= 0 && sio_fabric_status_get(f, &st))
		n = -1;
	sio_fabric_close(f);
	if (n < 0)
		return prog_fail("%s", sio_errmsg());
	v->cur->n = n < MAX_CLIENTS ? n : MAX_CLIENTS;
	p = prom_open(out);
	if (p) {
		prom_fabric(p, st);
		stats_prom(p, v);
	}
	sio_fabric_status_close(st);
	if (!p || prom_close(p))
		return prog_fail("out of memory");
	return 0;
}

static int cmd_exporter(int argc, char **argv)
{
	enum { O_LISTEN = 256, O_DEVICE };
	static const struct option o[] = {
		{ "listen", 1, 0, O_LISTEN }, { "device", 1, 0, O_DEVICE }, PROG_LONGOPTS, { 0 } };
	struct stats_view v = { .device = SIO_DEVICE_ANY };
	const char *listen = NULL;
	int c, ret;

	while ((c = prog_getopt(argc, argv, "hl:", o)) != -1) {
		switch (c) {
		case O_LISTEN: case 'l': listen = optarg; break;
		case O_DEVICE: v.device = prog_u32("--device", optarg, 0, SIO_DEVICE_ANY - 1); break;
		}
	}
	if (optind < argc)
		v.name = argv[optind++];
	prog_no_args(argc, argv);
	if (!listen)
		prog_usage_error("where to listen? --listen HOST:PORT (127.0.0.1:9400)");
	v.bufs = calloc(1, sizeof(*v.bufs));
	if (!v.bufs)
		return prog_fail("out of memory");
	prog_catch_stop();
	ret = prom_serve(listen, exporter_metrics, &v);
	free(v.bufs);
	return ret;
}

static void usage(FILE *o)
{
	fprintf(o,
"usage: smartio nvme stats [NAME|--fabric NAME] [--json|--prometheus] [--watch [TIME]]\n"
"                          [--count N] [--device ID]\n"
"                                  the NVMe driver's counters, per client and queue;\n"
"                                  --prometheus: Prometheus's text format (for\n"
"                                  node_exporter's textfile collector)\n"
"       smartio top [NAME|--fabric NAME] [--interval TIME] [--count N] [--device ID]\n"
"                                  live NVMe clients and queue pairs: IOPS, MiB/s,\n"
"                                  latency, errors, doorbells\n"
"       smartio exporter [NAME] --listen HOST:PORT [--device ID]\n"
"                                  serve smartio status --prometheus and the\n"
"                                  counters above on http://HOST:PORT/metrics, one\n"
"                                  scrape at a time, until SIGINT or SIGTERM\n"
"smartio runs this program for all three (as smartio-nvme stats|top|exporter ...).\n"
"NAME defaults to $SMARTIO_FABRIC.\n"
PROG_HELP
"Exit status: 0 ok, 1 failed, 2 usage error.\n");
}

int main(int argc, char **argv)
{
	static const struct option o[] = { PROG_LONGOPTS, { 0 } };

	prog_init("smartio-nvme", usage);
	if (argc >= 2 && argv[1][0] == '-') {	/* --help, --version */
		prog_getopt(2, argv, "h", o);
		prog_usage_error("unknown option '%s'", argv[1]);
	}
	optind = 1;
	if (argc >= 2 && !strcmp(argv[1], "stats"))
		return cmd_stats(argc - 1, argv + 1);
	if (argc >= 2 && !strcmp(argv[1], "top"))
		return cmd_top(argc - 1, argv + 1);
	if (argc >= 2 && !strcmp(argv[1], "exporter"))
		return cmd_exporter(argc - 1, argv + 1);
	prog_usage_error("%s%s%s (there is: stats, top, exporter)", argc < 2 ? "no command" :
			 "unknown command '", argc < 2 ? "" : argv[1], argc < 2 ? "" : "'");
}
