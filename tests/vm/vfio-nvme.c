/* SPDX-License-Identifier: MIT */
/*
 * vfio backend checks run inside the QEMU guest, against QEMU's NVMe, through
 * the public libsmartio API only (a borrower of a device that `smartio vfio
 * lend` serves). A minimal admin queue pair is enough to prove what the
 * backend promises: BAR mmap through the lender's fd, segments DMA-mapped
 * through the IOMMU, isolation (an IOVA nobody mapped fails), the CMB as a
 * DMA target, and cleanup when a borrower dies.
 *
 * usage: vfio-nvme FABRIC BDF identify|isolation|crash|cmb|sgl|dbbuf|aer|write FILE
 *        vfio-nvme kcheck BLOCKDEV FILE [OFFSET]
 *        vfio-nvme run-as UID PROGRAM ARGS...   (to check permission errors)
 * `write` puts a pattern at LBA 0 of namespace 1 through an I/O queue pair
 * and saves it to FILE; `sgl` moves data through SGL descriptors (a byte-
 * aligned data block, segments) and compares it; `dbbuf` rings through
 * Doorbell Buffer Config's shadow doorbells as EventIdx asks and compares
 * the data; `aer` has an Asynchronous Event Request completed by a
 * temperature threshold; `kcheck` reads a device through the kernel's own
 * driver with O_DIRECT and compares it with FILE. One line per check; exit 0 when all
 * passed.
 */
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <nvme/types.h>
#include <smartio/smartio.h>
#include <smartio/nvme/cmd.h>
#include <smartio/nvme/queue.h>

#define QD	16

struct ctl {
	struct sio_fabric *f;
	struct sio_device *dev;
	struct sio_segment *bar, *mem, *cmbseg;
	volatile uint32_t *regs;
	uint8_t *va;			/* mem: SQ at 0, CQ at 4 KiB, data from 8 KiB */
	uint64_t iova;
	volatile struct sio_nvme_cmd *sq;
	uint64_t sq_bus;
	uint32_t dstrd, to_ms;
	uint16_t sqt, cqh, cid;
	uint8_t phase;
	uint16_t io_sqt, io_cqh;	/* I/O queue pair 1: SQ at 48 KiB, CQ at 52 KiB */
	uint8_t io_phase;
};

static int fails;

static void check(bool ok, const char *what, const char *detail)
{
	printf("%s %s%s%s\n", ok ? "ok:" : "FAIL:", what, detail ? ": " : "", detail ? detail : "");
	fflush(stdout);
	fails += !ok;
}

static __attribute__((noreturn)) void die(const char *what)
{
	printf("FAIL: %s: %s\n", what, sio_errmsg());
	exit(1);
}

static uint64_t now_ms(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec * 1000ull + t.tv_nsec / 1000000;
}

/* Bounded wait with back-off: 1 us doubling to 1 ms per sleep. */
static bool wait_for(bool (*cond)(struct ctl *), struct ctl *c, uint32_t ms)
{
	uint64_t end = now_ms() + ms;
	long ns = 1000;

	while (!cond(c)) {
		if (now_ms() > end)
			return false;
		nanosleep(&(struct timespec){ 0, ns }, NULL);
		if (ns < 1000000)
			ns *= 2;
	}
	return true;
}

static bool rdy0(struct ctl *c) { return !NVME_CSTS_RDY(c->regs[NVME_REG_CSTS / 4]); }
static bool rdy1(struct ctl *c) { return NVME_CSTS_RDY(c->regs[NVME_REG_CSTS / 4]); }

static volatile struct sio_nvme_cpl *cq(struct ctl *c)
{
	return (volatile struct sio_nvme_cpl *)(c->va + 4096);
}

static bool cpl_ready(struct ctl *c)
{
	return (cq(c)[c->cqh].status & 1) == c->phase;
}

static void w64(struct ctl *c, uint32_t off, uint64_t v)
{
	c->regs[off / 4] = (uint32_t)v;
	c->regs[off / 4 + 1] = (uint32_t)(v >> 32);
}

static void open_dev(struct ctl *c, const char *fabric, const char *bdf)
{
	struct sio_device_info info[8];
	int n;

	memset(c, 0, sizeof(*c));
	if (sio_fabric_open(fabric, 0, &c->f))
		die("open fabric");
	n = sio_device_list(c->f, 0x010802, 0xffffff, info, 8);
	for (int i = 0; i < n && i < 8; i++)
		if (!strcmp(info[i].bdf, bdf)) {
			if (sio_device_borrow(c->f, info[i].id, SIO_BORROW_EXCLUSIVE, &c->dev))
				die("borrow");
			check(info[i].backend == SIO_BACKEND_VFIO, "device is on the vfio backend", bdf);
			break;
		}
	if (!c->dev) {
		printf("FAIL: no NVMe device %s in fabric %s (is the lender running?): %d listed%s%s\n",
		       bdf, fabric, n, n < 0 ? ": " : "", n < 0 ? sio_errmsg() : "");
		exit(1);
	}
	if (sio_device_bar(c->dev, 0, &c->bar) || sio_segment_map(c->bar, (void **)&c->regs))
		die("map BAR0");
	if (sio_segment_create(c->f, 0, 64 << 10, 0, &c->mem) ||
	    sio_segment_map(c->mem, (void **)&c->va) || sio_device_map(c->dev, c->mem, &c->iova))
		die("segment for DMA");
	c->sq = (volatile struct sio_nvme_cmd *)c->va;
	c->sq_bus = c->iova;
	if (getenv("SIO_VM_EXPECT_HUGE")) {
		struct sio_segment_info si = { 0 };
		char d[64];

		sio_segment_info(c->mem, &si);
		snprintf(d, sizeof(d), "IOVA %#llx", (unsigned long long)c->iova);
		check(si.hugepages && c->iova % (2u << 20) == 0,
		      "DMA segment is on huge pages, 2 MiB-aligned in IOVA space", d);
	}
}

static void reset(struct ctl *c)
{
	uint64_t cap = c->regs[0] | (uint64_t)c->regs[1] << 32;

	c->dstrd = NVME_CAP_DSTRD(cap);
	c->to_ms = (NVME_CAP_TO(cap) + 1) * 500;
	c->regs[NVME_REG_CC / 4] = 0;
	if (!wait_for(rdy0, c, c->to_ms))
		die("controller did not clear CSTS.RDY");
	memset(c->va, 0, 8192);
	c->sqt = c->cqh = 0;
	c->phase = 1;
	c->regs[NVME_REG_AQA / 4] = (QD - 1) << 16 | (QD - 1);
	w64(c, NVME_REG_ASQ, c->sq_bus);
	w64(c, NVME_REG_ACQ, c->iova + 4096);
	atomic_thread_fence(memory_order_seq_cst);
	c->regs[NVME_REG_CC / 4] = NVME_SET(1, CC_EN) | NVME_SET(SIO_NVME_SQES, CC_IOSQES) |
				   NVME_SET(SIO_NVME_CQES, CC_IOCQES);
	if (!wait_for(rdy1, c, c->to_ms))
		die("controller did not become ready");
}

/* Put an admin command in the SQ and ring; its completion is not waited for. */
static void admin_submit(struct ctl *c, struct sio_nvme_cmd *cmd)
{
	volatile uint32_t *db = c->regs + SIO_NVME_REG_DBS / 4;

	cmd->cid = ++c->cid;
	memcpy((void *)&c->sq[c->sqt], cmd, sizeof(*cmd));
	c->sqt = (c->sqt + 1) % QD;
	/* The entry must be visible to the device before the doorbell. */
	atomic_thread_fence(memory_order_release);
	db[0] = c->sqt;
}

/* The next admin completion (waited for, bounded). */
static struct sio_nvme_cpl admin_reap(struct ctl *c)
{
	volatile uint32_t *db = c->regs + SIO_NVME_REG_DBS / 4;
	struct sio_nvme_cpl r;

	if (!wait_for(cpl_ready, c, c->to_ms))
		die("admin command timed out");
	atomic_thread_fence(memory_order_acquire);
	memcpy(&r, (const void *)&cq(c)[c->cqh], sizeof(r));
	if (++c->cqh == QD) {
		c->cqh = 0;
		c->phase ^= 1;
	}
	db[(1u << c->dstrd)] = c->cqh;	/* CQ 0 head doorbell */
	return r;
}

/* Submit one admin command and wait; returns the status code field. */
static int admin(struct ctl *c, struct sio_nvme_cmd *cmd)
{
	admin_submit(c, cmd);
	return SIO_NVME_STATUS_CODE(admin_reap(c).status);
}

static int identify(struct ctl *c, uint64_t prp)
{
	struct sio_nvme_cmd cmd;

	sio_nvme_cmd_identify(&cmd, NVME_IDENTIFY_CNS_CTRL, 0, prp);

	return admin(c, &cmd);
}

static void t_identify(struct ctl *c)
{
	char sn[21], mn[41], d[96];
	uint8_t *id = c->va + 8192;
	uint32_t vs = c->regs[NVME_REG_VS / 4];

	snprintf(d, sizeof(d), "VS %u.%u", vs >> 16, (vs >> 8) & 0xff);
	check(vs >= 0x10000, "CAP/VS read through the BAR the lender passed", d);
	reset(c);
	memset(id, 0, 4096);
	int sc = identify(c, c->iova + 8192);

	memcpy(sn, id + 4, 20);
	sn[20] = 0;
	memcpy(mn, id + 24, 40);
	mn[40] = 0;
	snprintf(d, sizeof(d), "status %#x, vid %04x, serial '%.20s', model '%.24s'", sc,
		 id[0] | id[1] << 8, sn, mn);
	check(sc == 0 && (id[0] | id[1] << 8) == 0x1b36, "Identify Controller DMA'd through the IOMMU", d);
}

/* Physical address of a page of ours, from /proc/self/pagemap (root only). */
static uint64_t phys_of(void *va)
{
	uint64_t e = 0;
	int fd = open("/proc/self/pagemap", O_RDONLY);
	long pg = sysconf(_SC_PAGESIZE);

	if (fd < 0)
		return 0;
	if (pread(fd, &e, 8, (uintptr_t)va / pg * 8) != 8)
		e = 0;
	close(fd);
	if (!(e >> 63) || !(e & ((1ull << 55) - 1)))
		return 0;
	return (e & ((1ull << 55) - 1)) * pg + (uintptr_t)va % pg;
}

static bool all(const uint8_t *p, size_t n, uint8_t v)
{
	for (size_t i = 0; i < n; i++)
		if (p[i] != v)
			return false;
	return true;
}

/*
 * QEMU completes a command whose DMA the IOMMU blocked with success (its VT-d
 * model logs the fault), so these checks look at memory, not status.
 */
static void t_isolation(struct ctl *c)
{
	uint8_t *buf = c->va + 8192;
	uint64_t pa;
	char d[96];
	int sc;

	reset(c);
	memset(buf, 0xa5, 4096);
	pa = phys_of(buf);
	if (!pa || (pa >= c->iova && pa < c->iova + (64 << 10))) {
		check(false, "physical address of the buffer", "pagemap gave none");
		return;
	}
	/* Without an IOMMU this would land in buf: it must not. */
	sc = identify(c, pa);
	snprintf(d, sizeof(d), "physical %#llx, status %#x", (unsigned long long)pa, sc);
	check(all(buf, 4096, 0xa5), "DMA to the buffer's physical address does not reach it", d);
	sc = identify(c, c->iova + 8192);
	snprintf(d, sizeof(d), "IOVA %#llx, status %#x", (unsigned long long)c->iova + 8192, sc);
	check(sc == 0 && buf[0] == 0x36, "DMA to its IOVA does", d);
}

/* A borrower that maps a segment and is killed; its IOVA must go away. */
static void t_crash(struct ctl *c, const char *fabric)
{
	struct { uint64_t iova; uint32_t id; } got = { 0 };
	struct sio_segment *seg;
	volatile uint8_t *mem;
	int p[2], sc, tries;
	pid_t pid;
	char d[96];

	if (sio_device_downgrade(c->dev))
		die("downgrade the borrow");
	if (pipe(p))
		die("pipe");
	pid = fork();
	if (pid == 0) {
		struct sio_fabric *f;
		struct sio_device *dev;
		struct sio_segment *s;

		close(p[0]);
		if (sio_fabric_open(fabric, 0, &f) ||
		    sio_device_borrow(f, sio_device_id(c->dev), SIO_BORROW_SHARED, &dev) ||
		    sio_segment_create(f, 0, 1 << 20, 0, &s) || sio_device_map(dev, s, &got.iova)) {
			printf("child: %s\n", sio_errmsg());
			got.iova = 0;
		} else {
			struct sio_segment_info si;

			sio_segment_info(s, &si);
			got.id = si.id;
		}
		if (write(p[1], &got, sizeof(got)) != sizeof(got))
			_exit(1);
		pause();
		_exit(0);
	}
	close(p[1]);
	if (read(p[0], &got, sizeof(got)) != sizeof(got) || !got.iova) {
		check(false, "a second borrower maps a segment", "child failed");
		return;
	}
	close(p[0]);
	/* Watch the child's memory from here too. */
	if (sio_segment_connect(c->f, 0, got.id, &seg) || sio_segment_map(seg, (void **)&mem))
		die("connect to the child's segment");
	reset(c);
	sc = identify(c, got.iova);
	snprintf(d, sizeof(d), "IOVA %#llx, status %#x", (unsigned long long)got.iova, sc);
	check(sc == 0 && mem[0] == 0x36, "DMA into another borrower's live mapping works", d);
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
	/* The lender notices the closed socket at once; allow it a moment. */
	for (tries = 0; tries < 50; tries++) {
		memset((void *)mem, 0, 4096);
		identify(c, got.iova);
		if (all((const uint8_t *)mem, 4096, 0))
			break;
		usleep(20000);
	}
	snprintf(d, sizeof(d), "after SIGKILL, %d retries", tries);
	check(tries < 50, "a killed borrower's IOMMU mapping is torn down", d);
	sio_segment_unmap(seg);
	sio_segment_close(seg);
}

static void t_cmb(struct ctl *c)
{
	uint64_t cap = c->regs[0] | (uint64_t)c->regs[1] << 32, bus;
	uint32_t loc, sz;
	char d[128];
	void *cmb;

	if (!NVME_CAP_CMBS(cap)) {
		check(false, "controller reports CAP.CMBS", "no CMB: run with cmb_size_mb");
		return;
	}
	/* CMBLOC/CMBSZ read 0 until CMBMSC.CRE is set. */
	w64(c, NVME_REG_CMBMSC, NVME_SET(1, CMBMSC_CRE));
	loc = c->regs[NVME_REG_CMBLOC / 4];
	sz = c->regs[NVME_REG_CMBSZ / 4];
	snprintf(d, sizeof(d), "CMBLOC %#x CMBSZ %#x", loc, sz);
	check(NVME_CMBSZ_SQS(sz), "CMB supports submission queues", d);
	if (sio_device_bar(c->dev, loc & 7, &c->cmbseg) || sio_segment_map(c->cmbseg, &cmb) ||
	    sio_device_map(c->dev, c->cmbseg, &bus))
		die("map the CMB BAR");
	snprintf(d, sizeof(d), "BAR%u at bus %#llx", loc & 7, (unsigned long long)bus);
	check(bus != 0, "the CMB maps to its BAR's bus address", d);
	/* Enable the controller memory space at that address. */
	w64(c, NVME_REG_CMBMSC, bus | NVME_SET(1, CMBMSC_CRE) | NVME_SET(1, CMBMSC_CMSE));
	c->sq = (volatile struct sio_nvme_cmd *)((uint8_t *)cmb + (loc >> 12) * 4096ull);
	c->sq_bus = bus + (loc >> 12) * 4096ull;
	reset(c);
	memset(c->va + 8192, 0, 4096);
	int sc = identify(c, c->iova + 8192);

	snprintf(d, sizeof(d), "status %#x, vid %02x%02x", sc, c->va[8193], c->va[8192]);
	check(sc == 0 && c->va[8192] == 0x36, "Identify with the admin SQ in the CMB", d);
	c->sq = (volatile struct sio_nvme_cmd *)c->va;
	c->sq_bus = c->iova;
	reset(c);
	check(sio_device_unmap(c->dev, c->cmbseg) == 0, "CMB unmapped for the device", NULL);
}


static volatile struct sio_nvme_cpl *iocq(struct ctl *c)
{
	return (volatile struct sio_nvme_cpl *)(c->va + (52 << 10));
}

static bool io_ready(struct ctl *c)
{
	return (iocq(c)[c->io_cqh].status & 1) == c->io_phase;
}

static int io(struct ctl *c, struct sio_nvme_cmd *cmd)
{
	volatile uint32_t *db = c->regs + SIO_NVME_REG_DBS / 4;
	volatile struct sio_nvme_cmd *sq = (void *)(c->va + (48 << 10));
	uint16_t st;

	cmd->cid = ++c->cid;
	memcpy((void *)&sq[c->io_sqt], cmd, sizeof(*cmd));
	c->io_sqt = (c->io_sqt + 1) % QD;
	atomic_thread_fence(memory_order_release);
	db[2 << c->dstrd] = c->io_sqt;	/* SQ 1 tail */
	if (!wait_for(io_ready, c, c->to_ms))
		die("I/O command timed out");
	atomic_thread_fence(memory_order_acquire);
	st = iocq(c)[c->io_cqh].status;
	if (++c->io_cqh == QD) {
		c->io_cqh = 0;
		c->io_phase ^= 1;
	}
	db[3 << c->dstrd] = c->io_cqh;	/* CQ 1 head */
	return SIO_NVME_STATUS_CODE(st);
}

/* Identify Namespace 1 and I/O queue pair 1 over c->va 48 KiB (SQ) and 52 KiB (CQ). */
static uint32_t io_setup(struct ctl *c)
{
	uint8_t *ns = c->va + 8192;
	struct sio_nvme_cmd cmd;
	uint32_t lbads;
	int sc;

	sio_nvme_cmd_identify(&cmd, NVME_IDENTIFY_CNS_NS, 1, c->iova + 8192);
	sc = admin(c, &cmd);
	lbads = ns[128 + 4 * (ns[26] & 0xf) + 2];
	if (sc || lbads < 9)
		die("Identify Namespace 1");
	memset(c->va + (48 << 10), 0, 8192);
	c->io_sqt = c->io_cqh = 0;
	c->io_phase = 1;
	sio_nvme_cmd_create_cq(&cmd, 1, QD, c->iova + (52 << 10), SIO_NVME_Q_PC, 0);
	sc = admin(c, &cmd);
	sio_nvme_cmd_create_sq(&cmd, 1, QD, c->iova + (48 << 10), 1, 0);
	sc = sc ? sc : admin(c, &cmd);
	if (sc)
		die("create I/O queue pair 1");
	return 1u << lbads;
}

static uint8_t pat(uint32_t i, uint32_t seed)
{
	return (uint8_t)(i * 13 + (i >> 9) + seed);
}

static void t_write(struct ctl *c, const char *file)
{
	uint8_t *data = c->va + 8192;
	struct sio_nvme_cmd cmd;
	uint32_t nlb;
	char d[96];
	FILE *fp;
	int sc;

	reset(c);
	nlb = 8192u / io_setup(c);
	check(true, "Identify Namespace 1 and I/O queue pair 1", NULL);
	for (int i = 0; i < 8192; i++)
		data[i] = (uint8_t)(i * 7 + (i >> 9) + 0x5a);
	cmd = (struct sio_nvme_cmd){ .opcode = nvme_cmd_write, .nsid = 1,
				     .prp1 = c->iova + 8192, .prp2 = c->iova + 12288,
				     .cdw12 = nlb - 1 };
	sc = io(c, &cmd);
	snprintf(d, sizeof(d), "status %#x, %u blocks at LBA 0", sc, nlb);
	check(sc == 0, "8 KiB written through I/O queue 1", d);
	fp = fopen(file, "wb");
	check(fp && fwrite(data, 1, 8192, fp) == 8192 && fclose(fp) == 0, "pattern saved", file);
	memset(data, 0, 8192);
	cmd.opcode = nvme_cmd_read;
	sc = io(c, &cmd);
	for (int i = 0; i < 8192 && !sc; i++)
		if (data[i] != (uint8_t)(i * 7 + (i >> 9) + 0x5a))
			sc = -1;
	check(sc == 0, "read back through the same queue pair", NULL);
}

static struct sio_nvme_cmd rw(uint8_t opc, uint64_t slba, uint32_t nlb)
{
	return (struct sio_nvme_cmd){ .opcode = opc, .nsid = 1, .cdw10 = (uint32_t)slba,
				      .cdw11 = (uint32_t)(slba >> 32), .cdw12 = nlb - 1 };
}

static void sgl_desc(volatile struct sio_nvme_sgl *d, uint8_t type, uint64_t addr, uint32_t len)
{
	d->addr = addr;
	d->length = len;
	d->type = SIO_NVME_SGL_TYPE(type);
}

/* SGL data pointers on QEMU's controller (NVMe 1.4, 4.4), data compared. */
static void t_sgl(struct ctl *c)
{
	uint8_t *id = c->va + 8192, *buf = c->va + 8192;
	struct sio_nvme_cmd cmd;
	uint32_t sgls, lba, nlb, off;
	char d[96];
	int sc;

	reset(c);
	sc = identify(c, c->iova + 8192);
	memcpy(&sgls, id + 536, 4);
	snprintf(d, sizeof(d), "SGLS %#x", sgls);
	check(sc == 0 && (sgls & 3), "Identify reports SGLs for the NVM command set", d);
	if (!(sgls & 3))
		return;
	lba = io_setup(c);
	nlb = 8192 / lba;
	/* written with PRPs */
	for (uint32_t i = 0; i < 8192; i++)
		buf[i] = pat(i, 1);
	cmd = rw(nvme_cmd_write, 64, nlb);
	cmd.prp1 = c->iova + 8192;
	cmd.prp2 = c->iova + 12288;
	check(io(c, &cmd) == 0, "8 KiB written with PRPs", NULL);

	/* read into one data block that starts off a dword (or a dword, SGLS 10b) */
	off = (sgls & 3) == 1 ? 3 : 4;
	memset(c->va + (16 << 10), 0, 8200 + off);
	cmd = rw(nvme_cmd_read, 64, nlb);
	cmd.flags = SIO_NVME_PSDT_SGL_MPTR << 6;
	sgl_desc(&cmd.sgl, SIO_NVME_SGL_DATA, c->iova + (16 << 10) + off, 8192);
	sc = io(c, &cmd);
	for (uint32_t i = 0; i < 8192 && !sc; i++)
		if (c->va[(16 << 10) + off + i] != pat(i, 1))
			sc = -1;
	snprintf(d, sizeof(d), "byte offset %u", off);
	check(sc == 0, "read back through one SGL Data Block, data compared", d);

	/* a Segment of two data blocks chaining to a Last Segment of one */
	volatile struct sio_nvme_sgl *seg = (void *)(c->va + (40 << 10));
	memset(c->va + (16 << 10), 0, 24 << 10);
	sgl_desc(&seg[0], SIO_NVME_SGL_DATA, c->iova + (16 << 10), 1024);
	sgl_desc(&seg[1], SIO_NVME_SGL_DATA, c->iova + (24 << 10), 4096);
	sgl_desc(&seg[2], SIO_NVME_SGL_LAST_SEGMENT, c->iova + (40 << 10) + 256, 16);
	sgl_desc(&seg[16], SIO_NVME_SGL_DATA, c->iova + (32 << 10), 8192 - 5120);
	cmd = rw(nvme_cmd_read, 64, nlb);
	cmd.flags = SIO_NVME_PSDT_SGL_MPTR << 6;
	sgl_desc(&cmd.sgl, SIO_NVME_SGL_SEGMENT, c->iova + (40 << 10), 48);
	sc = io(c, &cmd);
	for (uint32_t i = 0; i < 8192 && !sc; i++) {
		uint32_t at = i < 1024 ? (16 << 10) + i : i < 5120 ? (24 << 10) + i - 1024
								 : (32 << 10) + i - 5120;
		if (c->va[at] != pat(i, 1))
			sc = -1;
	}
	check(sc == 0, "read back through a Segment and a Last Segment, data compared", NULL);

	/* written through an SGL, read back with PRPs */
	for (uint32_t i = 0; i < 8192; i++)
		c->va[(16 << 10) + off + i] = pat(i, 2);
	cmd = rw(nvme_cmd_write, 96, nlb);
	cmd.flags = SIO_NVME_PSDT_SGL_MPTR << 6;
	sgl_desc(&cmd.sgl, SIO_NVME_SGL_DATA, c->iova + (16 << 10) + off, 8192);
	sc = io(c, &cmd);
	memset(buf, 0, 8192);
	cmd = rw(nvme_cmd_read, 96, nlb);
	cmd.prp1 = c->iova + 8192;
	cmd.prp2 = c->iova + 12288;
	sc = sc ? sc : io(c, &cmd);
	for (uint32_t i = 0; i < 8192 && !sc; i++)
		if (buf[i] != pat(i, 2))
			sc = -1;
	check(sc == 0, "written through an SGL, read back with PRPs, data compared", NULL);
}

/* Shadow doorbells (offsets in dwords): store @v, ring BAR0 only if EventIdx asks. */
struct shadow {
	volatile uint32_t *dbs, *eis, *db;
	uint32_t sqs, cqs;		/* queue 1's slots */
	uint32_t rings;
};

static void shadow_ring(struct shadow *sh, uint32_t slot, uint16_t v, uint16_t old)
{
	sh->dbs[slot] = v;
	atomic_thread_fence(memory_order_seq_cst);
	if (sio_nvme_dbbuf_need_event((uint16_t)sh->eis[slot], v, old)) {
		sh->db[slot] = v;
		sh->rings++;
	}
}

/* Put @cmd in I/O SQ 1 without ringing. */
static void io_put(struct ctl *c, struct sio_nvme_cmd *cmd)
{
	volatile struct sio_nvme_cmd *sq = (void *)(c->va + (48 << 10));

	cmd->cid = ++c->cid;
	memcpy((void *)&sq[c->io_sqt], cmd, sizeof(*cmd));
	c->io_sqt = (c->io_sqt + 1) % QD;
}

/* The next I/O completion's status; its head goes to the shadow doorbell. */
static int io_reap_shadow(struct ctl *c, struct shadow *sh)
{
	uint16_t old = c->io_cqh;
	int sc;

	if (!wait_for(io_ready, c, c->to_ms))
		die("I/O command timed out (shadow doorbells)");
	atomic_thread_fence(memory_order_acquire);
	sc = SIO_NVME_STATUS_CODE(iocq(c)[c->io_cqh].status);
	if (++c->io_cqh == QD) {
		c->io_cqh = 0;
		c->io_phase ^= 1;
	}
	shadow_ring(sh, sh->cqs, c->io_cqh, old);
	return sc;
}

/* Doorbell Buffer Config on QEMU's controller: rings as EventIdx asks, data compared. */
static void t_dbbuf(struct ctl *c)
{
	struct shadow sh = { .dbs = (void *)(c->va + (56 << 10)), .eis = (void *)(c->va + (60 << 10)),
			     .db = c->regs + SIO_NVME_REG_DBS / 4,
			     .sqs = 2u << c->dstrd, .cqs = 3u << c->dstrd };
	uint8_t *id = c->va + 8192, *buf = c->va + 8192;
	uint32_t lba, nlb, n = 3 * QD + 6;
	struct sio_nvme_cmd cmd;
	uint16_t oacs, old;
	char d[128];
	int sc = 0;

	reset(c);
	identify(c, c->iova + 8192);
	memcpy(&oacs, id + 256, 2);
	check(oacs & (1u << 8), "Identify reports Doorbell Buffer Config (OACS bit 8)", NULL);
	if (!(oacs & (1u << 8)))
		return;
	memset((void *)sh.dbs, 0, 8192);
	sio_nvme_cmd_init(&cmd, nvme_admin_dbbuf, 0);
	cmd.prp1 = c->iova + (56 << 10);
	cmd.prp2 = c->iova + (60 << 10);
	check(admin(c, &cmd) == 0, "Doorbell Buffer Config accepted", NULL);
	lba = io_setup(c);
	nlb = 4096 / lba;
	/* one command at a time: write a block, read it back */
	for (uint32_t k = 0; k < n && !sc; k++) {
		for (uint32_t i = 0; i < 4096; i++)
			buf[i] = pat(i, k);
		if (k & 1)
			memset(buf, 0, 4096);
		cmd = rw(k & 1 ? nvme_cmd_read : nvme_cmd_write, 256 + (k / 2) * nlb, nlb);
		cmd.prp1 = c->iova + 8192;
		old = c->io_sqt;
		io_put(c, &cmd);
		atomic_thread_fence(memory_order_seq_cst);
		shadow_ring(&sh, sh.sqs, c->io_sqt, old);
		sc = io_reap_shadow(c, &sh);
		for (uint32_t i = 0; (k & 1) && i < 4096 && !sc; i++)
			if (buf[i] != pat(i, k - 1))
				sc = -1;
	}
	snprintf(d, sizeof(d), "%u commands, %u MMIO doorbell writes, EventIdx SQ %u, tail %u", n,
		 sh.rings, sh.eis[sh.sqs], c->io_sqt);
	check(sc == 0, "I/O one at a time through shadow doorbells (the CQ wrapped three times), "
	      "data compared", d);
	check(sh.eis[sh.sqs] == c->io_sqt, "the controller published EventIdx = the tail it took", d);

	/* a batch: 8 entries, one shadow store, a ring only if EventIdx asks */
	sh.rings = 0;
	old = c->io_sqt;
	memset(c->va + (16 << 10), 0, 8 * 4096);
	for (uint32_t k = 0; k < 8; k++) {
		cmd = rw(nvme_cmd_read, 256 + k * nlb, nlb);
		cmd.prp1 = c->iova + (16 << 10) + 4096ull * k;
		io_put(c, &cmd);
	}
	atomic_thread_fence(memory_order_seq_cst);
	shadow_ring(&sh, sh.sqs, c->io_sqt, old);
	for (uint32_t k = 0; k < 8 && !sc; k++)
		sc = io_reap_shadow(c, &sh);
	for (uint32_t k = 0; k < 8 && !sc; k++)
		for (uint32_t i = 0; i < 4096 && !sc; i++)
			if (c->va[(16 << 10) + 4096 * k + i] != pat(i, 2 * k))
				sc = -1;
	snprintf(d, sizeof(d), "8 commands, %u MMIO doorbell writes", sh.rings);
	check(sc == 0, "a batch of 8 through one shadow store, data compared", d);
}

/*
 * An Asynchronous Event Request completed for a real event on QEMU's
 * controller: a temperature threshold set below the composite temperature,
 * enabled in Asynchronous Event Configuration.
 */
static void t_aer(struct ctl *c)
{
	struct sio_nvme_cmd cmd;
	struct sio_nvme_cpl r, aer = { 0 };
	uint16_t aer_cid, set_cid;
	uint8_t *smart = c->va + 8192;
	char d[96];
	int got = 0;

	reset(c);
	sio_nvme_cmd_features(&cmd, SIO_NVME_ADM_SET_FEAT, NVME_FEAT_FID_ASYNC_EVENT, 1u << 1);
	check(admin(c, &cmd) == 0, "Asynchronous Event Configuration: temperature warnings", NULL);
	sio_nvme_cmd_init(&cmd, nvme_admin_async_event, 0);
	admin_submit(c, &cmd);
	aer_cid = cmd.cid;
	sio_nvme_cmd_features(&cmd, SIO_NVME_ADM_SET_FEAT, NVME_FEAT_FID_TEMP_THRESH, 200);
	admin_submit(c, &cmd);
	set_cid = cmd.cid;
	for (int i = 0; i < 2; i++) {
		r = admin_reap(c);
		if (r.cid == aer_cid)
			aer = r;
		got += r.cid == aer_cid || (r.cid == set_cid && !SIO_NVME_STATUS_CODE(r.status));
	}
	snprintf(d, sizeof(d), "DW0 %#x, status %#x", aer.result, SIO_NVME_STATUS_CODE(aer.status));
	check(got == 2 && !SIO_NVME_STATUS_CODE(aer.status) &&
	      aer.result == (NVME_AER_SMART | NVME_AER_SMART_TEMPERATURE_THRESHOLD << 8 |
			     NVME_LOG_LID_SMART << 16),
	      "the request completed with SMART, temperature threshold, log 02h", d);
	memset(smart, 0, 512);
	sio_nvme_cmd_get_log(&cmd, NVME_LOG_LID_SMART, 0xffffffffu, c->iova + 8192, 0, 512);
	check(admin(c, &cmd) == 0 && (smart[0] & NVME_SMART_CRIT_TEMPERATURE),
	      "the SMART log says why (critical warning: temperature)", NULL);
}

/* Compare FILE with BLOCKDEV at OFFSET, read by the kernel's driver. */
static int kcheck(const char *bdev, const char *file, uint64_t off)
{
	uint8_t *want = NULL, *got = NULL;
	FILE *fp = fopen(file, "rb");
	int fd = open(bdev, O_RDONLY | O_DIRECT);
	long len = -1;
	char d[160];
	bool same;

	if (fp && !fseek(fp, 0, SEEK_END))
		len = ftell(fp);
	if (!fp || len <= 0 || len % 4096 || fd < 0 || fseek(fp, 0, SEEK_SET) ||
	    !(want = malloc(len)) || fread(want, 1, len, fp) != (size_t)len ||
	    posix_memalign((void **)&got, 4096, len) || pread(fd, got, len, off) != len) {
		printf("FAIL: O_DIRECT read of %s for %s: %s\n", bdev, file, strerror(errno));
		return 1;
	}
	same = !memcmp(want, got, len);
	snprintf(d, sizeof(d), "%s, %ld bytes at offset %llu", bdev, len, (unsigned long long)off);
	check(same, "the kernel's nvme driver reads back what was written from userspace (vfio or uio)", d);
	return same ? 0 : 1;
}

int main(int argc, char **argv)
{
	struct ctl c;

	setvbuf(stdout, NULL, _IOLBF, 0);
	if (argc >= 4 && !strcmp(argv[1], "run-as")) {
		uid_t u = (uid_t)strtoul(argv[2], NULL, 10);

		if (setgroups(0, NULL) || setgid(u) || setuid(u)) {
			perror("vfio-nvme run-as");
			return 2;
		}
		execvp(argv[3], argv + 3);
		perror(argv[3]);
		return 127;
	}
	if ((argc == 4 || argc == 5) && !strcmp(argv[1], "kcheck"))
		return kcheck(argv[2], argv[3], argc == 5 ? strtoull(argv[4], NULL, 0) : 0);
	if (argc < 4 || (!strcmp(argv[3], "write") && argc != 5)) {
		fprintf(stderr, "usage: vfio-nvme FABRIC BDF identify|isolation|crash|cmb|sgl|dbbuf|aer|write FILE\n"
			"       vfio-nvme kcheck BLOCKDEV FILE [OFFSET]\n");
		return 2;
	}
	open_dev(&c, argv[1], argv[2]);
	if (!strcmp(argv[3], "identify"))
		t_identify(&c);
	else if (!strcmp(argv[3], "isolation"))
		t_isolation(&c);
	else if (!strcmp(argv[3], "crash"))
		t_crash(&c, argv[1]);
	else if (!strcmp(argv[3], "cmb"))
		t_cmb(&c);
	else if (!strcmp(argv[3], "write"))
		t_write(&c, argv[4]);
	else if (!strcmp(argv[3], "sgl"))
		t_sgl(&c);
	else if (!strcmp(argv[3], "dbbuf"))
		t_dbbuf(&c);
	else if (!strcmp(argv[3], "aer"))
		t_aer(&c);
	else
		return 2;
	/* Disable the controller so the next user starts clean. */
	c.regs[NVME_REG_CC / 4] = 0;
	wait_for(rdy0, &c, c.to_ms ? c.to_ms : 1000);
	check(sio_device_unmap(c.dev, c.mem) == 0, "segment unmapped for the device", NULL);
	sio_segment_unmap(c.bar);
	sio_segment_close(c.bar);
	sio_segment_close(c.cmbseg);
	sio_segment_close(c.mem);
	sio_device_close(c.dev);
	sio_fabric_close(c.f);
	return fails ? 1 : 0;
}
