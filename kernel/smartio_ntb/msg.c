// SPDX-License-Identifier: GPL-2.0 OR MIT
/*
 * smartio_ntb: message registers (IDT's), where the hardware has them.
 *
 * A peer's register holds one message until this port takes it: so each
 * message is taken as soon as the hardware says it is there (the message
 * event), which frees the register for the next, and queued for every open
 * file, as doorbells are latched for every file. While no file is open,
 * a message stays in its register (its sender is told the register is
 * full) and the next open takes it: none is taken to be dropped. A file's
 * queue is bounded: a process that never receives loses the oldest, and is
 * told how many.
 *
 * The framework numbers registers 0 .. msg_count - 1; their status bits are
 * the set bits of msg_inbits (inbound) and msg_outbits (outbound), in
 * order: register i's is the i-th set bit.
 */
#include <linux/bitmap.h>
#include <linux/eventfd.h>

#include "compat.h"
#include "smartio_ntb.h"

/* The status bit of register @midx among the set bits of @bits (0: none). */
static u64 sntb_msg_bit(u64 bits, int midx)
{
	while (bits && midx--)
		bits &= bits - 1;
	return bits & -bits;
}

/* Queue @m for every open file (ev_lock held). */
static void sntb_msg_queue(struct sntb_dev *sd, const struct sio_ntb_msg *m)
{
	struct sntb_file *f;

	list_for_each_entry(f, &sd->files, node) {
		if (f->msg_len == SIO_NTB_MSG_QUEUE) {
			f->msg_head = (f->msg_head + 1) % SIO_NTB_MSG_QUEUE;
			f->msg_len--;
			f->msg_lost++;
		}
		f->msg[(f->msg_head + f->msg_len++) % SIO_NTB_MSG_QUEUE] = *m;
		f->msg_new = true;
		if (f->msg_efd)
			sntb_eventfd_signal(f->msg_efd);
	}
}

/* Take the messages the registers hold: true if there was one. */
static bool sntb_msg_take(struct sntb_dev *sd)
{
	struct ntb_dev *ntb = sd->ntb;
	u64 in = ntb_msg_inbits(ntb), sts = ntb_msg_read_sts(ntb);
	struct sio_ntb_msg m = { };
	unsigned long flags;
	bool any = false;
	int pidx, midx;

	for (midx = 0; midx < sd->msgs; midx++) {
		u64 bit = sntb_msg_bit(in, midx);
		bool open;

		if (!(sts & bit))
			continue;
		/*
		 * With no file open there is no one to queue it for: leave it
		 * in the register, as the hardware would, and the peer's next
		 * send is told the register is full. sntb_open() takes it.
		 */
		spin_lock_irqsave(&sd->ev_lock, flags);
		open = !list_empty(&sd->files);
		spin_unlock_irqrestore(&sd->ev_lock, flags);
		if (!open)
			break;
		m.midx = midx;
		m.value = ntb_msg_read(ntb, &pidx, midx);
		m.pidx = pidx;
		/* the register is free for the peer's next message */
		ntb_msg_clear_sts(ntb, bit);
		spin_lock_irqsave(&sd->ev_lock, flags);
		sntb_msg_queue(sd, &m);
		spin_unlock_irqrestore(&sd->ev_lock, flags);
		any = true;
	}
	return any;
}

/*
 * The hardware says a message status changed (the framework's callback;
 * any context the driver calls it from). A message that came while the
 * others were taken raises another event; the loop is bounded all the same.
 */
void sntb_msg_event(void *ctx)
{
	struct sntb_dev *sd = ctx;
	int i;

	for (i = 0; i < SIO_NTB_MSG_QUEUE && sntb_msg_take(sd); i++)
		;
	if (i)
		wake_up_interruptible_all(&sd->wq);
}

int sntb_msg_send(struct sntb_dev *sd, struct sntb_file *f, void *arg)
{
	struct sio_ntb_msg *m = arg;
	struct ntb_dev *ntb = sd->ntb;
	u64 out;
	int ret;

	if (!sd->msgs)
		return -EOPNOTSUPP;
	if (m->flags || m->pidx >= sd->peers || m->midx >= sd->msgs)
		return -EINVAL;
	if (!(ntb_link_is_up(ntb, NULL, NULL) & BIT_ULL(m->pidx)))
		return -ENOTCONN;
	/* the status of this write alone (calls are serialised) */
	out = sntb_msg_bit(ntb_msg_outbits(ntb), m->midx);
	ntb_msg_clear_sts(ntb, out);
	ret = ntb_peer_msg_write(ntb, m->pidx, m->midx, m->value);
	if (ret)
		return ret;
	if (!(ntb_msg_read_sts(ntb) & out))
		return 0;
	/* the peer's register was full: not delivered */
	ntb_msg_clear_sts(ntb, out);
	return -EAGAIN;
}

int sntb_msg_recv(struct sntb_dev *sd, struct sntb_file *f, void *arg)
{
	struct sio_ntb_msg *m = arg;
	int ret = -EAGAIN;

	if (!sd->msgs)
		return -EOPNOTSUPP;
	if (m->flags)
		return -EINVAL;
	spin_lock_irq(&sd->ev_lock);
	if (f->msg_len) {
		*m = f->msg[f->msg_head];
		f->msg_head = (f->msg_head + 1) % SIO_NTB_MSG_QUEUE;
		f->msg_len--;
		ret = 0;
	}
	spin_unlock_irq(&sd->ev_lock);
	return ret;
}

/* SIO_NTB_IOC_DB_EVENTFD with SIO_NTB_EVENTFD_MSG. */
int sntb_msg_eventfd(struct sntb_dev *sd, struct sntb_file *f,
		     struct sio_ntb_db_eventfd *e)
{
	int ret;

	if (e->bit || (e->flags & ~SIO_NTB_EVENTFD_MSG))
		return -EINVAL;
	if (!sd->msgs)
		return -EOPNOTSUPP;
	ret = sntb_eventfd_set(sd, &f->msg_efd, e->fd);
	if (ret)
		return ret;
	/*
	 * Messages may be queued already: sntb_open() takes those that waited
	 * in the registers, before any eventfd was set. A waiter on the
	 * eventfd alone would never learn of them: signal it for them now.
	 */
	spin_lock_irq(&sd->ev_lock);
	if (f->msg_len && f->msg_efd)
		sntb_eventfd_signal(f->msg_efd);
	spin_unlock_irq(&sd->ev_lock);
	return 0;
}
