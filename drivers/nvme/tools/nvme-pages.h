/* SPDX-License-Identifier: MIT */
#ifndef SIO_NVME_TOOL_PAGES_H
#define SIO_NVME_TOOL_PAGES_H

/*
 * The NVMe data structures nvme-identify shows (Identify Controller, the
 * SMART / Health, Error Information and Firmware Slot logs), as JSON whose
 * keys are the ones nvme-cli's `-o json` output uses, so scripts written
 * for `nvme id-ctrl`, `nvme smart-log`, `nvme error-log` and `nvme fw-log`
 * read ours unchanged.
 */

#include <nvme/types.h>
#include <json-c/json.h>

struct json_object *pages_id_ctrl_json(const struct nvme_id_ctrl *c);
struct json_object *pages_id_ns_json(const struct nvme_id_ns *ns);
struct json_object *pages_smart_json(const struct nvme_smart_log *s);
struct json_object *pages_error_json(const struct nvme_error_log_page *e, int n);
struct json_object *pages_fw_json(const struct nvme_firmware_slot *fw, const char *dev);

/* The same as text, one field a line. */
void pages_id_ns_text(const struct nvme_id_ns *ns, uint32_t nsid);
void pages_smart_text(const struct nvme_smart_log *s);
void pages_error_text(const struct nvme_error_log_page *e, int n);
void pages_fw_text(const struct nvme_firmware_slot *fw);
/* A feature's value decoded, one field a line, as nvme get-feature -H. */
void pages_feature_text(uint8_t fid, uint32_t v);

#endif
