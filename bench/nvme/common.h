/* SPDX-License-Identifier: MIT */
#ifndef SIO_BENCH_NVME_COMMON_H
#define SIO_BENCH_NVME_COMMON_H

/*
 * Shared plumbing of the NVMe benchmarks: a private fabric with an emulated
 * controller and a manager in child processes (torn down on exit and on
 * signals), timers, latency statistics, progress, JSON and gnuplot output.
 */

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>
#include <time.h>
#include <smartio/nvme.h>
#include "clock.h"
#include "hist.h"
#include "opt.h"

/* ---- environment: fabric, controller, manager ---- */

/**
 * struct nb_env_opts - the simulated set-up a benchmark runs on
 * @nodes: fabric nodes (at least 2)
 * @lender: node holding the controller and the manager
 * @model: latency model on
 * @backing: "ram:SIZE" or a file path
 * @cmb_mib: controller memory buffer (0: none)
 * @chassis: the controller sits behind an expansion-chassis switch
 * @arbitration: NVME_CC_AMS_RR or NVME_CC_AMS_WRRU
 * @arb_cdw11: Set Features (Arbitration) value the manager applies (0: none)
 * @windows: windows per adapter (0: the fabric's default)
 * @queues: I/O queue pairs the controller offers (0: its default)
 * @pin: pin the controller to @ctrl_cpu (the client takes CPU 0, or the
 *	CPU its struct nb_run says)
 * @ctrl_cpu: where @pin puts the controller (0: the last CPU; a CPU number
 *	plus one otherwise, so that a zeroed struct means the default)
 * @dbbuf: the manager's shadow doorbells, SIO_NVME_DBBUF_AUTO (off on the
 *	simulated fabric), _ON or _OFF (every ring to BAR0)
 * @irq_coalesce: Interrupt Coalescing the manager sets (0: none), as
 *	struct sio_nvme_ctrl_opts says
 * @clients_off_ctrl: with @pin, several smartio clients keep off the
 *	controller's CPU (where there are others): the controller stands
 *	for a device, which has hardware of its own
 */
struct nb_env_opts {
	int nodes;
	int lender;
	bool model;
	const char *backing;
	uint32_t cmb_mib;
	bool chassis;
	uint32_t arbitration;
	uint32_t arb_cdw11;
	int windows;
	uint32_t queues;
	bool pin;
	int ctrl_cpu;
	int dbbuf;
	uint32_t irq_coalesce;
	bool clients_off_ctrl;
};

/**
 * struct nb_env - what a benchmark runs on
 * @fabric: the fabric's name
 * @o: its set-up (on an existing fabric: @o.lender, @o.model, @o.nodes and
 *	@o.chassis as found there)
 * @emu_pid: the private controller's process (0: none)
 * @mgr_pid: the manager's process, when this benchmark started it (0: none)
 * @devid: the controller's device id
 * @external: an existing fabric and device (--fabric), left as found
 * @node: node the clients join on an existing fabric
 * @dev: the device as registered
 * @ctrl: the controller as its manager brought it up (model, serial, CMB)
 */
struct nb_env {
	char fabric[SIO_NAME_MAX];
	struct nb_env_opts o;
	pid_t emu_pid, mgr_pid;
	int64_t devid;
	bool external;
	int node;
	struct sio_device_info dev;
	struct sio_nvme_ctrl_info ctrl;
};

/* Create the fabric, start the controller and the manager; register the
 * teardown with atexit and SIGINT/SIGTERM. Return 0 or -errno (message on
 * stderr). */
int nb_env_up(struct nb_env *e, const char *tag, const struct nb_env_opts *o);
/* Join the existing fabric @t names and find its device and the manager
 * serving it; start a manager only with @t->start_manager. Nothing is
 * created, reset or taken over otherwise. 0 or -errno (message on stderr). */
int nb_env_attach(struct nb_env *e, const struct bench_target *t);
/* nb_env_attach() with @t->fabric, else nb_env_up() with @o. */
int nb_env_open(struct nb_env *e, const char *tag, const struct nb_env_opts *o,
		const struct bench_target *t);
/* Node the benchmark's first client joins (@own on a private fabric). */
int nb_env_client_node(const struct nb_env *e, int own);
/* Say what is measured: fabric, backend, device, latency model. */
void nb_env_describe(const struct nb_env *e, FILE *o);
/* The same as a JSON member: "target": {...} (json-c, so escaped) */
void nb_json_target(FILE *j, const struct nb_env *e);
struct json_object *nb_target_json(const struct nb_env *e);
/* The latency-model label of what runs (a real device has no model). */
const char *nb_env_model_label(const struct nb_env *e);
/* Stop the children and destroy the fabric (idempotent). */
void nb_env_down(struct nb_env *e);

/* A client on @node: fabric handle, client, one queue pair, one buffer. */
struct nb_client {
	struct sio_fabric *f;
	struct sio_nvme_client *cl;
	struct sio_nvme_ioq *q;
	struct sio_nvme_buf *buf;
	struct sio_nvme_ns ns;
	struct sio_nvme_ioq_info qi;
};

int nb_client_open(struct nb_client *c, const struct nb_env *e, int node,
		   const struct sio_nvme_qspec *spec, uint64_t bufsize);
void nb_client_close(struct nb_client *c);

/* Pin the calling process to one CPU (ignored where it fails). */
void nb_pin(int cpu);
/* nb_env_ctrl_cpu() - the CPU @pin puts @e's emulated controller on */
int nb_env_ctrl_cpu(const struct nb_env *e);
/* nb_pin_off() - keep off @cpu, where there are other CPUs */
void nb_pin_off(int cpu);
int nb_ncpus(void);

/* ---- how a benchmark runs: placement and repetition ---- */

/**
 * struct nb_run - where a benchmark's processes sit and how often it runs
 * @repeat: runs; each is reported, the summary is their median and range
 * @client_cpu: the CPU the benchmark's clients are pinned to
 * @ctrl_cpu: the CPU the emulated controller is pinned to
 * @dbbuf: the manager's shadow doorbells (SIO_NVME_DBBUF_AUTO: off on the
 *	simulated fabric, _ON, _OFF)
 */
struct nb_run {
	unsigned repeat;
	int client_cpu;
	int ctrl_cpu;
	int dbbuf;
};

enum { NB_OPT_REPEAT = 0x1100, NB_OPT_CLIENT_CPU, NB_OPT_CTRL_CPU, NB_OPT_DBBUF };

#define NB_RUN_LONGOPTS								\
	{ "repeat", required_argument, NULL, NB_OPT_REPEAT },			\
	{ "client-cpu", required_argument, NULL, NB_OPT_CLIENT_CPU },		\
	{ "ctrl-cpu", required_argument, NULL, NB_OPT_CTRL_CPU },		\
	{ "shadow-doorbells", required_argument, NULL, NB_OPT_DBBUF }

#define NB_RUN_HELP								\
	"  --repeat N       runs, each reported; medians and their range summed up\n" \
	"  --client-cpu N   pin the clients to CPU N (default 0)\n"		\
	"  --ctrl-cpu N     pin the emulated controller to CPU N (default the last)\n" \
	"  --shadow-doorbells auto|on|off  the manager's (default auto: off on the\n" \
	"                   simulated fabric, where they do not pay)\n"

/* Defaults: @repeat runs, clients on CPU 0, the controller on the last CPU. */
void nb_run_init(struct nb_run *r, unsigned repeat);
/* One of the options above: 1 when @c was one (its value checked), else 0. */
int nb_run_opt(const char *prog, struct nb_run *r, int c, const char *arg);
/* Apply @r to the set-up a benchmark is about to make. */
void nb_run_apply(const struct nb_run *r, struct nb_env_opts *o);
/* Say where things run and how loaded the machine is: one "placement:" line. */
void nb_run_describe(const struct nb_run *r, const struct nb_env *e, FILE *o);
/* The same as JSON: an object, or a member "placement": {...} */
struct json_object *nb_run_json(const struct nb_run *r, const struct nb_env *e);
void nb_json_run(FILE *j, const struct nb_run *r, const struct nb_env *e);

/* The median of @n values and their range (@v is sorted in place). */
struct nb_spread {
	double median, min, max;
};
void nb_spread(double *v, unsigned n, struct nb_spread *s);
/* "median [min..max]" of @s, as printed by the benchmarks */
const char *nb_spread_str(const struct nb_spread *s, char *buf, size_t len);

/* ---- time ---- */

static inline uint64_t nb_tsc(void)
{
	uint32_t lo, hi;

	/* lfence keeps rdtsc from running ahead of the code it brackets */
	__asm__ __volatile__("lfence; rdtsc; lfence" : "=a"(lo), "=d"(hi) :: "memory");
	return ((uint64_t)hi << 32) | lo;
}

/* TSC ticks per ns, measured against CLOCK_MONOTONIC over ~100 ms. */
double nb_tsc_per_ns(void);

/* xorshift64* */
static inline uint64_t nb_rand(uint64_t *s)
{
	*s ^= *s >> 12;
	*s ^= *s << 25;
	*s ^= *s >> 27;
	return *s * 0x2545F4914F6CDD1Dull;
}

/* Poll a queue until nothing is in flight; between empty polls, relax. */
int nb_drain(struct sio_nvme_ioq *q);

/* ---- statistics ---- */

struct nb_stats {
	uint64_t n;
	double mean, min, max;
	double p1, p50, p99, p999, p25, p75;
};

/* qsort() comparison of uint64_t */
int nb_cmp_u64(const void *a, const void *b);
/* The statistics of every sample in @h (log-linear buckets: each
 * percentile within 1.6 %; n, mean, min and max exact). */
void nb_stats_hist(const struct hist *h, struct nb_stats *s);
double nb_jain(const double *x, int n);

/* ---- output ---- */

/* Progress on stderr, at most a few times a second; newline when done. */
void nb_progress(const char *what, uint64_t done, uint64_t total);

/* Output directory (created); files are @dir/@name. */
int nb_outdir(const char *dir);
FILE *nb_open_out(const char *dir, const char *name);
/* Run gnuplot on a script if it is installed; 0 when a plot was drawn. */
int nb_gnuplot(const char *dir, const char *script);

void nb_json_stats(FILE *j, const char *key, const struct nb_stats *s);
struct json_object *nb_stats_json(const struct nb_stats *s);
/* A benchmark's JSON file @dir/@name: @o, with what ran it (version, host,
 * kernel, date, load), written whole; @o is freed. 0 or -1 (said). */
int nb_write_json(const char *dir, const char *name, struct json_object *o);
const char *nb_model_label(bool model);

#endif
