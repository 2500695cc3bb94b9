/* tenant_access.c - RoleBindings and the per-tenant ClusterRole (see tenant_internal.h). */
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

void tc_sync_access(struct rec *r, const char *ns_name, const json_t *ns, bool may_grant)
{
	const struct tm_ns *claim = tm_claims_find(&r->claims, ns_name);
	bool private_sb = jx_bool(r->tenant, 0, "spec", "namespaces", "sandboxes", "private", NULL);
	json_t *want = tm_rolebindings(r->tenant, r->cfg, ns_name,
	                               jx_get(ns, "metadata", "labels", NULL), claim, private_sb);
	struct jdoc_list have = inf_by_index_ref(r->t->owned[OWN_RB], IDX_TENANT, r->name);
	const char *name;
	json_t *rb;

	json_object_foreach(want, name, rb) {
		const struct jdoc *cached = inf_get_ref(r->t->owned[OWN_RB], ns_name, name);

		if (cached || may_grant)
			tc_ensure(r, &KC_ROLEBINDINGS, rb, cached);
		else
			r->access_pending = true;
		jdoc_unref(cached);
	}
	for (size_t i = 0; i < have.n; i++) {
		const char *hname = jd_name(have.items[i]);

		/* a changed mapping or a removed role */
		if (tc_str_eq(jd_namespace(have.items[i]), ns_name) && hname &&
		    !json_object_get(want, hname))
			tc_delete_obj(r, &KC_ROLEBINDINGS, have.items[i]);
	}
	jdoc_list_release(&have);
	json_decref(want);
}

void tc_sync_tenant_role(struct rec *r)
{
	char name[NAMES_BUF + 20];
	json_t *cr = tm_clusterrole(r->tenant), *crb = tm_clusterrolebinding(r->tenant);
	const struct jdoc *cr_cached, *crb_cached;

	tm_tenant_role_name(r->name, name);
	cr_cached = inf_get_ref(r->t->croles, NULL, name);
	crb_cached = inf_get_ref(r->t->crbindings, NULL, name);
	tc_ensure(r, &KC_CLUSTERROLES, cr, cr_cached);
	if (crb)
		tc_ensure(r, &KC_CLUSTERROLEBINDINGS, crb, crb_cached);
	else if (crb_cached)
		tc_delete_obj(r, &KC_CLUSTERROLEBINDINGS, crb_cached);
	json_decref(cr);
	json_decref(crb);
	jdoc_unref(cr_cached);
	jdoc_unref(crb_cached);
}

void tc_delete_tenant_role(struct rec *r)
{
	struct jdoc_list objs = inf_by_index_ref(r->t->crbindings, IDX_TENANT, r->name);

	for (size_t i = 0; i < objs.n; i++)
		tc_delete_obj(r, &KC_CLUSTERROLEBINDINGS, objs.items[i]);
	jdoc_list_release(&objs);
	objs = inf_by_index_ref(r->t->croles, IDX_TENANT, r->name);
	for (size_t i = 0; i < objs.n; i++)
		tc_delete_obj(r, &KC_CLUSTERROLES, objs.items[i]);
	jdoc_list_release(&objs);
}
