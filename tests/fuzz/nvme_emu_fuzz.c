/* SPDX-License-Identifier: MIT */
/*
 * libFuzzer target for the emulated NVMe controller's command handling.
 * The controller runs in-process on plain memory: BAR0 is a buffer, and
 * "host memory" is a 256 KiB window at HOST_BUS; anything else faults, and
 * a second window answers as a dead link. Each input is a series of
 * 65-byte records: a control byte, then a 64-byte command that goes to the
 * admin or the I/O SQ. The controller must never crash, never write outside
 * host memory, and keep answering.
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <nvme/types.h>
#include <smartio/nvme/cmd.h>
#include "emu.h"

#define HOST_BUS	0x10000000ull
#define HOST_SIZE	(256u << 10)
#define DEAD_BUS	0x20000000ull	/* answers -ENOLINK */
#define ASQ		0x0000u
#define ACQ		0x1000u
#define IOSQ		0x2000u
#define IOCQ		0x3000u
#define DATA		0x4000u
#define QSZ		16u

static uint8_t *host;
static uint8_t *bar0;
static struct sio_nvme_emu *emu;
static uint64_t bar0_size;

static int in_host(uint64_t bus, size_t len)
{
	return bus >= HOST_BUS && bus - HOST_BUS < HOST_SIZE && len <= HOST_SIZE - (bus - HOST_BUS);
}

static int dead(uint64_t bus)
{
	return bus >= DEAD_BUS && bus - DEAD_BUS < HOST_SIZE;
}

static int f_read(void *ctx, uint64_t bus, void *buf, size_t len)
{
	if (in_host(bus, len)) {
		memcpy(buf, host + (bus - HOST_BUS), len);
		return 0;
	}
	if (dead(bus)) {
		memset(buf, 0xff, len);
		return -ENOLINK;
	}
	return -EFAULT;
}

static int f_write(void *ctx, uint64_t bus, const void *buf, size_t len)
{
	if (in_host(bus, len)) {
		memcpy(host + (bus - HOST_BUS), buf, len);
		return 0;
	}
	return dead(bus) ? -ENOLINK : -EFAULT;
}

static int f_ptr(void *ctx, uint64_t bus, size_t len, bool write, void **p)
{
	if (in_host(bus, len)) {
		*p = host + (bus - HOST_BUS);
		return 0;
	}
	return dead(bus) ? -ENOLINK : -EFAULT;
}

static void wr32(uint32_t off, uint32_t v)
{
	memcpy(bar0 + off, &v, 4);
}

static uint32_t rd32(uint32_t off)
{
	uint32_t v;

	memcpy(&v, bar0 + off, 4);
	return v;
}

static void wr64(uint32_t off, uint64_t v)
{
	memcpy(bar0 + off, &v, 8);
}

struct hq {
	uint16_t qid;
	uint32_t sqoff, cqoff, tail, head;
	uint8_t phase;
	uint32_t out;	/* submitted, not yet completed */
};

static void pump(int n)
{
	for (int i = 0; i < n; i++)
		sio_nvme_emu_poll(emu);
}

/* Take every posted completion and hand the slots back. */
static int drain(struct hq *q)
{
	int n = 0;

	for (;;) {
		struct sio_nvme_cpl c;

		memcpy(&c, host + q->cqoff + q->head * 16, 16);
		if ((c.status & 1) != q->phase)
			break;
		if (++q->head == QSZ) {
			q->head = 0;
			q->phase ^= 1;
		}
		n++;
		if (q->out)
			q->out--;
	}
	wr32(0x1000 + (2u * q->qid + 1) * 4, q->head);
	return n;
}

static void submit(struct hq *q, const struct sio_nvme_cmd *c)
{
	memcpy(host + q->sqoff + q->tail * 64, c, 64);
	q->tail = (q->tail + 1) % QSZ;
	q->out++;
	wr32(0x1000 + 2u * q->qid * 4, q->tail);
}

static void setup(void)
{
	struct sio_nvme_emu_config cfg;
	struct sio_nvme_emu_dma dma = { f_read, f_write, f_ptr, NULL };

	sio_nvme_emu_config_default(&cfg);
	cfg.backing = "ram:2M";
	cfg.nns = 2;
	cfg.ns[0] = (struct sio_nvme_emu_ns){ 1u << 20, 512 };
	cfg.ns[1] = (struct sio_nvme_emu_ns){ 1u << 20, 4096 };
	cfg.max_qpairs = 4;
	cfg.mqes = 64;
	cfg.mdts = 3;
	if (sio_nvme_emu_create(&cfg, &emu))
		abort();
	bar0_size = sio_nvme_emu_bar0_size(&cfg);
	bar0 = calloc(1, bar0_size);
	host = aligned_alloc(4096, HOST_SIZE);
	if (!bar0 || !host || sio_nvme_emu_attach_mem(emu, bar0, &dma))
		abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct hq a = { 0, ASQ, ACQ, 0, 0, 1, 0 }, io = { 1, IOSQ, IOCQ, 0, 0, 1, 0 };
	struct sio_nvme_cmd c;
	size_t hdr;

	if (!emu)
		setup();
	/* reset: CC.EN = 0, then a fresh admin queue pair */
	wr32(NVME_REG_CC, 0);
	pump(2);
	memset(host, 0, HOST_SIZE);
	/* the first bytes of the input become data and PRP lists */
	hdr = size < 4096 ? size / 4 : 1024;
	memcpy(host + DATA, data, hdr);
	data += hdr;
	size -= hdr;
	wr32(NVME_REG_AQA, NVME_SET(QSZ - 1, AQA_ASQS) | NVME_SET(QSZ - 1, AQA_ACQS));
	wr64(NVME_REG_ASQ, HOST_BUS + ASQ);
	wr64(NVME_REG_ACQ, HOST_BUS + ACQ);
	wr32(NVME_REG_CC, NVME_SET(1, CC_EN) | NVME_SET(SIO_NVME_SQES, CC_IOSQES) |
	     NVME_SET(SIO_NVME_CQES, CC_IOCQES));
	pump(2);
	if (!NVME_CSTS_RDY(rd32(NVME_REG_CSTS)))
		abort();	/* a valid enable must succeed */

	sio_nvme_cmd_create_cq(&c, 1, QSZ, HOST_BUS + IOCQ, SIO_NVME_Q_PC, 0);
	submit(&a, &c);
	sio_nvme_cmd_create_sq(&c, 1, QSZ, HOST_BUS + IOSQ, 1, 0);
	submit(&a, &c);
	pump(2);
	if (drain(&a) != 2)
		abort();

	int sent = 0, got = 0;
	for (; size >= 65; data += 65, size -= 65) {
		uint8_t ctl = data[0];
		struct hq *q = (ctl & 1) ? &a : &io;

		memcpy(&c, data + 1, 64);
		if (ctl & 2) {	/* aim the data pointer into host memory */
			c.prp1 = HOST_BUS + DATA + (c.prp1 % (HOST_SIZE - DATA));
			c.prp2 = HOST_BUS + DATA + (c.prp2 % (HOST_SIZE - DATA));
		}
		if (ctl & 4)	/* aim it at a dead link */
			c.prp1 = DEAD_BUS + (c.prp1 % HOST_SIZE);
		if ((ctl & 0x18) == 0x18) {
			/* a hostile register or doorbell store */
			uint32_t off = (uint32_t)(c.cdw14 % (bar0_size - 4)) & ~3u;

			if (off != NVME_REG_CC && (off < 0x1000 || off >= 0x1000 + 4 * 4))
				wr32(off, c.cdw15);
		}
		/* never refill a queue before the controller drained it */
		if (q->out >= QSZ - 1) {
			pump(4);
			got += drain(&a) + drain(&io);
			continue;
		}
		submit(q, &c);
		sent++;
		pump(3);
		got += drain(&a) + drain(&io);
	}
	pump(8);
	got += drain(&a) + drain(&io);
	(void)sent;
	/* the controller still answers on the admin queue (AERs may hold up to 4 slots) */
	if ((rd32(NVME_REG_CSTS) & 1) && a.out <= 4) {
		memset(&c, 0, sizeof(c));
		c.opcode = 0xff;	/* invalid opcode: must complete */
		c.cid = 0xbeef;
		submit(&a, &c);
		pump(4);
		if (drain(&a) < 1)
			abort();
	}
	return 0;
}
