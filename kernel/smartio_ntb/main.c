// SPDX-License-Identifier: GPL-2.0 OR MIT
/*
 * smartio_ntb: the NTB client, its character devices, events.
 *
 * The client binds to NTB devices as any NTB client does (one client per
 * device: unbind ntb_tool and the like first). Each device gets
 * /dev/smartio-ntbN; the file operations are here, the ioctls in ioctl.c,
 * the mappings in mmap.c.
 */
#include <linux/bitmap.h>
#include <linux/eventfd.h>
#include <linux/fs.h>
#include <linux/idr.h>
#include <linux/mutex.h>
#include <linux/module.h>
#include <linux/poll.h>
#include <linux/slab.h>
#include <linux/uaccess.h>

#include "compat.h"
#include "smartio_ntb.h"

#define SNTB_MINORS	64

static dev_t sntb_devt;
static struct class *sntb_class;
/*
 * minor -> device, for open(); the cdev lives apart (cdev_alloc()): an open
 * file holds it past our release()
 */
static DEFINE_IDR(sntb_idr);
/* serialises the IDR's users: open(), probe and remove */
static DEFINE_MUTEX(sntb_idr_lock);

static void sntb_free(struct kref *kref)
{
	struct sntb_dev *sd = container_of(kref, struct sntb_dev, kref);

	if (sd->inode)
		sntb_inode_put(sd->inode);
	kfree(sd->in);
	kfree(sd->out);
	kfree(sd);
}

void sntb_put(struct sntb_dev *sd)
{
	kref_put(&sd->kref, sntb_free);
}

/* --- the framework's callbacks (interrupts off, under the core's ctx_lock) */

static unsigned int link_delay_ms;
module_param(link_delay_ms, uint, 0644);
MODULE_PARM_DESC(link_delay_ms,
		 "For tests only: run the link work this many ms after a link event (default 0)");

/*
 * A link changed: the peers that went down are counted here, where every
 * change is seen; the work revokes their outbound mappings, then tells the
 * processes (they learn of it only once their mappings are revoked).
 */
static void sntb_link_event(void *ctx)
{
	struct sntb_dev *sd = ctx;
	u64 now = ntb_link_is_up(sd->ntb, NULL, NULL);
	unsigned long flags;

	/* @ev_link and @ev_down are the work's to take under the same lock */
	spin_lock_irqsave(&sd->ev_lock, flags);
	sd->ev_down |= sd->ev_link & ~now;
	sd->ev_link = now;
	spin_unlock_irqrestore(&sd->ev_lock, flags);
	schedule_delayed_work(&sd->link_work,
			      msecs_to_jiffies(READ_ONCE(link_delay_ms)));
}

/* Doorbells are latched per open file, then cleared in the hardware. */
static void sntb_db_event(void *ctx, int vector)
{
	struct sntb_dev *sd = ctx;
	u64 bits = ntb_db_read(sd->ntb) & ntb_db_vector_mask(sd->ntb, vector);
	DECLARE_BITMAP(map, SNTB_DB_BITS);
	struct sntb_file *f;
	unsigned long flags;
	int b;

	if (!bits)
		return;
	ntb_db_clear(sd->ntb, bits);
	bitmap_from_u64(map, bits);
	/* the files and their pending events, against open and release */
	spin_lock_irqsave(&sd->ev_lock, flags);
	list_for_each_entry(f, &sd->files, node) {
		f->db |= bits;
		for_each_set_bit(b, map, SNTB_DB_BITS)
			if (f->efd[b])
				sntb_eventfd_signal(f->efd[b]);
	}
	spin_unlock_irqrestore(&sd->ev_lock, flags);
	wake_up_interruptible_all(&sd->wq);
}

static const struct ntb_ctx_ops sntb_ctx_ops = {
	.link_event	= sntb_link_event,
	.db_event	= sntb_db_event,
	.msg_event	= sntb_msg_event,
};

/*
 * A peer is gone if its link is down now or went down since the last run
 * (it may be up again: a new life of the peer, whose windows are new).
 */
static void sntb_link_work(struct work_struct *work)
{
	struct sntb_dev *sd = container_of(to_delayed_work(work),
					   struct sntb_dev, link_work);
	DECLARE_BITMAP(changed, SIO_NTB_MAX_PEERS);
	u64 now, diff, gone;
	int pidx, w;

	/* the mappings' generations and @link change together */
	mutex_lock(&sd->lock);
	if (!sd->ntb) {
		mutex_unlock(&sd->lock);
		return;
	}
	/* what the events counted, at once: a later event runs us again */
	spin_lock_irq(&sd->ev_lock);
	now = sd->ev_link;
	gone = sd->ev_down | (sd->link & ~now);
	sd->ev_down = 0;
	spin_unlock_irq(&sd->ev_lock);
	diff = (now ^ sd->link) | gone;
	/* whose window is whose is unknown where they do not divide: all */
	for (w = 0; w < sd->peer_mws && gone; w++) {
		int to = sntb_out_pidx(sd, w);

		if (to < 0 || (gone & BIT_ULL(to)))
			sntb_revoke_out(sd, w);
	}
	bitmap_from_u64(changed, diff);
	/* what read(), poll() and the ioctls see, changed at once */
	spin_lock_irq(&sd->ev_lock);
	if (diff) {
		sd->link = now;
		sd->link_gen++;
		for_each_set_bit(pidx, changed, sd->peers)
			sd->peer_gen[pidx] = sd->link_gen;
	}
	spin_unlock_irq(&sd->ev_lock);
	mutex_unlock(&sd->lock);
	if (diff)
		wake_up_interruptible_all(&sd->wq);
}

/* --- the character device --------------------------------------------- */

static int sntb_open(struct inode *inode, struct file *file)
{
	struct sntb_dev *sd;
	struct sntb_file *f;

	f = kzalloc(sizeof(*f), GFP_KERNEL);
	if (!f)
		return -ENOMEM;
	/* the device, with a reference, before remove can put it */
	mutex_lock(&sntb_idr_lock);
	sd = idr_find(&sntb_idr, iminor(inode));
	if (sd)
		kref_get(&sd->kref);
	mutex_unlock(&sntb_idr_lock);
	if (!sd) {
		kfree(f);
		return -ENODEV;	/* its NTB device is gone */
	}
	f->sd = sd;
	f->link_gen = ~0ULL;	/* the first read() reports the links */
	/* the doorbell callback walks the files */
	spin_lock_irq(&sd->ev_lock);
	list_add(&f->node, &sd->files);
	spin_unlock_irq(&sd->ev_lock);
	/* messages that came while no file was open waited in the registers */
	if (sd->msgs)
		sntb_msg_event(sd);
	file->private_data = f;
	/* all files of this device share one mapping: revocation reaches all */
	file->f_mapping = sd->inode->i_mapping;
	return nonseekable_open(inode, file);
}

/* After the last mapping of the file is gone (each holds the file). */
static int sntb_release(struct inode *inode, struct file *file)
{
	struct sntb_file *f = file->private_data;
	struct sntb_dev *sd = f->sd;
	int b;

	/* the windows are the device's; the callbacks walk the files */
	mutex_lock(&sd->lock);
	sntb_release_windows(sd, f);
	spin_lock_irq(&sd->ev_lock);
	list_del(&f->node);
	spin_unlock_irq(&sd->ev_lock);
	mutex_unlock(&sd->lock);
	for (b = 0; b < SNTB_DB_BITS; b++)
		if (f->efd[b])
			eventfd_ctx_put(f->efd[b]);
	if (f->msg_efd)
		eventfd_ctx_put(f->msg_efd);
	kfree(f);
	sntb_put(sd);
	return 0;
}

/* Take the file's events, if it has any (or the device is gone). */
static bool sntb_take(struct sntb_file *f, struct sio_ntb_event *ev, bool *gone)
{
	struct sntb_dev *sd = f->sd;
	bool any;

	/* the file's events and the link state, taken together */
	spin_lock_irq(&sd->ev_lock);
	*gone = !READ_ONCE(sd->ntb);
	any = f->db || f->link_gen != sd->link_gen || f->msg_new;
	if (any && ev) {
		ev->db = f->db;
		ev->link = sd->link;
		ev->link_gen = sd->link_gen;
		ev->msgs = f->msg_len;
		ev->msgs_lost = f->msg_lost;
		f->db = 0;
		f->link_gen = sd->link_gen;
		f->msg_new = false;
		f->msg_lost = 0;
	}
	spin_unlock_irq(&sd->ev_lock);
	return any;
}

static ssize_t sntb_read(struct file *file, char __user *buf, size_t len,
			 loff_t *pos)
{
	struct sntb_file *f = file->private_data;
	struct sio_ntb_event ev;
	bool gone;
	int ret;

	/* a program of uapi 3 reads up to @link_gen: it gets as much */
	if (len < offsetofend(struct sio_ntb_event, link_gen))
		return -EINVAL;
	len = min(len, sizeof(ev));
	for (;;) {
		if (sntb_take(f, &ev, &gone))
			break;
		if (gone)
			return -ENODEV;
		if (file->f_flags & O_NONBLOCK)
			return -EAGAIN;
		ret = wait_event_interruptible(f->sd->wq,
					       sntb_take(f, NULL, &gone) ||
					       gone);
		if (ret)
			return ret;
	}
	return copy_to_user(buf, &ev, len) ? -EFAULT : len;
}

static __poll_t sntb_poll(struct file *file, poll_table *wait)
{
	struct sntb_file *f = file->private_data;
	__poll_t mask = 0;
	bool gone;

	poll_wait(file, &f->sd->wq, wait);
	if (sntb_take(f, NULL, &gone))
		mask |= EPOLLIN | EPOLLRDNORM;
	if (gone)
		mask |= EPOLLHUP | EPOLLERR;
	return mask;
}

static const struct file_operations sntb_fops = {
	.owner		= THIS_MODULE,
	.open		= sntb_open,
	.release	= sntb_release,
	.read		= sntb_read,
	.poll		= sntb_poll,
	.unlocked_ioctl	= sntb_ioctl,
	.compat_ioctl	= compat_ptr_ioctl,
	.mmap		= sntb_mmap,
	.llseek		= SNTB_NO_LLSEEK,
};

/* --- the NTB client ------------------------------------------------------ */

static int sntb_tables(struct sntb_dev *sd, struct ntb_dev *ntb)
{
	sd->peers = ntb_peer_port_count(ntb);
	sd->peer_mws = ntb_peer_mw_count(ntb);
	sd->spads = ntb_spad_count(ntb);
	sd->msgs = ntb_msg_count(ntb);
	if (sd->peers < 1 || sd->peers > SIO_NTB_MAX_PEERS ||
	    sd->peer_mws < 0) {
		dev_err(&ntb->dev,
			"%d peers, %d outbound windows: smartio_ntb handles 1 to %d peers\n",
			sd->peers, sd->peer_mws, SIO_NTB_MAX_PEERS);
		return -EINVAL;
	}
	sd->mws_per_peer = sd->peer_mws % sd->peers ? 0 :
			   sd->peer_mws / sd->peers;
	/*
	 * mw_count "may return zero if the link is not up yet" (ntb.h): it
	 * is asked at each use, up to what an mmap() offset can name
	 */
	sd->in_max = SIO_NTB_MMAP_MAX_IN;
	sd->in = kcalloc(sd->peers * max(sd->in_max, 1), sizeof(*sd->in),
			 GFP_KERNEL);
	sd->out = kcalloc(max(sd->peer_mws, 1), sizeof(*sd->out), GFP_KERNEL);
	return sd->in && sd->out ? 0 : -ENOMEM;
}

static int sntb_cdev_add(struct sntb_dev *sd)
{
	int ret;

	sd->cdev = cdev_alloc();
	if (!sd->cdev)
		return -ENOMEM;
	sd->cdev->ops = &sntb_fops;
	sd->cdev->owner = THIS_MODULE;
	ret = cdev_add(sd->cdev, MKDEV(MAJOR(sntb_devt), sd->minor), 1);
	if (ret)
		goto err;
	sd->dev = device_create(sntb_class, &sd->ntb->dev,
				MKDEV(MAJOR(sntb_devt), sd->minor), sd,
				"smartio-ntb%d", sd->minor);
	if (!IS_ERR(sd->dev))
		return 0;
	ret = PTR_ERR(sd->dev);
err:
	cdev_del(sd->cdev);
	return ret;
}

/*
 * A minor is taken empty, published once the device is ready, hidden
 * again before the device goes, and given back only once its class device
 * and cdev are gone: a probe meanwhile cannot take it and collide with
 * them in device_create().
 */
static int sntb_minor_get(void)
{
	int minor;

	mutex_lock(&sntb_idr_lock);
	minor = idr_alloc(&sntb_idr, NULL, 0, SNTB_MINORS, GFP_KERNEL);
	mutex_unlock(&sntb_idr_lock);
	return minor;
}

/* What open() finds at the minor: @sd, or NULL (nothing). */
static void sntb_minor_set(struct sntb_dev *sd, struct sntb_dev *to)
{
	mutex_lock(&sntb_idr_lock);
	idr_replace(&sntb_idr, to, sd->minor);
	mutex_unlock(&sntb_idr_lock);
}

static void sntb_minor_put(struct sntb_dev *sd)
{
	mutex_lock(&sntb_idr_lock);
	idr_remove(&sntb_idr, sd->minor);
	mutex_unlock(&sntb_idr_lock);
}

static unsigned int fail_probe_at;
module_param(fail_probe_at, uint, 0644);
MODULE_PARM_DESC(fail_probe_at,
		 "For tests only: 1 fails a probe after its context is set and a link event came (default 0: never)");

static int sntb_probe(struct ntb_client *client, struct ntb_dev *ntb)
{
	struct sntb_dev *sd;
	int ret;

	sd = kzalloc(sizeof(*sd), GFP_KERNEL);
	if (!sd)
		return -ENOMEM;
	kref_init(&sd->kref);
	mutex_init(&sd->lock);
	spin_lock_init(&sd->ev_lock);
	INIT_LIST_HEAD(&sd->files);
	init_waitqueue_head(&sd->wq);
	INIT_DELAYED_WORK(&sd->link_work, sntb_link_work);
	sd->ntb = ntb;
	sd->dma_dev = sntb_dma_dev(ntb);
	sd->inode = sntb_inode_new();
	if (IS_ERR(sd->inode)) {
		ret = PTR_ERR(sd->inode);
		dev_err(&ntb->dev, "cannot make an inode for the mappings: %d\n",
			ret);
		sd->inode = NULL;
		goto err;
	}
	ret = sntb_tables(sd, ntb);
	if (ret)
		goto err;
	sd->minor = sntb_minor_get();
	if (sd->minor < 0) {
		ret = sd->minor;
		dev_err(&ntb->dev, "no free smartio-ntb minor (%d at most): %d\n",
			SNTB_MINORS, ret);
		goto err;
	}
	ntb_db_set_mask(ntb, ntb_db_valid_mask(ntb));
	ret = ntb_set_ctx(ntb, sd, &sntb_ctx_ops);
	if (ret) {
		dev_err(&ntb->dev, "the NTB device has a context already: %d\n",
			ret);
		goto err_minor;
	}
	ntb_db_clear_mask(ntb, ntb_db_valid_mask(ntb));
	if (sd->msgs)
		ntb_msg_clear_mask(ntb, ntb_msg_inbits(ntb));
	if (READ_ONCE(fail_probe_at) == 1) {
		/* a hardware driver may raise a link event at any time */
		ntb_link_event(ntb);
		dev_err(&ntb->dev, "fail_probe_at=1: probe failed on purpose\n");
		ret = -EIO;
		goto err_ctx;
	}
	ret = sntb_cdev_add(sd);
	if (ret) {
		dev_err(&ntb->dev, "cannot add /dev/smartio-ntb%d: %d\n",
			sd->minor, ret);
		goto err_ctx;
	}
	sntb_minor_set(sd, sd);
	ntb_link_enable(ntb, NTB_SPEED_AUTO, NTB_WIDTH_AUTO);
	ntb_link_event(ntb);
	dev_info(&ntb->dev,
		 "/dev/smartio-ntb%d: port %d, %d peers, %d outbound windows\n",
		 sd->minor, ntb_port_number(ntb), sd->peers, sd->peer_mws);
	return 0;

err_ctx:
	ntb_clear_ctx(ntb);	/* no callback runs after this */
	/* an event before the clear may have queued it */
	cancel_delayed_work_sync(&sd->link_work);
err_minor:
	sntb_minor_put(sd);
err:
	ntb_db_set_mask(ntb, ntb_db_valid_mask(ntb));
	sntb_put(sd);
	return ret;
}

/*
 * The NTB device goes (hot unbind, its driver unloads): every mapping is
 * revoked and every buffer freed now, while the device is there; open files
 * keep the rest, and see -ENODEV.
 */
static void sntb_remove(struct ntb_client *client, struct ntb_dev *ntb)
{
	struct sntb_dev *sd = ntb->ctx;

	sntb_minor_set(sd, NULL);	/* no new open() finds it */
	device_destroy(sntb_class, MKDEV(MAJOR(sntb_devt), sd->minor));
	cdev_del(sd->cdev);
	sntb_minor_put(sd);
	ntb_link_disable(ntb);
	ntb_db_set_mask(ntb, ntb_db_valid_mask(ntb));
	if (sd->msgs)
		ntb_msg_set_mask(ntb, ntb_msg_inbits(ntb));
	ntb_clear_ctx(ntb);	/* no callback runs after this */
	cancel_delayed_work_sync(&sd->link_work);

	/* no call, fault or mapping runs meanwhile; read() sees it gone */
	mutex_lock(&sd->lock);
	sntb_revoke_all(sd);
	sntb_release_windows(sd, NULL);
	spin_lock_irq(&sd->ev_lock);
	WRITE_ONCE(sd->ntb, NULL);
	spin_unlock_irq(&sd->ev_lock);
	mutex_unlock(&sd->lock);
	wake_up_interruptible_all(&sd->wq);
	dev_info(&ntb->dev, "/dev/smartio-ntb%d removed\n", sd->minor);
	sntb_put(sd);
}

static struct ntb_client sntb_client = {
	.ops = {
		.probe = sntb_probe,
		.remove = sntb_remove,
	},
};

static int __init sntb_init(void)
{
	int ret;

	ret = alloc_chrdev_region(&sntb_devt, 0, SNTB_MINORS, "smartio-ntb");
	if (ret)
		return ret;
	sntb_class = sntb_class_create("smartio-ntb");
	if (IS_ERR(sntb_class)) {
		ret = PTR_ERR(sntb_class);
		goto err_region;
	}
	ret = ntb_register_client(&sntb_client);
	if (ret)
		goto err_class;
	return 0;

err_class:
	class_destroy(sntb_class);
err_region:
	unregister_chrdev_region(sntb_devt, SNTB_MINORS);
	return ret;
}
module_init(sntb_init);

static void __exit sntb_exit(void)
{
	ntb_unregister_client(&sntb_client);
	class_destroy(sntb_class);
	unregister_chrdev_region(sntb_devt, SNTB_MINORS);
}
module_exit(sntb_exit);

MODULE_AUTHOR("smartio developers");
MODULE_LICENSE("Dual MIT/GPL");
MODULE_DESCRIPTION("smartio's NTB client: the NTB framework to user space");
