/*
 * plan.c - the Plan controller: Plan status summarises the tenants on the plan.
 *
 * status.tenants and status.namespaces count the Tenants naming the plan and their namespaces;
 * status.perTenant maps each tenant to {namespaces, used, hard} as its own status reports them
 * (the Tenant controller splits and enforces the quota; this controller only reports).
 * maxNamespaces is reported here: the condition WithinLimits is False, naming the tenants, when a
 * tenant has more namespaces than the plan allows. Enforcement at creation is the webhook's job.
 * A plan whose quantities do not parse is reported Ready=False, reason Invalid.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "base/clock.h"
#include "base/err.h"
#include "base/json.h"
#include "base/log.h"
#include "controllers/controllers.h"
#include "kube/conditions.h"
#include "kube/status.h"
#include "tenancy/quotaplan.h"
#include "tenancy/tenant_model.h"

/* Plan status changes with every tenant on the plan; coalesce bursts into one write a second. */
#define STATUS_WRITE_INTERVAL_MS 1000

struct plan_ctl {
	struct inf *plans, *tenants;
	json_t *last_write; /* plan name -> monotonic ms of its last status write (one worker) */
};

static void map_tenant(const struct jdoc *obj, void (*emit)(const char *, void *), void *ctx,
                       void *ud)
{
	(void)ud;
	tm_index_plan(obj, emit, ctx, NULL);
}

static int setup(struct controller *c, struct mgr *m, void *ud)
{
	struct plan_ctl *p = ud;
	/* Both whole, and shared with the Tenant controller (the same projection): the Plan's
	 * spec and status, the Tenants' spec.plan and status (namespaceCount, quota). */
	struct inf_opts plans = {.gvr = LL_PLANS}, tenants = {.gvr = LL_TENANTS};
	int rc;

	p->last_write = p->last_write ? p->last_write : json_object();
	p->plans = mgr_informer(m, &plans);
	p->tenants = mgr_informer(m, &tenants);
	if (p->plans == NULL || p->tenants == NULL)
		return -ENOMEM;
	rc = inf_add_index(p->tenants, TM_INDEX_PLAN, tm_index_plan, NULL);
	if (rc < 0 && rc != -EEXIST)
		return rc;
	ctrl_watch_primary(c, p->plans);
	ctrl_watch_mapped(c, p->tenants, map_tenant, p);
	return 0;
}

/* Is every quantity of the plan valid? Fills @why when not. */
static bool plan_valid(const json_t *plan, char *why, size_t len)
{
	struct qp_result res = {0};
	struct ll_err err;
	int rc = qp_compute(jx_get(plan, "spec", "resourceQuota", "hard", NULL), NULL, 0, &res,
	                    &err);

	qp_result_release(&res);
	if (rc < 0)
		snprintf(why, len, "spec.resourceQuota.hard: %.400s", err.msg);
	return rc == 0;
}

/* The tenants' own reports, copied out of the cache only where the status carries them. */
static json_int_t per_tenant(const struct jdoc_list *tenants, json_t *per, long long max,
                             char *over, size_t over_len)
{
	json_int_t namespaces = 0;

	for (size_t i = 0; i < tenants->n; i++) {
		const struct jdoc *t = tenants->items[i];
		json_int_t n = jd_int(t, 0, "status", "namespaceCount", NULL);
		struct jval q = jd_get(t, "status", "quota", NULL);
		const char *name = jd_name(t) ? jd_name(t) : "";

		namespaces += n;
		json_object_set_new(per, name,
		                    json_pack("{s:I,s:o?,s:o?}", "namespaces", n, "used",
		                              jval_to_json(jval_get(q, "used")), "hard",
		                              jval_to_json(jval_get(q, "hard"))));
		if (max >= 0 && n > max && strlen(over) + strlen(name) + 3 < over_len)
			snprintf(over + strlen(over), over_len - strlen(over), "%s%s",
			         over[0] ? ", " : "", name);
	}
	return namespaces;
}

static json_t *desired_status(const json_t *plan, const struct jdoc_list *tenants)
{
	long long gen = jx_generation(plan), max = jx_int(plan, -1, "spec", "maxNamespaces", NULL);
	json_t *per = json_object(), *t, *conds;
	char msg[512] = "", over[256] = "";
	bool valid = plan_valid(plan, msg, sizeof(msg));
	json_int_t namespaces = per_tenant(tenants, per, max, over, sizeof(over));

	conds = cond_set(jx_get(plan, "status", "conditions", NULL), "Ready",
	                 valid ? "True" : "False", valid ? "Valid" : "Invalid",
	                 valid ? "plan is valid" : msg, gen);
	if (over[0])
		snprintf(msg, sizeof(msg), "more namespaces than maxNamespaces (%lld): %s", max,
		         over);
	t = cond_set(conds, "WithinLimits", over[0] ? "False" : "True",
	             over[0] ? "TooManyNamespaces" : "WithinLimits",
	             over[0] ? msg : "every tenant is within maxNamespaces", gen);
	json_decref(conds);
	return json_pack("{s:I,s:I,s:I,s:o,s:o}", "observedGeneration", (json_int_t)gen, "tenants",
	                 (json_int_t)tenants->n, "namespaces", namespaces, "perTenant", per,
	                 "conditions", t);
}

static struct ctrl_result reconcile(struct controller *c, const char *key, void *ud)
{
	struct plan_ctl *p = ud;
	const struct jdoc *doc = inf_get_key_ref(p->plans, key);
	/* the one primary object, as jansson for cond_set() and the quota model */
	json_t *plan = jval_to_json(jdoc_root(doc)), *status = NULL;
	struct jdoc_list tenants = {NULL, 0};
	struct ctrl_result r = CTRL_RESULT_DONE;
	long long since;
	char why[512];

	if (plan == NULL) {
		json_object_del(p->last_write, key);
		goto out;
	}
	tenants = inf_by_index_ref(p->tenants, TM_INDEX_PLAN, key);
	status = desired_status(plan, &tenants);
	if (json_equal(status, jx_get(plan, "status", NULL)))
		goto out;
	since = clock_mono_ms() - jx_int(p->last_write, -STATUS_WRITE_INTERVAL_MS, key, NULL);
	if (since < STATUS_WRITE_INTERVAL_MS) {
		r = CTRL_RESULT_AFTER(STATUS_WRITE_INTERVAL_MS - since);
		goto out;
	}
	json_object_set_new(p->last_write, key, json_integer(clock_mono_ms()));
	if (status_write(mgr_client(ctrl_mgr(c)), &LL_PLANS, key, status, STATUS_REPLACE,
	                 LANDLORD_FIELD_MANAGER, why, sizeof(why)) < 0) {
		log_warn("plan status write failed", "{s:s,s:s}", "plan", key, "error", why);
		r = CTRL_RESULT_RETRY;
	}
out:
	json_decref(status);
	jdoc_list_release(&tenants);
	json_decref(plan);
	jdoc_unref(doc);
	return r;
}

struct controller_def plan_controller_def(void)
{
	static struct plan_ctl ctl;

	return (struct controller_def){
	        .name = "plan",
	        .workers = 1,
	        .setup = setup,
	        .reconcile = reconcile,
	        .ud = &ctl,
	};
}
