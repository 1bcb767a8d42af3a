/* SPDX-License-Identifier: MIT */
#ifndef SIO_NVME_EMU_H
#define SIO_NVME_EMU_H

/**
 * DOC: emulated NVMe controller
 *
 * A device model of an NVMe controller (NVMe base specification 1.4) for
 * the simulated fabric. The model is a small library so that the nvme-emu
 * program, the fuzz target and the benchmark all drive the same code: create
 * a controller from a configuration, attach it to a fabric node (or, for
 * in-process drivers, to plain memory), then call sio_nvme_emu_poll() or
 * sio_nvme_emu_run() from one thread.
 *
 * Every call returns 0 (or a count) on success and -errno on failure, with a
 * message in libsmartio's sio_errmsg(), as every smartio library reports.
 */

#include <signal.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct sio_fabric;
struct sio_nvme_emu;

#define SIO_NVME_EMU_MAX_NS	16
#define SIO_NVME_EMU_MAX_QUEUES	1024	/* I/O queue pairs */

/**
 * struct sio_nvme_emu_ns - one namespace
 * @size: bytes (a multiple of @lba_size)
 * @lba_size: 512 or 4096
 */
struct sio_nvme_emu_ns {
	uint64_t size;
	uint32_t lba_size;
};

/**
 * struct sio_nvme_emu_config - a controller's shape
 * @backing: a file path, or "ram:SIZE" (SIZE with K, M, G suffixes)
 * @nns: namespaces; 0 makes one covering the backing store
 * @lba_size: LBA size of that one namespace when @nns is 0 (0 picks 512)
 * @ns: the namespaces, laid out one after another in the backing store
 * @max_qpairs: I/O queue pairs the controller offers (1..1024)
 * @mqes: largest queue size, entries (2..65536); CAP.MQES is this minus one
 * @dstrd: doorbell stride, CAP.DSTRD (0..8)
 * @mdts: maximum data transfer size as a power of two of 4 KiB (1..10)
 * @cmb_mib: controller memory buffer in MiB (0: none), exposed as BAR 2
 * @io_depth: file I/O commands in flight (io_uring depth, 1..1024)
 * @vendor: PCI vendor id (0 picks 0x1b36)
 * @name: device label
 * @chassis: sits behind an expansion-chassis switch of its node
 * @ns_state: file remembering the namespaces between runs (NULL: none); a
 *	change since the last run is a Namespace Attribute Changed event
 * @cap_to: CAP.TO, in 500 ms units (1..255): the longest the host waits
 *	for the controller to become ready, or to stop, at each reset
 * @lost_dma_ok: admin data to the host (Identify, a log page) lost on a
 *	link that is down completes with success, as QEMU's controller's
 *	does (a model of it; else a data transfer error)
 */
struct sio_nvme_emu_config {
	const char *backing;
	int nns;
	uint32_t lba_size;
	struct sio_nvme_emu_ns ns[SIO_NVME_EMU_MAX_NS];
	uint32_t max_qpairs;
	uint32_t mqes;
	uint32_t dstrd;
	uint32_t mdts;
	uint32_t cmb_mib;
	uint32_t io_depth;
	uint16_t vendor;
	const char *name;
	bool chassis;
	const char *ns_state;
	uint32_t cap_to;
	bool lost_dma_ok;
};

/**
 * struct sio_nvme_emu_dma - how the model reaches host memory
 * @read: device reads @len bytes at @bus
 * @write: device writes @len bytes at @bus
 * @ptr: pointer to @len contiguous bytes at @bus
 * @ctx: passed to each
 * @batch_begin: optional (with the next two, or none): writes may land
 *	later, until @batch_end
 * @batch_pending: whether a write since @batch_begin may not have landed
 * @batch_end: every such write landed (0), or one failed (-EIO)
 *
 * Each returns 0, -EFAULT (nothing mapped there) or -ENOLINK (link down),
 * as sio_dma_read(), sio_dma_write() and sio_dma_ptr() do; attaching to a
 * fabric uses exactly those, and sio_dma_batch_*() for the batch.
 */
struct sio_nvme_emu_dma {
	int (*read)(void *ctx, uint64_t bus, void *buf, size_t len);
	int (*write)(void *ctx, uint64_t bus, const void *buf, size_t len);
	int (*ptr)(void *ctx, uint64_t bus, size_t len, bool write, void **ptr);
	void *ctx;
	void (*batch_begin)(void *ctx);
	bool (*batch_pending)(void *ctx);
	int (*batch_end)(void *ctx);
};

/**
 * sio_nvme_emu_config_default() - fill a configuration with defaults
 * @cfg: filled in: ram:64M, 64 queue pairs, MQES 1023, DSTRD 0, MDTS 5
 *	(128 KiB), no CMB, 64 in flight
 */
void sio_nvme_emu_config_default(struct sio_nvme_emu_config *cfg);

/**
 * sio_nvme_emu_parse_size() - parse "64M", "1G", "4096"
 * @s: text
 * @out: bytes
 * Return: 0 or -EINVAL.
 */
int sio_nvme_emu_parse_size(const char *s, uint64_t *out);

/**
 * sio_nvme_emu_bar0_size() - bytes of BAR0 a configuration needs
 * @cfg: configuration
 *
 * Registers (4 KiB) plus doorbells for the admin queue and every I/O queue
 * pair at the configured stride, rounded up to 4 KiB.
 */
uint64_t sio_nvme_emu_bar0_size(const struct sio_nvme_emu_config *cfg);

/**
 * sio_nvme_emu_create() - create a controller and open its backing store
 * @cfg: configuration (copied)
 * @out: the controller
 * Return: 0, -EINVAL naming the bad field, or the backing store's -errno.
 */
int sio_nvme_emu_create(const struct sio_nvme_emu_config *cfg,
			struct sio_nvme_emu **out);

/**
 * sio_nvme_emu_attach() - register the controller as a device of a node
 * @emu: controller
 * @f: fabric handle (the node the controller is installed in)
 *
 * Registers class 0x010802 with BAR0 (registers and doorbells) and, with a
 * CMB, BAR2; DMA goes through sio_dma_read()/sio_dma_write()/sio_dma_ptr().
 */
int sio_nvme_emu_attach(struct sio_nvme_emu *emu, struct sio_fabric *f);

/**
 * sio_nvme_emu_attach_mem() - attach to plain memory, for in-process drivers
 * @emu: controller
 * @bar0: at least sio_nvme_emu_bar0_size() bytes, zeroed
 * @dma: how to reach "host" memory (copied)
 */
int sio_nvme_emu_attach_mem(struct sio_nvme_emu *emu, void *bar0,
			    const struct sio_nvme_emu_dma *dma);

/**
 * sio_nvme_emu_device_id() - fabric device id, or -1 when not on a fabric
 * @emu: controller
 */
int64_t sio_nvme_emu_device_id(const struct sio_nvme_emu *emu);

/**
 * sio_nvme_emu_irqs() - completion interrupts the controller signalled
 * @emu: controller
 *
 * Return: one per vector per signal, counted whether or not a host took
 * the vector (a controller with no fabric signals into nothing).
 */
uint64_t sio_nvme_emu_irqs(const struct sio_nvme_emu *emu);

/**
 * sio_nvme_emu_poll() - one pass over registers, doorbells and file I/O
 * @emu: controller
 * Return: the number of things done (0 when idle), or -errno.
 */
int sio_nvme_emu_poll(struct sio_nvme_emu *emu);

/**
 * sio_nvme_emu_fail() - fail as a controller with a fatal error does
 * @emu: controller
 *
 * Fault injection, safe from any thread (or a signal handler): at its next
 * poll an enabled controller sets CSTS.CFS and processes no command until
 * the host resets it (CC.EN to 0), which clears CFS.
 */
void sio_nvme_emu_fail(struct sio_nvme_emu *emu);

/**
 * sio_nvme_emu_run() - poll until *@stop, backing off when idle
 * @emu: controller
 * @stop: set (by a signal handler) to end the loop
 *
 * Spins briefly after work, then yields, then sleeps with intervals growing
 * to 200 us, so that an idle controller leaves the core to others.
 */
int sio_nvme_emu_run(struct sio_nvme_emu *emu, volatile sig_atomic_t *stop);

/**
 * sio_nvme_emu_destroy() - finish file I/O, unregister, close the backing
 * @emu: controller (NULL is ignored)
 */
void sio_nvme_emu_destroy(struct sio_nvme_emu *emu);

#endif
