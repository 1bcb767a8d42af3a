/* SPDX-License-Identifier: MIT */
/*
 * Admin commands beyond bring-up: Get Features of a namespace-scoped
 * feature (the controller wants the namespace in NSID), and a passthru for
 * the commands the library does not wrap (nvme-identify --admin-passthru,
 * as nvme-cli's admin-passthru).
 */
#include <errno.h>
#include <string.h>
#include "priv.h"
#include "client-priv.h"

/* Features whose value belongs to a namespace (NVMe 2.0, Figure 386). */
bool sio_nvme_feat_ns_scoped(uint8_t fid)
{
	return fid == NVME_FEAT_FID_LBA_RANGE || fid == NVME_FEAT_FID_ERR_RECOVERY ||
	       fid == NVME_FEAT_FID_RESV_MASK || fid == NVME_FEAT_FID_RESV_PERSIST ||
	       fid == NVME_FEAT_FID_WRITE_PROTECT;
}

int sio__nvme_admin_st(struct sio_nvme_ctrl *c, const struct sio_nvme_cmd *cmd, uint32_t *result,
		       uint16_t *status)
{
	struct sio_nvme_cpl cpl;
	int ret;

	memset(&cpl, 0, sizeof(cpl));
	ret = sio_nvme_ctrl_admin(c, cmd, &cpl, 0);
	if (status)
		*status = SIO_NVME_STATUS_CODE(cpl.status);
	if (result)
		*result = cpl.result;
	return ret;
}

int sio_nvme_ctrl_get_features_ns(struct sio_nvme_ctrl *c, uint8_t fid, uint32_t nsid,
				  uint32_t cdw11, uint32_t *result, uint16_t *status)
{
	struct sio_nvme_cmd cmd;

	sio_nvme_cmd_features(&cmd, SIO_NVME_ADM_GET_FEAT, fid, cdw11);
	cmd.nsid = nsid;
	return sio__nvme_admin_st(c, &cmd, result, status);
}

int sio_nvme_client_get_features_ns(struct sio_nvme_client *cl, uint8_t fid, uint32_t nsid,
				    uint32_t cdw11, uint32_t *result)
{
	struct sio_nvme_mbox_req req;
	struct sio_nvme_mbox_resp resp;
	int ret;

	memset(&req, 0, sizeof(req));
	req.op = SIO_MBOX_OP_GET_FEAT;
	req.nsid = nsid;
	req.cdw10 = fid;
	req.cdw11 = cdw11;
	ret = sio_nvme_mbox_call(cl, &req, &resp);
	if (!ret && result)
		*result = resp.result;
	return ret;
}

int sio_nvme_ctrl_passthru(struct sio_nvme_ctrl *c, struct sio_nvme_cmd *cmd, uint64_t bus,
			   uint32_t len, uint32_t *result, uint16_t *status)
{
	if (cmd->opcode == nvme_admin_async_event)
		return sio_err_set(EINVAL, "Asynchronous Event Request (0x0c) completes only "
				   "on an event: not as a passthru command");
	if (len > 8192 || (len && (bus & 0xfff)))
		return sio_err_set(EINVAL, "passthru data of %u bytes at 0x%llx: at most "
				   "8192 bytes (two PRP entries), 4 KiB aligned", len,
				   (unsigned long long)bus);
	cmd->flags = 0;		/* PRPs, not SGLs */
	cmd->prp1 = len ? bus : 0;
	cmd->prp2 = len > 4096 ? bus + 4096 : 0;
	return sio__nvme_admin_st(c, cmd, result, status);
}
