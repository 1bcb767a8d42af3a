/* SPDX-License-Identifier: GPL-2.0 OR MIT */
/*
 * ntb_hw_ivshmem: an NTB hardware driver over QEMU's ivshmem-doorbell device.
 *
 * Every guest that shares one ivshmem region is a port of one multi-port
 * NTB; its port number is its ivshmem peer id (IVPosition). BAR2, the region
 * all ports see, is laid out as below; a port writes its own slot (and the
 * doorbell counters it owns in the others'), reads the others'.
 *
 *   0            struct ivntb_desc: the layout, the same from every port
 *   slot_offset  struct ivntb_slot per port: heartbeat, link enable,
 *                scratchpads, window translations, doorbell counters
 *   data_offset  the window regions: for each port, for each peer, one
 *                region of 2^region_shift bytes per inbound window
 *
 * Where N functions of each guest share one region (shared=N, share.c),
 * function R (its rank by PCI address) has its descriptor in page R and
 * its slots in the R-th run of slots after the N pages; data_offset is
 * every function's.
 *
 * Nothing in BAR2 relies on an atomic operation across guests: every word
 * has one writer, except scratchpads, which are plain registers (the last
 * store wins, as on NTB hardware).
 */
#ifndef NTB_HW_IVSHMEM_H
#define NTB_HW_IVSHMEM_H

#include <linux/bitops.h>
#include <linux/dma-mapping.h>
#include <linux/list.h>
#include <linux/ntb.h>
#include <linux/pci.h>
#include <linux/spinlock.h>
#include <linux/types.h>
#include <linux/workqueue.h>

#define IVNTB_NAME		"ntb_hw_ivshmem"
#define IVNTB_MAGIC		0x313042544e4f4953ULL	/* "SIONTB01" */
#define IVNTB_SLOT_MAGIC	0x544f4c5342544e49ULL	/* "INTBSLOT" */
/*
 * 2: translations anywhere in the area
 * 3: the profile in the descriptor; 128 scratchpads, message registers and
 *    the port's bus address of BAR2 in the slot
 */
#define IVNTB_VERSION		3
#define IVNTB_MIN_PORTS		2
#define IVNTB_MAX_PORTS		8
#define IVNTB_MAX_MWS		IVNTB_MAX_PORTS	/* inbound windows per peer */
#define IVNTB_DB_BITS		32
#define IVNTB_MAX_SPADS		128
#define IVNTB_MSGS		4	/* message registers (IDT's count) */
#define IVNTB_MAX_VECTORS	8
#define IVNTB_MAX_SHARED	4	/* functions of a guest on one region */

/* ivshmem's registers, BAR0 (docs/specs/ivshmem-spec.rst in QEMU) */
#define IVSHMEM_IVPOSITION	0x08
#define IVSHMEM_DOORBELL	0x0c
#define IVSHMEM_BAR_REGS	0
#define IVSHMEM_BAR_SHM		2

/* struct ivntb_desc - the layout of BAR2, at offset 0 */
struct ivntb_desc {
	__le64 magic;
	__le32 version;
	__le32 ports;
	__le32 mws;		/* inbound windows per peer */
	__le32 spads;
	__le32 db_bits;
	__le32 region_shift;	/* log2 of one window's region */
	__le64 bar_size;
	__le64 slot_offset;
	__le64 slot_size;
	__le64 data_offset;
	__le32 profile;		/* enum ivntb_profile_id */
	__le32 shared;		/* functions sharing BAR2 (0: none; share.c) */
};

/*
 * struct ivntb_slot - one port's registers in BAR2
 * @magic:	IVNTB_SLOT_MAGIC while the port's driver is bound
 * @session:	random per probe: a new value means the port restarted
 * @heartbeat:	bumped by the port every heartbeat period
 * @enabled:	bit 0 set while a client has the port's link enabled;
 *		above it, how many times it was enabled (a peer's poll tells
 *		a disable and enable between two polls from no change)
 * @seen:	[port]: that port's session as this one sees it alive (0: not);
 *		a port's link with this one is up only once this one has seen
 *		its current session, so each side has dropped the other's rings
 *		of an earlier life before the first ring of this one
 * @spad:	the port's inbound scratchpads (any port writes them)
 * @xlat:	[sender port][window]: where in the port's own area (all the
 *		regions it keeps for every sender) the sender's outbound
 *		window reaches, in pages from the area's start, and how many
 *		pages; 0 pages: no translation, the window's own region
 *		(written by this port)
 * @db_set:	[sender port][bit]: rings of the bit by the sender (written by
 *		the sender only)
 * @db_ack:	[sender port][bit]: the last ring this port has cleared
 *		(written by this port only); a bit is pending while they differ
 * @bus:	the bus address of BAR2 in this port's guest, for the peers'
 *		outbound translations (which name this port's bus addresses)
 * @msg:	[sender port][register]: the sender's last message and how many
 *		it sent there (written by the sender only)
 * @msg_ack:	[sender port][register]: the last message this port took
 *		(written by this port only); the register is full while the
 *		counts differ (see msg.c)
 * @msg_intent:	[sender port][register]: 1 while the sender is about to
 *		write there (written by the sender only; see msg.c)
 */
struct ivntb_slot {
	__le64 magic;
	__le64 session;
	__le32 heartbeat;
	__le32 enabled;
	__le64 seen[IVNTB_MAX_PORTS];
	__le32 spad[IVNTB_MAX_SPADS];
	struct {
		__le32 page;
		__le32 pages;
	} xlat[IVNTB_MAX_PORTS][IVNTB_MAX_MWS];
	__le32 db_set[IVNTB_MAX_PORTS][IVNTB_DB_BITS];
	__le32 db_ack[IVNTB_MAX_PORTS][IVNTB_DB_BITS];
	__le64 bus;
	struct {
		__le32 val;
		__le32 seq;
	} msg[IVNTB_MAX_PORTS][IVNTB_MSGS];
	__le32 msg_ack[IVNTB_MAX_PORTS][IVNTB_MSGS];
	__le32 msg_intent[IVNTB_MAX_PORTS][IVNTB_MSGS];
};

enum ivntb_profile_id {
	IVNTB_PROF_IVSHMEM,
	IVNTB_PROF_INTEL,
	IVNTB_PROF_AMD,
	IVNTB_PROF_SWITCHTEC,
	IVNTB_PROF_IDT,
	IVNTB_PROF_EPF,
	IVNTB_PROFILES
};

/**
 * struct ivntb_profile - what one upstream hardware driver offers (profile.c)
 * @name:	the profile= value
 * @ports:	exactly this many ports (0: 2 to IVNTB_MAX_PORTS)
 * @mws:	inbound windows per peer (0: as many as ports)
 * @spads:	scratchpads (0: none, no scratchpad ops; -1: ivshmem's count)
 * @msgs:	message registers (0: none, no message ops)
 * @db_valid:	the doorbell bits
 * @db_vectors:	MSI-X vectors at most
 * @vector_ops:	db_vector_count and db_vector_mask ops (else: one vector)
 * @port_ops:	port ops (else the core's defaults: by topology)
 * @clear_trans: an mw_clear_trans op
 * @outbound:	outbound translation only (peer_mw_set_trans), as IDT
 * @port_map:	the port number of each ivshmem peer id (NULL: the id)
 * @addr_align, @size_align: what mw_get_align reports (0: a window's size,
 *		a page)
 * @align_checked: a misaligned translation is refused (-EINVAL)
 * @switchtec_xlat: Switchtec's checks: size 4 KiB at least, the address
 *		aligned to the size's power of two, an oversize window -EIO
 * @db_unchecked: peer_db_set and db_clear ignore invalid bits (AMD,
 *		Switchtec)
 * @db_lowest_only: peer_db_set rings the lowest bit it is given (EPF)
 * @db_mask_noop: db_set_mask and db_clear_mask do nothing (EPF)
 * @topo:	the topology of port 0, port 1
 */
struct ivntb_profile {
	const char *name;
	int ports;
	int mws;
	int spads;
	int msgs;
	u64 db_valid;
	int db_vectors;
	bool vector_ops;
	bool port_ops;
	bool clear_trans;
	bool outbound;
	const int *port_map;
	u64 addr_align;
	u64 size_align;
	bool align_checked;
	bool switchtec_xlat;
	bool db_unchecked;
	bool db_lowest_only;
	bool db_mask_noop;
	enum ntb_topo topo[2];
};

/* What the last ntb_mw_get_align() of a task asked about (see mw.c). */
struct ivntb_hint {
	struct task_struct *task;
	int pidx;
	int widx;
};

#define IVNTB_HINTS		8

/*
 * struct ivntb_regions - what the DMA allocator has handed out: a function's
 * own, or one for all the functions that share a region (share.c)
 * @lock:	serialises the two below; irqsave (any calling context); taken
 *		inside a function's mw_lock, never around it
 * @used:	[pidx]: bit per region handed out
 * @held:	[pidx][region]: windows of another function translated onto
 *		it; a region is free once neither used nor held
 */
struct ivntb_regions {
	spinlock_t lock;	/* irqsave: any calling context */
	unsigned long used[IVNTB_MAX_PORTS - 1];
	u8 held[IVNTB_MAX_PORTS - 1][IVNTB_MAX_MWS];
};

/* An MSI-X vector and the device it belongs to, for its handler. */
struct ivntb_vec {
	struct ivntb_dev *iv;
	int vector;
};

/* struct ivntb_peer - what this port knows of another */
struct ivntb_peer {
	u64 session;		/* the session last seen */
	u32 heartbeat;		/* the heartbeat last seen */
	unsigned int still;	/* poll periods since the heartbeat moved */
	u32 enabled;		/* the enable word last seen (slot @enabled) */
	bool alive;
};

/**
 * struct ivntb_dev - one ivshmem-doorbell function as an NTB device
 * @ntb:	the NTB core's device (first: the core frees nothing of ours)
 * @pdev:	the ivshmem function
 * @regs:	BAR0, ivshmem's registers
 * @hdr:	BAR2's header as this kernel maps it (write-back): the
 *		descriptor and every slot, up to the data offset
 * @area:	this port's own area of BAR2 (write-back): the regions it
 *		hands out as inbound buffers. The peers' areas are never
 *		mapped here: clients map them (write-combining, ioremap_wc),
 *		and a second mapping of another type would make PAT refuse
 *		theirs, or demote them to uncached
 * @shm_bus, @shm_phys, @shm_size: BAR2's bus and physical address, size
 * @desc:	the layout at the start of BAR2, as the peers may rewrite it:
 *		only compared with @layout (link.c), never used for an address
 * @layout:	the layout adopted at probe, checked against @shm_size there;
 *		every offset into BAR2 is derived from this copy (a peer writes
 *		BAR2 at will, and must not steer this kernel's accesses)
 * @layout_broken: the link poll found @desc or this port's slot rewritten
 * @slot:	this port's slot; slots of the others through ivntb_slot_of()
 * @port:	this port's number (ivshmem IVPosition)
 * @rank:	this function's header in a shared region (share.c; else 0)
 * @sibling:	in the list of functions sharing the region (share.c)
 * @ports, @mws, @spads: from @layout
 * @region_shift: log2 of one window's region, from @layout
 * @slot_off, @slot_size, @data_off: from @layout
 * @nvec:	MSI-X vectors in use
 * @vec:	their handlers' context
 * @session:	this port's session (also in its slot)
 * @db_lock:	serialises this port's doorbell counters and mask; taken in
 *		the MSI-X handler, so elsewhere with interrupts off (irqsave)
 * @db_mask:	doorbell bits masked by the client
 * @db_up:	ports whose rings count now: this one, and the peers whose link
 *		is up here (a ring of a peer that sees the link up before this
 *		port does waits for it; see db.c)
 * @db_vis:	[port][bit]: for a port not in @db_up, the rings that count
 * @db_told:	[bit]: the rings (all ports) the client has had events for
 * @db_work:	delivers doorbell events that were not interrupts (local rings,
 *		unmasked pending bits)
 * @mw_lock:	serialises the window state below; NTB ops and DMA ops have
 *		no documented calling context, so it is taken irqsave
 * @xlat:	[pidx][window]: its translation, as published in the slot
 *		(pages 0: none)
 * @rg:		what the DMA allocator has handed out: @own_regions, or
 *		the shared region's (share.c)
 * @hold:	[pidx][window]: the region of another function's buffer the
 *		window is translated onto, as 1 + pidx * IVNTB_MAX_MWS +
 *		region (0: none)
 * @hint:	recent ntb_mw_get_align() calls, by task
 * @link_work:	the heartbeat and link poll
 * @link_lock:	serialises @link_mask and @link_running; taken in the
 *		MSI-X handler (ivntb_link_kick()), so elsewhere irq-safe
 * @link_mask:	peers (by index) whose link is up
 * @link_running: the poll may be queued (false from remove on)
 * @link_tick:	when the next poll counts toward a peer's timeout (jiffies)
 * @peer:	per peer index
 * @enabled:	the link is enabled by the client
 * @enable_count: how many times the client enabled it (ivntb_link_set()),
 *		or the cable was plugged back in (ivntb_link_cable())
 * @cable_out:	the emulated cable is pulled (debugfs "cable", link.c)
 * @dbg:	this function's debugfs directory ("ntb_hw_ivshmem:<pci>")
 * @dma_dev:	the device inbound buffers are allocated on (ntb_get_dma_dev()):
 *		a child of the function that this driver made, with DMA ops
 *		that hand out the regions of this port's area (mw.c)
 * @pci_ops:	the function's own DMA ops are ours too, for the clients
 *		that allocate on it (ntb_tool, ntb_perf): only where the
 *		kernel's DMA API uses them (see ivntb_pci_ops_init())
 * @orig_dma_ops: the function's DMA ops before ours, restored on remove
 * @prof:	the hardware profile (profile.c)
 * @ops:	the NTB ops that profile has
 * @db_valid:	its doorbell bits
 * @oxlat:	[outbound window]: where an outbound translation (IDT) sends
 *		it: the port, offset in BAR2 and size (0: the window's own
 *		region)
 * @msg_lock:	serialises the message state below; irqsave (any context)
 * @msg_mask:	message status bits masked by the client
 * @msg_fail:	outbound status bits: a message the peer's full register
 *		refused
 * @msg_from:	[register]: the port whose message msg_read() showed last
 * @msg_last:	[register]: that message, shown again while none is pending
 * @msg_sum:	the messages' counts when the client was last told
 * @msg_news:	a change the counts do not show (a failure, a clear, an
 *		unmask): the client is told at the next look
 * @msg_work:	tells the client of message status changes
 * @fwd:	windows translated onto another function's BAR (fwd.c)
 */
struct ivntb_dev {
	struct ntb_dev ntb;
	struct pci_dev *pdev;
	void __iomem *regs;
	void *hdr;
	void *area;
	dma_addr_t shm_bus;
	phys_addr_t shm_phys;
	resource_size_t shm_size;
	struct ivntb_desc *desc;
	struct ivntb_desc layout;
	bool layout_broken;
	struct ivntb_slot *slot;
	int port;
	int rank;
	struct list_head sibling;
	int ports;
	int mws;
	int spads;
	unsigned int region_shift;
	u64 slot_off;
	u64 slot_size;
	u64 data_off;
	int nvec;
	struct ivntb_vec vec[IVNTB_MAX_VECTORS];

	u64 session;
	spinlock_t db_lock;	/* counters, mask; irq-safe: the ISR takes it */
	u64 db_mask;
	u32 db_up;
	u32 db_vis[IVNTB_MAX_PORTS][IVNTB_DB_BITS];
	u32 db_told[IVNTB_DB_BITS];
	struct work_struct db_work;

	spinlock_t mw_lock;	/* window state; irqsave: any calling context */
	struct {
		u32 page;
		u32 pages;
	} xlat[IVNTB_MAX_PORTS - 1][IVNTB_MAX_MWS];
	struct ivntb_regions *rg;
	struct ivntb_regions own_regions;
	u8 hold[IVNTB_MAX_PORTS - 1][IVNTB_MAX_MWS];
	struct ivntb_hint hint[IVNTB_HINTS];
	unsigned int hint_next;

	struct delayed_work link_work;
	spinlock_t link_lock;	/* link mask; irq-safe: the ISR kicks polls */
	u64 link_mask;
	bool link_running;
	unsigned long link_tick;
	struct ivntb_peer peer[IVNTB_MAX_PORTS - 1];
	bool enabled;
	u32 enable_count;
	bool cable_out;
	struct dentry *dbg;

	struct device *dma_dev;
	struct ivntb_fwd *fwd;
	bool pci_ops;
	const struct dma_map_ops *orig_dma_ops;

	const struct ivntb_profile *prof;
	struct ntb_dev_ops ops;
	u64 db_valid;
	struct {
		int port;
		u64 off;
		u64 size;
	} oxlat[(IVNTB_MAX_PORTS - 1) * IVNTB_MAX_MWS];

	spinlock_t msg_lock;	/* message state; irqsave: any context */
	u64 msg_mask;
	u64 msg_fail;
	int msg_from[IVNTB_MSGS];
	u32 msg_last[IVNTB_MSGS];
	u32 msg_sum;
	bool msg_news;
	struct work_struct msg_work;
};

static inline struct ivntb_dev *to_ivntb(struct ntb_dev *ntb)
{
	return container_of(ntb, struct ivntb_dev, ntb);
}

static inline int ivntb_peer_count(struct ivntb_dev *iv)
{
	return iv->ports - 1;
}

/* The port of a peer index: the ports other than ours, in order. */
static inline int ivntb_pidx_port(struct ivntb_dev *iv, int pidx)
{
	return pidx < iv->port ? pidx : pidx + 1;
}

static inline int ivntb_port_pidx(struct ivntb_dev *iv, int port)
{
	return port < iv->port ? port : port - 1;
}

static inline struct ivntb_slot *ivntb_slot_of(struct ivntb_dev *iv, int port)
{
	return iv->hdr + iv->slot_off + port * iv->slot_size;
}

static inline resource_size_t ivntb_region_size(struct ivntb_dev *iv)
{
	return (resource_size_t)1 << iv->region_shift;
}

/*
 * The offset in BAR2 of region @region of the area that port @owner keeps
 * for port @sender: areas are per owner, then per sender, @mws regions each.
 * An owner's area is contiguous: its regions for every sender, in order.
 */
static inline u64 ivntb_region_off(struct ivntb_dev *iv, int owner, int sender,
				   int region)
{
	int spidx = sender < owner ? sender : sender - 1;
	u64 idx = ((u64)owner * (iv->ports - 1) + spidx) * iv->mws + region;

	return iv->data_off + (idx << iv->region_shift);
}

/* The offset in BAR2 of port @owner's area, and its size. */
static inline u64 ivntb_area_off(struct ivntb_dev *iv, int owner)
{
	return iv->data_off +
	       (((u64)owner * (iv->ports - 1) * iv->mws) << iv->region_shift);
}

static inline u64 ivntb_area_size(struct ivntb_dev *iv)
{
	return ((u64)(iv->ports - 1) * iv->mws) << iv->region_shift;
}

/* link.c */
void ivntb_link_init(struct ivntb_dev *iv);
void ivntb_link_start(struct ivntb_dev *iv);
void ivntb_link_stop(struct ivntb_dev *iv);
void ivntb_link_kick(struct ivntb_dev *iv);
void ivntb_link_debugfs(struct ivntb_dev *iv);
u64 ivntb_link_is_up(struct ntb_dev *ntb, enum ntb_speed *speed,
		     enum ntb_width *width);
int ivntb_link_enable(struct ntb_dev *ntb, enum ntb_speed speed,
		      enum ntb_width width);
int ivntb_link_disable(struct ntb_dev *ntb);

/* db.c: doorbells, scratchpads, interrupts */
int ivntb_irq_init(struct ivntb_dev *iv);
void ivntb_db_link(struct ivntb_dev *iv, int port, bool up);
void ivntb_db_forget(struct ivntb_dev *iv, int port);
void ivntb_irq_fini(struct ivntb_dev *iv);
void ivntb_db_init(struct ivntb_dev *iv);
void ivntb_ring(struct ivntb_dev *iv, int port, int vector);
int ivntb_db_is_unsafe(struct ntb_dev *ntb);
u64 ivntb_db_valid_mask(struct ntb_dev *ntb);
int ivntb_db_vector_count(struct ntb_dev *ntb);
u64 ivntb_db_vector_mask(struct ntb_dev *ntb, int vector);
u64 ivntb_db_read(struct ntb_dev *ntb);
int ivntb_db_set(struct ntb_dev *ntb, u64 bits);
int ivntb_db_clear(struct ntb_dev *ntb, u64 bits);
u64 ivntb_db_read_mask(struct ntb_dev *ntb);
int ivntb_db_set_mask(struct ntb_dev *ntb, u64 bits);
int ivntb_db_clear_mask(struct ntb_dev *ntb, u64 bits);
int ivntb_peer_db_set(struct ntb_dev *ntb, u64 bits);
int ivntb_spad_is_unsafe(struct ntb_dev *ntb);
int ivntb_spad_count(struct ntb_dev *ntb);
u32 ivntb_spad_read(struct ntb_dev *ntb, int sidx);
int ivntb_spad_write(struct ntb_dev *ntb, int sidx, u32 val);
u32 ivntb_peer_spad_read(struct ntb_dev *ntb, int pidx, int sidx);
int ivntb_peer_spad_write(struct ntb_dev *ntb, int pidx, int sidx, u32 val);

/* mw.c: memory windows and the DMA allocator that feeds them */
bool ivntb_page_xlat(void);
void ivntb_mw_init(struct ivntb_dev *iv);
void ivntb_mw_fini(struct ivntb_dev *iv);
int ivntb_dma_init(struct ivntb_dev *iv);
void ivntb_dma_fini(struct ivntb_dev *iv);
int ivntb_mw_count(struct ntb_dev *ntb, int pidx);
int ivntb_mw_get_align(struct ntb_dev *ntb, int pidx, int widx,
		       resource_size_t *addr_align, resource_size_t *size_align,
		       resource_size_t *size_max);
int ivntb_mw_set_trans(struct ntb_dev *ntb, int pidx, int widx,
		       dma_addr_t addr, resource_size_t size);
int ivntb_mw_clear_trans(struct ntb_dev *ntb, int pidx, int widx);
int ivntb_peer_mw_count(struct ntb_dev *ntb);
int ivntb_peer_mw_get_addr(struct ntb_dev *ntb, int widx, phys_addr_t *base,
			   resource_size_t *size);

/* share.c: functions that share one region */
int ivntb_share_count(void);
int ivntb_share_check_param(void);
int ivntb_share_rank(struct ivntb_dev *iv);
void ivntb_share_regions(struct ivntb_dev *iv);
int ivntb_share_add(struct ivntb_dev *iv);
void ivntb_share_del(struct ivntb_dev *iv);
bool ivntb_share_xlat(struct ivntb_dev *iv, dma_addr_t *addr);

/* profile.c */
int ivntb_profile_select(int ports, bool page_xlat);
enum ivntb_profile_id ivntb_profile_chosen(void);
const struct ivntb_profile *ivntb_profile_get(enum ivntb_profile_id id);
int ivntb_profile_mws(const struct ivntb_profile *p, int nports);
int ivntb_profile_spads(const struct ivntb_profile *p, int nports);
int ivntb_api_port(struct ivntb_dev *iv, int id);
int ivntb_api_id(struct ivntb_dev *iv, int port);
void ivntb_profile_ops(struct ivntb_dev *iv, struct ntb_dev_ops *ops);
enum ntb_topo ivntb_profile_topo(struct ivntb_dev *iv);
u64 ivntb_profile_addr_align(struct ivntb_dev *iv, bool page_xlat);
u64 ivntb_profile_size_align(struct ivntb_dev *iv);
int ivntb_profile_xlat_check(struct ivntb_dev *iv, u64 addr, u64 size,
			     bool page_xlat);

/* mw.c: outbound translation (the idt profile) */
int ivntb_peer_mw_set_trans(struct ntb_dev *ntb, int pidx, int widx,
			    u64 addr, resource_size_t size);
int ivntb_peer_mw_clear_trans(struct ntb_dev *ntb, int pidx, int widx);

/* msg.c: message registers (the idt profile) */
void ivntb_msg_init(struct ivntb_dev *iv);
void ivntb_msg_fini(struct ivntb_dev *iv);
void ivntb_msg_kick(struct ivntb_dev *iv);
void ivntb_msg_forget(struct ivntb_dev *iv, int port);
void ivntb_msg_drop_ended(struct ivntb_dev *iv, int port, bool gone);
int ivntb_msg_count(struct ntb_dev *ntb);
u64 ivntb_msg_inbits(struct ntb_dev *ntb);
u64 ivntb_msg_outbits(struct ntb_dev *ntb);
u64 ivntb_msg_read_sts(struct ntb_dev *ntb);
int ivntb_msg_clear_sts(struct ntb_dev *ntb, u64 sts_bits);
int ivntb_msg_set_mask(struct ntb_dev *ntb, u64 mask_bits);
int ivntb_msg_clear_mask(struct ntb_dev *ntb, u64 mask_bits);
u32 ivntb_msg_read(struct ntb_dev *ntb, int *pidx, int midx);
int ivntb_peer_msg_write(struct ntb_dev *ntb, int pidx, int midx, u32 msg);
/* fwd.c: translation onto another function's BAR, emulated */
int ivntb_fwd_init(struct ivntb_dev *iv);
void ivntb_fwd_fini(struct ivntb_dev *iv);
int ivntb_fwd_set(struct ivntb_dev *iv, int pidx, int widx, dma_addr_t addr,
		  resource_size_t size);
void ivntb_fwd_clear(struct ivntb_dev *iv, int pidx, int widx);

#endif
