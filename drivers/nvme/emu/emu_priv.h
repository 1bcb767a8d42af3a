/* SPDX-License-Identifier: MIT */
#ifndef SIO_NVME_EMU_PRIV_H
#define SIO_NVME_EMU_PRIV_H

/* State of the emulated controller, shared by ctrl.c, admin.c, io.c, prp.c. */

#include <stdatomic.h>
#include <sys/uio.h>
#include <liburing.h>
#include <nvme/types.h>
#include <smartio/fabric.h>		/* errors: sio_err_set() */
#include <smartio/nvme/types.h>
#include <smartio/nvme/queue.h>	/* doorbell offsets */
#include <smartio/nvme/model.h>	/* decode and checks shared with the GPU model */
#include "clock.h"
#include "emu.h"
#include "arb.h"

#define EMU_PAGE		4096u
#define EMU_MPSMAX		4u	/* 64 KiB memory pages */
#define EMU_CAP_TO		15u	/* 7.5 s, as QEMU: the default */
#define EMU_ELOG_ENTRIES	64u
#define EMU_AERL		3u
#define EMU_AEV_MAX		8u	/* events waiting to be reported */
#define EMU_CMB_BAR		2
#define EMU_SGL_PIECES		256u	/* data blocks one SGL command may use */
#define EMU_DB_IDLE		0xffffffffu	/* an MMIO doorbell read since its last ring (dbbuf.c) */
/* Temperatures in kelvin: the composite reads a steady 40 C */
#define EMU_TEMP		313u
#define EMU_WCTEMP		343u
#define EMU_CCTEMP		373u
/* The specification it follows: NVMe 1.4 */
#define EMU_VS			(NVME_SET(1u, VS_MJR) | NVME_SET(4u, VS_MNR))

/* Internal status: SCT << 8 | SC, plus the Do Not Retry bit. */
#define EMU_DNR			SIO_NVME_MODEL_DNR
#define EMU_ST(sct, sc)		((uint16_t)(SIO_NVME_MK_STATUS(sct, sc) | EMU_DNR))
#define EMU_OK			0u
#define EMU_PENDING		0xffffu	/* completion follows from io_uring */
#define EMU_ST_OPCODE		EMU_ST(NVME_SCT_GENERIC, NVME_SC_INVALID_OPCODE)
#define EMU_ST_FIELD		EMU_ST(NVME_SCT_GENERIC, NVME_SC_INVALID_FIELD)
#define EMU_ST_XFER		SIO_NVME_MK_STATUS(NVME_SCT_GENERIC, NVME_SC_DATA_XFER_ERROR)
#define EMU_ST_INTERNAL		SIO_NVME_MK_STATUS(NVME_SCT_GENERIC, NVME_SC_INTERNAL)
#define EMU_ST_NS		EMU_ST(NVME_SCT_GENERIC, NVME_SC_INVALID_NS)
#define EMU_ST_PRP_OFF		EMU_ST(NVME_SCT_GENERIC, NVME_SC_PRP_INVALID_OFFSET)
#define EMU_ST_LBA		EMU_ST(NVME_SCT_GENERIC, NVME_SC_LBA_RANGE)
#define EMU_ST_CQ_INVALID	EMU_ST(NVME_SCT_CMD_SPECIFIC, NVME_SC_CQ_INVALID)
#define EMU_ST_QID		EMU_ST(NVME_SCT_CMD_SPECIFIC, NVME_SC_QID_INVALID)
#define EMU_ST_QSIZE		EMU_ST(NVME_SCT_CMD_SPECIFIC, NVME_SC_QUEUE_SIZE)
#define EMU_ST_AER_LIMIT	EMU_ST(NVME_SCT_CMD_SPECIFIC, NVME_SC_ASYNC_LIMIT)
#define EMU_ST_LOG_PAGE		EMU_ST(NVME_SCT_CMD_SPECIFIC, NVME_SC_INVALID_LOG_PAGE)
#define EMU_ST_IV		EMU_ST(NVME_SCT_CMD_SPECIFIC, NVME_SC_INVALID_VECTOR)
#define EMU_ST_Q_DELETE		EMU_ST(NVME_SCT_CMD_SPECIFIC, NVME_SC_INVALID_QUEUE)
#define EMU_ST_NOT_SAVEABLE	EMU_ST(NVME_SCT_CMD_SPECIFIC, NVME_SC_FEATURE_NOT_SAVEABLE)

struct emu_cq {
	bool valid;
	uint8_t phase;
	uint16_t qid;
	uint32_t size;		/* entries */
	uint32_t head;		/* from the host's head doorbell */
	uint32_t tail;		/* next slot we post to */
	uint32_t reserved;	/* slots promised to fetched commands */
	uint32_t nsq;		/* SQs completing here */
	uint64_t base;
	uint32_t db_mmio;	/* the MMIO head doorbell as last seen (shadow doorbells) */
	bool db_used;		/* its shadow slot has left 0: the host uses it */
	bool ien;		/* interrupts enabled, on vector @iv */
	uint16_t iv;
	uint32_t irq_pending;	/* entries posted since its last interrupt */
	uint64_t irq_since;	/* when the first of them was (coalescing time) */
	uint32_t irq_first;	/* and its slot: the host's head past it, it polls */
	bool noptr;		/* memory with no host pointer (GPU): in a DMA
				 * batch, entries are stored at its end */
};

struct emu_sq {
	bool valid;
	uint16_t qid;
	uint32_t size;
	uint32_t head;
	uint32_t tail;
	uint32_t inflight;
	uint64_t base;
	struct emu_cq *cq;
	uint32_t db_mmio;	/* shadow doorbells: the MMIO tail doorbell as last seen */
	bool db_look;		/* read the shadow tail on the next pass */
	bool db_used;		/* its shadow slot has left 0: the host uses it */
	struct emu_arb_q *arb;	/* its class, credit and counters: in @arbpage */
	bool batch;		/* memory with no host pointer (GPU): fetched
				 * EMU_FETCH_BATCH entries per DMA */
	uint32_t ahead_n;	/* entries read ahead from the head, in
				 * emu->ahead[qid] (zeroed with the SQ) */
	uint32_t ahead_next;	/* the next of them to start */
};

/* SQ entries one DMA fetches from an SQ in memory with no host pointer:
 * on the GPU path each DMA is a CUDA copy waited for, whatever its size. */
#define EMU_FETCH_BATCH		32u

/* A contiguous piece of a PRP-described transfer. */
struct emu_seg {
	uint64_t bus;
	uint32_t len;
};

struct emu_ns {
	uint64_t off;		/* in the backing store */
	uint64_t nlb;
	uint32_t lba_shift;
	uint16_t tler;		/* Error Recovery, per namespace */
	uint8_t eui64[8];	/* identifiers, big-endian as Identify reports them */
	uint8_t nguid[16];
	uint8_t uuid[16];
};

/* An asynchronous event waiting for a request (aer.c). */
struct emu_aev {
	uint8_t type, info, lid;
};

/* A file I/O command in flight. */
struct emu_req {
	struct emu_sq *sq;
	uint16_t cid;
	uint8_t opcode;
	uint32_t nsid;
	uint64_t slba;
	uint64_t bytes;
	int niov;
	struct iovec *iov;
	struct emu_req *next_free;
};

/*
 * A completion whose command's data may not have landed yet (a batch of
 * DMA into GPU memory): posted once the batch has (ctrl.c).
 */
#define EMU_HELD_MAX		512u

struct emu_held {
	uint64_t at;		/* the CQ slot's bus address */
	uint32_t result, sqhd;	/* DW0, DW2 */
	uint16_t cid, status;
	uint8_t phase;
};

struct sio_nvme_emu {
	struct sio_nvme_emu_config cfg;
	struct sio_nvme_emu_dma dma;
	struct sio_fabric *fabric;
	struct sio_devreg *reg;
	int64_t devid;
	volatile uint8_t *bar0;
	uint64_t bar0_size;
	uint8_t *cmb;		/* BAR2 mapped here (fabdma.c), or NULL */
	uint64_t cap;
	uint32_t db_stride;	/* bytes between doorbells, from CAP.DSTRD */

	/* controller state */
	uint32_t cc;		/* CC as last acted on */
	bool enabled;
	uint64_t cmbmsc;
	uint32_t page_size;
	uint32_t mdts_bytes;
	uint32_t max_segs;
	uint32_t nsqa, ncqa;	/* allocated I/O queues (Number of Queues) */
	uint32_t arb;		/* Arbitration feature, CDW11 layout */
	bool wce;
	bool ioq_created;	/* an I/O queue was created since the last reset */
	uint32_t power_mgmt;	/* the other features, CDW11 layout (features.c) */
	uint16_t temp_over, temp_under;
	uint32_t irq_coalesce;
	uint32_t write_atomic;
	uint32_t async_cfg;
	uint64_t ivc_cd[(SIO_NVME_EMU_MAX_QUEUES + 64) / 64];	/* per vector: Coalescing Disable */
	bool wrr;
	uint32_t aer_outstanding;
	uint16_t aer_cid[EMU_AERL + 1];	/* the held requests */
	uint32_t aer_masked;	/* event types reported and not yet acknowledged by a log read */
	struct emu_aev aev[EMU_AEV_MAX];
	uint32_t naev;
	bool aer_kick;		/* something changed: try to report */
	bool temp_warned;	/* the temperature warning was already true */
	bool ns_reported;	/* the namespace change was raised */
	uint32_t changed[SIO_NVME_EMU_MAX_NS * 2];	/* Changed Namespace List */
	uint32_t nchanged;
	uint64_t dbs, eis;	/* Doorbell Buffer Config: shadow doorbells, EventIdx (or 0) */
	struct emu_arb arbiter;	/* from CC.AMS and @arb */
	struct emu_arb_page *arbpage;	/* per qid; a segment once attached (ctrl.c) */
	struct sio_segment *arbseg;
	uint64_t polls;
	uint32_t csts;		/* CSTS as published */
	bool resetting;		/* completions are dropped while set */
	bool batching;		/* in a DMA batch: completions may be held */
	uint32_t nheld;
	struct emu_held held[EMU_HELD_MAX];
	int fail_req;		/* sio_nvme_emu_fail() asked, from any thread */
	bool failed;		/* CSTS.CFS set: no command is processed until a reset */

	struct emu_sq *sq;	/* [0..max_qpairs], 0 is admin */
	struct emu_cq *cq;
	uint32_t nq;		/* max_qpairs + 1 */
	struct sio_nvme_cmd **ahead;	/* [nq]: batched SQs' entries read
					 * ahead, allocated at first use */
	struct emu_sq **active;	/* valid I/O SQs in qid order */
	uint32_t nactive;

	/* namespaces and backing */
	int nns;
	struct emu_ns ns[SIO_NVME_EMU_MAX_NS];
	uint8_t *ram;		/* RAM backing, or NULL */
	int fd;			/* file backing, or -1 */
	uint64_t backing_size;
	struct io_uring ring;
	bool ring_ok;
	uint32_t to_submit;
	uint32_t inflight;	/* file commands in flight */
	struct emu_req *reqs;
	struct emu_req *free_reqs;
	struct iovec *iov_pool;

	struct emu_seg *segs;	/* scratch for synchronous transfers */
	uint8_t *scratch;	/* admin data buffer, mdts_bytes */

	/* logs */
	uint64_t err_count;
	struct nvme_error_log_page *elog;	/* ring, newest at elog_next-1 */
	uint32_t elog_next;
	uint64_t units_read, units_written;	/* 512-byte units */
	uint64_t host_reads, host_writes;
	uint64_t busy_ns, start_ns;
	uint64_t irqs;		/* vectors signalled (sio_nvme_emu_irqs()) */
};

static inline uint32_t cq_used(const struct emu_cq *cq)
{
	return cq->tail >= cq->head ? cq->tail - cq->head : cq->size - cq->head + cq->tail;
}

/* Slots left for completions not yet promised to a fetched command. */
static inline uint32_t cq_room(const struct emu_cq *cq)
{
	uint32_t busy = cq_used(cq) + cq->reserved;

	return busy + 1 >= cq->size ? 0 : cq->size - 1 - busy;
}

static inline uint32_t db_off(const struct sio_nvme_emu *emu, uint32_t qid, bool cq)
{
	return sio_nvme_doorbell_offset(qid, cq, emu->db_stride);
}

/* An MMIO doorbell as the host last stored it (BAR0 is shared memory). */
static inline uint32_t rd32_db(struct sio_nvme_emu *emu, uint32_t qid, bool cq)
{
	return __atomic_load_n((uint32_t *)(emu->bar0 + db_off(emu, qid, cq)), __ATOMIC_RELAXED);
}

/* fabdma.c */
int emu_fabric_dma(struct sio_nvme_emu *emu);

/* ctrl.c */
void emu_post(struct sio_nvme_emu *emu, struct emu_sq *sq, uint16_t cid,
	      uint16_t status, uint32_t result, const struct sio_nvme_cmd *cmd);
void emu_drain(struct sio_nvme_emu *emu, struct emu_sq *only);
void emu_active_add(struct sio_nvme_emu *emu, struct emu_sq *sq);
void emu_active_del(struct sio_nvme_emu *emu, struct emu_sq *sq);
uint32_t emu_cc(struct sio_nvme_emu *emu);

/* admin.c */
uint16_t emu_admin(struct sio_nvme_emu *emu, const struct sio_nvme_cmd *cmd,
		   uint32_t *result);
void emu_ns_ids(struct sio_nvme_emu *emu, uint64_t seed);

/* features.c */
void emu_features_reset(struct sio_nvme_emu *emu);
uint16_t emu_get_features(struct sio_nvme_emu *emu, const struct sio_nvme_cmd *cmd,
			  uint32_t *result);
uint16_t emu_set_features(struct sio_nvme_emu *emu, const struct sio_nvme_cmd *cmd,
			  uint32_t *result);

/* Interrupt vectors a CQ may name: one per I/O queue pair, plus the admin queue's. */
static inline uint32_t emu_vectors(const struct sio_nvme_emu *emu)
{
	return emu->cfg.max_qpairs + 1;
}

/* irq.c */
int emu_irq_flush(struct sio_nvme_emu *emu);

/* io.c */
uint16_t emu_io(struct sio_nvme_emu *emu, struct emu_sq *sq,
		const struct sio_nvme_cmd *cmd);
int emu_backing_open(struct sio_nvme_emu *emu);
void emu_backing_close(struct sio_nvme_emu *emu);
int emu_reap(struct sio_nvme_emu *emu, bool wait);
int emu_flush_all(struct sio_nvme_emu *emu);

/* prp.c */
int emu_prp_segs(struct sio_nvme_emu *emu, uint64_t prp1, uint64_t prp2,
		 uint64_t len, struct emu_seg *segs, uint16_t *status);
int emu_dptr_segs(struct sio_nvme_emu *emu, const struct sio_nvme_cmd *cmd, uint64_t len,
		  struct emu_seg *segs, uint16_t *status);
uint16_t emu_xfer(struct sio_nvme_emu *emu, const struct sio_nvme_cmd *cmd,
		  void *buf, uint64_t len, bool to_host);

/* dsm.c */
uint16_t emu_nvm_optional(struct sio_nvme_emu *emu, const struct sio_nvme_cmd *cmd);
uint16_t emu_format(struct sio_nvme_emu *emu, const struct sio_nvme_cmd *cmd);
int emu_deallocate(struct sio_nvme_emu *emu, uint64_t off, uint64_t len);
int emu_zero_file(struct sio_nvme_emu *emu, uint64_t off, uint64_t len);

/* aer.c */
uint16_t emu_aer_request(struct sio_nvme_emu *emu, const struct sio_nvme_cmd *cmd);
void emu_aer_poll(struct sio_nvme_emu *emu);
void emu_aer_settings(struct sio_nvme_emu *emu);
void emu_aer_log_read(struct sio_nvme_emu *emu, uint32_t lid, bool rae);
void emu_aer_reset(struct sio_nvme_emu *emu);
bool emu_temp_warning(const struct sio_nvme_emu *emu);
uint32_t emu_changed_ns_log(struct sio_nvme_emu *emu, uint8_t *buf);
int emu_ns_state(struct sio_nvme_emu *emu);

/* dbbuf.c */
uint16_t emu_dbbuf_config(struct sio_nvme_emu *emu, const struct sio_nvme_cmd *cmd);
void emu_dbbuf_queue(struct sio_nvme_emu *emu, uint32_t qid, bool cq);
void emu_dbbuf_doorbells(struct sio_nvme_emu *emu, struct emu_sq *sq, uint32_t *t, uint32_t *h);

/* sgl.c */
int emu_sgl_segs(struct sio_nvme_emu *emu, const struct sio_nvme_sgl *sgl1, uint64_t len,
		 struct emu_seg *segs, uint16_t *status);

#endif
