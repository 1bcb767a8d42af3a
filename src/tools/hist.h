/* SPDX-License-Identifier: MIT */
#ifndef SIO_PROG_HIST_H
#define SIO_PROG_HIST_H

/**
 * DOC: latency histograms
 *
 * Log-linear buckets, as fio's and HdrHistogram's: below 128 one bucket per
 * value, above it 64 buckets per power of two, so a percentile is within
 * 1/64 (1.6 %) of the true value, every sample of a run of any length is
 * counted, and the memory is fixed (30 KiB). Count, sum, min and max are
 * exact. Values are nanoseconds by convention.
 */

#include <stdint.h>
#include <json-c/json.h>

#define HIST_SUB_BITS	6
#define HIST_BUCKETS	((64 - HIST_SUB_BITS) * (1u << HIST_SUB_BITS) + (1u << HIST_SUB_BITS))

struct hist {
	uint64_t n, sum, min, max;
	uint64_t b[HIST_BUCKETS];
};

void hist_init(struct hist *h);

static inline unsigned hist_index(uint64_t v)
{
	unsigned msb, shift;

	if (v < (2u << HIST_SUB_BITS))
		return (unsigned)v;
	msb = 63u - (unsigned)__builtin_clzll(v);
	shift = msb - HIST_SUB_BITS;
	return (shift + 1) * (1u << HIST_SUB_BITS) +
	       (unsigned)((v >> shift) - (1u << HIST_SUB_BITS));
}

static inline void hist_add(struct hist *h, uint64_t v)
{
	h->b[hist_index(v)]++;
	h->n++;
	h->sum += v;
	if (v < h->min)
		h->min = v;
	if (v > h->max)
		h->max = v;
}

/* Add every sample of @src to @dst. */
void hist_merge(struct hist *dst, const struct hist *src);
/* The smallest value bucket @i holds, and one past its largest. */
uint64_t hist_bucket_lo(unsigned i);
uint64_t hist_bucket_hi(unsigned i);
/* The value below which @pct percent of the samples lie (0 when empty);
 * the middle of its bucket, within [min, max]. */
double hist_pct(const struct hist *h, double pct);
double hist_mean(const struct hist *h);
/* Into @out[i], the samples of at most @bound[i] (ascending), @n bounds:
 * whole buckets, so within a bucket's width (1.6 %) below the bound. */
void hist_cumulative(const struct hist *h, const uint64_t *bound, unsigned n, uint64_t *out);

/**
 * hist_json() - the histogram's summary as a JSON object
 * @h: the samples, in ns
 * @scale: divide values by this (1: ns, 1000: us)
 *
 * Keys: n, mean, min, max, p1, p25, p50, p75, p90, p99, p99_9, p99_99.
 */
struct json_object *hist_json(const struct hist *h, double scale);

#endif
