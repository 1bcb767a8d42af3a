/* SPDX-License-Identifier: GPL-2.0 OR MIT */
/*
 * smartio_ntb: an NTB client of the Linux NTB framework that gives user space
 * one character device per NTB device (<smartio/ntb.h>). It uses the
 * framework's API (include/linux/ntb.h) and nothing of any hardware driver.
 */
#ifndef SMARTIO_NTB_PRIV_H
#define SMARTIO_NTB_PRIV_H

#include <linux/cdev.h>
#include <linux/kref.h>
#include <linux/list.h>
#include <linux/mutex.h>
#include <linux/ntb.h>
#include <linux/spinlock.h>
#include <linux/wait.h>
#include <linux/workqueue.h>

#include <smartio/ntb.h>

#define SNTB_NAME	"smartio_ntb"
#define SNTB_DB_BITS	64
/* the mmap offsets of each window or buffer (SIO_NTB_MMAP_*) */
#define SNTB_MMAP_SPAN	SIO_NTB_MMAP_SPAN
/* an offset no mmap() takes: the window's index is past the offsets' */
#define SNTB_MMAP_NONE	(~0ULL)

struct sntb_file;

/*
 * struct sntb_in - an inbound window (peer, window) of the device
 * @owner:	the file that holds it (its buffer or translation), or NULL
 * @vaddr, @dma, @size: its buffer, or (vaddr NULL) the bus address and
 *		size of its translation
 * @mapped:	mappings of the buffer (mmap()s through @owner, split by
 *		munmap())
 * @gen:	one more each time the buffer is freed or revoked: a mapping
 *		of an older generation faults in no page of it
 */
struct sntb_in {
	struct sntb_file *owner;
	void *vaddr;
	dma_addr_t dma;
	u64 size;
	unsigned int mapped;
	u64 gen;
};

/*
 * struct sntb_out - an outbound window of the device
 * @owner:	the file whose mappings hold it, or NULL
 * @mapped:	its mappings (mmap()s through @owner, split by munmap())
 * @gen:	one more at each revocation (see struct sntb_in)
 * @wc, @wc_base, @wc_size: the write-combining memory type reserved for
 *		the window while it is mapped
 * @xlat_owner:	the file that translated it outbound, or NULL
 * @xlat_pidx:	the peer it is translated to
 */
struct sntb_out {
	struct sntb_file *owner;
	unsigned int mapped;
	u64 gen;
	bool wc;
	phys_addr_t wc_base;
	resource_size_t wc_size;
	struct sntb_file *xlat_owner;
	int xlat_pidx;
};

/**
 * struct sntb_dev - one NTB device and its character device
 * @kref:	held by the NTB client binding and by each open file
 * @lock:	serialises calls, mappings, faults and removal (never held
 *		across copy_{to,from}_user: a fault on a mapping takes it)
 * @ntb:	the NTB device; NULL once it is gone (hot unbind)
 * @dma_dev:	where inbound buffers are allocated (ntb_get_dma_dev())
 * @minor:	N of /dev/smartio-ntbN
 * @cdev, @dev:	the character device (apart: open files outlive it) and its
 *		class device
 * @inode:	an anonymous inode whose mapping every open file uses, so that
 *		removal and link loss revoke mappings with unmap_mapping_range()
 * @peers, @peer_mws, @mws_per_peer, @spads, @msgs: from the framework at
 *		probe (inbound windows are counted when used: a driver may
 *		count none until the link is up)
 * @in_max:	inbound windows per peer this device can hold (a peer's own
 *		count is asked at each use)
 * @in:		[peer * IN_MAX + window]
 * @out:	[outbound window]
 * @ev_lock:	serialises @files, the files' pending events and @link*
 *		with the framework's callbacks (interrupts off) and read()
 * @files:	the open files
 * @link, @link_gen, @peer_gen: link state, as told to processes;
 *		@peer_gen[pidx] is @link_gen when that peer's link last changed
 * @ev_link:	the links as the last link event found them
 * @ev_down:	peers whose link went down at a link event since @link_work
 *		last took them: counted by the event itself, so that a peer
 *		that goes down and comes back before the work runs is seen
 * @wq:		read() and poll() sleep here
 * @link_work:	takes link changes in: revokes a lost peer's outbound
 *		mappings, then updates @link and wakes the processes
 */
struct sntb_dev {
	struct kref kref;
	struct mutex lock;	/* see above */
	struct ntb_dev *ntb;
	struct device *dma_dev;
	int minor;
	struct cdev *cdev;
	struct device *dev;
	struct inode *inode;
	int peers;
	int peer_mws;
	int mws_per_peer;
	int spads;
	int msgs;
	int in_max;
	struct sntb_in *in;
	struct sntb_out *out;

	spinlock_t ev_lock;	/* see above */
	struct list_head files;
	u64 link;
	u64 link_gen;
	u64 peer_gen[SIO_NTB_MAX_PEERS];
	u64 ev_link;
	u64 ev_down;
	wait_queue_head_t wq;
	struct delayed_work link_work;
};

/**
 * struct sntb_file - an open /dev/smartio-ntbN
 * @sd:		its device
 * @node:	in @sd->files
 * @db:		doorbell bits rung since its last read()
 * @link_gen:	the link generation its last read() reported
 * @efd:	eventfd per doorbell bit (under @sd->ev_lock)
 * @msg_efd:	eventfd signalled at each message (under @sd->ev_lock)
 * @msg:	the messages received and not taken yet, a ring from
 *		@msg_head, @msg_len of them (under @sd->ev_lock)
 * @msg_new:	a message came since the last read()
 * @msg_lost:	messages dropped, the queue full, since the last read()
 */
struct sntb_file {
	struct sntb_dev *sd;
	struct list_head node;
	u64 db;
	u64 link_gen;
	struct eventfd_ctx *efd[SNTB_DB_BITS];
	struct eventfd_ctx *msg_efd;
	struct sio_ntb_msg msg[SIO_NTB_MSG_QUEUE];
	unsigned int msg_head;
	unsigned int msg_len;
	bool msg_new;
	u32 msg_lost;
};

static inline struct sntb_in *sntb_in(struct sntb_dev *sd, int pidx, int widx)
{
	return &sd->in[pidx * sd->in_max + widx];
}

static inline u64 sntb_mmap_in_offset(u32 pidx, u32 widx)
{
	if (pidx >= SIO_NTB_MAX_PEERS || widx >= SIO_NTB_MMAP_MAX_IN)
		return SNTB_MMAP_NONE;
	return SIO_NTB_MMAP_INBOUND(pidx, widx);
}

static inline u64 sntb_mmap_out_offset(u32 widx)
{
	if (widx >= SIO_NTB_MMAP_MAX_OUT)
		return SNTB_MMAP_NONE;
	return SIO_NTB_MMAP_OUTBOUND(widx);
}

/* main.c */
void sntb_put(struct sntb_dev *sd);

/* ioctl.c */
long sntb_ioctl(struct file *file, unsigned int cmd, unsigned long arg);
void sntb_release_windows(struct sntb_dev *sd, struct sntb_file *f);
void sntb_free_in(struct sntb_dev *sd, struct sntb_in *in, int pidx, int widx);
int sntb_eventfd_set(struct sntb_dev *sd, struct eventfd_ctx **slot, int fd);

/* msg.c */
void sntb_msg_event(void *ctx);
int sntb_msg_send(struct sntb_dev *sd, struct sntb_file *f, void *arg);
int sntb_msg_recv(struct sntb_dev *sd, struct sntb_file *f, void *arg);
int sntb_msg_eventfd(struct sntb_dev *sd, struct sntb_file *f,
		     struct sio_ntb_db_eventfd *e);

/* mmap.c */
int sntb_out_pidx(struct sntb_dev *sd, int widx);
int sntb_mmap(struct file *file, struct vm_area_struct *vma);
void sntb_revoke_out(struct sntb_dev *sd, int widx);
void sntb_revoke_all(struct sntb_dev *sd);
struct inode *sntb_inode_new(void);
void sntb_inode_put(struct inode *inode);

#endif
