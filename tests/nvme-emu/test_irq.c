/* SPDX-License-Identifier: MIT */
/*
 * Completion interrupts of the emulated controller, in-process (inproc.h):
 * an entry the host leaves unreaped past the hold is signalled; a host that
 * reaps as it goes (a polling or spinning client) is never signalled,
 * although at every look one entry of its CQ, just posted, is unreaped.
 */
#include <criterion/criterion.h>
#include <string.h>
#include <time.h>
#include <smartio/smartio.h>
#include <smartio/nvme/cmd.h>
#include "inproc.h"

#define ASQ	0x0000u
#define ACQ	0x1000u
#define IOSQ	0x2000u
#define IOCQ	0x3000u
#define DATA	0x8000u
#define VEC	1u

static struct inproc h;
static struct inproc_q a = { .sqoff = ASQ, .cqoff = ACQ };
static struct inproc_q io = { .qid = 1, .sqoff = IOSQ, .cqoff = IOCQ, .phase = 1 };
static uint16_t next_cid;

static uint16_t admin(struct sio_nvme_cmd *c)
{
	struct sio_nvme_cpl cpl;

	c->cid = ++next_cid;
	inproc_submit(&h, &a, c);
	cr_assert(inproc_wait(&h, &a, &cpl), "no completion for opcode 0x%02x", c->opcode);
	return SIO_NVME_STATUS_CODE(cpl.status);
}

/* The controller, with I/O queue pair 1 whose CQ signals vector VEC. */
static void up(void)
{
	struct sio_nvme_emu_config cfg;
	struct sio_nvme_cmd c;

	inproc_config(&cfg);
	cr_assert_eq(inproc_open(&h, &cfg), 0, "%s", sio_errmsg());
	inproc_reset(&h);
	cr_assert(inproc_enable(&h, &a), "the controller did not come ready");
	sio_nvme_cmd_create_cq(&c, 1, INPROC_QSZ, INPROC_HOST_BUS + IOCQ,
			       SIO_NVME_Q_PC | SIO_NVME_CQ_IEN, VEC);
	cr_assert_eq(admin(&c), 0, "create I/O CQ with interrupts");
	sio_nvme_cmd_create_sq(&c, 1, INPROC_QSZ, INPROC_HOST_BUS + IOSQ, 1, 0);
	cr_assert_eq(admin(&c), 0, "create I/O SQ");
}

static void down(void)
{
	inproc_close(&h);
}

TestSuite(irq, .init = up, .fini = down, .timeout = 30);

/* A read of block 0 of namespace 1 into DATA, submitted. */
static void read_submit(void)
{
	struct sio_nvme_cmd c;

	memset(&c, 0, sizeof(c));
	c.opcode = SIO_NVME_CMD_READ;
	c.nsid = 1;
	c.cid = ++next_cid;
	c.prp1 = INPROC_HOST_BUS + DATA;
	inproc_submit(&h, &io, &c);
}

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* Wait @us, so that the hold of an entry posted before has passed. */
static void past_the_hold(unsigned us)
{
	uint64_t t = now_ns();

	while (now_ns() - t < us * 1000ull)
		;
}

Test(irq, an_entry_left_unreaped_past_the_hold_is_signalled)
{
	read_submit();
	inproc_pump(&h, 1);		/* posted; held */
	past_the_hold(20);
	inproc_pump(&h, 1);
	cr_expect_eq(sio_nvme_emu_irqs(h.emu), 1, "signalled %llu times",
		     (unsigned long long)sio_nvme_emu_irqs(h.emu));
	cr_assert_eq(inproc_drain(&h, &io), 1);
	past_the_hold(20);
	inproc_pump(&h, 1);		/* reaped: nothing more */
	cr_expect_eq(sio_nvme_emu_irqs(h.emu), 1);
}

/*
 * Each read is posted and reaped in turn, the host's reap a little after
 * the hold: at each look of the controller, the entry it just posted is
 * unreaped, but every entry it held before was reaped. Signalling that
 * entry is what made a spinning client's controller send a datagram for
 * one I/O in five at queue depth 1.
 */
Test(irq, a_host_that_reaps_as_it_goes_is_not_signalled)
{
	struct sio_nvme_cpl cpl;

	for (int i = 0; i < 100; i++) {
		read_submit();
		cr_assert(inproc_wait(&h, &io, &cpl), "read %d: no completion", i);
		cr_assert_eq(cpl.status >> 1, 0, "read %d: status 0x%x", i, cpl.status);
		past_the_hold(5);
	}
	cr_expect_eq(sio_nvme_emu_irqs(h.emu), 0, "signalled %llu times for 100 reads reaped as "
		     "they came", (unsigned long long)sio_nvme_emu_irqs(h.emu));
}
