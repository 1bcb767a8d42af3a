/* SPDX-License-Identifier: MIT */
#ifndef SIO_PROG_PROM_H
#define SIO_PROG_PROM_H

/**
 * DOC: Prometheus text exposition
 *
 * `smartio status --prometheus`, `smartio nvme stats --prometheus` and
 * `smartio exporter` write Prometheus's text format (version 0.0.4): each
 * family once, with its HELP and TYPE, then its samples. A family's
 * samples are gathered first (prom_add()), since the format wants them
 * together and the programs find them object by object.
 */

#include <stdint.h>
#include <stdio.h>
#include <smartio/status.h>

/* The Content-Type of the format, for /metrics. */
#define PROM_CONTENT_TYPE "text/plain; version=0.0.4; charset=utf-8"

struct prom;

/* A writer to @out; NULL when out of memory. */
struct prom *prom_open(FILE *out);

/**
 * prom_add() - one sample of a family
 * @p: the writer
 * @name: the family's name (a histogram's: without _bucket, _sum, _count)
 * @type: "counter", "gauge" or "histogram"
 * @help: its HELP text (the first sample's counts)
 * @suffix: "" or, in a histogram, "_bucket", "_sum", "_count"
 * @labels: the labels, already written as prom_labels() writes them
 * @v: the value
 */
void prom_add(struct prom *p, const char *name, const char *type, const char *help,
	      const char *suffix, const char *labels, double v);

/* Write every family gathered, and free the writer. Return: 0 or -1 (the
 * stream's error). */
int prom_close(struct prom *p);

/**
 * prom_labels() - write labels as the format wants them
 * @buf: the result, `{k="v",...}` with \, " and newlines escaped
 * @len: its size
 * @kv: key, value, key, value, ..., NULL
 */
void prom_labels(char *buf, size_t len, ...);

/* The fabric's gauges and counters (smartio status --prometheus): nodes,
 * links, windows, segments, devices, borrowers, DMA faults, processes. */
void prom_fabric(struct prom *p, const struct sio_fabric_status *st);

/**
 * prom_serve() - answer Prometheus's scrapes until a signal
 * @listen: "HOST:PORT" (IPv4; port 0: a free one); a bad one is a usage error
 * @metrics: writes the metrics to the stream given, 0, or non-zero after
 *           saying why (the scrape gets 500)
 * @arg: for @metrics
 *
 * Prints "serving http://HOST:PORT/metrics" once it listens, and says
 * it is ready (prog_ready()). Call prog_catch_stop() first.
 * Return: PROG_OK once stopped, or PROG_FAIL when it cannot listen.
 */
int prom_serve(const char *listen, int (*metrics)(void *, FILE *), void *arg);

/* prom_fabric() alone, to @out. Return: 0 or PROG_FAIL (said). */
int prom_fabric_write(FILE *out, const struct sio_fabric_status *st);

#endif
