/* SPDX-License-Identifier: MIT */
/*
 * Asynchronous Event Requests (NVMe 1.4, 5.2) completed for real events: a
 * temperature threshold crossed, a namespace added across a restart; the
 * Asynchronous Event Configuration mask and the per-type masking until the
 * log page is read, from raw commands. Completions are matched by cid: the
 * controller posts in order, so a completion that comes first came first.
 */
#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include "harness.h"

#define AER_CID		0x0a00
#define AEC_TEMP	(1u << 1)
#define AEC_NS		(1u << 8)
#define RAE		(1u << 15)

static struct host H;
static struct hmem M;
static char path[256], state[256], args[768];
static uint16_t cid = 1;

static void start(const char *extra)
{
	snprintf(args, sizeof(args), "--backing %s --ns-state %s --ns 1M:512 --ns 1M:4096 %s",
		 path, state, extra);
}

static void up(void)
{
	snprintf(path, sizeof(path), "/tmp/nvme-emu-aer-%d.img", (int)getpid());
	snprintf(state, sizeof(state), "/tmp/nvme-emu-aer-%d.ns", (int)getpid());
	unlink(path);
	unlink(state);
	start("");
	cr_assert_eq(h_start(&H, 1, args), 0, "start: %s", sio_errmsg());
	cr_assert_eq(h_enable(&H, 32, 0), 0);
	cr_assert_eq(h_mem(&H, 8192, &M), 0);
}

static void down(void)
{
	h_stop(&H);
	unlink(path);
	unlink(state);
}

TestSuite(aer, .init = up, .fini = down, .timeout = 60);

static void submit(struct sio_nvme_cmd *c, uint16_t id)
{
	c->cid = id;
	h_submit(&H, &H.admin, c);
}

static void aer(uint16_t id)
{
	struct sio_nvme_cmd c;

	sio_nvme_cmd_init(&c, nvme_admin_async_event, 0);
	submit(&c, id);
}

/* The next admin completion: its cid, DW0 in *@dw0, status checked 0. */
static uint16_t next(uint32_t *dw0)
{
	struct sio_nvme_cpl r;

	cr_assert_eq(h_reap(&H, &H.admin, &r, 5000), 0, "an admin completion");
	cr_assert_eq(SIO_NVME_STATUS_CODE(r.status), 0, "cid 0x%x status 0x%x", r.cid,
		     SIO_NVME_STATUS_CODE(r.status));
	if (dw0)
		*dw0 = r.result;
	return r.cid;
}

static void set_feat(uint8_t fid, uint32_t v)
{
	struct sio_nvme_cmd c;

	sio_nvme_cmd_features(&c, SIO_NVME_ADM_SET_FEAT, fid, v);
	submit(&c, ++cid);
}

static void get_log(uint8_t lid, uint32_t len, bool rae)
{
	struct sio_nvme_cmd c;

	sio_nvme_cmd_get_log(&c, lid, 0xffffffffu, M.bus, 0, len);
	if (rae)
		c.cdw10 |= RAE;
	submit(&c, ++cid);
}

/* The next completion is command @id's, not an event's. */
static void expect_cmd(void)
{
	cr_assert_eq(next(NULL), cid, "no event completed before command 0x%x", cid);
}

Test(aer, temperature_threshold_crossed)
{
	uint32_t dw0;

	set_feat(NVME_FEAT_FID_ASYNC_EVENT, AEC_TEMP);
	expect_cmd();
	aer(AER_CID);
	/* over threshold 300 K: the composite (313 K) is past it */
	set_feat(NVME_FEAT_FID_TEMP_THRESH, 300);
	cr_assert_eq(next(&dw0), AER_CID, "the event completes the held request");
	cr_assert_eq(dw0, NVME_AER_SMART | NVME_AER_SMART_TEMPERATURE_THRESHOLD << 8 |
			  NVME_LOG_LID_SMART << 16, "type SMART, temperature, log 02h: 0x%x", dw0);
	expect_cmd();
	get_log(NVME_LOG_LID_SMART, 512, true);
	expect_cmd();
	cr_assert(((struct nvme_smart_log *)M.va)->critical_warning & NVME_SMART_CRIT_TEMPERATURE);

	/* crossed again: masked until the SMART log is read without RAE */
	aer(AER_CID + 1);
	set_feat(NVME_FEAT_FID_TEMP_THRESH, 343);
	expect_cmd();
	set_feat(NVME_FEAT_FID_TEMP_THRESH, 300);
	expect_cmd();
	get_log(NVME_LOG_LID_SMART, 512, true);
	expect_cmd();
	get_log(NVME_LOG_LID_SMART, 512, false);
	expect_cmd();
	cr_assert_eq(next(&dw0), AER_CID + 1, "unmasked by the log read");
	cr_assert_eq(dw0 & 0xff07, NVME_AER_SMART | NVME_AER_SMART_TEMPERATURE_THRESHOLD << 8);

	/* not enabled in the configuration: no event; the request stays held */
	aer(AER_CID + 2);
	set_feat(NVME_FEAT_FID_ASYNC_EVENT, 0);
	expect_cmd();
	set_feat(NVME_FEAT_FID_TEMP_THRESH, 343);
	expect_cmd();
	set_feat(NVME_FEAT_FID_TEMP_THRESH, 300);
	expect_cmd();
	get_log(NVME_LOG_LID_SMART, 512, false);
	expect_cmd();
	set_feat(NVME_FEAT_FID_ASYNC_EVENT, AEC_TEMP);
	expect_cmd();
	/* the under threshold counts too: 320 K is above the composite */
	set_feat(NVME_FEAT_FID_TEMP_THRESH, 343);
	expect_cmd();
	set_feat(NVME_FEAT_FID_TEMP_THRESH, 1u << 20 | 320);
	cr_assert_eq(next(&dw0), AER_CID + 2);
	expect_cmd();
}

Test(aer, namespace_added_on_restart)
{
	uint32_t dw0, *list = (uint32_t *)M.va;

	/* the first run knew nsid 1 and 2; a new process on the same file adds nsid 3 */
	start("--ns 1M:512");
	cr_assert_eq(h_restart_emu(&H, args), 0);
	cr_assert_eq(h_enable(&H, 32, 0), 0);
	cr_assert_eq(h_mem(&H, 8192, &M), 0);
	list = (uint32_t *)M.va;
	aer(AER_CID);
	set_feat(NVME_FEAT_FID_ASYNC_EVENT, AEC_NS);
	cr_assert_eq(next(&dw0), AER_CID);
	cr_assert_eq(dw0, NVME_AER_NOTICE | NVME_AER_NOTICE_NS_CHANGED << 8 |
			  NVME_LOG_LID_CHANGED_NS << 16, "notice, namespace attribute, log 04h: 0x%x", dw0);
	expect_cmd();
	memset(M.va, 0xee, 4096);
	get_log(NVME_LOG_LID_CHANGED_NS, 4096, false);
	expect_cmd();
	cr_assert_eq(list[0], 3, "nsid 3 was added");
	cr_assert_eq(list[1], 0);
	get_log(NVME_LOG_LID_CHANGED_NS, 4096, false);
	expect_cmd();
	cr_assert_eq(list[0], 0, "the list was emptied by the read");

	/* the same namespaces again: no change, no event */
	cr_assert_eq(h_restart_emu(&H, args), 0);
	cr_assert_eq(h_enable(&H, 32, 0), 0);
	cr_assert_eq(h_mem(&H, 8192, &M), 0);
	aer(AER_CID);
	set_feat(NVME_FEAT_FID_ASYNC_EVENT, AEC_NS);
	expect_cmd();
	get_log(NVME_LOG_LID_CHANGED_NS, 4096, false);
	expect_cmd();
	cr_assert_eq(((uint32_t *)M.va)[0], 0);
}
