/* SPDX-License-Identifier: MIT */
/*
 * gpu-bench: GPU-initiated NVMe I/O. A CUDA kernel issues random reads
 * into GPU memory.
 *   sweep (default): block size x threads x queues x depth x SQ/CQ
 *	placement: commands/s, MiB/s and each command's latency as its
 *	thread saw it (p50, p99)
 *   --sq-placement: QD1 latency with the SQ in GPU memory (next to the
 *	controller when the GPU's node lends it) and in host memory, side by
 *	side; CQ in host memory for both
 * The controller is the fabric's (nvme-emu started with SMARTIO_GPU_PLUGIN
 * naming libsmartio-gpudma.so, and a manager), or with --ctrl null|ram the
 * GPU-resident model (sio_gpu_ctrl_create(), no fabric) holding
 * --ctrl-sms SMs, which measures the queue engine itself.
 * Prints a table and writes JSON (--json FILE, default gpu-bench.json);
 * exits 77 without a GPU, 1 when SMARTIO_REQUIRE_GPU=1 is set.
 */

#include "hist.h"
#include "prog.h"
#include "opt.h"
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cuda_runtime_api.h>
#include <smartio/gpu.h>
#include <smartio/nvme.h>

static struct sio_fabric *f;
static struct sio_gpu_nvme *g;
static struct sio_nvme_ns ns;
static struct sio_gpu_mem *buf;
static void *dbuf;		/* the data buffer, device pointer */
static uint64_t dbuf_size;
static uint64_t buf_bus;
static uint64_t nios = 65536;

/* The GPU-resident model (--ctrl null|ram): its kind, or -1 for the fabric's controller. */
static int model = -1;
static uint32_t model_sms = 8;
static uint64_t model_ns = 1ull << 30;

/* One point of the sweep. */
struct point {
	uint32_t threads, nq, depth, bs;
	bool sq_host, cq_host;
};

static void job_fill(struct sio_gpu_job *j, const struct point *p, uint32_t lba_size,
		     uint64_t nsze, uint64_t bus, uint64_t *lat)
{
	uint32_t nlb = p->bs / lba_size;

	*j = (struct sio_gpu_job){ .opcode = SIO_NVME_CMD_READ, .nsid = 1,
				   .lba_size = lba_size, .nlb = nlb, .nios = nios,
				   .slba = 0, .span = nsze - nsze % nlb, .seed = 42,
				   .threads = p->threads, .dptr = dbuf, .bus = bus,
				   .size = dbuf_size, .lat_ns = lat };
}

/* A point against the GPU-resident model: made, run and stopped for it. */
static int run_model(const struct point *p, uint64_t *lat, struct sio_gpu_job_result *r)
{
	struct sio_gpu_ctrl_opts co = { .kind = model, .ns_bytes = model_ns, .lba_size = 512,
					.sms = model_sms, .nq = p->nq, .depth = p->depth,
					.sq_in_host = p->sq_host, .cq_in_host = p->cq_host,
					.data = dbuf, .data_size = dbuf_size };
	struct sio_gpu_queue *dq[64];
	struct sio_gpu_ctrl_stats st;
	struct sio_gpu_ctrl *c;
	struct sio_gpu_job j;
	int ret;

	ret = sio_gpu_ctrl_create(&co, &c);
	if (ret) {
		fprintf(stderr, "gpu-bench: GPU controller model: %s\n", sio_errmsg());
		return ret;
	}
	for (uint32_t i = 0; i < p->nq; i++)
		dq[i] = sio_gpu_ctrl_queue(c, i);
	job_fill(&j, p, 512, model_ns / 512, sio_gpu_ctrl_bus(c, dbuf), lat);
	ret = sio_gpu_ctrl_start(c);
	if (!ret) {
		int r2;

		ret = sio_gpu_run_job(dq, (int)p->nq, &j, r);
		r2 = sio_gpu_ctrl_stop(c, &st);
		ret = ret ? ret : r2;
	}
	if (ret) {
		fprintf(stderr, "gpu-bench: %s\n", sio_errmsg());
	} else if (st.commands != r->ok + r->failed) {
		/* a figure only if every command the engine counted ran */
		fprintf(stderr, "gpu-bench: the model completed %llu commands, the engine "
			"counted %llu\n", (unsigned long long)st.commands,
			(unsigned long long)(r->ok + r->failed));
		ret = -EIO;
	}
	sio_gpu_ctrl_close(c);
	return ret;
}

static int run(const struct point *p, uint64_t *lat, struct sio_gpu_job_result *r)
{
	struct sio_gpu_qp_opts o = { .depth = p->depth, .sq_in_host = p->sq_host,
				     .cq_in_gpu = !p->cq_host };
	struct sio_gpu_queue *dq[64];
	struct sio_gpu_qp *qp[64];
	struct sio_gpu_qp_info qi;
	uint32_t i;
	int ret = 0;

	if (model >= 0)
		return run_model(p, lat, r);
	for (i = 0; i < p->nq && !ret; i++) {
		ret = sio_gpu_qp_create(g, &o, &qp[i]);
		if (!ret) {
			sio_gpu_qp_info(qp[i], &qi);
			dq[i] = qi.queue;
		}
	}
	if (!ret) {
		struct sio_gpu_job j;

		job_fill(&j, p, ns.lba_size, ns.nsze, buf_bus, lat);
		ret = sio_gpu_run_job(dq, (int)p->nq, &j, r);
	}
	while (i--)
		sio_gpu_qp_close(qp[i]);
	if (ret)
		fprintf(stderr, "gpu-bench: %s\n", sio_errmsg());
	return ret;
}

static int parse_list(const char *s, uint32_t *out, int max)
{
	int n = 0;

	for (char *e; *s && n < max; s = *e ? e + 1 : e) {
		out[n++] = (uint32_t)strtoul(s, &e, 10);
		if (e == s || out[n - 1] == 0)
			return -1;
	}
	return n;
}

static void usage(FILE *o)
{
	fprintf(o, "usage: gpu-bench [--fabric NAME | --ctrl null|ram] [options]\n"
		"NVMe reads issued by CUDA threads from GPU queues.\n\n"
		"  --fabric NAME     the fabric (default $SMARTIO_FABRIC)\n"
		"  --node N          node to join as (default 0)\n"
		"  --device ID       the NVMe controller (default: the first)\n"
		"  --ctrl KIND       emu: the fabric's controller (default); null or ram: the\n"
		"                    GPU-resident model, no fabric (null moves no data)\n"
		"  --ctrl-sms N      SMs (blocks) the GPU-resident model holds (default 8)\n"
		"  --ios N           reads per point\n"
		"  --bs LIST         bytes per read, 512 and/or 4096 (default 4096)\n"
		"  --threads LIST    CUDA threads, comma-separated (default 32,256)\n"
		"  --queues LIST     queue pairs (default 1,4; at most 64)\n"
		"  --depth LIST      queue depths (default 32,256)\n"
		"  --sq LIST         SQ placement: gpu and/or host (default gpu)\n"
		"  --cq LIST         CQ placement: gpu and/or host (default host)\n"
		"  --sq-placement    QD1 latency, SQ in GPU then host memory (emu only)\n"
		"  --json FILE       the results (default gpu-bench.json)\n"
		PROG_HELP
		"Exit status: 0 ok, 1 failed, 2 usage error, 77 no GPU (skipped).\n");
}

struct gb_opts {
	const char *fname, *json;
	uint32_t th[16], qs[16], ds[16], bs[4];
	bool sq[2], cq[2];	/* [0] gpu, [1] host: placements swept */
	int nth, nqs, nds, nbs, node;
	int64_t devid;	/* --device; -1: the first NVMe controller */
	bool placement;
};

/* "gpu,host" into which of the two placements to sweep. */
static void parse_place(const char *opt, const char *arg, bool *out)
{
	static const char *const names[] = { "gpu", "host", NULL };
	char tmp[64], *save = NULL;

	out[0] = out[1] = false;
	snprintf(tmp, sizeof(tmp), "%s", arg);
	for (char *t = strtok_r(tmp, ",", &save); t; t = strtok_r(NULL, ",", &save))
		out[prog_choice(opt, t, names)] = true;
	if (!out[0] && !out[1])
		prog_usage_error("%s: give gpu, host or gpu,host", opt);
}

static void parse_ctrl(const char *arg)
{
	static const char *const names[] = { "emu", "null", "ram", NULL };

	model = prog_choice("--ctrl", arg, names) - 1;
}

static int run_bench(struct gb_opts *o);

static void opts_check(struct gb_opts *o)
{
	if (model < 0 && !o->fname)
		prog_usage_error("no fabric given: use --fabric NAME or set SMARTIO_FABRIC "
				 "(or --ctrl null|ram for the GPU-resident model)");
	if (o->nth < 1 || o->nqs < 1 || o->nds < 1 || o->nbs < 1)
		prog_usage_error("--threads, --queues, --depth and --bs take lists of numbers");
	for (int i = 0; i < o->nqs; i++)
		if (o->qs[i] > 64)
			prog_usage_error("--queues: at most 64 queues");
	for (int i = 0; i < o->nbs; i++)
		if (o->bs[i] != 512 && o->bs[i] != 4096)
			prog_usage_error("--bs: %u bytes; 512 or 4096", o->bs[i]);
	for (int i = 0; i < o->nds; i++)
		if (o->ds[i] < 2 || o->ds[i] > 65536 || (o->ds[i] & (o->ds[i] - 1)))
			prog_usage_error("--depth: %u is not a power of two in 2..65536", o->ds[i]);
	if (o->placement && model >= 0)
		prog_usage_error("--sq-placement measures the fabric's controller: drop --ctrl");
}

int main(int argc, char **argv)
{
	struct gb_opts o = { .fname = getenv("SMARTIO_FABRIC"), .json = "gpu-bench.json",
			     .th = { 32, 256 }, .qs = { 1, 4 }, .ds = { 32, 256 }, .bs = { 4096 },
			     .sq = { true, false }, .cq = { false, true },
			     .nth = 2, .nqs = 2, .nds = 2, .nbs = 1, .devid = -1 };
	static const struct option lo[] = {
		{ "fabric", 1, 0, 'f' }, { "node", 1, 0, 'n' }, { "ios", 1, 0, 'i' },
		{ "threads", 1, 0, 't' }, { "queues", 1, 0, 'q' }, { "depth", 1, 0, 'd' },
		{ "json", 1, 0, 'j' }, { "sq-placement", 0, 0, 'p' }, { "device", 1, 0, 'D' },
		{ "ctrl", 1, 0, 'C' }, { "ctrl-sms", 1, 0, 'S' }, { "bs", 1, 0, 'b' },
		{ "sq", 1, 0, 's' }, { "cq", 1, 0, 'c' },
		PROG_LONGOPTS, { 0, 0, 0, 0 } };
	int c;

	prog_init("gpu-bench", usage);
	while ((c = prog_getopt(argc, argv, "f:n:i:t:q:d:j:ph", lo)) != -1) {
		switch (c) {
		case 'D': o.devid = (int64_t)prog_u64("--device", optarg, 0, UINT32_MAX - 1); break;
		case 'f': o.fname = optarg; break;
		case 'n': o.node = (int)prog_u64("--node", optarg, 0, SIO_MAX_NODES - 1); break;
		case 'i': nios = prog_u64("--ios", optarg, 1, 1ull << 40); break;
		case 't': o.nth = parse_list(optarg, o.th, 16); break;
		case 'q': o.nqs = parse_list(optarg, o.qs, 16); break;
		case 'd': o.nds = parse_list(optarg, o.ds, 16); break;
		case 'b': o.nbs = parse_list(optarg, o.bs, 4); break;
		case 'j': o.json = optarg; break;
		case 'p': o.placement = true; break;
		case 'C': parse_ctrl(optarg); break;
		case 'S': model_sms = prog_u32("--ctrl-sms", optarg, 1, 1024); break;
		case 's': parse_place("--sq", optarg, o.sq); break;
		case 'c': parse_place("--cq", optarg, o.cq); break;
		}
	}
	prog_no_args(argc, argv);
	opts_check(&o);
	return run_bench(&o);
}

/* No GPU: skipped (77), or a failure (1) with SMARTIO_REQUIRE_GPU=1; 0: go on. */
static int gpu_or_skip(void)
{
	if (sio_gpu_count() > 0)
		return 0;
	if (sio_gpu_required()) {
		fprintf(stderr, "gpu-bench: FAIL: SMARTIO_REQUIRE_GPU is set, but %s\n", sio_errmsg());
		return 1;
	}
	printf("skipped: %s\n", sio_errmsg());
	return 77;
}

/* The data buffer for the GPU-resident model: plain GPU memory, no fabric. */
static int open_model(void)
{
	static const char *const kind[] = { "null (no data moves)", "ram (a RAM image in GPU memory)" };

	if (cudaMalloc(&dbuf, dbuf_size) != cudaSuccess) {
		fprintf(stderr, "gpu-bench: no GPU memory for a %llu-byte data buffer\n",
			(unsigned long long)dbuf_size);
		return 1;
	}
	printf("measured: the GPU-resident controller model, %s, holding %u SMs; "
	       "no fabric, no PCIe device\n", kind[model], model_sms);
	return 0;
}

/* Join the fabric, connect to the controller, say what is measured; the
 * namespace and the GPU buffer the reads land in. */
static int open_target(const struct gb_opts *o)
{
	struct sio_nvme_client *cl;
	struct sio_device_info di;
	struct sio_topology topo;

	if (model >= 0)
		return open_model();
	if (sio_fabric_open(o->fname, o->node, &f) || sio_gpu_nvme_open(f, o->devid, 0, &g)) {
		fprintf(stderr, "gpu-bench: %s\n", sio_errmsg());
		return 1;
	}
	cl = sio_gpu_nvme_client(g);
	if (!sio_device_info(sio_nvme_client_device(cl), &di) && !sio_fabric_topology(f, &topo))
		printf("measured: fabric %s, device %u%s%s (%s) on node %d, GPU 0 on node %d; %s\n",
		       o->fname, di.id, di.bdf[0] ? " at " : "", di.bdf,
		       di.backend == SIO_BACKEND_VFIO ? "vfio" : "sim", di.lender, o->node,
		       di.backend == SIO_BACKEND_VFIO ? "no latency model (a real device path)"
		       : topo.latency_model ? "latency model ON (modelled per-hop delays, not hardware)"
					    : "latency model OFF (software cost only)");
	if (sio_nvme_client_ns(cl, 1, &ns) ||
	    sio_gpu_mem_create(f, dbuf_size, 0, &buf) ||
	    sio_device_map(sio_nvme_client_device(cl), buf->seg, &buf_bus)) {
		fprintf(stderr, "gpu-bench: setup: %s\n", sio_errmsg());
		return 1;
	}
	for (int i = 0; i < o->nbs; i++)
		if (o->bs[i] % ns.lba_size) {
			fprintf(stderr, "gpu-bench: --bs %u is not a multiple of namespace 1's "
				"%u-byte blocks: start nvme-emu with --lba-size 512\n", o->bs[i],
				ns.lba_size);
			return 1;
		}
	dbuf = buf->dptr;
	return 0;
}

static void close_target(void)
{
	if (model >= 0) {
		cudaFree(dbuf);
		return;
	}
	sio_device_unmap(sio_nvme_client_device(sio_gpu_nvme_client(g)), buf->seg);
	sio_gpu_mem_close(buf);
	sio_gpu_nvme_close(g);
	sio_fabric_close(f);
}

/* Latencies (ns, copied from the GPU) into a histogram. */
static int lat_hist(const uint64_t *dlat, uint64_t *lat, struct hist *h)
{
	if (cudaMemcpy(lat, dlat, nios * sizeof(*lat), cudaMemcpyDeviceToHost) != cudaSuccess) {
		fprintf(stderr, "gpu-bench: reading the latencies failed\n");
		return 1;
	}
	hist_init(h);
	for (uint64_t i = 0; i < nios; i++)
		hist_add(h, lat[i]);
	return 0;
}

/* Room for nios latencies on the GPU and on the host. */
struct lat_bufs {
	uint64_t *dlat, *lat;
	struct hist *h;
};

static int lat_alloc(struct lat_bufs *b)
{
	b->lat = malloc(nios * sizeof(*b->lat));
	b->h = malloc(sizeof(*b->h));
	if (!b->lat || !b->h || cudaMalloc((void **)&b->dlat, nios * sizeof(*b->dlat)) != cudaSuccess) {
		fprintf(stderr, "gpu-bench: no memory for %llu latencies\n",
			(unsigned long long)nios);
		return 1;
	}
	return 0;
}

static void lat_free(struct lat_bufs *b)
{
	if (b->dlat)
		cudaFree(b->dlat);
	free(b->h);
	free(b->lat);
}

/* --sq-placement: QD1 latency, one GPU thread, the SQ in GPU then in host memory. */
static int placement_runs(struct json_object *jo)
{
	const char *name[2] = { "gpu", "host" };
	struct lat_bufs b = { 0 };
	struct json_object *runs;
	struct hist *h;
	int rc = 1;

	if (lat_alloc(&b))
		goto out;
	h = b.h;
	printf("sq-placement: QD1 4 KiB random reads issued by one GPU thread, %llu each; "
	       "CQ in host memory\n%-6s %10s %10s %10s %10s %10s\n",
	       (unsigned long long)nios, "SQ", "p50 us", "p90 us", "p99 us", "p99.9 us",
	       "max us");
	pj_str(jo, "benchmark", "gpu-sq-placement");
	pj_u64(jo, "ios", nios);
	runs = pj_arr(jo, "runs");
	for (int k = 0; k < 2; k++) {
		struct point p = { .threads = 1, .nq = 1, .depth = 64, .bs = 4096,
				   .sq_host = k == 1, .cq_host = true };
		struct sio_gpu_job_result r;
		struct json_object *o;

		if (run(&p, b.dlat, &r) || lat_hist(b.dlat, b.lat, h))
			goto out;
#define P(q) (hist_pct(h, (q)) / 1000.0)
		printf("%-6s %10.2f %10.2f %10.2f %10.2f %10.2f%s\n", name[k], P(50), P(90),
		       P(99), P(99.9), h->max / 1000.0, r.failed ? "  (errors)" : "");
		o = pj_push_obj(runs);
		pj_str(o, "sq", name[k]);
		pj_u64(o, "failed", r.failed);
		pj_dbl(o, "p50_us", P(50));
		pj_dbl(o, "p90_us", P(90));
		pj_dbl(o, "p99_us", P(99));
		pj_dbl(o, "p999_us", P(99.9));
		pj_dbl(o, "max_us", h->max / 1000.0);
#undef P
		json_object_object_add(o, "latency_ns", hist_json(h, 1.0));
	}
	rc = 0;
out:
	lat_free(&b);
	return rc;
}

/* One point: run it, print its line, add it to @points. */
static int sweep_point(const struct point *p, struct lat_bufs *b, struct json_object *points)
{
	static const char *const place[2] = { "gpu", "host" };
	struct sio_gpu_job_result r;
	struct json_object *o;
	double cps, p50, p99;

	if (run(p, b->dlat, &r) || lat_hist(b->dlat, b->lat, b->h))
		return 1;
	cps = r.seconds > 0 ? r.ok / r.seconds : 0;
	p50 = hist_pct(b->h, 50) / 1000.0;
	p99 = hist_pct(b->h, 99) / 1000.0;
	printf("%5u %8u %7u %6u %4s %4s %12.0f %10.1f %9.2f %9.2f %8llu\n", p->bs, p->threads,
	       p->nq, p->depth, place[p->sq_host], place[p->cq_host], cps,
	       cps * p->bs / (1 << 20), p50, p99, (unsigned long long)r.failed);
	fflush(stdout);
	o = pj_push_obj(points);
	pj_int(o, "bs", p->bs);
	pj_int(o, "threads", p->threads);
	pj_int(o, "queues", p->nq);
	pj_int(o, "depth", p->depth);
	pj_str(o, "sq", place[p->sq_host]);
	pj_str(o, "cq", place[p->cq_host]);
	pj_dbl(o, "commands_per_s", cps);
	pj_dbl(o, "iops", cps);
	pj_dbl(o, "mib_s", cps * p->bs / (1 << 20));
	pj_dbl(o, "lat_p50_us", p50);
	pj_dbl(o, "lat_p99_us", p99);
	pj_dbl(o, "lat_max_us", b->h->max / 1000.0);
	pj_u64(o, "ok", r.ok);
	pj_u64(o, "failed", r.failed);
	pj_int(o, "first_err", r.first_err);
	return 0;
}

/* The sweep: every bs x threads x queues x depth x SQ x CQ point. */
static int sweep_points(const struct gb_opts *o, struct json_object *jo)
{
	static const char *const kind[] = { "emu", "null", "ram" };
	struct lat_bufs b = { 0 };
	struct json_object *points;
	int rc = 1;

	if (lat_alloc(&b))
		goto out;
	printf("sweep: random reads issued by GPU threads, %llu per point; latency: each "
	       "command as its thread saw it\n%5s %8s %7s %6s %4s %4s %12s %10s %9s %9s %8s\n",
	       (unsigned long long)nios, "bs", "threads", "queues", "depth", "SQ", "CQ",
	       "commands/s", "MiB/s", "p50 us", "p99 us", "errors");
	pj_str(jo, "benchmark", "gpu-sweep");
	pj_str(jo, "ctrl", kind[model + 1]);
	if (model >= 0)
		pj_int(jo, "ctrl_sms", model_sms);
	pj_u64(jo, "ios", nios);
	points = pj_arr(jo, "points");
	for (int z = 0; z < o->nbs; z++)
		for (int a = 0; a < o->nth; a++)
			for (int q = 0; q < o->nqs; q++)
				for (int d = 0; d < o->nds; d++)
					for (int k = 0; k < 4; k++) {
						struct point p = { .bs = o->bs[z], .threads = o->th[a],
								   .nq = o->qs[q], .depth = o->ds[d],
								   .sq_host = k & 1, .cq_host = k >> 1 };

						if (!o->sq[p.sq_host] || !o->cq[p.cq_host])
							continue;
						if (sweep_point(&p, &b, points))
							goto out;
					}
	rc = 0;
out:
	lat_free(&b);
	return rc;
}

static int run_bench(struct gb_opts *o)
{
	struct json_object *jo;
	uint32_t maxth = 0;
	int rc;

	/* random reads land in the issuing thread's own slot: room for each */
	for (int i = 0; i < o->nth; i++)
		maxth = o->th[i] > maxth ? o->th[i] : maxth;
	dbuf_size = (uint64_t)maxth * 4096;
	if (dbuf_size < (16u << 20))
		dbuf_size = 16u << 20;
	if ((rc = gpu_or_skip()) || (rc = open_target(o)))
		return rc;
	if (!(jo = json_object_new_object()))
		return 1;
	pj_run_info(jo);
	if (o->placement ? placement_runs(jo) : sweep_points(o, jo)) {
		json_object_put(jo);
		return 1;
	}
	if (prog_json_write(o->json, jo))
		return 1;
	printf("wrote %s\n", o->json);
	close_target();
	return 0;
}
