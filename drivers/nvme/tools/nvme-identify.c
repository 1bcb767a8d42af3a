/* SPDX-License-Identifier: MIT */
/*
 * nvme-identify: describe an NVMe controller and its namespaces. Goes
 * through the manager when one serves the device; otherwise borrows the
 * device exclusively and brings it up itself.
 */

#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <smartio/nvme.h>
#include "tool.h"

static void usage(FILE *o)
{
	fprintf(o, "usage: nvme-identify [options]\n"
		"Show an NVMe controller and its namespaces.\n\n"
		TOOL_COMMON_HELP
		"  --help\n");
}

static void print_human(const struct sio_device_info *di, const struct sio_nvme_ctrl_info *ci,
			const struct sio_nvme_ns *ns, int nns, const char *via)
{
	int i;

	printf("device %u on node %d (%s), %s\n", di->id, di->lender, di->name, via);
	printf("  model        %s\n", ci->mn);
	printf("  serial       %s\n", ci->sn);
	printf("  firmware     %s\n", ci->fr);
	printf("  version      %u.%u.%u\n", ci->vs >> 16, (ci->vs >> 8) & 0xff, ci->vs & 0xff);
	printf("  queues       %u I/O queue pairs, up to %u entries each\n", ci->io_queues,
	       ci->mqes);
	printf("  max transfer %u KiB\n", ci->max_xfer / 1024);
	printf("  doorbells    stride %u bytes\n", ci->db_stride);
	printf("  timeout      %u ms (CAP.TO)\n", ci->timeout_ms);
	printf("  write cache  %s\n", ci->vwc ? "yes" : "no");
	if (ci->cmb.size)
		printf("  CMB          %llu KiB in BAR%d at 0x%llx%s%s\n",
		       (unsigned long long)ci->cmb.size / 1024, ci->cmb.bar,
		       (unsigned long long)ci->cmb.offset, ci->cmb.sqs ? ", SQs" : "",
		       ci->cmb.cqs ? ", CQs" : "");
	else
		printf("  CMB          none\n");
	printf("  namespaces   %u\n", ci->nn);
	for (i = 0; i < nns; i++) {
		if (!ns[i].active) {
			printf("    nsid %u: inactive\n", ns[i].nsid);
			continue;
		}
		printf("    nsid %u: %llu blocks of %u bytes (%.1f MiB)\n", ns[i].nsid,
		       (unsigned long long)ns[i].nsze, ns[i].lba_size,
		       (double)ns[i].nsze * ns[i].lba_size / 1048576.0);
	}
}

static void print_json(const struct sio_device_info *di, const struct sio_nvme_ctrl_info *ci,
		       const struct sio_nvme_ns *ns, int nns, const char *via)
{
	int i;

	printf("{\"device\": %u, \"lender\": %d, \"via\": ", di->id, di->lender);
	tool_json_str(via);
	printf(", \"model\": ");
	tool_json_str(ci->mn);
	printf(", \"serial\": ");
	tool_json_str(ci->sn);
	printf(", \"firmware\": ");
	tool_json_str(ci->fr);
	printf(", \"version\": \"%u.%u.%u\", \"io_queues\": %u, \"mqes\": %u, "
	       "\"max_transfer\": %u, \"dstrd\": %u, \"timeout_ms\": %u, \"vwc\": %s, "
	       "\"cmb_size\": %llu, \"nn\": %u, \"namespaces\": [",
	       ci->vs >> 16, (ci->vs >> 8) & 0xff, ci->vs & 0xff, ci->io_queues, ci->mqes,
	       ci->max_xfer, ci->dstrd, ci->timeout_ms, ci->vwc ? "true" : "false",
	       (unsigned long long)ci->cmb.size, ci->nn);
	for (i = 0; i < nns; i++)
		printf("%s{\"nsid\": %u, \"active\": %s, \"blocks\": %llu, \"lba_size\": %u}",
		       i ? ", " : "", ns[i].nsid, ns[i].active ? "true" : "false",
		       (unsigned long long)ns[i].nsze, ns[i].lba_size);
	printf("]}\n");
}

#define MAX_NS_SHOWN 1024

int main(int argc, char **argv)
{
	static const struct option lo[] = {
		TOOL_COMMON_LONGOPTS,
		{ "help", no_argument, NULL, 'h' },
		{ 0 }
	};
	struct tool_common t;
	struct sio_fabric *f;
	struct sio_device_info di;
	struct sio_nvme_ctrl_info ci;
	struct sio_nvme_client *cl = NULL;
	struct sio_nvme_ctrl *ctrl = NULL;
	struct sio_device *dev = NULL;
	static struct sio_nvme_ns ns[MAX_NS_SHOWN];
	const char *via;
	int c, ret, i, nns = 0, rc = 1;

	tool_init(&t, "nvme-identify");
	while ((c = tool_getopt(&t, argc, argv, lo)) != -1) {
		if (c == TOOL_OPT_BAD)
			return 2;
		if (c == 'h') {
			usage(stdout);
			return 0;
		}
		usage(stderr);
		return 2;
	}
	if (tool_open(&t, &f))
		return 1;
	ret = sio_nvme_find_device(f, t.device, &di);
	if (ret) {
		fprintf(stderr, "nvme-identify: %s\n", sio_errmsg());
		goto out;
	}
	/* Ask the manager if one serves the device; take it ourselves if not. */
	if (di.borrowers > 0) {
		ret = sio_nvme_client_open(f, di.id, &cl);
		if (ret) {
			fprintf(stderr, "nvme-identify: %s\n", sio_errmsg());
			goto out;
		}
		sio_nvme_client_info(cl, &ci);
		via = "through the manager";
	} else {
		ret = sio_device_borrow(f, di.id, SIO_BORROW_EXCLUSIVE, &dev);
		if (ret) {
			fprintf(stderr, "nvme-identify: device %u is taken: %s\n", di.id,
				sio_errmsg());
			goto out;
		}
		ret = sio_nvme_ctrl_open(dev, NULL, &ctrl);
		if (ret) {
			fprintf(stderr, "nvme-identify: %s\n", sio_errmsg());
			goto out;
		}
		sio_nvme_ctrl_info(ctrl, &ci);
		via = "borrowed exclusively";
	}
	for (i = 1; i <= (int)ci.nn && nns < MAX_NS_SHOWN; i++, nns++) {
		ret = cl ? sio_nvme_client_ns(cl, (uint32_t)i, &ns[nns]) :
			   sio_nvme_ctrl_ns(ctrl, (uint32_t)i, &ns[nns]);
		ns[nns].nsid = (uint32_t)i;
		if (ret == -ENOENT) {
			ns[nns].active = false;
			continue;
		}
		if (ret) {
			fprintf(stderr, "nvme-identify: namespace %d: %s\n", i, sio_errmsg());
			goto out;
		}
	}
	if (t.json)
		print_json(&di, &ci, ns, nns, via);
	else
		print_human(&di, &ci, ns, nns, via);
	rc = 0;
out:
	sio_nvme_client_close(cl);
	sio_nvme_ctrl_close(ctrl);
	sio_device_close(dev);
	sio_fabric_close(f);
	return rc;
}
