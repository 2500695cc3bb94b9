/*
 * accounts.c - the identities TemplateInstances apply as: ServiceAccounts ti.<ns>.editor and
 * ti.<ns>.owner in landlord-system, never in the tenant namespace (where edit could
 * impersonate them and reach the owner's rights), each bound in <ns> to LandlordConfig's
 * editor or owner ClusterRole by the RoleBinding landlord-ti-editor or landlord-ti-owner.
 * Both carry app.kubernetes.io/managed-by=landlord (the managed-objects policy guards them) and
 * landlord.dev/ti-account=<role>, which their informers select; not landlord.dev/tenant, so the
 * Tenant controller never sees them.
 *
 * A TemplateGroupInstance's chart runs as tgi.<ns> (label value "tgi"), bound in <ns> to
 * landlord-templates by landlord-tgi: chart code never runs with landlord's own rights.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "api/api.h"
#include "base/err.h"
#include "base/json.h"
#include "base/log.h"
#include "templates/templates_internal.h"
#include "tenancy/landlordconfig_current.h"

int ti_account_for(const char *ns, const json_t *ns_labels, const char *writer,
                   struct ti_account *out)
{
	struct lcfg *cfg = lcfg_current();
	const char *owner = NULL, *editor = NULL;
	bool as_owner = writer && (strcmp(writer, WRITER_OWNER) == 0 ||
	                           strcmp(writer, WRITER_PRIVILEGED) == 0);

	memset(out, 0, sizeof(*out));
	lcfg_roles_for_namespace(cfg, ns_labels, &owner, &editor, NULL);
	out->role = as_owner ? WRITER_OWNER : WRITER_EDITOR;
	snprintf(out->cluster_role, sizeof(out->cluster_role), "%s", as_owner ? owner : editor);
	lcfg_unref(cfg);
	snprintf(out->sa, sizeof(out->sa), TI_ACCOUNT_FMT, ns, out->role);
	snprintf(out->user, sizeof(out->user), "system:serviceaccount:%s:%s",
	         LANDLORD_SYSTEM_NAMESPACE, out->sa);
	snprintf(out->binding, sizeof(out->binding), TI_ROLEBINDING_PREFIX "%s", out->role);
	return out->cluster_role[0] ? 0 : -EINVAL;
}

void tgi_account_for(const char *ns, struct ti_account *out)
{
	memset(out, 0, sizeof(*out));
	out->role = TGI_ACCOUNT_ROLE;
	snprintf(out->cluster_role, sizeof(out->cluster_role), "%s", TEMPLATES_CLUSTERROLE);
	snprintf(out->sa, sizeof(out->sa), TGI_ACCOUNT_FMT, ns);
	snprintf(out->user, sizeof(out->user), "system:serviceaccount:%s:%s",
	         LANDLORD_SYSTEM_NAMESPACE, out->sa);
	snprintf(out->binding, sizeof(out->binding), "landlord-tgi");
}

static json_t *labels(const char *role)
{
	return json_pack("{s:s,s:s}", LABEL_MANAGED_BY, MANAGED_BY_VALUE, LABEL_TI_ACCOUNT, role);
}

static int create_account(struct templates *t, const struct ti_account *a, struct ll_err *err)
{
	json_t *sa = json_pack("{s:s,s:s,s:{s:s,s:s,s:o},s:b}", "apiVersion", "v1", "kind",
	                       "ServiceAccount", "metadata", "name", a->sa, "namespace",
	                       LANDLORD_SYSTEM_NAMESPACE, "labels", labels(a->role),
	                       "automountServiceAccountToken", 0);
	struct kc_resp resp = {0};
	int rc = kc_create(t->kc, &KC_SERVICEACCOUNTS, LANDLORD_SYSTEM_NAMESPACE, sa, &resp, err);

	if (rc == 0 && !kc_resp_ok(&resp) && resp.http_status != 409)
		rc = ll_err_set(err, -EAGAIN, "ServiceAccount %s/%s: %s", LANDLORD_SYSTEM_NAMESPACE,
		                a->sa, resp.status.message);
	else if (rc != 0)
		rc = -EAGAIN;
	kc_resp_release(&resp);
	json_decref(sa);
	return rc;
}

static json_t *binding(const char *ns, const struct ti_account *a)
{
	return json_pack("{s:s,s:s,s:{s:s,s:s,s:o},s:{s:s,s:s,s:s},s:[{s:s,s:s,s:s}]}",
	                 "apiVersion", "rbac.authorization.k8s.io/v1", "kind", "RoleBinding",
	                 "metadata", "name", a->binding, "namespace", ns, "labels", labels(a->role),
	                 "roleRef", "apiGroup", "rbac.authorization.k8s.io", "kind", "ClusterRole",
	                 "name", a->cluster_role, "subjects", "kind", "ServiceAccount", "name",
	                 a->sa, "namespace", LANDLORD_SYSTEM_NAMESPACE);
}

/* Does the cached binding grant what @want does (role and subjects)? */
static bool binding_current(struct templates *t, const char *ns, const json_t *want)
{
	const struct jdoc *have = inf_get_ref(t->bindings, ns, jx_name(want));
	bool same =
	        have &&
	        jval_equal_json(jd_get(have, "roleRef", NULL), json_object_get(want, "roleRef")) &&
	        jval_equal_json(jd_get(have, "subjects", NULL), json_object_get(want, "subjects"));

	jdoc_unref(have);
	return same;
}

static int apply_binding(struct templates *t, const char *ns, const json_t *rb, struct ll_err *err)
{
	struct kc_resp resp = {0};
	int rc = kc_apply(t->kc, &KC_ROLEBINDINGS, ns, jx_name(rb), NULL, rb,
	                  LANDLORD_FIELD_MANAGER, true, &resp, err);

	if (rc == 0 && !kc_resp_ok(&resp))
		rc = ll_err_set(err, -EAGAIN, "RoleBinding %s/%s: %s", ns, jx_name(rb),
		                resp.status.message);
	else if (rc != 0)
		rc = -EAGAIN;
	kc_resp_release(&resp);
	return rc;
}

int ti_account_ensure(struct templates *t, const char *ns, const struct ti_account *a,
                      bool *changed, struct ll_err *err)
{
	const struct jdoc *sa = inf_get_ref(t->accounts, LANDLORD_SYSTEM_NAMESPACE, a->sa);
	json_t *rb = binding(ns, a);
	int rc = 0;

	*changed = false;
	if (sa == NULL) {
		rc = create_account(t, a, err);
		*changed = rc == 0;
	}
	if (rc == 0 && !binding_current(t, ns, rb)) {
		rc = apply_binding(t, ns, rb, err);
		*changed = *changed || rc == 0;
	}
	if (*changed)
		log_info("template apply account bound", "{s:s,s:s,s:s}", "namespace", ns,
		         "account", a->sa, "clusterRole", a->cluster_role);
	jdoc_unref(sa);
	json_decref(rb);
	return rc;
}

static void delete_quietly(struct templates *t, const struct kc_gvr *gvr, const char *ns,
                           const char *name)
{
	struct kc_resp resp = {0};
	struct ll_err err = {{0}};

	if (kc_delete(t->kc, gvr, ns, name, &(struct kc_delete_opts){.grace_seconds = -1}, &resp,
	              &err) != 0 ||
	    (!kc_resp_ok(&resp) && resp.http_status != 404))
		log_warn("could not delete a template account", "{s:s,s:s,s:s,s:s}", "resource",
		         gvr->resource, "namespace", ns, "name", name, "error",
		         err.msg[0] ? err.msg : resp.status.message);
	kc_resp_release(&resp);
}

void ti_accounts_release(struct templates *t, const char *ns)
{
	static const char *const roles[] = {WRITER_EDITOR, WRITER_OWNER};
	char name[300];

	log_info("template apply accounts released", "{s:s}", "namespace", ns);
	for (size_t i = 0; i < sizeof(roles) / sizeof(roles[0]); i++) {
		snprintf(name, sizeof(name), TI_ROLEBINDING_PREFIX "%s", roles[i]);
		delete_quietly(t, &KC_ROLEBINDINGS, ns, name);
		snprintf(name, sizeof(name), TI_ACCOUNT_FMT, ns, roles[i]);
		delete_quietly(t, &KC_SERVICEACCOUNTS, LANDLORD_SYSTEM_NAMESPACE, name);
	}
}

void tgi_account_release(struct templates *t, const char *ns)
{
	struct ti_account a;

	tgi_account_for(ns, &a);
	log_info("template group chart account released", "{s:s}", "namespace", ns);
	delete_quietly(t, &KC_ROLEBINDINGS, ns, a.binding);
	delete_quietly(t, &KC_SERVICEACCOUNTS, LANDLORD_SYSTEM_NAMESPACE, a.sa);
}
