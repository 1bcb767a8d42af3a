/* SPDX-License-Identifier: MIT */
#ifndef SMARTIO_NVME_CLIENT_H
#define SMARTIO_NVME_CLIENT_H

/**
 * DOC: NVMe client
 *
 * A client borrows a shared NVMe controller, asks the manager (over its
 * mailbox) for I/O queue pairs placed where it chose, and then does I/O
 * with nothing between it and the controller: commands go into its SQ, the
 * doorbell is a store to the controller's BAR, completions are polled from
 * its CQ.
 *
 * Data buffers are segments mapped for the device (struct sio_nvme_buf).
 * Requests larger than the controller's transfer limit (MDTS) are split;
 * PRP lists are built in per-command pages allocated with the queue.
 * A queue pair is used by one thread at a time.
 *
 * Queue placement is chosen by access hints (the default) or by a queue
 * spec string: "location=local|lender|device|hint" for the SQ, and
 * optionally "cq=local|lender|hint", "depth=N", "prio=0..3", comma
 * separated. "device" puts the SQ in the controller memory buffer.
 *
 * Multipath ("multipath" in the spec, on a fabric whose nodes have two
 * adapters): the client borrows the controller a second time through
 * adapter 1 of the lender, maps the doorbells through its own adapter 1,
 * and keeps a backup queue pair whose memory and data buffers the
 * controller reaches through that second path. When the primary path fails
 * (a link-down event on either end, a data transfer error, or a timeout)
 * the queue pair is deleted in the controller, so nothing more of it runs,
 * and every command it held is resubmitted on the backup with a new
 * command id; the application's callbacks see no error. When the links come
 * back the primary is created again over its old memory (mapped again if
 * its mappings changed) and new commands go to it while the backup drains.
 * A multipath queue reads the fabric handle's events (sio_event_read()):
 * an application that also wants them should use a fabric handle of its
 * own.
 *
 * Confinement (see DOC: NVMe manager in manager.h): with doorbells a page
 * or more apart, a client maps only BAR0's register page (read-only) and
 * the doorbell pages of its own queues; sio_nvme_client_doorbells() does
 * it for queues made with sio_nvme_ioq_create_at().
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <smartio/nvme/ctrl.h>
#include <smartio/nvme/stats.h>

#ifdef __cplusplus
extern "C" {
#endif

struct sio_nvme_client;
struct sio_nvme_ioq;

/**
 * struct sio_nvme_buf - a data buffer the controller can reach
 * @seg: its segment
 * @va: mapped here
 * @bus: the controller's address for @va
 * @size: bytes
 * @bus2: the controller's address for @va through the second path of a
 *	multipath client (0 until the client has one; then filled in by
 *	sio_nvme_buf_alloc(), or at the buffer's first use on a multipath queue)
 * @off: where @va starts in @seg: buffers share the client's arena, one
 *	segment mapped once for the device, so a remote client holds one
 *	window of the lender's adapter ($SMARTIO_NVME_ARENA_MB, default 64;
 *	a buffer that does not fit gets a segment of its own, @off 0)
 */
struct sio_nvme_buf {
	struct sio_segment *seg;
	void *va;
	uint64_t bus;
	uint64_t size;
	uint64_t bus2;
	uint64_t off;
};

/* Where a queue goes; the SIO_PLACE_* values, or by hints. */
#define SIO_NVME_QLOC_HINT	(-1)

/**
 * struct sio_nvme_qspec - how to place and size a queue pair
 * @sq_loc: SIO_PLACE_LOCAL, SIO_PLACE_LENDER, SIO_PLACE_DEVICE (CMB) or
 *	SIO_NVME_QLOC_HINT
 * @cq_loc: SIO_PLACE_LOCAL, SIO_PLACE_LENDER or SIO_NVME_QLOC_HINT
 * @depth: queue entries, 2..4096 (SIO_NVME_QUEUE_MAX_SIZE); 0: 256; capped
 *	by CAP.MQES
 * @prio: SQ priority for weighted round robin, 0 (urgent) .. 3 (low)
 * @multipath: keep a backup queue pair through adapter 1 and fail over to
 *	it ("multipath" or "multipath=1" in a spec string)
 * @dptr: data pointers: SIO_NVME_DPTR_AUTO (SGLs where the controller takes
 *	them and sio_nvme_sgl_wanted() says so, PRPs otherwise), _PRP or _SGL
 *	("dptr=auto|prp|sgl")
 * @dbbuf: ringing by EventIdx, where the manager offers shadow doorbells:
 *	SIO_NVME_DBBUF_AUTO (when they are in this node's memory: from another
 *	node, reading EventIdx is a non-posted read across the fabric on every
 *	ring, where an MMIO doorbell is one posted write), _ON or _OFF
 *	("dbbuf=auto|on|off"). Whatever the choice, a queue writes its shadow
 *	doorbells when the controller has them (it may read those alone);
 *	without EventIdx it rings MMIO every time. Multipath queues keep MMIO
 *	doorbells only.
 * @completions: how sio_nvme_ioq_reap() and sio_nvme_ioq_wait() wait: SIO_NVME_CPL_POLL (spin),
 *	_IRQ (sleep on the CQ's interrupt), _ADAPTIVE (spin while
 *	completions keep coming, sleep when they stop) or _HYBRID (no
 *	interrupt: sleep for about the time half of what is in flight takes
 *	at the device's pace, then poll); "completions=poll|irq|adaptive|
 *	hybrid". Interrupts need a manager that gives the CQ a vector
 *	and a device that delivers them to this borrower: where it does not,
 *	_IRQ is refused and _ADAPTIVE polls (sio_nvme_ioq_info() says why).
 */
struct sio_nvme_qspec {
	int sq_loc;
	int cq_loc;
	uint32_t depth;
	uint32_t prio;
	bool multipath;
	int dptr;
	int dbbuf;
	int completions;
};

/* struct sio_nvme_qspec.completions */
#define SIO_NVME_CPL_POLL	0
#define SIO_NVME_CPL_IRQ	1
#define SIO_NVME_CPL_ADAPTIVE	2
#define SIO_NVME_CPL_HYBRID	3

/**
 * sio_nvme_completions_name() - "poll", "irq", "adaptive" or "hybrid"
 * @mode: SIO_NVME_CPL_*
 */
const char *sio_nvme_completions_name(int mode);

#define SIO_NVME_DPTR_AUTO	0
#define SIO_NVME_DPTR_PRP	1
#define SIO_NVME_DPTR_SGL	2

/**
 * struct sio_nvme_ioq_info - a queue pair as created
 * @qid: queue id the manager assigned
 * @depth: entries per queue
 * @max_inflight: commands in flight at most (@depth - 1)
 * @sq_place: where the SQ went (enum sio_placement)
 * @cq_place: where the CQ went
 * @multipath: the queue keeps a backup path
 * @path: where new commands go now: 0 the primary, 1 the backup, -1 neither
 *	(both paths down; commands wait, up to the timeout)
 * @backup_qid: the backup queue pair's id (0 while it does not exist)
 * @failovers: times the primary failed and its commands moved to the backup
 * @restores: times the primary was created again and took over
 * @resubmitted: commands sent again on another queue pair
 * @stale: completions consumed and not delivered: their command had been
 *	moved to the other path, had already completed, or was never issued
 *	(a late, repeated or forged completion; see struct sio_nvme_queue)
 * @sgl_cmds: reads and writes sent with an SGL data pointer (the rest: PRPs)
 * @shadow_doorbells: rings go to the manager's shadow doorbells, and to
 *	BAR0 only when the controller's EventIdx asks (not on multipath queues)
 * @db_writes: MMIO doorbell writes (SQ and CQ) since the queue pair was made
 * @recoveries: times the queue pair was made again, and what it had in flight
 *	sent again: after the manager reset the controller, or after a timeout
 *	(the manager deleted it, ending what the controller held)
 * @timeouts: times commands made no progress for the client's timeout
 *	(sio_nvme_client_set_timeout()); each led to a recovery, a failover
 *	or, at last, errors
 * @completions: the completion mode in force (SIO_NVME_CPL_*)
 * @irq_vector: the CQ's interrupt vector (-1: none)
 * @completions_note: why @completions is not what the spec asked ("" if it is)
 * @sleeps: sleeps on the CQ's interrupt (sio_nvme_ioq_reap())
 * @wakeups_lost: sleeps that ended by their bound, not by an interrupt, and
 *	found completions (an interrupt lost or coalesced away)
 * @sleeps_direct: of @sleeps, those of an adaptive queue taken at once,
 *	without a spin first: its completions had stopped (none reaped since
 *	its last wait, which ended longer ago than the longest spin)
 * @link_flaps: times the queue paused because a link on the way to the
 *	lender was down, and went on once it was up ($SMARTIO_NVME_LINK_GRACE_MS)
 * @paused_ns: how long those pauses took, in all
 * @inflight: commands in flight now (sio_nvme_ioq_inflight())
 * @sq_tail: the primary SQ's next entry to fill
 * @sq_rung: the SQ tail last written to its doorbell (behind @sq_tail while
 *	rings are held or left to the shadow doorbell)
 * @sq_head: the SQ head the controller last reported in a completion
 * @cq_head: the primary CQ's next entry to look at
 * @cq_phase: the phase tag a new entry there has
 * @cq_head_phase: the phase tag the entry at @cq_head holds now: equal to
 *	@cq_phase, a completion is there and not yet taken
 *
 * @inflight to @cq_head_phase are for a queue that makes no progress: what
 * was sent, rung and completed (a client's dump of its state, when asked).
 */
struct sio_nvme_ioq_info {
	uint16_t qid;
	uint32_t depth;
	uint32_t max_inflight;
	int sq_place;
	int cq_place;
	bool multipath;
	int path;
	uint16_t backup_qid;
	uint32_t failovers;
	uint32_t restores;
	uint64_t resubmitted;
	uint64_t stale;
	uint64_t sgl_cmds;
	bool shadow_doorbells;
	uint64_t db_writes;
	uint32_t recoveries;
	uint32_t timeouts;
	int completions;
	int irq_vector;
	char completions_note[160];
	uint64_t sleeps;
	uint64_t wakeups_lost;
	uint64_t sleeps_direct;
	uint32_t link_flaps;
	uint64_t paused_ns;
	uint32_t inflight;
	uint16_t sq_tail;
	uint16_t sq_rung;
	uint16_t sq_head;
	uint16_t cq_head;
	uint8_t cq_phase;
	uint8_t cq_head_phase;
};

/**
 * typedef sio_nvme_io_cb - completion callback
 * @arg: the caller's argument
 * @err: 0, -EIO (the controller reported @status), -ETIMEDOUT, -ENODEV
 * @status: NVMe status (SCT << 8 | SC), 0 on success
 */
typedef void (*sio_nvme_io_cb)(void *arg, int err, uint16_t status);

/**
 * sio_nvme_qspec_parse() - read a queue spec string
 * @s: e.g. "location=lender,depth=64"; NULL or "" gives the defaults
 * @out: filled in (hints for both queues, depth 0, prio 0, no multipath by
 *	default)
 * Return: 0 or -EINVAL naming the bad key or value.
 */
int sio_nvme_qspec_parse(const char *s, struct sio_nvme_qspec *out);

/**
 * sio_nvme_client_open() - connect to the manager serving a controller
 * @f: fabric handle (the client's node)
 * @device: device id, or SIO_DEVICE_ANY for the first NVMe controller
 * @out: the client
 *
 * Borrows the device shared, finds the manager's mailbox, claims a slot and
 * maps the doorbells.
 * Return: 0; -ENOENT (no such device, or no manager serves it), -EBUSY
 * (borrowed exclusively by someone else), -ENOSPC (mailbox full).
 */
int sio_nvme_client_open(struct sio_fabric *f, uint32_t device,
			 struct sio_nvme_client **out);

/**
 * sio_nvme_client_close() - delete this client's queues and leave
 * @cl: client (NULL is ignored); its queue pairs must be destroyed first,
 *	or are destroyed here
 */
void sio_nvme_client_close(struct sio_nvme_client *cl);

/**
 * sio_nvme_client_info() - the controller as the manager brought it up
 * @cl: client
 * @out: filled in (cmb.size is 0 without a CMB)
 * Return: 0, or -EINVAL for a NULL argument.
 */
int sio_nvme_client_info(const struct sio_nvme_client *cl, struct sio_nvme_ctrl_info *out);

/**
 * sio_nvme_client_device() - the client's borrow of the controller
 * @cl: client
 */
struct sio_device *sio_nvme_client_device(const struct sio_nvme_client *cl);

/**
 * sio_nvme_client_manager_node() - node the manager serves from
 * @cl: client
 */
int sio_nvme_client_manager_node(const struct sio_nvme_client *cl);

/**
 * sio_nvme_client_identify() - Identify through the manager
 * @cl: client
 * @cns: Controller or Namespace Structure (libnvme's NVME_IDENTIFY_CNS_*)
 * @nsid: namespace for CNS 0/2
 * @out: 4096 bytes; the controller writes them into the client's memory
 */
int sio_nvme_client_identify(struct sio_nvme_client *cl, uint8_t cns, uint32_t nsid,
			     void *out);

/**
 * sio_nvme_client_get_log() - Get Log Page through the manager
 * @cl: client
 * @lid: log page id
 * @nsid: namespace, 0xffffffff for the controller
 * @out: destination
 * @len: bytes, multiple of 4, at most 8192
 */
int sio_nvme_client_get_log(struct sio_nvme_client *cl, uint8_t lid, uint32_t nsid,
			    void *out, uint32_t len);

/**
 * sio_nvme_client_get_features() - Get Features through the manager
 * @cl: client
 * @fid: feature id
 * @cdw11: feature specific
 * @result: completion DW0
 */
int sio_nvme_client_get_features(struct sio_nvme_client *cl, uint8_t fid, uint32_t cdw11,
				 uint32_t *result);

/**
 * sio_nvme_client_get_features_ns() - Get Features of a namespace, through
 * the manager
 * @cl: client
 * @fid: feature id
 * @nsid: the namespace (sio_nvme_feat_ns_scoped()), or 0
 * @cdw11: feature specific
 * @result: completion DW0
 */
int sio_nvme_client_get_features_ns(struct sio_nvme_client *cl, uint8_t fid, uint32_t nsid,
				    uint32_t cdw11, uint32_t *result);

/**
 * sio_nvme_client_ns() - a namespace's geometry (cached after the first call)
 * @cl: client
 * @nsid: namespace id
 * @out: filled in
 * Return: 0, -ENOENT if the namespace does not exist or is inactive.
 */
int sio_nvme_client_ns(struct sio_nvme_client *cl, uint32_t nsid, struct sio_nvme_ns *out);

/**
 * sio_nvme_client_set_timeout() - bound on an I/O that makes no progress
 * @cl: client
 * @ms: milliseconds (0 restores the default: CAP.TO, at least 2 s)
 */
void sio_nvme_client_set_timeout(struct sio_nvme_client *cl, uint32_t ms);

/**
 * sio_nvme_buf_alloc() - a data buffer in this node's memory for the device
 * @cl: client
 * @size: bytes
 * @out: the buffer
 */
int sio_nvme_buf_alloc(struct sio_nvme_client *cl, uint64_t size, struct sio_nvme_buf **out);

/**
 * sio_nvme_buf_close() - unmap and free a buffer
 * @cl: client
 * @b: buffer (NULL is ignored)
 */
void sio_nvme_buf_close(struct sio_nvme_client *cl, struct sio_nvme_buf *b);

/**
 * sio_nvme_ioq_create() - place a queue pair and have the manager create it
 * @cl: client
 * @spec: placement and depth (NULL: by hints, depth 256)
 * @out: the queue pair
 * Return: 0; -ENOSPC when the controller has no queue pair left (the
 * message says how many it has; a multipath queue takes two); -EINVAL for
 * a bad spec (a depth above 4096, say), or multipath on a fabric with one
 * adapter per node; -ENODEV for location=device without a CMB.
 */
int sio_nvme_ioq_create(struct sio_nvme_client *cl, const struct sio_nvme_qspec *spec,
			struct sio_nvme_ioq **out);

/**
 * sio_nvme_ioq_close() - delete a queue pair; commands in flight are lost
 * @q: queue pair (NULL is ignored)
 */
void sio_nvme_ioq_close(struct sio_nvme_ioq *q);

/**
 * sio_nvme_ioq_create_at() - have the manager create a queue pair in memory
 *	the caller placed (GPU memory, a CMB, a benchmark's chosen spot)
 * @cl: client
 * @sq_bus: the SQ's address as the controller sees it (mapped for the
 *	device by the caller, aligned to the controller's page size)
 * @cq_bus: the CQ's address, likewise; the caller zeroes the CQ first
 * @depth: entries in each queue, 2..CAP.MQES
 * @prio: SQ priority for weighted round robin, 0 (urgent) .. 3 (low)
 * @qid: the queue id the manager assigned
 *
 * The queues belong to this client's mailbox slot: only it may delete them,
 * and sio_nvme_client_close() (or the client's death) deletes them. The
 * caller drives them itself (with queue.h, which takes at most 4096
 * entries) and keeps their memory mapped until sio_nvme_ioq_delete_at().
 * Return: 0; -EINVAL for a bad depth, priority or address; -ENOSPC when the
 * controller has no queue pair left.
 */
int sio_nvme_ioq_create_at(struct sio_nvme_client *cl, uint64_t sq_bus, uint64_t cq_bus,
			   uint32_t depth, uint32_t prio, uint16_t *qid);

/**
 * sio_nvme_ioq_delete_at() - delete a queue pair made by sio_nvme_ioq_create_at()
 * @cl: client
 * @qid: its queue id
 *
 * Commands still in flight on it are lost; its memory may be freed after.
 * Return: 0; -EINVAL for an id out of range; -EPERM for a queue this
 * client does not own.
 */
int sio_nvme_ioq_delete_at(struct sio_nvme_client *cl, uint16_t qid);

/**
 * struct sio_nvme_doorbells - one queue pair's doorbells, mapped here
 * @sq_db: SQ tail doorbell
 * @cq_db: CQ head doorbell
 * @va: start of the mapping that holds them (page aligned)
 * @len: its bytes (for registering it with CUDA, say)
 * @seg: the mapping's own BAR0 handle; NULL when the client's whole-BAR0
 *	mapping serves (doorbells less than a page apart)
 */
struct sio_nvme_doorbells {
	volatile uint32_t *sq_db;
	volatile uint32_t *cq_db;
	void *va;
	uint64_t len;
	struct sio_segment *seg;
};

/**
 * sio_nvme_client_doorbells() - map the doorbells of a queue pair made with
 *	sio_nvme_ioq_create_at()
 * @cl: client
 * @qid: its queue id
 * @out: filled in
 *
 * Confined (manager.h), maps only that queue's SQ tail and CQ head doorbell
 * pages, which the manager granted this process; otherwise points into the
 * client's mapping of the whole BAR0. Release
 * with sio_nvme_client_doorbells_unmap() before sio_nvme_ioq_delete_at().
 * Return: 0; -EINVAL for an id out of range; -EACCES for a queue whose
 * doorbells were not granted to this process.
 */
int sio_nvme_client_doorbells(struct sio_nvme_client *cl, uint16_t qid,
			      struct sio_nvme_doorbells *out);

/**
 * sio_nvme_client_doorbells_unmap() - undo sio_nvme_client_doorbells()
 * @db: doorbells (zeroed on return; a zeroed one is ignored)
 */
void sio_nvme_client_doorbells_unmap(struct sio_nvme_doorbells *db);

/**
 * sio_nvme_client_events() - the controller's asynchronous events, as the
 *	manager took them
 * @cl: client
 * @seq: in: events seen so far (0 at first); out: advanced past those read
 * @dw0: each event's Asynchronous Event Request DW0 (SIO_NVME_AEN_TYPE(),
 *	_INFO(), _LID() in ctrl.h)
 * @max: room in @dw0
 *
 * The manager keeps the last 16; older ones are skipped. For a wake-up,
 * the client's fabric events (sio_event_fd()) carry SIO_EV_DEVICE_NOTICE
 * with the same DW0 in info, from the manager, while this process borrows
 * the device.
 * Return: events read (0: none new), or -errno (-EAGAIN: overrun while
 * reading, ask again).
 */
int sio_nvme_client_events(struct sio_nvme_client *cl, uint32_t *seq, uint32_t *dw0,
			   uint32_t max);

/**
 * sio_nvme_ioq_info() - describe a queue pair
 * @q: queue pair
 * @out: filled in
 * Return: 0, or -EINVAL for a NULL argument.
 */
int sio_nvme_ioq_info(const struct sio_nvme_ioq *q, struct sio_nvme_ioq_info *out);

/**
 * sio_nvme_ioq_read() - submit a read (asynchronous)
 * @q: queue pair
 * @nsid: namespace
 * @slba: first block
 * @nlb: blocks (split into several commands above the transfer limit)
 * @buf: destination buffer
 * @off: byte offset in @buf (a multiple of 4, any byte when the queue may
 *	use SGLs and the controller takes data blocks at any byte)
 * @cb: called from sio_nvme_ioq_poll() when every part is done
 * @arg: passed to @cb
 * Return: 0, and @cb will be called exactly once; or an error, and nothing
 * was submitted and @cb will not be called: -EAGAIN when the queue lacks
 * room (poll, then retry); -EINVAL for a range outside the namespace or the
 * buffer; -ENODEV, -ETIMEDOUT or -EIO once the queue has failed.
 */
int sio_nvme_ioq_read(struct sio_nvme_ioq *q, uint32_t nsid, uint64_t slba, uint32_t nlb,
		      struct sio_nvme_buf *buf, uint64_t off, sio_nvme_io_cb cb, void *arg);

/** sio_nvme_ioq_write() - submit a write (asynchronous); as sio_nvme_ioq_read() */
int sio_nvme_ioq_write(struct sio_nvme_ioq *q, uint32_t nsid, uint64_t slba, uint32_t nlb,
		       struct sio_nvme_buf *buf, uint64_t off, sio_nvme_io_cb cb, void *arg);

/**
 * sio_nvme_ioq_write_zeroes() - submit Write Zeroes (asynchronous)
 * @q: queue pair
 * @nsid: namespace
 * @slba: first block
 * @nlb: blocks
 * @cb: called from sio_nvme_ioq_poll() when it is done
 * @arg: passed to @cb
 * Return: as sio_nvme_ioq_read(), and -ENOTSUP if the controller lacks it.
 */
int sio_nvme_ioq_write_zeroes(struct sio_nvme_ioq *q, uint32_t nsid, uint64_t slba,
			      uint32_t nlb, sio_nvme_io_cb cb, void *arg);

/**
 * sio_nvme_ioq_verify() - submit Verify: the controller checks the blocks
 *	are readable, nothing moves (asynchronous)
 * @q: queue pair
 * @nsid: namespace
 * @slba: first block
 * @nlb: blocks
 * @cb: called from sio_nvme_ioq_poll() when it is done
 * @arg: passed to @cb
 * Return: as sio_nvme_ioq_write_zeroes(); -ENOTSUP without ONCS Verify.
 */
int sio_nvme_ioq_verify(struct sio_nvme_ioq *q, uint32_t nsid, uint64_t slba, uint32_t nlb,
			sio_nvme_io_cb cb, void *arg);

/**
 * sio_nvme_ioq_deallocate() - submit Dataset Management with Deallocate for
 *	one range (asynchronous): the blocks read afterwards as the namespace's
 *	DLFEAT says (zeroes on the emulated controller)
 * @q: queue pair
 * @nsid: namespace
 * @slba: first block
 * @nlb: blocks
 * @cb: called from sio_nvme_ioq_poll() when it is done
 * @arg: passed to @cb
 * Return: as sio_nvme_ioq_write_zeroes(); -ENOTSUP without ONCS DSM.
 */
int sio_nvme_ioq_deallocate(struct sio_nvme_ioq *q, uint32_t nsid, uint64_t slba, uint32_t nlb,
			    sio_nvme_io_cb cb, void *arg);

/**
 * sio_nvme_ioq_compare() - submit Compare of @buf with the blocks
 *	(asynchronous); a difference completes with Compare Failure (status
 *	SCT 2h, SC 85h)
 * @q: queue pair
 * @nsid: namespace
 * @slba: first block
 * @nlb: blocks
 * @buf: the data to compare with
 * @off: byte offset in @buf, as for sio_nvme_ioq_read()
 * @cb: called from sio_nvme_ioq_poll() when it is done
 * @arg: passed to @cb
 * Return: as sio_nvme_ioq_read(); -ENOTSUP without ONCS Compare.
 */
int sio_nvme_ioq_compare(struct sio_nvme_ioq *q, uint32_t nsid, uint64_t slba, uint32_t nlb,
			 struct sio_nvme_buf *buf, uint64_t off, sio_nvme_io_cb cb, void *arg);

/** sio_nvme_ioq_flush() - submit a Flush of a namespace (asynchronous) */
int sio_nvme_ioq_flush(struct sio_nvme_ioq *q, uint32_t nsid, sio_nvme_io_cb cb, void *arg);

/**
 * sio_nvme_ioq_poll() - reap completions, calling their callbacks
 * @q: queue pair
 * @max: most completions to take (0: all there are)
 *
 * Never blocks, except that a multipath queue changing paths waits for the
 * manager to delete or create a queue pair. When commands are in flight and
 * none completes for longer than the timeout, every one of them ends with
 * -ETIMEDOUT (or -ENODEV if the controller is gone) and the queue is
 * failed; a multipath queue first fails over, and fails only when no path
 * makes progress.
 * Return: completions reaped, or -ETIMEDOUT/-ENODEV/-EIO once failed.
 */
int sio_nvme_ioq_poll(struct sio_nvme_ioq *q, uint32_t max);

/* Longest single sleep of sio_nvme_ioq_reap(): a lost interrupt costs this. */
#define SIO_NVME_WAIT_SLEEP_MS	10

/**
 * sio_nvme_ioq_reap() - reap completions, waiting for one as the queue's
 *	completion mode says
 * @q: queue pair
 * @max: most completions to take (0: all there are)
 * @timeout_us: how long to wait for the first (0: as sio_nvme_ioq_poll())
 * @slept_ns: if not NULL, time spent asleep is added here (for accounting
 *	off-CPU time, <smartio/nvme/stats.h>)
 *
 * SIO_NVME_CPL_POLL spins on the CQ; _IRQ polls once and, with nothing
 * there, sleeps on the CQ's interrupt; _ADAPTIVE spins while completions
 * came within the last few microseconds and sleeps otherwise. Every sleep
 * is bounded (SIO_NVME_WAIT_SLEEP_MS) and followed by a poll, so a lost
 * interrupt delays a completion and never hangs the caller. _HYBRID, with
 * two or more in flight, sleeps (nanosleep) for about the time half of
 * them take, at the pace the device kept over the last windows of 256
 * completions this function returned, then polls, sleeping one
 * completion's time between polls; with one in flight it polls. Its sleeps
 * are short: a caller that wants them kept short sets its timer slack
 * (prctl(PR_SET_TIMERSLACK), 50 us by default).
 * Return: completions reaped (0: none within @timeout_us, or nothing in
 * flight), or as sio_nvme_ioq_poll().
 */
int sio_nvme_ioq_reap(struct sio_nvme_ioq *q, uint32_t max, uint32_t timeout_us,
		      uint64_t *slept_ns);

/**
 * sio_nvme_ioq_hold() - batch SQ doorbell writes
 * @q: queue pair
 * @on: true: submissions write their commands into the SQ but not the
 *	doorbell; sio_nvme_ioq_ring(), or the next sio_nvme_ioq_poll(), tells
 *	the controller of all of them with one MMIO write. false (the default):
 *	every submission rings; turning it off rings what was held.
 *
 * For callers that submit in batches (fio's commit hook, a benchmark's
 * loop): one doorbell write per batch instead of per command.
 * Return: 0; -EINVAL to hold on a multipath queue pair (its commands may
 * move to the other path, so it rings at every submission).
 */
int sio_nvme_ioq_hold(struct sio_nvme_ioq *q, bool on);

/**
 * sio_nvme_ioq_ring() - tell the controller of the commands held back
 * @q: queue pair; nothing is written when no command is new
 */
void sio_nvme_ioq_ring(struct sio_nvme_ioq *q);

/** sio_nvme_ioq_inflight() - commands submitted and not completed */
uint32_t sio_nvme_ioq_inflight(const struct sio_nvme_ioq *q);

/**
 * sio_nvme_ioq_wait() - poll until nothing is in flight, backing off
 * @q: queue pair; one with interrupts (struct sio_nvme_qspec.completions)
 *	sleeps on them instead of backing off
 * Return: 0, or the queue's failure.
 */
int sio_nvme_ioq_wait(struct sio_nvme_ioq *q);

/**
 * sio_nvme_read() - read blocks and wait for them (synchronous)
 * @q: queue pair
 * @nsid: namespace
 * @slba: first block
 * @nlb: blocks
 * @buf: destination buffer
 * @off: byte offset in @buf
 *
 * The synchronous forms submit as their sio_nvme_ioq_*() twins do, then
 * wait with bounded, backing-off polling. Every wait ends: a controller
 * that stops answering fails the queue after the client's timeout
 * (sio_nvme_client_set_timeout()), and every command in flight on it, this
 * one and other callers' asynchronous ones, ends with -ETIMEDOUT (-ENODEV
 * if the device is gone); a queue with no room for the command for as long
 * also gives -ETIMEDOUT.
 * Return: 0 or -errno; on -EIO sio_errmsg() names the NVMe status.
 */
int sio_nvme_read(struct sio_nvme_ioq *q, uint32_t nsid, uint64_t slba, uint32_t nlb,
		  struct sio_nvme_buf *buf, uint64_t off);

/** sio_nvme_write() - write blocks and wait (synchronous); as sio_nvme_read() */
int sio_nvme_write(struct sio_nvme_ioq *q, uint32_t nsid, uint64_t slba, uint32_t nlb,
		   struct sio_nvme_buf *buf, uint64_t off);

/** sio_nvme_write_zeroes() - Write Zeroes and wait; as sio_nvme_ioq_write_zeroes() */
int sio_nvme_write_zeroes(struct sio_nvme_ioq *q, uint32_t nsid, uint64_t slba, uint32_t nlb);

/** sio_nvme_flush() - Flush a namespace and wait; as sio_nvme_read() */
int sio_nvme_flush(struct sio_nvme_ioq *q, uint32_t nsid);

/** sio_nvme_verify() - Verify blocks and wait; as sio_nvme_ioq_verify() */
int sio_nvme_verify(struct sio_nvme_ioq *q, uint32_t nsid, uint64_t slba, uint32_t nlb);

/** sio_nvme_deallocate() - deallocate blocks and wait; as sio_nvme_ioq_deallocate() */
int sio_nvme_deallocate(struct sio_nvme_ioq *q, uint32_t nsid, uint64_t slba, uint32_t nlb);

/** sio_nvme_compare() - Compare and wait; as sio_nvme_ioq_compare() */
int sio_nvme_compare(struct sio_nvme_ioq *q, uint32_t nsid, uint64_t slba, uint32_t nlb,
		     struct sio_nvme_buf *buf, uint64_t off);

#ifdef __cplusplus
}
#endif
#endif
