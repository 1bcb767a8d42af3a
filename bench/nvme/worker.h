/* SPDX-License-Identifier: MIT */
#ifndef SIO_BENCH_NVME_WORKER_H
#define SIO_BENCH_NVME_WORKER_H

/*
 * Closed-loop 4 KiB random-read workers, one process each: the smartio
 * client (on a fabric node of its own) or the kernel's io_uring on a file.
 * Workers start together and run for a fixed time; results come back in
 * shared memory.
 */

#include "common.h"

enum nb_engine { NB_SMARTIO, NB_URING };

struct nb_point_cfg {
	enum nb_engine engine;
	const struct nb_env *env;	/* smartio */
	const char *file;		/* io_uring: the file to read */
	uint64_t file_size;
	bool buffered;			/* io_uring: page cache, not O_DIRECT */
	int nclients;
	uint32_t qd;
	double seconds;
	bool wrr_prios;			/* clients get priorities 1,2,3,1,... */
	bool pin;			/* one client: pin it to CPU 0 */
	bool verify;			/* smartio: check every read's data */
	int completions;		/* smartio: SIO_NVME_CPL_* */
	double rate;			/* I/Os per second each client offers (0: as
					 * fast as it can, a closed loop) */
};

struct nb_point {
	int nclients;
	uint32_t qd;
	double iops;			/* all clients */
	uint64_t ios;			/* all clients, in the run */
	double iops_per_core;		/* IOPS per CPU-second the clients used */
	double cpu_util;		/* client CPU-seconds per wall second, per client */
	double iops_per_busy_core;	/* as iops_per_core, less the CPU of polls
					 * that found nothing (smartio only) */
	double jain;
	double client_iops[64];
	int client_prio[64];
	struct nb_stats lat;
	/* smartio: how long the clients took to set up (client, queue pair
	 * and buffer), all arriving together; and, with verify, reads whose
	 * data was not the store's */
	double setup_p50_ms, setup_max_ms;
	uint64_t verified, mismatches;
	/* where each client's share went (smartio): the fraction of the run it
	 * could have submitted but was not running, and the controller's
	 * passes that skipped its SQ while it had commands */
	double client_offcpu[64];
	uint64_t client_skipped[64], client_blocked[64];
	/* sleeps on the CQ's interrupt, and those that ended by their bound
	 * and found completions (the interrupt never came), all clients */
	uint64_t sleeps, wakeups_lost;
	double cpu_per_io_ns;		/* client CPU time per I/O */
	int err;
};

/* Run one point; 0 or -errno (message on stderr). */
int nb_run_point(const struct nb_point_cfg *c, struct nb_point *out);

/* A file of @size bytes of non-zero data at @path (O_DIRECT reads then hit
 * real blocks, not unwritten extents). */
int nb_make_file(const char *path, uint64_t size);

#endif
