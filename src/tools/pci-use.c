/* SPDX-License-Identifier: MIT */
/*
 * Whether this host uses a PCI function, as SPDK's setup.sh asks before it
 * unbinds one: a block device under it (a disk, a partition, a multipath
 * path) that is mounted, carries the root filesystem, is an active swap, or
 * is held by another block device (an LVM, MD or dm device built on it,
 * whose own mounts count too). And whether its class is one that smartio
 * lends at all. `smartio vfio|uio bind` refuse a function in use, --force
 * or not, and one of another class without --force.
 */
#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>

#include <smartio/vfio.h>
#include "smartio-vfio.h"

#define HOLDER_DEPTH 4	/* dm on md on a partition is 2; loops are refused */

struct uses {
	char *out;
	size_t len, at;
	int n;
};

static void add(struct uses *u, const char *fmt, ...)
{
	va_list ap;
	int k;

	if (u->at >= u->len)
		return;
	if (u->n++) {
		k = snprintf(u->out + u->at, u->len - u->at, "; ");
		u->at += k > 0 ? (size_t)k : 0;
	}
	if (u->at >= u->len)
		return;
	va_start(ap, fmt);
	k = vsnprintf(u->out + u->at, u->len - u->at, fmt, ap);
	va_end(ap);
	u->at += k > 0 ? (size_t)k : 0;
	if (u->at >= u->len)
		u->at = u->len;
}

/* A one-line sysfs attribute, without its newline; "" when absent. */
static void attr(const char *path, char *buf, size_t len)
{
	FILE *f = fopen(path, "re");

	buf[0] = 0;
	if (!f)
		return;
	if (!fgets(buf, (int)len, f))
		buf[0] = 0;
	buf[strcspn(buf, "\n")] = 0;
	fclose(f);
}

static int blk_dev(const char *name, dev_t *dev)
{
	char p[PATH_MAX], v[32];
	unsigned int ma, mi;

	snprintf(p, sizeof(p), "/sys/class/block/%s/dev", name);
	attr(p, v, sizeof(v));
	if (sscanf(v, "%u:%u", &ma, &mi) != 2)
		return -1;
	*dev = makedev(ma, mi);
	return 0;
}

/* Mount points of @dev (mountinfo names the device by number, /dev/root too). */
static void mounts(struct uses *u, const char *name, dev_t dev)
{
	FILE *f = fopen("/proc/self/mountinfo", "re");
	char line[4096], mp[PATH_MAX];
	unsigned int ma, mi;

	if (!f)
		return;
	while (fgets(line, sizeof(line), f)) {
		if (sscanf(line, "%*d %*d %u:%u %*s %4095s", &ma, &mi, mp) != 3 ||
		    makedev(ma, mi) != dev)
			continue;
		if (!strcmp(mp, "/"))
			add(u, "%s carries the root filesystem", name);
		else
			add(u, "%s is mounted on %s", name, mp);
	}
	fclose(f);
}

static void swaps(struct uses *u, const char *name, dev_t dev)
{
	FILE *f = fopen("/proc/swaps", "re");
	char line[4096], file[PATH_MAX];
	struct stat st;

	if (!f)
		return;
	while (fgets(line, sizeof(line), f)) {
		if (sscanf(line, "%4095s", file) != 1 || file[0] != '/' || stat(file, &st))
			continue;
		if (S_ISBLK(st.st_mode) && st.st_rdev == dev)
			add(u, "%s is an active swap", name);
		else if (S_ISREG(st.st_mode) && st.st_dev == dev)
			add(u, "%s holds the active swap file %s", name, file);
	}
	fclose(f);
}

static void check_blk(struct uses *u, const char *name, int depth);

/* Block devices built on @name (dm: LVM, crypt; md): named, then checked. */
static void holders(struct uses *u, const char *name, int depth)
{
	char p[PATH_MAX], dm[128];
	struct dirent *e;
	DIR *d;

	snprintf(p, sizeof(p), "/sys/class/block/%s/holders", name);
	d = opendir(p);
	if (!d)
		return;
	while ((e = readdir(d))) {
		if (e->d_name[0] == '.')
			continue;
		snprintf(p, sizeof(p), "/sys/class/block/%s/dm/name", e->d_name);
		attr(p, dm, sizeof(dm));
		add(u, "%s is held by %s%s%s%s", name, e->d_name, dm[0] ? " (" : "", dm,
		    dm[0] ? ")" : "");
		if (depth < HOLDER_DEPTH)
			check_blk(u, e->d_name, depth + 1);
	}
	closedir(d);
}

static void check_blk(struct uses *u, const char *name, int depth)
{
	dev_t dev;

	if (blk_dev(name, &dev))
		return;
	mounts(u, name, dev);
	swaps(u, name, dev);
	holders(u, name, depth);
}

static bool under(const char *path, const char *dir)
{
	size_t n = strlen(dir);

	return !strncmp(path, dir, n) && path[n] == '/';
}

/* A native NVMe multipath disk lives under the subsystem, not the function:
 * it is the function's when one of its paths (multipath/ links) is. */
static bool path_of(const char *name, const char *dir)
{
	char p[PATH_MAX], r[PATH_MAX];
	struct dirent *e;
	bool mine = false;
	DIR *d;

	snprintf(p, sizeof(p), "/sys/class/block/%s/multipath", name);
	d = opendir(p);
	if (!d)
		return false;
	while (!mine && (e = readdir(d))) {
		snprintf(p, sizeof(p), "/sys/class/block/%s/multipath/%s", name, e->d_name);
		mine = e->d_name[0] != '.' && realpath(p, r) && under(r, dir);
	}
	closedir(d);
	return mine;
}

int sio_tool_pci_users(const char *bdf, char *out, size_t len)
{
	struct uses u = { .out = out, .len = len };
	char p[PATH_MAX], dir[PATH_MAX], r[PATH_MAX];
	struct dirent *e;
	DIR *d;

	out[0] = 0;
	snprintf(p, sizeof(p), "/sys/bus/pci/devices/%s", bdf);
	if (!realpath(p, dir))
		return -errno;
	d = opendir("/sys/class/block");
	if (!d)
		return -errno;
	while ((e = readdir(d))) {
		if (e->d_name[0] == '.')
			continue;
		snprintf(p, sizeof(p), "/sys/class/block/%s", e->d_name);
		if ((realpath(p, r) && under(r, dir)) || path_of(e->d_name, dir))
			check_blk(&u, e->d_name, 0);
	}
	closedir(d);
	return u.n;
}

/*
 * The classes smartio lends: NVMe, displays and accelerators (GPUs),
 * memory (ivshmem windows), other bridges (NTB), coprocessors, signal
 * processing and unclassified functions (QEMU's edu). Everything else,
 * and any virtio function but ivshmem, is most likely the machine's own
 * disk, network or bus.
 */
bool sio_tool_pci_lendable(const struct sio_pci_fn *fn)
{
	unsigned int base = fn->class_code >> 16, sub = fn->class_code >> 8 & 0xff;

	if (fn->vendor == 0x1af4)		/* virtio, and ivshmem (1110) */
		return fn->device == 0x1110;
	if (fn->class_code == 0x010802)
		return true;
	return base == 0x00 || base == 0x03 || base == 0x05 || base == 0x0b ||
	       base == 0x11 || base == 0x12 || (base == 0x06 && sub == 0x80);
}
