/* SPDX-License-Identifier: MIT */
#ifndef SIO_TEST_NVME_EMU_INPROC_H
#define SIO_TEST_NVME_EMU_INPROC_H

/*
 * The emulated controller in this process, on plain memory: BAR0 is a
 * buffer, "host memory" a window of INPROC_HOST_SIZE bytes at bus address
 * INPROC_HOST_BUS (anything else faults, and a second window at
 * INPROC_DEAD_BUS answers as a dead link), and the controller runs one
 * poll at a time when the test says so. For the unit tests of the model's
 * command handling and for its fuzzer: no fabric, no process, no thread.
 */

#include <stdbool.h>
#include <stdint.h>
#include <smartio/nvme/types.h>
#include "emu.h"

#define INPROC_HOST_BUS		0x10000000ull
#define INPROC_HOST_SIZE	(256u << 10)
#define INPROC_DEAD_BUS		0x20000000ull	/* answers -ENOLINK */
#define INPROC_QSZ		16u		/* entries of every queue made here */

struct inproc {
	struct sio_nvme_emu *emu;
	uint8_t *host;			/* INPROC_HOST_SIZE bytes, page aligned */
	uint8_t *bar0;
	uint64_t bar0_size;
	/*
	 * The host's queues: the controller's writes below @guard_end that are
	 * not completion entries of a CQ at @cq[] (INPROC_QSZ entries each)
	 * are counted in @clobbered: a command pointed the controller at the
	 * host's own queues, and what the host reads there is then its own doing.
	 */
	uint32_t guard_end;
	uint32_t cq[2];
	unsigned clobbered;
	/*
	 * Host memory at offsets @noptr_lo..@noptr_hi - 1 has no host
	 * pointer, as GPU memory on the fabric: the pointer call answers
	 * -EOPNOTSUPP there, and reads of it are counted in @noptr_reads.
	 */
	uint32_t noptr_lo, noptr_hi;
	unsigned noptr_reads;
	/*
	 * With @batch set, writes there made inside the controller's DMA
	 * batch land only at its end, as the GPU plugin's do (or never, with
	 * @batch_fails: the end answers -EIO). A completion entry written
	 * while one is still in flight is counted in @early_cpl: it could be
	 * seen before its data. A completion entry's own writes deferred are
	 * counted in @cpl_deferred: a batch may land them in any order.
	 */
	bool batch, batch_fails;
	bool in_batch;
	unsigned deferred, batches, early_cpl, cpl_deferred;
	struct inproc_later {
		uint32_t off, len;
		uint8_t data[4096];
	} later[16];
	unsigned nlater;
};

/* A queue pair as the host keeps it: offsets into host memory. */
struct inproc_q {
	uint16_t qid;
	uint32_t sqoff, cqoff, tail, head;
	uint8_t phase;
	uint32_t out;			/* submitted, not yet completed */
};

/*
 * A small controller: 2 MiB of RAM, namespace 1 of 1 MiB in 512-byte
 * blocks, namespace 2 of 1 MiB in 4 KiB blocks, 4 I/O queue pairs of up to
 * 64 entries, MDTS 3 (32 KiB).
 */
void inproc_config(struct sio_nvme_emu_config *cfg);

/* Create the controller for @cfg and attach it to fresh memory. 0 or -errno. */
int inproc_open(struct inproc *h, const struct sio_nvme_emu_config *cfg);
void inproc_close(struct inproc *h);

void inproc_wr32(struct inproc *h, uint32_t off, uint32_t v);
void inproc_wr64(struct inproc *h, uint32_t off, uint64_t v);
uint32_t inproc_rd32(struct inproc *h, uint32_t off);

/* @n polls of the controller. */
void inproc_pump(struct inproc *h, int n);

/* Reset: CC.EN to 0, and the polls that take it. */
void inproc_reset(struct inproc *h);

/*
 * Give a reset controller the admin queue @a (INPROC_QSZ entries at
 * a->sqoff and a->cqoff, the CQ zeroed here) and enable it.
 * Return: true once CSTS.RDY is set.
 */
bool inproc_enable(struct inproc *h, struct inproc_q *a);

/* Put @c in @q's SQ and ring. */
void inproc_submit(struct inproc *h, struct inproc_q *q, const struct sio_nvme_cmd *c);

/* Take @q's next posted completion into @out (may be NULL), without
 * ringing. Return: true if there was one. */
bool inproc_reap(struct inproc *h, struct inproc_q *q, struct sio_nvme_cpl *out);

/* Poll until @q's next completion is posted (at most 64 polls), take it
 * into @out and ring the CQ head. Return: true if one came. */
bool inproc_wait(struct inproc *h, struct inproc_q *q, struct sio_nvme_cpl *out);

/* Take every posted completion and ring the CQ head. Return: how many. */
int inproc_drain(struct inproc *h, struct inproc_q *q);

#endif
