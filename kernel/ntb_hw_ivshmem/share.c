// SPDX-License-Identifier: GPL-2.0 OR MIT
/*
 * ntb_hw_ivshmem: functions that share one region.
 *
 * A host cabled through two NTBs reaches its own memory through both: a
 * buffer exported through an inbound window of one NTB can be exported
 * through the other's too, and a peer reaches the same bytes through
 * either. Two ivshmem-doorbell functions of a guest are two NTBs; backed by
 * one file (two servers given the same --shm), the same bytes sit behind
 * both BAR2s. With shared=N, N functions of every guest do so: each keeps a
 * header of its own (descriptor page, slots) at the place of its rank among
 * the guest's ivshmem-doorbell functions by PCI address, the same in every
 * guest, and the ports' areas lie where every function places them. The
 * doorbells stay each function's own (each server its eventfds): a fault
 * of one function is that function's alone.
 *
 * What that asks of the driver:
 *   - one allocator for all of them: a region handed out through one is
 *     never handed out through another (struct ivntb_regions);
 *   - a translation of one function's window onto a buffer another one
 *     handed out: the bus address is the other BAR2's, the bytes are at the
 *     same offset of this one's. The region is held while translated, so
 *     that the other function's removal, which frees its buffers, does not
 *     hand it to another user while a peer still writes into it;
 *   - proof that the file is one: a function probed after another reads
 *     the other's slot, through its own BAR2, as the other wrote it.
 */
#include <linux/list.h>
#include <linux/module.h>
#include <linux/pci.h>

#include "ntb_hw_ivshmem.h"

static int shared;
module_param(shared, int, 0444);
MODULE_PARM_DESC(shared,
		 "ivshmem-doorbell functions of each guest backed by one file, as one host's memory sits behind its NTBs (2-4; default 0: each function a region of its own)");

/* the list below; irqsave: a translation may come in any context */
static DEFINE_SPINLOCK(ivntb_share_lock);
static LIST_HEAD(ivntb_siblings);
static struct ivntb_regions ivntb_shared_regions = {
	.lock = __SPIN_LOCK_UNLOCKED(ivntb_shared_regions.lock),
};

/* How many functions share a region: 1 when none do. */
int ivntb_share_count(void)
{
	return shared > 1 ? shared : 1;
}

int ivntb_share_check_param(void)
{
	if (shared >= 0 && shared <= IVNTB_MAX_SHARED)
		return 0;
	pr_err("%s: shared=%d: 2 to %d functions share a region (0: none)\n",
	       IVNTB_NAME, shared, IVNTB_MAX_SHARED);
	return -EINVAL;
}

/* An ivshmem-doorbell function: ivshmem with MSI-X (a plain one has none). */
static bool ivntb_is_doorbell(struct pci_dev *pdev)
{
	return pdev->vendor == PCI_VENDOR_ID_REDHAT_QUMRANET &&
	       pdev->device == 0x1110 && pdev->msix_cap;
}

static bool ivntb_pci_before(struct pci_dev *a, struct pci_dev *b)
{
	if (pci_domain_nr(a->bus) != pci_domain_nr(b->bus))
		return pci_domain_nr(a->bus) < pci_domain_nr(b->bus);
	if (a->bus->number != b->bus->number)
		return a->bus->number < b->bus->number;
	return a->devfn < b->devfn;
}

/*
 * The function's header in a shared region: its rank among this guest's
 * ivshmem-doorbell functions by PCI address, which a rebind, or a probe in
 * another order, does not change. 0 when no region is shared.
 */
int ivntb_share_rank(struct ivntb_dev *iv)
{
	struct pci_dev *p = NULL;
	int rank = 0;

	if (ivntb_share_count() == 1)
		return 0;
	while ((p = pci_get_device(PCI_VENDOR_ID_REDHAT_QUMRANET, 0x1110, p)))
		if (p != iv->pdev && ivntb_is_doorbell(p) &&
		    ivntb_pci_before(p, iv->pdev))
			rank++;
	if (rank < ivntb_share_count())
		return rank;
	dev_err(&iv->pdev->dev,
		"shared=%d, but this is ivshmem-doorbell function %d of this guest (by PCI address): give it a region of its own, or shared=%d\n",
		shared, rank + 1, rank + 1);
	return -ERANGE;
}

/* The allocator's state: the shared one, or the function's own. */
void ivntb_share_regions(struct ivntb_dev *iv)
{
	if (ivntb_share_count() == 1) {
		spin_lock_init(&iv->own_regions.lock);
		iv->rg = &iv->own_regions;
	} else {
		iv->rg = &ivntb_shared_regions;
	}
}

/*
 * @sib and @iv are one file: the same layout but for the header, the same
 * port, and @sib's slot, read through @iv's BAR2, holds @sib's session.
 */
static int ivntb_same_file(struct ivntb_dev *iv, struct ivntb_dev *sib)
{
	struct ivntb_slot *s;

	if (sib->port != iv->port) {
		dev_err(&iv->pdev->dev,
			"shared=%d: this function is port %d, %s port %d: the servers gave this guest different peer ids (start the guests one at a time)\n",
			shared, iv->port, pci_name(sib->pdev), sib->port);
		return -EINVAL;
	}
	if (sib->shm_size != iv->shm_size || sib->data_off != iv->data_off ||
	    sib->ports != iv->ports) {
		dev_err(&iv->pdev->dev,
			"shared=%d: BAR2 is %pa bytes for %d ports, %s's %pa for %d: not one file (give their servers the same --shm)\n",
			shared, &iv->shm_size, iv->ports, pci_name(sib->pdev),
			&sib->shm_size, sib->ports);
		return -EINVAL;
	}
	s = iv->hdr + sib->slot_off + (u64)sib->port * sib->slot_size;
	if (le64_to_cpu(READ_ONCE(s->session)) != sib->session) {
		dev_err(&iv->pdev->dev,
			"shared=%d: this function's BAR2 does not show what %s wrote into its own: not one file (give their servers the same --shm)\n",
			shared, pci_name(sib->pdev));
		return -EINVAL;
	}
	return 0;
}

/* Join this guest's functions of the shared region, once proven one file. */
int ivntb_share_add(struct ivntb_dev *iv)
{
	struct ivntb_dev *sib;
	unsigned long flags;
	int ret = 0;

	INIT_LIST_HEAD(&iv->sibling);
	if (ivntb_share_count() == 1)
		return 0;
	spin_lock_irqsave(&ivntb_share_lock, flags);
	list_for_each_entry(sib, &ivntb_siblings, sibling) {
		ret = ivntb_same_file(iv, sib);
		if (ret)
			break;
	}
	if (!ret)
		list_add_tail(&iv->sibling, &ivntb_siblings);
	spin_unlock_irqrestore(&ivntb_share_lock, flags);
	if (!ret)
		dev_info(&iv->pdev->dev,
			 "header %d of a region shared by %d functions\n",
			 iv->rank, shared);
	return ret;
}

void ivntb_share_del(struct ivntb_dev *iv)
{
	unsigned long flags;

	spin_lock_irqsave(&ivntb_share_lock, flags);
	list_del_init(&iv->sibling);
	spin_unlock_irqrestore(&ivntb_share_lock, flags);
}

/*
 * @addr in another function's BAR2, as that function's allocator hands
 * out buffers: the same offset in @iv's, into *@addr. False when it is no
 * sibling's.
 */
bool ivntb_share_xlat(struct ivntb_dev *iv, dma_addr_t *addr)
{
	struct ivntb_dev *sib;
	unsigned long flags;
	bool found = false;

	spin_lock_irqsave(&ivntb_share_lock, flags);
	list_for_each_entry(sib, &ivntb_siblings, sibling) {
		if (sib == iv || *addr < sib->shm_bus ||
		    *addr - sib->shm_bus >= sib->shm_size)
			continue;
		*addr = iv->shm_bus + (*addr - sib->shm_bus);
		found = true;
		break;
	}
	spin_unlock_irqrestore(&ivntb_share_lock, flags);
	return found;
}
