/* SPDX-License-Identifier: MIT */
/*
 * The NTB device of the ntb backend (ntbdev.h): /dev/smartio-ntbN through
 * ioctl() and mmap(), or the tests' fake (tests/ntb/fake.c), which is not
 * part of the library: fake:DIR loads it from $SMARTIO_NTB_FAKE_LIB.
 */
#include <dlfcn.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/stat.h>

#include "internal.h"
#include "ntbdev.h"

/*
 * The fake NTB of the tests, loaded on demand: a test aid (one host plays
 * every port), never a path an installed program takes by itself.
 */
static int fake_open(const char *dir, int dirfd, int port, struct ntbdev *d)
{
	static int (*open_fn)(const char *, int, int, struct ntbdev *);
	static const char *(*msg_fn)(void);
	const char *lib = secure_getenv("SMARTIO_NTB_FAKE_LIB");
	void *h;
	int ret;

	if (!open_fn) {
		if (!lib || !*lib)
			return sio__err(ENODEV, "ntb: SMARTIO_NTB_DEV=fake:%s names the tests' fake NTB, which is not part of libsmartio: set SMARTIO_NTB_FAKE_LIB to the build's tests/ntb/libsio-ntb-fake.so (tests/ntb/with-ntb.sh does), or name a real device",
					dir);
		if (!(h = dlopen(lib, RTLD_NOW | RTLD_LOCAL)))
			return sio__err(ENODEV, "ntb: the fake NTB: %s", dlerror());
		msg_fn = (const char *(*)(void))dlsym(h, "sio_test_ntb_fake_errmsg");
		open_fn = (int (*)(const char *, int, int, struct ntbdev *))dlsym(h, "sio_test_ntb_fake_open");
		if (!open_fn || !msg_fn)
			return sio__err(ENODEV, "ntb: %s is not the fake NTB", lib);
	}
	if ((ret = open_fn(dir, dirfd, port, d)))
		return sio__err(-ret, "%s", msg_fn());
	return 0;
}

static int real_ioctl(struct ntbdev *d, unsigned long req, void *arg)
{
	return ioctl(d->fd, req, arg) ? -errno : 0;
}

static int real_mmap(struct ntbdev *d, void *addr, uint64_t off, uint64_t len, void **va)
{
	void *p = mmap(addr, len, PROT_READ | PROT_WRITE, MAP_SHARED | (addr ? MAP_FIXED : 0),
		       d->fd, (off_t)off);

	if (p == MAP_FAILED)
		return -errno;
	*va = p;
	return 0;
}

static void real_close(struct ntbdev *d)
{
	(void)d;
}

static const struct ntbdev_ops real_ops = {
	.ioctl = real_ioctl,
	.mmap = real_mmap,
	.close = real_close,
};

/* "N", "/dev/smartio-ntbN" or another path; the default /dev/smartio-ntb0. */
static void dev_path(const char *spec, char *buf, size_t len)
{
	char *end;
	long n;

	if (!spec || !*spec)
		spec = "0";
	n = strtol(spec, &end, 10);
	if (!*end && n >= 0 && n < 64)
		snprintf(buf, len, SIO_NTB_DEV_FMT, (int)n);
	else
		snprintf(buf, len, "%s", spec);
}

static const char *spec_of(const char *spec)
{
	return spec ? spec : getenv("SMARTIO_NTB_DEV");
}

int sio__ntbdev_open(const char *spec, int port, struct ntbdev **out)
{
	struct ntbdev *d = calloc(1, sizeof(*d));
	char path[PATH_MAX];
	int ret;

	if (!d)
		return sio__err(ENOMEM, "out of memory");
	d->fd = -1;
	spec = spec_of(spec);
	if (spec && !strncmp(spec, "fake:", 5)) {
		if ((ret = fake_open(spec + 5, -1, port, d))) {
			free(d);
			return ret;
		}
		*out = d;
		return 0;
	}
	dev_path(spec, path, sizeof(path));
	d->fd = open(path, O_RDWR | O_CLOEXEC);
	if (d->fd < 0) {
		ret = sio__err(errno, "ntb: %s: %s%s", path, strerror(errno),
			       errno == ENOENT ? " (is smartio_ntb loaded, and bound to an NTB device? docs/ntb.md)" :
			       errno == EACCES ? " (its mode lets root, or its group, in)" : "");
		free(d);
		return ret;
	}
	d->ops = &real_ops;
	d->port = -1;
	snprintf(d->what, sizeof(d->what), "%.95s", path);
	snprintf(d->spec, sizeof(d->spec), "%.95s", path);
	*out = d;
	return 0;
}

int sio__ntbdev_adopt(int fd, int fake_port, const char *what, struct ntbdev **out)
{
	struct ntbdev *d = calloc(1, sizeof(*d));
	int ret;

	if (!d)
		return sio__err(ENOMEM, "out of memory");
	if (fake_port >= 0) {
		if (strncmp(what, "fake:", 5))
			ret = sio__err(EPROTO, "ntb: a fake NTB's file came without its directory");
		else
			ret = fake_open(what + 5, fd, fake_port, d);
		if (ret) {
			free(d);
			return ret;
		}
	} else {
		d->fd = fd;
		d->ops = &real_ops;
		d->port = -1;
		snprintf(d->what, sizeof(d->what), "%s", what);
		snprintf(d->spec, sizeof(d->spec), "%s", what);
	}
	*out = d;
	return 0;
}

void sio__ntbdev_close(struct ntbdev *d)
{
	if (!d)
		return;
	d->ops->close(d);
	if (d->fd >= 0)
		close(d->fd);
	free(d);
}

int sio__ntbdev_service_path(const char *spec, int port, char *buf, size_t len)
{
	const char *b = getenv("SMARTIO_RUNDIR");
	char path[PATH_MAX], dir[PATH_MAX];
	const char *base;
	int n;

	spec = spec_of(spec);
	if (spec && !strncmp(spec, "fake:", 5))
		n = snprintf(buf, len, "%s/port%d.sock", spec + 5, port);
	else {
		dev_path(spec, path, sizeof(path));
		base = strrchr(path, '/') ? strrchr(path, '/') + 1 : path;
		snprintf(dir, sizeof(dir), "%s/smartio-ntb", b && *b ? b : "/dev/shm");
		if (mkdir(dir, 0700) && errno != EEXIST)
			return sio__err(errno, "ntb: cannot create %s: %s", dir, strerror(errno));
		n = snprintf(buf, len, "%s/%s.sock", dir, base);
	}
	if (n < 0 || (size_t)n >= len)
		return sio__err(ENAMETOOLONG, "ntb: the node service's socket path is too long");
	return 0;
}

int sio__ntbdev_info(struct ntbdev *d, struct sio_ntb_info *i)
{
	int ret = ntbdev_ioctl(d, SIO_NTB_IOC_INFO, i);

	/* a smartio_ntb of uapi 2 or older knows no request of this magic */
	if (ret == -ENOTTY)
		return sio__err(EPROTO, "ntb: %s does not speak uapi version %d: its smartio_ntb is older than this smartio (rmmod smartio_ntb, then load the smartio_ntb of this build: docs/ntb.md)",
				d->what, SIO_NTB_UAPI_VERSION);
	if (ret)
		return sio__err(-ret, "ntb: %s: SIO_NTB_IOC_INFO: %s", d->what, strerror(-ret));
	if (i->version < SIO_NTB_UAPI_VERSION)
		return sio__err(EPROTO, "ntb: %s speaks uapi version %u; this smartio needs %d (load the smartio_ntb of this build)",
				d->what, i->version, SIO_NTB_UAPI_VERSION);
	return 0;
}

int sio__ntbdev_remap(struct ntbdev *d, void *at, uint64_t off, uint64_t len)
{
	void *va;
	int ret = ntbdev_mmap(d, NULL, off, len, &va);

	if (ret)
		return ret;
	munmap(va, len);
	ret = ntbdev_mmap(d, at, off, len, &va);
	if (ret) {
		va = mmap(at, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED,
			  -1, 0);
		if (va != MAP_FAILED)
			memset(va, 0xff, len);
	}
	return ret;
}

int sio__ntbdev_pidx(struct ntbdev *d, int port)
{
	struct sio_ntb_info i;

	if (ntbdev_ioctl(d, SIO_NTB_IOC_INFO, &i))
		return -ENOENT;
	for (uint32_t p = 0; p < i.peers; p++) {
		struct sio_ntb_peer pr = { .pidx = p };

		if (!ntbdev_ioctl(d, SIO_NTB_IOC_PEER, &pr) && pr.port == port)
			return (int)p;
	}
	return -ENOENT;
}

void sio__ntbdev_side_apply(struct ntbdev *d, unsigned long req, void *arg)
{
	if (req == SIO_NTB_IOC_INFO)
		((struct sio_ntb_info *)arg)->port = (int)d->sided - 1;
	else if (req == SIO_NTB_IOC_PEER)
		((struct sio_ntb_peer *)arg)->port = 2 - (int)d->sided;
}

bool sio__ntbdev_sideless(struct ntbdev *d, const struct sio_ntb_info *i)
{
	struct sio_ntb_peer pr = { .pidx = 0 };

	return !d->sided && !(i->flags & SIO_NTB_F_PORTS) && i->peers == 1 &&
	       !ntbdev_ioctl(d, SIO_NTB_IOC_PEER, &pr) && pr.port == i->port;
}
