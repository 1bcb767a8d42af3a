/* SPDX-License-Identifier: GPL-2.0 OR MIT */
/*
 * smartio_ntb: the kernel APIs it uses that changed after Linux 6.1, each
 * behind one helper, so that the rest of the module is written once.
 */
#ifndef SMARTIO_NTB_COMPAT_H
#define SMARTIO_NTB_COMPAT_H

#include <linux/mm.h>
#include <linux/version.h>

#if LINUX_VERSION_CODE < KERNEL_VERSION(6, 3, 0)
/* 6.3 made vm_flags read-only: writers go through vm_flags_set() */
static inline void vm_flags_set(struct vm_area_struct *vma,
				vm_flags_t flags)
{
	vma->vm_flags |= flags;
}
#endif

#endif
