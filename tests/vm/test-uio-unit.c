/* SPDX-License-Identifier: MIT */
/*
 * The parts of the uio backend that run without a device bound to
 * uio_pci_generic: physical addresses of huge pages through
 * /proc/self/pagemap (as root, when huge pages are reserved), the refusals
 * (not root, not a huge page, not resident, not bound, an IOMMU on, no huge
 * pages), and a borrower whose lender is not running. The rest runs in the
 * QEMU guest without an IOMMU (tests/vm/uio-suite.sh).
 */
#include <criterion/criterion.h>
#include <dirent.h>
#include <hugetlbfs.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include "ghost.h"
#include "internal.h"
#include "uio/uio.h"

#define HUGE	(2ul << 20)

/* Run @fn as user nobody in a child; its exit status (0: it asserted what it should). */
static int as_nobody(int (*fn)(void))
{
	pid_t pid = fork();
	int st;

	cr_assert_geq(pid, 0);
	if (!pid)
		_exit(setresgid(65534, 65534, 65534) || setresuid(65534, 65534, 65534) ? 99 : fn());
	cr_assert_eq(waitpid(pid, &st, 0), pid);
	return WIFEXITED(st) ? WEXITSTATUS(st) : 98;
}

static void huge_free(void *p, size_t n)
{
	if (hugetlbfs_find_path_for_size(HUGE))
		free_huge_pages(p);
	else
		munmap(p, n * HUGE);
}

/* Huge pages of @n * 2 MiB, locked, or NULL: through libhugetlbfs where hugetlbfs is mounted. */
static void *huge_alloc(size_t n)
{
	void *p = NULL;

	if (gethugepagesize() != (long)HUGE)
		return NULL;
	if (hugetlbfs_find_path_for_size(HUGE))
		p = get_huge_pages(n * HUGE, GHP_DEFAULT);
	else if ((p = mmap(NULL, n * HUGE, PROT_READ | PROT_WRITE,
			   MAP_PRIVATE | MAP_ANONYMOUS | MAP_HUGETLB, -1, 0)) == MAP_FAILED)
		p = NULL;
	if (p && mlock(p, n * HUGE)) {
		huge_free(p, n);
		p = NULL;
	}
	return p;
}

Test(uio_phys, hugetlb_page_translates)
{
	uint64_t phys, sub;
	char *p;

	if (geteuid())
		cr_skip_test("physical addresses are for root (run as root to test them)");
	p = huge_alloc(1);
	if (!p)
		cr_skip_test("no 2 MiB huge page free (reserve some: /proc/sys/vm/nr_hugepages)");
	memset(p, 0x5a, HUGE);
	cr_assert_eq(sio_uio_phys(p, HUGE, &phys), 0, "%s", sio_errmsg());
	cr_assert_neq(phys, 0);
	cr_assert_eq(phys % HUGE, 0, "a 2 MiB page at physical %#llx", (unsigned long long)phys);
	/* A range inside it: the same frame, offset. */
	cr_assert_eq(sio_uio_phys(p + 8192, 4096, &sub), 0, "%s", sio_errmsg());
	cr_assert_eq(sub, phys + 8192);
	huge_free(p, 1);
}

/* Two huge pages: contiguous (and then each page where the first says), or refused. */
Test(uio_phys, two_pages_contiguous_or_refused)
{
	uint64_t both, a, b;
	char *p;
	int rc;

	if (geteuid())
		cr_skip_test("physical addresses are for root");
	p = huge_alloc(2);
	if (!p)
		cr_skip_test("no two 2 MiB huge pages free");
	memset(p, 0xa5, 2 * HUGE);
	cr_assert_eq(sio_uio_phys(p, HUGE, &a), 0, "%s", sio_errmsg());
	cr_assert_eq(sio_uio_phys(p + HUGE, HUGE, &b), 0, "%s", sio_errmsg());
	rc = sio_uio_phys(p, 2 * HUGE, &both);
	if (b == a + HUGE) {
		cr_assert_eq(rc, 0, "%s", sio_errmsg());
		cr_assert_eq(both, a);
	} else {
		cr_assert_eq(rc, -EOPNOTSUPP);
		cr_assert(strstr(sio_errmsg(), "not physically contiguous"), "%s", sio_errmsg());
		cr_assert(strstr(sio_errmsg(), "after 2048 KiB"), "%s", sio_errmsg());
	}
	huge_free(p, 2);
}

Test(uio_phys, refuses_small_pages)
{
	char *p = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	uint64_t phys;

	if (geteuid())
		cr_skip_test("the frame is hidden from non-root: see refuses_non_root");
	cr_assert_neq(p, MAP_FAILED);
	p[0] = 1;	/* resident (a sanitizer's mlock does nothing) */
	cr_assert_eq(mlock(p, 4096), 0);
	cr_assert_eq(sio_uio_phys(p, 4096, &phys), -EOPNOTSUPP, "%s", sio_errmsg());
	cr_assert(strstr(sio_errmsg(), "not on huge pages"), "%s", sio_errmsg());
	munmap(p, 4096);
}

Test(uio_phys, refuses_what_is_not_resident_or_not_pages)
{
	char *p = mmap(NULL, 8192, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	uint64_t phys;

	cr_assert_neq(p, MAP_FAILED);
	cr_assert_eq(sio_uio_phys(p, 8192, &phys), -EFAULT);	/* never touched */
	cr_assert(strstr(sio_errmsg(), "not resident"), "%s", sio_errmsg());
	cr_assert_eq(sio_uio_phys(p + 1, 4096, &phys), -EINVAL);
	cr_assert_eq(sio_uio_phys(p, 0, &phys), -EINVAL);
	cr_assert(strstr(sio_errmsg(), "not whole pages"), "%s", sio_errmsg());
	munmap(p, 8192);
}

static int phys_as_nobody(void)
{
	static char page[4096] __attribute__((aligned(4096)));
	uint64_t phys;

	page[0] = 1;
	if (sio_uio_phys(page, 4096, &phys) != -EPERM)
		return 1;
	return strstr(sio_errmsg(), "run as root") ? 0 : 2;
}

static int lend_as_nobody(void)
{
	if (sio_uio_lend(NULL, "0000:00:00.0", NULL, NULL) != (sio_pci_iommu_active() ?
							      -EOPNOTSUPP : -EPERM))
		return 1;
	return strstr(sio_errmsg(), sio_pci_iommu_active() ? "use the vfio backend" :
			"needs root") ? 0 : 2;
}

Test(uio_refuse, non_root)
{
	if (geteuid()) {
		cr_assert_eq(phys_as_nobody(), 0, "%s", sio_errmsg());
		cr_assert_eq(lend_as_nobody(), 0, "%s", sio_errmsg());
		return;
	}
	cr_assert_eq(as_nobody(phys_as_nobody), 0, "pagemap read as nobody");
	cr_assert_eq(as_nobody(lend_as_nobody), 0, "uio lend as nobody");
}

/* With an IOMMU on, every lend is refused, pointing at vfio. */
Test(uio_refuse, iommu_on)
{
	if (!sio_pci_iommu_active())
		cr_skip_test("no IOMMU on here (the vm suite's IOMMU guest checks this refusal)");
	cr_assert_eq(sio_uio_host_check(), -EOPNOTSUPP);
	cr_assert(strstr(sio_errmsg(), "smartio vfio lend"), "%s", sio_errmsg());
}

/* A function bound to another driver, an absent one, a bad address. */
Test(uio_refuse, not_bound)
{
	struct dirent *e;
	struct sio_pci_fn fn;
	char bdf[64] = "";
	DIR *d;

	if (geteuid() || sio_pci_iommu_active())
		cr_skip_test("the host checks come first (not root or an IOMMU on)");
	cr_assert_eq(sio_uio_lend(NULL, "00:zz.0", NULL, NULL), -EINVAL);
	cr_assert(strstr(sio_errmsg(), "not a PCI address"), "%s", sio_errmsg());
	cr_assert_eq(sio_uio_lend(NULL, "0000:00:1f.7", NULL, NULL), -ENODEV);
	d = opendir("/sys/bus/pci/devices");
	while (d && (e = readdir(d))) {
		if (e->d_name[0] != '.' && !sio_pci_fn_get(e->d_name, &fn) &&
		    strcmp(fn.driver, "uio_pci_generic")) {
			memcpy(bdf, fn.bdf, sizeof(fn.bdf));
			break;
		}
	}
	if (d)
		closedir(d);
	if (!bdf[0])
		cr_skip_test("no PCI function here that is not bound to uio_pci_generic");
	cr_assert_eq(sio_uio_lend(NULL, bdf, NULL, NULL), -ENODEV);
	cr_assert(strstr(sio_errmsg(), "not to uio_pci_generic"), "%s", sio_errmsg());
	sio_pci_fn_get(bdf, &fn);
	/* a virtio function (the machine's own disk) is never offered for binding */
	if (fn.driver[0] && (fn.vendor == 0x1af4 || (fn.class_code >> 16) == 0xff))
		cr_assert(!strstr(sio_errmsg(), "smartio uio bind") &&
			  strstr(sio_errmsg(), "no function to lend"), "%s", sio_errmsg());
	else
		cr_assert(strstr(sio_errmsg(), "smartio uio bind"), "%s", sio_errmsg());
}

/* No huge pages reserved: refused naming what to do; reserved: their size. */
Test(uio_refuse, no_huge_pages)
{
	char p[128];
	unsigned long n = 0;
	long sz = gethugepagesize(), got = 0;
	FILE *fp;

	if (sz <= 0)
		cr_skip_test("this kernel has no huge pages at all");
	snprintf(p, sizeof(p), "/sys/kernel/mm/hugepages/hugepages-%ldkB/nr_hugepages", sz >> 10);
	fp = fopen(p, "r");
	cr_assert(fp && fscanf(fp, "%lu", &n) == 1, "%s unreadable", p);
	fclose(fp);
	if (n && hugetlbfs_find_path_for_size(sz)) {
		cr_assert_eq(sio_uio_huge_check(&got), 0, "%s", sio_errmsg());
		cr_assert_eq(got, sz);
		return;
	}
	cr_assert_eq(sio_uio_huge_check(&got), -ENOMEM);
	cr_assert(strstr(sio_errmsg(), n ? "no hugetlbfs is mounted" : "no huge pages"), "%s",
		  sio_errmsg());
}

/* A uio device whose lender is not running: the borrower says which command serves it. */
Test(uio_client, no_lender)
{
	struct ghost g;
	struct sio_device_info di;
	struct sio_segment *bar, *mem;
	enum sio_placement placed;
	uint64_t bus;
	void *va;

	ghost_up(&g, SIO_BACKEND_UIO);
	cr_assert_eq(sio_device_info(g.dev, &di), 0);
	cr_assert_eq(di.backend, SIO_BACKEND_UIO);
	cr_assert_eq(sio_device_bar(g.dev, 0, &bar), 0, "%s", sio_errmsg());
	cr_assert_eq(sio_segment_map(bar, &va), -ENODEV);
	cr_assert(strstr(sio_errmsg(), "smartio uio lend"), "%s", sio_errmsg());
	/* one host: hints place memory locally, and only the lender maps it */
	cr_assert_eq(sio_segment_create_hinted(g.dev, 4096, SIO_HINT_DEVICE_READ, &mem, &placed), 0);
	cr_assert_eq(placed, SIO_PLACE_LOCAL);
	cr_assert_eq(sio_device_map(g.dev, mem, &bus), -ENODEV);
	cr_assert(strstr(sio_errmsg(), "uio: cannot reach the lender"), "%s", sio_errmsg());
	sio_segment_close(mem);
	sio_segment_close(bar);
	ghost_down(&g);
}
