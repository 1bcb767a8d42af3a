/* SPDX-License-Identifier: MIT */
#ifndef SIO_VFIO_PROTO_H
#define SIO_VFIO_PROTO_H

/*
 * What a borrower asks a vfio lender over its unix socket (SOCK_SEQPACKET,
 * one request, one reply). BAR replies carry the vfio device fd by
 * SCM_RIGHTS, so the borrower mmaps the BAR itself and MMIO has no software
 * in between. Mappings belong to the connection: when it closes (exit or
 * crash) the lender unmaps them all.
 */
#include <stdint.h>

enum sio_vfio_op {
	SIO_VFIO_OP_BAR = 1,	/* @bar -> device fd, region offset, size */
	SIO_VFIO_OP_MAP,	/* segment (@node, @seg) -> @iova; or, with @bar >= 0,
				 * BAR @bar of device @seg -> its bus address */
	SIO_VFIO_OP_UNMAP,	/* undo the MAP of the same (@node, @seg, @bar) */
	SIO_VFIO_OP_IRQ,	/* enable @size vectors of kinds @seg (SIO_IRQ_F bits), one
				 * eventfd each by SCM_RIGHTS -> kind in @offset; @size 0
				 * disables. The connection holds them until it closes. */
	SIO_VFIO_OP_IRQ_UNMASK,	/* re-arm INTx once the device is serviced */
};

struct sio_vfio_req {
	uint32_t op;
	int32_t bar;
	int32_t node;
	uint32_t seg;
	uint64_t size;
	uint64_t iova;
	uint64_t mask;		/* MAP: the device's DMA mask (0: all 64 bits) */
};

struct sio_vfio_rep {
	int32_t status;		/* 0 or -errno */
	uint32_t pad;
	uint64_t offset;
	uint64_t size;
	uint64_t iova;
	char msg[320];		/* the lender's error message */
};

#endif
