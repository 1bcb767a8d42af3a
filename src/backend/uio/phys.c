/* SPDX-License-Identifier: MIT */
/*
 * Physical addresses of this process's memory, for a device without an
 * IOMMU: /proc/self/pagemap gives each page's frame (to CAP_SYS_ADMIN only;
 * others read zeros), /proc/kpageflags says whether that frame is a hugetlb
 * page. Only hugetlb pages are taken: the kernel neither swaps them nor
 * moves them for compaction, where an ordinary page, even locked, may be
 * migrated under the device.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "uio.h"

#define PM_PRESENT	(1ull << 63)
#define PM_PFN_MASK	((1ull << 55) - 1)
#define KPF_HUGE_BIT	(1ull << 17)	/* <linux/kernel-page-flags.h> KPF_HUGE */

/* Read @n 64-bit entries of @path from entry @first. */
static int read_entries(const char *path, uint64_t first, uint64_t *e, uint64_t n)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	size_t want = n * sizeof(*e);
	ssize_t got;

	if (fd < 0) {
		if (errno == EACCES || errno == EPERM)
			return sio__err(EPERM, "uio: cannot read %s: physical addresses are for "
					"root (CAP_SYS_ADMIN) only: run as root", path);
		return sio__err(errno, "uio: cannot open %s: %s", path, strerror(errno));
	}
	got = pread(fd, e, want, (off_t)(first * sizeof(*e)));
	close(fd);
	if (got != (ssize_t)want)
		return sio__err(EIO, "uio: short read of %s at entry %llu", path,
				(unsigned long long)first);
	return 0;
}

/*
 * Are the @n frames from @pfn (mapped at @a, pages of @pg) hugetlb pages?
 * @buf holds @n entries.
 */
static int check_huge(uint64_t pfn, uint64_t n, uint64_t *buf, uintptr_t a, uint64_t pg)
{
	int rc = read_entries("/proc/kpageflags", pfn, buf, n);

	for (uint64_t i = 0; !rc && i < n; i++)
		if (!(buf[i] & KPF_HUGE_BIT))
			rc = sio__err(EOPNOTSUPP, "uio: the memory at %p is not on huge pages: "
				      "without an IOMMU only huge pages stay put for the device; "
				      "reserve some (hugepages=N) and mount hugetlbfs",
				      (void *)(a + i * pg));
	return rc;
}

int sio_uio_phys(const void *va, uint64_t len, uint64_t *phys)
{
	uint64_t pg = (uint64_t)sysconf(_SC_PAGESIZE), a = (uintptr_t)va, n, *e, pfn0, flags;
	int rc;

	if (!len || a % pg || len % pg)
		return sio__err(EINVAL, "uio: %llu bytes at %p are not whole pages",
				(unsigned long long)len, va);
	n = len / pg;
	e = malloc(n * sizeof(*e));
	if (!e)
		return sio__err(ENOMEM, "uio: out of memory");
	rc = read_entries("/proc/self/pagemap", a / pg, e, n);
	pfn0 = rc ? 0 : e[0] & PM_PFN_MASK;
	/* Ordinary memory is told apart first, rather than by its contiguity. */
	if (!rc && e[0] & PM_PRESENT && pfn0)
		rc = check_huge(pfn0, 1, &flags, a, pg);
	for (uint64_t i = 0; !rc && i < n; i++) {
		if (!(e[i] & PM_PRESENT))
			rc = sio__err(EFAULT, "uio: page %p is not resident (lock it first)",
				      (void *)(uintptr_t)(a + i * pg));
		else if (!(e[i] & PM_PFN_MASK))
			rc = sio__err(EPERM, "uio: the kernel hides physical addresses from this "
				      "process (/proc/self/pagemap gives frame 0): run as root");
		else if ((e[i] & PM_PFN_MASK) != pfn0 + i)
			rc = sio__err(EOPNOTSUPP, "uio: %llu bytes at %p are not physically "
				      "contiguous (a break after %llu KiB): without an IOMMU a "
				      "segment for the device must fit in one huge page",
				      (unsigned long long)len, va, (unsigned long long)(i * pg >> 10));
	}
	/* Contiguous: the frames' flags are one run of /proc/kpageflags. */
	if (!rc)
		rc = check_huge(pfn0, n, e, a, pg);
	if (!rc)
		*phys = pfn0 * pg;
	free(e);
	return rc;
}
