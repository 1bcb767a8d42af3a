/* SPDX-License-Identifier: MIT */
#ifndef SMARTIO_NVME_TYPES_H
#define SMARTIO_NVME_TYPES_H

/**
 * DOC: NVMe wire types
 *
 * The 64-byte submission queue entry, the 16-byte completion queue entry,
 * PRP and SGL descriptors, written once and checked with static asserts.
 * Usable from host C, C++ and CUDA device code. Identify, log page and
 * register layouts come from libnvme's <nvme/types.h> (see ctrl.h).
 * All multi-byte fields are little endian on the wire; the supported hosts
 * (x86-64, aarch64 LE) and GPUs are little endian.
 */

#include <stdint.h>

#if defined(__CUDACC__)
#define SIO_HD __host__ __device__
#else
#define SIO_HD
#endif

#ifdef __cplusplus
#define SIO_STATIC_ASSERT(c, m) static_assert(c, m)
#else
#define SIO_STATIC_ASSERT(c, m) _Static_assert(c, m)
#endif

/* Admin opcodes */
enum {
	SIO_NVME_ADM_DELETE_SQ	= 0x00,
	SIO_NVME_ADM_CREATE_SQ	= 0x01,
	SIO_NVME_ADM_GET_LOG	= 0x02,
	SIO_NVME_ADM_DELETE_CQ	= 0x04,
	SIO_NVME_ADM_CREATE_CQ	= 0x05,
	SIO_NVME_ADM_IDENTIFY	= 0x06,
	SIO_NVME_ADM_ABORT	= 0x08,
	SIO_NVME_ADM_SET_FEAT	= 0x09,
	SIO_NVME_ADM_GET_FEAT	= 0x0a,
};

/* NVM I/O opcodes */
enum {
	SIO_NVME_CMD_FLUSH	= 0x00,
	SIO_NVME_CMD_WRITE	= 0x01,
	SIO_NVME_CMD_READ	= 0x02,
	SIO_NVME_CMD_WRITE_ZEROES = 0x08,
};

/* Identify CNS values */
enum {
	SIO_NVME_CNS_NS		= 0x00,
	SIO_NVME_CNS_CTRL	= 0x01,
	SIO_NVME_CNS_NS_ACTIVE	= 0x02,
};

/* Feature identifiers */
enum {
	SIO_NVME_FEAT_ARBITRATION = 0x01,
	SIO_NVME_FEAT_VWC	= 0x06,
	SIO_NVME_FEAT_NUM_QUEUES = 0x07,
};

/* Log page identifiers */
enum {
	SIO_NVME_LOG_ERROR	= 0x01,
	SIO_NVME_LOG_SMART	= 0x02,
};

/* Status code types (SCT) and the generic/command-specific codes we use */
enum {
	SIO_NVME_SCT_GENERIC	= 0x0,
	SIO_NVME_SCT_CMD	= 0x1,
	SIO_NVME_SCT_MEDIA	= 0x2,
	SIO_NVME_SCT_PATH	= 0x3,
	SIO_NVME_SCT_VENDOR	= 0x7,
};

enum {
	/* generic */
	SIO_NVME_SC_SUCCESS		= 0x00,
	SIO_NVME_SC_INVALID_OPCODE	= 0x01,
	SIO_NVME_SC_INVALID_FIELD	= 0x02,
	SIO_NVME_SC_CMDID_CONFLICT	= 0x03,
	SIO_NVME_SC_DATA_XFER_ERROR	= 0x04,
	SIO_NVME_SC_INTERNAL		= 0x06,
	SIO_NVME_SC_ABORT_REQ		= 0x07,
	SIO_NVME_SC_ABORT_SQ_DELETED	= 0x08,
	SIO_NVME_SC_INVALID_NS		= 0x0b,
	SIO_NVME_SC_PRP_OFFSET_INVALID	= 0x13,
	SIO_NVME_SC_LBA_RANGE		= 0x80,
	SIO_NVME_SC_CAP_EXCEEDED	= 0x81,
	SIO_NVME_SC_NS_NOT_READY	= 0x82,
	/* command specific (SCT 1) */
	SIO_NVME_SC_CQ_INVALID		= 0x00,
	SIO_NVME_SC_QID_INVALID		= 0x01,
	SIO_NVME_SC_QUEUE_SIZE		= 0x02,
	SIO_NVME_SC_INVALID_LOG_PAGE	= 0x09,
	SIO_NVME_SC_INVALID_QUEUE_DELETION = 0x0c,
	SIO_NVME_SC_FEATURE_NOT_SAVEABLE = 0x0d,
};

/* Controller registers (offsets into BAR0) */
enum {
	SIO_NVME_REG_CAP	= 0x00,
	SIO_NVME_REG_VS		= 0x08,
	SIO_NVME_REG_INTMS	= 0x0c,
	SIO_NVME_REG_INTMC	= 0x10,
	SIO_NVME_REG_CC		= 0x14,
	SIO_NVME_REG_CSTS	= 0x1c,
	SIO_NVME_REG_NSSR	= 0x20,
	SIO_NVME_REG_AQA	= 0x24,
	SIO_NVME_REG_ASQ	= 0x28,
	SIO_NVME_REG_ACQ	= 0x30,
	SIO_NVME_REG_CMBLOC	= 0x38,
	SIO_NVME_REG_CMBSZ	= 0x3c,
	SIO_NVME_REG_CMBMSC	= 0x50,
	SIO_NVME_REG_DBS	= 0x1000,
};

/* CAP fields */
#define SIO_NVME_CAP_MQES(cap)		((uint32_t)((cap) & 0xffff))
#define SIO_NVME_CAP_CQR(cap)		((uint32_t)(((cap) >> 16) & 0x1))
#define SIO_NVME_CAP_AMS(cap)		((uint32_t)(((cap) >> 17) & 0x3))
#define SIO_NVME_CAP_TO(cap)		((uint32_t)(((cap) >> 24) & 0xff))
#define SIO_NVME_CAP_DSTRD(cap)		((uint32_t)(((cap) >> 32) & 0xf))
#define SIO_NVME_CAP_NSSRS(cap)		((uint32_t)(((cap) >> 36) & 0x1))
#define SIO_NVME_CAP_CSS(cap)		((uint32_t)(((cap) >> 37) & 0xff))
#define SIO_NVME_CAP_MPSMIN(cap)	((uint32_t)(((cap) >> 48) & 0xf))
#define SIO_NVME_CAP_MPSMAX(cap)	((uint32_t)(((cap) >> 52) & 0xf))
#define SIO_NVME_CAP_CMBS(cap)		((uint32_t)(((cap) >> 57) & 0x1))

/* CC fields */
#define SIO_NVME_CC_EN			(1u << 0)
#define SIO_NVME_CC_CSS_SHIFT		4
#define SIO_NVME_CC_MPS_SHIFT		7
#define SIO_NVME_CC_AMS_SHIFT		11
#define SIO_NVME_CC_AMS_RR		0u
#define SIO_NVME_CC_AMS_WRR		1u
#define SIO_NVME_CC_SHN_SHIFT		14
#define SIO_NVME_CC_SHN_MASK		(3u << 14)
#define SIO_NVME_CC_SHN_NORMAL		(1u << 14)
#define SIO_NVME_CC_IOSQES_SHIFT	16
#define SIO_NVME_CC_IOCQES_SHIFT	20

/* CSTS fields */
#define SIO_NVME_CSTS_RDY		(1u << 0)
#define SIO_NVME_CSTS_CFS		(1u << 1)
#define SIO_NVME_CSTS_SHST_MASK		(3u << 2)
#define SIO_NVME_CSTS_SHST_CMPLT	(2u << 2)

/* CMBSZ fields */
#define SIO_NVME_CMBSZ_SQS		(1u << 0)
#define SIO_NVME_CMBSZ_CQS		(1u << 1)
#define SIO_NVME_CMBSZ_RDS		(1u << 3)
#define SIO_NVME_CMBSZ_WDS		(1u << 4)
#define SIO_NVME_CMBMSC_CRE		(1ull << 0)
#define SIO_NVME_CMBMSC_CMSE		(1ull << 1)

/* Command flags (CDW0 bits 15:14, PSDT) */
#define SIO_NVME_PSDT_PRP		0x0
#define SIO_NVME_PSDT_SGL_MPTR		0x1

/**
 * struct sio_nvme_sgl - an SGL descriptor (16 bytes)
 */
struct sio_nvme_sgl {
	uint64_t addr;
	uint32_t length;
	uint8_t rsvd[3];
	uint8_t type;		/* descriptor type << 4 | subtype */
};

/**
 * struct sio_nvme_cmd - a submission queue entry (64 bytes)
 * @opcode: command opcode
 * @flags: FUSE (bits 1:0) and PSDT (bits 7:6)
 * @cid: command identifier, unique per SQ among commands in flight
 * @nsid: namespace id
 * @cdw2, @cdw3: command specific
 * @mptr: metadata pointer
 * @prp1, @prp2: data pointer as PRP entries (or @sgl when PSDT says so)
 * @cdw10..@cdw15: command specific
 */
struct sio_nvme_cmd {
	uint8_t opcode;
	uint8_t flags;
	uint16_t cid;
	uint32_t nsid;
	uint32_t cdw2;
	uint32_t cdw3;
	uint64_t mptr;
	union {
		struct {
			uint64_t prp1;
			uint64_t prp2;
		};
		struct sio_nvme_sgl sgl;
	};
	uint32_t cdw10;
	uint32_t cdw11;
	uint32_t cdw12;
	uint32_t cdw13;
	uint32_t cdw14;
	uint32_t cdw15;
};

/**
 * struct sio_nvme_cpl - a completion queue entry (16 bytes)
 * @result: command specific (DW0)
 * @rsvd: DW1
 * @sq_head: the SQ head pointer as the controller has consumed it
 * @sq_id: the SQ the command came from
 * @cid: the command identifier
 * @status: phase tag (bit 0), SC (8:1), SCT (11:9), CRD, M, DNR (15)
 */
struct sio_nvme_cpl {
	uint32_t result;
	uint32_t rsvd;
	uint16_t sq_head;
	uint16_t sq_id;
	uint16_t cid;
	uint16_t status;
};

SIO_STATIC_ASSERT(sizeof(struct sio_nvme_sgl) == 16, "SGL descriptor is 16 bytes");
SIO_STATIC_ASSERT(sizeof(struct sio_nvme_cmd) == 64, "SQ entry is 64 bytes");
SIO_STATIC_ASSERT(sizeof(struct sio_nvme_cpl) == 16, "CQ entry is 16 bytes");

/* Status field helpers (the status word includes the phase bit) */
#define SIO_NVME_STATUS_P(st)		((st) & 1u)
#define SIO_NVME_STATUS_SC(st)		(((st) >> 1) & 0xffu)
#define SIO_NVME_STATUS_SCT(st)		(((st) >> 9) & 0x7u)
#define SIO_NVME_STATUS_DNR(st)		(((st) >> 15) & 1u)
/* status without phase: SCT << 8 | SC, the form drivers report */
#define SIO_NVME_STATUS_CODE(st)	((uint16_t)(((st) >> 1) & 0x7ffu))
#define SIO_NVME_MK_STATUS(sct, sc)	((uint16_t)((((sct) & 7u) << 8) | ((sc) & 0xffu)))

/** sio_nvme_prp_page_size() - memory page size from CC.MPS (4 KiB at MPS 0) */
static inline SIO_HD uint32_t sio_nvme_prp_page_size(uint32_t mps)
{
	return 1u << (12 + mps);
}

#endif
