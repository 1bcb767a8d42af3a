/* SPDX-License-Identifier: MIT */
/*
 * The NVMe manager's mailbox is shared memory too: a client refuses one
 * that is too small or whose header would give it a bad stride, page size,
 * queue count or wait, with a message, before using any of it. The
 * "manager" here is a segment written by hand beside a device model.
 */
#include <string.h>
#include <sys/wait.h>
#include <smartio/nvme/client.h>
#include "common.h"
#include "mailbox.h"

static struct sio_nvme_mbox_hdr good(uint32_t dev)
{
	return (struct sio_nvme_mbox_hdr){ .magic = SIO_NVME_MBOX_MAGIC, .version = SIO_NVME_MBOX_VERSION,
					  .mgr_pid = getpid(), .device = dev, .serving = 1,
					  .nslots = SIO_NVME_MBOX_SLOTS, .ctrl = { .mqes = 1024,
					  .page_size = 4096, .max_xfer = 1 << 17, .io_queues = 8, .nn = 1,
					  .timeout_ms = 500, .cmb_bar = -1 } };
}

Test(mailbox, client_refuses_a_bad_header)
{
	struct sio_fabric_config c = { .nodes = 2 };
	const char *name = test_fabric("mbox", &c);
	struct sio_fabric *l = join(name, 0), *h = join(name, 1);
	struct sio_devreg *reg = make_device(l, false);
	uint32_t dev = sio_devreg_id(reg);
	struct sio_nvme_client *cl;
	struct sio_segment *seg;
	struct sio_nvme_mbox *mb;
	void *va;

	cr_assert_eq(sio_segment_create(l, SIO_NVME_MBOX_SEGID(dev), 4096, 0, &seg), 0);
	cr_assert_eq(sio_nvme_client_open(h, dev, &cl), -EPROTO);
	cr_assert(strstr(sio_errmsg(), "not a mailbox"), "%s", sio_errmsg());
	sio_segment_close(seg);

	cr_assert_eq(sio_segment_create(l, SIO_NVME_MBOX_SEGID(dev), SIO_NVME_MBOX_SIZE, 0, &seg), 0);
	cr_assert_eq(sio_segment_map(seg, &va), 0);
	mb = va;
	static const char *why[] = { "doorbell stride", "page size", "queue size limit",
				     "I/O queue count", "transfer limit", "timeout",
				     "controller memory buffer" };
	for (int i = 0; i < 7; i++) {
		struct sio_nvme_mbox_hdr x = good(dev);
		switch (i) {
		case 0: x.ctrl.dstrd = 40; break;	/* 4 << 40: an undefined shift */
		case 1: x.ctrl.page_size = 0; break;
		case 2: x.ctrl.mqes = 0; break;
		case 3: x.ctrl.io_queues = 70000; break;
		case 4: x.ctrl.max_xfer = 0; break;
		case 5: x.ctrl.timeout_ms = 0xffffffff; break;	/* 49 days per wait */
		case 6: x.ctrl.cmb_size = 1 << 20; x.ctrl.cmb_bar = 9; break;
		}
		memcpy((void *)&mb->h, &x, sizeof(x));
		cr_assert_eq(sio_nvme_client_open(h, dev, &cl), -EPROTO, "%s: %s", why[i],
			     sio_errmsg());
		cr_assert(strstr(sio_errmsg(), why[i]), "%s", sio_errmsg());
	}
	/* the good header passes: the client gets as far as asking the manager,
	 * which is a dead pid here, so it is told at once */
	struct sio_nvme_mbox_hdr x = good(dev);
	pid_t gone = fork();
	if (gone == 0)
		_exit(0);
	waitpid(gone, NULL, 0);
	x.mgr_pid = gone;
	memcpy((void *)&mb->h, &x, sizeof(x));
	cr_assert_eq(sio_nvme_client_open(h, dev, &cl), -ENOTCONN, "%s", sio_errmsg());
	sio_segment_close(seg);
	sio_devreg_close(reg);
	sio_fabric_close(h);
	sio_fabric_close(l);
	sio_fabric_destroy(name);
}
