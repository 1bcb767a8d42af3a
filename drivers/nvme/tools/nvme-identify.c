/* SPDX-License-Identifier: MIT */
/*
 * nvme-identify: describe an NVMe controller and its namespaces, read its
 * SMART / Health, Error Information and Firmware Slot logs and its
 * features, as nvme-cli's id-ctrl, smart-log, error-log, fw-log and
 * get-feature do (JSON with nvme-cli's keys, or the raw structure), a
 * namespace as id-ns does, and an admin command as admin-passthru. Goes
 * through the manager when one serves the device; otherwise borrows the
 * device exclusively and brings it up itself.
 */

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <smartio/nvme.h>
#include "nvme-pages.h"
#include "tool.h"

#define MAX_NS_SHOWN	1024
#define BUF_SIZE	8192	/* a log page read at once: two PRP entries */

enum what { W_ID, W_SMART, W_ERROR, W_FW, W_FEATURES, W_NS, W_PASSTHRU };

/* nvme-cli's admin-passthru options */
struct passthru {
	uint8_t opcode;
	uint32_t nsid, cdw[6];	/* cdw10..cdw15 */
	uint32_t data_len;
	bool read, write;
	const char *input;
};

struct opts {
	enum what what;
	bool raw, human;
	uint32_t nsid;		/* --namespace: id-ns, namespace-scoped features */
	struct passthru pt;
};

/* The controller, through its manager or taken here. */
struct target {
	struct sio_fabric *f;
	struct sio_device_info di;
	struct sio_nvme_ctrl_info ci;
	struct sio_nvme_client *cl;	/* through the manager, or */
	struct sio_nvme_ctrl *ctrl;	/* brought up here, with */
	struct sio_device *dev;
	struct sio_segment *seg;	/* a buffer the controller writes */
	void *buf;
	uint64_t bus;
	const char *via;
};

static void usage(FILE *o)
{
	fprintf(o, "usage: nvme-identify [options]\n"
		"Show an NVMe controller and its namespaces, a log page or its features.\n\n"
		TOOL_COMMON_HELP
		"  --log smart|error|fw  a log page: SMART / Health Information, Error\n"
		"                    Information, Firmware Slot Information\n"
		"  --features        the current value of each feature (a namespace-scoped\n"
		"                    one of --namespace N, default 1)\n"
		"  -H, --human-readable  with --features: each value field by field, as\n"
		"                    nvme get-feature -H\n"
		"  --namespace N     Identify Namespace N, as nvme-cli's id-ns (text, --json)\n"
		"  --admin-passthru  send one admin command, as nvme-cli's admin-passthru:\n"
		"    --opcode OP       its opcode (0x06: Identify)\n"
		"    --namespace-id N  its NSID (default 0)\n"
		"    --cdw10 V .. --cdw15 V  its command dwords (default 0)\n"
		"    --data-len BYTES  data to move, at most 8192 (default 0)\n"
		"    -r, --read        the controller writes the data (shown as hex, or -b)\n"
		"    -w, --write       the controller reads the data, from --input-file FILE\n"
		"                    It needs the controller to itself: not while a manager\n"
		"                    serves the device.\n"
		"  -b, --raw         the structure as the controller gave it, binary, on stdout\n"
		"                    (Identify Controller or Namespace, the --log page, or\n"
		"                    the passthru command's data)\n"
		TOOL_JSON_HELP
		"                    (the keys nvme-cli's `-o json` uses: id-ctrl, id-ns,\n"
		"                    smart-log, error-log, fw-log; what smartio adds is under\n"
		"                    \"smartio\")\n"
		PROG_HELP
		"Exit status: 0 ok, 1 failed, 2 usage error.\n");
}

/* Borrow the device exclusively and bring the controller up here. */
static int take(struct target *t)
{
	int ret = sio_device_borrow(t->f, t->di.id, SIO_BORROW_EXCLUSIVE, &t->dev);

	if (ret)
		return prog_fail("device %u is taken: %s", t->di.id, sio_errmsg());
	if (sio_nvme_ctrl_open(t->dev, NULL, &t->ctrl) || sio_nvme_ctrl_info(t->ctrl, &t->ci))
		return prog_fail("%s", sio_errmsg());
	if (sio_segment_create(t->f, 0, BUF_SIZE, 0, &t->seg) || sio_segment_map(t->seg, &t->buf) ||
	    sio_device_map(t->dev, t->seg, &t->bus))
		return prog_fail("a buffer for the controller: %s", sio_errmsg());
	t->via = "borrowed exclusively";
	return 0;
}

static int open_target(struct tool_common *tc, struct target *t)
{
	if (tool_open(tc, &t->f))
		return PROG_FAIL;
	if (sio_nvme_find_device(t->f, tc->device, &t->di))
		return prog_fail("%s", sio_errmsg());
	/* Ask the manager if one serves the device; take it ourselves if not. */
	if (t->di.borrowers == 0)
		return take(t);
	if (sio_nvme_client_open(t->f, t->di.id, &t->cl) || sio_nvme_client_info(t->cl, &t->ci))
		return prog_fail("%s", sio_errmsg());
	t->via = "through the manager";
	return 0;
}

static void close_target(struct target *t)
{
	sio_nvme_client_close(t->cl);
	if (t->seg)
		sio_segment_close(t->seg);
	sio_nvme_ctrl_close(t->ctrl);
	sio_device_close(t->dev);
	sio_fabric_close(t->f);
}

/* Get Log Page @lid (@len bytes) into @out. */
static int get_log(struct target *t, uint8_t lid, void *out, uint32_t len)
{
	uint16_t st = 0;

	if (t->cl) {
		if (sio_nvme_client_get_log(t->cl, lid, 0xffffffffu, out, len))
			return prog_fail("log page 0x%02x: %s", lid, sio_errmsg());
		return 0;
	}
	if (sio_nvme_ctrl_get_log(t->ctrl, lid, 0xffffffffu, t->bus, len, &st))
		return prog_fail("log page 0x%02x: %s", lid, st ? sio_nvme_status_str(st) :
				 sio_errmsg());
	memcpy(out, t->buf, len);
	return 0;
}

/* Get Features; a namespace-scoped feature of namespace @nsid. */
static int get_feature(struct target *t, uint8_t fid, uint32_t nsid, uint32_t *val)
{
	uint16_t st = 0;

	if (!sio_nvme_feat_ns_scoped(fid))
		nsid = 0;
	if (t->cl)
		return sio_nvme_client_get_features_ns(t->cl, fid, nsid, 0, val);
	return sio_nvme_ctrl_get_features_ns(t->ctrl, fid, nsid, 0, val, &st);
}

static int id_ctrl(struct target *t, struct nvme_id_ctrl *out)
{
	const struct nvme_id_ctrl *id;

	if (t->cl) {
		if (sio_nvme_client_identify(t->cl, NVME_IDENTIFY_CNS_CTRL, 0, out))
			return prog_fail("Identify Controller: %s", sio_errmsg());
		return 0;
	}
	id = sio_nvme_ctrl_id(t->ctrl);
	if (!id)
		return prog_fail("Identify Controller: %s", sio_errmsg());
	memcpy(out, id, sizeof(*out));
	return 0;
}

static int read_namespaces(struct target *t, struct sio_nvme_ns *ns, int *nns)
{
	int ret;

	*nns = 0;
	for (uint32_t i = 1; i <= t->ci.nn && *nns < MAX_NS_SHOWN; i++, (*nns)++) {
		ret = t->cl ? sio_nvme_client_ns(t->cl, i, &ns[*nns]) :
			      sio_nvme_ctrl_ns(t->ctrl, i, &ns[*nns]);
		ns[*nns].nsid = i;
		if (ret == -ENOENT)
			ns[*nns].active = false;
		else if (ret)
			return prog_fail("namespace %u: %s", i, sio_errmsg());
	}
	return 0;
}

/* Volatile Write Cache: present (Identify) and enabled (the feature). */
static const char *write_cache(struct target *t)
{
	uint32_t v;

	if (!t->ci.vwc)
		return "none";
	if (get_feature(t, NVME_FEAT_FID_VOLATILE_WC, 0, &v))
		return "present";
	return v & 1 ? "present, enabled" : "present, disabled";
}

static void print_human(struct target *t, const struct sio_nvme_ns *ns, int nns)
{
	const struct sio_nvme_ctrl_info *ci = &t->ci;

	printf("device %u on node %d (%s), %s\n", t->di.id, t->di.lender, t->di.name, t->via);
	printf("  model        %s\n", ci->mn);
	printf("  serial       %s\n", ci->sn);
	printf("  firmware     %s\n", ci->fr);
	printf("  version      %u.%u.%u\n", ci->vs >> 16, (ci->vs >> 8) & 0xff, ci->vs & 0xff);
	printf("  queues       %u I/O queue pairs, up to %u entries each\n", ci->io_queues,
	       ci->mqes);
	printf("  max transfer %u KiB\n", ci->max_xfer / 1024);
	printf("  doorbells    stride %u bytes\n", ci->db_stride);
	printf("  timeout      %u ms (CAP.TO)\n", ci->timeout_ms);
	printf("  write cache  %s\n", write_cache(t));
	if (ci->cmb.size)
		printf("  CMB          %llu KiB in BAR%d at 0x%llx%s%s\n",
		       (unsigned long long)ci->cmb.size / 1024, ci->cmb.bar,
		       (unsigned long long)ci->cmb.offset, ci->cmb.sqs ? ", SQs" : "",
		       ci->cmb.cqs ? ", CQs" : "");
	else
		printf("  CMB          none\n");
	printf("  namespaces   %u\n", ci->nn);
	for (int i = 0; i < nns; i++) {
		if (!ns[i].active) {
			printf("    nsid %u: inactive\n", ns[i].nsid);
			continue;
		}
		printf("    nsid %u: %llu blocks of %u bytes (%.1f MiB)\n", ns[i].nsid,
		       (unsigned long long)ns[i].nsze, ns[i].lba_size,
		       (double)ns[i].nsze * ns[i].lba_size / 1048576.0);
	}
}

/* What smartio knows beyond Identify Controller: the "smartio" member. */
static struct json_object *smartio_json(struct target *t, const struct sio_nvme_ns *ns, int nns)
{
	const struct sio_nvme_ctrl_info *ci = &t->ci;
	struct json_object *o = json_object_new_object(), *a;
	char ver[32];

	snprintf(ver, sizeof(ver), "%u.%u.%u", ci->vs >> 16, (ci->vs >> 8) & 0xff, ci->vs & 0xff);
	pj_u64(o, "device", t->di.id);
	pj_int(o, "lender", t->di.lender);
	pj_str(o, "name", t->di.name);
	pj_str(o, "via", t->via);
	pj_str(o, "version", ver);
	pj_u64(o, "io_queues", ci->io_queues);
	pj_u64(o, "mqes", ci->mqes);
	pj_u64(o, "max_transfer", ci->max_xfer);
	pj_u64(o, "db_stride", ci->db_stride);
	pj_u64(o, "timeout_ms", ci->timeout_ms);
	pj_str(o, "write_cache", write_cache(t));
	pj_u64(o, "cmb_size", ci->cmb.size);
	a = pj_arr(o, "namespaces");
	for (int i = 0; i < nns; i++) {
		struct json_object *n = pj_push_obj(a);

		pj_u64(n, "nsid", ns[i].nsid);
		pj_bool(n, "active", ns[i].active);
		pj_u64(n, "blocks", ns[i].nsze);
		pj_u64(n, "lba_size", ns[i].lba_size);
	}
	return o;
}

static int write_raw(const void *p, size_t len)
{
	if (fwrite(p, 1, len, stdout) != len || fflush(stdout))
		return prog_fail("cannot write the raw structure: %s", strerror(errno));
	return 0;
}

static int show_identify(struct target *t, const struct tool_common *tc, const struct opts *o)
{
	static struct sio_nvme_ns ns[MAX_NS_SHOWN];
	static struct nvme_id_ctrl id;
	struct json_object *j;
	int nns;

	if ((o->raw || tc->json) && id_ctrl(t, &id))
		return PROG_FAIL;
	if (o->raw)
		return write_raw(&id, sizeof(id));
	if (read_namespaces(t, ns, &nns))
		return PROG_FAIL;
	if (!tc->json) {
		print_human(t, ns, nns);
		return 0;
	}
	j = pages_id_ctrl_json(&id);
	json_object_object_add(j, "smartio", smartio_json(t, ns, nns));
	return prog_json_print(stdout, j);
}

static int show_log(struct target *t, const struct tool_common *tc, const struct opts *o)
{
	static uint8_t page[BUF_SIZE];
	static const uint8_t lid[] = { [W_SMART] = NVME_LOG_LID_SMART, [W_ERROR] = NVME_LOG_LID_ERROR,
				       [W_FW] = NVME_LOG_LID_FW_SLOT };
	/* the Error Information log: as many entries as the controller keeps */
	int nerr = 0;
	uint32_t len = o->what == W_SMART ? sizeof(struct nvme_smart_log) :
		       o->what == W_FW ? sizeof(struct nvme_firmware_slot) : 0;
	char dev[32];

	if (o->what == W_ERROR) {
		static struct nvme_id_ctrl id;

		if (id_ctrl(t, &id))
			return PROG_FAIL;
		nerr = id.elpe + 1 < BUF_SIZE / 64 ? id.elpe + 1 : BUF_SIZE / 64;
		len = (uint32_t)nerr * sizeof(struct nvme_error_log_page);
	}
	if (get_log(t, lid[o->what], page, len))
		return PROG_FAIL;
	if (o->raw)
		return write_raw(page, len);
	snprintf(dev, sizeof(dev), "device %u", t->di.id);
	if (tc->json)
		return prog_json_print(stdout, o->what == W_SMART ? pages_smart_json((void *)page) :
				       o->what == W_FW ? pages_fw_json((void *)page, dev) :
				       pages_error_json((void *)page, nerr));
	if (o->what == W_SMART)
		pages_smart_text((void *)page);
	else if (o->what == W_FW)
		pages_fw_text((void *)page);
	else
		pages_error_text((void *)page, nerr);
	return 0;
}

/* Get Features of those a controller may have; an error names what refused. */
static int show_features(struct target *t, const struct tool_common *tc, const struct opts *op)
{
	static const struct { uint8_t fid; const char *name; } f[] = {
		{ NVME_FEAT_FID_ARBITRATION, "arbitration" },
		{ NVME_FEAT_FID_POWER_MGMT, "power_management" },
		{ NVME_FEAT_FID_TEMP_THRESH, "temperature_threshold" },
		{ NVME_FEAT_FID_ERR_RECOVERY, "error_recovery" },
		{ NVME_FEAT_FID_VOLATILE_WC, "volatile_write_cache" },
		{ NVME_FEAT_FID_NUM_QUEUES, "number_of_queues" },
		{ NVME_FEAT_FID_IRQ_COALESCE, "interrupt_coalescing" },
		{ NVME_FEAT_FID_WRITE_ATOMIC, "write_atomicity" },
		{ NVME_FEAT_FID_ASYNC_EVENT, "async_event_config" },
	};
	struct json_object *o = json_object_new_object(), *a = pj_arr(o, "features");

	for (size_t i = 0; i < sizeof(f) / sizeof(f[0]); i++) {
		struct json_object *x = pj_push_obj(a);
		uint32_t v = 0;
		int ret = get_feature(t, f[i].fid, op->nsid ? op->nsid : 1, &v);

		pj_u64(x, "fid", f[i].fid);
		pj_str(x, "name", f[i].name);
		if (ret)
			pj_str(x, "error", sio_errmsg());
		else
			pj_u64(x, "value", v);
		if (tc->json)
			continue;
		if (ret)
			printf("  0x%02x %-24s (%s)\n", f[i].fid, f[i].name, sio_errmsg());
		else
			printf("  0x%02x %-24s 0x%08x\n", f[i].fid, f[i].name, v);
		if (!ret && op->human)
			pages_feature_text(f[i].fid, v);
	}
	if (tc->json)
		return prog_json_print(stdout, o);
	json_object_put(o);
	return 0;
}

/* Identify Namespace: nvme-cli's id-ns, text or JSON, or the raw page. */
static int show_ns(struct target *t, const struct tool_common *tc, const struct opts *o)
{
	static struct nvme_id_ns ns;
	uint16_t st = 0;

	if (o->nsid > t->ci.nn)
		return prog_fail("namespace %u does not exist (the controller has %u; "
				 "--namespace chooses)", o->nsid, t->ci.nn);
	if (t->cl) {
		if (sio_nvme_client_identify(t->cl, NVME_IDENTIFY_CNS_NS, o->nsid, &ns))
			return prog_fail("Identify Namespace %u: %s", o->nsid, sio_errmsg());
	} else {
		if (sio_nvme_ctrl_identify(t->ctrl, NVME_IDENTIFY_CNS_NS, o->nsid, t->bus, &st))
			return prog_fail("Identify Namespace %u: %s", o->nsid, st ?
					 sio_nvme_status_str(st) : sio_errmsg());
		memcpy(&ns, t->buf, sizeof(ns));
	}
	if (o->raw)
		return write_raw(&ns, sizeof(ns));
	if (tc->json)
		return prog_json_print(stdout, pages_id_ns_json(&ns));
	pages_id_ns_text(&ns, o->nsid);
	return 0;
}

/* The data of a passthru write, from --input-file. */
static int read_input(struct target *t, const struct passthru *p)
{
	int fd = open(p->input, O_RDONLY | O_CLOEXEC);
	ssize_t n;

	if (fd < 0)
		return prog_fail("--input-file %s: %s", p->input, strerror(errno));
	memset(t->buf, 0, BUF_SIZE);
	n = read(fd, t->buf, p->data_len);
	close(fd);
	if (n < 0)
		return prog_fail("--input-file %s: %s", p->input, strerror(errno));
	return 0;
}

/* The data read, as nvme-cli shows it: 16 bytes a line, hex and text. */
static void hexdump(const uint8_t *b, uint32_t len)
{
	printf("       0  1  2  3  4  5  6  7  8  9  a  b  c  d  e  f\n");
	for (uint32_t i = 0; i < len; i += 16) {
		printf("%04x:", i);
		for (uint32_t k = i; k < i + 16; k++)
			printf(k < len ? " %02x" : "   ", b[k < len ? k : 0]);
		printf(" \"");
		for (uint32_t k = i; k < i + 16 && k < len; k++)
			putchar(b[k] >= 0x20 && b[k] < 0x7f ? b[k] : '.');
		printf("\"\n");
	}
}

static int passthru(struct target *t, const struct opts *o)
{
	const struct passthru *p = &o->pt;
	struct sio_nvme_cmd cmd;
	uint32_t res = 0;
	uint16_t st = 0;

	if (t->cl)
		return prog_fail("--admin-passthru needs the controller to itself: device %u is "
				 "served by its manager (stop nvme-manager first; a raw admin "
				 "command could undo what the manager set up)", t->di.id);
	if (p->write && read_input(t, p))
		return PROG_FAIL;
	if (!p->write)
		memset(t->buf, 0, BUF_SIZE);
	memset(&cmd, 0, sizeof(cmd));
	cmd.opcode = p->opcode;
	cmd.nsid = p->nsid;
	cmd.cdw10 = p->cdw[0];
	cmd.cdw11 = p->cdw[1];
	cmd.cdw12 = p->cdw[2];
	cmd.cdw13 = p->cdw[3];
	cmd.cdw14 = p->cdw[4];
	cmd.cdw15 = p->cdw[5];
	if (sio_nvme_ctrl_passthru(t->ctrl, &cmd, t->bus, p->data_len, &res, &st))
		return prog_fail("admin command 0x%02x: %s", p->opcode,
				 st ? sio_nvme_status_str(st) : sio_errmsg());
	if (o->raw)
		return p->read ? write_raw(t->buf, p->data_len) : 0;
	printf("NVMe command result:%08x\n", res);
	if (p->read && p->data_len)
		hexdump(t->buf, p->data_len);
	return 0;
}

static int run(struct tool_common *tc, const struct opts *o)
{
	struct target t = { 0 };
	int rc = open_target(tc, &t);

	if (!rc)
		rc = o->what == W_ID ? show_identify(&t, tc, o) :
		     o->what == W_FEATURES ? show_features(&t, tc, o) :
		     o->what == W_NS ? show_ns(&t, tc, o) :
		     o->what == W_PASSTHRU ? passthru(&t, o) : show_log(&t, tc, o);
	close_target(&t);
	return rc;
}

/* nvme-cli's rules: one direction, data with a length, a file to write. */
static void check_passthru(const struct opts *o)
{
	const struct passthru *p = &o->pt;
	bool any = p->opcode || p->nsid || p->data_len || p->read || p->write || p->input;

	for (int i = 0; i < 6; i++)
		any |= p->cdw[i] != 0;
	if (o->what != W_PASSTHRU) {
		if (any)
			prog_usage_error("--opcode, --cdw10.., --data-len, --read, --write and "
					 "--input-file belong to --admin-passthru");
		return;
	}
	if (p->read && p->write)
		prog_usage_error("--read and --write: one direction, not both");
	if (p->data_len && !p->read && !p->write)
		prog_usage_error("--data-len %u: say which way with --read or --write",
				 p->data_len);
	if (p->write && !p->input)
		prog_usage_error("--write: give the data with --input-file FILE");
	if (p->data_len & 3)
		prog_usage_error("--data-len %u: a multiple of 4 bytes", p->data_len);
}

int main(int argc, char **argv)
{
	enum { O_LOG = 256, O_FEATURES, O_RAW, O_NS, O_PT, O_OPCODE, O_NSID, O_LEN, O_INPUT,
	       O_CDW10 };
	static const struct option lo[] = {
		TOOL_COMMON_LONGOPTS,
		TOOL_JSON_LONGOPT,
		{ "log", required_argument, NULL, O_LOG },
		{ "features", no_argument, NULL, O_FEATURES },
		{ "human-readable", no_argument, NULL, 'H' },
		{ "raw", no_argument, NULL, O_RAW },
		{ "namespace", required_argument, NULL, O_NS },
		{ "admin-passthru", no_argument, NULL, O_PT },
		{ "opcode", required_argument, NULL, O_OPCODE },
		{ "namespace-id", required_argument, NULL, O_NSID },
		{ "data-len", required_argument, NULL, O_LEN },
		{ "read", no_argument, NULL, 'r' },
		{ "write", no_argument, NULL, 'w' },
		{ "input-file", required_argument, NULL, O_INPUT },
		{ "cdw10", required_argument, NULL, O_CDW10 },
		{ "cdw11", required_argument, NULL, O_CDW10 + 1 },
		{ "cdw12", required_argument, NULL, O_CDW10 + 2 },
		{ "cdw13", required_argument, NULL, O_CDW10 + 3 },
		{ "cdw14", required_argument, NULL, O_CDW10 + 4 },
		{ "cdw15", required_argument, NULL, O_CDW10 + 5 },
		{ 0 }
	};
	static const char *const logs[] = { "smart", "error", "fw", NULL };
	static const char *const cdw[] = { "--cdw10", "--cdw11", "--cdw12", "--cdw13", "--cdw14",
					   "--cdw15" };
	struct opts o = { .what = W_ID };
	struct tool_common t;
	int c;

	tool_init(&t, "nvme-identify", usage);
	while ((c = tool_getopt(&t, argc, argv, "hbHrw", lo)) != -1) {
		switch (c) {
		case O_LOG: o.what = (enum what)(W_SMART + prog_choice("--log", optarg, logs)); break;
		case O_FEATURES: o.what = W_FEATURES; break;
		case O_RAW: case 'b': o.raw = true; break;
		case 'H': o.human = true; break;
		case O_NS: o.nsid = prog_u32("--namespace", optarg, 1, 0xfffffffe); break;
		case O_PT: o.what = W_PASSTHRU; break;
		case O_OPCODE: o.pt.opcode = (uint8_t)prog_u32("--opcode", optarg, 0, 0xff); break;
		case O_NSID: o.pt.nsid = prog_u32("--namespace-id", optarg, 0, UINT32_MAX); break;
		case O_LEN: o.pt.data_len = prog_u32("--data-len", optarg, 0, BUF_SIZE); break;
		case 'r': o.pt.read = true; break;
		case 'w': o.pt.write = true; break;
		case O_INPUT: o.pt.input = optarg; break;
		default:
			if (c >= O_CDW10 && c < O_CDW10 + 6)
				o.pt.cdw[c - O_CDW10] = prog_u32(cdw[c - O_CDW10], optarg, 0,
								 UINT32_MAX);
			break;
		}
	}
	if (o.nsid && o.what == W_ID)
		o.what = W_NS;
	check_passthru(&o);
	if (o.human && o.what != W_FEATURES)
		prog_usage_error("-H decodes feature values: give it with --features");
	if (o.raw && (t.json || o.what == W_FEATURES))
		prog_usage_error("--raw writes one structure: not with --json or --features");
	if (o.raw && isatty(1))
		prog_usage_error("--raw writes binary: send it to a file or a pipe");
	return run(&t, &o);
}
