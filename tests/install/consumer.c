/* SPDX-License-Identifier: MIT */
/*
 * A program built outside the tree, against the installed headers and .pc
 * files only (tests/install/consumer.sh): it creates a fabric, joins it,
 * asks the NVMe driver for a controller that is not there, and removes the
 * fabric. Each call goes through the installed shared libraries.
 * Usage: consumer FABRIC
 */

#include <errno.h>
#include <stdio.h>
#include <smartio/nvme.h>
#ifdef CONSUMER_GPU
#include <smartio/gpu.h>
#endif

int main(int argc, char **argv)
{
	struct sio_fabric_config cfg = { .nodes = 2 };
	struct sio_nvme_client *cl = NULL;
	struct sio_fabric *f;
	int ret, status = 1;

	if (argc != 2) {
		fprintf(stderr, "usage: %s FABRIC\n", argv[0]);
		return 2;
	}
	ret = sio_fabric_create(argv[1], &cfg);
	if (ret < 0) {
		fprintf(stderr, "sio_fabric_create: %s\n", sio_errmsg());
		return 1;
	}
	ret = sio_fabric_open(argv[1], 1, &f);
	if (ret < 0) {
		fprintf(stderr, "sio_fabric_open: %s\n", sio_errmsg());
		goto out;
	}
	printf("joined fabric %s as node %d\n", argv[1], sio_fabric_node_id(f));

	/* No controller was lent: the driver must say so, not crash. */
	ret = sio_nvme_client_open(f, SIO_DEVICE_ANY, &cl);
	if (ret != -ENODEV && ret != -ENOENT) {
		fprintf(stderr, "sio_nvme_client_open on an empty fabric: %d (%s)\n", ret,
			sio_errmsg());
		sio_nvme_client_close(cl);
		goto close;
	}
	printf("no NVMe controller: %s\n", sio_errmsg());
#ifdef CONSUMER_GPU
	ret = sio_gpu_count();
	printf("sio_gpu_count: %d\n", ret);
#endif
	status = 0;
close:
	sio_fabric_close(f);
out:
	if (sio_fabric_destroy(argv[1]) < 0) {
		fprintf(stderr, "sio_fabric_destroy: %s\n", sio_errmsg());
		status = 1;
	}
	return status;
}
