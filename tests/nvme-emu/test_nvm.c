/* SPDX-License-Identifier: MIT */
/*
 * The optional NVM commands (Compare, Dataset Management, Verify), Format
 * NVM, and SGL data pointers (NVMe 1.4, 4.4), from raw commands; every
 * misuse answered with the specification's status.
 */
#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include "harness.h"

#define SGL(t)		SIO_NVME_SGL_TYPE(t)
#define ST_SGL(sc)	ST(NVME_SCT_GENERIC, sc)

static struct host H;
static struct hq Q;
static struct hmem D;	/* 1 MiB of data buffers */
static char path[256], args[512];

static void start(const char *a)
{
	cr_assert_eq(h_start(&H, 1, a), 0, "start: %s", sio_errmsg());
	cr_assert_eq(h_enable(&H, 32, 0), 0);
	cr_assert_eq(h_qpair(&H, 1, 64, 0, &Q), 0);
	cr_assert_eq(h_mem(&H, 1 << 20, &D), 0);
}

static void up(void)
{
	start("--backing ram:16M --ns 8M:512 --ns 8M:4096 --queues 4");
}

static void up_file(void)
{
	snprintf(path, sizeof(path), "/tmp/nvme-emu-nvm-%d.img", (int)getpid());
	unlink(path);
	snprintf(args, sizeof(args), "--backing %s --ns 4M:512 --ns 4M:4096 --queues 4", path);
	start(args);
}

static void down(void)
{
	h_stop(&H);
	if (path[0])
		unlink(path);
}

TestSuite(nvm, .init = up, .fini = down, .timeout = 60);
TestSuite(nvm_file, .init = up_file, .fini = down, .timeout = 60);

static void fill(uint8_t *p, size_t n, unsigned seed)
{
	for (size_t i = 0; i < n; i++)
		p[i] = (uint8_t)(seed * 37 + i * 11 + (i >> 9));
}

static int io(uint8_t opc, uint32_t nsid, uint64_t slba, uint32_t nlb, uint64_t prp1, uint64_t prp2)
{
	struct sio_nvme_cmd c = h_rw(opc, nsid, slba, nlb, prp1, prp2);

	return h_cmd(&H, &Q, &c, NULL);
}

/* Write @nlb 512-byte blocks of namespace 1 from D at @off (PRPs, one page at most + list-free) */
static void put(uint64_t slba, uint32_t nlb, unsigned seed)
{
	for (uint32_t i = 0; i < nlb; i += 8) {
		uint32_t n = nlb - i < 8 ? nlb - i : 8;

		fill(D.va, 4096, seed + i);
		cr_assert_eq(io(nvme_cmd_write, 1, slba + i, n, D.bus, 0), 0);
	}
}

/* Read block @lba of namespace @nsid (block size @bs) into D + 512 KiB; return the pointer. */
static uint8_t *get(uint32_t nsid, uint64_t lba, uint32_t bs)
{
	uint8_t *r = D.va + (512 << 10);

	memset(r, 0xa5, bs);
	cr_assert_eq(io(nvme_cmd_read, nsid, lba, 1, D.bus + (512 << 10), 0), 0);
	return r;
}

static bool zeroes(const uint8_t *p, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (p[i])
			return false;
	return true;
}

static int dsm(uint32_t nsid, uint32_t attr, const struct nvme_dsm_range *r, uint32_t nr)
{
	struct sio_nvme_cmd c;

	memcpy(D.va + (768 << 10), r, nr * sizeof(*r));
	c = h_rw(nvme_cmd_dsm, nsid, 0, 1, D.bus + (768 << 10), 0);
	c.cdw10 = nr - 1;
	c.cdw11 = attr;
	c.cdw12 = 0;
	return h_cmd(&H, &Q, &c, NULL);
}

static int format(uint32_t nsid, uint32_t cdw10)
{
	struct sio_nvme_cmd c;

	sio_nvme_cmd_init(&c, nvme_admin_format_nvm, nsid);
	c.cdw10 = cdw10;
	return h_admin(&H, &c, NULL);
}

Test(nvm, compare_matches_and_fails)
{
	uint8_t *w = D.va + 4096;

	fill(w, 8192, 7);
	cr_assert_eq(io(nvme_cmd_write, 1, 200, 16, D.bus + 4096, D.bus + 8192), 0);
	cr_assert_eq(io(nvme_cmd_compare, 1, 200, 16, D.bus + 4096, D.bus + 8192), 0, "same data");
	w[5000] ^= 1;
	cr_assert_eq(io(nvme_cmd_compare, 1, 200, 16, D.bus + 4096, D.bus + 8192),
		     ST(NVME_SCT_MEDIA, NVME_SC_COMPARE_FAILED), "one bit differs");
	cr_assert_eq(io(nvme_cmd_compare, 1, 16383, 2, D.bus, 0), ST(0, NVME_SC_LBA_RANGE));
	cr_assert_eq(io(nvme_cmd_compare, 9, 0, 1, D.bus, 0), ST(0, NVME_SC_INVALID_NS));
	cr_assert_eq(io(nvme_cmd_compare, 2, 0, 64, D.bus, 0), ST(0, NVME_SC_INVALID_FIELD),
		     "256 KiB is past MDTS (128 KiB)");
}

Test(nvm, verify_checks_the_range)
{
	cr_assert_eq(io(nvme_cmd_verify, 1, 0, 65536 / 4, 0, 0), 0);
	cr_assert_eq(io(nvme_cmd_verify, 2, 2047, 1, 0, 0), 0, "the last block");
	cr_assert_eq(io(nvme_cmd_verify, 2, 2047, 2, 0, 0), ST(0, NVME_SC_LBA_RANGE));
	cr_assert_eq(io(nvme_cmd_verify, 0, 0, 1, 0, 0), ST(0, NVME_SC_INVALID_NS));
}

Test(nvm, dsm_deallocates_to_zeroes_all_or_nothing)
{
	struct hmem m;
	struct sio_nvme_cmd c;

	cr_assert_eq(h_mem(&H, 4096, &m), 0);
	sio_nvme_cmd_identify(&c, NVME_IDENTIFY_CNS_NS, 1, m.bus);
	cr_assert_eq(h_admin(&H, &c, NULL), 0);
	cr_assert_eq(((struct nvme_id_ns *)m.va)->dlfeat,
		     NVME_NS_DLFEAT_RB_ALL_0S | NVME_NS_DLFEAT_WRITE_ZEROES);

	put(0, 64, 1);
	struct nvme_dsm_range r[3] = {
		{ .slba = 8, .nlb = 8 }, { .slba = 40, .nlb = 3 }, { .slba = 16384, .nlb = 1 },
	};
	/* the third range is past the namespace: nothing is deallocated */
	cr_assert_eq(dsm(1, 1u << 2, r, 3), ST(0, NVME_SC_LBA_RANGE));
	cr_assert_not(zeroes(get(1, 8, 512), 512), "refused whole");
	/* hints only (no AD): the data stays */
	cr_assert_eq(dsm(1, 3, r, 2), 0);
	cr_assert_not(zeroes(get(1, 8, 512), 512));
	cr_assert_eq(dsm(1, 1u << 2, r, 2), 0);
	for (uint64_t lba = 0; lba < 64; lba++) {
		bool gone = (lba >= 8 && lba < 16) || (lba >= 40 && lba < 43);

		cr_assert_eq(zeroes(get(1, lba, 512), 512), gone, "LBA %llu", (unsigned long long)lba);
	}
	/* 4 KiB blocks: whole pages of the store are dropped */
	for (uint64_t lba = 100; lba < 104; lba++) {
		fill(D.va, 4096, (unsigned)lba);
		cr_assert_eq(io(nvme_cmd_write, 2, lba, 1, D.bus, 0), 0);
	}
	struct nvme_dsm_range r2 = { .slba = 101, .nlb = 2 };
	cr_assert_eq(dsm(2, 1u << 2, &r2, 1), 0);
	cr_assert_not(zeroes(get(2, 100, 4096), 4096));
	cr_assert(zeroes(get(2, 101, 4096), 4096));
	cr_assert(zeroes(get(2, 102, 4096), 4096));
	cr_assert_not(zeroes(get(2, 103, 4096), 4096));
}

Test(nvm, format_erases_one_namespace_or_all)
{
	uint8_t *r;

	put(0, 8, 5);
	fill(D.va, 4096, 6);
	cr_assert_eq(io(nvme_cmd_write, 2, 7, 1, D.bus, 0), 0);
	/* what it cannot do is refused before anything is erased */
	cr_assert_eq(format(1, 1), ST(NVME_SCT_CMD_SPECIFIC, NVME_SC_INVALID_FORMAT), "LBAF 1");
	cr_assert_eq(format(1, 1u << 5), ST(NVME_SCT_CMD_SPECIFIC, NVME_SC_INVALID_FORMAT), "PI");
	cr_assert_eq(format(1, 2u << 9), ST(NVME_SCT_CMD_SPECIFIC, NVME_SC_INVALID_FORMAT),
		     "cryptographic erase (FNA)");
	cr_assert_eq(format(1, 3u << 9), ST(0, NVME_SC_INVALID_FIELD), "SES reserved");
	cr_assert_eq(format(3, 0), ST(0, NVME_SC_INVALID_NS));
	cr_assert_eq(format(0, 0), ST(0, NVME_SC_INVALID_NS));
	cr_assert_not(zeroes(get(1, 3, 512), 512));

	cr_assert_eq(format(1, 1u << 9), 0, "user data erase, namespace 1");
	for (uint64_t lba = 0; lba < 8; lba++)
		cr_assert(zeroes(get(1, lba, 512), 512));
	r = get(2, 7, 4096);
	fill(D.va, 4096, 6);
	cr_assert_arr_eq(r, D.va, 4096, "namespace 2 untouched");
	cr_assert_eq(format(0xffffffffu, 0), 0, "every namespace");
	cr_assert(zeroes(get(2, 7, 4096), 4096));
}

/* Build SGL1 in @c */
static void sgl1(struct sio_nvme_cmd *c, uint8_t type, uint64_t addr, uint32_t len)
{
	c->flags = SIO_NVME_PSDT_SGL_MPTR << 6;
	c->sgl = (struct sio_nvme_sgl){ .addr = addr, .length = len, .type = type };
}

static struct sio_nvme_sgl desc(uint8_t type, uint64_t addr, uint32_t len)
{
	return (struct sio_nvme_sgl){ .addr = addr, .length = len, .type = type };
}

Test(nvm, sgl_data_blocks_and_segments)
{
	struct sio_nvme_sgl *seg = (struct sio_nvme_sgl *)(D.va + (900 << 10));
	uint64_t seg_bus = D.bus + (900 << 10);
	uint8_t *w = D.va + 4096;
	struct sio_nvme_cmd c;

	/* written with PRPs */
	fill(w, 8192, 9);
	cr_assert_eq(io(nvme_cmd_write, 1, 300, 16, D.bus + 4096, D.bus + 8192), 0);

	/* read back into one byte-aligned data block */
	memset(D.va + (256 << 10), 0, 8200);
	c = h_rw(nvme_cmd_read, 1, 300, 16, 0, 0);
	sgl1(&c, SGL(SIO_NVME_SGL_DATA), D.bus + (256 << 10) + 3, 8192);
	cr_assert_eq(h_cmd(&H, &Q, &c, NULL), 0);
	cr_assert_arr_eq(D.va + (256 << 10) + 3, w, 8192);

	/* a Segment of two data blocks chaining to a Last Segment of one */
	memset(D.va + (320 << 10), 0, 16384);
	seg[0] = desc(SGL(SIO_NVME_SGL_DATA), D.bus + (320 << 10) + 1, 1000);
	seg[1] = desc(SGL(SIO_NVME_SGL_DATA), D.bus + (330 << 10) + 7, 5000);
	seg[2] = desc(SGL(SIO_NVME_SGL_LAST_SEGMENT), seg_bus + 256, 16);
	seg[16] = desc(SGL(SIO_NVME_SGL_DATA), D.bus + (340 << 10) + 5, 8192 - 6000);
	c = h_rw(nvme_cmd_read, 1, 300, 16, 0, 0);
	sgl1(&c, SGL(SIO_NVME_SGL_SEGMENT), seg_bus, 48);
	cr_assert_eq(h_cmd(&H, &Q, &c, NULL), 0);
	cr_assert_arr_eq(D.va + (320 << 10) + 1, w, 1000);
	cr_assert_arr_eq(D.va + (330 << 10) + 7, w + 1000, 5000);
	cr_assert_arr_eq(D.va + (340 << 10) + 5, w + 6000, 8192 - 6000);

	/* written through an SGL (a Last Segment straight from the command), read with PRPs */
	fill(D.va + (400 << 10), 8192, 10);
	seg[0] = desc(SGL(SIO_NVME_SGL_DATA), D.bus + (400 << 10), 4000);
	seg[1] = desc(SGL(SIO_NVME_SGL_DATA), D.bus + (400 << 10) + 4000, 0);	/* moves nothing */
	seg[2] = desc(SGL(SIO_NVME_SGL_DATA), D.bus + (400 << 10) + 4000, 4192);
	c = h_rw(nvme_cmd_write, 2, 9, 2, 0, 0);
	sgl1(&c, SGL(SIO_NVME_SGL_LAST_SEGMENT), seg_bus, 48);
	cr_assert_eq(h_cmd(&H, &Q, &c, NULL), 0);
	cr_assert_eq(io(nvme_cmd_read, 2, 9, 2, D.bus + (512 << 10), D.bus + (516 << 10)), 0);
	cr_assert_arr_eq(D.va + (512 << 10), D.va + (400 << 10), 8192);
}

Test(nvm, sgl_misuse_answered_as_specified)
{
	struct sio_nvme_sgl *seg = (struct sio_nvme_sgl *)(D.va + (900 << 10));
	uint64_t seg_bus = D.bus + (900 << 10);
	struct sio_nvme_cmd c;

	c = h_rw(nvme_cmd_read, 1, 0, 8, 0, 0);
	sgl1(&c, SGL(SIO_NVME_SGL_DATA), D.bus, 4095);
	cr_assert_eq(h_cmd(&H, &Q, &c, NULL), ST_SGL(NVME_SC_SGL_INVALID_DATA), "short");
	sgl1(&c, SGL(SIO_NVME_SGL_DATA), D.bus, 4097);
	cr_assert_eq(h_cmd(&H, &Q, &c, NULL), ST_SGL(NVME_SC_SGL_INVALID_DATA),
		     "long (SGLS.OVERSIZE clear)");
	sgl1(&c, SGL(SIO_NVME_SGL_BIT_BUCKET), 0, 4096);
	cr_assert_eq(h_cmd(&H, &Q, &c, NULL), ST_SGL(NVME_SC_SGL_INVALID_TYPE), "no bit bucket");
	sgl1(&c, SGL(SIO_NVME_SGL_DATA) | 1, D.bus, 4096);
	cr_assert_eq(h_cmd(&H, &Q, &c, NULL), ST_SGL(NVME_SC_SGL_INVALID_TYPE), "offset subtype");
	sgl1(&c, SGL(SIO_NVME_SGL_SEGMENT), seg_bus, 40);
	cr_assert_eq(h_cmd(&H, &Q, &c, NULL), ST_SGL(NVME_SC_SGL_INVALID_LAST), "length % 16");

	/* a segment descriptor that is not the segment's last */
	seg[0] = desc(SGL(SIO_NVME_SGL_LAST_SEGMENT), seg_bus + 256, 16);
	seg[1] = desc(SGL(SIO_NVME_SGL_DATA), D.bus, 4096);
	sgl1(&c, SGL(SIO_NVME_SGL_SEGMENT), seg_bus, 32);
	cr_assert_eq(h_cmd(&H, &Q, &c, NULL), ST_SGL(NVME_SC_SGL_INVALID_LAST));
	/* a Last Segment that chains on */
	seg[0] = desc(SGL(SIO_NVME_SGL_DATA), D.bus, 2048);
	seg[1] = desc(SGL(SIO_NVME_SGL_SEGMENT), seg_bus + 256, 16);
	sgl1(&c, SGL(SIO_NVME_SGL_LAST_SEGMENT), seg_bus, 32);
	cr_assert_eq(h_cmd(&H, &Q, &c, NULL), ST_SGL(NVME_SC_SGL_INVALID_LAST));
	/* a segment that chains to itself ends at the descriptor limit */
	seg[0] = desc(SGL(SIO_NVME_SGL_SEGMENT), seg_bus, 16);
	sgl1(&c, SGL(SIO_NVME_SGL_SEGMENT), seg_bus, 16);
	cr_assert_eq(h_cmd(&H, &Q, &c, NULL), ST_SGL(NVME_SC_SGL_INVALID_COUNT));
	/* PSDT 10b needs SGLS.MPTR_SGL; 11b is reserved; admin commands take PRPs */
	c = h_rw(nvme_cmd_read, 1, 0, 8, D.bus, 0);
	c.flags = 2 << 6;
	cr_assert_eq(h_cmd(&H, &Q, &c, NULL), ST(0, NVME_SC_INVALID_FIELD));
	c.flags = 3 << 6;
	cr_assert_eq(h_cmd(&H, &Q, &c, NULL), ST(0, NVME_SC_INVALID_FIELD));
	sio_nvme_cmd_identify(&c, NVME_IDENTIFY_CNS_CTRL, 0, D.bus);
	c.flags = SIO_NVME_PSDT_SGL_MPTR << 6;
	cr_assert_eq(h_admin(&H, &c, NULL), ST(0, NVME_SC_INVALID_FIELD));
	/* and the queue still works */
	cr_assert_eq(io(nvme_cmd_read, 1, 0, 8, D.bus, 0), 0);
}

Test(nvm_file, deallocate_compare_format_on_a_file)
{
	put(0, 32, 11);
	struct nvme_dsm_range r = { .slba = 8, .nlb = 16 };
	cr_assert_eq(dsm(1, 1u << 2, &r, 1), 0);
	for (uint64_t lba = 0; lba < 32; lba++)
		cr_assert_eq(zeroes(get(1, lba, 512), 512), lba >= 8 && lba < 24, "LBA %llu",
			     (unsigned long long)lba);
	/* Compare reads the file, holes as zeroes */
	memset(D.va + 4096, 0, 4096);
	cr_assert_eq(io(nvme_cmd_compare, 1, 8, 8, D.bus + 4096, 0), 0);
	D.va[4096 + 100] = 1;
	cr_assert_eq(io(nvme_cmd_compare, 1, 8, 8, D.bus + 4096, 0),
		     ST(NVME_SCT_MEDIA, NVME_SC_COMPARE_FAILED));
	cr_assert_eq(io(nvme_cmd_verify, 1, 0, 8192, 0, 0), 0, "the whole namespace");
	cr_assert_eq(format(1, 0), 0);
	cr_assert(zeroes(get(1, 0, 512), 512));
	/* erased on the file itself: a new controller on it reads zeroes */
	cr_assert_eq(h_restart_emu(&H, args), 0);
	cr_assert_eq(h_enable(&H, 32, 0), 0);
	cr_assert_eq(h_qpair(&H, 1, 64, 0, &Q), 0);
	cr_assert_eq(h_mem(&H, 1 << 20, &D), 0);	/* mapped for the new device */
	cr_assert(zeroes(get(1, 30, 512), 512));
}

static int dbbuf(uint64_t dbs, uint64_t eis)
{
	struct sio_nvme_cmd c;

	sio_nvme_cmd_init(&c, nvme_admin_dbbuf, 0);
	c.prp1 = dbs;
	c.prp2 = eis;
	return h_admin(&H, &c, NULL);
}

/* Wait (bounded) until EventIdx @slot reads @v. */
static bool ei_is(volatile uint32_t *eis, uint32_t slot, uint32_t v)
{
	for (int i = 0; i < 5000; i++) {
		if (eis[slot] == v)
			return true;
		usleep(1000);
	}
	return false;
}

Test(nvm, shadow_doorbells_and_event_idx)
{
	struct hmem b;
	struct hq q;
	struct sio_nvme_cmd c;
	struct sio_nvme_cpl r;
	const uint32_t qsz = 16, n = 5 * qsz;

	cr_assert_eq(h_mem(&H, 2 * 4096, &b), 0);
	cr_assert_eq(dbbuf(b.bus + 8, b.bus + 4096), ST(0, NVME_SC_INVALID_FIELD), "not page aligned");
	cr_assert_eq(dbbuf(b.bus, 0), ST(0, NVME_SC_INVALID_FIELD));
	cr_assert_eq(dbbuf(b.bus, 0x7f0000000000ull), ST(0, NVME_SC_DATA_XFER_ERROR), "unmapped");
	/* queue 1 exists: its shadow slots hold its doorbells' values, and it uses them from now */
	memset(b.va, 0, 2 * 4096);
	((uint32_t *)b.va)[2] = Q.sq_tail;
	((uint32_t *)b.va)[3] = Q.cq_head;
	cr_assert_eq(dbbuf(b.bus, b.bus + 4096), 0);
	Q.dbs = (uint32_t *)b.va;
	Q.eis = (volatile uint32_t *)(b.va + 4096);

	/* a queue made now uses them; its shadow slots start at 0 */
	cr_assert_eq(h_qpair(&H, 2, qsz, 0, &q), 0);
	q.dbs = (uint32_t *)b.va;
	q.eis = (volatile uint32_t *)(b.va + 4096);
	cr_assert(ei_is(q.eis, 5, qsz / 2), "CQ EventIdx: a ring every half queue");
	cr_assert(ei_is(q.eis, 4, 0), "SQ EventIdx: the tail acted on");

	/* many commands through a small queue: the CQ wraps, heads come from the shadow */
	for (uint32_t i = 0; i < n; i++) {
		fill(D.va, 512, i);
		c = h_rw(nvme_cmd_write, 1, i, 1, D.bus, 0);
		cr_assert_eq(h_cmd(&H, &q, &c, &r), 0, "command %u", i);
	}
	for (uint32_t i = 0; i < n; i += 17) {
		fill(D.va, 512, i);
		cr_assert_arr_eq(get(1, i, 512), D.va, 512, "LBA %u", i);
	}
	cr_assert_lt(q.rings, 2 * n, "some rings were not needed");

	/* a batch: 8 entries, one shadow store, at most one ring */
	unsigned before = q.rings;
	uint32_t old = q.sq_tail;
	for (int i = 0; i < 8; i++) {
		c = h_rw(nvme_cmd_read, 1, (uint64_t)i, 1, D.bus + 4096 * (uint64_t)(i + 1), 0);
		c.cid = (uint16_t)(100 + i);
		memcpy(q.sq.va + (uint64_t)q.sq_tail * 64, &c, 64);
		q.sq_tail = (q.sq_tail + 1) % q.size;
	}
	atomic_thread_fence(memory_order_release);
	h_doorbell(&H, &q, false, q.sq_tail, old);
	cr_assert_leq(q.rings - before, 1);
	for (int i = 0; i < 8; i++) {
		cr_assert_eq(h_reap(&H, &q, &r, 5000), 0, "batch completion %d", i);
		cr_assert_eq(SIO_NVME_STATUS_CODE(r.status), 0);
	}
	cr_assert(ei_is(q.eis, 4, q.sq_tail), "caught up: EventIdx is the tail");

	/* a ring is a ring whatever value it writes: twice the same value (a host
	 * may ring with its last value a whole queue later) */
	for (int k = 0; k < 2; k++) {
		c = h_rw(nvme_cmd_read, 1, 3, 1, D.bus + 4096, 0);
		c.cid = (uint16_t)(300 + k);
		memcpy(q.sq.va + (uint64_t)q.sq_tail * 64, &c, 64);
		q.sq_tail = (q.sq_tail + 1) % q.size;
		atomic_thread_fence(memory_order_seq_cst);
		q.dbs[4] = q.sq_tail;
		atomic_thread_fence(memory_order_seq_cst);
		h_wr32(&H, 0x1000 + 4 * 4, 5);	/* the value is not what counts */
		cr_assert_eq(h_reap(&H, &q, &r, 5000), 0, "completion after ring %d of value 5", k);
		cr_assert_eq(r.cid, 300 + k);
	}

	/* a queue whose host writes MMIO doorbells only still works beside them */
	struct hq m;
	cr_assert_eq(h_qpair(&H, 3, qsz, 0, &m), 0);
	for (uint32_t i = 0; i < 3 * qsz; i++) {
		c = h_rw(nvme_cmd_read, 1, i, 1, D.bus + 8192, 0);
		cr_assert_eq(h_cmd(&H, &m, &c, NULL), 0, "MMIO-only command %u", i);
	}
	fill(D.va, 512, 3 * qsz - 1);
	cr_assert_arr_eq(D.va + 8192, D.va, 512);
	cr_assert_eq(((uint32_t *)b.va)[6], 0, "the controller never writes a shadow slot");

	/* a reset forgets the buffers: MMIO doorbells alone work again */
	cr_assert_eq(h_disable(&H), 0);
	cr_assert_eq(h_enable(&H, 32, 0), 0);
	cr_assert_eq(h_qpair(&H, 2, qsz, 0, &q), 0);
	memset(b.va, 0xff, 4096);	/* a stale shadow would be an invalid tail */
	memset(D.va, 0, 512);
	c = h_rw(nvme_cmd_read, 1, 7, 1, D.bus, 0);
	cr_assert_eq(h_cmd(&H, &q, &c, NULL), 0, "MMIO doorbells after the reset");
	fill(D.va + 4096, 512, 7);
	cr_assert_arr_eq(D.va, D.va + 4096, 512);
}
