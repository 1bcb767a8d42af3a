/* SPDX-License-Identifier: MIT */
/*
 * PCI functions: enumeration with libpciaccess, the sysfs facts it does
 * not give (bound driver, IOMMU group), and config space through a file
 * (vfio's config region or sysfs's config, for the uio backend).
 */
#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <pciaccess.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "vfio.h"

int sio_pci_bdf_parse(const char *in, char out[16])
{
	unsigned int dom = 0, bus, dev, fn;
	int end = 0;
	bool ok;

	if (!in)
		return sio__err(EINVAL, "no PCI address given");
	/* Only hex digits, ':' and '.': sscanf alone would take "0x" prefixes. */
	ok = strspn(in, "0123456789abcdefABCDEF:.") == strlen(in);
	if (ok && !(sscanf(in, "%x:%x:%x.%x%n", &dom, &bus, &dev, &fn, &end) == 4 && !in[end])) {
		dom = 0;
		ok = sscanf(in, "%x:%x.%x%n", &bus, &dev, &fn, &end) == 3 && !in[end];
	}
	if (!ok)
		return sio__err(EINVAL, "'%s' is not a PCI address (like 0000:00:04.0)", in);
	if (dom > 0xffff || bus > 0xff || dev > 0x1f || fn > 7)
		return sio__err(EINVAL, "'%s' is not a PCI address (like 0000:00:04.0)", in);
	snprintf(out, 16, "%04x:%02x:%02x.%x", dom, bus, dev, fn);
	return 0;
}

static int read_hex(const char *bdf, const char *attr, unsigned long *v)
{
	char p[128], buf[32];
	FILE *fp;

	snprintf(p, sizeof(p), "/sys/bus/pci/devices/%s/%s", bdf, attr);
	fp = fopen(p, "r");
	if (!fp)
		return -errno;
	if (!fgets(buf, sizeof(buf), fp)) {
		fclose(fp);
		return -EIO;
	}
	fclose(fp);
	*v = strtoul(buf, NULL, 16);
	return 0;
}

/* Last path component of a sysfs link, or "" if there is none. */
static void link_name(const char *bdf, const char *attr, char *out, size_t len)
{
	char p[128], t[PATH_MAX];
	ssize_t n;
	const char *s;

	out[0] = 0;
	snprintf(p, sizeof(p), "/sys/bus/pci/devices/%s/%s", bdf, attr);
	n = readlink(p, t, sizeof(t) - 1);
	if (n <= 0)
		return;
	t[n] = 0;
	s = strrchr(t, '/');
	s = s ? s + 1 : t;
	n = strlen(s);
	if ((size_t)n >= len)
		n = len - 1;
	memcpy(out, s, n);
	out[n] = 0;
}

int sio_pci_fn_get(const char *bdf, struct sio_pci_fn *out)
{
	char norm[16], grp[16];
	unsigned long v = 0;
	int rc = sio_pci_bdf_parse(bdf, norm);

	if (rc)
		return rc;
	memset(out, 0, sizeof(*out));
	snprintf(out->bdf, sizeof(out->bdf), "%s", norm);
	if (read_hex(norm, "class", &v))
		return sio__err(ENODEV, "no PCI function %s on this machine "
				"(see /sys/bus/pci/devices)", norm);
	out->class_code = v & 0xffffff;
	if (!read_hex(norm, "vendor", &v))
		out->vendor = v;
	if (!read_hex(norm, "device", &v))
		out->device = v;
	link_name(norm, "driver", out->driver, sizeof(out->driver));
	link_name(norm, "iommu_group", grp, sizeof(grp));
	out->iommu_group = grp[0] ? atoi(grp) : -1;
	return 0;
}

int sio_pci_scan(uint32_t class_code, uint32_t mask, struct sio_pci_fn *out, int max)
{
	struct pci_device_iterator *it;
	struct pci_device *pd;
	int n = 0, rc = pci_system_init();

	if (rc)
		return sio__err(rc, "libpciaccess cannot read the PCI bus: %s", strerror(rc));
	it = pci_slot_match_iterator_create(NULL);
	if (!it) {
		pci_system_cleanup();
		return sio__err(ENOMEM, "libpciaccess: out of memory");
	}
	while ((pd = pci_device_next(it))) {
		char bdf[16];

		if ((pd->device_class & mask) != (class_code & mask))
			continue;
		if (n < max && out) {
			snprintf(bdf, sizeof(bdf), "%04x:%02x:%02x.%x", pd->domain, pd->bus,
				 pd->dev, pd->func);
			if (sio_pci_fn_get(bdf, &out[n])) {
				/* sysfs lacks it (a race with hot-unplug): report ids only */
				memset(&out[n], 0, sizeof(out[n]));
				snprintf(out[n].bdf, sizeof(out[n].bdf), "%s", bdf);
				out[n].iommu_group = -1;
			}
			out[n].class_code = pd->device_class & 0xffffff;
			out[n].vendor = pd->vendor_id;
			out[n].device = pd->device_id;
		}
		n++;
	}
	pci_iterator_destroy(it);
	pci_system_cleanup();
	return n;
}

bool sio_pci_iommu_active(void)
{
	DIR *d = opendir("/sys/kernel/iommu_groups");
	struct dirent *e;
	bool any = false;

	if (!d)
		return false;
	while ((e = readdir(d)))
		if (e->d_name[0] != '.') {
			any = true;
			break;
		}
	closedir(d);
	return any;
}

int sio_pci_cfg_read(const struct sio_pci_cfg *c, uint32_t off, void *buf, size_t len)
{
	if (off + len > c->size)
		return sio__err(EINVAL, "config read at 0x%x beyond %llu bytes", off,
				(unsigned long long)c->size);
	if (pread(c->fd, buf, len, c->base + off) != (ssize_t)len)
		return sio__err(EIO, "%s: config read at 0x%x failed", c->bdf, off);
	return 0;
}

int sio_pci_cfg_write(const struct sio_pci_cfg *c, uint32_t off, const void *buf, size_t len)
{
	if (off + len > c->size)
		return sio__err(EINVAL, "config write at 0x%x beyond %llu bytes", off,
				(unsigned long long)c->size);
	if (pwrite(c->fd, buf, len, c->base + off) != (ssize_t)len)
		return sio__err(EIO, "%s: config write at 0x%x failed", c->bdf, off);
	return 0;
}

int sio_pci_enable_master(const struct sio_pci_cfg *c)
{
	uint16_t cmd;
	int rc = sio_pci_cfg_read(c, 0x04, &cmd, 2);

	if (rc)
		return rc;
	cmd |= 0x0002 | 0x0004;		/* memory space, bus master */
	return sio_pci_cfg_write(c, 0x04, &cmd, 2);
}

int sio_pci_bar_bus(const struct sio_pci_cfg *c, int bar, uint64_t *bus)
{
	uint32_t lo, hi = 0;
	int rc;

	if (bar < 0 || bar >= SIO_MAX_BARS)
		return sio__err(EINVAL, "BAR %d out of range", bar);
	rc = sio_pci_cfg_read(c, 0x10 + 4 * bar, &lo, 4);
	if (rc)
		return rc;
	if (lo & 1)
		return sio__err(EINVAL, "%s BAR %d is an I/O BAR", c->bdf, bar);
	if (((lo >> 1) & 3) == 2) {	/* 64-bit */
		if (bar == 5)
			return sio__err(EINVAL, "%s BAR 5 claims 64 bits", c->bdf);
		rc = sio_pci_cfg_read(c, 0x14 + 4 * bar, &hi, 4);
		if (rc)
			return rc;
	}
	*bus = ((uint64_t)hi << 32) | (lo & ~0xfu);
	return 0;
}
