/* SPDX-License-Identifier: MIT */
/*
 * A stand-in for smartio_ntb on one host (SMARTIO_NTB_DEV=fake:DIR), so that
 * the ntb backend's tests run without guests: it answers the requests of
 * <smartio/ntb.h> from files in DIR. A test aid, not part of libsmartio:
 * the library loads it (libsio-ntb-fake.so) from $SMARTIO_NTB_FAKE_LIB,
 * which with-ntb.sh sets. The real check of the backend is the vm suite's
 * ntb-fabric, on smartio_ntb and ntb_hw_ivshmem.
 *
 *   DIR/hw              the "hardware": per port its scratchpads, doorbell
 *                       counters, link flag and inbound translations
 *   DIR/buf-P-I-W       port P's buffer of inbound window W of peer index I
 *
 * A buffer's bus address encodes where it is; a translation must point
 * into a buffer of the same port (as ntb_hw_ivshmem's must point into its
 * area): anything else is -EOPNOTSUPP. A port's link is up while a handle
 * that opened it (not one adopted from another process) is open and its
 * process alive (a killed node service takes its link down, as a dead
 * host's heartbeat does), or until a test clears its flag
 * (sio_test_ntb_fake_link(): a partition, the port's service alive).
 * $SMARTIO_NTB_FAKE_REFUSE_XLAT=ERRNO (read at open): this handle's
 * translations are refused with -ERRNO, as a driver whose rules they
 * break. sio_test_ntb_fake_refuse_maps(): a port's next maps through a
 * window are refused, as across a link that flapped;
 * sio_test_ntb_fake_cut_at_map(): a link cut right after a port's next
 * map. What the fake does not model: timing, write combining, revocation
 * of mappings when a link goes (its pages stay).
 */
#include <fcntl.h>
#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <linux/futex.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>

#include "internal.h"
#include "parse.h"
#include "ntbdev.h"

#define FAKE_MAGIC	0x314b414642544e53ull	/* "SNTBFAK1" */
#define FAKE_PORTS	32
#define FAKE_MWS	4
#define FAKE_SPADS	16
#define FAKE_BITS	32

struct fake_hw {
	_Atomic uint64_t magic;
	uint32_t ports, mws;
	uint64_t win_size;
	uint32_t page_xlat;
	_Atomic uint32_t link_gen;
	struct {
		_Atomic uint32_t up;
		_Atomic int32_t pid;	/* the process of the handle that took it up */
		_Atomic uint32_t dbseq;
		_Atomic uint32_t refuse_maps;	/* the next ones through a window */
		_Atomic int32_t cut_at_map;	/* 1 + the port whose link the next one cuts */
		_Atomic uint32_t db[FAKE_BITS];
		_Atomic uint32_t spad[FAKE_SPADS];
		struct { _Atomic uint64_t addr, size; } xlat[FAKE_PORTS][FAKE_MWS];
	} port[FAKE_PORTS];
};

struct fake {
	struct fake_hw *hw;
	char dir[PATH_MAX];
	bool owner;			/* opened, not adopted: its port's link is up */
	int refuse_xlat;		/* > 0: every MW_XLAT fails with this errno */
	int buf_fd[FAKE_PORTS][FAKE_MWS];	/* this handle's buffers, locked */
	/* the windows this handle translated: again is -EEXIST, as smartio_ntb */
	bool xlat_held[FAKE_PORTS][FAKE_MWS];
	pthread_mutex_t mu;
	pthread_t thr;
	bool thr_running;
	_Atomic bool stop;
	int efd[FAKE_BITS];
	uint32_t seen[FAKE_BITS];
};

static struct fake *fk(struct ntbdev *d)
{
	return d->priv;
}

static int port_of(struct ntbdev *d, uint32_t pidx)
{
	return (int)pidx < d->port ? (int)pidx : (int)pidx + 1;
}

static int pidx_at(int owner, int port)
{
	return port < owner ? port : port - 1;
}

static bool port_up(struct fake_hw *hw, int port)
{
	pid_t pid = atomic_load(&hw->port[port].pid);

	return atomic_load(&hw->port[port].up) && (pid <= 0 || !kill(pid, 0) || errno == EPERM);
}

static bool up(struct ntbdev *d, int port)
{
	return port_up(fk(d)->hw, port) && port_up(fk(d)->hw, d->port);
}

static uint64_t bus_of(int port, uint32_t pidx, uint32_t widx)
{
	return ((uint64_t)(port + 1) << 50) | ((uint64_t)pidx << 44) | ((uint64_t)widx << 40);
}

static void buf_path(struct ntbdev *d, int port, uint32_t pidx, uint32_t widx, char *buf, size_t len)
{
	snprintf(buf, len, "%s/buf-%d-%u-%u", fk(d)->dir, port, pidx, widx);
}

/* The buffer (port, pidx, widx) at bus address @addr, and the offset in it. */
static bool decode(struct ntbdev *d, uint64_t addr, int *port, uint32_t *pidx, uint32_t *widx,
		   uint64_t *off)
{
	struct fake_hw *hw = fk(d)->hw;

	*port = (int)(addr >> 50) - 1;
	*pidx = (addr >> 44) & 0x3f;
	*widx = (addr >> 40) & 0xf;
	*off = addr & ((1ull << 40) - 1);
	return *port >= 0 && *port < (int)hw->ports && *pidx < hw->ports - 1 && *widx < hw->mws &&
	       *off < hw->win_size;
}

static int f_mw_alloc(struct ntbdev *d, struct sio_ntb_buf *b)
{
	struct fake *f = fk(d);
	char path[PATH_MAX + 32];
	uint64_t size = b->size ? (b->size + 4095) & ~4095ull : f->hw->win_size;
	int fd;

	if (b->pidx >= f->hw->ports - 1 || b->widx >= f->hw->mws || size > f->hw->win_size)
		return -EINVAL;
	if (f->buf_fd[b->pidx][b->widx] >= 0)
		return -EEXIST;
	buf_path(d, d->port, b->pidx, b->widx, path, sizeof(path));
	if ((fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0600)) < 0)
		return -errno;
	/* another live handle's buffer is busy; a dead one's is free again */
	if (flock(fd, LOCK_EX | LOCK_NB) || ftruncate(fd, 0) || ftruncate(fd, (off_t)size)) {
		close(fd);
		return -EBUSY;
	}
	f->buf_fd[b->pidx][b->widx] = fd;
	b->size = size;
	b->dma_addr = bus_of(d->port, b->pidx, b->widx);
	b->mmap_offset = SIO_NTB_MMAP_INBOUND(b->pidx, b->widx);
	atomic_store(&f->hw->port[d->port].xlat[b->pidx][b->widx].addr, b->dma_addr);
	atomic_store(&f->hw->port[d->port].xlat[b->pidx][b->widx].size, size);
	return 0;
}

static int f_mw_free(struct ntbdev *d, struct sio_ntb_buf *b)
{
	struct fake *f = fk(d);
	char path[PATH_MAX + 32];

	if (b->pidx >= f->hw->ports - 1 || b->widx >= f->hw->mws)
		return -EINVAL;
	if (f->buf_fd[b->pidx][b->widx] < 0)
		return -ENOENT;
	buf_path(d, d->port, b->pidx, b->widx, path, sizeof(path));
	unlink(path);
	close(f->buf_fd[b->pidx][b->widx]);
	f->buf_fd[b->pidx][b->widx] = -1;
	atomic_store(&f->hw->port[d->port].xlat[b->pidx][b->widx].size, 0);
	return 0;
}

static int f_mw_xlat(struct ntbdev *d, struct sio_ntb_xlat *x)
{
	struct fake_hw *hw = fk(d)->hw;
	uint64_t align = hw->page_xlat ? 4096 : hw->win_size, off;
	uint32_t pidx, widx;
	int port;

	if (x->pidx >= hw->ports - 1 || x->widx >= hw->mws)
		return -EINVAL;
	if (fk(d)->refuse_xlat && x->size)
		return -fk(d)->refuse_xlat;
	if (!x->size) {
		atomic_store(&hw->port[d->port].xlat[x->pidx][x->widx].size, 0);
		fk(d)->xlat_held[x->pidx][x->widx] = false;
		return 0;
	}
	if (fk(d)->xlat_held[x->pidx][x->widx] || fk(d)->buf_fd[x->pidx][x->widx] >= 0)
		return -EEXIST;	/* the caller's already: cleared first, or left */
	if ((x->addr & (align - 1)) || (x->size & 4095) || x->size > hw->win_size)
		return -EINVAL;
	if (!decode(d, x->addr, &port, &pidx, &widx, &off) || port != d->port ||
	    off + x->size > hw->win_size)
		return -EOPNOTSUPP;	/* not memory of this port: the fake cannot reach it */
	atomic_store(&hw->port[d->port].xlat[x->pidx][x->widx].size, 0);
	atomic_store(&hw->port[d->port].xlat[x->pidx][x->widx].addr, x->addr);
	atomic_store(&hw->port[d->port].xlat[x->pidx][x->widx].size, x->size);
	fk(d)->xlat_held[x->pidx][x->widx] = true;
	return 0;
}

/* Where outbound window @widx lands: the peer's port, and its translation for us. */
static int outbound(struct ntbdev *d, uint32_t widx, int *peer, uint64_t *addr, uint64_t *size)
{
	struct fake_hw *hw = fk(d)->hw;
	uint32_t pidx = widx / hw->mws, w = widx % hw->mws;

	if (widx >= (hw->ports - 1) * hw->mws)
		return -EINVAL;
	*peer = port_of(d, pidx);
	*size = atomic_load(&hw->port[*peer].xlat[pidx_at(*peer, d->port)][w].size);
	*addr = atomic_load(&hw->port[*peer].xlat[pidx_at(*peer, d->port)][w].addr);
	return 0;
}

static void f_info(struct ntbdev *d, struct sio_ntb_info *i)
{
	struct fake_hw *hw = fk(d)->hw;

	memset(i, 0, sizeof(*i));
	i->version = SIO_NTB_UAPI_VERSION;
	i->port = d->port;
	i->peers = hw->ports - 1;
	i->flags = SIO_NTB_F_INBOUND_XLAT;
	i->peer_mws = (hw->ports - 1) * hw->mws;
	i->mws_per_peer = hw->mws;
	i->spads = FAKE_SPADS;
	i->db_vectors = 1;
	i->db_valid = (1ull << FAKE_BITS) - 1;
	for (uint32_t p = 0; p < i->peers; p++)
		if (up(d, port_of(d, p)))
			i->link |= 1ull << p;
	i->link_gen = atomic_load(&hw->link_gen);
	snprintf(i->name, sizeof(i->name), "fake-%d", d->port);
	snprintf(i->driver, sizeof(i->driver), "smartio-fake");
}

static int f_spad(struct ntbdev *d, struct sio_ntb_spad *s, bool write)
{
	struct fake_hw *hw = fk(d)->hw;
	int port = s->pidx == SIO_NTB_LOCAL ? d->port : port_of(d, s->pidx);

	if (s->flags || s->sidx >= FAKE_SPADS || (s->pidx != SIO_NTB_LOCAL && s->pidx >= hw->ports - 1))
		return -EINVAL;
	if (port != d->port && !up(d, port))
		return -ENOTCONN;
	if (write)
		atomic_store(&hw->port[port].spad[s->sidx], s->value);
	else
		s->value = atomic_load(&hw->port[port].spad[s->sidx]);
	return 0;
}

static int f_ring(struct ntbdev *d, uint64_t bits)
{
	struct fake_hw *hw = fk(d)->hw;

	if (!bits || bits >> FAKE_BITS)
		return -EINVAL;
	for (int p = 0; p < (int)hw->ports; p++) {
		if (p == d->port || !up(d, p))
			continue;
		for (int b = 0; b < FAKE_BITS; b++)
			if (bits >> b & 1)
				atomic_fetch_add(&hw->port[p].db[b], 1);
		atomic_fetch_add(&hw->port[p].dbseq, 1);
		syscall(SYS_futex, &hw->port[p].dbseq, FUTEX_WAKE, INT_MAX, NULL, NULL, 0);
	}
	return 0;
}

/* Each ring of a bit with an eventfd, signalled: the doorbell interrupt. */
static void *db_thread(void *arg)
{
	struct ntbdev *d = arg;
	struct fake *f = fk(d);
	_Atomic uint32_t *seq = &f->hw->port[d->port].dbseq;

	while (!atomic_load(&f->stop)) {
		uint32_t s = atomic_load(seq);
		struct timespec ts = { 0, 100000000 };

		pthread_mutex_lock(&f->mu);
		for (int b = 0; b < FAKE_BITS; b++) {
			uint32_t v = atomic_load(&f->hw->port[d->port].db[b]), n = v - f->seen[b];
			uint64_t one = n;

			if (n && f->efd[b] >= 0 && write(f->efd[b], &one, sizeof(one)) < 0)
				one = 0;
			f->seen[b] = v;
		}
		pthread_mutex_unlock(&f->mu);
		syscall(SYS_futex, seq, FUTEX_WAIT, s, &ts, NULL, 0);
	}
	return NULL;
}

static int f_db_eventfd(struct ntbdev *d, struct sio_ntb_db_eventfd *e)
{
	struct fake *f = fk(d);
	int fd = -1;

	if (e->bit >= FAKE_BITS)
		return -EINVAL;
	if (e->fd != -1 && (fd = fcntl(e->fd, F_DUPFD_CLOEXEC, 0)) < 0)
		return -EBADF;
	pthread_mutex_lock(&f->mu);
	if (f->efd[e->bit] >= 0)
		close(f->efd[e->bit]);
	f->efd[e->bit] = fd;
	if (!f->thr_running) {
		for (int b = 0; b < FAKE_BITS; b++)
			f->seen[b] = atomic_load(&f->hw->port[d->port].db[b]);
		f->thr_running = !pthread_create(&f->thr, NULL, db_thread, d);
	}
	pthread_mutex_unlock(&f->mu);
	return 0;
}

static int f_mw(struct ntbdev *d, struct sio_ntb_mw *m)
{
	struct fake_hw *hw = fk(d)->hw;

	if (m->pidx >= hw->ports - 1 || m->widx >= hw->mws)
		return -EINVAL;
	m->addr_align = hw->page_xlat ? 4096 : hw->win_size;
	m->size_align = 4096;
	m->size_max = hw->win_size;
	m->size = fk(d)->buf_fd[m->pidx][m->widx] >= 0 ? hw->win_size : 0;
	m->mmap_offset = SIO_NTB_MMAP_INBOUND(m->pidx, m->widx);
	return 0;
}

static int f_peer(struct ntbdev *d, struct sio_ntb_peer *p)
{
	struct fake_hw *hw = fk(d)->hw;

	if (p->pidx >= hw->ports - 1)
		return -EINVAL;
	p->port = port_of(d, p->pidx);
	p->link_up = up(d, p->port);
	p->mws = hw->mws;
	p->link_gen = atomic_load(&hw->link_gen);
	return 0;
}

static int f_peer_mw(struct ntbdev *d, struct sio_ntb_peer_mw *m)
{
	uint64_t addr, size;
	int peer, ret = outbound(d, m->widx, &peer, &addr, &size);

	if (ret)
		return ret;
	m->pidx = m->widx / fk(d)->hw->mws;
	m->size = size ? size : fk(d)->hw->win_size;
	m->mmap_offset = SIO_NTB_MMAP_OUTBOUND(m->widx);
	m->bus_addr = 0;	/* no bus: the fake has no device to give it to */
	return 0;
}

static int fake_ioctl(struct ntbdev *d, unsigned long req, void *arg)
{
	switch (req) {
	case SIO_NTB_IOC_INFO:
		f_info(d, arg);
		return 0;
	case SIO_NTB_IOC_PEER:
		return f_peer(d, arg);
	case SIO_NTB_IOC_MW:
		return f_mw(d, arg);
	case SIO_NTB_IOC_MW_ALLOC:
		return f_mw_alloc(d, arg);
	case SIO_NTB_IOC_MW_FREE:
		return f_mw_free(d, arg);
	case SIO_NTB_IOC_MW_XLAT:
		return f_mw_xlat(d, arg);
	case SIO_NTB_IOC_PEER_MW:
		return f_peer_mw(d, arg);
	case SIO_NTB_IOC_DB_RING:
		return f_ring(d, *(uint64_t *)arg);
	case SIO_NTB_IOC_DB_EVENTFD:
		return f_db_eventfd(d, arg);
	case SIO_NTB_IOC_SPAD_READ:
		return f_spad(d, arg, false);
	case SIO_NTB_IOC_SPAD_WRITE:
		return f_spad(d, arg, true);
	}
	return -ENOTTY;
}

/* mmap() the file of buffer (port, pidx, widx) from @off. */
static int map_buf(struct ntbdev *d, void *addr, int port, uint32_t pidx, uint32_t widx,
		   uint64_t off, uint64_t len, void **va)
{
	char path[PATH_MAX + 32];
	int fd;
	void *p;

	buf_path(d, port, pidx, widx, path, sizeof(path));
	if ((fd = open(path, O_RDWR | O_CLOEXEC)) < 0)
		return errno == ENOENT ? -ENXIO : -errno;
	p = mmap(addr, len, PROT_READ | PROT_WRITE, MAP_SHARED | (addr ? MAP_FIXED : 0), fd, (off_t)off);
	close(fd);
	if (p == MAP_FAILED)
		return -errno;
	*va = p;
	return 0;
}

/* A map through a window that a test has refused (sio_test_ntb_fake_refuse_maps()). */
static bool refused(struct fake_hw *hw, int port)
{
	_Atomic uint32_t *n = &hw->port[port].refuse_maps;
	uint32_t v = atomic_load(n);

	while (v && !atomic_compare_exchange_weak(n, &v, v - 1))
		;
	return v != 0;
}

/* A link that a test has cut at this map (sio_test_ntb_fake_cut_at_map()). */
static void cut_after(struct fake_hw *hw, int port)
{
	int32_t v = atomic_exchange(&hw->port[port].cut_at_map, 0);

	if (v > 0 && v <= (int32_t)hw->ports) {
		atomic_store(&hw->port[v - 1].up, 0);
		atomic_fetch_add(&hw->link_gen, 1);
	}
}

static int fake_mmap(struct ntbdev *d, void *addr, uint64_t off, uint64_t len, void **va)
{
	struct fake_hw *hw = fk(d)->hw;
	uint64_t within = off & (SIO_NTB_MMAP_SPAN - 1), xaddr, xsize, boff;
	uint32_t pidx, widx;
	int peer, ret;

	if (off >> 43)
		return -EINVAL;	/* SIO_NTB_MMAP_*: below 2^43 */
	if (!(off >> 42)) {
		pidx = (off >> 36) & 0x3f;
		widx = (off >> 32) & 0xf;
		if (pidx >= hw->ports - 1 || widx >= hw->mws || within + len > hw->win_size)
			return -EINVAL;
		return map_buf(d, addr, d->port, pidx, widx, within, len, va);
	}
	if ((ret = outbound(d, (off >> 32) & 0x3ff, &peer, &xaddr, &xsize)))
		return ret;
	if (!up(d, peer) || refused(fk(d)->hw, d->port))
		return -ENOTCONN;
	if (!xsize || within + len > xsize || !decode(d, xaddr, &peer, &pidx, &widx, &boff))
		return -EINVAL;	/* no translation there: nothing to reach */
	ret = map_buf(d, addr, peer, pidx, widx, boff + within, len, va);
	if (!ret)
		cut_after(fk(d)->hw, d->port);
	return ret;
}

static void fake_close(struct ntbdev *d)
{
	struct fake *f = fk(d);

	if (f->thr_running) {
		atomic_store(&f->stop, true);
		pthread_join(f->thr, NULL);
	}
	for (int b = 0; b < FAKE_BITS; b++)
		if (f->efd[b] >= 0)
			close(f->efd[b]);
	for (uint32_t i = 0; i < FAKE_PORTS; i++)
		for (uint32_t w = 0; w < FAKE_MWS; w++)
			if (f->buf_fd[i][w] >= 0) {
				struct sio_ntb_buf b = { .pidx = i, .widx = w };
				f_mw_free(d, &b);
			}
	if (f->owner) {
		atomic_store(&f->hw->port[d->port].up, 0);
		atomic_fetch_add(&f->hw->link_gen, 1);
	}
	munmap(f->hw, sizeof(*f->hw));
	free(f);
}

static const struct ntbdev_ops fake_ops = {
	.ioctl = fake_ioctl,
	.mmap = fake_mmap,
	.close = fake_close,
};

static uint64_t env_u64(const char *name, uint64_t min, uint64_t max, uint64_t def)
{
	const char *e = getenv(name);
	uint64_t v;

	return e && *e && !sio_parse_u64(e, min, max, &v) ? v : def;
}

/* Map DIR/hw, laying it out first where it is new. */
static int hw_map(int dirfd, const char *dir, struct fake_hw **out)
{
	int fd = openat(dirfd, "hw", O_RDWR | O_CREAT | O_CLOEXEC, 0600);
	struct fake_hw *hw;

	if (fd < 0 || flock(fd, LOCK_EX) || ftruncate(fd, sizeof(*hw)) < 0) {
		int e = errno;
		if (fd >= 0)
			close(fd);
		return sio__err(e, "ntb: the fake NTB in %s: %s", dir, strerror(e));
	}
	hw = mmap(NULL, sizeof(*hw), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (hw != MAP_FAILED && atomic_load(&hw->magic) != FAKE_MAGIC) {
		hw->ports = (uint32_t)env_u64("SMARTIO_NTB_FAKE_PORTS", 2, FAKE_PORTS, 4);
		hw->mws = (uint32_t)env_u64("SMARTIO_NTB_FAKE_MWS", 1, FAKE_MWS, 3);
		hw->win_size = env_u64("SMARTIO_NTB_FAKE_WINDOW_MB", 1, 1024, 8) << 20;
		hw->page_xlat = (uint32_t)env_u64("SMARTIO_NTB_FAKE_PAGE_XLAT", 0, 1, 0);
		atomic_store(&hw->magic, FAKE_MAGIC);
	}
	flock(fd, LOCK_UN);
	close(fd);
	if (hw == MAP_FAILED)
		return sio__err(errno, "ntb: the fake NTB in %s: %s", dir, strerror(errno));
	*out = hw;
	return 0;
}

int sio_test_ntb_fake_open(const char *dir, int dirfd, int port, struct ntbdev *d);
const char *sio_test_ntb_fake_errmsg(void);
int sio_test_ntb_fake_link(const char *dir, int port, int on);

/* The hardware of the fake NTB in @dir, mapped, for a test's hook on port
 * @port; unmap it with munmap(). */
static int hook_hw(const char *dir, int port, struct fake_hw **out)
{
	struct fake_hw *hw;
	int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC), ret;

	if (fd < 0)
		return -errno;
	ret = hw_map(fd, dir, &hw);
	close(fd);
	if (ret)
		return ret;
	if (port < 0 || port >= (int)hw->ports) {
		munmap(hw, sizeof(*hw));
		return -EINVAL;
	}
	*out = hw;
	return 0;
}

/* Port @port's link, down (@on 0: cut from every peer, its holder alive) or up again. */
int sio_test_ntb_fake_link(const char *dir, int port, int on)
{
	struct fake_hw *hw;
	int ret = hook_hw(dir, port, &hw);

	if (ret)
		return ret;
	atomic_store(&hw->port[port].up, on ? 1 : 0);
	atomic_fetch_add(&hw->link_gen, 1);
	munmap(hw, sizeof(*hw));
	return 0;
}

int sio_test_ntb_fake_refuse_maps(const char *dir, int port, unsigned int n);

/* The next @n maps through an outbound window by handles of port @port
 * refused with -ENOTCONN, as across a link that went down and came back
 * between a process's look at it and its map. */
int sio_test_ntb_fake_refuse_maps(const char *dir, int port, unsigned int n)
{
	struct fake_hw *hw;
	int ret = hook_hw(dir, port, &hw);

	if (ret)
		return ret;
	atomic_store(&hw->port[port].refuse_maps, n);
	munmap(hw, sizeof(*hw));
	return 0;
}

int sio_test_ntb_fake_cut_at_map(const char *dir, int port, int victim);

/* Port @victim's link cut right after the next map through an outbound
 * window by a handle of port @port succeeds: a link lost in the middle
 * of what that handle's process does, at a place a test can name. */
int sio_test_ntb_fake_cut_at_map(const char *dir, int port, int victim)
{
	struct fake_hw *hw;
	int ret = hook_hw(dir, port, &hw);

	if (ret)
		return ret;
	if (victim < 0 || victim >= (int)hw->ports)
		ret = -EINVAL;
	else
		atomic_store(&hw->port[port].cut_at_map, victim + 1);
	munmap(hw, sizeof(*hw));
	return ret;
}

/* The why of the last failure of this thread (this module's own error state). */
const char *sio_test_ntb_fake_errmsg(void)
{
	return sio_errmsg();
}

int sio_test_ntb_fake_open(const char *dir, int dirfd, int port, struct ntbdev *d)
{
	struct fake *f = calloc(1, sizeof(*f));
	int ret;

	if (!f)
		return sio__err(ENOMEM, "out of memory");
	f->owner = dirfd < 0;
	f->refuse_xlat = (int)env_u64("SMARTIO_NTB_FAKE_REFUSE_XLAT", 1, 4095, 0);
	if (dirfd < 0 && (dirfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC)) < 0) {
		ret = sio__err(errno, "ntb: the fake NTB's directory %s: %s", dir, strerror(errno));
		free(f);
		return ret;
	}
	if ((ret = hw_map(dirfd, dir, &f->hw))) {
		close(dirfd);
		free(f);
		return ret;
	}
	if (port < 0 || port >= (int)f->hw->ports) {
		ret = sio__err(EINVAL, "ntb: the fake NTB in %s has ports 0..%u, not %d", dir,
			       f->hw->ports - 1, port);
		munmap(f->hw, sizeof(*f->hw));
		close(dirfd);
		free(f);
		return ret;
	}
	snprintf(f->dir, sizeof(f->dir), "%s", dir);
	pthread_mutex_init(&f->mu, NULL);
	memset(f->buf_fd, -1, sizeof(f->buf_fd));
	memset(f->efd, -1, sizeof(f->efd));
	d->priv = f;
	d->fd = dirfd;
	d->port = port;
	d->fake = true;
	d->ops = &fake_ops;
	snprintf(d->what, sizeof(d->what), "fake NTB %.60s, port %d", dir, port);
	snprintf(d->spec, sizeof(d->spec), "fake:%.80s", dir);
	if (f->owner) {
		pid_t old = atomic_exchange(&f->hw->port[port].pid, getpid());
		bool was_up = atomic_exchange(&f->hw->port[port].up, 1);

		/* up again, or taken by a new process after its holder died: the link moves */
		if (!was_up || (old > 0 && old != getpid() && kill(old, 0) && errno == ESRCH))
			atomic_fetch_add(&f->hw->link_gen, 1);
	}
	return 0;
}
