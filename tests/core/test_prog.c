/* SPDX-License-Identifier: MIT */
/*
 * What the programs share (src/tools, the sio-prog library), in-process:
 * the latency histogram's cumulative counts under fixed bounds, which
 * clients publish for Prometheus's histograms; Prometheus's text format,
 * its labels escaped and each family's samples together.
 */

#include <criterion/criterion.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include "hist.h"
#include "prom.h"

Test(hist, cumulative_counts_under_each_bound)
{
	static const uint64_t bound[] = { 10000, 25000, 1000000, 100000000 };
	static struct hist h;
	uint64_t le[4];

	hist_init(&h);
	hist_add(&h, 5000);	/* under every bound */
	hist_add(&h, 20000);
	hist_add(&h, 20000);
	hist_add(&h, 24000);	/* its bucket ends below 25000 */
	hist_add(&h, 2000000);
	hist_add(&h, 4000000000ull);	/* above every bound: +Inf only */
	hist_cumulative(&h, bound, 4, le);
	cr_assert_eq(le[0], 1);
	cr_assert_eq(le[1], 4);
	cr_assert_eq(le[2], 4);
	cr_assert_eq(le[3], 5);
	cr_assert_eq(h.n, 6);
}

Test(hist, a_bucket_across_a_bound_counts_above_it)
{
	static const uint64_t bound[] = { 10000 };
	static struct hist h;
	uint64_t le[1];

	/* 10050 shares a bucket (1.6 % wide) with values under 10000: the
	 * bucket is not whole under the bound, so it is not counted there */
	hist_init(&h);
	hist_add(&h, 10050);
	hist_cumulative(&h, bound, 1, le);
	cr_assert_eq(le[0], 0);
}

Test(prom, labels_escaped_and_families_together)
{
	char l[128], *text = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&text, &len);
	struct prom *p = prom_open(f);

	prom_labels(l, sizeof(l), "fabric", "a\"b\\c\nd", "qid", "1", NULL);
	cr_assert_str_eq(l, "{fabric=\"a\\\"b\\\\c\\nd\",qid=\"1\"}");
	prom_labels(l, sizeof(l), NULL);
	cr_assert_str_eq(l, "");
	prom_add(p, "x_total", "counter", "X.", "", "{q=\"1\"}", 3);
	prom_add(p, "y", "gauge", "Y.", "", "", 0.5);
	prom_add(p, "x_total", "counter", "X.", "", "{q=\"2\"}", 4);
	cr_assert_eq(prom_close(p), 0);
	fclose(f);
	cr_assert_str_eq(text, "# HELP x_total X.\n# TYPE x_total counter\n"
			 "x_total{q=\"1\"} 3\nx_total{q=\"2\"} 4\n"
			 "# HELP y Y.\n# TYPE y gauge\ny 0.5\n");
	free(text);
}
