// SPDX-License-Identifier: GPL-2.0 OR MIT
/*
 * ntb_hw_ivshmem: memory windows.
 *
 * ivshmem cannot translate addresses: a store of one guest lands at the same
 * offset of BAR2 in every guest. So the memory port R exports is its area
 * of BAR2 (a region per inbound window of each peer), and an inbound
 * window R offers port S is a range of that area: by default the window's
 * own region, or wherever a translation puts it. S's outbound window
 * reaches that range (published in R's slot for S's peer_mw_get_addr());
 * a translation elsewhere than R's area is refused (-EOPNOTSUPP), unless
 * it is onto another function's BAR: emulated by forwarding (fwd.c).
 *
 * A translation is region aligned, as the window's own (mw_get_align's
 * addr_align is a region), unless the module is loaded with page_xlat=1:
 * then any page of the area, as NTB hardware with page-granular
 * translation lets a client export one part of a buffer (smartio's
 * per-segment translation).
 *
 * Clients allocate inbound buffers with dma_alloc_coherent() on the device
 * ntb_get_dma_dev() names, and translate a window to the buffer's DMA
 * address. That device is the driver's own: a child of the ivshmem function,
 * in no IOMMU group, whose DMA ops (ivntb_dma_ops) hand out the regions: the
 * one of the window that the task last asked ntb_mw_get_align() about
 * (every client asks before it allocates), else any free region of that
 * peer's area, else of any peer's. A translation to a buffer of another
 * window, or another peer's, is just that: ntb_perf asks the alignment of
 * one window and translates another, smartio exports one buffer to every
 * peer. A mapping the peer made before the translation changed keeps
 * reaching the old range; ivshmem has nothing to redirect it.
 *
 * ntb_tool and ntb_perf allocate on the PCI function itself. The function
 * gets the same DMA ops where the kernel's DMA API uses them; from 6.12 on,
 * a function in an IOMMU's DMA domain is served by dma-iommu directly, its
 * DMA ops unread: there, those two get RAM, which no peer reaches, and
 * their translations are refused (see ivntb_pci_ops_init()).
 *
 * Outbound window w reaches peer index w / mws, its inbound window w % mws
 * (the same as two-port hardware, where the peer's windows are all the
 * windows); mws is the number of ports, as ntb_perf indexes windows by the
 * global index of a port.
 */
#include <linux/dma-map-ops.h>
#include <linux/mm.h>
#include <linux/module.h>
#include <linux/sched.h>
#include <linux/slab.h>

#include "ntb_hw_ivshmem.h"

/* dev->dma_ops: CONFIG_DMA_OPS, CONFIG_ARCH_HAS_DMA_OPS from 6.12 on */
#if !defined(CONFIG_DMA_OPS) && !defined(CONFIG_ARCH_HAS_DMA_OPS)
#error "ntb_hw_ivshmem needs a kernel with DMA ops (CONFIG_DMA_OPS)"
#endif

static bool page_xlat;
module_param(page_xlat, bool, 0444);
MODULE_PARM_DESC(page_xlat,
		 "Translate inbound windows to any page of the port's area (default: whole regions only)");

bool ivntb_page_xlat(void)
{
	return page_xlat;
}

void ivntb_mw_init(struct ivntb_dev *iv)
{
	spin_lock_init(&iv->mw_lock);
	ivntb_share_regions(iv);
	memset(iv->hold, 0, sizeof(iv->hold));
	memset(iv->xlat, 0, sizeof(iv->xlat));
	memset(iv->oxlat, 0, sizeof(iv->oxlat));
}

static int ivntb_mw_check(struct ivntb_dev *iv, int pidx, int widx,
			  const char *what)
{
	if (pidx >= 0 && pidx < ivntb_peer_count(iv) &&
	    widx >= 0 && widx < iv->mws)
		return 0;
	dev_err_ratelimited(&iv->pdev->dev,
			    "%s: window %d of peer %d: %d windows per peer, %d peers\n",
			    what, widx, pidx, iv->mws, ivntb_peer_count(iv));
	return -EINVAL;
}

int ivntb_mw_count(struct ntb_dev *ntb, int pidx)
{
	struct ivntb_dev *iv = to_ivntb(ntb);

	if (pidx >= 0 && pidx < ivntb_peer_count(iv))
		return iv->mws;
	dev_err_ratelimited(&iv->pdev->dev,
			    "mw_count: no peer %d of %d\n",
			    pidx, ivntb_peer_count(iv));
	return -EINVAL;
}

static void ivntb_hint_set(struct ivntb_dev *iv, int pidx, int widx)
{
	struct ivntb_hint *h = NULL;
	unsigned long flags;
	int i;

	spin_lock_irqsave(&iv->mw_lock, flags);
	for (i = 0; i < IVNTB_HINTS && !h; i++)
		if (iv->hint[i].task == current)
			h = &iv->hint[i];
	if (!h)
		h = &iv->hint[iv->hint_next++ % IVNTB_HINTS];
	/* the pointer is compared, never followed: a stale one is harmless */
	h->task = current;
	h->pidx = pidx;
	h->widx = widx;
	spin_unlock_irqrestore(&iv->mw_lock, flags);
}

int ivntb_mw_get_align(struct ntb_dev *ntb, int pidx, int widx,
		       resource_size_t *addr_align, resource_size_t *size_align,
		       resource_size_t *size_max)
{
	struct ivntb_dev *iv = to_ivntb(ntb);
	int ret = ivntb_mw_check(iv, pidx, widx, "mw_get_align");

	if (ret)
		return ret;
	ivntb_hint_set(iv, pidx, widx);
	/*
	 * a translation is a whole region (or a page of the area): at most a
	 * region
	 */
	if (addr_align)
		*addr_align = ivntb_profile_addr_align(iv, page_xlat);
	if (size_align)
		*size_align = ivntb_profile_size_align(iv);
	if (size_max)
		*size_max = ivntb_region_size(iv);
	return 0;
}

/* Publish window @widx's translation for the peer's peer_mw_get_addr(). */
static void ivntb_xlat_publish(struct ivntb_dev *iv, int pidx, int widx)
{
	struct ivntb_slot *s = iv->slot;
	int port = ivntb_pidx_port(iv, pidx);

	WRITE_ONCE(s->xlat[port][widx].pages, 0);	/* never a torn pair */
	wmb();	/* no translation before its page changes */
	WRITE_ONCE(s->xlat[port][widx].page,
		   cpu_to_le32(iv->xlat[pidx][widx].page));
	wmb();	/* the page before the size that makes it valid */
	WRITE_ONCE(s->xlat[port][widx].pages,
		   cpu_to_le32(iv->xlat[pidx][widx].pages));
}

/* The region of peer @pidx's area at bus address @addr, or -1. */
static int ivntb_region_at(struct ivntb_dev *iv, int pidx, dma_addr_t addr)
{
	int sender = ivntb_pidx_port(iv, pidx);
	dma_addr_t base = iv->shm_bus +
			  ivntb_region_off(iv, iv->port, sender, 0);
	u64 off = addr - base;

	if (addr < base || off >= ((u64)iv->mws << iv->region_shift) ||
	    (off & (ivntb_region_size(iv) - 1)))
		return -1;
	return off >> iv->region_shift;
}

static bool ivntb_region_of(struct ivntb_dev *iv, dma_addr_t handle,
			    int *pidx, int *region);

/* Let go of a hold (see ivntb_region_hold()); rg->lock held. */
static void ivntb_region_release(struct ivntb_regions *rg, int h)
{
	if (h--)
		rg->held[h / IVNTB_MAX_MWS][h % IVNTB_MAX_MWS]--;
}

/*
 * @size bytes at *@addr of another function's BAR2 (share.c): into *@addr
 * the same bytes in this one's, and into *@h a hold on the region they lie
 * in, so that no other user is handed it while a window reaches it. Only a
 * buffer that function handed out, within one region. -EOPNOTSUPP: @addr
 * is no such function's.
 */
static int ivntb_region_hold(struct ivntb_dev *iv, dma_addr_t *addr,
			     resource_size_t size, int *h)
{
	u64 rmask = ivntb_region_size(iv) - 1;
	dma_addr_t mine = *addr;
	unsigned long flags;
	int p, r;

	*h = 0;
	if (!ivntb_share_xlat(iv, &mine))
		return -EOPNOTSUPP;
	if (ivntb_region_of(iv, mine & ~rmask, &p, &r) &&
	    (mine & rmask) + size <= rmask + 1) {
		spin_lock_irqsave(&iv->rg->lock, flags);
		if (test_bit(r, &iv->rg->used[p]) &&
		    iv->rg->held[p][r] < U8_MAX) {
			iv->rg->held[p][r]++;
			*h = 1 + p * IVNTB_MAX_MWS + r;
		}
		spin_unlock_irqrestore(&iv->rg->lock, flags);
	}
	if (!*h) {
		dev_err_ratelimited(&iv->pdev->dev,
				    "%pad is in the BAR2 of a function that shares this region, but in no buffer it handed out here (port %d)\n",
				    addr, iv->port);
		return -EINVAL;
	}
	*addr = mine;
	return 0;
}

/* The window's hold is now @h: the one it had is let go of. */
static void ivntb_mw_hold_set(struct ivntb_dev *iv, int pidx, int widx, int h)
{
	unsigned long flags;

	spin_lock_irqsave(&iv->rg->lock, flags);
	ivntb_region_release(iv->rg, iv->hold[pidx][widx]);
	iv->hold[pidx][widx] = h;
	spin_unlock_irqrestore(&iv->rg->lock, flags);
}

/* Removed: the regions of other functions' buffers are let go of. */
void ivntb_mw_fini(struct ivntb_dev *iv)
{
	int p, w;

	for (p = 0; p < ivntb_peer_count(iv); p++)
		for (w = 0; w < iv->mws; w++)
			ivntb_mw_hold_set(iv, p, w, 0);
}

/*
 * A translation onto another function's BAR: emulated (fwd.c), the peer's
 * window left on its own region. -EOPNOTSUPP: @addr is in no BAR.
 */
static int ivntb_mw_set_fwd(struct ivntb_dev *iv, int pidx, int widx,
			    dma_addr_t addr, resource_size_t size)
{
	unsigned long flags;
	int ret = ivntb_fwd_set(iv, pidx, widx, addr, size);

	if (ret)
		return ret;
	ivntb_mw_hold_set(iv, pidx, widx, 0);
	spin_lock_irqsave(&iv->mw_lock, flags);
	ivntb_xlat_publish(iv, pidx, widx);
	spin_unlock_irqrestore(&iv->mw_lock, flags);
	return 0;
}

/* The window onto @size bytes at @addr, of this port's area or not. */
static int ivntb_mw_xlat(struct ivntb_dev *iv, int pidx, int widx,
			 dma_addr_t addr, resource_size_t size, int h)
{
	dma_addr_t area = iv->shm_bus + ivntb_area_off(iv, iv->port);
	u64 align = max_t(u64, ivntb_profile_addr_align(iv, page_xlat),
			  PAGE_SIZE);
	const char *unit = align == PAGE_SIZE ? "pages" : "whole regions";
	unsigned long flags;
	int ret;

	/* the window reaches whole pages: a size_align of 1 rounds up */
	size = PAGE_ALIGN(size);
	if (addr < area || addr - area > ivntb_area_size(iv) - size ||
	    !IS_ALIGNED(addr - area, align)) {
		ret = h ? -EOPNOTSUPP : ivntb_mw_set_fwd(iv, pidx, widx, addr,
							  size);
		if (ret != -EOPNOTSUPP)
			return ret;
		dev_err_ratelimited(&iv->pdev->dev,
				    "window %d of port %d: ivshmem cannot translate to %pad, only to %s of this port's area (buffers from dma_alloc_coherent() on ntb_get_dma_dev()%s)\n",
				    widx, ivntb_pidx_port(iv, pidx), &addr,
				    unit,
				    iv->pci_ops ? " or the PCI function" :
				    "; this kernel ignores the PCI function's DMA ops");
		return -EOPNOTSUPP;
	}
	ivntb_fwd_clear(iv, pidx, widx);
	spin_lock_irqsave(&iv->mw_lock, flags);
	iv->xlat[pidx][widx].page = (addr - area) >> PAGE_SHIFT;
	iv->xlat[pidx][widx].pages = size >> PAGE_SHIFT;
	ivntb_xlat_publish(iv, pidx, widx);
	spin_unlock_irqrestore(&iv->mw_lock, flags);
	ivntb_mw_hold_set(iv, pidx, widx, h);
	dev_dbg(&iv->pdev->dev,
		"window %d of port %d: translated to page %llu of the area (%pa bytes)%s\n",
		widx, ivntb_pidx_port(iv, pidx),
		(unsigned long long)((addr - area) >> PAGE_SHIFT), &size,
		h ? ", another function's buffer" : "");
	return 0;
}

int ivntb_mw_set_trans(struct ntb_dev *ntb, int pidx, int widx,
		       dma_addr_t addr, resource_size_t size)
{
	struct ivntb_dev *iv = to_ivntb(ntb);
	int ret = ivntb_mw_check(iv, pidx, widx, "mw_set_trans");
	resource_size_t max = ivntb_region_size(iv);
	unsigned long flags;
	int h;

	if (ret)
		return ret;
	if (!size)
		return ivntb_mw_clear_trans(ntb, pidx, widx);
	ret = ivntb_region_hold(iv, &addr, size, &h);
	if (ret && ret != -EOPNOTSUPP)
		return ret;
	ret = ivntb_profile_xlat_check(iv, addr, size, page_xlat);
	if (ret)
		dev_err_ratelimited(&iv->pdev->dev,
				    "window %d of port %d: %pa bytes at %pad: the window has %pa, aligned as mw_get_align() says (profile=%s): %d\n",
				    widx, ivntb_pidx_port(iv, pidx), &size,
				    &addr, &max, iv->prof->name, ret);
	else
		ret = ivntb_mw_xlat(iv, pidx, widx, addr, size, h);
	if (ret && h) {
		spin_lock_irqsave(&iv->rg->lock, flags);
		ivntb_region_release(iv->rg, h);
		spin_unlock_irqrestore(&iv->rg->lock, flags);
	}
	return ret;
}

int ivntb_mw_clear_trans(struct ntb_dev *ntb, int pidx, int widx)
{
	struct ivntb_dev *iv = to_ivntb(ntb);
	int ret = ivntb_mw_check(iv, pidx, widx, "mw_clear_trans");
	unsigned long flags;

	if (ret)
		return ret;
	ivntb_fwd_clear(iv, pidx, widx);
	spin_lock_irqsave(&iv->mw_lock, flags);
	iv->xlat[pidx][widx].page = 0;
	iv->xlat[pidx][widx].pages = 0;
	ivntb_xlat_publish(iv, pidx, widx);
	spin_unlock_irqrestore(&iv->mw_lock, flags);
	ivntb_mw_hold_set(iv, pidx, widx, 0);
	return 0;
}

int ivntb_peer_mw_count(struct ntb_dev *ntb)
{
	struct ivntb_dev *iv = to_ivntb(ntb);

	return ivntb_peer_count(iv) * iv->mws;
}

/* Outbound window @widx's outbound translation, if it has one. */
static bool ivntb_oxlat_get(struct ivntb_dev *iv, int widx, phys_addr_t *base,
			    resource_size_t *size)
{
	unsigned long flags;
	u64 off, len;

	spin_lock_irqsave(&iv->mw_lock, flags);
	off = iv->oxlat[widx].off;
	len = iv->oxlat[widx].size;
	spin_unlock_irqrestore(&iv->mw_lock, flags);
	if (!len)
		return false;
	if (base)
		*base = iv->shm_phys + off;
	if (size)
		*size = len;
	return true;
}

/*
 * Where outbound window @widx lands: its outbound translation (the idt
 * profile), else the peer's translation for us, read
 * from its slot, else the window's own region. A peer's bad value (outside
 * its area) must not send us elsewhere: it is the window's own region then.
 */
int ivntb_peer_mw_get_addr(struct ntb_dev *ntb, int widx, phys_addr_t *base,
			   resource_size_t *size)
{
	struct ivntb_dev *iv = to_ivntb(ntb);
	u64 off, len = ivntb_region_size(iv), page, pages = 0;
	struct ivntb_slot *s;
	int port, w;

	if (widx < 0 || widx >= ivntb_peer_mw_count(ntb)) {
		dev_err_ratelimited(&iv->pdev->dev,
				    "peer_mw_get_addr: outbound window %d of %d\n",
				    widx, ivntb_peer_mw_count(ntb));
		return -EINVAL;
	}
	if (ivntb_oxlat_get(iv, widx, base, size))
		return 0;
	port = ivntb_pidx_port(iv, widx / iv->mws);
	w = widx % iv->mws;
	s = ivntb_slot_of(iv, port);
	off = ivntb_region_off(iv, port, iv->port, w);
	if (le64_to_cpu(READ_ONCE(s->magic)) == IVNTB_SLOT_MAGIC) {
		pages = le32_to_cpu(READ_ONCE(s->xlat[iv->port][w].pages));
		/* pages, then page: the reverse of ivntb_xlat_publish() */
		rmb();
		page = le32_to_cpu(READ_ONCE(s->xlat[iv->port][w].page));
		if (pages && (pages << PAGE_SHIFT) <= len &&
		    (page << PAGE_SHIFT) <=
		    ivntb_area_size(iv) - (pages << PAGE_SHIFT)) {
			off = ivntb_area_off(iv, port) + (page << PAGE_SHIFT);
			len = pages << PAGE_SHIFT;
		} else {
			pages = 0;
		}
	}
	dev_dbg(&iv->pdev->dev,
		"outbound window %d: port %d's area at %llu (%llu bytes)%s\n",
		widx, port, off - ivntb_area_off(iv, port), len,
		pages ? ", translated" : "");
	if (base)
		*base = iv->shm_phys + off;
	if (size)
		*size = len;
	return 0;
}

/*
 * Outbound translation, as IDT's: this port's window @widx is sent to
 * @addr, a bus address of peer @pidx's guest, which that peer's driver
 * published with BAR2's bus address there. ivshmem reaches only BAR2: an
 * address outside the peer's area is refused (-EOPNOTSUPP), as mw_set_trans
 * refuses one outside this port's. Window @widx keeps its index: the
 * window's own region is what it reaches again once cleared.
 */
int ivntb_peer_mw_set_trans(struct ntb_dev *ntb, int pidx, int widx,
			    u64 addr, resource_size_t size)
{
	struct ivntb_dev *iv = to_ivntb(ntb);
	int port = ivntb_pidx_port(iv, pidx);
	struct ivntb_slot *s;
	unsigned long flags;
	u64 bus, off;
	int ret;

	if (pidx < 0 || pidx >= ivntb_peer_count(iv) ||
	    widx < 0 || widx >= ivntb_peer_mw_count(ntb))
		return -EINVAL;
	if (!size)
		return ivntb_peer_mw_clear_trans(ntb, pidx, widx);
	ret = ivntb_profile_xlat_check(iv, addr, size, false);
	if (ret) {
		dev_err_ratelimited(&iv->pdev->dev,
				    "peer_mw_set_trans: window %d to port %d: %pa bytes at %#llx: a window has %lu, the address 4-byte aligned\n",
				    widx, port, &size, addr,
				    (unsigned long)ivntb_region_size(iv));
		return ret;
	}
	s = ivntb_slot_of(iv, port);
	if (le64_to_cpu(READ_ONCE(s->magic)) != IVNTB_SLOT_MAGIC) {
		dev_err_ratelimited(&iv->pdev->dev,
				    "peer_mw_set_trans: port %d has no driver: its bus addresses are not known\n",
				    port);
		return -ENOTCONN;
	}
	rmb();	/* the slot's fields after the magic that vouches for them */
	bus = le64_to_cpu(READ_ONCE(s->bus));
	off = addr - bus;
	if (addr < bus || off < ivntb_area_off(iv, port) ||
	    off - ivntb_area_off(iv, port) > ivntb_area_size(iv) - size) {
		dev_err_ratelimited(&iv->pdev->dev,
				    "peer_mw_set_trans: window %d to port %d: ivshmem cannot translate to %#llx, only into that port's area of BAR2 (its buffers from dma_alloc_coherent() on ntb_get_dma_dev())\n",
				    widx, port, addr);
		return -EOPNOTSUPP;
	}
	spin_lock_irqsave(&iv->mw_lock, flags);
	iv->oxlat[widx].port = port;
	iv->oxlat[widx].off = off;
	iv->oxlat[widx].size = size;
	spin_unlock_irqrestore(&iv->mw_lock, flags);
	return 0;
}

int ivntb_peer_mw_clear_trans(struct ntb_dev *ntb, int pidx, int widx)
{
	struct ivntb_dev *iv = to_ivntb(ntb);
	unsigned long flags;

	if (pidx < 0 || pidx >= ivntb_peer_count(iv) ||
	    widx < 0 || widx >= ivntb_peer_mw_count(ntb))
		return -EINVAL;
	spin_lock_irqsave(&iv->mw_lock, flags);
	iv->oxlat[widx].size = 0;
	spin_unlock_irqrestore(&iv->mw_lock, flags);
	return 0;
}

/* --- the DMA ops of the DMA device (and the function) ------------------ */

/* Both the DMA device and the PCI function hold iv as their driver data. */
static struct ivntb_dev *ivntb_of_dev(struct device *dev)
{
	return dev_get_drvdata(dev);
}

/* Messages go out under the PCI function's name, which the log knows. */
static struct device *ivntb_msg_dev(struct device *dev)
{
	return &ivntb_of_dev(dev)->pdev->dev;
}

/* The peer index and region of the task's last ntb_mw_get_align(), consumed. */
static bool ivntb_hint_take(struct ivntb_dev *iv, int *pidx, int *region)
{
	int i;

	for (i = 0; i < IVNTB_HINTS; i++) {
		struct ivntb_hint *h = &iv->hint[i];

		if (h->task != current)
			continue;
		h->task = NULL;
		*pidx = h->pidx;
		*region = h->widx;
		return true;
	}
	return false;
}

/* Region @r of peer @p is neither handed out nor held; rg->lock held. */
static bool ivntb_region_free(struct ivntb_regions *rg, int p, int r)
{
	return !test_bit(r, &rg->used[p]) && !rg->held[p][r];
}

/* A free region of peer @p, @want if it is free: its index, or -1. */
static int ivntb_region_free_of(struct ivntb_dev *iv, int p, int want)
{
	int r;

	if (want >= 0 && ivntb_region_free(iv->rg, p, want))
		return want;
	for (r = 0; r < iv->mws; r++)
		if (ivntb_region_free(iv->rg, p, r))
			return r;
	return -1;
}

/*
 * A free region, taken: the hinted one, else one of the hinted peer's, else
 * any. Under rg->lock: the functions sharing a region share the allocator.
 */
static bool ivntb_region_pick(struct ivntb_dev *iv, int *pidx, int *region)
{
	int p, r = -1, want_p = -1, want_r = -1;
	unsigned long flags;

	spin_lock_irqsave(&iv->mw_lock, flags);
	ivntb_hint_take(iv, &want_p, &want_r);
	spin_unlock_irqrestore(&iv->mw_lock, flags);
	spin_lock_irqsave(&iv->rg->lock, flags);
	if (want_p >= 0)
		r = ivntb_region_free_of(iv, want_p, want_r);
	for (p = 0; p < ivntb_peer_count(iv) && r < 0; p++) {
		r = ivntb_region_free_of(iv, p, -1);
		want_p = p;
	}
	if (r >= 0)
		__set_bit(r, &iv->rg->used[want_p]);
	spin_unlock_irqrestore(&iv->rg->lock, flags);
	*pidx = want_p;
	*region = r;
	return r >= 0;
}

static void *ivntb_dma_alloc(struct device *dev, size_t size,
			     dma_addr_t *handle, gfp_t gfp,
			     unsigned long attrs)
{
	struct ivntb_dev *iv = ivntb_of_dev(dev);
	int pidx, region;
	void *vaddr;
	u64 off;

	if (size > ivntb_region_size(iv)) {
		dev_err_ratelimited(ivntb_msg_dev(dev),
				    "dma_alloc_coherent of %zu bytes: a window is %lu bytes (size_max of ntb_mw_get_align())\n",
				    size, (unsigned long)ivntb_region_size(iv));
		return NULL;
	}
	if (!ivntb_region_pick(iv, &pidx, &region)) {
		dev_err_ratelimited(ivntb_msg_dev(dev),
				    "dma_alloc_coherent: all %d window regions of port %d are in use\n",
				    ivntb_peer_count(iv) * iv->mws, iv->port);
		return NULL;
	}
	off = ivntb_region_off(iv, iv->port, ivntb_pidx_port(iv, pidx), region);
	dev_dbg(ivntb_msg_dev(dev),
		"dma_alloc_coherent: region %d of the area for port %d\n",
		region,
		ivntb_pidx_port(iv, pidx));
	vaddr = iv->area + (off - ivntb_area_off(iv, iv->port));
	memset(vaddr, 0, ivntb_region_size(iv));
	*handle = iv->shm_bus + off;
	return vaddr;
}

/* The peer index and region of a handle this allocator gave, or false. */
static bool ivntb_region_of(struct ivntb_dev *iv, dma_addr_t handle,
			    int *pidx, int *region)
{
	int p;

	for (p = 0; p < ivntb_peer_count(iv); p++) {
		*region = ivntb_region_at(iv, p, handle);
		if (*region >= 0) {
			*pidx = p;
			return true;
		}
	}
	return false;
}

static void ivntb_dma_free(struct device *dev, size_t size, void *vaddr,
			   dma_addr_t handle, unsigned long attrs)
{
	struct ivntb_dev *iv = ivntb_of_dev(dev);
	unsigned long flags;
	int pidx, region;
	bool was = false;

	if (ivntb_region_of(iv, handle, &pidx, &region)) {
		spin_lock_irqsave(&iv->rg->lock, flags);
		was = __test_and_clear_bit(region, &iv->rg->used[pidx]);
		spin_unlock_irqrestore(&iv->rg->lock, flags);
	}
	if (!was)
		dev_err_ratelimited(ivntb_msg_dev(dev),
				    "dma_free_coherent of %pad: not a buffer this device handed out\n",
				    &handle);
}

static int ivntb_dma_mmap(struct device *dev, struct vm_area_struct *vma,
			  void *cpu_addr, dma_addr_t handle, size_t size,
			  unsigned long attrs)
{
	struct ivntb_dev *iv = ivntb_of_dev(dev);
	unsigned long pages = PAGE_ALIGN(size) >> PAGE_SHIFT;
	int pidx, region;
	u64 off;

	if (!ivntb_region_of(iv, handle, &pidx, &region) ||
	    size > ivntb_region_size(iv) ||
	    vma->vm_pgoff >= pages || vma_pages(vma) > pages - vma->vm_pgoff) {
		dev_err_ratelimited(ivntb_msg_dev(dev),
				    "dma_mmap_coherent of %pad: not a buffer of this device, or past its %zu bytes\n",
				    &handle, size);
		return -ENXIO;
	}
	off = ivntb_region_off(iv, iv->port, ivntb_pidx_port(iv, pidx), region);
	return remap_pfn_range(vma, vma->vm_start,
			       PHYS_PFN(iv->shm_phys + off) + vma->vm_pgoff,
			       vma->vm_end - vma->vm_start, vma->vm_page_prot);
}

/* BAR2 has no struct pages to describe, and the function never does DMA. */
static int ivntb_dma_get_sgtable(struct device *dev, struct sg_table *sgt,
				 void *cpu_addr, dma_addr_t handle,
				 size_t size, unsigned long attrs)
{
	return -ENXIO;
}

static dma_addr_t ivntb_dma_map_page(struct device *dev, struct page *page,
				     unsigned long offset, size_t size,
				     enum dma_data_direction dir,
				     unsigned long attrs)
{
	dev_err_ratelimited(ivntb_msg_dev(dev),
			    "dma_map_page: the ivshmem function does no DMA\n");
	return DMA_MAPPING_ERROR;
}

static int ivntb_dma_map_sg(struct device *dev, struct scatterlist *sg,
			    int nents, enum dma_data_direction dir,
			    unsigned long attrs)
{
	dev_err_ratelimited(ivntb_msg_dev(dev),
			    "dma_map_sg: the ivshmem function does no DMA\n");
	return -EIO;
}

static dma_addr_t ivntb_dma_map_resource(struct device *dev,
					 phys_addr_t phys, size_t size,
					 enum dma_data_direction dir,
					 unsigned long attrs)
{
	dev_err_ratelimited(ivntb_msg_dev(dev),
			    "dma_map_resource: the ivshmem function does no DMA\n");
	return DMA_MAPPING_ERROR;
}

static int ivntb_dma_supported(struct device *dev, u64 mask)
{
	return 1;
}

static const struct dma_map_ops ivntb_dma_ops = {
	.alloc		= ivntb_dma_alloc,
	.free		= ivntb_dma_free,
	.mmap		= ivntb_dma_mmap,
	.get_sgtable	= ivntb_dma_get_sgtable,
	.map_page	= ivntb_dma_map_page,
	.map_sg		= ivntb_dma_map_sg,
	.map_resource	= ivntb_dma_map_resource,
	.dma_supported	= ivntb_dma_supported,
};

static void ivntb_dma_dev_release(struct device *dev)
{
	kfree(dev);
}

/*
 * ntb_tool and ntb_perf allocate their inbound buffers on the PCI function,
 * not on ntb_get_dma_dev()'s device: give the function our DMA ops too,
 * where the kernel's DMA API uses them. Which it does is asked of the API
 * itself, not guessed from a version: one page allocated on the function
 * comes from BAR2 only through these ops. Up to 6.11, the API calls a
 * device's DMA ops whenever it has some; from 6.12 on, a device in an
 * IOMMU's DMA domain is served by dma-iommu directly, its ops unread. There
 * the function keeps its own ops (no driver's ops should sit unused on a
 * device), and the log says what the clients that allocate on it will see.
 */
static void ivntb_pci_ops_init(struct ivntb_dev *iv)
{
	struct device *dev = &iv->pdev->dev;
	int pidx, region;
	dma_addr_t handle;
	bool ours;
	void *p;

	iv->orig_dma_ops = dev->dma_ops;
	set_dma_ops(dev, &ivntb_dma_ops);
	p = dma_alloc_coherent(dev, PAGE_SIZE, &handle, GFP_KERNEL);
	ours = p && ivntb_region_of(iv, handle, &pidx, &region);
	if (p)
		dma_free_coherent(dev, PAGE_SIZE, p, handle);
	if (ours) {
		iv->pci_ops = true;
		return;
	}
	set_dma_ops(dev, iv->orig_dma_ops);
	dev_warn(dev,
		 "this kernel's DMA API does not use the PCI function's DMA ops (an IOMMU's DMA domain serves it directly): clients that allocate inbound buffers on the function (ntb_tool, ntb_perf) get memory no peer reaches, and their windows are refused; those that use ntb_get_dma_dev() (ntb_transport, smartio_ntb) are not affected\n");
}

/*
 * The DMA device: a child of the function, never registered (no bus, so in
 * no IOMMU group: the DMA API has nothing but its DMA ops to call), which
 * hands out this port's area of BAR2, the only memory the peers reach.
 */
int ivntb_dma_init(struct ivntb_dev *iv)
{
	struct device *dev;
	int ret;

	dev = kzalloc(sizeof(*dev), GFP_KERNEL);
	if (!dev)
		return -ENOMEM;
	device_initialize(dev);
	dev->parent = &iv->pdev->dev;
	dev->release = ivntb_dma_dev_release;
	ret = dev_set_name(dev, "%s-dma", pci_name(iv->pdev));
	if (ret)
		goto err;
	dev_set_drvdata(dev, iv);
	set_dma_ops(dev, &ivntb_dma_ops);
	/* every bus address of BAR2 is reachable: the mask never bites */
	ret = dma_coerce_mask_and_coherent(dev, DMA_BIT_MASK(64));
	if (ret)
		goto err;
	iv->dma_dev = dev;
	ivntb_pci_ops_init(iv);
	return 0;
err:
	dev_err(&iv->pdev->dev, "cannot make the DMA device: %d\n", ret);
	put_device(dev);
	return ret;
}

/* After the clients are gone: they freed their buffers on it. */
void ivntb_dma_fini(struct ivntb_dev *iv)
{
	if (iv->pci_ops)
		set_dma_ops(&iv->pdev->dev, iv->orig_dma_ops);
	iv->pci_ops = false;
	put_device(iv->dma_dev);
	iv->dma_dev = NULL;
}
