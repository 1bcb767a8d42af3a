/* SPDX-License-Identifier: MIT */
/* File backing through io_uring: many commands in flight, durability. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include "harness.h"

static struct host H;
static char path[256], args[512];

static void up(void)
{
	snprintf(path, sizeof(path), "/tmp/nvme-emu-test-%d.img", (int)getpid());
	unlink(path);
	snprintf(args, sizeof(args), "--backing %s --ns 4M:512 --ns 4M:4096 --queues 4 --io-depth 8", path);
	cr_assert_eq(h_start(&H, 1, args), 0, "start: %s", sio_errmsg());
	cr_assert_eq(h_enable(&H, 16, 0), 0);
}

static void down(void)
{
	h_stop(&H);
	unlink(path);
}

TestSuite(file, .init = up, .fini = down, .timeout = 90);

Test(file, many_in_flight_then_durable_across_restart)
{
	struct hq q;
	struct hmem d;
	struct sio_nvme_cmd c;
	struct sio_nvme_cpl r;
	const int n = 48;	/* more than --io-depth: the rest wait in the SQ */

	cr_assert_eq(h_qpair(&H, 1, 64, 0, &q), 0);
	cr_assert_eq(h_mem(&H, (uint64_t)n * 8192, &d), 0);
	for (int i = 0; i < n * 8192; i++)
		d.va[i] = (uint8_t)(i * 13 + (i >> 12));
	for (int i = 0; i < n; i++) {
		c = h_rw(nvme_cmd_write, 1, (uint64_t)i * 16, 16, d.bus + (uint64_t)i * 8192,
			 d.bus + (uint64_t)i * 8192 + 4096);
		c.cid = (uint16_t)i;
		h_submit(&H, &q, &c);
	}
	uint64_t seen = 0;
	for (int i = 0; i < n; i++) {
		cr_assert_eq(h_reap(&H, &q, &r, 5000), 0, "completion %d", i);
		cr_assert_eq(SIO_NVME_STATUS_CODE(r.status), 0);
		seen |= 1ull << r.cid;
	}
	cr_assert_eq(seen, (1ull << n) - 1);
	c = h_rw(nvme_cmd_write_zeroes, 2, 5, 2, 0, 0);
	cr_assert_eq(h_cmd(&H, &q, &c, NULL), 0);
	c = h_rw(nvme_cmd_flush, 1, 0, 1, 0, 0);
	cr_assert_eq(h_cmd(&H, &q, &c, NULL), 0);

	/* a new controller process on the same file */
	cr_assert_eq(h_restart_emu(&H, args), 0);
	cr_assert_eq(h_enable(&H, 16, 0), 0);
	cr_assert_eq(h_qpair(&H, 1, 64, 0, &q), 0);
	cr_assert_eq(h_mem(&H, (uint64_t)n * 8192, &d), 0);
	for (int i = 0; i < n; i++) {
		c = h_rw(nvme_cmd_read, 1, (uint64_t)i * 16, 16, d.bus + (uint64_t)i * 8192,
			 d.bus + (uint64_t)i * 8192 + 4096);
		cr_assert_eq(h_cmd(&H, &q, &c, NULL), 0);
	}
	for (int i = 0; i < n * 8192; i++)
		cr_assert_eq(d.va[i], (uint8_t)(i * 13 + (i >> 12)), "byte %d after restart", i);
	c = h_rw(nvme_cmd_read, 2, 4, 4, d.bus, 0);
	c.prp2 = 0;
	memset(d.va, 0xee, 16384);
	struct hmem l;
	cr_assert_eq(h_mem(&H, 4096, &l), 0);
	((uint64_t *)l.va)[0] = d.bus + 4096;
	((uint64_t *)l.va)[1] = d.bus + 8192;
	((uint64_t *)l.va)[2] = d.bus + 12288;
	c.prp2 = l.bus;
	cr_assert_eq(h_cmd(&H, &q, &c, NULL), 0);
	for (int i = 4096; i < 3 * 4096; i++)
		cr_assert_eq(d.va[i], 0, "zeroed LBA byte %d", i);
}

Test(file, bad_commands_in_flight_mix)
{
	struct hq q;
	struct hmem d;
	struct sio_nvme_cmd c;
	struct sio_nvme_cpl r;
	int ok = 0, bad = 0;

	cr_assert_eq(h_qpair(&H, 1, 32, 0, &q), 0);
	cr_assert_eq(h_mem(&H, 65536, &d), 0);
	for (int i = 0; i < 20; i++) {
		uint64_t buf = (i % 4 == 3) ? 0x7f0000000000ull : d.bus + (uint64_t)(i % 8) * 4096;

		c = h_rw(i % 2 ? nvme_cmd_read : nvme_cmd_write, 2, (uint64_t)i, 1, buf, 0);
		c.cid = (uint16_t)i;
		h_submit(&H, &q, &c);
	}
	for (int i = 0; i < 20; i++) {
		cr_assert_eq(h_reap(&H, &q, &r, 5000), 0);
		if (r.cid % 4 == 3) {
			cr_assert_eq(SIO_NVME_STATUS_CODE(r.status), ST(0, NVME_SC_DATA_XFER_ERROR));
			bad++;
		} else {
			cr_assert_eq(SIO_NVME_STATUS_CODE(r.status), 0);
			ok++;
		}
	}
	cr_assert_eq(bad, 5);
	cr_assert_eq(ok, 15);
}

/* Identify CNS 03h for @nsid: the descriptor list, as the controller wrote it. */
static void ns_ids(uint32_t nsid, uint8_t out[64])
{
	struct sio_nvme_cmd c;
	struct hmem m;

	cr_assert_eq(h_mem(&H, 4096, &m), 0);
	sio_nvme_cmd_identify(&c, NVME_IDENTIFY_CNS_NS_DESC_LIST, nsid, m.bus);
	cr_assert_eq(h_admin(&H, &c, NULL), 0);
	memcpy(out, m.va, 64);
}

Test(file, namespace_identifiers_survive_a_restart)
{
	uint8_t a1[64], a2[64], b1[64], b2[64];

	ns_ids(1, a1);
	ns_ids(2, a2);
	cr_assert_eq(a1[0], NVME_NIDT_EUI64, "a descriptor list");
	cr_assert_neq(memcmp(a1, a2, 64), 0);
	cr_assert_eq(h_restart_emu(&H, args), 0);
	cr_assert_eq(h_enable(&H, 16, 0), 0);
	ns_ids(1, b1);
	ns_ids(2, b2);
	cr_assert_eq(memcmp(a1, b1, 64), 0, "namespace 1: same EUI64, NGUID and UUID");
	cr_assert_eq(memcmp(a2, b2, 64), 0, "namespace 2");
}
