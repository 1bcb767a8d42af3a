/* SPDX-License-Identifier: MIT */
/*
 * GPU driver checks that need no GPU: the DMA plugin's argument checks and
 * its path from sim DMA, placement, and the argument checks of the host
 * API. Where a GPU is present the same calls must succeed instead.
 */

#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <criterion/criterion.h>
#include <smartio/gpu.h>
#include "internal.h"

static const struct sio_gpu_dma_ops *plugin(void)
{
	const char *p = getenv("SMARTIO_GPU_PLUGIN");
	void *h;
	const struct sio_gpu_dma_ops *ops;

	cr_assert(p && *p, "SMARTIO_GPU_PLUGIN is not set");
	h = dlopen(p, RTLD_NOW | RTLD_LOCAL);
	cr_assert(h, "dlopen %s: %s", p, dlerror());
	ops = dlsym(h, SIO_GPU_PLUGIN_SYMBOL);
	cr_assert(ops && ops->copy, "plugin exports no %s", SIO_GPU_PLUGIN_SYMBOL);
	return ops;
}

Test(gpu_plugin, argument_checks)
{
	const struct sio_gpu_dma_ops *ops = plugin();
	struct reg_seg s = { .used = 1, .id = 7, .size = 8192, .gen = 1, .kind = SIO_SEG_GPU };
	char buf[64];

	cr_expect_eq(ops->copy(NULL, 0, buf, 8, true), -EINVAL);
	cr_expect_eq(ops->copy(&s, 0, NULL, 8, true), -EINVAL);
	cr_expect_eq(ops->copy(&s, 8192, buf, 1, false), -ERANGE);
	cr_expect_eq(ops->copy(&s, 8190, buf, 8, false), -ERANGE);
	cr_expect_eq(ops->copy(&s, UINT64_MAX, buf, 8, false), -ERANGE);
	cr_expect_eq(ops->copy(&s, 0, buf, 0, true), 0);
	s.kind = SIO_SEG_RAM;
	cr_expect_eq(ops->copy(&s, 0, buf, 8, true), -EINVAL, "a RAM segment is not GPU memory");
	s.kind = SIO_SEG_GPU;
	s.gpu = -1;
	cr_expect_eq(ops->copy(&s, 0, buf, 8, true), -EINVAL);
	s.gpu = 4096;
	cr_expect_eq(ops->copy(&s, 0, buf, 8, true), -ENODEV, "GPU 4096 does not exist");
}

Test(gpu_placement, device_adjacent_only_on_the_lender)
{
	cr_expect_eq(sio_gpu_placement(0, 0), SIO_PLACE_DEVICE);
	cr_expect_eq(sio_gpu_placement(3, 3), SIO_PLACE_DEVICE);
	cr_expect_eq(sio_gpu_placement(1, 0), SIO_PLACE_LOCAL);
	cr_expect_eq(sio_gpu_placement(-1, 0), -EINVAL);
	cr_expect_eq(sio_gpu_placement(0, -2), -EINVAL);
}

Test(gpu_api, bad_arguments_are_refused)
{
	struct sio_gpu_queue_desc d = { 0 };
	struct sio_gpu_queue *q;
	struct sio_gpu_mem *m;

	cr_expect_eq(sio_gpu_mem_create(NULL, 4096, 0, &m), -EINVAL);
	cr_expect_eq(sio_gpu_queue_alloc(NULL, &q), -EINVAL);
	d.depth = 3;
	cr_expect_eq(sio_gpu_queue_alloc(&d, &q), -EINVAL);
	cr_expect(strstr(sio_gpu_errmsg(), "power of two"), "message: %s", sio_gpu_errmsg());
	d.depth = 16;
	cr_expect_eq(sio_gpu_queue_alloc(&d, &q), -EINVAL, "no memory given");
	cr_expect_eq(sio_gpu_segment_create_hinted(NULL, 4096, SIO_HINT_DEVICE_READ, 0, &m, NULL),
		     -EINVAL);
	cr_expect_eq(sio_gpu_run_job(NULL, 1, NULL, NULL), -EINVAL);
	cr_expect_eq(sio_gpu_queue_failed(NULL), -EINVAL);
}

Test(gpu_api, checksum_host)
{
	uint64_t w[4] = { 1, 2, 3, 4 };

	/* (1^0) + (2^1) + (3^2) + (4^3) */
	cr_expect_eq(sio_gpu_checksum_host(w, sizeof(w)), 1 + 3 + 1 + 7);
	cr_expect_eq(sio_gpu_checksum_host(w, 0), 0);
}

struct fab {
	char name[64];
	struct sio_fabric *f;
	struct sio_devreg *reg;
	struct sio_device *dev;
};

static void fab_up(struct fab *x)
{
	struct sio_fabric_config c = { .nodes = 2, .topology = SIO_TOPO_SWITCH };
	struct sio_device_desc desc = { .class_code = 0x010802, .vendor = 0x1b36, .device = 0x10,
					.nbars = 1, .bar_size = { 16384 }, .name = "gpu-test" };

	snprintf(x->name, sizeof(x->name), "gpuhost%d", (int)getpid());
	sio_fabric_destroy(x->name);
	cr_assert_eq(sio_fabric_create(x->name, &c), 0, "%s", sio_errmsg());
	cr_assert_eq(sio_fabric_open(x->name, 0, &x->f), 0, "%s", sio_errmsg());
	cr_assert_eq(sio_device_register(x->f, &desc, &x->reg), 0, "%s", sio_errmsg());
	cr_assert_eq(sio_device_borrow(x->f, sio_devreg_id(x->reg), SIO_BORROW_SHARED, &x->dev), 0,
		     "%s", sio_errmsg());
}

static void fab_down(struct fab *x)
{
	sio_device_return(x->dev);
	sio_device_unregister(x->reg);
	sio_fabric_close(x->f);
	sio_fabric_destroy(x->name);
}

Test(gpu_hinted, placement_and_refusals)
{
	struct sio_segment_info si;
	struct sio_gpu_mem *m = NULL;
	enum sio_placement placed = SIO_PLACE_LENDER;
	struct fab x;
	int ret;

	fab_up(&x);
	cr_expect_eq(sio_gpu_segment_create_hinted(x.dev, 65536, 0, 0, &m, &placed), -EINVAL);
	cr_expect_eq(sio_gpu_segment_create_hinted(x.dev, 65536, SIO_HINT_HOST_READ |
						   SIO_HINT_DEVICE_WRITE, 0, &m, &placed),
		     -EINVAL, "a CPU-polled CQ does not belong in GPU memory");
	ret = sio_gpu_segment_create_hinted(x.dev, 65536, SIO_HINT_DEVICE_READ |
					    SIO_HINT_HOST_WRITE, 0, &m, &placed);
	if (sio_gpu_count() < 0) {
		cr_expect_eq(ret, -ENODEV);
		cr_expect(strstr(sio_gpu_errmsg(), "no GPU"),
			  "message: %s", sio_gpu_errmsg());
	} else {
		cr_assert_eq(ret, 0, "%s", sio_gpu_errmsg());
		cr_expect_eq(placed, SIO_PLACE_DEVICE, "node 0 lends the device");
		cr_assert_eq(sio_segment_info(m->seg, &si), 0);
		cr_expect_eq(si.kind, SIO_SEG_GPU);
		sio_gpu_mem_free(m);
	}
	fab_down(&x);
}

/* Device DMA into a GPU segment goes through the plugin; without a GPU it
 * fails cleanly, and there is never a host pointer. */
Test(gpu_dma, through_the_plugin)
{
	unsigned char handle[64] = { 0 };
	struct sio_segment_info si;
	struct sio_segment *seg;
	uint64_t bus;
	void *p;
	char buf[512];
	struct fab x;
	int ret;

	fab_up(&x);
	cr_assert_eq(sio__segment_create_gpu(x.f, 65536, 4095, handle, sizeof(handle), &seg), 0,
		     "%s", sio_errmsg());
	cr_assert_eq(sio_segment_info(seg, &si), 0);
	cr_expect_eq(si.kind, SIO_SEG_GPU);
	cr_assert_eq(sio_device_map(x.dev, seg, &bus), 0, "%s", sio_errmsg());
	cr_expect_eq(sio_dma_ptr(x.reg, bus, 512, true, &p), -EOPNOTSUPP);
	memset(buf, 0x5a, sizeof(buf));
	/* GPU 4095 exists nowhere: the plugin is reached and says so */
	ret = sio_dma_write(x.reg, bus, buf, sizeof(buf));
	cr_expect_eq(ret, -ENODEV, "write to a GPU that is not there: %d (%s)", ret, sio_errmsg());
	ret = sio_dma_read(x.reg, bus, buf, sizeof(buf));
	cr_expect_eq(ret, -ENODEV, "read from a GPU that is not there: %d (%s)", ret, sio_errmsg());
	sio_device_unmap(x.dev, seg);
	sio_segment_remove(seg);
	fab_down(&x);
}
