/* SPDX-License-Identifier: (GPL-2.0 WITH Linux-syscall-note) OR MIT */
#ifndef SMARTIO_NTB_H
#define SMARTIO_NTB_H

/**
 * DOC: ntb: the Linux NTB framework, through smartio_ntb
 *
 * smartio_ntb (kernel/smartio_ntb/) is a client of the kernel's NTB
 * framework: one character device per NTB device, /dev/smartio-ntbN,
 * whatever its hardware driver. This header is its user interface: it
 * compiles in C and C++ and needs nothing but the kernel's uapi types.
 *
 * What a process does with it, on every node:
 *
 * - SIO_NTB_IOC_INFO, SIO_NTB_IOC_PEER: this port, the peers, their links;
 * - export memory to a peer: SIO_NTB_IOC_MW (the inbound window's limits),
 *   SIO_NTB_IOC_MW_ALLOC (a buffer the window is translated to), then mmap()
 *   it at the offset returned; SIO_NTB_IOC_MW_XLAT, to translate another
 *   window (another peer's) into that buffer, or to a bus address of this
 *   host (a device's BAR), where the hardware driver can (else -EOPNOTSUPP);
 * - reach a peer's memory: SIO_NTB_IOC_PEER_MW, then mmap() the outbound
 *   window (write-combining);
 * - where the hardware translates outbound (SIO_NTB_F_OUTBOUND_XLAT, IDT):
 *   the peer allocates a buffer (SIO_NTB_IOC_MW_ALLOC with
 *   SIO_NTB_BUF_PEER_XLAT: no inbound translation exists to set) and tells
 *   this port its bus address, which this port's outbound window is then
 *   translated to (SIO_NTB_IOC_PEER_MW_XLAT);
 * - notify: SIO_NTB_IOC_DB_RING; be notified: read() or poll() (doorbells,
 *   messages and link changes), or an eventfd per doorbell bit, or for
 *   messages (SIO_NTB_IOC_DB_EVENTFD);
 * - bootstrap: scratchpads (SIO_NTB_IOC_SPAD_READ, SIO_NTB_IOC_SPAD_WRITE)
 *   where the device has them (SIO_NTB_F_SPADS), else message registers
 *   (SIO_NTB_F_MSGS: SIO_NTB_IOC_MSG_SEND, SIO_NTB_IOC_MSG_RECV).
 *
 * The NTB framework's conventions, which user code follows:
 *
 * - Peers are named by index (0 .. peers - 1); their port numbers are in
 *   struct sio_ntb_peer. A mask of peers is by index.
 * - Outbound windows are numbered across peers. Where the hardware has no
 *   outbound translation (no SIO_NTB_F_OUTBOUND_XLAT), outbound window w
 *   reaches peer w / mws_per_peer, its inbound window w % mws_per_peer
 *   (on two-port hardware, all windows reach the one peer).
 * - On multi-port hardware a doorbell ring names no peer: the bits reach the
 *   peers the hardware routes them to (every peer, on IDT-like hardware and
 *   ntb_hw_ivshmem); peers agree on which bits are whose.
 *
 * Every call returns 0 or fails with an errno: -EINVAL for a bad argument (a
 * peer, window, bit or scratchpad out of range, a size beyond the window, a
 * flag this version does not define), -E2BIG for a struct larger than this
 * version's whose extra bytes are not 0, -ENOTCONN when the peer's link is
 * down, -EBUSY when another open file holds the window (or a buffer is still
 * mapped, or translated into), -ENODEV once the NTB device is gone, -ENOTTY for
 * an unknown request, -EOPNOTSUPP for a request the device's hardware cannot do
 * (SIO_NTB_IOC_INFO's flags say which it can). Buffers and windows belong to
 * the open file: the processes that share it (fork, SCM_RIGHTS) map them as
 * often as they like, no other. A process that dies releases its buffers,
 * translations, windows and eventfds. Pages are filled in at first touch. When
 * a peer's link goes down (or goes down and comes back) its outbound mappings
 * are revoked before the processes are told: a revoked mapping is one page of
 * its own, repeated, that starts all ones; loads read all ones until the
 * process stores there, and its stores reach no peer. Map the window again once
 * the link is back (MAP_FIXED over the revoked mapping replaces it; -ENOTCONN
 * while the link is down). When the NTB device goes (hot unbind, its driver
 * unloaded) every mapping is revoked the same way; read() returns the events
 * that came before (a link going down with it, say), then fails with -ENODEV;
 * poll() reports POLLHUP.
 */

#include <linux/const.h>
#include <linux/ioctl.h>
#include <linux/types.h>

/*
 * 2: sio_ntb_peer_mw.bus_addr; translations into own buffers.
 * 3: ioctl magic 0xBE (0xB5 is rpmsg's); flags (0) in the requests that
 *    take options; requests of another size negotiated; mmap offsets below
 *    2^43, which 32-bit processes reach. Version 2 requests are refused.
 * 4: outbound translation (SIO_NTB_IOC_PEER_MW_XLAT), message registers
 *    (SIO_NTB_IOC_MSG_*, events), the device's features in
 *    sio_ntb_info.flags, SIO_NTB_BUF_PEER_XLAT; inbound windows counted
 *    when used (a driver may have none until the link is up).
 * 5: SIO_NTB_F_BAR_XLAT_EMULATED.
 */
#define SIO_NTB_UAPI_VERSION	5
#define SIO_NTB_DEV_FMT		"/dev/smartio-ntb%d"
#define SIO_NTB_MAX_PEERS	64	/* peer masks are 64 bits */
/* pidx of this port's own scratchpads */
#define SIO_NTB_LOCAL		0xffffffffu

/* struct sio_ntb_info flags */
#define SIO_NTB_F_INBOUND_XLAT	_BITUL(0)	/* inbound windows translate */
#define SIO_NTB_F_OUTBOUND_XLAT	_BITUL(1)	/* outbound windows translate */
#define SIO_NTB_F_SPADS		_BITUL(2)	/* scratchpads */
#define SIO_NTB_F_MSGS		_BITUL(3)	/* message registers */
#define SIO_NTB_F_DB_VECTORS	_BITUL(4)	/* doorbell bits per vector */
#define SIO_NTB_F_PORTS		_BITUL(5)	/* port numbers of its own */
/*
 * An inbound translation onto a bus address outside the NTB's memory (a
 * device's BAR), where the driver accepts one, is emulated in software (the
 * driver forwards what peers store), not done by the hardware
 */
#define SIO_NTB_F_BAR_XLAT_EMULATED _BITUL(6)

/**
 * struct sio_ntb_info - the NTB device (SIO_NTB_IOC_INFO)
 * @version:	SIO_NTB_UAPI_VERSION
 * @port:	this port's number
 * @peers:	number of peers
 * @flags:	SIO_NTB_F_*
 * @peer_mws:	outbound windows
 * @mws_per_peer: outbound windows per peer in the numbering above (0: the
 *		windows do not divide among the peers)
 * @spads:	scratchpads (each port's, the same count)
 * @db_vectors:	doorbell interrupt vectors
 * @db_valid:	the doorbell bits that exist
 * @link:	peers (bit per index) whose link is up
 * @link_gen:	the device's link generation: one more at every change
 * @name:	the NTB device's name (its PCI function's)
 * @driver:	its hardware driver
 * @msgs:	message registers (0: none)
 * @reserved:	0
 * @msg_inbits:	the hardware's inbound message status bits (informative)
 * @msg_outbits: its outbound ones
 */
struct sio_ntb_info {
	__u32 version;
	__s32 port;
	__u32 peers;
	__u32 flags;
	__u32 peer_mws;
	__u32 mws_per_peer;
	__u32 spads;
	__u32 db_vectors;
	__u64 db_valid;
	__u64 link;
	__u64 link_gen;
	char name[32];
	char driver[32];
	__u32 msgs;
	__u32 reserved;
	__u64 msg_inbits;
	__u64 msg_outbits;
};

/**
 * struct sio_ntb_peer - one peer (SIO_NTB_IOC_PEER)
 * @pidx:	in: its index
 * @port:	its port number
 * @link_up:	1 while its link is up
 * @mws:	inbound windows this port offers it
 * @link_gen:	the device's link generation when its link last changed:
 *		a new value means the peer came back (rebooted): its buffers
 *		are new
 */
struct sio_ntb_peer {
	__u32 pidx;
	__s32 port;
	__u32 link_up;
	__u32 mws;
	__u64 link_gen;
};

/**
 * struct sio_ntb_mw - an inbound window (SIO_NTB_IOC_MW); its link must be up
 * @pidx:	in: the peer
 * @widx:	in: the window
 * @addr_align:	a translation's address alignment
 * @size_align:	its size alignment
 * @size_max:	the largest translation
 * @size:	the size of this process's buffer or translation (0: none)
 * @mmap_offset: where to mmap() this process's buffer
 */
struct sio_ntb_mw {
	__u32 pidx;
	__u32 widx;
	__u64 addr_align;
	__u64 size_align;
	__u64 size_max;
	__u64 size;
	__u64 mmap_offset;
};

#define SIO_NTB_BUF_PEER_XLAT	_BITULL(0)

/**
 * struct sio_ntb_buf - allocate an inbound buffer and translate the window
 *			to it (SIO_NTB_IOC_MW_ALLOC); SIO_NTB_IOC_MW_FREE
 *			undoes it
 * @pidx:	in: the peer
 * @widx:	in: the window
 * @size:	in: bytes (0: the window's size_max), rounded up to size_align;
 *		out: the buffer's size
 * @dma_addr:	its bus address (what the window is translated to)
 * @mmap_offset: where to mmap() it
 * @flags:	in: 0, or SIO_NTB_BUF_PEER_XLAT where the hardware translates
 *		outbound only (SIO_NTB_F_OUTBOUND_XLAT without
 *		SIO_NTB_F_INBOUND_XLAT): the buffer is allocated, no window
 *		is translated to it (there is no inbound translation: without
 *		the flag, -EOPNOTSUPP), and the peer translates its outbound
 *		window to @dma_addr (SIO_NTB_IOC_PEER_MW_XLAT)
 */
struct sio_ntb_buf {
	__u32 pidx;
	__u32 widx;
	__u64 size;
	__u64 dma_addr;
	__u64 mmap_offset;
	__u64 flags;
};

/**
 * struct sio_ntb_xlat - translate an inbound window to a bus address of this
 *			 host (SIO_NTB_IOC_MW_XLAT): a size of 0 clears the
 *			 translation. An address inside one of the file's
 *			 own buffers (to export it to a second peer, or a
 *			 part of it) needs no privilege; anywhere else,
 *			 CAP_SYS_RAWIO
 * @pidx:	the peer
 * @widx:	the window
 * @addr:	the bus address (aligned to addr_align)
 * @size:	the size (a multiple of size_align, at most size_max)
 * @flags:	0 (none is defined yet: anything else is EINVAL)
 */
struct sio_ntb_xlat {
	__u32 pidx;
	__u32 widx;
	__u64 addr;
	__u64 size;
	__u64 flags;
};

/**
 * struct sio_ntb_peer_mw - an outbound window (SIO_NTB_IOC_PEER_MW)
 * @widx:	in: the window
 * @pidx:	the peer it reaches (see the numbering above; ~0: not known)
 * @size:	its size
 * @mmap_offset: where to mmap() it
 * @bus_addr:	its bus address, which a device of this host is given to
 *		reach the peer through it without an IOMMU (0: not known)
 *
 * A window translated outbound (SIO_NTB_IOC_PEER_MW_XLAT) reaches the peer
 * and the size the translation says.
 */
struct sio_ntb_peer_mw {
	__u32 widx;
	__u32 pidx;
	__u64 size;
	__u64 mmap_offset;
	__u64 bus_addr;
};

/**
 * struct sio_ntb_peer_xlat - translate an outbound window to a bus address
 *			      of a peer (SIO_NTB_IOC_PEER_MW_XLAT), where the
 *			      hardware translates outbound
 *			      (SIO_NTB_F_OUTBOUND_XLAT): a size of 0 clears
 *			      it. The window must not be mapped (-EBUSY): map
 *			      it once translated. The peer reaches whatever
 *			      is at that address: CAP_SYS_RAWIO
 * @pidx:	the peer
 * @widx:	the outbound window
 * @addr:	the peer's bus address (a page-aligned one: the window is
 *		mapped by pages; its driver's own alignment, mw_get_align's,
 *		is in struct sio_ntb_mw of the peer)
 * @size:	the size (at most the window's size_max)
 * @flags:	0 (none is defined yet: anything else is EINVAL)
 */
struct sio_ntb_peer_xlat {
	__u32 pidx;
	__u32 widx;
	__u64 addr;
	__u64 size;
	__u64 flags;
};

/**
 * struct sio_ntb_msg - a message (SIO_NTB_IOC_MSG_SEND, _RECV), where the
 *			device has message registers (SIO_NTB_F_MSGS)
 * @pidx:	send: the peer; receive: the sender
 * @midx:	the register (0 .. msgs - 1)
 * @value:	the message
 * @flags:	0 (none is defined yet: anything else is EINVAL)
 *
 * A send fails with -EAGAIN while the peer's register holds a message it
 * has not taken (the hardware reports it in the sender's status bits), and
 * with -ENOTCONN when the peer's link is down. smartio_ntb takes every
 * message as it arrives, which frees the register, and queues it for every
 * open file (SIO_NTB_MSG_QUEUE at most each: the oldest are dropped, and
 * counted in struct sio_ntb_event); receive takes the oldest of the file's
 * queue, -EAGAIN when it is empty.
 */
struct sio_ntb_msg {
	__u32 pidx;
	__u32 midx;
	__u32 value;
	__u32 flags;
};

#define SIO_NTB_MSG_QUEUE	64

#define SIO_NTB_EVENTFD_MSG	_BITULL(0)

/**
 * struct sio_ntb_db_eventfd - signal an eventfd at each ring of a doorbell bit
 *			      (SIO_NTB_IOC_DB_EVENTFD), or at each message
 * @bit:	the bit (with SIO_NTB_EVENTFD_MSG: 0)
 * @fd:		an eventfd, or -1 to stop
 * @flags:	0, or SIO_NTB_EVENTFD_MSG: at each message received instead
 *
 * With SIO_NTB_EVENTFD_MSG the eventfd is also signalled when it is set if
 * messages are queued already (those that waited in the registers while no
 * file was open are queued when one opens), so waiting on it alone loses none.
 */
struct sio_ntb_db_eventfd {
	__u32 bit;
	__s32 fd;
	__u64 flags;
};

/**
 * struct sio_ntb_spad - a scratchpad (SIO_NTB_IOC_SPAD_READ, _WRITE)
 * @pidx:	the peer whose scratchpad (its link must be up), or
 *		SIO_NTB_LOCAL
 * @sidx:	the scratchpad
 * @value:	read: out; write: in
 * @flags:	0 (none is defined yet: anything else is EINVAL)
 */
struct sio_ntb_spad {
	__u32 pidx;
	__u32 sidx;
	__u32 value;
	__u32 flags;
};

/**
 * struct sio_ntb_event - what read() returns: a process's events since its
 *			  last read; read() blocks until there is one
 * @db:		the doorbell bits rung
 * @link:	peers whose link is up now
 * @link_gen:	the device's link generation now (changed: look at the
 *		peers)
 * @msgs:	messages waiting in the file's queue (SIO_NTB_IOC_MSG_RECV);
 *		a new one is an event
 * @msgs_lost:	messages dropped from the queue, full, since the last read()
 *
 * read() of a buffer shorter than this struct (an older program's, at least
 * up to @link_gen) returns as much of it as fits.
 */
struct sio_ntb_event {
	__u64 db;
	__u64 link;
	__u64 link_gen;
	__u32 msgs;
	__u32 msgs_lost;
};

/**
 * SIO_NTB_MMAP_INBOUND() - the mmap() offset of a process's inbound buffer
 * @pidx: the peer
 * @widx: the inbound window (0 .. SIO_NTB_MMAP_MAX_IN - 1)
 *
 * Each buffer and window has SIO_NTB_MMAP_SPAN (4 GiB) of offsets; map from
 * its start or within. Every offset is below 2^43, which a 32-bit process
 * reaches (mmap2() takes offsets in pages, in 32 bits).
 */
#define SIO_NTB_MMAP_INBOUND(pidx, widx) \
	(((__u64)(pidx) << 36) | ((__u64)(widx) << 32))
/**
 * SIO_NTB_MMAP_OUTBOUND() - the mmap() offset of an outbound window
 * @widx: the outbound window (0 .. SIO_NTB_MMAP_MAX_OUT - 1)
 */
#define SIO_NTB_MMAP_OUTBOUND(widx) \
	(((__u64)1 << 42) | ((__u64)(widx) << 32))
#define SIO_NTB_MMAP_SPAN	_BITULL(32)
#define SIO_NTB_MMAP_MAX_IN	16	/* inbound windows mappable per peer */
#define SIO_NTB_MMAP_MAX_OUT	1024	/* outbound windows mappable */

/*
 * Requests: a struct of another size than this header's is negotiated, as
 * copy_struct_from_user() does: a smaller one (an older program) is read
 * as if its missing fields were 0 and written back as far as it goes; a
 * larger one (a newer program) is accepted when its extra bytes are 0,
 * E2BIG otherwise.
 */
#define SIO_NTB_IOC_MAGIC	0xbe
#define SIO_NTB_IOC_INFO \
	_IOR(SIO_NTB_IOC_MAGIC, 0x00, struct sio_ntb_info)
#define SIO_NTB_IOC_PEER \
	_IOWR(SIO_NTB_IOC_MAGIC, 0x01, struct sio_ntb_peer)
#define SIO_NTB_IOC_MW \
	_IOWR(SIO_NTB_IOC_MAGIC, 0x02, struct sio_ntb_mw)
#define SIO_NTB_IOC_MW_ALLOC \
	_IOWR(SIO_NTB_IOC_MAGIC, 0x03, struct sio_ntb_buf)
#define SIO_NTB_IOC_MW_FREE \
	_IOW(SIO_NTB_IOC_MAGIC, 0x04, struct sio_ntb_buf)
#define SIO_NTB_IOC_MW_XLAT \
	_IOW(SIO_NTB_IOC_MAGIC, 0x05, struct sio_ntb_xlat)
#define SIO_NTB_IOC_PEER_MW \
	_IOWR(SIO_NTB_IOC_MAGIC, 0x06, struct sio_ntb_peer_mw)
#define SIO_NTB_IOC_DB_RING \
	_IOW(SIO_NTB_IOC_MAGIC, 0x07, __u64)
#define SIO_NTB_IOC_DB_EVENTFD \
	_IOW(SIO_NTB_IOC_MAGIC, 0x08, struct sio_ntb_db_eventfd)
#define SIO_NTB_IOC_SPAD_READ \
	_IOWR(SIO_NTB_IOC_MAGIC, 0x09, struct sio_ntb_spad)
#define SIO_NTB_IOC_SPAD_WRITE \
	_IOW(SIO_NTB_IOC_MAGIC, 0x0a, struct sio_ntb_spad)
#define SIO_NTB_IOC_PEER_MW_XLAT \
	_IOW(SIO_NTB_IOC_MAGIC, 0x0b, struct sio_ntb_peer_xlat)
#define SIO_NTB_IOC_MSG_SEND \
	_IOW(SIO_NTB_IOC_MAGIC, 0x0c, struct sio_ntb_msg)
#define SIO_NTB_IOC_MSG_RECV \
	_IOWR(SIO_NTB_IOC_MAGIC, 0x0d, struct sio_ntb_msg)

#endif
