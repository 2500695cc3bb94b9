/*
 * extension_accounts.c - the identity Argo CD syncs a tenant's namespaces as: in each, the
 * ServiceAccount landlord-argocd (no secrets, no token mounted) and the RoleBinding
 * landlord-argocd that binds it to the tenant's editor ClusterRole there (the LandlordConfig's
 * mapping for that namespace's labels). Both labelled app.kubernetes.io/managed-by=landlord and
 * landlord.dev/argocd=<tenant>: the landlord-managed-objects policy keeps tenants off them.
 *
 * An account of that name landlord did not make is never adopted: an editor could already act
 * as any account of its namespace (edit may impersonate them), so adoption would grant nothing
 * new, but the account may carry secrets or pull secrets of the tenant's choosing that would
 * then sync with Argo CD's writes. The namespace is reported (AccountConflict) and gets no
 * destination until the account is deleted.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "api/api.h"
#include "base/err.h"
#include "base/json.h"
#include "base/log.h"
#include "hibernation/extension_internal.h"

static bool ours(const struct ext_rec *r, const struct jdoc *obj)
{
	const char *by = jd_label(obj, LABEL_MANAGED_BY), *t = jd_label(obj, LABEL_ARGOCD);

	return by && t && strcmp(by, MANAGED_BY_VALUE) == 0 && strcmp(t, r->tenant) == 0;
}

static json_t *labels(const struct ext_rec *r)
{
	return json_pack("{s:s,s:s}", LABEL_MANAGED_BY, MANAGED_BY_VALUE, LABEL_ARGOCD, r->tenant);
}

static void note_conflict(struct ext_rec *r, const char *ns)
{
	size_t len = strlen(r->conflicts);

	if (r->n_conflicts++ < 8 && len + strlen(ns) + 3 < sizeof(r->conflicts))
		snprintf(r->conflicts + len, sizeof(r->conflicts) - len, "%s%s", len ? ", " : "",
		         ns);
}

static bool create_account(struct ext_rec *r, const char *ns)
{
	json_t *sa = json_pack("{s:s,s:s,s:{s:s,s:s,s:o},s:b}", "apiVersion", "v1", "kind",
	                       "ServiceAccount", "metadata", "name", ARGOCD_ACCOUNT, "namespace",
	                       ns, "labels", labels(r), "automountServiceAccountToken", 0);
	struct kc_resp resp = {0};
	struct ll_err err = {{0}};
	int rc = kc_create(r->kc, &KC_SERVICEACCOUNTS, ns, sa, &resp, &err);
	bool ok = ext_write_ok(r, rc, &resp, "create ServiceAccount", ns, ARGOCD_ACCOUNT, false);

	kc_resp_release(&resp);
	json_decref(sa);
	return ok;
}

static json_t *binding(const struct ext_rec *r, const char *ns, const char *role)
{
	return json_pack("{s:s,s:s,s:{s:s,s:s,s:o},s:{s:s,s:s,s:s},s:[{s:s,s:s,s:s}]}",
	                 "apiVersion", "rbac.authorization.k8s.io/v1", "kind", "RoleBinding",
	                 "metadata", "name", ARGOCD_ACCOUNT, "namespace", ns, "labels", labels(r),
	                 "roleRef", "apiGroup", "rbac.authorization.k8s.io", "kind", "ClusterRole",
	                 "name", role, "subjects", "kind", "ServiceAccount", "name", ARGOCD_ACCOUNT,
	                 "namespace", ns);
}

/* The tenant's editor ClusterRole in @ns (the LandlordConfig's mapping of its labels). */
static const char *editor_role(struct ext_rec *r, const struct jdoc *ns)
{
	json_t *ns_labels = jval_to_json(jd_get(ns, "metadata", "labels", NULL));
	const char *editor = NULL;

	lcfg_roles_for_namespace(r->cfg, ns_labels, NULL, &editor, NULL);
	json_decref(ns_labels);
	return editor;
}

/* The RoleBinding as wanted: applied when it differs; replaced when its roleRef must change. */
static bool sync_binding(struct ext_rec *r, const struct jdoc *ns_doc, const char *ns)
{
	const struct jdoc *have = inf_get_ref(r->e->bindings, ns, ARGOCD_ACCOUNT);
	json_t *want = binding(r, ns, editor_role(r, ns_doc));
	struct kc_resp resp = {0};
	struct ll_err err = {{0}};
	bool ok = true;
	int rc;

	if (have && !ours(r, have)) {
		note_conflict(r, ns);
		ok = false;
	} else if (have && jval_has_subset(jdoc_root(have), want)) {
		ok = true;
	} else {
		if (have && !jval_equal_json(jd_get(have, "roleRef", NULL),
		                             json_object_get(want, "roleRef")))
			ok = ext_delete(r, &KC_ROLEBINDINGS, have);
		if (ok) {
			rc = kc_apply(r->kc, &KC_ROLEBINDINGS, ns, ARGOCD_ACCOUNT, NULL, want,
			              LANDLORD_FIELD_MANAGER, true, &resp, &err);
			ok = ext_write_ok(r, rc, &resp, "apply RoleBinding", ns, ARGOCD_ACCOUNT,
			                  false);
		}
	}
	kc_resp_release(&resp);
	json_decref(want);
	jdoc_unref(have);
	return ok;
}

/* One namespace: true when Argo CD may sync there as landlord-argocd. */
static bool sync_namespace(struct ext_rec *r, const char *ns)
{
	const struct jdoc *sa = inf_get_ref(r->e->accounts, ns, ARGOCD_ACCOUNT);
	const struct jdoc *ns_doc = inf_get_ref(r->e->namespaces, NULL, ns);
	bool ok = ns_doc != NULL;

	if (ok && sa && !ours(r, sa)) {
		/* another tenant's (the namespace moved: that Extension deletes it) or not
		 * landlord's */
		if (jd_label(sa, LABEL_ARGOCD) && jd_label(sa, LABEL_MANAGED_BY) &&
		    strcmp(jd_label(sa, LABEL_MANAGED_BY), MANAGED_BY_VALUE) == 0)
			r->retry = true;
		else
			note_conflict(r, ns);
		ok = false;
	} else if (ok && sa == NULL) {
		ok = create_account(r, ns);
	}
	if (ok)
		ok = sync_binding(r, ns_doc, ns);
	jdoc_unref(ns_doc);
	jdoc_unref(sa);
	return ok;
}

static bool listed(const char *ns, const char **nss, size_t n)
{
	for (size_t i = 0; ns && i < n; i++)
		if (strcmp(nss[i], ns) == 0)
			return true;
	return false;
}

/* Delete this tenant's accounts and bindings outside @nss[0..n). Return: all gone. */
static bool remove_outside(struct ext_rec *r, const char **nss, size_t n)
{
	struct inf *infs[] = {r->e->accounts, r->e->bindings};
	const struct kc_gvr *gvrs[] = {&KC_SERVICEACCOUNTS, &KC_ROLEBINDINGS};
	bool ok = true;

	for (size_t k = 0; k < 2; k++) {
		struct jdoc_list objs = inf_by_index_ref(infs[k], LABEL_ARGOCD, r->tenant);

		for (size_t i = 0; i < objs.n; i++)
			if (ours(r, objs.items[i]) &&
			    !listed(jd_namespace(objs.items[i]), nss, n) &&
			    jd_str(objs.items[i], "metadata", "deletionTimestamp", NULL) == NULL)
				ok &= ext_delete(r, gvrs[k], objs.items[i]);
		jdoc_list_release(&objs);
	}
	return ok;
}

size_t ext_accounts_sync(struct ext_rec *r, const char **nss, size_t n)
{
	size_t usable = 0;

	remove_outside(r, nss, n);
	for (size_t i = 0; i < n; i++)
		if (sync_namespace(r, nss[i]))
			nss[usable++] = nss[i];
	return usable;
}

bool ext_accounts_remove(struct ext_rec *r)
{
	return remove_outside(r, NULL, 0);
}
