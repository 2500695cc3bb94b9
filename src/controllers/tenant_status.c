/* tenant_status.c - a Tenant's status and conditions (see tenant_internal.h). */
#include <stdio.h>
#include <string.h>

#include "base/json.h"
#include "base/log.h"
#include "base/mem.h"
#include "controllers/tenant_internal.h"
#include "kube/conditions.h"
#include "kube/events.h"
#include "kube/status.h"
#include "tenancy/landlordconfig_current.h"
#include "tenancy/quotaplan.h"

/* Released namespaces carry landlord.dev/released-from, so a stale cache loses none. */
static json_t *released_list(struct rec *r)
{
	struct jdoc_list marked = inf_by_index_ref(r->t->namespaces, IDX_RELEASED, r->name);
	json_t *set = json_object(), *v;
	size_t i;

	for (i = 0; i < marked.n; i++)
		if (jd_name(marked.items[i]))
			json_object_set_new(set, jd_name(marked.items[i]), json_true());
	json_array_foreach(r->released, i, v)
		json_object_set_new(set, json_string_value(v), json_true());
	for (i = 0; i < marked.n; i++)
		if (jd_name(marked.items[i]) && tc_docs_get(&r->active, jd_name(marked.items[i])))
			json_object_del(set, jd_name(marked.items[i])); /* back in the tenant */
	v = tm_sorted_keys(set);
	json_decref(set);
	jdoc_list_release(&marked);
	return v;
}

static json_t *set_cond(json_t *conds, const char *type, bool ok, const char *reason,
                        const char *msg, long long gen)
{
	json_t *next = cond_set(conds, type, ok ? "True" : "False", reason, msg, gen);

	json_decref(conds);
	return next;
}

static json_t *namespaces_cond(struct rec *r, json_t *conds, bool ns_ok, long long gen)
{
	char msg[640];

	if (json_array_size(r->collisions)) {
		snprintf(msg, sizeof(msg), "%zu namespace name(s) cannot be used, first %s: %s",
		         json_array_size(r->collisions),
		         jx_str(json_array_get(r->collisions, 0), "name", NULL),
		         jx_str(json_array_get(r->collisions, 0), "reason", NULL));
		return set_cond(conds, "NamespacesReady", false, "Collision", msg, gen);
	}
	snprintf(msg, sizeof(msg), "%zu namespace(s)", r->active.len);
	return set_cond(conds, "NamespacesReady", ns_ok, ns_ok ? "Provisioned" : "Creating",
	                ns_ok ? msg : "waiting for namespaces to be created or deleted", gen);
}

static json_t *quota_cond(struct rec *r, json_t *conds, bool quota_ok, long long gen)
{
	char msg[640];
	const char *why;

	if (!tc_plan_known(r)) {
		snprintf(msg, sizeof(msg),
		         "Plan %s does not exist; no quota, so nothing is granted",
		         jval_str(jval_path(r->tenant, "spec", "plan", NULL)));
		why = "PlanNotFound";
	} else if (r->over_plan) {
		snprintf(msg, sizeof(msg), "usage is above the plan; nothing new can be created");
		why = "OverPlan";
	} else {
		snprintf(msg, sizeof(msg),
		         quota_ok ? "quota in force in every namespace"
		                  : "waiting for ResourceQuotas to be in force");
		why = quota_ok ? "Provisioned" : "WaitingForQuota";
	}
	return set_cond(conds, "QuotaReady", quota_ok, why, msg, gen);
}

/* Ready when all are; otherwise the first condition that is not True says why. */
static json_t *ready_cond(struct rec *r, json_t *conds, bool all_ok, bool deleting, long long gen)
{
	const char *why = "Provisioning";
	char msg[640] = "";
	json_t *c;
	size_t i;

	if (deleting)
		return set_cond(conds, "Ready", false, "Terminating",
		                "releasing or purging the tenant's namespaces", gen);
	if (r->failed)
		return set_cond(conds, "Ready", false, "ApplyFailed", r->fail_msg, gen);
	if (all_ok)
		return set_cond(conds, "Ready", true, "Provisioned", "tenant provisioned", gen);
	json_array_foreach(conds, i, c) {
		if (strcmp(jx_str(c, "status", NULL), "True") == 0 ||
		    strcmp(jx_str(c, "type", NULL), "Ready") == 0)
			continue;
		why = jx_str(c, "reason", NULL);
		snprintf(msg, sizeof(msg), "%s: %s", jx_str(c, "type", NULL),
		         jx_str(c, "message", NULL));
		break;
	}
	return set_cond(conds, "Ready", false, why, msg, gen);
}

/* @conds without the condition of @type (the array is replaced, and dropped). */
static json_t *without(json_t *conds, const char *type)
{
	json_t *out = json_array(), *c;
	size_t i;

	json_array_foreach(conds, i, c)
		if (!tc_str_eq(jx_str(c, "type", NULL), type))
			json_array_append(out, c);
	json_decref(conds);
	return out;
}

/* HibernationReady, only while there is something to say (spec.hibernation, or a supervisor
 * of the tenant's that is still being deleted). */
static json_t *hibernation_cond(struct rec *r, json_t *conds, long long gen)
{
	if (r->hib_reason == NULL)
		return without(conds, COND_HIBERNATION);
	return set_cond(conds, COND_HIBERNATION, tc_hibernation_ok(r), r->hib_reason, r->hib_msg,
	                gen);
}

static json_t *conditions(struct rec *r, long long gen, bool deleting)
{
	/* the desired conditions start from the current ones (their transition times), and are
	 * sent */
	json_t *conds = jval_to_json(jval_path(r->tenant, "status", "conditions", NULL));
	bool ns_ok = !r->ns_pending && json_array_size(r->collisions) == 0;
	bool quota_ok = tc_plan_known(r) && !r->quota_pending && !r->over_plan;
	bool pol_ok = !r->policies_pending, acc_ok = !r->access_pending && !r->quota_pending;

	conds = conds ? conds : json_array();
	conds = namespaces_cond(r, conds, ns_ok, gen);
	conds = quota_cond(r, conds, quota_ok, gen);
	conds = set_cond(conds, "PoliciesReady", pol_ok, pol_ok ? "Provisioned" : "ApplyFailed",
	                 pol_ok ? "pod security, limits and isolation in place"
	                        : "some policies could not be applied",
	                 gen);
	conds = set_cond(conds, "AccessReady", acc_ok,
	                 acc_ok             ? "Provisioned"
	                 : tc_plan_known(r) ? "WaitingForQuota"
	                                    : "PlanNotFound",
	                 acc_ok ? "role bindings in place"
	                        : "access is granted once quota and policies are in force",
	                 gen);
	conds = hibernation_cond(r, conds, gen);
	return ready_cond(r, conds, ns_ok && quota_ok && pol_ok && acc_ok && tc_hibernation_ok(r),
	                  deleting, gen);
}

json_t *tc_desired_status(struct rec *r, bool deleting)
{
	long long gen = jval_int(jval_path(r->tenant, "metadata", "generation", NULL), 0);
	json_t *sandboxes = json_object(), *names = json_array(), *adopted = json_array();
	json_t *hard =
	        tm_canonical_quantities(jval_path(r->plan, "spec", "resourceQuota", "hard", NULL));

	for (size_t i = 0; i < r->active.len; i++) { /* in name order */
		const char *name = r->active.v[i].name;

		json_array_append_new(names, json_string(name));
		if (tm_claims_find(&r->claims, name) == NULL) /* joined by its label */
			json_array_append_new(adopted, json_string(name));
	}
	for (size_t i = 0; i < r->claims.n; i++)
		if (r->claims.ns[i].user && tc_docs_get(&r->active, r->claims.ns[i].name))
			json_object_set_new(sandboxes, r->claims.ns[i].user,
			                    json_string(r->claims.ns[i].name));
	return json_pack("{s:I,s:I,s:o,s:o,s:o,s:o,s:O,s:{s:o,s:o},s:o}", "observedGeneration",
	                 (json_int_t)gen, "namespaceCount", (json_int_t)json_array_size(names),
	                 "namespaces", names, "adopted", adopted, "sandboxes", sandboxes,
	                 "released", released_list(r), "collisions", r->collisions, "quota", "hard",
	                 hard, "used", r->quota_used ? json_incref(r->quota_used) : json_object(),
	                 "conditions", conditions(r, gen, deleting));
}

/* The message of the Ready condition the Tenant's status holds now, or NULL. */
static const char *old_ready_message(const struct rec *r)
{
	struct jval conds = jval_path(r->tenant, "status", "conditions", NULL), c;
	size_t i;

	jval_foreach(conds, i, c)
		if (tc_str_eq(jval_str(jval_get(c, "type")), "Ready"))
			return jval_str(jval_get(c, "message"));
	return NULL;
}

void tc_write_status(struct rec *r, json_t *status)
{
	const json_t *new_ready;
	const char *old_reason, *new_reason = NULL;
	char why[512];

	if (jval_equal_json(jval_get(r->tenant, "status"), status))
		return;
	if (status_write(r->kc, &LL_TENANTS, r->name, status, STATUS_REPLACE,
	                 LANDLORD_FIELD_MANAGER, why, sizeof(why)) < 0)
		tc_failf(r, "write status %s: %s", r->name, why);
	new_ready = cond_find(json_object_get(status, "conditions"), "Ready");
	old_reason = old_ready_message(r);
	if (new_ready && strcmp(jx_str(new_ready, "status", NULL), "False") == 0)
		new_reason = jx_str(new_ready, "message", NULL);
	if (r->failed && new_reason && (!old_reason || strcmp(old_reason, new_reason) != 0))
		tc_event(r, EVENT_WARNING, "ApplyFailed", "%s", new_reason);
}
