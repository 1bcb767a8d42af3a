/* SPDX-License-Identifier: MIT */
/*
 * Mapped files another process shrinks. A fabric's files (its registry and
 * its segments) are shared with every process of the fabric's user, and
 * any of them can truncate one: a later access to a mapped page beyond the
 * new end is a SIGBUS, which killed whichever process touched it (the
 * manager, a client, the controller's model). libwayland-server's
 * wl_shm_buffer_begin_access() meets the same with client memory; here the
 * fault is survived the same way, and the file is mended:
 *
 * each mapping of a fabric file is recorded (sio__shm_guard()); a SIGBUS at
 * an address inside one grows the file back to what the mapping needs (the
 * same file: its inode is checked), gives the faulting page its memory, and
 * the access is made again, reading zeros where the cut was. Every process
 * that maps the file may fault on it at once (a client and the controller
 * touching its queue): each mends the same shared file, never a copy of its
 * own, so they go on sharing every page. Where that cannot be done (the file
 * was replaced, or no room on a full tmpfs) the range is covered with
 * private zero pages, so the process goes on, detached from that file.
 * Either way one line on stderr names the file.
 * What a process reads there is input like all shared memory: the manager
 * finds its mailbox damaged and rebuilds it, a queue finds nothing new.
 * A SIGBUS elsewhere goes to the handler there was before.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <string.h>
#include <unistd.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include "shm.h"

#define GUARDS		8192
#define GUARD_PATH	240

struct guard {
	_Atomic uintptr_t start;	/* 0: free */
	size_t len;
	uint64_t need;			/* bytes the file must hold: offset + len */
	dev_t dev;
	ino_t ino;
	int prot;
	char path[GUARD_PATH];
};

static struct guard guards[GUARDS];
static pthread_mutex_t guards_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_once_t installed = PTHREAD_ONCE_INIT;
static struct sigaction before;

/* write(2) of @s, the one output a handler may make */
static void say(const char *s)
{
	ssize_t r = write(2, s, strlen(s));

	(void)r;
}

/* @v in decimal into @buf (32 bytes) */
static const char *dec(uint64_t v, char *buf)
{
	char *p = buf + 31;

	*p = 0;
	do
		*--p = (char)('0' + v % 10);
	while ((v /= 10) && p > buf);
	return p;
}

/*
 * Mend @g's file for an access at byte @at of it: the same file (its inode
 * checked) grown back to what the mapping needs, and the page at @at given
 * memory, so the access made again finds the shared page. fallocate() (mode
 * 0) only ever grows a file: two processes mending at once never cut it
 * again (ftruncate() to the smaller of two mappings' sizes would), and one
 * that finds it grown already by the other (its fault came before the
 * other's mend, its handler after) still gets its page here. It took the
 * place of private zeros, which left that process (the controller) writing
 * completions and reading data no one else could see. Returns 1 when this
 * process grew the file, 0 when it was long enough, -1 when it cannot be
 * mended (replaced, read-only here, or no room for the page).
 */
static int mend(const struct guard *g, uint64_t at)
{
	struct stat st;
	int fd, ret = -1;

	if (!g->path[0])
		return -1;
	fd = open(g->path, O_RDWR | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return -1;
	if (fstat(fd, &st) || st.st_dev != g->dev || st.st_ino != g->ino)
		goto out;
	ret = (uint64_t)st.st_size < g->need;
	if (ret && fallocate(fd, 0, (off_t)g->need - 1, 1) &&
	    (errno != EOPNOTSUPP || ftruncate(fd, (off_t)g->need)))
		ret = -1;
	/* no room for the page (a full tmpfs): the access would fault again */
	if (ret >= 0 && fallocate(fd, 0, (off_t)(at & ~(uint64_t)4095), 4096) &&
	    errno != EOPNOTSUPP)
		ret = -1;
out:
	close(fd);
	return ret;
}

static void on_sigbus(int sig, siginfo_t *si, void *uc)
{
	uintptr_t a = (uintptr_t)si->si_addr, s;
	int saved = errno;	/* the interrupted code's */
	char n[32];

	for (int i = 0; i < GUARDS; i++) {
		struct guard *g = &guards[i];

		s = atomic_load_explicit(&g->start, memory_order_acquire);
		if (!s || a < s || a - s >= g->len)
			continue;
		say("smartio: ");
		say(g->path[0] ? g->path : "a fabric file");
		switch (mend(g, g->need - g->len + (a - s))) {
		case 1:
			say(" was shrunk by another process: grown back to ");
			say(dec(g->need, n));
			say(" bytes; what was cut reads as zeros\n");
			errno = saved;
			return;
		case 0:
			say(" was shrunk by another process and grown back by one "
			    "that shares it; what was cut reads as zeros\n");
			errno = saved;
			return;
		}
		/* not mendable: private zeros, so this process goes on */
		mmap((void *)s, g->len, g->prot, MAP_FIXED | MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		say(" cannot be reached any more (replaced, shrunk, or no room): zeros in its "
		    "place here\n");
		errno = saved;
		return;
	}
	if (before.sa_flags & SA_SIGINFO && before.sa_sigaction) {
		before.sa_sigaction(sig, si, uc);
		return;
	}
	if (before.sa_handler != SIG_DFL && before.sa_handler != SIG_IGN && before.sa_handler) {
		before.sa_handler(sig);
		return;
	}
	/* not ours: the default action, at the access made again */
	signal(SIGBUS, SIG_DFL);
}

static void install(void)
{
	struct sigaction sa;

	memset(&sa, 0, sizeof(sa));
	sa.sa_sigaction = on_sigbus;
	sa.sa_flags = SA_SIGINFO | SA_NODEFER;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGBUS, &sa, &before);
}

void sio__shm_guard(void *va, size_t len, int fd, const char *path, uint64_t off, bool rdonly)
{
	struct stat st;

	if (fstat(fd, &st))
		return;
	pthread_once(&installed, install);
	pthread_mutex_lock(&guards_lock);
	for (int i = 0; i < GUARDS; i++) {
		struct guard *g = &guards[i];

		if (atomic_load_explicit(&g->start, memory_order_relaxed))
			continue;
		g->len = len;
		g->need = off + len;
		g->dev = st.st_dev;
		g->ino = st.st_ino;
		g->prot = rdonly ? PROT_READ : PROT_READ | PROT_WRITE;
		if (strlen(path) < GUARD_PATH)
			strcpy(g->path, path);
		else
			g->path[0] = 0;
		atomic_store_explicit(&g->start, (uintptr_t)va, memory_order_release);
		break;
	}
	pthread_mutex_unlock(&guards_lock);
}

void sio__shm_unguard(void *va)
{
	pthread_mutex_lock(&guards_lock);
	for (int i = 0; i < GUARDS; i++)
		if (atomic_load_explicit(&guards[i].start, memory_order_relaxed) == (uintptr_t)va) {
			atomic_store_explicit(&guards[i].start, 0, memory_order_release);
			break;
		}
	pthread_mutex_unlock(&guards_lock);
}
