// SPDX-License-Identifier: GPL-2.0 OR MIT
/*
 * smartio_ntb: mappings of inbound buffers and outbound windows.
 *
 * A window or buffer is mapped through one open file at a time (another
 * file's mmap() of it is -EBUSY); that file may map it several times, for
 * the processes that share it (fork, SCM_RIGHTS). Whole pages at its mmap
 * offset.
 *
 * mmap() checks the request and maps nothing: pages are filled in at fault
 * time, under the device lock, and only while the window or buffer is still
 * the one that was mapped (its generation). Revocation takes the same lock,
 * moves the generation on, then zaps the pages of every process (all open
 * files of a device share the mapping of one anonymous inode, so
 * unmap_mapping_range() reaches them all). A fault therefore either comes
 * before a revocation (and its page is zapped) or after it (and sees the new
 * generation); a VMA that mmap() made but did not yet link into the inode's
 * mapping cannot keep a page of freed or dead memory.
 *
 * A revoked page faults in a page of the mapping's own, filled with ones, at
 * every address: loads read all ones (what a load through a dead PCIe link
 * returns) until the process stores there, and its stores reach no peer and
 * no other process.
 */
#include <linux/dma-mapping.h>
#include <linux/fs.h>
#include <linux/io.h>
#include <linux/mm.h>
#include <linux/mount.h>
#include <linux/pseudo_fs.h>
#include <linux/slab.h>
#include <linux/vmalloc.h>

#include "compat.h"
#include "smartio_ntb.h"

#define SNTB_FS_MAGIC	0x534e5442	/* "SNTB" */
/* pages a fault fills in, from the faulting one on */
#define SNTB_FAULT_AROUND	16

/* What a mapping maps; shared by the VMAs a munmap() splits it into. */
struct sntb_map {
	struct kref kref;
	struct sntb_dev *sd;
	struct sntb_file *f;
	bool out;
	int pidx;
	int widx;
	u64 gen;		/* of the window or buffer when mapped */
	phys_addr_t base;	/* outbound: the window's CPU address */
	u64 size;		/* the window's or buffer's bytes */
	struct page *sink;	/* the revoked pages' page, made when needed */
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

/* The offset of a mapping within its window or buffer. */
static u64 sntb_within(u64 off)
{
	return off & (SNTB_MMAP_SPAN - 1);
}

/*
 * Revoke the mappings of outbound window @widx (device lock held): faults
 * from now on see the new generation; the pages they filled in before are
 * zapped here.
 */
void sntb_revoke_out(struct sntb_dev *sd, int widx)
{
	lockdep_assert_held(&sd->lock);
	sd->out[widx].gen++;
	unmap_mapping_range(sd->inode->i_mapping, SIO_NTB_MMAP_OUTBOUND(widx),
			    SNTB_MMAP_SPAN, 1);
}

/* Revoke every mapping of the device (device lock held). */
void sntb_revoke_all(struct sntb_dev *sd)
{
	int i;

	lockdep_assert_held(&sd->lock);
	for (i = 0; i < sd->peer_mws; i++)
		sd->out[i].gen++;
	for (i = 0; i < sd->peers * sd->in_max; i++)
		sd->in[i].gen++;
	unmap_mapping_range(sd->inode->i_mapping, 0, 0, 1);
}

static void sntb_map_free(struct kref *kref)
{
	struct sntb_map *map = container_of(kref, struct sntb_map, kref);

	if (map->sink)
		__free_page(map->sink);
	kfree(map);
}

/* The count of mappings of the object (device lock held). */
static unsigned int *sntb_map_count(struct sntb_map *map)
{
	if (map->out)
		return &map->sd->out[map->widx].mapped;
	return &sntb_in(map->sd, map->pidx, map->widx)->mapped;
}

static void sntb_vm_open(struct vm_area_struct *vma)
{
	struct sntb_map *map = vma->vm_private_data;

	/* the counts are the device's, which the lock keeps */
	mutex_lock(&map->sd->lock);
	(*sntb_map_count(map))++;
	mutex_unlock(&map->sd->lock);
	kref_get(&map->kref);
}

static void sntb_vm_close(struct vm_area_struct *vma)
{
	struct sntb_map *map = vma->vm_private_data;
	struct sntb_dev *sd = map->sd;

	/* as in sntb_vm_open() */
	mutex_lock(&sd->lock);
	if (!--(*sntb_map_count(map)) && map->out) {
		struct sntb_out *out = &sd->out[map->widx];

		out->owner = NULL;
		if (out->wc)
			arch_io_free_memtype_wc(out->wc_base, out->wc_size);
		out->wc = false;
	}
	mutex_unlock(&sd->lock);
	kref_put(&map->kref, sntb_map_free);
}

/* Is what @map maps still there, as it was mapped? (device lock held) */
static bool sntb_map_live(struct sntb_dev *sd, struct sntb_map *map)
{
	struct sntb_in *in;

	if (!sd->ntb)
		return false;
	if (map->out)
		return sd->out[map->widx].gen == map->gen;
	in = sntb_in(sd, map->pidx, map->widx);
	return in->gen == map->gen && in->owner == map->f && in->vaddr;
}

/*
 * Insert @pfn at @addr. Every area of ours is VM_PFNMAP (never
 * VM_MIXEDMAP, where vmf_insert_pfn() BUGs on a page frame that has a
 * struct page): page frames of RAM and of device memory alike go in as
 * special entries, which hold no page reference, as remap_pfn_range()
 * would have them; and vfio's DMA mapping of a process's memory follows
 * such an area's page frames (GUP refuses them).
 */
static vm_fault_t sntb_insert(struct vm_area_struct *vma, unsigned long addr,
			      unsigned long pfn)
{
	return vmf_insert_pfn(vma, addr, pfn);
}

/* A revoked page: the mapping's page of ones. */
static vm_fault_t sntb_fault_sink(struct vm_fault *vmf, struct sntb_map *map)
{
	if (!map->sink) {	/* under the device lock: one is made */
		map->sink = alloc_page(GFP_KERNEL);
		if (!map->sink)
			return VM_FAULT_OOM;
		memset(page_address(map->sink), 0xff, PAGE_SIZE);
	}
	return sntb_insert(vmf->vma, vmf->address, page_to_pfn(map->sink));
}

/*
 * The page frame of @vaddr in an inbound buffer: dma-iommu remaps its pages
 * into vmalloc space, and so does a hardware driver that hands out its own
 * device memory (memremap()); dma-direct hands out the linear map.
 */
static unsigned long sntb_buf_pfn(void *vaddr)
{
	struct page *page;

	if (!is_vmalloc_addr(vaddr))
		return page_to_pfn(virt_to_page(vaddr));
	page = vmalloc_to_page(vaddr);
	return page ? page_to_pfn(page) : 0;
}

/* The page frame at @within of what @map maps (device lock held), or 0. */
static unsigned long sntb_map_pfn(struct sntb_map *map, u64 within)
{
	if (within >= map->size)
		return 0;
	if (map->out)
		return PHYS_PFN(map->base + within);
	return sntb_buf_pfn(sntb_in(map->sd, map->pidx, map->widx)->vaddr +
			    within);
}

/*
 * A fault fills in the faulting page and the next few of the area, under
 * the device lock, so that no revocation comes between the check of the
 * generation and the pages it lets in.
 */
static vm_fault_t sntb_vm_fault(struct vm_fault *vmf)
{
	struct vm_area_struct *vma = vmf->vma;
	struct sntb_map *map = vma->vm_private_data;
	struct sntb_dev *sd = map->sd;
	u64 within = sntb_within((u64)vmf->pgoff << PAGE_SHIFT);
	unsigned long addr, pfn;
	vm_fault_t ret;
	int i;

	/* revocation holds it from the generation's move to the zap */
	mutex_lock(&sd->lock);
	if (!sntb_map_live(sd, map)) {
		ret = sntb_fault_sink(vmf, map);
		goto out;
	}
	pfn = sntb_map_pfn(map, within);
	if (!pfn) {
		ret = VM_FAULT_SIGBUS;
		goto out;
	}
	ret = sntb_insert(vma, vmf->address, pfn);
	addr = vmf->address + PAGE_SIZE;
	for (i = 1; i < SNTB_FAULT_AROUND && addr < vma->vm_end &&
	     !(ret & VM_FAULT_ERROR); i++, addr += PAGE_SIZE) {
		pfn = sntb_map_pfn(map, within + i * PAGE_SIZE);
		/* present, or none: only the faulting one counts */
		if (!pfn || sntb_insert(vma, addr, pfn) & VM_FAULT_ERROR)
			break;
	}
out:
	mutex_unlock(&sd->lock);
	return ret;
}

static const struct vm_operations_struct sntb_vm_ops = {
	.open	= sntb_vm_open,
	.close	= sntb_vm_close,
	.fault	= sntb_vm_fault,
};

/*
 * Map @len bytes at @within of the file's buffer of inbound window (pidx,
 * widx). The pages are the buffer's, as dma_alloc_coherent() gave them
 * (RAM, or a driver's device memory), mapped as dma_direct_mmap() maps
 * them: VM_PFNMAP, the buffer's own memory type.
 */
static int sntb_mmap_in(struct sntb_dev *sd, struct sntb_map *map,
			struct vm_area_struct *vma, u64 within, u64 len)
{
	struct sntb_in *in;

	if (map->pidx >= sd->peers || map->widx >= sd->in_max)
		return -EINVAL;
	in = sntb_in(sd, map->pidx, map->widx);
	if (in->owner != map->f || !in->vaddr)
		return -ENXIO;	/* not the file's buffer: MW_ALLOC first */
	if (within + len > PAGE_ALIGN(in->size))
		return -EINVAL;
	map->gen = in->gen;
	map->size = PAGE_ALIGN(in->size);
	vm_flags_set(vma, VM_IO | VM_PFNMAP);
	return 0;
}

/*
 * The peer outbound window @widx reaches: the one it is translated to, else
 * by the numbering of <smartio/ntb.h>; -1 where that is not known.
 */
int sntb_out_pidx(struct sntb_dev *sd, int widx)
{
	if (sd->out[widx].xlat_owner)
		return sd->out[widx].xlat_pidx;
	return sd->mws_per_peer ? widx / sd->mws_per_peer : -1;
}

/*
 * Map @len bytes at @within of outbound window widx, write-combining: the
 * first mapping of the window reserves that memory type for it, as
 * io_remap_pfn_range() would; where another type holds the range already,
 * the pages get that one (what x86's PAT allows).
 */
static int sntb_mmap_out(struct sntb_dev *sd, struct sntb_map *map,
			 struct vm_area_struct *vma, u64 within, u64 len)
{
	struct sntb_out *out;
	resource_size_t size;
	phys_addr_t base;
	int ret, pidx;

	if (map->widx >= sd->peer_mws)
		return -EINVAL;
	out = &sd->out[map->widx];
	if (out->mapped && out->owner != map->f)
		return -EBUSY;	/* mapped through another open file */
	pidx = sntb_out_pidx(sd, map->widx);
	if (pidx >= 0 &&
	    !(ntb_link_is_up(sd->ntb, NULL, NULL) & BIT_ULL(pidx)))
		return -ENOTCONN;
	ret = ntb_peer_mw_get_addr(sd->ntb, map->widx, &base, &size);
	if (ret)
		return ret;
	if (within + len > size || !PAGE_ALIGNED(base))
		return -EINVAL;
	if (!out->mapped && !out->wc) {
		out->wc = !arch_io_reserve_memtype_wc(base, size);
		out->wc_base = base;
		out->wc_size = size;
	}
	out->owner = map->f;
	map->gen = out->gen;
	map->base = base;
	map->size = size;
	vma->vm_page_prot = pgprot_writecombine(vma->vm_page_prot);
	vm_flags_set(vma, VM_IO | VM_PFNMAP);
	return 0;
}

int sntb_mmap(struct file *file, struct vm_area_struct *vma)
{
	struct sntb_file *f = file->private_data;
	struct sntb_dev *sd = f->sd;
	u64 off = (u64)vma->vm_pgoff << PAGE_SHIFT;
	u64 len = vma->vm_end - vma->vm_start, within = sntb_within(off);
	struct sntb_map *map;
	int ret;

	/* VM_MAYSHARE: MAP_SHARED of a read-only file has no VM_SHARED */
	if (!(vma->vm_flags & VM_MAYSHARE))
		return -EINVAL;	/* a private copy of a window means nothing */
	/* no such offset (SIO_NTB_MMAP_*), or past the window's offsets */
	if (off >> 43 || len > SNTB_MMAP_SPAN - within)
		return -EINVAL;
	map = kzalloc(sizeof(*map), GFP_KERNEL);
	if (!map)
		return -ENOMEM;
	kref_init(&map->kref);
	map->sd = sd;
	map->f = f;
	map->out = off >> 42;
	map->pidx = map->out ? -1 : (off >> 36) & 0x3f;
	map->widx = map->out ? (off >> 32) & 0x3ff : (off >> 32) & 0xf;
	vm_flags_set(vma, VM_DONTCOPY | VM_DONTEXPAND | VM_DONTDUMP);

	/* the windows, buffers and their counts are the device's */
	mutex_lock(&sd->lock);
	if (!sd->ntb)
		ret = -ENODEV;
	else if (map->out)
		ret = sntb_mmap_out(sd, map, vma, within, len);
	else
		ret = sntb_mmap_in(sd, map, vma, within, len);
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
