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

/* The I/O hot path (queue.h): inlined whatever the compiler's size
 * heuristics say, since each call costs a frame on every command. */
#if defined(__CUDACC__)
#define SIO_HD_HOT __host__ __device__ __attribute__((always_inline))
#elif defined(__GNUC__)
#define SIO_HD_HOT __attribute__((always_inline))
#else
#define SIO_HD_HOT
#endif

#ifdef __cplusplus
#define SIO_STATIC_ASSERT(c, m) static_assert(c, m)
#else
#define SIO_STATIC_ASSERT(c, m) _Static_assert(c, m)
#endif

/*
 * The CUDA-safe minimum of the specification's names: what queue.h, cmd.h
 * and gpu.h need, without a dependency. Host-only code takes every other
 * name (registers, CAP/CC/CSTS fields, identify, features, log pages,
 * status codes, opcodes) from libnvme's <nvme/types.h>.
 */

/* Admin opcodes the command builders (cmd.h) take */
enum {
	SIO_NVME_ADM_DELETE_SQ	= 0x00,
	SIO_NVME_ADM_CREATE_SQ	= 0x01,
	SIO_NVME_ADM_GET_LOG	= 0x02,
	SIO_NVME_ADM_DELETE_CQ	= 0x04,
	SIO_NVME_ADM_CREATE_CQ	= 0x05,
	SIO_NVME_ADM_IDENTIFY	= 0x06,
	SIO_NVME_ADM_SET_FEAT	= 0x09,
	SIO_NVME_ADM_GET_FEAT	= 0x0a,
};

/* NVM I/O opcodes the hot path (queue.h, gpu.h) issues */
enum {
	SIO_NVME_CMD_WRITE	= 0x01,
	SIO_NVME_CMD_READ	= 0x02,
};

/* The doorbells' offset in BAR0 (libnvme names no such register) */
#define SIO_NVME_REG_DBS		0x1000u

/* Command flags (CDW0 bits 15:14, PSDT) */
#define SIO_NVME_PSDT_PRP		0x0
#define SIO_NVME_PSDT_SGL_MPTR		0x1

/* SGL descriptor types (the high nibble of sio_nvme_sgl.type; subtype 0, Address) */
#define SIO_NVME_SGL_DATA		0x0
#define SIO_NVME_SGL_BIT_BUCKET		0x1
#define SIO_NVME_SGL_SEGMENT		0x2
#define SIO_NVME_SGL_LAST_SEGMENT	0x3
#define SIO_NVME_SGL_TYPE(t)		((uint8_t)((t) << 4))

/**
 * struct sio_nvme_sgl - an SGL descriptor (16 bytes)
 * @addr: where the data (or the next segment) starts
 * @length: its bytes
 * @rsvd: reserved, zero
 * @type: descriptor type << 4 | subtype (SIO_NVME_SGL_TYPE())
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
 * @cdw2: command specific
 * @cdw3: command specific
 * @mptr: metadata pointer
 * @prp1: data pointer, first PRP entry
 * @prp2: data pointer, second PRP entry or PRP list
 * @sgl: the data pointer as one SGL descriptor, when PSDT says so
 * @cdw10: command specific
 * @cdw11: command specific
 * @cdw12: command specific
 * @cdw13: command specific
 * @cdw14: command specific
 * @cdw15: command specific
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

/* Entry sizes as log2, the form CC.IOSQES and CC.IOCQES take */
#define SIO_NVME_SQES			6
#define SIO_NVME_CQES			4
SIO_STATIC_ASSERT(sizeof(struct sio_nvme_cmd) == 1u << SIO_NVME_SQES, "CC.IOSQES");
SIO_STATIC_ASSERT(sizeof(struct sio_nvme_cpl) == 1u << SIO_NVME_CQES, "CC.IOCQES");

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
