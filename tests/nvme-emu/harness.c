/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/wait.h>
#include <criterion/criterion.h>
#include "harness.h"

static uint64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

/* Bounded back-off for polling loops: spin a little, then sleep. */
static void backoff(unsigned *n)
{
	if (++*n < 64)
		sched_yield();
	else
		usleep(20);
}

static pid_t spawn_emu(struct host *h, const char *args, uint32_t *devid)
{
	const char *exe = getenv("NVME_EMU");
	char ready[256], cmd[1024];
	pid_t pid;

	snprintf(ready, sizeof(ready), "/tmp/%s.ready", h->fabric);
	unlink(ready);
	snprintf(cmd, sizeof(cmd), "exec %s --fabric %s --node 0 --ready-file %s %s >/dev/null",
		 exe ? exe : "nvme-emu", h->fabric, ready, args ? args : "");
	pid = fork();
	if (pid == 0) {
		execl("/bin/sh", "sh", "-c", cmd, (char *)NULL);
		_exit(127);
	}
	if (pid < 0)
		return -1;
	for (uint64_t t0 = now_ms(); now_ms() - t0 < 10000;) {
		FILE *f = fopen(ready, "r");
		int st;

		if (f) {
			unsigned v;
			int ok = fscanf(f, "%u", &v) == 1;

			fclose(f);
			if (ok) {
				*devid = v;
				unlink(ready);
				return pid;
			}
		}
		if (waitpid(pid, &st, WNOHANG) == pid)
			return -1;	/* it refused its arguments */
		usleep(2000);
	}
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
	return -1;
}

static int attach(struct host *h, int node)
{
	void *va;
	int rc = sio_fabric_open(h->fabric, node, &h->f);

	if (rc)
		return rc;
	rc = sio_device_borrow(h->f, h->devid, SIO_BORROW_SHARED, &h->dev);
	if (rc)
		return rc;
	rc = sio_device_bar(h->dev, 0, &h->bar0);
	if (rc)
		return rc;
	rc = sio_segment_map(h->bar0, &va);
	if (rc)
		return rc;
	h->regs = va;
	h->dstrd = NVME_CAP_DSTRD(h_rd64(h, NVME_REG_CAP));
	return 0;
}

int h_start(struct host *h, int node, const char *args)
{
	static int seq;
	struct sio_fabric_config c = { .nodes = 2, .topology = SIO_TOPO_SWITCH };

	memset(h, 0, sizeof(*h));
	snprintf(h->fabric, sizeof(h->fabric), "emut%d-%d", (int)getpid(), seq++);
	sio_fabric_destroy(h->fabric);
	if (sio_fabric_create(h->fabric, &c))
		return -1;
	h->owner = true;
	h->emu = spawn_emu(h, args, &h->devid);
	if (h->emu < 0)
		return -1;
	return attach(h, node);
}

int h_join(struct host *h, const char *fabric, uint32_t devid, int node)
{
	memset(h, 0, sizeof(*h));
	snprintf(h->fabric, sizeof(h->fabric), "%s", fabric);
	h->devid = devid;
	h->emu = -1;
	return attach(h, node);
}

static void stop_emu(struct host *h)
{
	if (h->emu > 0) {
		kill(h->emu, SIGTERM);
		waitpid(h->emu, NULL, 0);
		h->emu = -1;
	}
}

int h_restart_emu(struct host *h, const char *args)
{
	int node = sio_fabric_node_id(h->f);

	sio_device_close(h->dev);
	sio_fabric_close(h->f);
	stop_emu(h);
	memset(&h->admin, 0, sizeof(h->admin));
	h->emu = spawn_emu(h, args, &h->devid);
	if (h->emu < 0)
		return -1;
	return attach(h, node);
}

void h_stop(struct host *h)
{
	if (h->dev)
		sio_device_close(h->dev);
	if (h->f)
		sio_fabric_close(h->f);
	h->dev = NULL;
	h->f = NULL;
	if (h->owner) {
		stop_emu(h);
		sio_fabric_destroy(h->fabric);
	}
}

int h_mem(struct host *h, uint64_t size, struct hmem *m)
{
	void *va;
	int rc = sio_segment_create(h->f, 0, size, SIO_SEG_F_NOHUGE, &m->seg);

	if (rc)
		return rc;
	rc = sio_segment_map(m->seg, &va);
	if (rc)
		return rc;
	m->va = va;
	m->size = size;
	memset(va, 0, size);
	return sio_device_map(h->dev, m->seg, &m->bus);
}

uint32_t h_rd32(struct host *h, uint32_t off)
{
	return __atomic_load_n((uint32_t *)(h->regs + off), __ATOMIC_ACQUIRE);
}

uint64_t h_rd64(struct host *h, uint32_t off)
{
	return __atomic_load_n((uint64_t *)(h->regs + off), __ATOMIC_ACQUIRE);
}

void h_wr32(struct host *h, uint32_t off, uint32_t v)
{
	__atomic_store_n((uint32_t *)(h->regs + off), v, __ATOMIC_RELEASE);
}

void h_wr64(struct host *h, uint32_t off, uint64_t v)
{
	__atomic_store_n((uint64_t *)(h->regs + off), v, __ATOMIC_RELEASE);
}

bool h_wait_reg(struct host *h, uint32_t off, uint32_t mask, uint32_t want, int ms)
{
	unsigned n = 0;

	for (uint64_t t0 = now_ms(); now_ms() - t0 < (uint64_t)ms; backoff(&n))
		if ((h_rd32(h, off) & mask) == want)
			return true;
	return (h_rd32(h, off) & mask) == want;
}

int h_enable(struct host *h, uint32_t qsize, uint32_t cc_extra)
{
	struct hq *a = &h->admin;
	int rc;

	if (!a->sq.seg) {
		if ((rc = h_mem(h, 64 * 4096, &a->sq)) || (rc = h_mem(h, 16 * 4096, &a->cq)))
			return rc;
	}
	memset(a->sq.va, 0, a->sq.size);
	memset(a->cq.va, 0, a->cq.size);
	a->qid = 0;
	a->size = qsize;
	a->sq_tail = a->cq_head = 0;
	a->phase = 1;
	h_wr32(h, NVME_REG_AQA, (qsize - 1) | ((qsize - 1) << 16));
	h_wr64(h, NVME_REG_ASQ, a->sq.bus);
	h_wr64(h, NVME_REG_ACQ, a->cq.bus);
	h_wr32(h, NVME_REG_CC, NVME_SET(1, CC_EN) | NVME_SET(SIO_NVME_SQES, CC_IOSQES) |
			       NVME_SET(SIO_NVME_CQES, CC_IOCQES) | cc_extra);
	return h_wait_reg(h, NVME_REG_CSTS, NVME_SET(1, CSTS_RDY), NVME_SET(1, CSTS_RDY), 5000) ?
	       0 : -ETIMEDOUT;
}

int h_disable(struct host *h)
{
	h_wr32(h, NVME_REG_CC, h_rd32(h, NVME_REG_CC) & ~NVME_SET(1, CC_EN));
	return h_wait_reg(h, NVME_REG_CSTS, NVME_SET(1, CSTS_RDY), 0, 5000) ? 0 : -ETIMEDOUT;
}

static uint32_t db(struct host *h, uint16_t qid, bool cq)
{
	return SIO_NVME_REG_DBS + (2u * qid + (cq ? 1 : 0)) * (4u << h->dstrd);
}

void h_doorbell(struct host *h, struct hq *q, bool cq, uint32_t v, uint32_t old)
{
	uint32_t slot = (2 * q->qid + (cq ? 1 : 0)) * (1u << h->dstrd);

	if (!q->dbs) {
		h_wr32(h, db(h, q->qid, cq), v);
		return;
	}
	/* NVMe 1.4, 5.8: the shadow first; the MMIO doorbell only if v passes EventIdx */
	__atomic_store_n(&q->dbs[slot], v, __ATOMIC_RELEASE);
	atomic_thread_fence(memory_order_seq_cst);
	uint16_t ei = (uint16_t)__atomic_load_n(&q->eis[slot], __ATOMIC_ACQUIRE);
	if ((uint16_t)(v - ei - 1) < (uint16_t)(v - old)) {
		h_wr32(h, db(h, q->qid, cq), v);
		q->rings++;
	}
}

void h_submit(struct host *h, struct hq *q, struct sio_nvme_cmd *cmd)
{
	uint32_t old = q->sq_tail;

	memcpy(q->sq.va + (uint64_t)q->sq_tail * 64, cmd, 64);
	q->sq_tail = (q->sq_tail + 1) % q->size;
	/* The entry must be visible before the doorbell. */
	atomic_thread_fence(memory_order_release);
	h_doorbell(h, q, false, q->sq_tail, old);
}

int h_reap(struct host *h, struct hq *q, struct sio_nvme_cpl *cpl, int ms)
{
	volatile struct sio_nvme_cpl *e = (volatile struct sio_nvme_cpl *)(q->cq.va) + q->cq_head;
	unsigned n = 0;

	for (uint64_t t0 = now_ms(); ; backoff(&n)) {
		uint16_t st = __atomic_load_n(&e->status, __ATOMIC_ACQUIRE);

		if ((st & 1) == q->phase)
			break;
		if (now_ms() - t0 > (uint64_t)ms)
			return -ETIMEDOUT;
	}
	uint32_t old = q->cq_head;

	memcpy(cpl, (const void *)e, sizeof(*cpl));
	if (++q->cq_head == q->size) {
		q->cq_head = 0;
		q->phase ^= 1;
	}
	h_doorbell(h, q, true, q->cq_head, old);
	return 0;
}

int h_cmd(struct host *h, struct hq *q, struct sio_nvme_cmd *cmd, struct sio_nvme_cpl *cpl)
{
	struct sio_nvme_cpl c;

	cmd->cid = q->cid++;
	h_submit(h, q, cmd);
	if (h_reap(h, q, &c, 5000))
		return -ETIMEDOUT;
	if (cpl)
		*cpl = c;
	if (c.cid != cmd->cid || c.sq_id != q->qid)
		return -EPROTO;
	return SIO_NVME_STATUS_CODE(c.status);
}

int h_admin(struct host *h, struct sio_nvme_cmd *cmd, struct sio_nvme_cpl *cpl)
{
	return h_cmd(h, &h->admin, cmd, cpl);
}

int h_qpair_on(struct host *h, uint16_t qid, uint16_t cqid, uint32_t size, int prio,
	       struct hq *q, bool make_cq)
{
	struct sio_nvme_cmd c;
	uint64_t sqb = ((uint64_t)size * 64 + 4095) & ~4095ull;
	uint64_t cqb = ((uint64_t)size * 16 + 4095) & ~4095ull;
	int rc;

	memset(q, 0, sizeof(*q));
	q->qid = qid;
	q->size = size;
	q->phase = 1;
	if ((rc = h_mem(h, sqb, &q->sq)) || (rc = h_mem(h, cqb, &q->cq)))
		return rc;
	if (make_cq) {
		sio_nvme_cmd_create_cq(&c, cqid, size, q->cq.bus, SIO_NVME_Q_PC, 0);
		rc = h_admin(h, &c, NULL);
		if (rc)
			return rc;
	}
	sio_nvme_cmd_create_sq(&c, qid, size, q->sq.bus, cqid, (uint32_t)prio);
	return h_admin(h, &c, NULL);
}

int h_qpair(struct host *h, uint16_t qid, uint32_t size, int prio, struct hq *q)
{
	return h_qpair_on(h, qid, qid, size, prio, q, true);
}

struct sio_nvme_cmd h_rw(uint8_t opc, uint32_t nsid, uint64_t slba, uint32_t nlb,
			 uint64_t prp1, uint64_t prp2)
{
	struct sio_nvme_cmd c;

	memset(&c, 0, sizeof(c));
	c.opcode = opc;
	c.nsid = nsid;
	c.prp1 = prp1;
	c.prp2 = prp2;
	c.cdw10 = (uint32_t)slba;
	c.cdw11 = (uint32_t)(slba >> 32);
	c.cdw12 = nlb - 1;
	return c;
}

void h_up_raw(struct host *h)
{
	cr_assert_eq(h_start(h, 1, "--backing ram:16M --ns 8M:512 --ns 8M:4096 --queues 8 --mqes 256"),
		     0, "start: %s", sio_errmsg());
	cr_assert_eq(h_enable(h, 32, 0), 0, "controller did not become ready");
}
