/* SPDX-License-Identifier: MIT */
/*
 * The window fabric's shared state: its header as a source hands it over,
 * the registry after it, and how a process is known to live: a heartbeat
 * counter per process slot, bumped by a thread of each process and read
 * against the reader's own clock, since the kernels' clocks cannot be
 * compared.
 */
#include <dirent.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/random.h>
#include <sys/stat.h>
#include "winfab.h"
#include "proc.h"

uint64_t sio__wf_fnv(const char *p)
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
uint64_t sio__wf_boot_id(void)
{
	static uint64_t id;
	const char *e = getenv("SMARTIO_SHMWIN_KERNEL");
	char buf[64] = "";
	FILE *fp;

	if (e && *e)
		return sio__wf_fnv(e);
	if (id)
		return id;
	if ((fp = fopen("/proc/sys/kernel/random/boot_id", "re"))) {
		if (!fgets(buf, sizeof(buf), fp))
			buf[0] = 0;
		fclose(fp);
	}
	if (!buf[0])
		snprintf(buf, sizeof(buf), "host-%ld", gethostid());
	return id = sio__wf_fnv(buf);
}

/* Pids mean something only on their own kernel; $SMARTIO_SHMWIN_PIDS=0 ignores them even there. */
bool sio__wf_trust_pids(void)
{
	const char *e = getenv("SMARTIO_SHMWIN_PIDS");

	return !(e && !strcmp(e, "0"));
}

int sio__wf_lease_check(uint64_t *ns)
{
	return sio__env_ms("SMARTIO_SHMWIN_LEASE_MS", WF_LEASE_MS, 100, 600000, ns);
}

uint64_t sio__wf_lease_ns(void)
{
	uint64_t ns;

	/* refused when the fabric was opened; the default if changed since */
	sio__wf_lease_check(&ns);
	return ns;
}

/*
 * The heartbeat thread: one per process, for every window fabric handle it
 * holds. It bumps the process's slot, runs the source's hook (a lease to
 * renew) and wakes event fds. A forked child starts afresh: new token, no
 * thread yet.
 */
static pthread_mutex_t beat_mu = PTHREAD_MUTEX_INITIALIZER;
static struct wf_fabric *beat_list;
static bool beat_running;
static uint64_t proc_token;
static _Atomic uint32_t claims;		/* slots this process took, the low bits of their tokens */
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
uint64_t sio__wf_proc_token(void)
{
	pthread_once(&atfork_once, atfork_init);
	while (!proc_token) {
		uint64_t t = 0;

		if (getrandom(&t, sizeof(t), 0) != sizeof(t))
			t = sio__wf_fnv("pid") ^ ((uint64_t)getpid() << 20) ^ (uint64_t)time(NULL);
		proc_token = t & ~0xffffull;
	}
	return proc_token;
}

static void *beat_thread(void *arg)
{
	struct timespec ts = { 0, (long)WF_BEAT_NS };

	(void)arg;
	for (;;) {
		pthread_mutex_lock(&beat_mu);
		for (struct wf_fabric *s = beat_list; s; s = s->next) {
			struct wf_proc *p = s->slot >= 0 ? &s->hdr->procs[s->slot] : NULL;

			/* only this thread writes the word: a load and a store, no atomic
			 * read-modify-write across kernels */
			if (p && atomic_load(&p->token) == s->tok)
				atomic_store(&p->beat, atomic_load(&p->beat) + 1);
			if (s->src->beat)
				s->src->beat(s);
			sio__wf_ev_poll(s);
		}
		pthread_mutex_unlock(&beat_mu);
		nanosleep(&ts, NULL);
	}
	return NULL;
}

void sio__wf_beat_add(struct wf_fabric *s)
{
	pthread_t t;
	pthread_attr_t a;

	sio__wf_proc_token();
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

void sio__wf_beat_del(struct wf_fabric *s)
{
	pthread_mutex_lock(&beat_mu);
	for (struct wf_fabric **pp = &beat_list; *pp; pp = &(*pp)->next)
		if (*pp == s) {
			*pp = s->next;
			break;
		}
	pthread_mutex_unlock(&beat_mu);
}

struct wf_fabric *sio__wf_new(struct sio_fabric *f, const struct wf_source *src)
{
	struct wf_fabric *s = calloc(1, sizeof(*s));

	if (s) {
		s->src = src;
		s->evfd = -1;
		s->slot = -1;
		s->peer = -1;
		s->f = f;
	}
	return s;
}

static int map_reg(struct sio_fabric *f, struct wf_fabric *s)
{
	return s->src->map(s, WF_STATE, s->hdr->reg_off, sizeof(struct sio_registry), false,
			   (void **)&f->reg);
}

int sio__wf_init(struct sio_fabric *f, struct wf_fabric *s, uint64_t size, uint64_t create_gen)
{
	struct wf_hdr *h = s->hdr;
	int ret;

	s->create_gen = create_gen;
	memset((char *)h + sizeof(h->magic), 0, sizeof(*h) - sizeof(h->magic));
	h->version = WF_VERSION;
	h->size = size;
	h->create_gen = create_gen;
	snprintf(h->name, sizeof(h->name), "%s", f->name);
	h->reg_off = WF_REG_OFF;
	if ((ret = map_reg(f, s)))
		return ret;
	memset(f->reg, 0, sizeof(*f->reg));
	f->reg->uid = (uint32_t)geteuid();
	f->reg->gid = (uint32_t)getegid();
	f->be = s;
	sio__wf_beat_add(s);
	return 0;
}

int sio__wf_check(struct wf_fabric *s, const char *name, uint64_t size, const char *how_to_create)
{
	const struct wf_hdr *h = s->hdr;
	const char *what = s->src->what(s, WF_STATE);

	if (__atomic_load_n(&h->magic, __ATOMIC_ACQUIRE) != WF_MAGIC)
		return sio__err(ENOENT, "no fabric '%s': %s holds none (create it with SMARTIO_FABRIC_BACKEND=%s smartio create %s%s)",
				name, what, s->src->name, name, how_to_create);
	if (!memchr(h->name, 0, sizeof(h->name)) || strcmp(h->name, name))
		return sio__err(ENOENT, "no fabric '%s': %s holds fabric '%.*s'", name, what,
				SIO_NAME_MAX - 1, h->name);
	if (h->version != WF_VERSION || h->reg_off != WF_REG_OFF || h->size != size)
		return sio__err(EUCLEAN, "fabric '%s': the header in %s (version %u, registry at %llu, %llu bytes) is not this smartio's layout or size",
				name, what, h->version, (unsigned long long)h->reg_off,
				(unsigned long long)h->size);
	return 0;
}

int sio__wf_attach(struct sio_fabric *f, struct wf_fabric *s)
{
	int ret = map_reg(f, s);

	if (ret)
		return ret;
	s->create_gen = s->hdr->create_gen;
	if ((ret = sio__reg_reach_check(f)) || (ret = sio__reg_check_header(f->reg, f->name))) {
		s->src->unmap(s, f->reg, sizeof(*f->reg));
		f->reg = NULL;
		return ret;
	}
	f->be = s;
	sio__wf_wake_open(f, s);
	sio__wf_beat_add(s);
	return 0;
}

void sio__wf_detach(struct sio_fabric *f, struct wf_fabric *s)
{
	sio__wf_beat_del(s);
	if (f->reg)
		s->src->unmap(s, f->reg, sizeof(*f->reg));
	f->reg = NULL;
	if (s->evfd >= 0)
		close(s->evfd);
	s->evfd = -1;
	sio__wf_wake_close(s);
	f->be = NULL;
}

bool sio__wf_removed(struct sio_fabric *f)
{
	struct wf_fabric *s = wf_of(f);

	return s && (__atomic_load_n(&s->hdr->magic, __ATOMIC_ACQUIRE) != WF_MAGIC ||
		     s->hdr->create_gen != s->create_gen);
}

/* The directory of this host's files of fabric @name over source @s (host_path). */
static void host_dir(const struct wf_fabric *s, const char *name, char *dir, size_t len)
{
	const char *b = getenv("SMARTIO_RUNDIR");

	snprintf(dir, len, "%s/smartio-%s-%s", b && *b ? b : "/dev/shm", s->src->name, name);
}

/* Services of this host (a vfio lender's socket) meet in a directory of their own. */
int sio__wf_host_path(struct sio_fabric *f, const char *leaf, char *buf, size_t len)
{
	char dir[PATH_MAX];

	host_dir(wf_of(f), f->name, dir, sizeof(dir));
	if (mkdir(dir, 0700) && errno != EEXIST)
		return sio__err(errno, "%s: cannot create %s: %s", wf_of(f)->src->name, dir,
				strerror(errno));
	if ((size_t)snprintf(buf, len, "%s/%s", dir, leaf) >= len)
		return sio__err(ENAMETOOLONG, "fabric '%s': %s/%s is too long a path", f->name, dir, leaf);
	return 0;
}

bool sio__wf_host_knew(const struct wf_fabric *s, const char *name)
{
	char path[PATH_MAX + 8];
	struct stat st;

	host_dir(s, name, path, PATH_MAX);
	strcat(path, "/wake");
	return !stat(path, &st);
}

/*
 * Each host's directory outlived its fabric: a window fabric made and
 * destroyed a thousand times left a thousand in /dev/shm. Processes that
 * still map the wake page keep their mapping; the directory is ours
 * (0700), and unlinkat() follows no link.
 */
void sio__wf_host_forget(const struct wf_fabric *s, const char *name)
{
	char dir[PATH_MAX];
	struct dirent *e;
	DIR *d;

	host_dir(s, name, dir, sizeof(dir));
	d = opendir(dir);
	if (!d)
		return;
	while ((e = readdir(d)))
		if (strcmp(e->d_name, ".") && strcmp(e->d_name, ".."))
			unlinkat(dirfd(d), e->d_name, 0);
	closedir(d);
	rmdir(dir);
}

void sio__wf_proc_init(struct sio_fabric *f, struct reg_proc *p)
{
	struct wf_fabric *s = wf_of(f);
	int i = (int)(p - f->reg->procs);
	struct wf_proc *w = &s->hdr->procs[i];

	p->starttime = sio__proc_start(p->pid);	/* a check where pids mean something */
	w->boot = sio__wf_boot_id();
	w->pid = p->pid;
	w->node = p->node;
	w->peer = s->peer;
	atomic_store(&w->beat, 1);
	/* each claim a life of its own, even this process's next one of the slot */
	s->tok = sio__wf_proc_token() | (1 + atomic_fetch_add(&claims, 1) % 0xffff);
	atomic_store(&w->token, s->tok);
	atomic_store(&s->hdr->evq[i].head, 0);
	atomic_store(&s->hdr->evq[i].tail, 0);
	s->slot = i;
}

bool sio__wf_proc_alive(struct sio_fabric *f, const struct reg_proc *p)
{
	struct wf_fabric *s = wf_of(f);
	int i = (int)(p - f->reg->procs);
	struct wf_proc *w = &s->hdr->procs[i];
	uint64_t tok = atomic_load(&w->token), beat = atomic_load(&w->beat), now = sio__now_ns();

	if (!tok)
		return false;	/* never initialised, or cleared: nothing to wait for */
	if ((tok & ~0xffffull) == sio__wf_proc_token())
		return true;	/* a slot of this process */
	/* on this very kernel the kernel knows, at once */
	if (w->boot == sio__wf_boot_id() && sio__wf_trust_pids())
		return sio__proc_alive(p->pid, p->starttime);
	/* A life that left and the one that took its slot can show the same
	 * count (a short-lived one never moves past 1): a new token is a new
	 * lease, not the old one's stale look. */
	if (s->seen_tok[i] != tok || s->seen_beat[i] != beat) {
		s->seen_tok[i] = tok;
		s->seen_beat[i] = beat;
		s->seen_ns[i] = now;
		return true;
	}
	return now - s->seen_ns[i] < sio__wf_lease_ns();
}

void sio__wf_proc_gone(struct sio_fabric *f, int proc)
{
	struct wf_fabric *s = wf_of(f);

	if (proc < 0 || proc >= SIO_MAX_PROCS)
		return;
	memset(&s->hdr->procs[proc], 0, sizeof(s->hdr->procs[proc]));
}

int sio__wf_lock(struct sio_fabric *f, bool *holder_died)
{
	return wf_of(f)->src->lock(f, holder_died);
}

void sio__wf_unlock(struct sio_fabric *f)
{
	wf_of(f)->src->unlock(f);
}
