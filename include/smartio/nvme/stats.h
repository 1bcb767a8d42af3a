/* SPDX-License-Identifier: MIT */
#ifndef SMARTIO_NVME_STATS_H
#define SMARTIO_NVME_STATS_H

/**
 * DOC: live statistics
 *
 * Every client keeps counters for each of its queue pairs in one small
 * segment of its own node's memory (named "nvme-stats"), written by that
 * client alone with plain stores: no atomics across processes, no clock,
 * a few instructions per I/O. Any process of the fabric reads them with
 * sio_nvme_stats_read() (``smartio nvme stats``, ``smartio top``), and
 * makes rates from two reads and its own clock.
 *
 * Latency is measured by the program that issues the I/O, not by the
 * library's hot path: a program may publish a summary of its own
 * measurements for each queue pair (sio_nvme_ioq_publish_latency()), which
 * readers show beside the counters.
 */

#include <stdint.h>
#include <smartio/fabric.h>

#ifdef __cplusplus
extern "C" {
#endif

struct sio_nvme_ioq;

/* Queue pairs one client's counters cover; more are served, not counted. */
#define SIO_NVME_STATS_QUEUES	16

/*
 * Latency histogram buckets (struct sio_nvme_lat.le): the upper bounds,
 * in ns, 10 us to 100 ms; a bucket counts the I/Os of at most its bound,
 * those of the buckets below included, as Prometheus's histograms do.
 */
#define SIO_NVME_LAT_BUCKETS	10
#define SIO_NVME_LAT_BOUNDS_NS	{ 10000, 25000, 50000, 100000, 250000, 500000, 1000000, \
				  5000000, 25000000, 100000000 }

/* struct sio_nvme_qstats.flags */
#define SIO_NVME_QS_SHADOW_DB	(1u << 0)	/* rings go through shadow doorbells */
#define SIO_NVME_QS_MULTIPATH	(1u << 1)	/* a backup queue pair through adapter 1 */
#define SIO_NVME_QS_BACKUP	(1u << 2)	/* commands go through the backup now */
#define SIO_NVME_QS_RELAYED	(1u << 3)	/* BAR0 is a copy the lender's relay forwards */
#define SIO_NVME_QS_NTB_WINDOW	(1u << 4)	/* BAR0 through an NTB window of another kernel */
#define SIO_NVME_QS_EMULATED	(1u << 5)	/* with NTB_WINDOW: its translation is emulated */

/**
 * struct sio_nvme_qstats - one queue pair's counters
 * @qid: queue id in the controller
 * @flags: SIO_NVME_QS_*: the path its doorbells take
 * @sq_place: where its SQ is (enum sio_placement)
 * @cq_place: where its CQ is
 * @reads: read requests accepted (a request split for MDTS counts once)
 * @writes: write requests accepted
 * @other: other commands accepted (flush, write zeroes, deallocate, ...)
 * @read_bytes: bytes those reads asked for
 * @write_bytes: bytes those writes carried
 * @errors: commands that completed with an error
 * @db_writes: MMIO doorbell writes, as of the client's last poll that reaped
 * @lat_ios: I/Os the published latency covers (0: none published)
 * @lat_p50_ns: published latency percentiles and maximum, ns
 * @lat_p99_ns: ...
 * @lat_p999_ns: ...
 * @lat_max_ns: ...
 * @lat_sum_ns: the sum of the published latencies (0: no histogram published)
 * @lat_le: the published histogram (SIO_NVME_LAT_BOUNDS_NS)
 * @timeouts: times its commands made no progress for the client's timeout
 * @recoveries: times it was made again and what it held sent again
 * @resubmitted: commands sent again (after a recovery or a failover)
 * @failovers: times its commands moved to the backup path
 * @ctrl_fetched: commands the controller's arbiter took from this SQ
 * @ctrl_skipped: the controller's arbitration passes in which this SQ had
 *	commands waiting and was given none
 * @ctrl_blocked: turns in which it had commands and the controller could
 *	take none (its CQ full: the client was not reaping)
 * @offcpu_ns: time the program had free slots but was not running (its
 *	wall clock less its thread's CPU time), published by the program
 * @wait_ns: time it had nothing to submit and waited for completions,
 *	polling or asleep, published by the program
 *
 * The counters @ctrl_fetched, @ctrl_skipped and @ctrl_blocked are the
 * emulated controller's (it publishes them on its node);
 * sio_nvme_stats_read() fills them in, and leaves them 0 for a controller
 * that does not.
 * @link_flaps: pauses for a link to the lender that was down (a flap)
 * @paused_ns: how long they took, in all
 */
struct sio_nvme_qstats {
	uint16_t qid;
	uint16_t flags;
	int16_t sq_place;
	int16_t cq_place;
	uint64_t reads;
	uint64_t writes;
	uint64_t other;
	uint64_t read_bytes;
	uint64_t write_bytes;
	uint64_t errors;
	uint64_t db_writes;
	uint64_t lat_ios;
	uint64_t lat_p50_ns;
	uint64_t lat_p99_ns;
	uint64_t lat_p999_ns;
	uint64_t lat_max_ns;
	uint64_t lat_sum_ns;
	uint64_t lat_le[SIO_NVME_LAT_BUCKETS];
	uint64_t timeouts;
	uint64_t recoveries;
	uint64_t resubmitted;
	uint64_t failovers;
	uint64_t ctrl_fetched;
	uint64_t ctrl_skipped;
	uint64_t ctrl_blocked;
	uint64_t offcpu_ns;
	uint64_t wait_ns;
	uint64_t link_flaps;
	uint64_t paused_ns;
};

/**
 * struct sio_nvme_client_stats - one client as sio_nvme_stats_read() saw it
 * @pid: the client's process
 * @node: the node it joined as
 * @device: the controller it uses
 * @nqueues: entries of @q in use
 * @q: its queue pairs
 */
struct sio_nvme_client_stats {
	int pid;
	int node;
	uint32_t device;
	uint32_t nqueues;
	struct sio_nvme_qstats q[SIO_NVME_STATS_QUEUES];
};

/**
 * sio_nvme_stats_read() - every NVMe client's counters on a fabric
 * @f: fabric handle
 * @device: only the clients of this controller, or SIO_DEVICE_ANY
 * @out: filled with up to @max clients (may be NULL with @max 0)
 * @max: entries of @out
 *
 * Maps each client's counters in turn (read-only; a remote one through a
 * window of this node's adapter, held only while it is copied) and checks
 * what it copied: a client that went away, or a segment that is not whole,
 * is left out.
 * Return: the number of clients found (more than @max when @out was too
 * short), or -errno (-ENOSPC naming the adapter when no window was free).
 */
int sio_nvme_stats_read(struct sio_fabric *f, uint32_t device, struct sio_nvme_client_stats *out,
			int max);

/**
 * struct sio_nvme_lat - a latency summary a program publishes
 * @ios: I/Os it covers
 * @p50_ns: median, ns
 * @p99_ns: 99th percentile
 * @p999_ns: 99.9th percentile
 * @max_ns: largest
 * @sum_ns: their sum; 0 when the program gives no histogram
 * @le: the histogram: entry i counts the I/Os that took at most
 *	SIO_NVME_LAT_BOUNDS_NS[i]
 */
struct sio_nvme_lat {
	uint64_t ios;
	uint64_t p50_ns;
	uint64_t p99_ns;
	uint64_t p999_ns;
	uint64_t max_ns;
	uint64_t sum_ns;
	uint64_t le[SIO_NVME_LAT_BUCKETS];
};

/**
 * sio_nvme_ioq_publish_latency() - show a latency summary beside the counters
 * @q: the queue pair it was measured on
 * @lat: the summary (the program's own measurement, e.g. from a histogram)
 *
 * Meant for a program's periodic progress (every second or so), not the
 * hot path. Readers may see one summary's fields from two publications.
 */
void sio_nvme_ioq_publish_latency(struct sio_nvme_ioq *q, const struct sio_nvme_lat *lat);

/**
 * struct sio_nvme_sched - where a program's time went, for fairness
 * @offcpu_ns: time it had free slots but was not running: another process
 *	had its CPU (wall clock less CLOCK_THREAD_CPUTIME_ID)
 * @wait_ns: time it had nothing to submit and waited for completions
 *	(polling, or asleep on an interrupt)
 *
 * Both since the queue pair was made. A client that gets less than its
 * share with a large @offcpu_ns lost it to the CPU scheduler; with the
 * controller's ctrl_skipped growing, to the controller's arbitration.
 */
struct sio_nvme_sched {
	uint64_t offcpu_ns;
	uint64_t wait_ns;
};

/**
 * sio_nvme_ioq_publish_sched() - show where the program's time went
 * @q: the queue pair the time was spent on
 * @s: the program's own accounting
 *
 * As sio_nvme_ioq_publish_latency(): for a program's periodic progress.
 */
void sio_nvme_ioq_publish_sched(struct sio_nvme_ioq *q, const struct sio_nvme_sched *s);

#ifdef __cplusplus
}
#endif

#endif
