/* SPDX-License-Identifier: MIT */
#ifndef NVME_EMU_HARNESS_H
#define NVME_EMU_HARNESS_H

/*
 * A host for conformance tests that knows only the NVMe specification: raw
 * register stores into BAR0 and hand-built 64-byte commands. It does not use
 * the project's NVMe driver, on purpose.
 */

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>
#include <nvme/types.h>
#include <smartio/smartio.h>
#include <smartio/nvme/cmd.h>

struct hmem {
	struct sio_segment *seg;
	uint8_t *va;
	uint64_t bus;
	uint64_t size;
};

struct hq {
	uint16_t qid;
	uint32_t size;
	struct hmem sq, cq;
	uint32_t sq_tail, cq_head;
	uint8_t phase;
	uint16_t cid;
	/* Doorbell Buffer Config: the shadow doorbells and EventIdx (whole buffers), or NULL */
	uint32_t *dbs;
	volatile uint32_t *eis;
	unsigned rings;		/* MMIO doorbell writes made while shadowed */
};

struct host {
	char fabric[SIO_NAME_MAX];
	bool owner;		/* created the fabric and the controller */
	pid_t emu;
	uint32_t devid;
	struct sio_fabric *f;
	struct sio_device *dev;
	struct sio_segment *bar0;
	volatile uint8_t *regs;
	uint32_t dstrd;
	struct hq admin;
};

/* Start a 2-node fabric and nvme-emu on node 0 with @args; join as @node. */
int h_start(struct host *h, int node, const char *args);
/* Join an existing fabric and controller from another process. */
int h_join(struct host *h, const char *fabric, uint32_t devid, int node);
void h_stop(struct host *h);
/* Stop the controller process only (SIGTERM) and start a new one with @args. */
int h_restart_emu(struct host *h, const char *args);

int h_mem(struct host *h, uint64_t size, struct hmem *m);

uint32_t h_rd32(struct host *h, uint32_t off);
uint64_t h_rd64(struct host *h, uint32_t off);
void h_wr32(struct host *h, uint32_t off, uint32_t v);
void h_wr64(struct host *h, uint32_t off, uint64_t v);

/* Wait (bounded) until (reg & mask) == want. */
bool h_wait_reg(struct host *h, uint32_t off, uint32_t mask, uint32_t want, int ms);

int h_enable(struct host *h, uint32_t qsize, uint32_t cc_extra);
int h_disable(struct host *h);

/* Move @q's SQ tail (or CQ head) from @old to @v: MMIO, or shadow + MMIO as EventIdx says. */
void h_doorbell(struct host *h, struct hq *q, bool cq, uint32_t v, uint32_t old);
void h_submit(struct host *h, struct hq *q, struct sio_nvme_cmd *cmd);
/* Next completion within @ms: 0 or -ETIMEDOUT. */
int h_reap(struct host *h, struct hq *q, struct sio_nvme_cpl *cpl, int ms);
/* Submit and wait: returns SCT << 8 | SC, or -ETIMEDOUT. */
int h_cmd(struct host *h, struct hq *q, struct sio_nvme_cmd *cmd, struct sio_nvme_cpl *cpl);
int h_admin(struct host *h, struct sio_nvme_cmd *cmd, struct sio_nvme_cpl *cpl);

/* Create I/O CQ and SQ @qid with @size entries, SQ priority @prio. */
int h_qpair(struct host *h, uint16_t qid, uint32_t size, int prio, struct hq *q);
int h_qpair_on(struct host *h, uint16_t qid, uint16_t cqid, uint32_t size, int prio,
	       struct hq *q, bool make_cq);

struct sio_nvme_cmd h_rw(uint8_t opc, uint32_t nsid, uint64_t slba, uint32_t nlb,
			 uint64_t prp1, uint64_t prp2);

#define ST(sct, sc) ((int)SIO_NVME_MK_STATUS(sct, sc))

/* The raw-command suites' controller: two namespaces (512 B and 4 KiB LBAs),
 * 8 queue pairs, queues of up to 256 entries, enabled with a 32-entry admin
 * queue. Asserts (Criterion) that it came up. */
void h_up_raw(struct host *h);

#endif
