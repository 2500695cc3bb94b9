/*
 * tenant.c - the Tenant controller.
 *
 * This build records what it has observed: status.observedGeneration and a Ready condition
 * that stays Unknown (reason Observed) until provisioning of namespaces, access, quotas and
 * policies lands. It already follows the controller rules every later step keeps: read from
 * the informer cache, compute the desired status, and write (a merge patch on the status
 * subresource) only when the cache differs.
 */
#include <stdlib.h>

#include "controllers/conditions.h"
#include "controllers/controllers.h"
#include "landlord/err.h"
#include "landlord/json.h"
#include "landlord/log.h"
#include "landlord/mem.h"

const struct kc_gvr LL_TENANTS = {LANDLORD_GROUP, LANDLORD_VERSION_V1A1, "tenants", "Tenant",
                                  false};

struct tenant_ctl {
	struct inf *tenants;
};

static int setup(struct controller *c, struct mgr *m, void *ud)
{
	struct tenant_ctl *t = ud;
	struct inf_opts o = {.gvr = LL_TENANTS};

	t->tenants = mgr_informer(m, &o);
	ctrl_watch_primary(c, t->tenants);
	return 0;
}

static json_t *desired_status(const json_t *tenant)
{
	long long gen = jx_generation(tenant);
	json_t *conds = cond_set(jx_get(tenant, "status", "conditions", NULL), "Ready", "Unknown",
	                         "Observed",
	                         "tenant recorded; namespace, access and quota provisioning is not "
	                         "part of this build",
	                         gen);

	return json_pack("{s:I,s:o}", "observedGeneration", (json_int_t)gen, "conditions", conds);
}

static struct ctrl_result write_status(struct controller *c, const char *name, json_t *status)
{
	json_t *patch = json_pack("{s:O}", "status", status);
	struct kc_resp resp = {0};
	struct ll_err err;
	struct ctrl_result r = CTRL_RESULT_DONE;
	int rc = kc_patch(mgr_client(ctrl_mgr(c)), &LL_TENANTS, NULL, name, "status",
	                  KC_PATCH_MERGE, patch, LANDLORD_FIELD_MANAGER, &resp, &err);

	if (rc < 0) {
		log_warn("tenant status write failed", "{s:s,s:s}", "tenant", name, "error",
		         err.msg);
		r = CTRL_RESULT_RETRY;
	} else if (!kc_resp_ok(&resp) && resp.http_status != 404) {
		log_warn("tenant status write rejected", "{s:s,s:i,s:s,s:s}", "tenant", name,
		         "code", (int)resp.http_status, "reason", resp.status.reason, "message",
		         resp.status.message);
		r = CTRL_RESULT_RETRY;
	}
	kc_resp_release(&resp);
	json_decref(patch);
	return r;
}

static struct ctrl_result reconcile(struct controller *c, const char *key, void *ud)
{
	struct tenant_ctl *t = ud;
	json_t *tenant = inf_get_key(t->tenants, key), *status = NULL;
	struct ctrl_result r = CTRL_RESULT_DONE;

	if (tenant == NULL)
		goto out; /* deleted; nothing to release in this build */
	status = desired_status(tenant);
	if (jx_equal_subset(status, jx_get(tenant, "status", NULL)))
		goto out;
	r = write_status(c, key, status);
	log_debug("tenant status written", "{s:s}", "tenant", key);
out:
	json_decref(status);
	json_decref(tenant);
	return r;
}

struct controller_def tenant_controller_def(void)
{
	static struct tenant_ctl ctl;

	return (struct controller_def){
	        .name = "tenant",
	        .workers = 2,
	        .setup = setup,
	        .reconcile = reconcile,
	        .ud = &ctl,
	};
}
