// SPDX-License-Identifier: GPL-2.0 OR MIT
/*
 * ntb_hw_ivshmem: link detection. ivshmem has no link to train; a port's
 * link with a peer is up while both have it enabled and the peer's heartbeat
 * in BAR2 keeps moving. A peer whose heartbeat stops (its guest died, or
 * hangs) goes down after link_timeout_ms of this port's own polls; a peer
 * that comes back with a new session (rebooted) is taken down first, then up
 * again, so that clients set up their windows anew.
 */
#include <linux/bitmap.h>
#include <linux/debugfs.h>
#include <linux/module.h>
#include <linux/mutex.h>

#include "ntb_hw_ivshmem.h"

#define IVNTB_HEARTBEAT_MS_MAX		10000
#define IVNTB_LINK_TIMEOUT_MS_MAX	3600000

/*
 * The periods are read by every poll (link_timeout_ms may be written at run
 * time, hence READ_ONCE there); a value out of range, 0 above all (the poll
 * divides by heartbeat_ms), is refused when the module is loaded or the
 * parameter written, with the range in the kernel log.
 */
static int ivntb_param_set_ms(const char *val, const struct kernel_param *kp,
			      unsigned int max)
{
	int ret = param_set_uint_minmax(val, kp, 1, max);

	if (ret)
		pr_err(IVNTB_NAME ": %s=%s: must be 1 to %u (ms)\n",
		       kp->name, val, max);
	return ret;
}

static int ivntb_set_heartbeat(const char *val, const struct kernel_param *kp)
{
	return ivntb_param_set_ms(val, kp, IVNTB_HEARTBEAT_MS_MAX);
}

static int ivntb_set_timeout(const char *val, const struct kernel_param *kp)
{
	return ivntb_param_set_ms(val, kp, IVNTB_LINK_TIMEOUT_MS_MAX);
}

static const struct kernel_param_ops ivntb_heartbeat_ops = {
	.set	= ivntb_set_heartbeat,
	.get	= param_get_uint,
};

static const struct kernel_param_ops ivntb_timeout_ops = {
	.set	= ivntb_set_timeout,
	.get	= param_get_uint,
};

static unsigned int heartbeat_ms = 100;
module_param_cb(heartbeat_ms, &ivntb_heartbeat_ops, &heartbeat_ms, 0444);
MODULE_PARM_DESC(heartbeat_ms,
		 "Heartbeat and link poll period, in ms (1-10000, default 100)");

static unsigned int link_timeout_ms = 5000;
module_param_cb(link_timeout_ms, &ivntb_timeout_ops, &link_timeout_ms, 0644);
MODULE_PARM_DESC(link_timeout_ms,
		 "A peer whose heartbeat has not moved for this long (ms of this guest's own polls) is down (1-3600000, default 5000)");

static void ivntb_link_work(struct work_struct *work);

void ivntb_link_init(struct ivntb_dev *iv)
{
	spin_lock_init(&iv->link_lock);
	INIT_DELAYED_WORK(&iv->link_work, ivntb_link_work);
}

/*
 * The layout this port adopted at probe is still the one in BAR2, and its
 * own slot is still its own. Nothing read here is used as an address (every
 * address derives from iv->layout): a peer that rewrites the descriptor or
 * this port's slot can only take this port's links down.
 */
static bool ivntb_layout_intact(struct ivntb_dev *iv)
{
	struct ivntb_desc now;

	/* a torn copy differs from the layout: a rewrite under way is one */
	memcpy(&now, iv->desc, sizeof(now));
	return !memcmp(&now, &iv->layout, sizeof(now)) &&
	       le64_to_cpu(READ_ONCE(iv->slot->magic)) == IVNTB_SLOT_MAGIC &&
	       le64_to_cpu(READ_ONCE(iv->slot->session)) == iv->session;
}

/*
 * Whether the layout holds; said once when it breaks (and when it is back),
 * not at every poll. While it is broken the peers' slots are not trusted:
 * every peer is down, and one that comes back is a new session (its rings
 * of before, perhaps rewritten too, are dropped).
 */
static bool ivntb_layout_check(struct ivntb_dev *iv)
{
	bool intact = ivntb_layout_intact(iv);
	int pidx;

	if (intact && iv->layout_broken)
		dev_info(&iv->pdev->dev,
			 "BAR2's layout and port %d's slot are back as adopted: links may come up again\n",
			 iv->port);
	if (intact || iv->layout_broken) {
		iv->layout_broken = !intact;
		return intact;
	}
	iv->layout_broken = true;
	dev_err(&iv->pdev->dev,
		"BAR2's layout or port %d's slot was rewritten by another guest (every guest must load ntb_hw_ivshmem with the same ports=, and nothing else may write the region): links kept down\n",
		iv->port);
	for (pidx = 0; pidx < ivntb_peer_count(iv); pidx++) {
		iv->peer[pidx].alive = false;
		iv->peer[pidx].session = 0;
		WRITE_ONCE(iv->slot->seen[ivntb_pidx_port(iv, pidx)], 0);
	}
	return false;
}

/*
 * Whether peer @pidx is alive and has its link enabled. Counting this port's
 * own poll periods (@tick: this poll ends one), not time, keeps a guest that
 * was not scheduled for a while (TCG on a loaded host) from declaring its
 * peers dead on waking. Only periods count: every interrupt polls at once
 * too, and a burst of doorbells or messages between two of a peer's
 * heartbeats would otherwise count as its timeout.
 */
static bool ivntb_peer_poll(struct ivntb_dev *iv, int pidx,
			    unsigned int limit, bool tick)
{
	int port = ivntb_pidx_port(iv, pidx);
	struct ivntb_slot *s = ivntb_slot_of(iv, port);
	struct ivntb_peer *p = &iv->peer[pidx];
	__le64 *seen = &iv->slot->seen[port];
	bool bounced;
	u64 session;
	u32 hb, en;

	if (le64_to_cpu(READ_ONCE(s->magic)) != IVNTB_SLOT_MAGIC) {
		p->alive = false;
		WRITE_ONCE(*seen, 0);
		ivntb_msg_drop_ended(iv, port, true);
		return false;
	}
	/*
	 * The peer wrote its session before the magic that vouches for it
	 * (wmb() in ivntb_slot_init()): read them in that order, as another
	 * guest's CPU may not make them visible in order otherwise (arm64).
	 */
	rmb();
	session = le64_to_cpu(READ_ONCE(s->session));
	hb = le32_to_cpu(READ_ONCE(s->heartbeat));
	en = le32_to_cpu(READ_ONCE(s->enabled));
	if (session != p->session) {
		/* new, or restarted: up once its heartbeat is seen to move */
		WRITE_ONCE(*seen, 0);
		ivntb_db_forget(iv, port);
		ivntb_msg_forget(iv, port);
		p->session = session;
		p->heartbeat = hb;
		p->enabled = en;
		p->still = 0;
		p->alive = false;
		return false;
	}
	if (hb != p->heartbeat) {
		p->heartbeat = hb;
		p->still = 0;
		p->alive = true;
	} else if (tick && ++p->still >= limit) {
		p->alive = false;
	}
	/*
	 * Enabled again since the last poll (the count moved): down for this
	 * poll, so a disable and enable that fell between two polls, which
	 * both read it enabled, still reach the client as a link down.
	 */
	bounced = (en >> 1) != (p->enabled >> 1);
	p->enabled = en;
	/* its messages of a life, or a link, that ended go */
	if (!p->alive || !(en & 1))
		ivntb_msg_drop_ended(iv, port, !p->alive);
	/* tell the peer we see this life of it; up once it sees ours */
	WRITE_ONCE(*seen, p->alive ? cpu_to_le64(session) : 0);
	return !bounced && p->alive && (en & 1) &&
	       le64_to_cpu(READ_ONCE(s->seen[iv->port])) == iv->session;
}

/* Why the link with peer @pidx went down, for the kernel log. */
static const char *ivntb_down_why(struct ivntb_dev *iv, int pidx)
{
	if (!READ_ONCE(iv->enabled))
		return "disabled here";
	if (READ_ONCE(iv->cable_out))
		return "cable pulled here";
	if (iv->layout_broken)
		return "BAR2 rewritten";
	if (iv->peer[pidx].alive)
		return "disabled by the peer, or its cable pulled";
	return "the peer is gone or restarted";
}

static void ivntb_link_report(struct ivntb_dev *iv, u64 old, u64 now)
{
	DECLARE_BITMAP(diff, 64);
	int pidx;

	bitmap_from_u64(diff, old ^ now);
	for_each_set_bit(pidx, diff, ivntb_peer_count(iv)) {
		int port = ivntb_pidx_port(iv, pidx);

		ivntb_db_link(iv, port, now & BIT_ULL(pidx));
		/* a dead peer's messages go; waiting ones are news once up */
		if (!(now & BIT_ULL(pidx)) && !iv->peer[pidx].alive)
			ivntb_msg_forget(iv, port);
		ivntb_msg_kick(iv);
		if (now & BIT_ULL(pidx))
			dev_info(&iv->pdev->dev,
				 "link with port %d up\n", port);
		else
			dev_info(&iv->pdev->dev,
				 "link with port %d down (%s)\n", port,
				 ivntb_down_why(iv, pidx));
	}
}

static void ivntb_link_work(struct work_struct *work)
{
	struct ivntb_dev *iv = container_of(to_delayed_work(work),
					    struct ivntb_dev, link_work);
	bool intact = ivntb_layout_check(iv);
	unsigned int period = READ_ONCE(heartbeat_ms);
	unsigned int limit = DIV_ROUND_UP(READ_ONCE(link_timeout_ms), period);
	bool tick = time_after_eq(jiffies, iv->link_tick);
	u64 mask = 0, old;
	int pidx;
	u32 hb;

	/* a period from now, however late this poll: one period, not many */
	if (tick)
		iv->link_tick = jiffies + msecs_to_jiffies(period);
	hb = le32_to_cpu(READ_ONCE(iv->slot->heartbeat));
	WRITE_ONCE(iv->slot->heartbeat, cpu_to_le32(hb + 1));
	for (pidx = 0; intact && pidx < ivntb_peer_count(iv); pidx++)
		if (ivntb_peer_poll(iv, pidx, limit, tick) &&
		    READ_ONCE(iv->enabled) && !READ_ONCE(iv->cable_out))
			mask |= BIT_ULL(pidx);

	spin_lock_irq(&iv->link_lock);
	old = iv->link_mask;
	iv->link_mask = mask;
	spin_unlock_irq(&iv->link_lock);
	if (old != mask) {
		ivntb_link_report(iv, old, mask);
		/* a link this port's client disabled: no event (link_set) */
		if (READ_ONCE(iv->enabled))
			ntb_link_event(&iv->ntb);
	}
	spin_lock_irq(&iv->link_lock);
	if (iv->link_running)
		queue_delayed_work(system_wq, &iv->link_work,
				   msecs_to_jiffies(period));
	spin_unlock_irq(&iv->link_lock);
}

void ivntb_link_start(struct ivntb_dev *iv)
{
	spin_lock_irq(&iv->link_lock);
	iv->link_running = true;
	iv->link_tick = jiffies;
	queue_delayed_work(system_wq, &iv->link_work, 0);
	spin_unlock_irq(&iv->link_lock);
}

void ivntb_link_stop(struct ivntb_dev *iv)
{
	spin_lock_irq(&iv->link_lock);
	/* neither the work nor a kick requeues it now */
	iv->link_running = false;
	spin_unlock_irq(&iv->link_lock);
	cancel_delayed_work_sync(&iv->link_work);
	spin_lock_irq(&iv->link_lock);
	iv->link_mask = 0;
	spin_unlock_irq(&iv->link_lock);
}

/* Poll now (a peer rang, or the local link changed); from any context. */
void ivntb_link_kick(struct ivntb_dev *iv)
{
	unsigned long flags;

	spin_lock_irqsave(&iv->link_lock, flags);
	if (iv->link_running)
		mod_delayed_work(system_wq, &iv->link_work, 0);
	spin_unlock_irqrestore(&iv->link_lock, flags);
}

u64 ivntb_link_is_up(struct ntb_dev *ntb, enum ntb_speed *speed,
		     enum ntb_width *width)
{
	struct ivntb_dev *iv = to_ivntb(ntb);
	unsigned long flags;
	u64 mask;

	spin_lock_irqsave(&iv->link_lock, flags);
	mask = iv->link_mask;
	spin_unlock_irqrestore(&iv->link_lock, flags);
	/* no PCIe link is trained between guests: nothing to report */
	if (speed)
		*speed = mask ? NTB_SPEED_AUTO : NTB_SPEED_NONE;
	if (width)
		*width = mask ? NTB_WIDTH_AUTO : NTB_WIDTH_NONE;
	return mask;
}

/*
 * A disable takes the link down before it returns, with no event after it:
 * the client asked, and clients tear down between ntb_link_disable() and
 * ntb_clear_ctx() (ntb_transport frees the work its link event schedules, so
 * an event in between runs freed code). A poll under way is waited for (it
 * may have read the link enabled); every poll after it reads the link
 * disabled and tells no one.
 */
/*
 * The enable word the peers poll: bit 0 while the client has the link
 * enabled and the cable is in, above it a count that moves at each enable
 * and each plug (@bump), then every peer told to look.
 */
static void ivntb_link_publish(struct ivntb_dev *iv, bool bump)
{
	unsigned long flags;
	int port;
	u32 word;

	spin_lock_irqsave(&iv->link_lock, flags);
	if (bump)
		iv->enable_count++;
	word = iv->enable_count << 1 |
	       (READ_ONCE(iv->enabled) && !READ_ONCE(iv->cable_out) ? 1 : 0);
	WRITE_ONCE(iv->slot->enabled, cpu_to_le32(word));
	spin_unlock_irqrestore(&iv->link_lock, flags);
	wmb();	/* the word before the peers are told to look */
	for (port = 0; port < iv->ports; port++)
		if (port != iv->port)
			ivntb_ring(iv, port, 0);
}

static void ivntb_link_set(struct ivntb_dev *iv, bool on)
{
	u64 old;

	/* each enable counts, above bit 0: see ivntb_peer_poll() */
	WRITE_ONCE(iv->enabled, on);
	ivntb_link_publish(iv, on);
	if (on || current_work() == &iv->link_work.work) {
		ivntb_link_kick(iv);
		return;
	}
	flush_delayed_work(&iv->link_work);
	/* that poll read it enabled: down now */
	spin_lock_irq(&iv->link_lock);
	old = iv->link_mask;
	iv->link_mask = 0;
	spin_unlock_irq(&iv->link_lock);
	if (old)
		ivntb_link_report(iv, old, 0);
}

int ivntb_link_enable(struct ntb_dev *ntb, enum ntb_speed speed,
		      enum ntb_width width)
{
	ivntb_link_set(to_ivntb(ntb), true);
	return 0;
}

int ivntb_link_disable(struct ntb_dev *ntb)
{
	might_sleep();	/* it waits for a poll under way */
	ivntb_link_set(to_ivntb(ntb), false);
	return 0;
}

/*
 * The emulated cable (debugfs "cable"): 0 pulls it, 1 plugs it back in.
 * Pulled, this function's link is down with every peer, as a link that
 * lost training while the device stays: bit 0 of the enable word drops,
 * so each peer takes the link down at its next poll, and this side counts
 * no peer up. Plugged back, the enable count moves, which every peer's poll
 * reads as a bounce, so the link comes up at a new generation, as after a
 * retrain. The client's own enable is kept: a link it disabled stays down.
 * An emulated fault for tests; NTB hardware has no such switch.
 */
static int ivntb_cable_get(void *data, u64 *val)
{
	struct ivntb_dev *iv = data;

	*val = !READ_ONCE(iv->cable_out);
	return 0;
}

/* serialises the writers of every function's cable */
static DEFINE_MUTEX(ivntb_cable_lock);

static int ivntb_cable_set(void *data, u64 val)
{
	struct ivntb_dev *iv = data;

	if (val > 1)
		return -EINVAL;
	mutex_lock(&ivntb_cable_lock);
	if (!val != READ_ONCE(iv->cable_out)) {
		WRITE_ONCE(iv->cable_out, !val);
		ivntb_link_publish(iv, val);
		dev_info(&iv->pdev->dev,
			 "cable %s (debugfs, an emulated fault)\n",
			 val ? "plugged back in" : "pulled");
		ivntb_link_kick(iv);
	}
	mutex_unlock(&ivntb_cable_lock);
	return 0;
}
DEFINE_DEBUGFS_ATTRIBUTE(ivntb_cable_fops, ivntb_cable_get, ivntb_cable_set,
			 "%llu\n");

void ivntb_link_debugfs(struct ivntb_dev *iv)
{
	debugfs_create_file_unsafe("cable", 0600, iv->dbg, iv,
				   &ivntb_cable_fops);
}
