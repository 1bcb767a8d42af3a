/* SPDX-License-Identifier: MIT */
#ifndef SIO_NTBDEV_H
#define SIO_NTBDEV_H

/*
 * The NTB device as the ntb fabric backend reaches it: smartio_ntb's uapi
 * (<smartio/ntb.h>), its requests and mmap() offsets, and nothing else. Two
 * implementations answer it:
 *
 *   /dev/smartio-ntbN   the kernel module, through ioctl() and mmap()
 *   fake:DIR            the tests' stand-in of files in DIR, on one host
 *                       (tests/ntb/fake.c, loaded from $SMARTIO_NTB_FAKE_LIB;
 *                       not part of the library): each process plays the
 *                       port of the node it joins as; buffers are files,
 *                       translations a table, doorbells counters with a
 *                       thread per eventfd. It translates windows into its
 *                       own buffers only (as ntb_hw_ivshmem does) and cannot
 *                       reach a device's BAR: -EOPNOTSUPP.
 *
 * $SMARTIO_NTB_DEV names the device (a path, N for /dev/smartio-ntbN, or
 * fake:DIR); the default is /dev/smartio-ntb0.
 */

#include <stdbool.h>
#include <stdint.h>
#include <smartio/ntb.h>

struct ntbdev;

struct ntbdev_ops {
	/* a request of <smartio/ntb.h>: 0, or -errno */
	int (*ioctl)(struct ntbdev *d, unsigned long req, void *arg);
	/* mmap() at @off (SIO_NTB_MMAP_*), at @addr with MAP_FIXED where not NULL */
	int (*mmap)(struct ntbdev *d, void *addr, uint64_t off, uint64_t len, void **va);
	void (*close)(struct ntbdev *d);
};

struct ntbdev {
	const struct ntbdev_ops *ops;
	int fd;				/* the device's, or the fake's directory */
	int port;			/* the fake's port (the real one says it) */
	bool fake;
	char what[96];			/* "/dev/smartio-ntb0", "fake NTB DIR, port 2" */
	char spec[96];			/* the path, or the fake's directory: for sio__ntbdev_adopt() */
	void *priv;			/* the fake's */
	/*
	 * 0, or a two-port NTB whose driver gives no port numbers (both sides
	 * say 0): this side's id + 1, as the node services agreed; the
	 * requests then say it for this port, the other for the peer.
	 */
	uint32_t sided;
};

/* Open the device $SMARTIO_NTB_DEV names (@spec when not NULL); @port: the fake's port. */
int sio__ntbdev_open(const char *spec, int port, struct ntbdev **out);
/* The device behind an fd another process passed (the node service's), @fake_port >= 0 for a fake's. */
int sio__ntbdev_adopt(int fd, int fake_port, const char *what, struct ntbdev **out);
void sio__ntbdev_close(struct ntbdev *d);
/* Where the node service of @spec's device for port @port listens ($SMARTIO_RUNDIR). */
int sio__ntbdev_service_path(const char *spec, int port, char *buf, size_t len);

void sio__ntbdev_side_apply(struct ntbdev *d, unsigned long req, void *arg);

static inline int ntbdev_ioctl(struct ntbdev *d, unsigned long req, void *arg)
{
	int ret = d->ops->ioctl(d, req, arg);

	if (!ret && d->sided)
		sio__ntbdev_side_apply(d, req, arg);
	return ret;
}

static inline int ntbdev_mmap(struct ntbdev *d, void *addr, uint64_t off, uint64_t len, void **va)
{
	return d->ops->mmap(d, addr, off, len, va);
}

/*
 * Map @len bytes at @off of @d again at @at, where a mapping of them is
 * (a link came back, or the state moves to another port's memory). Tried
 * elsewhere first: a map refused in place has taken the old one with it
 * (mmap(MAP_FIXED) on Linux 6.1), and a thread reading through it
 * meanwhile (the state's header) faulted; refused there, the old mapping
 * stays as it is (revoked, it reads all ones). Refused in place all the
 * same (the link went in between), the range is filled with private
 * memory of ones, never left a hole. Return: 0, or the refusal's -errno.
 */
int sio__ntbdev_remap(struct ntbdev *d, void *at, uint64_t off, uint64_t len);

/* dev.c helpers over the requests */
int sio__ntbdev_info(struct ntbdev *d, struct sio_ntb_info *i);
/* The peer index of port @port, or -ENOENT. */
int sio__ntbdev_pidx(struct ntbdev *d, int port);
/* Two ports, no port numbers of the driver's own, both sides the same: the sides need telling apart. */
bool sio__ntbdev_sideless(struct ntbdev *d, const struct sio_ntb_info *i);

#endif
