/* status.c - writing a status subresource (see status.h). */
#include <errno.h>
#include <stdio.h>

#include "base/err.h"
#include "kube/status.h"

int status_write(struct kc_client *kc, const struct kc_gvr *gvr, const char *name,
                 const json_t *status, enum status_write_mode mode, const char *field_manager,
                 char *why, size_t why_len)
{
	json_t *body = mode == STATUS_REPLACE ? json_pack("[{s:s,s:s,s:O}]", "op", "add", "path",
	                                                  "/status", "value", status)
	                                      : json_pack("{s:O}", "status", status);
	struct kc_resp resp = {0};
	struct ll_err err = {{0}};
	int rc = kc_patch(kc, gvr, NULL, name, "status",
	                  mode == STATUS_REPLACE ? KC_PATCH_JSON : KC_PATCH_MERGE, body,
	                  field_manager, &resp, &err);

	if (rc < 0) {
		snprintf(why, why_len, "%s", err.msg);
		rc = -EIO;
	} else if (!kc_resp_ok(&resp) && resp.http_status != 404) {
		snprintf(why, why_len, "%ld %s: %s", resp.http_status, resp.status.reason,
		         resp.status.message);
		rc = -EIO;
	} else {
		rc = 0;
	}
	kc_resp_release(&resp);
	json_decref(body);
	return rc;
}
