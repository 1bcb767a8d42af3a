/* SPDX-License-Identifier: MIT */
#ifndef SMARTIO_IRQ_H
#define SMARTIO_IRQ_H

/**
 * DOC: interrupts
 *
 * A borrower that would rather sleep than poll enables the device's
 * interrupts and waits for them. Each vector is a file descriptor that polls
 * readable when the vector fired, so it can sit in the same epoll set as the
 * fabric's event fd (sio_event_fd()) and anything else the program waits on.
 * sio_device_irq_wait() takes what fired (a count: interrupts coalesce, as
 * they do on hardware). The device still has its own interrupt status: the
 * driver reads it and acknowledges in the device, then re-arms the vector
 * with sio_device_irq_ack() (which INTx needs, and is harmless otherwise).
 *
 * On vfio the vectors are the function's MSI-X, MSI or INTx interrupts,
 * signalled by the kernel to an eventfd. On the simulated fabric a device
 * model raises a vector with sio_devreg_irq_raise() and it arrives as a
 * message, as an MSI would, at every borrower that enabled it.
 *
 * Poll when the device completes faster than a wake-up costs (an NVMe queue
 * at depth, a doorbell answered in microseconds); wait when completions are
 * rare or slow (a DMA engine's end of transfer, a firmware command), or
 * when the CPU has other work.
 */

#include <stdint.h>
#include <smartio/device.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Most vectors one borrow enables. */
#define SIO_IRQ_MAX_VECS	32

/* Interrupt kinds, and the bits of sio_device_irq_enable()'s @kinds. */
enum sio_irq_kind {
	SIO_IRQ_INTX = 1,	/* legacy line interrupt (one vector) */
	SIO_IRQ_MSI = 2,	/* message signalled */
	SIO_IRQ_MSIX = 3,	/* message signalled, per-vector table */
};
#define SIO_IRQ_F(kind)		(1u << (kind))
#define SIO_IRQ_F_ANY		0u

/**
 * sio_device_irq_enable() - enable a device's interrupts for this borrow
 * @dev: borrow handle
 * @kinds: the kinds acceptable, SIO_IRQ_F(SIO_IRQ_MSI) | ...; SIO_IRQ_F_ANY
 *	takes the best the device has (MSI-X, then MSI, then INTx)
 * @nvec: vectors wanted, 1..SIO_IRQ_MAX_VECS (INTx has one)
 *
 * One borrow at a time holds a real function's interrupts.
 * Return: the kind enabled (enum sio_irq_kind), or -EOPNOTSUPP (the device
 * or its backend has none of @kinds, or fewer than @nvec vectors), -EBUSY
 * (enabled already), -EINVAL.
 */
int sio_device_irq_enable(struct sio_device *dev, unsigned int kinds, int nvec);

/**
 * sio_device_irq_enable_one() - enable one vector of a device's interrupts
 * @dev: borrow handle
 * @kinds: as sio_device_irq_enable()
 * @vec: the vector, 0..SIO_IRQ_MAX_VECS - 1
 *
 * For a borrower that shares the device with others and is given one
 * vector of it (an NVMe client's CQ): where the backend can, it receives
 * @vec alone, not the vectors below it that belong to the others; where it
 * cannot (vfio enables a function's vectors from 0), the others' arrive on
 * fds nobody waits on. Only @vec may be waited on.
 * Return: as sio_device_irq_enable().
 */
int sio_device_irq_enable_one(struct sio_device *dev, unsigned int kinds, int vec);

/**
 * sio_device_irq_fd() - the file descriptor of vector @vec
 * @dev: borrow handle with interrupts enabled
 * @vec: vector index
 *
 * It polls readable (POLLIN, EPOLLIN) while interrupts of @vec wait to be
 * taken; it belongs to the library: do not read or close it.
 * Return: the fd, or -EINVAL (no such vector enabled).
 */
int sio_device_irq_fd(struct sio_device *dev, int vec);

/**
 * sio_device_irq_wait() - take the interrupts of vector @vec
 * @dev: borrow handle with interrupts enabled
 * @vec: vector index
 * @timeout_ms: how long to sleep for one: 0 takes what is there without
 *	sleeping, -1 waits without bound
 *
 * Return: the number of interrupts taken (at least 1), -ETIMEDOUT (none
 * came; -EAGAIN with @timeout_ms 0), -EINVAL, -EINTR (a signal came).
 */
int sio_device_irq_wait(struct sio_device *dev, int vec, int timeout_ms);

/**
 * sio_device_irq_ack() - re-arm vector @vec after the device was serviced
 * @dev: borrow handle with interrupts enabled
 * @vec: vector index
 *
 * Call it once the device's own interrupt cause is cleared. A level (INTx)
 * interrupt is masked when it fires until then; for message interrupts it
 * does nothing.
 */
int sio_device_irq_ack(struct sio_device *dev, int vec);

/**
 * sio_device_irq_disable() - undo sio_device_irq_enable()
 * @dev: borrow handle (interrupts not enabled: nothing happens)
 *
 * sio_device_close() does it too.
 */
void sio_device_irq_disable(struct sio_device *dev);

/**
 * sio_irq_kind_name() - "INTx", "MSI", "MSI-X" or "none"
 * @kind: enum sio_irq_kind
 */
const char *sio_irq_kind_name(int kind);

#ifdef __cplusplus
}
#endif
#endif
