/* SPDX-License-Identifier: MIT */
/*
 * smartio_ntb's user interface under bad input and faults, in a guest of the
 * NTB vm suite (ntb-suite.sh), on <smartio/ntb.h> alone (ntb_hw_ivshmem's
 * refusals where a driver decides: a translation elsewhere is -EOPNOTSUPP):
 *
 *   ntb-uapi bad PORT       every refusal the uapi promises, each its errno,
 *                           with PORT's link up (a peer, to reach windows)
 *   ntb-uapi hold PORT [dev]  map PORT's outbound window and an inbound
 *                           buffer for it, then wait until PORT's link goes
 *                           down or the NTB device goes (with dev: the device
 *                           only, while a child maps and unmaps the buffer
 *                           over and over): every page is touched before;
 *                           after, the outbound pages (both, when the device
 *                           went) read all ones, calls say -ENODEV (the
 *                           device gone), and the child saw no fault
 *   ntb-uapi bounce PORT    map PORT's outbound window, then, from a
 *                           SIGUSR1 on, wait until PORT's link generation
 *                           moves (it goes down and comes back while the
 *                           link work is held back): the mapping must be
 *                           revoked (reads all ones)
 *   ntb-uapi take PORT      allocate every inbound window for PORT and
 *                           register an eventfd, then die by SIGKILL
 *   ntb-uapi eventfd BIT N  wait for N rings of doorbell BIT on an eventfd
 *   ntb-uapi outbound PORT  over hardware that translates outbound and has
 *                           message registers (ntb_hw_ivshmem profile=idt),
 *                           with PORT doing the same at once: the features
 *                           said, what it lacks refused; a buffer for PORT
 *                           whose bus address goes to PORT in two messages
 *                           (received on an eventfd); PORT's address taken
 *                           the same way, an outbound window translated
 *                           there, written, and a message says done; then
 *                           the buffer holds what PORT wrote
 *   ntb-uapi fwd-lend PORT BDF  translate PORT's last inbound window onto
 *                           BAR0 of BDF (QEMU's edu; ntb_hw_ivshmem bar_fwd=1
 *                           emulates it): at a SIGUSR1, PORT's store is in
 *                           edu's register 0x04; at a second (BDF removed,
 *                           PORT stored again), the stores were dropped
 *   ntb-uapi fwd-store PORT [VALUE]  store into PORT's window for us
 *   ntb-uapi shared PORT DEV0 DEV1  two NTBs over one region (ntb_hw_ivshmem
 *                           shared=2), PORT's link up on both, no other
 *                           buffer for PORT: a buffer of DEV0 exported
 *                           through DEV1's window 0; DEV1's buffers for
 *                           PORT's other windows leave its bytes alone, and
 *                           the two allocators are one (DEV0 gets no region
 *                           more); freed on DEV0, its region stays DEV1's
 *                           window's (no allocation gets it) until that
 *                           window lets go
 *
 * Prints a line per check ("ok NAME", "FAIL NAME: ..."); exits 1 when one
 * failed, 2 on bad usage.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/eventfd.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <linux/capability.h>

#include <smartio/ntb.h>

static int fails;

/* check NAME: the call returned @ret with @err; it should have failed with @want (0: succeeded). */
static void check(const char *name, int ret, int err, int want)
{
	if ((want && ret == -1 && err == want) || (!want && ret != -1)) {
		printf("ok %s\n", name);
		return;
	}
	printf("FAIL %s: %s, want %s\n", name, ret == -1 ? strerror(err) : "success",
	       want ? strerror(want) : "success");
	fails++;
}

#define EXPECT(name, call, want) do { int r_ = (call); check(name, r_, errno, want); } while (0)

static int dev_open(struct sio_ntb_info *info)
{
	int fd = open("/dev/smartio-ntb0", O_RDWR);

	if (fd < 0 || ioctl(fd, SIO_NTB_IOC_INFO, info)) {
		printf("FAIL open: /dev/smartio-ntb0: %s\n", strerror(errno));
		exit(1);
	}
	return fd;
}

static int pidx_of(int fd, const struct sio_ntb_info *info, int port)
{
	for (unsigned int i = 0; i < info->peers; i++) {
		struct sio_ntb_peer p = { .pidx = i };

		if (!ioctl(fd, SIO_NTB_IOC_PEER, &p) && p.port == port)
			return (int)i;
	}
	printf("FAIL peer: no peer is port %d\n", port);
	exit(1);
}

/* Bad requests and arguments: each refused with its errno, nothing else. */
static void bad_args(int fd, const struct sio_ntb_info *info, int pidx)
{
	struct sio_ntb_peer peer = { .pidx = info->peers };
	struct sio_ntb_mw mw = { .pidx = info->peers };
	struct sio_ntb_spad sp = { .pidx = SIO_NTB_LOCAL, .sidx = info->spads };
	struct sio_ntb_db_eventfd ef = { .bit = 64, .fd = -1 };
	struct sio_ntb_peer_mw pmw = { .widx = info->peer_mws };
	uint64_t bits = ~info->db_valid;

	EXPECT("unknown-ioctl", ioctl(fd, _IO(SIO_NTB_IOC_MAGIC, 0x7f)), ENOTTY);
	EXPECT("foreign-ioctl", ioctl(fd, _IOR('T', 1, int), &bits), ENOTTY);
	EXPECT("peer-out-of-range", ioctl(fd, SIO_NTB_IOC_PEER, &peer), EINVAL);
	EXPECT("mw-peer-out-of-range", ioctl(fd, SIO_NTB_IOC_MW, &mw), EINVAL);
	mw = (struct sio_ntb_mw){ .pidx = pidx, .widx = 1000 };
	EXPECT("mw-window-out-of-range", ioctl(fd, SIO_NTB_IOC_MW, &mw), EINVAL);
	EXPECT("peer-mw-out-of-range", ioctl(fd, SIO_NTB_IOC_PEER_MW, &pmw), EINVAL);
	EXPECT("spad-out-of-range", ioctl(fd, SIO_NTB_IOC_SPAD_READ, &sp), EINVAL);
	sp = (struct sio_ntb_spad){ .pidx = info->peers + 5, .sidx = 0 };
	EXPECT("spad-peer-out-of-range", ioctl(fd, SIO_NTB_IOC_SPAD_WRITE, &sp), EINVAL);
	sp = (struct sio_ntb_spad){ .pidx = SIO_NTB_LOCAL, .sidx = 0, .flags = 1 };
	EXPECT("spad-flags-set", ioctl(fd, SIO_NTB_IOC_SPAD_READ, &sp), EINVAL);
	EXPECT("spad-write-flags-set", ioctl(fd, SIO_NTB_IOC_SPAD_WRITE, &sp), EINVAL);
	if (bits)
		EXPECT("doorbell-bit-out-of-range", ioctl(fd, SIO_NTB_IOC_DB_RING, &bits), EINVAL);
	bits = 0;
	EXPECT("doorbell-no-bit", ioctl(fd, SIO_NTB_IOC_DB_RING, &bits), EINVAL);
	EXPECT("eventfd-bit-out-of-range", ioctl(fd, SIO_NTB_IOC_DB_EVENTFD, &ef), EINVAL);
	ef = (struct sio_ntb_db_eventfd){ .bit = 0, .fd = 999 };
	EXPECT("eventfd-bad-fd", ioctl(fd, SIO_NTB_IOC_DB_EVENTFD, &ef), EBADF);
	ef.fd = fd;	/* a file, not an eventfd */
	EXPECT("eventfd-not-an-eventfd", ioctl(fd, SIO_NTB_IOC_DB_EVENTFD, &ef), EINVAL);
	EXPECT("ioctl-bad-pointer", ioctl(fd, SIO_NTB_IOC_INFO, (void *)8), EFAULT);
	/* a flag this version does not define (1 is SIO_NTB_EVENTFD_MSG) */
	ef = (struct sio_ntb_db_eventfd){ .bit = 0, .fd = -1, .flags = 2 };
	EXPECT("eventfd-flags-set", ioctl(fd, SIO_NTB_IOC_DB_EVENTFD, &ef), EINVAL);
	struct sio_ntb_buf b = { .pidx = pidx, .widx = 0, .flags = 1 };
	struct sio_ntb_xlat x = { .pidx = pidx, .widx = 0, .size = 4096, .flags = 1 };

	/* SIO_NTB_BUF_PEER_XLAT: only where no inbound translation exists */
	EXPECT("mw-alloc-flags-set", ioctl(fd, SIO_NTB_IOC_MW_ALLOC, &b), EINVAL);
	b.flags = 2;
	EXPECT("mw-alloc-unknown-flag", ioctl(fd, SIO_NTB_IOC_MW_ALLOC, &b), EINVAL);
	EXPECT("mw-xlat-flags-set", ioctl(fd, SIO_NTB_IOC_MW_XLAT, &x), EINVAL);
	/* uapi 2's magic (0xb5, rpmsg's range) is no request of this version */
	/* a newer program's larger struct: its extra bytes 0, or E2BIG */
	struct { struct sio_ntb_info i; uint64_t more[2]; } big = { .more = { 7, 7 } };

	EXPECT("uapi-v2-magic", ioctl(fd, _IOR(0xb5, 0x00, struct sio_ntb_info), &big.i), ENOTTY);
	struct { struct sio_ntb_peer p; uint64_t more; } bigp = { .p = { .pidx = 0 }, .more = 1 };

	EXPECT("larger-struct-out", ioctl(fd, _IOR(SIO_NTB_IOC_MAGIC, 0x00, big), &big), 0);
	check("larger-struct-out-cleared", big.i.version == SIO_NTB_UAPI_VERSION && !big.more[0] &&
	      !big.more[1] ? 0 : -1, EIO, 0);
	EXPECT("larger-struct-in-not-0", ioctl(fd, _IOWR(SIO_NTB_IOC_MAGIC, 0x01, bigp), &bigp), E2BIG);
	bigp.more = 0;
	EXPECT("larger-struct-in-0", ioctl(fd, _IOWR(SIO_NTB_IOC_MAGIC, 0x01, bigp), &bigp), 0);
}

/*
 * What inbound hardware with scratchpads (ntb_hw_ivshmem's own profile)
 * lacks: outbound translation and message registers, refused as such.
 */
static void inbound_only(int fd, const struct sio_ntb_info *info, int pidx)
{
	struct sio_ntb_peer_xlat px = { .pidx = pidx, .widx = 0, .addr = 0x100000, .size = 4096 };
	struct sio_ntb_msg m = { .pidx = pidx };
	struct sio_ntb_db_eventfd ef = { .fd = eventfd(0, 0), .flags = SIO_NTB_EVENTFD_MSG };

	check("features-inbound", (info->flags & SIO_NTB_F_INBOUND_XLAT) &&
	      !(info->flags & SIO_NTB_F_OUTBOUND_XLAT) && (info->flags & SIO_NTB_F_SPADS) &&
	      !(info->flags & SIO_NTB_F_MSGS) && !info->msgs ? 0 : -1, EPROTO, 0);
	EXPECT("peer-mw-xlat-inbound-hw", ioctl(fd, SIO_NTB_IOC_PEER_MW_XLAT, &px), EOPNOTSUPP);
	EXPECT("msg-send-no-registers", ioctl(fd, SIO_NTB_IOC_MSG_SEND, &m), EOPNOTSUPP);
	EXPECT("msg-recv-no-registers", ioctl(fd, SIO_NTB_IOC_MSG_RECV, &m), EOPNOTSUPP);
	EXPECT("msg-eventfd-no-registers", ioctl(fd, SIO_NTB_IOC_DB_EVENTFD, &ef), EOPNOTSUPP);
	close(ef.fd);
}

/* Drop (or take back) CAP_SYS_RAWIO from this process's effective set. */
static void rawio(int on)
{
	struct __user_cap_header_struct h = { .version = _LINUX_CAPABILITY_VERSION_3 };
	struct __user_cap_data_struct d[2];

	if (syscall(SYS_capget, &h, d))
		return;
	if (on)
		d[CAP_SYS_RAWIO / 32].effective |= 1u << (CAP_SYS_RAWIO % 32);
	else
		d[CAP_SYS_RAWIO / 32].effective &= ~(1u << (CAP_SYS_RAWIO % 32));
	if (syscall(SYS_capset, &h, d))
		printf("capset: %s\n", strerror(errno));
}

/*
 * A translation of another window into the file's own buffer (what exports
 * one buffer to several peers) needs no privilege, anywhere else it does;
 * a buffer translated into is not freed under the translation.
 */
static void own_translations(int fd, const struct sio_ntb_info *info, int pidx)
{
	struct sio_ntb_buf b = { .pidx = pidx, .widx = 0 };
	struct sio_ntb_xlat x = { .pidx = pidx, .widx = 1 };
	int other = pidx;

	/* another peer whose link is up (the NTB core translates for those alone), else ours */
	for (unsigned int i = 0; i < info->peers; i++)
		if ((int)i != pidx && (info->link >> i & 1))
			other = (int)i;

	EXPECT("mw-alloc-to-share", ioctl(fd, SIO_NTB_IOC_MW_ALLOC, &b), 0);
	rawio(0);
	x.addr = 0xfe000000;
	x.size = 4096;
	EXPECT("mw-xlat-unprivileged", ioctl(fd, SIO_NTB_IOC_MW_XLAT, &x), EPERM);
	x.addr = b.dma_addr;
	x.size = b.size;
	EXPECT("mw-xlat-into-own-buffer", ioctl(fd, SIO_NTB_IOC_MW_XLAT, &x), 0);
	x.pidx = other;
	x.widx = other == pidx ? 2 : 0;
	EXPECT("mw-xlat-another-peer-into-own-buffer", ioctl(fd, SIO_NTB_IOC_MW_XLAT, &x), 0);
	rawio(1);
	EXPECT("mw-free-translated-into", ioctl(fd, SIO_NTB_IOC_MW_FREE, &b), EBUSY);
	x.size = 0;
	EXPECT("mw-xlat-clear", ioctl(fd, SIO_NTB_IOC_MW_XLAT, &x), 0);
	x.pidx = pidx;
	x.widx = 1;
	EXPECT("mw-xlat-clear-other", ioctl(fd, SIO_NTB_IOC_MW_XLAT, &x), 0);
	EXPECT("mw-free-once-cleared", ioctl(fd, SIO_NTB_IOC_MW_FREE, &b), 0);
}

/*
 * A translation into another file's buffer (CAP_SYS_RAWIO) does not outlive
 * the buffer: freed, or its file closed, the translation is cleared too, and
 * the peer no longer reaches pages the kernel may give to anyone.
 */
static void others_translation(int fd, int pidx)
{
	int fd2 = open("/dev/smartio-ntb0", O_RDWR);
	struct sio_ntb_buf b = { .pidx = pidx, .widx = 0 };
	struct sio_ntb_xlat x = { .pidx = pidx, .widx = 1 };
	struct sio_ntb_xlat clear = { .pidx = pidx, .widx = 1 };

	EXPECT("others-buffer", ioctl(fd2, SIO_NTB_IOC_MW_ALLOC, &b), 0);
	x.addr = b.dma_addr;
	x.size = b.size;
	EXPECT("xlat-into-others-buffer", ioctl(fd, SIO_NTB_IOC_MW_XLAT, &x), 0);
	EXPECT("others-buffer-freed", ioctl(fd2, SIO_NTB_IOC_MW_FREE, &b), 0);
	EXPECT("xlat-gone-with-the-buffer", ioctl(fd, SIO_NTB_IOC_MW_XLAT, &clear), ENOENT);
	EXPECT("others-buffer-again", ioctl(fd2, SIO_NTB_IOC_MW_ALLOC, &b), 0);
	x.addr = b.dma_addr;
	EXPECT("xlat-into-others-buffer-again", ioctl(fd, SIO_NTB_IOC_MW_XLAT, &x), 0);
	close(fd2);
	EXPECT("xlat-gone-with-the-file", ioctl(fd, SIO_NTB_IOC_MW_XLAT, &clear), ENOENT);
}

/* SIO_NTB_IOC_PEER_MW as uapi version 1 built it: its fields, without bus_addr. */
struct peer_mw_v1 {
	__u32 widx, pidx;
	__u64 size, mmap_offset;
};

/* Windows: too large, twice, mapped twice, freed while mapped, translated elsewhere. */
static void bad_windows(int fd, const struct sio_ntb_info *info, int pidx)
{
	struct sio_ntb_mw mw = { .pidx = pidx, .widx = 0 };
	struct sio_ntb_buf b = { .pidx = pidx, .widx = 0 };
	struct sio_ntb_xlat x = { .pidx = pidx, .widx = 1 };
	struct sio_ntb_peer_mw pmw = { .widx = pidx * info->mws_per_peer };
	struct peer_mw_v1 v1 = { .widx = pmw.widx };
	int fd2 = open("/dev/smartio-ntb0", O_RDWR);
	void *m1, *m2;

	EXPECT("mw-limits", ioctl(fd, SIO_NTB_IOC_MW, &mw), 0);
	b.size = mw.size_max + mw.size_align;
	EXPECT("mw-alloc-too-large", ioctl(fd, SIO_NTB_IOC_MW_ALLOC, &b), EINVAL);
	b.size = 0;
	EXPECT("mw-alloc", ioctl(fd, SIO_NTB_IOC_MW_ALLOC, &b), 0);
	EXPECT("mw-alloc-twice", ioctl(fd, SIO_NTB_IOC_MW_ALLOC, &b), EEXIST);
	EXPECT("mmap-private", mmap(NULL, 4096, PROT_READ, MAP_PRIVATE, fd, (off_t)b.mmap_offset) == MAP_FAILED ? -1 : 0, EINVAL);
	EXPECT("mmap-past-the-buffer", mmap(NULL, b.size + 4096, PROT_READ, MAP_SHARED, fd, (off_t)b.mmap_offset) == MAP_FAILED ? -1 : 0, EINVAL);
	EXPECT("mmap-no-buffer", mmap(NULL, 4096, PROT_READ, MAP_SHARED, fd, (off_t)SIO_NTB_MMAP_INBOUND(pidx, 1)) == MAP_FAILED ? -1 : 0, ENXIO);
	EXPECT("mmap-no-such-offset", mmap(NULL, 4096, PROT_READ, MAP_SHARED, fd, (off_t)(7ULL << 56)) == MAP_FAILED ? -1 : 0, EINVAL);
	m1 = mmap(NULL, b.size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, (off_t)b.mmap_offset);
	check("mmap-buffer", m1 == MAP_FAILED ? -1 : 0, errno, 0);
	m2 = mmap(NULL, b.size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, (off_t)b.mmap_offset);
	check("mmap-buffer-twice-same-file", m2 == MAP_FAILED ? -1 : 0, errno, 0);
	if (m1 != MAP_FAILED && m2 != MAP_FAILED) {
		*(volatile uint32_t *)m1 = 0x5eed;
		check("mmap-buffer-twice-same-memory", *(volatile uint32_t *)m2 == 0x5eed ? 0 : -1, EIO, 0);
		munmap(m2, b.size);
	}
	EXPECT("mmap-buffer-other-file", mmap(NULL, 4096, PROT_READ, MAP_SHARED, fd2, (off_t)b.mmap_offset) == MAP_FAILED ? -1 : 0, ENXIO);
	EXPECT("mw-free-while-mapped", ioctl(fd, SIO_NTB_IOC_MW_FREE, &b), EBUSY);
	if (m1 != MAP_FAILED) {
		memset(m1, 0x5a, b.size);	/* our own memory: no fault */
		munmap(m1, b.size);
	}
	EXPECT("mw-free", ioctl(fd, SIO_NTB_IOC_MW_FREE, &b), 0);
	EXPECT("mw-free-twice", ioctl(fd, SIO_NTB_IOC_MW_FREE, &b), ENOENT);
	/* a translation to a bus address that is no buffer: a device's BAR */
	x.addr = 0xfe000000;
	x.size = mw.size_align;
	EXPECT("mw-xlat-elsewhere", ioctl(fd, SIO_NTB_IOC_MW_XLAT, &x), EOPNOTSUPP);
	x.addr = 1;
	EXPECT("mw-xlat-misaligned", ioctl(fd, SIO_NTB_IOC_MW_XLAT, &x), EINVAL);
	EXPECT("peer-mw", ioctl(fd, SIO_NTB_IOC_PEER_MW, &pmw), 0);
	check("peer-mw-bus-address", pmw.bus_addr ? 0 : -1, ENXIO, 0);
	EXPECT("peer-mw-uapi-v1", ioctl(fd, _IOWR(SIO_NTB_IOC_MAGIC, 0x06, struct peer_mw_v1), &v1), 0);
	check("peer-mw-uapi-v1-fields", v1.size == pmw.size && v1.mmap_offset == pmw.mmap_offset ? 0 : -1, EIO, 0);
	m1 = mmap(NULL, 4096, PROT_WRITE, MAP_SHARED, fd, (off_t)pmw.mmap_offset);
	check("mmap-outbound", m1 == MAP_FAILED ? -1 : 0, errno, 0);
	m2 = mmap(NULL, 4096, PROT_WRITE, MAP_SHARED, fd, (off_t)pmw.mmap_offset);
	check("mmap-outbound-twice-same-file", m2 == MAP_FAILED ? -1 : 0, errno, 0);
	EXPECT("mmap-outbound-other-file", mmap(NULL, 4096, PROT_WRITE, MAP_SHARED, fd2, (off_t)pmw.mmap_offset) == MAP_FAILED ? -1 : 0, EBUSY);
	if (m2 != MAP_FAILED)
		munmap(m2, 4096);
	if (m1 != MAP_FAILED)
		munmap(m1, 4096);
	close(fd2);
	/* MAP_SHARED of a read-only file: a shared mapping (no VM_SHARED, VM_MAYSHARE) */
	fd2 = open("/dev/smartio-ntb0", O_RDONLY);
	m1 = mmap(NULL, 4096, PROT_READ, MAP_SHARED, fd2, (off_t)pmw.mmap_offset);
	check("mmap-shared-read-only-file", m1 == MAP_FAILED ? -1 : 0, errno, 0);
	if (m1 != MAP_FAILED) {
		(void)*(volatile uint32_t *)m1;
		munmap(m1, 4096);
	}
	close(fd2);
	own_translations(fd, info, pidx);
	others_translation(fd, pidx);
}


#define MMAP_ERR(p) ((p) == MAP_FAILED ? -1 : 0)

/* Sizes and offsets a careless program gets wrong: each refused, none wraps. */
static void torture_bounds(int fd, const struct sio_ntb_info *info, int pidx)
{
	struct sio_ntb_buf b = { .pidx = pidx, .widx = 0, .size = ~0ULL };
	struct sio_ntb_xlat x = { .pidx = pidx, .widx = 1 };
	struct sio_ntb_peer_mw pmw = { .widx = pidx * info->mws_per_peer };
	/* shorter than uapi 3's event: link_gen cut */
	char ev[sizeof(struct sio_ntb_event) - 2 * sizeof(__u32) - 1];
	void *m;

	EXPECT("mw-alloc-size-wraps", ioctl(fd, SIO_NTB_IOC_MW_ALLOC, &b), EINVAL);
	b.size = ~0ULL - 4095;
	EXPECT("mw-alloc-size-rounds-to-0", ioctl(fd, SIO_NTB_IOC_MW_ALLOC, &b), EINVAL);
	b = (struct sio_ntb_buf){ .pidx = ~0u, .widx = 0 };
	EXPECT("mw-alloc-peer-out-of-range", ioctl(fd, SIO_NTB_IOC_MW_ALLOC, &b), EINVAL);
	b = (struct sio_ntb_buf){ .pidx = pidx, .widx = ~0u };
	EXPECT("mw-alloc-window-out-of-range", ioctl(fd, SIO_NTB_IOC_MW_ALLOC, &b), EINVAL);
	EXPECT("mw-free-window-out-of-range", ioctl(fd, SIO_NTB_IOC_MW_FREE, &b), EINVAL);
	x.widx = ~0u;
	EXPECT("mw-xlat-window-out-of-range", ioctl(fd, SIO_NTB_IOC_MW_XLAT, &x), EINVAL);
	b = (struct sio_ntb_buf){ .pidx = pidx, .widx = 0 };
	EXPECT("mw-alloc-for-bounds", ioctl(fd, SIO_NTB_IOC_MW_ALLOC, &b), 0);
	/* addr + size past 2^64: never "inside the buffer" */
	rawio(0);
	x = (struct sio_ntb_xlat){ .pidx = pidx, .widx = 1, .addr = b.dma_addr + 4096,
				   .size = ~0ULL - 4095 };
	EXPECT("mw-xlat-wraps-unprivileged", ioctl(fd, SIO_NTB_IOC_MW_XLAT, &x), EPERM);
	rawio(1);
	EXPECT("mw-xlat-wraps", ioctl(fd, SIO_NTB_IOC_MW_XLAT, &x), EINVAL);
	x.size = 0;
	EXPECT("mw-xlat-clear-a-buffer", ioctl(fd, SIO_NTB_IOC_MW_XLAT, &(struct sio_ntb_xlat){ .pidx = pidx, .widx = 0 }), EBUSY);
	EXPECT("mw-xlat-clear-nothing", ioctl(fd, SIO_NTB_IOC_MW_XLAT, &x), ENOENT);
	m = mmap(NULL, 8192, PROT_READ, MAP_SHARED, fd,
		 (off_t)(b.mmap_offset + SIO_NTB_MMAP_SPAN - 4096));
	EXPECT("mmap-offset-past-the-span", MMAP_ERR(m), EINVAL);
	m = mmap(NULL, 4096, PROT_READ, MAP_SHARED, fd, (off_t)(b.mmap_offset + b.size));
	EXPECT("mmap-offset-at-the-end", MMAP_ERR(m), EINVAL);
	m = mmap(NULL, 4096, PROT_READ, MAP_SHARED, fd, (off_t)SIO_NTB_MMAP_INBOUND(63, 0));
	EXPECT("mmap-inbound-peer-out-of-range", MMAP_ERR(m), EINVAL);
	m = mmap(NULL, 4096, PROT_READ, MAP_SHARED, fd,
		 (off_t)SIO_NTB_MMAP_OUTBOUND(SIO_NTB_MMAP_MAX_OUT - 1));
	EXPECT("mmap-outbound-window-out-of-range", MMAP_ERR(m), EINVAL);
	m = mmap(NULL, 4096, PROT_READ, MAP_SHARED, fd, (off_t)(1ULL << 43));
	EXPECT("mmap-offset-2^43", MMAP_ERR(m), EINVAL);
	if (!ioctl(fd, SIO_NTB_IOC_PEER_MW, &pmw)) {
		m = mmap(NULL, pmw.size + 4096, PROT_WRITE, MAP_SHARED, fd, (off_t)pmw.mmap_offset);
		EXPECT("mmap-outbound-past-the-window", MMAP_ERR(m), EINVAL);
	}
	EXPECT("read-short", (int)read(fd, ev, sizeof(ev)), EINVAL);
	EXPECT("mw-free-for-bounds", ioctl(fd, SIO_NTB_IOC_MW_FREE, &b), 0);
}

/*
 * Mappings split by munmap(), moved by mremap(), and held past close(): the
 * buffer stays taken until the last piece goes, then is free for anyone.
 */
static void torture_mappings(int fd, const struct sio_ntb_info *info, int pidx)
{
	struct sio_ntb_buf b = { .pidx = pidx, .widx = 0, .size = 4 * 4096 };
	int fd2 = open("/dev/smartio-ntb0", O_RDWR);
	size_t len = 4 * 4096;
	char *m, *n, *spot = mmap(NULL, len, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	EXPECT("mw-alloc-to-split", ioctl(fd2, SIO_NTB_IOC_MW_ALLOC, &b), 0);
	m = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd2, (off_t)b.mmap_offset);
	check("mmap-to-split", MMAP_ERR(m), errno, 0);
	if (m == MAP_FAILED) {
		close(fd2);
		return;
	}
	munmap(m + 4096, 4096);		/* three pieces */
	EXPECT("mw-free-split-mapped", ioctl(fd2, SIO_NTB_IOC_MW_FREE, &b), EBUSY);
	n = mremap(m + 2 * 4096, 2 * 4096, 2 * 4096, MREMAP_MAYMOVE | MREMAP_FIXED, spot);
	check("mremap-a-piece", n == MAP_FAILED ? -1 : 0, errno, 0);
	EXPECT("mremap-grow", mremap(m, 4096, 8 * 4096, MREMAP_MAYMOVE) == MAP_FAILED ? -1 : 0, EFAULT);
	munmap(m, 4096);
	EXPECT("mw-free-moved-mapped", ioctl(fd2, SIO_NTB_IOC_MW_FREE, &b), EBUSY);
	close(fd2);			/* the mapping holds the file */
	fd2 = open("/dev/smartio-ntb0", O_RDWR);
	EXPECT("mw-alloc-held-by-a-closed-file", ioctl(fd2, SIO_NTB_IOC_MW_ALLOC, &b), EBUSY);
	if (n != MAP_FAILED) {
		n[0] = 1;
		munmap(n, 2 * 4096);
	}
	EXPECT("mw-alloc-after-the-last-munmap", ioctl(fd2, SIO_NTB_IOC_MW_ALLOC, &b), 0);
	close(fd2);
	EXPECT("mw-alloc-after-close", ioctl(fd, SIO_NTB_IOC_MW_ALLOC, &b), 0);
	EXPECT("mw-free-after-close", ioctl(fd, SIO_NTB_IOC_MW_FREE, &b), 0);
}

/* Is @err one a racing call may meet? */
static int race_errno_ok(int err)
{
	return err == EEXIST || err == EBUSY || err == ENOENT || err == ENXIO;
}

/*
 * Processes race on one window: two share a file (alloc, map, store, unmap,
 * free), one holds another file (alloc, map). Every call succeeds or fails
 * with an errno of the race; at the end the window is free.
 */
static void torture_race(int fd, const struct sio_ntb_info *info, int pidx)
{
	pid_t kids[3];
	int bad = 0;

	for (int k = 0; k < 3; k++) {
		kids[k] = fork();
		if (kids[k])
			continue;
		int f = k == 2 ? open("/dev/smartio-ntb0", O_RDWR) : fd;
		int errs = 0;

		for (int i = 0; i < 300; i++) {
			struct sio_ntb_buf b = { .pidx = pidx, .widx = 0, .size = 2 * 4096 };
			char *m;

			if (ioctl(f, SIO_NTB_IOC_MW_ALLOC, &b) && !race_errno_ok(errno))
				errs++;
			b.mmap_offset = SIO_NTB_MMAP_INBOUND(pidx, 0);
			m = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, f, (off_t)b.mmap_offset);
			if (m != MAP_FAILED) {
				m[i % 4096] = (char)i;
				munmap(m, 4096);
			} else if (!race_errno_ok(errno)) {
				errs++;
			}
			if (ioctl(f, SIO_NTB_IOC_MW_FREE, &b) && !race_errno_ok(errno))
				errs++;
		}
		if (errs)
			printf("race %d: %d calls failed with an errno no race explains\n", k, errs);
		_exit(errs ? 1 : 0);
	}
	for (int k = 0; k < 3; k++) {
		int st;

		if (waitpid(kids[k], &st, 0) != kids[k] || !WIFEXITED(st) || WEXITSTATUS(st))
			bad++;
	}
	check("race-errnos", bad ? -1 : 0, EIO, 0);
	struct sio_ntb_buf b = { .pidx = pidx, .widx = 0 };

	ioctl(fd, SIO_NTB_IOC_MW_FREE, &b);	/* the shared file may hold it */
	EXPECT("race-window-free-after", ioctl(fd, SIO_NTB_IOC_MW_ALLOC, &b), 0);
	EXPECT("race-window-freed", ioctl(fd, SIO_NTB_IOC_MW_FREE, &b), 0);
}

/*
 * The pages of a lost peer (or device) read all ones, but for what this
 * process stored into them: its stores land in one page of its own, which
 * every revoked page of the mapping shows (word 0 of each, here: 0x42).
 */
static void check_revoked(const char *name, volatile uint64_t *p, size_t size)
{
	size_t i, words = size / 8, per_page = 4096 / 8;

	for (i = 0; i < words && (p[i] == ~0ULL || (i % per_page == 0 && p[i] == 0x42)); i++)
		;
	if (i < words)
		printf("word %zu of %zu reads %#llx\n", i, words, (unsigned long long)p[i]);
	check(name, i == words ? 0 : -1, EIO, 0);
}

/*
 * A child that maps the buffer @b, touches every page and unmaps it, over
 * and over, until mmap() says the device went (-ENODEV): a mapping made
 * while the device goes must read the buffer or all ones, nothing else.
 */
static pid_t remap_loop(int fd, const struct sio_ntb_buf *b)
{
	pid_t pid = fork();

	if (pid)
		return pid;
	for (;;) {
		volatile uint64_t *m = mmap(NULL, b->size, PROT_READ | PROT_WRITE, MAP_SHARED, fd,
					    (off_t)b->mmap_offset);

		if (m == MAP_FAILED)
			_exit(errno == ENODEV ? 0 : 3);
		for (size_t i = 0; i < b->size / 8; i += 512)
			m[i] = m[i] + 1;
		munmap((void *)m, b->size);
	}
}

/* Hold PORT's windows until its link goes down (unless @dev_only) or the device goes. */
static void hold(int fd, const struct sio_ntb_info *info, int port, int dev_only)
{
	int pidx = pidx_of(fd, info, port);
	struct sio_ntb_peer_mw pmw = { .widx = pidx * info->mws_per_peer };
	struct sio_ntb_buf b = { .pidx = pidx, .widx = 1 };
	struct sio_ntb_event ev;
	volatile uint64_t *out, *in;
	struct sio_ntb_peer p = { .pidx = pidx };
	pid_t racer = -1;
	int gone = 0;

	if (ioctl(fd, SIO_NTB_IOC_PEER_MW, &pmw) || ioctl(fd, SIO_NTB_IOC_MW_ALLOC, &b)) {
		printf("FAIL hold: %s\n", strerror(errno));
		exit(1);
	}
	out = mmap(NULL, pmw.size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, (off_t)pmw.mmap_offset);
	in = mmap(NULL, b.size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, (off_t)b.mmap_offset);
	if (out == MAP_FAILED || in == MAP_FAILED) {
		printf("FAIL hold-mmap: %s\n", strerror(errno));
		exit(1);
	}
	/* every page in use before it goes: pages are filled in at fault time */
	for (size_t i = 0; i < pmw.size / 8; i += 512)
		out[i] = 0x42;
	for (size_t i = 0; i < b.size / 8; i += 512)
		in[i] = in[i] + 1;
	if (dev_only)
		racer = remap_loop(fd, &b);
	printf("holding port %d's window (%llu KiB) and a buffer for it\n", port,
	       (unsigned long long)pmw.size >> 10);
	fflush(stdout);
	for (int t = 0; t < 600 && !gone; t++) {	/* at most 10 minutes */
		struct pollfd pf = { .fd = fd, .events = POLLIN };

		if (poll(&pf, 1, 1000) < 0)
			continue;
		if (pf.revents & POLLHUP)
			gone = 2;
		else if ((pf.revents & POLLIN) && read(fd, &ev, sizeof(ev)) == sizeof(ev) &&
			 !(ev.link >> pidx & 1) && !dev_only)
			gone = 1;
		out[0] = 0x42;	/* stores go on meanwhile */
	}
	if (!gone) {
		printf("FAIL hold: neither port %d's link nor the device went\n", port);
		exit(1);
	}
	check_revoked(gone == 2 ? "device-gone-outbound-reads-ones" : "peer-gone-outbound-reads-ones",
		      out, pmw.size);
	if (gone == 2) {
		check_revoked("device-gone-inbound-reads-ones", in, b.size);
		EXPECT("device-gone-calls", ioctl(fd, SIO_NTB_IOC_PEER, &p), ENODEV);
		/* the events that came before first (the links going down with it), then ENODEV */
		int r, k = 0;

		while ((r = (int)read(fd, &ev, sizeof(ev))) == (int)sizeof(ev) && ++k < 8)
			;
		EXPECT("device-gone-read", r, ENODEV);
		int st = -1;

		waitpid(racer, &st, 0);
		if (!WIFEXITED(st) || WEXITSTATUS(st))
			printf("remapper: %s %d\n", WIFSIGNALED(st) ? "signal" : "exit",
			       WIFSIGNALED(st) ? WTERMSIG(st) : WEXITSTATUS(st));
		check("device-gone-remap-race", WIFEXITED(st) && !WEXITSTATUS(st) ? 0 : -1, EIO, 0);
	} else {
		int fd2 = open("/dev/smartio-ntb0", O_RDWR);

		EXPECT("peer-gone-mapped-still-other-file", mmap(NULL, 4096, PROT_WRITE, MAP_SHARED, fd2,
								 (off_t)pmw.mmap_offset) == MAP_FAILED ? -1 : 0, EBUSY);
		EXPECT("peer-gone-remap", mmap((void *)out, pmw.size, PROT_WRITE, MAP_SHARED | MAP_FIXED, fd,
					       (off_t)pmw.mmap_offset) == MAP_FAILED ? -1 : 0, ENOTCONN);
		close(fd2);
		munmap((void *)out, pmw.size);
		EXPECT("peer-gone-no-new-mapping", mmap(NULL, 4096, PROT_WRITE, MAP_SHARED, fd,
							(off_t)pmw.mmap_offset) == MAP_FAILED ? -1 : 0, ENOTCONN);
	}
}

/*
 * PORT goes down and comes back (its smartio_ntb reloaded) while this
 * process holds its outbound window mapped and the link work is held back
 * (link_delay_ms): the peer's link generation must move, and the mapping
 * be revoked, though the link is up again when the work runs.
 *
 * The process maps before the suite's phase, and PORT reloads only once
 * every guest is at it: the wait for the move is counted from SIGUSR1,
 * which the suite sends once the phase begins, not from the mapping (a
 * guest that gets to the phase minutes later would use up the wait).
 */
static void bounce(int fd, const struct sio_ntb_info *info, int port)
{
	int pidx = pidx_of(fd, info, port), moved = 0;
	struct sio_ntb_peer_mw pmw = { .widx = pidx * info->mws_per_peer };
	struct sio_ntb_peer p = { .pidx = pidx };
	struct timespec phase_max = { .tv_sec = 600 };	/* the suite's phase wait */
	struct sio_ntb_event ev;
	volatile uint64_t *out;
	sigset_t go;
	uint64_t gen0;

	/* blocked, so a SIGUSR1 that comes early waits for sigtimedwait() */
	sigemptyset(&go);
	sigaddset(&go, SIGUSR1);
	sigprocmask(SIG_BLOCK, &go, NULL);
	if (ioctl(fd, SIO_NTB_IOC_PEER_MW, &pmw) || ioctl(fd, SIO_NTB_IOC_PEER, &p)) {
		printf("FAIL bounce: %s\n", strerror(errno));
		exit(1);
	}
	out = mmap(NULL, pmw.size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, (off_t)pmw.mmap_offset);
	if (out == MAP_FAILED) {
		printf("FAIL bounce-mmap: %s\n", strerror(errno));
		exit(1);
	}
	for (size_t i = 0; i < pmw.size / 8; i += 512)
		out[i] = 0x42;
	gen0 = p.link_gen;
	printf("bouncing: port %d's link generation is %llu\n", port, (unsigned long long)gen0);
	fflush(stdout);
	if (sigtimedwait(&go, NULL, &phase_max) != SIGUSR1) {
		printf("FAIL bounce-go: no SIGUSR1 within %ld s\n", (long)phase_max.tv_sec);
		exit(1);
	}
	printf("bounce: port %d goes now\n", port);
	for (int t = 0; t < 60 && !moved; t++) {
		struct pollfd pf = { .fd = fd, .events = POLLIN };

		if (poll(&pf, 1, 1000) > 0 && (pf.revents & POLLIN))
			(void)!read(fd, &ev, sizeof(ev));
		moved = !ioctl(fd, SIO_NTB_IOC_PEER, &p) && p.link_gen != gen0;
	}
	printf("port %d's link generation %llu, link %s\n", port, (unsigned long long)p.link_gen,
	       p.link_up ? "up" : "down");
	check("bounce-generation-moved", moved ? 0 : -1, ETIMEDOUT, 0);
	check_revoked("bounce-outbound-revoked", out, pmw.size);
}

static void take(int fd, const struct sio_ntb_info *info, int port)
{
	int pidx = pidx_of(fd, info, port), efd = eventfd(0, 0), n = 0;
	struct sio_ntb_peer p = { .pidx = pidx };
	struct sio_ntb_db_eventfd ef = { .bit = 0, .fd = efd };

	ioctl(fd, SIO_NTB_IOC_PEER, &p);
	for (unsigned int w = 0; w < p.mws; w++) {
		struct sio_ntb_buf b = { .pidx = pidx, .widx = w };

		if (!ioctl(fd, SIO_NTB_IOC_MW_ALLOC, &b) &&
		    mmap(NULL, b.size, PROT_READ, MAP_SHARED, fd, (off_t)b.mmap_offset) != MAP_FAILED)
			n++;
	}
	check("take-every-window", n == (int)p.mws ? 0 : -1, EBUSY, 0);
	check("take-eventfd", ioctl(fd, SIO_NTB_IOC_DB_EVENTFD, &ef), errno, 0);
	fflush(stdout);
	kill(getpid(), SIGKILL);
}

/* send_msg: PORT's register @midx gets @value, retried while it is full */
static int send_msg(int fd, int pidx, unsigned int midx, uint32_t value)
{
	struct sio_ntb_msg m = { .pidx = pidx, .midx = midx, .value = value };
	int ret;

	for (int t = 0; t < 200; t++) {
		ret = ioctl(fd, SIO_NTB_IOC_MSG_SEND, &m);
		if (!ret || errno != EAGAIN)
			return ret;
		usleep(10000 + t * 1000);	/* the peer takes it at its next event */
	}
	return -1;
}

/* Messages received before they were waited for (the peer runs ahead). */
static struct sio_ntb_msg early[16];
static unsigned int nearly;

/* take_msg: @m, if it is register @lo's or @hi's of @pidx, into @v and @got */
static bool take_msg(const struct sio_ntb_msg *m, int pidx, unsigned int lo, unsigned int hi,
		     uint64_t *v, unsigned int *got)
{
	if ((int)m->pidx != pidx || (m->midx != lo && m->midx != hi))
		return false;
	if (m->midx == lo)
		*v = (*v & ~0xffffffffULL) | m->value;
	else
		*v = (*v & 0xffffffffULL) | (uint64_t)m->value << 32;
	*got |= m->midx == lo ? 1 : 2;
	return true;
}

/*
 * recv_msgs: the values of registers @lo and @hi (as one 64-bit value) from
 * peer @pidx, waiting on @efd (an eventfd) or, with -1, poll() and read();
 * others received meanwhile are kept for a later call
 */
static int recv_msgs(int fd, int efd, int pidx, unsigned int lo, unsigned int hi, uint64_t *v)
{
	unsigned int got = 0, keep = 0;

	for (unsigned int i = 0; i < nearly; i++)
		if (!take_msg(&early[i], pidx, lo, hi, v, &got))
			early[keep++] = early[i];
	nearly = keep;
	for (int t = 0; t < 120 && got != 3; t++) {
		struct pollfd pf = { .fd = efd >= 0 ? efd : fd, .events = POLLIN };
		struct sio_ntb_msg m = { 0 };
		struct sio_ntb_event ev;
		uint64_t n;

		if (poll(&pf, 1, 1000) <= 0)
			continue;
		if (efd >= 0 ? read(efd, &n, sizeof(n)) != sizeof(n) :
		    read(fd, &ev, sizeof(ev)) != sizeof(ev))
			continue;
		while (!ioctl(fd, SIO_NTB_IOC_MSG_RECV, &m))
			if (!take_msg(&m, pidx, lo, hi, v, &got) && nearly < 16)
				early[nearly++] = m;
	}
	return got == 3 ? 0 : -1;
}

/*
 * The message register the early-message check uses: the address exchange
 * uses 0 and 1, ntb_perf (which runs before) 0 to 2; idt has 4.
 */
#define EARLY_MIDX 3

/*
 * msg_early_send: register EARLY_MIDX of PORT gets @value (see msg_early).
 * PORT loaded smartio_ntb in the same phase, so the link may come up only
 * after this process starts: wait for it (30 s) rather than fail.
 */
static void msg_early_send(int fd, const struct sio_ntb_info *info, int port, uint32_t value)
{
	int pidx = pidx_of(fd, info, port), ret;

	for (int t = 0; (ret = send_msg(fd, pidx, EARLY_MIDX, value)) && errno == ENOTCONN &&
	     t < 300; t++)
		usleep(100000);
	check("early-msg-send", ret, errno, 0);
}

/*
 * msg_early: PORT sent @value before this file was open; it waited in the
 * register and the open queued it, before any eventfd was set. A process
 * that waits on the eventfd alone must still hear of it.
 */
static void msg_early(int fd, const struct sio_ntb_info *info, int port, uint32_t value)
{
	int pidx = pidx_of(fd, info, port), efd = eventfd(0, 0);
	struct sio_ntb_db_eventfd ef = { .fd = efd, .flags = SIO_NTB_EVENTFD_MSG };
	struct pollfd pf = { .fd = efd, .events = POLLIN };
	struct sio_ntb_msg m = { 0 };
	bool found = false;
	int n = 0;

	EXPECT("early-msg-eventfd", ioctl(fd, SIO_NTB_IOC_DB_EVENTFD, &ef), 0);
	check("early-msg-signalled", poll(&pf, 1, 10000) == 1 ? 0 : -1, ETIMEDOUT, 0);
	/* other registers' messages, if any, are queued too */
	for (; !found && n < SIO_NTB_MSG_QUEUE && !ioctl(fd, SIO_NTB_IOC_MSG_RECV, &m); n++)
		found = (int)m.pidx == pidx && m.midx == EARLY_MIDX && m.value == value;
	check("early-msg-value", found ? 0 : -1, EPROTO, 0);
	if (!found)
		printf("    %d messages received, none %#x in register %d\n", n, value, EARLY_MIDX);
}

/* Over outbound-translating hardware with message registers: see the top. */
static void outbound(int fd, const struct sio_ntb_info *info, int port)
{
	int pidx = pidx_of(fd, info, port), efd = eventfd(0, 0);
	struct sio_ntb_buf b = { .pidx = pidx, .widx = 0, .size = 65536 };
	struct sio_ntb_xlat x = { .pidx = pidx, .widx = 0, .size = 4096 };
	struct sio_ntb_spad sp = { .pidx = SIO_NTB_LOCAL };
	struct sio_ntb_db_eventfd ef = { .fd = efd, .flags = SIO_NTB_EVENTFD_MSG };
	struct sio_ntb_peer_mw pmw = { .widx = pidx * info->mws_per_peer };
	struct sio_ntb_peer_xlat px = { .pidx = pidx, .widx = pmw.widx };
	struct sio_ntb_msg m = { .pidx = pidx, .midx = info->msgs };
	uint64_t peer = 0, done = 0;
	uint8_t *in, *out;
	size_t bad = 0;
	int r;

	check("features-outbound", !(info->flags & SIO_NTB_F_INBOUND_XLAT) &&
	      (info->flags & SIO_NTB_F_OUTBOUND_XLAT) && !(info->flags & SIO_NTB_F_SPADS) &&
	      (info->flags & SIO_NTB_F_MSGS) && info->msgs >= 4 ? 0 : -1, EPROTO, 0);
	EXPECT("spad-none", ioctl(fd, SIO_NTB_IOC_SPAD_READ, &sp), EOPNOTSUPP);
	EXPECT("msg-register-out-of-range", ioctl(fd, SIO_NTB_IOC_MSG_SEND, &m), EINVAL);
	m = (struct sio_ntb_msg){ .pidx = info->peers, .midx = 0 };
	EXPECT("msg-peer-out-of-range", ioctl(fd, SIO_NTB_IOC_MSG_SEND, &m), EINVAL);
	m = (struct sio_ntb_msg){ .pidx = pidx, .flags = 1 };
	EXPECT("msg-flags-set", ioctl(fd, SIO_NTB_IOC_MSG_SEND, &m), EINVAL);
	ef.bit = 1;
	EXPECT("msg-eventfd-bit-set", ioctl(fd, SIO_NTB_IOC_DB_EVENTFD, &ef), EINVAL);
	ef.bit = 0;
	EXPECT("msg-eventfd", ioctl(fd, SIO_NTB_IOC_DB_EVENTFD, &ef), 0);
	/* the core's ntb_mw_set_trans() is a no-op there: said, not pretended */
	EXPECT("mw-alloc-no-inbound-xlat", ioctl(fd, SIO_NTB_IOC_MW_ALLOC, &b), EOPNOTSUPP);
	EXPECT("mw-xlat-no-inbound-xlat", ioctl(fd, SIO_NTB_IOC_MW_XLAT, &x), EOPNOTSUPP);
	b.flags = SIO_NTB_BUF_PEER_XLAT;
	/* smartio_ntb learns of the link some time after it is loaded: wait
	 * for it (30 s at most) */
	for (int t = 0; (r = ioctl(fd, SIO_NTB_IOC_MW_ALLOC, &b)) && errno == ENOTCONN &&
	     t < 300; t++)
		usleep(100000);
	EXPECT("mw-alloc-for-peer-xlat", r, 0);
	in = mmap(NULL, b.size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, (off_t)b.mmap_offset);
	check("mmap-buffer", in == MAP_FAILED ? -1 : 0, errno, 0);
	if (in == MAP_FAILED)
		return;
	memset(in, 0, b.size);
	/* the peer's window checks before it has an address */
	px.addr = 4096;
	px.size = 4096;
	px.flags = 1;
	EXPECT("peer-mw-xlat-flags-set", ioctl(fd, SIO_NTB_IOC_PEER_MW_XLAT, &px), EINVAL);
	px.flags = 0;
	px.addr = 4;
	EXPECT("peer-mw-xlat-not-a-page", ioctl(fd, SIO_NTB_IOC_PEER_MW_XLAT, &px), EINVAL);
	px.addr = 0x1000;
	EXPECT("peer-mw-xlat-outside-the-peer", ioctl(fd, SIO_NTB_IOC_PEER_MW_XLAT, &px), EOPNOTSUPP);
	px.size = 0;
	EXPECT("peer-mw-xlat-clear-nothing", ioctl(fd, SIO_NTB_IOC_PEER_MW_XLAT, &px), ENOENT);
	rawio(0);
	px.size = 4096;
	EXPECT("peer-mw-xlat-unprivileged", ioctl(fd, SIO_NTB_IOC_PEER_MW_XLAT, &px), EPERM);
	rawio(1);
	printf("buffer for port %d at bus address %#llx\n", port, (unsigned long long)b.dma_addr);
	fflush(stdout);
	check("msg-send-address", send_msg(fd, pidx, 0, (uint32_t)b.dma_addr) ||
	      send_msg(fd, pidx, 1, (uint32_t)(b.dma_addr >> 32)), errno, 0);
	check("msg-recv-address", recv_msgs(fd, efd, pidx, 0, 1, &peer), ETIMEDOUT, 0);
	printf("port %d's buffer at bus address %#llx\n", port, (unsigned long long)peer);
	px = (struct sio_ntb_peer_xlat){ .pidx = pidx, .widx = pmw.widx, .addr = peer, .size = b.size };
	px.size = 1ULL << 40;
	EXPECT("peer-mw-xlat-too-large", ioctl(fd, SIO_NTB_IOC_PEER_MW_XLAT, &px), EINVAL);
	px.size = b.size;
	EXPECT("peer-mw-xlat", ioctl(fd, SIO_NTB_IOC_PEER_MW_XLAT, &px), 0);
	EXPECT("peer-mw", ioctl(fd, SIO_NTB_IOC_PEER_MW, &pmw), 0);
	check("peer-mw-translated", pmw.size == b.size && (int)pmw.pidx == pidx ? 0 : -1, EPROTO, 0);
	out = mmap(NULL, b.size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, (off_t)pmw.mmap_offset);
	check("mmap-outbound", out == MAP_FAILED ? -1 : 0, errno, 0);
	if (out != MAP_FAILED) {
		EXPECT("peer-mw-xlat-while-mapped", ioctl(fd, SIO_NTB_IOC_PEER_MW_XLAT, &px), EBUSY);
		memset(out, 0x40 + info->port, b.size);
		__atomic_thread_fence(__ATOMIC_SEQ_CST);
		munmap(out, b.size);
	}
	/* stores before the message that says they are done (posted, in order) */
	check("msg-send-done", send_msg(fd, pidx, 2, 0xd0e) || send_msg(fd, pidx, 3, 0), errno, 0);
	check("msg-recv-done", recv_msgs(fd, -1, pidx, 2, 3, &done), ETIMEDOUT, 0);
	for (size_t i = 0; i < b.size; i++)
		bad += in[i] != (uint8_t)(0x40 + port);
	if (bad)
		printf("%zu of %llu bytes not 0x%02x (first: 0x%02x)\n", bad,
		       (unsigned long long)b.size, 0x40 + port, in[0]);
	check("outbound-data", done == 0xd0e && !bad ? 0 : -1, EIO, 0);
	px.size = 0;
	EXPECT("peer-mw-xlat-clear", ioctl(fd, SIO_NTB_IOC_PEER_MW_XLAT, &px), 0);
	munmap(in, b.size);
	EXPECT("mw-free", ioctl(fd, SIO_NTB_IOC_MW_FREE, &b), 0);
}

static void wait_eventfd(int fd, unsigned int bit, uint64_t want)
{
	struct sio_ntb_db_eventfd ef = { .bit = bit, .fd = eventfd(0, 0) };
	uint64_t got = 0, v;

	check("eventfd-register", ioctl(fd, SIO_NTB_IOC_DB_EVENTFD, &ef), errno, 0);
	printf("waiting for %llu rings of doorbell bit %u\n", (unsigned long long)want, bit);
	fflush(stdout);
	for (int t = 0; t < 120 && got < want; t++) {
		struct pollfd pf = { .fd = ef.fd, .events = POLLIN };

		if (poll(&pf, 1, 1000) > 0 && read(ef.fd, &v, sizeof(v)) == sizeof(v))
			got += v;
	}
	check("eventfd-rings", got >= want ? 0 : -1, ETIMEDOUT, 0);
}

/* The CPU (so, on x86, bus) address of BAR @bar of PCI function @bdf, from sysfs. */
static unsigned long long bar_of(const char *bdf, int bar)
{
	char path[128], line[128];
	unsigned long long start = 0;
	FILE *f;

	snprintf(path, sizeof(path), "/sys/bus/pci/devices/%s/resource", bdf);
	f = fopen(path, "r");
	for (int i = 0; f && i <= bar; i++)
		if (!fgets(line, sizeof(line), f) || sscanf(line, "%llx", &start) != 1)
			start = 0;
	if (!start) {
		printf("FAIL fwd-bar: %s: no BAR%d\n", path, bar);
		exit(1);
	}
	fclose(f);
	return start;
}

/* The window a peer forwards through: its last inbound window for us. */
#define FWD_VALUE	0x5a5a1234u
#define FWD_REG		1	/* edu's liveness register, 0x04: reads ~value */

/*
 * Does ntb_hw_ivshmem's debugfs list a forwarded window whose line holds
 * @what (and, with @dropped, a nonzero count of dropped stores)? Prints the
 * lines when @what is empty.
 */
static int fwd_status(const char *what, int dropped)
{
	FILE *f = fopen("/sys/kernel/debug/ntb_hw_ivshmem:0000:00:10.0/forward", "r");
	char line[256];
	int seen = 0;

	while (f && fgets(line, sizeof(line), f)) {
		const char *d = strstr(line, " forwarded, ");

		if (!*what)
			printf("    %s", line);
		else if (strstr(line, what) && (!dropped || (d && strncmp(d, " forwarded, 0 ", 14))))
			seen = 1;
	}
	if (f)
		fclose(f);
	return seen;
}

/*
 * fwd-lend PORT BDF: translate the last inbound window of PORT onto BAR0 of
 * BDF (QEMU's edu), which ntb_hw_ivshmem emulates by forwarding; refuse the
 * targets that are no device's BAR; then, at SIGUSR1 (PORT has stored
 * FWD_VALUE through its window), the register holds it; at a second
 * SIGUSR1 (BDF removed, PORT stored again), the stores were dropped.
 */
static void fwd_lend(int fd, const struct sio_ntb_info *info, int port, const char *bdf)
{
	int pidx = pidx_of(fd, info, port);
	struct sio_ntb_peer p = { .pidx = pidx };
	struct sio_ntb_xlat x = { .pidx = pidx };
	struct timespec phase_max = { .tv_sec = 600 };
	volatile uint32_t *reg;
	char path[160];
	int rfd, seen = 0;
	uint32_t got = 0;
	sigset_t go;

	sigemptyset(&go);
	sigaddset(&go, SIGUSR1);
	sigprocmask(SIG_BLOCK, &go, NULL);
	ioctl(fd, SIO_NTB_IOC_PEER, &p);
	x.widx = p.mws - 1;
	x.addr = bar_of("0000:00:10.0", 2);	/* the NTB's own BAR2, its header */
	x.size = 4096;
	EXPECT("fwd-onto-the-ntb-refused", ioctl(fd, SIO_NTB_IOC_MW_XLAT, &x), EOPNOTSUPP);
	x.addr = bar_of(bdf, 0);
	x.size = 128 << 10;
	EXPECT("fwd-too-large-refused", ioctl(fd, SIO_NTB_IOC_MW_XLAT, &x), EINVAL);
	x.size = 4096;
	EXPECT("fwd-onto-bar0", ioctl(fd, SIO_NTB_IOC_MW_XLAT, &x), 0);
	snprintf(path, sizeof(path), "/sys/bus/pci/devices/%s/resource0", bdf);
	rfd = open(path, O_RDWR | O_SYNC);
	reg = rfd < 0 ? MAP_FAILED : mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, rfd, 0);
	if (reg == MAP_FAILED) {
		printf("FAIL fwd-map: %s: %s\n", path, strerror(errno));
		exit(1);
	}
	printf("forwarding window %u of port %d onto %s BAR0 (%#llx)\n", x.widx, port, bdf,
	       (unsigned long long)x.addr);
	fflush(stdout);
	if (sigtimedwait(&go, NULL, &phase_max) != SIGUSR1) {
		printf("FAIL fwd-go: no SIGUSR1 within %ld s\n", (long)phase_max.tv_sec);
		exit(1);
	}
	/* the forwarder polls: bounded, backing off */
	for (int t = 0, us = 1000; t < 100 && got != ~FWD_VALUE; t++, us = us < 200000 ? us * 2 : us) {
		got = reg[FWD_REG];
		if (got != ~FWD_VALUE)
			usleep(us);
	}
	printf("edu register 0x04 reads %#x (want %#x, the inverse of %#x)\n", got, ~FWD_VALUE,
	       FWD_VALUE);
	check("fwd-store-reached-bar0", got == ~FWD_VALUE ? 0 : -1, EIO, 0);
	check("fwd-labelled-emulated", fwd_status("emulated forwarding", 0) ? 0 : -1, ENOENT, 0);
	printf("checked: the device may go now\n");
	fflush(stdout);
	/* the device removed, the peer stores again: dropped, and said so */
	if (sigtimedwait(&go, NULL, &phase_max) != SIGUSR1) {
		printf("FAIL fwd-go-again: no SIGUSR1 within %ld s\n", (long)phase_max.tv_sec);
		exit(1);
	}
	for (int t = 0, us = 1000; t < 100 && !seen; t++, us = us < 200000 ? us * 2 : us) {
		seen = fwd_status("the device is removed", 1);
		if (!seen)
			usleep(us);
	}
	fwd_status("", 0);
	check("fwd-gone-dropped", seen ? 0 : -1, EIO, 0);
	x.size = 0;
	EXPECT("fwd-clear", ioctl(fd, SIO_NTB_IOC_MW_XLAT, &x), 0);
}

/* fwd-store PORT [VALUE]: store VALUE (FWD_VALUE; after others) through PORT's forwarded window. */
static void fwd_store(int fd, const struct sio_ntb_info *info, int port, uint32_t value)
{
	int pidx = pidx_of(fd, info, port);
	struct sio_ntb_peer p = { .pidx = pidx };
	struct sio_ntb_peer_mw pmw;
	volatile uint32_t *out;

	ioctl(fd, SIO_NTB_IOC_PEER, &p);
	pmw = (struct sio_ntb_peer_mw){ .widx = pidx * info->mws_per_peer + p.mws - 1 };
	if (ioctl(fd, SIO_NTB_IOC_PEER_MW, &pmw)) {
		printf("FAIL fwd-peer-mw: %s\n", strerror(errno));
		exit(1);
	}
	out = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, fd, (off_t)pmw.mmap_offset);
	if (out == MAP_FAILED) {
		printf("FAIL fwd-mmap: %s\n", strerror(errno));
		exit(1);
	}
	/* a register carries its latest value: only the last store must arrive */
	for (uint32_t v = 1; v <= 64; v++)
		out[FWD_REG] = v;
	out[FWD_REG] = value;
	__sync_synchronize();	/* out of the write-combining buffer */
	printf("ok fwd-store: %#x through outbound window %u\n", value, pmw.widx);
}

/* An inbound buffer of @fd for window @widx of @pidx: 0, or -errno. */
static int buf_alloc(int fd, int pidx, unsigned int widx, struct sio_ntb_buf *b)
{
	*b = (struct sio_ntb_buf){ .pidx = (uint32_t)pidx, .widx = widx };
	return ioctl(fd, SIO_NTB_IOC_MW_ALLOC, b) ? -errno : 0;
}

static void shared_region(int port, const char *d0, const char *d1)
{
	struct sio_ntb_info i0, i1;
	int f0 = open(d0, O_RDWR), f1 = open(d1, O_RDWR), p0, p1, ret;
	struct sio_ntb_buf a, b, c;
	struct sio_ntb_xlat x;
	struct sio_ntb_peer pr;
	volatile uint64_t *va;
	bool intact = true;

	if (f0 < 0 || f1 < 0 || ioctl(f0, SIO_NTB_IOC_INFO, &i0) || ioctl(f1, SIO_NTB_IOC_INFO, &i1)) {
		printf("FAIL shared-open: %s, %s: %s\n", d0, d1, strerror(errno));
		exit(1);
	}
	p0 = pidx_of(f0, &i0, port);
	p1 = pidx_of(f1, &i1, port);
	pr = (struct sio_ntb_peer){ .pidx = (uint32_t)p1 };
	ioctl(f1, SIO_NTB_IOC_PEER, &pr);
	check("shared-alloc", buf_alloc(f0, p0, 0, &a) ? -1 : 0, errno, 0);
	va = mmap(NULL, a.size, PROT_READ | PROT_WRITE, MAP_SHARED, f0, (off_t)a.mmap_offset);
	if (va == MAP_FAILED) {
		printf("FAIL shared-mmap: %s\n", strerror(errno));
		exit(1);
	}
	for (size_t k = 0; k < a.size / 8; k += 512)
		va[k] = 0x5a5a0000u + k;
	x = (struct sio_ntb_xlat){ .pidx = (uint32_t)p1, .widx = 0, .addr = a.dma_addr, .size = a.size };
	EXPECT("shared-xlat", ioctl(f1, SIO_NTB_IOC_MW_XLAT, &x), 0);
	for (unsigned int w = 1; w < pr.mws; w++)
		check("shared-alloc-other", buf_alloc(f1, p1, w, &b) ? -1 : 0, errno, 0);
	for (size_t k = 0; k < a.size / 8; k += 512)
		intact = intact && va[k] == 0x5a5a0000u + k;
	check("shared-apart", intact ? 0 : -1, EIO, 0);
	ret = buf_alloc(f0, p0, 1, &c);
	check("shared-one-allocator", ret ? -1 : 0, -ret, ret ? -ret : ENOMEM);
	munmap((void *)va, a.size);
	EXPECT("shared-free", ioctl(f0, SIO_NTB_IOC_MW_FREE, &a), 0);
	ret = buf_alloc(f0, p0, 0, &c);
	check("shared-held", ret ? -1 : 0, -ret, ret ? -ret : ENOMEM);
	x.size = 0;
	EXPECT("shared-let-go", ioctl(f1, SIO_NTB_IOC_MW_XLAT, &x), 0);
	check("shared-free-again", buf_alloc(f0, p0, 0, &c) ? -1 : 0, errno, 0);
	close(f0);
	close(f1);
}

int main(int argc, char **argv)
{
	struct sio_ntb_info info;
	int fd, pidx;

	if (argc < 3) {
		fprintf(stderr, "usage: ntb-uapi bad|bounce|hold|take|outbound PORT | fwd-store PORT [VALUE] |\n"
			"       hold PORT dev | fwd-lend PORT BDF | eventfd BIT N |\n"
			"       msg-early-send PORT VALUE | msg-early PORT VALUE |\n"
			"       shared PORT DEV0 DEV1\n");
		return 2;
	}
	fd = dev_open(&info);
	if (!strcmp(argv[1], "eventfd") && argc == 4) {
		wait_eventfd(fd, (unsigned int)atoi(argv[2]), strtoull(argv[3], NULL, 0));
	} else if (!strcmp(argv[1], "bad")) {
		pidx = pidx_of(fd, &info, atoi(argv[2]));
		bad_args(fd, &info, pidx);
		inbound_only(fd, &info, pidx);
		bad_windows(fd, &info, pidx);
		torture_bounds(fd, &info, pidx);
		torture_mappings(fd, &info, pidx);
		torture_race(fd, &info, pidx);
	} else if (!strcmp(argv[1], "hold")) {
		hold(fd, &info, atoi(argv[2]), argc > 3 && !strcmp(argv[3], "dev"));
	} else if (!strcmp(argv[1], "bounce")) {
		bounce(fd, &info, atoi(argv[2]));
	} else if (!strcmp(argv[1], "fwd-lend") && argc == 4) {
		fwd_lend(fd, &info, atoi(argv[2]), argv[3]);
	} else if (!strcmp(argv[1], "fwd-store")) {
		fwd_store(fd, &info, atoi(argv[2]),
			  argc > 3 ? (uint32_t)strtoul(argv[3], NULL, 0) : FWD_VALUE);
	} else if (!strcmp(argv[1], "take")) {
		take(fd, &info, atoi(argv[2]));
	} else if (!strcmp(argv[1], "msg-early-send") && argc == 4) {
		msg_early_send(fd, &info, atoi(argv[2]), (uint32_t)strtoul(argv[3], NULL, 0));
	} else if (!strcmp(argv[1], "msg-early") && argc == 4) {
		msg_early(fd, &info, atoi(argv[2]), (uint32_t)strtoul(argv[3], NULL, 0));
	} else if (!strcmp(argv[1], "outbound")) {
		outbound(fd, &info, atoi(argv[2]));
	} else if (!strcmp(argv[1], "shared") && argc == 5) {
		shared_region(atoi(argv[2]), argv[3], argv[4]);
	} else {
		fprintf(stderr, "ntb-uapi: no command '%s'\n", argv[1]);
		return 2;
	}
	return fails ? 1 : 0;
}
