/* SPDX-License-Identifier: GPL-2.0 OR MIT */
/*
 * smartio_ntb: the kernel APIs it uses that changed after Linux 6.1, each
 * behind one helper, so that the rest of the module is written once, for
 * 6.1 and for the kernels after it.
 */
#ifndef SMARTIO_NTB_COMPAT_H
#define SMARTIO_NTB_COMPAT_H

#include <linux/device.h>
#include <linux/eventfd.h>
#include <linux/fs.h>
#include <linux/mm.h>
#include <linux/ntb.h>
#include <linux/version.h>

/* The one comparison of kernel versions; compat helpers key on it. */
#define SNTB_KERNEL_BEFORE(major, minor) \
	(KERNEL_VERSION(major, minor, 0) > LINUX_VERSION_CODE)

#if SNTB_KERNEL_BEFORE(6, 3)
/* 6.3 made vm_flags read-only: writers go through vm_flags_set() */
static inline void vm_flags_set(struct vm_area_struct *vma,
				vm_flags_t flags)
{
	vma->vm_flags |= flags;
}
#endif

/* 6.4 dropped class_create()'s module argument */
static inline struct class *sntb_class_create(const char *name)
{
#if SNTB_KERNEL_BEFORE(6, 4)
	return class_create(THIS_MODULE, name);
#else
	return class_create(name);
#endif
}

/* 6.8 dropped eventfd_signal()'s count: it always adds 1 */
static inline void sntb_eventfd_signal(struct eventfd_ctx *ctx)
{
#if SNTB_KERNEL_BEFORE(6, 8)
	eventfd_signal(ctx, 1);
#else
	eventfd_signal(ctx);
#endif
}

/*
 * 6.12 removed no_llseek: a NULL .llseek is no seeking there (and, after
 * nonseekable_open(), on older kernels too).
 */
#if SNTB_KERNEL_BEFORE(6, 12)
#define SNTB_NO_LLSEEK	no_llseek
#else
#define SNTB_NO_LLSEEK	NULL
#endif

/*
 * Where inbound buffers are allocated: ntb_get_dma_dev() where the
 * headers have it (Kbuild looks), else the NTB's PCI function, which is
 * what the NTB clients used before it.
 */
static inline struct device *sntb_dma_dev(struct ntb_dev *ntb)
{
#ifdef SNTB_HAVE_NTB_GET_DMA_DEV
	return ntb_get_dma_dev(ntb);
#else
	return &ntb->pdev->dev;
#endif
}

#endif
