/* SPDX-License-Identifier: MIT */
/*
 * nvme-identify: describe an NVMe controller and its namespaces. Goes
 * through the manager when one serves the device; otherwise borrows the
 * device exclusively and brings it up itself.
 */

#include <errno.h>
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
		TOOL_JSON_HELP
		PROG_HELP
		"Exit status: 0 ok, 1 failed, 2 usage error.\n");
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

static int print_json(const struct sio_device_info *di, const struct sio_nvme_ctrl_info *ci,
		      const struct sio_nvme_ns *ns, int nns, const char *via)
{
	struct json_object *o = json_object_new_object(), *a;
	char ver[32];
	int i;

	snprintf(ver, sizeof(ver), "%u.%u.%u", ci->vs >> 16, (ci->vs >> 8) & 0xff, ci->vs & 0xff);
	pj_u64(o, "device", di->id);
	pj_int(o, "lender", di->lender);
	pj_str(o, "name", di->name);
	pj_str(o, "via", via);
	pj_str(o, "model", ci->mn);
	pj_str(o, "serial", ci->sn);
	pj_str(o, "firmware", ci->fr);
	pj_str(o, "version", ver);
	pj_u64(o, "io_queues", ci->io_queues);
	pj_u64(o, "mqes", ci->mqes);
	pj_u64(o, "max_transfer", ci->max_xfer);
	pj_u64(o, "dstrd", ci->dstrd);
	pj_u64(o, "timeout_ms", ci->timeout_ms);
	pj_bool(o, "vwc", ci->vwc);
	pj_u64(o, "cmb_size", ci->cmb.size);
	pj_u64(o, "nn", ci->nn);
	a = pj_arr(o, "namespaces");
	for (i = 0; i < nns; i++) {
		struct json_object *n = pj_push_obj(a);

		pj_u64(n, "nsid", ns[i].nsid);
		pj_bool(n, "active", ns[i].active);
		pj_u64(n, "blocks", ns[i].nsze);
		pj_u64(n, "lba_size", ns[i].lba_size);
	}
	return prog_json_print(stdout, o);
}

#define MAX_NS_SHOWN 1024

int main(int argc, char **argv)
{
	static const struct option lo[] = {
		TOOL_COMMON_LONGOPTS,
		TOOL_JSON_LONGOPT,
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

	tool_init(&t, "nvme-identify", usage);
	while ((c = tool_getopt(&t, argc, argv, lo)) != -1)
		;
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
