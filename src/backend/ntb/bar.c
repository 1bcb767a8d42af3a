/* SPDX-License-Identifier: MIT */
/*
 * Remote doorbells without a relay, where the hardware driver allows it: a
 * lender asks smartio_ntb to translate one inbound window of each peer to
 * its device's BAR0 (SIO_NTB_IOC_MW_XLAT: a bus address of this host,
 * CAP_SYS_RAWIO), so that a borrower of another kernel stores to the BAR
 * through its outbound window: one posted write per doorbell, as on NTB
 * hardware. A window translates from an address aligned as the hardware
 * says (mw_get_align's addr_align): BAR0 lies at an offset in it.
 *
 * The translations belong to the lender's own open file, so that they go
 * with the lender (its death releases them); peers whose link comes up
 * later get theirs from the heartbeat thread. Where the driver refuses
 * (ntb_hw_ivshmem: -EOPNOTSUPP, it cannot reach another function's BAR; a
 * window too small or too coarse; no window free), the relay serves the
 * borrowers and the refusal is what `smartio status` reports for them.
 *
 * ntb_hw_ivshmem with bar_fwd=1 accepts the translation and emulates it (a
 * kernel thread of the lender's forwards each stored word to the BAR):
 * smartio_ntb says so (SIO_NTB_F_BAR_XLAT_EMULATED), and every report of
 * the path says "emulated forwarding", never hardware's posted write.
 */
#include <stdlib.h>
#include <string.h>

#include "ntb.h"

struct ntb_bar {			/* a BAR this process exports through windows */
	struct ntb_bar *next;
	struct wf_dev *d;
	uint64_t base, len;		/* the translation: aligned down, BAR0 at d->db_off */
	uint32_t widx;
};

/* An inbound window (1 .. mws - 1; 0 is the node's memory) no device of this node uses. */
static int free_window(struct wf_fabric *s, struct wf_dev *d)
{
	for (uint32_t w = 1; w < src_of(s)->info.mws_per_peer; w++) {
		bool used = false;

		for (int k = 0; k < SIO_MAX_DEVS; k++) {
			const struct wf_dev *o = &s->hdr->devs[k];
			const struct reg_dev *dv = reg_dev_at(s->f->reg, k);

			used |= o != d && o->gen && o->db_window == (int32_t)w && dv && dv->used &&
				dv->lender == src_of(s)->node.port;
		}
		if (!used)
			return (int)w;
	}
	return -ENOSPC;
}

/* Translate window @b of peer @p to the BAR: 0, or -errno. */
static int xlat_peer(struct ntbsrc *n, struct ntb_bar *b, uint32_t p, bool on)
{
	struct sio_ntb_xlat x = { .pidx = p, .widx = b->widx, .addr = b->base,
				  .size = on ? b->len : 0 };

	return ntbdev_ioctl(n->xdev, SIO_NTB_IOC_MW_XLAT, &x);
}

/* Each peer whose link is up and has no window yet gets one; the first error. */
static int xlat_peers(struct ntbsrc *n, struct ntb_bar *b)
{
	struct sio_ntb_info i;
	int ret = 0;

	if (ntbdev_ioctl(n->dev, SIO_NTB_IOC_INFO, &i))
		return -EIO;
	for (uint32_t p = 0; p < i.peers && !ret; p++) {
		struct sio_ntb_peer pr = { .pidx = p };

		if (!(i.link >> p & 1) || ntbdev_ioctl(n->dev, SIO_NTB_IOC_PEER, &pr) ||
		    pr.port < 0 || pr.port >= 64 || (b->d->db_ports >> pr.port & 1))
			continue;
		if (!(ret = xlat_peer(n, b, p, true)))
			b->d->db_ports |= 1ull << pr.port;
	}
	return ret;
}

/* The translation: aligned as window @w wants it, BAR0 inside; -errno when it cannot be. */
static int bar_span(struct ntbsrc *n, uint32_t w, uint64_t bus, uint64_t size, struct ntb_bar *b,
		    uint64_t *off)
{
	struct sio_ntb_mw mw = { .widx = w };
	int ret = -ENOTCONN;

	for (uint32_t p = 0; p < n->info.peers && ret; p++)
		if (n->info.link >> p & 1) {
			mw.pidx = p;
			ret = ntbdev_ioctl(n->dev, SIO_NTB_IOC_MW, &mw);
		}
	if (ret)
		return ret;
	b->base = bus & ~(mw.addr_align - 1);
	*off = bus - b->base;
	b->len = (*off + size + mw.size_align - 1) & ~(mw.size_align - 1);
	return b->len > mw.size_max ? -E2BIG : 0;
}

int sio__ntb_bar_export(struct wf_fabric *s, struct wf_dev *d, uint64_t bus, uint64_t size)
{
	struct ntbsrc *n = src_of(s);
	struct ntb_bar *b;
	uint64_t off;
	int w, ret;

	if ((w = free_window(s, d)) < 0)
		return w;
	if (!n->xdev && (ret = n->dev->fake ? 0 : sio__ntbdev_open(n->dev->spec, -1, &n->xdev)))
		return -ENODEV;
	if (!n->xdev)
		n->xdev = n->dev;	/* the fake: it refuses anyway */
	if (ntbdev_ioctl(n->dev, SIO_NTB_IOC_INFO, &n->info) || !(b = calloc(1, sizeof(*b))))
		return -ENOMEM;
	b->d = d;
	b->widx = (uint32_t)w;
	d->db_ports = 0;
	if ((ret = bar_span(n, b->widx, bus, size, b, &off)) || (ret = xlat_peers(n, b))) {
		for (uint32_t p = 0; p < n->info.peers; p++)
			xlat_peer(n, b, p, false);
		d->db_ports = 0;
		free(b);
		return ret;
	}
	d->db_off = off;
	d->db_emulated = !!(n->info.flags & SIO_NTB_F_BAR_XLAT_EMULATED);
	atomic_thread_fence(memory_order_release);
	d->db_window = w;
	pthread_mutex_lock(&n->mu);
	b->next = n->bars;
	n->bars = b;
	pthread_mutex_unlock(&n->mu);
	return 0;
}

void sio__ntb_bar_unexport(struct wf_fabric *s, struct wf_dev *d)
{
	struct ntbsrc *n = src_of(s);

	pthread_mutex_lock(&n->mu);
	for (struct ntb_bar **pp = &n->bars; *pp; pp = &(*pp)->next)
		if ((*pp)->d == d) {
			struct ntb_bar *b = *pp;
			*pp = b->next;
			d->db_window = -1;
			d->db_ports = 0;
			d->db_emulated = 0;
			for (uint32_t p = 0; p < n->info.peers; p++)
				xlat_peer(n, b, p, false);
			free(b);
			break;
		}
	pthread_mutex_unlock(&n->mu);
}

void sio__ntb_bar_refresh(struct ntbsrc *n)
{
	for (struct ntb_bar *b = n->bars; b; b = b->next)
		xlat_peers(n, b);
}

void sio__ntb_bar_drop(struct ntbsrc *n)
{
	while (n->bars) {
		struct ntb_bar *b = n->bars;
		n->bars = b->next;
		free(b);	/* the file's release clears the translations */
	}
	if (n->xdev && n->xdev != n->dev)
		sio__ntbdev_close(n->xdev);
	n->xdev = NULL;
}

int sio__ntb_bar_map(struct wf_fabric *s, const struct wf_dev *d, int node, uint64_t size, void **va)
{
	struct ntbsrc *n = src_of(s);
	uint64_t off, len;
	int ret;

	if ((ret = sio__ntb_window_of(n, node, (uint32_t)d->db_window, &off, &len)))
		return ret;
	if (d->db_off > len || size > len - d->db_off)
		return sio__err(EINVAL, "ntb: the window onto the device's BAR0 reaches %llu bytes; BAR0 is %llu at %llu in it",
				(unsigned long long)len, (unsigned long long)size,
				(unsigned long long)d->db_off);
	return sio__ntb_map_at(n, node, off + d->db_off, size, false, va);
}
