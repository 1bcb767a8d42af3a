// SPDX-License-Identifier: GPL-2.0 OR MIT
/*
 * smartio_ntb: mappings of inbound buffers and outbound windows.
 *
 * A window or buffer is mapped through one open file at a time (another
 * file's mmap() of it is -EBUSY); that file may map it several times, for
 * the processes that share it (fork, SCM_RIGHTS). Whole pages at its mmap
 * offset. Mappings are populated at mmap() time and never
 * fault, until they are revoked: every open file of a device shares the
 * mapping of one anonymous inode, so unmap_mapping_range() reaches every
 * process. A revoked page faults in a page of the mapping's own, filled with
 * ones, at every address: loads read all ones (what a load through a dead
 * PCIe link returns) until the process stores there, and its stores reach
 * no peer and no other process.
 */
#include <linux/dma-mapping.h>
#include <linux/fs.h>
#include <linux/mm.h>
#include <linux/mount.h>
#include <linux/pseudo_fs.h>
#include <linux/slab.h>

#include "smartio_ntb.h"

#define SNTB_FS_MAGIC	0x534e5442	/* "SNTB" */

/* What a mapping maps; shared by the VMAs a munmap() splits it into. */
struct sntb_map {
	struct kref kref;
	struct sntb_dev *sd;
	struct sntb_file *f;
	bool out;
	int pidx;
	int widx;
	struct page *sink;	/* the revoked pages' page, made on first need */
};

static struct vfsmount *sntb_mnt;
static int sntb_mnt_count;

static int sntb_fs_init_fs_context(struct fs_context *fc)
{
	return init_pseudo(fc, SNTB_FS_MAGIC) ? 0 : -ENOMEM;
}

/*
 * No .owner: a mount would pin the module, and the mount lasts until the
 * last device goes, which is at module exit. Open files pin the module.
 */
static struct file_system_type sntb_fs_type = {
	.name		= "smartio_ntb",
	.init_fs_context = sntb_fs_init_fs_context,
	.kill_sb	= kill_anon_super,
};

struct inode *sntb_inode_new(void)
{
	struct inode *inode;
	int ret;

	ret = simple_pin_fs(&sntb_fs_type, &sntb_mnt, &sntb_mnt_count);
	if (ret)
		return ERR_PTR(ret);
	inode = alloc_anon_inode(sntb_mnt->mnt_sb);
	if (IS_ERR(inode))
		simple_release_fs(&sntb_mnt, &sntb_mnt_count);
	return inode;
}

void sntb_inode_put(struct inode *inode)
{
	iput(inode);
	simple_release_fs(&sntb_mnt, &sntb_mnt_count);
}

/* Revoke the mappings of [@offset, @offset + @len) of every file (@len 0: all). */
void sntb_revoke(struct sntb_dev *sd, u64 offset, u64 len)
{
	unmap_mapping_range(sd->inode->i_mapping, offset, len, 1);
}

static void sntb_map_free(struct kref *kref)
{
	struct sntb_map *map = container_of(kref, struct sntb_map, kref);

	if (map->sink)
		__free_page(map->sink);
	kfree(map);
}

/* Count one more mapping of the object (device lock held). */
static unsigned int *sntb_map_count(struct sntb_map *map)
{
	if (map->out)
		return &map->sd->out[map->widx].mapped;
	return &sntb_in(map->sd, map->pidx, map->widx)->mapped;
}

static void sntb_vm_open(struct vm_area_struct *vma)
{
	struct sntb_map *map = vma->vm_private_data;

	mutex_lock(&map->sd->lock);
	(*sntb_map_count(map))++;
	mutex_unlock(&map->sd->lock);
	kref_get(&map->kref);
}

static void sntb_vm_close(struct vm_area_struct *vma)
{
	struct sntb_map *map = vma->vm_private_data;
	struct sntb_dev *sd = map->sd;

	mutex_lock(&sd->lock);
	if (!--(*sntb_map_count(map)) && map->out)
		sd->out[map->widx].owner = NULL;
	mutex_unlock(&sd->lock);
	kref_put(&map->kref, sntb_map_free);
}

/* Only a revoked page faults: it gets the mapping's page of ones. */
static vm_fault_t sntb_vm_fault(struct vm_fault *vmf)
{
	struct sntb_map *map = vmf->vma->vm_private_data;

	if (!READ_ONCE(map->sink)) {
		struct page *page = alloc_page(GFP_KERNEL);

		if (!page)
			return VM_FAULT_OOM;
		memset(page_address(page), 0xff, PAGE_SIZE);
		if (cmpxchg(&map->sink, NULL, page))
			__free_page(page);	/* another fault made one first */
	}
	return vmf_insert_pfn(vmf->vma, vmf->address, page_to_pfn(map->sink));
}

static const struct vm_operations_struct sntb_vm_ops = {
	.open	= sntb_vm_open,
	.close	= sntb_vm_close,
	.fault	= sntb_vm_fault,
};

/* Map @len bytes at @within of the file's buffer of inbound window (pidx, widx). */
static int sntb_mmap_in(struct sntb_dev *sd, struct sntb_map *map, struct vm_area_struct *vma,
			u64 within, u64 len)
{
	struct sntb_in *in;
	unsigned long pgoff = vma->vm_pgoff;
	int ret;

	if (map->pidx >= sd->peers || map->widx >= sd->in_max)
		return -EINVAL;
	in = sntb_in(sd, map->pidx, map->widx);
	if (in->owner != map->f || !in->vaddr)
		return -ENXIO;	/* no buffer of this file there: SIO_NTB_IOC_MW_ALLOC */
	if (within + len > PAGE_ALIGN(in->size))
		return -EINVAL;
	/* dma_mmap_coherent() takes vm_pgoff as the offset in the buffer */
	vma->vm_pgoff = within >> PAGE_SHIFT;
	ret = dma_mmap_coherent(sd->dma_dev, vma, in->vaddr, in->dma, in->size);
	vma->vm_pgoff = pgoff;
	return ret;
}

/* Map @len bytes at @within of outbound window widx, write-combining. */
static int sntb_mmap_out(struct sntb_dev *sd, struct sntb_map *map, struct vm_area_struct *vma,
			 u64 within, u64 len)
{
	struct sntb_out *out;
	resource_size_t size;
	phys_addr_t base;
	int ret;

	if (map->widx >= sd->peer_mws)
		return -EINVAL;
	out = &sd->out[map->widx];
	if (out->mapped && out->owner != map->f)
		return -EBUSY;	/* mapped through another open file */
	if (sd->mws_per_peer &&
	    !(ntb_link_is_up(sd->ntb, NULL, NULL) & BIT_ULL(map->widx / sd->mws_per_peer)))
		return -ENOTCONN;
	ret = ntb_peer_mw_get_addr(sd->ntb, map->widx, &base, &size);
	if (ret)
		return ret;
	if (within + len > size)
		return -EINVAL;
	vma->vm_page_prot = pgprot_writecombine(vma->vm_page_prot);
	ret = io_remap_pfn_range(vma, vma->vm_start, PHYS_PFN(base + within), len,
				 vma->vm_page_prot);
	if (!ret)
		out->owner = map->f;
	return ret;
}

int sntb_mmap(struct file *file, struct vm_area_struct *vma)
{
	struct sntb_file *f = file->private_data;
	struct sntb_dev *sd = f->sd;
	u64 off = (u64)vma->vm_pgoff << PAGE_SHIFT;
	u64 len = vma->vm_end - vma->vm_start, within = off & ((1ULL << 40) - 1);
	struct sntb_map *map;
	int ret;

	if (!(vma->vm_flags & VM_SHARED))
		return -EINVAL;	/* a private copy of a window means nothing */
	map = kzalloc(sizeof(*map), GFP_KERNEL);
	if (!map)
		return -ENOMEM;
	kref_init(&map->kref);
	map->sd = sd;
	map->f = f;
	map->out = (off >> 56) == 2;
	map->pidx = map->out ? -1 : (off >> 48) & 0xff;
	map->widx = map->out ? (off >> 40) & 0xffff : (off >> 40) & 0xff;
	vma->vm_flags |= VM_DONTCOPY | VM_DONTEXPAND | VM_DONTDUMP;

	mutex_lock(&sd->lock);
	if (!sd->ntb)
		ret = -ENODEV;
	else if (off >> 56 == 1)
		ret = sntb_mmap_in(sd, map, vma, within, len);
	else if (map->out)
		ret = sntb_mmap_out(sd, map, vma, within, len);
	else
		ret = -EINVAL;	/* no such offset: SIO_NTB_MMAP_INBOUND, _OUTBOUND */
	if (!ret) {
		(*sntb_map_count(map))++;
		vma->vm_private_data = map;
		vma->vm_ops = &sntb_vm_ops;
	}
	mutex_unlock(&sd->lock);
	if (ret)
		kfree(map);
	return ret;
}
