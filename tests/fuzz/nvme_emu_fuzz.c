/* SPDX-License-Identifier: MIT */
/*
 * libFuzzer target for the emulated NVMe controller's command handling.
 * The controller runs in-process on plain memory (tests/nvme-emu/inproc.h):
 * BAR0 is a buffer, and "host memory" is a 256 KiB window at HOST_BUS;
 * anything else faults, and a second window answers as a dead link. Each
 * input is a series of 65-byte records: a control byte, then a 64-byte
 * command that goes to the admin or the I/O SQ. The controller must never crash, never write outside
 * host memory, and keep answering (unless a command had it write over the
 * host's own queues: then the host no longer reads what it posts).
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <nvme/types.h>
#include <smartio/nvme/cmd.h>
#include "inproc.h"

#define HOST_BUS	INPROC_HOST_BUS
#define HOST_SIZE	INPROC_HOST_SIZE
#define DEAD_BUS	INPROC_DEAD_BUS
#define ASQ		0x0000u
#define ACQ		0x1000u
#define IOSQ		0x2000u
#define IOCQ		0x3000u
#define DATA		0x4000u
#define QSZ		INPROC_QSZ

static struct inproc h;

static void pump(int n)
{
	inproc_pump(&h, n);
}

static int drain(struct inproc_q *q)
{
	return inproc_drain(&h, q);
}

static void submit(struct inproc_q *q, const struct sio_nvme_cmd *c)
{
	inproc_submit(&h, q, c);
}

static void setup(void)
{
	struct sio_nvme_emu_config cfg;

	inproc_config(&cfg);
	if (inproc_open(&h, &cfg))
		abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct inproc_q a = { 0, ASQ, ACQ, 0, 0, 1, 0 }, io = { 1, IOSQ, IOCQ, 0, 0, 1, 0 };
	struct sio_nvme_cmd c;
	size_t hdr;

	if (!h.emu) {
		setup();
		h.guard_end = DATA;
		h.cq[0] = ACQ;
		h.cq[1] = IOCQ;
	}
	/* reset: CC.EN = 0, then a fresh admin queue pair */
	inproc_reset(&h);
	memset(h.host, 0, HOST_SIZE);
	/* the first bytes of the input become data and PRP lists */
	hdr = size < 4096 ? size / 4 : 1024;
	memcpy(h.host + DATA, data, hdr);
	data += hdr;
	size -= hdr;
	if (!inproc_enable(&h, &a))
		abort();	/* a valid enable must succeed */
	h.clobbered = 0;

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
		struct inproc_q *q = (ctl & 1) ? &a : &io;

		memcpy(&c, data + 1, 64);
		if (ctl & 2) {	/* aim the data pointer into host memory */
			c.prp1 = HOST_BUS + DATA + (c.prp1 % (HOST_SIZE - DATA));
			c.prp2 = HOST_BUS + DATA + (c.prp2 % (HOST_SIZE - DATA));
		}
		if (ctl & 4)	/* aim it at a dead link */
			c.prp1 = DEAD_BUS + (c.prp1 % HOST_SIZE);
		if ((ctl & 0x18) == 0x18) {
			/* a hostile register or doorbell store */
			uint32_t off = (uint32_t)(c.cdw14 % (h.bar0_size - 4)) & ~3u;

			if (off != NVME_REG_CC && (off < 0x1000 || off >= 0x1000 + 4 * 4))
				inproc_wr32(&h, off, c.cdw15);
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
	(void)got;
	/* the controller still answers on the admin queue (AERs may hold up to 4 slots) */
	if ((inproc_rd32(&h, NVME_REG_CSTS) & 1) && a.out <= 4 && !h.clobbered) {
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
