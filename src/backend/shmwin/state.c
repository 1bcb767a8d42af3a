/* SPDX-License-Identifier: MIT */
/*
 * The shmwin backend's shared state: the window's layout (its header, the
 * registry, the data area), creating, attaching and destroying a fabric in
 * it, and how a process is known to live: a heartbeat counter per process
 * slot, bumped by a thread of each process and read against the reader's
 * own clock, since the kernels' clocks cannot be compared.
 */
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/mman.h>
#include <sys/random.h>
#include <sys/stat.h>
#include "parse.h"
#include "shmwin.h"
#include "shm/shm.h"

#define ALIGN(v, a)	(((v) + (a) - 1) & ~((uint64_t)(a) - 1))
#define REG_OFF		ALIGN(sizeof(struct shmwin_hdr), SHMWIN_PAGE)
#define DATA_OFF	ALIGN(REG_OFF + sizeof(struct sio_registry), 64 * 1024)
#define MIN_DATA	(1ull << 20)

static uint64_t fnv(const char *p)
{
	uint64_t h = 0xcbf29ce484222325ull;

	for (; *p; p++)
		h = (h ^ (uint8_t)*p) * 0x100000001b3ull;
	return h ? h : 1;
}

/*
 * This kernel, as a number: its boot id. $SMARTIO_SHMWIN_KERNEL replaces it,
 * so that processes of one host can play separate kernels in tests.
 */
uint64_t shmwin_boot_id(void)
{
	static uint64_t id;
	const char *e = getenv("SMARTIO_SHMWIN_KERNEL");
	char buf[64] = "";
	FILE *fp;

	if (e && *e)
		return fnv(e);
	if (id)
		return id;
	if ((fp = fopen("/proc/sys/kernel/random/boot_id", "re"))) {
		if (!fgets(buf, sizeof(buf), fp))
			buf[0] = 0;
		fclose(fp);
	}
	if (!buf[0])
		snprintf(buf, sizeof(buf), "host-%ld", gethostid());
	return id = fnv(buf);
}

/* Pids mean something only on their own kernel; $SMARTIO_SHMWIN_PIDS=0 ignores them even there. */
bool shmwin_trust_pids(void)
{
	const char *e = getenv("SMARTIO_SHMWIN_PIDS");

	return !(e && !strcmp(e, "0"));
}

bool shmwin_pid_dead(int pid)
{
	return sio__shm_task_dead(pid);
}

uint64_t shmwin_lease_ns(void)
{
	const char *e = getenv("SMARTIO_SHMWIN_LEASE_MS");
	uint64_t ms;

	if (!e || !*e || sio_parse_u64(e, 100, 600000, &ms))
		ms = SHMWIN_LEASE_MS;
	return ms * 1000000ull;
}

/*
 * The heartbeat thread: one per process, for every shmwin handle it holds.
 * It bumps the process's slot, renews a lock lease this process holds and
 * wakes event fds. A forked child starts afresh: new token, no thread yet.
 */
static pthread_mutex_t beat_mu = PTHREAD_MUTEX_INITIALIZER;
static struct shmwin_fabric *beat_list;
static bool beat_running;
static uint64_t proc_token;
static pthread_once_t atfork_once = PTHREAD_ONCE_INIT;

static void after_fork(void)
{
	pthread_mutex_init(&beat_mu, NULL);
	beat_list = NULL;
	beat_running = false;
	proc_token = 0;
}

static void atfork_init(void)
{
	pthread_atfork(NULL, NULL, after_fork);
}

/* This process's identity in the window: random, its low 16 bits free for a thread's. */
uint64_t shmwin_proc_token(void)
{
	pthread_once(&atfork_once, atfork_init);
	while (!proc_token) {
		uint64_t t = 0;

		if (getrandom(&t, sizeof(t), 0) != sizeof(t))
			t = fnv("pid") ^ ((uint64_t)getpid() << 20) ^ (uint64_t)time(NULL);
		proc_token = t & ~0xffffull;
	}
	return proc_token;
}

static void *beat_thread(void *arg)
{
	struct timespec ts = { 0, (long)SHMWIN_BEAT_NS };

	(void)arg;
	for (;;) {
		pthread_mutex_lock(&beat_mu);
		for (struct shmwin_fabric *s = beat_list; s; s = s->next) {
			struct shmwin_proc *p = s->slot >= 0 ? &s->hdr->procs[s->slot] : NULL;

			if (p && atomic_load(&p->token) == proc_token)
				atomic_fetch_add(&p->beat, 1);
			shmwin_lock_renew(s);
			shmwin_ev_poll(s);
		}
		pthread_mutex_unlock(&beat_mu);
		nanosleep(&ts, NULL);
	}
	return NULL;
}

void shmwin_beat_add(struct shmwin_fabric *s)
{
	pthread_t t;
	pthread_attr_t a;

	shmwin_proc_token();
	pthread_mutex_lock(&beat_mu);
	s->next = beat_list;
	beat_list = s;
	if (!beat_running) {
		pthread_attr_init(&a);
		pthread_attr_setdetachstate(&a, PTHREAD_CREATE_DETACHED);
		beat_running = !pthread_create(&t, &a, beat_thread, NULL);
		pthread_attr_destroy(&a);
	}
	pthread_mutex_unlock(&beat_mu);
}

void shmwin_beat_del(struct shmwin_fabric *s)
{
	pthread_mutex_lock(&beat_mu);
	for (struct shmwin_fabric **pp = &beat_list; *pp; pp = &(*pp)->next)
		if (*pp == s) {
			*pp = s->next;
			break;
		}
	pthread_mutex_unlock(&beat_mu);
}

/* Open the window and map its header; the layout checked against ours. */
static int win_hdr(const char *name, bool create, struct shmwin_fabric *s)
{
	int ret = shmwin_win_open(NULL, create, &s->win);

	if (ret)
		return ret;
	if (s->win.size < DATA_OFF + MIN_DATA) {
		ret = sio__err(ENOSPC, "shmwin: the window (%s) is %llu KiB; a fabric needs at least %llu KiB",
			       s->win.what, (unsigned long long)(s->win.size >> 10),
			       (unsigned long long)((DATA_OFF + MIN_DATA) >> 10));
		shmwin_win_close(&s->win);
		return ret;
	}
	ret = shmwin_map(s, 0, sizeof(struct shmwin_hdr), false, (void **)&s->hdr);
	if (ret)
		shmwin_win_close(&s->win);
	(void)name;
	return ret;
}

static void win_drop(struct shmwin_fabric *s)
{
	if (s->hdr)
		shmwin_unmap(s->hdr, sizeof(*s->hdr));
	s->hdr = NULL;
	shmwin_win_close(&s->win);
}

static struct shmwin_fabric *state_new(struct sio_fabric *f)
{
	struct shmwin_fabric *s = calloc(1, sizeof(*s));

	if (s) {
		s->evfd = -1;
		s->slot = -1;
		s->f = f;
	}
	return s;
}

static int map_reg(struct sio_fabric *f, struct shmwin_fabric *s)
{
	return shmwin_map(s, REG_OFF, sizeof(struct sio_registry), false, (void **)&f->reg);
}

static int sio__shmwin_create(struct sio_fabric *f, bool group, gid_t gid)
{
	struct shmwin_fabric *s;
	struct shmwin_hdr *h;
	uint64_t zero = 0;
	int ret;

	(void)gid;
	if (group)
		return sio__err(EOPNOTSUPP, "shmwin: a fabric over a shared window has no group access: every node that maps the window may join");
	if (!(s = state_new(f)))
		return sio__err(ENOMEM, "out of memory");
	if ((ret = win_hdr(f->name, true, s))) {
		free(s);
		return ret;
	}
	h = s->hdr;
	/* one fabric per window: the first to claim the header makes it */
	if (!__atomic_compare_exchange_n(&h->magic, &zero, SHMWIN_MAGIC, false, __ATOMIC_ACQ_REL,
					 __ATOMIC_ACQUIRE)) {
		ret = sio__err(EEXIST, "shmwin: the window (%s) already holds fabric '%.*s'%s", s->win.what,
			       SIO_NAME_MAX - 1, h->name, zero == SHMWIN_MAGIC ? "" : " (or foreign data: destroy it first)");
		goto fail;
	}
	s->create_gen = h->create_gen + 1;
	memset((char *)h + sizeof(h->magic), 0, sizeof(*h) - sizeof(h->magic));
	h->version = SHMWIN_VERSION;
	h->size = s->win.size;
	h->create_gen = s->create_gen;
	snprintf(h->name, sizeof(h->name), "%s", f->name);
	h->reg_off = REG_OFF;
	h->data_off = DATA_OFF;
	h->data_size = s->win.size - DATA_OFF;
	if ((ret = map_reg(f, s))) {
		atomic_thread_fence(memory_order_release);
		h->magic = 0;
		goto fail;
	}
	memset(f->reg, 0, sizeof(*f->reg));
	f->reg->uid = (uint32_t)geteuid();
	f->reg->gid = (uint32_t)getegid();
	f->be = s;
	shmwin_beat_add(s);
	return 0;
fail:
	win_drop(s);
	free(s);
	return ret;
}

/* The header of a window holding fabric @name, as this version lays it out. */
static int check_hdr(const char *name, struct shmwin_fabric *s)
{
	const struct shmwin_hdr *h = s->hdr;

	if (__atomic_load_n(&h->magic, __ATOMIC_ACQUIRE) != SHMWIN_MAGIC)
		return sio__err(ENOENT, "no fabric '%s': the window (%s) holds none (create it with SMARTIO_FABRIC_BACKEND=shmwin smartio create %s)",
				name, s->win.what, name);
	if (!memchr(h->name, 0, sizeof(h->name)) || strcmp(h->name, name))
		return sio__err(ENOENT, "no fabric '%s': the window (%s) holds fabric '%.*s'", name,
				s->win.what, SIO_NAME_MAX - 1, h->name);
	if (h->version != SHMWIN_VERSION || h->reg_off != REG_OFF || h->data_off != DATA_OFF ||
	    h->size != s->win.size || h->data_size != s->win.size - DATA_OFF)
		return sio__err(EUCLEAN, "fabric '%s': the window's header (version %u, registry at %llu, data at %llu, %llu bytes) is not this smartio's layout or size",
				name, h->version, (unsigned long long)h->reg_off,
				(unsigned long long)h->data_off, (unsigned long long)h->size);
	return 0;
}

static int sio__shmwin_attach(struct sio_fabric *f)
{
	struct shmwin_fabric *s = state_new(f);
	int ret;

	if (!s)
		return sio__err(ENOMEM, "out of memory");
	if ((ret = win_hdr(f->name, false, s))) {
		free(s);
		return ret;
	}
	if ((ret = check_hdr(f->name, s)) || (ret = map_reg(f, s)))
		goto fail;
	s->create_gen = s->hdr->create_gen;
	if ((ret = reg_check_header(f->reg, f->name))) {
		shmwin_unmap(f->reg, sizeof(*f->reg));
		goto fail;
	}
	f->be = s;
	shmwin_db_open(f, s);
	shmwin_beat_add(s);
	return 0;
fail:
	f->reg = NULL;
	win_drop(s);
	free(s);
	return ret;
}

static void sio__shmwin_detach(struct sio_fabric *f)
{
	struct shmwin_fabric *s = shmwin_of(f);

	if (s)
		shmwin_beat_del(s);
	if (f->reg)
		shmwin_unmap(f->reg, sizeof(*f->reg));
	f->reg = NULL;
	if (!s)
		return;
	if (s->evfd >= 0)
		close(s->evfd);
	shmwin_db_close(s);
	win_drop(s);
	free(s);
	f->be = NULL;
}

/* Clear the window: the fabric is gone for every node at once. */
static int sio__shmwin_destroy(const char *name)
{
	struct shmwin_fabric s = { .evfd = -1, .slot = -1 };
	int ret;

	if ((ret = win_hdr(name, false, &s)))
		return ret;
	if (__atomic_load_n(&s.hdr->magic, __ATOMIC_ACQUIRE) == SHMWIN_MAGIC &&
	    (!memchr(s.hdr->name, 0, sizeof(s.hdr->name)) || strcmp(s.hdr->name, name)))
		ret = sio__err(ENOENT, "no fabric '%s': the window (%s) holds fabric '%.*s'", name,
			       s.win.what, SIO_NAME_MAX - 1, s.hdr->name);
	else if (__atomic_load_n(&s.hdr->magic, __ATOMIC_ACQUIRE) != SHMWIN_MAGIC)
		ret = sio__err(ENOENT, "no fabric '%s' (the window, %s, holds none)", name, s.win.what);
	else {
		struct sio_registry *r;
		if (!shmwin_map(&s, REG_OFF, sizeof(*r), false, (void **)&r)) {
			r->magic = 0;
			shmwin_unmap(r, sizeof(*r));
		}
		atomic_thread_fence(memory_order_release);
		__atomic_store_n(&s.hdr->magic, 0, __ATOMIC_RELEASE);
	}
	win_drop(&s);
	return ret;
}

static bool sio__shmwin_removed(struct sio_fabric *f)
{
	struct shmwin_fabric *s = shmwin_of(f);

	return s && (__atomic_load_n(&s->hdr->magic, __ATOMIC_ACQUIRE) != SHMWIN_MAGIC ||
		     s->hdr->create_gen != s->create_gen);
}

/* Services of this host (a vfio lender's socket) meet in a directory of its own. */
static int sio__shmwin_host_path(struct sio_fabric *f, const char *leaf, char *buf, size_t len)
{
	const char *b = getenv("SMARTIO_RUNDIR");
	char dir[PATH_MAX];

	snprintf(dir, sizeof(dir), "%s/smartio-shmwin-%s", b && *b ? b : "/dev/shm", f->name);
	if (mkdir(dir, 0700) && errno != EEXIST)
		return sio__err(errno, "shmwin: cannot create %s: %s", dir, strerror(errno));
	if ((size_t)snprintf(buf, len, "%s/%s", dir, leaf) >= len)
		return sio__err(ENAMETOOLONG, "fabric '%s': %s/%s is too long a path", f->name, dir, leaf);
	return 0;
}

static void sio__shmwin_proc_init(struct sio_fabric *f, struct reg_proc *p)
{
	struct shmwin_fabric *s = shmwin_of(f);
	int i = (int)(p - f->reg->procs);
	struct shmwin_proc *w = &s->hdr->procs[i];

	sio__shm_proc_init(f, p);	/* the start time: a check where pids mean something */
	w->boot = shmwin_boot_id();
	w->pid = p->pid;
	w->node = p->node;
	w->peer = s->db.regs ? s->db.peer : -1;
	atomic_store(&w->beat, 1);
	atomic_store(&w->token, shmwin_proc_token());
	atomic_store(&s->hdr->evq[i].head, 0);
	atomic_store(&s->hdr->evq[i].tail, 0);
	s->seen_ns[i] = 0;
	s->slot = i;
}

static bool sio__shmwin_proc_alive(struct sio_fabric *f, const struct reg_proc *p)
{
	struct shmwin_fabric *s = shmwin_of(f);
	int i = (int)(p - f->reg->procs);
	struct shmwin_proc *w = &s->hdr->procs[i];
	uint64_t tok = atomic_load(&w->token), beat = atomic_load(&w->beat), now = sio__now_ns();

	if (!tok)
		return false;	/* never initialised, or cleared: nothing to wait for */
	if (tok == shmwin_proc_token())
		return true;
	/* on this very kernel the kernel knows, at once */
	if (w->boot == shmwin_boot_id() && shmwin_trust_pids())
		return sio__shm_proc_alive(f, p);
	if (!s->seen_ns[i] || s->seen_beat[i] != beat) {
		s->seen_beat[i] = beat;
		s->seen_ns[i] = now;
		return true;
	}
	return now - s->seen_ns[i] < shmwin_lease_ns();
}

static void sio__shmwin_proc_gone(struct sio_fabric *f, int proc)
{
	struct shmwin_fabric *s = shmwin_of(f);

	if (proc < 0 || proc >= SIO_MAX_PROCS)
		return;
	memset(&s->hdr->procs[proc], 0, sizeof(s->hdr->procs[proc]));
	s->seen_ns[proc] = 0;
}

const struct sio_fabric_ops sio__shmwin_fabric_ops = {
	.name = "shmwin",
	.create = sio__shmwin_create,
	.attach = sio__shmwin_attach,
	.detach = sio__shmwin_detach,
	.destroy = sio__shmwin_destroy,
	.removed = sio__shmwin_removed,
	.host_path = sio__shmwin_host_path,
	.lock = sio__shmwin_lock,
	.unlock = sio__shmwin_unlock,
	.proc_init = sio__shmwin_proc_init,
	.proc_alive = sio__shmwin_proc_alive,
	.proc_gone = sio__shmwin_proc_gone,
	.seg_create = sio__shmwin_seg_create,
	.seg_remove = sio__shmwin_seg_remove,
	.seg_map = sio__shmwin_seg_map,
	.seg_unmap = sio__shmwin_seg_unmap,
	.ev_open = sio__shmwin_ev_open,
	.ev_close = sio__shmwin_ev_close,
	.ev_send = sio__shmwin_ev_send,
	.ev_fd = sio__shmwin_ev_fd,
	.ev_read = sio__shmwin_ev_read,
	.notify = sio__shmwin_notify,
	.wait = sio__shmwin_wait,
	.dev_ops = sio__shmwin_dev_ops,
	.dev_export = sio__shmwin_dev_export,
	.dev_unexport = sio__shmwin_dev_unexport,
};
