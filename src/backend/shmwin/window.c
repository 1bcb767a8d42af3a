/* SPDX-License-Identifier: MIT */
/*
 * How this node reaches the shared window: the one piece of the shmwin
 * backend that depends on the host's setup, so that another way in (a UIO
 * device's map, a vfio device fd's region) is added here and nowhere else.
 * What it yields is an fd and an offset that mmap() takes at page granules.
 *
 *   /path/to/file      a file (tmpfs, hugetlbfs, QEMU's memory-backend-file):
 *                      the window on one host, for tests and tools
 *   pci:BDF[:BAR]      BAR BAR (default 2: ivshmem's shared memory) of the
 *                      PCI function BDF through sysfs resourceN. It works
 *                      whatever driver holds the function (none, vfio-pci,
 *                      uio_pci_generic); memory decoding is turned on if off.
 *                      Its bus address is known too, for devices without an
 *                      IOMMU.
 */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>
#include "pci.h"
#include "shmwin.h"

#define PCI_COMMAND		4
#define PCI_COMMAND_MEMORY	0x2

static int open_file(const char *path, bool create, struct shmwin_win *w)
{
	struct stat st;
	int fd = open(path, O_RDWR | O_NOFOLLOW | O_CLOEXEC);

	(void)create;
	if (fd < 0)
		return sio__err(errno == ELOOP ? EPERM : errno, "shmwin: window file %s: %s", path,
				errno == ELOOP ? "a symbolic link; refusing it" : strerror(errno));
	if (fstat(fd, &st) || !S_ISREG(st.st_mode)) {
		close(fd);
		return sio__err(EINVAL, "shmwin: window %s is not a plain file", path);
	}
	w->fd = fd;
	w->base = 0;
	w->size = (uint64_t)st.st_size;
	w->bus = UINT64_MAX;
	snprintf(w->what, sizeof(w->what), "file %s", path);
	return 0;
}

/* Memory decoding on, as no driver may have enabled it (the firmware usually has). */
static void pci_mem_on(const char *dir)
{
	char path[256];
	uint16_t cmd;
	int fd;

	snprintf(path, sizeof(path), "%s/config", dir);
	if ((fd = open(path, O_RDWR | O_CLOEXEC)) < 0)
		return;
	if (pread(fd, &cmd, 2, PCI_COMMAND) == 2 && !(cmd & PCI_COMMAND_MEMORY)) {
		cmd |= PCI_COMMAND_MEMORY;
		if (pwrite(fd, &cmd, 2, PCI_COMMAND) != 2)
			cmd = 0;
	}
	close(fd);
}

static int open_pci(const char *spec, struct shmwin_win *w)
{
	char bdf[32], dir[128], path[160];
	int bar = 2, n = 0;
	const char *c;
	struct stat st;

	/* BDF is dddd:bb:dd.f; an optional :BAR follows */
	snprintf(bdf, sizeof(bdf), "%s", spec);
	if ((c = strchr(bdf, '.')) && (c = strchr(c, ':'))) {
		if (sscanf(c + 1, "%d%n", &bar, &n) != 1 || c[1 + n] || bar < 0 || bar >= SIO_MAX_BARS)
			return sio__err(EINVAL, "shmwin: '%s' names no BAR 0..5 after the function", spec);
		bdf[c - bdf] = 0;
	}
	if (strlen(bdf) != 12 || bdf[4] != ':' || bdf[7] != ':' || bdf[10] != '.')
		return sio__err(EINVAL, "shmwin: '%s' is not a PCI function (dddd:bb:dd.f)", bdf);
	snprintf(dir, sizeof(dir), "/sys/bus/pci/devices/%s", bdf);
	snprintf(path, sizeof(path), "%s/resource%d", dir, bar);
	pci_mem_on(dir);
	w->fd = open(path, O_RDWR | O_SYNC | O_CLOEXEC);
	if (w->fd < 0)
		return sio__err(errno == ENOENT ? ENODEV : errno, "shmwin: %s: %s%s", path, strerror(errno),
				errno == ENOENT ? " (no such function or BAR; is the ivshmem device there?)" : "");
	if (fstat(w->fd, &st) || !st.st_size) {
		close(w->fd);
		return sio__err(ENODEV, "shmwin: %s has no size: the BAR is not a memory BAR", path);
	}
	w->base = 0;
	w->size = (uint64_t)st.st_size;
	w->bar = bar;
	w->bus = sio__pci_bar_bus(dir, bar);
	snprintf(w->bdf, sizeof(w->bdf), "%s", bdf);
	snprintf(w->what, sizeof(w->what), "PCI %s BAR%d", bdf, bar);
	return 0;
}

int sio__shmwin_win_open(const char *spec, bool create, struct shmwin_win *w)
{
	memset(w, 0, sizeof(*w));
	w->fd = -1;
	if (!spec)
		spec = getenv("SMARTIO_SHMWIN");
	if (!spec || !*spec)
		return sio__err(EINVAL, "shmwin: SMARTIO_SHMWIN names no window (a file, or pci:BDF[:BAR])");
	if (!strncmp(spec, "pci:", 4))
		return open_pci(spec + 4, w);
	return open_file(spec, create, w);
}

void sio__shmwin_win_close(struct shmwin_win *w)
{
	if (w->fd >= 0)
		close(w->fd);
	w->fd = -1;
}
