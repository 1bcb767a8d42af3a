/* SPDX-License-Identifier: MIT */
/*
 * The node service of an ntb fabric (sio_ntb_serve(), `smartio ntb serve`):
 * one process per kernel holds its NTB, as NTB clients do, and reacts to
 * its links.
 *
 * - It allocates the node's memory (a buffer of inbound window 0 of the
 *   first peer whose link comes up, as large as the window) and translates
 *   window 0 of every other peer into it as their links come up; it maps
 *   each peer's outbound window 0, so that they are held through its file.
 *   Where the hardware translates outbound only (IDT), it says where the
 *   memory is instead (boot.c's words), and translates its outbound window
 *   0 of each peer to where that peer's words say the peer's memory is.
 * - It answers the fabric's processes of this kernel (a unix socket): its
 *   open NTB file (SCM_RIGHTS) and where the node's memory is; and creates
 *   the state of a fabric at the start of the node's memory when asked to.
 * - Once a created fabric's registry is whole it publishes the bootstrap in
 *   its scratchpads (or on its board, sent by message: board.c), and takes
 *   it back when the fabric is destroyed.
 * - It attaches the fabric of its NTB (whichever port hosts it) as this
 *   node, no process of it, records the node's memory as the node's pool,
 *   and turns the fabric's doorbell into wakes of this kernel's waiters.
 * - Where the node can host, it is the standby home when there is none, and
 *   takes over when the home's link goes down; the home's drops a standby
 *   whose link is down (home.c). A home that finds another hosting the same
 *   fabric (a partition healed) yields by the two-homes rule, or says the
 *   other will.
 */
#include <fcntl.h>
#include <poll.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>

#include <smartio/ntbserve.h>
#include "ntb.h"
#include "env.h"
#include "parse.h"

struct ntb_service {
	struct ntbdev *dev;
	struct sio_ntb_info info;
	struct ntb_node node;
	bool have_mem;
	void *mem;			/* the node's memory, mapped here */
	uint64_t xlat;			/* peers (by index) whose window 0 is translated into it */
	uint64_t xlat_failed;		/* those whose translation failed (said once) */
	uint64_t unreached;		/* their ports: the pool says so to the fabric */
	uint64_t unreached_spads;	/* ... and the scratchpads, to a home's peers */
	bool outbound;			/* the hardware translates outbound only */
	uint64_t oxlat[SIO_NTB_MAX_PEERS];	/* outbound: the peer's memory window 0 reaches (0: none) */
	struct ntb_post post;		/* the board's messages (board.c) */
	uint32_t side_word;		/* two ports, no port numbers: this side's word (boot.c) */
	void *out[SIO_NTB_MAX_PEERS];	/* each peer's outbound window 0, held */
	uint64_t out_len[SIO_NTB_MAX_PEERS], out_gen[SIO_NTB_MAX_PEERS];
	uint64_t link_gen;
	int lsk, efd, bit;
	char path[PATH_MAX];
	uint32_t host_gen;		/* this node hosts the state of this generation */
	bool published;
	char host_name[SIO_NAME_MAX];
	struct sio_fabric *f;		/* the fabric this node has joined */
	struct ntb_boot joined;
	char said[512];			/* the last complaint, said once */
	char lost[512];			/* the last word on a home gone, said once */
	FILE *log;
	struct ntb_ownwins xw;		/* segments' own windows (ownwin.c) */
	bool xw_said;
	bool standby_ok;		/* $SMARTIO_NTB_STANDBY: this node may be the standby home */
	uint64_t takeover_ns;		/* $SMARTIO_NTB_TAKEOVER_MS */
	uint64_t home_down_ns;		/* when the home's link was first seen down (0: up) */
	uint64_t held_ns;		/* when it last held back from a take-over (0: never) */
	struct ntb_adapters ad;		/* this node's NTB per adapter (adapters.c) */
	bool ad_said;			/* told how they match the fabric's adapters */
	int through;			/* the state read through a further NTB: 1 found, -1 not, 0 not looked */
};

static struct ntb_service *this_service;

struct ntb_service *sio__ntb_service_here(void)
{
	return this_service;
}

struct ntbdev *sio__ntb_service_dev(struct ntb_service *sv, struct ntb_node *node,
				    struct ntbdev **more)
{
	if (!sv->have_mem)
		return NULL;
	*node = sv->node;
	for (int a = 1; more && a < SIO_MAX_ADAPTERS; a++)
		more[a - 1] = a < sv->ad.n ? sv->ad.dev[a] : NULL;
	return sv->dev;
}

/*
 * Why this node's processes cannot reach the state and no take-over will
 * come (the home is alive through another NTB), or "": what the service
 * logged, for a process waiting in the hold (ntb.c). Held back within the
 * last three ticks, since the check runs at every tick while it holds.
 */
void sio__ntb_service_note(const struct ntb_service *sv, char *msg, size_t len)
{
	uint64_t now = sio__now_ns();

	if (sv->held_ns && now - sv->held_ns < 3ull * NTB_TICK_MS * 1000000)
		snprintf(msg, len, "%s", sv->lost);
	else if (len)
		msg[0] = 0;
}

static void say(struct ntb_service *sv, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void say(struct ntb_service *sv, const char *fmt, ...)
{
	va_list ap;

	if (!sv->log)
		return;
	va_start(ap, fmt);
	fputs("ntb: ", sv->log);
	vfprintf(sv->log, fmt, ap);
	va_end(ap);
	fflush(sv->log);
}

/* Say a complaint once, until another one comes. */
static void complain(struct ntb_service *sv, const char *what)
{
	if (strcmp(sv->said, what)) {
		snprintf(sv->said, sizeof(sv->said), "%s", what);
		say(sv, "%s\n", what);
	}
}

/* The node's memory: a buffer of window 0 of the first peer whose link is up. */
static int mem_alloc(struct ntb_service *sv)
{
	for (uint32_t p = 0; p < sv->info.peers; p++) {
		struct sio_ntb_buf b = { .pidx = p, .widx = NTB_MEM_WIDX,
					 .flags = sv->outbound ? SIO_NTB_BUF_PEER_XLAT : 0 };
		void *va;
		int ret;

		if (!(sv->info.link >> p & 1))
			continue;
		if ((ret = ntbdev_ioctl(sv->dev, SIO_NTB_IOC_MW_ALLOC, &b)))
			return sio__err(-ret, "ntb: %s: cannot allocate the node's memory (inbound window %d of peer %u): %s",
					sv->dev->what, NTB_MEM_WIDX, p, strerror(-ret));
		if ((ret = ntbdev_mmap(sv->dev, NULL, b.mmap_offset, b.size, &va))) {
			struct sio_ntb_buf f = b;
			ntbdev_ioctl(sv->dev, SIO_NTB_IOC_MW_FREE, &f);
			return sio__err(-ret, "ntb: cannot map the node's memory: %s", strerror(-ret));
		}
		if (sv->outbound && (ret = sio__ntb_mem_publish(sv->dev, &sv->info, &sv->node.board,
							     b.dma_addr, b.size))) {
			struct sio_ntb_buf f = b;
			munmap(va, b.size);
			ntbdev_ioctl(sv->dev, SIO_NTB_IOC_MW_FREE, &f);
			return ret;
		}
		sv->mem = va;
		sv->node.mem_pidx = p;
		sv->node.mem_widx = NTB_MEM_WIDX;
		sv->node.mem_size = b.size;
		sv->node.mem_dma = b.dma_addr;
		sv->xlat |= 1ull << p;
		sv->have_mem = true;
		say(sv, "port %d's memory: %llu KiB at bus address 0x%llx, %s%s\n",
		    sv->node.port, (unsigned long long)(b.size >> 10), (unsigned long long)b.dma_addr,
		    sv->outbound ? "where the peers translate their outbound windows (told by message)" :
		    "exported through inbound window 0 of every peer",
		    b.size < WF_STATE_END + NTB_MIN_POOL ?
		    " (too small to host a fabric's state: this node joins one)" : "");
		return 0;
	}
	return 0;	/* no link up yet */
}

/*
 * Outbound translation: this node's window @widx to peer @p, translated to
 * where the peer's words say its memory is; 0 once it is (-ENOENT while
 * the peer has not said).
 */
static int peer_translate(struct ntb_service *sv, uint32_t p, int port, uint32_t widx)
{
	struct sio_ntb_peer_mw pm = { .widx = widx };
	struct sio_ntb_peer_xlat x = { .pidx = p, .widx = widx };
	uint64_t addr, size;
	char msg[256];
	int ret;

	if ((ret = sio__ntb_mem_of_peer(sv->dev, &sv->info, &sv->node.board, p, &addr, &size)))
		return ret;
	if (sv->oxlat[p] == addr)
		return 0;
	if (sv->out[p]) {	/* a new buffer (the peer came back): the old mapping goes */
		munmap(sv->out[p], sv->out_len[p]);
		sv->out[p] = NULL;
	}
	/* a window smaller than the peer's memory reaches its start */
	if (!ntbdev_ioctl(sv->dev, SIO_NTB_IOC_PEER_MW, &pm) && pm.size && pm.size < size)
		size = pm.size;
	x.addr = addr;
	x.size = size;
	if ((ret = ntbdev_ioctl(sv->dev, SIO_NTB_IOC_PEER_MW_XLAT, &x))) {
		snprintf(msg, sizeof(msg), "cannot translate outbound window %u to port %d's memory (%llu KiB at bus address 0x%llx): %s%s",
			 widx, port, (unsigned long long)(size >> 10), (unsigned long long)addr,
			 strerror(-ret), ret == -EBUSY ? " (mapped by a process of this kernel: it maps again once the peer's link is back)" : "");
		complain(sv, msg);
		return ret;
	}
	sv->oxlat[p] = addr;
	sv->node.reached |= 1ull << port;
	say(sv, "outbound window %u translated to port %d's memory: %llu KiB at bus address 0x%llx\n",
	    widx, port, (unsigned long long)(size >> 10), (unsigned long long)addr);
	return 0;
}

/* Export the memory to peer @p and hold its window to us, while its link is up. */
static void peer_up(struct ntb_service *sv, uint32_t p)
{
	struct sio_ntb_xlat x = { .pidx = p, .widx = NTB_MEM_WIDX, .addr = sv->node.mem_dma,
				  .size = sv->node.mem_size };
	struct sio_ntb_peer_mw pm = { .widx = p * sv->info.mws_per_peer + NTB_MEM_WIDX };
	struct sio_ntb_peer pr = { .pidx = p };
	char msg[256];
	bool again;
	void *va;
	int ret;

	if (ntbdev_ioctl(sv->dev, SIO_NTB_IOC_PEER, &pr) || pr.port < 0 || pr.port >= WF_MAX_POOLS)
		return;
	if (sv->outbound) {
		if (peer_translate(sv, p, pr.port, pm.widx))
			return;	/* its memory's address has not come yet */
	} else if (!(sv->xlat >> p & 1)) {
		if (!(ret = ntbdev_ioctl(sv->dev, SIO_NTB_IOC_MW_XLAT, &x))) {
			sv->xlat |= 1ull << p;
			sv->unreached &= ~(1ull << pr.port);
		} else if (!(sv->xlat_failed >> p & 1)) {
			sv->xlat_failed |= 1ull << p;
			sv->unreached |= 1ull << pr.port;
			snprintf(msg, sizeof(msg), "cannot export this node's memory to peer %u, port %d (its window %d): %s%s",
				 p, pr.port, NTB_MEM_WIDX, strerror(-ret), ret == -EOPNOTSUPP ?
				 " (the hardware driver translates no window into another's buffer)" : "");
			complain(sv, msg);
		}
	}
	if (ntbdev_ioctl(sv->dev, SIO_NTB_IOC_PEER_MW, &pm))
		return;
	if (sv->out[p] && sv->out_gen[p] == pr.link_gen)
		return;
	if (sv->out[p] && sv->out_len[p] != pm.size) {
		munmap(sv->out[p], sv->out_len[p]);
		sv->out[p] = NULL;
	}
	again = sv->out[p] && !sv->out_gen[p];	/* home_name() asked: not a link that came up */
	va = sv->out[p];
	ret = va ? sio__ntbdev_remap(sv->dev, va, pm.mmap_offset, pm.size) :
		   ntbdev_mmap(sv->dev, NULL, pm.mmap_offset, pm.size, &va);
	if (!ret) {
		sv->out[p] = va;
		sv->out_len[p] = pm.size;
		sv->out_gen[p] = pr.link_gen;
		if (!again)
			say(sv, "link with port %d up: its memory (%llu KiB) mapped\n", pr.port,
			    (unsigned long long)(pm.size >> 10));
	}
}

/* Say once how other kernels reach this node's segments, once the driver said what it allows. */
static void mode_say(struct ntb_service *sv, uint32_t p)
{
	sio__ntb_ownwin_probe(sv->dev, &sv->info, p, &sv->xw);
	if (sv->xw_said || !sv->xw.align)
		return;
	sv->xw_said = true;
	sv->node.seg_windows = (int32_t)sv->xw.per_peer;
	sv->node.xlat_align = (uint32_t)(sv->xw.align > (1ull << 40) ? 0 : sv->xw.align >> 10);
	if (sv->xw.per_peer && sv->outbound)
		say(sv, "segments: own windows: a kernel that connects to a segment of another translates an outbound window of its own (1 to %u of each peer's) to the segment's pages alone; the pool window %d when none is free\n",
		    sv->xw.per_peer, NTB_MEM_WIDX);
	else if (sv->xw.per_peer)
		say(sv, "segments: own windows: a connection from another kernel gets an inbound window of its own (1 to %u of its peer's), translated to the segment's pages alone; the pool window %d when none is free\n",
		    sv->xw.per_peer, NTB_MEM_WIDX);
	else if (sv->info.mws_per_peer < 2)
		say(sv, "segments: pool window: other kernels reach them through window %d, all of this node's memory (one window per peer: none left for segments)\n",
		    NTB_MEM_WIDX);
	else
		say(sv, "segments: pool window: other kernels reach them through window %d, all of this node's memory (%s translates at %llu KiB alignment, whole regions: no window per segment)\n",
		    NTB_MEM_WIDX, sv->info.driver, (unsigned long long)(sv->xw.align >> 10));
}

/*
 * A two-port NTB whose driver gives no port numbers (both sides say 0):
 * the sides' ids, 0 and 1, from the words the two node services show. A
 * side that has decided says so, and the other takes the other id; two
 * that have not compare the numbers they drew. True once decided.
 */
static bool sides_agree(struct ntb_service *sv)
{
	uint32_t peer = sio__ntb_side_of_peer(sv->dev, &sv->info, &sv->node.board);
	uint32_t mine = sv->side_word & 0x1fffffff, side;

	if (sv->dev->sided)
		return true;
	if (!(sv->info.link & 1) || !(peer >> 31))
		return false;	/* the peer's node service has not said yet */
	if (peer >> 30 & 1)
		side = !(peer >> 29 & 1);
	else if ((peer & 0x1fffffff) != mine)
		side = mine > (peer & 0x1fffffff);
	else
		return false;	/* the same number drawn: the peer's next draw differs */
	sv->side_word |= 1u << 30 | side << 29;
	if (sio__ntb_side_publish(sv->dev, &sv->info, &sv->node.board, sv->side_word)) {
		complain(sv, sio_errmsg());
		return false;
	}
	sv->dev->sided = side + 1;
	sv->node.sided = side + 1;
	sv->node.port = (int)side;
	sio__ntbdev_info(sv->dev, &sv->info);
	say(sv, "%s gives no port numbers (both sides say port 0): this side is node %u, the other node %u, as the two node services agreed\n",
	    sv->info.driver, side, 1 - side);
	return true;
}

/* Follow the links: the memory, once one is up; each peer that is up (what failed, again). */
static void links(struct ntb_service *sv)
{
	struct sio_ntb_info i;

	if (ntbdev_ioctl(sv->dev, SIO_NTB_IOC_INFO, &i))
		return;
	sv->info = i;
	sio__ntb_board_post(sv->dev, &sv->info, &sv->node.board, &sv->post);
	if (sv->side_word && !sides_agree(sv))
		return;
	if (!sv->have_mem && mem_alloc(sv)) {
		complain(sv, sio_errmsg());
		return;
	}
	if (!sv->have_mem)
		return;
	sv->link_gen = i.link_gen;
	for (uint32_t p = 0; p < i.peers; p++)
		if (i.link >> p & 1) {
			peer_up(sv, p);
			mode_say(sv, p);
		}
	if (sv->unreached != sv->unreached_spads &&
	    !sio__ntb_unreached_publish(sv->dev, &sv->info, &sv->node.board, sv->unreached))
		sv->unreached_spads = sv->unreached;
}

/*
 * Two homes of one fabric (a partition healed, a home back after its
 * standby took over): each hosting service reads the start of every peer's
 * memory, and the one the rule names yields (home.c). True: it yielded.
 */
static bool rivals(struct ntb_service *sv)
{
	char msg[512];

	for (uint32_t p = 0; p < sv->info.peers; p++) {
		struct sio_ntb_peer pr = { .pidx = p };
		int r;

		if (!sv->out[p] || !(sv->info.link >> p & 1) || ntbdev_ioctl(sv->dev, SIO_NTB_IOC_PEER, &pr) ||
		    !pr.link_up || sv->out_gen[p] != pr.link_gen)
			continue;	/* a mapping of before the link moved reads all ones, or a stale page */
		/*
		 * A home publishes its bootstrap. A state without one is a
		 * former life's: a kernel that booted again on the old
		 * home's port, whose memory (ntb_hw_ivshmem's region, or a
		 * window's old translation) still reads as it was until its
		 * service gets memory of its own.
		 */
		if (!sio__ntb_boot_of_peer(sv->dev, &sv->info, &sv->node.board, p, pr.port,
					   (uint32_t)((const struct wf_hdr *)sv->mem)->create_gen))
			continue;
		r = sio__ntb_home_rule(sv->mem, sv->node.port, sv->out[p], pr.port, msg, sizeof(msg));
		if (r < 0)
			continue;
		if (!r) {
			complain(sv, msg);
			continue;
		}
		say(sv, "%s, %.3f s (CLOCK_MONOTONIC)\n", msg, (double)sio__now_ns() / 1e9);
		sio__ntb_boot_publish(sv->dev, &sv->info, &sv->node.board, NULL);
		sio__ntb_home_yield(sv->mem, pr.port);
		sv->host_gen = 0;
		sv->published = false;
		return true;
	}
	return false;
}

/* What this node hosts: published once whole, taken back once destroyed. */
static void hosting(struct ntb_service *sv)
{
	const struct wf_hdr *h = sv->mem;
	const struct sio_registry *r = (const void *)((char *)sv->mem + WF_REG_OFF);
	struct ntb_boot b;

	if (!sv->host_gen)
		return;
	if (__atomic_load_n(&h->magic, __ATOMIC_ACQUIRE) != WF_MAGIC ||
	    (h->create_gen && h->create_gen != sv->host_gen)) {
		say(sv, "fabric '%s' was destroyed: its bootstrap taken back\n", sv->host_name);
		sio__ntb_boot_publish(sv->dev, &sv->info, &sv->node.board, NULL);
		sv->host_gen = 0;
		sv->published = false;
		return;
	}
	if (sv->published && rivals(sv))
		return;
	if (sv->published || __atomic_load_n(&r->magic, __ATOMIC_ACQUIRE) != SIO_REG_MAGIC)
		return;
	b = (struct ntb_boot){ .port = sv->node.port, .name_hash = sio__ntb_name_hash(sv->host_name),
			       .gen = sv->host_gen, .state_size = WF_STATE_END,
			       .widx = sv->node.mem_widx };
	if (sio__ntb_boot_publish(sv->dev, &sv->info, &sv->node.board, &b)) {
		complain(sv, sio_errmsg());
		return;
	}
	sv->published = true;
	say(sv, "fabric '%s' (generation %u) is hosted here: bootstrap published\n", sv->host_name,
	    sv->host_gen);
}

/* The ports whose window 0 this node translated onto its memory (@xlat is by peer index). */
static uint64_t xlat_ports(struct ntb_service *sv)
{
	uint64_t m = 0;

	for (uint32_t p = 0; p < sv->info.peers && p < 64; p++) {
		struct sio_ntb_peer pr = { .pidx = p };

		if ((sv->xlat >> p & 1) && !ntbdev_ioctl(sv->dev, SIO_NTB_IOC_PEER, &pr) &&
		    pr.port >= 0 && pr.port < 64)
			m |= 1ull << pr.port;
	}
	return m;
}

/* Record this node's memory as its pool in the fabric joined. */
static int pool_register(struct ntb_service *sv)
{
	struct wf_fabric *s = wf_of(sv->f);
	uint64_t off = sio__ntb_pool_off(&sv->node);
	struct wf_pool want = { .off = off, .size = sv->node.mem_size - off, .epoch = sv->node.epoch,
				.unreached = sv->unreached, .seg_windows = sv->node.seg_windows,
				.xlat_align = sv->node.xlat_align,
				.reach1 = sv->ad.n > 1 ? sv->ad.reach[1] : 0,
				.reach0 = sv->outbound ? 0 : xlat_ports(sv) };
	int ret;

	if (!memcmp(&s->hdr->pools[sv->node.port], &want, sizeof(want)))
		return 0;
	if ((ret = sio__lock(sv->f)))
		return ret;
	s->hdr->pools[sv->node.port] = want;
	sio__unlock(sv->f);
	say(sv, "node %d's pool: %llu KiB for segments%s%s\n", sv->node.port,
	    (unsigned long long)(want.size >> 10),
	    want.unreached ? ", out of reach of the ports this node could not export to" : "",
	    want.reach1 ? ", reached through adapter 1 too" : "");
	return 0;
}

static void leave(struct ntb_service *sv, bool gone)
{
	struct wf_fabric *s;

	if (!sv->f)
		return;
	s = wf_of(sv->f);
	if (!gone && !sio__lock(sv->f)) {	/* the memory goes with this service */
		memset(&s->hdr->pools[sv->node.port], 0, sizeof(struct wf_pool));
		if (s->hdr->home.standby == sv->node.port)
			s->hdr->home.standby = -1;
		sio__unlock(sv->f);
	}
	sio__wf_wake_receive(s, false);
	sio__ntb_ownwin_reset(sv->dev, &sv->xw);	/* their requests are the fabric's, gone with it */
	sio__fabric_detach(sv->f);
	sv->f = NULL;
	sv->ad_said = false;
}

/* The fabric's name, from the home's header as this node maps it. */
static bool home_name(struct ntb_service *sv, const struct ntb_boot *b, char *name)
{
	const struct wf_hdr *h = sv->mem;
	int pidx = b->port == sv->node.port ? -1 : sio__ntbdev_pidx(sv->dev, b->port);

	if (pidx >= 0)
		h = sv->out[pidx];
	if (!h || h->magic != WF_MAGIC || !memchr(h->name, 0, SIO_NAME_MAX)) {
		/*
		 * mapped before the home translated its window for this port, the
		 * mapping reaches the window's default (ntb_hw_ivshmem: its own
		 * region): map it again at the next tick
		 */
		if (pidx >= 0)
			sv->out_gen[pidx] = 0;
		return false;
	}
	memcpy(name, h->name, SIO_NAME_MAX);
	return sio__ntb_name_hash(name) == b->name_hash;
}

/* Is port @port's link up? */
static bool link_up(struct ntb_service *sv, int port)
{
	int pidx = sio__ntbdev_pidx(sv->dev, port);
	struct sio_ntb_peer pr = { .pidx = (uint32_t)pidx };

	return port == sv->node.port ||
	       (pidx >= 0 && !ntbdev_ioctl(sv->dev, SIO_NTB_IOC_PEER, &pr) && pr.link_up);
}

/*
 * The standby home (home.c): take over from a home that is gone, be the
 * standby where there is none, or, hosting, drop a standby that is gone.
 * True: this node took over.
 */
static bool standby(struct ntb_service *sv)
{
	char msg[256];
	int r = 0;

	if (sv->joined.port == sv->node.port) {
		if ((r = sio__ntb_standby_drop(sv->f, sv->dev)) >= 0)
			say(sv, "the standby home, port %d, is gone (its link down): another node may take its place\n", r);
		return false;
	}
	msg[0] = 0;
	if (sio__ntb_home_take(sv->f, sv->dev, sv->mem, sv->node.port, msg, sizeof(msg))) {
		const struct wf_hdr *h = sv->mem;

		say(sv, "%s, %.3f s (CLOCK_MONOTONIC)\n", msg, (double)sio__now_ns() / 1e9);
		sv->host_gen = (uint32_t)h->create_gen;
		snprintf(sv->host_name, sizeof(sv->host_name), "%s", sv->f->name);
		sv->published = false;
		hosting(sv);
		return true;
	}
	if (msg[0])
		complain(sv, msg);
	if (sv->standby_ok && sio__ntb_pool_off(&sv->node) && (r = sio__ntb_standby_claim(sv->f, sv->node.port)) > 0)
		say(sv, "the standby home of fabric '%s': a copy of its state kept in this node's memory, to take over if port %d goes, %.3f s (CLOCK_MONOTONIC)\n",
		    sv->f->name, sv->joined.port, (double)sio__now_ns() / 1e9);
	else if (r < 0)
		complain(sv, sio_errmsg());
	return false;
}

/*
 * The node's memory through its further NTBs (adapters.c): exported there
 * too where the hardware translates inbound, as soon as it is allocated,
 * fabric or not; what each reaches of its peers is said as it changes.
 */
static void exports(struct ntb_service *sv)
{
	char msg[512];

	for (int i = 0; i < SIO_MAX_ADAPTERS * SIO_NTB_MAX_PEERS && !sv->outbound &&
	     sio__ntb_adapters_export(&sv->ad, sv->node.port, sv->node.mem_dma, sv->node.mem_size,
				      msg, sizeof(msg)); i++)
		say(sv, "%s\n", msg);
}

/*
 * This node's adapters in the fabric joined, from its NTBs' links
 * (adapters.c): written while the state is in reach (hosted here, or the
 * home's link up); else the home's service says what it sees of its own.
 */
static void adapters(struct ntb_service *sv)
{
	int have = sv->ad.n, want = sv->f->topo.adapters;
	char msg[256];

	if (!sv->ad_said && have != want)
		say(sv, have < want ?
		    "fabric '%s' has %d adapters per node, this node %d NTB: adapters %d and up are adapter 0's NTB again, no path of their own (smartio ntb serve --dev DEV0 --dev DEV1)\n" :
		    "fabric '%s' has %d adapter(s) per node, this node %d NTBs: the NTBs from %d on are not used (smartio create --adapters N)\n",
		    sv->f->name, want, have, have < want ? have : want);
	sv->ad_said = true;
	/* the state out of reach: through NTB 0, and through no further NTB */
	if (sv->joined.port != sv->node.port && !link_up(sv, sv->joined.port) &&
	    !sio__ntb_state_adapter(sv->f))
		return;
	for (int i = 0; i < SIO_MAX_ADAPTERS &&
	     sio__ntb_adapters_follow(&sv->ad, sv->f, sv->node.port, msg, sizeof(msg)); i++)
		say(sv, "%s, %.3f s (CLOCK_MONOTONIC)\n", msg, (double)sio__now_ns() / 1e9);
}

/*
 * The home's link has been down for the hold and this node did not take
 * over: who can, as this node sees it (home.c), said each time it changes.
 * The standby itself says why it cannot, if it cannot (standby()).
 */
static void home_lost(struct ntb_service *sv)
{
	const struct wf_hdr *c = sv->mem;	/* the standby's copy, if this node is it */

	/* of this fabric: a copy of one before may be left in this memory */
	if (c && c->magic == WF_MAGIC && c->home.standby == sv->node.port &&
	    c->create_gen == wf_of(sv->f)->create_gen)
		return;
	if (!sio__ntb_home_check(sv->f))
		return;
	if (strcmp(sv->lost, sio_errmsg())) {
		snprintf(sv->lost, sizeof(sv->lost), "%s", sio_errmsg());
		say(sv, "%s, %.3f s (CLOCK_MONOTONIC)\n", sv->lost, (double)sio__now_ns() / 1e9);
	}
}

/*
 * The home's link through NTB 0 is down, but a further NTB of this node
 * has its link with the home up: the home is alive, and only this node's
 * way to its state failed. A take-over now would make two homes, so this
 * node holds back, and says why once.
 */
static bool home_reached_elsewhere(struct ntb_service *sv)
{
	int a = sio__ntb_adapters_reach(&sv->ad, sv->joined.port);
	char msg[sizeof(sv->lost)];

	if (a < 1)
		return false;
	snprintf(msg, sizeof(msg), "fabric '%s': no link with its home, port %d, through %s, but adapter %d (%s) has one: the home is alive, so this node does not take over; its state is out of reach through adapter 0 until that link is back",
		 sv->f->name, sv->joined.port, sv->dev->what, a, sv->ad.dev[a]->what);
	sv->held_ns = sio__now_ns();
	if (strcmp(sv->lost, msg)) {
		snprintf(sv->lost, sizeof(sv->lost), "%s", msg);
		say(sv, "%s, %.3f s (CLOCK_MONOTONIC)\n", msg, (double)sio__now_ns() / 1e9);
	}
	return true;
}

/*
 * The state through a further NTB: while adapter 0's link with the home is
 * down and another adapter's is up, the start of the home's memory is read
 * through that NTB, and said at each change: the fabric's header, or other
 * memory (that NTB reaches a region of its own). Where it is found, the
 * state outlived NTB 0's fault on this host, and a process that joins
 * now is told to join through that NTB (state_via()).
 */
static void state_through(struct ntb_service *sv)
{
	uint8_t h[offsetof(struct wf_hdr, reg_off)];
	char name[sizeof(((struct wf_hdr *)0)->name)];
	int a, now = 0, home = sv->joined.port;
	uint64_t magic;

	if (home == sv->node.port || sv->joined.widx != NTB_MEM_WIDX || link_up(sv, home))
		a = 0;
	else if ((a = sio__ntb_adapters_reach(&sv->ad, home)) > 0 &&
		 !sio__ntb_adapters_peek(&sv->ad, a, home, h, sizeof(h))) {
		memcpy(&magic, h + offsetof(struct wf_hdr, magic), sizeof(magic));
		memcpy(name, h + offsetof(struct wf_hdr, name), sizeof(name));
		now = magic == WF_MAGIC && !strncmp(name, sv->f->name, sizeof(name)) ? 1 : -1;
	}
	if (now == sv->through)
		return;
	sv->through = now;
	if (now > 0)
		say(sv, "fabric '%s': its state, in port %d's memory, read through adapter %d (%s) while adapter 0's link with it is down: the fabric's header is there, %.3f s (CLOCK_MONOTONIC)\n",
		    sv->f->name, home, a, sv->ad.dev[a]->what, (double)sio__now_ns() / 1e9);
	else if (now < 0)
		say(sv, "fabric '%s': port %d's memory read through adapter %d (%s) while adapter 0's link with it is down holds no fabric '%s': that NTB reaches other memory\n",
		    sv->f->name, home, a, sv->ad.dev[a]->what, sv->f->name);
}

/* For a process that joins: the state through a further NTB, as last found. */
static void state_via(struct ntb_service *sv, struct ntb_node *node)
{
	int a = sv->f && sv->through > 0 ? sio__ntb_adapters_reach(&sv->ad, sv->joined.port) : 0;

	node->via_a = a > 0 ? a : 0;
	node->via = a > 0 ? sv->joined : (struct ntb_boot){ .port = -1 };
}

/* Join the fabric of this NTB, whichever port hosts it. */
static void join(struct ntb_service *sv)
{
	char name[SIO_NAME_MAX], msg[256];
	struct ntb_boot b;
	int ret;

	if ((ret = sio__ntb_boot_find(sv->dev, &sv->info, &sv->node.board, &b))) {
		/* two homes: the rule has one yield within a tick (rivals()); keep the handle */
		if (ret == -EEXIST && sv->f)
			return;
		/*
		 * A home whose link is down has not destroyed the fabric: it
		 * may be taken over, once its link has stayed down for the
		 * hold. A flap of this node's own link (its kernel stopped a
		 * while) reads as the home's link down too, and the home is
		 * alive: a take-over then would make two homes.
		 */
		if (sv->f && !link_up(sv, sv->joined.port)) {
			uint64_t now = sio__now_ns();

			if (!sv->home_down_ns)
				sv->home_down_ns = now;
			if (now - sv->home_down_ns >= sv->takeover_ns &&
			    !home_reached_elsewhere(sv) && !standby(sv))
				home_lost(sv);
			return;
		}
		leave(sv, true);
		return;
	}
	sv->home_down_ns = 0;
	sv->lost[0] = 0;
	if (sv->f && b.gen == sv->joined.gen && b.port != sv->joined.port) {
		/* a take-over: this node's handle follows it (home.c), not a new fabric */
		if (src_of(wf_of(sv->f))->boot.port == b.port) {
			say(sv, "fabric '%s' is hosted by port %d from now on (it took over from port %d)\n",
			    sv->f->name, b.port, sv->joined.port);
			sv->joined = b;
		}
		return;
	}
	if (sv->f && b.port == sv->joined.port && b.gen == sv->joined.gen && !sio_fabric_alive(sv->f)) {
		if (pool_register(sv))
			complain(sv, sio_errmsg());
		standby(sv);
		return;
	}
	leave(sv, true);
	if (b.port != sv->node.port &&
	    sio__ntb_unreached(sv->dev, &sv->info, &sv->node.board, b.port, sv->node.port)) {
		snprintf(msg, sizeof(msg), "port %d hosts a fabric, but its hardware driver refused to translate its memory for this port (%d): port %d's smartio ntb serve log says why",
			 b.port, sv->node.port, b.port);
		complain(sv, msg);
		return;
	}
	if (!home_name(sv, &b, name))
		return;
	sv->joined = b;
	if (sio__fabric_attach(name, sv->node.port, &sv->f)) {
		complain(sv, sio_errmsg());
		return;
	}
	sio__wf_wake_receive(wf_of(sv->f), true);
	say(sv, "joined fabric '%s' (generation %u, hosted by port %d) as node %d, %.3f s (CLOCK_MONOTONIC)\n",
	    name, b.gen, b.port, sv->node.port, (double)sio__now_ns() / 1e9);
	if (pool_register(sv))
		complain(sv, sio_errmsg());
}

/* Claim the start of this node's memory for a new fabric @name. */
static int create(struct ntb_service *sv, const char *name, uint32_t *gen)
{
	struct wf_hdr *h = sv->mem;
	const struct sio_registry *r = (const void *)((char *)sv->mem + WF_REG_OFF);
	struct ntb_boot b;
	uint32_t g = 0;

	hosting(sv);	/* a fabric destroyed since the last tick is gone now */
	if (sv->node.mem_size < WF_STATE_END + NTB_MIN_POOL)
		return sio__err(EMSGSIZE, "ntb: port %d's window is %llu KiB; a fabric's state needs %llu KiB and its pool 1 MiB: create it on a node with larger windows (ntb_hw_ivshmem: a larger region, docs/ntb.md)",
				sv->node.port, (unsigned long long)(sv->node.mem_size >> 10),
				(unsigned long long)(WF_STATE_END >> 10));
	if (sv->host_gen && (sv->published || r->magic == SIO_REG_MAGIC))
		return sio__err(EEXIST, "ntb: this node (port %d) hosts fabric '%s' already: one fabric per NTB",
				sv->node.port, sv->host_name);
	if (!sio__ntb_boot_find(sv->dev, &sv->info, &sv->node.board, &b) && b.port != sv->node.port)
		return sio__err(EEXIST, "ntb: port %d hosts a fabric already: one fabric per NTB (smartio list, smartio destroy)",
				b.port);
	while (!g && getrandom(&g, sizeof(g), 0) != sizeof(g))
		g = (uint32_t)sio__now_ns();
	g = g ? g : 1;
	leave(sv, true);
	memset(sv->mem, 0, WF_STATE_END);
	h->create_gen = g;
	atomic_thread_fence(memory_order_release);
	h->magic = WF_MAGIC;	/* local memory: the creator fills in the rest */
	sv->host_gen = g;
	sv->published = false;
	snprintf(sv->host_name, sizeof(sv->host_name), "%s", name);
	*gen = g;
	say(sv, "creating fabric '%s' (generation %u) in this node's memory\n", name, g);
	return 0;
}

/*
 * The NTB files a process maps through, adapter 0's first: the further
 * NTBs too (a path through adapter 1 maps through the NTB of adapter 1),
 * named in @rep for the process to adopt them.
 */
static void pass_files(struct ntb_service *sv, struct ntb_rep *rep, struct msghdr *mh, char *cbuf)
{
	int fds[SIO_MAX_ADAPTERS], n = 0;

	fds[n++] = sv->dev->fd;
	for (int a = 1; a < sv->ad.n && a < SIO_MAX_ADAPTERS; a++) {
		snprintf(rep->more[a - 1], sizeof(rep->more[0]), "%s", sv->ad.dev[a]->spec);
		fds[n++] = sv->ad.dev[a]->fd;	/* cbuf holds SIO_MAX_ADAPTERS */
	}
	rep->adapters = n;
	mh->msg_control = cbuf;
	mh->msg_controllen = CMSG_SPACE(n * sizeof(int));
	CMSG_FIRSTHDR(mh)->cmsg_level = SOL_SOCKET;
	CMSG_FIRSTHDR(mh)->cmsg_type = SCM_RIGHTS;
	CMSG_FIRSTHDR(mh)->cmsg_len = CMSG_LEN(n * sizeof(int));
	memcpy(CMSG_DATA(CMSG_FIRSTHDR(mh)), fds, n * sizeof(int));
}

/* Answer one request on @sk; only root and this service's user are served. */
static void answer(struct ntb_service *sv, int sk)
{
	struct ntb_rep rep = { .magic = NTB_PROTO_MAGIC, .node = sv->node };
	char cbuf[CMSG_SPACE(SIO_MAX_ADAPTERS * sizeof(int))] = { 0 };
	struct iovec iov = { .iov_base = &rep, .iov_len = sizeof(rep) };
	struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1 };
	struct ucred cr;
	socklen_t cl = sizeof(cr);
	struct ntb_req req;
	ssize_t n = recv(sk, &req, sizeof(req), 0);
	int ret = 0;

	if (n <= 0)
		return;	/* connected and left: another service looking for this one */
	if (n == sizeof(req) && req.magic == NTB_PROTO_MAGIC && req.op == NTB_OP_POKE) {
		if (sv->f)	/* a process's request waits in the fabric's state */
			sio__ntb_ownwin_serve(sv->f, sv->dev, &sv->node, &sv->xw);
		return;
	}
	if (n != sizeof(req) || req.magic != NTB_PROTO_MAGIC)
		ret = sio__err(EPROTO, "ntb: a request the node service does not know");
	else if (getsockopt(sk, SOL_SOCKET, SO_PEERCRED, &cr, &cl) ||
		 (cr.uid != 0 && cr.uid != geteuid()))
		ret = sio__err(EACCES, "ntb: the node service of port %d serves root and uid %u only",
			       sv->node.port, (unsigned)geteuid());
	else if (!sv->have_mem)
		ret = sio__err(ENOTCONN, "ntb: port %d's memory is not exported yet: no peer's link has come up (smartio ntb status)",
			       sv->node.port);
	else if (req.op == NTB_OP_CREATE) {
		req.name[SIO_NAME_MAX - 1] = 0;
		ret = create(sv, req.name, &rep.gen);
	} else if (req.op != NTB_OP_HELLO && req.op != NTB_OP_BOARD)
		ret = sio__err(EPROTO, "ntb: request %u is none the node service knows", req.op);
	if (ret) {
		rep.err = -ret;
		snprintf(rep.msg, sizeof(rep.msg), "%s", sio_errmsg());
	} else if (req.op == NTB_OP_BOARD) {
		sio__ntb_service_note(sv, rep.msg, sizeof(rep.msg));
	} else {
		state_via(sv, &rep.node);
		rep.node.reach0 = sv->outbound ? 0 : xlat_ports(sv);
		pass_files(sv, &rep, &mh, cbuf);
	}
	if (sendmsg(sk, &mh, MSG_NOSIGNAL) < 0)
		say(sv, "a process left before its answer: %s\n", strerror(errno));
}

/* The service's socket; a stale one (nobody answers) is replaced, a live one refused. */
static int listen_at(struct ntb_service *sv)
{
	struct sockaddr_un a = { .sun_family = AF_UNIX };
	int sk, probe;

	if (sio__ntbdev_service_path(sv->dev->spec, sv->node.port, sv->path, sizeof(sv->path)))
		return -errno;
	if (strlen(sv->path) >= sizeof(a.sun_path))
		return sio__err(ENAMETOOLONG, "ntb: %s is too long a socket path", sv->path);
	memcpy(a.sun_path, sv->path, strlen(sv->path) + 1);
	probe = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
	if (probe >= 0 && !connect(probe, (struct sockaddr *)&a, sizeof(a))) {
		close(probe);
		return sio__err(EADDRINUSE, "ntb: a node service for port %d runs already (%s)",
				sv->node.port, sv->path);
	}
	if (probe >= 0)
		close(probe);
	unlink(sv->path);
	sk = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
	if (sk < 0 || bind(sk, (struct sockaddr *)&a, sizeof(a)) || listen(sk, 16)) {
		int e = errno;
		if (sk >= 0)
			close(sk);
		return sio__err(e, "ntb: cannot listen at %s: %s", sv->path, strerror(e));
	}
	chmod(sv->path, 0666);	/* who may: SO_PEERCRED decides */
	sv->lsk = sk;
	return 0;
}

/* The device, its abilities checked, the doorbell, the socket. */
static int setup(struct ntb_service *sv, const char *dev, int port)
{
	const char *sb = getenv("SMARTIO_NTB_STANDBY"), *more = dev ? strchr(dev, ',') : NULL;
	char first[sizeof(sv->dev->spec)];
	struct sio_ntb_db_eventfd e;
	uint64_t v = 1;
	int ret;

	if (sb && *sb && sio_parse_u64(sb, 0, 1, &v))
		return sio__err(EINVAL, "ntb: SMARTIO_NTB_STANDBY='%s': 1 (this node may be the fabric's standby home, the default) or 0 (never)",
				sb);
	sv->standby_ok = v;
	if ((ret = sio__ntb_takeover_ns(&sv->takeover_ns)))
		return ret;
	if (more) {	/* DEV0,DEV1...: adapter 0's NTB, then the others' */
		if ((size_t)(more - dev) >= sizeof(first))
			return sio__err(ENAMETOOLONG, "ntb: '%.*s' is too long a device name",
					(int)(more - dev), dev);
		snprintf(first, sizeof(first), "%.*s", (int)(more - dev), dev);
		dev = first;
		more++;
	}
	if ((ret = sio__ntbdev_open(dev, port, &sv->dev)) || (ret = sio__ntbdev_info(sv->dev, &sv->info)))
		return ret;
	sv->node.port = sv->info.port;
	sv->node.fake_port = sv->dev->fake ? sv->dev->port : -1;
	snprintf(sv->node.what, sizeof(sv->node.what), "%s", sv->dev->spec);
	while (!sv->node.epoch && getrandom(&sv->node.epoch, sizeof(sv->node.epoch), 0) != 8)
		sv->node.epoch = sio__now_ns();
	if (!(sv->info.flags & (SIO_NTB_F_INBOUND_XLAT | SIO_NTB_F_OUTBOUND_XLAT)))
		return sio__err(EOPNOTSUPP, "ntb: %s (%s) translates no window, inbound or outbound: a node cannot export its memory",
				sv->dev->what, sv->info.driver);
	sv->outbound = !(sv->info.flags & SIO_NTB_F_INBOUND_XLAT);
	if ((ret = sio__ntb_board_init(sv->dev, &sv->info, &sv->node.board)))
		return ret;
	if (sio__ntbdev_sideless(sv->dev, &sv->info)) {
		while (getrandom(&sv->side_word, sizeof(sv->side_word), 0) != sizeof(sv->side_word))
			sv->side_word = (uint32_t)sio__now_ns();
		sv->side_word = 1u << 31 | (sv->side_word & 0x1fffffff);
		if ((ret = sio__ntb_side_publish(sv->dev, &sv->info, &sv->node.board, sv->side_word)))
			return ret;
	}
	if (more && sv->side_word)
		return sio__err(EOPNOTSUPP, "ntb: %s (%s) gives no port numbers: a node of several NTBs needs them to tell its peers apart on each",
				sv->dev->what, sv->info.driver);
	if ((ret = sio__ntb_adapters_open(&sv->ad, sv->dev, more, sv->node.port)))
		return ret;
	if (!sv->info.mws_per_peer || !sv->info.peers || !sv->info.db_valid || sv->node.port >= WF_MAX_POOLS)
		return sio__err(EOPNOTSUPP, "ntb: %s has %u windows per peer, %u peers, doorbells 0x%llx, port %d: a fabric needs a window per peer, a doorbell, a port below %d",
				sv->dev->what, sv->info.mws_per_peer, sv->info.peers,
				(unsigned long long)sv->info.db_valid, sv->node.port, WF_MAX_POOLS);
	if ((ret = sio__ntb_boot_publish(sv->dev, &sv->info, &sv->node.board, NULL)) ||	/* nothing hosted here yet */
	    (ret = sio__ntb_unreached_publish(sv->dev, &sv->info, &sv->node.board, 0)))
		return ret;
	sv->bit = 63 - __builtin_clzll(sv->info.db_valid);
	e = (struct sio_ntb_db_eventfd){ .bit = (uint32_t)sv->bit,
					 .fd = sv->efd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK) };
	if (sv->efd < 0 || (ret = ntbdev_ioctl(sv->dev, SIO_NTB_IOC_DB_EVENTFD, &e)))
		return sio__err(sv->efd < 0 ? errno : -ret, "ntb: the doorbell's eventfd: %s",
				strerror(sv->efd < 0 ? errno : -ret));
	if ((ret = listen_at(sv)))
		return ret;
	say(sv, "port %d of %s (%s): %u peers, %u windows each, %s translation, bootstrap by %s, doorbell bit %d; serving this kernel's processes at %s\n",
	    sv->node.port, sv->dev->what, sv->info.driver, sv->info.peers, sv->info.mws_per_peer,
	    sv->outbound ? "outbound" : "inbound",
	    sv->node.board.by_msg ? "message registers" : "scratchpads", sv->bit, sv->path);
	for (int a = 1; a < sv->ad.n; a++)
		say(sv, "adapter %d of node %d: %s, its links followed as the adapter's in a fabric of %d adapters or more\n",
		    a, sv->node.port, sv->ad.dev[a]->what, a + 1);
	return 0;
}

static void teardown(struct ntb_service *sv)
{
	leave(sv, false);
	if (sv->host_gen)
		sio__ntb_boot_publish(sv->dev, &sv->info, &sv->node.board, NULL);
	if (sv->lsk >= 0) {
		close(sv->lsk);
		unlink(sv->path);
	}
	if (sv->efd >= 0)
		close(sv->efd);
	for (int p = 0; p < SIO_NTB_MAX_PEERS; p++)
		if (sv->out[p])
			munmap(sv->out[p], sv->out_len[p]);
	if (sv->mem)
		munmap(sv->mem, sv->node.mem_size);
	sio__ntb_adapters_close(&sv->ad);
	sio__ntbdev_close(sv->dev);	/* the last holder frees the memory */
}

/* One round: requests, doorbells, then every tick the links, the hosting, the fabric. */
static void round_once(struct ntb_service *sv, uint64_t *next)
{
	struct pollfd pf[2] = { { .fd = sv->lsk, .events = POLLIN }, { .fd = sv->efd, .events = POLLIN } };
	uint64_t v, now;

	if (poll(pf, 2, NTB_TICK_MS) > 0) {
		if (pf[0].revents & POLLIN) {
			int sk = accept4(sv->lsk, NULL, NULL, SOCK_CLOEXEC);
			if (sk >= 0) {
				answer(sv, sk);
				close(sk);
			}
		}
		if ((pf[1].revents & POLLIN) && read(sv->efd, &v, sizeof(v)) == sizeof(v) && sv->f) {
			sio__wf_wake_rx(wf_of(sv->f), v);
			sio__ntb_ownwin_serve(sv->f, sv->dev, &sv->node, &sv->xw);
		}
	}
	now = sio__now_ns();
	if (now < *next)
		return;
	*next = now + NTB_TICK_MS * 1000000ull;
	links(sv);
	if (sv->have_mem) {
		exports(sv);
		hosting(sv);
		join(sv);
	}
	if (sv->f) {
		adapters(sv);
		state_through(sv);
		sio__ntb_ownwin_serve(sv->f, sv->dev, &sv->node, &sv->xw);
	}
}

int sio_ntb_serve(const char *dev, int port, volatile sig_atomic_t *stop, FILE *log)
{
	struct ntb_service sv = { .lsk = -1, .efd = -1, .log = log };
	uint64_t next = 0;
	int ret;

	if (this_service)
		return sio__err(EBUSY, "ntb: this process serves a node already");
	if ((ret = setup(&sv, dev, port))) {
		if (sv.dev)
			teardown(&sv);
		return ret;
	}
	this_service = &sv;
	while (!stop || !*stop)
		round_once(&sv, &next);
	say(&sv, "stopping: port %d's memory goes with this service\n", sv.node.port);
	teardown(&sv);
	this_service = NULL;
	return 0;
}
