/* SPDX-License-Identifier: MIT */
#ifndef SMARTIO_SEGMENT_H
#define SMARTIO_SEGMENT_H

/**
 * DOC: segments
 *
 * A segment is a contiguous memory region that lives on one node: host RAM,
 * a device BAR, GPU memory. It is named fabric-wide by (node, id). A local
 * segment is created and mapped; a remote one is connected and mapped
 * through the path, using one window of the mapping node's adapter.
 */

#include <stddef.h>
#include <stdint.h>
#include <smartio/fabric.h>

#ifdef __cplusplus
extern "C" {
#endif

struct sio_segment;

enum sio_segment_kind {
	SIO_SEG_RAM = 0,	/* host memory */
	SIO_SEG_BAR,		/* a device's BAR (registers, CMB) */
	SIO_SEG_GPU,		/* GPU memory */
};

/* The largest segment (and the largest window): 4 GiB. */
#define SIO_SEG_MAX_SIZE	(1ull << 32)

/* sio_segment_create() flags */
#define SIO_SEG_F_HUGE		(1u << 0)	/* require huge pages */
#define SIO_SEG_F_NOHUGE	(1u << 1)	/* never use huge pages */
/* Outlive the creator's crash: a process that dies holding the segment
 * leaves it, ownerless, with its contents; a later sio_segment_create() of
 * the same node and id with this flag adopts it (a restarted service's
 * state). A clean sio_segment_close() by the owner removes it as usual. */
#define SIO_SEG_F_KEEP		(1u << 2)
/* Memory is reserved when a segment is created, so that no room for it is
 * an error there (naming where and how much), never a SIGBUS later in
 * whichever process touches a page. With this flag only the ranges given
 * to sio_segment_reserve() are: for a large arena of which little is used;
 * its creator reserves each range before anyone (a device) writes it. */
#define SIO_SEG_F_LAZY		(1u << 3)

/**
 * struct sio_segment_info - what a segment is
 * @id: id, unique on its home node
 * @node: home node
 * @size: bytes
 * @kind: RAM, BAR or GPU
 * @device: for BAR segments, the device id; else -1
 * @bar: for BAR segments, the BAR index; else -1
 * @hugepages: backed by huge pages
 * @name: free-form label
 * @reach: how it is reached across kernels, where the fabric backend says
 *	(ntb: "own window ..." for a window translated to this segment alone,
 *	"pool window ..." for the window to all of its node's memory, and
 *	why): for a connected segment that is mapped, its mapping's; in
 *	sio_fabric_status_get(), every connected node's; else ""
 */
struct sio_segment_info {
	uint32_t id;
	int node;
	uint64_t size;
	enum sio_segment_kind kind;
	int device;
	int bar;
	bool hugepages;
	char name[SIO_NAME_MAX];
	char reach[160];
};

/**
 * sio_segment_create() - create a segment in this node's memory
 * @f: fabric handle
 * @id: segment id, or 0 to have one assigned
 * @size: bytes (rounded up to the page size)
 * @flags: SIO_SEG_F_*
 * @out: the segment, owned by this process until removed
 *
 * Huge pages are used when free; otherwise shared memory pages (said once).
 * With SIO_SEG_F_KEEP, an ownerless kept segment of that id and size is
 * adopted, contents and all, instead of refused.
 * Return: 0, -EEXIST (id taken), -ENOSPC (registry full), -EINVAL.
 */
int sio_segment_create(struct sio_fabric *f, uint32_t id, uint64_t size,
		       unsigned int flags, struct sio_segment **out);

/**
 * sio_segment_create_on() - create a segment homed on another node
 * @f: fabric handle
 * @node: home node
 * @id: segment id, or 0
 * @size: bytes
 * @flags: SIO_SEG_F_*
 * @out: the segment
 *
 * Used by hint-based placement (hint.h); the memory belongs to @node and is
 * reached from here through a window.
 */
int sio_segment_create_on(struct sio_fabric *f, int node, uint32_t id,
			  uint64_t size, unsigned int flags,
			  struct sio_segment **out);

/**
 * sio_segment_connect() - look up a segment by (node, id)
 * @f: fabric handle
 * @node: its home node
 * @id: its id
 * @out: a handle to it
 * Return: 0 or -ENOENT.
 */
int sio_segment_connect(struct sio_fabric *f, int node, uint32_t id,
			struct sio_segment **out);

/**
 * sio_segment_map() - map a segment into this process
 * @seg: segment
 * @vaddr: where it is mapped
 *
 * Mapping a remote segment takes one window on this node's adapter; when all
 * are taken it fails with -ENOSPC and says "windows per adapter".
 * Mapping twice returns the same address.
 */
int sio_segment_map(struct sio_segment *seg, void **vaddr);

/**
 * sio_segment_map_adapter() - map a segment through a chosen adapter
 * @seg: segment
 * @adapter: this node's adapter to reach a remote segment through
 * @vaddr: where it is mapped
 *
 * As sio_segment_map(), for multipath drivers that keep a second path.
 */
int sio_segment_map_adapter(struct sio_segment *seg, int adapter, void **vaddr);

/* sio_segment_map_range() flags */
#define SIO_MAP_RDONLY		(1u << 0)	/* loads only; stores fault */

/**
 * sio_segment_map_range() - map part of a segment, possibly read-only
 * @seg: segment
 * @adapter: this node's adapter to reach a remote segment through, or -1
 * @offset: page-aligned start within the segment
 * @length: page-aligned bytes (0 with @offset 0: the whole segment)
 * @flags: SIO_MAP_RDONLY
 * @vaddr: where @offset is mapped
 *
 * Confines a process to part of a segment, as an NTB window narrower than
 * the segment would: a client that maps only its own doorbell pages of a
 * controller's BAR, and its register page read-only, cannot ring another
 * client's queues or reset the controller. One mapping per handle; connect
 * the segment again for another range.
 */
int sio_segment_map_range(struct sio_segment *seg, int adapter, uint64_t offset,
			  uint64_t length, unsigned int flags, void **vaddr);

/**
 * sio_segment_unmap() - undo sio_segment_map(), releasing its window
 * @seg: segment
 */
int sio_segment_unmap(struct sio_segment *seg);

/**
 * sio_segment_info() - describe a segment
 * @seg: segment
 * @out: filled in
 */
int sio_segment_info(const struct sio_segment *seg, struct sio_segment_info *out);

/**
 * sio_segment_close() - release a segment handle
 * @seg: segment (NULL is ignored)
 *
 * For a segment this process created the memory is freed and connected
 * users get SIO_EV_SEGMENT_LOST; for a connected one the handle is dropped.
 */
void sio_segment_close(struct sio_segment *seg);

/**
 * sio_segment_reserve() - reserve the memory of a range of a segment
 * @seg: a segment this process created (with SIO_SEG_F_LAZY)
 * @offset: first byte
 * @length: bytes
 *
 * Return: 0 (also for memory that is always there), -ENOSPC naming where
 * there is no room, -EINVAL for a range outside the segment.
 */
int sio_segment_reserve(struct sio_segment *seg, uint64_t offset, uint64_t length);

/**
 * sio_segment_leave() - let go of a kept segment as a crash would
 * @seg: a segment this process created with SIO_SEG_F_KEEP (NULL is ignored)
 *
 * The segment stays, ownerless and whole, for a successor to adopt (a
 * service handing over, not stopping); the handle goes. Any other segment
 * is closed as by sio_segment_close(). Where the registry is out of reach
 * (the fabric's state across a link that is down), the segment is let go
 * of at the next call on the same fabric handle that reaches it; until
 * then it is still this process's.
 */
void sio_segment_leave(struct sio_segment *seg);

/**
 * sio_segment_set_name() - label a segment (shown by `smartio status`)
 * @seg: segment
 * @name: label, truncated to SIO_NAME_MAX - 1
 */
int sio_segment_set_name(struct sio_segment *seg, const char *name);

/**
 * sio_segment_notify() - wake waiters on a 32-bit word of a segment
 * @seg: mapped segment
 * @offset: 4-byte aligned offset of the word
 *
 * A notification, as a remote interrupt: it carries no data; waiters re-read
 * the word. Works across processes and nodes of the fabric.
 * Return: the number of waiters woken, or -errno.
 */
int sio_segment_notify(struct sio_segment *seg, uint64_t offset);

/**
 * sio_segment_wait() - sleep until a word of a segment changes
 * @seg: mapped segment
 * @offset: 4-byte aligned offset of the word
 * @old: the value last seen; returns at once if the word differs
 * @timeout_ns: upper bound on the sleep
 * Return: 0 (woken or changed), -ETIMEDOUT.
 */
int sio_segment_wait(struct sio_segment *seg, uint64_t offset, uint32_t old,
		     uint64_t timeout_ns);

/**
 * sio_segment_fabric() - the fabric handle a segment belongs to
 * @seg: segment
 */
struct sio_fabric *sio_segment_fabric(const struct sio_segment *seg);

#ifdef __cplusplus
}
#endif
#endif
