/* tenant_inside.c - what goes into a Tenant's namespaces, in order (see tenant_internal.h). */
#include <stdlib.h>
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

static json_t *privileged_namespaces(struct rec *r)
{
	/* tenant namespaces are never privileged: only the others are matched */
	struct jdoc_list all = inf_by_index_ref(r->t->namespaces, IDX_UNTENANTED, UNTENANTED);
	json_t *set = json_object(), *out;

	for (size_t i = 0; i < all.n; i++) {
		const char *name = jd_name(all.items[i]);

		if (name && lcfg_is_privileged_namespace(r->cfg, name))
			json_object_set_new(set, name, json_true());
	}
	out = tm_sorted_keys(set); /* the allow-list must be stable */
	json_decref(set);
	jdoc_list_release(&all);
	return out;
}

json_t *tc_build_isolation(const struct rec *r, const char *ns)
{
	if (!tm_network_isolation(r->tenant, r->cfg))
		return NULL;
	return tm_networkpolicy(r->tenant, ns, r->privileged);
}

json_t *tc_build_limits(const struct rec *r, const char *ns)
{
	return tm_limitrange(r->tenant, r->plan, ns);
}

bool tc_always(const struct rec *r)
{
	(void)r;
	return true;
}

/* Without its Plan landlord cannot tell what the limits should be: it leaves them be. */
bool tc_plan_known(const struct rec *r)
{
	return r->plan_doc != NULL;
}

/* Every policy of OWNED in @ns; returns whether all are in place. */
static bool sync_policies(struct rec *r, const char *ns)
{
	bool ok = true;

	for (int k = 0; k < N_OWNED; k++) {
		const struct owned *kind = &TC_OWNED[k];
		json_t *want;
		const struct jdoc *cached;

		if (kind->build == NULL)
			continue;
		want = kind->build(r, ns);
		cached = inf_get_ref(r->t->owned[k], ns, kind->name);
		if (want)
			ok &= tc_ensure(r, kind->gvr, want, cached, NULL);
		else if (cached && kind->delete_unwanted(r))
			ok &= tc_delete_obj(r, kind->gvr, cached);
		json_decref(want);
		jdoc_unref(cached);
	}
	return ok;
}

/*
 * A namespace created in this pass gets its default ServiceAccount from landlord too: the API
 * server admits no pod without it, and kube-controller-manager, which makes it anyway, works at
 * 20 requests a second by default, holding a burst's owners back for tens of seconds
 * (docs/quota.md). Created once the quota is in force, so that quota admission counts it, and
 * exactly as that controller makes it (no labels: landlord does not own it). 409 means the
 * controller came first. A failure costs only time: it is logged, not reported.
 */
static void make_default_serviceaccount(struct rec *r, const char *ns)
{
	json_t *sa;
	struct kc_resp resp = {0};
	struct ll_err err = {{0}};
	int rc;

	if (!tc_str_listed(r->created, ns) ||
	    !tc_may_write(r, &KC_SERVICEACCOUNTS, ns, DEFAULT_SERVICEACCOUNT))
		return;
	sa = json_pack("{s:s,s:s,s:{s:s}}", "apiVersion", "v1", "kind", "ServiceAccount",
	               "metadata", "name", DEFAULT_SERVICEACCOUNT);
	rc = kc_create(r->kc, &KC_SERVICEACCOUNTS, ns, sa, &resp, &err);
	if (rc < 0 || (!kc_resp_ok(&resp) && resp.http_status != 409))
		log_info("default ServiceAccount left to kube-controller-manager", "{s:s,s:s,s:s}",
		         "tenant", r->name, "namespace", ns, "error",
		         rc < 0 ? err.msg : resp.status.message);
	kc_resp_release(&resp);
	json_decref(sa);
}

void tc_sync_inside(struct rec *r)
{
	r->privileged = privileged_namespaces(r);
	tc_sync_quota(r);
	if (!tc_plan_known(r))
		r->quota_pending = true;
	for (size_t i = 0; i < r->active.len; i++) {
		const char *name = r->active.v[i].name;
		const struct jdoc *rq = inf_get_ref(r->t->owned[OWN_RQ], name, QUOTA_NAME);
		bool applied = false;
		/* access needs a quota in force at least as strict as its spec (raises may lag) */
		bool quota_ok = tc_plan_known(r) && tc_quota_in_force(r, name, &applied);
		bool policies_ok = sync_policies(r, name);

		tc_revert_quota_additions(r, name, rq);
		if (!quota_ok || !applied)
			r->quota_pending = true;
		if (!policies_ok)
			r->policies_pending = true;
		if (quota_ok && policies_ok)
			make_default_serviceaccount(r, name);
		tc_sync_access(r, name, r->active.v[i].doc, quota_ok && policies_ok);
		jdoc_unref(rq);
	}
	/* objects left in namespaces that are no longer this tenant's */
	tc_delete_owned_in(r, NULL, &r->active);
}
