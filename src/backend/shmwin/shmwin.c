/* SPDX-License-Identifier: MIT */
/*
 * The shmwin backend: the window fabric over one shared window. The window
 * is laid out as
 *
 *   0                  the window fabric's header (winfab.h)
 *   WF_REG_OFF         the core's registry
 *   WF_STATE_END       pool 0: the segments of every node, to the window's end
 *
 * and this file is its window source (the window's mappings, the ivshmem
 * doorbells, the lease lock) and its fabric ops: one fabric per window,
 * claimed by the first create.
 */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include "shmwin.h"

#define MIN_DATA	(1ull << 20)
#define DOORBELL	3	/* BAR0 registers, in dwords: IVPosition 2, Doorbell 3 */
#define IVPOSITION	2

/* The source's own per handle (wf_fabric.priv). */
struct shmwin {
	struct shmwin_win win;
	volatile uint32_t *regs;	/* BAR0 of an ivshmem-doorbell function, or NULL */
};

static struct shmwin *sw(struct wf_fabric *s)
{
	return s->priv;
}

static int win_map(struct wf_fabric *s, int pool, uint64_t off, uint64_t len, bool rdonly,
		   void **va)
{
	struct shmwin_win *w = &sw(s)->win;

	(void)pool;	/* the state and the pool are the same window */
	if (!len || off > w->size || len > w->size - off)
		return sio__err(EINVAL, "shmwin: %llu bytes at %llu are outside the window (%llu bytes)",
				(unsigned long long)len, (unsigned long long)off,
				(unsigned long long)w->size);
	return sio__wf_mmap(w->fd, w->base + off, len, rdonly, w->what, va);
}

static void win_unmap(struct wf_fabric *s, void *va, uint64_t len)
{
	(void)s;
	sio__wf_munmap(va, len);
}

static uint64_t win_bus(struct wf_fabric *s, int pool)
{
	(void)pool;
	return sw(s)->win.bus;
}

static int win_pool_of(struct wf_fabric *s, int node)
{
	(void)s;
	(void)node;
	return 0;	/* one pool: the window's data area */
}

/* Ring every other kernel that has a process joined, once (ivshmem: peer << 16 | vector 0). */
static int win_ring(struct wf_fabric *s)
{
	uint64_t done = 0;
	int n = 0;

	if (!sw(s)->regs)
		return 0;
	/* read unlocked: a stale entry costs one spurious interrupt */
	for (int i = 0; i < SIO_MAX_PROCS; i++) {
		int peer = s->hdr->procs[i].peer;

		if (!atomic_load_explicit(&s->hdr->procs[i].token, memory_order_relaxed) ||
		    peer < 0 || peer >= 64 || peer == s->peer || (done & (1ull << peer)))
			continue;
		done |= 1ull << peer;
		atomic_thread_fence(memory_order_seq_cst);	/* the word before the interrupt */
		sw(s)->regs[DOORBELL] = (uint32_t)peer << 16;
		n++;
	}
	return n;
}

static void win_beat(struct wf_fabric *s)
{
	sio__wf_lease_renew(&s->hdr->lock);
}

static int win_lock(struct sio_fabric *f, bool *holder_died)
{
	return sio__wf_lease_lock(f, &wf_of(f)->hdr->lock, holder_died);
}

static void win_unlock(struct sio_fabric *f)
{
	sio__wf_lease_unlock(&wf_of(f)->hdr->lock);
}

static const char *win_what(struct wf_fabric *s, int pool)
{
	static __thread char buf[192];

	(void)pool;	/* one window holds all */
	snprintf(buf, sizeof(buf), "the window (%s)", sw(s)->win.what);
	return buf;
}

static const struct wf_source shmwin_source = {
	.name = "shmwin",
	.map = win_map,
	.unmap = win_unmap,
	.bus = win_bus,
	.pool_of = win_pool_of,
	.ring = win_ring,
	.beat = win_beat,
	.lock = win_lock,
	.unlock = win_unlock,
	.what = win_what,
};

/* An ivshmem-doorbell function has BAR1 (MSI-X); ivshmem-plain has none. */
static bool has_doorbell(const char *bdf)
{
	char path[96];
	struct stat st;

	snprintf(path, sizeof(path), "/sys/bus/pci/devices/%s/resource1", bdf);
	return !stat(path, &st) && st.st_size > 0;
}

/* Where the window is an ivshmem-doorbell's BAR2: its registers, and this host's wake page. */
static void db_open(struct sio_fabric *f, struct wf_fabric *s)
{
	struct shmwin_win *w = &sw(s)->win;
	char path[96];
	void *p;
	int fd;

	if (!w->bdf[0] || w->bar != 2 || !has_doorbell(w->bdf))
		return;
	snprintf(path, sizeof(path), "/sys/bus/pci/devices/%s/resource0", w->bdf);
	if ((fd = open(path, O_RDWR | O_SYNC | O_CLOEXEC)) < 0)
		return;
	p = mmap(NULL, WF_PAGE, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	close(fd);
	if (p == MAP_FAILED)
		return;
	sio__wf_wake_open(f, s);
	if (!s->wake) {
		munmap(p, WF_PAGE);
		return;
	}
	sw(s)->regs = p;
	s->peer = (int)(sw(s)->regs[IVPOSITION] & 0xffff);
}

/* Open the window and map its header; the window's size checked. */
static int win_open(struct sio_fabric *f, bool create, struct wf_fabric **out)
{
	struct wf_fabric *s;
	struct shmwin *w;
	uint64_t ns;
	int ret;

	/* a bad lease is refused here, named, not replaced inside a wait */
	if ((ret = sio__wf_lease_check(&ns)))
		return ret;
	s = sio__wf_new(f, &shmwin_source);
	w = calloc(1, sizeof(*w));
	if (!s || !w) {
		free(s);
		free(w);
		return sio__err(ENOMEM, "out of memory");
	}
	s->priv = w;
	if ((ret = sio__shmwin_win_open(NULL, create, &w->win)))
		goto fail;
	if (w->win.size < WF_STATE_END + MIN_DATA) {
		ret = sio__err(ENOSPC, "shmwin: the window (%s) is %llu KiB; a fabric needs at least %llu KiB",
			       w->win.what, (unsigned long long)(w->win.size >> 10),
			       (unsigned long long)((WF_STATE_END + MIN_DATA) >> 10));
		goto close;
	}
	if ((ret = win_map(s, WF_STATE, 0, sizeof(struct wf_hdr), false, (void **)&s->hdr)))
		goto close;
	*out = s;
	return 0;
close:
	sio__shmwin_win_close(&w->win);
fail:
	free(w);
	free(s);
	return ret;
}

static void win_drop(struct wf_fabric *s)
{
	struct shmwin *w = sw(s);

	if (s->hdr)
		sio__wf_munmap(s->hdr, sizeof(*s->hdr));
	if (w->regs)
		munmap((void *)w->regs, WF_PAGE);
	sio__shmwin_win_close(&w->win);
	free(w);
	free(s);
}

static int sio__shmwin_create(struct sio_fabric *f, bool group, gid_t gid)
{
	struct wf_fabric *s;
	struct wf_hdr *h;
	uint64_t zero = 0, size;
	int ret;

	(void)gid;
	if (group)
		return sio__err(EOPNOTSUPP, "shmwin: a fabric over a shared window has no group access: every node that maps the window may join");
	if ((ret = win_open(f, true, &s)))
		return ret;
	h = s->hdr;
	size = sw(s)->win.size;
	/* one fabric per window: the first to claim the header makes it */
	if (!__atomic_compare_exchange_n(&h->magic, &zero, WF_MAGIC, false, __ATOMIC_ACQ_REL,
					 __ATOMIC_ACQUIRE)) {
		ret = sio__err(EEXIST, "shmwin: the window (%s) already holds fabric '%.*s'%s",
			       sw(s)->win.what, SIO_NAME_MAX - 1, h->name,
			       zero == WF_MAGIC ? "" : " (or foreign data: destroy it first)");
		win_drop(s);
		return ret;
	}
	if ((ret = sio__wf_init(f, s, size, h->create_gen + 1))) {
		atomic_thread_fence(memory_order_release);
		h->magic = 0;
		win_drop(s);
		return ret;
	}
	h->pools[0] = (struct wf_pool){ .off = WF_STATE_END, .size = size - WF_STATE_END };
	return 0;
}

static int sio__shmwin_attach(struct sio_fabric *f)
{
	struct wf_fabric *s;
	int ret;

	if ((ret = win_open(f, false, &s)))
		return ret;
	if ((ret = sio__wf_check(s, f->name, sw(s)->win.size, "")))
		goto fail;
	if (s->hdr->pools[0].off != WF_STATE_END ||
	    s->hdr->pools[0].size != sw(s)->win.size - WF_STATE_END) {
		ret = sio__err(EUCLEAN, "fabric '%s': the window (%s) places its data at %llu (%llu bytes): not this smartio's layout",
			       f->name, sw(s)->win.what, (unsigned long long)s->hdr->pools[0].off,
			       (unsigned long long)s->hdr->pools[0].size);
		goto fail;
	}
	if ((ret = sio__wf_attach(f, s)))
		goto fail;
	db_open(f, s);
	return 0;
fail:
	f->reg = NULL;
	win_drop(s);
	return ret;
}

static void sio__shmwin_detach(struct sio_fabric *f)
{
	struct wf_fabric *s = wf_of(f);

	if (!s) {
		f->reg = NULL;
		return;
	}
	sio__wf_detach(f, s);
	win_drop(s);
}

/* Clear the window: the fabric is gone for every node at once. */
static int sio__shmwin_destroy(const char *name)
{
	struct sio_fabric f = { .proc = -1 };
	struct wf_fabric *s;
	struct wf_hdr *h;
	int ret;

	snprintf(f.name, sizeof(f.name), "%s", name);
	if ((ret = win_open(&f, false, &s)))
		return ret;
	h = s->hdr;
	if (__atomic_load_n(&h->magic, __ATOMIC_ACQUIRE) == WF_MAGIC &&
	    (!memchr(h->name, 0, sizeof(h->name)) || strcmp(h->name, name)))
		ret = sio__err(ENOENT, "no fabric '%s': the window (%s) holds fabric '%.*s'", name,
			       sw(s)->win.what, SIO_NAME_MAX - 1, h->name);
	else if (__atomic_load_n(&h->magic, __ATOMIC_ACQUIRE) != WF_MAGIC)
		ret = sio__err(ENOENT, "no fabric '%s' (the window, %s, holds none)", name,
			       sw(s)->win.what);
	else {
		struct sio_registry *r;
		if (!win_map(s, WF_STATE, WF_REG_OFF, sizeof(*r), false, (void **)&r)) {
			r->magic = 0;
			sio__wf_munmap(r, sizeof(*r));
		}
		atomic_thread_fence(memory_order_release);
		__atomic_store_n(&h->magic, 0, __ATOMIC_RELEASE);
		sio__wf_host_forget(s, name);
	}
	win_drop(s);
	return ret;
}

/* The doorbell_serve op: an ivshmem-doorbell window's interrupts wake this kernel. */
static int shmwin_doorbell_serve(struct sio_fabric *f, int efd, volatile sig_atomic_t *stop,
				 FILE *log)
{
	struct wf_fabric *s = wf_of(f);
	char what[200];

	if (!sw(s)->regs)
		return sio__err(ENODEV, "fabric '%s': its window has no doorbells (an ivshmem-doorbell function)",
				f->name);
	snprintf(what, sizeof(what), "peer %d of %s", s->peer, sw(s)->win.what);
	return sio__wf_doorbell_serve(f, efd, stop, log, what);
}

const struct sio_fabric_ops sio__shmwin_fabric_ops = {
	.name = "shmwin",
	.create = sio__shmwin_create,
	.attach = sio__shmwin_attach,
	.detach = sio__shmwin_detach,
	.destroy = sio__shmwin_destroy,
	.removed = sio__wf_removed,
	.proc_init = sio__wf_proc_init,
	.doorbell_serve = shmwin_doorbell_serve,
	WF_FABRIC_OPS,
};
