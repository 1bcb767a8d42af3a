/* SPDX-License-Identifier: MIT */
/*
 * The doorbell relay of the window fabric, on a device that is not NVMe:
 * QEMU's edu, as its model (examples/edu/emu) serves it, lent by "kernel-0"
 * with the edu example's description of its doorbells (edu_doorbells())
 * and driven from "kernel-1", which reaches BAR0 through a mirror that the
 * relay forwards. The lender here stands in for the vfio lender (no PCI
 * function on the host): it registers the device as that lender does and
 * exports the model's BAR0 through the fabric backend's dev_export op, as
 * sio_vfio_lend_opts() does with a BAR0 it mapped. A device lent without a
 * description is not relayed at all; one whose DMA mapping of the pools
 * fails as across a link that is down is lent, and the pools mapped later.
 * Run through with-window.sh (a file is the window).
 */
#include <criterion/criterion.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/wait.h>
#include "internal.h"
#include "fixture.h"
#include "edu.h"
#include "edu-model.h"
#include "winfab/winfab.h"

static void setup(void)
{
	shmwin_fabric_setup(2, "r");
}

/* The exits of the borrower on kernel-1, each a step that failed. */
enum { B_OK, B_JOIN, B_BORROW, B_MAP_REFUSED, B_MAP, B_PATH, B_ID, B_RAISE, B_ACK, B_DARK,
       B_PIPE };

static const char *const b_what[] = {
	"ok", "join", "borrow", "BAR0 mapped without a description", "map BAR0", "not relayed",
	"ID", "raise not forwarded", "acknowledge not forwarded",
	"BAR0 of an export that reads all ones not refused as out of reach", "pipe",
};

/* Wait up to 5 s for the mirror's register @off to read @want. */
static bool reads(volatile uint32_t *bar, uint32_t off, uint32_t want)
{
	for (int i = 0; i < 500; i++) {
		if (bar[off / 4] == want)
			return true;
		nap_ms(10);
	}
	return false;
}

/* How kernel-1 finds the device: relayed, lent with no description of
 * its doorbells, or its export reading all ones (out of reach) once it
 * has borrowed it: it says so on dark_up, and waits on dark_down. */
enum way { RELAYED, UNDESCRIBED, DARK };
static int dark_up[2], dark_down[2];

/*
 * Kernel-1: borrow device @id, map BAR0 and ring edu's doorbells there: an
 * interrupt raised shows in IRQ_STATUS (read again by the relay), an
 * acknowledgement clears it. UNDESCRIBED or DARK, mapping BAR0 must be
 * refused, saying why.
 */
static int borrower(uint32_t id, enum way way)
{
	struct sio_fabric *g;
	struct sio_device *dev;
	struct sio_segment *bar;
	volatile uint32_t *r;

	setenv("SMARTIO_SHMWIN_KERNEL", "kernel-1", 1);
	if (sio_fabric_open(name, 1, &g))
		return B_JOIN;
	if (sio_device_borrow(g, id, SIO_BORROW_EXCLUSIVE, &dev) || sio_device_bar(dev, 0, &bar))
		return B_BORROW;
	if (way == UNDESCRIBED) {
		int ret = sio_segment_map(bar, (void **)&r);

		return ret == -EOPNOTSUPP && strstr(sio_errmsg(), "described no doorbells") ?
		       B_OK : B_MAP_REFUSED;
	}
	if (way == DARK) {
		char c = 'b';
		int ret;

		/* borrowed while exported; mapped once the export reads all ones */
		if (write(dark_up[1], &c, 1) != 1 || read(dark_down[0], &c, 1) != 1)
			return B_PIPE;
		ret = sio_segment_map(bar, (void **)&r);

		if (ret == -ENOLINK && strstr(sio_errmsg(), "reads all ones"))
			return B_OK;
		fprintf(stderr, "kernel-1: BAR0 map: %d %s\n", ret, sio_errmsg());
		return B_DARK;
	}
	if (sio_segment_map(bar, (void **)&r))
		return B_MAP;
	if (sio_device_bar_path_kind(dev, 0) != SIO_BAR_PATH_RELAYED)
		return B_PATH;
	if (r[EDU_REG_ID / 4] != 0x010000edu)
		return B_ID;
	r[EDU_REG_IRQ_RAISE / 4] = 0x1000;
	if (!reads(r, EDU_REG_IRQ_STATUS, 0x1000))
		return B_RAISE;
	r[EDU_REG_IRQ_ACK / 4] = 0x1000;
	if (!reads(r, EDU_REG_IRQ_STATUS, 0))
		return B_ACK;
	sio_device_close(dev);
	sio_fabric_close(g);
	return B_OK;
}

/* Forked before this process starts threads: it waits for the device id on @fd. */
static pid_t borrower_start(int fd, enum way way)
{
	pid_t pid = fork();
	uint32_t id;

	cr_assert_neq(pid, -1);
	if (pid)
		return pid;
	_exit(read(fd, &id, sizeof(id)) == sizeof(id) ? borrower(id, way) : B_PIPE);
}

static int borrower_end(pid_t pid)
{
	int st = 0;

	cr_assert_eq(waitpid(pid, &st, 0), pid);
	cr_assert(WIFEXITED(st), "the borrower died (status 0x%x)", st);
	return WEXITSTATUS(st);
}

static volatile bool model_stop;

static void *model_run(void *arg)
{
	while (!model_stop) {
		if (sio_edu_emu_poll(arg) <= 0)
			nap_ms(1);
	}
	return NULL;
}

static int stub_map(void *ctx, void *va, uint64_t len, uint64_t phys, uint64_t *bus)
{
	(void)ctx;
	(void)va;
	(void)len;
	(void)phys;
	*bus = 1ull << 32;	/* the device reaches the pools somewhere: no DMA here */
	return 0;
}

static int stub_unmap(void *ctx, uint64_t bus, uint64_t len)
{
	(void)ctx;
	(void)bus;
	(void)len;
	return 0;
}

/*
 * The edu model on node 0 (its own handle, polled by a thread) is the
 * hardware; the device lent is a second registration, as the vfio lender
 * makes one for a PCI function (its BARs no fabric segments), whose BAR0 is
 * the model's, mapped here.
 */
struct lent {
	struct sio_fabric *f, *fm;
	struct sio_edu_emu *e;
	struct sio_devreg *reg;
	struct sio_segment *bar;
	volatile void *bar0;
	pthread_t thr;
};

static void lend_edu(struct lent *l)
{
	struct sio_device_desc desc = { .class_code = 0xff0000, .vendor = EDU_VENDOR,
					.device = EDU_DEVICE, .nbars = 1, .bar_size = { 1u << 20 },
					.name = "edu 0000:00:09.0" };
	struct sio_edu_emu_config cfg = { 0 };
	const struct reg_dev *dv = NULL;
	uint32_t id;

	cr_assert_eq(sio_fabric_open(name, 0, &l->f), 0, "%s", sio_errmsg());
	cr_assert_eq(sio_fabric_open(name, 0, &l->fm), 0, "%s", sio_errmsg());
	cr_assert_eq(sio_edu_emu_create(l->fm, &cfg, &l->e), 0, "%s", sio_errmsg());
	id = sio_edu_emu_device_id(l->e);
	for (int d = 0; d < SIO_MAX_DEVS && !dv; d++)
		if (l->f->reg->devs[d].used && l->f->reg->devs[d].id == id)
			dv = &l->f->reg->devs[d];
	cr_assert(dv, "device %u is not in the registry", id);
	cr_assert_eq(sio_segment_connect(l->f, 0, l->f->reg->segs[dv->bar_seg[0]].id, &l->bar), 0,
		     "%s", sio_errmsg());
	cr_assert_eq(sio_segment_map(l->bar, (void **)&l->bar0), 0, "%s", sio_errmsg());
	cr_assert_eq(sio__device_register_ext(l->f, &desc, SIO_BACKEND_VFIO, "0000:00:09.0",
					      "/nonexistent/edu.sock", &l->reg), 0, "%s", sio_errmsg());
	model_stop = false;
	cr_assert_eq(pthread_create(&l->thr, NULL, model_run, l->e), 0);
}

static void unlend_edu(struct lent *l, bool exported)
{
	if (exported)
		l->f->ops->dev_unexport(l->f, l->reg->slot);
	sio_devreg_close(l->reg);
	model_stop = true;
	pthread_join(l->thr, NULL);
	sio_segment_close(l->bar);
	sio_edu_emu_destroy(l->e);
	sio_fabric_close(l->fm);
	sio_fabric_close(l->f);
}

static struct sio_dev_export export_of(struct lent *l)
{
	return (struct sio_dev_export){ .bar0 = l->bar0, .bar0_size = 1u << 20,
					.bar0_bus = UINT64_MAX, .dma_map = stub_map,
					.dma_unmap = stub_unmap };
}

/* A borrower on kernel-1 finding the device @way (forked first: this
 * process has no threads yet), then edu lent here, its export to come. */
struct trial {
	struct lent l;
	struct sio_dev_export x;
	pid_t pid;
	int fd;		/* the borrower's pipe, for the device id */
};

static void trial_start(struct trial *t, enum way way)
{
	int pfd[2];

	cr_assert_eq(pipe(pfd), 0);
	t->pid = borrower_start(pfd[0], way);
	t->fd = pfd[1];
	lend_edu(&t->l);
	t->x = export_of(&t->l);
}

/* The device id to the borrower. */
static uint32_t trial_go(struct trial *t)
{
	uint32_t id = sio_devreg_id(t->l.reg);

	cr_assert_eq(write(t->fd, &id, sizeof(id)), sizeof(id));
	return id;
}

/* The borrower's end: it must have done all it was to do. */
static void trial_ok(struct trial *t)
{
	int rc = borrower_end(t->pid);

	cr_assert_eq(rc, B_OK, "the borrower on kernel-1: %s", rc < B_PIPE + 1 ? b_what[rc] : "?");
}

Test(relay, edu_is_driven_from_another_kernel_through_its_own_doorbells,
     .init = setup, .fini = teardown)
{
	struct sio_fabric_status *st;
	uint64_t relayed = 0;
	struct trial t;
	uint32_t id;

	trial_start(&t, RELAYED);
	cr_assert_eq(edu_doorbells(t.l.bar0, t.x.bar0_size, &t.x.db, NULL), 0, "%s",
		     sio_errmsg());
	cr_assert_eq(t.x.db.base, EDU_REG_IRQ_RAISE, "edu's doorbells, not NVMe's 0x1000");
	cr_assert_eq(t.l.f->ops->dev_export(t.l.f, t.l.reg->slot, &t.x), 0, "%s", sio_errmsg());
	cr_assert(strstr(t.x.how, "relayed"), "the lender says how: %s", t.x.how);
	id = trial_go(&t);
	trial_ok(&t);
	cr_assert_eq(sio_fabric_status_get(t.l.f, &st), 0, "%s", sio_errmsg());
	for (int i = 0; i < st->ndevices; i++)
		if (st->devices[i].id == id)
			relayed = st->devices[i].relayed;
	sio_fabric_status_close(st);
	cr_assert_geq(relayed, 2, "the raise and the acknowledgement were relayed, not %llu",
		      (unsigned long long)relayed);
	unlend_edu(&t.l, true);
}

Test(relay, a_device_lent_without_a_description_is_not_relayed,
     .init = setup, .fini = teardown)
{
	struct trial t;

	trial_start(&t, UNDESCRIBED);
	/* a description that does not fit BAR0 is refused outright */
	t.x.db = (struct sio_doorbells){ .base = 2u << 20, .stride = 4, .count = 1 };
	cr_assert_eq(t.l.f->ops->dev_export(t.l.f, t.l.reg->slot, &t.x), -EINVAL);
	cr_assert(strstr(sio_errmsg(), "do not fit"), "%s", sio_errmsg());
	t.x.db = (struct sio_doorbells){ 0 };
	cr_assert_eq(t.l.f->ops->dev_export(t.l.f, t.l.reg->slot, &t.x), 0, "%s", sio_errmsg());
	cr_assert(strstr(t.x.how, "not relayed"), "the lender says so: %s", t.x.how);
	trial_go(&t);
	trial_ok(&t);
	unlend_edu(&t.l, true);
}

/* A dma_map that fails with @flaky_err while it is set, and what the
 * relay said to the lender's log. */
static int flaky_err;
static char said[4096];
static pthread_mutex_t said_lock = PTHREAD_MUTEX_INITIALIZER;

static int flaky_map(void *ctx, void *va, uint64_t len, uint64_t phys, uint64_t *bus)
{
	int e = __atomic_load_n(&flaky_err, __ATOMIC_ACQUIRE);

	if (e)
		return sio__err(e, "IOMMU map of %llu bytes: %s", (unsigned long long)len,
				strerror(e));
	return stub_map(ctx, va, len, phys, bus);
}

static void say_here(void *ctx, const char *msg)
{
	(void)ctx;
	pthread_mutex_lock(&said_lock);
	snprintf(said + strlen(said), sizeof(said) - strlen(said), "%s\n", msg);
	pthread_mutex_unlock(&said_lock);
}

static bool said_within(const char *what, int ms)
{
	bool found = false;

	for (int i = 0; i < ms / 10 && !found; i++) {
		pthread_mutex_lock(&said_lock);
		found = strstr(said, what) != NULL;
		pthread_mutex_unlock(&said_lock);
		if (!found)
			nap_ms(10);
	}
	return found;
}

/* The pools' memory pinned for the device fails as a window whose link is
 * down does (-EFAULT): the device is lent all the same, the lender's log
 * says which pool it cannot reach, and the relay maps it once it can. An
 * error of another kind (-ENOMEM: the locked-memory limit) fails the lend. */
Test(relay, a_pool_not_reachable_yet_is_mapped_later_not_a_failed_lend,
     .init = setup, .fini = teardown)
{
	struct sio_dev_export x;
	struct lent l;

	lend_edu(&l);
	x = export_of(&l);
	x.dma_map = flaky_map;
	x.say = say_here;
	__atomic_store_n(&flaky_err, ENOMEM, __ATOMIC_RELEASE);
	cr_assert_eq(l.f->ops->dev_export(l.f, l.reg->slot, &x), -ENOMEM);
	__atomic_store_n(&flaky_err, EFAULT, __ATOMIC_RELEASE);
	cr_assert_eq(l.f->ops->dev_export(l.f, l.reg->slot, &x), 0, "%s", sio_errmsg());
	cr_assert(said_within("the device cannot reach pool", 1000), "%s", said);
	cr_assert(strstr(said, "Bad address"), "%s", said);
	unlend_edu(&l, true);
	said[0] = 0;
	lend_edu(&l);	/* the source's own word for a link that is down */
	x = export_of(&l);
	x.dma_map = flaky_map;
	x.say = say_here;
	__atomic_store_n(&flaky_err, ENOTCONN, __ATOMIC_RELEASE);
	cr_assert_eq(l.f->ops->dev_export(l.f, l.reg->slot, &x), 0, "%s", sio_errmsg());
	cr_assert(said_within("not connected", 1000), "%s", said);
	__atomic_store_n(&flaky_err, 0, __ATOMIC_RELEASE);
	cr_assert(said_within("the device reaches pool", 2000), "%s", said);
	unlend_edu(&l, true);
}

/* The lender's export reading all ones, as across a link that is down: a
 * borrower of another kernel is told the device is out of reach for now
 * (-ENOLINK), not that its lender no longer exports it. */
Test(relay, an_export_that_reads_all_ones_is_out_of_reach_not_gone,
     .init = setup, .fini = teardown)
{
	uint64_t *gen, was;
	struct trial t;
	char c;

	cr_assert_eq(pipe(dark_up), 0);
	cr_assert_eq(pipe(dark_down), 0);
	trial_start(&t, DARK);
	cr_assert_eq(edu_doorbells(t.l.bar0, t.x.bar0_size, &t.x.db, NULL), 0, "%s",
		     sio_errmsg());
	cr_assert_eq(t.l.f->ops->dev_export(t.l.f, t.l.reg->slot, &t.x), 0, "%s", sio_errmsg());
	trial_go(&t);
	cr_assert_eq(read(dark_up[0], &c, 1), 1, "the borrower did not borrow");
	gen = &wf_of(t.l.f)->hdr->devs[t.l.reg->slot].gen;
	was = *gen;
	*gen = ~0ull;
	cr_assert_eq(write(dark_down[1], &c, 1), 1);
	trial_ok(&t);
	*gen = was;
	unlend_edu(&t.l, true);
}
