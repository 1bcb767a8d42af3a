/* SPDX-License-Identifier: MIT */
/*
 * Opening a PCI function bound to vfio-pci, through a VFIO type1 container
 * or through iommufd, and mapping memory for its DMA.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "internal.h"
#include "iommufd.h"
#include "lend.h"

static bool exists(const char *p)
{
	return access(p, F_OK) == 0;
}

static int open_dev_node(const char *path, const char *what)
{
	int fd = open(path, O_RDWR | O_CLOEXEC);

	if (fd >= 0)
		return fd;
	if (errno == EACCES || errno == EPERM)
		return sio__err(EACCES, "permission denied opening %s (%s): run as root, or give "
				"your user the node (chown or a udev rule) and raise the "
				"memlock limit (ulimit -l)", path, what);
	if (errno == EBUSY)
		return sio__err(EBUSY, "%s (%s) is busy: another process (a lender, QEMU) "
				"holds it", path, what);
	if (errno == ENOENT)
		return sio__err(ENODEV, "%s missing: load the module (modprobe vfio-pci)", path);
	return sio__err(errno, "cannot open %s (%s): %s", path, what, strerror(errno));
}

static void set_ranges(struct sio_vfio_dev *d, struct sio_iova_range *r, int n)
{
	if (n == 0) {
		/* Kernels before 5.4 say nothing: assume 39 bits, as VT-d does. */
		r[0].start = 0;
		r[0].last = (1ull << 39) - 1;
		n = 1;
	}
	sio_iova_init(&d->iova, r, n);
}

static int type1_iommu_info(struct sio_vfio_dev *d)
{
	struct vfio_iommu_type1_info *info;
	struct sio_iova_range r[SIO_VFIO_MAX_RANGES];
	size_t sz = sizeof(*info);
	int n = 0;

	for (;;) {
		info = calloc(1, sz);
		if (!info)
			return sio__err(ENOMEM, "vfio: out of memory");
		info->argsz = sz;
		if (ioctl(d->container, VFIO_IOMMU_GET_INFO, info)) {
			int e = errno;

			free(info);
			return sio__err(e, "VFIO_IOMMU_GET_INFO: %s", strerror(e));
		}
		if (info->argsz <= sz)
			break;
		sz = info->argsz;
		free(info);
	}
	d->pgsizes = (info->flags & VFIO_IOMMU_INFO_PGSIZES) ? info->iova_pgsizes : 4096;
	if ((info->flags & VFIO_IOMMU_INFO_CAPS) && info->cap_offset) {
		uint32_t off = info->cap_offset;

		while (off && off + sizeof(struct vfio_info_cap_header) <= sz) {
			struct vfio_info_cap_header *h = (void *)((char *)info + off);

			if (h->id == VFIO_IOMMU_TYPE1_INFO_CAP_IOVA_RANGE) {
				struct vfio_iommu_type1_info_cap_iova_range *c = (void *)h;

				for (uint32_t i = 0; i < c->nr_iovas && n < SIO_VFIO_MAX_RANGES; i++) {
					r[n].start = c->iova_ranges[i].start;
					r[n].last = c->iova_ranges[i].end;
					n++;
				}
			}
			off = h->next;
		}
	}
	free(info);
	set_ranges(d, r, n);
	return 0;
}

static int open_type1(struct sio_vfio_dev *d)
{
	char path[64];
	struct vfio_group_status st = { .argsz = sizeof(st) };
	int rc;

	d->container = open_dev_node("/dev/vfio/vfio", "the VFIO container");
	if (d->container < 0)
		return d->container;
	if (ioctl(d->container, VFIO_GET_API_VERSION) != VFIO_API_VERSION)
		return sio__err(EINVAL, "/dev/vfio/vfio speaks an unknown VFIO API version");
	if (ioctl(d->container, VFIO_CHECK_EXTENSION, VFIO_TYPE1v2_IOMMU) != 1)
		return sio__err(ENODEV, "the VFIO container lacks the type1v2 IOMMU "
				"(modprobe vfio_iommu_type1)");

	snprintf(path, sizeof(path), "/dev/vfio/%d", d->iommu_group);
	d->group = open_dev_node(path, "the device's IOMMU group");
	if (d->group < 0)
		return d->group;
	if (ioctl(d->group, VFIO_GROUP_GET_STATUS, &st))
		return sio__err(errno, "VFIO_GROUP_GET_STATUS: %s", strerror(errno));
	if (!(st.flags & VFIO_GROUP_FLAGS_VIABLE))
		return sio__err(EBUSY, "IOMMU group %d of %s is not viable: every device in "
				"/sys/kernel/iommu_groups/%d/devices must be bound to vfio-pci "
				"(or to no driver)", d->iommu_group, d->bdf, d->iommu_group);
	if (ioctl(d->group, VFIO_GROUP_SET_CONTAINER, &d->container))
		return sio__err(errno, "VFIO_GROUP_SET_CONTAINER: %s", strerror(errno));
	if (ioctl(d->container, VFIO_SET_IOMMU, VFIO_TYPE1v2_IOMMU))
		return sio__err(errno, "VFIO_SET_IOMMU(type1v2): %s", strerror(errno));
	rc = type1_iommu_info(d);
	if (rc)
		return rc;
	d->fd = ioctl(d->group, VFIO_GROUP_GET_DEVICE_FD, d->bdf);
	if (d->fd < 0)
		return sio__err(errno, "VFIO_GROUP_GET_DEVICE_FD(%s): %s", d->bdf, strerror(errno));
	d->mode = SIO_VFIO_TYPE1;
	return 0;
}

/* /dev/vfio/devices/vfioN of a function, from sysfs; -ENOENT if none. */
static int cdev_path(const char *bdf, char *out, size_t len)
{
	char dir[128];
	DIR *dd;
	struct dirent *e;
	int rc = -ENOENT;

	snprintf(dir, sizeof(dir), "/sys/bus/pci/devices/%s/vfio-dev", bdf);
	dd = opendir(dir);
	if (!dd)
		return -ENOENT;
	while ((e = readdir(dd)))
		if (!strncmp(e->d_name, "vfio", 4)) {
			snprintf(out, len, "/dev/vfio/devices/%s", e->d_name);
			rc = 0;
			break;
		}
	closedir(dd);
	return rc;
}

static int open_iommufd(struct sio_vfio_dev *d, const char *cdev)
{
	struct vfio_device_bind_iommufd bind = { .argsz = sizeof(bind) };
	struct vfio_device_attach_iommufd_pt at = { .argsz = sizeof(at) };
	struct iommu_ioas_alloc alloc = { .size = sizeof(alloc) };
	struct iommu_ioas_iova_ranges q = { .size = sizeof(q) };
	struct iommu_iova_range kr[SIO_VFIO_MAX_RANGES];
	struct sio_iova_range r[SIO_VFIO_MAX_RANGES];
	int n;

	d->fd = open_dev_node(cdev, "the VFIO device");
	if (d->fd < 0)
		return d->fd;
	d->iommufd = open_dev_node("/dev/iommu", "iommufd");
	if (d->iommufd < 0)
		return d->iommufd;
	bind.iommufd = d->iommufd;
	if (ioctl(d->fd, VFIO_DEVICE_BIND_IOMMUFD, &bind))
		return sio__err(errno, "VFIO_DEVICE_BIND_IOMMUFD(%s): %s", d->bdf, strerror(errno));
	if (ioctl(d->iommufd, IOMMU_IOAS_ALLOC, &alloc))
		return sio__err(errno, "IOMMU_IOAS_ALLOC: %s", strerror(errno));
	d->ioas = alloc.out_ioas_id;
	at.pt_id = d->ioas;
	if (ioctl(d->fd, VFIO_DEVICE_ATTACH_IOMMUFD_PT, &at))
		return sio__err(errno, "VFIO_DEVICE_ATTACH_IOMMUFD_PT: %s", strerror(errno));
	q.ioas_id = d->ioas;
	q.num_iovas = SIO_VFIO_MAX_RANGES;
	q.allowed_iovas = (uintptr_t)kr;
	if (ioctl(d->iommufd, IOMMU_IOAS_IOVA_RANGES, &q))
		return sio__err(errno, "IOMMU_IOAS_IOVA_RANGES: %s", strerror(errno));
	n = q.num_iovas < SIO_VFIO_MAX_RANGES ? (int)q.num_iovas : SIO_VFIO_MAX_RANGES;
	for (int i = 0; i < n; i++) {
		r[i].start = kr[i].start;
		r[i].last = kr[i].last;
	}
	d->pgsizes = q.out_iova_alignment ? q.out_iova_alignment : 4096;
	set_ranges(d, r, n);
	d->mode = SIO_VFIO_IOMMUFD;
	return 0;
}

static int read_regions(struct sio_vfio_dev *d)
{
	for (int i = 0; i < SIO_VFIO_NREGIONS; i++) {
		struct vfio_region_info ri = { .argsz = sizeof(ri), .index = i };

		if (ioctl(d->fd, VFIO_DEVICE_GET_REGION_INFO, &ri))
			continue;	/* VGA and ROM are often absent */
		d->region[i].offset = ri.offset;
		d->region[i].size = ri.size;
		d->region[i].flags = ri.flags;
	}
	if (!d->region[SIO_VFIO_CONFIG].size)
		return sio__err(EIO, "%s: vfio gives no config space region", d->bdf);
	return 0;
}

int sio_vfio_open(const char *bdf, enum sio_vfio_mode mode, struct sio_vfio_dev *d)
{
	struct sio_pci_fn fn;
	char cdev[300];
	int rc;

	memset(d, 0, sizeof(*d));
	d->fd = d->container = d->group = d->iommufd = -1;
	rc = sio_pci_bdf_parse(bdf, d->bdf);
	if (rc)
		return rc;
	rc = sio_pci_fn_get(d->bdf, &fn);
	if (rc)
		return rc;
	/* No IOMMU at all comes first: binding would not help. */
	if (fn.iommu_group < 0 && !sio_pci_iommu_active())
		return sio__err(ENODEV, "no IOMMU is active on this machine: enable VT-d "
				"(or AMD-Vi) in the firmware and boot with intel_iommu=on; "
				"Debian's kernel has no vfio no-IOMMU mode; without an IOMMU, "
				"lend it through uio: smartio uio bind/lend (docs/uio.md)");
	if (strcmp(fn.driver, "vfio-pci"))
		return sio__err(ENODEV, "%s is %s%s%s, not to vfio-pci: bind it with "
				"`smartio vfio bind %s` (as root)", d->bdf,
				fn.driver[0] ? "bound to '" : "bound to no driver",
				fn.driver, fn.driver[0] ? "'" : "", d->bdf);
	if (fn.iommu_group < 0)
		return sio__err(ENODEV, "%s has no IOMMU group", d->bdf);
	d->iommu_group = fn.iommu_group;

	if (mode == SIO_VFIO_IOMMUFD || (mode == SIO_VFIO_AUTO && exists("/dev/iommu"))) {
		rc = cdev_path(d->bdf, cdev, sizeof(cdev));
		if (rc == 0)
			rc = open_iommufd(d, cdev);
		else if (mode == SIO_VFIO_IOMMUFD)
			rc = sio__err(ENODEV, "%s has no VFIO device node under /dev/vfio/devices "
				      "(the kernel lacks VFIO_DEVICE_CDEV); use type1", d->bdf);
		if (rc && mode == SIO_VFIO_IOMMUFD)
			goto fail;
		if (rc) {	/* auto: fall back to the container */
			sio_vfio_close(d);
			d->fd = d->container = d->group = d->iommufd = -1;
			rc = 1;
		}
	} else {
		rc = 1;
	}
	if (rc == 1)
		rc = open_type1(d);
	if (rc)
		goto fail;
	rc = read_regions(d);
	if (rc)
		goto fail;
	return 0;
fail:
	sio_vfio_close(d);
	return rc;
}

void sio_vfio_close(struct sio_vfio_dev *d)
{
	/* Closing the fds drops every IOMMU mapping and unpins the pages. */
	if (d->fd >= 0)
		close(d->fd);
	if (d->group >= 0)
		close(d->group);
	if (d->container >= 0)
		close(d->container);
	if (d->iommufd >= 0)
		close(d->iommufd);
	d->fd = d->group = d->container = d->iommufd = -1;
	sio_iova_fini(&d->iova);
}

/* Config space is the device fd's config region. */
static struct sio_pci_cfg cfg_of(struct sio_vfio_dev *d)
{
	const struct sio_vfio_region *r = &d->region[SIO_VFIO_CONFIG];

	return (struct sio_pci_cfg){ .bdf = d->bdf, .fd = d->fd, .base = r->offset, .size = r->size };
}

int sio_vfio_cfg_read(struct sio_vfio_dev *d, uint32_t off, void *buf, size_t len)
{
	struct sio_pci_cfg c = cfg_of(d);

	return sio_pci_cfg_read(&c, off, buf, len);
}

int sio_vfio_cfg_write(struct sio_vfio_dev *d, uint32_t off, const void *buf, size_t len)
{
	struct sio_pci_cfg c = cfg_of(d);

	return sio_pci_cfg_write(&c, off, buf, len);
}

int sio_vfio_enable_master(struct sio_vfio_dev *d)
{
	struct sio_pci_cfg c = cfg_of(d);

	return sio_pci_enable_master(&c);
}

int sio_vfio_bar_bus(struct sio_vfio_dev *d, int bar, uint64_t *bus)
{
	struct sio_pci_cfg c = cfg_of(d);

	return sio_pci_bar_bus(&c, bar, bus);
}

int sio_vfio_bar_mmap(struct sio_vfio_dev *d, int bar, void **vaddr, uint64_t *size)
{
	const struct sio_vfio_region *r;
	void *p;

	if (bar < 0 || bar >= SIO_MAX_BARS || !d->region[bar].size)
		return sio__err(ENOENT, "%s has no BAR %d", d->bdf, bar);
	r = &d->region[bar];
	if (!(r->flags & VFIO_REGION_INFO_FLAG_MMAP))
		return sio__err(ENOTSUP, "%s BAR %d cannot be mmapped", d->bdf, bar);
	p = mmap(NULL, r->size, PROT_READ | PROT_WRITE, MAP_SHARED, d->fd, r->offset);
	if (p == MAP_FAILED)
		return sio__err(errno, "mmap of %s BAR %d: %s", d->bdf, bar, strerror(errno));
	*vaddr = p;
	*size = r->size;
	return 0;
}

/* Largest power of two not above @len, capped at 2 MiB; at least a page. */
static uint64_t pick_align(uint64_t len, uint64_t granule)
{
	uint64_t a = granule;

	while (a < (2ull << 20) && a * 2 <= len)
		a *= 2;
	return a;
}

int sio_vfio_dma_map(struct sio_vfio_dev *d, void *vaddr, uint64_t len, uint64_t *iova)
{
	return sio_vfio_dma_map_below(d, vaddr, len, UINT64_MAX, iova);
}

int sio_vfio_dma_map_below(struct sio_vfio_dev *d, void *vaddr, uint64_t len, uint64_t limit,
			   uint64_t *iova)
{
	uint64_t granule = d->pgsizes & -d->pgsizes, io;
	int rc;

	if (!granule)
		granule = 4096;
	if (!len || len % granule || (uintptr_t)vaddr % granule)
		return sio__err(EINVAL, "DMA map of %llu bytes at %p: not a multiple of the "
				"IOMMU page (%llu)", (unsigned long long)len, vaddr,
				(unsigned long long)granule);
	rc = sio_iova_get_below(&d->iova, len, pick_align(len, granule), limit, &io);
	if (rc)
		return rc;
	if (d->mode == SIO_VFIO_IOMMUFD) {
		struct iommu_ioas_map m = {
			.size = sizeof(m), .ioas_id = d->ioas,
			.flags = IOMMU_IOAS_MAP_FIXED_IOVA | IOMMU_IOAS_MAP_READABLE |
				 IOMMU_IOAS_MAP_WRITEABLE,
			.user_va = (uintptr_t)vaddr, .length = len, .iova = io,
		};

		rc = ioctl(d->iommufd, IOMMU_IOAS_MAP, &m);
	} else {
		struct vfio_iommu_type1_dma_map m = {
			.argsz = sizeof(m),
			.flags = VFIO_DMA_MAP_FLAG_READ | VFIO_DMA_MAP_FLAG_WRITE,
			.vaddr = (uintptr_t)vaddr, .iova = io, .size = len,
		};

		rc = ioctl(d->container, VFIO_IOMMU_MAP_DMA, &m);
	}
	if (rc) {
		int e = errno;

		sio_iova_put(&d->iova, io);
		if (e == ENOMEM)
			return sio__err(ENOMEM, "IOMMU map of %llu bytes failed: pinning exceeds "
					"the locked-memory limit (raise ulimit -l) or memory is short",
					(unsigned long long)len);
		return sio__err(e, "IOMMU map of %llu bytes at IOVA 0x%llx: %s",
				(unsigned long long)len, (unsigned long long)io, strerror(e));
	}
	*iova = io;
	return 0;
}

int sio_vfio_dma_unmap(struct sio_vfio_dev *d, uint64_t iova, uint64_t len)
{
	int rc;

	if (d->mode == SIO_VFIO_IOMMUFD) {
		struct iommu_ioas_unmap u = {
			.size = sizeof(u), .ioas_id = d->ioas, .iova = iova, .length = len,
		};

		rc = ioctl(d->iommufd, IOMMU_IOAS_UNMAP, &u);
	} else {
		struct vfio_iommu_type1_dma_unmap u = {
			.argsz = sizeof(u), .iova = iova, .size = len,
		};

		rc = ioctl(d->container, VFIO_IOMMU_UNMAP_DMA, &u);
	}
	if (rc)
		return sio__err(errno, "IOMMU unmap of IOVA 0x%llx: %s",
				(unsigned long long)iova, strerror(errno));
	return sio_iova_put(&d->iova, iova);
}

static int lend_map(void *priv, void *va, uint64_t len, uint64_t mask, uint64_t *bus)
{
	return sio_vfio_dma_map_below(priv, va, len, mask, bus);
}

static int lend_unmap(void *priv, void *va, uint64_t bus, uint64_t len)
{
	return sio_vfio_dma_unmap(priv, bus, len);
}

static int lend_irq_set(void *priv, unsigned int kinds, int nvec, const int *fds)
{
	return sio_vfio_irq_set(priv, kinds, nvec, fds);
}

static int lend_irq_off(void *priv, int kind)
{
	return sio_vfio_irq_off(priv, kind);
}

static int lend_irq_unmask(void *priv)
{
	return sio_vfio_irq_unmask(priv);
}

int sio_vfio_lend(const char *fabric, const char *bdf, enum sio_vfio_mode mode,
		  volatile sig_atomic_t *stop, FILE *log)
{
	return sio_vfio_lend_opts(fabric, bdf, mode, NULL, stop, log);
}

int sio_vfio_lend_opts(const char *fabric, const char *bdf, enum sio_vfio_mode mode,
		       const struct sio_lend_opts *o, volatile sig_atomic_t *stop, FILE *log)
{
	struct sio_vfio_dev d;
	struct sio_lend_dev ld = { .kind = "vfio", .backend = SIO_BACKEND_VFIO, .priv = &d,
				   .dma_map = lend_map, .dma_unmap = lend_unmap,
				   .irq_set = lend_irq_set, .irq_off = lend_irq_off,
				   .irq_unmask = lend_irq_unmask, .opts = o };
	int rc = sio_vfio_open(bdf, mode, &d);

	if (rc)
		return rc;
	/* a borrower's CQ may name its vector before the borrower takes it */
	sio_vfio_irq_standby(&d);
	ld.cfg = cfg_of(&d);
	for (int b = 0; b < SIO_MAX_BARS; b++) {
		ld.bar[b].size = d.region[b].size;
		ld.bar[b].offset = d.region[b].offset;
		ld.bar[b].fd = d.fd;	/* every region is an offset of the device fd */
		ld.bar[b].mmap = d.region[b].flags & VFIO_REGION_INFO_FLAG_MMAP;
	}
	snprintf(ld.how, sizeof(ld.how), "%s; %d IOVA range(s)",
		 d.mode == SIO_VFIO_IOMMUFD ? "iommufd" : "VFIO type1", d.iova.nranges);
	/* without it, a removal waits until the lender is stopped */
	ld.req_fd = sio_vfio_req_eventfd(&d);
	rc = sio__lend(fabric, &ld, stop, log);
	if (ld.req_fd >= 0)
		close(ld.req_fd);
	sio_vfio_close(&d);
	return rc;
}
