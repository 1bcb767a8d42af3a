/* SPDX-License-Identifier: MIT */
#ifndef SIO_EDU_EMU_H
#define SIO_EDU_EMU_H

/*
 * A model of QEMU's educational PCI device "edu" (1234:11e8) on the
 * simulated fabric, after QEMU's docs/specs/edu.rst and hw/misc/edu.c:
 * identification, liveness check, factorial unit, interrupt raise and
 * acknowledge, and a DMA engine between bus addresses and a 4 KiB buffer
 * at BAR offset 0x40000, its addresses clamped to the DMA mask (28 bits by
 * default). docs/writing-a-driver.md lists where it differs from QEMU.
 */
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <smartio/smartio.h>

struct sio_edu_emu;

struct sio_edu_emu_config {
	uint64_t dma_mask;	/* 0: QEMU's default, 2^28 - 1 */
	uint32_t dma_ms;	/* a DMA takes this long (QEMU's timer: 100 ms); 0: at once */
	uint32_t poll_ms;	/* poll the BAR only every this many ms; 0: adaptive */
	bool chassis;
	const char *name;	/* device label, default "edu" */
};

/* Register a new edu device on @f's node. */
int sio_edu_emu_create(struct sio_fabric *f, const struct sio_edu_emu_config *cfg,
		       struct sio_edu_emu **out);
/* Serve what the driver wrote since the last call: > 0 when there was work. */
int sio_edu_emu_poll(struct sio_edu_emu *e);
/* Poll until *@stop or the fabric is destroyed, backing off when idle. */
int sio_edu_emu_run(struct sio_edu_emu *e, volatile sig_atomic_t *stop);
uint32_t sio_edu_emu_device_id(const struct sio_edu_emu *e);
/* Unregister the device (borrowers get SIO_EV_DEVICE_GONE) and free. */
void sio_edu_emu_destroy(struct sio_edu_emu *e);

#endif
