/* SPDX-License-Identifier: MIT */
/*
 * NVMe structures as JSON with nvme-cli's key names (nvme-pages.h). Each
 * structure is a table of (key, offset, width) over libnvme's layout, read
 * little-endian: one reader for every field.
 */
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include "nvme-pages.h"
#include "prog.h"

enum kind { NUM, STR, UUID, HEX };

struct field {
	const char *key;
	size_t off, len;
	enum kind kind;
};

#define CTRL(k, f, kind) { k, offsetof(struct nvme_id_ctrl, f), \
			   sizeof(((struct nvme_id_ctrl *)0)->f), kind }
#define NS(k, f, kind) { k, offsetof(struct nvme_id_ns, f), \
			 sizeof(((struct nvme_id_ns *)0)->f), kind }
#define SMART(k, f) { k, offsetof(struct nvme_smart_log, f), \
		      sizeof(((struct nvme_smart_log *)0)->f), NUM }

/* Little-endian, @len bytes; of a 128-bit counter the low 64 bits (ours
 * and any real one for years). */
static uint64_t le(const uint8_t *p, size_t len)
{
	uint64_t v = 0;

	for (size_t i = len > 8 ? 8 : len; i-- > 0;)
		v = v << 8 | p[i];
	return v;
}

/* A fixed-width string field as nvme-cli prints it: up to its first NUL,
 * the space padding kept (scripts compare the two outputs). */
static void put_str(struct json_object *o, const char *key, const uint8_t *p, size_t len)
{
	char s[257];

	len = len < sizeof(s) ? len : sizeof(s) - 1;
	memcpy(s, p, len);
	len = strnlen(s, len);
	s[len] = 0;
	pj_str(o, key, s);
}

static void put_fields(struct json_object *o, const void *base, const struct field *f, size_t n)
{
	const uint8_t *b = base;
	char u[40];

	for (size_t i = 0; i < n; i++) {
		const uint8_t *p = b + f[i].off;

		if (f[i].kind == STR) {
			put_str(o, f[i].key, p, f[i].len);
		} else if (f[i].kind == HEX) {	/* eui64, nguid: digits, no dashes */
			for (size_t k = 0; k < f[i].len && k < 16; k++)
				snprintf(u + 2 * k, 3, "%02x", p[k]);
			pj_str(o, f[i].key, u);
		} else if (f[i].kind == UUID) {
			snprintf(u, sizeof(u), "%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-"
				 "%02x%02x%02x%02x%02x%02x", p[0], p[1], p[2], p[3], p[4], p[5],
				 p[6], p[7], p[8], p[9], p[10], p[11], p[12], p[13], p[14], p[15]);
			pj_str(o, f[i].key, u);
		} else if (f[i].len == 16) {	/* 128 bits: a string of digits, as nvme-cli */
			snprintf(u, sizeof(u), "%llu", (unsigned long long)le(p, f[i].len));
			pj_str(o, f[i].key, u);
		} else {
			pj_u64(o, f[i].key, le(p, f[i].len));
		}
	}
}

static const struct field ctrl_fields[] = {
	CTRL("vid", vid, NUM), CTRL("ssvid", ssvid, NUM), CTRL("sn", sn, STR),
	CTRL("mn", mn, STR), CTRL("fr", fr, STR), CTRL("rab", rab, NUM), CTRL("ieee", ieee, NUM),
	CTRL("cmic", cmic, NUM), CTRL("mdts", mdts, NUM), CTRL("cntlid", cntlid, NUM),
	CTRL("ver", ver, NUM), CTRL("rtd3r", rtd3r, NUM), CTRL("rtd3e", rtd3e, NUM),
	CTRL("oaes", oaes, NUM), CTRL("ctratt", ctratt, NUM), CTRL("rrls", rrls, NUM),
	CTRL("cntrltype", cntrltype, NUM), CTRL("fguid", fguid, UUID), CTRL("crdt1", crdt1, NUM),
	CTRL("crdt2", crdt2, NUM), CTRL("crdt3", crdt3, NUM), CTRL("nvmsr", nvmsr, NUM),
	CTRL("vwci", vwci, NUM), CTRL("mec", mec, NUM), CTRL("oacs", oacs, NUM),
	CTRL("acl", acl, NUM), CTRL("aerl", aerl, NUM), CTRL("frmw", frmw, NUM),
	CTRL("lpa", lpa, NUM), CTRL("elpe", elpe, NUM), CTRL("npss", npss, NUM),
	CTRL("avscc", avscc, NUM), CTRL("apsta", apsta, NUM), CTRL("wctemp", wctemp, NUM),
	CTRL("cctemp", cctemp, NUM), CTRL("mtfa", mtfa, NUM), CTRL("hmpre", hmpre, NUM),
	CTRL("hmmin", hmmin, NUM), CTRL("tnvmcap", tnvmcap, NUM), CTRL("unvmcap", unvmcap, NUM),
	CTRL("rpmbs", rpmbs, NUM), CTRL("edstt", edstt, NUM), CTRL("dsto", dsto, NUM),
	CTRL("fwug", fwug, NUM), CTRL("kas", kas, NUM), CTRL("hctma", hctma, NUM),
	CTRL("mntmt", mntmt, NUM), CTRL("mxtmt", mxtmt, NUM), CTRL("sanicap", sanicap, NUM),
	CTRL("hmminds", hmminds, NUM), CTRL("hmmaxd", hmmaxd, NUM),
	CTRL("nsetidmax", nsetidmax, NUM), CTRL("endgidmax", endgidmax, NUM),
	CTRL("anatt", anatt, NUM), CTRL("anacap", anacap, NUM), CTRL("anagrpmax", anagrpmax, NUM),
	CTRL("nanagrpid", nanagrpid, NUM), CTRL("pels", pels, NUM),
	CTRL("domainid", domainid, NUM), CTRL("megcap", megcap, NUM), CTRL("sqes", sqes, NUM),
	CTRL("cqes", cqes, NUM), CTRL("maxcmd", maxcmd, NUM), CTRL("nn", nn, NUM),
	CTRL("oncs", oncs, NUM), CTRL("fuses", fuses, NUM), CTRL("fna", fna, NUM),
	CTRL("vwc", vwc, NUM), CTRL("awun", awun, NUM), CTRL("awupf", awupf, NUM),
	CTRL("icsvscc", icsvscc, NUM), CTRL("nwpc", nwpc, NUM), CTRL("acwu", acwu, NUM),
	CTRL("ocfs", ocfs, NUM), CTRL("sgls", sgls, NUM), CTRL("mnan", mnan, NUM),
	CTRL("maxdna", maxdna, NUM), CTRL("maxcna", maxcna, NUM),
};

static const struct field ctrl_tail[] = {
	CTRL("ioccsz", ioccsz, NUM), CTRL("iorcsz", iorcsz, NUM), CTRL("icdoff", icdoff, NUM),
	CTRL("fcatt", fcatt, NUM), CTRL("msdbd", msdbd, NUM), CTRL("ofcs", ofcs, NUM),
};

/* A power state: its fields, and the scales packed in IPS and APWS. */
static struct json_object *psd_json(const struct nvme_id_psd *p)
{
	struct json_object *o = json_object_new_object();

	pj_u64(o, "max_power", le((const uint8_t *)&p->mp, 2));
	pj_u64(o, "flags", p->flags);
	pj_u64(o, "entry_lat", le((const uint8_t *)&p->enlat, 4));
	pj_u64(o, "exit_lat", le((const uint8_t *)&p->exlat, 4));
	pj_u64(o, "read_tput", p->rrt);
	pj_u64(o, "read_lat", p->rrl);
	pj_u64(o, "write_tput", p->rwt);
	pj_u64(o, "write_lat", p->rwl);
	pj_u64(o, "idle_power", le((const uint8_t *)&p->idlp, 2));
	pj_u64(o, "idle_scale", p->ips >> 6);
	pj_u64(o, "active_power", le((const uint8_t *)&p->actp, 2));
	pj_u64(o, "active_power_work", p->apws & 7);
	pj_u64(o, "active_scale", p->apws >> 6);
	return o;
}

struct json_object *pages_id_ctrl_json(const struct nvme_id_ctrl *c)
{
	struct json_object *o = json_object_new_object(), *a;

	put_fields(o, c, ctrl_fields, sizeof(ctrl_fields) / sizeof(ctrl_fields[0]));
	if (c->subnqn[0])	/* as nvme-cli: only when the controller has one */
		put_str(o, "subnqn", (const uint8_t *)c->subnqn, sizeof(c->subnqn));
	put_fields(o, c, ctrl_tail, sizeof(ctrl_tail) / sizeof(ctrl_tail[0]));
	a = pj_arr(o, "psds");
	for (int i = 0; i <= c->npss && i < 32; i++)
		json_object_array_add(a, psd_json(&c->psd[i]));
	return o;
}

/* Identify Namespace: nvme-cli's id-ns keys, in its order; npwg..nows
 * only when NSFEAT says they are defined (bit 4), as nvme-cli. */
static const struct field ns_head[] = {
	NS("nsze", nsze, NUM), NS("ncap", ncap, NUM), NS("nuse", nuse, NUM),
	NS("nsfeat", nsfeat, NUM), NS("nlbaf", nlbaf, NUM), NS("flbas", flbas, NUM),
	NS("mc", mc, NUM), NS("dpc", dpc, NUM), NS("dps", dps, NUM), NS("nmic", nmic, NUM),
	NS("rescap", rescap, NUM), NS("fpi", fpi, NUM), NS("dlfeat", dlfeat, NUM),
	NS("nawun", nawun, NUM), NS("nawupf", nawupf, NUM), NS("nacwu", nacwu, NUM),
	NS("nabsn", nabsn, NUM), NS("nabo", nabo, NUM), NS("nabspf", nabspf, NUM),
	NS("noiob", noiob, NUM), NS("nvmcap", nvmcap, NUM), NS("nsattr", nsattr, NUM),
	NS("nvmsetid", nvmsetid, NUM),
};

static const struct field ns_perf[] = {
	NS("npwg", npwg, NUM), NS("npwa", npwa, NUM), NS("npdg", npdg, NUM),
	NS("npda", npda, NUM), NS("nows", nows, NUM),
};

static const struct field ns_tail[] = {
	NS("mssrl", mssrl, NUM), NS("mcl", mcl, NUM), NS("msrc", msrc, NUM),
	NS("nulbaf", nulbaf, NUM), NS("anagrpid", anagrpid, NUM), NS("endgid", endgid, NUM),
	NS("eui64", eui64, HEX), NS("nguid", nguid, HEX),
};

struct json_object *pages_id_ns_json(const struct nvme_id_ns *ns)
{
	struct json_object *o = json_object_new_object(), *a;

	put_fields(o, ns, ns_head, sizeof(ns_head) / sizeof(ns_head[0]));
	if (ns->nsfeat & 0x10)
		put_fields(o, ns, ns_perf, sizeof(ns_perf) / sizeof(ns_perf[0]));
	put_fields(o, ns, ns_tail, sizeof(ns_tail) / sizeof(ns_tail[0]));
	a = pj_arr(o, "lbafs");
	for (int i = 0; i <= ns->nlbaf && i < 64; i++) {
		struct json_object *x = pj_push_obj(a);

		pj_u64(x, "ms", le((const uint8_t *)&ns->lbaf[i].ms, 2));
		pj_u64(x, "ds", ns->lbaf[i].ds);
		pj_u64(x, "rp", ns->lbaf[i].rp);
	}
	return o;
}

/* As nvme-cli's id-ns: one "key : value" line a field, then the formats. */
void pages_id_ns_text(const struct nvme_id_ns *ns, uint32_t nsid)
{
	struct json_object *o = pages_id_ns_json(ns);
	static const char *const rp[] = { "Best", "Better", "Good", "Degraded" };

	printf("NVME Identify Namespace %u:\n", nsid);
	json_object_object_foreach(o, key, val) {
		if (strcmp(key, "lbafs"))
			printf("%-8s: %s\n", key, json_object_get_string(val));
	}
	for (int i = 0; i <= ns->nlbaf && i < 64; i++)
		printf("lbaf %2d : ms:%-3llu lbads:%-2u rp:%#x (%s)%s\n", i,
		       (unsigned long long)le((const uint8_t *)&ns->lbaf[i].ms, 2), ns->lbaf[i].ds,
		       ns->lbaf[i].rp & 3, rp[ns->lbaf[i].rp & 3],
		       i == (ns->flbas & 0xf) ? " (in use)" : "");
	json_object_put(o);
}

static const struct field smart_fields[] = {
	SMART("critical_warning", critical_warning), SMART("temperature", temperature),
	SMART("avail_spare", avail_spare), SMART("spare_thresh", spare_thresh),
	SMART("percent_used", percent_used),
	SMART("endurance_grp_critical_warning_summary", endu_grp_crit_warn_sumry),
	SMART("data_units_read", data_units_read), SMART("data_units_written", data_units_written),
	SMART("host_read_commands", host_reads), SMART("host_write_commands", host_writes),
	SMART("controller_busy_time", ctrl_busy_time), SMART("power_cycles", power_cycles),
	SMART("power_on_hours", power_on_hours), SMART("unsafe_shutdowns", unsafe_shutdowns),
	SMART("media_errors", media_errors), SMART("num_err_log_entries", num_err_log_entries),
	SMART("warning_temp_time", warning_temp_time),
	SMART("critical_comp_time", critical_comp_time),
};

static const struct field smart_tail[] = {
	SMART("thm_temp1_trans_count", thm_temp1_trans_count),
	SMART("thm_temp2_trans_count", thm_temp2_trans_count),
	SMART("thm_temp1_total_time", thm_temp1_total_time),
	SMART("thm_temp2_total_time", thm_temp2_total_time),
};

struct json_object *pages_smart_json(const struct nvme_smart_log *s)
{
	struct json_object *o = json_object_new_object();
	char key[32];

	put_fields(o, s, smart_fields, sizeof(smart_fields) / sizeof(smart_fields[0]));
	for (int i = 0; i < 8; i++) {	/* the sensors a controller reports */
		uint64_t t = le((const uint8_t *)&s->temp_sensor[i], 2);

		snprintf(key, sizeof(key), "temperature_sensor_%d", i + 1);
		if (t)
			pj_u64(o, key, t);
	}
	put_fields(o, s, smart_tail, sizeof(smart_tail) / sizeof(smart_tail[0]));
	return o;
}

struct json_object *pages_error_json(const struct nvme_error_log_page *e, int n)
{
	struct json_object *o = json_object_new_object(), *a = pj_arr(o, "errors");

	for (int i = 0; i < n; i++) {
		struct json_object *x = pj_push_obj(a);
		uint64_t sf = le((const uint8_t *)&e[i].status_field, 2);

		pj_u64(x, "error_count", le((const uint8_t *)&e[i].error_count, 8));
		pj_u64(x, "sqid", le((const uint8_t *)&e[i].sqid, 2));
		pj_u64(x, "cmdid", le((const uint8_t *)&e[i].cmdid, 2));
		pj_u64(x, "status_field", sf >> 1);	/* bit 0 is the phase tag */
		pj_u64(x, "phase_tag", sf & 1);
		pj_u64(x, "parm_error_location", le((const uint8_t *)&e[i].parm_error_location, 2));
		pj_u64(x, "lba", le((const uint8_t *)&e[i].lba, 8));
		pj_u64(x, "nsid", le((const uint8_t *)&e[i].nsid, 4));
		pj_u64(x, "vs", e[i].vs);
		pj_u64(x, "trtype", e[i].trtype);
		pj_u64(x, "cs", le((const uint8_t *)&e[i].cs, 8));
		pj_u64(x, "trtype_spec_info", le((const uint8_t *)&e[i].trtype_spec_info, 2));
	}
	return o;
}

/* A firmware revision: its 8 bytes as a number and as text, as nvme-cli
 * (which shows a byte that is not a letter, digit or dot as a dot). */
static void fw_rev(char *out, size_t len, const char frs[8])
{
	char s[9];

	for (int i = 0; i < 8; i++)
		s[i] = (frs[i] >= '0' && frs[i] <= '9') || (frs[i] >= 'a' && frs[i] <= 'z') ||
		       (frs[i] >= 'A' && frs[i] <= 'Z') ? frs[i] : '.';
	s[8] = 0;
	snprintf(out, len, "%llu (%s)", (unsigned long long)le((const uint8_t *)frs, 8), s);
}

struct json_object *pages_fw_json(const struct nvme_firmware_slot *fw, const char *dev)
{
	struct json_object *o = json_object_new_object(), *x = pj_obj(o, dev);
	char key[32], v[48];

	pj_u64(x, "Active Firmware Slot (afi)", fw->afi);
	for (int i = 0; i < 7; i++) {
		if (!fw->frs[i][0])
			continue;
		snprintf(key, sizeof(key), "Firmware Rev Slot %d", i + 1);
		fw_rev(v, sizeof(v), fw->frs[i]);
		pj_str(x, key, v);
	}
	return o;
}

void pages_smart_text(const struct nvme_smart_log *s)
{
	size_t n = sizeof(smart_fields) / sizeof(smart_fields[0]);

	for (size_t i = 0; i < n; i++)
		printf("%-40s: %llu%s\n", smart_fields[i].key,
		       (unsigned long long)le((const uint8_t *)s + smart_fields[i].off,
					      smart_fields[i].len),
		       !strcmp(smart_fields[i].key, "temperature") ? " K" : "");
}

void pages_error_text(const struct nvme_error_log_page *e, int n)
{
	int shown = 0;

	for (int i = 0; i < n; i++) {
		uint64_t cnt = le((const uint8_t *)&e[i].error_count, 8);

		if (!cnt)
			continue;	/* an unused entry */
		printf("error %llu: sqid %llu cmdid 0x%llx status 0x%llx nsid %llu lba %llu\n",
		       (unsigned long long)cnt, (unsigned long long)le((const uint8_t *)&e[i].sqid, 2),
		       (unsigned long long)le((const uint8_t *)&e[i].cmdid, 2),
		       (unsigned long long)(le((const uint8_t *)&e[i].status_field, 2) >> 1),
		       (unsigned long long)le((const uint8_t *)&e[i].nsid, 4),
		       (unsigned long long)le((const uint8_t *)&e[i].lba, 8));
		shown++;
	}
	if (!shown)
		printf("no errors logged (%d entries read)\n", n);
}

void pages_fw_text(const struct nvme_firmware_slot *fw)
{
	char v[48];

	printf("active firmware slot %u%s\n", fw->afi & 7, fw->afi & 0x70 ? " (another on reset)" : "");
	for (int i = 0; i < 7; i++)
		if (fw->frs[i][0]) {
			fw_rev(v, sizeof(v), fw->frs[i]);
			printf("  slot %d: %s\n", i + 1, v);
		}
}

static void show_aec(uint32_t v)
{
	static const char *const bit[] = {
		"SMART / Health Critical Warnings (available spare)",
		"SMART / Health Critical Warnings (temperature)",
		"SMART / Health Critical Warnings (reliability)",
		"SMART / Health Critical Warnings (read-only)",
		"SMART / Health Critical Warnings (volatile memory backup)",
		"SMART / Health Critical Warnings (persistent memory region)",
		NULL, NULL,
		"Namespace Attribute Notices",
		"Firmware Activation Notices",
		"Telemetry Log Notices",
		"ANA Change Notices",
		"Predictable Latency Event Aggregate Log Change Notices",
		"LBA Status Information Notices",
		"Endurance Group Event Aggregate Log Page Change Notices",
		"Normal NVM Subsystem Shutdown Notices",
	};

	for (unsigned int i = 0; i < sizeof(bit) / sizeof(bit[0]); i++)
		if (bit[i])
			printf("\t%-56s: %s\n", bit[i], v >> i & 1 ? "Send async event" :
			       "Do not send async event");
}

/* A feature's value field by field, as `nvme get-feature -H` shows it. */
void pages_feature_text(uint8_t fid, uint32_t v)
{
	static const char *const thsel[] = { "Over Temperature Threshold",
					     "Under Temperature Threshold", "Reserved", "Reserved" };

	switch (fid) {
	case NVME_FEAT_FID_ARBITRATION:
		printf("\tHigh Priority Weight   (HPW): %u\n", (v >> 24) + 1);
		printf("\tMedium Priority Weight (MPW): %u\n", ((v >> 16) & 0xff) + 1);
		printf("\tLow Priority Weight    (LPW): %u\n", ((v >> 8) & 0xff) + 1);
		if ((v & 7) == 7)
			printf("\tArbitration Burst       (AB): No limit\n");
		else
			printf("\tArbitration Burst       (AB): %u\n", 1u << (v & 7));
		break;
	case NVME_FEAT_FID_POWER_MGMT:
		printf("\tWorkload Hint (WH): %u\n", (v >> 5) & 7);
		printf("\tPower State   (PS): %u\n", v & 0x1f);
		break;
	case NVME_FEAT_FID_TEMP_THRESH:
		printf("\tThreshold Type Select         (THSEL): %u - %s\n", (v >> 20) & 3,
		       thsel[(v >> 20) & 3]);
		printf("\tThreshold Temperature Select (TMPSEL): %u\n", (v >> 16) & 0xf);
		printf("\tTemperature Threshold         (TMPTH): %d C (%u K)\n",
		       (int)(v & 0xffff) - 273, v & 0xffff);
		break;
	case NVME_FEAT_FID_ERR_RECOVERY:
		printf("\tDeallocated or Unwritten Logical Block Error Enable (DULBE): %s\n",
		       v >> 16 & 1 ? "Enabled" : "Disabled");
		printf("\tTime Limited Error Recovery                          (TLER): %u ms\n",
		       (v & 0xffff) * 100);
		break;
	case NVME_FEAT_FID_VOLATILE_WC:
		printf("\tVolatile Write Cache Enable (WCE): %s\n", v & 1 ? "Enabled" : "Disabled");
		break;
	case NVME_FEAT_FID_NUM_QUEUES:
		printf("\tNumber of IO Completion Queues Allocated (NCQA): %u\n", (v >> 16) + 1);
		printf("\tNumber of IO Submission Queues Allocated (NSQA): %u\n", (v & 0xffff) + 1);
		break;
	case NVME_FEAT_FID_IRQ_COALESCE:
		printf("\tAggregation Time     (TIME): %u usec\n", ((v >> 8) & 0xff) * 100);
		printf("\tAggregation Threshold (THR): %u\n", (v & 0xff) + 1);
		break;
	case NVME_FEAT_FID_WRITE_ATOMIC:
		printf("\tDisable Normal (DN): %s\n", v & 1 ? "True" : "False");
		break;
	case NVME_FEAT_FID_ASYNC_EVENT:
		show_aec(v);
		break;
	default:
		break;
	}
}
