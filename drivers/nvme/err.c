/* SPDX-License-Identifier: MIT */
/* Small helpers the driver's files share: identify strings, status words. */

#include <stdio.h>
#include <string.h>
#include "priv.h"

void sio_nvme_strcpy_id(char *dst, const char *src, size_t n)
{
	size_t i;

	memcpy(dst, src, n);
	dst[n] = 0;
	for (i = n; i > 0 && (dst[i - 1] == ' ' || dst[i - 1] == 0); i--)
		dst[i - 1] = 0;
	for (i = 0; dst[i]; i++)
		if ((unsigned char)dst[i] < 0x20 || (unsigned char)dst[i] > 0x7e)
			dst[i] = '?';
}

#define GEN(sc)		SIO_NVME_MK_STATUS(NVME_SCT_GENERIC, NVME_SC_##sc)
#define CMD(sc)		SIO_NVME_MK_STATUS(NVME_SCT_CMD_SPECIFIC, NVME_SC_##sc)
#define MEDIA(sc)	SIO_NVME_MK_STATUS(NVME_SCT_MEDIA, NVME_SC_##sc)

static const struct { uint16_t code; const char *s; } status_names[] = {
	{ GEN(SUCCESS), "success" },
	{ GEN(INVALID_OPCODE), "invalid command opcode" },
	{ GEN(INVALID_FIELD), "invalid field in command" },
	{ GEN(CMDID_CONFLICT), "command id conflict" },
	{ GEN(DATA_XFER_ERROR), "data transfer error" },
	{ GEN(POWER_LOSS), "commands aborted due to power loss" },
	{ GEN(INTERNAL), "internal error" },
	{ GEN(ABORT_REQ), "command abort requested" },
	{ GEN(ABORT_QUEUE), "command aborted due to SQ deletion" },
	{ GEN(INVALID_NS), "invalid namespace or format" },
	{ GEN(PRP_INVALID_OFFSET), "PRP offset invalid" },
	{ GEN(LBA_RANGE), "LBA out of range" },
	{ GEN(CAP_EXCEEDED), "capacity exceeded" },
	{ GEN(NS_NOT_READY), "namespace not ready" },
	{ CMD(CQ_INVALID), "completion queue invalid" },
	{ CMD(QID_INVALID), "invalid queue identifier" },
	{ CMD(QUEUE_SIZE), "invalid queue size" },
	{ CMD(INVALID_LOG_PAGE), "invalid log page" },
	{ CMD(INVALID_QUEUE), "invalid queue deletion" },
	{ CMD(FEATURE_NOT_SAVEABLE), "feature identifier not saveable" },
	{ MEDIA(WRITE_FAULT), "write fault" },
	{ MEDIA(READ_ERROR), "unrecovered read error" },
};

const char *sio_nvme_status_str(uint16_t status)
{
	size_t i;

	for (i = 0; i < sizeof(status_names) / sizeof(status_names[0]); i++)
		if (status_names[i].code == status)
			return status_names[i].s;
	return "unknown status";
}

const char *sio_nvme_admin_name(uint8_t opc)
{
	switch (opc) {
	case nvme_admin_delete_sq: return "Delete I/O SQ";
	case nvme_admin_create_sq: return "Create I/O SQ";
	case nvme_admin_get_log_page: return "Get Log Page";
	case nvme_admin_delete_cq: return "Delete I/O CQ";
	case nvme_admin_create_cq: return "Create I/O CQ";
	case nvme_admin_identify: return "Identify";
	case nvme_admin_abort_cmd: return "Abort";
	case nvme_admin_set_features: return "Set Features";
	case nvme_admin_get_features: return "Get Features";
	case nvme_admin_async_event: return "Asynchronous Event Request";
	case nvme_admin_dbbuf: return "Doorbell Buffer Config";
	default: return "admin command";
	}
}
