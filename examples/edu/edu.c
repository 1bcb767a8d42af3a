/* SPDX-License-Identifier: MIT */
/*
 * The edu driver. Read it with docs/writing-a-driver.md: borrow, map BAR0,
 * check the device, then talk to it through its registers, moving data by
 * DMA to and from segments mapped for it, and waiting for it by polling or
 * by interrupt while watching the fabric's events.
 *
 * Written for a device whose register side effects may land a moment after
 * the store (the simulator's model polls its BAR): every wait checks the
 * register that proves the effect, never a status bit alone. On QEMU's edu
 * the effect is there at once, and the same checks pass at once.
 */
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <smartio/nvme/barrier.h>	/* wmb/rmb for device DMA; nothing NVMe in them */
#include "edu.h"

#define MAX_MAPS	16

struct edu {
	struct sio_fabric *f;
	struct sio_device *dev;
	struct sio_segment *bar;
	volatile uint8_t *regs;
	uint32_t id;			/* fabric device id */
	int lender;			/* its node, for link events */
	uint64_t mask;
	int timeout_ms;
	bool irq, unchecked;
	int irq_kind;
	uint64_t asked_ms;		/* when the fabric was last asked about the device */
	uint32_t causes;		/* interrupt causes taken and acknowledged */
	uint64_t nirq;
	struct sio_segment *mapped[MAX_MAPS];	/* what we mapped for the device */
	int nmapped;
};

/* ---- registers: 32-bit below 0x80, 64-bit DMA registers above ---- */

int edu_doorbells(volatile void *bar0, uint64_t size, struct sio_doorbells *db, void *arg)
{
	(void)bar0;
	(void)arg;
	if (size < EDU_REG_IRQ_ACK + 4)
		return sio_err_set(EINVAL, "edu: BAR0 of %llu bytes is no edu's",
				   (unsigned long long)size);
	*db = (struct sio_doorbells){
		.base = EDU_REG_IRQ_RAISE, .stride = 4, .count = 2,	/* raise, acknowledge */
		.regs = EDU_REG_IRQ_STATUS + 4, .live = EDU_REG_IRQ_STATUS + 4,
	};
	return 0;
}

static uint32_t rd32(struct edu *e, uint32_t off)
{
	return __atomic_load_n((volatile uint32_t *)(e->regs + off), __ATOMIC_RELAXED);
}

static void wr32(struct edu *e, uint32_t off, uint32_t v)
{
	__atomic_store_n((volatile uint32_t *)(e->regs + off), v, __ATOMIC_RELAXED);
}

static uint64_t rd64(struct edu *e, uint32_t off)
{
	return __atomic_load_n((volatile uint64_t *)(e->regs + off), __ATOMIC_RELAXED);
}

static void wr64(struct edu *e, uint32_t off, uint64_t v)
{
	__atomic_store_n((volatile uint64_t *)(e->regs + off), v, __ATOMIC_RELAXED);
}

static uint64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

/* ---- is the device still there? ---- */

/*
 * The fabric tells us when the device goes (its lender unregistered it or
 * died) or a link goes down; a read that returns all ones says the same
 * thing from the device's side, as on PCIe.
 */
static int check_alive(struct edu *e)
{
	struct sio_event ev[8];
	struct sio_device_info info;
	int n;

	while ((n = sio_event_read(e->f, ev, 8)) > 0)
		for (int i = 0; i < n; i++) {
			if (ev[i].type == SIO_EV_DEVICE_GONE && ev[i].device == (int32_t)e->id)
				return sio_err_set(ENODEV, "edu: device %u is gone: its lender (node %d) "
						   "unregistered it", e->id, ev[i].node);
			if (ev[i].type == SIO_EV_LINK_DOWN &&
			    (ev[i].node == e->lender || ev[i].node == sio_fabric_node_id(e->f)))
				return sio_err_set(ENOLINK, "edu: the link of node %d adapter %d is down: "
						   "device %u cannot be reached", ev[i].node,
						   ev[i].adapter, e->id);
		}
	/* a lender that died sends nothing: asking about the device reaps it
	 * (under the registry lock, so ten times a second, not every poll) */
	if (now_ms() - e->asked_ms >= 100) {
		e->asked_ms = now_ms();
		if (sio_device_info(e->dev, &info))
			return sio_err_wrap(ENODEV, "edu: lost device %u", e->id);
	}
	if (rd32(e, EDU_REG_ID) == UINT32_MAX)
		return sio_err_set(ENODEV, "edu: device %u reads all ones: removed, or its link is down",
				   e->id);
	return 0;
}

/* Take the interrupts that came: read the causes, acknowledge them in the
 * device, then re-arm the vector. */
static int take_irqs(struct edu *e)
{
	int n = sio_device_irq_wait(e->dev, 0, 0);
	uint32_t st;

	if (n == -EAGAIN)
		return 0;
	if (n < 0)
		return n;
	e->nirq += (uint64_t)n;
	st = rd32(e, EDU_REG_IRQ_STATUS);
	if (st) {
		wr32(e, EDU_REG_IRQ_ACK, st);
		e->causes |= st;
	}
	return sio_device_irq_ack(e->dev, 0);
}

/*
 * Wait until @done says so (and, with interrupts, the @cause interrupt
 * came, unless @cause is 0), at most the timeout. Polling backs off from 1 us to 1 ms; an
 * interrupt wait sleeps in slices of 100 ms to look at the fabric.
 */
static int wait_for(struct edu *e, bool (*done)(struct edu *, uint32_t), uint32_t arg,
		    uint32_t cause, const char *what)
{
	uint64_t start = now_ms(), sleep_ns = 1000;
	struct pollfd p[2] = { { .fd = sio_event_fd(e->f), .events = POLLIN },
			       { .fd = e->irq ? sio_device_irq_fd(e->dev, 0) : -1, .events = POLLIN } };
	int ret;

	for (;;) {
		if (e->irq && (ret = take_irqs(e)))
			return ret;
		if ((!e->irq || !cause || (e->causes & cause)) && done(e, arg)) {
			e->causes &= ~cause;
			sio_nvme_rmb();	/* what the device wrote is read after its completion */
			return 0;
		}
		if ((ret = check_alive(e)))
			return ret;
		if (now_ms() - start > (uint64_t)e->timeout_ms)
			return sio_err_set(ETIMEDOUT, "edu: device %u: %s not done within %d ms%s",
					   e->id, what, e->timeout_ms,
					   e->irq ? " (no interrupt came)" : "");
		if (e->irq) {
			ret = poll(p, 2, 100);
		} else {
			struct timespec ts = { 0, (long)sleep_ns };

			ret = ppoll(p, 1, &ts, NULL);
			sleep_ns = sleep_ns * 2 > 1000000 ? 1000000 : sleep_ns * 2;
		}
		if (ret < 0 && errno != EINTR)
			return sio_err_set(errno, "edu: poll: %s", strerror(errno));
	}
}

/* ---- open and close ---- */

static int find(struct sio_fabric *f, uint32_t want, uint32_t *id, int *lender)
{
	struct sio_device_info list[64];
	int n = sio_device_list(f, 0, 0, list, 64);

	if (n < 0)
		return n;
	for (int i = 0; i < n && i < 64; i++) {
		if (want != SIO_DEVICE_ANY && list[i].id != want)
			continue;
		if (list[i].vendor != EDU_VENDOR || list[i].device != EDU_DEVICE)
			return sio_err_set(ENODEV, "edu: device %u is %04x:%04x (%s), not an edu "
					   "device (%04x:%04x)", list[i].id, list[i].vendor,
					   list[i].device, list[i].name, EDU_VENDOR, EDU_DEVICE);
		*id = list[i].id;
		*lender = list[i].lender;
		return 0;
	}
	if (want != SIO_DEVICE_ANY)
		return sio_err_set(ENOENT, "edu: no device %u in fabric %s", want, sio_fabric_name(f));
	return sio_err_set(ENOENT, "edu: no edu device (%04x:%04x) in fabric %s", EDU_VENDOR,
			   EDU_DEVICE, sio_fabric_name(f));
}

int edu_open(struct sio_fabric *f, const struct edu_opts *o, struct edu **out)
{
	struct edu_opts def = { .device = SIO_DEVICE_ANY };
	struct edu *e;
	void *va;
	uint32_t id;
	int ret, bits;

	if (!f || !out)
		return sio_err_set(EINVAL, "edu: fabric or out pointer is NULL");
	o = o ? o : &def;
	bits = o->dma_bits ? o->dma_bits : EDU_DMA_BITS;
	if (bits < 12 || bits > 64)
		return sio_err_set(EINVAL, "edu: %d DMA address bits: 12..64", bits);
	if (!(e = calloc(1, sizeof(*e))))
		return sio_err_set(ENOMEM, "edu: out of memory");
	e->f = f;
	e->irq = o->irq;
	e->unchecked = o->unchecked;
	e->timeout_ms = o->timeout_ms > 0 ? o->timeout_ms : 5000;
	e->mask = bits == 64 ? UINT64_MAX : (1ull << bits) - 1;
	if ((ret = find(f, o->device, &e->id, &e->lender)) ||
	    (ret = sio_device_borrow(f, e->id, SIO_BORROW_EXCLUSIVE, &e->dev)))
		goto fail;
	/* Before any mapping: the addresses the device is given must fit its mask. */
	if ((ret = sio_device_set_dma_mask(e->dev, e->mask)) ||
	    (ret = sio_device_bar(e->dev, 0, &e->bar)) ||
	    (ret = sio_segment_map(e->bar, &va)))
		goto fail;
	e->regs = va;
	id = rd32(e, EDU_REG_ID);
	if ((id & 0xffff) != 0x00ed) {
		ret = sio_err_set(ENODEV, "edu: device %u's identification reads 0x%08x, not 0xRRrr00ed",
				  e->id, id);
		goto fail;
	}
	if (e->irq && (ret = e->irq_kind = sio_device_irq_enable(e->dev, o->irq_kinds, 1)) < 0)
		goto fail;
	*out = e;
	return 0;
fail:
	edu_close(e);
	return ret;
}

void edu_close(struct edu *e)
{
	if (!e)
		return;
	for (int i = 0; i < e->nmapped; i++)
		sio_device_unmap(e->dev, e->mapped[i]);
	if (e->bar)
		sio_segment_unmap(e->bar);
	sio_device_close(e->dev);	/* disables the interrupts too */
	free(e);
}

struct sio_device *edu_device(struct edu *e) { return e->dev; }
uint32_t edu_id(struct edu *e) { return rd32(e, EDU_REG_ID); }
uint64_t edu_irqs(struct edu *e) { return e->nirq; }
int edu_irq_kind(struct edu *e) { return e->irq ? e->irq_kind : 0; }

/* ---- liveness and factorial ---- */

static bool live_done(struct edu *e, uint32_t pattern)
{
	return rd32(e, EDU_REG_LIVE) == ~pattern;
}

int edu_live(struct edu *e, uint32_t pattern)
{
	int ret;

	/* a store of what the register shows cannot be told from no store on a
	 * model that polls: pick another pattern then */
	if (rd32(e, EDU_REG_LIVE) == pattern)
		pattern = ~pattern;
	wr32(e, EDU_REG_LIVE, pattern);
	ret = wait_for(e, live_done, pattern, 0, "liveness check");
	if (ret == -ETIMEDOUT)
		return sio_err_set(EIO, "edu: device %u failed the liveness check: wrote 0x%08x, "
				   "read back 0x%08x, not 0x%08x", e->id, pattern,
				   rd32(e, EDU_REG_LIVE), ~pattern);
	return ret;
}

int edu_live_once(struct edu *e, uint32_t pattern, uint32_t *read)
{
	if (!read)
		return sio_err_set(EINVAL, "edu: out pointer is NULL");
	wr32(e, EDU_REG_LIVE, pattern);
	*read = rd32(e, EDU_REG_LIVE);
	return 0;
}

/* n! mod 2^32 equals n for n = 1 and 2 only */
static bool causes_are(struct edu *e, uint32_t want)
{
	return rd32(e, EDU_REG_IRQ_STATUS) == want;
}

int edu_ring(struct edu *e, uint32_t cause)
{
	uint32_t before = rd32(e, EDU_REG_IRQ_STATUS);
	int ret;

	if (!cause || (before & cause))
		return sio_err_set(EINVAL, "edu: cause 0x%x is none, or is raised already (0x%x)",
				   cause, before);
	/* the interrupt stays unserved: only the two doorbells and IRQ_STATUS are used */
	wr32(e, EDU_REG_IRQ_RAISE, cause);
	if ((ret = wait_for(e, causes_are, before | cause, 0, "raising an interrupt cause")))
		return ret;
	wr32(e, EDU_REG_IRQ_ACK, cause);
	return wait_for(e, causes_are, before, 0, "acknowledging an interrupt cause");
}

static bool fixed_point(uint32_t n)
{
	return n == 1 || n == 2;
}

static bool not_computing(struct edu *e, uint32_t unused)
{
	(void)unused;
	return !(rd32(e, EDU_REG_STATUS) & EDU_ST_COMPUTING);
}

static bool fact_done(struct edu *e, uint32_t n)
{
	return not_computing(e, 0) && (rd32(e, EDU_REG_FACT) != n || fixed_point(n));
}

int edu_factorial(struct edu *e, uint32_t n, uint32_t *out)
{
	int ret;

	if (!out)
		return sio_err_set(EINVAL, "edu: out pointer is NULL");
	/*
	 * A fixed point's result (1! = 1, 2! = 2) reads as done before a
	 * device that polls its registers took the operand, and it may be
	 * computing it now: wait for that (bounded), as for any operation.
	 */
	if ((ret = wait_for(e, not_computing, 0, 0, "the factorial the device was computing")))
		return ret;
	/* the register shows n (a previous result): make it show something
	 * else first, so the store of n is one the device can see. p differs
	 * from n and so does p! (0! = 1, 3! = 6). */
	if (rd32(e, EDU_REG_FACT) == n) {
		uint32_t p = n <= 1 ? 3 : 0;

		wr32(e, EDU_REG_STATUS, 0);
		wr32(e, EDU_REG_FACT, p);
		if ((ret = wait_for(e, fact_done, p, 0, "factorial")))
			return ret;
	}
	e->causes &= ~EDU_IRQ_FACT;
	wr32(e, EDU_REG_STATUS, e->irq ? EDU_ST_IRQFACT : 0);
	sio_nvme_wmb();		/* the interrupt request before the operand */
	wr32(e, EDU_REG_FACT, n);
	if ((ret = wait_for(e, fact_done, n, EDU_IRQ_FACT, "factorial")))
		return ret;
	*out = rd32(e, EDU_REG_FACT);
	return 0;
}

/* ---- DMA ---- */

static bool dma_done(struct edu *e, uint32_t unused)
{
	(void)unused;
	return !(rd64(e, EDU_REG_DMA_CMD) & EDU_CMD_RUN);
}

int edu_dma(struct edu *e, bool to_ram, uint64_t bus, uint32_t buf_off, uint32_t len)
{
	if (!len || len > EDU_XFER_MAX || buf_off > EDU_XFER_MAX - len)
		return sio_err_set(EINVAL, "edu: %u bytes at buffer offset %u: a transfer may cover "
				   "the first %u bytes of the device's %u-byte buffer (QEMU 7.2 aborts on "
				   "one that reaches the last)", len, buf_off, EDU_XFER_MAX, EDU_BUF_SIZE);
	/* the device clamps what lies beyond its mask (QEMU's edu_clamp_addr):
	 * the transfer would land elsewhere, so it is refused here */
	if (!e->unchecked && (bus > e->mask || len - 1 > e->mask - bus))
		return sio_err_set(ERANGE, "edu: bus address 0x%llx (+%u bytes) is beyond device %u's "
				   "DMA mask 0x%llx (%d bits): the device would use 0x%llx",
				   (unsigned long long)bus, len, e->id, (unsigned long long)e->mask,
				   64 - __builtin_clzll(e->mask), (unsigned long long)(bus & e->mask));
	if (rd64(e, EDU_REG_DMA_CMD) & EDU_CMD_RUN)
		return sio_err_set(EBUSY, "edu: device %u's DMA engine is busy", e->id);
	wr64(e, EDU_REG_DMA_SRC, to_ram ? EDU_BUF_OFF + buf_off : bus);
	wr64(e, EDU_REG_DMA_DST, to_ram ? bus : EDU_BUF_OFF + buf_off);
	wr64(e, EDU_REG_DMA_CNT, len);
	e->causes &= ~EDU_IRQ_DMA;
	/* the data (RAM -> edu) and the registers before the command */
	sio_nvme_wmb();
	wr64(e, EDU_REG_DMA_CMD, EDU_CMD_RUN | (to_ram ? EDU_CMD_TO_RAM : 0) |
	     (e->irq ? EDU_CMD_IRQ : 0));
	return wait_for(e, dma_done, 0, EDU_IRQ_DMA, to_ram ? "DMA to RAM" : "DMA from RAM");
}

/* The bus address of @seg for the device: mapped once, kept until close. */
static int bus_of(struct edu *e, struct sio_segment *seg, uint64_t off, uint32_t len,
		  uint64_t *bus)
{
	struct sio_segment_info si;
	uint64_t base;
	int ret = sio_segment_info(seg, &si);

	if (ret)
		return ret;
	if (off > si.size || len > si.size - off)
		return sio_err_set(EINVAL, "edu: %u bytes at offset %llu do not fit segment %u "
				   "(%llu bytes)", len, (unsigned long long)off, si.id,
				   (unsigned long long)si.size);
	if ((ret = sio_device_map(e->dev, seg, &base)))	/* same address when mapped again */
		return ret;
	for (int i = 0; i < e->nmapped; i++)
		if (e->mapped[i] == seg)
			goto out;
	if (e->nmapped == MAX_MAPS) {
		sio_device_unmap(e->dev, seg);
		return sio_err_set(ENOSPC, "edu: %d segments mapped for the device already", MAX_MAPS);
	}
	e->mapped[e->nmapped++] = seg;
out:
	*bus = base + off;
	return 0;
}

int edu_to_device(struct edu *e, struct sio_segment *seg, uint64_t off, uint32_t buf_off,
		  uint32_t len)
{
	uint64_t bus;
	int ret = bus_of(e, seg, off, len, &bus);

	return ret ? ret : edu_dma(e, false, bus, buf_off, len);
}

int edu_from_device(struct edu *e, struct sio_segment *seg, uint64_t off, uint32_t buf_off,
		    uint32_t len)
{
	uint64_t bus;
	int ret = bus_of(e, seg, off, len, &bus);

	return ret ? ret : edu_dma(e, true, bus, buf_off, len);
}
