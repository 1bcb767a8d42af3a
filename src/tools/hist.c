/* SPDX-License-Identifier: MIT */
/* Log-linear latency histograms (hist.h). */
#include <string.h>
#include "hist.h"
#include "prog.h"

void hist_init(struct hist *h)
{
	memset(h, 0, sizeof(*h));
	h->min = UINT64_MAX;
}

void hist_merge(struct hist *dst, const struct hist *src)
{
	for (unsigned i = 0; i < HIST_BUCKETS; i++)
		dst->b[i] += src->b[i];
	dst->n += src->n;
	dst->sum += src->sum;
	if (src->min < dst->min)
		dst->min = src->min;
	if (src->max > dst->max)
		dst->max = src->max;
}

uint64_t hist_bucket_lo(unsigned i)
{
	unsigned shift;

	if (i < (2u << HIST_SUB_BITS))
		return i;
	shift = i / (1u << HIST_SUB_BITS) - 1;
	return ((uint64_t)(i % (1u << HIST_SUB_BITS)) + (1u << HIST_SUB_BITS)) << shift;
}

uint64_t hist_bucket_hi(unsigned i)
{
	unsigned shift;

	if (i < (2u << HIST_SUB_BITS))
		return i + 1;
	shift = i / (1u << HIST_SUB_BITS) - 1;
	return hist_bucket_lo(i) + (1ull << shift);
}

double hist_pct(const struct hist *h, double pct)
{
	uint64_t want, seen = 0;
	double v;

	if (!h->n)
		return 0;
	/* the rank of the sample, as the nearest-rank method counts it */
	want = (uint64_t)(pct / 100.0 * (double)h->n + 0.5);
	if (want < 1)
		want = 1;
	for (unsigned i = 0; i < HIST_BUCKETS; i++) {
		seen += h->b[i];
		if (seen < want)
			continue;
		v = ((double)hist_bucket_lo(i) + (double)(hist_bucket_hi(i) - 1)) / 2;
		if (v < (double)h->min)
			v = (double)h->min;
		if (v > (double)h->max)
			v = (double)h->max;
		return v;
	}
	return (double)h->max;
}

double hist_mean(const struct hist *h)
{
	return h->n ? (double)h->sum / (double)h->n : 0;
}

struct json_object *hist_json(const struct hist *h, double scale)
{
	static const struct { const char *key; double pct; } p[] = {
		{ "p1", 1 }, { "p25", 25 }, { "p50", 50 }, { "p75", 75 }, { "p90", 90 },
		{ "p99", 99 }, { "p99_9", 99.9 }, { "p99_99", 99.99 },
	};
	struct json_object *o = json_object_new_object();

	pj_u64(o, "ios", h->n);
	pj_dbl(o, "mean", hist_mean(h) / scale);
	pj_dbl(o, "min", h->n ? (double)h->min / scale : 0);
	pj_dbl(o, "max", (double)h->max / scale);
	for (unsigned i = 0; i < sizeof(p) / sizeof(p[0]); i++)
		pj_dbl(o, p[i].key, hist_pct(h, p[i].pct) / scale);
	return o;
}

void hist_cumulative(const struct hist *h, const uint64_t *bound, unsigned n, uint64_t *out)
{
	uint64_t sum = 0;
	unsigned k = 0;

	for (unsigned i = 0; i < HIST_BUCKETS && k < n; i++) {
		/* bucket i holds lo..hi-1: whole under bound[k] while hi-1 <= it */
		while (k < n && hist_bucket_hi(i) - 1 > bound[k])
			out[k++] = sum;
		sum += h->b[i];
	}
	while (k < n)
		out[k++] = sum;
}
