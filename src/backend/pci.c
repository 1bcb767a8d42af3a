/* SPDX-License-Identifier: MIT */
/*
 * PCI helpers that several backends share: the shmwin backend reads its
 * window's bus address with them, the vfio lender its BAR0's. They read
 * sysfs only, so they belong to no backend in particular.
 */
#include <stdio.h>
#include "pci.h"

/*
 * The BAR's bus address, which a device without an IOMMU is given to reach
 * the window: line @bar of sysfs resource ("start end flags"). Pagemap has
 * no answer for it: the window is MMIO of another function, not RAM. That
 * start is the CPU's address, which is the bus's on x86 (no offset between
 * them); a platform with an offset would read the config-space BAR.
 */
uint64_t sio__pci_bar_bus(const char *dir, int bar)
{
	unsigned long long start = 0, end = 0;
	char path[160], line[128];
	uint64_t bus = UINT64_MAX;
	FILE *fp;

	snprintf(path, sizeof(path), "%s/resource", dir);
	if (!(fp = fopen(path, "re")))
		return bus;
	for (int i = 0; i <= bar && fgets(line, sizeof(line), fp); i++)
		if (i == bar && sscanf(line, "%llx %llx", &start, &end) == 2 && end > start)
			bus = start;
	fclose(fp);
	return bus;
}
