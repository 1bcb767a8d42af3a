/* SPDX-License-Identifier: MIT */
#ifndef SMARTIO_GPU_H
#define SMARTIO_GPU_H

/**
 * DOC: GPU memory segments and GPU-driven NVMe queues
 *
 * GPU memory becomes a fabric segment (kind SIO_SEG_GPU) that device models
 * DMA into through the CUDA plugin libsmartio-gpudma.so. A GPU queue pair
 * has its SQ (and PRP lists) in GPU memory, its CQ in GPU memory or in host
 * memory mapped for the GPU, and the controller's doorbells mapped into the
 * GPU's address space, so a CUDA kernel runs the I/O with no CPU on the data
 * path (the paper's sections 6.4 and 7.4.1).
 *
 * This header is the host side: GPU memory, queue pairs, batch jobs. The
 * calls a CUDA kernel makes on a queue (sio_gpu_submit(), sio_gpu_wait(),
 * sio_gpu_read(), ...) and the queue's layout are in the device-side
 * header <smartio/gpu/queue.cuh>; host code holds a queue only by its
 * device pointer.
 *
 * Host functions return 0 or -errno with sio_errmsg() saying why; the
 * ones that need a GPU return -ENODEV without one.
 */

#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <smartio/smartio.h>
#include <smartio/nvme/types.h>

#ifdef __cplusplus
extern "C" {
#endif

struct sio_nvme_client;
struct sio_gpu_nvme;
struct sio_gpu_qp;
struct sio_gpu_queue;		/* <smartio/gpu/queue.cuh>; in GPU memory */

/**
 * struct sio_gpu_mem - GPU memory registered with the fabric
 * @seg: the segment (kind SIO_SEG_GPU); map it for a device with
 *	sio_device_map()
 * @dptr: device pointer, for kernels
 * @size: bytes
 * @gpu: CUDA device ordinal
 */
struct sio_gpu_mem {
	struct sio_segment *seg;
	void *dptr;
	uint64_t size;
	int gpu;
};

/**
 * struct sio_gpu_queue_desc - the memory a GPU queue runs on
 * @sq: SQ, device pointer, depth * 64 bytes
 * @cq: CQ, device pointer, depth * 16 bytes, zeroed
 * @sq_db: SQ tail doorbell, device pointer
 * @cq_db: CQ head doorbell, device pointer
 * @prp: PRP list pages, device pointer, depth * @page bytes
 * @prp_bus: their address as the controller sees it
 * @qid: queue id
 * @depth: entries; a power of two, 2..65536 (SQ and CQ have as many)
 * @page: controller memory page size (4096 at CC.MPS 0)
 * @max_xfer: largest transfer per command in bytes (capped at one PRP list)
 * @timeout_ns: bound on each wait (0: 2 s)
 */
struct sio_gpu_queue_desc {
	void *sq;
	void *cq;
	volatile uint32_t *sq_db;
	volatile uint32_t *cq_db;
	void *prp;
	uint64_t prp_bus;
	uint16_t qid;
	uint32_t depth;
	uint32_t page;
	uint32_t max_xfer;
	uint64_t timeout_ns;
};

/**
 * struct sio_gpu_qp_opts - how to place a GPU queue pair
 * @depth: entries (0: 64); rounded down to a power of two, capped by MQES
 * @cq_in_gpu: CQ in GPU memory (default: host memory mapped for the GPU,
 *	which every controller model can post to)
 * @sq_in_host: SQ in host memory mapped for the GPU instead of GPU memory
 *	(for placement comparisons)
 * @prio: SQ priority for weighted round robin, 0..3
 * @timeout_ms: bound on each device-side wait (0: the controller's CAP.TO,
 *	at least 2 s)
 */
struct sio_gpu_qp_opts {
	uint32_t depth;
	bool cq_in_gpu;
	bool sq_in_host;
	uint32_t prio;
	uint32_t timeout_ms;
};

/**
 * struct sio_gpu_qp_info - a GPU queue pair as created
 * @qid: queue id the manager assigned
 * @depth: entries
 * @sq_place: SIO_PLACE_DEVICE when the SQ sits in GPU memory on the
 *	controller's lender, else SIO_PLACE_LOCAL
 * @sq_kind: SIO_SEG_GPU or SIO_SEG_RAM
 * @cq_kind: SIO_SEG_GPU or SIO_SEG_RAM
 * @queue: the device-side queue, for kernels
 */
struct sio_gpu_qp_info {
	uint16_t qid;
	uint32_t depth;
	int sq_place;
	int sq_kind;
	int cq_kind;
	struct sio_gpu_queue *queue;
};

/**
 * sio_gpu_count() - CUDA devices present
 * Return: the count (> 0), or -ENODEV with the reason in sio_errmsg()
 * (no driver, no device, CUDA built out).
 */
int sio_gpu_count(void);

/**
 * sio_gpu_placement() - where GPU memory of @gpu_node sits for a device
 * @gpu_node: node the GPU is installed in
 * @lender: node that lends the device
 * Return: SIO_PLACE_DEVICE (device-adjacent: same node as the device),
 * SIO_PLACE_LOCAL, or -EINVAL for a negative node.
 */
int sio_gpu_placement(int gpu_node, int lender);

/**
 * sio_gpu_mem_create() - allocate GPU memory and register it as a segment
 * @f: fabric handle (the GPU's node)
 * @size: bytes (rounded up to 64 KiB)
 * @gpu: CUDA device ordinal
 * @out: the memory; free with sio_gpu_mem_close()
 * Return: 0, -EINVAL, -ENODEV (no such GPU), -ENOMEM, -errno.
 */
int sio_gpu_mem_create(struct sio_fabric *f, uint64_t size, int gpu, struct sio_gpu_mem **out);

/**
 * sio_gpu_segment_create_hinted() - GPU memory for a device, placed by hints
 * @dev: borrowed device that will access it
 * @size: bytes
 * @hints: SIO_HINT_* bits; 0 says nothing and is refused
 * @gpu: CUDA device ordinal
 * @out: the memory (not yet mapped for @dev)
 * @placed: SIO_PLACE_DEVICE when this node lends @dev (the memory is next
 *	to the device), SIO_PLACE_LOCAL otherwise (may be NULL)
 *
 * GPU memory is always this node's; the placement says what the device
 * pays to reach it. Hints that ask for memory near the host CPU (host reads
 * without device reads, as for a CPU-polled CQ) are refused with -EINVAL:
 * use sio_segment_create_hinted() for those.
 */
int sio_gpu_segment_create_hinted(struct sio_device *dev, uint64_t size, unsigned int hints,
				  int gpu, struct sio_gpu_mem **out, enum sio_placement *placed);

/**
 * sio_gpu_mem_close() - unregister and free GPU memory
 * @m: memory (NULL is ignored); unmap it from devices first
 */
void sio_gpu_mem_close(struct sio_gpu_mem *m);

/**
 * sio_gpu_queue_alloc() - build the device-side state of a GPU queue
 * @d: the memory it runs on
 * @out: device pointer to the queue; free with sio_gpu_queue_close()
 *
 * The low-level half of sio_gpu_qp_create(): it neither asks for the queue
 * at the controller nor maps anything.
 * Return: 0, -EINVAL naming the bad field, -ENODEV, -ENOMEM.
 */
int sio_gpu_queue_alloc(const struct sio_gpu_queue_desc *d, struct sio_gpu_queue **out);

/** sio_gpu_queue_close() - free what sio_gpu_queue_alloc() made (NULL ignored) */
void sio_gpu_queue_close(struct sio_gpu_queue *q);

/**
 * sio_gpu_queue_failed() - read a GPU queue's failure from the host
 * @q: device pointer
 *
 * Reads a mirror in mapped host memory: it does not wait for a kernel that
 * is running, so a host watchdog may call it at any time.
 * Return: 0 while healthy, the negative error that failed it, or -errno.
 */
int sio_gpu_queue_failed(struct sio_gpu_queue *q);

/**
 * sio_gpu_queue_set_ticket() - restart an idle queue's tickets at @ticket
 * @q: device pointer; no kernel may be using it, and every ticket taken
 *	must have been waited on
 * @ticket: the next ticket to hand out; it must name the slot the next
 *	ticket names now (@ticket % depth == the next ticket % depth), since a
 *	ticket's slot is its SQ entry and the controller fetches from the SQ
 *	tail it was last given
 *
 * For tests of ticket wrap-around (start just below 2^32). The queue's
 * submission and completion queue positions are kept.
 * Return: 0, -EINVAL (NULL, not idle: a ticket is outstanding, or @ticket
 * in another slot), -EBUSY (the queue failed), -errno from CUDA.
 */
int sio_gpu_queue_set_ticket(struct sio_gpu_queue *q, uint32_t ticket);

/**
 * sio_gpu_required() - must GPU work run here?
 *
 * True when $SMARTIO_REQUIRE_GPU is set to something other than "" or "0":
 * tests, examples and benchmarks then fail, printing sio_errmsg(),
 * where they would otherwise skip for want of a GPU.
 */
bool sio_gpu_required(void);

/**
 * sio_gpu_pattern() - the data pattern the GPU checks and the tests write
 * @seed: pattern seed
 * @word: index of a 64-bit word counted from byte 0 of the namespace
 *
 * Never zero for seed 0, and different for every word; the same on host
 * and device.
 */
static inline SIO_HD uint64_t sio_gpu_pattern(uint64_t seed, uint64_t word)
{
	return (0x9e3779b97f4a7c15ull * (word + 1)) ^ seed;
}

/**
 * sio_gpu_nvme_open() - connect a GPU to an NVMe controller's manager
 * @f: fabric handle
 * @device: device id, or negative for the first NVMe controller
 * @gpu: CUDA device ordinal
 * @out: the connection
 *
 * Opens an NVMe client (for identify and namespaces), with a mailbox slot
 * of its own for queues in GPU memory. Each queue pair then maps its
 * doorbells into the GPU: on a confined controller (doorbells a page or
 * more apart) only its own doorbell pages, otherwise the client's mapping
 * of BAR0, registered with CUDA once per connection.
 */
int sio_gpu_nvme_open(struct sio_fabric *f, int64_t device, int gpu, struct sio_gpu_nvme **out);

/** sio_gpu_nvme_close() - destroy its queue pairs and disconnect (NULL ignored) */
void sio_gpu_nvme_close(struct sio_gpu_nvme *g);

/** sio_gpu_nvme_client() - the NVMe client underneath, for host-side I/O */
struct sio_nvme_client *sio_gpu_nvme_client(struct sio_gpu_nvme *g);

/**
 * sio_gpu_qp_create() - place a queue pair for GPU threads and create it
 * @g: connection
 * @opts: placement and depth (NULL for defaults)
 * @out: the queue pair
 * Return: 0, -ENOSPC (the controller has no queue left), -EINVAL, -errno.
 */
int sio_gpu_qp_create(struct sio_gpu_nvme *g, const struct sio_gpu_qp_opts *opts,
		      struct sio_gpu_qp **out);

/** sio_gpu_qp_close() - delete a queue pair (NULL ignored); no kernel may use it */
void sio_gpu_qp_close(struct sio_gpu_qp *qp);

/**
 * sio_gpu_qp_info() - describe a queue pair
 * @qp: queue pair
 * @out: filled in
 * Return: 0, or -EINVAL for a NULL argument.
 */
int sio_gpu_qp_info(const struct sio_gpu_qp *qp, struct sio_gpu_qp_info *out);

/**
 * struct sio_gpu_job - a batch of I/O run by a kernel over several queues
 * @opcode: SIO_NVME_CMD_READ or SIO_NVME_CMD_WRITE
 * @nsid: namespace
 * @lba_size: bytes per block
 * @nlb: blocks per command
 * @nios: commands in all
 * @slba: first block (sequential) or base of the random span
 * @span: blocks that random offsets fall in (0: sequential from @slba)
 * @seed: random seed
 * @threads: GPU threads; thread t uses queue t * nq / @threads (neighbours
 *	share a queue, whole warps from 32 threads a queue on) and issues one
 *	command at a time, commands t, t + threads, ...
 * @dptr: the data buffer, as kernels address it; sequential command i
 *	uses offset i * bytes per command, random ones the issuing thread's
 *	own slot, modulo @size
 * @bus: the data buffer's bus address, as the controller sees it
 * @size: the data buffer's bytes
 * @lat_ns: optional device array of @nios latencies in ns (may be NULL)
 * @verify: reads: right after each command completes, the thread that
 *	issued it compares the data, in the kernel, with sio_gpu_pattern(
 *	@pattern, word) (word counted from the namespace's byte 0); writes:
 *	the thread fills its data with that pattern before the command. Needs
 *	a buffer no two commands in flight share: sequential jobs
 *	@size >= @nios * bytes per command, random ones @size >= @threads *
 *	bytes per command; refused with -EINVAL otherwise.
 * @pattern: pattern seed for @verify
 */
struct sio_gpu_job {
	uint8_t opcode;
	uint32_t nsid;
	uint32_t lba_size;
	uint32_t nlb;
	uint64_t nios;
	uint64_t slba;
	uint64_t span;
	uint64_t seed;
	uint32_t threads;
	void *dptr;
	uint64_t bus;
	uint64_t size;
	uint64_t *lat_ns;
	bool verify;
	uint64_t pattern;
};

/**
 * struct sio_gpu_job_result - what a job did
 * @ok: commands that succeeded
 * @failed: commands that did not
 * @first_err: the first failure (0, -EIO, -ETIMEDOUT, ...)
 * @first_status: NVMe status of the first -EIO
 * @seconds: kernel time, from CUDA events
 * @mismatches: with @verify, 64-bit words of read data that differed from
 *	the pattern (in commands that succeeded)
 * @first_bad_word: the first such word's index from the namespace start
 *	(meaningful when @mismatches > 0)
 * @first_bad_value: what was read there
 */
struct sio_gpu_job_result {
	uint64_t ok;
	uint64_t failed;
	int first_err;
	uint16_t first_status;
	double seconds;
	uint64_t mismatches;
	uint64_t first_bad_word;
	uint64_t first_bad_value;
};

/**
 * sio_gpu_run_job() - run a batch of I/O from a kernel and wait for it
 * @qs: device-side queues
 * @nq: how many
 * @job: the work
 * @res: what happened
 * Return: 0 when the kernel ran (see @res for the I/O), -EINVAL, -ENODEV,
 * -EIO (CUDA error).
 */
int sio_gpu_run_job(struct sio_gpu_queue *const *qs, int nq, const struct sio_gpu_job *job,
		    struct sio_gpu_job_result *res);

/**
 * DOC: the GPU-resident controller model
 *
 * A controller model that runs on the GPU, in the calling process's CUDA
 * context, to measure the queue engine where the controller is not the
 * limit: a persistent kernel of @sms blocks (8 warps each; a warp owns
 * queue pairs) fetches what each SQ doorbell covers, executes it with the
 * CPU-side emulator's decode and checks (<smartio/nvme/model.h>) and posts
 * the completions. "null" moves no data (as Linux's null_blk); "ram"
 * copies between the command's buffer and a RAM image in GPU memory. The
 * queue pairs it makes are ordinary engine queues: sio_gpu_run_job() and
 * kernels using <smartio/gpu/queue.cuh> drive them unchanged. A bus
 * address is a device pointer (sio_gpu_ctrl_bus()); data outside the
 * window @data..@data + @data_size is a Data Transfer Error.
 *
 * While it runs, the process must not call what synchronises the whole
 * device (cudaDeviceSynchronize(), cudaFree() of device memory): that
 * waits for the model, which waits for sio_gpu_ctrl_stop().
 */

#define SIO_GPU_CTRL_NULL	0
#define SIO_GPU_CTRL_RAM	1

/**
 * struct sio_gpu_ctrl_opts - a GPU-resident controller model
 * @kind: SIO_GPU_CTRL_NULL or SIO_GPU_CTRL_RAM
 * @ns_bytes: namespace 1's size (ram: the image allocated in GPU memory)
 * @lba_size: 512 or 4096
 * @sms: blocks of the persistent kernel (the SMs it holds at most)
 * @nq: queue pairs, 1..64
 * @depth: entries per queue, a power of two, 2..65536
 * @sq_in_host: SQs in mapped host memory (default GPU memory)
 * @cq_in_host: CQs in mapped host memory (default GPU memory)
 * @data: device pointer of the memory commands may move data to or from
 * @data_size: its bytes
 * @gpu: CUDA device ordinal
 * @timeout_ms: the engine's bound on each wait (0: 2 s)
 * @max_seconds: the kernel's own bound, should nobody stop it (0: 600)
 */
struct sio_gpu_ctrl_opts {
	int kind;
	uint64_t ns_bytes;
	uint32_t lba_size;
	uint32_t sms;
	uint32_t nq;
	uint32_t depth;
	bool sq_in_host;
	bool cq_in_host;
	const void *data;
	uint64_t data_size;
	int gpu;
	uint32_t timeout_ms;
	uint32_t max_seconds;
};

/**
 * struct sio_gpu_ctrl_stats - what the model did between start and stop
 * @commands: commands completed
 * @errors: of which with an error status
 * @bad_doorbells: doorbell values at or past the queue's depth (ignored)
 */
struct sio_gpu_ctrl_stats {
	uint64_t commands;
	uint64_t errors;
	uint64_t bad_doorbells;
};

struct sio_gpu_ctrl;

/**
 * sio_gpu_ctrl_create() - make a GPU-resident controller and its queue pairs
 * @o: the model
 * @out: the controller; close with sio_gpu_ctrl_close()
 * Return: 0, -EINVAL naming the bad option (checked before CUDA is
 * touched), -ENODEV, -ENOMEM, -EIO.
 */
int sio_gpu_ctrl_create(const struct sio_gpu_ctrl_opts *o, struct sio_gpu_ctrl **out);

/** sio_gpu_ctrl_queue() - queue pair @i's device-side queue (NULL past the last) */
struct sio_gpu_queue *sio_gpu_ctrl_queue(const struct sio_gpu_ctrl *c, uint32_t i);

/** sio_gpu_ctrl_bus() - the model's bus address of a device pointer */
uint64_t sio_gpu_ctrl_bus(const struct sio_gpu_ctrl *c, const void *dptr);

/**
 * sio_gpu_ctrl_fill() - write the pattern over a ram model's image
 * @c: a ram model, stopped
 * @seed: word w of the image becomes sio_gpu_pattern(@seed, w), so
 *	verified reads (sio_gpu_job.verify) check what they got
 */
int sio_gpu_ctrl_fill(struct sio_gpu_ctrl *c, uint64_t seed);

/** sio_gpu_ctrl_start() - launch the persistent kernel on a stream of its own */
int sio_gpu_ctrl_start(struct sio_gpu_ctrl *c);

/**
 * sio_gpu_ctrl_stop() - end the kernel and count what it did
 * @c: controller
 * @st: its counters (may be NULL)
 */
int sio_gpu_ctrl_stop(struct sio_gpu_ctrl *c, struct sio_gpu_ctrl_stats *st);

/** sio_gpu_ctrl_close() - stop if running, free everything (NULL is ignored) */
void sio_gpu_ctrl_close(struct sio_gpu_ctrl *c);

/**
 * sio_gpu_checksum() - checksum of GPU memory, computed on the GPU
 * @dptr: device pointer, 8-byte aligned
 * @len: bytes, a multiple of 8
 * @out: sum over 64-bit words w[i] of (w[i] ^ i), modulo 2^64
 */
int sio_gpu_checksum(const void *dptr, uint64_t len, uint64_t *out);

/** sio_gpu_checksum_host() - the same checksum over host memory */
uint64_t sio_gpu_checksum_host(const void *p, uint64_t len);

#ifdef __cplusplus
}
#endif

#endif
