/* SPDX-License-Identifier: MIT */
/*
 * gpu-bench: GPU-initiated NVMe I/O. A CUDA kernel issues 4 KiB random
 * reads into GPU memory.
 *   sweep (default): threads x queues x depth, IOPS and MiB/s
 *   --sq-placement: QD1 latency with the SQ in GPU memory (next to the
 *	controller when the GPU's node lends it) and in host memory, side by
 *	side; CQ in host memory for both
 * Prints a table and writes JSON (--json FILE, default gpu-bench.json).
 * Needs a running controller and manager on --fabric (nvme-emu started with
 * SMARTIO_GPU_PLUGIN naming libsmartio-gpudma.so); exits 77 without a GPU,
 * 1 when SMARTIO_REQUIRE_GPU=1 is set.
 */

#include "hist.h"
#include "prog.h"
#include "opt.h"
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
static uint64_t buf_bus;
static uint64_t nios = 65536;

static int run(uint32_t threads, uint32_t nq, uint32_t depth, bool sq_host, uint64_t *lat,
	       struct sio_gpu_job_result *r)
{
	struct sio_gpu_qp_opts o = { .depth = depth, .sq_in_host = sq_host };
	struct sio_gpu_queue *dq[64];
	struct sio_gpu_qp *qp[64];
	struct sio_gpu_qp_info qi;
	uint32_t nlb = 4096 / ns.lba_size, i;
	int ret = 0;

	for (i = 0; i < nq && !ret; i++) {
		ret = sio_gpu_qp_create(g, &o, &qp[i]);
		if (!ret) {
			sio_gpu_qp_info(qp[i], &qi);
			dq[i] = qi.queue;
		}
	}
	if (!ret) {
		struct sio_gpu_job j = { .opcode = SIO_NVME_CMD_READ, .nsid = 1,
					 .lba_size = ns.lba_size, .nlb = nlb, .nios = nios,
					 .slba = 0, .span = ns.nsze - ns.nsze % nlb, .seed = 42,
					 .threads = threads, .dptr = buf->dptr, .bus = buf_bus,
					 .size = buf->size, .lat_ns = lat };
		ret = sio_gpu_run_job(dq, (int)nq, &j, r);
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
	fprintf(o, "usage: gpu-bench --fabric NAME [options]\n"
		"NVMe reads issued by CUDA threads from queues in GPU memory.\n\n"
		"  --fabric NAME     the fabric (default $SMARTIO_FABRIC)\n"
		"  --node N          node to join as (default 0)\n"
		"  --device ID       the NVMe controller (default: the first)\n"
		"  --ios N           reads per point\n"
		"  --threads LIST    CUDA threads, comma-separated (default 32,256)\n"
		"  --queues LIST     queue pairs (default 1,4; at most 64)\n"
		"  --depth LIST      queue depths (default 32,256)\n"
		"  --sq-placement    also compare SQs in GPU and host memory\n"
		"  --json FILE       the results (default gpu-bench.json)\n"
		PROG_HELP
		"Exit status: 0 ok, 1 failed, 2 usage error, 77 no GPU (skipped).\n");
}

struct gb_opts {
	const char *fname, *json;
	uint32_t th[16], qs[16], ds[16];
	int nth, nqs, nds, node;
	int64_t devid;	/* --device; -1: the first NVMe controller */
	bool placement;
};

static int run_bench(struct gb_opts *o);

int main(int argc, char **argv)
{
	struct gb_opts o = { .fname = getenv("SMARTIO_FABRIC"), .json = "gpu-bench.json",
			     .th = { 32, 256 }, .qs = { 1, 4 }, .ds = { 32, 256 },
			     .nth = 2, .nqs = 2, .nds = 2, .devid = -1 };
	static const struct option lo[] = {
		{ "fabric", 1, 0, 'f' }, { "node", 1, 0, 'n' }, { "ios", 1, 0, 'i' },
		{ "threads", 1, 0, 't' }, { "queues", 1, 0, 'q' }, { "depth", 1, 0, 'd' },
		{ "json", 1, 0, 'j' }, { "sq-placement", 0, 0, 'p' }, { "device", 1, 0, 'D' },
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
		case 'j': o.json = optarg; break;
		case 'p': o.placement = true; break;
		}
	}
	prog_no_args(argc, argv);
	if (!o.fname)
		prog_usage_error("no fabric given: use --fabric NAME or set SMARTIO_FABRIC");
	if (o.nth < 1 || o.nqs < 1 || o.nds < 1)
		prog_usage_error("--threads, --queues and --depth take lists of numbers");
	for (int i = 0; i < o.nqs; i++)
		if (o.qs[i] > 64)
			prog_usage_error("--queues: at most 64 queues");
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

/* Join the fabric, connect to the controller, say what is measured; the
 * namespace and the GPU buffer the reads land in. */
static int open_target(const struct gb_opts *o)
{
	struct sio_nvme_client *cl;
	struct sio_device_info di;
	struct sio_topology topo;

	if (sio_fabric_open(o->fname, o->node, &f) || sio_gpu_nvme_open(f, o->devid, 0, &g)) {
		fprintf(stderr, "gpu-bench: %s %s\n", sio_errmsg(), sio_errmsg());
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
	    sio_gpu_mem_create(f, 16u << 20, 0, &buf) ||
	    sio_device_map(sio_nvme_client_device(cl), buf->seg, &buf_bus)) {
		fprintf(stderr, "gpu-bench: setup: %s / %s\n", sio_errmsg(), sio_errmsg());
		return 1;
	}
	return 0;
}

/* One SQ placement's latencies (ns, copied from the GPU) into a histogram. */
static int placement_hist(const uint64_t *dlat, uint64_t *lat, struct hist *h)
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

/* --sq-placement: QD1 latency, one GPU thread, the SQ in GPU then in host memory. */
static int placement_runs(struct json_object *jo)
{
	uint64_t *dlat = NULL, *lat = malloc(nios * sizeof(*lat));
	const char *name[2] = { "gpu", "host" };
	struct hist *h = malloc(sizeof(*h));
	struct json_object *runs;
	int rc = 1;

	if (!lat || !h || cudaMalloc((void **)&dlat, nios * sizeof(*dlat)) != cudaSuccess) {
		fprintf(stderr, "gpu-bench: no memory for %llu latencies\n",
			(unsigned long long)nios);
		goto out;
	}
	printf("sq-placement: QD1 4 KiB random reads issued by one GPU thread, %llu each; "
	       "CQ in host memory\n%-6s %10s %10s %10s %10s %10s\n",
	       (unsigned long long)nios, "SQ", "p50 us", "p90 us", "p99 us", "p99.9 us",
	       "max us");
	pj_str(jo, "benchmark", "gpu-sq-placement");
	pj_u64(jo, "ios", nios);
	runs = pj_arr(jo, "runs");
	for (int k = 0; k < 2; k++) {
		struct sio_gpu_job_result r;
		struct json_object *o;

		if (run(1, 1, 64, k == 1, dlat, &r) || placement_hist(dlat, lat, h))
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
	if (dlat)
		cudaFree(dlat);
	free(h);
	free(lat);
	return rc;
}

/* The sweep: every threads x queues x depth point, IOPS and MiB/s. */
static int sweep_points(const struct gb_opts *o, struct json_object *jo)
{
	struct json_object *points;

	printf("sweep: 4 KiB random reads issued by GPU threads, %llu per point\n"
	       "%8s %7s %6s %12s %10s %8s\n", (unsigned long long)nios, "threads", "queues",
	       "depth", "IOPS", "MiB/s", "errors");
	pj_str(jo, "benchmark", "gpu-sweep");
	pj_u64(jo, "ios", nios);
	points = pj_arr(jo, "points");
	for (int a = 0; a < o->nth; a++)
		for (int b = 0; b < o->nqs; b++)
			for (int d = 0; d < o->nds; d++) {
				uint32_t th = o->th[a], qs = o->qs[b], ds = o->ds[d];
				struct sio_gpu_job_result r;
				struct json_object *p;
				double iops;

				if (run(th, qs, ds, false, NULL, &r))
					return 1;
				iops = r.seconds > 0 ? r.ok / r.seconds : 0;
				printf("%8u %7u %6u %12.0f %10.1f %8llu\n", th, qs, ds, iops,
				       iops * 4096 / (1 << 20), (unsigned long long)r.failed);
				fflush(stdout);
				p = pj_push_obj(points);
				pj_int(p, "threads", th);
				pj_int(p, "queues", qs);
				pj_int(p, "depth", ds);
				pj_dbl(p, "iops", iops);
				pj_u64(p, "failed", r.failed);
			}
	return 0;
}

static int run_bench(struct gb_opts *o)
{
	struct json_object *jo;
	int rc;

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
	sio_device_unmap(sio_nvme_client_device(sio_gpu_nvme_client(g)), buf->seg);
	sio_gpu_mem_close(buf);
	sio_gpu_nvme_close(g);
	sio_fabric_close(f);
	return 0;
}
