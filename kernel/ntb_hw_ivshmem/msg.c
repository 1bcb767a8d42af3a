// SPDX-License-Identifier: GPL-2.0 OR MIT
/*
 * ntb_hw_ivshmem: message registers, as IDT's (the idt profile).
 *
 * A port has IVNTB_MSGS inbound registers. No store crosses guests
 * atomically, so a register is kept per sender, in the receiver's slot:
 * msg[S][i] (value and a count of messages, written by sender S only) and
 * msg_ack[S][i] (the count the receiver took, written by it only); S's
 * message is pending while they differ. The receiver shows one sender's
 * message per register at a time, as IDT's single register shows one: the
 * one it showed last while that is still pending, else the lowest port's.
 *
 * IDT's register is full while it holds a message its port has not cleared
 * (msg_clear_sts): a write to a full register is not delivered; the driver
 * returns 0 and the sender's outbound status bit says so, with a message
 * event (idt_ntb_peer_msg_write(), idt_ntb_msg_read_sts()). Here a sender
 * finds the register full when any sender's message is pending there, or
 * another sender is about to write it: each first says it is about to
 * (msg_intent), then, after a full barrier, looks at the others. Of two
 * that write at once at least one sees the other, so never both deliver;
 * both may give up, as if the register were full (the client retries, as
 * it must on IDT).
 *
 * A message to a peer whose link is down fails with -ENOTCONN; the unread
 * messages of a peer that died, restarted or disabled its link are
 * dropped.
 */
#include <linux/bitmap.h>

#include "ntb_hw_ivshmem.h"

#define IVNTB_MSG_OUTBITS	GENMASK_ULL(IVNTB_MSGS - 1, 0)
#define IVNTB_MSG_INSHIFT	16
#define IVNTB_MSG_INBITS	(IVNTB_MSG_OUTBITS << IVNTB_MSG_INSHIFT)

static inline u32 msg_rd(__le32 *p)
{
	return le32_to_cpu(READ_ONCE(*p));
}

/*
 * Is port @port's message in this port's register @midx pending? Only once
 * this port sees the link with it up, as its doorbells (db.c): the sender
 * saw the link up before this port may, and the client that reads the
 * message acts on the link (ntb_perf asks ntb_mw_get_align() at once).
 */
static bool ivntb_msg_pending(struct ivntb_dev *iv, int port, int midx)
{
	struct ivntb_slot *s = iv->slot;

	return (READ_ONCE(iv->db_up) & BIT(port)) &&
	       msg_rd(&s->msg[port][midx].seq) !=
	       msg_rd(&s->msg_ack[port][midx]);
}

/* The port whose message register @midx shows, or -1 (msg_lock held). */
static int ivntb_msg_shown(struct ivntb_dev *iv, int midx)
{
	int port = iv->msg_from[midx];

	if (port >= 0 && ivntb_msg_pending(iv, port, midx))
		return port;
	for (port = 0; port < iv->ports; port++)
		if (port != iv->port && ivntb_msg_pending(iv, port, midx))
			return port;
	return -1;
}

/* The messages' counts, all senders and registers: a change is news. */
static u32 ivntb_msg_sum(struct ivntb_dev *iv)
{
	u32 sum = 0;
	int p, m;

	for (p = 0; p < iv->ports; p++)
		for (m = 0; m < IVNTB_MSGS; m++)
			sum += msg_rd(&iv->slot->msg[p][m].seq);
	return sum;
}

/* Tell the client when its unmasked status has news. */
static void ivntb_msg_work(struct work_struct *work)
{
	struct ivntb_dev *iv = container_of(work, struct ivntb_dev, msg_work);
	unsigned long flags;
	bool news;
	u32 sum;

	spin_lock_irqsave(&iv->msg_lock, flags);
	sum = ivntb_msg_sum(iv);
	news = sum != iv->msg_sum || iv->msg_news;
	iv->msg_sum = sum;
	iv->msg_news = false;
	spin_unlock_irqrestore(&iv->msg_lock, flags);
	if (news && (ivntb_msg_read_sts(&iv->ntb) & ~READ_ONCE(iv->msg_mask)))
		ntb_msg_event(&iv->ntb);
}

/* Look for news from any context (the interrupt handler, a link change). */
void ivntb_msg_kick(struct ivntb_dev *iv)
{
	if (iv->prof->msgs)
		schedule_work(&iv->msg_work);
}

void ivntb_msg_init(struct ivntb_dev *iv)
{
	int m;

	spin_lock_init(&iv->msg_lock);
	/* masked until a client unmasks, as the doorbells */
	iv->msg_mask = IVNTB_MSG_INBITS | IVNTB_MSG_OUTBITS;
	for (m = 0; m < IVNTB_MSGS; m++)
		iv->msg_from[m] = -1;
	iv->msg_sum = ivntb_msg_sum(iv);
	INIT_WORK(&iv->msg_work, ivntb_msg_work);
}

void ivntb_msg_fini(struct ivntb_dev *iv)
{
	cancel_work_sync(&iv->msg_work);
}

/* @port died or restarted: what it sent and no one read is dropped. */
void ivntb_msg_forget(struct ivntb_dev *iv, int port)
{
	struct ivntb_slot *s = iv->slot;
	unsigned long flags;
	int m;

	if (!iv->prof->msgs)
		return;
	spin_lock_irqsave(&iv->msg_lock, flags);
	for (m = 0; m < IVNTB_MSGS; m++)
		WRITE_ONCE(s->msg_ack[port][m], s->msg[port][m].seq);
	iv->msg_sum = ivntb_msg_sum(iv);
	spin_unlock_irqrestore(&iv->msg_lock, flags);
}

/*
 * Drop what port @port left in this port's registers in a link generation
 * of its that ended: it is gone (@gone: unloaded, or dead as this port
 * sees it), or its link is disabled (its client unloaded or gave the link
 * up). Shown only while this port sees the link with it up
 * (ivntb_msg_pending()), such a message would stay hidden and keep the
 * register full to every sender for good (ivntb_msg_full()); IDT's
 * register shows it, and the receiver's next clear frees it. A sender
 * whose link is up on its side and not yet here is alive here with its
 * link enabled: its messages wait to be shown.
 *
 * The counts before the enable word: a sender writes its enable before it
 * can send in the new generation (wmb() in ivntb_link_set()), so a count
 * read here while the word still says disabled is of messages sent before.
 */
void ivntb_msg_drop_ended(struct ivntb_dev *iv, int port, bool gone)
{
	struct ivntb_slot *s = iv->slot;
	u32 seq[IVNTB_MSGS];
	unsigned long flags;
	bool dropped = false;
	int m;

	if (!iv->prof->msgs)
		return;
	spin_lock_irqsave(&iv->msg_lock, flags);
	for (m = 0; m < IVNTB_MSGS; m++)
		seq[m] = msg_rd(&s->msg[port][m].seq);
	rmb();	/* the counts before the enable word (see above) */
	if (gone || !(msg_rd(&ivntb_slot_of(iv, port)->enabled) & 1)) {
		for (m = 0; m < IVNTB_MSGS; m++) {
			if (msg_rd(&s->msg_ack[port][m]) == seq[m])
				continue;
			WRITE_ONCE(s->msg_ack[port][m], cpu_to_le32(seq[m]));
			dropped = true;
		}
	}
	/* another sender's message may show now */
	iv->msg_news |= dropped;
	spin_unlock_irqrestore(&iv->msg_lock, flags);
	if (dropped)
		ivntb_msg_kick(iv);
}

int ivntb_msg_count(struct ntb_dev *ntb)
{
	return IVNTB_MSGS;
}

u64 ivntb_msg_inbits(struct ntb_dev *ntb)
{
	return IVNTB_MSG_INBITS;
}

u64 ivntb_msg_outbits(struct ntb_dev *ntb)
{
	return IVNTB_MSG_OUTBITS;
}

u64 ivntb_msg_read_sts(struct ntb_dev *ntb)
{
	struct ivntb_dev *iv = to_ivntb(ntb);
	unsigned long flags;
	u64 sts;
	int m;

	spin_lock_irqsave(&iv->msg_lock, flags);
	sts = iv->msg_fail;
	for (m = 0; m < IVNTB_MSGS; m++)
		if (ivntb_msg_shown(iv, m) >= 0)
			sts |= BIT_ULL(m + IVNTB_MSG_INSHIFT);
	spin_unlock_irqrestore(&iv->msg_lock, flags);
	return sts;
}

/*
 * Clearing an inbound bit frees the register: the message it shows is
 * taken, and the next pending one (another sender's) shows.
 */
int ivntb_msg_clear_sts(struct ntb_dev *ntb, u64 sts_bits)
{
	struct ivntb_dev *iv = to_ivntb(ntb);
	struct ivntb_slot *s = iv->slot;
	unsigned long flags;
	int m, port;

	spin_lock_irqsave(&iv->msg_lock, flags);
	iv->msg_fail &= ~sts_bits;
	for (m = 0; m < IVNTB_MSGS; m++) {
		if (!(sts_bits & BIT_ULL(m + IVNTB_MSG_INSHIFT)))
			continue;
		port = ivntb_msg_shown(iv, m);
		if (port < 0)
			continue;
		WRITE_ONCE(s->msg_ack[port][m], s->msg[port][m].seq);
		iv->msg_from[m] = -1;
	}
	/* the next sender's message, if one waits, is news */
	iv->msg_news = true;
	spin_unlock_irqrestore(&iv->msg_lock, flags);
	ivntb_msg_kick(iv);
	return 0;
}

/* IDT's: invalid bits are refused (idt_reg_set_bits()). */
int ivntb_msg_set_mask(struct ntb_dev *ntb, u64 mask_bits)
{
	struct ivntb_dev *iv = to_ivntb(ntb);
	unsigned long flags;

	if (mask_bits & ~(IVNTB_MSG_INBITS | IVNTB_MSG_OUTBITS))
		return -EINVAL;
	spin_lock_irqsave(&iv->msg_lock, flags);
	WRITE_ONCE(iv->msg_mask, iv->msg_mask | mask_bits);
	spin_unlock_irqrestore(&iv->msg_lock, flags);
	return 0;
}

int ivntb_msg_clear_mask(struct ntb_dev *ntb, u64 mask_bits)
{
	struct ivntb_dev *iv = to_ivntb(ntb);
	unsigned long flags;

	spin_lock_irqsave(&iv->msg_lock, flags);
	WRITE_ONCE(iv->msg_mask, iv->msg_mask & ~mask_bits);
	iv->msg_news = true;	/* what waited while masked is news now */
	spin_unlock_irqrestore(&iv->msg_lock, flags);
	ivntb_msg_kick(iv);
	return 0;
}

/*
 * The message register @midx shows, and its sender's peer index; the last
 * one shown while none is pending, as a register keeps its value.
 */
u32 ivntb_msg_read(struct ntb_dev *ntb, int *pidx, int midx)
{
	struct ivntb_dev *iv = to_ivntb(ntb);
	unsigned long flags;
	int port;
	u32 val;

	if (midx < 0 || midx >= IVNTB_MSGS)
		return ~0U;
	spin_lock_irqsave(&iv->msg_lock, flags);
	port = ivntb_msg_shown(iv, midx);
	if (port >= 0) {
		rmb();	/* the value its sender wrote before the count */
		iv->msg_last[midx] = msg_rd(&iv->slot->msg[port][midx].val);
		iv->msg_from[midx] = port;
	}
	port = iv->msg_from[midx];
	val = iv->msg_last[midx];
	spin_unlock_irqrestore(&iv->msg_lock, flags);
	if (pidx)
		*pidx = port >= 0 ? ivntb_port_pidx(iv, port) : 0;
	return val;
}

/*
 * Is port @port's register @midx full: a sender's message pending there, or
 * another sender about to write it?
 */
static bool ivntb_msg_full(struct ivntb_dev *iv, int port, int midx)
{
	struct ivntb_slot *s = ivntb_slot_of(iv, port);
	int p;

	for (p = 0; p < iv->ports; p++) {
		if (p == port)
			continue;
		if (msg_rd(&s->msg[p][midx].seq) !=
		    msg_rd(&s->msg_ack[p][midx]))
			return true;
		/* a sender that died about to write is no one's concern */
		if (p != iv->port && (READ_ONCE(iv->db_up) & BIT(p)) &&
		    msg_rd(&s->msg_intent[p][midx]))
			return true;
	}
	return false;
}

int ivntb_peer_msg_write(struct ntb_dev *ntb, int pidx, int midx, u32 msg)
{
	struct ivntb_dev *iv = to_ivntb(ntb);
	struct ivntb_slot *s;
	unsigned long flags;
	int port;
	u32 seq;

	if (midx < 0 || midx >= IVNTB_MSGS ||
	    pidx < 0 || pidx >= ivntb_peer_count(iv))
		return -EINVAL;
	if (!(ntb_link_is_up(ntb, NULL, NULL) & BIT_ULL(pidx)))
		return -ENOTCONN;
	port = ivntb_pidx_port(iv, pidx);
	s = ivntb_slot_of(iv, port);
	spin_lock_irqsave(&iv->msg_lock, flags);
	WRITE_ONCE(s->msg_intent[iv->port][midx], cpu_to_le32(1));
	mb();	/* our intent before we look at the others' (see the top) */
	if (ivntb_msg_full(iv, port, midx)) {
		WRITE_ONCE(s->msg_intent[iv->port][midx], 0);
		iv->msg_fail |= BIT_ULL(midx);
		iv->msg_news = true;
		spin_unlock_irqrestore(&iv->msg_lock, flags);
		ivntb_msg_kick(iv);	/* the sender's event, as IDT's */
		return 0;
	}
	iv->msg_fail &= ~BIT_ULL(midx);
	seq = msg_rd(&s->msg[iv->port][midx].seq);
	WRITE_ONCE(s->msg[iv->port][midx].val, cpu_to_le32(msg));
	wmb();	/* the value before the count that makes it pending */
	WRITE_ONCE(s->msg[iv->port][midx].seq, cpu_to_le32(seq + 1));
	wmb();	/* pending before the intent goes: never neither */
	WRITE_ONCE(s->msg_intent[iv->port][midx], 0);
	spin_unlock_irqrestore(&iv->msg_lock, flags);
	wmb();	/* the count before the interrupt */
	ivntb_ring(iv, port, 0);
	return 0;
}
