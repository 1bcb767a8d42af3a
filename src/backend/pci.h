/* SPDX-License-Identifier: MIT */
#ifndef SIO_BACKEND_PCI_H
#define SIO_BACKEND_PCI_H

/* PCI helpers that several backends share (pci.c). */

#include <stdint.h>

/*
 * BAR @bar's bus address from sysfs (@dir: /sys/bus/pci/devices/BDF), or
 * UINT64_MAX: the CPU's address, which is the bus's on x86.
 */
uint64_t sio__pci_bar_bus(const char *dir, int bar);

#endif
