/* SPDX-License-Identifier: MIT */
#ifndef SIO_VFIO_IOMMUFD_H
#define SIO_VFIO_IOMMUFD_H

/*
 * The iommufd and VFIO device-cdev uAPI (Linux 6.2 / 6.6). Debian 12's
 * kernel headers predate it, so the few definitions used here are copied
 * from include/uapi/linux/iommufd.h and vfio.h; the ABI is stable.
 */
#include <linux/types.h>
#include <linux/vfio.h>
#include <sys/ioctl.h>

#if __has_include(<linux/iommufd.h>)
#include <linux/iommufd.h>
#else
#define IOMMUFD_TYPE		(';')
#define IOMMUFD_CMD_IOAS_ALLOC	0x81
#define IOMMUFD_CMD_IOAS_IOVA_RANGES 0x84
#define IOMMUFD_CMD_IOAS_MAP	0x85
#define IOMMUFD_CMD_IOAS_UNMAP	0x86

struct iommu_ioas_alloc {
	__u32 size;
	__u32 flags;
	__u32 out_ioas_id;
};
#define IOMMU_IOAS_ALLOC	_IO(IOMMUFD_TYPE, IOMMUFD_CMD_IOAS_ALLOC)

struct iommu_iova_range {
	__aligned_u64 start;
	__aligned_u64 last;
};

struct iommu_ioas_iova_ranges {
	__u32 size;
	__u32 ioas_id;
	__u32 num_iovas;
	__u32 __reserved;
	__aligned_u64 allowed_iovas;
	__aligned_u64 out_iova_alignment;
};
#define IOMMU_IOAS_IOVA_RANGES	_IO(IOMMUFD_TYPE, IOMMUFD_CMD_IOAS_IOVA_RANGES)

enum iommufd_ioas_map_flags {
	IOMMU_IOAS_MAP_FIXED_IOVA = 1 << 0,
	IOMMU_IOAS_MAP_WRITEABLE = 1 << 1,
	IOMMU_IOAS_MAP_READABLE = 1 << 2,
};

struct iommu_ioas_map {
	__u32 size;
	__u32 flags;
	__u32 ioas_id;
	__u32 __reserved;
	__aligned_u64 user_va;
	__aligned_u64 length;
	__aligned_u64 iova;
};
#define IOMMU_IOAS_MAP		_IO(IOMMUFD_TYPE, IOMMUFD_CMD_IOAS_MAP)

struct iommu_ioas_unmap {
	__u32 size;
	__u32 ioas_id;
	__aligned_u64 iova;
	__aligned_u64 length;
};
#define IOMMU_IOAS_UNMAP	_IO(IOMMUFD_TYPE, IOMMUFD_CMD_IOAS_UNMAP)
#endif

#ifndef VFIO_DEVICE_BIND_IOMMUFD
struct vfio_device_bind_iommufd {
	__u32 argsz;
	__u32 flags;
	__s32 iommufd;
	__u32 out_devid;
};
#define VFIO_DEVICE_BIND_IOMMUFD	_IO(VFIO_TYPE, VFIO_BASE + 18)

struct vfio_device_attach_iommufd_pt {
	__u32 argsz;
	__u32 flags;
	__u32 pt_id;
};
#define VFIO_DEVICE_ATTACH_IOMMUFD_PT	_IO(VFIO_TYPE, VFIO_BASE + 19)
#endif

#endif
