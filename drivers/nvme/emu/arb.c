/* SPDX-License-Identifier: MIT */
/*
 * Command arbitration (arb.h): which SQ the controller fetches from next.
 * It knows queues only through emu_arb_ops, so that the controller and a
 * unit test drive the same code.
 */
#include <stddef.h>
#include "arb.h"

static inline uint32_t min_u32(uint32_t a, uint32_t b)
{
	return a < b ? a : b;
}

void emu_arb_config(struct emu_arb *a, bool wrr, uint32_t cdw11)
{
	uint32_t ab = cdw11 & 7;

	a->wrr = wrr;
	a->burst = ab == 7 ? UINT32_MAX : 1u << ab;	/* AB 7: no limit */
	a->weight[0] = 0;				/* urgent: strict priority */
	a->weight[1] = ((cdw11 >> 24) & 0xff) + 1;	/* HPW, 0's based */
	a->weight[2] = ((cdw11 >> 16) & 0xff) + 1;	/* MPW */
	a->weight[3] = ((cdw11 >> 8) & 0xff) + 1;	/* LPW */
}

/* The set of queues changed: indexes mean other queues now. */
void emu_arb_reset(struct emu_arb *a)
{
	for (int c = 0; c < EMU_ARB_CLASSES; c++)
		a->next[c] = a->rest[c] = 0;
}

/*
 * Turns in class @cls (-1: every SQ) from the class's cursor: each SQ with
 * commands (and, with @credit, credit left) takes up to a burst, until
 * @budget is spent or a whole rotation gave nothing. A turn the budget cut
 * short goes on in the next pass, so that budgets do not bend the shares.
 */
static uint32_t rotate(struct emu_arb *a, const struct emu_arb_ops *ops, void *ctx,
		       uint32_t n, int cls, bool credit, uint32_t budget)
{
	int c = cls < 0 ? 0 : cls;
	uint32_t *cur = &a->next[c], done = 0, idle = 0;

	if (*cur >= n)
		*cur = 0;
	while (done < budget && idle < n) {
		uint32_t i = *cur, turn = a->rest[c] ? a->rest[c] : a->burst, lim = turn, want, got = 0;
		struct emu_arb_q *q = ops->q(ctx, i);

		if (credit)
			lim = min_u32(lim, q->credit);
		want = min_u32(lim, budget - done);
		if ((cls < 0 || q->cls == cls) && want && ops->ready(ctx, i)) {
			got = ops->fetch(ctx, i, want);
			if (got) {
				q->fetched += got;
				q->pass = a->pass;
			} else {
				q->blocked++;
			}
			if (credit)
				q->credit -= got;
		}
		done += got;
		idle = got ? 0 : idle + 1;
		if (got && got == want && want < lim) {
			a->rest[c] = turn - got;	/* done == budget: resume here */
			break;
		}
		a->rest[c] = 0;
		*cur = i + 1 == n ? 0 : i + 1;
	}
	return done;
}

static void refill(struct emu_arb *a, const struct emu_arb_ops *ops, void *ctx, uint32_t n)
{
	for (uint32_t i = 0; i < n; i++) {
		struct emu_arb_q *q = ops->q(ctx, i);

		q->credit = a->weight[q->cls];
	}
	a->rounds++;
}

/*
 * Weighted classes. When a pass over them gives nothing, every SQ with
 * credit and commands was blocked (its CQ full, the backing busy) or none
 * has credit and commands: either way the round is over, and the idle and
 * blocked forfeit what they had left (work-conserving). A second empty
 * pass right after a refill, or the pass's round limit, ends the call.
 */
static uint32_t weighted(struct emu_arb *a, const struct emu_arb_ops *ops, void *ctx,
			 uint32_t n, uint32_t budget)
{
	uint32_t done = 0, refills = 0;
	bool just_refilled = false;

	while (done < budget) {
		uint32_t p = 0;

		for (int c = 1; c < EMU_ARB_CLASSES && done + p < budget; c++)
			p += rotate(a, ops, ctx, n, c, true, budget - done - p);
		done += p;
		if (p) {
			just_refilled = false;
			continue;
		}
		if (just_refilled || (a->round_limit && refills == a->round_limit))
			break;
		refill(a, ops, ctx, n);
		refills++;
		just_refilled = true;
	}
	return done;
}

/* Passes in which an SQ had commands but was given none: the budget ran out
 * before its turn, or it was blocked. */
static void count_skipped(struct emu_arb *a, const struct emu_arb_ops *ops, void *ctx, uint32_t n)
{
	for (uint32_t i = 0; i < n; i++) {
		struct emu_arb_q *q = ops->q(ctx, i);

		if (q->pass != a->pass && ops->ready(ctx, i))
			q->skipped++;
	}
}

/**
 * emu_arb_pass() - fetch up to @budget commands from @n SQs
 * @a: arbiter state
 * @ops: the queues
 * @ctx: passed to @ops
 * @n: SQs, indexes 0..@n-1
 * @budget: most commands this pass
 *
 * Return: commands fetched.
 */
uint32_t emu_arb_pass(struct emu_arb *a, const struct emu_arb_ops *ops, void *ctx,
		      uint32_t n, uint32_t budget)
{
	uint32_t done;

	if (!n)
		return 0;
	a->pass++;
	if (!a->wrr) {
		done = rotate(a, ops, ctx, n, -1, false, budget);
	} else {
		done = rotate(a, ops, ctx, n, 0, false, budget);	/* urgent first */
		done += weighted(a, ops, ctx, n, budget - done);
	}
	count_skipped(a, ops, ctx, n);
	return done;
}
