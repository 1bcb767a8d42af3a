// SPDX-License-Identifier: GPL-2.0 OR MIT
/*
 * smartio_ntb: the ioctls of <smartio/ntb.h>. Each takes the device lock and
 * checks that the NTB device is still there; the arguments are copied in
 * before the lock and out after it (see struct sntb_dev). Bad arguments
 * are -EINVAL, a peer whose link is down -ENOTCONN, a window held by
 * another process -EBUSY, and an NTB device that went away -ENODEV.
 */
#include <linux/capability.h>
#include <linux/dma-mapping.h>
#include <linux/eventfd.h>
#include <linux/fs.h>
#include <linux/pci.h>
#include <linux/uaccess.h>

#include "smartio_ntb.h"

static bool sntb_peer_up(struct sntb_dev *sd, u32 pidx)
{
	return ntb_link_is_up(sd->ntb, NULL, NULL) & BIT_ULL(pidx);
}

/* An inbound window by the caller's numbers, or NULL. */
static struct sntb_in *sntb_in_arg(struct sntb_dev *sd, u32 pidx, u32 widx)
{
	if (pidx >= sd->peers || widx >= sd->in_max ||
	    (int)widx >= ntb_mw_count(sd->ntb, pidx))
		return NULL;
	return sntb_in(sd, pidx, widx);
}

/*
 * Whether the hardware driver emulates a translation onto another
 * function's BAR. ntb_hw_ivshmem, the project's stand-in over QEMU's
 * ivshmem, has no path there but its forwarding thread (bar_fwd=1): what it
 * accepts is emulation, which user space must not report as hardware's.
 */
static bool sntb_bar_xlat_emulated(struct ntb_dev *ntb)
{
	return ntb->dev.parent &&
	       !strcmp(dev_driver_string(ntb->dev.parent), "ntb_hw_ivshmem");
}

static int sntb_info(struct sntb_dev *sd, struct sntb_file *f, void *arg)
{
	struct sio_ntb_info *i = arg;
	struct ntb_dev *ntb = sd->ntb;
	bool emu = sntb_bar_xlat_emulated(ntb);

	memset(i, 0, sizeof(*i));
	i->version = SIO_NTB_UAPI_VERSION;
	i->port = ntb_port_number(ntb);
	i->peers = sd->peers;
	i->flags = (ntb->ops->mw_set_trans ? SIO_NTB_F_INBOUND_XLAT : 0) |
		   (ntb->ops->peer_mw_set_trans ? SIO_NTB_F_OUTBOUND_XLAT : 0) |
		   (sd->spads ? SIO_NTB_F_SPADS : 0) |
		   (sd->msgs ? SIO_NTB_F_MSGS : 0) |
		   (ntb->ops->db_vector_count ? SIO_NTB_F_DB_VECTORS : 0) |
		   (ntb->ops->port_number ? SIO_NTB_F_PORTS : 0) |
		   (emu ? SIO_NTB_F_BAR_XLAT_EMULATED : 0);
	i->msgs = sd->msgs;
	i->msg_inbits = sd->msgs ? ntb_msg_inbits(ntb) : 0;
	i->msg_outbits = sd->msgs ? ntb_msg_outbits(ntb) : 0;
	i->peer_mws = sd->peer_mws;
	i->mws_per_peer = sd->mws_per_peer;
	i->spads = sd->spads;
	i->db_vectors = ntb_db_vector_count(ntb);
	i->db_valid = ntb_db_valid_mask(ntb);
	/* the link state the link work publishes, as one snapshot */
	spin_lock_irq(&sd->ev_lock);
	i->link = sd->link;
	i->link_gen = sd->link_gen;
	spin_unlock_irq(&sd->ev_lock);
	strscpy(i->name, dev_name(&ntb->dev), sizeof(i->name));
	/* the hardware driver is the driver of the NTB device's parent */
	strscpy(i->driver,
		ntb->dev.parent ? dev_driver_string(ntb->dev.parent) : "",
		sizeof(i->driver));
	return 0;
}

static int sntb_peer(struct sntb_dev *sd, struct sntb_file *f, void *arg)
{
	struct sio_ntb_peer *p = arg;

	if (p->pidx >= sd->peers)
		return -EINVAL;
	p->port = ntb_peer_port_number(sd->ntb, p->pidx);
	p->link_up = sntb_peer_up(sd, p->pidx);
	p->mws = max(ntb_mw_count(sd->ntb, p->pidx), 0);
	/* as in sntb_info() */
	spin_lock_irq(&sd->ev_lock);
	p->link_gen = sd->peer_gen[p->pidx];
	spin_unlock_irq(&sd->ev_lock);
	return 0;
}

static int sntb_mw(struct sntb_dev *sd, struct sntb_file *f, void *arg)
{
	struct sio_ntb_mw *m = arg;
	struct sntb_in *in = sntb_in_arg(sd, m->pidx, m->widx);
	resource_size_t a, s, max;
	int ret;

	if (!in)
		return -EINVAL;
	ret = ntb_mw_get_align(sd->ntb, m->pidx, m->widx, &a, &s, &max);
	if (ret)
		return ret;	/* -ENOTCONN: the link is down */
	m->addr_align = a;
	m->size_align = s;
	m->size_max = max;
	m->size = in->owner == f ? in->size : 0;
	m->mmap_offset = sntb_mmap_in_offset(m->pidx, m->widx);
	return 0;
}

/* Who holds the window decides: -EEXIST (the caller), -EBUSY (another). */
static int sntb_in_free_for(struct sntb_in *in, struct sntb_file *f)
{
	if (!in->owner)
		return 0;
	return in->owner == f ? -EEXIST : -EBUSY;
}

static int sntb_mw_alloc(struct sntb_dev *sd, struct sntb_file *f, void *arg)
{
	struct sio_ntb_buf *b = arg;
	struct sntb_in *in = sntb_in_arg(sd, b->pidx, b->widx);
	resource_size_t align, salign, max;
	u64 size = b->size;
	dma_addr_t dma;
	void *vaddr;
	int ret;

	if (!in || (b->flags & ~SIO_NTB_BUF_PEER_XLAT))
		return -EINVAL;
	/* the core's ntb_mw_set_trans() does nothing there, and says 0 */
	if (!sd->ntb->ops->mw_set_trans != !!b->flags)
		return sd->ntb->ops->mw_set_trans ? -EINVAL : -EOPNOTSUPP;
	ret = sntb_in_free_for(in, f);
	if (ret)
		return ret;
	/* asked right before the allocation: some drivers place it by this */
	ret = ntb_mw_get_align(sd->ntb, b->pidx, b->widx, &align, &salign,
			       &max);
	if (ret)
		return ret;
	size = round_up(size ? size : max, max_t(u64, salign, PAGE_SIZE));
	if (!size || size > max)
		return -EINVAL;	/* larger than the window */
	vaddr = dma_alloc_coherent(sd->dma_dev, size, &dma, GFP_KERNEL);
	if (!vaddr)
		return -ENOMEM;
	if (!IS_ALIGNED(dma, align)) {
		dev_dbg(&sd->ntb->dev,
			"buffer at %pad, the window wants %pa alignment\n",
			&dma, &align);
		/* the DMA API cannot place it as the window needs */
		ret = -EINVAL;
		goto err;
	}
	/* outbound only: the peer translates to it (SIO_NTB_BUF_PEER_XLAT) */
	ret = b->flags ? 0 :
	      ntb_mw_set_trans(sd->ntb, b->pidx, b->widx, dma, size);
	if (ret)
		goto err;
	in->owner = f;
	in->vaddr = vaddr;
	in->dma = dma;
	in->size = size;
	b->size = size;
	b->dma_addr = dma;
	b->mmap_offset = sntb_mmap_in_offset(b->pidx, b->widx);
	return 0;
err:
	dma_free_coherent(sd->dma_dev, size, vaddr, dma);
	return ret;
}

/*
 * Clear every translation into @buf's pages but its own (device lock held):
 * another file's, which CAP_SYS_RAWIO allowed; the peer must not reach the
 * pages once they are freed.
 */
static void sntb_revoke_into(struct sntb_dev *sd, struct sntb_in *buf)
{
	int i;

	for (i = 0; i < sd->peers * sd->in_max; i++) {
		struct sntb_in *x = &sd->in[i];

		if (x == buf || !x->owner || x->vaddr || !x->size)
			continue;
		/* they overlap: one starts inside the other (no sum to wrap) */
		if (x->dma - buf->dma >= buf->size &&
		    buf->dma - x->dma >= x->size)
			continue;
		dev_info(&sd->ntb->dev,
			 "window %d of peer %d: its translation into a buffer being freed is cleared\n",
			 i % sd->in_max, i / sd->in_max);
		sntb_free_in(sd, x, i / sd->in_max, i % sd->in_max);
	}
}

/* Clear the window's translation, free its buffer (device lock held). */
void sntb_free_in(struct sntb_dev *sd, struct sntb_in *in, int pidx, int widx)
{
	if (!in->owner)
		return;
	in->gen++;	/* no mapping made before faults a page of it in */
	if (in->vaddr)
		sntb_revoke_into(sd, in);
	if (sd->ntb->ops->mw_set_trans)
		ntb_mw_clear_trans(sd->ntb, pidx, widx);
	if (in->vaddr)
		dma_free_coherent(sd->dma_dev, in->size, in->vaddr, in->dma);
	in->owner = NULL;
	in->vaddr = NULL;
	in->dma = 0;
	in->size = 0;
}

/* Does the file translate a window into its buffer @buf? */
static bool sntb_xlat_into(struct sntb_dev *sd, struct sntb_file *f,
			   struct sntb_in *buf)
{
	int i;

	for (i = 0; i < sd->peers * sd->in_max; i++) {
		struct sntb_in *x = &sd->in[i];

		if (x != buf && x->owner == f && !x->vaddr && x->size &&
		    x->dma >= buf->dma && x->dma - buf->dma < buf->size)
			return true;
	}
	return false;
}

static int sntb_mw_free(struct sntb_dev *sd, struct sntb_file *f, void *arg)
{
	struct sio_ntb_buf *b = arg;
	struct sntb_in *in = sntb_in_arg(sd, b->pidx, b->widx);

	if (!in)
		return -EINVAL;
	if (in->owner != f || !in->vaddr)
		return in->owner ? -EBUSY : -ENOENT;
	if (in->mapped || sntb_xlat_into(sd, f, in))
		return -EBUSY;	/* munmap(), clear translations into it first */
	sntb_free_in(sd, in, b->pidx, b->widx);
	return 0;
}

/* Does [@addr, @addr + @size) lie in one of the file's own buffers? */
static bool sntb_own_memory(struct sntb_dev *sd, struct sntb_file *f,
			    u64 addr, u64 size)
{
	int i;

	for (i = 0; i < sd->peers * sd->in_max; i++) {
		struct sntb_in *b = &sd->in[i];

		if (b->owner == f && b->vaddr && addr >= b->dma &&
		    size <= b->size && addr - b->dma <= b->size - size)
			return true;
	}
	return false;
}

static int sntb_mw_xlat(struct sntb_dev *sd, struct sntb_file *f, void *arg)
{
	struct sio_ntb_xlat *x = arg;
	struct sntb_in *in = sntb_in_arg(sd, x->pidx, x->widx);
	resource_size_t align, salign, max;
	int ret;

	if (!in || x->flags)
		return -EINVAL;
	/* the peer reaches whatever is there, unless the file exports it */
	if (x->size && !sntb_own_memory(sd, f, x->addr, x->size) &&
	    !capable(CAP_SYS_RAWIO))
		return -EPERM;
	if (!x->size) {
		if (in->owner != f || in->vaddr)
			return in->owner ? -EBUSY : -ENOENT;
		sntb_free_in(sd, in, x->pidx, x->widx);
		return 0;
	}
	ret = sntb_in_free_for(in, f);
	if (ret)
		return ret;
	if (!sd->ntb->ops->mw_set_trans)
		return -EOPNOTSUPP;	/* outbound translation: the peer's */
	ret = ntb_mw_get_align(sd->ntb, x->pidx, x->widx, &align, &salign,
			       &max);
	if (ret)
		return ret;
	if (!IS_ALIGNED(x->addr, align) || !IS_ALIGNED(x->size, salign) ||
	    x->size > max)
		return -EINVAL;
	ret = ntb_mw_set_trans(sd->ntb, x->pidx, x->widx, x->addr, x->size);
	if (ret)
		return ret;	/* -EOPNOTSUPP: not translatable there */
	in->owner = f;
	in->dma = x->addr;
	in->size = x->size;
	return 0;
}

/*
 * The bus address of the NTB's CPU address @base: through the BAR of the
 * NTB's PCI function that holds it (0: none does).
 */
static u64 sntb_bus_addr(struct ntb_dev *ntb, phys_addr_t base)
{
	struct pci_dev *pdev = ntb->pdev;
	int bar;

	for (bar = 0; pdev && bar < PCI_STD_NUM_BARS; bar++) {
		struct resource *r = &pdev->resource[bar];

		if ((r->flags & IORESOURCE_MEM) && r->start &&
		    base >= r->start && base <= r->end)
			return pci_bus_address(pdev, bar) + (base - r->start);
	}
	return 0;
}

static int sntb_peer_mw(struct sntb_dev *sd, struct sntb_file *f, void *arg)
{
	struct sio_ntb_peer_mw *m = arg;
	resource_size_t size;
	phys_addr_t base;
	int ret;

	if (m->widx >= sd->peer_mws)
		return -EINVAL;
	ret = ntb_peer_mw_get_addr(sd->ntb, m->widx, &base, &size);
	if (ret)
		return ret;
	m->pidx = sntb_out_pidx(sd, m->widx);
	m->size = size;
	m->mmap_offset = sntb_mmap_out_offset(m->widx);
	m->bus_addr = sntb_bus_addr(sd->ntb, base);
	return 0;
}

/*
 * An outbound translation (IDT's way). The peer reaches whatever is at the
 * address, as with SIO_NTB_IOC_MW_XLAT outside the file's own buffers:
 * CAP_SYS_RAWIO. A mapped window keeps reaching where it did: unmap first.
 */
static int sntb_peer_mw_xlat(struct sntb_dev *sd, struct sntb_file *f,
			     void *arg)
{
	struct sio_ntb_peer_xlat *x = arg;
	struct sntb_out *out;
	int ret;

	if (!sd->ntb->ops->peer_mw_set_trans)
		return -EOPNOTSUPP;	/* inbound translation: MW_XLAT */
	if (x->flags || x->pidx >= sd->peers || x->widx >= sd->peer_mws ||
	    !PAGE_ALIGNED(x->addr))
		return -EINVAL;
	if (!capable(CAP_SYS_RAWIO))
		return -EPERM;
	out = &sd->out[x->widx];
	if ((out->xlat_owner && out->xlat_owner != f) || out->mapped)
		return -EBUSY;
	if (!x->size) {
		if (out->xlat_owner != f)
			return -ENOENT;
		ret = ntb_peer_mw_clear_trans(sd->ntb, out->xlat_pidx, x->widx);
		out->xlat_owner = NULL;
		return ret;
	}
	if (!sntb_peer_up(sd, x->pidx))
		return -ENOTCONN;
	/* the driver's limits: -EINVAL, or what its hardware says */
	ret = ntb_peer_mw_set_trans(sd->ntb, x->pidx, x->widx, x->addr,
				    x->size);
	if (ret)
		return ret;
	out->xlat_owner = f;
	out->xlat_pidx = x->pidx;
	return 0;
}

static int sntb_db_ring(struct sntb_dev *sd, struct sntb_file *f, void *arg)
{
	u64 bits = *(u64 *)arg;

	if (!bits || (bits & ~ntb_db_valid_mask(sd->ntb)))
		return -EINVAL;
	if (!ntb_link_is_up(sd->ntb, NULL, NULL))
		return -ENOTCONN;
	return ntb_peer_db_set(sd->ntb, bits);
}

/*
 * Put eventfd @fd (-1: none) in @slot, a file's, in place of the one there.
 * The event callbacks read the slots under ev_lock.
 */
int sntb_eventfd_set(struct sntb_dev *sd, struct eventfd_ctx **slot, int fd)
{
	struct eventfd_ctx *ctx = NULL, *old;

	if (fd != -1) {
		ctx = eventfd_ctx_fdget(fd);
		if (IS_ERR(ctx))
			return PTR_ERR(ctx);	/* -EBADF, -EINVAL */
	}
	spin_lock_irq(&sd->ev_lock);
	old = *slot;
	*slot = ctx;
	spin_unlock_irq(&sd->ev_lock);
	if (old)
		eventfd_ctx_put(old);
	return 0;
}

static int sntb_db_eventfd(struct sntb_dev *sd, struct sntb_file *f, void *arg)
{
	struct sio_ntb_db_eventfd *e = arg;

	if (e->flags)
		return sntb_msg_eventfd(sd, f, e);
	if (e->bit >= SNTB_DB_BITS ||
	    !(ntb_db_valid_mask(sd->ntb) & BIT_ULL(e->bit)))
		return -EINVAL;
	return sntb_eventfd_set(sd, &f->efd[e->bit], e->fd);
}

static int sntb_spad(struct sntb_dev *sd, struct sio_ntb_spad *s, bool write)
{
	bool local = s->pidx == SIO_NTB_LOCAL;

	if (!sd->spads)
		return -EOPNOTSUPP;	/* message registers: SIO_NTB_F_MSGS */
	/* flags: for a later version, which must not be misread */
	if (s->flags || s->sidx >= sd->spads ||
	    (!local && s->pidx >= sd->peers))
		return -EINVAL;
	if (!local && !sntb_peer_up(sd, s->pidx))
		return -ENOTCONN;
	if (write)
		return local ? ntb_spad_write(sd->ntb, s->sidx, s->value) :
			       ntb_peer_spad_write(sd->ntb, s->pidx, s->sidx,
						   s->value);
	s->value = local ? ntb_spad_read(sd->ntb, s->sidx) :
			   ntb_peer_spad_read(sd->ntb, s->pidx, s->sidx);
	return 0;
}

static int sntb_spad_read(struct sntb_dev *sd, struct sntb_file *f, void *arg)
{
	return sntb_spad(sd, arg, false);
}

static int sntb_spad_write(struct sntb_dev *sd, struct sntb_file *f, void *arg)
{
	return sntb_spad(sd, arg, true);
}

/*
 * Release what the file holds (device lock held; its mappings are gone),
 * or every file with @f NULL: translations first, then the buffers they may
 * point into.
 */
void sntb_release_windows(struct sntb_dev *sd, struct sntb_file *f)
{
	int pidx, widx, pass;

	for (pass = 0; pass < 2; pass++)
		for (pidx = 0; sd->ntb && pidx < sd->peers; pidx++)
			for (widx = 0; widx < sd->in_max; widx++) {
				struct sntb_in *in = sntb_in(sd, pidx, widx);

				if (in->owner && (!f || in->owner == f) &&
				    !in->vaddr == !pass)
					sntb_free_in(sd, in, pidx, widx);
			}
	for (widx = 0; widx < sd->peer_mws; widx++) {
		struct sntb_out *out = &sd->out[widx];

		if (out->xlat_owner && (!f || out->xlat_owner == f)) {
			if (sd->ntb)
				ntb_peer_mw_clear_trans(sd->ntb,
							out->xlat_pidx, widx);
			out->xlat_owner = NULL;
		}
		if (f && out->owner == f)
			out->owner = NULL;
	}
}

/*
 * The requests, by their command at this header's sizes. A program built
 * with another header passes another size: see sntb_ioctl().
 */
static const struct {
	unsigned int cmd;
	int (*fn)(struct sntb_dev *sd, struct sntb_file *f, void *arg);
} sntb_ioctls[] = {
	{ SIO_NTB_IOC_INFO, sntb_info },
	{ SIO_NTB_IOC_PEER, sntb_peer },
	{ SIO_NTB_IOC_MW, sntb_mw },
	{ SIO_NTB_IOC_MW_ALLOC, sntb_mw_alloc },
	{ SIO_NTB_IOC_MW_FREE, sntb_mw_free },
	{ SIO_NTB_IOC_MW_XLAT, sntb_mw_xlat },
	{ SIO_NTB_IOC_PEER_MW, sntb_peer_mw },
	{ SIO_NTB_IOC_DB_RING, sntb_db_ring },
	{ SIO_NTB_IOC_DB_EVENTFD, sntb_db_eventfd },
	{ SIO_NTB_IOC_SPAD_READ, sntb_spad_read },
	{ SIO_NTB_IOC_SPAD_WRITE, sntb_spad_write },
	{ SIO_NTB_IOC_PEER_MW_XLAT, sntb_peer_mw_xlat },
	{ SIO_NTB_IOC_MSG_SEND, sntb_msg_send },
	{ SIO_NTB_IOC_MSG_RECV, sntb_msg_recv },
};

/* The same request (type, number, direction), whatever its size. */
static bool sntb_same_request(unsigned int a, unsigned int b)
{
	return !((a ^ b) & ~(_IOC_SIZEMASK << _IOC_SIZESHIFT));
}

long sntb_ioctl(struct file *file, unsigned int cmd, unsigned long arg)
{
	struct sntb_file *f = file->private_data;
	struct sntb_dev *sd = f->sd;
	void __user *uarg = (void __user *)arg;
	unsigned int i, usize = _IOC_SIZE(cmd), ksize;
	union {
		struct sio_ntb_info info;
		struct sio_ntb_peer peer;
		struct sio_ntb_mw mw;
		struct sio_ntb_buf buf;
		struct sio_ntb_xlat xlat;
		struct sio_ntb_peer_mw peer_mw;
		struct sio_ntb_db_eventfd efd;
		struct sio_ntb_spad spad;
		struct sio_ntb_peer_xlat peer_xlat;
		struct sio_ntb_msg msg;
		u64 bits;
	} u;
	long ret;

	for (i = 0; i < ARRAY_SIZE(sntb_ioctls); i++)
		if (sntb_same_request(sntb_ioctls[i].cmd, cmd))
			break;
	if (i == ARRAY_SIZE(sntb_ioctls))
		return -ENOTTY;
	/*
	 * Sizes are negotiated as copy_struct_from_user() does: what a
	 * smaller struct lacks reads 0, what a larger one adds must be 0
	 * (-E2BIG), and the answer goes back as far as the caller's struct.
	 */
	ksize = _IOC_SIZE(sntb_ioctls[i].cmd);
	memset(&u, 0, sizeof(u));
	if (_IOC_DIR(cmd) & _IOC_WRITE) {
		ret = copy_struct_from_user(&u, ksize, uarg, usize);
		if (ret)
			return ret;
	}
	/* the device's state and the NTB calls, against removal */
	mutex_lock(&sd->lock);
	ret = sd->ntb ? sntb_ioctls[i].fn(sd, f, &u) : -ENODEV;
	mutex_unlock(&sd->lock);
	if (ret || !(_IOC_DIR(cmd) & _IOC_READ))
		return ret;
	if (copy_to_user(uarg, &u, min(usize, ksize)))
		return -EFAULT;
	if (usize > ksize && clear_user(uarg + ksize, usize - ksize))
		return -EFAULT;
	return 0;
}
