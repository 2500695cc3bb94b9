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
#include "tenancy/membership.h"

/* ---- RoleBindings landlord did not make ---- */

/*
 * The tenant's namespaces, for ServiceAccount membership: those active in this pass, those its
 * label or status names, and @extra (a namespace being released).
 */
static json_t *member_namespaces(struct rec *r, const char *extra)
{
	json_t *out = json_object();
	struct jdoc_list labelled = inf_by_index_ref(r->t->namespaces, IDX_TENANT, r->name);
	struct jval listed = jval_path(r->tenant, "status", "namespaces", NULL), v;
	size_t i;

	for (i = 0; i < r->active.len; i++)
		json_object_set_new(out, r->active.v[i].name, json_true());
	for (i = 0; i < labelled.n; i++)
		if (jd_name(labelled.items[i]))
			json_object_set_new(out, jd_name(labelled.items[i]), json_true());
	jdoc_list_release(&labelled);
	jval_foreach(listed, i, v)
		if (jval_str(v))
			json_object_set_new(out, jval_str(v), json_true());
	if (extra)
		json_object_set_new(out, extra, json_true());
	return out;
}

static void record_removal(struct rec *r, const struct jdoc *rb, struct jval subject,
                           const char *why)
{
	char who[600];

	tm_subject_describe(subject, who, sizeof(who));
	tc_event(r, EVENT_WARNING, "SubjectRemoved", "removed %s from RoleBinding %s/%s: %s", who,
	         jd_namespace(rb), jd_name(rb), why);
}

/*
 * Keep only @keep as @rb's subjects: a JSON patch guarded by the resourceVersion the verdicts
 * were made on. Changing a binding needs the right to bind its role; where landlord lacks it
 * (a Role of the tenant's own), the binding is deleted instead: it grants someone it must not.
 */
static bool keep_subjects(struct rec *r, const struct jdoc *rb, json_t *keep)
{
	json_t *body = json_pack("[{s:s,s:s,s:s},{s:s,s:s,s:O}]", "op", "test", "path",
	                         "/metadata/resourceVersion", "value", jd_resource_version(rb),
	                         "op", "replace", "path", "/subjects", "value", keep);
	struct kc_resp resp = {0};
	struct ll_err err;
	int rc = kc_patch(r->kc, &KC_ROLEBINDINGS, jd_namespace(rb), jd_name(rb), NULL,
	                  KC_PATCH_JSON, body, LANDLORD_FIELD_MANAGER, &resp, &err);
	bool ok;

	if (rc == 0 && resp.http_status == 403)
		ok = tc_delete_obj(r, &KC_ROLEBINDINGS, rb);
	else
		ok = tc_write_ok(r, rc, &resp, &err, "patch", jd_namespace(rb), jd_name(rb),
		                 true) ||
		     resp.http_status == 409 || resp.http_status == 422; /* changed: next pass */
	kc_resp_release(&resp);
	json_decref(body);
	return ok;
}

static bool outsider(struct rec *r, const struct jdoc *rb, struct jval subject,
                     const json_t *members)
{
	return tm_subject_verdict(r->tenant, r->cfg, members, jd_namespace(rb), subject) ==
	       TM_OUTSIDER;
}

/* Remove from @rb every subject that is neither a member nor an exception. */
static void judge_binding(struct rec *r, const struct jdoc *rb, const json_t *members)
{
	struct jval subjects = jd_get(rb, "subjects", NULL), s;
	json_t *keep = json_array(); /* what the binding is patched to: sent */
	size_t i, dropped = 0;

	jval_foreach(subjects, i, s) {
		if (outsider(r, rb, s, members))
			dropped++;
		else
			json_array_append_new(keep, jval_to_json(s));
	}
	if (dropped > 0 && (json_array_size(keep) == 0 ? tc_delete_obj(r, &KC_ROLEBINDINGS, rb)
	                                               : keep_subjects(r, rb, keep)))
		jval_foreach(subjects, i, s)
			if (outsider(r, rb, s, members))
				record_removal(r, rb, s, "not a member of the tenant");
	json_decref(keep);
}

/*
 * The membership rule, applied continuously: in a tenant namespace, a RoleBinding that is not
 * landlord's keeps only subjects who are members of the tenant or exceptions the LandlordConfig
 * allows (one squatting a name of landlord's is also replaced, by tc_ensure()).
 */
static void enforce_membership(struct rec *r, const char *ns_name)
{
	struct jdoc_list rbs = inf_by_index_ref(r->t->owned[OWN_RB], IDX_NAMESPACE, ns_name);
	json_t *members = member_namespaces(r, NULL);

	for (size_t i = 0; i < rbs.n; i++) {
		const struct jdoc *rb = rbs.items[i];

		if (tc_landlords(r, rb) || tc_doc_deleting(rb))
			continue; /* landlord's own: tc_ensure() and the deletion above */
		/* an administrator's TemplateGroupInstance wrote it (landlord-managed-objects lets
		 * no one else create a binding labelled managed-by=landlord): its subjects are the
		 * administrator's choice, and judging them would fight the instance's drift repair
		 */
		if (jd_label(rb, LABEL_TGI) != NULL &&
		    tc_str_eq(jd_label(rb, LABEL_MANAGED_BY), MANAGED_BY_VALUE))
			continue;
		judge_binding(r, rb, members);
	}
	json_decref(members);
	jdoc_list_release(&rbs);
}

/* Does @rb grant a member of the tenant anything? */
static bool grants_member(struct rec *r, const struct jdoc *rb, const json_t *members,
                          struct jval *who /* OUT: the first such subject */)
{
	struct jval subjects = jd_get(rb, "subjects", NULL), s;
	size_t i;

	jval_foreach(subjects, i, s)
		if (tm_subject_verdict(r->tenant, r->cfg, members, jd_namespace(rb), s) ==
		    TM_MEMBER) {
			*who = s;
			return true;
		}
	return false;
}

void tc_revoke_members(struct rec *r, const char *ns_name)
{
	struct jdoc_list rbs = inf_by_index_ref(r->t->owned[OWN_RB], IDX_NAMESPACE, ns_name);
	json_t *members = member_namespaces(r, ns_name);

	for (size_t i = 0; i < rbs.n; i++) {
		struct jval who;

		if (!tc_doc_deleting(rbs.items[i]) &&
		    grants_member(r, rbs.items[i], members, &who) &&
		    tc_delete_obj(r, &KC_ROLEBINDINGS, rbs.items[i]))
			record_removal(r, rbs.items[i], who,
			               "the namespace was released from the tenant, whose members "
			               "keep no access there");
	}
	json_decref(members);
	jdoc_list_release(&rbs);
}

void tc_quarantine_released(struct rec *r)
{
	struct jdoc_list released = inf_by_index_ref(r->t->namespaces, IDX_RELEASED, r->name);

	for (size_t i = 0; i < released.n; i++) {
		const char *name = jd_name(released.items[i]);

		if (name && jd_label(released.items[i], LABEL_TENANT) == NULL &&
		    !tc_doc_deleting(released.items[i]) && !tm_namespace_protected(r->cfg, name))
			tc_revoke_members(r, name);
	}
	jdoc_list_release(&released);
}

/*
 * The labels landlord gives @ns, which the custom role mapping's selectors are matched against:
 * never the live labels, which others may add to (docs/internals/trust.md).
 */
static json_t *desired_labels(struct rec *r, const char *ns_name, const struct jdoc *ns,
                              const struct tm_ns *claim)
{
	const char *kind = jd_label(ns, LABEL_KIND);
	json_t *meta = tm_namespace_metadata(r->tenant, r->cfg,
	                                     jval_str(jval_path(r->tenant, "spec", "plan", NULL)),
	                                     ns_name, claim, kind ? kind : KIND_ADOPTED);
	json_t *labels = json_incref(json_object_get(meta, "labels"));

	json_decref(meta);
	return labels;
}

void tc_sync_access(struct rec *r, const char *ns_name, const struct jdoc *ns, bool may_grant)
{
	const struct tm_ns *claim = tm_claims_find(&r->claims, ns_name);
	bool private_sb = jval_bool(
	        jval_path(r->tenant, "spec", "namespaces", "sandboxes", "private", NULL), false);
	json_t *labels = desired_labels(r, ns_name, ns, claim);
	json_t *want = tm_rolebindings(r->tenant, r->cfg, ns_name, labels, claim, private_sb);
	struct jdoc_list have = inf_by_index_ref(r->t->owned[OWN_RB], IDX_TENANT, r->name);
	const char *name;
	json_t *rb;

	json_object_foreach(want, name, rb) {
		const struct jdoc *cached = inf_get_ref(r->t->owned[OWN_RB], ns_name, name);

		if (tc_landlords(r, cached) || may_grant)
			tc_ensure(r, &KC_ROLEBINDINGS, rb, cached, NULL);
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
	enforce_membership(r, ns_name);
	jdoc_list_release(&have);
	json_decref(want);
	json_decref(labels);
}

void tc_sync_tenant_role(struct rec *r)
{
	json_t *namespaces = member_namespaces(r, NULL);

	for (int which = 0; which < TM_TENANT_ROLES; which++) {
		char name[TM_ROLE_NAME_BUF];
		json_t *cr = tm_clusterrole(r->tenant, which, namespaces);
		json_t *crb = tm_clusterrolebinding(r->tenant, which);
		const struct jdoc *cr_cached, *crb_cached;

		/* the override of the tenant's supervisor, while it is the tenant's (by name) */
		if (which == TM_ROLE_OWNERS && r->hib_ours)
			json_array_append_new(json_object_get(cr, "rules"),
			                      tm_supervisor_owner_rule(r->tenant));
		tm_tenant_role_name(r->name, which, name);
		cr_cached = inf_get_ref(r->t->croles, NULL, name);
		crb_cached = inf_get_ref(r->t->crbindings, NULL, name);
		tc_ensure(r, &KC_CLUSTERROLES, cr, cr_cached, NULL);
		if (crb)
			tc_ensure(r, &KC_CLUSTERROLEBINDINGS, crb, crb_cached, NULL);
		else if (crb_cached)
			tc_delete_obj(r, &KC_CLUSTERROLEBINDINGS, crb_cached);
		json_decref(cr);
		json_decref(crb);
		jdoc_unref(cr_cached);
		jdoc_unref(crb_cached);
	}
	json_decref(namespaces);
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
