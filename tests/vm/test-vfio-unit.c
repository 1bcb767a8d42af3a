/* SPDX-License-Identifier: MIT */
/*
 * The parts of the vfio backend that run without an IOMMU: the IOVA
 * allocator, PCI address parsing, the errors for functions that cannot be
 * opened, and a borrower whose lender is not running. The rest runs in the
 * QEMU guest (tests/vm/run-vm.sh).
 */
#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "ghost.h"
#include "internal.h"
#include "vfio/vfio.h"

static const struct sio_iova_range x86[] = {
	{ 0, 0xfedfffff },		/* below the MSI window */
	{ 0xfef00000, (1ull << 39) - 1 },
};

Test(vfio_iova, keeps_to_ranges_and_skips_page_zero)
{
	struct sio_iova_alloc a;
	uint64_t io;

	sio_iova_init(&a, x86, 2);
	cr_assert_eq(sio_iova_get(&a, 4096, 4096, &io), 0);
	cr_assert_geq(io, 1u << 20, "IOVA %#lx is in the first megabyte", (unsigned long)io);
	cr_assert_eq(io, 0x100000);
	/* Fill up to the MSI hole; the next one must land past it. */
	cr_assert_eq(sio_iova_get(&a, 0xfee00000 - 0x101000, 4096, &io), 0);
	cr_assert_eq(io, 0x101000);
	cr_assert_eq(sio_iova_get(&a, 2 << 20, 2 << 20, &io), 0);
	cr_assert_geq(io, 0xfef00000ull);
	cr_assert_eq(io % (2 << 20), 0);
	sio_iova_fini(&a);
}

Test(vfio_iova, aligns_and_reuses_freed_space)
{
	struct sio_iova_alloc a;
	uint64_t x, y, z;

	sio_iova_init(&a, x86, 2);
	cr_assert_eq(sio_iova_get(&a, 4096, 4096, &x), 0);
	cr_assert_eq(sio_iova_get(&a, 2 << 20, 2 << 20, &y), 0);
	cr_assert_eq(y % (2 << 20), 0);
	cr_assert(y >= x + 4096);
	cr_assert_eq(sio_iova_put(&a, x), 0);
	cr_assert_eq(sio_iova_get(&a, 4096, 4096, &z), 0);
	cr_assert_eq(z, x, "freed space is used first");
	cr_assert_eq(sio_iova_put(&a, x + 4096), -ENOENT);
	cr_assert(strstr(sio_errmsg(), "not allocated"), "%s", sio_errmsg());
	sio_iova_fini(&a);
}

/* A 28-bit device (QEMU's edu): every extent ends at or below 2^28 - 1, and
 * what cannot fit under the mask is refused naming it. */
Test(vfio_iova, keeps_under_a_dma_mask)
{
	const uint64_t mask = (1ull << 28) - 1;
	struct sio_iova_alloc a;
	uint64_t io;

	sio_iova_init(&a, x86, 2);
	cr_assert_eq(sio_iova_get(&a, 0x8000000, 4096, &io), 0);	/* 128 MiB, no mask */
	cr_assert_eq(sio_iova_get_below(&a, 64 << 20, 4096, mask, &io), 0);
	cr_assert_leq(io + (64 << 20) - 1, mask, "extent 0x%lx+64M passes the mask", (unsigned long)io);
	cr_assert_eq(sio_iova_get_below(&a, 128 << 20, 4096, mask, &io), -ERANGE);
	cr_assert(strstr(sio_errmsg(), "DMA mask 0xfffffff (28 bits)"), "%s", sio_errmsg());
	cr_assert_eq(sio_iova_get(&a, 128 << 20, 4096, &io), 0, "without the mask it fits");
	cr_assert_gt(io + (128 << 20) - 1, mask, "it ends beyond the mask");
	sio_iova_fini(&a);
}

Test(vfio_iova, full_range_says_so)
{
	struct sio_iova_range small = { 0x100000, 0x10ffff };	/* 64 KiB */
	struct sio_iova_alloc a;
	uint64_t io;

	sio_iova_init(&a, &small, 1);
	for (int i = 0; i < 16; i++)
		cr_assert_eq(sio_iova_get(&a, 4096, 4096, &io), 0);
	cr_assert_eq(sio_iova_get(&a, 4096, 4096, &io), -ENOSPC);
	cr_assert(strstr(sio_errmsg(), "IOVA range"), "%s", sio_errmsg());
	cr_assert_eq(sio_iova_get(&a, 4096, 3000, &io), -EINVAL);
	sio_iova_fini(&a);
}

Test(vfio_pci, parses_and_normalises_addresses)
{
	char b[16];

	cr_assert_eq(sio_pci_bdf_parse("4:00.0", b), 0);
	cr_assert_str_eq(b, "0000:04:00.0");
	cr_assert_eq(sio_pci_bdf_parse("0001:AF:1f.7", b), 0);
	cr_assert_str_eq(b, "0001:af:1f.7");
	cr_assert_eq(sio_pci_bdf_parse("00:20.0", b), -EINVAL, "device 0x20 is out of range");
	cr_assert_eq(sio_pci_bdf_parse("00:01.8", b), -EINVAL);
	cr_assert_eq(sio_pci_bdf_parse("00:01.0x", b), -EINVAL);
	cr_assert(strstr(sio_errmsg(), "not a PCI address"), "%s", sio_errmsg());
}

Test(vfio_open, names_what_is_wrong)
{
	struct sio_vfio_dev d;

	cr_assert_eq(sio_vfio_open("ffff:ff:1f.7", SIO_VFIO_AUTO, &d), -ENODEV);
	cr_assert(strstr(sio_errmsg(), "no PCI function ffff:ff:1f.7"), "%s", sio_errmsg());
	cr_assert_eq(sio_vfio_open("bogus", SIO_VFIO_AUTO, &d), -EINVAL);
}

static bool iommu_active(void)
{
	return access("/sys/kernel/iommu_groups/0", F_OK) == 0;
}

Test(vfio_open, a_function_on_another_driver_is_refused)
{
	struct sio_pci_fn fn[64];
	int n = sio_pci_scan(0, 0, fn, 64);
	struct sio_vfio_dev d;

	if (n <= 0)
		cr_skip_test("no PCI functions visible here");
	for (int i = 0; i < n && i < 64; i++) {
		if (!strcmp(fn[i].driver, "vfio-pci"))
			continue;
		cr_assert_eq(sio_vfio_open(fn[i].bdf, SIO_VFIO_AUTO, &d), -ENODEV);
		if (iommu_active()) {
			cr_assert(strstr(sio_errmsg(), "not to vfio-pci"), "%s", sio_errmsg());
			cr_assert(strstr(sio_errmsg(), "smartio vfio bind"), "%s", sio_errmsg());
		} else {
			cr_assert(strstr(sio_errmsg(), "no IOMMU is active"), "%s", sio_errmsg());
			cr_assert(strstr(sio_errmsg(), "intel_iommu=on"), "%s", sio_errmsg());
		}
		return;
	}
	cr_skip_test("every PCI function here is bound to vfio-pci");
}

/* A vfio device whose lender is not running: clear errors, no crash. */
Test(vfio_client, no_lender)
{
	struct ghost g;
	struct sio_device *dev;
	struct sio_segment *bar, *mem;
	enum sio_placement placed;
	uint64_t bus;
	void *va;

	ghost_up(&g, SIO_BACKEND_VFIO);
	dev = g.dev;
	cr_assert_eq(sio_device_bar(dev, 0, &bar), 0, "%s", sio_errmsg());
	cr_assert_eq(sio_segment_map(bar, &va), -ENODEV);
	cr_assert(strstr(sio_errmsg(), "smartio vfio lend"), "%s", sio_errmsg());
	cr_assert_eq(sio_segment_create(g.f, 0, 4096, 0, &mem), 0);
	cr_assert_eq(sio_device_map(dev, mem, &bus), -ENODEV);
	sio_segment_close(mem);
	/* what the vfio backend does not have says so, naming it */
	cr_assert_eq(sio_device_restrict(dev, 0, 4096), -EOPNOTSUPP);
	cr_assert(strstr(sio_errmsg(), "vfio lender"), "%s", sio_errmsg());
	cr_assert_eq(sio_device_map_mcast(dev, 0, &bus), -ENOTSUP);
	cr_assert(strstr(sio_errmsg(), "vfio backend"), "%s", sio_errmsg());
	/* one host: memory for it is local, whatever the hints say */
	cr_assert_eq(sio_segment_create_hinted(dev, 4096, SIO_HINT_DEVICE_READ, &mem, &placed), 0);
	cr_assert_eq(placed, SIO_PLACE_LOCAL);
	sio_segment_close(mem);
	sio_segment_close(bar);
	ghost_down(&g);
}
