// SPDX-License-Identifier: GPL-2.0 OR MIT
/*
 * ntb_hw_ivshmem: translation onto another function's BAR, emulated.
 *
 * NTB hardware forwards a store in a peer's outbound window to whatever bus
 * address the inbound translation names, a device's BAR included: that is
 * how a remote host rings an NVMe controller's doorbell with one posted
 * write. ivshmem cannot: a peer's store lands in BAR2, nowhere else. So a
 * translation of inbound window W of peer P onto a BAR of a PCI device of
 * this kernel is emulated: the peer's outbound window keeps reaching W's own
 * region of this port's area (the slot publishes no translation), filled
 * with IVNTB_FWD_NONE; a kernel thread scans that region, takes each 32-bit
 * word that holds anything else (a compare-and-exchange back to
 * IVNTB_FWD_NONE, so a store that comes meanwhile waits for the next scan)
 * and writes it to the same offset of the BAR (writel: posted, in program
 * order). No user-space process takes part. A store of the value the word
 * had before is forwarded too: a queue created again starts its doorbell
 * at the value its last life left there.
 *
 * Semantics, and their limit: what reaches the BAR is each word's latest
 * value at a scan, in ascending address order within the scan. That is
 * what a register that carries only its latest value needs (an NVMe
 * doorbell: the tail or head written last is the one that counts). It is
 * not what hardware does for several stores to one word between two scans
 * (the earlier values are lost), for stores to different words (their order
 * within a scan is by address, not by time), for stores narrower or wider
 * than 32 bits, nor for a store of all ones (IVNTB_FWD_NONE, the mark of
 * no store: never forwarded; no doorbell takes it). A scan costs a read of
 * the whole window, so a forwarded window is at most IVNTB_FWD_MAX bytes.
 *
 * Off unless the module is loaded with bar_fwd=1 (or it is set later, in
 * /sys/module/ntb_hw_ivshmem/parameters): hardware profiles that cannot
 * translate onto a BAR, and smartio's relay, keep the refusal.
 *
 * A target is refused unless it lies entirely in one memory BAR of a PCI
 * device this kernel enumerated, not the ivshmem function's own, and not
 * RAM. The NTB client checks that its requester may translate there
 * (smartio_ntb: CAP_SYS_RAWIO). A target device removed while forwarding:
 * its mapping goes, the stores are dropped (counted), and the log says so.
 */
#include <linux/debugfs.h>
#include <linux/delay.h>
#include <linux/io.h>
#include <linux/ioport.h>
#include <linux/kthread.h>
#include <linux/module.h>
#include <linux/mutex.h>
#include <linux/pci.h>
#include <linux/seq_file.h>
#include <linux/slab.h>
#include <linux/wait.h>

#include "ntb_hw_ivshmem.h"

static bool bar_fwd;
module_param(bar_fwd, bool, 0644);
MODULE_PARM_DESC(bar_fwd,
		 "Emulate inbound translation onto another function's BAR by forwarding stores (default: refused, as before)");

#define IVNTB_FWD_MAX		SZ_64K
/* a word's value when no store came since the last scan */
#define IVNTB_FWD_NONE		0xffffffffU
/* the poll's sleep: short while stores come, backing off to this when idle */
#define IVNTB_FWD_MIN_US	20
#define IVNTB_FWD_MAX_US	2000

/* One forwarded window. */
struct ivntb_fwd_win {
	struct pci_dev *target;	/* NULL: the window is not forwarded */
	int bar;
	dma_addr_t bus;		/* the translation, as asked */
	u32 __iomem *dst;	/* NULL once the target is gone */
	u32 *src;		/* the window's region in this port's area */
	u32 words;
	u64 forwarded;
	u64 dropped;
};

struct ivntb_fwd {
	struct ivntb_dev *iv;
	struct mutex lock;	/* @win, and the scan that reads it */
	struct ivntb_fwd_win win[IVNTB_MAX_PORTS - 1][IVNTB_MAX_MWS];
	int active;
	struct task_struct *thread;
	wait_queue_head_t wake;
	struct notifier_block nb;
	struct dentry *dbg;
};

/* The memory BAR of a PCI device (not @self) that holds [@addr, +@size). */
static struct pci_dev *ivntb_fwd_bar_of(struct pci_dev *self, dma_addr_t addr,
					u64 size, int *barp)
{
	struct pci_dev *pdev = NULL;
	int bar;

	for_each_pci_dev(pdev) {
		if (pdev == self)
			continue;
		for (bar = 0; bar < PCI_STD_NUM_BARS; bar++) {
			struct resource *r = &pdev->resource[bar];
			u64 len = resource_size(r), bus;

			if (!(r->flags & IORESOURCE_MEM) ||
			    (r->flags & IORESOURCE_UNSET) || !r->start || !len)
				continue;
			bus = pci_bus_address(pdev, bar);
			if (addr >= bus && size <= len &&
			    addr - bus <= len - size) {
				*barp = bar;
				return pdev;	/* holding its reference */
			}
		}
	}
	return NULL;
}

/* Drop window @w's forwarding (fwd->lock held). */
static void ivntb_fwd_drop(struct ivntb_fwd *fwd, struct ivntb_fwd_win *w)
{
	if (!w->target)
		return;
	if (w->dst)
		iounmap(w->dst);
	pci_dev_put(w->target);
	memset(w, 0, sizeof(*w));
	fwd->active--;
}

/* Forward what the peers stored in @w: returns how many words. */
static unsigned int ivntb_fwd_scan(struct ivntb_fwd_win *w)
{
	unsigned int i, n = 0;

	for (i = 0; i < w->words; i++) {
		u32 v = READ_ONCE(w->src[i]);

		/* a store that races in stays there for the next scan */
		if (v == IVNTB_FWD_NONE ||
		    cmpxchg(&w->src[i], v, IVNTB_FWD_NONE) != v)
			continue;
		n++;
		if (!w->dst) {
			w->dropped++;
			continue;
		}
		/* writel: after every earlier store, posted, in order */
		writel(v, &w->dst[i]);
		w->forwarded++;
	}
	return n;
}

static int ivntb_fwd_thread(void *data)
{
	struct ivntb_fwd *fwd = data;
	unsigned int us = IVNTB_FWD_MIN_US;

	while (!kthread_should_stop()) {
		unsigned int p, m, n = 0;

		wait_event_interruptible(fwd->wake, READ_ONCE(fwd->active) ||
					 kthread_should_stop());
		mutex_lock(&fwd->lock);
		for (p = 0; p < IVNTB_MAX_PORTS - 1; p++)
			for (m = 0; m < IVNTB_MAX_MWS; m++)
				if (fwd->win[p][m].target)
					n += ivntb_fwd_scan(&fwd->win[p][m]);
		mutex_unlock(&fwd->lock);
		/* bounded, backing off while nothing changes */
		us = n ? IVNTB_FWD_MIN_US : min(us * 2, IVNTB_FWD_MAX_US);
		usleep_range(us, us + us / 2);
	}
	return 0;
}

/* A target device leaves: its windows' stores are dropped from now on. */
static int ivntb_fwd_notify(struct notifier_block *nb, unsigned long action,
			    void *data)
{
	struct ivntb_fwd *fwd = container_of(nb, struct ivntb_fwd, nb);
	struct pci_dev *pdev = to_pci_dev(data);
	unsigned int p, m;

	if (action != BUS_NOTIFY_DEL_DEVICE)
		return NOTIFY_DONE;
	mutex_lock(&fwd->lock);
	for (p = 0; p < IVNTB_MAX_PORTS - 1; p++)
		for (m = 0; m < IVNTB_MAX_MWS; m++) {
			struct ivntb_fwd_win *w = &fwd->win[p][m];

			if (w->target != pdev || !w->dst)
				continue;
			iounmap(w->dst);
			w->dst = NULL;
			dev_info(&fwd->iv->pdev->dev,
				 "window %d of port %d: %s, the target of its emulated forwarding, is removed: the peer's stores are dropped\n",
				 m, ivntb_pidx_port(fwd->iv, p),
				 pci_name(pdev));
		}
	mutex_unlock(&fwd->lock);
	return NOTIFY_OK;
}

static int ivntb_fwd_show(struct seq_file *s, void *unused)
{
	struct ivntb_fwd *fwd = s->private;
	unsigned int p, m;

	mutex_lock(&fwd->lock);
	for (p = 0; p < IVNTB_MAX_PORTS - 1; p++)
		for (m = 0; m < IVNTB_MAX_MWS; m++) {
			struct ivntb_fwd_win *w = &fwd->win[p][m];

			if (!w->target)
				continue;
			seq_printf(s,
				   "window %u of port %d: %pad (%s BAR%d, %u bytes), emulated forwarding: %llu stores forwarded, %llu dropped%s\n",
				   m, ivntb_pidx_port(fwd->iv, p), &w->bus,
				   pci_name(w->target), w->bar, w->words * 4,
				   w->forwarded, w->dropped,
				   w->dst ? "" : ", the device is removed");
		}
	mutex_unlock(&fwd->lock);
	return 0;
}
DEFINE_SHOW_ATTRIBUTE(ivntb_fwd);

int ivntb_fwd_init(struct ivntb_dev *iv)
{
	struct ivntb_fwd *fwd = kzalloc(sizeof(*fwd), GFP_KERNEL);
	int ret;

	if (!fwd)
		return -ENOMEM;
	fwd->iv = iv;
	mutex_init(&fwd->lock);
	init_waitqueue_head(&fwd->wake);
	fwd->nb.notifier_call = ivntb_fwd_notify;
	ret = bus_register_notifier(&pci_bus_type, &fwd->nb);
	if (ret)
		goto err_free;
	fwd->thread = kthread_run(ivntb_fwd_thread, fwd, "ivntb_fwd/%d",
				  iv->port);
	if (IS_ERR(fwd->thread)) {
		ret = PTR_ERR(fwd->thread);
		goto err_nb;
	}
	fwd->dbg = debugfs_create_file("forward", 0400, iv->dbg, fwd,
				       &ivntb_fwd_fops);
	iv->fwd = fwd;
	return 0;

err_nb:
	bus_unregister_notifier(&pci_bus_type, &fwd->nb);
err_free:
	kfree(fwd);
	dev_err(&iv->pdev->dev, "cannot start emulated forwarding: %d\n", ret);
	return ret;
}

/* After the clients are gone: the thread stops, every window is dropped. */
void ivntb_fwd_fini(struct ivntb_dev *iv)
{
	struct ivntb_fwd *fwd = iv->fwd;
	unsigned int p, m;

	if (!fwd)
		return;
	debugfs_remove(fwd->dbg);
	kthread_stop(fwd->thread);
	bus_unregister_notifier(&pci_bus_type, &fwd->nb);
	for (p = 0; p < IVNTB_MAX_PORTS - 1; p++)
		for (m = 0; m < IVNTB_MAX_MWS; m++)
			ivntb_fwd_drop(fwd, &fwd->win[p][m]);
	kfree(fwd);
	iv->fwd = NULL;
}

/*
 * Stop forwarding window (@pidx, @widx), if it was: its region goes back to
 * the allocator. Process context.
 */
void ivntb_fwd_clear(struct ivntb_dev *iv, int pidx, int widx)
{
	struct ivntb_fwd *fwd = iv->fwd;
	struct ivntb_fwd_win *w;
	unsigned long flags;

	if (!fwd)
		return;
	mutex_lock(&fwd->lock);
	w = &fwd->win[pidx][widx];
	if (w->target) {
		dev_info(&iv->pdev->dev,
			 "window %d of port %d: emulated forwarding to %s ends (%llu stores forwarded, %llu dropped)\n",
			 widx, ivntb_pidx_port(iv, pidx), pci_name(w->target),
			 w->forwarded, w->dropped);
		ivntb_fwd_drop(fwd, w);
		spin_lock_irqsave(&iv->rg->lock, flags);
		__clear_bit(widx, &iv->rg->used[pidx]);
		spin_unlock_irqrestore(&iv->rg->lock, flags);
	}
	mutex_unlock(&fwd->lock);
}

/* Take window (@pidx, @widx)'s own region for forwarding: -EBUSY if used. */
static int ivntb_fwd_take_region(struct ivntb_dev *iv, int pidx, int widx)
{
	u64 off = ivntb_region_off(iv, iv->port, ivntb_pidx_port(iv, pidx),
				   widx) - ivntb_area_off(iv, iv->port);
	unsigned long flags;
	int p, m, ret = 0;

	spin_lock_irqsave(&iv->mw_lock, flags);
	spin_lock(&iv->rg->lock);
	if (test_bit(widx, &iv->rg->used[pidx]) || iv->rg->held[pidx][widx])
		ret = -EBUSY;
	/* nor may another window be translated into it */
	for (p = 0; p < ivntb_peer_count(iv) && !ret; p++)
		for (m = 0; m < iv->mws; m++) {
			u64 a = (u64)iv->xlat[p][m].page << PAGE_SHIFT;
			u64 n = (u64)iv->xlat[p][m].pages << PAGE_SHIFT;

			if (p == pidx && m == widx)
				continue;	/* replaced */
			if (n && a < off + ivntb_region_size(iv) &&
			    off < a + n)
				ret = -EBUSY;
		}
	if (!ret) {
		__set_bit(widx, &iv->rg->used[pidx]);
		iv->xlat[pidx][widx].page = 0;
		iv->xlat[pidx][widx].pages = 0;
	}
	spin_unlock(&iv->rg->lock);
	spin_unlock_irqrestore(&iv->mw_lock, flags);
	return ret;
}

/* The target, checked and mapped, into @w. */
static int ivntb_fwd_target(struct ivntb_dev *iv, struct ivntb_fwd_win *w,
			    dma_addr_t addr, resource_size_t size)
{
	struct pci_dev *pdev;
	phys_addr_t phys;
	int bar;

	pdev = ivntb_fwd_bar_of(iv->pdev, addr, size, &bar);
	if (!pdev)
		return -EOPNOTSUPP;
	phys = pci_resource_start(pdev, bar) +
	       (addr - pci_bus_address(pdev, bar));
	if (region_intersects(phys, size, IORESOURCE_SYSTEM_RAM,
			      IORES_DESC_NONE) != REGION_DISJOINT) {
		pci_dev_put(pdev);
		return -EPERM;
	}
	w->dst = ioremap(phys, size);
	if (!w->dst) {
		pci_dev_put(pdev);
		return -ENOMEM;
	}
	w->target = pdev;
	w->bar = bar;
	w->bus = addr;
	w->words = size / 4;
	return 0;
}

/*
 * Translate window (@pidx, @widx) onto @addr, a BAR of another function:
 * -EOPNOTSUPP if @addr is not in one (the caller's error then), else 0 or
 * the reason it cannot. The caller has checked the indices. Process
 * context: it maps the target.
 */
int ivntb_fwd_set(struct ivntb_dev *iv, int pidx, int widx, dma_addr_t addr,
		  resource_size_t size)
{
	struct ivntb_fwd *fwd = iv->fwd;
	struct ivntb_fwd_win *w;
	int ret;

	if (!fwd || !READ_ONCE(bar_fwd))
		return -EOPNOTSUPP;
	ivntb_fwd_clear(iv, pidx, widx);
	mutex_lock(&fwd->lock);
	w = &fwd->win[pidx][widx];
	ret = ivntb_fwd_target(iv, w, addr, size);
	if (ret)
		goto out;
	if (size > IVNTB_FWD_MAX || !IS_ALIGNED(addr, 4)) {
		dev_err_ratelimited(&iv->pdev->dev,
				    "window %d of port %d: emulated forwarding to %pad takes at most %u bytes, 4-byte aligned\n",
				    widx, ivntb_pidx_port(iv, pidx), &addr,
				    IVNTB_FWD_MAX);
		ret = -EINVAL;
		goto undo;
	}
	ret = ivntb_fwd_take_region(iv, pidx, widx);
	if (ret) {
		dev_err_ratelimited(&iv->pdev->dev,
				    "window %d of port %d: its region is in use as a buffer, it cannot be forwarded\n",
				    widx, ivntb_pidx_port(iv, pidx));
		goto undo;
	}
	w->src = iv->area + ivntb_region_off(iv, iv->port,
					     ivntb_pidx_port(iv, pidx), widx) -
		 ivntb_area_off(iv, iv->port);
	/* what the region holds now is no store of the peer's */
	memset32(w->src, IVNTB_FWD_NONE, size / 4);
	fwd->active++;
	dev_info(&iv->pdev->dev,
		 "window %d of port %d: translated onto %pad (%s BAR%d, %pa bytes) by emulated forwarding\n",
		 widx, ivntb_pidx_port(iv, pidx), &addr, pci_name(w->target),
		 w->bar, &size);
	mutex_unlock(&fwd->lock);
	wake_up(&fwd->wake);
	return 0;
undo:
	fwd->active++;	/* ivntb_fwd_drop() counts it out */
	ivntb_fwd_drop(fwd, w);
out:
	mutex_unlock(&fwd->lock);
	return ret;
}
