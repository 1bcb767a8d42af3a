/* SPDX-License-Identifier: MIT */
/*
 * Data pointers: the driver sends an SGL Data Block where the controller
 * takes SGLs and the buffer is not page aligned or spans more than two
 * pages, PRPs otherwise (or as the queue spec forces), and the data comes
 * back the same whichever way it went; shadow doorbells; and the optional
 * NVM commands (Compare, Verify, Deallocate) through the driver.
 */
#include <criterion/criterion.h>
#include <string.h>
#include <smartio/smartio.h>
#include <smartio/nvme/client.h>
#include <smartio/nvme/queue.h>
#include "cluster.h"

static struct cluster C;
static struct sio_fabric *F;
static struct sio_nvme_client *CL;

static void up(void)
{
	const char *emu[] = { "--backing", "ram:16M", NULL };

	cluster_up(&C, 2, 32, emu);
	cr_assert_eq(sio_fabric_open(C.fabric, 1, &F), 0, "%s", sio_errmsg());
	cr_assert_eq(sio_nvme_client_open(F, SIO_DEVICE_ANY, &CL), 0, "%s", sio_errmsg());
}

static void down(void)
{
	sio_nvme_client_close(CL);
	sio_fabric_close(F);
	cluster_down(&C);
}

TestSuite(dptr, .init = up, .fini = down, .timeout = 90);

static struct sio_nvme_ioq *queue(const char *spec)
{
	struct sio_nvme_qspec s;
	struct sio_nvme_ioq *q;

	cr_assert_eq(sio_nvme_qspec_parse(spec, &s), 0, "%s", sio_errmsg());
	cr_assert_eq(sio_nvme_ioq_create(CL, &s, &q), 0, "%s: %s", spec, sio_errmsg());
	return q;
}

static uint64_t sgl_cmds(struct sio_nvme_ioq *q)
{
	struct sio_nvme_ioq_info i;

	sio_nvme_ioq_info(q, &i);
	return i.sgl_cmds;
}

static void fill(uint8_t *p, size_t n, unsigned seed)
{
	for (size_t i = 0; i < n; i++)
		p[i] = (uint8_t)(seed * 29 + i * 3 + (i >> 10));
}

Test(dptr, chosen_by_alignment_and_size)
{
	struct sio_nvme_ctrl_info ci;
	struct sio_nvme_ioq *a = queue("dptr=auto"), *prp = queue("dptr=prp"), *sgl;
	struct sio_nvme_buf *w, *r;
	uint8_t *wv, *rv;

	sio_nvme_client_info(CL, &ci);
	cr_assert_eq(ci.sgl, SIO_NVME_SGL_BYTE, "the emulator takes byte-aligned data blocks");
	cr_assert_eq(sio_nvme_buf_alloc(CL, 1 << 20, &w), 0, "%s", sio_errmsg());
	cr_assert_eq(sio_nvme_buf_alloc(CL, 1 << 20, &r), 0, "%s", sio_errmsg());
	wv = w->va;
	rv = r->va;

	/* page aligned, two pages: PRPs */
	fill(wv, 8192, 1);
	cr_assert_eq(sio_nvme_write(a, 1, 0, 16, w, 0), 0, "%s", sio_errmsg());
	cr_assert_eq(sgl_cmds(a), 0);
	/* large: one SGL descriptor instead of a PRP list */
	fill(wv, 65536, 2);
	cr_assert_eq(sio_nvme_write(a, 1, 100, 128, w, 0), 0, "%s", sio_errmsg());
	cr_assert_eq(sgl_cmds(a), 1);
	memset(rv, 0, 65536);
	cr_assert_eq(sio_nvme_read(prp, 1, 100, 128, r, 0), 0, "%s", sio_errmsg());
	cr_assert_arr_eq(rv, wv, 65536, "written by SGL, read by PRPs");
	cr_assert_eq(sgl_cmds(prp), 0);

	/* not aligned, not even to a dword: only an SGL can say it */
	fill(wv + 4097, 4096, 3);
	cr_assert_eq(sio_nvme_write(a, 1, 300, 8, w, 4097), 0, "%s", sio_errmsg());
	cr_assert_eq(sgl_cmds(a), 2);
	memset(rv, 0, 4096);
	cr_assert_eq(sio_nvme_read(prp, 1, 300, 8, r, 0), 0, "%s", sio_errmsg());
	cr_assert_arr_eq(rv, wv + 4097, 4096);
	memset(rv, 0, 8192);
	cr_assert_eq(sio_nvme_read(a, 1, 300, 8, r, 13), 0, "%s", sio_errmsg());
	cr_assert_arr_eq(rv + 13, wv + 4097, 4096, "read to a byte offset");
	cr_assert_eq(sio_nvme_write(prp, 1, 300, 8, w, 4097), -EINVAL, "PRPs need a dword");

	/* dptr=sgl: every read and write, aligned or not, split or not */
	sgl = queue("dptr=sgl");
	fill(wv, 512 << 10, 4);
	cr_assert_eq(sio_nvme_write(sgl, 1, 2048, 1024, w, 0), 0, "%s", sio_errmsg());
	cr_assert_geq(sgl_cmds(sgl), 4, "512 KiB in commands of at most 128 KiB");
	memset(rv, 0, 512 << 10);
	cr_assert_eq(sio_nvme_read(prp, 1, 2048, 1024, r, 0), 0, "%s", sio_errmsg());
	cr_assert_arr_eq(rv, wv, 512 << 10);

	sio_nvme_ioq_close(sgl);
	sio_nvme_ioq_close(prp);
	sio_nvme_ioq_close(a);
	sio_nvme_buf_close(CL, w);
	sio_nvme_buf_close(CL, r);
}

Test(dptr, spec_strings)
{
	struct sio_nvme_qspec s;
	struct sio_nvme_ioq *q;

	cr_assert_eq(sio_nvme_qspec_parse("dptr=sgl,depth=8", &s), 0);
	cr_assert_eq(s.dptr, SIO_NVME_DPTR_SGL);
	cr_assert_eq(sio_nvme_qspec_parse("dptr=list", &s), -EINVAL);
	cr_assert(strstr(sio_errmsg(), "dptr 'list'"), "%s", sio_errmsg());
	cr_assert_eq(sio_nvme_qspec_parse("dbbuf=maybe", &s), -EINVAL);
	cr_assert_eq(sio_nvme_qspec_parse("dbbuf=off,dptr=prp", &s), 0);
	cr_assert_eq(s.dbbuf, SIO_NVME_DBBUF_OFF);
	s.dbbuf = SIO_NVME_DBBUF_ON;
	s.multipath = true;
	cr_assert_eq(sio_nvme_ioq_create(CL, &s, &q), -ENOTSUP, "multipath keeps MMIO doorbells");
	s.multipath = false;
	s.dbbuf = SIO_NVME_DBBUF_AUTO;
	s.dptr = 7;
	cr_assert_eq(sio_nvme_ioq_create(CL, &s, &q), -EINVAL);
}

static uint64_t db_writes(struct sio_nvme_ioq *q, bool *shadow)
{
	struct sio_nvme_ioq_info i;

	sio_nvme_ioq_info(q, &i);
	if (shadow)
		*shadow = i.shadow_doorbells;
	return i.db_writes;
}

static void count_cb(void *arg, int err, uint16_t status)
{
	(*(int *)arg) += err || status ? 1000 : 1;
}

Test(dptr, shadow_doorbells_spare_mmio_writes)
{
	struct sio_nvme_ctrl_info ci;
	struct sio_nvme_ioq *q = queue("depth=64,dbbuf=on"), *a = queue("depth=8");
	struct sio_nvme_buf *b;
	const uint32_t n = 200;
	bool shadow;
	int done = 0;

	sio_nvme_client_info(CL, &ci);
	cr_assert(ci.dbbuf, "the manager configured Doorbell Buffer Config");
	db_writes(a, &shadow);
	cr_assert_not(shadow, "by default not from another node than the buffer's");
	sio_nvme_ioq_close(a);
	cr_assert_eq(sio_nvme_buf_alloc(CL, 1 << 20, &b), 0, "%s", sio_errmsg());
	uint8_t *v = b->va;

	/* QD1: the controller has caught up each time, so each SQ ring is asked
	 * for; CQ heads are asked for every half queue */
	for (uint32_t i = 0; i < n; i++) {
		fill(v, 4096, i);
		cr_assert_eq(sio_nvme_write(q, 1, i * 8, 8, b, 0), 0, "%s", sio_errmsg());
	}
	uint64_t w1 = db_writes(q, &shadow);
	cr_assert(shadow);
	cr_assert_lt(w1, 2 * n, "%llu MMIO writes for %u commands", (unsigned long long)w1, n);
	cr_assert_geq(w1, n / 2);

	/* 32 at once: one shadow store, one ring at most */
	for (uint32_t i = 0; i < 32; i++)
		cr_assert_eq(sio_nvme_ioq_read(q, 1, i * 8, 8, b, 4096 * (i + 1), count_cb, &done),
			     0, "%s", sio_errmsg());
	cr_assert_eq(sio_nvme_ioq_wait(q), 0, "%s", sio_errmsg());
	cr_assert_eq(done, 32);
	for (uint32_t i = 0; i < 32; i++) {
		fill(v, 4096, i);
		cr_assert_arr_eq(v + 4096 * (i + 1), v, 4096, "block %u", i);
	}

	sio_nvme_ioq_close(q);
	sio_nvme_buf_close(CL, b);
}

/* By default a manager configures shadow doorbells only where they pay, and
 * on the simulated fabric an MMIO doorbell is a store to memory: off. */
Test(dptr, shadow_doorbells_off_by_default_on_the_simulated_fabric)
{
	struct sio_nvme_ctrl_info ci;
	struct sio_nvme_qspec s;
	struct sio_nvme_ioq *q;
	struct sio_nvme_buf *b;
	bool shadow;
	int done = 0;

	sio_nvme_client_close(CL);
	CL = NULL;
	cluster_stop(&C.mgr);
	cluster_start_mgr_args(&C, NULL);
	cr_assert_eq(sio_nvme_client_open(F, SIO_DEVICE_ANY, &CL), 0, "%s", sio_errmsg());
	sio_nvme_client_info(CL, &ci);
	cr_assert_not(ci.dbbuf, "Doorbell Buffer Config left off");
	cr_assert_eq(sio_nvme_qspec_parse("dbbuf=on", &s), 0);
	cr_assert_eq(sio_nvme_ioq_create(CL, &s, &q), -ENOTSUP, "dbbuf=on without the buffer");
	q = queue("depth=8");
	cr_assert_eq(sio_nvme_buf_alloc(CL, 1 << 16, &b), 0, "%s", sio_errmsg());
	for (uint32_t i = 0; i < 20; i++) {
		cr_assert_eq(sio_nvme_ioq_read(q, 1, i * 8, 8, b, 0, count_cb, &done), 0, "%s",
			     sio_errmsg());
		cr_assert_eq(sio_nvme_ioq_wait(q), 0, "%s", sio_errmsg());
	}
	cr_assert_eq(done, 20);
	cr_assert_eq(db_writes(q, &shadow), 40, "an SQ and a CQ ring per command, to BAR0");
	cr_assert_not(shadow);
	sio_nvme_ioq_close(q);
	sio_nvme_buf_close(CL, b);
}

Test(dptr, queue_ids_reused_with_shadow_doorbells)
{
	struct sio_nvme_buf *b;

	cr_assert_eq(sio_nvme_buf_alloc(CL, 1 << 16, &b), 0, "%s", sio_errmsg());
	for (int run = 0; run < 4; run++) {
		struct sio_nvme_ioq *q = queue("depth=16,dbbuf=on");
		int done = 0;

		for (uint32_t i = 0; i < 40; i++) {
			while (sio_nvme_ioq_read(q, 1, i * 8, 8, b, 4096 * (i % 8), count_cb, &done) == -EAGAIN)
				cr_assert_geq(sio_nvme_ioq_poll(q, 0), 0, "%s", sio_errmsg());
		}
		cr_assert_eq(sio_nvme_ioq_wait(q), 0, "run %d: %s", run, sio_errmsg());
		cr_assert_eq(done, 40);
		sio_nvme_ioq_close(q);
	}
	sio_nvme_buf_close(CL, b);
}

/* The optional NVM commands through the driver: Compare, Verify, Deallocate. */
Test(dptr, compare_verify_deallocate)
{
	struct sio_nvme_ioq *q = queue("depth=16");
	struct sio_nvme_buf *b;
	uint8_t *v;

	cr_assert_eq(sio_nvme_buf_alloc(CL, 1 << 16, &b), 0, "%s", sio_errmsg());
	v = b->va;
	fill(v, 16384, 9);
	cr_assert_eq(sio_nvme_write(q, 1, 4000, 32, b, 0), 0, "%s", sio_errmsg());
	cr_assert_eq(sio_nvme_compare(q, 1, 4000, 32, b, 0), 0, "%s", sio_errmsg());
	v[12345] ^= 0x10;
	cr_assert_eq(sio_nvme_compare(q, 1, 4000, 32, b, 0), -EIO);
	cr_assert(strstr(sio_errmsg(), "ompare"), "the status is named: %s", sio_errmsg());
	cr_assert_eq(sio_nvme_verify(q, 1, 4000, 32), 0, "%s", sio_errmsg());

	/* deallocated blocks read as zeroes (DLFEAT), the rest stays */
	cr_assert_eq(sio_nvme_deallocate(q, 1, 4008, 16), 0, "%s", sio_errmsg());
	memset(v + 32768, 0xee, 16384);
	cr_assert_eq(sio_nvme_read(q, 1, 4000, 32, b, 32768), 0, "%s", sio_errmsg());
	fill(v, 16384, 9);
	cr_assert_arr_eq(v + 32768, v, 4096, "blocks 4000..4007 kept");
	for (int i = 4096; i < 12288; i++)
		cr_assert_eq(v[32768 + i], 0, "byte %d of the deallocated blocks", i);
	cr_assert_arr_eq(v + 32768 + 12288, v + 12288, 4096, "blocks 4024..4031 kept");
	cr_assert_eq(sio_nvme_deallocate(q, 1, 1ull << 40, 1), -EINVAL);
	cr_assert(strstr(sio_errmsg(), "outside namespace"), "%s", sio_errmsg());

	sio_nvme_ioq_close(q);
	sio_nvme_buf_close(CL, b);
}
