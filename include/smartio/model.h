/* SPDX-License-Identifier: MIT */
#ifndef SMARTIO_MODEL_H
#define SMARTIO_MODEL_H

/**
 * DOC: device models (the provider API)
 *
 * The lender side of a device on the simulated fabric, for programs that
 * emulate hardware (nvme-emu) rather than drive it. It is not part of the
 * bundle <smartio/smartio.h>: a driver has no use for it.
 *
 * A device model registers a device with its BARs, then moves data only
 * through the DMA calls below, which translate a device bus address to
 * memory the way the fabric would: device domain, lender adapter window,
 * target node, segment. An address nobody mapped for the device is a DMA
 * fault (counted, reported, never a crash). With the latency model on,
 * reads pay the modelled round trip and writes are posted.
 *
 * GPU memory is a segment too, but not memory a device model can map: the
 * GPU driver registers it with sio_segment_create_gpu(), and a model's DMA
 * reaches it through a plugin (struct sio_gpu_dma_plugin) that libsmartio
 * loads on first use.
 */

#include <stddef.h>
#include <stdint.h>
#include <smartio/device.h>
#include <smartio/segment.h>

#ifdef __cplusplus
extern "C" {
#endif

struct sio_devreg;

/**
 * struct sio_device_desc - a device a model registers
 * @class_code: PCI class code
 * @vendor: PCI vendor id
 * @device: PCI device id
 * @nbars: number of BARs
 * @bar_size: bytes per BAR; each becomes a segment of kind SIO_SEG_BAR
 * @chassis: the device sits behind an expansion-chassis switch
 * @name: label
 */
struct sio_device_desc {
	uint32_t class_code;
	uint16_t vendor;
	uint16_t device;
	int nbars;
	uint64_t bar_size[SIO_MAX_BARS];
	bool chassis;
	const char *name;
};

/**
 * sio_device_register() - register a device on this node (the lender)
 * @f: fabric handle
 * @desc: the device
 * @out: the registration, owned by this process
 *
 * The device disappears (SIO_EV_DEVICE_GONE to borrowers) when this process
 * unregisters it or dies.
 */
int sio_device_register(struct sio_fabric *f, const struct sio_device_desc *desc,
			struct sio_devreg **out);

/**
 * sio_devreg_close() - remove a registered device
 * @reg: registration (NULL is ignored)
 */
void sio_devreg_close(struct sio_devreg *reg);

/**
 * sio_devreg_id() - the fabric id assigned to a registered device
 * @reg: registration
 */
uint32_t sio_devreg_id(const struct sio_devreg *reg);

/**
 * sio_devreg_bar() - a registered device's BAR segment
 * @reg: registration
 * @bar: BAR index
 * @out: the segment (owned by the registration; map it to emulate the BAR)
 */
int sio_devreg_bar(struct sio_devreg *reg, int bar, struct sio_segment **out);

/**
 * sio_dma_read() - device reads memory at a bus address
 * @reg: the device
 * @bus: device-side bus address
 * @buf: destination
 * @len: bytes
 *
 * Return: 0; -EFAULT on a DMA fault (nothing mapped there for this device,
 * or a multicast address); -ENOLINK if the path is down (@buf is filled with
 * all ones, as PCIe completes such reads).
 */
int sio_dma_read(struct sio_devreg *reg, uint64_t bus, void *buf, size_t len);

/**
 * sio_dma_write() - device writes memory at a bus address (posted)
 * @reg: the device
 * @bus: device-side bus address (a multicast group address reaches every
 *	subscriber)
 * @buf: source
 * @len: bytes
 * Return: 0, -EFAULT on a DMA fault, -ENOLINK if the path is down (dropped).
 */
int sio_dma_write(struct sio_devreg *reg, uint64_t bus, const void *buf, size_t len);

/**
 * sio_dma_batch_begin() - let writes into GPU memory land later
 * @reg: the device
 *
 * Until sio_dma_batch_end(), a sio_dma_write() into a GPU segment may
 * return before its data has landed: the GPU plugin keeps a copy of the
 * source and moves many writes with one transfer, as a device keeps many
 * DMAs in flight. The model must tell no host that the data is there (a
 * completion) before sio_dma_batch_end() has returned. Reads still see
 * every earlier write; writes to host memory land before they return, as
 * always. $SMARTIO_GPU_DMA_BATCH=0 turns this off (each write waited for).
 */
void sio_dma_batch_begin(struct sio_devreg *reg);

/**
 * sio_dma_batch_pending() - whether a write of the batch may not have landed
 * @reg: the device
 * Return: true from the first deferred write until sio_dma_batch_end().
 */
bool sio_dma_batch_pending(const struct sio_devreg *reg);

/**
 * sio_dma_batch_end() - land every deferred write, and defer no more
 * @reg: the device
 * Return: 0; -EIO when a deferred write failed (the plugin's message is on
 * stderr): what the batch wrote must be taken as not written.
 */
int sio_dma_batch_end(struct sio_devreg *reg);

/**
 * sio_dma_ptr() - direct pointer to memory a device may access
 * @reg: the device
 * @bus: device-side bus address
 * @len: bytes that must be contiguous behind the pointer
 * @write: true if the device will write
 * @ptr: the pointer
 *
 * For zero-copy data movement (for example handing a buffer to io_uring).
 * The latency model is applied as for sio_dma_read()/sio_dma_write().
 * Return: 0, -EFAULT, -ENOLINK (no pointer: the caller drops or fills ones).
 */
int sio_dma_ptr(struct sio_devreg *reg, uint64_t bus, size_t len, bool write,
		void **ptr);

/**
 * struct sio_dma_stats - a device's DMA counters
 * @faults: DMAs to an address nothing was mapped at for the device
 * @linkdown: DMAs through a link that was down (writes dropped, reads all ones)
 * @last_fault_addr: the bus address of the last fault
 */
struct sio_dma_stats {
	uint64_t faults;
	uint64_t linkdown;
	uint64_t last_fault_addr;
};

/**
 * sio_dma_stats() - read a device's DMA counters
 * @reg: the device
 * @out: filled in
 */
int sio_dma_stats(struct sio_devreg *reg, struct sio_dma_stats *out);

/**
 * sio_devreg_irq_raise() - the device signals interrupt vector @vec
 * @reg: the device
 * @vec: vector, 0..SIO_IRQ_MAX_VECS-1
 *
 * A message interrupt: each borrower that enabled @vec
 * (sio_device_irq_enable()) gets one, which its vector's fd shows; a
 * borrower that did not is not told (the vector is masked there).
 * Return: the number of borrowers signalled, or -errno.
 */
int sio_devreg_irq_raise(struct sio_devreg *reg, int vec);

/**
 * sio_devreg_irq_raise_mask() - the device signals several vectors at once
 * @reg: the device
 * @vecs: the vectors, bit v for vector v (SIO_IRQ_MAX_VECS bits at most)
 *
 * As sio_devreg_irq_raise() for each vector in @vecs, delivered together:
 * a device that completes work for many borrowers in one pass wakes them
 * all before any of them can take the CPU it runs on.
 * Return: the number of interrupts delivered (a borrower with two of the
 * vectors counts twice), or -errno.
 */
int sio_devreg_irq_raise_mask(struct sio_devreg *reg, uint32_t vecs);


/**
 * DOC: GPU memory and the GPU DMA plugin
 *
 * The memory of a GPU segment stays where cudaMalloc() put it, in the
 * process that allocated it (the exporter). The exporter registers it with
 * sio_segment_create_gpu(), giving the IPC handle that lets another process
 * open it. A device model's sio_dma_read()/sio_dma_write() to such a
 * segment goes through the GPU DMA plugin: libsmartio loads it in the
 * model's process on first need, from $SMARTIO_GPU_PLUGIN or as
 * "libsmartio-gpudma.so" from the library path, and looks up
 * SIO_GPU_DMA_PLUGIN_SYMBOL, a const struct sio_gpu_dma_plugin. The plugin
 * needs no libsmartio symbol, so it works in a process that links
 * libsmartio statically.
 */

/* Bytes of an exporter's IPC handle kept with a GPU segment (a
 * cudaIpcMemHandle_t is 64). */
#define SIO_GPU_HANDLE_MAX	64

/* sio_gpu_seg.slot is below this: a plugin may index a table with it. */
#define SIO_GPU_SEG_SLOTS	4096

/* The object a GPU DMA plugin exports, and its name for dlsym(); the
 * number moves with the ABI. */
#define SIO_GPU_DMA_PLUGIN		sio_gpu_dma_plugin_v4
#define SIO_GPU_DMA_PLUGIN_SYMBOL	"sio_gpu_dma_plugin_v4"

/**
 * struct sio_gpu_seg - a GPU segment, as its DMA plugin sees it
 * @slot: where the fabric keeps the segment, 0..SIO_GPU_SEG_SLOTS-1; a
 *	later segment may reuse it, with another @gen
 * @id: the segment id, for messages
 * @gen: generation, never 0; (@slot, @gen) names one segment for good
 * @size: bytes
 * @gpu: CUDA device ordinal in the exporting process
 * @handle: the exporter's IPC handle (cudaIpcMemHandle_t), as given to
 *	sio_segment_create_gpu()
 */
struct sio_gpu_seg {
	uint32_t slot;
	uint32_t id;
	uint64_t gen;
	uint64_t size;
	int gpu;
	uint8_t handle[SIO_GPU_HANDLE_MAX];
};

/**
 * struct sio_gpu_dma_plugin - what a GPU DMA plugin provides
 * @copy: copy @len bytes between @buf and offset @off of @seg (@to_gpu:
 *	into the GPU). Data copied to the GPU has landed when it returns, so a
 *	completion the model posts next cannot overtake it. Return 0, -EINVAL
 *	(a bad @seg or @buf), -ERANGE (outside @seg), -ENODEV (no such GPU in
 *	this process), -EIO (CUDA failed; the plugin says why on stderr).
 * @forget: the fabric's mappings changed; @live lists the @n GPU segments
 *	that exist now. Close what is open for any other: its exporter may
 *	free the memory. Also a good moment to start CUDA on the GPUs listed,
 *	before a copy waits for it. Lands what @copy_later deferred first.
 * @copy_later: copy @len bytes from @buf into offset @off of @seg, landing
 *	by the next @land at the latest; @buf may be reused once it returns.
 *	Returns as @copy does. NULL: every write is a @copy.
 * @land: every @copy_later has landed. Return 0, or -EIO if one failed.
 *
 * All may be called from several threads of the model. A @copy reading the
 * GPU sees every earlier @copy_later.
 */
struct sio_gpu_dma_plugin {
	int (*copy)(const struct sio_gpu_seg *seg, uint64_t off, void *buf, size_t len,
		    bool to_gpu);
	void (*forget)(const struct sio_gpu_seg *live, int n);
	int (*copy_later)(const struct sio_gpu_seg *seg, uint64_t off, const void *buf,
			  size_t len);
	int (*land)(void);
};

/**
 * sio_segment_create_gpu() - register GPU memory as a segment of this node
 * @f: fabric handle
 * @size: bytes, 1..SIO_SEG_MAX_SIZE
 * @gpu: CUDA device ordinal of the memory in this process
 * @handle: its IPC handle (cudaIpcGetMemHandle()), 1..SIO_GPU_HANDLE_MAX bytes
 * @len: bytes of @handle
 * @out: the segment, owned by this process until removed
 *
 * The segment (kind SIO_SEG_GPU) has no CPU mapping; devices reach it with
 * sio_device_map() like any other, and device models through the plugin.
 * Remove the segment before freeing the memory.
 * Return: 0, -EINVAL, -ENOSPC (all segments in use).
 */
int sio_segment_create_gpu(struct sio_fabric *f, uint64_t size, int gpu,
			   const void *handle, size_t len, struct sio_segment **out);

#ifdef __cplusplus
}
#endif
#endif
