/* SPDX-License-Identifier: MIT */
#ifndef SIO_NVME_PRIV_H
#define SIO_NVME_PRIV_H

/* Internal to the NVMe driver: clocks, bounded waiting, register access.
 * Errors go through libsmartio's sio_err_set() and sio_err_wrap(). */

#include <errno.h>
#include <stdint.h>
#include <time.h>
#include <smartio/backoff.h>
#include <smartio/nvme/ctrl.h>
#include "align.h"
#include "clock.h"

/* Doorbells this far apart can be confined (the rule: manager.h, DOC). */
#define SIO_NVME_CONFINE_PAGE	4096u

/* err.c: an admin opcode's name, for messages ("Identify"). */
const char *sio_nvme_admin_name(uint8_t opc);

/* client.c: $@var, strictly (0..@max; @def when unset), for what it says. */
int sio_nvme_env_u32(const char *var, uint32_t def, uint32_t max, const char *what,
		     uint32_t *out);
/* client.c: how long a client or a manager waits for a link to the lender
 * that is down ($SMARTIO_NVME_LINK_GRACE_MS, default 10 s), in @ms. */
int sio_nvme_link_grace_ms(uint32_t *ms);
/*
 * client.c: wait while @away(@arg) says the lender is out of reach (> 0),
 * backing off, $SMARTIO_NVME_LINK_GRACE_MS (@grace_ms) at most: the one wait
 * of a client starting, a queue pausing and a manager away from the lender.
 * @waited_ns (may be NULL): how long. Return: 0 once it is in reach,
 * -ETIMEDOUT past the grace, or what @away returned (< 0).
 */
int sio_nvme_grace_wait(int (*away)(void *arg), void *arg, uint32_t grace_ms,
			uint64_t *waited_ns);

/* The driver's waits back off as every polling loop does (smartio/backoff.h):
 * register and mailbox waits briefly spin, then sleep up to @max_ns. */
static inline void sio_nvme_backoff_init(struct sio_backoff *b, uint32_t max_ns)
{
	sio_backoff_init(b, 64, 16, max_ns);
}

/* For I/O waits, where the answer is usually microseconds away. */
static inline void sio_nvme_backoff_init_io(struct sio_backoff *b)
{
	sio_backoff_init(b, 200, 2000, 50000);
}

/* 32/64-bit register access on BAR0; 64-bit registers as two dwords (lo
 * first), which every controller accepts. */
static inline uint32_t sio_nvme_rd32(volatile void *regs, uint32_t off)
{
	return __atomic_load_n((volatile uint32_t *)((volatile uint8_t *)regs + off),
			       __ATOMIC_ACQUIRE);
}

static inline void sio_nvme_wr32(volatile void *regs, uint32_t off, uint32_t v)
{
	__atomic_thread_fence(__ATOMIC_RELEASE);
	__atomic_store_n((volatile uint32_t *)((volatile uint8_t *)regs + off), v,
			 __ATOMIC_RELAXED);
}

static inline uint64_t sio_nvme_rd64(volatile void *regs, uint32_t off)
{
	uint64_t lo = sio_nvme_rd32(regs, off);
	uint64_t hi = sio_nvme_rd32(regs, off + 4);

	return lo | hi << 32;
}

static inline void sio_nvme_wr64(volatile void *regs, uint32_t off, uint64_t v)
{
	sio_nvme_wr32(regs, off, (uint32_t)v);
	sio_nvme_wr32(regs, off + 4, (uint32_t)(v >> 32));
}

/* The controller's device left the fabric: admin commands fail at once
 * and sio_nvme_ctrl_close() skips the shutdown that would wait CAP.TO. */
void sio_nvme_ctrl_gone(struct sio_nvme_ctrl *c);

/*
 * Manager failover (manager.c, ctrl.c): what a manager needs to take a
 * running controller over lives in kept segments (SIO_SEG_F_KEEP) on the
 * lender's node, which outlive the manager's crash: the admin queues and
 * their positions, the mailbox, and the manager's tables. Well-known ids,
 * one of each per device.
 */
#define SIO_NVME_ADM_SEGID(dev)		(0x4e570000u | ((dev) & 0xffffu))
#define SIO_NVME_ADM_CQ_OFF		0x1000u	/* the admin CQ, in that segment */
#define SIO_NVME_STATE_SEGID(dev)	(0x4e580000u | ((dev) & 0xffffu))
#define SIO_NVME_DBBUF_SEGID(dev)	(0x4e590000u | ((dev) & 0xffffu))

/*
 * Asynchronous Event Requests the controller driver keeps outstanding at
 * most (ctrl.c): each holds an admin tag for as long as no event comes, so
 * a batch of admin commands is at most SIO_NVME_ADMIN_DEPTH - 1 - this.
 */
#define SIO_NVME_ADMIN_AERS	4u

/*
 * Create (or adopt, from a manager that crashed) the kept segment @id of
 * @size bytes on @node, named @name, and map it here. @dma: the device
 * reaches it (its memory is then placed as any DMA buffer's, on huge pages
 * where there are: without an IOMMU the device needs them). -EBUSY when a
 * live manager holds it.
 */
int sio_nvme_kept_segment(struct sio_fabric *f, int node, uint32_t id, uint64_t size, bool dma,
			  const char *name, struct sio_segment **seg, void **va);

/*
 * Bring the controller up with its admin queues in the kept segment
 * @adm_id on the lender's node. @was NULL: reset and enable it. Otherwise
 * adopt it as it runs, without a reset, once its registers, the kept admin
 * queue and an Identify agree with @was (what the manager that enabled it
 * published): -ESTALE when they do not (a reset is needed), -EIO on
 * CSTS.CFS.
 */
int sio_nvme_ctrl_open_kept(struct sio_device *dev, const struct sio_nvme_ctrl_opts *opts,
			    uint32_t adm_id, const struct sio_nvme_ctrl_info *was,
			    struct sio_nvme_ctrl **out);

/*
 * Several admin commands at once (the manager serving several clients):
 * submitted together, rung once, each completion matched to its command in
 * @cpls. Return: 0 once all were answered (their status is in @cpls), or
 * -errno when the admin queue failed (none, or not all, answered).
 */
int sio_nvme_ctrl_admin_many(struct sio_nvme_ctrl *c, const struct sio_nvme_cmd *cmds,
			     uint32_t n, struct sio_nvme_cpl *cpls, uint32_t timeout_ms);

/*
 * Reset the controller in place (disable, the admin queue anew, enable,
 * identify, CMB and shadow doorbells as before): every I/O queue is gone.
 * Return: 0, or -errno (-ETIMEDOUT: it did not disable or become ready
 * within CAP.TO; -ENODEV: it is gone).
 */
int sio_nvme_ctrl_reset(struct sio_nvme_ctrl *c);

/*
 * Whether the controller serves: 0; -ENODEV (gone, or all ones), -EIO
 * (CSTS.CFS), -ETIMEDOUT (an admin command timed out), -ESTALE (no longer
 * enabled and ready: something else disabled it). All but -ENODEV call
 * for sio_nvme_ctrl_reset().
 */
int sio_nvme_ctrl_health(struct sio_nvme_ctrl *c);

/* Let go of the controller as it runs, no shutdown: its kept segments
 * stay for a successor (a manager handing over). */
void sio_nvme_ctrl_leave(struct sio_nvme_ctrl *c);

/* @tick(@arg) is called now and then while the controller driver waits
 * (admin completions, CSTS.RDY): a manager's heartbeat goes on; a non-zero
 * return (-errno, its message set) ends the wait with it. */
void sio_nvme_ctrl_set_tick(struct sio_nvme_ctrl *c, int (*tick)(void *), void *arg);

/* Copy a space-padded identify string, cutting trailing blanks. */
void sio_nvme_strcpy_id(char *dst, const char *src, size_t n);

/*
 * dbbuf.c: shadow doorbells. One segment: the shadow page(s) at 0, the
 * EventIdx page(s) at @size; slots @stride apart as BAR0's doorbells.
 */
struct sio_nvme_dbbuf {
	struct sio_segment *seg;
	uint8_t *va;
	uint64_t bus;		/* the controller's address (owner only) */
	uint32_t size;		/* bytes of each buffer, whole pages */
	uint32_t stride;
};
int sio_nvme_dbbuf_open(struct sio_nvme_ctrl *c, struct sio_nvme_dbbuf *d, uint32_t kept_id);
int sio_nvme_dbbuf_config(struct sio_nvme_ctrl *c, struct sio_nvme_dbbuf *d);
int sio_nvme_dbbuf_adopt(struct sio_nvme_ctrl *c, struct sio_nvme_dbbuf *d, uint32_t kept_id,
			 uint64_t bus, uint32_t size);
void sio_nvme_dbbuf_close(struct sio_device *dev, struct sio_nvme_dbbuf *d);
void sio_nvme_dbbuf_reset(struct sio_nvme_dbbuf *d, uint32_t qid);
const struct sio_nvme_dbbuf *sio_nvme_ctrl_dbbuf(const struct sio_nvme_ctrl *c);
/* The controller's info in place (sio_nvme_ctrl_info() copies it), for the
 * driver's files that keep a pointer for the controller's life. */
const struct sio_nvme_ctrl_info *sio_nvme_ctrl_ci(const struct sio_nvme_ctrl *c);
struct sio_nvme_mbox_dbbuf;
void sio_nvme_dbbuf_publish(struct sio_nvme_mbox_dbbuf *m, const struct sio_nvme_dbbuf *d);

/* admin.c: one admin command, its completion's DW0 and status code (each
 * may be NULL) */
int sio__nvme_admin_st(struct sio_nvme_ctrl *c, const struct sio_nvme_cmd *cmd, uint32_t *result,
		       uint16_t *status);

/* aer.c: the manager's side of asynchronous events */
struct sio_nvme_mbox_events;
int sio_nvme_aer_start(struct sio_nvme_ctrl *c);
int sio_nvme_aer_service(struct sio_nvme_ctrl *c, struct sio_device *dev,
			 struct sio_nvme_mbox_events *ring);

#endif
