/* SPDX-License-Identifier: MIT */
#ifndef SMARTIO_DEVICE_H
#define SMARTIO_DEVICE_H

/**
 * DOC: devices
 *
 * A device is a PCI function registered by the node it is installed in (its
 * lender) and named by a fabric-wide id. Borrowing returns a handle,
 * exclusive or shared. A device's BARs are segments. Mapping a segment for a
 * device returns the bus address *as the device sees it*; the device can DMA
 * only into what was mapped for it.
 */

#include <stdbool.h>
#include <stdint.h>
#include <smartio/fabric.h>
#include <smartio/segment.h>

#ifdef __cplusplus
extern "C" {
#endif

#define SIO_MAX_BARS		6
/* No device id in particular: for calls that pick one themselves. */
#define SIO_DEVICE_ANY		UINT32_MAX

struct sio_device;

enum sio_device_backend {
	SIO_BACKEND_SIM = 0,	/* a device model on the simulated fabric */
	SIO_BACKEND_VFIO,	/* a real PCI function bound to vfio-pci */
	SIO_BACKEND_UIO,	/* one bound to uio_pci_generic, no IOMMU */
};

/**
 * struct sio_device_info - what a device is
 * @id: fabric device id
 * @lender: node the device is installed in
 * @class_code: PCI class code (24 bits, e.g. 0x010802 for NVMe)
 * @vendor: PCI vendor id
 * @device: PCI device id
 * @backend: how it is reached
 * @nbars: number of BARs
 * @bar_size: size of each BAR, 0 if absent
 * @chassis: sits behind an expansion-chassis switch in its lender
 * @exclusive: currently borrowed exclusively
 * @borrowers: number of current borrowers
 * @dma_faults: DMA faults the device has taken
 * @bar_mmio: a store to its BARs is a write to a PCI function's registers
 *	(vfio, uio, also when another kernel's relay or window carries it),
 *	which costs more than a store to memory (on a virtual function, QEMU's,
 *	an exit to the hypervisor); false where the BARs are memory of the
 *	fabric that a device model polls (sim). Drivers weigh features such as
 *	NVMe's shadow doorbells by it.
 * @relayed: doorbell writes of other kernels that its lender's relay
 *	forwarded to BAR0 (0: none, or its backend has no relay)
 * @relay_wait_ns: for those, the time between the relay's look that found
 *	each and its look before (a bound on how long each waited for it)
 * @relay_fwd_ns: for those, the time the relay took to write each to BAR0
 * @name: model or slot name
 * @bdf: PCI address for real devices ("0000:00:04.0"), else empty
 */
struct sio_device_info {
	uint32_t id;
	int lender;
	uint32_t class_code;
	uint16_t vendor;
	uint16_t device;
	enum sio_device_backend backend;
	int nbars;
	uint64_t bar_size[SIO_MAX_BARS];
	bool chassis;
	bool exclusive;
	int borrowers;
	uint64_t dma_faults;
	bool bar_mmio;
	uint64_t relayed, relay_wait_ns, relay_fwd_ns;
	char name[SIO_NAME_MAX];
	char bdf[16];
};

/**
 * struct sio_doorbells - where a device's doorbells are in its BAR0
 * @base: offset in BAR0 of the first doorbell (a multiple of 4)
 * @stride: bytes from one doorbell to the next (a multiple of 4)
 * @count: how many there are; 0: none described
 * @confined: the first doorbell that stays another kernel's to ring once
 *	BAR0 is confined (sio_device_restrict()): the ones before it are then
 *	the confining borrower's alone (an NVMe controller's admin queue);
 *	0: every one stays
 * @regs: bytes at BAR0's start that a borrower of another kernel reads
 *	(at most 4096, and not past @base): copied when the device is lent
 * @live: of those, the bytes that change under the driver (status
 *	registers), read again every few milliseconds (at most @regs)
 *
 * A lender fills it from the driver that knows the device (the NVMe
 * driver's sio_nvme_describe_doorbells(), the edu example's edu_doorbells()): where
 * no window reaches BAR0 from another kernel, the lender's relay forwards
 * that kernel's 32-bit writes of these doorbells, and of nothing else, and
 * shows it these registers. A device lent without a description is not
 * relayed at all.
 */
struct sio_doorbells {
	uint64_t base;
	uint32_t stride;
	uint32_t count;
	uint32_t confined;
	uint32_t regs;
	uint32_t live;
};

/* sio_device_borrow() flags */
#define SIO_BORROW_SHARED	0u
#define SIO_BORROW_EXCLUSIVE	(1u << 0)

/**
 * sio_device_list() - list registered devices
 * @f: fabric handle
 * @class_code: keep devices whose class matches under @class_mask
 * @class_mask: 0 lists every device; 0xffffff an exact class
 * @out: array to fill (may be NULL to count)
 * @max: its length
 * Return: the number of matching devices, or -errno.
 */
int sio_device_list(struct sio_fabric *f, uint32_t class_code,
		    uint32_t class_mask, struct sio_device_info *out, int max);

/**
 * sio_device_borrow() - borrow a device
 * @f: fabric handle
 * @id: device id
 * @flags: SIO_BORROW_EXCLUSIVE or SIO_BORROW_SHARED
 * @out: the borrow handle
 *
 * An exclusive borrow fails with -EBUSY while anyone else holds the device;
 * a shared one fails with -EBUSY while someone holds it exclusively.
 * Return: 0, -ENOENT (no such device), -EBUSY.
 */
int sio_device_borrow(struct sio_fabric *f, uint32_t id, unsigned int flags,
		      struct sio_device **out);

/**
 * sio_device_downgrade() - turn an exclusive borrow into a shared one
 * @dev: an exclusive borrow (the holder has reset the device)
 * Return: 0 or -EINVAL if the borrow is not exclusive.
 */
int sio_device_downgrade(struct sio_device *dev);

/**
 * sio_device_notice() - tell the device's other borrowers something happened
 * @dev: borrow handle
 * @info: what (the device's driver defines it)
 *
 * Each other process that borrows the device gets SIO_EV_DEVICE_NOTICE with
 * @info (the events of <smartio/event.h>: a full event queue drops it).
 * Return: 0 or -errno.
 */
int sio_device_notice(struct sio_device *dev, uint32_t info);

/**
 * sio_device_close() - give a borrowed device back
 * @dev: borrow handle (NULL is ignored)
 *
 * Unmaps every segment mapped for the device through this handle.
 */
void sio_device_close(struct sio_device *dev);

/**
 * sio_device_info() - describe a borrowed device
 * @dev: borrow handle
 * @out: filled in
 */
int sio_device_info(struct sio_device *dev, struct sio_device_info *out);

/**
 * enum sio_bar_path - how a borrow's stores to a BAR reach the device
 * @SIO_BAR_PATH_MAPPED: through a mapping of the BAR itself (a PCI
 *	function of this host, through vfio or uio)
 * @SIO_BAR_PATH_FABRIC_SEGMENT: the BAR is a segment of the fabric that a
 *	device model emulates in memory (the sim backend)
 * @SIO_BAR_PATH_NTB_WINDOW: through an NTB window onto the BAR of a device
 *	of another kernel
 * @SIO_BAR_PATH_RELAYED: into a copy of the BAR in memory of the lender's
 *	node, whose doorbell writes the lender's relay forwards to the device
 *	(no window reaches it)
 * @SIO_BAR_PATH_NTB_WINDOW_EMULATED: through an NTB window onto the BAR, as
 *	SIO_BAR_PATH_NTB_WINDOW, whose translation onto the BAR the lender's
 *	NTB driver emulates in software (ntb_hw_ivshmem's bar_fwd=1: a kernel
 *	thread forwards each stored word), not the hardware: no user-space
 *	relay, but not one posted write either
 */
enum sio_bar_path {
	SIO_BAR_PATH_MAPPED = 0,
	SIO_BAR_PATH_FABRIC_SEGMENT,
	SIO_BAR_PATH_NTB_WINDOW,
	SIO_BAR_PATH_RELAYED,
	SIO_BAR_PATH_NTB_WINDOW_EMULATED,
};

/**
 * sio_bar_path_name() - a path's name, for people
 * @path: an enum sio_bar_path
 * Return: "mapped", "fabric segment", "NTB window", "relayed",
 * "NTB window (emulated forwarding)", or "unknown" for a value outside the
 * enum.
 */
const char *sio_bar_path_name(enum sio_bar_path path);

/**
 * sio_device_bar_path_kind() - how this borrow's stores to a BAR reach the device
 * @dev: borrow handle
 * @bar: BAR index
 *
 * What a program tests (a driver that counts relayed doorbells, say);
 * sio_device_bar_path() says the same in words, with the reason. Asked
 * after sio_segment_map() of the BAR; before, the path a mapping of this
 * host or of the fabric would take.
 * Return: the path; SIO_BAR_PATH_MAPPED for a NULL handle.
 */
enum sio_bar_path sio_device_bar_path_kind(struct sio_device *dev, int bar);

/**
 * sio_device_bar_path() - how this borrow's stores to a BAR reach the device, in words
 * @dev: borrow handle
 * @bar: BAR index
 *
 * For display: sio_bar_path_name() of sio_device_bar_path_kind(), and, where
 * there is more to say, why in parentheses ("relayed (no window: why)").
 * Programs test sio_device_bar_path_kind() instead of parsing this.
 * Return: a string owned by the library, valid until the next call from
 * this thread; "" for a NULL handle.
 */
const char *sio_device_bar_path(struct sio_device *dev, int bar);

/**
 * sio_device_bar() - a device BAR as a segment
 * @dev: borrow handle
 * @bar: BAR index
 * @out: the BAR segment; map it with sio_segment_map() for MMIO, close it
 *	with sio_segment_close() (a new handle each call; a sio_device_map()
 *	of it outlives the handle)
 * Return: 0, -ENOENT if the BAR does not exist.
 */
int sio_device_bar(struct sio_device *dev, int bar, struct sio_segment **out);

/**
 * sio_device_map() - map a segment for a device
 * @dev: borrow handle
 * @seg: segment anywhere in the fabric (RAM, GPU or another BAR)
 * @bus_addr: the address the device must use to reach @seg
 *
 * Resolves the path from the device to the segment. When the segment lives
 * on another node a window is taken on the lender's adapter; when none is
 * left this fails with -ENOSPC naming the limit.
 */
int sio_device_map(struct sio_device *dev, struct sio_segment *seg,
		   uint64_t *bus_addr);

/**
 * sio_device_unmap() - undo sio_device_map()
 * @dev: borrow handle
 * @seg: segment that was mapped
 * Return: 0 or -ENOENT if it was not mapped.
 */
int sio_device_unmap(struct sio_device *dev, struct sio_segment *seg);

/**
 * sio_device_restrict() - confine other borrowers' CPU mappings of a BAR
 * @dev: the borrow that owns the device's set-up (for example the NVMe
 *	manager); it keeps full access and alone may grant
 * @bar: BAR index
 * @public_len: page-aligned bytes from offset 0 that any borrower may map
 *	read-only (an NVMe controller's register page), 0 for none
 *
 * From then on, another process maps the BAR only within @public_len
 * read-only or within ranges granted to it (sio_device_grant()); anything
 * else fails with -EACCES. The restriction ends when @dev is returned or
 * its process dies. The vfio backend does not support it (-EOPNOTSUPP).
 */
int sio_device_restrict(struct sio_device *dev, int bar, uint64_t public_len);

/**
 * sio_device_grant() - let one process map a range of a restricted BAR
 * @dev: the borrow that restricted the BAR
 * @pid: the process (as seen by the fabric: sio_event.pid, a client's pid)
 * @bar: BAR index
 * @offset: page-aligned start
 * @length: page-aligned bytes; mapped read-write by the grantee
 * Return: 0, -EPERM if @dev did not restrict @bar, -ENOSPC when the
 * fabric's grant table is full.
 */
int sio_device_grant(struct sio_device *dev, int pid, int bar, uint64_t offset,
		     uint64_t length);

/**
 * sio_device_revoke() - withdraw a grant made with sio_device_grant()
 * @dev: the borrow that restricted the BAR
 * @pid: the grantee
 * @bar: BAR index
 * @offset: start of the granted range
 *
 * Mappings already made stay until unmapped; revoke before re-granting the
 * range to someone else only after the old holder is gone or has let go.
 */
int sio_device_revoke(struct sio_device *dev, int pid, int bar, uint64_t offset);

/**
 * sio_device_grant_node() - sio_device_grant() to pid @pid of node @node
 * @dev: borrow handle of the restricting borrower
 * @node: the node the process is joined as
 * @pid: the process, as its node's kernel knows it
 * @bar: BAR index
 * @offset: start of the range
 * @length: bytes
 *
 * A pid names a process of one kernel: where nodes are separate kernels
 * (the shmwin backend), two nodes may have processes of the same pid.
 * sio_device_grant() takes the node where pid @pid is joined (the
 * caller's own if none is) and refuses a pid joined on two nodes.
 */
int sio_device_grant_node(struct sio_device *dev, int node, int pid, int bar, uint64_t offset,
			  uint64_t length);
/** sio_device_revoke_node() - withdraw a grant of sio_device_grant_node() */
int sio_device_revoke_node(struct sio_device *dev, int node, int pid, int bar, uint64_t offset);

/**
 * sio_device_use_adapter() - choose the lender adapter for later mappings
 * @dev: borrow handle
 * @adapter: adapter index of the lender, or -1 for the first one whose
 *	link is up (the default)
 *
 * For multipath: borrow the device twice, give each borrow its own adapter,
 * and map each queue pair's memory through one of them, so the two paths
 * share no link.
 */
int sio_device_use_adapter(struct sio_device *dev, int adapter);

/**
 * sio_device_fabric() - the fabric handle a borrow belongs to
 * @dev: borrow handle
 */
struct sio_fabric *sio_device_fabric(const struct sio_device *dev);

/**
 * sio_device_id() - fabric id of a borrowed device
 * @dev: borrow handle
 */
uint32_t sio_device_id(const struct sio_device *dev);

/**
 * sio_device_set_dma_mask() - the bus addresses the device can reach
 * @dev: borrow handle
 * @mask: 2^n - 1 for a device that drives n address bits (12 <= n <= 64;
 *	a fresh borrow has all 64)
 *
 * Later mappings through @dev get bus addresses at or below @mask: the
 * vfio backend allocates IOVAs there, the simulated fabric places the
 * mapping low in the device's domain. A mapping that cannot fit, or one
 * made earlier above the new mask, fails with -ERANGE naming the mask.
 * Return: 0, -EINVAL (not of the form 2^n - 1).
 */
int sio_device_set_dma_mask(struct sio_device *dev, uint64_t mask);

/**
 * sio_device_dma_mask() - the DMA mask of a borrow
 * @dev: borrow handle
 */
uint64_t sio_device_dma_mask(const struct sio_device *dev);

#ifdef __cplusplus
}
#endif
#endif
