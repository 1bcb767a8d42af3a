/* SPDX-License-Identifier: MIT */
/*
 * The edu model. BAR0 is shared memory the driver stores into with plain
 * stores, so nothing traps an access: the model notices a register write by
 * polling and comparing with what it last published, applies the write's
 * effect, and publishes the register as the device shows it (0x04 reads
 * back inverted, 0x08 the factorial, read-only registers restored). Two
 * consequences, both listed in docs/writing-a-driver.md: an effect lands a
 * poll after the store (on QEMU, before the store returns), and a store of
 * the value a register already shows cannot be seen.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <smartio/backoff.h>
#include <smartio/model.h>
#include "clock.h"
#include "edu-model.h"

/* The register map (QEMU docs/specs/edu.rst). */
enum {
	R_ID = 0x00, R_LIVE = 0x04, R_FACT = 0x08, R_STATUS = 0x20, R_IRQ_STATUS = 0x24,
	R_IRQ_RAISE = 0x60, R_IRQ_ACK = 0x64,
	R_DMA_SRC = 0x80, R_DMA_DST = 0x88, R_DMA_CNT = 0x90, R_DMA_CMD = 0x98,
};
#define EDU_ID			0x010000edu	/* version 1.0 */
#define ST_COMPUTING		0x01u
#define ST_IRQFACT		0x80u
#define IRQ_FACT		0x001u
#define IRQ_DMA			0x100u
#define CMD_RUN			0x1u
#define CMD_TO_PCI		0x2u
#define CMD_IRQ			0x4u
#define BUF_OFF			0x40000u
#define BUF_SIZE		4096u
#define BAR_SIZE		(1u << 20)

struct sio_edu_emu {
	struct sio_fabric *f;
	struct sio_devreg *reg;
	char *bar;
	struct sio_edu_emu_config cfg;
	/* what the model last published */
	uint32_t live, fact, status, irq_status;
	uint64_t src, dst, cnt, cmd;
	bool busy;			/* a DMA under way (cfg.dma_ms) */
	uint64_t due_ns;
	char buf[BUF_SIZE];
};

static uint32_t *r32(struct sio_edu_emu *e, uint32_t off) { return (uint32_t *)(e->bar + off); }
static uint64_t *r64(struct sio_edu_emu *e, uint32_t off) { return (uint64_t *)(e->bar + off); }
static uint32_t ld32(struct sio_edu_emu *e, uint32_t off) { return __atomic_load_n(r32(e, off), __ATOMIC_ACQUIRE); }
static uint64_t ld64(struct sio_edu_emu *e, uint32_t off) { return __atomic_load_n(r64(e, off), __ATOMIC_ACQUIRE); }
static void st32(struct sio_edu_emu *e, uint32_t off, uint32_t v) { __atomic_store_n(r32(e, off), v, __ATOMIC_RELEASE); }
static void st64(struct sio_edu_emu *e, uint32_t off, uint64_t v) { __atomic_store_n(r64(e, off), v, __ATOMIC_RELEASE); }

/* edu raises its one vector on each raise while a cause is set (msi_notify). */
static void raise_irq(struct sio_edu_emu *e, uint32_t cause)
{
	e->irq_status |= cause;
	st32(e, R_IRQ_STATUS, e->irq_status);
	if (e->irq_status && sio_devreg_irq_raise(e->reg, 0) < 0)
		fprintf(stderr, "edu-emu: %s\n", sio_errmsg());
}

static uint32_t factorial(uint32_t n)
{
	uint32_t r = 1;

	while (n > 0)
		r *= n--;	/* modulo 2^32, as QEMU's 32-bit register */
	return r;
}

static uint64_t clamp(struct sio_edu_emu *e, uint64_t addr)
{
	if (addr & ~e->cfg.dma_mask)
		fprintf(stderr, "edu-emu: clamping DMA 0x%016llx to 0x%016llx (DMA mask 0x%llx)\n",
			(unsigned long long)addr, (unsigned long long)(addr & e->cfg.dma_mask),
			(unsigned long long)e->cfg.dma_mask);
	return addr & e->cfg.dma_mask;
}

/* The transfer the driver programmed; QEMU's edu_dma_timer(). */
static void dma_run(struct sio_edu_emu *e)
{
	bool to_pci = e->cmd & CMD_TO_PCI;
	uint64_t off = to_pci ? e->src : e->dst, bus = to_pci ? e->dst : e->src;
	int ret = 0;

	if (off < BUF_OFF || off - BUF_OFF > BUF_SIZE || e->cnt > BUF_SIZE - (off - BUF_OFF)) {
		/* QEMU logs this and copies anyway, past its buffer; the model copies nothing */
		fprintf(stderr, "edu-emu: DMA range 0x%llx+0x%llx out of the buffer 0x%x-0x%x, not done\n",
			(unsigned long long)off, (unsigned long long)e->cnt, BUF_OFF,
			BUF_OFF + BUF_SIZE - 1);
	} else if (e->cnt) {
		bus = clamp(e, bus);
		ret = to_pci ? sio_dma_write(e->reg, bus, e->buf + off - BUF_OFF, e->cnt)
			     : sio_dma_read(e->reg, bus, e->buf + off - BUF_OFF, e->cnt);
		/* a fault is the device's own business: counted, and the engine completes */
		if (ret)
			fprintf(stderr, "edu-emu: %s\n", sio_errmsg());
	}
	e->busy = false;
	e->cmd &= ~(uint64_t)CMD_RUN;
	st64(e, R_DMA_CMD, e->cmd);
	if (e->cmd & CMD_IRQ)
		raise_irq(e, IRQ_DMA);
}

static int poll_dma(struct sio_edu_emu *e)
{
	uint64_t cmd = ld64(e, R_DMA_CMD);

	if (e->busy) {
		/* QEMU ignores writes to the DMA registers while RUN is set */
		if (ld64(e, R_DMA_SRC) != e->src) st64(e, R_DMA_SRC, e->src);
		if (ld64(e, R_DMA_DST) != e->dst) st64(e, R_DMA_DST, e->dst);
		if (ld64(e, R_DMA_CNT) != e->cnt) st64(e, R_DMA_CNT, e->cnt);
		if (cmd != e->cmd) st64(e, R_DMA_CMD, e->cmd);
		if (sio__now_ns() < e->due_ns)
			return 0;
		dma_run(e);
		return 1;
	}
	e->src = ld64(e, R_DMA_SRC);
	e->dst = ld64(e, R_DMA_DST);
	e->cnt = ld64(e, R_DMA_CNT);
	if (cmd == e->cmd)
		return 0;
	if (!(cmd & CMD_RUN)) {		/* a command without RUN is ignored */
		st64(e, R_DMA_CMD, e->cmd);
		return 1;
	}
	e->cmd = cmd;
	e->busy = true;
	e->due_ns = sio__now_ns() + (uint64_t)e->cfg.dma_ms * 1000000ull;
	if (!e->cfg.dma_ms)
		dma_run(e);
	return 1;
}

int sio_edu_emu_poll(struct sio_edu_emu *e)
{
	uint32_t v;
	int work = 0;

	if (ld32(e, R_ID) != EDU_ID)
		st32(e, R_ID, EDU_ID);
	if ((v = ld32(e, R_LIVE)) != e->live) {
		e->live = ~v;
		st32(e, R_LIVE, e->live);
		work++;
	}
	/* acknowledgements first: a driver acks before it starts the next
	 * operation, and a poll may find both stores */
	if ((v = __atomic_exchange_n(r32(e, R_IRQ_RAISE), 0, __ATOMIC_ACQ_REL))) {
		raise_irq(e, v);
		work++;
	}
	if ((v = __atomic_exchange_n(r32(e, R_IRQ_ACK), 0, __ATOMIC_ACQ_REL))) {
		e->irq_status &= ~v;
		work++;
	}
	if ((v = ld32(e, R_FACT)) != e->fact) {
		/* COMPUTING shows while the product is formed; the result lands first */
		e->status |= ST_COMPUTING;
		__atomic_or_fetch(r32(e, R_STATUS), ST_COMPUTING, __ATOMIC_ACQ_REL);
		/* only over the operand read: a driver's newer store (its next
		 * operand, once it took a fixed point's result: 1! = 1, 2! = 2)
		 * is computed next poll, not overwritten, as QEMU's edu sees
		 * every store in its write handler */
		e->fact = factorial(v);
		__atomic_compare_exchange_n(r32(e, R_FACT), &v, e->fact, false,
					    __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE);
		e->status &= ~ST_COMPUTING;
		__atomic_and_fetch(r32(e, R_STATUS), ~ST_COMPUTING, __ATOMIC_ACQ_REL);
		if (ld32(e, R_STATUS) & ST_IRQFACT)
			raise_irq(e, IRQ_FACT);
		work++;
	}
	/* STATUS: the driver owns IRQFACT, the device COMPUTING; nothing else exists */
	v = ld32(e, R_STATUS);
	if (v != ((v & ST_IRQFACT) | e->status)) {
		__atomic_compare_exchange_n(r32(e, R_STATUS), &v, (v & ST_IRQFACT) | e->status, false,
					    __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE);
		work++;
	}
	if (ld32(e, R_IRQ_STATUS) != e->irq_status)
		st32(e, R_IRQ_STATUS, e->irq_status);
	return work + poll_dma(e);
}

int sio_edu_emu_run(struct sio_edu_emu *e, volatile sig_atomic_t *stop)
{
	uint64_t checked = sio__now_ns();
	struct sio_backoff b;

	/* yield a little, then sleep longer and longer up to 1 ms (2 cores) */
	sio_backoff_init(&b, 0, 64, 1000000);
	while (!*stop) {
		/* a destroyed fabric is an orderly stop */
		if (sio__now_ns() - checked > 100000000ull) {
			checked = sio__now_ns();
			if (sio_fabric_alive(e->f)) {
				fprintf(stderr, "edu-emu: %s; stopping\n", sio_errmsg());
				return 0;
			}
		}
		if (sio_edu_emu_poll(e) > 0) {
			sio_backoff_reset(&b);
			continue;
		}
		if (e->cfg.poll_ms) {	/* a fixed interval, as asked */
			struct timespec ts = { e->cfg.poll_ms / 1000, (long)(e->cfg.poll_ms % 1000) * 1000000 };

			nanosleep(&ts, NULL);
			continue;
		}
		b.max_ns = e->busy ? 100000 : 1000000;
		sio_backoff_wait(&b);
	}
	return 0;
}

int sio_edu_emu_create(struct sio_fabric *f, const struct sio_edu_emu_config *cfg,
		       struct sio_edu_emu **out)
{
	struct sio_device_desc d = { .class_code = 0xff0000, .vendor = 0x1234, .device = 0x11e8,
				     .nbars = 1, .bar_size = { BAR_SIZE } };
	struct sio_edu_emu *e;
	struct sio_segment *bar;
	int ret;

	if (!f || !out)
		return sio_err_set(EINVAL, "edu-emu: fabric or out pointer is NULL");
	if (cfg->dma_mask && ((cfg->dma_mask & (cfg->dma_mask + 1)) || cfg->dma_mask < 4095))
		return sio_err_set(EINVAL, "edu-emu: DMA mask 0x%llx is not 2^n - 1 with n >= 12",
				   (unsigned long long)cfg->dma_mask);
	e = calloc(1, sizeof(*e));
	if (!e)
		return sio_err_set(ENOMEM, "edu-emu: out of memory");
	e->f = f;
	e->cfg = *cfg;
	if (!e->cfg.dma_mask)
		e->cfg.dma_mask = (1ull << 28) - 1;
	d.chassis = cfg->chassis;
	d.name = cfg->name ? cfg->name : "edu";
	ret = sio_device_register(f, &d, &e->reg);
	if (!ret)
		ret = sio_devreg_bar(e->reg, 0, &bar);
	if (!ret)
		ret = sio_segment_map(bar, (void **)&e->bar);
	if (ret) {
		sio_devreg_close(e->reg);
		free(e);
		return ret;
	}
	/* offsets with no register read all ones, as QEMU answers them */
	memset(e->bar, 0xff, BAR_SIZE);
	e->live = 0;
	st32(e, R_LIVE, 0);
	st32(e, R_FACT, 0);
	st32(e, R_STATUS, 0);
	st32(e, R_IRQ_STATUS, 0);
	st32(e, R_IRQ_RAISE, 0);
	st32(e, R_IRQ_ACK, 0);
	st64(e, R_DMA_SRC, 0);
	st64(e, R_DMA_DST, 0);
	st64(e, R_DMA_CNT, 0);
	st64(e, R_DMA_CMD, 0);
	st32(e, R_ID, EDU_ID);	/* last: a driver that sees it sees the rest */
	*out = e;
	return 0;
}

uint32_t sio_edu_emu_device_id(const struct sio_edu_emu *e)
{
	return sio_devreg_id(e->reg);
}

void sio_edu_emu_destroy(struct sio_edu_emu *e)
{
	if (!e)
		return;
	sio_devreg_close(e->reg);
	free(e);
}
