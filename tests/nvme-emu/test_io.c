/* SPDX-License-Identifier: MIT */
/* NVM commands, PRPs, DMA faults, arbitration, isolation between hosts. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <signal.h>
#include <sys/wait.h>
#include "harness.h"

static struct host H;
static struct hq Q;
static struct hmem D;	/* 1 MiB data buffer */

static void start(const char *args)
{
	cr_assert_eq(h_start(&H, 1, args), 0, "start: %s", sio_errmsg());
	cr_assert_eq(h_enable(&H, 32, 0), 0);
	cr_assert_eq(h_qpair(&H, 1, 64, 0, &Q), 0);
	cr_assert_eq(h_mem(&H, 1 << 20, &D), 0);
}

static void up(void)
{
	start("--backing ram:16M --ns 8M:512 --ns 8M:4096 --queues 8");
}

static void down(void)
{
	h_stop(&H);
}

TestSuite(io, .init = up, .fini = down, .timeout = 60);

static void fill(uint8_t *p, size_t n, unsigned seed)
{
	for (size_t i = 0; i < n; i++)
		p[i] = (uint8_t)(seed * 131 + i * 7 + (i >> 9));
}

static int io(uint8_t opc, uint32_t nsid, uint64_t slba, uint32_t nlb, uint64_t prp1, uint64_t prp2)
{
	struct sio_nvme_cmd c = h_rw(opc, nsid, slba, nlb, prp1, prp2);

	return h_cmd(&H, &Q, &c, NULL);
}

Test(io, write_read_both_lba_sizes)
{
	uint8_t *w = D.va, *r = D.va + 65536;

	fill(w, 8192, 1);
	cr_assert_eq(io(nvme_cmd_write, 1, 100, 16, D.bus, D.bus + 4096), 0);
	cr_assert_eq(io(nvme_cmd_read, 1, 100, 16, D.bus + 65536, D.bus + 65536 + 4096), 0);
	cr_assert_arr_eq(w, r, 8192);
	/* 4 KiB LBAs: one block, and namespaces do not overlap */
	fill(w, 4096, 2);
	cr_assert_eq(io(nvme_cmd_write, 2, 0, 1, D.bus, 0), 0);
	cr_assert_eq(io(nvme_cmd_read, 2, 0, 1, D.bus + 65536, 0), 0);
	cr_assert_arr_eq(w, r, 4096);
	cr_assert_eq(io(nvme_cmd_read, 1, 0, 8, D.bus + 65536, 0), 0);
	for (int i = 0; i < 4096; i++)
		cr_assert_eq(r[i], 0, "namespace 1 LBA 0 untouched");
	cr_assert_eq(io(nvme_cmd_flush, 1, 0, 1, 0, 0), 0);
	struct sio_nvme_cmd c = h_rw(nvme_cmd_flush, 0xffffffff, 0, 1, 0, 0);
	cr_assert_eq(h_cmd(&H, &Q, &c, NULL), 0, "flush all namespaces");
}

Test(io, prp_offset_and_lists)
{
	uint8_t *w = D.va + 4096 + 512, *r;
	uint64_t list_bus = D.bus + (512 << 10);
	uint64_t *list = (uint64_t *)(D.va + (512 << 10));
	const uint32_t len = 64 << 10;	/* 16 pages + offset: 17 pieces */

	/* PRP1 with an offset, then a list of the following pages */
	fill(w, len, 3);
	for (int i = 0; i < 16; i++)
		list[i] = D.bus + (uint64_t)(i + 2) * 4096;
	cr_assert_eq(io(nvme_cmd_write, 1, 1000, len / 512, D.bus + 4096 + 512, list_bus), 0);
	memset(D.va + (256 << 10), 0, len);
	r = D.va + (256 << 10);
	for (int i = 0; i < 15; i++)
		list[i] = D.bus + (256 << 10) + (uint64_t)(i + 1) * 4096;
	cr_assert_eq(io(nvme_cmd_read, 1, 1000, len / 512, D.bus + (256 << 10), list_bus), 0);
	cr_assert_arr_eq(r, w, len);

	/* list entries must be page aligned; PRP2 as a plain second page too */
	list[3] += 8;
	cr_assert_eq(io(nvme_cmd_read, 1, 0, len / 512, D.bus, list_bus),
		     ST(0, NVME_SC_PRP_INVALID_OFFSET));
	cr_assert_eq(io(nvme_cmd_read, 1, 0, 16, D.bus, D.bus + 4096 + 8),
		     ST(0, NVME_SC_PRP_INVALID_OFFSET));
	cr_assert_eq(io(nvme_cmd_read, 1, 0, 1, D.bus + 2, 0),
		     ST(0, NVME_SC_PRP_INVALID_OFFSET), "PRP1 must be dword aligned");
}

Test(io, prp_list_chains_across_pages)
{
	/* 128 KiB at a 4 KiB page with a list that starts 8 bytes before the end
	 * of its page: entry 0 is data, entry 1 chains to a second list page. */
	struct hmem l;
	uint64_t *p0, *p1;
	const uint32_t len = 128 << 10;

	cr_assert_eq(h_mem(&H, 3 * 4096, &l), 0);
	p0 = (uint64_t *)(l.va + 4096 - 16);
	p1 = (uint64_t *)(l.va + 8192);
	fill(D.va, len, 4);
	p0[0] = D.bus + 4096;
	p0[1] = l.bus + 8192;
	for (int i = 0; i < 30; i++)
		p1[i] = D.bus + (uint64_t)(i + 2) * 4096;
	cr_assert_eq(io(nvme_cmd_write, 2, 10, len / 4096, D.bus, l.bus + 4096 - 16), 0);
	memset(D.va + (512 << 10), 0, len);
	for (int i = 0; i < 31; i++)
		((uint64_t *)(l.va + 8192))[i] = D.bus + (512 << 10) + (uint64_t)(i + 1) * 4096;
	cr_assert_eq(io(nvme_cmd_read, 2, 10, len / 4096, D.bus + (512 << 10), l.bus + 8192), 0);
	cr_assert_arr_eq(D.va + (512 << 10), D.va, len);
}

Test(io, command_errors)
{
	struct sio_nvme_cmd c;

	cr_assert_eq(io(nvme_cmd_read, 1, (8u << 20) / 512 - 1, 2, D.bus, 0), ST(0, NVME_SC_LBA_RANGE));
	cr_assert_eq(io(nvme_cmd_write, 2, 1ull << 40, 1, D.bus, 0), ST(0, NVME_SC_LBA_RANGE));
	cr_assert_eq(io(nvme_cmd_write_zeroes, 2, 2047, 2, 0, 0), ST(0, NVME_SC_LBA_RANGE));
	cr_assert_eq(io(nvme_cmd_read, 3, 0, 1, D.bus, 0), ST(0, NVME_SC_INVALID_NS));
	cr_assert_eq(io(nvme_cmd_read, 0, 0, 1, D.bus, 0), ST(0, NVME_SC_INVALID_NS));
	cr_assert_eq(io(nvme_cmd_read, 2, 0, 33, D.bus, 0), ST(0, NVME_SC_INVALID_FIELD), "MDTS");
	cr_assert_eq(io(0x7e, 1, 0, 1, D.bus, 0), ST(0, NVME_SC_INVALID_OPCODE));
	c = h_rw(nvme_cmd_read, 1, 0, 1, D.bus, 0);
	c.flags = 3 << 6;
	cr_assert_eq(h_cmd(&H, &Q, &c, NULL), ST(0, NVME_SC_INVALID_FIELD), "PSDT 11b is reserved");
	/* DMA faults: an address nobody mapped for the device */
	cr_assert_eq(io(nvme_cmd_read, 1, 0, 8, 0x7f0000000000ull, 0), ST(0, NVME_SC_DATA_XFER_ERROR));
	cr_assert_eq(io(nvme_cmd_write, 1, 0, 16, D.bus, 0x7f0000000000ull), ST(0, NVME_SC_DATA_XFER_ERROR));
	cr_assert_eq(io(nvme_cmd_read, 1, 0, 64, D.bus, 0x7f0000000000ull), ST(0, NVME_SC_DATA_XFER_ERROR),
		     "PRP list nobody mapped");
	cr_assert_eq(io(nvme_cmd_read, 1, 0, 8, D.bus, 0), 0, "still serving");
}

Test(io, write_zeroes)
{
	fill(D.va, 8192, 5);
	cr_assert_eq(io(nvme_cmd_write, 1, 50, 16, D.bus, D.bus + 4096), 0);
	cr_assert_eq(io(nvme_cmd_write_zeroes, 1, 52, 4, 0, 0), 0);
	cr_assert_eq(io(nvme_cmd_read, 1, 50, 16, D.bus + 65536, D.bus + 65536 + 4096), 0);
	for (int i = 0; i < 8192; i++) {
		uint8_t want = (i >= 1024 && i < 3072) ? 0 : D.va[i];
		cr_assert_eq(D.va[65536 + i], want, "byte %d", i);
	}
}

Test(io, sq_head_and_phase_wrap)
{
	/* 3 trips round a 64-entry queue: phase flips, SQ head follows */
	for (int i = 0; i < 200; i++) {
		struct sio_nvme_cpl r;
		struct sio_nvme_cmd c = h_rw(nvme_cmd_read, 1, (uint64_t)i, 1, D.bus, 0);

		cr_assert_eq(h_cmd(&H, &Q, &c, &r), 0);
		cr_assert_eq(r.sq_head, Q.sq_tail, "SQ head after command %d", i);
	}
}

Test(io, invalid_doorbell_ignored)
{
	/* A tail beyond the queue is ignored; the queue still works. */
	h_wr32(&H, SIO_NVME_REG_DBS + 2 * 4, 1000);
	usleep(2000);
	h_wr32(&H, SIO_NVME_REG_DBS + 2 * 4, Q.sq_tail);
	cr_assert_eq(io(nvme_cmd_read, 1, 0, 1, D.bus, 0), 0);
}

/*
 * Arbitration: hold the shared CQ full so that nothing is fetched, load both
 * SQs, then open the CQ: the fetch order is the arbitration order.
 */
static void order_after_gate(int nsq, const int *prio, int per_sq, uint32_t cc_ams, uint32_t arb,
			     int *order, int n)
{
	struct hq sq[4], cq;
	struct sio_nvme_cmd c;
	struct sio_nvme_cpl r;
	const uint32_t csize = 8;

	h_stop(&H);
	cr_assert_eq(h_start(&H, 1, "--backing ram:4M --queues 8"), 0);
	cr_assert_eq(h_enable(&H, 32, NVME_SET(cc_ams, CC_AMS)), 0);
	cr_assert_eq(h_mem(&H, 1 << 20, &D), 0);
	sio_nvme_cmd_features(&c, nvme_admin_set_features, NVME_FEAT_FID_ARBITRATION, arb);
	cr_assert_eq(h_admin(&H, &c, NULL), 0);
	/* CQ 1 with 8 entries, shared by every SQ */
	cr_assert_eq(h_qpair_on(&H, 1, 1, csize, prio[0], &sq[0], true), 0);
	cq = sq[0];
	for (int i = 1; i < nsq; i++)
		cr_assert_eq(h_qpair_on(&H, (uint16_t)(i + 1), 1, 64, prio[i], &sq[i], false), 0);
	/* fill the CQ: 7 completions nobody reaps */
	for (int i = 0; i < (int)csize - 1; i++) {
		c = h_rw(nvme_cmd_flush, 1, 0, 1, 0, 0);
		c.cid = 0xf000;
		h_submit(&H, &sq[0], &c);
	}
	usleep(20000);
	for (int s = 0; s < nsq; s++)
		for (int k = 0; k < per_sq; k++) {
			c = h_rw(nvme_cmd_flush, 1, 0, 1, 0, 0);
			c.cid = (uint16_t)(s * 100 + k);
			h_submit(&H, &sq[s], &c);
		}
	usleep(20000);
	/* now reap everything; each reap frees a slot for one more fetch */
	int got = 0;
	while (got < n && h_reap(&H, &cq, &r, 2000) == 0) {
		if (r.cid == 0xf000)
			continue;
		order[got++] = r.cid / 100;
	}
	cr_assert_eq(got, n);
}

Test(io, round_robin)
{
	int prio[2] = { 0, 0 }, order[8];

	order_after_gate(2, prio, 4, NVME_CC_AMS_RR, 0, order, 8);
	/* burst 1: strict alternation between the two SQs */
	for (int i = 1; i < 8; i++)
		cr_assert_neq(order[i], order[i - 1], "position %d", i);
}

Test(io, weighted_round_robin)
{
	/* SQ 1 low priority, SQ 2 high; weights: high 4, low 1; burst 1 */
	int prio[2] = { 3, 1 }, order[12], hi_first8 = 0;
	uint32_t arb = sio_nvme_feat_arbitration(0, 0, 0, 3);

	order_after_gate(2, prio, 6, NVME_CC_AMS_WRRU, arb, order, 12);
	for (int i = 0; i < 8; i++)
		hi_first8 += order[i] == 1;
	cr_assert_geq(hi_first8, 6, "high priority SQ got %d of the first 8", hi_first8);
	cr_assert_leq(hi_first8, 7, "low priority is not starved");
}

Test(io, urgent_class_first)
{
	int prio[2] = { 1, 0 }, order[8];

	order_after_gate(2, prio, 4, NVME_CC_AMS_WRRU, 0, order, 8);
	for (int i = 0; i < 4; i++)
		cr_assert_eq(order[i], 1, "urgent SQ served first (position %d)", i);
}

Test(io, doorbell_stride)
{
	h_stop(&H);
	start("--backing ram:4M --dstrd 3 --queues 4");
	cr_assert_eq(H.dstrd, 3);
	fill(D.va, 4096, 6);
	cr_assert_eq(io(nvme_cmd_write, 1, 7, 8, D.bus, 0), 0);
	cr_assert_eq(io(nvme_cmd_read, 1, 7, 8, D.bus + 8192, 0), 0);
	cr_assert_arr_eq(D.va, D.va + 8192, 4096);
}

Test(io, cmb_hidden_until_enabled_and_usable_for_sq)
{
	struct sio_segment *cmb;
	struct hq q;
	uint64_t cmb_bus;
	void *va;

	h_stop(&H);
	start("--backing ram:4M --cmb 2m --queues 4");
	cr_assert_eq(NVME_CAP_CMBS(h_rd64(&H, NVME_REG_CAP)), 1);
	cr_assert_eq(h_rd32(&H, NVME_REG_CMBSZ), 0, "CMBSZ reads 0 until CMBMSC.CRE");
	h_wr64(&H, NVME_REG_CMBMSC, NVME_SET(1, CMBMSC_CRE));
	cr_assert(h_wait_reg(&H, NVME_REG_CMBSZ, NVME_SET(1, CMBSZ_SQS), NVME_SET(1, CMBSZ_SQS),
			     2000));
	uint32_t loc = h_rd32(&H, NVME_REG_CMBLOC), sz = h_rd32(&H, NVME_REG_CMBSZ);
	cr_assert_eq(loc & 7, 2, "BIR");
	cr_assert_eq((sz >> 8) & 0xf, 2, "SZU: 1 MiB units");
	cr_assert_eq(sz >> 12, 2, "2 MiB");

	/* an SQ in the CMB: the host maps the BAR for the device */
	cr_assert_eq(sio_device_bar(H.dev, loc & 7, &cmb), 0);
	cr_assert_eq(sio_segment_map(cmb, &va), 0);
	cr_assert_eq(sio_device_map(H.dev, cmb, &cmb_bus), 0);
	struct sio_nvme_cmd c;

	memset(&q, 0, sizeof(q));
	q.qid = 2;
	q.size = 16;
	q.phase = 1;
	q.sq.va = va;
	q.sq.bus = cmb_bus;
	cr_assert_eq(h_mem(&H, 4096, &q.cq), 0);
	sio_nvme_cmd_create_cq(&c, 2, 16, q.cq.bus, SIO_NVME_Q_PC, 0);
	cr_assert_eq(h_admin(&H, &c, NULL), 0);
	sio_nvme_cmd_create_sq(&c, 2, 16, cmb_bus, 2, 0);
	cr_assert_eq(h_admin(&H, &c, NULL), 0);
	fill(D.va, 4096, 7);
	c = h_rw(nvme_cmd_write, 1, 3, 8, D.bus, 0);
	cr_assert_eq(h_cmd(&H, &q, &c, NULL), 0);
	c = h_rw(nvme_cmd_read, 1, 3, 8, D.bus + 8192, 0);
	cr_assert_eq(h_cmd(&H, &q, &c, NULL), 0);
	cr_assert_arr_eq(D.va, D.va + 8192, 4096);
}

/*
 * Two hosts: the second process (another node) sends garbage on its own
 * queue pair and dies; the first process's queues keep working.
 */
Test(io, second_process_survives_first_bad_commands)
{
	struct hq q2;
	uint8_t *w = D.va;

	cr_assert_eq(h_qpair(&H, 2, 16, 0, &q2), 0);
	fill(w, 4096, 8);
	cr_assert_eq(io(nvme_cmd_write, 1, 9, 8, D.bus, 0), 0);

	int fds[2];
	cr_assert_eq(pipe(fds), 0);
	pid_t pid = fork();
	if (pid == 0) {
		/* The child is a different process on node 0 that owns SQ/CQ 2's memory
		 * only through what the parent set up: it writes garbage commands. */
		struct host c;
		int bad = 0;

		if (h_join(&c, H.fabric, H.devid, 0))
			_exit(10);
		c.dstrd = H.dstrd;
		/* hand-built garbage into the shared queue memory the parent made */
		for (int i = 0; i < 12; i++) {
			struct sio_nvme_cmd g;
			memset(&g, 0xa5 + i, sizeof(g));
			g.cid = (uint16_t)i;
			if (i % 3 == 0)
				g = h_rw(nvme_cmd_read, 1, 0, 8, 0xdead0000ull, 0);
			if (i % 3 == 1)
				g = h_rw(nvme_cmd_write, 9, 0, 8, 0, 0);
			memcpy(q2.sq.va + (uint64_t)q2.sq_tail * 64, &g, 64);
			q2.sq_tail = (q2.sq_tail + 1) % q2.size;
		}
		atomic_thread_fence(memory_order_release);
		c.regs = H.regs;	/* same mapping, inherited */
		h_wr32(&c, SIO_NVME_REG_DBS + 2 * 2 * 4, q2.sq_tail);
		bad = write(fds[1], "x", 1);
		(void)bad;
		kill(getpid(), SIGKILL);	/* die without cleaning up */
		_exit(1);
	}
	char x;
	cr_assert_eq(read(fds[0], &x, 1), 1);
	waitpid(pid, NULL, 0);
	/* the controller answered every bad command with an error */
	int errors = 0;
	struct sio_nvme_cpl r;
	while (h_reap(&H, &q2, &r, 1000) == 0)
		errors += SIO_NVME_STATUS_CODE(r.status) != 0;
	cr_assert_eq(errors, 12);
	memset(D.va + 8192, 0, 4096);
	cr_assert_eq(io(nvme_cmd_read, 1, 9, 8, D.bus + 8192, 0), 0);
	cr_assert_arr_eq(D.va + 8192, w, 4096);
}
