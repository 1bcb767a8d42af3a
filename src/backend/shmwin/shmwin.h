/* SPDX-License-Identifier: MIT */
#ifndef SIO_SHMWIN_H
#define SIO_SHMWIN_H

/*
 * The shmwin fabric backend: a window fabric (winfab/) whose memory is one
 * PCI window that every kernel maps whole (the BAR2 of a QEMU ivshmem
 * function in each guest; on one host, a file stands in for it). The
 * window holds the window fabric's header, the core's registry, then one
 * pool for the segments of every node. Its memory is one host's RAM, so
 * atomic operations work from every kernel: the lock is winfab's lease.
 *
 * How a node maps the window is one replaceable piece (window.c): a file,
 * a PCI BAR through sysfs (resourceN, whatever driver holds the function),
 * or another source added there (UIO) -- an fd and an offset to mmap.
 * Where the window is an ivshmem-doorbell function, notifications ring the
 * other kernels' doorbells (shmwin.c).
 */

#include <stdbool.h>
#include <stdint.h>
#include "winfab/winfab.h"

/* Where a node finds the window: the piece that differs per host setup. */
struct shmwin_win {
	int fd;			/* mmap()able */
	uint64_t base;		/* offset of the window in @fd */
	uint64_t size;
	char what[160];		/* for messages: "file /x", "PCI 0000:00:05.0 BAR2" */
	char bdf[16];		/* a PCI source's function, else "" */
	int bar;
	uint64_t bus;		/* a PCI source's bus address (sysfs resource), else UINT64_MAX */
};

/* window.c: $SMARTIO_SHMWIN names it: a file path, or pci:BDF[:BAR] (default BAR 2). */
int sio__shmwin_win_open(const char *spec, bool create, struct shmwin_win *w);
void sio__shmwin_win_close(struct shmwin_win *w);

#endif
