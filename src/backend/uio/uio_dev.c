/* SPDX-License-Identifier: MIT */
/*
 * A PCI function bound to uio_pci_generic, on a host without an IOMMU:
 * the checks that refuse what is unsafe or impossible, its config space and
 * BARs through sysfs, and its lender (vfio/lend.h): DMA mappings are
 * physical addresses of locked huge pages (phys.c). uio_pci_generic gives
 * INTx only, as a read() of /dev/uioN; the NVMe driver polls, so the lender
 * does not serve interrupts.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <hugetlbfs.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "internal.h"
#include "vfio/lend.h"
#include "uio.h"

#define IORESOURCE_IO	0x100	/* <linux/ioport.h>: the flags column of sysfs resource */

int sio_uio_host_check(void)
{
	if (sio_pci_iommu_active())
		return sio__err(EOPNOTSUPP, "uio: an IOMMU is on (/sys/kernel/iommu_groups is not "
				"empty): a device behind it sees I/O virtual addresses, not "
				"physical ones; use the vfio backend (smartio vfio bind BDF; "
				"smartio vfio lend BDF)");
	if (geteuid())
		return sio__err(EPERM, "uio: needs root: the device is given physical addresses, "
				"which /proc/self/pagemap shows to CAP_SYS_ADMIN only, and its "
				"config space and BARs are reached through sysfs");
	return 0;
}

int sio_uio_huge_check(long *hugesz)
{
	long sz = gethugepagesize();
	unsigned long n = 0;
	char p[128];
	FILE *fp;

	if (sz <= 0)
		return sio__err(ENOMEM, "uio: this kernel offers no huge pages; without an IOMMU "
				"the device's memory must be huge pages");
	snprintf(p, sizeof(p), "/sys/kernel/mm/hugepages/hugepages-%ldkB/nr_hugepages", sz >> 10);
	fp = fopen(p, "r");
	if (!fp || fscanf(fp, "%lu", &n) != 1)
		n = 0;
	if (fp)
		fclose(fp);
	if (!n)
		return sio__err(ENOMEM, "uio: no huge pages of %ld KiB are reserved (boot with "
				"hugepages=N, or write N to /proc/sys/vm/nr_hugepages): without an "
				"IOMMU the device's memory must be huge pages", sz >> 10);
	if (!hugetlbfs_find_path_for_size(sz))
		return sio__err(ENOMEM, "uio: no hugetlbfs is mounted for %ld KiB pages (mount -t "
				"hugetlbfs none /dev/hugepages): the fabric's segments must be "
				"huge pages for the device", sz >> 10);
	*hugesz = sz;
	return 0;
}

/* N of the uioN that uio_pci_generic made for @bdf. */
static int uio_index(const char *bdf)
{
	char p[128];
	DIR *d;
	struct dirent *e;
	int n = -1;

	snprintf(p, sizeof(p), "/sys/bus/pci/devices/%s/uio", bdf);
	d = opendir(p);
	if (!d)
		return sio__err(ENODEV, "uio: %s has no uio device (%s missing)", bdf, p);
	while ((e = readdir(d)))
		if (sscanf(e->d_name, "uio%d", &n) == 1)
			break;
	closedir(d);
	return n >= 0 ? n : sio__err(ENODEV, "uio: %s has no uio device under %s", bdf, p);
}

static int open_sysfs(const char *bdf, const char *leaf)
{
	char p[128];
	int fd;

	snprintf(p, sizeof(p), "/sys/bus/pci/devices/%s/%s", bdf, leaf);
	fd = open(p, O_RDWR | O_CLOEXEC);
	if (fd < 0)
		return sio__err(errno, "uio: cannot open %s: %s", p, strerror(errno));
	return fd;
}

/* The BARs, from sysfs's resource: "start end flags" a line. */
static int read_bars(struct sio_uio_dev *d)
{
	char p[128];
	unsigned long long start, end, flags;
	FILE *fp;

	snprintf(p, sizeof(p), "/sys/bus/pci/devices/%s/resource", d->bdf);
	fp = fopen(p, "r");
	if (!fp)
		return sio__err(errno, "uio: cannot read %s: %s", p, strerror(errno));
	for (int b = 0; b < SIO_MAX_BARS && fscanf(fp, "%llx %llx %llx", &start, &end, &flags) == 3; b++) {
		char leaf[16];

		if (!end || end < start)
			continue;
		d->bar_size[b] = end - start + 1;
		d->bar_io[b] = flags & IORESOURCE_IO;
		if (d->bar_io[b])
			continue;
		snprintf(leaf, sizeof(leaf), "resource%d", b);
		d->res_fd[b] = open_sysfs(d->bdf, leaf);
		if (d->res_fd[b] < 0) {
			fclose(fp);
			return d->res_fd[b];
		}
	}
	fclose(fp);
	return 0;
}

int sio_uio_open(const char *bdf, struct sio_uio_dev *d)
{
	struct sio_pci_fn fn;
	struct stat st;
	int rc;

	memset(d, 0, sizeof(*d));
	d->cfg_fd = -1;
	for (int b = 0; b < SIO_MAX_BARS; b++)
		d->res_fd[b] = -1;
	rc = sio_pci_bdf_parse(bdf, d->bdf);
	if (!rc)
		rc = sio_pci_fn_get(d->bdf, &fn);
	if (rc)
		return rc;
	if (fn.iommu_group >= 0)
		return sio__err(EOPNOTSUPP, "uio: %s is in IOMMU group %d: use the vfio backend "
				"(smartio vfio bind %s)", d->bdf, fn.iommu_group, d->bdf);
	/* A virtio function (vendor 0x1af4) or one of no class carries the
	 * guest's own disk or network: never suggest taking it from its driver. */
	if (strcmp(fn.driver, "uio_pci_generic") && fn.driver[0] &&
	    (fn.vendor == 0x1af4 || (fn.class_code >> 16) == 0xff))
		return sio__err(ENODEV, "uio: %s is bound to '%s', not to uio_pci_generic, and "
				"it is no function to lend (%04x:%04x, class %06x: the machine's own "
				"disk or network); check the address: smartio vfio list",
				d->bdf, fn.driver, fn.vendor, fn.device, fn.class_code);
	if (strcmp(fn.driver, "uio_pci_generic"))
		return sio__err(ENODEV, "uio: %s is %s%s%s, not to uio_pci_generic: bind it with "
				"`smartio uio bind %s` (as root)", d->bdf,
				fn.driver[0] ? "bound to '" : "bound to no driver", fn.driver,
				fn.driver[0] ? "'" : "", d->bdf);
	d->uio = uio_index(d->bdf);
	if (d->uio < 0)
		return d->uio;
	d->cfg_fd = open_sysfs(d->bdf, "config");
	if (d->cfg_fd < 0)
		return d->cfg_fd;
	if (fstat(d->cfg_fd, &st)) {
		rc = sio__err(errno, "uio: %s config: %s", d->bdf, strerror(errno));
		goto fail;
	}
	d->cfg_size = st.st_size;
	rc = read_bars(d);
	if (!rc)
		return 0;
fail:
	sio_uio_close(d);
	return rc;
}

void sio_uio_close(struct sio_uio_dev *d)
{
	if (d->cfg_fd >= 0)
		close(d->cfg_fd);
	for (int b = 0; b < SIO_MAX_BARS; b++)
		if (d->res_fd[b] >= 0)
			close(d->res_fd[b]);
	d->cfg_fd = -1;
	for (int b = 0; b < SIO_MAX_BARS; b++)
		d->res_fd[b] = -1;
}

/* Lock the pages (resident, for as long as the device may use them), then translate. */
static int lend_map(void *priv, void *va, uint64_t len, uint64_t mask, uint64_t *bus)
{
	long pg = sysconf(_SC_PAGESIZE);
	int rc;

	if (mlock(va, len))
		return sio__err(errno, "uio: cannot lock %llu bytes for the device: %s",
				(unsigned long long)len, strerror(errno));
	/* mlock faults them in; a sanitizer's mlock does nothing, so touch them too. */
	for (uint64_t off = 0; off < len; off += pg)
		(void)*(volatile char *)((char *)va + off);
	rc = sio_uio_phys(va, len, bus);
	/* Physical addresses are what they are: one beyond the mask is refused. */
	if (!rc && (*bus > mask || len - 1 > mask - *bus))
		rc = sio__err(ERANGE, "uio: memory at physical 0x%llx is beyond the device's "
			      "DMA mask 0x%llx", (unsigned long long)*bus, (unsigned long long)mask);
	if (rc)
		munlock(va, len);
	return rc;
}

static int lend_unmap(void *priv, void *va, uint64_t bus, uint64_t len)
{
	munlock(va, len);
	return 0;
}

int sio_uio_lend(const char *fabric, const char *bdf, volatile sig_atomic_t *stop, FILE *log)
{
	return sio_uio_lend_opts(fabric, bdf, NULL, stop, log);
}

int sio_uio_lend_opts(const char *fabric, const char *bdf, const struct sio_lend_opts *o,
		      volatile sig_atomic_t *stop, FILE *log)
{
	struct sio_uio_dev d;
	struct sio_lend_dev ld = { .kind = "uio", .backend = SIO_BACKEND_UIO, .priv = &d,
				   .dma_map = lend_map, .dma_unmap = lend_unmap,
				   /* what the window is checked against; borrowers bring their own */
				   .dma_mask = UINT64_MAX, .opts = o, .req_fd = -1 };
	uint16_t cmd;
	long hs;
	int rc = sio_uio_host_check();

	if (!rc)
		rc = sio_uio_open(bdf, &d);
	if (rc)
		return rc;
	rc = sio_uio_huge_check(&hs);
	if (rc)
		goto out;
	ld.cfg = (struct sio_pci_cfg){ .bdf = d.bdf, .fd = d.cfg_fd, .size = d.cfg_size };
	for (int b = 0; b < SIO_MAX_BARS; b++) {
		ld.bar[b].size = d.bar_size[b];
		ld.bar[b].fd = d.res_fd[b];	/* resourceN maps from offset 0 */
		ld.bar[b].mmap = d.res_fd[b] >= 0;
	}
	snprintf(ld.how, sizeof(ld.how), "uio_pci_generic (/dev/uio%d), no IOMMU: physical "
		 "addresses of huge pages of %ld KiB", d.uio, hs >> 10);
	rc = sio__lend(fabric, &ld, stop, log);
	/*
	 * No IOMMU will stop a device that is still running: take bus mastering
	 * away before the memory it was given can go back to the kernel.
	 */
	if (!sio_pci_cfg_read(&ld.cfg, 0x04, &cmd, 2)) {
		cmd &= ~0x0004;
		sio_pci_cfg_write(&ld.cfg, 0x04, &cmd, 2);
	}
out:
	sio_uio_close(&d);
	return rc;
}
