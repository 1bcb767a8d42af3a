/* SPDX-License-Identifier: MIT */
#ifndef SMARTIO_NVME_CTRL_H
#define SMARTIO_NVME_CTRL_H

/**
 * DOC: NVMe controller
 *
 * The control path of the driver: reset and enable with CAP.TO bounded
 * waits, the admin queue pair, Identify, features, I/O queue creation and
 * deletion, log pages, and detection of a fatal controller (CSTS.CFS) or a
 * vanished one (CSTS reads all ones: device gone or link down).
 *
 * It uses only libsmartio (a borrowed device, its BAR0 segment, segments
 * mapped for the device), so it runs unchanged on every backend. Written to
 * the NVMe base specification, not to any one controller.
 *
 * Identify and log page layouts are libnvme's (<nvme/types.h>, header only).
 */

#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <nvme/types.h>
#include <smartio/smartio.h>
#include <smartio/nvme/types.h>
#include <smartio/nvme/queue.h>
#include <smartio/nvme/cmd.h>

#ifdef __cplusplus
extern "C" {
#endif

/* PCI class code of an NVMe controller (mass storage, NVM, NVMe). */
#define SIO_NVME_CLASS		0x010802u

/* Largest transfer one command carries, whatever MDTS allows: one PRP list
 * page of 4 KiB holds 512 entries. */
#define SIO_NVME_MAX_XFER	(2u << 20)

/* Admin queue depth the driver uses. */
#define SIO_NVME_ADMIN_DEPTH	32u

/* Default bound on one admin command. */
#define SIO_NVME_ADMIN_TIMEOUT_MS 5000u

struct sio_nvme_ctrl;

/**
 * struct sio_nvme_ctrl_opts - how to bring a controller up
 * @io_queues: I/O queue pairs to ask for with Set Features (0: as many as
 *	the controller grants, up to 65535)
 * @arbitration: NVME_CC_AMS_RR or NVME_CC_AMS_WRRU (libnvme's names for round
 *	robin and weighted round robin with urgent priority class)
 * @enable_cmb: turn on the controller memory buffer if it has one
 * @dbbuf: shadow doorbells (Doorbell Buffer Config), where the controller
 *	offers them and BAR0 is not confined: SIO_NVME_DBBUF_AUTO (0) where
 *	they pay, that is where an MMIO write costs more than a store to memory:
 *	a PCI function (vfio, uio), such as QEMU's controller, where each one
 *	exits to the hypervisor; not a device model on the simulated fabric,
 *	whose BAR0 is memory. _ON wherever offered, _OFF never.
 * @arb_cdw11: Set Features (Arbitration) after each enable: burst and the
 *	weighted classes' weights (sio_nvme_feat_arbitration()); 0 leaves the
 *	controller's
 * @irq_coalesce: Set Features (Interrupt Coalescing) after each enable:
 *	aggregation threshold (bits 7:0, entries, 0's based) and time (bits
 *	15:8, 100 us units); 0 leaves the controller's (no coalescing)
 */
struct sio_nvme_ctrl_opts {
	uint32_t io_queues;
	uint32_t arbitration;
	bool enable_cmb;
	int dbbuf;
	uint32_t arb_cdw11;
	uint32_t irq_coalesce;
};

/* Shadow doorbells: the controller's (struct sio_nvme_ctrl_opts @dbbuf) and a
 * queue pair's use of EventIdx (struct sio_nvme_qspec @dbbuf). */
#define SIO_NVME_DBBUF_AUTO	0
#define SIO_NVME_DBBUF_ON	1
#define SIO_NVME_DBBUF_OFF	2

/* Asynchronous events the controller driver keeps until taken */
#define SIO_NVME_AEN_MAX	16u

/* An Asynchronous Event Request's completion DW0 (NVMe 1.4, 5.2) */
#define SIO_NVME_AEN_TYPE(dw0)	((dw0) & 7u)		/* 0 error, 1 SMART, 2 notice, 6 I/O set */
#define SIO_NVME_AEN_INFO(dw0)	(((dw0) >> 8) & 0xffu)
#define SIO_NVME_AEN_LID(dw0)	(((dw0) >> 16) & 0xffu)	/* the log page to read */

/**
 * struct sio_nvme_cmb - a controller memory buffer
 * @bar: BAR holding it
 * @offset: offset of the CMB in that BAR
 * @size: bytes
 * @bus: its address as the controller sees it
 * @sqs: SQs may live in it
 * @cqs: CQs may live in it
 * @data: read/write data may live in it
 */
struct sio_nvme_cmb {
	int bar;
	uint64_t offset;
	uint64_t size;
	uint64_t bus;
	bool sqs, cqs, data;
};

/**
 * struct sio_nvme_ctrl_info - what the driver learnt bringing a controller up
 * @cap: CAP register
 * @vs: VS register
 * @mqes: largest queue, entries (CAP.MQES + 1)
 * @dstrd: CAP.DSTRD
 * @db_stride: bytes between doorbells, sio_nvme_db_stride(@dstrd)
 * @timeout_ms: CAP.TO in milliseconds
 * @page_size: memory page size in use (CC.MPS)
 * @max_xfer: largest transfer per command, bytes (MDTS, capped by the driver)
 * @io_queues: I/O queue pairs granted (Set Features, Number of Queues)
 * @nn: namespaces (Identify Controller NN)
 * @vwc: volatile write cache present
 * @oncs: optional NVM commands (Write Zeroes is bit 3)
 * @sgl: SGL support, Identify SGLS bits 1:0 (SIO_NVME_SGL_* in queue.h)
 * @dbbuf: shadow doorbells are configured (Doorbell Buffer Config)
 * @cmb: the CMB, when enabled (size 0 otherwise)
 * @mn: model number (NUL terminated, trailing spaces cut)
 * @sn: serial number (the same)
 * @fr: firmware revision (the same)
 */
struct sio_nvme_ctrl_info {
	uint64_t cap;
	uint32_t vs;
	uint32_t mqes;
	uint32_t dstrd;
	uint32_t db_stride;
	uint32_t timeout_ms;
	uint32_t page_size;
	uint32_t max_xfer;
	uint32_t io_queues;
	uint32_t nn;
	bool vwc;
	uint16_t oncs;
	uint8_t sgl;
	bool dbbuf;
	struct sio_nvme_cmb cmb;
	char mn[41];
	char sn[21];
	char fr[9];
};

/**
 * struct sio_nvme_ns - a namespace as the driver uses it
 * @nsid: namespace id
 * @nsze: size in logical blocks
 * @lba_size: bytes per logical block
 * @active: namespace exists (Identify Namespace returned a non-zero size)
 */
struct sio_nvme_ns {
	uint32_t nsid;
	uint64_t nsze;
	uint32_t lba_size;
	bool active;
};

/**
 * sio_nvme_ctrl_open() - reset a controller and bring it up
 * @dev: device borrowed exclusively
 * @opts: options (NULL for defaults)
 * @out: the controller
 *
 * Maps BAR0, disables the controller and waits for CSTS.RDY to clear,
 * places the admin queues, enables it and waits for CSTS.RDY (each wait
 * bounded by CAP.TO), then identifies it and asks for I/O queues.
 * Return: 0, -ETIMEDOUT, -ENODEV (registers read all ones), -EIO
 * (controller fatal status or a failed admin command), -errno.
 */
int sio_nvme_ctrl_open(struct sio_device *dev, const struct sio_nvme_ctrl_opts *opts,
		       struct sio_nvme_ctrl **out);

/**
 * sio_nvme_ctrl_close() - shut a controller down and free it
 * @c: controller (NULL is ignored)
 *
 * Sends a normal shutdown notification (bounded wait), then disables it.
 */
void sio_nvme_ctrl_close(struct sio_nvme_ctrl *c);

/**
 * sio_nvme_ctrl_info() - what is known about the controller
 * @c: controller
 * @out: filled in (cmb.size is 0 without a CMB)
 * Return: 0, or -EINVAL for a NULL argument.
 */
int sio_nvme_ctrl_info(const struct sio_nvme_ctrl *c, struct sio_nvme_ctrl_info *out);

/**
 * sio_nvme_ctrl_id() - Identify Controller data read at open
 * @c: controller
 */
const struct nvme_id_ctrl *sio_nvme_ctrl_id(const struct sio_nvme_ctrl *c);

/**
 * sio_nvme_ctrl_device() - the borrow the controller runs on
 * @c: controller
 */
struct sio_device *sio_nvme_ctrl_device(const struct sio_nvme_ctrl *c);

/**
 * sio_nvme_ctrl_regs() - BAR0 as mapped in this process
 * @c: controller
 */
volatile void *sio_nvme_ctrl_regs(const struct sio_nvme_ctrl *c);

/**
 * sio_nvme_ctrl_check() - is the controller alive?
 * @c: controller
 * Return: 0, -ENODEV when CSTS reads all ones (device gone or link down),
 * -EIO on controller fatal status.
 */
int sio_nvme_ctrl_check(struct sio_nvme_ctrl *c);

/**
 * sio_nvme_ctrl_admin() - run one admin command and wait for it
 * @c: controller
 * @cmd: command (its cid is assigned here)
 * @cpl: the completion (may be NULL)
 * @timeout_ms: bound on the wait, 0 for the default
 *
 * Return: 0; -EIO when the command completed with an error status (see
 * @cpl->status); -ETIMEDOUT; -ENODEV or -EIO when the controller died.
 */
int sio_nvme_ctrl_admin(struct sio_nvme_ctrl *c, const struct sio_nvme_cmd *cmd,
			struct sio_nvme_cpl *cpl, uint32_t timeout_ms);

/**
 * sio_nvme_ctrl_identify() - Identify into memory the controller can reach
 * @c: controller
 * @cns: Controller or Namespace Structure (libnvme's NVME_IDENTIFY_CNS_*)
 * @nsid: namespace id (for CNS 0 and 2)
 * @bus: bus address of 4 KiB (page aligned) as the controller sees it
 * @status: NVMe status (SCT << 8 | SC) on an error completion (may be NULL)
 */
int sio_nvme_ctrl_identify(struct sio_nvme_ctrl *c, uint8_t cns, uint32_t nsid,
			   uint64_t bus, uint16_t *status);

/**
 * sio_nvme_ctrl_ns() - read a namespace's size and block size
 * @c: controller
 * @nsid: namespace id
 * @out: filled in; @out->active is false for an inactive namespace
 */
int sio_nvme_ctrl_ns(struct sio_nvme_ctrl *c, uint32_t nsid, struct sio_nvme_ns *out);

/**
 * sio_nvme_ctrl_get_log() - Get Log Page into memory the controller reaches
 * @c: controller
 * @lid: log page id
 * @nsid: namespace (0xffffffff for the controller)
 * @bus: bus address (dword aligned)
 * @len: bytes, a multiple of 4, at most 8 KiB (two PRP entries)
 * @status: NVMe status on an error completion (may be NULL)
 */
int sio_nvme_ctrl_get_log(struct sio_nvme_ctrl *c, uint8_t lid, uint32_t nsid,
			  uint64_t bus, uint32_t len, uint16_t *status);

/**
 * sio_nvme_ctrl_get_features() - Get Features (current value)
 * @c: controller
 * @fid: feature id
 * @cdw11: feature specific
 * @result: completion DW0
 * @status: NVMe status on an error completion (may be NULL)
 */
int sio_nvme_ctrl_get_features(struct sio_nvme_ctrl *c, uint8_t fid, uint32_t cdw11,
			       uint32_t *result, uint16_t *status);

/**
 * sio_nvme_ctrl_get_features_ns() - Get Features of a namespace
 * @c: controller
 * @fid: feature id
 * @nsid: the namespace, for a feature sio_nvme_feat_ns_scoped() names (a
 *        controller refuses those with NSID 0); 0 for the others
 * @cdw11: feature specific
 * @result: completion DW0
 * @status: NVMe status on an error completion (may be NULL)
 */
int sio_nvme_ctrl_get_features_ns(struct sio_nvme_ctrl *c, uint8_t fid, uint32_t nsid,
				  uint32_t cdw11, uint32_t *result, uint16_t *status);

/**
 * sio_nvme_feat_ns_scoped() - whether a feature's value belongs to a namespace
 * @fid: feature id
 * Return: true for LBA Range Type, Error Recovery, the reservation features
 * and Namespace Write Protection.
 */
bool sio_nvme_feat_ns_scoped(uint8_t fid);

/**
 * sio_nvme_ctrl_passthru() - an admin command the library does not wrap
 * @c: controller (brought up by this process: a manager's clients have none)
 * @cmd: the command: opcode, nsid, cdw2..3, cdw10..15 as the caller wants
 *       them; its data pointer is set here (PRPs)
 * @bus: the data buffer's bus address, 4 KiB aligned (unused when @len is 0)
 * @len: bytes of data either way, at most 8192 (two PRP entries)
 * @result: completion DW0 (may be NULL)
 * @status: NVMe status on an error completion (may be NULL)
 *
 * Refuses Asynchronous Event Request, which completes only on an event.
 * Return: 0, -EINVAL, or what sio_nvme_ctrl_admin() returns.
 */
int sio_nvme_ctrl_passthru(struct sio_nvme_ctrl *c, struct sio_nvme_cmd *cmd, uint64_t bus,
			   uint32_t len, uint32_t *result, uint16_t *status);

/**
 * sio_nvme_ctrl_set_features() - Set Features
 * @c: controller
 * @fid: feature id
 * @cdw11: value
 * @result: completion DW0 (may be NULL)
 * @status: NVMe status on an error completion (may be NULL)
 */
int sio_nvme_ctrl_set_features(struct sio_nvme_ctrl *c, uint8_t fid, uint32_t cdw11,
			       uint32_t *result, uint16_t *status);

/**
 * sio_nvme_ctrl_create_qpair() - Create I/O CQ then SQ, physically contiguous
 * @c: controller
 * @qid: queue id (1..io_queues)
 * @size: entries (2..mqes)
 * @sq_bus: SQ address as the controller sees it (page aligned)
 * @cq_bus: CQ address (page aligned)
 * @prio: SQ priority for weighted round robin (0 urgent .. 3 low)
 * @status: NVMe status on an error completion (may be NULL)
 *
 * Interrupts are off: the owner polls. The CQ is deleted again if the SQ
 * cannot be created.
 */
int sio_nvme_ctrl_create_qpair(struct sio_nvme_ctrl *c, uint16_t qid, uint32_t size,
			       uint64_t sq_bus, uint64_t cq_bus, uint32_t prio,
			       uint16_t *status);

/**
 * sio_nvme_ctrl_delete_qpair() - Delete I/O SQ then CQ
 * @c: controller
 * @qid: queue id
 * Return: 0 or the first error; both deletions are tried.
 */
int sio_nvme_ctrl_delete_qpair(struct sio_nvme_ctrl *c, uint16_t qid);

/**
 * sio_nvme_ctrl_aer_arm() - submit one Asynchronous Event Request
 * @c: controller
 *
 * It stays outstanding until the controller has an event; its completion
 * is taken by sio_nvme_ctrl_aer_take() (or while an admin command waits).
 * Return: 0; -EBUSY at the controller's limit (AERL + 1) or a full admin
 * queue; -ENODEV once the admin queue is unusable.
 */
int sio_nvme_ctrl_aer_arm(struct sio_nvme_ctrl *c);

/**
 * sio_nvme_ctrl_aer_take() - events that completed requests, oldest first
 * @c: controller (the thread that issues its admin commands)
 * @dw0: filled with each completion's DW0 (SIO_NVME_AEN_TYPE() and friends)
 * @max: room in @dw0
 * Return: the number taken (each request that completed is no longer
 * outstanding: arm another).
 */
int sio_nvme_ctrl_aer_take(struct sio_nvme_ctrl *c, uint32_t *dw0, uint32_t max);

/**
 * sio_nvme_ctrl_aer_ack() - read the log page an event names, without
 *	Retain Asynchronous Event, so that the controller reports that type again
 * @c: controller
 * @dw0: the event (sio_nvme_ctrl_aer_take())
 * Return: 0 or -errno.
 */
int sio_nvme_ctrl_aer_ack(struct sio_nvme_ctrl *c, uint32_t dw0);

/** sio_nvme_ctrl_aer_armed() - Asynchronous Event Requests outstanding */
uint32_t sio_nvme_ctrl_aer_armed(const struct sio_nvme_ctrl *c);

/**
 * sio_nvme_status_str() - words for an NVMe status
 * @status: SCT << 8 | SC (SIO_NVME_STATUS_CODE of a completion)
 */
const char *sio_nvme_status_str(uint16_t status);

/**
 * sio_nvme_find_device() - pick an NVMe controller on the fabric
 * @f: fabric handle
 * @id: device id, or SIO_DEVICE_ANY for the first device of class 0x010802
 * @out: its description
 * Return: 0, -ENOENT (none, or no such device), -ENODEV (@id is not NVMe).
 */
int sio_nvme_find_device(struct sio_fabric *f, uint32_t id, struct sio_device_info *out);

/**
 * sio_nvme_describe_doorbells() - an NVMe controller's doorbells, for its lender
 * @bar0: its BAR0, mapped
 * @size: BAR0's bytes
 * @db: filled in: the doorbells from 0x1000 at CAP.DSTRD's stride, as many
 *	as BAR0 holds; the admin queue's two the confining manager's alone;
 *	the registers CAP to the CMB's for other kernels to read, CAP to ACQ
 *	of them read again as they change
 * @arg: unused (struct sio_lend_opts' @arg)
 *
 * The description struct sio_lend_opts' @doorbells takes (nvme-lend), so
 * that the relay of a fabric of several kernels forwards the queues'
 * doorbells.
 * Return: 0, or -EINVAL when BAR0 is too small to hold the admin queue's.
 */
int sio_nvme_describe_doorbells(volatile void *bar0, uint64_t size, struct sio_doorbells *db,
				void *arg);

#ifdef __cplusplus
}
#endif
#endif
