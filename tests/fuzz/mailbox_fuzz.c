/* SPDX-License-Identifier: MIT */
/*
 * libFuzzer target for the NVMe manager's mailbox: whatever a client writes
 * into its slot, the manager must answer without crashing, never hand out
 * a queue it does not have, and keep serving.
 *
 * Everything runs in this process: a simulated fabric, the emulated
 * controller on node 0 polled by a thread, the manager beside it, and the
 * "clients" (raw mailbox slots). Each input is a series of records: a
 * control byte (bits 0-1 slot, bit 2 a dead owner pid, bit 3 point bus1 at
 * real mapped memory, bit 4 the same for bus2, bit 5 corrupt the registry)
 * followed by a request.
 *
 * With bit 5 one byte of the fabric's registry (chosen by the request's
 * value, flipped by its cdw11) is wrong while the manager serves the
 * request and while the library calls a manager and its clients make run
 * on it: they must fail cleanly or cope, never crash. The byte is put back
 * afterwards (unless the library rewrote it). Process slots and device
 * mappings are left alone: the controller's own DMA runs on those, and a
 * wrong pid there means reaping a live process, not a crash to find.
 *
 * After each input every slot says BYE, so queue ids never leak between
 * inputs; the manager's own bookkeeping is checked against the controller.
 * Built by meson -Dfuzz=true (tests/fuzz/meson.build), run by
 * tests/fuzz/fuzz-mailbox.sh.
 */

#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <smartio/smartio.h>
#include <smartio/nvme/manager.h>
#include "emu.h"
#include "internal.h"
#include "mailbox.h"

#define FUZZ_SLOTS	4

static char fabric[64];
static struct sio_fabric *f_emu, *f_mgr, *f_cli;
static struct sio_nvme_emu *emu;
static struct sio_nvme_manager *mgr;
static struct sio_nvme_mbox *mb;
static struct sio_device *cli_dev;
static struct sio_segment *cli_seg;
static uint64_t good_bus;
static pthread_t emu_thread;
static volatile sig_atomic_t emu_stop;

static void *emu_main(void *arg)
{
	(void)arg;
	sio_nvme_emu_run(emu, &emu_stop);
	return NULL;
}

static void die(const char *what, const char *msg)
{
	fprintf(stderr, "fuzz-mailbox: %s: %s\n", what, msg);
	abort();
}

static void cleanup(void)
{
	sio_nvme_manager_close(mgr);
	emu_stop = 1;
	pthread_join(emu_thread, NULL);
	sio_nvme_emu_destroy(emu);
	sio_device_close(cli_dev);
	sio_fabric_close(f_cli);
	sio_fabric_close(f_mgr);
	sio_fabric_close(f_emu);
	sio_fabric_destroy(fabric);
}

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	struct sio_fabric_config fc = { .nodes = 2, .windows = 32 };
	struct sio_nvme_emu_config ec;
	struct sio_nvme_manager_opts mo = {
		.ctrl = { .arbitration = NVME_CC_AMS_RR, .enable_cmb = true },
	};
	struct sio_segment *mseg;
	void *va;

	(void)argc;
	(void)argv;
	setenv("SMARTIO_QUIET", "1", 1);
	snprintf(fabric, sizeof(fabric), "fuzzmb-%d", (int)getpid());
	sio_fabric_destroy(fabric);
	if (sio_fabric_create(fabric, &fc) || sio_fabric_open(fabric, 0, &f_emu) ||
	    sio_fabric_open(fabric, 0, &f_mgr) || sio_fabric_open(fabric, 1, &f_cli))
		die("fabric", sio_errmsg());
	sio_nvme_emu_config_default(&ec);
	ec.backing = "ram:4M";
	ec.max_qpairs = 8;
	if (sio_nvme_emu_create(&ec, &emu) || sio_nvme_emu_attach(emu, f_emu))
		die("controller", sio_errmsg());
	if (pthread_create(&emu_thread, NULL, emu_main, NULL))
		die("controller", "cannot start its thread");
	if (sio_nvme_manager_start(f_mgr, sio_nvme_emu_device_id(emu), &mo, &mgr))
		die("manager", sio_errmsg());
	/* Real memory a request may point at: a client's segment on node 1. */
	if (sio_device_borrow(f_cli, (uint32_t)sio_nvme_emu_device_id(emu), 0, &cli_dev) ||
	    sio_segment_create(f_cli, 0x46555a5a, 64 << 10, SIO_SEG_F_NOHUGE, &cli_seg) ||
	    sio_segment_map(cli_seg, &va) || sio_device_map(cli_dev, cli_seg, &good_bus))
		die("client memory", sio_errmsg());
	if (sio_segment_connect(f_cli, 0,
				SIO_NVME_MBOX_SEGID(sio_nvme_emu_device_id(emu)), &mseg) ||
	    sio_segment_map(mseg, &va))
		die("mailbox", sio_errmsg());
	mb = va;
	atexit(cleanup);
	return 0;
}

/* The registry's bytes open to corruption: [start, end) pairs. */
static const size_t reg_spans[][2] = {
	{ offsetof(struct sio_registry, segs), offsetof(struct sio_registry, dmamaps) },
	{ offsetof(struct sio_registry, groups), sizeof(struct sio_registry) },
};

static uint8_t *reg_byte(uint64_t pick)
{
	size_t total = 0, off;

	for (size_t i = 0; i < 2; i++)
		total += reg_spans[i][1] - reg_spans[i][0];
	off = pick % total;
	for (size_t i = 0; i < 2; i++) {
		size_t len = reg_spans[i][1] - reg_spans[i][0];
		if (off < len)
			return (uint8_t *)f_cli->reg + reg_spans[i][0] + off;
		off -= len;
	}
	return NULL;
}

/* What a manager and its clients ask the library: each succeeds or says why. */
static void probe_library(void)
{
	struct sio_device_info di[4];
	struct sio_node_info ni[2];
	struct sio_segment_info si;
	struct sio_segment *s;
	struct sio_path path;
	struct sio_endpoint from = { .kind = SIO_EP_DEVICE,
				     .id = (uint32_t)sio_nvme_emu_device_id(emu) };
	struct sio_endpoint to = { .kind = SIO_EP_NODE, .node = 1 };
	uint64_t bus;
	void *va;

	sio_device_info(cli_dev, di);
	sio_device_list(f_cli, 0, 0, di, 4);
	sio_fabric_nodes(f_cli, ni, 2);
	sio_path_resolve(f_cli, &from, &to, -1, &path);
	sio_mcast_subscribers(f_cli, 0);
	if (!sio_segment_connect(f_cli, 0, SIO_NVME_MBOX_SEGID(sio_nvme_emu_device_id(emu)), &s)) {
		sio_segment_info(s, &si);
		if (!sio_segment_map(s, &va))
			sio_segment_unmap(s);
		sio_segment_close(s);
	}
	if (!sio_device_bar(cli_dev, 0, &s)) {
		sio_segment_info(s, &si);
		sio_segment_close(s);
	}
	/* mapped already: looked up, not made (a new segment could take the
	 * slot of one whose used flag is the corrupt byte) */
	sio_device_map(cli_dev, cli_seg, &bus);
}

/* Post one request and have the manager serve it; it must answer. */
static void one(uint8_t ctl, const struct sio_nvme_mbox_req *req)
{
	struct sio_nvme_mbox_slot *sl = &mb->slots[ctl & 3];
	struct sio_nvme_mbox_req q = *req;

	sl->pid = (ctl & 4) ? 0x3ffffff0 : getpid();
	sl->node = 1;
	if (ctl & 8)
		q.bus1 = good_bus + (q.bus1 & 0xf000);
	if (ctl & 16)
		q.bus2 = good_bus + (q.bus2 & 0xf000);
	memcpy((void *)&sl->req, &q, sizeof(q));
	__atomic_store_n(&sl->state, SIO_MBOX_REQ, __ATOMIC_RELEASE);
	__atomic_fetch_add(&mb->h.doorbell, 1, __ATOMIC_ACQ_REL);
	if (sio_nvme_manager_serve(mgr, 0) < 0)
		die("manager stopped serving", sio_errmsg());
	/* A slot whose owner looked dead may have been reaped: FREE is fine. */
	if (sl->state == SIO_MBOX_REQ || sl->state == SIO_MBOX_BUSY)
		die("request", "left unanswered");
	if (sl->state == SIO_MBOX_RESP && !sl->resp.err && q.op == SIO_MBOX_OP_CREATE_QP &&
	    (sl->resp.qid == 0 || sl->resp.qid > mb->h.ctrl.io_queues))
		die("create", "handed out a queue id the controller does not have");
	if (memchr((const void *)sl->resp.msg, 0, sizeof(sl->resp.msg)) == NULL)
		die("response", "message not terminated");
	sl->state = SIO_MBOX_IDLE;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const size_t rec = 1 + sizeof(struct sio_nvme_mbox_req);
	struct sio_nvme_mbox_req req;
	struct sio_nvme_manager_stats st;
	int s;

	for (; size >= rec; data += rec, size -= rec) {
		memcpy(&req, data + 1, sizeof(req));
		if (!(data[0] & 32)) {
			one(data[0], &req);
			continue;
		}
		uint8_t *b = reg_byte(req.value), old = *b, bad = old ^ (uint8_t)(req.cdw11 | 1);
		*b = bad;
		one(data[0], &req);
		probe_library();
		if (*b == bad)
			*b = old;
		reg_bump(f_cli->reg);	/* the controller's DMA reloads the intact registry */
	}
	memset(&req, 0, sizeof(req));
	req.op = SIO_MBOX_OP_BYE;
	for (s = 0; s < FUZZ_SLOTS; s++)
		one((uint8_t)s, &req);
	sio_nvme_manager_stats(mgr, &st);
	if (st.queues)
		die("bookkeeping", "queues still counted after every client left");
	return 0;
}
