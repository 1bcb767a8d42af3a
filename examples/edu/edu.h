/* SPDX-License-Identifier: MIT */
#ifndef EDU_H
#define EDU_H

/*
 * A userspace driver for QEMU's edu device (PCI 1234:11e8), written only
 * against libsmartio's public API: the worked example of
 * docs/writing-a-driver.md. The same code drives the edu model on the
 * simulated fabric (edu-emu) and QEMU's edu through vfio.
 */
#include <stdbool.h>
#include <stdint.h>
#include <smartio/smartio.h>

/* The register map (QEMU docs/specs/edu.rst): BAR0, 1 MiB. */
#define EDU_VENDOR		0x1234
#define EDU_DEVICE		0x11e8
#define EDU_REG_ID		0x00	/* RO: 0xRRrr00ed, major RR, minor rr */
#define EDU_REG_LIVE		0x04	/* RW: reads back the bitwise inverse */
#define EDU_REG_FACT		0x08	/* RW: write n, read n! once not computing */
#define EDU_REG_STATUS		0x20	/* RW: */
#define  EDU_ST_COMPUTING	0x01u	/*   factorial under way (RO) */
#define  EDU_ST_IRQFACT		0x80u	/*   interrupt when the factorial is done */
#define EDU_REG_IRQ_STATUS	0x24	/* RO: causes raised and not acknowledged */
#define EDU_REG_IRQ_RAISE	0x60	/* WO: OR a cause in, and interrupt */
#define EDU_REG_IRQ_ACK		0x64	/* WO: clear causes */
#define  EDU_IRQ_FACT		0x001u
#define  EDU_IRQ_DMA		0x100u
#define EDU_REG_DMA_SRC		0x80	/* 64-bit */
#define EDU_REG_DMA_DST		0x88
#define EDU_REG_DMA_CNT		0x90
#define EDU_REG_DMA_CMD		0x98
#define  EDU_CMD_RUN		0x1u
#define  EDU_CMD_TO_RAM		0x2u	/* direction: 0 RAM -> edu, 1 edu -> RAM */
#define  EDU_CMD_IRQ		0x4u	/* raise EDU_IRQ_DMA when done */
#define EDU_BUF_OFF		0x40000u	/* the device's DMA buffer, as DMA sees it */
#define EDU_BUF_SIZE		4096u
/*
 * What one transfer may cover of it: QEMU 7.2 (Debian 12's) refuses a
 * transfer that reaches the buffer's last byte and aborts the whole VM
 * (hw_error in edu_check_range); later QEMU takes it. The driver keeps
 * off that byte, as a driver for hardware with an erratum would.
 */
#define EDU_XFER_MAX		(EDU_BUF_SIZE - 1)
#define EDU_DMA_BITS		28	/* QEMU's default dma_mask */

struct edu;

/**
 * struct edu_opts - how to open an edu device
 * @device: fabric device id, or SIO_DEVICE_ANY for the first 1234:11e8
 * @irq: sleep on the device's interrupt instead of polling its registers
 * @irq_kinds: which kinds will do (SIO_IRQ_F(SIO_IRQ_MSI)...; 0: any)
 * @dma_bits: address bits the device drives (0: 28, QEMU's default)
 * @timeout_ms: bound on every wait for the device (0: 5000)
 * @unchecked: hand the DMA engine bus addresses beyond the mask anyway, to
 *	show what the device does with them (it clamps); never in a real driver
 */
struct edu_opts {
	uint32_t device;
	bool irq;
	unsigned int irq_kinds;
	int dma_bits;
	int timeout_ms;
	bool unchecked;
};

/* Borrow the device exclusively, map BAR0, check the identification. */
int edu_open(struct sio_fabric *f, const struct edu_opts *o, struct edu **out);
/* Unmap what was mapped for it and give it back. */
void edu_close(struct edu *e);
struct sio_device *edu_device(struct edu *e);
/* The identification register (0x010000ed for version 1.0). */
uint32_t edu_id(struct edu *e);
/* Write a pattern to the liveness register and check it comes back inverted. */
int edu_live(struct edu *e, uint32_t pattern);
/* Diagnostic: store a pattern to the liveness register and read it back at
 * once, without waiting: QEMU's edu shows the inverse already, the
 * simulator's model not before it polls. */
int edu_live_once(struct edu *e, uint32_t pattern, uint32_t *read);
/* n! modulo 2^32, by the device. */
int edu_factorial(struct edu *e, uint32_t n, uint32_t *out);
/* Copy @len bytes at offset @off of @seg into the device's buffer at @buf_off. */
int edu_to_device(struct edu *e, struct sio_segment *seg, uint64_t off, uint32_t buf_off,
		  uint32_t len);
/* Copy @len bytes from the device's buffer at @buf_off to offset @off of @seg. */
int edu_from_device(struct edu *e, struct sio_segment *seg, uint64_t off, uint32_t buf_off,
		    uint32_t len);
/* The DMA engine itself: @len bytes between bus address @bus and the buffer. */
int edu_dma(struct edu *e, bool to_ram, uint64_t bus, uint32_t buf_off, uint32_t len);
/*
 * For its lender (struct sio_lend_opts' doorbells): edu's doorbells are
 * the two write-only interrupt registers, raise and acknowledge, and a
 * borrower of another kernel reads ID .. IRQ_STATUS, all of them live. The
 * registers that are written and read back (LIVE, FACT, the DMA engine's)
 * are no doorbells: a relay cannot forward them, so a driver of another
 * kernel reaches them only through a window onto BAR0.
 */
int edu_doorbells(volatile void *bar0, uint64_t size, struct sio_doorbells *db, void *arg);
/*
 * Raise interrupt cause @cause through the raise register, wait until
 * IRQ_STATUS shows it, acknowledge it and wait until it is clear: all of
 * edu that a borrower of another kernel reaches through its lender's relay.
 */
int edu_ring(struct edu *e, uint32_t cause);
/* Interrupts taken so far (0 when polling). */
uint64_t edu_irqs(struct edu *e);
/* The kind of interrupt in use (enum sio_irq_kind), 0 when polling. */
int edu_irq_kind(struct edu *e);

#endif
