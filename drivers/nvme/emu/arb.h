/* SPDX-License-Identifier: MIT */
#ifndef SIO_NVME_EMU_ARB_H
#define SIO_NVME_EMU_ARB_H

/*
 * Command arbitration between I/O submission queues (NVMe 1.4 §4.13), apart
 * from the controller so that a test can drive it with synthetic queues.
 *
 * Round robin: every SQ with commands takes up to the Arbitration Burst in
 * turn. Weighted round robin: the urgent class is served first, strictly;
 * then the high, medium and low classes, where every SQ of a class has the
 * class's weight (HPW+1, MPW+1, LPW+1) of credit per round, taken in bursts,
 * round robin within the class. An SQ with no commands forfeits what is left
 * of its credit, so the round ends, and credit is refilled, when no SQ with
 * credit has commands: work-conserving. Clients of one class get equal
 * shares whatever the others do; a class's share is its weight times the
 * SQs it has busy. A controller begins at most round_limit rounds per pass,
 * its capacity: within it, what the classes get is what their clients offer.
 */

#include <stdbool.h>
#include <stdint.h>

#define EMU_ARB_CLASSES	4	/* urgent, high, medium, low: CDW11 QPRIO */

/* One SQ as the arbiter sees it. */
struct emu_arb_q {
	uint8_t cls;		/* QPRIO: 0 urgent .. 3 low (ignored under round robin) */
	uint32_t credit;	/* WRR: commands left to it this round */
	uint64_t pass;		/* the last pass it was given commands in */
	uint64_t fetched;	/* commands the arbiter gave it */
	uint64_t skipped;	/* passes it had commands and was given none */
	uint64_t blocked;	/* turns it had commands and could take none (CQ full) */
};

/* What the arbiter asks of the controller, for the SQ at index @i. */
struct emu_arb_ops {
	struct emu_arb_q *(*q)(void *ctx, uint32_t i);
	bool (*ready)(void *ctx, uint32_t i);			/* commands waiting */
	uint32_t (*fetch)(void *ctx, uint32_t i, uint32_t max);	/* took; fewer: blocked */
};

struct emu_arb {
	bool wrr;
	uint32_t burst;			/* commands per turn; UINT32_MAX: no limit */
	uint32_t weight[EMU_ARB_CLASSES];	/* WRR credit per SQ and round; [0] unused */
	uint32_t next[EMU_ARB_CLASSES];		/* round-robin cursor per class */
	uint32_t rest[EMU_ARB_CLASSES];		/* of a turn the budget cut short */
	uint32_t round_limit;		/* WRR rounds begun per pass (0: no limit) */
	uint64_t pass;
	uint64_t rounds;		/* WRR rounds begun (credit refills) */
};

/*
 * The counters, for readers anywhere on the fabric (smartio nvme stats): a
 * segment of the controller's node named EMU_ARB_PAGE_NAME, one entry per
 * qid, written by the controller alone with plain stores.
 */
#define EMU_ARB_PAGE_NAME	"nvme-arb"
#define EMU_ARB_PAGE_MAGIC	0x31425241564e5353ull	/* "SSNVARB1" */

struct emu_arb_page {
	uint64_t magic;		/* written last, once the header is valid */
	uint32_t device;	/* the controller's device id */
	uint32_t nq;		/* entries of @q, qid 0 .. @nq - 1 */
	struct emu_arb_q q[];
};

void emu_arb_config(struct emu_arb *a, bool wrr, uint32_t cdw11);
void emu_arb_reset(struct emu_arb *a);
uint32_t emu_arb_pass(struct emu_arb *a, const struct emu_arb_ops *ops, void *ctx,
		      uint32_t n, uint32_t budget);

#endif
