/* SPDX-License-Identifier: MIT */
/*
 * The emulated controller's arbiter (drivers/nvme/emu/arb.h) alone, driven
 * with synthetic submission queues: each has a number of commands waiting
 * (or an endless supply) and may be blocked, as a queue whose CQ is full.
 * Shares are checked exactly: the arbiter is deterministic.
 */
#include <criterion/criterion.h>
#include <stdint.h>
#include "arb.h"

#define NQ	16
#define ENDLESS	UINT64_MAX

struct synth {
	struct emu_arb_q q[NQ];
	uint64_t waiting[NQ];	/* commands in the SQ */
	uint32_t refill[NQ];	/* commands the client adds before each pass */
	bool blocked[NQ];	/* takes nothing: its CQ is full */
	uint32_t order[1024];	/* fetch order, one entry per command */
	uint32_t norder;
};

static struct emu_arb_q *s_q(void *ctx, uint32_t i)
{
	return &((struct synth *)ctx)->q[i];
}

static bool s_ready(void *ctx, uint32_t i)
{
	return ((struct synth *)ctx)->waiting[i] != 0;
}

static uint32_t s_fetch(void *ctx, uint32_t i, uint32_t max)
{
	struct synth *s = ctx;
	uint32_t n = max;

	if (s->blocked[i])
		return 0;
	if (s->waiting[i] != ENDLESS && s->waiting[i] < n)
		n = (uint32_t)s->waiting[i];
	if (s->waiting[i] != ENDLESS)
		s->waiting[i] -= n;
	for (uint32_t k = 0; k < n && s->norder < 1024; k++)
		s->order[s->norder++] = i;
	return n;
}

static const struct emu_arb_ops ops = { s_q, s_ready, s_fetch };

static struct synth s;
static struct emu_arb a;

/* @n queues of classes @cls (NULL: all high), arbitration @wrr with @cdw11. */
static void setup(uint32_t n, const uint8_t *cls, bool wrr, uint32_t cdw11)
{
	memset(&s, 0, sizeof(s));
	memset(&a, 0, sizeof(a));
	emu_arb_config(&a, wrr, cdw11);
	for (uint32_t i = 0; i < n; i++) {
		s.q[i].cls = cls ? cls[i] : 1;
		s.waiting[i] = ENDLESS;
	}
}

static uint64_t run(uint32_t n, uint32_t passes, uint32_t budget)
{
	uint64_t total = 0;

	for (uint32_t p = 0; p < passes; p++) {
		for (uint32_t i = 0; i < n; i++)
			if (s.waiting[i] != ENDLESS)
				s.waiting[i] += s.refill[i];
		total += emu_arb_pass(&a, &ops, &s, n, budget);
	}
	return total;
}

/* CDW11 of Set Features (Arbitration): AB, LPW, MPW, HPW, the weights 0's based. */
static uint32_t arb(uint32_t ab, uint32_t lpw, uint32_t mpw, uint32_t hpw)
{
	return ab | lpw << 8 | mpw << 16 | hpw << 24;
}

Test(arb, round_robin_equal_shares_whatever_the_budget)
{
	/* 6 queues, burst 4: a budget of 250 cuts turns short; they resume */
	setup(6, NULL, false, arb(2, 0, 0, 0));
	cr_assert_eq(run(6, 120, 250), 30000);
	for (int i = 0; i < 6; i++)
		cr_expect_eq(s.q[i].fetched, 5000, "SQ %d got %llu of 30000", i,
			     (unsigned long long)s.q[i].fetched);
}

Test(arb, round_robin_takes_a_burst_per_turn_in_order)
{
	setup(3, NULL, false, arb(1, 0, 0, 0));	/* burst 2 */
	run(3, 1, 12);
	for (uint32_t k = 0; k < 12; k++)
		cr_expect_eq(s.order[k], (k / 2) % 3, "command %u from SQ %u", k, s.order[k]);
}

Test(arb, round_robin_ignores_the_classes)
{
	uint8_t cls[4] = { 0, 1, 2, 3 };

	setup(4, cls, false, arb(0, 0, 3, 7));
	run(4, 10, 100);
	for (int i = 0; i < 4; i++)
		cr_expect_eq(s.q[i].fetched, 250);
}

Test(arb, round_robin_is_work_conserving)
{
	/* SQ 0 has 3 commands each pass, less than its share: the others split the rest */
	setup(4, NULL, false, 0);
	s.waiting[0] = 0;
	s.refill[0] = 3;
	cr_assert_eq(run(4, 100, 63), 6300);
	cr_expect_eq(s.q[0].fetched, 300);
	for (int i = 1; i < 4; i++)
		cr_expect_eq(s.q[i].fetched, 2000, "SQ %d: %llu", i, (unsigned long long)s.q[i].fetched);
}

Test(arb, wrr_gives_every_queue_its_class_weight)
{
	/* two queues per class, weights 8/4/1, burst 2: a round is 26 commands */
	uint8_t cls[6] = { 1, 2, 3, 1, 2, 3 };

	setup(6, cls, true, arb(1, 0, 3, 7));
	cr_assert_eq(run(6, 100, 26 * 5), 13000);
	for (int i = 0; i < 6; i++) {
		uint64_t want = (cls[i] == 1 ? 8 : cls[i] == 2 ? 4 : 1) * 500;

		cr_expect_eq(s.q[i].fetched, want, "SQ %d (class %u): %llu, not %llu", i, cls[i],
			     (unsigned long long)s.q[i].fetched, (unsigned long long)want);
	}
	cr_expect_eq(a.rounds, 500);
}

Test(arb, wrr_equal_shares_within_a_class_of_unequal_size)
{
	/* three high and one low queue, budget not a multiple of the round */
	uint8_t cls[4] = { 1, 1, 1, 3 };

	setup(4, cls, true, arb(0, 1, 0, 5));	/* high 6, low 2: a round is 20 */
	cr_assert_eq(run(4, 200, 37), 7400);
	/* 370 whole rounds */
	for (int i = 0; i < 3; i++)
		cr_expect_eq(s.q[i].fetched, 2220, "SQ %d: %llu", i, (unsigned long long)s.q[i].fetched);
	cr_expect_eq(s.q[3].fetched, 740);
}

Test(arb, wrr_urgent_first_strictly)
{
	uint8_t cls[3] = { 1, 0, 3 };

	setup(3, cls, true, 0);
	s.waiting[1] = 0;
	s.refill[1] = 5;
	run(3, 1, 7);
	for (uint32_t k = 0; k < 5; k++)
		cr_expect_eq(s.order[k], 1, "command %u came from SQ %u, not the urgent one", k,
			     s.order[k]);
	cr_expect_eq(s.q[1].fetched, 5);
	cr_expect_eq(s.q[0].fetched + s.q[2].fetched, 2);
}

Test(arb, wrr_idle_queue_forfeits_its_credit)
{
	/* a high queue with 1 command per pass does not hold the round open */
	uint8_t cls[3] = { 1, 1, 3 };

	setup(3, cls, true, arb(0, 0, 0, 3));	/* high 4, low 1 */
	s.waiting[0] = 0;
	s.refill[0] = 1;
	cr_assert_eq(run(3, 100, 50), 5000);
	cr_expect_eq(s.q[0].fetched, 100);
	/* the rest in rounds of 4 + 1 */
	cr_expect_eq(s.q[1].fetched, 3920);
	cr_expect_eq(s.q[2].fetched, 980);
}

Test(arb, wrr_round_limit_is_the_controllers_capacity)
{
	/* one round per pass: 8 + 4 + 1 per SQ, whatever the budget */
	uint8_t cls[3] = { 1, 2, 3 };

	setup(3, cls, true, arb(0, 0, 3, 7));
	a.round_limit = 1;
	cr_assert_eq(run(3, 10, 256), 130);
	cr_expect_eq(s.q[0].fetched, 80);
	cr_expect_eq(s.q[1].fetched, 40);
	cr_expect_eq(s.q[2].fetched, 10);
	cr_expect_eq(a.rounds, 10);
}

Test(arb, blocked_queue_is_counted_and_does_not_stall_the_rest)
{
	uint8_t cls[3] = { 1, 1, 1 };

	setup(3, cls, true, 0);
	s.blocked[2] = true;
	cr_assert_eq(run(3, 10, 20), 200);
	cr_expect_eq(s.q[0].fetched, 100);
	cr_expect_eq(s.q[1].fetched, 100);
	cr_expect_eq(s.q[2].fetched, 0);
	cr_expect_eq(s.q[2].skipped, 10, "skipped in %llu passes of 10",
		     (unsigned long long)s.q[2].skipped);
	cr_expect_gt(s.q[2].blocked, 0);
	cr_expect_eq(s.q[0].skipped, 0);
}

Test(arb, budget_before_its_turn_counts_skipped)
{
	setup(4, NULL, false, 0);
	run(4, 1, 2);
	cr_expect_eq(s.q[0].fetched + s.q[1].fetched, 2);
	cr_expect_eq(s.q[2].skipped, 1);
	cr_expect_eq(s.q[3].skipped, 1);
	cr_expect_eq(s.q[2].blocked, 0);
	run(4, 1, 2);	/* the next pass goes on from SQ 2 */
	cr_expect_eq(s.q[2].fetched, 1);
	cr_expect_eq(s.q[3].fetched, 1);
}

Test(arb, no_limit_burst_drains_a_queue_per_turn)
{
	setup(2, NULL, false, arb(7, 0, 0, 0));
	s.waiting[0] = 40;
	s.waiting[1] = 40;
	cr_assert_eq(run(2, 1, 100), 80);
	for (uint32_t k = 0; k < 80; k++)
		cr_expect_eq(s.order[k], k / 40);
}
