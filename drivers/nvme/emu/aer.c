/* SPDX-License-Identifier: MIT */
/*
 * Asynchronous events (NVMe 1.4, 5.2): Asynchronous Event Requests are held
 * until an event is there to complete them with. Events raised here:
 * - SMART / Health, Temperature Threshold: the composite temperature is past
 *   a threshold that Set Features Temperature Threshold moved (AEC bit 1);
 * - Notice, Namespace Attribute Changed: a namespace was added, removed or
 *   reshaped since the controller last ran on the same namespace state file
 *   (--ns-state; AEC bit 8, OAES bit 8). The Changed Namespace List (log 04h)
 *   names them.
 * An event is reported only if Asynchronous Event Configuration enables it
 * when it happens; the namespace change happens before any host could enable
 * it, so it is raised when the host first enables the notice. Once one event
 * of a type is reported, that type is masked until the host reads its log
 * page without Retain Asynchronous Event.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include "emu_priv.h"
#include "safe-file.h"

#define AEC_TEMP	(1u << 1)	/* SMART critical warning bit 1 */
#define AEC_NS_ATTR	(1u << 8)

static bool type_masked(const struct sio_nvme_emu *emu, uint8_t type)
{
	return emu->aer_masked >> type & 1;
}

/* Complete held requests with events whose type is not masked, oldest first. */
static void dispatch(struct sio_nvme_emu *emu)
{
	uint32_t i = 0;

	while (i < emu->naev && emu->aer_outstanding) {
		struct emu_aev e = emu->aev[i];

		if (type_masked(emu, e.type)) {
			i++;
			continue;
		}
		memmove(&emu->aev[i], &emu->aev[i + 1], (emu->naev - i - 1) * sizeof(e));
		emu->naev--;
		emu->aer_masked |= 1u << e.type;
		emu->aer_outstanding--;
		emu_post(emu, &emu->sq[0], emu->aer_cid[emu->aer_outstanding], EMU_OK,
			 e.type | (uint32_t)e.info << 8 | (uint32_t)e.lid << 16, NULL);
	}
}

static void raise_event(struct sio_nvme_emu *emu, uint8_t type, uint8_t info, uint8_t lid)
{
	for (uint32_t i = 0; i < emu->naev; i++)
		if (emu->aev[i].type == type && emu->aev[i].info == info)
			return;	/* already waiting to be reported */
	if (emu->naev == EMU_AEV_MAX)
		return;
	emu->aev[emu->naev++] = (struct emu_aev){ .type = type, .info = info, .lid = lid };
	dispatch(emu);
}

/**
 * emu_aer_request() - an Asynchronous Event Request was fetched
 * Return: internal status, or EMU_PENDING while it is held.
 */
uint16_t emu_aer_request(struct sio_nvme_emu *emu, const struct sio_nvme_cmd *cmd)
{
	if (emu->aer_outstanding > EMU_AERL)
		return EMU_ST_AER_LIMIT;
	emu->aer_cid[emu->aer_outstanding++] = cmd->cid;
	/* EMU_PENDING first: the caller leaves the completion to us */
	emu->aer_kick = true;
	return EMU_PENDING;
}

/** emu_aer_poll() - complete held requests that an event is waiting for */
void emu_aer_poll(struct sio_nvme_emu *emu)
{
	if (emu->aer_kick) {
		emu->aer_kick = false;
		dispatch(emu);
	}
}

bool emu_temp_warning(const struct sio_nvme_emu *emu)
{
	return EMU_TEMP > emu->temp_over || EMU_TEMP < emu->temp_under;
}

/**
 * emu_aer_settings() - thresholds or the event configuration changed: raise
 * what has newly become true and is enabled
 */
void emu_aer_settings(struct sio_nvme_emu *emu)
{
	bool warn = emu_temp_warning(emu);

	if (warn && !emu->temp_warned && (emu->async_cfg & AEC_TEMP))
		raise_event(emu, NVME_AER_SMART, NVME_AER_SMART_TEMPERATURE_THRESHOLD,
			    NVME_LOG_LID_SMART);
	emu->temp_warned = warn;
	if (emu->nchanged && !emu->ns_reported && (emu->async_cfg & AEC_NS_ATTR)) {
		emu->ns_reported = true;
		raise_event(emu, NVME_AER_NOTICE, NVME_AER_NOTICE_NS_CHANGED,
			    NVME_LOG_LID_CHANGED_NS);
	}
	emu->aer_kick = true;
}

/**
 * emu_aer_log_read() - the host read log @lid; without RAE this unmasks the
 * event type reported through it (and empties the Changed Namespace List)
 */
void emu_aer_log_read(struct sio_nvme_emu *emu, uint32_t lid, bool rae)
{
	if (rae)
		return;
	switch (lid) {
	case NVME_LOG_LID_ERROR:
		emu->aer_masked &= ~(1u << NVME_AER_ERROR);
		break;
	case NVME_LOG_LID_SMART:
		emu->aer_masked &= ~(1u << NVME_AER_SMART);
		break;
	case NVME_LOG_LID_CHANGED_NS:
		emu->aer_masked &= ~(1u << NVME_AER_NOTICE);
		emu->nchanged = 0;
		break;
	}
	emu->aer_kick = true;
}

/** emu_aer_reset() - a controller reset: held requests are gone, masks cleared */
void emu_aer_reset(struct sio_nvme_emu *emu)
{
	emu->aer_outstanding = 0;
	emu->aer_masked = 0;
	emu->naev = 0;
	emu->temp_warned = false;
	emu->ns_reported = false;	/* a changed list still unread is raised again */
}

/** emu_changed_ns_log() - log 04h: up to 1024 NSIDs, or FFFFFFFFh first when more */
uint32_t emu_changed_ns_log(struct sio_nvme_emu *emu, uint8_t *buf)
{
	uint32_t *l = (uint32_t *)buf;

	memset(buf, 0, 4096);
	for (uint32_t i = 0; i < emu->nchanged && i < 1024; i++)
		l[i] = emu->changed[i];
	return 4096;
}

/* ---- the namespace state file: what the namespaces were when it last ran ---- */

struct ns_rec {
	uint64_t nlb;
	uint32_t shift;
	char eui[17];
};

static void eui_hex(const uint8_t *e, char *out)
{
	for (int i = 0; i < 8; i++)
		snprintf(out + 2 * i, 3, "%02x", e[i]);
}

static void note_changed(struct sio_nvme_emu *emu, uint32_t nsid)
{
	if (emu->nchanged < SIO_NVME_EMU_MAX_NS * 2)
		emu->changed[emu->nchanged++] = nsid;
}

/**
 * emu_ns_state() - compare the namespaces with those of the last run on the
 * same state file (none: nothing changed) and record these
 * @emu: controller, namespaces laid out and identified
 * Return: 0, or -errno with the error set.
 */
int emu_ns_state(struct sio_nvme_emu *emu)
{
	const char *path = emu->cfg.ns_state;
	struct ns_rec old[SIO_NVME_EMU_MAX_NS] = { 0 };
	uint32_t nold = 0;
	struct safe_file sf;
	char eui[17];
	FILE *f;
	int ret;

	if (!path)
		return 0;
	f = fopen(path, "r");
	if (f) {
		uint32_t id;
		struct ns_rec r;

		while (fscanf(f, "%" SCNu32 " %" SCNu64 " %" SCNu32 " %16s", &id, &r.nlb, &r.shift,
			      r.eui) == 4)
			if (id >= 1 && id <= SIO_NVME_EMU_MAX_NS) {
				old[id - 1] = r;
				nold = id > nold ? id : nold;
			}
		fclose(f);
	} else if (errno != ENOENT) {
		return sio_err_set(errno, "--ns-state %s: %s", path, strerror(errno));
	}
	if (f) {
		uint32_t n = nold > (uint32_t)emu->nns ? nold : (uint32_t)emu->nns;

		for (uint32_t i = 0; i < n; i++) {
			const struct emu_ns *ns = &emu->ns[i];

			if (i >= (uint32_t)emu->nns || i >= nold) {
				note_changed(emu, i + 1);	/* added or removed */
				continue;
			}
			eui_hex(ns->eui64, eui);
			if (old[i].nlb != ns->nlb || old[i].shift != ns->lba_shift ||
			    strcmp(old[i].eui, eui))
				note_changed(emu, i + 1);
		}
	}
	ret = safe_file_open(&sf, path);
	if (ret)
		return sio_err_set(-ret, "--ns-state %s: %s", path, strerror(-ret));
	for (int i = 0; i < emu->nns; i++) {
		eui_hex(emu->ns[i].eui64, eui);
		fprintf(sf.f, "%d %" PRIu64 " %u %s\n", i + 1, emu->ns[i].nlb,
			emu->ns[i].lba_shift, eui);
	}
	ret = safe_file_close(&sf, 1);
	if (ret)
		return sio_err_set(-ret, "--ns-state %s: %s", path, strerror(-ret));
	return 0;
}
